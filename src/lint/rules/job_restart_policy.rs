use crate::lint::{Document, Finding, Findings, Rule};
use crate::yaml::{Step, Value};

crate::rule! {
    /// What it checks: the pod template of a Job (or of a CronJob's Job template) whose
    /// `restartPolicy` is missing or is neither `Never` nor `OnFailure`. A container-level
    /// `restartPolicy: Always` on an init container (a native sidecar) is not concerned.
    ///
    /// Why it matters: a pod's default policy is `Always`, and the API server refuses a Job
    /// with it: the Job is not created. `OnFailure` is accepted, but for training it restarts
    /// the failed container in the same pod, on the same node, from scratch: in a multi-node
    /// run the other ranks are already stuck in a collective with the rank that died, and
    /// once `backoffLimit` is reached the pod is deleted with the logs of the failure. With
    /// `Never`, a failed pod stays for `kubectl logs` and `backoffLimit` decides whether a new
    /// pod is started.
    ///
    /// Example: a Job whose `spec.template.spec` has `containers` but no `restartPolicy`, or
    /// `restartPolicy: Always`.
    ///
    /// Fix: set `spec.template.spec.restartPolicy: Never` (what tao-k8s emits), and let
    /// `backoffLimit` decide whether a failed pod is replaced.
    pub struct JobRestartPolicy {
        code: "TK303",
        name: "job-restart-policy",
        group: Gpu,
        severity: Error,
    }
}

const HELP: &str = "set `restartPolicy: Never` in the pod template (the right choice for training; `OnFailure` is accepted too)";

impl Rule for JobRestartPolicy {
    fn check(&self, doc: &Document, out: &mut Findings) {
        if !doc.api_version.starts_with("batch/") || !matches!(doc.kind, "Job" | "CronJob") {
            return;
        }
        let Some(mut path) = doc.pod_spec_path().map(<[Step]>::to_vec) else {
            return;
        };
        let Some((Some(spec_key), spec)) = doc.root.lookup(&path) else {
            return;
        };
        let Some((_, policy)) = spec.entry("restartPolicy") else {
            out.push(Finding {
                message: format!(
                    "the pod template of {} sets no `restartPolicy`: the default, `Always`, is refused for Jobs",
                    doc.label()
                ),
                help: Some(HELP.into()),
                path,
                span: spec_key.span.clone(),
            });
            return;
        };
        let found = match &policy.value {
            Value::Str(s) if s == "Never" || s == "OnFailure" => return,
            Value::Str(s) => format!("`{s}`"),
            _ => policy.describe().to_string(),
        };
        path.push(Step::Key("restartPolicy".into()));
        out.push(Finding {
            message: format!(
                "the pod template of {} has `restartPolicy` {found}: a Job accepts only `Never` or `OnFailure`",
                doc.label()
            ),
            help: Some(HELP.into()),
            path,
            span: policy.span.clone(),
        });
    }
}
