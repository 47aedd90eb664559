//! A source text with a name and a line index, so that any byte span can be shown as
//! `name:line:col` and as a code frame. Every input the tool reads (a request, a staged
//! config, a manifest to lint, a rendered template) becomes one `Source`.

use std::ops::Range;

/// A byte range in a [`Source`].
pub type Span = Range<usize>;

/// A named text with the byte offset of every line start.
#[derive(Debug, Clone)]
pub struct Source {
    name: String,
    text: String,
    line_starts: Vec<usize>,
}

impl Source {
    /// Index `text`, shown to users as `name` (a path, `<stdin>`, a template name).
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Source {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Source {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// The name shown in diagnostics.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The whole text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Byte offset of a 1-based line and a 0-based column counted in characters, as YAML
    /// parsers report them. Out-of-range positions are clamped to the text.
    pub fn offset(&self, line: usize, col: usize) -> usize {
        let Some(&start) = self.line_starts.get(line.saturating_sub(1)) else {
            return self.text.len();
        };
        let rest = &self.text[start..];
        let line_len = rest.find('\n').unwrap_or(rest.len());
        rest[..line_len]
            .char_indices()
            .nth(col)
            .map_or(start + line_len, |(i, _)| start + i)
    }

    /// The 1-based line and 1-based character column of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset);
        let start = self.line_starts[line - 1];
        let col = self
            .text
            .get(start..offset)
            .map_or(0, |s| s.chars().count());
        (line, col + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_positions_round_trip() {
        let src = Source::new("x", "ab\nçd: e\n\nlast");
        assert_eq!(src.offset(1, 0), 0);
        assert_eq!(src.offset(2, 0), 3);
        // `ç` is two bytes: the third character of line 2 starts at byte 3 + 3.
        assert_eq!(src.offset(2, 2), 6);
        assert_eq!(src.line_col(6), (2, 3));
        assert_eq!(src.offset(4, 2), src.text().len() - 2);
        assert_eq!(src.line_col(src.text().len()), (4, 5));
        assert_eq!(src.offset(9, 0), src.text().len());
        assert_eq!(src.offset(1, 99), 2);
    }
}
