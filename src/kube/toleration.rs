//! Tolerations, as the API server validates them.

use crate::diag::shown;
use crate::kube::names::{LABEL_KEY, LABEL_VALUE, is_label_value, is_qualified_name};

const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

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

/// Every problem of one toleration (the lint rule TK410 and the request check report them).
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
        let message = format!("toleration key `{}` must be {LABEL_KEY}", shown(key, 80));
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
                let message = format!("toleration value `{}` must be {LABEL_VALUE}", shown(value, 80));
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
            format!("toleration operator `{}` is not supported: `Equal` or `Exists`", shown(other, 40)),
            "",
        ),
    }
    if !effect.is_empty() && !EFFECTS.contains(&effect) {
        let message = format!(
            "toleration effect `{}` is not supported: `NoSchedule`, `PreferNoSchedule` or `NoExecute` (or none, for every effect)",
            shown(effect, 40)
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
