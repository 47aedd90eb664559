//! Loading a request: YAML (or JSON) text to a typed [`ActionRequest`], with every problem of
//! the request reported at once. The text becomes a spanned tree; the tree is validated
//! against the JSON Schema derived from the types (so all structural mistakes are found in
//! one pass, each with its JSON pointer turned back into a line and column); only a
//! structurally valid tree is deserialized; then the cross-field rules of the spec run.

use super::ActionRequest;
use super::checks::{self, pin};
use crate::diag::{Diagnostic, has_errors};
use crate::kube::nearest;
use crate::secrets;
use crate::source::Source;
use crate::yaml::{self, Node, Step, Value, display_path};
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{JsonType, ValidationError};
use serde_json::Value as Json;
use std::sync::LazyLock;

pub use crate::codes::{
    DUPLICATE_KEY, INVALID_VALUE, MISSING_FIELD, UNKNOWN_FIELD, WRONG_TYPE, YAML_SYNTAX,
    YAML11_BOOLEAN,
};

/// A request that passed every check, with the tree it came from (for spans) and warnings.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub request: ActionRequest,
    pub tree: Node,
    pub warnings: Vec<Diagnostic>,
    /// Field paths already reported, or stood in for (see [`Refused::partial`]): later checks
    /// stay quiet about them.
    settled: Vec<String>,
}

impl Loaded {
    /// Whether a later check's diagnostic adds to what was reported: not about a field that
    /// was already reported, dropped or stood in for.
    pub fn admits(&self, d: &Diagnostic) -> bool {
        d.path.as_deref().is_none_or(|p| {
            !self.settled.iter().any(|s| {
                p.strip_prefix(s.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
            })
        })
    }
}

/// A refused request: every problem found, and the request as far as it could be read, so that
/// the layers after the checks (staging) can still report their problems in the same run.
#[derive(Debug)]
pub struct Refused {
    pub diagnostics: Vec<Diagnostic>,
    /// The request with its broken fields dropped or stood in for; `None` when it could not
    /// be read that far.
    pub partial: Option<Box<Loaded>>,
}

impl From<Vec<Diagnostic>> for Refused {
    fn from(diagnostics: Vec<Diagnostic>) -> Refused {
        Refused {
            diagnostics,
            partial: None,
        }
    }
}

static SCHEMA: LazyLock<Json> = LazyLock::new(|| {
    let schema = schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<ActionRequest>();
    schema.to_value()
});

static VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    // Descriptions are for editors; without them the validator compiles several times faster.
    let mut schema = SCHEMA.clone();
    strip_descriptions(&mut schema);
    jsonschema::draft7::new(&schema).expect("the derived request schema is a valid draft-07 schema")
});

fn strip_descriptions(schema: &mut Json) {
    match schema {
        Json::Object(map) => {
            if map.get("description").is_some_and(Json::is_string) {
                map.remove("description");
            }
            map.values_mut().for_each(strip_descriptions);
        }
        Json::Array(items) => items.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

/// The request's JSON Schema (draft-07), derived from the types.
pub fn schema_json() -> &'static Json {
    &SCHEMA
}

/// The request's JSON Schema as committed in `schemas/action-request.schema.json`.
pub fn schema_text() -> String {
    let mut text = serde_json::to_string_pretty(schema_json()).expect("a JSON value serializes");
    text.push('\n');
    text
}

thread_local! {
    static PARSES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many requests this thread has parsed so far: one command parses its request once, and a
/// test can count it.
#[doc(hidden)]
pub fn parses() -> usize {
    PARSES.with(std::cell::Cell::get)
}

/// Load and check one request. `Err` holds every error (and the warnings met on the way).
pub fn load(source: &Source) -> Result<Loaded, Refused> {
    PARSES.with(|n| n.set(n.get() + 1));
    let stream = match yaml::parse(source, yaml::Limits::REQUEST) {
        Ok(stream) => stream,
        Err(e) => {
            let d = Diagnostic::error(YAML_SYNTAX, format!("invalid YAML: {}", e.message))
                .primary(e.span, e.message);
            return Err(vec![d].into());
        }
    };
    let mut diags = stream_diagnostics(source, &stream);
    let mut documents = stream.documents.into_iter();
    let Some(tree) = documents.next() else {
        diags.push(
            Diagnostic::error(MISSING_FIELD, "the request is empty")
                .primary(0..0, "expected an ActionRequest here"),
        );
        return Err(diags.into());
    };
    if let Some(extra) = documents.next() {
        diags.push(
            Diagnostic::error(
                INVALID_VALUE,
                "expected one request, found several YAML documents",
            )
            .primary(extra.span, "a second document starts here")
            .help("render one request at a time"),
        );
    }
    // Most requests are well formed: the types alone read them (from the tree itself), and the
    // validator (compiled from the schema, the costliest step of a render) is only built to
    // say what is wrong.
    if let Some(request) = well_formed(&tree) {
        return checked(request, tree, diags, Vec::new());
    }
    let mut json = tree.to_json();
    let (prune, missing) = match structure(&tree, &json, &mut diags) {
        Some(fields) => fields,
        // A member of an array is wrong: see `settle`.
        None => return Err(diags.into()),
    };
    let structural = has_errors(&diags);
    // The fields the rules below must not speak about: dropped or stood in for.
    let mut settled = if structural {
        settle(&mut json, prune, missing)
    } else {
        Vec::new()
    };
    let request: ActionRequest = match serde_path_to_error::deserialize(&json) {
        Ok(r) => r,
        Err(_) if structural => return Err(diags.into()),
        Err(e) => {
            // The schema is derived from the types, so this is rare (a number out of range).
            let path = steps_of(e.path().iter().map(|s| s.to_string()));
            let d = Diagnostic::error(INVALID_VALUE, e.inner().to_string());
            diags.push(pin(&tree, &path, d, "here"));
            return Err(diags.into());
        }
    };
    if structural {
        // Exact paths of what was reported: a check may not repeat it.
        settled.extend(diags.iter().filter_map(|d| d.path.clone()));
    } else {
        settled.clear();
    }
    checked(request, tree, diags, settled)
}

/// The request, when the types read it and it keeps the schema's bounds: then the schema has
/// nothing to say about it (`the_fast_path_admits_nothing_the_schema_refuses` holds them to it).
fn well_formed(tree: &yaml::Node) -> Option<ActionRequest> {
    if !lists_in_place(tree, None) {
        return None;
    }
    let request = <ActionRequest as serde::Deserialize>::deserialize(tree).ok()?;
    within_bounds(&request).then_some(request)
}

/// The fields whose values are lists: the schema's `type: array` properties.
const LIST_FIELDS: [&str; 9] = [
    "aliases",
    "args",
    "argv",
    "extra",
    "fatalExitCodes",
    "imagePullSecrets",
    "inputs",
    "mounts",
    "tolerations",
];

/// Whether every list is the value of a list field (`specInline` holds any JSON): serde reads
/// a list as a struct's fields in order, where the schema wants a mapping.
fn lists_in_place(node: &yaml::Node, key: Option<&str>) -> bool {
    match &node.value {
        yaml::Value::Seq(items) => {
            key.is_some_and(|k| LIST_FIELDS.contains(&k))
                && items.iter().all(|i| lists_in_place(i, None))
        }
        yaml::Value::Map(entries) => entries.iter().all(|(k, v)| {
            let k = yaml::key_text(k);
            k == "specInline" || lists_in_place(v, Some(&k))
        }),
        _ => true,
    }
}

/// The `#[schemars(range, length)]` bounds of the types, which serde does not check.
fn within_bounds(request: &ActionRequest) -> bool {
    let spec = &request.spec;
    let within = |v: Option<u32>, low: u32, high: u32| v.is_none_or(|v| (low..=high).contains(&v));
    let rendezvous = spec.rendezvous.as_ref();
    within(spec.backoff_limit, 0, 1000)
        && within(spec.retries.disruptions, 0, 1000)
        && spec.retries.fatal_exit_codes.len() <= 255
        && !spec.retries.fatal_exit_codes.contains(&0)
        && spec.security_context.as_ref().is_none_or(|s| {
            const MAX: u32 = i32::MAX as u32;
            (1..=MAX).contains(&s.run_as_user)
                && within(s.run_as_group, 0, MAX)
                && within(s.fs_group, 0, MAX)
        })
        && within(spec.resources.nodes, 1, 1000)
        && spec.resources.gpus_per_node <= 1024
        && within(rendezvous.and_then(|r| r.port).map(u32::from), 1024, 65535)
        && within(rendezvous.and_then(|r| r.timeout_seconds), 1, 86400)
        && spec.command.args.as_ref().is_none_or(|a| !a.is_empty())
        && spec
            .command
            .config
            .as_ref()
            .is_none_or(|c| !c.argv.is_empty())
}

/// The cross-field checks, on a request the types read.
fn checked(
    request: ActionRequest,
    tree: Node,
    mut diags: Vec<Diagnostic>,
    settled: Vec<String>,
) -> Result<Loaded, Refused> {
    let mut loaded = Loaded {
        request,
        tree,
        warnings: Vec::new(),
        settled,
    };
    let found = checks::check(&loaded.request, &loaded.tree);
    diags.extend(found.into_iter().filter(|d| loaded.admits(d)));
    if has_errors(&diags) {
        return Err(Refused {
            diagnostics: diags,
            partial: Some(Box::new(loaded)),
        });
    }
    loaded.warnings = diags;
    Ok(loaded)
}

/// Fields of the request, as (parent path, key).
type Fields = Vec<(Vec<Step>, String)>;

/// The duplicate keys of a request's stream, and its YAML 1.1 booleans.
fn stream_diagnostics(source: &Source, stream: &yaml::Stream) -> Vec<Diagnostic> {
    let mut diags: Vec<Diagnostic> = stream
        .duplicates
        .iter()
        .map(|d| {
            Diagnostic::error(DUPLICATE_KEY, format!("duplicate key `{}`", d.key))
                .primary(d.second.clone(), "defined again here")
                .secondary(d.first.clone(), "first defined here")
                .help("remove one of them; Kubernetes tools refuse duplicate keys")
        })
        .collect();
    diags.extend(stream.yaml11_booleans.iter().map(|span| {
        let text = &source.text()[span.clone()];
        let meant = if matches!(text.to_ascii_lowercase().as_str(), "y" | "yes" | "on") {
            "true"
        } else {
            "false"
        };
        Diagnostic::warning(
            YAML11_BOOLEAN,
            format!("`{text}` is read as the string \"{text}\", not as the boolean {meant}"),
        )
        .primary(span.clone(), "a string in YAML 1.2, a boolean in YAML 1.1")
        .help(format!(
            "write `{meant}` for a boolean, or quote it (\"{text}\") to keep the string"
        ))
    }));
    diags
}

/// Every structural problem of the request against its schema, into `diags`, and the fields
/// to drop and the required ones that are missing, as (parent path, key); `None` when the
/// request is refused and a member of an array is wrong: the rules wait for the next run.
fn structure(tree: &Node, json: &Json, diags: &mut Vec<Diagnostic>) -> Option<(Fields, Fields)> {
    let mut prunable = true;
    let mut prune: Fields = Vec::new();
    let mut missing: Fields = Vec::new();
    for e in VALIDATOR.iter_errors(json) {
        diags.extend(schema_diagnostics(tree, &e));
        let path = steps_of(e.instance_path().iter().map(|s| s.to_string()));
        match e.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                prune.extend(unexpected.iter().map(|u| (path.clone(), u.clone())));
            }
            ValidationErrorKind::Required { property } => {
                missing.push((path, property.as_str().unwrap_or_default().to_string()));
            }
            _ => match path.split_last() {
                Some((Step::Key(k), parent)) => prune.push((parent.to_vec(), k.to_string())),
                _ => prunable = false,
            },
        }
    }
    (prunable || !has_errors(diags)).then_some((prune, missing))
}

/// Drop the offending members, stand in for the required ones that are missing or were
/// dropped, and say which fields those were, so that the rules still report what they can in
/// the same run (a misspelled `netwrokArch` does not hide a bad `memory`). A member of an array
/// cannot be dropped without shifting the paths of its neighbours: `structure` stops there.
fn settle(json: &mut Json, prune: Fields, missing: Fields) -> Vec<String> {
    let mut settled = Vec::new();
    for (parent, key) in prune.into_iter().chain(missing) {
        let Some(obj) = pointer_mut(json, &parent).and_then(Json::as_object_mut) else {
            continue;
        };
        obj.remove(&key);
        let mut field = parent;
        field.push(Step::Key(key.clone().into()));
        if required(&parent_of(&field)).contains(&key) {
            obj.insert(key, schema_at(&field).map_or(Json::Null, placeholder));
        }
        settled.push(display_path(&field));
    }
    settled
}

fn pointer_mut<'a>(json: &'a mut Json, path: &[Step]) -> Option<&'a mut Json> {
    path.iter().try_fold(json, |node, step| match step {
        Step::Key(k) => node.get_mut(k.as_ref()),
        Step::Index(i) => node.get_mut(*i),
    })
}

fn steps_of(segments: impl Iterator<Item = String>) -> Vec<Step> {
    segments
        .filter(|s| s != "?")
        .map(|s| match s.parse::<usize>() {
            Ok(i) => Step::Index(i),
            Err(_) => Step::Key(s.into()),
        })
        .collect()
}

fn schema_diagnostics(tree: &Node, e: &ValidationError<'_>) -> Vec<Diagnostic> {
    let path = steps_of(e.instance_path().iter().map(|s| s.to_string()));
    let node = tree.lookup(&path).map(|(_, n)| n);
    let found = node.map_or_else(|| "nothing".to_string(), found);
    let at = display_path(&path);
    let one = |code, message: String, label: String| {
        vec![pin(tree, &path, Diagnostic::error(code, message), &label)]
    };
    match e.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            unknown_fields(tree, &path, unexpected)
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            let d = Diagnostic::error(MISSING_FIELD, format!("missing field `{name}`"));
            let d = pin(tree, &path, d, &format!("`{name}` is required here"));
            let mut field = path.clone();
            field.push(Step::Key(name.to_string().into()));
            vec![Diagnostic {
                path: Some(display_path(&field)),
                ..d
            }]
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => type_name(*t).to_string(),
                TypeKind::Multiple(set) => {
                    let names: Vec<_> = set
                        .iter()
                        .filter(|t| *t != JsonType::Null || set.iter().count() == 1)
                        .map(type_name)
                        .collect();
                    names.join(" or ")
                }
            };
            let mut d = one(
                WRONG_TYPE,
                format!("wrong type at `{at}`: expected {expected}, found {found}"),
                format!("expected {expected}"),
            );
            let scalar = node
                .is_some_and(|n| !matches!(n.value, Value::Map(_) | Value::Seq(_) | Value::Null));
            if expected == "a string" && scalar {
                d[0].help = Some("quote the value to make it a string, e.g. \"10\"".into());
            }
            d
        }
        ValidationErrorKind::AnyOf { context } => any_of(tree, e, context, &path, &at, &found),
        ValidationErrorKind::Enum { options } => {
            let options: Vec<String> = options
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|o| o.to_string().trim_matches('"').to_string())
                        .collect()
                })
                .unwrap_or_default();
            one(
                INVALID_VALUE,
                format!(
                    "invalid value at `{at}`: expected one of {}, found {found}",
                    quoted(&options)
                ),
                format!("expected one of {}", quoted(&options)),
            )
        }
        ValidationErrorKind::Minimum { limit }
        | ValidationErrorKind::ExclusiveMinimum { limit } => one(
            INVALID_VALUE,
            format!("`{at}` is out of range: expected at least {limit}, found {found}"),
            format!("must be at least {limit}"),
        ),
        ValidationErrorKind::Maximum { limit }
        | ValidationErrorKind::ExclusiveMaximum { limit } => one(
            INVALID_VALUE,
            format!("`{at}` is out of range: expected at most {limit}, found {found}"),
            format!("must be at most {limit}"),
        ),
        ValidationErrorKind::MinItems { limit } => one(
            INVALID_VALUE,
            format!("`{at}` needs at least {limit} item(s), found {found}"),
            format!("at least {limit} item(s)"),
        ),
        _ => one(
            INVALID_VALUE,
            format!("invalid value at `{at}`: {}", e.masked()),
            "here".into(),
        ),
    }
}

/// One report per unknown field, with the nearest known name.
fn unknown_fields(tree: &Node, path: &[Step], unexpected: &[String]) -> Vec<Diagnostic> {
    unexpected
        .iter()
        .map(|name| {
            let mut field = path.to_vec();
            field.push(Step::Key(name.clone().into()));
            let known = known_fields(path);
            let d = Diagnostic::error(UNKNOWN_FIELD, format!("unknown field `{name}`"))
                .at_path(display_path(&field));
            let d = match nearest(name, known.iter().map(String::as_str)) {
                Some(best) => d.help(format!("did you mean `{best}`?")),
                None if known.is_empty() => d,
                None => d.help(format!("expected one of: {}", quoted(&known))),
            };
            let span = tree
                .lookup(&field)
                .and_then(|(k, _)| k)
                .map_or(0..0, |k| k.span.clone());
            d.primary(span, "not a field here")
        })
        .collect()
}

/// The errors of the branch the user meant (an `Option<Struct>` whose struct has a bad
/// field), or one wrong-type report naming every type the field takes.
fn any_of(
    tree: &Node,
    e: &ValidationError<'_>,
    context: &[Vec<ValidationError<'_>>],
    path: &[Step],
    at: &str,
    found: &str,
) -> Vec<Diagnostic> {
    let one = |code, message: String, label: String| {
        vec![pin(tree, path, Diagnostic::error(code, message), &label)]
    };
    // A branch that failed for more than the type (an `Option<Struct>` whose struct
    // has a bad field) is the one the user meant: report its errors.
    let meant = context.iter().find(|branch| {
        !branch
            .iter()
            .all(|b| b.instance_path() == e.instance_path() && is_type_mismatch(b))
    });
    if let Some(branch) = meant {
        return branch
            .iter()
            .flat_map(|b| schema_diagnostics(tree, b))
            .collect();
    }
    let mut expected = Vec::new();
    expected_types(e, &mut expected);
    if expected.len() > 1 {
        expected.retain(|t| *t != JsonType::Null);
    }
    let names: Vec<&str> = expected.into_iter().map(type_name).collect();
    let expected = if names.is_empty() {
        "a valid value".to_string()
    } else {
        names.join(" or ")
    };
    one(
        WRONG_TYPE,
        format!("wrong type at `{at}`: expected {expected}, found {found}"),
        format!("expected {expected}"),
    )
}

/// Whether an error says only that the value has the wrong type.
fn is_type_mismatch(e: &ValidationError<'_>) -> bool {
    match e.kind() {
        ValidationErrorKind::Type { .. } => true,
        ValidationErrorKind::AnyOf { context } => context.iter().flatten().all(is_type_mismatch),
        _ => false,
    }
}

/// The types an `anyOf` would have taken, through nested `anyOf`s and `$ref`s.
fn expected_types(e: &ValidationError<'_>, out: &mut Vec<JsonType>) {
    match e.kind() {
        ValidationErrorKind::Type {
            kind: TypeKind::Single(t),
        } => out.push(*t),
        ValidationErrorKind::Type {
            kind: TypeKind::Multiple(set),
        } => out.extend(set.iter()),
        ValidationErrorKind::AnyOf { context } => {
            for e in context.iter().flatten() {
                expected_types(e, out);
            }
        }
        _ => {}
    }
    out.dedup();
}

/// "found" text: the kind of node and, for scalars, the value (masked if credential-shaped).
fn found(node: &Node) -> String {
    let value = match &node.value {
        Value::Str(s) if !secrets::scan_assignment("value", s).is_empty() => {
            format!(" \"{}\"", secrets::mask(s))
        }
        Value::Str(s) => {
            let cut: String = s.chars().take(40).collect();
            let more = if cut.len() < s.len() { "..." } else { "" };
            format!(" {}", Json::from(format!("{cut}{more}")))
        }
        Value::Int(i) => format!(" {i}"),
        Value::Float(f) => format!(" {f}"),
        Value::Bool(b) => format!(" {b}"),
        Value::Seq(items) => format!(" of {} item(s)", items.len()),
        Value::Null | Value::Map(_) => String::new(),
    };
    format!("{}{value}", node.describe())
}

fn type_name(t: JsonType) -> &'static str {
    match t {
        JsonType::Null => "null",
        JsonType::Boolean => "a boolean",
        JsonType::Integer => "an integer",
        JsonType::Number => "a number",
        JsonType::String => "a string",
        JsonType::Array => "a sequence",
        JsonType::Object => "a mapping",
    }
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The schema of the value at an instance path.
fn schema_at(path: &[Step]) -> Option<&'static Json> {
    let mut schema = resolve(&SCHEMA);
    for step in path {
        let next = match step {
            Step::Key(k) => schema
                .get("properties")
                .and_then(|p| p.get(k.as_ref()))
                .or_else(|| schema.get("additionalProperties")),
            Step::Index(_) => schema.get("items"),
        };
        schema = resolve(next?);
    }
    Some(schema)
}

/// The field names the schema allows at an instance path.
fn known_fields(path: &[Step]) -> Vec<String> {
    schema_at(path)
        .and_then(|s| s.get("properties"))
        .and_then(Json::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The required field names at an instance path.
fn required(path: &[Step]) -> Vec<String> {
    schema_at(path)
        .and_then(|s| s.get("required"))
        .and_then(Json::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Json::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

fn parent_of(path: &[Step]) -> Vec<Step> {
    path[..path.len().saturating_sub(1)].to_vec()
}

/// The least value a schema accepts the type of: it stands in for a required field that is
/// missing or wrong, so that the rest of the request can still be checked.
fn placeholder(schema: &Json) -> Json {
    let schema = resolve(schema);
    if let Some(value) = schema.get("const").or_else(|| {
        schema
            .get("enum")
            .and_then(Json::as_array)
            .and_then(|options| options.first())
    }) {
        return value.clone();
    }
    let kind = match schema.get("type") {
        Some(Json::String(t)) => t.as_str(),
        Some(Json::Array(types)) => types
            .iter()
            .filter_map(Json::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "null",
    };
    match kind {
        "object" => {
            let properties = schema.get("properties");
            let fields = schema
                .get("required")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .filter_map(Json::as_str)
                .map(|name| {
                    let field = properties.and_then(|p| p.get(name));
                    (name.to_string(), field.map_or(Json::Null, placeholder))
                });
            Json::Object(fields.collect())
        }
        "array" => Json::Array(Vec::new()),
        "string" => Json::from(""),
        "integer" | "number" => schema.get("minimum").cloned().unwrap_or(Json::from(0)),
        "boolean" => Json::Bool(false),
        _ => Json::Null,
    }
}

/// Follow `$ref`s and the `anyOf`/`allOf` wrappers schemars puts around optional structs.
fn resolve(mut schema: &Json) -> &Json {
    for _ in 0..16 {
        if let Some(name) = schema
            .get("$ref")
            .and_then(Json::as_str)
            .and_then(|r| r.strip_prefix("#/definitions/"))
        {
            match SCHEMA.get("definitions").and_then(|d| d.get(name)) {
                Some(s) => schema = s,
                None => return schema,
            }
        } else if let Some(branch) = ["anyOf", "allOf", "oneOf"].iter().find_map(|k| {
            schema
                .get(*k)
                .and_then(Json::as_array)
                .and_then(|branches| {
                    branches
                        .iter()
                        .find(|b| b.get("type") != Some(&Json::from("null")))
                })
        }) {
            schema = branch;
        } else {
            return schema;
        }
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The request serde_json reads from `json` (the types, no bounds).
    fn from_json(json: &Json) -> ActionRequest {
        <ActionRequest as serde::Deserialize>::deserialize(json).expect("the tree was read")
    }

    /// The JSON of every bundled request, valid and invalid.
    fn requests() -> &'static [Json] {
        static REQUESTS: std::sync::OnceLock<Vec<Json>> = std::sync::OnceLock::new();
        REQUESTS.get_or_init(read_requests)
    }

    fn read_requests() -> Vec<Json> {
        let root = env!("CARGO_MANIFEST_DIR");
        let mut out = Vec::new();
        for dir in [
            "examples",
            "fixtures/requests/valid",
            "fixtures/requests/invalid",
        ] {
            for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|x| x == "yaml") {
                    let source = Source::new("r", std::fs::read_to_string(&path).unwrap());
                    if let Ok(mut stream) = yaml::parse(&source, yaml::Limits::REQUEST)
                        && !stream.documents.is_empty()
                    {
                        out.push(stream.documents.remove(0).to_json());
                    }
                }
            }
        }
        out
    }

    /// Every node of a JSON tree, as a path of keys and indexes.
    fn paths(value: &Json, at: Vec<Json>, out: &mut Vec<Vec<Json>>) {
        out.push(at.clone());
        match value {
            Json::Object(map) => map.iter().for_each(|(k, v)| {
                let mut p = at.clone();
                p.push(Json::String(k.clone()));
                paths(v, p, out);
            }),
            Json::Array(items) => items.iter().enumerate().for_each(|(i, v)| {
                let mut p = at.clone();
                p.push(Json::from(i));
                paths(v, p, out);
            }),
            _ => {}
        }
    }

    fn node<'a>(value: &'a mut Json, path: &[Json]) -> &'a mut Json {
        path.iter().fold(value, |v, step| match step {
            Json::String(k) => &mut v[k.as_str()],
            _ => &mut v[step.as_u64().unwrap() as usize],
        })
    }

    /// Values at and around the bounds requests have, and of every type.
    fn replacement() -> impl Strategy<Value = Json> {
        prop_oneof![
            prop::sample::select(vec![
                -1i64,
                0,
                1,
                2,
                999,
                1000,
                1001,
                1023,
                1024,
                1025,
                65535,
                65536,
                86400,
                86401,
                4_294_967_296,
            ])
            .prop_map(Json::from),
            Just(serde_json::json!(1.5)),
            Just(serde_json::json!(-0.5)),
            prop::sample::select(vec![
                "",
                "x",
                "A",
                "C",
                "auto",
                "Equal",
                "NoSchedule",
                "1Gi"
            ])
            .prop_map(Json::from),
            any::<bool>().prop_map(Json::from),
            Just(Json::Null),
            Just(serde_json::json!([])),
            Just(serde_json::json!([""])),
            Just(serde_json::json!({})),
            Just(serde_json::json!({"unknownField": 1})),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// The fast path may refuse what the schema admits (the validator then runs and finds
        /// nothing), never admit what the schema refuses.
        #[test]
        fn the_fast_path_admits_nothing_the_schema_refuses(
            pick in any::<prop::sample::Index>(),
            at in any::<prop::sample::Index>(),
            value in replacement(),
            delete in any::<bool>(),
        ) {
            let mut request = pick.get(requests()).clone();
            let mut all = Vec::new();
            paths(&request, Vec::new(), &mut all);
            let path = at.get(&all).clone();
            match path.split_last() {
                Some((Json::String(key), parent)) if delete => {
                    if let Json::Object(map) = node(&mut request, parent) {
                        map.remove(key);
                    }
                }
                _ => *node(&mut request, &path) = value,
            }
            let tree = yaml::Node::from_json(&request);
            if let Some(read) = well_formed(&tree) {
                let errors: Vec<String> =
                    VALIDATOR.iter_errors(&request).map(|e| e.to_string()).collect();
                prop_assert!(errors.is_empty(), "{request:#}: {errors:?}");
                // The tree is read as serde_json reads its JSON.
                prop_assert_eq!(format!("{read:?}"), format!("{:?}", from_json(&request)));
            }
        }
    }

    /// `LIST_FIELDS` are the schema's list properties.
    #[test]
    fn list_fields_are_the_schemas() {
        fn walk(schema: &Json, out: &mut std::collections::BTreeSet<String>) {
            match schema {
                Json::Object(map) => {
                    if let Some(Json::Object(properties)) = map.get("properties") {
                        for (name, p) in properties {
                            let array = |s: &Json| {
                                s["type"] == "array"
                                    || s["type"]
                                        .as_array()
                                        .is_some_and(|t| t.contains(&Json::from("array")))
                            };
                            let any = p["anyOf"].as_array().into_iter().flatten();
                            if array(p) || any.clone().any(array) {
                                out.insert(name.clone());
                            }
                        }
                    }
                    map.values().for_each(|v| walk(v, out));
                }
                Json::Array(items) => items.iter().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        let mut lists = std::collections::BTreeSet::new();
        walk(schema_json(), &mut lists);
        assert_eq!(lists.into_iter().collect::<Vec<_>>(), LIST_FIELDS);
    }

    #[test]
    fn every_bundled_request_gets_the_same_verdict_both_ways() {
        assert!(requests().len() > 50);
        for request in requests() {
            if let Some(read) = well_formed(&yaml::Node::from_json(request)) {
                assert!(VALIDATOR.is_valid(request), "{request:#}");
                assert_eq!(format!("{read:?}"), format!("{:?}", from_json(request)));
            } else {
                // Refused by the types: the schema refuses it too, or the types are stricter
                // (a fixture whose problem the checks report).
                let _ = VALIDATOR.is_valid(request);
            }
        }
    }
}
