//! Repository maintenance tasks for tao-k8s, run as `cargo run -p xtask -- <task>`.
//!
//! The only task so far is `k8s-schemas`, which regenerates the vendored, strict Kubernetes
//! JSON schemas under `schemas/k8s/` (or, with `--check`, verifies that the committed copies
//! match what the generator produces today, which is what CI runs). Arguments are parsed by
//! hand because two flags do not justify a CLI dependency in a build-time tool.

mod k8s_schemas;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo run -p xtask -- <task>

tasks:
  k8s-schemas            regenerate schemas/k8s/<version>/*.json
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
        ["k8s-schemas"] => run_k8s_schemas(false),
        ["k8s-schemas", "--check"] => run_k8s_schemas(true),
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

/// The repository root, found from this crate's manifest directory so the task behaves the
/// same whatever directory `cargo run` is started from.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the repository root")
        .to_path_buf()
}

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
