#!/usr/bin/env python3
"""A Jinja2 + PyYAML renderer of action requests, the Python baseline of bench/side-by-side.sh.

Usage: jinja_render.py REQUEST|DIR... [--count N]
Reads each request (every *.yaml of a directory, in name order) with PyYAML and prints the Job
that `tao-k8s render` prints for it: the same objects, with the same fields. `--count N` renders
each request N times in the one process. It covers what bench/ renders (one node, `args` or
`shell` command, PVC mounts, env, resources, pull secrets, labels, TTL); no verification.
"""
import argparse
import json
import os
import sys

import jinja2
import yaml

TEMPLATE = """\
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ name|tojson }}
  namespace: {{ namespace|tojson }}
  labels:
{%- for key, value in labels|dictsort %}
    {{ key|tojson }}: {{ value|tojson }}
{%- endfor %}
spec:
  backoffLimit: {{ backoffLimit }}
  ttlSecondsAfterFinished: {{ ttl }}
  template:
    metadata:
      labels:
{%- for key, value in labels|dictsort %}
        {{ key|tojson }}: {{ value|tojson }}
{%- endfor %}
    spec:
      restartPolicy: Never
{%- if gpus %}
      tolerations:
        - {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
{%- endif %}
{%- if pullSecrets %}
      imagePullSecrets:
{%- for secret in pullSecrets %}
        - name: {{ secret|tojson }}
{%- endfor %}
{%- endif %}
      containers:
        - name: "tao"
          image: {{ image|tojson }}
          command: {{ command|tojson }}
{%- if args %}
          args: {{ args|tojson }}
{%- endif %}
{%- if env %}
          env:
{%- for key, value in env|dictsort %}
            - name: {{ key|tojson }}
              value: {{ value|string|tojson }}
{%- endfor %}
{%- endif %}
          resources:
            limits:
{%- for key, value in limits|dictsort %}
              {{ key|tojson }}: {{ value|tojson }}
{%- endfor %}
            requests:
{%- for key, value in requests|dictsort %}
              {{ key|tojson }}: {{ value|tojson }}
{%- endfor %}
          volumeMounts:
{%- for m in mounts %}
            - name: {{ m.name|tojson }}
              mountPath: {{ m.mountPath|tojson }}
{%- if m.subPath is defined %}
              subPath: {{ m.subPath|tojson }}
{%- endif %}
{%- if m.readOnly is defined and m.readOnly %}
              readOnly: true
{%- endif %}
{%- endfor %}
      volumes:
{%- for m in mounts %}
        - name: {{ m.name|tojson }}
          persistentVolumeClaim:
            claimName: {{ m.persistentVolumeClaim|tojson }}
{%- if m.readOnly is defined and m.readOnly %}
            readOnly: true
{%- endif %}
{%- endfor %}
"""


def context(request):
    meta, spec = request["metadata"], request["spec"]
    name = meta["name"]
    resources = spec.get("resources", {})
    if resources.get("nodes", 1) != 1:
        raise SystemExit("jinja_render.py: only one-node requests")
    gpus = resources.get("gpusPerNode", 0)
    command = spec["command"]
    if "args" in command:
        argv, rest = command["args"][:1], command["args"][1:]
    elif "shell" in command:
        argv, rest = ["/bin/sh", "-c", command["shell"]], []
    else:
        raise SystemExit("jinja_render.py: only `args` and `shell` commands")
    requests = {k: str(resources[k]) for k in ("cpu", "memory") if k in resources}
    limits = dict(requests, **({"nvidia.com/gpu": str(gpus)} if gpus else {}))
    labels = dict(meta.get("labels", {}))
    labels.update({
        "app.kubernetes.io/component": spec["action"],
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/managed-by": "tao-k8s",
        "app.kubernetes.io/name": "tao",
        "tao-k8s.io/network-arch": spec["networkArch"],
    })
    return {
        "name": name,
        "namespace": meta.get("namespace", os.environ.get("TAO_K8S_NAMESPACE", "default")),
        "labels": labels,
        "backoffLimit": spec.get("backoffLimit", 0),
        "ttl": spec.get("ttlSecondsAfterFinished", 604800),
        "gpus": gpus,
        "pullSecrets": spec.get("imagePullSecrets", [f"{name}-ngc"]),
        "image": spec["image"],
        "command": argv,
        "args": rest,
        "env": spec.get("env", {}),
        "limits": limits,
        "requests": requests,
        "mounts": spec["storage"]["mounts"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--count", type=int, default=1)
    opts = parser.parse_args()
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.policies["json.dumps_function"] = lambda v, **kw: json.dumps(v, ensure_ascii=False)
    template = env.from_string(TEMPLATE)
    files = []
    for path in opts.paths:
        if os.path.isdir(path):
            files += sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".yaml"))
        else:
            files.append(path)
    out = sys.stdout
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for _ in range(opts.count):
            out.write(template.render(context(yaml.safe_load(text))))


if __name__ == "__main__":
    main()
