# tao-k8s: uploads the results directory to S3 once the action has ended, whether it succeeded
# or not: its logs and partial results matter most when it failed. The action runs its own
# command in the main container (or behind the wrapper of kept logs and checkpoints, which
# ends with it and writes no word of its end either), so this learns that it ended from outside
# (an OOM kill of the whole container leaves no word behind), in one of two ways:
#   TAO_K8S_UPLOAD_ON=sigterm    a native sidecar (an initContainer with restartPolicy Always,
#       Kubernetes 1.29 and later). It waits for SIGTERM, which the kubelet sends once the main
#       container has ended, however it ended, or when the pod is deleted; it then uploads
#       within the pod's terminationGracePeriodSeconds and exits.
#   TAO_K8S_UPLOAD_ON=main-exit  a regular container of a pod with shareProcessNamespace
#       (1.28, where sidecars are off by default). The action has ended when no process of
#       another container is left (PID 1, the pod's pause process, aside); a process belongs
#       to another container when its /proc/PID/cgroup, which anyone may read, differs from
#       this script's own. If none shows up within TAO_K8S_MAIN_START_SECONDS, the action ran
#       and ended before this could look, or never started: what is there is uploaded. SIGTERM
#       (the pod deleted, or its deadline passed) uploads at once, within the grace period.
# The action's own failure is the main container's to report; this exits 1 only when the
# upload fails or its inputs are wrong. Inputs, from the environment:
#   TAO_K8S_UPLOAD_ON           sigterm or main-exit, as above
#   TAO_K8S_RESULTS_DIR         the directory to upload
#   TAO_K8S_RESULTS_URI         where to, s3://bucket/prefix/
#   NODE_RANK                   optional: the pod's index in a multi-node Job
#   TAO_K8S_UPLOAD_PER_RANK     optional: 1 = every rank uploads, to <uri>rank-<NODE_RANK>/ (a pod
#                               without NODE_RANK counts as rank 0); otherwise only rank 0, or a
#                               pod without NODE_RANK, uploads, to <uri>
#   TAO_K8S_MAIN_START_SECONDS  main-exit: how long to look for the action's first process
#                               (default 300)
#   TAO_K8S_PROC                main-exit: the process table (default /proc)
#   TAO_K8S_POLL_SECONDS        optional: how often to look (default 5)
#   TAO_K8S_KEEP_LOGS           optional: 1 = the action's log is kept, in
#                               <dir>/logs/<TAO_K8S_RECORD>/rank-<NODE_RANK>.log; every rank
#                               uploads its own to <uri>logs/<record>/rank-<i>.log, also
#                               while the action runs
#   TAO_K8S_RECORD              the job record of the pod (its label); "unrecorded" when empty
#   TAO_K8S_SYNC_DIR            optional: the checkpoints' directory, sent while the action runs
#   TAO_K8S_SYNC_URI            optional: where to, s3://bucket/prefix/ (rank 0 or per-rank
#                               uploaders only: the ranks that upload results)
#   TAO_K8S_SYNC_SECONDS        how often to send the log and checkpoints (default 300)
set -u
# First of all: a SIGTERM that comes early still leads to the upload.
stop=
trap 'stop=1' TERM INT
on="${TAO_K8S_UPLOAD_ON:-}"
results_dir="${TAO_K8S_RESULTS_DIR:-}"
uri="${TAO_K8S_RESULTS_URI:-}"
rank="${NODE_RANK:-}"
per_rank="${TAO_K8S_UPLOAD_PER_RANK:-}"
start_window="${TAO_K8S_MAIN_START_SECONDS:-300}"
proc="${TAO_K8S_PROC:-/proc}"
poll="${TAO_K8S_POLL_SECONDS:-5}"
keep_logs="${TAO_K8S_KEEP_LOGS:-}"
record="${TAO_K8S_RECORD:-}"
sync_dir="${TAO_K8S_SYNC_DIR:-}"
sync_uri="${TAO_K8S_SYNC_URI:-}"
sync_every="${TAO_K8S_SYNC_SECONDS:-300}"

if [ -z "$results_dir" ] || [ -z "$uri" ]; then
  echo "tao-k8s: TAO_K8S_RESULTS_DIR and TAO_K8S_RESULTS_URI must both be set to upload results" >&2
  exit 1
fi
case "$on" in
  sigterm | main-exit) ;;
  *)
    echo "tao-k8s: TAO_K8S_UPLOAD_ON is '$on', not sigterm or main-exit" >&2
    exit 1
    ;;
esac
case "$uri" in
  s3://?*) ;;
  *)
    echo "tao-k8s: TAO_K8S_RESULTS_URI is '$uri', not an s3://bucket/prefix/ URI" >&2
    exit 1
    ;;
esac
case "$rank" in
  *[!0-9]*)
    echo "tao-k8s: NODE_RANK is '$rank', not a pod index" >&2
    exit 1
    ;;
esac
case "$start_window" in
  '' | *[!0-9]*)
    echo "tao-k8s: TAO_K8S_MAIN_START_SECONDS is '$start_window', not a whole number of seconds" >&2
    exit 1
    ;;
esac
case "$sync_every" in
  '' | 0 | *[!0-9]*)
    echo "tao-k8s: TAO_K8S_SYNC_SECONDS is '$sync_every', not a whole number of seconds" >&2
    exit 1
    ;;
esac
case "$uri" in
  */) ;;
  *) uri="$uri/" ;;
esac

if [ "$per_rank" = 1 ]; then
  dest="${uri}rank-${rank:-0}/"
elif [ -z "$rank" ] || [ "$rank" -eq 0 ]; then
  dest="$uri"
else
  dest=
fi

# The kept log of this rank, and where it goes.
log_file="$results_dir/logs/${record:-unrecorded}/rank-${rank:-0}.log"
log_uri="${uri}logs/${record:-unrecorded}/rank-${rank:-0}.log"
# Only the ranks that upload results send the checkpoints.
[ -n "$dest" ] || sync_dir=

# Sends the kept log and the checkpoints so far; a failure is said and retried next time.
send() {
  if [ "$keep_logs" = 1 ] && [ -f "$log_file" ]; then
    aws s3 cp --no-progress --only-show-errors "$log_file" "$log_uri" ||
      echo "tao-k8s: sending the log $log_file to $log_uri failed" >&2
  fi
  if [ -n "$sync_dir" ] && [ -n "$sync_uri" ] && [ -d "$sync_dir" ]; then
    aws s3 sync --no-progress --only-show-errors "$sync_dir" "$sync_uri" ||
      echo "tao-k8s: sending the checkpoints in $sync_dir to $sync_uri failed" >&2
  fi
}
last_sync=$(date +%s)
# Sends them when the last time is TAO_K8S_SYNC_SECONDS ago.
maybe_send() {
  if [ "$keep_logs" = 1 ] || [ -n "$sync_dir" ]; then
    if [ $(($(date +%s) - last_sync)) -ge "$sync_every" ]; then
      send
      last_sync=$(date +%s)
    fi
  fi
}

# Sleeps one poll; a trapped signal ends `wait` at once, and the sleep with it.
nap() {
  sleep "$poll" &
  nap_pid=$!
  wait "$nap_pid" 2>/dev/null
  if [ -n "$stop" ]; then
    kill "$nap_pid" 2>/dev/null
  fi
}

# Sets cgroup to the lines of the cgroup file $1, joined; fails if it cannot be read.
read_cgroup() {
  cgroup=
  while IFS= read -r line; do
    cgroup="$cgroup$line;"
  done <"$1"
}

# Whether a process of another container than this one is alive.
others_alive() {
  for dir in "$proc"/[0-9]*; do
    [ "${dir##*/}" != 1 ] || continue
    read_cgroup "$dir/cgroup" 2>/dev/null || continue
    if [ -n "$cgroup" ] && [ "$cgroup" != "$own" ]; then
      return 0
    fi
  done
  return 1
}

if [ "$on" = sigterm ]; then
  echo "tao-k8s: waiting for the action's container to end"
  while [ -z "$stop" ]; do
    nap
    maybe_send
  done
  echo "tao-k8s: stopped by the kubelet: the action's container ended, or the pod is being deleted"
else
  if ! read_cgroup "$proc/self/cgroup" 2>/dev/null || [ -z "$cgroup" ]; then
    echo "tao-k8s: cannot read $proc/self/cgroup, so the action's processes cannot be told from this one's" >&2
    exit 1
  fi
  own=$cgroup
  seen=
  began=$(date +%s)
  while [ -z "$stop" ]; do
    if others_alive; then
      if [ -z "$seen" ]; then
        echo "tao-k8s: the action is running; uploading once it ends"
      fi
      seen=1
    elif [ -n "$seen" ]; then
      echo "tao-k8s: the action's container has ended"
      break
    elif [ $(($(date +%s) - began)) -ge "$start_window" ]; then
      echo "tao-k8s: no process of the action's container in ${start_window}s: it ended before it could be seen, or never started"
      break
    fi
    nap
    maybe_send
  done
  if [ -n "$stop" ]; then
    echo "tao-k8s: asked to stop: uploading what the action wrote so far"
  fi
fi

# Every rank's kept log reaches <uri>logs/, where job.sh logs reads it; the ranks that
# upload results to <uri> send it with them.
if [ "$keep_logs" = 1 ] && [ "$dest" != "$uri" ]; then
  if [ ! -f "$log_file" ]; then
    echo "tao-k8s: no log was kept in $log_file"
  elif aws s3 cp --no-progress "$log_file" "$log_uri"; then
    echo "tao-k8s: uploaded the log $log_file to $log_uri"
  else
    echo "tao-k8s: uploading the log $log_file to $log_uri failed" >&2
    [ -z "$dest" ] && exit 1
  fi
fi
if [ -z "$dest" ]; then
  echo "tao-k8s: rank $rank does not upload results"
  exit 0
fi
if [ ! -d "$results_dir" ]; then
  echo "tao-k8s: the results directory $results_dir does not exist, so nothing was uploaded to $dest (the action may have ended before creating it)"
  exit 0
fi
if [ -z "$(ls -A "$results_dir")" ]; then
  echo "tao-k8s: the results directory $results_dir is empty; uploading nothing"
fi
if ! aws s3 cp --recursive --no-progress "$results_dir" "$dest"; then
  echo "tao-k8s: uploading $results_dir to $dest failed" >&2
  exit 1
fi
echo "tao-k8s: uploaded $results_dir to $dest"
