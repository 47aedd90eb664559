#!/usr/bin/env python3
"""Generate action requests for the render benchmark (bench/side-by-side.sh).

Usage: gen_requests.py EXAMPLE OUT_DIR COUNT
Writes COUNT variants of the EXAMPLE request (its name and GPU count vary) as
OUT_DIR/requests/NNNN.yaml, and the same requests as one helm values file,
OUT_DIR/values-list.yaml (`requests: [...]`, JSON being YAML). Deterministic.
"""
import json
import os
import sys

import yaml


def main():
    example, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(example, encoding="utf-8") as f:
        text = f.read()
    name = yaml.safe_load(text)["metadata"]["name"]
    os.makedirs(os.path.join(out, "requests"), exist_ok=True)
    values = []
    for i in range(count):
        variant = text.replace(name, f"{name}-{i:04d}").replace(
            "gpusPerNode: 8", f"gpusPerNode: {1 + i % 8}")
        with open(os.path.join(out, "requests", f"{i:04d}.yaml"), "w", encoding="utf-8") as f:
            f.write(variant)
        values.append(yaml.safe_load(variant))
    with open(os.path.join(out, "values-list.yaml"), "w", encoding="utf-8") as f:
        json.dump({"requests": values}, f)
    print(f"{count} requests under {out}")


if __name__ == "__main__":
    main()
