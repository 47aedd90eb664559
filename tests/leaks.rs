//! No credential is ever echoed. A fake credential is planted in every string field and every
//! map key of every bundled request, one place at a time, and in every string and key lint
//! reads; whatever each command prints (stdout and stderr, every output format) must not hold
//! any 6-character window of it.

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use tao_k8s::source::Source;
use tao_k8s::yaml::{self, Node, Value};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Obviously fake, but shaped like a GitHub token (its prefix and length), so that every
/// door recognises it; mixed case, so that a lowercased object name cannot contain a window.
fn planted() -> String {
    format!("ghp_{}", &"FAKEtokenNOTreal".repeat(3)[..36])
}

/// Whether `text` holds any 6-byte window of `secret`.
fn leaks(text: &str, secret: &str) -> Option<String> {
    secret
        .as_bytes()
        .windows(6)
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .find(|w| text.contains(w.as_str()))
}

/// Where to plant.
#[derive(Clone, Copy, PartialEq)]
enum Places {
    Values,
    Keys,
    Both,
}

/// The span of every string scalar and every map key of a tree (but the keys and values of
/// `apiVersion` and `kind`, which decide whether a document is read at all, unless `Both`).
fn places(node: &Node, which: Places, out: &mut Vec<std::ops::Range<usize>>) {
    match &node.value {
        Value::Str(_) if which != Places::Keys => out.push(node.span.clone()),
        Value::Seq(items) => items.iter().for_each(|item| places(item, which, out)),
        Value::Map(entries) => {
            for (k, v) in entries {
                let key = yaml::key_text(k);
                let kind = key == "apiVersion" || key == "kind";
                if which == Places::Both || (which == Places::Keys && !kind) {
                    out.push(k.span.clone());
                }
                if which == Places::Both || !kind {
                    places(v, which, out);
                }
            }
        }
        _ => {}
    }
}

/// `text` with the scalar at `span` replaced by `value`, if that still parses and the value is
/// read back whole (a span of a block scalar or a quoted key may not take a plain value).
fn plant(text: &str, span: &std::ops::Range<usize>, value: &str) -> Option<String> {
    let planted = format!("{}\"{value}\"{}", &text[..span.start], &text[span.end..]);
    let stream = yaml::parse(&Source::new("p", planted.as_str()), yaml::Limits::default()).ok()?;
    let mut found = false;
    let mut all = Vec::new();
    for d in &stream.documents {
        places(d, Places::Both, &mut all);
    }
    for s in all {
        if planted.get(s.clone()).is_some_and(|t| t.contains(value)) {
            found = true;
        }
    }
    found.then_some(planted)
}

fn requests() -> Vec<PathBuf> {
    let mut files = vec![Path::new(ROOT).join("examples/dino-train.yaml")];
    let dir = Path::new(ROOT).join("fixtures/requests/valid");
    let mut valid: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    valid.sort();
    files.extend(valid);
    files
}

fn run(args: &[&str], dir: &Path) -> String {
    let out = Command::cargo_bin("tao-k8s")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .env_remove("TAO_K8S_NAMESPACE")
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_credential_in_any_field_of_a_request_is_never_echoed() {
    let secret = planted();
    let dir = tempfile::tempdir().unwrap();
    // Config-mode fixtures name spec files in `specs/` beside them.
    std::fs::create_dir(dir.path().join("specs")).unwrap();
    for spec in std::fs::read_dir(Path::new(ROOT).join("fixtures/requests/valid/specs")).unwrap() {
        let spec = spec.unwrap().path();
        std::fs::copy(
            &spec,
            dir.path().join("specs").join(spec.file_name().unwrap()),
        )
        .unwrap();
    }
    let mut planted_places = 0;
    for request in requests() {
        let text = std::fs::read_to_string(&request).unwrap();
        let stream = yaml::parse(&Source::new("r", text.as_str()), yaml::Limits::REQUEST).unwrap();
        let mut spans = Vec::new();
        places(&stream.documents[0], Places::Both, &mut spans);
        for span in spans {
            let Some(planted) = plant(&text, &span, &secret) else {
                continue;
            };
            planted_places += 1;
            let file = dir.path().join("request.yaml");
            std::fs::write(&file, &planted).unwrap();
            let example = request.ends_with("dino-train.yaml");
            let commands: &[&[&str]] = if example {
                &[
                    &["render", "request.yaml"],
                    &["render", "-o", "json", "request.yaml"],
                    &["render", "--color", "always", "request.yaml"],
                    &["stage", "request.yaml", "--out", "staged"],
                    &["script", "request.yaml"],
                    &["render", "request.yaml", "--out", "bundle"],
                ]
            } else {
                &[&["render", "request.yaml"]]
            };
            for args in commands {
                let shown = run(args, dir.path());
                if let Some(window) = leaks(&shown, &secret) {
                    panic!(
                        "{} at {:?}: `{window}` shown by {args:?}:\n{shown}",
                        request.display(),
                        &text[span.clone()]
                    );
                }
            }
        }
    }
    assert!(planted_places > 300, "only {planted_places} places planted");
}

#[test]
fn a_credential_in_a_config_spec_file_is_never_echoed() {
    let secret = planted();
    let dir = tempfile::tempdir().unwrap();
    let request =
        std::fs::read_to_string(Path::new(ROOT).join("fixtures/requests/valid/config-file.yaml"))
            .unwrap();
    std::fs::write(dir.path().join("request.yaml"), request).unwrap();
    std::fs::create_dir(dir.path().join("specs")).unwrap();
    for spec in std::fs::read_dir(Path::new(ROOT).join("fixtures/requests/valid/specs")).unwrap() {
        let spec = spec.unwrap().path();
        let text = std::fs::read_to_string(&spec).unwrap();
        let planted = format!("{text}\nextra:\n  token_value: \"{secret}\"\n  {secret}: x\n");
        let to = dir.path().join("specs").join(spec.file_name().unwrap());
        std::fs::write(to, planted).unwrap();
    }
    for args in [
        &["render", "request.yaml"][..],
        &["stage", "request.yaml", "--out", "staged"],
    ] {
        let shown = run(args, dir.path());
        assert!(leaks(&shown, &secret).is_none(), "{args:?}:\n{shown}");
    }
}

#[test]
fn a_credential_anywhere_lint_reads_is_never_echoed_in_any_format() {
    let secret = planted();
    let dir = tempfile::tempdir().unwrap();
    // Manifests as the rules see them: every rule's failing fixture, and rendered requests.
    let mut manifests: Vec<String> = Vec::new();
    for rule in std::fs::read_dir(Path::new(ROOT).join("fixtures/lint")).unwrap() {
        let fail = rule.unwrap().path().join("fail.yaml");
        if fail.exists() {
            manifests.push(std::fs::read_to_string(fail).unwrap());
        }
    }
    for request in requests().iter().take(6) {
        let out = Command::cargo_bin("tao-k8s")
            .unwrap()
            .current_dir(request.parent().unwrap())
            .args(["render"])
            .arg(request)
            .output()
            .unwrap();
        manifests.push(String::from_utf8(out.stdout).unwrap());
    }
    let mut files = 0;
    for (i, text) in manifests.iter().enumerate() {
        let Ok(stream) = yaml::parse(&Source::new("m", text.as_str()), yaml::Limits::default())
        else {
            continue; // a fixture of broken YAML
        };
        // Every value at once, then every key at once, from the end so that earlier spans
        // stay valid.
        for (which, name) in [(Places::Values, "values"), (Places::Keys, "keys")] {
            let mut spans = Vec::new();
            for d in &stream.documents {
                places(d, which, &mut spans);
            }
            spans.sort_by_key(|s| std::cmp::Reverse(s.start));
            let mut planted = text.clone();
            for span in &spans {
                if let Some(p) = plant(&planted, span, &secret) {
                    planted = p;
                }
            }
            let file = dir.path().join(format!("m{i}-{name}.yaml"));
            std::fs::write(&file, &planted).unwrap();
            files += 1;
            let file = file.to_str().unwrap();
            for format in ["text", "json", "sarif", "github"] {
                let shown = run(&["lint", "--format", format, file], dir.path());
                if let Some(window) = leaks(&shown, &secret) {
                    panic!("{file}, {format}: `{window}` shown:\n{shown}");
                }
            }
            let ignored = run(&["lint", "--ignore", "redaction", file], dir.path());
            assert!(leaks(&ignored, &secret).is_none(), "{ignored}");
        }
    }
    assert!(files > 30, "{files}");
}
