use crate::kube::toleration::{Fields, problems};
use crate::lint::api::{Report, index, int, items, key, text};
use crate::lint::{Document, Findings, Rule};

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
            let at = index(&key(pod, "tolerations"), i);
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
