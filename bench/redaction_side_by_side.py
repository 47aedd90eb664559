#!/usr/bin/env python3
"""Credential detection side by side on the redaction corpus (tests/redaction/): tao-k8s lint
--select redaction, gitleaks and detect-secrets, per family, on the held-out part
(tests/redaction/heldout/: not used to tune the detector) and on the development part.

The corpus is copied with its `# planted:` header lines blanked (line numbers kept), so no tool
sees the literal outside the manifest. Scoring is per file, the same for every tool: a positive
file is found when the tool reports anything in it, a negative file is a false alarm when the
tool reports anything in it. (tao-k8s's own test, tests/redaction_corpus.rs, is stricter: the
marked line must be reported.)

    bench/redaction_side_by_side.py TAO_K8S GITLEAKS DETECT_SECRETS [--readme bench/README.md]

With --readme, the table replaces the text between the `<!-- redaction:begin -->` and
`<!-- redaction:end -->` markers of that file.
"""

import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from readme_table import replace_between, take_option

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "redaction"


def family(text):
    for line in text.splitlines():
        if line.startswith("# family: "):
            return line.split(": ", 1)[1].strip()
    return "hand-written"


PARTS = (("held-out", "heldout"), ("development", ""))


def copy_corpus(dest):
    """{relative path: (part, family)}; the copies have no `# planted:` literal."""
    files = {}
    for part, sub in PARTS:
        for side in ("positive", "negative"):
            (dest / part / side).mkdir(parents=True)
            for f in sorted((CORPUS / sub / side).glob("*.yaml")):
                text = f.read_text()
                blanked = "\n".join("#" if l.startswith("# planted: ") else l for l in text.split("\n"))
                (dest / part / side / f.name).write_text(blanked)
                files[f"{part}/{side}/{f.name}"] = (part, family(text))
    return files


def rel(path, base):
    p = Path(path)
    if not p.is_absolute():
        p = (Path.cwd() / p)
    return str(p.resolve().relative_to(base.resolve()))


def tao(binary, base):
    out = subprocess.run([binary, "lint", "--select", "redaction", "--format", "jsonl", "--exit-zero",
                          str(base)], capture_output=True, text=True, check=True).stdout
    return {rel(json.loads(l)["file"], base) for l in out.splitlines() if l.strip()}


def gitleaks(binary, base):
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        subprocess.run([binary, "dir", "--no-banner", "--exit-code", "0", "--report-format", "json",
                        "--report-path", report.name, str(base)], capture_output=True, check=True)
        found = json.loads(Path(report.name).read_text() or "[]")
    return {rel(f["File"], base) for f in found}


def detect_secrets(binary, base):
    out = subprocess.run([binary, "scan", "--all-files", "."], cwd=base, capture_output=True,
                         text=True, check=True).stdout
    return {rel(base / name, base) for name, found in json.loads(out)["results"].items() if found}


def table(files, results):
    tools = list(results)
    lines = ["| part | side | family | files | " + " | ".join(tools) + " |",
             "|---|---|---|---:|" + "---:|" * len(tools)]
    for part, _ in PARTS:
        fams = defaultdict(lambda: {"positive": [], "negative": []})
        for path, (p, fam) in files.items():
            if p == part:
                fams[fam][path.split("/")[1]].append(path)
        for side, word in (("positive", "recall"), ("negative", "false-positive rate")):
            rows = sorted((f, v[side]) for f, v in fams.items() if v[side])
            rows.append(("**all**", [p for v in fams.values() for p in v[side]]))
            for fam, paths in rows:
                cells = []
                for t in tools:
                    k = sum(p in results[t] for p in paths)
                    cells.append(f"{k / len(paths):.3f}")
                lines.append(f"| {part} | {side} ({word}) | {fam} | {len(paths)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    args = sys.argv[1:]
    readme = take_option(args, "--readme")
    tao_bin, gl_bin, ds_bin = (str(Path(a).resolve()) for a in args)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        files = copy_corpus(base)
        results = {
            "tao-k8s": tao(tao_bin, base),
            "gitleaks": gitleaks(gl_bin, base),
            "detect-secrets": detect_secrets(ds_bin, base),
        }
    text = table(files, results)
    print(text)
    if readme:
        replace_between(readme, "redaction", text)


if __name__ == "__main__":
    main()
