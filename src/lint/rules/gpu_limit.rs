use crate::kube::quantity;
use crate::lint::pods::{ALL_CONTAINERS, container_name, containers, scalar_text};
use crate::lint::{Document, Finding, Findings, Rule};
use crate::yaml::{Node, Step, Value, key_text};

crate::rule! {
    /// What it checks: every container and init container (of a Pod, or of the pod template
    /// of a Job, CronJob, Deployment, StatefulSet…) that requests `nvidia.com/gpu`, or any
    /// other extended resource (a MIG slice `nvidia.com/mig-1g.10gb`, an RDMA device
    /// `rdma/hca_shared_devices_a`: a resource name with a domain outside `kubernetes.io`),
    /// in `resources.requests` without a limit for it, or with a request different from its
    /// limit (compared as quantities: `"8"` equals `8`).
    ///
    /// Why it matters: GPUs and other extended resources cannot be overcommitted: the API
    /// server refuses a pod template whose request for one has no limit or differs from it,
    /// so the Job or Deployment is not created (for a Helm chart, the whole release fails).
    ///
    /// Example: `resources: {requests: {nvidia.com/gpu: 8}}` with no `limits`, or
    /// `requests: {nvidia.com/gpu: 4}` beside `limits: {nvidia.com/gpu: 8}`.
    ///
    /// Fix: set the GPU count in `resources.limits`; the request defaults to the limit, so
    /// drop it from `requests`, or keep it equal to the limit.
    pub struct GpuLimit {
        code: "TK301",
        name: "gpu-limit",
        group: Gpu,
        severity: Error,
    }
}

impl Rule for GpuLimit {
    fn check(&self, doc: &Document, out: &mut Findings) {
        for (path, container) in containers(doc, ALL_CONTAINERS) {
            let Some(resources) = container.get("resources") else {
                continue;
            };
            let Some(Value::Map(requests)) = resources.get("requests").map(|n| &n.value) else {
                continue;
            };
            let limits = resources.get("limits");
            for (key, request) in requests {
                let resource = key_text(key);
                if !is_extended(&resource) {
                    continue;
                }
                let mut at = path.get();
                at.extend(
                    ["resources", "requests", resource.as_ref()]
                        .map(|k| Step::Key(k.to_string().into())),
                );
                let name = container_name(container);
                match limits.and_then(|l| l.get(&resource)) {
                    None => out.push(Finding {
                        message: format!(
                            "container `{name}` of {} requests `{resource}: {}` but sets no limit for it: the API server refuses a request for an extended resource without a limit",
                            doc.label(),
                            scalar_text(request)
                        ),
                        help: Some(format!(
                            "set `resources.limits.{resource}` (the request defaults to it, so the request can go)"
                        )),
                        path: at,
                        span: key.span.clone(),
                    }),
                    Some(limit) => {
                        let (Some(r), Some(l)) = (amount(request), amount(limit)) else {
                            continue;
                        };
                        if r != l {
                            out.push(Finding {
                                message: format!(
                                    "container `{name}` of {} requests `{resource}: {}` but limits it to {}: the API server refuses a request for an extended resource that differs from its limit",
                                    doc.label(),
                                    scalar_text(request),
                                    scalar_text(limit)
                                ),
                                help: Some(format!(
                                    "drop `resources.requests.{resource}` (it defaults to the limit) or make it equal to the limit"
                                )),
                                path: at,
                                span: request.span.clone(),
                            });
                        }
                    }
                }
            }
        }
    }
}

/// Whether a resource is an extended resource (`nvidia.com/gpu`, `rdma/hca`): a name with a
/// domain outside `kubernetes.io`, which the API server does not let a pod overcommit.
fn is_extended(resource: &str) -> bool {
    resource
        .split_once('/')
        .is_some_and(|(domain, _)| domain != "kubernetes.io" && !domain.ends_with(".kubernetes.io"))
}

/// A resource amount as a number: an integer, a float or a quantity string.
fn amount(node: &Node) -> Option<f64> {
    match &node.value {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Str(s) => quantity::parse(s),
        _ => None,
    }
}
