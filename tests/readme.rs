//! The README's recipes work when pasted into a fresh clone: each shell line of the template
//! authors' and the pipelines' recipes runs in a copy of the repository's `templates/` and
//! `examples/`, with `tao-k8s` on PATH and a `kubectl` that takes what it is given, and exits
//! as its comment says. The pre-commit `rev:` names a commit of this repository's history whose
//! hooks file offers the hooks the README lists.

mod common;

use std::path::Path;
use std::process::Command;

use common::{BIN, ROOT};

fn readme() -> String {
    std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap()
}

/// The `sh` blocks of the README section under `heading`.
fn sh_blocks(heading: &str) -> Vec<String> {
    let text = readme();
    let start = text
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading}"));
    let rest = &text[start + 4..];
    let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    section
        .split("```sh\n")
        .skip(1)
        .map(|b| b[..b.find("```").unwrap()].to_string())
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// A fresh clone's files the recipes read, `tao-k8s` and a fake `kubectl` on PATH, and an
/// `EDITOR` that changes the file it is given as a template author would.
fn clone() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["templates", "examples"] {
        copy_dir(&Path::new(ROOT).join(sub), &dir.path().join(sub));
    }
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("tao-k8s")).unwrap();
    let script = |name: &str, text: &str| {
        use std::os::unix::fs::PermissionsExt;
        let path = bin.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    script(
        "kubectl",
        "#!/bin/sh\necho \"kubectl $*\" >> \"$HOME/kubectl.log\"\ncat > /dev/null\n",
    );
    script(
        "edit",
        "#!/bin/sh\nprintf '# changed by hand\\n' >> \"$1\"\n",
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    (dir, path)
}

/// Run each line of `block` with bash in `dir` (a pipeline fails when any part does): the
/// lines whose exit code is not the one their comment announces (`exit 1 on any change`), 0
/// otherwise.
fn run_lines(dir: &Path, path: &str, block: &str) -> Vec<String> {
    let mut failures = Vec::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let out = Command::new("bash")
            .args(["-o", "pipefail", "-c", line])
            .current_dir(dir)
            .env("PATH", path)
            .env("HOME", dir)
            .env("EDITOR", "edit")
            .env_remove("TAO_K8S_NAMESPACE")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .unwrap();
        let expected = if line.contains("exit 1 on any change") {
            1
        } else {
            0
        };
        if out.status.code() != Some(expected) {
            failures.push(format!(
                "`{line}` exited {:?}, expected {expected}: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    failures
}

#[test]
fn the_template_authors_snapshot_recipe_works_in_a_fresh_clone() {
    let blocks: Vec<String> = sh_blocks("For template authors")
        .into_iter()
        .filter(|b| b.contains("tao-k8s snapshot"))
        .collect();
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    let (dir, path) = clone();
    let failures = run_lines(dir.path(), &path, &blocks[0]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let snap = dir.path().join("snaps/dino-train.snap");
    assert!(
        std::fs::read_to_string(snap)
            .unwrap()
            .contains("# changed by hand"),
        "the accepted snapshot holds the change"
    );
}

#[test]
fn the_pipelines_render_recipe_works_in_a_fresh_clone() {
    let blocks: Vec<String> = sh_blocks("In pipelines")
        .into_iter()
        .filter(|b| b.contains("--keep-going"))
        .collect();
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    let (dir, path) = clone();
    let failures = run_lines(dir.path(), &path, &blocks[0]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let applied = std::fs::read_to_string(dir.path().join("kubectl.log")).unwrap();
    assert_eq!(applied, "kubectl apply -f -\n");
    assert!(dir.path().join("bundles/dino-train/job.sh").is_file());
    assert!(
        std::fs::read_to_string(dir.path().join("ok.yaml"))
            .unwrap()
            .contains("kind: Job")
    );
}

/// The README's pre-commit `rev:` is a commit of this repository's history (a fresh clone has
/// it), and the hooks file at that commit offers every hook id the README names.
#[test]
fn the_pre_commit_rev_is_a_commit_of_this_history_with_the_hooks_named() {
    let text = readme();
    let rev = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("rev: "))
        .expect("a rev: line")
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(ROOT)
            .output()
            .unwrap()
    };
    if !git(&["rev-parse", "--git-dir"]).status.success() {
        eprintln!("not a git checkout: the rev cannot be checked here");
        return;
    }
    let ancestor = git(&["merge-base", "--is-ancestor", &rev, "HEAD"]);
    assert!(
        ancestor.status.success(),
        "rev {rev} is not a commit of this history: {}",
        String::from_utf8_lossy(&ancestor.stderr)
    );
    let hooks = git(&["show", &format!("{rev}:.pre-commit-hooks.yaml")]);
    assert!(hooks.status.success(), "no .pre-commit-hooks.yaml at {rev}");
    let hooks = String::from_utf8(hooks.stdout).unwrap();
    let named: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- id: "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert!(!named.is_empty());
    for id in named {
        assert!(
            hooks.contains(&format!("- id: {id}\n")),
            "hook {id} is not offered at {rev}"
        );
    }
    // The hooks at that commit lint action requests as render checks them.
    assert!(
        hooks.contains("ActionRequest"),
        "the hooks at {rev} predate the action-request lint"
    );
}
