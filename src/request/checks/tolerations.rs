use super::{Checker, path, with};
use crate::codes::INVALID_VALUE;
use crate::request::ActionRequest;

request_check! {
    /// What it checks: each of `scheduling.tolerations` as the API server checks a pod's
    /// tolerations (what the lint's `toleration` rule reports): `Exists` takes no value, an
    /// empty key goes with `Exists`, `tolerationSeconds` goes with `NoExecute`, keys are
    /// qualified names and values label values.
    ///
    /// Why it matters: the tolerations are copied into the pod spec; one the API server
    /// refuses fails the Job at submit, after the driver created the bundle's other objects.
    ///
    /// Example: `tolerations: [{key: nvidia.com/gpu, operator: Exists, value: present}]`.
    ///
    /// Fix: drop the value with `Exists`, or use `Equal`; follow the message's help.
    pub(super) const CHECK = {
        name: "tolerations",
        codes: [INVALID_VALUE],
        run: check,
    }
}

fn check(c: &mut Checker, req: &ActionRequest) {
    use crate::kube::toleration::{Fields, problems};
    for (i, t) in req.spec.scheduling.tolerations.iter().enumerate() {
        let operator = t.operator.map(|o| format!("{o:?}"));
        let effect = t.effect.map(|e| format!("{e:?}"));
        let fields = Fields {
            key: t.key.as_deref(),
            operator: operator.as_deref(),
            value: t.value.as_deref(),
            effect: effect.as_deref(),
            seconds: t.toleration_seconds,
        };
        let at = with(path("spec.scheduling.tolerations"), i);
        for p in problems(fields) {
            let field = if c.tree.lookup(&with(at.clone(), p.field)).is_some() {
                with(at.clone(), p.field)
            } else {
                at.clone()
            };
            let help = (!p.help.is_empty()).then(|| p.help.to_string());
            c.error(INVALID_VALUE, &field, p.message, "invalid toleration", help);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports};
    use serde_json::{Value, json};

    fn tolerations(t: Value) -> Vec<(&'static str, &'static str)> {
        reports(&super::CHECK, |r| {
            r["spec"]["scheduling"] = json!({ "tolerations": t })
        })
    }

    #[test]
    fn tolerations_the_api_server_accepts_are_quiet() {
        let found = tolerations(json!([
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "pool", "operator": "Equal", "value": "a100", "effect": "NoExecute", "tolerationSeconds": 60}
        ]));
        assert_eq!(found, NONE);
    }

    #[test]
    fn refused_tolerations_are_reported_at_the_field_or_the_item() {
        let found = tolerations(json!([
            {"key": "nvidia.com/gpu", "operator": "Exists", "value": "present"},
            {"key": "pool", "operator": "Equal", "value": "a", "effect": "NoSchedule", "tolerationSeconds": 60}
        ]));
        assert!(
            found.contains(&("TK006", "spec.scheduling.tolerations[0].value")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|(code, path)| *code == "TK006"
                && path.starts_with("spec.scheduling.tolerations[1]")),
            "{found:?}"
        );
        assert!(found.iter().all(|(code, _)| *code == "TK006"));
    }
}
