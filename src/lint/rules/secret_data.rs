use crate::lint::{Document, Finding, Findings, Rule};
use crate::secrets;
use crate::yaml::{Step, Value};

crate::rule! {
    /// What it checks: a Secret whose `data` or `stringData` holds values in the manifest.
    ///
    /// Why it matters: base64 is an encoding, not encryption; a Secret committed with its
    /// values leaks them to everyone who can read the repository or the CI log.
    ///
    /// Example: `kind: Secret` with `stringData: {AWS_SECRET_ACCESS_KEY: …}`.
    ///
    /// Fix: create the Secret from the environment at deploy time (the tao-k8s driver script
    /// does: `kubectl create secret … --from-env-file`), or use an external secret store; commit
    /// only the reference to it. Empty values, obvious placeholders (also base64-encoded in
    /// `data`) and SOPS-encrypted values (`ENC[…]`) are not findings.
    pub struct SecretData {
        code: "TK102",
        name: "secret-data",
        group: Redaction,
        severity: Error,
    }
}

impl Rule for SecretData {
    fn check(&self, doc: &Document, out: &mut Findings) {
        if doc.kind != "Secret" {
            return;
        }
        for field in ["data", "stringData"] {
            let Some(Value::Map(entries)) = doc.root.get(field).map(|n| &n.value) else {
                continue;
            };
            for (key, value) in entries {
                let Value::Str(text) = &value.value else {
                    continue;
                };
                if secrets::is_safe_secret_value(text, field == "data") {
                    continue;
                }
                let name = crate::yaml::key_text(key);
                out.push(Finding {
                    message: format!("{} holds `{name}` in the manifest (`{}`)", doc.label(), secrets::mask(text)),
                    help: Some("create the Secret at deploy time from the environment instead of committing its values".into()),
                    path: vec![Step::Key(field.into()), Step::Key(name)],
                    span: value.span.clone(),
                });
            }
        }
    }
}
