#!/usr/bin/env bash
# The strict Kubernetes checker's figures: lint of the 10,000-document corpus (CPU time and
# peak RSS), one small file, a whole-process render of the bundled example, and the release
# binary's size with the ten versions embedded. With BEFORE=path/to/an/older/tao-k8s, the
# same runs of that binary are shown beside (hyperfine compares them). Needs hyperfine and
# GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
after=./target/release/tao-k8s
bins=("$after")
[ -n "${BEFORE:-}" ] && bins=("$BEFORE" "$after")
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
python3 bench/gen_corpus.py "$corpus" 10000 1000
for bin in "${bins[@]}"; do
  echo "== $bin ($("$bin" --version))"
  echo "size: $(stat -c %s "$bin") bytes"
  # `lint` exits 1 on the planted findings: --exit-zero keeps the timing runs clean.
  /usr/bin/time -f "lint, 10,000 documents: %U s user + %S s system, peak RSS %M KiB" \
    "$bin" lint --exit-zero --format json "$corpus/stream.yaml" > /dev/null
  /usr/bin/time -f "render, dino-train: %U s user + %S s system, peak RSS %M KiB" \
    "$bin" render examples/dino-train.yaml > /dev/null
done
cmds() { for bin in "${bins[@]}"; do echo "$bin $1"; done; }
mapfile -t lint_cmds < <(cmds "lint --exit-zero --format json $corpus/stream.yaml")
hyperfine -N --warmup 2 --runs 10 "${lint_cmds[@]}"
mapfile -t small_cmds < <(cmds "lint fixtures/lint-cli/tree/clean.yaml")
hyperfine -N --warmup 20 --runs 200 "${small_cmds[@]}"
mapfile -t render_cmds < <(cmds "render examples/dino-train.yaml")
hyperfine -N --warmup 20 --runs 200 "${render_cmds[@]}"
