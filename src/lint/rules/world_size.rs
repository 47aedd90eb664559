use crate::lint::{Document, Finding, Meta, Rule, steps};
use crate::yaml::{Step, Value};

crate::rule! {
    /// What it checks: in an Indexed Job, the `WORLD_SIZE` and `NNODES` env values of every
    /// container and init container that are integers written in the manifest: each must equal
    /// `spec.completions`, the number of pods (nodes) the Job runs. Values from `valueFrom` or
    /// that expand `$(VAR)` are not findings.
    ///
    /// Why it matters: TAO reads `WORLD_SIZE` (and torchrun `NNODES`) as the node count. Too
    /// large, and the rendezvous waits for nodes that never come until it times out; too small,
    /// and the extra pods fail to join, or train on their own, writing to the same results.
    ///
    /// Example: `completions: 4` with `env: [{name: WORLD_SIZE, value: "8"}]`, GPUs counted
    /// instead of nodes (4 nodes of 2 GPUs).
    ///
    /// Fix: set `WORLD_SIZE` and `NNODES` to `spec.completions`; GPUs per node go in
    /// `NPROC_PER_NODE` (or `NUM_GPU_PER_NODE`).
    pub struct WorldSize {
        code: "TK308",
        name: "world-size",
        group: Gpu,
        severity: Error,
    }
}

impl Rule for WorldSize {
    fn meta(&self) -> &'static Meta {
        &Self::META
    }

    fn check(&self, doc: &Document, out: &mut Vec<Finding>) {
        let indexed = matches!(doc.at(&steps("spec.completionMode")).map(|n| &n.value), Some(Value::Str(m)) if m == "Indexed");
        let Some(Value::Int(completions)) = doc.at(&steps("spec.completions")).map(|n| &n.value)
        else {
            return;
        };
        if doc.kind != "Job" || !indexed {
            return;
        }
        let Some(pod) = doc.pod_spec_path() else {
            return;
        };
        let Some(spec) = doc.at(&pod) else {
            return;
        };
        for field in ["initContainers", "containers"] {
            let Some(Value::Seq(containers)) = spec.get(field).map(|n| &n.value) else {
                continue;
            };
            for (i, container) in containers.iter().enumerate() {
                let Some(Value::Seq(env)) = container.get("env").map(|n| &n.value) else {
                    continue;
                };
                for (j, var) in env.iter().enumerate() {
                    let Some(Value::Str(var_name)) = var.get("name").map(|n| &n.value) else {
                        continue;
                    };
                    let Some(value) = var.get("value") else {
                        continue;
                    };
                    let found = match &value.value {
                        Value::Int(n) => Some(*n),
                        Value::Str(s) => s.trim().parse::<i64>().ok(),
                        _ => None,
                    };
                    let Some(found) = found.filter(|n| n != completions) else {
                        continue;
                    };
                    if var_name != "WORLD_SIZE" && var_name != "NNODES" {
                        continue;
                    }
                    let name = match container.get("name").map(|n| &n.value) {
                        Some(Value::Str(s)) => s.as_str(),
                        _ => "?",
                    };
                    let mut path = pod.clone();
                    path.extend([
                        Step::Key(field.into()),
                        Step::Index(i),
                        Step::Key("env".into()),
                        Step::Index(j),
                        Step::Key("value".into()),
                    ]);
                    out.push(Finding {
                        message: format!(
                            "{}: {var_name} of container `{name}` is {found}, but the Indexed Job runs {completions} pods (`spec.completions`)",
                            doc.label()
                        ),
                        help: Some(format!(
                            "set {var_name} to \"{completions}\": TAO reads it as the number of nodes; GPUs per node go in NPROC_PER_NODE"
                        )),
                        path,
                        span: value.span.clone(),
                    });
                }
            }
        }
    }
}
