//! Custom resources, checked against the `openAPIV3Schema` of their CustomResourceDefinitions
//! (`tao-k8s lint --crd PATH`), as the API server's strict field validation checks them.
//!
//! A CRD's schema is a structural OpenAPI v3 schema, not a JSON Schema: `nullable`,
//! `x-kubernetes-int-or-string`, `x-kubernetes-embedded-resource` and
//! `x-kubernetes-preserve-unknown-fields` change what it admits, and a field the schema does not
//! declare is pruned by the API server (refused under `--validate=strict`). Each schema is turned
//! into the JSON Schema (draft 4, whose `exclusiveMinimum` is OpenAPI 3.0's) that admits the same
//! objects and refuses unknown fields, and compiled the first time an object of its kind is met.
//! CEL rules (`x-kubernetes-validations`) and list types are not checked.
//!
//! A `pattern` is a regular expression of Go's `regexp` (RE2), as the API server reads it, not
//! ECMAScript's: it is matched by the `regex` crate (RE2's syntax and linear time), and one that
//! does not compile makes its CRD unreadable, once, at its place in the CRD.

use crate::kube::{Document, Finding};
use crate::schema::Tree;
use crate::source::Source;
use crate::yaml::{self, Node, Step, Value};
use jsonschema::Validator;
use serde_json::{Map, Value as Json, json};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

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
    /// The strict JSON Schema; `None` when the version declares no schema. Versions of one
    /// CRD with the same schema share it, and its validator.
    schema: Option<Arc<Json>>,
    /// Compiled on first use; `Err` holds why the schema does not compile.
    validator: Arc<OnceLock<Result<Validator<Tree>, String>>>,
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
            let stream = yaml::parse(source, yaml::Limits::default()).map_err(|e| {
                let (line, col) = source.line_col(e.span.start);
                format!(
                    "{}:{line}:{col}: not valid YAML: {}",
                    source.name(),
                    e.message
                )
            })?;
            for mut document in stream.documents {
                catalogue
                    .add(&mut document)
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

    /// Add the kinds a CRD defines; `document` is taken apart (its schemas become JSON).
    fn add(&mut self, document: &mut Node) -> Result<(), (crate::source::Span, String)> {
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
        let spec = document.get_mut("spec").ok_or_else(|| missing("spec"))?;
        let group = text(spec, "group").ok_or_else(|| missing("spec.group"))?;
        let kind = spec
            .get("names")
            .and_then(|n| text(n, "kind"))
            .ok_or_else(|| missing("spec.names.kind"))?;
        let Some(Value::Seq(versions)) = spec.get_mut("versions").map(|v| &mut v.value) else {
            return Err(missing("spec.versions"));
        };
        for version in versions {
            let v = text(version, "name").ok_or_else(|| {
                (
                    version.span.clone(),
                    format!("a version of CustomResourceDefinition `{name}` has no `name`"),
                )
            })?;
            let node = version
                .get_mut("schema")
                .and_then(|s| s.get_mut("openAPIV3Schema"));
            if let Some(node) = &node {
                patterns(node, &mut format!("openAPIV3Schema of {v}")).map_err(|(span, why)| {
                    (span, format!("CustomResourceDefinition `{name}`: {why}"))
                })?;
            }
            let schema = node.map(|s| {
                let taken = Node {
                    value: Value::Null,
                    span: s.span.clone(),
                };
                Arc::new(strict(std::mem::replace(s, taken).into_json()))
            });
            // The versions of a CRD mostly repeat one schema: kept (and compiled) once.
            let (schema, validator) = match self.kinds.last() {
                Some(last) if last.crd == name && last.schema == schema => {
                    (last.schema.clone(), last.validator.clone())
                }
                _ => (schema, Arc::default()),
            };
            let api_version = format!("{group}/{v}");
            let key = (api_version, kind.clone());
            if let Some(same) = self.index.get(&key).map(|&i| &self.kinds[i]) {
                if same.schema != schema {
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
                validator,
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
        let validator = kind.validator.get_or_init(|| {
            jsonschema::options_for::<Tree>()
                .with_draft(jsonschema::Draft::Draft4)
                .with_keyword(PATTERN, pattern_keyword)
                .build(schema)
                .map_err(|e| e.to_string())
        });
        let validator = match validator {
            Ok(v) => v,
            Err(why) => {
                return Answer::Checked(vec![Finding {
                    message: format!(
                        "the schema of CustomResourceDefinition `{}` for {} is not valid, so {} \
                         cannot be checked: {why}",
                        kind.crd,
                        kind.api_version,
                        doc.label()
                    ),
                    help: None,
                    path: Vec::new(),
                    span: doc.root.span.clone(),
                }]);
            }
        };
        Answer::Checked(
            validator
                .iter_errors(doc.root)
                .map(|e| schema_finding(doc, &e))
                .collect(),
        )
    }
}

/// Every `pattern` of a schema compiles as RE2 does; `Err` is the first that does not, at its
/// place. `path` names the node (`openAPIV3Schema of v1.properties.spec`...). Values that are
/// data, not schemas (`enum`, `default`, `example`, CEL rules), are not looked into.
fn patterns(node: &Node, path: &mut String) -> Result<(), (crate::source::Span, String)> {
    match &node.value {
        Value::Map(entries) => {
            for (key, value) in entries {
                let Value::Str(key) = &key.value else {
                    continue;
                };
                if matches!(
                    key.as_str(),
                    "enum" | "default" | "example" | "x-kubernetes-validations"
                ) {
                    continue;
                }
                let len = path.len();
                path.push('.');
                path.push_str(key);
                if key == "pattern"
                    && let Value::Str(pattern) = &value.value
                    && let Err(e) = compile_pattern(pattern)
                {
                    return Err((
                        value.span.clone(),
                        format!(
                            "{path} `{pattern}` is not a regular expression the API server \
                             reads (Go's RE2 syntax): {e}"
                        ),
                    ));
                }
                patterns(value, path)?;
                path.truncate(len);
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                patterns(item, path)?;
                path.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

/// A CRD's `pattern` as Go's `regexp.Compile` reads it: RE2 syntax, unanchored, matched in
/// linear time. The error is the last line of the `regex` crate's (what is wrong).
fn compile_pattern(pattern: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(pattern).map_err(|e| {
        let text = e.to_string();
        let last = text.lines().rev().find(|l| !l.trim().is_empty());
        let last = last.unwrap_or("not a regular expression").trim();
        last.strip_prefix("error: ").unwrap_or(last).to_string()
    })
}

/// `pattern`, matched by [`compile_pattern`]'s regex in place of jsonschema's ECMAScript
/// engine (which backtracks, and reads `(?i)` or `\z` as errors).
struct Pattern {
    regex: regex::Regex,
    text: String,
}

impl<'i, F: jsonschema::json::Json> jsonschema::Keyword<'i, F> for Pattern {
    fn validate(&self, instance: F::Node<'i>) -> Result<(), jsonschema::ValidationError<'i>> {
        if jsonschema::Keyword::<F>::is_valid(self, instance) {
            Ok(())
        } else {
            Err(jsonschema::ValidationError::custom(format!(
                "value does not match \"{}\"",
                self.text
            )))
        }
    }

    fn is_valid(&self, instance: F::Node<'i>) -> bool {
        use jsonschema::json::Node as _;
        instance
            .as_string()
            .is_none_or(|text| self.regex.is_match(&text))
    }
}

type KeywordResult<'a, F> =
    Result<Box<dyn for<'i> jsonschema::Keyword<'i, F>>, jsonschema::ValidationError<'a>>;

fn pattern_keyword<'a, F: jsonschema::json::Json + 'static>(
    _parent: &'a Map<String, Json>,
    value: &'a Json,
    _location: jsonschema::paths::Location,
) -> KeywordResult<'a, F> {
    let Json::String(text) = value else {
        return Err(jsonschema::ValidationError::custom(
            "`pattern` is not a string",
        ));
    };
    let regex = compile_pattern(text).map_err(jsonschema::ValidationError::custom)?;
    Ok(Box::new(Pattern {
        regex,
        text: text.clone(),
    }))
}

fn at(source: &Source, offset: usize, why: &str) -> String {
    let (line, col) = source.line_col(offset);
    format!("{}:{line}:{col}: {why}", source.name())
}

/// A schema error as a finding at the node it is about (the unknown key itself, for an
/// unknown field).
fn schema_finding(doc: &Document, e: &jsonschema::ValidationError) -> Finding {
    let mut path: Vec<Step> = e
        .instance_path()
        .iter()
        .map(|s| match s {
            jsonschema::paths::LocationSegment::Property(p) => Step::Key(p.to_string()),
            jsonschema::paths::LocationSegment::Index(i) => Step::Index(i),
        })
        .collect();
    let (depth, key, mut node) = doc.root.deepest(&path);
    path.truncate(depth);
    if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } = e.kind()
        && let Some((k, _)) = unexpected.first().and_then(|u| node.entry(u))
    {
        path.push(Step::Key(unexpected[0].clone()));
        node = k;
    } else if let Some(k) = key.filter(|_| matches!(node.value, Value::Map(_) | Value::Seq(_))) {
        node = k;
    }
    Finding {
        message: format!(
            "{} is not a valid {}: {}",
            doc.label(),
            doc.kind,
            e.masked()
        ),
        help: None,
        path,
        span: node.span.clone(),
    }
}

/// The JSON Schema that admits what a CRD's structural schema admits and refuses the fields it
/// does not declare. The root also has `apiVersion`, `kind` and `metadata`, which a CRD's schema
/// may leave out; `metadata` is checked by the API server as any object's, not here.
pub fn strict(mut schema: Json) -> Json {
    if let Json::Object(root) = &mut schema {
        let properties = root
            .entry("properties")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let Some(properties) = properties {
            properties
                .entry("apiVersion")
                .or_insert_with(|| json!({"type": "string"}));
            properties
                .entry("kind")
                .or_insert_with(|| json!({"type": "string"}));
            let metadata = properties
                .entry("metadata")
                .or_insert_with(|| json!({"type": "object"}));
            if let Json::Object(m) = metadata {
                m.entry("x-kubernetes-preserve-unknown-fields")
                    .or_insert(Json::Bool(true));
            }
        }
    }
    structural(&mut schema);
    schema
}

/// One schema in a structural position (the root, a property, `items`, `additionalProperties`),
/// and every schema below it.
fn structural(schema: &mut Json) {
    let Json::Object(map) = schema else {
        return;
    };
    openapi_to_json_schema(map);
    let flag = |map: &Map<String, Json>, key: &str| map.get(key) == Some(&Json::Bool(true));
    if flag(map, "x-kubernetes-embedded-resource")
        && let Some(Json::Object(properties)) = map.get_mut("properties")
    {
        for (key, kind) in [
            ("apiVersion", "string"),
            ("kind", "string"),
            ("metadata", "object"),
        ] {
            properties
                .entry(key)
                .or_insert_with(|| json!({"type": kind}));
        }
    }
    let object = map.get("type") == Some(&json!("object")) || map.contains_key("properties");
    if object
        && !flag(map, "x-kubernetes-preserve-unknown-fields")
        && !map.contains_key("additionalProperties")
    {
        map.insert("additionalProperties".into(), Json::Bool(false));
    }
    if let Some(Json::Object(properties)) = map.get_mut("properties") {
        properties.values_mut().for_each(structural);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = map.get_mut(key) {
            structural(child);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Json::Array(branches)) = map.get_mut(key) {
            branches.iter_mut().for_each(value_validation);
        }
    }
    if let Some(not) = map.get_mut("not") {
        value_validation(not);
    }
}

/// A schema under `allOf`, `anyOf`, `oneOf` or `not`: it validates values and declares no
/// fields, so it is not made strict.
fn value_validation(schema: &mut Json) {
    let Json::Object(map) = schema else {
        return;
    };
    openapi_to_json_schema(map);
    for key in ["properties", "patternProperties"] {
        if let Some(Json::Object(children)) = map.get_mut(key) {
            children.values_mut().for_each(value_validation);
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child) = map.get_mut(key) {
            value_validation(child);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Json::Array(branches)) = map.get_mut(key) {
            branches.iter_mut().for_each(value_validation);
        }
    }
}

/// The keyword a CRD's `pattern` becomes in the strict schema: matched by [`Pattern`], with
/// RE2's syntax (JSON Schema's `pattern` is ECMAScript's, and its meta-schema refuses `(?i)`).
const PATTERN: &str = "x-tao-k8s-re2-pattern";

/// OpenAPI's `nullable` and Kubernetes' int-or-string, in JSON Schema's words, and `pattern`
/// as [`PATTERN`].
fn openapi_to_json_schema(map: &mut Map<String, Json>) {
    if let Some(pattern) = map.remove("pattern") {
        map.insert(PATTERN.into(), pattern);
    }
    if map.remove("nullable") == Some(Json::Bool(true)) {
        if let Some(Json::String(t)) = map.get("type") {
            let t = t.clone();
            map.insert("type".into(), json!([t, "null"]));
        }
        if let Some(Json::Array(values)) = map.get_mut("enum") {
            values.push(Json::Null);
        }
    }
    if map.get("x-kubernetes-int-or-string") == Some(&Json::Bool(true)) {
        map.remove("type");
        if !map.contains_key("anyOf") && !map.contains_key("oneOf") {
            map.insert(
                "anyOf".into(),
                json!([{"type": "integer"}, {"type": "string"}]),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_refuses_undeclared_fields_and_keeps_the_openapi_meaning() {
        let schema = strict(json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "note": {"type": "string", "nullable": true},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                    },
                    "anyOf": [{"required": ["port"]}, {"required": ["note"]}],
                },
            },
        }));
        let v = jsonschema::draft4::new(&schema).unwrap();
        let ok = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a", "anything": 1},
            "spec": {"port": "http", "note": null, "free": {"a": 1}, "tags": {"a": "b"}}});
        assert!(
            v.is_valid(&ok),
            "{:?}",
            v.iter_errors(&ok).collect::<Vec<_>>()
        );
        for bad in [
            json!({"spec": {"port": 1, "nope": 1}}),
            json!({"spec": {"port": 1.5}}),
            json!({"spec": {"port": 1, "tags": {"a": 1}}}),
            json!({"spec": {}}),
            json!({"status": {}}),
        ] {
            assert!(!v.is_valid(&bad), "{bad}");
        }
    }
}
