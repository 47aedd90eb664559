//! `tao-k8s gate MANIFEST --cluster DIR`: the driver's gates on what it gathered from the
//! cluster (see `tao_k8s::gate`). DIR holds `nodes.json` (`kubectl get nodes -o json`), and
//! when gathered `pods.json` (the non-terminated pods of all namespaces), `version.json`
//! (`kubectl get --raw /version`), `pvcs.json` (the namespace's claims), `storageclasses.json`
//! (`kubectl get storageclass -o json`) and `job.json` (the
//! Job of the manifest's name, when it exists). Exit codes: 0 every gate passes (warnings
//! included), 1 a gate refuses, 2 usage or a file that cannot be read.

use super::input::{self, cluster_json};
use super::{USAGE, emit, read_source};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tao_k8s::cluster::objects;
use tao_k8s::driver::credentials;
use tao_k8s::gate::{self, Cluster, Options, Workload};

/// Decide the driver's gates from the manifest and what kubectl returned.
#[derive(Args)]
#[command(after_help = "Examples:
  kubectl get nodes -o json >cluster/nodes.json
  kubectl get pods -A --field-selector=status.phase!=Succeeded,status.phase!=Failed -o json >cluster/pods.json
  kubectl get --raw /version >cluster/version.json
  tao-k8s gate bundle/manifest.yaml --cluster cluster/

DIR holds nodes.json, and when gathered pods.json, version.json, pvcs.json (the claims of the
namespace), storageclasses.json (a Pending claim of a WaitForFirstConsumer class passes), job.json (the Job of the manifest's name, if it exists) and objects.json (the
objects of the bundle's names that exist, as `tao-k8s driver observe` prints them). Without
pods.json free capacity is not checked. An object is yours when its uid is listed in one of
your job records ($TAO_K8S_STATE_DIR). One verdict per gate: job, owners, credentials,
version, claims, fit, and runtime with --runtime-check. Fit verdicts:
fits now; fits only on an idle cluster (a warning for one pod; refused for several unless
--allow-pending or the Job has a Kueue queue); never fits (refused).
Exit codes: 0 every gate passes, 1 a gate refuses, 2 usage or an unreadable file.")]
pub struct GateArgs {
    /// The manifest (YAML) whose Job is to run.
    manifest: PathBuf,
    /// The directory of what kubectl returned.
    #[arg(long, value_name = "DIR")]
    cluster: PathBuf,
    /// Let several pods wait Pending when they fit only an idle cluster.
    #[arg(long)]
    allow_pending: bool,
    /// An existing Job that ended passes when a job record here created it: the driver
    /// deletes it, and the leftovers of this bundle's records, and submits again.
    #[arg(long)]
    replace: bool,
    /// An environment variable the submitter lets reach the pod (repeatable, or comma
    /// separated; TAO_K8S_PASS_ENV adds more).
    #[arg(long, value_name = "NAME")]
    pass_env: Vec<String>,
    /// A name the request's `credentials.extra` asks for (repeatable).
    #[arg(long, value_name = "NAME")]
    extra: Vec<String>,
    /// The Secret the request names (`credentials.secretName`): used read-only if it exists.
    #[arg(long, value_name = "NAME")]
    named_secret: Option<String>,
    /// A key the pod reads from the credentials Secret (repeatable).
    #[arg(long, value_name = "KEY")]
    needed_key: Vec<String>,
    /// Check the GPU nodes' driver and toolkit versions from their labels.
    #[arg(long)]
    runtime_check: bool,
    /// Write what the driver does next into DIR/decisions.env (bash assignments) and the
    /// bodies of the deletes it issues into DIR.
    #[arg(long, value_name = "DIR")]
    decisions: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Text)]
    output: Format,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// One line per gate: `gate: outcome: message`.
    Text,
    /// `{"refused": bool, "gates": [...]}`.
    Json,
}

pub fn run(args: GateArgs) -> ExitCode {
    match decide(&args) {
        Ok((verdicts, refused)) => {
            let text = match args.output {
                Format::Text => gate::text(&verdicts),
                Format::Json => {
                    let json = serde_json::json!({"refused": refused, "gates": verdicts});
                    serde_json::to_string_pretty(&json).expect("verdicts serialize") + "\n"
                }
            };
            let code = emit(&text);
            if refused && code == ExitCode::SUCCESS {
                ExitCode::from(1)
            } else {
                code
            }
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(USAGE)
        }
    }
}

fn decide(args: &GateArgs) -> Result<(Vec<gate::Verdict>, bool), String> {
    let source = read_source(&args.manifest).map_err(|e| e.message().to_string())?;
    let stream = tao_k8s::yaml::parse(&source, tao_k8s::yaml::Limits::default())
        .map_err(|_| format!("{} is not YAML", source.name()))?;
    let objects: Vec<serde_json::Value> = stream.documents.iter().map(|d| d.to_json()).collect();
    let work = Workload::from_manifest(&objects).map_err(|e| format!("{}: {e}", source.name()))?;
    let dir = &args.cluster;
    if !dir.is_dir() {
        return Err(format!("--cluster {}: not a directory", dir.display()));
    }
    let nodes: objects::List<objects::Node> =
        cluster_json(dir, "nodes.json")?.ok_or_else(|| {
            format!(
                "{}: no nodes.json (kubectl get nodes -o json)",
                dir.display()
            )
        })?;
    if let Some(name) = objects::repeated_node(&nodes.items) {
        return Err(format!(
            "{}: node `{name}` is listed twice: expected each node once, as `kubectl get nodes -o json` lists them",
            dir.join("nodes.json").display()
        ));
    }
    let cluster = Cluster {
        nodes: nodes.items,
        pods: pods_usage(dir)?,
        version: cluster_json(dir, "version.json")?,
        claims: cluster_json::<objects::List<objects::Claim>>(dir, "pvcs.json")?.map(|l| l.items),
        storage_classes: cluster_json::<objects::List<objects::StorageClass>>(
            dir,
            "storageclasses.json",
        )?
        .map(|l| l.items),
        job: cluster_json(dir, "job.json")?,
        existing: existing(dir)?,
    };
    let records = match tao_k8s::record::Store::from_env() {
        Ok(store) => {
            let (records, skipped) = store.list().map_err(|e| e.to_string())?;
            for e in skipped {
                eprintln!("warning: skipped: {e}");
            }
            records
        }
        Err(_) => Vec::new(),
    };
    let pass_env = std::env::var(credentials::PASS_ENV).ok();
    let opts = Options {
        allow_pending: args.allow_pending,
        records,
        replace: args.replace,
        named_secret: args.named_secret.clone(),
        needed_keys: args.needed_key.clone(),
        extra_keys: args.extra.clone(),
        allowed_env: credentials::allowed(&args.pass_env, pass_env.as_deref()),
        runtime_check: args.runtime_check,
    };
    let (verdicts, decision) = gate::gates(&work, &cluster, &opts);
    let refused = gate::refused(&verdicts);
    if let (Some(out), false) = (&args.decisions, refused) {
        write_decisions(out, &decision)?;
    }
    Ok((verdicts, refused))
}

/// DIR/pods.json, counted where each pod runs as it is read: a cluster's pods are never held.
fn pods_usage(dir: &Path) -> Result<Option<gate::fit::Usage>, String> {
    let mut usage = gate::fit::Usage::default();
    let each = objects::EachItem::new(|pod: objects::Pod| usage.add(&pod));
    Ok(input::cluster_json_seed(dir, "pods.json", each)?.map(|()| usage))
}

/// DIR/objects.json: the objects of the bundle's names that exist, as `tao-k8s driver
/// observe` printed them, one JSON value after another (none when the file is empty).
fn existing(dir: &Path) -> Result<Vec<gate::owners::Existing>, String> {
    let path = dir.join("objects.json");
    let Some(stream) = input::stream_if_present(&path, input::Kind::Cluster)
        .map_err(|e| e.message().to_string())?
    else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for value in serde_json::Deserializer::from_reader(stream).into_iter::<serde_json::Value>() {
        let value =
            value.map_err(|e| format!("{}: not what kubectl returns: {e}", path.display()))?;
        let found = gate::owners::Existing::new(value)
            .ok_or_else(|| format!("{}: an object without kind, name or uid", path.display()))?;
        out.push(found);
    }
    Ok(out)
}

/// The decisions the driver acts on, as bash assignments: the deletes `--replace` issues
/// (`PATH BODY KIND NAME UID`, bodies written beside) and whether the named Secret exists.
fn write_decisions(dir: &Path, decision: &gate::owners::Decision) -> Result<(), String> {
    use tao_k8s::driver::{objects::delete_request, shell_quote};
    input::create_dir(dir)?;
    let mut deletes = Vec::new();
    let mut ordered: Vec<_> = decision.deletes.iter().collect();
    ordered.sort_by_key(|o| !tao_k8s::kube::is_workload(&o.kind));
    for (i, object) in ordered.into_iter().enumerate() {
        let (path, body) = delete_request(object, tao_k8s::kube::is_workload(&object.kind))?;
        let file = dir.join(format!("replace-{i}.json"));
        input::write_private(&file, &body)?;
        let line = format!(
            "{path} {} {} {} {}",
            file.display(),
            object.kind,
            object.name,
            object.uid
        );
        deletes.push(shell_quote(&line));
    }
    let text = format!(
        "replace_deletes=({})\nnamed_secret_exists={}\n",
        deletes.join(" "),
        shell_quote(if decision.named_secret_exists {
            "1"
        } else {
            ""
        })
    );
    input::write_private(&dir.join("decisions.env"), &text)
}
