use crate::lint::api::{Report, index, int, items, key, shown, text};
use crate::lint::{Document, Findings, Rule};
use std::collections::HashMap;

crate::rule! {
    /// What it checks: the pod's `topologySpreadConstraints`, as the API server's
    /// `validateTopologySpreadConstraints` checks them: `maxSkew` above zero; a
    /// `topologyKey`; `whenUnsatisfiable` `DoNotSchedule` or `ScheduleAnyway`; `minDomains`,
    /// when set, above zero and only with `DoNotSchedule`; no two constraints with the same
    /// `topologyKey` and `whenUnsatisfiable`.
    ///
    /// Why it matters: the API server refuses the pod, or the Job whose template holds it.
    /// Spreading the ranks of a multi-node training over hosts or zones is where these are
    /// written, and a constraint copied twice with another `maxSkew` is the usual slip.
    ///
    /// Example: two constraints on `kubernetes.io/hostname` with `DoNotSchedule`;
    /// `maxSkew: 0`; `minDomains: 2` with `ScheduleAnyway`.
    ///
    /// Fix: one constraint per key and action, `maxSkew: 1` or more, `minDomains` only with
    /// `DoNotSchedule`.
    pub struct TopologySpread {
        code: "TK418",
        name: "topology-spread",
        group: Api,
        severity: Error,
    }
}

const ACTIONS: &[&str] = &["DoNotSchedule", "ScheduleAnyway"];

impl Rule for TopologySpread {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some((pod, spec)) = doc.pod_spec() else {
            return;
        };
        let Some(constraints) = spec.get("topologySpreadConstraints") else {
            return;
        };
        let mut report = Report::new(doc, out);
        let list = key(pod, "topologySpreadConstraints");
        let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
        for (i, c) in items(constraints).iter().enumerate() {
            let at = index(&list, i);
            if let Some(node) = c.get("maxSkew")
                && int(node).is_some_and(|n| n <= 0)
            {
                report.at(
                    key(&at, "maxSkew"),
                    node,
                    format!(
                        "`maxSkew: {}` must be greater than zero: the API server refuses it",
                        shown(node, 20)
                    ),
                    "1 spreads the pods as evenly as the domains allow",
                );
            }
            let topology_key = c.get("topologyKey").and_then(text);
            if topology_key.is_none_or(str::is_empty) {
                report.at(
                    at.clone(),
                    c,
                    "a topology spread constraint has no `topologyKey`: the API server refuses it".into(),
                    "name the node label to spread over (`kubernetes.io/hostname`, `topology.kubernetes.io/zone`)",
                );
            }
            let action_node = c.get("whenUnsatisfiable");
            let action = action_node.and_then(text);
            if let (Some(node), Some(a)) = (action_node, action)
                && !ACTIONS.contains(&a)
            {
                report.at(
                    key(&at, "whenUnsatisfiable"),
                    node,
                    format!(
                        "`whenUnsatisfiable: {}` is not `DoNotSchedule` or `ScheduleAnyway`: the API server refuses it",
                        shown(node, 40)
                    ),
                    "",
                );
            }
            if let Some(node) = c.get("minDomains") {
                if int(node).is_some_and(|n| n <= 0) {
                    report.at(
                        key(&at, "minDomains"),
                        node,
                        "`minDomains` must be greater than zero: the API server refuses it".into(),
                        "",
                    );
                } else if action == Some("ScheduleAnyway") {
                    report.at(
                        key(&at, "minDomains"),
                        node,
                        "`minDomains` with `whenUnsatisfiable: ScheduleAnyway`: the API server refuses it (only `DoNotSchedule` uses it)".into(),
                        "drop `minDomains`, or use `DoNotSchedule`",
                    );
                }
            }
            if let (Some(k), Some(a)) = (topology_key, action)
                && !k.is_empty()
            {
                // As the API server does, the error is on the earlier constraint, the one a
                // later constraint repeats.
                if let Some(earlier) = seen.insert((k, a), i) {
                    report.at(
                        index(&list, earlier),
                        &items(constraints)[earlier],
                        format!(
                            "constraint {i} repeats the `topologyKey` and `whenUnsatisfiable` of constraint {earlier}: the API server refuses it (Duplicate value)"
                        ),
                        "keep one constraint per topology key and action",
                    );
                }
            }
        }
    }
}
