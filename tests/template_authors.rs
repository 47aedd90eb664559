//! What a template author meets: overrides that cannot go wrong quietly, the unverified output
//! beside its diagnostics, the template context as a contract, and snapshot tests of their own
//! templates.

use assert_cmd::Command;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const EXAMPLE: &str = "examples/dino-train.yaml";
const MULTI_NODE: &str = "fixtures/requests/valid/multi-node-2.yaml";

fn tao() -> Command {
    let mut cmd = Command::cargo_bin("tao-k8s").unwrap();
    cmd.current_dir(ROOT)
        .env_remove("TAO_K8S_NAMESPACE")
        .arg("--color=never");
    cmd
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(cmd: &mut Command) -> Run {
    let out = cmd.output().unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// A template directory holding `files` (name, text).
fn templates(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn embedded(name: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join("templates").join(name)).unwrap()
}

#[test]
fn a_file_that_overrides_nothing_is_refused_by_every_command_that_renders() {
    let dir = templates(&[("jobs.yaml.j2", &embedded("job.yaml.j2"))]);
    let out = tempfile::tempdir().unwrap();
    let bundle = out.path().join("bundle");
    let staged = out.path().join("staged");
    let commands: Vec<Vec<&std::ffi::OsStr>> = vec![
        vec!["render".as_ref(), EXAMPLE.as_ref()],
        vec![
            "render".as_ref(),
            EXAMPLE.as_ref(),
            "--out".as_ref(),
            bundle.as_os_str(),
        ],
        vec![
            "render".as_ref(),
            "--nccl-probe".as_ref(),
            MULTI_NODE.as_ref(),
        ],
        vec!["script".as_ref(), EXAMPLE.as_ref()],
        vec![
            "stage".as_ref(),
            EXAMPLE.as_ref(),
            "--out".as_ref(),
            staged.as_os_str(),
        ],
    ];
    for args in commands {
        let r = run(tao().args(&args).arg("--templates").arg(dir.path()));
        assert_eq!(r.code, Some(1), "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}");
        assert!(
            r.stderr
                .contains("error[TK090]: `jobs.yaml.j2` in --templates overrides no template")
                && r.stderr.contains("did you mean `job.yaml.j2`?"),
            "{args:?}: {}",
            r.stderr
        );
    }
    assert!(!bundle.exists() && !staged.exists(), "nothing is written");
}

#[test]
fn a_driver_template_is_refused_with_where_the_driver_is_now() {
    let dir = templates(&[("driver.sh.j2", "#!/bin/bash\necho custom\n")]);
    let out = tempfile::tempdir().unwrap();
    let r = run(tao()
        .args(["render", EXAMPLE, "--out"])
        .arg(out.path().join("b"))
        .arg("--templates")
        .arg(dir.path()));
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("`driver.sh.j2` in --templates overrides no template")
            && r.stderr.contains("the driver script is no template")
            && r.stderr.contains("job.env"),
        "{}",
        r.stderr
    );
    assert!(!out.path().join("b").exists());
}

#[test]
fn a_name_far_from_every_template_lists_them_all() {
    let dir = templates(&[("deployment.yaml.j2", "kind: Deployment\n")]);
    let r = run(tao()
        .args(["render", EXAMPLE, "--templates"])
        .arg(dir.path()));
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("rename it after the template it replaces: configmap.yaml.j2, job.yaml.j2, service.yaml.j2, _container.yaml.j2")
            && !r.stderr.contains("did you mean"),
        "{}",
        r.stderr
    );
}

/// The partial is a template like the others: its override reaches every container of the
/// Job, of the NCCL probe, and of the script's bundle.
#[test]
fn the_container_partial_is_overridable_and_reaches_the_probe_and_the_bundle() {
    let partial = embedded("_container.yaml.j2").replace(
        "          image: {{ c.image }}\n",
        "          image: {{ c.image }}\n          imagePullPolicy: \"Always\"\n",
    );
    assert!(partial.contains("imagePullPolicy"));
    let dir = templates(&[("_container.yaml.j2", &partial)]);
    let r = run(tao()
        .args(["render", "--nccl-probe", MULTI_NODE, "--templates"])
        .arg(dir.path()));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("imagePullPolicy: \"Always\""),
        "{}",
        r.stdout
    );

    let out = tempfile::tempdir().unwrap();
    let r = run(tao()
        .args(["render", MULTI_NODE, "--out"])
        .arg(out.path())
        .arg("--templates")
        .arg(dir.path()));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for file in ["manifest.yaml", "nccl-probe.yaml"] {
        let text = std::fs::read_to_string(out.path().join(file)).unwrap();
        assert!(text.contains("imagePullPolicy: \"Always\""), "{file}");
    }
    // Without the override, the embedded partial: no pull policy.
    let r = run(tao().args(["render", MULTI_NODE]));
    assert!(!r.stdout.contains("imagePullPolicy"));
}

/// A Job template with one line replaced.
fn job_template(from: &str, to: &str) -> tempfile::TempDir {
    let job = embedded("job.yaml.j2");
    assert!(job.contains(from), "{from}");
    templates(&[("job.yaml.j2", &job.replacen(from, to, 1))])
}

#[test]
fn emit_unverified_prints_the_output_that_the_diagnostic_points_into() {
    let dir = job_template(
        "restartPolicy: {{ job.pod.restartPolicy }}",
        "restartPolicy: {{ job.pod.restartPolicy }}\n      restartPolicyy: Never",
    );
    let plain = run(tao()
        .args(["render", EXAMPLE, "--templates"])
        .arg(dir.path()));
    assert_eq!(plain.code, Some(1));
    assert!(plain.stdout.is_empty(), "verified output only, by default");

    let r = run(tao()
        .args(["render", EXAMPLE, "--emit-unverified", "--templates"])
        .arg(dir.path()));
    assert_eq!(r.code, Some(1), "still refused");
    assert_eq!(r.stderr, plain.stderr, "the same diagnostics");
    // The diagnostic names a line and column of the rendered stream, frames it, and that is
    // the line of what was printed.
    let at = "--> rendered manifests of examples/dino-train.yaml:";
    let place = r.stderr.split(at).nth(1).expect(&r.stderr);
    let (line, rest) = place.split_once(':').unwrap();
    let col: usize = rest.split_whitespace().next().unwrap().parse().unwrap();
    let line: usize = line.parse().unwrap();
    let printed = r.stdout.lines().nth(line - 1).unwrap();
    assert_eq!(printed, "      restartPolicyy: Never");
    assert_eq!(&printed[col - 1..], "restartPolicyy: Never");
    assert!(
        r.stderr.contains(&format!(
            "(line {line}, column {col} of the rendered manifests)"
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains(&format!("{line} |       restartPolicyy: Never"))
    );
    assert!(
        r.stdout
            .starts_with("---\napiVersion: batch/v1\nkind: Job\n")
    );
}

#[test]
fn emit_unverified_masks_credentials_in_what_it_prints() {
    let dir = job_template(
        "  labels:\n",
        "  annotations:\n    ci.example.com/token: \"ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE\"\n  labels:\n",
    );
    let r = run(tao()
        .args(["render", EXAMPLE, "--emit-unverified", "--templates"])
        .arg(dir.path()));
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("TK092") && r.stderr.contains("TK101"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("ci.example.com/token:"), "{}", r.stdout);
    assert!(!r.stdout.contains("FAKEFAKE") && !r.stderr.contains("FAKEFAKE"));
    // The lint's own place is framed in the rendered stream.
    assert!(
        r.stderr
            .contains("--> rendered manifests of examples/dino-train.yaml:"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_template_that_renders_nothing_has_nothing_to_emit() {
    let dir = templates(&[("job.yaml.j2", "kind: Job\nname: {{ no_such_field }}\n")]);
    let r = run(tao()
        .args(["render", EXAMPLE, "--emit-unverified", "--templates"])
        .arg(dir.path()));
    assert_eq!(r.code, Some(1));
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr.contains("job.yaml.j2:2") && r.stderr.contains("the templates wrote nothing"),
        "{}",
        r.stderr
    );
}
