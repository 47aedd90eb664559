use crate::lint::{Document, Finding, Findings, Rule, walk_strings};
use crate::secrets;
use crate::yaml::{Step, Value};

crate::rule! {
    /// What it checks: every string of an object (env values, command and args, `sh -c`
    /// scripts, labels and annotations, ConfigMap data, URLs) for a credential: AWS keys, NGC
    /// API keys, Hugging Face, GitHub and Slack tokens, PEM private keys, JWTs, passwords in
    /// URLs, docker config auths, and high-entropy values assigned to names that say KEY,
    /// TOKEN, SECRET, PASSWORD or CREDENTIAL.
    ///
    /// Why it matters: a manifest is committed, reviewed, printed in CI logs and stored by the
    /// API server in plain text; a credential in it is a leaked credential.
    ///
    /// Example: `env: [{name: HF_TOKEN, value: hf_…}]`.
    ///
    /// Fix: keep the value in a Secret and reference it (`valueFrom.secretKeyRef` or
    /// `envFrom.secretRef`). References (`$(VAR)`, `${VAR}`), digests, UUIDs and obvious
    /// placeholders (`changeme`, `<your-key>`, values ending in EXAMPLE) are not findings.
    pub struct InlineCredential {
        code: "TK101",
        name: "inline-credential",
        group: Redaction,
        severity: Error,
    }
}

impl Rule for InlineCredential {
    fn check(&self, doc: &Document, out: &mut Findings) {
        walk_strings(doc.root, &mut Vec::new(), &mut |path, node, value| {
            // Every credential shape is 12 characters or more, but a password in a URL (`@`).
            if value.len() < 12 && !value.contains('@') {
                return;
            }
            // Secret data is reported whole by `secret-data`.
            if doc.kind == "Secret"
                && matches!(path.first(), Some(Step::Key(k)) if k == "data" || k == "stringData")
            {
                return;
            }
            let binary = doc.kind == "ConfigMap"
                && matches!(path.first(), Some(Step::Key(k)) if k == "binaryData");
            let decoded = binary.then(|| decode_base64(value)).flatten();
            let text = decoded.as_deref().unwrap_or(value);
            let findings = secrets::scan_assignment(name_of(doc, path), text);
            if let Some(f) = findings.first() {
                out.push(Finding {
                    message: format!("{} inline (`{}`)", f.what, secrets::mask(&text[f.range.clone()])),
                    help: Some("move it to a Secret and reference it with `valueFrom.secretKeyRef` or `envFrom.secretRef`".into()),
                    path: path.to_vec(),
                    span: node.span.clone(),
                });
            }
        });
    }
}

/// The name a value is assigned to: an env entry's `name`, else the key that holds it.
fn name_of<'a>(doc: &'a Document, path: &'a [Step]) -> &'a str {
    let Some((Step::Key(last), parent)) = path.split_last() else {
        return "";
    };
    if last == "value"
        && let Some(Value::Str(name)) = doc.at(parent).and_then(|p| p.get("name")).map(|n| &n.value)
    {
        return name;
    }
    last
}

/// Standard base64 (ConfigMap `binaryData`), when it decodes to UTF-8 text.
fn decode_base64(text: &str) -> Option<String> {
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for c in text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
    {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(v);
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_decodes() {
        assert_eq!(
            super::decode_base64("aGVsbG8gd29ybGQ=").as_deref(),
            Some("hello world")
        );
        assert_eq!(super::decode_base64("not base64!"), None);
    }
}
