//! `--kube-version` as `lint` and `render` take it: the version objects are checked against,
//! fields only a newer version has, APIs a version no longer serves, and the supported range.

mod common;

use std::io::Write;

use common::ROOT;

fn lint(text: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let mut file = tempfile::NamedTempFile::with_suffix(".yaml").unwrap();
    file.write_all(text.as_bytes()).unwrap();
    let out = common::tao()
        .current_dir(ROOT)
        .args(["--color=never", "lint", "--select", "schema"])
        .args(args)
        .arg(file.path())
        .run_lossy();
    (out.code, out.stdout, out.stderr)
}

const MANAGED_JOB: &str = "\
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  managedBy: example.com/FAKE-controller
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox:1.36}]
";

#[test]
fn a_field_is_checked_against_the_version_asked_for() {
    // Job `spec.managedBy` came with Kubernetes 1.30.
    let (code, stdout, _) = lint(MANAGED_JOB, &["--kube-version", "1.29"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("field `managedBy` needs Kubernetes 1.30 or newer (checking against 1.29)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(":5:3"),
        "the key's line and column: {stdout}"
    );
    for version in ["1.30", "1.37"] {
        let (code, stdout, _) = lint(MANAGED_JOB, &["--kube-version", version]);
        assert_eq!(code, Some(0), "{version}: {stdout}");
    }
    // The default is the newest version.
    let (code, stdout, _) = lint(MANAGED_JOB, &[]);
    assert_eq!(code, Some(0), "{stdout}");
}

#[test]
fn removed_and_newer_apis_name_the_version_and_the_replacement() {
    let flow = "\
apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: FlowSchema
metadata: {name: f}
spec: {priorityLevelConfiguration: {name: p}}
";
    // Served by 1.28 to 1.31.
    let (code, stdout, _) = lint(flow, &["--kube-version", "1.31"]);
    assert_eq!(code, Some(0), "{stdout}");
    let (code, stdout, _) = lint(flow, &["--kube-version", "1.32"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema was removed in Kubernetes 1.32"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("use `apiVersion: flowcontrol.apiserver.k8s.io/v1`"),
        "{stdout}"
    );
    let v1 = flow.replace("/v1beta3", "/v1");
    let (code, stdout, _) = lint(&v1, &["--kube-version", "1.28"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("needs Kubernetes 1.29 or newer (checking against 1.28)"),
        "{stdout}"
    );
    for (api, kind, replacement) in [
        ("extensions/v1beta1", "Ingress", "networking.k8s.io/v1"),
        ("apps/v1beta2", "Deployment", "apps/v1"),
        (
            "autoscaling/v2beta2",
            "HorizontalPodAutoscaler",
            "autoscaling/v2",
        ),
        ("policy/v1beta1", "PodDisruptionBudget", "policy/v1"),
    ] {
        let text = format!("apiVersion: {api}\nkind: {kind}\nmetadata: {{name: x}}\n");
        let (code, stdout, _) = lint(&text, &[]);
        assert_eq!(code, Some(1), "{api} {kind}: {stdout}");
        assert!(
            stdout.contains(&format!("use `apiVersion: {replacement}`")),
            "{api} {kind}: {stdout}"
        );
    }
    let psp = "apiVersion: policy/v1beta1\nkind: PodSecurityPolicy\nmetadata: {name: x}\n";
    let (code, stdout, _) = lint(psp, &["--kube-version", "1.28"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("removed in Kubernetes 1.25"), "{stdout}");
    assert!(
        stdout.contains("1.28 has no replacement for this API"),
        "{stdout}"
    );
}

#[test]
fn versions_outside_the_range_are_refused_with_the_range() {
    for version in ["2.0", "1.27", "1.38", "latest"] {
        let (code, stdout, stderr) = lint(MANAGED_JOB, &["--kube-version", version]);
        assert_eq!(code, Some(2), "{version}: {stderr}");
        assert!(stdout.is_empty());
        if version != "latest" {
            assert!(
                stderr.contains("the supported versions are 1.28 to 1.37"),
                "{version}: {stderr}"
            );
        }
    }
}

/// A kind a built-in group does not define is refused as the API server refuses it ("no
/// matches for kind"), naming the nearest kind or the group's versions: no custom resource
/// lives in `v1`, `apps` or `networking.k8s.io`. A list stays a note: kubectl takes it apart.
#[test]
fn a_kind_unknown_in_a_built_in_group_is_an_error_naming_the_nearest() {
    for (api, kind, help) in [
        ("v1", "configmap", "did you mean `kind: ConfigMap`?"),
        ("batch/v1", "CronJobs", "did you mean `kind: CronJob`?"),
        (
            "networking.k8s.io/v1",
            "Ingres",
            "did you mean `kind: Ingress`?",
        ),
        ("apps/v2", "Deployment", "use `apiVersion: apps/v1`"),
        (
            "v1",
            "Frobnicator",
            "v1 serves: Binding, ComponentStatus, ConfigMap",
        ),
    ] {
        let text = format!("apiVersion: {api}\nkind: {kind}\nmetadata: {{name: x}}\n");
        for version in ["1.28", "1.37"] {
            let (code, stdout, _) = lint(&text, &["--kube-version", version]);
            assert_eq!(code, Some(1), "{api} {kind}: {stdout}");
            assert!(stdout.contains("error[TK201]"), "{api} {kind}: {stdout}");
            assert!(stdout.contains(help), "{api} {kind}: {stdout}");
            assert!(!stdout.contains("TK021"), "{api} {kind}: {stdout}");
        }
    }
    for list in ["List", "ConfigMapList"] {
        let text = format!("apiVersion: v1\nkind: {list}\nitems: []\n");
        let (code, stdout, _) = lint(&text, &["--fail-on", "warning"]);
        assert_eq!(code, Some(0), "{list}: {stdout}");
        assert!(stdout.contains("note[TK021]"), "{list}: {stdout}");
    }
}

#[test]
fn a_custom_resource_is_a_note_in_every_version() {
    let cr = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: q}\n";
    let (code, stdout, _) = lint(cr, &["--kube-version", "1.33", "--fail-on", "warning"]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains("is not a built-in kind of Kubernetes 1.33"),
        "{stdout}"
    );
}

/// Tier C: the uploader is a native sidecar where the target version runs them by default
/// (1.29 on), else a regular container of a pod that shares its process namespace; the action
/// runs its own argv either way, and every version's strict check passes (render verifies).
#[test]
fn the_tier_c_uploader_is_a_native_sidecar_from_1_29_and_watches_processes_on_1_28() {
    for fixture in ["tier-c.yaml", "tier-c-4-nodes.yaml"] {
        let path = format!("fixtures/requests/valid/{fixture}");
        for minor in 28..=37 {
            let version = format!("1.{minor}");
            let out = common::user()
                .args(["render", "-o", "json", "--kube-version", &version, &path])
                .run_lossy();
            assert_eq!(out.code, Some(0), "{fixture} {version}: {}", out.stderr);
            let list: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
            let objects = match list["items"].as_array() {
                Some(items) => items.clone(),
                None => vec![list.clone()],
            };
            let job = objects.iter().find(|o| o["kind"] == "Job").unwrap();
            let pod = &job["spec"]["template"]["spec"];
            let names = |key: &str| -> Vec<String> {
                pod[key]
                    .as_array()
                    .map(|cs| {
                        cs.iter()
                            .map(|c| c["name"].as_str().unwrap().to_string())
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let (init, containers) = (names("initContainers"), names("containers"));
            let main = &pod["containers"][0];
            assert_eq!(main["name"], "tao");
            assert!(
                main["command"][0] != "/bin/sh",
                "{fixture} {version}: the action's argv, no shell: {main}"
            );
            assert_eq!(pod["terminationGracePeriodSeconds"], 240);
            if minor >= 29 {
                assert_eq!(init.last().unwrap(), "upload-results", "{version}");
                assert!(init[0].starts_with("fetch-"), "{version}: {init:?}");
                let upload = pod["initContainers"].as_array().unwrap().last().unwrap();
                assert_eq!(upload["restartPolicy"], "Always", "{version}");
                assert_eq!(containers, ["tao"], "{version}");
                assert!(pod.get("shareProcessNamespace").is_none(), "{version}");
            } else {
                assert!(!init.contains(&"upload-results".to_string()), "{init:?}");
                assert_eq!(containers, ["tao", "upload-results"]);
                assert_eq!(pod["shareProcessNamespace"], true);
                assert!(
                    pod["initContainers"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .all(|c| c.get("restartPolicy").is_none())
                );
            }
        }
    }
}
