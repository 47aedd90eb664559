//! The YAML most manifests are written in, read without the general parser: block mappings
//! and sequences indented with spaces, plain and single-line quoted scalars, and flow
//! collections on one line (the JSON the templates write). It builds exactly the tree, spans,
//! duplicate keys and YAML 1.1 booleans the general parser's path builds, and gives up on a
//! document at the first thing outside that subset (anchors, tags, block scalars, multi-line
//! scalars, tabs, CR, directives, a limit reached...): the general parser then reads that
//! document (and says what is wrong, if anything is), and this reader goes on after it.

use super::{DuplicateKey, Limits, MAX_DUPLICATES, Node, Stream, Value, is_yaml11_boolean};
use crate::source::Span;

/// Give up: the general parser takes over.
struct Bail;

type Read<T> = Result<T, Bail>;

#[cfg(test)]
thread_local! {
    /// Where the fast path last gave up (for the tests).
    static BAILED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

#[track_caller]
fn bail() -> Bail {
    #[cfg(test)]
    {
        let line = std::panic::Location::caller().line();
        BAILED.with(|b| b.set(line));
    }
    Bail
}

/// Whether `text` is printable ASCII and line feeds (rendered manifests, most files): no line
/// of it holds a tab or CR, and every scalar (on one line) is printable.
pub(super) fn plain_ascii(text: &str) -> bool {
    crate::source::every_byte(text, |b| (b' '..=b'~').contains(&b) | (b == b'\n'))
}

/// Read documents from `from` on while they are in the subset, handing each to `on_document`
/// with the YAML 1.1 boolean spans so far; `plain_ascii` is [`plain_ascii`] of the whole text.
/// Returns where the first document it did not take starts (`text.len()` when it took them
/// all).
pub(super) fn documents(
    text: &str,
    from: usize,
    plain_ascii: bool,
    limits: Limits,
    stream: &mut Stream,
    documents: &mut usize,
    on_document: &mut dyn FnMut(Node, &[Span]),
) -> usize {
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        pos: from,
        limits,
        depth: 0,
        nodes: 0,
        peeked: None,
        line: std::cell::Cell::new((usize::MAX, 0)),
        duplicates: Vec::new(),
        booleans: Vec::new(),
        plain_ascii,
        entries: Vec::new(),
        items: Vec::new(),
    };
    if from == 0 && text.starts_with('\u{feff}') {
        return 0;
    }
    loop {
        let start = reader.pos;
        match reader.document(*documents, stream.duplicates.len()) {
            Ok(None) => return text.len(),
            Ok(Some(node)) => {
                *documents += 1;
                stream.duplicates.append(&mut reader.duplicates);
                stream.yaml11_booleans.append(&mut reader.booleans);
                on_document(node, &stream.yaml11_booleans);
            }
            Err(Bail) => return start,
        }
    }
}

/// Where the next document starts, after the general parser stopped at `at`, the end of
/// the one it read: at a `---` line, after a `...` line, or at the next line that opens with a
/// document marker (no YAML content can hold one at column 0), else the text's end.
pub(super) fn after_document(text: &str, at: usize) -> usize {
    let bytes = text.as_bytes();
    let line_after = |at: usize| {
        bytes[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| at + i + 1)
    };
    if bytes[at..].starts_with(b"---") {
        return at;
    }
    if bytes[at..].starts_with(b"...") {
        return line_after(at);
    }
    let mut line = line_after(at);
    while line < bytes.len() {
        let rest = &bytes[line..];
        if (rest.starts_with(b"---") || rest.starts_with(b"..."))
            && matches!(rest.get(3), None | Some(b' ' | b'\t' | b'\n' | b'\r'))
        {
            return line;
        }
        line = line_after(line);
    }
    bytes.len()
}

struct Reader<'t> {
    text: &'t str,
    bytes: &'t [u8],
    /// Always at the start of a line (or the end of the text) between reads.
    pos: usize,
    limits: Limits,
    depth: usize,
    nodes: usize,
    /// The line [`Reader::next_line`] found last, by the offset it was asked at: a block's
    /// first line is looked at by its parent and again by the block.
    peeked: Option<(usize, Option<Line>)>,
    /// The last line end found (see [`Reader::line_end`]): no `\n` from `.0` to `.1`.
    line: std::cell::Cell<(usize, usize)>,
    /// The current document's duplicate keys and YAML 1.1 booleans, kept only if it is taken.
    duplicates: Vec<DuplicateKey>,
    booleans: Vec<Span>,
    /// The text is [`plain_ascii`]: the per-line and per-scalar character tests are skipped.
    plain_ascii: bool,
    /// The entries and items of the collections being read, innermost last: a collection's
    /// own are moved out in one allocation of their number when it ends, instead of a
    /// vector that grows and is then shrunk.
    entries: Vec<(Node, Node)>,
    items: Vec<Node>,
}

/// One line's content: where it starts (after the indentation) and its indentation.
#[derive(Clone, Copy)]
struct Line {
    start: usize,
    indent: usize,
}

impl Reader<'_> {
    /// The next document (`None` at the end of the stream). Leaves `pos` at the start of the
    /// next document's `---` line, or at the end.
    fn document(&mut self, taken: usize, duplicates: usize) -> Read<Option<Node>> {
        self.depth = 0;
        self.nodes = 0;
        self.duplicates.clear();
        self.booleans.clear();
        self.entries.clear();
        self.items.clear();
        let first = self.next_line()?;
        if first.is_none() {
            if self.pos >= self.bytes.len() {
                return Ok(None);
            }
            // A `---` line (only blanks or a comment may follow it); `...` is left to the
            // general parser.
            if !self.bytes[self.pos..].starts_with(b"---") {
                return Err(bail());
            }
            self.marker_line()?;
        }
        if taken >= self.limits.max_documents {
            return Err(bail());
        }
        let Some(line) = self.next_line()? else {
            // An empty document (a null): left to the general parser.
            return Err(bail());
        };
        let node = self.block(line)?;
        if self.next_line()?.is_some() {
            return Err(bail());
        }
        if self.bytes[self.pos..].starts_with(b"...")
            || duplicates + self.duplicates.len() > MAX_DUPLICATES
        {
            return Err(bail());
        }
        Ok(Some(node))
    }

    /// Skip a `---` line whose rest is blank or a comment.
    fn marker_line(&mut self) -> Read<()> {
        let end = self.line_end(self.pos);
        let rest = &self.bytes[self.pos + 3..end];
        let rest_start = rest.iter().position(|&b| b != b' ');
        match rest_start {
            None => {}
            Some(i) if i > 0 && rest[i] == b'#' => {}
            Some(_) => return Err(bail()),
        }
        if rest.first().is_some_and(|&b| b != b' ') {
            return Err(bail());
        }
        self.pos = (end + 1).min(self.bytes.len());
        Ok(())
    }

    /// The end of the line at `from` (the offset of its `\n`, or of the text's end). A line is
    /// asked for again and again as it is read (its start, after its key, after its value):
    /// the last answer is kept with where it was searched from.
    fn line_end(&self, from: usize) -> usize {
        let (searched, end) = self.line.get();
        if searched <= from && from <= end {
            return end;
        }
        let end = memchr::memchr(b'\n', &self.bytes[from..]).map_or(self.bytes.len(), |i| from + i);
        self.line.set((from, end));
        end
    }

    /// The next line with content, skipping blank and comment lines (`pos` stays at its
    /// start). `None` at the end of the text or at a document marker line.
    fn next_line(&mut self) -> Read<Option<Line>> {
        match self.peeked {
            Some((at, line)) if at == self.pos => return Ok(line),
            _ => {}
        }
        let asked = self.pos;
        let line = self.find_line()?;
        self.peeked = Some((asked, line));
        Ok(line)
    }

    fn find_line(&mut self) -> Read<Option<Line>> {
        loop {
            if self.pos >= self.bytes.len() {
                return Ok(None);
            }
            let at = self.pos;
            let end = self.line_end(at);
            let line = &self.bytes[at..end];
            let indent = line.iter().take_while(|&&b| b == b' ').count();
            if indent == 0 && (line.starts_with(b"---") || line.starts_with(b"...")) {
                let after = line.get(3).copied();
                if after.is_none() || after == Some(b' ') || after == Some(b'\t') {
                    return Ok(None);
                }
            }
            if !self.plain_ascii && memchr::memchr2(b'\t', b'\r', line).is_some() {
                return Err(bail());
            }
            if indent == 0 && line.first() == Some(&b'%') {
                return Err(bail());
            }
            match line.get(indent) {
                None | Some(b'#') => self.pos = (end + 1).min(self.bytes.len()),
                Some(_) => {
                    return Ok(Some(Line {
                        start: at + indent,
                        indent,
                    }));
                }
            }
        }
    }

    /// Move past the line at `pos` (after a value that ended it).
    fn end_line(&mut self, after: usize) -> Read<()> {
        let end = self.line_end(after);
        self.rest_is_blank(after, end)?;
        self.pos = (end + 1).min(self.bytes.len());
        Ok(())
    }

    /// Only blanks, or blanks and a comment, from `from` to `end`.
    fn rest_is_blank(&self, from: usize, end: usize) -> Read<()> {
        let rest = &self.bytes[from..end];
        match rest.iter().position(|&b| b != b' ') {
            None => Ok(()),
            Some(i) if i > 0 && rest[i] == b'#' => Ok(()),
            Some(_) => Err(bail()),
        }
    }

    fn count(&mut self) -> Read<()> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(bail());
        }
        Ok(())
    }

    fn enter(&mut self) -> Read<()> {
        if self.depth >= self.limits.max_depth {
            return Err(bail());
        }
        self.depth += 1;
        Ok(())
    }

    /// A block node whose first line is `line`: a sequence, a mapping or nothing else.
    fn block(&mut self, line: Line) -> Read<Node> {
        if self.is_item(line.start) {
            self.sequence(line.indent, false)
        } else if self.key_end(line.start).is_some() {
            self.mapping(line.start, line.indent)
        } else {
            Err(bail())
        }
    }

    /// A `-` followed by a blank or the end of the line.
    fn is_item(&self, at: usize) -> bool {
        self.bytes[at] == b'-' && matches!(self.bytes.get(at + 1), None | Some(b' ' | b'\n'))
    }

    /// A block sequence whose items are at `indent`. An indentless one (at its key's column)
    /// starts where its first item's content does, as the general parser marks it.
    fn sequence(&mut self, indent: usize, indentless: bool) -> Read<Node> {
        self.enter()?;
        let mut start = self.pos + indent;
        let mark = self.items.len();
        while let Some(line) = self.next_line()? {
            if line.indent > indent {
                return Err(bail());
            }
            // A shallower line, or a key at the column of an indentless sequence, ends it.
            if line.indent < indent || !self.is_item(line.start) {
                break;
            }
            let mut at = line.start + 1;
            while self.bytes.get(at) == Some(&b' ') {
                at += 1;
            }
            let end = self.line_end(at);
            if indentless && self.items.len() == mark {
                start = at;
            }
            if at == end || self.bytes[at] == b'#' {
                if indentless {
                    return Err(bail());
                }
                // The item is on the lines below.
                self.end_line(at)?;
                match self.next_line()? {
                    Some(inner) if inner.indent > indent => {
                        let item = self.block(inner)?;
                        self.items.push(item);
                    }
                    _ => return Err(bail()),
                }
            } else if self.is_item(at) {
                return Err(bail());
            } else if self.key_end(at).is_some() {
                // A mapping that starts on the item's line, at the column of its first key.
                let column = at - self.pos;
                let item = self.mapping(at, column)?;
                self.items.push(item);
            } else {
                let item = self.inline(at, end)?;
                self.items.push(item);
            }
        }
        self.depth -= 1;
        self.count()?;
        let items = split_tail(&mut self.items, mark);
        Ok(self.collection(Value::Seq(items), start))
    }

    /// A block mapping whose keys are at `indent`; the first key is at `first` (on the current
    /// line).
    fn mapping(&mut self, first: usize, indent: usize) -> Read<Node> {
        self.enter()?;
        let mark = self.entries.len();
        let mut seen: Option<std::collections::HashMap<String, usize>> = None;
        let mut at = first;
        loop {
            let colon = self.key_end(at).ok_or_else(bail)?;
            let key = self.key(at, colon)?;
            let mut after = colon + 1;
            while self.bytes.get(after) == Some(&b' ') {
                after += 1;
            }
            let end = self.line_end(after);
            let value = if after == end || self.bytes[after] == b'#' {
                self.end_line(after)?;
                match self.next_line()? {
                    Some(inner) if inner.indent > indent => self.block(inner)?,
                    // A sequence may sit at its key's column.
                    Some(inner) if inner.indent == indent && self.is_item(inner.start) => {
                        self.sequence(indent, true)?
                    }
                    // An empty value (a null): left to the general parser.
                    _ => return Err(bail()),
                }
            } else {
                self.inline(after, end)?
            };
            self.insert(mark, &mut seen, key, value);
            match self.next_line()? {
                Some(line) if line.indent == indent && !self.is_item(line.start) => {
                    at = line.start;
                }
                Some(line) if line.indent > indent => return Err(bail()),
                _ => break,
            }
        }
        self.depth -= 1;
        self.count()?;
        let entries = split_tail(&mut self.entries, mark);
        Ok(self.collection(Value::Map(entries), first))
    }

    /// Add an entry to the collection whose entries start at `mark`, or record its key as a
    /// duplicate (kept out of the tree).
    fn insert(
        &mut self,
        mark: usize,
        seen: &mut Option<std::collections::HashMap<String, usize>>,
        key: Node,
        value: Node,
    ) {
        let entries = &mut self.entries[mark..];
        let name = super::key_text(&key);
        let found = match seen {
            Some(seen) => seen.get(name.as_ref()).copied(),
            None => entries.iter().position(|(k, _)| match &k.value {
                Value::Str(s) => *s == *name,
                _ => super::key_text(k) == name,
            }),
        };
        if let Some(first) = found {
            self.duplicates.push(DuplicateKey {
                key: name.into_owned(),
                first: entries[first].0.span.clone(),
                second: key.span,
            });
            return;
        }
        if let Some(seen) = seen {
            seen.insert(name.into_owned(), entries.len());
        } else if entries.len() >= 16 {
            let mut map: std::collections::HashMap<String, usize> = entries
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (super::key_text(k).into_owned(), i))
                .collect();
            map.insert(name.into_owned(), entries.len());
            *seen = Some(map);
        }
        self.entries.push((key, value));
    }

    /// A collection's node, spanning its first character.
    fn collection(&self, value: Value, start: usize) -> Node {
        let len = self.text[start..].chars().next().map_or(0, char::len_utf8);
        Node {
            value,
            span: start..start + len,
        }
    }

    /// The offset of the `:` that ends the key starting at `at`, if the line is a key line.
    fn key_end(&self, at: usize) -> Option<usize> {
        let b = self.bytes;
        match b[at] {
            b'"' | b'\'' => {
                let close = match b[at] {
                    b'"' => quoted_close(b, at)?,
                    _ => single_close(b, at)?,
                };
                (b.get(close + 1) == Some(&b':')
                    && matches!(b.get(close + 2), None | Some(b' ' | b'\n')))
                .then_some(close + 1)
            }
            c if !plain_key_start(c) => None,
            _ => {
                // A run of key characters, then `:` and a blank or the line's end (`a #b: c`
                // and `a b: c` are no key lines: a blank is no key character).
                let run = b[at..].iter().position(|&c| !KEY_CHARS[usize::from(c)]);
                let i = at + run.unwrap_or(b.len() - at);
                (b.get(i) == Some(&b':') && matches!(b.get(i + 1), None | Some(b' ' | b'\n')))
                    .then_some(i)
            }
        }
    }

    /// The key from `at` to `colon`.
    fn key(&mut self, at: usize, colon: usize) -> Read<Node> {
        match self.bytes[at] {
            b'"' => self.double_quoted(at, colon - 1),
            b'\'' => self.single_quoted(at, colon - 1),
            _ => self.plain(at, colon),
        }
    }

    /// A value that starts at `at` on its line (which ends at `end`), and moves past the line.
    fn inline(&mut self, at: usize, end: usize) -> Read<Node> {
        let node = match self.bytes[at] {
            b'"' => {
                let close = quoted_close(self.bytes, at)
                    .filter(|&c| c <= end)
                    .ok_or_else(bail)?;
                let node = self.double_quoted(at, close)?;
                self.end_line(close + 1)?;
                return Ok(node);
            }
            b'\'' => {
                let close = single_close(self.bytes, at)
                    .filter(|&c| c <= end)
                    .ok_or_else(bail)?;
                let node = self.single_quoted(at, close)?;
                self.end_line(close + 1)?;
                return Ok(node);
            }
            b'[' | b'{' => {
                let (node, close) = self.flow(at, end)?;
                self.end_line(close)?;
                return Ok(node);
            }
            c if plain_value_start(c, self.bytes.get(at + 1).copied()) => {
                let mut stop = end;
                let line = &self.bytes[at..end];
                if let Some(i) = line.windows(2).position(|w| w == b" #") {
                    stop = at + i;
                }
                while stop > at && self.bytes[stop - 1] == b' ' {
                    stop -= 1;
                }
                let text = &self.bytes[at..stop];
                if text.windows(2).any(|w| w == b": ") || text.ends_with(b":") {
                    return Err(bail());
                }
                self.plain(at, stop)?
            }
            _ => return Err(bail()),
        };
        // A deeper line after a plain scalar continues it: left to the general parser.
        self.pos = (end + 1).min(self.bytes.len());
        Ok(node)
    }

    /// Whether a scalar's text (on one line) is text the subset takes as is.
    fn printable(&self, text: &str) -> bool {
        self.plain_ascii || printable(text)
    }

    /// A plain scalar from `at` to `end`, resolved by the core schema.
    fn plain(&mut self, at: usize, end: usize) -> Read<Node> {
        let text = &self.text[at..end];
        if text.len() > self.limits.max_scalar_bytes || !self.printable(text) {
            return Err(bail());
        }
        self.count()?;
        if is_yaml11_boolean(text) {
            self.booleans.push(at..end);
        }
        Ok(Node {
            value: super::resolve(text, saphyr_parser::ScalarStyle::Plain, None),
            span: at..end,
        })
    }

    /// A double-quoted scalar from its opening quote at `at` to its closing quote at `close`
    /// (on one line).
    fn double_quoted(&mut self, at: usize, close: usize) -> Read<Node> {
        let raw = &self.text[at + 1..close];
        if raw.len() > self.limits.max_scalar_bytes || !self.printable(raw) {
            return Err(bail());
        }
        let value = if raw.contains('\\') {
            unescape(raw).ok_or_else(bail)?
        } else {
            raw.to_string()
        };
        self.count()?;
        Ok(Node {
            value: Value::Str(value),
            span: at..close + 1,
        })
    }

    /// A single-quoted scalar (`''` is a quote), on one line.
    fn single_quoted(&mut self, at: usize, close: usize) -> Read<Node> {
        let raw = &self.text[at + 1..close];
        if raw.len() > self.limits.max_scalar_bytes || !self.printable(raw) {
            return Err(bail());
        }
        self.count()?;
        Ok(Node {
            value: Value::Str(raw.replace("''", "'")),
            span: at..close + 1,
        })
    }

    /// A flow collection on one line, JSON-like: quoted strings, plain words, nested
    /// collections; returns it and the offset after its closing bracket.
    fn flow(&mut self, at: usize, end: usize) -> Read<(Node, usize)> {
        self.enter()?;
        let open = self.bytes[at];
        let close = if open == b'[' { b']' } else { b'}' };
        let mut i = self.skip_blanks(at + 1, end);
        let (items, entries) = (self.items.len(), self.entries.len());
        let mut seen = None;
        if self.bytes.get(i) == Some(&close) {
            i += 1;
        } else {
            loop {
                let (node, next) = self.flow_scalar_or_collection(i, end)?;
                i = next;
                if open == b'{' {
                    // `"key": value` or `key: value`.
                    let quoted = matches!(self.bytes[node.span.start], b'"' | b'\'');
                    if self.bytes.get(i) != Some(&b':') {
                        return Err(bail());
                    }
                    let blank = matches!(self.bytes.get(i + 1), Some(b' '));
                    if !quoted && !blank {
                        return Err(bail());
                    }
                    if matches!(node.value, Value::Seq(_) | Value::Map(_)) {
                        return Err(bail());
                    }
                    i = self.skip_blanks(i + 1, end);
                    let (value, next) = self.flow_scalar_or_collection(i, end)?;
                    i = next;
                    self.insert(entries, &mut seen, node, value);
                } else {
                    if self.bytes.get(i) == Some(&b':') {
                        return Err(bail());
                    }
                    self.items.push(node);
                }
                match self.bytes.get(i) {
                    Some(b',') => {
                        i = self.skip_blanks(i + 1, end);
                        // A trailing comma: left to the general parser.
                        if matches!(self.bytes.get(i), Some(b']' | b'}')) {
                            return Err(bail());
                        }
                    }
                    Some(&c) if c == close => {
                        i += 1;
                        break;
                    }
                    _ => return Err(bail()),
                }
            }
        }
        self.depth -= 1;
        self.count()?;
        let value = if open == b'[' {
            Value::Seq(split_tail(&mut self.items, items))
        } else {
            Value::Map(split_tail(&mut self.entries, entries))
        };
        Ok((self.collection(value, at), i))
    }

    /// One item of a flow collection, and the offset after it and its trailing blanks.
    fn flow_scalar_or_collection(&mut self, at: usize, end: usize) -> Read<(Node, usize)> {
        let (node, next) = match self.bytes.get(at) {
            Some(b'"') => {
                let close = quoted_close(self.bytes, at)
                    .filter(|&c| c < end)
                    .ok_or_else(bail)?;
                (self.double_quoted(at, close)?, close + 1)
            }
            Some(b'\'') => {
                let close = single_close(self.bytes, at)
                    .filter(|&c| c < end)
                    .ok_or_else(bail)?;
                (self.single_quoted(at, close)?, close + 1)
            }
            Some(b'[' | b'{') => self.flow(at, end)?,
            Some(&c) if flow_word_start(c) => {
                let mut i = at + 1;
                while i < end && flow_word_char(self.bytes[i]) {
                    i += 1;
                }
                if i == at || (self.bytes[at] == b'-' && i == at + 1) {
                    return Err(bail());
                }
                (self.plain(at, i)?, i)
            }
            _ => return Err(bail()),
        };
        Ok((node, self.skip_blanks(next, end)))
    }

    fn skip_blanks(&self, mut i: usize, end: usize) -> usize {
        while i < end && self.bytes[i] == b' ' {
            i += 1;
        }
        i
    }
}

/// The elements of `stack` from `mark` on, moved into a vector of their number; the stack
/// keeps its buffer. (`split_off(0)` would hand the whole buffer over, spare room and all, as
/// the outermost collection's, and allocate another as large for the next document.)
fn split_tail<T>(stack: &mut Vec<T>, mark: usize) -> Vec<T> {
    if mark > 0 {
        return stack.split_off(mark);
    }
    let mut all = Vec::with_capacity(stack.len());
    all.append(stack);
    all
}

/// The offset of the closing quote of the double-quoted scalar opening at `at`, on its line.
fn quoted_close(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < b.len() {
        match b[i] {
            // An escaped line break continues the scalar on the next line: not in the subset,
            // where every scalar is on one line.
            b'\\' if b.get(i + 1) == Some(&b'\n') => return None,
            b'\\' => i += 2,
            b'"' => return Some(i),
            b'\n' => return None,
            _ => i += 1,
        }
    }
    None
}

/// The offset of the closing quote of the single-quoted scalar opening at `at`, on its line.
fn single_close(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < b.len() {
        match b[i] {
            b'\'' if b.get(i + 1) == Some(&b'\'') => i += 2,
            b'\'' => return Some(i),
            b'\n' => return None,
            _ => i += 1,
        }
    }
    None
}

/// A character a plain key may start with: a letter, a digit, `_`, `.` or `/`.
fn plain_key_start(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/')
}

/// A character of a plain key, in the subset.
const fn plain_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'-')
}

/// [`plain_key_char`] by byte: every line of a block mapping is scanned with it.
static KEY_CHARS: [bool; 256] = {
    let mut table = [false; 256];
    let mut c = 0;
    while c < 256 {
        table[c] = plain_key_char(c as u8);
        c += 1;
    }
    table
};

/// A plain value's first character: not an indicator (a `-` only before a non-blank).
fn plain_value_start(c: u8, next: Option<u8>) -> bool {
    match c {
        b'-' => next.is_some_and(|n| n != b' ' && n != b'\n'),
        b'?' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|'
        | b'>' | b'\'' | b'"' | b'%' | b'@' | b'`' => false,
        c => c.is_ascii_graphic(),
    }
}

/// The first character of a plain word inside a flow collection, in the subset.
fn flow_word_start(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'-' | b'+' | b'=' | b'~' | b'$')
}

/// A character of a plain word inside a flow collection after its first, in the subset: no
/// blank, flow indicator (`,[]{}`), `:` or quote.
fn flow_word_char(c: u8) -> bool {
    flow_word_start(c)
        || matches!(
            c,
            b'@' | b'('
                | b')'
                | b';'
                | b'^'
                | b'%'
                | b'&'
                | b'*'
                | b'!'
                | b'<'
                | b'>'
                | b'?'
                | b'|'
                | b'\\'
                | b'#'
        )
}

/// Text the subset takes as is: printable ASCII, and any character above U+00A0 but the ones
/// YAML reads as breaks or refuses.
fn printable(text: &str) -> bool {
    // One pass over the bytes for the common case (printable ASCII); only text with another
    // byte is read as characters.
    if crate::source::printable_ascii(text) {
        return true;
    }
    if text.is_ascii() {
        return false;
    }
    text.chars().all(|c| {
        (' '..='~').contains(&c)
            || (c >= '\u{a0}'
                && !matches!(
                    c,
                    '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
                ))
    })
}

/// The JSON escapes YAML's double-quoted style shares (`\uXXXX` outside the surrogates);
/// anything else is left to the general parser.
fn unescape(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            '"' => out.push('"'),
            '\\' => out.push('\\'),
            '/' => out.push('/'),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'u' => {
                let hex: String = chars.by_ref().take(4).collect();
                if hex.len() != 4 {
                    return None;
                }
                let code = u32::from_str_radix(&hex, 16).ok()?;
                out.push(char::from_u32(code)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::{Limits, Node, Stream, SyntaxError, parse_with};
    use crate::source::{Source, Span};
    use std::path::Path;

    /// What a parse hands out: the documents (with the boolean spans each was handed with) and
    /// the stream, or the error.
    type Outcome = Result<(Vec<(Node, Vec<Span>)>, Stream), SyntaxError>;

    fn parse(text: &str, fast: bool, limits: Limits) -> Outcome {
        let source = Source::new("t", text);
        let mut docs = Vec::new();
        parse_with(&source, limits, fast, &mut |node, booleans| {
            docs.push((node, booleans.to_vec()))
        })
        .map(|stream| (docs, stream))
    }

    /// Documents the fast path takes from `text`.
    fn taken(text: &str) -> usize {
        let mut stream = Stream::default();
        let mut count = 0;
        super::documents(
            text,
            0,
            super::plain_ascii(text),
            Limits::default(),
            &mut stream,
            &mut count,
            &mut |_, _| {},
        );
        count
    }

    /// Both paths give the same documents, spans, duplicates, booleans and errors.
    fn same(text: &str) {
        same_with(text, Limits::default());
    }

    fn same_with(text: &str, limits: Limits) {
        let fast = parse(text, true, limits);
        let general = parse(text, false, limits);
        match (&fast, &general) {
            (Ok((fd, fs)), Ok((gd, gs))) => {
                assert_eq!(fd, gd, "documents differ for {text:?}");
                assert_eq!(
                    fs.duplicates, gs.duplicates,
                    "duplicates differ for {text:?}"
                );
                assert_eq!(
                    fs.yaml11_booleans, gs.yaml11_booleans,
                    "YAML 1.1 booleans differ for {text:?}"
                );
            }
            // The same place: a document read alone may word it otherwise (an alias to an
            // anchor of an earlier document is unknown to the parser itself, not only to
            // the tree builder).
            _ => assert_eq!(
                fast.as_ref().err().map(|e| &e.span),
                general.as_ref().err().map(|e| &e.span),
                "errors differ for {text:?}: {fast:?} / {general:?}"
            ),
        }
    }

    #[test]
    fn the_subset_reads_as_the_general_parser_reads() {
        let cases = [
            "a: 1\n",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: \"v\"\n",
            "---\na: 1\n---\nb: [1, \"two\", {\"c\": 3}]\n",
            "# head\n\n---  # marker\na: b # tail\n\n  # inner\nc:   d   \n",
            "a:\n- x\n- y: 1\n  z: 2\nb: 3\n",
            "a:\n  - x\n  -   k: v\n      l: w\n",
            "- 1\n- -2\n- 3.5\n- .inf\n- 0x1f\n- 0o17\n- ~\n- null\n- true\n- False\n",
            "on: yes\nno: off\ny: [n, Y]\n",
            "a: 1\na: 2\nb: {c: 1, c: 2}\n",
            "\"quoted key\": 'single ''quoted'''\n'k': \"esc \\\" \\\\ \\n \\t \\u00e9 \\/\"\n",
            "a: \"é ü 日本\"\nb: naïve\n",
            "image: nginx:1.25\nurl: http://x/y?z=1#frag\nx: a #comment\n",
            "args: [\"train\", \"-e\", \"/data/specs/train.yaml\"]\n",
            "t: {\"key\": \"nvidia.com/gpu\", \"operator\": \"Exists\"}\n",
            "empty: []\nnone: {}\nnested: [[], {}, [1, [2]]]\n",
            "a:\n  b:\n    c:\n      - d\n",
            "a: x[0]\nb: {x}\n",
            "a: 1\n...\nb: 2\n",
            "%YAML 1.2\n---\na: 1\n",
            "a: &x 1\nb: *x\n",
            "a: |\n  text\nb: 1\n",
            "a: b\n  c\n",
            "a:\n",
            "a: 1\n---\n",
            "---\n---\na: 1\n",
            "a:\tb\n",
            "a: 1\r\nb: 2\r\n",
            "a: b: c\n",
            "a: [1, 2,]\n",
            "a: [1,\n  2]\n",
            "- - a\n",
            "a: \"unterminated\n",
            "a: 1\n b: 2\n",
            "key :  v\n",
            "<<: {a: 1}\nb: 2\n",
            "a: !!str 1\n",
            "? a\n: b\n",
            "{a: 1}\n",
            "a: -\n",
            "a: - b\n",
            "a: 'it''s'\n",
            "a: \"\\x41\"\n",
            "a: \"\\ud83d\\ude00\"\n",
            "a: [\"x\" , 'y' ]\n",
            "a: {\"b\":1}\n",
            "a: {b:1}\n",
            "a: [b: 1]\n",
            "- a\nb: 1\n",
            "a:\n- b\n  c: d\n",
            "\u{feff}a: 1\n",
            "a: 1 # c\n# d\n---\n# e\nb: 2\n",
            "a: 0777\nb: 1e3\nc: +12\nd: 1_000\ne: 0b1\n",
            "a: \"\\u0085\"\nb: \"\u{85}\"\n",
            "a:\n  -\n    b: 1\n  -\n    - c\n",
            "a: b\n---x\n",
            "a: 1\n--- \nb: 2\n",
            "a: 1\n---\t\nb: 2\n",
            "a: |\n  x\n---\nb: 1\n---\nc: &x 1\nd: *x\n---\ne: [1]\n",
            "a: 1\n---\nb: [1,\n---\nc: 2\n",
            "a: 1\n---\n%YAML 1.2\n---\nb: 1\n",
            "# x\n---\n# y\n...\n---\na: 1\n",
            "a: &x 1\n---\nb: *x\n",
            "a: 1\n--- |\n  text\n---\nb: 2\n",
            "a: 1\n---\n\"unclosed\n---\nb: 2\n",
            "a: [a=b, x@y, $HOME, a#b, ~, -e, a;b, f(x), a*b, a!b, a|b, a\\b, =, +1, -.5]\n",
            "a: [*x]\n",
            "a: [&x 1]\n",
            "a: [!x 1]\n",
            "a: [a, -]\n",
            "a: [- a]\n",
            "a: [a:b]\n",
            "a: [a #b]\n",
            "a: {a=b: c}\n",
            "a: [\"x\"y]\n",
            "args: [dino, train, -e, /data/specs/train.yaml, results_dir=/results/x]\n",
            "\"a\\\nb\": 1\n",
            "a: \"x\\\ny\"\n",
            "a: [\"x\\\ny\"]\n",
            "a: \"x\u{7}y\"\nb: c\u{1b}d\n",
            "a: \"\u{2028}\"\nb: 'x\u{7f}'\n",
        ];
        for text in cases {
            same(text);
        }
    }

    #[test]
    fn limits_are_met_by_the_general_parser() {
        let tight = Limits {
            max_depth: 2,
            max_nodes: 5,
            max_alias_nodes: 10,
            max_documents: 2,
            max_scalar_bytes: 8,
        };
        for text in [
            "a:\n  b:\n    c: 1\n",
            "a: [[[1]]]\n",
            "a: 1\nb: 2\nc: 3\n",
            "a: 1\n---\nb: 2\n---\nc: 3\n",
            "a: \"123456789\"\n",
            "a: 123456789\n",
        ] {
            same_with(text, tight);
        }
    }

    /// Every YAML file and snapshot of the repository, and every rendered request: the fast
    /// path and the general parser agree, and the rendered manifests are read by the fast path
    /// whole.
    #[test]
    fn the_repository_reads_the_same_both_ways() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in [
            "examples",
            "fixtures",
            "tests",
            "schemas",
            "bench",
            "templates",
        ] {
            collect(&root.join(dir), &mut files);
        }
        assert!(files.len() > 500, "only {} files found", files.len());
        let (mut documents, mut fast) = (0, 0);
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            same(&text);
            if let Ok((docs, _)) = parse(&text, false, Limits::default()) {
                documents += docs.len();
                fast += taken(&text).min(docs.len());
            }
        }
        // Most manifests are in the subset: the fast path is not a path no input takes.
        assert!(
            fast * 2 > documents,
            "the fast path took {fast} of {documents} documents"
        );
    }

    #[test]
    fn rendered_requests_are_read_whole_by_the_fast_path() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        collect(&root.join("fixtures/requests"), &mut files);
        collect(&root.join("examples"), &mut files);
        let mut rendered = 0;
        for file in files {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let source = Source::new(file.display().to_string(), text);
            let opts = crate::plan::Options::default();
            let Ok(compiled) =
                crate::compile::compile(&source, &opts, crate::render::Templates::embedded())
            else {
                continue;
            };
            same(&compiled.yaml);
            let documents = compiled.documents.len();
            assert_eq!(
                taken(&compiled.yaml),
                documents,
                "{}: the fast path gave up at line {} of fast.rs",
                file.display(),
                super::BAILED.with(|b| b.get())
            );
            rendered += 1;
        }
        assert!(rendered >= 10, "only {rendered} requests rendered");
    }

    /// Values written after a key or a dash: in the subset, and not (anchors, aliases, block
    /// scalars, tabs, unclosed quotes and brackets, nested maps on one line).
    const SCALARS: &[&str] = &[
        "",
        "1",
        "a b",
        "\"q\\\"\"",
        "'s''t'",
        "[a, \"b\"]",
        "{\"k\": 1}",
        "{}",
        "[]",
        "# c",
        "yes",
        "x: y",
        "~",
        "null",
        "a #c",
        "a  ",
        "-1",
        "- a",
        "[a, [b, {c: d}]]",
        "{a: 1, a: 2}",
        "{k: [1, 2]}",
        "&a x",
        "*a",
        "|",
        "\"unclosed",
        "é",
        "a\tb",
        "[a,",
        "0x1F",
        "\"\\u00e9\"",
        "nginx:1.2",
    ];

    /// Lines of the shapes manifests are made of, in any indentation and order: most
    /// streams are not YAML at all, and the two paths must agree on every one all the same.
    fn lines() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let lead = prop::sample::select(vec![
            "", "- ", "k: ", "kk: ", "\"k\": ", "'k': ", "- k: ", "- - ", "-", "k:", "---", "...",
        ]);
        let value = prop::sample::select(SCALARS.to_vec());
        let line = (0usize..7, lead, value)
            .prop_map(|(indent, lead, value)| format!("{}{lead}{value}", " ".repeat(indent)));
        prop::collection::vec(line, 1..12).prop_map(|lines| lines.join("\n") + "\n")
    }

    /// A tree of block collections, written out with either indentation of sequences.
    #[derive(Debug, Clone)]
    enum Tree {
        Scalar(&'static str),
        Map(Vec<(&'static str, Tree)>),
        Seq(Vec<Tree>),
    }

    fn write(tree: &Tree, indent: usize, indentless: bool, out: &mut String) {
        let pad = " ".repeat(indent);
        match tree {
            Tree::Scalar(s) => {
                out.push(' ');
                out.push_str(s);
                out.push('\n');
            }
            Tree::Map(entries) => {
                out.push('\n');
                for (k, v) in entries {
                    out.push_str(&format!("{pad}{k}:"));
                    let deeper = if matches!(v, Tree::Seq(_)) && indentless {
                        indent
                    } else {
                        indent + 2
                    };
                    write(v, deeper, indentless, out);
                }
            }
            Tree::Seq(items) => {
                out.push('\n');
                for item in items {
                    out.push_str(&format!("{pad}-"));
                    write(item, indent + 2, indentless, out);
                }
            }
        }
    }

    fn trees() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let scalar = prop::sample::select(SCALARS.to_vec()).prop_map(Tree::Scalar);
        let key = prop::sample::select(vec!["a", "b", "on", "\"k\"", "'q'", "a.b/c", "k k", "1"]);
        let tree = scalar.prop_recursive(4, 24, 4, move |inner| {
            prop_oneof![
                prop::collection::vec((key.clone(), inner.clone()), 1..4).prop_map(Tree::Map),
                prop::collection::vec(inner, 1..4).prop_map(Tree::Seq),
            ]
        });
        (prop::collection::vec(tree, 1..3), any::<bool>()).prop_map(|(docs, indentless)| {
            let mut out = String::new();
            for doc in docs {
                out.push_str("---");
                write(&doc, 0, indentless, &mut out);
            }
            out
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn generated_streams_read_the_same_both_ways(text in lines()) {
            same(&text);
        }

        #[test]
        fn generated_trees_read_the_same_both_ways(text in trees()) {
            same(&text);
        }
    }

    fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let kind = entry.file_type().ok();
            if kind.is_some_and(|k| k.is_dir()) {
                collect(&path, out);
            } else if kind.is_some_and(|k| k.is_file())
                && path
                    .extension()
                    .is_some_and(|x| x == "yaml" || x == "yml" || x == "snap")
            {
                out.push(path);
            }
        }
    }
}
