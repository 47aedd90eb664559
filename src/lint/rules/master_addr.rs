use crate::kube::names::is_dns1123_label;
use crate::lint::pods::{env_values, jobset_pods, total_pods};
use crate::lint::{Document, Finding, Findings, Rule, steps};
use crate::yaml::{Step, Value};

crate::rule! {
    /// What it checks: in an Indexed Job whose pod template sets `subdomain`, or every
    /// replicated Job of a JobSet, the `MASTER_ADDR` env value of every container and init
    /// container, when written in the manifest. It must be the hostname Kubernetes gives pod 0,
    /// `<job-name>-0.<subdomain>` (in a JobSet, pod 0 of the first replicated Job's first
    /// replica, `<jobset>-<replicated job>-0-0.<subdomain>`, the subdomain being the JobSet's
    /// name unless `spec.network.subdomain` says), optionally followed
    /// by `.<namespace>` or `.<namespace>.svc.<cluster-domain>`. Values from `valueFrom`, values
    /// that expand `$(VAR)`, and `localhost` in a one-pod Job are not findings.
    ///
    /// Why it matters: every node rendezvouses on `MASTER_ADDR`. Any other name is a host that
    /// may not exist, so the pods wait for a rendezvous that never comes, or, with TAO's
    /// entrypoint, every node trains alone, writing to the same results.
    ///
    /// Example: Job `dino-train` with `subdomain: dino-train` and
    /// `MASTER_ADDR: dino-train-master`, or `dino-train-0` without the subdomain.
    ///
    /// Fix: set `MASTER_ADDR` to `dino-train-0.dino-train` (and keep a headless Service named
    /// like the subdomain, selecting the Job's pods).
    pub struct MasterAddr {
        code: "TK307",
        name: "master-addr",
        group: Gpu,
        severity: Error,
    }
}

impl Rule for MasterAddr {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some((host, one_pod)) = pod_zero(doc) else {
            return;
        };
        for env in env_values(doc) {
            let Value::Str(addr) = &env.value.value else {
                continue;
            };
            if env.name != "MASTER_ADDR"
                || addr.contains("$(")
                || names_pod_zero(addr, &host, doc.namespace)
                || (one_pod && matches!(addr.as_str(), "localhost" | "127.0.0.1" | "::1"))
            {
                continue;
            }
            out.push(Finding {
                message: format!(
                    "{}: MASTER_ADDR of container `{}` is `{addr}`, but pod 0 is `{host}`",
                    doc.label(),
                    env.container
                ),
                help: Some(format!(
                    "set it to `{host}` (or `{host}.<namespace>.svc.cluster.local`), the hostname Kubernetes gives pod 0"
                )),
                path: env.path,
                span: env.value.span.clone(),
            });
        }
    }
}

/// The hostname of pod 0 of an Indexed Job whose pods have a subdomain (`<job>-0.<subdomain>`),
/// or of a JobSet with DNS hostnames (`<jobset>-<replicated job>-0-0.<subdomain>`, the
/// subdomain defaulting to the JobSet's name), and whether it runs one pod.
fn pod_zero(doc: &Document) -> Option<(String, bool)> {
    let text = |path: &[Step]| match doc.at(path).map(|n| &n.value) {
        Some(Value::Str(s)) => Some(s.as_str()),
        _ => None,
    };
    let name = text(&steps("metadata.name"))?;
    let completions = |job: &[Step]| {
        let at = [job, &steps("completions")].concat();
        matches!(doc.at(&at).map(|n| &n.value), None | Some(Value::Int(..=1)))
    };
    if doc.jobset_job_path().is_some() {
        let job = doc.jobset_job_path_at(0)?;
        let first = &job[..3];
        let replicated = text(&[first, &steps("name")].concat())?;
        if matches!(
            doc.at(&steps("spec.network.enableDNSHostnames"))
                .map(|n| &n.value),
            Some(Value::Bool(false))
        ) {
            return None;
        }
        let subdomain = text(&steps("spec.network.subdomain")).unwrap_or(name);
        let host = format!("{name}-{replicated}-0-0.{subdomain}");
        // `localhost` only where the whole JobSet is one pod.
        let one_pod = jobset_pods(doc).is_some_and(|jobs| total_pods(&jobs) <= 1);
        return Some((host, one_pod));
    }
    if doc.kind != "Job" || text(&steps("spec.completionMode")) != Some("Indexed") {
        return None;
    }
    let pod = doc.pod_spec_path()?;
    let subdomain = text(&[pod, &steps("subdomain")].concat())?;
    Some((format!("{name}-0.{subdomain}"), completions(&steps("spec"))))
}

/// `host`, `host.<namespace>`, or `host.<namespace>.svc[.<cluster-domain>]`.
fn names_pod_zero(addr: &str, host: &str, namespace: Option<&str>) -> bool {
    let addr = addr.to_ascii_lowercase();
    let Some(rest) = addr.strip_prefix(host) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix('.') else {
        return rest.is_empty();
    };
    let (ns, tail) = rest.split_once('.').unwrap_or((rest, ""));
    let ns_ok = namespace.map_or(is_dns1123_label(ns), |n| n == ns);
    ns_ok && (tail.is_empty() || tail == "svc" || tail.starts_with("svc."))
}

#[cfg(test)]
mod tests {
    use super::names_pod_zero;

    #[test]
    fn pod_zero_names() {
        let host = "j-0.j";
        for ok in [
            "j-0.j",
            "J-0.J",
            "j-0.j.ns",
            "j-0.j.ns.svc",
            "j-0.j.ns.svc.cluster.local",
        ] {
            assert!(names_pod_zero(ok, host, Some("ns")), "{ok}");
        }
        assert!(names_pod_zero("j-0.j.other.svc", host, None));
        for bad in [
            "j-0",
            "j-0.jj",
            "j-0.j.other",
            "j-0.j.ns.cluster.local",
            "j-0.j.ns.svcx",
            "j-1.j",
        ] {
            assert!(!names_pod_zero(bad, host, Some("ns")), "{bad}");
        }
    }
}
