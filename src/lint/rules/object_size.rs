use crate::lint::{Document, Finding, Findings, Rule};
use crate::yaml::{Node, Step, Value, display_path, key_text};

/// The largest object etcd stores (its default `--max-request-bytes`, 1.5 MiB).
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;

crate::rule! {
    /// What it checks: the size of every object as JSON (compact, as `kubectl` sends it):
    /// more than 1572864 bytes (1.5 MiB) is reported at the field that holds most of them
    /// (`data`, or one `args` item that holds most of the Job), or at the object.
    ///
    /// Why it matters: etcd, where the API server keeps every object, refuses a request over
    /// 1.5 MiB by default, so the API server answers `etcdserver: request is too large` (or
    /// `Request entity too large`) and the object is not created. A Job carrying a long
    /// inline script, or a ConfigMap with a dataset index, reaches this without looking
    /// large in the YAML file.
    ///
    /// Example: a ConfigMap whose `data` holds a 2 MB annotation file, or a Job whose `args`
    /// hold a 3 MB list of files.
    ///
    /// Fix: put large data on a volume (a PersistentVolumeClaim, or object storage the pod
    /// downloads from) and pass its path; split a large ConfigMap into several.
    pub struct ObjectSize {
        code: "TK404",
        name: "object-size",
        group: Api,
        severity: Error,
    }
}

impl Rule for ObjectSize {
    fn check(&self, doc: &Document, out: &mut Findings) {
        if surely_fits(doc) {
            return;
        }
        let size = json_size(doc.root);
        if size <= MAX_OBJECT_BYTES {
            return;
        }
        // Where the bytes are: descend while one value holds most of its parent.
        let (mut path, mut node) = (Vec::new(), doc.root);
        loop {
            let children: Vec<(Step, &Node)> = match &node.value {
                Value::Map(e) => e
                    .iter()
                    .map(|(k, v)| (Step::Key(key_text(k).into_owned().into()), v))
                    .collect(),
                Value::Seq(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (Step::Index(i), v))
                    .collect(),
                _ => break,
            };
            let parent = json_size(node);
            let Some((step, child, size)) = children
                .into_iter()
                .map(|(s, c)| (s, c, json_size(c)))
                .max_by_key(|(_, _, size)| *size)
            else {
                break;
            };
            if size * 2 < parent {
                break;
            }
            path.push(step);
            node = child;
        }
        let most = if path.is_empty() {
            String::new()
        } else {
            format!(
                "; `{}` holds {} of them",
                display_path(&path),
                json_size(node)
            )
        };
        out.push(Finding {
            message: format!(
                "{} is {size} bytes as JSON, more than the {MAX_OBJECT_BYTES} (1.5 MiB) etcd stores: the API server refuses it{most}",
                doc.label(),
            ),
            help: Some("keep large data on a volume or in object storage and pass its path, or split the object".into()),
            // At the key of the value that holds most of the bytes, else at the object.
            span: match doc.root.lookup(&path) {
                Some((Some(key), _)) => key.span.clone(),
                Some((None, node)) => node.span.clone(),
                None => doc.root.span.clone(),
            },
            path,
        });
    }
}

/// No node's JSON is more than this many times longer than its YAML text (plus one byte),
/// aliases aside. The worst shapes come to about half of it: empty values (`{a,b,c}`, 7
/// bytes, is `{"a":null,"b":null,"c":null}`, 28; `a:`, 2 bytes, is `{"a":null}`, 10), an
/// escaped control character (`"\0"`, 4 bytes, is `"\u0000"`, 8), an empty item (`-`, 1
/// byte, is `[null]`, 6).
const MOST_EXPANSION: usize = 8;

/// Whether the object's text alone proves it fits: its source is short enough, and holds no
/// alias (a copy of another node, the one way a node outgrows its text). Most objects come in
/// sources of a few KiB, and measuring them node by node was a tenth of render's self-lint.
fn surely_fits(doc: &Document) -> bool {
    (doc.source.text().len() + 1) * MOST_EXPANSION <= MAX_OBJECT_BYTES && !doc.source.may_alias()
}

/// Bytes of a node as compact JSON (as `serde_json` writes it), counted without writing
/// or allocating: every object of every lint run is measured.
pub fn json_size(node: &Node) -> usize {
    match &node.value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Int(n) => {
            let digits = n
                .unsigned_abs()
                .checked_ilog10()
                .map_or(1, |d| d as usize + 1);
            digits + usize::from(*n < 0)
        }
        Value::Float(_) => serde_json::to_vec(node).map_or(0, |v| v.len()),
        Value::Str(s) => string_size(s),
        Value::Seq(items) => {
            2 + items.len().saturating_sub(1) + items.iter().map(json_size).sum::<usize>()
        }
        Value::Map(entries) => {
            2 + entries.len().saturating_sub(1)
                + entries
                    .iter()
                    .map(|(k, v)| {
                        let key = match &k.value {
                            Value::Str(s) => string_size(s),
                            _ => string_size(&key_text(k)),
                        };
                        key + 1 + json_size(v)
                    })
                    .sum::<usize>()
        }
    }
}

/// A JSON string's bytes: quotes, and escapes for `"`, `\\` and control characters.
fn string_size(s: &str) -> usize {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        return 2 + s.len();
    }
    2 + s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::json_size;
    use crate::source::Source;
    use crate::yaml;

    /// `extra` and every lint fixture, each with the documents it parses into (a text that
    /// does not parse is left out).
    fn parsed(extra: &[&str]) -> Vec<(Source, yaml::Stream)> {
        let mut texts: Vec<String> = extra.iter().map(|t| t.to_string()).collect();
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/lint");
        for dir in std::fs::read_dir(root).unwrap() {
            for file in ["fail.yaml", "pass.yaml"] {
                if let Ok(t) = std::fs::read_to_string(dir.as_ref().unwrap().path().join(file)) {
                    texts.push(t);
                }
            }
        }
        texts
            .into_iter()
            .filter_map(|text| {
                let source = Source::new("t", text);
                let stream = yaml::parse(&source, yaml::Limits::default()).ok()?;
                Some((source, stream))
            })
            .collect()
    }

    /// The count is what serde_json writes, for every fixture document and tricky scalars.
    #[test]
    fn counts_what_serde_json_writes() {
        let mut checked = 0;
        for (_, stream) in parsed(&[
            "{a: \"q\\\"b\\\\c\\n\\t\\u0001\\u007f é 日\", b: [1, -20, 0, 1.5, -0.25, 1e300, .nan, .inf, true, false, null], 3: x, [1]: y, {}: []}",
        ]) {
            for d in &stream.documents {
                assert_eq!(
                    json_size(d),
                    serde_json::to_vec(d).unwrap().len(),
                    "{}",
                    d.to_json()
                );
                checked += 1;
            }
        }
        assert!(checked > 50, "{checked}");
    }

    /// The bound `surely_fits` relies on: without aliases, no document's JSON is more than
    /// `MOST_EXPANSION` times its source's text, for the worst shapes and every fixture.
    #[test]
    fn json_is_at_most_eight_times_the_text() {
        let worst = [
            "{a}",
            "{a, b, c, d, e}",
            "[{a}, {b}]",
            "? a",
            "a:",
            "a:\nb:\nc:\n",
            "- \n- \n-\n",
            "- - - -",
            "[~, ~, ~]",
            "[\"\\0\", \"\\a\", \"\\x01\"]",
            "{x: \"\\0\\0\\0\\0\\0\\0\"}",
            "'\t\t\t'",
            "\"\\\\\\\\\"",
            "{a: \"\\\"\\\"\"}",
            "k: !!null",
            "[{}, {}, []]",
            "-",
            "",
            "{a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x, y, z}",
            "{a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u,v,w,x,y,z}",
            "[~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~,~]",
        ];
        let mut checked = 0;
        for (source, stream) in parsed(&worst) {
            if source.may_alias() {
                continue;
            }
            let text = source.text();
            for d in &stream.documents {
                assert!(
                    json_size(d) <= super::MOST_EXPANSION * (text.len() + 1),
                    "{text:?} is {} bytes as JSON",
                    json_size(d)
                );
                checked += 1;
            }
        }
        assert!(checked > 60, "{checked}");
    }
}
