//! The pod-side scripts run for real with `sh`, exactly as they are shipped (comments and blank
//! lines dropped by `pod_script`), with fakes on PATH: the config check of the initContainer,
//! the wrapper recording the action's exit code, and the uploader waiting for it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

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

/// Writes the exit code the way run-action.sh does: whole, or not at all.
fn record(status_dir: &Path, code: &str) {
    let tmp = status_dir.join(".exit-code.test");
    std::fs::write(&tmp, format!("{code}\n")).unwrap();
    std::fs::rename(tmp, status_dir.join("exit-code")).unwrap();
}

#[test]
fn every_script_parses_as_shipped() {
    for name in [
        "verify-config.sh",
        "run-action.sh",
        "upload-results.sh",
        "wait-for-rendezvous.sh",
    ] {
        let script = shipped(name);
        assert!(!script.contains("\n#"), "{name}");
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

fn verify(src: &Path, want: &str, copy: Option<&Path>) -> Output {
    let mut cmd = sh("verify-config.sh", &[]);
    cmd.env("TAO_K8S_CONFIG_SRC", src)
        .env("TAO_K8S_CONFIG_SHA256", want)
        .env_remove("TAO_K8S_CONFIG_COPY");
    if let Some(copy) = copy {
        cmd.env("TAO_K8S_CONFIG_COPY", copy);
    }
    cmd.output().unwrap()
}

#[test]
fn the_config_check_passes_on_the_staged_digest() {
    let dir = tempfile::tempdir().unwrap();
    let src = staged(dir.path());
    let want = sha256(SPEC.as_bytes());
    let out = verify(&src, &want, None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("tao-k8s: config spec verified (sha256 {want})\n")
    );
    assert_eq!(stderr(&out), "");
}

#[test]
fn the_config_check_makes_a_writable_identical_copy_in_a_new_directory() {
    let dir = tempfile::tempdir().unwrap();
    let src = staged(dir.path());
    let copy = dir.path().join("work").join("specs").join("train.yaml");
    let want = sha256(SPEC.as_bytes());
    let out = verify(&src, &want, Some(&copy));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "tao-k8s: config spec verified (sha256 {want}), writable copy at {}\n",
            copy.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), SPEC);
    let mode = std::fs::metadata(&copy).unwrap().permissions().mode();
    assert_eq!(mode & 0o200, 0o200, "owner-writable: {mode:o}");

    // A restarted initContainer finds its earlier copy, made read-only meanwhile.
    std::fs::set_permissions(&copy, PermissionsExt::from_mode(0o444)).unwrap();
    let again = verify(&src, &want, Some(&copy));
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), SPEC);
    let mode = std::fs::metadata(&copy).unwrap().permissions().mode();
    assert_eq!(mode & 0o200, 0o200, "owner-writable: {mode:o}");
}

#[test]
fn the_config_check_fails_naming_both_digests_when_the_spec_changed() {
    let dir = tempfile::tempdir().unwrap();
    let src = staged(dir.path());
    let copy = dir.path().join("work").join("train.yaml");
    let want = sha256(b"train:\n  num_epochs: 2\n");
    let got = sha256(SPEC.as_bytes());
    let out = verify(&src, &want, Some(&copy));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "tao-k8s: the config spec {} has sha256 {got}, expected {want}: it changed after it was staged\n",
            src.display()
        )
    );
    assert_eq!(stdout(&out), "");
    assert!(!copy.exists(), "no copy of a spec that failed the check");
}

#[test]
fn the_config_check_fails_clearly_on_a_missing_spec_or_a_malformed_digest() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("staged").join("spec.yaml");
    let want = sha256(SPEC.as_bytes());
    let out = verify(&missing, &want, None);
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
        let out = verify(&src, bad, None);
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
            .env_remove("TAO_K8S_CONFIG_COPY")
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

// ---- run-action.sh ----

fn run_action(status_dir: &Path, argv: &[&str]) -> Command {
    let mut all = vec!["tao-k8s-run"];
    all.extend_from_slice(argv);
    let mut cmd = sh("run-action.sh", &all);
    cmd.env("TAO_K8S_STATUS_DIR", status_dir);
    cmd
}

fn recorded(status_dir: &Path) -> String {
    std::fs::read_to_string(status_dir.join("exit-code")).unwrap()
}

#[test]
fn the_wrapper_records_success_and_prints_only_what_the_action_prints() {
    let dir = tempfile::tempdir().unwrap();
    let status = dir.path().join("status");
    let out = run_action(&status, &["echo", "epoch 1/1 done"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "epoch 1/1 done\n");
    assert_eq!(stderr(&out), "");
    assert_eq!(recorded(&status), "0\n");
    let names: Vec<_> = std::fs::read_dir(&status)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["exit-code"], "no temp file left behind");
}

#[test]
fn the_wrapper_records_a_failure_and_exits_with_it() {
    let dir = tempfile::tempdir().unwrap();
    // A stale code from an earlier run of the container is replaced.
    record(dir.path(), "0");
    let out = run_action(
        dir.path(),
        &["sh", "-c", "echo 'out of memory' >&2; exit 3"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stderr(&out), "out of memory\n");
    assert_eq!(recorded(dir.path()), "3\n");
}

#[test]
fn the_wrapper_records_127_for_an_action_that_cannot_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_action(dir.path(), &["tao-k8s-fake-no-such-program", "train"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(
        stderr(&out).contains("tao-k8s-fake-no-such-program"),
        "{}",
        stderr(&out)
    );
    assert_eq!(recorded(dir.path()), "127\n");

    let none = run_action(dir.path(), &[]).output().unwrap();
    assert_eq!(none.status.code(), Some(127));
    assert_eq!(stderr(&none), "tao-k8s: no action to run\n");
    assert_eq!(recorded(dir.path()), "127\n");
}

/// Starts the wrapper around an action that says when it runs, and waits for that: by then the
/// wrapper's trap is set.
fn started(status_dir: &Path, action: &str) -> Child {
    let marker = status_dir.join("started");
    let child = run_action(
        status_dir,
        &["sh", "-c", action, "action", &marker.to_string_lossy()],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let begun = Instant::now();
    while !marker.exists() {
        assert!(
            begun.elapsed() < Duration::from_secs(60),
            "the action never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

fn signal(child: &Child, name: &str) {
    let pid = child.id().to_string();
    let status = Command::new("kill")
        .args(["-s", name, &pid])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn the_wrapper_forwards_sigterm_and_sigint_and_still_records_the_code() {
    for name in ["TERM", "INT"] {
        let dir = tempfile::tempdir().unwrap();
        let child = started(dir.path(), "echo > \"$1\"; exec sleep 30");
        let begun = Instant::now();
        signal(&child, name);
        let out = child.wait_with_output().unwrap();
        // Well under the action's 30 s: the signal was forwarded, not waited out.
        assert!(begun.elapsed() < Duration::from_secs(20), "{name}");
        // SIGINT arrives as SIGTERM: the action dies of SIGTERM either way.
        assert_eq!(out.status.code(), Some(143), "{name}: {}", stderr(&out));
        assert_eq!(recorded(dir.path()), "143\n", "{name}");
        assert_eq!(
            stderr(&out),
            "tao-k8s: asked to stop; sending SIGTERM to the action\n"
        );
    }
}

#[test]
fn the_wrapper_waits_for_an_action_that_cleans_up_after_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let action =
        "trap 'sleep 0.2; kill $s; exit 7' TERM; sleep 30 & s=$!; echo > \"$1\"; wait; exit 1";
    let child = started(dir.path(), action);
    signal(&child, "TERM");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert_eq!(recorded(dir.path()), "7\n");
}

// ---- upload-results.sh ----

struct Pod {
    dir: tempfile::TempDir,
}

impl Pod {
    /// A status directory, a results directory with one file, and a fake `aws` that logs its
    /// argv, one argument a line, and exits with FAKE_AWS_EXIT.
    fn new() -> Pod {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["bin", "status", "results"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("results").join("status.json"), "{}\n").unwrap();
        executable(
            &dir.path().join("bin").join("aws"),
            "#!/bin/sh\nprintf '%s\\n' \"$@\" >> \"$FAKE_AWS_LOG\"\nexit \"${FAKE_AWS_EXIT:-0}\"\n",
        );
        Pod { dir }
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    fn upload(&self, env: &[(&str, &str)]) -> Command {
        let path = format!(
            "{}:{}",
            self.path("bin").display(),
            std::env::var("PATH").unwrap()
        );
        let mut cmd = sh("upload-results.sh", &[]);
        cmd.env("PATH", path)
            .env("FAKE_AWS_LOG", self.path("aws.log"))
            .env("TAO_K8S_STATUS_DIR", self.path("status"))
            .env("TAO_K8S_RESULTS_DIR", self.path("results"))
            .env("TAO_K8S_RESULTS_URI", "s3://fake-bucket/runs/42/")
            .env("TAO_K8S_POLL_SECONDS", "0.1")
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
}

#[test]
fn rank_zero_uploads_with_the_exact_argv() {
    let pod = Pod::new();
    record(&pod.path("status"), "0");
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
        assert_eq!(
            stdout(&out),
            format!(
                "tao-k8s: uploaded {} to s3://fake-bucket/runs/42/ (the action exited with 0)\n",
                pod.path("results").display()
            )
        );
    }
}

#[test]
fn other_ranks_skip_unless_every_rank_uploads_to_its_own_prefix() {
    let pod = Pod::new();
    record(&pod.path("status"), "0");
    let skip = pod.upload(&[("NODE_RANK", "1")]).output().unwrap();
    assert_eq!(skip.status.code(), Some(0), "{}", stderr(&skip));
    assert_eq!(stdout(&skip), "tao-k8s: rank 1 does not upload results\n");
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
    assert!(
        stdout(&own).contains("to s3://fake-bucket/runs/42/rank-1/ (the action exited with 0)")
    );
}

#[test]
fn the_uploader_waits_for_the_exit_code() {
    let pod = Pod::new();
    let status = pod.path("status");
    let begun = Instant::now();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        record(&status, "0");
    });
    let out = pod.upload(&[]).output().unwrap();
    writer.join().unwrap();
    assert!(begun.elapsed() >= Duration::from_millis(300));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        pod.aws_calls(),
        pod.expected_call("s3://fake-bucket/runs/42/")
    );

    // A rank that does not upload also waits for the action to end.
    let pod = Pod::new();
    let status = pod.path("status");
    let begun = Instant::now();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        record(&status, "0");
    });
    let out = pod.upload(&[("NODE_RANK", "3")]).output().unwrap();
    writer.join().unwrap();
    assert!(begun.elapsed() >= Duration::from_millis(300));
    assert_eq!(stdout(&out), "tao-k8s: rank 3 does not upload results\n");
}

#[test]
fn a_failed_upload_fails_the_uploader() {
    let pod = Pod::new();
    record(&pod.path("status"), "0");
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
fn a_failed_action_still_uploads_its_results() {
    let pod = Pod::new();
    record(&pod.path("status"), "2");
    let out = pod.upload(&[]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        pod.aws_calls(),
        pod.expected_call("s3://fake-bucket/runs/42/")
    );
    assert!(stdout(&out).ends_with("(the action exited with 2)\n"));
}

#[test]
fn a_missing_results_dir_uploads_nothing_and_says_so_and_an_empty_one_uploads_nothing() {
    let pod = Pod::new();
    record(&pod.path("status"), "1");
    let missing = pod.path("never-created");
    let out = pod
        .upload(&[("TAO_K8S_RESULTS_DIR", &missing.to_string_lossy())])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(pod.aws_calls().is_empty());
    assert_eq!(
        stdout(&out),
        format!(
            "tao-k8s: the results directory {} does not exist, so nothing was uploaded to s3://fake-bucket/runs/42/ (the action exited with 1, perhaps before creating it)\n",
            missing.display()
        )
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
fn the_uploader_rejects_a_bad_uri_or_rank_at_once() {
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
    ] {
        // No exit code is ever recorded: these must not wait for it.
        let out = pod.upload(&env).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{env:?}");
        assert!(stderr(&out).starts_with("tao-k8s: "), "{}", stderr(&out));
    }
    assert!(pod.aws_calls().is_empty());
}

#[test]
fn the_wrapper_and_the_uploader_together() {
    let pod = Pod::new();
    let uploader = pod
        .upload(&[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let results = pod.path("results");
    let out = run_action(
        &pod.path("status"),
        &[
            "sh",
            "-c",
            "echo 0.91 > \"$1/map.txt\"; exit 4",
            "action",
            &results.to_string_lossy(),
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let up = uploader.wait_with_output().unwrap();
    assert_eq!(up.status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(results.join("map.txt")).unwrap(),
        "0.91\n"
    );
    assert_eq!(
        pod.aws_calls(),
        pod.expected_call("s3://fake-bucket/runs/42/")
    );
}
