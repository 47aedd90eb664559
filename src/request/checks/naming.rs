use super::{Checker, NAME, path, with};
use crate::kube::names;
use crate::request::{ActionRequest, Metadata};

request_check! {
    /// What it checks: the names, labels and namespaces the request gives Kubernetes:
    /// `metadata.name` is not empty and fits the Job's annotations; `metadata.namespace` is a
    /// DNS-1123 label; `recordId`, `action`, `networkArch` and the Kueue `queueName` are label
    /// values; the keys and values of `metadata.labels` and `scheduling.nodeSelector` are valid
    /// (and the labels not under a prefix tao-k8s sets); `imagePullSecrets`,
    /// `credentials.secretName` and `priorityClassName` are object names.
    ///
    /// Why it matters: each of them lands on the rendered objects, and the API server refuses
    /// an object with an invalid name or label, only when the driver submits it, after the
    /// earlier objects of the bundle were created; a reserved label would break how tao-k8s
    /// and Kueue find the job's objects.
    ///
    /// Example: `labels: {team: "vision lab"}`, `namespace: Vision`, or
    /// `labels: {app.kubernetes.io/name: x}`.
    ///
    /// Fix: at most 63 letters, digits, `-`, `_` and `.` for label values, lowercase DNS names
    /// for namespaces and object names, and label keys outside the reserved prefixes.
    pub(super) const CHECK = {
        name: "naming",
        codes: [NAME],
        run: check,
    }
}

/// Labels the renderer sets; a request may not set them itself.
const RESERVED_LABEL_PREFIXES: &[&str] = &[
    "app.kubernetes.io/",
    "tao-k8s.io/",
    "batch.kubernetes.io/",
    "kueue.x-k8s.io/",
];

fn check(c: &mut Checker, req: &ActionRequest) {
    metadata(c, &req.metadata);
    label_values(c, req);
    label_maps(c, req);
    object_names(c, req);
}

/// The request's name and namespace.
fn metadata(c: &mut Checker, md: &Metadata) {
    use crate::kube::names::MAX_ANNOTATIONS_BYTES;
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
    let annotation = crate::request::REQUEST_NAME_ANNOTATION;
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
}

/// Fields that become label values.
fn label_values(c: &mut Checker, req: &ActionRequest) {
    let md = &req.metadata;
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
}

/// Label maps: keys and values.
fn label_maps(c: &mut Checker, req: &ActionRequest) {
    let md = &req.metadata;
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
}

/// Fields that name objects.
fn object_names(c: &mut Checker, req: &ActionRequest) {
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

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports};
    use serde_json::json;

    #[test]
    fn valid_names_and_labels_are_quiet() {
        let found = reports(&super::CHECK, |r| {
            r["metadata"]["namespace"] = json!("vision");
            r["metadata"]["labels"] = json!({"team": "vision", "example.com/cost-center": "4711"});
            r["spec"]["imagePullSecrets"] = json!(["ngc-pull"]);
        });
        assert_eq!(found, NONE);
    }

    #[test]
    fn empty_and_overlong_names_and_bad_namespaces_are_refused() {
        let empty = reports(&super::CHECK, |r| r["metadata"]["name"] = json!(" "));
        assert_eq!(empty, [("TK017", "metadata.name")]);
        let long = "n".repeat(crate::kube::names::MAX_ANNOTATIONS_BYTES);
        let long = reports(&super::CHECK, |r| r["metadata"]["name"] = json!(long));
        assert_eq!(long, [("TK017", "metadata.name")]);
        let ns = reports(&super::CHECK, |r| {
            r["metadata"]["namespace"] = json!("Vision")
        });
        assert_eq!(ns, [("TK017", "metadata.namespace")]);
    }

    #[test]
    fn label_values_keys_and_reserved_labels_are_refused_where_they_are() {
        let found = reports(&super::CHECK, |r| {
            r["spec"]["action"] = json!("train now");
            r["metadata"]["labels"] =
                json!({"bad key!": "x", "app.kubernetes.io/name": "y", "team": "vision lab"});
            r["spec"]["scheduling"] = json!({"nodeSelector": {"gpu": "-a-"}});
        });
        assert_eq!(
            found,
            [
                ("TK017", "spec.action"),
                ("TK017", "metadata.labels[\"app.kubernetes.io/name\"]"),
                ("TK017", "metadata.labels[\"bad key!\"]"),
                ("TK017", "metadata.labels.team"),
                ("TK017", "spec.scheduling.nodeSelector.gpu"),
            ]
        );
    }

    #[test]
    fn object_names_are_refused_at_the_name() {
        let found = reports(&super::CHECK, |r| {
            r["spec"]["imagePullSecrets"] = json!(["ok", "Not_OK"]);
            r["spec"]["credentials"] = json!({"secretName": "-x"});
        });
        assert_eq!(
            found,
            [
                ("TK017", "spec.imagePullSecrets[1]"),
                ("TK017", "spec.credentials.secretName"),
            ]
        );
    }
}
