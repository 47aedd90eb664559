//! Running the rules over a stream of documents: each document is checked as it is parsed
//! and dropped unless a stream rule keeps a part of it; custom kinds go to their CRDs
//! (`crate::crd::Catalogue`); the redaction rules also find the spans that are masked.

use super::findings::{Collected, Findings, Reported, note};
use super::{
    Document, Group, KubeVersion, Meta, Rule, Selection, UNKNOWN_KIND, registry, rules, steps,
};
use crate::crd::Answer;
use crate::diag::{Diagnostic, Severity};
use crate::kube::pod_security::{self, Level, PodSecurity};
use crate::source::{Source, Span};
use crate::yaml::{self, Node, Step, Value};
use memchr::memmem;

/// Lint every document of one source, one document at a time. `Err` when the text is not YAML.
pub fn lint(source: &Source, selection: &Selection) -> Result<Vec<Reported>, yaml::SyntaxError> {
    lint_stream(source, selection, None, &mut |each| {
        yaml::parse_each(source, yaml::Limits::default(), &mut |node, b| {
            each(&node, b)
        })
    })
}

/// [`lint`], and the spans of every credential in the source, found by the redaction rules
/// in the same pass whether they are selected or not, and kept whether their findings are
/// reported or not (suppressed, over the cap): what any format shows of the source is masked
/// there.
pub fn lint_masked(
    source: &Source,
    selection: &Selection,
) -> Result<(Vec<Reported>, Vec<Span>), yaml::SyntaxError> {
    let mut masks = Vec::new();
    let reports = lint_stream(source, selection, Some(&mut masks), &mut |each| {
        yaml::parse_each(source, yaml::Limits::default(), &mut |node, b| {
            each(&node, b)
        })
    })?;
    masks.sort_by_key(|s| (s.start, s.end));
    masks.dedup();
    Ok((reports, masks))
}

/// Lint a stream that is already parsed (`tao-k8s render` checks its own output), leaving
/// it whole.
pub fn lint_parsed(source: &Source, selection: &Selection, stream: &yaml::Stream) -> Vec<Reported> {
    // The feed cannot fail: the stream is parsed already.
    lint_stream(source, selection, None, &mut |each| {
        for document in &stream.documents {
            each(document, &stream.yaml11_booleans);
        }
        Ok(yaml::Stream {
            documents: Vec::new(),
            duplicates: stream.duplicates.clone(),
            yaml11_booleans: stream.yaml11_booleans.clone(),
        })
    })
    .unwrap_or_default()
}

/// A source of documents: it hands each document (with the YAML 1.1 boolean spans so far) to
/// the callback, then returns the stream's duplicates and spans.
type Feed<'f> =
    dyn FnMut(&mut dyn FnMut(&Node, &[Span])) -> Result<yaml::Stream, yaml::SyntaxError> + 'f;

fn lint_stream(
    source: &Source,
    selection: &Selection,
    masks: Option<&mut Vec<Span>>,
    feed: &mut Feed,
) -> Result<Vec<Reported>, yaml::SyntaxError> {
    let mut pass = Pass::new(source, selection, masks).with_policies();
    let stream = feed(&mut |node, yaml11| pass.document(node, yaml11))?;
    Ok(pass.finish(&stream))
}

/// The words whose absence from a stream spares a second parse of it (one per rendered request
/// in a render): searched with a vector searcher built once, not a two-way search per stream.
static ENFORCE: Word = Word::new(|| memmem::Finder::new(pod_security::ENFORCE));
static CRD: Word = Word::new(|| memmem::Finder::new("CustomResourceDefinition"));
static POLICY_BINDING: Word = Word::new(|| memmem::Finder::new("ValidatingAdmissionPolicyBinding"));

type Word = std::sync::LazyLock<memmem::Finder<'static>>;

fn holds(text: &str, word: &memmem::Finder) -> bool {
    word.find(text.as_bytes()).is_some()
}

/// The Pod Security levels the Namespaces of a source enforce (`pod-security.kubernetes.io/
/// enforce` and `enforce-version` labels), wherever they stand in it. A label that does not
/// read is the API server's business (it refuses the Namespace): not taken.
fn enforced(source: &Source) -> std::collections::HashMap<String, PodSecurity> {
    let mut found = std::collections::HashMap::new();
    if !holds(source.text(), &ENFORCE) {
        return found;
    }
    let _ = yaml::parse_each(source, yaml::Limits::default(), &mut |node, _| {
        let text = |n: Option<&Node>| match n.map(|n| &n.value) {
            Some(Value::Str(s)) => Some(s.clone()),
            _ => None,
        };
        if text(node.get("kind")).as_deref() != Some("Namespace") {
            return;
        }
        let metadata = node.get("metadata");
        let labels = metadata.and_then(|m| m.get("labels"));
        let label = |key| text(labels.and_then(|l| l.get(key)));
        let (Some(name), Some(level)) = (
            text(metadata.and_then(|m| m.get("name"))),
            label(pod_security::ENFORCE),
        ) else {
            return;
        };
        let version = label(pod_security::ENFORCE_VERSION).unwrap_or_else(|| "latest".into());
        if let (Ok(level), Ok(version)) = (level.parse(), pod_security::parse_version(&version)) {
            found.insert(name, PodSecurity { level, version });
        }
    });
    found
}

/// The CRDs a source holds (none unless its text names the kind), wherever they stand in it.
fn stream_crds(source: &Source) -> Option<crate::crd::Catalogue> {
    if !holds(source.text(), &CRD) {
        return None;
    }
    let mut crds = Vec::new();
    let _ = yaml::parse_each(source, yaml::Limits::default(), &mut |node, _| {
        if matches!(node.get("kind").map(|k| &k.value), Some(Value::Str(k)) if k == "CustomResourceDefinition")
        {
            crds.push(node.clone());
        }
    });
    Some(crate::crd::Catalogue::of_stream(&crds))
}

/// One run of the rules over one source: what is known before the first document, and what
/// is kept of each until the stream ends.
struct Pass<'s> {
    source: &'s Source,
    selection: &'s Selection,
    rules: Vec<&'static dyn Rule>,
    /// The redaction rules that run for the masks when they are not selected: their findings
    /// are not reported.
    hidden: Vec<&'static dyn Rule>,
    /// Where the redaction rules' spans go, when the source is masked.
    masks: Option<&'s mut Vec<Span>>,
    /// Whether strict-schema runs, and so whether kinds are checked at all.
    schema_checked: bool,
    kube_version: KubeVersion,
    /// The Pod Security level each Namespace of the source enforces, by its name.
    enforced: std::collections::HashMap<String, PodSecurity>,
    /// The CRDs of the source itself, which its custom resources are checked against (after
    /// those of `--crd`), wherever they stand in it.
    stream_crds: Option<crate::crd::Catalogue>,
    /// The admission policies of the source itself, when it binds any and they are checked.
    policies: Option<super::policy::Policies>,
    /// Whether the admission-policy rule runs.
    admission_checked: bool,
    out: Collected,
    /// Per document: its label; findings carry the document's index.
    labels: Vec<String>,
    /// The documents (by index) a stream rule keeps a part of, pruned to those parts.
    kept: Vec<(usize, Node)>,
    /// What `Document::new` reads, kept with any part a stream rule keeps.
    always: Vec<Vec<Step>>,
}

impl<'s> Pass<'s> {
    fn new(source: &'s Source, selection: &'s Selection, masks: Option<&'s mut Vec<Span>>) -> Self {
        let rules = selection.rules();
        let hidden = match masks {
            Some(_) => registry::RULES
                .iter()
                .copied()
                .filter(|r| r.meta().group == Group::Redaction)
                .filter(|r| !rules.iter().any(|s| s.meta().code == r.meta().code))
                .collect(),
            None => Vec::new(),
        };
        let schema_checked = rules
            .iter()
            .any(|r| r.meta().code == rules::StrictSchema::META.code);
        let always = [
            "apiVersion",
            "kind",
            "metadata.name",
            "metadata.generateName",
            "metadata.namespace",
        ]
        .map(steps)
        .to_vec();
        Pass {
            source,
            selection,
            rules,
            hidden,
            masks,
            schema_checked,
            kube_version: selection.kube_version.unwrap_or(KubeVersion::NEWEST),
            enforced: enforced(source),
            stream_crds: stream_crds(source),
            policies: None,
            admission_checked: false,
            out: Collected::new(selection.max_findings),
            labels: Vec::new(),
            kept: Vec::new(),
            always,
        }
    }

    /// The admission policies of the source, read when the rule runs and the source binds one.
    fn with_policies(mut self) -> Self {
        self.admission_checked = self
            .rules
            .iter()
            .any(|r| r.meta().code == rules::AdmissionPolicy::META.code);
        if self.admission_checked && holds(self.source.text(), &POLICY_BINDING) {
            let mut documents = Vec::new();
            let _ = yaml::parse_each(self.source, yaml::Limits::default(), &mut |node, _| {
                documents.push(node)
            });
            let mut policies = super::policy::Policies::default();
            policies.add(documents);
            self.policies = Some(policies);
        }
        self
    }

    /// What the admission policies bound to the object say of it.
    fn admission(&mut self, doc: &Document, index: usize) {
        let from_flag = self.selection.policies.as_deref();
        let found = match (&self.policies, from_flag) {
            (Some(own), more) => own.check(doc, more),
            (None, Some(flag)) => flag.check(doc, None),
            (None, None) => return,
        };
        if found.is_empty() {
            return;
        }
        // A `Warn` binding admits the object: what it says is a warning, not the rule's error;
        // what cannot be evaluated offline is a note.
        const WARNS: Meta = Meta {
            severity: Severity::Warning,
            ..rules::AdmissionPolicy::META
        };
        const NOTES: Meta = Meta {
            severity: Severity::Note,
            ..rules::AdmissionPolicy::META
        };
        for meta in [&rules::AdmissionPolicy::META, &WARNS, &NOTES] {
            let mut findings = Findings::new(self.out.room());
            found
                .iter()
                .filter(|(_, severity)| *severity == meta.severity)
                .for_each(|(f, _)| findings.push(f.clone()));
            if !findings.kept.is_empty() || findings.over > 0 {
                self.out
                    .found(self.source, &self.labels[index], index, meta, findings);
            }
        }
    }

    /// Check one document as it is parsed, and keep what the stream rules need of it.
    fn document(&mut self, node: &Node, yaml11: &[Span]) {
        let source = self.source;
        let Some(mut doc) = Document::new(source, node, yaml11) else {
            if !matches!(node.value, Value::Null) {
                self.out.push(note(source, node, "a document without `apiVersion` and `kind` is not a Kubernetes object: skipped"));
            }
            return;
        };
        let index = self.labels.len();
        self.labels.push(doc.label());
        self.out
            .suppressions(source, &doc, index, &self.labels[index]);
        doc.kube_version = self.kube_version;
        doc.pod_security = doc
            .namespace
            .and_then(|ns| self.enforced.get(ns).copied())
            .or(self.selection.pod_security)
            .filter(|p| p.level != Level::Privileged);
        if self.schema_checked
            && crate::k8s::kind(doc.api_version, doc.kind, self.kube_version)
                == crate::k8s::Kind::Unknown
            && crate::k8s::unknown_in_builtin_group(doc.api_version, doc.kind, self.kube_version)
                .is_none()
        {
            self.custom_kind(&doc, node, index);
        }
        self.check(&doc, index);
        if self.admission_checked {
            self.admission(&doc, index);
        }
        self.keep(&doc, node, index);
    }

    /// A kind Kubernetes does not know: checked against its CRD if one was given or is built
    /// in, else a note (or an error, with `--strict-kinds`).
    fn custom_kind(&mut self, doc: &Document, node: &Node, index: usize) {
        let given: Vec<&crate::crd::Catalogue> = self
            .selection
            .crds
            .as_deref()
            .into_iter()
            .chain(self.stream_crds.as_ref())
            .collect();
        let verdict = crate::crd::check(&given, doc);
        let strict = self.selection.strict_kinds;
        match verdict {
            Answer::Checked(findings) => {
                let mut found = Findings::new(self.out.room());
                findings.into_iter().for_each(|f| found.push(f));
                let meta = &rules::StrictSchema::META;
                self.out
                    .found(self.source, &self.labels[index], index, meta, found);
            }
            Answer::NoSchema(why) => {
                self.out
                    .unknown_kind(self.source, node, index, &why, strict);
            }
            Answer::Unknown => {
                let why = format!(
                    "kind {}/{} is not a built-in kind of Kubernetes {}: its schema is not checked",
                    doc.api_version, doc.kind, doc.kube_version
                );
                self.out
                    .unknown_kind(self.source, node, index, &why, strict);
            }
        }
    }

    /// Every selected rule over the document, and the hidden ones for their masks. A JobSet's
    /// every replicated Job is checked: the rules run again with the pod spec of each after
    /// the first, keeping what they find under that Job (the rest was found with the first).
    fn check(&mut self, doc: &Document, index: usize) {
        self.check_within(doc, index, None);
        for i in 1..doc.replicated_jobs() {
            let within = vec![
                Step::Key("spec".into()),
                Step::Key("replicatedJobs".into()),
                Step::Index(i),
            ];
            self.check_within(&doc.replicated(i), index, Some(within));
        }
    }

    fn check_within(&mut self, doc: &Document, index: usize, within: Option<Vec<Step>>) {
        let masked = self.masks.is_some();
        for (rule, shown) in self
            .rules
            .iter()
            .map(|r| (r, true))
            .chain(self.hidden.iter().map(|r| (r, false)))
        {
            let mut found = Findings::new(if shown { self.out.room() } else { 0 });
            found.within.clone_from(&within);
            if masked && rule.meta().group == Group::Redaction {
                found.spans = Some(Vec::new());
            }
            rule.check(doc, &mut found);
            if let (Some(masks), Some(spans)) = (self.masks.as_deref_mut(), found.spans.take()) {
                masks.extend(spans);
            }
            if shown {
                self.out
                    .found(self.source, &self.labels[index], index, rule.meta(), found);
            }
        }
    }

    /// The parts of the document the stream rules relate to others, if any.
    fn keep(&mut self, doc: &Document, node: &Node, index: usize) {
        let mut paths: Vec<Vec<Step>> = self.rules.iter().flat_map(|r| r.keeps(doc)).collect();
        if !paths.is_empty() {
            paths.extend(self.always.iter().cloned());
            let paths: Vec<&[Step]> = paths.iter().map(Vec::as_slice).collect();
            self.kept.push((index, prune(node, &paths)));
        }
    }

    /// The stream rules over the kept documents, the stream's duplicate keys and the unused
    /// suppressions: the reports of the source.
    fn finish(mut self, stream: &yaml::Stream) -> Vec<Reported> {
        let source = self.source;
        let docs: Vec<Document> = self
            .kept
            .iter()
            .filter_map(|(_, node)| Document::new(source, node, &stream.yaml11_booleans))
            .map(|mut doc| {
                doc.kube_version = self.kube_version;
                doc
            })
            .collect();
        for rule in &self.rules {
            let mut found = Vec::new();
            rule.check_stream(&docs, &mut found);
            for (j, f) in found {
                let index = self.kept[j].0;
                self.out
                    .finding(source, &self.labels[index], index, rule.meta(), f);
            }
        }
        if self
            .rules
            .iter()
            .any(|r| r.meta().code == rules::DuplicateKey::META.code)
        {
            self.out.duplicates(source, &stream.duplicates);
        }
        self.out.unused_suppressions(source, &self.labels);
        self.out.finish(source)
    }
}

/// What the engine reports beside the rules, on the documents and the stream.
impl Collected {
    /// A kind with no known schema: a note, unless the object suppresses it (a custom
    /// resource, say), which uses the suppression.
    fn unknown_kind(&mut self, source: &Source, node: &Node, index: usize, why: &str, error: bool) {
        if self.suppressed.suppresses(index, UNKNOWN_KIND) {
            return;
        }
        let mut reported = note(source, node, why);
        if error {
            reported.diagnostic.severity = Severity::Error;
            reported.diagnostic.help = Some(
                "pass its CustomResourceDefinition with `--crd`, or suppress TK021 on the object"
                    .into(),
            );
        }
        self.push(reported);
    }

    /// Duplicate keys of the stream: kubectl refuses them.
    fn duplicates(&mut self, source: &Source, duplicates: &[yaml::DuplicateKey]) {
        for d in duplicates {
            let (line, column) = source.line_col(d.second.start);
            let diagnostic = Diagnostic::error(
                rules::DuplicateKey::META.code,
                format!("duplicate key `{}`: kubectl refuses it", d.key),
            )
            .primary(d.second.clone(), "defined again here")
            .secondary(d.first.clone(), "first defined here")
            .help("keep one of them");
            self.push(Reported {
                diagnostic,
                object: None,
                json_path: String::new(),
                line,
                column,
            });
        }
    }
}

/// A copy of `node` with only the subtrees on `paths` (and the nodes leading to them).
fn prune(node: &Node, paths: &[&[Step]]) -> Node {
    if paths.iter().any(|p| p.is_empty()) {
        return node.clone();
    }
    let value = match &node.value {
        Value::Map(entries) => Value::Map(
            entries
                .iter()
                .filter_map(|(k, v)| {
                    let key = yaml::key_text(k);
                    let rest: Vec<&[Step]> = paths
                        .iter()
                        .filter_map(|p| match p.split_first() {
                            Some((Step::Key(first), rest)) if *first == key => Some(rest),
                            _ => None,
                        })
                        .collect();
                    (!rest.is_empty()).then(|| (k.clone(), prune(v, &rest)))
                })
                .collect(),
        ),
        Value::Seq(items) => Value::Seq(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let rest: Vec<&[Step]> = paths
                        .iter()
                        .filter_map(|p| match p.split_first() {
                            Some((Step::Index(j), rest)) if *j == i => Some(rest),
                            _ => None,
                        })
                        .collect();
                    prune(item, &rest)
                })
                .collect(),
        ),
        other => other.clone(),
    };
    Node {
        value,
        span: node.span.clone(),
    }
}
