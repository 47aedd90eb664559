//! Generated files are checked in and guarded: the request schema must be exactly what
//! `tao-k8s schema` prints, and every fixture request must point editors at it.

use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn committed_request_schema_matches_the_types() {
    let committed =
        std::fs::read_to_string(Path::new(ROOT).join("schemas/action-request.schema.json"))
            .unwrap();
    assert!(
        committed == tao_k8s::request::schema_text(),
        "schemas/action-request.schema.json is stale: run `cargo run -- schema > schemas/action-request.schema.json`"
    );
    let schema: serde_json::Value = serde_json::from_str(&committed).unwrap();
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
}

#[test]
fn every_fixture_request_names_the_schema() {
    let mut seen = 0;
    for dir in [
        "fixtures/requests/valid",
        "fixtures/requests/invalid",
        "examples",
    ] {
        for entry in std::fs::read_dir(Path::new(ROOT).join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if !path.extension().is_some_and(|e| e == "yaml" || e == "json") {
                continue; // examples/ also holds cargo examples
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let first = text.lines().next().unwrap_or_default();
            let expected = path
                .parent()
                .unwrap()
                .strip_prefix(ROOT)
                .unwrap()
                .components()
                .map(|_| "..")
                .collect::<Vec<_>>()
                .join("/")
                + "/schemas/action-request.schema.json";
            assert_eq!(
                first,
                format!("# yaml-language-server: $schema={expected}"),
                "{}",
                path.display()
            );
            let target = path.parent().unwrap().join(&expected);
            assert!(
                target.exists(),
                "{} points at a missing schema",
                path.display()
            );
            seen += 1;
        }
    }
    assert!(seen >= 30);
}
