//! Every valid fixture request (and the bundled examples) compiles, and its manifests are
//! snapshotted exactly as `tao-k8s render` prints them.

use tao_k8s::plan::Options;
use tao_k8s::render::Templates;
use tao_k8s::source::Source;

/// Compile a fixture as the CLI does: a spec file it names is read relative to it.
fn compile(path: &std::path::Path) -> tao_k8s::Compiled {
    let text = std::fs::read_to_string(path).unwrap();
    let source = Source::new(path.file_name().unwrap().to_string_lossy(), text);
    let spec_file = tao_k8s::request::config_spec_path(&source).map(|spec| {
        let file = path.parent().unwrap().join(&spec);
        Ok(Source::new(spec, std::fs::read_to_string(file).unwrap()))
    });
    let opts = Options {
        spec_file,
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
        assert!(compiled.warnings.is_empty(), "{:#?}", compiled.warnings);
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
fn bundled_examples_render() {
    insta::glob!("../examples", "*.yaml", |path| {
        insta::assert_snapshot!(compile(path).yaml);
    });
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
