//! ActionRequest -> Plan: every decision about the objects to emit (names, labels, the
//! container's command vector, env, resources, volumes, the staged config) is made here, in
//! Rust, and tested here. Templates only lay the Plan out as YAML.

use crate::diag::Diagnostic;
use crate::names::{self, Names};
use crate::request::pin;
use crate::request::{
    ActionRequest, Loaded, RENDEZVOUS_ENV, TaintEffect, Toleration, TolerationOperator,
};
pub use crate::request::{CONFIG_DIR, CONFIG_VOLUME, SHM_VOLUME};
use crate::source::Source as Source_;
use crate::staging::{Source, StagedConfig, Staging, StagingMap};
use crate::yaml::Step;
use serde::Serialize;
use sha2::{Digest, Sha256};
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
pub const WAIT_SCRIPT: &str = include_str!("../scripts/wait-for-rendezvous.sh");
/// The downward-API path of an Indexed Job pod's completion index.
pub const COMPLETION_INDEX_FIELD: &str =
    "metadata.annotations['batch.kubernetes.io/job-completion-index']";
/// The annotation the driver script checks against the server's version.
pub const MIN_KUBE_ANNOTATION: &str = "tao-k8s.io/min-kube-version";

/// Pod-side scripts of config staging and tier C, constants of the project.
pub const VERIFY_CONFIG_SCRIPT: &str = include_str!("../scripts/verify-config.sh");
pub const RUN_ACTION_SCRIPT: &str = include_str!("../scripts/run-action.sh");
pub const UPLOAD_RESULTS_SCRIPT: &str = include_str!("../scripts/upload-results.sh");
/// The initContainer that checks the staged config spec's digest.
pub const STAGE_CONFIG_CONTAINER: &str = "stage-config";
/// The container that uploads results after the action (tier C).
pub const UPLOAD_CONTAINER: &str = "upload-results";
/// Scratch directories of the pod: the writable spec copy and the action's exit status.
pub const WORK_VOLUME: &str = "tao-k8s-work";
pub const WORK_DIR: &str = "/etc/tao-k8s/work";
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

/// A Kubernetes minor version, `1.28`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct KubeVersion {
    pub major: u32,
    pub minor: u32,
}

impl KubeVersion {
    /// The default target.
    pub const DEFAULT: KubeVersion = KubeVersion {
        major: 1,
        minor: 28,
    };
    /// The oldest target for an Indexed Job with a rendezvous: the pod hostname
    /// `<job>-<index>` that MASTER_ADDR names needs it.
    pub const MULTI_NODE: KubeVersion = KubeVersion {
        major: 1,
        minor: 28,
    };
    /// The oldest supported target: the oldest minor whose strict schemas the output is checked
    /// against, and what multi-node needs.
    pub const OLDEST: KubeVersion = KubeVersion {
        major: 1,
        minor: 28,
    };
    /// The newest supported target.
    pub const NEWEST: KubeVersion = KubeVersion {
        major: 1,
        minor: 37,
    };

    /// Whether this version is a supported target.
    pub fn is_supported(self) -> bool {
        (KubeVersion::OLDEST..=KubeVersion::NEWEST).contains(&self)
    }

    /// The supported targets, for messages: `1.28 to 1.37`.
    pub fn supported_range() -> String {
        format!("{} to {}", KubeVersion::OLDEST, KubeVersion::NEWEST)
    }
}

impl std::str::FromStr for KubeVersion {
    type Err = String;
    /// `1.28`, `v1.28` or `1.28.3`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("expected a Kubernetes version like 1.28, found `{s}`");
        let mut parts = s.strip_prefix('v').unwrap_or(s).split('.');
        let major = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let minor = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        if parts.next().is_some_and(|p| p.parse::<u32>().is_err()) || parts.next().is_some() {
            return Err(bad());
        }
        Ok(KubeVersion { major, minor })
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What the caller decides beyond the request.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--namespace`; wins over the request.
    pub namespace: Option<String>,
    /// `$TAO_K8S_NAMESPACE`; used when neither the flag nor the request names one.
    pub env_namespace: Option<String>,
    pub kube_version: KubeVersion,
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
            env_namespace: None,
            kube_version: KubeVersion::DEFAULT,
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

/// The constant NCCL probe program, run as `python3 -c`.
pub const NCCL_PROBE: &str = include_str!("../scripts/nccl_probe.py");
/// Seconds a probe may run before its Job fails: a hang becomes a failure.
pub const NCCL_PROBE_DEADLINE: u32 = 300;

/// The base name of a request's NCCL probe.
pub fn probe_name(name: &str) -> String {
    format!("{name}-nccl-probe")
}

/// The nvcr.io pull Secret the driver script creates from NGC_KEY: for an nvcr.io image when
/// the request names no pull Secret.
pub fn ngc_pull_secret(req: &ActionRequest) -> Option<String> {
    let spec = &req.spec;
    (spec.image.starts_with("nvcr.io/") && spec.image_pull_secrets.is_empty())
        .then(|| Names::derive(&req.metadata.name, req.nodes(), None).pull_secret)
}

/// The request of the NCCL probe for `req`: two nodes with its image, GPUs per node,
/// scheduling, pull secrets, `/dev/shm` and rendezvous settings, running the probe program
/// instead of the action, with no storage and no credentials.
pub fn nccl_probe(req: &ActionRequest) -> Result<ActionRequest, Diagnostic> {
    if req.spec.resources.gpus_per_node == 0 {
        return Err(
            Diagnostic::error(OPTION, "the NCCL probe needs GPUs, but `gpusPerNode` is 0")
                .help("probe with the GPU count of the real run"),
        );
    }
    let mut probe = req.clone();
    probe.metadata.name = probe_name(&req.metadata.name);
    // The probe pulls the job's image with the job's pull Secret (created before the probe).
    if let Some(pull) = ngc_pull_secret(req) {
        probe.spec.image_pull_secrets = vec![pull];
    }
    let spec = &mut probe.spec;
    spec.action = "nccl-probe".into();
    spec.command = crate::request::Command {
        args: Some(vec!["python3".into(), "-c".into(), pod_script(NCCL_PROBE)]),
        ..Default::default()
    };
    spec.resources.nodes = Some(2);
    let memory = spec
        .resources
        .memory
        .as_ref()
        .and_then(|q| crate::quantity::parse(&q.0));
    let shm = probe.shm_size().and_then(crate::quantity::parse);
    if let (Some(memory), Some(shm)) = (memory, shm)
        && memory < shm
    {
        return Err(Diagnostic::error(
            OPTION,
            "the NCCL probe's /dev/shm (`shmSize`, 16Gi by default on multi-node) is larger than `memory`",
        )
        .help("set `resources.shmSize` to fit in `memory`"));
    }
    let spec = &mut probe.spec;
    spec.storage = Default::default();
    spec.env = Default::default();
    spec.credentials = Default::default();
    spec.backoff_limit = Some(0);
    spec.active_deadline_seconds = Some(NCCL_PROBE_DEADLINE);
    Ok(probe)
}

/// Everything the templates lay out.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub names: Names,
    pub namespace: String,
    /// Labels on every object.
    pub labels: BTreeMap<String, String>,
    pub job: Job,
    pub config_map: Option<ConfigMap>,
    /// The headless Service of a multi-node Job.
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
}

/// The batch/v1 Job.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub backoff_limit: u32,
    pub ttl_seconds_after_finished: u32,
    pub active_deadline_seconds: Option<u32>,
    /// Created suspended, for a Kueue queue to admit.
    pub suspend: bool,
    /// Multi-node: an Indexed Job.
    pub indexed: Option<Indexed>,
    pub pod: Pod,
}

/// Completions and parallelism of an Indexed Job: one pod per node, all at once.
#[derive(Debug, Clone, Serialize)]
pub struct Indexed {
    pub completions: u32,
    pub parallelism: u32,
}

/// The headless Service that names the pods of an Indexed Job.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Service {
    pub name: String,
    pub annotations: BTreeMap<String, String>,
    pub port_name: String,
    pub port: u16,
}

/// The Job's pod template.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub priority_class_name: Option<String>,
    /// The headless Service's name, so that pods get `<hostname>.<subdomain>` DNS names.
    pub subdomain: Option<String>,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
    pub image_pull_secrets: Vec<String>,
    pub init_containers: Vec<Container>,
    pub containers: Vec<Container>,
    pub volumes: Vec<Volume>,
}

/// One container.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    pub name: String,
    pub image: String,
    pub command: Vec<String>,
    pub args: Vec<String>,
    pub env: Vec<EnvVar>,
    /// `envFrom.secretRef` to this Secret.
    pub env_from_secret: Option<String>,
    pub limits: BTreeMap<String, String>,
    pub requests: BTreeMap<String, String>,
    pub volume_mounts: Vec<VolumeMount>,
}

/// An environment variable: a plain value, or a field of the pod (downward API).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    pub name: String,
    pub value: Option<String>,
    pub field_path: Option<String>,
    /// `valueFrom.secretKeyRef`, optional: a key of the credentials Secret that may be absent.
    pub secret_key: Option<SecretKey>,
}

/// An optional key of a Secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
            value: Some(value.into()),
            field_path: None,
            secret_key: None,
        }
    }

    /// A field of the pod, through the downward API.
    pub fn field(name: &str, path: &str) -> EnvVar {
        EnvVar {
            value: None,
            field_path: Some(path.into()),
            ..EnvVar::value(name, "")
        }
    }
}

/// A volume mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeMount {
    pub name: String,
    pub mount_path: String,
    pub sub_path: Option<String>,
    pub read_only: bool,
}

/// A pod volume: exactly one source is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    pub name: String,
    pub persistent_volume_claim: Option<String>,
    pub nfs: Option<crate::request::Nfs>,
    pub config_map: Option<String>,
    pub empty_dir: Option<EmptyDir>,
    pub read_only: bool,
}

/// An emptyDir volume.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmptyDir {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub medium: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_limit: Option<String>,
}

/// The staged config spec, shipped as a ConfigMap.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMap {
    pub name: String,
    pub key: String,
    /// The materialised spec, bytes unchanged.
    pub data: String,
    pub sha256: String,
    /// Where the pod sees it.
    pub path: String,
}

/// Build the Plan of a loaded request.
pub fn build(loaded: &Loaded, staging: &Staging, opts: &Options) -> Result<Plan, Vec<Diagnostic>> {
    let req = &loaded.request;
    let spec = &req.spec;
    let mut errors = Vec::new();
    let namespace = namespace(req, opts).unwrap_or_else(|d| {
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
    );

    let mut labels = req.metadata.labels.clone();
    labels.insert("app.kubernetes.io/name".into(), "tao".into());
    labels.insert("app.kubernetes.io/instance".into(), names.job.clone());
    labels.insert("app.kubernetes.io/managed-by".into(), "tao-k8s".into());
    labels.insert("app.kubernetes.io/component".into(), spec.action.clone());
    labels.insert("tao-k8s.io/network-arch".into(), spec.network_arch.clone());
    if let Some(id) = &req.metadata.record_id {
        labels.insert("tao-k8s.io/record-id".into(), id.clone());
    }

    let mut notes = Vec::new();
    let mut job_annotations = BTreeMap::new();
    if req.metadata.name != names.job {
        job_annotations.insert("tao-k8s.io/request-name".into(), req.metadata.name.clone());
    }
    let gpus = spec.resources.gpus_per_node;
    if gpus == 0 {
        job_annotations.insert("tao-k8s.io/gpu-scheduling".into(), "not-verified".into());
        notes
            .push("gpusPerNode is 0: a lifecycle-only Job, GPU scheduling was not verified".into());
    }

    let (config_map, staging_map) = match config_map(loaded, staging, &names, opts) {
        Ok(staged) => staged,
        Err(mut d) => {
            errors.append(&mut d);
            (None, staging.map.clone())
        }
    };
    if !errors.is_empty() {
        return Err(errors);
    }

    let nodes = req.nodes();
    let multi_node = nodes > 1;
    let s3_secret = req.needs_s3_credentials().then(|| names.secret.clone());
    let mut container = Container {
        name: MAIN_CONTAINER.into(),
        image: spec.image.clone(),
        command: Vec::new(),
        args: Vec::new(),
        env: Vec::new(),
        env_from_secret: req.action_needs_credentials().then(|| names.secret.clone()),
        limits: BTreeMap::new(),
        requests: BTreeMap::new(),
        volume_mounts: Vec::new(),
    };
    (container.command, container.args) = command_vector(req, staging, config_map.as_ref());
    // Requests equal limits: a training pod gets the Guaranteed QoS class (evicted last).
    for (name, q) in [
        ("cpu", &spec.resources.cpu),
        ("memory", &spec.resources.memory),
        ("ephemeral-storage", &spec.resources.ephemeral_storage),
    ] {
        if let Some(q) = q {
            container.limits.insert(name.into(), q.0.clone());
            container.requests.insert(name.into(), q.0.clone());
        }
    }
    // Helper containers get the same cpu and memory, or the pod would lose Guaranteed QoS.
    let helper = |name: &str, image: &str, command: Vec<String>, env: Vec<EnvVar>| Container {
        name: name.into(),
        image: image.into(),
        command,
        args: Vec::new(),
        env,
        env_from_secret: None,
        limits: container.limits.clone(),
        requests: container.requests.clone(),
        volume_mounts: Vec::new(),
    };
    let s3_image = spec
        .storage
        .s3
        .as_ref()
        .and_then(|s| s.image.clone())
        .unwrap_or_else(|| DEFAULT_S3_IMAGE.into());
    // aws-cli reads AWS_ENDPOINT_URL; the Secret carries S3_ENDPOINT_URL when one is set.
    let s3_env = || -> Vec<EnvVar> {
        s3_secret
            .iter()
            .map(|secret| EnvVar {
                secret_key: Some(SecretKey {
                    name: secret.clone(),
                    key: "S3_ENDPOINT_URL".into(),
                    optional: true,
                }),
                value: None,
                ..EnvVar::value("AWS_ENDPOINT_URL", "")
            })
            .collect()
    };

    let mut volumes = Vec::new();
    let mut init_containers = Vec::new();
    let mut sidecars = Vec::new();
    for v in &staging.volumes {
        let (volume, sub_path) = match &v.source {
            Source::PersistentVolumeClaim {
                claim_name,
                sub_path,
            } => (
                Volume {
                    persistent_volume_claim: Some(claim_name.clone()),
                    ..Volume::named(&v.name)
                },
                sub_path.clone(),
            ),
            Source::Nfs {
                server,
                path,
                sub_path,
            } => (
                Volume {
                    nfs: Some(crate::request::Nfs {
                        server: server.clone(),
                        path: path.clone(),
                    }),
                    ..Volume::named(&v.name)
                },
                sub_path.clone(),
            ),
            Source::S3 { uri } => {
                let mut fetch = helper(
                    &format!("fetch-{}", init_containers.len()),
                    &s3_image,
                    s3_copy(uri, &v.mount_path),
                    s3_env(),
                );
                fetch.env_from_secret = s3_secret.clone();
                fetch
                    .volume_mounts
                    .push(VolumeMount::at(&v.name, &v.mount_path));
                init_containers.push(fetch);
                let empty = EmptyDir {
                    medium: None,
                    size_limit: v.size_limit.clone(),
                };
                (
                    Volume {
                        empty_dir: Some(empty),
                        ..Volume::named(&v.name)
                    },
                    None,
                )
            }
            Source::EmptyDir => continue,
        };
        volumes.push(Volume {
            read_only: v.read_only,
            ..volume
        });
        container.volume_mounts.push(VolumeMount {
            name: v.name.clone(),
            mount_path: v.mount_path.clone(),
            sub_path,
            read_only: v.read_only,
        });
    }
    if staging
        .volumes
        .iter()
        .any(|v| matches!(v.source, Source::S3 { .. }))
        && gpus > 0
    {
        notes.push(format!(
            "tier C: the pod holds its {gpus} GPU(s) while the S3 inputs download; prefer a PVC (tier A) for large inputs"
        ));
    }

    let mut pod_annotations = BTreeMap::new();
    let needs_work_dir = (config_map.is_some() && multi_node)
        || spec
            .storage
            .s3
            .as_ref()
            .is_some_and(|s| s.results.is_some());
    if needs_work_dir {
        volumes.push(Volume {
            empty_dir: Some(EmptyDir::default()),
            ..Volume::named(WORK_VOLUME)
        });
        container
            .volume_mounts
            .push(VolumeMount::at(WORK_VOLUME, WORK_DIR));
    }
    if let Some(cm) = &config_map {
        volumes.push(Volume {
            config_map: Some(cm.name.clone()),
            read_only: true,
            ..Volume::named(CONFIG_VOLUME)
        });
        let config_mount = VolumeMount {
            read_only: true,
            ..VolumeMount::at(CONFIG_VOLUME, CONFIG_DIR)
        };
        container.volume_mounts.push(config_mount.clone());
        pod_annotations.insert("tao-k8s.io/config-sha256".into(), cm.sha256.clone());
        // The pod checks what it received; TAO's multi-node entrypoint rewrites its spec in
        // place, so multi-node gets a writable copy made after the check.
        let mut env = vec![
            EnvVar::value("TAO_K8S_CONFIG_SRC", format!("{CONFIG_DIR}/{CONFIG_FILE}")),
            EnvVar::value("TAO_K8S_CONFIG_SHA256", cm.sha256.clone()),
        ];
        let mut stage = helper(
            STAGE_CONFIG_CONTAINER,
            &spec.image,
            sh(VERIFY_CONFIG_SCRIPT),
            Vec::new(),
        );
        stage.volume_mounts.push(config_mount);
        if multi_node {
            env.push(EnvVar::value("TAO_K8S_CONFIG_COPY", cm.path.clone()));
            stage
                .volume_mounts
                .push(VolumeMount::at(WORK_VOLUME, WORK_DIR));
        }
        stage.env = env;
        init_containers.insert(0, stage);
    }
    if let Some(size) = req.shm_size() {
        volumes.push(Volume {
            empty_dir: Some(EmptyDir {
                medium: Some("Memory".into()),
                size_limit: Some(size.to_string()),
            }),
            ..Volume::named(SHM_VOLUME)
        });
        container
            .volume_mounts
            .push(VolumeMount::at(SHM_VOLUME, "/dev/shm"));
    }

    let mut service = None;
    if multi_node {
        let port = spec
            .rendezvous
            .as_ref()
            .and_then(|r| r.port)
            .unwrap_or(DEFAULT_RENDEZVOUS_PORT);
        let timeout = spec
            .rendezvous
            .as_ref()
            .and_then(|r| r.timeout_seconds)
            .unwrap_or(DEFAULT_RENDEZVOUS_TIMEOUT);
        let master = format!("{}.{}", names::pod_hostname(&names.job, 0), names.service);
        container.env = rendezvous_env(nodes, gpus, &master, port);
        init_containers.push(helper(
            WAIT_CONTAINER,
            &spec.image,
            sh(WAIT_SCRIPT),
            vec![
                EnvVar::value("MASTER_ADDR", master),
                EnvVar::value("TAO_K8S_RENDEZVOUS_TIMEOUT", timeout.to_string()),
            ],
        ));
        let min = KubeVersion::MULTI_NODE.to_string();
        job_annotations.insert(MIN_KUBE_ANNOTATION.into(), min.clone());
        service = Some(Service {
            name: names.service.clone(),
            annotations: BTreeMap::from([(MIN_KUBE_ANNOTATION.to_string(), min)]),
            port_name: RENDEZVOUS_PORT_NAME.into(),
            port,
        });
    }
    container.env.extend(
        spec.env
            .iter()
            .map(|(name, value)| EnvVar::value(name, value.clone())),
    );

    if let Some(results) = spec.storage.s3.as_ref().and_then(|s| s.results.as_ref()) {
        // The action runs under a constant wrapper that records its exit code; the uploader
        // waits for it, uploads even after a failure, and the pod succeeds only if both do.
        let status = WORK_DIR.to_string();
        let mut argv = sh(RUN_ACTION_SCRIPT);
        argv.push("tao-k8s-run".into());
        argv.append(&mut container.command);
        argv.append(&mut container.args);
        container.command = argv;
        container
            .env
            .push(EnvVar::value("TAO_K8S_STATUS_DIR", status.clone()));
        let mut env = vec![
            EnvVar::value("TAO_K8S_STATUS_DIR", status),
            EnvVar::value("TAO_K8S_RESULTS_DIR", staging.results_dir.clone()),
            EnvVar::value("TAO_K8S_RESULTS_URI", results.uri.clone()),
        ];
        if multi_node {
            env.push(EnvVar::field("NODE_RANK", COMPLETION_INDEX_FIELD));
        }
        if results.per_rank && multi_node {
            env.push(EnvVar::value("TAO_K8S_UPLOAD_PER_RANK", "1"));
        }
        env.extend(s3_env());
        let mut upload = helper(UPLOAD_CONTAINER, &s3_image, sh(UPLOAD_RESULTS_SCRIPT), env);
        // A regular container adds to the pod's requests: it gets a small share of what the
        // action sets (so the pod keeps its QoS class), not a copy of it.
        for (name, small) in [("cpu", UPLOAD_CPU), ("memory", UPLOAD_MEMORY)] {
            for quantities in [&mut upload.limits, &mut upload.requests] {
                if quantities.contains_key(name) {
                    quantities.insert(name.into(), small.into());
                }
            }
        }
        upload.limits.remove("ephemeral-storage");
        upload.requests.remove("ephemeral-storage");
        upload.env_from_secret = s3_secret.clone();
        upload
            .volume_mounts
            .push(VolumeMount::at(WORK_VOLUME, WORK_DIR));
        match &staging.results_volume {
            Some(name) => {
                let mount = container
                    .volume_mounts
                    .iter()
                    .find(|m| &m.name == name)
                    .cloned();
                upload.volume_mounts.extend(mount.map(|m| VolumeMount {
                    read_only: true,
                    ..m
                }));
            }
            None => {
                volumes.push(Volume {
                    empty_dir: Some(EmptyDir::default()),
                    ..Volume::named(RESULTS_VOLUME)
                });
                container
                    .volume_mounts
                    .push(VolumeMount::at(RESULTS_VOLUME, &staging.results_dir));
                upload.volume_mounts.push(VolumeMount {
                    read_only: true,
                    ..VolumeMount::at(RESULTS_VOLUME, &staging.results_dir)
                });
            }
        }
        sidecars.push(upload);
    }

    let mut tolerations = spec.scheduling.tolerations.clone();
    let gpu_toleration = Toleration {
        key: Some(GPU_RESOURCE.into()),
        operator: Some(TolerationOperator::Exists),
        value: None,
        effect: Some(TaintEffect::NoSchedule),
        toleration_seconds: None,
    };
    if gpus > 0 {
        container
            .limits
            .insert(GPU_RESOURCE.into(), gpus.to_string());
        if !tolerations.iter().any(|t| tolerates(t, &gpu_toleration)) {
            tolerations.push(gpu_toleration);
        }
    }
    let ngc_pull_secret = ngc_pull_secret(req);
    let image_pull_secrets = match &ngc_pull_secret {
        Some(name) => vec![name.clone()],
        None => spec.image_pull_secrets.clone(),
    };

    let mut job_labels = labels.clone();
    let queue = spec.scheduling.queue_name.clone();
    if let Some(q) = &queue {
        job_labels.insert("kueue.x-k8s.io/queue-name".into(), q.clone());
    }
    let active_deadline_seconds = spec.active_deadline_seconds.filter(|&s| s > 0);
    let mut containers = vec![container];
    containers.append(&mut sidecars);
    Ok(Plan {
        namespace,
        job: Job {
            labels: job_labels,
            annotations: job_annotations,
            backoff_limit: spec.backoff_limit.unwrap_or(0),
            ttl_seconds_after_finished: spec.ttl_seconds_after_finished.unwrap_or(DEFAULT_TTL),
            active_deadline_seconds,
            suspend: queue.is_some(),
            indexed: multi_node.then_some(Indexed {
                completions: nodes,
                parallelism: nodes,
            }),
            pod: Pod {
                labels: labels.clone(),
                annotations: pod_annotations,
                priority_class_name: spec.scheduling.priority_class_name.clone(),
                subdomain: multi_node.then(|| names.service.clone()),
                node_selector: spec.scheduling.node_selector.clone(),
                tolerations,
                image_pull_secrets,
                init_containers,
                containers,
                volumes,
            },
        },
        config_map,
        service,
        credentials_secret: req.needs_credentials().then(|| names.secret.clone()),
        ngc_pull_secret,
        staging_map,
        names,
        labels,
        notes,
    })
}

/// `[/bin/sh, -c, <constant script as shipped>]`.
fn sh(script: &str) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), pod_script(script)]
}

/// Native argv that copies an S3 prefix (or one object) into a directory.
fn s3_copy(uri: &str, dir: &str) -> Vec<String> {
    let mut argv: Vec<String> = ["aws", "s3", "cp", "--no-progress"]
        .map(String::from)
        .to_vec();
    if uri.ends_with('/') {
        argv.push("--recursive".into());
        argv.extend([uri.to_string(), dir.to_string()]);
    } else {
        argv.extend([uri.to_string(), format!("{}/", dir.trim_end_matches('/'))]);
    }
    argv
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

/// What TAO's entrypoint (WORLD_SIZE, NUM_GPU_PER_NODE) and torchrun (NNODES,
/// NPROC_PER_NODE, NODE_RANK, MASTER_ADDR, MASTER_PORT) read, with the rank taken from the
/// pod's completion index, in the order of [`RENDEZVOUS_ENV`].
fn rendezvous_env(nodes: u32, gpus: u32, master: &str, port: u16) -> Vec<EnvVar> {
    let env = vec![
        EnvVar::value("WORLD_SIZE", nodes.to_string()),
        EnvVar::value("NUM_GPU_PER_NODE", gpus.to_string()),
        EnvVar::value("NNODES", nodes.to_string()),
        EnvVar::value("NPROC_PER_NODE", gpus.to_string()),
        EnvVar::field("NODE_RANK", COMPLETION_INDEX_FIELD),
        EnvVar::value("MASTER_ADDR", master),
        EnvVar::value("MASTER_PORT", port.to_string()),
        EnvVar::value("TAO_STRICT_MULTINODE", "1"),
    ];
    debug_assert!(
        env.iter()
            .map(|e| e.name.as_str())
            .eq(RENDEZVOUS_ENV.iter().copied())
    );
    env
}

/// A constant pod-side script as it is shipped: its documentation comments dropped (they
/// stay in `scripts/`), so the manifest shows only what runs.
pub fn pod_script(text: &str) -> String {
    let body: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .collect();
    body.join("\n") + "\n"
}

impl Volume {
    /// A volume with a name and no source yet.
    fn named(name: &str) -> Volume {
        Volume {
            name: name.into(),
            persistent_volume_claim: None,
            nfs: None,
            config_map: None,
            empty_dir: None,
            read_only: false,
        }
    }
}

/// Whether an existing toleration already covers `wanted`.
fn tolerates(t: &Toleration, wanted: &Toleration) -> bool {
    let key_ok =
        t.key.is_none() && t.operator == Some(TolerationOperator::Exists) || t.key == wanted.key;
    let effect_ok = t.effect.is_none() || t.effect == wanted.effect;
    let op_ok = t.operator == Some(TolerationOperator::Exists);
    key_ok && effect_ok && op_ok
}

/// flag > request > `$TAO_K8S_NAMESPACE` > `default`.
fn namespace(req: &ActionRequest, opts: &Options) -> Result<String, Diagnostic> {
    let (ns, from) = if let Some(ns) = &opts.namespace {
        (ns.as_str(), "--namespace")
    } else if let Some(ns) = &req.metadata.namespace {
        return Ok(ns.clone()); // checked with the request
    } else if let Some(ns) = opts.env_namespace.as_deref().filter(|ns| !ns.is_empty()) {
        (ns, "TAO_K8S_NAMESPACE")
    } else {
        ("default", "the default")
    };
    if names::is_dns1123_label(ns) {
        Ok(ns.to_string())
    } else {
        Err(Diagnostic::error(
            OPTION,
            format!("namespace `{ns}` from {from} is not a valid namespace name"),
        )
        .help("a DNS-1123 label: lowercase letters, digits and `-`, at most 63 characters"))
    }
}

/// The container's `command` and `args`, exactly as the spec's table of command modes says,
/// with producer paths in argv rewritten by the staging map.
fn command_vector(
    req: &ActionRequest,
    staging: &Staging,
    config: Option<&ConfigMap>,
) -> (Vec<String>, Vec<String>) {
    let cmd = &req.spec.command;
    let split = |argv: Vec<String>| {
        let mut it = argv.into_iter();
        (it.next().into_iter().collect(), it.collect())
    };
    let argv = staging.argv.clone().unwrap_or_default();
    if let Some(text) = &cmd.shell {
        (
            vec!["/bin/sh".into(), "-c".into(), text.clone()],
            Vec::new(),
        )
    } else if cmd.args.is_some() {
        split(argv)
    } else if let (Some(_), Some(cm)) = (&cmd.config, config) {
        split(
            argv.iter()
                .map(|a| a.replace(crate::request::CONFIG_PATH_TOKEN, &cm.path))
                .collect(),
        )
    } else if let Some(s) = &cmd.script {
        (
            vec![s.shell.clone(), "-c".into(), s.text.clone()],
            Vec::new(),
        )
    } else {
        unreachable!("a checked request has exactly one command mode")
    }
}

/// Materialise the config spec (config mode) with its paths rewritten, check it against the
/// pinned digest and any staged file passed back, and record it in the staging map.
fn config_map(
    loaded: &Loaded,
    staging: &Staging,
    names: &Names,
    opts: &Options,
) -> Result<(Option<ConfigMap>, StagingMap), Vec<Diagnostic>> {
    let mut map = staging.map.clone();
    let Some(config) = &loaded.request.spec.command.config else {
        if opts.staged_config.is_some() {
            return Err(vec![
                Diagnostic::error(
                    CONFIG_DIGEST,
                    "a staged config spec was given, but the request stages none (it is not in config mode)",
                )
                .help("drop --staged-config, or render the request it was staged for"),
            ]);
        }
        return Ok((None, map));
    };
    let at = |field: &str| ["spec", "command", "config", field].map(|k| Step::Key(k.into()));
    let tree = &loaded.tree;
    let spec = match (&staging.spec_inline, &config.spec) {
        (Some(inline), _) => inline.clone(),
        (None, Some(file)) => {
            let source = match opts.read_spec.as_ref().map(|r| r.read(file)) {
                Some(Ok(source)) => source,
                Some(Err(why)) => {
                    let d = Diagnostic::error(OPTION, format!("the spec file `{file}`: {why}"))
                        .help("`spec` is a path relative to the request file");
                    return Err(vec![pin(tree, &at("spec"), d, "not readable")]);
                }
                None => {
                    let d = Diagnostic::error(OPTION, format!("the spec file `{file}` was not provided"))
                        .help("the caller reads `command.config.spec` (relative to the request) and passes it in");
                    return Err(vec![pin(tree, &at("spec"), d, "not read")]);
                }
            };
            spec_from_file(&source, &map, tree, &at("spec"))?
        }
        (None, None) => return Ok((None, map)), // refused by the request checks
    };
    let data = serde_saphyr::to_string(&spec).map_err(|e| {
        vec![Diagnostic::error(
            OPTION,
            format!("cannot write the config spec as YAML: {e}"),
        )]
    })?;
    let sha256 = hex(&Sha256::digest(data.as_bytes()));
    if data.len() > MAX_CONFIG_BYTES {
        let d = Diagnostic::error(
            CONFIG_DIGEST,
            format!(
                "the config spec is {} bytes: more than a ConfigMap holds",
                data.len()
            ),
        )
        .help("put the spec on a PVC and pass its path in args mode");
        return Err(vec![pin(
            tree,
            &at(if config.spec.is_some() {
                "spec"
            } else {
                "specInline"
            }),
            d,
            "too large to stage",
        )]);
    }
    if let Some(pinned) = &config.sha256
        && !pinned.eq_ignore_ascii_case(&sha256)
    {
        let d = Diagnostic::error(
            CONFIG_DIGEST,
            "the materialised config spec does not match the pinned `sha256`",
        )
        .help(format!(
            "the spec materialises to sha256 {sha256}; update the pin if the change is intended"
        ));
        return Err(vec![pin(tree, &at("sha256"), d, "pinned digest differs")]);
    }
    if let Some(staged) = &opts.staged_config {
        let got = hex(&Sha256::digest(staged.as_bytes()));
        if got != sha256 {
            return Err(vec![Diagnostic::error(
                CONFIG_DIGEST,
                format!("the staged config spec has sha256 {got}, but the request stages {sha256}: it changed after staging"),
            )
            .help("stage again with `tao-k8s stage`, or pass the file it wrote unchanged")]);
        }
    }
    let path = if loaded.request.nodes() > 1 {
        format!("{WORK_DIR}/{CONFIG_FILE}")
    } else {
        format!("{CONFIG_DIR}/{CONFIG_FILE}")
    };
    map.config = Some(StagedConfig {
        pod_path: path.clone(),
        sha256: sha256.clone(),
        bytes: data.len(),
    });
    let cm = ConfigMap {
        name: names.config_map.clone(),
        key: CONFIG_FILE.into(),
        data,
        sha256,
        path,
    };
    Ok((Some(cm), map))
}

/// A spec file as a JSON value with its producer paths rewritten.
fn spec_from_file(
    source: &Source_,
    map: &StagingMap,
    tree: &crate::yaml::Node,
    at: &[Step],
) -> Result<crate::yaml::Node, Vec<Diagnostic>> {
    let fail = |message: String| {
        let d = Diagnostic::error(OPTION, format!("spec file `{}`: {message}", source.name()));
        vec![pin(tree, at, d, "this file")]
    };
    let stream = crate::yaml::parse(source, crate::yaml::Limits::default()).map_err(|e| {
        let (line, col) = source.line_col(e.span.start);
        fail(format!("invalid YAML at {line}:{col}: {}", e.message))
    })?;
    if let Some(d) = stream.duplicates.first() {
        let (line, col) = source.line_col(d.second.start);
        return Err(fail(format!("duplicate key `{}` at {line}:{col}", d.key)));
    }
    let [document] = stream.documents.as_slice() else {
        return Err(fail("expected exactly one YAML document".into()));
    };
    let mut spec = document.clone();
    let mut missing = Vec::new();
    crate::staging::rewrite_spec(map, &mut spec, &mut Vec::new(), &mut missing);
    if !missing.is_empty() {
        return Err(missing
            .iter()
            .flat_map(|(path, value)| {
                fail(format!(
                    "`{value}` at `{}` is a logical path that no mount alias covers",
                    crate::yaml::display_path(path)
                ))
            })
            .collect());
    }
    Ok(spec)
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

    #[test]
    fn an_existing_gpu_toleration_is_not_doubled() {
        let gpu = |key: Option<&str>, op, effect| Toleration {
            key: key.map(String::from),
            operator: Some(op),
            value: None,
            effect,
            toleration_seconds: None,
        };
        let wanted = gpu(
            Some(GPU_RESOURCE),
            TolerationOperator::Exists,
            Some(TaintEffect::NoSchedule),
        );
        assert!(tolerates(&wanted, &wanted));
        assert!(tolerates(
            &gpu(Some(GPU_RESOURCE), TolerationOperator::Exists, None),
            &wanted
        ));
        assert!(
            tolerates(&gpu(None, TolerationOperator::Exists, None), &wanted),
            "tolerate everything"
        );
        assert!(!tolerates(
            &gpu(Some(GPU_RESOURCE), TolerationOperator::Equal, None),
            &wanted
        ));
        assert!(!tolerates(
            &gpu(
                Some(GPU_RESOURCE),
                TolerationOperator::Exists,
                Some(TaintEffect::NoExecute)
            ),
            &wanted
        ));
        assert!(!tolerates(
            &gpu(Some("dedicated"), TolerationOperator::Exists, None),
            &wanted
        ));
    }

    #[test]
    fn pod_scripts_ship_without_comments() {
        assert_eq!(
            pod_script("# doc\n\nset -u\n  # inner\necho hi # tail\n"),
            "set -u\necho hi # tail\n"
        );
        assert!(!pod_script(WAIT_SCRIPT).contains("\n#"));
    }
}
