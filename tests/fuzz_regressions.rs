//! Every input under `fuzz/regressions/<target>/` (inputs that once broke a fuzz target,
//! minimized) replayed through the target's property, `fuzz/oracles.rs`, on stable Rust, with
//! the project's fixtures, so that no target can pass without checking anything.
//! `lint_structured` findings are kept as the YAML they produced, under `lint_bytes`.

#[path = "../fuzz/oracles.rs"]
mod oracles;

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file below `dir`, sorted; none when it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Replays the target's regressions and `extra` inputs; returns how many it replayed.
fn replay(target: &str, oracle: fn(&[u8]), extra: Vec<Vec<u8>>) -> usize {
    let regressions = files(&root().join("fuzz/regressions").join(target));
    for path in &regressions {
        let data = std::fs::read(path).unwrap();
        let name = path.display().to_string();
        if let Err(e) = std::panic::catch_unwind(|| oracle(&data)) {
            std::panic::resume_unwind(Box::new(format!("{name}: {e:?}")));
        }
    }
    for data in &extra {
        oracle(data);
    }
    let count = regressions.len() + extra.len();
    assert!(count > 0, "{target}: nothing replayed");
    count
}

fn fixture_files(dirs: &[&str], ext: &str) -> Vec<Vec<u8>> {
    let inputs: Vec<Vec<u8>> = dirs
        .iter()
        .flat_map(|d| files(&root().join(d)))
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(!inputs.is_empty(), "no fixtures in {dirs:?}");
    inputs
}

fn requests() -> Vec<Vec<u8>> {
    fixture_files(
        &["fixtures/requests/valid", "fixtures/requests/invalid"],
        "yaml",
    )
}

#[test]
fn request() {
    replay("request", oracles::request, requests());
}

#[test]
fn compile() {
    replay("compile", oracles::compile, requests());
}

#[test]
fn lint_bytes() {
    let manifests = fixture_files(&["fixtures/lint", "fixtures/lint-cli"], "yaml");
    replay("lint_bytes", oracles::lint_bytes, manifests);
}

#[test]
fn staging() {
    let seeds: [&[&str]; 3] = [
        &[
            "/data/coco",
            "/home/alice/datasets/coco|data://coco",
            "/specs",
            "/home/alice/specs",
            "/results",
            "/home/alice/results",
            "/home/alice/results/dino",
            "-e|/home/alice/specs/train.yaml|results_dir=/home/alice/results/dino",
            "/home/alice/datasets/coco/x.json",
            "data://coco/train2017",
            "/home/alice/datasets2/y",
            "k=/home/alice/specs",
            "a b",
        ],
        &[
            "/data",
            "/",
            "/specs",
            "",
            "/results",
            "",
            "/results/o",
            "train|k=|",
            "",
            "é",
        ],
        &[
            "/data",
            "",
            "/specs",
            "",
            "/results",
            "",
            "/results/out",
            "-e|/specs/t.yaml",
        ],
    ];
    let extra = seeds.iter().map(|s| s.join("\n").into_bytes()).collect();
    replay("staging", oracles::staging, extra);
}

#[test]
fn shell_quote() {
    let values = [
        "",
        "plain",
        "it's",
        "''",
        "$(rm -rf /) `x` ${X:-y} !e * ~",
        "a\nb\\c\"d\t",
        "日本",
        "-n",
        "a\0b",
    ];
    let extra = values.iter().map(|v| v.as_bytes().to_vec()).collect();
    replay("shell_quote", oracles::shell_quote, extra);
}
