//! Every rule against its fixtures: `fixtures/lint/<rule-name>/fail.yaml` marks each line a
//! finding must be reported on with `# expect: CODE` (no more, no fewer findings), and
//! `pass.yaml` holds near-misses that must report nothing. Also the registry's own rules:
//! unique codes, documented, with fixtures.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use tao_k8s::lint::{Selection, lint, registry};
use tao_k8s::source::Source;

use common::ROOT;

fn findings(path: &Path, code: &str) -> BTreeSet<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let source = Source::new(path.display().to_string(), text);
    let selection = Selection {
        select: vec![code.to_string()],
        ignore: Vec::new(),
        ..Default::default()
    };
    lint(&source, &selection)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .filter(|r| r.diagnostic.code == code)
        .map(|r| (r.line, r.diagnostic.code.to_string()))
        .collect()
}

fn expected(path: &Path) -> BTreeSet<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            line.split_once("# expect: ")
                .map(|(_, codes)| (i + 1, codes))
        })
        .flat_map(|(line, codes)| codes.split(',').map(move |c| (line, c.trim().to_string())))
        .collect()
}

#[test]
fn every_rule_reports_exactly_its_marked_lines() {
    for rule in registry::RULES {
        let meta = rule.meta();
        let dir = Path::new(ROOT).join("fixtures/lint").join(meta.name);
        let fail = dir.join("fail.yaml");
        let want = expected(&fail);
        assert!(!want.is_empty(), "{}: fail.yaml marks no line", meta.name);
        assert_eq!(findings(&fail, meta.code), want, "{}: fail.yaml", meta.name);
        assert_eq!(
            findings(&dir.join("pass.yaml"), meta.code),
            BTreeSet::new(),
            "{}: pass.yaml",
            meta.name
        );
    }
}

#[test]
fn the_registry_is_consistent_and_documented() {
    let mut codes = BTreeSet::new();
    let mut names = BTreeSet::new();
    for rule in registry::RULES {
        let m = rule.meta();
        assert!(codes.insert(m.code), "duplicate code {}", m.code);
        assert!(names.insert(m.name), "duplicate name {}", m.name);
        assert!(m.code.starts_with("TK") && m.code.len() == 5, "{}", m.code);
        assert!(
            m.name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{}",
            m.name
        );
        for section in ["What it checks:", "Why it matters:", "Example:", "Fix:"] {
            assert!(m.doc.contains(section), "{} lacks `{section}`", m.name);
        }
        let dir = Path::new(ROOT).join("fixtures/lint").join(m.name);
        assert!(
            dir.join("fail.yaml").exists() && dir.join("pass.yaml").exists(),
            "{} has no fixtures",
            m.name
        );
    }
    for entry in std::fs::read_dir(Path::new(ROOT).join("fixtures/lint")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            names.contains(name.as_str()),
            "fixtures/lint/{name} belongs to no rule"
        );
    }
}

#[test]
fn unknown_selections_are_named() {
    let s = Selection {
        select: vec!["redaction".into(), "no-such-rule".into()],
        ignore: vec!["TK201".into()],
        ..Default::default()
    };
    assert_eq!(s.unknown(), ["no-such-rule"]);
    assert!(
        s.rules()
            .iter()
            .all(|r| r.meta().group == tao_k8s::lint::Group::Redaction)
    );
}

/// What a user sees for each rule's failing fixture: the text report, as `tao-k8s lint` prints it.
#[test]
fn text_reports_of_every_failing_fixture() {
    for rule in registry::RULES {
        let meta = rule.meta();
        let fail = format!("fixtures/lint/{}/fail.yaml", meta.name);
        let out = common::tao()
            .current_dir(ROOT)
            .args([
                "--color=never",
                "lint",
                "--exit-zero",
                "--select",
                meta.code,
                &fail,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        // The findings on stdout; stderr has the summary line alone.
        let summary = String::from_utf8(out.stderr).unwrap();
        assert!(
            summary.ends_with("file(s)\n") && summary.lines().count() == 1,
            "{summary}"
        );
        insta::assert_snapshot!(
            format!("text-{}", meta.name),
            String::from_utf8(out.stdout).unwrap()
        );
    }
}

/// YAML merge keys, as kubectl reads them: no unknown `<<` field, and an env entry whose name
/// comes through a merge is checked like any other, at the line its value is written on.
#[test]
fn merge_keys_are_resolved_before_the_rules_run() {
    let text = "\
apiVersion: batch/v1
kind: Job
metadata:
  name: merged
  annotations: &db {name: DB_PASSWORD}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - &app
          name: app
          image: nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt
          env:
            - <<: *db
              value: FAKE6b86b273ff34fce1Q
        - <<: *app
          name: second
";
    let source = Source::new("merged.yaml", text);
    let found = lint(&source, &Selection::default()).unwrap();
    let codes: Vec<_> = found.iter().map(|r| r.diagnostic.code).collect();
    assert!(!codes.contains(&"TK201"), "{found:#?}");
    let credentials: Vec<_> = found
        .iter()
        .filter(|r| r.diagnostic.code == "TK101")
        .map(|r| (r.line, r.column, r.json_path.as_str()))
        .collect();
    assert_eq!(
        credentials,
        [
            (16, 22, "spec.template.spec.containers[0].env[0].value"),
            (16, 22, "spec.template.spec.containers[1].env[0].value"),
        ]
    );
}
