//! The commands that compile requests: `render` (one request or many: files, `-` and folders,
//! into one stream or one bundle folder each), `stage` and `script` (one request). Each
//! request is read, compiled and reported on its own, with its file named in every
//! diagnostic; nothing is printed or written unless every request compiled (or
//! `--keep-going`: the good ones, and still exit 1).

use super::input::{self, create_dir, stays_inside};
use super::report::Reporter;
use super::{
    Format, REFUSED, USAGE, emit, emit_with, make_executable, read_named, read_source, write_atomic,
};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tao_k8s::plan::{Options, SpecReader};
use tao_k8s::render::Templates;
use tao_k8s::source::Source;
use tao_k8s::yaml;
use tao_k8s::{Bundle, Compiled, Failure};

/// What a compiling command produces.
pub(crate) enum Output {
    /// `render`: the verified objects on stdout.
    Manifests(Format),
    /// `stage`: the staging map and the materialised spec, into a directory.
    Stage(PathBuf),
    /// `script`: the driver script on stdout.
    Script,
    /// `render --out`: the whole bundle, into a directory (one folder per request when there
    /// are several).
    Bundle(PathBuf),
}

/// Files a command reads or writes besides the requests and their output, and how it treats
/// a refused request.
#[derive(Default)]
pub(crate) struct Files {
    pub staging_map: Option<PathBuf>,
    pub staged_config: Option<PathBuf>,
    /// `--spec-root`: a folder a request may name files in, besides its own.
    pub spec_root: Option<PathBuf>,
    /// `--emit-unverified`: print what the templates wrote when it fails verification.
    pub emit_unverified: bool,
    /// `--keep-going`: a refused request does not refuse the others.
    pub keep_going: bool,
}

impl Files {
    /// Only `--spec-root`: the one of these that commands other than `render` take.
    pub(crate) fn with_spec_root(spec_root: Option<PathBuf>) -> Files {
        Files {
            spec_root,
            ..Files::default()
        }
    }
}

/// The requests named on the command line: files as given, `-` (stdin, once), and the
/// `*.yaml`, `*.yml` and `*.json` files directly inside each folder, sorted by name (not its
/// subfolders: a folder of requests is flat, and a request's spec files may sit beside it in
/// one). `many` is true when a folder was named or more than one request: then every request
/// gets a folder of its own under `--out`.
pub(crate) struct Requests {
    pub paths: Vec<PathBuf>,
    pub many: bool,
}

impl Requests {
    pub(crate) fn expand(args: &[PathBuf]) -> Result<Requests, String> {
        let mut paths = Vec::new();
        let mut folder = false;
        for arg in args {
            if arg.as_os_str() != "-" && arg.is_dir() {
                folder = true;
                let mut found = Vec::new();
                // A link that leaves the folder is refused: its target is not the folder's.
                for path in input::list_files(arg, true)? {
                    let request = path
                        .extension()
                        .is_some_and(|x| x == "yaml" || x == "yml" || x == "json");
                    if request {
                        found.push(path);
                    }
                }
                if found.is_empty() {
                    return Err(format!(
                        "`{}` holds no request (*.yaml, *.yml or *.json)",
                        arg.display()
                    ));
                }
                paths.extend(found);
            } else {
                paths.push(arg.clone());
            }
        }
        if paths.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
            return Err("`-` (stdin) can be read once".into());
        }
        let many = folder || paths.len() > 1;
        Ok(Requests { paths, many })
    }

    /// One request, as `stage` and `script` take.
    pub(crate) fn one(path: PathBuf) -> Requests {
        Requests {
            paths: vec![path],
            many: false,
        }
    }

    /// The folder under `--out DIR` of each request: its file stem (`stdin` for `-`); two
    /// requests with one stem are refused before anything is compiled.
    fn folders(&self, dir: &Path) -> Result<Vec<PathBuf>, String> {
        if !self.many {
            return Ok(vec![dir.to_path_buf()]);
        }
        let mut seen: BTreeMap<String, &Path> = BTreeMap::new();
        let mut out = Vec::new();
        for path in &self.paths {
            let stem = checked_stem(path, dir)?;
            if let Some(other) = seen.insert(stem.clone(), path) {
                return Err(format!(
                    "`{}` and `{}` would both be written to `{}`: rename one",
                    other.display(),
                    path.display(),
                    dir.join(&stem).display()
                ));
            }
            out.push(dir.join(stem));
        }
        Ok(out)
    }
}

/// The request at `path`, with the reader of the files it names (relative to its folder, or
/// the working directory for stdin) and the staged config set in `opts`.
pub(crate) fn read_request(
    out: &Reporter,
    path: &Path,
    opts: &mut Options,
    files: &Files,
) -> Result<Source, ExitCode> {
    let source = read_source(path).map_err(|e| e.report(out))?;
    // A spec file is read only if the request is in config mode; a file that cannot be read
    // is reported with the request's other problems.
    let base = match path.parent() {
        Some(p) if path != Path::new("-") && !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let root = files.spec_root.clone();
    opts.read_spec = Some(SpecReader::new(move |name| {
        let roots: Vec<&Path> = std::iter::once(base.as_path())
            .chain(root.as_deref())
            .collect();
        read_named(&base, name, &roots)
    }));
    if let Some(staged) = &files.staged_config {
        let staged = read_source(staged).map_err(|e| e.report(out))?;
        opts.staged_config = Some(staged.text().to_string());
    }
    Ok(source)
}

/// A template author's templates (`None`: the embedded ones), read and compiled once.
pub(crate) fn read_templates(
    out: &Reporter,
    dir: Option<&Path>,
) -> Result<Option<Templates>, ExitCode> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    let files = template_files(dir).map_err(|message| out.io_error(&message))?;
    match Templates::new(&files) {
        Ok(t) => Ok(Some(t)),
        Err(d) => {
            out.diagnostics(None, &[d]);
            Err(ExitCode::from(REFUSED))
        }
    }
}

/// Report a refused request: its diagnostics (framed in the request, or in the rendered
/// stream for a template's mistake), and the closing line naming its file. With
/// `--emit-unverified`, the rendered stream on stdout.
pub(crate) fn report_refusal(out: &Reporter, source: &Source, failure: Failure, files: &Files) {
    match failure {
        Failure::Request(diags) => {
            out.diagnostics(Some(source), &diags);
            out.summary(&diags, source.name());
        }
        Failure::Output {
            diagnostics,
            rendered,
        } => {
            let rendered = rendered.map(|text| {
                Source::new(
                    format!("{} of {}", tao_k8s::compile::RENDERED, source.name()),
                    text,
                )
            });
            out.diagnostics(rendered.as_ref(), &diagnostics);
            out.summary(&diagnostics, source.name());
            if files.emit_unverified {
                match &rendered {
                    Some(text) => {
                        let masked = super::report::redactor_for(text)
                            .frame(text.text())
                            .into_owned();
                        let _ = emit(&masked);
                    }
                    None => out.note("the templates wrote nothing to print"),
                }
            }
        }
    }
}

/// What one request compiled to.
enum Product {
    Compiled(Box<Compiled>),
    Bundle(Box<Bundle>),
    /// What `render` prints of it, all that is kept once it is checked: its YAML stream (or
    /// its objects as pretty JSON text, for `-o json`: a text takes a fraction of a tree's
    /// memory, and 20,000 requests are held until the last one compiles).
    Printed {
        yaml: String,
        objects: Vec<String>,
    },
}

impl Product {
    /// The Job's compilation (`None` once only what is printed is kept).
    fn job(&self) -> Option<&Compiled> {
        match self {
            Product::Compiled(c) => Some(c),
            Product::Bundle(b) => Some(&b.job),
            Product::Printed { .. } => None,
        }
    }

    /// The YAML stream and the objects `render` prints, once only they are kept.
    fn printed(&self) -> (&str, &[String]) {
        match self {
            Product::Printed { yaml, objects } => (yaml, objects),
            _ => ("", &[]),
        }
    }

    /// Every object it applies, the probe's included (none once only what is printed is
    /// kept).
    fn objects(&self) -> impl Iterator<Item = &yaml::Node> {
        let probe = match self {
            Product::Bundle(b) => b.probe.as_ref().map(|p| p.documents.as_slice()),
            _ => None,
        };
        let job = self.job().map(|c| c.documents.as_slice());
        job.unwrap_or_default()
            .iter()
            .chain(probe.unwrap_or_default())
    }
}

/// One compiled request and its staging map (JSON).
struct Done {
    source: Source,
    product: Product,
    map: String,
}

impl Done {
    /// Drop what printing the manifests in `format` does not use: many requests are held
    /// until every one has compiled (20,000 requests took 663 MiB whole).
    fn keep_only(&mut self, format: Format, staging_map: bool) {
        self.source = Source::new(self.source.name(), "");
        if !staging_map {
            self.map = String::new();
        }
        if let Product::Compiled(c) = &mut self.product {
            let (yaml, objects) = match format {
                Format::Yaml => (std::mem::take(&mut c.yaml), Vec::new()),
                Format::Json => (
                    String::new(),
                    std::mem::take(&mut c.documents)
                        .iter()
                        .map(|d| yaml::SortedJson(d).pretty(LIST_ITEM))
                        .collect(),
                ),
            };
            self.product = Product::Printed { yaml, objects };
        }
    }
}

/// `render`, `stage`, `script`: compile every request, then print or write the results.
pub(crate) fn render(
    out: &Reporter,
    requests: &Requests,
    output: Output,
    opts: Options,
    templates: Option<&Path>,
    files: &Files,
) -> ExitCode {
    if requests.many
        && let Some(flag) = one_request_flag(files)
    {
        eprintln!("error: {flag} takes one request, and several were given");
        return ExitCode::from(USAGE);
    }
    let folders = match &output {
        Output::Bundle(dir) => match requests.folders(dir) {
            Ok(folders) => folders,
            Err(message) => return out.io_error(&message),
        },
        _ => Vec::new(),
    };
    let owned = match read_templates(out, templates) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let templates = owned.as_ref().unwrap_or(Templates::embedded());
    let done = match compile_all(out, requests, &output, &opts, templates, files) {
        Ok(done) => done,
        Err(code) => return code,
    };
    let refused = done.iter().filter(|d| d.is_none()).count();
    if refused > 0 && !files.keep_going {
        if requests.many {
            eprintln!(
                "error: {refused} of {} requests refused: nothing written (--keep-going writes the others)",
                done.len()
            );
        }
        return ExitCode::from(REFUSED);
    }
    let code = deliver(out, &done, output, &folders, files, requests.many);
    if refused > 0 {
        eprintln!(
            "error: {refused} of {} requests refused; the others written (--keep-going)",
            done.len()
        );
        return ExitCode::from(REFUSED);
    }
    code
}

/// A flag set that takes one request only.
fn one_request_flag(files: &Files) -> Option<&'static str> {
    let single = [
        ("--staging-map", files.staging_map.is_some()),
        ("--staged-config", files.staged_config.is_some()),
        ("--emit-unverified", files.emit_unverified),
    ];
    single.iter().find(|(_, set)| *set).map(|(flag, _)| *flag)
}

/// Compile every request in turn, reporting each one's diagnostics: `None` for a refused one
/// (or one whose objects another request already applies).
fn compile_all(
    out: &Reporter,
    requests: &Requests,
    output: &Output,
    opts: &Options,
    templates: &Templates,
    files: &Files,
) -> Result<Vec<Option<Done>>, ExitCode> {
    let bundled = matches!(output, Output::Script | Output::Bundle(_));
    let mut done: Vec<Option<Done>> = Vec::new();
    // Which request applies each object, by kind, namespace and name.
    let mut owners = Owners::default();
    for (i, path) in requests.paths.iter().enumerate() {
        let mut opts = opts.clone();
        let source = read_request(out, path, &mut opts, files)?;
        let product = if bundled {
            tao_k8s::bundle(&source, &opts, templates).map(|b| Product::Bundle(Box::new(b)))
        } else {
            tao_k8s::compile(&source, &opts, templates).map(|c| Product::Compiled(Box::new(c)))
        };
        let product = match product {
            Ok(p) => p,
            Err(failure) => {
                report_refusal(out, &source, failure, files);
                done.push(None);
                continue;
            }
        };
        let Some(compiled) = product.job() else {
            // Only a product already kept for printing lacks it; a fresh one never does.
            done.push(None);
            continue;
        };
        out.diagnostics(Some(&source), &compiled.warnings);
        for note in &compiled.plan.notes {
            if requests.many {
                out.note(&format!("{}: {note}", source.name()));
            } else {
                out.note(note);
            }
        }
        let keys: Vec<_> = product.objects().map(key_of).collect();
        if let Some((key, other)) = clash(&keys, &owners, &done) {
            report_clash(out, &source, &object_key(key), &other);
            done.push(None);
            continue;
        }
        owners.extend(keys.into_iter().map(|key| (key, i)));
        // Printed manifests lack the Secrets `job.sh submit` would make: say which to make.
        if let Output::Manifests(_) = output {
            let needed =
                tao_k8s::driver::credentials::needed_secrets(&compiled.plan, &compiled.documents);
            let lines =
                tao_k8s::driver::credentials::needed_note(&needed, &compiled.plan.namespace);
            if let Some((first, rest)) = lines.split_first() {
                if requests.many {
                    out.note(&format!("{}: {first}", source.name()));
                } else {
                    out.note(first);
                }
                for line in rest {
                    eprintln!("{}", tao_k8s::diag::printable(line));
                }
            }
        }
        // Printed manifests carry no staging map unless `--staging-map` asks for it.
        let map_used = !matches!(output, Output::Manifests(_)) || files.staging_map.is_some();
        let map = match map_used {
            true => {
                serde_json::to_string_pretty(&compiled.plan.staging_map)
                    .expect("the map serializes")
                    + "\n"
            }
            false => String::new(),
        };
        let mut done_one = Done {
            source,
            product,
            map,
        };
        if let Output::Manifests(format) = output {
            done_one.keep_only(*format, files.staging_map.is_some());
        }
        done.push(Some(done_one));
    }
    Ok(done)
}

/// Refuse a request whose `object` an earlier request, `other`, already applies.
fn report_clash(out: &Reporter, source: &Source, object: &str, other: &str) {
    let d = tao_k8s::diag::Diagnostic::error(
        tao_k8s::codes::NAME,
        format!(
            "{object} of {} is also an object of {other}: applied together, one would replace the other",
            source.name()
        ),
    )
    .help("give the requests different `metadata.name`s (or namespaces)");
    out.diagnostics(None, std::slice::from_ref(&d));
    out.summary(&[d], source.name());
}

/// Which request applies each object, by kind, namespace and name (hashed: 20,000 requests
/// are looked up in it one by one).
type Owners = std::collections::HashMap<ObjectKey, usize, foldhash::fast::RandomState>;

/// An object's kind, namespace and name.
type ObjectKey = (String, String, String);

/// The key among `keys` (a request's objects) that an earlier request already applies, and
/// that request's file.
fn clash<'k>(
    keys: &'k [ObjectKey],
    owners: &Owners,
    done: &[Option<Done>],
) -> Option<(&'k ObjectKey, String)> {
    keys.iter().find_map(|key| {
        let owner = owners.get(key)?;
        let file = done[*owner].as_ref()?.source.name().to_string();
        Some((key, file))
    })
}

fn key_of(object: &yaml::Node) -> ObjectKey {
    let text = |node: Option<&yaml::Node>| {
        node.and_then(tao_k8s::lint::api::text)
            .unwrap_or_default()
            .to_string()
    };
    let metadata = object.get("metadata");
    (
        text(object.get("kind")),
        text(metadata.and_then(|m| m.get("namespace"))),
        text(metadata.and_then(|m| m.get("name"))),
    )
}

/// `Kind namespace/name`.
fn object_key((kind, namespace, name): &ObjectKey) -> String {
    format!("`{kind} {namespace}/{name}`")
}

/// The indentation of a `v1` List's items, in which `-o json` keeps each object's text.
const LIST_ITEM: &str = "    ";

/// Print or write what the compiled requests produced.
fn deliver(
    out: &Reporter,
    done: &[Option<Done>],
    output: Output,
    folders: &[PathBuf],
    files: &Files,
    many: bool,
) -> ExitCode {
    let good = || done.iter().flatten();
    if let Some(file) = &files.staging_map {
        // One request (several are refused above).
        if let Some(d) = good().next()
            && let Err(message) = write_atomic(file, &d.map)
        {
            return out.io_error(&message);
        }
    }
    match output {
        Output::Manifests(format) => {
            let printed: Vec<_> = good().map(|d| d.product.printed()).collect();
            emit_with(|out| write_manifests(out, &printed, format, many))
        }
        Output::Stage(dir) => {
            let Some(d) = good().next() else {
                return ExitCode::from(REFUSED);
            };
            let Some(plan) = d.product.job().map(|c| &c.plan) else {
                return ExitCode::from(REFUSED);
            };
            let spec = plan.config_map.as_ref().map(|cm| cm.data.as_str());
            let written = create_dir(&dir)
                .and_then(|()| write_atomic(&dir.join("staging-map.json"), &d.map))
                .and_then(|()| spec.map_or(Ok(()), |s| write_atomic(&dir.join("spec.yaml"), s)));
            match written {
                Ok(()) => ExitCode::SUCCESS,
                Err(message) => out.io_error(&message),
            }
        }
        Output::Script => match good().next().map(|d| &d.product) {
            // A printed script may be saved anywhere, so it names no binary.
            Some(Product::Bundle(b)) => emit(&b.script.printed()),
            _ => ExitCode::from(REFUSED),
        },
        Output::Bundle(_) => {
            for (d, dir) in done.iter().zip(folders) {
                let Some(Done {
                    product: Product::Bundle(bundle),
                    map,
                    ..
                }) = d
                else {
                    continue;
                };
                let code = write_bundle(out, dir, bundle, map);
                if code != ExitCode::SUCCESS {
                    return code;
                }
            }
            ExitCode::SUCCESS
        }
    }
}

/// `render --out DIR`: every file of the bundle, each whole or not at all.
fn write_bundle(out: &Reporter, dir: &Path, bundle: &Bundle, map: &str) -> ExitCode {
    // A bundle's script runs the binary that wrote it by default, while it exists.
    let exe = std::env::current_exe().ok().filter(|p| p.is_file());
    let plan = bundle
        .script
        .clone()
        .with_writer(exe.as_deref().and_then(|p| p.to_str()));
    let probe = bundle.probe.as_ref().map(|p| p.yaml.as_str());
    let written = create_dir(dir)
        .and_then(|()| write_atomic(&dir.join("manifest.yaml"), &bundle.job.yaml))
        .and_then(|()| write_atomic(&dir.join("staging-map.json"), map))
        .and_then(|()| probe.map_or(Ok(()), |p| write_atomic(&dir.join("nccl-probe.yaml"), p)))
        .and_then(|()| write_atomic(&dir.join("job.env"), &plan.data()))
        .and_then(|()| write_atomic(&dir.join("job.sh"), tao_k8s::driver::DRIVER))
        .and_then(|()| make_executable(&dir.join("job.sh")));
    match written {
        Ok(()) => {
            let probe = if probe.is_some() {
                ",nccl-probe.yaml"
            } else {
                ""
            };
            eprintln!(
                "wrote {}/{{manifest.yaml,staging-map.json,job.sh,job.env{probe}}}",
                dir.display()
            );
            ExitCode::SUCCESS
        }
        Err(message) => out.io_error(&message),
    }
}

/// The verified objects of every request as one YAML stream, or as JSON: one object, or a
/// `v1` List when there are several or `many` requests were asked for (a folder of one request
/// still gives a List, so that a pipeline reads one shape).
fn write_manifests(
    out: &mut dyn Write,
    printed: &[(&str, &[String])],
    format: Format,
    many: bool,
) -> std::io::Result<()> {
    match format {
        Format::Yaml => printed
            .iter()
            .try_for_each(|(yaml, _)| out.write_all(yaml.as_bytes())),
        Format::Json => {
            let objects: Vec<&String> = printed.iter().flat_map(|(_, objects)| *objects).collect();
            if let [one] = objects.as_slice()
                && !many
            {
                // Alone, at the top level (a JSON text has no raw line break but between its
                // tokens, each followed by its indentation).
                out.write_all(one.replace(&format!("\n{LIST_ITEM}"), "\n").as_bytes())?;
                return out.write_all(b"\n");
            }
            // A `v1` List as serde_json prints it pretty (keys sorted, two spaces a level): each
            // item is its own pretty text, two levels deeper.
            out.write_all(b"{\n  \"apiVersion\": \"v1\",\n  \"items\": [")?;
            for (i, item) in objects.iter().enumerate() {
                out.write_all(if i == 0 { b"\n    " } else { b",\n    " })?;
                out.write_all(item.as_bytes())?;
            }
            if !objects.is_empty() {
                out.write_all(b"\n  ")?;
            }
            out.write_all(b"],\n  \"kind\": \"List\"\n}\n")
        }
    }
}

/// Every `*.j2` file of a directory, by file name.
fn template_files(dir: &Path) -> Result<Vec<(String, String)>, String> {
    let mut files = Vec::new();
    for path in input::list(dir, false)? {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.ends_with(".j2") {
            let source = read_source(&path).map_err(|e| e.message().to_string())?;
            files.push((name.to_string(), source.text().to_string()));
        }
    }
    files.sort();
    Ok(files)
}

/// The name a request's outputs are written under: its file name without the extension
/// (`stdin` for `-`).
pub(crate) fn stem(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "stdin".to_string()
    } else {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// [`stem`], as the name of a file or folder written under `dir`: `.`, `..` or nothing (a
/// request file named `...yaml`, say) would write outside it, and is refused.
pub(crate) fn checked_stem(path: &Path, dir: &Path) -> Result<String, String> {
    let stem = stem(path);
    if stem.is_empty() || !stays_inside(Path::new(&stem)) || stem == "." {
        return Err(format!(
            "`{}` would be written under `{}` as `{stem}`, which is not a name inside it: rename it",
            path.display(),
            dir.display()
        ));
    }
    Ok(stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The List is written by hand from each object's pretty text: it must be byte for byte
    /// what serde_json prints for the whole List (the format `-o json` always had).
    #[test]
    fn the_json_list_is_serde_jsons_pretty_list() {
        // Each object's text, as `keep_only` keeps it: indented as a List's item.
        let item = |v: &serde_json::Value| {
            serde_json::to_string_pretty(v)
                .unwrap()
                .replace('\n', &format!("\n{LIST_ITEM}"))
        };
        let objects = [
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
                "data": {"spec.yaml": "a: 1\nb: \"x\"\n", "empty": ""}}),
            serde_json::json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"template":
                {"spec": {"containers": [{"name": "c", "args": [], "env": [{}]}]}}}}),
            serde_json::json!({"kind": "Service", "spec": {"ports": [1, 2.5, null, true]}}),
        ];
        let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap();
        for count in 0..=objects.len() {
            for many in [false, true] {
                let texts: Vec<String> = objects[..count].iter().map(item).collect();
                let mut ours = Vec::new();
                write_manifests(&mut ours, &[("", &texts)], Format::Json, many).unwrap();
                let expected = match &objects[..count] {
                    [one] if !many => pretty(one),
                    items => pretty(&serde_json::json!({
                        "apiVersion": "v1", "items": items, "kind": "List"})),
                } + "\n";
                assert_eq!(
                    String::from_utf8(ours).unwrap(),
                    expected,
                    "{count} objects, many: {many}"
                );
            }
        }
    }
}
