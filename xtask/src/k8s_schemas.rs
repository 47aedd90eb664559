//! Generates strict, self-contained JSON schemas for the Kubernetes kinds tao-k8s emits or
//! lints, from the OpenAPI-derived types in `k8s-openapi` (Kubernetes 1.28). The checker does
//! not use them: they are the oracle its differential test compares it with.
//!
//! `k8s-openapi` renders each kind with schemars 0.8 as a draft-07 root schema whose
//! `definitions` already hold every referenced type, so no network or external `$ref` is
//! needed at validation time. Upstream schemas are permissive in ways the API server is not,
//! so a handful of fix-ups are applied afterwards (see [`fix_up`]); everything else is kept
//! verbatim so a diff against upstream stays small and explainable.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::Path;

use k8s_openapi_24::Resource;
use k8s_openapi_24::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi_24::api::batch::v1::Job;
use k8s_openapi_24::api::core::v1::{ConfigMap, Pod, Secret, Service};
use schemars::JsonSchema;
use schemars::r#gen::SchemaSettings;
use serde_json::{Map, Value, json};

/// Where the schemas live, relative to the repository root. The version segment must move
/// together with the feature this module is compiled under (`main.rs`).
pub const OUTPUT_DIR: &str = "schemas/k8s/v1.28";

/// One generated file: its name inside [`OUTPUT_DIR`] and its exact bytes.
pub struct GeneratedFile {
    pub name: String,
    pub contents: String,
}

/// Definition names (schemars `schema_name`s) whose upstream schema is replaced wholesale.
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";

/// The pattern apimachinery's own CRD generator (controller-gen) emits for `resource.Quantity`
/// string values; it mirrors the Go parser, so "8", "64Gi", "500m" and "1e3" pass while
/// "8 GB" or "64gb" are rejected just as the API server would reject them.
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// Standard (padded) base64 as Go's `encoding/json` decodes `[]byte`, which also skips
/// `\r` and `\n` anywhere in the input (so YAML block scalars with wrapped base64 pass).
const BASE64_PATTERN: &str = r"^(?:(?:[\r\n]*[A-Za-z0-9+/]){4})*(?:(?:[\r\n]*[A-Za-z0-9+/]){2}[\r\n]*=[\r\n]*=|(?:[\r\n]*[A-Za-z0-9+/]){3}[\r\n]*=)?[\r\n]*$";

/// Generates every schema file, in a fixed order, fully fixed up and serialised.
pub fn generate_all() -> Result<Vec<GeneratedFile>, serde_json::Error> {
    [
        generate::<Job>(),
        generate::<Pod>(),
        generate::<Service>(),
        generate::<ConfigMap>(),
        generate::<Secret>(),
        generate::<Deployment>(),
        generate::<StatefulSet>(),
    ]
    .into_iter()
    .collect()
}

/// Builds the schema for one kind. The file name is the lowercase kind (as the schemas
/// README documents) so a loader can find a manifest's schema from its `kind` alone.
fn generate<K: JsonSchema + Resource>() -> Result<GeneratedFile, serde_json::Error> {
    let root = SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<K>();
    let mut schema = serde_json::to_value(root)?;
    fix_up(&mut schema, K::API_VERSION, K::KIND);
    // Sorting explicitly keeps the output byte-stable even if feature unification ever turns
    // on serde_json's `preserve_order` for this build.
    schema.sort_all_objects();
    let mut contents = serde_json::to_string_pretty(&schema)?;
    contents.push('\n');
    Ok(GeneratedFile {
        name: format!("{}.json", K::KIND.to_ascii_lowercase()),
        contents,
    })
}

/// Applies the tao-k8s deviations from upstream to a generated root schema:
///
/// 1. Pins `apiVersion`/`kind` to this kind's values and requires them with `metadata`,
///    because a manifest without them cannot be applied and a wrong one is a different kind.
/// 2. Replaces `Quantity` (upstream: string only), `IntOrString` (upstream: no type at
///    all, so anything passes) and `Time` (upstream: no null) with what the API server
///    actually decodes.
/// 3. Gives `format: byte` strings (Secret `data`, ConfigMap `binaryData`) a base64 pattern,
///    since validators ignore that OpenAPI-only format and the API server rejects bad base64.
/// 4. Drops `description` annotations (see below).
/// 5. Closes every object schema that lists `properties` but says nothing about
///    `additionalProperties`, matching `kubectl apply --validate=strict`. Schemas that
///    already declare `additionalProperties` (maps such as labels or resource limits) and
///    property-less objects (free-form `RawExtension`, `FieldsV1`) are left open.
pub fn fix_up(schema: &mut Value, api_version: &str, kind: &str) {
    pin_type_meta(schema, api_version, kind);
    if let Some(Value::Object(definitions)) = schema.get_mut("definitions") {
        for (name, definition) in definitions.iter_mut() {
            let replacement = match name.as_str() {
                QUANTITY => json!({
                    // A YAML/JSON number (`cpu: 2`, `memory: 1e9`) is parsed by the
                    // API server exactly like its string form, so both are accepted.
                    "type": ["string", "number"],
                    "pattern": QUANTITY_PATTERN,
                    "x-kubernetes-int-or-string": true,
                }),
                INT_OR_STRING => json!({
                    "type": ["integer", "string"],
                    "x-kubernetes-int-or-string": true,
                }),
                // `metav1.Time` decodes JSON null as the zero time, and
                // `kubectl create --dry-run=client -o yaml` emits exactly that
                // (`creationTimestamp: null`), so null must pass.
                TIME => json!({
                    "type": ["string", "null"],
                    "format": "date-time",
                }),
                _ => continue,
            };
            *definition = replacement;
        }
    }
    visit_schemas(schema, &mut |object| {
        // These schemas validate; they do not document (that is `kubectl explain`).
        // Descriptions are four fifths of the text and most of the time a validator
        // takes to compile.
        if object.get("description").is_some_and(Value::is_string) {
            object.remove("description");
        }
        if object.get("format").and_then(Value::as_str) == Some("byte") {
            object.insert("pattern".to_owned(), BASE64_PATTERN.into());
        }
        if object.contains_key("properties") && !object.contains_key("additionalProperties") {
            object.insert("additionalProperties".to_owned(), Value::Bool(false));
        }
    });
}

/// Constrains the root's `apiVersion` and `kind` to one value each and makes them required
/// alongside `metadata`; other `required` lists are left exactly as upstream has them.
fn pin_type_meta(schema: &mut Value, api_version: &str, kind: &str) {
    for (field, value) in [("apiVersion", api_version), ("kind", kind)] {
        schema["properties"][field]["enum"] = json!([value]);
    }
    let mut required: BTreeSet<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    required.extend(["apiVersion", "kind", "metadata"].map(str::to_owned));
    schema["required"] = json!(required);
}

/// Calls `f` on every schema object reachable from `schema` through JSON Schema keywords
/// (not through arbitrary JSON), so a Kubernetes field that happens to be named
/// `properties` or `items` is never mistaken for the keyword. `f` runs before the walk
/// descends, and sees the real definitions as well as any `allOf`/`anyOf` wrappers schemars
/// puts around a `$ref` that carries a description.
fn visit_schemas(schema: &mut Value, f: &mut impl FnMut(&mut Map<String, Value>)) {
    let Value::Object(object) = schema else {
        return; // `true`/`false` schemas have nothing to fix.
    };
    f(object);
    for (keyword, child) in object.iter_mut() {
        match (keyword.as_str(), child) {
            ("properties" | "patternProperties" | "definitions", Value::Object(map)) => {
                map.values_mut().for_each(|s| visit_schemas(s, f));
            }
            ("allOf" | "anyOf" | "oneOf" | "items", Value::Array(list)) => {
                list.iter_mut().for_each(|s| visit_schemas(s, f));
            }
            (
                "additionalProperties"
                | "items"
                | "additionalItems"
                | "not"
                | "contains"
                | "propertyNames"
                | "if"
                | "then"
                | "else",
                child,
            ) => visit_schemas(child, f),
            _ => {}
        }
    }
}

/// Writes every generated file, and removes `*.json` files that are no longer generated so
/// that a later `--check` (which reports them) passes after a regeneration.
/// Paths are reported relative to the repository root (`root`) to keep logs short.
pub fn write(root: &Path, files: &[GeneratedFile]) -> io::Result<bool> {
    let dir = root.join(OUTPUT_DIR);
    fs::create_dir_all(&dir)?;
    for file in files {
        let path = dir.join(&file.name);
        if fs::read_to_string(&path).ok().as_deref() != Some(file.contents.as_str()) {
            fs::write(&path, &file.contents)?;
            println!("wrote {OUTPUT_DIR}/{}", file.name);
        } else {
            println!("unchanged {OUTPUT_DIR}/{}", file.name);
        }
    }
    for stale in stale_files(&dir, files)? {
        fs::remove_file(dir.join(&stale))?;
        println!("removed {OUTPUT_DIR}/{stale}");
    }
    Ok(true)
}

/// Compares the files on disk with a fresh generation and reports every difference;
/// returns `Ok(false)` when anything is out of date so the caller can exit non-zero.
pub fn check(root: &Path, files: &[GeneratedFile]) -> io::Result<bool> {
    let dir = root.join(OUTPUT_DIR);
    let mut problems = Vec::new();
    for file in files {
        match fs::read_to_string(dir.join(&file.name)) {
            Ok(on_disk) if on_disk == file.contents => {}
            Ok(_) => problems.push(format!("differs: {OUTPUT_DIR}/{}", file.name)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                problems.push(format!("missing: {OUTPUT_DIR}/{}", file.name));
            }
            Err(err) => return Err(err),
        }
    }
    if dir.is_dir() {
        for stale in stale_files(&dir, files)? {
            problems.push(format!("not generated: {OUTPUT_DIR}/{stale}"));
        }
    }
    if problems.is_empty() {
        println!("{} schemas in {OUTPUT_DIR} are up to date", files.len());
        return Ok(true);
    }
    for problem in &problems {
        eprintln!("{problem}");
    }
    eprintln!(
        "schemas are out of date; run `cargo run -p xtask -- k8s-schemas` and commit the result"
    );
    Ok(false)
}

/// `*.json` files in `dir` that the generator does not produce (README.md is hand-written
/// and deliberately not considered).
fn stale_files(dir: &Path, files: &[GeneratedFile]) -> io::Result<Vec<String>> {
    let mut stale = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") && !files.iter().any(|f| f.name == name) {
            stale.push(name);
        }
    }
    stale.sort();
    Ok(stale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_of(name: &str) -> Value {
        let files = generate_all().expect("generation succeeds");
        let file = files
            .iter()
            .find(|f| f.name == name)
            .expect("file is generated");
        serde_json::from_str(&file.contents).expect("output is JSON")
    }

    #[test]
    fn generates_one_file_per_kind_with_trailing_newline() {
        let files = generate_all().unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "job.json",
                "pod.json",
                "service.json",
                "configmap.json",
                "secret.json",
                "deployment.json",
                "statefulset.json"
            ]
        );
        assert!(files.iter().all(|f| f.contents.ends_with("}\n")));
    }

    #[test]
    fn pins_type_meta_at_the_root() {
        let job = schema_of("job.json");
        assert_eq!(job["properties"]["apiVersion"]["enum"], json!(["batch/v1"]));
        assert_eq!(job["properties"]["kind"]["enum"], json!(["Job"]));
        assert_eq!(job["required"], json!(["apiVersion", "kind", "metadata"]));
        assert_eq!(job["additionalProperties"], json!(false));
    }

    #[test]
    fn closes_nested_objects_but_not_maps() {
        let job = schema_of("job.json");
        let defs = &job["definitions"];
        let container = &defs["io.k8s.api.core.v1.Container"];
        assert_eq!(container["additionalProperties"], json!(false));
        let limits = &defs["io.k8s.api.core.v1.ResourceRequirements"]["properties"]["limits"];
        assert_eq!(
            limits["additionalProperties"]["$ref"],
            json!(format!("#/definitions/{QUANTITY}"))
        );
        let labels =
            &defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["labels"];
        assert_eq!(labels["additionalProperties"]["type"], json!("string"));
    }

    #[test]
    fn fixes_quantity_int_or_string_and_bytes() {
        let job = schema_of("job.json");
        assert_eq!(
            job["definitions"][QUANTITY]["type"],
            json!(["string", "number"])
        );
        let service = schema_of("service.json");
        assert_eq!(
            service["definitions"][INT_OR_STRING]["type"],
            json!(["integer", "string"])
        );
        assert_eq!(job["definitions"][TIME]["type"], json!(["string", "null"]));
        let secret = schema_of("secret.json");
        assert_eq!(
            secret["properties"]["data"]["additionalProperties"]["pattern"],
            json!(BASE64_PATTERN)
        );
    }

    #[test]
    fn walker_ignores_fields_named_like_keywords() {
        // A *field* called "properties" is a schema, not a keyword map, and must be closed
        // itself rather than having its children treated as schemas.
        let mut schema = json!({
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "properties": {"type": "object", "properties": {"x": {"type": "string"}}},
                "wrapped": {"allOf": [{"$ref": "#/definitions/Inner"}], "description": "d"}
            },
            "definitions": {"Inner": {"type": "object", "properties": {"y": {}}}}
        });
        fix_up(&mut schema, "v1", "Thing");
        assert_eq!(
            schema["properties"]["properties"]["additionalProperties"],
            json!(false)
        );
        assert_eq!(
            schema["definitions"]["Inner"]["additionalProperties"],
            json!(false)
        );
        assert!(
            schema["properties"]["wrapped"]
                .get("additionalProperties")
                .is_none()
        );
    }
}
