//! Repository maintenance tasks for tao-k8s, run as `cargo run -p xtask -- <task>`.
//!
//! - `k8s-description` regenerates the compact description of every built-in Kubernetes kind
//!   for each minor this crate has a feature for (`v1_XX` in its Cargo.toml) under
//!   `schemas/k8s/` (the strict checker is built from it, and the supported range with it);
//!   k8s-openapi carries one minor per build, so this re-runs cargo with the feature of each
//!   minor it is not built for. `--check` verifies the committed files instead (CI).
//! - `k8s-schemas` regenerates the 1.28 JSON schemas of seven kinds under
//!   `schemas/k8s/v1.28/`, the oracle of the checker's differential test.
//!
//! - `k8s-lists --from DIR` regenerates `schemas/k8s/lists.txt`, the associative lists of
//!   every minor (server-side apply's keys), from the upstream OpenAPI that the
//!   `kubernetes-validate` package ships (DIR: its `kubernetes-json-schema` folder).
//!
//! Arguments are parsed by hand because a few flags do not justify a CLI dependency.

mod k8s_description;
mod k8s_lists;
#[cfg(feature = "v1_28")]
mod k8s_schemas;
#[cfg(any(k8s24, k8s29))]
mod kinds;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "\
usage: cargo run -p xtask -- <task>

tasks:
  k8s-description [--check] [1.XX ...]
                         regenerate (or check) schemas/k8s/v1.XX.txt and definitions.txt
                         for the given minors (default: every minor of a v1_XX
                         feature of xtask/Cargo.toml)
  k8s-lists [--check] --from DIR
                         regenerate (or check) schemas/k8s/lists.txt from the
                         kubernetes-json-schema folder of the kubernetes-validate package
  k8s-schemas            regenerate schemas/k8s/v1.28/*.json (the test oracle)
  k8s-schemas --check    exit 1 if the committed schemas differ from a fresh generation
";

/// Exit code for a malformed command line, distinct from 1 (drift or I/O failure) so CI
/// logs make it obvious when the invocation itself is wrong.
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["-h" | "--help" | "help"] => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        #[cfg(feature = "v1_28")]
        ["k8s-schemas"] => run_k8s_schemas(false),
        #[cfg(feature = "v1_28")]
        ["k8s-schemas", "--check"] => run_k8s_schemas(true),
        ["k8s-description", rest @ ..] => {
            let check = rest.contains(&"--check");
            let mut minors = Vec::new();
            for arg in rest.iter().filter(|a| **a != "--check") {
                let known = known_minors();
                match arg.strip_prefix("1.").and_then(|m| m.parse::<u32>().ok()) {
                    Some(m) if known.contains(&m) => minors.push(m),
                    _ => {
                        eprint!(
                            "error: not a version of a v1_XX feature of xtask (1.{}..1.{}): {arg}\n\n{USAGE}",
                            known[0],
                            known[known.len() - 1]
                        );
                        return ExitCode::from(EXIT_USAGE);
                    }
                }
            }
            if minors.is_empty() {
                minors = known_minors();
            }
            run_k8s_description(check, &minors)
        }
        ["k8s-lists", rest @ ..] => {
            let check = rest.contains(&"--check");
            let from = rest
                .iter()
                .position(|a| *a == "--from")
                .and_then(|i| rest.get(i + 1));
            let known = rest.iter().enumerate().all(|(i, a)| {
                *a == "--check" || *a == "--from" || (i > 0 && rest[i - 1] == "--from")
            });
            match from {
                Some(from) if known => run_k8s_lists(check, Path::new(from)),
                _ => {
                    eprint!("error: k8s-lists needs --from DIR\n\n{USAGE}");
                    ExitCode::from(EXIT_USAGE)
                }
            }
        }
        [] => {
            eprint!("error: no task given\n\n{USAGE}");
            ExitCode::from(EXIT_USAGE)
        }
        _ => {
            eprint!("error: unrecognised arguments: {args:?}\n\n{USAGE}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// The minors this crate can describe: one `v1_XX` feature each (k8s-openapi builds one minor
/// at a time). Adding a Kubernetes minor starts with its feature.
fn known_minors() -> Vec<u32> {
    let mut minors: Vec<u32> = include_str!("../Cargo.toml")
        .lines()
        .filter_map(|line| line.strip_prefix("v1_")?.split_once(' ')?.0.parse().ok())
        .collect();
    minors.sort_unstable();
    minors.dedup();
    minors
}

/// The repository root, found from this crate's manifest directory so the task behaves the
/// same whatever directory `cargo run` is started from.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the repository root")
        .to_path_buf()
}

/// Each minor in turn: in this process if it is the one this build carries, else by a build
/// of this crate with that minor's feature.
fn run_k8s_description(check: bool, minors: &[u32]) -> ExitCode {
    let mut ok = true;
    for &minor in minors {
        #[cfg(any(k8s24, k8s29))]
        if minor == kinds::MINOR {
            ok &= describe_this_minor(check);
            continue;
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut command = Command::new(cargo);
        // The workspace uses resolver 1, where feature flags apply to the package of the
        // manifest cargo is pointed at, not to a `-p` selection.
        let manifest = repo_root().join("xtask/Cargo.toml");
        command.args(["run", "--locked", "--quiet", "--no-default-features"]);
        // The workspace optimises dependencies; k8s-openapi is huge and runs once here.
        command.args(["--config", "profile.dev.package.k8s-openapi.opt-level=0"]);
        command.arg("--manifest-path").arg(manifest);
        command.arg(format!("--features=v1_{minor}"));
        command.args(["--", "k8s-description", &format!("1.{minor}")]);
        if check {
            command.arg("--check");
        }
        match command.status() {
            Ok(status) => ok &= status.success(),
            Err(err) => {
                eprintln!("error: running cargo for 1.{minor}: {err}");
                ok = false;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(any(k8s24, k8s29))]
fn describe_this_minor(check: bool) -> bool {
    let described = kinds::collect()
        .map_err(|e| e.to_string())
        .and_then(|(kinds, schemas)| {
            k8s_description::describe(kinds::MINOR, kinds::SOURCE, &kinds, &schemas)
        });
    let description = match described {
        Ok(d) => d,
        Err(err) => {
            eprintln!("error: describing Kubernetes 1.{}: {err}", kinds::MINOR);
            return false;
        }
    };
    let root = repo_root();
    let result = if check {
        k8s_description::check(&root, &description)
    } else {
        k8s_description::write(&root, &description).map(|()| true)
    };
    result.unwrap_or_else(|err| {
        eprintln!("error: {}: {err}", k8s_description::OUTPUT_DIR);
        false
    })
}

fn run_k8s_lists(check: bool, from: &Path) -> ExitCode {
    let root = repo_root();
    let result = k8s_lists::generate(&root, from, &known_minors())
        .and_then(|text| k8s_lists::write_or_check(&root, &text, check).map_err(|e| e.to_string()));
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("error: {}: {err}", k8s_lists::OUTPUT);
            ExitCode::FAILURE
        }
    }
}

#[cfg(feature = "v1_28")]
fn run_k8s_schemas(check: bool) -> ExitCode {
    let root = repo_root();
    let generated = match k8s_schemas::generate_all() {
        Ok(files) => files,
        Err(err) => {
            eprintln!("error: generating schemas: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = if check {
        k8s_schemas::check(&root, &generated)
    } else {
        k8s_schemas::write(&root, &generated)
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("error: {}: {err}", k8s_schemas::OUTPUT_DIR);
            ExitCode::FAILURE
        }
    }
}
