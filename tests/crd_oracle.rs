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
    lint_with(&crds(), paths)
}

/// `lint --select strict-schema` with these CRDs (`--crd`), as JSON findings, and the exit
/// code.
fn lint_with(crds: &[PathBuf], paths: &[PathBuf]) -> (Vec<Json>, Option<i32>) {
    let mut tao = common::tao();
    tao.current_dir(ROOT)
        .args(["--color=never", "lint", "--format", "json"]);
    tao.args(["--select", "strict-schema"]);
    for crd in crds {
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

/// The JobSet CRD is built in: without `--crd`, JobSet's examples are accepted and each edit of
/// them is refused with the very findings (field, message, place) the CRD gives as `--crd`.
#[test]
fn jobsets_are_checked_without_crd_as_with_it() {
    let valid = files(&format!("{ORACLE}/valid"), ".yaml");
    let jobsets: Vec<PathBuf> = valid
        .into_iter()
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("jobsets-")
        })
        .collect();
    assert!(jobsets.len() >= 4, "{jobsets:?}");
    let (found, code) = lint_with(&[], &jobsets);
    assert_eq!(found, Vec::<Json>::new());
    assert_eq!(code, Some(0));
    let invalid: Vec<PathBuf> = files(&format!("{ORACLE}/invalid"), ".yaml")
        .into_iter()
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("jobsets-")
        })
        .collect();
    assert!(invalid.len() >= 5, "{invalid:?}");
    for file in invalid {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let path = std::fs::read_to_string(&file).unwrap();
        let path = path.lines().next().unwrap()["# expect: ".len()..]
            .split_once(' ')
            .unwrap()
            .0
            .to_string();
        let built_in = lint_with(&[], std::slice::from_ref(&file));
        assert_eq!(built_in.1, Some(1), "{name}");
        assert_eq!(built_in.0.len(), 1, "{name}: {:#?}", built_in.0);
        assert_eq!(built_in.0[0]["code"], "TK201", "{name}");
        assert_eq!(built_in.0[0]["path"], path.as_str(), "{name}");
        let given = lint_with(&[PathBuf::from(JOBSET_CRD)], std::slice::from_ref(&file));
        assert_eq!(built_in, given, "{name}");
    }
}

/// A JobSet CRD given with `--crd` wins over the built-in one (the cluster may run another
/// release): one that requires a field refuses the example without it, one that serves
/// another version refuses the example's.
#[test]
fn a_jobset_crd_given_with_crd_wins_over_the_built_in_one() {
    let upstream = std::fs::read_to_string(format!("{ROOT}/{JOBSET_CRD}")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let example = PathBuf::from(format!("{ORACLE}/valid/jobsets-success-policy.yaml"));
    let (found, code) = lint_with(&[], std::slice::from_ref(&example));
    assert_eq!((found, code), (Vec::<Json>::new(), Some(0)));

    // spec.ttlSecondsAfterFinished required.
    let end_of_spec = "  rule: self == oldSelf\n            type: object\n            x-kubernetes-validations:\n";
    assert_eq!(upstream.matches(end_of_spec).count(), 1);
    let required = upstream.replace(
        end_of_spec,
        "  rule: self == oldSelf\n            required:\n            - ttlSecondsAfterFinished\n            type: object\n            x-kubernetes-validations:\n",
    );
    let crd = dir.path().join("required.yaml");
    std::fs::write(&crd, required).unwrap();
    let (found, code) = lint_with(&[crd], std::slice::from_ref(&example));
    assert_eq!(code, Some(1));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["code"], "TK201");
    let message = found[0]["message"].as_str().unwrap();
    assert!(
        message.contains("spec.ttlSecondsAfterFinished: Required value"),
        "{message}"
    );

    // Only a v1 served: v1alpha2 is not defined, although the built-in CRD defines it.
    assert_eq!(upstream.matches("\n    name: v1alpha2\n").count(), 1);
    let renamed = upstream.replace("\n    name: v1alpha2\n", "\n    name: v1\n");
    let crd = dir.path().join("v1.yaml");
    std::fs::write(&crd, renamed).unwrap();
    let (found, code) = lint_with(&[crd], std::slice::from_ref(&example));
    assert_eq!(code, Some(1));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["path"], "apiVersion");
    let message = found[0]["message"].as_str().unwrap();
    assert!(
        message.contains("(it defines jobset.x-k8s.io/v1)"),
        "{message}"
    );

    // CRDs of other kinds given: JobSet still has the built-in one.
    let others = files(ORACLE, "-crd.yaml");
    let (found, code) = lint_with(&others, std::slice::from_ref(&example));
    assert_eq!((found, code), (Vec::<Json>::new(), Some(0)));
}

/// Only JobSet is built in: another custom resource without its CRD is still a TK021 note,
/// and so is a JobSet of another group.
#[test]
fn other_custom_resources_without_their_crd_are_still_unknown_kinds() {
    let elsewhere = "apiVersion: example.com/v1alpha2\nkind: JobSet\nmetadata:\n  name: j\n\
                     spec:\n  anything: 1\n";
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other-group.yaml");
    std::fs::write(&other, elsewhere).unwrap();
    let paths = [
        PathBuf::from(format!("{ORACLE}/valid/clusterqueues-minimal-cq.yaml")),
        other,
    ];
    for path in paths {
        let (found, code) = lint_with(&[], std::slice::from_ref(&path));
        assert_eq!(code, Some(0), "{path:?}");
        assert_eq!(found.len(), 1, "{path:?}: {found:#?}");
        assert_eq!(found[0]["code"], "TK021", "{path:?}");
        assert_eq!(found[0]["severity"], "note", "{path:?}");
    }
}
