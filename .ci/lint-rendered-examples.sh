#!/usr/bin/env bash
# Renders every bundled example request and lints the output, failing on any finding, warning
# or note: the rendered manifests must be clean under tao-k8s's own rules. Used by this
# repository's .pre-commit-config.yaml; TAO_K8S_BIN names a built binary (default: cargo run).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${TAO_K8S_BIN:-}" ]; then
  tao() { "$TAO_K8S_BIN" "$@"; }
else
  cargo build --locked --quiet
  tao() { ./target/debug/tao-k8s "$@"; }
fi
status=0
for request in examples/*.yaml; do
  out=$(tao render --color never "$request" | tao lint --color never --fail-on warning - 2>&1) || status=1
  # A note does not fail lint, but here it would be noise in every commit.
  if grep -qE '^(error|warning|note)(\[|:)' <<<"$out"; then
    printf '%s:\n%s\n' "$request" "$out" >&2
    status=1
  fi
done
[ "$status" = 0 ] && echo "every rendered example lints clean"
exit "$status"
