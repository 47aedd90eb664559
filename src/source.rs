//! A source text with a name and a line index, so that any byte span can be shown as
//! `name:line:col` and as a code frame. Every input the tool reads (a request, a staged
//! config, a manifest to lint, a rendered template) becomes one `Source`.

use std::ops::Range;

/// A byte range in a [`Source`].
pub type Span = Range<usize>;

/// The largest input read by default: 16 MiB, ten times the largest object the API server
/// stores (1.5 MiB). `--max-input-size` raises it.
pub const DEFAULT_MAX_INPUT: u64 = 16 << 20;

/// Why bytes are not a text the tool reads. Every message names the position.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TextError {
    #[error("larger than {limit} bytes (raise the limit with --max-input-size)")]
    TooLarge { limit: u64 },
    #[error("not UTF-8 text: byte 0x{byte:02X} at {line}:{col} (offset {offset}) is invalid")]
    NotUtf8 {
        byte: u8,
        offset: usize,
        line: usize,
        col: usize,
    },
    #[error("{what} (U+{code:04X}) at {line}:{col}: YAML text holds no control characters")]
    Control {
        what: &'static str,
        code: u32,
        line: usize,
        col: usize,
    },
}

/// A named text with the byte offset of every line start.
#[derive(Debug, Clone)]
pub struct Source {
    name: String,
    text: String,
    /// Where each line starts, found when first asked: most texts are read without a word
    /// to say about any line of them (a request that compiles, a rendered stream verified).
    line_starts: std::sync::OnceLock<Vec<usize>>,
    /// Whether the text holds a `*`, found when first asked.
    asterisk: std::sync::OnceLock<bool>,
}

impl Source {
    /// Index `text`, shown to users as `name` (a path, `<stdin>`, a template name).
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Source {
        Source {
            name: name.into(),
            text: text.into(),
            line_starts: std::sync::OnceLock::new(),
            asterisk: std::sync::OnceLock::new(),
        }
    }

    /// Where each line starts.
    fn line_starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| {
            let text = self.text.as_bytes();
            let mut starts = Vec::with_capacity(text.len() / 32 + 1);
            starts.push(0);
            starts.extend(memchr::memchr_iter(b'\n', text).map(|i| i + 1));
            starts
        })
    }

    /// Bytes read from a file or stdin, as a source: refused when not UTF-8, or when they hold
    /// a character YAML does not allow in a stream (a NUL byte, another C0 or C1 control
    /// other than tab, line feed, carriage return and NEL, DEL, U+FFFE, U+FFFF).
    pub fn from_bytes(name: impl Into<String>, bytes: Vec<u8>) -> Result<Source, TextError> {
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let offset = e.utf8_error().valid_up_to();
                let bytes = e.into_bytes();
                // The valid prefix is text: index it to name the line and column.
                let prefix = Source::new("", String::from_utf8_lossy(&bytes[..offset]));
                let (line, col) = prefix.line_col(offset);
                let byte = bytes[offset];
                return Err(TextError::NotUtf8 {
                    byte,
                    offset,
                    line,
                    col,
                });
            }
        };
        let source = Source::new(name, text);
        // Printable ASCII, tabs and line breaks (nearly every file) need no character scan.
        if every_byte(source.text(), |b| {
            (b' '..=b'~').contains(&b) | (b == b'\t') | (b == b'\n') | (b == b'\r')
        }) {
            return Ok(source);
        }
        if let Some((offset, c)) = source.text.char_indices().find(|&(_, c)| !printable(c)) {
            let (line, col) = source.line_col(offset);
            let what = match c {
                '\0' => "a NUL byte",
                '\u{7f}' => "DEL",
                '\u{fffe}' | '\u{ffff}' => "a noncharacter",
                _ => "a control character",
            };
            return Err(TextError::Control {
                what,
                code: c as u32,
                line,
                col,
            });
        }
        Ok(source)
    }

    /// The name shown in diagnostics.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The whole text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether a YAML alias may stand in the text: an alias starts with `*`, so a text without
    /// one has no node that copies another.
    pub fn may_alias(&self) -> bool {
        *self
            .asterisk
            .get_or_init(|| memchr::memchr(b'*', self.text.as_bytes()).is_some())
    }

    /// The text, the source given up.
    pub fn into_text(self) -> String {
        self.text
    }

    /// Byte offset of a 1-based line and a 0-based column counted in characters, as YAML
    /// parsers report them. Out-of-range positions are clamped to the text.
    pub fn offset(&self, line: usize, col: usize) -> usize {
        let Some(&start) = self.line_starts().get(line.saturating_sub(1)) else {
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
        let starts = self.line_starts();
        let line = starts.partition_point(|&s| s <= offset);
        let start = starts[line - 1];
        let col = self
            .text
            .get(start..offset)
            .map_or(0, |s| s.chars().count());
        (line, col + 1)
    }
}

/// Whether `ok` holds for every byte of `text`, tested without an early exit: the compiler
/// then tests many bytes at once, which is what the short strings of a manifest need (a value,
/// a key, a line). Every "is it all plain ASCII" test of the hot paths goes through it.
#[inline]
pub(crate) fn every_byte(text: &str, ok: impl Fn(u8) -> bool) -> bool {
    text.bytes().fold(true, |all, b| all & ok(b))
}

/// Whether `text` is printable ASCII only (no line break, tab or control character): the
/// common case that spares a character-by-character look.
pub(crate) fn printable_ascii(text: &str) -> bool {
    every_byte(text, |b| (b' '..=b'~').contains(&b))
}

/// Every string of at most `length` characters over `alphabet`, the empty one first: unit
/// tests compare a definition and a fast test of it on all of them.
#[cfg(test)]
pub(crate) fn every_string(alphabet: &[char], length: usize) -> Vec<String> {
    let mut texts = vec![String::new()];
    let mut last = texts.clone();
    for _ in 0..length {
        last = last
            .iter()
            .flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}")))
            .collect();
        texts.extend(last.iter().cloned());
    }
    texts
}

/// YAML 1.2's `c-printable` (a BOM is printable too).
fn printable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}')
        || (c >= '\u{a0}' && c != '\u{fffe}' && c != '\u{ffff}')
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

    #[test]
    fn bytes_that_are_not_yaml_text_are_refused_with_their_position() {
        let err = Source::from_bytes("x", b"a: 1\nb: \xff\n".to_vec()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "not UTF-8 text: byte 0xFF at 2:4 (offset 8) is invalid"
        );
        let err = Source::from_bytes("x", b"a: 1\nb: c\0d\n".to_vec()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a NUL byte (U+0000) at 2:5: YAML text holds no control characters"
        );
        let err = Source::from_bytes("x", "k: \u{1b}[31m".into()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("a control character (U+001B) at 1:4")
        );
        let ok = "\u{feff}a:\tb\r\nc: \u{85}ç\u{1f600}\n";
        assert_eq!(Source::from_bytes("x", ok.into()).unwrap().text(), ok);
    }
}
