# tao-k8s: wraps the action in the main container when another container of the pod uploads
# the results once it ends. Run as `sh -c <this> tao-k8s-run <action argv...>`. It runs the
# action as a child, records its exit code for the uploader, and exits with that code. Inputs:
#   "$@"                  the action's argv
#   TAO_K8S_STATUS_DIR    a directory shared with the uploader (an emptyDir); the exit code is
#                         written to exit-code there, atomically (a temp file, then mv); a
#                         stale one, from an earlier run of the container, is removed first
# SIGTERM and SIGINT are forwarded to the action, which is then still waited for and its exit
# code still recorded, so that the uploader is never left waiting. SIGINT is forwarded as
# SIGTERM: a shell without job control starts its background children with SIGINT ignored,
# so an INT would never reach the action. An action that cannot be started exits 127, and
# that is recorded too.
set -u
status_dir="${TAO_K8S_STATUS_DIR:-}"
if [ -z "$status_dir" ]; then
  echo "tao-k8s: TAO_K8S_STATUS_DIR is not set: nowhere to record the action's exit code" >&2
  exit 1
fi
if ! mkdir -p "$status_dir" || ! rm -f "$status_dir/exit-code" || [ ! -w "$status_dir" ]; then
  echo "tao-k8s: cannot record the action's exit code in $status_dir; not starting it, since the uploader would wait for it until the Job's deadline" >&2
  exit 1
fi

record() {
  tmp="$status_dir/.exit-code.$$"
  if printf '%s\n' "$1" >"$tmp" && mv -f "$tmp" "$status_dir/exit-code"; then
    return 0
  fi
  echo "tao-k8s: could not record the action's exit code $1 in $status_dir/exit-code" >&2
}

if [ "$#" -eq 0 ]; then
  echo "tao-k8s: no action to run" >&2
  record 127
  exit 127
fi

child=
stopping=
interrupted=
# Builtins only in the handler: a command forked there could reap the action before `wait` does.
trap 'interrupted=1; echo "tao-k8s: asked to stop; sending SIGTERM to the action" >&2; if [ -n "$child" ]; then kill -s TERM "$child" 2>/dev/null; else stopping=1; fi' TERM INT

"$@" &
child=$!
# A signal that came before the action's pid was known.
if [ -n "$stopping" ]; then
  kill -s TERM "$child" 2>/dev/null
fi
# `wait` returns early, with 128 + the signal's number, when a trapped signal arrives; the
# action is then still running (or not yet reaped), so wait for it again. A shell keeps the
# status of a child it has reported, so waiting again after a late signal gives the same code.
while :; do
  interrupted=
  # The shell's own "Terminated" note on stderr is dropped; the code says it all.
  wait "$child" 2>/dev/null
  code=$?
  if [ -z "$interrupted" ]; then
    break
  fi
done
record "$code"
exit "$code"
