//! The lint must never panic, whatever it is fed: arbitrary text, and arbitrary trees shaped
//! like Kubernetes objects (known kinds, familiar keys, values of every type in every place).

use proptest::prelude::*;
use serde_json::{Value as Json, json};
use tao_k8s::lint::{Selection, lint};
use tao_k8s::source::Source;

fn lint_text(text: &str) {
    let _ = lint(&Source::new("fuzz.yaml", text), &Selection::default());
}

/// Keys rules look at, so that random trees reach into the rules' code paths.
const KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "annotations",
    "labels",
    "spec",
    "template",
    "containers",
    "initContainers",
    "image",
    "env",
    "value",
    "valueFrom",
    "resources",
    "limits",
    "requests",
    "nvidia.com/gpu",
    "memory",
    "volumes",
    "volumeMounts",
    "mountPath",
    "emptyDir",
    "medium",
    "sizeLimit",
    "completionMode",
    "completions",
    "subdomain",
    "clusterIP",
    "publishNotReadyAddresses",
    "selector",
    "tolerations",
    "key",
    "operator",
    "effect",
    "imagePullSecrets",
    "restartPolicy",
    "data",
    "stringData",
    "binaryData",
    "ttlSecondsAfterFinished",
    "jobTemplate",
    "tao-k8s.io/ignore",
    "MASTER_ADDR",
    "WORLD_SIZE",
];

fn leaf() -> impl Strategy<Value = Json> {
    prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::from),
        any::<i64>().prop_map(Json::from),
        prop::sample::select(vec![
            "Job",
            "Service",
            "Pod",
            "Indexed",
            "Memory",
            "None",
            "no",
            "nvcr.io/x:latest",
            "16Gi",
            "batch/v1",
            "v1",
            "TK101,TK999 # x",
            "job-0.job"
        ])
        .prop_map(Json::from),
        "\\PC{0,12}".prop_map(Json::from),
    ]
}

fn tree() -> impl Strategy<Value = Json> {
    leaf().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Json::from),
            prop::collection::vec((prop::sample::select(KEYS.to_vec()), inner), 0..6).prop_map(
                |kv| Json::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            ),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        lint_text(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn arbitrary_yaml_ish_text(text in "([a-z:{}\\[\\],&*!|>'\"#\\- \n]|no|Job|kind|apiVersion){0,80}") {
        lint_text(&text);
    }

    #[test]
    fn arbitrary_kubernetes_like_trees(api in prop::sample::select(vec!["batch/v1", "v1", "apps/v1", "x/v1"]),
                                       kind in prop::sample::select(vec!["Job", "Service", "Pod", "Secret", "ConfigMap", "Deployment", "CronJob", "ServiceAccount"]),
                                       body in tree(), more in tree()) {
        let mut doc = json!({"apiVersion": api, "kind": kind});
        if let (Json::Object(d), Json::Object(b)) = (&mut doc, body) {
            d.extend(b);
        }
        // JSON is YAML: one document, then two in a stream.
        lint_text(&doc.to_string());
        lint_text(&format!("{doc}\n---\n{more}\n"));
    }
}
