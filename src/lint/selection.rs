//! Which rules run: `--select` and `--ignore` by codes, names and groups, the opt-in rules,
//! and the options every rule of a run shares (the findings cap, CRDs, the Kubernetes version).

use super::{KubeVersion, Meta, Rule, registry};

/// Which rules run.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Codes, kebab names or groups, in any case; empty = all.
    pub select: Vec<String>,
    pub ignore: Vec<String>,
    /// Most reports for one source; the rest are counted in one last report (TK009) with
    /// their highest severity, so that a hostile input cannot fill memory with findings.
    /// `None` = no limit.
    pub max_findings: Option<usize>,
    /// Custom kinds whose objects strict-schema checks (`--crd`).
    pub crds: Option<std::sync::Arc<crate::crd::Catalogue>>,
    /// A kind with no schema is an error, not a note (`--strict-kinds`).
    pub strict_kinds: bool,
    /// The Kubernetes version objects are checked against; `None` = the newest supported.
    pub kube_version: Option<KubeVersion>,
    /// The Pod Security Standards level of namespaces no Namespace in the file labels
    /// (`--pod-security`); `None` = not checked.
    pub pod_security: Option<crate::kube::PodSecurity>,
    /// ValidatingAdmissionPolicies, their bindings and params (`--policy`).
    pub policies: Option<std::sync::Arc<crate::lint::policy::Policies>>,
}

/// Whether a code, rule name or group names the rule, in any case (`tk101`, `REDACTION`).
fn matches(meta: &Meta, names: &[String]) -> bool {
    names.iter().any(|n| {
        [meta.code, meta.name, meta.group.name()]
            .iter()
            .any(|m| m.eq_ignore_ascii_case(n))
    })
}

/// Rules that run only when `--select` names them by code or name, never by default or by
/// their group: a policy some projects want and others do not (`secret-data`: no Secret
/// object with values in the manifest at all).
pub const OPT_IN: [&str; 1] = ["TK102"];

impl Selection {
    /// The rules this selection runs, in registry order. The answer for the last names asked
    /// is kept: a run asks once per source (render's self-lint once per request), with the same
    /// names, and matching them against every rule is most of a small source's lint set-up.
    pub fn rules(&self) -> Vec<&'static dyn Rule> {
        type Memo = Option<(Vec<String>, Vec<String>, Vec<&'static dyn Rule>)>;
        static LAST: std::sync::Mutex<Memo> = std::sync::Mutex::new(None);
        let mut last = LAST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((select, ignore, rules)) = &*last
            && *select == self.select
            && *ignore == self.ignore
        {
            return rules.clone();
        }
        let rules = self.matched();
        *last = Some((self.select.clone(), self.ignore.clone(), rules.clone()));
        rules
    }

    fn matched(&self) -> Vec<&'static dyn Rule> {
        let named = |meta: &Meta| {
            self.select
                .iter()
                .any(|n| meta.code.eq_ignore_ascii_case(n) || meta.name.eq_ignore_ascii_case(n))
        };
        registry::RULES
            .iter()
            .copied()
            .filter(|r| match OPT_IN.contains(&r.meta().code) {
                true => named(r.meta()),
                false => self.select.is_empty() || matches(r.meta(), &self.select),
            })
            .filter(|r| !matches(r.meta(), &self.ignore))
            .collect()
    }

    /// Names in `--select`/`--ignore` that match no rule, code or group.
    pub fn unknown(&self) -> Vec<&str> {
        self.select
            .iter()
            .chain(&self.ignore)
            .filter(|n| {
                !registry::RULES
                    .iter()
                    .any(|r| matches(r.meta(), std::slice::from_ref(n)))
            })
            .map(String::as_str)
            .collect()
    }
}
