//! The driver script's Plan: every value the generated `job.sh` needs (names, namespace, GPU
//! totals, PVCs, pull secrets, credential keys, minimum Kubernetes version), computed here from
//! the manifest Plan and written into the script as quoted constants, and the one function that
//! quotes a value for the shell. The script itself is `templates/driver.sh.j2`.

use crate::plan::Plan;
pub use crate::plan::S3_KEYS;
use serde::Serialize;

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
    /// `key=value` label selectors of the request's nodeSelector.
    pub node_selector: Vec<String>,
    pub pvcs: Vec<String>,
    pub image_pull_secrets: Vec<String>,
    /// Keys the credentials Secret must hold, required first.
    pub required_keys: Vec<String>,
    pub optional_keys: Vec<String>,
    /// Minimum server version (multi-node), `1.28`; empty for single-node.
    pub min_kube: String,
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
            node_selector: plan
                .job
                .pod
                .node_selector
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
            pvcs: run.pvcs.clone(),
            image_pull_secrets: run.image_pull_secrets.clone(),
            required_keys: run.required_keys.clone(),
            optional_keys: run.optional_keys.clone(),
            min_kube: run.min_kube.clone().unwrap_or_default(),
            queue: run.queue.clone().unwrap_or_default(),
            image: run.image.clone(),
            network_arch: run.network_arch.clone(),
            action: run.action.clone(),
            tier: run.tier.into(),
            results_dir: run.results_dir.clone(),
            main_container: crate::plan::MAIN_CONTAINER.into(),
            probe_job: run.probe_job.clone().unwrap_or_default(),
            tao_k8s_bin: String::new(),
        }
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

/// `value` as one bash word that expands to exactly `value`: single quotes, with each `'`
/// written as `'\''`. Every value reaches the script through this function.
pub fn shell_quote(value: &str) -> String {
    // Always quoted, even plain words: `ACTION=export` would read as a command to a reader
    // (and to shellcheck).
    format!("'{}'", value.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

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
