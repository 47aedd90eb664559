"""Check rendered JobSets with tools this project did not write.

Each JobSet of the given YAML files is validated with the `jsonschema` package against the
openAPIV3Schema of the pinned upstream JobSet CRD (schemas/crds/), made strict as
`kubectl apply --validate=strict` is: a field the schema does not define is an error. The Job
each JobSet creates (its replicated Job's template, as a batch/v1 Job) is written to OUT_DIR,
for kubernetes-validate to check against the built-in Job of each target version.

usage: jobset-oracle.py CRD OUT_DIR MANIFEST...
"""

import json
import os
import sys

import jsonschema
import yaml


def strict(schema):
    """The schema with unknown fields refused where it lists the fields of an object."""
    if isinstance(schema, dict):
        schema = {k: strict(v) for k, v in schema.items()}
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def main(crd_path, out_dir, manifests):
    with open(crd_path) as f:
        crd = yaml.safe_load(f)
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2")
    validator = jsonschema.Draft7Validator(strict(version["schema"]["openAPIV3Schema"]))
    checked = failed = 0
    for path in manifests:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        for doc in docs:
            if doc.get("kind") != "JobSet":
                continue
            checked += 1
            for error in validator.iter_errors(doc):
                failed += 1
                where = ".".join(str(p) for p in error.absolute_path)
                print(f"{path}: {where}: {error.message}", file=sys.stderr)
            for i, rjob in enumerate(doc["spec"]["replicatedJobs"]):
                job = {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {
                        "name": f"{doc['metadata']['name']}-{rjob['name']}-0",
                        "namespace": doc["metadata"].get("namespace", "default"),
                        **rjob["template"].get("metadata", {}),
                    },
                    "spec": rjob["template"]["spec"],
                }
                name = os.path.basename(path).rsplit(".", 1)[0]
                with open(os.path.join(out_dir, f"{name}-job-{i}.yaml"), "w") as f:
                    yaml.safe_dump(job, f)
    if checked == 0:
        print("no JobSet among the manifests", file=sys.stderr)
        return 1
    print(f"jsonschema against the JobSet CRD: {checked} JobSets, {failed} errors")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
