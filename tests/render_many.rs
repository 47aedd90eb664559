//! `render` in a pipeline: several requests, `-` and folders in one run, into one stream or
//! one bundle folder per request; one refused request refuses the run unless `--keep-going`.

mod common;

use std::path::Path;

use common::{ROOT, Tao};

const EXAMPLE: &str = "examples/dino-train.yaml";
const VALID: &str = "fixtures/requests/valid";
const EMPTY: &str = "fixtures/requests/invalid/empty.yaml";

fn tao() -> Tao {
    let mut cmd = common::tao();
    cmd.current_dir(ROOT)
        .env_remove("TAO_K8S_NAMESPACE")
        .arg("--color=never");
    cmd
}

/// What `render` prints for one request alone.
fn alone(path: &str) -> String {
    let r = tao().args(["render", path]).run();
    assert_eq!(r.code, Some(0), "{path}: {}", r.stderr);
    r.stdout
}

/// The request files of the fixture folder, as `render` reads it: sorted, this folder only.
fn valid_requests() -> Vec<String> {
    let mut paths: Vec<String> = std::fs::read_dir(Path::new(ROOT).join(VALID))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| format!("{VALID}/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    paths.sort();
    paths
}

#[test]
fn a_folder_and_files_render_as_one_stream_of_each_request_in_order() {
    let requests = valid_requests();
    assert!(requests.len() >= 19);
    // `specs/` holds a spec file with the .yaml extension: not a request, not read.
    assert!(
        Path::new(ROOT)
            .join(VALID)
            .join("specs/dino-train.yaml")
            .exists()
    );
    let r = tao().args(["render", VALID, EXAMPLE]).run();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let expected: String = requests
        .iter()
        .map(String::as_str)
        .chain([EXAMPLE])
        .map(alone)
        .collect();
    assert_eq!(r.stdout, expected);
    // Every request's notes name its file.
    assert!(
        r.stderr
            .contains("note: fixtures/requests/valid/lifecycle-only.yaml: gpusPerNode is 0"),
        "{}",
        r.stderr
    );
}

#[test]
fn stdin_and_other_extensions_are_requests_too() {
    let dir = tempfile::tempdir().unwrap();
    let example = std::fs::read_to_string(Path::new(ROOT).join(EXAMPLE)).unwrap();
    let renamed = |name: &str| example.replace("name: dino-train-coco", &format!("name: {name}"));
    std::fs::write(dir.path().join("b.yml"), renamed("bee")).unwrap();
    std::fs::write(dir.path().join("a.yaml"), renamed("ay")).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a request").unwrap();
    std::fs::create_dir(dir.path().join("nested")).unwrap();
    std::fs::write(dir.path().join("nested/c.yaml"), "not: read").unwrap();
    let r = tao()
        .args(["render", "-o", "json", "-"])
        .arg(dir.path())
        .write_stdin(renamed("stdin-one"))
        .run();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let list: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["kind"], "List");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["stdin-one", "ay", "bee"]);

    // A folder of one request is still a List: a pipeline reads one shape.
    let one = tempfile::tempdir().unwrap();
    std::fs::write(one.path().join("a.yaml"), renamed("ay")).unwrap();
    let r = tao().args(["render", "-o", "json"]).arg(one.path()).run();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let list: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"].as_array().unwrap().len(), 1);

    let twice = tao().args(["render", "-", "-"]).run();
    assert_eq!(twice.code, Some(2));
    assert!(twice.stderr.contains("`-` (stdin) can be read once"));
    let empty = tempfile::tempdir().unwrap();
    let none = tao().arg("render").arg(empty.path()).run();
    assert_eq!(none.code, Some(2));
    assert!(none.stderr.contains("holds no request"), "{}", none.stderr);
}

#[test]
fn one_refused_request_refuses_the_run_unless_keep_going() {
    let r = tao()
        .args([
            "render",
            EXAMPLE,
            EMPTY,
            "fixtures/requests/valid/tier-c.yaml",
        ])
        .run();
    assert_eq!(r.code, Some(1));
    assert!(r.stdout.is_empty(), "nothing printed");
    assert!(
        r.stderr.contains(&format!("--> {EMPTY}:1:1"))
            && r.stderr
                .contains(&format!("error: {EMPTY} refused: 1 error"))
            && r.stderr
                .contains("error: 1 of 3 requests refused: nothing written"),
        "{}",
        r.stderr
    );

    let k = tao()
        .args([
            "render",
            "--keep-going",
            EXAMPLE,
            EMPTY,
            "fixtures/requests/valid/tier-c.yaml",
        ])
        .run();
    assert_eq!(k.code, Some(1));
    assert_eq!(
        k.stdout,
        alone(EXAMPLE) + &alone("fixtures/requests/valid/tier-c.yaml")
    );
    assert!(
        k.stderr
            .contains("1 of 3 requests refused; the others written")
    );
}

#[test]
fn objects_of_one_name_from_two_requests_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let example = std::fs::read_to_string(Path::new(ROOT).join(EXAMPLE)).unwrap();
    std::fs::write(dir.path().join("first.yaml"), &example).unwrap();
    std::fs::write(
        dir.path().join("second.yaml"),
        example.replace("networkArch: dino", "networkArch: rtdetr"),
    )
    .unwrap();
    // The same name in another namespace is another object.
    std::fs::write(
        dir.path().join("third.yaml"),
        example.replace("namespace: vision", "namespace: vision-b"),
    )
    .unwrap();
    let r = tao().arg("render").arg(dir.path()).run();
    assert_eq!(r.code, Some(1));
    assert!(r.stdout.is_empty());
    let first = dir.path().join("first.yaml");
    let second = dir.path().join("second.yaml");
    assert!(
        r.stderr.contains(&format!(
            "error[TK017]: `Job vision/dino-train-coco` of {} is also an object of {}",
            second.display(),
            first.display()
        )),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("1 of 3 requests refused"), "{}", r.stderr);
    let k = tao()
        .arg("render")
        .arg("--keep-going")
        .arg(dir.path())
        .run();
    assert_eq!(k.code, Some(1));
    let namespaces: Vec<&str> = k
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("namespace:"))
        .collect();
    assert_eq!(
        namespaces,
        ["  namespace: \"vision\"", "  namespace: \"vision-b\""]
    );
}

#[test]
fn out_writes_one_bundle_folder_per_request() {
    let out = tempfile::tempdir().unwrap();
    let r = tao()
        .args([
            "render",
            EXAMPLE,
            "fixtures/requests/valid/multi-node-2.yaml",
            "--out",
        ])
        .arg(out.path())
        .run();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // Each folder holds what a bundle of that request alone holds.
    for (request, stem) in [
        (EXAMPLE, "dino-train"),
        ("fixtures/requests/valid/multi-node-2.yaml", "multi-node-2"),
    ] {
        let single = tempfile::tempdir().unwrap();
        let s = tao()
            .args(["render", request, "--out"])
            .arg(single.path())
            .run();
        assert_eq!(s.code, Some(0));
        let mut names: Vec<String> = std::fs::read_dir(single.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert!(
            names.contains(&"manifest.yaml".to_string()) && names.contains(&"job.sh".to_string())
        );
        for name in names {
            let a = std::fs::read(single.path().join(&name)).unwrap();
            let b = std::fs::read(out.path().join(stem).join(&name)).unwrap();
            assert!(a == b, "{stem}/{name}");
        }
    }
    assert!(out.path().join("multi-node-2/nccl-probe.yaml").exists());

    // Two requests with one stem would share a folder: refused before anything is written.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("x")).unwrap();
    std::fs::copy(
        Path::new(ROOT).join(EXAMPLE),
        dir.path().join("x/dino-train.yaml"),
    )
    .unwrap();
    let clash = tempfile::tempdir().unwrap();
    let r = tao()
        .args(["render", EXAMPLE])
        .arg(dir.path().join("x/dino-train.yaml"))
        .arg("--out")
        .arg(clash.path().join("o"))
        .run();
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("would both be written to"),
        "{}",
        r.stderr
    );
    assert!(!clash.path().join("o").exists());
}

#[test]
fn options_about_one_request_are_refused_with_several() {
    for flag in ["--staging-map", "--staged-config"] {
        let r = tao()
            .args(["render", EXAMPLE, VALID, flag, "/tmp/unused"])
            .run();
        assert_eq!(r.code, Some(2), "{flag}");
        assert!(
            r.stderr.contains(&format!("{flag} takes one request")),
            "{}",
            r.stderr
        );
    }
    let r = tao().args(["render", VALID, "--emit-unverified"]).run();
    assert_eq!(r.code, Some(2));
}

#[test]
fn a_template_mistake_names_each_request_it_failed_for() {
    let dir = tempfile::tempdir().unwrap();
    let job = std::fs::read_to_string(Path::new(ROOT).join("templates/_job_spec.yaml.j2")).unwrap();
    std::fs::write(
        dir.path().join("_job_spec.yaml.j2"),
        job.replace(
            "restartPolicy: {{ job.pod.restartPolicy }}",
            "restartPolicy: {{ job.pod.restartPolicy }}\n      restartPolicyy: Never",
        ),
    )
    .unwrap();
    let r = tao()
        .args([
            "render",
            EXAMPLE,
            "fixtures/requests/valid/tier-c.yaml",
            "--templates",
        ])
        .arg(dir.path())
        .run();
    assert_eq!(r.code, Some(1));
    for request in [EXAMPLE, "fixtures/requests/valid/tier-c.yaml"] {
        assert!(
            r.stderr
                .contains(&format!("--> rendered manifests of {request}:"))
                && r.stderr.contains(&format!("error: {request} refused")),
            "{request}: {}",
            r.stderr
        );
    }
    assert!(r.stderr.contains("2 of 2 requests refused"));
}
