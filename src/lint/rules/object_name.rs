use crate::kube::names::{
    is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, is_path_segment_name,
};
use crate::lint::api::{DNS1035_LABEL, DNS1123_LABEL, DNS1123_SUBDOMAIN, Report, key, shown, text};
use crate::lint::{Document, Findings, Rule, steps};

/// The longest CronJob name: its Jobs are named `<name>-<11 characters of schedule time>`.
const MAX_CRONJOB_NAME: usize = 52;

crate::rule! {
    /// What it checks: `metadata.name` and `metadata.generateName` of the built-in kinds, by
    /// the rule the API server applies to each: a DNS-1035 label for Services (a letter first:
    /// the name is a DNS label of the cluster); a DNS-1123 label for Namespaces; a path
    /// segment (no `/` or `%`, not `.` or `..`) for the RBAC kinds (Role, ClusterRole,
    /// RoleBinding, ClusterRoleBinding); a DNS-1123 subdomain for the other built-in kinds
    /// (Pod, Job, CronJob, ConfigMap, Secret, Deployment, StatefulSet, PVC, Ingress…), and at
    /// most 52 characters for a CronJob. A `generateName` is checked as the prefix it is (a
    /// trailing `-` is fine). An object with neither is reported too. The `hostname` and
    /// `subdomain` of a pod spec, DNS-1123 labels, are checked as well. Custom resources are
    /// not concerned.
    ///
    /// Why it matters: the API server refuses the object (`metadata.name: Invalid value`),
    /// so `kubectl apply` fails, often half-way through a file whose first objects were
    /// created. Names are often built by templating (`{{ .Release.Name }}-Worker_1`), and
    /// capitals or `_` slip in.
    ///
    /// Example: a Service named `1-api` or `api.v2`, a ConfigMap named `Train_Config`, a
    /// CronJob named with 60 characters.
    ///
    /// Fix: lowercase letters, digits and `-` (and `.` where a subdomain is allowed),
    /// starting with a letter for Services.
    pub struct ObjectName {
        code: "TK401",
        name: "object-name",
        group: Api,
        severity: Error,
    }
}

/// A name validator and how to say what it accepts.
type NameRule = (fn(&str) -> bool, &'static str);

/// The rule for names of `kind`; `None` for kinds this rule does not know.
fn rule_for(kind: &str) -> Option<NameRule> {
    Some(match kind {
        "Service" => (is_dns1035_label, DNS1035_LABEL),
        "Namespace" => (is_dns1123_label, DNS1123_LABEL),
        "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding" => (
            is_path_segment_name,
            "a path segment: not empty, not `.` or `..`, without `/` or `%`",
        ),
        "Pod"
        | "PodTemplate"
        | "ReplicationController"
        | "ConfigMap"
        | "Secret"
        | "ServiceAccount"
        | "PersistentVolumeClaim"
        | "PersistentVolume"
        | "Endpoints"
        | "LimitRange"
        | "ResourceQuota"
        | "Node"
        | "Job"
        | "CronJob"
        | "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "ReplicaSet"
        | "ControllerRevision"
        | "Ingress"
        | "IngressClass"
        | "NetworkPolicy"
        | "PodDisruptionBudget"
        | "PriorityClass"
        | "StorageClass"
        | "RuntimeClass"
        | "Lease"
        | "EndpointSlice"
        | "VolumeAttachment"
        | "CSIDriver" => (is_dns1123_subdomain, DNS1123_SUBDOMAIN),
        _ => return None,
    })
}

impl Rule for ObjectName {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some((valid, expected)) = rule_for(doc.kind) else {
            return;
        };
        let mut report = Report::new(doc, out);
        let metadata = doc.root.entry("metadata");
        let name = metadata.and_then(|(_, m)| m.get("name"));
        let generate = metadata.and_then(|(_, m)| m.get("generateName"));
        if let Some(node) = name
            && let Some(n) = text(node)
        {
            if !valid(n) {
                let message = format!("{} name `{}` must be {expected}", doc.kind, shown(node, 80));
                report.at(
                    steps("metadata.name"),
                    node,
                    message,
                    "rename it: lowercase letters, digits and `-`",
                );
            } else if doc.kind == "CronJob" && n.len() > MAX_CRONJOB_NAME {
                let message = format!(
                    "CronJob name has {} characters, more than {MAX_CRONJOB_NAME}: its Jobs are named `<name>-<11 characters>`, and a Job name is at most 63",
                    n.len()
                );
                report.at(steps("metadata.name"), node, message, "shorten the name");
            }
        }
        if let Some(node) = generate
            && let Some(prefix) = text(node)
        {
            // The API server checks the prefix with its trailing `-` read as a letter.
            let masked = match prefix.strip_suffix('-') {
                Some(p) => format!("{p}a"),
                None => prefix.to_string(),
            };
            if !valid(&masked) {
                let message = format!(
                    "{} generateName `{}` must start {expected}",
                    doc.kind,
                    shown(node, 80)
                );
                report.at(
                    steps("metadata.generateName"),
                    node,
                    message,
                    "lowercase letters, digits and `-`, e.g. `convert-`",
                );
            }
        }
        if name.is_none() && generate.is_none() {
            let (path, node) = match metadata {
                Some((k, _)) => (steps("metadata"), k),
                None => (
                    steps("kind"),
                    doc.root.entry("kind").map_or(doc.root, |(k, _)| k),
                ),
            };
            report.at(
                path,
                node,
                format!(
                    "the {} has no `metadata.name` (nor `generateName`)",
                    doc.kind
                ),
                "name it",
            );
        }
        if let Some((pod, spec)) = doc.pod_spec() {
            for field in ["hostname", "subdomain"] {
                if let Some(node) = spec.get(field)
                    && let Some(v) = text(node)
                    && !v.is_empty()
                    && !is_dns1123_label(v)
                {
                    let message = format!(
                        "pod `{field}` `{}` must be {DNS1123_LABEL}",
                        shown(node, 80)
                    );
                    report.at(key(pod, field), node, message, "");
                }
            }
        }
    }
}
