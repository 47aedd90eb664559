//! Pod Security admission's own test fixtures (`fixtures/pss-oracle/`, copied verbatim from
//! the Kubernetes repository): each Pod must be admitted (`pass/`) or refused (`fail/`) at its
//! level and policy version. Versions past the newest this project describes are left out.

mod common;

use common::ROOT;
use std::path::{Path, PathBuf};

/// Where this project and the fixture disagree, and why; each must still disagree (a fix
/// removes its line).
const KNOWN: &[(&str, &str)] = &[
    (
        "baseline/v1.35/pass/procmount_baseline1.yaml",
        "upstream's stored revisions disagree: the same Pod (procMount Unmasked with \
         hostUsers: false) is also a fail fixture of v1.35",
    ),
    (
        "restricted/v1.35/pass/procmount1.yaml",
        "as above: restricted/v1.35/fail/procmount_restricted0.yaml refuses the same Pod",
    ),
    ("restricted/v1.35/pass/procmount_baseline1.yaml", "as above"),
    (
        "baseline/v1.37/fail/ulimits0.yaml",
        "securityContext.ulimits is no field of the 1.37 API this project describes \
         (strict-schema reports it)",
    ),
    ("baseline/v1.37/fail/ulimits1.yaml", "as above"),
];

fn fixtures(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            fixtures(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
}

#[test]
fn upstream_pod_security_verdicts_are_matched() {
    let root = Path::new(ROOT).join("fixtures/pss-oracle");
    let mut files = Vec::new();
    fixtures(&root, &mut files);
    files.sort();
    let newest = tao_k8s::kube::KubeVersion::NEWEST;
    let mut checked = 0;
    let mut wrong = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let parts: Vec<&str> = relative.split('/').collect();
        let [level, version, verdict, _] = parts[..] else {
            panic!("{relative}");
        };
        let minor: u32 = version.strip_prefix("v1.").unwrap().parse().unwrap();
        if minor > newest.minor {
            continue;
        }
        let out = common::tao()
            .args([
                "--color=never",
                "lint",
                "--select",
                "pod-security",
                "--pod-security",
            ])
            .arg(format!("{level}:{version}"))
            .arg(file)
            .output()
            .unwrap();
        let refused = match out.status.code() {
            Some(0) => false,
            Some(1) => true,
            other => panic!("{relative}: exit {other:?}"),
        };
        checked += 1;
        let agrees = refused == (verdict == "fail");
        let known = KNOWN.iter().any(|(k, _)| *k == relative);
        if agrees == known {
            wrong.push(format!(
                "{relative}: {} ({})",
                if agrees {
                    "now agrees: remove it from KNOWN"
                } else {
                    "disagrees"
                },
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .next()
                    .unwrap_or_default()
            ));
        }
    }
    assert!(checked >= 100, "{checked} fixtures checked");
    assert_eq!(wrong, Vec::<String>::new());
}
