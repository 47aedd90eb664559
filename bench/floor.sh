#!/usr/bin/env bash
# How close tao-k8s is to the floor, in one run: the process floor (a static Rust hello-world),
# one request against helm, a thousand requests in one process, lint of a 10,000-document
# stream, lint of one small file (clean, and with findings) as a pre-commit hook runs it, and
# lint against kubernetes-validate. Prints a markdown table (bench/README.md keeps the last).
#
#   bench/floor.sh             # after bench/side-by-side.sh installed helm and the venv
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
clean=fixtures/lint-cli/tree/clean.yaml
# One small file with findings: the example's Job with an obviously fake inline token and its
# GPU limit gone.
"$tk" render "$example" \
  | sed -e '/"nvidia.com\/gpu": "8"/d' \
  | sed -e '0,/^          env:$/s//          env:\n            - {name: HF_TOKEN, value: "hf_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE"}/' \
  > "$work/findings.yaml"

# mean NAME RUNS CMD: hyperfine's mean, in ms, and its user+system CPU.
mean() {
  local name=$1 runs=$2
  shift 2
  hyperfine -N --style none --warmup 3 --runs "$runs" -i --export-json "$work/$name.json" "$@" > /dev/null 2>&1 || return 0
  python3 - "$work/$name.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f"{r['mean'] * 1000:.1f} ms ± {r['stddev'] * 1000:.1f} (CPU {(r['user'] + r['system']) * 1000:.1f} ms)")
EOF
}

have() { [[ -x $1 ]]; }

floor=$(mean hello 300 "$work/hello")
version=$(mean version 300 "$tk --version")
one=$(mean one 200 "$tk render $example")
helm_one=
if have "$helm"; then helm_one=$(mean helm-one 50 "$helm template tao bench/chart -f $example"); fi
many=$(mean many 10 "$tk render $work/requests/requests")
lint10k=$(mean lint10k 10 "$tk lint --exit-zero --format json $work/corpus/stream.yaml")
clean_lint=$(mean clean 200 "$tk lint $clean")
findings_lint=$(mean findings 200 "$tk lint --exit-zero $work/findings.yaml")
lint1k=$(mean lint1k 10 "$tk lint --exit-zero --format json $work/corpus-1000/stream.yaml")
kv1k=
if have "$kv"; then
  kv1k=$(mean kv1k 2 "$kv --strict --quiet --kubernetes-version 1.28 $work/corpus-1000/stream.yaml")
fi
rss=$( { /usr/bin/time -f %M "$tk" lint --exit-zero --format json "$work/corpus/stream.yaml" > /dev/null; } 2>&1 | tail -1)

echo "| work | tao-k8s | peer / floor |"
echo "|---|---|---|"
echo "| \`tao-k8s --version\` | $version | static hello-world: $floor |"
echo "| render one request | $one | \`helm template\`: ${helm_one:-not installed} |"
echo "| render 1,000 requests, one process | $many | |"
echo "| lint 10,000 documents ($(du -b "$work/corpus/stream.yaml" | cut -f1) bytes) | $lint10k, $((rss / 1024)) MiB | |"
echo "| lint one small clean file / one with findings | $clean_lint / $findings_lint | |"
echo "| lint 1,000 documents | $lint1k | kubernetes-validate --strict: ${kv1k:-not installed} |"
echo
echo "$(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg); $("$tk" --version)"
