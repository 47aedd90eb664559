use crate::kube::names::MAX_LABEL;
use crate::lint::{Document, Finding, Findings, Rule, steps};
use crate::yaml::Value;

crate::rule! {
    /// What it checks: a Job whose `metadata.name` is longer than 63 characters, or, for an
    /// Indexed Job, longer than `63 - 1 - digits(completions - 1)`: 61 characters up to 10
    /// completions, 60 up to 100, 59 up to 1000.
    ///
    /// Why it matters: the Job name is also the value of the `batch.kubernetes.io/job-name`
    /// label its pods carry, and a label value is at most 63 characters: the API server refuses
    /// the Job. An Indexed Job's pods get the hostname `<job-name>-<index>`, a DNS label of at
    /// most 63 characters too: the API server refuses pods with a longer one, so the Job
    /// stays active without pods and never starts training.
    ///
    /// Example: an Indexed Job of 16 completions named
    /// `classification-pyt-train-imagenet-22k-large-sweep-run-00042-bf16` (64 characters).
    ///
    /// Fix: shorten the name (keep a unique suffix, such as a short hash, at the end); long
    /// descriptions belong in labels and annotations. `tao-k8s render` does this for you.
    pub struct JobNameLength {
        code: "TK311",
        name: "job-name-length",
        group: Gpu,
        severity: Error,
    }
}

impl Rule for JobNameLength {
    fn check(&self, doc: &Document, out: &mut Findings) {
        if doc.kind != "Job" {
            return;
        }
        let path = steps("metadata.name");
        let Some(node) = doc.at(&path) else {
            return;
        };
        let Value::Str(name) = &node.value else {
            return;
        };
        let indexed = matches!(doc.at(&steps("spec.completionMode")).map(|n| &n.value), Some(Value::Str(m)) if m == "Indexed");
        let completions = match doc.at(&steps("spec.completions")).map(|n| &n.value) {
            Some(Value::Int(n)) if indexed && *n >= 1 => Some(*n),
            _ => None,
        };
        let (budget, why) = match completions {
            Some(n) => {
                let last = n - 1;
                let budget = MAX_LABEL - 1 - last.to_string().len();
                (
                    budget,
                    format!(
                        "the hostname of its last pod, `{name}-{last}`, is longer than {MAX_LABEL}"
                    ),
                )
            }
            None => (
                MAX_LABEL,
                format!("the `batch.kubernetes.io/job-name` label value is at most {MAX_LABEL}"),
            ),
        };
        let length = name.chars().count();
        if length <= budget {
            return;
        }
        out.push(Finding {
            message: format!(
                "{}: the Job name has {length} characters, more than {budget}: {why}",
                doc.label()
            ),
            help: Some(format!(
                "shorten `metadata.name` to at most {budget} characters (keep a unique suffix at the end)"
            )),
            path,
            span: node.span.clone(),
        });
    }
}
