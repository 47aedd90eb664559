#!/usr/bin/env bash
# Seed fuzz/corpus/<target>/ from the project's fixtures (generated, not committed).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fixtures="$here/../fixtures"
corpus="$here/corpus"

copy() { # copy TARGET FILE...: each file under a name unique within the target's corpus
    local target=$1; shift
    mkdir -p "$corpus/$target"
    local f
    for f in "$@"; do
        [ -f "$f" ] || continue
        cp "$f" "$corpus/$target/$(echo "${f#"$fixtures"/}" | tr / _)"
    done
}

requests=("$fixtures"/requests/valid/* "$fixtures"/requests/invalid/*)
copy request "${requests[@]}"
copy compile "${requests[@]}"

mapfile -t manifests < <(find "$fixtures/lint" "$fixtures/lint-cli" -type f \( -name '*.yaml' -o -name '*.yml' \) | sort)
copy lint_bytes "${manifests[@]}"
# lint_structured builds its own YAML from structured input; it starts from scratch.
mkdir -p "$corpus/lint_structured"

# staging: newline-separated fields (see oracles::staging_request), then argv values.
mkdir -p "$corpus/staging"
printf '%s\n' /data/coco '/home/alice/datasets/coco|data://coco' /specs /home/alice/specs \
    /results /home/alice/results /home/alice/results/dino \
    '-e|/home/alice/specs/train.yaml|results_dir=/home/alice/results/dino' \
    /home/alice/datasets/coco/x.json data://coco/train2017 /home/alice/datasets2/y \
    'k=/home/alice/specs' 'a b' > "$corpus/staging/aliases"
printf '%s\n' /data '' /specs '' /results '' /results/out '-e|/specs/train.yaml' /data/x \
    > "$corpus/staging/plain"
printf '%s\n' /data/ 'data://x/|/srv/a/' /specs 's3://b|/srv' /results/ '/r|x://y' /results/o \
    'x://y/z|/srv/a/b' '/srv/a' 'data://x' > "$corpus/staging/odd"
cp "$here"/regressions/staging/* "$corpus/staging/" 2>/dev/null || true

mkdir -p "$corpus/shell_quote"
printf '%s' "it's" > "$corpus/shell_quote/quote"
printf '%s' '$(rm -rf /) `x` ${X:-y} !e *' > "$corpus/shell_quote/meta"
printf 'a\nb\\c"d\t' > "$corpus/shell_quote/controls"
printf '%s' '日本' > "$corpus/shell_quote/unicode"

# Every regression input seeds its target too.
for dir in "$here"/regressions/*/; do
    [ -d "$dir" ] || continue
    t=$(basename "$dir")
    mkdir -p "$corpus/$t"
    cp "$dir"* "$corpus/$t/" 2>/dev/null || true
done
for t in request compile lint_bytes lint_structured staging shell_quote; do
    echo "$t: $(find "$corpus/$t" -type f | wc -l) inputs"
done
