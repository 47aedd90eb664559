use crate::lint::{Document, Finding, Findings, Rule, steps};
use crate::yaml::Value;

crate::rule! {
    /// What it checks: a `batch/v1` Job without `spec.ttlSecondsAfterFinished`. Jobs that a
    /// CronJob creates are not concerned (its history limits clean them up), nor are other
    /// APIs' Jobs (Volcano's `batch.volcano.sh` Job).
    ///
    /// Why it matters: a finished Job and its pods stay in the cluster until someone deletes
    /// them. They pile up, run after run: the API server and the scheduler keep tracking
    /// them, `kubectl get pods` drowns in them, and rerunning a request whose Job name is
    /// taken fails with `AlreadyExists`. With a TTL, the pods (and their logs) are deleted
    /// when it expires, so results must live on a volume, not in the container.
    ///
    /// Example: `kind: Job` whose `spec` has `backoffLimit` and `template` but no
    /// `ttlSecondsAfterFinished`.
    ///
    /// Fix: set `spec.ttlSecondsAfterFinished` (tao-k8s uses 604800, one week: time to read
    /// the logs), and write checkpoints and results to a persistent volume. `0` deletes the
    /// Job as soon as it finishes, which is legal but loses the logs.
    pub struct JobTtl {
        code: "TK302",
        name: "job-ttl",
        group: Gpu,
        severity: Warning,
    }
}

impl Rule for JobTtl {
    fn check(&self, doc: &Document, out: &mut Findings) {
        if doc.kind != "Job" || doc.api_version != "batch/v1" {
            return;
        }
        let spec = doc.root.entry("spec");
        let ttl = spec.and_then(|(_, s)| s.get("ttlSecondsAfterFinished"));
        if ttl.is_some_and(|t| !matches!(t.value, Value::Null)) {
            return;
        }
        let (path, span) = match (spec, doc.root.entry("kind")) {
            (Some((key, _)), _) => (steps("spec"), key.span.clone()),
            (None, Some((key, _))) => (steps("kind"), key.span.clone()),
            (None, None) => return,
        };
        out.push(Finding {
            message: format!(
                "{} has no `spec.ttlSecondsAfterFinished`: the finished Job and its pods stay in the cluster until deleted by hand",
                doc.label()
            ),
            help: Some(
                "set `spec.ttlSecondsAfterFinished` (e.g. 604800, a week to read the logs) and keep results on a persistent volume, since the TTL deletes the pods"
                    .into(),
            ),
            path,
            span,
        });
    }
}
