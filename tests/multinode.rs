//! Multi-node Jobs, checked from the rendered objects alone: the rank-0 pod's DNS name as
//! Kubernetes derives it, the rendezvous env, name budgets at the length edges, version gates,
//! and the pod-side wait script run for real.

use serde_json::{Value as Json, json};
use tao_k8s::Failure;
use tao_k8s::kube::KubeVersion;
use tao_k8s::kube::names::{is_dns1035_label, is_dns1123_label};
use tao_k8s::plan::Options;
use tao_k8s::plan::names::job_budget;
use tao_k8s::render::Templates;
use tao_k8s::source::Source;

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
    tao_k8s::compile(&source, opts, Templates::embedded()).map(|c| c.objects())
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
        assert!(is_dns1035_label(subdomain));
        let last_hostname = format!("{job_name}-{}", nodes - 1);
        assert!(is_dns1123_label(&last_hostname), "{last_hostname}");

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
        let budget = job_budget(nodes);
        for base in ["j".repeat(budget), "j".repeat(budget + 1)] {
            let job = objects(&request(&base, nodes))[1]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string();
            let last = format!("{job}-{}", nodes - 1);
            assert!(is_dns1123_label(&last) && is_dns1035_label(&job), "{last}");
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
fn targets_outside_1_28_to_1_37_are_refused_with_the_range() {
    for (major, minor) in [(1, 27), (1, 38), (2, 0)] {
        let outside = Options {
            kube_version: KubeVersion { major, minor },
            ..Options::default()
        };
        for nodes in [1, 2] {
            let Err(Failure::Request(diags)) = compile(&request("dino", nodes), &outside) else {
                panic!("accepted {major}.{minor} for {nodes} node(s)")
            };
            assert!(
                diags[0].message.contains("tao-k8s targets 1.28 to 1.37"),
                "{diags:?}"
            );
        }
    }
    for version in ["1.28", "1.31", "1.37"] {
        let inside = Options {
            kube_version: version.parse().unwrap(),
            ..Options::default()
        };
        assert!(compile(&request("dino", 2), &inside).is_ok(), "{version}");
    }
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

#[test]
fn the_nccl_probe_keeps_image_and_scheduling_and_drops_the_rest() {
    let mut req = request("dino-train", 1);
    req["spec"]["imagePullSecrets"] = json!(["ngc-pull"]);
    req["spec"]["scheduling"] = json!({"nodeSelector": {"nvidia.com/gpu.product": "H100"}, "priorityClassName": "training"});
    req["spec"]["env"] = json!({"TAO_LOG_LEVEL": "info"});
    req["spec"]["credentials"] = json!({"extra": ["HF_TOKEN"]});
    req["spec"]["rendezvous"] = json!({"port": 23456});
    let probe = Options {
        nccl_probe: true,
        ..Options::default()
    };
    let objects = compile(&req, &probe).unwrap_or_else(|e| panic!("{e:#?}"));
    let (service, job) = (&objects[0], &objects[1]);
    assert_eq!(job["metadata"]["name"], "dino-train-nccl-probe");
    assert_eq!(service["spec"]["ports"][0]["port"], 23456);
    let spec = &job["spec"];
    assert_eq!(
        (
            spec["completions"].as_u64(),
            spec["activeDeadlineSeconds"].as_u64()
        ),
        (Some(2), Some(300))
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(
        pod["nodeSelector"],
        json!({"nvidia.com/gpu.product": "H100"})
    );
    assert_eq!(pod["priorityClassName"], "training");
    assert_eq!(pod["imagePullSecrets"], json!([{"name": "ngc-pull"}]));
    let main = &pod["containers"][0];
    assert_eq!(main["image"], "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt");
    assert_eq!(main["command"], json!(["python3"]));
    assert_eq!(main["args"][0], "-c");
    assert!(
        main.get("envFrom").is_none(),
        "the probe needs no credentials"
    );
    assert!(
        main["env"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["name"] != "TAO_LOG_LEVEL")
    );
    let volumes: Vec<&str> = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(volumes, ["tao-k8s-shm"]);

    req["spec"]["resources"]["gpusPerNode"] = json!(0);
    let Err(Failure::Request(d)) = compile(&req, &probe) else {
        panic!("a GPU-less probe was rendered")
    };
    assert!(d[0].message.contains("needs GPUs"));
}

/// The probe program itself, run by python3 against a small fake `torch` that forks one
/// process per "GPU" and sums like an all-reduce: one OK line, or one FAILED line and exit 1.
#[test]
fn the_nccl_probe_program_prints_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let torch = dir.path().join("torch");
    std::fs::create_dir(&torch).unwrap();
    std::fs::write(
        torch.join("__init__.py"),
        "class _Cuda:\n    def set_device(self, i): pass\n    def synchronize(self): pass\ncuda = _Cuda()\nfloat32 = 'float32'\n\
         class _T:\n    v = 1.0\n    def __getitem__(self, i): return self\n    def item(self): return self.v\n\
         def ones(n, dtype=None, device=None): return _T()\n",
    )
    .unwrap();
    std::fs::write(
        torch.join("distributed.py"),
        "import os\n_world = 0\n\
         def init_process_group(backend, init_method, world_size, rank, timeout):\n    global _world\n    if os.environ.get('FAKE_NCCL_FAIL'): raise RuntimeError('NCCL error: unhandled system error')\n    _world = world_size\n\
         def all_reduce(x): x.v = x.v * _world\ndef destroy_process_group(): pass\n",
    )
    .unwrap();
    std::fs::write(
        torch.join("multiprocessing.py"),
        "import os\nclass ProcessExitedException(Exception): pass\n\
         def start_processes(fn, args, nprocs, join, start_method):\n    for i in range(nprocs):\n        pid = os.fork()\n        if pid == 0:\n            try:\n                fn(i, *args)\n            except SystemExit as e:\n                os._exit(e.code or 0)\n            os._exit(0)\n        _, status = os.waitpid(pid, 0)\n        if os.waitstatus_to_exitcode(status) != 0: raise ProcessExitedException('process %d failed' % i)\n",
    )
    .unwrap();
    let program = tao_k8s::plan::pod_script(tao_k8s::plan::NCCL_PROBE);
    let run = |fail: bool| {
        let mut cmd = std::process::Command::new("python3");
        cmd.args(["-c", &program])
            .env("PYTHONPATH", dir.path())
            .envs([("NNODES", "1"), ("NPROC_PER_NODE", "2"), ("NODE_RANK", "0")]);
        if fail {
            cmd.env("FAKE_NCCL_FAIL", "1");
        }
        cmd.output().unwrap()
    };
    let ok = run(false);
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.starts_with(
        "tao-k8s nccl-probe: OK: all-reduce of 256 MiB across 2 GPUs on 1 nodes, bus bandwidth "
    ));

    let failed = run(true);
    let stdout = String::from_utf8_lossy(&failed.stdout);
    assert_eq!(failed.status.code(), Some(1));
    assert_eq!(
        stdout.trim(),
        "tao-k8s nccl-probe: FAILED on rank 0: RuntimeError: NCCL error: unhandled system error"
    );
}
