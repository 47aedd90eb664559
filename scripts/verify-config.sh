# tao-k8s: run in an initContainer of every pod, with the Job's own image, before the action.
# The action's spec file is staged in a ConfigMap together with its sha256; this checks that
# what the pod sees is what was staged. The action reads that same read-only mount, on every
# rank of a multi-node Job. Inputs arrive through the environment only:
#   TAO_K8S_CONFIG_SRC      path of the staged spec file (a read-only ConfigMap mount)
#   TAO_K8S_CONFIG_SHA256   its expected sha256, lowercase hex
# Uses sha256sum when the image has it, else python3's hashlib. Exits 1 with a tao-k8s message
# on any mismatch or missing input.
set -u
src="${TAO_K8S_CONFIG_SRC:-}"
want="${TAO_K8S_CONFIG_SHA256:-}"

if [ -z "$src" ] || [ -z "$want" ]; then
  echo "tao-k8s: TAO_K8S_CONFIG_SRC and TAO_K8S_CONFIG_SHA256 must both be set to check the config spec" >&2
  exit 1
fi
case "$want" in
  *[!0-9a-f]*) valid=no ;;
  *) if [ "${#want}" -eq 64 ]; then valid=yes; else valid=no; fi ;;
esac
if [ "$valid" = no ]; then
  echo "tao-k8s: TAO_K8S_CONFIG_SHA256 is '$want', not a sha256 in lowercase hex" >&2
  exit 1
fi

if command -v sha256sum >/dev/null 2>&1; then
  hasher=sha256sum
elif command -v python3 >/dev/null 2>&1; then
  hasher=python3
else
  echo "tao-k8s: cannot check the config spec $src: the image has neither sha256sum nor python3" >&2
  exit 1
fi

# Prints the lowercase hex sha256 of the file $1; reads it on stdin so that no file name
# ever changes sha256sum's output.
digest() {
  if [ "$hasher" = sha256sum ]; then
    sha256sum <"$1" | cut -d ' ' -f 1
  else
    python3 -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())' <"$1"
  fi
}

if [ ! -f "$src" ]; then
  echo "tao-k8s: the config spec $src does not exist: is the ConfigMap holding it mounted there?" >&2
  exit 1
fi
if [ ! -r "$src" ]; then
  echo "tao-k8s: the config spec $src is not readable" >&2
  exit 1
fi
got=$(digest "$src")
if [ -z "$got" ]; then
  echo "tao-k8s: could not compute the sha256 of the config spec $src" >&2
  exit 1
fi
if [ "$got" != "$want" ]; then
  echo "tao-k8s: the config spec $src has sha256 $got, expected $want: it changed after it was staged" >&2
  exit 1
fi

echo "tao-k8s: config spec verified (sha256 $want)"
