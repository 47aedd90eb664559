//! What the rules of the `api` group (TK4xx) share: they check what the Kubernetes API server
//! (or, where it says so, the kubelet) refuses in a well-typed object, so a manifest that passes
//! the strict schema is not refused at `kubectl apply` time or left stuck at pod start. The
//! rules walk the same parts of an object (its metadata and its templates' metadata, the pod
//! spec and every container list), report at the offending node, and describe the syntax they
//! expect in the same words; those parts live here. The name and label grammars are in
//! `crate::kube::names`, quantities in `crate::kube::quantity`.

use crate::lint::{Document, Finding, Findings, steps};
use crate::yaml::{Node, Step, Value};
use std::collections::HashMap;

pub use crate::kube::names::{
    DNS1035_LABEL, DNS1123_LABEL, DNS1123_SUBDOMAIN, LABEL_KEY, LABEL_VALUE, PORT_NAME,
};

pub use crate::kube::document::{CONTAINER_LISTS, ContainerPath};

/// A string scalar.
pub fn text(node: &Node) -> Option<&str> {
    match &node.value {
        Value::Str(s) => Some(s),
        _ => None,
    }
}

/// An integer scalar.
pub fn int(node: &Node) -> Option<i64> {
    match node.value {
        Value::Int(n) => Some(n),
        _ => None,
    }
}

/// The entries of a mapping (none for anything else).
pub fn entries(node: &Node) -> &[(Node, Node)] {
    match &node.value {
        Value::Map(e) => e,
        _ => &[],
    }
}

/// The items of a sequence (none for anything else).
pub fn items(node: &Node) -> &[Node] {
    match &node.value {
        Value::Seq(i) => i,
        _ => &[],
    }
}

/// `path` followed by dotted keys.
pub fn under(path: &[Step], dotted: &'static str) -> Vec<Step> {
    [path, &steps(dotted)].concat()
}

/// `path` followed by one key.
pub fn key(path: &[Step], key: &str) -> Vec<Step> {
    let mut p = path.to_vec();
    p.push(Step::Key(key.to_string().into()));
    p
}

/// `path` followed by one index.
pub fn index(path: &[Step], i: usize) -> Vec<Step> {
    let mut p = path.to_vec();
    p.push(Step::Index(i));
    p
}

/// Reports of one rule on one document, each message opening with the object it is about.
pub struct Report<'d, 'a, 'o> {
    pub doc: &'d Document<'a>,
    out: &'o mut Findings,
}

impl<'d, 'a, 'o> Report<'d, 'a, 'o> {
    pub fn new(doc: &'d Document<'a>, out: &'o mut Findings) -> Self {
        Report { doc, out }
    }

    /// A finding at `node`, found at `path`.
    pub fn at(&mut self, path: Vec<Step>, node: &Node, message: String, help: &str) {
        self.out.push(Finding {
            message: format!("{}: {message}", self.doc.label()),
            help: (!help.is_empty()).then(|| help.to_string()),
            path,
            span: node.span.clone(),
        });
    }
}

/// The metadata of an object and of the templates it holds (a Job's or a controller's pod
/// template, a CronJob's Job template and its pod template), with their paths: the API server
/// validates every one of them as object metadata.
pub fn metadatas<'a>(doc: &Document<'a>) -> Vec<(Vec<Step>, &'a Node)> {
    let mut paths = vec![steps("metadata")];
    if let Some(pod) = doc.pod_spec_path()
        && pod.len() > 1
    {
        let mut template = pod[..pod.len() - 1].to_vec();
        template.push(Step::Key("metadata".into()));
        paths.push(template);
    }
    if doc.kind == "CronJob" {
        paths.push(steps("spec.jobTemplate.metadata"));
    }
    paths
        .into_iter()
        .filter_map(|p| {
            let node = doc.root.lookup(&p)?.1;
            Some((p, node))
        })
        .collect()
}

/// A scalar as written, for messages: shortened to `max` characters, control characters
/// escaped, and credential-shaped runs masked (a label value may hold a token by mistake).
pub fn shown(node: &Node, max: usize) -> String {
    crate::diag::shown(&crate::lint::pods::scalar_text(node), max)
}

/// A label selector: `matchLabels` and `matchExpressions`.
#[derive(Default)]
pub struct Selector {
    labels: Vec<(String, String)>,
    expressions: Vec<(String, String, Vec<String>)>,
}

impl Selector {
    /// The selector at `node` (`None` when there is none).
    pub fn read(node: Option<&Node>) -> Option<Selector> {
        let node = node?;
        let owned = |n: Option<&Node>| n.and_then(text).unwrap_or_default().to_owned();
        let labels = node
            .get("matchLabels")
            .map(entries)
            .unwrap_or_default()
            .iter()
            .map(|(k, v)| (crate::yaml::key_text(k).into_owned(), owned(Some(v))))
            .collect();
        let expressions = node
            .get("matchExpressions")
            .map(items)
            .unwrap_or_default()
            .iter()
            .map(|e| {
                let values = e.get("values").map(items).unwrap_or_default();
                (
                    owned(e.get("key")),
                    owned(e.get("operator")),
                    values
                        .iter()
                        .map(|v| crate::yaml::key_text(v).into_owned())
                        .collect(),
                )
            })
            .collect();
        Some(Selector {
            labels,
            expressions,
        })
    }

    /// Whether objects with `labels` are selected.
    pub fn matches(&self, labels: &HashMap<String, String>) -> bool {
        self.labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self
                .expressions
                .iter()
                .all(|(k, op, values)| match op.as_str() {
                    "In" => labels.get(k).is_some_and(|v| values.contains(v)),
                    "NotIn" => labels.get(k).is_none_or(|v| !values.contains(v)),
                    "Exists" => labels.contains_key(k),
                    "DoesNotExist" => !labels.contains_key(k),
                    _ => false,
                })
    }

    /// Whether it has no requirement (it selects everything).
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.expressions.is_empty()
    }
}

/// The string labels of a `metadata` node.
pub fn labels_of(metadata: Option<&Node>) -> HashMap<String, String> {
    metadata
        .and_then(|m| m.get("labels"))
        .map(entries)
        .unwrap_or_default()
        .iter()
        .filter_map(|(k, v)| Some((crate::yaml::key_text(k).into_owned(), text(v)?.to_owned())))
        .collect()
}
