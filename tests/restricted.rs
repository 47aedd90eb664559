//! `spec.securityContext.runAsUser`: the pods run as that user and meet the `restricted` Pod
//! Security Standard, which render's own verification then enforces, as a namespace labelled
//! `pod-security.kubernetes.io/enforce: restricted` admits them.

mod common;

use common::{ROOT, user as tao};

const REQUEST: &str = "fixtures/requests/valid/restricted.yaml";

/// The Job or JobSet, and the NCCL probe, at the oldest and newest targets: each passes
/// `lint --pod-security restricted` (the admission controller's checks of that version).
#[test]
fn every_pod_of_the_request_meets_restricted() {
    let request = format!("{ROOT}/{REQUEST}");
    for version in ["1.28", "1.37"] {
        for extra in [&[][..], &["--target", "jobset"], &["--nccl-probe"]] {
            let run = tao()
                .args(["render", &request, "--kube-version", version])
                .args(extra)
                .run();
            assert_eq!(run.code, Some(0), "{version} {extra:?}: {}", run.stderr);
            assert!(run.stdout.contains("runAsNonRoot: true"), "{extra:?}");
            let lint = tao()
                .args([
                    "lint",
                    "--pod-security",
                    &format!("restricted:v{version}"),
                    "-",
                ])
                .write_stdin(run.stdout.clone())
                .run();
            assert_eq!(lint.code, Some(0), "{version} {extra:?}: {}", lint.stdout);
            // Without the user, the same pods run as root: restricted refuses them.
            let root = run
                .stdout
                .replace("runAsNonRoot: true", "runAsNonRoot: false");
            let lint = tao()
                .args(["lint", "--pod-security", "restricted", "-"])
                .write_stdin(root)
                .run();
            assert_eq!(lint.code, Some(1), "{version} {extra:?}");
        }
    }
}

/// Render checks `restricted` itself: a template that drops a container's hardening is
/// refused, naming the check, and nothing is printed.
#[test]
fn render_refuses_a_template_that_breaks_restricted() {
    let dir = tempfile::tempdir().unwrap();
    let partial = std::fs::read_to_string(format!("{ROOT}/templates/_container.yaml.j2")).unwrap();
    let weakened = partial.replace(
        "            allowPrivilegeEscalation: false\n",
        "            allowPrivilegeEscalation: true\n",
    );
    assert_ne!(weakened, partial);
    std::fs::write(dir.path().join("_container.yaml.j2"), weakened).unwrap();
    let run = tao()
        .args(["render", &format!("{ROOT}/{REQUEST}"), "--templates"])
        .arg(dir.path())
        .run();
    assert_eq!(run.code, Some(1));
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("TK092") && run.stderr.contains("allowPrivilegeEscalation"),
        "{}",
        run.stderr
    );
    // A request without a user is not held to it: the same template renders it.
    let run = tao()
        .args([
            "render",
            &format!("{ROOT}/examples/dino-train.yaml"),
            "--templates",
        ])
        .arg(dir.path())
        .run();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!run.stdout.contains("securityContext"));
}

/// Root is not a user that meets `restricted`, and the fields are the request's own.
#[test]
fn root_and_unknown_fields_are_refused_with_their_path() {
    let text = std::fs::read_to_string(format!("{ROOT}/{REQUEST}")).unwrap();
    for (from, to, says) in [
        (
            "runAsUser: 1000",
            "runAsUser: 0",
            "spec.securityContext.runAsUser",
        ),
        (
            "runAsGroup: 1000",
            "runAsGroup: -1",
            "spec.securityContext.runAsGroup",
        ),
        ("fsGroup: 1000", "privileged: true", "privileged"),
    ] {
        let bad = text.replace(from, to);
        assert_ne!(bad, text);
        let run = tao().args(["render", "-"]).write_stdin(bad).run();
        assert_eq!(run.code, Some(1), "{to}");
        assert!(run.stderr.contains(says), "{to}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
}
