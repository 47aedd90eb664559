//! Every rule, in the order they run and are listed. Registering a rule takes its file and
//! three more places (the compiler finds a missing `mod` line; `tests/lint.rs` a registered
//! rule without fixtures or snapshot, and fixtures of no registered rule):
//!
//! 1. `rules/<rule_name>.rs`, declaring the rule with `crate::rule!` (a doc comment with
//!    *What it checks*, *Why it matters*, *Example* and *Fix*) and implementing [`Rule`];
//! 2. in `rules/mod.rs`, `mod <rule_name>;` and `pub use <rule_name>::<Rule>;`;
//! 3. one line in [`RULES`] below, where it should run and be listed;
//! 4. its fixtures, `fixtures/lint/<rule-name>/fail.yaml` (each line it reports marked
//!    `# expect: <CODE>`) and `pass.yaml` (near-misses it must not report), and the text
//!    snapshot of its failing fixture, `tests/snapshots/lint__text-<rule-name>.snap`
//!    (`cargo insta review` accepts it).

use super::Rule;
use super::rules::*;

pub static RULES: &[&dyn Rule] = &[
    &InlineCredential,
    &SecretData,
    &StrictSchema,
    &DuplicateKey,
    &DuplicateListEntry,
    &GpuLimit,
    &JobTtl,
    &JobRestartPolicy,
    &UnpinnedImage,
    &IndexedJobShm,
    &HeadlessService,
    &MasterAddr,
    &WorldSize,
    &ShmMemory,
    &NvcrPullSecret,
    &JobNameLength,
    &GpuToleration,
    &Yaml11Boolean,
    &ObjectName,
    &LabelSyntax,
    &AnnotationSyntax,
    &ObjectSize,
    &ContainerNames,
    &ContainerPorts,
    &Probes,
    &PodSpec,
    &Affinity,
    &SecurityContext,
    &EnvVarName,
    &EnvValueFrom,
    &ResourceQuantities,
    &Volumes,
    &Toleration,
    &TopologySpread,
    &ImageReference,
    &NulByte,
    &JobSpec,
    &ControllerTemplate,
    &ServiceSpec,
    &PodSecurityStandards,
    &AdmissionPolicy,
];

/// The rule with this code or kebab name, in any case (`tk101`, `Inline-Credential`).
pub fn find(name: &str) -> Option<&'static dyn Rule> {
    RULES.iter().copied().find(|r| {
        r.meta().code.eq_ignore_ascii_case(name) || r.meta().name.eq_ignore_ascii_case(name)
    })
}

/// Every code of the project, rules and the rest (`crate::codes`), has one meaning.
#[cfg(test)]
mod codes_tests {
    use crate::codes::{ALL, RENAMED, find};
    use std::collections::BTreeSet;

    #[test]
    fn no_code_has_two_meanings() {
        let mut codes = BTreeSet::new();
        let mut names = BTreeSet::new();
        let lint = super::RULES.iter().map(|r| {
            let m = r.meta();
            (m.code, m.name)
        });
        for (code, name) in ALL.iter().map(|c| (c.code, c.name)).chain(lint) {
            assert!(codes.insert(code), "{code} has two meanings");
            assert!(names.insert(name), "{name} names two codes");
            assert!(
                code.len() == 5
                    && code.starts_with("TK")
                    && code[2..].bytes().all(|b| b.is_ascii_digit()),
                "{code}"
            );
        }
        for c in ALL {
            assert!(
                !c.summary.is_empty() && c.summary.ends_with('.'),
                "{}",
                c.code
            );
        }
        for (old, new) in RENAMED {
            assert!(find(new).is_some(), "{old} -> {new}");
        }
    }
}
