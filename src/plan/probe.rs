//! The NCCL probe: a two-node all-reduce with the request's image, GPUs, scheduling, pull
//! Secret, `/dev/shm` and rendezvous, that the driver runs once per cluster before a
//! multi-node job; and the nvcr.io pull Secret both share.

use super::names::Names;
use super::{OPTION, Workload, pod::pod_script};
use crate::diag::Diagnostic;
use crate::request::ActionRequest;

/// The constant NCCL probe program, run as `python3 -c`.
pub const NCCL_PROBE: &str = include_str!("../../scripts/nccl_probe.py");
/// Seconds a probe may run before its Job fails: a hang becomes a failure.
pub const NCCL_PROBE_DEADLINE: u32 = 300;

/// The prefixes of the environment variables that steer the collective transport (NCCL and
/// PyTorch's use of it, UCX, Gloo, libfabric as EFA uses it): the probe carries the
/// request's, so that a probe tests the transport the job will use, and setting them is the
/// remedy for a probe that hangs.
pub const TRANSPORT_ENV_PREFIXES: &[&str] = &["NCCL_", "TORCH_NCCL_", "UCX_", "GLOO_", "FI_"];

/// The base name of a request's NCCL probe.
pub fn probe_name(name: &str) -> String {
    format!("{name}-nccl-probe")
}

/// The nvcr.io pull Secret the driver script creates from NGC_KEY: for an nvcr.io image when
/// the request names no pull Secret.
/// Its name follows the job's, which the workload bounds.
pub fn ngc_pull_secret(req: &ActionRequest, workload: Workload) -> Option<String> {
    needs_ngc_pull_secret(&req.spec)
        .then(|| Names::derive(&req.metadata.name, req.nodes(), None, workload).pull_secret)
}

/// Whether the pod pulls with the nvcr.io pull Secret the driver creates.
pub fn needs_ngc_pull_secret(spec: &crate::request::Spec) -> bool {
    spec.image.starts_with("nvcr.io/") && spec.image_pull_secrets.is_empty()
}

/// The request of the NCCL probe for `req`: two nodes with its image, GPUs per node,
/// scheduling, pull secrets, `/dev/shm`, rendezvous settings and transport environment
/// ([`TRANSPORT_ENV_PREFIXES`]), running the probe program instead of the action, with no
/// storage, no other environment and no credentials.
/// The probe is a Job whatever runs the action (`workload`), whose pull Secret it shares.
pub fn nccl_probe(req: &ActionRequest, workload: Workload) -> Result<ActionRequest, Diagnostic> {
    if req.spec.resources.gpus_per_node == 0 {
        return Err(
            Diagnostic::error(OPTION, "the NCCL probe needs GPUs, but `gpusPerNode` is 0")
                .help("probe with the GPU count of the real run"),
        );
    }
    let mut probe = req.clone();
    probe.metadata.name = probe_name(&req.metadata.name);
    // The probe pulls the job's image with the job's pull Secret (created before the probe).
    if let Some(pull) = ngc_pull_secret(req, workload) {
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
    spec.env
        .retain(|name, _| TRANSPORT_ENV_PREFIXES.iter().any(|p| name.starts_with(p)));
    spec.credentials = Default::default();
    spec.backoff_limit = Some(0);
    // The action's exit codes say nothing of the probe's; a drained node still is no failure.
    spec.retries = Default::default();
    spec.active_deadline_seconds = Some(NCCL_PROBE_DEADLINE);
    Ok(probe)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(env: &str) -> ActionRequest {
        let source = crate::plan::test_request(&format!(
            "  command: {{args: [dino, train]}}\n  \
             resources: {{gpusPerNode: 8, nodes: 2, memory: 64Gi}}\n  \
             storage: {{mounts: [{{name: r, persistentVolumeClaim: r, mountPath: /results}}]}}\n  \
             env: {env}\n"
        ));
        crate::request::load(&source).unwrap().request
    }

    #[test]
    fn the_probe_keeps_the_transport_env_and_nothing_else() {
        let probe = nccl_probe(
            &request(
                "{NCCL_SOCKET_IFNAME: eth0, NCCL_IB_DISABLE: '1', TORCH_NCCL_BLOCKING_WAIT: '1', \
             UCX_TLS: tcp, GLOO_SOCKET_IFNAME: eth0, FI_PROVIDER: efa, DATASET: coco, \
             MY_NCCL_NOTE: x}",
            ),
            Workload::IndexedJob,
        )
        .unwrap();
        let names: Vec<&str> = probe.spec.env.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "FI_PROVIDER",
                "GLOO_SOCKET_IFNAME",
                "NCCL_IB_DISABLE",
                "NCCL_SOCKET_IFNAME",
                "TORCH_NCCL_BLOCKING_WAIT",
                "UCX_TLS"
            ]
        );
        assert_eq!(probe.spec.env["NCCL_SOCKET_IFNAME"], "eth0");
    }
}
