//! No credential is ever echoed. A fake credential is planted in every string field and every
//! map key of every bundled request, one place at a time, and in every string and key lint
//! reads; whatever each command prints (stdout and stderr, every output format) must not hold
//! any 6-character window of it.

mod common;

use std::path::{Path, PathBuf};
use tao_k8s::source::Source;
use tao_k8s::yaml::{self, Node, Value};

use common::ROOT;

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
    let out = common::tao()
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
        let out = common::tao()
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

/// One credential of each family the detector knows: `(family, env name, value, secret)`,
/// where `secret` is the part a mask must hide (the value but a URL's or a header's public
/// parts). Every value is obviously fake.
fn families() -> Vec<(&'static str, &'static str, String, String)> {
    let same = |family, name, value: String| (family, name, value.clone(), value);
    let pem_body = "RkFLRWtleWJvZHlGQUtFa2V5Ym9keUZBS0VrZXlib2R5RkFLRWtleWJvZHk=";
    let webhook = "FAKEx9Kq2Lm4Np6Rs8Tu0Vw1Xy3Za5Bc7De9Fg2Hi4Jk6Lm8No0Pq2Rs4Tu6Vw8Xy0";
    let sig = "FAKEq0kq2Lm4Np6Rs8Tu0Vw1Xy3Za5Bc7De9Fg%3D";
    let auth = "ZmFrZXVzZXI6RkFLRXB3OTlxeno=";
    vec![
        same(
            "aws-key-id",
            "AWS_ACCESS_KEY_ID",
            format!("AKIA{}", "FAKEQ7XZ2M4N6P8R"),
        ),
        same(
            "aws-secret",
            "AWS_SECRET_ACCESS_KEY",
            "FAKEfakeBCDGHIJbcdghij2345678901LMNOlmno".into(),
        ),
        same(
            "ngc",
            "NGC_API_KEY",
            format!("nvapi-{}", "fAkE9x".repeat(11)),
        ),
        same(
            "huggingface",
            "HF_TOKEN",
            format!("hf_{}", "FAKEq7".repeat(6)),
        ),
        same(
            "github",
            "GH_TOKEN",
            format!("ghp_{}", &"FAKEtokenNOTreal".repeat(3)[..36]),
        ),
        same("gitlab", "GL_TOKEN", "glpat-FAKEx9Kq2Lm4Np6Rs8Tu".into()),
        same(
            "slack",
            "SLACK_BOT",
            "xoxb-1234567890-1234567890123-FAKEx9Kq2Lm4Np6Rs8Tu0Vw1".into(),
        ),
        same(
            "stripe",
            "STRIPE_KEY",
            "sk_live_FAKEx9Kq2Lm4Np6Rs8Tu0Vw1Xy3".into(),
        ),
        same(
            "openai",
            "OPENAI_API_KEY",
            format!("sk-proj-{}", "FAKEx9Kq2Lm4".repeat(5)),
        ),
        same(
            "google",
            "MAPS_KEY",
            "AIzaFAKEx9Kq2Lm4Np6Rs8Tu0Vw1Xy3Za5Bc7De".into(),
        ),
        same(
            "npm",
            "NPM_TOKEN",
            "npm_FAKEx9Kq2Lm4Np6Rs8Tu0Vw1Xy3Za5Bc7De9".into(),
        ),
        same(
            "jwt",
            "SESSION",
            format!(
                "eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}",
                "zdWIiOiJGQUtFIn0", "FAKEsig9Kq2Lm4Np6Rs8"
            ),
        ),
        same(
            "vault",
            "VAULT_TOKEN",
            format!("hvs.{}", "FAKEx9Kq2Lm4Np6Rs8Tu0Vw1X".repeat(4)),
        ),
        same(
            "vendor",
            "DO_TOKEN",
            format!("dop_v1_{}", "fa4e0c1d".repeat(8)),
        ),
        same(
            "age",
            "AGE_KEY",
            format!(
                "AGE-SECRET-KEY-1{}",
                "QFAKEGF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE6MUA"
            ),
        ),
        same("password", "DB_PASSWORD", "FAKEpw-horse-battery".into()),
        same("assigned", "API_KEY", "FAKEx9Kq2Lm4Np6Rs8Tu0".into()),
        (
            "url-password",
            "DATABASE_URL",
            "postgres://tao:FAKEurlpw99x@db:5432/jobs".into(),
            "FAKEurlpw99x".into(),
        ),
        (
            "userinfo",
            "NFS_SERVER",
            "admin:FAKEnfs99x@nfs.lab.acme.io".into(),
            "FAKEnfs99x".into(),
        ),
        (
            "webhook",
            "DISCORD",
            format!("https://discord.com/api/webhooks/112233445566778899/{webhook}"),
            webhook.into(),
        ),
        (
            "signed-url",
            "BLOB",
            format!("https://a.blob.core.windows.net/c?sv=2022-11-02&sig={sig}"),
            sig.into(),
        ),
        (
            "header",
            "AUTH_HEADER",
            format!("Authorization: Basic {auth}"),
            auth.into(),
        ),
        (
            "private-key",
            "TLS_KEY",
            format!(
                "-----BEGIN PRIVATE KEY-----\n{pem_body}\n{pem_body}\n-----END PRIVATE KEY-----"
            ),
            pem_body.into(),
        ),
    ]
}

/// A manifest with `value` in one place: an env value, an argv element, a config file, a
/// Secret's `stringData` or `data`, an annotation.
fn manifest(place: &str, name: &str, value: &str) -> String {
    let quoted = serde_json::to_string(value).unwrap();
    let block: String = value.lines().map(|l| format!("    {l}\n")).collect();
    let b64 = {
        use std::fmt::Write;
        // base64 by hand: the test has no encoder dependency.
        const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in value.as_bytes().chunks(3) {
            let n =
                chunk.iter().fold(0u32, |a, &b| (a << 8) | u32::from(b)) << (8 * (3 - chunk.len()));
            for i in 0..4 {
                let c = if i <= chunk.len() {
                    T[(n >> (18 - 6 * i) & 63) as usize] as char
                } else {
                    '='
                };
                write!(out, "{c}").unwrap();
            }
        }
        out
    };
    let pod = |tail: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: app\nspec:\n  containers:\n    - name: main\n      image: nvcr.io/nvidia/tao/tao-toolkit:5.5.0-pyt\n{tail}"
        )
    };
    match place {
        "env" => pod(&format!(
            "      env:\n        - name: {name}\n          value: {quoted}\n"
        )),
        "args" => pod(&format!(
            "      args: [\"--{}\", {quoted}]\n",
            name.to_lowercase().replace('_', "-")
        )),
        "file" if value.contains('\n') => format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  {name}.pem: |\n{block}"
        ),
        "file" => format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  app.env: |\n    # settings\n    {name}={value}\n"
        ),
        "stringData" => format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\nstringData:\n  {name}: {quoted}\n"
        ),
        "data" => format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ndata:\n  {name}: {b64}\n"
        ),
        "annotation" => format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  annotations:\n    example.com/{}: {quoted}\nspec:\n  ports: [{{port: 80}}]\n",
            name.to_lowercase().replace('_', "-")
        ),
        _ => unreachable!(),
    }
}

/// Whether `text` holds any 6-character window of `secret`'s body (past the public prefix a
/// mask may show).
fn body_leaks(text: &str, secret: &str) -> Option<String> {
    let prefix = tao_k8s::secrets::public_prefix(secret).map_or(0, str::len);
    leaks(text, &secret[prefix..])
}

#[test]
fn a_credential_of_every_family_in_every_place_stays_masked_in_every_format() {
    const PLACES: [&str; 6] = ["env", "args", "file", "stringData", "data", "annotation"];
    let families = families();
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    let mut items =
        String::from("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n");
    for (family, name, value, _) in &families {
        for place in PLACES {
            let text = manifest(place, name, value);
            let file = format!("{family}-{place}.yaml");
            std::fs::write(dir.path().join(&file), &text).unwrap();
            items.push_str(&format!("- {}\n", text.trim_end().replace('\n', "\n  ")));
            files.push(file);
        }
    }
    let check = |what: &str, shown: &str| {
        for (family, _, _, secret) in &families {
            if let Some(window) = body_leaks(shown, secret) {
                panic!("{family}: `{window}` shown by {what}:\n{shown}");
            }
        }
    };
    // Every file is reported: the masks are exercised, not skipped.
    let json = run(
        &["lint", "--select", "redaction", "--format", "jsonl", "."],
        dir.path(),
    );
    for file in &files {
        assert!(
            json.contains(&format!("{file}\"")),
            "{file} not reported:\n{json}"
        );
    }
    for format in ["text", "json", "jsonl", "sarif", "github"] {
        check(
            &format!("lint --format {format}"),
            &run(&["lint", "--format", format, "."], dir.path()),
        );
    }
    // An object named by a credential: its results' `resourceRef` names it too.
    let github = &families.iter().find(|f| f.0 == "github").unwrap().2;
    items.push_str(&format!(
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: {github}\n  data:\n    DB_PASSWORD: FAKEpw-ref-99\n"
    ));
    // krm results: items pass through as they came (the function's input, not a report);
    // what it says of them must not echo them.
    let out = common::tao()
        .args(["--color=never", "krm", "--lint"])
        .write_stdin(items)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results = stdout.split("\nresults:").nth(1).expect("krm results");
    assert!(
        results.contains("TK101") && results.contains("ghp_****"),
        "{results}"
    );
    check("krm --lint results", results);
    check("krm --lint stderr", &String::from_utf8_lossy(&out.stderr));
    // Render diagnostics: the credential in a request's env and argv.
    let example =
        std::fs::read_to_string(Path::new(ROOT).join("examples/dino-train.yaml")).unwrap();
    for (family, name, value, secret) in &families {
        let option = name.to_lowercase().replace('_', "-");
        let quoted = serde_json::to_string(value).unwrap();
        let request = example
            .replace(
                "TAO_LOG_LEVEL: info",
                &format!("TAO_LOG_LEVEL: info\n    {name}: {quoted}"),
            )
            .replace(
                "results_dir=/results/dino-train-coco]",
                &format!("results_dir=/results/dino-train-coco, --{option}, {quoted}]"),
            );
        std::fs::write(dir.path().join("request.yaml"), request).unwrap();
        for args in [
            &["render", "request.yaml"][..],
            &["render", "-o", "json", "request.yaml"],
        ] {
            let shown = run(args, dir.path());
            assert!(
                shown.contains("TK"),
                "{family}: {args:?} reported nothing:\n{shown}"
            );
            if let Some(window) = body_leaks(&shown, secret) {
                panic!("{family}: `{window}` shown by {args:?}:\n{shown}");
            }
        }
    }
}
