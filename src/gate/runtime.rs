//! The GPU nodes' runtime, as far as their labels tell (GPU feature discovery): the NVIDIA
//! driver must be 580 or newer and the container toolkit 1.19.0 or newer. What the labels do
//! not tell is said as a warning, never assumed.

use super::{Outcome, Verdict};
use crate::cluster::objects::Node;
use crate::diag::shown;

/// The oldest NVIDIA driver branch TAO 6 runs on.
pub const MIN_DRIVER_MAJOR: u32 = 580;
/// The oldest NVIDIA container toolkit, as (major, minor, patch).
pub const MIN_TOOLKIT: (u32, u32, u32) = (1, 19, 0);
/// The label of a node with an NVIDIA GPU.
pub const GPU_PRESENT: &str = "nvidia.com/gpu.present";
/// The labels of the driver's major version and of the toolkit's version.
pub const DRIVER_MAJOR: &str = "nvidia.com/cuda.driver.major";
pub const TOOLKIT: &str = "nvidia.com/container-toolkit.version";

/// `1.19.0` (or `1.19`, `v1.19.0-rc1`) as numbers.
fn version(s: &str) -> Option<(u32, u32, u32)> {
    let s = s.trim_start_matches('v');
    let mut parts = s.split(['.', '-']).map(|p| p.parse::<u32>().ok());
    let major = parts.next()??;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

/// The runtime gate over the GPU nodes.
pub fn gate(nodes: &[Node]) -> Verdict {
    let gpu_nodes: Vec<&Node> = nodes
        .iter()
        .filter(|n| n.metadata.labels.get(GPU_PRESENT).map(String::as_str) == Some("true"))
        .collect();
    let (mut old, mut unknown) = (Vec::new(), 0);
    for node in &gpu_nodes {
        let name = shown(&node.metadata.name, 80);
        let labels = &node.metadata.labels;
        match labels.get(DRIVER_MAJOR).map(|m| m.parse::<u32>()) {
            Some(Ok(major)) if major < MIN_DRIVER_MAJOR => {
                old.push(format!(
                    "node {name} has NVIDIA driver {major}, older than {MIN_DRIVER_MAJOR}"
                ));
            }
            Some(Ok(_)) => {}
            _ => unknown += 1,
        }
        match labels.get(TOOLKIT).map(|t| (t, version(t))) {
            Some((t, Some(v))) if v < MIN_TOOLKIT => old.push(format!(
                "node {name} has NVIDIA container toolkit {}, older than {}.{}.{}",
                shown(t, 80),
                MIN_TOOLKIT.0,
                MIN_TOOLKIT.1,
                MIN_TOOLKIT.2
            )),
            Some((_, Some(_))) => {}
            _ => unknown += 1,
        }
    }
    if !old.is_empty() {
        return Verdict::new(
            "runtime",
            Outcome::Refuse,
            format!(
                "{}: GPU nodes need NVIDIA driver {MIN_DRIVER_MAJOR} or newer and container \
                 toolkit {}.{}.{} or newer; set TAO_K8S_SKIP_NODE_RUNTIME_CHECK=1 if the \
                 platform manages them",
                old.join("; "),
                MIN_TOOLKIT.0,
                MIN_TOOLKIT.1,
                MIN_TOOLKIT.2
            ),
        );
    }
    if gpu_nodes.is_empty() || unknown > 0 {
        return Verdict::new(
            "runtime",
            Outcome::Warn,
            format!(
                "could not verify the driver (>= {MIN_DRIVER_MAJOR}) and container toolkit \
                 (>= {}.{}.{}) versions of every GPU node from its labels ({GPU_PRESENT}, \
                 {DRIVER_MAJOR}, {TOOLKIT})",
                MIN_TOOLKIT.0, MIN_TOOLKIT.1, MIN_TOOLKIT.2
            ),
        );
    }
    Verdict::new(
        "runtime",
        Outcome::Pass,
        format!(
            "{} GPU nodes have driver >= {MIN_DRIVER_MAJOR} and container toolkit >= {}.{}.{}",
            gpu_nodes.len(),
            MIN_TOOLKIT.0,
            MIN_TOOLKIT.1,
            MIN_TOOLKIT.2
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, labels: serde_json::Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
    }

    #[test]
    fn old_drivers_and_toolkits_are_refused_and_unknown_ones_warned() {
        let good = node(
            "a",
            json!({GPU_PRESENT: "true", DRIVER_MAJOR: "580", TOOLKIT: "1.19.0"}),
        );
        assert_eq!(gate(std::slice::from_ref(&good)).outcome, Outcome::Pass);
        let old = node(
            "b",
            json!({GPU_PRESENT: "true", DRIVER_MAJOR: "570", TOOLKIT: "1.17.8"}),
        );
        let v = gate(&[good.clone(), old]);
        assert_eq!(v.outcome, Outcome::Refuse);
        assert!(
            v.message.contains("node b has NVIDIA driver 570"),
            "{}",
            v.message
        );
        assert!(v.message.contains("toolkit 1.17.8"), "{}", v.message);
        let bare = node("c", json!({GPU_PRESENT: "true"}));
        assert_eq!(gate(&[good, bare]).outcome, Outcome::Warn);
        assert_eq!(gate(&[]).outcome, Outcome::Warn);
        assert_eq!(version("v1.19.0-rc1"), Some((1, 19, 0)));
    }
}
