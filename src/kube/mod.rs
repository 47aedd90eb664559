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
