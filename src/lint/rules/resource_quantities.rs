use crate::kube::quantity;
use crate::lint::api::{ContainerPath, Report, entries, key, shown, under};
use crate::lint::{Document, Findings, Rule};
use crate::yaml::{Node, Step, Value, key_text};

crate::rule! {
    /// What it checks: the `resources` of every container: each request and limit is a
    /// valid quantity (`500m`, `64Gi`, `2`) and not negative; a request is at most the limit
    /// of the same resource; an extended resource (a name with a domain outside
    /// `kubernetes.io`, such as `nvidia.com/gpu`) is a whole number. (That an extended
    /// resource's request equals its limit is `gpu-limit`, TK301.) Each name is one a container
    /// can have: `cpu`, `memory`, `ephemeral-storage`, `hugepages-<size>`, or a qualified name
    /// with a domain (the API server's `validateContainerResourceName`). Huge pages come with
    /// a `cpu` or `memory` request or limit.
    ///
    /// Why it matters: the API server refuses the pod, or the Job whose template holds it
    /// (`must be less than or equal to memory limit`, `must be an integer`). A GPU limit of `0.5` or a memory request raised
    /// without its limit are the usual slips.
    ///
    /// Example: `requests: {memory: 64Gi}` with `limits: {memory: 32Gi}`; `limits: {gpu: 1}`;
    /// `limits: {nvidia.com/gpu: 0.5}`; `memory: 64GB` (not a quantity: `64G` or `64Gi`).
    ///
    /// Fix: raise the limit or lower the request; give extended resources whole numbers.
    pub struct ResourceQuantities {
        code: "TK408",
        name: "resource-quantities",
        group: Api,
        severity: Error,
    }
}

/// Extended resources: a domain-prefixed name outside `kubernetes.io` (not `requests.`).
fn is_extended(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// Whether a container may have resource `name` (the API server's
/// `validateContainerResourceName`): without a domain, one of the standard container
/// resources; with one, a qualified name.
fn is_container_resource(name: &str) -> bool {
    match name.split_once('/') {
        None => {
            matches!(name, "cpu" | "memory" | "ephemeral-storage")
                || name
                    .strip_prefix("hugepages-")
                    .is_some_and(|s| !s.is_empty())
        }
        Some(_) => crate::kube::names::is_qualified_name(name),
    }
}

/// The value of a quantity node (`None` if it is not one).
fn value(node: &Node) -> Option<f64> {
    match &node.value {
        Value::Int(n) => Some(*n as f64),
        Value::Float(f) => Some(*f),
        Value::Str(s) => quantity::parse(s),
        _ => None,
    }
}

/// The quantities of `resources.<list>` that are valid, with their nodes and values; the
/// others are reported.
fn valid<'n>(
    report: &mut Report,
    path: &ContainerPath,
    list: &str,
    entries: &'n [(Node, Node)],
) -> Vec<(std::borrow::Cow<'n, str>, &'n Node, f64)> {
    let mut out = Vec::new();
    for (k, v) in entries {
        let name = key_text(k);
        let at = || {
            let mut at = path.get();
            at.extend([
                Step::Key("resources".into()),
                Step::Key(list.to_string().into()),
            ]);
            key(&at, &name)
        };
        if !is_container_resource(&name) {
            let help = if name.to_ascii_lowercase().contains("gpu") {
                "GPUs are an extended resource of their device plugin: `nvidia.com/gpu`"
            } else {
                "use `cpu`, `memory`, `ephemeral-storage`, `hugepages-<size>`, or an extended resource with its domain (`nvidia.com/gpu`)"
            };
            report.at(
                at(),
                k,
                format!(
                    "{list} `{}` is not a resource a container can have: the API server refuses it (must be a standard resource for containers, or a qualified name with a domain)",
                    shown(k, 60)
                ),
                help,
            );
            continue;
        }
        let Some(q) = value(v) else {
            if !matches!(v.value, Value::Null) {
                let message = format!(
                    "{list} `{name}: {}` is not a quantity (like `500m`, `64Gi` or `2`)",
                    shown(v, 40)
                );
                report.at(at(), v, message, "");
            }
            continue;
        };
        if q < 0.0 {
            report.at(
                at(),
                v,
                format!("{list} `{name}: {}` is negative", shown(v, 40)),
                "",
            );
        } else if is_extended(&name) && q.fract() != 0.0 {
            let message = format!(
                "{list} `{name}: {}` must be a whole number: `{name}` is an extended resource, counted in units",
                shown(v, 40)
            );
            report.at(at(), v, message, "");
        } else {
            out.push((name, v, q));
        }
    }
    out
}

impl Rule for ResourceQuantities {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let mut report = Report::new(doc, out);
        for (path, container) in doc.containers() {
            let Some(resources) = container.get("resources") else {
                continue;
            };
            let limits = resources.get("limits").map(entries).unwrap_or_default();
            let requests = resources.get("requests").map(entries).unwrap_or_default();
            // `validateResourceRequirements`: huge pages come with cpu or memory.
            let names: Vec<_> = limits
                .iter()
                .chain(requests)
                .map(|(k, _)| key_text(k))
                .collect();
            if names.iter().any(|n| n.starts_with("hugepages-"))
                && !names.iter().any(|n| n == "cpu" || n == "memory")
            {
                report.at(
                    under(&path.get(), "resources"),
                    resources,
                    "huge pages without `cpu` or `memory`: the API server refuses it (HugePages require cpu or memory)".into(),
                    "request (or limit) the memory the container uses besides its huge pages",
                );
            }
            let limits = valid(&mut report, path, "limits", limits);
            let requests = valid(&mut report, path, "requests", requests);
            for (name, node, request) in requests {
                let limit = limits.iter().find(|(n, ..)| *n == name);
                // Extended resources (request equal to the limit) are `gpu-limit`'s (TK301).
                if let Some((_, l, limit)) = limit
                    && !is_extended(&name)
                    && request > *limit
                {
                    report.at(
                        key(&under(&path.get(), "resources.requests"), &name),
                        node,
                        format!(
                            "the `{name}` request ({}) is above its limit ({})",
                            shown(node, 20),
                            shown(l, 20)
                        ),
                        "raise the limit or lower the request",
                    );
                }
            }
        }
    }
}
