use crate::lint::{Document, Finding, Findings, Rule};
use crate::yaml::Step;

crate::rule! {
    /// What it checks: an unquoted `yes`, `no`, `on`, `off`, `y` or `n` (lowercase,
    /// capitalised or uppercase) where Kubernetes wants a string: container env values,
    /// `command` and `args` items, ConfigMap `data` values, label and annotation values, and
    /// the label values of `nodeSelector`, `matchLabels` and a Service's `selector`.
    ///
    /// Why it matters: YAML 1.2 (and this linter) reads them as strings, but YAML 1.1 tools
    /// read them as booleans: kubectl (go-yaml) turns `value: no` into `false` and the API
    /// server refuses the object (`cannot unmarshal bool into Go struct field ... of type
    /// string`); tools that convert and re-emit the manifest, such as PyYAML-based generators,
    /// quietly write `true` or `false` instead of what you meant.
    ///
    /// Example: `env: [{name: NCCL_IB_DISABLE_GDR, value: no}]`, or a label `gpu: yes`.
    ///
    /// Fix: quote the value: `value: "no"`.
    pub struct Yaml11Boolean {
        code: "TK313",
        name: "yaml11-boolean",
        group: Gpu,
        severity: Warning,
    }
}

impl Rule for Yaml11Boolean {
    fn check(&self, doc: &Document, out: &mut Findings) {
        if doc.yaml11_booleans.is_empty() {
            return;
        }
        let mut reported = std::collections::HashSet::new();
        crate::yaml::visit_strings(doc.root, |path, node, value| {
            // The spans are in stream order, one per scalar.
            let listed = doc
                .yaml11_booleans
                .binary_search_by_key(&node.span.start, |s| s.start)
                .is_ok_and(|i| doc.yaml11_booleans[i] == node.span);
            if !listed {
                return;
            }
            let path = crate::yaml::owned(path);
            let Some(what) = wants_string(doc.kind, &path) else {
                return;
            };
            // An alias copies its anchor's node, span included: report the scalar once.
            if !reported.insert(node.span.start) {
                return;
            }
            out.push(Finding {
                message: format!(
                    "{}: unquoted `{value}` as {what}: kubectl and other YAML 1.1 tools read it as the boolean {}",
                    doc.label(),
                    matches!(value.to_ascii_lowercase().as_str(), "y" | "yes" | "on"),
                ),
                help: Some(format!("quote it: `\"{value}\"`")),
                path,
                span: node.span.clone(),
            });
        });
    }
}

/// What a string at `path` is, when Kubernetes wants a string there.
fn wants_string(kind: &str, path: &[Step]) -> Option<&'static str> {
    let key = |i: usize| match path.len().checked_sub(i).map(|j| &path[j]) {
        Some(Step::Key(k)) => Some(k.as_ref()),
        _ => None,
    };
    let index = |i: usize| {
        matches!(
            path.len().checked_sub(i).map(|j| &path[j]),
            Some(Step::Index(_))
        )
    };
    let container = |i: usize| {
        index(i)
            && matches!(
                key(i + 1),
                Some("containers" | "initContainers" | "ephemeralContainers")
            )
    };
    if key(1) == Some("value") && index(2) && key(3) == Some("env") && container(4) {
        Some("an env value")
    } else if index(1) && matches!(key(2), Some("command" | "args")) && container(3) {
        Some("a command or args item")
    } else if kind == "ConfigMap" && path.len() == 2 && key(2) == Some("data") {
        Some("a ConfigMap data value")
    } else if key(2) == Some("labels") && key(3) == Some("metadata") {
        Some("a label value")
    } else if key(2) == Some("annotations") && key(3) == Some("metadata") {
        Some("an annotation value")
    } else if matches!(key(2), Some("nodeSelector" | "matchLabels"))
        || (kind == "Service"
            && path.len() == 3
            && key(2) == Some("selector")
            && key(3) == Some("spec"))
    {
        Some("a label value in a selector")
    } else {
        None
    }
}
