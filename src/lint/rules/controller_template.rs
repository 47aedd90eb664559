use crate::lint::api::{Report, Selector, labels_of, shown, text};
use crate::lint::{Document, Findings, Rule, steps};

crate::rule! {
    /// What it checks: the pod template of a Deployment, ReplicaSet, StatefulSet or
    /// DaemonSet, as the API server validates it: `spec.selector` is not empty and selects
    /// the template's own `labels`; the template's `restartPolicy`, when set, is `Always`.
    /// (A Job's selector is `job-spec`, TK413.)
    ///
    /// Why it matters: the API server refuses the object (`selector` does not match template
    /// `labels`; `Unsupported value: "Never"`). Renaming a label in the template and not in
    /// the selector, or turning a Job into a Deployment and keeping `restartPolicy: Never`,
    /// are the usual slips.
    ///
    /// Example: `selector: {matchLabels: {app: tao-serve}}` with template labels `{app:
    /// tao-server}`; `restartPolicy: OnFailure` in a Deployment.
    ///
    /// Fix: the same labels in the selector and the template; no `restartPolicy` (it
    /// defaults to `Always`).
    pub struct ControllerTemplate {
        code: "TK419",
        name: "controller-template",
        group: Api,
        severity: Error,
    }
}

impl Rule for ControllerTemplate {
    fn check(&self, doc: &Document, out: &mut Findings) {
        if !matches!(
            doc.kind,
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
        ) || !doc.api_version.starts_with("apps/")
        {
            return;
        }
        let Some(spec) = doc.root.get("spec") else {
            return;
        };
        let mut report = Report::new(doc, out);
        let template = spec.get("template");
        if let Some((k, policy)) = template
            .and_then(|t| t.get("spec"))
            .and_then(|s| s.entry("restartPolicy"))
            && text(policy).is_some_and(|p| p != "Always")
        {
            report.at(
                steps("spec.template.spec.restartPolicy"),
                k,
                format!(
                    "a {} restarts its pods' containers always: the API server refuses `restartPolicy: {}` (supported: `Always`)",
                    doc.kind,
                    shown(policy, 40)
                ),
                "remove `restartPolicy` (it defaults to `Always`); a run-to-completion workload is a Job",
            );
        }
        let Some((selector_key, selector_node)) = spec.entry("selector") else {
            return;
        };
        let Some(selector) = Selector::read(Some(selector_node)) else {
            return;
        };
        if selector.is_empty() {
            report.at(
                steps("spec.selector"),
                selector_key,
                format!(
                    "an empty selector is invalid for a {}: the API server refuses it",
                    doc.kind
                ),
                "select the template's labels (`matchLabels: {app: ...}`)",
            );
            return;
        }
        let metadata = template.and_then(|t| t.get("metadata"));
        if !selector.matches(&labels_of(metadata)) {
            let (path, at) = match metadata.and_then(|m| m.entry("labels")) {
                Some((k, _)) => (steps("spec.template.metadata.labels"), k),
                None => (
                    steps("spec.template"),
                    spec.entry("template").map_or(selector_key, |(k, _)| k),
                ),
            };
            report.at(
                path,
                at,
                "`selector` does not match template `labels`: the API server refuses it (the controller would own no pod it creates)".into(),
                "give the template every label the selector asks for",
            );
        }
    }
}
