use crate::lint::pods::{is_indexed, job_spec, scalar_text};
use crate::lint::{Document, Finding, Rule, steps};
use crate::yaml::{Node, Step, Value, key_text};
use std::collections::HashSet;

crate::rule! {
    /// What it checks: every Indexed Job whose pod template sets `subdomain` against the
    /// Services of the same input (same namespace; a missing namespace matches any): there
    /// must be a Service of that name, headless (`clusterIP: None`), with
    /// `publishNotReadyAddresses: true`, whose `selector` matches the Job's pods (their
    /// template labels, or the `job-name` labels the Job controller adds). An Indexed Job
    /// without `subdomain` is not concerned.
    ///
    /// Why it matters: the pods of an Indexed Job are named `<job>-<index>`, and the DNS name
    /// `<job>-0.<subdomain>` that the other ranks use as `MASTER_ADDR` exists only through a
    /// headless Service named like the subdomain that selects the pods. A Service with a
    /// cluster IP publishes no per-pod records. Pods still running init containers are not
    /// Ready, and unready pods get no DNS record unless the Service publishes them, so ranks
    /// that wait for each other before starting never find the master: the rendezvous times
    /// out.
    ///
    /// Example: a Job with `completionMode: Indexed` and `subdomain: dino-train` in a file
    /// whose Service `dino-train` has no `clusterIP: None`, or no Service at all.
    ///
    /// Fix: add, beside the Job, `kind: Service` named like the subdomain, with
    /// `spec: {clusterIP: None, publishNotReadyAddresses: true, selector:
    /// {batch.kubernetes.io/job-name: <job>}}`.
    pub struct HeadlessService {
        code: "TK306",
        name: "headless-service",
        group: Gpu,
        severity: Error,
    }
}

impl Rule for HeadlessService {
    /// Of Services, what makes them fit; of Indexed Jobs with a subdomain, what relates them
    /// to a Service.
    fn keeps(&self, doc: &Document) -> Vec<Vec<Step>> {
        if doc.kind == "Service" {
            return [
                "spec.clusterIP",
                "spec.publishNotReadyAddresses",
                "spec.selector",
            ]
            .map(steps)
            .to_vec();
        }
        match job_spec(doc) {
            Some((path, spec))
                if is_indexed(spec)
                    && doc
                        .at(&[path.clone(), steps("template.spec.subdomain")].concat())
                        .is_some() =>
            {
                [
                    "completionMode",
                    "template.metadata.labels",
                    "template.spec.subdomain",
                ]
                .iter()
                .map(|p| [path.clone(), steps(p)].concat())
                .collect()
            }
            _ => Vec::new(),
        }
    }

    fn check_stream(&self, docs: &[Document], out: &mut Vec<(usize, Finding)>) {
        let mut seen = HashSet::new();
        // Services by name: one pass, so a long stream stays linear.
        let mut by_name: std::collections::HashMap<&str, Vec<usize>> =
            std::collections::HashMap::new();
        for (j, s) in docs.iter().enumerate() {
            if s.kind == "Service" && s.api_version == "v1" {
                by_name.entry(s.name).or_default().push(j);
            }
        }
        for (i, job) in docs.iter().enumerate() {
            let Some((job_path, spec)) = job_spec(job) else {
                continue;
            };
            let mut path = [job_path, steps("template.spec.subdomain")].concat();
            let Some((
                _,
                sub @ Node {
                    value: Value::Str(subdomain),
                    ..
                },
            )) = job.root.lookup(&path)
            else {
                continue;
            };
            if !is_indexed(spec) {
                continue;
            }
            let services: Vec<usize> = by_name
                .get(subdomain.as_str())
                .into_iter()
                .flatten()
                .copied()
                .filter(|&j| {
                    let s = &docs[j];
                    s.namespace.is_none() || job.namespace.is_none() || s.namespace == job.namespace
                })
                .collect();
            if services.is_empty() {
                out.push((i, Finding {
                    message: format!(
                        "Indexed {} sets `subdomain: {subdomain}` but no Service `{subdomain}` is in this input: its pods get no DNS names, so rendezvous at `<job>-0.{subdomain}` fails",
                        job.label()
                    ),
                    help: Some(format!(
                        "add a Service `{subdomain}` with `clusterIP: None`, `publishNotReadyAddresses: true` and a selector of the Job's pods to the same file (objects are related within one file only)"
                    )),
                    path,
                    span: sub.span.clone(),
                }));
                continue;
            }
            path.truncate(path.len() - 2);
            let labels = job
                .root
                .lookup(&[path, steps("metadata.labels")].concat())
                .map(|(_, l)| l);
            for j in services {
                for f in service_problems(&docs[j], job, labels) {
                    if seen.insert((j, f.span.start)) {
                        out.push((j, f));
                    }
                }
            }
        }
    }
}

/// What makes `service` unfit as the subdomain of the Indexed Job `job` (pod labels `labels`).
fn service_problems(service: &Document, job: &Document, labels: Option<&Node>) -> Vec<Finding> {
    let spec = service.root.entry("spec");
    let field = |key: &str| spec.and_then(|(_, s)| s.entry(key));
    let mut out = Vec::new();
    // At `node`, under `spec.<keys>`; else at the `spec` key, or `kind` if there is no spec.
    let mut report = |node: Option<&Node>, keys: &[&str], what: String, help: &str| {
        let (path, span) = match (node, spec.or(service.root.entry("kind"))) {
            (Some(n), _) => (
                ["spec"]
                    .iter()
                    .chain(keys)
                    .map(|k| Step::Key(k.to_string().into()))
                    .collect(),
                n.span.clone(),
            ),
            (None, Some((k, _))) => (
                vec![Step::Key(key_text(k).into_owned().into())],
                k.span.clone(),
            ),
            (None, None) => return,
        };
        let message = format!(
            "{}, the subdomain of Indexed {}, {what}",
            service.label(),
            job.label()
        );
        let help = Some(help.to_string());
        out.push(Finding {
            message,
            help,
            path,
            span,
        });
    };
    let cluster_ip = field("clusterIP").map(|(_, v)| v);
    if cluster_ip.is_none_or(|v| !matches!(&v.value, Value::Str(s) if s == "None")) {
        let found = cluster_ip.map_or("sets no `clusterIP: None`".into(), |v| {
            format!("has `clusterIP: {}`", scalar_text(v))
        });
        let what = format!("{found}: a Service with a cluster IP publishes no DNS record per pod");
        report(
            cluster_ip,
            &["clusterIP"],
            what,
            "set `spec.clusterIP: None`",
        );
    }
    let publish = field("publishNotReadyAddresses").map(|(_, v)| v);
    if publish.is_none_or(|v| v.value != Value::Bool(true)) {
        let what = "does not set `publishNotReadyAddresses: true`: pods still in their init containers are not Ready and get no DNS record, so rendezvous fails";
        let help = "set `spec.publishNotReadyAddresses: true`";
        report(publish, &["publishNotReadyAddresses"], what.into(), help);
    }
    let why = "it gets no endpoints, so the pods get no DNS records";
    let help = "select the Job's pods, e.g. `selector: {batch.kubernetes.io/job-name: <job>}`";
    let selector = field("selector");
    match selector.map(|(_, v)| &v.value) {
        Some(Value::Map(entries)) if !entries.is_empty() => {
            let stray = entries
                .iter()
                .map(|(k, v)| (k, key_text(k), scalar_text(v)))
                .find(|(_, k, v)| !carries(job, labels, k, v));
            if let Some((node, k, v)) = stray {
                let what =
                    format!("selects `{k}: {v}`, a label the Job's pods do not carry: {why}");
                report(Some(node), &["selector", &k], what, help);
            }
        }
        _ => report(
            selector.map(|(k, _)| k),
            &["selector"],
            format!("has no selector: {why}"),
            help,
        ),
    }
    out
}

/// Whether the pods of `job` carry label `key: value`: a template label, or one the Job
/// controller adds (the Job's name, its uid, the completion index).
fn carries(job: &Document, labels: Option<&Node>, key: &str, value: &str) -> bool {
    if labels
        .and_then(|l| l.get(key))
        .is_some_and(|v| scalar_text(v) == value)
    {
        return true;
    }
    let name = job.root.get("metadata").and_then(|m| m.get("name"));
    match key {
        "job-name" | "batch.kubernetes.io/job-name" => match name.map(|n| &n.value) {
            Some(Value::Str(name)) if job.kind == "Job" => name == value,
            _ => true,
        },
        "controller-uid" | "batch.kubernetes.io/controller-uid" => true,
        "batch.kubernetes.io/job-completion-index" => true,
        _ => false,
    }
}
