//! `render --target jobset`: the JobSet of a request, checked from the rendered objects as the
//! JobSet controller and webhook (kubernetes-sigs/jobset, `pkg/webhooks/jobset_webhook.go` and
//! `pkg/util/placement`) make of them: the Job it creates is `<jobset>-<replicated job>-<job
//! index>`, its pods' hostnames `<job>-<pod index>` in the headless Service named by
//! `network.subdomain`, and the webhook refuses a JobSet whose longest pod name, with its random
//! suffix, is no DNS-1035 label.

mod common;

use common::{ROOT, user as tao};
use serde_json::Value as Json;
use tao_k8s::kube::names::is_dns1035_label;
use tao_k8s::plan::{Options, Workload};
use tao_k8s::render::Templates;
use tao_k8s::source::Source;

const MULTI_NODE: &[&str] = &[
    "multi-node-2.yaml",
    "multi-node-4-config.yaml",
    "multi-node-16-kueue.yaml",
    "multi-node-1000.yaml",
    "tier-c-4-nodes.yaml",
];

fn jobset_opts() -> Options {
    Options {
        workload: Workload::JobSet,
        ..Options::default()
    }
}

fn fixture(name: &str) -> Source {
    let path = format!("{ROOT}/fixtures/requests/valid/{name}");
    Source::new(&path, std::fs::read_to_string(&path).unwrap())
}

fn compile(name: &str, opts: &Options) -> tao_k8s::Compiled {
    tao_k8s::compile(&fixture(name), opts, Templates::embedded())
        .unwrap_or_else(|e| panic!("{name}: {e:#?}"))
}

fn env<'a>(container: &'a Json, name: &str) -> Option<&'a str> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)?["value"]
        .as_str()
}

/// The names Kubernetes and the JobSet controller derive, and the env the pods get.
#[test]
fn master_addr_names_pod_zero_of_the_job_the_jobset_creates() {
    for name in MULTI_NODE {
        let objects = compile(name, &jobset_opts()).objects();
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert!(
            !kinds.contains(&"Service"),
            "{name}: {kinds:?}: JobSet makes its own"
        );
        assert!(!kinds.contains(&"Job"), "{name}: {kinds:?}");
        let js = objects.iter().find(|o| o["kind"] == "JobSet").unwrap();
        assert_eq!(js["apiVersion"], "jobset.x-k8s.io/v1alpha2");
        let jobset = js["metadata"]["name"].as_str().unwrap();
        let subdomain = js["spec"]["network"]["subdomain"].as_str().unwrap();
        assert_eq!(js["spec"]["network"]["enableDNSHostnames"], true);
        let replicated = &js["spec"]["replicatedJobs"];
        assert_eq!(replicated.as_array().unwrap().len(), 1, "{name}");
        assert_eq!(replicated[0]["replicas"], 1, "{name}");
        let job_name = format!("{jobset}-{}-0", replicated[0]["name"].as_str().unwrap());
        let job = &replicated[0]["template"]["spec"];
        assert_eq!(job["completionMode"], "Indexed", "{name}");
        let nodes = job["completions"].as_u64().unwrap();
        assert_eq!(job["parallelism"].as_u64(), Some(nodes));
        // The webhook's own check: the longest pod name, with a 5-character suffix.
        let longest = format!("{job_name}-{}-abcde", nodes - 1);
        assert!(is_dns1035_label(&longest), "{name}: {longest}");
        assert!(is_dns1035_label(subdomain), "{name}: {subdomain}");
        let pod = &job["template"]["spec"];
        // The controller sets the subdomain itself.
        assert!(pod.get("subdomain").is_none(), "{name}");
        let master = format!("{job_name}-0.{subdomain}");
        let containers = pod["containers"]
            .as_array()
            .unwrap()
            .iter()
            .chain(pod["initContainers"].as_array().unwrap());
        let mut named = 0;
        for c in containers {
            if let Some(addr) = env(c, "MASTER_ADDR") {
                assert_eq!(addr, master, "{name}: {}", c["name"]);
                named += 1;
            }
        }
        assert!(named >= 2, "{name}: the action and the wait for rendezvous");
        let tao = &pod["containers"][0];
        assert_eq!(env(tao, "WORLD_SIZE"), Some(nodes.to_string().as_str()));
        // TTL and suspension are the JobSet's: the Job it creates has neither.
        assert!(js["spec"]["ttlSecondsAfterFinished"].is_u64(), "{name}");
        assert!(job.get("ttlSecondsAfterFinished").is_none(), "{name}");
        assert!(job.get("suspend").is_none(), "{name}");
    }
}

/// Kueue admits the JobSet: the queue label and `suspend` are on it, not on the Job it
/// creates (which Kueue would otherwise try to admit on its own).
#[test]
fn kueue_admits_the_jobset_not_its_job() {
    let objects = compile("multi-node-16-kueue.yaml", &jobset_opts()).objects();
    let js = objects.iter().find(|o| o["kind"] == "JobSet").unwrap();
    assert_eq!(js["spec"]["suspend"], true);
    let queue = &js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"];
    assert!(queue.is_string(), "{js:#}");
    let template = &js["spec"]["replicatedJobs"][0]["template"];
    assert!(
        template["metadata"]["labels"]
            .get("kueue.x-k8s.io/queue-name")
            .is_none()
    );
    assert!(
        template["spec"]["template"]["metadata"]["labels"]
            .get("kueue.x-k8s.io/queue-name")
            .is_none()
    );
}

/// The failure policy, as JobSet reads it: restarts of all pods together, bounded by
/// `backoffLimit` plus `retries.disruptions`; a fatal exit code fails the Job with reason
/// `PodFailurePolicy`, on which the JobSet fails without a restart.
#[test]
fn a_fatal_exit_code_fails_the_jobset_and_other_failures_restart_it() {
    let objects = compile("multi-node-4-config.yaml", &jobset_opts()).objects();
    let js = objects.iter().find(|o| o["kind"] == "JobSet").unwrap();
    let policy = &js["spec"]["failurePolicy"];
    // The request: backoffLimit 1, disruptions unset, fatalExitCodes [42].
    assert_eq!(policy["maxRestarts"], 1);
    assert_eq!(policy["rules"][0]["action"], "FailJobSet");
    assert_eq!(
        policy["rules"][0]["onJobFailureReasons"],
        serde_json::json!(["PodFailurePolicy"])
    );
    let job = &js["spec"]["replicatedJobs"][0]["template"]["spec"];
    assert_eq!(job["backoffLimit"], 0);
    let rules = job["podFailurePolicy"]["rules"].as_array().unwrap();
    assert_eq!(rules[0]["action"], "Ignore");
    assert_eq!(rules[0]["onPodConditions"][0]["type"], "DisruptionTarget");
    assert_eq!(rules[1]["action"], "FailJob");
    assert_eq!(rules[1]["onExitCodes"]["values"], serde_json::json!([42]));
}

/// Every JobSet rendered is clean under the project's own lint, which checks a JobSet
/// against the built-in CRD; the same YAML with MASTER_ADDR pointing at an Indexed Job's pod
/// 0 (the name a Job would give it) is refused.
#[test]
fn rendered_jobsets_lint_clean_and_a_wrong_master_addr_is_caught() {
    for name in MULTI_NODE {
        let compiled = compile(name, &jobset_opts());
        let (yaml, plan) = (compiled.yaml, compiled.plan);
        tao()
            .args(["lint", "--strict-kinds", "-"])
            .write_stdin(yaml.clone())
            .assert()
            .success();
        let leader = plan.names.leader.clone().unwrap();
        let wrong = yaml.replace(&leader, &format!("{}-0", plan.names.job));
        assert_ne!(wrong, yaml);
        let run = tao().args(["lint", "-"]).write_stdin(wrong).run();
        assert_eq!(run.code, Some(1), "{name}: {}", run.stdout);
        assert!(run.stdout.contains("TK307"), "{name}: {}", run.stdout);
    }
}

/// The command line: `--target jobset` on render (manifests and bundle), plan and snapshot;
/// a single-node request is a JobSet too, without rendezvous; an unknown target is a usage
/// error that lists the targets.
#[test]
fn the_target_flag() {
    let request = format!("{ROOT}/fixtures/requests/valid/multi-node-2.yaml");
    let run = tao().args(["render", &request, "--target", "jobset"]).run();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("kind: JobSet"), "{}", run.stdout);
    let single = format!("{ROOT}/fixtures/requests/valid/args-mode.yaml");
    let run = tao().args(["render", &single, "--target", "jobset"]).run();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("kind: JobSet") && !run.stdout.contains("MASTER_ADDR"));
    let run = tao()
        .args(["render", &request, "--target", "deployment"])
        .run();
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.contains("indexed-job") && run.stderr.contains("jobset"),
        "{}",
        run.stderr
    );
    let run = tao().args(["plan", &request, "--target", "jobset"]).run();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let plan: Json = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(plan["run"]["workload"], "JobSet");
    assert_eq!(plan["jobSet"]["replicatedJob"], "workers");
    // The driver as one script drives the workload `render --target` wrote.
    for (target, workload, child) in [
        ("jobset", "JobSet", "dino-train-2n-workers-0"),
        ("indexed-job", "Job", ""),
    ] {
        let run = tao().args(["script", &request, "--target", target]).run();
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        assert!(
            run.stdout
                .contains(&format!("\nworkload='{workload}'\nchild_job='{child}'\n")),
            "{target}"
        );
    }
}

/// The NCCL probe of a JobSet bundle is a Job, whose pull Secret is the JobSet's.
#[test]
fn the_probe_of_a_jobset_bundle_is_a_job_sharing_its_pull_secret() {
    let bundle = tao_k8s::bundle(
        &fixture("multi-node-2.yaml"),
        &jobset_opts(),
        Templates::embedded(),
    )
    .unwrap();
    let probe = bundle.probe.unwrap().objects();
    let job = probe.iter().find(|o| o["kind"] == "Job").unwrap();
    let objects = bundle.job.objects();
    let js = objects.iter().find(|o| o["kind"] == "JobSet").unwrap();
    let pod = &js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"];
    assert_eq!(
        job["spec"]["template"]["spec"]["imagePullSecrets"],
        pod["imagePullSecrets"]
    );
    assert!(probe.iter().any(|o| o["kind"] == "Service"));
}

/// `indent` moves a block of the template's own output; a value cannot be written outside a
/// JSON scalar through it, nor through `safe`.
#[test]
fn indent_takes_blocks_not_values_and_safe_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let request = format!("{ROOT}/fixtures/requests/valid/multi-node-2.yaml");
    for (text, says) in [
        (
            "{{ names.job|indent(2) }}",
            "`indent` indents a block's own output",
        ),
        ("{{ names.job|safe }}", "`safe` is refused"),
    ] {
        std::fs::write(dir.path().join("configmap.yaml.j2"), format!("x: {text}\n")).unwrap();
        std::fs::write(
            dir.path().join("service.yaml.j2"),
            format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: {text}\n"),
        )
        .unwrap();
        let run = tao()
            .args(["render", &request, "--templates"])
            .arg(dir.path())
            .run();
        assert_eq!(run.code, Some(1), "{text}: {}", run.stdout);
        assert!(run.stderr.contains(says), "{text}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
}

/// The Job a JobSet creates is checked against the target version's `batch/v1` Job, which
/// the JobSet CRD's schema (of one Kubernetes release) cannot do: a field newer than the target
/// is refused at 1.28 and accepted at 1.37; and a field JobSet does not define is refused.
#[test]
fn the_jobs_template_is_checked_at_the_target_version_and_against_the_crd() {
    let dir = tempfile::tempdir().unwrap();
    let spec = std::fs::read_to_string(format!("{ROOT}/templates/_job_spec.yaml.j2")).unwrap();
    let line = "  backoffLimit: {{ job.backoffLimit }}\n";
    assert!(spec.contains(line));
    let request = format!("{ROOT}/fixtures/requests/valid/multi-node-2.yaml");
    let render = |version: &str| {
        tao()
            .args([
                "render",
                &request,
                "--target",
                "jobset",
                "--kube-version",
                version,
            ])
            .arg("--templates")
            .arg(dir.path())
            .run()
    };
    let managed = format!("{line}  managedBy: \"example.com/x\"\n");
    std::fs::write(
        dir.path().join("_job_spec.yaml.j2"),
        spec.replace(line, &managed),
    )
    .unwrap();
    let old = render("1.28");
    assert_eq!(old.code, Some(1));
    assert!(
        old.stderr.contains(
            "template `jobset.yaml.j2` produced invalid output: at `spec.replicatedJobs[0].template.spec.managedBy`: field `managedBy` needs Kubernetes 1.30"
        ),
        "{}",
        old.stderr
    );
    assert!(old.stdout.is_empty());
    assert_eq!(render("1.37").code, Some(0));

    let jobset = std::fs::read_to_string(format!("{ROOT}/templates/jobset.yaml.j2")).unwrap();
    let js = jobset.replace(
        "    enableDNSHostnames: true\n",
        "    enableDNSHostnames: true\n    hostNetwork: true\n",
    );
    assert_ne!(js, jobset);
    std::fs::remove_file(dir.path().join("_job_spec.yaml.j2")).unwrap();
    std::fs::write(dir.path().join("jobset.yaml.j2"), js).unwrap();
    let run = render("1.37");
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("spec.network.hostNetwork") && run.stderr.contains("unknown field"),
        "{}",
        run.stderr
    );
}

/// The JobSets of two requests, reviewed line by line: the one with a fatal exit code and
/// configuration (failure rules, ConfigMap), the one Kueue admits (`suspend`, queue label).
#[test]
fn jobset_snapshots() {
    for name in ["multi-node-4-config.yaml", "multi-node-16-kueue.yaml"] {
        insta::assert_snapshot!(name, compile(name, &jobset_opts()).yaml);
    }
}

/// Names at the length edges: a long or digit-first name is cut (with its hash) so that the
/// JobSet webhook's longest pod name fits, for every node count up to 1,000; the JobSet and
/// the Job of the same request may differ only by that cut.
#[test]
fn names_at_the_length_edges() {
    for (name, nodes) in [
        ("x".repeat(80), 1000u32),
        ("x".repeat(80), 2),
        ("7f3a9c1e-2b4d-4e5f-8a9b-0c1d2e3f4a5b".to_string(), 16),
        ("a".repeat(44), 10),
    ] {
        let request = serde_json::json!({
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
        });
        let source = Source::new("request.json", request.to_string());
        let compiled = tao_k8s::compile(&source, &jobset_opts(), Templates::embedded())
            .unwrap_or_else(|e| panic!("{name}: {e:#?}"));
        let objects = compiled.objects();
        let js = objects.iter().find(|o| o["kind"] == "JobSet").unwrap();
        let jobset = js["metadata"]["name"].as_str().unwrap();
        let longest = format!("{jobset}-workers-0-{}-abcde", nodes - 1);
        assert!(is_dns1035_label(&longest), "{name} {nodes}: {longest}");
        let pull = compiled.plan.ngc_pull_secret.clone().unwrap();
        assert_eq!(pull, format!("{jobset}-ngc"));
    }
}
