use crate::kube::quantity;
use crate::lint::{Document, Finding, Findings, Rule};
use crate::yaml::{Node, Step, Value};

/// The extended resource, and the taint the NVIDIA GPU Operator and most clouds put on GPU
/// nodes.
const GPU: &str = "nvidia.com/gpu";

crate::rule! {
    /// What it checks: a pod spec (of a Pod, Job, CronJob, Deployment…) whose containers or init
    /// containers have an `nvidia.com/gpu` limit above zero, but which has no toleration for the
    /// `nvidia.com/gpu` taint with effect `NoSchedule`. Tolerations that count:
    /// `key: nvidia.com/gpu` with `operator: Exists`, or with `Equal` (the default) and any
    /// value; or one without a key and with `operator: Exists`, which tolerates every taint.
    /// Their `effect` must be `NoSchedule` or unset.
    ///
    /// Why it matters: GPU nodes are often tainted `nvidia.com/gpu:NoSchedule` so that other
    /// workloads stay off them. Without the toleration the pod stays `Pending` forever, which
    /// never fails a Job. A warning, because some clusters do not taint their GPU nodes, and
    /// some add the toleration with an admission controller (ExtendedResourceToleration).
    ///
    /// Example: `limits: {nvidia.com/gpu: 8}` in a pod spec without `tolerations`.
    ///
    /// Fix: add `tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]` to
    /// the pod spec.
    pub struct GpuToleration {
        code: "TK312",
        name: "gpu-toleration",
        group: Gpu,
        severity: Warning,
    }
}

impl Rule for GpuToleration {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some((pod, spec)) = doc.pod_spec() else {
            return;
        };
        if let Some(Value::Seq(tolerations)) = spec.get("tolerations").map(|n| &n.value)
            && tolerations.iter().any(tolerates_gpu)
        {
            return;
        }
        for field in ["initContainers", "containers"] {
            let Some(Value::Seq(containers)) = spec.get(field).map(|n| &n.value) else {
                continue;
            };
            for (i, container) in containers.iter().enumerate() {
                let Some(limit) = container
                    .get("resources")
                    .and_then(|r| r.get("limits"))
                    .and_then(|l| l.get(GPU))
                else {
                    continue;
                };
                let count = match &limit.value {
                    Value::Int(n) => *n as f64,
                    Value::Str(s) => quantity::parse(s).unwrap_or(0.0),
                    _ => 0.0,
                };
                if count <= 0.0 {
                    continue;
                }
                let name = match container.get("name").map(|n| &n.value) {
                    Some(Value::Str(s)) => s.as_str(),
                    _ => "?",
                };
                let mut path = pod.to_vec();
                path.extend([
                    Step::Key(field.into()),
                    Step::Index(i),
                    Step::Key("resources".into()),
                    Step::Key("limits".into()),
                    Step::Key(GPU.into()),
                ]);
                out.push(Finding {
                    message: format!(
                        "{}: container `{name}` asks for {GPU}, but the pod does not tolerate the `{GPU}` taint GPU nodes often carry",
                        doc.label()
                    ),
                    help: Some(format!(
                        "add `tolerations: [{{key: {GPU}, operator: Exists, effect: NoSchedule}}]` to the pod spec, or the pod may stay Pending"
                    )),
                    path,
                    span: limit.span.clone(),
                });
                return;
            }
        }
    }
}

/// Whether a toleration tolerates the `nvidia.com/gpu` taint with effect `NoSchedule`.
fn tolerates_gpu(toleration: &Node) -> bool {
    let text = |k: &str| match toleration.get(k).map(|n| &n.value) {
        Some(Value::Str(s)) => Some(s.as_str()),
        _ => None,
    };
    let effect_ok = matches!(text("effect"), None | Some("" | "NoSchedule"));
    let key = text("key").unwrap_or("");
    let operator = text("operator")
        .filter(|o| !o.is_empty())
        .unwrap_or("Equal");
    effect_ok && matches!((key, operator), ("", "Exists") | (GPU, "Exists" | "Equal"))
}
