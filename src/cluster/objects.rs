//! The few fields of cluster objects that the gates read, as `kubectl get -o json` prints them
//! (and as a manifest writes them): nodes, pods and their templates, claims, a Job, the server
//! version. Everything is optional and defaults to empty, as the API server omits empty fields.
//! Quantities arrive as strings (`"500m"`) from kubectl and may be numbers in a YAML manifest.

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::collections::BTreeMap;

/// A `kind: List` (or any object with `items`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct List<T> {
    pub items: Vec<T>,
}

/// A `kind: List` whose items are handed to a function one at a time, as they are read: a
/// list of any size is never held whole (`kubectl get pods -A` of a large cluster, say).
pub struct EachItem<T, F> {
    each: F,
    item: std::marker::PhantomData<fn(T)>,
}

impl<T, F> EachItem<T, F> {
    pub fn new(each: F) -> EachItem<T, F> {
        EachItem {
            each,
            item: std::marker::PhantomData,
        }
    }
}

impl<'de, T: Deserialize<'de>, F: FnMut(T)> DeserializeSeed<'de> for EachItem<T, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de, T: Deserialize<'de>, F: FnMut(T)> Visitor<'de> for EachItem<T, F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of objects (an object with `items`)")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "items" {
                map.next_value_seed(Items(&mut self))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// The `items` of an [`EachItem`].
struct Items<'a, T, F>(&'a mut EachItem<T, F>);

impl<'de, T: Deserialize<'de>, F: FnMut(T)> DeserializeSeed<'de> for Items<'_, T, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de, T: Deserialize<'de>, F: FnMut(T)> Visitor<'de> for Items<'_, T, F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sequence of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<T>()? {
            (self.0.each)(item);
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Meta {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Node {
    pub metadata: Meta,
    pub spec: NodeSpec,
    pub status: NodeStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct NodeSpec {
    pub unschedulable: bool,
    pub taints: Vec<Taint>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct NodeStatus {
    pub allocatable: BTreeMap<String, Value>,
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Condition {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Pod {
    pub metadata: Meta,
    pub spec: PodSpec,
    pub status: PodStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PodSpec {
    pub node_name: String,
    pub node_selector: BTreeMap<String, String>,
    pub affinity: Affinity,
    pub tolerations: Vec<Toleration>,
    pub containers: Vec<Container>,
    pub init_containers: Vec<Container>,
    pub overhead: BTreeMap<String, Value>,
    /// Pod-level resources (`spec.resources`): where set, they stand for the containers'.
    pub resources: Resources,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Affinity {
    pub node_affinity: NodeAffinity,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NodeAffinity {
    pub required_during_scheduling_ignored_during_execution: Option<NodeSelector>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NodeSelector {
    pub node_selector_terms: Vec<NodeSelectorTerm>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NodeSelectorTerm {
    pub match_expressions: Vec<Requirement>,
    pub match_fields: Vec<Requirement>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Requirement {
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Toleration {
    pub key: String,
    pub operator: String,
    pub value: String,
    pub effect: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Container {
    pub name: String,
    pub resources: Resources,
    /// `Always` on an init container makes it a sidecar.
    pub restart_policy: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Resources {
    pub requests: BTreeMap<String, Value>,
    pub limits: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PodStatus {
    pub phase: String,
    pub conditions: Vec<Condition>,
    pub init_container_statuses: Vec<ContainerStatus>,
    pub container_statuses: Vec<ContainerStatus>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ContainerStatus {
    pub name: String,
    pub restart_count: u64,
    pub state: ContainerState,
    pub last_state: ContainerState,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ContainerState {
    pub waiting: Option<StateDetail>,
    pub running: Option<Value>,
    pub terminated: Option<StateDetail>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StateDetail {
    pub reason: String,
    pub message: String,
    pub exit_code: Option<i64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Claim {
    pub metadata: Meta,
    pub spec: ClaimSpec,
    pub status: ClaimStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClaimSpec {
    /// Empty: the class the API server assigns by default.
    pub storage_class_name: String,
}

/// A StorageClass: when it binds the claims of its class.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StorageClass {
    pub metadata: ClassMeta,
    /// `Immediate` (the default) or `WaitForFirstConsumer`: a claim of the class stays
    /// Pending until a pod that uses it is scheduled.
    pub volume_binding_mode: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ClassMeta {
    pub name: String,
    pub annotations: BTreeMap<String, String>,
}

impl StorageClass {
    /// Whether it is the cluster's default class.
    pub fn is_default(&self) -> bool {
        self.metadata
            .annotations
            .get("storageclass.kubernetes.io/is-default-class")
            .is_some_and(|v| v == "true")
    }

    /// Whether its claims bind only when a pod that uses them is scheduled.
    pub fn binds_at_first_use(&self) -> bool {
        self.volume_binding_mode == "WaitForFirstConsumer"
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ClaimStatus {
    pub phase: String,
}

/// A Job as the server returns it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Job {
    /// `Job`, or `JobSet` (whose `Completed` condition is a Job's `Complete`).
    pub kind: String,
    pub metadata: Meta,
    pub spec: JobSpec,
    pub status: JobStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct JobSpec {
    pub suspend: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct JobStatus {
    pub active: u64,
    pub succeeded: u64,
    pub failed: u64,
    /// A JobSet's restarts of all its Jobs.
    pub restarts: u64,
    pub conditions: Vec<Condition>,
}

impl Job {
    /// `succeeded`, `failed`, `suspended` or `active`, from the conditions that are true.
    pub fn state(&self) -> &'static str {
        let is = |kind: &str| {
            self.status
                .conditions
                .iter()
                .any(|c| c.kind == kind && c.status == "True")
        };
        if is("Complete") || (self.kind == "JobSet" && is("Completed")) {
            "succeeded"
        } else if is("Failed") {
            "failed"
        } else if self.spec.suspend || is("Suspended") {
            "suspended"
        } else {
            "active"
        }
    }
}

/// `kubectl get --raw /version`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Version {
    pub major: String,
    pub minor: String,
    pub git_version: String,
}

impl Version {
    /// (major, minor); a managed cluster's minor may carry a `+` (`"30+"`).
    pub fn numbers(&self) -> Option<(u32, u32)> {
        let lead = |s: &str| -> Option<u32> {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        };
        Some((lead(&self.major)?, lead(&self.minor)?))
    }
}

/// A quantity (a string, or a JSON number) as a whole number of thousandths of its unit,
/// exactly (see [`crate::kube::quantity::milli`]); `None` when it is not a quantity.
pub fn milli(value: &Value) -> Option<i128> {
    match value {
        Value::String(s) => crate::kube::quantity::milli(s),
        Value::Number(n) => crate::kube::quantity::milli(&n.to_string()),
        _ => None,
    }
}

/// The amount no node has: what an unreadable quantity, or one past `i128` thousandths
/// (`1e40`), counts as. Sums saturate at it, so such a request never fits.
pub const UNBOUNDED: i128 = i128::MAX;

/// [`milli`], saturating: a quantity too large to count, or a value that is no quantity, is
/// [`UNBOUNDED`]; a negative one counts as nothing.
pub fn amount(value: &Value) -> i128 {
    match milli(value) {
        Some(m) => m.max(0),
        None => {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return UNBOUNDED,
            };
            match crate::kube::quantity::parse(&text) {
                Some(v) if v <= 0.0 => 0,
                _ => UNBOUNDED,
            }
        }
    }
}

/// The first node name listed twice: the nodes of a cluster are named uniquely, so a list
/// that repeats one is not what `kubectl get nodes` returned (each copy would be counted).
pub fn repeated_node(nodes: &[Node]) -> Option<&str> {
    let mut seen = std::collections::HashSet::new();
    nodes
        .iter()
        .map(|n| n.metadata.name.as_str())
        .find(|name| !seen.insert(*name))
}

#[cfg(test)]
mod tests {
    use super::milli;
    use serde_json::json;

    #[test]
    fn quantities_in_thousandths_exactly() {
        for (q, m) in [
            ("1", 1000),
            ("500m", 500),
            ("0.1", 100),
            ("0.7", 700),
            ("1.5", 1500),
            ("64Gi", 64 * (1i128 << 30) * 1000),
            ("1k", 1_000_000),
            ("1e3", 1_000_000),
            ("1n", 1),
            ("1500u", 2),
            (".5", 500),
            ("8", 8000),
        ] {
            assert_eq!(milli(&json!(q)), Some(m), "{q}");
        }
        assert_eq!(milli(&json!(4)), Some(4000));
        assert_eq!(milli(&json!("4 GB")), None);
        assert_eq!(milli(&json!(null)), None);
    }
}
