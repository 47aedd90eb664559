use crate::lint::{Document, Finding, Findings, Rule};
use crate::schema;
use crate::yaml::Step;

crate::rule! {
    /// What it checks: objects of the kinds tao-k8s knows (Job, Pod, Service, ConfigMap,
    /// Secret, Deployment, StatefulSet) against strict schemas of Kubernetes 1.28: unknown
    /// fields, wrong types, missing required fields.
    ///
    /// Why it matters: an unknown field is dropped silently by `kubectl apply` without
    /// `--validate=strict` (a typo like `restartPolicyy` simply does nothing), and a wrong type
    /// fails only at apply time.
    ///
    /// Example: `spec.template.spec.containers[0].resource` (for `resources`).
    ///
    /// Fix: correct the field; the message names the JSON path, values are masked.
    pub struct StrictSchema {
        code: "TK201",
        name: "strict-schema",
        group: Schema,
        severity: Error,
    }
}

impl Rule for StrictSchema {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some(validator) = schema::validator_for(doc.api_version, doc.kind) else {
            return;
        };
        for e in validator.iter_errors(doc.root) {
            let mut path: Vec<Step> = e
                .instance_path()
                .iter()
                .map(|s| match s {
                    jsonschema::paths::LocationSegment::Property(p) => Step::Key(p.to_string()),
                    jsonschema::paths::LocationSegment::Index(i) => Step::Index(i),
                })
                .collect();
            let (depth, key, mut node) = doc.root.deepest(&path);
            path.truncate(depth);
            if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } =
                e.kind()
                && let Some((k, _)) = unexpected.first().and_then(|u| node.entry(u))
            {
                path.push(Step::Key(unexpected[0].clone()));
                node = k;
            } else if let Some(k) = key.filter(|_| {
                matches!(
                    node.value,
                    crate::yaml::Value::Map(_) | crate::yaml::Value::Seq(_)
                )
            }) {
                node = k;
            }
            out.push(Finding {
                message: format!(
                    "{} is not a valid {}: {}",
                    doc.label(),
                    doc.kind,
                    e.masked()
                ),
                help: None,
                path,
                span: node.span.clone(),
            });
        }
    }
}
