//! YAML documents as trees whose every node keeps its byte span, so that a finding about any
//! value (a request field, a manifest node, a schema error's JSON pointer) points at a line.
//!
//! Built on saphyr-parser's event stream with YAML 1.2 core-schema scalars: `no`, `on` and
//! `y` are strings, as the YAML 1.2 spec says. Duplicate keys are kept out of the tree and
//! reported, because kubectl refuses them and a silent "last one wins" hides mistakes. Merge
//! keys (`<<`) are resolved as go-yaml, and so kubectl, resolves them.
//! Nesting depth and alias expansion are bounded, so no input can blow the stack or memory.

use crate::source::{Source, Span};
use saphyr_parser::{Event, Parser, ScalarStyle, Tag};
use serde_json::Value as Json;
use std::collections::HashMap;

mod de;
mod fast;

/// Limits for one parse: beyond any of them the parse stops with an error, so that no input
/// can exhaust the stack, memory or time.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Deepest nesting of mappings and sequences.
    pub max_depth: usize,
    /// Most nodes in one document, counting every node an alias copies.
    pub max_nodes: usize,
    /// Most nodes that aliases copy in the whole stream (a "billion laughs" bomb expands a
    /// few aliases into millions of nodes; so could many small bombs, one per document).
    pub max_alias_nodes: usize,
    /// Most documents in one stream.
    pub max_documents: usize,
    /// Longest scalar (key or value) in bytes.
    pub max_scalar_bytes: usize,
}

impl Default for Limits {
    /// For manifests: 1.5 MiB is the largest object the API server stores, so no document of
    /// a real manifest comes near these.
    fn default() -> Self {
        Limits {
            max_depth: 128,
            max_nodes: 1_000_000,
            max_alias_nodes: 1_000_000,
            max_documents: 50_000,
            max_scalar_bytes: 2 << 20,
        }
    }
}

impl Limits {
    /// For one action request: a few hundred nodes in practice.
    pub const REQUEST: Limits = Limits {
        max_depth: 64,
        max_nodes: 100_000,
        max_alias_nodes: 100_000,
        max_documents: 16,
        max_scalar_bytes: 2 << 20,
    };
}

/// Most duplicate keys kept in a [`Stream`].
pub const MAX_DUPLICATES: usize = 10_000;

/// A YAML value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in document order, without duplicate keys.
    Map(Vec<(Node, Node)>),
}

/// A value and where it stands in the source.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Value,
    /// For scalars, the scalar's text; for collections, their first character.
    pub span: Span,
}

/// A key that appears twice in one mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct DuplicateKey {
    pub key: String,
    pub first: Span,
    pub second: Span,
}

/// The documents of a stream and the duplicate keys met on the way.
#[derive(Debug, Default)]
pub struct Stream {
    pub documents: Vec<Node>,
    pub duplicates: Vec<DuplicateKey>,
    /// Plain scalars that YAML 1.1 tools (PyYAML, go-yaml v2) read as booleans, such as
    /// `no` and `on`, and that this parser, like YAML 1.2, reads as strings.
    pub yaml11_booleans: Vec<Span>,
}

/// Why a stream could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct SyntaxError {
    pub message: String,
    pub span: Span,
}

/// One collection being built.
enum Open {
    Seq {
        start: usize,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        start: usize,
        anchor: usize,
        entries: Vec<(Node, Node)>,
        /// The key read, and whether it is a merge key (a plain `<<`).
        key: Option<(Node, bool)>,
        /// Key text -> index in `entries`: duplicate detection stays linear in the map size.
        seen: HashMap<String, usize>,
        /// The merge key and its value, resolved when the mapping ends.
        merge: Option<(Node, Node)>,
    },
}

/// The strings of a sequence's items, `""` for any other item: an argv as it is written.
pub fn words(items: &[Node]) -> Vec<&str> {
    items
        .iter()
        .map(|n| match &n.value {
            Value::Str(s) => s.as_str(),
            _ => "",
        })
        .collect()
}

/// The documents of a file an option names (`--crd`, `--policy`), with the default limits;
/// `Err` is `file:line:col: not valid YAML: …`.
pub fn parse_file(source: &Source) -> Result<Stream, String> {
    parse(source, Limits::default()).map_err(|e| {
        let (line, col) = source.line_col(e.span.start);
        format!(
            "{}:{line}:{col}: not valid YAML: {}",
            source.name(),
            e.message
        )
    })
}

/// Parse every document of `source`.
pub fn parse(source: &Source, limits: Limits) -> Result<Stream, SyntaxError> {
    let mut documents = Vec::new();
    let mut stream = parse_each(source, limits, &mut |doc, _| documents.push(doc))?;
    stream.documents = documents;
    Ok(stream)
}

/// Parse a stream one document at a time: each is handed to `on_document` (with the YAML 1.1
/// boolean spans found so far) as soon as it is complete, so a long stream is never held
/// whole. The returned stream has the duplicates and spans, and no documents.
pub fn parse_each(
    source: &Source,
    limits: Limits,
    on_document: &mut dyn FnMut(Node, &[Span]),
) -> Result<Stream, SyntaxError> {
    parse_with(source, limits, true, on_document)
}

/// [`parse_each`], with or without the fast path for the common subset (the tests compare
/// the two).
fn parse_with(
    source: &Source,
    limits: Limits,
    fast_path: bool,
    on_document: &mut dyn FnMut(Node, &[Span]),
) -> Result<Stream, SyntaxError> {
    let text = source.text();
    // Whether the text is printable ASCII and line feeds (nearly every manifest) is asked once,
    // not each time the fast path resumes; such a text is ASCII too.
    let plain_ascii = fast::plain_ascii(text);
    let mut builder = Builder {
        source,
        limits,
        stream: Stream::default(),
        stack: Vec::new(),
        anchors: HashMap::new(),
        nodes: 0,
        aliased: 0,
        documents: 0,
        ascii: plain_ascii || text.is_ascii(),
    };
    if !fast_path {
        builder.general(0, false, on_document)?;
        return Ok(builder.stream);
    }
    // The documents in the subset the fast path reads; the general parser reads each one it
    // does not take, and the fast path goes on after it.
    let mut from = 0;
    loop {
        let (documents, stream) = (&mut builder.documents, &mut builder.stream);
        from = fast::documents(
            text,
            from,
            plain_ascii,
            limits,
            stream,
            documents,
            on_document,
        );
        if from >= text.len() {
            return Ok(builder.stream);
        }
        let stopped = builder.general(from, true, on_document)?;
        from = fast::after_document(text, stopped);
    }
}

impl Builder<'_> {
    /// Read the text from `from` on with the general parser (offsets and lines counted in the
    /// whole text), to its end or, if `one`, to the end of the first document. Returns where
    /// it stopped: the end marker of that document (the next `---`, a `...`, the text's end).
    fn general(
        &mut self,
        from: usize,
        one: bool,
        on_document: &mut dyn FnMut(Node, &[Span]),
    ) -> Result<usize, SyntaxError> {
        let source = self.source;
        let text = source.text();
        let limits = self.limits;
        // Markers count characters; in ASCII text (nearly every manifest) that is the byte
        // offset; otherwise lines and columns place them.
        let ascii = self.ascii;
        let lines_before = match ascii {
            true => 0,
            false => source.line_col(from).0 - 1,
        };
        let at = |m: saphyr_parser::Marker| {
            if ascii {
                (from + m.index()).min(text.len())
            } else {
                source.offset(lines_before + m.line(), m.col())
            }
        };
        for event in Parser::new_from_str(&text[from..]) {
            let (event, span) = event.map_err(|e| {
                let pos = at(*e.marker());
                SyntaxError {
                    message: e.info().to_string(),
                    span: pos..pos,
                }
            })?;
            let start = at(span.start);
            let complete = match event {
                Event::DocumentEnd if one => return Ok(start),
                Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => None,
                Event::DocumentStart(_) => self.document(start)?,
                Event::Alias(id) => Some(self.alias(id, start)?),
                Event::Scalar(text, style, anchor, tag) => {
                    let end = at(span.end);
                    Some(self.scalar(&text, style, anchor, tag.as_deref(), start, end)?)
                }
                Event::SequenceStart(anchor, _) => self.open(true, anchor, start)?,
                Event::MappingStart(anchor, _) => self.open(false, anchor, start)?,
                Event::SequenceEnd | Event::MappingEnd => self.close()?,
            };
            if self.nodes > limits.max_nodes {
                return Err(SyntaxError {
                    message: format!("more than {} nodes in one document", limits.max_nodes),
                    span: start..start,
                });
            }
            if let Some((node, anchor, merge_key)) = complete {
                self.attach(node, anchor, merge_key, on_document);
            }
        }
        Ok(text.len())
    }
}

/// A node completed by an event: the node, its anchor id (0: none), and whether it is a merge
/// key (`<<`).
type Completed = (Node, usize, bool);

/// The state of one parse: the collections being built, the anchors of the document, and the
/// budgets spent so far.
struct Builder<'s> {
    source: &'s Source,
    limits: Limits,
    stream: Stream,
    stack: Vec<Open>,
    anchors: HashMap<usize, Node>,
    nodes: usize,
    aliased: usize,
    documents: usize,
    /// Whether the source is ASCII (checked once: the general parser may run many times).
    ascii: bool,
}

impl Builder<'_> {
    fn error(message: String, at: usize) -> SyntaxError {
        SyntaxError {
            message,
            span: at..at,
        }
    }

    /// A document starts: anchors and the node budget are per document (a bomb is one).
    fn document(&mut self, start: usize) -> Result<Option<Completed>, SyntaxError> {
        if self.documents >= self.limits.max_documents {
            let message = format!("more than {} documents", self.limits.max_documents);
            return Err(Self::error(message, start));
        }
        self.anchors.clear();
        self.nodes = 0;
        Ok(None)
    }

    /// A copy of an anchored node, charged to the stream's alias budget.
    fn alias(&mut self, id: usize, start: usize) -> Result<Completed, SyntaxError> {
        let node = self
            .anchors
            .get(&id)
            .cloned()
            .ok_or_else(|| Self::error("alias to an unknown anchor".into(), start))?;
        let n = count(&node);
        self.nodes += n;
        self.aliased += n;
        if self.aliased > self.limits.max_alias_nodes {
            let message = format!(
                "aliases expand into more than {} nodes (a \"billion laughs\" bomb?)",
                self.limits.max_alias_nodes
            );
            return Err(Self::error(message, start));
        }
        Ok((node, 0, false))
    }

    /// A scalar, resolved as YAML 1.2's core schema reads it.
    fn scalar(
        &mut self,
        text: &str,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<&Tag>,
        start: usize,
        end: usize,
    ) -> Result<Completed, SyntaxError> {
        if text.len() > self.limits.max_scalar_bytes {
            let message = format!(
                "a scalar of {} bytes, over the limit of {}",
                text.len(),
                self.limits.max_scalar_bytes
            );
            return Err(Self::error(message, start));
        }
        let value = resolve(text, style, tag);
        // A merge key is a plain `<<` (or one tagged `!!merge`), as go-yaml reads it.
        let merge = text == "<<"
            && match tag {
                None => style == ScalarStyle::Plain,
                Some(t) => (t.is_yaml_core_schema() || t.handle == "!!") && t.suffix == "merge",
            };
        // The parser ends a quoted scalar's span after what follows it on the line (a
        // comment): end it at its closing quote, so a label or a mask covers the scalar alone.
        let end = match style {
            ScalarStyle::DoubleQuoted | ScalarStyle::SingleQuoted => {
                quoted_end(self.source.text(), start)
            }
            _ => None,
        }
        .unwrap_or_else(|| end.max(start));
        if style == ScalarStyle::Plain && tag.is_none() && is_yaml11_boolean(text) {
            self.stream.yaml11_booleans.push(start..end);
        }
        self.nodes += 1;
        Ok((
            Node {
                value,
                span: start..end,
            },
            anchor,
            merge,
        ))
    }

    /// A sequence or mapping starts, within the depth limit.
    fn open(
        &mut self,
        sequence: bool,
        anchor: usize,
        start: usize,
    ) -> Result<Option<Completed>, SyntaxError> {
        if self.stack.len() >= self.limits.max_depth {
            let message = format!("nesting deeper than {} levels", self.limits.max_depth);
            return Err(Self::error(message, start));
        }
        self.stack.push(if sequence {
            Open::Seq {
                start,
                anchor,
                items: Vec::new(),
            }
        } else {
            Open::Map {
                start,
                anchor,
                entries: Vec::new(),
                key: None,
                seen: HashMap::new(),
                merge: None,
            }
        });
        Ok(None)
    }

    /// A sequence or mapping ends (its merge key resolved).
    fn close(&mut self) -> Result<Option<Completed>, SyntaxError> {
        self.nodes += 1;
        let text = self.source.text();
        Ok(match self.stack.pop() {
            None => None,
            Some(Open::Seq {
                start,
                anchor,
                mut items,
            }) => {
                // Growth by doubling leaves up to half of a list unused: a tree of small
                // mappings holds twice its size without this.
                items.shrink_to_fit();
                Some((node(Value::Seq(items), start, text), anchor, false))
            }
            Some(Open::Map {
                start,
                anchor,
                mut entries,
                mut seen,
                merge,
                ..
            }) => {
                if let Some((_, value)) = merge {
                    merge_into(&mut entries, &mut seen, value)?;
                }
                entries.shrink_to_fit();
                Some((node(Value::Map(entries), start, text), anchor, false))
            }
        })
    }

    /// Put a completed node where it belongs: a document, an item, a key or a value (a second
    /// key of a mapping is a duplicate, kept out of the tree and reported).
    fn attach(
        &mut self,
        node: Node,
        anchor: usize,
        merge_key: bool,
        on_document: &mut dyn FnMut(Node, &[Span]),
    ) {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        let duplicates = &mut self.stream.duplicates;
        match self.stack.last_mut() {
            None => {
                self.documents += 1;
                on_document(node, &self.stream.yaml11_booleans);
            }
            Some(Open::Seq { items, .. }) => items.push(node),
            Some(Open::Map {
                entries,
                key,
                seen,
                merge,
                ..
            }) => match key.take() {
                None => *key = Some((node, merge_key)),
                Some((k, true)) => match merge {
                    None => *merge = Some((k, node)),
                    Some((first, _)) if duplicates.len() < MAX_DUPLICATES => {
                        duplicates.push(DuplicateKey {
                            key: "<<".into(),
                            first: first.span.clone(),
                            second: k.span,
                        });
                    }
                    Some(_) => {}
                },
                Some((k, false)) => {
                    let name = key_text(&k).into_owned();
                    if let Some(&first) = seen.get(&name) {
                        // Enough to report; a hostile stream of them cannot fill memory.
                        if duplicates.len() < MAX_DUPLICATES {
                            duplicates.push(DuplicateKey {
                                key: name,
                                first: entries[first].0.span.clone(),
                                second: k.span,
                            });
                        }
                    } else {
                        seen.insert(name, entries.len());
                        entries.push((k, node));
                    }
                }
            },
        }
    }
}

/// Resolve a merge key (`<<: *defaults`, `<<: [*a, *b]`) the way go-yaml, and so kubectl,
/// reads it: the keys of the merged mappings are added, but keys written in the mapping win,
/// and so do earlier merged mappings over later ones. The merged nodes keep their spans, so a
/// finding about a merged value points at where it is written.
fn merge_into(
    entries: &mut Vec<(Node, Node)>,
    seen: &mut HashMap<String, usize>,
    value: Node,
) -> Result<(), SyntaxError> {
    let refused = |span: &Span| SyntaxError {
        message: "a merge key (`<<`) takes a mapping or a sequence of mappings".into(),
        span: span.clone(),
    };
    let maps = match value.value {
        Value::Map(_) => vec![value],
        Value::Seq(items) => items,
        _ => return Err(refused(&value.span)),
    };
    for map in maps {
        let Value::Map(merged) = map.value else {
            return Err(refused(&map.span));
        };
        for (k, v) in merged {
            if let std::collections::hash_map::Entry::Vacant(e) =
                seen.entry(key_text(&k).into_owned())
            {
                e.insert(entries.len());
                entries.push((k, v));
            }
        }
    }
    Ok(())
}

/// The offset after the closing quote of the quoted scalar that opens at `start`.
fn quoted_end(text: &str, start: usize) -> Option<usize> {
    let rest = text.get(start..)?;
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let mut chars = rest.char_indices().skip(1).peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if quote == '"' => {
                chars.next();
            }
            '\'' if quote == '\'' && chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                chars.next();
            }
            c if c == quote => return Some(start + i + 1),
            _ => {}
        }
    }
    None
}

/// A collection's node, spanning its first character (none at the end of the text).
fn node(value: Value, start: usize, text: &str) -> Node {
    let len = text[start..].chars().next().map_or(0, char::len_utf8);
    Node {
        value,
        span: start..start + len,
    }
}

fn count(node: &Node) -> usize {
    1 + match &node.value {
        Value::Seq(items) => items.iter().map(count).sum(),
        Value::Map(entries) => entries.iter().map(|(k, v)| count(k) + count(v)).sum(),
        _ => 0,
    }
}

/// YAML 1.2 core schema resolution of a scalar.
fn resolve(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Value {
    let core_tag = tag
        .filter(|t| t.is_yaml_core_schema() || t.handle == "!!")
        .map(|t| t.suffix.as_str());
    if core_tag == Some("str") || (style != ScalarStyle::Plain && core_tag.is_none()) {
        return Value::Str(text.to_string());
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        _ => {}
    }
    // Every number starts with a digit, a sign or a point: most scalars are words.
    if !text.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '-' | '+' | '.')) {
        return Value::Str(text.to_string());
    }
    let int = if let Some(oct) = text.strip_prefix("0o") {
        i64::from_str_radix(oct, 8).ok()
    } else if let Some(hex) = text.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()
    } else if is_decimal_int(text) {
        text.parse().ok()
    } else {
        None
    };
    if let Some(i) = int {
        return Value::Int(i);
    }
    if is_float(text)
        && let Ok(f) = text.parse()
    {
        return Value::Float(f);
    }
    Value::Str(text.to_string())
}

/// The YAML 1.1 booleans that YAML 1.2 reads as strings.
fn is_yaml11_boolean(s: &str) -> bool {
    matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    )
}

fn is_decimal_int(s: &str) -> bool {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
fn is_float(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty());
    let exponent_ok = exponent.is_none_or(is_decimal_int);
    mantissa_ok && exponent_ok
}

/// A mapping key as text: scalars as written, anything else in flow JSON. A string key (nearly
/// every key) is borrowed: keys are compared and walked far more often than kept.
pub fn key_text(key: &Node) -> std::borrow::Cow<'_, str> {
    match &key.value {
        Value::Str(s) => std::borrow::Cow::Borrowed(s),
        _ => std::borrow::Cow::Owned(key.to_json().to_string()),
    }
}

/// One step of a path into a tree. A key the code names is borrowed, not copied: checks and
/// rules make paths for every field they look at, and most are never reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(std::borrow::Cow<'static, str>),
    Index(usize),
}

/// One step of a path, its key borrowed from the tree: what a walk carries, so that a path is
/// made owned ([`owned`]) only for what is reported, not at every node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum At<'a> {
    Key(std::borrow::Cow<'a, str>),
    Index(usize),
}

impl At<'_> {
    /// The key of a key step.
    pub fn key(&self) -> Option<&str> {
        match self {
            At::Key(k) => Some(k),
            At::Index(_) => None,
        }
    }
}

/// A path written with dots (`spec.template.spec`): keys only.
pub fn dotted(path: &'static str) -> Vec<Step> {
    // Split by bytes: the checks and rules make tens of these per object.
    let mut steps = Vec::with_capacity(path.len() / 4 + 1);
    let mut start = 0;
    for (i, b) in path.bytes().enumerate() {
        if b == b'.' {
            steps.push(Step::Key(path[start..i].into()));
            start = i + 1;
        }
    }
    steps.push(Step::Key(path[start..].into()));
    steps
}

/// A borrowed path as an owned one.
pub fn owned(path: &[At]) -> Vec<Step> {
    path.iter()
        .map(|s| match s {
            At::Key(k) => Step::Key(k.to_string().into()),
            At::Index(i) => Step::Index(*i),
        })
        .collect()
}

/// Whether a borrowed path and an owned one name the same place.
pub fn same_path(path: &[At], steps: &[Step]) -> bool {
    path.len() == steps.len()
        && path.iter().zip(steps).all(|(a, s)| match (a, s) {
            (At::Key(a), Step::Key(s)) => a == s,
            (At::Index(a), Step::Index(s)) => a == s,
            _ => false,
        })
}

impl Node {
    /// The value as JSON; non-finite floats become strings, as JSON has none.
    pub fn to_json(&self) -> Json {
        match &self.value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(i) => Json::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map_or_else(|| Json::String(f.to_string()), Json::Number),
            Value::Str(s) => Json::String(s.clone()),
            Value::Seq(items) => Json::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => Json::Object(
                entries
                    .iter()
                    .map(|(k, v)| (key_text(k).into_owned(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// The tree [`Node::to_json`] makes this JSON from (every span empty), for tests that
    /// change a request as JSON and read it as a tree.
    #[cfg(test)]
    pub(crate) fn from_json(json: &Json) -> Node {
        let node = |value| Node { value, span: 0..0 };
        node(match json {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Json::String(s) => Value::Str(s.clone()),
            Json::Array(items) => Value::Seq(items.iter().map(Node::from_json).collect()),
            Json::Object(map) => Value::Map(
                map.iter()
                    .map(|(k, v)| (node(Value::Str(k.clone())), Node::from_json(v)))
                    .collect(),
            ),
        })
    }

    /// The value of a mapping's key.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|(_, v)| v)
    }

    /// The value of a mapping's key, to change or take out.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        match &mut self.value {
            Value::Map(entries) => entries
                .iter_mut()
                .find(|(k, _)| key_text(k) == key)
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// A mapping's entry (key node and value node).
    pub fn entry(&self, key: &str) -> Option<(&Node, &Node)> {
        match &self.value {
            // A string key is compared as it is: the lookups of every check and rule go here.
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| match &k.value {
                    Value::Str(s) => s == key,
                    _ => key_text(k) == key,
                })
                .map(|(k, v)| (k, v)),
            _ => None,
        }
    }

    /// The node a path leads to, with the key node that names it when the last step is a key.
    pub fn lookup<'a>(&'a self, path: &[Step]) -> Option<(Option<&'a Node>, &'a Node)> {
        let mut key = None;
        let mut node = self;
        for step in path {
            match (step, &node.value) {
                (Step::Key(k), _) => {
                    let (kn, vn) = node.entry(k)?;
                    key = Some(kn);
                    node = vn;
                }
                (Step::Index(i), Value::Seq(items)) => {
                    key = None;
                    node = items.get(*i)?;
                }
                _ => return None,
            }
        }
        Some((key, node))
    }

    /// The deepest node on `path` that exists, with the number of steps that led to it.
    pub fn deepest<'a>(&'a self, path: &[Step]) -> (usize, Option<&'a Node>, &'a Node) {
        for len in (0..=path.len()).rev() {
            if let Some((key, node)) = self.lookup(&path[..len]) {
                return (len, key, node);
            }
        }
        (0, None, self)
    }

    /// A short description for "found ..." messages.
    pub fn describe(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a sequence",
            Value::Map(_) => "a mapping",
        }
    }
}

/// Serialized in document order (a config spec is written back as its author ordered it).
impl serde::Serialize for Node {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match &self.value {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) => s.serialize_f64(*f),
            Value::Str(t) => s.serialize_str(t),
            Value::Seq(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Map(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(&key_text(k), v)?;
                }
                map.end()
            }
        }
    }
}

/// A tree written as serde_json pretty-prints its [`Node::to_json`], without building that
/// JSON: keys sorted as a JSON object sorts them, two spaces a level, non-finite floats as
/// strings. `-o json` prints every rendered object through it.
pub struct SortedJson<'a>(pub &'a Node);

impl SortedJson<'_> {
    /// The pretty text, every line after the first indented by `indent` as well (the items
    /// of a `v1` List are two levels deep).
    pub fn pretty(&self, indent: &str) -> String {
        let mut out = String::with_capacity(256);
        let mut margin = String::from(indent);
        pretty_json(&mut out, self.0, &mut margin);
        out
    }
}

/// `node` as pretty JSON; `margin` is the indentation of its line, as it is left.
fn pretty_json(out: &mut String, node: &Node, margin: &mut String) {
    let open = |out: &mut String, margin: &mut String, bracket: char| {
        out.push(bracket);
        margin.push_str("  ");
    };
    let next = |out: &mut String, margin: &str, first: bool| {
        out.push_str(if first { "\n" } else { ",\n" });
        out.push_str(margin);
    };
    let close = |out: &mut String, margin: &mut String, bracket: char| {
        margin.truncate(margin.len() - 2);
        out.push('\n');
        out.push_str(margin);
        out.push(bracket);
    };
    match &node.value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            use std::fmt::Write;
            let _ = write!(out, "{i}");
        }
        Value::Float(f) if f.is_finite() => {
            out.push_str(&serde_json::to_string(f).expect("a finite float serializes"));
        }
        Value::Float(f) => json_string(out, &f.to_string()),
        Value::Str(s) => json_string(out, s),
        Value::Seq(items) if items.is_empty() => out.push_str("[]"),
        Value::Map(entries) if entries.is_empty() => out.push_str("{}"),
        Value::Seq(items) => {
            open(out, margin, '[');
            for (i, item) in items.iter().enumerate() {
                next(out, margin, i == 0);
                pretty_json(out, item, margin);
            }
            close(out, margin, ']');
        }
        Value::Map(entries) => {
            // Key texts are unique: the parser keeps a duplicate (`1` after `"1"` too) out.
            let mut sorted: Vec<(std::borrow::Cow<'_, str>, &Node)> =
                entries.iter().map(|(k, v)| (key_text(k), v)).collect();
            sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            open(out, margin, '{');
            for (i, (key, value)) in sorted.iter().enumerate() {
                next(out, margin, i == 0);
                json_string(out, key);
                out.push_str(": ");
                pretty_json(out, value, margin);
            }
            close(out, margin, '}');
        }
    }
}

/// `s` as a JSON string, escaped as serde_json escapes it: quote, backslash and the C0
/// controls (by name where JSON has one, else `\u00xx`); everything else as it is.
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    if crate::source::every_byte(s, |b| (b >= 0x20) & (b != b'"') & (b != b'\\')) {
        out.push_str(s);
    } else {
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 => {
                    use std::fmt::Write;
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
    }
    out.push('"');
}

/// What [`visit`] shows of a tree. Every method has a default that does nothing, so a
/// visitor names only what it looks at.
pub trait Visitor<'a> {
    /// A string scalar, at its path.
    fn string(&mut self, _path: &[At<'a>], _node: &'a Node, _value: &'a str) {}
    /// A mapping key, at the path of the entry it names, before its value is visited.
    fn key(&mut self, _path: &[At<'a>], _key: &'a Node, _text: &str) {}
    /// A sequence, at its path, before its items are visited: the indices it returns are not
    /// visited (an item already judged with its neighbours).
    fn seq(&mut self, _path: &[At<'a>], _items: &'a [Node]) -> Vec<usize> {
        Vec::new()
    }
}

/// Walk a tree depth first in document order, showing `visitor` every string, mapping key
/// and sequence with its path. The one walk over a tree's strings: the request's checks and
/// the lint's rules see the same strings at the same paths.
pub fn visit<'a>(node: &'a Node, visitor: &mut impl Visitor<'a>) {
    walk(node, &mut Vec::new(), visitor);
}

fn walk<'a>(node: &'a Node, path: &mut Vec<At<'a>>, visitor: &mut impl Visitor<'a>) {
    match &node.value {
        Value::Str(s) => visitor.string(path, node, s),
        Value::Seq(items) => {
            let skip = visitor.seq(path, items);
            for (i, item) in items.iter().enumerate() {
                if skip.contains(&i) {
                    continue;
                }
                path.push(At::Index(i));
                walk(item, path, visitor);
                path.pop();
            }
        }
        Value::Map(entries) => {
            for (k, v) in entries {
                let text = key_text(k);
                path.push(At::Key(text.clone()));
                visitor.key(path, k, &text);
                walk(v, path, visitor);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Every string scalar of a tree with its path: [`visit`] for a visitor that only reads
/// strings.
pub fn visit_strings<'a>(node: &'a Node, f: impl FnMut(&[At<'a>], &'a Node, &'a str)) {
    struct Strings<F>(F);
    impl<'a, F: FnMut(&[At<'a>], &'a Node, &'a str)> Visitor<'a> for Strings<F> {
        fn string(&mut self, path: &[At<'a>], node: &'a Node, value: &'a str) {
            (self.0)(path, node, value);
        }
    }
    visit(node, &mut Strings(f));
}

/// A path for people: `spec.storage.mounts[0].name`, with keys that are not plain words
/// quoted: `spec.scheduling.nodeSelector["nvidia.com/gpu.product"]`.
pub fn display_path(path: &[Step]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for step in path {
        match step {
            Step::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
            Step::Key(k)
                if !k.is_empty() && k.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') =>
            {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Key(k) => {
                let quoted = serde_json::to_string(k.as_ref()).expect("a string serializes");
                let _ = write!(out, "[{quoted}]");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_for_people() {
        let path = [
            Step::Key("spec".into()),
            Step::Key("nodeSelector".into()),
            Step::Key("nvidia.com/gpu.product".into()),
            Step::Index(10),
            Step::Key("a_1".into()),
            Step::Key("say \"hi\"".into()),
            Step::Key("".into()),
        ];
        assert_eq!(
            display_path(&path),
            r#"spec.nodeSelector["nvidia.com/gpu.product"][10].a_1["say \"hi\""][""]"#
        );
        assert_eq!(
            display_path(&[Step::Index(0), Step::Key("é".into())]),
            r#"[0]["é"]"#
        );
    }

    fn one(text: &str) -> Node {
        let mut s = parse(&Source::new("t", text), Limits::default()).unwrap();
        assert!(s.duplicates.is_empty());
        s.documents.remove(0)
    }

    /// Records what a visit shows, in order, skipping the second item of every sequence.
    #[derive(Default)]
    struct Recorder(Vec<String>);

    impl<'a> Visitor<'a> for Recorder {
        fn string(&mut self, path: &[At<'a>], node: &'a Node, value: &'a str) {
            assert!(matches!(&node.value, Value::Str(s) if s == value));
            self.0
                .push(format!("string {} {value}", display_path(&owned(path))));
        }
        fn key(&mut self, path: &[At<'a>], key: &'a Node, text: &str) {
            assert_eq!(key_text(key), text);
            assert_eq!(path.last().and_then(At::key), Some(text));
            self.0.push(format!("key {}", display_path(&owned(path))));
        }
        fn seq(&mut self, path: &[At<'a>], items: &'a [Node]) -> Vec<usize> {
            self.0.push(format!(
                "seq {} {}",
                display_path(&owned(path)),
                items.len()
            ));
            vec![1]
        }
    }

    #[test]
    fn a_visit_shows_keys_before_their_values_and_skips_what_a_sequence_says() {
        let tree = one("a: x\nb: [p, q, {c: r}]\nd: 1\n");
        let mut seen = Recorder::default();
        visit(&tree, &mut seen);
        assert_eq!(
            seen.0,
            [
                "key a",
                "string a x",
                "key b",
                "seq b 3",
                "string b[0] p",
                "key b[2].c",
                "string b[2].c r",
                "key d",
            ]
        );
        let mut strings = Vec::new();
        visit_strings(&tree, |path, _, value| {
            strings.push(format!("{} {value}", display_path(&owned(path))))
        });
        assert_eq!(strings, ["a x", "b[0] p", "b[1] q", "b[2].c r"]);
    }

    #[test]
    fn core_schema_scalars() {
        let n = one(
            "a: no\nb: 'true'\nc: true\nd: 010\ne: 0x1f\nf: 1.5e3\ng: ~\nh: y\ni: .5\nj: 1.\nk: 12abc\nl: !!str 12\nm: -7\n",
        );
        let j = n.to_json();
        assert_eq!(
            j,
            serde_json::json!({"a": "no", "b": "true", "c": true, "d": 10, "e": 31, "f": 1500.0,
                "g": null, "h": "y", "i": 0.5, "j": 1.0, "k": "12abc", "l": "12", "m": -7})
        );
    }

    #[test]
    fn spans_point_at_scalars() {
        let src = Source::new("t", "spec:\n  gpus: eight\n");
        let n = parse(&src, Limits::default()).unwrap().documents.remove(0);
        let path = [Step::Key("spec".into()), Step::Key("gpus".into())];
        let (key, value) = n.lookup(&path).unwrap();
        assert_eq!(&src.text()[value.span.clone()], "eight");
        assert_eq!(&src.text()[key.unwrap().span.clone()], "gpus");
        assert_eq!(src.line_col(value.span.start), (2, 9));
    }

    #[test]
    fn duplicate_keys_are_reported_and_the_first_kept() {
        let src = Source::new("t", "a: 1\nb: 2\na: 3\n");
        let s = parse(&src, Limits::default()).unwrap();
        assert_eq!(s.duplicates.len(), 1);
        assert_eq!(s.duplicates[0].key, "a");
        assert_eq!(src.line_col(s.duplicates[0].second.start), (3, 1));
        assert_eq!(
            s.documents[0].to_json(),
            serde_json::json!({"a": 1, "b": 2})
        );
    }

    #[test]
    fn aliases_expand_within_a_budget() {
        let s = parse(
            &Source::new("t", "a: no\nb: 'no'\nc: [on, noon]\n"),
            Limits::default(),
        )
        .unwrap();
        assert_eq!(s.yaml11_booleans, vec![3..5, 18..20]);
        let ok = one("a: &x [1, 2]\nb: *x\n");
        assert_eq!(ok.to_json(), serde_json::json!({"a": [1, 2], "b": [1, 2]}));
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let prev = (b'a' + i - 1) as char;
            let cur = (b'a' + i) as char;
            bomb.push_str(&format!("{cur}: &{cur} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
        }
        let err = parse(&Source::new("t", bomb), Limits::default()).unwrap_err();
        assert!(err.message.contains("nodes"), "{err}");
    }

    #[test]
    fn depth_is_bounded_and_syntax_errors_have_positions() {
        let block: String = (0..300)
            .map(|i| format!("{}k:\n", "  ".repeat(i)))
            .collect();
        let err = parse(&Source::new("t", block), Limits::default()).unwrap_err();
        assert!(err.message.contains("nesting deeper than 128"), "{err}");
        // Deep flow collections hit the parser's own recursion limit first.
        let flow = "[".repeat(500) + &"]".repeat(500);
        assert!(parse(&Source::new("t", flow), Limits::default()).is_err());
        let src = Source::new("t", "a: [1, 2\nb: 3\n");
        let err = parse(&src, Limits::default()).unwrap_err();
        assert!(src.line_col(err.span.start).0 >= 2, "{err:?}");
    }

    #[test]
    fn merge_keys_resolve_as_go_yaml_does() {
        let src = Source::new(
            "t",
            "base: &base {a: 1, b: 2}\nmore: &more {b: 3, c: 4}\n\
             one: {<<: *base, a: 9}\n\
             many:\n  <<: [*base, *more]\n  d: 5\n\
             inline: {<<: {x: 1}}\n\
             quoted: {\"<<\": *base}\n\
             tagged: {!!merge <<: *more}\n",
        );
        let n = parse(&src, Limits::default()).unwrap().documents.remove(0);
        let j = n.to_json();
        // Keys written in the mapping win, wherever the merge key stands.
        assert_eq!(j["one"], serde_json::json!({"a": 9, "b": 2}));
        // Earlier merged mappings win over later ones.
        assert_eq!(
            j["many"],
            serde_json::json!({"a": 1, "b": 2, "c": 4, "d": 5})
        );
        assert_eq!(j["inline"], serde_json::json!({"x": 1}));
        // A quoted `<<` is an ordinary key.
        assert_eq!(j["quoted"], serde_json::json!({"<<": {"a": 1, "b": 2}}));
        assert_eq!(j["tagged"], serde_json::json!({"b": 3, "c": 4}));
        // A merged value points at where it is written.
        let path = [Step::Key("many".into()), Step::Key("c".into())];
        assert_eq!(src.line_col(n.lookup(&path).unwrap().1.span.start), (2, 23));

        for bad in [
            "a: {<<: 1}\n",
            "x: &x [1]\na: {<<: *x}\n",
            "a: {<<: [{b: 1}, 2]}\n",
        ] {
            let err = parse(&Source::new("t", bad), Limits::default()).unwrap_err();
            assert!(err.message.contains("merge key"), "{bad}: {err}");
        }
        let twice = parse(
            &Source::new("t", "a: {<<: {b: 1}, <<: {c: 1}}\n"),
            Limits::default(),
        )
        .unwrap();
        assert_eq!(twice.duplicates.len(), 1);
        assert_eq!(twice.duplicates[0].key, "<<");
    }

    #[test]
    fn multiple_documents_and_json() {
        let s = parse(
            &Source::new("t", "---\na: 1\n---\nb: 2\n"),
            Limits::default(),
        )
        .unwrap();
        assert_eq!(s.documents.len(), 2);
        assert_eq!(
            one(r#"{"a": [1, "x"]}"#).to_json(),
            serde_json::json!({"a": [1, "x"]})
        );
    }

    #[test]
    fn a_dotted_path_is_its_keys() {
        for path in ["spec.template.spec", "metadata", "", "a..b", ".a."] {
            let split: Vec<Step> = path.split('.').map(|k| Step::Key(k.into())).collect();
            assert_eq!(dotted(path), split, "{path:?}");
        }
    }

    /// `SortedJson` prints what serde_json prints for the tree's `to_json`, byte for byte.
    #[test]
    fn sorted_json_is_the_json_of_the_tree() {
        let text = concat!(
            "z: 1\n",
            "a: {}\n",
            "m: []\n",
            "1: int key\n",
            "true: bool key\n",
            "~: null key\n",
            "1.5: float key\n",
            "[x, y]: sequence key\n",
            "floats: [1.0, 0.1, 1e300, -2.5e-8, .inf, -.inf, .nan, 3]\n",
            "ints: [0, -1, 9223372036854775807, 0x1f]\n",
            "strings: [\"q\\\"b\\\\s\", \"ctl \\x01\\t\\n\\r\\b\\f\\x7f\", \"é ✓ \\u2028\", \"\", null, yes, no]\n",
            "nested: {b: [{c: {}}, [[]]], a: {z: 1, y: [true, false]}}\n",
            "'Z': upper sorts before lower\n",
        );
        let tree = one(text);
        for node in [
            &tree,
            tree.get("nested").unwrap(),
            tree.get("floats").unwrap(),
        ] {
            let serde = serde_json::to_string_pretty(&node.to_json()).unwrap();
            assert_eq!(SortedJson(node).pretty(""), serde);
            assert_eq!(
                SortedJson(node).pretty("    "),
                serde.replace('\n', "\n    ")
            );
        }
        // A wide map, with keys of every kind.
        let wide: String = (0..40).rev().map(|i| format!("k{i}: {i}\n")).collect();
        let wide = one(&(wide + "1: a\n~: b\ntrue: c\n"));
        assert_eq!(
            SortedJson(&wide).pretty(""),
            serde_json::to_string_pretty(&wide.to_json()).unwrap()
        );
    }
}
