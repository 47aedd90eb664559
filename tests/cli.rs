//! The command line as a user meets it: exit codes, stdin, output formats, the namespace
//! precedence, template overrides, notes and warnings on stderr.

mod common;

use common::{ROOT, Tao, user as tao};
use serde_json::Value as Json;
use tao_k8s::source::Source;
use tao_k8s::yaml;

const EXAMPLE: &str = "examples/dino-train.yaml";

fn stdout_of(cmd: &mut Tao) -> String {
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// All documents of a YAML stream as JSON.
fn documents(text: &str) -> Vec<Json> {
    let stream = yaml::parse(&Source::new("out", text), yaml::Limits::default()).unwrap();
    stream.documents.iter().map(|d| d.to_json()).collect()
}

fn namespace_of(cmd: &mut Tao) -> String {
    let docs = documents(&stdout_of(cmd));
    docs[0]["metadata"]["namespace"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn renders_the_example_for_kubectl() {
    let docs = documents(&stdout_of(tao().args(["render", EXAMPLE])));
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0]["kind"], "Job");
    assert_eq!(docs[0]["metadata"]["name"], "dino-train-coco");
}

#[test]
fn json_and_yaml_outputs_are_the_same_objects() {
    for request in [EXAMPLE, "fixtures/requests/valid/config-inline.yaml"] {
        let yaml_docs = documents(&stdout_of(tao().args(["render", request])));
        let json: Json =
            serde_json::from_str(&stdout_of(tao().args(["render", request, "-o", "json"])))
                .unwrap();
        let json_docs = match json["kind"].as_str() {
            Some("List") => json["items"].as_array().unwrap().clone(),
            _ => vec![json],
        };
        assert_eq!(yaml_docs, json_docs, "{request}");
    }
}

#[test]
fn reads_json_from_stdin() {
    let text = std::fs::read_to_string(format!("{ROOT}/{EXAMPLE}")).unwrap();
    let request = documents(&text).remove(0);
    let out = stdout_of(tao().args(["render", "-"]).write_stdin(request.to_string()));
    assert_eq!(
        documents(&out),
        documents(&stdout_of(tao().args(["render", EXAMPLE])))
    );
}

#[test]
fn namespace_precedence_is_flag_request_env_default() {
    let no_ns = "fixtures/requests/valid/shell-mode.yaml";
    assert_eq!(namespace_of(tao().args(["render", no_ns])), "default");
    assert_eq!(
        namespace_of(
            tao()
                .args(["render", no_ns])
                .env("TAO_K8S_NAMESPACE", "from-env")
        ),
        "from-env"
    );
    assert_eq!(
        namespace_of(
            tao()
                .args(["render", EXAMPLE])
                .env("TAO_K8S_NAMESPACE", "from-env")
        ),
        "vision"
    );
    assert_eq!(
        namespace_of(
            tao()
                .args(["render", no_ns, "-n", "from-flag"])
                .env("TAO_K8S_NAMESPACE", "from-env")
        ),
        "from-flag"
    );
    assert_eq!(
        namespace_of(tao().args(["render", EXAMPLE, "-n", "vision"])),
        "vision"
    );
}

/// Inside a pod with no kubeconfig, a request without a namespace goes to the service
/// account's namespace, as kubectl's in-cluster config does; a kubeconfig, the flag, the
/// request and TAO_K8S_NAMESPACE come first.
#[test]
fn in_a_pod_the_default_namespace_is_the_service_account_s() {
    let no_ns = "fixtures/requests/valid/shell-mode.yaml";
    let dir = tempfile::tempdir().unwrap();
    let sa = dir.path().join("serviceaccount");
    std::fs::create_dir(&sa).unwrap();
    std::fs::write(sa.join("namespace"), "tao-jobs\n").unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let in_pod = |cmd: &mut Tao| -> String {
        namespace_of(
            cmd.env("KUBERNETES_SERVICE_HOST", "10.96.0.1")
                .env("TAO_K8S_SERVICEACCOUNT_DIR", &sa)
                .env("HOME", &home),
        )
    };
    let tao = || {
        let mut cmd = tao();
        cmd.env_remove("KUBECONFIG");
        cmd
    };
    assert_eq!(in_pod(tao().args(["render", no_ns])), "tao-jobs");
    assert_eq!(in_pod(tao().args(["render", EXAMPLE])), "vision");
    assert_eq!(
        in_pod(tao().args(["render", no_ns, "-n", "other"])),
        "other"
    );
    assert_eq!(
        in_pod(
            tao()
                .args(["render", no_ns])
                .env("TAO_K8S_NAMESPACE", "from-env")
        ),
        "from-env"
    );
    assert_eq!(
        in_pod(
            tao()
                .args(["render", no_ns])
                .env("KUBECONFIG", "/nonexistent")
        ),
        "default"
    );
    std::fs::write(sa.join("namespace"), "Not_A_Namespace").unwrap();
    assert_eq!(in_pod(tao().args(["render", no_ns])), "default");
}

/// A request's `metadata.namespace` and another `--namespace`: refused, as kubectl refuses an
/// object whose namespace does not match its `--namespace`, naming the field and its line,
/// and nothing is written.
#[test]
fn a_namespace_flag_that_contradicts_the_request_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("bundle");
    for args in [
        vec!["render", EXAMPLE, "-n", "from-flag"],
        vec!["script", EXAMPLE, "--namespace", "from-flag"],
        vec![
            "render",
            EXAMPLE,
            "-n",
            "from-flag",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    ] {
        let out = tao().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(
                "the namespace from the request (`metadata.namespace: vision`) does not match \
                 --namespace `from-flag`"
            ),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("metadata.namespace"), "{stderr}");
        assert!(stderr.contains(&format!("{EXAMPLE}:8:")), "{stderr}");
        assert!(!out_dir.exists(), "{args:?} wrote a bundle");
    }
}

#[test]
fn a_bad_namespace_flag_is_refused() {
    let out = tao()
        .args(["render", EXAMPLE, "--namespace", "Not_A_Namespace"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--namespace is not a valid namespace"));
}

#[test]
fn usage_and_io_errors_exit_2() {
    let missing = tao()
        .args(["render", "no/such/request.yaml"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        "error: cannot read `no/such/request.yaml`: no such file or directory\n"
    );
    // `render` takes folders of requests; `script` takes one request.
    let directory = tao().args(["script", "examples"]).output().unwrap();
    assert_eq!(directory.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&directory.stderr),
        "error: cannot read `examples`: it is a directory, not a file\n"
    );
    assert_eq!(
        tao().args(["render"]).output().unwrap().status.code(),
        Some(2)
    );
    assert_eq!(
        tao().args(["frobnicate"]).output().unwrap().status.code(),
        Some(2)
    );
    assert_eq!(
        tao()
            .args(["render", EXAMPLE, "--kube-version", "one"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn the_version_names_the_commit_when_built_from_a_checkout() {
    let out = tao().arg("--version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let version = String::from_utf8(out.stdout).unwrap();
    assert!(
        version.starts_with(concat!("tao-k8s ", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|h| h.status.success());
    if let Some(head) = head {
        let head = String::from_utf8_lossy(&head.stdout);
        assert!(
            version.contains(&format!("(commit {})", head.trim())),
            "{version}"
        );
    }
}

#[test]
fn json_output_and_a_bundle_are_not_asked_for_together() {
    let dir = tempfile::tempdir().unwrap();
    let out = tao()
        .args(["render", EXAMPLE, "-o", "json", "--out"])
        .arg(dir.path().join("bundle"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot be used with"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.path().join("bundle").exists(), "nothing is written");
}

#[test]
fn kube_versions_outside_the_supported_range_are_refused_with_the_range() {
    for version in ["1.27", "1.38", "2.0", "v1.23.4"] {
        let out = tao()
            .args(["render", EXAMPLE, "--kube-version", version])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{version}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("the supported versions are 1.28 to 1.37"),
            "{version}: {stderr}"
        );
        assert!(out.stdout.is_empty());
    }
    for version in ["1.28", "v1.32.1", "1.37"] {
        let out = tao()
            .args(["render", EXAMPLE, "--kube-version", version])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{version}");
    }
}

#[test]
fn lifecycle_only_runs_say_gpu_scheduling_was_not_verified() {
    let out = tao()
        .args(["render", "fixtures/requests/valid/lifecycle-only.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("GPU scheduling was not verified"));
}

#[test]
fn warnings_go_to_stderr_and_do_not_refuse() {
    let request = std::fs::read_to_string(format!("{ROOT}/{EXAMPLE}"))
        .unwrap()
        .replace("TAO_LOG_LEVEL: info", "TAO_QUIET: off");
    let out = tao()
        .args(["render", "-"])
        .write_stdin(request)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning[TK007]") && stderr.contains("<stdin>:"),
        "{stderr}"
    );
    assert_eq!(
        documents(&String::from_utf8(out.stdout).unwrap())[0]["spec"]["template"]["spec"]["containers"]
            [0]["env"][0]["value"],
        "off"
    );
}

/// Render the example with the template `name` replaced by `edit` applied to the embedded one
/// (`_job_spec.yaml.j2` holds the Job's spec, `job.yaml.j2` the rest).
fn render_with_template(name: &str, edit: impl Fn(&str) -> String) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let job = std::fs::read_to_string(format!("{ROOT}/templates/{name}")).unwrap();
    std::fs::write(dir.path().join(name), edit(&job)).unwrap();
    tao()
        .args(["render", EXAMPLE, "--templates"])
        .arg(dir.path())
        .output()
        .unwrap()
}

#[test]
fn a_template_author_mistake_names_the_template_and_prints_nothing() {
    let out = render_with_template("_job_spec.yaml.j2", |t| {
        t.replace(
            "restartPolicy: {{ job.pod.restartPolicy }}",
            "restartPolicy: {{ job.pod.restartPolicy }}\n      restartPolicyy: Never",
        )
    });
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("template `job.yaml.j2`")
            && stderr.contains("at `spec.template.spec.restartPolicyy`: unknown field"),
        "{stderr}"
    );

    let out = render_with_template("job.yaml.j2", |_| {
        "kind: Job\nname: {{ no_such_field }}\n".into()
    });
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("job.yaml.j2:2"), "{stderr}");
}

#[test]
fn a_template_override_is_used() {
    let out = render_with_template("_job_spec.yaml.j2", |t| {
        t.replace(
            "restartPolicy: {{ job.pod.restartPolicy }}",
            "restartPolicy: {{ job.pod.restartPolicy }}\n      enableServiceLinks: false",
        )
    });
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = documents(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(
        docs[0]["spec"]["template"]["spec"]["enableServiceLinks"],
        false
    );
}

#[test]
fn schema_version_help_and_completions() {
    let schema: Json = serde_json::from_str(&stdout_of(tao().arg("schema"))).unwrap();
    assert_eq!(schema["title"], "tao-k8s ActionRequest v1");
    assert!(stdout_of(tao().arg("--version")).starts_with("tao-k8s "));
    let help = stdout_of(tao().args(["render", "--help"]));
    assert!(help.contains("kubectl apply -f -") && help.contains("TAO_K8S_NAMESPACE"));
    assert!(stdout_of(tao().args(["completions", "bash"])).contains("tao-k8s"));
}

#[test]
fn stage_writes_the_map_and_the_spec_that_render_accepts_back() {
    let dir = tempfile::tempdir().unwrap();
    let request = "fixtures/requests/valid/config-file.yaml";
    let out = tao()
        .args(["stage", request, "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "stage prints no manifests");
    let map: Json = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("staging-map.json")).unwrap(),
    )
    .unwrap();
    let spec = std::fs::read_to_string(dir.path().join("spec.yaml")).unwrap();
    assert!(
        spec.contains("/data/coco/train2017") && !spec.contains("/home/alice"),
        "{spec}"
    );
    let digest = map["config"]["sha256"].as_str().unwrap();

    // The same file passed back renders, and the ConfigMap holds its bytes unchanged.
    let staged = dir.path().join("spec.yaml");
    let docs = documents(&stdout_of(
        tao()
            .args(["render", request, "--staged-config"])
            .arg(&staged),
    ));
    assert_eq!(docs[0]["data"]["spec.yaml"], spec);
    assert_eq!(
        docs[0]["metadata"]["annotations"]["tao-k8s.io/config-sha256"],
        digest
    );

    // A staged file edited after staging is refused.
    std::fs::write(&staged, spec.replace("num_epochs: 12", "num_epochs: 13")).unwrap();
    let out = tao()
        .args(["render", request, "--staged-config"])
        .arg(&staged)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("it changed after staging"));
}

#[test]
fn render_writes_the_staging_map_beside_the_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("map.json");
    let docs = documents(&stdout_of(
        tao()
            .args([
                "render",
                "fixtures/requests/valid/staging-aliases.yaml",
                "--staging-map",
            ])
            .arg(&file),
    ));
    assert_eq!(docs[0]["kind"], "Job");
    let map: Json = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let alias = map["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["producerPath"] == "data://coco")
        .unwrap();
    assert_eq!(alias["podPath"], "/data/coco");
    assert_eq!(
        alias["source"],
        serde_json::json!({"kind": "persistentVolumeClaim", "claimName": "tao-data", "subPath": "coco"})
    );

    // Nothing is written when the request is refused.
    let missing = dir.path().join("never.json");
    let out = tao()
        .args([
            "render",
            "fixtures/requests/invalid/uncovered-logical-path.yaml",
            "--staging-map",
        ])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!missing.exists());
}

#[test]
fn a_spec_over_the_configmap_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let request =
        std::fs::read_to_string(format!("{ROOT}/fixtures/requests/valid/config-file.yaml"))
            .unwrap();
    std::fs::write(
        dir.path().join("request.yaml"),
        request.replace("specs/dino-train.yaml", "big.yaml"),
    )
    .unwrap();
    let big: String = (0..40_000)
        .map(|i| format!("key_{i}: /data/coco/train2017/{i:08}.jpg\n"))
        .collect();
    assert!(big.len() > 1024 * 1024);
    std::fs::write(dir.path().join("big.yaml"), big).unwrap();
    let out = tao()
        .args(["render"])
        .arg(dir.path().join("request.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("more than a ConfigMap holds") && stderr.contains("PVC"),
        "{stderr}"
    );
}

#[test]
fn render_refuses_output_that_fails_its_own_lint() {
    // A template author's mistake: a credential-looking annotation on the Job.
    let out = render_with_template("job.yaml.j2", |t| {
        t.replacen(
            "  labels:\n",
            "  annotations:\n    ci.example.com/token: \"ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE\"\n  labels:\n",
            1,
        )
    });
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("TK092") && stderr.contains("TK101"),
        "{stderr}"
    );
    assert!(!stderr.contains("FAKEFAKE"), "masked: {stderr}");
}

/// The published hooks skip pre-commit's own files (no Kubernetes objects: linting them would
/// print a note in every repository), and this repository's own hook passes on its examples.
#[test]
fn the_pre_commit_hooks_draw_no_note_here() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(".pre-commit-hooks.yaml")).unwrap();
    let stream = yaml::parse(&Source::new("hooks", text), yaml::Limits::default()).unwrap();
    let hooks = stream.documents[0].to_json();
    let hooks = hooks.as_array().unwrap();
    assert_eq!(hooks.len(), 2);
    for hook in hooks {
        let pattern = |key: &str| regex::Regex::new(hook[key].as_str().unwrap()).unwrap();
        let (files, exclude) = (pattern("files"), pattern("exclude"));
        for own in [".pre-commit-config.yaml", ".pre-commit-hooks.yaml"] {
            assert!(
                files.is_match(own) && exclude.is_match(own),
                "{own}: {hook}"
            );
        }
        for linted in [
            "k8s/job.yaml",
            "deploy/base/svc.yml",
            "requests/dino-train.yaml",
        ] {
            assert!(
                files.is_match(linted) && !exclude.is_match(linted),
                "{linted}"
            );
        }
        assert!(exclude.is_match("chart/templates/job.yaml"));
    }
    let out = std::process::Command::new("bash")
        .arg(root.join(".ci/lint-rendered-examples.sh"))
        .env("TAO_K8S_BIN", common::BIN)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("note"), "{stderr}");
}

/// A request comes from a producer, not from whoever runs the tool: the spec file it names
/// must resolve inside its own folder (or a folder the caller allows with `--spec-root`).
#[test]
fn a_request_reads_no_file_outside_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let (req, other) = (dir.path().join("req"), dir.path().join("other"));
    std::fs::create_dir_all(req.join("specs")).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let spec = std::fs::read_to_string(format!(
        "{ROOT}/fixtures/requests/valid/specs/dino-train.yaml"
    ))
    .unwrap();
    std::fs::write(other.join("outside.yaml"), &spec).unwrap();
    std::fs::write(req.join("specs/inside.yaml"), &spec).unwrap();
    std::os::unix::fs::symlink(other.join("outside.yaml"), req.join("specs/link.yaml")).unwrap();
    std::os::unix::fs::symlink(&other, req.join("specs/dir-link")).unwrap();
    let request =
        std::fs::read_to_string(format!("{ROOT}/fixtures/requests/valid/config-file.yaml"))
            .unwrap();
    let render = |named: &str, extra: &[&str]| {
        std::fs::write(
            req.join("request.yaml"),
            request.replace("specs/dino-train.yaml", named),
        )
        .unwrap();
        tao()
            .current_dir(dir.path())
            .args(["render", "req/request.yaml"])
            .args(extra)
            .output()
            .unwrap()
    };
    assert_eq!(render("specs/inside.yaml", &[]).status.code(), Some(0));
    for named in [
        "../other/outside.yaml",
        "specs/../../other/outside.yaml",
        "/etc/passwd",
        "specs/link.yaml",
        "specs/dir-link/outside.yaml",
    ] {
        let out = render(named, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{named}: {stderr}");
        assert!(out.stdout.is_empty(), "{named}");
        assert!(
            stderr.contains("a request names files inside its own folder")
                && stderr.contains("field: spec.command.config.spec")
                && !stderr.contains("root:"),
            "{named}: {stderr}"
        );
    }
    // The caller may widen it.
    let other_root = other.display().to_string();
    for named in ["../other/outside.yaml", "specs/link.yaml"] {
        let out = render(named, &["--spec-root", &other_root]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{named}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        render("/etc/passwd", &["--spec-root", "/"]).status.code(),
        Some(1)
    );
}

/// `gate --help` and the command list describe `gate`, not the hidden command declared
/// after it.
#[test]
fn gate_help_describes_gate() {
    for args in [&["gate", "--help"][..], &["--help"][..]] {
        let out = tao().args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Decide the driver's gates"),
            "{args:?}: {text}"
        );
        assert!(
            !text.contains("Name the fields of MANIFEST"),
            "{args:?}: {text}"
        );
    }
}

/// `render` without `--out` prints objects that read Secrets only `job.sh submit` makes: it
/// says on stderr which, with their keys and a `kubectl create secret` line each, naming no
/// value; stdout holds the objects alone; a Job that reads no Secret gets no such note.
#[test]
fn render_names_the_secrets_the_job_needs_before_apply() {
    let run = |path: &str, env: &[(&str, &str)]| {
        let out = tao()
            .args(["render", path])
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let fake = [
        ("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKE0003"),
        (
            "AWS_SECRET_ACCESS_KEY",
            "FAKEfakeFAKEfakeFAKEfakeFAKEfakeFAKE0002",
        ),
        ("NGC_KEY", "nvapi-FAKEfakeFAKEfakeFAKEfakeFAKEfake0004"),
    ];
    let (stdout, stderr) = run(
        &format!("{ROOT}/fixtures/requests/valid/tier-c.yaml"),
        &fake,
    );
    for line in [
        "note: the Job reads Secrets this output does not hold; create them in namespace",
        "  Secret yolo-train-s3-creds: keys AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY",
        "    kubectl create secret generic yolo-train-s3-creds -n ",
        "--from-env-file=<path/to/yolo-train-s3-creds.env>",
        "  Secret yolo-train-s3-ngc: the nvcr.io pull Secret, key .dockerconfigjson",
        "--type=kubernetes.io/dockerconfigjson --from-file=.dockerconfigjson=<path/to/docker-config.json>",
    ] {
        assert!(stderr.contains(line), "no {line:?} in:\n{stderr}");
    }
    for (_, value) in fake {
        assert!(!stderr.contains(value) && !stdout.contains(value));
    }
    assert!(!stdout.contains("kubectl create"), "{stdout}");
    // The same objects as `-o json` prints: the note changes nothing on stdout.
    let docs = documents(&stdout);
    assert!(docs.iter().all(|d| d["kind"] != "Secret"), "{docs:?}");

    // A pull Secret the request names is the submitter's own: no note.
    let (_, stderr) = run(&format!("{ROOT}/{EXAMPLE}"), &[]);
    assert!(!stderr.contains("Secret"), "{stderr}");

    // An image off nvcr.io, no credentials: no Secret, no note.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{ROOT}/fixtures/requests/valid/args-mode.yaml"))
        .unwrap()
        .replace("image: nvcr.io/nvidia/", "image: registry.example.com/");
    let path = dir.path().join("plain.yaml");
    std::fs::write(&path, text).unwrap();
    let (stdout, stderr) = run(path.to_str().unwrap(), &[]);
    assert!(!stderr.contains("Secret"), "{stderr}");
    assert!(!stdout.contains("imagePullSecrets"), "{stdout}");
}

/// An absolute path of the command under no mount and not a path the image has renders with a
/// warning (TK042) naming it, where it is written and the mounts; paths on a mount, under the
/// results directory or in the image are not warned about. `explain TK042` says what it is.
#[test]
fn a_path_under_no_mount_is_a_warning_naming_it_and_the_mounts() {
    let path = format!("{ROOT}/fixtures/requests/warnings/unmounted-path.yaml");
    let out = tao().args(["render", &path]).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "`/home/alice/specs/train.yaml` is under no mount and not a path the image has: the \
             pod will not find it (mounts: /data, /results)"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("TK042"), "{stderr}");
    assert!(stderr.contains("unmounted-path.yaml:19:9"), "{stderr}");
    assert_eq!(stderr.matches("TK042").count(), 1, "{stderr}");
    for quiet in [
        "/data/train",
        "/results/train/model.pth",
        "/workspace/models",
        "/tmp/cache",
    ] {
        assert!(!stderr.contains(&format!("`{quiet}")), "{quiet}: {stderr}");
    }
    // The same request with the spec on the data mount: no warning.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("/home/alice/specs/train.yaml", "/data/specs/train.yaml");
    std::fs::write(dir.path().join("r.yaml"), text).unwrap();
    let out = tao()
        .args(["render", dir.path().join("r.yaml").to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("TK042"), "{stderr}");
    let explained = stdout_of(tao().args(["explain", "TK042"]));
    assert!(
        explained.starts_with("TK042 unmounted-path") && explained.contains("under no mount"),
        "{explained}"
    );
}
