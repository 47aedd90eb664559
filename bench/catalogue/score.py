#!/usr/bin/env python3
"""Scores `tao-k8s lint` on the catalogue corpus (tests/redaction/catalogue.jsonl, made by
bench/catalogue/gen.py) and writes the table "rule -> covered / not and why".

    bench/catalogue/score.py TAO_K8S [--table bench/catalogue/README.md]

A sample is found when `lint --select inline-credential` reports TK101 on the line the
credential was planted on. A rule is covered when all its samples are found; the table names
the places of the samples missed. With --table, the table replaces the text between the
`<!-- catalogue:begin -->` and `<!-- catalogue:end -->` markers of that file, and the rules the
generator did not sample are listed with its reason (bench/catalogue/rules.tsv).
"""

import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from readme_table import replace_between, take_option  # noqa: E402
CORPUS = ROOT / "tests" / "redaction" / "catalogue.jsonl"
RULES = ROOT / "bench" / "catalogue" / "rules.tsv"


def found(binary, samples):
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for i, s in enumerate(samples):
            (base / f"{i:05}.yaml").write_text(s["manifest"])
        out = subprocess.run([binary, "lint", "--select", "inline-credential", "--format", "jsonl",
                              "--exit-zero", str(base)], capture_output=True, text=True, check=True).stdout
    hits = set()
    for line in out.splitlines():
        r = json.loads(line)
        if r.get("code") == "TK101":
            hits.add((int(Path(r["file"]).stem), r["line"]))
    return [(i, s["line"]) in hits for i, s in enumerate(samples)]


def main():
    args = sys.argv[1:]
    table_file = take_option(args, "--table")
    samples = [json.loads(l) for l in CORPUS.read_text().splitlines() if l.strip()]
    hits = found(args[0], samples)
    by_rule = defaultdict(lambda: [0, 0, set()])
    for s, hit in zip(samples, hits):
        r = by_rule[(s["catalogue"], s["rule"])]
        r[0] += 1
        r[1] += hit
        if not hit:
            r[2].add(s["place"])
    total, got = len(samples), sum(hits)
    lines = [f"{got} of {total} samples found, recall {got / total:.3f}, "
             f"{sum(1 for r in by_rule.values() if r[0] == r[1])} of {len(by_rule)} rules covered "
             "(every sample found).", "",
             "| catalogue | rule | samples | found | status |", "|---|---|---:|---:|---|"]
    for (cat, rule), (n, k, missed) in sorted(by_rule.items()):
        status = "covered" if n == k else f"missed in: {', '.join(sorted(missed))}"
        lines.append(f"| {cat} | {rule} | {n} | {k} | {status} |")
    skipped = [l.split("\t") for l in RULES.read_text().splitlines()[1:]]
    for cat, rule, n, why in skipped:
        if n == "0":
            lines.append(f"| {cat} | {rule} | 0 | | not sampled: {why} |")
    text = "\n".join(lines)
    print(lines[0])
    for l in lines[4:]:
        if "missed" in l:
            print(l)
    if table_file:
        replace_between(table_file, "catalogue", text)


if __name__ == "__main__":
    main()
