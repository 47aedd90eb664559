//! `tao-k8s krm`: a KRM function (kpt, kustomize exec generator or transformer). It reads a
//! `ResourceList` (config.kubernetes.io/v1) on stdin and writes one on stdout: every
//! `ActionRequest` item is replaced by its verified objects, every other item passes through,
//! and `results` carry the diagnostics (severity, message, resourceRef, field, file). With
//! `--lint` it is a validator: items pass through unchanged and the lint's findings on the
//! Kubernetes objects among them become results. Exit 1 when a result is an error.

use super::report::Reporter;
use super::report::redactor_for;
use super::{REFUSED, emit, read_named, read_source};
use serde_json::{Map, Value as Json, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tao_k8s::diag::{Diagnostic, Redactor, Severity};
use tao_k8s::kube::KubeVersion;
use tao_k8s::plan::{Options, SpecReader};
use tao_k8s::render::{Templates, yaml_json};
use tao_k8s::source::Source;

/// Annotations the orchestrators add to every item (where it came from); not part of a
/// request, so taken off before it is compiled.
const BOOKKEEPING: &[&str] = &[
    "config.kubernetes.io/",
    "internal.config.kubernetes.io/",
    "kustomize.config.k8s.io/",
    "config.k8s.io/",
];

pub(crate) fn run(
    out: &Reporter,
    lint: bool,
    templates: Option<&Path>,
    spec_root: Option<PathBuf>,
) -> ExitCode {
    let owned = match super::render::read_templates(out, templates) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let templates = owned.as_ref().unwrap_or(Templates::embedded());
    let input = match read_source(Path::new("-")) {
        Ok(source) => source,
        Err(e) => return e.report(out),
    };
    let stream = match resource_list(&input) {
        Ok(stream) => stream,
        Err(message) => {
            // Not a ResourceList: nothing to answer with, a usage error.
            eprintln!("error: {message}");
            return ExitCode::from(super::USAGE);
        }
    };
    let document = &stream.documents[0];
    let list = header(document);
    let mut results: Vec<Json> = Vec::new();
    let opts = match options(&list) {
        Ok(opts) => opts,
        Err(message) => {
            results.push(json!({"message": message, "severity": "error", "field": {"path": "functionConfig.data"}}));
            return answer(&list, String::new(), results);
        }
    };
    let nodes: &[tao_k8s::yaml::Node] = match document.entry("items").map(|(_, v)| &v.value) {
        Some(tao_k8s::yaml::Value::Seq(items)) => items,
        _ => &[],
    };
    // One item at a time: its JSON, and then what it becomes, written out before the next.
    let mut output = String::new();
    for (index, node) in nodes.iter().enumerate() {
        let item = &node.to_json();
        let own = || Item {
            text: item_text(input.text(), node.span.start..extent(node)),
            object: item.clone(),
        };
        if let Err(why) = object_shape(item) {
            // Passed through as it came, and the run fails: an orchestrator would choke on it.
            results.push(json!({
                "message": format!("items[{index}] is not a Kubernetes object: {why}"),
                "severity": "error",
                "field": {"path": format!("items[{index}]")},
            }));
            output.push_str(&listed(&own()));
            continue;
        }
        if lint || !is_request(item) {
            if lint {
                results.extend(lint_item(item, index, templates));
            }
            output.push_str(&listed(&own()));
            continue;
        }
        let request = (item, index);
        let found = compile_item(
            out,
            request,
            spec_root.as_deref(),
            &opts,
            templates,
            &mut output,
        );
        results.extend(found);
    }
    answer(&list, output, results)
}

/// Compile the request item `items[index]`, whose files may also be in `spec_root`: its
/// verified objects are appended to `output`, one listed item each; its diagnostics are framed
/// on stderr for people and returned as results.
fn compile_item(
    out: &Reporter,
    (item, index): (&Json, usize),
    spec_root: Option<&Path>,
    opts: &Options,
    templates: &Templates,
    output: &mut String,
) -> Vec<Json> {
    let (source, file) = request_source(item, index);
    let mut opts = opts.clone();
    // The annotation says where the item came from, but it is part of the input: the files
    // a request names stay inside the working directory (or --spec-root) wherever it
    // points.
    let base = file
        .as_ref()
        .and_then(|f| Path::new(&f.0).parent().map(Path::to_path_buf))
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    let root = spec_root.map(Path::to_path_buf);
    opts.read_spec = Some(SpecReader::new(move |name| {
        let roots: Vec<&Path> = std::iter::once(Path::new("."))
            .chain(root.as_deref())
            .collect();
        read_named(&base, name, &roots)
    }));
    let redactor = redactor_for(&source);
    match tao_k8s::compile(&source, &opts, templates) {
        Ok(compiled) => {
            out.diagnostics(Some(&source), &compiled.warnings);
            // The verified text of each object: one document of the stream each.
            let documents = compiled.yaml.split("---\n").filter(|d| !d.is_empty());
            for (text, object) in documents.zip(&compiled.documents) {
                output.push_str(&listed(&Item {
                    text: text.to_string(),
                    object: object.to_json(),
                }));
            }
            compiled
                .warnings
                .iter()
                .map(|d| result(d, item, &file, &redactor))
                .collect()
        }
        Err(failure) => {
            // Framed on stderr for people; as results for the orchestrator.
            let diags = failure.diagnostics();
            out.diagnostics(Some(&source), diags);
            diags
                .iter()
                .map(|d| result(d, item, &file, &redactor))
                .collect()
        }
    }
}

/// Print the answering ResourceList, its items already listed; exit 1 when a result is an
/// error.
fn answer(list: &Map<String, Json>, items: String, results: Vec<Json>) -> ExitCode {
    let mut text = String::from("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n");
    if items.is_empty() {
        text.push_str("items: []\n");
    } else {
        text.push_str("items:\n");
        text.push_str(&items);
    }
    if let Some(config) = list.get("functionConfig") {
        text.push_str(&format!("functionConfig: {}\n", yaml_json(config)));
    }
    let failed = results.iter().any(|r| r["severity"] == "error");
    if !results.is_empty() {
        text.push_str("results:\n");
        for r in &results {
            text.push_str(&format!("  - {}\n", yaml_json(r)));
        }
    }
    let code = emit(&text);
    if code != ExitCode::SUCCESS {
        return code;
    }
    ExitCode::from(if failed { REFUSED } else { 0 })
}

/// An item as an entry of the `items` list: its block text indented under `- `, unless that
/// does not read back as the same object (a flow item spread over lines, say), then as one
/// line of flow JSON, which always does.
fn listed(item: &Item) -> String {
    let mut block = String::new();
    for (i, line) in item.text.lines().enumerate() {
        let indent = if i == 0 {
            "  - "
        } else if line.is_empty() {
            ""
        } else {
            "    "
        };
        block.push_str(indent);
        block.push_str(line);
        block.push('\n');
    }
    let wrapped = format!("items:\n{block}");
    let same = tao_k8s::yaml::parse(
        &Source::new("item", wrapped.as_str()),
        tao_k8s::yaml::Limits::default(),
    )
    .ok()
    .and_then(|s| s.documents.first().map(|d| d.to_json()))
    .is_some_and(|read| {
        read["items"][0] == item.object && read["items"].as_array().is_some_and(|a| a.len() == 1)
    });
    if same {
        block
    } else {
        format!("  - {}\n", yaml_json(&item.object))
    }
}

/// The ResourceList on stdin, parsed and checked: one document, a mapping of the right
/// `apiVersion` and `kind`, whose `items` (if any) is a list.
fn resource_list(input: &Source) -> Result<tao_k8s::yaml::Stream, String> {
    let stream = tao_k8s::yaml::parse(input, tao_k8s::yaml::Limits::default())
        .map_err(|e| format!("stdin is not YAML: {}", e.message))?;
    let [document] = stream.documents.as_slice() else {
        return Err(format!(
            "stdin holds {} documents: a KRM function reads one ResourceList",
            stream.documents.len()
        ));
    };
    if !matches!(document.value, tao_k8s::yaml::Value::Map(_)) {
        return Err("stdin is not a ResourceList: not a mapping".into());
    }
    let list = header(document);
    let kind = list.get("kind").and_then(Json::as_str);
    let api = list.get("apiVersion").and_then(Json::as_str);
    if kind != Some("ResourceList")
        || !matches!(
            api,
            Some("config.kubernetes.io/v1" | "config.kubernetes.io/v1alpha1")
        )
    {
        return Err(format!(
            "stdin is not a ResourceList: expected `apiVersion: config.kubernetes.io/v1` and `kind: ResourceList`, found {} {}",
            api.unwrap_or("no apiVersion"),
            kind.unwrap_or("no kind")
        ));
    }
    let items = document.entry("items").map(|(_, v)| &v.value);
    if items.is_some_and(|v| !matches!(v, tao_k8s::yaml::Value::Seq(_))) {
        return Err("the ResourceList's `items` is not a list".into());
    }
    Ok(stream)
}

/// The ResourceList's fields but `items`, as JSON: the items are read one at a time.
fn header(document: &tao_k8s::yaml::Node) -> Map<String, Json> {
    let mut list = Map::new();
    if let tao_k8s::yaml::Value::Map(entries) = &document.value {
        for (key, value) in entries {
            if let tao_k8s::yaml::Value::Str(key) = &key.value
                && key != "items"
            {
                list.insert(key.clone(), value.to_json());
            }
        }
    }
    list
}

/// Where a node's text ends: a collection's own span may cover only its start.
fn extent(node: &tao_k8s::yaml::Node) -> usize {
    use tao_k8s::yaml::Value;
    let inner = match &node.value {
        Value::Seq(items) => items.iter().map(extent).max(),
        Value::Map(entries) => entries.iter().map(|(k, v)| extent(k).max(extent(v))).max(),
        _ => None,
    };
    inner.unwrap_or(0).max(node.span.end)
}

/// The text of an item at `span`, from the start of its first line (the comments above it
/// and its sequence entry's `- ` included, the `- ` blanked) to the end of its last, moved
/// left to its column.
fn item_text(text: &str, span: tao_k8s::source::Span) -> String {
    let line_start = |at: usize| text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = span.end.max(span.start);
    let end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let own = line_start(span.start);
    let column = span.start - own;
    let mut start = own;
    if text[own..span.start].trim().is_empty() {
        // The node begins its line: its comments and its `- ` may stand on the lines above.
        while start > 0 {
            let above = line_start(start - 1);
            let line = text[above..start - 1].trim_start();
            if line.starts_with('#') {
                start = above;
                continue;
            }
            if line == "-" || line.starts_with("- #") {
                start = above;
            }
            break;
        }
    }
    let mut out = String::new();
    for (i, line) in text[start..end].lines().enumerate() {
        let blank = line.len() - line.trim_start_matches(' ').len();
        let line = if i == 0 && line[blank..].starts_with('-') && blank < column {
            // The entry's `- `: blanked, so that the item's lines all stand at its column.
            let rest = &line[blank + 1..];
            let rest_blank = rest.len() - rest.trim_start_matches(' ').len();
            let indent = (blank + 1 + rest_blank).saturating_sub(column);
            format!("{}{}", " ".repeat(indent), &rest[rest_blank..])
        } else {
            line[blank.min(column)..].to_string()
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// One output item: its text (block YAML at column 0) and the object it must read back as.
struct Item {
    text: String,
    object: Json,
}

/// Options from `functionConfig.data` (a ConfigMap): `namespace` and `kubeVersion`.
fn options(list: &Map<String, Json>) -> Result<Options, String> {
    let mut opts = super::options(None);
    let Some(config) = mapping(
        list.get("functionConfig"),
        "functionConfig",
        "a ConfigMap (a mapping)",
    )?
    else {
        return Ok(opts);
    };
    let Some(data) = mapping(
        config.get("data"),
        "functionConfig.data",
        "a mapping of strings",
    )?
    else {
        return Ok(opts);
    };
    for (key, value) in data {
        let text = value
            .as_str()
            .ok_or_else(|| format!("functionConfig.data.{key} is not a string (found {value})"))?;
        match key.as_str() {
            "namespace" => {
                // As kustomize's namespace transformer: it replaces the request's.
                opts.namespace = Some(text.to_string());
                opts.namespace_overrides = true;
            }
            "kubeVersion" => {
                let version: KubeVersion = text
                    .parse()
                    .map_err(|e| format!("functionConfig.data.kubeVersion: {e}"))?;
                if !version.is_supported() {
                    return Err(format!(
                        "functionConfig.data.kubeVersion: Kubernetes {version} is not supported: the supported versions are {}",
                        KubeVersion::supported_range()
                    ));
                }
                opts.kube_version = version;
            }
            "target" => {
                opts.workload = match text {
                    "indexed-job" => tao_k8s::plan::Workload::IndexedJob,
                    "jobset" => tao_k8s::plan::Workload::JobSet,
                    _ => {
                        return Err(format!(
                            "functionConfig.data.target is `{text}`: expected `indexed-job` or `jobset`"
                        ));
                    }
                };
            }
            other => {
                return Err(format!(
                    "functionConfig.data.{other} is no option: the options are `namespace`, `kubeVersion` and `target`"
                ));
            }
        }
    }
    Ok(opts)
}

/// Why an item is not an object an orchestrator handles: a mapping with a string
/// `apiVersion` and `kind`.
fn object_shape(item: &Json) -> Result<(), String> {
    let Json::Object(map) = item else {
        return Err(format!("expected a mapping, found {}", kind_of(item)));
    };
    for key in ["apiVersion", "kind"] {
        match map.get(key) {
            Some(Json::String(s)) if !s.is_empty() => {}
            Some(other) => return Err(format!("`{key}` is {}, not a string", kind_of(other))),
            None => return Err(format!("no `{key}`")),
        }
    }
    Ok(())
}

/// `value` as a mapping, `None` when it is absent or null; anything else is refused, naming
/// `what` and what was `expected`.
fn mapping<'a>(
    value: Option<&'a Json>,
    what: &str,
    expected: &str,
) -> Result<Option<&'a Map<String, Json>>, String> {
    match value {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Object(map)) => Ok(Some(map)),
        Some(other) => Err(format!("{what} is {}: expected {expected}", kind_of(other))),
    }
}

/// A JSON value's type, as a message names it.
fn kind_of(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "a mapping",
    }
}

fn is_request(item: &Json) -> bool {
    item["kind"] == "ActionRequest"
}

/// The file an item came from, and its index there, from the orchestrator's annotations.
type File = Option<(String, Option<String>)>;

fn file_of(item: &Json) -> File {
    let annotations = &item["metadata"]["annotations"];
    let get = |keys: [&str; 2]| {
        keys.iter()
            .find_map(|k| annotations[*k].as_str())
            .map(String::from)
    };
    let path = get([
        "internal.config.kubernetes.io/path",
        "config.kubernetes.io/path",
    ])?;
    let index = get([
        "internal.config.kubernetes.io/index",
        "config.kubernetes.io/index",
    ]);
    Some((path, index))
}

/// An ActionRequest item as a request source: the orchestrator's annotations taken off, laid
/// out as YAML (the diagnostics' frames show it), named after its file and index.
fn request_source(item: &Json, index: usize) -> (Source, File) {
    let file = file_of(item);
    let mut request = item.clone();
    if let Some(metadata) = request.get_mut("metadata").and_then(Json::as_object_mut)
        && let Some(Json::Object(annotations)) = metadata.get_mut("annotations")
    {
        annotations.retain(|k, _| !BOOKKEEPING.iter().any(|p| k.starts_with(p)));
        if annotations.is_empty() {
            metadata.remove("annotations");
        }
    }
    let name = match &file {
        Some((path, _)) => format!("ResourceList items[{index}] ({path})"),
        None => format!("ResourceList items[{index}]"),
    };
    let text = serde_saphyr::to_string(&request).unwrap_or_else(|_| yaml_json(&request));
    (Source::new(name, text), file)
}

/// One diagnostic as a KRM result: masked like every shown diagnostic.
fn result(d: &Diagnostic, item: &Json, file: &File, redactor: &Redactor) -> Json {
    let d = redactor.diagnostic(d);
    let severity = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "info",
    };
    let mut message = format!("{}: {}", d.code, d.message);
    if let Some(help) = &d.help {
        message.push_str(&format!(" (help: {help})"));
    }
    let mut r = json!({
        "message": message,
        "severity": severity,
        "tags": {"code": d.code},
    });
    // The reference echoes the input too: masked like the message.
    let metadata = &item["metadata"];
    let shown = |v: &Json| match v.as_str() {
        Some(s) => Json::from(redactor.text(s)),
        None => v.clone(),
    };
    let mut reference = json!({
        "apiVersion": shown(&item["apiVersion"]),
        "kind": shown(&item["kind"]),
        "name": shown(&metadata["name"]),
    });
    if let Some(ns) = metadata["namespace"].as_str() {
        reference["namespace"] = redactor.text(ns).into();
    }
    r["resourceRef"] = reference;
    if let Some(path) = &d.path {
        r["field"] = json!({ "path": path });
    }
    if let Some((path, index)) = file {
        r["file"] = json!({ "path": path });
        if let Some(i) = index.as_ref().and_then(|i| i.parse::<u64>().ok()) {
            r["file"]["index"] = i.into();
        }
    }
    r
}

/// `--lint`: the lint's findings on one item (a Kubernetes object; an ActionRequest is checked
/// by compiling it), as results.
fn lint_item(item: &Json, index: usize, templates: &Templates) -> Vec<Json> {
    let file = file_of(item);
    if is_request(item) {
        let (source, _) = request_source(item, index);
        let redactor = redactor_for(&source);
        let opts = super::options(None);
        let diags = match tao_k8s::compile(&source, &opts, templates) {
            Ok(c) => c.warnings,
            Err(f) => f.diagnostics().to_vec(),
        };
        return diags
            .iter()
            .map(|d| result(d, item, &file, &redactor))
            .collect();
    }
    let mut object = item.clone();
    if let Some(Json::Object(annotations)) = object
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        annotations.retain(|k, _| !BOOKKEEPING.iter().any(|p| k.starts_with(p)));
    }
    let text = serde_saphyr::to_string(&object).unwrap_or_else(|_| yaml_json(&object));
    let source = Source::new(format!("ResourceList items[{index}]"), text);
    let redactor = redactor_for(&source);
    let selection = tao_k8s::lint::Selection::default();
    match tao_k8s::lint::lint(&source, &selection) {
        Ok(reported) => reported
            .iter()
            .map(|r| result(&r.diagnostic, item, &file, &redactor))
            .collect(),
        // It was YAML a moment ago (the ResourceList parsed): re-laid out, it still is.
        Err(e) => vec![json!({"message": format!("not YAML: {}", e.message), "severity": "error"})],
    }
}
