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
        let size = json_size(doc.root);
        if size <= MAX_OBJECT_BYTES {
            return;
        }
        // Where the bytes are: descend while one value holds most of its parent.
        let (mut path, mut node) = (Vec::new(), doc.root);
        loop {
            let children: Vec<(Step, &Node)> = match &node.value {
                Value::Map(e) => e.iter().map(|(k, v)| (Step::Key(key_text(k)), v)).collect(),
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

/// Bytes of a node as compact JSON, counted without building the text.
pub fn json_size(node: &Node) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail, and a Node always serializes.
    let _ = serde_json::to_writer(&mut count, node);
    count.0
}
