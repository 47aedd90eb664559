//! `tao-k8s lint`: rules over any Kubernetes YAML (ours, hand-written or from Helm). A rule
//! is one file in `rules/`, registered in `registry.rs`; it sees one document at a time (or
//! the whole stream, for rules that relate objects) and reports findings at spanned nodes.
//! Findings are diagnostics: the CLI renders them as text, JSON, SARIF or GitHub annotations.
//!
//! Here: what a rule is (the [`Rule`] trait, the `rule!` macro, [`Meta`] and [`Group`]) and
//! the helpers every rule uses. The rest has a module of its own: `selection` (which rules
//! run), `engine` (running them over a stream of documents, CRD dispatch), `findings` (what
//! is kept of their findings, the cap), `suppression` (the `tao-k8s.io/ignore` annotation
//! and its reports); `api` and `pods` are what the rules share.

pub mod api;
mod engine;
mod findings;
pub mod pods;
pub mod policy;
pub mod registry;
pub mod rules;
mod selection;
mod suppression;

use crate::diag::Severity;
pub use crate::kube::{Document, Finding, KubeVersion};
use crate::yaml::Step;
use serde::Serialize;

pub use crate::codes::{TOO_MANY, UNKNOWN_KIND, UNUSED_SUPPRESSION};
pub use crate::yaml::dotted as steps;
pub use engine::{lint, lint_masked, lint_parsed};
pub use findings::{Findings, Reported};
pub use selection::{OPT_IN, Selection};

/// The annotation that suppresses codes on one object: `"TK101,TK305 # why"`.
pub const IGNORE_ANNOTATION: &str = "tao-k8s.io/ignore";

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
