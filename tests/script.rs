//! Scenario tests of the driver script: the `job.sh` of a rendered bundle runs, as shipped,
//! against `fixtures/kubectl/fake-kubectl`, which logs every kubectl call and answers from a
//! scenario file (`fixtures/kubectl/scenarios/*.scenario`) and, for the objects the driver
//! creates, reads, patches and deletes, from a fake API server's store (`fake-cluster`: a
//! directory per sandbox, which a test may fill with other people's objects first). Each test
//! asserts the exit code, the key stderr lines, the job record, and the exact sequence of the
//! mutating kubectl calls (apply, create, patch, delete). Credentials are recognisably fake
//! values that must appear nowhere but in the 0600 files of the Secrets the driver creates.

mod common;

use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{BIN, ROOT, Tao};

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

/// A temporary directory with a rendered bundle (`bundle/`), the fake kubectl first on PATH
/// (`bin/`), the state directory (`state/`), TMPDIR (`tmp/`) and the files the fake answers
/// with (`files/`: the server's dry-run answer).
struct Sandbox {
    dir: tempfile::TempDir,
    request: String,
    /// Options of every render (`--target jobset`).
    options: Vec<String>,
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
    common::tao()
        .args(args)
        .env("TAO_K8S_STATE_DIR", state)
        .env_remove("TAO_K8S_NAMESPACE")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin_null()
        .output()
        .unwrap()
}

impl Sandbox {
    /// `request` is relative to the repository.
    fn new(request: &str) -> Sandbox {
        Sandbox::rendered_with(request, &[])
    }

    /// A sandbox whose bundle is rendered with `options` too.
    fn rendered_with(request: &str, options: &[&str]) -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["bin", "state", "tmp", "files", "home", "cluster"] {
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
            options: options.iter().map(|o| o.to_string()).collect(),
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
        self.render_with(Path::new(BIN), into);
    }

    /// Render the bundle into `into` with the tao-k8s binary `bin`.
    fn render_with(&self, bin: &Path, into: &str) {
        let out = self.path(into);
        let request = Path::new(ROOT).join(&self.request);
        let r = Tao::at(bin)
            .args([
                "render",
                request.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .args(&self.options)
            .env("TAO_K8S_STATE_DIR", self.path("state"))
            .env_remove("TAO_K8S_NAMESPACE")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdin_null()
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
        let mut args = vec!["render", request.to_str().unwrap(), "-o", "json"];
        args.extend(self.options.iter().map(String::as_str));
        let r = tao(&args, &self.path("state"));
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
        let out = self
            .command(bundle, scenario, env, args, &log)
            .output()
            .unwrap();
        self.finished(out, &log, bundle)
    }

    /// Several `job.sh ARGS` of `bundle` at once, each with its own kubectl log, against one
    /// fake API server: what two shells of one submitter see when they race.
    fn run_at_once(
        &self,
        n: usize,
        scenario: &str,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> Vec<Run> {
        let logs: Vec<PathBuf> = (0..n)
            .map(|i| self.path(&format!("kubectl-{i}.log")))
            .collect();
        let children: Vec<_> = logs
            .iter()
            .map(|log| {
                let _ = fs::remove_file(log);
                self.command("bundle", scenario, env, args, log)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        children
            .into_iter()
            .zip(&logs)
            .map(|(child, log)| self.finished(child.wait_with_output().unwrap(), log, "bundle"))
            .collect()
    }

    /// The command of `bash job.sh ARGS` of the bundle in `bundle`, against `scenario`, with a
    /// clean environment plus `env` (which may override the defaults), logging into `log`.
    fn command(
        &self,
        bundle: &str,
        scenario: &str,
        env: &[(&str, &str)],
        args: &[&str],
        log: &Path,
    ) -> Command {
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
        let mut command = Command::new("bash");
        command
            .arg(bundle.join("job.sh"))
            .args(args)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.path("home"))
            .env("TMPDIR", self.path("tmp"))
            .env("TAO_K8S_BIN", BIN)
            .env("TAO_K8S_STATE_DIR", self.path("state"))
            .env("TAO_K8S_CONTEXT", CONTEXT)
            .env("TAO_K8S_SKIP_NODE_RUNTIME_CHECK", "1")
            .env("TAO_K8S_POLL_SECONDS", "1")
            // The requests' credentials.extra is HF_TOKEN: allowed unless a test says not.
            .env("TAO_K8S_PASS_ENV", "HF_TOKEN")
            .env("FAKE_KUBECTL_LOG", log)
            .env("FAKE_KUBECTL_CLUSTER", self.path("cluster"))
            .env("FAKE_KUBECTL_SCENARIO", scenario)
            .env("FAKE_KUBECTL_FILES", self.path("files"))
            .envs(env.iter().copied())
            .stdin(Stdio::null());
        command
    }

    /// The run that ended with `out`, its calls read from `log`.
    fn finished(&self, out: std::process::Output, log: &Path, bundle: &str) -> Run {
        let log = fs::read_to_string(log).unwrap_or_default();
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
            bundle: self.path(bundle),
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

    /// A record as an earlier submit in another shell left it: RUNNING, bound to `backend`,
    /// whose Job it created with the uid [`UID`].
    fn running_record(&self, backend: &str) -> String {
        self.running_record_of(backend, UID)
    }

    fn running_record_of(&self, backend: &str, uid: &str) -> String {
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
        let (namespace, name) = backend.split_once('/').unwrap();
        for mark in [
            vec![
                "record",
                "own",
                &id,
                "--kind",
                "Job",
                "--namespace",
                namespace,
                "--name",
                name,
                "--uid",
                uid,
            ],
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

    /// Put `object` (a file of the scenarios, or JSON) into the fake API server, as if
    /// someone had created it: `namespace/kind/name.json` of the store.
    fn preload(&self, object: &str) {
        let text = if object.trim_start().starts_with('{') {
            object.to_string()
        } else {
            fs::read_to_string(
                Path::new(ROOT)
                    .join("fixtures/kubectl/scenarios")
                    .join(object),
            )
            .unwrap()
        };
        let value: Value = serde_json::from_str(&text).unwrap();
        let ns = value["metadata"]["namespace"].as_str().unwrap_or("default");
        let kind = value["kind"].as_str().unwrap().to_lowercase();
        let name = value["metadata"]["name"].as_str().unwrap();
        let dir = self.path(&format!("cluster/{ns}/{kind}"));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(format!("{name}.json")), text).unwrap();
    }

    /// A fresh fake API server, as after the TTL collected what earlier runs created.
    fn empty_cluster(&self) {
        fs::remove_dir_all(self.path("cluster")).unwrap();
        fs::create_dir(self.path("cluster")).unwrap();
    }

    /// The object `kind/name` of namespace `ns` in the fake API server, if it exists.
    fn object(&self, ns: &str, kind: &str, name: &str) -> Option<Value> {
        let path = self.path(&format!("cluster/{ns}/{kind}/{name}.json"));
        let text = fs::read_to_string(path).ok()?;
        Some(serde_json::from_str(&text).unwrap())
    }

    /// The keys of the Secret `name` in the fake API server (it keeps no values).
    fn secret_keys(&self, ns: &str, name: &str) -> Vec<String> {
        let secret = self.object(ns, "secret", name).expect("the Secret exists");
        let mut keys: Vec<String> = secret["data"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
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
        let joined = words.join(" ");
        let line = tmp.replace_all(&joined, "$$TMP");
        // The uids the fake API server gives (not the names that hold one).
        let uid =
            regex::Regex::new(r#"("uid":"|"tao-k8s.io/job-uid":"|controller-uid=)[0-9a-f-]{36}"#)
                .unwrap();
        let line = uid.replace_all(&line, "${1}UID").into_owned();
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

    /// Each object is created by `create -f FILE` from a file only its owner reads (0600),
    /// never from stdin or a command line.
    fn assert_created_from_private_files(&self) {
        for call in &self.calls {
            if call.verb().first().is_some_and(|v| v == "create") {
                assert!(!call.stdin, "{:?}", call.argv);
                assert_eq!(call.files.len(), 1, "{:?}", call.argv);
                assert_eq!(call.files[0]["mode"], "600", "{:?}", call.argv);
            }
        }
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

/// The creation of an object of the bundle (`kind` lower case), from the file tao-k8s wrote.
fn create(kind: &str, name: &str) -> String {
    format!("create -f $TMP/objects/{kind}-{name}.json -o jsonpath=…")
}

/// The creation of what the manifest holds, in its order: ConfigMap, Service, Job.
fn manifest(job: &str, config_map: bool, service: bool) -> Vec<String> {
    let mut out = vec![DRY_RUN.to_string()];
    if config_map {
        out.push(create("configmap", &format!("{job}-spec")));
    }
    if service {
        out.push(create("service", job));
    }
    out.push(create("job", job));
    out
}

/// The merge patch that attaches `kind name` to the Job: it names the object's own uid.
fn owned(kind: &str, name: &str, job: &str) -> String {
    format!(
        "patch {kind} {name} --type=merge -p {{\"metadata\":{{\"annotations\":{{\"tao-k8s.io/job-uid\":\
         \"UID\"}},\"ownerReferences\":[{{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\
         \"{job}\",\"uid\":\"UID\"}}],\"uid\":\"UID\"}}}}"
    )
}

/// The DELETE of an object, preconditioned on its uid (the body file), from `dir` of $TMP.
fn delete(kind: &str, name: &str, dir: &str, i: usize) -> String {
    let path = match kind {
        "job" => format!("/apis/batch/v1/namespaces/default/jobs/{name}"),
        other => format!("/api/v1/namespaces/default/{other}s/{name}"),
    };
    format!("delete --raw {path} -f $TMP/{dir}/delete-{i}.json")
}

/// The NCCL probe: its Service and Job created, then deleted by their uids (with the pull
/// Secret created first when NGC_KEY is set).
fn probe(job: &str, pull: bool) -> Vec<String> {
    let probe = format!("{job}-nccl-probe");
    let mut out = Vec::new();
    if pull {
        out.push(format!(
            "create -f $TMP/probe/objects/secret-{job}-ngc.json -o jsonpath=…"
        ));
    }
    out.extend([
        format!("create -f $TMP/probe/objects/service-{probe}.json -o jsonpath=…"),
        format!("create -f $TMP/probe/objects/job-{probe}.json -o jsonpath=…"),
        delete("job", &probe, "probe/deletes", 0),
        delete("service", &probe, "probe/deletes", 1),
    ]);
    out
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

    // Every gate, in order, before anything changes: the objects of the bundle's names are
    // looked for (the Secret through `driver observe`, which keeps no value).
    run.assert_scoped("default");
    let lines = run.lines();
    let first_change = lines.iter().position(|l| l.starts_with("apply")).unwrap();
    assert_eq!(
        lines[..first_change],
        strings(&[
            "get --raw /version",
            "auth can-i create jobs",
            "auth can-i delete jobs",
            "auth can-i create secrets",
            "auth can-i delete secrets",
            "auth can-i patch secrets",
            "get nodes -o json",
            "get pods --all-namespaces \
             --field-selector=status.phase!=Succeeded,status.phase!=Failed -o json",
            "get pvc -o json",
            &format!("get job {job} -o json --ignore-not-found"),
            &format!("get secret {job}-creds -o json --ignore-not-found"),
            &format!("get secret {job}-ngc -o json --ignore-not-found"),
        ])
    );
    run.assert_stderr("tao-k8s: gate owners: pass: no object of the bundle's names exists");
    run.assert_stderr("tao-k8s: gate credentials: pass: you allow HF_TOKEN to reach the pod");
    run.assert_stderr("tao-k8s: gate runtime: pass: 4 GPU nodes have driver >= 580");
    assert_eq!(
        run.mutations(),
        [
            vec![
                DRY_RUN.to_string(),
                create("secret", &format!("{job}-creds"))
            ],
            manifest(job, false, false)[1..].to_vec(),
            vec![owned("secret", &format!("{job}-creds"), job)],
        ]
        .concat()
    );
    assert_eq!(
        s.secret_keys("default", &format!("{job}-creds")),
        ["HF_TOKEN"]
    );
    run.assert_created_from_private_files();
    // Every object is stamped with the record and listed in it by the uid the server gave.
    let created = s.object("default", "job", job).unwrap();
    assert_eq!(created["metadata"]["labels"]["tao-k8s.io/job-record"], id);
    assert_eq!(
        created["spec"]["template"]["metadata"]["labels"]["tao-k8s.io/job-record"],
        id
    );
    let secret = s
        .object("default", "secret", &format!("{job}-creds"))
        .unwrap();
    assert_eq!(
        secret["metadata"]["ownerReferences"][0]["uid"],
        created["metadata"]["uid"]
    );

    let record = s.record(&id);
    assert_eq!(record["state"], "RUNNING");
    assert_eq!(record["backend_ref"], format!("default/{job}"));
    assert_eq!(states(&record), ["OPEN", "SUBMITTED", "RUNNING"]);
    assert_eq!(record["image"], "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt");
    assert_eq!(record["network_arch"], "dino");
    assert_eq!(record["action"], "inference");
    assert_eq!(record["storage_tier"], "A");
    assert_eq!(record["results_dir"], "/results/infer");
    assert_eq!(record["backend_uid"], created["metadata"]["uid"]);
    let objects: Vec<(&str, &str)> = record["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["kind"].as_str().unwrap(), o["uid"].as_str().unwrap()))
        .collect();
    assert_eq!(
        objects,
        [
            ("Secret", secret["metadata"]["uid"].as_str().unwrap()),
            ("Job", created["metadata"]["uid"].as_str().unwrap()),
        ]
    );
    assert_eq!(s.record_ids(), [id]);
    assert_no_leak(&s, &run, &[HF_TOKEN]);
}

#[test]
fn four_node_submit_runs_the_nccl_probe_once_per_context() {
    let job = "rtdetr-train-4n";
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let after_probe = [
        manifest(job, true, true),
        vec![
            owned("configmap", &format!("{job}-spec"), job),
            owned("service", job, job),
        ],
    ]
    .concat();

    let first = s.run("healthy-cluster", &[], &["submit"]);
    first.assert_code(0);
    first.assert_scoped("default");
    assert_eq!(
        first.mutations(),
        [probe(job, false), after_probe.clone()].concat()
    );
    first.assert_stderr("tao-k8s nccl-probe: OK: all-reduce of 256 MiB");
    // The probe completes before the manifest is tried, and its objects are gone.
    let lines = first.lines();
    let at = |line: &str| lines.iter().position(|l| l == line).unwrap();
    let wait = at(&format!("get job {job}-nccl-probe -o json"));
    let created = format!("create -f $TMP/probe/objects/job-{job}-nccl-probe.json -o jsonpath=…");
    assert!(at(&created) < wait && wait < at(DRY_RUN));
    assert!(
        s.object("default", "job", &format!("{job}-nccl-probe"))
            .is_none()
    );
    let env = fs::read_to_string(s.path("bundle/job.env")).unwrap();
    let digest = env
        .lines()
        .find_map(|l| l.strip_prefix("probe_digest="))
        .unwrap()
        .trim_matches('\'');
    assert_eq!(digest.len(), 16, "{env}");
    assert!(
        s.path(&format!("state/nccl-probe/{CONTEXT}-{digest}.ok"))
            .is_file()
    );
    let first_id = s.record_id();
    assert_eq!(s.record(&first_id)["state"], "RUNNING");
    assert_eq!(first.stdout, format!("{first_id} default/{job}\n"));

    // Same context: the cached probe (the first Job ended and its TTL collected it).
    s.empty_cluster();
    let second = s.run("healthy-cluster", &[], &["submit"]);
    second.assert_code(0);
    second.assert_stderr(&format!(
        "tao-k8s: NCCL probe passed before on context {CONTEXT}"
    ));
    assert_eq!(second.mutations(), after_probe);
    assert_ne!(s.record_id(), first_id, "every submit opens its own record");

    // --reprobe forces it.
    s.empty_cluster();
    let third = s.run("healthy-cluster", &[], &["submit", "--reprobe"]);
    third.assert_code(0);
    assert_eq!(
        third.mutations(),
        [probe(job, false), after_probe.clone()].concat()
    );

    // Another context has not been probed.
    s.empty_cluster();
    let other = s.run(
        "healthy-cluster",
        &[("TAO_K8S_CONTEXT", "other-ctx")],
        &["submit"],
    );
    other.assert_code(0);
    other.assert_scoped_in("other-ctx", "default");
    assert_eq!(
        other.mutations(),
        [probe(job, false), after_probe.clone()].concat()
    );
    assert_eq!(s.record_ids().len(), 4);

    // The same job with the cluster's NCCL env is another probe: it runs on a context that
    // passed the probe without it.
    let mut s = s;
    s.request = "fixtures/kubectl/requests/multi-node-nccl-env.yaml".into();
    s.render("nccl-env");
    s.write_answer();
    s.empty_cluster();
    let tuned = s.run_in("nccl-env", "healthy-cluster", &[], &["submit"]);
    tuned.assert_code(0);
    assert_eq!(tuned.mutations(), [probe(job, false), after_probe].concat());
    let probe_job = s.path("nccl-env/nccl-probe.yaml");
    let probe_job = fs::read_to_string(probe_job).unwrap();
    assert!(probe_job.contains("NCCL_SOCKET_IFNAME"), "{probe_job}");
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
    assert_eq!(
        run.mutations(),
        manifest("classification-evaluate", false, false)
    );
    let id = single.record_id();
    assert_eq!(run.stdout, format!("{id} vision/classification-evaluate\n"));
    assert_eq!(
        single.record(&id)["backend_ref"],
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

/// A Pending claim of a class that binds at first use (WaitForFirstConsumer, the default on
/// EKS, GKE and kind) binds when the pod is scheduled: the submit goes on.
#[test]
fn a_pending_pvc_of_a_class_that_binds_at_first_use_passes() {
    let s = Sandbox::new("fixtures/requests/valid/args-mode.yaml");
    let run = s.run("pvc-first-use", &[], &["submit"]);
    run.assert_code(0);
    run.assert_stderr(
        "tao-k8s: gate claims: pass: tao-results (StorageClass gp3) Pending until the pod is \
         scheduled: the class binds WaitForFirstConsumer",
    );
    assert!(
        run.lines()
            .contains(&"get storageclass -o json".to_string())
    );
    assert_eq!(s.record_ids().len(), 1);
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
        "tao-k8s: gate runtime: refused: node gpu-node-2 has NVIDIA driver 550, older than 580; \
         node gpu-node-2 has NVIDIA container toolkit 1.17.4, older than 1.19.0: GPU nodes need \
         NVIDIA driver 580 or newer",
    );

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
    assert_eq!(run.mutations(), manifest("dino-train-h100", false, false));
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
            manifest(job, true, false),
            vec![owned("configmap", &format!("{job}-spec"), job)]
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

/// The issue's case: without gang scheduling, a multi-node Job whose pods do not all fit the
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
            probe(job, false),
            manifest(job, true, true),
            vec![
                owned("configmap", &format!("{job}-spec"), job),
                owned("service", job, job),
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
    let job = "tao-7f3a9c1e-2b4d-4e8f-9a6b-0c1d2e3f4a5b";
    assert!(run.mutations().contains(&create("job", job)));
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
            vec![
                DRY_RUN.to_string(),
                create("secret", &format!("{job}-creds"))
            ],
            manifest(job, false, false)[1..].to_vec(),
            vec![owned("secret", &format!("{job}-creds"), job)],
        ]
        .concat()
    );
    assert_eq!(
        s.record(&s.record_id())["backend_ref"],
        format!("default/{job}")
    );
    assert_no_leak(&s, &run, &[HF_TOKEN]);
    assert!(!run.log.contains("FAKE.service-account.token"));
    s.empty_cluster();

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
/// that created it and what to do. Nothing changes in the cluster or the records.
#[test]
fn a_resubmit_is_refused_while_the_job_runs_and_after_it_completed() {
    let job = "rtdetr-train-4n";
    for (fixture, state) in [
        ("job-rtdetr-complete.json", "succeeded"),
        ("job-rtdetr-active.json", "active"),
    ] {
        let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
        s.preload(fixture);
        let id = s.running_record(&format!("default/{job}"));
        let before = s.record(&id);
        let run = s.run("healthy-cluster", &[NGC_KEY], &["submit"]);
        run.assert_code(1);
        run.assert_stderr(&format!(
            "tao-k8s: gate job: refused: the Job default/{job} exists ({state}, created by job \
             record {id}): "
        ));
        let advice = if state == "active" {
            "job.sh status shows it, job.sh cancel stops and deletes it"
        } else {
            "job.sh submit --replace deletes it (and its logs) and runs the bundle again"
        };
        run.assert_stderr(advice);
        run.assert_stderr("to run beside it, render the request under another metadata.name");
        assert_eq!(run.mutations(), Vec::<String>::new(), "{fixture}");
        assert_eq!(
            s.record_ids(),
            std::slice::from_ref(&id),
            "{fixture}: a second record"
        );
        assert_eq!(s.record(&id), before, "{fixture}: the record changed");
        assert!(!s.path("bundle/record-id").exists());
        assert_no_leak(&s, &run, &[NGC_KEY]);
    }
}

/// `submit --replace` runs the bundle again once its Job ended: the ended Job (and whatever
/// its record created) is deleted by its uid and waited for before anything of the new run
/// is made, under a new record; the old record keeps its history. A Job that still runs is
/// not replaced.
#[test]
fn submit_replace_runs_an_ended_job_again_and_never_a_running_one() {
    let job = "rtdetr-train-4n";
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    s.preload("job-rtdetr-active.json");
    let old = s.running_record(&format!("default/{job}"));
    let before = s.record(&old);

    let running = s.run("healthy-cluster", &[NGC_KEY], &["submit", "--replace"]);
    running.assert_code(1);
    running.assert_stderr(
        "--replace replaces only a Job that ended; job.sh cancel stops and deletes it",
    );
    assert_eq!(running.mutations(), Vec::<String>::new());

    s.preload("job-rtdetr-complete.json");
    let run = s.run("healthy-cluster", &[NGC_KEY], &["submit", "--replace"]);
    run.assert_code(0);
    run.assert_stderr(&format!(
        "tao-k8s: gate job: pass: the Job default/{job} exists (succeeded, created by job record \
         {old}): --replace deletes it"
    ));
    run.assert_stderr(&format!(
        "tao-k8s: deleted the ended Job {job} and what its job record created (--replace)"
    ));
    let mutations = run.mutations();
    // The ended Job goes first, by its uid, before the probe or the run make theirs.
    assert_eq!(
        mutations[..2],
        [
            format!(
                "delete --raw /apis/batch/v1/namespaces/default/jobs/{job} -f \
                 $TMP/decisions/replace-0.json"
            ),
            format!("create -f $TMP/probe/objects/secret-{job}-ngc.json -o jsonpath=…"),
        ],
        "{mutations:#?}"
    );
    let job_deletes = mutations
        .iter()
        .filter(|m| m.contains(&format!("/jobs/{job} ")))
        .count();
    assert_eq!(job_deletes, 1, "{mutations:#?}");
    assert!(mutations.contains(&create("job", job)), "{mutations:#?}");
    let new = s.record_id();
    assert_ne!(new, old);
    assert_eq!(s.record(&old), before, "the old record keeps its history");
    let record = s.record(&new);
    assert_eq!(record["state"], "RUNNING");
    let running = s.object("default", "job", job).unwrap();
    assert_ne!(running["metadata"]["uid"], UID);
    assert_eq!(record["backend_uid"], running["metadata"]["uid"]);
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
    assert!(record.get("backend_ref").is_none());
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
/// owns them (the Job was never created), so nothing would ever delete them. They go by the
/// uids this run created them with.
#[test]
fn a_refused_submit_leaves_no_credentials_secret_behind() {
    let job = "tao-7f3a9c1e-2b4d-4e8f-9a6b-0c1d2e3f4a5b";
    let s = Sandbox::new("fixtures/requests/valid/uuid-name.yaml");
    let scenario = s.scenario(
        "job-refused",
        "when create -f */objects/job-*\n  err Error from server (Forbidden): jobs.batch is \
         forbidden: exceeded quota: gpu-quota\n  exit 1",
    );
    let run = s.run(&scenario, &[HF_TOKEN, NGC_KEY], &["submit"]);
    run.assert_code(1);
    run.assert_stderr("exceeded quota: gpu-quota");
    assert_eq!(s.record(&s.record_id())["state"], "FAILED");
    assert_eq!(
        run.mutations(),
        [
            DRY_RUN.to_string(),
            create("secret", &format!("{job}-creds")),
            create("secret", &format!("{job}-ngc")),
            create("job", job),
            delete("secret", &format!("{job}-creds"), "rollback", 0),
            delete("secret", &format!("{job}-ngc"), "rollback", 1),
        ]
    );
    assert!(
        s.object("default", "secret", &format!("{job}-creds"))
            .is_none()
    );
    assert!(
        s.object("default", "secret", &format!("{job}-ngc"))
            .is_none()
    );
    assert_no_leak(&s, &run, &[HF_TOKEN, NGC_KEY]);
}

/// A Secret the server refuses: the record was opened, so it must end FAILED, not stay OPEN.
#[test]
fn a_refused_secret_marks_the_record_failed() {
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    let credentials = [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY];
    let run = s.run("secret-refused", &credentials, &["submit"]);
    run.assert_code(1);
    run.assert_stderr("secrets are forbidden");
    // Nothing after the refused Secret: nothing was created, so nothing is deleted.
    assert_eq!(
        run.mutations(),
        [DRY_RUN.to_string(), create("secret", "yolo-train-s3-creds")]
    );
    let record = s.record(&s.record_id());
    assert_eq!(
        states(&record),
        ["OPEN", "SUBMITTED", "FAILED"],
        "{record:#}"
    );
    assert_no_leak(&s, &run, &credentials);
}

// ---------------------------------------------------------------------------------------------
// credentials

#[test]
fn credentials_reach_kubectl_only_in_private_files() {
    // tier-c: S3 keys (and the bucket) in the credentials Secret, NGC_KEY in the pull Secret.
    let job = "yolo-train-s3";
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    let credentials = [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, NGC_KEY];
    let env = [credentials.as_slice(), &[S3_BUCKET_NAME]].concat();
    let run = s.run("healthy-cluster", &env, &["submit"]);
    run.assert_code(0);
    let (creds, ngc) = (format!("{job}-creds"), format!("{job}-ngc"));
    assert_eq!(
        run.mutations(),
        [
            vec![
                DRY_RUN.to_string(),
                create("secret", &creds),
                create("secret", &ngc)
            ],
            manifest(job, false, false)[1..].to_vec(),
            vec![owned("secret", &creds, job), owned("secret", &ngc, job)],
        ]
        .concat()
    );
    assert_eq!(
        s.secret_keys("default", &creds),
        [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "S3_BUCKET_NAME"
        ]
    );
    assert_eq!(s.secret_keys("default", &ngc), [".dockerconfigjson"]);
    run.assert_created_from_private_files();
    assert_no_leak(&s, &run, &credentials);

    // cancel deletes the Job, then both Secrets, each by the uid the record lists.
    let cancel = s.run("healthy-cluster", &env, &["cancel"]);
    cancel.assert_code(0);
    assert_eq!(
        cancel.mutations(),
        [
            delete("job", job, "deletes", 0),
            delete("secret", &creds, "deletes", 1),
            delete("secret", &ngc, "deletes", 2),
        ]
    );
    assert!(s.object("default", "secret", &creds).is_none());
    assert_no_leak(&s, &cancel, &credentials);

    // uuid-name: credentials.extra HF_TOKEN.
    let job = "tao-7f3a9c1e-2b4d-4e8f-9a6b-0c1d2e3f4a5b";
    let s = Sandbox::new("fixtures/requests/valid/uuid-name.yaml");
    let credentials = [HF_TOKEN, NGC_KEY];
    let run = s.run("healthy-cluster", &credentials, &["submit"]);
    run.assert_code(0);
    let (creds, ngc) = (format!("{job}-creds"), format!("{job}-ngc"));
    assert_eq!(
        run.mutations(),
        [
            vec![
                DRY_RUN.to_string(),
                create("secret", &creds),
                create("secret", &ngc)
            ],
            manifest(job, false, false)[1..].to_vec(),
            vec![owned("secret", &creds, job), owned("secret", &ngc, job)],
        ]
        .concat()
    );
    assert_eq!(s.secret_keys("default", &creds), ["HF_TOKEN"]);
    run.assert_created_from_private_files();
    assert_no_leak(&s, &run, &credentials);
}

#[test]
fn legacy_access_key_and_secret_key_fill_the_aws_keys() {
    let job = "yolo-train-s3";
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    let run = s.run("healthy-cluster", &[ACCESS_KEY, SECRET_KEY], &["submit"]);
    run.assert_code(0);
    let creds = format!("{job}-creds");
    assert_eq!(
        s.secret_keys("default", &creds),
        ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]
    );
    assert_eq!(
        run.mutations(),
        [
            vec![DRY_RUN.to_string(), create("secret", &creds)],
            manifest(job, false, false)[1..].to_vec(),
            vec![owned("secret", &creds, job)],
        ]
        .concat()
    );
    run.assert_created_from_private_files();
    assert_no_leak(&s, &run, &[ACCESS_KEY, SECRET_KEY]);
    // Tier C keeps its results in S3, after the pod is gone: the record names the prefix.
    let record = s.record(&s.record_id());
    assert_eq!(record["storage_tier"], "C");
    assert_eq!(record["results_dir"], "s3://tao-bucket/runs/yolo-train-s3/");
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
    s.preload("job-rtdetr-active.json");
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
            "get pods -l batch.kubernetes.io/controller-uid=UID -o json",
        ]
    );
    run.assert_scoped("default");
    assert_eq!(s.record(&id)["state"], "RUNNING");
}

#[test]
fn status_marks_the_record_succeeded_when_the_job_is_complete() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    s.preload("job-rtdetr-complete.json");
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
    s.preload("job-rtdetr-failed.json");
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

/// A node drain evicts index 1: its pod ends with the DisruptionTarget condition and the Job
/// (a podFailurePolicy `Ignore` rule) replaces it without counting a failure. `status` says
/// which pod was disrupted and why, the record stays RUNNING, and the run completes.
#[test]
fn an_evicted_rank_is_replaced_and_the_run_completes() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let bundle = fs::read_to_string(s.path("bundle/manifest.yaml")).unwrap();
    assert!(
        bundle.contains(
            "  podFailurePolicy:\n    rules:\n      - action: \"Ignore\"\n        onPodConditions:\n          - type: \"DisruptionTarget\""
        ),
        "{bundle}"
    );
    s.preload("job-rtdetr-active.json");
    let id = s.running_record("default/rtdetr-train-4n");
    let run = s.run("job-disrupted", &[], &["status", "--record", &id]);
    run.assert_code(0);
    assert_eq!(
        run.stdout,
        "default/rtdetr-train-4n: running (active 4, succeeded 0, failed 0)\n  \
         index 0 rtdetr-train-4n-0-x7k2p: Running on gpu-node-1\n  \
         index 1 rtdetr-train-4n-1-b8d4c: Failed on gpu-node-2, tao terminated Error, exit code \
         143, disrupted: EvictionByEvictionAPI (Eviction API: evicting)\n  \
         index 1 rtdetr-train-4n-1-v5r7t: Running on gpu-node-5\n  \
         index 2 rtdetr-train-4n-2-m3n5q: Running on gpu-node-3\n  \
         index 3 rtdetr-train-4n-3-q9w8e: Running on gpu-node-4\n"
    );
    assert_eq!(s.record(&id)["state"], "RUNNING");
    assert_eq!(run.mutations(), Vec::<String>::new());

    s.preload("job-rtdetr-complete.json");
    let run = s.run("job-complete", &[], &["status", "--record", &id]);
    run.assert_code(0);
    assert!(
        run.stdout.starts_with("default/rtdetr-train-4n: Complete"),
        "{}",
        run.stdout
    );
    let record = s.record(&id);
    assert_eq!(
        states(&record),
        ["OPEN", "SUBMITTED", "RUNNING", "SUCCEEDED"]
    );
}

/// The action exits with 42, which the request declares fatal: the Job fails at once (a
/// `FailJob` rule) though `backoffLimit` allowed a retry, and the record ends FAILED naming
/// the rule and the pod that hit it, not the peers the Job controller then stopped.
#[test]
fn a_fatal_exit_code_fails_the_run_at_once() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let bundle = fs::read_to_string(s.path("bundle/manifest.yaml")).unwrap();
    assert!(
        bundle.contains(
            "      - action: \"FailJob\"\n        onPodConditions: []\n        onExitCodes:\n          containerName: \"tao\"\n          operator: \"In\"\n          values: [42]\n"
        ) && bundle.contains("  backoffLimit: 1\n"),
        "{bundle}"
    );
    s.preload("job-rtdetr-fatal.json");
    let id = s.running_record("default/rtdetr-train-4n");
    let run = s.run("job-fatal", &[], &["status", "--record", &id]);
    run.assert_code(0);
    let record = s.record(&id);
    assert_eq!(states(&record), ["OPEN", "SUBMITTED", "RUNNING", "FAILED"]);
    assert_eq!(
        last_reason(&record),
        "the Job failed: PodFailurePolicy (Container tao for pod default/rtdetr-train-4n-1-b8d4c \
         failed with exit code 42 matching FailJob rule at index 1); index 1 \
         rtdetr-train-4n-1-b8d4c: Failed on gpu-node-2, tao terminated Error, exit code 42"
    );
    assert_eq!(run.mutations(), Vec::<String>::new());
}

/// Tier C with the uploader a native sidecar: the action OOM-killed ends the pod (the kubelet
/// stops the uploader), and the record ends FAILED naming the action's container and why.
#[test]
fn status_records_an_oom_killed_tier_c_action_and_its_uploader() {
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    s.preload("job-yolo-failed.json");
    let id = s.running_record("default/yolo-train-s3");
    let run = s.run("tier-c-oom", &[], &["status", "--record", &id]);
    run.assert_code(0);
    let pod = "yolo-train-s3-x7k2p: Failed on gpu-node-1, tao terminated OOMKilled, exit code 137, \
               upload-results terminated Error, exit code 137";
    assert_eq!(
        run.stdout,
        format!("default/yolo-train-s3: Failed (active 0, succeeded 0, failed 1)\n  {pod}\n")
    );
    let record = s.record(&id);
    assert_eq!(states(&record), ["OPEN", "SUBMITTED", "RUNNING", "FAILED"]);
    assert_eq!(
        last_reason(&record),
        format!(
            "the Job failed: BackoffLimitExceeded (Job has reached the specified backoff limit); {pod}"
        )
    );
    assert_eq!(run.mutations(), Vec::<String>::new());
}

/// From 1.29 the tier C uploader is a native sidecar, whose exit code does not count in the
/// pod's phase: the Job is Complete though the upload failed. The record ends FAILED and says so.
#[test]
fn status_records_a_failed_upload_sidecar_as_failed() {
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    s.preload("job-yolo-complete.json");
    let id = s.running_record("default/yolo-train-s3");
    let run = s.run("tier-c-upload-failed", &[], &["status", "--record", &id]);
    run.assert_code(0);
    let pod = "yolo-train-s3-x7k2p: Succeeded on gpu-node-1, tao terminated Completed, exit code 0, \
               upload-results terminated Error, exit code 1";
    assert!(run.stdout.contains(pod), "{}", run.stdout);
    let record = s.record(&id);
    assert_eq!(states(&record), ["OPEN", "SUBMITTED", "RUNNING", "FAILED"]);
    assert!(
        last_reason(&record).contains("a sidecar failed") && last_reason(&record).ends_with(pod),
        "{}",
        last_reason(&record)
    );
    assert_eq!(run.mutations(), Vec::<String>::new());
}

#[test]
fn logs_of_one_index() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    s.preload("job-rtdetr-active.json");
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
            "get job rtdetr-train-4n -o json --ignore-not-found",
            "get pods -l batch.kubernetes.io/controller-uid=UID,\
             batch.kubernetes.io/job-completion-index=2 -o name",
            "logs -l batch.kubernetes.io/controller-uid=UID,\
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
            "get job rtdetr-train-4n -o json --ignore-not-found",
            "get pods -l batch.kubernetes.io/controller-uid=UID -o name",
            "logs -l batch.kubernetes.io/controller-uid=UID --prefix --tail 50 -c tao \
          --max-log-requests 9 --follow"
        ]
    );

    // A Job that ended: the whole log, unless --tail says otherwise.
    s.preload("job-rtdetr-complete.json");
    let run = s.run("job-complete", &[], &["logs", "--record", &id]);
    run.assert_code(0);
    assert_eq!(
        run.lines(),
        [
            "get job rtdetr-train-4n -o json --ignore-not-found",
            "get pods -l batch.kubernetes.io/controller-uid=UID -o name",
            "logs -l batch.kubernetes.io/controller-uid=UID --prefix --tail -1 -c tao \
             --max-log-requests 9"
        ]
    );
    let run = s.run(
        "job-complete",
        &[],
        &["logs", "--tail", "5", "--record", &id],
    );
    run.assert_code(0);
    assert!(run.lines()[2].contains("--tail 5 "), "{:?}", run.lines());
}

#[test]
fn cancel_deletes_the_job_and_everything_attached_to_it() {
    let job = "four-objects";
    let s = Sandbox::new("fixtures/kubectl/requests/four-objects.yaml");
    let submit = s.run("healthy-cluster", &[HF_TOKEN], &["submit"]);
    submit.assert_code(0);
    let (creds, spec) = (format!("{job}-creds"), format!("{job}-spec"));
    assert_eq!(
        submit.mutations(),
        [
            probe(job, false),
            vec![DRY_RUN.to_string(), create("secret", &creds)],
            manifest(job, true, true)[1..].to_vec(),
            vec![
                owned("secret", &creds, job),
                owned("configmap", &spec, job),
                owned("service", job, job),
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
            delete("job", job, "deletes", 0),
            delete("secret", &creds, "deletes", 1),
            delete("configmap", &spec, "deletes", 2),
            delete("service", job, "deletes", 3),
        ]
    );
    assert!(
        !s.path("cluster/default/job")
            .read_dir()
            .unwrap()
            .any(|_| true)
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
        .position(|l| l.starts_with("create -f $TMP/probe/objects/job-"))
        .unwrap();
    for name in pull_secrets {
        assert!(
            lines[..applied].iter().any(|l| {
                l.starts_with(&format!("create -f $TMP/probe/objects/secret-{name}.json"))
                    || l.starts_with(&format!("get secret {name} -o name"))
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
            format!("create -f $TMP/probe/objects/job-{name}.json -o jsonpath=…"),
            format!("get job {name} -o json"),
            "logs -l batch.kubernetes.io/controller-uid=UID,\
             batch.kubernetes.io/job-completion-index=0 -c tao --tail 1"
                .to_string(),
        ] {
            assert!(
                lines.contains(&expected),
                "{request}: the probe Job is {name}, but the script runs:\n{lines:#?}"
            );
        }
        let deleted = format!("/jobs/{name} -f $TMP/probe/deletes/delete-0.json");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("delete --raw") && l.ends_with(&deleted)),
            "{request}: the probe Job {name} is not deleted by its uid:\n{lines:#?}"
        );
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
        [manifest(job, false, true), vec![owned("service", job, job)]].concat()
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
    // The scripts pods run with /bin/sh: POSIX sh.
    let pod_scripts: Vec<PathBuf> = fs::read_dir(Path::new(ROOT).join("scripts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sh") && !p.ends_with("driver.sh"))
        .collect();
    assert!(
        pod_scripts.iter().any(|p| p.ends_with("read-logs.sh")),
        "{pod_scripts:?}"
    );
    let out = Command::new("shellcheck")
        .arg("--shell=sh")
        .args(&pod_scripts)
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
                "driver",
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
        let out = common::tao()
            .args(args)
            .env("TAO_K8S_STATE_DIR", &state)
            .envs(env.iter().copied())
            .stdin_null()
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
    fs::copy(BIN, &writer).unwrap();
    s.render_with(&writer, "moved");
    let script = fs::read_to_string(s.path("moved/job.env")).unwrap();
    assert!(
        script.contains(&format!("writer='{}'", writer.display())),
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
            .contains("\nwriter=''\n")
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

/// A cluster kubectl cannot reach: preflight and submit say how to point kubectl at one, as
/// the runbook does (kubeconfig, EKS, GKE, AKS, minikube), and change nothing.
#[test]
fn an_unreachable_cluster_shows_how_to_configure_kubectl() {
    let s = Sandbox::new("fixtures/requests/valid/args-mode.yaml");
    let scenario = s.scenario(
        "unreachable",
        "when get --raw /version\n  err Unable to connect to the server: dial tcp 10.0.0.1:443: i/o timeout\n  exit 1",
    );
    for verb in ["preflight", "submit"] {
        let run = s.run(&scenario, &[], &[verb]);
        assert_refused_by_a_gate(&s, &run, "the cluster of context test-ctx is not reachable");
        for line in [
            "tao-k8s: MISSING: no reachable cluster (kubeconfig at ~/.kube/config, $KUBECONFIG, or in-pod service account).",
            "tao-k8s:   EKS: aws eks update-kubeconfig --name <cluster> --region <region>",
            "tao-k8s:   GKE: gcloud container clusters get-credentials <cluster> --region <region>",
            "tao-k8s:   AKS: az aks get-credentials --resource-group <rg> --name <cluster>",
            "tao-k8s:   local: minikube start",
        ] {
            run.assert_stderr(line);
        }
    }
}

/// No kubectl on PATH: the runbook's MISSING line and where to get kubectl.
#[test]
fn without_kubectl_preflight_says_how_to_install_it() {
    let s = Sandbox::new("fixtures/requests/valid/args-mode.yaml");
    // Every program of the system's PATH but kubectl.
    let tools = s.path("tools");
    fs::create_dir(&tools).unwrap();
    for dir in ["/usr/local/bin", "/usr/bin", "/bin"] {
        for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            if name == "kubectl" || tools.join(&name).exists() {
                continue;
            }
            std::os::unix::fs::symlink(entry.path(), tools.join(&name)).unwrap();
        }
    }
    let path = tools.display().to_string();
    for verb in ["preflight", "submit"] {
        let run = s.run("healthy-cluster", &[("PATH", &path)], &[verb]);
        assert_refused_by_a_gate(
            &s,
            &run,
            "tao-k8s: MISSING: kubectl not found on PATH. Install kubectl to submit Jobs (https://kubernetes.io/docs/tasks/tools/)",
        );
        assert!(run.calls.is_empty(), "{:#?}", run.lines());
    }
}

/// The capacity refusal says the runbook's numbers: every pod's GPUs against what the nodes
/// have allocatable, and where the GPU Operator is when no node has any.
#[test]
fn a_capacity_refusal_says_need_and_allocatable() {
    // Sixteen pods of 8 GPUs; four nodes of 8.
    let s = Sandbox::new("fixtures/requests/valid/multi-node-16-kueue.yaml");
    let run = s.run("healthy-cluster", &[], &["preflight"]);
    assert_refused_by_a_gate(&s, &run, "; insufficient GPUs: need 128, allocatable 32");
    assert!(!run.stderr.contains("GPU Operator"), "{}", run.stderr);
    // A cluster of CPU nodes only.
    let s = Sandbox::new("fixtures/requests/valid/args-mode.yaml");
    let nodes = r#"{"items": [{"metadata": {"name": "cpu-node-1"}, "spec": {}, "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}, "conditions": [{"type": "Ready", "status": "True"}]}}]}"#;
    let scenario = s.scenario("no-gpus", &format!("when get nodes -o json\n  out {nodes}"));
    for verb in ["preflight", "submit"] {
        let run = s.run(&scenario, &[], &[verb]);
        assert_refused_by_a_gate(
            &s,
            &run,
            "insufficient GPUs: need 2, allocatable 0; no node has nvidia.com/gpu allocatable: \
             install the NVIDIA GPU Operator before submitting GPU jobs \
             (https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/getting-started.html)",
        );
    }
}

/// `TAO_SKILL_BANK_ROOT` names a skill bank: its GPU host check runs (`--backend kubernetes
/// --check-only`) before any kubectl call; its failure stops preflight and submit with the
/// runbook's remedies, and TAO_K8S_SKIP_NODE_RUNTIME_CHECK=1 skips it.
#[test]
fn the_skill_bank_s_host_check_runs_when_tao_skill_bank_root_names_it() {
    let s = Sandbox::new("fixtures/requests/valid/args-mode.yaml");
    let bank = s.path("bank");
    let script =
        bank.join("skills/platform/tao-setup-nvidia-gpu-host/scripts/setup-nvidia-gpu-host.sh");
    fs::create_dir_all(script.parent().unwrap()).unwrap();
    let args = s.path("host-check-args");
    let write = |code: u8| {
        fs::write(
            &script,
            format!(
                "#!/bin/bash\nprintf '%s\\n' \"$*\" >'{}'\necho 'driver 580.65 found'\nexit {code}\n",
                args.display()
            ),
        )
        .unwrap();
        let mut perms = fs::metadata(&script).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        fs::set_permissions(&script, perms).unwrap();
    };
    let bank_root = bank.display().to_string();
    let env = [
        ("TAO_SKILL_BANK_ROOT", bank_root.as_str()),
        ("TAO_K8S_SKIP_NODE_RUNTIME_CHECK", "0"),
    ];
    write(0);
    let run = s.run("healthy-cluster", &env, &["preflight"]);
    run.assert_code(0);
    run.assert_stderr("tao-k8s: host check: driver 580.65 found");
    run.assert_stderr("GPU host runtime check passed");
    assert_eq!(
        fs::read_to_string(&args).unwrap(),
        "--backend kubernetes --check-only\n"
    );

    write(3);
    for verb in ["preflight", "submit"] {
        let run = s.run("healthy-cluster", &env, &[verb]);
        assert_refused_by_a_gate(
            &s,
            &run,
            "tao-k8s: MISSING: TAO Kubernetes GPU node runtime is not ready.",
        );
        run.assert_stderr("--backend kubernetes --install --yes");
        run.assert_stderr("then set TAO_K8S_SKIP_NODE_RUNTIME_CHECK=1");
        run.assert_stderr("the GPU host runtime check failed (exit code 3)");
        assert!(run.calls.is_empty(), "{:#?}", run.lines());
    }

    fs::remove_file(&args).unwrap();
    let skipped = s.run(
        "healthy-cluster",
        &[("TAO_SKILL_BANK_ROOT", bank_root.as_str())],
        &["preflight"],
    );
    skipped.assert_code(0);
    assert!(!args.exists(), "the host check ran with the check skipped");

    // Not there: said, not run.
    fs::remove_file(&script).unwrap();
    let run = s.run("healthy-cluster", &env, &["preflight"]);
    run.assert_code(0);
    run.assert_stderr("is not an executable file: the GPU host runtime check was not run");
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
/// turn: each gate, the record, each object the probe or the run creates, the probe itself,
/// lint, dry run, kept fields, each record mark, each patch. Whatever failed, the fake API
/// server holds nothing afterwards (everything this run created was deleted again, by its
/// uid), and every record this run opened ends FAILED.
#[test]
fn nothing_outlives_a_failed_submit() {
    let request = "fixtures/requests/valid/tier-c-4-nodes.yaml";
    let job = "dino-train-s3-4n";
    let credentials = [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, HF_TOKEN, NGC_KEY];
    let refuse = |what: &str| format!("when create -f */{what}\n  err error: refused\n  exit 1");
    // (step, scenario rules or a shipped scenario, a tao-k8s call that fails, extra env,
    // the message that says the step failed)
    type Step<'a> = (&'a str, String, &'a str, Vec<(&'a str, &'a str)>, String);
    let steps: Vec<Step> = vec![
        (
            "fit gate",
            "gpus-spread-thin".into(),
            "",
            vec![],
            "gate fit: refused: never fits".into(),
        ),
        (
            "version gate",
            "kube-1.27".into(),
            "",
            vec![],
            "needs Kubernetes 1.28".into(),
        ),
        (
            "record open",
            String::new(),
            "record open *",
            vec![],
            "cannot open a job record".into(),
        ),
        (
            "probe pull Secret",
            refuse(&format!("probe/objects/secret-{job}-ngc.json")),
            "",
            vec![],
            format!("refused to create the Secret {job}-ngc"),
        ),
        (
            "probe Service",
            refuse(&format!("probe/objects/service-{job}-nccl-probe.json")),
            "",
            vec![],
            format!("refused to create the Service {job}-nccl-probe"),
        ),
        (
            "probe Job",
            refuse(&format!("probe/objects/job-{job}-nccl-probe.json")),
            "",
            vec![],
            format!("refused to create the Job {job}-nccl-probe"),
        ),
        (
            "probe fails",
            String::new(),
            "",
            vec![
                ("FAKE_KUBECTL_COMPLETE", "none"),
                ("FAKE_KUBECTL_FAILED", "nccl-probe"),
            ],
            "the NCCL probe did not complete".into(),
        ),
        (
            "probe never completes",
            String::new(),
            "",
            vec![
                ("FAKE_KUBECTL_COMPLETE", "none"),
                ("TAO_K8S_PROBE_TIMEOUT_SECONDS", "2"),
            ],
            "the NCCL probe did not complete within 2s".into(),
        ),
        (
            "record own",
            String::new(),
            "record own * --kind Service *",
            vec![],
            "cannot list the Service".into(),
        ),
        (
            "a required key",
            String::new(),
            "",
            vec![("HF_TOKEN", "")],
            "HF_TOKEN is not set in the environment".into(),
        ),
        (
            "lint",
            String::new(),
            "lint *",
            vec![],
            "the manifest holds a credential".into(),
        ),
        (
            "dry run",
            "dry-run-rejected".into(),
            "",
            vec![],
            "refused the manifest (dry run)".into(),
        ),
        (
            "kept fields",
            String::new(),
            "driver kept-fields *",
            vec![],
            "would drop fields".into(),
        ),
        (
            "mark SUBMITTED",
            String::new(),
            "record mark * SUBMITTED *",
            vec![],
            "SUBMITTED".into(),
        ),
        (
            "credentials Secret",
            refuse(&format!("objects/secret-{job}-creds.json")),
            "",
            vec![],
            format!("refused to create the Secret {job}-creds"),
        ),
        (
            "Service",
            refuse(&format!("objects/service-{job}.json")),
            "",
            vec![],
            format!("refused to create the Service {job}"),
        ),
        (
            "Job",
            refuse(&format!("objects/job-{job}.json")),
            "",
            vec![],
            format!("refused to create the Job {job}"),
        ),
        (
            "mark RUNNING",
            String::new(),
            "record mark * RUNNING *",
            vec![],
            "cannot bind job record".into(),
        ),
        (
            "patch Service",
            "when patch service \n  exit 1".into(),
            "",
            vec![],
            format!("the Service {job} could not be attached"),
        ),
        (
            "patch pull Secret",
            "when patch secret *-ngc \n  exit 1".into(),
            "",
            vec![],
            format!("the Secret {job}-ngc could not be attached"),
        ),
    ];
    let mut after_a_create = 0;
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
        let real = Path::new(BIN);
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
        let left: Vec<_> = walk(&s.path("cluster"));
        assert!(left.is_empty(), "{left:?} left behind, {context}");
        if run.mutations().iter().any(|m| m.starts_with("create")) {
            after_a_create += 1;
        }
        for id in s.record_ids() {
            assert_eq!(s.record(&id)["state"], "FAILED", "{context}");
        }
        assert_no_leak(&s, &run, &credentials);
    }
    assert!(
        after_a_create >= 15,
        "{after_a_create} steps failed after an object was created"
    );

    // The control: nothing fails, every object is attached to the Job and none deleted
    // (but the probe's own).
    let s = Sandbox::new(request);
    let run = s.run("healthy-cluster", &credentials, &["submit"]);
    run.assert_code(0);
    let mutations = run.mutations();
    for secret in [format!("{job}-creds"), format!("{job}-ngc")] {
        assert!(
            mutations.contains(&owned("secret", &secret, job)),
            "{mutations:#?}"
        );
    }
    let deletes: Vec<_> = mutations
        .iter()
        .filter(|m| m.starts_with("delete"))
        .collect();
    assert_eq!(deletes.len(), 2, "{deletes:#?}");
    assert!(
        deletes.iter().all(|d| d.contains("-nccl-probe ")),
        "{deletes:#?}"
    );
    assert_eq!(walk(&s.path("cluster")).len(), 4);
}

/// The files under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
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
/// stops with the pull Secret it created removed, its record FAILED.
#[test]
fn a_probe_that_never_completes_stops_at_its_deadline() {
    let job = "rtdetr-train-4n";
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let env = [
        NGC_KEY,
        ("TAO_K8S_PROBE_TIMEOUT_SECONDS", "3"),
        ("FAKE_KUBECTL_COMPLETE", "none"),
    ];
    let run = s.run("healthy-cluster", &env, &["submit"]);
    run.assert_code(1);
    run.assert_stderr("the NCCL probe did not complete within 3s");
    // The seed's remedy: the cluster's NCCL env, then a probe again.
    run.assert_stderr("NCCL_SOCKET_IFNAME=<the nodes' interface, e.g. eth0>");
    run.assert_stderr("re-probe: job.sh probe, or job.sh submit --reprobe");
    let polls = run
        .lines()
        .iter()
        .filter(|l| **l == format!("get job {job}-nccl-probe -o json"))
        .count();
    // One poll a second for 3 s, and one at the deadline.
    assert!((2..=5).contains(&polls), "{polls} polls");
    let pull = format!("{job}-ngc");
    assert_eq!(
        run.mutations(),
        [
            format!("create -f $TMP/probe/objects/secret-{pull}.json -o jsonpath=…"),
            format!("create -f $TMP/probe/objects/service-{job}-nccl-probe.json -o jsonpath=…"),
            format!("create -f $TMP/probe/objects/job-{job}-nccl-probe.json -o jsonpath=…"),
            delete("job", &format!("{job}-nccl-probe"), "probe/deletes", 0),
            delete("service", &format!("{job}-nccl-probe"), "probe/deletes", 1),
            delete("secret", &pull, "rollback", 0),
        ]
    );
    assert!(walk(&s.path("cluster")).is_empty());
    let record = s.record(&s.record_id());
    assert_eq!(states(&record), ["OPEN", "FAILED"]);

    // `job.sh probe` alone: the pull Secret it created is removed once the probe passed.
    let run = s.run("healthy-cluster", &[NGC_KEY], &["probe"]);
    run.assert_code(0);
    let mutations = run.mutations();
    assert_eq!(
        mutations.first().unwrap(),
        &format!("create -f $TMP/probe/objects/secret-{pull}.json -o jsonpath=…")
    );
    assert_eq!(
        mutations.last().unwrap(),
        &delete("secret", &pull, "rollback", 0),
        "{mutations:#?}"
    );
    assert!(walk(&s.path("cluster")).is_empty());
}

// ---------------------------------------------------------------------------------------------
// ownership: the driver touches only what it created, on a cluster shared with other teams

/// An object of another team, as the API server returns it: made by Helm.
fn foreign(kind: &str, name: &str, uid: &str, extra: Value) -> String {
    let mut object = serde_json::json!({
        "apiVersion": if kind == "Job" { "batch/v1" } else { "v1" },
        "kind": kind,
        "metadata": {
            "name": name, "namespace": "default", "uid": uid,
            "labels": {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/instance": "web"},
            "managedFields": [{"manager": "helm", "operation": "Update"}],
        },
    });
    for (k, v) in extra.as_object().unwrap() {
        object[k] = v.clone();
    }
    object.to_string()
}

const FOREIGN_UID: &str = "0f0e0d0c-0b0a-4908-8706-050403020100";

/// A Service, ConfigMap, Secret or probe Job of another team that has a name the bundle
/// derives: submit refuses before anything is created, naming the object and who holds it,
/// and the object is left exactly as it was.
#[test]
fn a_foreign_object_of_a_derived_name_makes_submit_refuse_before_anything_is_created() {
    let job = "rtdetr-train-4n";
    for (kind, name) in [
        ("Service", job.to_string()),
        ("ConfigMap", format!("{job}-spec")),
        ("Secret", format!("{job}-ngc")),
        ("Job", format!("{job}-nccl-probe")),
        ("Service", format!("{job}-nccl-probe")),
    ] {
        let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
        let object = foreign(kind, &name, FOREIGN_UID, serde_json::json!({}));
        s.preload(&object);
        let run = s.run("healthy-cluster", &[NGC_KEY], &["submit"]);
        assert_refused_by_a_gate(
            &s,
            &run,
            &format!(
                "tao-k8s: gate owners: refused: {kind} default/{name} exists and is not this \
                 bundle's (label app.kubernetes.io/managed-by=Helm; label \
                 app.kubernetes.io/instance=web; field managers helm, uid {FOREIGN_UID}): the \
                 driver neither changes nor deletes it"
            ),
        );
        let stored = s.object("default", &kind.to_lowercase(), &name).unwrap();
        assert_eq!(
            stored,
            serde_json::from_str::<Value>(&object).unwrap(),
            "{kind} {name}"
        );
        assert_no_leak(&s, &run, &[NGC_KEY]);
    }
}

/// `--replace` deletes only a Job that this bundle's job records created: another team's
/// Job of the name, ended or not, is refused and untouched.
#[test]
fn replace_refuses_a_job_no_record_here_created() {
    let job = "rtdetr-train-4n";
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let complete = fs::read_to_string(
        Path::new(ROOT).join("fixtures/kubectl/scenarios/job-rtdetr-complete.json"),
    )
    .unwrap();
    s.preload(&complete.replace(UID, FOREIGN_UID));
    // A record here bound to the name, but to another object.
    let _mine = s.running_record(&format!("default/{job}"));
    let run = s.run("healthy-cluster", &[NGC_KEY], &["submit", "--replace"]);
    run.assert_code(1);
    run.assert_stderr(&format!(
        "tao-k8s: gate job: refused: the Job default/{job} exists (succeeded, created by no job \
         record here: nothing says who made it): --replace deletes only a Job that this \
         bundle's job records created"
    ));
    assert_eq!(run.mutations(), Vec::<String>::new());
    assert_eq!(
        s.object("default", "job", job).unwrap()["metadata"]["uid"],
        FOREIGN_UID
    );
}

/// The Secret a request names (credentials.secretName) belongs to the team: it is used as it
/// is, read-only: the pod reads only the keys the request names (secretKeyRef, never envFrom),
/// and no submit, rollback or cancel writes, attaches or deletes it. Without a key the pod
/// needs, the submit is refused.
#[test]
fn a_foreign_secret_named_in_the_request_is_never_written_or_deleted() {
    let job = "named-secret";
    let s = Sandbox::new("fixtures/kubectl/requests/named-secret.yaml");
    let manifest = fs::read_to_string(s.path("bundle/manifest.yaml")).unwrap();
    assert!(!manifest.contains("envFrom"), "{manifest}");
    assert!(manifest.contains(r#"secretKeyRef: {"name": "team-creds", "key": "HF_TOKEN""#));
    let keys = [
        "HF_TOKEN",
        "VERSION",
        "KEY",
        "SECRET",
        "JOB",
        "OTHER_TEAM_TOKEN",
    ];
    let data: serde_json::Map<String, Value> = keys
        .iter()
        .map(|k| (k.to_string(), "c2VjcmV0".into()))
        .collect();
    let secret = foreign(
        "Secret",
        "team-creds",
        FOREIGN_UID,
        serde_json::json!({"data": data}),
    );
    s.preload(&secret);
    let allow = [
        ("TAO_K8S_PASS_ENV", "HF_TOKEN,VERSION,KEY,SECRET,JOB"),
        HF_TOKEN,
    ];
    let run = s.run("healthy-cluster", &allow, &["submit"]);
    run.assert_code(0);
    run.assert_stderr(
        "gate owners: pass: Secret default/team-creds (credentials.secretName) exists and is not \
         this bundle's: the pod reads its keys HF_TOKEN, VERSION, KEY, SECRET, JOB as they are",
    );
    assert_eq!(
        run.mutations(),
        manifest_of(job),
        "nothing but the Job is created, nothing is patched"
    );
    let run = s.run("healthy-cluster", &[], &["cancel"]);
    run.assert_code(0);
    assert_eq!(run.mutations(), [delete("job", job, "deletes", 0)]);
    assert_eq!(
        s.object("default", "secret", "team-creds").unwrap(),
        serde_json::from_str::<Value>(&secret).unwrap()
    );

    // Without a key the pod needs.
    s.empty_cluster();
    let data = serde_json::json!({"data": {"HF_TOKEN": "c2VjcmV0"}});
    s.preload(&foreign("Secret", "team-creds", FOREIGN_UID, data));
    let run = s.run("healthy-cluster", &allow, &["submit"]);
    run.assert_code(1);
    run.assert_stderr("has no key VERSION, KEY, SECRET, JOB: the pod would never start");
    assert_eq!(run.mutations(), Vec::<String>::new());
}

/// The dry run and the creation of a bundle with only a Job.
fn manifest_of(job: &str) -> Vec<String> {
    manifest(job, false, false)
}

/// When the named Secret does not exist, the driver makes it, from the environment only: a
/// name the driver once used for itself (VERSION, KEY, SECRET, JOB) holds the submitter's
/// value, never the driver's; and what it made is its own to delete.
#[test]
fn the_driver_s_own_variables_never_stand_in_for_the_environment() {
    use sha2::{Digest, Sha256};
    let s = Sandbox::new("fixtures/kubectl/requests/named-secret.yaml");
    let values = [
        HF_TOKEN,
        ("VERSION", "submitter-version-value"),
        ("KEY", "submitter-key-value"),
        ("SECRET", "submitter-secret-value"),
        ("JOB", "submitter-job-value"),
    ];
    let mut env = values.to_vec();
    env.push(("TAO_K8S_PASS_ENV", "HF_TOKEN,VERSION,KEY,SECRET,JOB"));
    let run = s.run("healthy-cluster", &env, &["submit"]);
    run.assert_code(0);
    let secret = s.object("default", "secret", "team-creds").unwrap();
    for (name, value) in values {
        let digest: String = Sha256::digest(value.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(secret["data"][name], format!("sha256:{digest}"), "{name}");
    }
    // Every name the program assigns is lower case, and an extra name must be upper case.
    let program = fs::read_to_string(Path::new(ROOT).join("scripts/driver.sh")).unwrap();
    // Assignments where a statement starts (and those that follow on its line), `local`
    // lists, `read -r` lists, `for` variables and `printf -v` targets.
    let statement = regex::Regex::new(
        r"(?m)(?:^|;|\)|&&|\|\||\{)\s*(?:local\s+)?((?:[A-Za-z_]\w*\+?=(?:'[^']*'|\S*)\s*)+)",
    )
    .unwrap();
    let word = regex::Regex::new(r"([A-Za-z_]\w*)\+?=").unwrap();
    let local = regex::Regex::new(r"(?m)^\s*local\s+(.*)$").unwrap();
    let read = regex::Regex::new(r"read\s+-r\s+([A-Za-z_][\w ]*)").unwrap();
    let for_in = regex::Regex::new(r"\bfor\s+([A-Za-z_]\w*)\s+in\b").unwrap();
    let name = regex::Regex::new(r"^([A-Za-z_]\w*)(?:=|$)").unwrap();
    let mut names: Vec<&str> = Vec::new();
    for c in statement.captures_iter(&program) {
        let words = word.captures_iter(c.get(1).unwrap().as_str());
        names.extend(words.map(|w| w.get(1).unwrap().as_str()));
    }
    for c in local
        .captures_iter(&program)
        .chain(read.captures_iter(&program))
    {
        let words = c.get(1).unwrap().as_str().split_whitespace();
        names.extend(words.filter_map(|w| Some(name.captures(w)?.get(1)?.as_str())));
    }
    names.extend(
        for_in
            .captures_iter(&program)
            .map(|c| c.get(1).unwrap().as_str()),
    );
    // (`LC_ALL=C tr ...` and `IFS=/ read ...` set them for one command, not in the script.)
    for name in names.into_iter().filter(|n| !["LC_ALL", "IFS"].contains(n)) {
        assert!(
            !name.bytes().any(|b| b.is_ascii_uppercase()),
            "driver.sh assigns {name}, which an environment variable could be"
        );
    }
    let run = s.run("healthy-cluster", &[], &["cancel"]);
    run.assert_code(0);
    assert!(s.object("default", "secret", "team-creds").is_none());
}

/// The submitter, not the request, decides what leaves their environment: an extra name not
/// allowed is refused before anything is made; NGC_KEY is never passed by extra, neither from
/// a request (refused at render) nor from an edited job.env (refused at submit).
#[test]
fn an_extra_name_the_submitter_did_not_allow_is_refused() {
    let s = Sandbox::new("fixtures/requests/valid/uuid-name.yaml");
    let run = s.run(
        "healthy-cluster",
        &[HF_TOKEN, ("TAO_K8S_PASS_ENV", "")],
        &["submit"],
    );
    assert_refused_by_a_gate(
        &s,
        &run,
        "tao-k8s: gate credentials: refused: credentials.extra asks for HF_TOKEN from your \
         environment, and you did not allow it: pass `job.sh submit --pass-env HF_TOKEN`",
    );
    let run = s.run(
        "healthy-cluster",
        &[HF_TOKEN, ("TAO_K8S_PASS_ENV", "")],
        &["submit", "--pass-env", "HF_TOKEN"],
    );
    run.assert_code(0);

    // A request that asks for NGC_KEY does not render.
    let dir = tempfile::tempdir().unwrap();
    let request =
        fs::read_to_string(Path::new(ROOT).join("fixtures/requests/valid/uuid-name.yaml"))
            .unwrap()
            .replace("extra: [HF_TOKEN]", "extra: [HF_TOKEN, NGC_KEY]");
    fs::write(dir.path().join("r.yaml"), request).unwrap();
    let r = tao(
        &["render", dir.path().join("r.yaml").to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(r.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&r.stderr)
            .contains("NGC_KEY reaches the cluster only as the nvcr.io pull Secret"),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );

    // An edited job.env that asks for it is refused, allowed or not.
    let env_file = s.path("bundle/job.env");
    let edited = fs::read_to_string(&env_file).unwrap().replace(
        "extra_keys=('HF_TOKEN')",
        "extra_keys=('HF_TOKEN' 'NGC_KEY')",
    );
    fs::write(&env_file, edited).unwrap();
    s.empty_cluster();
    let run = s.run(
        "healthy-cluster",
        &[HF_TOKEN, NGC_KEY, ("TAO_K8S_PASS_ENV", "HF_TOKEN,NGC_KEY")],
        &["submit"],
    );
    run.assert_code(1);
    run.assert_stderr("gate credentials: refused: credentials.extra names NGC_KEY");
    assert_eq!(run.mutations(), Vec::<String>::new());
    assert_no_leak(&s, &run, &[HF_TOKEN, NGC_KEY]);
}

/// Two submits of one bundle at once, and two overlapping `--replace` runs: the API server's
/// create decides, so exactly one Job runs and exactly one record is RUNNING, bound to it;
/// the loser deletes only what it created itself.
#[test]
fn racing_submits_leave_one_running_job_and_one_running_record() {
    let job = "tao-7f3a9c1e-2b4d-4e8f-9a6b-0c1d2e3f4a5b";
    let check = |s: &Sandbox, runs: &[Run], old: Option<&str>| {
        let won: Vec<&Run> = runs.iter().filter(|r| r.code == 0).collect();
        assert_eq!(
            won.len(),
            1,
            "{:#?}",
            runs.iter().map(|r| &r.stderr).collect::<Vec<_>>()
        );
        // (The record of the Job `--replace` deleted keeps its history.)
        let running: Vec<Value> = s
            .record_ids()
            .iter()
            .filter(|id| Some(id.as_str()) != old)
            .map(|id| s.record(id))
            .filter(|r| r["state"] == "RUNNING")
            .collect();
        assert_eq!(running.len(), 1, "{running:#?}");
        let stored = s.object("default", "job", job).unwrap();
        assert_eq!(running[0]["backend_uid"], stored["metadata"]["uid"]);
        // What the winner created is all there, attached to its Job.
        let secret = s
            .object("default", "secret", &format!("{job}-creds"))
            .unwrap();
        assert_eq!(
            secret["metadata"]["ownerReferences"][0]["uid"],
            stored["metadata"]["uid"]
        );
        for id in s.record_ids() {
            let record = s.record(&id);
            let state = record["state"].as_str().unwrap();
            assert!(
                ["RUNNING", "FAILED"].contains(&state) || Some(id.as_str()) == old,
                "{record:#}"
            );
        }
        for run in runs {
            assert_no_leak(s, run, &[HF_TOKEN]);
        }
    };
    let s = Sandbox::new("fixtures/requests/valid/uuid-name.yaml");
    let runs = s.run_at_once(2, "healthy-cluster", &[HF_TOKEN], &["submit"]);
    check(&s, &runs, None);

    // The Job ended; two `--replace` at once.
    let s = Sandbox::new("fixtures/requests/valid/uuid-name.yaml");
    let complete = fs::read_to_string(
        Path::new(ROOT).join("fixtures/kubectl/scenarios/job-rtdetr-complete.json"),
    )
    .unwrap()
    .replace("rtdetr-train-4n", job);
    s.preload(&complete);
    let old = s.running_record(&format!("default/{job}"));
    let before = s.record(&old);
    let runs = s.run_at_once(2, "healthy-cluster", &[HF_TOKEN], &["submit", "--replace"]);
    check(&s, &runs, Some(&old));
    assert_eq!(s.record(&old), before);
    assert_ne!(
        s.object("default", "job", job).unwrap()["metadata"]["uid"],
        UID
    );
}

/// After `--replace`, the old record's Job is another object: `cancel --record OLD`, status and
/// logs say so and touch nothing; the new Job keeps running.
#[test]
fn a_record_whose_job_was_replaced_touches_nothing() {
    let job = "rtdetr-train-4n";
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    s.preload("job-rtdetr-complete.json");
    let old = s.running_record(&format!("default/{job}"));
    let run = s.run("healthy-cluster", &[], &["submit", "--replace"]);
    run.assert_code(0);
    let new_uid = s.object("default", "job", job).unwrap()["metadata"]["uid"].clone();
    for verb in ["cancel", "status", "logs"] {
        let run = s.run("job-waiting", &[], &[verb, "--record", &old]);
        run.assert_code(1);
        run.assert_stderr(&format!(
            "tao-k8s: the Job default/{job} is another object now (uid {}), not the one job \
             record {old} created (uid {UID}), which is gone: nothing was touched",
            new_uid.as_str().unwrap()
        ));
        assert_eq!(run.mutations(), Vec::<String>::new(), "{verb}");
        assert!(!run.lines().iter().any(|l| l.starts_with("logs")), "{verb}");
    }
    assert_eq!(
        s.object("default", "job", job).unwrap()["metadata"]["uid"],
        new_uid
    );
}

/// A record edited by hand to name `default/--all` (or anything that is not a namespace and
/// a name) is refused with its path before any kubectl call.
#[test]
fn a_record_with_a_bad_backend_ref_is_refused() {
    let s = Sandbox::new("fixtures/requests/valid/args-mode.yaml");
    let id = s.running_record("default/classification-evaluate");
    let path = s.path(&format!("state/records/{id}.json"));
    for bad in ["default/--all", "-n/x", "default/a b"] {
        let text = fs::read_to_string(&path)
            .unwrap()
            .replace("default/classification-evaluate", bad);
        let mut record: Value = serde_json::from_str(&text).unwrap();
        record["backend_ref"] = bad.into();
        fs::write(&path, serde_json::to_string_pretty(&record).unwrap()).unwrap();
        for verb in ["cancel", "status", "logs"] {
            let run = s.run("healthy-cluster", &[], &[verb, "--record", &id]);
            run.assert_code(1);
            run.assert_stderr(&format!("{} is not a valid record", path.display()));
            assert!(run.calls.is_empty(), "{verb} {bad}: {:#?}", run.lines());
        }
    }
}

/// Bytes of the service account's namespace file reach the terminal escaped: no escape
/// sequence clears the screen or writes a fake verdict.
#[test]
fn hostile_bytes_in_the_service_account_namespace_are_shown_escaped() {
    let s = Sandbox::new("fixtures/requests/valid/args-mode.yaml");
    let sa = s.path("serviceaccount");
    fs::create_dir(&sa).unwrap();
    fs::write(sa.join("token"), "FAKE.service-account.token").unwrap();
    fs::write(
        sa.join("namespace"),
        "\u{1b}[2J\u{1b}[Hpreflight passed\r\n",
    )
    .unwrap();
    let sa = sa.display().to_string();
    let env = [
        ("TAO_K8S_CONTEXT", ""),
        ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
        ("TAO_K8S_SERVICEACCOUNT_DIR", sa.as_str()),
    ];
    let run = s.run("healthy-cluster", &env, &["preflight"]);
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
    assert!(!run.stderr.contains('\r'), "{:?}", run.stderr);
    run.assert_stderr("(namespace \\u{1b}[2J\\u{1b}[Hpreflight passed\\r)");
}

/// What a job record keeps of a request has the record's limits, checked at render from the
/// same table: a bundle that renders can always open its record.
#[test]
fn a_results_dir_over_the_record_limit_is_refused_at_render() {
    let limit = tao_k8s::record::field_limit("results_dir");
    let dir = tempfile::tempdir().unwrap();
    let original =
        fs::read_to_string(Path::new(ROOT).join("fixtures/requests/valid/args-mode.yaml")).unwrap();
    for (len, code) in [(limit, 0), (limit + 1, 1)] {
        let results = format!("/results/{}", "r".repeat(len - "/results/".len()));
        assert_eq!(results.len(), len);
        let request = original.replace(
            "resultsDir: /results/eval",
            &format!("resultsDir: {results}"),
        );
        fs::write(dir.path().join("r.yaml"), &request).unwrap();
        let r = tao(
            &["render", dir.path().join("r.yaml").to_str().unwrap()],
            dir.path(),
        );
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(code), "{len}: {stderr}");
        if code == 1 {
            assert!(
                stderr.contains(&format!(
                    "`spec.resultsDir` is {len} bytes long, over the {limit} bytes a job record keeps"
                )),
                "{stderr}"
            );
        }
    }
}

/// TAO_K8S_NAMESPACE was applied when the bundle was rendered: another one at submit is
/// refused with both names, before any kubectl call, never silently ignored.
#[test]
fn another_namespace_in_the_environment_is_refused_with_both_names() {
    let s = Sandbox::new("fixtures/requests/valid/args-mode.yaml");
    for verb in ["preflight", "submit"] {
        let run = s.run(
            "healthy-cluster",
            &[("TAO_K8S_NAMESPACE", "team-b")],
            &[verb],
        );
        run.assert_code(1);
        run.assert_stderr(
            "tao-k8s: TAO_K8S_NAMESPACE is team-b, but the manifest was rendered for namespace vision",
        );
        assert!(run.calls.is_empty(), "{:#?}", run.lines());
    }
    let run = s.run(
        "healthy-cluster",
        &[("TAO_K8S_NAMESPACE", "vision")],
        &["preflight"],
    );
    run.assert_code(0);
}

/// A JobSet bundle (`render --target jobset`) on a cluster that runs JobSet: submit probes
/// (with a Job), creates the ConfigMap and the JobSet, attaches the ConfigMap to the JobSet,
/// stamps the record on the pods; status reads the JobSet and its pods by that record, and
/// closes the record when the JobSet completes; cancel deletes the JobSet and what the record
/// created, by uid.
#[test]
fn a_jobset_bundle_submits_reports_status_and_cancels() {
    let js = "rtdetr-train-4n";
    let s = Sandbox::rendered_with(
        "fixtures/requests/valid/multi-node-4-config.yaml",
        &["--target", "jobset"],
    );
    let env = fs::read_to_string(s.path("bundle/job.env")).unwrap();
    assert!(
        env.contains("workload='JobSet'")
            && env.contains(&format!("child_job='{js}-workers-0'"))
            && env.contains(&format!("child_service='{js}'"))
            && env.contains("service=''"),
        "{env}"
    );
    let first = s.run("jobset-cluster", &[], &["submit"]);
    first.assert_code(0);
    let attach = format!(
        "patch configmap {js}-spec --type=merge -p {{\"metadata\":{{\"annotations\":{{\"tao-k8s.io/job-uid\":\
         \"UID\"}},\"ownerReferences\":[{{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"name\":\
         \"{js}\",\"uid\":\"UID\"}}],\"uid\":\"UID\"}}}}"
    );
    assert_eq!(
        first.mutations(),
        [
            probe(js, false),
            vec![
                DRY_RUN.to_string(),
                create("configmap", &format!("{js}-spec")),
                create("jobset", js),
                attach,
            ]
        ]
        .concat()
    );
    let lines = first.lines();
    assert!(lines.iter().any(|l| l == "api-versions"), "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l == &format!("get jobsets.jobset.x-k8s.io {js} -o json --ignore-not-found")),
        "{lines:#?}"
    );
    let id = s.record_id();
    let record = s.record(&id);
    assert_eq!(record["state"], "RUNNING");
    assert_eq!(record["backend_ref"], format!("default/{js}"));
    let stored = s
        .object("default", "jobset", js)
        .expect("the JobSet was created");
    let pod = &stored["spec"]["replicatedJobs"][0]["template"]["spec"]["template"];
    assert_eq!(pod["metadata"]["labels"]["tao-k8s.io/job-record"], id);

    // A second submit while it runs is refused by the job gate, touching nothing.
    let again = s.run("jobset-cluster", &[], &["submit"]);
    again.assert_code(1);
    again.assert_stderr(&format!(
        "tao-k8s: gate job: refused: the JobSet default/{js} exists (active, created by job record {id}): \
         job.sh status shows it"
    ));
    assert_eq!(again.mutations(), Vec::<String>::new());
    assert_eq!(s.record_id(), id, "no record opened");

    // Running: the JobSet's pods, found by the record.
    let run = s.run("jobset-cluster", &[], &["status"]);
    run.assert_code(0);
    assert!(
        run.stdout.starts_with(&format!(
            "JobSet default/{js}: running (restarts 0; pods active 4, succeeded 0, failed 0)\n  \
             index 0 {js}-workers-0-0-x7k2p: Running on gpu-node-1\n"
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.lines().iter().any(|l| l
            == &format!(
                "get pods -l tao-k8s.io/job-record={id},jobset.sigs.k8s.io/jobset-name={js} -o json"
            )),
        "{:#?}",
        run.lines()
    );
    assert_eq!(run.mutations(), Vec::<String>::new());

    // Cancelled: the JobSet first (its Jobs, pods and Service go with it), then the ConfigMap.
    let run = s.run("jobset-cluster", &[], &["cancel"]);
    run.assert_code(0);
    assert_eq!(
        run.mutations(),
        [
            format!(
                "delete --raw /apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets/{js} -f $TMP/deletes/delete-0.json"
            ),
            delete("configmap", &format!("{js}-spec"), "deletes", 1),
        ]
    );
    assert!(s.object("default", "jobset", js).is_none());
    assert_eq!(s.record(&id)["state"], "CANCELED");

    // Completed: the record ends SUCCEEDED.
    s.empty_cluster();
    let second = s.run("jobset-cluster", &[], &["submit"]);
    second.assert_code(0);
    let id = s.record_id();
    let mut done = s.object("default", "jobset", js).unwrap();
    done["status"] = serde_json::json!({"restarts": 1, "conditions": [
        {"type": "Completed", "status": "True", "reason": "AllJobsCompleted", "message": "jobset completed successfully"}]});
    s.preload(&done.to_string());
    let run = s.run("jobset-cluster", &[], &["status"]);
    run.assert_code(0);
    assert!(
        run.stdout
            .starts_with(&format!("JobSet default/{js}: Complete (restarts 1;")),
        "{}",
        run.stdout
    );
    assert_eq!(
        states(&s.record(&id)),
        ["OPEN", "SUBMITTED", "RUNNING", "SUCCEEDED"]
    );
}

/// Without JobSet on the cluster, preflight says so and what to do, before anything; a
/// Service of the JobSet's name that no JobSet of that name made (another team's) refuses
/// the submit, since the JobSet would take it for its pods' names.
#[test]
fn a_jobset_bundle_needs_jobset_and_its_names_free() {
    let js = "rtdetr-train-4n";
    let s = Sandbox::rendered_with(
        "fixtures/requests/valid/multi-node-4-config.yaml",
        &["--target", "jobset"],
    );
    let run = s.run("jobset-missing", &[], &["preflight"]);
    run.assert_code(1);
    run.assert_stderr(
        "MISSING: the bundle is a JobSet (render --target jobset), but the cluster does not serve jobset.x-k8s.io/v1alpha2",
    );
    let run = s.run("jobset-missing", &[], &["submit"]);
    run.assert_code(1);
    assert_eq!(run.mutations(), Vec::<String>::new());

    s.preload(&format!(
        r#"{{"apiVersion": "v1", "kind": "Service", "metadata": {{"name": "{js}", "namespace": "default", "uid": "0a1b2c3d-0000-4000-8000-000000000001"}}, "spec": {{"clusterIP": "None"}}}}"#
    ));
    let run = s.run("jobset-cluster", &[], &["submit"]);
    run.assert_code(1);
    run.assert_stderr(&format!(
        "a service {js} exists that the JobSet {js} did not create"
    ));
    assert_eq!(run.mutations(), Vec::<String>::new());
    assert!(s.object("default", "service", js).is_some(), "untouched");

    // The same Service, made by a JobSet of this name (one that ended): no refusal from it.
    s.preload(&format!(
        r#"{{"apiVersion": "v1", "kind": "Service", "metadata": {{"name": "{js}", "namespace": "default", "uid": "0a1b2c3d-0000-4000-8000-000000000001", "ownerReferences": [{{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "{js}", "uid": "0a1b2c3d-0000-4000-8000-000000000002"}}]}}, "spec": {{"clusterIP": "None"}}}}"#
    ));
    let run = s.run("jobset-cluster", &[], &["preflight"]);
    run.assert_code(0);
}

// ---------------------------------------------------------------------------------------------
// logs kept beyond the pods

/// The bundle's manifest rendered from its request with `spec.logs: {keep: true}` added: the
/// main container is told the log directory (`<results_dir>/logs`) and its job record, and a
/// tier C uploader keeps the logs too.
fn keep_logs(s: &Sandbox, results_dir: &str) {
    let request = Path::new(ROOT).join(&s.request);
    let text = fs::read_to_string(&request).unwrap();
    assert!(
        text.contains("\nspec:\n") && !text.contains("\n  logs:"),
        "{}",
        s.request
    );
    let kept = s.path("kept-request.yaml");
    fs::write(
        &kept,
        format!("{}\n  logs:\n    keep: true\n", text.trim_end()),
    )
    .unwrap();
    let folder = request.parent().unwrap().to_str().unwrap();
    let mut args = vec!["render", kept.to_str().unwrap(), "--spec-root", folder];
    args.extend(s.options.iter().map(String::as_str));
    let r = tao(&args, &s.path("state"));
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let manifest = String::from_utf8(r.stdout).unwrap();
    assert!(
        manifest.contains(&format!("value: \"{results_dir}/logs\"")),
        "the log directory is {results_dir}/logs"
    );
    assert!(manifest.contains("fieldPath: \"metadata.labels['tao-k8s.io/job-record']\""));
    fs::write(s.path("bundle/manifest.yaml"), manifest).unwrap();
}

/// `record mark ID STATE`, as `job.sh status` closes a record.
fn mark(s: &Sandbox, id: &str, state: &str) {
    let r = tao(
        &["record", "mark", id, state, "--source", "driver"],
        &s.path("state"),
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
}

/// The reader Pod a `logs` run read: `<job>-logs-<8 hex>`, its own name.
fn reader_in(run: &Run, job: &str) -> String {
    let reader = run
        .lines()
        .iter()
        .find_map(|l| l.strip_prefix("logs pod/").map(str::to_string))
        .expect("a reader Pod's log was read");
    let hex = reader
        .strip_prefix(&format!("{job}-logs-"))
        .unwrap_or_default();
    assert!(
        hex.len() == 8 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "{reader}"
    );
    reader
}

/// The Job rtdetr-train-4n ended and its TTL deleted it, pods and all. Its logs are on the
/// PVC of resultsDir: a reader Pod mounts it read-only where the Job's pods did, prints them,
/// and is deleted by its uid; the record, which had ended, is unchanged.
#[test]
fn logs_of_a_deleted_job_are_read_from_its_volume_by_a_reader_pod() {
    let job = "rtdetr-train-4n";
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    keep_logs(&s, "/results/rtdetr");
    let id = s.running_record(&format!("default/{job}"));
    mark(&s, &id, "SUCCEEDED");
    let scenario = s.scenario(
        "kept-logs",
        &format!(
            "when logs pod/{job}-logs-*\n  out ==> rank-0.log <==\n  out epoch 72/72: loss 0.101\n  \
             out ==> rank-1.log <==\n  out epoch 72/72: loss 0.102\n"
        ),
    );
    let deleted = s.path("deleted");
    fs::create_dir(&deleted).unwrap();
    let env = [("FAKE_KUBECTL_DELETED", deleted.to_str().unwrap())];
    let run = s.run(&scenario, &env, &["logs", "--record", &id]);
    run.assert_code(0);
    let reader = reader_in(&run, job);
    assert_eq!(
        run.stdout,
        "==> rank-0.log <==\nepoch 72/72: loss 0.101\n==> rank-1.log <==\nepoch 72/72: loss 0.102\n"
    );
    run.assert_stderr(&format!(
        "tao-k8s: the Job default/{job} cannot be read (deleted by job.sh cancel, or by its TTL \
         after it ended?): reading the kept logs of job record {id} from /results/rtdetr/logs/{id} \
         on volume results (PersistentVolumeClaim tao-results)"
    ));
    run.assert_scoped("default");
    assert_eq!(
        run.lines(),
        [
            format!("get job {job} -o json --ignore-not-found"),
            "auth can-i create pods".to_string(),
            "auth can-i delete pods".to_string(),
            format!("create -f $TMP/logs/objects/pod-{reader}.json -o jsonpath=…"),
            format!("get pod {reader} -o jsonpath=… --ignore-not-found"),
            format!("logs pod/{reader}"),
            format!(
                "delete --raw /api/v1/namespaces/default/pods/{reader} -f $TMP/logs/deletes/delete-0.json"
            ),
        ]
    );
    run.assert_created_from_private_files();

    // The reader Pod as it was created: where the Job's pods ran, the one volume that holds
    // the logs, read-only, and every value an argument of the constant script.
    let text = fs::read_to_string(deleted.join(format!("default-pod-{reader}.json"))).unwrap();
    let pod: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(pod["metadata"]["labels"]["tao-k8s.io/job-record"], id);
    assert_eq!(pod["metadata"]["labels"]["tao-k8s.io/bundle"], job);
    assert_eq!(
        pod["metadata"]["annotations"]["tao-k8s.io/bundle"],
        format!("default/{job}")
    );
    let spec = &pod["spec"];
    assert_eq!(spec["restartPolicy"], "Never");
    assert_eq!(spec["activeDeadlineSeconds"], 300);
    assert_eq!(
        spec["volumes"],
        serde_json::json!([{"name": "results",
            "persistentVolumeClaim": {"claimName": "tao-results", "readOnly": true}}])
    );
    let container = &spec["containers"][0];
    assert_eq!(
        container["volumeMounts"],
        serde_json::json!([{"name": "results", "mountPath": "/results", "readOnly": true}])
    );
    assert_eq!(
        container["image"],
        "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt"
    );
    let command: Vec<&str> = container["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(command[..2], ["/bin/sh", "-c"]);
    assert_eq!(
        command[3..],
        [
            reader.as_str(),
            &format!("/results/rtdetr/logs/{id}"),
            "",
            ""
        ]
    );
    let manifest = fs::read_to_string(s.path("bundle/manifest.yaml")).unwrap();
    let tolerations = &spec["tolerations"];
    assert!(
        tolerations.as_array().is_some_and(|t| !t.is_empty())
            && manifest.contains(&serde_json::to_string_pretty(&tolerations[0]["key"]).unwrap()),
        "{tolerations}"
    );
    assert!(
        container["resources"]["limits"]
            .get("nvidia.com/gpu")
            .is_none()
    );

    // Deleted by its uid, and off the record again; the record keeps its end.
    assert!(s.object("default", "pod", &reader).is_none());
    let record = s.record(&id);
    assert_eq!(record["state"], "SUCCEEDED");
    assert!(
        !record["objects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["kind"] == "Pod"),
        "{record}"
    );
    let left: Vec<_> = fs::read_dir(&run.tmp).unwrap().collect();
    assert!(left.is_empty(), "the script left {left:?} in TMPDIR");

    // One rank, its last lines: the reader's arguments.
    let run = s.run(
        &scenario,
        &env,
        &["logs", "--record", &id, "--index", "1", "--tail", "20"],
    );
    run.assert_code(0);
    // Another reader, another name: two `logs` of one record at once do not collide.
    let second = reader_in(&run, job);
    assert_ne!(second, reader);
    let text = fs::read_to_string(deleted.join(format!("default-pod-{second}.json"))).unwrap();
    let pod: Value = serde_json::from_str(&text).unwrap();
    let command = pod["spec"]["containers"][0]["command"].as_array().unwrap();
    assert_eq!(command[5..], ["1", "20"]);
}

/// The Job is there but its pods are gone (a node was removed, or the pod garbage collector
/// took them): the kept logs, as for a deleted Job. A reader that finds nothing fails the run,
/// which still deletes it.
#[test]
fn logs_of_a_job_without_pods_are_read_from_its_volume_and_the_reader_always_goes() {
    let job = "rtdetr-train-4n";
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    keep_logs(&s, "/results/rtdetr");
    s.preload("job-rtdetr-complete.json");
    let id = s.running_record(&format!("default/{job}"));
    let scenario = s.scenario(
        "no-pods",
        &format!(
            "when get pods -l batch.kubernetes.io/controller-uid=* -o name\n\
             when logs pod/{job}-logs-*\n  out tao-k8s: no log of rank 3 was kept under /results/rtdetr/logs/{id}\n"
        ),
    );
    let run = s.run(&scenario, &[], &["logs", "--record", &id, "--index", "3"]);
    run.assert_code(0);
    run.assert_stderr(&format!(
        "tao-k8s: the pods of index 3 of the Job default/{job} are gone: reading the kept logs of \
         job record {id} from /results/rtdetr/logs/{id}"
    ));

    // The reader failed: what it said goes to stderr, and it is deleted all the same.
    let run = s.run(
        &scenario,
        &[("FAKE_KUBECTL_POD_PHASE", "Failed")],
        &["logs", "--record", &id, "--index", "3"],
    );
    run.assert_code(1);
    let reader = reader_in(&run, job);
    assert_eq!(run.stdout, "");
    run.assert_stderr(&format!(
        "tao-k8s: no log of rank 3 was kept under /results/rtdetr/logs/{id}"
    ));
    run.assert_stderr(&format!(
        "tao-k8s: the reader Pod {reader} read no kept log (above)"
    ));
    assert_eq!(
        run.mutations(),
        [
            format!("create -f $TMP/logs/objects/pod-{reader}.json -o jsonpath=…"),
            format!(
                "delete --raw /api/v1/namespaces/default/pods/{reader} -f $TMP/rollback/delete-0.json"
            ),
        ]
    );
    assert!(s.object("default", "pod", &reader).is_none());
    assert_eq!(s.record(&id)["objects"].as_array().unwrap().len(), 1);
    assert_eq!(s.record(&id)["state"], "RUNNING");
}

/// A pod whose node is gone is still listed, but kubectl cannot read its log: the kept logs
/// are read instead; without them, the failure says how to keep them.
#[test]
fn logs_that_kubectl_cannot_read_come_from_where_they_were_kept() {
    let job = "rtdetr-train-4n";
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    s.preload("job-rtdetr-complete.json");
    let id = s.running_record(&format!("default/{job}"));
    let scenario = s.scenario(
        "node-gone",
        &format!(
            "when get pods -l batch.kubernetes.io/controller-uid=* -o name\n  out pod/{job}-1-b8d4c\n\
             when logs -l batch.kubernetes.io/controller-uid=*\n  \
             err Error from server: Get \"https://10.0.0.7:10250/containerLogs/default/{job}-1-b8d4c/tao\": dial tcp 10.0.0.7:10250: connect: no route to host\n  exit 1\n\
             when logs pod/{job}-logs-*\n  out ==> rank-1.log <==\n  out epoch 9/72: loss 0.4\n"
        ),
    );
    let run = s.run(&scenario, &[], &["logs", "--record", &id, "--index", "1"]);
    run.assert_code(1);
    run.assert_stderr("with spec.logs.keep: true in the request, the logs outlive the pods");

    keep_logs(&s, "/results/rtdetr");
    let run = s.run(&scenario, &[], &["logs", "--record", &id, "--index", "1"]);
    run.assert_code(0);
    assert_eq!(run.stdout, "==> rank-1.log <==\nepoch 9/72: loss 0.4\n");
    run.assert_stderr(&format!(
        "tao-k8s: kubectl cannot read the logs of the pods of index 1 of the Job default/{job} \
         (above; their node may be gone): reading the kept logs of job record {id}"
    ));
}

/// While the pods are there, `logs` reads them as it always did, kept logs or not.
#[test]
fn logs_of_pods_that_exist_come_from_the_pods() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    keep_logs(&s, "/results/rtdetr");
    s.preload("job-rtdetr-complete.json");
    let id = s.running_record("default/rtdetr-train-4n");
    let run = s.run("job-complete", &[], &["logs", "--record", &id]);
    run.assert_code(0);
    assert_eq!(
        run.lines(),
        [
            "get job rtdetr-train-4n -o json --ignore-not-found",
            "get pods -l batch.kubernetes.io/controller-uid=UID -o name",
            "logs -l batch.kubernetes.io/controller-uid=UID --prefix --tail -1 -c tao \
             --max-log-requests 9"
        ]
    );
    assert_eq!(
        run.stdout,
        "[pod/rtdetr-train-4n-0-x7k2p/tao] epoch 72/72: loss 0.101\n"
    );
    assert!(!run.stderr.contains("kept logs"), "{}", run.stderr);
}

/// A bundle that keeps no logs: once the pods are gone there is nothing to read, and `logs`
/// says how to keep them next time; nothing is created.
#[test]
fn logs_that_were_not_kept_fail_with_how_to_keep_them() {
    let job = "rtdetr-train-4n";
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    let id = s.running_record(&format!("default/{job}"));
    let run = s.run("healthy-cluster", &[], &["logs", "--record", &id]);
    run.assert_code(1);
    run.assert_stderr(&format!(
        "tao-k8s: the Job default/{job} cannot be read (deleted by job.sh cancel, or by its TTL \
         after it ended?); its pods keep no logs (spec.logs.keep is not set): with \
         spec.logs.keep: true in the request, the logs outlive the pods"
    ));
    assert_eq!(
        run.lines(),
        [format!("get job {job} -o json --ignore-not-found")]
    );

    s.preload("job-rtdetr-complete.json");
    let scenario = s.scenario(
        "no-pods",
        "when get pods -l batch.kubernetes.io/controller-uid=* -o name\n",
    );
    let run = s.run(&scenario, &[], &["logs", "--record", &id]);
    run.assert_code(1);
    run.assert_stderr(&format!(
        "tao-k8s: the pods of the Job default/{job} are gone; its pods keep no logs"
    ));
    assert_eq!(run.mutations(), Vec::<String>::new());
}

/// Without the rights to create and delete pods, the reader is not attempted.
#[test]
fn a_reader_pod_needs_the_rights_to_create_and_delete_pods() {
    let s = Sandbox::new("fixtures/requests/valid/multi-node-4-config.yaml");
    keep_logs(&s, "/results/rtdetr");
    let id = s.running_record("default/rtdetr-train-4n");
    let scenario = s.scenario("no-pod-rights", "when auth can-i delete pods\n  out no\n");
    let run = s.run(&scenario, &[], &["logs", "--record", &id]);
    run.assert_code(1);
    run.assert_stderr("tao-k8s: not allowed to delete pods in namespace default");
    assert_eq!(run.mutations(), Vec::<String>::new());
}

/// A fake `aws` in `bin/`: it logs its argv (one line per call) and whether it saw the
/// submitter's S3 keys in its environment, lists two rank logs and prints a log per copy.
fn fake_aws(s: &Sandbox) -> PathBuf {
    let log = s.path("aws.log");
    let script = format!(
        "#!/usr/bin/env bash\n\
         printf '%s\\n' \"$*\" >>'{log}'\n\
         [ -z \"${{AWS_SECRET_ACCESS_KEY:-}}\" ] || echo 'env: AWS_SECRET_ACCESS_KEY set' >>'{log}'\n\
         case \" $* \" in\n\
         \x20 *' s3 ls '*) printf '2026-12-02 08:31:07        120 rank-1.log\\n2026-12-02 08:31:07        99 rank-0.log\\n' ;;\n\
         \x20 *' s3 cp '*) for a in \"$@\"; do case $a in s3://*) uri=$a ;; esac; done\n\
         \x20   printf 'first line of %s\\nlast line of %s\\n' \"${{uri##*/}}\" \"${{uri##*/}}\" ;;\n\
         \x20 *) exit 2 ;;\n\
         esac\n",
        log = log.display()
    );
    let path = s.path("bin/aws");
    fs::write(&path, script).unwrap();
    let mut perms = fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    fs::set_permissions(&path, perms).unwrap();
    log
}

/// Tier C: the logs went to S3 with the results. Once the Job is gone, they are read there with
/// the submitter's own aws CLI and environment (S3_ENDPOINT_URL its --endpoint-url); no key is
/// on a command line, and nothing is created in the cluster.
#[test]
fn tier_c_logs_of_a_deleted_job_are_read_from_s3_with_the_local_aws() {
    let job = "yolo-train-s3";
    let s = Sandbox::new("fixtures/requests/valid/tier-c.yaml");
    keep_logs(&s, "/results");
    let log = fake_aws(&s);
    let id = s.running_record(&format!("default/{job}"));
    let prefix = format!("s3://tao-bucket/runs/{job}/logs/{id}/");
    let endpoint = ("S3_ENDPOINT_URL", "https://minio.lab.internal:9000");
    let credentials = [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY];
    let env = [credentials[0], credentials[1], endpoint];
    let run = s.run("healthy-cluster", &env, &["logs", "--record", &id]);
    run.assert_code(0);
    run.assert_stderr(&format!(
        "tao-k8s: the Job default/{job} cannot be read (deleted by job.sh cancel, or by its TTL \
         after it ended?): reading the kept logs of job record {id} from {prefix}"
    ));
    assert_eq!(
        run.stdout,
        "==> rank-0.log <==\nfirst line of rank-0.log\nlast line of rank-0.log\n\
         ==> rank-1.log <==\nfirst line of rank-1.log\nlast line of rank-1.log\n"
    );
    let ep = "--endpoint-url https://minio.lab.internal:9000";
    assert_eq!(
        fs::read_to_string(&log).unwrap(),
        format!(
            "{ep} s3 ls {prefix}\nenv: AWS_SECRET_ACCESS_KEY set\n\
             {ep} s3 cp {prefix}rank-0.log -\nenv: AWS_SECRET_ACCESS_KEY set\n\
             {ep} s3 cp {prefix}rank-1.log -\nenv: AWS_SECRET_ACCESS_KEY set\n"
        )
    );
    assert_eq!(
        run.lines(),
        [format!("get job {job} -o json --ignore-not-found")]
    );
    assert_no_leak(&s, &run, &credentials);
    let aws_log = fs::read_to_string(&log).unwrap();
    for (name, value) in credentials {
        assert!(!aws_log.contains(value), "{name} on aws's command line");
    }

    // One rank, its last line; without S3_ENDPOINT_URL, no --endpoint-url.
    fs::remove_file(&log).unwrap();
    let run = s.run(
        "healthy-cluster",
        &credentials,
        &["logs", "--record", &id, "--index", "1", "--tail", "1"],
    );
    run.assert_code(0);
    assert_eq!(run.stdout, "==> rank-1.log <==\nlast line of rank-1.log\n");
    assert_eq!(
        fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with("env:"))
            .collect::<Vec<_>>(),
        [
            format!("s3 ls {prefix}"),
            format!("s3 cp {prefix}rank-1.log -")
        ]
    );

    // A rank that left no log.
    let run = s.run(
        "healthy-cluster",
        &[],
        &["logs", "--record", &id, "--index", "4"],
    );
    run.assert_code(1);
    run.assert_stderr(&format!(
        "tao-k8s: no log of rank 4 was kept under {prefix}"
    ));

    // Without aws: where the logs are, to fetch them another way.
    fs::remove_file(s.path("bin/aws")).unwrap();
    for dir in ["/usr/bin", "/bin"] {
        assert!(!Path::new(dir).join("aws").exists(), "{dir} has an aws");
    }
    let path = path_without_tao_k8s(&s);
    let run = s.run(
        "healthy-cluster",
        &[("PATH", &path)],
        &["logs", "--record", &id],
    );
    run.assert_code(1);
    run.assert_stderr(&format!(
        "tao-k8s: MISSING: aws not found on PATH: the kept logs of job record {id} are in {prefix}"
    ));
}
