#!/usr/bin/env python3
"""Generates the planted part of the redaction corpus: tests/redaction/{positive,negative}/gen-*.

Each file combines a hand-written manifest template (a Kubernetes place: Pod, Job, CronJob,
Deployment, ConfigMap, Secret, annotations, init and ephemeral containers, Helm output) with
one value of a family. The expectation comes from the family that was planted, never from a
scanner: a positive marks the line its value is reported on (`# expect: TK101`) and lists the
literal (`# planted: ...`); a negative plants a near-miss and marks nothing. Every value is
obviously fake (FAKE in it where the format allows) but format-correct: GitHub tokens carry a
valid CRC32 checksum, JWTs decode, docker `auth` is base64 of user:password.

    python3 tests/redaction/gen.py      # rewrites the gen-* files, deterministic (seeded)
"""

import base64
import hashlib
import json
import random
import string
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent
R = random.Random(20261202)
ALNUM = string.ascii_letters + string.digits
B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
MARK = "# expect: {code}"


def rnd(n, alphabet=ALNUM):
    return "".join(R.choice(alphabet) for _ in range(n))


def fake(n, alphabet=ALNUM):
    """n characters starting with FAKE."""
    return "FAKE" + rnd(n - 4, alphabet)


def b62(n, width):
    out = ""
    while n:
        out = B62[n % 62] + out
        n //= 62
    return out.rjust(width, "0")


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# ---------------------------------------------------------------- token formats (all fake)
def github():
    body = fake(30)
    return f"{R.choice(['ghp', 'gho', 'ghs', 'ghu'])}_{body}{b62(zlib.crc32(body.encode()), 6)}"


def github_pat():
    return f"github_pat_11{fake(20)}_{fake(59)}"


def gitlab():
    return "glpat-" + fake(20, ALNUM + "_-")


def slack():
    return f"xox{R.choice('bpa')}-{rnd(11, string.digits)}-{rnd(13, string.digits)}-{fake(24)}"


def slack_webhook():
    up = string.ascii_uppercase + string.digits
    return f"https://hooks.slack.com/services/T0FAKE{rnd(4, up)}/B0FAKE{rnd(5, up)}/{fake(24)}"


def stripe():
    return f"{R.choice(['sk', 'rk'])}_live_{fake(24)}"


def openai():
    return "sk-proj-" + fake(56, ALNUM + "_-")


def google():
    return "AIzaSy" + fake(33, ALNUM + "_-")


def azure():
    key = base64.b64encode(("FAKE" + rnd(60)).encode()).decode()
    return (
        f"DefaultEndpointsProtocol=https;AccountName=fakeacct{rnd(4, string.digits)};"
        f"AccountKey={key};EndpointSuffix=core.windows.net"
    )


def hf():
    return "hf_" + fake(34)


def ngc():
    return "nvapi-" + fake(64, ALNUM + "_-")


def aws_id():
    return "AKIAFAKE" + rnd(12, string.ascii_uppercase + string.digits)


def aws_secret():
    return "FAKE" + rnd(36, ALNUM + "+/")


def jwt():
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64url(json.dumps({"sub": f"fake-user-{rnd(4, string.digits)}", "fake": True}).encode())
    return f"{head}.{body}.{b64url(('FAKE' + rnd(28)).encode())}"


def npm():
    return "npm_" + fake(36)


def pypi():
    return "pypi-AgEIcHlwaS5vcmc" + fake(64, ALNUM + "_-")


def password():
    return R.choice(
        [
            lambda: "FAKE" + rnd(10),
            lambda: "fake" + rnd(4, string.ascii_lowercase) + "horsebattery",  # no digit
            lambda: "Fk" + rnd(4),  # short
            lambda: "FAKEpw" + rnd(3, string.digits) + "!",
            lambda: "fAkE_" + rnd(8),
        ]
    )()


def opaque():
    return "FAKE" + rnd(28, ALNUM)


TOKENS = {
    "github": github,
    "github-pat": github_pat,
    "gitlab": gitlab,
    "slack": slack,
    "slack-webhook": slack_webhook,
    "stripe": stripe,
    "openai": openai,
    "google": google,
    "azure": azure,
    "huggingface": hf,
    "ngc": ngc,
    "aws": aws_id,
    "jwt": jwt,
    "npm": npm,
    "pypi": pypi,
}
NEUTRAL = ["UPSTREAM", "CONFIG_VALUE", "NOTIFY", "SERVICE_CONN", "INIT_ARG", "BACKEND", "X_SETTING"]

# ---------------------------------------------------------------- places
WORKLOADS = ["Pod", "Job", "CronJob", "Deployment"]
CONTAINER_SLOTS = ["containers", "initContainers", "ephemeralContainers"]


def meta(kind, name, annotations=None):
    api = {"Pod": "v1", "Job": "batch/v1", "CronJob": "batch/v1", "Deployment": "apps/v1",
           "ConfigMap": "v1", "Secret": "v1"}[kind]
    lines = [f"apiVersion: {api}", f"kind: {kind}", "metadata:", f"  name: {name}"]
    if R.random() < 0.4:
        lines += ["  labels:", f"    app.kubernetes.io/name: {name}", "    team: ml-platform"]
    if annotations:
        lines += ["  annotations:"] + [f"    {a}" for a in annotations]
    return lines


def container(slot, body, indent):
    """A container (list item) with `body` lines (relative indent 2) under pod-spec `indent`."""
    p = " " * indent
    image = R.choice(["nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt", "python:3.12-slim",
                      "curlimages/curl:8.8.0", "bitnami/kubectl:1.30.2"])
    names = {"containers": ["main", "worker", "train"], "initContainers": ["fetch", "init-data", "wait-db"],
             "ephemeralContainers": ["debugger"]}[slot]
    out = [f"{p}{slot}:", f"{p}  - name: {R.choice(names)}",
           f"{p}    image: {image}"]
    if slot == "ephemeralContainers":
        out.append(f"{p}    targetContainerName: main")
    return out + [f"{p}    {line}" for line in body]


def workload(kind, name, body, slot=None, annotations=None):
    """A workload whose one container holds `body` (lines at container indent)."""
    slot = slot or R.choice(CONTAINER_SLOTS if kind == "Pod" else CONTAINER_SLOTS[:2])
    lines = meta(kind, name, annotations)
    if kind == "Pod":
        lines += ["spec:", "  restartPolicy: Never"]
        if slot != "containers":
            lines += ["  containers:", "    - name: main", "      image: python:3.12-slim"]
        return lines + container(slot, body, 2)
    if kind == "Job":
        lines += ["spec:", "  backoffLimit: 0", "  template:", "    spec:", "      restartPolicy: Never"]
        extra = [] if slot == "containers" else ["      containers:", "        - name: main",
                                                  "          image: python:3.12-slim"]
        return lines + extra + container(slot, body, 6)
    if kind == "CronJob":
        lines += ["spec:", f"  schedule: \"{R.randint(0, 59)} 3 * * *\"", "  jobTemplate:",
                  "    spec:", "      template:", "        spec:", "          restartPolicy: OnFailure"]
        extra = [] if slot == "containers" else ["          containers:", "            - name: main",
                                                  "              image: python:3.12-slim"]
        return lines + extra + container(slot, body, 10)
    lines += ["spec:", "  replicas: 2", "  selector:", f"    matchLabels: {{app: {name}}}",
              "  template:", "    metadata:", f"      labels: {{app: {name}}}", "    spec:"]
    extra = [] if slot == "containers" else ["      containers:", "        - name: main",
                                              "          image: python:3.12-slim"]
    return lines + extra + container(slot, body, 6)


def q(value):
    """The value as YAML, in a style engineers use: plain, single- or double-quoted."""
    style = R.choice(["plain", "single", "double"])
    needs = any(c in value for c in ":#{}[],&*!|>'\"%@`") or value[:1] in "-?" or value in ("y", "n")
    if style == "plain" and not needs:
        return value
    if style == "single" or '"' in value or "\\" in value:
        return "'" + value.replace("'", "''") + "'"
    return json.dumps(value)


def env_body(name, value, mark):
    """Container lines with an env entry `name: value`, in block or flow style."""
    noise = [("LOG_LEVEL", "info"), ("OMP_NUM_THREADS", "8"), ("TZ", "UTC")]
    R.shuffle(noise)
    if R.random() < 0.5:
        lines = ["env:"]
        for n, v in noise[:2]:
            lines += [f"  - name: {n}", f"    value: {q(v)}"]
        lines += [f"  - name: {name}", f"    value: {q(value)}  {mark}"]
        return lines
    lines = ["env:"] + [f"  - {{name: {n}, value: {q(v)}}}" for n, v in noise[:1]]
    return lines + [f"  - {{name: {name}, value: {q(value)}}}  {mark}"]


def args_body(words, at, mark, key="args"):
    """Container lines with an argv list (block or flow); the element `at` carries the mark."""
    if R.random() < 0.5 and all("\n" not in w for w in words):
        return [f"{key}: [" + ", ".join(q(w) for w in words) + f"]  {mark}"]
    lines = [f"{key}:"]
    for i, w in enumerate(words):
        lines.append(f"  - {q(w)}" + (f"  {mark}" if i == at else ""))
    return lines


def shell_body(script, mark):
    """Container lines running `script` through a shell: flow string or a block literal."""
    if "\n" not in script and R.random() < 0.5:
        return [f"command: [\"/bin/sh\", \"-c\", {json.dumps(script)}]  {mark}"]
    first = "# fetch inputs, then train  " + mark
    lines = ["command: [\"/bin/bash\", \"-c\"]" if R.random() < 0.5 else "command:\n  - /bin/bash\n  - -c"]
    lines = lines[0].split("\n")
    lines += ["args:", "  - |", f"    {first}", "    set -euo pipefail"]
    lines += [f"    {line}" for line in script.split("\n")]
    lines += ["    python train.py --epochs 10"]
    return lines


def configmap(name, filename, content, mark, comment="#"):
    """A ConfigMap carrying a file; its first line is a comment with the mark."""
    lines = meta("ConfigMap", name) + ["data:", "  app.env: production" if R.random() < 0.5 else "  mode: train"]
    first = f"{comment} managed by platform tooling  {mark}"
    if comment == "<!--":
        first = f"<!-- managed by platform tooling  {mark} -->"
    if comment == "":
        # JSON has no comment: the file is one flow string, the mark on its line.
        return lines + [f"  {filename}: {json.dumps(content)}  {mark}"]
    lines += [f"  {filename}: |", f"    {first}"] + [f"    {line}" if line else "" for line in content.split("\n")]
    return lines


def secret(name, key, value, mark, encoded):
    lines = meta("Secret", name) + ["type: Opaque"]
    if encoded:
        return lines + ["data:", f"  {key}: {base64.b64encode(value.encode()).decode()}  {mark}"]
    return lines + ["stringData:", f"  {key}: {q(value)}  {mark}"]


def helm(lines, chart):
    """Helm template output: a `# Source:` header and the chart's labels."""
    out = ["---", f"# Source: {chart}/templates/{R.choice(['job', 'deployment', 'worker'])}.yaml"]
    labels = [f"    helm.sh/chart: {chart}-1.4.2", "    app.kubernetes.io/managed-by: Helm"]
    has_labels = "  labels:" in lines
    for line in lines:
        out.append(line)
        if has_labels and line == "  labels:":
            out += labels
        elif not has_labels and line == "metadata:":
            out += ["  labels:"] + labels
    return out


def wrap(lines, side_doc):
    """Sometimes a multi-document file: a clean Service or ConfigMap first."""
    if not side_doc:
        return lines
    other = R.choice([
        ["apiVersion: v1", "kind: Service", "metadata:", "  name: metrics", "spec:",
         "  selector: {app: trainer}", "  ports:", "    - {port: 9090, targetPort: 9090}"],
        ["apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: tuning", "data:",
         "  batch_size: \"64\"", "  lr: \"0.0003\""],
    ])
    return other + ["---"] + lines


# ---------------------------------------------------------------- families
def place_value(name, value, mark, kinds=("env", "annotation", "configmap", "args-set")):
    """Put `value` (assigned to `name`) in one of several Kubernetes places."""
    how = R.choice(kinds)
    kind = R.choice(WORKLOADS)
    wname = R.choice(["trainer", "exporter", "nightly-eval", "label-sync", "infer-api"])
    if how == "env":
        return workload(kind, wname, ["args: [python, run.py]"] + env_body(name, value, mark)), f"{kind.lower()}-env"
    if how == "annotation":
        ann = [f"example.com/{name.lower().replace('_', '-')}: {q(value)}  {mark}"]
        return workload(kind, wname, ["args: [python, run.py]"], annotations=ann), f"{kind.lower()}-annotation"
    if how == "configmap":
        lines = meta("ConfigMap", wname + "-config") + ["data:", "  region: us-west-2",
                                                      f"  {name}: {q(value)}  {mark}"]
        return lines, "configmap-data"
    words = ["helm", "upgrade", "--install", wname, "./chart", "--set", f"env.{name}={value}"]
    return workload(kind, wname, args_body(words[1:], 5, mark) + ["command: [helm]"]), f"{kind.lower()}-helm-set"


def pos_token(fam):
    value = TOKENS[fam]()
    lines, place = place_value(R.choice(NEUTRAL), value, MARK.format(code="TK101"))
    return lines, place, [value if fam != "azure" else value.split("AccountKey=")[1].split(";")[0]]


OPTION_NAMES = ["--password", "--db-pass", "--api-key", "--token", "--client-secret", "--s3-secret-key",
                "--db-password", "--auth-token", "--access-token", "--hf-token"]


def secret_for(opt):
    return password() if "pass" in opt else fake(24)


def pos_argv():
    mark = MARK.format(code="TK101")
    kind = R.choice(WORKLOADS)
    form = R.choice(["pair", "eq", "glued", "userpair", "redis"])
    if form == "pair":
        opt = R.choice(OPTION_NAMES)
        value = secret_for(opt)
        words = ["train.py", "--epochs", "10", opt, value, "--out", "/results"]
        at = 4
    elif form == "eq":
        opt = R.choice(OPTION_NAMES)
        value = secret_for(opt)
        words = ["train.py", f"{opt}={value}", "--out", "/results"]
        at = 1
    elif form == "glued":
        value = password()
        words = ["mysql", "-h", "db.internal", "-u", "tao", f"-p{value}", "-e", "select 1"]
        at = 5
        return workload(kind, "db-check", args_body(words[1:], at - 1, mark) + ["command: [mysql]"]
                        if R.random() < 0.5 else args_body(words, at, mark, "command")), f"{kind.lower()}-argv-glued", [value]
    elif form == "userpair":
        value = password()
        words = ["curl", "-fsSL", "-u", f"deploy:{value}", "https://artifacts.internal/w.pth"]
        return workload(kind, "fetch", args_body(words, 3, mark, "command")), f"{kind.lower()}-argv-user", [value]
    else:
        value = password()
        words = ["redis-cli", "-h", "cache", "-a", value, "ping"]
        return workload(kind, "cache-check", args_body(words, 4, mark, "command")), f"{kind.lower()}-argv-redis", [value]
    return workload(kind, "trainer", ["command: [python]"] + args_body(words, at, mark)), f"{kind.lower()}-argv-{form}", [value]


def pos_shell():
    mark = MARK.format(code="TK101")
    kind = R.choice(WORKLOADS)
    value = password() if R.random() < 0.6 else opaque()
    script = R.choice([
        f"curl -fsS -u admin:{value} https://artifacts.internal/model.pth -o /data/m.pth",
        f"curl -fsS -H 'Authorization: Bearer {opaque()}' https://api.internal/v1/models",
        f"mysql -h db -u tao -p{value} -e 'select 1'",
        f"docker login -u tao -p {value} registry.internal",
        f"PGPASSWORD={value} psql -h db -U tao -c 'select 1'",
        f"export DB_PASSWORD='{value}'",
        f"sshpass -p '{value}' scp data@nas:/exports/coco.tar /data/",
        f"wget --user=tao --password={value} https://artifacts.internal/m.pth",
    ])
    if "Bearer" in script:
        value = script.split("Bearer ")[1].split("'")[0]
    return workload(kind, "prepare", shell_body(script, mark)), f"{kind.lower()}-shell", [value]


def pos_file():
    mark = MARK.format(code="TK101")
    pw = password()
    tok = npm()
    fmt = R.choice(["netrc", "pgpass", "maven", "npmrc", "pypirc", "ini", "properties", "dotenv",
                    "htpasswd", "dockerconfig"])
    if fmt == "netrc":
        return configmap("netrc", ".netrc", f"machine artifacts.internal\n  login deploy\n  password {pw}", mark), "configmap-netrc", [pw]
    if fmt == "pgpass":
        return configmap("pgpass", ".pgpass", f"db.internal:5432:jobs:tao:{pw}", mark), "configmap-pgpass", [pw]
    if fmt == "maven":
        xml = (f"<settings>\n  <servers>\n    <server>\n      <id>internal</id>\n      <username>deploy</username>\n"
               f"      <password>{pw}</password>\n    </server>\n  </servers>\n</settings>")
        return configmap("maven-settings", "settings.xml", xml, mark, "<!--"), "configmap-maven", [pw]
    if fmt == "npmrc":
        return configmap("npmrc", ".npmrc", f"registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={tok}", mark), "configmap-npmrc", [tok]
    if fmt == "pypirc":
        return configmap("pypirc", ".pypirc", f"[distutils]\nindex-servers = internal\n\n[internal]\nrepository = https://pypi.internal/\nusername = deploy\npassword = {pw}", mark), "configmap-pypirc", [pw]
    if fmt == "ini":
        return configmap("app-ini", "app.ini", f"[server]\nport = 8080\n\n[database]\nhost = db.internal\nuser = tao\npassword = {pw}", mark, ";"), "configmap-ini", [pw]
    if fmt == "properties":
        return configmap("spring", "application.properties", f"spring.datasource.url=jdbc:postgresql://db:5432/jobs\nspring.datasource.username=tao\nspring.datasource.password={pw}", mark), "configmap-properties", [pw]
    if fmt == "dotenv":
        return configmap("dotenv", ".env", f"APP_ENV=production\nREDIS_HOST=cache\nREDIS_PASSWORD={pw}", mark), "configmap-dotenv", [pw]
    if fmt == "htpasswd":
        h = "$apr1$" + rnd(8, ALNUM) + "$" + fake(22, ALNUM + "./")
        return configmap("basic-auth", "htpasswd", f"deploy:{h}", mark), "configmap-htpasswd", [h]
    auth = base64.b64encode(f"deploy:{pw}".encode()).decode()
    cfg = json.dumps({"auths": {"registry.internal": {"auth": auth}}})
    return configmap("registry", "config.json", cfg, mark, ""), "configmap-dockerconfig", [auth]


def pos_secret():
    mark = MARK.format(code="TK101")
    value = R.choice([password, opaque, aws_secret])()
    encoded = R.random() < 0.5
    key = R.choice(["password", "DB_PASSWORD", "token", "api-key", ".dockerconfigjson"])
    if key == ".dockerconfigjson":
        auth = base64.b64encode(f"deploy:{value}".encode()).decode()
        value = json.dumps({"auths": {"nvcr.io": {"auth": auth}}})
        planted = auth
    else:
        planted = value
    return secret("app-credentials", key, value, mark, encoded), "secret-" + ("data" if encoded else "stringdata"), [planted]


def pos_probe():
    mark = MARK.format(code="TK101")
    kind = R.choice(WORKLOADS)
    tok = opaque()
    if R.random() < 0.5:
        body = ["args: [serve]", "livenessProbe:", "  httpGet:", "    path: /healthz", "    port: 8080",
                "    httpHeaders:", "      - name: Authorization", f"        value: \"Bearer {tok}\"  {mark}"]
        return workload(kind, "infer-api", body, slot="containers"), f"{kind.lower()}-probe-header", [tok]
    pw = password()
    body = ["args: [serve]", "lifecycle:", "  preStop:", "    exec:",
            f"      command: [\"sh\", \"-c\", \"curl -fsS -u ops:{pw} -X POST http://registry.internal/drain\"]  {mark}"]
    return workload(kind, "infer-api", body, slot="containers"), f"{kind.lower()}-lifecycle-hook", [pw]


def pos_password_name():
    mark = MARK.format(code="TK101")
    value = R.choice([lambda: "fake" + rnd(6, string.ascii_lowercase) + "staple",  # no digit
                      lambda: "Fk" + rnd(3, ALNUM) + "!",  # short
                      password])()
    name = R.choice(["DB_PASSWORD", "POSTGRES_PASSWORD", "REDIS_PASS", "SMTP_PASSWD", "ADMIN_PWD",
                     "MYSQL_ROOT_PASSWORD", "KEYSTORE_PASSPHRASE"])
    lines, place = place_value(name, value, mark, ("env", "configmap"))
    return lines, place, [value]


def pos_pem():
    mark = MARK.format(code="TK101")
    body = "\n".join(("FAKE" + rnd(60, ALNUM + "+/")) for _ in range(4))
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    return configmap("tls-bundle", "tls.key", pem, mark), "configmap-pem", [body.splitlines()[0]]


def pos_url():
    mark = MARK.format(code="TK101")
    pw = password()
    url = f"{R.choice(['postgres', 'mongodb', 'redis', 'amqp', 'https'])}://tao:{pw}@db.internal:5432/jobs"
    lines, place = place_value(R.choice(["DATABASE_URL", "BROKER", "CONN"]), url, mark, ("env", "configmap"))
    return lines, place, [pw]


POSITIVE = {**{f"token-{k}": (lambda k=k: pos_token(k)) for k in TOKENS},
            "argv": pos_argv, "shell": pos_shell, "file": pos_file, "secret": pos_secret,
            "probe-hook": pos_probe, "password-name": pos_password_name, "pem": pos_pem,
            "url-password": pos_url}
POS_COUNTS = {"argv": 50, "shell": 50, "file": 50, "secret": 16, "probe-hook": 14,
              "password-name": 20, "pem": 6, "url-password": 10}

# ---------------------------------------------------------------- negatives
def neg_encrypted():
    choice = R.random()
    if choice < 0.35:
        lines = ["apiVersion: bitnami.com/v1alpha1", "kind: SealedSecret", "metadata:", "  name: db-credentials",
                 "spec:", "  encryptedData:",
                 f"    password: AgB{rnd(120, ALNUM + '+/')}==",
                 f"    api-token: AgC{rnd(120, ALNUM + '+/')}==",
                 "  template:", "    metadata:", "      name: db-credentials"]
        return lines, "sealedsecret"
    if choice < 0.7:
        enc = f"ENC[AES256_GCM,data:{rnd(24, ALNUM + '+/')}=,iv:{rnd(43, ALNUM + '+/')}=,tag:{rnd(22, ALNUM + '+/')}==,type:str]"
        lines = meta("Secret", "sops-creds") + ["type: Opaque", "stringData:", f"  DB_PASSWORD: {enc}",
                 "sops:", "  lastmodified: \"2026-11-30T10:00:00Z\"", f"  mac: ENC[AES256_GCM,data:{rnd(44, ALNUM + '+/')}=,iv:{rnd(43, ALNUM + '+/')}=,tag:{rnd(22, ALNUM + '+/')}==,type:str]",
                 "  version: 3.9.1"]
        return lines, "secret-sops"
    kind = R.choice(["AGE ENCRYPTED FILE", "PGP MESSAGE"])
    body = "\n".join(rnd(64, ALNUM + "+/") for _ in range(3))
    lines = meta("ConfigMap", "encrypted-bundle") + ["data:", "  creds.enc: |", f"    -----BEGIN {kind}-----"]
    lines += [f"    {line}" for line in body.splitlines()] + [f"    -----END {kind}-----"]
    return lines, "configmap-armored"


def neg_public():
    kind = R.choice(WORKLOADS)
    which = R.choice(["stripe", "recaptcha", "ssh", "pgp"])
    if which == "stripe":
        body = ["args: [serve]"] + env_body("STRIPE_PUBLISHABLE_KEY", "pk_live_" + fake(24), "")
        return workload(kind, "checkout", body), f"{kind.lower()}-stripe-pk"
    if which == "recaptcha":
        body = ["args: [serve]"] + env_body("RECAPTCHA_SITE_KEY", "6Le" + fake(37, ALNUM + "_-"), "")
        return workload(kind, "signup", body), f"{kind.lower()}-recaptcha"
    if which == "ssh":
        key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + fake(43, ALNUM + "+/") + " deploy@ci"
        return meta("ConfigMap", "authorized-keys") + ["data:", f"  authorized_keys: {q(key)}"], "configmap-ssh-pub"
    body = "\n".join(rnd(64, ALNUM + "+/") for _ in range(3))
    lines = meta("ConfigMap", "release-keys") + ["data:", "  signing.asc: |", "    -----BEGIN PGP PUBLIC KEY BLOCK-----", ""]
    lines += [f"    {line}" for line in body.splitlines()] + ["    -----END PGP PUBLIC KEY BLOCK-----"]
    return lines, "configmap-pgp-pub"


def neg_digest():
    kind = R.choice(WORKLOADS)
    h64 = rnd(64, "0123456789abcdef")
    h40 = rnd(40, "0123456789abcdef")
    body = R.choice([
        ["args: [train]"] + env_body("CACHE_KEY", h64, ""),
        ["args: [train]"] + env_body("GIT_COMMIT", h40, ""),
        ["args: [train]"] + env_body("MODEL_SHA256", h64, ""),
        ["args: [\"--cache-key\", " + json.dumps(f"pip-{h64}") + "]"],
        [f"image: \"nvcr.io/nvidia/tao/tao-toolkit@sha256:{h64}\"", "args: [train]"],
    ])
    ann = [f"checksum/config: {h64}"] if R.random() < 0.5 else None
    return workload(kind, "trainer", body, annotations=ann), f"{kind.lower()}-digest"


def neg_ids():
    kind = R.choice(WORKLOADS)
    u = "-".join(rnd(n, "0123456789abcdef") for n in (8, 4, 4, 4, 12))
    ulid = R.choice("01234567") + rnd(25, "0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    body = ["args: [train]"] + env_body(R.choice(["RUN_ID", "API_KEY_ID", "REQUEST_TOKEN_ID", "TRACE"]), R.choice([u, u.upper(), ulid]), "")
    return workload(kind, "trainer", body), f"{kind.lower()}-ids"


PLACEHOLDERS = ["<your-token>", "${TOKEN}", "$(DB_PASSWORD)", "changeme", "REPLACE_ME", "AKIAIOSFODNN7EXAMPLE",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "<paste-api-key-here>", "{{ .Values.apiKey }}",
                "xxxxxxxxxxxxxxxx", "REDACTED", "your-api-key", "${HF_TOKEN}", "TODO"]


def neg_placeholder():
    value = R.choice(PLACEHOLDERS)
    kind = R.choice(WORKLOADS)
    how = R.choice(["env", "args", "shell", "secret", "file"])
    if how == "env":
        return workload(kind, "trainer", ["args: [train]"] + env_body(R.choice(["HF_TOKEN", "DB_PASSWORD", "API_KEY", "GITHUB_TOKEN"]), value, "")), f"{kind.lower()}-env"
    if how == "args":
        return workload(kind, "trainer", ["command: [python]"] + args_body(["train.py", "--api-key", value], 2, "")), f"{kind.lower()}-args"
    if how == "shell":
        script = R.choice([f"curl -fsS -u admin:{value} https://artifacts.internal/x", f"export DB_PASSWORD={value} && ./run.sh"])
        return workload(kind, "trainer", [f"command: [\"/bin/sh\", \"-c\", {json.dumps(script)}]"]), f"{kind.lower()}-shell"
    if how == "secret":
        return meta("Secret", "template-creds") + ["type: Opaque", "stringData:", f"  password: {q(value)}"], "secret-placeholder"
    return meta("ConfigMap", "settings") + ["data:", "  app.ini: |", "    [database]", f"    password = {value}"], "configmap-placeholder"


def neg_reference():
    kind = R.choice(WORKLOADS)
    body = R.choice([
        ["args: [train]", "env:", "  - name: HF_TOKEN", "    valueFrom:", "      secretKeyRef: {name: hf, key: token}"],
        ["args: [train]", "envFrom:", "  - secretRef:", "      name: app-credentials"],
        ["command: [\"sh\", \"-c\", \"echo \\\"$REGISTRY_PASSWORD\\\" | docker login -u tao --password-stdin nvcr.io\"]"],
        ["command: [\"sh\", \"-c\", \"docker run -p 8080:80 -u 1000:1000 nginx:1.27\"]"],
        ["command: [\"sh\", \"-c\", \"mysql -h db -u tao -p jobs < /sql/init.sql\"]"],
        ["args: [train.py, --token-file, /var/run/secrets/hf/token, --key, model.key]"],
        ["args: [serve, --password-file, /run/secrets/db, --secret-name, db-credentials]"],
        ["command: [\"sh\", \"-c\", \"curl -fsS -H \\\"Authorization: Bearer $(cat /var/run/secrets/token)\\\" https://api.internal\"]"],
        ["args: [train]", "env:", "  - {name: DB_PASSWORD_FILE, value: /run/secrets/db}", "  - {name: TOKEN_URL, value: \"https://auth.internal/oauth2/token\"}"],
        ["args: [train]", "env:", "  - {name: KMS_KEY_ID, value: \"arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b\"}"],
        ["args: [train]", "env:", "  - {name: PASSWORD_MIN_LENGTH, value: \"12\"}", "  - {name: REQUIRE_PASSWORD, value: \"true\"}"],
        ["args: [train]", "readinessProbe:", "  httpGet:", "    path: /ready", "    port: 8080", "    httpHeaders:", "      - {name: X-Probe, value: readiness}"],
        ["args: [train]", "lifecycle:", "  preStop:", "    exec:", "      command: [\"sh\", \"-c\", \"kill -TERM 1; sleep 5\"]"],
    ])
    return workload(kind, "trainer", body), f"{kind.lower()}-reference"


def neg_file():
    fmt = R.choice(["netrc", "pgpass", "maven", "npmrc", "ini", "dotenv", "dockerconfig"])
    if fmt == "netrc":
        return configmap("netrc", ".netrc", "machine artifacts.internal\n  login deploy", ""), "configmap-netrc"
    if fmt == "pgpass":
        lines = meta("ConfigMap", "pgservice") + ["data:", "  pg_service.conf: |", "    [jobs]", "    host=db.internal",
                                                  "    port=5432", "    dbname=jobs"]
        return lines, "configmap-pgservice"
    if fmt == "maven":
        xml = "<settings>\n  <servers>\n    <server>\n      <id>internal</id>\n      <username>${env.MAVEN_USER}</username>\n      <password>${env.MAVEN_PASSWORD}</password>\n    </server>\n  </servers>\n</settings>"
        return (meta("ConfigMap", "maven") + ["data:", "  settings.xml: |"] + [f"    {l}" for l in xml.split("\n")]), "configmap-maven"
    if fmt == "npmrc":
        return (meta("ConfigMap", "npmrc") + ["data:", "  .npmrc: |", "    registry=https://registry.npmjs.org/", "    //registry.npmjs.org/:_authToken=${NPM_TOKEN}"]), "configmap-npmrc"
    if fmt == "ini":
        return (meta("ConfigMap", "app") + ["data:", "  app.ini: |", "    [auth]", "    token_endpoint = https://auth.internal/token", "    password_policy = strict", "    key_file = /etc/app/tls.key"]), "configmap-ini"
    if fmt == "dotenv":
        return (meta("ConfigMap", "dotenv") + ["data:", "  .env: |", "    APP_ENV=production", "    DB_PASSWORD=${DB_PASSWORD}", "    API_KEY_ID=key-2024-11", "    TOKEN_TTL=3600"]), "configmap-dotenv"
    cfg = json.dumps({"auths": {"nvcr.io": {}}, "credsStore": "ecr-login"})
    return (meta("ConfigMap", "docker") + ["data:", f"  config.json: {q(cfg)}"]), "configmap-dockerconfig"


NEGATIVE = {"encrypted": neg_encrypted, "public": neg_public, "digest": neg_digest, "ids": neg_ids,
            "placeholder": neg_placeholder, "reference": neg_reference, "file-near-miss": neg_file}
NEG_COUNTS = {"encrypted": 45, "public": 45, "digest": 45, "ids": 40, "placeholder": 60, "reference": 60,
              "file-near-miss": 30}


def heldout(name):
    """A quarter of the files, by a hash of their name, are held out: tests/redaction/heldout/."""
    return hashlib.sha256(name.encode()).digest()[0] < 64


def side_dir(side, name):
    return ROOT / "heldout" / side if heldout(name) else ROOT / side


def emit(side, n, family, place, lines, planted):
    lines = [line for line in lines if line is not None]
    if R.random() < 0.25:
        lines = helm(lines, R.choice(["trainer", "platform", "inference"]))
        place = "helm-" + place
        if lines[0] == "---":
            lines = lines[1:]
    else:
        lines = wrap(lines, R.random() < 0.3)
    head = [f"# Redaction corpus, {side}: generated by tests/redaction/gen.py.", f"# family: {family}"]
    head += [f"# planted: {p}" for p in planted]
    text = "\n".join(head + [line.rstrip() for line in lines]) + "\n"
    name = f"gen-{n:03d}-{family}-{place.replace('/', '-')}.yaml"
    (side_dir(side, name) / name).write_text(text)


def main():
    for side in ("positive", "negative"):
        for old in [*(ROOT / side).glob("gen-*.yaml"), *(ROOT / "heldout" / side).glob("gen-*.yaml")]:
            old.unlink()
    n = 0
    for family, make in POSITIVE.items():
        for _ in range(POS_COUNTS.get(family, 7)):
            n += 1
            lines, place, planted = make()
            emit("positive", n, family, place, lines, planted)
    n = 0
    for family, make in NEGATIVE.items():
        for _ in range(NEG_COUNTS[family]):
            n += 1
            lines, place = make()
            emit("negative", n, family, place, lines, [])


if __name__ == "__main__":
    main()
