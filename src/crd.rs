//! Custom resources, checked against the `openAPIV3Schema` of their CustomResourceDefinitions
//! (`tao-k8s lint --crd PATH`), as the API server checks them on create with strict field
//! validation ([`structural`]): the CRD's schema is checked first, as the API server checks a
//! CRD, and one the API server would refuse makes the CRD unreadable, once, at its place.
//!
//! A `pattern` is a regular expression of Go's `regexp` (RE2), as the API server reads it, not
//! ECMAScript's: it is matched by the `regex` crate (RE2's syntax and linear time).
//!
//! Some CRDs are built in ([`BUILT_IN`], vendored in `schemas/crds/`): a custom resource of
//! their group and kind is checked without `--crd`, unless the given CRDs define that group
//! and kind ([`check`]). Each is read the first time an object of its kind is checked.

mod cel_format;
mod cel_k8s;
mod cel_net;
mod cel_semver;
mod cel_url;
pub mod rules;
mod structural;

use crate::kube::{Document, Finding};
use crate::source::Source;
use crate::yaml::{self, Node, Step, Value};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};
pub use structural::{Flaw, Schema};

/// A CRD built into the binary.
pub struct BuiltIn {
    /// `spec.group` and `spec.names.kind`: the objects it checks.
    pub group: &'static str,
    pub kind: &'static str,
    /// Its file in `schemas/crds/`, which names it in messages.
    pub file: &'static str,
    pub text: &'static str,
}

/// The built-in CRDs: upstream's, pinned, descriptions stripped (`schemas/crds/README.md` says
/// which commit each comes from).
pub const BUILT_IN: &[BuiltIn] = &[BuiltIn {
    group: "jobset.x-k8s.io",
    kind: "JobSet",
    file: "jobset.x-k8s.io_jobsets.yaml",
    text: include_str!("../schemas/crds/jobset.x-k8s.io_jobsets.yaml"),
}];

/// Each built-in CRD, read once, when first asked for.
static READ: [OnceLock<Catalogue>; BUILT_IN.len()] = [const { OnceLock::new() }; BUILT_IN.len()];

/// Check a custom resource against the first catalogue of `given` that defines its group and
/// kind (the CRDs of `--crd`, then those of the linted stream), or, when none does, against
/// the built-in CRD that does, if any: a given CRD wins over a built-in one (a cluster may run
/// another release of it).
pub fn check(given: &[&Catalogue], doc: &Document) -> Answer {
    for catalogue in given {
        match catalogue.check(doc) {
            Answer::Unknown => {}
            answer => return answer,
        }
    }
    match Catalogue::built_in(doc.api_version, doc.kind) {
        Some(built_in) => built_in.check(doc),
        None => Answer::Unknown,
    }
}

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
    /// The built-in CRD of this `apiVersion`'s group and this kind (any version of the group:
    /// the catalogue then answers that the version is not defined), read on the first call
    /// that asks for it; `None` when no built-in CRD defines them.
    pub fn built_in(api_version: &str, kind: &str) -> Option<&'static Catalogue> {
        let (group, _) = api_version.rsplit_once('/')?;
        let i = BUILT_IN
            .iter()
            .position(|b| b.group == group && b.kind == kind)?;
        Some(READ[i].get_or_init(|| {
            let crd = &BUILT_IN[i];
            let source = Source::new(format!("built-in {}", crd.file), crd.text);
            // `tests/crd_builtin.rs` and the tests below read each one.
            Catalogue::read(std::slice::from_ref(&source))
                .unwrap_or_else(|why| panic!("a built-in CRD cannot be read: {why}"))
        }))
    }

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

    /// The valid CRDs among these documents (a stream that holds its CRDs beside their
    /// objects, as a chart's output does); one the API server would refuse is left out (its
    /// own lint says why).
    pub fn of_stream<'n>(documents: impl IntoIterator<Item = &'n Node>) -> Catalogue {
        let mut catalogue = Catalogue::default();
        for document in documents {
            let kinds = catalogue.kinds.len();
            if catalogue.add(document).is_err() {
                for kind in catalogue.kinds.drain(kinds..) {
                    catalogue.index.remove(&(kind.api_version, kind.kind));
                }
            }
        }
        catalogue
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_built_in_crd_reads_and_defines_its_group_and_kind() {
        for crd in BUILT_IN {
            let read = Catalogue::built_in(&format!("{}/v0", crd.group), crd.kind)
                .unwrap_or_else(|| panic!("{}", crd.file));
            assert!(
                read.kinds
                    .iter()
                    .all(|k| k.kind == crd.kind
                        && k.api_version.starts_with(&format!("{}/", crd.group))),
                "{}: {read:?}",
                crd.file
            );
            assert!(!read.kinds.is_empty(), "{}", crd.file);
        }
    }

    #[test]
    fn only_built_in_groups_and_kinds_have_a_built_in_crd() {
        assert!(Catalogue::built_in("jobset.x-k8s.io/v1alpha2", "JobSet").is_some());
        for (api_version, kind) in [
            ("jobset.x-k8s.io/v1alpha2", "JobSetList"),
            ("example.com/v1alpha2", "JobSet"),
            ("v1", "JobSet"),
            ("jobset.x-k8s.io", "JobSet"),
        ] {
            assert!(
                Catalogue::built_in(api_version, kind).is_none(),
                "{api_version} {kind}"
            );
        }
    }
}
