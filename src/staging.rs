//! Where every producer-side path lands in the pod. Mounts of the same source become one
//! volume; their names, mount paths and aliases all resolve to it. S3 inputs (tier C) are
//! staged volumes of their own. The staging map lists one entry per producer-side path, and
//! the same map rewrites producer paths in argv and in the config spec: the longest alias that
//! is a whole-segment prefix wins (`/data2` is not under `/data`).

use crate::diag::Diagnostic;
use crate::request::{ActionRequest, Mount, is_under, pin, scheme};
use crate::yaml::{Node, Step, Value};
use serde::{Deserialize, Serialize};

pub use crate::codes::{CONFLICT, UNCOVERED};

/// Where a staged path's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum MountSource {
    PersistentVolumeClaim {
        claim_name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sub_path: Option<String>,
    },
    Nfs {
        server: String,
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sub_path: Option<String>,
    },
    S3 {
        uri: String,
    },
    /// A scratch directory of the pod (results that are uploaded, not mounted).
    EmptyDir,
}

/// One producer-side path and where it lands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub producer_path: String,
    pub pod_path: String,
    pub source: MountSource,
    pub read_only: bool,
    /// The request field that produced it, e.g. `spec.storage.mounts[0]`.
    pub origin: String,
}

/// The staged config spec: exactly one file and its digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StagedConfig {
    pub pod_path: String,
    pub sha256: String,
    pub bytes: usize,
}

/// The staging map, as `render --staging-map` writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StagingMap {
    pub entries: Vec<Entry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<StagedConfig>,
}

/// A pod volume that holds producer data: one per distinct source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedVolume {
    pub name: String,
    pub mount_path: String,
    /// The path as the request wrote it (`/data/` for `/data`), for messages.
    pub declared_path: String,
    pub source: MountSource,
    pub read_only: bool,
    /// For S3 inputs: the emptyDir's size limit.
    pub size_limit: Option<String>,
}

/// Volumes, the map, and where results are written.
#[derive(Debug, Clone, Default)]
pub struct Staging {
    pub volumes: Vec<StagedVolume>,
    pub map: StagingMap,
    /// `resultsDir` after rewriting.
    pub results_dir: String,
    /// The volume holding `resultsDir`, if it is on one.
    pub results_volume: Option<String>,
    /// `command.args` (args mode) or `command.config.argv` (config mode), rewritten.
    pub argv: Option<Vec<String>>,
    /// `command.config.specInline`, rewritten, in the order it was written.
    pub spec_inline: Option<Node>,
}

/// What a path in a request value became.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rewrite {
    Unchanged,
    Rewritten(String),
    /// A logical `scheme://` path that no alias covers.
    Uncovered(String),
}

/// Schemes that name real locations, not producer-side aliases.
const NETWORK_SCHEMES: &[&str] = &["http", "https", "s3", "gs", "ftp", "ftps", "hdfs", "file"];

/// `/data/` and `/data` are the same directory.
fn trim(path: &str) -> &str {
    if path.len() > 1 {
        path.trim_end_matches('/')
    } else {
        path
    }
}

/// Whether `prefix` covers `path` by whole segments.
fn covers(prefix: &str, path: &str) -> bool {
    let prefix = trim(prefix);
    if scheme(prefix).is_some() {
        path == prefix
            || path
                .strip_prefix(prefix)
                .is_some_and(|r| r.starts_with('/'))
    } else {
        // `/` covers absolute paths only, not a relative word or a `scheme://` path.
        path.starts_with('/') && is_under(path, prefix)
    }
}

impl StagingMap {
    /// Rewrite the path in one value: the whole value, or what follows its first `=`
    /// (`results_dir=/home/alice/out`).
    pub fn rewrite(&self, value: &str) -> Rewrite {
        if value.contains(char::is_whitespace) {
            return Rewrite::Unchanged; // text, not a path
        }
        let (head, path) = match value.split_once('=') {
            Some((k, v)) if !k.contains('/') && !k.contains("://") => (&value[..=k.len()], v),
            _ => ("", value),
        };
        let best = self
            .entries
            .iter()
            .filter(|e| covers(&e.producer_path, path))
            .max_by_key(|e| trim(&e.producer_path).len());
        match best {
            Some(e) => {
                // What follows the prefix: empty or `/...` (all of `path` under `/`).
                let prefix = trim(&e.producer_path);
                let rest = match prefix {
                    "/" if path == "/" => "",
                    "/" => path,
                    _ => &path[prefix.len()..],
                };
                let pod = match trim(&e.pod_path) {
                    "/" if !rest.is_empty() => "",
                    pod => pod,
                };
                // `path` ends with `rest`: it is unchanged when what comes before is `pod`
                // (a mount at the same path in the pod), found without building the new text.
                if path.len() == pod.len() + rest.len() && path.starts_with(pod) {
                    Rewrite::Unchanged
                } else {
                    Rewrite::Rewritten(format!("{head}{pod}{rest}"))
                }
            }
            None => match scheme(path) {
                Some(s) if !NETWORK_SCHEMES.contains(&s) => Rewrite::Uncovered(path.to_string()),
                _ => Rewrite::Unchanged,
            },
        }
    }
}

fn mount_source(m: &Mount) -> MountSource {
    match (&m.persistent_volume_claim, &m.nfs) {
        (Some(claim), _) => MountSource::PersistentVolumeClaim {
            claim_name: claim.clone(),
            sub_path: m.sub_path.clone(),
        },
        (None, Some(nfs)) => MountSource::Nfs {
            server: nfs.server.clone(),
            path: nfs.path.clone(),
            sub_path: m.sub_path.clone(),
        },
        (None, None) => MountSource::EmptyDir, // refused by the request checks
    }
}

fn field(parts: &[&str], index: usize) -> Vec<Step> {
    let mut path: Vec<Step> = parts
        .iter()
        .map(|p| Step::Key(p.to_string().into()))
        .collect();
    path.push(Step::Index(index));
    path
}

/// Lay out the request's storage; every conflict is a diagnostic.
pub fn stage(req: &ActionRequest, tree: &Node) -> (Staging, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let mut staging = Staging::default();
    // (volume index, field of the mount or input that defined it)
    let mut origins: Vec<Vec<Step>> = Vec::new();
    // (entry index, field) of every alias, to point at the one that clashes.
    let mut alias_fields: Vec<(usize, Vec<Step>)> = Vec::new();
    let storage = &req.spec.storage;
    mounts(storage, &mut staging, &mut origins, &mut alias_fields);
    s3_inputs(storage, &mut staging, &mut origins);
    conflicts(tree, &staging, &origins, &mut diags);
    aliases(tree, &staging, &alias_fields, &mut diags);
    results(req, tree, &mut staging, &mut diags);
    command(req, tree, &mut staging, &mut diags);
    unmounted(req, tree, &staging, &mut diags);
    (staging, diags)
}

/// Where an absolute path is found in the pod without a mount: the directories of the image
/// (a TAO image's `/workspace`, the system's own) and those the kubelet provides. A path under
/// one of them is not a producer path.
pub const IMAGE_PATHS: &[&str] = &[
    "/workspace",
    "/usr",
    "/opt",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/etc",
    "/var",
    "/run",
    "/root",
    "/tmp",
    "/dev",
    "/proc",
    "/sys",
];

/// The absolute path `value` names: the whole value, or what follows its first `=` when the
/// key before it is a word (`results_dir=/home/alice/out`), as the map rewrites them.
fn absolute_path(value: &str) -> Option<&str> {
    let path = match value.split_once('=') {
        Some((k, v)) if !k.contains('/') && !k.contains("://") => v,
        _ => value,
    };
    (path.starts_with('/') && path.len() > 1 && !path.contains(char::is_whitespace)).then_some(path)
}

/// The words of a shell text that are absolute paths (`2>/dev/null` and `x=/a` included).
fn shell_paths(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || "\"'`;|&()<>=,".contains(c))
        .filter(|w| w.starts_with('/') && w.len() > 1 && !w.contains('$'))
        .collect()
}

/// Every absolute path of the command (after the map rewrote it) and of the inline config
/// spec that is under no staged volume, not the results directory and not an image path: a
/// warning naming it and the mounts, pinned where it is written. Each path is said once.
fn unmounted(req: &ActionRequest, tree: &Node, staging: &Staging, diags: &mut Vec<Diagnostic>) {
    let covered = |path: &str| {
        staging
            .volumes
            .iter()
            .any(|v| is_under(path, &v.mount_path))
            || is_under(path, trim(&staging.results_dir))
            || IMAGE_PATHS.iter().any(|p| is_under(path, p))
    };
    let mut found: Vec<(Vec<Step>, String)> = Vec::new();
    let key = |k: &'static str| Step::Key(k.into());
    let cmd = &req.spec.command;
    if let Some(argv) = &staging.argv {
        let at: Vec<Step> = match (&cmd.args, &cmd.config) {
            (Some(_), _) => vec![key("spec"), key("command"), key("args")],
            _ => vec![key("spec"), key("command"), key("config"), key("argv")],
        };
        for (i, arg) in argv.iter().enumerate() {
            if let Some(path) = absolute_path(arg) {
                let mut field = at.clone();
                field.push(Step::Index(i));
                found.push((field, path.to_string()));
            }
        }
    }
    if let Some(spec) = &staging.spec_inline {
        let at = [
            key("spec"),
            key("command"),
            key("config"),
            key("specInline"),
        ];
        spec_paths(spec, &mut at.to_vec(), &mut found);
    }
    let texts = [
        (
            cmd.shell.as_deref(),
            vec![key("spec"), key("command"), key("shell")],
        ),
        (
            cmd.script.as_ref().map(|s| s.text.as_str()),
            vec![key("spec"), key("command"), key("script"), key("text")],
        ),
    ];
    for (text, at) in texts {
        for path in text.map(shell_paths).unwrap_or_default() {
            found.push((at.clone(), path.to_string()));
        }
    }
    let mut mounts: Vec<&str> = staging
        .volumes
        .iter()
        .map(|v| v.mount_path.as_str())
        .collect();
    mounts.sort_unstable();
    let mounts = if mounts.is_empty() {
        "the request mounts nothing".to_string()
    } else {
        format!("mounts: {}", mounts.join(", "))
    };
    let mut said: Vec<String> = Vec::new();
    for (field, path) in found {
        if covered(&path) || said.contains(&path) {
            continue;
        }
        let d = Diagnostic::warning(
            crate::codes::UNMOUNTED,
            format!(
                "`{path}` is under no mount and not a path the image has: the pod will not find it ({mounts})"
            ),
        )
        .help("mount the directory that holds it (a mount's `mountPath`, or an `aliases` entry of the mount with the same data), or write the in-pod path");
        diags.push(pin(tree, &field, d, "not in the pod"));
        said.push(path);
    }
}

/// The absolute paths among the strings of an inline config spec, with where each stands.
fn spec_paths(spec: &Node, at: &mut Vec<Step>, found: &mut Vec<(Vec<Step>, String)>) {
    match &spec.value {
        Value::Str(s) => {
            if let Some(path) = absolute_path(s) {
                found.push((at.clone(), path.to_string()));
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                at.push(Step::Index(i));
                spec_paths(item, at, found);
                at.pop();
            }
        }
        Value::Map(entries) => {
            for (k, v) in entries {
                at.push(Step::Key(crate::yaml::key_text(k).into_owned().into()));
                spec_paths(v, at, found);
                at.pop();
            }
        }
        _ => {}
    }
}

/// One volume per distinct source among the mounts; every name, mount path and alias in the
/// map.
fn mounts(
    storage: &crate::request::Storage,
    staging: &mut Staging,
    origins: &mut Vec<Vec<Step>>,
    alias_fields: &mut Vec<(usize, Vec<Step>)>,
) {
    for (i, m) in storage.mounts.iter().enumerate() {
        let at = field(&["spec", "storage", "mounts"], i);
        let source = mount_source(m);
        let mount_path = trim(&m.mount_path).to_string();
        if let Some(v) = staging.volumes.iter_mut().find(|v| v.source == source) {
            // Same source: one volume, one volumeMount; writable if any mount is.
            v.read_only &= m.read_only;
            staging.map.entries.push(Entry {
                producer_path: mount_path,
                pod_path: v.mount_path.clone(),
                source: source.clone(),
                read_only: v.read_only,
                origin: crate::yaml::display_path(&at),
            });
        } else {
            staging.volumes.push(StagedVolume {
                name: m.name.clone(),
                mount_path: mount_path.clone(),
                declared_path: m.mount_path.clone(),
                source: source.clone(),
                read_only: m.read_only,
                size_limit: None,
            });
            origins.push([at.clone(), vec![Step::Key("mountPath".into())]].concat());
            staging.map.entries.push(Entry {
                producer_path: mount_path.clone(),
                pod_path: mount_path,
                source: source.clone(),
                read_only: m.read_only,
                origin: crate::yaml::display_path(&at),
            });
        }
        let pod_path = staging
            .volumes
            .iter()
            .find(|v| v.source == source)
            .map(|v| v.mount_path.clone())
            .unwrap_or_default();
        for (j, alias) in m.aliases.iter().enumerate() {
            let mut alias_at = at.clone();
            alias_at.extend([Step::Key("aliases".into()), Step::Index(j)]);
            alias_fields.push((staging.map.entries.len(), alias_at));
            staging.map.entries.push(Entry {
                producer_path: trim(alias).to_string(),
                pod_path: pod_path.clone(),
                source: source.clone(),
                read_only: m.read_only,
                origin: crate::yaml::display_path(&at),
            });
        }
    }
}

/// Each S3 input is a volume of its own; merged sources keep one read-only flag in the map.
fn s3_inputs(
    storage: &crate::request::Storage,
    staging: &mut Staging,
    origins: &mut Vec<Vec<Step>>,
) {
    if let Some(s3) = &storage.s3 {
        for (i, input) in s3.inputs.iter().enumerate() {
            let at = field(&["spec", "storage", "s3", "inputs"], i);
            let path = trim(&input.path).to_string();
            staging.volumes.push(StagedVolume {
                name: format!("tao-k8s-input-{i}"),
                mount_path: path.clone(),
                declared_path: input.path.clone(),
                source: MountSource::S3 {
                    uri: input.uri.clone(),
                },
                read_only: false,
                size_limit: input.size_limit.as_ref().map(|q| q.0.clone()),
            });
            origins.push([at.clone(), vec![Step::Key("path".into())]].concat());
            // A prefix lands as the directory; one object lands inside it, under its name.
            let pod_path = match input.uri.ends_with('/') {
                true => path,
                false => format!(
                    "{}/{}",
                    path.trim_end_matches('/'),
                    input.uri.rsplit('/').next().unwrap_or_default()
                ),
            };
            staging.map.entries.push(Entry {
                producer_path: trim(&input.uri).to_string(),
                pod_path,
                source: MountSource::S3 {
                    uri: input.uri.clone(),
                },
                read_only: false,
                origin: crate::yaml::display_path(&at),
            });
        }
    }
    // Keep the read-only flag of merged sources consistent in the map.
    for e in &mut staging.map.entries {
        if let Some(v) = staging.volumes.iter().find(|v| v.source == e.source) {
            e.read_only = v.read_only;
        }
    }
}

/// Distinct volumes may neither share a path nor nest inside each other.
fn conflicts(tree: &Node, staging: &Staging, origins: &[Vec<Step>], diags: &mut Vec<Diagnostic>) {
    for (a, va) in staging.volumes.iter().enumerate() {
        for (b, vb) in staging.volumes.iter().enumerate().skip(a + 1) {
            let (pa, pb) = (&va.declared_path, &vb.declared_path);
            let relation = if va.mount_path == vb.mount_path {
                "the same path"
            } else if is_under(&vb.mount_path, &va.mount_path)
                || is_under(&va.mount_path, &vb.mount_path)
            {
                "nested paths"
            } else {
                continue;
            };
            let at_b = origins[b].clone();
            let d = Diagnostic::error(
                CONFLICT,
                format!("`{}` and `{}` are different sources on {relation} (`{pa}`, `{pb}`)", va.name, vb.name),
            )
            .help("give each source its own path, or mount the same source (same claim or export and subPath) to share one");
            let d = pin(tree, &at_b, d, &format!("`{}` at `{pb}`", vb.name));
            let (_, _, first) = tree.deepest(&origins[a]);
            diags.push(d.secondary(first.span.clone(), format!("`{}` at `{pa}`", va.name)));
        }
    }
}

/// An alias names one source, and not the root.
fn aliases(
    tree: &Node,
    staging: &Staging,
    alias_fields: &[(usize, Vec<Step>)],
    diags: &mut Vec<Diagnostic>,
) {
    // An alias may name only one source (mount paths are checked as a layout above), and
    // not the root: every absolute path of the command would land on the mount.
    for (i, field) in alias_fields {
        let e = &staging.map.entries[*i];
        if e.producer_path == "/" {
            let d = Diagnostic::error(
                CONFLICT,
                format!("`/` as an alias of {} covers every absolute path", e.origin),
            )
            .help("name the producer-side directory the mount holds, e.g. `/home/alice/datasets`; `/usr/bin/python` in the command would otherwise land on the mount too");
            diags.push(pin(tree, field, d, "the whole producer filesystem"));
            continue;
        }
        if let Some(other) = staging.map.entries[..*i]
            .iter()
            .find(|o| o.producer_path == e.producer_path && o.source != e.source)
        {
            let d = Diagnostic::error(
                CONFLICT,
                format!(
                    "`{}` names two sources: {} and {}",
                    e.producer_path, other.origin, e.origin
                ),
            )
            .help("a producer path must land in exactly one place");
            diags.push(pin(tree, field, d, "already names another source"));
        }
    }
}

/// Where results are written: on a writable volume, or uploaded.
fn results(req: &ActionRequest, tree: &Node, staging: &mut Staging, diags: &mut Vec<Diagnostic>) {
    let storage = &req.spec.storage;
    // resultsDir must land on a writable volume, or be uploaded.
    let at = ["spec", "resultsDir"].map(|k| Step::Key(k.into()));
    let results = match staging.map.rewrite(&req.spec.results_dir) {
        Rewrite::Rewritten(p) => p,
        _ => req.spec.results_dir.clone(),
    };
    let uploaded = storage.s3.as_ref().is_some_and(|s| s.results.is_some());
    let volume = staging
        .volumes
        .iter()
        .filter(|v| is_under(&results, &v.mount_path))
        .max_by_key(|v| v.mount_path.len());
    match volume {
        Some(v) if matches!(v.source, MountSource::S3 { .. }) && !uploaded => {
            let d = Diagnostic::error(
                crate::request::RESULTS_DIR,
                format!(
                    "resultsDir `{results}` is in the staged S3 input `{}`, which is not uploaded",
                    v.name
                ),
            )
            .help("write results to a writable mount, or upload them with `storage.s3.results`");
            diags.push(pin(tree, &at, d, "lost with the pod"));
        }
        Some(v) if v.read_only && !uploaded => {
            let d = Diagnostic::error(
                crate::request::RESULTS_DIR,
                format!(
                    "resultsDir `{results}` is on mount `{}`, which is read-only",
                    v.name
                ),
            )
            .help("write results to a writable mount");
            diags.push(pin(tree, &at, d, "read-only mount"));
        }
        None if !uploaded => {
            let d = Diagnostic::error(
                crate::request::RESULTS_DIR,
                format!("resultsDir `{results}` is on no mount and is not uploaded: results would be lost with the pod"),
            )
            .help("put it under a writable mount's `mountPath` (or an alias), or upload it with `storage.s3.results`");
            diags.push(pin(tree, &at, d, "not on a mount"));
        }
        _ => {}
    }
    staging.results_volume = volume
        .filter(|v| !matches!(v.source, MountSource::S3 { .. }))
        .map(|v| v.name.clone());
    // The results URI is a producer path too: it is what resultsDir becomes after the upload.
    if let Some(upload) = storage.s3.as_ref().and_then(|s| s.results.as_ref()) {
        staging.map.entries.push(Entry {
            producer_path: trim(&upload.uri).to_string(),
            pod_path: results.clone(),
            source: MountSource::S3 {
                uri: upload.uri.clone(),
            },
            read_only: false,
            origin: "spec.storage.s3.results".into(),
        });
    }
    staging.results_dir = results;
}

/// The argv and the inline config spec, rewritten by the map.
fn command(req: &ActionRequest, tree: &Node, staging: &mut Staging, diags: &mut Vec<Diagnostic>) {
    let cmd = &req.spec.command;
    let (argv, at) = match (&cmd.args, &cmd.config) {
        (Some(args), _) => (
            Some(args),
            ["spec", "command", "args"]
                .map(|k| Step::Key(k.into()))
                .to_vec(),
        ),
        (None, Some(c)) => (
            Some(&c.argv),
            ["spec", "command", "config", "argv"]
                .map(|k| Step::Key(k.into()))
                .to_vec(),
        ),
        _ => (None, Vec::new()),
    };
    staging.argv = argv.map(|argv| rewrite_argv(&staging.map, argv, tree, &at, diags));
    let at: Vec<Step> = ["spec", "command", "config", "specInline"]
        .map(|k| Step::Key(k.into()))
        .to_vec();
    if let Some((_, inline)) = tree
        .lookup(&at)
        .filter(|_| cmd.config.as_ref().is_some_and(|c| c.spec_inline.is_some()))
    {
        let mut spec = inline.clone();
        let mut missing = Vec::new();
        rewrite_spec(&staging.map, &mut spec, &mut Vec::new(), &mut missing);
        for (path, value) in missing {
            let mut field = at.clone();
            field.extend(path);
            diags.push(uncovered(tree, &field, &value));
        }
        staging.spec_inline = Some(spec);
    }
}

/// Rewrite every path in a list of argv values; uncovered logical paths are diagnostics.
pub fn rewrite_argv(
    map: &StagingMap,
    argv: &[String],
    tree: &Node,
    at: &[Step],
    diags: &mut Vec<Diagnostic>,
) -> Vec<String> {
    argv.iter()
        .enumerate()
        .map(|(i, arg)| match map.rewrite(arg) {
            Rewrite::Unchanged => arg.clone(),
            Rewrite::Rewritten(new) => new,
            Rewrite::Uncovered(path) => {
                let mut field = at.to_vec();
                field.push(Step::Index(i));
                diags.push(uncovered(tree, &field, &path));
                arg.clone()
            }
        })
        .collect()
}

/// A logical path no alias covers.
pub fn uncovered(tree: &Node, field: &[Step], path: &str) -> Diagnostic {
    let d = Diagnostic::error(
        UNCOVERED,
        format!("`{path}` is a logical path that no mount alias covers"),
    )
    .help("add it (or a parent) to a mount's `aliases`, or use the in-pod path");
    pin(tree, field, d, "lands nowhere in the pod")
}

/// Rewrite every string in a config spec, recursively; the logical paths no alias covers are
/// collected with where they stand in the spec.
pub fn rewrite_spec(
    map: &StagingMap,
    spec: &mut Node,
    at: &mut Vec<Step>,
    uncovered: &mut Vec<(Vec<Step>, String)>,
) {
    match &mut spec.value {
        Value::Str(s) => match map.rewrite(s) {
            Rewrite::Rewritten(new) => *s = new,
            Rewrite::Uncovered(path) => uncovered.push((at.clone(), path)),
            Rewrite::Unchanged => {}
        },
        Value::Seq(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                at.push(Step::Index(i));
                rewrite_spec(map, item, at, uncovered);
                at.pop();
            }
        }
        Value::Map(entries) => {
            for (k, v) in entries.iter_mut() {
                at.push(Step::Key(crate::yaml::key_text(k).into_owned().into()));
                rewrite_spec(map, v, at, uncovered);
                at.pop();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> StagingMap {
        StagingMap {
            entries: pairs
                .iter()
                .map(|(p, q)| Entry {
                    producer_path: p.to_string(),
                    pod_path: q.to_string(),
                    source: MountSource::EmptyDir,
                    read_only: false,
                    origin: String::new(),
                })
                .collect(),
            config: None,
        }
    }

    #[test]
    fn longest_whole_segment_prefix_wins() {
        let m = map(&[
            ("/home/alice/data", "/data"),
            ("/home/alice/data/coco", "/coco"),
            ("data://coco", "/coco"),
        ]);
        let r = |s: &str| m.rewrite(s);
        assert_eq!(
            r("/home/alice/data/x.json"),
            Rewrite::Rewritten("/data/x.json".into())
        );
        assert_eq!(
            r("/home/alice/data/coco/train"),
            Rewrite::Rewritten("/coco/train".into())
        );
        assert_eq!(
            r("/home/alice/data2/x"),
            Rewrite::Unchanged,
            "whole segments only"
        );
        assert_eq!(r("/home/alice/data"), Rewrite::Rewritten("/data".into()));
        assert_eq!(
            r("results_dir=/home/alice/data/out"),
            Rewrite::Rewritten("results_dir=/data/out".into())
        );
        assert_eq!(r("data://coco/val"), Rewrite::Rewritten("/coco/val".into()));
        assert_eq!(r("data://cocoa"), Rewrite::Uncovered("data://cocoa".into()));
        assert_eq!(r("https://example.com/x"), Rewrite::Unchanged);
        assert_eq!(r("/opt/in/the/image"), Rewrite::Unchanged);
        assert_eq!(r("-e"), Rewrite::Unchanged);
        assert_eq!(
            r("cp /home/alice/data/x y"),
            Rewrite::Unchanged,
            "text is not a path"
        );
    }

    #[test]
    fn the_root_covers_absolute_paths_only() {
        // Found by fuzzing (fuzz/regressions/staging/root-alias-empty-arg): `""` panicked and
        // `train` became `/datarain`.
        let m = map(&[("/", "/data"), ("/data", "/data")]);
        let r = |s: &str| m.rewrite(s);
        assert_eq!(r(""), Rewrite::Unchanged);
        assert_eq!(r("k="), Rewrite::Unchanged);
        assert_eq!(r("train"), Rewrite::Unchanged);
        assert_eq!(r("é"), Rewrite::Unchanged);
        assert_eq!(r("/x/y"), Rewrite::Rewritten("/data/x/y".into()));
        assert_eq!(r("k=/x"), Rewrite::Rewritten("k=/data/x".into()));
        assert_eq!(r("/data/x"), Rewrite::Unchanged);
        assert_eq!(r("/"), Rewrite::Rewritten("/data".into()));
        let to_root = map(&[("/home/alice", "/")]);
        assert_eq!(
            to_root.rewrite("/home/alice/x"),
            Rewrite::Rewritten("/x".into())
        );
        assert_eq!(
            to_root.rewrite("/home/alice"),
            Rewrite::Rewritten("/".into())
        );
    }

    #[test]
    fn the_map_round_trips_through_json() {
        let mut m = map(&[("/a", "/b")]);
        m.entries[0].source = MountSource::Nfs {
            server: "10.0.0.5".into(),
            path: "/x".into(),
            sub_path: Some("y".into()),
        };
        m.config = Some(StagedConfig {
            pod_path: "/etc/tao-k8s/config/spec.yaml".into(),
            sha256: "00".repeat(32),
            bytes: 3,
        });
        let json = serde_json::to_string(&m).unwrap();
        assert!(
            json.contains(r#""kind":"nfs","server":"10.0.0.5","path":"/x","subPath":"y""#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<StagingMap>(&json).unwrap(), m);
    }
}
