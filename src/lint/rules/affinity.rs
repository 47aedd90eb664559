use crate::lint::api::{LABEL_VALUE, Report, index, int, items, key, shown, text};
use crate::lint::{Document, Findings, Rule};
use crate::yaml::{Node, Step};

crate::rule! {
    /// What it checks: the pod's `affinity`, as the API server's `validateAffinity` checks
    /// it: a required node affinity has at least one node selector term; each node selector
    /// requirement has a known operator (`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`,
    /// `Lt`), values with `In` and `NotIn`, none with `Exists` and `DoesNotExist`, one
    /// integer with `Gt` and `Lt`, and in a required term label values with `In` and `NotIn`
    /// (a value with a space matches no node); preferred terms weigh 1 to 100; pod
    /// (anti-)affinity terms name a `topologyKey`.
    ///
    /// Why it matters: the API server refuses the pod, or the Job whose template holds it.
    /// Pinning a training to a GPU model (`nvidia.com/gpu.product In [...]`) by hand is where
    /// a lowercase `in` or a forgotten `values` slips in.
    ///
    /// Example: `{key: nvidia.com/gpu.product, operator: in, values: [NVIDIA-A100-SXM4-80GB]}`;
    /// `weight: 0`; `topologyKey: ""` in a pod anti-affinity.
    ///
    /// Fix: the operators as written above, values as they require, weights 1-100, and a
    /// node label as the topology key (`kubernetes.io/hostname`).
    pub struct Affinity {
        code: "TK422",
        name: "affinity",
        group: Api,
        severity: Error,
    }
}

const OPERATORS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];

impl Rule for Affinity {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some((pod, spec)) = doc.pod_spec() else {
            return;
        };
        let Some(affinity) = spec.get("affinity") else {
            return;
        };
        let mut report = Report::new(doc, out);
        let at = key(pod, "affinity");
        if let Some(node) = affinity.get("nodeAffinity") {
            let here = key(&at, "nodeAffinity");
            if let Some(required) = node.get("requiredDuringSchedulingIgnoredDuringExecution") {
                let req = key(&here, "requiredDuringSchedulingIgnoredDuringExecution");
                match required.entry("nodeSelectorTerms") {
                    Some((k, terms)) if items(terms).is_empty() => report.at(
                        key(&req, "nodeSelectorTerms"),
                        k,
                        "a required node affinity with no node selector term: the API server refuses it (must have at least one node selector term)".into(),
                        "",
                    ),
                    Some((_, terms)) => {
                        for (i, term) in items(terms).iter().enumerate() {
                            let t = index(&key(&req, "nodeSelectorTerms"), i);
                            requirements(&mut report, &t, term, true);
                        }
                    }
                    None => {}
                }
            }
            let preferred = node.get("preferredDuringSchedulingIgnoredDuringExecution");
            for (i, p) in preferred.map(items).unwrap_or_default().iter().enumerate() {
                let t = index(
                    &key(&here, "preferredDuringSchedulingIgnoredDuringExecution"),
                    i,
                );
                weight(&mut report, &t, p);
                if let Some(preference) = p.get("preference") {
                    requirements(&mut report, &key(&t, "preference"), preference, false);
                }
            }
        }
        for kind in ["podAffinity", "podAntiAffinity"] {
            let Some(node) = affinity.get(kind) else {
                continue;
            };
            let here = key(&at, kind);
            let field = "requiredDuringSchedulingIgnoredDuringExecution";
            for (i, term) in node
                .get(field)
                .map(items)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                topology_key(&mut report, &index(&key(&here, field), i), term);
            }
            let field = "preferredDuringSchedulingIgnoredDuringExecution";
            for (i, p) in node
                .get(field)
                .map(items)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                let t = index(&key(&here, field), i);
                weight(&mut report, &t, p);
                if let Some(term) = p.get("podAffinityTerm") {
                    topology_key(&mut report, &key(&t, "podAffinityTerm"), term);
                }
            }
        }
    }
}

/// The `matchExpressions` and `matchFields` of a node selector term; in a `required` term,
/// the values of a label requirement are label values (`ValidateNodeSelectorRequirement` with
/// the create options of the API server).
fn requirements(report: &mut Report, at: &[Step], term: &Node, required: bool) {
    for list in ["matchExpressions", "matchFields"] {
        for (i, r) in term
            .get(list)
            .map(items)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let here = index(&key(at, list), i);
            let Some(op_node) = r.get("operator") else {
                continue;
            };
            let Some(op) = text(op_node) else {
                continue;
            };
            let values = r.get("values").map(items).unwrap_or_default();
            let problem = match op {
                _ if !OPERATORS.contains(&op) => Some(format!(
                    "`operator: {}` is not a node selector operator: the API server refuses it (`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt` or `Lt`)",
                    shown(op_node, 40)
                )),
                "In" | "NotIn" if values.is_empty() => Some(format!(
                    "`operator: {op}` with no `values`: the API server refuses it (must be specified when `operator` is 'In' or 'NotIn')"
                )),
                "Exists" | "DoesNotExist" if !values.is_empty() => Some(format!(
                    "`operator: {op}` with `values`: the API server refuses it (may not be specified when `operator` is 'Exists' or 'DoesNotExist')"
                )),
                "Gt" | "Lt"
                    if values.len() != 1
                        || text(&values[0]).is_none_or(|v| v.parse::<i64>().is_err()) =>
                {
                    Some(format!(
                        "`operator: {op}` needs exactly one integer in `values`: the API server refuses it"
                    ))
                }
                _ => None,
            };
            if required && list == "matchExpressions" && matches!(op, "In" | "NotIn") {
                for (j, v) in values.iter().enumerate() {
                    if let Some(value) = text(v)
                        && !crate::kube::names::is_label_value(value)
                    {
                        report.at(
                            index(&key(&here, "values"), j),
                            v,
                            format!(
                                "`{}` is not a label value, so no node's label can equal it: the API server refuses it in a required node affinity ({LABEL_VALUE})",
                                shown(v, 80)
                            ),
                            "node labels hold no spaces: use the label's value as the node shows it (`kubectl get nodes --show-labels`), e.g. `NVIDIA-A100-SXM4-80GB`",
                        );
                    }
                }
            }
            // A known operator's problem is its `values`, where the API server reports it.
            if let Some(message) = problem {
                if OPERATORS.contains(&op) {
                    let node = r.entry("values").map_or(op_node, |(k, _)| k);
                    report.at(key(&here, "values"), node, message, "");
                } else {
                    report.at(key(&here, "operator"), op_node, message, "");
                }
            }
        }
    }
}

/// A preferred term's `weight`: 1 to 100.
fn weight(report: &mut Report, at: &[Step], term: &Node) {
    if let Some(node) = term.get("weight")
        && int(node).is_some_and(|w| !(1..=100).contains(&w))
    {
        report.at(
            key(at, "weight"),
            node,
            format!(
                "`weight: {}` is not in 1-100: the API server refuses it",
                shown(node, 20)
            ),
            "",
        );
    }
}

/// A pod affinity term names a `topologyKey`.
fn topology_key(report: &mut Report, at: &[Step], term: &Node) {
    match term.get("topologyKey") {
        Some(node) if text(node) == Some("") => report.at(
            key(at, "topologyKey"),
            node,
            "an empty `topologyKey`: the API server refuses it (can not be empty)".into(),
            "a node label such as `kubernetes.io/hostname` or `topology.kubernetes.io/zone`",
        ),
        _ => {}
    }
}
