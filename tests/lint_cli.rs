//! `tao-k8s lint`, `rules` and `explain` as CI and pre-commit hooks call them: exit codes,
//! directory walking, stdin, suppressions, and the four output formats.

mod common;

use serde_json::Value as Json;

use common::ROOT;
const CREDENTIALS: &str = "fixtures/lint/inline-credential/fail.yaml";

fn tao(args: &[&str]) -> std::process::Output {
    common::tao()
        .current_dir(ROOT)
        .arg("--color=never")
        .args(args)
        .output()
        .unwrap()
}

fn code(out: &std::process::Output) -> Option<i32> {
    out.status.code()
}

/// The findings of a `--format json` run, after checking the document's shape.
fn findings(out: &std::process::Output) -> Vec<Json> {
    let document: Json = serde_json::from_slice(&out.stdout).unwrap();
    let findings = document["findings"].as_array().unwrap().clone();
    let summary = &document["summary"];
    let count = |severity: &str| {
        findings
            .iter()
            .filter(|f| f["severity"] == severity)
            .count()
    };
    assert_eq!(summary["errors"], count("error"));
    assert_eq!(summary["warnings"], count("warning"));
    assert_eq!(summary["notes"], count("note"));
    findings
}

#[test]
fn exit_codes_follow_findings_and_flags() {
    assert_eq!(
        code(&tao(&["lint", "fixtures/lint-cli/tree/clean.yaml"])),
        Some(0)
    );
    assert_eq!(code(&tao(&["lint", CREDENTIALS])), Some(1));
    assert_eq!(code(&tao(&["lint", "--exit-zero", CREDENTIALS])), Some(0));
    let warnings = "fixtures/lint-cli/tree/nested/warning-only.yml";
    assert_eq!(
        code(&tao(&["lint", warnings])),
        Some(0),
        "warnings do not fail by default"
    );
    assert_eq!(
        code(&tao(&["lint", "--fail-on", "warning", warnings])),
        Some(1)
    );
    assert_eq!(
        code(&tao(&["lint", "fixtures/lint-cli/broken.yaml"])),
        Some(2)
    );
    assert_eq!(code(&tao(&["lint", "no/such/dir"])), Some(2));
    assert_eq!(
        code(&tao(&["lint", "--select", "no-such-rule", CREDENTIALS])),
        Some(2)
    );
    let broken = tao(&["lint", "fixtures/lint-cli/broken.yaml"]);
    assert!(
        String::from_utf8_lossy(&broken.stderr).contains("fixtures/lint-cli/broken.yaml:4:"),
        "{}",
        String::from_utf8_lossy(&broken.stderr)
    );
}

#[test]
fn directories_are_walked_without_templates_and_stdin_works() {
    let out = tao(&[
        "lint",
        "--format",
        "json",
        "--fail-on",
        "warning",
        "fixtures/lint-cli/tree",
    ]);
    assert_eq!(
        code(&out),
        Some(1),
        "the warning in nested/ was found: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: Vec<String> = findings(&out)
        .iter()
        .map(|f| f["file"].as_str().unwrap().to_string())
        .collect();
    assert!(
        files.iter().all(|f| f.ends_with("nested/warning-only.yml")),
        "{files:?}"
    );

    let text = std::fs::read_to_string(format!("{ROOT}/{CREDENTIALS}")).unwrap();
    let out = common::tao()
        .args(["lint", "--format", "json", "-"])
        .write_stdin(text)
        .output()
        .unwrap();
    assert_eq!(code(&out), Some(1));
    assert!(findings(&out).iter().all(|f| f["file"] == "<stdin>"));
}

#[test]
fn select_and_ignore_take_codes_names_and_groups() {
    let count = |args: &[&str]| String::from_utf8(tao(args).stdout).unwrap().lines().count();
    let upper = count(&[
        "lint",
        "--format",
        "jsonl",
        "--select",
        "REDACTION",
        "fixtures/lint",
    ]);
    let any_case = count(&[
        "lint",
        "--format",
        "jsonl",
        "--select",
        "tk101,Secret-Data",
        "fixtures/lint",
    ]);
    let ignored_any_case = count(&[
        "lint",
        "--format",
        "jsonl",
        "--ignore",
        "Redaction",
        "fixtures/lint",
    ]);
    let all = count(&["lint", "--format", "jsonl", "fixtures/lint"]);
    let redaction = count(&[
        "lint",
        "--format",
        "jsonl",
        "--select",
        "redaction",
        "fixtures/lint",
    ]);
    let by_code = count(&[
        "lint",
        "--format",
        "jsonl",
        "--select",
        "TK101,TK102",
        "fixtures/lint",
    ]);
    let by_name = count(&[
        "lint",
        "--format",
        "jsonl",
        "--select",
        "inline-credential,secret-data",
        "fixtures/lint",
    ]);
    let ignored = count(&[
        "lint",
        "--format",
        "jsonl",
        "--ignore",
        "redaction",
        "fixtures/lint",
    ]);
    // `secret-data` is opt-in: named by code or name, never by its group or by default.
    let opt_in = count(&[
        "lint",
        "--format",
        "jsonl",
        "--select",
        "TK102",
        "fixtures/lint",
    ]);
    assert!(redaction > 0 && redaction < all && opt_in > 0);
    assert_eq!(
        (upper, any_case, ignored_any_case),
        (redaction, redaction + opt_in, ignored)
    );
    assert_eq!(by_code, redaction + opt_in);
    assert_eq!(by_name, redaction + opt_in);
    assert_eq!(ignored + redaction, all);
}

#[test]
fn suppressions_work_and_stale_ones_are_reported() {
    let out = tao(&[
        "lint",
        "--format",
        "json",
        "fixtures/lint-cli/suppressed.yaml",
    ]);
    let lines = findings(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["code"], "TK020");
    assert_eq!(lines[0]["severity"], "warning");
    assert_eq!(lines[0]["object"], "ConfigMap/stale");
    assert_eq!(code(&out), Some(0), "a stale suppression is a warning");
}

#[test]
fn a_renamed_code_still_suppresses_with_a_note() {
    let out = tao(&[
        "lint",
        "--format",
        "json",
        "fixtures/lint-cli/renamed-code.yaml",
    ]);
    let lines = findings(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["code"], "TK020");
    assert_eq!(lines[0]["severity"], "note");
    assert!(
        lines[0]["message"]
            .as_str()
            .unwrap()
            .contains("names TK002, which is now TK021"),
        "{lines:?}"
    );
    assert_eq!(code(&out), Some(0));
}

#[test]
fn json_lines_carry_file_position_object_and_path() {
    let out = tao(&["lint", "--format", "jsonl", CREDENTIALS]);
    let first: Json = serde_json::from_str(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["code"], "TK101");
    assert_eq!(first["name"], "inline-credential");
    assert_eq!(first["severity"], "error");
    assert_eq!(first["file"], CREDENTIALS);
    assert_eq!(
        (first["line"].as_u64(), first["column"].as_u64()),
        (Some(7), Some(27))
    );
    assert_eq!(first["object"], "Job/leaky");
    assert_eq!(
        first["path"],
        r#"metadata.annotations["ci.example.com/token"]"#
    );
}

#[test]
fn no_format_prints_a_credential() {
    let planted = [
        "FAKEFAKEFAKE0000",
        "FAKEFAKEFAKEFAKE",
        "fAkEfAkE",
        "FAKE/fake+FAKE0",
    ];
    for format in ["text", "json", "jsonl", "sarif", "github"] {
        let out = tao(&["lint", "--format", format, CREDENTIALS]);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for p in planted {
            assert!(!all.contains(p), "{format} printed {p}");
        }
    }
}

#[test]
fn sarif_has_what_code_scanning_reads() {
    let out = tao(&["lint", "--format", "sarif", CREDENTIALS]);
    let sarif: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "tao-k8s");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert!(
        rules
            .iter()
            .all(|r| r["id"].is_string() && r["shortDescription"]["text"].is_string())
    );
    let results = run["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for r in results {
        let index = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index]["id"], r["ruleId"]);
        assert!(matches!(
            r["level"].as_str(),
            Some("error" | "warning" | "note")
        ));
        assert!(r["message"]["text"].is_string());
        let location = &r["locations"][0]["physicalLocation"];
        assert_eq!(location["artifactLocation"]["uri"], CREDENTIALS);
        assert!(location["region"]["startLine"].as_u64().unwrap() >= 1);
        assert!(location["region"]["startColumn"].as_u64().unwrap() >= 1);
    }
    // The results, without the rule texts (checked above), as a reviewed snapshot.
    insta::assert_json_snapshot!(run["results"]);
}

#[test]
fn github_annotations_are_escaped() {
    let out = tao(&[
        "lint",
        "--format",
        "github",
        "fixtures/lint/duplicate-key/fail.yaml",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text, "::error file=fixtures/lint/duplicate-key/fail.yaml,line=8,col=3,title=TK202 duplicate-key::duplicate key `mode`%3A kubectl refuses it\n".replace("%3A", ":"));
}

#[test]
fn rules_and_explain() {
    let rules: Json = serde_json::from_slice(&tao(&["rules", "--format", "json"]).stdout).unwrap();
    assert!(
        rules
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["code"] == "TK101" && r["group"] == "redaction")
    );
    let text = String::from_utf8(tao(&["explain", "inline-credential"]).stdout).unwrap();
    assert!(
        text.starts_with("TK101 inline-credential (redaction, error)\n\nWhat it checks:"),
        "{text}"
    );
    assert_eq!(code(&tao(&["explain", "TK999"])), Some(2));
    for name in ["tk101", "Inline-Credential", "INLINE-CREDENTIAL"] {
        let out = tao(&["explain", name]);
        assert_eq!(code(&out), Some(0), "{name}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), text, "{name}");
    }
    let lines = String::from_utf8(tao(&["rules", "--format", "jsonl"]).stdout).unwrap();
    let each: Vec<Json> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(&each[..], rules.as_array().unwrap().as_slice());
}

#[test]
fn explain_shows_the_request_checks_of_a_code_and_by_name() {
    let text = String::from_utf8(tao(&["explain", "TK013"]).stdout).unwrap();
    assert!(text.starts_with("TK013 results-dir\n\n"), "{text}");
    assert!(
        text.contains("\nrequest check `results-dir` (TK013):\n\nWhat it checks:"),
        "{text}"
    );
    let out = tao(&["explain", "results-dir"]);
    assert_eq!(code(&out), Some(0));
    let by_name = String::from_utf8(out.stdout).unwrap();
    assert!(
        by_name.starts_with("request check `results-dir` (TK013):\n\nWhat it checks:"),
        "{by_name}"
    );
    // A code no check reports has none listed.
    let text = String::from_utf8(tao(&["explain", "TK090"]).stdout).unwrap();
    assert!(!text.contains("request check"), "{text}");
}

#[test]
fn json_is_one_document_also_when_clean_and_text_keeps_stdout_for_findings() {
    let clean = tao(&[
        "lint",
        "--format",
        "json",
        "fixtures/lint-cli/tree/clean.yaml",
    ]);
    assert_eq!(code(&clean), Some(0));
    let document: Json = serde_json::from_slice(&clean.stdout).unwrap();
    assert_eq!(
        document,
        serde_json::json!({
            "findings": [],
            "summary": {"errors": 0, "warnings": 0, "notes": 0, "files": 1},
        })
    );
    let dirty = tao(&["lint", "--format", "json", CREDENTIALS]);
    let found = findings(&dirty);
    let document: Json = serde_json::from_slice(&dirty.stdout).unwrap();
    assert_eq!(document["summary"]["files"], 1);
    assert!(found.len() > 1);
    let lines = tao(&["lint", "--format", "jsonl", CREDENTIALS]);
    let each: Vec<Json> = String::from_utf8(lines.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(each, found, "json and jsonl carry the same findings");

    // Text: code frames on stdout, the summary alone on stderr.
    let text = tao(&["lint", CREDENTIALS]);
    let stdout = String::from_utf8(text.stdout).unwrap();
    let stderr = String::from_utf8(text.stderr).unwrap();
    assert!(stdout.starts_with("error[TK101]"), "{stdout}");
    assert!(!stdout.contains("error(s)"), "{stdout}");
    let count = |severity: &str| found.iter().filter(|f| f["severity"] == severity).count();
    assert_eq!(
        stderr,
        format!(
            "{} error(s), {} warning(s) in 1 file(s)\n",
            count("error"),
            count("warning")
        )
    );
}

#[cfg(unix)]
#[test]
fn directories_are_walked_once_through_symlink_loops_like_kubectl_reads_them() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let manifest = std::fs::read_to_string(format!("{ROOT}/{CREDENTIALS}")).unwrap();
    let per_file = findings(&tao(&["lint", "--format", "json", CREDENTIALS])).len();
    for sub in ["sub", "templates", ".hidden"] {
        std::fs::create_dir(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("sub/a.yaml"), &manifest).unwrap();
    std::fs::write(root.join("templates/t.yaml"), &manifest).unwrap();
    std::fs::write(root.join(".hidden/h.yaml"), &manifest).unwrap();
    std::fs::write(root.join("ignored.yaml"), &manifest).unwrap();
    std::fs::write(root.join(".gitignore"), "ignored.yaml\n").unwrap();
    std::fs::write(root.join("notes.txt"), &manifest).unwrap();
    // kubectl apply -f DIR reads JSON manifests too.
    std::fs::write(
        root.join("c.json"),
        r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"token": "ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE1234"}}"#,
    )
    .unwrap();
    // Two loops back to the root, and a second name for `sub`.
    symlink(".", root.join("self")).unwrap();
    symlink("..", root.join("sub/up")).unwrap();
    symlink("sub", root.join("again")).unwrap();

    let out = common::tao()
        .current_dir(root)
        .args(["lint", "--format", "json", "."])
        // A hang guard far above the second it takes: the loops ran for minutes.
        .timeout(common::HANG_GUARD)
        .output()
        .unwrap();
    assert_eq!(
        code(&out),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found = findings(&out);
    let mut files: Vec<&str> = found.iter().map(|f| f["file"].as_str().unwrap()).collect();
    let count = |name: &str| files.iter().filter(|f| **f == name).count();
    assert_eq!(count("./again/a.yaml"), per_file, "{files:?}");
    assert_eq!(count("./c.json"), 1, "{files:?}");
    files.dedup();
    assert_eq!(files, ["./again/a.yaml", "./c.json"]);

    // Named on the command line, a file is linted wherever it is.
    let named = common::tao()
        .current_dir(root)
        .args([
            "lint",
            "--format",
            "jsonl",
            "templates/t.yaml",
            "ignored.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(named.stdout).unwrap().lines().count(),
        2 * per_file
    );
}

const CRD: &str = "fixtures/lint-cli/crd/trainingqueue-crd.yaml";
const CUSTOM: &str = "fixtures/lint-cli/crd/queues.yaml";

/// `(code, severity, line, field)` of every finding.
fn where_found(out: &std::process::Output) -> Vec<(String, String, u64, String)> {
    findings(out)
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
                f["path"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn custom_resources_are_checked_against_their_crd() {
    let out = tao(&["lint", "--format", "json", "--crd", CRD, CUSTOM]);
    assert_eq!(code(&out), Some(1));
    let found = where_found(&out);
    let error = |line: u64, path: &str| {
        (
            "TK201".to_string(),
            "error".to_string(),
            line,
            path.to_string(),
        )
    };
    let note = |line: u64| ("TK021".to_string(), "note".to_string(), line, String::new());
    assert_eq!(
        found,
        [
            error(23, "spec.maxGpus"),
            error(24, "spec.maxGpu"),
            error(25, "spec.burst"),
            error(26, "spec.policy"),
            error(27, "spec.clusterName"),
            error(28, "spec.nodeLabels.zone"),
            error(30, "spec.flavors[0].name"),
            error(31, "spec.flavors[0].nmae"),
            error(33, "status.admitted"),
            // v1alpha1 declares no schema: not checked, as an unknown kind.
            note(35),
            // v2 is not a version of the CRD: the API server has no such resource.
            error(42, "apiVersion"),
            // No CRD for it.
            note(49),
        ]
    );
    let text = String::from_utf8_lossy(&tao(&["lint", "--crd", CRD, CUSTOM]).stdout).to_string();
    // The API server's words: strict field validation, then the schema's value validations.
    for says in [
        "unknown field \"spec.maxGpu\"",
        "spec.maxGpus: Required value",
        "spec.burst: Invalid value: \"number\": spec.burst in body must be of type integer,string",
        "spec.policy: Unsupported value: \"RoundRobin\": supported values: \"Fifo\", \"Fair\"",
        "spec.nodeLabels.zone: Invalid value: \"integer\"",
    ] {
        assert!(text.contains(says), "{says}: {text}");
    }
    assert!(
        text.contains("declares no schema for gpu.example.com/v1alpha1"),
        "{text}"
    );
    // A folder of CRDs (and other manifests, skipped) reads the same.
    let folder = tao(&[
        "lint",
        "--format",
        "json",
        "--crd",
        "fixtures/lint-cli/crd",
        CUSTOM,
    ]);
    assert_eq!(where_found(&folder), found);

    // A stream that holds the CRD beside its objects (a chart's output), after them: the same
    // findings without --crd, and none on the CRD itself.
    let custom = std::fs::read_to_string(format!("{ROOT}/{CUSTOM}")).unwrap();
    let crd = std::fs::read_to_string(format!("{ROOT}/{CRD}")).unwrap();
    let out = common::tao()
        .args(["lint", "--format", "json", "-"])
        .write_stdin(format!("{custom}---\n{crd}"))
        .output()
        .unwrap();
    assert_eq!(code(&out), Some(1));
    assert_eq!(where_found(&out), found);
    // A CRD the API server would refuse is not used: its objects are not checked.
    let refused = crd.replacen("type: object", "type: objekt", 1);
    assert_ne!(refused, crd);
    let out = common::tao()
        .args(["lint", "--format", "json", "-"])
        .write_stdin(format!("{custom}---\n{refused}"))
        .output()
        .unwrap();
    let unchecked = where_found(&out);
    assert!(
        unchecked.iter().all(|f| f.0 == "TK021" || f.2 > 49),
        "{unchecked:?}"
    );
}

#[test]
fn strict_kinds_makes_a_kind_without_schema_an_error() {
    let notes = tao(&["lint", "--format", "json", CUSTOM]);
    let found = where_found(&notes);
    assert_eq!(found.len(), 5, "{found:?}");
    assert!(
        found.iter().all(|f| f.0 == "TK021" && f.1 == "note"),
        "{found:?}"
    );
    assert_eq!(
        code(&notes),
        Some(0),
        "a kind without schema is a note by default"
    );
    let strict = tao(&["lint", "--format", "json", "--strict-kinds", CUSTOM]);
    assert_eq!(code(&strict), Some(1));
    assert!(
        where_found(&strict)
            .iter()
            .all(|f| f.0 == "TK021" && f.1 == "error")
    );
    let with_crd = tao(&[
        "lint",
        "--format",
        "json",
        "--strict-kinds",
        "--crd",
        CRD,
        CUSTOM,
    ]);
    let unknown: Vec<u64> = where_found(&with_crd)
        .iter()
        .filter(|f| f.0 == "TK021")
        .map(|f| f.2)
        .collect();
    assert_eq!(unknown, [35, 49]);
    // A suppression still holds under --strict-kinds.
    let suppressed = "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  \
                      name: m\n  annotations: {tao-k8s.io/ignore: \"TK021 # no CRD at hand\"}\n";
    let out = common::tao()
        .args(["lint", "--strict-kinds", "-"])
        .write_stdin(suppressed)
        .output()
        .unwrap();
    assert_eq!(
        code(&out),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_crd_that_cannot_be_read_stops_the_run() {
    for (crd, says) in [
        (
            "fixtures/lint-cli/legacy-crd.yaml",
            "legacy-crd.yaml:1:1: a CustomResourceDefinition of `apiextensions.k8s.io/v1beta1`",
        ),
        ("fixtures/lint-cli/missing.yaml", "missing.yaml"),
        (CUSTOM, "no CustomResourceDefinition in"),
        ("fixtures/lint-cli/broken.yaml", "not valid YAML"),
    ] {
        let out = tao(&["lint", "--crd", crd, CUSTOM]);
        assert_eq!(code(&out), Some(2), "{crd}");
        assert!(out.stdout.is_empty(), "{crd}: nothing is linted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{crd}: {stderr}");
    }
}

/// A CRD of one kind whose `spec.name` has `pattern`.
fn crd_with_pattern(pattern: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: things.example.com}}\n\
         spec:\n  group: example.com\n  names: {{kind: Thing, plural: things}}\n  scope: Namespaced\n  versions:\n  \
         - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        \
         properties:\n          spec:\n            type: object\n            properties:\n              \
         name: {{type: string, pattern: '{pattern}'}}\n"
    )
}

fn things(names: &[&str]) -> String {
    names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            format!(
                "---\napiVersion: example.com/v1\nkind: Thing\nmetadata: {{name: t{i}}}\nspec: {{name: \"{n}\"}}\n"
            )
        })
        .collect()
}

/// `pattern`s are Go's RE2, as the API server reads them: `(?i)` and `\z` are patterns (the
/// ECMAScript engine made every object an error), and one that RE2 does not compile
/// (a look-ahead) makes the CRD unreadable once, at its place, not every object invalid.
#[test]
fn crd_patterns_are_re2_and_an_uncompilable_one_is_reported_once_on_the_crd() {
    let dir = tempfile::tempdir().unwrap();
    let lint = |pattern: &str, names: &[&str]| {
        std::fs::write(dir.path().join("crd.yaml"), crd_with_pattern(pattern)).unwrap();
        std::fs::write(dir.path().join("things.yaml"), things(names)).unwrap();
        common::tao()
            .current_dir(dir.path())
            .args([
                "--color=never",
                "lint",
                "--format",
                "json",
                "--crd",
                "crd.yaml",
                "things.yaml",
            ])
            .output()
            .unwrap()
    };
    let out = lint(r"(?i)^[a-z]+\z", &["Abc", "abc", "ab1"]);
    assert_eq!(
        code(&out),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found = findings(&out);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["path"], "spec.name");
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .contains(r"spec.name in body should match '(?i)^[a-z]+\z'"),
        "{found:?}"
    );
    let out = lint("^(?=a)b", &["a", "b", "c"]);
    assert_eq!(code(&out), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("error").count(), 1, "{stderr}");
    assert!(
        stderr.contains("crd.yaml:19:45: ") && stderr.contains("spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[name].pattern: Invalid value: `^(?=a)b` is not a regular expression the API server reads"),
        "{stderr}"
    );
}

/// An action request is linted with the request's own checks: the codes and positions
/// `render` reports (a misspelt field is TK003 at its line and column, not a TK021 note of an
/// unknown kind), exit 1; a valid request lints clean.
#[test]
fn an_action_request_gets_the_checks_render_runs() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{ROOT}/fixtures/requests/valid/args-mode.yaml"))
        .unwrap()
        .replace("networkArch:", "netwrokArch:");
    let path = dir.path().join("request.yaml");
    std::fs::write(&path, text).unwrap();
    let path = path.to_str().unwrap();
    let linted = tao(&["lint", "--format", "json", path]);
    assert_eq!(code(&linted), Some(1));
    let found = findings(&linted);
    assert!(found.iter().all(|f| f["code"] != "TK021"), "{found:#?}");
    let rendered = tao(&["render", path]);
    assert_eq!(code(&rendered), Some(1));
    let stderr = String::from_utf8_lossy(&rendered.stderr).to_string();
    for f in &found {
        let at = format!("{path}:{}:{}", f["line"], f["column"]);
        assert!(
            stderr.contains(&at) && stderr.contains(f["code"].as_str().unwrap()),
            "{at} {f:#?} not in render's:\n{stderr}"
        );
    }
    assert!(
        found
            .iter()
            .any(|f| f["code"] == "TK003" && f["line"] == 13),
        "{found:#?}"
    );
    let clean = tao(&["lint", "fixtures/requests/valid/args-mode.yaml"]);
    assert_eq!(
        code(&clean),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stdout)
    );
}

/// `--pod-security` checks pods of namespaces no Namespace in the file labels; a labelled
/// Namespace decides for its own objects; nothing is checked without either.
#[test]
fn pod_security_levels_come_from_the_flag_or_the_namespace_label() {
    let stream = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: open\n  labels: \
                  {pod-security.kubernetes.io/enforce: privileged}\n---\n\
                  apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  hostNetwork: true\n  \
                  containers: [{name: c, image: busybox:1.36}]\n---\n\
                  apiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: open}\nspec:\n  \
                  hostNetwork: true\n  containers: [{name: c, image: busybox:1.36}]\n";
    let run = |flags: &[&str]| {
        let out = common::tao()
            .args([
                "--color=never",
                "lint",
                "--format",
                "json",
                "--select",
                "pod-security",
            ])
            .args(flags)
            .arg("-")
            .write_stdin(stream)
            .output()
            .unwrap();
        let found: Vec<String> = findings(&out)
            .iter()
            .map(|f| format!("{}: {}", f["line"], f["message"].as_str().unwrap()))
            .collect();
        (code(&out), found)
    };
    assert_eq!(run(&[]), (Some(0), Vec::new()));
    let (exit, found) = run(&["--pod-security", "baseline"]);
    assert_eq!(exit, Some(1));
    assert_eq!(
        found,
        ["11: Pod/a: violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)"]
    );
    let (_, found) = run(&["--pod-security", "restricted:v1.30"]);
    assert_eq!(found.len(), 5, "{found:#?}");
    assert!(
        found.iter().all(|f| f.contains("\"restricted:v1.30\"")),
        "{found:#?}"
    );
    let bad = common::tao()
        .args(["lint", "--pod-security", "strict", "-"])
        .write_stdin(stream)
        .output()
        .unwrap();
    assert_eq!(code(&bad), Some(2));
}

/// `--policy` files bind policies to the objects of other files; one that cannot be read
/// stops the run.
#[test]
fn admission_policies_from_policy_files_check_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let policy = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n\
                  metadata: {name: registry}\nspec:\n  matchConstraints:\n    resourceRules:\n    \
                  - {apiGroups: [batch], apiVersions: [v1], operations: [CREATE], resources: [jobs]}\n  \
                  validations:\n  - expression: \"object.spec.template.spec.containers.all(c, c.image.startsWith('nvcr.io/'))\"\n---\n\
                  apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n\
                  metadata: {name: registry-binding}\nspec: {policyName: registry, validationActions: [Deny]}\n";
    let job = |image: &str| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j}}\nspec:\n  template:\n    spec:\n      \
             restartPolicy: Never\n      containers: [{{name: c, image: \"{image}\"}}]\n"
        )
    };
    std::fs::write(dir.path().join("policy.yaml"), policy).unwrap();
    std::fs::write(
        dir.path().join("ok.yaml"),
        job("nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        job("docker.io/library/python:3.12"),
    )
    .unwrap();
    let run = |args: &[&str]| {
        common::tao()
            .current_dir(dir.path())
            .args([
                "--color=never",
                "lint",
                "--format",
                "json",
                "--select",
                "admission-policy",
            ])
            .args(args)
            .output()
            .unwrap()
    };
    let ok = run(&["--policy", "policy.yaml", "ok.yaml"]);
    assert_eq!(
        code(&ok),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    let bad = run(&["--policy", "policy.yaml", "bad.yaml"]);
    assert_eq!(code(&bad), Some(1));
    let found = findings(&bad);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0]["message"],
        "ValidatingAdmissionPolicy 'registry' with binding 'registry-binding' denied request: \
         failed expression: object.spec.template.spec.containers.all(c, c.image.startsWith('nvcr.io/'))"
    );
    assert_eq!(found[0]["severity"], "error");
    // A `Warn` binding admits the object: its finding is a warning.
    std::fs::write(
        dir.path().join("warn.yaml"),
        policy.replace(
            "validationActions: [Deny]",
            "validationActions: [Warn, Audit]",
        ),
    )
    .unwrap();
    let warned = run(&["--policy", "warn.yaml", "bad.yaml"]);
    let found = findings(&warned);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["severity"], "warning");
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .ends_with("(validationActions: Warn: admitted with a warning)")
    );
    // Without --policy, and without a binding in the file, nothing is checked.
    assert_eq!(code(&run(&["bad.yaml"])), Some(0));
    std::fs::write(
        dir.path().join("broken.yaml"),
        policy.replace("c.image.startsWith('nvcr.io/'))", "c.image.startsWith("),
    )
    .unwrap();
    let broken = run(&["--policy", "broken.yaml", "ok.yaml"]);
    assert_eq!(code(&broken), Some(2));
    assert!(broken.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&broken.stderr);
    assert!(
        stderr.contains("broken.yaml:9:")
            && stderr.contains("spec.validations[0].expression: Invalid value"),
        "{stderr}"
    );
    let none = run(&["--policy", "ok.yaml", "bad.yaml"]);
    assert_eq!(code(&none), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no ValidatingAdmissionPolicy in"));
}
