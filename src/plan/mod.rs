//! ActionRequest -> Plan: every decision about the objects to emit (names, labels, the
//! container's command vector, env, resources, volumes, the staged config) is made here, in
//! Rust, and tested here. Templates only lay the Plan out as YAML.

mod config;
pub mod names;
mod pod;
mod probe;

pub use config::hex;
pub use pod::pod_script;
pub use probe::{NCCL_PROBE, NCCL_PROBE_DEADLINE, nccl_probe, ngc_pull_secret, probe_name};

use crate::diag::Diagnostic;
use crate::kube::KubeVersion;
use crate::kube::names::is_dns1123_label;
use crate::request::credentials::S3_KEYS;
use crate::request::{ActionRequest, Loaded, Toleration};
pub use crate::request::{CONFIG_DIR, CONFIG_VOLUME, REQUEST_NAME_ANNOTATION, SHM_VOLUME};
use crate::source::Source as Source_;
use crate::staging::Staging;
use names::Names;
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

pub use crate::codes::{CONFIG_DIGEST, OPTION};

/// The ConfigMap key and file name of the staged config spec.
pub const CONFIG_FILE: &str = "spec.yaml";
/// The container that runs the action.
pub const MAIN_CONTAINER: &str = "tao";
/// Default seconds a finished Job is kept (7 days).
pub const DEFAULT_TTL: u32 = 604_800;
/// Default TCP port of the rendezvous on the rank-0 pod.
pub const DEFAULT_RENDEZVOUS_PORT: u16 = 29500;
/// Default seconds a pod waits for the rank-0 pod's name to resolve.
pub const DEFAULT_RENDEZVOUS_TIMEOUT: u32 = 300;
/// The named Service port of the rendezvous.
pub const RENDEZVOUS_PORT_NAME: &str = "rendezvous";
/// The initContainer that holds the action until the rank-0 pod's name resolves.
pub const WAIT_CONTAINER: &str = "wait-for-rendezvous";
/// Its constant script; every input arrives through the environment.
pub const WAIT_SCRIPT: &str = include_str!("../../scripts/wait-for-rendezvous.sh");
/// The downward-API path of an Indexed Job pod's completion index.
pub const COMPLETION_INDEX_FIELD: &str =
    "metadata.annotations['batch.kubernetes.io/job-completion-index']";
/// The label the Job controller puts on a Job's pods.
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
/// The annotations of the staged spec's digest (on the ConfigMap and the pod).
pub const CONFIG_SHA256_ANNOTATION: &str = "tao-k8s.io/config-sha256";
/// The annotation the driver script checks against the server's version.
pub const MIN_KUBE_ANNOTATION: &str = "tao-k8s.io/min-kube-version";

/// Pod-side scripts of config staging and tier C, constants of the project.
pub const VERIFY_CONFIG_SCRIPT: &str = include_str!("../../scripts/verify-config.sh");
pub const UPLOAD_RESULTS_SCRIPT: &str = include_str!("../../scripts/upload-results.sh");
/// The wrapper in front of the action when its logs are kept or it resumes from checkpoints.
pub const RUN_ACTION_SCRIPT: &str = include_str!("../../scripts/run-action.sh");
/// The name the wrapper runs under (its `$0`).
pub const RUN_ACTION_NAME: &str = "tao-k8s-run-action";
/// Kept logs go to `<resultsDir>/logs/<job record>/rank-<i>.log`.
pub const LOGS_SUBDIR: &str = "logs";
/// The downward-API path of the job record the driver stamps on the pods.
pub const RECORD_FIELD: &str = "metadata.labels['tao-k8s.io/job-record']";
/// The action's (and a tier C uploader's) variable of the job record, from [`RECORD_FIELD`].
pub const RECORD_ENV: &str = "TAO_K8S_RECORD";
/// The action's variable of the kept logs' directory, `<resultsDir>/logs` (a plain value).
pub const LOG_DIR_ENV: &str = "TAO_K8S_LOG_DIR";
/// The uploader's variable of its destination, `s3://bucket/prefix/`.
pub const RESULTS_URI_ENV: &str = "TAO_K8S_RESULTS_URI";
/// The uploader's variable that makes it send the kept logs too (`"1"`), under `<uri>logs/`.
pub const KEEP_LOGS_ENV: &str = "TAO_K8S_KEEP_LOGS";
/// Tier C: how often the uploader sends the checkpoints and kept logs so far.
pub const SYNC_SECONDS: u32 = 300;
/// Tier C: the initContainer that fetches the checkpoints uploaded so far.
pub const FETCH_CHECKPOINTS_CONTAINER: &str = "fetch-checkpoints";
/// The initContainer that checks the staged config spec's digest.
pub const STAGE_CONFIG_CONTAINER: &str = "stage-config";
/// The container that uploads results after the action (tier C).
pub const UPLOAD_CONTAINER: &str = "upload-results";
/// A tier C pod's `terminationGracePeriodSeconds`: the time the uploader has for its final
/// upload once the kubelet stops it (a native sidecar is stopped with SIGTERM when the action
/// has ended, however it ended; every container is when the pod is deleted or its deadline
/// passes). Under the 300 s that `job.sh cancel` waits for a deleted Job.
pub const UPLOAD_GRACE_SECONDS: u32 = 240;
/// Without native sidecars (1.28): how long the uploader looks for the action's processes
/// before it takes the action as ended (it ran before the uploader could look, or never
/// started), and uploads what is there.
pub const UPLOAD_MAIN_START_SECONDS: u32 = 300;
/// Results that are uploaded but on no mount live in this emptyDir.
pub const RESULTS_VOLUME: &str = "tao-k8s-results";
/// What the upload container asks for, when the action sets cpu or memory.
pub const UPLOAD_CPU: &str = "250m";
pub const UPLOAD_MEMORY: &str = "512Mi";
/// The image that copies S3 data in and out, unless the request names one.
pub const DEFAULT_S3_IMAGE: &str = "amazon/aws-cli:2.17.0";
/// A ConfigMap holds at most 1 MiB, metadata included: keep room for it.
pub const MAX_CONFIG_BYTES: usize = 1024 * 1024 - 16 * 1024;

/// The extended resource of NVIDIA GPUs.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// A namespace the caller found around it, and where: for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ambient {
    pub name: String,
    /// `TAO_K8S_NAMESPACE`, `the service account`.
    pub from: &'static str,
}

/// What runs the pods (`render --target`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, JsonSchema)]
pub enum Workload {
    /// A `batch/v1` Job, Indexed for several nodes, with a headless Service of its own.
    #[default]
    IndexedJob,
    /// A `jobset.x-k8s.io/v1alpha2` JobSet of one replicated Indexed Job: the JobSet
    /// controller creates the Job and the headless Service, and restarts all pods together.
    JobSet,
}

/// What the caller decides beyond the request.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--namespace`; refused if the request names another, unless `namespace_overrides`.
    pub namespace: Option<String>,
    /// `namespace` replaces the request's (a KRM function's config, as kustomize's namespace
    /// transformer does) instead of having to agree with it (a command line's `--namespace`).
    pub namespace_overrides: bool,
    /// The namespace of the submitter's surroundings (`$TAO_K8S_NAMESPACE`, or in a pod the
    /// service account's), used when neither the flag nor the request names one.
    pub ambient_namespace: Option<Ambient>,
    pub kube_version: KubeVersion,
    pub workload: Workload,
    /// Render the 2-node NCCL probe for the request's image and scheduling instead.
    pub nccl_probe: bool,
    /// Reads the file `command.config.spec` names, when the request is in config mode: the
    /// library does no I/O, and the caller decides where a name may resolve.
    pub read_spec: Option<SpecReader>,
    /// A staged config spec passed back (`--staged-config`): used only if its digest is the one
    /// the request materialises to.
    pub staged_config: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            namespace: None,
            namespace_overrides: false,
            ambient_namespace: None,
            kube_version: KubeVersion::DEFAULT,
            workload: Workload::IndexedJob,
            nccl_probe: false,
            read_spec: None,
            staged_config: None,
        }
    }
}

/// How the caller reads a file a request names: given the name as the request wrote it, the
/// file as a source, or why it cannot be read (said after "the spec file `name`: ").
#[derive(Clone)]
pub struct SpecReader(std::sync::Arc<ReadFn>);

type ReadFn = dyn Fn(&str) -> Result<Source_, String> + Send + Sync;

impl SpecReader {
    pub fn new(read: impl Fn(&str) -> Result<Source_, String> + Send + Sync + 'static) -> Self {
        SpecReader(std::sync::Arc::new(read))
    }

    /// Read the file a request names.
    pub fn read(&self, name: &str) -> Result<Source_, String> {
        (self.0)(name)
    }
}

impl fmt::Debug for SpecReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SpecReader(..)")
    }
}

/// The template context's JSON Schema (draft-07), derived from the Plan's types: what a
/// template may use, as committed in `schemas/template-context.schema.json`. Every object is
/// closed (`additionalProperties: false`), so a context field the schema does not name fails
/// validation.
pub fn context_schema() -> serde_json::Value {
    let mut schema = schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<Plan>()
        .to_value();
    schema["title"] = "tao-k8s template context".into();
    close_objects(&mut schema);
    schema
}

/// `additionalProperties: false` on every object schema that lists its properties.
fn close_objects(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), false.into());
            }
            map.values_mut().for_each(close_objects);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

/// [`context_schema`] as committed: pretty JSON and a final newline.
pub fn context_schema_text() -> String {
    serde_json::to_string_pretty(&context_schema()).expect("a JSON value serializes") + "\n"
}

/// Everything the templates lay out.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub names: Names,
    pub namespace: String,
    /// Labels on every object.
    pub labels: BTreeMap<String, String>,
    /// The Job, or with a JobSet the template of the Job it creates.
    pub job: Job,
    /// The JobSet that runs the Job (`render --target jobset`).
    pub job_set: Option<JobSet>,
    pub config_map: Option<ConfigMap>,
    /// The headless Service of a multi-node Job (a JobSet creates its own).
    pub service: Option<Service>,
    /// The Secret the pod reads credentials from, when it needs any.
    pub credentials_secret: Option<String>,
    /// The nvcr.io pull Secret the driver script must create from NGC_KEY, when the image is
    /// on nvcr.io and the request names no pull secret.
    pub ngc_pull_secret: Option<String>,
    /// Where every producer-side path lands (`render --staging-map`).
    #[serde(skip)]
    pub staging_map: crate::staging::StagingMap,
    /// Things the user should know that are not problems (printed as notes).
    #[serde(skip)]
    pub notes: Vec<String>,
    /// What the driver script checks and records about the run.
    pub run: Run,
}

/// What the driver script gates on and records, decided with the objects.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub nodes: u32,
    pub gpus_per_node: u32,
    /// Existing pull Secrets the request names (the script checks they exist).
    pub image_pull_secrets: Vec<String>,
    /// PersistentVolumeClaims the pod mounts (the script checks they are Bound).
    pub pvcs: Vec<String>,
    /// Keys the credentials Secret must hold, and those it holds when they are set.
    pub required_keys: Vec<String>,
    pub optional_keys: Vec<String>,
    /// The oldest server the objects run on, when it matters (multi-node).
    pub min_kube: Option<String>,
    /// The Kueue LocalQueue that admits the Job.
    pub queue: Option<String>,
    pub image: String,
    pub network_arch: String,
    pub action: String,
    /// The storage tier, `A` or `C`.
    #[schemars(extend("enum" = ["A", "C"]))]
    pub tier: &'static str,
    /// Where the results are kept: `resultsDir` on a mount (tier A), the S3 prefix it is
    /// uploaded to (tier C).
    pub results_dir: String,
    /// The NCCL probe's Job, for multi-node jobs with GPUs (a Job whatever the workload).
    pub probe_job: Option<String>,
    /// What runs the pods: the driver gets, watches and deletes that kind.
    pub workload: Workload,
}

/// The run facts of a request whose objects are laid out in `pod`.
fn run(req: &ActionRequest, pod: &Pod, workload: Workload) -> Run {
    let spec = &req.spec;
    let (mut required, mut optional) = (Vec::new(), Vec::new());
    if req.needs_credentials() {
        if req.needs_s3_credentials() {
            required.extend(S3_KEYS[..2].iter().map(|k| k.to_string()));
            optional.extend(S3_KEYS[2..].iter().map(|k| k.to_string()));
        }
        required.extend(spec.credentials.extra.iter().cloned());
    }
    let mut pvcs: Vec<String> = pod
        .volumes
        .iter()
        .filter_map(|v| v.claim().map(String::from))
        .collect();
    pvcs.dedup();
    let nodes = req.nodes();
    let gpus = spec.resources.gpus_per_node;
    Run {
        nodes,
        gpus_per_node: gpus,
        image_pull_secrets: spec.image_pull_secrets.clone(),
        pvcs,
        required_keys: required,
        optional_keys: optional,
        min_kube: (nodes > 1).then(|| KubeVersion::MULTI_NODE.to_string()),
        queue: spec.scheduling.queue_name.clone(),
        image: spec.image.clone(),
        network_arch: spec.network_arch.clone(),
        action: spec.action.clone(),
        tier: match req.tier() {
            crate::request::Tier::A => "A",
            crate::request::Tier::C => "C",
        },
        // Tier C's results survive the pod in S3: the record names that prefix.
        results_dir: match (req.tier(), spec.storage.s3.as_ref()) {
            (
                crate::request::Tier::C,
                Some(crate::request::S3 {
                    results: Some(results),
                    ..
                }),
            ) => results.uri.clone(),
            _ => spec.results_dir.clone(),
        },
        probe_job: (nodes > 1 && gpus > 0).then(|| {
            Names::derive(
                &probe_name(&req.metadata.name),
                2,
                None,
                Workload::IndexedJob,
            )
            .job
        }),
        workload,
    }
}

/// The batch/v1 Job.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub backoff_limit: u32,
    pub ttl_seconds_after_finished: u32,
    pub active_deadline_seconds: Option<u32>,
    /// The `podFailurePolicy` rules, in order: the first that matches a failed pod decides.
    pub pod_failure_policy: Vec<FailureRule>,
    /// Created suspended, for a Kueue queue to admit.
    pub suspend: bool,
    /// Multi-node: an Indexed Job.
    pub indexed: Option<Indexed>,
    pub pod: Pod,
}

/// One rule of the Job's `podFailurePolicy`: exactly one of `onPodCondition` and
/// `onExitCodes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailureRule {
    /// `Ignore`: the pod is replaced and not counted; `Count`: counted against
    /// `backoffLimit`; `FailJob`: the Job fails at once.
    #[schemars(extend("enum" = ["Ignore", "Count", "FailJob"]))]
    pub action: &'static str,
    /// A condition type the failed pod has, with status `True`.
    pub on_pod_condition: Option<&'static str>,
    pub on_exit_codes: Option<ExitCodes>,
}

/// The exit codes of one container that a failure rule matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExitCodes {
    pub container_name: &'static str,
    #[schemars(extend("enum" = ["In", "NotIn"]))]
    pub operator: &'static str,
    /// Sorted, without repeats, as the API server wants them.
    pub values: Vec<u8>,
}

/// The Job's `backoffLimit` and `podFailurePolicy` for a request, so that a disruption is not
/// taken for the action failing:
/// - `retries.disruptions` unset: a disrupted pod is replaced and not counted (`Ignore`);
/// - `retries.disruptions: N`: it is counted against a limit raised by N, and then any other
///   failure of the action fails the Job at once unless `backoffLimit` asks for retries;
/// - `retries.disruptions: 0`: no rule; a disruption counts as any failure.
///
/// `retries.fatalExitCodes` fail the Job at once. The disruption rule comes first: a
/// disrupted action is stopped by a signal, and its exit code says nothing of the action.
pub fn failure_policy(spec: &crate::request::Spec) -> (u32, Vec<FailureRule>) {
    let backoff = spec.backoff_limit.unwrap_or(0);
    let mut rules = Vec::new();
    let disruption = |action| FailureRule {
        action,
        on_pod_condition: Some(crate::kube::DISRUPTION_CONDITION),
        on_exit_codes: None,
    };
    let fail_on = |operator, values| FailureRule {
        action: "FailJob",
        on_pod_condition: None,
        on_exit_codes: Some(ExitCodes {
            container_name: MAIN_CONTAINER,
            operator,
            values,
        }),
    };
    let limit = match spec.retries.disruptions {
        None => {
            rules.push(disruption("Ignore"));
            backoff
        }
        Some(0) => backoff,
        Some(n) => {
            rules.push(disruption("Count"));
            backoff.saturating_add(n)
        }
    };
    let mut fatal: Vec<u8> = spec.retries.fatal_exit_codes.clone();
    fatal.sort_unstable();
    fatal.dedup();
    if backoff == 0 && limit > 0 {
        // The limit is the disruptions' alone: every exit code of the action is fatal.
        rules.push(fail_on("NotIn", vec![0]));
    } else if !fatal.is_empty() {
        rules.push(fail_on("In", fatal));
    }
    (limit, rules)
}

/// The JobSet around the Job (`render --target jobset`). Its labels, annotations, TTL and
/// `suspend` are the Job's, moved up: the Job it creates carries the pod labels only.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSet {
    /// The one replicated Job, `workers`, of one replica.
    pub replicated_job: &'static str,
    /// The headless Service the JobSet creates for its pods' names (`network.subdomain`).
    pub subdomain: String,
    /// Restarts of every pod together (`failurePolicy.maxRestarts`).
    pub max_restarts: u32,
    pub failure_rules: Vec<JobSetRule>,
}

/// A rule of a JobSet's `failurePolicy`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSetRule {
    /// Letters, digits and `_`: the JobSet webhook's pattern for rule names.
    pub name: &'static str,
    #[schemars(extend("enum" = ["FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts"]))]
    pub action: &'static str,
    pub on_job_failure_reasons: Vec<&'static str>,
}

/// The failure handling of a JobSet for a request: the JobSet restarts all pods together, a
/// restart of the rendezvous being what a collective needs, and counts restarts, not their
/// cause. So the Job it creates has `backoffLimit: 0` and:
/// - `retries.disruptions` unset: a disrupted pod is replaced in place and not counted
///   (`Ignore`), as for a Job;
/// - `retries.disruptions: N`: a disruption fails the Job, and the JobSet restarts; N adds to
///   `maxRestarts`, which `backoffLimit` sets (one budget: JobSet cannot tell the causes apart);
/// - `retries.disruptions: 0`: a disruption is a failure like any other;
/// - `retries.fatalExitCodes`: the Job fails on them (`FailJob`, reason `PodFailurePolicy`)
///   and the JobSet fails without a restart (`FailJobSet` on that reason).
///
/// Returns the Job's `backoffLimit` and `podFailurePolicy`, and the JobSet.
pub fn jobset_failure_policy(
    spec: &crate::request::Spec,
    subdomain: &str,
) -> (u32, Vec<FailureRule>, JobSet) {
    let restarts = spec
        .backoff_limit
        .unwrap_or(0)
        .saturating_add(spec.retries.disruptions.unwrap_or(0));
    let mut rules = Vec::new();
    if spec.retries.disruptions.is_none() {
        rules.push(FailureRule {
            action: "Ignore",
            on_pod_condition: Some(crate::kube::DISRUPTION_CONDITION),
            on_exit_codes: None,
        });
    }
    let mut fatal: Vec<u8> = spec.retries.fatal_exit_codes.clone();
    fatal.sort_unstable();
    fatal.dedup();
    let mut failure_rules = Vec::new();
    if !fatal.is_empty() {
        rules.push(FailureRule {
            action: "FailJob",
            on_pod_condition: None,
            on_exit_codes: Some(ExitCodes {
                container_name: MAIN_CONTAINER,
                operator: "In",
                values: fatal,
            }),
        });
        failure_rules.push(JobSetRule {
            name: "fatal_exit_code",
            action: "FailJobSet",
            on_job_failure_reasons: vec!["PodFailurePolicy"],
        });
    }
    let job_set = JobSet {
        replicated_job: names::REPLICATED_JOB,
        subdomain: subdomain.to_string(),
        max_restarts: restarts,
        failure_rules,
    };
    (0, rules, job_set)
}

/// Completions and parallelism of an Indexed Job: one pod per node, all at once.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Indexed {
    /// Always `Indexed`: each pod gets its completion index (its rank).
    #[schemars(extend("const" = "Indexed"))]
    pub completion_mode: &'static str,
    pub completions: u32,
    pub parallelism: u32,
}

/// The headless Service that names the pods of an Indexed Job.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Service {
    pub name: String,
    pub annotations: BTreeMap<String, String>,
    /// `None`: headless, so each pod gets a DNS name of its own.
    #[serde(rename = "clusterIP")]
    pub cluster_ip: &'static str,
    /// Pods with initContainers are not Ready while they wait for the rendezvous, and no DNS
    /// record exists for unready pods otherwise.
    pub publish_not_ready_addresses: bool,
    /// The Job's pods, by the label the Job controller sets.
    pub selector: BTreeMap<String, String>,
    pub port_name: String,
    pub protocol: &'static str,
    pub port: u16,
}

/// The Job's pod template.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// `Never`: a failed action is not blindly restarted in place (`backoffLimit` decides).
    pub restart_policy: &'static str,
    pub priority_class_name: Option<String>,
    /// The headless Service's name, so that pods get `<hostname>.<subdomain>` DNS names.
    pub subdomain: Option<String>,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
    pub image_pull_secrets: Vec<String>,
    /// One process namespace for all containers: set when the tier C uploader is a regular
    /// container (no native sidecars at the target version), so that it sees the action's
    /// processes end however they end (an OOM kill leaves no exit code behind).
    pub share_process_namespace: bool,
    /// Set for a tier C pod: the time its uploader has for the final upload once stopped.
    pub termination_grace_period_seconds: Option<u32>,
    /// The request's user: set, the pod and every container meet the `restricted` Pod
    /// Security Standard (`runAsNonRoot`, `seccompProfile: RuntimeDefault`, no privilege
    /// escalation, every capability dropped).
    pub security_context: Option<crate::request::SecurityContext>,
    pub init_containers: Vec<Container>,
    pub containers: Vec<Container>,
    pub volumes: Vec<Volume>,
}

/// One container.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    pub name: String,
    pub image: String,
    /// `Always` on an init container: a native sidecar, started before the containers and
    /// stopped by the kubelet once they have ended.
    pub restart_policy: Option<&'static str>,
    pub command: Vec<String>,
    pub args: Vec<String>,
    pub env: Vec<EnvVar>,
    /// `envFrom.secretRef` to this Secret.
    pub env_from_secret: Option<String>,
    pub limits: BTreeMap<String, String>,
    pub requests: BTreeMap<String, String>,
    pub volume_mounts: Vec<VolumeMount>,
}

/// An environment variable and where its value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct EnvVar {
    pub name: String,
    pub from: EnvSource,
}

/// Where an environment variable's value comes from: `{"kind": "value", "value": ...}` in the
/// template context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum EnvSource {
    /// A plain value.
    Value { value: String },
    /// A field of the pod, through the downward API.
    Field { field_path: String },
    /// `valueFrom.secretKeyRef`: a key of a Secret, perhaps optional.
    SecretKey { secret_key: SecretKey },
}

/// An optional key of a Secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SecretKey {
    pub name: String,
    pub key: String,
    pub optional: bool,
}

impl EnvVar {
    /// A plain value.
    pub fn value(name: &str, value: impl Into<String>) -> EnvVar {
        EnvVar {
            name: name.into(),
            from: EnvSource::Value {
                value: value.into(),
            },
        }
    }

    /// A field of the pod, through the downward API.
    pub fn field(name: &str, path: &str) -> EnvVar {
        EnvVar {
            name: name.into(),
            from: EnvSource::Field {
                field_path: path.into(),
            },
        }
    }

    /// A key of a Secret.
    pub fn secret_key(name: &str, secret_key: SecretKey) -> EnvVar {
        EnvVar {
            name: name.into(),
            from: EnvSource::SecretKey { secret_key },
        }
    }

    /// The plain value, if it is one.
    pub fn plain(&self) -> Option<&str> {
        match &self.from {
            EnvSource::Value { value } => Some(value),
            _ => None,
        }
    }
}

/// A volume mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeMount {
    pub name: String,
    pub mount_path: String,
    pub sub_path: Option<String>,
    pub read_only: bool,
}

/// A pod volume and its one source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    pub name: String,
    pub source: VolumeSource,
    pub read_only: bool,
}

/// What a volume holds: `{"kind": "persistentVolumeClaim", "claimName": ...}` in the template
/// context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum VolumeSource {
    PersistentVolumeClaim { claim_name: String },
    Nfs { server: String, path: String },
    ConfigMap { name: String },
    EmptyDir { empty_dir: EmptyDir },
}

/// An emptyDir volume.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmptyDir {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub medium: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_limit: Option<String>,
}

/// The staged config spec, shipped as a ConfigMap.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMap {
    pub name: String,
    pub annotations: BTreeMap<String, String>,
    /// Immutable: the pod checks the digest it was rendered with.
    pub immutable: bool,
    pub key: String,
    /// The materialised spec, bytes unchanged.
    pub data: String,
    pub sha256: String,
    /// Where the pod sees it.
    pub path: String,
}

/// Build the Plan of a checked request and its staging layout.
pub fn build(loaded: &Loaded, staging: &Staging, opts: &Options) -> Result<Plan, Vec<Diagnostic>> {
    let req = &loaded.request;
    let spec = &req.spec;
    let mut errors = Vec::new();
    let namespace = namespace(loaded, opts).unwrap_or_else(|d| {
        errors.push(d);
        String::new()
    });
    if !opts.kube_version.is_supported() {
        errors.push(
            Diagnostic::error(
                OPTION,
                format!(
                    "Kubernetes {} is not a supported target: tao-k8s targets {}",
                    opts.kube_version,
                    KubeVersion::supported_range()
                ),
            )
            .help("multi-node needs 1.28 for the pod hostnames `<job>-<index>` that MASTER_ADDR names; target a version in the range"),
        );
    }
    let names = Names::derive(
        &req.metadata.name,
        req.nodes(),
        spec.credentials.secret_name.as_deref(),
        opts.workload,
    );
    let (config_map, staging_map) = match config::config_map(loaded, staging, &names, opts) {
        Ok(staged) => staged,
        Err(mut d) => {
            errors.append(&mut d);
            (None, staging.map.clone())
        }
    };
    let mode = spec.command.mode();
    if mode.is_none() {
        errors.push(Diagnostic::error(
            crate::codes::COMMAND_MODE,
            "`spec.command` needs exactly one mode: the request was not checked",
        ));
    }
    let (Some(mode), true) = (mode, errors.is_empty()) else {
        return Err(errors);
    };

    let labels = labels(req, &names);
    let mut notes = Vec::new();
    let mut job_annotations = BTreeMap::new();
    if req.metadata.name != names.job {
        job_annotations.insert(REQUEST_NAME_ANNOTATION.into(), req.metadata.name.clone());
    }
    if spec.resources.gpus_per_node == 0 {
        job_annotations.insert("tao-k8s.io/gpu-scheduling".into(), "not-verified".into());
        notes
            .push("gpusPerNode is 0: a lifecycle-only Job, GPU scheduling was not verified".into());
    }
    let laid = pod::lay_out(
        req,
        mode,
        staging,
        &names,
        config_map.as_ref(),
        &labels,
        opts.kube_version,
    );
    job_annotations.extend(laid.job_annotations);
    notes.extend(laid.notes);

    let mut job_labels = labels.clone();
    let queue = spec.scheduling.queue_name.clone();
    if let Some(q) = &queue {
        job_labels.insert("kueue.x-k8s.io/queue-name".into(), q.clone());
    }
    let nodes = req.nodes();
    let (backoff_limit, pod_failure_policy, job_set) = match opts.workload {
        Workload::IndexedJob => {
            let (limit, rules) = failure_policy(spec);
            (limit, rules, None)
        }
        Workload::JobSet => {
            let (limit, rules, job_set) = jobset_failure_policy(spec, &names.service);
            (limit, rules, Some(job_set))
        }
    };
    let mut service = laid.service;
    let mut pod = laid.pod;
    if job_set.is_some() {
        // The JobSet creates the headless Service and sets the pods' subdomain itself.
        service = None;
        pod.subdomain = None;
    }
    let run = run(req, &pod, opts.workload);
    if spec.credentials.secret_name.is_some() {
        named_keys_only(&mut pod, &names.secret, &run);
    }
    Ok(Plan {
        namespace,
        job: Job {
            labels: job_labels,
            annotations: job_annotations,
            backoff_limit,
            ttl_seconds_after_finished: spec.ttl_seconds_after_finished.unwrap_or(DEFAULT_TTL),
            active_deadline_seconds: spec.active_deadline_seconds.filter(|&s| s > 0),
            pod_failure_policy,
            suspend: queue.is_some(),
            indexed: (nodes > 1).then_some(Indexed {
                completion_mode: "Indexed",
                completions: nodes,
                parallelism: nodes,
            }),
            pod,
        },
        job_set,
        config_map,
        service,
        credentials_secret: req.needs_credentials().then(|| names.secret.clone()),
        ngc_pull_secret: probe::needs_ngc_pull_secret(spec).then(|| names.pull_secret.clone()),
        staging_map,
        names,
        labels,
        notes,
        run,
    })
}

/// A Secret the request names may exist already and belong to someone else, holding keys
/// the job was never meant to see: the containers read only the keys the request names, one
/// `secretKeyRef` each (the optional ones optional), never `envFrom` of the whole Secret.
fn named_keys_only(pod: &mut Pod, secret: &str, run: &Run) {
    let keys = run
        .required_keys
        .iter()
        .map(|k| (k, false))
        .chain(run.optional_keys.iter().map(|k| (k, true)));
    let keys: Vec<(&String, bool)> = keys.collect();
    for c in pod.init_containers.iter_mut().chain(&mut pod.containers) {
        if c.env_from_secret.as_deref() != Some(secret) {
            continue;
        }
        c.env_from_secret = None;
        for (key, optional) in &keys {
            if !c.env.iter().any(|e| e.name == **key) {
                let from = SecretKey {
                    name: secret.to_string(),
                    key: key.to_string(),
                    optional: *optional,
                };
                c.env.push(EnvVar::secret_key(key, from));
            }
        }
    }
}

/// The labels of every object: the request's, and what says what made it.
fn labels(req: &ActionRequest, names: &Names) -> BTreeMap<String, String> {
    let spec = &req.spec;
    let mut labels = req.metadata.labels.clone();
    labels.insert("app.kubernetes.io/name".into(), "tao".into());
    labels.insert("app.kubernetes.io/instance".into(), names.job.clone());
    labels.insert("app.kubernetes.io/managed-by".into(), "tao-k8s".into());
    labels.insert("app.kubernetes.io/component".into(), spec.action.clone());
    labels.insert("tao-k8s.io/network-arch".into(), spec.network_arch.clone());
    if let Some(id) = &req.metadata.record_id {
        labels.insert("tao-k8s.io/record-id".into(), id.clone());
    }
    labels
}

impl VolumeMount {
    /// A writable mount of a whole volume.
    fn at(name: &str, path: &str) -> VolumeMount {
        VolumeMount {
            name: name.into(),
            mount_path: path.into(),
            sub_path: None,
            read_only: false,
        }
    }
}

impl Volume {
    /// A writable volume.
    fn of(name: &str, source: VolumeSource) -> Volume {
        Volume {
            name: name.into(),
            source,
            read_only: false,
        }
    }

    /// A writable emptyDir.
    fn empty(name: &str, empty_dir: EmptyDir) -> Volume {
        Volume::of(name, VolumeSource::EmptyDir { empty_dir })
    }

    /// The claim of a PVC volume.
    pub fn claim(&self) -> Option<&str> {
        match &self.source {
            VolumeSource::PersistentVolumeClaim { claim_name } => Some(claim_name),
            _ => None,
        }
    }
}

/// flag or request > `$TAO_K8S_NAMESPACE` (or the pod's service account's) > `default`. A flag that names another namespace
/// than the request's is refused, as kubectl refuses an object of another namespace than its
/// `--namespace`: neither silently wins.
fn namespace(loaded: &Loaded, opts: &Options) -> Result<String, Diagnostic> {
    let req = &loaded.request;
    let (ns, from) = if let Some(ns) = &opts.namespace {
        (ns.as_str(), "--namespace")
    } else if let Some(ns) = &req.metadata.namespace {
        return Ok(ns.clone()); // checked with the request
    } else if let Some(ambient) = opts
        .ambient_namespace
        .as_ref()
        .filter(|a| !a.name.is_empty())
    {
        (ambient.name.as_str(), ambient.from)
    } else {
        ("default", "the default")
    };
    if !is_dns1123_label(ns) {
        return Err(Diagnostic::error(
            OPTION,
            format!("namespace `{ns}` from {from} is not a valid namespace name"),
        )
        .help("a DNS-1123 label: lowercase letters, digits and `-`, at most 63 characters"));
    }
    match &req.metadata.namespace {
        Some(own) if own != ns && !opts.namespace_overrides => {
            let path = [
                crate::yaml::Step::Key("metadata".into()),
                crate::yaml::Step::Key("namespace".into()),
            ];
            let mut d = Diagnostic::error(
                OPTION,
                format!(
                    "the namespace from the request (`metadata.namespace: {own}`) does not \
                     match --namespace `{ns}`"
                ),
            )
            .at_path("metadata.namespace")
            .help(format!(
                "drop --namespace, pass --namespace {own}, or change metadata.namespace to {ns}"
            ));
            if let Some((_, node)) = loaded.tree.lookup(&path) {
                d = d.primary(
                    node.span.clone(),
                    format!("the request's namespace is `{own}`"),
                );
            }
            Err(d)
        }
        _ => Ok(ns.to_string()),
    }
}

/// A request for the plan's unit tests: the example's fields with `spec` lines added.
#[cfg(test)]
pub(crate) fn test_request(spec: &str) -> Source_ {
    Source_::new(
        "t.yaml",
        format!(
            "apiVersion: tao-k8s/v1\nkind: ActionRequest\nmetadata: {{name: t}}\nspec:\n  \
             image: nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt\n  networkArch: dino\n  \
             action: train\n  resultsDir: /results/run\n{spec}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_versions_parse_and_order() {
        for ok in ["1.28", "v1.28", "1.28.3"] {
            assert_eq!(ok.parse::<KubeVersion>(), Ok(KubeVersion::DEFAULT), "{ok}");
        }
        for bad in ["", "1", "one.28", "1.28.x", "1.28.3.4", "1.-1"] {
            assert!(bad.parse::<KubeVersion>().is_err(), "{bad}");
        }
        let v = |s: &str| s.parse::<KubeVersion>().unwrap();
        assert!(v("1.27") < KubeVersion::MULTI_NODE && v("1.100") > v("1.28"));
        assert_eq!(v("1.31").to_string(), "1.31");
    }

    /// The Job's `backoffLimit` and its rules, in words: `Ignore DisruptionTarget`,
    /// `FailJob tao In [2, 42]`.
    fn policy(retries: &str) -> (u32, Vec<String>) {
        let source = test_request(&format!(
            "  command: {{shell: run}}\n  resources: {{gpusPerNode: 1}}\n  \
             storage: {{mounts: [{{name: r, persistentVolumeClaim: r, mountPath: /results}}]}}\n\
             {retries}"
        ));
        let loaded = crate::request::load(&source).unwrap();
        let (limit, rules) = failure_policy(&loaded.request.spec);
        let said = rules
            .iter()
            .map(|r| match (&r.on_pod_condition, &r.on_exit_codes) {
                (Some(condition), None) => format!("{} {condition}", r.action),
                (None, Some(c)) => {
                    format!(
                        "{} {} {} {:?}",
                        r.action, c.container_name, c.operator, c.values
                    )
                }
                _ => panic!("a rule with both or neither: {r:?}"),
            });
        (limit, said.collect())
    }

    #[test]
    fn a_disruption_is_not_counted_unless_bounded() {
        assert_eq!(policy(""), (0, vec!["Ignore DisruptionTarget".to_string()]));
        assert_eq!(
            policy("  backoffLimit: 2\n"),
            (2, vec!["Ignore DisruptionTarget".to_string()])
        );
        assert_eq!(policy("  retries: {disruptions: 0}\n"), (0, vec![]));
    }

    #[test]
    fn bounded_disruptions_leave_no_retry_to_the_action_unless_asked() {
        let (limit, rules) = policy("  retries: {disruptions: 3}\n");
        assert_eq!(limit, 3);
        assert_eq!(rules, ["Count DisruptionTarget", "FailJob tao NotIn [0]"]);
        // With retries asked for the action, the two share the limit; fatal codes end it.
        let (limit, rules) =
            policy("  backoffLimit: 2\n  retries: {disruptions: 3, fatalExitCodes: [42, 2, 42]}\n");
        assert_eq!(limit, 5);
        assert_eq!(rules, ["Count DisruptionTarget", "FailJob tao In [2, 42]"]);
    }

    #[test]
    fn fatal_exit_codes_come_after_the_disruption_rule() {
        let (limit, rules) = policy("  backoffLimit: 4\n  retries: {fatalExitCodes: [137]}\n");
        assert_eq!(limit, 4);
        assert_eq!(rules, ["Ignore DisruptionTarget", "FailJob tao In [137]"]);
    }
}
