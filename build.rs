//! Build script: when the crate is built from a git checkout, `tao-k8s --version` also names
//! the commit (`tao-k8s 0.1.0 (commit 0123456789ab)`), so a bug report says exactly what ran.
//! Outside a checkout (a published crate, a tarball) the version stands alone.
//!
//! It also builds the static tables of the strict Kubernetes checker (`build/k8s_tables.rs`).

use std::path::Path;
use std::process::Command;

#[path = "build/k8s_tables.rs"]
mod k8s_tables;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/k8s_tables.rs");
    let out = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    k8s_tables::generate(Path::new(env!("CARGO_MANIFEST_DIR")), Path::new(&out));
    let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        println!(
            "cargo:rustc-env=TAO_K8S_VERSION={}",
            env!("CARGO_PKG_VERSION")
        );
        return;
    };
    // Build again when HEAD moves: a commit, a checkout, a fetch into the current branch.
    for dir in [
        git(&["rev-parse", "--git-dir"]),
        git(&["rev-parse", "--git-common-dir"]),
    ]
    .into_iter()
    .flatten()
    {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/packed-refs");
    }
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(common) = git(&["rev-parse", "--git-common-dir"])
    {
        println!("cargo:rerun-if-changed={common}/{reference}");
    }
    println!(
        "cargo:rustc-env=TAO_K8S_VERSION={} (commit {commit})",
        env!("CARGO_PKG_VERSION")
    );
}
