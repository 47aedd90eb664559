//! What the command line and the environment say of the objects' namespace: `--namespace`,
//! and, for a request that names none, `$TAO_K8S_NAMESPACE`, else (in a pod with no
//! kubeconfig) the pod's service account's.

use super::input;
use std::path::PathBuf;
use tao_k8s::plan::{Ambient, Options};

/// Options from `--namespace`, `$TAO_K8S_NAMESPACE` and, in a pod, its service account; the
/// rest default.
pub(crate) fn options(namespace: Option<String>) -> Options {
    Options {
        namespace,
        ambient_namespace: std::env::var("TAO_K8S_NAMESPACE")
            .ok()
            .filter(|ns| !ns.is_empty())
            .map(|name| Ambient {
                name,
                from: "TAO_K8S_NAMESPACE",
            })
            .or_else(|| {
                pod_namespace().map(|name| Ambient {
                    name,
                    from: "the pod's service account",
                })
            }),
        ..Options::default()
    }
}

/// Inside a pod with no kubeconfig (as the driver's in-cluster mode decides it), the namespace
/// of the pod's service account, which kubectl's in-cluster config defaults to; a file that
/// holds no namespace name is not used.
fn pod_namespace() -> Option<String> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    var("KUBERNETES_SERVICE_HOST")?;
    let home_config = var("HOME").map(|h| PathBuf::from(h).join(".kube/config"));
    if var("KUBECONFIG").is_some() || home_config.is_some_and(|c| c.exists()) {
        return None;
    }
    let dir = var("TAO_K8S_SERVICEACCOUNT_DIR").map_or_else(
        || PathBuf::from("/var/run/secrets/kubernetes.io/serviceaccount"),
        PathBuf::from,
    );
    let text = input::read(&dir.join("namespace"), input::Kind::ServiceAccount).ok()?;
    let ns = text.text().trim();
    tao_k8s::kube::names::is_dns1123_label(ns).then(|| ns.to_string())
}
