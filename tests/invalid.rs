//! Every invalid fixture request is refused by `tao-k8s render`: exit 1, nothing on stdout,
//! and the diagnostics on stderr exactly as a user sees them (snapshotted).

mod common;

#[test]
fn invalid_requests_are_refused_with_diagnostics() {
    insta::glob!("../fixtures/requests/invalid", "*.yaml", |path| {
        let rel = path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap();
        let out = common::tao()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["render", "--color", "never"])
            .arg(rel)
            .env_remove("TAO_K8S_NAMESPACE")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", rel.display());
        assert!(out.stdout.is_empty(), "nothing is printed on refusal");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains("error["), "{stderr}");
        insta::assert_snapshot!(stderr);
    });
}

#[test]
fn there_are_at_least_twenty_distinct_mistakes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/requests/invalid");
    assert!(std::fs::read_dir(dir).unwrap().count() >= 20);
}
