//! The Job's pod, laid out concern by concern: the action's container (its command vector and
//! resources), the staged volumes (PVC, NFS, S3 fetches), the staged config spec, `/dev/shm`,
//! the multi-node rendezvous, the tier C upload, then scheduling. Each step adds its volumes,
//! mounts, init containers and annotations in the order the manifests show them.

use super::names::Names;
use super::{
    COMPLETION_INDEX_FIELD, CONFIG_DIR, CONFIG_FILE, CONFIG_SHA256_ANNOTATION, CONFIG_VOLUME,
    ConfigMap, Container, DEFAULT_RENDEZVOUS_PORT, DEFAULT_RENDEZVOUS_TIMEOUT, DEFAULT_S3_IMAGE,
    EmptyDir, EnvVar, FETCH_CHECKPOINTS_CONTAINER, GPU_RESOURCE, JOB_NAME_LABEL, KEEP_LOGS_ENV,
    LOG_DIR_ENV, LOGS_SUBDIR, MAIN_CONTAINER, MIN_KUBE_ANNOTATION, Pod, RECORD_ENV, RECORD_FIELD,
    RENDEZVOUS_PORT_NAME, RESULTS_URI_ENV, RESULTS_VOLUME, RUN_ACTION_NAME, RUN_ACTION_SCRIPT,
    SHM_VOLUME, STAGE_CONFIG_CONTAINER, SYNC_SECONDS, SecretKey, Service, UPLOAD_CONTAINER,
    UPLOAD_CPU, UPLOAD_GRACE_SECONDS, UPLOAD_MAIN_START_SECONDS, UPLOAD_MEMORY,
    UPLOAD_RESULTS_SCRIPT, VERIFY_CONFIG_SCRIPT, Volume, VolumeMount, VolumeSource, WAIT_CONTAINER,
    WAIT_SCRIPT,
};
use crate::kube::KubeVersion;
use crate::request::{
    ActionRequest, CONFIG_PATH_TOKEN, CommandMode, DEFAULT_CHECKPOINT_PATTERN, RENDEZVOUS_ENV,
    TaintEffect, Toleration, TolerationOperator,
};
use crate::staging::{MountSource, Staging};
use std::collections::BTreeMap;

/// What the pod's layout decides beyond the pod itself.
pub(super) struct Laid {
    pub pod: Pod,
    /// The headless Service of a multi-node Job.
    pub service: Option<Service>,
    /// Annotations the Job gets (the minimum Kubernetes version of a multi-node Job).
    pub job_annotations: BTreeMap<String, String>,
    pub notes: Vec<String>,
}

/// The pod being laid out.
struct Layout<'a> {
    req: &'a ActionRequest,
    staging: &'a Staging,
    names: &'a Names,
    container: Container,
    init_containers: Vec<Container>,
    sidecars: Vec<Container>,
    share_process_namespace: bool,
    termination_grace_period_seconds: Option<u32>,
    volumes: Vec<Volume>,
    annotations: BTreeMap<String, String>,
    job_annotations: BTreeMap<String, String>,
    notes: Vec<String>,
    service: Option<Service>,
    /// The Secret the S3 copies read, when the request uses S3.
    s3_secret: Option<String>,
    s3_image: String,
}

/// Lay out the pod of a checked request.
pub(super) fn lay_out(
    req: &ActionRequest,
    mode: CommandMode,
    staging: &Staging,
    names: &Names,
    config: Option<&ConfigMap>,
    labels: &BTreeMap<String, String>,
    kube_version: KubeVersion,
) -> Laid {
    let mut layout = Layout::new(req, mode, staging, names, config);
    layout.staged_volumes();
    layout.config(config);
    layout.shm();
    layout.rendezvous();
    let env = req
        .spec
        .env
        .iter()
        .map(|(name, value)| EnvVar::value(name, value.clone()));
    layout.container.env.extend(env);
    layout.keep();
    layout.upload(kube_version);
    layout.finish(labels)
}

impl<'a> Layout<'a> {
    /// The action's container: its command vector and resources.
    fn new(
        req: &'a ActionRequest,
        mode: CommandMode,
        staging: &'a Staging,
        names: &'a Names,
        config: Option<&ConfigMap>,
    ) -> Layout<'a> {
        let spec = &req.spec;
        let mut container = Container {
            name: MAIN_CONTAINER.into(),
            image: spec.image.clone(),
            restart_policy: None,
            command: Vec::new(),
            args: Vec::new(),
            env: Vec::new(),
            env_from_secret: req.action_needs_credentials().then(|| names.secret.clone()),
            limits: BTreeMap::new(),
            requests: BTreeMap::new(),
            volume_mounts: Vec::new(),
        };
        (container.command, container.args) = command_vector(mode, staging, config);
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
        Layout {
            req,
            staging,
            names,
            container,
            init_containers: Vec::new(),
            sidecars: Vec::new(),
            share_process_namespace: false,
            termination_grace_period_seconds: None,
            volumes: Vec::new(),
            annotations: BTreeMap::new(),
            job_annotations: BTreeMap::new(),
            notes: Vec::new(),
            service: None,
            s3_secret: req.needs_s3_credentials().then(|| names.secret.clone()),
            s3_image: spec
                .storage
                .s3
                .as_ref()
                .and_then(|s| s.image.clone())
                .unwrap_or_else(|| DEFAULT_S3_IMAGE.into()),
        }
    }

    /// A helper container: it gets the action's cpu and memory, or the pod would lose its
    /// Guaranteed QoS class.
    fn helper(&self, name: &str, image: &str, command: Vec<String>, env: Vec<EnvVar>) -> Container {
        Container {
            name: name.into(),
            image: image.into(),
            restart_policy: None,
            command,
            args: Vec::new(),
            env,
            env_from_secret: None,
            limits: self.container.limits.clone(),
            requests: self.container.requests.clone(),
            volume_mounts: Vec::new(),
        }
    }

    /// aws-cli reads AWS_ENDPOINT_URL; the Secret carries S3_ENDPOINT_URL when one is set.
    fn s3_env(&self) -> Vec<EnvVar> {
        self.s3_secret
            .iter()
            .map(|secret| {
                let key = SecretKey {
                    name: secret.clone(),
                    key: "S3_ENDPOINT_URL".into(),
                    optional: true,
                };
                EnvVar::secret_key("AWS_ENDPOINT_URL", key)
            })
            .collect()
    }

    /// One volume per distinct source; an S3 input is an emptyDir an initContainer fills.
    fn staged_volumes(&mut self) {
        for v in &self.staging.volumes {
            let (volume, sub_path) = match &v.source {
                MountSource::PersistentVolumeClaim {
                    claim_name,
                    sub_path,
                } => (
                    VolumeSource::PersistentVolumeClaim {
                        claim_name: claim_name.clone(),
                    },
                    sub_path.clone(),
                ),
                MountSource::Nfs {
                    server,
                    path,
                    sub_path,
                } => (
                    VolumeSource::Nfs {
                        server: server.clone(),
                        path: path.clone(),
                    },
                    sub_path.clone(),
                ),
                MountSource::S3 { uri } => {
                    let name = format!("fetch-{}", self.init_containers.len());
                    let mut fetch = self.helper(
                        &name,
                        &self.s3_image,
                        s3_copy(uri, &v.mount_path),
                        self.s3_env(),
                    );
                    fetch.env_from_secret = self.s3_secret.clone();
                    fetch
                        .volume_mounts
                        .push(VolumeMount::at(&v.name, &v.mount_path));
                    self.init_containers.push(fetch);
                    let empty_dir = EmptyDir {
                        medium: None,
                        size_limit: v.size_limit.clone(),
                    };
                    (VolumeSource::EmptyDir { empty_dir }, None)
                }
                MountSource::EmptyDir => continue,
            };
            self.volumes.push(Volume {
                name: v.name.clone(),
                source: volume,
                read_only: v.read_only,
            });
            self.container.volume_mounts.push(VolumeMount {
                name: v.name.clone(),
                mount_path: v.mount_path.clone(),
                sub_path,
                read_only: v.read_only,
            });
        }
        let gpus = self.req.spec.resources.gpus_per_node;
        let fetched = self
            .staging
            .volumes
            .iter()
            .any(|v| matches!(v.source, MountSource::S3 { .. }));
        if fetched && gpus > 0 {
            self.notes.push(format!(
                "tier C: the pod holds its {gpus} GPU(s) while the S3 inputs download; prefer a PVC (tier A) for large inputs"
            ));
        }
    }

    /// The staged config spec, mounted read-only on every pod (every rank of a multi-node
    /// Job too), with the initContainer that checks its digest first.
    fn config(&mut self, config: Option<&ConfigMap>) {
        let Some(cm) = config else { return };
        self.volumes.push(Volume {
            read_only: true,
            ..Volume::of(
                CONFIG_VOLUME,
                VolumeSource::ConfigMap {
                    name: cm.name.clone(),
                },
            )
        });
        let config_mount = VolumeMount {
            read_only: true,
            ..VolumeMount::at(CONFIG_VOLUME, CONFIG_DIR)
        };
        self.container.volume_mounts.push(config_mount.clone());
        self.annotations
            .insert(CONFIG_SHA256_ANNOTATION.into(), cm.sha256.clone());
        let env = vec![
            EnvVar::value("TAO_K8S_CONFIG_SRC", format!("{CONFIG_DIR}/{CONFIG_FILE}")),
            EnvVar::value("TAO_K8S_CONFIG_SHA256", cm.sha256.clone()),
        ];
        let image = &self.req.spec.image;
        let mut stage = self.helper(STAGE_CONFIG_CONTAINER, image, sh(VERIFY_CONFIG_SCRIPT), env);
        stage.volume_mounts.push(config_mount);
        self.init_containers.insert(0, stage);
    }

    /// A memory-backed `/dev/shm`, so that NCCL does not hang on the container runtime's 64M.
    fn shm(&mut self) {
        let Some(size) = self.req.shm_size() else {
            return;
        };
        let memory = EmptyDir {
            medium: Some("Memory".into()),
            size_limit: Some(size.to_string()),
        };
        self.volumes.push(Volume::empty(SHM_VOLUME, memory));
        self.container
            .volume_mounts
            .push(VolumeMount::at(SHM_VOLUME, "/dev/shm"));
    }

    /// Multi-node: the rendezvous env, the initContainer that waits for the rank-0 pod's
    /// name, the headless Service that gives the pods their names, and the minimum version.
    fn rendezvous(&mut self) {
        let nodes = self.req.nodes();
        if nodes < 2 {
            return;
        }
        let spec = &self.req.spec;
        let rendezvous = spec.rendezvous.as_ref();
        let port = rendezvous
            .and_then(|r| r.port)
            .unwrap_or(DEFAULT_RENDEZVOUS_PORT);
        let timeout = rendezvous
            .and_then(|r| r.timeout_seconds)
            .unwrap_or(DEFAULT_RENDEZVOUS_TIMEOUT);
        let names = self.names;
        let Some(leader) = &names.leader else {
            return;
        };
        let master = format!("{leader}.{}", names.service);
        let gpus = spec.resources.gpus_per_node;
        self.container.env = rendezvous_env(nodes, gpus, &master, port);
        let env = vec![
            EnvVar::value("MASTER_ADDR", master),
            EnvVar::value("TAO_K8S_RENDEZVOUS_TIMEOUT", timeout.to_string()),
        ];
        let wait = self.helper(WAIT_CONTAINER, &spec.image, sh(WAIT_SCRIPT), env);
        self.init_containers.push(wait);
        let min = KubeVersion::MULTI_NODE.to_string();
        self.job_annotations
            .insert(MIN_KUBE_ANNOTATION.into(), min.clone());
        self.service = Some(Service {
            name: names.service.clone(),
            annotations: BTreeMap::from([(MIN_KUBE_ANNOTATION.to_string(), min)]),
            cluster_ip: "None",
            publish_not_ready_addresses: true,
            selector: BTreeMap::from([(JOB_NAME_LABEL.to_string(), names.job.clone())]),
            port_name: RENDEZVOUS_PORT_NAME.into(),
            protocol: "TCP",
            port,
        });
    }

    /// Logs kept, or checkpoints resumed: the constant wrapper runs in front of the action.
    /// The action's argv becomes the wrapper's arguments (`args`, where Kubernetes puts them
    /// after the wrapper's `$0`), never parsed by a shell; its inputs come by environment.
    fn keep(&mut self) {
        let spec = &self.req.spec;
        if !spec.logs.keep && spec.checkpoint.is_none() {
            return;
        }
        let c = &mut self.container;
        let argv: Vec<String> = c.command.drain(..).chain(c.args.drain(..)).collect();
        c.command = sh(RUN_ACTION_SCRIPT);
        c.command.push(RUN_ACTION_NAME.into());
        c.args = argv;
        if spec.logs.keep {
            let results = self.staging.results_dir.trim_end_matches('/');
            let dir = format!("{results}/{LOGS_SUBDIR}");
            c.env.push(EnvVar::value(LOG_DIR_ENV, dir));
            c.env.push(EnvVar::field(RECORD_ENV, RECORD_FIELD));
            c.env.push(EnvVar::field("TAO_K8S_POD", "metadata.name"));
        }
        if let Some(checkpoint) = &spec.checkpoint {
            let dir = checkpoint.dir.trim_end_matches('/');
            let pattern = checkpoint.pattern.as_deref();
            c.env.extend([
                EnvVar::value("TAO_K8S_CHECKPOINT_DIR", dir),
                EnvVar::value(
                    "TAO_K8S_CHECKPOINT_PATTERN",
                    pattern.unwrap_or(DEFAULT_CHECKPOINT_PATTERN),
                ),
            ]);
            let resume = &checkpoint.resume;
            if let Some(arg) = &resume.arg {
                c.env.push(EnvVar::value("TAO_K8S_RESUME_ARG", arg.clone()));
            } else if let Some(env) = &resume.env {
                c.env.push(EnvVar::value("TAO_K8S_RESUME_ENV", env.clone()));
            }
        }
    }

    /// Tier C results: the uploader learns that the action ended (its own command, or the
    /// wrapper of kept logs and checkpoints, which ends with it) from the kubelet or from the
    /// process table, never from a file the action would have to write (an OOM kill writes
    /// none), and uploads even after a failure.
    ///
    /// From 1.29 the uploader is a native sidecar, after the fetches (it starts once they are
    /// done): the kubelet sends it SIGTERM once the action's container has ended, however it
    /// ended, and it uploads within the pod's grace period. On 1.28 it is a regular container
    /// in a pod that shares one process namespace: it sees the action's processes, and uploads
    /// once none is left. A regular uploader that fails the upload fails the pod; a sidecar's
    /// exit code is not the pod's, and `job.sh status` names its failure.
    fn upload(&mut self, kube_version: KubeVersion) {
        let spec = &self.req.spec;
        let Some(results) = spec.storage.s3.as_ref().and_then(|s| s.results.as_ref()) else {
            return;
        };
        let multi_node = self.req.nodes() > 1;
        let sidecar = kube_version.has_native_sidecars();
        let mut env = vec![
            EnvVar::value("TAO_K8S_RESULTS_DIR", self.staging.results_dir.clone()),
            EnvVar::value(RESULTS_URI_ENV, results.uri.clone()),
        ];
        if sidecar {
            env.push(EnvVar::value("TAO_K8S_UPLOAD_ON", "sigterm"));
        } else {
            env.push(EnvVar::value("TAO_K8S_UPLOAD_ON", "main-exit"));
            env.push(EnvVar::value(
                "TAO_K8S_MAIN_START_SECONDS",
                UPLOAD_MAIN_START_SECONDS.to_string(),
            ));
        }
        if multi_node {
            env.push(EnvVar::field("NODE_RANK", COMPLETION_INDEX_FIELD));
        }
        if results.per_rank && multi_node {
            env.push(EnvVar::value("TAO_K8S_UPLOAD_PER_RANK", "1"));
        }
        // Kept logs and checkpoints go up as they are written, not only at the end: a pod
        // that is lost with its node takes only what came after the last sync with it.
        let checkpoints = spec.checkpoint.as_ref().map(|c| {
            (
                c.dir.trim_end_matches('/'),
                checkpoint_uri(&results.uri, &self.staging.results_dir, &c.dir),
            )
        });
        if spec.logs.keep {
            env.push(EnvVar::value(KEEP_LOGS_ENV, "1"));
            env.push(EnvVar::field(RECORD_ENV, RECORD_FIELD));
        }
        if let Some((dir, uri)) = &checkpoints {
            env.push(EnvVar::value("TAO_K8S_SYNC_DIR", *dir));
            env.push(EnvVar::value("TAO_K8S_SYNC_URI", uri.clone()));
        }
        if spec.logs.keep || checkpoints.is_some() {
            env.push(EnvVar::value(
                "TAO_K8S_SYNC_SECONDS",
                SYNC_SECONDS.to_string(),
            ));
        }
        env.extend(self.s3_env());
        let mut upload = self.helper(
            UPLOAD_CONTAINER,
            &self.s3_image,
            sh(UPLOAD_RESULTS_SCRIPT),
            env,
        );
        // A regular container or a sidecar adds to the pod's requests: it gets a small share of
        // what the action sets (so the pod keeps its QoS class), not a copy of it.
        for (name, small) in [("cpu", UPLOAD_CPU), ("memory", UPLOAD_MEMORY)] {
            for quantities in [&mut upload.limits, &mut upload.requests] {
                if quantities.contains_key(name) {
                    quantities.insert(name.into(), small.into());
                }
            }
        }
        upload.limits.remove("ephemeral-storage");
        upload.requests.remove("ephemeral-storage");
        upload.env_from_secret = self.s3_secret.clone();
        let results_dir = &self.staging.results_dir;
        match &self.staging.results_volume {
            Some(name) => {
                let mount = self
                    .container
                    .volume_mounts
                    .iter()
                    .find(|m| &m.name == name);
                upload.volume_mounts.extend(mount.map(|m| VolumeMount {
                    read_only: true,
                    ..m.clone()
                }));
            }
            None => {
                self.volumes
                    .push(Volume::empty(RESULTS_VOLUME, EmptyDir::default()));
                self.container
                    .volume_mounts
                    .push(VolumeMount::at(RESULTS_VOLUME, results_dir));
                upload.volume_mounts.push(VolumeMount {
                    read_only: true,
                    ..VolumeMount::at(RESULTS_VOLUME, results_dir)
                });
                // A retried pod starts with an empty results directory: the checkpoints
                // uploaded so far come back first (a claim keeps its own).
                if let Some((dir, uri)) = &checkpoints {
                    let mut fetch = self.helper(
                        FETCH_CHECKPOINTS_CONTAINER,
                        &self.s3_image,
                        s3_copy(uri, dir),
                        self.s3_env(),
                    );
                    fetch.env_from_secret = self.s3_secret.clone();
                    fetch
                        .volume_mounts
                        .push(VolumeMount::at(RESULTS_VOLUME, results_dir));
                    self.init_containers.push(fetch);
                }
            }
        }
        self.termination_grace_period_seconds = Some(UPLOAD_GRACE_SECONDS);
        if sidecar {
            upload.restart_policy = Some("Always");
            self.init_containers.push(upload);
        } else {
            self.share_process_namespace = true;
            self.sidecars.push(upload);
        }
    }

    /// GPUs (on the action only, after every helper took its resources), the GPU taint
    /// tolerated, pull Secrets, and the pod itself.
    fn finish(mut self, labels: &BTreeMap<String, String>) -> Laid {
        let spec = &self.req.spec;
        let gpus = spec.resources.gpus_per_node;
        let mut tolerations = spec.scheduling.tolerations.clone();
        let gpu_toleration = Toleration {
            key: Some(GPU_RESOURCE.into()),
            operator: Some(TolerationOperator::Exists),
            value: None,
            effect: Some(TaintEffect::NoSchedule),
            toleration_seconds: None,
        };
        if gpus > 0 {
            self.container
                .limits
                .insert(GPU_RESOURCE.into(), gpus.to_string());
            if !tolerations.iter().any(|t| tolerates(t, &gpu_toleration)) {
                tolerations.push(gpu_toleration);
            }
        }
        let image_pull_secrets = if super::probe::needs_ngc_pull_secret(spec) {
            vec![self.names.pull_secret.clone()]
        } else {
            spec.image_pull_secrets.clone()
        };
        let mut containers = vec![self.container];
        containers.append(&mut self.sidecars);
        let pod = Pod {
            labels: labels.clone(),
            annotations: self.annotations,
            restart_policy: "Never",
            priority_class_name: spec.scheduling.priority_class_name.clone(),
            subdomain: (self.req.nodes() > 1).then(|| self.names.service.clone()),
            node_selector: spec.scheduling.node_selector.clone(),
            tolerations,
            image_pull_secrets,
            share_process_namespace: self.share_process_namespace,
            termination_grace_period_seconds: self.termination_grace_period_seconds,
            security_context: spec.security_context.clone(),
            init_containers: self.init_containers,
            containers,
            volumes: self.volumes,
        };
        Laid {
            pod,
            service: self.service,
            job_annotations: self.job_annotations,
            notes: self.notes,
        }
    }
}

/// `[/bin/sh, -c, <constant script as shipped>]`.
fn sh(script: &str) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), pod_script(script)]
}

/// Where the checkpoints in `dir`, under `results_dir`, are uploaded: the same place below
/// the results URI as below the results directory, as a prefix.
fn checkpoint_uri(results_uri: &str, results_dir: &str, dir: &str) -> String {
    let below = dir
        .trim_end_matches('/')
        .strip_prefix(results_dir.trim_end_matches('/'))
        .unwrap_or_default()
        .trim_matches('/');
    let base = results_uri.trim_end_matches('/');
    if below.is_empty() {
        format!("{base}/")
    } else {
        format!("{base}/{below}/")
    }
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

/// Whether an existing toleration already covers `wanted`.
fn tolerates(t: &Toleration, wanted: &Toleration) -> bool {
    let key_ok =
        t.key.is_none() && t.operator == Some(TolerationOperator::Exists) || t.key == wanted.key;
    let effect_ok = t.effect.is_none() || t.effect == wanted.effect;
    let op_ok = t.operator == Some(TolerationOperator::Exists);
    key_ok && effect_ok && op_ok
}

/// The container's `command` and `args`, exactly as the spec's table of command modes says,
/// with producer paths in argv rewritten by the staging map.
fn command_vector(
    mode: CommandMode,
    staging: &Staging,
    config: Option<&ConfigMap>,
) -> (Vec<String>, Vec<String>) {
    let split = |argv: Vec<String>| {
        let mut it = argv.into_iter();
        (it.next().into_iter().collect(), it.collect())
    };
    // `args` and `config.argv`, rewritten by the staging map.
    let argv = staging.argv.clone().unwrap_or_default();
    match mode {
        CommandMode::Shell(text) => (
            vec!["/bin/sh".into(), "-c".into(), text.to_string()],
            Vec::new(),
        ),
        CommandMode::Args(_) => split(argv),
        CommandMode::Config(_) => {
            let path = config.map_or("", |cm| cm.path.as_str());
            split(
                argv.iter()
                    .map(|a| a.replace(CONFIG_PATH_TOKEN, path))
                    .collect(),
            )
        }
        CommandMode::Script(s) => (
            vec![s.shell.clone(), "-c".into(), s.text.clone()],
            Vec::new(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Options, Plan, build};

    /// The Plan of a request: the example's spec with `spec` lines replaced or added.
    fn plan(spec: &str) -> Plan {
        plan_at(spec, KubeVersion::DEFAULT)
    }

    /// The same, for a target version.
    fn plan_at(spec: &str, kube_version: KubeVersion) -> Plan {
        let source = crate::plan::test_request(spec);
        let loaded = crate::request::load(&source).unwrap();
        let (staging, diags) = crate::staging::stage(&loaded.request, &loaded.tree);
        assert!(diags.is_empty(), "{diags:?}");
        let opts = Options {
            kube_version,
            ..Options::default()
        };
        build(&loaded, &staging, &opts).unwrap()
    }

    const TIER_C: &str = "  command: {args: [dino, train]}\n  resources: {gpusPerNode: 1, cpu: 4, memory: 8Gi}\n  \
             storage:\n    s3:\n      inputs: [{uri: \"s3://bucket/coco/\", path: /data}]\n      \
             results: {uri: \"s3://bucket/runs/\"}\n";

    fn env<'a>(c: &'a Container, name: &str) -> Option<&'a str> {
        c.env
            .iter()
            .find(|e| e.name == name)
            .and_then(EnvVar::plain)
    }

    const PVC: &str =
        "  storage: {mounts: [{name: results, persistentVolumeClaim: r, mountPath: /results}]}\n";

    #[test]
    fn gpus_go_to_the_action_only_and_the_gpu_taint_is_tolerated_once() {
        let p = plan(&format!(
            "  command: {{args: [dino, train]}}\n  resources: {{gpusPerNode: 4, cpu: 8, memory: 64Gi, nodes: 2}}\n{PVC}"
        ));
        let pod = &p.job.pod;
        assert_eq!(
            pod.containers[0]
                .limits
                .get(GPU_RESOURCE)
                .map(String::as_str),
            Some("4")
        );
        assert_eq!(
            pod.containers[0].limits,
            pod.containers[0]
                .requests
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .chain([(GPU_RESOURCE.to_string(), "4".to_string())])
                .collect()
        );
        for helper in &pod.init_containers {
            assert!(!helper.limits.contains_key(GPU_RESOURCE), "{}", helper.name);
            assert_eq!(helper.limits.get("cpu").map(String::as_str), Some("8"));
        }
        let gpu = pod
            .tolerations
            .iter()
            .filter(|t| t.key.as_deref() == Some(GPU_RESOURCE));
        assert_eq!(gpu.count(), 1);
    }

    #[test]
    fn multi_node_adds_the_wait_the_service_and_the_rendezvous_env_first() {
        let p = plan(&format!(
            "  command: {{args: [dino, train]}}\n  resources: {{gpusPerNode: 8, nodes: 3, memory: 64Gi}}\n  env: {{A: b}}\n{PVC}"
        ));
        let pod = &p.job.pod;
        let names: Vec<&str> = pod
            .init_containers
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names, [WAIT_CONTAINER]);
        let env: Vec<&str> = pod.containers[0]
            .env
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(env[..RENDEZVOUS_ENV.len()], *RENDEZVOUS_ENV);
        assert_eq!(env[RENDEZVOUS_ENV.len()..], ["A"]);
        let master = &pod.containers[0].env[5];
        assert_eq!(master.plain(), Some("t-0.t"));
        assert_eq!(pod.subdomain.as_deref(), Some("t"));
        let service = p.service.as_ref().unwrap();
        assert_eq!(
            (service.name.as_str(), service.port),
            ("t", DEFAULT_RENDEZVOUS_PORT)
        );
        assert_eq!(
            p.job
                .annotations
                .get(MIN_KUBE_ANNOTATION)
                .map(String::as_str),
            Some("1.28")
        );
        let shm = pod.volumes.iter().find(|v| v.name == SHM_VOLUME).unwrap();
        let VolumeSource::EmptyDir { empty_dir } = &shm.source else {
            panic!("{shm:?}")
        };
        assert_eq!(empty_dir.medium.as_deref(), Some("Memory"));
        assert_eq!(p.job.indexed.as_ref().map(|i| i.completions), Some(3));
    }

    #[test]
    fn tier_c_on_1_28_runs_the_argv_and_an_uploader_that_watches_the_shared_process_table() {
        let p = plan(TIER_C);
        let pod = &p.job.pod;
        let init: Vec<&str> = pod
            .init_containers
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(init, ["fetch-0"]);
        assert_eq!(
            pod.init_containers[0].command[..4],
            ["aws", "s3", "cp", "--no-progress"]
        );
        let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, [MAIN_CONTAINER, UPLOAD_CONTAINER]);
        // The action's own argv, no shell: the uploader does not need its exit code.
        assert_eq!(pod.containers[0].command, ["dino"]);
        assert_eq!(pod.containers[0].args, ["train"]);
        assert!(pod.share_process_namespace);
        assert_eq!(
            pod.termination_grace_period_seconds,
            Some(UPLOAD_GRACE_SECONDS)
        );
        let upload = &pod.containers[1];
        assert_eq!(upload.restart_policy, None);
        assert_eq!(env(upload, "TAO_K8S_UPLOAD_ON"), Some("main-exit"));
        assert_eq!(
            env(upload, "TAO_K8S_MAIN_START_SECONDS"),
            Some(UPLOAD_MAIN_START_SECONDS.to_string().as_str())
        );
        assert_eq!(
            upload.limits.get("cpu").map(String::as_str),
            Some(UPLOAD_CPU)
        );
        assert_eq!(upload.env_from_secret.as_deref(), Some("t-creds"));
        let volumes: Vec<&str> = pod.volumes.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(volumes, ["tao-k8s-input-0", RESULTS_VOLUME]);
        assert!(
            p.notes.iter().any(|n| n.starts_with("tier C")),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn tier_c_from_1_29_makes_the_uploader_a_native_sidecar_after_the_fetches() {
        for minor in [29, KubeVersion::NEWEST.minor] {
            let p = plan_at(TIER_C, KubeVersion { major: 1, minor });
            let pod = &p.job.pod;
            let init: Vec<&str> = pod
                .init_containers
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            assert_eq!(init, ["fetch-0", UPLOAD_CONTAINER], "1.{minor}");
            let upload = &pod.init_containers[1];
            assert_eq!(upload.restart_policy, Some("Always"));
            assert_eq!(pod.init_containers[0].restart_policy, None);
            assert_eq!(env(upload, "TAO_K8S_UPLOAD_ON"), Some("sigterm"));
            assert_eq!(env(upload, "TAO_K8S_MAIN_START_SECONDS"), None);
            assert_eq!(
                upload.limits.get("memory").map(String::as_str),
                Some(UPLOAD_MEMORY)
            );
            let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(names, [MAIN_CONTAINER]);
            assert_eq!(pod.containers[0].command, ["dino"]);
            assert!(!pod.share_process_namespace);
            assert_eq!(
                pod.termination_grace_period_seconds,
                Some(UPLOAD_GRACE_SECONDS)
            );
        }
        // Tier A has no uploader and keeps the defaults.
        let a = plan_at(
            &format!("  command: {{args: [dino, train]}}\n  resources: {{gpusPerNode: 1}}\n{PVC}"),
            KubeVersion::NEWEST,
        );
        assert!(!a.job.pod.share_process_namespace);
        assert_eq!(a.job.pod.termination_grace_period_seconds, None);
        assert!(a.job.pod.init_containers.is_empty());
    }

    #[test]
    fn every_rank_of_a_multi_node_job_reads_the_read_only_config_mount() {
        let p = plan(&format!(
            "  command: {{config: {{argv: [dino, train, -e, \"{{config_path}}\"], specInline: {{a: 1}}}}}}\n  \
             resources: {{gpusPerNode: 1, nodes: 4}}\n{PVC}"
        ));
        let pod = &p.job.pod;
        let cm = p.config_map.as_ref().unwrap();
        assert_eq!(cm.path, format!("{CONFIG_DIR}/{CONFIG_FILE}"));
        assert_eq!(pod.containers[0].args, ["train", "-e", &cm.path]);
        let mount = pod.containers[0]
            .volume_mounts
            .iter()
            .find(|m| m.name == CONFIG_VOLUME)
            .unwrap();
        assert!(
            mount.read_only && mount.mount_path == CONFIG_DIR,
            "{mount:?}"
        );
        let stage = &pod.init_containers[0];
        assert_eq!(stage.name, STAGE_CONFIG_CONTAINER);
        assert!(stage.volume_mounts.iter().all(|m| m.read_only), "{stage:?}");
        let env: Vec<&str> = stage.env.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(env, ["TAO_K8S_CONFIG_SRC", "TAO_K8S_CONFIG_SHA256"]);
        // No writable scratch copy: every volume is the config, the shm or the request's.
        let volumes: Vec<&str> = pod.volumes.iter().map(|v| v.name.as_str()).collect();
        assert!(!volumes.iter().any(|v| v.contains("work")), "{volumes:?}");
    }

    #[test]
    fn s3_auto_gives_the_action_the_keys_only_for_a_uri_it_uses_itself() {
        let with_args = |args: &str| {
            plan(&format!(
                "  command: {{args: {args}}}\n  resources: {{gpusPerNode: 1}}\n  storage:\n    s3:\n      \
                 inputs: [{{uri: \"s3://bucket/coco/\", path: /data}}]\n      \
                 results: {{uri: \"s3://bucket/runs/\"}}\n"
            ))
        };
        // Staged by storage.s3: the fetch and upload containers read the keys, not the action.
        let staged = with_args("[dino, train, -d, \"s3://bucket/coco/train\"]");
        assert_eq!(staged.job.pod.containers[0].env_from_secret, None);
        assert_eq!(staged.run.required_keys.len(), 2);
        // A URI the action reads itself: it gets them too.
        let direct = with_args("[dino, train, --pretrained, \"s3://models/dino.pth\"]");
        assert_eq!(
            direct.job.pod.containers[0].env_from_secret.as_deref(),
            Some("t-creds")
        );
        // Tier A, nothing staged, a URI in the shell text.
        let shell = plan(&format!(
            "  command: {{shell: \"aws s3 cp s3://models/x.pth /results/ && dino train\"}}\n  \
             resources: {{gpusPerNode: 1}}\n{PVC}"
        ));
        assert_eq!(
            shell.job.pod.containers[0].env_from_secret.as_deref(),
            Some("t-creds")
        );
        assert_eq!(
            shell.run.required_keys,
            ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]
        );
        let none = plan(&format!(
            "  command: {{args: [dino, train]}}\n  resources: {{gpusPerNode: 1}}\n{PVC}"
        ));
        assert_eq!(none.job.pod.containers[0].env_from_secret, None);
        assert!(none.run.required_keys.is_empty());
    }

    #[test]
    fn a_config_spec_is_checked_by_an_init_container_before_anything_else() {
        let p = plan(&format!(
            "  command: {{config: {{argv: [dino, train, -e, \"{{config_path}}\"], specInline: {{a: 1}}}}}}\n  \
             resources: {{gpusPerNode: 1}}\n{PVC}"
        ));
        let pod = &p.job.pod;
        assert_eq!(pod.init_containers[0].name, STAGE_CONFIG_CONTAINER);
        let cm = p.config_map.as_ref().unwrap();
        assert_eq!(pod.containers[0].args, ["train", "-e", &cm.path]);
        assert_eq!(
            pod.annotations.get("tao-k8s.io/config-sha256"),
            Some(&cm.sha256)
        );
        assert_eq!(cm.data, "a: 1\n");
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
