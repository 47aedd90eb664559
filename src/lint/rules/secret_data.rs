use crate::lint::{Document, Finding, Findings, Rule};
use crate::secrets;
use crate::yaml::{Step, Value};

crate::rule! {
    /// What it checks: a Secret whose `data` or `stringData` holds a value in the manifest at
    /// all, whatever the value; only when selected by code or name (`--select secret-data`),
    /// not by default nor with `--select redaction`. It is a policy, for projects where
    /// every Secret is created at deploy time or by an external secret store; the credentials
    /// themselves are found in Secrets as anywhere else by `inline-credential` (TK101), which
    /// judges each key's decoded value by its content, so a CA certificate, a feature flag or
    /// a repository URL is not reported there. A value TK101 reports is not reported again.
    ///
    /// Why it matters: base64 is an encoding, not encryption; a Secret committed with its
    /// values shows them to everyone who can read the repository or the CI log, and a value
    /// that is not a credential today may become one.
    ///
    /// Example: `kind: Secret` with `stringData: {ca.crt: …}` under `--select secret-data`.
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
                let base64 = field == "data";
                if secrets::is_safe_secret_value(text, base64) {
                    continue;
                }
                let name = crate::yaml::key_text(key);
                // A credential is `inline-credential`'s report.
                let decoded = base64.then(|| secrets::decode_base64(text)).flatten();
                if !secrets::scan_secret_entry(&name, decoded.as_deref().unwrap_or(text)).is_empty()
                {
                    continue;
                }
                out.push(Finding {
                    message: format!("{} holds `{name}` in the manifest (`{}`)", doc.label(), secrets::mask(text)),
                    help: Some("create the Secret at deploy time from the environment instead of committing its values".into()),
                    path: vec![Step::Key(field.to_string().into()), Step::Key(name.into_owned().into())],
                    span: value.span.clone(),
                });
            }
        }
    }
}
