//! Lists the built-in kinds of the one Kubernetes minor this build of the xtask is for.
//!
//! k8s-openapi has no list of its kinds, so this reads the crate's own source: every type with
//! an `impl crate::Resource for` under `src/v1_XX/` is a kind, reachable at the module path of
//! its file (the crate re-exports each type from its directory's module). Discovery responses
//! and `Status` (under `apimachinery/`) are kinds nobody applies and are left out.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// The exact crate versions pinned in Cargo.toml, with the minors each one carries.
const LINES: &[(&str, &str, std::ops::RangeInclusive<u32>)] = &[
    ("k8s24", "k8s-openapi-0.24.0", 28..=32),
    ("k8s29", "k8s-openapi-0.29.0", 33..=37),
];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(k8s24)");
    println!("cargo::rustc-check-cfg=cfg(k8s29)");
    println!("cargo::rerun-if-changed=build.rs");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let minors: Vec<u32> = (28..=37)
        .filter(|m| env::var_os(format!("CARGO_FEATURE_V1_{m}")).is_some())
        .collect();
    let mut kinds = String::new();
    match minors.as_slice() {
        [] => {}
        [minor] => {
            let (cfg, dir, _) = LINES
                .iter()
                .find(|(_, _, range)| range.contains(minor))
                .expect("every feature belongs to a crate line");
            println!("cargo::rustc-cfg={cfg}");
            println!("cargo::rustc-env=K8S_MINOR={minor}");
            let src = crate_source(dir).join(format!("src/v1_{minor}"));
            let mut found = Vec::new();
            for top in ["api", "apiextensions_apiserver", "kube_aggregator"] {
                scan(&src, &src.join(top), &mut found);
            }
            found.sort();
            assert!(
                found.len() > 50,
                "only {} kinds found in {}",
                found.len(),
                src.display()
            );
            kinds.push_str("kinds! {\n");
            for path in found {
                writeln!(kinds, "    {path},").unwrap();
            }
            kinds.push_str("}\n");
        }
        _ => panic!("enable exactly one of the v1_* features (default: v1_28), got {minors:?}"),
    }
    fs::write(out.join("kinds.rs"), kinds).expect("OUT_DIR is writable");
}

/// The unpacked source of a registry crate (`~/.cargo/registry/src/<index>/<name-version>`).
fn crate_source(dir: &str) -> PathBuf {
    let home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .expect("CARGO_HOME or HOME is set");
    let registry = home.join("registry/src");
    for index in fs::read_dir(&registry).expect("the cargo registry is readable") {
        let candidate = index.expect("registry entry").path().join(dir);
        if candidate.is_dir() {
            return candidate;
        }
    }
    panic!("{dir} not found under {}", registry.display())
}

/// Appends `k8s::<module path>::<Type>` for every `impl crate::Resource for Type` below `dir`.
fn scan(root: &Path, dir: &Path, found: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("source entry").path();
        if path.is_dir() {
            scan(root, &path, found);
            continue;
        }
        let text = fs::read_to_string(&path).expect("source file is UTF-8");
        for line in text.lines() {
            if let Some(name) = line.strip_prefix("impl crate::Resource for ") {
                let name = name.trim_end_matches(" {").trim();
                let module = path
                    .parent()
                    .unwrap()
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('/', "::");
                found.push(format!("k8s::{module}::{name}"));
            }
        }
    }
}
