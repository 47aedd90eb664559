//! What `kubectl` reported about the cluster, read as typed views ([`objects`]: nodes, pods,
//! claims, Jobs, the server version), and what `job.sh status` says about a Job from them
//! ([`status`]). The gates ([`crate::gate`]) decide from the same views.

pub mod objects;
pub mod status;
