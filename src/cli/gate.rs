//! `tao-k8s gate MANIFEST --cluster DIR`: the driver's gates on what it gathered from the
//! cluster (see `tao_k8s::gate`). DIR holds `nodes.json` (`kubectl get nodes -o json`), and
//! when gathered `pods.json` (the non-terminated pods of all namespaces), `version.json`
//! (`kubectl get --raw /version`), `pvcs.json` (the namespace's claims) and `job.json` (the
//! Job of the manifest's name, when it exists). Exit codes: 0 every gate passes (warnings
//! included), 1 a gate refuses, 2 usage or a file that cannot be read.

use super::{USAGE, emit, input, read_source};
use clap::{Args, ValueEnum};
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tao_k8s::gate::{self, Cluster, Options, Workload, objects};

/// Decide the driver's gates from the manifest and what kubectl returned.
#[derive(Args)]
#[command(after_help = "Examples:
  kubectl get nodes -o json >cluster/nodes.json
  kubectl get pods -A --field-selector=status.phase!=Succeeded,status.phase!=Failed -o json >cluster/pods.json
  kubectl get --raw /version >cluster/version.json
  tao-k8s gate bundle/manifest.yaml --cluster cluster/

DIR holds nodes.json, and when gathered pods.json, version.json, pvcs.json (the claims of the
namespace) and job.json (the Job of the manifest's name, if it exists). Without pods.json
free capacity is not checked. One verdict per gate: job, version, claims, fit. Fit verdicts:
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
    /// An existing Job that ended passes: the driver deletes it and submits again.
    #[arg(long)]
    replace: bool,
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
    let nodes: objects::List<objects::Node> = read(dir, "nodes.json")?.ok_or_else(|| {
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
        pods: read::<objects::List<objects::Pod>>(dir, "pods.json")?.map(|l| l.items),
        version: read(dir, "version.json")?,
        claims: read::<objects::List<objects::Claim>>(dir, "pvcs.json")?.map(|l| l.items),
        job: read(dir, "job.json")?,
    };
    let owner = cluster
        .job
        .as_ref()
        .and_then(|_| owner(&format!("{}/{}", work.namespace, work.job)));
    let opts = Options {
        allow_pending: args.allow_pending,
        owner,
        replace: args.replace,
    };
    let verdicts = gate::gates(&work, &cluster, &opts);
    let refused = gate::refused(&verdicts);
    Ok((verdicts, refused))
}

/// `dir/name` as JSON, `None` when there is no such file: read as a stream (never held whole)
/// into the few fields the gates use.
fn read<T: DeserializeOwned>(dir: &Path, name: &str) -> Result<Option<T>, String> {
    let path = dir.join(name);
    let Some(stream) = input::stream_if_present(&path, input::Kind::Cluster)
        .map_err(|e| e.message().to_string())?
    else {
        return Ok(None);
    };
    let mut de = serde_json::Deserializer::from_reader(stream);
    let value = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| format!("{}: not what kubectl returns: {e}", path.display()))?;
    de.end()
        .map_err(|e| format!("{}: not what kubectl returns: {e}", path.display()))?;
    Ok(Some(value))
}

/// The job record bound to `backend` (`namespace/name`): the newest of them.
fn owner(backend: &str) -> Option<String> {
    let store = tao_k8s::record::Store::from_env().ok()?;
    let (records, _) = store.list().ok()?;
    records
        .into_iter()
        .rev()
        .find(|r| r.backend_ref.as_deref() == Some(backend))
        .map(|r| r.id)
}

/// What `job.sh status` prints, from DIR/job.json and DIR/pods.json (the Job's pods).
#[derive(Args)]
pub struct StatusArgs {
    /// The directory of what kubectl returned.
    dir: PathBuf,
    /// Print only why the Job failed (nothing if it did not), for its record.
    #[arg(long)]
    reason: bool,
}

pub fn status(args: StatusArgs) -> ExitCode {
    let read_all = || -> Result<(objects::Job, Vec<objects::Pod>), String> {
        let job = read(&args.dir, "job.json")?
            .ok_or_else(|| format!("{}: no job.json", args.dir.display()))?;
        let pods: Option<objects::List<objects::Pod>> = read(&args.dir, "pods.json")?;
        Ok((job, pods.map(|l| l.items).unwrap_or_default()))
    };
    match read_all() {
        Ok((job, pods)) if args.reason => {
            emit(&gate::status::terminal_reason(&job, &pods).map_or(String::new(), |r| r + "\n"))
        }
        Ok((job, pods)) => emit(&gate::status::text(&job, &pods)),
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(USAGE)
        }
    }
}
