use super::{
    Checker, NAME, RESERVED_MOUNT_PATHS, RESERVED_VOLUMES, STORAGE, is_under, path, path_problem,
    with,
};
use crate::kube::names;
use crate::request::{ActionRequest, Mount};
use crate::yaml::Step;

request_check! {
    /// What it checks: each of `storage.mounts` has a volume name Kubernetes accepts (a
    /// DNS-1123 label, not one tao-k8s uses, not used twice), exactly one source (a valid
    /// `persistentVolumeClaim` name, or `nfs` with a server and an absolute export path), a
    /// clean absolute `mountPath` clear of `/etc/tao-k8s` and `/dev/shm`, aliases that are
    /// absolute paths or logical `scheme://name` paths (not S3 URIs), and a relative
    /// `subPath` without `..`.
    ///
    /// Why it matters: the API server refuses a pod with an invalid or repeated volume name or
    /// a relative mount path, and only when the driver submits it; a mount over the config
    /// spec's or `/dev/shm`'s path hides what tao-k8s mounts there; a `subPath` with `..`
    /// reaches outside the volume.
    ///
    /// Example: `mounts: [{name: data, mountPath: data, persistentVolumeClaim: tao-data, nfs:
    /// {...}}]`.
    ///
    /// Fix: give each mount one source and a clean absolute path outside the reserved ones;
    /// stage S3 data with `storage.s3.inputs`.
    pub(super) const CHECK = {
        name: "storage",
        codes: [STORAGE, NAME],
        run: check,
    }
}

fn check(c: &mut Checker, req: &ActionRequest) {
    let mut seen_names: Vec<&str> = Vec::new();
    for (i, m) in req.spec.storage.mounts.iter().enumerate() {
        let at = with(path("spec.storage.mounts"), i);
        mount_name(c, m, &at, &seen_names);
        seen_names.push(&m.name);
        mount_source(c, m, &at);
        mount_paths(c, m, &at);
    }
}

/// A volume name the API server accepts, of the request's own, used once.
fn mount_name(c: &mut Checker, m: &Mount, at: &[Step], seen_names: &[&str]) {
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
            &with(at.to_vec(), "name"),
            message,
            label,
            help.map(String::from),
        );
    }
}

/// Exactly one source, itself valid.
fn mount_source(c: &mut Checker, m: &Mount, at: &[Step]) {
    match (&m.persistent_volume_claim, &m.nfs) {
        (None, None) => c.error(
            STORAGE,
            at,
            format!("mount `{}` has no source", m.name),
            "needs `persistentVolumeClaim` or `nfs`",
            None,
        ),
        (Some(_), Some(_)) => c.error(
            STORAGE,
            at,
            format!("mount `{}` has two sources", m.name),
            "`persistentVolumeClaim` and `nfs`",
            Some("split it into two mounts".into()),
        ),
        (Some(claim), None) if !names::is_dns1123_subdomain(claim) => c.error(
            NAME,
            &with(at.to_vec(), "persistentVolumeClaim"),
            format!("`{claim}` is not a valid claim name"),
            "not a DNS-1123 subdomain",
            None,
        ),
        (None, Some(nfs)) if !nfs.path.starts_with('/') || nfs.server.is_empty() => c.error(
            STORAGE,
            &with(at.to_vec(), "nfs"),
            "an NFS source needs a server and an absolute export path".into(),
            "incomplete NFS source",
            None,
        ),
        _ => {}
    }
}

/// Where it lands in the container, its aliases and its `subPath`.
fn mount_paths(c: &mut Checker, m: &Mount, at: &[Step]) {
    container_path(
        c,
        &with(at.to_vec(), "mountPath"),
        "mountPath",
        &m.mount_path,
    );
    for (j, alias) in m.aliases.iter().enumerate() {
        if let Some(problem) = alias_problem(alias) {
            c.error(
                STORAGE,
                &with(with(at.to_vec(), "aliases"), j),
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
            &with(at.to_vec(), "subPath"),
            format!("subPath `{sub}` must be a relative path without `..`"),
            "not a relative path",
            None,
        );
    }
}

/// A path in the container (a mount's, an S3 input's): clean and absolute, and clear of the
/// paths tao-k8s mounts itself.
pub(super) fn container_path(c: &mut Checker, at: &[Step], field: &str, p: &str) {
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

/// Why an alias is not a producer-side path, if it is not.
fn alias_problem(alias: &str) -> Option<String> {
    match crate::request::scheme(alias) {
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

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports};
    use serde_json::{Value, json};

    fn mounts(mounts: Value) -> Vec<(&'static str, &'static str)> {
        reports(&super::CHECK, |r| r["spec"]["storage"]["mounts"] = mounts)
    }

    #[test]
    fn claims_and_nfs_at_clean_paths_are_quiet() {
        let found = mounts(json!([
            {"name": "results", "persistentVolumeClaim": "tao-results", "mountPath": "/results",
             "aliases": ["/workspace/results", "results://run"], "subPath": "runs/1"},
            {"name": "data", "nfs": {"server": "nfs.lab", "path": "/export/data"}, "mountPath": "/data"}
        ]));
        assert_eq!(found, NONE);
    }

    #[test]
    fn bad_reserved_and_repeated_names_are_refused_at_the_name() {
        let found = mounts(json!([
            {"name": "Data", "persistentVolumeClaim": "a", "mountPath": "/a"},
            {"name": "tao-k8s-shm", "persistentVolumeClaim": "b", "mountPath": "/b"},
            {"name": "c", "persistentVolumeClaim": "c", "mountPath": "/c"},
            {"name": "c", "persistentVolumeClaim": "d", "mountPath": "/d"}
        ]));
        assert_eq!(
            found,
            [
                ("TK017", "spec.storage.mounts[0].name"),
                ("TK017", "spec.storage.mounts[1].name"),
                ("TK017", "spec.storage.mounts[3].name"),
            ]
        );
    }

    #[test]
    fn a_mount_has_exactly_one_valid_source() {
        let found = mounts(json!([
            {"name": "a", "mountPath": "/a"},
            {"name": "b", "persistentVolumeClaim": "b", "nfs": {"server": "s", "path": "/x"}, "mountPath": "/b"},
            {"name": "c", "persistentVolumeClaim": "Not_A_Claim", "mountPath": "/c"},
            {"name": "d", "nfs": {"server": "", "path": "x"}, "mountPath": "/d"}
        ]));
        assert_eq!(
            found,
            [
                ("TK018", "spec.storage.mounts[0]"),
                ("TK018", "spec.storage.mounts[1]"),
                ("TK017", "spec.storage.mounts[2].persistentVolumeClaim"),
                ("TK018", "spec.storage.mounts[3].nfs"),
            ]
        );
    }

    #[test]
    fn paths_aliases_and_sub_paths_must_be_clean() {
        let found = mounts(json!([
            {"name": "a", "persistentVolumeClaim": "a", "mountPath": "a/b"},
            {"name": "b", "persistentVolumeClaim": "b", "mountPath": "/dev/shm/x"},
            {"name": "c", "persistentVolumeClaim": "c", "mountPath": "/c",
             "aliases": ["s3://bucket/x", "results://", "/x/../y"], "subPath": "../up"}
        ]));
        assert_eq!(
            found,
            [
                ("TK018", "spec.storage.mounts[0].mountPath"),
                ("TK018", "spec.storage.mounts[1].mountPath"),
                ("TK018", "spec.storage.mounts[2].aliases[0]"),
                ("TK018", "spec.storage.mounts[2].aliases[1]"),
                ("TK018", "spec.storage.mounts[2].aliases[2]"),
                ("TK018", "spec.storage.mounts[2].subPath"),
            ]
        );
    }
}
