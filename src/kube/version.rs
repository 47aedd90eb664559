//! Kubernetes minor versions, and the range this project supports.

use std::fmt;

// OLDEST_MINOR and NEWEST_MINOR: the minors `schemas/k8s/` describes.
include!(concat!(env!("OUT_DIR"), "/kube_versions.rs"));

/// A Kubernetes minor version, `1.28`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct KubeVersion {
    pub major: u32,
    pub minor: u32,
}

impl KubeVersion {
    /// The default target: the oldest supported, so that the output runs on every supported
    /// cluster.
    pub const DEFAULT: KubeVersion = KubeVersion::OLDEST;
    /// The oldest target for an Indexed Job with a rendezvous: the pod hostname
    /// `<job>-<index>` that MASTER_ADDR names needs it.
    pub const MULTI_NODE: KubeVersion = KubeVersion {
        major: 1,
        minor: 28,
    };
    /// The oldest target with native sidecar containers on by default (an initContainer with
    /// `restartPolicy: Always`: the SidecarContainers feature, beta and on from 1.29). A 1.28
    /// server keeps the field only with the alpha feature gate on, which managed clusters do not
    /// turn on.
    pub const NATIVE_SIDECARS: KubeVersion = KubeVersion {
        major: 1,
        minor: 29,
    };
    /// The oldest supported target: the oldest minor whose strict schemas the output is checked
    /// against, and what multi-node needs.
    pub const OLDEST: KubeVersion = KubeVersion {
        major: 1,
        minor: OLDEST_MINOR,
    };
    /// The newest supported target.
    pub const NEWEST: KubeVersion = KubeVersion {
        major: 1,
        minor: NEWEST_MINOR,
    };

    /// Whether this version is a supported target.
    pub fn is_supported(self) -> bool {
        (KubeVersion::OLDEST..=KubeVersion::NEWEST).contains(&self)
    }

    /// Whether a cluster of this version runs native sidecar containers by default.
    pub fn has_native_sidecars(self) -> bool {
        self >= KubeVersion::NATIVE_SIDECARS
    }

    /// The supported targets, for messages: `1.28 to 1.37`.
    pub fn supported_range() -> String {
        format!("{} to {}", KubeVersion::OLDEST, KubeVersion::NEWEST)
    }
}

impl std::str::FromStr for KubeVersion {
    type Err = String;
    /// `1.28`, `v1.28` or `1.28.3`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("expected a Kubernetes version like 1.28, found `{s}`");
        let mut parts = s.strip_prefix('v').unwrap_or(s).split('.');
        let major = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let minor = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        if parts.next().is_some_and(|p| p.parse::<u32>().is_err()) || parts.next().is_some() {
            return Err(bad());
        }
        Ok(KubeVersion { major, minor })
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}
