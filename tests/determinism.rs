//! Determinism and idempotence: the same request renders to the same bytes in two processes
//! whatever their locale and timezone; rendered output lints clean; `-o json` and `-o yaml`
//! are the same objects.

mod common;

use serde_json::Value;
use std::path::Path;
use tao_k8s::source::Source;
use tao_k8s::yaml::{Limits, parse};

use common::ROOT;

/// Two environments as far apart as a CI runner and a laptop can be.
const ENVIRONMENTS: [&[(&str, &str)]; 2] = [
    &[("LC_ALL", "C"), ("LANG", "C"), ("TZ", "UTC")],
    &[
        ("LC_ALL", "tr_TR.UTF-8"),
        ("LANG", "de_DE.UTF-8"),
        ("LC_NUMERIC", "de_DE.UTF-8"),
        ("TZ", "Pacific/Chatham"),
    ],
];

fn tao(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let out = common::tao()
        .args(args)
        .current_dir(ROOT)
        .env_remove("TAO_K8S_NAMESPACE")
        .envs(env.iter().copied())
        .stdin_null()
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn requests() -> Vec<String> {
    let mut paths: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("fixtures/requests/valid"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| p.strip_prefix(ROOT).unwrap().display().to_string())
        .collect();
    paths.sort();
    assert!(paths.len() > 10);
    paths
}

#[test]
fn rendering_is_byte_identical_across_processes_locales_and_timezones() {
    for request in requests() {
        for args in [
            vec!["render", &request],
            vec!["render", &request, "-o", "json"],
            vec!["script", &request],
        ] {
            let [a, b] = ENVIRONMENTS.map(|env| tao(&args, env).stdout);
            assert!(!a.is_empty());
            assert!(a == b, "{args:?} differs between environments");
        }
        // The bundle too, file by file.
        let dirs = ENVIRONMENTS.map(|env| {
            let dir = tempfile::tempdir().unwrap();
            tao(
                &["render", &request, "--out", dir.path().to_str().unwrap()],
                env,
            );
            dir
        });
        let files = |dir: &Path| {
            let mut names: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            names.sort();
            names
        };
        assert_eq!(files(dirs[0].path()), files(dirs[1].path()));
        for name in files(dirs[0].path()) {
            let [a, b] = [&dirs[0], &dirs[1]].map(|d| std::fs::read(d.path().join(&name)).unwrap());
            assert!(a == b, "{request}: {name:?} differs between environments");
        }
    }
}

#[test]
fn rendered_output_lints_clean_and_json_and_yaml_are_the_same_objects() {
    let env = ENVIRONMENTS[0];
    for request in requests() {
        let yaml = tao(&["render", &request], env).stdout;
        let json = tao(&["render", &request, "-o", "json"], env).stdout;

        // The lint, warnings included, finds nothing in what render prints.
        let linted = common::tao()
            .args(["lint", "--fail-on", "warning", "--format", "jsonl", "-"])
            .write_stdin(yaml.clone())
            .output()
            .unwrap();
        assert_eq!(
            linted.status.code(),
            Some(0),
            "{request}: {}",
            String::from_utf8_lossy(&linted.stdout)
        );
        assert!(linted.stdout.is_empty());

        let text = String::from_utf8(yaml).unwrap();
        let from_yaml: Vec<Value> = parse(&Source::new("out", text), Limits::default())
            .unwrap()
            .documents
            .iter()
            .map(|d| d.to_json())
            .collect();
        let json: Value = serde_json::from_slice(&json).unwrap();
        let from_json = match json["kind"].as_str() {
            Some("List") => json["items"].as_array().unwrap().clone(),
            _ => vec![json],
        };
        assert!(!from_yaml.is_empty());
        assert_eq!(from_yaml, from_json, "{request}");
    }
}
