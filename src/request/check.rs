//! The cross-field rules of the spec that a JSON Schema cannot say: one command mode,
//! `{config_path}` only in config mode, pinned images, where results go, quantities, names
//! Kubernetes accepts, storage that makes sense, and no credential anywhere in the request.
//! Each rule reports at the field it is about, through the request's spanned tree.

use super::{ActionRequest, Tier};
use crate::diag::Diagnostic;
use crate::kube::names;
use crate::kube::quantity;
use crate::secrets;
use crate::yaml::{Node, Step, Value, display_path};

use crate::codes::INVALID_VALUE;
pub use crate::codes::{
    COMMAND_MODE, CONFIG_PATH, CREDENTIAL, ENV_NAME, IMAGE, NAME, QUANTITY, RESULTS_DIR, STORAGE,
};

/// The placeholder replaced by the staged spec's in-pod path.
pub const CONFIG_PATH_TOKEN: &str = "{config_path}";

/// Environment the renderer sets on multi-node pods for TAO's entrypoint and torchrun; a
/// request may not set them itself.
pub const RENDEZVOUS_ENV: &[&str] = &[
    "WORLD_SIZE",
    "NUM_GPU_PER_NODE",
    "NNODES",
    "NPROC_PER_NODE",
    "NODE_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TAO_STRICT_MULTINODE",
];

/// The volume of the staged config spec.
pub const CONFIG_VOLUME: &str = "tao-k8s-config";
/// The memory-backed `/dev/shm` volume.
pub const SHM_VOLUME: &str = "tao-k8s-shm";
/// Where the staged config spec is mounted, read-only.
pub const CONFIG_DIR: &str = "/etc/tao-k8s/config";
/// Volume names the renderer uses.
pub const RESERVED_VOLUMES: &[&str] = &[CONFIG_VOLUME, SHM_VOLUME];
/// Container paths the renderer mounts.
pub const RESERVED_MOUNT_PATHS: &[&str] = &["/etc/tao-k8s", "/dev/shm"];

/// Labels the renderer sets; a request may not set them itself.
const RESERVED_LABEL_PREFIXES: &[&str] = &[
    "app.kubernetes.io/",
    "tao-k8s.io/",
    "batch.kubernetes.io/",
    "kueue.x-k8s.io/",
];

/// Give a diagnostic its path and a primary label at the node the path names (or at the
/// deepest part of the path that exists, for a field that is missing).
pub(crate) fn pin(tree: &Node, path: &[Step], diag: Diagnostic, label: &str) -> Diagnostic {
    let (_, key, node) = tree.deepest(path);
    let span = match &node.value {
        Value::Map(_) | Value::Seq(_) => key.map_or(node.span.clone(), |k| k.span.clone()),
        _ => node.span.clone(),
    };
    let diag = if path.is_empty() {
        diag
    } else {
        diag.at_path(display_path(path))
    };
    diag.primary(span, label)
}

struct Checker<'a> {
    tree: &'a Node,
    diags: Vec<Diagnostic>,
}

fn path(dotted: &str) -> Vec<Step> {
    dotted
        .split('.')
        .map(|k| Step::Key(k.to_string()))
        .collect()
}

fn with(mut base: Vec<Step>, step: impl Into<StepArg>) -> Vec<Step> {
    base.push(match step.into() {
        StepArg::Key(k) => Step::Key(k),
        StepArg::Index(i) => Step::Index(i),
    });
    base
}

enum StepArg {
    Key(String),
    Index(usize),
}
impl From<&str> for StepArg {
    fn from(k: &str) -> Self {
        StepArg::Key(k.to_string())
    }
}
impl From<&String> for StepArg {
    fn from(k: &String) -> Self {
        StepArg::Key(k.clone())
    }
}
impl From<usize> for StepArg {
    fn from(i: usize) -> Self {
        StepArg::Index(i)
    }
}

impl Checker<'_> {
    /// Pin `d` at the node `at` names (its key instead, with `on_key`) and keep it.
    fn push(
        &mut self,
        d: Diagnostic,
        at: &[Step],
        label: &str,
        help: Option<String>,
        on_key: bool,
    ) {
        let mut d = pin(self.tree, at, d, label);
        if on_key
            && let (Some((Some(key), _)), Some(first)) =
                (self.tree.lookup(at), d.labels.first_mut())
        {
            first.span = key.span.clone();
        }
        d.help = help;
        self.diags.push(d);
    }

    fn error(
        &mut self,
        code: &'static str,
        at: &[Step],
        message: String,
        label: &str,
        help: Option<String>,
    ) {
        self.push(Diagnostic::error(code, message), at, label, help, false);
    }

    fn warn(
        &mut self,
        code: &'static str,
        at: &[Step],
        message: String,
        label: &str,
        help: Option<String>,
    ) {
        self.push(Diagnostic::warning(code, message), at, label, help, false);
    }

    /// A finding about a map key rather than its value.
    fn key_error(
        &mut self,
        code: &'static str,
        at: &[Step],
        message: String,
        label: &str,
        help: Option<String>,
    ) {
        self.push(Diagnostic::error(code, message), at, label, help, true);
    }
}

/// Every cross-field problem of a structurally valid request.
pub(super) fn check(req: &ActionRequest, tree: &Node) -> Vec<Diagnostic> {
    let mut c = Checker {
        tree,
        diags: Vec::new(),
    };
    command(&mut c, req);
    image(&mut c, &req.spec.image, &path("spec.image"));
    resources(&mut c, req);
    storage(&mut c, req);
    results_dir(&mut c, req);
    env(&mut c, req);
    naming(&mut c, req);
    tolerations(&mut c, req);
    credentials_anywhere(&mut c, tree, &mut Vec::new());
    control_characters(&mut c, tree, &mut Vec::new());
    c.diags
}

fn command(c: &mut Checker, req: &ActionRequest) {
    let cmd = &req.spec.command;
    let modes: Vec<&str> = cmd.modes().iter().map(|m| m.name()).collect();
    let help = Some("give exactly one of `shell`, `args`, `config` or `script`".to_string());
    match modes.len() {
        0 => c.error(
            COMMAND_MODE,
            &path("spec.command"),
            "no command mode in `spec.command`".into(),
            "expected one of `shell`, `args`, `config`, `script`",
            help,
        ),
        1 => {}
        _ => c.error(
            COMMAND_MODE,
            &path("spec.command"),
            format!(
                "`spec.command` has {} modes ({}); exactly one is allowed",
                modes.len(),
                modes.join(", ")
            ),
            "more than one mode",
            help,
        ),
    }
    let mut texts: Vec<(Vec<Step>, &str)> = Vec::new();
    if let Some(shell) = &cmd.shell {
        texts.push((path("spec.command.shell"), shell));
    }
    if let Some(args) = &cmd.args {
        texts.extend(
            args.iter()
                .enumerate()
                .map(|(i, a)| (with(path("spec.command.args"), i), a.as_str())),
        );
    }
    if let Some(script) = &cmd.script {
        texts.push((path("spec.command.script.text"), &script.text));
        if !script.shell.starts_with('/') {
            c.error(
                INVALID_VALUE,
                &path("spec.command.script.shell"),
                format!(
                    "the script shell must be an absolute path, found {:?}",
                    script.shell
                ),
                "expected e.g. /bin/bash",
                None,
            );
        }
    }
    for (at, text) in texts {
        if text.contains(CONFIG_PATH_TOKEN) {
            c.error(
                CONFIG_PATH,
                &at,
                "`{config_path}` is only replaced in config mode".into(),
                "would reach the container literally",
                Some(
                    "use `command.config` with `argv` and a spec, or write the path itself".into(),
                ),
            );
        }
    }
    if let Some(config) = &cmd.config {
        let at = path("spec.command.config");
        match (&config.spec, &config.spec_inline) {
            (None, None) => c.error(
                COMMAND_MODE,
                &at,
                "config mode needs `spec` (a file) or `specInline`".into(),
                "neither is given",
                None,
            ),
            (Some(_), Some(_)) => c.error(
                COMMAND_MODE,
                &at,
                "config mode takes `spec` or `specInline`, not both".into(),
                "both are given",
                None,
            ),
            (Some(file), None) if file.is_empty() || file.contains('\0') => c.error(
                INVALID_VALUE,
                &with(at.clone(), "spec"),
                "`spec` must name a file".into(),
                "not a file name",
                None,
            ),
            (Some(_), None) => {}
            (None, Some(_)) => {}
        }
        if let Some(sum) = &config.sha256
            && (sum.len() != 64 || !sum.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            c.error(
                INVALID_VALUE,
                &with(at.clone(), "sha256"),
                "`sha256` must be 64 hexadecimal characters".into(),
                "not a sha256 digest",
                None,
            );
        }
        if !config.argv.iter().any(|a| a.contains(CONFIG_PATH_TOKEN)) {
            c.warn(
                CONFIG_PATH,
                &with(at, "argv"),
                "config mode argv never mentions `{config_path}`: the staged spec is mounted but not passed".into(),
                "no `{config_path}` here",
                Some("pass it, e.g. `[dino, train, -e, \"{config_path}\"]`".into()),
            );
        }
    }
}

/// An image reference must pin a version: a tag other than `latest`, or a digest.
fn image(c: &mut Checker, image: &str, at: &[Step]) {
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = last.split_once(':').map(|(_, t)| t);
    let repo = name
        .strip_suffix(tag.map(|t| format!(":{t}")).as_deref().unwrap_or(""))
        .unwrap_or(name);
    let problem = if image.is_empty()
        || image
            .chars()
            .any(|ch| ch.is_whitespace() || ch.is_control())
    {
        Some("an image reference has no spaces".to_string())
    } else if let Some(d) = digest {
        let ok = d.strip_prefix("sha256:").is_some_and(|h| {
            h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        });
        (!ok).then(|| {
            format!("the digest must be `sha256:` and 64 lowercase hex characters, found `{d}`")
        })
    } else {
        match tag {
            None => Some("the image has no tag or digest".to_string()),
            Some("latest") => Some("the image uses `:latest`, which is not a version".to_string()),
            Some(t)
                if t.is_empty()
                    || t.len() > 128
                    || !t
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) =>
            {
                Some(format!("`{t}` is not a valid tag"))
            }
            Some(_) => None,
        }
    };
    let problem = problem.or_else(|| {
        let path = repo.split_once('/').map_or(repo, |(host, rest)| if host.contains(['.', ':']) || host == "localhost" { rest } else { repo });
        (path.is_empty() || path.bytes().any(|b| b.is_ascii_uppercase()))
            .then(|| format!("`{repo}` is not a valid repository name (lowercase letters, digits, `.`, `_`, `-`, `/`)"))
    });
    // The grammar the kubelet parses references with (a tag such as `---` is refused there).
    let problem = problem.or_else(|| crate::kube::image::problem(image));
    if let Some(problem) = problem {
        c.error(
            IMAGE,
            at,
            format!("image `{image}` cannot be used: {problem}"),
            "expected a pinned image",
            Some("pin a version, e.g. `nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt` or `...@sha256:<digest>`".into()),
        );
    }
}

fn resources(c: &mut Checker, req: &ActionRequest) {
    let r = &req.spec.resources;
    let mut values = Vec::new();
    for (field, q) in [
        ("cpu", &r.cpu),
        ("memory", &r.memory),
        ("shmSize", &r.shm_size),
        ("ephemeralStorage", &r.ephemeral_storage),
    ] {
        let Some(q) = q else { continue };
        let at = with(path("spec.resources"), field);
        match quantity::parse(&q.0) {
            Some(v) if v > 0.0 => values.push((field, v)),
            Some(_) => c.error(QUANTITY, &at, format!("`{field}` must be positive, found `{}`", q.0), "not positive", None),
            None => c.error(
                QUANTITY,
                &at,
                format!("`{field}` is not a Kubernetes quantity: found `{}`", q.0),
                "expected a quantity",
                Some("write e.g. `16`, `500m`, `64Gi` (binary suffixes Ki Mi Gi Ti, decimal k M G T)".into()),
            ),
        }
    }
    let memory = values.iter().find(|(n, _)| *n == "memory").map(|(_, v)| *v);
    let shm = req.shm_size().and_then(quantity::parse);
    if let (Some(mem), Some(shm)) = (memory, shm)
        && mem < shm
    {
        let (at, what, label) = match r.shm_size {
            Some(_) => (
                path("spec.resources.shmSize"),
                "`shmSize`".to_string(),
                "larger than `memory`",
            ),
            None => (
                path("spec.resources.memory"),
                format!(
                    "the multi-node default `shmSize` ({})",
                    super::DEFAULT_SHM_SIZE
                ),
                "smaller than /dev/shm",
            ),
        };
        c.error(
            QUANTITY,
            &at,
            format!("{what} is larger than `memory`: a memory-backed /dev/shm counts against the memory limit"),
            label,
            Some("raise `memory` or lower `shmSize`".into()),
        );
    }
    if req.nodes() == 1 && req.spec.rendezvous.is_some() {
        c.warn(
            INVALID_VALUE,
            &path("spec.rendezvous"),
            "`rendezvous` is ignored for a single node".into(),
            "ignored",
            None,
        );
    }
}

fn storage(c: &mut Checker, req: &ActionRequest) {
    let s = &req.spec.storage;
    match (s.tier, &s.s3) {
        (Some(Tier::A), Some(_)) => c.error(
            STORAGE,
            &path("spec.storage.s3"),
            "`s3` staging needs tier C, but `tier` is A".into(),
            "tier C only",
            Some("set `tier: C` or remove `s3`".into()),
        ),
        (Some(Tier::C), None) => c.error(
            STORAGE,
            &path("spec.storage.tier"),
            "tier C needs `storage.s3`".into(),
            "no `s3` section",
            None,
        ),
        _ => {}
    }
    if let Some(s3) = &s.s3 {
        s3_section(c, s3);
    }
    let mut seen_names: Vec<&str> = Vec::new();
    for (i, m) in s.mounts.iter().enumerate() {
        let at = with(path("spec.storage.mounts"), i);
        let name_problem = if !names::is_dns1123_label(&m.name) {
            Some((
                "is not a valid volume name",
                "not a DNS-1123 label",
                Some("use lowercase letters, digits and `-`, at most 63 characters"),
            ))
        } else if RESERVED_VOLUMES.contains(&m.name.as_str()) || m.name.starts_with("tao-k8s-") {
            Some((
                "is used by tao-k8s",
                "reserved",
                Some("choose another name"),
            ))
        } else if seen_names.contains(&m.name.as_str()) {
            Some(("is used twice", "used before", None))
        } else {
            None
        };
        if let Some((problem, label, help)) = name_problem {
            let message = format!("mount name `{}` {problem}", m.name);
            c.error(
                NAME,
                &with(at.clone(), "name"),
                message,
                label,
                help.map(String::from),
            );
        }
        seen_names.push(&m.name);
        match (&m.persistent_volume_claim, &m.nfs) {
            (None, None) => c.error(
                STORAGE,
                &at,
                format!("mount `{}` has no source", m.name),
                "needs `persistentVolumeClaim` or `nfs`",
                None,
            ),
            (Some(_), Some(_)) => c.error(
                STORAGE,
                &at,
                format!("mount `{}` has two sources", m.name),
                "`persistentVolumeClaim` and `nfs`",
                Some("split it into two mounts".into()),
            ),
            (Some(claim), None) if !names::is_dns1123_subdomain(claim) => c.error(
                NAME,
                &with(at.clone(), "persistentVolumeClaim"),
                format!("`{claim}` is not a valid claim name"),
                "not a DNS-1123 subdomain",
                None,
            ),
            (None, Some(nfs)) if !nfs.path.starts_with('/') || nfs.server.is_empty() => c.error(
                STORAGE,
                &with(at.clone(), "nfs"),
                "an NFS source needs a server and an absolute export path".into(),
                "incomplete NFS source",
                None,
            ),
            _ => {}
        }
        container_path(
            c,
            &with(at.clone(), "mountPath"),
            "mountPath",
            &m.mount_path,
        );
        for (j, alias) in m.aliases.iter().enumerate() {
            if let Some(problem) = alias_problem(alias) {
                c.error(
                    STORAGE,
                    &with(with(at.clone(), "aliases"), j),
                    format!("alias `{alias}` {problem}"),
                    "not a producer path",
                    Some("an alias is an absolute path or a logical `scheme://name`".into()),
                );
            }
        }
        if let Some(sub) = &m.sub_path
            && (sub.is_empty() || sub.starts_with('/') || sub.split('/').any(|p| p == ".."))
        {
            c.error(
                STORAGE,
                &with(at.clone(), "subPath"),
                format!("subPath `{sub}` must be a relative path without `..`"),
                "not a relative path",
                None,
            );
        }
    }
}

/// A path in the container (a mount's, an S3 input's): clean and absolute, and clear of the
/// paths tao-k8s mounts itself.
fn container_path(c: &mut Checker, at: &[Step], field: &str, p: &str) {
    if let Some(problem) = path_problem(p) {
        c.error(
            STORAGE,
            at,
            format!("{field} `{p}` {problem}"),
            "not a clean absolute path",
            None,
        );
    } else if let Some(reserved) = RESERVED_MOUNT_PATHS
        .iter()
        .find(|r| is_under(p, r) || is_under(r, p))
    {
        let help = if *reserved == "/dev/shm" {
            "set `resources.shmSize` for a memory-backed /dev/shm"
        } else {
            "tao-k8s mounts the staged config spec there; choose another path"
        };
        c.error(
            STORAGE,
            at,
            format!("{field} `{p}` overlaps `{reserved}`, which is reserved for tao-k8s"),
            "reserved path",
            Some(help.into()),
        );
    }
}

/// Why a container path is not a clean absolute path, if it is not.
fn path_problem(p: &str) -> Option<&'static str> {
    if !p.starts_with('/') {
        Some("is not absolute")
    } else if p[1..]
        .trim_end_matches('/')
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
        && p != "/"
    {
        Some("has an empty, `.` or `..` segment")
    } else {
        None
    }
}

/// Whether `p` is `dir` or below it, by whole path segments.
pub fn is_under(p: &str, dir: &str) -> bool {
    p == dir
        || dir == "/"
        || p.strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// `resultsDir` must be a clean absolute path; where it lands is the staging layout's concern.
fn results_dir(c: &mut Checker, req: &ActionRequest) {
    let dir = &req.spec.results_dir;
    if let Some(problem) = path_problem(dir) {
        c.error(
            RESULTS_DIR,
            &path("spec.resultsDir"),
            format!("resultsDir `{dir}` {problem}"),
            "not a clean absolute path",
            None,
        );
    }
}

/// Why an alias is not a producer-side path, if it is not.
fn alias_problem(alias: &str) -> Option<String> {
    match super::scheme(alias) {
        Some("s3") => Some("is an S3 URI: stage it with `storage.s3.inputs`".into()),
        Some(_)
            if alias
                .split_once("://")
                .is_some_and(|(_, rest)| rest.is_empty() || rest.split('/').any(|s| s == "..")) =>
        {
            Some("has no name after `://`, or a `..` segment".into())
        }
        Some(_) => None,
        None => path_problem(alias).map(String::from),
    }
}

/// `s3://bucket/key-or-prefix`: a bucket name S3 accepts, and no `..`.
fn s3_uri_problem(uri: &str) -> Option<&'static str> {
    let Some(rest) = uri.strip_prefix("s3://") else {
        return Some("does not start with `s3://`");
    };
    let bucket = rest.split('/').next().unwrap_or_default();
    let bucket_ok = (3..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
        && bucket.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !bucket_ok {
        Some("has no valid bucket name (3-63 lowercase letters, digits, `.` and `-`)")
    } else if rest.split('/').any(|s| s == "..") {
        Some("has a `..` segment")
    } else {
        None
    }
}

fn s3_section(c: &mut Checker, s3: &super::S3) {
    let base = path("spec.storage.s3");
    for (i, input) in s3.inputs.iter().enumerate() {
        let at = with(with(base.clone(), "inputs"), i);
        if let Some(problem) = s3_uri_problem(&input.uri) {
            c.error(
                STORAGE,
                &with(at.clone(), "uri"),
                format!("`{}` {problem}", input.uri),
                "not an S3 URI",
                Some("write `s3://bucket/prefix/`".into()),
            );
        }
        container_path(c, &with(at.clone(), "path"), "path", &input.path);
        if let Some(q) = &input.size_limit
            && crate::kube::quantity::parse(&q.0).is_none_or(|v| v <= 0.0)
        {
            c.error(
                QUANTITY,
                &with(at.clone(), "sizeLimit"),
                format!(
                    "`sizeLimit` is not a positive Kubernetes quantity: found `{}`",
                    q.0
                ),
                "expected a quantity",
                None,
            );
        }
    }
    if let Some(results) = &s3.results
        && let Some(problem) = s3_uri_problem(&results.uri)
    {
        c.error(
            STORAGE,
            &path("spec.storage.s3.results.uri"),
            format!("`{}` {problem}", results.uri),
            "not an S3 URI",
            Some("write `s3://bucket/prefix/`".into()),
        );
    }
    if let Some(image) = &s3.image {
        self::image(c, image, &with(base, "image"));
    }
}

fn env(c: &mut Checker, req: &ActionRequest) {
    let extra = &req.spec.credentials.extra;
    for name in req.spec.env.keys() {
        let at = with(path("spec.env"), name);
        if !names::is_env_name(name) {
            c.key_error(
                ENV_NAME,
                &at,
                format!("`{name}` is not a valid environment variable name"),
                "invalid name",
                Some("use letters, digits, `_`, `-` and `.`, not starting with a digit".into()),
            );
        } else if req.nodes() > 1 && RENDEZVOUS_ENV.contains(&name.as_str()) {
            c.key_error(
                ENV_NAME,
                &at,
                format!("`{name}` is set by tao-k8s for multi-node rendezvous and cannot be set in `env`"),
                "set by the renderer",
                Some(format!(
                    "remove it: {} are derived from `resources` and `rendezvous`",
                    RENDEZVOUS_ENV.join(", ")
                )),
            );
        } else if super::credentials::CREDENTIAL_ENV.contains(&name.as_str())
            || extra.contains(name)
        {
            c.key_error(
                CREDENTIAL,
                &at,
                format!("`{name}` is a credential and cannot be set in `env`"),
                "credential name",
                Some("credentials come from the submitter's environment through the credentials Secret; list model keys in `credentials.extra`".into()),
            );
        }
    }
    // The submitter passes each of them from their environment (upper-case names, never the
    // S3 keys, NGC_KEY or a tao-k8s setting: see `request::credentials`).
    for (i, name) in extra.iter().enumerate() {
        let at = with(path("spec.credentials.extra"), i);
        if let Some(problem) = super::credentials::extra_problem(name) {
            c.error(
                ENV_NAME,
                &at,
                format!("`{name}` cannot be passed from the submitter's environment: {problem}"),
                "not a name the driver passes",
                Some(
                    "list the model's own keys, in upper case: letters, digits and `_`, not starting with a digit, e.g. `HF_TOKEN`"
                        .into(),
                ),
            );
        } else if extra[..i].contains(name) {
            c.error(
                ENV_NAME,
                &at,
                format!("`{name}` is listed twice in `credentials.extra`"),
                "listed before",
                Some("list each credential once".into()),
            );
        }
    }
    // What the job record keeps of the request must fit the record's limits, or no submit
    // of the bundle could open one.
    let results = match (req.tier(), req.spec.storage.s3.as_ref()) {
        (
            Tier::C,
            Some(super::S3 {
                results: Some(r), ..
            }),
        ) => ("spec.storage.s3.results.uri", r.uri.as_str()),
        _ => ("spec.resultsDir", req.spec.results_dir.as_str()),
    };
    for (field, at, value) in [
        ("image", "spec.image", req.spec.image.as_str()),
        ("resultsDir", results.0, results.1),
    ] {
        let limit = crate::record::field_limit(field);
        if value.len() > limit {
            c.error(
                INVALID_VALUE,
                &path(at),
                format!(
                    "`{at}` is {} bytes long, over the {limit} bytes a job record keeps",
                    value.len()
                ),
                "too long",
                Some(format!("shorten it to {limit} bytes or fewer")),
            );
        }
    }
}

fn naming(c: &mut Checker, req: &ActionRequest) {
    use crate::kube::names::MAX_ANNOTATIONS_BYTES;
    let md = &req.metadata;
    if md.name.trim().is_empty() {
        c.error(
            NAME,
            &path("metadata.name"),
            "`metadata.name` is empty".into(),
            "expected a name",
            None,
        );
    }
    // The whole name is kept in an annotation of the Job (object names are cut to fit).
    let annotation = super::REQUEST_NAME_ANNOTATION;
    if md.name.len() + annotation.len() > MAX_ANNOTATIONS_BYTES {
        c.error(
            NAME,
            &path("metadata.name"),
            format!(
                "`metadata.name` has {} bytes: the Job keeps it whole in its annotation `{annotation}`, and the API server accepts at most {MAX_ANNOTATIONS_BYTES} bytes of annotations on an object",
                md.name.len()
            ),
            "too long",
            Some("use a short name; put long descriptions in a file the action reads".into()),
        );
    }
    if let Some(ns) = &md.namespace
        && !names::is_dns1123_label(ns)
    {
        c.error(
            NAME,
            &path("metadata.namespace"),
            format!("`{ns}` is not a valid namespace"),
            "not a DNS-1123 label",
            None,
        );
    }
    let label_values = [
        ("metadata.recordId", md.record_id.as_deref()),
        ("spec.action", Some(req.spec.action.as_str())),
        ("spec.networkArch", Some(req.spec.network_arch.as_str())),
        (
            "spec.scheduling.queueName",
            req.spec.scheduling.queue_name.as_deref(),
        ),
    ];
    for (at, value) in label_values {
        if let Some(v) = value
            && (v.is_empty() || !names::is_label_value(v))
        {
            c.error(NAME, &path(at), format!("`{v}` cannot be used as a label value"), "not a label value", Some("at most 63 letters, digits, `-`, `_`, `.`, starting and ending with a letter or digit".into()));
        }
    }
    let maps = [
        ("metadata.labels", &md.labels),
        (
            "spec.scheduling.nodeSelector",
            &req.spec.scheduling.node_selector,
        ),
    ];
    for (base, map) in maps {
        for (k, v) in map {
            let at = with(path(base), k);
            if !names::is_qualified_name(k) {
                c.key_error(
                    NAME,
                    &at,
                    format!("`{k}` is not a valid label key"),
                    "invalid key",
                    None,
                );
            } else if base == "metadata.labels"
                && RESERVED_LABEL_PREFIXES.iter().any(|p| k.starts_with(p))
            {
                c.key_error(NAME, &at, format!("label `{k}` is set by tao-k8s"), "reserved", Some("choose a key outside app.kubernetes.io/, tao-k8s.io/, batch.kubernetes.io/ and kueue.x-k8s.io/".into()));
            }
            if !names::is_label_value(v) {
                c.error(
                    NAME,
                    &at,
                    format!("`{v}` is not a valid label value"),
                    "not a label value",
                    None,
                );
            }
        }
    }
    let subdomains = req
        .spec
        .image_pull_secrets
        .iter()
        .enumerate()
        .map(|(i, n)| (with(path("spec.imagePullSecrets"), i), n.as_str()))
        .chain(
            req.spec
                .credentials
                .secret_name
                .as_deref()
                .map(|n| (path("spec.credentials.secretName"), n)),
        )
        .chain(
            req.spec
                .scheduling
                .priority_class_name
                .as_deref()
                .map(|n| (path("spec.scheduling.priorityClassName"), n)),
        );
    for (at, n) in subdomains.collect::<Vec<_>>() {
        if !names::is_dns1123_subdomain(n) {
            c.error(
                NAME,
                &at,
                format!("`{n}` is not a valid object name"),
                "not a DNS-1123 subdomain",
                None,
            );
        }
    }
}

/// The tolerations are copied into the pod spec: what the API server refuses there (and the
/// lint's `toleration` rule reports) is refused here, at the request's field.
fn tolerations(c: &mut Checker, req: &ActionRequest) {
    use crate::kube::toleration::{Fields, problems};
    for (i, t) in req.spec.scheduling.tolerations.iter().enumerate() {
        let operator = t.operator.map(|o| format!("{o:?}"));
        let effect = t.effect.map(|e| format!("{e:?}"));
        let fields = Fields {
            key: t.key.as_deref(),
            operator: operator.as_deref(),
            value: t.value.as_deref(),
            effect: effect.as_deref(),
            seconds: t.toleration_seconds,
        };
        let at = with(path("spec.scheduling.tolerations"), i);
        for p in problems(fields) {
            let field = if c.tree.lookup(&with(at.clone(), p.field)).is_some() {
                with(at.clone(), p.field)
            } else {
                at.clone()
            };
            let help = (!p.help.is_empty()).then(|| p.help.to_string());
            c.error(INVALID_VALUE, &field, p.message, "invalid toleration", help);
        }
    }
}

/// No string anywhere in the request may look like a credential.
fn credentials_anywhere(c: &mut Checker, node: &Node, at: &mut Vec<Step>) {
    let refuse = |c: &mut Checker, at: &[Step], f: &secrets::Finding, s: &str| {
        let shown = secrets::mask(&s[f.range.clone()]);
        c.error(
            CREDENTIAL,
            at,
            format!("{} is written into the request (`{shown}`)", f.what),
            "credential-shaped value",
            Some("never put credentials in a request: the driver script reads them from the submitter's environment into a Secret; name them in `credentials.extra`".into()),
        );
    };
    match &node.value {
        Value::Str(s) => {
            let name = match at.last() {
                Some(Step::Key(k)) => k.as_str(),
                _ => "",
            };
            if let Some(f) = secrets::scan_assignment(name, s).first() {
                refuse(c, at, f, s);
            }
        }
        Value::Seq(items) => {
            // An argv (`command.args`, `command.config.argv`): option values across elements
            // (`[--token, X]`, `[mysql, -pX]`), reported on the value's element.
            let argv = [path("spec.command.args"), path("spec.command.config.argv")].contains(at);
            let words = crate::yaml::words(items);
            let mut flagged = Vec::new();
            if argv {
                for (i, f) in secrets::scan_argv(&words) {
                    at.push(Step::Index(i));
                    refuse(c, at, &f, words[i]);
                    at.pop();
                    flagged.push(i);
                }
            }
            for (i, item) in items.iter().enumerate() {
                if flagged.contains(&i) {
                    continue;
                }
                at.push(Step::Index(i));
                credentials_anywhere(c, item, at);
                at.pop();
            }
        }
        Value::Map(entries) => {
            for (k, v) in entries {
                let key = crate::yaml::key_text(k);
                at.push(Step::Key(key.clone()));
                // No key may be a credential either: label keys and env names reach every
                // object.
                if let Some(f) = secrets::scan_text(&key).first() {
                    let shown = secrets::mask(&key[f.range.clone()]);
                    c.key_error(
                        CREDENTIAL,
                        at,
                        format!(
                            "{} is written into the request as a key (`{shown}`)",
                            f.what
                        ),
                        "credential-shaped key",
                        Some("never put credentials in a request, not even as a name".into()),
                    );
                }
                credentials_anywhere(c, v, at);
                at.pop();
            }
        }
        _ => {}
    }
}

/// No control character in a name or a path, and no NUL anywhere: bash and the kernel cannot
/// carry a NUL in an argument or an environment value, so a value holding one would reach the
/// pod (or the driver script, or a job record) as a different value.
fn control_characters(c: &mut Checker, node: &Node, at: &mut Vec<Step>) {
    match &node.value {
        Value::Str(s) => {
            let free_text = matches!(
                at.iter().rev().find_map(|s| match s {
                    Step::Key(k) => Some(k.as_str()),
                    Step::Index(_) => None,
                }),
                Some("shell" | "text" | "args" | "argv" | "env" | "specInline")
            ) || at
                .iter()
                .any(|s| matches!(s, Step::Key(k) if k == "env" || k == "specInline"));
            // Free text (a script, argv, env values) may hold tabs and line breaks.
            let bad = s.chars().find(|&ch| {
                if free_text {
                    ch == '\0'
                } else {
                    ch.is_control()
                }
            });
            if let Some(ch) = bad {
                let message = if ch == '\0' {
                    "the value holds a NUL character, which no process argument, environment value or script can carry".to_string()
                } else {
                    format!(
                        "the value holds the control character {}: names and paths hold printable characters only",
                        ch.escape_default()
                    )
                };
                c.error(
                    INVALID_VALUE,
                    at,
                    message,
                    "control character",
                    Some("remove it".into()),
                );
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                at.push(Step::Index(i));
                control_characters(c, item, at);
                at.pop();
            }
        }
        Value::Map(entries) => {
            for (k, v) in entries {
                let key = crate::yaml::key_text(k);
                at.push(Step::Key(key.clone()));
                if let Some(ch) = key.chars().find(|ch| ch.is_control()) {
                    c.key_error(
                        INVALID_VALUE,
                        at,
                        format!(
                            "the key holds the control character {}",
                            ch.escape_default()
                        ),
                        "control character",
                        None,
                    );
                }
                control_characters(c, v, at);
                at.pop();
            }
        }
        _ => {}
    }
}
