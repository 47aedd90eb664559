use crate::lint::api::{Report, Selector, index, int, items, key, labels_of, shown, text};
use crate::lint::pods::{is_indexed, job_spec};
use crate::lint::{Document, Findings, Rule};
use crate::yaml::{Node, Step, Value};

/// The largest parallelism of an Indexed Job.
const MAX_INDEXED_PARALLELISM: i64 = 100_000;

crate::rule! {
    /// What it checks: the Job spec of a Job (or of a CronJob's Job template), as the API
    /// server validates it: `parallelism`, `completions`, `backoffLimit`,
    /// `activeDeadlineSeconds`, `ttlSecondsAfterFinished`, `backoffLimitPerIndex` and
    /// `maxFailedIndexes` are not negative; `completionMode` is `NonIndexed` or `Indexed`;
    /// an Indexed Job sets `completions` and has a `parallelism` of at most 100000;
    /// `backoffLimitPerIndex` and `maxFailedIndexes` need an Indexed Job, and
    /// `maxFailedIndexes` needs `backoffLimitPerIndex`; with a `podFailurePolicy` the pod
    /// template's `restartPolicy` is `Never`; a `selector` only with `manualSelector: true`,
    /// selecting the template's labels (never in a CronJob's Job template); each rule of a
    /// `podFailurePolicy` with a known `action`, one of `onExitCodes` and `onPodConditions`,
    /// no exit code 0 under `In`, and a `containerName` of the template. (A missing or `Always` restart policy is
    /// `job-restart-policy`, TK303.)
    ///
    /// Why it matters: the API server refuses the Job, so nothing runs. An Indexed Job
    /// without `completions` is the usual slip when turning a single-pod Job into a
    /// multi-node one.
    ///
    /// Example: `completionMode: Indexed` without `completions`, `backoffLimit: -1`, or a
    /// `podFailurePolicy` with `restartPolicy: OnFailure`.
    ///
    /// Fix: `completions` (and `parallelism`) equal to the number of nodes for an Indexed
    /// Job; non-negative counts; `restartPolicy: Never` with a pod failure policy.
    pub struct JobSpec {
        code: "TK413",
        name: "job-spec",
        group: Api,
        severity: Error,
    }
}

impl Rule for JobSpec {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some((path, spec)) = job_spec(doc) else {
            return;
        };
        let mut report = Report::new(doc, out);
        counts_not_negative(&mut report, &path, spec);
        let mode = completion_mode(&mut report, &path, spec);
        let indexed = is_indexed(spec);
        if indexed {
            indexed_job(&mut report, &path, spec, mode);
        } else {
            per_index_fields_need_indexed(&mut report, &path, spec);
        }
        if let Some((k, _)) = spec.entry("maxFailedIndexes")
            && indexed
            && spec.get("backoffLimitPerIndex").is_none()
        {
            report.at(
                key(&path, "maxFailedIndexes"),
                k,
                "`maxFailedIndexes` needs `backoffLimitPerIndex`".into(),
                "",
            );
        }
        pod_failure_policy_never_restarts(&mut report, doc, spec);
        pod_failure_policy_rules(&mut report, doc, &path, spec);
        selector(&mut report, doc, &path, spec);
    }
}

/// The rules of a `podFailurePolicy` (`validatePodFailurePolicyRule`): a known action; one
/// of `onExitCodes` and `onPodConditions`; exit codes with `In` not 0; a `containerName`
/// of the template.
fn pod_failure_policy_rules(report: &mut Report, doc: &Document, path: &[Step], spec: &Node) {
    let Some(rules) = spec.get("podFailurePolicy").and_then(|p| p.get("rules")) else {
        return;
    };
    let names: Vec<&str> = doc
        .containers()
        .iter()
        .filter(|(p, _)| p.list() != "ephemeralContainers")
        .filter_map(|(_, c)| c.get("name").and_then(text))
        .collect();
    let base = key(&key(path, "podFailurePolicy"), "rules");
    for (i, rule) in items(rules).iter().enumerate() {
        let at = index(&base, i);
        if let Some(node) = rule.get("action")
            && let Some(action) = text(node)
            && !["Count", "FailIndex", "FailJob", "Ignore"].contains(&action)
        {
            report.at(
                key(&at, "action"),
                node,
                format!("`action: {}` is not an action of a pod failure policy: the API server refuses it (supported: `Count`, `FailIndex`, `FailJob`, `Ignore`)", shown(node, 40)),
                "",
            );
        }
        // As the server decides: `onExitCodes` present and not null, `onPodConditions`
        // not empty (an empty list stands for none, and 1.28's schema requires the key).
        let codes = rule
            .get("onExitCodes")
            .filter(|c| !matches!(c.value, Value::Null));
        let conditions = rule
            .get("onPodConditions")
            .is_some_and(|c| !items(c).is_empty());
        match (codes.is_some(), conditions) {
            (true, true) => report.at(
                at.clone(),
                rule,
                "a pod failure policy rule with both `onExitCodes` and `onPodConditions`: the API server refuses it".into(),
                "split it into two rules",
            ),
            (false, false) => report.at(
                at.clone(),
                rule,
                "a pod failure policy rule with neither `onExitCodes` nor `onPodConditions`: the API server refuses it".into(),
                "",
            ),
            _ => {}
        }
        let Some(codes) = codes else {
            continue;
        };
        let on = key(&at, "onExitCodes");
        if codes.get("operator").and_then(text) == Some("In")
            && let Some(values) = codes.get("values")
        {
            for (j, v) in items(values).iter().enumerate() {
                if int(v) == Some(0) {
                    report.at(
                        index(&key(&on, "values"), j),
                        v,
                        "exit code 0 with `operator: In`: the API server refuses it (a pod that exits 0 succeeded)".into(),
                        "",
                    );
                }
            }
        }
        if let Some(node) = codes.get("containerName")
            && let Some(name) = text(node)
            && !names.is_empty()
            && !names.contains(&name)
        {
            report.at(
                key(&on, "containerName"),
                node,
                format!("`containerName: {}` is not a container of the pod template: the API server refuses it", shown(node, 60)),
                "name one of the template's containers or init containers",
            );
        }
    }
}

/// A Job's `selector` is generated unless `manualSelector` is true (and then it selects the
/// template's labels); a CronJob's Job template never has one (`ValidateGeneratedSelector`,
/// `ValidateJobTemplateSpec`).
fn selector(report: &mut Report, doc: &Document, path: &[Step], spec: &Node) {
    let Some((k, node)) = spec.entry("selector") else {
        return;
    };
    let at = key(path, "selector");
    if doc.kind == "CronJob" {
        report.at(
            at,
            k,
            "a CronJob's Job template has no `selector`: the API server refuses it (`selector` will be auto-generated)".into(),
            "remove it: each Job's selector is generated from its uid",
        );
        return;
    }
    let manual = matches!(
        spec.get("manualSelector").map(|n| &n.value),
        Some(crate::yaml::Value::Bool(true))
    );
    if !manual {
        report.at(
            at,
            k,
            "`selector` is set without `manualSelector: true`: the API server refuses it (`selector` not auto-generated)".into(),
            "remove `selector` (the Job's own is generated from its uid); `manualSelector: true` only to adopt existing pods",
        );
        return;
    }
    let template = spec.get("template").and_then(|t| t.get("metadata"));
    if let Some(selector) = Selector::read(Some(node))
        && !selector.matches(&labels_of(template))
    {
        report.at(
            at,
            k,
            "`selector` does not match template `labels`: the API server refuses it".into(),
            "give the template every label the selector asks for",
        );
    }
}

/// The counts and durations of a Job spec are not negative.
fn counts_not_negative(report: &mut Report, path: &[Step], spec: &Node) {
    for field in [
        "parallelism",
        "completions",
        "backoffLimit",
        "activeDeadlineSeconds",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        if let Some(node) = spec.get(field)
            && let Some(n) = int(node)
            && n < 0
        {
            report.at(
                key(path, field),
                node,
                format!("`{field}: {n}` must not be negative"),
                "",
            );
        }
    }
}

/// `completionMode`, if set, is `NonIndexed` or `Indexed`; its key and value.
fn completion_mode<'n>(
    report: &mut Report,
    path: &[Step],
    spec: &'n Node,
) -> Option<(&'n Node, &'n Node)> {
    let mode = spec.entry("completionMode");
    if let Some((_, node)) = mode
        && let Some(m) = text(node)
        && m != "Indexed"
        && m != "NonIndexed"
    {
        report.at(
            key(path, "completionMode"),
            node,
            format!("`completionMode: {m}` is not supported: `NonIndexed` or `Indexed`"),
            "",
        );
    }
    mode
}

/// An Indexed Job sets `completions`, and has a `parallelism` of at most 100000.
fn indexed_job(report: &mut Report, path: &[Step], spec: &Node, mode: Option<(&Node, &Node)>) {
    if spec
        .get("completions")
        .is_none_or(|c| matches!(c.value, crate::yaml::Value::Null))
        && let Some((k, _)) = mode
    {
        report.at(
            key(path, "completionMode"),
            k,
            "an Indexed Job must set `completions`: one index per completion".into(),
            "set `completions` (and `parallelism`) to the number of pods, e.g. the number of nodes",
        );
    }
    if let Some(node) = spec.get("parallelism")
        && let Some(n) = int(node)
        && n > MAX_INDEXED_PARALLELISM
    {
        report.at(
            key(path, "parallelism"),
            node,
            format!("`parallelism: {n}` is over {MAX_INDEXED_PARALLELISM}, the most an Indexed Job accepts"),
            "",
        );
    }
}

/// `backoffLimitPerIndex` and `maxFailedIndexes` only in an Indexed Job.
fn per_index_fields_need_indexed(report: &mut Report, path: &[Step], spec: &Node) {
    for field in ["backoffLimitPerIndex", "maxFailedIndexes"] {
        if let Some((k, _)) = spec.entry(field) {
            report.at(
                key(path, field),
                k,
                format!("`{field}` needs `completionMode: Indexed`"),
                "",
            );
        }
    }
}

/// With a `podFailurePolicy`, the pod template's `restartPolicy` is not `OnFailure`.
fn pod_failure_policy_never_restarts(report: &mut Report, doc: &Document, spec: &Node) {
    if spec.get("podFailurePolicy").is_some()
        && let Some(pod) = doc.pod_spec_path()
        && let Some((_, node)) = doc.root.lookup(&key(pod, "restartPolicy"))
        && let Some(policy) = text(node)
        && policy == "OnFailure"
    {
        report.at(
            key(pod, "restartPolicy"),
            node,
            "a Job with a `podFailurePolicy` must have `restartPolicy: Never` in its pod template".into(),
            "set `restartPolicy: Never`: the policy judges failed pods, which OnFailure never leaves",
        );
    }
}
