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
