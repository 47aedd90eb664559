use crate::kube::quantity;
use crate::lint::{Document, Finding, Findings, Rule};
use crate::yaml::{Node, Step, Value};

crate::rule! {
    /// What it checks: a pod (of a Pod, Job, CronJob, Deployment…) with a memory-backed
    /// emptyDir (`medium: Memory`, usually mounted at `/dev/shm`) whose `sizeLimit` is larger
    /// than the memory limit of a container or init container that mounts it.
    ///
    /// Why it matters: a memory-backed volume is tmpfs, and its pages count against the memory
    /// limit of the container that writes them. PyTorch data loaders fill `/dev/shm`; before it
    /// reaches its `sizeLimit`, the container reaches its memory limit and is OOM-killed, which
    /// looks like a crash in training rather than a full disk.
    ///
    /// Example: `emptyDir: {medium: Memory, sizeLimit: 64Gi}` mounted by a container with
    /// `limits: {memory: 32Gi}`.
    ///
    /// Fix: keep `sizeLimit` well below the memory limit of every container that mounts the
    /// volume (a common choice is half of it), or raise the memory limit.
    pub struct ShmMemory {
        code: "TK309",
        name: "shm-memory",
        group: Gpu,
        severity: Error,
    }
}

impl Rule for ShmMemory {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some((pod, spec)) = doc.pod_spec() else {
            return;
        };
        let Some(Value::Seq(volumes)) = spec.get("volumes").map(|n| &n.value) else {
            return;
        };
        let containers: Vec<&Node> = ["initContainers", "containers"]
            .iter()
            .filter_map(|f| match spec.get(f).map(|n| &n.value) {
                Some(Value::Seq(items)) => Some(items),
                _ => None,
            })
            .flatten()
            .collect();
        for (v, volume) in volumes.iter().enumerate() {
            let Some(dir) = volume.get("emptyDir") else {
                continue;
            };
            if text(dir.get("medium")).as_deref() != Some("Memory") {
                continue;
            }
            let (Some(name), Some(size_node)) = (text(volume.get("name")), dir.get("sizeLimit"))
            else {
                continue;
            };
            let Some(size) = text(Some(size_node)).and_then(|s| quantity::parse(&s)) else {
                continue;
            };
            // The container with the lowest memory limit among those that mount the volume.
            let tightest = containers
                .iter()
                .filter(|c| mounts(c, &name))
                .filter_map(|c| {
                    let limit = text(c.get("resources")?.get("limits")?.get("memory"))?;
                    Some((c, quantity::parse(&limit)?, limit))
                })
                .min_by(|a, b| a.1.total_cmp(&b.1));
            let Some((container, _, limit_text)) = tightest.filter(|t| size > t.1) else {
                continue;
            };
            let container = text(container.get("name")).unwrap_or_else(|| "?".into());
            let size_text = text(Some(size_node)).unwrap_or_default();
            let mut path = pod.to_vec();
            path.extend([
                Step::Key("volumes".into()),
                Step::Index(v),
                Step::Key("emptyDir".into()),
                Step::Key("sizeLimit".into()),
            ]);
            out.push(Finding {
                message: format!(
                    "{}: memory-backed emptyDir `{name}` may grow to {size_text}, more than the {limit_text} memory limit of container `{container}`, which mounts it",
                    doc.label()
                ),
                help: Some(format!(
                    "lower `sizeLimit` well below {limit_text} (its pages count against the container's memory limit), or raise the limit of `{container}`"
                )),
                path,
                span: size_node.span.clone(),
            });
        }
    }
}

/// A scalar as text: quantities may be written as strings or as numbers.
fn text(node: Option<&Node>) -> Option<String> {
    match &node?.value {
        Value::Str(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

/// Whether a container mounts the volume `name`.
fn mounts(container: &Node, name: &str) -> bool {
    let Some(Value::Seq(mounts)) = container.get("volumeMounts").map(|n| &n.value) else {
        return false;
    };
    mounts
        .iter()
        .any(|m| text(m.get("name")).as_deref() == Some(name))
}
