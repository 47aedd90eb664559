//! What is true of Kubernetes itself, whatever speaks it: versions and the supported range,
//! name and label syntax, quantities, image references, tolerations, the did-you-mean, and the
//! object a checker looks at. The lint, the request checks, the plan, the gates and the CRD
//! checker build on it; it builds on none of them.

pub mod document;
pub mod image;
pub mod names;
mod nearest;
pub mod pod_security;
pub mod quantity;
pub mod toleration;
mod version;

pub use document::{Document, Finding};
pub use nearest::nearest;
pub use pod_security::PodSecurity;
pub use version::KubeVersion;

/// The pod condition that the API server, the kubelet, the scheduler or the pod garbage
/// collector sets on a pod it ends for the cluster's own reasons (an eviction or node drain, a
/// preemption, a `NoExecute` taint, a node that is gone): a Job's `podFailurePolicy` tells
/// such a pod from one whose action failed.
pub const DISRUPTION_CONDITION: &str = "DisruptionTarget";

/// The kinds that run a job's pods: a `batch/v1` Job, or a JobSet (`render --target jobset`).
pub const WORKLOAD_KINDS: [&str; 2] = ["Job", "JobSet"];

/// Whether `kind` runs a job's pods ([`WORKLOAD_KINDS`]).
pub fn is_workload(kind: &str) -> bool {
    WORKLOAD_KINDS.contains(&kind)
}

/// The Job (metadata and spec) a workload object runs: the Job itself, or the template of the
/// first replicated Job of a JobSet with the JobSet's metadata, `suspend` and status, so that
/// what reads a Job (the gates, `job.sh status`) reads a JobSet the same way.
pub fn job_view(object: &serde_json::Value) -> std::borrow::Cow<'_, serde_json::Value> {
    if object["kind"] != "JobSet" {
        return std::borrow::Cow::Borrowed(object);
    }
    let mut spec = object
        .pointer("/spec/replicatedJobs/0/template/spec")
        .cloned()
        .unwrap_or_else(|| serde_json::json!({}));
    if let (Some(s), Some(suspend)) = (spec.as_object_mut(), object.pointer("/spec/suspend")) {
        s.insert("suspend".into(), suspend.clone());
    }
    std::borrow::Cow::Owned(serde_json::json!({
        "apiVersion": object["apiVersion"],
        "kind": "JobSet",
        "metadata": object["metadata"],
        "spec": spec,
        "status": object["status"],
    }))
}
