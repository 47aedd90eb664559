//! Custom resources checked against CRDs and objects this project did not write: the upstream
//! CRDs of JobSet, Kueue and cert-manager (descriptions stripped, see
//! `fixtures/crd-oracle/README.md`; JobSet's is the vendored
//! `schemas/crds/jobset.x-k8s.io_jobsets.yaml`), their authors' own example objects, which their
//! clusters accept, and one-line edits of them that the API server refuses (each file says,
//! on its first line, the field and the API server's words).

mod common;

use common::ROOT;
use serde_json::Value as Json;
use std::path::PathBuf;

const ORACLE: &str = "fixtures/crd-oracle";
/// The JobSet CRD: vendored once, outside the oracle's folder.
const JOBSET_CRD: &str = "schemas/crds/jobset.x-k8s.io_jobsets.yaml";

fn files(dir: &str, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(format!("{ROOT}/{dir}"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

/// Every oracle CRD.
fn crds() -> Vec<PathBuf> {
    let mut crds = files(ORACLE, "-crd.yaml");
    crds.push(PathBuf::from(format!("{ROOT}/{JOBSET_CRD}")));
    crds
}

/// `lint --select strict-schema` with every oracle CRD, as JSON findings, and the exit code.
fn lint(paths: &[PathBuf]) -> (Vec<Json>, Option<i32>) {
    let mut tao = common::tao();
    tao.current_dir(ROOT)
        .args(["--color=never", "lint", "--format", "json"]);
    tao.args(["--select", "strict-schema"]);
    for crd in crds() {
        tao.arg("--crd").arg(crd);
    }
    let out = tao.args(paths).output().unwrap();
    let document: Json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    (
        document["findings"].as_array().unwrap().clone(),
        out.status.code(),
    )
}

/// The upstream CRDs are CRDs the API server accepts: no finding on them.
#[test]
fn upstream_crds_are_accepted() {
    let crds = crds();
    assert_eq!(crds.len(), 6);
    let (found, code) = lint(&crds);
    assert_eq!(found, Vec::<Json>::new());
    assert_eq!(code, Some(0));
}

/// Their authors' examples are objects the API server accepts.
#[test]
fn upstream_examples_are_accepted() {
    let valid = files(&format!("{ORACLE}/valid"), ".yaml");
    assert!(valid.len() >= 10, "{valid:?}");
    let (found, code) = lint(&valid);
    assert_eq!(found, Vec::<Json>::new());
    assert_eq!(code, Some(0));
}

/// Each one-line edit is refused once, at the field its first line names, with the API
/// server's words.
#[test]
fn edits_the_api_server_refuses_are_refused_at_their_field() {
    let invalid = files(&format!("{ORACLE}/invalid"), ".yaml");
    assert!(invalid.len() >= 8, "{invalid:?}");
    for file in invalid {
        let text = std::fs::read_to_string(&file).unwrap();
        let expect = text
            .lines()
            .next()
            .unwrap()
            .strip_prefix("# expect: ")
            .unwrap();
        let (path, says) = expect.split_once(' ').unwrap();
        let (found, code) = lint(std::slice::from_ref(&file));
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(code, Some(1), "{name}");
        assert_eq!(found.len(), 1, "{name}: {found:#?}");
        assert_eq!(found[0]["code"], "TK201", "{name}");
        assert_eq!(found[0]["path"], path, "{name}");
        let message = found[0]["message"].as_str().unwrap();
        // The API server's line, `path: Kind value: detail`; where it echoes more than the
        // file says (the type met, go-openapi's subject), both ends are looked for.
        let parts: Vec<String> = if says.starts_with("unknown field") {
            vec![format!("unknown field \"{path}\"")]
        } else if let Some(detail) = says.strip_prefix("Invalid value: must be ") {
            vec![
                format!("{path}: Invalid value: "),
                format!("must be {detail}"),
            ]
        } else if let Some((value, pattern)) = says.split_once(" should match ") {
            vec![
                format!("{path}: {value} "),
                format!("should match {pattern}"),
            ]
        } else {
            vec![format!("{path}: {says}")]
        };
        for part in parts {
            assert!(message.contains(&part), "{name}: `{part}` not in {message}");
        }
    }
}
