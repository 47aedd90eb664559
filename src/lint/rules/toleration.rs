use crate::lint::api::{LABEL_KEY, LABEL_VALUE, Report, index, int, items, key, shown_str, text};
use crate::lint::{Document, Findings, Rule};
use crate::names::{is_label_value, is_qualified_name};

const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

crate::rule! {
    /// What it checks: every toleration of a pod spec (of a Pod, Job, CronJob, Deployment…),
    /// as the API server validates it: the `key`, when set, is a qualified name (like a label
    /// key); an empty key goes with `operator: Exists` only (it tolerates every taint); the
    /// operator is `Equal` (the default) or `Exists`; with `Exists` there is no `value`, with
    /// `Equal` the value is a valid label value; the `effect`, when set, is `NoSchedule`,
    /// `PreferNoSchedule` or `NoExecute`; `tolerationSeconds` goes with `effect: NoExecute`
    /// only. A negative `tolerationSeconds` is reported too: the API server accepts it, but
    /// the node controller reads it as zero and evicts the pod as soon as the taint appears.
    ///
    /// Why it matters: the API server refuses the whole object, so the Job is not created;
    /// a negative `tolerationSeconds` evicts a running training at the first `NoExecute`
    /// taint (a node that becomes unreachable for a moment) instead of tolerating it.
    ///
    /// Example: `{key: "a b", operator: Exists, value: "x", tolerationSeconds: -5}`.
    ///
    /// Fix: `{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}`, or
    /// `{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute,
    /// tolerationSeconds: 300}`.
    pub struct Toleration {
        code: "TK410",
        name: "toleration",
        group: Api,
        severity: Error,
    }
}

/// The fields of one toleration, as written (`None` when absent).
#[derive(Debug, Default, Clone, Copy)]
pub struct Fields<'a> {
    pub key: Option<&'a str>,
    pub operator: Option<&'a str>,
    pub value: Option<&'a str>,
    pub effect: Option<&'a str>,
    pub seconds: Option<i64>,
}

/// What is wrong with one toleration: the field to point at, the message and a help.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub field: &'static str,
    pub message: String,
    pub help: &'static str,
}

/// Every problem of one toleration; the request's checks use this too.
pub fn problems(t: Fields) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut push = |field, message: String, help| {
        out.push(Problem {
            field,
            message,
            help,
        })
    };
    let key = t.key.unwrap_or("");
    let value = t.value.unwrap_or("");
    let effect = t.effect.unwrap_or("");
    if !key.is_empty() && !is_qualified_name(key) {
        let message = format!(
            "toleration key `{}` must be {LABEL_KEY}",
            shown_str(key, 80)
        );
        push(
            "key",
            message,
            "use the taint's key as `kubectl describe node` shows it, e.g. `nvidia.com/gpu`",
        );
    }
    match t.operator.unwrap_or("") {
        "" | "Equal" if key.is_empty() => push(
            "operator",
            "a toleration without `key` must have `operator: Exists` (it then tolerates every taint)".into(),
            "set the key of the taint to tolerate, or `operator: Exists` to tolerate all",
        ),
        "" | "Equal" => {
            if !is_label_value(value) {
                let message = format!("toleration value `{}` must be {LABEL_VALUE}", shown_str(value, 80));
                push("value", message, "use the taint's value as the node shows it");
            }
        }
        "Exists" => {
            if !value.is_empty() {
                push(
                    "value",
                    "a toleration with `operator: Exists` must have no `value`: it tolerates every value of the key".into(),
                    "remove `value`, or use `operator: Equal` to tolerate this value only",
                );
            }
        }
        other => push(
            "operator",
            format!("toleration operator `{}` is not supported: `Equal` or `Exists`", shown_str(other, 40)),
            "",
        ),
    }
    if !effect.is_empty() && !EFFECTS.contains(&effect) {
        let message = format!(
            "toleration effect `{}` is not supported: `NoSchedule`, `PreferNoSchedule` or `NoExecute` (or none, for every effect)",
            shown_str(effect, 40)
        );
        push("effect", message, "");
    }
    if let Some(n) = t.seconds {
        if effect != "NoExecute" {
            push(
                if t.effect.is_some() { "effect" } else { "tolerationSeconds" },
                "`tolerationSeconds` needs `effect: NoExecute`: only NoExecute taints evict pods after a delay".into(),
                "set `effect: NoExecute`, or remove `tolerationSeconds`",
            );
        }
        if n < 0 {
            push(
                "tolerationSeconds",
                format!(
                    "`tolerationSeconds: {n}` is negative: the pod is evicted at once when the taint appears, as with 0"
                ),
                "use 0 to be evicted at once, a positive delay to tolerate the taint for a while, or no `tolerationSeconds` to tolerate it forever",
            );
        }
    }
    out
}

impl Rule for Toleration {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some((pod, spec)) = doc.pod_spec() else {
            return;
        };
        let Some(list) = spec.get("tolerations") else {
            return;
        };
        let mut report = Report::new(doc, out);
        for (i, t) in items(list).iter().enumerate() {
            let at = index(&key(&pod, "tolerations"), i);
            let fields = Fields {
                key: t.get("key").and_then(text),
                operator: t.get("operator").and_then(text),
                value: t.get("value").and_then(text),
                effect: t.get("effect").and_then(text),
                seconds: t.get("tolerationSeconds").and_then(int),
            };
            for p in problems(fields) {
                // At the field; a missing operator at the toleration itself.
                let (path, node) = match t.get(p.field) {
                    Some(node) => (key(&at, p.field), node),
                    None => (at.clone(), t),
                };
                report.at(path, node, p.message, p.help);
            }
        }
    }
}
