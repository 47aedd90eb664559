//! Multi-node Jobs, checked from the rendered objects alone: the rank-0 pod's DNS name as
//! Kubernetes derives it, the rendezvous env, name budgets at the length edges, version gates,
//! and the pod-side wait script run for real.

use serde_json::{Value as Json, json};
use tao_k8s::plan::{KubeVersion, Options};
use tao_k8s::render::Templates;
use tao_k8s::source::Source;
use tao_k8s::{Failure, names};

fn request(name: &str, nodes: u32) -> Json {
    json!({
        "apiVersion": "tao-k8s/v1",
        "kind": "ActionRequest",
        "metadata": {"name": name},
        "spec": {
            "image": "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt",
            "networkArch": "dino",
            "action": "train",
            "command": {"args": ["dino", "train"]},
            "resources": {"nodes": nodes, "gpusPerNode": 8},
            "storage": {"mounts": [{"name": "results", "persistentVolumeClaim": "tao-results", "mountPath": "/results"}]},
            "resultsDir": "/results/run"
        }
    })
}

fn compile(request: &Json, opts: &Options) -> Result<Vec<Json>, Failure> {
    let source = Source::new("request.json", request.to_string());
    tao_k8s::compile(&source, opts, Templates::embedded()).map(|c| c.objects)
}

fn objects(request: &Json) -> Vec<Json> {
    compile(request, &Options::default()).unwrap_or_else(|e| panic!("{e:#?}"))
}

fn env<'a>(container: &'a Json, name: &str) -> &'a Json {
    container["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

/// What Kubernetes makes of the objects: the Indexed Job's pod 0 is named `<job>-0`, and with
/// `subdomain` set to a headless Service selecting the Job's pods, its DNS name is
/// `<hostname>.<subdomain>`. Checked against the env the pods actually get.
#[test]
fn master_addr_is_the_dns_name_of_pod_zero() {
    for (name, nodes) in [
        ("dino-train", 2),
        ("dino-train", 4),
        ("7f3a9c1e-2b4d", 16),
        (&"x".repeat(80) as &str, 1000),
    ] {
        let objects = objects(&request(name, nodes));
        assert_eq!(objects.len(), 2);
        let (service, job) = (&objects[0], &objects[1]);
        assert_eq!(
            (service["kind"].as_str(), job["kind"].as_str()),
            (Some("Service"), Some("Job")),
            "Service first"
        );
        let job_name = job["metadata"]["name"].as_str().unwrap();
        let spec = &job["spec"];
        assert_eq!(spec["completionMode"], "Indexed");
        assert_eq!(
            (spec["completions"].as_u64(), spec["parallelism"].as_u64()),
            (Some(nodes.into()), Some(nodes.into()))
        );
        let pod = &spec["template"]["spec"];
        let subdomain = pod["subdomain"].as_str().unwrap();
        assert_eq!(service["metadata"]["name"], subdomain);
        assert_eq!(service["spec"]["clusterIP"], "None");
        assert_eq!(service["spec"]["publishNotReadyAddresses"], true);
        assert_eq!(
            service["spec"]["selector"],
            json!({"batch.kubernetes.io/job-name": job_name})
        );
        assert!(names::is_dns1035_label(subdomain));
        let last_hostname = format!("{job_name}-{}", nodes - 1);
        assert!(names::is_dns1123_label(&last_hostname), "{last_hostname}");

        let master = format!("{job_name}-0.{subdomain}");
        let main = &pod["containers"][0];
        assert_eq!(env(main, "MASTER_ADDR")["value"], master);
        assert_eq!(
            env(&pod["initContainers"][0], "MASTER_ADDR")["value"],
            master
        );
        let port = service["spec"]["ports"][0]["port"]
            .as_u64()
            .unwrap()
            .to_string();
        assert_eq!(env(main, "MASTER_PORT")["value"], port);
        assert_eq!(env(main, "WORLD_SIZE")["value"], nodes.to_string());
        assert_eq!(env(main, "NNODES")["value"], nodes.to_string());
        assert_eq!(env(main, "NUM_GPU_PER_NODE")["value"], "8");
        assert_eq!(env(main, "NPROC_PER_NODE")["value"], "8");
        assert_eq!(env(main, "TAO_STRICT_MULTINODE")["value"], "1");
        assert_eq!(
            env(main, "NODE_RANK")["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        );
        let shm = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["emptyDir"]["medium"] == "Memory")
            .unwrap();
        assert_eq!(shm["emptyDir"]["sizeLimit"], "16Gi");
        assert!(
            main["volumeMounts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["mountPath"] == "/dev/shm" && m["name"] == shm["name"])
        );
    }
}

/// For each node count, the longest base that is kept as it is, and one character more, which
/// is cut and given a hash: the last pod's hostname is a valid label either way.
#[test]
fn names_at_the_length_edges() {
    let mut table = String::new();
    for nodes in [9, 10, 11, 99, 100, 101, 999, 1000] {
        let budget = names::job_budget(nodes);
        for base in ["j".repeat(budget), "j".repeat(budget + 1)] {
            let job = objects(&request(&base, nodes))[1]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string();
            let last = format!("{job}-{}", nodes - 1);
            assert!(
                names::is_dns1123_label(&last) && names::is_dns1035_label(&job),
                "{last}"
            );
            assert_eq!(job == base, base.len() == budget);
            table.push_str(&format!(
                "{nodes:>4} nodes, base {:>2} chars: job {:>2} chars, last pod {last} ({} chars)\n",
                base.len(),
                job.len(),
                last.len()
            ));
        }
    }
    insta::assert_snapshot!(table);
}

#[test]
fn a_single_node_job_is_not_indexed() {
    let objects = objects(&request("solo", 1));
    assert_eq!(objects.len(), 1);
    let spec = &objects[0]["spec"];
    assert!(
        spec.get("completionMode").is_none() && spec["template"]["spec"].get("subdomain").is_none()
    );
    let main = &spec["template"]["spec"]["containers"][0];
    assert!(main.get("env").is_none(), "no rendezvous env on one node");
}

#[test]
fn multi_node_needs_kubernetes_1_28() {
    let old = Options {
        kube_version: KubeVersion {
            major: 1,
            minor: 27,
        },
        ..Options::default()
    };
    let Err(Failure::Request(diags)) = compile(&request("dino", 2), &old) else {
        panic!("accepted 1.27")
    };
    assert!(
        diags[0].message.contains("need Kubernetes 1.28"),
        "{diags:?}"
    );
    assert!(
        compile(&request("dino", 1), &old).is_ok(),
        "one node is fine on 1.27"
    );
    let newer = Options {
        kube_version: "1.31".parse().unwrap(),
        ..Options::default()
    };
    assert!(compile(&request("dino", 2), &newer).is_ok());
}

/// The wait script, run by `sh` with a fake `getent` that answers from a counter file.
#[test]
fn the_wait_script_waits_then_starts_or_fails_naming_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let counter = dir.path().join("calls");
    let getent = bin.join("getent");
    // Resolves from the second call on, like a DNS record that appears a moment later.
    std::fs::write(
        &getent,
        format!(
            "#!/bin/sh\necho x >> '{}'\n[ $(wc -l < '{}') -ge 2 ]\n",
            counter.display(),
            counter.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&getent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let script = tao_k8s::plan::pod_script(tao_k8s::plan::WAIT_SCRIPT);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let run = |timeout: &str| {
        std::process::Command::new("sh")
            .args(["-c", &script])
            .env("PATH", &path)
            .env("MASTER_ADDR", "job-0.job")
            .env("TAO_K8S_RENDEZVOUS_TIMEOUT", timeout)
            .output()
            .unwrap()
    };
    let ok = run("10");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("job-0.job resolves after 2s"));

    std::fs::write(&getent, "#!/bin/sh\nexit 2\n").unwrap();
    let timed_out = run("0");
    assert_eq!(timed_out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&timed_out.stderr)
            .contains("the rendezvous host job-0.job did not resolve within 0s")
    );
}
