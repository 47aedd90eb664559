# tao-k8s: runs the action, given as this script's arguments ("$@", never parsed by a shell:
# each is one word of the action's argv), when the request keeps its logs or resumes from
# checkpoints. Without either, the action's container runs the action's own command and this
# script is not in the pod. Inputs, from the environment:
#   TAO_K8S_LOG_DIR             optional: keep the logs. Everything the action writes to
#                               stdout and stderr goes, as it is written, both to the
#                               container's log and to <dir>/<record>/rank-<NODE_RANK>.log
#                               (appended: a retried pod adds to its rank's file after a header)
#   TAO_K8S_RECORD              the job record of the pod (its label); "unrecorded" when empty
#   TAO_K8S_POD                 the pod's name, for the header
#   NODE_RANK                   the pod's index in a multi-node Job; 0 when unset
#   TAO_K8S_CHECKPOINT_DIR      optional: resume from the newest file in it that matches
#   TAO_K8S_CHECKPOINT_PATTERN  a glob of file names (one path segment)
#   TAO_K8S_RESUME_ARG          appended to the action's argv as <arg>=<checkpoint>, or
#   TAO_K8S_RESUME_ENV          the name of the variable the action reads it from
# It exits with the action's exit code (128+N when a signal N ended it); SIGTERM and SIGINT
# are passed on to the action. Keeping the logs can fail (a full volume, no FIFO support):
# it is then said, and the action runs without it; it never stops the action from running.
set -u
log=
if [ -n "${TAO_K8S_LOG_DIR:-}" ]; then
  dir="$TAO_K8S_LOG_DIR/${TAO_K8S_RECORD:-unrecorded}"
  log="$dir/rank-${NODE_RANK:-0}.log"
  fifo="${TMPDIR:-/tmp}/tao-k8s-log-fifo"
  if command -v tee >/dev/null && command -v mkfifo >/dev/null &&
    mkdir -p "$dir" && rm -f "$fifo" && mkfifo "$fifo" &&
    printf '== tao-k8s: pod %s started %s ==\n' "${TAO_K8S_POD:-}" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$log"; then
    tee -a "$log" <"$fifo" &
    tee_pid=$!
    exec 3>&1 >"$fifo" 2>&1
  else
    echo "tao-k8s: cannot keep the log in $log: the action runs without it" >&2
    log=
  fi
fi

if [ -n "${TAO_K8S_CHECKPOINT_DIR:-}" ]; then
  newest=
  for file in "$TAO_K8S_CHECKPOINT_DIR"/$TAO_K8S_CHECKPOINT_PATTERN; do
    [ -f "$file" ] || continue
    if [ -z "$newest" ] || [ -n "$(find "$file" -prune -newer "$newest")" ]; then
      newest=$file
    fi
  done
  if [ -z "$newest" ]; then
    echo "tao-k8s: no checkpoint matches $TAO_K8S_CHECKPOINT_PATTERN in $TAO_K8S_CHECKPOINT_DIR: the action starts from the beginning"
  elif [ -n "${TAO_K8S_RESUME_ARG:-}" ]; then
    echo "tao-k8s: resuming from $newest ($TAO_K8S_RESUME_ARG)"
    set -- "$@" "$TAO_K8S_RESUME_ARG=$newest"
  else
    echo "tao-k8s: resuming from $newest (variable $TAO_K8S_RESUME_ENV)"
    export "$TAO_K8S_RESUME_ENV=$newest"
  fi
fi

if [ -z "$log" ]; then
  exec "$@"
fi
trap 'kill -TERM "$pid" 2>/dev/null' TERM
trap 'kill -INT "$pid" 2>/dev/null' INT
"$@" &
pid=$!
# A trapped signal ends `wait` early; the action's own status comes with the wait that reaps it.
while :; do
  wait "$pid"
  code=$?
  kill -0 "$pid" 2>/dev/null || break
done
# The FIFO's last writer is gone once this closes it (a process the action left behind that
# still holds it keeps tee reading for at most 10 s).
exec 1>&3 2>&3 3>&-
(sleep 10 && kill "$tee_pid") >/dev/null 2>&1 &
guard=$!
wait "$tee_pid"
kill "$guard" 2>/dev/null
rm -f "$fifo"
exit "$code"
