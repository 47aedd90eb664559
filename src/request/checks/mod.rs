//! The cross-field rules of the spec that a JSON Schema cannot say: one command mode,
//! `{config_path}` only in config mode, pinned images, where results go, quantities, names
//! Kubernetes accepts, storage that makes sense, and no credential anywhere in the request.
//! Each rule reports at the field it is about, through the request's spanned tree.
//!
//! One check per file, each with the codes it reports, its explanation and its unit tests;
//! [`CHECKS`] lists them in the order they run, which is the order of their diagnostics.

use super::ActionRequest;
use crate::diag::Diagnostic;
use crate::yaml::{Node, Step, Value, display_path};

pub use crate::codes::{
    CHECKPOINT, COMMAND_MODE, CONFIG_PATH, CREDENTIAL, ENV_NAME, IMAGE, NAME, QUANTITY,
    RESULTS_DIR, STORAGE,
};
use crate::yaml::dotted as path;

/// A check: one file of this module, declared with `request_check!`.
#[derive(Clone, Copy)]
pub struct Check {
    /// Its kebab name.
    pub name: &'static str,
    /// The codes (of `crate::codes`) it reports.
    pub codes: &'static [&'static str],
    /// What it checks, why it matters, an example and the fix.
    pub explain: &'static str,
    run: fn(&mut Checker, &ActionRequest),
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Check")
            .field("name", &self.name)
            .field("codes", &self.codes)
            .finish_non_exhaustive()
    }
}

/// Declare a check: its doc comment is its explanation.
macro_rules! request_check {
    ($(#[doc = $doc:expr])* $vis:vis const $ident:ident = { name: $name:expr, codes: [$($code:expr),* $(,)?], run: $run:expr $(,)? }) => {
        $(#[doc = $doc])*
        $vis const $ident: super::Check = super::Check {
            name: $name,
            codes: &[$($code),*],
            explain: concat!($($doc, "\n"),*),
            run: $run,
        };
    };
}

mod checkpoint;
mod command;
mod control_characters;
mod credential_in_request;
mod env;
mod extra_credentials;
mod image;
mod naming;
mod record_limits;
mod resources;
mod results_dir;
mod s3;
mod storage;
mod tolerations;

/// Every check, in the order they run.
pub const CHECKS: &[Check] = &[
    command::CHECK,
    image::CHECK,
    resources::CHECK,
    s3::CHECK,
    storage::CHECK,
    results_dir::CHECK,
    checkpoint::CHECK,
    env::CHECK,
    extra_credentials::CHECK,
    record_limits::CHECK,
    naming::CHECK,
    tolerations::CHECK,
    credential_in_request::CHECK,
    control_characters::CHECK,
];

/// The placeholder replaced by the staged spec's in-pod path.
pub const CONFIG_PATH_TOKEN: &str = "{config_path}";

/// Environment the renderer sets on multi-node pods for TAO's entrypoint and torchrun; a
/// request may not set them itself.
pub const RENDEZVOUS_ENV: &[&str] = &[
    "WORLD_SIZE",
    "NUM_GPU_PER_NODE",
    "NNODES",
    "NPROC_PER_NODE",
    "NODE_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TAO_STRICT_MULTINODE",
];

/// The volume of the staged config spec.
pub const CONFIG_VOLUME: &str = "tao-k8s-config";
/// The memory-backed `/dev/shm` volume.
pub const SHM_VOLUME: &str = "tao-k8s-shm";
/// Where the staged config spec is mounted, read-only.
pub const CONFIG_DIR: &str = "/etc/tao-k8s/config";
/// Volume names the renderer uses.
pub const RESERVED_VOLUMES: &[&str] = &[CONFIG_VOLUME, SHM_VOLUME];
/// Container paths the renderer mounts.
pub const RESERVED_MOUNT_PATHS: &[&str] = &["/etc/tao-k8s", "/dev/shm"];

/// Give a diagnostic its path and a primary label at the node the path names (or at the
/// deepest part of the path that exists, for a field that is missing).
pub(crate) fn pin(tree: &Node, path: &[Step], diag: Diagnostic, label: &str) -> Diagnostic {
    let (_, key, node) = tree.deepest(path);
    let span = match &node.value {
        Value::Map(_) | Value::Seq(_) => key.map_or(node.span.clone(), |k| k.span.clone()),
        _ => node.span.clone(),
    };
    let diag = if path.is_empty() {
        diag
    } else {
        diag.at_path(display_path(path))
    };
    diag.primary(span, label)
}

/// Where the checks put what they find, pinned in the request's tree.
pub struct Checker<'a> {
    tree: &'a Node,
    diags: Vec<Diagnostic>,
}

fn with(mut base: Vec<Step>, step: impl Into<StepArg>) -> Vec<Step> {
    base.push(match step.into() {
        StepArg::Key(k) => Step::Key(k.into()),
        StepArg::Index(i) => Step::Index(i),
    });
    base
}

enum StepArg {
    Key(String),
    Index(usize),
}
impl From<&str> for StepArg {
    fn from(k: &str) -> Self {
        StepArg::Key(k.to_string())
    }
}
impl From<&String> for StepArg {
    fn from(k: &String) -> Self {
        StepArg::Key(k.clone())
    }
}
impl From<usize> for StepArg {
    fn from(i: usize) -> Self {
        StepArg::Index(i)
    }
}

impl Checker<'_> {
    /// Pin `d` at the node `at` names (its key instead, with `on_key`) and keep it.
    fn push(
        &mut self,
        d: Diagnostic,
        at: &[Step],
        label: &str,
        help: Option<String>,
        on_key: bool,
    ) {
        let mut d = pin(self.tree, at, d, label);
        if on_key
            && let (Some((Some(key), _)), Some(first)) =
                (self.tree.lookup(at), d.labels.first_mut())
        {
            first.span = key.span.clone();
        }
        d.help = help;
        self.diags.push(d);
    }

    fn error(
        &mut self,
        code: &'static str,
        at: &[Step],
        message: String,
        label: &str,
        help: Option<String>,
    ) {
        self.push(Diagnostic::error(code, message), at, label, help, false);
    }

    fn warn(
        &mut self,
        code: &'static str,
        at: &[Step],
        message: String,
        label: &str,
        help: Option<String>,
    ) {
        self.push(Diagnostic::warning(code, message), at, label, help, false);
    }

    /// A finding about a map key rather than its value.
    fn key_error(
        &mut self,
        code: &'static str,
        at: &[Step],
        message: String,
        label: &str,
        help: Option<String>,
    ) {
        self.push(Diagnostic::error(code, message), at, label, help, true);
    }
}

/// Every cross-field problem of a structurally valid request.
pub(super) fn check(req: &ActionRequest, tree: &Node) -> Vec<Diagnostic> {
    let mut c = Checker {
        tree,
        diags: Vec::new(),
    };
    for check in CHECKS {
        (check.run)(&mut c, req);
    }
    c.diags
}

/// Why a container path is not a clean absolute path, if it is not.
fn path_problem(p: &str) -> Option<&'static str> {
    if !p.starts_with('/') {
        Some("is not absolute")
    } else if p[1..]
        .trim_end_matches('/')
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
        && p != "/"
    {
        Some("has an empty, `.` or `..` segment")
    } else {
        None
    }
}

/// Whether `p` is `dir` or below it, by whole path segments.
pub fn is_under(p: &str, dir: &str) -> bool {
    p == dir
        || dir == "/"
        || p.strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Small requests for the checks' unit tests: a valid one, changed by the test.
#[cfg(test)]
mod testing {
    use super::{Check, Checker};
    use crate::diag::Diagnostic;
    use crate::request::ActionRequest;
    use crate::source::Source;
    use serde_json::{Value as Json, json};

    /// No diagnostics.
    pub const NONE: [(&str, &str); 0] = [];

    /// A valid request with one GPU, one claim mounted at `/results` and args mode.
    pub fn valid() -> Json {
        json!({
            "apiVersion": "tao-k8s/v1",
            "kind": "ActionRequest",
            "metadata": {"name": "dino-train"},
            "spec": {
                "image": "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt",
                "networkArch": "dino",
                "action": "train",
                "command": {"args": ["dino", "train", "-e", "/results/spec.yaml"]},
                "resources": {"gpusPerNode": 1},
                "storage": {"mounts": [
                    {"name": "results", "persistentVolumeClaim": "tao-results", "mountPath": "/results"}
                ]},
                "resultsDir": "/results/run"
            }
        })
    }

    /// What `check` alone reports about the valid request as `edit` changes it.
    pub fn diagnostics(check: &Check, edit: impl FnOnce(&mut Json)) -> Vec<Diagnostic> {
        let mut request = valid();
        edit(&mut request);
        let text = serde_json::to_string_pretty(&request).unwrap();
        let source = Source::new("request.json", text);
        let tree = crate::yaml::parse(&source, crate::yaml::Limits::REQUEST)
            .unwrap()
            .documents
            .remove(0);
        let req: ActionRequest = serde_json::from_value(tree.to_json()).unwrap();
        let mut c = Checker {
            tree: &tree,
            diags: Vec::new(),
        };
        (check.run)(&mut c, &req);
        for d in &c.diags {
            assert!(
                check.codes.contains(&d.code),
                "`{}` reports {}, which it does not declare",
                check.name,
                d.code
            );
        }
        c.diags
    }

    /// The code and path of each diagnostic.
    pub fn reports(
        check: &Check,
        edit: impl FnOnce(&mut Json),
    ) -> Vec<(&'static str, &'static str)> {
        severities(check, edit)
            .into_iter()
            .map(|(code, path, _)| (code, path))
            .collect()
    }

    /// The code, path and severity of each diagnostic.
    pub fn severities(
        check: &Check,
        edit: impl FnOnce(&mut Json),
    ) -> Vec<(&'static str, &'static str, &'static str)> {
        diagnostics(check, edit)
            .into_iter()
            .map(|d| {
                let path: &'static str = Box::leak(d.path.unwrap_or_default().into_boxed_str());
                let severity = match d.severity {
                    crate::diag::Severity::Error => "error",
                    crate::diag::Severity::Warning => "warning",
                    crate::diag::Severity::Note => "note",
                };
                (d.code, path, severity)
            })
            .collect()
    }
}

/// The registry stays honest: every check documented, its codes real, each exercised by a
/// fixture of `fixtures/requests/invalid/` and by its own unit tests.
#[cfg(test)]
mod tests {
    use super::{CHECKS, Checker};
    use crate::diag::Diagnostic;
    use crate::source::Source;
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    const ROOT: &str = env!("CARGO_MANIFEST_DIR");

    #[test]
    fn every_check_is_named_once_and_documented() {
        let mut names = BTreeSet::new();
        for check in CHECKS {
            assert!(names.insert(check.name), "`{}` twice", check.name);
            assert!(
                !check.name.is_empty()
                    && check
                        .name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "`{}` is not a kebab name",
                check.name
            );
            let mut at = 0;
            for section in ["What it checks:", "Why it matters:", "Example:", "Fix:"] {
                let found = check.explain[at..].find(section).map(|i| at + i);
                let Some(start) = found else {
                    panic!("`{}` lacks `{section}`, or has it out of order", check.name);
                };
                at = start + section.len();
                let body = check.explain[at..].split("\n\n").next().unwrap_or_default();
                assert!(
                    body.trim().len() > 10,
                    "`{}`: `{section}` says nothing",
                    check.name
                );
            }
        }
    }

    #[test]
    fn every_code_a_check_declares_is_a_code_of_the_table() {
        for check in CHECKS {
            assert!(!check.codes.is_empty(), "`{}` declares no code", check.name);
            for code in check.codes {
                assert!(
                    crate::codes::ALL.iter().any(|c| c.code == *code),
                    "`{}` declares {code}, which `codes::ALL` does not have",
                    check.name
                );
            }
        }
    }

    /// One check's diagnostics about a loaded request, as the loader keeps them.
    fn run(check: &super::Check, loaded: &crate::request::Loaded) -> Vec<Diagnostic> {
        let mut c = Checker {
            tree: &loaded.tree,
            diags: Vec::new(),
        };
        (check.run)(&mut c, &loaded.request);
        c.diags.retain(|d| loaded.admits(d));
        c.diags
    }

    fn same(a: &Diagnostic, b: &Diagnostic) -> bool {
        (a.code, a.severity, &a.path, &a.message) == (b.code, b.severity, &b.path, &b.message)
    }

    /// Each fixture is loaded as `tao-k8s render` loads it; a check is exercised by the fixture
    /// when a diagnostic it makes, alone, is among those the loader reports.
    #[test]
    fn every_check_is_exercised_by_an_invalid_fixture() {
        let dir = Path::new(ROOT).join("fixtures/requests/invalid");
        let mut exercised: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let source = Source::new(name.clone(), std::fs::read_to_string(&path).unwrap());
            let (reported, loaded) = match crate::request::load(&source) {
                Ok(loaded) => (loaded.warnings.clone(), loaded),
                Err(refused) => match refused.partial {
                    Some(loaded) => (refused.diagnostics, *loaded),
                    None => continue,
                },
            };
            for check in CHECKS {
                let found = run(check, &loaded);
                for d in &found {
                    assert!(
                        check.codes.contains(&d.code),
                        "{name}: `{}` reports {}, which it does not declare",
                        check.name,
                        d.code
                    );
                }
                if found.iter().any(|d| reported.iter().any(|r| same(r, d))) {
                    exercised.entry(check.name).or_default().push(name.clone());
                }
            }
        }
        for check in CHECKS {
            assert!(
                exercised.contains_key(check.name),
                "no fixture of fixtures/requests/invalid/ exercises `{}`: add one",
                check.name
            );
        }
    }

    /// Each check's file is named after it and tests the check itself; every file of this
    /// module is a registered check.
    #[test]
    fn every_check_has_its_file_and_its_unit_tests() {
        let dir = Path::new(ROOT).join("src/request/checks");
        let mut files = BTreeSet::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name != "mod.rs" {
                files.insert(name);
            }
        }
        for check in CHECKS {
            let file = format!("{}.rs", check.name.replace('-', "_"));
            assert!(
                files.remove(&file),
                "`{}` has no file src/request/checks/{file}",
                check.name
            );
            let text = std::fs::read_to_string(dir.join(&file)).unwrap();
            assert!(
                text.contains(&format!("name: \"{}\",", check.name)),
                "{file} does not declare `{}`",
                check.name
            );
            let tests = text
                .split_once("#[cfg(test)]")
                .map(|(_, t)| t)
                .unwrap_or_default();
            assert!(
                tests.matches("#[test]").count() >= 2 && tests.contains("(&super::CHECK"),
                "{file} has no unit tests running its check (valid and invalid cases)"
            );
        }
        assert!(files.is_empty(), "files that are no check: {files:?}");
    }
}
