//! The `api` rules (TK4xx) beyond their fixtures: the objects the API server (or the kubelet)
//! refuses are reported at their line and column by `lint`, and refused by `render` when a
//! request would produce them; hand-written real-world manifests report nothing.

mod common;

use std::path::Path;
use tao_k8s::lint::{Selection, lint};
use tao_k8s::source::Source;

use common::ROOT;

/// `(line, column, code)` of every `api` finding in `text`.
fn api_findings(text: &str) -> Vec<(usize, usize, String)> {
    let source = Source::new("manifest.yaml", text);
    let selection = Selection {
        select: vec!["api".into()],
        ..Default::default()
    };
    lint(&source, &selection)
        .unwrap()
        .into_iter()
        .map(|r| (r.line, r.column, r.diagnostic.code.to_string()))
        .collect()
}

/// Relaxed env names (any printable ASCII but `=`) are refused below 1.32 only, with the
/// version in the message.
#[test]
fn env_names_follow_the_target_version() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  \
                - name: c\n    image: nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt\n    env:\n    \
                - {name: 1ST_RANK, value: \"0\"}\n    - {name: HTTP PROXY, value: x}\n    \
                - {name: \"A=B\", value: x}\n";
    let at = |version: &str| {
        let out = common::tao()
            .args([
                "lint",
                "--format",
                "json",
                "--select",
                "TK407",
                "--kube-version",
                version,
                "-",
            ])
            .write_stdin(text)
            .output()
            .unwrap();
        let document: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        document["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["line"].as_u64().unwrap(),
                    f["message"].as_str().unwrap().to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    let old = at("1.31");
    assert_eq!(old.iter().map(|f| f.0).collect::<Vec<_>>(), [9, 10, 11]);
    assert!(old[0].1.contains("Kubernetes 1.31 refuses it"), "{old:?}");
    assert!(
        old[2].1.contains("no Kubernetes version accepts it"),
        "{old:?}"
    );
    for version in ["1.32", "1.37"] {
        assert_eq!(
            at(version).iter().map(|f| f.0).collect::<Vec<_>>(),
            [11],
            "{version}"
        );
    }
}

/// The objects of the issue list, in one Job: each is reported at its own value.
#[test]
fn what_the_api_server_refuses_is_reported_where_it_is_written() {
    let text = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: refused
spec:
  template:
    spec:
      restartPolicy: Never
      tolerations:
        - {key: "a b\nc", operator: Exists}
        - {key: nvidia.com/gpu, operator: Exists, value: "yes"}
        - {key: x, operator: Exists, effect: NoExecute, tolerationSeconds: -1}
      containers:
        - name: tao
          image: repo:---
          args: ["train", "x\0y"]
"#;
    assert_eq!(
        api_findings(text),
        [
            (10, 17, "TK410".into()),
            (11, 58, "TK410".into()),
            (12, 76, "TK410".into()),
            (15, 18, "TK411".into()),
            (16, 27, "TK412".into()),
        ]
    );
}

/// A Job of 2.5 MB (a long argument list) and a 300 KB annotation: both over what the API
/// server stores, reported at the field that holds the bytes.
#[test]
fn oversized_objects_and_annotations_are_reported() {
    let args: Vec<String> = (0..25_000)
        .map(|i| format!("/data/shard-{i:08}.tar"))
        .collect();
    let text = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: big\n  annotations:\n    example.com/request-name: \"{}\"\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: tao\n          image: busybox:1.36\n          args: {}\n",
        "n".repeat(300_000),
        serde_json::to_string(&(0..4).flat_map(|_| args.clone()).collect::<Vec<_>>()).unwrap()
    );
    assert!(text.len() > 2_000_000);
    let found = api_findings(&text);
    assert_eq!(
        found,
        [(5, 3, "TK403".into()), (14, 11, "TK404".into())],
        "{found:?}"
    );
}

fn render(text: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("request.yaml");
    std::fs::write(&path, text).unwrap();
    common::tao()
        .args(["--color=never", "render"])
        .arg(&path)
        .env_remove("TAO_K8S_NAMESPACE")
        .output()
        .unwrap()
}

fn example() -> String {
    std::fs::read_to_string(Path::new(ROOT).join("examples/dino-train.yaml")).unwrap()
}

/// A name too long for the annotation that keeps it: refused at `metadata.name`.
#[test]
fn render_refuses_a_name_its_annotation_cannot_hold() {
    let request = example().replace(
        "name: dino-train-coco",
        &format!("name: \"{}\"", "n".repeat(300_000)),
    );
    let out = render(&request);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "nothing is written on refusal");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("error[TK017]: `metadata.name` has 300000 bytes")
            && stderr.contains("request.yaml:7:9"),
        "{stderr}"
    );
}

/// A Job of 2 MB from a long argument list: refused by render's own lint, naming the field.
#[test]
fn render_refuses_a_job_etcd_cannot_store() {
    let request = example().replace(
        "args: [dino, train,",
        &format!(
            "args: [dino, train, \"{}\", \"{}\",",
            "a".repeat(1_000_000),
            "b".repeat(1_000_000)
        ),
    );
    let out = render(&request);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "nothing is written on refusal");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("fails TK404")
            && stderr.contains("more than the 1572864 (1.5 MiB) etcd stores")
            && stderr.contains("`spec.template.spec.containers[0].args` holds"),
        "{stderr}"
    );
}

/// A toleration value is copied from the request: refused at the request's field.
#[test]
fn render_refuses_a_toleration_the_api_server_refuses() {
    let request = format!(
        "{}  scheduling:\n    tolerations: [{{key: nvidia.com/gpu, operator: Exists, value: \"yes\"}}]\n",
        example()
    );
    let out = render(&request);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("`operator: Exists` must have no `value`")
            && stderr.contains("spec.scheduling.tolerations[0].value"),
        "{stderr}"
    );
}

/// Hand-written manifests of the kinds people apply every day (a multi-node training, a web
/// application, batch jobs): none of them is refused by the API server, so no `api` rule
/// reports anything.
#[test]
fn real_world_manifests_report_nothing() {
    let dir = Path::new(ROOT).join("tests/api/real-world");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(api_findings(&text), [], "{}", path.display());
        files += 1;
    }
    assert!(files >= 3);
}
