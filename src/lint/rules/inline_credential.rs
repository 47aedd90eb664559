use crate::lint::{Document, Finding, Findings, Rule};
use crate::secrets;
use crate::yaml::{At, Node, Step, Value, owned, same_path};

crate::rule! {
    /// What it checks: every string of an object (env values, command and args, `sh -c`
    /// scripts, probe `httpHeaders` and lifecycle hooks, labels and annotations and their keys,
    /// ConfigMap data, a Secret's `stringData` and decoded `data` key by key, URLs) for a
    /// credential: provider tokens by their format (AWS, NGC, Hugging Face, GitHub with its
    /// checksum, GitLab, Slack, Stripe secret keys, OpenAI, Google, Azure connection strings,
    /// npm, PyPI, Vault, Telegram, JWTs and about 150 more prefixes), chat webhook URLs (Slack,
    /// Discord, Teams), pre-signed URL signatures (`sig=`, `X-Amz-Signature`), PEM private keys,
    /// passwords in URLs and in `user:password@host`, docker config auths, option values
    /// (`--password X` across argv elements, `mysql -pX`, `curl -u user:secret`, `redis-cli -a
    /// X`, `docker login -p X`), secrets by position (`htpasswd -b`, `vault login`, `mc alias
    /// set`), `Authorization: Bearer/Basic` headers (also in nginx snippets), credential files
    /// (`.netrc`, `.pgpass`, Maven `settings.xml`, `.npmrc` and `_auth`, `.pypirc`,
    /// INI/properties/dotenv, `name value` directives such as `requirepass`, IPsec `PSK`,
    /// htpasswd lines), any real value under a PASSWORD name (in a Secret, under any credential
    /// name), and random values under KEY, TOKEN, SECRET, COOKIE or CREDENTIAL names.
    ///
    /// Why it matters: a manifest is committed, reviewed, printed in CI logs and stored by the
    /// API server in plain text; a credential in it is a leaked credential.
    ///
    /// Example: `env: [{name: HF_TOKEN, value: hf_…}]`, `args: [--token, …]`.
    ///
    /// Fix: keep the value in a Secret created at deploy time and reference it
    /// (`valueFrom.secretKeyRef` or `envFrom.secretRef`). Not findings, and not notes either
    /// (they are what a template is meant to hold): references and placeholders (`$(VAR)`,
    /// `${VAR}`, `{{ … }}`, `#{Name}#`, `%(name)s`, `changeme`, `<your-token>`, `REPLACE_ME`,
    /// values ending in EXAMPLE), settings under password names (`PASSWORD_HASHER`), documented
    /// examples (the jwt.io sample token, Stripe's test keys), encrypted values (SealedSecret
    /// `encryptedData`, SOPS `ENC[…]`, age/PGP messages), public keys (Stripe `pk_`, PostHog
    /// `phc_`, reCAPTCHA site keys, SSH/PGP public keys), and digests, UUIDs and ULIDs outside
    /// credential names. Messages show at most a provider's public prefix (`ghp_****`).
    pub struct InlineCredential {
        code: "TK101",
        name: "inline-credential",
        group: Redaction,
        severity: Error,
    }
}

impl Rule for InlineCredential {
    fn check(&self, doc: &Document, out: &mut Findings) {
        // A SealedSecret holds ciphertext only: its controller decrypts it in the cluster.
        if doc.kind == "SealedSecret" {
            return;
        }
        let report = |out: &mut Findings,
                      f: &secrets::Finding,
                      text: &str,
                      path: Vec<Step>,
                      node: &Node| {
            out.push(Finding {
                message: format!("{} inline (`{}`)", f.what, secrets::mask(&text[f.range.clone()])),
                help: Some("move it to a Secret and reference it with `valueFrom.secretKeyRef` or `envFrom.secretRef`".into()),
                path,
                span: node.span.clone(),
            });
        };
        // Argv lists first (`command` + `args` of containers and exec hooks): an option's value
        // is only a credential next to its option.
        let mut flagged: Vec<Vec<Step>> = Vec::new();
        // Whether any map has an `encryptedData` key: only then is a string's path searched.
        let mut encrypted = false;
        walk_maps(doc.root, &mut Vec::new(), &mut |path, entries| {
            // One look at the keys (a map holds each once): an argv list, `encryptedData`.
            let (mut command, mut args): (&[Node], &[Node]) = (&[], &[]);
            for (k, v) in entries {
                let Value::Str(k) = &k.value else { continue };
                match (k.as_str(), &v.value) {
                    ("command", Value::Seq(items)) => command = items,
                    ("args", Value::Seq(items)) => args = items,
                    ("encryptedData", _) => encrypted = true,
                    _ => {}
                }
            }
            if command.is_empty() && args.is_empty() {
                // Keys can hold a token too (a label or annotation key, an env name).
                for (k, _) in entries {
                    if let Value::Str(key) = &k.value
                        && key.len() >= 12
                        && let Some(f) = secrets::scan_text(key).first()
                    {
                        let mut at = owned(path);
                        at.push(Step::Key(key.clone().into()));
                        report(out, f, key, at, k);
                    }
                }
                return;
            }
            let mut words = crate::yaml::words(command);
            words.extend(crate::yaml::words(args));
            for (i, f) in secrets::scan_argv(&words) {
                let (key, index, node) = if i < command.len() {
                    ("command", i, &command[i])
                } else {
                    ("args", i - command.len(), &args[i - command.len()])
                };
                let mut at = owned(path);
                at.extend([Step::Key(key.into()), Step::Index(index)]);
                report(out, &f, words[i], at.clone(), node);
                flagged.push(at);
            }
        });
        crate::yaml::visit_strings(doc.root, |path, node, value| {
            if flagged.iter().any(|f| same_path(path, f)) {
                return;
            }
            // Encrypted data is not secret.
            if encrypted && path.iter().any(|s| s.key() == Some("encryptedData")) {
                return;
            }
            // A Secret's `data` and a ConfigMap's `binaryData` are base64: judged decoded, key by
            // key, like any other value (a CA certificate or a flag is no credential).
            let secret = doc.kind == "Secret"
                && path.len() == 2
                && matches!(path.first().and_then(At::key), Some("data" | "stringData"));
            let first = path.first().and_then(At::key);
            let binary = (doc.kind == "ConfigMap" && first == Some("binaryData"))
                || (secret && first == Some("data"));
            let decoded = binary.then(|| secrets::decode_base64(value)).flatten();
            let text = decoded.as_deref().unwrap_or(value);
            let name = name_of(doc, path);
            let found = match secret {
                true => secrets::scan_secret_entry(name, text),
                false => secrets::scan_assignment(name, text),
            };
            if let Some(f) = found.first() {
                report(out, f, text, owned(path), node);
            }
        });
    }
}

/// A map's entries, in document order.
type Entries = [(Node, Node)];

/// Every map of the tree with its path, outermost first.
fn walk_maps<'a>(
    node: &'a Node,
    path: &mut Vec<At<'a>>,
    f: &mut dyn FnMut(&[At<'a>], &'a Entries),
) {
    match &node.value {
        Value::Map(entries) => {
            f(path, entries);
            for (k, v) in entries {
                path.push(At::Key(crate::yaml::key_text(k)));
                walk_maps(v, path, f);
                path.pop();
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(At::Index(i));
                walk_maps(item, path, f);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The name a value is assigned to: an env entry's `name`, else the key that holds it.
fn name_of<'a>(doc: &'a Document, path: &'a [At]) -> &'a str {
    let Some((At::Key(last), parent)) = path.split_last() else {
        return "";
    };
    if last == "value"
        && let Some(Value::Str(name)) = doc
            .at(&owned(parent))
            .and_then(|p| p.get("name"))
            .map(|n| &n.value)
    {
        return name;
    }
    last
}
