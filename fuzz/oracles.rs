//! The properties the fuzz targets check, one `pub fn` per target, each panicking when its
//! property does not hold. This file depends on `tao_k8s` and std only: the fuzz targets
//! include it (`#[path = "../oracles.rs"] mod oracles;`), and so does
//! `tests/fuzz_regressions.rs`, which replays every input under `fuzz/regressions/<target>/`
//! through the same function on stable Rust.
#![allow(dead_code)]

use tao_k8s::diag::Diagnostic;
use tao_k8s::lint::{self, Selection};
use tao_k8s::plan::Options;
use tao_k8s::render::Templates;
use tao_k8s::source::{Source, Span};
use tao_k8s::staging::{Rewrite, StagingMap};
use tao_k8s::{request, secrets, yaml};

/// A span as the CLI shows it: within the text and on character boundaries, in the text as
/// given and in the text as shown (credentials masked by `secrets::redact`).
fn check_span(source: &Source, shown: &str, span: &Span, what: &str) {
    let text = source.text();
    assert!(
        span.start <= span.end && span.end <= text.len(),
        "{what}: span {span:?} outside a text of {} bytes",
        text.len()
    );
    for at in [span.start, span.end] {
        assert!(
            text.is_char_boundary(at),
            "{what}: span {span:?} splits a character"
        );
        assert!(
            shown.is_char_boundary(at),
            "{what}: span {span:?} splits a character of the redacted text"
        );
    }
    let (line, col) = source.line_col(span.start);
    assert!(line >= 1 && col >= 1, "{what}: position {line}:{col}");
    let _ = &text[span.clone()];
    let _ = &shown[span.clone()];
}

/// Everything the CLI's code-frame renderer (src/cli/report.rs) reads of a diagnostic.
fn check_diagnostic(source: &Source, shown: &str, d: &Diagnostic) {
    assert!(!d.code.is_empty(), "diagnostic without a code: {d:?}");
    assert!(!d.message.is_empty(), "diagnostic without a message: {d:?}");
    for label in &d.labels {
        check_span(
            source,
            shown,
            &label.span,
            &format!("{} `{}`", d.code, d.message),
        );
        // The renderer widens an empty span to one byte; that byte must be a whole character
        // or the end of the text.
        let len = shown.len();
        let start = label.span.start.min(len);
        let end = if label.span.end > start {
            label.span.end.min(len)
        } else {
            (start + 1).min(len)
        };
        let _ = (start, end);
    }
    let _ = format!("{d:?}");
}

fn check_redaction(text: &str) -> String {
    let shown = secrets::redact(text).into_owned();
    assert_eq!(shown.len(), text.len(), "redaction changed the length");
    shown
}

/// `request`: loading never panics; every diagnostic points into the text, on character
/// boundaries, and renders.
pub fn request(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let source = Source::new("request.yaml", text);
    let shown = check_redaction(text);
    match request::load(&source) {
        Ok(loaded) => {
            for d in &loaded.warnings {
                check_diagnostic(&source, &shown, d);
            }
        }
        Err(refused) => {
            let diags = refused.diagnostics;
            assert!(!diags.is_empty(), "a refused request without a diagnostic");
            assert!(
                diags.iter().any(Diagnostic::is_error),
                "a refused request without an error: {diags:?}"
            );
            for d in &diags {
                check_diagnostic(&source, &shown, d);
            }
        }
    }
}

/// `compile`: the whole compile never panics; what it hands out parses back and passes the
/// project's own lint with no error; the driver script renders; the NCCL probe of an accepted
/// request compiles or is refused with diagnostics.
pub fn compile(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let source = Source::new("request.yaml", text);
    let shown = check_redaction(text);
    let opts = Options::default();
    match tao_k8s::compile(&source, &opts, Templates::embedded()) {
        Ok(compiled) => {
            check_output(&compiled.yaml);
            for d in &compiled.warnings {
                check_diagnostic(&source, &shown, d);
            }
            let plan = tao_k8s::driver::JobValues::new(&compiled.plan);
            assert!(
                plan.printed()
                    .contains(&plan.data()[plan.data().find("job=").unwrap()..])
            );
            let probe = Options {
                nccl_probe: true,
                ..Options::default()
            };
            match tao_k8s::compile(&source, &probe, Templates::embedded()) {
                Ok(p) => check_output(&p.yaml),
                Err(tao_k8s::Failure::Request(diags)) => {
                    assert!(!diags.is_empty());
                    for d in &diags {
                        check_diagnostic(&source, &shown, d);
                    }
                }
                Err(tao_k8s::Failure::Output {
                    diagnostics: diags, ..
                }) => {
                    panic!(
                        "the NCCL probe of an accepted request renders invalid output: {diags:#?}"
                    )
                }
            }
        }
        Err(tao_k8s::Failure::Request(diags)) => {
            assert!(diags.iter().any(Diagnostic::is_error), "{diags:?}");
            for d in &diags {
                check_diagnostic(&source, &shown, d);
            }
        }
        Err(tao_k8s::Failure::Output {
            diagnostics: diags, ..
        }) => {
            panic!("an accepted request rendered invalid output: {diags:#?}")
        }
    }
}

fn check_output(manifests: &str) {
    let out = Source::new("rendered", manifests);
    let stream = yaml::parse(&out, yaml::Limits::default())
        .unwrap_or_else(|e| panic!("rendered output is not YAML: {}\n{manifests}", e.message));
    assert!(!stream.documents.is_empty(), "no objects rendered");
    let found = lint::lint(&out, &Selection::default())
        .unwrap_or_else(|e| panic!("rendered output is not YAML: {}", e.message));
    let errors: Vec<_> = found
        .iter()
        .filter(|r| r.diagnostic.is_error())
        .map(|r| (r.diagnostic.code, r.diagnostic.message.as_str(), r.line))
        .collect();
    assert!(
        errors.is_empty(),
        "lint errors in rendered output: {errors:?}\n{manifests}"
    );
}

/// `lint_bytes` (and `lint_structured`): linting never panics; text that is not UTF-8 is an
/// error, as in the CLI; every finding has a line and column within the text and spans on
/// character boundaries.
pub fn lint_bytes(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return; // the CLI reports "not UTF-8" before linting
    };
    lint_text(text);
}

/// The lint property on text.
pub fn lint_text(text: &str) {
    let source = Source::new("manifest.yaml", text);
    let shown = check_redaction(text);
    let lines = text.split('\n').count();
    match lint::lint(&source, &Selection::default()) {
        Ok(found) => {
            for r in &found {
                assert!(
                    r.line >= 1 && r.line <= lines,
                    "finding {} at line {} of a {lines}-line text",
                    r.diagnostic.code,
                    r.line
                );
                assert!(r.column >= 1, "finding at column {}", r.column);
                check_diagnostic(&source, &shown, &r.diagnostic);
                if let Some(first) = r.diagnostic.labels.first() {
                    let (line, _) = source.line_col(first.span.start);
                    let _ = line;
                }
            }
        }
        Err(e) => {
            check_span(&source, &shown, &e.span, "syntax error");
            assert!(!e.message.is_empty());
        }
    }
}

/// YAML double-quoted scalar of any text.
fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' ' | '!'..='~' => out.push(c),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

fn quoted_list(field: &str) -> String {
    let items: Vec<String> = field
        .split('|')
        .filter(|s| !s.is_empty())
        .map(quoted)
        .collect();
    format!("[{}]", items.join(", "))
}

/// The request the `staging` target builds: fields of the fuzz input, separated by newlines,
/// fill mount paths, aliases (`|`-separated), `resultsDir` and `args`; the remaining fields
/// are argv values rewritten through the staging map.
pub fn staging_request(fields: &[&str]) -> String {
    let f = |i: usize| fields.get(i).copied().unwrap_or("");
    format!(
        "apiVersion: tao-k8s/v1
kind: ActionRequest
metadata:
  name: fuzz-staging
spec:
  image: nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt
  networkArch: dino
  action: train
  command:
    args: {args}
  resources:
    gpusPerNode: 1
  storage:
    mounts:
      - name: data
        persistentVolumeClaim: tao-data
        mountPath: {m0}
        readOnly: true
        aliases: {a0}
      - name: specs
        nfs: {{server: nfs.lab.internal, path: /exports/specs}}
        mountPath: {m1}
        readOnly: true
        aliases: {a1}
      - name: results
        persistentVolumeClaim: tao-results
        mountPath: {m2}
        aliases: {a2}
  resultsDir: {results}
",
        m0 = quoted(f(0)),
        a0 = quoted_list(f(1)),
        m1 = quoted(f(2)),
        a1 = quoted_list(f(3)),
        m2 = quoted(f(4)),
        a2 = quoted_list(f(5)),
        results = quoted(f(6)),
        args = quoted_list(&format!("dino|{}", f(7))),
    )
}

fn trim(path: &str) -> &str {
    if path.len() > 1 {
        path.trim_end_matches('/')
    } else {
        path
    }
}

/// Whether `prefix` is `path` or a parent of it by whole `/` segments (an independent
/// statement of the map's rule).
fn under(path: &str, prefix: &str) -> bool {
    let prefix = trim(prefix);
    path == prefix
        || (prefix == "/" && path.starts_with('/'))
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The path part of an argv value as the map reads it: the whole value, or what follows the
/// first `=` when the key has no `/`.
fn path_part(value: &str) -> &str {
    match value.split_once('=') {
        Some((k, v)) if !k.contains('/') && !k.contains("://") => v,
        _ => value,
    }
}

fn check_rewrite(map: &StagingMap, value: &str) {
    let first = map.rewrite(value);
    assert_eq!(
        first,
        map.rewrite(value),
        "rewrite of {value:?} is not deterministic"
    );
    let result = match &first {
        Rewrite::Rewritten(new) => {
            assert_ne!(new, value, "Rewritten to the same value");
            new.as_str()
        }
        Rewrite::Unchanged | Rewrite::Uncovered(_) => value,
    };
    if value.contains(char::is_whitespace) {
        assert_eq!(
            first,
            Rewrite::Unchanged,
            "text with whitespace is not a path"
        );
        return;
    }
    // No producer-side prefix that the map covers survives: the longest entry that covers
    // what a value became (by whole segments) maps it to itself.
    let path = path_part(result);
    let longest = map
        .entries
        .iter()
        .filter(|e| under(path, &e.producer_path))
        .max_by_key(|e| trim(&e.producer_path).len());
    if let Some(e) = longest {
        assert!(
            trim(&e.producer_path) == trim(&e.pod_path)
                || map.entries.iter().any(|o| {
                    trim(&o.producer_path) == trim(&e.producer_path)
                        && trim(&o.producer_path) == trim(&o.pod_path)
                }),
            "{value:?} -> {result:?} still holds producer path {:?} (-> {:?})",
            e.producer_path,
            e.pod_path
        );
    }
    // Rewriting is a projection: a rewritten value rewrites to itself.
    if let Rewrite::Rewritten(new) = &first {
        assert_eq!(
            map.rewrite(new),
            Rewrite::Unchanged,
            "{value:?} -> {new:?} is rewritten again"
        );
    }
}

/// `staging`: the staging map built from a request with fuzzed mount paths, aliases, results
/// directory and arguments rewrites deterministically, never panics, and leaves no
/// producer-side path it covers in what it rewrites.
pub fn staging(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let fields: Vec<&str> = text.split('\n').collect();
    let source = Source::new("request.yaml", staging_request(&fields));
    let loaded = match request::load(&source) {
        Ok(loaded) => loaded,
        Err(refused) => {
            let shown = check_redaction(source.text());
            for d in &refused.diagnostics {
                check_diagnostic(&source, &shown, d);
            }
            return;
        }
    };
    let (staging, diags) = tao_k8s::staging::stage(&loaded.request, &loaded.tree);
    if diags.iter().any(Diagnostic::is_error) {
        let shown = check_redaction(source.text());
        for d in &diags {
            check_diagnostic(&source, &shown, d);
        }
        return;
    }
    let map = &staging.map;
    for e in &map.entries {
        check_rewrite(map, &e.producer_path);
    }
    for value in staging.argv.iter().flatten() {
        check_rewrite(map, value);
    }
    check_rewrite(map, &staging.results_dir);
    let extra: Vec<String> = fields.iter().skip(8).map(|s| s.to_string()).collect();
    for value in &extra {
        check_rewrite(map, value);
    }
    let at = [yaml::Step::Key("args".into())];
    let mut d1 = Vec::new();
    let mut d2 = Vec::new();
    let once = tao_k8s::staging::rewrite_argv(map, &extra, &loaded.tree, &at, &mut d1);
    let twice = tao_k8s::staging::rewrite_argv(&map.clone(), &extra, &loaded.tree, &at, &mut d2);
    assert_eq!(once, twice, "rewrite_argv is not deterministic");
    assert_eq!(d1, d2, "rewrite_argv diagnostics are not deterministic");
    let shown = check_redaction(source.text());
    for d in &d1 {
        check_diagnostic(&source, &shown, d);
    }
}

/// Undo POSIX single quoting: `'...'` runs (no `'` inside) and `\'`, nothing else, so no
/// character of the quoted form is ever outside quotes (no metacharacter, no expansion).
fn unquote(quoted: &str) -> String {
    let mut out = String::new();
    let mut rest = quoted;
    assert!(!rest.is_empty(), "empty quoted form");
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("\\'") {
            out.push('\'');
            rest = r;
        } else if let Some(r) = rest.strip_prefix('\'') {
            let end = r
                .find('\'')
                .unwrap_or_else(|| panic!("unterminated quote in {quoted:?}"));
            out.push_str(&r[..end]);
            rest = &r[end + 1..];
        } else {
            panic!("unquoted text {rest:?} in {quoted:?}");
        }
    }
    out
}

/// `shell_quote`: the quoted form is single-quoted runs and `\'` only, and reads back as the
/// value; bash's `printf %s` of it prints the value byte for byte. NUL passes through
/// `shell_quote` unchanged (it is a pure text function), but no argv element and no bash word
/// can hold NUL, so the bash check covers the values without it.
pub fn shell_quote(data: &[u8]) {
    let Ok(value) = std::str::from_utf8(data) else {
        return;
    };
    let quoted = tao_k8s::driver::shell_quote(value);
    assert_eq!(unquote(&quoted), value, "{value:?} -> {quoted:?}");
    assert_eq!(
        quoted.matches('\0').count(),
        value.matches('\0').count(),
        "NUL is passed through unchanged"
    );
    if value.contains('\0') {
        return;
    }
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c"])
        .arg(format!("printf %s {quoted}"))
        .env("LC_ALL", "C")
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "bash failed on {quoted:?}: {out:?}");
    assert_eq!(
        out.stdout,
        value.as_bytes(),
        "bash printed something else for {value:?} quoted as {quoted:?}"
    );
}
