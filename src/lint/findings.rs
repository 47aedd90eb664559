//! What is kept of the findings, and how many: a rule's findings on one document
//! ([`Findings`]) and the reports of one source ([`Collected`]), each holding only as many as
//! the report has room for and counting the rest, which one last report (TK009) sums up.

use super::suppression::Suppressions;
use super::{Finding, Meta, TOO_MANY, UNKNOWN_KIND};
use crate::diag::{Diagnostic, Severity};
use crate::source::{Source, Span};
use crate::yaml::{Node, Step, display_path};
use serde::Serialize;

/// Where a rule puts its findings about one document: only as many are kept as the report
/// still has room for, the others are counted. A hostile document with a million findings
/// (a Pod with 200,000 inline passwords) so never holds a million of them at once.
#[derive(Debug, Default)]
pub struct Findings {
    pub(super) kept: Vec<Finding>,
    room: usize,
    pub(super) over: usize,
    /// The span of every finding, kept or counted (for the masks of the redaction rules).
    pub(super) spans: Option<Vec<Span>>,
    /// Only findings under this path are taken (the replicated Job of a JobSet being
    /// checked again: the rest of the object was checked with its first one).
    pub(super) within: Option<Vec<Step>>,
}

impl Findings {
    pub(super) fn new(room: usize) -> Findings {
        Findings {
            kept: Vec::new(),
            room,
            over: 0,
            spans: None,
            within: None,
        }
    }

    /// Keep the finding, or count it when there is no room left.
    pub fn push(&mut self, f: Finding) {
        if let Some(within) = &self.within
            && !f.path.starts_with(within)
        {
            return;
        }
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

/// The reports of one source, at most `cap` of them kept.
pub(super) struct Collected {
    cap: usize,
    reports: Vec<Reported>,
    /// Reports over the cap: how many, and the highest severity among them.
    over: Option<(usize, Severity)>,
    /// The documents' suppression annotations, and what was reported on them.
    pub(super) suppressed: Suppressions,
}

impl Collected {
    pub(super) fn new(cap: Option<usize>) -> Collected {
        Collected {
            cap: cap.unwrap_or(usize::MAX),
            reports: Vec::new(),
            over: None,
            suppressed: Suppressions::default(),
        }
    }

    pub(super) fn push(&mut self, r: Reported) {
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
    pub(super) fn room(&self) -> usize {
        self.cap.saturating_sub(self.reports.len())
    }

    /// `count` findings of a rule on document `index` that a [`Findings`] had no room for.
    pub(super) fn over_room(&mut self, index: usize, meta: &'static Meta, count: usize) {
        if count > 0 && !self.suppressed.suppresses(index, meta.code) {
            self.count_many_over(count, meta.severity);
        }
    }

    /// What a rule kept in `found` on document `index`, and how many it had no room for.
    #[inline]
    pub(super) fn found(
        &mut self,
        source: &Source,
        label: &str,
        index: usize,
        meta: &'static Meta,
        found: Findings,
    ) {
        for f in found.kept {
            self.finding(source, label, index, meta, f);
        }
        self.over_room(index, meta, found.over);
    }

    /// A rule's finding on document `index`, unless the document suppresses its code.
    pub(super) fn finding(
        &mut self,
        source: &Source,
        label: &str,
        index: usize,
        meta: &'static Meta,
        f: Finding,
    ) {
        if self.suppressed.suppresses(index, meta.code) {
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
    pub(super) fn finish(mut self, source: &Source) -> Vec<Reported> {
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

/// A note (TK021) on a whole document: not a Kubernetes object, or of a kind with no schema.
pub(super) fn note(source: &Source, node: &Node, message: &str) -> Reported {
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
