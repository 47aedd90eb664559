use crate::kube::names::{is_label_value, is_qualified_name};
use crate::lint::api::{LABEL_KEY, LABEL_VALUE, Report, entries, key, metadatas, shown};
use crate::lint::{Document, Findings, Rule, steps};
use crate::yaml::{Node, Step, Value, key_text};

crate::rule! {
    /// What it checks: label keys and values wherever the API server validates them as
    /// labels: `metadata.labels` of an object and of its templates, the `matchLabels` of a
    /// controller's `spec.selector`, a Service's `spec.selector`, and a pod spec's
    /// `nodeSelector`. A key is a qualified name (an optional DNS-1123 subdomain prefix and
    /// `/`, then at most 63 letters, digits, `-`, `_` and `.`, starting and ending with a
    /// letter or digit); a value is empty or at most 63 such characters, starting and ending
    /// with a letter or digit. A value that is not a string (`true`, `3`) is left to the
    /// schema check.
    ///
    /// Why it matters: the API server refuses the object, so `kubectl apply` fails. Values
    /// are where it happens: a version with a `+` (`1.2.0+cu121`), a branch with a `/`, a
    /// description with spaces, a name longer than 63 characters.
    ///
    /// Example: `labels: {version: 1.2.0+cu121}`, `nodeSelector: {"gpu type": a100}`.
    ///
    /// Fix: keep labels to short identifiers (`version: 1.2.0-cu121`); put free text in an
    /// annotation.
    pub struct LabelSyntax {
        code: "TK402",
        name: "label-syntax",
        group: Api,
        severity: Error,
    }
}

impl Rule for LabelSyntax {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let mut maps: Vec<(Vec<Step>, &Node)> = Vec::new();
        let mut add = |path: Vec<Step>| {
            if let Some((_, node)) = doc.root.lookup(&path) {
                maps.push((path, node));
            }
        };
        for (path, _) in metadatas(doc) {
            add(key(&path, "labels"));
        }
        if doc.kind == "Service" {
            add(steps("spec.selector"));
        } else {
            add(steps("spec.selector.matchLabels"));
        }
        if doc.kind == "CronJob" {
            add(steps("spec.jobTemplate.spec.selector.matchLabels"));
        }
        if let Some(pod) = doc.pod_spec_path() {
            add(key(pod, "nodeSelector"));
        }
        let mut report = Report::new(doc, out);
        for (path, map) in maps {
            for (k, v) in entries(map) {
                let name = key_text(k);
                let at = || key(&path, &name);
                if !is_qualified_name(&name) {
                    report.at(
                        at(),
                        k,
                        format!("label key `{}` must be {LABEL_KEY}", shown(k, 80)),
                        "e.g. `app.kubernetes.io/version` or `team`",
                    );
                }
                if let Value::Str(value) = &v.value
                    && !is_label_value(value)
                {
                    report.at(
                        at(),
                        v,
                        format!("label value `{}` must be {LABEL_VALUE}", shown(v, 80)),
                        "put free text in an annotation; replace `+`, `/` and spaces with `-`",
                    );
                }
            }
        }
    }
}
