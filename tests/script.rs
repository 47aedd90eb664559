//! Scenario tests of the driver script: the `job.sh` of a rendered bundle runs, as shipped,
//! against `fixtures/kubectl/fake-kubectl`, which logs every kubectl call and answers from a
//! scenario file (`fixtures/kubectl/scenarios/*.scenario`). Each test asserts the exit code,
//! the key stderr lines, the job record, and the exact sequence of the mutating kubectl calls
//! (apply, create, patch, delete). Credentials are recognisably fake values that must appear
//! nowhere but on the stdin of the Secret-creating calls.

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const CONTEXT: &str = "test-ctx";
/// The Job uid the scenarios answer.
const UID: &str = "5f0c1b2a-7d3e-4c8f-9a1b-2c3d4e5f6a7b";

const HF_TOKEN: (&str, &str) = ("HF_TOKEN", "hf_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE0001");
const AWS_SECRET_ACCESS_KEY: (&str, &str) = (
    "AWS_SECRET_ACCESS_KEY",
    "FAKEfakeFAKEfakeFAKEfakeFAKEfakeFAKE0002",
);
const AWS_ACCESS_KEY_ID: (&str, &str) = ("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKE0003");
const NGC_KEY: (&str, &str) = ("NGC_KEY", "nvapi-FAKEfakeFAKEfakeFAKEfakeFAKEfake0004");
const ACCESS_KEY: (&str, &str) = ("ACCESS_KEY", "AKIAFAKELEGACYFAKE05");
const SECRET_KEY: (&str, &str) = ("SECRET_KEY", "FAKElegacyFAKElegacyFAKElegacy0006");
/// Not a credential, but it travels in the Secret too.
const S3_BUCKET_NAME: (&str, &str) = ("S3_BUCKET_NAME", "tao-bucket");

const DRY_RUN: &str = "apply --dry-run=server -f $BUNDLE/manifest.yaml -o json";
const APPLY: &str = "apply -f $BUNDLE/manifest.yaml";
const STDIN_APPLY: &str = "apply -f - <stdin>";

/// A temporary directory with a rendered bundle (`bundle/`), the fake kubectl first on PATH
/// (`bin/`), the state directory (`state/`), TMPDIR (`tmp/`) and the files the fake answers
/// with (`files/`: the server's dry-run answer).
struct Sandbox {
    dir: tempfile::TempDir,
    request: String,
}

/// One run of `job.sh`.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    calls: Vec<Call>,
    /// The raw log of the fake kubectl.
    log: String,
    bundle: PathBuf,
    tmp: PathBuf,
}

/// One kubectl call, as the fake logged it.
struct Call {
    argv: Vec<String>,
    stdin: bool,
    stdin_len: u64,
    files: Vec<Value>,
}

impl Call {
    /// The argv after the context and namespace the driver puts first (only the namespace
    /// in-cluster).
    fn verb(&self) -> &[String] {
        let scope = if self.argv.first().is_some_and(|a| a == "--context") {
            4
        } else {
            2
        };
        &self.argv[scope.min(self.argv.len())..]
    }
}

fn tao(args: &[&str], state: &Path) -> std::process::Output {
    Command::new(cargo_bin("tao-k8s"))
        .args(args)
        .env("TAO_K8S_STATE_DIR", state)
        .env_remove("TAO_K8S_NAMESPACE")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

impl Sandbox {
    /// `request` is relative to the repository.
    fn new(request: &str) -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["bin", "state", "tmp", "files", "home"] {
            fs::create_dir(dir.path().join(sub)).unwrap();
        }
        std::os::unix::fs::symlink(
            Path::new(ROOT).join("fixtures/kubectl/fake-kubectl"),
            dir.path().join("bin/kubectl"),
        )
        .unwrap();
        let sandbox = Sandbox {
            dir,
            request: request.to_string(),
        };
        sandbox.render("bundle");
        sandbox.write_answer();
        sandbox
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Render the bundle into `into`: a second one is a fresh shell's view, without the
    /// `record-id` that submit writes beside the script.
    fn render(&self, into: &str) {
        self.render_with(&cargo_bin("tao-k8s"), into);
    }

    /// Render the bundle into `into` with the tao-k8s binary `bin`.
    fn render_with(&self, bin: &Path, into: &str) {
        let out = self.path(into);
        let request = Path::new(ROOT).join(&self.request);
        let r = Command::new(bin)
            .args([
                "render",
                request.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .env("TAO_K8S_STATE_DIR", self.path("state"))
            .env_remove("TAO_K8S_NAMESPACE")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            r.status.success(),
            "render {}: {}",
            self.request,
            String::from_utf8_lossy(&r.stderr)
        );
    }

    /// The rendered objects as the API server returns them from a dry run (`-o json`: the
    /// object, or a List), with the fields the server adds.
    fn write_answer(&self) {
        let request = Path::new(ROOT).join(&self.request);
        let r = tao(
            &["render", request.to_str().unwrap(), "-o", "json"],
            &self.path("state"),
        );
        assert!(r.status.success());
        let mut answer: Value = serde_json::from_slice(&r.stdout).unwrap();
        let add = |object: &mut Value| {
            let meta = object["metadata"].as_object_mut().unwrap();
            meta.insert("uid".into(), UID.into());
            meta.insert("resourceVersion".into(), "4711".into());
            meta.insert("creationTimestamp".into(), "2026-12-02T08:31:07Z".into());
        };
        match answer["items"].as_array_mut() {
            Some(items) => items.iter_mut().for_each(add),
            None => add(&mut answer),
        }
        fs::write(
            self.path("files/dry-run.json"),
            serde_json::to_string_pretty(&answer).unwrap(),
        )
        .unwrap();
    }

    /// `files/dry-run-dropped.json`: the dry-run answer without the field at `pointer`.
    fn write_answer_without(&self, pointer: &str) {
        let text = fs::read_to_string(self.path("files/dry-run.json")).unwrap();
        let mut answer: Value = serde_json::from_str(&text).unwrap();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let removed = answer
            .pointer_mut(parent)
            .and_then(|p| p.as_object_mut())
            .and_then(|p| p.remove(key));
        assert!(removed.is_some(), "the answer has no {pointer}");
        fs::write(
            self.path("files/dry-run-dropped.json"),
            serde_json::to_string_pretty(&answer).unwrap(),
        )
        .unwrap();
    }

    /// `bash job.sh ARGS` of the bundle in `bundle`, against `scenario`, with a clean
    /// environment plus `env` (which may override the defaults).
    fn run_in(&self, bundle: &str, scenario: &str, env: &[(&str, &str)], args: &[&str]) -> Run {
        let log = self.path("kubectl.log");
        let _ = fs::remove_file(&log);
        let bundle = self.path(bundle);
        let path = format!(
            "{}:{}",
            self.path("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        // A name of the shipped scenarios, or the path of one a test wrote (`scenario`).
        let scenario = if scenario.contains('/') {
            PathBuf::from(scenario)
        } else {
            Path::new(ROOT)
                .join("fixtures/kubectl/scenarios")
                .join(format!("{scenario}.scenario"))
        };
        let out = Command::new("bash")
            .arg(bundle.join("job.sh"))
            .args(args)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.path("home"))
            .env("TMPDIR", self.path("tmp"))
            .env("TAO_K8S_BIN", cargo_bin("tao-k8s"))
            .env("TAO_K8S_STATE_DIR", self.path("state"))
            .env("TAO_K8S_CONTEXT", CONTEXT)
            .env("TAO_K8S_SKIP_NODE_RUNTIME_CHECK", "1")
            .env("TAO_K8S_POLL_SECONDS", "1")
            .env("FAKE_KUBECTL_LOG", &log)
            .env("FAKE_KUBECTL_SCENARIO", scenario)
            .env("FAKE_KUBECTL_FILES", self.path("files"))
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let log = fs::read_to_string(&log).unwrap_or_default();
        let calls = log
            .lines()
            .map(|line| {
                let v: Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("the fake logged {line:?}: {e}"));
                Call {
                    argv: v["argv"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| a.as_str().unwrap().to_string())
                        .collect(),
                    stdin: v["stdin"].as_bool().unwrap(),
                    stdin_len: v["stdin_len"].as_u64().unwrap(),
                    files: v["files"].as_array().unwrap().clone(),
                }
            })
            .collect();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
            calls,
            log,
            bundle,
            tmp: self.path("tmp"),
        }
    }

    fn run(&self, scenario: &str, env: &[(&str, &str)], args: &[&str]) -> Run {
        self.run_in("bundle", scenario, env, args)
    }

    /// A scenario of this test: `rules` first, then those of the healthy cluster. Returns
    /// its path, for `run`.
    fn scenario(&self, name: &str, rules: &str) -> String {
        let dir = self.path("scenarios");
        fs::create_dir_all(&dir).unwrap();
        fs::copy(
            Path::new(ROOT).join("fixtures/kubectl/scenarios/healthy-cluster.scenario"),
            dir.join("healthy-cluster.scenario"),
        )
        .unwrap();
        let path = dir.join(format!("{name}.scenario"));
        fs::write(
            &path,
            format!("{rules}\nextends healthy-cluster.scenario\n"),
        )
        .unwrap();
        path.display().to_string()
    }

    /// `tao-k8s record show ID` as JSON.
    fn record(&self, id: &str) -> Value {
        let r = tao(&["record", "show", id], &self.path("state"));
        assert!(
            r.status.success(),
            "record show {id}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        serde_json::from_slice(&r.stdout).unwrap()
    }

    /// The record id submit wrote beside the script.
    fn record_id(&self) -> String {
        fs::read_to_string(self.path("bundle/record-id"))
            .expect("submit wrote bundle/record-id")
            .trim()
            .to_string()
    }

    /// The ids of every record in the state directory.
    fn record_ids(&self) -> Vec<String> {
        let Ok(entries) = fs::read_dir(self.path("state/records")) else {
            return Vec::new();
        };
        let mut ids: Vec<String> = entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter_map(|name| name.strip_suffix(".json").map(str::to_string))
            .collect();
        ids.sort();
        ids
    }

    /// A record as an earlier submit in another shell left it: RUNNING, bound to `backend`.
    fn running_record(&self, backend: &str) -> String {
        let state = self.path("state");
        let open = tao(
            &[
                "record",
                "open",
                "--image",
                "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt",
                "--network-arch",
                "rtdetr",
                "--action",
                "train",
                "--storage-tier",
                "A",
                "--results-dir",
                "/results/rtdetr",
                "--source",
                "driver",
            ],
            &state,
        );
        assert!(open.status.success());
        let id = String::from_utf8(open.stdout).unwrap().trim().to_string();
        for mark in [
            vec!["record", "mark", &id, "SUBMITTED", "--source", "driver"],
            vec![
                "record",
                "mark",
                &id,
                "RUNNING",
                "--source",
                "driver",
                "--backend-ref",
                backend,
            ],
        ] {
            assert!(tao(&mark, &state).status.success());
        }
        id
    }

    /// Every file under the sandbox except the fake's log, the answers and the bin link.
    fn files_written(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for entry in fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, out);
                } else {
                    out.push(path);
                }
            }
        }
        let mut out = Vec::new();
        for sub in ["state", "tmp", "home", "bundle"] {
            walk(&self.path(sub), &mut out);
        }
        out
    }
}

impl Run {
    /// Every call names the context and the namespace first.
    fn assert_scoped(&self, namespace: &str) {
        self.assert_scoped_in(CONTEXT, namespace);
    }

    fn assert_scoped_in(&self, context: &str, namespace: &str) {
        for call in &self.calls {
            assert_eq!(
                call.argv[..4],
                ["--context", context, "--namespace", namespace],
                "a kubectl call without the context and namespace: {:?}",
                call.argv
            );
        }
    }

    /// A call as one line: the bundle directory written `$BUNDLE`, the script's temporary
    /// directory `$TMP`, jsonpath templates shortened, ` <stdin>` when data came on stdin.
    fn line(&self, call: &Call) -> String {
        let tmp = regex::Regex::new(&format!(
            "{}/tmp\\.[A-Za-z0-9]+",
            regex::escape(&self.tmp.display().to_string())
        ))
        .unwrap();
        let words: Vec<String> = call
            .verb()
            .iter()
            .map(|a| {
                if a.starts_with("jsonpath=") {
                    "jsonpath=…".to_string()
                } else {
                    a.replace(&self.bundle.display().to_string(), "$BUNDLE")
                }
            })
            .collect();
        let line = tmp.replace_all(&words.join(" "), "$$TMP").into_owned();
        if call.stdin { line + " <stdin>" } else { line }
    }

    /// Every call, as lines.
    fn lines(&self) -> Vec<String> {
        self.calls.iter().map(|c| self.line(c)).collect()
    }

    /// The calls that change the cluster, as lines (the `--dry-run=server` apply among them).
    fn mutations(&self) -> Vec<String> {
        self.calls
            .iter()
            .filter(|c| {
                matches!(
                    c.verb().first().map(String::as_str),
                    Some("apply" | "create" | "patch" | "delete")
                )
            })
            .map(|c| self.line(c))
            .collect()
    }

    fn assert_code(&self, code: i32) {
        assert_eq!(
            self.code, code,
            "exit code\n--- stdout\n{}--- stderr\n{}--- kubectl\n{}",
            self.stdout, self.stderr, self.log
        );
    }

    fn assert_stderr(&self, line: &str) {
        assert!(
            self.stderr.lines().any(|l| l.contains(line)),
            "stderr has no line with {line:?}:\n{}",
            self.stderr
        );
    }

    /// Each Secret is created by `create secret ... --dry-run=client -o yaml` (nothing on its
    /// stdin) piped into `apply -f -` (the Secret on its stdin), from 0600 files.
    fn assert_secrets_through_stdin(&self) {
        for (i, call) in self.calls.iter().enumerate() {
            if call.verb().starts_with(&["create".into(), "secret".into()]) {
                assert!(!call.stdin, "{:?}", call.argv);
                assert!(
                    call.argv.iter().any(|a| a == "--dry-run=client"),
                    "{:?}",
                    call.argv
                );
                assert!(!call.files.is_empty(), "no file: {:?}", call.argv);
                for file in &call.files {
                    assert_eq!(file["mode"], "600", "{file} of {:?}", call.argv);
                }
                let next = self.calls.get(i + 1).expect("an apply after the create");
                assert_eq!(next.verb(), ["apply", "-f", "-"]);
                assert!(next.stdin && next.stdin_len > 0, "apply -f - had no stdin");
            }
        }
    }

    /// The keys of the env file each `create secret ... --from-env-file` read, in order.
    fn env_file_keys(&self) -> Vec<Vec<String>> {
        self.calls
            .iter()
            .flat_map(|c| &c.files)
            .filter(|f| f["flag"] == "--from-env-file")
            .map(|f| {
                f["keys"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| k.as_str().unwrap().to_string())
                    .collect()
            })
            .collect()
    }
}

/// Every request the repository ships, relative to it: the valid fixtures, the examples and
/// the requests of these tests.
fn requests() -> Vec<String> {
    let mut out = Vec::new();
    for dir in [
        "fixtures/requests/valid",
        "examples",
        "fixtures/kubectl/requests",
    ] {
        let mut names: Vec<String> = fs::read_dir(Path::new(ROOT).join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".yaml"))
            .map(|name| format!("{dir}/{name}"))
            .collect();
        names.sort();
        out.extend(names);
    }
    out
}

fn strings(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|l| l.to_string()).collect()
}

/// `create secret` of the credentials Secret, and its apply.
fn env_secret(name: &str) -> Vec<String> {
    vec![
        format!("create secret generic {name} --from-env-file=$TMP/env --dry-run=client -o yaml"),
        STDIN_APPLY.to_string(),
    ]
}

/// `create secret` of the nvcr.io pull Secret, and its apply.
fn pull_secret(name: &str) -> Vec<String> {
    vec![
        format!(
            "create secret generic {name} --type=kubernetes.io/dockerconfigjson \
             --from-file=.dockerconfigjson=$TMP/docker.json --dry-run=client -o yaml"
        ),
        STDIN_APPLY.to_string(),
    ]
}

/// The ownerReferences patch that attaches `object` to the Job.
fn owned(object: &str, job: &str) -> String {
    format!(
        "patch {object} --type=merge -p {{\"metadata\":{{\"ownerReferences\":[{{\"apiVersion\":\
         \"batch/v1\",\"kind\":\"Job\",\"name\":\"{job}\",\"uid\":\"{UID}\"}}]}}}}"
    )
}

/// The NCCL probe: a stale probe Job removed, the probe applied, then removed.
fn probe(job: &str) -> Vec<String> {
    vec![
        format!("delete job {job}-nccl-probe --ignore-not-found --wait=true --timeout=120s"),
        "apply -f $BUNDLE/nccl-probe.yaml".to_string(),
        "delete -f $BUNDLE/nccl-probe.yaml --ignore-not-found --wait=false".to_string(),
    ]
}

fn states(record: &Value) -> Vec<&str> {
    record["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["state"].as_str().unwrap())
        .collect()
}

fn last_reason(record: &Value) -> &str {
    record["history"].as_array().unwrap().last().unwrap()["reason"]
        .as_str()
        .unwrap_or("")
}

/// Standard base64, to look for a value as a Secret's `data` would hold it.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (b(0) << 16) | (b(1) << 8) | b(2);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// No credential value, plain or base64, in any kubectl argv, the fake's log, the script's
/// stdout and stderr, or any file left in the sandbox (records, the bundle, TMPDIR, HOME);
/// and the script's temporary directory is gone.
fn assert_no_leak(sandbox: &Sandbox, run: &Run, values: &[(&str, &str)]) {
    for (name, value) in values {
        // As given, as a Secret's data holds it, as the `auth` of a docker config holds it.
        let encoded =
            [value.to_string(), format!("$oauthtoken:{value}")].map(|v| base64(v.as_bytes()));
        for needle in [value.to_string(), encoded[0].clone(), encoded[1].clone()] {
            for call in &run.calls {
                assert!(
                    !call.argv.iter().any(|a| a.contains(&needle)),
                    "{name} in the argv {:?}",
                    call.argv
                );
            }
            assert!(!run.log.contains(&needle), "{name} in the kubectl log");
            assert!(!run.stdout.contains(&needle), "{name} on stdout");
            assert!(!run.stderr.contains(&needle), "{name} on stderr");
            for file in sandbox.files_written() {
                let text = String::from_utf8_lossy(&fs::read(&file).unwrap()).into_owned();
                assert!(!text.contains(&needle), "{name} in {}", file.display());
            }
        }
    }
    let left: Vec<_> = fs::read_dir(&run.tmp).unwrap().collect();
    assert!(left.is_empty(), "the script left {left:?} in TMPDIR");
}

// ---------------------------------------------------------------------------------------------
// submit: the happy paths

#[test]
fn single_node_submit_runs_the_gates_opens_a_record_applies_and_binds_the_job() {
    let job = "tao-7f3a9c1e-2b4d-4e8f-9a6b-0c1d2e3f4a5b";
    let s = Sandbox::new("fixtures/requests/valid/uuid-name.yaml");
    let run = s.run(
        "healthy-cluster",
        &[HF_TOKEN, ("TAO_K8S_SKIP_NODE_RUNTIME_CHECK", "0")],
        &["submit"],
    );
    run.assert_code(0);
    let id = s.record_id();
    assert_eq!(run.stdout, format!("{id} default/{job}\n"));
    run.assert_stderr(&format!("tao-k8s: job record {id}"));
    run.assert_stderr("tao-k8s: NGC_KEY is not set: no nvcr.io pull Secret is created");

    // Every gate, in order, before anything changes.
    run.assert_scoped("default");
    let lines = run.lines();
    let first_change = lines.iter().position(|l| l.starts_with("create")).unwrap();
    assert_eq!(
        lines[..first_change],
        strings(&[
            "get --raw /version",
            "auth can-i create jobs",
            "auth can-i delete jobs",
            "auth can-i create secrets",
            "auth can-i delete secrets",
            "auth can-i patch secrets",
            "get nodes -o jsonpath=…",
            "get nodes -l nvidia.com/gpu.present=true -o jsonpath=…",
            "get nodes -o json",
            "get pods --all-namespaces \
             --field-selector=status.phase!=Succeeded,status.phase!=Failed -o json",
            "get pvc -o json",
            &format!("get job {job} -o json --ignore-not-found"),
        ])
    );
    assert_eq!(
        run.mutations(),
        [
            env_secret(&format!("{job}-creds")),
            strings(&[DRY_RUN, APPLY]),
            vec![owned(&format!("secret/{job}-creds"), job)],
        ]
        .concat()
    );
    assert_eq!(run.env_file_keys(), [["HF_TOKEN"]]);
    run.assert_secrets_through_stdin();

    let record = s.record(&id);
    assert_eq!(record["state"], "RUNNING");
    assert_eq!(record["backendRef"], format!("default/{job}"));
    assert_eq!(states(&record), ["OPEN", "SUBMITTED", "RUNNING"]);
    assert_eq!(record["image"], "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt");
    assert_eq!(record["networkArch"], "dino");
    assert_eq!(record["action"], "inference");
    assert_eq!(record["storageTier"], "A");
    assert_eq!(record["resultsDir"], "/results/infer");
    assert_eq!(s.record_ids(), [id]);
    assert_no_leak(&s, &run, &[HF_TOKEN]);
}

#[test]
fn four_node_submit_runs_the_nccl_probe_once_per_context() {
    let job = "rtdetr-train-4n";
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let after_probe = [
        strings(&[DRY_RUN, APPLY]),
        vec![
            owned(&format!("service/{job}"), job),
            owned(&format!("configmap/{job}-spec"), job),
        ],
    ]
    .concat();

    let first = s.run("healthy-cluster", &[], &["submit"]);
    first.assert_code(0);
    first.assert_scoped("default");
    assert_eq!(
        first.mutations(),
        [probe(job), after_probe.clone()].concat()
    );
    first.assert_stderr("tao-k8s nccl-probe: OK: all-reduce of 256 MiB");
    // The probe completes before the record opens and the manifest is tried.
    let lines = first.lines();
    let at = |line: &str| lines.iter().position(|l| l == line).unwrap();
    let wait = at(&format!("get job {job}-nccl-probe -o jsonpath=…"));
    assert!(at("apply -f $BUNDLE/nccl-probe.yaml") < wait && wait < at(DRY_RUN));
    assert!(s.path(&format!("state/nccl-probe/{CONTEXT}.ok")).is_file());
    let first_id = s.record_id();
    assert_eq!(s.record(&first_id)["state"], "RUNNING");
    assert_eq!(first.stdout, format!("{first_id} default/{job}\n"));

    // Same context: the cached probe.
    let second = s.run("healthy-cluster", &[], &["submit"]);
    second.assert_code(0);
    second.assert_stderr(&format!(
        "tao-k8s: NCCL probe passed before on context {CONTEXT}"
    ));
    assert_eq!(second.mutations(), after_probe);
    assert_ne!(s.record_id(), first_id, "every submit opens its own record");

    // --reprobe forces it.
    let third = s.run("healthy-cluster", &[], &["submit", "--reprobe"]);
    third.assert_code(0);
    assert_eq!(
        third.mutations(),
        [probe(job), after_probe.clone()].concat()
    );

    // Another context has not been probed.
    let other = s.run(
        "healthy-cluster",
        &[("TAO_K8S_CONTEXT", "other-ctx")],
        &["submit"],
    );
    other.assert_code(0);
    other.assert_scoped_in("other-ctx", "default");
    assert_eq!(other.mutations(), [probe(job), after_probe].concat());
    assert_eq!(s.record_ids().len(), 4);
}

// ---------------------------------------------------------------------------------------------
// submit: the gates refuse before anything is applied and before the record opens

/// Refused by a gate: exit 1 with `message`, no change to the cluster, no record.
fn assert_refused_by_a_gate(s: &Sandbox, run: &Run, message: &str) {
    run.assert_code(1);
    run.assert_stderr(message);
    assert_eq!(run.mutations(), Vec::<String>::new());
    assert_eq!(run.stdout, "");
    assert_eq!(s.record_ids(), Vec::<String>::new(), "a record was opened");
    assert!(!s.path("bundle/record-id").exists());
}

#[test]
fn gpus_spread_over_too_many_nodes_are_refused_before_the_record_opens() {
    // tier-c-4-nodes needs 4 nodes with 8 GPUs each: the cluster has 32 GPUs on 8 nodes of 4.
    let s = Sandbox::new("fixtures/requests/valid/tier-c-4-nodes.yaml");
    let credentials = [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, HF_TOKEN, NGC_KEY];
    let run = s.run("gpus-spread-thin", &credentials, &["submit"]);
    assert_refused_by_a_gate(
        &s,
        &run,
        "tao-k8s: gate fit: refused: never fits: 4 pods requesting memory 262656Mi, \
         nvidia.com/gpu 8 each, no node can take one; closest: gpu-node-1: 4 nvidia.com/gpu \
         allocatable, the pod requests 8",
    );
    assert_no_leak(&s, &run, &credentials);
}

#[test]
fn a_server_older_than_1_28_is_refused_for_multi_node_only() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-2.yaml");
    let run = s.run("kube-1.27", &[], &["submit"]);
    assert_refused_by_a_gate(
        &s,
        &run,
        "tao-k8s: gate version: refused: multi-node needs Kubernetes 1.28 or newer, the server is 1.27",
    );
    run.assert_scoped("vision");

    // A single-node Job needs nothing newer.
    let single = Sandbox::new("fixtures/requests/valid/args-mode.yaml");
    let run = single.run("kube-1.27", &[], &["submit"]);
    run.assert_code(0);
    assert_eq!(run.mutations(), [DRY_RUN, APPLY]);
    let id = single.record_id();
    assert_eq!(run.stdout, format!("{id} vision/classification-evaluate\n"));
    assert_eq!(
        single.record(&id)["backendRef"],
        "vision/classification-evaluate"
    );
}

#[test]
fn a_pending_pvc_is_refused() {
    let s = Sandbox::new("fixtures/requests/valid/args-mode.yaml");
    let run = s.run("pvc-pending", &[], &["submit"]);
    assert_refused_by_a_gate(
        &s,
        &run,
        "tao-k8s: gate claims: refused: PersistentVolumeClaim tao-results is Pending, not Bound",
    );
}

#[test]
fn an_old_gpu_driver_is_refused_unless_the_check_is_skipped() {
    let s = Sandbox::new("fixtures/requests/valid/uuid-name.yaml");
    let run = s.run(
        "old-gpu-driver",
        &[HF_TOKEN, ("TAO_K8S_SKIP_NODE_RUNTIME_CHECK", "0")],
        &["submit"],
    );
    assert_refused_by_a_gate(
        &s,
        &run,
        "tao-k8s: GPU nodes need NVIDIA driver 580 or newer",
    );
    run.assert_stderr("tao-k8s: node gpu-node-2 has NVIDIA driver 550, older than 580");

    let skipped = s.run("old-gpu-driver", &[HF_TOKEN], &["submit"]);
    skipped.assert_code(0);
    skipped.assert_stderr("GPU node runtime check skipped (TAO_K8S_SKIP_NODE_RUNTIME_CHECK=1)");
}

/// Every GPU node carries a taint the request does not tolerate: never fits, naming the node
/// and the taint, even with a Kueue queue (only "never fits" refuses then).
#[test]
fn an_untolerated_taint_is_refused_naming_the_node_even_with_a_queue() {
    let s = Sandbox::new("fixtures/requests/valid/uuid-name.yaml");
    let run = s.run("gpus-other-team", &[HF_TOKEN], &["submit"]);
    assert_refused_by_a_gate(
        &s,
        &run,
        "tao-k8s: gate fit: refused: never fits: 1 pod requesting nvidia.com/gpu 1 each, no \
         node can take one; closest: gpu-node-1: taint dedicated=other-team:NoSchedule not \
         tolerated",
    );
    // scheduling.yaml tolerates dedicated=training and waits in Kueue queue team-a.
    let s = Sandbox::new("fixtures/requests/valid/scheduling.yaml");
    let run = s.run("gpus-other-team", &[], &["submit"]);
    assert_refused_by_a_gate(
        &s,
        &run,
        "closest: gpu-node-1: taint dedicated=other-team:NoSchedule not tolerated",
    );
    // The preflight verb runs the same gates and changes nothing.
    let run = s.run("gpus-other-team", &[], &["preflight"]);
    assert_refused_by_a_gate(&s, &run, "tao-k8s: gate fit: refused: never fits");
}

/// Kueue admits a Job when it fits: only "never fits" refuses one with a queue. Sixteen
/// 8-GPU pods never fit four nodes of 8.
#[test]
fn a_queued_job_is_refused_only_when_it_never_fits() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-16-kueue.yaml");
    let run = s.run("healthy-cluster", &[], &["submit"]);
    assert_refused_by_a_gate(
        &s,
        &run,
        "tao-k8s: gate fit: refused: never fits: 16 pods requesting nvidia.com/gpu 8 each, an \
         idle cluster has room for 4 (gpu-node-1 (1), gpu-node-2 (1), gpu-node-3 (1), \
         gpu-node-4 (1)); closest other node: cpu-node-1: nodeSelector \
         nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 not matched, 0 nvidia.com/gpu \
         allocatable, the pod requests 8",
    );
    // Busy GPUs: one 8-GPU pod fits only an idle cluster; the queue admits it later.
    let s = Sandbox::new("fixtures/requests/valid/scheduling.yaml");
    let run = s.run("gpus-busy", &[], &["submit"]);
    run.assert_code(0);
    run.assert_stderr(
        "tao-k8s: gate fit: pass: fits only on an idle cluster: room for 0 of 1 pod now",
    );
    run.assert_stderr("Kueue queue team-a admits the Job when it fits");
    assert_eq!(run.mutations(), [DRY_RUN, APPLY]);
    assert_eq!(s.record(&s.record_id())["state"], "RUNNING");
}

/// GPUs held by other pods: a single pod that fits only an idle cluster is submitted with a
/// warning (it waits Pending); one that fits the free GPUs is submitted without.
#[test]
fn busy_gpus_make_a_single_pod_wait_with_a_warning() {
    let s = Sandbox::new("fixtures/requests/valid/config-inline.yaml");
    let run = s.run("gpus-busy", &[], &["submit"]);
    run.assert_code(0);
    run.assert_stderr(
        "tao-k8s: gate fit: warning: fits only on an idle cluster: room for 0 of 1 pod now \
         (gpu-node-1: 4 nvidia.com/gpu free, 4 requested by running pods; gpu-node-2: 2 \
         nvidia.com/gpu free, 6 requested by running pods; gpu-node-3: 0 nvidia.com/gpu free, \
         8 requested by running pods; gpu-node-4: 0 nvidia.com/gpu free, 8 requested by \
         running pods); the pod waits Pending until the capacity frees",
    );
    let job = "dino-train-config";
    assert_eq!(
        run.mutations(),
        [
            strings(&[DRY_RUN, APPLY]),
            vec![owned(&format!("configmap/{job}-spec"), job)]
        ]
        .concat()
    );

    let s = Sandbox::new("fixtures/requests/valid/uuid-name.yaml");
    let run = s.run("gpus-busy", &[HF_TOKEN], &["submit"]);
    run.assert_code(0);
    run.assert_stderr(
        "tao-k8s: gate fit: pass: fits now: 1 pod requesting nvidia.com/gpu 1 each, on gpu-node-1 (1)",
    );
}

/// The case: without gang scheduling, a multi-node Job whose pods do not all fit the
/// free GPUs would start its first ranks and hold their GPUs: refused, unless the user
/// allows it to wait Pending.
#[test]
fn busy_gpus_refuse_a_multi_node_job_unless_pending_is_allowed() {
    let job = "rtdetr-train-4n";
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let run = s.run("gpus-busy", &[], &["submit"]);
    assert_refused_by_a_gate(
        &s,
        &run,
        "tao-k8s: gate fit: refused: fits only on an idle cluster: room for 1 of 4 pods now \
         (gpu-node-1: 4 nvidia.com/gpu free, 4 requested by running pods; gpu-node-2: 2 \
         nvidia.com/gpu free, 6 requested by running pods; gpu-node-3: 0 nvidia.com/gpu free, \
         8 requested by running pods; gpu-node-4: 0 nvidia.com/gpu free, 8 requested by \
         running pods); without gang scheduling the first pods would start and hold their \
         resources waiting for the rest: submit when it fits, through a Kueue queue, or with \
         --allow-pending",
    );
    run.assert_stderr("tao-k8s: a gate refused the job (above)");

    let run = s.run("gpus-busy", &[], &["submit", "--allow-pending"]);
    run.assert_code(0);
    run.assert_stderr("tao-k8s: gate fit: warning: fits only on an idle cluster: room for 1 of 4");
    run.assert_stderr("--allow-pending: the first pods start and hold their resources");
    assert_eq!(
        run.mutations(),
        [
            probe(job),
            strings(&[DRY_RUN, APPLY]),
            vec![
                owned(&format!("service/{job}"), job),
                owned(&format!("configmap/{job}-spec"), job),
            ],
        ]
        .concat()
    );
    assert_eq!(s.record_ids().len(), 1);
}

/// A service account that may not list the pods of every namespace: the fit is judged on
/// allocatable alone, with a warning, and the submit goes on.
#[test]
fn pods_that_cannot_be_listed_leave_free_capacity_unchecked() {
    let s = Sandbox::new("fixtures/requests/valid/uuid-name.yaml");
    let scenario = s.scenario(
        "no-pod-list",
        "when get pods --all-namespaces\n  err Error from server (Forbidden): pods is forbidden: \
         User \"system:serviceaccount:default:tao\" cannot list resource \"pods\" at the cluster scope\n  exit 1",
    );
    let run = s.run(&scenario, &[HF_TOKEN], &["submit"]);
    run.assert_code(0);
    run.assert_stderr("cannot list resource \"pods\" at the cluster scope");
    run.assert_stderr(
        "tao-k8s: cannot list the pods of every namespace: free capacity is not checked",
    );
    run.assert_stderr("tao-k8s: gate fit: warning: fits an idle cluster");
    assert!(run.mutations().contains(&APPLY.to_string()));
}

// ---------------------------------------------------------------------------------------------
// in-cluster: a pod's service account, no kubeconfig

/// Inside a pod (KUBERNETES_SERVICE_HOST set, a service account mounted) with no kubeconfig
/// and no context: kubectl runs on its in-cluster config, so no call names a context;
/// preflight says which mode it is in.
#[test]
fn in_a_pod_without_a_kubeconfig_the_service_account_is_used() {
    let job = "tao-7f3a9c1e-2b4d-4e8f-9a6b-0c1d2e3f4a5b";
    let s = Sandbox::new("fixtures/requests/valid/uuid-name.yaml");
    let sa = s.path("serviceaccount");
    fs::create_dir(&sa).unwrap();
    fs::write(sa.join("token"), "FAKE.service-account.token").unwrap();
    fs::write(sa.join("namespace"), "default").unwrap();
    let sa = sa.display().to_string();
    let env = [
        HF_TOKEN,
        ("TAO_K8S_CONTEXT", ""),
        ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
        ("KUBERNETES_SERVICE_PORT", "443"),
        ("TAO_K8S_SERVICEACCOUNT_DIR", &sa),
    ];
    let in_cluster = |run: &Run| {
        for call in &run.calls {
            assert_eq!(
                call.argv[..2],
                ["--namespace", "default"],
                "{:?}",
                call.argv
            );
            assert!(
                !call.argv.iter().any(|a| a == "--context"),
                "{:?}",
                call.argv
            );
        }
    };
    let run = s.run("healthy-cluster", &env, &["preflight"]);
    run.assert_code(0);
    run.assert_stderr(
        "tao-k8s: in-cluster: the pod's service account (namespace default), namespace default",
    );
    assert_eq!(
        run.stdout,
        format!("preflight passed for {job} in default on the in-cluster service account\n")
    );
    in_cluster(&run);
    assert_eq!(run.mutations(), Vec::<String>::new());

    let run = s.run("healthy-cluster", &env, &["submit"]);
    run.assert_code(0);
    in_cluster(&run);
    assert_eq!(
        run.mutations(),
        [
            env_secret(&format!("{job}-creds")),
            strings(&[DRY_RUN, APPLY]),
            vec![owned(&format!("secret/{job}-creds"), job)],
        ]
        .concat()
    );
    assert_eq!(
        s.record(&s.record_id())["backendRef"],
        format!("default/{job}")
    );
    assert_no_leak(&s, &run, &[HF_TOKEN]);
    assert!(!run.log.contains("FAKE.service-account.token"));

    // A service account of another namespace is said.
    fs::write(s.path("serviceaccount/namespace"), "tao-jobs").unwrap();
    let run = s.run("healthy-cluster", &env, &["preflight"]);
    run.assert_code(0);
    run.assert_stderr("the manifest's namespace default is not the service account's tao-jobs");

    // A kubeconfig wins: the in-cluster config is only the fallback kubectl has too.
    fs::create_dir(s.path("home/.kube")).unwrap();
    fs::write(
        s.path("home/.kube/config"),
        "apiVersion: v1\nkind: Config\n",
    )
    .unwrap();
    let scenario = s.scenario("current", "when config current-context\n  out kube-ctx");
    let run = s.run(&scenario, &env, &["preflight"]);
    run.assert_code(0);
    run.assert_stderr("tao-k8s: kubeconfig context kube-ctx, namespace default");
    fs::remove_dir_all(s.path("home/.kube")).unwrap();

    // KUBERNETES_SERVICE_HOST without a mounted service account: said before any call.
    fs::remove_file(s.path("serviceaccount/token")).unwrap();
    let run = s.run("healthy-cluster", &env, &["submit"]);
    run.assert_code(1);
    run.assert_stderr("no service account token is mounted at");
    assert!(run.calls.is_empty(), "{:#?}", run.lines());
}

// ---------------------------------------------------------------------------------------------
// resubmit: a Job of the same name exists

/// Submitting the bundle again after its Job completed, or while it runs, is refused before
/// the record opens and before any Secret is made, naming the Job, its state, the record
/// that owns it and what to do. Nothing changes in the cluster or the records.
#[test]
fn a_resubmit_is_refused_while_the_job_runs_and_after_it_completed() {
    let job = "rtdetr-train-4n";
    for (scenario, state) in [("job-complete", "succeeded"), ("job-waiting", "active")] {
        let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
        let id = s.running_record(&format!("default/{job}"));
        let before = s.record(&id);
        let run = s.run(scenario, &[NGC_KEY], &["submit"]);
        run.assert_code(1);
        run.assert_stderr(&format!(
            "tao-k8s: gate job: refused: the Job default/{job} exists ({state}, owned by job \
             record {id}): applying the manifest again would change nothing"
        ));
        let advice = if state == "active" {
            "job.sh status shows it, job.sh cancel stops and deletes it"
        } else {
            "job.sh submit --replace deletes it (and its logs) and runs the bundle again"
        };
        run.assert_stderr(advice);
        run.assert_stderr("to run beside it, render the request under another metadata.name");
        assert_eq!(run.mutations(), Vec::<String>::new(), "{scenario}");
        assert_eq!(
            s.record_ids(),
            std::slice::from_ref(&id),
            "{scenario}: a second record"
        );
        assert_eq!(s.record(&id), before, "{scenario}: the record changed");
        assert!(!s.path("bundle/record-id").exists());
        assert_no_leak(&s, &run, &[NGC_KEY]);
    }
}

/// `submit --replace` runs the bundle again once its Job ended: the ended Job and the bundle's
/// objects are deleted (and waited for) before anything of the new run is made, under a new
/// record; the old record keeps its history. A Job that still runs is not replaced.
#[test]
fn submit_replace_runs_an_ended_job_again_and_never_a_running_one() {
    let job = "rtdetr-train-4n";
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let old = s.running_record(&format!("default/{job}"));
    let before = s.record(&old);

    let running = s.run("job-waiting", &[NGC_KEY], &["submit", "--replace"]);
    running.assert_code(1);
    running.assert_stderr(
        "--replace replaces only a Job that ended; job.sh cancel stops and deletes it",
    );
    assert_eq!(running.mutations(), Vec::<String>::new());

    let run = s.run("job-replaced", &[NGC_KEY], &["submit", "--replace"]);
    run.assert_code(0);
    run.assert_stderr(&format!(
        "tao-k8s: gate job: pass: the Job default/{job} exists (succeeded, owned by job record \
         {old}): --replace deletes it"
    ));
    run.assert_stderr(&format!("tao-k8s: deleted the ended Job {job} (--replace)"));
    let mutations = run.mutations();
    // The ended Job and the bundle's objects go first, before the probe or the run make theirs
    // (the pull Secret has the same name in both).
    assert_eq!(
        mutations[..4],
        [
            format!("delete job {job} --cascade=foreground --ignore-not-found --timeout=300s"),
            format!("delete service {job} --ignore-not-found"),
            format!("delete configmap {job}-spec --ignore-not-found"),
            format!("delete secret {job}-ngc --ignore-not-found"),
        ],
        "{mutations:#?}"
    );
    assert!(
        mutations[4].starts_with(&format!("create secret generic {job}-ngc")),
        "{mutations:#?}"
    );
    let job_deletes = mutations
        .iter()
        .filter(|m| m.starts_with(&format!("delete job {job} ")))
        .count();
    assert_eq!(job_deletes, 1, "{mutations:#?}");
    assert!(mutations.contains(&APPLY.to_string()), "{mutations:#?}");
    let new = s.record_id();
    assert_ne!(new, old);
    assert_eq!(s.record(&old), before, "the old record keeps its history");
    assert_eq!(s.record(&new)["state"], "RUNNING");
    assert_no_leak(&s, &run, &[NGC_KEY]);
}

// ---------------------------------------------------------------------------------------------
// submit: the server refuses after the record opened

#[test]
fn a_dry_run_rejection_marks_the_record_failed_and_applies_nothing() {
    let s = Sandbox::new("fixtures/requests/valid/args-mode.yaml");
    let run = s.run("dry-run-rejected", &[], &["submit"]);
    run.assert_code(1);
    run.assert_stderr("admission webhook \"gpu-quota.example.com\" denied the request");
    run.assert_stderr("tao-k8s: the API server refused the manifest (dry run)");
    assert_eq!(run.mutations(), [DRY_RUN]);
    let record = s.record(&s.record_id());
    assert_eq!(record["state"], "FAILED");
    assert_eq!(states(&record), ["OPEN", "FAILED"]);
    assert_eq!(
        last_reason(&record),
        "the API server refused the manifest (dry run)"
    );
    assert!(record.get("backendRef").is_none());
}

#[test]
fn a_field_the_server_drops_marks_the_record_failed_and_applies_nothing() {
    let s = Sandbox::new("fixtures/requests/valid/args-mode.yaml");
    s.write_answer_without("/spec/activeDeadlineSeconds");
    let run = s.run("field-dropped", &[], &["submit"]);
    run.assert_code(1);
    run.assert_stderr(
        "tao-k8s: the API server dropped Job/classification-evaluate: spec.activeDeadlineSeconds",
    );
    run.assert_stderr("tao-k8s: the API server would drop fields of the manifest");
    assert_eq!(run.mutations(), [DRY_RUN]);
    let record = s.record(&s.record_id());
    assert_eq!(states(&record), ["OPEN", "FAILED"]);
    assert_eq!(
        last_reason(&record),
        "the API server would drop fields of the manifest"
    );
}

/// A submit that fails after the Secrets were created must not leave them behind: nothing
/// owns them (the Job was never applied), so nothing would ever delete them.
#[test]
fn a_refused_submit_leaves_no_credentials_secret_behind() {
    let s = Sandbox::new("fixtures/requests/valid/uuid-name.yaml");
    let run = s.run("dry-run-rejected", &[HF_TOKEN, NGC_KEY], &["submit"]);
    run.assert_code(1);
    assert_eq!(s.record(&s.record_id())["state"], "FAILED");
    let mutations = run.mutations();
    assert!(!mutations.iter().any(|m| m == APPLY));
    for (i, m) in mutations.iter().enumerate() {
        if let Some(rest) = m.strip_prefix("create secret generic ") {
            let name = rest.split(' ').next().unwrap();
            assert!(
                mutations[i..]
                    .iter()
                    .any(|d| d.starts_with(&format!("delete secret {name} "))),
                "the Secret {name} stays behind after the refused submit:\n{mutations:#?}"
            );
        }
    }
}

/// A Secret the server refuses: the record was opened, so it must end FAILED, not stay OPEN.
#[test]
fn a_refused_secret_marks_the_record_failed() {
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    let credentials = [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY];
    let run = s.run("secret-refused", &credentials, &["submit"]);
    run.assert_code(1);
    run.assert_stderr("secrets are forbidden");
    // Nothing after the refused Secret, but perhaps a clean-up of it.
    let mutations = run.mutations();
    assert_eq!(mutations[..2], env_secret("yolo-train-s3-creds"));
    assert!(
        mutations[2..]
            .iter()
            .all(|m| m == "delete secret yolo-train-s3-creds --ignore-not-found"),
        "{mutations:#?}"
    );
    let record = s.record(&s.record_id());
    assert_eq!(states(&record), ["OPEN", "FAILED"], "{record:#}");
    assert_no_leak(&s, &run, &credentials);
}

// ---------------------------------------------------------------------------------------------
// credentials

#[test]
fn credentials_reach_kubectl_only_on_stdin() {
    // tier-c: S3 keys (and the bucket) in the credentials Secret, NGC_KEY in the pull Secret.
    let job = "yolo-train-s3";
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    let credentials = [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, NGC_KEY];
    let env = [credentials.as_slice(), &[S3_BUCKET_NAME]].concat();
    let run = s.run("healthy-cluster", &env, &["submit"]);
    run.assert_code(0);
    assert_eq!(
        run.mutations(),
        [
            env_secret(&format!("{job}-creds")),
            pull_secret(&format!("{job}-ngc")),
            strings(&[DRY_RUN, APPLY]),
            vec![
                owned(&format!("secret/{job}-creds"), job),
                owned(&format!("secret/{job}-ngc"), job),
            ],
        ]
        .concat()
    );
    assert_eq!(
        run.env_file_keys(),
        [[
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "S3_BUCKET_NAME"
        ]]
    );
    run.assert_secrets_through_stdin();
    assert_no_leak(&s, &run, &credentials);

    // cancel deletes both Secrets with the Job.
    let cancel = s.run("healthy-cluster", &env, &["cancel"]);
    cancel.assert_code(0);
    assert_eq!(
        cancel.mutations(),
        [
            format!("delete job {job} --cascade=foreground --ignore-not-found --timeout=300s"),
            format!("delete secret {job}-creds --ignore-not-found"),
            format!("delete secret {job}-ngc --ignore-not-found"),
        ]
    );
    assert_no_leak(&s, &cancel, &credentials);

    // uuid-name: credentials.extra HF_TOKEN.
    let job = "tao-7f3a9c1e-2b4d-4e8f-9a6b-0c1d2e3f4a5b";
    let s = Sandbox::new("fixtures/requests/valid/uuid-name.yaml");
    let credentials = [HF_TOKEN, NGC_KEY];
    let run = s.run("healthy-cluster", &credentials, &["submit"]);
    run.assert_code(0);
    assert_eq!(
        run.mutations(),
        [
            env_secret(&format!("{job}-creds")),
            pull_secret(&format!("{job}-ngc")),
            strings(&[DRY_RUN, APPLY]),
            vec![
                owned(&format!("secret/{job}-creds"), job),
                owned(&format!("secret/{job}-ngc"), job),
            ],
        ]
        .concat()
    );
    assert_eq!(run.env_file_keys(), [["HF_TOKEN"]]);
    run.assert_secrets_through_stdin();
    assert_no_leak(&s, &run, &credentials);
}

#[test]
fn legacy_access_key_and_secret_key_fill_the_aws_keys() {
    let job = "yolo-train-s3";
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    let run = s.run("healthy-cluster", &[ACCESS_KEY, SECRET_KEY], &["submit"]);
    run.assert_code(0);
    assert_eq!(
        run.env_file_keys(),
        [["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]]
    );
    assert_eq!(
        run.mutations(),
        [
            env_secret(&format!("{job}-creds")),
            strings(&[DRY_RUN, APPLY]),
            vec![owned(&format!("secret/{job}-creds"), job)],
        ]
        .concat()
    );
    run.assert_secrets_through_stdin();
    assert_no_leak(&s, &run, &[ACCESS_KEY, SECRET_KEY]);
    // Tier C keeps its results in S3, after the pod is gone: the record names the prefix.
    let record = s.record(&s.record_id());
    assert_eq!(record["storageTier"], "C");
    assert_eq!(record["resultsDir"], "s3://tao-bucket/runs/yolo-train-s3/");
}

#[test]
fn a_missing_required_key_fails_the_record_and_creates_no_secret() {
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    let credentials = [AWS_ACCESS_KEY_ID, NGC_KEY];
    let run = s.run("healthy-cluster", &credentials, &["submit"]);
    run.assert_code(1);
    run.assert_stderr("tao-k8s: AWS_SECRET_ACCESS_KEY is not set in the environment");
    assert_eq!(run.mutations(), Vec::<String>::new());
    let record = s.record(&s.record_id());
    assert_eq!(states(&record), ["OPEN", "FAILED"]);
    assert_eq!(
        last_reason(&record),
        "AWS_SECRET_ACCESS_KEY is not set in the environment"
    );
    assert_no_leak(&s, &run, &credentials);
}

// ---------------------------------------------------------------------------------------------
// status, logs, cancel: from the record

#[test]
fn status_in_a_fresh_shell_reads_the_record_and_reports_each_index() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let id = s.running_record("default/rtdetr-train-4n");
    s.render("fresh");
    let run = s.run_in("fresh", "job-waiting", &[], &["status", "--record", &id]);
    run.assert_code(0);
    assert_eq!(
        run.stdout,
        "default/rtdetr-train-4n: running (active 4, succeeded 0, failed 0)\n  \
         index 0 rtdetr-train-4n-0-x7k2p: Pending on gpu-node-1, stage-config waiting \
         ImagePullBackOff (Back-off pulling image \"nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt\")\n  \
         index 1 rtdetr-train-4n-1-b8d4c: Running on gpu-node-2\n  \
         index 2 rtdetr-train-4n-2-m3n5q: Running on gpu-node-3, OOMKilled before, 2 restarts\n  \
         index 3 rtdetr-train-4n-3-q9w8e: Pending, not scheduled, Unschedulable: 0/6 nodes are \
         available: 2 Insufficient nvidia.com/gpu, 4 node(s) had untolerated taint {dedicated: \
         other-team}. preemption: 0/6 nodes are available: 6 Preemption is not helpful for \
         scheduling.\n"
    );
    assert_eq!(
        run.lines(),
        [
            "get job rtdetr-train-4n -o json",
            "get pods -l batch.kubernetes.io/job-name=rtdetr-train-4n -o json",
        ]
    );
    run.assert_scoped("default");
    assert_eq!(s.record(&id)["state"], "RUNNING");
}

#[test]
fn status_marks_the_record_succeeded_when_the_job_is_complete() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let id = s.running_record("default/rtdetr-train-4n");
    s.render("fresh");
    let run = s.run_in("fresh", "job-complete", &[], &["status", "--record", &id]);
    run.assert_code(0);
    assert!(
        run.stdout
            .starts_with("default/rtdetr-train-4n: Complete (active 0, succeeded 4, failed 0)\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(
        "  index 3 rtdetr-train-4n-3-q9w8e: Succeeded on gpu-node-4, tao terminated Completed, exit code 0\n"
    ));
    assert_eq!(run.mutations(), Vec::<String>::new());
    let record = s.record(&id);
    assert_eq!(record["state"], "SUCCEEDED");
    assert_eq!(
        states(&record),
        ["OPEN", "SUBMITTED", "RUNNING", "SUCCEEDED"]
    );
}

/// A failed Job: the record ends FAILED with the Job's reason and the pod that failed.
#[test]
fn status_records_why_the_job_failed() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let id = s.running_record("default/rtdetr-train-4n");
    let run = s.run("job-failed", &[], &["status", "--record", &id]);
    run.assert_code(0);
    assert!(run.stdout.contains(
        "  index 2 rtdetr-train-4n-2-m3n5q: Failed on gpu-node-3, tao terminated OOMKilled, exit code 137\n"
    ), "{}", run.stdout);
    let record = s.record(&id);
    assert_eq!(states(&record), ["OPEN", "SUBMITTED", "RUNNING", "FAILED"]);
    assert_eq!(
        last_reason(&record),
        "the Job failed: BackoffLimitExceeded (Job has reached the specified backoff limit); \
         index 2 rtdetr-train-4n-2-m3n5q: Failed on gpu-node-3, tao terminated OOMKilled, exit code 137"
    );
    assert_eq!(run.mutations(), Vec::<String>::new());
}

#[test]
fn logs_of_one_index() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let id = s.running_record("default/rtdetr-train-4n");
    let run = s.run(
        "job-waiting",
        &[],
        &["logs", "--index", "2", "--record", &id],
    );
    run.assert_code(0);
    assert_eq!(
        run.lines(),
        [
            "get job rtdetr-train-4n -o jsonpath=…",
            "logs -l batch.kubernetes.io/job-name=rtdetr-train-4n,\
             batch.kubernetes.io/job-completion-index=2 --prefix --tail 200 -c tao \
             --max-log-requests 9"
        ]
    );
    run.assert_scoped("default");
    assert_eq!(
        run.stdout,
        "[pod/rtdetr-train-4n-2-m3n5q/tao] epoch 3/72: loss 0.412\n\
         [pod/rtdetr-train-4n-2-m3n5q/tao] epoch 4/72: loss 0.398\n"
    );

    let run = s.run(
        "job-waiting",
        &[],
        &["logs", "--tail", "50", "--follow", "--record", &id],
    );
    run.assert_code(0);
    assert_eq!(
        run.lines(),
        [
            "logs -l batch.kubernetes.io/job-name=rtdetr-train-4n --prefix --tail 50 -c tao \
          --max-log-requests 9 --follow"
        ]
    );

    // A Job that ended: the whole log, unless --tail says otherwise.
    let run = s.run("job-complete", &[], &["logs", "--record", &id]);
    run.assert_code(0);
    assert_eq!(
        run.lines(),
        [
            "get job rtdetr-train-4n -o jsonpath=…",
            "logs -l batch.kubernetes.io/job-name=rtdetr-train-4n --prefix --tail -1 -c tao \
             --max-log-requests 9"
        ]
    );
    let run = s.run(
        "job-complete",
        &[],
        &["logs", "--tail", "5", "--record", &id],
    );
    run.assert_code(0);
    assert!(run.lines()[0].contains("--tail 5 "), "{:?}", run.lines());
}

#[test]
fn cancel_deletes_the_job_and_everything_attached_to_it() {
    let job = "four-objects";
    let s = Sandbox::new("fixtures/kubectl/requests/four-objects.yaml");
    let submit = s.run("healthy-cluster", &[HF_TOKEN], &["submit"]);
    submit.assert_code(0);
    assert_eq!(
        submit.mutations(),
        [
            probe(job),
            env_secret(&format!("{job}-creds")),
            strings(&[DRY_RUN, APPLY]),
            vec![
                owned(&format!("service/{job}"), job),
                owned(&format!("configmap/{job}-spec"), job),
                owned(&format!("secret/{job}-creds"), job),
            ],
        ]
        .concat()
    );
    let id = s.record_id();

    let run = s.run("healthy-cluster", &[], &["cancel"]);
    run.assert_code(0);
    run.assert_scoped("default");
    assert_eq!(
        run.mutations(),
        [
            format!("delete job {job} --cascade=foreground --ignore-not-found --timeout=300s"),
            format!("delete service {job} --ignore-not-found"),
            format!("delete configmap {job}-spec --ignore-not-found"),
            format!("delete secret {job}-creds --ignore-not-found"),
        ]
    );
    let record = s.record(&id);
    assert_eq!(record["state"], "CANCELED");
    assert_eq!(
        states(&record),
        ["OPEN", "SUBMITTED", "RUNNING", "CANCELED"]
    );
    assert_no_leak(&s, &run, &[HF_TOKEN]);
}

// ---------------------------------------------------------------------------------------------
// multi-node corners

/// The probe's pods must be able to pull the image: every pull Secret that nccl-probe.yaml
/// names must exist when the probe is applied (created by the script before, or checked).
#[test]
fn the_nccl_probe_can_pull_its_image() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let probe_yaml = fs::read_to_string(s.path("bundle/nccl-probe.yaml")).unwrap();
    let pull_secrets: Vec<&str> = probe_yaml
        .lines()
        .skip_while(|l| l.trim() != "imagePullSecrets:")
        .skip(1)
        .map_while(|l| l.trim().strip_prefix("- name: "))
        .map(|n| n.trim_matches('"'))
        .collect();
    assert!(!pull_secrets.is_empty());
    let run = s.run("healthy-cluster", &[NGC_KEY], &["submit"]);
    run.assert_code(0);
    let lines = run.lines();
    let applied = lines
        .iter()
        .position(|l| l == "apply -f $BUNDLE/nccl-probe.yaml")
        .unwrap();
    for name in pull_secrets {
        assert!(
            lines[..applied].iter().any(|l| {
                l.starts_with(&format!("create secret generic {name} "))
                    || l.starts_with(&format!("get secret {name} "))
            }),
            "nccl-probe.yaml pulls with the Secret {name}, which nothing created or checked \
             before the probe was applied:\n{lines:#?}"
        );
    }
}

/// The probe verb removes, waits for and reads the logs of the Job that nccl-probe.yaml
/// defines, for every multi-node request with GPUs (long names are shortened with a hash).
#[test]
fn the_probe_waits_for_the_job_nccl_probe_yaml_defines() {
    let mut probed = 0;
    for request in requests() {
        let s = Sandbox::new(&request);
        let Ok(probe_yaml) = fs::read_to_string(s.path("bundle/nccl-probe.yaml")) else {
            continue;
        };
        let name = probe_yaml
            .split("\n---")
            .find(|doc| doc.contains("\nkind: Job\n"))
            .and_then(|job| job.lines().find_map(|l| l.strip_prefix("  name: ")))
            .map(|n| n.trim_matches('"').to_string())
            .unwrap();
        let run = s.run("healthy-cluster", &[], &["probe"]);
        run.assert_code(0);
        let lines = run.lines();
        for expected in [
            format!("delete job {name} --ignore-not-found --wait=true --timeout=120s"),
            format!("get job {name} -o jsonpath=…"),
            format!(
                "logs -l batch.kubernetes.io/job-name={name},\
                 batch.kubernetes.io/job-completion-index=0 -c tao --tail 1"
            ),
        ] {
            assert!(
                lines.contains(&expected),
                "{request}: the probe Job is {name}, but the script runs:\n{lines:#?}"
            );
        }
        probed += 1;
    }
    assert!(probed >= 7, "{probed} requests with a probe");
}

/// Several nodes without GPUs: nothing to probe (no nccl-probe.yaml is rendered).
#[test]
fn multi_node_without_gpus_submits_without_a_probe() {
    let job = "cpu-export-2n";
    let s = Sandbox::new("fixtures/kubectl/requests/multi-node-cpu.yaml");
    assert!(!s.path("bundle/nccl-probe.yaml").exists());
    let run = s.run("healthy-cluster", &[], &["submit"]);
    run.assert_code(0);
    assert_eq!(
        run.mutations(),
        [
            strings(&[DRY_RUN, APPLY]),
            vec![owned(&format!("service/{job}"), job)],
        ]
        .concat()
    );
    assert_eq!(s.record(&s.record_id())["state"], "RUNNING");
}

// ---------------------------------------------------------------------------------------------
// shellcheck

#[test]
fn every_generated_script_passes_shellcheck() {
    // Not a skip: a missing shellcheck would pass every script unchecked.
    let found = Command::new("shellcheck").arg("--version").output();
    assert!(
        found.is_ok_and(|out| out.status.success()),
        "shellcheck is not installed: install it (apt-get install shellcheck), as .ci/run does"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut scripts = Vec::new();
    for request in requests() {
        let path = Path::new(ROOT).join(&request);
        let r = tao(&["script", path.to_str().unwrap()], dir.path());
        assert!(
            r.status.success(),
            "script {request}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let script = dir.path().join(request.replace('/', "-") + ".sh");
        fs::write(&script, r.stdout).unwrap();
        scripts.push(script);
    }
    assert!(scripts.len() >= 20, "{scripts:?}");
    scripts.push(Path::new(ROOT).join("fixtures/kubectl/fake-kubectl"));
    scripts.push(Path::new(ROOT).join("fixtures/kubectl/fake-tao-k8s"));
    // shellcheck takes a quarter of a second per script: two at once.
    let half = scripts.len().div_ceil(2);
    let children: Vec<_> = scripts
        .chunks(half)
        .map(|chunk| {
            Command::new("shellcheck")
                .arg("--shell=bash")
                .args(chunk)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "shellcheck:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The program as shipped, whose values come from job.env (so shellcheck cannot see them
    // assigned), and a bundle's job.env.
    let bundle = dir.path().join("bundle");
    let request = Path::new(ROOT).join("fixtures/requests/valid/tier-c-4-nodes.yaml");
    let r = tao(
        &[
            "render",
            request.to_str().unwrap(),
            "--out",
            bundle.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(
        fs::read_to_string(bundle.join("job.sh")).unwrap(),
        fs::read_to_string(Path::new(ROOT).join("scripts/driver.sh")).unwrap(),
        "a bundle's job.sh is the program as shipped"
    );
    let out = Command::new("shellcheck")
        .args(["--shell=bash", "--exclude=SC2153,SC2154"])
        .arg(Path::new(ROOT).join("scripts/driver.sh"))
        .arg(bundle.join("job.env"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "shellcheck:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

// ---------------------------------------------------------------------------------------------
// no credential leaks, end to end

/// Recognisable fake credentials in the environment of every command, in a request's `env`
/// (refused), in a lint input and in a config spec; then every subcommand and every verb of
/// the driver. No output stream, file written, kubectl argv or snapshot holds one unmasked.
#[test]
fn planted_credentials_never_leak_from_any_subcommand_or_verb() {
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    let credentials = [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, NGC_KEY, HF_TOKEN];
    let env = [credentials.as_slice(), &[S3_BUCKET_NAME]].concat();
    let values: Vec<&str> = credentials.iter().map(|(_, v)| *v).collect();
    let work = s.path("work");
    fs::create_dir_all(work.join("specs")).unwrap();
    fs::create_dir_all(work.join("requests")).unwrap();

    // Inputs that carry them.
    let request = fs::read_to_string(Path::new(ROOT).join(&s.request)).unwrap();
    let with_env = format!("{request}  env:\n    HF_TOKEN: {}\n", HF_TOKEN.1);
    let with_env_path = work.join("requests/with-env.yaml");
    fs::write(&with_env_path, with_env).unwrap();
    let manifest = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n  - name: c\n    \
         image: nvcr.io/x:1\n    env:\n    - {{name: AWS_SECRET_ACCESS_KEY, value: {}}}\n    \
         - {{name: NGC_API_KEY, value: {}}}\n    args: [--token, {}]\n",
        AWS_SECRET_ACCESS_KEY.1, NGC_KEY.1, HF_TOKEN.1
    );
    let manifest_path = work.join("leaky.yaml");
    fs::write(&manifest_path, &manifest).unwrap();
    // One line that a GPU rule frames (no pull secret for nvcr.io) and that holds a credential
    // only the redaction rules recognise, by its env name: masked even when they are ignored.
    let one_line = work.join("one-line.yaml");
    fs::write(
        &one_line,
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers: [{{name: c, \
             image: \"nvcr.io/x:1\", env: [{{name: AWS_SECRET_ACCESS_KEY, value: {}}}]}}]\n",
            AWS_SECRET_ACCESS_KEY.1
        ),
    )
    .unwrap();
    let config =
        fs::read_to_string(Path::new(ROOT).join("fixtures/requests/valid/config-file.yaml"))
            .unwrap();
    let spec =
        fs::read_to_string(Path::new(ROOT).join("fixtures/requests/valid/specs/dino-train.yaml"))
            .unwrap();
    fs::write(work.join("requests/config.yaml"), config).unwrap();
    fs::write(
        work.join("specs/dino-train.yaml"),
        format!("{spec}wandb:\n  api_key: {}\n", AWS_SECRET_ACCESS_KEY.1),
    )
    .unwrap();
    let staged_path = work.join("staged.yaml");
    fs::write(&staged_path, format!("token: {}\n", HF_TOKEN.1)).unwrap();

    let p = |path: &Path| path.display().to_string();
    let (req, bundle) = (p(&Path::new(ROOT).join(&s.request)), p(&work.join("out")));
    let state = s.path("state");
    let commands: Vec<(Vec<String>, Option<i32>)> = [
        (vec!["render", &req], Some(0)),
        (vec!["render", &req, "-o", "json"], Some(0)),
        (vec!["render", &req, "--out", &bundle], Some(0)),
        (
            vec!["stage", &req, "--out", &p(&work.join("stage"))],
            Some(0),
        ),
        (vec!["script", &req], Some(0)),
        (vec!["render", &p(&with_env_path)], Some(1)),
        (
            vec!["render", &p(&work.join("requests/config.yaml"))],
            Some(1),
        ),
        (
            vec!["render", &req, "--staged-config", &p(&staged_path)],
            Some(1),
        ),
        (vec!["lint", &p(&manifest_path)], Some(1)),
        (
            vec!["lint", "--ignore", "redaction", &p(&one_line)],
            Some(0),
        ),
        (
            vec!["lint", "--format", "json", &p(&manifest_path)],
            Some(1),
        ),
        (
            vec!["lint", "--format", "sarif", &p(&manifest_path)],
            Some(1),
        ),
        (
            vec!["lint", "--format", "github", &p(&manifest_path)],
            Some(1),
        ),
        (vec!["lint", &p(&work.join("out"))], Some(0)),
        (
            vec![
                "kept-fields",
                &p(&manifest_path),
                &p(&s.path("files/dry-run.json")),
            ],
            None,
        ),
        (vec!["rules"], Some(0)),
        (vec!["explain", "TK101"], Some(0)),
        (vec!["schema"], Some(0)),
        (vec!["completions", "bash"], Some(0)),
        (vec!["record", "list"], Some(0)),
    ]
    .into_iter()
    .map(|(args, code)| (args.into_iter().map(String::from).collect(), code))
    .collect();
    for (args, code) in &commands {
        let out = Command::new(cargo_bin("tao-k8s"))
            .args(args)
            .env("TAO_K8S_STATE_DIR", &state)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        if let Some(code) = code {
            assert_eq!(
                out.status.code(),
                Some(*code),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        for stream in [&out.stdout, &out.stderr] {
            let text = String::from_utf8_lossy(stream);
            for value in &values {
                assert!(
                    !text.contains(value),
                    "{args:?} printed a planted credential:\n{text}"
                );
            }
        }
    }
    // The request's env was refused for the credential, and the lint found every one.
    for dir in ["out", "stage"] {
        for file in fs::read_dir(work.join(dir)).unwrap() {
            let text = fs::read_to_string(file.unwrap().path()).unwrap();
            for value in &values {
                assert!(!text.contains(value), "{dir}/ holds a planted credential");
            }
        }
    }

    // Every verb of the driver, against the fake kubectl.
    for (verb, scenario) in [
        ("preflight", "healthy-cluster"),
        ("submit", "healthy-cluster"),
        ("status", "tier-c-running"),
        ("logs", "tier-c-running"),
        ("cancel", "healthy-cluster"),
    ] {
        let run = s.run(scenario, &env, &[verb]);
        run.assert_code(0);
        assert_no_leak(&s, &run, &credentials);
    }

    // No snapshot holds one either, nor anything else the credential scanner recognises.
    for entry in fs::read_dir(Path::new(ROOT).join("tests/snapshots")).unwrap() {
        let path = entry.unwrap().path();
        let text = fs::read_to_string(&path).unwrap();
        for value in &values {
            assert!(!text.contains(value), "{}", path.display());
        }
        let found = tao_k8s::secrets::scan_text(&text);
        assert!(
            found.is_empty(),
            "{}: {:?}",
            path.display(),
            found
                .iter()
                .map(|f| &text[f.range.clone()])
                .collect::<Vec<_>>()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// the driver's own tao-k8s

/// A PATH with the fake kubectl and the system's tools, and no tao-k8s.
fn path_without_tao_k8s(s: &Sandbox) -> String {
    for dir in ["/usr/bin", "/bin"] {
        assert!(
            !Path::new(dir).join("tao-k8s").exists(),
            "{dir} has a tao-k8s"
        );
    }
    format!("{}:/usr/bin:/bin", s.path("bin").display())
}

/// No tao-k8s to run (TAO_K8S_BIN unset, none on PATH, the one that wrote the bundle gone):
/// every verb that needs it stops before its first kubectl call, saying how to fix it.
#[test]
fn without_its_tao_k8s_the_driver_stops_before_any_kubectl_call() {
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    let writer = s.path("writer/tao-k8s");
    fs::create_dir(s.path("writer")).unwrap();
    fs::copy(cargo_bin("tao-k8s"), &writer).unwrap();
    s.render_with(&writer, "moved");
    let script = fs::read_to_string(s.path("moved/job.env")).unwrap();
    assert!(
        script.contains(&format!("WRITER='{}'", writer.display())),
        "the bundle names the tao-k8s that wrote it, in job.env"
    );
    fs::remove_file(&writer).unwrap();
    let path = path_without_tao_k8s(&s);
    let env = [("TAO_K8S_BIN", ""), ("PATH", &path), AWS_ACCESS_KEY_ID];
    for verb in ["preflight", "submit", "status", "logs", "cancel"] {
        let args = if verb == "preflight" || verb == "submit" {
            vec![verb]
        } else {
            vec![verb, "--record", "tao-20261202-083107-7f3a"]
        };
        let run = s.run_in("moved", "healthy-cluster", &env, &args);
        run.assert_code(1);
        run.assert_stderr("tao-k8s is not on PATH");
        run.assert_stderr("set TAO_K8S_BIN to its path");
        assert!(run.calls.is_empty(), "{verb}: {:#?}", run.lines());
    }
    assert!(s.record_ids().is_empty());
}

/// A tao-k8s of another version than the one that wrote the script, or a TAO_K8S_BIN that is
/// not a program: refused before anything, naming both versions.
#[test]
fn a_tao_k8s_of_another_version_is_refused() {
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    let version = env!("CARGO_PKG_VERSION");
    // A stand-in tao-k8s that says `tao-k8s <says>` to --version.
    let saying = |says: &str| {
        let path = s.path(&format!(
            "bin/tao-k8s-{}",
            says.replace([' ', '(', ')'], "_")
        ));
        fs::write(&path, format!("#!/bin/sh\necho 'tao-k8s {says}'\n")).unwrap();
        fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        path.display().to_string()
    };
    for says in ["0.0.1", &format!("{version}1"), &format!("v{version}")] {
        let bin = saying(says);
        let run = s.run("healthy-cluster", &[("TAO_K8S_BIN", &bin)], &["submit"]);
        run.assert_code(1);
        run.assert_stderr(&format!("is tao-k8s {says}, but"));
        run.assert_stderr(&format!("tao-k8s {version} wrote this script"));
        assert!(run.calls.is_empty(), "{:#?}", run.lines());
    }
    // A build from a git checkout names its commit too: the same version.
    let bin = saying(&format!("{version} (commit 0123456789ab)"));
    let run = s.run("healthy-cluster", &[("TAO_K8S_BIN", &bin)], &["preflight"]);
    run.assert_code(0);
    let run = s.run(
        "healthy-cluster",
        &[("TAO_K8S_BIN", "/nonexistent/tao-k8s")],
        &["preflight"],
    );
    run.assert_code(1);
    run.assert_stderr("TAO_K8S_BIN=/nonexistent/tao-k8s is not an executable file");
    assert!(run.calls.is_empty());
    assert!(s.record_ids().is_empty());
}

/// Without TAO_K8S_BIN and with no tao-k8s on PATH, the bundle runs the tao-k8s that wrote
/// it, where it still is.
#[test]
fn a_bundle_runs_the_tao_k8s_that_wrote_it() {
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    let path = path_without_tao_k8s(&s);
    let credentials = [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY];
    let env = [
        credentials.as_slice(),
        &[("TAO_K8S_BIN", ""), ("PATH", &path)],
    ]
    .concat();
    let run = s.run("healthy-cluster", &env, &["submit"]);
    run.assert_code(0);
    assert_eq!(s.record(&s.record_id())["state"], "RUNNING");
    // `script` prints a script that may go anywhere: it names no binary.
    let printed = tao(
        &["script", Path::new(ROOT).join(&s.request).to_str().unwrap()],
        &s.path("state"),
    );
    assert!(
        String::from_utf8(printed.stdout)
            .unwrap()
            .contains("\nWRITER=''\n")
    );
}

// ---------------------------------------------------------------------------------------------
// the command line of job.sh

#[test]
fn help_exits_0_and_an_unknown_verb_is_named() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    for args in [
        vec!["help"],
        vec!["--help"],
        vec!["-h"],
        vec!["submit", "--help"],
    ] {
        let run = s.run("healthy-cluster", &[], &args);
        run.assert_code(0);
        for word in [
            "job.sh preflight",
            "job.sh submit",
            "job.sh status",
            "job.sh logs",
            "job.sh cancel",
            "job.sh probe",
            "--context",
            "TAO_K8S_BIN",
            "TAO_K8S_POLL_SECONDS",
            "Exit codes",
        ] {
            assert!(
                run.stdout.contains(word),
                "{args:?}: no {word:?} in\n{}",
                run.stdout
            );
        }
        assert!(run.stderr.is_empty() && run.calls.is_empty());
    }
    for (args, message) in [
        (vec!["frobnicate"], "tao-k8s: unknown verb frobnicate"),
        (vec![], "tao-k8s: no verb"),
        (vec!["status", "--bogus"], "tao-k8s: unknown option --bogus"),
        (vec!["\u{1b}[2J"], "tao-k8s: unknown verb $'\\E[2J'"),
    ] {
        let run = s.run("healthy-cluster", &[], &args);
        run.assert_code(2);
        run.assert_stderr(message);
        run.assert_stderr("job.sh submit");
        assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
        assert!(run.stdout.is_empty() && run.calls.is_empty());
    }
}

/// A record id with a control character reaches the terminal escaped.
#[test]
fn a_record_id_is_shown_escaped() {
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    let run = s.run(
        "healthy-cluster",
        &[],
        &["status", "--record", "tao-\u{1b}[2J"],
    );
    run.assert_code(1);
    run.assert_stderr("job record $'tao-\\E[2J' names no Kubernetes object");
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
}

/// A context that is not in the kubeconfig, or none at all: kubectl's own reason is shown.
#[test]
fn kubectl_s_own_error_is_shown_for_a_missing_context() {
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    let scenario = s.scenario(
        "missing-context",
        "when --context missing-ctx\n  err error: context \"missing-ctx\" does not exist\n  exit 1\n\
         when config current-context\n  err error: current-context is not set\n  exit 1",
    );
    let run = s.run(&scenario, &[], &["preflight", "--context", "missing-ctx"]);
    run.assert_code(1);
    run.assert_stderr("error: context \"missing-ctx\" does not exist");
    run.assert_stderr("the cluster of context missing-ctx is not reachable");
    let run = s.run(&scenario, &[("TAO_K8S_CONTEXT", "")], &["submit"]);
    run.assert_code(1);
    run.assert_stderr("error: current-context is not set");
    run.assert_stderr("no kubeconfig context");
    assert!(s.record_ids().is_empty());
}

// ---------------------------------------------------------------------------------------------
// every way a submit can fail

/// Every step of a multi-node submit with a credentials Secret and a pull Secret fails in
/// turn: each gate, the probe, the record, each Secret, lint, dry run, kept fields, each
/// record mark, apply, read-back, uid, each patch. Whatever failed, no Secret this run
/// created is left (each is deleted after it was created), what was applied is deleted
/// again, and every record this run opened ends FAILED.
#[test]
fn no_secret_outlives_a_failed_submit() {
    let request = "fixtures/requests/valid/tier-c-4-nodes.yaml";
    let job = "dino-train-s3-4n";
    let credentials = [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, HF_TOKEN, NGC_KEY];
    let probe_conditions =
        format!("when get job {job}-nccl-probe -o jsonpath={{range .status.conditions");
    // (step, scenario rules or a shipped scenario, a tao-k8s call that fails, extra env,
    // the message that says the step failed)
    type Step<'a> = (&'a str, String, &'a str, Vec<(&'a str, &'a str)>, String);
    let steps: Vec<Step> = vec![
        ("fit gate", "gpus-spread-thin".into(), "", vec![], "gate fit: refused: never fits".into()),
        ("version gate", "kube-1.27".into(), "", vec![], "needs Kubernetes 1.28".into()),
        (
            "pull Secret",
            "when create secret generic *-ngc\n  err error: failed to create secret\n  exit 1".into(),
            "",
            vec![],
            format!("the API server refused the Secret {job}-ngc"),
        ),
        (
            "stale probe",
            format!("when delete job {job}-nccl-probe\n  err error: timed out waiting for the condition\n  exit 1"),
            "",
            vec![],
            "the previous NCCL probe Job".into(),
        ),
        (
            "probe apply",
            "when apply -f /*/nccl-probe.yaml\n  err Error from server (Forbidden): jobs.batch is forbidden\n  exit 1".into(),
            "",
            vec![],
            "the API server refused the NCCL probe".into(),
        ),
        (
            "probe fails",
            format!("{probe_conditions}\n  out Failed"),
            "",
            vec![],
            "the NCCL probe did not complete".into(),
        ),
        (
            "probe never completes",
            format!("{probe_conditions}\n  exit 0"),
            "",
            vec![("TAO_K8S_PROBE_TIMEOUT_SECONDS", "2")],
            "the NCCL probe did not complete within 2s".into(),
        ),
        ("record open", String::new(), "record open *", vec![], "cannot open a job record".into()),
        (
            "a required key",
            String::new(),
            "",
            vec![("HF_TOKEN", "")],
            "HF_TOKEN is not set in the environment".into(),
        ),
        (
            "credentials Secret",
            "when create secret generic *-creds\n  err error: failed to create secret\n  exit 1".into(),
            "",
            vec![],
            format!("the API server refused the Secret {job}-creds"),
        ),
        ("lint", String::new(), "lint *", vec![], "the manifest holds a credential".into()),
        ("dry run", "dry-run-rejected".into(), "", vec![], "refused the manifest (dry run)".into()),
        ("kept fields", String::new(), "kept-fields *", vec![], "would drop fields".into()),
        (
            "mark SUBMITTED",
            String::new(),
            "record mark * SUBMITTED *",
            vec![],
            "SUBMITTED".into(),
        ),
        (
            "apply",
            "when apply -f /*/manifest.yaml\n  err Error from server (Forbidden): jobs.batch is forbidden\n  exit 1".into(),
            "",
            vec![],
            "kubectl apply failed".into(),
        ),
        (
            "read-back",
            format!("when get job {job} -o jsonpath={{.metadata.namespace}}\n  exit 1"),
            "",
            vec![],
            "cannot be read back".into(),
        ),
        ("mark RUNNING", String::new(), "record mark * RUNNING *", vec![], "cannot bind job record".into()),
        (
            "uid",
            "when get job*{.metadata.uid}\n  exit 1".into(),
            "",
            vec![],
            "the uid of the applied Job".into(),
        ),
        (
            "patch Service",
            "when patch service/\n  exit 1".into(),
            "",
            vec![],
            format!("service/{job} could not be attached"),
        ),
        (
            "patch pull Secret",
            "when patch secret/*-ngc\n  exit 1".into(),
            "",
            vec![],
            format!("secret/{job}-ngc could not be attached"),
        ),
    ];
    let mut after_a_secret = 0;
    for (step, scenario, fail, extra, message) in &steps {
        let s = Sandbox::new(request);
        let scenario = if scenario.is_empty() {
            "healthy-cluster".to_string()
        } else if scenario.starts_with("when ") {
            s.scenario("step", scenario)
        } else {
            scenario.clone()
        };
        let fake = Path::new(ROOT).join("fixtures/kubectl/fake-tao-k8s");
        let real = cargo_bin("tao-k8s");
        let mut env = credentials.to_vec();
        env.extend([
            ("TAO_K8S_BIN", fake.to_str().unwrap()),
            ("REAL_TAO_K8S", real.to_str().unwrap()),
            ("FAKE_TAO_K8S_FAIL", fail),
        ]);
        env.extend(extra.iter().copied());
        let run = s.run(&scenario, &env, &["submit"]);
        let context = format!("step {step}:\n{:#?}\n{}", run.mutations(), run.stderr);
        assert_eq!(run.code, 1, "{context}");
        run.assert_stderr(message);
        let mutations = run.mutations();
        let mut created = 0;
        for (i, m) in mutations.iter().enumerate() {
            if let Some(rest) = m.strip_prefix("create secret generic ") {
                created += 1;
                let name = rest.split(' ').next().unwrap();
                let delete = format!("delete secret {name} --ignore-not-found");
                assert!(
                    mutations[i..].contains(&delete),
                    "the Secret {name} is left behind, {context}"
                );
            }
        }
        if created > 0 {
            after_a_secret += 1;
        }
        let probe_applied = "apply -f $BUNDLE/nccl-probe.yaml".to_string();
        if let Some(probed) = mutations.iter().position(|m| *m == probe_applied) {
            let delete = "delete -f $BUNDLE/nccl-probe.yaml --ignore-not-found --wait=false";
            assert!(
                mutations[probed..].iter().filter(|m| *m == delete).count() == 1,
                "the probe is left (or deleted twice), {context}"
            );
        }
        if let Some(applied) = mutations.iter().position(|m| m == APPLY) {
            let delete = format!("delete job {job} --ignore-not-found --wait=false");
            assert!(
                mutations[applied..].contains(&delete),
                "the Job is left, {context}"
            );
            let delete = format!("delete service {job} --ignore-not-found --wait=false");
            assert!(
                mutations[applied..].contains(&delete),
                "the Service is left, {context}"
            );
        }
        for id in s.record_ids() {
            assert_eq!(s.record(&id)["state"], "FAILED", "{context}");
        }
        assert_no_leak(&s, &run, &credentials);
    }
    assert!(
        after_a_secret >= 17,
        "{after_a_secret} steps failed after a Secret was created"
    );

    // The control: nothing fails, every Secret is attached to the Job and none deleted.
    let s = Sandbox::new(request);
    let run = s.run("healthy-cluster", &credentials, &["submit"]);
    run.assert_code(0);
    let mutations = run.mutations();
    for secret in [format!("{job}-creds"), format!("{job}-ngc")] {
        assert!(
            mutations.contains(&owned(&format!("secret/{secret}"), job)),
            "{mutations:#?}"
        );
        assert!(
            !mutations.iter().any(|m| m.starts_with("delete secret")),
            "{mutations:#?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// waits

/// A poll interval or probe deadline out of range is refused before any kubectl call: a 0
/// interval used to poll without pause, forever.
#[test]
fn wait_settings_out_of_range_are_refused() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    for (name, value) in [
        ("TAO_K8S_POLL_SECONDS", "0"),
        ("TAO_K8S_POLL_SECONDS", "-1"),
        ("TAO_K8S_POLL_SECONDS", "abc"),
        ("TAO_K8S_POLL_SECONDS", "1.5"),
        ("TAO_K8S_POLL_SECONDS", "61"),
        ("TAO_K8S_POLL_SECONDS", "99999999999999999999"),
        ("TAO_K8S_PROBE_TIMEOUT_SECONDS", "0"),
        ("TAO_K8S_PROBE_TIMEOUT_SECONDS", "3601"),
    ] {
        for verb in ["submit", "probe"] {
            let run = s.run("healthy-cluster", &[(name, value)], &[verb]);
            run.assert_code(2);
            run.assert_stderr(&format!("{name} must be a whole number of seconds from"));
            run.assert_stderr(&format!("not {value}"));
            assert!(run.calls.is_empty(), "{name}={value}: {:#?}", run.lines());
        }
    }
    assert!(s.record_ids().is_empty());
}

/// A probe that never completes: polled until its deadline, then removed, and the submit
/// stops with the pull Secret it created removed.
#[test]
fn a_probe_that_never_completes_stops_at_its_deadline() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let scenario = s.scenario(
        "probe-hangs",
        "when get job * -o jsonpath={range .status.conditions\n  exit 0",
    );
    let env = [NGC_KEY, ("TAO_K8S_PROBE_TIMEOUT_SECONDS", "3")];
    let run = s.run(&scenario, &env, &["submit"]);
    run.assert_code(1);
    run.assert_stderr("the NCCL probe did not complete within 3s");
    let polls = run
        .lines()
        .iter()
        .filter(|l| l.starts_with("get job ") && l.ends_with("-o jsonpath=…"))
        .count();
    // One poll a second for 3 s, and one at the deadline.
    assert!((2..=5).contains(&polls), "{polls} polls");
    let mutations = run.mutations();
    assert!(mutations.contains(
        &"delete -f $BUNDLE/nccl-probe.yaml --ignore-not-found --wait=false".to_string()
    ));
    let pull = mutations
        .iter()
        .find_map(|m| m.strip_prefix("create secret generic "))
        .map(|rest| rest.split(' ').next().unwrap().to_string())
        .expect("the probe created the pull Secret");
    assert_eq!(
        mutations.last().unwrap(),
        &format!("delete secret {pull} --ignore-not-found"),
        "{mutations:#?}"
    );
    assert!(s.record_ids().is_empty());

    // `job.sh probe` alone: the pull Secret it created is removed once the probe passed.
    let run = s.run("healthy-cluster", &[NGC_KEY], &["probe"]);
    run.assert_code(0);
    let mutations = run.mutations();
    assert_eq!(
        mutations.first().unwrap(),
        &format!(
            "create secret generic {pull} --type=kubernetes.io/dockerconfigjson \
             --from-file=.dockerconfigjson=$TMP/docker.json --dry-run=client -o yaml"
        )
    );
    assert_eq!(
        mutations.last().unwrap(),
        &format!("delete secret {pull} --ignore-not-found"),
        "{mutations:#?}"
    );
}
