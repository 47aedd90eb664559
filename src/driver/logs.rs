//! Logs kept beyond the pods: where a manifest's pods keep their output, and how `job.sh logs`
//! reads it once the pods are gone.
//!
//! A workload keeps its logs when its main container has [`LOG_DIR_ENV`] (a plain value, the
//! in-pod directory `<resultsDir>/logs`) and [`RECORD_ENV`] (the job record, from the label the
//! driver stamps on the pods): each rank writes `<dir>/<record-id>/rank-<index>.log`.
//!
//! - On a mounted volume (a PersistentVolumeClaim or an NFS export, tier A), a short-lived
//!   reader Pod ([`reader_pod`]) mounts that volume read-only where the pods mounted it, and
//!   prints the files with a constant script ([`READ_LOGS_SCRIPT`]) that takes every value as a
//!   positional argument.
//! - On an emptyDir that the uploader (tier C) sends to S3 with [`KEEP_LOGS_ENV`] `"1"`, the
//!   files are under `<TAO_K8S_RESULTS_URI>logs/<record-id>/`, read on the submitter's machine.

use crate::kube::names;
use crate::plan::{
    KEEP_LOGS_ENV, LOG_DIR_ENV, MAIN_CONTAINER, RECORD_ENV, RECORD_FIELD, RESULTS_URI_ENV,
    UPLOAD_CONTAINER,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The reader Pod's script, a constant of the project.
pub const READ_LOGS_SCRIPT: &str = include_str!("../../scripts/read-logs.sh");
/// The reader Pod's one container.
pub const READER_CONTAINER: &str = "read-logs";
/// How long a reader Pod may run, whatever happens to the driver that made it.
pub const READER_DEADLINE_SECONDS: u32 = 300;

/// Where the logs of one job record are kept.
#[derive(Debug, Clone, PartialEq)]
pub enum Kept {
    /// Nowhere: why.
    Not(String),
    /// On a volume of the pod: the record's directory in the pod, the mount and the volume
    /// (as the pod template has them) that hold it.
    Mounted {
        dir: String,
        mount: Value,
        volume: Value,
    },
    /// In S3: the record's prefix, `s3://bucket/prefix/logs/<record-id>/`.
    S3 { uri: String },
}

impl Kept {
    /// Where the logs are, for a message: the directory and its volume, or the S3 prefix.
    pub fn place(&self) -> String {
        match self {
            Kept::Not(_) => String::new(),
            Kept::S3 { uri } => uri.clone(),
            Kept::Mounted { dir, volume, .. } => {
                let name = volume["name"].as_str().unwrap_or_default();
                let source = if let Some(claim) = volume
                    .pointer("/persistentVolumeClaim/claimName")
                    .and_then(Value::as_str)
                {
                    format!("PersistentVolumeClaim {claim}")
                } else {
                    let server = volume.pointer("/nfs/server").and_then(Value::as_str);
                    let path = volume.pointer("/nfs/path").and_then(Value::as_str);
                    format!(
                        "NFS {}:{}",
                        server.unwrap_or_default(),
                        path.unwrap_or_default()
                    )
                };
                format!("{dir} on volume {name} ({source})")
            }
        }
    }
}

/// The pod template of a Job, or of the first replicated Job of a JobSet.
pub fn pod_template(workload: &Value) -> Option<&Value> {
    match workload["kind"].as_str()? {
        "Job" => workload.pointer("/spec/template"),
        "JobSet" => workload.pointer("/spec/replicatedJobs/0/template/spec/template"),
        _ => None,
    }
}

fn named<'a>(list: Option<&'a Value>, name: &str) -> Option<&'a Value> {
    list?
        .as_array()?
        .iter()
        .find(|c| c["name"].as_str() == Some(name))
}

/// The plain value of the env entry `name` of `container`.
fn env_value<'a>(container: &'a Value, name: &str) -> Option<&'a str> {
    named(container.get("env"), name)?["value"].as_str()
}

/// Whether `path` is `prefix` or below it, segment by segment (`/results` holds
/// `/results/x`, not `/results-old`).
fn under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    path == prefix
        || prefix.is_empty()
        || path
            .strip_prefix(prefix)
            .is_some_and(|r| r.starts_with('/'))
}

/// Where the logs of job record `record` are kept by the workload (a Job or JobSet object).
pub fn kept(workload: &Value, record: &str) -> Kept {
    let not = |why: &str| Kept::Not(why.to_string());
    let Some(spec) = pod_template(workload).and_then(|t| t.get("spec")) else {
        return not("the manifest holds no pod template");
    };
    let Some(main) = named(spec.get("containers"), MAIN_CONTAINER) else {
        return not("the pod template has no container tao");
    };
    let Some(log_dir) = env_value(main, LOG_DIR_ENV) else {
        return not("its pods keep no logs (spec.logs.keep is not set)");
    };
    let from_record = named(main.get("env"), RECORD_ENV)
        .and_then(|e| e.pointer("/valueFrom/fieldRef/fieldPath"))
        .and_then(Value::as_str);
    if from_record != Some(RECORD_FIELD) {
        return not("its pods are not told their job record, which names their log directory");
    }
    if !log_dir.starts_with('/') || log_dir.chars().any(char::is_control) {
        return not("its log directory is not an absolute path");
    }
    if !names::is_dns1035_label(record) {
        return not("the job record id is not one");
    }
    let dir = format!("{}/{record}", log_dir.trim_end_matches('/'));
    // The mount that holds the log directory: the longest whole-segment prefix.
    let mount = main
        .get("volumeMounts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| m["mountPath"].as_str().is_some_and(|p| under(log_dir, p)))
        .max_by_key(|m| {
            m["mountPath"]
                .as_str()
                .map_or(0, |p| p.trim_end_matches('/').len())
        });
    let volume = mount.and_then(|m| named(spec.get("volumes"), m["name"].as_str()?));
    if let (Some(mount), Some(volume)) = (mount, volume)
        && (volume.get("persistentVolumeClaim").is_some() || volume.get("nfs").is_some())
    {
        if mount.get("subPathExpr").is_some() {
            return not("the volume of its log directory is mounted with subPathExpr");
        }
        return Kept::Mounted {
            dir,
            mount: mount.clone(),
            volume: volume.clone(),
        };
    }
    // The uploader sends them to S3: a container, or a native sidecar.
    let sidecar = named(spec.get("initContainers"), UPLOAD_CONTAINER)
        .filter(|c| c["restartPolicy"].as_str() == Some("Always"));
    let uploader = named(spec.get("containers"), UPLOAD_CONTAINER).or(sidecar);
    if let Some(uploader) = uploader
        && env_value(uploader, KEEP_LOGS_ENV) == Some("1")
        && let Some(uri) = env_value(uploader, RESULTS_URI_ENV)
        && uri.starts_with("s3://")
        && !uri.chars().any(|c| c.is_control() || c.is_whitespace())
    {
        let base = uri.trim_end_matches('/');
        return Kept::S3 {
            uri: format!("{base}/logs/{record}/"),
        };
    }
    not("its log directory is on no PersistentVolumeClaim nor NFS volume, and no uploader keeps it")
}

/// A reader Pod's name: `<job>-logs-<8 hex>`, a DNS label. The hex is of the sha256 of the
/// record id, the clock's nanoseconds, the process id and a process-wide counter: each reader
/// has its own name, so two `job.sh logs` of one record at once do not collide on it (each
/// deletes only its own Pod, by uid).
pub fn reader_name(job: &str, record: &str) -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let mut hash = Sha256::new();
    hash.update(record.as_bytes());
    hash.update(nanos.to_le_bytes());
    hash.update(std::process::id().to_le_bytes());
    hash.update(
        COUNTER
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .to_le_bytes(),
    );
    let digest = hash.finalize();
    let suffix = format!(
        "{:02x}{:02x}{:02x}{:02x}",
        digest[0], digest[1], digest[2], digest[3]
    );
    let room = names::MAX_LABEL - "-logs-".len() - suffix.len();
    let mut base: String = job.chars().take(room).collect();
    while base.ends_with(['-', '.']) {
        base.pop();
    }
    format!("{base}-logs-{suffix}")
}

/// What a reader Pod reads: one rank, and the last lines of each log.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reading {
    pub index: Option<u32>,
    pub tail: Option<u64>,
}

/// The reader Pod of job record `record`'s logs, kept on the volume of `kept` (a
/// [`Kept::Mounted`]), for the workload `workload` named `job` in `namespace`. It runs the
/// action's image (which the nodes of the job have pulled) where the job's pods could run, with
/// the pod template's security context, mounting only that volume, read-only.
pub fn reader_pod(
    workload: &Value,
    kept: &Kept,
    job: &str,
    namespace: &str,
    record: &str,
    reading: Reading,
) -> Result<Value, String> {
    let Kept::Mounted { dir, mount, volume } = kept else {
        return Err("the logs are not kept on a volume the pod mounts".into());
    };
    let spec = pod_template(workload)
        .and_then(|t| t.get("spec"))
        .ok_or("the manifest holds no pod template")?;
    let image = named(spec.get("containers"), MAIN_CONTAINER)
        .and_then(|c| c["image"].as_str())
        .ok_or("the pod template's container tao has no image")?;
    let mut volume = volume.clone();
    for source in ["persistentVolumeClaim", "nfs"] {
        if let Some(s) = volume.get_mut(source).and_then(Value::as_object_mut) {
            s.insert("readOnly".into(), true.into());
        }
    }
    let mut mounted = json!({
        "name": mount["name"],
        "mountPath": mount["mountPath"],
        "readOnly": true,
    });
    if let Some(sub) = mount.get("subPath") {
        mounted["subPath"] = sub.clone();
    }
    let name = reader_name(job, record);
    let arg = |v: Option<String>| v.unwrap_or_default();
    let mut container = json!({
        "name": READER_CONTAINER,
        "image": image,
        "command": [
            "/bin/sh", "-c", crate::plan::pod_script(READ_LOGS_SCRIPT), name, dir,
            arg(reading.index.map(|i| i.to_string())),
            arg(reading.tail.map(|t| t.to_string())),
        ],
        "resources": {
            "requests": {"cpu": "10m", "memory": "32Mi"},
            "limits": {"cpu": "500m", "memory": "128Mi"},
        },
        "volumeMounts": [mounted],
    });
    let mut pod_spec = json!({
        "restartPolicy": "Never",
        "activeDeadlineSeconds": READER_DEADLINE_SECONDS,
        "automountServiceAccountToken": false,
        "enableServiceLinks": false,
        "terminationGracePeriodSeconds": 5,
    });
    for field in [
        "nodeSelector",
        "tolerations",
        "imagePullSecrets",
        "securityContext",
    ] {
        if let Some(value) = spec.get(field) {
            pod_spec[field] = value.clone();
        }
    }
    if spec.get("securityContext").is_some() {
        container["securityContext"] =
            json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}});
    }
    pod_spec["containers"] = json!([container]);
    pod_spec["volumes"] = json!([volume]);
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/managed-by": "tao-k8s",
                "app.kubernetes.io/component": "log-reader",
            },
        },
        "spec": pod_spec,
    }))
}

/// The rank logs of an `aws s3 ls <prefix>` listing, by index (only `index` if given): each as
/// `(file name, its URI under prefix)`.
pub fn s3_logs(listing: &str, prefix: &str, index: Option<u32>) -> Vec<(String, String)> {
    let mut found: Vec<(u32, String)> = listing
        .lines()
        .filter_map(|line| {
            let name = line.split_whitespace().last()?;
            let i: u32 = name
                .strip_prefix("rank-")?
                .strip_suffix(".log")?
                .parse()
                .ok()?;
            (format!("rank-{i}.log") == name && index.is_none_or(|want| want == i))
                .then(|| (i, name.to_string()))
        })
        .collect();
    found.sort();
    found.dedup();
    found
        .into_iter()
        .map(|(_, name)| {
            let uri = format!("{prefix}{name}");
            (name, uri)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = "tao-20261202-083107-7f3a";

    fn job(env: Value, mounts: Value, volumes: Value) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "dino", "namespace": "vision"},
               "spec": {"template": {"spec": {
                   "containers": [{"name": "tao", "image": "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt",
                                   "env": env, "volumeMounts": mounts}],
                   "volumes": volumes,
                   "nodeSelector": {"nvidia.com/gpu.present": "true"},
                   "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                   "imagePullSecrets": [{"name": "dino-ngc"}]}}}})
    }

    fn keeping(dir: &str) -> Value {
        json!([{"name": LOG_DIR_ENV, "value": dir},
               {"name": RECORD_ENV, "valueFrom": {"fieldRef": {"fieldPath": RECORD_FIELD}}}])
    }

    #[test]
    fn the_longest_whole_segment_mount_holds_the_logs_with_its_sub_path() {
        let workload = job(
            keeping("/results/dino/logs"),
            json!([{"name": "data", "mountPath": "/results-old"},
                   {"name": "results", "mountPath": "/results", "subPath": "team/a"},
                   {"name": "deep", "mountPath": "/results/dino/"},
                   {"name": "other", "mountPath": "/results/dino/logs-x"}]),
            json!([{"name": "data", "persistentVolumeClaim": {"claimName": "old"}},
                   {"name": "results", "nfs": {"server": "10.0.0.5", "path": "/exports"}},
                   {"name": "deep", "persistentVolumeClaim": {"claimName": "tao-results"}},
                   {"name": "other", "persistentVolumeClaim": {"claimName": "x"}}]),
        );
        let found = kept(&workload, RECORD);
        let Kept::Mounted { dir, mount, volume } = &found else {
            panic!("{found:?}")
        };
        assert_eq!(dir, &format!("/results/dino/logs/{RECORD}"));
        assert_eq!(mount["name"], "deep");
        assert_eq!(volume["persistentVolumeClaim"]["claimName"], "tao-results");
        assert_eq!(
            found.place(),
            format!(
                "/results/dino/logs/{RECORD} on volume deep (PersistentVolumeClaim tao-results)"
            )
        );

        // Without the deeper mount: the NFS export, mounted at its subPath, read-only.
        let workload = job(
            keeping("/results/dino/logs"),
            json!([{"name": "results", "mountPath": "/results", "subPath": "team/a"}]),
            json!([{"name": "results", "nfs": {"server": "10.0.0.5", "path": "/exports"}}]),
        );
        let found = kept(&workload, RECORD);
        let pod = reader_pod(
            &workload,
            &found,
            "dino",
            "vision",
            RECORD,
            Reading::default(),
        )
        .unwrap();
        let spec = &pod["spec"];
        assert_eq!(
            spec["volumes"],
            json!([{"name": "results", "nfs": {"server": "10.0.0.5", "path": "/exports", "readOnly": true}}])
        );
        assert_eq!(
            spec["containers"][0]["volumeMounts"],
            json!([{"name": "results", "mountPath": "/results", "subPath": "team/a", "readOnly": true}])
        );
    }

    #[test]
    fn the_reader_pod_runs_where_the_job_ran_with_values_as_arguments() {
        let workload = job(
            keeping("/results/x'; rm -rf / #/logs"),
            json!([{"name": "results", "mountPath": "/results"}]),
            json!([{"name": "results", "persistentVolumeClaim": {"claimName": "tao-results"}}]),
        );
        let found = kept(&workload, RECORD);
        let reading = Reading {
            index: Some(3),
            tail: Some(50),
        };
        let pod = reader_pod(&workload, &found, "dino", "vision", RECORD, reading).unwrap();
        let spec = &pod["spec"];
        let command = spec["containers"][0]["command"].as_array().unwrap();
        assert_eq!(command[..2], [json!("/bin/sh"), json!("-c")]);
        assert_eq!(command[2], crate::plan::pod_script(READ_LOGS_SCRIPT));
        assert!(!command[2].as_str().unwrap().contains("rm -rf"));
        assert_eq!(
            command[3..],
            [
                pod["metadata"]["name"].clone(),
                json!(format!("/results/x'; rm -rf / #/logs/{RECORD}")),
                json!("3"),
                json!("50")
            ]
        );
        assert_eq!(spec["restartPolicy"], "Never");
        assert_eq!(spec["activeDeadlineSeconds"], READER_DEADLINE_SECONDS);
        assert_eq!(spec["automountServiceAccountToken"], false);
        assert_eq!(spec["nodeSelector"]["nvidia.com/gpu.present"], "true");
        assert_eq!(spec["tolerations"][0]["key"], "nvidia.com/gpu");
        assert_eq!(spec["imagePullSecrets"][0]["name"], "dino-ngc");
        assert!(spec.get("securityContext").is_none());
        let container = &spec["containers"][0];
        assert!(container.get("securityContext").is_none());
        assert_eq!(
            container["image"],
            "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt"
        );
        assert!(
            container["resources"]["limits"]
                .get("nvidia.com/gpu")
                .is_none()
        );
        assert_eq!(
            spec["volumes"][0]["persistentVolumeClaim"],
            json!({"claimName": "tao-results", "readOnly": true})
        );
        // The whole log of every rank: empty arguments.
        let pod = reader_pod(
            &workload,
            &found,
            "dino",
            "vision",
            RECORD,
            Reading::default(),
        )
        .unwrap();
        let command = pod["spec"]["containers"][0]["command"].as_array().unwrap();
        assert_eq!(command[5..], [json!(""), json!("")]);
    }

    #[test]
    fn a_restricted_pod_template_makes_a_restricted_reader() {
        let mut workload = job(
            keeping("/results/logs"),
            json!([{"name": "results", "mountPath": "/results"}]),
            json!([{"name": "results", "persistentVolumeClaim": {"claimName": "r"}}]),
        );
        let context = json!({"runAsNonRoot": true, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}});
        workload["spec"]["template"]["spec"]["securityContext"] = context.clone();
        let found = kept(&workload, RECORD);
        let pod = reader_pod(
            &workload,
            &found,
            "dino",
            "vision",
            RECORD,
            Reading::default(),
        )
        .unwrap();
        assert_eq!(pod["spec"]["securityContext"], context);
        assert_eq!(
            pod["spec"]["containers"][0]["securityContext"],
            json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}})
        );
    }

    #[test]
    fn reader_names_are_dns_labels_within_63() {
        let name = reader_name("dino", RECORD);
        assert!(name.starts_with("dino-logs-") && name.len() == 18, "{name}");
        // Two readers of one record at once have two names.
        assert_ne!(name, reader_name("dino", RECORD));
        for job in [
            "a".repeat(63),
            format!("{}-b", "a".repeat(48)),
            "x".repeat(50),
        ] {
            let name = reader_name(&job, RECORD);
            assert!(names::is_dns1123_label(&name), "{name}");
            assert!(name.len() <= 63, "{name}");
        }
    }

    #[test]
    fn a_jobset_keeps_what_its_first_replicated_job_s_pods_keep() {
        let job = job(
            keeping("/results/logs"),
            json!([{"name": "results", "mountPath": "/results"}]),
            json!([{"name": "results", "persistentVolumeClaim": {"claimName": "tao-results"}}]),
        );
        let jobset = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "dino"},
            "spec": {"replicatedJobs": [{"name": "workers", "template": job}]}});
        let found = kept(&jobset, RECORD);
        assert!(
            matches!(&found, Kept::Mounted { dir, .. } if dir == &format!("/results/logs/{RECORD}"))
        );
        let pod = reader_pod(
            &jobset,
            &found,
            "dino",
            "vision",
            RECORD,
            Reading::default(),
        )
        .unwrap();
        assert_eq!(pod["spec"]["imagePullSecrets"][0]["name"], "dino-ngc");
    }

    #[test]
    fn tier_c_keeps_them_under_the_results_uri() {
        let mut workload = job(
            keeping("/results/logs"),
            json!([{"name": "results", "mountPath": "/results"}]),
            json!([{"name": "results", "emptyDir": {}}]),
        );
        let uploader = json!({"name": UPLOAD_CONTAINER, "restartPolicy": "Always", "env": [
            {"name": RESULTS_URI_ENV, "value": "s3://tao-bucket/runs/dino/"},
            {"name": KEEP_LOGS_ENV, "value": "1"}]});
        workload["spec"]["template"]["spec"]["initContainers"] = json!([uploader.clone()]);
        assert_eq!(
            kept(&workload, RECORD),
            Kept::S3 {
                uri: format!("s3://tao-bucket/runs/dino/logs/{RECORD}/")
            }
        );
        // A regular container (1.28) does too; an init container that ends before the action
        // does not, nor an uploader that keeps no logs.
        let mut regular = uploader.clone();
        regular.as_object_mut().unwrap().remove("restartPolicy");
        workload["spec"]["template"]["spec"]["initContainers"] = json!([regular.clone()]);
        assert!(matches!(kept(&workload, RECORD), Kept::Not(_)));
        workload["spec"]["template"]["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(regular.clone());
        assert!(matches!(kept(&workload, RECORD), Kept::S3 { .. }));
        regular["env"][1]["value"] = json!("0");
        workload["spec"]["template"]["spec"]["containers"][1] = regular;
        assert!(matches!(kept(&workload, RECORD), Kept::Not(_)));
    }

    #[test]
    fn without_the_env_nothing_is_kept() {
        let workload = job(
            json!([{"name": "OTHER", "value": "x"}]),
            json!([{"name": "results", "mountPath": "/results"}]),
            json!([{"name": "results", "persistentVolumeClaim": {"claimName": "r"}}]),
        );
        assert!(
            matches!(kept(&workload, RECORD), Kept::Not(why) if why.contains("spec.logs.keep"))
        );
        // A record id that is not one never becomes a path.
        let workload = job(
            keeping("/results/logs"),
            json!([{"name": "results", "mountPath": "/results"}]),
            json!([{"name": "results", "persistentVolumeClaim": {"claimName": "r"}}]),
        );
        assert!(matches!(kept(&workload, "../x"), Kept::Not(_)));
    }

    #[test]
    fn an_s3_listing_gives_the_rank_logs_by_index() {
        let listing = "                           PRE old/\n\
                       2026-12-02 08:31:07       1234 rank-10.log\n\
                       2026-12-02 08:31:07         12 rank-2.log\n\
                       2026-12-02 08:31:07         12 notes.txt\n\
                       2026-12-02 08:31:07         12 rank-02.log\n\
                       2026-12-02 08:31:07         99 rank-0.log\n";
        let prefix = "s3://b/p/logs/r/";
        assert_eq!(
            s3_logs(listing, prefix, None),
            [
                (
                    "rank-0.log".to_string(),
                    "s3://b/p/logs/r/rank-0.log".to_string()
                ),
                ("rank-2.log".into(), "s3://b/p/logs/r/rank-2.log".into()),
                ("rank-10.log".into(), "s3://b/p/logs/r/rank-10.log".into()),
            ]
        );
        assert_eq!(s3_logs(listing, prefix, Some(2)).len(), 1);
        assert!(s3_logs(listing, prefix, Some(3)).is_empty());
    }
}
