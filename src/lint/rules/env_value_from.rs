use crate::lint::api::{Report, index, items, key, shown, text};
use crate::lint::{Document, Findings, Rule};
use crate::yaml::Value;

crate::rule! {
    /// What it checks: the `valueFrom` of every `env` entry of every container, as the API
    /// server's `validateEnvVarValueFrom` checks it: not together with a non-empty `value`;
    /// exactly one source (`fieldRef`, `resourceFieldRef`, `configMapKeyRef`,
    /// `secretKeyRef`, and `fileKeyRef` where the version has it); a `resourceFieldRef` names
    /// a resource the downward API exposes (`limits.`/`requests.` of `cpu`, `memory`,
    /// `ephemeral-storage` or `hugepages-<size>`); a `fieldRef` names a field the downward API
    /// gives env (`validEnvDownwardAPIFieldPathExpressions`, or one label or annotation); every
    /// `envFrom` entry names exactly one of `configMapRef` and `secretRef`.
    ///
    /// Why it matters: the API server refuses the pod, or the Job whose template holds it.
    /// Asking the downward API for the GPU count (`limits.nvidia.com/gpu`) is the usual slip:
    /// extended resources are not exposed.
    ///
    /// Example: `{name: NUM_GPUS, valueFrom: {resourceFieldRef: {resource:
    /// limits.nvidia.com/gpu}}}`; `{name: POD_IP, value: "127.0.0.1", valueFrom: {fieldRef:
    /// ...}}`.
    ///
    /// Fix: one source per variable; pass the GPU count as a plain `value` (the number the
    /// limit says) or read it in the container (`nvidia-smi -L`).
    pub struct EnvValueFrom {
        code: "TK417",
        name: "env-value-from",
        group: Api,
        severity: Error,
    }
}

/// The sources a `valueFrom` may name.
const SOURCES: &[&str] = &[
    "fieldRef",
    "resourceFieldRef",
    "configMapKeyRef",
    "secretKeyRef",
    "fileKeyRef",
];

/// The fields of the pod the downward API gives env (`validEnvDownwardAPIFieldPathExpressions`),
/// besides one label or annotation (`metadata.labels['KEY']`, `metadata.annotations['KEY']`).
const FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// Whether env may read `path` from the downward API.
fn is_env_field_path(path: &str) -> bool {
    if FIELD_PATHS.contains(&path) {
        return true;
    }
    let subscript = path
        .strip_prefix("metadata.labels['")
        .or_else(|| path.strip_prefix("metadata.annotations['"));
    subscript
        .and_then(|rest| rest.strip_suffix("']"))
        .is_some_and(|key| !key.is_empty() && crate::kube::names::is_qualified_name(key))
}

/// Resources the downward API exposes to env (`validateContainerResourceFieldSelector`).
fn is_exposed(resource: &str) -> bool {
    let Some(name) = resource
        .strip_prefix("limits.")
        .or_else(|| resource.strip_prefix("requests."))
    else {
        return false;
    };
    matches!(name, "cpu" | "memory" | "ephemeral-storage")
        || name
            .strip_prefix("hugepages-")
            .is_some_and(|s| !s.is_empty())
}

impl Rule for EnvValueFrom {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let mut report = Report::new(doc, out);
        for (path, container) in doc.containers() {
            for from in container.get("envFrom").map(items).unwrap_or_default() {
                let named = ["configMapRef", "secretRef"]
                    .iter()
                    .filter(|k| from.get(k).is_some_and(|v| !matches!(v.value, Value::Null)))
                    .count();
                // The server names the list, not the entry (`ValidateEnvFrom`).
                let at = key(&path.get(), "envFrom");
                match named {
                    0 => report.at(
                        at,
                        from,
                        "an `envFrom` entry names no source: the API server refuses it (must specify one of `configMapRef` or `secretRef`)".into(),
                        "name the ConfigMap or Secret to read, or remove the entry",
                    ),
                    1 => {}
                    _ => report.at(
                        at,
                        from,
                        "an `envFrom` entry names both `configMapRef` and `secretRef`: the API server refuses it (may not have more than one field specified at a time)".into(),
                        "one source per entry: split it in two",
                    ),
                }
            }
            let Some(env) = container.get("env") else {
                continue;
            };
            for (i, var) in items(env).iter().enumerate() {
                // Findings about the whole source point at its key (a block mapping starts a
                // line below).
                let Some((from_key, from)) = var.entry("valueFrom") else {
                    continue;
                };
                let at = key(&index(&key(&path.get(), "env"), i), "valueFrom");
                if var
                    .get("value")
                    .and_then(text)
                    .is_some_and(|v| !v.is_empty())
                {
                    report.at(
                        at.clone(),
                        from_key,
                        "`valueFrom` together with a non-empty `value`: the API server refuses it (may not be specified when `value` is not empty)".into(),
                        "keep one of them",
                    );
                }
                let Value::Map(entries) = &from.value else {
                    continue;
                };
                let sources: Vec<&str> = entries
                    .iter()
                    .filter_map(|(k, v)| text(k).filter(|_| !matches!(v.value, Value::Null)))
                    .filter(|k| SOURCES.contains(k))
                    .collect();
                match sources.len() {
                    0 => report.at(
                        at.clone(),
                        from_key,
                        "`valueFrom` names no source: the API server refuses it (must specify one of `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`)".into(),
                        "name where the value comes from, or use `value`",
                    ),
                    1 => {}
                    _ => report.at(
                        at.clone(),
                        from_key,
                        format!(
                            "`valueFrom` names {} sources ({}): the API server refuses it (may not have more than one field specified at a time)",
                            sources.len(),
                            sources.join(", ")
                        ),
                        "keep one source per variable",
                    ),
                }
                if let Some(node) = from.get("fieldRef").and_then(|r| r.get("fieldPath"))
                    && let Some(field) = text(node)
                    && !is_env_field_path(field)
                {
                    report.at(
                        key(&key(&at, "fieldRef"), "fieldPath"),
                        node,
                        format!(
                            "`fieldRef.fieldPath: {}` is not a field the downward API gives env: the API server refuses it (supported: {}, or one label or annotation as `metadata.labels['KEY']`)",
                            shown(node, 60),
                            FIELD_PATHS.join(", ")
                        ),
                        "the pod's phase and other status fields are not exposed: read them with the API, or not at all",
                    );
                }
                if let Some(node) = from.get("resourceFieldRef").and_then(|r| r.get("resource"))
                    && let Some(resource) = text(node)
                    && !is_exposed(resource)
                {
                    report.at(
                        key(&key(&at, "resourceFieldRef"), "resource"),
                        node,
                        format!(
                            "`resourceFieldRef.resource: {}` is not exposed by the downward API: the API server refuses it (supported: `limits.` or `requests.` of `cpu`, `memory`, `ephemeral-storage`, `hugepages-<size>`)",
                            shown(node, 60)
                        ),
                        "extended resources such as `nvidia.com/gpu` are not exposed: pass the count as a `value`",
                    );
                }
            }
        }
    }
}
