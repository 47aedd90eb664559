use crate::lint::pods::{env_values, job_spec, jobset_pods, total_pods};
use crate::lint::{Document, Finding, Findings, Rule};
use crate::yaml::Value;

crate::rule! {
    /// What it checks: in an Indexed Job (or the Job of each replicated Job of a JobSet), the
    /// `WORLD_SIZE` and `NNODES` env values of every container and init container that are
    /// integers written in the manifest: each must equal
    /// `spec.completions`, the number of pods (nodes) the Job runs. In a JobSet the pods of
    /// all its replicated Jobs together, or of all replicas of that replicated Job, are also
    /// right: a rendezvous may span them. Values from `valueFrom` or that expand `$(VAR)` are
    /// not findings.
    ///
    /// Why it matters: TAO reads `WORLD_SIZE` (and torchrun `NNODES`) as the node count. Too
    /// large, and the rendezvous waits for nodes that never come until it times out; too small,
    /// and the extra pods fail to join, or train on their own, writing to the same results.
    ///
    /// Example: `completions: 4` with `env: [{name: WORLD_SIZE, value: "8"}]`, GPUs counted
    /// instead of nodes (4 nodes of 2 GPUs).
    ///
    /// Fix: set `WORLD_SIZE` and `NNODES` to `spec.completions`; GPUs per node go in
    /// `NPROC_PER_NODE` (or `NUM_GPU_PER_NODE`).
    pub struct WorldSize {
        code: "TK308",
        name: "world-size",
        group: Gpu,
        severity: Error,
    }
}

impl Rule for WorldSize {
    fn check(&self, doc: &Document, out: &mut Findings) {
        // A Job, or the Job of a JobSet's replicated Job (Indexed unless it says otherwise:
        // JobSet's webhook defaults `completionMode` to Indexed).
        let Some((_, spec)) = job_spec(doc) else {
            return;
        };
        let jobset = doc.jobset_job_path().is_some();
        let indexed = match spec.get("completionMode").map(|n| &n.value) {
            Some(Value::Str(m)) => m == "Indexed",
            None => jobset,
            _ => false,
        };
        let Some(Value::Int(completions)) = spec.get("completions").map(|n| &n.value) else {
            return;
        };
        if doc.kind == "CronJob" || !indexed {
            return;
        }
        let field = if jobset {
            format!(
                "spec.replicatedJobs[{}].template.spec.completions",
                doc.replicated_job
            )
        } else {
            "spec.completions".to_string()
        };
        // A JobSet's rendezvous may take in every replica of the replicated Job, or the pods
        // of every replicated Job.
        let mut right = vec![*completions];
        let mut more = String::new();
        if jobset
            && let Some(jobs) = jobset_pods(doc)
            && let Some((replicas, _)) = jobs.get(doc.replicated_job)
        {
            let all = total_pods(&jobs);
            right.extend([replicas.saturating_mul(*completions), all]);
            if *replicas != 1 {
                more += &format!(", {} in its {replicas} replicas", right[1]);
            }
            if all != right[1] {
                more += &format!(", {all} in the whole JobSet");
            }
        }
        for env in env_values(doc) {
            if env.name != "WORLD_SIZE" && env.name != "NNODES" {
                continue;
            }
            let found = match &env.value.value {
                Value::Int(n) => Some(*n),
                Value::Str(s) => s.trim().parse::<i64>().ok(),
                _ => None,
            };
            let Some(found) = found.filter(|n| !right.contains(n)) else {
                continue;
            };
            let var_name = env.name;
            out.push(Finding {
                message: format!(
                    "{}: {var_name} of container `{}` is {found}, but the Indexed Job runs {completions} pods (`{field}`){more}",
                    doc.label(),
                    env.container
                ),
                help: Some(format!(
                    "set {var_name} to \"{completions}\": TAO reads it as the number of nodes; GPUs per node go in NPROC_PER_NODE"
                )),
                path: env.path,
                span: env.value.span.clone(),
            });
        }
    }
}
