#!/usr/bin/env python3
"""Credential detection side by side on the redaction corpus (tests/redaction/): tao-k8s lint
--select redaction, gitleaks and detect-secrets, per family.

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

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "redaction"


def family(text):
    for line in text.splitlines():
        if line.startswith("# family: "):
            return line.split(": ", 1)[1].strip()
    return "hand-written"


def copy_corpus(dest):
    """side -> {relative path: family}; the copies have no `# planted:` literal."""
    files = {}
    for side in ("positive", "negative"):
        (dest / side).mkdir()
        for f in sorted((CORPUS / side).glob("*.yaml")):
            text = f.read_text()
            blanked = "\n".join("#" if l.startswith("# planted: ") else l for l in text.split("\n"))
            (dest / side / f.name).write_text(blanked)
            files[f"{side}/{f.name}"] = family(text)
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
    fams = defaultdict(lambda: {"positive": [], "negative": []})
    for path, fam in files.items():
        fams[fam][path.split("/")[0]].append(path)
    lines = ["| side | family | files | " + " | ".join(tools) + " |",
             "|---|---|---:|" + "---:|" * len(tools)]
    for side, word in (("positive", "recall"), ("negative", "false-positive rate")):
        rows = sorted((f, v[side]) for f, v in fams.items() if v[side])
        rows.append(("**all**", [p for v in fams.values() for p in v[side]]))
        for fam, paths in rows:
            cells = []
            for t in tools:
                k = sum(p in results[t] for p in paths)
                cells.append(f"{k / len(paths):.3f}")
            lines.append(f"| {side} ({word}) | {fam} | {len(paths)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    args = sys.argv[1:]
    readme = None
    if "--readme" in args:
        i = args.index("--readme")
        readme = Path(args[i + 1])
        del args[i:i + 2]
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
        doc = readme.read_text()
        begin, end = "<!-- redaction:begin -->", "<!-- redaction:end -->"
        head, rest = doc.split(begin, 1)
        _, tail = rest.split(end, 1)
        readme.write_text(f"{head}{begin}\n{text}\n{end}{tail}")


if __name__ == "__main__":
    main()
