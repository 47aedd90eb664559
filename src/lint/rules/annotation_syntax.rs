use crate::kube::names::{MAX_ANNOTATIONS_BYTES, is_qualified_name};
use crate::lint::api::{LABEL_KEY, Report, entries, key, metadatas, shown};
use crate::lint::pods::scalar_text;
use crate::lint::{Document, Findings, Rule};
use crate::yaml::{Step, Value, key_text};

crate::rule! {
    /// What it checks: the `metadata.annotations` of every object, and of the templates it
    /// holds (a Job's pod template, a CronJob's Job template): each key must be a qualified
    /// name (an optional DNS-1123 subdomain prefix and `/`, then at most 63 letters, digits,
    /// `-`, `_` and `.`, starting and ending with a letter or digit; the API server compares
    /// it lowercased), and all keys and values of one `annotations` together may hold at
    /// most 262144 bytes (256 KiB).
    ///
    /// Why it matters: the API server refuses the whole object (`metadata.annotations: Too
    /// long: must have at most 262144 bytes`), so `kubectl apply` fails. Annotations are
    /// where tools put whole documents (`kubectl.kubernetes.io/last-applied-configuration`
    /// holds a copy of the object), so a large ConfigMap applied client-side, or a long value
    /// copied into an annotation, crosses the limit without anyone writing 256 KiB by hand.
    ///
    /// Example: `annotations: {"my app/owner": x}` (a space in the key), or an annotation
    /// holding a 300 KB document.
    ///
    /// Fix: keep large data in a ConfigMap (or a volume) and put its name in the annotation;
    /// use keys like `example.com/owner`. For large objects, `kubectl apply --server-side`
    /// does not write the last-applied annotation.
    pub struct AnnotationSyntax {
        code: "TK403",
        name: "annotation-syntax",
        group: Api,
        severity: Error,
    }
}

impl Rule for AnnotationSyntax {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let mut report = Report::new(doc, out);
        for (path, metadata) in metadatas(doc) {
            let Some((at, annotations)) = metadata.entry("annotations") else {
                continue;
            };
            let path = key(&path, "annotations");
            let mut total = 0;
            for (k, v) in entries(annotations) {
                let name = key_text(k);
                total += name.len()
                    + match &v.value {
                        Value::Str(s) => s.len(),
                        _ => scalar_text(v).len(),
                    };
                if !is_qualified_name(&name.to_ascii_lowercase()) {
                    let mut p = path.clone();
                    p.push(Step::Key(name.to_string().into()));
                    report.at(
                        p,
                        k,
                        format!("annotation key `{}` must be {LABEL_KEY}", shown(k, 80)),
                        "rename the key, e.g. `example.com/my-note`",
                    );
                }
            }
            if total > MAX_ANNOTATIONS_BYTES {
                report.at(
                    path,
                    at,
                    format!(
                        "its annotations hold {total} bytes, more than the {MAX_ANNOTATIONS_BYTES} (256 KiB) the API server accepts for one object"
                    ),
                    "move large values to a ConfigMap or a volume and keep only a reference in the annotation",
                );
            }
        }
    }
}
