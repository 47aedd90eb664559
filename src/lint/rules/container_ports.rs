use crate::kube::names::is_port_name;
use crate::lint::api::{PORT_NAME, Report, index, int, items, key, shown, text};
use crate::lint::{Document, Findings, Rule};
use std::collections::HashSet;

crate::rule! {
    /// What it checks: the `ports` of every container, as the API server validates them:
    /// `containerPort` set and in 1-65535; `hostPort`, when set and not 0, in 1-65535;
    /// `protocol` TCP, UDP or SCTP; `name`, when set, an IANA service name (at most 15
    /// lowercase letters, digits and `-`, with at least one letter, no `-` at either end, no
    /// `--`), and not used twice in one container. (Port names are checked per container,
    /// as the API server does; a Service's `targetPort` by name picks the first match.) No
    /// two ports of the pod's containers bind one `hostPort` with the same protocol and
    /// `hostIP` (the server's `Duplicate value: "TCP//9101"`); a `hostPort` the API server
    /// fills in for `hostNetwork` pods is not counted. On the host's network (`hostNetwork:
    /// true`) a main container's `hostPort`, when set, is its `containerPort`.
    ///
    /// Why it matters: the API server refuses the pod, or the Job or Deployment whose
    /// template holds it. Port names longer than 15 characters (`prometheus-metrics`) are
    /// the usual slip.
    ///
    /// Example: `ports: [{name: tensorboard-http, containerPort: 6006}]` (16 characters), or
    /// `containerPort: 0`.
    ///
    /// Fix: a short name (`tensorboard`), and the port the process listens on.
    pub struct ContainerPorts {
        code: "TK406",
        name: "container-ports",
        group: Api,
        severity: Error,
    }
}

const PROTOCOLS: &[&str] = &["TCP", "UDP", "SCTP"];

impl Rule for ContainerPorts {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let mut report = Report::new(doc, out);
        // `protocol/hostIP/hostPort` of the main containers' ports, as the API server's
        // `AccumulateUniqueHostPorts` keys them (the protocol defaulted to TCP).
        let mut host_ports = HashSet::new();
        // `validatePodHostNetworkDeps`: on the host's network a main container's `hostPort`
        // is its `containerPort` (defaulted to it when unset).
        let host_network = doc
            .pod_spec()
            .and_then(|(_, spec)| spec.get("hostNetwork"))
            .is_some_and(|n| matches!(n.value, crate::yaml::Value::Bool(true)));
        for (path, container) in doc.containers() {
            let Some(ports) = container.get("ports") else {
                continue;
            };
            let mut names = HashSet::new();
            for (i, port) in items(ports).iter().enumerate() {
                let at = || index(&key(&path.get(), "ports"), i);
                match port.get("containerPort") {
                    None => report.at(
                        at(),
                        port,
                        "a container port has no `containerPort`".into(),
                        "",
                    ),
                    Some(node) => {
                        if let Some(n) = int(node)
                            && !(1..=65535).contains(&n)
                        {
                            report.at(
                                key(&at(), "containerPort"),
                                node,
                                format!("`containerPort: {n}` is not in 1-65535"),
                                "",
                            );
                        }
                    }
                }
                if host_network
                    && path.list() == "containers"
                    && let Some(node) = port.get("hostPort")
                    && let Some(n) = int(node)
                    && n != 0
                    && let Some(c) = port.get("containerPort").and_then(int)
                    && n != c
                {
                    report.at(
                        key(&at(), "hostPort"),
                        node,
                        format!("`hostPort: {n}` is not the `containerPort` ({c}) of a pod on the host's network: the API server refuses it (must match `containerPort` when `hostNetwork` is true)"),
                        "on the host's network the container's port is the node's: drop `hostPort`, or make it the `containerPort`",
                    );
                }
                if let Some(node) = port.get("hostPort")
                    && let Some(n) = int(node)
                    && n != 0
                {
                    if !(1..=65535).contains(&n) {
                        report.at(
                            key(&at(), "hostPort"),
                            node,
                            format!("`hostPort: {n}` is not in 1-65535"),
                            "",
                        );
                    } else if path.list() == "containers" {
                        let protocol = port.get("protocol").and_then(text).unwrap_or("TCP");
                        let ip = port.get("hostIP").and_then(text).unwrap_or("");
                        let bound = format!("{protocol}/{ip}/{n}");
                        if host_ports.contains(&bound) {
                            report.at(
                                key(&at(), "hostPort"),
                                node,
                                format!(
                                    "`hostPort: {n}` is bound twice in this pod (Duplicate value: \"{}\")",
                                    crate::diag::shown(&bound, 80)
                                ),
                                "give each port its own `hostPort`, or drop `hostPort` (a Service \
                                 reaches the container without it)",
                            );
                        } else {
                            host_ports.insert(bound);
                        }
                    }
                }
                if let Some(node) = port.get("protocol")
                    && let Some(p) = text(node)
                    && !PROTOCOLS.contains(&p)
                {
                    report.at(
                        key(&at(), "protocol"),
                        node,
                        format!(
                            "protocol `{}` is not supported: TCP, UDP or SCTP",
                            shown(node, 20)
                        ),
                        "",
                    );
                }
                if let Some(node) = port.get("name")
                    && let Some(name) = text(node)
                {
                    if !is_port_name(name) {
                        let message =
                            format!("port name `{}` must be {PORT_NAME}", shown(node, 40));
                        report.at(
                            key(&at(), "name"),
                            node,
                            message,
                            "shorten it, e.g. `metrics` or `tb-http`",
                        );
                    } else if !names.insert(name) {
                        report.at(
                            key(&at(), "name"),
                            node,
                            format!("port name `{name}` is used twice in this container"),
                            "",
                        );
                    }
                }
            }
        }
    }
}
