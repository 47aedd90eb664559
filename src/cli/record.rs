//! `tao-k8s record`: the job records of the driver script, from any shell. `open` prints only
//! the new id so scripts can capture it; `show --field` prints one value as plain text. Exit
//! codes: 0 ok, 1 refused (invalid transition, unknown id, missing field, a bad field value), 2
//! usage or I/O error.

use super::{USAGE, emit};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::Value;
use std::process::ExitCode;
use tao_k8s::cluster::objects;
use tao_k8s::record::{NewRecord, Owned, Record, RecordError, State, StorageTier, Store};

const REFUSED: u8 = 1;

/// Job records: open, mark, show, list.
#[derive(Args)]
#[command(after_help = "Examples:
  id=$(tao-k8s record open --platform kubernetes --image nvcr.io/nvidia/tao/tao-toolkit:5.5.0-pyt \\
         --network-arch dino --action train --storage-tier A --results-dir /results/run1)
  tao-k8s record mark \"$id\" SUBMITTED --source driver --backend-ref vision/tao-train-run1
  kubectl -n \"$(tao-k8s record show \"$id\" --field backend_ref | cut -d/ -f1)\" get jobs
  tao-k8s record list

Records live in $TAO_K8S_STATE_DIR, else $XDG_STATE_HOME/tao-k8s, else
$HOME/.local/state/tao-k8s, one JSON file per job under records/.
States: OPEN -> SUBMITTED -> RUNNING -> SUCCEEDED | FAILED | CANCELED; OPEN may go to RUNNING
directly, and OPEN and SUBMITTED to FAILED or CANCELED. The state is a word after the id, or
--state STATE as tao_job_record.py takes it. Marking a RUNNING record RUNNING again changes nothing.
Fields are bounded: image 1024 bytes, network arch and action 256, results dir 4096, source
256, reason 4096; none may hold a control character.
`list` names each record file it cannot read on stderr and lists the others.
Exit codes: 0 ok, 1 refused (invalid transition, unknown id, missing field, a field over its
limit or with a control character), 2 usage or I/O error.")]
pub struct RecordArgs {
    #[command(subcommand)]
    command: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Open a record before launch and print its new id (and nothing else) on stdout.
    Open {
        /// The platform the job runs on; only `kubernetes` (accepted for the command line of
        /// tao_job_record.py).
        #[arg(long, value_parser = ["kubernetes"], default_value = "kubernetes")]
        platform: String,
        /// The container image.
        #[arg(long)]
        image: String,
        /// The TAO network architecture (e.g. dino).
        #[arg(long)]
        network_arch: String,
        /// The TAO action (e.g. train).
        #[arg(long)]
        action: String,
        /// The storage tier of the plan.
        #[arg(long, value_parser = tier_parser(), ignore_case = true)]
        storage_tier: StorageTier,
        /// Where the results go.
        #[arg(long, value_name = "DIR")]
        results_dir: String,
        /// Who opens it.
        #[arg(long, default_value = "user")]
        source: String,
    },
    /// Move a record to a new state, appending to its history.
    Mark {
        /// The record id.
        id: String,
        /// The new state.
        #[arg(value_parser = state_parser(), ignore_case = true, required_unless_present = "state_flag")]
        state: Option<State>,
        /// The new state, as tao_job_record.py takes it (`--state CANCELED`).
        #[arg(long = "state", id = "state_flag", value_name = "STATE", value_parser = state_parser(),
              ignore_case = true, conflicts_with = "state")]
        state_flag: Option<State>,
        /// Who marks it (e.g. driver, user).
        #[arg(long, default_value = "user")]
        source: String,
        /// Why, in a few words.
        #[arg(long)]
        reason: Option<String>,
        /// The applied object, as <namespace>/<job-name>.
        #[arg(long, value_name = "NS/NAME")]
        backend_ref: Option<String>,
    },
    /// Add an object the API server created for the job to the record, by kind, namespace,
    /// name and uid: the driver changes and deletes nothing else.
    #[command(hide = true)]
    Own {
        /// The record id.
        id: String,
        #[arg(long)]
        kind: String,
        #[arg(long)]
        namespace: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        uid: String,
        /// The object is deleted: take it off the record instead.
        #[arg(long)]
        gone: bool,
    },
    /// Print a record as JSON (snake_case keys, as tao_job_record.py names them), or one
    /// top-level field's value as plain text.
    Show {
        /// The record id.
        id: String,
        /// Only this field (e.g. backend_ref, results_dir, state; the camelCase names of
        /// records written before, backendRef, are taken too); exit 1 if the record has none.
        #[arg(long)]
        field: Option<String>,
    },
    /// List the records, oldest first.
    List {
        #[arg(long, value_enum, default_value_t = ListFormat::Text)]
        format: ListFormat,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ListFormat {
    /// One line per record: id, state, backend_ref (or -), action, image.
    Text,
    /// A JSON array of the records, snake_case keys as `show` prints them.
    Json,
}

/// Any case, so `running` typed at a shell works too.
fn state_parser() -> impl TypedValueParser<Value = State> {
    PossibleValuesParser::new(State::ALL.map(State::as_str)).map(|s| {
        let found = State::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(&s));
        found.expect("clap checked it is listed")
    })
}

fn tier_parser() -> impl TypedValueParser<Value = StorageTier> {
    PossibleValuesParser::new(["A", "C"]).map(|s| match s.as_str() {
        "A" | "a" => StorageTier::A,
        _ => StorageTier::C,
    })
}

/// Run one `record` subcommand; the store is found from the environment.
pub fn run(args: RecordArgs) -> ExitCode {
    let store = match Store::from_env() {
        Ok(store) => store,
        Err(e) => return fail(&e),
    };
    match args.command {
        Action::Open {
            platform: _,
            image,
            network_arch,
            action,
            storage_tier,
            results_dir,
            source,
        } => {
            let fields = NewRecord {
                image,
                network_arch,
                action,
                storage_tier,
                results_dir,
                source,
            };
            match store.open(fields) {
                Ok(record) => emit(&format!("{}\n", record.id)),
                Err(e) => fail(&e),
            }
        }
        Action::Mark {
            id,
            state,
            state_flag,
            source,
            reason,
            backend_ref,
        } => match store.mark(
            &id,
            state.or(state_flag).expect("clap requires one"),
            &source,
            reason.as_deref(),
            backend_ref.as_deref(),
        ) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => fail(&e),
        },
        Action::Own {
            id,
            kind,
            namespace,
            name,
            uid,
            gone,
        } => {
            let object = Owned {
                kind,
                namespace,
                name,
                uid,
            };
            let done = if gone {
                store.disown(&id, &object.uid)
            } else {
                store.own(&id, object)
            };
            match done {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => fail(&e),
            }
        }
        Action::Show { id, field } => match store.show(&id) {
            Ok(record) => show(&record, field.as_deref()),
            Err(e) => fail(&e),
        },
        Action::List { format } => match store.list() {
            Ok((records, skipped)) => {
                for e in &skipped {
                    eprintln!("warning: skipped: {e}");
                }
                emit(&list(&records, format))
            }
            Err(e) => fail(&e),
        },
    }
}

fn show(record: &Record, field: Option<&str>) -> ExitCode {
    let Some(field) = field else {
        return emit(&(pretty(record) + "\n"));
    };
    // A `Value` map sorts its keys, so only the one field goes through it. A camelCase name
    // (`backendRef`, as records were written before) is the snake_case field (`backend_ref`).
    let mut snake = String::new();
    for c in field.chars() {
        if c.is_ascii_uppercase() {
            snake.push('_');
        }
        snake.push(c.to_ascii_lowercase());
    }
    match serde_json::to_value(record)
        .expect("records serialize")
        .get(&snake)
    {
        // Strings bare, so `$(... --field backend_ref)` is the value itself.
        Some(Value::String(s)) => emit(&format!("{s}\n")),
        Some(other) => emit(&(pretty(other) + "\n")),
        None => {
            eprintln!("error: record {} has no field {field}", record.id);
            ExitCode::from(REFUSED)
        }
    }
}

fn list(records: &[Record], format: ListFormat) -> String {
    match format {
        ListFormat::Json => pretty(records) + "\n",
        ListFormat::Text => {
            let rows: Vec<[&str; 5]> = records
                .iter()
                .map(|r| {
                    let backend = r.backend_ref.as_deref().unwrap_or("-");
                    [&r.id, r.state.as_str(), backend, &r.action, &r.image]
                })
                .collect();
            let width = |i: usize| rows.iter().map(|r| r[i].len()).max().unwrap_or(0);
            let widths = [width(0), width(1), width(2), width(3)];
            let mut out = String::new();
            for row in &rows {
                for (cell, w) in row.iter().zip(widths) {
                    out += &format!("{cell:w$}  ");
                }
                out += row[4];
                out.push('\n');
            }
            out
        }
    }
}

fn pretty(json: &(impl serde::Serialize + ?Sized)) -> String {
    serde_json::to_string_pretty(json).expect("records serialize")
}

fn fail(e: &RecordError) -> ExitCode {
    eprintln!("error: {e}");
    let refused = matches!(
        e,
        RecordError::NotFound { .. }
            | RecordError::InvalidTransition { .. }
            | RecordError::InvalidField { .. }
    );
    ExitCode::from(if refused { REFUSED } else { USAGE })
}

/// `job-status --record ID`: the status of record `id`'s Job, when `job` is that Job (same
/// uid); the record is closed when the Job ended. Exit 1, touching nothing, when the name is
/// now another object's.
pub(crate) fn job_status(
    id: &str,
    job: &objects::Job,
    pods: &[objects::Pod],
    state: bool,
) -> ExitCode {
    let store = match Store::from_env() {
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
            tao_k8s::diag::shown(&job.metadata.uid, 80)
        );
        return ExitCode::from(1);
    }
    if state {
        return emit(&format!("{}\n", job.state()));
    }
    let code = emit(&tao_k8s::cluster::status::text(job, pods));
    let mark = match job.state() {
        // From 1.29 the tier C upload is a sidecar, whose failure leaves the Job Complete.
        "succeeded" => Some(match tao_k8s::cluster::status::failed_sidecar(pods) {
            Some(why) => (State::Failed, Some(tao_k8s::diag::printable(&why))),
            None => (State::Succeeded, None),
        }),
        "failed" => Some((
            State::Failed,
            Some(
                tao_k8s::cluster::status::terminal_reason(job, pods)
                    .map_or_else(|| "the Job failed".into(), |r| tao_k8s::diag::printable(&r)),
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
