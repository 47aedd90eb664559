#!/usr/bin/env bash
# Render 1,000 requests in one process: `tao-k8s render DIR` (one YAML stream) and
# `tao-k8s render DIR --out OUT` (one bundle folder per request), against one request alone,
# with hyperfine. The requests are bench/gen_requests.py's variants of the example.
# Usage: bench/render_many.sh [COUNT] (default 1000). Needs cargo, python3 with PyYAML, hyperfine.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-1000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release --locked --quiet
tk=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/tao-k8s
python3 bench/gen_requests.py examples/dino-train.yaml "$work" "$count"
# The stream is what every request rendered alone would print, in order.
"$tk" render "$work/requests" > "$work/stream.yaml"
for f in "$work"/requests/*.yaml; do "$tk" render "$f"; done > "$work/alone.yaml"
cmp "$work/stream.yaml" "$work/alone.yaml"
echo "$count requests, $(wc -c < "$work/stream.yaml") bytes of manifests"
hyperfine -N --warmup 3 --runs 20 \
  --export-markdown "$work/results.md" \
  -n "render 1 request" "$tk render examples/dino-train.yaml" \
  -n "render $count requests (one stream)" "$tk render $work/requests" \
  -n "render $count requests --out (bundles)" "$tk render $work/requests --out $work/out"
cat "$work/results.md"
