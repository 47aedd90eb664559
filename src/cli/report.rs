//! Diagnostics for people: code frames on stderr, through annotate-snippets (cargo's
//! renderer), with the code, the field path and the help.

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
use std::process::ExitCode;
use tao_k8s::diag::{Diagnostic, Severity};
use tao_k8s::secrets;
use tao_k8s::source::Source;

/// Where diagnostics go and how they look.
pub struct Reporter {
    pub styled: bool,
}

impl Reporter {
    fn renderer(&self) -> Renderer {
        if self.styled {
            Renderer::styled()
        } else {
            Renderer::plain()
        }
    }

    /// Print diagnostics, with code frames when they point into `source`.
    pub fn diagnostics(&self, source: Option<&Source>, diags: &[Diagnostic]) {
        for d in diags {
            eprintln!("{}\n", self.render(source, d));
        }
    }

    /// One diagnostic as text.
    pub fn render(&self, source: Option<&Source>, d: &Diagnostic) -> String {
        let level = match d.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
            Severity::Note => Level::NOTE,
        };
        let title = level.primary_title(d.message.as_str()).id(d.code);
        let mut group = Group::with_title(title);
        if let (Some(src), false) = (source, d.labels.is_empty()) {
            // Never echo a credential from the input back into a terminal or a CI log.
            let text = secrets::redact(src.text());
            let len = text.len();
            let snippet = Snippet::source(text)
                .path(src.name())
                .annotations(d.labels.iter().map(|l| {
                    let kind = if l.primary {
                        AnnotationKind::Primary
                    } else {
                        AnnotationKind::Context
                    };
                    // An empty span (a missing field, an error at the end) still needs a caret.
                    let start = l.span.start.min(len);
                    let end = if l.span.end > start {
                        l.span.end.min(len)
                    } else {
                        (start + 1).min(len)
                    };
                    kind.span(start..end).label(l.message.as_str())
                }));
            group = group.element(snippet);
        }
        let path = d
            .path
            .as_deref()
            .filter(|p| !d.message.contains(&format!("`{p}`")));
        if let Some(path) = path {
            group = group.element(Level::NOTE.message(format!("field: {path}")));
        }
        if let Some(help) = &d.help {
            group = group.element(Level::HELP.message(help.as_str()));
        }
        let report = [group];
        self.renderer().render(&report).to_string()
    }

    /// The closing line of a refused input.
    pub fn summary(&self, diags: &[Diagnostic], name: &str) {
        let errors = diags.iter().filter(|d| d.is_error()).count();
        let warnings = diags.len() - errors;
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        eprintln!(
            "error: {name} refused: {}, {}",
            plural(errors, "error"),
            plural(warnings, "warning")
        );
    }

    /// A note for the user.
    pub fn note(&self, message: &str) {
        eprintln!("note: {message}");
    }

    /// An I/O problem: exit 2.
    pub fn io_error(&self, message: &str) -> ExitCode {
        eprintln!("error: {message}");
        ExitCode::from(2)
    }
}
