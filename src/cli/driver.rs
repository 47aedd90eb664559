//! `tao-k8s driver ...` and `tao-k8s job-status`: the steps of `job.sh` that decide or build
//! something, hidden from the command list (the driver script is their one caller). Each
//! reads what kubectl returned or what the bundle holds and prints what the next kubectl call
//! needs. Exit codes: 0 done, 1 refused (a bad record, an unset required key), 2 usage or
//! I/O error.

use super::{REFUSED, USAGE, emit, input, read_source};
use clap::{Args, Subcommand};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tao_k8s::cluster::objects::{Job, List, Pod};
use tao_k8s::cluster::status::{self, terminal_reason};
use tao_k8s::diag::printable;
use tao_k8s::driver::{credentials, logs, objects};
use tao_k8s::kube::is_workload;
use tao_k8s::record::{Owned, Store};

/// The steps of the driver script that decide or build something.
#[derive(Args)]
pub struct DriverArgs {
    #[command(subcommand)]
    step: Step,
}

#[derive(Subcommand)]
enum Step {
    /// Write the objects a submit creates, stamped with the job record, one JSON file each
    /// (0600) in creation order; print `FILE KIND NAME` per object. The Secrets' values are
    /// read from the environment.
    Objects {
        /// The manifest (YAML) of the objects.
        manifest: PathBuf,
        /// The job record that creates them (none for the probe alone).
        #[arg(long)]
        record: Option<String>,
        /// The Job whose bundle they belong to (default: the manifest's Job; the NCCL
        /// probe's objects belong to the job's bundle).
        #[arg(long, value_name = "JOB")]
        bundle: Option<String>,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The credentials Secret to create.
        #[arg(long, value_name = "NAME")]
        credentials_secret: Option<String>,
        #[arg(long = "s3-required", value_name = "KEY")]
        s3_required: Vec<String>,
        #[arg(long = "s3-optional", value_name = "KEY")]
        s3_optional: Vec<String>,
        /// Extra keys, already allowed by the submitter (`tao-k8s gate --pass-env`).
        #[arg(long = "extra", value_name = "KEY")]
        extra: Vec<String>,
        /// The nvcr.io pull Secret to create from NGC_KEY, when it is set.
        #[arg(long, value_name = "NAME")]
        ngc_pull_secret: Option<String>,
    },
    /// Write the DELETE bodies (preconditioned on their uids) of the objects job record ID
    /// created, or of each `--object KIND/NAME/UID` in NAMESPACE, into DIR, Jobs first (their
    /// pods go before them); print `PATH BODY KIND NAME UID` per object.
    Deletes {
        #[arg(long, value_name = "ID", required_unless_present = "object")]
        record: Option<String>,
        #[arg(long, value_name = "KIND/NAME/UID", requires = "namespace")]
        object: Vec<String>,
        #[arg(long)]
        namespace: Option<String>,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// The merge patch that attaches the object of uid UID to the Job (or with `--kind JobSet`
    /// the JobSet) JOB of uid JOB_UID.
    OwnerPatch {
        uid: String,
        job: String,
        job_uid: String,
        #[arg(long, value_parser = ["Job", "JobSet"], default_value = "Job")]
        kind: String,
    },
    /// Say on stderr which cluster credentials kubectl uses: the kubeconfig context, or the
    /// pod's service account (whose namespace file is read bounded and shown escaped).
    Mode {
        #[arg(long)]
        namespace: String,
        #[arg(long, conflicts_with = "service_account")]
        context: Option<String>,
        /// The service account's directory, in a pod without a kubeconfig.
        #[arg(long, value_name = "DIR")]
        service_account: Option<PathBuf>,
    },
    /// Read an object as kubectl returned it on stdin; print what the gates may see of it (a
    /// Secret's values removed).
    Observe,
    /// Name the fields of MANIFEST that the API server's answer (`kubectl apply
    /// --dry-run=server -o json`) dropped; exit 1 if any.
    KeptFields { manifest: PathBuf, answer: PathBuf },
    /// Say where the pods of MANIFEST keep the logs of job record ID beyond their own life:
    /// two lines, `mounted` and the directory with its volume (a reader Pod reads it), `s3` and
    /// the record's S3 prefix (read with the local aws CLI), or `none` and why.
    KeptLogs {
        manifest: PathBuf,
        #[arg(long, value_name = "ID")]
        record: String,
    },
    /// Write the reader Pod of the logs job record ID kept on a volume of MANIFEST's pods
    /// (0600, stamped with the record) into DIR; print `FILE Pod NAME`.
    LogReader {
        manifest: PathBuf,
        #[arg(long, value_name = "ID")]
        record: String,
        /// Only the log of this completion index.
        #[arg(long, value_name = "I", value_parser = clap::value_parser!(u32).range(0..=9999))]
        index: Option<u32>,
        /// Only the last N lines of each log (-1: all of it).
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        tail: Option<i64>,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// From LISTING (what `aws s3 ls` printed of the S3 prefix where MANIFEST's pods keep the
    /// logs of job record ID), the rank logs to read in index order, `NAME URI` each; exit 1
    /// if there is none (of index I).
    S3Logs {
        manifest: PathBuf,
        #[arg(long, value_name = "ID")]
        record: String,
        #[arg(long, value_name = "FILE")]
        listing: PathBuf,
        #[arg(long, value_name = "I", value_parser = clap::value_parser!(u32).range(0..=9999))]
        index: Option<u32>,
    },
}

pub fn run(args: DriverArgs) -> ExitCode {
    let result = match args.step {
        Step::Objects {
            manifest,
            record,
            bundle,
            out,
            credentials_secret,
            s3_required,
            s3_optional,
            extra,
            ngc_pull_secret,
        } => {
            let keys = credentials::Keys {
                s3_required,
                s3_optional,
                extra,
            };
            let secrets = Secrets {
                credentials: credentials_secret,
                keys,
                ngc_pull: ngc_pull_secret,
            };
            write_objects(&manifest, record.as_deref(), bundle, &out, &secrets)
        }
        Step::Deletes {
            record,
            object,
            namespace,
            out,
        } => deletes(record.as_deref(), &object, namespace.as_deref(), &out),
        Step::OwnerPatch {
            uid,
            job,
            job_uid,
            kind,
        } => Ok(objects::owner_patch(&uid, &kind, &job, &job_uid) + "\n"),
        Step::Mode {
            namespace,
            context,
            service_account,
        } => {
            eprint!(
                "{}",
                mode(&namespace, context.as_deref(), service_account.as_deref())
            );
            Ok(String::new())
        }
        Step::Observe => observe(),
        Step::KeptFields { manifest, answer } => return kept_fields(&manifest, &answer),
        Step::KeptLogs { manifest, record } => kept_logs(&manifest, &record),
        Step::LogReader {
            manifest,
            record,
            index,
            tail,
            out,
        } => {
            let reading = logs::Reading {
                index,
                tail: tail.and_then(|t| u64::try_from(t).ok()),
            };
            log_reader(&manifest, &record, reading, &out)
        }
        Step::S3Logs {
            manifest,
            record,
            listing,
            index,
        } => s3_logs(&manifest, &record, &listing, index),
    };
    match result {
        Ok(text) => emit(&text),
        Err(Refusal(code, message)) => {
            eprintln!("tao-k8s: {message}");
            ExitCode::from(code)
        }
    }
}

/// Why a step stopped, with its exit code.
struct Refusal(u8, String);

fn io(message: String) -> Refusal {
    Refusal(USAGE, message)
}

fn refused(message: String) -> Refusal {
    Refusal(REFUSED, message)
}

struct Secrets {
    credentials: Option<String>,
    keys: credentials::Keys,
    ngc_pull: Option<String>,
}

/// The objects of the manifest (YAML), and its name for messages.
fn manifest_objects(manifest: &Path) -> Result<(Vec<Value>, String), Refusal> {
    let source = read_source(manifest).map_err(|e| io(e.message().to_string()))?;
    let stream = tao_k8s::yaml::parse(&source, tao_k8s::yaml::Limits::default())
        .map_err(|_| io(format!("{} is not YAML", source.name())))?;
    let list = stream.documents.iter().map(|d| d.to_json()).collect();
    Ok((list, source.name().to_string()))
}

/// The workload (Job or JobSet) of the manifest's objects.
fn workload<'a>(list: &'a [Value], name: &str) -> Result<&'a Value, Refusal> {
    list.iter()
        .find(|o| o["kind"].as_str().is_some_and(is_workload))
        .filter(|o| {
            o.pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_some()
        })
        .ok_or_else(|| io(format!("{name} holds no Job nor JobSet")))
}

/// The manifest's objects and the Secrets, stamped, in creation order, one 0600 file each.
fn write_objects(
    manifest: &Path,
    record: Option<&str>,
    bundle: Option<String>,
    out: &Path,
    secrets: &Secrets,
) -> Result<String, Refusal> {
    let (mut list, source) = manifest_objects(manifest)?;
    let manifest_job = workload(&list, &source)?["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let job = bundle.unwrap_or(manifest_job);
    let namespace = list
        .iter()
        .find_map(|o| o.pointer("/metadata/namespace")?.as_str())
        .unwrap_or("default")
        .to_string();
    let env = |k: &str| std::env::var_os(k);
    if let Some(name) = &secrets.credentials {
        let secret = credentials::credentials_secret(name, &namespace, &secrets.keys, env)
            .map_err(refused)?;
        list.push(secret);
    }
    if let Some(name) = &secrets.ngc_pull {
        match credentials::ngc_pull_secret(name, &namespace, env).map_err(refused)? {
            Some(secret) => list.push(secret),
            None => eprintln!(
                "tao-k8s: NGC_KEY is not set: no nvcr.io pull Secret is created, so the image must be public"
            ),
        }
    }
    list.sort_by_key(objects::creation_rank);
    input::create_dir(out).map_err(io)?;
    let mut lines = String::new();
    for mut object in list {
        objects::stamp(&mut object, record, &namespace, &job);
        let kind = object["kind"].as_str().unwrap_or_default().to_string();
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !tao_k8s::kube::names::is_dns1123_subdomain(&name) || kind.is_empty() {
            return Err(io(format!("{source}: an object without a valid name")));
        }
        let path = out.join(format!("{}-{name}.json", kind.to_lowercase()));
        input::write_private(&path, &object.to_string()).map_err(io)?;
        lines += &format!("{} {kind} {name}\n", path.display());
    }
    Ok(lines)
}

/// `kept-logs`: where the manifest's pods keep the record's logs, as two lines.
fn kept_logs(manifest: &Path, record: &str) -> Result<String, Refusal> {
    let (list, source) = manifest_objects(manifest)?;
    let kept = logs::kept(workload(&list, &source)?, record);
    Ok(match &kept {
        logs::Kept::Not(why) => format!("none\n{why}\n"),
        logs::Kept::Mounted { .. } => format!("mounted\n{}\n", kept.place()),
        logs::Kept::S3 { uri } => format!("s3\n{uri}\n"),
    })
}

/// `log-reader`: the reader Pod of the record's logs, stamped, in a 0600 file.
fn log_reader(
    manifest: &Path,
    record: &str,
    reading: logs::Reading,
    out: &Path,
) -> Result<String, Refusal> {
    let (list, source) = manifest_objects(manifest)?;
    let workload = workload(&list, &source)?;
    let job = workload["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = workload
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let kept = logs::kept(workload, record);
    if let logs::Kept::Not(why) = &kept {
        return Err(refused(format!(
            "{source} keeps no logs of job record {record}: {why}"
        )));
    }
    let mut pod = logs::reader_pod(workload, &kept, job, namespace, record, reading)
        .map_err(|e| refused(format!("{source}: {e}")))?;
    objects::stamp(&mut pod, Some(record), namespace, job);
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    input::create_dir(out).map_err(io)?;
    let path = out.join(format!("pod-{name}.json"));
    input::write_private(&path, &pod.to_string()).map_err(io)?;
    Ok(format!("{} Pod {name}\n", path.display()))
}

/// `s3-logs`: the rank logs of the listing, under the record's S3 prefix.
fn s3_logs(
    manifest: &Path,
    record: &str,
    listing: &Path,
    index: Option<u32>,
) -> Result<String, Refusal> {
    let (list, source) = manifest_objects(manifest)?;
    let logs::Kept::S3 { uri } = logs::kept(workload(&list, &source)?, record) else {
        return Err(refused(format!(
            "{source} keeps no logs of job record {record} in S3"
        )));
    };
    let listing = read_source(listing).map_err(|e| io(e.message().to_string()))?;
    let found = logs::s3_logs(listing.text(), &uri, index);
    if found.is_empty() {
        let what = index.map_or("no log".to_string(), |i| format!("no log of rank {i}"));
        return Err(refused(format!("{what} was kept under {uri}")));
    }
    Ok(found
        .iter()
        .map(|(name, uri)| format!("{name} {uri}\n"))
        .collect())
}

/// The deletes of what a job record created, or of the objects named, Jobs first.
fn deletes(
    record: Option<&str>,
    named: &[String],
    namespace: Option<&str>,
    out: &Path,
) -> Result<String, Refusal> {
    let mut owned: Vec<Owned> = Vec::new();
    if let Some(id) = record {
        let store = Store::from_env().map_err(|e| io(e.to_string()))?;
        let record = store.show(id).map_err(|e| refused(e.to_string()))?;
        if record.objects.is_empty() {
            return Err(refused(format!(
                "job record {id} lists no object it created (a record of an older tao-k8s, or \
                 of a submit that made nothing): nothing is deleted; check with kubectl that \
                 an object is yours before you delete it"
            )));
        }
        owned = record.objects;
    }
    for spec in named {
        let mut parts = spec.splitn(3, '/');
        let (Some(kind), Some(name), Some(uid)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(io(format!("--object {spec}: expected KIND/NAME/UID")));
        };
        owned.push(Owned {
            kind: kind.into(),
            namespace: namespace.unwrap_or_default().into(),
            name: name.into(),
            uid: uid.into(),
        });
    }
    owned.sort_by_key(|o| !is_workload(&o.kind));
    input::create_dir(out).map_err(io)?;
    let mut lines = String::new();
    for (i, object) in owned.iter().enumerate() {
        let (path, body) =
            objects::delete_request(object, is_workload(&object.kind)).map_err(refused)?;
        let file = out.join(format!("delete-{i}.json"));
        input::write_private(&file, &body).map_err(io)?;
        lines += &format!(
            "{path} {} {} {} {}\n",
            file.display(),
            object.kind,
            object.name,
            object.uid
        );
    }
    Ok(lines)
}

/// The lines `job.sh preflight` says about the credentials kubectl uses.
fn mode(namespace: &str, context: Option<&str>, service_account: Option<&Path>) -> String {
    use tao_k8s::diag::shown;
    let Some(dir) = service_account else {
        let context = shown(context.unwrap_or_default(), 80);
        return format!("tao-k8s: kubeconfig context {context}, namespace {namespace}\n");
    };
    // A namespace name is at most 63 bytes: read a little more, never the whole of what a
    // link may point at.
    let own = read_bounded(&dir.join("namespace"), 256).unwrap_or_default();
    let own = own.trim_end_matches(['\n']);
    let shown_own = if own.is_empty() {
        "unknown".into()
    } else {
        shown(own, 80)
    };
    let mut out = format!(
        "tao-k8s: in-cluster: the pod's service account (namespace {shown_own}), namespace {namespace}\n"
    );
    if !own.is_empty() && own != namespace {
        out += &format!(
            "tao-k8s: the manifest's namespace {namespace} is not the service account's \
             {shown_own}: the account needs rights there\n"
        );
    }
    out
}

/// At most `limit` bytes of the regular file `path` as text, whatever bytes it holds (they are
/// shown escaped); `None` if it cannot be read.
fn read_bounded(path: &Path, limit: u64) -> Option<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    input::open(path)
        .ok()?
        .take(limit)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

fn observe() -> Result<String, Refusal> {
    let source = read_source(Path::new("-")).map_err(|e| io(e.message().to_string()))?;
    if source.text().trim().is_empty() {
        return Ok(String::new());
    }
    let object: Value = serde_json::from_str(source.text())
        .map_err(|e| io(format!("stdin is not the JSON of one object: {e}")))?;
    Ok(objects::observed(object).to_string() + "\n")
}

/// `kept-fields MANIFEST ANSWER`.
fn kept_fields(manifest: &Path, answer: &Path) -> ExitCode {
    let (sent, answer) = match (read_source(manifest), read_source(answer)) {
        (Ok(m), Ok(a)) => (m, a),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {}", e.message());
            return ExitCode::from(USAGE);
        }
    };
    let Ok(stream) = tao_k8s::yaml::parse(&sent, tao_k8s::yaml::Limits::default()) else {
        eprintln!("error: {} is not YAML", sent.name());
        return ExitCode::from(USAGE);
    };
    let Ok(answer) = serde_json::from_str::<Value>(answer.text()) else {
        eprintln!("error: {} is not JSON", answer.name());
        return ExitCode::from(USAGE);
    };
    let objects: Vec<Value> = stream.documents.iter().map(|d| d.to_json()).collect();
    let dropped = tao_k8s::driver::kept::dropped_fields(&objects, &answer);
    for field in &dropped {
        eprintln!("tao-k8s: the API server dropped {field}");
    }
    ExitCode::from(if dropped.is_empty() { 0 } else { REFUSED })
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

/// `tao-k8s job-status DIR`; with `--record`, see [`super::record::job_status`].
pub fn status(args: StatusArgs) -> ExitCode {
    let read_all = || -> Result<(Job, Vec<Pod>), String> {
        let job = input::cluster_json(&args.dir, "job.json")?
            .ok_or_else(|| format!("{}: no job.json", args.dir.display()))?;
        let pods: Option<List<Pod>> = input::cluster_json(&args.dir, "pods.json")?;
        Ok((job, pods.map(|l| l.items).unwrap_or_default()))
    };
    match read_all() {
        Ok((job, pods)) if args.record.is_some() => {
            let id = args.record.as_deref().unwrap_or_default();
            super::record::job_status(id, &job, &pods, args.state)
        }
        Ok((job, _)) if args.state => emit(&format!("{}\n", job.state())),
        Ok((job, pods)) if args.reason => {
            let reason = terminal_reason(&job, &pods);
            emit(&reason.map_or(String::new(), |r| printable(&r) + "\n"))
        }
        Ok((job, pods)) => emit(&status::text(&job, &pods)),
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(USAGE)
        }
    }
}
