#!/usr/bin/env python3
"""Generate a corpus of realistic Kubernetes documents for the lint benchmark.

Usage: gen_corpus.py OUT_DIR [DOCUMENTS] [FILES]
Writes OUT_DIR/stream.yaml (all documents in one stream) and OUT_DIR/files/NNNN.yaml (the same
documents spread over FILES files). A few documents in each hundred carry obviously fake
credentials, so that the redaction rules have work to do. Deterministic for given arguments.
"""
import os
import sys

def job(i):
    nodes = 1 + i % 4
    indexed = nodes > 1
    name = f"train-{i:05d}"
    env = [f"""            - name: TAO_LOG_LEVEL
              value: info"""]
    if i % 50 == 7:
        env.append(f"""            - name: HF_TOKEN
              value: hf_{'FAKE' * 8}{i:02d}""")
    if indexed:
        env += [f"""            - name: WORLD_SIZE
              value: "{nodes}\"""", f"""            - name: MASTER_ADDR
              value: {name}-0.{name}"""]
    extra = f"""  completionMode: Indexed
  completions: {nodes}
  parallelism: {nodes}
""" if indexed else ""
    sub = f"      subdomain: {name}\n" if indexed else ""
    job = f"""apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: vision
  labels: {{app.kubernetes.io/name: tao, app.kubernetes.io/component: train}}
spec:
  backoffLimit: 0
  ttlSecondsAfterFinished: 86400
{extra}  template:
    spec:
      restartPolicy: Never
{sub}      imagePullSecrets: [{{name: ngc-pull}}]
      tolerations: [{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}]
      containers:
        - name: tao
          image: nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt
          command: [dino]
          args: [train, -e, /data/specs/train.yaml, results_dir=/results/{name}]
          env:
{chr(10).join(env)}
          resources:
            limits: {{nvidia.com/gpu: "8", cpu: "32", memory: 256Gi}}
            requests: {{cpu: "32", memory: 256Gi}}
          volumeMounts:
            - {{name: data, mountPath: /data, readOnly: true}}
            - {{name: results, mountPath: /results}}
            - {{name: shm, mountPath: /dev/shm}}
      volumes:
        - {{name: data, persistentVolumeClaim: {{claimName: tao-data, readOnly: true}}}}
        - {{name: results, persistentVolumeClaim: {{claimName: tao-results}}}}
        - {{name: shm, emptyDir: {{medium: Memory, sizeLimit: 16Gi}}}}
"""
    svc = f"""apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: vision
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {{batch.kubernetes.io/job-name: {name}}}
  ports: [{{name: rendezvous, port: 29500, targetPort: 29500}}]
""" if indexed else None
    return [d for d in (svc, job) if d]

def configmap(i):
    secret = f"\n  aws.ini: \"aws_access_key_id = AKIA{'FAKEFAKE'}{i:08d}\"" if i % 50 == 11 else ""
    return f"""apiVersion: v1
kind: ConfigMap
metadata:
  name: spec-{i:05d}
  namespace: vision
data:
  spec.yaml: |
    train:
      num_gpus: 8
      num_epochs: {10 + i % 90}
    dataset:
      train_data_sources:
        - image_dir: /data/coco/train2017
          json_file: /data/coco/annotations/instances_train2017.json
    results_dir: /results/run-{i:05d}{secret}
"""

def main():
    out, total, files = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10000, int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    docs, i = [], 0
    while len(docs) < total:
        docs += job(i) if i % 3 else [configmap(i)]
        i += 1
    docs = docs[:total]
    os.makedirs(os.path.join(out, "files"), exist_ok=True)
    with open(os.path.join(out, "stream.yaml"), "w") as f:
        f.write("---\n".join(docs))
    per = (len(docs) + files - 1) // files
    for n in range(files):
        with open(os.path.join(out, "files", f"{n:04d}.yaml"), "w") as f:
            f.write("---\n".join(docs[n * per:(n + 1) * per]))
    size = os.path.getsize(os.path.join(out, "stream.yaml"))
    print(f"{len(docs)} documents, {size / 1e6:.1f} MB, in one stream and in {files} files under {out}")

if __name__ == "__main__":
    main()
