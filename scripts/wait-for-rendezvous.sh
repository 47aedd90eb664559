# tao-k8s: run in an initContainer of every pod of a multi-node Job, with the Job's own
# image. TAO's entrypoint resolves MASTER_ADDR once and, when that fails, trains alone on
# every node. This waits, bounded, until the rank-0 pod's DNS name resolves, and fails the pod
# with a clear message when it does not. Inputs arrive through the environment only:
#   MASTER_ADDR                  the name to resolve, <job>-0.<service>
#   TAO_K8S_RENDEZVOUS_TIMEOUT   seconds to wait (default 300)
set -u
timeout="${TAO_K8S_RENDEZVOUS_TIMEOUT:-300}"
name="${MASTER_ADDR:?MASTER_ADDR is not set}"

resolves() {
  if command -v getent >/dev/null 2>&1; then
    getent hosts "$1" >/dev/null 2>&1
  else
    python3 -c 'import socket, sys; socket.getaddrinfo(sys.argv[1], None)' "$1" >/dev/null 2>&1
  fi
}

if ! command -v getent >/dev/null 2>&1 && ! command -v python3 >/dev/null 2>&1; then
  echo "tao-k8s: cannot check that $name resolves: the image has neither getent nor python3" >&2
  exit 1
fi

waited=0
while ! resolves "$name"; do
  if [ "$waited" -ge "$timeout" ]; then
    echo "tao-k8s: the rendezvous host $name did not resolve within ${timeout}s; not starting, since every node would train alone" >&2
    exit 1
  fi
  sleep 2
  waited=$((waited + 2))
done
echo "tao-k8s: rendezvous host $name resolves after ${waited}s"
