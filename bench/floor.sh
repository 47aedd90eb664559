#!/usr/bin/env bash
# How close tao-k8s is to the floor, in one run: the process floor (a static Rust hello-world),
# one request against helm, a thousand requests in one process, lint of a 10,000-document
# stream, lint of one small file (clean, and with findings) as a pre-commit hook runs it, and
# lint against kubernetes-validate. Prints a markdown table with each goal and whether it is met;
# with --readme FILE, the table also replaces the one between FILE's `<!-- floor:begin -->` and
# `<!-- floor:end -->` markers.
#
#   bench/floor.sh --readme bench/README.md    # after bench/side-by-side.sh installed the peers
#
# Needs cargo, rustc, hyperfine, python3 and, in bench/.tools/, helm and kubernetes-validate
# (`bench/side-by-side.sh` installs them; a missing peer leaves its cells empty).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked --release --quiet
tk=$PWD/target/release/tao-k8s
helm=bench/.tools/bin/helm
kv=bench/.tools/venv/bin/kubernetes-validate
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The floor: a statically linked hello-world, built here with this machine's rustc.
printf 'fn main() { println!("hello"); }\n' > "$work/hello.rs"
rustc -O -C target-feature=+crt-static "$work/hello.rs" -o "$work/hello"

example=examples/dino-train.yaml
python3 bench/gen_requests.py "$example" "$work/requests" 1000 > /dev/null
python3 bench/gen_corpus.py "$work/corpus" 10000 1000 > /dev/null
python3 bench/gen_corpus.py "$work/corpus-1000" 1000 100 > /dev/null
# 10,000 requests rendered into one stream (about 19 MB: Jobs as tao-k8s writes them).
python3 bench/gen_requests.py "$example" "$work/requests-10k" 10000 > /dev/null
"$tk" render "$work/requests-10k/requests" > "$work/rendered.yaml"
clean=fixtures/lint-cli/tree/clean.yaml
# One small file with findings: the example's Job with an obviously fake inline token and its
# GPU limit gone.
"$tk" render "$example" \
  | sed -e '/"nvidia.com\/gpu": "8"/d' \
  | sed -e '0,/^          env:$/s//          env:\n            - {name: HF_TOKEN, value: "hf_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE"}/' \
  > "$work/findings.yaml"

# run NAME RUNS CMD: hyperfine's export of CMD in $work/NAME.json (none if CMD fails to run).
run() {
  local name=$1 runs=$2
  shift 2
  hyperfine -N --style none --warmup 3 --runs "$runs" -i --export-json "$work/$name.json" "$@" > /dev/null 2>&1 \
    || rm -f "$work/$name.json"
}
# rss CMD...: the peak RSS of one run of CMD, in KiB.
rss() { { /usr/bin/time -f %M "$@" > /dev/null; } 2>&1 | tail -1; }

have() { [[ -x $1 ]]; }

load=$(cut -d' ' -f1-3 /proc/loadavg)
lint_corpus=("$tk" lint --exit-zero --format json "$work/corpus/stream.yaml")
lint_rendered=("$tk" lint --max-input-size 32Mi --exit-zero --format json "$work/rendered.yaml")
run hello 300 "$work/hello"
run version 300 "$tk --version"
run one 200 "$tk render $example"
if have "$helm"; then run helm-one 50 "$helm template tao bench/chart -f $example"; fi
run many 10 "$tk render $work/requests/requests"
run lint10k 10 "${lint_corpus[*]}"
run lint-rendered 5 "${lint_rendered[*]}"
run clean 200 "$tk lint $clean"
run findings 200 "$tk lint --exit-zero $work/findings.yaml"
run lint1k 10 "$tk lint --exit-zero --format json $work/corpus-1000/stream.yaml"
if have "$kv"; then
  run kv1k 2 "$kv --strict --quiet --kubernetes-version 1.28 $work/corpus-1000/stream.yaml"
fi

helm_version=none kv_version=none
have "$helm" && helm_version=$("$helm" version --short)
have "$kv" && kv_version=$("$kv" --version)
heading="$(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD), $(nproc) cores, load $load before the runs, helm $helm_version, kubernetes-validate $kv_version; hyperfine \`-N\`, means with their CPU:"
cat > "$work/info.json" <<EOF
{
  "heading": "$heading",
  "lint10k-rss-kib": $(rss "${lint_corpus[@]}"),
  "lint10k-bytes": $(stat -c %s "$work/corpus/stream.yaml"),
  "lint-rendered-rss-kib": $(rss "${lint_rendered[@]}"),
  "lint-rendered-bytes": $(stat -c %s "$work/rendered.yaml"),
  "binary-bytes": $(stat -c %s "$tk")
}
EOF
python3 bench/floor_report.py "$work" "$@"
