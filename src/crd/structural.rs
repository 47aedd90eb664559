//! A CustomResourceDefinition's structural schema: read from the CRD once, checked as the API
//! server checks a CRD's `openAPIV3Schema` (structural rules, forbidden keywords, list types,
//! defaults that match their schema), then used to validate custom resources as the API server
//! does on create: nulls of non-nullable fields pruned, defaults applied to list-map keys,
//! undeclared fields refused as strict field validation refuses them, then every value
//! validation of the schema (kube-openapi's keywords), with the API server's messages.
//!
//! CEL rules (`x-kubernetes-validations`) are not evaluated; `format`s other than the few
//! below are not checked (the API server checks more).

use super::rules::{Rule, Verdict};
use crate::source::Span;
use crate::yaml::{Node, Step, Value, display_path};
use serde_json::Value as Json;

/// A schema node, kept small: a CRD of a quarter of a million properties holds one per
/// property. What few nodes use is boxed in [`Extra`].
#[derive(Default)]
pub struct Schema {
    /// Allowed types ([`types`] bits); 0 admits any.
    types: u8,
    flags: u8,
    /// Sorted by name.
    properties: Box<[(Box<str>, Schema)]>,
    additional: Additional,
    items: Option<Box<Schema>>,
    extra: Option<Box<Extra>>,
}

#[derive(Default)]
enum Additional {
    /// Not given: undeclared fields are pruned (refused under strict validation).
    #[default]
    Unset,
    /// `additionalProperties: true`: any value.
    Any,
    Schema(Box<Schema>),
}

#[derive(Default)]
struct Extra {
    required: Vec<Box<str>>,
    enumeration: Vec<Json>,
    pattern: Option<(Box<str>, regex::Regex)>,
    minimum: Option<(f64, bool)>,
    maximum: Option<(f64, bool)>,
    multiple_of: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    format: Option<Box<str>>,
    list: List,
    default: Option<Json>,
    all_of: Vec<Schema>,
    any_of: Vec<Schema>,
    one_of: Vec<Schema>,
    not: Option<Box<Schema>>,
    /// `x-kubernetes-validations`.
    rules: Vec<Rule>,
}

impl Extra {
    fn is_empty(&self) -> bool {
        self.required.is_empty()
            && self.enumeration.is_empty()
            && self.pattern.is_none()
            && self.minimum.is_none()
            && self.maximum.is_none()
            && self.multiple_of.is_none()
            && self.min_length.is_none()
            && self.max_length.is_none()
            && self.min_items.is_none()
            && self.max_items.is_none()
            && self.min_properties.is_none()
            && self.max_properties.is_none()
            && self.format.is_none()
            && self.list == List::Atomic
            && self.default.is_none()
            && self.all_of.is_empty()
            && self.any_of.is_empty()
            && self.one_of.is_empty()
            && self.not.is_none()
            && self.rules.is_empty()
    }
}

#[derive(Default, PartialEq)]
enum List {
    #[default]
    Atomic,
    Set,
    Map(Vec<Box<str>>),
}

mod types {
    pub const OBJECT: u8 = 1;
    pub const ARRAY: u8 = 2;
    pub const STRING: u8 = 4;
    pub const INTEGER: u8 = 8;
    pub const NUMBER: u8 = 16;
    pub const BOOLEAN: u8 = 32;
    pub const NAMES: [(&str, u8); 6] = [
        ("array", ARRAY),
        ("boolean", BOOLEAN),
        ("integer", INTEGER),
        ("number", NUMBER),
        ("object", OBJECT),
        ("string", STRING),
    ];
}

const PRESERVE: u8 = 1;
const EMBEDDED: u8 = 2;
const NULLABLE: u8 = 4;
const INT_OR_STRING: u8 = 8;

/// Where a schema node stands: its place decides what the structural rules ask of it.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    Root,
    /// A property or `additionalProperties`: declares fields and needs a type.
    Field,
    /// `items`.
    Items,
    /// Under `allOf`, `anyOf`, `oneOf` or `not`: validates values, declares nothing.
    Value,
}

/// One thing wrong with a CRD's schema, at its place in the CRD and by the API server's path
/// (`spec.versions[0].schema.openAPIV3Schema.properties[spec].type`).
pub struct Flaw {
    pub span: Span,
    pub message: String,
    /// Where in the schema, from its root (`properties`, `spec`, `type`).
    pub path: Vec<Step>,
}

impl Schema {
    /// Read a version's `openAPIV3Schema`; `at` is its API-server path. `Err` holds every flaw
    /// that makes the API server refuse the CRD.
    pub fn read(node: &Node, at: &str) -> Result<Schema, Vec<Flaw>> {
        let mut reader = Reader {
            path: at.to_string(),
            root: at.len(),
            flaws: Vec::new(),
        };
        let schema = reader.schema(node, Place::Root);
        if reader.flaws.is_empty() {
            Ok(schema)
        } else {
            Err(reader.flaws)
        }
    }

    fn flag(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    fn property(&self, name: &str) -> Option<&Schema> {
        self.properties
            .binary_search_by(|(k, _)| (**k).cmp(name))
            .ok()
            .map(|i| &self.properties[i].1)
    }

    fn default_value(&self) -> Option<&Json> {
        self.extra.as_ref().and_then(|e| e.default.as_ref())
    }

    /// Whether fields this object node does not declare are refused.
    fn closed(&self) -> bool {
        let object = self.types & types::OBJECT != 0 || !self.properties.is_empty();
        object && !self.flag(PRESERVE) && matches!(self.additional, Additional::Unset)
    }
}

struct Reader {
    /// The API server's path of the node being read.
    path: String,
    /// How much of `path` names the schema's root.
    root: usize,
    flaws: Vec<Flaw>,
}

impl Reader {
    fn flaw(&mut self, node: &Node, key: &str, message: impl std::fmt::Display) {
        let at = if key.is_empty() {
            self.path.clone()
        } else {
            format!("{}.{key}", self.path)
        };
        self.flaws.push(Flaw {
            span: node.span.clone(),
            path: steps(&at[self.root..]),
            message: format!("{at}: {message}"),
        });
    }

    /// Descend into `step` for `f`.
    fn under<T>(&mut self, step: &str, f: impl FnOnce(&mut Self) -> T) -> T {
        let len = self.path.len();
        self.path.push_str(step);
        let out = f(self);
        self.path.truncate(len);
        out
    }

    fn schema(&mut self, node: &Node, place: Place) -> Schema {
        let Value::Map(entries) = &node.value else {
            self.flaw(node, "", "Invalid value: must be a schema (a mapping)");
            return Schema::default();
        };
        let mut schema = Schema::default();
        let mut extra = Extra::default();
        let mut type_node = None;
        for (key, value) in entries {
            let Value::Str(key) = &key.value else {
                continue;
            };
            match key.as_str() {
                "type" => type_node = Some(value),
                "nullable" => schema.flags |= NULLABLE * u8::from(truth(value)),
                "x-kubernetes-preserve-unknown-fields" => match value.value {
                    Value::Bool(true) => schema.flags |= PRESERVE,
                    _ => self.flaw(value, key, "Invalid value: must be true or undefined"),
                },
                "x-kubernetes-embedded-resource" => {
                    schema.flags |= EMBEDDED * u8::from(truth(value));
                }
                "x-kubernetes-int-or-string" => {
                    schema.flags |= INT_OR_STRING * u8::from(truth(value));
                }
                "properties" => {
                    let Value::Map(props) = &value.value else {
                        self.flaw(value, key, "Invalid value: must be a mapping");
                        continue;
                    };
                    let mut properties = Vec::with_capacity(props.len());
                    for (name, child) in props {
                        let name = crate::yaml::key_text(name);
                        let child = self.under(&format!(".properties[{name}]"), |r| {
                            r.schema(
                                child,
                                if place == Place::Value {
                                    Place::Value
                                } else {
                                    Place::Field
                                },
                            )
                        });
                        properties.push((name.into_owned().into_boxed_str(), child));
                    }
                    properties.sort_by(|a, b| a.0.cmp(&b.0));
                    schema.properties = properties.into_boxed_slice();
                }
                "additionalProperties" => match &value.value {
                    Value::Bool(true) => schema.additional = Additional::Any,
                    Value::Bool(false) => self.flaw(
                        value,
                        key,
                        "Forbidden: additionalProperties cannot be set to false",
                    ),
                    _ => {
                        let child = self.under(".additionalProperties", |r| {
                            r.schema(
                                value,
                                if place == Place::Value {
                                    Place::Value
                                } else {
                                    Place::Field
                                },
                            )
                        });
                        schema.additional = Additional::Schema(Box::new(child));
                    }
                },
                "items" => {
                    if let Value::Seq(_) = value.value {
                        self.flaw(
                            value,
                            key,
                            "Forbidden: items must be a schema object and not an array",
                        );
                        continue;
                    }
                    let child = self.under(".items", |r| {
                        r.schema(
                            value,
                            if place == Place::Value {
                                Place::Value
                            } else {
                                Place::Items
                            },
                        )
                    });
                    schema.items = Some(Box::new(child));
                }
                "allOf" | "anyOf" | "oneOf" => {
                    let Value::Seq(branches) = &value.value else {
                        self.flaw(value, key, "Invalid value: must be a list of schemas");
                        continue;
                    };
                    let read: Vec<Schema> = branches
                        .iter()
                        .enumerate()
                        .map(|(i, b)| {
                            self.under(&format!(".{key}[{i}]"), |r| r.schema(b, Place::Value))
                        })
                        .collect();
                    match key.as_str() {
                        "allOf" => extra.all_of = read,
                        "anyOf" => extra.any_of = read,
                        _ => extra.one_of = read,
                    }
                }
                "not" => {
                    let child = self.under(".not", |r| r.schema(value, Place::Value));
                    extra.not = Some(Box::new(child));
                }
                "required" => match &value.value {
                    Value::Seq(names) => {
                        extra.required = names
                            .iter()
                            .map(|n| crate::yaml::key_text(n).into_owned().into_boxed_str())
                            .collect();
                    }
                    _ => self.flaw(value, key, "Invalid value: must be a list of field names"),
                },
                "enum" => match &value.value {
                    Value::Seq(values) => {
                        extra.enumeration = values.iter().map(Node::to_json).collect()
                    }
                    _ => self.flaw(value, key, "Invalid value: must be a list"),
                },
                "pattern" => match &value.value {
                    Value::Str(text) => match compile_pattern(text) {
                        Ok(regex) => extra.pattern = Some((text.as_str().into(), regex)),
                        Err(e) => self.flaw(
                            value,
                            key,
                            format!(
                                "Invalid value: `{text}` is not a regular expression the API \
                                 server reads (Go's RE2 syntax): {e}"
                            ),
                        ),
                    },
                    _ => self.flaw(value, key, "Invalid value: must be a string"),
                },
                "format" => {
                    if let Value::Str(text) = &value.value {
                        extra.format = Some(text.as_str().into());
                    }
                }
                "minimum" | "maximum" | "multipleOf" => {
                    let Some(number) = number(value) else {
                        self.flaw(value, key, "Invalid value: must be a number");
                        continue;
                    };
                    match key.as_str() {
                        "minimum" => {
                            extra.minimum = Some((number, extra.minimum.is_some_and(|m| m.1)))
                        }
                        "maximum" => {
                            extra.maximum = Some((number, extra.maximum.is_some_and(|m| m.1)))
                        }
                        _ if number <= 0.0 => {
                            self.flaw(value, key, "Invalid value: must be greater than zero");
                        }
                        _ => extra.multiple_of = Some(number),
                    }
                }
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    let on = truth(value);
                    let bound = if key == "exclusiveMinimum" {
                        &mut extra.minimum
                    } else {
                        &mut extra.maximum
                    };
                    match bound {
                        Some(b) => b.1 = on,
                        None => *bound = Some((f64::NAN, on)),
                    }
                }
                "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
                | "maxProperties" => {
                    let Value::Int(n @ 0..) = value.value else {
                        self.flaw(value, key, "Invalid value: must be a non-negative integer");
                        continue;
                    };
                    let n = Some(n as u64);
                    match key.as_str() {
                        "minLength" => extra.min_length = n,
                        "maxLength" => extra.max_length = n,
                        "minItems" => extra.min_items = n,
                        "maxItems" => extra.max_items = n,
                        "minProperties" => extra.min_properties = n,
                        _ => extra.max_properties = n,
                    }
                }
                "uniqueItems" if truth(value) => self.flaw(
                    value,
                    key,
                    "Forbidden: uniqueItems cannot be set to true since the runtime complexity \
                     becomes quadratic",
                ),
                "$ref" | "definitions" | "dependencies" | "additionalItems"
                | "patternProperties" | "id" | "$schema" => {
                    self.flaw(value, key, format!("Forbidden: {key} is not supported"));
                }
                "x-kubernetes-list-type" => match &value.value {
                    Value::Str(t) if t == "atomic" => extra.list = List::Atomic,
                    Value::Str(t) if t == "set" => extra.list = List::Set,
                    Value::Str(t) if t == "map" => {
                        if extra.list == List::Atomic || extra.list == List::Set {
                            extra.list = List::Map(Vec::new());
                        }
                    }
                    _ => self.flaw(
                        value,
                        key,
                        format!(
                            "Unsupported value: {}: supported values: \"atomic\", \"map\", \"set\"",
                            value.to_json()
                        ),
                    ),
                },
                "x-kubernetes-list-map-keys" => {
                    let keys = match &value.value {
                        Value::Seq(keys) => keys
                            .iter()
                            .map(|k| crate::yaml::key_text(k).into_owned().into_boxed_str())
                            .collect(),
                        _ => Vec::new(),
                    };
                    extra.list = List::Map(keys);
                }
                "default" => extra.default = Some(value.to_json()),
                "x-kubernetes-validations" => {
                    let Value::Seq(entries) = &value.value else {
                        self.flaw(value, key, "Invalid value: must be a list of rules");
                        continue;
                    };
                    for (i, entry) in entries.iter().enumerate() {
                        match Rule::read(entry) {
                            Ok(rule) => extra.rules.push(rule),
                            Err((field, message)) => self.flaw(
                                entry.get(field).unwrap_or(entry),
                                &format!("{key}[{i}].{field}"),
                                message,
                            ),
                        }
                    }
                }
                _ => {}
            }
        }
        // `x-kubernetes-list-map-keys` alone, or before `x-kubernetes-list-type`.
        let list_type = entries.iter().find_map(|(k, v)| {
            matches!(&k.value, Value::Str(s) if s == "x-kubernetes-list-type").then_some(v)
        });
        let list_keys = entries.iter().find_map(|(k, v)| {
            matches!(&k.value, Value::Str(s) if s == "x-kubernetes-list-map-keys").then_some(v)
        });
        let is_map = matches!(list_type.map(|t| &t.value), Some(Value::Str(t)) if t == "map");
        if let (Some(keys), false) = (list_keys, is_map) {
            extra.list = List::Atomic;
            self.flaw(
                list_type.unwrap_or(keys),
                "x-kubernetes-list-type",
                "Invalid value: must be map if x-kubernetes-list-map-keys is non-empty",
            );
        }
        self.types(&mut schema, type_node, node, place);
        self.lists(&mut extra, &schema, node);
        if place != Place::Value {
            self.structural(&schema, node, entries, place);
        }
        if extra.minimum.is_some_and(|m| m.0.is_nan()) {
            extra.minimum = None;
        }
        if extra.maximum.is_some_and(|m| m.0.is_nan()) {
            extra.maximum = None;
        }
        if !extra.is_empty() {
            schema.extra = Some(Box::new(extra));
        }
        // A default must be what its schema admits, with no field the API server would prune.
        if place != Place::Value
            && let Some(default) = node.get("default")
        {
            let mut check = Check::default();
            check.node(&schema, default, true);
            for e in check.errors {
                let at = display_path(&e.path);
                let key = if at.is_empty() {
                    "default".to_string()
                } else {
                    format!("default.{at}")
                };
                let what = if e.what == UNKNOWN {
                    "Forbidden: must not have unknown fields"
                } else {
                    &e.what
                };
                self.flaw(default, &key, what);
            }
        }
        schema
    }

    fn types(&mut self, schema: &mut Schema, type_node: Option<&Node>, node: &Node, place: Place) {
        if schema.flag(INT_OR_STRING) {
            schema.types = types::INTEGER | types::STRING;
        }
        match type_node.map(|t| &t.value) {
            Some(Value::Str(t)) => match types::NAMES.iter().find(|(name, _)| name == t) {
                Some(&(_, bits)) => {
                    if schema.flag(INT_OR_STRING) {
                        self.flaw(
                            type_node.unwrap(),
                            "type",
                            "Invalid value: must be empty if x-kubernetes-int-or-string is true",
                        );
                    }
                    schema.types = bits;
                }
                None => self.flaw(
                    type_node.unwrap(),
                    "type",
                    format!(
                        "Unsupported value: {}: supported values: \"array\", \"boolean\", \
                         \"integer\", \"number\", \"object\", \"string\"",
                        serde_json::Value::from(t.as_str())
                    ),
                ),
            },
            Some(_) => self.flaw(
                type_node.unwrap(),
                "type",
                "Invalid value: must be a string",
            ),
            None => {}
        }
        if place == Place::Root && schema.types != types::OBJECT {
            let found = type_node.map_or(Json::from(""), Node::to_json);
            self.flaw(
                type_node.unwrap_or(node),
                "type",
                format!("Invalid value: {found}: must be object at the root"),
            );
        }
    }

    /// `x-kubernetes-list-type` and its map keys.
    fn lists(&mut self, extra: &mut Extra, schema: &Schema, node: &Node) {
        if extra.list == List::Atomic {
            return;
        }
        let at = node
            .get("x-kubernetes-list-type")
            .or_else(|| node.get("x-kubernetes-list-map-keys"))
            .unwrap_or(node);
        if schema.types != types::ARRAY {
            self.flaw(
                at,
                "x-kubernetes-list-type",
                "Invalid value: must only be used on type array",
            );
            extra.list = List::Atomic;
            return;
        }
        let items = schema.items.as_deref();
        match &extra.list {
            List::Set => {
                if items.is_some_and(|i| i.types & (types::OBJECT | types::ARRAY) != 0) {
                    self.flaw(
                        at,
                        "items.type",
                        "Invalid value: must be a scalar type if parent array's \
                         x-kubernetes-list-type is set",
                    );
                }
            }
            List::Map(keys) if keys.is_empty() => {
                self.flaw(
                    at,
                    "x-kubernetes-list-map-keys",
                    "Required value: must not be empty if x-kubernetes-list-type is map",
                );
                extra.list = List::Atomic;
            }
            List::Map(keys) => {
                let Some(items) = items else { return };
                if items.types != types::OBJECT {
                    self.flaw(
                        at,
                        "items.type",
                        "Invalid value: must be object if parent array's x-kubernetes-list-type \
                         is map",
                    );
                    return;
                }
                let required: &[Box<str>] = items.extra.as_ref().map_or(&[], |e| &e.required);
                for key in keys {
                    match items.property(key) {
                        None => self.flaw(
                            at,
                            "x-kubernetes-list-map-keys",
                            format!(
                                "Invalid value: {}: entries must all be names of item properties",
                                Json::from(&**key)
                            ),
                        ),
                        Some(p) if p.types & (types::OBJECT | types::ARRAY) != 0 || p.types == 0 => {
                            self.flaw(
                                at,
                                format!("items.properties[{key}].type").as_str(),
                                "Invalid value: must be a scalar type if parent array's \
                                 x-kubernetes-list-type is map",
                            )
                        }
                        Some(p) if p.default_value().is_none() && !required.contains(key) => self.flaw(
                            at,
                            format!("items.properties[{key}]").as_str(),
                            "Required value: this property is in x-kubernetes-list-map-keys, so \
                             it must have a default or be a required property",
                        ),
                        Some(_) => {}
                    }
                }
            }
            List::Atomic => {}
        }
    }

    /// The structural rules of a node that declares fields (not under a value validation).
    fn structural(&mut self, schema: &Schema, node: &Node, entries: &[(Node, Node)], place: Place) {
        let has = |key: &str| {
            entries
                .iter()
                .find(|(k, _)| matches!(&k.value, Value::Str(s) if s == key))
        };
        if has("type").is_none() && !schema.flag(INT_OR_STRING) && !schema.flag(PRESERVE) {
            let what = match place {
                Place::Items => "must not be empty for specified array items",
                _ => "must not be empty for specified object fields",
            };
            if place != Place::Root {
                self.flaw(node, "type", format!("Required value: {what}"));
            }
        }
        if schema.types == types::ARRAY && schema.items.is_none() {
            self.flaw(node, "items", "Required value: must be specified");
        }
        if let (Some(_), Some((_, additional))) = (has("properties"), has("additionalProperties"))
            && !matches!(additional.value, Value::Bool(_))
        {
            self.flaw(
                additional,
                "additionalProperties",
                "Forbidden: additionalProperties and properties are mutual exclusive",
            );
        }
        if schema.flag(EMBEDDED) && schema.types != types::OBJECT {
            self.flaw(
                node,
                "type",
                "Required value: must be object if x-kubernetes-embedded-resource is true",
            );
        }
    }
}

/// The steps of an API server path in a schema: `.properties[spec].items` is `properties`,
/// `spec`, `items`; `.allOf[0]` is `allOf`, 0.
fn steps(path: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let mut pieces = part.split('[');
        if let Some(name) = pieces.next().filter(|n| !n.is_empty()) {
            steps.push(Step::Key(name.to_string().into()));
        }
        for piece in pieces {
            let inner = piece.strip_suffix(']').unwrap_or(piece);
            steps.push(match inner.parse() {
                Ok(i) => Step::Index(i),
                Err(_) => Step::Key(inner.to_string().into()),
            });
        }
    }
    steps
}

fn truth(node: &Node) -> bool {
    matches!(node.value, Value::Bool(true))
}

fn number(node: &Node) -> Option<f64> {
    match node.value {
        Value::Int(i) => Some(i as f64),
        Value::Float(f) => Some(f),
        _ => None,
    }
}

/// A CRD's `pattern` as Go's `regexp.Compile` reads it: RE2 syntax, unanchored, matched in
/// linear time. The error is the last line of the `regex` crate's (what is wrong).
pub fn compile_pattern(pattern: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(pattern).map_err(|e| {
        let text = e.to_string();
        let last = text.lines().rev().find(|l| !l.trim().is_empty());
        let last = last.unwrap_or("not a regular expression").trim();
        last.strip_prefix("error: ").unwrap_or(last).to_string()
    })
}

/// One reason an object is refused: where (a path in the object, the node met there) and the
/// API server's words.
pub struct Error {
    pub path: Vec<Step>,
    pub span: Span,
    /// What is wrong, without the path ([`UNKNOWN`] for an undeclared field).
    what: String,
}

/// [`Error::what`] of a field the schema does not declare.
const UNKNOWN: &str = "unknown field";

impl Error {
    /// The API server's line: `spec.replicas: Invalid value: …`, `unknown field "spec.x"`.
    pub fn message(&self) -> String {
        let at = display_path(&self.path);
        match (self.what.as_str(), at.is_empty()) {
            (UNKNOWN, _) => format!("{UNKNOWN} \"{at}\""),
            (what, true) => what.to_string(),
            (what, false) => format!("{at}: {what}"),
        }
    }
}

#[derive(Default)]
struct Check {
    path: Vec<Step>,
    /// Where each step of `path` is written (a key, an item): a missing field is reported at
    /// the key of the object that lacks it.
    at: Vec<Span>,
    errors: Vec<Error>,
}

/// Validate a custom resource (its whole document) against its version's schema.
pub fn validate(schema: &Schema, root: &Node) -> Vec<Error> {
    let mut check = Check::default();
    check.object(schema, root, true, true);
    check.errors
}

fn type_name(node: &Node) -> &'static str {
    match node.value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Int(_) => "integer",
        Value::Float(_) => "number",
        Value::Str(_) => "string",
        Value::Seq(_) => "array",
        Value::Map(_) => "object",
    }
}

fn admits(types: u8, node: &Node) -> bool {
    types == 0
        || match node.value {
            Value::Null => false,
            Value::Bool(_) => types & types::BOOLEAN != 0,
            Value::Int(_) => types & (types::INTEGER | types::NUMBER) != 0,
            // A float with no fraction decodes as an integer (`1.0` is an integer to the API
            // server's JSON decoder).
            Value::Float(f) => {
                types & types::NUMBER != 0 || (types & types::INTEGER != 0 && f.fract() == 0.0)
            }
            Value::Str(_) => types & types::STRING != 0,
            Value::Seq(_) => types & types::ARRAY != 0,
            Value::Map(_) => types & types::OBJECT != 0,
        }
}

fn wanted(types: u8) -> String {
    let names: Vec<&str> = types::NAMES
        .iter()
        .filter(|(_, bit)| types & bit != 0)
        .map(|(name, _)| *name)
        .collect();
    names.join(",")
}

impl Check {
    /// go-openapi's subject of a message: `spec.replicas in body`.
    fn in_body(&self) -> String {
        match display_path(&self.path) {
            at if at.is_empty() => "in body".into(),
            at => format!("{at} in body"),
        }
    }

    fn push(&mut self, node: &Node, what: String) {
        self.errors.push(Error {
            path: self.path.clone(),
            span: node.span.clone(),
            what,
        });
    }

    /// `node` at the current path against `schema`; `structural` is false under value
    /// validations (they declare no fields, so undeclared fields are not theirs to refuse).
    fn value(
        &mut self,
        schema: &Schema,
        (step, at): (Step, &Span),
        node: &Node,
        structural: bool,
        pruned_null: bool,
    ) {
        self.path.push(step);
        self.at.push(at.clone());
        if !(pruned_null && matches!(node.value, Value::Null) && !schema.flag(NULLABLE)) {
            self.node(schema, node, structural);
        }
        self.path.pop();
        self.at.pop();
    }

    /// A field this object lacks, at the key of the object.
    fn missing(&mut self, object: &Node, field: &str, what: &str) {
        let span = self.at.last().unwrap_or(&object.span).clone();
        self.path.push(Step::Key(field.to_string().into()));
        self.errors.push(Error {
            path: self.path.clone(),
            span,
            what: what.into(),
        });
        self.path.pop();
    }

    fn node(&mut self, schema: &Schema, node: &Node, structural: bool) {
        if matches!(node.value, Value::Null) {
            if !schema.flag(NULLABLE) && schema.types != 0 {
                let what = format!(
                    "Invalid value: \"null\": {} must be of type {}: \"null\"",
                    self.in_body(),
                    wanted(schema.types)
                );
                self.push(node, what);
            }
            return;
        }
        if !admits(schema.types, node) {
            let found = type_name(node);
            let what = format!(
                "Invalid value: \"{found}\": {} must be of type {}: \"{found}\"",
                self.in_body(),
                wanted(schema.types)
            );
            self.push(node, what);
            return;
        }
        match &node.value {
            Value::Map(_) => self.object(schema, node, structural, false),
            Value::Seq(items) => self.array(schema, items, structural),
            _ => {}
        }
        self.keywords(schema, node);
        self.rules(schema, node);
    }

    fn object(&mut self, schema: &Schema, node: &Node, structural: bool, root: bool) {
        let Value::Map(entries) = &node.value else {
            return;
        };
        let meta = root || schema.flag(EMBEDDED);
        let closed = structural && schema.closed();
        for (key, value) in entries {
            let name = crate::yaml::key_text(key);
            if meta && matches!(name.as_ref(), "apiVersion" | "kind" | "metadata") {
                // The API server's own: type meta and ObjectMeta, not the CRD's schema.
                if name != "metadata"
                    && let Some(p) = schema.property(&name)
                {
                    self.value(
                        p,
                        (Step::Key(name.into_owned().into()), &key.span),
                        value,
                        structural,
                        true,
                    );
                }
                continue;
            }
            if let Some(p) = schema.property(&name) {
                self.value(
                    p,
                    (Step::Key(name.into_owned().into()), &key.span),
                    value,
                    structural,
                    true,
                );
            } else if let Additional::Schema(a) = &schema.additional {
                self.value(
                    a,
                    (Step::Key(name.into_owned().into()), &key.span),
                    value,
                    structural,
                    true,
                );
            } else if closed {
                self.path.push(Step::Key(name.into_owned().into()));
                self.errors.push(Error {
                    path: self.path.clone(),
                    span: key.span.clone(),
                    what: UNKNOWN.into(),
                });
                self.path.pop();
            }
        }
        if schema.flag(EMBEDDED) {
            for field in ["apiVersion", "kind"] {
                if node
                    .get(field)
                    .is_none_or(|v| matches!(&v.value, Value::Str(s) if s.is_empty()))
                {
                    self.missing(node, field, "Required value: must not be empty");
                }
            }
        }
        if root {
            self.keywords(schema, node);
            self.rules(schema, node);
        }
    }

    fn array(&mut self, schema: &Schema, items: &[Node], structural: bool) {
        if let Some(item_schema) = &schema.items {
            for (i, item) in items.iter().enumerate() {
                self.value(
                    item_schema,
                    (Step::Index(i), &item.span),
                    item,
                    structural,
                    false,
                );
            }
        }
        let Some(extra) = &schema.extra else { return };
        let mut seen = std::collections::HashSet::new();
        match &extra.list {
            List::Atomic => {}
            List::Set => {
                for (i, item) in items.iter().enumerate() {
                    let value = item.to_json();
                    if !seen.insert(value.to_string()) {
                        self.path.push(Step::Index(i));
                        self.push(item, format!("Duplicate value: {value}"));
                        self.path.pop();
                    }
                }
            }
            List::Map(keys) => {
                let item_schema = schema.items.as_deref();
                for (i, item) in items.iter().enumerate() {
                    if !matches!(item.value, Value::Map(_)) {
                        continue;
                    }
                    // A key the item leaves out takes its default, as the API server fills it
                    // before it compares.
                    let mut key = serde_json::Map::new();
                    for k in keys {
                        let value = match item.get(k) {
                            Some(v) => v.to_json(),
                            None => item_schema
                                .and_then(|s| s.property(k))
                                .and_then(Schema::default_value)
                                .cloned()
                                .unwrap_or(Json::Null),
                        };
                        if !value.is_null() {
                            key.insert(k.to_string(), value);
                        }
                    }
                    // Go's `%#v` of the keys, as the API server prints them.
                    let key = format!(
                        "map[string]interface {{}}{{{}}}",
                        key.iter()
                            .map(|(k, v)| format!("{}:{v}", Json::from(k.as_str())))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                    if !seen.insert(key.clone()) {
                        self.path.push(Step::Index(i));
                        self.push(item, format!("Duplicate value: {key}"));
                        self.path.pop();
                    }
                }
            }
        }
    }

    /// The value validations of one node (not its type, checked before).
    fn keywords(&mut self, schema: &Schema, node: &Node) {
        let Some(extra) = &schema.extra else { return };
        let subject = self.in_body();
        let invalid = |check: &mut Self, detail: String| {
            check.push(
                node,
                format!("Invalid value: {}: {subject} {detail}", shown(node)),
            );
        };
        if !extra.enumeration.is_empty() {
            let value = node.to_json();
            if !extra.enumeration.iter().any(|e| same(e, &value)) {
                let supported: Vec<String> = extra
                    .enumeration
                    .iter()
                    .map(|e| match e {
                        Json::String(s) => Json::from(s.as_str()).to_string(),
                        other => Json::from(other.to_string()).to_string(),
                    })
                    .collect();
                self.push(
                    node,
                    format!(
                        "Unsupported value: {}: supported values: {}",
                        shown(node),
                        supported.join(", ")
                    ),
                );
            }
        }
        match &node.value {
            Value::Str(text) => {
                let chars = text.chars().count() as u64;
                if let Some(max) = extra.max_length.filter(|&m| chars > m) {
                    self.push(node, format!("Too long: may not be more than {max} bytes"));
                }
                if let Some(min) = extra.min_length.filter(|&m| chars < m) {
                    invalid(self, format!("should be at least {min} chars long"));
                }
                if let Some((pattern, regex)) = &extra.pattern
                    && !regex.is_match(text)
                {
                    invalid(self, format!("should match '{pattern}'"));
                }
                if let Some(format) = &extra.format
                    && !formatted(format, text)
                {
                    invalid(self, format!("must be of type {format}"));
                }
            }
            Value::Int(_) | Value::Float(_) => {
                let n = number(node).unwrap_or(0.0);
                if let Some((max, exclusive)) = extra.maximum {
                    if exclusive && n >= max {
                        invalid(self, format!("should be less than {}", num(max)));
                    } else if n > max {
                        invalid(
                            self,
                            format!("should be less than or equal to {}", num(max)),
                        );
                    }
                }
                if let Some((min, exclusive)) = extra.minimum {
                    if exclusive && n <= min {
                        invalid(self, format!("should be greater than {}", num(min)));
                    } else if n < min {
                        invalid(
                            self,
                            format!("should be greater than or equal to {}", num(min)),
                        );
                    }
                }
                if let Some(m) = extra.multiple_of
                    && (n / m).fract() != 0.0
                {
                    invalid(self, format!("should be a multiple of {}", num(m)));
                }
            }
            Value::Seq(items) => {
                let n = items.len() as u64;
                if let Some(max) = extra.max_items.filter(|&m| n > m) {
                    self.push(
                        node,
                        format!("Too many: {n}: must have at most {max} items"),
                    );
                }
                if let Some(min) = extra.min_items.filter(|&m| n < m) {
                    invalid(self, format!("should have at least {min} items"));
                }
            }
            Value::Map(entries) => {
                let n = entries.len() as u64;
                if let Some(max) = extra.max_properties.filter(|&m| n > m) {
                    self.push(
                        node,
                        format!("Too many: {n}: must have at most {max} items"),
                    );
                }
                if let Some(min) = extra.min_properties.filter(|&m| n < m) {
                    invalid(self, format!("should have at least {min} properties"));
                }
                // A field its default fills is not missing: the API server defaults first.
                for name in &extra.required {
                    let defaulted = schema
                        .property(name)
                        .is_some_and(|p| p.default_value().is_some());
                    if node.get(name).is_none() && !defaulted {
                        self.missing(node, name, "Required value");
                    }
                }
            }
            _ => {}
        }
        for branch in &extra.all_of {
            self.node(branch, node, false);
        }
        if !extra.any_of.is_empty() && !extra.any_of.iter().any(|b| self.passes(b, node)) {
            invalid(self, "must validate at least one schema (anyOf)".into());
        }
        if !extra.one_of.is_empty() {
            let passing = extra.one_of.iter().filter(|b| self.passes(b, node)).count();
            if passing != 1 {
                invalid(self, "must validate one and only one schema (oneOf)".into());
            }
        }
        if let Some(not) = &extra.not
            && self.passes(not, node)
        {
            invalid(self, "must not validate the schema (not)".into());
        }
    }

    /// The CEL rules of the node's schema.
    fn rules(&mut self, schema: &Schema, node: &Node) {
        let Some(extra) = &schema.extra else { return };
        for rule in &extra.rules {
            let Verdict::Fail {
                reason,
                message,
                field_path,
            } = rule.check(node)
            else {
                continue;
            };
            let what = match reason {
                "Invalid value" => format!("{reason}: \"{}\": {message}", type_name(node)),
                _ => format!("{reason}: {message}"),
            };
            let depth = self.path.len();
            self.path.extend(field_path);
            self.push(node, what);
            self.path.truncate(depth);
        }
    }

    fn passes(&self, schema: &Schema, node: &Node) -> bool {
        let mut branch = Check {
            path: self.path.clone(),
            at: self.at.clone(),
            errors: Vec::new(),
        };
        branch.node(schema, node, false);
        branch.errors.is_empty()
    }
}

/// Equal as JSON values, `1` and `1.0` alike.
fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// A value as the API server quotes it in a message: a string quoted, short; other scalars
/// as written; collections by their type.
fn shown(node: &Node) -> String {
    match &node.value {
        Value::Str(s) if s.chars().count() <= 64 => Json::from(s.as_str()).to_string(),
        Value::Str(_) => "\"(a long string)\"".into(),
        Value::Map(_) => "\"object\"".into(),
        Value::Seq(_) => "\"array\"".into(),
        _ => node.to_json().to_string(),
    }
}

fn num(n: f64) -> String {
    Json::from(n).to_string().trim_end_matches(".0").to_string()
}

/// The string formats checked here, as the API server's format registry reads them; others
/// pass.
pub(super) fn formatted(format: &str, text: &str) -> bool {
    match format {
        "date-time" | "datetime" => crate::k8s::check::is_date_time(text),
        "byte" => crate::k8s::check::is_base64(text),
        // A day of its month, as Go's `time.Parse` of `2006-01-02` reads it.
        "date" => text.len() == 10 && crate::k8s::check::is_date_time(&format!("{text}T00:00:00Z")),
        "uuid" => {
            let b = text.as_bytes();
            b.len() == 36
                && b.iter().enumerate().all(|(i, c)| {
                    if matches!(i, 8 | 13 | 18 | 23) {
                        *c == b'-'
                    } else {
                        c.is_ascii_hexdigit()
                    }
                })
        }
        "ipv4" => text.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => text.split_once('/').is_some_and(|(ip, bits)| {
            let bits: Option<u8> = bits.parse().ok().filter(|_| !bits.starts_with('+'));
            match (ip.parse::<std::net::IpAddr>(), bits) {
                (Ok(std::net::IpAddr::V4(_)), Some(b)) => b <= 32,
                (Ok(std::net::IpAddr::V6(_)), Some(b)) => b <= 128,
                _ => false,
            }
        }),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;

    pub(super) fn node(text: &str) -> Node {
        let source = Source::new("t.yaml", text.to_string());
        let mut stream = crate::yaml::parse(&source, crate::yaml::Limits::default()).unwrap();
        stream.documents.remove(0)
    }

    pub(super) fn flaws(schema: &str) -> Vec<String> {
        match Schema::read(&node(schema), "s") {
            Ok(_) => Vec::new(),
            Err(flaws) => flaws.into_iter().map(|f| f.message).collect(),
        }
    }

    pub(super) fn errors(schema: &str, object: &str) -> Vec<String> {
        let schema =
            Schema::read(&node(schema), "s").unwrap_or_else(|f| panic!("{}", f[0].message));
        validate(&schema, &node(object))
            .iter()
            .map(Error::message)
            .collect()
    }

    #[test]
    fn a_schema_the_api_server_refuses_is_refused_with_its_words() {
        assert_eq!(
            flaws("type: object\nproperties: {a: {type: strign}}"),
            [
                "s.properties[a].type: Unsupported value: \"strign\": supported values: \"array\", \
             \"boolean\", \"integer\", \"number\", \"object\", \"string\""
            ]
        );
        assert_eq!(
            flaws("type: string"),
            ["s.type: Invalid value: \"string\": must be object at the root"]
        );
        assert_eq!(
            flaws("type: object\nproperties: {a: {type: array}}"),
            ["s.properties[a].items: Required value: must be specified"]
        );
        assert_eq!(
            flaws("type: object\nproperties: {a: {description: x}}"),
            ["s.properties[a].type: Required value: must not be empty for specified object fields"]
        );
        assert_eq!(
            flaws(
                "type: object\nproperties: {a: {type: object, properties: {b: {type: string}}, additionalProperties: {type: string}}}"
            ),
            [
                "s.properties[a].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
            ]
        );
        assert_eq!(
            flaws("type: object\nadditionalProperties: false"),
            ["s.additionalProperties: Forbidden: additionalProperties cannot be set to false"]
        );
        assert_eq!(
            flaws("type: object\nproperties: {a: {$ref: '#/x'}}")[0],
            "s.properties[a].$ref: Forbidden: $ref is not supported"
        );
        assert_eq!(
            flaws("type: object\nproperties: {a: {type: integer, default: ten}}"),
            [
                "s.properties[a].default: Invalid value: \"string\": in body must be of type integer: \"string\""
            ]
        );
        assert_eq!(
            flaws(
                "type: object\nproperties: {a: {type: object, properties: {b: {type: string}}, default: {c: 1}}}"
            ),
            ["s.properties[a].default.c: Forbidden: must not have unknown fields"]
        );
        // A list-map key must be a required or defaulted scalar property of the items.
        let list = |keys: &str, item: &str| {
            flaws(&format!(
                "type: object\nproperties: {{l: {{type: array, x-kubernetes-list-type: map, \
                 x-kubernetes-list-map-keys: {keys}, items: {item}}}}}"
            ))
        };
        assert_eq!(
            list(
                "[name]",
                "{type: object, required: [name], properties: {name: {type: string}}}"
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            list(
                "[name]",
                "{type: object, properties: {name: {type: string, default: a}}}"
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            list(
                "[name]",
                "{type: object, properties: {name: {type: string}}}"
            ),
            [
                "s.properties[l].items.properties[name]: Required value: this property is in \
             x-kubernetes-list-map-keys, so it must have a default or be a required property"
            ]
        );
        assert_eq!(
            list(
                "[nmae]",
                "{type: object, required: [name], properties: {name: {type: string}}}"
            ),
            [
                "s.properties[l].x-kubernetes-list-map-keys: Invalid value: \"nmae\": entries must all be names of item properties"
            ]
        );
        assert_eq!(
            flaws("type: object\nproperties: {a: {type: string, x-kubernetes-list-type: set}}"),
            [
                "s.properties[a].x-kubernetes-list-type: Invalid value: must only be used on type array"
            ]
        );
        // Value validations may leave types out; int-or-string and preserve-unknown-fields too.
        assert_eq!(
            flaws(
                "type: object\nproperties: {a: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}, b: {x-kubernetes-preserve-unknown-fields: true}}\nanyOf: [{required: [a]}, {required: [b]}]"
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn objects_are_checked_as_the_api_server_checks_them_on_create() {
        let schema = "type: object
properties:
  spec:
    type: object
    required: [mode, size]
    properties:
      mode: {type: string, default: fast}
      size: {type: integer, minimum: 1, maximum: 8}
      note: {type: string, nullable: true, maxLength: 4}
      ratio: {type: number, exclusiveMaximum: true, maximum: 1}
      when: {type: string, format: date-time}
      port: {x-kubernetes-int-or-string: true}
      free: {type: object, x-kubernetes-preserve-unknown-fields: true}
      child: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
      tags:
        type: array
        x-kubernetes-list-type: set
        items: {type: string}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [port, protocol]
        items:
          type: object
          required: [port]
          properties:
            port: {type: integer}
            protocol: {type: string, default: TCP}
";
        let clean = "apiVersion: x/v1\nkind: K\nmetadata: {name: a, labels: {b: c}}\nspec: {size: 8, note: null, \
                     ratio: 0.5, when: '2024-01-31T12:00:00Z', port: http, free: {any: [1]}, \
                     child: {apiVersion: v1, kind: ConfigMap, data: {}}, tags: [a, b], \
                     ports: [{port: 80}, {port: 80, protocol: UDP}], size2: null}";
        assert_eq!(errors(schema, clean), ["unknown field \"spec.size2\""]);
        let clean = clean.replace(", size2: null", ", mode: null");
        assert_eq!(
            errors(schema, &clean),
            Vec::<String>::new(),
            "a null of a non-nullable field is pruned"
        );
        let bad = "spec: {size: 9, note: toolong, ratio: 1, when: yesterday, port: 1.5, \
                   child: {data: {}}, tags: [a, a], ports: [{port: 80}, {port: 80, protocol: TCP}]}";
        assert_eq!(
            errors(schema, bad),
            [
                "spec.size: Invalid value: 9: spec.size in body should be less than or equal to 8",
                "spec.note: Too long: may not be more than 4 bytes",
                "spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1",
                "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time",
                "spec.port: Invalid value: \"number\": spec.port in body must be of type integer,string: \"number\"",
                "spec.child.apiVersion: Required value: must not be empty",
                "spec.child.kind: Required value: must not be empty",
                "spec.tags[1]: Duplicate value: \"a\"",
                "spec.ports[1]: Duplicate value: map[string]interface {}{\"port\":80, \"protocol\":\"TCP\"}",
            ]
        );
        assert_eq!(
            errors(schema, "spec: {mode: slow}"),
            ["spec.size: Required value"]
        );
    }
}

#[cfg(test)]
mod rule_tests {
    use super::tests::{errors, flaws};

    const RULES: &str = "type: object
properties:
  spec:
    type: object
    x-kubernetes-validations:
    - rule: self.min <= self.max
      message: min must not exceed max
    - rule: self.min == oldSelf.min
      message: min is immutable
    - rule: self.max < 100
      messageExpression: \"'max is ' + string(self.max) + ', over 99'\"
      reason: FieldValueForbidden
      fieldPath: .max
    - rule: self.name.lowerAscii() == self.name
    - rule: self.all(k, self.all(j, k != ''))
    properties:
      min: {type: integer}
      max: {type: integer}
      name: {type: string}
      tags:
        type: array
        items: {type: string}
        x-kubernetes-validations:
        - rule: self.all(t, t.startsWith('x-'))
";

    #[test]
    fn cel_rules_are_evaluated_on_create_with_the_api_server_s_words() {
        // `lowerAscii` is of the strings extension Kubernetes enables.
        assert_eq!(
            errors(RULES, "spec: {min: 1, max: 2, name: Mixed, tags: [x-a]}"),
            ["spec: Invalid value: \"object\": failed rule: self.name.lowerAscii() == self.name"]
        );
        assert_eq!(
            errors(RULES, "spec: {min: 1, max: 2, name: mixed, tags: [x-a]}"),
            Vec::<String>::new()
        );
        // Children first, then the object's own rules; the transition rule is not run.
        assert_eq!(
            errors(RULES, "spec: {min: 300, max: 200, name: a, tags: [x-a, b]}"),
            [
                "spec.tags: Invalid value: \"array\": failed rule: self.all(t, t.startsWith('x-'))",
                "spec: Invalid value: \"object\": min must not exceed max",
                "spec.max: Forbidden: max is 200, over 99",
            ]
        );
        // A rule reading a field the object leaves out: the API server's evaluation error.
        let missing = "type: object\nproperties:\n  spec:\n    type: object\n    \
                       x-kubernetes-validations: [{rule: 'self.a > 0'}]\n    \
                       properties: {a: {type: integer}}";
        assert_eq!(
            errors(missing, "spec: {}"),
            ["spec: Invalid value: \"object\": no such key: a evaluating rule: self.a > 0"]
        );
    }

    #[test]
    fn the_strings_extension_is_evaluated_and_library_errors_fail_the_rule() {
        let schema = |rule: &str| {
            format!(
                "type: object\nproperties:\n  s:\n    type: string\n    \
                 x-kubernetes-validations: [{{rule: \"{rule}\"}}]"
            )
        };
        // Functions of cel-go's strings extension, which Kubernetes enables.
        for (rule, passes) in [
            ("self.split('-').size() == 2", "s: a-b"),
            ("self.trim() == self", "s: abc"),
            ("self.indexOf('-') == 1", "s: a-b"),
            ("self.replace('-', '') == 'ab'", "s: a-b"),
            ("self.substring(0, 1) == 'a'", "s: a-b"),
            ("self.upperAscii() == 'A-B'", "s: a-b"),
        ] {
            assert_eq!(
                errors(&schema(rule), passes),
                Vec::<String>::new(),
                "{rule}"
            );
            assert_eq!(
                errors(&schema(rule), "s: ' xyz '"),
                [format!("s: Invalid value: \"string\": failed rule: {rule}")],
                "{rule}"
            );
        }
        // A function of Kubernetes' libraries refusing the value (`x` is no quantity): the
        // rule fails with the API server's error.
        let rule = "quantity(self).isInteger()";
        assert_eq!(
            errors(&schema(rule), "s: x"),
            [format!(
                "s: Invalid value: \"string\": quantities must match the regular expression \
                 '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: {rule}"
            )]
        );
        // What the engine lacks (a function no library declares): no verdict, not a guess.
        assert_eq!(
            errors(&schema("self.notAFunction()"), "s: x"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_rule_that_does_not_compile_refuses_the_crd_once() {
        let bad = "type: object\nproperties:\n  spec:\n    type: object\n    \
                   x-kubernetes-validations: [{rule: 'self.a >'}, {rule: 'true', reason: Nope}, {message: m}]";
        let found = flaws(bad);
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(found[0].starts_with(
            "s.properties[spec].x-kubernetes-validations[0].rule: Invalid value: \"self.a >\": compilation failed: "
        ), "{found:#?}");
        assert!(found[1].starts_with(
            "s.properties[spec].x-kubernetes-validations[1].reason: Unsupported value: \"Nope\""
        ));
        assert_eq!(
            found[2],
            "s.properties[spec].x-kubernetes-validations[2].rule: Required value: rule is not specified"
        );
    }

    /// A long rule is refused in words, never by a panic of the parser's error display (whose
    /// caret line panicked past 65,535 columns).
    #[test]
    fn long_rules_are_refused_not_panicked_on() {
        let crd = |rule: &str| {
            flaws(&format!(
                "type: object\nx-kubernetes-validations: [{{rule: \"{rule}\"}}]"
            ))
        };
        let found = crd(&format!("{} )", "x".repeat(70_000)));
        assert_eq!(found.len(), 1);
        assert!(
            found[0].contains("compilation failed: ERROR: <input>:1:70002: "),
            "{}",
            &found[0][..300]
        );
        // Deep nesting stops at the parser's recursion limit, not the stack's.
        let found = crd(&"(".repeat(60_000));
        assert!(found[0].contains("Recursion limit of 96 exceeded"));
        let found = crd(&"x".repeat(100_001));
        assert!(
            found[0]
                .ends_with("expression code point size exceeds limit: size: 100001, limit 100000")
        );
    }

    #[test]
    fn a_rule_over_its_cost_bound_is_not_run() {
        // Two nested loops over 10,000 values: 10^8 steps, over the bound; the rule would fail.
        let schema = "type: object\nproperties:\n  l:\n    type: array\n    items: {type: integer}\n    \
                      x-kubernetes-validations: [{rule: 'self.all(a, self.all(b, a != b))'}]";
        let list: Vec<String> = (0..10_000).map(|_| "1".to_string()).collect();
        let object = format!("l: [{}]", list.join(", "));
        assert_eq!(errors(schema, &object), Vec::<String>::new());
        assert_eq!(
            errors(schema, "l: [1, 1]"),
            ["l: Invalid value: \"array\": failed rule: self.all(a, self.all(b, a != b))"]
        );
    }
}
