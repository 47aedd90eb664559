#!/usr/bin/env python3
"""Generates the catalogue corpus: credentials sampled from the rule catalogues of gitleaks and
TruffleHog, each planted in a Kubernetes place, written to tests/redaction/catalogue.jsonl.

The detector is never consulted: what is planted comes from the catalogues' regexes alone, and
the expectation (a TK101 report on the line that holds the credential) from where it was planted.

    bench/catalogue/gen.py GITLEAKS_GIT_DIR TRUFFLEHOG_GIT_DIR

The two git directories are clones of the catalogues; the commits read are pinned below and
checked out with `git show`, so the corpus is the same for the same seed. Nothing of the
catalogues is committed but the samples drawn from their regexes.

Which rules are sampled:

* gitleaks: every rule of `config/gitleaks.toml` with a regex and no `path` condition (those
  judge a file type, not a value). A rule whose regex is "keyword, assignment, value" (the
  catalogue's `(?:=|>|:{1,3}=|...)` idiom) plants its value group under a name spelt from the
  rule id (`adafruit-api-key` -> `ADAFRUIT_API_KEY`), as an env var, a flag, a config line, a
  Secret key or an annotation would be; any other rule plants its whole match.
* TruffleHog: detectors with a fixed token format, i.e. a `regexp.MustCompile` pattern that
  starts with a literal of 3 or more characters (`\\b(dapi[0-9a-f]{32})\\b`) and does not use
  the keyword `PrefixRegex`; patterns named for a URL, host, domain, e-mail, id or key name are
  left out (they find where a key is used, not the key), and so are patterns whose fixed text
  lies outside the group they capture (a keyword before the credential, as `PrefixRegex` would
  put it) and connection strings that capture no password. A URI pattern's secret is its
  password group.
* Rules whose id says the value is an identifier or public by design (`...-client-id`,
  `...-access-id`, `...-pub-...`, `...-public-key`) are listed with that reason and not
  sampled: a client id is no credential, and this project does not report one.

The sampler walks Python's parse of the regex: a class draws a character from the class
(alphanumerics first when it allows them, so that a `\\S{3,50}` password does not swallow the
URL around it), a bounded repeat draws its count uniformly, an unbounded one `min + 0..32` (a token body
written `+` is as long as tokens are), a bounded lazy repeat takes its minimum (`[\\w.-]{0,50}?`
before a keyword is the context a match may have, not part of the credential), a branch one alternative. A repeated class that holds F, A, K and E
starts with FAKE, so a sample is obviously fake where its format allows.
"""

import base64
import json
import random
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import re._parser as sre  # Python 3.11+
import re._constants as C

GITLEAKS_COMMIT = "b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b"
TRUFFLEHOG_COMMIT = "3ab759fef4bb5935d4fe9ac68b503d05346b8364"
SEED = 20261203
SAMPLES_PER_RULE = 5
ROOT = Path(__file__).resolve().parent.parent.parent
OUT = ROOT / "tests" / "redaction" / "catalogue.jsonl"
TABLE = ROOT / "bench" / "catalogue" / "rules.tsv"

ALNUM = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
PRINTABLE = [chr(c) for c in range(33, 127)]
ASSIGN_IDIOM = r"(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)"
TRAILING = r"(?:[\x60'\"\s;]|\\[nr]|$)"


def git_show(git_dir, commit, path):
    return subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
                          capture_output=True, text=True, check=True).stdout


def to_python(pattern):
    """Go RE2 syntax that Python's parser reads differently, rewritten."""
    p = pattern.replace("[[:alnum:]]", "[A-Za-z0-9]").replace("[:alnum:]", "A-Za-z0-9")
    p = p.replace(r"\z", "$")
    # Flags: scoped groups become plain groups, inline switches are dropped (case as written).
    p = re.sub(r"\(\?-?[imsU]+:", "(?:", p)
    p = re.sub(r"\(\?-?[imsU]+\)", "", p)
    return p


class Sampler:
    def __init__(self, rng):
        self.rng = rng

    def sample(self, pattern):
        """(text, {group: (start, end)})."""
        tree = sre.parse(to_python(pattern))
        self.out, self.groups = [], {}
        self.walk(list(tree))
        return "".join(self.out), self.groups

    def pos(self):
        return sum(len(s) for s in self.out)

    def chars(self, items):
        """The characters a class (IN items) allows, among printable ASCII and space."""
        negate = items and items[0][0] is C.NEGATE
        allowed = set()
        for op, av in items:
            if op is C.LITERAL:
                allowed.add(chr(av))
            elif op is C.RANGE:
                allowed.update(chr(c) for c in range(av[0], av[1] + 1))
            elif op is C.CATEGORY:
                allowed.update(self.category(av))
        if negate:
            allowed = set(PRINTABLE) - allowed
        return allowed

    @staticmethod
    def category(cat):
        name = str(cat)
        if "NOT" in name:
            base = Sampler.category(getattr(C, name.replace("NOT_", "")))
            return set(PRINTABLE) - base
        if "DIGIT" in name:
            return set("0123456789")
        if "WORD" in name:
            return ALNUM | {"_"}
        if "SPACE" in name:
            return {" "}
        return set()

    def draw(self, allowed):
        nice = sorted(allowed & (ALNUM | set("_-")))
        pool = nice if nice and self.rng.random() < 0.95 else sorted(allowed)
        return self.rng.choice(pool)

    def walk(self, items):
        for op, av in items:
            self.item(op, av)

    def item(self, op, av):
        if op is C.LITERAL:
            self.out.append(chr(av))
        elif op is C.NOT_LITERAL:
            self.out.append(self.draw(set(PRINTABLE) - {chr(av)}))
        elif op is C.ANY:
            self.out.append(self.draw(set(PRINTABLE)))
        elif op is C.IN:
            self.out.append(self.draw(self.chars(av)))
        elif op is C.BRANCH:
            self.walk(list(self.rng.choice(av[1])))
        elif op is C.SUBPATTERN:
            group, _, _, sub = av
            start = self.pos()
            self.walk(list(sub))
            if group is not None:
                self.groups[group] = (start, self.pos())
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            if op is C.MIN_REPEAT and hi is not C.MAXREPEAT:
                n = lo
            elif hi is C.MAXREPEAT:
                n = lo + self.rng.randint(0, 32)
            else:
                n = self.rng.randint(lo, hi)
            sub = list(sub)
            if n >= 12 and len(sub) == 1 and sub[0][0] is C.IN and set("FAKE") <= self.chars(sub[0][1]):
                self.out.append("FAKE")
                n -= 4
            for _ in range(n):
                self.walk(sub)
        elif op is C.CATEGORY:
            self.out.append(self.draw(self.category(av)))
        # AT (anchors, \b), ASSERT, ASSERT_NOT: zero-width, nothing to emit.


def excluded_by_id(rule_id):
    words = re.split(r"[-_]", rule_id)
    if words[-1] == "id" or "pub" in words or "public" in words or "publishable" in words:
        return "an identifier or a key public by design, not a credential"
    return None


def name_from(rule_id):
    return re.sub(r"[^A-Za-z0-9]+", "_", rule_id).upper()


def gitleaks_rules(git_dir):
    config = tomllib.loads(git_show(git_dir, GITLEAKS_COMMIT, "config/gitleaks.toml"))
    for rule in config["rules"]:
        rid = rule["id"]
        if "regex" not in rule:
            yield rid, None, None, None, "no regex: the rule matches file names only"
            continue
        if "path" in rule:
            yield rid, None, None, None, "applies to one file type (a `path` condition), not to a value"
            continue
        why = excluded_by_id(rid)
        if why:
            yield rid, None, None, None, why
            continue
        regex = rule["regex"].replace(TRAILING, "")
        keyword = ASSIGN_IDIOM in regex
        yield rid, regex, rule.get("secretGroup", 1), keyword, None


def trufflehog_rules(git_dir):
    files = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only",
                            TRUFFLEHOG_COMMIT, "pkg/detectors"],
                           capture_output=True, text=True, check=True).stdout.split()
    seen = set()
    for f in sorted(files):
        if not f.endswith(".go") or f.endswith("_test.go"):
            continue
        src = git_show(git_dir, TRUFFLEHOG_COMMIT, f)
        detector = f.split("/")[2]
        for m in re.finditer(r"(\w+)\s*=\s*regexp\.MustCompile\((.*)\)\s*$", src, re.M):
            var, expr = m.group(1), m.group(2)
            literals = re.findall(r"`([^`]*)`", expr)
            if "PrefixRegex" in expr or len(literals) != 1:
                continue
            regex = literals[0]
            core = re.sub(r"^(?:\\b|\(\?i\)|\(\?:|\(|\^)+", "", regex)
            lead = re.match(r"[A-Za-z0-9_\-.:/~]+", core)
            lead = re.sub(r"\\.*", "", lead.group(0)) if lead else ""
            if len(lead) < 3 or regex in seen:
                continue
            seen.add(regex)
            rid = f"{detector}/{var}"
            if re.search(r"(?i)url|host|domain|email|instance|^id|idpat|pubpat|subpat|publishable|name", var) or (
                    "uri" in var.lower() and "(?P<password>" not in regex):
                yield rid, None, None, None, "finds where a key is used (a URL, host, e-mail, id or key name), not the key"
                continue
            try:
                groups = sre.parse(to_python(regex)).state.groups - 1
            except Exception as e:  # noqa: BLE001 - a syntax Python's parser lacks
                yield rid, None, None, None, f"regex not sampled ({e.__class__.__name__})"
                continue
            head = re.sub(r"^(?:\\b|\(\?i\)|\^)+", "", regex)
            # A URI pattern starts with its scheme: `ftp://`, `(?:amqps?):\/\/`, `redi[s]{1,2}://`.
            uri = bool(re.match(r"^\(?(?:\?:)?[A-Za-z\[\]{},0-9?|()+\\]{2,24}?:(?://|\\/\\/)", head)) or lead.endswith(":")
            if uri and not groups:
                yield rid, None, None, None, "a connection string, a credential only with a password in it, which the pattern does not capture"
                continue
            if groups and not uri and not (head.startswith("(") and not head.startswith("(?")):
                yield rid, None, None, None, "a keyword pattern: its fixed text is context before the credential, not part of a token format"
                continue
            # The secret of a URI is its password group; of a token, the whole match.
            yield rid, regex, ("password" if "(?P<password>" in regex else 1) if uri else 0, False, None


def b64(text):
    return base64.b64encode(text.encode()).decode()


def yq(text):
    """A YAML double-quoted scalar."""
    return json.dumps(text)


def plant(place, name, token, secret, keyword, rng):
    """(manifest, line a report must be on (1-based): the line of the value that holds it)."""
    kebab = name.lower().replace("_", "-")
    head = "apiVersion: v1\nkind: {kind}\nmetadata:\n  name: sample\n"
    if place == "env":
        body = head.format(kind="Pod") + (
            "spec:\n  containers:\n    - name: app\n      image: nvcr.io/nvidia/tao/tao-toolkit:5.5.0\n"
            f"      env:\n        - name: {name}\n          value: {yq(token)}\n")
        return body, body.count("\n")
    if place == "args":
        if keyword:
            args = [f"--{kebab}={token}"] if rng.random() < 0.5 else [f"--{kebab}", token]
        else:
            args = ["sh", "-c", f"exec /app/run --verbose {token}"]
        items = "".join(f"        - {yq(a)}\n" for a in args)
        body = head.format(kind="Pod") + (
            "spec:\n  containers:\n    - name: app\n      image: nvcr.io/nvidia/tao/tao-toolkit:5.5.0\n"
            f"      args:\n{items}")
        return body, body.count("\n")
    if place == "file":
        style = rng.choice(["env", "ini", "yaml"])
        line = {"env": f"{name}={token}", "ini": f"{name.lower()} = {token}",
                "yaml": f"{name.lower()}: {yq(token)}"}[style]
        if not keyword and style != "yaml" and rng.random() < 0.5:
            line = token  # a fixed format alone on its line: no name to lean on
        fname = {"env": "app.env", "ini": "app.ini", "yaml": "app.yaml"}[style]
        body = head.format(kind="ConfigMap") + (
            f"data:\n  {fname}: |\n    # settings\n    log_level = info\n    {line}\n    workers = 4\n")
        # A finding in a block scalar is reported where the value starts.
        return body, body.count("\n") - 3
    if place == "secret":
        if rng.random() < 0.5:
            body = head.format(kind="Secret") + f"type: Opaque\nstringData:\n  {name}: {yq(token)}\n"
        else:
            body = head.format(kind="Secret") + f"type: Opaque\ndata:\n  {name}: {b64(token)}\n"
        return body, body.count("\n")
    if place == "annotation":
        key = f"example.com/{kebab}" if keyword else "example.com/notes"
        value = token if keyword else f"rotated on 2026-11-30, current {token}"
        body = (head.format(kind="Service") + f"  annotations:\n    {key}: {yq(value)}\n"
                "spec:\n  ports:\n    - port: 80\n")
        return body, 6
    raise ValueError(place)


PLACES = ["env", "args", "file", "secret", "annotation"]


def main():
    gitleaks_dir, trufflehog_dir = map(Path, sys.argv[1:3])
    rng = random.Random(SEED)
    sampler = Sampler(rng)
    samples, table = [], []
    for catalogue, rules in (("gitleaks", gitleaks_rules(gitleaks_dir)),
                             ("trufflehog", trufflehog_rules(trufflehog_dir))):
        for rid, regex, group, keyword, why in rules:
            if regex is None:
                table.append((catalogue, rid, 0, why))
                continue
            made = 0
            for i in range(SAMPLES_PER_RULE):
                try:
                    text, groups = sampler.sample(regex)
                except Exception as e:  # noqa: BLE001
                    table.append((catalogue, rid, 0, f"regex not sampled ({e.__class__.__name__})"))
                    break
                if group == "password":
                    group = next((g for g, (s, e) in groups.items() if s != e and g > 1), 0)
                span = groups.get(group) if group else None
                # A group of a few characters is a repeated part (`([a-z0-9]{4}-){3}`), not the
                # secret: the whole match is.
                if span and not keyword and span[1] - span[0] < 8:
                    span = None
                secret = text[span[0]:span[1]] if span else text
                token = secret if keyword else text
                if "\n" in token or "\r" in token or len(secret) < 8:
                    continue
                place = PLACES[(len(samples) + made) % len(PLACES)]
                manifest, line = plant(place, name_from(rid.split("/")[0]), token, secret, keyword, rng)
                samples.append({"catalogue": catalogue, "rule": rid, "place": place,
                                "secret": secret, "line": line, "manifest": manifest})
                made += 1
            else:
                table.append((catalogue, rid, made, "sampled" if made else "no sample of 8+ characters on one line"))
    with OUT.open("w") as out:
        for s in samples:
            out.write(json.dumps(s, sort_keys=True) + "\n")
    with TABLE.open("w") as out:
        out.write("catalogue\trule\tsamples\tstatus\n")
        for row in table:
            out.write("\t".join(map(str, row)) + "\n")
    print(f"{len(samples)} samples of {sum(1 for r in table if r[2])} rules; "
          f"{sum(1 for r in table if not r[2])} rules not sampled", file=sys.stderr)


if __name__ == "__main__":
    main()
