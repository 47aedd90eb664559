#!/usr/bin/env bash
# Lint throughput and memory on a generated corpus (10,000 documents), as one stream and as
# 1,000 files, plus the pre-commit case (one small file, whole process). Needs hyperfine
# (apt-get install hyperfine) and GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
bin=./target/release/tao-k8s
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
python3 bench/gen_corpus.py "$corpus" 10000 1000
hyperfine -N --warmup 2 --runs 10 \
  "$bin lint --exit-zero --format json $corpus/stream.yaml" \
  "$bin lint --exit-zero --format json $corpus/files"
hyperfine -N --warmup 20 --runs 200 "$bin lint fixtures/lint-cli/tree/clean.yaml"
/usr/bin/time -f "peak RSS, one stream: %M KiB" "$bin" lint --exit-zero --format json "$corpus/stream.yaml" > /dev/null
echo "stream size: $(du -b "$corpus/stream.yaml" | cut -f1) bytes"
