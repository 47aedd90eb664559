//! The driver's gates, decided from what kubectl returned and the manifest, without I/O (and,
//! in [`status`], what `job.sh status` says of a running Job): the
//! driver gathers `kubectl get` answers into files and `tao-k8s gate` reads them. Each gate
//! gives one verdict (pass, warn, refuse) and a sentence:
//!
//! - `job`: no Job of the manifest's name exists yet (a second apply would change nothing and
//!   a second record would point at the first Job);
//! - `version`: the server is new enough for the manifest (1.28 for an Indexed Job of several
//!   pods, whose hostnames MASTER_ADDR names);
//! - `claims`: every PersistentVolumeClaim the pod mounts exists and is Bound;
//! - `fit`: where the pods can be scheduled ([`fit`]): fits now; fits only on an idle cluster
//!   (it would wait Pending: a warning for one pod, refused for several, whose first pods
//!   would hold their GPUs waiting for the rest, unless pending is allowed or a Kueue queue
//!   admits the Job when it fits); never fits (refused, naming the closest node and why).

pub mod fit;
pub mod owners;
pub mod runtime;

use crate::cluster::objects::{self, Claim, Job, Node, PodSpec, StorageClass, Version};
use crate::diag::printable;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The label of a Job that Kueue admits.
pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// The oldest server for an Indexed Job of several pods.
pub const MULTI_POD_MINOR: u32 = 28;

/// What the gates need of the manifest: its Job.
#[derive(Debug, Clone)]
pub struct Workload {
    /// `Job`, or `JobSet`: what `job` names, in messages.
    pub kind: String,
    pub namespace: String,
    pub job: String,
    /// Pods that run at once (`parallelism`, at most `completions`).
    pub pods: u64,
    pub indexed: bool,
    pub queue: Option<String>,
    pub template: PodSpec,
    pub claims: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ManifestJob {
    metadata: objects::Meta,
    spec: ManifestJobSpec,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ManifestJobSpec {
    parallelism: Option<u64>,
    completions: Option<u64>,
    completion_mode: String,
    template: ManifestTemplate,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ManifestTemplate {
    spec: Value,
}

impl Workload {
    /// The GPUs one pod asks for (`nvidia.com/gpu` limits of its containers).
    pub fn gpus(&self) -> i128 {
        self.template
            .containers
            .iter()
            .filter_map(|c| c.resources.limits.get("nvidia.com/gpu"))
            .filter_map(objects::milli)
            .sum()
    }

    /// The Job among the manifest's objects (or the Job a JobSet runs, with the JobSet's
    /// name); an error says what is missing or wrong.
    pub fn from_manifest(objects: &[Value]) -> Result<Workload, String> {
        let mut jobs = objects
            .iter()
            .filter(|o| o["kind"].as_str().is_some_and(crate::kube::is_workload));
        let Some(job) = jobs.next() else {
            return Err("the manifest holds no Job nor JobSet".into());
        };
        if jobs.next().is_some() {
            return Err("the manifest holds more than one Job or JobSet".into());
        }
        let job = &*crate::kube::job_view(job);
        let parsed: ManifestJob =
            serde_path_to_error::deserialize(job).map_err(|e| format!("the Job: {e}"))?;
        let template: PodSpec = serde_path_to_error::deserialize(&parsed.spec.template.spec)
            .map_err(|e| format!("the Job: spec.template.spec.{e}"))?;
        let claims = job
            .pointer("/spec/template/spec/volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.pointer("/persistentVolumeClaim/claimName")?.as_str())
            .map(str::to_string)
            .collect();
        let parallelism = parsed.spec.parallelism.unwrap_or(1);
        let pods = parsed
            .spec
            .completions
            .map_or(parallelism, |c| c.min(parallelism));
        let namespace = if parsed.metadata.namespace.is_empty() {
            "default".to_string()
        } else {
            parsed.metadata.namespace
        };
        Ok(Workload {
            kind: job["kind"].as_str().unwrap_or("Job").to_string(),
            namespace,
            job: parsed.metadata.name,
            pods,
            indexed: parsed.spec.completion_mode == "Indexed",
            queue: parsed.metadata.labels.get(QUEUE_LABEL).cloned(),
            template,
            claims,
        })
    }
}

/// What the driver gathered; `None` where it gathered nothing.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    pub nodes: Vec<Node>,
    /// What the non-terminated pods of every namespace use; `None` when they could not be
    /// listed.
    pub pods: Option<fit::Usage>,
    pub version: Option<Version>,
    /// The claims of the namespace; `None` when not listed.
    pub claims: Option<Vec<Claim>>,
    /// The StorageClasses, listed when a claim is Pending; `None` when not listed.
    pub storage_classes: Option<Vec<StorageClass>>,
    /// The Job of the manifest's name, when it exists.
    pub job: Option<Job>,
    /// The objects of the names the bundle derives that exist (the Job among them).
    pub existing: Vec<owners::Existing>,
}

/// What the caller adds.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Let several pods wait Pending without a queue.
    pub allow_pending: bool,
    /// The submitter's job records: an object is theirs when its uid is listed in one.
    pub records: Vec<crate::record::Record>,
    /// An existing Job that ended is deleted and the bundle submitted again (`--replace`).
    pub replace: bool,
    /// The Secret the request names (`credentials.secretName`), which may exist.
    pub named_secret: Option<String>,
    /// The keys the pod reads from the credentials Secret.
    pub needed_keys: Vec<String>,
    /// `credentials.extra`, and the names the submitter allows to leave their environment.
    pub extra_keys: Vec<String>,
    pub allowed_env: Vec<String>,
    /// Check the GPU nodes' driver and toolkit versions from their labels.
    pub runtime_check: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Warn,
    Refuse,
}

/// Where the pods can go, for the fit gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fit {
    FitsNow,
    FitsIdle,
    NeverFits,
}

/// One gate's answer.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub gate: &'static str,
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<Fit>,
    pub message: String,
    /// The nodes that take the pods, when the fit gate placed them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<fit::Placement>,
}

impl Verdict {
    fn new(gate: &'static str, outcome: Outcome, message: String) -> Verdict {
        Verdict {
            gate,
            outcome,
            fit: None,
            message,
            placement: Vec::new(),
        }
    }
}

/// Every gate, in the order the driver reports them, and what the ownership gate decided.
pub fn gates(
    work: &Workload,
    cluster: &Cluster,
    opts: &Options,
) -> (Vec<Verdict>, owners::Decision) {
    let ask = owners::Ask {
        job: &work.job,
        named_secret: opts.named_secret.as_deref(),
        needed_keys: &opts.needed_keys,
        replace: opts.replace,
    };
    let (owners, mut decision) = owners::gate(&cluster.existing, &opts.records, &ask);
    let (job, job_delete) = job_gate(work, cluster, opts);
    decision.deletes.extend(job_delete);
    let mut verdicts = vec![job, owners, credentials_gate(opts)];
    verdicts.extend([
        version_gate(work, cluster),
        claims_gate(work, cluster),
        fit_gate(work, cluster, opts),
    ]);
    if opts.runtime_check && work.gpus() > 0 {
        verdicts.push(runtime::gate(&cluster.nodes));
    }
    (verdicts, decision)
}

/// The submitter allows every `credentials.extra` name to leave their environment.
fn credentials_gate(opts: &Options) -> Verdict {
    if opts.extra_keys.is_empty() {
        return Verdict::new(
            "credentials",
            Outcome::Pass,
            "the request asks for no variable of your environment (credentials.extra)".into(),
        );
    }
    let refusals = crate::driver::credentials::refusals(&opts.extra_keys, &opts.allowed_env);
    if refusals.is_empty() {
        Verdict::new(
            "credentials",
            Outcome::Pass,
            format!(
                "you allow {} to reach the pod (credentials.extra)",
                opts.extra_keys.join(", ")
            ),
        )
    } else {
        Verdict::new("credentials", Outcome::Refuse, refusals.join("; "))
    }
}

/// The job gate, and under `--replace` the submitter's ended Job to delete.
fn job_gate(
    work: &Workload,
    cluster: &Cluster,
    opts: &Options,
) -> (Verdict, Option<crate::record::Owned>) {
    let name = format!("{}/{}", work.namespace, work.job);
    let Some(job) = &cluster.job else {
        return (
            Verdict::new(
                "job",
                Outcome::Pass,
                format!("no {} {name} exists yet", work.kind),
            ),
            None,
        );
    };
    let existing = cluster.existing.iter().find(|e| {
        crate::kube::is_workload(&e.kind) && e.name == work.job && e.uid == job.metadata.uid
    });
    let creator = existing.and_then(|e| owners::creator(&opts.records, e));
    let owner = match creator {
        Some(r) => format!("created by job record {}", r.id),
        None => format!(
            "created by no job record here: {}",
            existing.map_or("nothing says who made it".into(), |e| e.holder())
        ),
    };
    let ended = !matches!(job.state(), "active" | "suspended");
    if ended && opts.replace && creator.is_none() {
        return (
            Verdict::new(
                "job",
                Outcome::Refuse,
                format!(
                    "the {} {name} exists ({}, {owner}): --replace deletes only a Job that this \
                     bundle's job records created; render the request under another \
                     metadata.name to run beside it",
                    work.kind,
                    job.state()
                ),
            ),
            None,
        );
    }
    if ended && opts.replace {
        let delete = existing.map(|e| crate::record::Owned {
            kind: e.kind.clone(),
            namespace: e.namespace.clone(),
            name: e.name.clone(),
            uid: e.uid.clone(),
        });
        return (
            Verdict::new(
                "job",
                Outcome::Pass,
                format!(
                    "the {} {name} exists ({}, {owner}): --replace deletes it, with its \
                 pods and logs, and submits the bundle again under a new job record",
                    work.kind,
                    job.state()
                ),
            ),
            delete,
        );
    }
    let what = match (creator.is_some(), ended, opts.replace) {
        (false, ..) => "the driver neither changes nor deletes a Job it did not create",
        (true, false, true) => {
            "--replace replaces only a Job that ended; job.sh cancel stops and deletes it"
        }
        (true, false, false) => "job.sh status shows it, job.sh cancel stops and deletes it",
        _ => "job.sh submit --replace deletes it (and its logs) and runs the bundle again",
    };
    let verdict = Verdict::new(
        "job",
        Outcome::Refuse,
        format!(
            "the {} {name} exists ({}, {owner}): {what}; to run beside it, render the request \
             under another metadata.name",
            work.kind,
            job.state()
        ),
    );
    (verdict, None)
}

fn version_gate(work: &Workload, cluster: &Cluster) -> Verdict {
    let needs = work.indexed && work.pods > 1;
    let found = cluster.version.as_ref().and_then(Version::numbers);
    match (needs, found) {
        (false, Some((major, minor))) => Verdict::new(
            "version",
            Outcome::Pass,
            format!("the server is {major}.{minor}"),
        ),
        (false, None) => Verdict::new(
            "version",
            Outcome::Pass,
            "the server version is unknown; this Job needs no particular one".into(),
        ),
        (true, None) => Verdict::new(
            "version",
            Outcome::Refuse,
            format!(
                "multi-node needs Kubernetes 1.{MULTI_POD_MINOR} or newer, and the server version is unknown"
            ),
        ),
        (true, Some((major, minor))) => {
            let ok = major > 1 || minor >= MULTI_POD_MINOR;
            Verdict::new(
                "version",
                if ok { Outcome::Pass } else { Outcome::Refuse },
                if ok {
                    format!(
                        "the server is {major}.{minor} (multi-node needs 1.{MULTI_POD_MINOR} or newer)"
                    )
                } else {
                    format!(
                        "multi-node needs Kubernetes 1.{MULTI_POD_MINOR} or newer, the server is {major}.{minor}"
                    )
                },
            )
        }
    }
}

fn claims_gate(work: &Workload, cluster: &Cluster) -> Verdict {
    if work.claims.is_empty() {
        return Verdict::new(
            "claims",
            Outcome::Pass,
            "the pod mounts no PersistentVolumeClaim".into(),
        );
    }
    let Some(listed) = &cluster.claims else {
        return Verdict::new(
            "claims",
            Outcome::Refuse,
            format!(
                "the PersistentVolumeClaims of namespace {} were not listed",
                work.namespace
            ),
        );
    };
    let mut problems = Vec::new();
    let mut at_first_use = Vec::new();
    for name in &work.claims {
        match listed.iter().find(|c| &c.metadata.name == name) {
            None => problems.push(format!(
                "PersistentVolumeClaim {name} does not exist in namespace {}",
                work.namespace
            )),
            Some(c) if c.status.phase == "Pending" && binding_class(c, cluster).is_some() => {
                let class = binding_class(c, cluster).unwrap_or_default();
                at_first_use.push(format!("{name} (StorageClass {class})"));
            }
            Some(c) if c.status.phase != "Bound" => {
                let phase = if c.status.phase.is_empty() {
                    "without a phase"
                } else {
                    &c.status.phase
                };
                problems.push(format!(
                    "PersistentVolumeClaim {name} is {phase}, not Bound"
                ));
            }
            Some(_) => {}
        }
    }
    if !problems.is_empty() {
        return Verdict::new("claims", Outcome::Refuse, problems.join("; "));
    }
    if at_first_use.is_empty() {
        return Verdict::new(
            "claims",
            Outcome::Pass,
            format!("{} Bound", work.claims.join(", ")),
        );
    }
    Verdict::new(
        "claims",
        Outcome::Pass,
        format!(
            "{} Pending until the pod is scheduled: the class binds WaitForFirstConsumer",
            at_first_use.join(", ")
        ),
    )
}

/// The StorageClass of a claim when it binds only at first use (`WaitForFirstConsumer`): the
/// claim's own class, or the cluster's default for a claim that names none.
fn binding_class<'c>(claim: &Claim, cluster: &'c Cluster) -> Option<&'c str> {
    let classes: &[StorageClass] = cluster.storage_classes.as_deref()?;
    let wanted = &claim.spec.storage_class_name;
    classes
        .iter()
        .find(|s| match wanted.is_empty() {
            true => s.is_default(),
            false => s.metadata.name == *wanted,
        })
        .filter(|s| s.binds_at_first_use())
        .map(|s| s.metadata.name.as_str())
}

fn fit_gate(work: &Workload, cluster: &Cluster, opts: &Options) -> Verdict {
    let requests = fit::pod_requests(&work.template);
    let idle_only = fit::Usage::default();
    let used = cluster.pods.as_ref().unwrap_or(&idle_only);
    let judged = fit::judge(&work.template, &requests, &cluster.nodes, used);
    let wanted = work.pods;
    let asks: Vec<String> = requests
        .iter()
        .map(|(k, v)| format!("{k} {}", fit::show(k, *v)))
        .collect();
    let asks = if asks.is_empty() {
        "nothing".to_string()
    } else {
        asks.join(", ")
    };
    let idle: u64 = judged.iter().map(|j| j.idle).fold(0, u64::saturating_add);
    let now: u64 = judged.iter().map(|j| j.now).fold(0, u64::saturating_add);
    if idle < wanted {
        let gpus = gpus_short(work, cluster);
        return never_fits(&judged, cluster, wanted, idle, &asks, &gpus);
    }
    if cluster.pods.is_none() {
        return fit_verdict(
            Outcome::Warn,
            Fit::FitsIdle,
            format!(
                "fits an idle cluster ({wanted} {} requesting {asks} each), but the running pods \
                 could not be listed, so free capacity was not checked",
                pods_word(wanted)
            ),
            fit::place(&judged, wanted, |j| j.idle),
        );
    }
    if now >= wanted {
        let placement = fit::place(&judged, wanted, |j| j.now);
        let on: Vec<String> = placement
            .iter()
            .map(|p| format!("{} ({})", p.node, p.pods))
            .collect();
        return fit_verdict(
            Outcome::Pass,
            Fit::FitsNow,
            format!(
                "fits now: {wanted} {} requesting {asks} each, on {}",
                pods_word(wanted),
                on.join(", ")
            ),
            placement,
        );
    }
    fits_when_pods_end(work, opts, &judged, now)
}

fn fit_verdict(
    outcome: Outcome,
    kind: Fit,
    message: String,
    placement: Vec<fit::Placement>,
) -> Verdict {
    Verdict {
        gate: "fit",
        outcome,
        fit: Some(kind),
        message,
        placement,
    }
}

fn pods_word(n: u64) -> &'static str {
    if n == 1 { "pod" } else { "pods" }
}

/// Not even an idle cluster has room for every pod: where the room is, and the node closest
/// to taking one.
fn never_fits(
    judged: &[fit::Judged],
    cluster: &Cluster,
    wanted: u64,
    idle: u64,
    asks: &str,
    gpus: &str,
) -> Verdict {
    let places = if idle == 0 {
        "no node can take one".to_string()
    } else {
        let on: Vec<String> = fit::place(judged, idle, |j| j.idle)
            .iter()
            .map(|p| format!("{} ({})", p.node, p.pods))
            .collect();
        format!("an idle cluster has room for {idle} ({})", on.join(", "))
    };
    let why = match closest(judged) {
        Some(j) => format!(
            "; closest{}: {}: {}",
            if idle == 0 { "" } else { " other node" },
            j.name,
            j.misfits
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None if cluster.nodes.is_empty() => "; the cluster lists no node".into(),
        None => String::new(),
    };
    fit_verdict(
        Outcome::Refuse,
        Fit::NeverFits,
        format!(
            "never fits: {wanted} {} requesting {asks} each, {places}{why}{gpus}",
            pods_word(wanted)
        ),
        Vec::new(),
    )
}

/// Where the NVIDIA GPU Operator's install guide is: what puts `nvidia.com/gpu` on the nodes.
pub const GPU_OPERATOR_GUIDE: &str =
    "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/getting-started.html";

/// The runbook's capacity line for a Job that asks for more GPUs than the nodes have in all:
/// `; insufficient GPUs: need N, allocatable M` (every pod's GPUs against the sum over the
/// nodes), and where the GPU Operator is when no node has any. Empty otherwise.
fn gpus_short(work: &Workload, cluster: &Cluster) -> String {
    let per_pod = work.gpus();
    if per_pod <= 0 {
        return String::new();
    }
    let need = per_pod.saturating_mul(i128::from(work.pods));
    let allocatable = cluster
        .nodes
        .iter()
        .filter_map(|n| n.status.allocatable.get("nvidia.com/gpu"))
        .map(objects::amount)
        .fold(0i128, i128::saturating_add);
    if allocatable >= need {
        // Enough GPUs in the sum: the nodes' own reasons above say why none takes a pod.
        return String::new();
    }
    let mut line = format!(
        "; insufficient GPUs: need {}, allocatable {}",
        fit::show("nvidia.com/gpu", need),
        fit::show("nvidia.com/gpu", allocatable)
    );
    if allocatable == 0 {
        line += &format!(
            "; no node has nvidia.com/gpu allocatable: install the NVIDIA GPU Operator \
             before submitting GPU jobs ({GPU_OPERATOR_GUIDE})"
        );
    }
    line
}

/// An idle cluster has room, the running pods leave too little now: whether to wait depends on
/// gang scheduling (a Kueue queue), the number of pods and `--allow-pending`.
fn fits_when_pods_end(
    work: &Workload,
    opts: &Options,
    judged: &[fit::Judged],
    now: u64,
) -> Verdict {
    let wanted = work.pods;
    let busy: Vec<String> = judged
        .iter()
        .filter_map(|j| {
            let (resource, free, used) = j.short.as_ref()?;
            Some(format!(
                "{}: {} {resource} free, {} requested by running pods",
                j.name,
                fit::show(resource, *free),
                fit::show(resource, *used)
            ))
        })
        .collect();
    let situation = format!(
        "fits only on an idle cluster: room for {now} of {wanted} {} now ({})",
        pods_word(wanted),
        busy.join("; ")
    );
    let (outcome, advice) = if let Some(queue) = &work.queue {
        (
            Outcome::Pass,
            format!("Kueue queue {queue} admits the Job when it fits"),
        )
    } else if wanted == 1 {
        (
            Outcome::Warn,
            "the pod waits Pending until the capacity frees".to_string(),
        )
    } else if opts.allow_pending {
        (
            Outcome::Warn,
            "--allow-pending: the first pods start and hold their resources until the rest are scheduled".to_string(),
        )
    } else {
        (
            Outcome::Refuse,
            "without gang scheduling the first pods would start and hold their resources waiting for the rest: submit when it fits, through a Kueue queue, or with --allow-pending".to_string(),
        )
    };
    fit_verdict(
        outcome,
        Fit::FitsIdle,
        format!("{situation}; {advice}"),
        fit::place(judged, now, |j| j.now),
    )
}

/// The node nearest to taking a pod: the fewest resources too small (a request can change a
/// toleration or a selector, not a node's GPUs), then the fewest filters failed, then the
/// first in the list; none when every node takes a pod.
fn closest(judged: &[fit::Judged]) -> Option<&fit::Judged> {
    let too_small = |j: &fit::Judged| {
        j.misfits
            .iter()
            .filter(|m| matches!(m, fit::Misfit::TooSmall { .. }))
            .count()
    };
    judged
        .iter()
        .filter(|j| !j.misfits.is_empty())
        .min_by_key(|j| (too_small(j), j.misfits.len()))
}

/// Whether any verdict refuses.
pub fn refused(verdicts: &[Verdict]) -> bool {
    verdicts.iter().any(|v| v.outcome == Outcome::Refuse)
}

/// The verdicts as text, one line each: `gate: outcome: message`.
pub fn text(verdicts: &[Verdict]) -> String {
    verdicts
        .iter()
        .map(|v| {
            let outcome = match v.outcome {
                Outcome::Pass => "pass",
                Outcome::Warn => "warning",
                Outcome::Refuse => "refused",
            };
            format!("{}: {outcome}: {}\n", v.gate, printable(&v.message))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::objects::{Node, Pod, Taint, Toleration};
    use proptest::prelude::*;
    use serde_json::{Value as Json, json};

    fn node(name: &str, gpus: u32, taints: Value, labels: Value) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints},
            "status": {
                "allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": gpus.to_string(), "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }))
        .unwrap()
    }

    fn running(on: &str, gpus: u32) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": format!("other-{on}"), "namespace": "team-b"},
            "spec": {"nodeName": on, "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus.to_string()}}}]},
            "status": {"phase": "Running"},
        }))
        .unwrap()
    }

    /// A Job of `pods` pods of `gpus` GPUs, tolerating the GPU taint, with `extra` merged into
    /// the pod spec and `labels` on the Job.
    fn workload(pods: u64, gpus: u32, extra: Value, labels: Value) -> Workload {
        let mut spec = json!({
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "tao", "resources": {"limits": {"nvidia.com/gpu": gpus.to_string()}, "requests": {"memory": "64Gi"}}}],
            "volumes": [{"name": "results", "persistentVolumeClaim": {"claimName": "tao-results"}}],
        });
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        let job = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "namespace": "vision", "labels": labels},
            "spec": {"completionMode": if pods > 1 { "Indexed" } else { "NonIndexed" },
                     "completions": pods, "parallelism": pods, "template": {"spec": spec}},
        });
        Workload::from_manifest(&[json!({"kind": "Service"}), job]).unwrap()
    }

    fn cluster(nodes: Vec<Node>, pods: Vec<Pod>) -> Cluster {
        Cluster {
            nodes,
            pods: Some(fit::Usage::of(&pods)),
            version: Some(serde_json::from_value(json!({"major": "1", "minor": "30+"})).unwrap()),
            claims: Some(
                serde_json::from_value(
                    json!([{"metadata": {"name": "tao-results"}, "status": {"phase": "Bound"}}]),
                )
                .unwrap(),
            ),
            storage_classes: None,
            job: None,
            existing: Vec::new(),
        }
    }

    fn fit_of(work: &Workload, cluster: &Cluster, opts: &Options) -> Verdict {
        let (verdicts, _) = gates(work, cluster, opts);
        verdicts.into_iter().find(|v| v.gate == "fit").unwrap()
    }

    fn gpu_taint() -> Value {
        json!([{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    }

    #[test]
    fn the_manifest_s_job_gives_the_pods_that_run_at_once() {
        let w = workload(4, 8, json!({}), json!({QUEUE_LABEL: "team-a"}));
        assert_eq!(
            (w.pods, w.indexed, w.queue.as_deref()),
            (4, true, Some("team-a"))
        );
        assert_eq!((w.namespace.as_str(), w.job.as_str()), ("vision", "train"));
        assert_eq!(w.claims, ["tao-results"]);
        assert!(Workload::from_manifest(&[json!({"kind": "Service"})]).is_err());
        let bad = json!({"kind": "Job", "spec": {"parallelism": "four"}});
        let e = Workload::from_manifest(&[bad]).unwrap_err();
        assert!(e.contains("spec.parallelism"), "{e}");
    }

    /// A JobSet's pods are those of the Job it creates; the queue is on the JobSet.
    #[test]
    fn a_jobset_gives_the_pods_of_its_job() {
        let spec = json!({"containers": [{"name": "tao", "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
                          "volumes": [{"name": "r", "persistentVolumeClaim": {"claimName": "tao-results"}}]});
        let js = json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "train", "namespace": "vision", "labels": {QUEUE_LABEL: "team-a"}},
            "spec": {"suspend": true, "replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": {
                "completionMode": "Indexed", "completions": 4, "parallelism": 4, "template": {"spec": spec}}}}]},
        });
        let w = Workload::from_manifest(&[json!({"kind": "ConfigMap"}), js.clone()]).unwrap();
        assert_eq!(
            (w.pods, w.indexed, w.queue.as_deref(), w.job.as_str()),
            (4, true, Some("team-a"), "train")
        );
        assert_eq!(
            (w.gpus(), w.claims.as_slice()),
            (8000, &["tao-results".to_string()][..])
        );
        let job =
            json!({"kind": "Job", "metadata": {"name": "x"}, "spec": {"template": {"spec": {}}}});
        let e = Workload::from_manifest(&[js, job]).unwrap_err();
        assert!(e.contains("more than one"), "{e}");
    }

    #[test]
    fn requests_follow_the_scheduler_init_sidecar_and_overhead_rules() {
        let spec: PodSpec = serde_json::from_value(json!({
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "2"}}},
                {"name": "b", "resources": {"requests": {"cpu": "500m"}}},
            ],
            "initContainers": [
                {"name": "fetch", "resources": {"requests": {"cpu": "4", "memory": "512Mi"}}},
                {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}},
                {"name": "late", "resources": {"requests": {"memory": "2Gi"}}},
            ],
            "overhead": {"cpu": "100m"},
        }))
        .unwrap();
        let r = fit::pod_requests(&spec);
        // cpu: containers 1.5 + sidecar 0.25 = 1.75, init max(4, 0.25) = 4 -> 4 + overhead.
        assert_eq!(r["cpu"], 4100);
        // memory: containers 1Gi + sidecar 256Mi; init max(512Mi, 256Mi, 2Gi + 256Mi).
        assert_eq!(r["memory"], (2048 + 256) * (1 << 20) * 1000);
        // The GPU limit stands for its request.
        assert_eq!(r["nvidia.com/gpu"], 2000);
    }

    #[test]
    fn toleration_matching_is_tolerates_taint() {
        let taint = Taint {
            key: "dedicated".into(),
            value: "other-team".into(),
            effect: "NoSchedule".into(),
        };
        let t = |key: &str, op: &str, value: &str, effect: &str| Toleration {
            key: key.into(),
            operator: op.into(),
            value: value.into(),
            effect: effect.into(),
        };
        for (toleration, expected) in [
            (t("dedicated", "Equal", "other-team", "NoSchedule"), true),
            (t("dedicated", "", "other-team", ""), true),
            (t("dedicated", "Exists", "", ""), true),
            (t("", "Exists", "", ""), true),
            (t("", "Exists", "", "NoSchedule"), true),
            (t("", "Exists", "", "NoExecute"), false),
            (t("dedicated", "Equal", "my-team", "NoSchedule"), false),
            (t("dedicated", "Equal", "", "NoSchedule"), false),
            (t("other", "Exists", "", ""), false),
            (t("dedicated", "Gt", "1", ""), false),
        ] {
            assert_eq!(
                fit::tolerates(&toleration, &taint),
                expected,
                "{toleration:?}"
            );
        }
    }

    #[test]
    fn node_affinity_operators_are_those_of_label_selectors() {
        use objects::Requirement;
        let r = |op: &str, values: &[&str]| Requirement {
            key: "k".into(),
            operator: op.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        };
        for (req, value, expected) in [
            (r("In", &["a", "b"]), Some("b"), true),
            (r("In", &["a"]), None, false),
            (r("NotIn", &["a"]), None, true),
            (r("NotIn", &["a"]), Some("a"), false),
            (r("Exists", &[]), Some(""), true),
            (r("DoesNotExist", &[]), Some("x"), false),
            (r("DoesNotExist", &[]), None, true),
            (r("Gt", &["7"]), Some("8"), true),
            (r("Gt", &["7"]), Some("7"), false),
            (r("Lt", &["7"]), Some("6"), true),
            (r("Lt", &["7"]), Some("six"), false),
            (r("Gt", &["7", "8"]), Some("9"), false),
            (r("Near", &["a"]), Some("a"), false),
        ] {
            assert_eq!(fit::requirement(&req, value), expected, "{req:?} {value:?}");
        }
        // Terms are ORed, requirements of a term ANDed; matchFields names the node.
        let affinity = |terms: Value| json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}});
        let nodes = vec![
            node(
                "gpu-1",
                8,
                gpu_taint(),
                json!({"gpu.product": "H100", "gen": "9"}),
            ),
            node(
                "gpu-2",
                8,
                gpu_taint(),
                json!({"gpu.product": "A100", "gen": "8"}),
            ),
        ];
        let c = cluster(nodes, vec![]);
        for (terms, expected) in [
            (
                json!([{"matchExpressions": [{"key": "gpu.product", "operator": "In", "values": ["H100"]}]}]),
                vec!["gpu-1"],
            ),
            (
                json!([{"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["7"]}, {"key": "gpu.product", "operator": "NotIn", "values": ["H100"]}]}]),
                vec!["gpu-2"],
            ),
            (
                json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-2"]}]}, {"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["9"]}]}]),
                vec!["gpu-2"],
            ),
            (
                json!([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["gpu-2"]}]}]),
                vec!["gpu-1"],
            ),
            (json!([{}]), vec![]),
        ] {
            let w = workload(1, 8, affinity(terms.clone()), json!({}));
            let v = fit_of(&w, &c, &Options::default());
            let placed: Vec<&str> = v.placement.iter().map(|p| p.node.as_str()).collect();
            assert_eq!(placed, expected, "{terms}: {}", v.message);
        }
    }

    #[test]
    fn an_untolerated_taint_is_named_on_the_closest_node() {
        let mut other = gpu_taint();
        other
            .as_array_mut()
            .unwrap()
            .push(json!({"key": "dedicated", "value": "other-team", "effect": "NoSchedule"}));
        let nodes = vec![
            node("gpu-1", 2, gpu_taint(), json!({})),
            node("gpu-3", 8, other, json!({})),
            node(
                "gpu-4",
                8,
                json!([{"key": "maintenance", "effect": "NoExecute"}, {"key": "soon", "effect": "PreferNoSchedule"}]),
                json!({}),
            ),
        ];
        let w = workload(1, 8, json!({}), json!({QUEUE_LABEL: "team-a"}));
        let v = fit_of(&w, &cluster(nodes, vec![]), &Options::default());
        assert_eq!((v.outcome, v.fit), (Outcome::Refuse, Some(Fit::NeverFits)));
        assert_eq!(
            v.message,
            "never fits: 1 pod requesting memory 64Gi, nvidia.com/gpu 8 each, no node can take \
             one; closest: gpu-3: taint dedicated=other-team:NoSchedule not tolerated"
        );
        // A node too small is farther than a taint; between nodes too small, the first.
        let nodes = vec![
            node("gpu-1", 2, gpu_taint(), json!({})),
            node("gpu-4", 4, gpu_taint(), json!({})),
        ];
        let v = fit_of(&w, &cluster(nodes, vec![]), &Options::default());
        assert!(
            v.message.ends_with(
                "closest: gpu-1: 2 nvidia.com/gpu allocatable, the pod requests 8; \
                 insufficient GPUs: need 8, allocatable 6"
            ),
            "{}",
            v.message
        );
        let nodes = vec![
            node(
                "gpu-3",
                8,
                json!([{"key": "dedicated", "value": "other-team", "effect": "NoSchedule"}]),
                json!({}),
            ),
            node(
                "gpu-4",
                8,
                json!([{"key": "maintenance", "effect": "NoExecute"}]),
                json!({}),
            ),
        ];
        let v = fit_of(&w, &cluster(nodes, vec![]), &Options::default());
        assert!(
            v.message
                .ends_with("closest: gpu-3: taint dedicated=other-team:NoSchedule not tolerated"),
            "{}",
            v.message
        );
    }

    #[test]
    fn cordoned_not_ready_and_selector_misfits() {
        let mut cordoned = node("gpu-1", 8, gpu_taint(), json!({"pool": "a"}));
        cordoned.spec.unschedulable = true;
        let mut down = node("gpu-2", 8, gpu_taint(), json!({"pool": "a"}));
        down.status.conditions[0].status = "Unknown".into();
        let elsewhere = node("gpu-3", 8, gpu_taint(), json!({"pool": "b"}));
        let c = cluster(vec![cordoned, down, elsewhere], vec![]);
        let w = workload(1, 8, json!({"nodeSelector": {"pool": "a"}}), json!({}));
        let v = fit_of(&w, &c, &Options::default());
        assert_eq!(v.fit, Some(Fit::NeverFits));
        assert!(
            v.message
                .ends_with("closest: gpu-1: cordoned (spec.unschedulable)"),
            "{}",
            v.message
        );
        // Tolerating the cordon taint passes the unschedulable filter, as the scheduler does.
        let w = workload(
            1,
            8,
            json!({"nodeSelector": {"pool": "a"}, "tolerations": [{"operator": "Exists"}]}),
            json!({}),
        );
        let v = fit_of(&w, &c, &Options::default());
        assert_eq!(
            v.placement,
            [fit::Placement {
                node: "gpu-1".into(),
                pods: 1
            }]
        );
    }

    #[test]
    fn busy_gpus_make_a_multi_node_job_wait_and_it_is_refused_without_a_queue() {
        // The issue's cluster: 2 x 4-GPU pods; one node has only 2 free GPUs.
        let nodes = vec![
            node("gpu-1", 8, gpu_taint(), json!({})),
            node("gpu-2", 8, gpu_taint(), json!({})),
        ];
        let c = cluster(nodes, vec![running("gpu-1", 6), running("gpu-2", 6)]);
        let w = workload(2, 4, json!({}), json!({}));
        let v = fit_of(&w, &c, &Options::default());
        assert_eq!((v.outcome, v.fit), (Outcome::Refuse, Some(Fit::FitsIdle)));
        assert!(
            v.message.starts_with(
                "fits only on an idle cluster: room for 0 of 2 pods now (gpu-1: 2 nvidia.com/gpu \
                 free, 6 requested by running pods; gpu-2: 2 nvidia.com/gpu free, 6 requested by running pods)"
            ),
            "{}",
            v.message
        );
        let allowed = Options {
            allow_pending: true,
            ..Options::default()
        };
        assert_eq!(fit_of(&w, &c, &allowed).outcome, Outcome::Warn);
        let queued = workload(2, 4, json!({}), json!({QUEUE_LABEL: "team-a"}));
        assert_eq!(
            fit_of(&queued, &c, &Options::default()).outcome,
            Outcome::Pass
        );
        // One pod waits with a warning.
        let single = workload(1, 4, json!({}), json!({}));
        assert_eq!(
            fit_of(&single, &c, &Options::default()).outcome,
            Outcome::Warn
        );
        // Two pods fit on one node when it has room for both.
        let c = cluster(
            vec![
                node("gpu-1", 8, gpu_taint(), json!({})),
                node("gpu-2", 8, gpu_taint(), json!({})),
            ],
            vec![running("gpu-2", 6)],
        );
        let v = fit_of(&w, &c, &Options::default());
        assert_eq!((v.outcome, v.fit), (Outcome::Pass, Some(Fit::FitsNow)));
        assert_eq!(
            v.placement,
            [fit::Placement {
                node: "gpu-1".into(),
                pods: 2
            }]
        );
    }

    #[test]
    fn an_existing_job_is_refused_with_its_state_and_record() {
        let uid = "5f0c1b2a-7d3e-4c8f-9a1b-2c3d4e5f6a7b";
        let job = json!({"kind": "Job", "metadata": {"name": "train", "namespace": "vision", "uid": uid},
                         "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}});
        let mut c = cluster(vec![node("gpu-1", 8, gpu_taint(), json!({}))], vec![]);
        c.job = Some(serde_json::from_value(job.clone()).unwrap());
        c.existing = vec![owners::Existing::new(job).unwrap()];
        let w = workload(1, 1, json!({}), json!({}));
        let record = crate::record::Record {
            id: "tao-20261202-083107-7f3a".into(),
            platform: "kubernetes".into(),
            image: "i".into(),
            network_arch: "dino".into(),
            action: "train".into(),
            storage_tier: crate::record::StorageTier::A,
            results_dir: "/r".into(),
            backend_ref: Some("vision/train".into()),
            backend_uid: Some(uid.into()),
            objects: vec![crate::record::Owned {
                kind: "Job".into(),
                namespace: "vision".into(),
                name: "train".into(),
                uid: uid.into(),
            }],
            state: crate::record::State::Running,
            history: Vec::new(),
        };
        let mut opts = Options {
            records: vec![record],
            ..Options::default()
        };
        let (v, _) = gates(&w, &c, &opts);
        assert_eq!(v[0].outcome, Outcome::Refuse);
        assert!(v[0].message.starts_with("the Job vision/train exists (succeeded, created by job record tao-20261202-083107-7f3a)"), "{}", v[0].message);
        assert!(
            v[0].message.contains("job.sh submit --replace"),
            "{}",
            v[0].message
        );
        opts.replace = true;
        let (v, decision) = gates(&w, &c, &opts);
        assert_eq!(v[0].outcome, Outcome::Pass, "{}", v[0].message);
        assert!(
            v[0].message.contains("--replace deletes it"),
            "{}",
            v[0].message
        );
        assert_eq!(decision.deletes.len(), 1);
        assert_eq!(decision.deletes[0].uid, uid);
        // The same Job, created by no record here: never replaced.
        opts.records.clear();
        let (v, decision) = gates(&w, &c, &opts);
        assert_eq!(v[0].outcome, Outcome::Refuse);
        assert!(
            v[0].message
                .contains("--replace deletes only a Job that this bundle's job records created"),
            "{}",
            v[0].message
        );
        assert!(decision.deletes.is_empty());
    }

    #[test]
    fn claims_and_version() {
        let mut c = cluster(vec![node("gpu-1", 8, gpu_taint(), json!({}))], vec![]);
        c.claims = Some(vec![]);
        c.version = Some(serde_json::from_value(json!({"major": "1", "minor": "27"})).unwrap());
        let (v, _) = gates(
            &workload(2, 4, json!({}), json!({})),
            &c,
            &Options::default(),
        );
        assert_eq!(
            v[3].message,
            "multi-node needs Kubernetes 1.28 or newer, the server is 1.27"
        );
        assert_eq!(
            v[4].message,
            "PersistentVolumeClaim tao-results does not exist in namespace vision"
        );
        assert!(v[3..5].iter().all(|v| v.outcome == Outcome::Refuse));
        // A single pod needs no particular version.
        let (v, _) = gates(
            &workload(1, 4, json!({}), json!({})),
            &c,
            &Options::default(),
        );
        assert_eq!(v[3].outcome, Outcome::Pass);
    }

    #[test]
    fn a_pending_claim_passes_only_when_its_class_binds_at_first_use() {
        let claims_verdict = |claim: Json, classes: Option<Json>| {
            let mut c = cluster(vec![node("gpu-1", 8, gpu_taint(), json!({}))], vec![]);
            c.claims = Some(serde_json::from_value(json!([claim])).unwrap());
            c.storage_classes = classes.map(|v| serde_json::from_value(v).unwrap());
            let (v, _) = gates(
                &workload(1, 4, json!({}), json!({})),
                &c,
                &Options::default(),
            );
            let claims = v.into_iter().find(|v| v.gate == "claims").unwrap();
            (claims.outcome, claims.message)
        };
        let pending = |class: &str| {
            json!({"metadata": {"name": "tao-results"}, "spec": {"storageClassName": class},
                   "status": {"phase": "Pending"}})
        };
        let classes = json!([
            {"metadata": {"name": "gp3", "annotations":
                {"storageclass.kubernetes.io/is-default-class": "true"}},
             "volumeBindingMode": "WaitForFirstConsumer"},
            {"metadata": {"name": "fast"}, "volumeBindingMode": "Immediate"},
            {"metadata": {"name": "plain"}}
        ]);
        assert_eq!(
            claims_verdict(pending("gp3"), Some(classes.clone())),
            (
                Outcome::Pass,
                "tao-results (StorageClass gp3) Pending until the pod is scheduled: the class \
                 binds WaitForFirstConsumer"
                    .into()
            )
        );
        // No class named: the default one decides.
        assert_eq!(
            claims_verdict(pending(""), Some(classes.clone())).0,
            Outcome::Pass
        );
        // A class that binds at once, or with no mode (Immediate), leaves Pending a refusal.
        for class in ["fast", "plain", "missing"] {
            assert_eq!(
                claims_verdict(pending(class), Some(classes.clone())),
                (
                    Outcome::Refuse,
                    "PersistentVolumeClaim tao-results is Pending, not Bound".into()
                ),
                "{class}"
            );
        }
        // Classes not listed: refused as before.
        assert_eq!(claims_verdict(pending("gp3"), None).0, Outcome::Refuse);
        // Lost is never rescued by the class.
        let lost = json!({"metadata": {"name": "tao-results"}, "spec": {"storageClassName": "gp3"},
                          "status": {"phase": "Lost"}});
        assert_eq!(claims_verdict(lost, Some(classes)).0, Outcome::Refuse);
    }

    /// Clusters of up to five nodes, each with a GPU count, GPUs in use, a taint or not and a
    /// cordon or not.
    fn arb_cluster() -> impl Strategy<Value = Vec<(u32, u32, bool, bool)>> {
        prop::collection::vec((0u32..=8, 0u32..=8, any::<bool>(), any::<bool>()), 1..5)
    }

    fn build(spec: &[(u32, u32, bool, bool)]) -> Cluster {
        let mut nodes = Vec::new();
        let mut pods = Vec::new();
        for (i, &(gpus, used, tainted, cordoned)) in spec.iter().enumerate() {
            let name = format!("gpu-{i}");
            let taints = if tainted {
                json!([{"key": "dedicated", "value": "other-team", "effect": "NoSchedule"}])
            } else {
                gpu_taint()
            };
            let mut n = node(&name, gpus, taints, json!({}));
            n.spec.unschedulable = cordoned;
            nodes.push(n);
            if used.min(gpus) > 0 {
                pods.push(running(&name, used.min(gpus)));
            }
        }
        cluster(nodes, pods)
    }

    proptest! {
        /// A pod that fits some node when nothing runs is never "never fits".
        #[test]
        fn a_pod_that_fits_an_idle_node_is_never_refused_as_never_fitting(
            spec in arb_cluster(), gpus in 1u32..=8, pods in 1u64..=3,
        ) {
            let c = build(&spec);
            let w = workload(pods, gpus, json!({}), json!({}));
            let v = fit_of(&w, &c, &Options::default());
            let fits_idle = spec.iter().filter(|(_, _, t, c)| !t && !c).map(|(g, ..)| u64::from(g / gpus)).sum::<u64>() >= pods;
            prop_assert_eq!(v.fit != Some(Fit::NeverFits), fits_idle, "{}", v.message);
            // Fits now exactly when the free GPUs of the eligible nodes hold every pod.
            let now = spec.iter().filter(|(_, _, t, c)| !t && !c).map(|(g, u, ..)| u64::from((g - u.min(g)) / gpus)).sum::<u64>() >= pods;
            prop_assert_eq!(v.fit == Some(Fit::FitsNow), now, "{}", v.message);
            // A placement never exceeds the pods, nor names a node twice.
            let placed: u64 = v.placement.iter().map(|p| p.pods).sum();
            prop_assert!(placed <= pods);
        }

        /// Adding a taint no pod tolerates, or a cordon, never turns a refusal into a pass.
        #[test]
        fn a_taint_never_turns_a_refusal_into_a_pass(
            spec in arb_cluster(), gpus in 1u32..=8, pods in 1u64..=3, which in any::<prop::sample::Index>(), cordon in any::<bool>(),
        ) {
            let w = workload(pods, gpus, json!({}), json!({}));
            let before = fit_of(&w, &build(&spec), &Options::default());
            let mut worse = spec.clone();
            let i = which.index(worse.len());
            if cordon { worse[i].3 = true } else { worse[i].2 = true }
            let after = fit_of(&w, &build(&worse), &Options::default());
            let rank = |v: &Verdict| match v.fit { Some(Fit::FitsNow) => 0, Some(Fit::FitsIdle) => 1, _ => 2 };
            prop_assert!(rank(&after) >= rank(&before), "{} -> {}", before.message, after.message);
            if before.outcome == Outcome::Refuse {
                prop_assert_eq!(after.outcome, Outcome::Refuse);
            }
        }
    }
}
