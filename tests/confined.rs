//! Files an input names stay inside the folder they are allowed in, a FIFO or device is
//! refused wherever a file is read (never waited on), and outputs are written only under
//! names inside their folder. Each case names the path and what was expected.

mod common;

use std::path::Path;

use common::{HANG_GUARD, ROOT, Run};

fn tao(dir: &Path, args: &[&str], stdin: &str) -> Run {
    common::user()
        .current_dir(dir)
        .args(args)
        .write_stdin(stdin)
        .timeout(HANG_GUARD)
        .run_lossy()
}

impl Run {
    fn refused(&self, code: i32, needles: &[&str]) {
        assert_eq!(self.code, Some(code), "stderr: {}", self.stderr);
        for needle in needles {
            assert!(
                self.stderr.contains(needle) || self.stdout.contains(needle),
                "{needle:?} not in\nstderr: {}\nstdout: {}",
                self.stderr,
                self.stdout
            );
        }
    }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(name)).unwrap()
}

const CONFIG_REQUEST: &str = "fixtures/requests/valid/config-file.yaml";
const SPEC: &str = "fixtures/requests/valid/specs/dino-train.yaml";

#[test]
fn a_fifo_is_refused_wherever_a_file_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("req/specs")).unwrap();
    std::fs::write(d.join("req/request.yaml"), fixture(CONFIG_REQUEST)).unwrap();
    mkfifo(&d.join("req/specs/dino-train.yaml"));
    // A spec file: a diagnostic of the request.
    tao(d, &["render", "req/request.yaml"], "").refused(
        1,
        &["specs/dino-train.yaml", "it is a FIFO, not a regular file"],
    );
    // A request named on the command line.
    mkfifo(&d.join("fifo.yaml"));
    tao(d, &["render", "fifo.yaml"], "").refused(
        2,
        &["cannot read `fifo.yaml`: it is a FIFO, not a regular file"],
    );
    tao(d, &["lint", "fifo.yaml"], "").refused(2, &["`fifo.yaml`: it is a FIFO"]);
    // A template.
    std::fs::create_dir_all(d.join("templates")).unwrap();
    mkfifo(&d.join("templates/job.yaml.j2"));
    let example = format!("{ROOT}/examples/dino-train.yaml");
    tao(d, &["render", "--templates", "templates", &example], "")
        .refused(2, &["templates/job.yaml.j2", "it is a FIFO"]);
    // A stored snapshot.
    std::fs::create_dir_all(d.join("snaps")).unwrap();
    mkfifo(&d.join("snaps/dino-train.snap"));
    tao(d, &["snapshot", &example, "--snapshots", "snaps"], "")
        .refused(2, &["snaps/dino-train.snap", "it is a FIFO"]);
    // What kubectl returned.
    std::fs::create_dir_all(d.join("cluster")).unwrap();
    mkfifo(&d.join("cluster/nodes.json"));
    std::fs::write(d.join("manifest.yaml"), "").unwrap();
    let rendered = tao(d, &["render", &example], "");
    std::fs::write(d.join("manifest.yaml"), rendered.stdout).unwrap();
    tao(d, &["gate", "manifest.yaml", "--cluster", "cluster"], "")
        .refused(2, &["cluster/nodes.json", "it is a FIFO"]);
}

/// In a pod with no kubeconfig, the service account's namespace file is read: a FIFO there
/// is not waited on and a link to an endless device is not read, the namespace is just not
/// taken from it.
#[test]
fn the_service_account_file_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let request = fixture("examples/dino-train.yaml").replace("  namespace: vision\n", "");
    std::fs::write(d.join("r.yaml"), request).unwrap();
    let sa = d.join("sa");
    std::fs::create_dir_all(&sa).unwrap();
    for target in ["fifo", "zero"] {
        let _ = std::fs::remove_file(sa.join("namespace"));
        if target == "fifo" {
            mkfifo(&sa.join("namespace"));
        } else {
            std::os::unix::fs::symlink("/dev/zero", sa.join("namespace")).unwrap();
        }
        let out = common::tao()
            .current_dir(d)
            .env_remove("TAO_K8S_NAMESPACE")
            .env_remove("KUBECONFIG")
            .env("HOME", d)
            .env("KUBERNETES_SERVICE_HOST", "10.0.0.1")
            .env("TAO_K8S_SERVICEACCOUNT_DIR", &sa)
            .args(["render", "r.yaml"])
            .timeout(HANG_GUARD)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{target}");
        assert!(
            stdout.contains("namespace: \"default\""),
            "{target}: {stdout}"
        );
    }
}

#[test]
fn krm_reads_no_file_outside_the_working_directory_whatever_the_annotation_says() {
    let dir = tempfile::tempdir().unwrap();
    let (package, other) = (dir.path().join("package"), dir.path().join("other"));
    std::fs::create_dir_all(package.join("specs")).unwrap();
    std::fs::create_dir_all(other.join("specs")).unwrap();
    std::fs::write(package.join("specs/dino-train.yaml"), fixture(SPEC)).unwrap();
    std::fs::write(
        other.join("specs/dino-train.yaml"),
        fixture(SPEC).replace("epochs", "epochs_from_outside"),
    )
    .unwrap();
    let request = fixture(CONFIG_REQUEST);
    let item = |path: &str| {
        let body: String = request
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("  {l}\n"))
            .collect();
        let body = body.replacen("  apiVersion", "- apiVersion", 1).replacen(
            "  metadata:\n",
            &format!("  metadata:\n    annotations:\n      config.kubernetes.io/path: '{path}'\n"),
            1,
        );
        format!("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{body}")
    };
    let inside = tao(&package, &["krm"], &item("r.yaml"));
    assert_eq!(inside.code, Some(0), "{}", inside.stderr);
    let outside = other.join("r.yaml").display().to_string();
    for path in ["../other/r.yaml", outside.as_str()] {
        let run = tao(&package, &["krm"], &item(path));
        run.refused(1, &["outside", "\"severity\": \"error\""]);
        assert!(!run.stdout.contains("epochs_from_outside"), "{path}");
    }
}

#[test]
fn render_dir_refuses_a_request_link_leaving_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("requests")).unwrap();
    std::fs::create_dir_all(d.join("private")).unwrap();
    std::fs::write(
        d.join("private/secret.yaml"),
        "password: hunter2-not-real\n",
    )
    .unwrap();
    std::fs::write(
        d.join("requests/a.yaml"),
        fixture("examples/dino-train.yaml"),
    )
    .unwrap();
    std::os::unix::fs::symlink(d.join("private/secret.yaml"), d.join("requests/b.yaml")).unwrap();
    let run = tao(d, &["render", "requests"], "");
    run.refused(2, &["requests/b.yaml", "outside `requests`"]);
    assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
}

#[test]
fn out_names_that_leave_the_folder_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("requests")).unwrap();
    let example = fixture("examples/dino-train.yaml");
    std::fs::write(d.join("requests/...yaml"), &example).unwrap();
    std::fs::write(
        d.join("requests/b.yaml"),
        example.replace("dino-train-coco", "other"),
    )
    .unwrap();
    std::fs::create_dir_all(d.join("out/bundles")).unwrap();
    std::fs::write(d.join("out/job.sh"), "mine\n").unwrap();
    tao(d, &["render", "requests", "--out", "out/bundles"], "")
        .refused(2, &["requests/...yaml", "not a name inside it"]);
    assert_eq!(
        std::fs::read_to_string(d.join("out/job.sh")).unwrap(),
        "mine\n"
    );
    assert!(!d.join("out/bundles/b").exists());
    tao(
        d,
        &["snapshot", "requests", "--snapshots", "snaps", "--update"],
        "",
    )
    .refused(2, &["requests/...yaml", "not a name inside it"]);
    assert!(!d.join("snaps").exists());
}

/// `a.yaml` (multi-node: its probe's snapshot is `a.nccl-probe.snap`) and a request named
/// `a.nccl-probe.yaml` would share one file: refused before anything is written.
#[test]
fn snapshot_names_of_probes_do_not_collide_with_requests() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("requests")).unwrap();
    std::fs::write(
        d.join("requests/a.yaml"),
        fixture("fixtures/requests/valid/multi-node-2.yaml"),
    )
    .unwrap();
    std::fs::write(
        d.join("requests/a.nccl-probe.yaml"),
        fixture("examples/dino-train.yaml"),
    )
    .unwrap();
    tao(
        d,
        &["snapshot", "requests", "--snapshots", "snaps", "--update"],
        "",
    )
    .refused(2, &["would share the snapshot", "a.nccl-probe.snap"]);
    assert!(!d.join("snaps").exists());
}

#[test]
fn krm_refuses_items_and_function_configs_that_are_not_objects() {
    let dir = tempfile::tempdir().unwrap();
    let run = tao(
        dir.path(),
        &["krm"],
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: [1, \"x\", null, [], {}]\n",
    );
    run.refused(
        1,
        &[
            "items[0] is not a Kubernetes object: expected a mapping, found a number",
            "items[2] is not a Kubernetes object: expected a mapping, found null",
            "items[4] is not a Kubernetes object: no `apiVersion`",
        ],
    );
    let run = tao(
        dir.path(),
        &["krm"],
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig: [1, 2]\n",
    );
    run.refused(1, &["functionConfig is a list: expected a ConfigMap"]);
}

/// Seven levels of folders, each holding eight links to the next: 8^7 paths to one file.
/// Every folder is walked once, by device and inode, and the file is linted once.
#[test]
fn lint_walks_each_folder_once_however_many_links_lead_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for level in 0..=7 {
        std::fs::create_dir_all(d.join(format!("l{level}"))).unwrap();
    }
    std::fs::write(
        d.join("l7/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {a: b}\n",
    )
    .unwrap();
    for level in 0..7 {
        for link in 0..8 {
            std::os::unix::fs::symlink(
                d.join(format!("l{}", level + 1)),
                d.join(format!("l{level}/s{link}")),
            )
            .unwrap();
        }
    }
    let run = tao(d, &["lint", "l0", "--format", "json"], "");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(json["summary"]["files"], 1, "{}", run.stdout);
}

/// A node listed twice in nodes.json would count twice: refused, naming it.
#[test]
fn gate_refuses_a_node_listed_twice() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let example = format!("{ROOT}/examples/dino-train.yaml");
    let rendered = tao(d, &["render", &example], "");
    std::fs::write(d.join("manifest.yaml"), rendered.stdout).unwrap();
    std::fs::create_dir_all(d.join("cluster")).unwrap();
    let node = serde_json::json!({
        "metadata": {"name": "gpu-1"},
        "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    });
    let nodes = serde_json::json!({"items": [node.clone(), node]});
    std::fs::write(d.join("cluster/nodes.json"), nodes.to_string()).unwrap();
    tao(d, &["gate", "manifest.yaml", "--cluster", "cluster"], "")
        .refused(2, &["cluster/nodes.json: node `gpu-1` is listed twice"]);
}
