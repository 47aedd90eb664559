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

/// The one step every diagnostic passes before anything shows it (a terminal, JSON, SARIF, a
/// CI annotation): credentials are masked in its message, help, field path and labels, and
/// control characters are escaped, so that no check, present or future, can echo a credential
/// or forge a line by quoting a value.
///
/// Two kinds of evidence are masked: credential shapes anywhere in the text
/// ([`crate::secrets::redact`]), and the values the input itself holds as credentials (a
/// password under a `password` key is only recognisable beside its key; a message that quotes
/// the value alone would show it).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Credential values of the input, longest first.
    known: Vec<String>,
    /// All of them searched at once: a file can hold thousands, and every text of every
    /// diagnostic is searched (one search per value took a 200,000-password Pod's 10,000
    /// reports to 50 s of CPU).
    matcher: Option<aho_corasick::AhoCorasick>,
}

/// Values shorter than this are not searched for in messages: they would mask ordinary words.
const MIN_KNOWN: usize = 6;

impl Redactor {
    /// Masks the values given (the credentials found in one input) wherever they appear, and
    /// every credential shape.
    pub fn with_values(values: impl IntoIterator<Item = String>) -> Redactor {
        let mut known: Vec<String> = values
            .into_iter()
            .map(|v| v.trim_matches(['"', '\'']).to_string())
            .filter(|v| v.chars().count() >= MIN_KNOWN)
            .collect();
        known.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        known.dedup();
        let matcher = (!known.is_empty())
            .then(|| aho_corasick::AhoCorasick::new(&known).ok())
            .flatten();
        Redactor { known, matcher }
    }

    /// Where the known values are in `text`: overlapping ones merged, in order.
    fn known_ranges(&self, text: &str) -> Vec<std::ops::Range<usize>> {
        let mut ranges: Vec<std::ops::Range<usize>> = match &self.matcher {
            Some(matcher) => matcher
                .find_overlapping_iter(text)
                .map(|m| m.range())
                .collect(),
            // No automaton could be built (over its size limits): one search per value.
            None => self
                .known
                .iter()
                .flat_map(|v| text.match_indices(v.as_str()).map(|(i, m)| i..i + m.len()))
                .collect(),
        };
        ranges.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
        let mut merged: Vec<std::ops::Range<usize>> = Vec::new();
        for r in ranges {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        merged
    }

    /// The credential values of a YAML tree: every string the detector flags, judged with its
    /// key (so `password: ...` counts), and every map key that is itself a credential.
    pub fn for_tree(root: &crate::yaml::Node) -> Redactor {
        let mut values = Vec::new();
        collect(root, "", &mut values);
        Redactor::with_values(values)
    }

    /// The credential values it masks.
    pub fn into_values(self) -> Vec<String> {
        self.known
    }

    /// A text with credentials masked and control characters escaped.
    pub fn text(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for r in self.known_ranges(text) {
            out.push_str(&text[last..r.start]);
            out.push_str(&crate::secrets::mask(&text[r.clone()]));
            last = r.end;
        }
        out.push_str(&text[last..]);
        let out = crate::secrets::redact_text(&out).into_owned();
        escape_controls(&out)
    }

    /// A source excerpt with credentials masked in place: byte offsets (and so the spans of
    /// a code frame) stay valid.
    pub fn frame<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        let merged = self.known_ranges(text);
        if merged.is_empty() {
            return crate::secrets::redact(text);
        }
        let known = crate::secrets::mask_ranges(text, merged).into_owned();
        crate::secrets::redact(&known).into_owned().into()
    }

    /// A diagnostic as it may be shown.
    pub fn diagnostic(&self, d: &Diagnostic) -> Diagnostic {
        Diagnostic {
            code: d.code,
            severity: d.severity,
            message: self.text(&d.message),
            help: d.help.as_deref().map(|h| self.text(h)),
            path: d.path.as_deref().map(|p| self.text(p)),
            labels: d
                .labels
                .iter()
                .map(|l| Label {
                    span: l.span.clone(),
                    message: self.text(&l.message),
                    primary: l.primary,
                })
                .collect(),
        }
    }
}

fn collect(node: &crate::yaml::Node, key: &str, out: &mut Vec<String>) {
    use crate::yaml::Value;
    match &node.value {
        Value::Str(s) => out.extend(
            crate::secrets::scan_assignment(key, s)
                .into_iter()
                .map(|f| s[f.range].to_string()),
        ),
        Value::Seq(items) => {
            // An argv: a value is a credential next to its option (`[--token, X]`, `-pX`).
            let words = crate::yaml::words(items);
            out.extend(
                crate::secrets::scan_argv(&words)
                    .into_iter()
                    .map(|(i, f)| words[i][f.range].to_string()),
            );
            items.iter().for_each(|item| collect(item, key, out))
        }
        Value::Map(entries) => {
            for (k, v) in entries {
                let name = crate::yaml::key_text(k);
                out.extend(
                    crate::secrets::scan_text(&name)
                        .into_iter()
                        .map(|f| name[f.range].to_string()),
                );
                collect(v, &name, out);
            }
        }
        _ => {}
    }
}

/// Control characters (C0 but tab, DEL, C1, the Unicode line and paragraph separators) as
/// escapes: `\u{0}`, `\n`, `\u{1b}`. A value quoted in a message stays on its line.
pub fn escape_controls(text: &str) -> String {
    if !text.chars().any(is_escaped) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if is_escaped(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn is_escaped(c: char) -> bool {
    (c.is_control() && c != '\t') || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `text` with its control characters escaped (`\u{1b}`, `\r`...): what the cluster wrote
/// (a node's name, a pod's message) cannot steer the terminal it is shown on.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// A value as written, for messages: shortened to `max` characters, control characters
/// escaped, and credential-shaped runs masked (a label value may hold a token by mistake).
/// Masked before it is cut, so that a cut credential is still recognised.
pub fn shown(s: &str, max: usize) -> String {
    let masked = crate::secrets::redact_text(s);
    let mut cut: String = masked
        .chars()
        .take(max)
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    if masked.chars().count() > max {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_text_of_a_diagnostic_is_masked_and_escaped() {
        let password = "Fake0Pass0Word0Example";
        let token = format!("ghp_{}", "FAKE".repeat(9));
        let redactor = Redactor::with_values([password.to_string(), "short".to_string()]);
        let d = Diagnostic::error("TK000", format!("value `{password}` and `{token}`"))
            .help(format!("not `{password}`\nforged: line"))
            .at_path(format!("spec.env.{password}"))
            .primary(0..1, format!("`{token}`\0"));
        let shown = redactor.diagnostic(&d);
        let all = format!("{shown:?}");
        for secret in [password, token.as_str()] {
            for window in secret.as_bytes().windows(6) {
                let window = std::str::from_utf8(window).unwrap();
                assert!(!all.contains(window), "{window} in {all}");
            }
        }
        assert_eq!(shown.help.as_deref(), Some("not `****`\\nforged: line"));
        let label = &shown.labels[0].message;
        assert!(
            label.starts_with("`ghp_***") && label.ends_with("*`\\u{0}"),
            "{label}"
        );
        // Too short to search for: masking it would mask words.
        assert_eq!(redactor.text("a short word"), "a short word");
    }
}
