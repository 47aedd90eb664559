//! Every rule, in the order they run and are listed. Registering a rule is one line.

use super::Rule;
use super::rules::*;

pub static RULES: &[&dyn Rule] = &[
    &InlineCredential,
    &SecretData,
    &StrictSchema,
    &DuplicateKey,
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
];

/// The rule with this code or kebab name, in any case (`tk101`, `Inline-Credential`).
pub fn find(name: &str) -> Option<&'static dyn Rule> {
    RULES.iter().copied().find(|r| {
        r.meta().code.eq_ignore_ascii_case(name) || r.meta().name.eq_ignore_ascii_case(name)
    })
}
