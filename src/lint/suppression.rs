//! Suppressions: the codes an object's `tao-k8s.io/ignore` annotation names are not reported
//! on it. A suppression that suppresses nothing is reported (TK020), so that stale ones do
//! not pile up; a code that was renamed still suppresses what it meant, with a note.

use super::findings::{Collected, Reported};
use super::{Document, IGNORE_ANNOTATION, UNUSED_SUPPRESSION};
use crate::diag::{Diagnostic, Severity};
use crate::source::{Source, Span};
use crate::yaml::{Node, Value};
use std::collections::HashMap;

/// The suppression annotations of a stream's documents, by document index.
#[derive(Debug, Default)]
pub(super) struct Suppressions(HashMap<usize, Suppression>);

#[derive(Debug)]
struct Suppression {
    /// The codes the annotation names, renamed codes read as their new names.
    codes: Vec<String>,
    /// The annotation's value.
    span: Span,
    /// The codes reported on the document before suppression.
    reported: Vec<&'static str>,
}

impl Suppressions {
    /// Whether document `index` suppresses `code`; notes that the code reported something
    /// on it, so that the suppression is not stale.
    pub(super) fn suppresses(&mut self, index: usize, code: &'static str) -> bool {
        let Some(s) = self.0.get_mut(&index) else {
            return false;
        };
        if !s.reported.contains(&code) {
            s.reported.push(code);
        }
        s.codes.iter().any(|c| c == code)
    }
}

/// The suppression reports, beside the rules'.
impl Collected {
    /// The object's suppression annotation, read before its rules run; a code that was renamed
    /// still suppresses what it meant, with a note.
    pub(super) fn suppressions(
        &mut self,
        source: &Source,
        doc: &Document,
        index: usize,
        label: &str,
    ) {
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
        let suppression = Suppression {
            codes,
            span: at.span.clone(),
            reported: Vec::new(),
        };
        self.suppressed.0.insert(index, suppression);
    }

    /// The suppressions that suppress nothing.
    pub(super) fn unused_suppressions(&mut self, source: &Source, labels: &[String]) {
        let mut suppressed: Vec<_> = std::mem::take(&mut self.suppressed.0).into_iter().collect();
        suppressed.sort_by_key(|(i, _)| *i);
        for (i, s) in suppressed {
            for code in s.codes.iter().filter(|c| !s.reported.contains(&c.as_str())) {
                let d = Diagnostic::warning(
                    UNUSED_SUPPRESSION,
                    format!(
                        "`{IGNORE_ANNOTATION}` suppresses {code}, which reports nothing on {}",
                        labels[i]
                    ),
                )
                .primary(s.span.clone(), "nothing to suppress")
                .help("remove it, so that stale suppressions do not pile up");
                let (line, column) = source.line_col(s.span.start);
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
