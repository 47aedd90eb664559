use crate::lint::api::{DNS1123_LABEL, Report, index, items, key, shown, text};
use crate::lint::{Document, Findings, Rule};
use crate::yaml::{Node, Step, key_text};
use std::collections::{HashMap, HashSet};

/// Every volume source of a pod's `volumes` entries.
const SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

crate::rule! {
    /// What it checks: a pod spec's `volumes` and every container's `volumeMounts`, as the
    /// API server validates them: each volume has a `name` that is a DNS-1123 label, unique
    /// in the pod, and at most one source (`persistentVolumeClaim`, `emptyDir`, `nfs`,
    /// `configMap`…; a volume with none becomes an `emptyDir`, which is fine); each mount
    /// names a volume of the pod, has a `mountPath`, not used twice in one container, and a
    /// `subPath` that is relative and never goes up (`..`), and not both `subPath` and
    /// `subPathExpr`; file modes (`defaultMode`, `mode`) within 0-0777 octal, item paths
    /// relative without `..`, `hostPath.path` without `..`, an absolute `nfs.path`, and an
    /// `emptyDir.sizeLimit` that is not negative.
    ///
    /// Why it matters: the API server refuses the pod, or the Job whose template holds it.
    /// A mount whose volume was renamed, or a volume given both `emptyDir` and
    /// `persistentVolumeClaim` when editing, are the usual slips.
    ///
    /// Example: `volumeMounts: [{name: data, mountPath: /data}]` with no volume `data`;
    /// `volumes: [{name: cache, emptyDir: {}, persistentVolumeClaim: {claimName: c}}]`.
    ///
    /// Fix: name the volume as the mount does; keep one source per volume; mount each path
    /// once.
    pub struct Volumes {
        code: "TK409",
        name: "volumes",
        group: Api,
        severity: Error,
    }
}

impl Rule for Volumes {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some((pod, spec)) = doc.pod_spec() else {
            return;
        };
        let mut report = Report::new(doc, out);
        let mut declared: HashMap<&str, ()> = HashMap::new();
        for (i, volume) in spec
            .get("volumes")
            .map(items)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let at = || index(&key(pod, "volumes"), i);
            volume_name(&mut report, &at, volume, &mut declared);
            one_source(&mut report, &at, volume);
            source_fields(&mut report, &at, volume, doc.source);
        }
        for (path, container) in doc.containers() {
            let mut paths = HashSet::new();
            for (i, mount) in container
                .get("volumeMounts")
                .map(items)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                let at = || index(&key(&path.get(), "volumeMounts"), i);
                mounted_volume_declared(&mut report, &at, mount, &declared);
                mount_path(&mut report, &at, mount, &mut paths);
                sub_path(&mut report, &at, mount);
                if let (Some(_), Some(expr)) = (mount.get("subPath"), mount.get("subPathExpr")) {
                    report.at(
                        key(&at(), "subPathExpr"),
                        expr,
                        "`subPath` and `subPathExpr` together: the API server refuses it (they are mutually exclusive)".into(),
                        "keep one of them",
                    );
                }
            }
        }
    }
}

/// A volume's name: present, a DNS-1123 label, unique in the pod (and so `declared`).
fn volume_name<'n>(
    report: &mut Report,
    at: &impl Fn() -> Vec<Step>,
    volume: &'n Node,
    declared: &mut HashMap<&'n str, ()>,
) {
    let Some(node) = volume.get("name") else {
        report.at(at(), volume, "a volume has no `name`".into(), "");
        return;
    };
    let Some(name) = text(node) else {
        return;
    };
    if !crate::kube::names::is_dns1123_label(name) {
        report.at(
            key(&at(), "name"),
            node,
            format!("volume name `{}` must be {DNS1123_LABEL}", shown(node, 80)),
            "",
        );
    } else if declared.insert(name, ()).is_some() {
        report.at(
            key(&at(), "name"),
            node,
            format!("volume name `{name}` is used twice in the pod"),
            "give each volume its own name",
        );
    }
}

/// At most one source (`emptyDir`, `persistentVolumeClaim`…) in a volume.
fn one_source(report: &mut Report, at: &impl Fn() -> Vec<Step>, volume: &Node) {
    let sources: Vec<_> = crate::lint::api::entries(volume)
        .iter()
        .filter(|(k, _)| SOURCES.contains(&key_text(k).as_ref()))
        .collect();
    if let Some((second, _)) = sources.get(1) {
        let names: Vec<String> = sources
            .iter()
            .map(|(k, _)| format!("`{}`", key_text(k)))
            .collect();
        report.at(
            key(&at(), &key_text(second)),
            second,
            format!(
                "a volume has one source, this one has {}: {}",
                sources.len(),
                names.join(", ")
            ),
            "keep one source; mount another volume for the other",
        );
    }
}

/// The fields of a volume's source the API server checks: file modes within 0-0777 (octal),
/// item paths relative without `..` (`configMap`, `secret`, `downwardAPI`, `projected`), a
/// `hostPath` without `..`, an absolute `nfs` path, an `emptyDir` size that is not negative.
fn source_fields(
    report: &mut Report,
    at: &impl Fn() -> Vec<Step>,
    volume: &Node,
    source: &crate::source::Source,
) {
    let mut files: Vec<(Vec<Step>, &Node)> = Vec::new();
    for source in ["configMap", "secret", "downwardAPI", "projected"] {
        if let Some(node) = volume.get(source) {
            files.push((key(&at(), source), node));
        }
    }
    if let Some(projected) = volume.get("projected") {
        for (i, p) in projected
            .get("sources")
            .map(items)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            for kind in ["configMap", "secret", "downwardAPI"] {
                if let Some(node) = p.get(kind) {
                    let here = key(&index(&key(&key(&at(), "projected"), "sources"), i), kind);
                    files.push((here, node));
                }
            }
        }
    }
    for (here, node) in &files {
        mode(
            report,
            &key(here, "defaultMode"),
            node.get("defaultMode"),
            source,
        );
        for (j, item) in node
            .get("items")
            .map(items)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let item_at = index(&key(here, "items"), j);
            mode(report, &key(&item_at, "mode"), item.get("mode"), source);
            if let Some(p) = item.get("path")
                && let Some(path) = text(p)
            {
                let why = if path.starts_with('/') {
                    Some("must be a relative path")
                } else if path.split('/').any(|part| part == "..") {
                    Some("must not contain `..`")
                } else {
                    None
                };
                if let Some(why) = why {
                    report.at(
                        key(&item_at, "path"),
                        p,
                        format!(
                            "item path `{}` {why}: the API server refuses it",
                            shown(p, 80)
                        ),
                        "a path inside the volume, like `spec.yaml`",
                    );
                }
            }
        }
    }
    if let Some(p) = volume.get("hostPath").and_then(|h| h.get("path"))
        && let Some(path) = text(p)
        && path.split('/').any(|part| part == "..")
    {
        report.at(
            key(&key(&at(), "hostPath"), "path"),
            p,
            format!(
                "`hostPath.path: {}` must not contain `..`: the API server refuses it",
                shown(p, 80)
            ),
            "",
        );
    }
    if let Some(p) = volume.get("nfs").and_then(|h| h.get("path"))
        && let Some(path) = text(p)
        && !path.starts_with('/')
    {
        report.at(
            key(&key(&at(), "nfs"), "path"),
            p,
            format!(
                "`nfs.path: {}` must be an absolute path: the API server refuses it",
                shown(p, 80)
            ),
            "the export's path on the server, like `/exports/datasets`",
        );
    }
    if let Some(size) = volume.get("emptyDir").and_then(|e| e.get("sizeLimit"))
        && let Some(value) = match &size.value {
            crate::yaml::Value::Int(n) => Some(*n as f64),
            crate::yaml::Value::Float(f) => Some(*f),
            crate::yaml::Value::Str(s) => crate::kube::quantity::parse(s),
            _ => None,
        }
        && value < 0.0
    {
        report.at(
            key(&key(&at(), "emptyDir"), "sizeLimit"),
            size,
            format!(
                "`emptyDir.sizeLimit: {}` is negative: the API server refuses it",
                shown(size, 40)
            ),
            "",
        );
    }
}

/// A file mode within 0-0777 (octal). kubectl reads YAML 1.1, where a plain `0644` is octal
/// (420); this parser reads YAML 1.2, where it is 644: the written digits decide.
fn mode(report: &mut Report, at: &[Step], node: Option<&Node>, source: &crate::source::Source) {
    let Some(node) = node else {
        return;
    };
    let crate::yaml::Value::Int(parsed) = node.value else {
        return;
    };
    let written = source.text().get(node.span.clone()).unwrap_or_default();
    let n = match written.strip_prefix('0') {
        Some(octal) if !octal.is_empty() && octal.bytes().all(|b| (b'0'..=b'7').contains(&b)) => {
            i64::from_str_radix(octal, 8).unwrap_or(parsed)
        }
        _ => parsed,
    };
    if !(0..=0o777).contains(&n) {
        report.at(
            at.to_vec(),
            node,
            format!(
                "file mode `{}` is not within 0 and 0777 (octal): the API server refuses it",
                shown(node, 20)
            ),
            "write modes in octal with a leading 0 (`0644`): YAML reads `644` as decimal",
        );
    }
}

/// A mount names a volume the pod declares.
fn mounted_volume_declared(
    report: &mut Report,
    at: &impl Fn() -> Vec<Step>,
    mount: &Node,
    declared: &HashMap<&str, ()>,
) {
    if let Some(node) = mount.get("name")
        && let Some(name) = text(node)
        && !declared.contains_key(name)
    {
        let message = format!(
            "the mount names volume `{}`, which the pod does not declare in `volumes`",
            shown(node, 80)
        );
        report.at(
            key(&at(), "name"),
            node,
            message,
            "add the volume to `volumes`, or fix the name",
        );
    }
}

/// A mount's `mountPath`: present, not empty, not mounted twice in the container.
fn mount_path<'n>(
    report: &mut Report,
    at: &impl Fn() -> Vec<Step>,
    mount: &'n Node,
    paths: &mut HashSet<&'n str>,
) {
    let Some(node) = mount.get("mountPath") else {
        report.at(at(), mount, "a volume mount has no `mountPath`".into(), "");
        return;
    };
    let Some(p) = text(node) else {
        return;
    };
    if p.is_empty() {
        report.at(
            key(&at(), "mountPath"),
            node,
            "`mountPath` is empty".into(),
            "",
        );
    } else if !paths.insert(p) {
        report.at(
            key(&at(), "mountPath"),
            node,
            format!("`{}` is mounted twice in this container", shown(node, 80)),
            "mount each path once",
        );
    }
}

/// A mount's `subPath`: relative, never going up (`..`).
fn sub_path(report: &mut Report, at: &impl Fn() -> Vec<Step>, mount: &Node) {
    if let Some(node) = mount.get("subPath")
        && let Some(sub) = text(node)
        && (sub.starts_with('/') || sub.split('/').any(|part| part == ".."))
    {
        let message = format!(
            "`subPath: {}` must be a relative path that does not go up (`..`)",
            shown(node, 80)
        );
        report.at(key(&at(), "subPath"), node, message, "");
    }
}
