//! JSON Schema validation of the spanned YAML tree with the `jsonschema` crate, and the strict
//! 1.28 JSON schemas of seven kinds (generated from k8s-openapi types by
//! `cargo run -p xtask -- k8s-schemas`, see `schemas/k8s/README.md`).
//!
//! The strict checker of `render` and `lint` is `crate::k8s` (static tables, nothing compiled
//! at run time); these schemas are its independent oracle in `tests/k8s_differential.rs`, and
//! the tree representation serves any JSON schema that must run on a manifest.
//!
//! The validators read the spanned YAML tree itself (jsonschema's `Json` representation
//! trait), not a serde_json copy of it: a copy of a 14 MB Pod takes 160 MB (every small
//! mapping becomes a B-tree node), more than the tree.

use crate::yaml::{self, Value as Yaml};
use jsonschema::json::{Array, Json as Representation, JsonNumber, Node, NodeIdentity, Object};
use jsonschema::{JsonType, ValidationError, Validator};
use serde_json::Value as Json;
use std::borrow::Cow;
use std::sync::OnceLock;

/// `(apiVersion, kind, schema text)` of every kind we know.
const KINDS: &[(&str, &str, &str)] = &[
    (
        "batch/v1",
        "Job",
        include_str!("../schemas/k8s/v1.28/job.json"),
    ),
    ("v1", "Pod", include_str!("../schemas/k8s/v1.28/pod.json")),
    (
        "v1",
        "Service",
        include_str!("../schemas/k8s/v1.28/service.json"),
    ),
    (
        "v1",
        "ConfigMap",
        include_str!("../schemas/k8s/v1.28/configmap.json"),
    ),
    (
        "v1",
        "Secret",
        include_str!("../schemas/k8s/v1.28/secret.json"),
    ),
    (
        "apps/v1",
        "Deployment",
        include_str!("../schemas/k8s/v1.28/deployment.json"),
    ),
    (
        "apps/v1",
        "StatefulSet",
        include_str!("../schemas/k8s/v1.28/statefulset.json"),
    ),
];

/// One compiled validator per kind, built on first use of that kind.
static VALIDATORS: [OnceLock<Validator<Tree>>; KINDS.len()] =
    [const { OnceLock::new() }; KINDS.len()];

/// The strict validator for an object's `apiVersion` and `kind`, if we know the kind.
pub fn validator_for(api_version: &str, kind: &str) -> Option<&'static Validator<Tree>> {
    let i = KINDS
        .iter()
        .position(|&(v, k, _)| v == api_version && k == kind)?;
    Some(VALIDATORS[i].get_or_init(|| {
        let schema: Json = serde_json::from_str(KINDS[i].2).expect("embedded schemas are JSON");
        jsonschema::options_for::<Tree>()
            .with_draft(jsonschema::Draft::Draft7)
            .build(&schema)
            .expect("embedded schemas compile")
    }))
}

/// The kinds we have schemas for, as `apiVersion/kind`.
pub fn known_kinds() -> impl Iterator<Item = (&'static str, &'static str)> {
    KINDS.iter().map(|&(v, k, _)| (v, k))
}

/// Every schema error of an object, or `None` if its kind is unknown.
pub fn validate(object: &yaml::Node) -> Option<Vec<ValidationError<'_>>> {
    let text = |key: &str| match object.get(key).map(|n| &n.value) {
        Some(Yaml::Str(s)) => Some(s.as_str()),
        _ => None,
    };
    let validator = validator_for(text("apiVersion")?, text("kind")?)?;
    Some(validator.iter_errors(object).collect())
}

/// The YAML tree as jsonschema's instance representation. It reads as [`yaml::Node::to_json`]
/// does: keys that are not strings as their JSON text, non-finite floats as strings.
pub struct Tree;

/// Scratch space for a property name read as a node (`propertyNames`).
#[derive(Default)]
pub struct NameBuffer(Option<yaml::Node>);

impl Representation for Tree {
    type Node<'a> = &'a yaml::Node;
    type PreparedKey = String;
    type StringBuffer = NameBuffer;
    // Trees are built from an event stream: an alias is a copy, never a cycle.
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> String {
        key.to_owned()
    }

    fn with_string_node<T>(
        buffer: &mut NameBuffer,
        string: &str,
        f: impl FnOnce(&yaml::Node) -> T,
    ) -> T {
        let node = buffer.0.insert(yaml::Node {
            value: Yaml::Str(string.to_owned()),
            span: 0..0,
        });
        f(node)
    }
}

/// A YAML number: integers stay integers, as in [`yaml::Node::to_json`].
pub enum Number {
    Int(i64),
    Float(f64),
}

impl JsonNumber for Number {
    fn as_u64(&self) -> Option<u64> {
        match *self {
            Number::Int(i) => u64::try_from(i).ok(),
            Number::Float(_) => None,
        }
    }
    fn as_i64(&self) -> Option<i64> {
        match *self {
            Number::Int(i) => Some(i),
            Number::Float(_) => None,
        }
    }
    fn as_f64(&self) -> Option<f64> {
        Some(match *self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        })
    }
    fn as_str(&self) -> Cow<'_, str> {
        Cow::Owned(self.to_number().to_string())
    }
    fn to_number(&self) -> Cow<'_, serde_json::Number> {
        Cow::Owned(match *self {
            Number::Int(i) => i.into(),
            // Only finite floats are numbers (see `as_number`).
            Number::Float(f) => serde_json::Number::from_f64(f).unwrap_or_else(|| 0.into()),
        })
    }
}

/// A mapping's entries, as an object.
#[derive(Clone, Copy)]
pub struct Members<'a>(&'a [(yaml::Node, yaml::Node)]);

/// A sequence's items, as an array.
#[derive(Clone, Copy)]
pub struct Items<'a>(&'a [yaml::Node]);

fn key_name(key: &yaml::Node) -> Cow<'_, str> {
    match &key.value {
        Yaml::Str(s) => Cow::Borrowed(s),
        _ => yaml::key_text(key),
    }
}

impl<'a> Node<'a, Tree> for &'a yaml::Node {
    type Object = Members<'a>;
    type Array = Items<'a>;
    type Number = Number;

    fn as_object(&self) -> Option<Members<'a>> {
        match &self.value {
            Yaml::Map(entries) => Some(Members(entries)),
            _ => None,
        }
    }
    fn as_array(&self) -> Option<Items<'a>> {
        match &self.value {
            Yaml::Seq(items) => Some(Items(items)),
            _ => None,
        }
    }
    fn as_string(&self) -> Option<Cow<'a, str>> {
        match &self.value {
            Yaml::Str(s) => Some(Cow::Borrowed(s)),
            Yaml::Float(f) if !f.is_finite() => Some(Cow::Owned(f.to_string())),
            _ => None,
        }
    }
    fn as_number(&self) -> Option<Number> {
        match self.value {
            Yaml::Int(i) => Some(Number::Int(i)),
            Yaml::Float(f) if f.is_finite() => Some(Number::Float(f)),
            _ => None,
        }
    }
    fn as_boolean(&self) -> Option<bool> {
        match self.value {
            Yaml::Bool(b) => Some(b),
            _ => None,
        }
    }
    fn is_null(&self) -> bool {
        matches!(self.value, Yaml::Null)
    }
    fn json_type(&self) -> JsonType {
        match &self.value {
            Yaml::Null => JsonType::Null,
            Yaml::Bool(_) => JsonType::Boolean,
            Yaml::Int(_) => JsonType::Number,
            Yaml::Float(f) if f.is_finite() => JsonType::Number,
            Yaml::Float(_) | Yaml::Str(_) => JsonType::String,
            Yaml::Seq(_) => JsonType::Array,
            Yaml::Map(_) => JsonType::Object,
        }
    }
    fn to_value(&self) -> Cow<'a, Json> {
        Cow::Owned(yaml::Node::to_json(self))
    }
    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::new(
            std::ptr::from_ref::<yaml::Node>(self) as usize
        ))
    }
}

impl<'a> Object<'a, Tree> for Members<'a> {
    type Node = &'a yaml::Node;
    type MemberName = Cow<'a, str>;
    type MembersIter = Box<dyn Iterator<Item = (Cow<'a, str>, &'a yaml::Node)> + 'a>;

    fn len(&self) -> usize {
        self.0.len()
    }
    fn get(&self, key: &String) -> Option<&'a yaml::Node> {
        self.0
            .iter()
            .find(|(k, _)| key_name(k) == key.as_str())
            .map(|(_, v)| v)
    }
    fn members(&self) -> Self::MembersIter {
        Box::new(self.0.iter().map(|(k, v)| (key_name(k), v)))
    }
}

impl<'a> Array<'a, Tree> for Items<'a> {
    type Node = &'a yaml::Node;
    type ElementsIter = std::slice::Iter<'a, yaml::Node>;

    fn len(&self) -> usize {
        self.0.len()
    }
    fn elements(&self) -> Self::ElementsIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::source::Source;

    fn tree(text: &str) -> yaml::Node {
        let source = Source::new("t", text);
        yaml::parse(&source, yaml::Limits::default())
            .unwrap()
            .documents
            .remove(0)
    }

    #[test]
    fn every_embedded_schema_compiles_and_is_strict() {
        for (v, k) in known_kinds() {
            let object = tree(&format!(
                "{{apiVersion: {v}, kind: {k}, metadata: {{name: x}}, bogus: 1}}"
            ));
            let errors = validate(&object).unwrap();
            assert!(
                errors.iter().any(|e| e.to_string().contains("bogus")),
                "{k}: {errors:?}"
            );
        }
        assert!(validate(&tree("{apiVersion: v1, kind: Nope}")).is_none());
    }

    /// The tree reads as its JSON copy does: same errors, at the same paths.
    #[test]
    fn the_tree_validates_as_its_json_copy() {
        let object = tree(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x, labels: {a: 1, 2: b}}\n\
             spec:\n  containers:\n  - {name: c, image: i, ports: [{containerPort: 80.5}],\n\
             \x20   env: [{name: A, value: .inf}, {name: B}, {value: x}], tty: yes}\n  \
             restartPolicy: 7\n  priority: 1.0\n  activeDeadlineSeconds: -1\n",
        );
        let schema: Json = serde_json::from_str(KINDS[1].2).unwrap();
        let copy = jsonschema::draft7::new(&schema).unwrap();
        let json = object.to_json();
        let errors = |found: Vec<ValidationError>| {
            let mut found: Vec<String> = found
                .iter()
                .map(|e| format!("{} {}", e.instance_path(), e.masked()))
                .collect();
            found.sort();
            found
        };
        let want = errors(copy.iter_errors(&json).collect());
        assert!(want.len() >= 5, "{want:#?}");
        assert_eq!(errors(validate(&object).unwrap()), want);
    }
}
