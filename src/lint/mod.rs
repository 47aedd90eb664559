//! `tao-k8s lint`: rules over any Kubernetes YAML (ours, hand-written or from Helm). A rule
//! is one file in `rules/`, registered in `registry.rs`; it sees one document at a time (or
//! the whole stream, for rules that relate objects) and reports findings at spanned nodes.
//! Findings are diagnostics: the CLI renders them as text, JSON, SARIF or GitHub annotations.

pub mod api;
pub mod pods;
pub mod registry;
pub mod rules;

use crate::crd::Verdict;
use crate::diag::{Diagnostic, Severity};
pub use crate::kube::{Document, Finding, KubeVersion};
use crate::source::{Source, Span};
use crate::yaml::{self, Node, Step, Value, display_path};
use serde::Serialize;

/// The families of rules, selectable by name (`--select redaction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Group {
    Redaction,
    Schema,
    Gpu,
    /// What the API server (or the kubelet) refuses in a well-typed object (TK4xx).
    Api,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Redaction => "redaction",
            Group::Schema => "schema",
            Group::Gpu => "gpu",
            Group::Api => "api",
        }
    }
}

/// What a rule is, for `rules`, `explain`, `--select` and SARIF.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Meta {
    pub code: &'static str,
    pub name: &'static str,
    pub group: Group,
    pub severity: Severity,
    /// The rule's doc comment: What it checks / Why it matters / Example / Fix.
    pub doc: &'static str,
}

impl Meta {
    /// The doc comment as text: `///` leaves one space at the start of every line.
    pub fn doc_text(&self) -> String {
        self.doc
            .lines()
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Declare a rule: its doc comment becomes `tao-k8s explain` text.
#[macro_export]
macro_rules! rule {
    ($(#[doc = $doc:expr])* $vis:vis struct $name:ident { code: $code:expr, name: $kebab:expr, group: $group:ident, severity: $sev:ident $(,)? }) => {
        $(#[doc = $doc])*
        $vis struct $name;
        impl $name {
            pub const META: $crate::lint::Meta = $crate::lint::Meta {
                code: $code,
                name: $kebab,
                group: $crate::lint::Group::$group,
                severity: $crate::diag::Severity::$sev,
                doc: concat!($($doc, "\n"),*),
            };
        }
        impl $crate::lint::HasMeta for $name {
            fn meta(&self) -> &'static $crate::lint::Meta {
                &Self::META
            }
        }
    };
}

/// Where a rule puts its findings about one document: only as many are kept as the report
/// still has room for, the others are counted. A hostile document with a million findings
/// (a Pod with 200,000 inline passwords) so never holds a million of them at once.
#[derive(Debug, Default)]
pub struct Findings {
    kept: Vec<Finding>,
    room: usize,
    over: usize,
    /// The span of every finding, kept or counted (for the masks of the redaction rules).
    spans: Option<Vec<Span>>,
}

impl Findings {
    fn new(room: usize) -> Findings {
        Findings {
            kept: Vec::new(),
            room,
            over: 0,
            spans: None,
        }
    }

    /// Keep the finding, or count it when there is no room left.
    pub fn push(&mut self, f: Finding) {
        if let Some(spans) = &mut self.spans {
            spans.push(f.span.clone());
        }
        if self.kept.len() < self.room {
            self.kept.push(f);
        } else {
            self.over += 1;
        }
    }
}

/// A rule.
pub trait Rule: HasMeta + Sync {
    /// Findings in one document.
    fn check(&self, _doc: &Document, _out: &mut Findings) {}
    /// Findings about how documents of one stream relate (a Job and its Service), reported
    /// with the index (in `docs`) of the document they are about.
    fn check_stream(&self, _docs: &[Document], _out: &mut Vec<(usize, Finding)>) {}
    /// For `check_stream`: the parts of a document to keep until the stream ends (paths from
    /// the root; `apiVersion`, `kind` and the name and namespace are always kept). Documents no rule keeps
    /// are dropped as soon as they are checked, so a long stream is never held whole.
    fn keeps(&self, _doc: &Document) -> Vec<Vec<Step>> {
        Vec::new()
    }
}

/// What a rule is; `rule!` implements it from the declaration.
pub trait HasMeta {
    fn meta(&self) -> &'static Meta;
}

/// A finding with its rule and document, ready to report.
#[derive(Debug, Clone, Serialize)]
pub struct Reported {
    pub diagnostic: Diagnostic,
    /// `kind/namespace/name` of the document.
    pub object: Option<String>,
    /// The JSON path of the node in its document.
    pub json_path: String,
    pub line: usize,
    pub column: usize,
}

pub use crate::codes::{TOO_MANY, UNKNOWN_KIND, UNUSED_SUPPRESSION};
/// The annotation that suppresses codes on one object: `"TK101,TK305 # why"`.
pub const IGNORE_ANNOTATION: &str = "tao-k8s.io/ignore";

/// Which rules run.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Codes, kebab names or groups, in any case; empty = all.
    pub select: Vec<String>,
    pub ignore: Vec<String>,
    /// Most reports for one source; the rest are counted in one last report (TK009) with
    /// their highest severity, so that a hostile input cannot fill memory with findings.
    /// `None` = no limit.
    pub max_findings: Option<usize>,
    /// Custom kinds whose objects strict-schema checks (`--crd`).
    pub crds: Option<std::sync::Arc<crate::crd::Catalogue>>,
    /// A kind with no schema is an error, not a note (`--strict-kinds`).
    pub strict_kinds: bool,
    /// The Kubernetes version objects are checked against; `None` = the newest supported.
    pub kube_version: Option<KubeVersion>,
}

/// Whether a code, rule name or group names the rule, in any case (`tk101`, `REDACTION`).
fn matches(meta: &Meta, names: &[String]) -> bool {
    names.iter().any(|n| {
        [meta.code, meta.name, meta.group.name()]
            .iter()
            .any(|m| m.eq_ignore_ascii_case(n))
    })
}

/// Rules that run only when `--select` names them by code or name, never by default or by
/// their group: a policy some projects want and others do not (`secret-data`: no Secret
/// object with values in the manifest at all).
pub const OPT_IN: [&str; 1] = ["TK102"];

impl Selection {
    /// The rules this selection runs, in registry order.
    pub fn rules(&self) -> Vec<&'static dyn Rule> {
        let named = |meta: &Meta| {
            self.select
                .iter()
                .any(|n| meta.code.eq_ignore_ascii_case(n) || meta.name.eq_ignore_ascii_case(n))
        };
        registry::RULES
            .iter()
            .copied()
            .filter(|r| match OPT_IN.contains(&r.meta().code) {
                true => named(r.meta()),
                false => self.select.is_empty() || matches(r.meta(), &self.select),
            })
            .filter(|r| !matches(r.meta(), &self.ignore))
            .collect()
    }

    /// Names in `--select`/`--ignore` that match no rule, code or group.
    pub fn unknown(&self) -> Vec<&str> {
        self.select
            .iter()
            .chain(&self.ignore)
            .filter(|n| {
                !registry::RULES
                    .iter()
                    .any(|r| matches(r.meta(), std::slice::from_ref(n)))
            })
            .map(String::as_str)
            .collect()
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

/// Lint every document of one source, one document at a time. `Err` when the text is not YAML.
pub fn lint(source: &Source, selection: &Selection) -> Result<Vec<Reported>, yaml::SyntaxError> {
    lint_stream(source, selection, None, &mut |each| {
        yaml::parse_each(source, yaml::Limits::default(), each)
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
        yaml::parse_each(source, yaml::Limits::default(), each)
    })?;
    masks.sort_by_key(|s| (s.start, s.end));
    masks.dedup();
    Ok((reports, masks))
}

/// Lint a stream that is already parsed (`tao-k8s render` checks its own output).
pub fn lint_parsed(
    source: &Source,
    selection: &Selection,
    mut stream: yaml::Stream,
) -> Vec<Reported> {
    let mut documents = std::mem::take(&mut stream.documents);
    let booleans = stream.yaml11_booleans.clone();
    let mut stream = Some(stream);
    // The feed cannot fail: the stream is parsed already.
    lint_stream(source, selection, None, &mut |each| {
        for document in std::mem::take(&mut documents) {
            each(document, &booleans);
        }
        Ok(stream.take().unwrap_or_default())
    })
    .unwrap_or_default()
}

/// A source of documents: it hands each document (with the YAML 1.1 boolean spans so far) to
/// the callback, then returns the stream's duplicates and spans.
type Feed<'f> =
    dyn FnMut(&mut dyn FnMut(Node, &[Span])) -> Result<yaml::Stream, yaml::SyntaxError> + 'f;

fn lint_stream(
    source: &Source,
    selection: &Selection,
    mut masks: Option<&mut Vec<Span>>,
    feed: &mut Feed,
) -> Result<Vec<Reported>, yaml::SyntaxError> {
    let rules = selection.rules();
    // The redaction rules run for the masks when they are not selected: their findings are
    // not reported.
    let hidden: Vec<&dyn Rule> = match masks {
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
    let kube_version = selection.kube_version.unwrap_or(KubeVersion::NEWEST);
    let mut out = Collected::new(selection.max_findings);
    // Per document: its label; findings carry the document's index.
    let mut labels: Vec<String> = Vec::new();
    let mut kept: Vec<(usize, Node)> = Vec::new();
    // What `Document::new` reads.
    let always: Vec<Vec<Step>> = [
        "apiVersion",
        "kind",
        "metadata.name",
        "metadata.generateName",
        "metadata.namespace",
    ]
    .map(steps)
    .to_vec();
    let stream = feed(&mut |node, yaml11| {
        let Some(mut doc) = Document::new(source, &node, yaml11) else {
            if !matches!(node.value, Value::Null) {
                out.push(note(source, &node, "a document without `apiVersion` and `kind` is not a Kubernetes object: skipped"));
            }
            return;
        };
        let index = labels.len();
        labels.push(doc.label());
        out.suppressions(source, &doc, index, &labels[index]);
        doc.kube_version = kube_version;
        if schema_checked
            && crate::k8s::kind(doc.api_version, doc.kind, kube_version)
                == crate::k8s::Kind::Unknown
        {
            let verdict = match &selection.crds {
                Some(crds) => crds.check(&doc),
                None => Verdict::Unknown,
            };
            match verdict {
                Verdict::Checked(findings) => {
                    let meta = &rules::StrictSchema::META;
                    let mut found = Findings::new(out.room());
                    findings.into_iter().for_each(|f| found.push(f));
                    for f in found.kept {
                        out.finding(source, &labels[index], index, meta, f);
                    }
                    out.over_room(index, meta, found.over);
                }
                Verdict::NoSchema(why) => {
                    out.unknown_kind(source, &node, index, &why, selection.strict_kinds);
                }
                Verdict::Unknown => {
                    let why = format!(
                        "kind {}/{} is not a built-in kind of Kubernetes {}: its schema is not checked",
                        doc.api_version, doc.kind, doc.kube_version
                    );
                    out.unknown_kind(source, &node, index, &why, selection.strict_kinds);
                }
            }
        }
        let redaction = |rule: &&dyn Rule| rule.meta().group == Group::Redaction;
        for (rule, shown) in rules
            .iter()
            .map(|r| (r, true))
            .chain(hidden.iter().map(|r| (r, false)))
        {
            let mut found = Findings::new(if shown { out.room() } else { 0 });
            if masks.is_some() && redaction(rule) {
                found.spans = Some(Vec::new());
            }
            rule.check(&doc, &mut found);
            if let (Some(masks), Some(spans)) = (masks.as_deref_mut(), found.spans) {
                masks.extend(spans);
            }
            if shown {
                for f in found.kept {
                    out.finding(source, &labels[index], index, rule.meta(), f);
                }
                out.over_room(index, rule.meta(), found.over);
            }
        }
        let mut paths: Vec<Vec<Step>> = rules.iter().flat_map(|r| r.keeps(&doc)).collect();
        if !paths.is_empty() {
            paths.extend(always.iter().cloned());
            let paths: Vec<&[Step]> = paths.iter().map(Vec::as_slice).collect();
            kept.push((index, prune(&node, &paths)));
        }
    })?;
    let docs: Vec<Document> = kept
        .iter()
        .filter_map(|(_, node)| Document::new(source, node, &stream.yaml11_booleans))
        .map(|doc| Document {
            kube_version,
            ..doc
        })
        .collect();
    for rule in &rules {
        let mut found = Vec::new();
        rule.check_stream(&docs, &mut found);
        for (j, f) in found {
            let index = kept[j].0;
            out.finding(source, &labels[index], index, rule.meta(), f);
        }
    }
    if rules
        .iter()
        .any(|r| r.meta().code == rules::DuplicateKey::META.code)
    {
        out.duplicates(source, &stream.duplicates);
    }
    out.unused_suppressions(source, &labels);
    Ok(out.finish(source))
}

/// What lint_stream reports beside the rules, on the documents and the stream.
impl Collected {
    /// The object's suppression annotation, read before its rules run; a code that was renamed
    /// still suppresses what it meant, with a note.
    fn suppressions(&mut self, source: &Source, doc: &Document, index: usize, label: &str) {
        let Some((codes, at)) = suppressions(doc) else {
            return;
        };
        let mut renamed = Vec::new();
        let codes = codes
            .into_iter()
            .map(
                |code| match crate::codes::RENAMED.iter().find(|(old, _)| *old == code) {
                    Some(&(old, new)) => {
                        renamed.push((old, new));
                        new.to_string()
                    }
                    None => code,
                },
            )
            .collect();
        for (old, new) in renamed {
            let (line, column) = source.line_col(at.span.start);
            let mut d = Diagnostic::warning(
                UNUSED_SUPPRESSION,
                format!("`{IGNORE_ANNOTATION}` names {old}, which is now {new}"),
            )
            .primary(at.span.clone(), "a renamed code")
            .help(format!("write {new}; {old} is still read as {new} for now"));
            d.severity = Severity::Note;
            self.push(Reported {
                diagnostic: d,
                object: Some(label.to_string()),
                json_path: String::new(),
                line,
                column,
            });
        }
        self.suppressed
            .insert(index, (codes, at.span.clone(), Vec::new()));
    }

    /// A kind with no known schema: a note, unless the object suppresses it (a custom
    /// resource, say), which uses the suppression.
    fn unknown_kind(&mut self, source: &Source, node: &Node, index: usize, why: &str, error: bool) {
        match self.suppressed.get_mut(&index) {
            Some((codes, _, reported)) if codes.iter().any(|c| c == UNKNOWN_KIND) => {
                reported.push(UNKNOWN_KIND);
            }
            _ => {
                let mut reported = note(source, node, why);
                if error {
                    reported.diagnostic.severity = Severity::Error;
                    reported.diagnostic.help = Some(
                        "pass its CustomResourceDefinition with `--crd`, or suppress TK021 on \
                         the object"
                            .into(),
                    );
                }
                self.push(reported);
            }
        }
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

    /// The suppressions that suppress nothing.
    fn unused_suppressions(&mut self, source: &Source, labels: &[String]) {
        let mut suppressed: Vec<_> = std::mem::take(&mut self.suppressed).into_iter().collect();
        suppressed.sort_by_key(|(i, _)| *i);
        for (i, (codes, span, reported)) in suppressed {
            for code in codes.iter().filter(|c| !reported.contains(&c.as_str())) {
                let d = Diagnostic::warning(
                    UNUSED_SUPPRESSION,
                    format!(
                        "`{IGNORE_ANNOTATION}` suppresses {code}, which reports nothing on {}",
                        labels[i]
                    ),
                )
                .primary(span.clone(), "nothing to suppress")
                .help("remove it, so that stale suppressions do not pile up");
                let (line, column) = source.line_col(span.start);
                self.push(Reported {
                    diagnostic: d,
                    object: Some(labels[i].clone()),
                    json_path: String::new(),
                    line,
                    column,
                });
            }
        }
    }
}

/// The reports of one source, at most `cap` of them kept.
struct Collected {
    cap: usize,
    reports: Vec<Reported>,
    /// Reports over the cap: how many, and the highest severity among them.
    over: Option<(usize, Severity)>,
    /// Documents with a suppression annotation: its codes and node, and the codes reported
    /// on the document before suppression.
    suppressed: std::collections::HashMap<usize, (Vec<String>, Span, Vec<&'static str>)>,
}

impl Collected {
    fn new(cap: Option<usize>) -> Collected {
        Collected {
            cap: cap.unwrap_or(usize::MAX),
            reports: Vec::new(),
            over: None,
            suppressed: std::collections::HashMap::new(),
        }
    }

    fn push(&mut self, r: Reported) {
        if self.reports.len() < self.cap {
            self.reports.push(r);
        } else {
            self.count_over(r.diagnostic.severity);
        }
    }

    fn count_over(&mut self, severity: Severity) {
        self.count_many_over(1, severity);
    }

    fn count_many_over(&mut self, count: usize, severity: Severity) {
        let (n, highest) = self.over.get_or_insert((0, Severity::Note));
        *n += count;
        *highest = (*highest).max(severity);
    }

    /// How many more reports are kept.
    fn room(&self) -> usize {
        self.cap.saturating_sub(self.reports.len())
    }

    /// Whether document `index` suppresses the code of `meta`; notes that the code reported
    /// something on it, so that the suppression is not stale.
    fn suppresses(&mut self, index: usize, meta: &'static Meta) -> bool {
        let Some((codes, _, reported)) = self.suppressed.get_mut(&index) else {
            return false;
        };
        if !reported.contains(&meta.code) {
            reported.push(meta.code);
        }
        codes.iter().any(|c| c == meta.code)
    }

    /// `count` findings of a rule on document `index` that a [`Findings`] had no room for.
    fn over_room(&mut self, index: usize, meta: &'static Meta, count: usize) {
        if count > 0 && !self.suppresses(index, meta) {
            self.count_many_over(count, meta.severity);
        }
    }

    /// A rule's finding on document `index`, unless the document suppresses its code.
    fn finding(
        &mut self,
        source: &Source,
        label: &str,
        index: usize,
        meta: &'static Meta,
        f: Finding,
    ) {
        if self.suppresses(index, meta) {
            return;
        }
        if self.reports.len() >= self.cap {
            // Counted without being built: the path and label are not formatted.
            self.count_over(meta.severity);
            return;
        }
        let (line, column) = source.line_col(f.span.start);
        let json_path = display_path(&f.path);
        let diagnostic = Diagnostic {
            code: meta.code,
            severity: meta.severity,
            message: f.message,
            help: f.help,
            path: Some(json_path.clone()),
            labels: Vec::new(),
        }
        .primary(f.span, meta.name);
        self.push(Reported {
            diagnostic,
            object: Some(label.to_string()),
            json_path,
            line,
            column,
        });
    }

    /// The reports in source order, and the one that counts those over the cap.
    fn finish(mut self, source: &Source) -> Vec<Reported> {
        self.reports
            .sort_by_key(|r| (r.line, r.column, r.diagnostic.code));
        if let Some((n, severity)) = self.over {
            let end = source.text().len();
            let (line, column) = source.line_col(end);
            let mut diagnostic = Diagnostic::error(
                TOO_MANY,
                format!(
                    "{n} more finding{} in {} not reported: over the limit of {}",
                    if n == 1 { "" } else { "s" },
                    source.name(),
                    self.cap
                ),
            )
            .help("fix the ones reported, or raise the limit with --max-findings");
            diagnostic.severity = severity;
            self.reports.push(Reported {
                diagnostic,
                object: None,
                json_path: String::new(),
                line,
                column,
            });
        }
        self.reports
    }
}

fn note(source: &Source, node: &Node, message: &str) -> Reported {
    let (line, column) = source.line_col(node.span.start);
    let mut diagnostic = Diagnostic::warning(UNKNOWN_KIND, message);
    diagnostic.severity = Severity::Note;
    Reported {
        diagnostic: diagnostic.primary(node.span.clone(), "this document"),
        object: None,
        json_path: String::new(),
        line,
        column,
    }
}

/// The codes an object's `tao-k8s.io/ignore` annotation names, and the annotation's node.
fn suppressions<'a>(doc: &Document<'a>) -> Option<(Vec<String>, &'a Node)> {
    let node = doc
        .root
        .get("metadata")?
        .get("annotations")?
        .get(IGNORE_ANNOTATION)?;
    let Value::Str(text) = &node.value else {
        return None;
    };
    let codes = text.split('#').next().unwrap_or_default();
    Some((
        codes
            .split(',')
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect(),
        node,
    ))
}

/// Steps from dotted keys: `steps("spec.template.spec")`.
pub fn steps(dotted: &str) -> Vec<Step> {
    dotted
        .split('.')
        .map(|k| Step::Key(k.to_string()))
        .collect()
}
