# tao-k8s: run by the short-lived reader Pod that `job.sh logs` creates once the pods of a job
# are gone, when the job kept its logs on a mounted volume (mounted read-only here, where the
# job's pods mounted it). Each rank wrote its output to <dir>/rank-<i>.log; this prints them,
# by index, each after a `==> rank-<i>.log <==` header as tail writes them. Its inputs are
# positional arguments only, so no value of a request is ever part of this text:
#   $0  the reader's name
#   $1  the directory of the job record's logs, <resultsDir>/logs/<record-id>
#   $2  a completion index: only that rank's log; empty: every rank's
#   $3  a number of lines: the last ones of each log; empty: the whole log
# Exits 0 once it printed the logs, 1 (saying why on stderr) when no log was kept there.
set -u
dir="${1:-}"
index="${2:-}"
lines="${3:-}"

fail() {
  echo "tao-k8s: $*" >&2
  exit 1
}

[ -n "$dir" ] || fail "$0: no log directory given"
case "$index" in
  *[!0-9]* | ?????*) fail "$0: the index is '$index', not a completion index" ;;
esac
case "$lines" in
  *[!0-9]* | ??????????*) fail "$0: the line count is '$lines', not a number of lines" ;;
esac
[ -d "$dir" ] ||
  fail "no log was kept under $dir: there is no such directory (the job kept no logs there, or they were removed)"

# show FILE: its header, then the file or its last lines.
show() {
  printf '==> %s <==\n' "${1##*/}"
  if [ -n "$lines" ]; then
    tail -n "$lines" "$1"
  else
    cat "$1"
  fi
}

if [ -n "$index" ]; then
  [ -f "$dir/rank-$index.log" ] || fail "no log of rank $index was kept under $dir"
  show "$dir/rank-$index.log" || fail "cannot read $dir/rank-$index.log"
  exit 0
fi

# Every rank's log, in the order of the indexes (rank-2 before rank-10).
last=-1
for file in "$dir"/rank-*.log; do
  [ -f "$file" ] || continue
  i="${file##*/rank-}"
  i="${i%.log}"
  case "$i" in
    '' | *[!0-9]* | ?????*) continue ;;
  esac
  [ "$i" -le "$last" ] || last="$i"
done
[ "$last" -ge 0 ] || fail "no log was kept under $dir: it holds no rank-<index>.log"
i=0
code=0
while [ "$i" -le "$last" ]; do
  if [ -f "$dir/rank-$i.log" ]; then
    show "$dir/rank-$i.log" || code=1
  fi
  i=$((i + 1))
done
[ "$code" = 0 ] || fail "not every log under $dir could be read (above)"
