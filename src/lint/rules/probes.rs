use crate::kube::names::is_port_name;
use crate::lint::api::{Report, int, key, shown, text};
use crate::lint::{Document, Findings, Rule};
use crate::yaml::{Node, Step, Value};

crate::rule! {
    /// What it checks: the probes and lifecycle hooks of every container, as the API server's
    /// `validateProbe`, `validateHandler` and `validateLifecycle` check them: exactly one
    /// handler (`exec`, `httpGet`, `tcpSocket`, `grpc`; `sleep` in hooks); `exec` with a
    /// `command`; ports in 1-65535 or a port name; no negative delays, periods, timeouts or
    /// thresholds; `successThreshold` 1 for liveness and startup probes; no
    /// `terminationGracePeriodSeconds` on a readiness probe; no probes on an init container
    /// unless it is a sidecar (`restartPolicy: Always`).
    ///
    /// Why it matters: the API server refuses the pod, or the Job or Deployment whose
    /// template holds it. Probes copied between containers (a readiness probe's
    /// `successThreshold: 3` turned into a liveness probe) are the usual slip.
    ///
    /// Example: `livenessProbe: {successThreshold: 3, httpGet: {port: 8080, path: /healthz}}`;
    /// a probe with both `httpGet` and `tcpSocket`; `periodSeconds: -10`.
    ///
    /// Fix: one handler per probe; `successThreshold: 1` (or unset) for liveness and startup.
    pub struct Probes {
        code: "TK420",
        name: "probes",
        group: Api,
        severity: Error,
    }
}

const PROBES: &[&str] = &["livenessProbe", "readinessProbe", "startupProbe"];
const PROBE_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "grpc"];
const HOOK_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "sleep"];
const COUNTS: &[&str] = &[
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
];

impl Rule for Probes {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let mut report = Report::new(doc, out);
        for (path, container) in doc.containers() {
            let at = path.get();
            let sidecar = container.get("restartPolicy").and_then(text) == Some("Always");
            for &name in PROBES {
                let Some((k, probe)) = container.entry(name) else {
                    continue;
                };
                let here = key(&at, name);
                if path.list() == "initContainers" && !sidecar {
                    report.at(
                        here.clone(),
                        k,
                        format!("an init container has a `{name}`: the API server refuses it (may not be set for init containers without `restartPolicy: Always`)"),
                        "probe the main containers, or make this a sidecar (`restartPolicy: Always`)",
                    );
                    continue;
                }
                probe_fields(&mut report, &here, name, probe);
                handler(&mut report, &here, k, probe, PROBE_HANDLERS, name);
            }
            if let Some(lifecycle) = container.get("lifecycle") {
                for hook in ["postStart", "preStop"] {
                    if let Some((k, h)) = lifecycle.entry(hook) {
                        let here = key(&key(&at, "lifecycle"), hook);
                        handler(&mut report, &here, k, h, HOOK_HANDLERS, hook);
                    }
                }
            }
        }
    }
}

/// The counts of a probe, and what each kind of probe forbids.
fn probe_fields(report: &mut Report, at: &[Step], name: &str, probe: &Node) {
    for &field in COUNTS {
        if let Some(node) = probe.get(field)
            && int(node).is_some_and(|n| n < 0)
        {
            report.at(
                key(at, field),
                node,
                format!("`{field}: {}` is negative: the API server refuses it (must be greater than or equal to 0)", shown(node, 20)),
                "",
            );
        }
    }
    if name != "readinessProbe"
        && let Some(node) = probe.get("successThreshold")
        && int(node).is_some_and(|n| n > 1)
    {
        report.at(
            key(at, "successThreshold"),
            node,
            format!(
                "`successThreshold: {}` on a {name}: the API server refuses it (must be 1)",
                shown(node, 20)
            ),
            "a liveness or startup probe succeeds once; leave `successThreshold` unset",
        );
    }
    if let Some(node) = probe.get("terminationGracePeriodSeconds") {
        if name == "readinessProbe" {
            report.at(
                key(at, "terminationGracePeriodSeconds"),
                node,
                "`terminationGracePeriodSeconds` on a readiness probe: the API server refuses it (must not be set for readinessProbes)".into(),
                "a failing readiness probe kills nothing; set it on the liveness or startup probe",
            );
        } else if int(node).is_some_and(|n| n <= 0) {
            report.at(
                key(at, "terminationGracePeriodSeconds"),
                node,
                "`terminationGracePeriodSeconds` must be greater than 0: the API server refuses it"
                    .into(),
                "",
            );
        }
    }
}

/// Exactly one handler of `allowed`, each well formed.
fn handler(report: &mut Report, at: &[Step], k: &Node, node: &Node, allowed: &[&str], what: &str) {
    let Value::Map(entries) = &node.value else {
        return;
    };
    let set: Vec<(&Node, &str, &Node)> = entries
        .iter()
        .filter(|(_, v)| !matches!(v.value, Value::Null))
        .filter_map(|(k, v)| Some((k, text(k)?, v)))
        .filter(|(_, name, _)| allowed.contains(name))
        .collect();
    match set.as_slice() {
        [] => report.at(
            at.to_vec(),
            k,
            format!(
                "`{what}` has no handler: the API server refuses it (must specify a handler type)"
            ),
            &format!(
                "give it one of {}",
                allowed
                    .iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        [_] => {}
        [_, rest @ ..] => {
            for (k, name, _) in rest {
                report.at(
                    key(at, name),
                    k,
                    format!("`{what}` has more than one handler: the API server refuses it (may not specify more than 1 handler type)"),
                    "keep one handler",
                );
            }
        }
    }
    for (_, name, h) in set {
        let here = key(at, name);
        match name {
            "exec"
                if h.get("command")
                    .is_none_or(|c| matches!(&c.value, Value::Seq(s) if s.is_empty())) =>
            {
                let (path, node) = match h.get("command") {
                    Some(c) => (key(&here, "command"), c),
                    None => (here, h),
                };
                report.at(
                    path,
                    node,
                    "`exec` has no `command`: the API server refuses it (Required value)".into(),
                    "",
                );
            }
            "httpGet" | "tcpSocket" | "grpc" => {
                if let Some(port) = h.get("port")
                    && !port_ok(port, name == "grpc")
                {
                    report.at(
                        key(&here, "port"),
                        port,
                        format!("`port: {}` is not a port: the API server refuses it (a number in 1-65535{})", shown(port, 40), if name == "grpc" { "" } else { ", or a port name" }),
                        "",
                    );
                }
            }
            _ => {}
        }
    }
}

/// A port number in 1-65535, or (unless `number_only`) an IANA port name.
fn port_ok(node: &Node, number_only: bool) -> bool {
    match &node.value {
        Value::Int(n) => (1..=65535).contains(n),
        Value::Str(s) => !number_only && is_port_name(s),
        _ => true,
    }
}
