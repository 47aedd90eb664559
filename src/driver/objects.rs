//! The objects a submit creates and how they are removed.
//!
//! Every object carries the job record that created it and the bundle it belongs to (labels
//! [`RECORD_LABEL`], [`BUNDLE_LABEL`] and the annotation [`BUNDLE_ANNOTATION`]), is created
//! with `kubectl create` (never merged onto an object that is there), and is deleted only by a
//! DELETE whose `preconditions.uid` is the uid the API server gave it: another object that
//! took the name later is never touched. Attaching an object to its Job is a merge patch
//! that carries the object's own uid, which the API server refuses to change.

use crate::record::Owned;
use serde_json::{Value, json};

/// The job record that created an object.
pub const RECORD_LABEL: &str = "tao-k8s.io/job-record";
/// The Job whose bundle an object belongs to.
pub const BUNDLE_LABEL: &str = "tao-k8s.io/bundle";
/// `<namespace>/<job>` of that bundle.
pub const BUNDLE_ANNOTATION: &str = "tao-k8s.io/bundle";
/// The uid of the Job an object is attached to.
pub const JOB_UID_ANNOTATION: &str = "tao-k8s.io/job-uid";

/// Stamp `object` (and a Job's pod template) with the record (when there is one: the probe
/// run alone has none) and the bundle.
pub fn stamp(object: &mut Value, record: Option<&str>, namespace: &str, job: &str) {
    let mark = |meta: &mut Value, annotate: bool| {
        if !meta.is_object() {
            *meta = json!({});
        }
        let labels = meta
            .as_object_mut()
            .expect("an object")
            .entry("labels")
            .or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            if let Some(record) = record {
                labels.insert(RECORD_LABEL.into(), record.into());
            }
            labels.insert(BUNDLE_LABEL.into(), job.into());
        }
        if annotate {
            let annotations = meta
                .as_object_mut()
                .expect("an object")
                .entry("annotations")
                .or_insert_with(|| json!({}));
            if let Some(a) = annotations.as_object_mut() {
                a.insert(
                    BUNDLE_ANNOTATION.into(),
                    format!("{namespace}/{job}").into(),
                );
            }
        }
    };
    if let Some(meta) = object.get_mut("metadata") {
        mark(meta, true);
    } else if let Some(o) = object.as_object_mut() {
        o.insert("metadata".into(), json!({}));
        mark(&mut object["metadata"], true);
    }
    // The pods carry the record too: `job.sh status` and `logs` find a JobSet's by it.
    let templates: Vec<&mut Value> = match object["kind"].as_str() {
        Some("Job") => object.pointer_mut("/spec/template").into_iter().collect(),
        Some("JobSet") => object
            .pointer_mut("/spec/replicatedJobs")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(|r| r.pointer_mut("/template/spec/template"))
            .collect(),
        _ => Vec::new(),
    };
    for template in templates {
        let meta = template
            .as_object_mut()
            .map(|t| t.entry("metadata").or_insert_with(|| json!({})));
        if let Some(meta) = meta {
            mark(meta, false);
        }
    }
}

/// The order of creation: what a pod reads (Secrets, the ConfigMap) and the Service its
/// hostnames need, before the Job that starts pods.
pub fn creation_rank(object: &Value) -> u8 {
    match object["kind"].as_str() {
        Some("Secret") => 0,
        Some("ConfigMap") => 1,
        Some("Service") => 2,
        Some("Job" | "JobSet") => 4,
        _ => 3,
    }
}

/// The API path of an object the driver creates.
pub fn api_path(kind: &str, namespace: &str, name: &str) -> Option<String> {
    let (group, plural) = match kind {
        "Job" => ("apis/batch/v1", "jobs"),
        "JobSet" => ("apis/jobset.x-k8s.io/v1alpha2", "jobsets"),
        "Service" => ("api/v1", "services"),
        "ConfigMap" => ("api/v1", "configmaps"),
        "Secret" => ("api/v1", "secrets"),
        "Pod" => ("api/v1", "pods"),
        _ => return None,
    };
    Some(format!("/{group}/namespaces/{namespace}/{plural}/{name}"))
}

/// The DELETE of `object`: its API path and the body that makes the API server delete it
/// only while its uid is the one recorded (409 Conflict otherwise). A Job's pods go first
/// when `foreground` (the Job is gone once they are).
pub fn delete_request(object: &Owned, foreground: bool) -> Result<(String, String), String> {
    object.check().map_err(|e| e.to_string())?;
    let path = api_path(&object.kind, &object.namespace, &object.name)
        .ok_or_else(|| format!("the driver does not delete a {}", object.kind))?;
    let body = json!({
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {"uid": object.uid},
        "propagationPolicy": if foreground { "Foreground" } else { "Background" },
    });
    Ok((path, body.to_string()))
}

/// The merge patch that attaches an object (uid `uid`) to the workload `job` of kind `kind`
/// (a Job or a JobSet, uid `job_uid`), so that its TTL removes it: it names the object's own
/// uid, so it fails on any other object of that name.
pub fn owner_patch(uid: &str, kind: &str, job: &str, job_uid: &str) -> String {
    let api_version = if kind == "JobSet" {
        "jobset.x-k8s.io/v1alpha2"
    } else {
        "batch/v1"
    };
    json!({"metadata": {
        "uid": uid,
        "annotations": {JOB_UID_ANNOTATION: job_uid},
        "ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": job, "uid": job_uid}],
    }})
    .to_string()
}

/// What the gates may see of an object kubectl returned: a Secret's values are replaced by
/// nothing (its keys stay), and so is the last-applied annotation that may repeat them.
pub fn observed(mut object: Value) -> Value {
    if object["kind"] == "Secret" {
        for field in ["data", "stringData"] {
            if let Some(map) = object.get_mut(field).and_then(Value::as_object_mut) {
                for value in map.values_mut() {
                    *value = Value::String(String::new());
                }
            }
        }
        if let Some(a) = object
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            a.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(kind: &str, name: &str) -> Owned {
        Owned {
            kind: kind.into(),
            namespace: "team-a".into(),
            name: name.into(),
            uid: "5f0c1b2a-7d3e-4c8f-9a1b-2c3d4e5f6a7b".into(),
        }
    }

    #[test]
    fn a_delete_names_the_uid_and_only_kinds_the_driver_creates() {
        let (path, body) = delete_request(&owned("Job", "dino"), true).unwrap();
        assert_eq!(path, "/apis/batch/v1/namespaces/team-a/jobs/dino");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body["preconditions"]["uid"],
            "5f0c1b2a-7d3e-4c8f-9a1b-2c3d4e5f6a7b"
        );
        assert_eq!(body["propagationPolicy"], "Foreground");
        let (path, _) = delete_request(&owned("Secret", "dino-creds"), false).unwrap();
        assert_eq!(path, "/api/v1/namespaces/team-a/secrets/dino-creds");
        let (path, _) = delete_request(&owned("Pod", "dino-logs-0a1b2c3d"), false).unwrap();
        assert_eq!(path, "/api/v1/namespaces/team-a/pods/dino-logs-0a1b2c3d");
        assert!(delete_request(&owned("Deployment", "x"), false).is_err());
        assert!(delete_request(&owned("Job", "--all"), false).is_err());
        let mut bad = owned("Job", "x");
        bad.uid = "a/b".into();
        assert!(delete_request(&bad, false).is_err());
    }

    #[test]
    fn stamping_labels_the_object_and_the_pods_of_a_job() {
        let mut job = json!({"kind": "Job", "metadata": {"name": "j", "labels": {"a": "b"}},
                             "spec": {"template": {"spec": {}}}});
        stamp(&mut job, Some("tao-20261203-101010-abcd"), "ns", "j");
        assert_eq!(
            job["metadata"]["labels"][RECORD_LABEL],
            "tao-20261203-101010-abcd"
        );
        assert_eq!(job["metadata"]["labels"]["a"], "b");
        assert_eq!(job["metadata"]["annotations"][BUNDLE_ANNOTATION], "ns/j");
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"][BUNDLE_LABEL],
            "j"
        );
        let mut secret = json!({"kind": "Secret", "metadata": {"name": "s"}});
        stamp(&mut secret, Some("r"), "ns", "j");
        assert_eq!(secret["metadata"]["labels"][RECORD_LABEL], "r");
    }

    #[test]
    fn an_observed_secret_keeps_its_keys_and_loses_its_values() {
        let secret = json!({"kind": "Secret", "metadata": {"annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"K\":\"c2VjcmV0\"}}",
            "keep": "x"}}, "data": {"K": "c2VjcmV0"}});
        let seen = observed(secret).to_string();
        assert!(!seen.contains("c2VjcmV0"), "{seen}");
        assert!(seen.contains("\"K\"") && seen.contains("keep"), "{seen}");
    }

    #[test]
    fn the_owner_patch_carries_the_object_s_uid() {
        let patch: Value = serde_json::from_str(&owner_patch("u-1", "Job", "j", "u-2")).unwrap();
        assert_eq!(patch["metadata"]["uid"], "u-1");
        assert_eq!(patch["metadata"]["ownerReferences"][0]["uid"], "u-2");
        assert_eq!(
            patch["metadata"]["ownerReferences"][0]["apiVersion"],
            "batch/v1"
        );
        let patch: Value = serde_json::from_str(&owner_patch("u-1", "JobSet", "j", "u-2")).unwrap();
        let owner = &patch["metadata"]["ownerReferences"][0];
        assert_eq!(
            (owner["apiVersion"].as_str(), owner["kind"].as_str()),
            (Some("jobset.x-k8s.io/v1alpha2"), Some("JobSet"))
        );
    }
}
