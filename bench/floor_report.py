#!/usr/bin/env python3
"""The table of `bench/floor.sh`: each speed goal's row with its measure, its peer or floor, the
goal and whether it is met, computed from hyperfine's JSON exports.

    bench/floor_report.py WORK_DIR [--readme bench/README.md]

WORK_DIR holds NAME.json (hyperfine --export-json) for the names below and info.json (peak RSS
of the lint runs, stream sizes, the heading line). A missing export (a peer not installed)
leaves its cells empty and its goal unjudged. With --readme, the table replaces the text
between the `<!-- floor:begin -->` and `<!-- floor:end -->` markers of that file.
"""

import json
import sys
from pathlib import Path

from readme_table import replace_between, take_option


def load(work, name):
    path = work / f"{name}.json"
    if not path.exists():
        return None
    r = json.loads(path.read_text())["results"][0]
    return {"mean": r["mean"] * 1000, "stddev": r["stddev"] * 1000, "cpu": (r["user"] + r["system"]) * 1000}


def ms(r):
    if r is None:
        return "not measured"
    value = f"{r['mean']:,.0f}" if r["mean"] >= 1000 else f"{r['mean']:.1f}"
    return f"{value} ms ± {r['stddev']:.1f} (CPU {r['cpu']:,.1f} ms)"


def verdict(checks):
    """`met`, or `not met (why)`, from (passed, note) pairs; None when a measure is missing."""
    if any(passed is None for passed, _ in checks):
        return "not judged (a measure is missing)"
    failed = [note for passed, note in checks if not passed]
    notes = ", ".join(note for _, note in checks)
    return f"met ({notes})" if not failed else f"not met ({notes})"


def mean(r):
    return None if r is None else r["mean"]


def ratio(a, b):
    return None if a is None or b is None else a["mean"] / b["mean"]


def table(work):
    r = {name: load(work, name) for name in
         ["hello", "version", "one", "helm-one", "many", "lint10k", "lint-rendered", "clean",
          "findings", "lint1k", "kv1k"]}
    info = json.loads((work / "info.json").read_text())
    floor, helm = r["hello"], r["helm-one"]

    def x(value, fmt="{:.1f}x"):
        return "?" if value is None else fmt.format(value)

    def at_most(value, limit):
        return None if value is None else value <= limit

    def at_least(value, limit):
        return None if value is None else value >= limit

    v_floor = ratio(r["version"], floor)
    one_floor, helm_one = ratio(r["one"], floor), ratio(helm, r["one"])
    many_helm = ratio(r["many"], helm)
    kv = ratio(r["kv1k"], r["lint1k"])
    rows = [
        ("`tao-k8s --version`", ms(r["version"]), f"static hello-world: {ms(floor)}",
         "<= 1.5x the floor", verdict([(at_most(v_floor, 1.5), f"{x(v_floor)} the floor")])),
        ("render one request", ms(r["one"]), f"`helm template`: {ms(helm)}",
         ">= 25x helm, <= 2x the floor",
         verdict([(at_least(helm_one, 25), f"{x(helm_one)} helm"),
                  (at_most(one_floor, 2), f"{x(one_floor)} the floor")])),
        ("render 1,000 requests, one process", ms(r["many"]), f"helm, one request: {ms(helm)}",
         "<= helm's one request", verdict([(at_most(many_helm, 1), f"{x(many_helm)} helm's one")])),
    ]
    for name, label in [("lint10k", "lint 10,000 documents of the corpus"),
                        ("lint-rendered", "lint 10,000 rendered Jobs")]:
        run, rss, size = r[name], info[f"{name}-rss-kib"] / 1024, info[f"{name}-bytes"] / 1e6
        seconds = None if run is None else run["mean"] / 1000
        rows.append((f"{label} ({size:.1f} MB stream)", f"{ms(run)}, {rss:.0f} MiB", "",
                     "<= 1.0 s, <= 64 MiB",
                     verdict([(at_most(seconds, 1.0), f"{x(seconds, '{:.2f} s')}"),
                              (rss <= 64, f"{rss:.0f} MiB")])))
    clean, findings = mean(r["clean"]), mean(r["findings"])
    rows += [
        ("lint one small clean file / one with findings", f"{ms(r['clean'])} / {ms(r['findings'])}",
         "", "<= 1.5 ms / <= 2 ms",
         verdict([(at_most(clean, 1.5), f"{x(clean, '{:.1f} ms')}"),
                  (at_most(findings, 2), f"{x(findings, '{:.1f} ms')}")])),
        ("lint 1,000 documents", ms(r["lint1k"]), f"kubernetes-validate --strict: {ms(r['kv1k'])}",
         ">= 100x", verdict([(at_least(kv, 100), f"{x(kv, '{:.0f}x')}")])),
    ]
    lines = [info["heading"], "", "| work | tao-k8s | peer / floor | goal | |", "|---|---|---|---|---|"]
    lines += [f"| {' | '.join(row)} |" for row in rows]
    lines += ["", f"Release binary: {info['binary-bytes']:,} bytes."]
    return "\n".join(lines)


def main():
    args = sys.argv[1:]
    readme = take_option(args, "--readme")
    if len(args) != 1:
        sys.exit(__doc__)
    text = table(Path(args[0]))
    print(text)
    if readme:
        replace_between(readme, "floor", text)


if __name__ == "__main__":
    main()
