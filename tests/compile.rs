//! Every valid fixture request compiles, and its manifests are
//! snapshotted exactly as `tao-k8s render` prints them (the bundled examples are snapshotted
//! by `tao-k8s snapshot`, in tests/template_authors.rs).

use tao_k8s::plan::{Options, SpecReader};
use tao_k8s::render::Templates;
use tao_k8s::source::Source;

/// Compile a fixture as the CLI does: a spec file it names is read relative to it.
fn compile(path: &std::path::Path) -> tao_k8s::Compiled {
    let text = std::fs::read_to_string(path).unwrap();
    let source = Source::new(path.file_name().unwrap().to_string_lossy(), text);
    let dir = path.parent().unwrap().to_path_buf();
    let opts = Options {
        read_spec: Some(SpecReader::new(move |spec| {
            let text = std::fs::read_to_string(dir.join(spec)).map_err(|e| e.to_string())?;
            Ok(Source::new(spec, text))
        })),
        ..Options::default()
    };
    match tao_k8s::compile(&source, &opts, Templates::embedded()) {
        Ok(c) => c,
        Err(e) => panic!("{} does not compile: {e:#?}", path.display()),
    }
}

#[test]
fn valid_requests_render() {
    insta::glob!("../fixtures/requests/valid", "*.yaml", |path| {
        let compiled = compile(path);
        // staging-aliases passes a sibling of an alias (`/home/alice/datasets2/...`), which no
        // mount holds: that path, and only it, is warned about (TK042).
        let expected: &[&str] = if path.ends_with("staging-aliases.yaml") {
            &["`/home/alice/datasets2/not-a-mount.txt` is under no mount"]
        } else {
            &[]
        };
        assert_eq!(
            compiled.warnings.len(),
            expected.len(),
            "{:#?}",
            compiled.warnings
        );
        for (w, message) in compiled.warnings.iter().zip(expected) {
            assert_eq!(w.code, tao_k8s::codes::UNMOUNTED);
            assert!(w.message.starts_with(message), "{w:#?}");
        }
        insta::assert_snapshot!(compiled.yaml);
    });
}

/// Where every producer path lands, for the requests whose storage is the point.
#[test]
fn staging_maps() {
    for pattern in ["config-*.yaml", "staging-*.yaml", "tier-c*.yaml"] {
        insta::glob!("../fixtures/requests/valid", pattern, |path| {
            let map = compile(path).plan.staging_map;
            insta::assert_snapshot!(serde_json::to_string_pretty(&map).unwrap());
        });
    }
}

#[test]
fn nccl_probe_of_the_example() {
    let text = std::fs::read_to_string("examples/dino-train.yaml").unwrap();
    let source = Source::new("dino-train.yaml", text);
    let opts = Options {
        nccl_probe: true,
        ..Options::default()
    };
    let compiled = tao_k8s::compile(&source, &opts, Templates::embedded()).unwrap();
    insta::assert_snapshot!(compiled.yaml);
}

/// A command parses its request once: `render --out` of a multi-node config request (the Job,
/// its spec file, the NCCL probe and the driver script's constants) included.
#[test]
fn a_bundle_parses_its_request_once() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/requests/valid/multi-node-4-config.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let source = Source::new("multi-node-4-config.yaml", text);
    let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = reads.clone();
    let opts = Options {
        read_spec: Some(SpecReader::new(move |name| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Err(format!("{name} is not read in this test"))
        })),
        ..Options::default()
    };
    let before = tao_k8s::request::parses();
    let bundle = tao_k8s::bundle(&source, &opts, Templates::embedded()).unwrap();
    assert_eq!(tao_k8s::request::parses() - before, 1);
    assert!(bundle.probe.is_some(), "multi-node with GPUs has a probe");
    assert_eq!(bundle.script.nodes, 4);
    // An inline spec: the reader is never asked.
    assert_eq!(reads.load(std::sync::atomic::Ordering::SeqCst), 0);

    let config = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/requests/valid/config-file.yaml");
    let before = tao_k8s::request::parses();
    compile(&config);
    assert_eq!(tao_k8s::request::parses() - before, 1);
}

/// A request reads merge keys as a manifest does: merged keys count, written keys win.
#[test]
fn merge_keys_in_a_request_are_resolved() {
    let plain = std::fs::read_to_string("examples/dino-train.yaml").unwrap();
    let merged = plain.replace(
        "  resources:\n    gpusPerNode: 8\n    cpu: 32\n",
        "  resources:\n    <<: [{gpusPerNode: 8, cpu: 4}, {cpu: 16}]\n    cpu: 32\n",
    );
    assert_ne!(merged, plain);
    let yaml = |text: String| {
        let source = Source::new("dino-train.yaml", text);
        match tao_k8s::compile(&source, &Options::default(), Templates::embedded()) {
            Ok(c) => c.yaml,
            Err(e) => panic!("{e:#?}"),
        }
    };
    assert_eq!(yaml(merged), yaml(plain));
}
