//! The pod-side scripts run for real with `sh`, exactly as they are shipped (comments and blank
//! lines dropped by `pod_script`), with fakes on PATH: the config check of the initContainer,
//! and the uploader, stopped by SIGTERM as a native sidecar or watching a process table.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use sha2::{Digest, Sha256};

/// The script as a pod gets it.
fn shipped(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name);
    tao_k8s::plan::pod_script(&std::fs::read_to_string(path).unwrap())
}

fn sh(name: &str, argv: &[&str]) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(shipped(name)).args(argv);
    cmd
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn sha256(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, PermissionsExt::from_mode(0o755)).unwrap();
}

#[test]
fn every_script_parses_as_shipped() {
    for name in [
        "verify-config.sh",
        "upload-results.sh",
        "wait-for-rendezvous.sh",
        "run-action.sh",
        "read-logs.sh",
    ] {
        let script = shipped(name);
        assert!(!script.contains("\n#"), "{name}");
        // The kubelet expands `$(NAME)` in a container's command, and turns `$$` into `$`.
        assert!(
            !script.contains("$$"),
            "{name} holds `$$`, which the kubelet makes `$`"
        );
        let out = Command::new("sh")
            .args(["-n", "-c", &script])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", stderr(&out));
    }
}

// ---- verify-config.sh ----

const SPEC: &str = "train:\n  num_epochs: 1\n  checkpoint_interval: 1\n";

/// A staged spec, read-only like a ConfigMap mount.
fn staged(dir: &Path) -> PathBuf {
    let src = dir.join("staged").join("spec.yaml");
    std::fs::create_dir(src.parent().unwrap()).unwrap();
    std::fs::write(&src, SPEC).unwrap();
    std::fs::set_permissions(&src, PermissionsExt::from_mode(0o444)).unwrap();
    src
}

fn verify(src: &Path, want: &str) -> Output {
    sh("verify-config.sh", &[])
        .env("TAO_K8S_CONFIG_SRC", src)
        .env("TAO_K8S_CONFIG_SHA256", want)
        .output()
        .unwrap()
}

#[test]
fn the_config_check_passes_on_the_staged_digest() {
    let dir = tempfile::tempdir().unwrap();
    let src = staged(dir.path());
    let want = sha256(SPEC.as_bytes());
    let out = verify(&src, &want);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("tao-k8s: config spec verified (sha256 {want})\n")
    );
    assert_eq!(stderr(&out), "");
}

#[test]
fn the_config_check_leaves_the_read_only_spec_as_it_is_and_copies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let src = staged(dir.path());
    let want = sha256(SPEC.as_bytes());
    let out = verify(&src, &want);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&src).unwrap(), SPEC);
    let mode = std::fs::metadata(&src).unwrap().permissions().mode();
    assert_eq!(mode & 0o222, 0, "still read-only: {mode:o}");
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files, ["staged"], "nothing written beside the spec");
}

#[test]
fn the_config_check_fails_naming_both_digests_when_the_spec_changed() {
    let dir = tempfile::tempdir().unwrap();
    let src = staged(dir.path());
    let want = sha256(b"train:\n  num_epochs: 2\n");
    let got = sha256(SPEC.as_bytes());
    let out = verify(&src, &want);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "tao-k8s: the config spec {} has sha256 {got}, expected {want}: it changed after it was staged\n",
            src.display()
        )
    );
    assert_eq!(stdout(&out), "");
}

#[test]
fn the_config_check_fails_clearly_on_a_missing_spec_or_a_malformed_digest() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("staged").join("spec.yaml");
    let want = sha256(SPEC.as_bytes());
    let out = verify(&missing, &want);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "tao-k8s: the config spec {} does not exist: is the ConfigMap holding it mounted there?\n",
            missing.display()
        )
    );

    let src = staged(dir.path());
    for bad in ["", "not-a-digest", &want[..63], &want.to_uppercase()] {
        let out = verify(&src, bad);
        assert_eq!(out.status.code(), Some(1), "{bad:?}");
        assert!(stderr(&out).starts_with("tao-k8s: "), "{}", stderr(&out));
    }
}

#[test]
fn the_config_check_falls_back_to_python3_and_names_both_tools_when_neither_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let src = staged(dir.path());
    let want = sha256(SPEC.as_bytes());
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let run = |want: &str| {
        sh("verify-config.sh", &[])
            .env("PATH", &bin)
            .env("TAO_K8S_CONFIG_SRC", &src)
            .env("TAO_K8S_CONFIG_SHA256", want)
            .output()
            .unwrap()
    };
    // `sh` itself is found before PATH changes; the script sees an empty bin directory.
    let neither = Command::new("/bin/sh")
        .args(["-c", &shipped("verify-config.sh")])
        .env("PATH", &bin)
        .env("TAO_K8S_CONFIG_SRC", &src)
        .env("TAO_K8S_CONFIG_SHA256", &want)
        .output()
        .unwrap();
    assert_eq!(neither.status.code(), Some(1));
    assert_eq!(
        stderr(&neither),
        format!(
            "tao-k8s: cannot check the config spec {}: the image has neither sha256sum nor python3\n",
            src.display()
        )
    );

    // The real interpreter, not a version manager's shim that needs more of PATH.
    let Ok(found) = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
    else {
        return;
    };
    let python = String::from_utf8(found.stdout).unwrap();
    std::os::unix::fs::symlink(python.trim(), bin.join("python3")).unwrap();
    std::os::unix::fs::symlink("/bin/sh", bin.join("sh")).unwrap();
    let ok = run(&want);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(stdout(&ok).contains(&format!("verified (sha256 {want})")));
    let bad = run(&sha256(b"other"));
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains(&format!("has sha256 {want}, expected")));
}

// ---- upload-results.sh ----

/// A hang guard for a script that should have printed or ended long before: never a speed goal.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// The uploader's own cgroup, and the action's (another container's) in the fake process table.
const OWN_CGROUP: &str = "0::/\n";
const ACTION_CGROUP: &str = "0::/../cri-containerd-action.scope\n";

struct Pod {
    dir: tempfile::TempDir,
}

impl Pod {
    /// A results directory with one file, a fake `aws` that logs its argv, one argument a line,
    /// and exits with FAKE_AWS_EXIT, and a process table of a pod that shares one process
    /// namespace: its pause process (PID 1) and the uploader itself.
    fn new() -> Pod {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["bin", "results", "proc"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("results").join("status.json"), "{}\n").unwrap();
        executable(
            &dir.path().join("bin").join("aws"),
            "#!/bin/sh\nprintf '%s\\n' \"$@\" >> \"$FAKE_AWS_LOG\"\nexit \"${FAKE_AWS_EXIT:-0}\"\n",
        );
        let pod = Pod { dir };
        pod.process("self", OWN_CGROUP);
        pod.process("1", "0::/../cri-containerd-pause.scope\n");
        pod.process("7", OWN_CGROUP);
        pod
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// A process of the fake process table, in `cgroup`.
    fn process(&self, pid: &str, cgroup: &str) {
        let dir = self.path("proc").join(pid);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("cgroup"), cgroup).unwrap();
    }

    /// A process gone, as the kernel removes it: all at once, leaving nothing behind.
    fn end(&self, pid: &str) {
        std::fs::remove_dir_all(self.path("proc").join(pid)).unwrap();
    }

    /// The uploader of a pod without native sidecars that finds no action process and gives up
    /// looking at once: the quickest way to its upload.
    fn upload(&self, env: &[(&str, &str)]) -> Command {
        let path = format!(
            "{}:{}",
            self.path("bin").display(),
            std::env::var("PATH").unwrap()
        );
        let mut cmd = sh("upload-results.sh", &[]);
        cmd.env("PATH", path)
            .env("FAKE_AWS_LOG", self.path("aws.log"))
            .env("TAO_K8S_UPLOAD_ON", "main-exit")
            .env("TAO_K8S_MAIN_START_SECONDS", "0")
            .env("TAO_K8S_PROC", self.path("proc"))
            .env("TAO_K8S_RESULTS_DIR", self.path("results"))
            .env("TAO_K8S_RESULTS_URI", "s3://fake-bucket/runs/42/")
            .env("TAO_K8S_POLL_SECONDS", "0.05")
            .env_remove("NODE_RANK")
            .env_remove("TAO_K8S_UPLOAD_PER_RANK")
            .env_remove("FAKE_AWS_EXIT");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }

    /// The argv of every `aws` call, each call ending with its destination.
    fn aws_calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("aws.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn expected_call(&self, dest: &str) -> Vec<String> {
        let results = self.path("results").display().to_string();
        ["s3", "cp", "--recursive", "--no-progress", &results, dest]
            .map(str::to_owned)
            .to_vec()
    }

    fn uploaded_line(&self) -> String {
        format!(
            "tao-k8s: uploaded {} to s3://fake-bucket/runs/42/",
            self.path("results").display()
        )
    }
}

/// An uploader running in the background, its stdout read line by line.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    fn start(mut cmd: Command) -> Running {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Running {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits until the uploader has printed `line`.
    fn expect(&mut self, line: &str) {
        while !self.seen.iter().any(|l| l == line) {
            match self.lines.recv_timeout(HANG_GUARD) {
                Ok(l) => self.seen.push(l),
                Err(e) => panic!("no line {line:?} ({e}); saw {:?}", self.seen),
            }
        }
    }

    fn signal(&self, name: &str) {
        let pid = self.child.id().to_string();
        let status = Command::new("kill")
            .args(["-s", name, &pid])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the end: the exit code, every stdout line and stderr.
    fn finish(mut self) -> (Option<i32>, Vec<String>, String) {
        let (tx, rx) = mpsc::channel();
        let mut child = self.child;
        std::thread::spawn(move || {
            let status = child.wait();
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                std::io::Read::read_to_string(&mut e, &mut err).ok();
            }
            tx.send((status, err)).ok();
        });
        let (status, err) = rx
            .recv_timeout(HANG_GUARD)
            .expect("the uploader never ended");
        self.seen.extend(self.lines.iter());
        (status.unwrap().code(), self.seen, err)
    }
}

#[test]
fn as_a_native_sidecar_it_uploads_on_sigterm_and_not_before() {
    let pod = Pod::new();
    let mut up = Running::start(pod.upload(&[("TAO_K8S_UPLOAD_ON", "sigterm")]));
    up.expect("tao-k8s: waiting for the action's container to end");
    assert!(
        pod.aws_calls().is_empty(),
        "nothing uploaded before SIGTERM"
    );
    // The kubelet's SIGTERM once the action's container ended (an OOM kill included).
    up.signal("TERM");
    let (code, lines, err) = up.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err, "");
    assert_eq!(
        pod.aws_calls(),
        pod.expected_call("s3://fake-bucket/runs/42/")
    );
    assert_eq!(
        lines,
        [
            "tao-k8s: waiting for the action's container to end".to_string(),
            "tao-k8s: stopped by the kubelet: the action's container ended, or the pod is being deleted".to_string(),
            pod.uploaded_line(),
        ]
    );
}

#[test]
fn as_a_native_sidecar_a_failed_upload_exits_1() {
    let pod = Pod::new();
    let mut up =
        Running::start(pod.upload(&[("TAO_K8S_UPLOAD_ON", "sigterm"), ("FAKE_AWS_EXIT", "1")]));
    up.expect("tao-k8s: waiting for the action's container to end");
    up.signal("TERM");
    let (code, _, err) = up.finish();
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        format!(
            "tao-k8s: uploading {} to s3://fake-bucket/runs/42/ failed\n",
            pod.path("results").display()
        )
    );
}

/// The action's container OOM-killed as a whole: its processes vanish and it writes nothing.
#[test]
fn in_a_shared_process_namespace_it_uploads_once_the_action_processes_are_gone() {
    let pod = Pod::new();
    pod.process("42", ACTION_CGROUP);
    pod.process("43", ACTION_CGROUP);
    let mut up = Running::start(pod.upload(&[("TAO_K8S_MAIN_START_SECONDS", "300")]));
    up.expect("tao-k8s: the action is running; uploading once it ends");
    pod.end("43");
    std::fs::write(pod.path("results").join("partial.pth"), "weights\n").unwrap();
    pod.end("42");
    let (code, lines, err) = up.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        lines,
        [
            "tao-k8s: the action is running; uploading once it ends".to_string(),
            "tao-k8s: the action's container has ended".to_string(),
            pod.uploaded_line(),
        ]
    );
    assert_eq!(
        pod.aws_calls(),
        pod.expected_call("s3://fake-bucket/runs/42/")
    );
}

#[test]
fn in_a_shared_process_namespace_sigterm_uploads_what_the_running_action_wrote() {
    let pod = Pod::new();
    pod.process("42", ACTION_CGROUP);
    let mut up = Running::start(pod.upload(&[("TAO_K8S_MAIN_START_SECONDS", "300")]));
    up.expect("tao-k8s: the action is running; uploading once it ends");
    up.signal("TERM");
    let (code, lines, err) = up.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        lines[1..],
        [
            "tao-k8s: asked to stop: uploading what the action wrote so far".to_string(),
            pod.uploaded_line(),
        ]
    );
    assert_eq!(
        pod.aws_calls(),
        pod.expected_call("s3://fake-bucket/runs/42/")
    );
}

#[test]
fn in_a_shared_process_namespace_an_action_never_seen_is_taken_as_ended() {
    // Only the pause process and the uploader's own: the action ended before the uploader
    // looked, or never started.
    let pod = Pod::new();
    let out = pod.upload(&[]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "tao-k8s: no process of the action's container in 0s: it ended before it could be seen, or never started\n{}\n",
            pod.uploaded_line()
        )
    );
    assert_eq!(
        pod.aws_calls(),
        pod.expected_call("s3://fake-bucket/runs/42/")
    );
}

#[test]
fn in_a_shared_process_namespace_its_own_cgroup_must_be_readable() {
    let pod = Pod::new();
    pod.end("self");
    let out = pod.upload(&[]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "tao-k8s: cannot read {}/self/cgroup, so the action's processes cannot be told from this one's\n",
            pod.path("proc").display()
        )
    );
    assert!(pod.aws_calls().is_empty());
}

#[test]
fn rank_zero_uploads_with_the_exact_argv() {
    let pod = Pod::new();
    for rank in [Some("0"), None] {
        std::fs::remove_file(pod.path("aws.log")).ok();
        let env: &[(&str, &str)] = match rank {
            Some(r) => &[("NODE_RANK", r)],
            None => &[],
        };
        let out = pod.upload(env).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(
            pod.aws_calls(),
            pod.expected_call("s3://fake-bucket/runs/42/")
        );
        assert!(
            stdout(&out).ends_with(&format!("{}\n", pod.uploaded_line())),
            "{}",
            stdout(&out)
        );
    }
}

#[test]
fn other_ranks_skip_unless_every_rank_uploads_to_its_own_prefix() {
    let pod = Pod::new();
    let skip = pod.upload(&[("NODE_RANK", "1")]).output().unwrap();
    assert_eq!(skip.status.code(), Some(0), "{}", stderr(&skip));
    assert!(
        stdout(&skip).ends_with("tao-k8s: rank 1 does not upload results\n"),
        "{}",
        stdout(&skip)
    );
    assert!(pod.aws_calls().is_empty());

    // Without the trailing slash, the rank's prefix still lands below the URI.
    let own = pod
        .upload(&[
            ("NODE_RANK", "1"),
            ("TAO_K8S_UPLOAD_PER_RANK", "1"),
            ("TAO_K8S_RESULTS_URI", "s3://fake-bucket/runs/42"),
        ])
        .output()
        .unwrap();
    assert_eq!(own.status.code(), Some(0), "{}", stderr(&own));
    assert_eq!(
        pod.aws_calls(),
        pod.expected_call("s3://fake-bucket/runs/42/rank-1/")
    );
    assert!(stdout(&own).contains("to s3://fake-bucket/runs/42/rank-1/\n"));
}

#[test]
fn a_rank_that_does_not_upload_still_waits_for_sigterm_as_a_sidecar() {
    // A native sidecar that exits by itself is started again by the kubelet.
    let pod = Pod::new();
    let mut up =
        Running::start(pod.upload(&[("TAO_K8S_UPLOAD_ON", "sigterm"), ("NODE_RANK", "3")]));
    up.expect("tao-k8s: waiting for the action's container to end");
    up.signal("TERM");
    let (code, lines, err) = up.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        lines.last().map(String::as_str),
        Some("tao-k8s: rank 3 does not upload results")
    );
    assert!(pod.aws_calls().is_empty());
}

#[test]
fn a_failed_upload_fails_the_uploader() {
    let pod = Pod::new();
    let out = pod.upload(&[("FAKE_AWS_EXIT", "1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "tao-k8s: uploading {} to s3://fake-bucket/runs/42/ failed\n",
            pod.path("results").display()
        )
    );
    assert_eq!(
        pod.aws_calls(),
        pod.expected_call("s3://fake-bucket/runs/42/")
    );
}

#[test]
fn a_missing_results_dir_uploads_nothing_and_says_so_and_an_empty_one_uploads_nothing() {
    let pod = Pod::new();
    let missing = pod.path("never-created");
    let out = pod
        .upload(&[("TAO_K8S_RESULTS_DIR", &missing.to_string_lossy())])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(pod.aws_calls().is_empty());
    assert!(
        stdout(&out).ends_with(&format!(
            "tao-k8s: the results directory {} does not exist, so nothing was uploaded to s3://fake-bucket/runs/42/ (the action may have ended before creating it)\n",
            missing.display()
        )),
        "{}",
        stdout(&out)
    );

    std::fs::remove_file(pod.path("results").join("status.json")).unwrap();
    let empty = pod.upload(&[]).output().unwrap();
    assert_eq!(empty.status.code(), Some(0), "{}", stderr(&empty));
    assert_eq!(
        pod.aws_calls(),
        pod.expected_call("s3://fake-bucket/runs/42/")
    );
    assert!(stdout(&empty).contains("is empty"), "{}", stdout(&empty));
}

#[test]
fn the_uploader_rejects_bad_inputs_at_once() {
    let pod = Pod::new();
    for env in [
        [
            ("TAO_K8S_RESULTS_URI", "fake-bucket/runs/42/"),
            ("NODE_RANK", "0"),
        ],
        [
            ("TAO_K8S_RESULTS_URI", "s3://fake-bucket/runs/42/"),
            ("NODE_RANK", "one"),
        ],
        [("TAO_K8S_UPLOAD_ON", "exit-file"), ("NODE_RANK", "0")],
        [("TAO_K8S_MAIN_START_SECONDS", "5m"), ("NODE_RANK", "0")],
    ] {
        // An action process that never ends: these must not wait for it.
        pod.process("42", ACTION_CGROUP);
        let out = pod.upload(&env).output().unwrap();
        pod.end("42");
        assert_eq!(out.status.code(), Some(1), "{env:?}");
        assert!(stderr(&out).starts_with("tao-k8s: "), "{}", stderr(&out));
    }
    assert!(pod.aws_calls().is_empty());
}

// ---- run-action.sh ----

/// The wrapper with the action's argv, inputs from `env` only.
fn run_action(argv: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Command {
    let mut cmd = sh("run-action.sh", &["tao-k8s-run-action"]);
    cmd.args(argv);
    for name in [
        "TAO_K8S_LOG_DIR",
        "TAO_K8S_RECORD",
        "TAO_K8S_POD",
        "NODE_RANK",
        "TAO_K8S_CHECKPOINT_DIR",
        "TAO_K8S_CHECKPOINT_PATTERN",
        "TAO_K8S_RESUME_ARG",
        "TAO_K8S_RESUME_ENV",
    ] {
        cmd.env_remove(name);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

#[test]
fn a_kept_log_holds_what_the_container_log_shows_and_the_action_s_exit_code_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("results/logs");
    let env = [
        ("TAO_K8S_LOG_DIR", logs.as_os_str()),
        ("TAO_K8S_RECORD", os("tao-20261206-abc")),
        ("TAO_K8S_POD", os("dino-train-0-x7k2p")),
        ("NODE_RANK", os("1")),
        ("TMPDIR", dir.path().as_os_str()),
    ];
    let action = "echo epoch 1; echo 'Traceback: boom' >&2; exit 3";
    let out = run_action(&["sh", "-c", action], &env).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    // The container's log gets both streams (the runtime merges them too), nothing added.
    assert_eq!(stdout(&out), "epoch 1\nTraceback: boom\n");
    assert_eq!(stderr(&out), "");
    let kept = std::fs::read_to_string(logs.join("tao-20261206-abc/rank-1.log")).unwrap();
    let (header, rest) = kept.split_once('\n').unwrap();
    assert!(
        header.starts_with("== tao-k8s: pod dino-train-0-x7k2p started 20")
            && header.ends_with("Z =="),
        "{header}"
    );
    assert_eq!(rest, "epoch 1\nTraceback: boom\n");

    // A retried pod of the same rank appends after its own header.
    let out = run_action(&["sh", "-c", "echo epoch 2"], &env)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let kept = std::fs::read_to_string(logs.join("tao-20261206-abc/rank-1.log")).unwrap();
    assert_eq!(kept.matches("== tao-k8s: pod ").count(), 2, "{kept}");
    assert!(kept.ends_with("epoch 2\n"), "{kept}");
    assert!(
        !dir.path().join("tao-k8s-log-fifo").exists(),
        "the FIFO is removed"
    );
}

#[test]
fn the_action_s_argv_reaches_it_word_for_word() {
    let dir = tempfile::tempdir().unwrap();
    let words = ["a b", "$(id)", "x;y", "'q'", "*", ""];
    let mut argv = vec!["printf", "[%s]\n"];
    argv.extend(words);
    for logs in [false, true] {
        let log_dir = dir.path().join("logs");
        let mut env = vec![("TMPDIR", dir.path().as_os_str())];
        if logs {
            env.push(("TAO_K8S_LOG_DIR", log_dir.as_os_str()));
        }
        let out = run_action(&argv, &env).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let want: String = words.iter().map(|w| format!("[{w}]\n")).collect();
        assert_eq!(stdout(&out), want, "logs kept: {logs}");
    }
    // Without a job record the log still has a home.
    assert!(dir.path().join("logs/unrecorded/rank-0.log").is_file());
}

#[test]
fn a_retried_pod_resumes_from_the_newest_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("ckpt");
    std::fs::create_dir(&ckpt).unwrap();
    let show = [
        "sh",
        "-c",
        r#"printf '%s|' "$@"; echo "env=${TAO_RESUME_CHECKPOINT:-}""#,
        "action",
        "train",
    ];
    let base = [
        ("TAO_K8S_CHECKPOINT_DIR", ckpt.as_os_str()),
        ("TAO_K8S_CHECKPOINT_PATTERN", os("*.pth")),
    ];
    let with = |extra: (&'static str, &'static std::ffi::OsStr)| {
        let mut env = base.to_vec();
        env.push(extra);
        run_action(&show, &env).output().unwrap()
    };
    // None yet: the first attempt starts from the beginning.
    let first = with((
        "TAO_K8S_RESUME_ARG",
        os("train.resume_training_checkpoint_path"),
    ));
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(
        stdout(&first),
        format!(
            "tao-k8s: no checkpoint matches *.pth in {}: the action starts from the beginning\ntrain|env=\n",
            ckpt.display()
        )
    );

    let old = ckpt.join("model_epoch_001.pth");
    let new = ckpt.join("model_epoch_002.pth");
    std::fs::write(&old, "1").unwrap();
    std::fs::write(&new, "2").unwrap();
    std::fs::write(ckpt.join("status.json"), "{}").unwrap();
    let past = std::time::SystemTime::now() - Duration::from_secs(600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(past)
        .unwrap();

    let by_arg = with((
        "TAO_K8S_RESUME_ARG",
        os("train.resume_training_checkpoint_path"),
    ));
    assert_eq!(
        stdout(&by_arg),
        format!(
            "tao-k8s: resuming from {new} (train.resume_training_checkpoint_path)\ntrain|train.resume_training_checkpoint_path={new}|env=\n",
            new = new.display()
        )
    );
    let by_env = with(("TAO_K8S_RESUME_ENV", os("TAO_RESUME_CHECKPOINT")));
    assert_eq!(
        stdout(&by_env),
        format!(
            "tao-k8s: resuming from {new} (variable TAO_RESUME_CHECKPOINT)\ntrain|env={new}\n",
            new = new.display()
        )
    );
}

#[test]
fn sigterm_reaches_the_action_through_the_wrapper() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let env = [
        ("TAO_K8S_LOG_DIR", logs.as_os_str()),
        ("TMPDIR", dir.path().as_os_str()),
    ];
    let action = "trap 'echo saving a checkpoint; exit 143' TERM; echo started; while :; do sleep 0.05; done";
    let mut run = Running::start(run_action(&["sh", "-c", action], &env));
    run.expect("started");
    // The kubelet's SIGTERM goes to the container's PID 1: here, the wrapper.
    run.signal("TERM");
    let (code, lines, err) = run.finish();
    assert_eq!(code, Some(143), "{err}");
    assert_eq!(lines, ["started", "saving a checkpoint"]);
    let kept = std::fs::read_to_string(logs.join("unrecorded/rank-0.log")).unwrap();
    assert!(kept.ends_with("started\nsaving a checkpoint\n"), "{kept}");
}

#[test]
fn a_log_that_cannot_be_kept_does_not_stop_the_action() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    let env = [
        ("TAO_K8S_LOG_DIR", file.as_os_str()),
        ("TMPDIR", dir.path().as_os_str()),
    ];
    let out = run_action(&["sh", "-c", "echo trained; exit 0"], &env)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "trained\n");
    assert!(
        stderr(&out).ends_with(&format!(
            "tao-k8s: cannot keep the log in {}/unrecorded/rank-0.log: the action runs without it\n",
            file.display()
        )),
        "{}",
        stderr(&out)
    );
}

#[test]
fn every_rank_uploads_its_kept_log_and_rank_zero_sends_checkpoints_as_it_runs() {
    let pod = Pod::new();
    let log = pod.path("results/logs/tao-r1/rank-1.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, "rank 1 says\n").unwrap();
    // A rank that uploads no results still sends its log, to where job.sh logs reads it.
    let out = pod
        .upload(&[
            ("NODE_RANK", "1"),
            ("TAO_K8S_KEEP_LOGS", "1"),
            ("TAO_K8S_RECORD", "tao-r1"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        pod.aws_calls(),
        [
            "s3",
            "cp",
            "--no-progress",
            &log.display().to_string(),
            "s3://fake-bucket/runs/42/logs/tao-r1/rank-1.log"
        ]
    );

    // Rank 0, a native sidecar: the checkpoints and its log go up while the action runs.
    std::fs::remove_file(pod.path("aws.log")).unwrap();
    let ckpt = pod.path("results/ckpt");
    std::fs::create_dir(&ckpt).unwrap();
    let log0 = pod.path("results/logs/tao-r1/rank-0.log");
    std::fs::write(&log0, "rank 0 says\n").unwrap();
    let mut up = Running::start(pod.upload(&[
        ("TAO_K8S_UPLOAD_ON", "sigterm"),
        ("NODE_RANK", "0"),
        ("TAO_K8S_KEEP_LOGS", "1"),
        ("TAO_K8S_RECORD", "tao-r1"),
        ("TAO_K8S_SYNC_DIR", &ckpt.display().to_string()),
        ("TAO_K8S_SYNC_URI", "s3://fake-bucket/runs/42/ckpt/"),
        ("TAO_K8S_SYNC_SECONDS", "1"),
    ]));
    up.expect("tao-k8s: waiting for the action's container to end");
    let sync = [
        "s3",
        "sync",
        "--no-progress",
        "--only-show-errors",
        &ckpt.display().to_string(),
        "s3://fake-bucket/runs/42/ckpt/",
    ]
    .map(str::to_owned);
    let deadline = std::time::Instant::now() + HANG_GUARD;
    while !pod.aws_calls().windows(6).any(|w| w == sync) {
        assert!(
            std::time::Instant::now() < deadline,
            "no sync: {:?}",
            pod.aws_calls()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    up.signal("TERM");
    let (code, _, err) = up.finish();
    assert_eq!(code, Some(0), "{err}");
    let calls = pod.aws_calls();
    let log_send = [
        "s3",
        "cp",
        "--no-progress",
        "--only-show-errors",
        &log0.display().to_string(),
        "s3://fake-bucket/runs/42/logs/tao-r1/rank-0.log",
    ]
    .map(str::to_owned);
    assert!(calls.windows(6).any(|w| w == log_send), "{calls:?}");
    // The final upload of the results carries rank 0's log: it is not sent twice at the end.
    assert!(
        calls.ends_with(&pod.expected_call("s3://fake-bucket/runs/42/")),
        "{calls:?}"
    );
}

// ---- read-logs.sh ----

/// The reader Pod's command line: `sh -c SCRIPT NAME DIR INDEX TAIL`.
fn read_logs(dir: &Path, index: &str, tail: &str) -> Output {
    sh(
        "read-logs.sh",
        &["reader", dir.to_str().unwrap(), index, tail],
    )
    .output()
    .unwrap()
}

#[test]
fn the_reader_prints_every_rank_s_log_in_index_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("logs").join("tao-20261202-083107-7f3a");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("rank-0.log"), "a\nb\nc\n").unwrap();
    std::fs::write(
        dir.join("rank-2.log"),
        "== tao-k8s: pod p started 2026-12-02T08:31:07Z ==\ny\n",
    )
    .unwrap();
    std::fs::write(dir.join("rank-10.log"), "x\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "not a log\n").unwrap();

    let out = read_logs(&dir, "", "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "==> rank-0.log <==\na\nb\nc\n==> rank-2.log <==\n\
         == tao-k8s: pod p started 2026-12-02T08:31:07Z ==\ny\n==> rank-10.log <==\nx\n"
    );
    let out = read_logs(&dir, "", "1");
    assert_eq!(
        stdout(&out),
        "==> rank-0.log <==\nc\n==> rank-2.log <==\ny\n==> rank-10.log <==\nx\n"
    );
    let out = read_logs(&dir, "0", "2");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "==> rank-0.log <==\nb\nc\n");

    let out = read_logs(&dir, "3", "");
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).is_empty());
    assert!(
        stderr(&out).contains(&format!(
            "no log of rank 3 was kept under {}",
            dir.display()
        )),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_reader_says_when_nothing_was_kept_and_takes_no_code() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("logs/tao-20261202-083107-7f3a");
    let out = read_logs(&missing, "", "");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no log was kept under")
            && stderr(&out).contains("no such directory"),
        "{}",
        stderr(&out)
    );
    std::fs::create_dir_all(&missing).unwrap();
    let out = read_logs(&missing, "", "");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("holds no rank-<index>.log"),
        "{}",
        stderr(&out)
    );
    // Its arguments are data: a hostile index or count is refused, never run.
    let marker = tmp.path().join("ran");
    for (index, tail) in [
        (format!("0; touch {}", marker.display()), String::new()),
        (String::new(), format!("$(touch {})", marker.display())),
    ] {
        let out = read_logs(&missing, &index, &tail);
        assert_eq!(out.status.code(), Some(1));
    }
    assert!(!marker.exists());
}
