//! The Pod Security Standards' levels, as a Namespace's `pod-security.kubernetes.io/enforce`
//! label and `enforce-version` name them (`restricted`, `baseline:v1.30`).

use super::KubeVersion;
use std::fmt;

/// A level of the Pod Security Standards, from the most open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

/// A level and the version of its checks (`None`: `latest`, the checked Kubernetes version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodSecurity {
    pub level: Level,
    pub version: Option<KubeVersion>,
}

/// The label a Namespace enforces a level with, and the one that pins its version.
pub const ENFORCE: &str = "pod-security.kubernetes.io/enforce";
pub const ENFORCE_VERSION: &str = "pod-security.kubernetes.io/enforce-version";

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

impl std::str::FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Level, String> {
        match s {
            "privileged" => Ok(Level::Privileged),
            "baseline" => Ok(Level::Baseline),
            "restricted" => Ok(Level::Restricted),
            _ => Err(format!(
                "expected `privileged`, `baseline` or `restricted`, found `{s}`"
            )),
        }
    }
}

/// A version as `enforce-version` writes it: `latest` or `v1.30`.
pub fn parse_version(s: &str) -> Result<Option<KubeVersion>, String> {
    match s {
        "latest" => Ok(None),
        _ => s
            .strip_prefix('v')
            .ok_or_else(|| format!("expected `latest` or a version like v1.30, found `{s}`"))?
            .parse()
            .map(Some),
    }
}

impl std::str::FromStr for PodSecurity {
    type Err = String;
    /// `restricted`, `baseline:latest`, `restricted:v1.30`.
    fn from_str(s: &str) -> Result<PodSecurity, String> {
        let (level, version) = s.split_once(':').unwrap_or((s, "latest"));
        Ok(PodSecurity {
            level: level.parse()?,
            version: parse_version(version)?,
        })
    }
}

impl fmt::Display for PodSecurity {
    /// As the API server names it: `restricted:latest`, `baseline:v1.30`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.version {
            None => write!(f, "{}:latest", self.level.name()),
            Some(v) => write!(f, "{}:v{v}", self.level.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_read_as_the_labels_write_them() {
        let p: PodSecurity = "restricted".parse().unwrap();
        assert_eq!(p.to_string(), "restricted:latest");
        let p: PodSecurity = "baseline:v1.30".parse().unwrap();
        assert_eq!(p.to_string(), "baseline:v1.30");
        assert!("strict".parse::<PodSecurity>().is_err());
        assert!("baseline:1.30".parse::<PodSecurity>().is_err());
    }
}
