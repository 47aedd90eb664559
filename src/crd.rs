//! Custom resources, checked against the `openAPIV3Schema` of their CustomResourceDefinitions
//! (`tao-k8s lint --crd PATH`), as the API server checks them on create with strict field
//! validation ([`structural`]): the CRD's schema is checked first, as the API server checks a
//! CRD, and one the API server would refuse makes the CRD unreadable, once, at its place.
//!
//! A `pattern` is a regular expression of Go's `regexp` (RE2), as the API server reads it, not
//! ECMAScript's: it is matched by the `regex` crate (RE2's syntax and linear time).

pub mod rules;
mod structural;

use crate::kube::{Document, Finding};
use crate::source::Source;
use crate::yaml::{self, Node, Step, Value};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
pub use structural::{Flaw, Schema};

/// The custom kinds of a set of CRDs, by `apiVersion` and kind.
#[derive(Default)]
pub struct Catalogue {
    kinds: Vec<Kind>,
    /// Where each (`apiVersion`, kind) is in `kinds`.
    index: HashMap<(String, String), usize>,
}

struct Kind {
    /// `group/version`.
    api_version: String,
    kind: String,
    /// The CRD's `metadata.name` (`plural.group`), for messages.
    crd: String,
    /// `None` when the version declares no schema. Versions of one CRD with the same schema
    /// (the same [`fingerprint`]) share it.
    schema: Option<Arc<Schema>>,
    fingerprint: u64,
}

impl std::fmt::Debug for Catalogue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.kinds
                    .iter()
                    .map(|k| format!("{}/{}", k.api_version, k.kind)),
            )
            .finish()
    }
}

/// What a catalogue answers about one object.
pub enum Answer {
    /// Not a kind of these CRDs (nor of their groups).
    Unknown,
    /// A kind of these CRDs whose version declares no schema: not checked.
    NoSchema(String),
    /// Checked: what is wrong (empty when nothing is).
    Checked(Vec<Finding>),
}

impl Catalogue {
    /// The CRDs in these sources; documents of other kinds are skipped. `Err` names the file,
    /// line and column of the first CRD that cannot be read.
    pub fn read(sources: &[Source]) -> Result<Catalogue, String> {
        let mut catalogue = Catalogue::default();
        for source in sources {
            let stream = yaml::parse_file(source)?;
            for document in stream.documents {
                catalogue
                    .add(&document)
                    .map_err(|(span, why)| at(source, span.start, &why))?;
            }
        }
        if catalogue.kinds.is_empty() {
            return Err(format!(
                "no CustomResourceDefinition in {}",
                sources
                    .iter()
                    .map(Source::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(catalogue)
    }

    /// Add the kinds a CRD defines.
    fn add(&mut self, document: &Node) -> Result<(), (crate::source::Span, String)> {
        let text = |node: &Node, key: &str| match node.get(key).map(|n| &n.value) {
            Some(Value::Str(s)) => Some(s.clone()),
            _ => None,
        };
        if text(document, "kind").as_deref() != Some("CustomResourceDefinition") {
            return Ok(());
        }
        let api_version = text(document, "apiVersion").unwrap_or_default();
        if api_version != "apiextensions.k8s.io/v1" {
            return Err((
                document.span.clone(),
                format!(
                    "a CustomResourceDefinition of `{api_version}`: only apiextensions.k8s.io/v1 \
                     is served since Kubernetes 1.22 (convert it with `kubectl convert` or \
                     regenerate it)"
                ),
            ));
        }
        let name = document
            .get("metadata")
            .and_then(|m| text(m, "name"))
            .unwrap_or_default();
        let span = document.span.clone();
        let missing = |path: &str| {
            (
                span.clone(),
                format!("CustomResourceDefinition `{name}` has no `{path}`"),
            )
        };
        let spec = document.get("spec").ok_or_else(|| missing("spec"))?;
        let group = text(spec, "group").ok_or_else(|| missing("spec.group"))?;
        let kind = spec
            .get("names")
            .and_then(|n| text(n, "kind"))
            .ok_or_else(|| missing("spec.names.kind"))?;
        let Some(Value::Seq(versions)) = spec.get("versions").map(|v| &v.value) else {
            return Err(missing("spec.versions"));
        };
        for (i, version) in versions.iter().enumerate() {
            let v = text(version, "name").ok_or_else(|| {
                (
                    version.span.clone(),
                    format!("a version of CustomResourceDefinition `{name}` has no `name`"),
                )
            })?;
            let node = version.get("schema").and_then(|s| s.get("openAPIV3Schema"));
            let fingerprint = node.map_or(0, fingerprint);
            // The versions of a CRD mostly repeat one schema: read (and kept) once.
            let schema = match self.kinds.last() {
                Some(last) if last.crd == name && last.fingerprint == fingerprint => {
                    last.schema.clone()
                }
                _ => match node {
                    None => None,
                    Some(node) => {
                        let at = format!("spec.versions[{i}].schema.openAPIV3Schema");
                        let schema = Schema::read(node, &at).map_err(|flaws| {
                            let span = flaws[0].span.clone();
                            let lines: Vec<String> = flaws.into_iter().map(|f| f.message).collect();
                            (
                                span,
                                format!(
                                    "CustomResourceDefinition `{name}` is invalid (the API server \
                                     refuses it): {}",
                                    lines.join("; ")
                                ),
                            )
                        })?;
                        Some(Arc::new(schema))
                    }
                },
            };
            let api_version = format!("{group}/{v}");
            let key = (api_version, kind.clone());
            if let Some(same) = self.index.get(&key).map(|&i| &self.kinds[i]) {
                if same.fingerprint != fingerprint {
                    return Err((
                        version.span.clone(),
                        format!(
                            "{} {kind} is defined twice, with different schemas \
                             (CustomResourceDefinition `{}` and `{name}`)",
                            key.0, same.crd
                        ),
                    ));
                }
                continue;
            }
            self.index.insert(key.clone(), self.kinds.len());
            self.kinds.push(Kind {
                api_version: key.0,
                kind: key.1,
                crd: name.clone(),
                schema,
                fingerprint,
            });
        }
        Ok(())
    }

    /// Check an object against its CRD.
    pub fn check(&self, doc: &Document) -> Answer {
        let group = doc.api_version.rsplit_once('/').map(|(g, _)| g);
        let key = (doc.api_version.to_string(), doc.kind.to_string());
        let Some(kind) = self.index.get(&key).map(|&i| &self.kinds[i]) else {
            // The CRD is known, the version is not: the API server has no such resource.
            let served: Vec<&str> = self
                .kinds
                .iter()
                .filter(|k| {
                    k.kind == doc.kind && Some(k.api_version.rsplit_once('/').unwrap().0) == group
                })
                .map(|k| k.api_version.as_str())
                .collect();
            if served.is_empty() {
                return Answer::Unknown;
            }
            return Answer::Checked(vec![Finding {
                message: format!(
                    "{} has apiVersion {}, which its CustomResourceDefinition does not define \
                     (it defines {})",
                    doc.label(),
                    doc.api_version,
                    served.join(", ")
                ),
                help: None,
                path: vec![Step::Key("apiVersion".into())],
                span: doc.root.get("apiVersion").map_or(0..0, |n| n.span.clone()),
            }]);
        };
        let Some(schema) = &kind.schema else {
            return Answer::NoSchema(format!(
                "CustomResourceDefinition `{}` declares no schema for {}: its objects are not checked",
                kind.crd, kind.api_version
            ));
        };
        Answer::Checked(
            structural::validate(schema, doc.root)
                .into_iter()
                .map(|e| Finding {
                    message: format!(
                        "{} is not a valid {}: {}",
                        doc.label(),
                        doc.kind,
                        e.message()
                    ),
                    help: None,
                    span: e.span,
                    path: e.path,
                })
                .collect(),
        )
    }
}

/// What makes the API server refuse a CustomResourceDefinition's schemas, each with the path of
/// its version's schema in the CRD.
pub fn flaws(crd: &Node) -> Vec<(Vec<Step>, Flaw)> {
    let Some(Value::Seq(versions)) = crd
        .get("spec")
        .and_then(|s| s.get("versions"))
        .map(|v| &v.value)
    else {
        return Vec::new();
    };
    let mut all = Vec::new();
    for (i, version) in versions.iter().enumerate() {
        let Some(schema) = version.get("schema").and_then(|s| s.get("openAPIV3Schema")) else {
            continue;
        };
        let at = format!("spec.versions[{i}].schema.openAPIV3Schema");
        if let Err(flaws) = Schema::read(schema, &at) {
            all.extend(flaws.into_iter().map(|f| {
                let mut path = vec![
                    Step::Key("spec".into()),
                    Step::Key("versions".into()),
                    Step::Index(i),
                    Step::Key("schema".into()),
                    Step::Key("openAPIV3Schema".into()),
                ];
                path.extend(f.path.iter().cloned());
                (path, f)
            }));
        }
    }
    all
}

/// A hash of a schema's content, not of where it is written: versions (and CRDs) that repeat
/// one schema have one fingerprint.
fn fingerprint(node: &Node) -> u64 {
    fn feed(node: &Node, h: &mut std::collections::hash_map::DefaultHasher) {
        match &node.value {
            Value::Null => 0u8.hash(h),
            Value::Bool(b) => (1u8, b).hash(h),
            Value::Int(i) => (2u8, i).hash(h),
            Value::Float(f) => (3u8, f.to_bits()).hash(h),
            Value::Str(s) => (4u8, s).hash(h),
            Value::Seq(items) => {
                (5u8, items.len()).hash(h);
                items.iter().for_each(|i| feed(i, h));
            }
            Value::Map(entries) => {
                (6u8, entries.len()).hash(h);
                for (k, v) in entries {
                    feed(k, h);
                    feed(v, h);
                }
            }
        }
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    feed(node, &mut h);
    // 0 is "no schema".
    h.finish().max(1)
}

fn at(source: &Source, offset: usize, why: &str) -> String {
    let (line, col) = source.line_col(offset);
    format!("{}:{line}:{col}: {why}", source.name())
}
