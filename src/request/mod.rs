//! The action request, version 1: the input contract (the README's "The request" section,
//! and `schemas/action-request.schema.json`) as serde types. Unknown fields are refused everywhere. The JSON Schema that editors and the
//! loader use is derived from these types (`tao-k8s schema`), so the two cannot drift.

mod checks;
pub mod credentials;
mod load;

pub(crate) use checks::pin;
pub use checks::{CHECKS, Check, RESULTS_DIR, is_under};
pub use checks::{
    CONFIG_DIR, CONFIG_PATH_TOKEN, CONFIG_VOLUME, RENDEZVOUS_ENV, RESERVED_MOUNT_PATHS,
    RESERVED_VOLUMES, SHM_VOLUME,
};
pub use load::{Loaded, Refused, load, parses, schema_json, schema_text};

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;

/// `scheme` of `scheme://...`, if the text starts like a URI.
pub fn scheme(text: &str) -> Option<&str> {
    // A letter, then letters, digits, `+`, `.` and `-` up to the first other byte, which must
    // open `://`.
    let b = text.as_bytes();
    let end = b.iter().position(|&c| {
        !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'+' | b'.' | b'-'))
    })?;
    (b[0].is_ascii_lowercase() && b[end..].starts_with(b"://")).then(|| &text[..end])
}

/// The annotation of the Job that keeps the request's `metadata.name` whole.
pub const REQUEST_NAME_ANNOTATION: &str = "tao-k8s.io/request-name";

/// `/dev/shm` on multi-node when `shmSize` is not given: NCCL hangs on a small one.
pub const DEFAULT_SHM_SIZE: &str = "16Gi";

/// One container action (train, evaluate, export...) to run on Kubernetes.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "tao-k8s ActionRequest v1")]
pub struct ActionRequest {
    /// Always `tao-k8s/v1`.
    pub api_version: ApiVersion,
    /// Always `ActionRequest`.
    pub kind: RequestKind,
    pub metadata: Metadata,
    pub spec: Spec,
}

/// The request format version.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub enum ApiVersion {
    #[serde(rename = "tao-k8s/v1")]
    V1,
}

/// The request kind.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub enum RequestKind {
    ActionRequest,
}

/// Names and labels.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Metadata {
    /// Base for every object name; normalised to a valid Kubernetes name.
    pub name: String,
    /// The job-record id, when one was minted before rendering.
    #[serde(default)]
    pub record_id: Option<String>,
    /// Namespace; else `--namespace`, else `$TAO_K8S_NAMESPACE`, else `default`.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Labels copied onto every object.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// What to run and with what.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Spec {
    /// Container image with a tag or digest (no bare name, no `:latest`).
    pub image: String,
    /// The TAO network, e.g. `dino`.
    pub network_arch: String,
    /// The action, e.g. `train`, `evaluate`, `export`.
    pub action: String,
    /// Exactly one of `shell`, `args`, `config`, `script`.
    pub command: Command,
    pub resources: Resources,
    pub storage: Storage,
    /// Where results are written: on a mount (tier A) or uploaded to `storage.s3.results` (tier C).
    pub results_dir: String,
    /// Plain environment values; never credentials.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub credentials: Credentials,
    /// Names of existing docker-registry Secrets.
    #[serde(default)]
    pub image_pull_secrets: Vec<String>,
    /// Seconds a finished Job is kept; default 604800 (7 days).
    #[serde(default)]
    pub ttl_seconds_after_finished: Option<u32>,
    /// Pod retries before the Job fails; default 0 (training is not blindly retried).
    #[serde(default)]
    #[schemars(range(max = 1000))]
    pub backoff_limit: Option<u32>,
    /// Wall-clock limit in seconds; 0 = none.
    #[serde(default)]
    pub active_deadline_seconds: Option<u32>,
    /// What a failed pod costs: disruptions retried, exit codes that end the run at once.
    #[serde(default)]
    pub retries: Retries,
    /// Keep every rank's output beyond its pod, in `resultsDir/logs`.
    #[serde(default)]
    pub logs: Logs,
    /// Where the action writes checkpoints, and how it resumes from the newest one.
    #[serde(default)]
    pub checkpoint: Option<Checkpoint>,
    /// The user the pods run as. Set, every pod meets the `restricted` Pod Security Standard;
    /// unset, they run as the image's user (root for TAO images).
    #[serde(default)]
    pub security_context: Option<SecurityContext>,
    /// Multi-node rendezvous.
    #[serde(default)]
    pub rendezvous: Option<Rendezvous>,
    /// Copied through to the pod.
    #[serde(default)]
    pub scheduling: Scheduling,
}

/// Exactly one key: how the container is started.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Command {
    /// Text run by `/bin/sh -c`, unchanged.
    #[serde(default)]
    pub shell: Option<String>,
    /// Native argv: `command: [argv0]`, `args: [rest]`; no shell anywhere.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub args: Option<Vec<String>>,
    /// Native argv with `{config_path}` replaced by the in-pod path of the staged spec.
    #[serde(default)]
    pub config: Option<ConfigCommand>,
    /// A script run verbatim by the shell the producer declares.
    #[serde(default)]
    pub script: Option<ScriptCommand>,
}

/// The command mode of a request, as a sum: a checked request has exactly one.
#[derive(Debug, Clone, Copy)]
pub enum CommandMode<'a> {
    Shell(&'a str),
    Args(&'a [String]),
    Config(&'a ConfigCommand),
    Script(&'a ScriptCommand),
}

impl CommandMode<'_> {
    /// The mode's key in `spec.command`.
    pub fn name(&self) -> &'static str {
        match self {
            CommandMode::Shell(_) => "shell",
            CommandMode::Args(_) => "args",
            CommandMode::Config(_) => "config",
            CommandMode::Script(_) => "script",
        }
    }
}

impl Command {
    /// Every mode given, in the order of the spec's table.
    pub fn modes(&self) -> Vec<CommandMode<'_>> {
        let shell = self.shell.as_deref().map(CommandMode::Shell);
        let args = self.args.as_deref().map(CommandMode::Args);
        let config = self.config.as_ref().map(CommandMode::Config);
        let script = self.script.as_ref().map(CommandMode::Script);
        [shell, args, config, script]
            .into_iter()
            .flatten()
            .collect()
    }

    /// The one mode of a checked request; `None` when there is not exactly one.
    pub fn mode(&self) -> Option<CommandMode<'_>> {
        match self.modes()[..] {
            [mode] => Some(mode),
            _ => None,
        }
    }
}

/// Config mode: a spec file staged read-only and passed by path.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfigCommand {
    /// The argv; every `{config_path}` becomes the spec's in-pod path.
    #[schemars(length(min = 1))]
    pub argv: Vec<String>,
    /// A spec file, relative to the request file.
    #[serde(default)]
    pub spec: Option<String>,
    /// The spec itself.
    #[serde(default)]
    pub spec_inline: Option<serde_json::Map<String, serde_json::Value>>,
    /// Expected sha256 (hex) of the materialised spec; the render is refused if it differs.
    #[serde(default)]
    pub sha256: Option<String>,
}

/// Script mode.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScriptCommand {
    /// Absolute path of the shell, e.g. `/bin/bash`.
    pub shell: String,
    /// The script, passed verbatim as `<shell> -c <text>`.
    pub text: String,
}

/// Compute for one action.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Resources {
    /// Pods; more than 1 means a multi-node Indexed Job. Default 1.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub nodes: Option<u32>,
    /// GPUs per pod; 0 = a lifecycle-only run, no GPU requested or verified.
    #[schemars(range(max = 1024))]
    pub gpus_per_node: u32,
    /// CPU, a Kubernetes quantity (`16`, `500m`).
    #[serde(default)]
    pub cpu: Option<Quantity>,
    /// Memory, a Kubernetes quantity (`64Gi`).
    #[serde(default)]
    pub memory: Option<Quantity>,
    /// Size of the memory-backed `/dev/shm`; default 16Gi when nodes > 1.
    #[serde(default)]
    pub shm_size: Option<Quantity>,
    /// Local ephemeral storage requested for the pod (staged S3 inputs live there).
    #[serde(default)]
    pub ephemeral_storage: Option<Quantity>,
}

/// A Kubernetes quantity, written as a string (`64Gi`) or a number (`16`).
#[derive(Debug, Clone, PartialEq, Eq, JsonSchema)]
#[schemars(transparent)]
pub struct Quantity(#[schemars(with = "QuantitySchema")] pub String);

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // only its schema is used
enum QuantitySchema {
    Text(String),
    Number(f64),
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(Quantity(s)),
            serde_json::Value::Number(n) => Ok(Quantity(n.to_string())),
            other => Err(serde::de::Error::custom(format!(
                "expected a quantity, found {other}"
            ))),
        }
    }
}

/// Tier of storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum Tier {
    /// Mounted volumes (PVC, NFS).
    A,
    /// S3 staging through initContainers and a results upload.
    C,
}

/// Where data and results live.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Storage {
    /// A = mounted volumes, C = S3 staging; inferred when omitted.
    #[serde(default)]
    pub tier: Option<Tier>,
    /// Mounted volumes (tier A; also allowed with C, e.g. a shared cache).
    #[serde(default)]
    pub mounts: Vec<Mount>,
    /// S3 staging (tier C).
    #[serde(default)]
    pub s3: Option<S3>,
}

/// One mounted volume.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Mount {
    /// The volume name (a DNS-1123 label).
    pub name: String,
    /// An existing PersistentVolumeClaim; or `nfs`.
    #[serde(default)]
    pub persistent_volume_claim: Option<String>,
    /// An NFS export; or `persistentVolumeClaim`.
    #[serde(default)]
    pub nfs: Option<Nfs>,
    /// A relative path inside the volume.
    #[serde(default)]
    pub sub_path: Option<String>,
    /// Absolute path in the container.
    pub mount_path: String,
    #[serde(default)]
    pub read_only: bool,
    /// Producer-side paths of the same source (absolute paths or `scheme://name`).
    #[serde(default)]
    pub aliases: Vec<String>,
}

/// An NFS export.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Nfs {
    pub server: String,
    pub path: String,
}

/// S3 staging.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct S3 {
    /// Each input is copied into the pod before the action starts.
    #[serde(default)]
    pub inputs: Vec<S3Input>,
    /// Where the results directory is uploaded after the action.
    #[serde(default)]
    pub results: Option<S3Results>,
    /// Image used for copies in and out; default `amazon/aws-cli` at a pinned tag.
    #[serde(default)]
    pub image: Option<String>,
}

/// One S3 input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct S3Input {
    /// `s3://bucket/prefix/` (a prefix, copied recursively) or `s3://bucket/key` (one object).
    pub uri: String,
    /// Absolute path in the container; an emptyDir of its own.
    pub path: String,
    /// Size limit of that emptyDir, a Kubernetes quantity.
    #[serde(default)]
    pub size_limit: Option<Quantity>,
}

/// The results upload.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct S3Results {
    /// `s3://bucket/prefix/`.
    pub uri: String,
    /// Multi-node: every pod uploads to `<uri>rank-<index>/`; by default only index 0 uploads.
    #[serde(default)]
    pub per_rank: bool,
}

/// Credentials the pod needs, taken from the submitter's environment by the driver script.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Credentials {
    /// Default `<job>-creds`, created by the driver script.
    #[serde(default)]
    pub secret_name: Option<String>,
    /// `auto` (only if an s3:// URI is used), `true` or `false`.
    #[serde(default)]
    pub s3: S3Mode,
    /// Further environment variable names the model needs (e.g. `HF_TOKEN`).
    #[serde(default)]
    pub extra: Vec<String>,
}

/// Whether the S3 credentials are passed to the pod.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum S3Mode {
    #[default]
    Auto,
    Always,
    Never,
}

impl<'de> Deserialize<'de> for S3Mode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Bool(true) => Ok(S3Mode::Always),
            serde_json::Value::Bool(false) => Ok(S3Mode::Never),
            serde_json::Value::String(s) if s == "auto" => Ok(S3Mode::Auto),
            other => Err(serde::de::Error::custom(format!(
                "expected auto, true or false, found {other}"
            ))),
        }
    }
}

impl JsonSchema for S3Mode {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "S3Mode".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`auto` (only if an s3:// URI is used), `true` or `false`.",
            "enum": ["auto", true, false],
            "default": "auto"
        })
    }
}

/// Multi-node rendezvous.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Rendezvous {
    /// TCP port of the rendezvous on the rank-0 pod; default 29500.
    #[serde(default)]
    #[schemars(range(min = 1024, max = 65535))]
    pub port: Option<u16>,
    /// Seconds each pod waits for the rank-0 pod's name to resolve before the action starts;
    /// default 300.
    #[serde(default)]
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_seconds: Option<u32>,
}

/// How pod failures are told apart: a disruption (eviction, preemption, a node drained or
/// lost) is not the action failing, and some exit codes say a retry cannot help.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Retries {
    /// Pods ended by a disruption that are replaced: unset = every one (they do not count
    /// against `backoffLimit`); N = at most N; 0 = a disruption fails the run as any failure.
    #[serde(default)]
    #[schemars(range(max = 1000))]
    pub disruptions: Option<u32>,
    /// Exit codes of the action that fail the run at once, whatever retries are left.
    #[serde(default)]
    #[schemars(length(max = 255), inner(range(min = 1, max = 255)))]
    pub fatal_exit_codes: Vec<u8>,
}

/// Logs that outlive the pods.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Logs {
    /// Every rank's stdout and stderr also go, as they are written, to
    /// `<resultsDir>/logs/<job record>/rank-<i>.log` (uploaded with the results in tier C),
    /// which `job.sh logs --record ID` reads once the pods are gone. A constant wrapper of
    /// tao-k8s then runs in front of the action (`/bin/sh`, the action's argv as its
    /// arguments, never parsed by the shell).
    #[serde(default)]
    pub keep: bool,
}

/// Checkpoints a retried pod resumes from.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Checkpoint {
    /// The directory the action writes its checkpoints to, under `resultsDir` (tier C: synced
    /// to the results URI as they appear, and fetched back before the action starts).
    pub dir: String,
    /// The checkpoint files' names, a glob of one path segment; default `*.pth`.
    #[serde(default)]
    pub pattern: Option<String>,
    /// How the action is told to resume.
    pub resume: Resume,
}

/// Exactly one key: how the newest checkpoint reaches the action.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Resume {
    /// An override appended to the action's argv as `<arg>=<path>` (TAO's
    /// `train.resume_training_checkpoint_path`); `args` and `config` modes only.
    #[serde(default)]
    pub arg: Option<String>,
    /// An environment variable the action reads the path from (`TAO_RESUME_CHECKPOINT`).
    #[serde(default)]
    pub env: Option<String>,
}

/// The default glob of checkpoint file names.
pub const DEFAULT_CHECKPOINT_PATTERN: &str = "*.pth";

/// The user the pods run as, which lets them meet the `restricted` Pod Security Standard:
/// not root, no privilege escalation, no capabilities, the runtime's default seccomp profile.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SecurityContext {
    /// A uid other than 0 that the image runs as (it must be able to read the image's files
    /// and write its outputs).
    #[schemars(range(min = 1, max = 2147483647))]
    pub run_as_user: u32,
    /// The primary group of its processes.
    #[serde(default)]
    #[schemars(range(max = 2147483647))]
    pub run_as_group: Option<u32>,
    /// The group that owns mounted volumes that support it (a PVC), so that the user can
    /// write the results.
    #[serde(default)]
    #[schemars(range(max = 2147483647))]
    pub fs_group: Option<u32>,
}

/// Scheduling constraints, copied through to the pod.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scheduling {
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
    #[serde(default)]
    pub priority_class_name: Option<String>,
    /// A Kueue LocalQueue: adds the queue label and starts the Job suspended.
    #[serde(default)]
    pub queue_name: Option<String>,
}

/// A Kubernetes toleration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Toleration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<TolerationOperator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<TaintEffect>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// How a toleration matches a taint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
pub enum TolerationOperator {
    Exists,
    Equal,
}

/// A taint effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl ActionRequest {
    /// Pods in the Job.
    pub fn nodes(&self) -> u32 {
        self.spec.resources.nodes.unwrap_or(1)
    }

    /// The storage tier, inferred from the presence of `storage.s3` when not given.
    pub fn tier(&self) -> Tier {
        let storage = &self.spec.storage;
        storage.tier.unwrap_or(if storage.s3.is_some() {
            Tier::C
        } else {
            Tier::A
        })
    }

    /// Every s3:// URI the request uses.
    pub fn s3_uris(&self) -> Vec<&str> {
        let Some(s3) = &self.spec.storage.s3 else {
            return Vec::new();
        };
        s3.inputs
            .iter()
            .map(|i| i.uri.as_str())
            .chain(s3.results.iter().map(|r| r.uri.as_str()))
            .collect()
    }

    /// The size of the memory-backed `/dev/shm`: `shmSize`, else 16Gi on multi-node.
    pub fn shm_size(&self) -> Option<&str> {
        match &self.spec.resources.shm_size {
            Some(q) => Some(q.0.as_str()),
            None if self.nodes() > 1 => Some(DEFAULT_SHM_SIZE),
            None => None,
        }
    }

    /// Whether the pod needs the S3 keys from the credentials Secret.
    pub fn needs_s3_credentials(&self) -> bool {
        match self.spec.credentials.s3 {
            S3Mode::Always => true,
            S3Mode::Never => false,
            S3Mode::Auto => !self.s3_uris().is_empty() || !self.action_s3_uris().is_empty(),
        }
    }

    /// The s3:// URIs the action itself uses: written in its command (the shell or script
    /// text, an argv, an inline config spec) or an env value, and not staged by
    /// `storage.s3` (the staging map rewrites those to paths in the pod).
    pub fn action_s3_uris(&self) -> Vec<&str> {
        let staged = self.s3_uris();
        let command = &self.spec.command;
        let config = command.config.as_ref();
        let mut texts: Vec<&str> = Vec::new();
        texts.extend(command.shell.as_deref());
        texts.extend(command.args.iter().flatten().map(String::as_str));
        texts.extend(
            config
                .into_iter()
                .flat_map(|c| c.argv.iter().map(String::as_str)),
        );
        texts.extend(command.script.as_ref().map(|s| s.text.as_str()));
        texts.extend(self.spec.env.values().map(String::as_str));
        let mut inline = Vec::new();
        if let Some(spec) = config.and_then(|c| c.spec_inline.as_ref()) {
            strings_of(spec.values(), &mut inline);
        }
        texts.extend(inline);
        // One searcher for every text: building one per text cost more than the searches.
        static S3: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new("s3://"));
        let mut out = Vec::new();
        for text in texts {
            for at in S3.find_iter(text.as_bytes()) {
                let uri = text[at..]
                    .split(|c: char| c.is_whitespace() || "\"'`;,)]}".contains(c))
                    .next()
                    .unwrap_or_default();
                let covered = staged
                    .iter()
                    .any(|s| uri.starts_with(s.trim_end_matches('/')));
                if !covered && !out.contains(&uri) {
                    out.push(uri);
                }
            }
        }
        out
    }

    /// Whether the action container reads the credentials Secret: for model keys
    /// (`credentials.extra`), S3 keys the request asks for explicitly (`s3: true`), or, with
    /// `s3: auto`, for an s3:// URI the action uses itself ([`Self::action_s3_uris`]).
    pub fn action_needs_credentials(&self) -> bool {
        !self.spec.credentials.extra.is_empty()
            || match self.spec.credentials.s3 {
                S3Mode::Always => true,
                S3Mode::Never => false,
                S3Mode::Auto => !self.action_s3_uris().is_empty(),
            }
    }

    /// Whether any container reads the credentials Secret.
    pub fn needs_credentials(&self) -> bool {
        self.needs_s3_credentials() || self.action_needs_credentials()
    }
}

/// Every string of JSON values, depth first.
fn strings_of<'a>(values: impl Iterator<Item = &'a serde_json::Value>, out: &mut Vec<&'a str>) {
    for value in values {
        match value {
            serde_json::Value::String(s) => out.push(s),
            serde_json::Value::Array(items) => strings_of(items.iter(), out),
            serde_json::Value::Object(map) => strings_of(map.values(), out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_scheme_is_a_letter_then_scheme_characters_before_the_first_separator() {
        let table: &[(&str, Option<&str>)] = &[
            ("s3://bucket/key", Some("s3")),
            ("git+ssh://host/repo", Some("git+ssh")),
            ("a.b-c://x", Some("a.b-c")),
            ("https://host/a://b", Some("https")),
            ("://x", None),
            ("3s://x", None),
            ("S3://x", None),
            ("ab:c://x", None),
            ("s3:/x", None),
            ("s3", None),
            ("/data/s3://x", None),
            ("", None),
        ];
        for (text, expected) in table {
            assert_eq!(super::scheme(text), *expected, "{text:?}");
        }
    }
}
