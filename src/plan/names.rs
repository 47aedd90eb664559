//! Kubernetes object names for one action request.
//!
//! Every name the project emits derives from the request's `metadata.name`, so the rules live
//! here once. The Job name doubles as the `batch.kubernetes.io/job-name` label value (a DNS-1123
//! label, at most 63 chars) and as the headless Service name (the pods' `subdomain`, a DNS-1035
//! label, so it must start with a letter). An Indexed Job's pods get hostname `<job>-<index>`,
//! itself a DNS-1123 label, which leaves `63 - 1 - digits(nodes - 1)` chars for the Job name.
//!
//! The base is lowercased, runs of characters outside `[a-z0-9-]` become one `-`, and `-` is
//! trimmed from both ends. A base starting with a digit gets a `tao-` prefix; an empty base becomes
//! `tao-<hash8>`. A base over budget keeps its longest prefix that fits `-<hash8>` (trailing `-`
//! trimmed), where `hash8` is the first 8 hex chars of sha256 of the original, unnormalised input,
//! so inputs that differ only after the cut stay distinct. A valid base within budget is unchanged.

use sha2::{Digest, Sha256};

use crate::kube::names::MAX_LABEL;
use crate::plan::Workload;

/// The one replicated Job of a JobSet.
pub const REPLICATED_JOB: &str = "workers";
/// What the JobSet webhook adds to the longest pod name it checks: `-<job index>-<pod index>`
/// after `<jobset>-<replicated job>`, and the pod name's random `-xxxxx`.
const JOBSET_POD_SUFFIX: usize = 1 + REPLICATED_JOB.len() + 2 + 1 + 6;

/// Hex chars of sha256 appended when a name is cut.
const HASH_LEN: usize = 8;

/// Every object name the project emits for one request, computed once here and used everywhere.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Names {
    /// The Job, also its `batch.kubernetes.io/job-name` label value: a DNS-1035 label within
    /// [`job_budget`].
    pub job: String,
    /// The headless Service (the pods' `subdomain`): same as `job`. A JobSet creates it.
    pub service: String,
    /// The hostname of the rank-0 pod of a multi-node job: `<job>-0`, or for a JobSet
    /// `<jobset>-workers-0-0`.
    pub leader: Option<String>,
    /// The Job a JobSet creates: `<jobset>-workers-0`.
    pub child_job: Option<String>,
    /// The ConfigMap holding the spec: `<job>-spec`.
    pub config_map: String,
    /// The credentials Secret: `<job>-creds`, or the request's `credentials.secretName`.
    pub secret: String,
    /// The image pull Secret: `<job>-ngc`.
    pub pull_secret: String,
    /// `secret` is the request's `credentials.secretName`, not derived: it may be a Secret
    /// that exists and belongs to someone else.
    #[serde(skip)]
    pub secret_named: bool,
}

impl Names {
    /// Derives all names from `base` (the request's `metadata.name`).
    ///
    /// `nodes` and `workload` decide the budget (1 = non-indexed; 0 is treated as 1).
    /// `secret_override` is the request's `credentials.secretName`, used as-is for `secret`
    /// when given (it is validated elsewhere).
    pub fn derive(
        base: &str,
        nodes: u32,
        secret_override: Option<&str>,
        workload: Workload,
    ) -> Names {
        let job = job_name(base, budget(nodes, workload));
        let child_job = (workload == Workload::JobSet).then(|| format!("{job}-{REPLICATED_JOB}-0"));
        let leader = (nodes > 1).then(|| pod_hostname(child_job.as_ref().unwrap_or(&job), 0));
        Names {
            service: job.clone(),
            leader,
            child_job,
            config_map: [&job, "-spec"].concat(),
            secret: secret_override.map_or_else(|| [&job, "-creds"].concat(), str::to_owned),
            pull_secret: [&job, "-ngc"].concat(),
            secret_named: secret_override.is_some(),
            job,
        }
    }
}

/// Length budget for the Job name for this node count: 63 for 0 or 1 node (non-indexed), else
/// room for `-<nodes - 1>` in the pod hostname (61 up to 10 nodes, 60 up to 100, 59 up to 1000).
pub fn job_budget(nodes: u32) -> usize {
    match nodes.checked_sub(1) {
        None | Some(0) => MAX_LABEL,
        Some(last) => MAX_LABEL - 1 - (last.ilog10() as usize + 1),
    }
}

/// The length budget of the Job (or JobSet) name: [`job_budget`] for a Job; for a JobSet, room
/// for the longest pod name its webhook checks, `<jobset>-workers-0-<nodes - 1>-xxxxx`.
pub fn budget(nodes: u32, workload: Workload) -> usize {
    match workload {
        Workload::IndexedJob => job_budget(nodes),
        Workload::JobSet => {
            let last = nodes.saturating_sub(1).max(1);
            MAX_LABEL - JOBSET_POD_SUFFIX - (last.ilog10() as usize + 1)
        }
    }
}

/// `<job>-<index>`: the hostname of an Indexed Job's pod.
pub fn pod_hostname(job: &str, index: u32) -> String {
    format!("{job}-{index}")
}

/// The Job name for `base` within `budget`; see the module doc for the rules.
fn job_name(base: &str, budget: usize) -> String {
    let mut name = normalise(base);
    if name.is_empty() {
        return format!("tao-{}", short_hash(base));
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "tao-");
    }
    if name.len() <= budget {
        return name;
    }
    // `name` is ASCII here, so byte truncation is on a char boundary; it starts with a letter,
    // so the trimmed prefix is never empty.
    name.truncate(budget - 1 - HASH_LEN);
    format!("{}-{}", name.trim_end_matches('-'), short_hash(base))
}

/// Lowercases, turns each run of chars outside `[a-z0-9-]` into one `-`, trims `-` at both ends.
fn normalise(input: &str) -> String {
    let mut out = String::with_capacity(input.len());
    let mut in_run = false;
    for c in input.to_lowercase().chars() {
        if matches!(c, 'a'..='z' | '0'..='9' | '-') {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    out.trim_matches('-').to_owned()
}

/// First 8 lowercase hex chars of sha256 of `input`.
fn short_hash(input: &str) -> String {
    let d = Sha256::digest(input.as_bytes());
    format!("{:08x}", u32::from_be_bytes([d[0], d[1], d[2], d[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::names::*;

    const NODE_COUNTS: [u32; 8] = [1, 2, 10, 11, 100, 101, 1000, u32::MAX];

    fn job(base: &str, nodes: u32) -> String {
        Names::derive(base, nodes, None, Workload::IndexedJob).job
    }

    /// Every derived name is valid for its object kind and the Job fits the node budget.
    fn assert_valid(base: &str, nodes: u32) -> Names {
        let n = Names::derive(base, nodes, None, Workload::IndexedJob);
        assert!(n.job.len() <= job_budget(nodes), "{base:?} {nodes}: {n:?}");
        assert!(is_dns1123_label(&n.job) && is_label_value(&n.job), "{n:?}");
        assert!(is_dns1035_label(&n.service) && n.service == n.job, "{n:?}");
        // A single-node Job is not Indexed: its pod hostname is not `<job>-<index>`.
        if nodes > 1 {
            assert!(is_dns1123_label(&pod_hostname(&n.job, nodes - 1)), "{n:?}");
        }
        for s in [&n.config_map, &n.secret, &n.pull_secret] {
            assert!(is_dns1123_subdomain(s), "{s:?}");
        }
        n
    }

    #[test]
    fn uuids_get_a_letter_prefix() {
        let uuid = "3f2b8c1e-9a4d-4e2b-8f6a-1c2d3e4f5a6b";
        for base in [uuid.to_owned(), uuid.to_uppercase()] {
            assert_eq!(assert_valid(&base, 1000).job, format!("tao-{uuid}"));
        }
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let base = "a".repeat(300);
        assert_eq!(short_hash(&base), "9835fa6b"); // sha256("a" x 300), computed independently
        for nodes in NODE_COUNTS {
            let n = assert_valid(&base, nodes);
            assert_eq!(n.job.len(), job_budget(nodes));
            let keep = job_budget(nodes) - 9;
            assert_eq!(n.job, format!("{}-9835fa6b", "a".repeat(keep)));
            assert_eq!(n.config_map, format!("{}-spec", n.job));
            assert_eq!(n.pull_secret, format!("{}-ngc", n.job));
            assert_eq!(n.secret, format!("{}-creds", n.job));
        }
        let messy = format!("9 Résumé__Train/{}", "Xy.z_".repeat(60));
        for nodes in NODE_COUNTS {
            let j = assert_valid(&messy, nodes).job;
            assert!(j.starts_with("tao-9-r-sum-train-xy-z-"), "{j}");
        }
    }

    #[test]
    fn cut_trims_a_trailing_dash_and_prefix_can_force_a_cut() {
        let (a53, base) = (
            "a".repeat(53),
            format!("{}-{}", "a".repeat(53), "b".repeat(100)),
        );
        assert_eq!(job(&base, 1), format!("{a53}-{}", short_hash(&base)));
        let digit = format!("1{}", "a".repeat(62)); // valid 63-char label, but starts with a digit
        let j = job(&digit, 1);
        assert!(j.starts_with("tao-1aaa") && j.len() == 63 && j.ends_with(&short_hash(&digit)));
    }

    #[test]
    fn names_differing_after_the_cut_stay_distinct() {
        let a = format!("{}x", "train-".repeat(50));
        let b = format!("{}y", "train-".repeat(50));
        for nodes in NODE_COUNTS {
            assert_ne!(assert_valid(&a, nodes).job, assert_valid(&b, nodes).job);
        }
    }

    #[test]
    fn unicode_is_lowercased_then_replaced() {
        assert_eq!(assert_valid("Ünïcödé Träin", 4).job, "n-c-d-tr-in");
        assert_eq!(assert_valid("ÆON-7", 1).job, "on-7");
        for base in ["日本語", "!!!", "", "ÄÖÜ", "---"] {
            let hash = short_hash(base);
            assert_eq!(assert_valid(base, 16).job, format!("tao-{hash}"));
        }
        assert_eq!(job("日本語", 1), "tao-77710aed"); // sha256("日本語") computed independently
        assert_ne!(job("日本語", 1), job("中文", 1));
    }

    #[test]
    fn normalisation_examples() {
        assert_eq!(job("a__b", 1), "a-b");
        assert_eq!(job("a--b", 1), "a--b");
        assert_eq!(job("--x--", 1), "x");
        assert_eq!(job("A.B_C", 1), "a-b-c");
        assert_eq!(job("  My Job!! v2 ", 1), "my-job-v2");
    }

    #[test]
    fn valid_names_within_budget_are_unchanged() {
        for base in ["my-train-job", "a", "x1--y2", &"x".repeat(63)] {
            assert_eq!(job(base, 1), base);
        }
        let at_61 = "x".repeat(61);
        assert_eq!(job(&at_61, 10), at_61);
        assert_ne!(job(&at_61, 11), at_61);
        assert_eq!(job(&at_61, 11).len(), 60);
    }

    #[test]
    fn secret_override_is_used_as_is() {
        let n = Names::derive("job", 2, Some("my-creds"), Workload::IndexedJob);
        assert_eq!((n.secret.as_str(), n.job.as_str()), ("my-creds", "job"));
    }

    #[test]
    fn budgets_by_node_count() {
        for (nodes, budget) in [(0, 63), (1, 63), (2, 61), (10, 61), (11, 60), (100, 60)] {
            assert_eq!(job_budget(nodes), budget, "{nodes}");
        }
        for (nodes, budget) in [(101, 59), (1000, 59), (1001, 58), (u32::MAX, 52)] {
            assert_eq!(job_budget(nodes), budget, "{nodes}");
        }
        assert_eq!(pod_hostname("job", 7), "job-7");
    }

    /// `f` accepts every one of `good` and rejects every one of `bad`.
    #[test]
    fn property_loop_over_generated_names() {
        const ALPHABET: [&str; 12] = ["a", "Z", "7", "-", "_", ".", " ", "é", "日", "ß", "İ", "--"];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as usize
        };
        for _ in 0..2000 {
            let len = next() % 120;
            let base: String = (0..len).map(|_| ALPHABET[next() % 12]).collect();
            let nodes = NODE_COUNTS[next() % NODE_COUNTS.len()];
            let n = assert_valid(&base, nodes);
            // Idempotent: a derived Job name derives to itself.
            assert_eq!(job(&n.job, nodes), n.job, "{base:?}");
        }
    }

    /// The JobSet webhook refuses a JobSet whose longest pod name, with the random suffix,
    /// is no DNS-1035 label: `<jobset>-workers-0-<nodes - 1>-abcde` (`ValidateCreate` in
    /// kubernetes-sigs/jobset `pkg/webhooks/jobset_webhook.go`). The name uses all the room.
    #[test]
    fn a_jobset_name_leaves_room_for_the_pod_names_its_webhook_checks() {
        let base = "a".repeat(300);
        for nodes in NODE_COUNTS {
            let n = Names::derive(&base, nodes, None, Workload::JobSet);
            let child = n.child_job.clone().unwrap();
            assert_eq!(child, format!("{}-workers-0", n.job));
            let longest = format!("{child}-{}-abcde", nodes.saturating_sub(1));
            assert!(is_dns1035_label(&longest), "{longest}");
            assert_eq!(longest.len(), MAX_LABEL, "{nodes}: {longest}");
            if nodes > 1 {
                assert_eq!(n.leader.as_deref(), Some(format!("{child}-0").as_str()));
            }
        }
        let n = Names::derive("train", 4, None, Workload::JobSet);
        assert_eq!(
            (n.job.as_str(), n.leader.as_deref()),
            ("train", Some("train-workers-0-0"))
        );
        let n = Names::derive("train", 4, None, Workload::IndexedJob);
        assert_eq!((n.leader.as_deref(), n.child_job), (Some("train-0"), None));
    }
}
