#!/usr/bin/env python3
"""The tables of bench/side-by-side.sh, from the files it leaves in its results directory.

Usage: side_by_side_report.py RESULTS WORK REQUESTS SIZE...
Prints Markdown: wall time (hyperfine), peak RSS (GNU time), throughput and the ratio of each
tool's mean time to tao-k8s's, then the planted credentials and schema errors each linter
finds. A planted item counts as found when the tool reports a finding of that kind on the
planted document; a finding of that kind on any other document is an extra.
"""
import bisect
import json
import os
import re
import sys

TARGETS = {("render-one", "helm"): 20, ("render-many", "helm"): 20,
           ("lint-big", "kubernetes-validate"): 140, ("lint-big", "checkov"): 175}


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def duration(s):
    return f"{s:.2f} s" if s >= 1 else f"{s * 1e3:.1f} ms"


def rss(res, name):
    try:
        return f"{int(read(os.path.join(res, name + '.rss')).split()[-1]) / 1024:.0f} MiB"
    except (OSError, ValueError, IndexError):
        return "?"


def timings(res, group):
    """(tool, mean, stddev, runs) of every hyperfine file of a group, tao-k8s first."""
    rows = []
    for f in sorted(os.listdir(res)):
        if f.endswith(".json") and (f == group + ".json" or f.startswith(group + ".")):
            if f.endswith("planted.json"):
                continue
            for r in load(os.path.join(res, f))["results"]:
                rows.append((r["command"], r["mean"], r["stddev"] or 0.0, len(r["times"])))
    rows.sort(key=lambda r: r[0] != "tao-k8s")
    return rows


def table(res, group, title, per, unit, target_key, extra=None):
    rows = timings(res, group)
    if not rows:
        return [f"### {title}", "", "not measured", ""]
    base = rows[0][1]
    out = [f"### {title}", "",
           "| tool | runs | mean ± σ | peak RSS | throughput | time / tao-k8s | target |",
           "|---|---:|---:|---:|---:|---:|---|"]
    for tool, mean, sd, runs in rows:
        thr = f"{per / mean:,.0f} {unit}/s"
        if extra:
            thr += f", {extra / mean / 1e6:.2f} MB/s"
        ratio = "1" if tool == "tao-k8s" else f"{mean / base:.1f}x"
        target = TARGETS.get((target_key, tool))
        verdict = "" if target is None else (
            f">= {target}x: {'met' if mean / base >= target else 'NOT met'}")
        spread = f"{duration(mean)} ± {duration(sd)}" if runs > 1 else f"{duration(mean)} (one run)"
        out.append(f"| {tool} | {runs} | {spread} | "
                   f"{rss(res, f'{group}.{tool}')} | {thr} | {ratio} | {verdict} |")
    return out + [""]


def documents(stream):
    """Start lines, kinds and names of the documents of a stream."""
    starts, ids, kind, name = [1], [], None, None
    lines = read(stream).split("\n")
    for no, line in enumerate(lines, 1):
        if line == "---":
            ids.append((kind, name))
            starts.append(no + 1)
            kind = name = None
        elif kind is None and line.startswith("kind: "):
            kind = line[6:].strip()
        elif name is None and line.startswith("  name: "):
            name = line[8:].strip()
    ids.append((kind, name))
    return starts, ids


def findings(res, stream, n):
    """{tool: (credential documents, schema documents, other findings)}."""
    starts, ids = documents(stream)
    doc_at = lambda line: bisect.bisect_right(starts, line) - 1
    by_id = {(k.lower(), v): i for i, (k, v) in enumerate(ids) if k}
    found = {}

    cred, schema, other = set(), set(), 0
    for line in read(os.path.join(res, f"lint-{n}.tao-k8s.out")).splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        group = d["code"][:3]
        if group == "TK1":
            cred.add(doc_at(d["line"]))
        elif group == "TK2":
            schema.add(doc_at(d["line"]))
        else:
            other += 1
    found["tao-k8s"] = (cred, schema, other)

    schema, other = set(), 0
    pattern = re.compile(r"^ERROR .* did not validate for resource ([^/ ]+)/(\S+) ")
    for line in read(os.path.join(res, f"lint-{n}.kubernetes-validate.out")).splitlines():
        m = pattern.match(line)
        if m:
            schema.add(by_id.get((m.group(1), m.group(2)), -1))
        elif line.startswith(("ERROR", "WARN")):
            other += 1
    found["kubernetes-validate"] = (set(), schema, other)

    cred, other = set(), 0
    report = load(os.path.join(res, f"lint-{n}.checkov.out"))
    for part in report if isinstance(report, list) else [report]:
        for check in part.get("results", {}).get("failed_checks", []):
            if check["check_id"].startswith("CKV_SECRET"):
                cred.add(doc_at(check["file_line_range"][0]))
            else:
                other += 1
        other += part.get("summary", {}).get("parsing_errors", 0)
    found["checkov"] = (cred, set(), other)

    cred = set()
    for items in load(os.path.join(res, f"lint-{n}.detect-secrets.out"))["results"].values():
        for item in items:
            cred.add(doc_at(item["line_number"]))
    found["detect-secrets"] = (cred, set(), 0)
    return found


def findings_table(res, work, n):
    planted = load(os.path.join(res, f"lint-{n}.planted.json"))["planted"]
    n = int(n)
    creds = {p["document"] for p in planted if p["credential"]}
    errors = {p["document"] for p in planted if p["schemaError"]}
    out = [f"### Findings, {n:,} documents ({len(creds)} fake credentials, "
           f"{len(errors)} schema errors planted)", "",
           "| tool | credentials found | extra credential findings | schema errors found "
           "| extra schema findings | other findings |", "|---|---:|---:|---:|---:|---:|"]
    for tool, (cred, schema, other) in findings(
            res, os.path.join(work, f"corpus-{n}", "stream.yaml"), n).items():
        out.append(f"| {tool} | {len(cred & creds)} / {len(creds)} | {len(cred - creds)} | "
                   f"{len(schema & errors)} / {len(errors)} | {len(schema - errors)} | {other} |")
    return out + [""]


def main():
    res, work, requests, sizes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    out = ["## Side by side", "", "```", read(os.path.join(res, "versions.txt")).strip(), "```", ""]
    out += table(res, "render-one", "Render one request, whole process", 1, "requests",
                 "render-one")
    out += table(res, "render-many", f"Render {requests:,} requests in one process", requests,
                 "requests", "render-many")
    sizes = [n for n in sizes if os.path.exists(os.path.join(res, f"lint-{n}.bytes"))]
    for n in sizes:
        size = int(read(os.path.join(res, f"lint-{n}.bytes")))
        out += table(res, f"lint-{n}", f"Lint {int(n):,} documents ({size / 1e6:.1f} MB, one stream)",
                     int(n), "docs", "lint-big" if n == sizes[-1] else None, extra=size)
    for n in sizes:
        out += findings_table(res, work, n)
    out += ["Load before each group (another busy process disturbs the figures):", "", "```",
            read(os.path.join(res, "load.txt")).strip(), "```"]
    print("\n".join(out))


if __name__ == "__main__":
    main()
