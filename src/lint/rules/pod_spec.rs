use crate::kube::names::{DNS1123_SUBDOMAIN, is_dns1123_subdomain};
use crate::lint::api::{Report, index, int, items, key, shown, text};
use crate::lint::{Document, Findings, Rule};
use crate::yaml::{Node, Value};
use std::net::IpAddr;

crate::rule! {
    /// What it checks: the pod-level fields of a pod spec (a Pod's, or a template's), as the
    /// API server's `ValidatePodSpec` checks them: at least one container; `restartPolicy`
    /// only on init containers, and there only `Always` (a sidecar);
    /// `activeDeadlineSeconds` at least 1; `serviceAccountName`, `runtimeClassName` and
    /// `priorityClassName` DNS-1123 subdomains; `dnsPolicy: None` with a `dnsConfig`, at most
    /// three `nameservers`, each an IP address; `hostAliases` with an IP address and
    /// DNS-1123 subdomain host names; not `shareProcessNamespace` together with `hostPID`;
    /// `schedulingGates` named by qualified names, each once.
    ///
    /// Why it matters: the API server refuses the pod, or the Job whose template holds it.
    /// `runtimeClassName: nvidia_runtime` (an underscore) and `activeDeadlineSeconds: 0`
    /// meant as "no deadline" are the usual slips on GPU jobs.
    ///
    /// Example: `runtimeClassName: nvidia_runtime`; `dnsPolicy: None` without `dnsConfig`;
    /// `restartPolicy: OnFailure` on an init container.
    ///
    /// Fix: lowercase names with `-`; leave `activeDeadlineSeconds` out for no deadline;
    /// `restartPolicy` only on sidecar init containers (`Always`).
    pub struct PodSpec {
        code: "TK421",
        name: "pod-spec",
        group: Api,
        severity: Error,
    }
}

impl Rule for PodSpec {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some((pod, spec)) = doc.pod_spec() else {
            return;
        };
        let mut report = Report::new(doc, out);
        match spec.entry("containers") {
            Some((k, list)) if matches!(&list.value, Value::Seq(s) if s.is_empty()) => {
                report.at(
                    key(pod, "containers"),
                    k,
                    "a pod with no container: the API server refuses it (Required value)".into(),
                    "",
                );
            }
            _ => {}
        }
        for (list, allowed) in [("containers", None), ("initContainers", Some("Always"))] {
            for (i, c) in spec
                .get(list)
                .map(items)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                let Some(node) = c.get("restartPolicy") else {
                    continue;
                };
                let at = key(&index(&key(pod, list), i), "restartPolicy");
                match allowed {
                    None => report.at(at, node, "`restartPolicy` on a regular container: the API server refuses it (may not be set for non-init containers)".into(), "set it on the pod, or make the container a sidecar init container"),
                    Some(a) if text(node) != Some(a) => report.at(at, node, format!("`restartPolicy: {}` on an init container: the API server refuses it (supported: `Always`, a sidecar)", shown(node, 40)), "remove it: init containers run once by default"),
                    _ => {}
                }
            }
        }
        if let Some(node) = spec.get("activeDeadlineSeconds")
            && int(node).is_some_and(|n| n < 1)
        {
            report.at(
                key(pod, "activeDeadlineSeconds"),
                node,
                format!(
                    "`activeDeadlineSeconds: {}` must be at least 1: the API server refuses it",
                    shown(node, 20)
                ),
                "leave it out for no deadline",
            );
        }
        for field in [
            "serviceAccountName",
            "runtimeClassName",
            "priorityClassName",
        ] {
            if let Some(node) = spec.get(field)
                && let Some(name) = text(node)
                && !name.is_empty()
                && !is_dns1123_subdomain(name)
            {
                report.at(key(pod, field), node, format!("`{field}: {}` is not a valid name: the API server refuses it ({DNS1123_SUBDOMAIN})", shown(node, 80)), "");
            }
        }
        // `validateSchedulingGates`: qualified names, each once; the server names the item.
        let mut gates = std::collections::HashSet::new();
        for (i, gate) in spec
            .get("schedulingGates")
            .map(items)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let Some(name) = gate.get("name").and_then(text) else {
                continue;
            };
            let at = index(&key(pod, "schedulingGates"), i);
            if !crate::kube::names::is_qualified_name(name) {
                report.at(
                    at,
                    gate,
                    format!(
                        "scheduling gate `{}` is not a qualified name: the API server refuses it (a name of letters, digits, `-`, `_` and `.`, optionally prefixed by a DNS subdomain and `/`)",
                        crate::diag::shown(name, 80)
                    ),
                    "name gates like labels, e.g. `example.com/quota`",
                );
            } else if !gates.insert(name) {
                report.at(
                    at,
                    gate,
                    format!("scheduling gate `{name}` is listed twice: the API server refuses it (Duplicate value)"),
                    "",
                );
            }
        }
        dns(&mut report, pod, spec);
        for (i, alias) in spec
            .get("hostAliases")
            .map(items)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let at = index(&key(pod, "hostAliases"), i);
            if let Some(node) = alias.get("ip")
                && let Some(ip) = text(node)
                && ip.parse::<IpAddr>().is_err()
            {
                report.at(
                    key(&at, "ip"),
                    node,
                    format!(
                        "`ip: {}` is not an IP address: the API server refuses it",
                        shown(node, 60)
                    ),
                    "",
                );
            }
            for (j, h) in alias
                .get("hostnames")
                .map(items)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                if let Some(name) = text(h)
                    && !is_dns1123_subdomain(name)
                {
                    report.at(index(&key(&at, "hostnames"), j), h, format!("host name `{}` is not valid: the API server refuses it ({DNS1123_SUBDOMAIN})", shown(h, 80)), "");
                }
            }
        }
        if let Some(node) = spec.get("shareProcessNamespace")
            && matches!(node.value, Value::Bool(true))
            && matches!(
                spec.get("hostPID").map(|n| &n.value),
                Some(Value::Bool(true))
            )
        {
            report.at(key(pod, "shareProcessNamespace"), node, "`shareProcessNamespace` with `hostPID`: the API server refuses it (they cannot both be enabled)".into(), "");
        }
    }
}

/// `dnsPolicy: None` needs a `dnsConfig`; at most three nameservers, each an IP address.
fn dns(report: &mut Report, pod: &[crate::yaml::Step], spec: &Node) {
    if let Some((k, policy)) = spec.entry("dnsPolicy")
        && text(policy) == Some("None")
        && spec.get("dnsConfig").is_none()
    {
        report.at(key(pod, "dnsPolicy"), k, "`dnsPolicy: None` without a `dnsConfig`: the API server refuses it (must provide `dnsConfig` when `dnsPolicy` is None)".into(), "");
    }
    let Some(servers) = spec.get("dnsConfig").and_then(|c| c.get("nameservers")) else {
        return;
    };
    let at = key(&key(pod, "dnsConfig"), "nameservers");
    let list = items(servers);
    if list.len() > 3 {
        report.at(
            at.clone(),
            servers,
            format!(
                "{} nameservers: the API server refuses more than 3",
                list.len()
            ),
            "",
        );
    }
    for (i, s) in list.iter().enumerate() {
        if let Some(ip) = text(s)
            && ip.parse::<IpAddr>().is_err()
        {
            report.at(
                index(&at, i),
                s,
                format!(
                    "nameserver `{}` is not an IP address: the API server refuses it",
                    shown(s, 60)
                ),
                "",
            );
        }
    }
}
