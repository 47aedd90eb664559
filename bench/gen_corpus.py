#!/usr/bin/env python3
"""Generate a corpus of realistic Kubernetes documents for the lint benchmark.

Usage: gen_corpus.py OUT_DIR [DOCUMENTS] [FILES]
Writes OUT_DIR/stream.yaml (all documents in one stream) and OUT_DIR/files/NNNN.yaml (the same
documents spread over FILES files). A few documents in each hundred carry obviously fake
credentials, so that the redaction rules have work to do, and a few others a schema error (an
unknown field or a value of the wrong type). OUT_DIR/planted.json lists both: the document's
index, kind, name, first and last line in stream.yaml, and what was planted. Deterministic for
given arguments.
"""
import json
import os
import sys

# What is planted where (a planted credential and a schema error never share a document).
def planted_credential(i):
    return i % 50 == 7 if i % 3 else i % 50 == 11

def planted_schema_error(i):
    if i % 3:
        return {13: "unknown field", 19: "wrong type"}.get(i % 25)
    return "wrong type" if i % 150 == 75 else None

def job(i):
    nodes = 1 + i % 4
    indexed = nodes > 1
    name = f"train-{i:05d}"
    env = [f"""            - name: TAO_LOG_LEVEL
              value: info"""]
    if planted_credential(i):
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
    error = planted_schema_error(i)
    # An unknown container field (a typo of `resources`), or a TTL written as a duration.
    typo = "          resource: {limits: {nvidia.com/gpu: \"8\"}}\n" if error == "unknown field" else ""
    ttl = "1d" if error == "wrong type" else "86400"
    job = f"""apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: vision
  labels: {{app.kubernetes.io/name: tao, app.kubernetes.io/component: train}}
spec:
  backoffLimit: 0
  ttlSecondsAfterFinished: {ttl}
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
{typo}          resources:
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
    secret = f"\n  aws.ini: \"aws_access_key_id = AKIA{'FAKEFAKE'}{i:08d}\"" if planted_credential(i) else ""
    immutable = "immutable: \"yes\"\n" if planted_schema_error(i) else ""
    return f"""apiVersion: v1
kind: ConfigMap
metadata:
  name: spec-{i:05d}
  namespace: vision
{immutable}data:
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
    docs, marks, i = [], [], 0
    while len(docs) < total:
        new = job(i) if i % 3 else [configmap(i)]
        # The planted document is the last one of the group (the Job, after its Service).
        marks += [None] * (len(new) - 1) + [(planted_credential(i), planted_schema_error(i))]
        docs += new
        i += 1
    docs = docs[:total]
    planted, line = [], 1
    for n, (doc, mark) in enumerate(zip(docs, marks)):
        lines = doc.count("\n")
        if mark and (mark[0] or mark[1]):
            head = dict(l.strip().split(": ", 1) for l in doc.splitlines()[:4] if l.startswith(("kind:", "  name:")))
            planted.append({"document": n, "kind": head["kind"], "name": head["name"],
                            "firstLine": line, "lastLine": line + lines - 1,
                            "credential": mark[0], "schemaError": mark[1]})
        line += lines + 1  # the `---` separator
    os.makedirs(os.path.join(out, "files"), exist_ok=True)
    with open(os.path.join(out, "stream.yaml"), "w") as f:
        f.write("---\n".join(docs))
    per = (len(docs) + files - 1) // files
    for n in range(files):
        with open(os.path.join(out, "files", f"{n:04d}.yaml"), "w") as f:
            f.write("---\n".join(docs[n * per:(n + 1) * per]))
    with open(os.path.join(out, "planted.json"), "w") as f:
        json.dump({"documents": len(docs), "planted": planted}, f, indent=1)
    size = os.path.getsize(os.path.join(out, "stream.yaml"))
    creds = sum(p["credential"] for p in planted)
    errors = sum(bool(p["schemaError"]) for p in planted)
    print(f"{len(docs)} documents, {size / 1e6:.1f} MB, in one stream and in {files} files under {out}"
          f" ({creds} fake credentials, {errors} schema errors planted)")

if __name__ == "__main__":
    main()
