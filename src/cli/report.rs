//! Diagnostics for people: code frames on stderr, through annotate-snippets (cargo's
//! renderer), with the code, the field path and the help.

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
use std::io::Write;
use std::process::ExitCode;
use tao_k8s::diag::{Diagnostic, Redactor, Severity};
use tao_k8s::secrets;
use tao_k8s::source::{Source, Span};

/// Where diagnostics go and how they look.
pub struct Reporter {
    styled: bool,
}

impl Reporter {
    pub fn new(styled: bool) -> Reporter {
        Reporter { styled }
    }

    fn renderer(&self) -> Renderer {
        if self.styled {
            Renderer::styled()
        } else {
            Renderer::plain()
        }
    }

    /// Print diagnostics, with code frames when they point into `source`. Every text passes
    /// the source's [`Redactor`] first.
    pub fn diagnostics(&self, source: Option<&Source>, diags: &[Diagnostic]) {
        if diags.is_empty() {
            return;
        }
        let redactor = source.map_or_else(Redactor::default, redactor_for);
        let mut err = std::io::BufWriter::new(std::io::stderr().lock());
        for d in diags {
            let _ = writeln!(
                err,
                "{}\n",
                self.render(source, d, &redactor, &Masks::default())
            );
        }
    }

    /// One diagnostic as text, masked by `redactor`, with `masks` (spans of credentials found
    /// by other means, such as the lint's redaction rules) masked in its code frame too.
    pub fn render(
        &self,
        source: Option<&Source>,
        d: &Diagnostic,
        redactor: &Redactor,
        masks: &Masks,
    ) -> String {
        let d = &redactor.diagnostic(d);
        let level = match d.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
            Severity::Note => Level::NOTE,
        };
        let title = level.primary_title(d.message.as_str()).id(d.code);
        let mut group = Group::with_title(title);
        let redacted;
        if let (Some(src), false) = (source, d.labels.is_empty()) {
            // Only the lines the labels touch: a frame costs its excerpt, not the file.
            let text = src.text();
            let len = text.len();
            let spans: Vec<(usize, usize)> = d
                .labels
                .iter()
                .map(|l| {
                    let start = boundary(text, l.span.start);
                    let end = boundary(text, l.span.end).max(start);
                    // An empty span (a missing field, an error at the end) still needs a caret.
                    let end = if end > start {
                        end
                    } else {
                        text[start..]
                            .chars()
                            .next()
                            .map_or(start, |c| start + c.len_utf8())
                    };
                    (start, end)
                })
                .collect();
            let first = spans.iter().map(|s| s.0).min().unwrap_or(0);
            let last = spans.iter().map(|s| s.1).max().unwrap_or(0);
            let from = line_start(text, first, 0);
            let to = text[last..].find('\n').map_or(len, |i| last + i);
            // Never echo a credential from the input back into a terminal or a CI log. The
            // redaction sees a few lines around the excerpt, where a credential's context
            // (an env entry's `name`, a PEM header) stands; offsets are preserved.
            let (window_from, window_to) = (line_start(text, first, 4), line_end(text, to, 1));
            let window = &text[window_from..window_to];
            let scanned = redactor.frame(window);
            // The lint's own credential nodes (`masks`, clipped to the window): masked whole,
            // every line of them, inside their quotes. A value that holds a credential is not
            // shown in part (a scan that masked a public key of a block left its private key).
            let missed = masks
                .within(window_from, window_to)
                .map(|m| m.start.max(window_from) - window_from..m.end.min(window_to) - window_from)
                .map(|m| {
                    let quoted = window[m.clone()].starts_with(['"', '\''])
                        && m.len() >= 2
                        && window[m.clone()].ends_with(&window[m.start..m.start + 1]);
                    if quoted { m.start + 1..m.end - 1 } else { m }
                });
            redacted = secrets::mask_ranges(&scanned, missed).into_owned();
            let excerpt = &redacted[from - window_from..to - window_from];
            let (line, _) = src.line_col(from);
            let snippet = Snippet::source(excerpt)
                .line_start(line)
                .path(src.name())
                .annotations(d.labels.iter().zip(&spans).map(|(l, &(start, end))| {
                    let kind = if l.primary {
                        AnnotationKind::Primary
                    } else {
                        AnnotationKind::Context
                    };
                    kind.span(start - from..end - from)
                        .label(l.message.as_str())
                }));
            group = group.element(snippet);
        }
        let path = d
            .path
            .as_deref()
            .filter(|p| !p.is_empty() && !d.message.contains(&format!("`{p}`")));
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
        eprintln!("note: {}", Redactor::default().text(message));
    }

    /// An I/O problem: exit 2.
    pub fn io_error(&self, message: &str) -> ExitCode {
        eprintln!("error: {}", Redactor::default().text(message));
        ExitCode::from(2)
    }
}

/// The redactor of one input: the credential values its YAML holds (none when it is not
/// YAML: then credential shapes alone are masked).
pub fn redactor_for(source: &Source) -> Redactor {
    match tao_k8s::yaml::parse(source, tao_k8s::yaml::Limits::default()) {
        Ok(stream) => Redactor::with_values(
            stream
                .documents
                .iter()
                .flat_map(|d| Redactor::for_tree(d).into_values()),
        ),
        Err(_) => Redactor::default(),
    }
}

/// The start of the line `back` lines above the one holding `offset`.
fn line_start(text: &str, offset: usize, back: usize) -> usize {
    let mut at = offset;
    for _ in 0..=back {
        match text[..at].rfind('\n') {
            Some(i) => at = i,
            None => return 0,
        }
    }
    at + 1
}

/// The end (before its newline) of the line `ahead` lines below the one ending at `offset`.
fn line_end(text: &str, offset: usize, ahead: usize) -> usize {
    let mut at = offset;
    for _ in 0..ahead {
        match text[at..].find('\n') {
            Some(i) if at + i + 1 < text.len() => {
                at += i + 1;
                at = text[at..].find('\n').map_or(text.len(), |j| at + j);
            }
            _ => break,
        }
    }
    at
}

/// Spans of a source to mask in every code frame, indexed once: a frame finds the few it
/// overlaps by binary search (a Pod of 200,000 passwords has as many, and 10,000 frames).
#[derive(Debug, Default)]
pub(crate) struct Masks {
    /// Sorted by start.
    spans: Vec<Span>,
    /// The largest end among `spans[..=i]`: non-decreasing, so that the first span that can
    /// reach a window is found by binary search, even where spans overlap.
    reach: Vec<usize>,
}

impl Masks {
    pub(crate) fn new(mut spans: Vec<Span>) -> Masks {
        spans.sort_by_key(|s| (s.start, s.end));
        let reach = spans
            .iter()
            .scan(0, |most, s| {
                *most = s.end.max(*most);
                Some(*most)
            })
            .collect();
        Masks { spans, reach }
    }

    /// The spans that overlap `from..to`.
    fn within(&self, from: usize, to: usize) -> impl Iterator<Item = &Span> {
        let first = self.reach.partition_point(|&end| end <= from);
        let last = self.spans.partition_point(|s| s.start < to);
        self.spans[first..last.max(first)]
            .iter()
            .filter(move |s| s.end > from)
    }
}

/// `offset` within `text`, moved back to a character boundary.
fn boundary(text: &str, offset: usize) -> usize {
    let mut at = offset.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Print to stdout; a closed pipe is not an error worth a panic.
pub(crate) fn emit(text: &str) -> ExitCode {
    emit_with(|out| out.write_all(text.as_bytes()))
}

/// Print to stdout through one buffer what `write` writes: a large output is written in
/// pieces, never first gathered into one string.
pub(crate) fn emit_with(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> ExitCode {
    let mut stdout = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match write(&mut stdout).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            ExitCode::from(super::USAGE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Masks;

    /// Every span that overlaps a window is found, a long one that starts far before it
    /// included, and no other: as the linear filter it replaces finds them.
    #[test]
    fn masks_within_a_window_are_those_that_overlap_it() {
        let spans = vec![0..100, 5..8, 10..12, 40..41, 120..130, 125..200, 300..301];
        let masks = Masks::new(spans.clone());
        for from in 0..320 {
            for to in from..330 {
                let mut want: Vec<_> = spans
                    .iter()
                    .filter(|s| s.start < to && s.end > from)
                    .cloned()
                    .collect();
                want.sort_by_key(|s| (s.start, s.end));
                let found: Vec<_> = masks.within(from, to).cloned().collect();
                assert_eq!(found, want, "window {from}..{to}");
            }
        }
    }
}
