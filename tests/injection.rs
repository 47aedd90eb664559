//! Injection: any string in any string field either comes out of the renderer as exactly the
//! same string in exactly the intended place, or the request is refused with a diagnostic.
//! Never an extra key, object or document, and never a template-output failure.

use proptest::prelude::*;
use serde_json::{Value as Json, json};
use tao_k8s::plan::Options;
use tao_k8s::render::Templates;
use tao_k8s::source::Source;
use tao_k8s::{Failure, yaml};

fn base() -> Json {
    json!({
        "apiVersion": "tao-k8s/v1",
        "kind": "ActionRequest",
        "metadata": {"name": "inject"},
        "spec": {
            "image": "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt",
            "networkArch": "dino",
            "action": "train",
            "command": {"args": ["dino", "train"]},
            "resources": {"gpusPerNode": 1},
            "storage": {"mounts": [{"name": "results", "persistentVolumeClaim": "tao-results", "mountPath": "/results"}]},
            "resultsDir": "/results/run"
        }
    })
}

/// Strings made of the pieces that break naive YAML and shell generation.
fn nasty() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("no".to_string()),
        Just("on".to_string()),
        Just("y".to_string()),
        Just("~".to_string()),
        Just("null".to_string()),
        Just(": ".to_string()),
        Just("#".to_string()),
        Just("---".to_string()),
        Just("...".to_string()),
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("\t".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("\\".to_string()),
        Just("{{ x }}".to_string()),
        Just("{% if %}".to_string()),
        Just("$(VAR)".to_string()),
        Just("${VAR}".to_string()),
        Just("\u{2028}".to_string()),
        Just("\u{2029}".to_string()),
        Just("\u{85}".to_string()),
        Just("\u{feff}".to_string()),
        Just("&a *a !!str |".to_string()),
        Just("- [a, b]".to_string()),
        any::<char>().prop_map(String::from),
        "[ -~]{0,6}",
    ];
    prop::collection::vec(piece, 0..8).prop_map(|p| p.concat())
}

/// Compile; `None` when refused with diagnostics; the documents when rendered.
fn render(request: &Json) -> Option<Vec<Json>> {
    let source = Source::new("inject.json", request.to_string());
    match tao_k8s::compile(&source, &Options::default(), Templates::embedded()) {
        Ok(c) => {
            let stream = yaml::parse(
                &Source::new("out", c.yaml.as_str()),
                yaml::Limits::default(),
            )
            .expect("output is YAML");
            assert!(stream.duplicates.is_empty());
            let docs: Vec<Json> = stream.documents.iter().map(|d| d.to_json()).collect();
            assert_eq!(docs, c.objects(), "printed YAML and verified objects agree");
            Some(docs)
        }
        Err(Failure::Request(d)) => {
            assert!(d.iter().any(|d| d.is_error()));
            None
        }
        Err(Failure::Output { diagnostics, .. }) => {
            panic!("a request value broke the output: {diagnostics:#?}")
        }
    }
}

fn container(docs: &[Json]) -> &Json {
    let job = docs.iter().find(|d| d["kind"] == "Job").unwrap();
    &job["spec"]["template"]["spec"]["containers"][0]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn env_values(s in nasty()) {
        let mut r = base();
        r["spec"]["env"] = json!({"MY_VALUE": s});
        if let Some(docs) = render(&r) {
            prop_assert_eq!(docs.len(), 1);
            prop_assert_eq!(&container(&docs)["env"], &json!([{"name": "MY_VALUE", "value": s}]));
        }
    }

    #[test]
    fn args(s in nasty(), t in nasty()) {
        let mut r = base();
        r["spec"]["command"] = json!({"args": ["dino", s, t]});
        if let Some(docs) = render(&r) {
            prop_assert_eq!(&container(&docs)["command"], &json!(["dino"]));
            prop_assert_eq!(&container(&docs)["args"], &json!([s, t]));
        }
    }

    #[test]
    fn shell_and_script_text(s in nasty()) {
        let mut r = base();
        r["spec"]["command"] = json!({"shell": s});
        if let Some(docs) = render(&r) {
            prop_assert_eq!(&container(&docs)["command"], &json!(["/bin/sh", "-c", s]));
            prop_assert!(container(&docs).get("args").is_none());
        }
        r["spec"]["command"] = json!({"script": {"shell": "/bin/bash", "text": s}});
        if let Some(docs) = render(&r) {
            prop_assert_eq!(&container(&docs)["command"], &json!(["/bin/bash", "-c", s]));
        }
    }

    #[test]
    fn names_and_labels(name in nasty(), label in nasty()) {
        let mut r = base();
        r["metadata"]["name"] = json!(name);
        r["metadata"]["labels"] = json!({"team": label});
        if let Some(docs) = render(&r) {
            let meta = &docs[0]["metadata"];
            let job = meta["name"].as_str().unwrap();
            prop_assert!(tao_k8s::kube::names::is_dns1035_label(job), "{job}");
            if job != name {
                prop_assert_eq!(&meta["annotations"]["tao-k8s.io/request-name"], &json!(name));
            }
            prop_assert_eq!(&meta["labels"]["team"], &json!(label));
            prop_assert_eq!(meta["labels"].as_object().unwrap().len(), 6);
        }
    }

    #[test]
    fn config_spec_values(s in nasty(), k in "[a-z_]{1,8}") {
        let mut r = base();
        r["spec"]["command"] = json!({"config": {"argv": ["dino", "train", "-e", "{config_path}"], "specInline": {k.clone(): s, "n": 1}}});
        if let Some(docs) = render(&r) {
            prop_assert_eq!(docs.len(), 2);
            prop_assert_eq!(&docs[0]["kind"], "ConfigMap");
            let text = docs[0]["data"]["spec.yaml"].as_str().unwrap();
            let spec = yaml::parse(&Source::new("spec", text), yaml::Limits::default()).unwrap().documents.remove(0).to_json();
            prop_assert_eq!(spec, json!({k: s, "n": 1}));
        }
    }
}

/// The properties above are only worth something if nasty values are accepted, not refused.
#[test]
fn nasty_values_are_rendered_not_refused() {
    for s in [
        "no",
        "on",
        "~",
        "a: b",
        "# c",
        "---\nkind: Secret",
        "...",
        "line\nbreak",
        "\u{2028}\u{85}",
        "{{ x }}",
        "$(VAR) ${VAR}",
        "\"'\\",
        "- [a]",
    ] {
        let mut r = base();
        r["spec"]["env"] = json!({"V": s});
        r["spec"]["command"] = json!({"args": ["dino", s]});
        // A name holds no control character (a line break in a name is refused); the rest
        // of the value is fair game.
        let printable: String = s.chars().filter(|c| !c.is_control()).collect();
        r["metadata"]["name"] = json!(format!("run {printable}"));
        let docs = render(&r).unwrap_or_else(|| panic!("{s:?} was refused"));
        assert_eq!(docs.len(), 1);
        assert_eq!(container(&docs)["env"][0]["value"], json!(s));
        assert_eq!(container(&docs)["args"], json!([s]));
        if printable != s {
            r["metadata"]["name"] = json!(format!("run {s}"));
            assert!(render(&r).is_none(), "{s:?} in a name was accepted");
        }
    }
}
