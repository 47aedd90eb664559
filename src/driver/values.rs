//! The job's values that `job.sh` reads (`job.env`): the names of what a submit creates, the
//! namespace, the GPU shape, the claims and Secrets it checks, the credential keys it may
//! pass, what the job record holds. Every value reaches bash through [`super::shell_quote`];
//! the names are lower case, so that none can be an environment variable the submitter passes
//! into the pod (those are upper case, see [`super::credentials`]).

use super::shell_quote;
use crate::plan::{MAIN_CONTAINER, Plan};
use crate::request::credentials::S3_KEYS;
use serde::Serialize;

/// What `job.sh` knows about its job.
#[derive(Debug, Clone, Serialize)]
pub struct JobValues {
    /// The tao-k8s version that wrote the bundle; the driver runs only that version.
    pub version: String,
    /// The name of the Job, or of the JobSet.
    pub job: String,
    /// `Job`, or `JobSet` (`render --target jobset`).
    pub workload: String,
    /// The Job and the headless Service a JobSet creates (not the driver): empty for a Job.
    /// They must not exist when it starts, unless that JobSet made them.
    pub child_job: String,
    pub child_service: String,
    /// Empty when there is no such object.
    pub service: String,
    pub config_map: String,
    /// The Secret the pod reads credentials from; empty when it needs none.
    pub credentials_secret: String,
    /// The request named the credentials Secret (`credentials.secretName`): it may exist and
    /// belong to someone else, and is then used as it is, read-only.
    pub credentials_secret_named: bool,
    /// The nvcr.io pull Secret made from NGC_KEY; empty when none.
    pub ngc_pull_secret: String,
    pub namespace: String,
    pub nodes: u32,
    pub gpus_per_node: u32,
    pub claims: Vec<String>,
    /// Existing pull Secrets the request names: checked, never touched.
    pub image_pull_secrets: Vec<String>,
    /// The S3 keys the credentials Secret must hold, and those it holds when set.
    pub s3_required_keys: Vec<String>,
    pub s3_optional_keys: Vec<String>,
    /// `credentials.extra`: keys the request asks for, which the submitter must allow.
    pub extra_keys: Vec<String>,
    pub queue: String,
    pub image: String,
    pub network_arch: String,
    pub action: String,
    pub tier: String,
    pub results_dir: String,
    /// The container whose logs `job.sh logs` shows.
    pub main_container: String,
    /// The Job (and Service) of the NCCL probe (`nccl-probe.yaml`); empty when none.
    pub probe_job: String,
    /// The first 16 hex digits of the sha256 of `nccl-probe.yaml`: a probe passed on a cluster
    /// is trusted again only with the same image, GPUs and transport env. Empty when none.
    pub probe_digest: String,
    /// The absolute path of the tao-k8s that wrote a bundle, the script's default when
    /// `TAO_K8S_BIN` is unset and that file still exists; empty when unknown (`script`).
    pub writer: String,
}

impl JobValues {
    /// The script's values, from the Plan alone.
    pub fn new(plan: &Plan) -> JobValues {
        let run = &plan.run;
        let s3 = |k: &String| S3_KEYS.contains(&k.as_str());
        JobValues {
            version: env!("CARGO_PKG_VERSION").into(),
            job: plan.names.job.clone(),
            workload: if plan.job_set.is_some() {
                "JobSet"
            } else {
                "Job"
            }
            .into(),
            child_job: plan.names.child_job.clone().unwrap_or_default(),
            child_service: plan
                .job_set
                .as_ref()
                .map(|j| j.subdomain.clone())
                .unwrap_or_default(),
            service: plan
                .service
                .as_ref()
                .map(|s| s.name.clone())
                .unwrap_or_default(),
            config_map: plan
                .config_map
                .as_ref()
                .map(|c| c.name.clone())
                .unwrap_or_default(),
            credentials_secret: plan.credentials_secret.clone().unwrap_or_default(),
            credentials_secret_named: plan.credentials_secret.is_some() && plan.names.secret_named,
            ngc_pull_secret: plan.ngc_pull_secret.clone().unwrap_or_default(),
            namespace: plan.namespace.clone(),
            nodes: run.nodes,
            gpus_per_node: run.gpus_per_node,
            claims: run.pvcs.clone(),
            image_pull_secrets: run.image_pull_secrets.clone(),
            s3_required_keys: run
                .required_keys
                .iter()
                .filter(|k| s3(k))
                .cloned()
                .collect(),
            s3_optional_keys: run
                .optional_keys
                .iter()
                .filter(|k| s3(k))
                .cloned()
                .collect(),
            extra_keys: run
                .required_keys
                .iter()
                .filter(|k| !s3(k))
                .cloned()
                .collect(),
            queue: run.queue.clone().unwrap_or_default(),
            image: run.image.clone(),
            network_arch: run.network_arch.clone(),
            action: run.action.clone(),
            tier: run.tier.into(),
            results_dir: run.results_dir.clone(),
            main_container: MAIN_CONTAINER.into(),
            probe_job: run.probe_job.clone().unwrap_or_default(),
            probe_digest: String::new(),
            writer: String::new(),
        }
    }

    /// The job's values as bash assignments (`job.env`), each value one quoted word.
    pub fn data(&self) -> String {
        format!(
            "# job.env: the values of the Kubernetes job {}, written by tao-k8s {} for job.sh.\n\
             # shellcheck shell=bash disable=SC2034 # read by job.sh\n{}",
            self.job,
            self.version,
            self.assignments()
        )
    }

    /// The assignments of [`JobValues::data`].
    fn assignments(&self) -> String {
        let one = |v: &str| shell_quote(v);
        let many = |v: &[String]| {
            let words: Vec<String> = v.iter().map(|w| shell_quote(w)).collect();
            format!("({})", words.join(" "))
        };
        let flag = |b: bool| one(if b { "1" } else { "" });
        let assignments = [
            ("job", one(&self.job)),
            ("workload", one(&self.workload)),
            ("child_job", one(&self.child_job)),
            ("child_service", one(&self.child_service)),
            ("service", one(&self.service)),
            ("config_map", one(&self.config_map)),
            ("credentials_secret", one(&self.credentials_secret)),
            (
                "credentials_secret_named",
                flag(self.credentials_secret_named),
            ),
            ("ngc_pull_secret", one(&self.ngc_pull_secret)),
            ("namespace", one(&self.namespace)),
            ("nodes", one(&self.nodes.to_string())),
            ("gpus_per_node", one(&self.gpus_per_node.to_string())),
            ("claims", many(&self.claims)),
            ("image_pull_secrets", many(&self.image_pull_secrets)),
            ("s3_required_keys", many(&self.s3_required_keys)),
            ("s3_optional_keys", many(&self.s3_optional_keys)),
            ("extra_keys", many(&self.extra_keys)),
            ("queue", one(&self.queue)),
            ("image", one(&self.image)),
            ("network_arch", one(&self.network_arch)),
            ("action", one(&self.action)),
            ("tier", one(&self.tier)),
            ("results_dir", one(&self.results_dir)),
            ("main_container", one(&self.main_container)),
            ("probe_job", one(&self.probe_job)),
            ("probe_digest", one(&self.probe_digest)),
            ("version", one(&self.version)),
            ("writer", one(&self.writer)),
        ];
        let mut text = String::new();
        for (name, value) in assignments {
            text.push_str(&format!("{name}={value}\n"));
        }
        text
    }

    /// The driver as one file: the program with the job's values in place of the line that
    /// reads them from `job.env` (`tao-k8s script`).
    pub fn printed(&self) -> String {
        let data = format!(
            "# shellcheck disable=SC2034 # read below\n{{\n{}}}\n",
            self.assignments()
        );
        super::DRIVER.replacen(super::DATA_LINE, &data, 1)
    }

    /// Record `path` (the running binary) as the script's default tao-k8s, when it is a plain
    /// string: no control character to carry into the script.
    pub fn with_writer(mut self, path: Option<&str>) -> JobValues {
        if let Some(path) = path
            && !path.chars().any(char::is_control)
        {
            self.writer = path.to_string();
        }
        self
    }
}

#[cfg(test)]
mod tests {
    /// Every name job.env assigns is lower case: the submitter's environment variables that
    /// reach the pod are upper case, so the driver's values can never stand in for them.
    #[test]
    fn every_value_has_a_lower_case_name() {
        let plan = crate::compile(
            &crate::source::Source::new("r.yaml", include_str!("../../examples/dino-train.yaml")),
            &crate::plan::Options::default(),
            crate::render::Templates::embedded(),
        )
        .map(|c| c.plan)
        .unwrap_or_else(|_| panic!("the example compiles"));
        let data = super::JobValues::new(&plan).data();
        for line in data.lines().filter(|l| !l.starts_with('#')) {
            let (name, _) = line.split_once('=').unwrap();
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{name}"
            );
        }
    }
}
