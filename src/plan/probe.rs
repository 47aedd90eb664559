//! The NCCL probe: a two-node all-reduce with the request's image, GPUs, scheduling, pull
//! Secret, `/dev/shm` and rendezvous, that the driver runs once per cluster before a
//! multi-node job; and the nvcr.io pull Secret both share.

use super::names::Names;
use super::{OPTION, pod::pod_script};
use crate::diag::Diagnostic;
use crate::request::ActionRequest;

/// The constant NCCL probe program, run as `python3 -c`.
pub const NCCL_PROBE: &str = include_str!("../../scripts/nccl_probe.py");
/// Seconds a probe may run before its Job fails: a hang becomes a failure.
pub const NCCL_PROBE_DEADLINE: u32 = 300;

/// The base name of a request's NCCL probe.
pub fn probe_name(name: &str) -> String {
    format!("{name}-nccl-probe")
}

/// The nvcr.io pull Secret the driver script creates from NGC_KEY: for an nvcr.io image when
/// the request names no pull Secret.
pub fn ngc_pull_secret(req: &ActionRequest) -> Option<String> {
    let spec = &req.spec;
    (spec.image.starts_with("nvcr.io/") && spec.image_pull_secrets.is_empty())
        .then(|| Names::derive(&req.metadata.name, req.nodes(), None).pull_secret)
}

/// The request of the NCCL probe for `req`: two nodes with its image, GPUs per node,
/// scheduling, pull secrets, `/dev/shm` and rendezvous settings, running the probe program
/// instead of the action, with no storage and no credentials.
pub fn nccl_probe(req: &ActionRequest) -> Result<ActionRequest, Diagnostic> {
    if req.spec.resources.gpus_per_node == 0 {
        return Err(
            Diagnostic::error(OPTION, "the NCCL probe needs GPUs, but `gpusPerNode` is 0")
                .help("probe with the GPU count of the real run"),
        );
    }
    let mut probe = req.clone();
    probe.metadata.name = probe_name(&req.metadata.name);
    // The probe pulls the job's image with the job's pull Secret (created before the probe).
    if let Some(pull) = ngc_pull_secret(req) {
        probe.spec.image_pull_secrets = vec![pull];
    }
    let spec = &mut probe.spec;
    spec.action = "nccl-probe".into();
    spec.command = crate::request::Command {
        args: Some(vec!["python3".into(), "-c".into(), pod_script(NCCL_PROBE)]),
        ..Default::default()
    };
    spec.resources.nodes = Some(2);
    let memory = spec
        .resources
        .memory
        .as_ref()
        .and_then(|q| crate::kube::quantity::parse(&q.0));
    let shm = probe.shm_size().and_then(crate::kube::quantity::parse);
    if let (Some(memory), Some(shm)) = (memory, shm)
        && memory < shm
    {
        return Err(Diagnostic::error(
            OPTION,
            "the NCCL probe's /dev/shm (`shmSize`, 16Gi by default on multi-node) is larger than `memory`",
        )
        .help("set `resources.shmSize` to fit in `memory`"));
    }
    let spec = &mut probe.spec;
    spec.storage = Default::default();
    spec.env = Default::default();
    spec.credentials = Default::default();
    spec.backoff_limit = Some(0);
    spec.active_deadline_seconds = Some(NCCL_PROBE_DEADLINE);
    Ok(probe)
}
