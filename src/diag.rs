//! Diagnostics are data: a stable code, a severity, a message that says what is wrong, a help
//! that says how to fix it, the field path, and labelled spans in one source. The CLI renders
//! them (code frames, JSON); nothing here prints.

use crate::source::Span;
use serde::Serialize;
use std::fmt;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

/// A labelled span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Label {
    pub span: Span,
    pub message: String,
    /// The primary label is where the problem is; others give context.
    pub primary: bool,
}

/// One finding about one input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// The field path in the input, e.g. `spec.resources.gpusPerNode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub labels: Vec<Label>,
}

impl Diagnostic {
    /// An error with no location yet.
    pub fn error(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            help: None,
            path: None,
            labels: Vec::new(),
        }
    }

    /// A warning with no location yet.
    pub fn warning(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    /// Add how to fix it.
    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Name the field path.
    pub fn at_path(mut self, path: impl fmt::Display) -> Diagnostic {
        self.path = Some(path.to_string());
        self
    }

    /// Point at where the problem is.
    pub fn primary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: true,
        });
        self
    }

    /// Point at something related.
    pub fn secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: false,
        });
        self
    }

    /// Whether this diagnostic refuses the input.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// True when any diagnostic refuses the input.
pub fn has_errors(diags: &[Diagnostic]) -> bool {
    diags.iter().any(Diagnostic::is_error)
}
