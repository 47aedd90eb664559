#!/usr/bin/env bash
# job.sh: drives kubectl for one Kubernetes job that tao-k8s compiled. This program is the same
# for every job; the job's values (names, namespace, GPU counts, claims, credential keys...)
# are in job.env beside it, computed by tao-k8s and quoted. It reads manifest.yaml beside it
# too. `job.sh help` lists the verbs, options and environment variables.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The job's values (`tao-k8s script` prints them in place of this line):
# shellcheck source=/dev/null
. "$here/job.env"

MANIFEST="$here/manifest.yaml"
PROBE_MANIFEST="$here/nccl-probe.yaml"
RECORD_FILE="$here/record-id"
TAO_K8S=''
STATE_DIR=${TAO_K8S_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/tao-k8s}

usage() {
  printf 'job.sh: drives kubectl for the Kubernetes job %s (written by tao-k8s %s).\n\n' "$JOB" "$VERSION"
  cat <<'EOF'
  job.sh preflight                      check the cluster, change nothing
  job.sh submit [--reprobe] [--allow-pending] [--replace]
                                        gates, job record, Secrets, dry-run, apply
  job.sh status [--record ID]           state of the job (works from another shell)
  job.sh logs [--tail N] [--follow] [--index I]
                                        the last N lines (200 while it runs, all once it ended)
  job.sh cancel [--record ID]           delete the Job and what belongs to it
  job.sh probe                          run the NCCL probe now (multi-node)
  job.sh help                           this text

Options of every verb: --context C (or TAO_K8S_CONTEXT); --namespace N must be the manifest's.
Without a context or kubeconfig, inside a pod (KUBERNETES_SERVICE_HOST set), kubectl uses the
pod's service account. --allow-pending: submit a job of several pods that fits only an idle
cluster anyway (its first pods hold their GPUs until the rest are scheduled). --replace: the
Job of this bundle ended (succeeded or failed): delete it, with its pods and logs, and run the
bundle again under a new job record (a Job that still runs is refused: cancel it first).
Environment:
  TAO_K8S_BIN                      the tao-k8s to run (else the one that wrote the bundle, else
                                   tao-k8s on PATH); it must be the version that wrote this script
  TAO_K8S_STATE_DIR                where job records live (default ~/.local/state/tao-k8s)
  TAO_K8S_POLL_SECONDS             seconds between two polls of a Job, 1 to 60 (default 5)
  TAO_K8S_PROBE_TIMEOUT_SECONDS    how long the NCCL probe may take, 1 to 3600 (default 360)
  TAO_K8S_SKIP_NODE_RUNTIME_CHECK  1: do not refuse GPU nodes whose labels show an old driver
  TAO_K8S_SERVICEACCOUNT_DIR       the pod's service account in-cluster (default
                                   /var/run/secrets/kubernetes.io/serviceaccount)
Exit codes: 0 done, 1 a gate or kubectl refused, 2 usage.
EOF
}
# A word from the command line or the environment, for a message: as it is, or shell-quoted
# when it holds a control character, which then reaches the terminal escaped ($'\E...').
shown() { case $1 in *[[:cntrl:]]*) printf '%q' "$1" ;; *) printf '%s' "$1" ;; esac; }
usage_error() { printf 'tao-k8s: %s\n' "$*" >&2; usage >&2; exit 2; }

verb=${1:-}
case $verb in
  help | --help | -h) usage; exit 0 ;;
  preflight | submit | status | logs | cancel | probe) shift ;;
  '') usage_error "no verb" ;;
  *) usage_error "unknown verb $(shown "$verb")" ;;
esac
CONTEXT=${TAO_K8S_CONTEXT:-}
# TAO_K8S_NAMESPACE was applied when the manifest was rendered; it is fixed now.
NAMESPACE=$MANIFEST_NAMESPACE
REPROBE=0 TAIL='' FOLLOW=0 INDEX='' RECORD_ID='' PULL_CREATED=0 ALLOW_PENDING='' REPLACE=''
IN_CLUSTER=0 WHERE='' KEY=''
SA_DIR=${TAO_K8S_SERVICEACCOUNT_DIR:-/var/run/secrets/kubernetes.io/serviceaccount}
while [ $# -gt 0 ]; do
  case $1 in
    --context) CONTEXT=${2:?--context needs a value}; shift 2 ;;
    --namespace) NAMESPACE=${2:?--namespace needs a value}; shift 2 ;;
    --reprobe) REPROBE=1; shift ;;
    --allow-pending) ALLOW_PENDING=1; shift ;;
    --replace) REPLACE=1; shift ;;
    --tail) TAIL=${2:?--tail needs a value}; shift 2 ;;
    --follow) FOLLOW=1; shift ;;
    --index) INDEX=${2:?--index needs a value}; shift 2 ;;
    --record) RECORD_ID=${2:?--record needs a value}; shift 2 ;;
    --help | -h) usage; exit 0 ;;
    *) usage_error "unknown option $(shown "$1")" ;;
  esac
done

# seconds NAME DEFAULT MIN MAX: the variable NAME as a whole number of seconds from MIN to
# MAX, refused otherwise: a poll interval of 0 would poll without pause, and none may make a
# wait unbounded.
seconds() {
  local value=${!1:-$2}
  if ! [[ $value =~ ^[0-9]{1,7}$ ]] || [ "$((10#$value))" -lt "$3" ] || [ "$((10#$value))" -gt "$4" ]; then
    printf 'tao-k8s: %s must be a whole number of seconds from %s to %s, not %s\n' "$1" "$3" "$4" "$(shown "$value")" >&2
    exit 2
  fi
  printf -v "$1" '%s' "$((10#$value))"
}
if [ "$verb" = submit ] || [ "$verb" = probe ]; then
  seconds TAO_K8S_POLL_SECONDS 5 1 60
  seconds TAO_K8S_PROBE_TIMEOUT_SECONDS 360 1 3600
fi

tmpdir=$(mktemp -d)
chmod 700 "$tmpdir"
# What the gates read: kubectl's answers, gathered here (removed with tmpdir on exit).
mkdir "$tmpdir/cluster"

# What a submit must undo if it stops: CREATED lists the Secrets this run made that nothing
# owns yet; APPLIED is 1 from the apply until every object is attached to the Job; RECORD_OPEN
# is 1 while this run's job record is open and not yet bound to a Job that runs; PROBING is 1
# while the NCCL probe is in the cluster. REASON is the last message of die, for the record.
CREATED=() APPLIED=0 RECORD_OPEN=0 REASON='' PROBING=0

remove_created() {
  local secret
  for secret in "${CREATED[@]}"; do
    k delete secret "$secret" --ignore-not-found >/dev/null 2>&1 ||
      note "could not delete the Secret $secret: delete it with kubectl"
  done
  CREATED=()
}

# On every exit: a failed submit removes what nothing would ever remove (the Secrets it made,
# what it applied but could not attach to the Job) and marks its record FAILED; then the
# temporary directory goes.
cleanup() {
  local code=$?
  trap - EXIT
  if [ "$code" -ne 0 ]; then
    if [ "$PROBING" = 1 ]; then
      k delete -f "$PROBE_MANIFEST" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    fi
    if [ "$APPLIED" = 1 ]; then
      note "removing what this submit applied"
      k delete job "$JOB" --ignore-not-found --wait=false >/dev/null 2>&1 || note "could not delete the Job $JOB: job.sh cancel does"
      [ -z "$SERVICE" ] || k delete service "$SERVICE" --ignore-not-found --wait=false >/dev/null 2>&1 || true
      [ -z "$CONFIG_MAP" ] || k delete configmap "$CONFIG_MAP" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    fi
    remove_created
    if [ "$RECORD_OPEN" = 1 ]; then
      "$TAO_K8S" record mark "$RECORD_ID" FAILED --source driver --reason "${REASON:-the driver stopped with exit code $code}" >/dev/null 2>&1 || true
    fi
  fi
  rm -rf "$tmpdir"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

die() { REASON=$*; echo "tao-k8s: $*" >&2; exit 1; }
note() { echo "tao-k8s: $*" >&2; }

[ "$NAMESPACE" = "$MANIFEST_NAMESPACE" ] ||
  die "the manifest was rendered for namespace $MANIFEST_NAMESPACE, not $(shown "$NAMESPACE"): render it again with --namespace $(shown "$NAMESPACE")"

# Every kubectl call names the namespace, and the context unless kubectl runs on the pod's
# service account.
k() {
  if [ "$IN_CLUSTER" = 1 ]; then
    kubectl --namespace "$NAMESPACE" "$@"
  else
    kubectl --context "$CONTEXT" --namespace "$NAMESPACE" "$@"
  fi
}

# Run a command whose stderr is noise when it succeeds; when it fails, show the last lines
# of its stderr (kubectl's own reason, such as a context that does not exist), without
# control characters, and return its status.
quiet() {
  local code=0
  "$@" 2>"$tmpdir/stderr" || code=$?
  [ "$code" -eq 0 ] || tail -n 5 "$tmpdir/stderr" | LC_ALL=C tr -d '\000-\010\013-\037\177' >&2
  return "$code"
}

# The tao-k8s this script runs (job records, lint, kept-fields): TAO_K8S_BIN, else the binary
# that wrote the bundle if it is still there, else tao-k8s on PATH. It must be the version
# that wrote the script, whose checks and record format the script relies on: checked before
# anything else, so that no submit stops half-way for want of it.
find_tao_k8s() {
  [ -z "$TAO_K8S" ] || return 0
  local found
  if [ -n "${TAO_K8S_BIN:-}" ]; then
    command -v "$TAO_K8S_BIN" >/dev/null 2>&1 ||
      die "TAO_K8S_BIN=$(shown "$TAO_K8S_BIN") is not an executable file: set it to the path of tao-k8s $VERSION"
    found=$TAO_K8S_BIN
  elif [ -n "$WRITER" ] && [ -x "$WRITER" ]; then
    found=$WRITER
  else
    command -v tao-k8s >/dev/null 2>&1 ||
      die "tao-k8s is not on PATH (this script runs it for the job record and its checks): install tao-k8s $VERSION and put it on PATH, or set TAO_K8S_BIN to its path"
    found=tao-k8s
  fi
  local version
  version=$("$found" --version 2>/dev/null) || die "$(shown "$found") --version failed: set TAO_K8S_BIN to the path of tao-k8s $VERSION"
  # `tao-k8s 0.1.0`, or `tao-k8s 0.1.0 (commit 0123456789ab)` from a git checkout.
  case $version in
    "tao-k8s $VERSION" | "tao-k8s $VERSION "*) ;;
    *) die "$(shown "$found") is $(shown "$version"), but tao-k8s $VERSION wrote this script: set TAO_K8S_BIN to tao-k8s $VERSION, or render the bundle again with the tao-k8s you have" ;;
  esac
  TAO_K8S=$found
}

# The cluster: --context or TAO_K8S_CONTEXT; else, inside a pod with no kubeconfig, the
# pod's service account (kubectl's in-cluster config, which needs no --context); else the
# kubeconfig's current context. WHERE says which, for messages; KEY names it in the probe cache.
resolve_context() {
  command -v kubectl >/dev/null 2>&1 || die "kubectl is not on PATH"
  if [ -z "$CONTEXT" ] && [ -z "${KUBECONFIG:-}" ] && [ ! -e "$HOME/.kube/config" ] &&
    [ -n "${KUBERNETES_SERVICE_HOST:-}" ]; then
    [ -r "$SA_DIR/token" ] ||
      die "KUBERNETES_SERVICE_HOST is set and there is no kubeconfig, but no service account token is mounted at $SA_DIR"
    IN_CLUSTER=1
    WHERE="the in-cluster service account" KEY="in-cluster@$KUBERNETES_SERVICE_HOST"
    return
  fi
  if [ -z "$CONTEXT" ]; then
    CONTEXT=$(quiet kubectl config current-context) || die "no kubeconfig context: set --context or TAO_K8S_CONTEXT"
  fi
  WHERE="context $CONTEXT" KEY=$CONTEXT
}

# Which cluster credentials kubectl uses, said once by preflight.
say_mode() {
  if [ "$IN_CLUSTER" = 0 ]; then
    note "kubeconfig context $CONTEXT, namespace $NAMESPACE"
    return
  fi
  local own=''
  own=$(cat "$SA_DIR/namespace" 2>/dev/null) || true
  note "in-cluster: the pod's service account (namespace ${own:-unknown}), namespace $NAMESPACE"
  [ -z "$own" ] || [ "$own" = "$NAMESPACE" ] ||
    note "the manifest's namespace $NAMESPACE is not the service account's $own: the account needs rights there"
}

preflight() {
  find_tao_k8s
  resolve_context
  say_mode
  quiet k get --raw /version >"$tmpdir/cluster/version.json" || die "the cluster of $(shown "$WHERE") is not reachable"
  local kinds=(jobs)
  [ -n "$SERVICE" ] && kinds+=(services)
  [ -n "$CONFIG_MAP" ] && kinds+=(configmaps)
  { [ -n "$SECRET" ] || [ -n "$PULL_SECRET" ]; } && kinds+=(secrets)
  local kind
  local verb
  for kind in "${kinds[@]}"; do
    for verb in create delete; do
      [ "$(k auth can-i "$verb" "$kind" 2>/dev/null || true)" = yes ] || die "not allowed to $verb $kind in namespace $NAMESPACE"
    done
  done
  for kind in "${kinds[@]:1}"; do
    [ "$(k auth can-i patch "$kind" 2>/dev/null || true)" = yes ] || die "not allowed to patch $kind in namespace $NAMESPACE (to attach them to the Job)"
  done
  if [ "$GPUS_PER_NODE" -gt 0 ]; then
    local gpus
    gpus=$(k get nodes -o jsonpath='{range .items[*]}{.status.allocatable.nvidia\.com/gpu}{"\n"}{end}' | grep -cv '^0*$' || true)
    [ "$gpus" -gt 0 ] || note "warning: no node has allocatable nvidia.com/gpu: is the NVIDIA GPU Operator installed?"
    node_runtime_check
  else
    note "gpusPerNode is 0: GPU scheduling is not verified"
  fi
}

# Driver >= 580 and container toolkit >= 1.19.0 on the GPU nodes, as far as node labels
# (GPU feature discovery) tell; what they do not tell is said, not assumed.
node_runtime_check() {
  if [ "${TAO_K8S_SKIP_NODE_RUNTIME_CHECK:-0}" = 1 ]; then
    note "GPU node runtime check skipped (TAO_K8S_SKIP_NODE_RUNTIME_CHECK=1)"
    return
  fi
  local name major toolkit old=0 unknown=0
  while IFS='|' read -r name major toolkit; do
    [ -n "$name" ] || continue
    if [ -z "$major" ]; then
      unknown=$((unknown + 1))
    elif [ "$major" -lt 580 ]; then
      note "node $name has NVIDIA driver $major, older than 580"
      old=$((old + 1))
    fi
    [ -n "$toolkit" ] || unknown=$((unknown + 1))
  done < <(k get nodes -l nvidia.com/gpu.present=true -o jsonpath='{range .items[*]}{.metadata.name}{"|"}{.metadata.labels.nvidia\.com/cuda\.driver\.major}{"|"}{.metadata.labels.nvidia\.com/container-toolkit\.version}{"\n"}{end}')
  [ "$old" -eq 0 ] || die "GPU nodes need NVIDIA driver 580 or newer; set TAO_K8S_SKIP_NODE_RUNTIME_CHECK=1 if the platform manages it"
  [ "$unknown" -eq 0 ] || note "could not verify the driver (>= 580) and container toolkit (>= 1.19.0) versions of every GPU node from its labels"
}

# The gates (an existing Job, the server version, the claims, where the pods fit) are
# decided by `tao-k8s gate` from what kubectl returns, gathered into files here. Nodes and
# the other namespaces' pods are cluster-wide: a service account that may not list pods
# everywhere gets the fit on allocatable alone, said as a warning.
gates() {
  local dir=$tmpdir/cluster code=0
  quiet k get nodes -o json >"$dir/nodes.json" || die "cannot list the nodes, which the fit gate needs"
  if ! quiet k get pods --all-namespaces --field-selector=status.phase!=Succeeded,status.phase!=Failed -o json >"$dir/pods.json"; then
    rm -f "$dir/pods.json"
    note "cannot list the pods of every namespace: free capacity is not checked"
  fi
  if [ "${#PVCS[@]}" -gt 0 ]; then
    quiet k get pvc -o json >"$dir/pvcs.json" || die "cannot list the PersistentVolumeClaims of namespace $NAMESPACE"
  fi
  quiet k get job "$JOB" -o json --ignore-not-found >"$dir/job.json" || die "cannot look for an existing Job $JOB"
  [ -s "$dir/job.json" ] || rm -f "$dir/job.json"
  "$TAO_K8S" gate "$MANIFEST" --cluster "$dir" ${ALLOW_PENDING:+--allow-pending} ${REPLACE:+--replace} >"$tmpdir/verdicts" 2>&1 || code=$?
  sed 's/^/tao-k8s: gate /' "$tmpdir/verdicts" >&2
  case $code in
    0) ;;
    1) die "a gate refused the job (above)" ;;
    *) die "the gates could not read what kubectl returned" ;;
  esac
}

resources_gate() {
  local secret
  for secret in "${IMAGE_PULL_SECRETS[@]}"; do
    quiet k get secret "$secret" -o name >/dev/null || die "image pull Secret $secret does not exist in namespace $NAMESPACE"
  done
  if [ -n "$QUEUE" ]; then
    quiet k get crd localqueues.kueue.x-k8s.io -o name >/dev/null || die "the Job waits for Kueue queue $QUEUE, but Kueue is not installed"
  fi
}

# Wait until Job $1 completes (0), fails or $2 seconds pass (1), polling every
# TAO_K8S_POLL_SECONDS (at least 1): at most $2 / interval + 2 polls.
wait_job() {
  local deadline=$((SECONDS + $2)) conditions
  while :; do
    conditions=$(k get job "$1" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}' 2>/dev/null || true)
    case " $conditions " in
      *" Complete "*) return 0 ;;
      *" Failed "*) return 1 ;;
    esac
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep "$TAO_K8S_POLL_SECONDS"
  done
}

# The NCCL probe, once per cluster context unless --reprobe.
probe() {
  [ -f "$PROBE_MANIFEST" ] || die "no nccl-probe.yaml beside the script"
  local cache="$STATE_DIR/nccl-probe/$KEY.ok" name
  if [ "$REPROBE" = 0 ] && [ -f "$cache" ]; then
    note "NCCL probe passed before on $WHERE"
    return
  fi
  name=$PROBE_JOB
  # The probe pulls the job's image: its pull Secret must exist first.
  create_pull_secret
  k delete job "$name" --ignore-not-found --wait=true --timeout=120s >/dev/null ||
    die "the previous NCCL probe Job $name could not be deleted"
  PROBING=1
  k apply -f "$PROBE_MANIFEST" >/dev/null || die "the API server refused the NCCL probe"
  if ! wait_job "$name" "$TAO_K8S_PROBE_TIMEOUT_SECONDS"; then
    k logs -l "batch.kubernetes.io/job-name=$name" -c "$MAIN_CONTAINER" --tail 20 >&2 || true
    k delete -f "$PROBE_MANIFEST" --ignore-not-found --wait=false >/dev/null || true
    PROBING=0
    die "the NCCL probe did not complete within ${TAO_K8S_PROBE_TIMEOUT_SECONDS}s: multi-node training would hang; see its log above"
  fi
  k logs -l "batch.kubernetes.io/job-name=$name,batch.kubernetes.io/job-completion-index=0" -c "$MAIN_CONTAINER" --tail 1 >&2 || true
  k delete -f "$PROBE_MANIFEST" --ignore-not-found --wait=false >/dev/null || true
  PROBING=0
  if ! { mkdir -p "$(dirname "$cache")" && : >"$cache"; }; then
    note "could not remember that the probe passed (in $cache)"
  fi
}

# Values only ever travel through files (0600, removed on exit) and stdin, never argv.
create_credentials_secret() {
  [ -n "$SECRET" ] || return 0
  local key value
  : >"$tmpdir/env"
  chmod 600 "$tmpdir/env"
  [ -n "${AWS_ACCESS_KEY_ID:-}" ] || AWS_ACCESS_KEY_ID=${ACCESS_KEY:-}
  [ -n "${AWS_SECRET_ACCESS_KEY:-}" ] || AWS_SECRET_ACCESS_KEY=${SECRET_KEY:-}
  for key in "${REQUIRED_KEYS[@]}" "${OPTIONAL_KEYS[@]}"; do
    value=${!key:-}
    if [ -z "$value" ]; then
      case " ${REQUIRED_KEYS[*]} " in *" $key "*) die "$key is not set in the environment" ;; esac
      continue
    fi
    case $value in *$'\n'*) die "$key holds a newline, which a Secret env file cannot carry" ;; esac
    printf '%s=%s\n' "$key" "$value" >>"$tmpdir/env"
  done
  # Listed before it is made: a Secret the server half-took is removed too.
  CREATED+=("$SECRET")
  k create secret generic "$SECRET" --from-env-file="$tmpdir/env" --dry-run=client -o yaml | k apply -f - >/dev/null ||
    die "the API server refused the Secret $SECRET"
}

create_pull_secret() {
  [ -n "$PULL_SECRET" ] && [ "$PULL_CREATED" = 0 ] || return 0
  if [ -z "${NGC_KEY:-}" ]; then
    note "NGC_KEY is not set: no nvcr.io pull Secret is created, so the image must be public"
    return 0
  fi
  : >"$tmpdir/docker.json"
  chmod 600 "$tmpdir/docker.json"
  # tao-k8s writes the JSON; the key travels on stdin, never on a command line.
  printf '%s' "$NGC_KEY" | "$TAO_K8S" registry-auth --server nvcr.io --username "$NGC_USERNAME" >"$tmpdir/docker.json" ||
    die "cannot write the nvcr.io registry auth"
  PULL_CREATED=1
  CREATED+=("$PULL_SECRET")
  k create secret generic "$PULL_SECRET" --type=kubernetes.io/dockerconfigjson \
    --from-file=.dockerconfigjson="$tmpdir/docker.json" --dry-run=client -o yaml | k apply -f - >/dev/null ||
    die "the API server refused the Secret $PULL_SECRET"
}

submit() {
  preflight
  gates
  resources_gate
  # The gate let an ended Job through only under --replace: it goes, with what belongs to it,
  # before anything of the new run is made (its old record keeps its history).
  if [ -s "$tmpdir/cluster/job.json" ]; then
    delete_objects "$JOB" || die "the ended Job $JOB was not deleted (see kubectl's message above)"
    note "deleted the ended Job $JOB (--replace)"
  fi
  if [ "$NODES" -gt 1 ] && [ "$GPUS_PER_NODE" -gt 0 ]; then
    probe
  fi
  RECORD_ID=$("$TAO_K8S" record open --platform kubernetes --image "$IMAGE" --network-arch "$NETWORK_ARCH" --action "$ACTION" \
    --storage-tier "$TIER" --results-dir "$RESULTS_DIR") || die "cannot open a job record"
  RECORD_OPEN=1
  printf '%s\n' "$RECORD_ID" >"$RECORD_FILE" || die "cannot write $RECORD_FILE"
  note "job record $RECORD_ID"
  create_credentials_secret
  create_pull_secret
  "$TAO_K8S" lint --select redaction --color never "$MANIFEST" >&2 || die "the manifest holds a credential"
  local uid ref object
  k apply --dry-run=server -f "$MANIFEST" -o json >"$tmpdir/dry-run.json" || die "the API server refused the manifest (dry run)"
  "$TAO_K8S" kept-fields "$MANIFEST" "$tmpdir/dry-run.json" >&2 || die "the API server would drop fields of the manifest"
  "$TAO_K8S" record mark "$RECORD_ID" SUBMITTED --source driver >/dev/null || die "cannot mark job record $RECORD_ID SUBMITTED"
  # From here until every object is attached to the Job, a failure deletes what was applied:
  # a Job left without its Secrets would wait for them forever.
  APPLIED=1
  k apply -f "$MANIFEST" >/dev/null || die "kubectl apply failed"
  ref=$(k get job "$JOB" -o jsonpath='{.metadata.namespace}/{.metadata.name}') || die "the applied Job $JOB cannot be read back"
  # The record names what the server created before anything else can fail.
  "$TAO_K8S" record mark "$RECORD_ID" RUNNING --source driver --backend-ref "$ref" >/dev/null ||
    die "cannot bind job record $RECORD_ID to $ref"
  uid=$(k get job "$JOB" -o jsonpath='{.metadata.uid}') || die "the uid of the applied Job $JOB cannot be read"
  # The patch is JSON written by tao-k8s; the uid the server gave goes into it only as a uid.
  [[ $uid =~ ^[0-9a-fA-F-]{1,64}$ ]] || die "the applied Job $JOB has no uid of the expected form"
  # The Job's TTL deletes only the Job and its pods: the rest is attached to it.
  local owned=(${SERVICE:+"service/$SERVICE"} ${CONFIG_MAP:+"configmap/$CONFIG_MAP"} ${SECRET:+"secret/$SECRET"})
  [ "$PULL_CREATED" = 1 ] && owned+=("secret/$PULL_SECRET")
  for object in "${owned[@]}"; do
    k patch "$object" --type=merge \
      -p "${OWNER_PATCH/@UID@/$uid}" >/dev/null ||
      die "$object could not be attached to the Job"
  done
  # Everything belongs to the Job now: its TTL, or job.sh cancel, removes it.
  APPLIED=0 RECORD_OPEN=0 CREATED=()
  echo "$RECORD_ID $ref"
}

# The record of this job: --record, else the one submit wrote beside the script.
record_id() {
  [ -n "$RECORD_ID" ] || RECORD_ID=$(cat "$RECORD_FILE" 2>/dev/null) || die "no job record: submit first, or pass --record ID"
}

# namespace/name of the Job, from the record (never guessed from the request).
backend() {
  record_id
  local ref
  ref=$("$TAO_K8S" record show "$RECORD_ID" --field backendRef) || die "job record $(shown "$RECORD_ID") names no Kubernetes object"
  NAMESPACE=${ref%%/*}
  TARGET=${ref#*/}
}

# The Job and one line per pod (index, phase, node, why it waits or ended, exit code,
# OOMKilled, restarts, the scheduler's message), written by tao-k8s from kubectl's JSON. A Job
# that ended closes its record, a failed one with the reason.
status() {
  find_tao_k8s
  resolve_context
  backend
  local dir=$tmpdir/cluster reason
  quiet k get job "$TARGET" -o json >"$dir/job.json" ||
    die "the Job $NAMESPACE/$TARGET cannot be read (deleted by job.sh cancel, or by its TTL after it ended?)"
  quiet k get pods -l "batch.kubernetes.io/job-name=$TARGET" -o json >"$dir/pods.json" ||
    die "the pods of the Job $NAMESPACE/$TARGET cannot be listed"
  "$TAO_K8S" job-status "$dir" >"$tmpdir/status" || die "cannot read the status of the Job $TARGET"
  cat "$tmpdir/status"
  case $(head -n 1 "$tmpdir/status") in
    *": Complete ("*) "$TAO_K8S" record mark "$RECORD_ID" SUCCEEDED --source driver >/dev/null 2>&1 || true ;;
    *": Failed ("*)
      reason=$("$TAO_K8S" job-status "$dir" --reason) || reason="the Job failed"
      "$TAO_K8S" record mark "$RECORD_ID" FAILED --source driver --reason "${reason:0:4000}" >/dev/null 2>&1 || true
      ;;
  esac
}

# The logs of the main container: the last TAIL lines (--tail), 200 by default while the Job
# runs and the whole log once it ended.
logs() {
  find_tao_k8s
  resolve_context
  backend
  if [ -z "$TAIL" ]; then
    case " $(k get job "$TARGET" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}' 2>/dev/null || true) " in
      *" Complete "* | *" Failed "*) TAIL=-1 ;;
      *) TAIL=200 ;;
    esac
  fi
  local labels="batch.kubernetes.io/job-name=$TARGET" args=(--prefix --tail "$TAIL" -c "$MAIN_CONTAINER" --max-log-requests "$((NODES + 5))")
  [ -n "$INDEX" ] && labels="$labels,batch.kubernetes.io/job-completion-index=$INDEX"
  [ "$FOLLOW" = 1 ] && args+=(--follow)
  k logs -l "$labels" "${args[@]}"
}

# Delete Job $1 and the objects of the bundle. Foreground: the Job goes once its pods are
# gone, waited for at most five minutes; the rest is deleted either way (and waited for, so
# that a new apply of the same names cannot meet them being deleted). Fails when the Job was
# not deleted.
delete_objects() {
  local deleted=0
  k delete job "$1" --cascade=foreground --ignore-not-found --timeout=300s || deleted=$?
  [ -n "$SERVICE" ] && k delete service "$SERVICE" --ignore-not-found
  [ -n "$CONFIG_MAP" ] && k delete configmap "$CONFIG_MAP" --ignore-not-found
  [ -n "$SECRET" ] && k delete secret "$SECRET" --ignore-not-found
  [ -n "$PULL_SECRET" ] && k delete secret "$PULL_SECRET" --ignore-not-found
  return "$deleted"
}

cancel() {
  find_tao_k8s
  resolve_context
  backend
  delete_objects "$TARGET" || die "the Job $TARGET was not deleted (see kubectl's message above): run job.sh cancel again"
  "$TAO_K8S" record mark "$RECORD_ID" CANCELED --source driver >/dev/null 2>&1 ||
    note "job record $RECORD_ID had already ended; its state is kept"
}

case $verb in
  preflight) preflight; gates; resources_gate; echo "preflight passed for $JOB in $NAMESPACE on $WHERE" ;;
  submit) submit ;;
  status) status ;;
  logs) logs ;;
  cancel) cancel ;;
  # The pull Secret the probe needed belongs to no Job: a submit makes its own.
  probe) find_tao_k8s; resolve_context; REPROBE=1; probe; remove_created ;;
esac
