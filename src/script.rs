//! The driver script: a constant bash program (`scripts/driver.sh`, the bundle's `job.sh`) and
//! the job's values it reads (`job.env`): names, namespace, GPU totals, claims, pull secrets,
//! credential keys, the minimum Kubernetes version, the JSON it sends. The values come from the
//! Plan and are written as bash assignments through the one function that quotes a value for
//! the shell; no value is ever part of the program's text.

use crate::plan::Plan;
pub use crate::plan::S3_KEYS;
use serde::Serialize;

/// The driver program, the same for every job.
pub const DRIVER: &str = include_str!("../scripts/driver.sh");
/// The line of the program that reads the job's values from `job.env` beside it.
pub const DATA_LINE: &str = ". \"$here/job.env\"\n";
/// NGC's literal registry user name.
pub const NGC_USERNAME: &str = "$oauthtoken";
/// Where the owner patch takes the applied Job's uid.
pub const UID_PLACEHOLDER: &str = "@UID@";

/// What `job.sh` knows about its job.
#[derive(Debug, Clone, Serialize)]
pub struct ScriptPlan {
    pub version: String,
    pub job: String,
    /// Empty when there is no such object.
    pub service: String,
    pub config_map: String,
    pub secret: String,
    pub pull_secret: String,
    pub namespace: String,
    pub nodes: u32,
    pub gpus_per_node: u32,
    pub pvcs: Vec<String>,
    pub image_pull_secrets: Vec<String>,
    /// Keys the credentials Secret must hold, required first.
    pub required_keys: Vec<String>,
    pub optional_keys: Vec<String>,
    pub queue: String,
    pub image: String,
    pub network_arch: String,
    pub action: String,
    pub tier: String,
    pub results_dir: String,
    /// The container whose logs `job.sh logs` shows.
    pub main_container: String,
    /// The Job of the NCCL probe (`nccl-probe.yaml`), as the compiler names it.
    pub probe_job: String,
    /// The absolute path of the tao-k8s that wrote a bundle, the script's default when
    /// `TAO_K8S_BIN` is unset and that file still exists; empty when unknown (`script`).
    pub tao_k8s_bin: String,
    /// The merge patch that attaches an object to the Job, with [`UID_PLACEHOLDER`] where the
    /// Job's uid goes.
    pub owner_patch: String,
}

impl ScriptPlan {
    /// The script's constants, from the Plan alone.
    pub fn new(plan: &Plan) -> ScriptPlan {
        let run = &plan.run;
        ScriptPlan {
            version: env!("CARGO_PKG_VERSION").into(),
            job: plan.names.job.clone(),
            service: plan
                .service
                .as_ref()
                .map(|s| s.name.clone())
                .unwrap_or_default(),
            config_map: plan
                .config_map
                .as_ref()
                .map(|c| c.name.clone())
                .unwrap_or_default(),
            secret: plan.credentials_secret.clone().unwrap_or_default(),
            pull_secret: plan.ngc_pull_secret.clone().unwrap_or_default(),
            namespace: plan.namespace.clone(),
            nodes: run.nodes,
            gpus_per_node: run.gpus_per_node,
            pvcs: run.pvcs.clone(),
            image_pull_secrets: run.image_pull_secrets.clone(),
            required_keys: run.required_keys.clone(),
            optional_keys: run.optional_keys.clone(),
            queue: run.queue.clone().unwrap_or_default(),
            image: run.image.clone(),
            network_arch: run.network_arch.clone(),
            action: run.action.clone(),
            tier: run.tier.into(),
            results_dir: run.results_dir.clone(),
            main_container: crate::plan::MAIN_CONTAINER.into(),
            probe_job: run.probe_job.clone().unwrap_or_default(),
            tao_k8s_bin: String::new(),
            owner_patch: serde_json::json!({"metadata": {"ownerReferences": [{
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": plan.names.job,
                "uid": UID_PLACEHOLDER,
            }]}})
            .to_string(),
        }
    }

    /// The job's values as bash assignments (`job.env`), each value one quoted word.
    pub fn data(&self) -> String {
        format!(
            "# job.env: the values of the Kubernetes job {}, written by tao-k8s {} for job.sh.\n\
             # shellcheck shell=bash disable=SC2016,SC2034 # literal values, read by job.sh\n{}",
            self.job,
            self.version,
            self.assignments()
        )
    }

    /// The assignments of [`ScriptPlan::data`].
    fn assignments(&self) -> String {
        let one = |v: &str| shell_quote(v);
        let many = |v: &[String]| {
            let words: Vec<String> = v.iter().map(|w| shell_quote(w)).collect();
            format!("({})", words.join(" "))
        };
        let assignments = [
            ("JOB", one(&self.job)),
            ("SERVICE", one(&self.service)),
            ("CONFIG_MAP", one(&self.config_map)),
            ("SECRET", one(&self.secret)),
            ("PULL_SECRET", one(&self.pull_secret)),
            ("MANIFEST_NAMESPACE", one(&self.namespace)),
            ("NODES", one(&self.nodes.to_string())),
            ("GPUS_PER_NODE", one(&self.gpus_per_node.to_string())),
            ("PVCS", many(&self.pvcs)),
            ("IMAGE_PULL_SECRETS", many(&self.image_pull_secrets)),
            ("REQUIRED_KEYS", many(&self.required_keys)),
            ("OPTIONAL_KEYS", many(&self.optional_keys)),
            ("QUEUE", one(&self.queue)),
            ("IMAGE", one(&self.image)),
            ("NETWORK_ARCH", one(&self.network_arch)),
            ("ACTION", one(&self.action)),
            ("TIER", one(&self.tier)),
            ("RESULTS_DIR", one(&self.results_dir)),
            ("MAIN_CONTAINER", one(&self.main_container)),
            ("PROBE_JOB", one(&self.probe_job)),
            ("OWNER_PATCH", one(&self.owner_patch)),
            ("NGC_USERNAME", one(NGC_USERNAME)),
            ("VERSION", one(&self.version)),
            ("WRITER", one(&self.tao_k8s_bin)),
        ];
        let mut text = String::new();
        for (name, value) in assignments {
            text.push_str(&format!("{name}={value}\n"));
        }
        text
    }

    /// The driver as one file: the program with the job's values in place of the line that
    /// reads them from `job.env` (`tao-k8s script`).
    pub fn printed(&self) -> String {
        let data = format!(
            "# shellcheck disable=SC2016 # literal values\n{{\n{}}}\n",
            self.assignments()
        );
        DRIVER.replacen(DATA_LINE, &data, 1)
    }

    /// Record the running binary as the script's default tao-k8s, when its path is an
    /// existing file and a plain string (no control character to carry into the script).
    pub fn with_this_binary(mut self) -> ScriptPlan {
        let exe = std::env::current_exe().ok().filter(|p| p.is_file());
        if let Some(path) = exe.as_deref().and_then(|p| p.to_str())
            && !path.chars().any(char::is_control)
        {
            self.tao_k8s_bin = path.to_string();
        }
        self
    }
}

/// A docker config (`.dockerconfigjson`) for one registry: `auths.<server>` with the user name,
/// the password and their base64 `auth`, as `docker login` writes it.
pub fn docker_config(server: &str, username: &str, password: &str) -> String {
    let auth = base64(format!("{username}:{password}").as_bytes());
    serde_json::json!({"auths": {server: {"username": username, "password": password, "auth": auth}}})
        .to_string()
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, &b| n << 8 | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `value` as one bash word that expands to exactly `value`: single quotes, with each `'`
/// written as `'\''`. Every value reaches the script through this function.
pub fn shell_quote(value: &str) -> String {
    // Always quoted, even plain words: `ACTION=export` would read as a command to a reader
    // (and to shellcheck).
    format!("'{}'", value.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::{DATA_LINE, DRIVER, base64, docker_config, shell_quote};

    #[test]
    fn base64_is_the_standard_alphabet_with_padding() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("$oauthtoken:FAKE-key+/", "JG9hdXRodG9rZW46RkFLRS1rZXkrLw=="),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain}");
        }
        let config: serde_json::Value =
            serde_json::from_str(&docker_config("nvcr.io", "$oauthtoken", "a\"b\\c")).unwrap();
        assert_eq!(config["auths"]["nvcr.io"]["password"], "a\"b\\c");
    }

    #[test]
    fn the_program_reads_its_values_on_one_line() {
        assert_eq!(DRIVER.matches(DATA_LINE).count(), 1);
    }

    #[test]
    fn quoting_round_trips_through_bash() {
        let values = [
            "",
            "plain",
            "a b",
            "it's",
            "$(rm -rf /)",
            "`x`",
            "a\nb",
            "\\",
            "\"q\"",
            "*",
            "~",
            "-n",
            "日本",
            "a'b'c",
            "!event",
            "${X:-y}",
        ];
        for v in values {
            let out = std::process::Command::new("bash")
                .args(["-c", &format!("printf %s {}", shell_quote(v))])
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8(out.stdout).unwrap(),
                v,
                "{v:?} -> {}",
                shell_quote(v)
            );
        }
    }
}

/// The fields of `sent` objects that the API server's answer (`kubectl apply --dry-run=server
/// -o json`: one object or a List) does not have: fields a server drops silently, such as those
/// behind a feature gate that is off. Each as `Kind/name: path`.
pub fn dropped_fields(sent: &[serde_json::Value], answer: &serde_json::Value) -> Vec<String> {
    let items: Vec<&serde_json::Value> = match answer.get("items").and_then(|i| i.as_array()) {
        Some(items) if answer.get("kind").and_then(|k| k.as_str()) == Some("List") => {
            items.iter().collect()
        }
        _ => vec![answer],
    };
    let key =
        |o: &serde_json::Value| (o.get("kind").cloned(), o.pointer("/metadata/name").cloned());
    let mut dropped = Vec::new();
    for object in sent {
        let label = format!(
            "{}/{}",
            object.get("kind").and_then(|k| k.as_str()).unwrap_or("?"),
            object
                .pointer("/metadata/name")
                .and_then(|n| n.as_str())
                .unwrap_or("?")
        );
        match items.iter().find(|i| key(i) == key(object)) {
            None => dropped.push(format!("{label}: the whole object")),
            Some(kept) => missing(object, kept, &mut String::new(), &label, &mut dropped),
        }
    }
    dropped
}

fn missing(
    sent: &serde_json::Value,
    kept: &serde_json::Value,
    path: &mut String,
    label: &str,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    match (sent, kept) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let len = path.len();
                path.push('.');
                path.push_str(k);
                match b.get(k) {
                    None => out.push(format!("{label}: {}", &path[1..])),
                    Some(w) => missing(v, w, path, label, out),
                }
                path.truncate(len);
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, v) in a.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                match b.get(i) {
                    None => out.push(format!("{label}: {}", &path[1..])),
                    Some(w) => missing(v, w, path, label, out),
                }
                path.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod dropped_tests {
    use serde_json::json;

    #[test]
    fn fields_the_server_did_not_keep_are_named() {
        let sent = vec![
            json!({"kind": "Job", "metadata": {"name": "j"}, "spec": {"successPolicy": {"rules": []}, "template": {"spec": {"containers": [{"name": "a", "x": 1}]}}}}),
        ];
        let answer = json!({"kind": "List", "items": [{"kind": "Job", "metadata": {"name": "j", "uid": "u"}, "spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}}]});
        assert_eq!(
            super::dropped_fields(&sent, &answer),
            [
                "Job/j: spec.successPolicy",
                "Job/j: spec.template.spec.containers[0].x"
            ]
        );
        let kept = json!({"kind": "Job", "metadata": {"name": "j"}, "spec": {"successPolicy": {"rules": []}, "template": {"spec": {"containers": [{"name": "a", "x": 1}]}}}});
        assert!(super::dropped_fields(&sent, &kept).is_empty());
    }
}
