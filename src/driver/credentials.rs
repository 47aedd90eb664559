//! What leaves the submitter's environment: the submitter, not the request, decides.
//!
//! A request's `credentials.extra` asks for environment variables; `job.sh submit` passes one
//! only when the submitter allows it (`--pass-env NAME`, `TAO_K8S_PASS_ENV=NAME,...`). The S3
//! keys travel only when the request uses S3, NGC_KEY only as the nvcr.io pull Secret, and the
//! driver's own settings never. Values are read from the process environment, which the
//! driver passes on unchanged (its own variables are lower case, see [`super::values`]), and
//! never stand on a command line: the Secrets are written as JSON files that only kubectl
//! reads.

use super::{NGC_USERNAME, docker_config};
use crate::lint::api::text;
use crate::request::credentials::{LEGACY_S3_KEYS, NGC_KEY, extra_problem};
use crate::yaml::{Node, Value as YamlValue};
use serde_json::{Value, json};

/// The submitter's allow-list, besides `--pass-env`.
pub const PASS_ENV: &str = "TAO_K8S_PASS_ENV";

/// The names the submitter allows: every `--pass-env` value and the comma-separated
/// `TAO_K8S_PASS_ENV`, blanks ignored.
pub fn allowed(pass_env: &[String], env_list: Option<&str>) -> Vec<String> {
    let listed = env_list.into_iter().flat_map(|l| l.split(','));
    let mut names: Vec<String> = pass_env
        .iter()
        .flat_map(|p| p.split(','))
        .chain(listed)
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Every problem with passing `extra` given what the submitter allowed; empty when all pass.
pub fn refusals(extra: &[String], allowed: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for name in extra {
        if let Some(problem) = extra_problem(name) {
            out.push(format!("credentials.extra names {name}: {problem}"));
        } else if !allowed.contains(name) {
            out.push(format!(
                "credentials.extra asks for {name} from your environment, and you did not allow \
                 it: pass `job.sh submit --pass-env {name}` (or TAO_K8S_PASS_ENV={name}) if the \
                 pod may have it"
            ));
        }
    }
    out
}

/// The keys of the credentials Secret.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    pub s3_required: Vec<String>,
    pub s3_optional: Vec<String>,
    pub extra: Vec<String>,
}

/// The credentials Secret `name`, its values read through `env` (the process environment):
/// the S3 keys (the legacy ACCESS_KEY/SECRET_KEY for unset AWS names) and the allowed extra
/// keys. An error names the first key that is required and unset, or not text.
pub fn credentials_secret(
    name: &str,
    namespace: &str,
    keys: &Keys,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<Value, String> {
    let read = |key: &str| -> Result<Option<String>, String> {
        match env(key).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .into_string()
                .map(Some)
                .map_err(|_| format!("{key} in the environment is not UTF-8 text")),
        }
    };
    let mut data = serde_json::Map::new();
    for key in &keys.s3_required {
        let legacy = LEGACY_S3_KEYS.iter().find(|(aws, _)| aws == key);
        let value = match (read(key)?, legacy) {
            (Some(v), _) => Some(v),
            (None, Some((_, legacy))) => read(legacy)?,
            (None, None) => None,
        };
        let value = value.ok_or_else(|| format!("{key} is not set in the environment"))?;
        data.insert(key.clone(), value.into());
    }
    for key in &keys.extra {
        let value = read(key)?.ok_or_else(|| format!("{key} is not set in the environment"))?;
        data.insert(key.clone(), value.into());
    }
    for key in &keys.s3_optional {
        if let Some(value) = read(key)? {
            data.insert(key.clone(), value.into());
        }
    }
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "stringData": data,
    }))
}

/// The nvcr.io pull Secret `name` from NGC_KEY, or `None` when NGC_KEY is unset.
pub fn ngc_pull_secret(
    name: &str,
    namespace: &str,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<Option<Value>, String> {
    let Some(key) = env(NGC_KEY).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let key = key
        .into_string()
        .map_err(|_| "NGC_KEY in the environment is not UTF-8 text".to_string())?;
    Ok(Some(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": docker_config("nvcr.io", NGC_USERNAME, &key)},
    })))
}

/// A Secret the Job reads that `render` does not print and `job.sh submit` creates from the
/// submitter's environment: a `render | kubectl apply -f -` needs it made first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needed {
    pub name: String,
    /// Keys the pod cannot start without, and keys it reads when they are there.
    pub keys: Vec<String>,
    pub optional: Vec<String>,
    pub kind: NeededKind,
}

/// What a [`Needed`] Secret is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeededKind {
    /// The credentials Secret `<job>-creds`.
    Credentials,
    /// The nvcr.io pull Secret made from NGC_KEY (`<job>-ngc`).
    NgcPull,
}

/// The Secrets `job.sh submit` would create that `objects` (what `render` prints) reference
/// and do not hold: the credentials Secret (unless the request names its own in
/// `credentials.secretName`, which exists already), then the NGC pull Secret. Secrets the
/// request names are the submitter's own and not listed. Empty when the output is whole.
pub fn needed_secrets(plan: &crate::plan::Plan, objects: &[Node]) -> Vec<Needed> {
    let run = &plan.run;
    let credentials = plan
        .credentials_secret
        .iter()
        .filter(|_| !plan.names.secret_named)
        .map(|name| Needed {
            name: name.clone(),
            keys: run.required_keys.clone(),
            optional: run.optional_keys.clone(),
            kind: NeededKind::Credentials,
        });
    let pull = plan.ngc_pull_secret.iter().map(|name| Needed {
        name: name.clone(),
        keys: vec![".dockerconfigjson".into()],
        optional: Vec::new(),
        kind: NeededKind::NgcPull,
    });
    let mut needed: Vec<Needed> = credentials.chain(pull).collect();
    // Most requests need neither: the objects are not searched.
    if needed.is_empty() {
        return needed;
    }
    let mut referenced = std::collections::BTreeSet::new();
    for object in objects {
        secret_refs(object, &mut referenced);
    }
    for object in objects
        .iter()
        .filter(|o| o.get("kind").and_then(text) == Some("Secret"))
    {
        if let Some(name) = object
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(text)
        {
            referenced.remove(name);
        }
    }
    needed.retain(|n| referenced.contains(n.name.as_str()));
    needed
}

/// Every Secret name `node` references: `secretKeyRef`, `envFrom[].secretRef`, secret
/// volumes and projections, `imagePullSecrets`.
fn secret_refs<'a>(node: &'a Node, out: &mut std::collections::BTreeSet<&'a str>) {
    match &node.value {
        YamlValue::Map(entries) => {
            for (key, v) in entries {
                let key = text(key).unwrap_or_default();
                let name = |field| v.get(field).and_then(text);
                let name = match key {
                    "secretKeyRef" | "secretRef" => name("name"),
                    "secret" => name("secretName").or(name("name")),
                    _ => None,
                };
                out.extend(name);
                if key == "imagePullSecrets"
                    && let YamlValue::Seq(items) = &v.value
                {
                    out.extend(items.iter().filter_map(|s| s.get("name").and_then(text)));
                }
                if is_collection(v) {
                    secret_refs(v, out);
                }
            }
        }
        YamlValue::Seq(items) => items
            .iter()
            .filter(|v| is_collection(v))
            .for_each(|v| secret_refs(v, out)),
        _ => {}
    }
}

/// A mapping or a sequence: what [`secret_refs`] looks into (most nodes are scalars).
fn is_collection(node: &Node) -> bool {
    matches!(node.value, YamlValue::Map(_) | YamlValue::Seq(_))
}

/// What `render` says on stderr of the [`needed_secrets`] in `namespace`, line by line: each
/// Secret, its keys and the kubectl line that makes it from a file of the submitter's. Names
/// only, never a value: the files are placeholders. Empty when none is needed.
pub fn needed_note(needed: &[Needed], namespace: &str) -> Vec<String> {
    if needed.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "the Job reads Secrets this output does not hold; create them in namespace {namespace} \
         before `kubectl apply` (`job.sh submit` of `render --out DIR` creates them from your \
         environment):"
    )];
    for n in needed {
        match n.kind {
            NeededKind::Credentials => {
                let mut line = format!("  Secret {}: keys {}", n.name, n.keys.join(", "));
                if !n.optional.is_empty() {
                    line += &format!(" (optional: {})", n.optional.join(", "));
                }
                lines.push(line);
                lines.push(format!(
                    "    kubectl create secret generic {} -n {namespace} \
                     --from-env-file=<path/to/{}.env>   (one KEY=value line per key)",
                    n.name, n.name
                ));
            }
            NeededKind::NgcPull => {
                lines.push(format!(
                    "  Secret {}: the nvcr.io pull Secret, key .dockerconfigjson (user \
                     {NGC_USERNAME}, password your NGC API key)",
                    n.name
                ));
                lines.push(format!(
                    "    kubectl create secret generic {} -n {namespace} \
                     --type=kubernetes.io/dockerconfigjson \
                     --from-file=.dockerconfigjson=<path/to/docker-config.json>",
                    n.name
                ));
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.into())
    }

    #[test]
    fn the_submitter_allows_each_extra_name_and_some_names_never_pass() {
        let extra = ["HF_TOKEN".to_string(), "WANDB_API_KEY".to_string()];
        let allowed = allowed(&["HF_TOKEN".into()], Some(" WANDB_API_KEY, ,X"));
        assert_eq!(allowed, ["HF_TOKEN", "WANDB_API_KEY", "X"]);
        assert!(refusals(&extra, &allowed).is_empty());
        let refused = refusals(&extra, &["HF_TOKEN".into()]);
        assert_eq!(refused.len(), 1);
        assert!(
            refused[0].contains("--pass-env WANDB_API_KEY"),
            "{refused:?}"
        );
        for never in [
            "NGC_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "SECRET_KEY",
            "TAO_K8S_BIN",
            "lower",
            "1X",
            "",
        ] {
            let refused = refusals(&[never.to_string()], &[never.to_string()]);
            assert_eq!(refused.len(), 1, "{never}");
        }
    }

    #[test]
    fn legacy_s3_names_fill_unset_aws_names_and_optional_keys_are_left_out() {
        let keys = Keys {
            s3_required: vec!["AWS_ACCESS_KEY_ID".into(), "AWS_SECRET_ACCESS_KEY".into()],
            s3_optional: vec!["S3_BUCKET_NAME".into(), "S3_ENDPOINT_URL".into()],
            extra: vec!["HF_TOKEN".into()],
        };
        let secret = credentials_secret(
            "j-creds",
            "ns",
            &keys,
            env(&[
                ("ACCESS_KEY", "AKIAFAKE"),
                ("AWS_SECRET_ACCESS_KEY", "fake-secret"),
                ("SECRET_KEY", "ignored"),
                ("HF_TOKEN", "hf_fake\nwith a newline"),
                ("S3_BUCKET_NAME", "bucket"),
            ]),
        )
        .unwrap();
        assert_eq!(
            secret["stringData"],
            json!({"AWS_ACCESS_KEY_ID": "AKIAFAKE", "AWS_SECRET_ACCESS_KEY": "fake-secret",
                   "HF_TOKEN": "hf_fake\nwith a newline", "S3_BUCKET_NAME": "bucket"})
        );
        let missing = credentials_secret("j", "ns", &keys, env(&[("ACCESS_KEY", "a")]));
        assert_eq!(
            missing.unwrap_err(),
            "AWS_SECRET_ACCESS_KEY is not set in the environment"
        );
    }

    #[test]
    fn only_secrets_the_objects_reference_and_do_not_hold_are_needed() {
        let text = r#"
kind: Job
spec:
  template:
    spec:
      imagePullSecrets: [{name: j-ngc}, {name: team-pull}]
      volumes:
        - {name: v, secret: {secretName: j-volume}}
      containers:
        - envFrom: [{secretRef: {name: j-creds}}]
          env: [{name: X, valueFrom: {secretKeyRef: {name: j-creds, key: S3_ENDPOINT_URL}}}]
"#;
        let source = crate::source::Source::new("t", text);
        let objects = crate::yaml::parse(&source, crate::yaml::Limits::default())
            .unwrap()
            .documents;
        let mut refs = std::collections::BTreeSet::new();
        objects.iter().for_each(|o| secret_refs(o, &mut refs));
        assert_eq!(
            refs.into_iter().collect::<Vec<_>>(),
            ["j-creds", "j-ngc", "j-volume", "team-pull"]
        );
        let needed = vec![
            Needed {
                name: "j-creds".into(),
                keys: vec!["AWS_ACCESS_KEY_ID".into()],
                optional: vec!["S3_ENDPOINT_URL".into()],
                kind: NeededKind::Credentials,
            },
            Needed {
                name: "j-ngc".into(),
                keys: vec![".dockerconfigjson".into()],
                optional: vec![],
                kind: NeededKind::NgcPull,
            },
        ];
        let note = needed_note(&needed, "vision").join("\n");
        assert!(note.contains("kubectl create secret generic j-creds -n vision --from-env-file="));
        assert!(note.contains("keys AWS_ACCESS_KEY_ID (optional: S3_ENDPOINT_URL)"));
        assert!(note.contains("--type=kubernetes.io/dockerconfigjson"));
        assert!(needed_note(&[], "vision").is_empty());
    }

    #[test]
    fn the_pull_secret_is_a_docker_config_for_nvcr_io() {
        assert!(ngc_pull_secret("j-ngc", "ns", env(&[])).unwrap().is_none());
        let secret = ngc_pull_secret("j-ngc", "ns", env(&[("NGC_KEY", "nvapi-fake")]))
            .unwrap()
            .unwrap();
        let config: Value =
            serde_json::from_str(secret["stringData"][".dockerconfigjson"].as_str().unwrap())
                .unwrap();
        assert_eq!(config["auths"]["nvcr.io"]["password"], "nvapi-fake");
        assert_eq!(secret["type"], "kubernetes.io/dockerconfigjson");
    }
}
