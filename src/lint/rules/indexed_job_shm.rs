use crate::lint::pods::{container_name, containers, is_indexed, job_spec};
use crate::lint::{Document, Finding, Findings, Rule, steps};
use crate::yaml::{Node, Step, Value, key_text};

crate::rule! {
    /// What it checks: an Indexed Job (`completionMode: Indexed`, `completions` > 1, also in
    /// a CronJob's Job template) whose main containers that use GPUs (an `nvidia.com/`
    /// resource or a resource claim) do not mount a memory-backed emptyDir
    /// (`emptyDir: {medium: Memory}`) at `/dev/shm`. Init containers, and Indexed Jobs
    /// without GPUs (sharded CPU work), are not concerned.
    ///
    /// Why it matters: a container's `/dev/shm` is 64Mi by default. NCCL and PyTorch's data
    /// loader workers pass buffers through shared memory; multi-node training outgrows 64Mi
    /// at once and crashes with `Bus error` or `NCCL WARN Error while creating shared memory
    /// segment`, or hangs. A disk-backed emptyDir or a hostPath at `/dev/shm` is not the fix:
    /// the first is slow and not shared memory, the second shares the node's memory with
    /// every other pod, outside the pod's memory accounting.
    ///
    /// Example: an Indexed Job with `completions: 4` whose `tao` container has
    /// `limits: {nvidia.com/gpu: 8}` and no `/dev/shm` volume mount.
    ///
    /// Fix: add a volume `{name: shm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}` and mount
    /// it in the container at `/dev/shm` (`volumeMounts: [{name: shm, mountPath: /dev/shm}]`);
    /// it counts against the container's memory limit.
    pub struct IndexedJobShm {
        code: "TK305",
        name: "indexed-job-shm",
        group: Gpu,
        severity: Error,
    }
}

const HELP: &str = "add a volume `{name: shm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}` and mount it at `/dev/shm` in the container";

impl Rule for IndexedJobShm {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some((_, spec)) = job_spec(doc) else {
            return;
        };
        let Some(Value::Int(completions)) = spec.get("completions").map(|n| &n.value) else {
            return;
        };
        if !is_indexed(spec) || *completions <= 1 {
            return;
        }
        let volumes: &[Node] = match doc
            .pod_spec()
            .and_then(|(_, pod)| pod.get("volumes"))
            .map(|v| &v.value)
        {
            Some(Value::Seq(items)) => items,
            _ => &[],
        };
        let job = format!("{} ({completions} completions)", doc.label());
        for (at, container) in containers(doc, &["containers"]) {
            if !uses_gpu(container) {
                continue;
            }
            let name = container_name(container);
            let mounts: &[Node] = match container.get("volumeMounts").map(|v| &v.value) {
                Some(Value::Seq(items)) => items,
                _ => &[],
            };
            let shm = mounts
                .iter()
                .enumerate()
                .find_map(|(i, m)| match m.get("mountPath") {
                    Some(
                        p @ Node {
                            value: Value::Str(s),
                            ..
                        },
                    ) if s.trim_end_matches('/') == "/dev/shm" => Some((i, m, p)),
                    _ => None,
                });
            let Some((i, mount, mount_path)) = shm else {
                out.push(Finding {
                    message: format!(
                        "container `{name}` of Indexed {job} mounts nothing at `/dev/shm`: the default 64Mi is too small for NCCL, which crashes or hangs"
                    ),
                    help: Some(HELP.into()),
                    span: container.get("name").unwrap_or(container).span.clone(),
                    path: [at.get(), steps("name")].concat(),
                });
                continue;
            };
            let volume_name = match mount.get("name").map(|n| &n.value) {
                Some(Value::Str(v)) => v.as_str(),
                _ => "",
            };
            let volume = volumes.iter().find(
                |v| matches!(v.get("name").map(|n| &n.value), Some(Value::Str(n)) if n == volume_name),
            );
            let found = match volume.map(|v| (v.get("emptyDir"), &v.value)) {
                None => "the pod has no volume of that name".to_string(),
                Some((Some(empty_dir), _)) => match empty_dir.get("medium").map(|m| &m.value) {
                    Some(Value::Str(m)) if m == "Memory" => continue,
                    _ => "it is an emptyDir on the node's disk, not in memory".to_string(),
                },
                Some((None, Value::Map(entries))) => {
                    match entries
                        .iter()
                        .map(|(k, _)| key_text(k))
                        .find(|k| k != "name")
                    {
                        Some(kind) => {
                            format!("it is a `{kind}` volume, not a memory-backed emptyDir")
                        }
                        None => "the volume has no source".to_string(),
                    }
                }
                Some((None, _)) => "it is not a memory-backed emptyDir".to_string(),
            };
            let mut path = at.get();
            path.extend([
                Step::Key("volumeMounts".into()),
                Step::Index(i),
                Step::Key("mountPath".into()),
            ]);
            out.push(Finding {
                message: format!(
                    "container `{name}` of Indexed {job} mounts volume `{volume_name}` at `/dev/shm`: {found}"
                ),
                help: Some(HELP.into()),
                path,
                span: mount_path.span.clone(),
            });
        }
    }
}

/// Whether a container uses GPUs: an `nvidia.com/` resource, or a (DRA) resource claim.
fn uses_gpu(container: &Node) -> bool {
    let Some(resources) = container.get("resources") else {
        return false;
    };
    let nvidia = ["limits", "requests"].iter().any(|k| {
        matches!(resources.get(k).map(|n| &n.value), Some(Value::Map(entries))
            if entries.iter().any(|(r, _)| key_text(r).starts_with("nvidia.com/")))
    });
    nvidia
        || matches!(resources.get("claims").map(|n| &n.value), Some(Value::Seq(c)) if !c.is_empty())
}
