//! The built-in Kubernetes API of every supported minor (`KubeVersion::OLDEST` to `NEWEST`,
//! the minors `schemas/k8s/` describes) as static tables, and
//! the strict checker that walks a parsed object against them ([`check`]).
//!
//! The tables come from the committed description in `schemas/k8s/` (generated from
//! k8s-openapi by `cargo run -p xtask -- k8s-description`), turned into Rust by `build.rs`:
//! nothing is parsed or compiled at run time. A definition that did not change between
//! minors is one entry shared by all of them.
//!
//! Besides the kinds a version serves, this knows the kinds it no longer serves (removed
//! before 1.28, from a table here, or between two supported minors, from the data) and the
//! kinds and fields that only a newer minor has, so the answer names the replacement or the
//! version that is needed.

pub(crate) mod check;
mod lists;

pub use check::{Problem, check};
pub use lists::duplicate_entries;

use crate::kube::KubeVersion;

/// The type of a field, as the description writes it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ty {
    Str,
    Int32,
    Int64,
    Number,
    Bool,
    /// Base64 (`[]byte`), as Go's JSON decoder reads it.
    Byte,
    /// RFC 3339 (`metav1.Time`, `MicroTime`); null is the zero time.
    DateTime,
    /// `resource.Quantity`: a number or a quantity string.
    Quantity,
    IntOrString,
    /// A string from a fixed set.
    Enum(&'static [&'static str]),
    /// Any mapping (`FieldsV1`, `RawExtension`).
    Object,
    /// Any value (`JSON` of CRD schemas).
    Any,
    /// A definition, by name id (see [`NAMES`]).
    Ref(usize),
    List(&'static Ty),
    /// A mapping from strings to values of one type.
    Map(&'static Ty),
}

#[derive(Debug)]
pub(crate) struct Field {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
}

/// A definition with fields, sorted by name.
#[derive(Debug)]
pub(crate) struct Def {
    /// Index in [`NAMES`].
    pub name: usize,
    pub fields: &'static [Field],
}

impl Def {
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        let i = self.fields.binary_search_by(|f| f.name.cmp(name)).ok()?;
        Some(&self.fields[i])
    }
}

/// One minor: its kinds `(apiVersion, kind, name id)`, sorted, and the definition each name
/// has there (an index in [`DEFS`], `u16::MAX` when the minor lacks it).
pub(crate) struct Version {
    pub minor: u32,
    pub kinds: &'static [(&'static str, &'static str, usize)],
    pub defs: &'static [u16],
}

/// An associative list (`schemas/k8s/lists.txt`): the field `field` of definition `name`, in
/// the minors whose bit (`1 << minor`) is set, keyed by `keys` (a field and the default the
/// server fills in when it is absent) or, with no keys, a set of scalars.
pub(crate) struct List {
    pub name: usize,
    pub field: &'static str,
    pub minors: u64,
    pub keys: &'static [(&'static str, Option<&'static str>)],
    /// The API server's create validation refuses its duplicates too (and the API rules
    /// report them as errors).
    pub validated: bool,
    /// The create validation refuses its duplicates too, and no API rule reports them.
    pub refused: bool,
}

include!(concat!(env!("OUT_DIR"), "/k8s_tables.rs"));

impl Version {
    fn of(version: KubeVersion) -> Option<&'static Version> {
        if version.major != 1 {
            return None;
        }
        VERSIONS.iter().find(|v| v.minor == version.minor)
    }

    fn kind(&self, api_version: &str, kind: &str) -> Option<&'static Def> {
        let i = self
            .kinds
            .binary_search_by(|&(v, k, _)| (v, k).cmp(&(api_version, kind)))
            .ok()?;
        self.def(self.kinds[i].2)
    }

    pub fn def(&self, name: usize) -> Option<&'static Def> {
        match self.defs.get(name) {
            Some(&i) if i != u16::MAX => Some(&DEFS[usize::from(i)]),
            _ => None,
        }
    }

    fn version(&self) -> KubeVersion {
        KubeVersion {
            major: 1,
            minor: self.minor,
        }
    }
}

/// What a version says about an `apiVersion` and `kind`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A built-in kind of this version: its objects are checked.
    Served,
    /// A built-in API this version no longer serves.
    Removed {
        /// The first minor without it.
        since: KubeVersion,
        /// The `apiVersion` to use instead, if the kind lives on.
        replacement: Option<String>,
    },
    /// A built-in kind that only a newer version serves.
    Newer { since: KubeVersion },
    /// Not a built-in kind (a custom resource, or a typo): no schema to check it against.
    Unknown,
}

/// Built-in APIs removed before 1.28: `(apiVersion, kinds, removed in minor, replacement
/// apiVersion)` (from the Kubernetes deprecated API migration guide). `None`: the kind is gone.
const REMOVED_BEFORE: &[(&str, &[&str], u32, Option<&str>)] = &[
    (
        "extensions/v1beta1",
        &["Ingress"],
        22,
        Some("networking.k8s.io/v1"),
    ),
    (
        "extensions/v1beta1",
        &["NetworkPolicy"],
        16,
        Some("networking.k8s.io/v1"),
    ),
    (
        "extensions/v1beta1",
        &["Deployment", "DaemonSet", "ReplicaSet"],
        16,
        Some("apps/v1"),
    ),
    ("extensions/v1beta1", &["PodSecurityPolicy"], 16, None),
    (
        "apps/v1beta1",
        &[
            "Deployment",
            "StatefulSet",
            "ReplicaSet",
            "DaemonSet",
            "ControllerRevision",
        ],
        16,
        Some("apps/v1"),
    ),
    (
        "apps/v1beta2",
        &[
            "Deployment",
            "StatefulSet",
            "ReplicaSet",
            "DaemonSet",
            "ControllerRevision",
        ],
        16,
        Some("apps/v1"),
    ),
    (
        "networking.k8s.io/v1beta1",
        &["Ingress", "IngressClass"],
        22,
        Some("networking.k8s.io/v1"),
    ),
    ("batch/v1beta1", &["CronJob"], 25, Some("batch/v1")),
    ("batch/v2alpha1", &["CronJob"], 21, Some("batch/v1")),
    (
        "policy/v1beta1",
        &["PodDisruptionBudget"],
        25,
        Some("policy/v1"),
    ),
    ("policy/v1beta1", &["PodSecurityPolicy"], 25, None),
    (
        "autoscaling/v2beta1",
        &["HorizontalPodAutoscaler"],
        25,
        Some("autoscaling/v2"),
    ),
    (
        "autoscaling/v2beta2",
        &["HorizontalPodAutoscaler"],
        26,
        Some("autoscaling/v2"),
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta1",
        &["FlowSchema", "PriorityLevelConfiguration"],
        26,
        None,
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1alpha1",
        &["FlowSchema", "PriorityLevelConfiguration"],
        21,
        None,
    ),
    (
        "discovery.k8s.io/v1beta1",
        &["EndpointSlice"],
        25,
        Some("discovery.k8s.io/v1"),
    ),
    (
        "events.k8s.io/v1beta1",
        &["Event"],
        25,
        Some("events.k8s.io/v1"),
    ),
    (
        "node.k8s.io/v1beta1",
        &["RuntimeClass"],
        25,
        Some("node.k8s.io/v1"),
    ),
    (
        "storage.k8s.io/v1beta1",
        &["CSIStorageCapacity"],
        27,
        Some("storage.k8s.io/v1"),
    ),
    (
        "storage.k8s.io/v1beta1",
        &["CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"],
        22,
        Some("storage.k8s.io/v1"),
    ),
    (
        "rbac.authorization.k8s.io/v1beta1",
        &["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"],
        22,
        Some("rbac.authorization.k8s.io/v1"),
    ),
    (
        "admissionregistration.k8s.io/v1beta1",
        &[
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ],
        22,
        Some("admissionregistration.k8s.io/v1"),
    ),
    (
        "apiextensions.k8s.io/v1beta1",
        &["CustomResourceDefinition"],
        22,
        Some("apiextensions.k8s.io/v1"),
    ),
    (
        "apiregistration.k8s.io/v1beta1",
        &["APIService"],
        22,
        Some("apiregistration.k8s.io/v1"),
    ),
    (
        "certificates.k8s.io/v1beta1",
        &["CertificateSigningRequest"],
        22,
        Some("certificates.k8s.io/v1"),
    ),
    (
        "coordination.k8s.io/v1beta1",
        &["Lease"],
        22,
        Some("coordination.k8s.io/v1"),
    ),
    (
        "scheduling.k8s.io/v1beta1",
        &["PriorityClass"],
        22,
        Some("scheduling.k8s.io/v1"),
    ),
];

/// The group of an `apiVersion` (`""` for the core `v1`).
fn group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// How stable an API version is, for choosing a replacement: GA over beta over alpha.
fn stability(api_version: &str) -> u8 {
    let v = api_version.rsplit('/').next().unwrap_or(api_version);
    if v.contains("alpha") {
        0
    } else if v.contains("beta") {
        1
    } else {
        2
    }
}

/// The most stable `apiVersion` of `group` that serves `kind` in `version`.
fn served_in_group(version: &Version, group_name: &str, kind: &str) -> Option<String> {
    version
        .kinds
        .iter()
        .filter(|(v, k, _)| *k == kind && group(v) == group_name)
        .max_by_key(|(v, _, _)| stability(v))
        .map(|(v, _, _)| (*v).to_owned())
}

/// What `version` says about `apiVersion`/`kind`. `version` must be supported.
pub fn kind(api_version: &str, kind: &str, version: KubeVersion) -> Kind {
    let Some(this) = Version::of(version) else {
        return Kind::Unknown;
    };
    if this.kind(api_version, kind).is_some() {
        return Kind::Served;
    }
    let has = |v: &Version| v.kind(api_version, kind).is_some();
    // Served by an older supported minor: removed in the first minor after its last one.
    if let Some(last) = VERSIONS
        .iter()
        .rev()
        .find(|v| v.minor < this.minor && has(v))
    {
        let since = KubeVersion {
            major: 1,
            minor: last.minor + 1,
        };
        return Kind::Removed {
            since,
            replacement: served_in_group(this, group(api_version), kind),
        };
    }
    if let Some(first) = VERSIONS.iter().find(|v| v.minor > this.minor && has(v)) {
        return Kind::Newer {
            since: first.version(),
        };
    }
    if let Some(&(_, _, minor, replacement)) = REMOVED_BEFORE
        .iter()
        .find(|(v, kinds, _, _)| *v == api_version && kinds.contains(&kind))
    {
        let replacement =
            replacement.and_then(|r| served_in_group(this, group(r), kind).or(Some(r.to_owned())));
        return Kind::Removed {
            since: KubeVersion { major: 1, minor },
            replacement,
        };
    }
    Kind::Unknown
}

/// Whether `api_version` is of a group Kubernetes defines (`v1`, `apps/v1`, `batch/...`,
/// `networking.k8s.io/...` in any supported version): no custom resource lives there, so a
/// kind it does not know there is a mistake, not a CRD's.
fn builtin_group(api_version: &str) -> bool {
    let wanted = group(api_version);
    VERSIONS
        .iter()
        .flat_map(|v| v.kinds.iter())
        .any(|(v, _, _)| group(v) == wanted)
        || REMOVED_BEFORE.iter().any(|(v, _, _, _)| group(v) == wanted)
}

/// What is wrong with `apiVersion`/`kind` of a built-in group that `version` does not know
/// (see [`builtin_group`]), with a did-you-mean: the kind (`configmap` in `v1`) or the
/// version of the group (`apps/v2`). `None` for a group Kubernetes does not define, and for
/// a list, which is no object the API server stores.
pub fn unknown_in_builtin_group(
    api_version: &str,
    kind: &str,
    version: KubeVersion,
) -> Option<(String, String)> {
    // A list (`v1 List`, `ConfigMapList`) is taken apart by kubectl, item by item.
    if !builtin_group(api_version) || kind.ends_with("List") {
        return None;
    }
    let here: Vec<(&str, &str)> = kinds(version).collect();
    let of_version: Vec<&str> = here
        .iter()
        .filter(|(v, _)| *v == api_version)
        .map(|&(_, k)| k)
        .collect();
    if !of_version.is_empty() {
        let help = match crate::kube::nearest(kind, of_version.iter().copied()) {
            Some(near) => format!("did you mean `kind: {near}`? (kinds are case-sensitive)"),
            None => format!("{api_version} serves: {}", of_version.join(", ")),
        };
        return Some((
            format!("{api_version} has no kind `{kind}` in Kubernetes {version}"),
            help,
        ));
    }
    let mut served: Vec<&str> = here
        .iter()
        .filter(|(v, k)| group(v) == group(api_version) && *k == kind)
        .map(|&(v, _)| v)
        .collect();
    served.dedup();
    let help = match served.as_slice() {
        [] => format!(
            "the group `{}` serves no `{kind}` in {version}",
            group(api_version)
        ),
        _ => format!("use `apiVersion: {}`", served.join("` or `")),
    };
    Some((
        format!("Kubernetes {version} serves no {api_version} {kind}"),
        help,
    ))
}

/// The built-in kinds of a version, as `(apiVersion, kind)`.
pub fn kinds(version: KubeVersion) -> impl Iterator<Item = (&'static str, &'static str)> {
    Version::of(version)
        .into_iter()
        .flat_map(|v| v.kinds.iter().map(|&(a, k, _)| (a, k)))
}

/// Whether objects of definition `name` can hold an associative list the server-side apply
/// rule checks, in `version` (a table the build computes).
fn reaches_list(name: usize, version: &Version) -> bool {
    let at = (version.minor - VERSIONS[0].minor) as usize;
    REACH[at]
        .get(name / 64)
        .is_some_and(|w| w >> (name % 64) & 1 == 1)
}

/// The associative list at field `field` of definition `name` in `version`, if it is one.
fn list(name: usize, field: &str, version: &Version) -> Option<&'static List> {
    let first = LISTS.partition_point(|l| (l.name, l.field) < (name, field));
    LISTS[first..]
        .iter()
        .take_while(|l| (l.name, l.field) == (name, field))
        .find(|l| l.minors & (1 << version.minor) != 0)
}

/// The first minor after `version` whose definition `name` has `field`.
fn field_since(name: usize, field: &str, version: &Version) -> Option<KubeVersion> {
    VERSIONS
        .iter()
        .filter(|v| v.minor > version.minor)
        .find(|v| v.def(name).is_some_and(|d| d.field(field).is_some()))
        .map(Version::version)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(minor: u32) -> KubeVersion {
        KubeVersion { major: 1, minor }
    }

    #[test]
    fn every_supported_minor_is_described() {
        let minors: Vec<u32> = VERSIONS.iter().map(|v| v.minor).collect();
        let supported = KubeVersion::OLDEST.minor..=KubeVersion::NEWEST.minor;
        assert_eq!(minors, supported.collect::<Vec<_>>());
        for version in &VERSIONS {
            assert!(version.kinds.len() > 70, "1.{}", version.minor);
            for &(a, k, name) in version.kinds {
                assert!(version.def(name).is_some(), "1.{} {a} {k}", version.minor);
            }
            // Every reference a definition of this minor makes resolves in this minor.
            for &i in version.defs.iter().filter(|&&i| i != u16::MAX) {
                for f in DEFS[usize::from(i)].fields {
                    let mut ty = f.ty;
                    while let Ty::List(t) | Ty::Map(t) = ty {
                        ty = *t;
                    }
                    if let Ty::Ref(n) = ty {
                        assert!(version.def(n).is_some(), "1.{} {}", version.minor, NAMES[n]);
                    }
                }
            }
        }
    }

    /// The build's REACH table is the fixed point of "has a checked list, or refers to a
    /// definition that reaches one", recomputed here from DEFS and LISTS.
    #[test]
    fn reach_is_the_fixed_point_of_the_tables() {
        let refers = |ty: Ty| {
            let mut ty = ty;
            while let Ty::List(t) | Ty::Map(t) = ty {
                ty = *t;
            }
            match ty {
                Ty::Ref(n) => Some(n),
                _ => None,
            }
        };
        for version in &VERSIONS {
            let mut reach = vec![false; NAMES.len()];
            let mut changed = true;
            while changed {
                changed = false;
                for name in 0..NAMES.len() {
                    let Some(def) = version.def(name) else {
                        continue;
                    };
                    let now = def.fields.iter().any(|f| {
                        list(name, f.name, version).is_some_and(|l| !l.validated)
                            || refers(f.ty).is_some_and(|r| reach[r])
                    });
                    if now && !reach[name] {
                        reach[name] = true;
                        changed = true;
                    }
                }
            }
            for (name, &r) in reach.iter().enumerate() {
                assert_eq!(
                    reaches_list(name, version),
                    r,
                    "1.{} {}",
                    version.minor,
                    NAMES[name]
                );
            }
            let id = |n: &str| NAMES.iter().position(|x| *x == n).unwrap();
            assert!(reach[id("io.k8s.api.batch.v1.Job")]);
            assert!(reach[id("io.k8s.api.core.v1.Container")]);
            assert!(!reach[id("io.k8s.api.core.v1.Probe")]);
        }
        // Ports of containers: keyed by port and protocol, TCP when absent, in every minor.
        let container = NAMES
            .iter()
            .position(|x| *x == "io.k8s.api.core.v1.Container")
            .unwrap();
        for version in &VERSIONS {
            let ports = list(container, "ports", version).expect("ports is keyed");
            assert_eq!(
                ports.keys,
                [("containerPort", None), ("protocol", Some("TCP"))]
            );
        }
    }

    #[test]
    fn kinds_served_removed_and_newer() {
        assert_eq!(kind("batch/v1", "Job", v(28)), Kind::Served);
        assert_eq!(kind("apps/v1", "DaemonSet", v(37)), Kind::Served);
        assert_eq!(kind("example.com/v1", "Widget", v(37)), Kind::Unknown);
        assert_eq!(
            kind("batch/v1beta1", "CronJob", v(30)),
            Kind::Removed {
                since: v(25),
                replacement: Some("batch/v1".into())
            }
        );
        assert_eq!(
            kind("extensions/v1beta1", "Ingress", v(28)),
            Kind::Removed {
                since: v(22),
                replacement: Some("networking.k8s.io/v1".into())
            }
        );
        // Served by 1.28, gone in 1.29: the data says so, and names the GA version.
        assert_eq!(
            kind("flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema", v(30)),
            Kind::Removed {
                since: v(29),
                replacement: Some("flowcontrol.apiserver.k8s.io/v1".into())
            }
        );
        assert_eq!(
            kind("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", v(32)),
            Kind::Removed {
                since: v(32),
                replacement: Some("flowcontrol.apiserver.k8s.io/v1".into())
            }
        );
        assert_eq!(
            kind("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", v(28)),
            Kind::Newer { since: v(29) }
        );
        assert_eq!(
            kind("policy/v1beta1", "PodSecurityPolicy", v(37)),
            Kind::Removed {
                since: v(25),
                replacement: None
            }
        );
    }
}
