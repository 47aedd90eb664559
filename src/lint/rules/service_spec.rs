use crate::kube::names::{is_dns1123_label, is_port_name};
use crate::lint::api::{DNS1123_LABEL, PORT_NAME, Report, index, int, items, key, shown, text};
use crate::lint::{Document, Findings, Rule, steps};
use crate::yaml::{Node, Step};
use std::collections::HashSet;

const PROTOCOLS: &[&str] = &["TCP", "UDP", "SCTP"];

crate::rule! {
    /// What it checks: a Service's spec, as the API server validates it: `clusterIP: None`
    /// (a headless Service) only with `type: ClusterIP` (the default); `ports` present unless
    /// the Service is headless or `ExternalName`; each port in 1-65535, its `protocol` TCP,
    /// UDP or SCTP, its `targetPort` a port number (1-65535) or a port name (an IANA service
    /// name: at most 15 lowercase letters, digits and `-`, with a letter); with more than one
    /// port, every port named, names DNS-1123 labels and unique; no two ports with the same
    /// `port` and `protocol`; `nodePort` only on NodePort and LoadBalancer Services.
    ///
    /// Why it matters: the API server refuses the Service, so `kubectl apply` fails; when it
    /// comes with a Job (the headless Service of a multi-node training), the pods get no
    /// DNS names and the rendezvous never happens.
    ///
    /// Example: `type: NodePort` with `clusterIP: None`, or two ports without names.
    ///
    /// Fix: name every port (`name: http`), keep `clusterIP: None` for `type: ClusterIP`,
    /// and give each port its own number.
    pub struct ServiceSpec {
        code: "TK414",
        name: "service-spec",
        group: Api,
        severity: Error,
    }
}

impl Rule for ServiceSpec {
    fn check(&self, doc: &Document, out: &mut Findings) {
        if doc.kind != "Service" || doc.api_version != "v1" {
            return;
        }
        let Some((spec_key, spec)) = doc.root.entry("spec") else {
            return;
        };
        let mut report = Report::new(doc, out);
        let kind = spec.get("type").and_then(text).unwrap_or("ClusterIP");
        let headless = headless_only_for_cluster_ip(&mut report, spec, kind);
        let ports = spec.get("ports").map(items).unwrap_or_default();
        if ports.is_empty() && !headless && kind != "ExternalName" {
            ports_needed(&mut report, spec_key, spec);
        }
        let mut names = HashSet::new();
        let mut seen = HashSet::new();
        for (i, port) in ports.iter().enumerate() {
            let at = index(&steps("spec.ports"), i);
            port_name(&mut report, &at, port, ports.len() > 1, &mut names);
            let protocol = protocol(&mut report, &at, port);
            port_number(&mut report, &at, port, protocol, &mut seen);
            target_port(&mut report, &at, port);
            node_port(&mut report, &at, port, kind);
        }
    }
}

/// Whether the Service is headless (`clusterIP: None`), which only a ClusterIP Service may be.
fn headless_only_for_cluster_ip(report: &mut Report, spec: &Node, kind: &str) -> bool {
    let cluster_ip = spec.get("clusterIP");
    let headless = cluster_ip.and_then(text) == Some("None");
    if headless
        && kind != "ClusterIP"
        && let Some(node) = cluster_ip
    {
        report.at(
            steps("spec.clusterIP"),
            node,
            format!("`clusterIP: None` (headless) is only for `type: ClusterIP`, not `{kind}`"),
            "remove `clusterIP: None`, or make the Service `type: ClusterIP`",
        );
    }
    headless
}

/// No `ports` (or an empty list) on a Service that needs them.
fn ports_needed(report: &mut Report, spec_key: &Node, spec: &Node) {
    let (path, node) = match spec.entry("ports") {
        Some((k, _)) => (steps("spec.ports"), k),
        None => (steps("spec"), spec_key),
    };
    report.at(
        path,
        node,
        "a Service needs `ports` unless it is headless (`clusterIP: None`) or ExternalName".into(),
        "",
    );
}

/// A port's name: needed when there are several ports, a DNS-1123 label, unique.
fn port_name<'n>(
    report: &mut Report,
    at: &[Step],
    port: &'n Node,
    several: bool,
    names: &mut HashSet<&'n str>,
) {
    match port.get("name").and_then(text).filter(|n| !n.is_empty()) {
        None if several => report.at(
            at.to_vec(),
            port,
            "a Service with more than one port must name every port".into(),
            "add `name:` (e.g. `http`, `metrics`)",
        ),
        None => {}
        Some(name) => {
            let node = port.get("name").unwrap_or(port);
            if !is_dns1123_label(name) {
                report.at(
                    key(at, "name"),
                    node,
                    format!("port name `{}` must be {DNS1123_LABEL}", shown(node, 80)),
                    "",
                );
            } else if !names.insert(name) {
                report.at(
                    key(at, "name"),
                    node,
                    format!("port name `{name}` is used twice"),
                    "",
                );
            }
        }
    }
}

/// A port's protocol, TCP unless it says otherwise, which must be TCP, UDP or SCTP.
fn protocol<'n>(report: &mut Report, at: &[Step], port: &'n Node) -> &'n str {
    let protocol = port.get("protocol").and_then(text).unwrap_or("TCP");
    if let Some(node) = port.get("protocol")
        && !PROTOCOLS.contains(&protocol)
    {
        report.at(
            key(at, "protocol"),
            node,
            format!(
                "protocol `{}` is not supported: TCP, UDP or SCTP",
                shown(node, 20)
            ),
            "",
        );
    }
    protocol
}

/// A port's number: in 1-65535, and not listed twice with the same protocol.
fn port_number<'n>(
    report: &mut Report,
    at: &[Step],
    port: &Node,
    protocol: &'n str,
    seen: &mut HashSet<(i64, &'n str)>,
) {
    if let Some(node) = port.get("port")
        && let Some(n) = int(node)
    {
        if !(1..=65535).contains(&n) {
            report.at(
                key(at, "port"),
                node,
                format!("port {n} is not in 1-65535"),
                "",
            );
        } else if !seen.insert((n, protocol)) {
            report.at(
                key(at, "port"),
                node,
                format!("port {n}/{protocol} is listed twice"),
                "merge the two entries, or give them different numbers",
            );
        }
    }
}

/// A port's `targetPort`: a number in 1-65535 or a port name.
fn target_port(report: &mut Report, at: &[Step], port: &Node) {
    let Some(node) = port.get("targetPort") else {
        return;
    };
    let problem = match (int(node), text(node)) {
        // 0 and "" mean "the same as `port`".
        (Some(n), _) if !(0..=65535).contains(&n) => {
            Some(format!("target port {n} is not in 1-65535"))
        }
        (_, Some(name)) if !name.is_empty() && !is_port_name(name) => Some(format!(
            "target port `{}` must be a number in 1-65535 or {PORT_NAME}",
            shown(node, 40)
        )),
        _ => None,
    };
    if let Some(message) = problem {
        report.at(key(at, "targetPort"), node, message, "");
    }
}

/// A port's `nodePort`, which a ClusterIP Service does not have.
fn node_port(report: &mut Report, at: &[Step], port: &Node, kind: &str) {
    if let Some(node) = port.get("nodePort")
        && kind == "ClusterIP"
        && int(node).is_some_and(|n| n != 0)
    {
        report.at(
            key(at, "nodePort"),
            node,
            "`nodePort` needs `type: NodePort` or `LoadBalancer`".into(),
            "",
        );
    }
}
