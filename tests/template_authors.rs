//! What a template author meets: overrides that cannot go wrong quietly, the unverified output
//! beside its diagnostics, the template context as a contract, and snapshot tests of their own
//! templates.

mod common;

use std::path::Path;

use common::{ROOT, Tao};

const EXAMPLE: &str = "examples/dino-train.yaml";
const MULTI_NODE: &str = "fixtures/requests/valid/multi-node-2.yaml";

fn tao() -> Tao {
    let mut cmd = common::tao();
    cmd.current_dir(ROOT)
        .env_remove("TAO_K8S_NAMESPACE")
        .arg("--color=never");
    cmd
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
        let r = tao().args(&args).arg("--templates").arg(dir.path()).run();
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
    let r = tao()
        .args(["render", EXAMPLE, "--out"])
        .arg(out.path().join("b"))
        .arg("--templates")
        .arg(dir.path())
        .run();
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
    let r = tao()
        .args(["render", EXAMPLE, "--templates"])
        .arg(dir.path())
        .run();
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("rename it after the template it replaces: configmap.yaml.j2, job.yaml.j2, jobset.yaml.j2, service.yaml.j2, _container.yaml.j2, _job_spec.yaml.j2")
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
    let r = tao()
        .args(["render", "--nccl-probe", MULTI_NODE, "--templates"])
        .arg(dir.path())
        .run();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("imagePullPolicy: \"Always\""),
        "{}",
        r.stdout
    );

    let out = tempfile::tempdir().unwrap();
    let r = tao()
        .args(["render", MULTI_NODE, "--out"])
        .arg(out.path())
        .arg("--templates")
        .arg(dir.path())
        .run();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for file in ["manifest.yaml", "nccl-probe.yaml"] {
        let text = std::fs::read_to_string(out.path().join(file)).unwrap();
        assert!(text.contains("imagePullPolicy: \"Always\""), "{file}");
    }
    // Without the override, the embedded partial: no pull policy.
    let r = tao().args(["render", MULTI_NODE]).run();
    assert!(!r.stdout.contains("imagePullPolicy"));
}

/// The Job template (`_job_spec.yaml.j2` for a line of the spec) with one line replaced.
fn job_template(from: &str, to: &str) -> tempfile::TempDir {
    let name = if embedded("job.yaml.j2").contains(from) {
        "job.yaml.j2"
    } else {
        "_job_spec.yaml.j2"
    };
    let job = embedded(name);
    assert!(job.contains(from), "{from}");
    templates(&[(name, &job.replacen(from, to, 1))])
}

#[test]
fn emit_unverified_prints_the_output_that_the_diagnostic_points_into() {
    let dir = job_template(
        "restartPolicy: {{ job.pod.restartPolicy }}",
        "restartPolicy: {{ job.pod.restartPolicy }}\n      restartPolicyy: Never",
    );
    let plain = tao()
        .args(["render", EXAMPLE, "--templates"])
        .arg(dir.path())
        .run();
    assert_eq!(plain.code, Some(1));
    assert!(plain.stdout.is_empty(), "verified output only, by default");

    let r = tao()
        .args(["render", EXAMPLE, "--emit-unverified", "--templates"])
        .arg(dir.path())
        .run();
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
    let r = tao()
        .args(["render", EXAMPLE, "--emit-unverified", "--templates"])
        .arg(dir.path())
        .run();
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
    let r = tao()
        .args(["render", EXAMPLE, "--emit-unverified", "--templates"])
        .arg(dir.path())
        .run();
    assert_eq!(r.code, Some(1));
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr.contains("job.yaml.j2:2") && r.stderr.contains("the templates wrote nothing"),
        "{}",
        r.stderr
    );
}

/// Every request a template author may meet: the valid fixtures and the examples, each also
/// as its NCCL probe where it has one.
fn contexts() -> Vec<(String, tao_k8s::plan::Plan)> {
    use tao_k8s::plan::{Options, SpecReader, Workload};
    let mut out = Vec::new();
    for dir in ["fixtures/requests/valid", "examples"] {
        let mut paths: Vec<_> = std::fs::read_dir(Path::new(ROOT).join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).unwrap();
            let source = tao_k8s::source::Source::new(path.display().to_string(), text);
            let base = path.parent().unwrap().to_path_buf();
            for (nccl_probe, workload) in [
                (false, Workload::IndexedJob),
                (true, Workload::IndexedJob),
                (false, Workload::JobSet),
            ] {
                let base = base.clone();
                let opts = Options {
                    nccl_probe,
                    workload,
                    read_spec: Some(SpecReader::new(move |spec| {
                        let text =
                            std::fs::read_to_string(base.join(spec)).map_err(|e| e.to_string())?;
                        Ok(tao_k8s::source::Source::new(spec, text))
                    })),
                    ..Options::default()
                };
                match tao_k8s::compile::plan(&source, &opts) {
                    Ok(plan) => out.push((
                        format!("{} probe={nccl_probe} {workload:?}", path.display()),
                        plan,
                    )),
                    // Only a single-node request has no probe.
                    Err(_) if nccl_probe => {}
                    Err(e) => panic!("{}: {:#?}", path.display(), e.diagnostics()),
                }
            }
        }
    }
    out
}

#[test]
fn the_committed_context_schema_is_what_the_types_generate_and_the_cli_prints() {
    let committed =
        std::fs::read_to_string(Path::new(ROOT).join("schemas/template-context.schema.json"))
            .unwrap();
    assert!(
        committed == tao_k8s::plan::context_schema_text(),
        "schemas/template-context.schema.json is stale: run `cargo run -- schema --template-context > schemas/template-context.schema.json`"
    );
    let printed = tao().args(["schema", "--template-context"]).run();
    assert_eq!(printed.code, Some(0));
    assert_eq!(printed.stdout, committed);
    let schema: serde_json::Value = serde_json::from_str(&committed).unwrap();
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
    assert_eq!(schema["title"], "tao-k8s template context");
}

/// The schema describes exactly what templates receive: every context of every fixture is
/// valid against it, and every object in it is closed, so a field the types add without the
/// schema knowing, or one they lose, fails here.
#[test]
fn every_context_is_valid_against_the_schema_and_the_schema_is_not_vacuous() {
    let schema = tao_k8s::plan::context_schema();
    let validator = jsonschema::draft7::new(&schema).unwrap();
    let contexts = contexts();
    assert!(contexts.len() > 20, "{}", contexts.len());
    for (name, plan) in &contexts {
        let value = serde_json::to_value(plan).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
    // The same context with a field added, or one removed, deep inside: refused.
    let mut value = serde_json::to_value(&contexts[0].1).unwrap();
    value["job"]["pod"]["containers"][0]["imagePullPolicy"] = "Always".into();
    assert!(!validator.is_valid(&value));
    let mut value = serde_json::to_value(&contexts[0].1).unwrap();
    value["job"]["pod"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("image");
    assert!(!validator.is_valid(&value));
    let mut value = serde_json::to_value(&contexts[0].1).unwrap();
    value["run"]["tier"] = "B".into();
    assert!(!validator.is_valid(&value));
}

#[test]
fn plan_prints_the_context_as_json_or_yaml() {
    let json = tao().args(["plan", EXAMPLE]).run();
    assert_eq!(json.code, Some(0), "{}", json.stderr);
    let json: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(json["names"]["job"], "dino-train-coco");
    assert_eq!(json["namespace"], "vision");
    assert_eq!(
        json["job"]["pod"]["containers"][0]["image"],
        "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt"
    );
    let yaml = tao().args(["plan", EXAMPLE, "-o", "yaml"]).run();
    assert_eq!(yaml.code, Some(0), "{}", yaml.stderr);
    let stream = tao_k8s::yaml::parse(
        &tao_k8s::source::Source::new("plan", yaml.stdout.as_str()),
        tao_k8s::yaml::Limits::default(),
    )
    .unwrap();
    assert_eq!(stream.documents[0].to_json(), json, "the same context");
    // What the templates render from: the printed context is the one `render` used.
    let rendered = tao().args(["render", EXAMPLE, "-o", "json"]).run();
    let job: serde_json::Value = serde_json::from_str(&rendered.stdout).unwrap();
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["args"],
        json["job"]["pod"]["containers"][0]["args"]
    );
    // The probe's context, and a refused request's diagnostics.
    let probe = tao().args(["plan", "--nccl-probe", MULTI_NODE]).run();
    assert_eq!(probe.code, Some(0), "{}", probe.stderr);
    assert!(probe.stdout.contains("nccl"), "{}", probe.stdout);
    let refused = tao()
        .args(["plan", "fixtures/requests/invalid/empty.yaml"])
        .run();
    assert_eq!(refused.code, Some(1));
    assert!(refused.stdout.is_empty());
    assert!(
        refused
            .stderr
            .contains("fixtures/requests/invalid/empty.yaml refused"),
        "{}",
        refused.stderr
    );
}

/// Every bundled template is exercised by the fixtures under strict undefined, and a
/// template that reads a variable the context does not have is refused with its name and
/// line, even where a lenient engine would quietly take it as false.
#[test]
fn strict_undefined_refuses_a_variable_the_context_lacks() {
    use tao_k8s::render::{EMBEDDED, Templates, render_all};
    let mut used = std::collections::BTreeSet::new();
    for (name, plan) in contexts() {
        let rendered =
            render_all(&plan, Templates::embedded()).unwrap_or_else(|d| panic!("{name}: {d:#?}"));
        used.extend(rendered.into_iter().map(|r| r.template));
    }
    // Included by job.yaml.j2 and jobset.yaml.j2: the Job's spec, and every container in it.
    used.insert("_container.yaml.j2".into());
    used.insert("_job_spec.yaml.j2".into());
    let all: std::collections::BTreeSet<String> =
        EMBEDDED.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(used, all);

    let plan = &contexts()[0].1;
    for (text, line) in [
        (
            "kind: Job\n{% if job.pod.hostNetwork %}x: 1{% endif %}\n",
            2,
        ),
        ("kind: Job\n\nname: {{ names.deployment }}\n", 3),
        ("kind: Job\nname: {{ nmaes.job }}\n", 2),
    ] {
        let templates = Templates::new(&[("job.yaml.j2".into(), text.into())]).unwrap();
        let d = render_all(plan, &templates).unwrap_err();
        assert_eq!(d.code, "TK090");
        assert!(
            d.message.contains(&format!("job.yaml.j2:{line}")) && d.message.contains("undefined"),
            "{text}: {}",
            d.message
        );
    }
}

/// The project's own templates are snapshot-tested with the command template authors use:
/// the examples and a multi-node request (its probe too) against `tests/template-snapshots/`.
#[test]
fn the_bundled_templates_match_their_committed_snapshots() {
    let r = tao()
        .args([
            "snapshot",
            "examples",
            MULTI_NODE,
            "--snapshots",
            "tests/template-snapshots",
        ])
        .run();
    assert_eq!(
        r.code,
        Some(0),
        "{}{}\nreview the diff; accept it with `cargo run -- snapshot examples {MULTI_NODE} --snapshots tests/template-snapshots --update`",
        r.stdout,
        r.stderr
    );
    assert!(r.stdout.is_empty());
    assert_eq!(r.stderr, "snapshots: 3 unchanged, 0 changed, 0 new\n");
}

/// insta reads what the command writes: an author's own Rust test can assert against the
/// same files (and `cargo insta review` shows them).
#[test]
fn insta_reads_the_commands_snapshots() {
    let source = tao_k8s::source::Source::new(
        EXAMPLE,
        std::fs::read_to_string(Path::new(ROOT).join(EXAMPLE)).unwrap(),
    );
    let compiled = tao_k8s::compile(
        &source,
        &tao_k8s::plan::Options::default(),
        tao_k8s::render::Templates::embedded(),
    )
    .unwrap();
    insta::with_settings!({
        snapshot_path => Path::new(ROOT).join("tests/template-snapshots"),
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("dino-train", compiled.yaml);
    });
}

#[test]
fn the_snapshot_workflow_of_a_template_author() {
    let work = tempfile::tempdir().unwrap();
    let snaps = work.path().join("snaps");
    let mine = templates(&[("job.yaml.j2", &embedded("job.yaml.j2"))]);
    let snapshot = |extra: &[&str]| {
        tao()
            .args(["snapshot", EXAMPLE, MULTI_NODE, "--templates"])
            .arg(mine.path())
            .arg("--snapshots")
            .arg(&snaps)
            .args(extra)
            .run()
    };
    // No snapshots yet: every one is new, shown whole, nothing written.
    let first = snapshot(&[]);
    assert_eq!(first.code, Some(1));
    assert!(!snaps.exists());
    assert!(
        first.stdout.starts_with("--- /dev/null\n+++ "),
        "{}",
        first.stdout
    );
    assert!(first.stdout.contains("+kind: Job\n"));
    assert!(
        first.stderr.contains("0 unchanged, 0 changed, 3 new"),
        "{}",
        first.stderr
    );

    let update = snapshot(&["--update"]);
    assert_eq!(update.code, Some(0), "{}", update.stderr);
    assert_eq!(
        update.stderr,
        "snapshots: 0 unchanged, 0 changed, 3 new; 3 written\n"
    );
    let text = std::fs::read_to_string(snaps.join("dino-train.snap")).unwrap();
    assert!(text.starts_with(&format!(
        "---\nsource: tao-k8s snapshot\nexpression: tao-k8s render --templates {}\ninput_file: {EXAMPLE}\n---\n---\napiVersion: batch/v1\n",
        mine.path().display()
    )), "{text}");
    assert_eq!(snapshot(&[]).code, Some(0));

    // The author changes the Job template: one line more in every Job, nothing else.
    std::fs::write(
        mine.path().join("_job_spec.yaml.j2"),
        embedded("_job_spec.yaml.j2").replace(
            "restartPolicy: {{ job.pod.restartPolicy }}",
            "restartPolicy: {{ job.pod.restartPolicy }}\n      enableServiceLinks: false",
        ),
    )
    .unwrap();
    let changed = snapshot(&[]);
    assert_eq!(changed.code, Some(1));
    assert!(
        changed.stderr.contains("0 unchanged, 3 changed, 0 new"),
        "{}",
        changed.stderr
    );
    let edits: Vec<&str> = changed
        .stdout
        .lines()
        .filter(|l| {
            (l.starts_with('+') || l.starts_with('-'))
                && !l.starts_with("+++")
                && !l.starts_with("---")
        })
        .collect();
    assert_eq!(
        edits, ["+      enableServiceLinks: false"; 3],
        "{}",
        changed.stdout
    );
    assert!(changed.stdout.contains(&format!(
        "--- {}\n+++ {} (rendered from {EXAMPLE})\n@@ ",
        snaps.join("dino-train.snap").display(),
        snaps.join("dino-train.snap").display()
    )));
    assert_eq!(
        std::fs::read_to_string(snaps.join("dino-train.snap")).unwrap(),
        text,
        "not written"
    );
    assert_eq!(snapshot(&["--update"]).code, Some(0));
    assert_eq!(snapshot(&[]).code, Some(0));

    // insta's own writing of the same body (another header, no final newline) is the same
    // snapshot; a snapshot of no request is said, not removed.
    let body = std::fs::read_to_string(snaps.join("dino-train.snap")).unwrap();
    let (_, body) = body
        .strip_prefix("---\n")
        .unwrap()
        .split_once("\n---\n")
        .unwrap();
    std::fs::write(
        snaps.join("dino-train.snap"),
        format!(
            "---\nsource: tests/mine.rs\nexpression: yaml\n---\n{}",
            body.trim_end()
        ),
    )
    .unwrap();
    std::fs::write(snaps.join("gone.snap"), "---\nsource: x\n---\nold\n").unwrap();
    let again = snapshot(&[]);
    assert_eq!(again.code, Some(0), "{}{}", again.stdout, again.stderr);
    assert!(
        again.stderr.contains("gone.snap is no request's snapshot"),
        "{}",
        again.stderr
    );
    assert!(snaps.join("gone.snap").exists());
}

#[test]
fn snapshot_refuses_bad_requests_and_shared_names_writing_nothing() {
    let work = tempfile::tempdir().unwrap();
    let snaps = work.path().join("snaps");
    let r = tao()
        .args([
            "snapshot",
            EXAMPLE,
            "fixtures/requests/invalid/empty.yaml",
            "--update",
            "--snapshots",
        ])
        .arg(&snaps)
        .run();
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr
            .contains("fixtures/requests/invalid/empty.yaml refused"),
        "{}",
        r.stderr
    );
    assert!(!snaps.exists());

    std::fs::create_dir(work.path().join("x")).unwrap();
    std::fs::copy(
        Path::new(ROOT).join(EXAMPLE),
        work.path().join("x/dino-train.yaml"),
    )
    .unwrap();
    let r = tao()
        .args(["snapshot", EXAMPLE])
        .arg(work.path().join("x/dino-train.yaml"))
        .args(["--update", "--snapshots"])
        .arg(&snaps)
        .run();
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr
            .contains("would share the snapshot `dino-train.snap`"),
        "{}",
        r.stderr
    );
    assert!(!snaps.exists());

    std::fs::create_dir(&snaps).unwrap();
    std::fs::write(snaps.join("dino-train.snap"), "kind: Job\n").unwrap();
    let r = tao()
        .args(["snapshot", EXAMPLE, "--snapshots"])
        .arg(&snaps)
        .run();
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("is not a snapshot"), "{}", r.stderr);
}
