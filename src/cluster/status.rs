//! What `job.sh status` says about a Job, from `kubectl get job -o json` and the pods of the
//! Job (`kubectl get pods -l batch.kubernetes.io/job-name=NAME -o json`): the Job's state and
//! counts, then one line per pod by completion index with its phase, node, the reason it
//! waits or ended, its exit code, `OOMKilled`, its restarts, and for a pod not scheduled the
//! scheduler's last message (the PodScheduled condition). A failed Job also gets the reason
//! its record ends with.

use super::objects::{Condition, ContainerStatus, Job, Pod, StateDetail};
use crate::diag::printable;
use crate::kube::DISRUPTION_CONDITION;

/// The label of an Indexed Job's pods that holds their index.
const INDEX_LABEL: &str = "batch.kubernetes.io/job-completion-index";

/// `Complete`, `Failed` or `running`.
pub fn state(job: &Job) -> &'static str {
    match job.state() {
        "succeeded" => "Complete",
        "failed" => "Failed",
        "suspended" => "suspended",
        _ => "running",
    }
}

/// The status text: a line for the Job, a line per pod.
pub fn text(job: &Job, pods: &[Pod]) -> String {
    let s = &job.status;
    // A JobSet counts Jobs and restarts, not pods: its pods are counted here.
    let (kind, restarts, active, succeeded, failed) = if job.kind == "JobSet" {
        let phase = |p: &[&str]| {
            pods.iter()
                .filter(|pod| p.contains(&pod.status.phase.as_str()))
                .count() as u64
        };
        let counts = (
            phase(&["Pending", "Running"]),
            phase(&["Succeeded"]),
            phase(&["Failed"]),
        );
        (
            "JobSet ",
            format!("restarts {}; pods ", s.restarts),
            counts.0,
            counts.1,
            counts.2,
        )
    } else {
        ("", String::new(), s.active, s.succeeded, s.failed)
    };
    let mut out = format!(
        "{kind}{}/{}: {} ({restarts}active {active}, succeeded {succeeded}, failed {failed})\n",
        printable(&job.metadata.namespace),
        printable(&job.metadata.name),
        state(job),
    );
    let mut sorted: Vec<&Pod> = pods.iter().collect();
    sorted.sort_by_key(|p| (index(p).unwrap_or(u64::MAX), p.metadata.name.clone()));
    for pod in sorted {
        out.push_str("  ");
        out.push_str(&printable(&pod_line(pod)));
        out.push('\n');
    }
    out
}

fn index(pod: &Pod) -> Option<u64> {
    pod.metadata.labels.get(INDEX_LABEL)?.parse().ok()
}

/// One pod: `index 2 NAME: Failed on gpu-node-3, terminated OOMKilled (OOMKilled), exit code
/// 137, 1 restart`.
pub fn pod_line(pod: &Pod) -> String {
    let who = match index(pod) {
        Some(i) => format!("index {i} {}", pod.metadata.name),
        None => pod.metadata.name.clone(),
    };
    let phase = if pod.status.phase.is_empty() {
        "Unknown"
    } else {
        &pod.status.phase
    };
    let mut parts = vec![match pod.spec.node_name.as_str() {
        "" => format!("{phase}, not scheduled"),
        node => format!("{phase} on {node}"),
    }];
    let told = telling(pod);
    if let Some((name, detail)) = told {
        parts.push(detail_text(name, detail));
    }
    // A sidecar's exit code is not the pod's: a failed one (the tier C upload) is said apart.
    for c in &pod.status.init_container_statuses {
        let Some(t) = &c.state.terminated else {
            continue;
        };
        if is_sidecar(pod, &c.name)
            && t.exit_code.unwrap_or(0) != 0
            && told.is_none_or(|(name, _)| name != c.name)
        {
            parts.push(detail_text(&c.name, ("terminated", t)));
        }
    }
    let oom = all_statuses(pod).any(|c| {
        [&c.state.terminated, &c.last_state.terminated]
            .into_iter()
            .flatten()
            .any(|t| t.reason == "OOMKilled")
    });
    if oom && !parts.iter().any(|p| p.contains("OOMKilled")) {
        parts.push("OOMKilled before".into());
    }
    let restarts: u64 = all_statuses(pod).map(|c| c.restart_count).sum();
    if restarts > 0 {
        parts.push(format!(
            "{restarts} restart{}",
            if restarts == 1 { "" } else { "s" }
        ));
    }
    if let Some(c) = disruption(pod) {
        let mut said = format!("disrupted: {}", c.reason);
        if !c.message.is_empty() {
            said += &format!(" ({})", one_line(&c.message));
        }
        parts.push(said);
    }
    if let Some(c) = pod
        .status
        .conditions
        .iter()
        .find(|c| c.kind == "PodScheduled" && c.status == "False")
    {
        let reason = if c.reason.is_empty() {
            "not scheduled"
        } else {
            &c.reason
        };
        parts.push(format!("{reason}: {}", one_line(&c.message)));
    }
    format!("{who}: {}", parts.join(", "))
}

/// The condition a pod ended by the cluster has (an eviction, a preemption, a taint, a node
/// gone): its Job replaces it without counting it as the action's failure.
fn disruption(pod: &Pod) -> Option<&Condition> {
    pod.status
        .conditions
        .iter()
        .find(|c| c.kind == DISRUPTION_CONDITION && c.status == "True")
}

fn all_statuses(pod: &Pod) -> impl Iterator<Item = &ContainerStatus> {
    pod.status
        .init_container_statuses
        .iter()
        .chain(&pod.status.container_statuses)
}

/// A container's state when it waits or ended.
fn waiting_or_ended(c: &ContainerStatus) -> Option<(&'static str, &StateDetail)> {
    if let Some(w) = &c.state.waiting {
        return Some(("waiting", w));
    }
    c.state.terminated.as_ref().map(|t| ("terminated", t))
}

/// Whether init container `name` is a native sidecar (`restartPolicy: Always`), which runs
/// beside the containers and is stopped once they ended.
fn is_sidecar(pod: &Pod, name: &str) -> bool {
    pod.spec
        .init_containers
        .iter()
        .any(|c| c.name == name && c.restart_policy.as_deref() == Some("Always"))
}

/// Whether a container waits, or ended with an exit code other than 0.
fn waits_or_failed(c: &ContainerStatus) -> Option<(&'static str, &StateDetail)> {
    let (kind, d) = waiting_or_ended(c)?;
    (kind == "waiting" || d.exit_code.unwrap_or(0) != 0).then_some((kind, d))
}

/// The container state that tells most: an init container (not a sidecar) that waits or
/// failed, else the first container that waits or failed, else the first that ended, else a
/// sidecar that waits or failed.
fn telling(pod: &Pod) -> Option<(&str, (&'static str, &StateDetail))> {
    let status = &pod.status;
    let init = status
        .init_container_statuses
        .iter()
        .filter(|c| !is_sidecar(pod, &c.name))
        .find_map(|c| Some((c.name.as_str(), waits_or_failed(c)?)));
    let failed = || {
        status
            .container_statuses
            .iter()
            .find_map(|c| Some((c.name.as_str(), waits_or_failed(c)?)))
    };
    let ended = || {
        status
            .container_statuses
            .iter()
            .find_map(|c| Some((c.name.as_str(), waiting_or_ended(c)?)))
    };
    let sidecar = || {
        status
            .init_container_statuses
            .iter()
            .filter(|c| is_sidecar(pod, &c.name))
            .find_map(|c| Some((c.name.as_str(), waits_or_failed(c)?)))
    };
    init.or_else(failed).or_else(ended).or_else(sidecar)
}

fn detail_text(container: &str, (kind, d): (&str, &StateDetail)) -> String {
    let mut text = format!("{container} {kind}");
    if !d.reason.is_empty() {
        text += &format!(" {}", d.reason);
    }
    if let Some(code) = d.exit_code {
        text += &format!(", exit code {code}");
    }
    if !d.message.is_empty() && kind == "waiting" {
        text += &format!(" ({})", one_line(&d.message));
    }
    text
}

/// A message on one line, without control characters, cut at 300 characters.
fn one_line(message: &str) -> String {
    let flat: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    match flat.char_indices().nth(300) {
        Some((at, _)) => format!("{}...", &flat[..at]),
        None => flat.to_string(),
    }
}

/// Why a failed Job failed, for its record: the Failed condition's reason and message, and
/// the first pod that ended badly. `None` unless the Job failed.
pub fn terminal_reason(job: &Job, pods: &[Pod]) -> Option<String> {
    let condition = job
        .status
        .conditions
        .iter()
        .find(|c| c.kind == "Failed" && c.status == "True")?;
    let mut reason = format!("the Job failed: {}", condition.reason);
    if !condition.message.is_empty() {
        reason += &format!(" ({})", one_line(&condition.message));
    }
    let mut sorted: Vec<&Pod> = pods.iter().collect();
    sorted.sort_by_key(|p| (index(p).unwrap_or(u64::MAX), p.metadata.name.clone()));
    // The pod that failed the Job: the one a podFailurePolicy rule names (`Container tao for
    // pod NS/NAME failed with exit code 42 matching FailJob rule at index 1`), else the first
    // that failed of itself rather than one the cluster ended and the Job replaced.
    let failed = sorted.into_iter().filter(|p| p.status.phase == "Failed");
    let named = failed.clone().filter(|p| {
        let pod = format!("/{} ", p.metadata.name);
        condition.reason == "PodFailurePolicy" && condition.message.contains(&pod)
    });
    let own = failed.clone().filter(|p| disruption(p).is_none());
    if let Some(pod) = named.chain(own).chain(failed).next() {
        reason += &format!("; {}", pod_line(pod));
    }
    Some(reason)
}

/// Why a Job that succeeded did not do all its work: a pod whose native sidecar (the tier C
/// upload, from Kubernetes 1.29) ended with an exit code other than 0. A sidecar's exit does
/// not count in its pod's phase, so the Job is Complete where the results may never have
/// reached their bucket. `None` when every sidecar ended well.
pub fn failed_sidecar(pods: &[Pod]) -> Option<String> {
    let mut sorted: Vec<&Pod> = pods.iter().collect();
    sorted.sort_by_key(|p| (index(p).unwrap_or(u64::MAX), p.metadata.name.clone()));
    let pod = sorted.into_iter().find(|p| {
        p.status.phase == "Succeeded"
            && p.status.init_container_statuses.iter().any(|c| {
                is_sidecar(p, &c.name)
                    && c.state
                        .terminated
                        .as_ref()
                        .is_some_and(|t| t.exit_code.unwrap_or(0) != 0)
            })
    })?;
    Some(format!(
        "the action succeeded, but a sidecar failed (the results upload: what it did not upload \
         is lost with the pod); {}",
        pod_line(pod)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    /// A tier C pod whose uploader is a native sidecar, with the action's and the uploader's
    /// final states.
    fn tier_c(phase: &str, action: serde_json::Value, upload: serde_json::Value) -> Pod {
        pod(json!({
            "metadata": {"name": "j-abc"},
            "spec": {"nodeName": "gpu-node-1",
                "initContainers": [{"name": "fetch-0"}, {"name": "upload-results", "restartPolicy": "Always"}],
                "containers": [{"name": "tao"}]},
            "status": {"phase": phase,
                "initContainerStatuses": [
                    {"name": "fetch-0", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                    {"name": "upload-results", "state": {"terminated": upload}}],
                "containerStatuses": [{"name": "tao", "state": {"terminated": action}}]},
        }))
    }

    #[test]
    fn a_sidecar_never_hides_the_action_and_a_failed_upload_is_said() {
        let oom = json!({"reason": "OOMKilled", "exitCode": 137});
        let done = json!({"reason": "Completed", "exitCode": 0});
        let upload_failed = json!({"reason": "Error", "exitCode": 1});
        assert_eq!(
            pod_line(&tier_c("Failed", oom.clone(), done.clone())),
            "j-abc: Failed on gpu-node-1, tao terminated OOMKilled, exit code 137"
        );
        // Stopped at the end of the grace period: both are said, the action first.
        let killed = json!({"reason": "Error", "exitCode": 137});
        assert_eq!(
            pod_line(&tier_c("Failed", oom, killed)),
            "j-abc: Failed on gpu-node-1, tao terminated OOMKilled, exit code 137, \
             upload-results terminated Error, exit code 137"
        );
        // The pod succeeds with its action: the upload that failed is said all the same.
        assert_eq!(
            pod_line(&tier_c("Succeeded", done.clone(), upload_failed.clone())),
            "j-abc: Succeeded on gpu-node-1, tao terminated Completed, exit code 0, \
             upload-results terminated Error, exit code 1"
        );
        assert!(
            failed_sidecar(&[tier_c("Succeeded", done.clone(), upload_failed.clone())])
                .is_some_and(|r| r.contains("upload-results terminated Error, exit code 1"))
        );
        assert_eq!(
            failed_sidecar(&[tier_c("Succeeded", done.clone(), done.clone())]),
            None
        );
        // A regular uploader that failed the pod is the telling container.
        let regular = pod(json!({
            "metadata": {"name": "j-def"},
            "status": {"phase": "Failed", "containerStatuses": [
                {"name": "tao", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                {"name": "upload-results", "state": {"terminated": {"reason": "Error", "exitCode": 1}}}]},
        }));
        assert_eq!(
            pod_line(&regular),
            "j-def: Failed, not scheduled, upload-results terminated Error, exit code 1"
        );
    }

    #[test]
    fn each_pod_says_phase_node_reason_exit_code_oom_restarts_and_scheduling() {
        let oom = pod(json!({
            "metadata": {"name": "j-2-abc", "labels": {INDEX_LABEL: "2"}},
            "spec": {"nodeName": "gpu-node-3"},
            "status": {"phase": "Failed", "containerStatuses": [{"name": "tao", "restartCount": 1,
                "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]},
        }));
        assert_eq!(
            pod_line(&oom),
            "index 2 j-2-abc: Failed on gpu-node-3, tao terminated OOMKilled, exit code 137, 1 restart"
        );
        let pending = pod(json!({
            "metadata": {"name": "j-3-q", "labels": {INDEX_LABEL: "3"}},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/6 nodes are available: 2 Insufficient nvidia.com/gpu,\n4 node(s) had untolerated taint {dedicated: other-team}."}]},
        }));
        assert_eq!(
            pod_line(&pending),
            "index 3 j-3-q: Pending, not scheduled, Unschedulable: 0/6 nodes are available: 2 \
             Insufficient nvidia.com/gpu, 4 node(s) had untolerated taint {dedicated: other-team}."
        );
        let pulling = pod(json!({
            "metadata": {"name": "j-0-x", "labels": {INDEX_LABEL: "0"}},
            "spec": {"nodeName": "gpu-node-1"},
            "status": {"phase": "Pending",
                "initContainerStatuses": [{"name": "stage-config", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}}],
                "containerStatuses": [{"name": "tao", "state": {"waiting": {"reason": "PodInitializing"}}}]},
        }));
        assert_eq!(
            pod_line(&pulling),
            "index 0 j-0-x: Pending on gpu-node-1, stage-config waiting ImagePullBackOff (Back-off pulling image)"
        );
        let restarted = pod(json!({
            "metadata": {"name": "j-1-y", "labels": {INDEX_LABEL: "1"}},
            "spec": {"nodeName": "gpu-node-2"},
            "status": {"phase": "Running", "containerStatuses": [{"name": "tao", "restartCount": 3,
                "state": {"running": {}}, "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]},
        }));
        assert_eq!(
            pod_line(&restarted),
            "index 1 j-1-y: Running on gpu-node-2, OOMKilled before, 3 restarts"
        );
        let job: Job = serde_json::from_value(json!({
            "metadata": {"name": "j", "namespace": "default"},
            "status": {"failed": 1, "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]},
        }))
        .unwrap();
        let pods = [restarted, oom, pulling, pending];
        let text = text(&job, &pods);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "default/j: Failed (active 0, succeeded 0, failed 1)"
        );
        assert!(
            lines[1].starts_with("  index 0 ") && lines[4].starts_with("  index 3 "),
            "{text}"
        );
        assert_eq!(
            terminal_reason(&job, &pods).unwrap(),
            "the Job failed: BackoffLimitExceeded (Job has reached the specified backoff limit); \
             index 2 j-2-abc: Failed on gpu-node-3, tao terminated OOMKilled, exit code 137, 1 restart"
        );
    }
}
