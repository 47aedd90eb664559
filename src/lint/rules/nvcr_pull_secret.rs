use crate::lint::{Document, Finding, Rule};
use crate::yaml::{Node, Step, Value};

crate::rule! {
    /// What it checks: a pod spec (of a Pod, Job, CronJob, Deployment…) with a container or init
    /// container image on `nvcr.io/` and no `imagePullSecrets`, neither in the pod spec nor on
    /// its ServiceAccount when that ServiceAccount is in the same stream. Reported once per pod
    /// spec, at the first such image.
    ///
    /// Why it matters: many NGC images (those of private orgs and teams, early-access releases)
    /// need an NGC API key to pull. Without a pull secret the pod sits in `ImagePullBackOff`, which
    /// never fails a Job: it stays active, holding its quota, until someone looks. A warning,
    /// because public images pull without one and a ServiceAccount defined elsewhere may carry
    /// the secret.
    ///
    /// Example: `image: nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt` in a Job without
    /// `imagePullSecrets`.
    ///
    /// Fix: `kubectl create secret docker-registry ngc --docker-server=nvcr.io
    /// --docker-username='$oauthtoken' --docker-password="$NGC_API_KEY"`, then add
    /// `imagePullSecrets: [{name: ngc}]` to the pod spec, or to its ServiceAccount.
    pub struct NvcrPullSecret {
        code: "TK310",
        name: "nvcr-pull-secret",
        group: Gpu,
        severity: Warning,
    }
}

impl Rule for NvcrPullSecret {
    /// ServiceAccounts' pull secrets, and the pod specs that could be reported: an nvcr.io
    /// image and no pull secret of their own.
    fn keeps(&self, doc: &Document) -> Vec<Vec<Step>> {
        if doc.kind == "ServiceAccount" {
            return vec![vec![Step::Key("imagePullSecrets".into())]];
        }
        let Some((pod, spec)) = doc.pod_spec() else {
            return Vec::new();
        };
        let nvcr = ["initContainers", "containers"].iter().any(|field| match spec.get(field).map(|n| &n.value) {
            Some(Value::Seq(items)) => items
                .iter()
                .any(|c| matches!(c.get("image").map(|n| &n.value), Some(Value::Str(i)) if i.starts_with("nvcr.io/"))),
            _ => false,
        });
        if !nvcr || has_pull_secrets(spec) {
            return Vec::new();
        }
        // The containers' images alone: a container's env can be 200,000 entries long.
        let images = ["initContainers", "containers"].iter().flat_map(|field| {
            let count = match spec.get(field).map(|n| &n.value) {
                Some(Value::Seq(items)) => items.len(),
                _ => 0,
            };
            (0..count).map(|j| {
                let mut path = pod.to_vec();
                path.extend([
                    Step::Key(field.to_string().into()),
                    Step::Index(j),
                    Step::Key("image".into()),
                ]);
                path
            })
        });
        ["serviceAccountName", "serviceAccount", "imagePullSecrets"]
            .iter()
            .map(|k| [pod, &[Step::Key(k.to_string().into())]].concat())
            .chain(images)
            .collect()
    }

    fn check_stream(&self, docs: &[Document], out: &mut Vec<(usize, Finding)>) {
        // ServiceAccounts of the stream that give their pods a pull secret.
        let accounts: Vec<(Option<&str>, &str)> = docs
            .iter()
            .filter(|d| d.kind == "ServiceAccount" && has_pull_secrets(d.root))
            .map(|d| (d.namespace, d.name))
            .collect();
        for (i, doc) in docs.iter().enumerate() {
            let Some((pod, spec)) = doc.pod_spec() else {
                continue;
            };
            let account = ["serviceAccountName", "serviceAccount"]
                .iter()
                .find_map(|k| match spec.get(k).map(|n| &n.value) {
                    Some(Value::Str(s)) => Some(s.as_str()),
                    _ => None,
                })
                .unwrap_or("default");
            if has_pull_secrets(spec) || accounts.contains(&(doc.namespace, account)) {
                continue;
            }
            let first = ["initContainers", "containers"]
                .iter()
                .filter_map(|field| match spec.get(field).map(|n| &n.value) {
                    Some(Value::Seq(items)) => {
                        Some(items.iter().enumerate().map(move |(j, c)| (*field, j, c)))
                    }
                    _ => None,
                })
                .flatten()
                .filter_map(|(field, j, c)| match c.get("image") {
                    Some(
                        node @ Node {
                            value: Value::Str(image),
                            ..
                        },
                    ) if image.starts_with("nvcr.io/") => Some((field, j, node, image)),
                    _ => None,
                })
                .min_by_key(|(_, _, node, _)| node.span.start);
            let Some((field, j, node, image)) = first else {
                continue;
            };
            let mut path = pod.to_vec();
            path.extend([
                Step::Key(field.into()),
                Step::Index(j),
                Step::Key("image".into()),
            ]);
            out.push((
                i,
                Finding {
                    message: format!(
                        "{}: image `{image}` is on nvcr.io, but the pod has no `imagePullSecrets`",
                        doc.label()
                    ),
                    help: Some("create a docker-registry Secret for nvcr.io (user `$oauthtoken`, password an NGC API key) and list it in the pod spec's `imagePullSecrets`, or in its ServiceAccount's".into()),
                    path,
                    span: node.span.clone(),
                },
            ));
        }
    }
}

/// Whether a pod spec or ServiceAccount lists at least one image pull secret.
fn has_pull_secrets(node: &Node) -> bool {
    matches!(node.get("imagePullSecrets").map(|n| &n.value), Some(Value::Seq(s)) if !s.is_empty())
}
