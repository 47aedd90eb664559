//! The vendored CRDs of `schemas/crds/`: each is the file its README says it is (the SHA-256
//! of the stripped upstream file, recorded there when it was made from upstream), and a CRD
//! the API server accepts. And the library, not only the CLI, checks JobSets against the
//! built-in one.

mod common;

use common::ROOT;
use sha2::{Digest, Sha256};
use std::path::Path;
use tao_k8s::crd::{self, Catalogue};
use tao_k8s::source::Source;

const DIR: &str = "schemas/crds";

/// The README's table: file name and SHA-256, from its first and last columns.
fn recorded() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(Path::new(ROOT).join(DIR).join("README.md")).unwrap();
    readme
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(".yaml |"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            let sha = cells.last().unwrap().trim_matches('`');
            (cells[0].to_string(), sha.to_string())
        })
        .collect()
}

/// The YAML files of the folder, by name.
fn vendored() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(Path::new(ROOT).join(DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    names
}

#[test]
fn each_vendored_crd_has_the_checksum_its_readme_records() {
    let recorded = recorded();
    let mut listed: Vec<String> = recorded.iter().map(|(name, _)| name.clone()).collect();
    listed.sort();
    assert_eq!(
        listed,
        vendored(),
        "the README's table lists every file, once"
    );
    for (name, sha) in recorded {
        let bytes = std::fs::read(Path::new(ROOT).join(DIR).join(&name)).unwrap();
        let hex: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hex, sha, "{name}: not the file the README records");
    }
}

#[test]
fn each_vendored_crd_is_one_the_api_server_accepts() {
    for name in vendored() {
        let path = Path::new(ROOT).join(DIR).join(&name);
        let source = Source::new(&name, std::fs::read_to_string(&path).unwrap());
        let stream = tao_k8s::yaml::parse_file(&source).unwrap();
        assert_eq!(stream.documents.len(), 1, "{name}: one CRD");
        assert_eq!(
            crd::flaws(&stream.documents[0]).len(),
            0,
            "{name}: flaws the API server refuses"
        );
        Catalogue::read(std::slice::from_ref(&source)).unwrap_or_else(|why| panic!("{why}"));
    }
    // Linted as a file, it has no finding either.
    let out = common::user()
        .args(["lint", "--format", "json", DIR])
        .output()
        .unwrap();
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["findings"], serde_json::json!([]));
    assert_eq!(out.status.code(), Some(0));
}

/// The library's lint, as `render` runs it on its own output, checks a JobSet against the
/// built-in CRD with no CRD given: the CLI is not what knows it.
#[test]
fn the_library_lint_knows_jobsets_without_a_catalogue() {
    let path = Path::new(ROOT)
        .join("fixtures/crd-oracle/invalid/jobsets-success-policy-operator-enum.yaml");
    let source = Source::new("jobset.yaml", std::fs::read_to_string(path).unwrap());
    let selection = tao_k8s::lint::Selection {
        select: vec!["strict-schema".into()],
        ..Default::default()
    };
    assert!(selection.crds.is_none());
    let found: Vec<(String, String)> = tao_k8s::lint::lint(&source, &selection)
        .unwrap()
        .into_iter()
        .map(|r| (r.diagnostic.code.to_string(), r.json_path))
        .collect();
    assert_eq!(
        found,
        [(
            "TK201".to_string(),
            "spec.successPolicy.operator".to_string()
        )]
    );
}
