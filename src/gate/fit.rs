//! Whether the pods of a Job can be placed, with the filters of kube-scheduler that decide it
//! for a GPU job: the node is Ready and schedulable (or the pod tolerates
//! `node.kubernetes.io/unschedulable`), `nodeName`, `nodeSelector`, required node affinity,
//! the node's NoSchedule and NoExecute taints against the pod's tolerations (`ToleratesTaint`
//! of k8s.io/api/core/v1), and the pod's requests against what the node has allocatable minus
//! what its non-terminated pods request (NodeResourcesFit, with the pod count). Pod
//! (anti-)affinity, topology spread and volume topology are not evaluated.
//!
//! Every pod of a Job has the same template, so the question is how many copies of one request
//! each node holds: `min` over the requested resources of `free / request`, and the free pod
//! slots. The pods fit when those counts add up to the pods the Job starts at once; for
//! identical pods that count is exact (a greedy assignment that fills node after node, which
//! the verdict reports, reaches it).

use crate::cluster::objects::{
    Node, NodeSelectorTerm, Pod, PodSpec, Requirement, Taint, Toleration, UNBOUNDED, amount,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// Quantities by resource name, in thousandths (see [`crate::cluster::objects::milli`]).
pub type Amounts = BTreeMap<String, i128>;

/// The resource of the pod count, allocatable on every node.
const PODS: &str = "pods";

/// What a pod requests, as the scheduler computes it (`computePodResourceRequest`): the sum
/// of the containers, or the largest init container if more (a sidecar, an init container
/// with `restartPolicy: Always`, adds to both and keeps running under the ones after it), plus
/// the pod overhead. A container's limit stands for a request it does not set, as the API
/// server defaults it. Pod-level requests (`spec.resources`, on by default since Kubernetes
/// 1.34) of `cpu` and `memory` replace the containers' sum (`PodRequests` of
/// k8s.io/component-helpers). A quantity too large to count, or unreadable, saturates (see
/// [`UNBOUNDED`]): such a pod never fits, rather than requesting nothing.
pub fn pod_requests(spec: &PodSpec) -> Amounts {
    // A limit stands for the request of its resource when there is none (API defaulting).
    let own = |r: &crate::cluster::objects::Resources| -> Amounts {
        r.limits
            .iter()
            .filter(|(k, _)| !r.requests.contains_key(*k))
            .chain(&r.requests)
            .map(|(k, v)| (k.clone(), amount(v)))
            .collect()
    };
    let container = |c: &crate::cluster::objects::Container| own(&c.resources);
    let add = |into: &mut Amounts, from: &Amounts| {
        for (k, v) in from {
            let e = into.entry(k.clone()).or_default();
            *e = e.saturating_add(*v);
        }
    };
    let max = |into: &mut Amounts, from: &Amounts| {
        for (k, v) in from {
            let e = into.entry(k.clone()).or_default();
            *e = (*e).max(*v);
        }
    };
    let mut requests = Amounts::new();
    for c in &spec.containers {
        add(&mut requests, &container(c));
    }
    let (mut init, mut sidecars) = (Amounts::new(), Amounts::new());
    for c in &spec.init_containers {
        let own = container(c);
        let during = if c.restart_policy.as_deref() == Some("Always") {
            add(&mut requests, &own);
            add(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut with = own;
            add(&mut with, &sidecars);
            with
        };
        max(&mut init, &during);
    }
    max(&mut requests, &init);
    for (k, v) in own(&spec.resources) {
        if k == "cpu" || k == "memory" {
            requests.insert(k, v);
        }
    }
    let overhead: Amounts = spec
        .overhead
        .iter()
        .map(|(k, v)| (k.clone(), amount(v)))
        .collect();
    add(&mut requests, &overhead);
    requests.retain(|_, v| *v > 0);
    requests
}

/// `ToleratesTaint` of k8s.io/api/core/v1: an empty effect matches every effect, an empty key
/// (with `Exists`) every key; the operator `Equal` (or empty) compares values, `Exists` does
/// not; any other operator tolerates nothing.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if !t.effect.is_empty() && t.effect != taint.effect {
        return false;
    }
    if !t.key.is_empty() && t.key != taint.key {
        return false;
    }
    match t.operator.as_str() {
        "" | "Equal" => t.value == taint.value,
        "Exists" => true,
        _ => false,
    }
}

/// Why a node cannot take the pod, whatever runs on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Misfit {
    NotReady,
    Unschedulable,
    NodeName(String),
    Selector {
        key: String,
        want: String,
    },
    Affinity,
    Taint(Taint),
    /// Allocatable below one pod's request, in thousandths.
    TooSmall {
        resource: String,
        allocatable: i128,
        request: i128,
    },
}

impl std::fmt::Display for Misfit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Misfit::NotReady => f.write_str("not Ready"),
            Misfit::Unschedulable => f.write_str("cordoned (spec.unschedulable)"),
            Misfit::NodeName(want) => write!(f, "the pod names node {want}"),
            Misfit::Selector { key, want } => write!(f, "nodeSelector {key}={want} not matched"),
            Misfit::Affinity => f.write_str("required node affinity not matched"),
            Misfit::Taint(t) => {
                let value = if t.value.is_empty() {
                    String::new()
                } else {
                    format!("={}", t.value)
                };
                write!(f, "taint {}{value}:{} not tolerated", t.key, t.effect)
            }
            Misfit::TooSmall {
                resource,
                allocatable,
                request,
            } => write!(
                f,
                "{} {resource} allocatable, the pod requests {}",
                show(resource, *allocatable),
                show(resource, *request)
            ),
        }
    }
}

/// A quantity in thousandths as a person reads it: cores or millicores, bytes in the largest
/// binary unit that divides them, or a count.
pub fn show(resource: &str, milli: i128) -> String {
    if milli == UNBOUNDED {
        return "more than can be counted (an unreadable or out-of-range quantity)".into();
    }
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let whole = milli / 1000;
    if resource == "memory" || resource.ends_with("storage") || resource.starts_with("hugepages-") {
        for (unit, shift) in [("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)] {
            if whole != 0 && whole % (1i128 << shift) == 0 {
                return format!("{}{unit}", whole >> shift);
            }
        }
    }
    whole.to_string()
}

/// One node, judged for one pod.
#[derive(Debug, Clone)]
pub struct Judged {
    pub name: String,
    /// Filters the node fails whatever runs on it.
    pub misfits: Vec<Misfit>,
    /// How many copies of the pod it holds empty, and now.
    pub idle: u64,
    pub now: u64,
    /// The resource that is short now, with what is free and what running pods request,
    /// when the node holds fewer copies now than empty.
    pub short: Option<(String, i128, i128)>,
}

/// What the non-terminated pods of a cluster request on each node (their `spec.nodeName`
/// says where they run), the pod count among it: taken one pod at a time, so that the pods of
/// a large cluster are never held.
#[derive(Debug, Clone, Default)]
pub struct Usage(BTreeMap<String, Amounts>);

impl Usage {
    pub fn of<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Usage {
        let mut usage = Usage::default();
        for pod in pods {
            usage.add(pod);
        }
        usage
    }

    /// Count `pod` where it runs; one not bound to a node, or ended, holds nothing.
    pub fn add(&mut self, pod: &Pod) {
        if pod.spec.node_name.is_empty()
            || matches!(pod.status.phase.as_str(), "Succeeded" | "Failed")
        {
            return;
        }
        let on = match self.0.get_mut(&pod.spec.node_name) {
            Some(on) => on,
            None => self.0.entry(pod.spec.node_name.clone()).or_default(),
        };
        for (k, v) in pod_requests(&pod.spec) {
            let e = on.entry(k).or_default();
            *e = e.saturating_add(v);
        }
        let count = on.entry(PODS.into()).or_default();
        *count = count.saturating_add(1000);
    }
}

/// Judge every node for the pod `spec` whose requests are `requests`, against what the pods
/// running there use.
pub fn judge(spec: &PodSpec, requests: &Amounts, nodes: &[Node], used: &Usage) -> Vec<Judged> {
    let used = &used.0;
    nodes
        .iter()
        .map(|node| {
            let allocatable: Amounts = node
                .status
                .allocatable
                .iter()
                .map(|(k, v)| (k.clone(), amount(v)))
                .collect();
            let none = Amounts::new();
            let running = used.get(node.metadata.name.as_str()).unwrap_or(&none);
            let mut misfits = filters(spec, node);
            let idle = copies(requests, &allocatable, &none);
            if idle == 0 {
                misfits.extend(too_small(requests, &allocatable));
            }
            let now = copies(requests, &allocatable, running);
            let short = (now < idle).then(|| shortest(requests, &allocatable, running));
            Judged {
                name: node.metadata.name.clone(),
                idle: if misfits.is_empty() { idle } else { 0 },
                now: if misfits.is_empty() { now } else { 0 },
                misfits,
                short,
            }
        })
        .collect()
}

/// The filters that do not depend on what runs on the node.
fn filters(spec: &PodSpec, node: &Node) -> Vec<Misfit> {
    let mut out = Vec::new();
    let ready = node
        .status
        .conditions
        .iter()
        .any(|c| c.kind == "Ready" && c.status == "True");
    if !ready {
        out.push(Misfit::NotReady);
    }
    let cordon = Taint {
        key: "node.kubernetes.io/unschedulable".into(),
        value: String::new(),
        effect: "NoSchedule".into(),
    };
    if node.spec.unschedulable && !spec.tolerations.iter().any(|t| tolerates(t, &cordon)) {
        out.push(Misfit::Unschedulable);
    }
    if !spec.node_name.is_empty() && spec.node_name != node.metadata.name {
        out.push(Misfit::NodeName(spec.node_name.clone()));
    }
    for (key, want) in &spec.node_selector {
        if node.metadata.labels.get(key) != Some(want) {
            out.push(Misfit::Selector {
                key: key.clone(),
                want: want.clone(),
            });
        }
    }
    if let Some(required) = &spec
        .affinity
        .node_affinity
        .required_during_scheduling_ignored_during_execution
        && !required
            .node_selector_terms
            .iter()
            .any(|term| term_matches(term, node))
    {
        out.push(Misfit::Affinity);
    }
    for taint in &node.spec.taints {
        if matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
            && !spec.tolerations.iter().any(|t| tolerates(t, taint))
        {
            out.push(Misfit::Taint(taint.clone()));
        }
    }
    out
}

/// A node selector term: every expression on the labels and every field matches; a term with
/// neither matches no node.
fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    if term.match_expressions.is_empty() && term.match_fields.is_empty() {
        return false;
    }
    let labels = &node.metadata.labels;
    term.match_expressions
        .iter()
        .all(|r| requirement(r, labels.get(&r.key).map(String::as_str)))
        && term.match_fields.iter().all(|r| {
            // The only field a node selector may name.
            r.key == "metadata.name"
                && matches!(r.operator.as_str(), "In" | "NotIn")
                && requirement(r, Some(&node.metadata.name))
        })
}

/// One requirement of a node selector against a label's value (`None`: the node has no such
/// label), as labels.Selector decides it.
pub fn requirement(r: &Requirement, value: Option<&str>) -> bool {
    let number = |s: &str| s.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| r.values.iter().any(|w| w == v)),
        "NotIn" => value.is_none_or(|v| !r.values.iter().any(|w| w == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(have), [want]) = (value.and_then(number), r.values.as_slice()) else {
                return false;
            };
            let Some(want) = number(want) else {
                return false;
            };
            if r.operator == "Gt" {
                have > want
            } else {
                have < want
            }
        }
        _ => false,
    }
}

/// What `allocatable` leaves of resource `k` once `used` is taken (saturating).
fn free(allocatable: &Amounts, used: &Amounts, k: &str) -> i128 {
    let have = allocatable.get(k).copied().unwrap_or(0);
    have.saturating_sub(used.get(k).copied().unwrap_or(0))
}

/// How many copies of `requests` fit in `allocatable` minus `used`, with one pod slot each.
fn copies(requests: &Amounts, allocatable: &Amounts, used: &Amounts) -> u64 {
    let free = |k: &str| free(allocatable, used, k);
    let slots = if allocatable.contains_key(PODS) {
        (free(PODS) / 1000).max(0)
    } else {
        i128::from(u32::MAX)
    };
    requests
        .iter()
        .filter(|(k, _)| k.as_str() != PODS)
        .map(|(k, need)| (free(k) / need).max(0))
        .fold(slots, i128::min)
        .clamp(0, i128::from(u64::MAX))
        .try_into()
        .unwrap_or(0)
}

/// The resources a node has too little of for one pod even when empty.
fn too_small(requests: &Amounts, allocatable: &Amounts) -> Vec<Misfit> {
    let mut out: Vec<Misfit> = requests
        .iter()
        .filter(|(k, need)| allocatable.get(k.as_str()).copied().unwrap_or(0) < **need)
        .map(|(k, need)| Misfit::TooSmall {
            resource: k.clone(),
            allocatable: allocatable.get(k).copied().unwrap_or(0),
            request: *need,
        })
        .collect();
    if allocatable.get(PODS).is_some_and(|&p| p < 1000) {
        out.push(Misfit::TooSmall {
            resource: PODS.into(),
            allocatable: allocatable[PODS],
            request: 1000,
        });
    }
    out
}

/// The resource with the fewest copies free now: (name, free, requested by running pods).
fn shortest(requests: &Amounts, allocatable: &Amounts, used: &Amounts) -> (String, i128, i128) {
    let mut all: Vec<(&str, i128)> = requests
        .iter()
        .filter(|(k, _)| k.as_str() != PODS)
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    all.push((PODS, 1000));
    let free = |k: &str| free(allocatable, used, k);
    let (name, _) = all
        .into_iter()
        .min_by_key(|(k, need)| free(k) / need)
        .expect("the pod count is always there");
    (
        name.to_string(),
        free(name).max(0),
        used.get(name).copied().unwrap_or(0),
    )
}

/// Where the pods go: the nodes that hold them, filled one after the other, each with the
/// number of pods it takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    pub node: String,
    pub pods: u64,
}

/// Fill the nodes in order with up to `wanted` pods, each node with at most `room(node)`.
pub fn place(judged: &[Judged], wanted: u64, room: impl Fn(&Judged) -> u64) -> Vec<Placement> {
    let mut left = wanted;
    let mut out = Vec::new();
    for j in judged {
        if left == 0 {
            break;
        }
        let take = room(j).min(left);
        if take > 0 {
            out.push(Placement {
                node: j.name.clone(),
                pods: take,
            });
            left -= take;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(cpu: &str) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": cpu, "memory": "256Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]},
        }))
        .unwrap()
    }

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"spec": spec, "status": {"phase": "Running"}})).unwrap()
    }

    fn cpu_pod(cpu: &str) -> PodSpec {
        serde_json::from_value(json!({
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        }))
        .unwrap()
    }

    /// `1e40` cores (a quantity render accepts) is past what thousandths count: it never fits,
    /// and the misfit says why, rather than the pod requesting nothing.
    #[test]
    fn a_quantity_past_the_integer_range_never_fits() {
        let spec = cpu_pod("1e40");
        let requests = pod_requests(&spec);
        assert_eq!(requests["cpu"], UNBOUNDED);
        let judged = judge(&spec, &requests, &[node("64")], &Usage::default());
        assert_eq!((judged[0].idle, judged[0].now), (0, 0));
        let misfit = judged[0].misfits[0].to_string();
        assert!(misfit.contains("out-of-range quantity"), "{misfit}");
        // An unreadable one, too.
        assert_eq!(pod_requests(&cpu_pod("four"))["cpu"], UNBOUNDED);
    }

    /// Two running pods whose requests add up past `i128` fill the node: the sum saturates
    /// (it wrapped to a negative free amount in a release build).
    #[test]
    fn sums_of_running_requests_saturate() {
        let huge = json!({"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1e35"}}}]});
        let pods = [pod(huge.clone()), pod(huge)];
        let spec = cpu_pod("1");
        let judged = judge(
            &spec,
            &pod_requests(&spec),
            &[node("1e36")],
            &Usage::of(&pods),
        );
        assert_eq!(judged[0].now, 0);
        assert!(judged[0].idle > 0);
    }

    /// A running pod with pod-level requests (`spec.resources`) holds them, whatever its
    /// containers request, as the scheduler counts it.
    #[test]
    fn pod_level_requests_replace_the_containers() {
        let running = pod(json!({
            "nodeName": "n1",
            "resources": {"requests": {"cpu": "30"}},
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        }));
        let r = pod_requests(&running.spec);
        assert_eq!(r["cpu"], 30_000);
        assert_eq!(r["memory"], (1 << 30) * 1000);
        let spec = cpu_pod("8");
        let judged = judge(
            &spec,
            &pod_requests(&spec),
            &[node("32")],
            &Usage::of([&running]),
        );
        assert_eq!((judged[0].idle, judged[0].now), (4, 0));
        // Pod-level limits alone stand for requests; only cpu and memory are pod-level.
        let limits: PodSpec = serde_json::from_value(json!({
            "resources": {"limits": {"memory": "8Gi", "nvidia.com/gpu": "1"}},
            "containers": [{"name": "c", "resources": {"requests": {"memory": "1Gi"}}}],
        }))
        .unwrap();
        let r = pod_requests(&limits);
        assert_eq!(r["memory"], 8 * (1 << 30) * 1000);
        assert!(!r.contains_key("nvidia.com/gpu"));
    }

    #[test]
    fn a_node_listed_twice_is_found() {
        let nodes = [node("1"), node("2")];
        assert_eq!(crate::cluster::objects::repeated_node(&nodes), Some("n1"));
        assert_eq!(crate::cluster::objects::repeated_node(&nodes[..1]), None);
    }
}
