#!/usr/bin/env python3
"""A large cluster as kubectl returns it, for bench/gate.sh: NODES GPU nodes of 8 GPUs
(a quarter tainted for another team), PODS running pods spread over them, claims and the
server version. Usage: gen_cluster.py DIR NODES PODS"""
import json
import sys

out, nodes, pods = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def node(i):
    taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    if i % 4 == 3:
        taints.append({"key": "dedicated", "value": "other-team", "effect": "NoSchedule"})
    alloc = {"cpu": "128", "memory": "2Ti", "ephemeral-storage": "1800Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"gpu-node-{i}", "labels": {"kubernetes.io/hostname": f"gpu-node-{i}",
                                                          "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
            "spec": {"taints": taints},
            "status": {"allocatable": alloc, "capacity": alloc,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(i):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p-{i}", "namespace": f"team-{i % 7}"},
            "spec": {"nodeName": f"gpu-node-{i % nodes}",
                     "containers": [{"name": "main", "resources": {
                         "requests": {"cpu": "500m", "memory": "2Gi"},
                         "limits": {"nvidia.com/gpu": "1" if i % 5 == 0 else "0"}}}]},
            "status": {"phase": "Running"}}


def write(name, items):
    with open(f"{out}/{name}", "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f, indent=4)


write("nodes.json", [node(i) for i in range(nodes)])
write("pods.json", [pod(i) for i in range(pods)])
write("pvcs.json", [{"metadata": {"name": "tao-results"}, "status": {"phase": "Bound"}}])
with open(f"{out}/version.json", "w") as f:
    json.dump({"major": "1", "minor": "30", "gitVersion": "v1.30.4"}, f)
