use crate::kube::KubeVersion;
use crate::kube::names::{is_env_name, is_relaxed_env_name};
use crate::lint::api::{Report, index, items, key, shown, text};
use crate::lint::{Document, Findings, Rule};

/// The first version whose API server accepts relaxed names by default.
const RELAXED: KubeVersion = KubeVersion {
    major: 1,
    minor: 32,
};

crate::rule! {
    /// What it checks: the `name` of every `env` entry of every container: letters, digits,
    /// `_`, `-` and `.`, not starting with a digit, and not `.`, `..` or starting with `..`
    /// (the rule of Kubernetes 1.28 to 1.31). Since Kubernetes 1.32 the API server accepts,
    /// by default, any printable ASCII character but `=` (RelaxedEnvironmentVariableValidation,
    /// beta and on in 1.32, GA in 1.34): such names are refused when the target version
    /// (`--kube-version`; render's target, lint's newest supported by default) is older than 1.32. Empty
    /// names, `=`, and characters outside printable ASCII are refused by every version.
    ///
    /// Why it matters: the API server refuses the pod, or the Job whose template holds it.
    /// Names copied from a `.env` file or a Windows environment (`ProgramFiles(x86)`,
    /// `MY VAR`) pass on a new cluster and are refused on an older one.
    ///
    /// Example: `env: [{name: "1ST_RANK"}]` (a digit first), `{name: "HTTP PROXY"}`.
    ///
    /// Fix: `UPPER_SNAKE_CASE` names, starting with a letter or `_`.
    pub struct EnvVarName {
        code: "TK407",
        name: "env-var-name",
        group: Api,
        severity: Error,
    }
}

impl Rule for EnvVarName {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let mut report = Report::new(doc, out);
        for (path, container) in doc.containers() {
            let Some(env) = container.get("env") else {
                continue;
            };
            for (i, var) in items(env).iter().enumerate() {
                let Some(node) = var.get("name") else {
                    continue;
                };
                let Some(name) = text(node) else {
                    continue;
                };
                let relaxed = is_relaxed_env_name(name);
                if is_env_name(name) || relaxed && doc.kube_version >= RELAXED {
                    continue;
                }
                let why = if relaxed {
                    format!(
                        "Kubernetes {} refuses it (1.32 and later accept any printable ASCII but `=`)",
                        doc.kube_version
                    )
                } else {
                    "no Kubernetes version accepts it (it must be printable ASCII without `=`)"
                        .to_string()
                };
                report.at(
                    key(&index(&key(&path.get(), "env"), i), "name"),
                    node,
                    format!("env name `{}` is not a valid variable name: {why}", shown(node, 80)),
                    "use letters, digits and `_`, starting with a letter or `_` (e.g. `FIRST_RANK`)",
                );
            }
        }
    }
}
