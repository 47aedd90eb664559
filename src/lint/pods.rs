//! What rules share about pod specs and Jobs: the containers of a pod spec with their paths,
//! their env values, a Job's spec and whether it is Indexed.

use crate::lint::api::ContainerPath;
use crate::lint::{Document, steps};
use crate::yaml::{Node, Step, Value};

/// The lists [`containers`] reads: init containers and main containers.
pub const ALL_CONTAINERS: &[&str] = &["initContainers", "containers"];

/// The containers of the lists `lists` of a document's pod spec (Pod, or a controller's pod
/// template), with where they are, in the pod spec's order of lists.
pub fn containers<'d, 'a>(
    doc: &'d Document<'a>,
    lists: &'d [&'static str],
) -> impl Iterator<Item = (&'d ContainerPath, &'a Node)> + 'd {
    doc.containers()
        .iter()
        .filter(move |(at, _)| lists.contains(&at.list()))
        .map(|(at, container)| (at, *container))
}

/// A container's `name`, for messages.
pub fn container_name(container: &Node) -> &str {
    match container.get("name").map(|n| &n.value) {
        Some(Value::Str(name)) => name,
        _ => "<unnamed>",
    }
}

/// A scalar as written, without JSON quotes.
pub fn scalar_text(node: &Node) -> String {
    match &node.value {
        Value::Str(s) => s.clone(),
        _ => node.to_json().to_string(),
    }
}

/// The Job spec of a `batch` Job, of a CronJob's Job template, or of a JobSet's replicated Job
/// (the one [`Document::replicated_job`] says), with its path.
pub fn job_spec<'a>(doc: &Document<'a>) -> Option<(Vec<Step>, &'a Node)> {
    if let Some(path) = doc.jobset_job_path() {
        let (_, spec) = doc.root.lookup(&path)?;
        return Some((path, spec));
    }
    if !doc.api_version.starts_with("batch/") {
        return None;
    }
    let path = match doc.kind {
        "Job" => steps("spec"),
        "CronJob" => steps("spec.jobTemplate.spec"),
        _ => return None,
    };
    let (_, spec) = doc.root.lookup(&path)?;
    Some((path, spec))
}

/// Whether a Job spec has `completionMode: Indexed`.
pub fn is_indexed(spec: &Node) -> bool {
    matches!(spec.get("completionMode").map(|n| &n.value), Some(Value::Str(m)) if m == "Indexed")
}

/// A plain `value` of a container's env entry.
pub struct EnvValue<'a> {
    /// Path to the `value` node.
    pub path: Vec<Step>,
    pub container: &'a str,
    pub name: &'a str,
    pub value: &'a Node,
}

/// Every env entry with a plain `value` in the containers and init containers of a document.
pub fn env_values<'a>(doc: &Document<'a>) -> Vec<EnvValue<'a>> {
    let mut out = Vec::new();
    for (path, container) in containers(doc, ALL_CONTAINERS) {
        let Some(Value::Seq(env)) = container.get("env").map(|n| &n.value) else {
            continue;
        };
        for (j, var) in env.iter().enumerate() {
            let (Some(Value::Str(name)), Some(value)) =
                (var.get("name").map(|n| &n.value), var.get("value"))
            else {
                continue;
            };
            let mut at = path.get();
            at.extend([
                Step::Key("env".into()),
                Step::Index(j),
                Step::Key("value".into()),
            ]);
            out.push(EnvValue {
                path: at,
                container: container_name(container),
                name,
                value,
            });
        }
    }
    out
}

/// The pods a JobSet's replicated Jobs run: for each, `replicas` (1 if unset) and the pods of
/// one replica (`completions`, else `parallelism`, else 1). `None` when a count is not an
/// integer written in the manifest.
pub fn jobset_pods(doc: &Document) -> Option<Vec<(i64, i64)>> {
    let count = |node: Option<&Node>, default: i64| match node.map(|n| &n.value) {
        None => Some(default),
        Some(Value::Int(n)) => Some(*n),
        Some(_) => None,
    };
    (0..doc.replicated_jobs())
        .map(|i| {
            let job = doc.at(&doc.jobset_job_path_at(i)?[..3])?;
            let spec = job.get("template").and_then(|t| t.get("spec"))?;
            let pods = match spec.get("completions") {
                Some(c) => count(Some(c), 1)?,
                None => count(spec.get("parallelism"), 1)?,
            };
            Some((count(job.get("replicas"), 1)?, pods))
        })
        .collect()
}

/// All the pods of [`jobset_pods`]' replicated Jobs.
pub fn total_pods(jobs: &[(i64, i64)]) -> i64 {
    jobs.iter()
        .fold(0i64, |n, (r, p)| n.saturating_add(r.saturating_mul(*p)))
}
