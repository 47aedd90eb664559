//! `tao-k8s krm` as kpt and kustomize run it: a ResourceList on stdin (recorded with
//! `kpt fn source fixtures/krm/package`), one on stdout.

mod common;

use serde_json::{Value as Json, json};
use std::path::Path;
use tao_k8s::source::Source;
use tao_k8s::yaml;

use common::{ROOT, Run};

const RECORDED: &str = "fixtures/krm/kpt-source.yaml";

fn krm(args: &[&str], stdin: &str) -> Run {
    common::tao()
        .current_dir(Path::new(ROOT).join("fixtures/krm/package"))
        .env_remove("TAO_K8S_NAMESPACE")
        .arg("--color=never")
        .arg("krm")
        .args(args)
        .write_stdin(stdin)
        .run()
}

fn parse(text: &str) -> Json {
    let stream = yaml::parse(&Source::new("out", text), yaml::Limits::default()).unwrap();
    assert_eq!(stream.documents.len(), 1);
    stream.documents[0].to_json()
}

fn recorded() -> String {
    std::fs::read_to_string(Path::new(ROOT).join(RECORDED)).unwrap()
}

/// The recorded list without its refused request (cut out of the text, so that the other
/// items keep their comments): what a clean run sees.
fn clean() -> String {
    let text = recorded();
    let items: Vec<&str> = text.split("\n- ").collect();
    let kept: Vec<&str> = items
        .iter()
        .copied()
        .filter(|item| !item.contains("name: broken-run"))
        .collect();
    assert_eq!(kept.len() + 1, items.len());
    kept.join("\n- ")
}

fn rendered_alone(request: &str) -> Vec<Json> {
    let out = common::tao()
        .current_dir(ROOT)
        .env_remove("TAO_K8S_NAMESPACE")
        .args(["render", "-o", "json", request])
        .output()
        .unwrap();
    let value: Json = serde_json::from_slice(&out.stdout).unwrap();
    match value["kind"].as_str() {
        Some("List") => value["items"].as_array().unwrap().clone(),
        _ => vec![value],
    }
}

#[test]
fn requests_are_replaced_by_their_objects_and_other_items_pass_through() {
    let r = krm(&[], &clean());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let out = parse(&r.stdout);
    assert_eq!(out["apiVersion"], "config.kubernetes.io/v1");
    assert_eq!(out["kind"], "ResourceList");
    assert!(out.get("results").is_none(), "{}", r.stdout);
    let items = out["items"].as_array().unwrap();
    let input = parse(&recorded());
    let settings = input["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "ConfigMap")
        .unwrap();
    // The request's objects are exactly what `render` prints for it, in its place.
    let job = rendered_alone("examples/dino-train.yaml");
    assert_eq!(items.len(), job.len() + 1);
    assert_eq!(&items[..job.len()], job.as_slice());
    assert_eq!(&items[job.len()], settings);
    // A passed-through item keeps its comments and its quoting.
    assert!(
        r.stdout.contains(
            "  - # Not a request: passes through, this comment too.\n    apiVersion: v1\n"
        ) && r
            .stdout
            .contains("      mode: \"fast\" # quoted on purpose\n")
            && r.stdout.contains("      enabled: \"no\"\n"),
        "{}",
        r.stdout
    );
    assert_eq!(settings["data"]["enabled"], "no");
}

#[test]
fn a_refused_request_is_an_error_result_naming_its_file_field_and_resource() {
    let r = krm(&[], &recorded());
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let out = parse(&r.stdout);
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{results:#?}");
    let result = &results[0];
    assert_eq!(result["severity"], "error");
    assert_eq!(result["tags"]["code"], "TK016");
    assert_eq!(
        result["resourceRef"],
        json!({"apiVersion": "tao-k8s/v1", "kind": "ActionRequest", "name": "broken-run", "namespace": "vision"})
    );
    assert_eq!(result["field"]["path"], "spec.env.HF_TOKEN");
    assert_eq!(
        result["file"],
        json!({"path": "requests/broken.yaml", "index": 0})
    );
    assert!(
        result["message"]
            .as_str()
            .unwrap()
            .starts_with("TK016: a Hugging Face token is written into the request"),
        "{result}"
    );
    // Nothing of the refused request is echoed: not its credential, not the request.
    assert!(!r.stdout.contains("FAKEFAKE") && !r.stderr.contains("FAKEFAKE"));
    assert!(
        !r.stdout.contains("broken-run\"\n")
            && !out["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["kind"] == "ActionRequest")
    );
    // For people: the framed diagnostic on stderr, named after the item and its file.
    assert!(
        r.stderr
            .contains("--> ResourceList items[0] (requests/broken.yaml):"),
        "{}",
        r.stderr
    );
}

#[test]
fn function_config_sets_the_namespace_and_the_kubernetes_version() {
    let mut list = parse(&clean());
    list["functionConfig"] = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "tao-k8s"},
        "data": {"namespace": "team-b", "kubeVersion": "1.33"},
    });
    let r = krm(&[], &list.to_string());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let out = parse(&r.stdout);
    assert_eq!(out["items"][0]["kind"], "Job");
    assert_eq!(out["items"][0]["metadata"]["namespace"], "team-b");
    assert_eq!(out["functionConfig"], list["functionConfig"]);

    list["functionConfig"]["data"] = json!({"namespaces": "x"});
    let r = krm(&[], &list.to_string());
    assert_eq!(r.code, Some(1));
    let out = parse(&r.stdout);
    assert!(
        out["results"][0]["message"]
            .as_str()
            .unwrap()
            .contains("functionConfig.data.namespaces is no option"),
        "{}",
        r.stdout
    );
    list["functionConfig"]["data"] = json!({"kubeVersion": "1.12"});
    assert_eq!(krm(&[], &list.to_string()).code, Some(1));

    // `target: jobset`, as `render --target jobset`; another target is refused by name.
    list["functionConfig"]["data"] = json!({"target": "jobset"});
    let r = krm(&[], &list.to_string());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let out = parse(&r.stdout);
    let kinds: Vec<&str> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"JobSet") && !kinds.contains(&"Job"),
        "{kinds:?}"
    );
    list["functionConfig"]["data"] = json!({"target": "deployment"});
    let r = krm(&[], &list.to_string());
    assert_eq!(r.code, Some(1));
    assert!(
        r.stdout.contains(
            "functionConfig.data.target is `deployment`: expected `indexed-job` or `jobset`"
        ),
        "{}",
        r.stdout
    );
}

#[test]
fn lint_mode_passes_every_item_through_and_reports_findings() {
    let mut list = parse(&recorded());
    list["items"].as_array_mut().unwrap().push(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "leaky", "namespace": "vision",
            "annotations": {"config.kubernetes.io/path": "pods/leaky.yaml", "config.kubernetes.io/index": "1"}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36",
            "env": [{"name": "GITHUB_TOKEN", "value": "ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE"}]}]},
    }));
    let r = krm(&["--lint"], &list.to_string());
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let out = parse(&r.stdout);
    assert_eq!(out["items"], list["items"], "unchanged");
    let results = out["results"].as_array().unwrap();
    let codes: Vec<&str> = results
        .iter()
        .map(|r| r["tags"]["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"TK016"), "{codes:?}");
    let leak = results
        .iter()
        .find(|r| r["resourceRef"]["name"] == "leaky")
        .unwrap_or_else(|| panic!("{results:#?}"));
    assert_eq!(leak["severity"], "error");
    assert_eq!(leak["file"], json!({"path": "pods/leaky.yaml", "index": 1}));
    assert!(
        leak["field"]["path"].as_str().unwrap().contains("env"),
        "{leak}"
    );
    assert!(!leak["message"].as_str().unwrap().contains("FAKEFAKE"));
}

#[test]
fn input_that_is_not_a_resource_list_is_a_usage_error() {
    for (input, says) in [
        ("kind: Job\napiVersion: batch/v1\n", "not a ResourceList"),
        ("items: [\n", "not YAML"),
        (
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n---\nkind: X\n",
            "2 documents",
        ),
    ] {
        let r = krm(&[], input);
        assert_eq!(r.code, Some(2), "{input}");
        assert!(r.stdout.is_empty());
        assert!(r.stderr.contains(says), "{}", r.stderr);
    }
    // An empty list is a list.
    let r = krm(
        &[],
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n",
    );
    assert_eq!(r.code, Some(0));
    assert_eq!(parse(&r.stdout)["items"], json!([]));
}

#[test]
fn templates_apply_and_a_file_that_overrides_nothing_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let partial =
        std::fs::read_to_string(Path::new(ROOT).join("templates/_container.yaml.j2")).unwrap();
    std::fs::write(
        dir.path().join("_container.yaml.j2"),
        partial.replace(
            "          image: {{ c.image }}\n",
            "          image: {{ c.image }}\n          imagePullPolicy: \"Always\"\n",
        ),
    )
    .unwrap();
    let templates = dir.path().to_str().unwrap();
    let r = krm(&["--templates", templates], &clean());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let out = parse(&r.stdout);
    assert_eq!(
        out["items"][0]["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );

    std::fs::write(dir.path().join("jobs.yaml.j2"), "kind: Job\n").unwrap();
    let r = krm(&["--templates", templates], &clean());
    assert_eq!(r.code, Some(1));
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr
            .contains("`jobs.yaml.j2` in --templates overrides no template"),
        "{}",
        r.stderr
    );
}
