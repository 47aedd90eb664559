#!/usr/bin/env bash
# `tao-k8s gate` on a large cluster: 5,000 GPU nodes and 100,000 running pods (what `kubectl
# get nodes/pods -o json` returns, about 90 MB), for a 4-node Job. Needs hyperfine and GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
bin=./target/release/tao-k8s
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/cluster"
python3 bench/gen_cluster.py "$work/cluster" 5000 100000
"$bin" render fixtures/requests/valid/multi-node-4-config.yaml >"$work/manifest.yaml"
echo "cluster files: $(du -cb "$work"/cluster/*.json | tail -n 1 | cut -f1) bytes"
hyperfine -N -i --warmup 1 --runs 10 "$bin gate $work/manifest.yaml --cluster $work/cluster"
/usr/bin/time -f "peak RSS: %M KiB" "$bin" gate "$work/manifest.yaml" --cluster "$work/cluster" >/dev/null || true
