# tao-k8s: run in a second regular container of the pod (an image with sh and the aws CLI),
# next to the action wrapped by run-action.sh. It waits until the action has recorded its exit
# code, then uploads the results directory to S3, whether the action succeeded or not: its logs
# and partial results matter most when it failed. The action's own failure is carried by the
# main container's exit code; this one exits 1 only when the upload fails. It sets no deadline
# of its own: the Job's activeDeadlineSeconds bounds the wait. Inputs, from the environment:
#   TAO_K8S_STATUS_DIR        directory shared with the main container, where exit-code appears
#   TAO_K8S_RESULTS_DIR       the directory to upload
#   TAO_K8S_RESULTS_URI       where to, s3://bucket/prefix/
#   NODE_RANK                 optional: the pod's index in a multi-node Job
#   TAO_K8S_UPLOAD_PER_RANK   optional: 1 = every rank uploads, to <uri>rank-<NODE_RANK>/ (a pod
#                             without NODE_RANK counts as rank 0); otherwise only rank 0, or a
#                             pod without NODE_RANK, uploads, to <uri>
#   TAO_K8S_POLL_SECONDS      optional: how often to look for exit-code (default 5)
set -u
status_dir="${TAO_K8S_STATUS_DIR:-}"
results_dir="${TAO_K8S_RESULTS_DIR:-}"
uri="${TAO_K8S_RESULTS_URI:-}"
rank="${NODE_RANK:-}"
per_rank="${TAO_K8S_UPLOAD_PER_RANK:-}"
poll="${TAO_K8S_POLL_SECONDS:-5}"

if [ -z "$status_dir" ] || [ -z "$results_dir" ] || [ -z "$uri" ]; then
  echo "tao-k8s: TAO_K8S_STATUS_DIR, TAO_K8S_RESULTS_DIR and TAO_K8S_RESULTS_URI must all be set to upload results" >&2
  exit 1
fi
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

# Stopping is up to the main container: once the action has been stopped it records its exit
# code, and what it left is still worth uploading within the pod's grace period.
trap 'echo "tao-k8s: asked to stop; uploading once the action has recorded its exit code" >&2' TERM INT

while [ ! -f "$status_dir/exit-code" ]; do
  sleep "$poll"
done
code=
read -r code <"$status_dir/exit-code"

if [ -z "$dest" ]; then
  echo "tao-k8s: rank $rank does not upload results"
  exit 0
fi
if [ ! -d "$results_dir" ]; then
  echo "tao-k8s: the results directory $results_dir does not exist, so nothing was uploaded to $dest (the action exited with $code, perhaps before creating it)"
  exit 0
fi
if [ -z "$(ls -A "$results_dir")" ]; then
  echo "tao-k8s: the results directory $results_dir is empty (the action exited with $code); uploading nothing"
fi
if ! aws s3 cp --recursive --no-progress "$results_dir" "$dest"; then
  echo "tao-k8s: uploading $results_dir to $dest failed" >&2
  exit 1
fi
echo "tao-k8s: uploaded $results_dir to $dest (the action exited with $code)"
