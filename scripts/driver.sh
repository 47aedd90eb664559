#!/usr/bin/env bash
# job.sh: drives kubectl for one Kubernetes job that tao-k8s compiled; the same program for
# every job, its values in job.env beside it. It holds the kubectl calls and their order; every
# decision is tao-k8s's, from what kubectl returned. It touches only objects it created (listed
# by uid in the job record, deleted by a DELETE preconditioned on that uid). Its variables are
# lower case: the submitter's environment passes through unchanged.
set -euo pipefail
umask 077

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The job's values (`tao-k8s script` prints them in place of this line):
# shellcheck source=/dev/null
. "$here/job.env"

# What kubectl gets and deletes for the workload (a Job, or a JobSet).
resource=job
[ "$workload" != JobSet ] || resource=jobsets.jobset.x-k8s.io
manifest_file="$here/manifest.yaml"
probe_file="$here/nccl-probe.yaml"
record_file="$here/record-id"
tao=''
state_dir=${TAO_K8S_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/tao-k8s}

usage() {
  printf 'job.sh: drives kubectl for the Kubernetes job %s (written by tao-k8s %s).\n\n' "$job" "$version"
  cat <<'EOF'
  job.sh preflight                      check the cluster, change nothing
  job.sh submit [--reprobe] [--allow-pending] [--replace] [--pass-env NAME]...
                                        gates, job record, Secrets, dry-run, create
  job.sh status [--record ID]           state of the job (works from another shell)
  job.sh logs [--tail N] [--follow] [--index I] [--record ID]
                                        the last N lines (200 while it runs, all once it ended);
                                        once the pods are gone, the logs they kept
  job.sh cancel [--record ID]           delete the Job and what the job record created
  job.sh probe                          run the NCCL probe now (multi-node)
  job.sh help                           this text

Options of every verb: --context C (or TAO_K8S_CONTEXT); --namespace N must be the manifest's.
Without a context or kubeconfig, inside a pod (KUBERNETES_SERVICE_HOST set), kubectl uses the
pod's service account. --allow-pending: submit a job of several pods that fits only an idle
cluster anyway (its first pods hold their GPUs until the rest are scheduled). --replace: the
Job of this bundle ended (succeeded or failed) and a job record here created it: delete it,
with its pods and logs and what that record created, and run the bundle again under a new job
record (a Job that still runs is refused: cancel it first). --pass-env NAME: let the variable
NAME of your environment reach the pod, for a request whose credentials.extra asks for it.
Logs of a request with spec.logs.keep: true outlive the pods: once they are gone, job.sh logs
reads them from the volume of resultsDir with a short-lived reader Pod (which it creates and
deletes, and which needs the rights to create and delete pods), or from S3 with your local aws
CLI (S3_ENDPOINT_URL, if set, is its --endpoint-url).
The driver creates its objects (never applies over existing ones), refuses a name someone
else holds, and deletes only objects whose uid its job records list.
Environment:
  TAO_K8S_BIN                      the tao-k8s to run (else the one that wrote the bundle, else
                                   tao-k8s on PATH); it must be the version that wrote this script
  TAO_K8S_PASS_ENV                 NAME,NAME...: like --pass-env
  TAO_K8S_STATE_DIR                where job records live (default ~/.local/state/tao-k8s)
  TAO_K8S_POLL_SECONDS             seconds between two polls of a Job or the reader Pod, 1 to
                                   60 (default 5)
  TAO_K8S_PROBE_TIMEOUT_SECONDS    how long the NCCL probe may take, 1 to 3600 (default 360)
  TAO_K8S_SKIP_NODE_RUNTIME_CHECK  1: do not refuse GPU nodes whose labels show an old driver
  TAO_K8S_SERVICEACCOUNT_DIR       the pod's service account in-cluster (default
                                   /var/run/secrets/kubernetes.io/serviceaccount)
Exit codes: 0 done, 1 a gate or kubectl refused, 2 usage.
EOF
}
# The one escaping step of everything shown that came from the command line, the cluster or a
# file: as it is, or shell-quoted when it holds a control character ($'\E...'), cut to 256.
shown() {
  local text=${1:0:256}
  case $text in *[[:cntrl:]]*) printf '%q' "$text" ;; *) printf '%s' "$text" ;; esac
}
usage_error() { printf 'tao-k8s: %s\n' "$*" >&2; usage >&2; exit 2; }

verb=${1:-}
case $verb in
  help | --help | -h) usage; exit 0 ;;
  preflight | submit | status | logs | cancel | probe) shift ;;
  '') usage_error "no verb" ;;
  *) usage_error "unknown verb $(shown "$verb")" ;;
esac
context=${TAO_K8S_CONTEXT:-}
# The namespace was fixed when the manifest was rendered: another one is refused below.
ns=$namespace
reprobe=0 tail_lines='' follow=0 index='' record_id='' allow_pending='' replace=''
pass_env=() in_cluster=0 where='' probe_key='' pull_created=''
sa_dir=${TAO_K8S_SERVICEACCOUNT_DIR:-/var/run/secrets/kubernetes.io/serviceaccount}
while [ $# -gt 0 ]; do
  case $1 in
    --context) context=${2:?--context needs a value}; shift 2 ;;
    --namespace) ns=${2:?--namespace needs a value}; shift 2 ;;
    --reprobe) reprobe=1; shift ;;
    --allow-pending) allow_pending=1; shift ;;
    --replace) replace=1; shift ;;
    --pass-env) pass_env+=(--pass-env "${2:?--pass-env needs a name}"); shift 2 ;;
    --tail) tail_lines=${2:?--tail needs a value}; shift 2 ;;
    --follow) follow=1; shift ;;
    --index) index=${2:?--index needs a value}; shift 2 ;;
    --record) record_id=${2:?--record needs a value}; shift 2 ;;
    --help | -h) usage; exit 0 ;;
    *) usage_error "unknown option $(shown "$1")" ;;
  esac
done
[[ -z $index || $index =~ ^[0-9]{1,4}$ ]] || usage_error "--index must be a completion index, not $(shown "$index")"
[[ -z $tail_lines || $tail_lines =~ ^(-1|[0-9]{1,9})$ ]] || usage_error "--tail must be a number of lines, not $(shown "$tail_lines")"

# seconds NAME DEFAULT MIN MAX VAR: NAME as whole seconds from MIN to MAX into VAR, or exit 2
# (a poll interval of 0 would poll without pause; no wait may be unbounded).
seconds() {
  local value=${!1:-$2}
  if ! [[ $value =~ ^[0-9]{1,7}$ ]] || [ "$((10#$value))" -lt "$3" ] || [ "$((10#$value))" -gt "$4" ]; then
    printf 'tao-k8s: %s must be a whole number of seconds from %s to %s, not %s\n' "$1" "$3" "$4" "$(shown "$value")" >&2
    exit 2
  fi
  printf -v "$5" '%s' "$((10#$value))"
}
poll_seconds=5 probe_timeout=360
if [ "$verb" = submit ] || [ "$verb" = probe ] || [ "$verb" = logs ]; then
  seconds TAO_K8S_POLL_SECONDS 5 1 60 poll_seconds
  seconds TAO_K8S_PROBE_TIMEOUT_SECONDS 360 1 3600 probe_timeout
fi

tmpdir=$(mktemp -d)
# What the gates read: kubectl's answers, gathered here (removed with tmpdir on exit).
mkdir "$tmpdir/cluster"

# What a failed run undoes: created (`KIND/NAME/UID` of what it made that no Job owns yet: a
# submit's objects, the probe's, the reader Pod of kept logs), record_open (its record, not yet
# bound to a running Job); reason is die's last message.
created=() record_open=0 reason=''

# On every exit: a failed run deletes what it created, and a failed submit marks its record
# FAILED.
cleanup() {
  local code=$?
  trap - EXIT
  if [ "$code" -ne 0 ]; then
    if [ "${#created[@]}" -gt 0 ]; then
      note "removing what this run created"
      forget_since 0 rollback
    fi
    if [ "$record_open" = 1 ]; then
      "$tao" record mark "$record_id" FAILED --source driver --reason "${reason:-the driver stopped with exit code $code}" >/dev/null 2>&1 || true
    fi
  fi
  rm -rf "$tmpdir"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

die() { reason=$*; echo "tao-k8s: $*" >&2; exit 1; }
note() { echo "tao-k8s: $*" >&2; }

[ "$ns" = "$namespace" ] ||
  die "the manifest was rendered for namespace $namespace, not $(shown "$ns"): render it again with --namespace $(shown "$ns")"
[ -z "${TAO_K8S_NAMESPACE:-}" ] || [ "$TAO_K8S_NAMESPACE" = "$namespace" ] ||
  die "TAO_K8S_NAMESPACE is $(shown "$TAO_K8S_NAMESPACE"), but the manifest was rendered for namespace $namespace: render it again in that namespace, or unset TAO_K8S_NAMESPACE"

# Every kubectl call names the namespace, and the context unless on the pod's service account.
k() {
  if [ "$in_cluster" = 1 ]; then
    kubectl --namespace "$ns" "$@"
  else
    kubectl --context "$context" --namespace "$ns" "$@"
  fi
}

# Run a command whose stderr is noise when it succeeds; when it fails, show the end of it
# (kubectl's own reason) without control characters.
quiet() {
  local code=0
  "$@" 2>"$tmpdir/stderr" || code=$?
  [ "$code" -eq 0 ] || tail -n 5 "$tmpdir/stderr" | LC_ALL=C tr -d '\000-\010\013-\037\177' >&2
  return "$code"
}

# The tao-k8s this script runs: TAO_K8S_BIN, else the binary that wrote the bundle if it is
# still there, else tao-k8s on PATH; checked first to be the version that wrote the script.
find_tao_k8s() {
  [ -z "$tao" ] || return 0
  local found
  if [ -n "${TAO_K8S_BIN:-}" ]; then
    command -v "$TAO_K8S_BIN" >/dev/null 2>&1 ||
      die "TAO_K8S_BIN=$(shown "$TAO_K8S_BIN") is not an executable file: set it to the path of tao-k8s $version"
    found=$TAO_K8S_BIN
  elif [ -n "$writer" ] && [ -x "$writer" ]; then
    found=$writer
  else
    command -v tao-k8s >/dev/null 2>&1 ||
      die "tao-k8s is not on PATH (this script runs it for the job record and its checks): install tao-k8s $version and put it on PATH, or set TAO_K8S_BIN to its path"
    found='tao-k8s'
  fi
  local said
  said=$("$found" --version 2>/dev/null) || die "$(shown "$found") --version failed: set TAO_K8S_BIN to the path of tao-k8s $version"
  # `tao-k8s 0.1.0`, or `tao-k8s 0.1.0 (commit 0123456789ab)` from a git checkout.
  case $said in
    "tao-k8s $version" | "tao-k8s $version "*) ;;
    *) die "$(shown "$found") is $(shown "$said"), but tao-k8s $version wrote this script: set TAO_K8S_BIN to tao-k8s $version, or render the bundle again with the tao-k8s you have" ;;
  esac
  tao=$found
}

# The cluster: --context or TAO_K8S_CONTEXT; else, inside a pod with no kubeconfig, the
# pod's service account (kubectl's in-cluster config, which needs no --context); else the
# kubeconfig's current context. where says which, for messages; probe_key names it in the
# probe cache.
resolve_context() {
  command -v kubectl >/dev/null 2>&1 ||
    die "MISSING: kubectl not found on PATH. Install kubectl to submit Jobs (https://kubernetes.io/docs/tasks/tools/), or put it on PATH"
  if [ -z "$context" ] && [ -z "${KUBECONFIG:-}" ] && [ ! -e "$HOME/.kube/config" ] &&
    [ -n "${KUBERNETES_SERVICE_HOST:-}" ]; then
    [ -r "$sa_dir/token" ] ||
      die "KUBERNETES_SERVICE_HOST is set and there is no kubeconfig, but no service account token is mounted at $(shown "$sa_dir")"
    in_cluster=1
    where="the in-cluster service account" probe_key="in-cluster@${KUBERNETES_SERVICE_HOST//\//_}"
    return
  fi
  if [ -z "$context" ]; then
    context=$(quiet kubectl config current-context) || no_cluster "no kubeconfig context: set --context or TAO_K8S_CONTEXT"
  fi
  where="context $(shown "$context")" probe_key=${context//\//_}
}

# The runbook's remedies for a cluster kubectl cannot reach, then die with $1.
no_cluster() {
  note "MISSING: no reachable cluster (kubeconfig at ~/.kube/config, \$KUBECONFIG, or in-pod service account)."
  note "Configure kubectl for your cluster, or set \$KUBECONFIG (then --context or TAO_K8S_CONTEXT picks the context):"
  note "  EKS: aws eks update-kubeconfig --name <cluster> --region <region>"
  note "  GKE: gcloud container clusters get-credentials <cluster> --region <region>"
  note "  AKS: az aks get-credentials --resource-group <rg> --name <cluster>"
  note "  local: minikube start   (see the README's Local cluster section)"
  die "$1"
}

# The GPU host runtime check of the TAO skill bank, when TAO_SKILL_BANK_ROOT points at one
# (TAO_K8S_SKIP_NODE_RUNTIME_CHECK=1 skips it, as it skips the runtime gate). Its output goes
# to stderr; a failure stops the run with the runbook's remedies.
host_check() {
  [ "${TAO_K8S_SKIP_NODE_RUNTIME_CHECK:-0}" != 1 ] || return 0
  [ -n "${TAO_SKILL_BANK_ROOT:-}" ] || return 0
  local script=$TAO_SKILL_BANK_ROOT/skills/platform/tao-setup-nvidia-gpu-host/scripts/setup-nvidia-gpu-host.sh code=0
  if [ "$gpus_per_node" -eq 0 ]; then
    note "gpusPerNode is 0: the GPU host runtime check is not run"
    return 0
  fi
  if [ ! -f "$script" ] || [ ! -x "$script" ]; then
    note "TAO_SKILL_BANK_ROOT is set, but $(shown "$script") is not an executable file: the GPU host runtime check was not run"
    return 0
  fi
  "$script" --backend kubernetes --check-only >"$tmpdir/host-check" 2>&1 || code=$?
  tail -n 20 "$tmpdir/host-check" | LC_ALL=C tr -d '\000-\010\013-\037\177' | sed 's/^/tao-k8s: host check: /' >&2
  if [ "$code" -eq 0 ]; then
    note "GPU host runtime check passed ($(shown "$script") --check-only)"
    return 0
  fi
  note "MISSING: TAO Kubernetes GPU node runtime is not ready."
  note "For self-managed GPU nodes, run after user approval:"
  note "  bash $(shown "$script") --backend kubernetes --install --yes"
  note "For managed clusters, verify the node image/GPU Operator policy installs driver 580 and toolkit 1.19.0, then set TAO_K8S_SKIP_NODE_RUNTIME_CHECK=1."
  die "the GPU host runtime check failed (exit code $code): nothing was submitted"
}

preflight() {
  find_tao_k8s
  host_check
  resolve_context
  local mode=(--context "$context")
  [ "$in_cluster" = 0 ] || mode=(--service-account "$sa_dir")
  "$tao" driver mode --namespace "$ns" "${mode[@]}"
  quiet k get --raw /version >"$tmpdir/cluster/version.json" || no_cluster "the cluster of $where is not reachable"
  local kinds=(jobs) kind can
  if [ "$workload" = JobSet ]; then
    # Discovery, which every user may read: is JobSet installed, at the version this bundle is?
    local served
    served=$(quiet k api-versions) || die "cannot list the APIs the cluster serves"
    grep -qx 'jobset.x-k8s.io/v1alpha2' <<<"$served" ||
      die "MISSING: the bundle is a JobSet (render --target jobset), but the cluster does not serve jobset.x-k8s.io/v1alpha2: install JobSet (https://jobset.sigs.k8s.io/docs/installation/), or render the bundle without --target jobset"
    kinds=(jobsets.jobset.x-k8s.io)
    [ -z "$probe_job" ] || kinds+=(jobs)
  fi
  [ -n "$service$probe_job" ] && kinds+=(services)
  [ -n "$config_map" ] && kinds+=(configmaps)
  { [ -n "$credentials_secret" ] || [ -n "$ngc_pull_secret" ]; } && kinds+=(secrets)
  for kind in "${kinds[@]}"; do
    for can in create delete; do
      [ "$(k auth can-i "$can" "$kind" 2>/dev/null || true)" = yes ] || die "not allowed to $can $kind in namespace $ns"
    done
  done
  for kind in "${kinds[@]:1}"; do
    [ "$kind" != jobs ] || continue
    [ "$(k auth can-i patch "$kind" 2>/dev/null || true)" = yes ] || die "not allowed to patch $kind in namespace $ns (to attach them to the $workload)"
  done
  [ "$gpus_per_node" -gt 0 ] || note "gpusPerNode is 0: GPU scheduling is not verified"
}

# The gates are decided by `tao-k8s gate` from kubectl's answers, gathered here; objects of the
# bundle's names pass through `tao-k8s driver observe`, which drops a Secret's values before
# anything is written. Without the pods of every namespace, the fit is on allocatable alone.
gates() {
  local dir=$tmpdir/cluster code=0 kind name args=() key
  quiet k get nodes -o json >"$dir/nodes.json" || die "cannot list the nodes, which the fit gate needs"
  if ! quiet k get pods --all-namespaces --field-selector=status.phase!=Succeeded,status.phase!=Failed -o json >"$dir/pods.json"; then
    rm -f "$dir/pods.json"
    note "cannot list the pods of every namespace: free capacity is not checked"
  fi
  if [ "${#claims[@]}" -gt 0 ]; then
    quiet k get pvc -o json >"$dir/pvcs.json" || die "cannot list the PersistentVolumeClaims of namespace $ns"
    # A Pending claim may be of a class that binds only when a pod uses it (kind's default,
    # and EKS's and GKE's usual one): the claims gate needs the classes to tell.
    if grep -q '"Pending"' "$dir/pvcs.json" && ! quiet k get storageclass -o json >"$dir/storageclasses.json"; then
      rm -f "$dir/storageclasses.json"
      note "cannot list the StorageClasses: a Pending claim is refused even if it binds at first use"
    fi
  fi
  quiet k get "$resource" "$job" -o json --ignore-not-found >"$dir/job.json" || die "cannot look for an existing $workload $job"
  [ -s "$dir/job.json" ] || rm -f "$dir/job.json"
  : >"$dir/objects.json"
  [ ! -f "$dir/job.json" ] || "$tao" driver observe <"$dir/job.json" >>"$dir/objects.json"
  while read -r kind name <&3; do
    [ -n "$name" ] || continue
    quiet k get "$kind" "$name" -o json --ignore-not-found | "$tao" driver observe >>"$dir/objects.json" ||
      die "cannot look for an existing $kind $name"
  done 3<<EOF
service $service
configmap $config_map
secret $credentials_secret
secret $ngc_pull_secret
job $probe_job
service $probe_job
EOF
  [ -z "$credentials_secret_named" ] || args+=(--named-secret "$credentials_secret")
  for key in "${s3_required_keys[@]}" "${extra_keys[@]}"; do args+=(--needed-key "$key"); done
  for key in "${extra_keys[@]}"; do args+=(--extra "$key"); done
  [ "${TAO_K8S_SKIP_NODE_RUNTIME_CHECK:-0}" = 1 ] || args+=(--runtime-check)
  "$tao" gate "$manifest_file" --cluster "$dir" ${allow_pending:+--allow-pending} ${replace:+--replace} \
    "${pass_env[@]}" "${args[@]}" --decisions "$tmpdir/decisions" >"$tmpdir/verdicts" 2>&1 || code=$?
  sed 's/^/tao-k8s: gate /' "$tmpdir/verdicts" >&2
  [ "${TAO_K8S_SKIP_NODE_RUNTIME_CHECK:-0}" != 1 ] || note "GPU node runtime check skipped (TAO_K8S_SKIP_NODE_RUNTIME_CHECK=1)"
  case $code in
    0) ;;
    1) die "a gate refused the job (above)" ;;
    *) die "the gates could not read what kubectl returned" ;;
  esac
}

resources_gate() {
  local secret
  for secret in "${image_pull_secrets[@]}"; do
    quiet k get secret "$secret" -o name >/dev/null || die "image pull Secret $secret does not exist in namespace $ns"
  done
  if [ -n "$queue" ]; then
    quiet k get crd localqueues.kueue.x-k8s.io -o name >/dev/null || die "the $workload waits for Kueue queue $queue, but Kueue is not installed"
  fi
  # A JobSet creates its Job and headless Service by name, and uses a Service of that name
  # that exists: one that no JobSet $job made would name other pods in the rank-0 address.
  local kind name owners
  while read -r kind name <&3; do
    [ -n "$name" ] || continue
    owners=$(quiet k get "$kind" "$name" --ignore-not-found \
      -o jsonpath='{.metadata.name}{range .metadata.ownerReferences[*]}{" "}{.kind}/{.name}{end}') ||
      die "cannot look for an existing $kind $name"
    [ -n "$owners" ] || continue
    case " $owners " in
      *" JobSet/$job "*) ;;
      *) die "a $kind $name exists that the JobSet $job did not create: the JobSet would take it for its own (a Service) or fail to create it (a Job); delete it, or render the request under another metadata.name" ;;
    esac
  done 3<<EOF
service $child_service
job $child_job
EOF
}

# The uid of KIND NAME now, empty when there is none.
uid_of() { k get "$1" "$2" -o jsonpath='{.metadata.uid}' --ignore-not-found 2>/dev/null || true; }

# Wait until the KIND (Job or JobSet) NAME of uid UID is gone (deleted, or its name taken by
# another object), at most five minutes: deleted in the foreground, it goes once its pods are.
wait_gone() {
  local deadline=$((SECONDS + 300))
  while [ "$(uid_of "$1" "$2")" = "$3" ]; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep "$poll_seconds"
  done
}

# Issue the deletes tao-k8s listed (`PATH BODY KIND NAME UID` lines), each preconditioned on
# the uid: an object gone, or whose name another object holds now (untouched), is fine. $2=1
# waits for each Job to be gone.
delete_listed() {
  local path body kind name uid failed=0
  while read -r path body kind name uid <&3; do
    [ -n "$uid" ] || continue
    if ! quiet k delete --raw "$path" -f "$body" >/dev/null; then
      case $(uid_of "$kind" "$name") in
        '') ;;
        "$uid") note "could not delete the $kind $name (uid $uid)"; failed=1; continue ;;
        *) note "the $kind $name is another object now: not touched" ;;
      esac
    fi
    if [[ $kind = Job || $kind = JobSet ]] && [ "$2" = 1 ] && ! wait_gone "$kind" "$name" "$uid"; then
      note "the $kind $name (uid $uid) is still being deleted after five minutes"
      failed=1
    fi
  done 3<<<"$1"
  return "$failed"
}

# Create the objects tao-k8s wrote (`FILE KIND NAME` lines) in order, by `kubectl create`
# (which fails on a name that exists); each uid is listed for rollback and in the job record.
create_listed() {
  local file kind name uid
  while read -r file kind name <&3; do
    [ -n "$name" ] || continue
    uid=$(quiet k create -f "$file" -o jsonpath='{.metadata.uid}') ||
      die "the API server refused to create the $kind $name (it exists, or see kubectl's message above)"
    [[ $uid =~ ^[0-9a-fA-F-]{1,64}$ ]] || die "the created $kind $name has no uid of the expected form"
    created+=("$kind/$name/$uid")
    [ -z "$record_id" ] ||
      "$tao" record own "$record_id" --kind "$kind" --namespace "$ns" --name "$name" --uid "$uid" >/dev/null ||
      die "cannot list the $kind $name in job record $record_id"
  done 3<<<"$1"
}

# Wait until Job $1 completes (0), fails or $2 seconds pass (1), polling every
# poll_seconds: at most $2 / interval + 2 polls.
wait_job() {
  local deadline=$((SECONDS + $2)) state
  while :; do
    k get job "$1" -o json >"$tmpdir/probe/job.json" 2>/dev/null || true
    state=$("$tao" job-status "$tmpdir/probe" --state 2>/dev/null || true)
    case $state in
      succeeded) return 0 ;;
      failed) return 1 ;;
    esac
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep "$poll_seconds"
  done
}

# The NCCL probe, once per cluster context and probe (image, GPUs, transport env) unless
# --reprobe. Its objects are created like the job's and deleted by their uids when it ends;
# the pull Secret it needed stays for the job.
probe() {
  [ -f "$probe_file" ] || die "no nccl-probe.yaml beside the script"
  local cache="$state_dir/nccl-probe/$probe_key${probe_digest:+-$probe_digest}.ok" keep=${#created[@]} listed passed=1 selector lines=20
  if [ "$reprobe" = 0 ] && [ -f "$cache" ]; then
    note "NCCL probe passed before on $where"
    return
  fi
  mkdir -p "$tmpdir/probe"
  listed=$("$tao" driver objects "$probe_file" ${record_id:+--record "$record_id"} --bundle "$job" --out "$tmpdir/probe/objects" \
    ${ngc_pull_secret:+--ngc-pull-secret "$ngc_pull_secret"}) || die "cannot write the NCCL probe's objects"
  # The pull Secret comes first and stays.
  case $listed in *" Secret $ngc_pull_secret"*) pull_created=1 keep=$((keep + 1)) ;; esac
  create_listed "$listed"
  wait_job "$probe_job" "$probe_timeout" || passed=0
  selector="batch.kubernetes.io/controller-uid=$(uid_of job "$probe_job")"
  [ "$passed" = 0 ] || selector+=",batch.kubernetes.io/job-completion-index=0" lines=1
  k logs -l "$selector" -c "$main_container" --tail "$lines" >&2 || true
  forget_since "$keep" probe/deletes
  [ "$passed" = 1 ] ||
    die "the NCCL probe did not complete within ${probe_timeout}s: multi-node training would hang; see its log above." \
      "Set the cluster's NCCL env in the request's env (NCCL_SOCKET_IFNAME=<the nodes' interface, e.g. eth0>," \
      "NCCL_IB_DISABLE=1 without InfiniBand, NCCL_DEBUG=INFO to see why), render the bundle again, and re-probe:" \
      "job.sh probe, or job.sh submit --reprobe"
  { mkdir -p "$(dirname "$cache")" && : >"$cache"; } || note "could not remember that the probe passed (in $cache)"
}

# Delete, by uid, what this run created after its first $1 objects, and forget them (also in
# the job record): $2 names the directory of the deletes' bodies.
forget_since() {
  local args=() object kind name uid
  for object in "${created[@]:$1}"; do args+=(--object "$object"); done
  [ "${#args[@]}" -gt 0 ] || return 0
  delete_listed "$("$tao" driver deletes --namespace "$ns" "${args[@]}" --out "$tmpdir/$2")" 0 ||
    note "not everything this run created was deleted (above)"
  for object in "${created[@]:$1}"; do
    IFS=/ read -r kind name uid <<<"$object"
    [ -z "$record_id" ] ||
      "$tao" record own "$record_id" --kind "$kind" --namespace "$ns" --name "$name" --uid "$uid" --gone >/dev/null || true
  done
  created=("${created[@]:0:$1}")
}

submit() {
  preflight
  gates
  resources_gate
  # decisions.env: replace_deletes (what --replace deletes, by uid) and named_secret_exists.
  local replace_deletes=() named_secret_exists=''
  # shellcheck source=/dev/null
  . "$tmpdir/decisions/decisions.env"
  record_id=$("$tao" record open --platform kubernetes --image "$image" --network-arch "$network_arch" --action "$action" \
    --storage-tier "$tier" --results-dir "$results_dir" --source driver) || die "cannot open a job record"
  record_open=1
  printf '%s\n' "$record_id" >"$record_file" || die "cannot write $record_file"
  note "job record $record_id"
  if [ "${#replace_deletes[@]}" -gt 0 ]; then
    delete_listed "$(printf '%s\n' "${replace_deletes[@]}")" 1 || die "what --replace deletes was not all deleted (above)"
    note "deleted the ended $workload $job and what its job record created (--replace)"
  fi
  if [ "$nodes" -gt 1 ] && [ "$gpus_per_node" -gt 0 ]; then
    probe
  fi
  local listed args=() key uid='' object kind name
  if [ -n "$credentials_secret" ] && [ -z "$named_secret_exists" ]; then
    args+=(--credentials-secret "$credentials_secret")
    for key in "${s3_required_keys[@]}"; do args+=(--s3-required "$key"); done
    for key in "${s3_optional_keys[@]}"; do args+=(--s3-optional "$key"); done
    for key in "${extra_keys[@]}"; do args+=(--extra "$key"); done
  fi
  [ -z "$ngc_pull_secret" ] || [ -n "$pull_created" ] || args+=(--ngc-pull-secret "$ngc_pull_secret")
  if ! listed=$("$tao" driver objects "$manifest_file" --record "$record_id" --out "$tmpdir/objects" "${args[@]}" 2>"$tmpdir/objects.err"); then
    LC_ALL=C tr -d '\000-\010\013-\037\177' <"$tmpdir/objects.err" | sed '$d' >&2
    die "$(tail -n 1 "$tmpdir/objects.err" | LC_ALL=C tr -d '\000-\037\177' | sed 's/^tao-k8s: //')"
  fi
  cat "$tmpdir/objects.err" >&2
  "$tao" lint --select redaction --color never "$manifest_file" >&2 || die "the manifest holds a credential"
  k apply --dry-run=server -f "$manifest_file" -o json >"$tmpdir/dry-run.json" || die "the API server refused the manifest (dry run)"
  "$tao" driver kept-fields "$manifest_file" "$tmpdir/dry-run.json" >&2 || die "the API server would drop fields of the manifest"
  "$tao" record mark "$record_id" SUBMITTED --source driver >/dev/null || die "cannot mark job record $record_id SUBMITTED"
  # From here until every object is attached to the $workload, a failure deletes what was
  # created: a Job left without its Secrets would wait for them forever.
  create_listed "$listed"
  for object in "${created[@]}"; do
    case $object in "$workload/$job/"*) uid=${object##*/} ;; esac
  done
  [ -n "$uid" ] || die "the $workload $job was not created"
  # The record names what the server created (and its uid) before anything else can fail.
  "$tao" record mark "$record_id" RUNNING --source driver --backend-ref "$ns/$job" >/dev/null ||
    die "cannot bind job record $record_id to $ns/$job"
  # The TTL deletes only the $workload and its pods: what this submit created is attached to
  # it, by a patch that names the object's own uid (refused for any other object).
  for object in "${created[@]}"; do
    IFS=/ read -r kind name key <<<"$object"
    [ "$kind" != "$workload" ] || continue
    k patch "${kind,,}" "$name" --type=merge -p "$("$tao" driver owner-patch "$key" "$job" "$uid" --kind "$workload")" >/dev/null ||
      die "the $kind $name could not be attached to the $workload"
  done
  # Everything belongs to the $workload now: its TTL, or job.sh cancel, removes it.
  record_open=0 created=()
  echo "$record_id $ns/$job"
}

# The record of this job (--record, else the one submit wrote): its Job's namespace/name, uid.
backend() {
  [ -n "$record_id" ] || record_id=$(head -c 64 "$record_file" 2>/dev/null) || die "no job record: submit first, or pass --record ID"
  record_id=${record_id%$'\n'}
  local ref
  ref=$("$tao" record show "$record_id" --field backend_ref) || die "job record $(shown "$record_id") names no Kubernetes object"
  ns=${ref%%/*} target=${ref#*/}
  target_uid=$("$tao" record show "$record_id" --field backend_uid 2>/dev/null) || target_uid=''
}

# The $workload of the record, read into the cluster directory.
read_job() {
  quiet k get "$resource" "$target" -o json >"$tmpdir/cluster/job.json" ||
    die "the $workload $ns/$target cannot be read (deleted by job.sh cancel, or by its TTL after it ended?)"
}

# The pods of the record's Job: by its uid (by its name for a record without one); a JobSet's,
# whose Jobs it recreates on a restart, by the record the driver stamped on them and the
# JobSet's name (the reader Pod of kept logs carries the record too).
pod_selector() {
  if [ "$workload" = JobSet ]; then
    echo "tao-k8s.io/job-record=$record_id,jobset.sigs.k8s.io/jobset-name=$target"
  elif [ -n "$target_uid" ]; then
    echo "batch.kubernetes.io/controller-uid=$target_uid"
  else
    echo "batch.kubernetes.io/job-name=$target"
  fi
}

# The Job and one line per pod, written by tao-k8s from kubectl's JSON; a Job that ended closes
# its record. A Job of the name that is not the record's is said so, and nothing is touched.
status() {
  find_tao_k8s
  resolve_context
  backend
  read_job
  quiet k get pods -l "$(pod_selector)" -o json >"$tmpdir/cluster/pods.json" ||
    die "the pods of the $workload $ns/$target cannot be listed"
  "$tao" job-status "$tmpdir/cluster" --record "$record_id" || exit 1
}

# The logs of the main container: the last tail_lines lines (--tail), 200 by default while the
# Job runs and the whole log once it ended. Once its pods are gone (the $workload deleted by
# its TTL or job.sh cancel, or left without pods), the logs they kept instead (kept_logs).
logs() {
  find_tao_k8s
  resolve_context
  backend
  quiet k get "$resource" "$target" -o json --ignore-not-found >"$tmpdir/cluster/job.json" ||
    die "the $workload $ns/$target cannot be read"
  if [ ! -s "$tmpdir/cluster/job.json" ]; then
    kept_logs "the $workload $ns/$target cannot be read (deleted by job.sh cancel, or by its TTL after it ended?)"
    return
  fi
  local state labels pods
  state=$("$tao" job-status "$tmpdir/cluster" --record "$record_id" --state) || exit 1
  labels=$(pod_selector)
  [ -n "$index" ] && labels="$labels,batch.kubernetes.io/job-completion-index=$index"
  pods=$(quiet k get pods -l "$labels" -o name) || die "the pods of the $workload $ns/$target cannot be listed"
  if [ -z "$pods" ]; then
    kept_logs "the pods ${index:+of index $index }of the $workload $ns/$target are gone"
    return
  fi
  if [ -z "$tail_lines" ]; then
    case $state in
      succeeded | failed) tail_lines=-1 ;;
      *) tail_lines=200 ;;
    esac
  fi
  local args=(--prefix --tail "$tail_lines" -c "$main_container" --max-log-requests "$((nodes + 5))")
  [ "$follow" = 1 ] && args+=(--follow)
  # A pod whose node is gone is listed until it is collected, but its log cannot be read.
  if ! k logs -l "$labels" "${args[@]}"; then
    [ "$follow" = 0 ] || exit 1
    kept_logs "kubectl cannot read the logs of the pods ${index:+of index $index }of the $workload $ns/$target (above; their node may be gone)"
  fi
}

# The logs the pods kept beyond their life (spec.logs.keep), once they are gone ($1 says how);
# where they are is tao-k8s's answer, from the manifest: on a volume of the pods (tier A), or in
# S3 (tier C). Without kept logs, $1 and how to keep them next time.
kept_logs() {
  local answer kind place
  answer=$("$tao" driver kept-logs "$manifest_file" --record "$record_id") || exit 1
  kind=${answer%%$'\n'*} place=${answer#*$'\n'}
  [ "$follow" = 0 ] || note "--follow: the kept logs are read once"
  case $kind in
    mounted | s3) note "$1: reading the kept logs of job record $record_id from $(shown "$place")" ;;
    *) die "$1; $(shown "$place"): with spec.logs.keep: true in the request, the logs outlive the pods" ;;
  esac
  if [ "$kind" = mounted ]; then
    read_mounted_logs "$place"
  else
    read_s3_logs "$place"
  fi
}

# Wait until the Pod $1 of uid $2 ends, polling every poll_seconds for at most 120 s; print its
# phase (Succeeded or Failed), or its last phase and return 1 (gone, another object, or late).
wait_pod() {
  local deadline=$((SECONDS + 120)) seen
  while :; do
    seen=$(k get pod "$1" -o jsonpath='{.metadata.uid} {.status.phase}' --ignore-not-found 2>/dev/null || true)
    case $seen in
      "$2 Succeeded" | "$2 Failed") printf '%s' "${seen#* }"; return 0 ;;
      "$2 "*) ;;
      *) printf 'gone'; return 1 ;;
    esac
    if [ "$SECONDS" -ge "$deadline" ]; then
      printf '%s' "${seen#* }"
      return 1
    fi
    sleep "$poll_seconds"
  done
}

# Tier A: a reader Pod that tao-k8s wrote mounts the volume of the kept logs read-only and
# prints them; its log is printed here, and it is deleted by its uid (by the EXIT clean-up when
# anything fails).
read_mounted_logs() {
  local can listed kind name uid phase keep=${#created[@]}
  for can in create delete; do
    [ "$(k auth can-i "$can" pods 2>/dev/null || true)" = yes ] ||
      die "not allowed to $can pods in namespace $ns: job.sh logs reads the kept logs in $(shown "$1") with a short-lived Pod"
  done
  listed=$("$tao" driver log-reader "$manifest_file" --record "$record_id" ${index:+--index "$index"} \
    ${tail_lines:+--tail "$tail_lines"} --out "$tmpdir/logs/objects") || exit 1
  create_listed "$listed"
  IFS=/ read -r kind name uid <<<"${created[$keep]}"
  phase=$(wait_pod "$name" "$uid") ||
    die "the reader Pod $name did not end within 120 s (${phase:-no phase}): the kept logs are in $(shown "$1")"
  if [ "$phase" = Succeeded ]; then
    quiet k logs "pod/$name" || die "cannot read the log of the reader $kind $name"
  else
    quiet k logs "pod/$name" | tail -n 20 | LC_ALL=C tr -d '\000-\010\013-\037\177' >&2 || true
    die "the reader $kind $name read no kept log (above)"
  fi
  forget_since "$keep" logs/deletes
}

# Tier C: the kept logs in S3, read with the local aws CLI and the submitter's own environment
# (its credentials never pass through this script); S3_ENDPOINT_URL is its --endpoint-url.
read_s3_logs() {
  local prefix=$1 listed name uri endpoint=()
  command -v aws >/dev/null 2>&1 ||
    die "MISSING: aws not found on PATH: the kept logs of job record $record_id are in $(shown "$prefix"); install the AWS CLI (https://aws.amazon.com/cli/), or fetch them from there another way"
  [ -z "${S3_ENDPOINT_URL:-}" ] || endpoint=(--endpoint-url "$S3_ENDPOINT_URL")
  quiet aws "${endpoint[@]}" s3 ls "$prefix" >"$tmpdir/s3-listing" ||
    die "no log was kept under $(shown "$prefix"), or aws cannot list it (above)"
  listed=$("$tao" driver s3-logs "$manifest_file" --record "$record_id" --listing "$tmpdir/s3-listing" \
    ${index:+--index "$index"}) || exit 1
  while read -r name uri <&3; do
    printf '==> %s <==\n' "$name"
    if [ -n "$tail_lines" ] && [ "$tail_lines" != -1 ]; then
      quiet aws "${endpoint[@]}" s3 cp "$uri" - | tail -n "$tail_lines"
    else
      quiet aws "${endpoint[@]}" s3 cp "$uri" -
    fi || die "cannot read $(shown "$uri") with aws (above)"
  done 3<<<"$listed"
}

# Delete what the job record created, each by its uid, the Job first (waited for at most five
# minutes). A Job of the name that is not the record's (replaced) is said so: nothing is touched.
cancel() {
  find_tao_k8s
  resolve_context
  backend
  local listed
  quiet k get "$resource" "$target" -o json --ignore-not-found >"$tmpdir/cluster/job.json" ||
    die "cannot look for the $workload $ns/$target"
  if [ -s "$tmpdir/cluster/job.json" ]; then
    "$tao" job-status "$tmpdir/cluster" --record "$record_id" --state >/dev/null || exit 1
  fi
  listed=$("$tao" driver deletes --record "$record_id" --out "$tmpdir/deletes") || exit 1
  delete_listed "$listed" 1 || die "not everything job record $record_id created was deleted (above): run job.sh cancel again"
  "$tao" record mark "$record_id" CANCELED --source driver >/dev/null 2>&1 ||
    note "job record $record_id had already ended; its state is kept"
}

case $verb in
  preflight) preflight; gates; resources_gate; echo "preflight passed for $job in $ns on $where" ;;
  submit) submit ;;
  status) status ;;
  logs) logs ;;
  cancel) cancel ;;
  # The pull Secret the probe needed belongs to no Job: a submit makes its own.
  probe) find_tao_k8s; resolve_context; reprobe=1; probe; forget_since 0 rollback ;;
esac
