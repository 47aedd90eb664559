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
use tao_k8s::driver::credentials;
use tao_k8s::gate::{self, Cluster, Options, Workload, objects};

/// Decide the driver's gates from the manifest and what kubectl returned.
#[derive(Args)]
#[command(after_help = "Examples:
  kubectl get nodes -o json >cluster/nodes.json
  kubectl get pods -A --field-selector=status.phase!=Succeeded,status.phase!=Failed -o json >cluster/pods.json
  kubectl get --raw /version >cluster/version.json
  tao-k8s gate bundle/manifest.yaml --cluster cluster/

DIR holds nodes.json, and when gathered pods.json, version.json, pvcs.json (the claims of the
namespace), job.json (the Job of the manifest's name, if it exists) and objects.json (the
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
    ordered.sort_by_key(|o| o.kind != "Job");
    for (i, object) in ordered.into_iter().enumerate() {
        let (path, body) = delete_request(object, object.kind == "Job")?;
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

/// What `job.sh status` prints, from DIR/job.json and DIR/pods.json (the Job's pods).
#[derive(Args)]
pub struct StatusArgs {
    /// The directory of what kubectl returned.
    dir: PathBuf,
    /// Print only why the Job failed (nothing if it did not), for its record.
    #[arg(long)]
    reason: bool,
    /// The job record of the Job: the status is that of the record's Job only (by uid), and a
    /// Job that ended closes the record (SUCCEEDED, or FAILED with the reason).
    #[arg(long, value_name = "ID")]
    record: Option<String>,
    /// Print only the Job's state (active, suspended, succeeded, failed); mark nothing.
    #[arg(long)]
    state: bool,
}

pub fn status(args: StatusArgs) -> ExitCode {
    let read_all = || -> Result<(objects::Job, Vec<objects::Pod>), String> {
        let job = read(&args.dir, "job.json")?
            .ok_or_else(|| format!("{}: no job.json", args.dir.display()))?;
        let pods: Option<objects::List<objects::Pod>> = read(&args.dir, "pods.json")?;
        Ok((job, pods.map(|l| l.items).unwrap_or_default()))
    };
    match read_all() {
        Ok((job, pods)) if args.record.is_some() => {
            let id = args.record.as_deref().unwrap_or_default();
            record_status(id, &job, &pods, args.state)
        }
        Ok((job, _)) if args.state => emit(&format!("{}\n", job.state())),
        Ok((job, pods)) if args.reason => {
            let reason = gate::status::terminal_reason(&job, &pods);
            emit(&reason.map_or(String::new(), |r| gate::printable(&r) + "\n"))
        }
        Ok((job, pods)) => emit(&gate::status::text(&job, &pods)),
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(USAGE)
        }
    }
}

/// The status of record `id`'s Job, when `job` is that Job (same uid); the record is closed
/// when the Job ended. Exit 1, touching nothing, when the name is now another object's.
fn record_status(id: &str, job: &objects::Job, pods: &[objects::Pod], state: bool) -> ExitCode {
    use tao_k8s::record::State;
    let store = match tao_k8s::record::Store::from_env() {
        Ok(store) => store,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(USAGE);
        }
    };
    let record = match store.show(id) {
        Ok(record) => record,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    if let Some(uid) = record.backend_uid.as_deref()
        && uid != job.metadata.uid
    {
        eprintln!(
            "tao-k8s: the Job {}/{} is another object now (uid {}), not the one job record {id} \
             created (uid {uid}), which is gone: nothing was touched",
            job.metadata.namespace,
            job.metadata.name,
            gate::owners::shown(&job.metadata.uid)
        );
        return ExitCode::from(1);
    }
    if state {
        return emit(&format!("{}\n", job.state()));
    }
    let code = emit(&gate::status::text(job, pods));
    let mark = match job.state() {
        "succeeded" => Some((State::Succeeded, None)),
        "failed" => Some((
            State::Failed,
            Some(
                gate::status::terminal_reason(job, pods)
                    .map_or_else(|| "the Job failed".into(), |r| gate::printable(&r)),
            ),
        )),
        _ => None,
    };
    if let Some((state, reason)) = mark {
        let reason = reason.map(|r| r.chars().take(4000).collect::<String>());
        if !record.state.is_terminal() {
            let _ = store.mark(id, state, "driver", reason.as_deref(), None);
        }
    }
    code
}
