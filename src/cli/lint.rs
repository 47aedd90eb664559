//! `tao-k8s lint`, `rules` and `explain`: file discovery, the output formats (text code frames,
//! one JSON document, JSON lines, SARIF 2.1.0, GitHub workflow annotations) and the exit code.

use super::report::{Masks, Reporter};
use super::{USAGE, emit, read_source};
use clap::ValueEnum;
use serde_json::{Value as Json, json};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use tao_k8s::crd::Catalogue;
use tao_k8s::diag::{Redactor, Severity};
use tao_k8s::lint::{Reported, Selection, registry};
use tao_k8s::source::{Source, Span};

#[derive(Clone, Copy, ValueEnum)]
pub enum LintFormat {
    /// Code frames on stdout, the summary line on stderr.
    Text,
    /// One JSON document: `{"findings": [...], "summary": {...}}`.
    Json,
    /// One JSON object per finding and line, as they are formatted.
    Jsonl,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// GitHub workflow annotations.
    Github,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum FailOn {
    Warning,
    Error,
}

/// The files to lint: each path named on the command line as it is (`-` is stdin), and the
/// manifests under each directory, as `kubectl apply -f DIR` would read them (`*.yaml`,
/// `*.yml`, `*.json`), in file-name order. The walk skips what `.gitignore`, `.ignore` and
/// git's excludes list, hidden files and folders, and `templates/` folders (Jinja and Helm
/// templates are not YAML until rendered). Symbolic links are followed, a link back to a
/// folder being walked is not, and a file reached twice (by two links) is linted once.
fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut add = |path: PathBuf, files: &mut Vec<PathBuf>| {
        // A path that cannot be resolved is still linted, and reports why it cannot be read.
        let key = super::input::canonical(&path).unwrap_or_else(|_| path.clone());
        if seen.insert(key) {
            files.push(path);
        }
    };
    for path in paths {
        if path == Path::new("-") {
            files.push(path.clone());
        } else if path.is_dir() {
            for file in walk(path)? {
                add(file, &mut files);
            }
        } else if path.exists() {
            // A FIFO or device too: reading it says why it is refused.
            add(path.clone(), &mut files);
        } else {
            return Err(format!(
                "cannot read {}: no such file or directory",
                path.display()
            ));
        }
    }
    Ok(files)
}

/// Each folder is walked once, by its device and inode, however many links lead to it: a
/// graph of links sharing subfolders would otherwise be walked once per path through it.
fn walk(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let seen = std::sync::Mutex::new(std::collections::HashSet::new());
    let walker = ignore::WalkBuilder::new(dir)
        .follow_links(true)
        // `.gitignore` counts outside a git checkout too (an exported tree, a CI artifact).
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| {
            let folder = e.file_type().is_some_and(|t| t.is_dir());
            if !folder {
                return true;
            }
            if e.depth() > 0 && e.file_name() == "templates" {
                return false;
            }
            match super::input::identity(e.path()) {
                Some(id) => seen.lock().map_or(true, |mut s| s.insert(id)),
                None => true,
            }
        })
        .build();
    let mut files = Vec::new();
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            // A link back to a folder being walked: its files are linted on the way in.
            Err(e) if is_loop(&e) => continue,
            Err(e) => return Err(format!("cannot read {e}")),
        };
        let manifest = entry
            .path()
            .extension()
            .is_some_and(|x| x == "yaml" || x == "yml" || x == "json");
        if manifest && entry.file_type().is_some_and(|t| t.is_file()) {
            files.push(entry.into_path());
        }
    }
    Ok(files)
}

fn is_loop(e: &ignore::Error) -> bool {
    match e {
        ignore::Error::Loop { .. } => true,
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => is_loop(err),
        _ => false,
    }
}

/// The CustomResourceDefinitions under these paths (`--crd`), read before anything is linted:
/// one that cannot be read stops the run (exit 2), as a missing file does.
pub fn crds(out: &Reporter, paths: &[PathBuf]) -> Result<Option<Arc<Catalogue>>, ExitCode> {
    if paths.is_empty() {
        return Ok(None);
    }
    match Catalogue::read(&option_sources(out, paths)?) {
        Ok(catalogue) => Ok(Some(Arc::new(catalogue))),
        Err(why) => {
            eprintln!("error: --crd: {why}");
            Err(ExitCode::from(USAGE))
        }
    }
}

/// The files under the paths an option names, read whole; one that cannot be read stops the
/// run.
fn option_sources(out: &Reporter, paths: &[PathBuf]) -> Result<Vec<Source>, ExitCode> {
    let files = discover(paths).map_err(|message| out.io_error(&message))?;
    let mut sources = Vec::new();
    for file in &files {
        match read_source(file) {
            Ok(source) => sources.push(source),
            Err(e) => return Err(e.report(out)),
        }
    }
    Ok(sources)
}

/// The admission policies under these paths (`--policy`), read as the CRDs are: one that
/// cannot be read stops the run (exit 2).
pub fn policies(
    out: &Reporter,
    paths: &[PathBuf],
) -> Result<Option<Arc<tao_k8s::lint::policy::Policies>>, ExitCode> {
    if paths.is_empty() {
        return Ok(None);
    }
    let sources = option_sources(out, paths)?;
    match tao_k8s::lint::policy::Policies::read(&sources) {
        Ok(policies) => Ok(Some(Arc::new(policies))),
        Err(why) => {
            eprintln!("error: --policy: {why}");
            Err(ExitCode::from(USAGE))
        }
    }
}

/// Run the lint; the exit code follows `--fail-on` and `--exit-zero`.
pub fn run(
    out: &Reporter,
    paths: &[PathBuf],
    format: LintFormat,
    selection: &Selection,
    fail_on: FailOn,
    exit_zero: bool,
) -> ExitCode {
    if let [unknown, ..] = selection.unknown()[..] {
        eprintln!("error: `{unknown}` is no rule code, rule name or group (see `tao-k8s rules`)");
        return ExitCode::from(USAGE);
    }
    let files = match discover(paths) {
        Ok(f) => f,
        Err(message) => return out.io_error(&message),
    };
    let (mut reports, masks, broken) = match read_and_lint(out, &files, selection) {
        Ok(read) => read,
        Err(code) => return code,
    };
    let threshold = match fail_on {
        FailOn::Warning => Severity::Warning,
        FailOn::Error => Severity::Error,
    };
    let failing = reports
        .iter()
        .flat_map(|(_, r)| r)
        .any(|r| r.diagnostic.severity >= threshold);
    // The one place reports leave the engine: each passes the redactor of its source before
    // any format shows it.
    let redactors = redact(
        &mut reports,
        masks,
        selection.max_findings.unwrap_or(usize::MAX),
    );
    let count = |s: Severity| {
        reports
            .iter()
            .flat_map(|(_, r)| r)
            .filter(|r| r.diagnostic.severity == s)
            .count()
    };
    let mut summary = None;
    let text = match format {
        LintFormat::Text => {
            // On stderr, like a linter's summary: stdout holds the findings alone.
            summary = Some(format!(
                "{} error(s), {} warning(s) in {} file(s)",
                count(Severity::Error),
                count(Severity::Warning),
                reports.len()
            ));
            text(out, &reports, &redactors)
        }
        LintFormat::Json => {
            let findings: Vec<Json> = reports
                .iter()
                .flat_map(|(source, found)| found.iter().map(move |r| json_line(source, r)))
                .collect();
            let document = json!({
                "findings": findings,
                "summary": {
                    "errors": count(Severity::Error),
                    "warnings": count(Severity::Warning),
                    "notes": count(Severity::Note),
                    "files": reports.len(),
                },
            });
            serde_json::to_string_pretty(&document).expect("JSON serializes") + "\n"
        }
        LintFormat::Jsonl => reports
            .iter()
            .flat_map(|(source, found)| {
                found
                    .iter()
                    .map(move |r| json_line(source, r).to_string() + "\n")
            })
            .collect(),
        LintFormat::Sarif => {
            serde_json::to_string_pretty(&sarif(&reports)).expect("JSON serializes") + "\n"
        }
        LintFormat::Github => reports
            .iter()
            .flat_map(|(source, found)| found.iter().map(move |r| github(source, r)))
            .collect(),
    };
    let printed = emit(&text);
    if let Some(summary) = summary {
        eprintln!("{summary}");
    }
    if broken {
        ExitCode::from(USAGE)
    } else if printed != ExitCode::SUCCESS {
        printed
    } else if failing && !exit_zero {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Mask every report in place, and give each source's redactor and the spans of the
/// credentials in it (sorted), which code frames mask too: even one another rule's frame
/// touches, or one whose rule is not selected (the lint found them in the same pass).
fn redact(
    reports: &mut [Linted],
    masks: Vec<Vec<Span>>,
    max_findings: usize,
) -> Vec<(Redactor, Masks)> {
    reports
        .iter_mut()
        .zip(masks)
        .map(|((source, found), spans)| {
            // The credential itself where the scan finds it in the node (a token inside a
            // command), else the whole value (a password known by its key). Messages quote the
            // nodes they are about, at most one report per finding kept: as many values as
            // reports are kept (a Pod of 200,000 passwords builds no 200,000-word automaton;
            // code frames are masked by span).
            let text = source.text();
            let values = spans
                .iter()
                .take(max_findings)
                .filter_map(|s| text.get(s.clone()))
                .flat_map(|node| {
                    let value = node.trim_matches(['"', '\'']);
                    let found: Vec<String> = tao_k8s::secrets::scan_text(value)
                        .into_iter()
                        .map(|f| value[f.range].to_string())
                        .collect();
                    if found.is_empty() {
                        vec![value.to_string()]
                    } else {
                        found
                    }
                });
            let redactor = Redactor::with_values(values);
            for r in found.iter_mut() {
                r.diagnostic = redactor.diagnostic(&r.diagnostic);
                r.object = r.object.as_deref().map(|o| redactor.text(o));
                r.json_path = redactor.text(&r.json_path);
            }
            (redactor, Masks::new(spans))
        })
        .collect()
}

/// A source and what lint reports on it.
type Linted = (Source, Vec<Reported>);
/// Every file's reports, the spans of its credentials, and whether a file was not linted.
type Read = (Vec<Linted>, Vec<Vec<Span>>, bool);

/// Read and lint every file: the reports of each, where its credentials are, and whether any
/// could not be linted (not YAML, over a limit). A file that cannot be read at all stops the
/// run.
fn read_and_lint(
    out: &Reporter,
    files: &[PathBuf],
    selection: &Selection,
) -> Result<Read, ExitCode> {
    let mut reports: Vec<Linted> = Vec::new();
    let mut masks = Vec::new();
    let mut broken = false;
    for file in files {
        let source = match read_source(file) {
            Ok(s) => s,
            Err(super::ReadError::Refused(message)) => {
                // Like a file that is not YAML: reported, and the others are still linted.
                eprintln!("error: {message}");
                broken = true;
                continue;
            }
            Err(e) => return Err(e.report(out)),
        };
        match tao_k8s::lint::lint_masked(&source, selection) {
            Ok((mut found, spans)) => {
                if let Some(request) = request_findings(&source) {
                    // Not an unknown kind: a request, checked as `render` checks it.
                    found.retain(|r| r.diagnostic.code != tao_k8s::codes::UNKNOWN_KIND);
                    found.extend(request);
                    found.sort_by_key(|r| (r.line, r.column, r.diagnostic.code));
                }
                reports.push((source, found));
                masks.push(spans);
            }
            Err(e) => {
                let (line, col) = source.line_col(e.span.start);
                eprintln!(
                    "error: {}:{line}:{col}: not valid YAML: {}",
                    source.name(),
                    e.message
                );
                broken = true;
            }
        }
    }
    Ok((reports, masks, broken))
}

/// When `source` is one action request (`tao-k8s/v1` `ActionRequest`), the findings of the
/// request's own checks and staging: the codes, messages and positions `render` reports.
fn request_findings(source: &Source) -> Option<Vec<Reported>> {
    // Parsed a second time only when it may be one: a large manifest is not.
    let text = source.text();
    if !text.contains("ActionRequest") || !text.contains("tao-k8s/v1") {
        return None;
    }
    let stream = tao_k8s::yaml::parse(source, tao_k8s::yaml::Limits::default()).ok()?;
    let [document] = stream.documents.as_slice() else {
        return None;
    };
    let json = document.to_json();
    if json["apiVersion"] != "tao-k8s/v1" || json["kind"] != "ActionRequest" {
        return None;
    }
    let name = json["metadata"]["name"].as_str().unwrap_or_default();
    let object = match json["metadata"]["namespace"].as_str() {
        Some(ns) => format!("ActionRequest/{ns}/{name}"),
        None => format!("ActionRequest/{name}"),
    };
    let found = tao_k8s::compile::check_request(source)
        .into_iter()
        .map(|diagnostic| {
            let at = diagnostic
                .labels
                .iter()
                .find(|l| l.primary)
                .or(diagnostic.labels.first())
                .map_or(0, |l| l.span.start);
            let (line, column) = source.line_col(at);
            Reported {
                json_path: diagnostic.path.clone().unwrap_or_default(),
                object: Some(object.clone()),
                line,
                column,
                diagnostic,
            }
        })
        .collect();
    Some(found)
}

/// Code frames, each report framed with its object, and masked again by its source's redactor.
fn text(
    out: &Reporter,
    reports: &[(Source, Vec<Reported>)],
    redactors: &[(Redactor, Masks)],
) -> String {
    let mut text = String::new();
    for ((source, found), (redactor, masks)) in reports.iter().zip(redactors) {
        for r in found {
            let mut d = r.diagnostic.clone();
            if let Some(object) = r
                .object
                .as_ref()
                .filter(|o| !d.message.contains(o.as_str()))
            {
                d.message = format!("{} [{object}]", d.message);
            }
            let _ = writeln!(text, "{}\n", out.render(Some(source), &d, redactor, masks));
        }
    }
    text
}

fn rule_name(code: &str) -> &'static str {
    registry::find(code).map_or("", |r| r.meta().name)
}

fn json_line(source: &Source, r: &Reported) -> Json {
    json!({
        "code": r.diagnostic.code,
        "name": rule_name(r.diagnostic.code),
        "severity": r.diagnostic.severity,
        "message": r.diagnostic.message,
        "help": r.diagnostic.help,
        "file": source.name(),
        "line": r.line,
        "column": r.column,
        "object": r.object,
        "path": r.json_path,
    })
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// A repository-relative URI with forward slashes, as code scanning expects.
fn uri(name: &str) -> String {
    name.trim_start_matches("./").replace('\\', "/")
}

/// SARIF 2.1.0: the rules described once in the driver, one result per finding.
pub fn sarif(reports: &[(Source, Vec<Reported>)]) -> Json {
    let rules: Vec<Json> = registry::RULES
        .iter()
        .map(|r| {
            let m = r.meta();
            let doc = m.doc_text();
            let summary = doc
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("What it checks:")
                .trim()
                .to_string();
            json!({
                "id": m.code,
                "name": m.name,
                "shortDescription": {"text": summary},
                "fullDescription": {"text": doc.trim()},
                "help": {"text": doc.trim()},
                "defaultConfiguration": {"level": level(m.severity)},
                "properties": {"tags": [m.group.name()]},
            })
        })
        .collect();
    let results: Vec<Json> = reports
        .iter()
        .flat_map(|(source, found)| {
            found.iter().map(move |r| {
                let mut result = json!({
                    "ruleId": r.diagnostic.code,
                    "level": level(r.diagnostic.severity),
                    "message": {"text": r.diagnostic.message},
                    "locations": [{
                        "physicalLocation": {
                            "artifactLocation": {"uri": uri(source.name())},
                            "region": {"startLine": r.line, "startColumn": r.column},
                        },
                    }],
                });
                if let Some(i) = registry::RULES
                    .iter()
                    .position(|x| x.meta().code == r.diagnostic.code)
                {
                    result["ruleIndex"] = json!(i);
                }
                result
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "tao-k8s",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

/// `::error file=…,line=…,col=…,title=…::message`, escaped as GitHub's workflow commands want.
fn github(source: &Source, r: &Reported) -> String {
    let data = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    let prop = |s: &str| data(s).replace(':', "%3A").replace(',', "%2C");
    let kind = match r.diagnostic.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "notice",
    };
    let title = format!("{} {}", r.diagnostic.code, rule_name(r.diagnostic.code));
    format!(
        "::{kind} file={},line={},col={},title={}::{}\n",
        prop(&uri(source.name())),
        r.line,
        r.column,
        prop(title.trim()),
        data(&r.diagnostic.message)
    )
}

/// `tao-k8s rules`.
pub fn rules(format: LintFormat) -> ExitCode {
    let text = match format {
        LintFormat::Json => {
            let all: Vec<_> = registry::RULES.iter().map(|r| r.meta()).collect();
            serde_json::to_string_pretty(&all).expect("JSON serializes") + "\n"
        }
        LintFormat::Jsonl => registry::RULES
            .iter()
            .map(|r| serde_json::to_string(r.meta()).expect("JSON serializes") + "\n")
            .collect(),
        _ => registry::RULES
            .iter()
            .map(|r| {
                let m = r.meta();
                format!(
                    "{}  {:<22} {:<9} {}\n",
                    m.code,
                    m.name,
                    m.group.name(),
                    level(m.severity)
                )
            })
            .collect(),
    };
    emit(&text)
}

/// `tao-k8s explain CODE`.
pub fn explain(code: &str) -> ExitCode {
    match registry::find(code) {
        Some(r) => {
            let m = r.meta();
            emit(&format!(
                "{} {} ({}, {})\n\n{}\n",
                m.code,
                m.name,
                m.group.name(),
                level(m.severity),
                m.doc_text().trim()
            ))
        }
        None => match tao_k8s::codes::find(code) {
            // The codes of the request, the options, staging and the templates, with the
            // request checks that report them.
            Some(c) => {
                let mut text = format!("{} {}\n\n{}\n", c.code, c.name, c.summary.trim());
                for check in tao_k8s::request::CHECKS
                    .iter()
                    .filter(|k| k.codes.contains(&c.code))
                {
                    text.push_str(&check_text(check));
                }
                emit(&text)
            }
            None => match tao_k8s::request::CHECKS.iter().find(|k| k.name == code) {
                Some(check) => emit(check_text(check).trim_start()),
                None => {
                    eprintln!(
                        "error: no rule, code or request check `{code}` (see `tao-k8s rules`)"
                    );
                    ExitCode::from(USAGE)
                }
            },
        },
    }
}

/// A request check, for `explain`: its name, its codes and what it checks.
fn check_text(check: &tao_k8s::request::Check) -> String {
    format!(
        "\nrequest check `{}` ({}):\n\n{}\n",
        check.name,
        check.codes.join(", "),
        check.explain.trim()
    )
}
