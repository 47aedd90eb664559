use crate::lint::api::{Report, index, int, items, key, shown, text};
use crate::lint::{Document, Findings, Rule};
use crate::yaml::{Node, Step, Value};

crate::rule! {
    /// What it checks: the `securityContext` of the pod and of every container, as the API
    /// server's `ValidateSecurityContext` and `validatePodSpecSecurityContext` check them:
    /// `runAsUser`, `runAsGroup` and `fsGroup` in 0-2147483647; not `privileged: true` with
    /// `allowPrivilegeEscalation: false`, nor `CAP_SYS_ADMIN` added with it; a `Localhost`
    /// seccomp or AppArmor profile names its `localhostProfile`, which no other type has;
    /// `sysctls` names are sysctl names (`net.core.somaxconn`, no `=value`).
    ///
    /// Why it matters: the API server refuses the pod, or the Job whose template holds it.
    /// A sysctl written `name=value` and `runAsUser: -1` meant as "unset" are the usual slips.
    ///
    /// Example: `sysctls: [{name: "net.core.somaxconn=1024"}]`; `privileged: true` with
    /// `allowPrivilegeEscalation: false`.
    ///
    /// Fix: the value in `value`; leave ids out rather than negative; drop one of the two
    /// contradicting settings.
    pub struct SecurityContext {
        code: "TK423",
        name: "security-context",
        group: Api,
        severity: Error,
    }
}

impl Rule for SecurityContext {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some((pod, spec)) = doc.pod_spec() else {
            return;
        };
        let mut report = Report::new(doc, out);
        if let Some(sc) = spec.get("securityContext") {
            let at = key(pod, "securityContext");
            common(
                &mut report,
                &at,
                sc,
                &["runAsUser", "runAsGroup", "fsGroup"],
            );
            for (i, s) in sc
                .get("sysctls")
                .map(items)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                if let Some(node) = s.get("name")
                    && let Some(name) = text(node)
                    && !is_sysctl_name(name)
                {
                    report.at(
                        key(&index(&key(&at, "sysctls"), i), "name"),
                        node,
                        format!("`{}` is not a sysctl name: the API server refuses it (dot- or slash-separated parts of lowercase letters, digits, `-` and `_`)", shown(node, 80)),
                        "the name alone (`net.core.somaxconn`), the setting in `value`",
                    );
                }
            }
        }
        for (path, container) in doc.containers() {
            let Some(sc) = container.get("securityContext") else {
                continue;
            };
            let at = key(&path.get(), "securityContext");
            common(&mut report, &at, sc, &["runAsUser", "runAsGroup"]);
            let no_escalation = matches!(
                sc.get("allowPrivilegeEscalation").map(|n| &n.value),
                Some(Value::Bool(false))
            );
            if !no_escalation {
                continue;
            }
            if let Some(node) = sc.get("privileged")
                && matches!(node.value, Value::Bool(true))
            {
                report.at(
                    key(&at, "privileged"),
                    node,
                    "`privileged: true` with `allowPrivilegeEscalation: false`: the API server refuses it (a privileged container always may escalate)".into(),
                    "drop one of them",
                );
            }
            let add = sc.get("capabilities").and_then(|c| c.get("add"));
            for (i, cap) in add.map(items).unwrap_or_default().iter().enumerate() {
                if text(cap) == Some("CAP_SYS_ADMIN") {
                    report.at(
                        index(&key(&key(&at, "capabilities"), "add"), i),
                        cap,
                        "`CAP_SYS_ADMIN` added with `allowPrivilegeEscalation: false`: the API server refuses it".into(),
                        "drop one of them",
                    );
                }
            }
        }
    }
}

/// What pod and container security contexts share: ids in range, profiles of type
/// `Localhost` with their `localhostProfile`.
fn common(report: &mut Report, at: &[Step], sc: &Node, ids: &[&str]) {
    for &id in ids {
        if let Some(node) = sc.get(id)
            && int(node).is_some_and(|n| !(0..=2_147_483_647).contains(&n))
        {
            report.at(
                key(at, id),
                node,
                format!(
                    "`{id}: {}` is not in 0-2147483647: the API server refuses it",
                    shown(node, 20)
                ),
                "leave it out to use the image's user",
            );
        }
    }
    for profile in ["seccompProfile", "appArmorProfile"] {
        let Some((profile_key, p)) = sc.entry(profile) else {
            continue;
        };
        let localhost = p.get("type").and_then(text) == Some("Localhost");
        match (localhost, p.entry("localhostProfile")) {
            (true, None) => report.at(
                key(at, profile),
                profile_key,
                format!("`{profile}` of type `Localhost` names no `localhostProfile`: the API server refuses it (must be set when the type is Localhost)"),
                "",
            ),
            (false, Some((k, _))) => report.at(
                key(&key(at, profile), "localhostProfile"),
                k,
                format!("`localhostProfile` in a `{profile}` whose type is not `Localhost`: the API server refuses it"),
                "",
            ),
            _ => {}
        }
    }
}

/// A sysctl name: parts of `[a-z0-9]([-_a-z0-9]*[a-z0-9])?` separated by `.` or `/`, at
/// most 253 characters (the API server's `IsValidSysctlName`).
fn is_sysctl_name(name: &str) -> bool {
    name.len() <= 253
        && !name.is_empty()
        && name.split(['.', '/']).all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_lowercase() | b[0].is_ascii_digit()
                && b[b.len() - 1].is_ascii_lowercase() | b[b.len() - 1].is_ascii_digit()
                && b.iter().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-' || *c == b'_'
                })
        })
}
