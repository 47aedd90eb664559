//! Job records: what was launched and where it runs, so that status, logs and cancel work from
//! another shell later. This is the one module of the library that touches the filesystem: one
//! JSON file per job, `<state dir>/records/<id>.json`, the directories created 0700.
//!
//! Every change takes an exclusive lock on `records/.lock` (std `File::lock`, released when the
//! file is closed, also when the process dies) and reads, modifies and writes the record inside
//! it, so concurrent marks are serialised and none is lost. A write goes to a temporary file in
//! the same directory, is synced, then renamed over the record: a reader never sees half a
//! record and a writer killed mid-write leaves the old one intact (its stray `.tmp*` file is
//! ignored). Readers take no lock, since a rename is atomic.
//!
//! States: OPEN -> SUBMITTED -> RUNNING -> SUCCEEDED | FAILED | CANCELED; OPEN may go to RUNNING
//! directly (the seed's record tool marks RUNNING right after opening), and OPEN or SUBMITTED
//! may end in FAILED or CANCELED directly. Marking RUNNING on a RUNNING record is accepted and
//! changes nothing (status polls repeat it; no history entry, backend_ref untouched). Any other
//! same-state mark, any step back, and any change of a terminal record is refused.
//!
//! Every text field is bounded (`FIELD_LIMITS`) and holds no control character, checked when
//! it is written and again when a record is read: a record stays far below the 1 MiB a read
//! accepts, and what `show` and `list` print cannot steer a terminal or break a shell line.

use crate::kube::names;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum State {
    Open,
    Submitted,
    Running,
    Succeeded,
    Failed,
    Canceled,
}

impl State {
    pub const ALL: [State; 6] = [
        State::Open,
        State::Submitted,
        State::Running,
        State::Succeeded,
        State::Failed,
        State::Canceled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            State::Open => "OPEN",
            State::Submitted => "SUBMITTED",
            State::Running => "RUNNING",
            State::Succeeded => "SUCCEEDED",
            State::Failed => "FAILED",
            State::Canceled => "CANCELED",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, State::Succeeded | State::Failed | State::Canceled)
    }

    /// Whether a mark `self -> to` is accepted; `Running -> Running` is, as a no-op.
    pub fn allows(self, to: State) -> bool {
        use State::*;
        matches!(
            (self, to),
            (Open, Submitted | Running | Failed | Canceled)
                | (Submitted, Running | Failed | Canceled)
                | (Running, Running | Succeeded | Failed | Canceled)
        )
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the job's inputs and results live (the staging tiers of the plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StorageTier {
    A,
    C,
}

/// One accepted mark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub state: State,
    /// RFC 3339, UTC, whole seconds.
    pub at: String,
    /// Who marked it: `driver`, `user`...
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A job record as stored: snake_case keys, the names the seed's record tool gives them
/// (`backend_ref`, `results_dir`). Records written before with camelCase keys (`backendRef`)
/// still load, and are written back snake_case at their next change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    pub platform: String,
    pub image: String,
    #[serde(alias = "networkArch")]
    pub network_arch: String,
    pub action: String,
    #[serde(alias = "storageTier")]
    pub storage_tier: StorageTier,
    #[serde(alias = "resultsDir")]
    pub results_dir: String,
    /// `<namespace>/<job-name>`, bound once the object is applied.
    #[serde(default, alias = "backendRef", skip_serializing_if = "Option::is_none")]
    pub backend_ref: Option<String>,
    /// The uid the API server gave the Job of `backend_ref`: the record acts on that object
    /// only, never on another that took its name.
    #[serde(default, alias = "backendUid", skip_serializing_if = "Option::is_none")]
    pub backend_uid: Option<String>,
    /// Every object the driver created for this job, in creation order, by uid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<Owned>,
    pub state: State,
    pub history: Vec<Event>,
}

/// An object the driver created: the only kind of object it ever changes or deletes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owned {
    /// One of [`OWNED_KINDS`].
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// The kinds the driver creates: a Pod is the reader of a job's kept logs (`job.sh logs`).
pub const OWNED_KINDS: [&str; 6] = ["Job", "JobSet", "Service", "ConfigMap", "Secret", "Pod"];

/// The kind a record that ended may still take: `job.sh logs` reads the kept logs of an ended
/// job with a reader Pod, listed like any object the driver creates so that it is deleted by
/// its uid (and by `job.sh cancel` if the driver could not).
pub const AFTER_END_KIND: &str = "Pod";

impl Owned {
    /// Refuse an object the driver could not have created, or whose names it could not pass to
    /// kubectl as they are.
    pub fn check(&self) -> Result<(), RecordError> {
        let problem = if !OWNED_KINDS.contains(&self.kind.as_str()) {
            format!("kind {:?} is not one the driver creates", self.kind)
        } else if !names::is_dns1123_label(&self.namespace) {
            format!("namespace {:?} is not a DNS-1123 label", self.namespace)
        } else if !names::is_dns1123_subdomain(&self.name) {
            format!("name {:?} is not a DNS-1123 subdomain", self.name)
        } else if !is_uid(&self.uid) {
            format!("uid {:?} is not a uid", self.uid)
        } else {
            return Ok(());
        };
        Err(RecordError::InvalidField {
            field: "objects",
            problem,
        })
    }
}

/// A uid as the API server writes them (a UUID), or close enough to pass to kubectl as data.
pub fn is_uid(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// The fields of a record to open; the first history entry is OPEN by `source`.
#[derive(Debug, Clone)]
pub struct NewRecord {
    pub image: String,
    pub network_arch: String,
    pub action: String,
    pub storage_tier: StorageTier,
    pub results_dir: String,
    pub source: String,
}

/// Why a record operation failed; every message names the path, id or states concerned.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("no record {id} (no file {path})")]
    NotFound { id: String, path: PathBuf },
    #[error("record {id} is {from}: it cannot be marked {to}")]
    InvalidTransition { id: String, from: State, to: State },
    #[error("{path} is not a valid record: {message}")]
    Corrupt { path: PathBuf, message: String },
    #[error("{id:?} is not a record id (like tao-20261202-083107-7f3a)")]
    InvalidId { id: String },
    #[error("{0:?} is not a backend ref (<namespace>/<job-name>)")]
    InvalidBackendRef(String),
    #[error("no state directory: set TAO_K8S_STATE_DIR, XDG_STATE_HOME or HOME")]
    NoStateDir,
    #[error("record field {field} {problem}")]
    InvalidField {
        field: &'static str,
        problem: String,
    },
}

/// The most bytes each text field may hold, by its name in the record. With at most four
/// history entries (no state repeats), a record stays under 50 KB even with every field full
/// and every byte escaped.
pub const FIELD_LIMITS: [(&str, usize); 6] = [
    ("image", 1024),
    ("network_arch", 256),
    ("action", 256),
    ("results_dir", 4096),
    ("source", 256),
    ("reason", 4096),
];

/// Refuse a field value over its limit or with a control character; the message shows the
/// value escaped and cut short.
/// The limit of a record field, by its name in the record (0 for a name not in the table).
pub fn field_limit(field: &str) -> usize {
    FIELD_LIMITS
        .iter()
        .find(|(name, _)| *name == field)
        .map_or(0, |(_, limit)| *limit)
}

fn check_field(field: &'static str, value: &str) -> Result<(), RecordError> {
    let limit = field_limit(field);
    let problem = if value.len() > limit {
        format!(
            "is {} bytes long, over its limit of {limit} bytes",
            value.len()
        )
    } else if let Some((at, c)) = value.char_indices().find(|(_, c)| c.is_control()) {
        let shown: String = value
            .chars()
            .take(60)
            .flat_map(char::escape_debug)
            .collect();
        let more = if value.chars().count() > 60 {
            "..."
        } else {
            ""
        };
        format!(
            "holds the control character U+{:04X} at byte {at}: \"{shown}{more}\"",
            u32::from(c)
        )
    } else {
        return Ok(());
    };
    Err(RecordError::InvalidField { field, problem })
}

/// Every text field of `record` within bounds (see `check_field`).
fn check_record(record: &Record) -> Result<(), RecordError> {
    check_field("image", &record.image)?;
    check_field("network_arch", &record.network_arch)?;
    check_field("action", &record.action)?;
    check_field("results_dir", &record.results_dir)?;
    if record.platform != PLATFORM {
        return Err(RecordError::InvalidField {
            field: "platform",
            problem: format!("is {:?}, not {PLATFORM:?}", record.platform),
        });
    }
    if let Some(r) = record.backend_ref.as_deref().filter(|r| !is_backend_ref(r)) {
        return Err(RecordError::InvalidBackendRef(r.to_string()));
    }
    if let Some(uid) = record.backend_uid.as_deref().filter(|u| !is_uid(u)) {
        return Err(RecordError::InvalidField {
            field: "backend_uid",
            problem: format!("{uid:?} is not a uid"),
        });
    }
    if record.objects.len() > MAX_OWNED {
        return Err(RecordError::InvalidField {
            field: "objects",
            problem: format!("lists {} objects, over {MAX_OWNED}", record.objects.len()),
        });
    }
    for object in &record.objects {
        object.check()?;
    }
    for event in &record.history {
        check_field("source", &event.source)?;
        if let Some(reason) = &event.reason {
            check_field("reason", reason)?;
        }
    }
    Ok(())
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> RecordError + '_ {
    move |source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A directory of job records.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// A store in `dir` (the state directory; records go in `dir/records`).
    pub fn new(dir: PathBuf) -> Store {
        Store { dir }
    }

    /// `$TAO_K8S_STATE_DIR`, else `$XDG_STATE_HOME/tao-k8s`, else `$HOME/.local/state/tao-k8s`.
    pub fn from_env() -> Result<Store, RecordError> {
        state_dir(|k| std::env::var_os(k))
            .map(Store::new)
            .ok_or(RecordError::NoStateDir)
    }

    fn records(&self) -> PathBuf {
        self.dir.join("records")
    }

    /// The file of `id`, refusing ids that are not names, so no path can leave the directory.
    fn path(&self, id: &str) -> Result<PathBuf, RecordError> {
        if !names::is_dns1035_label(id) {
            return Err(RecordError::InvalidId { id: id.to_string() });
        }
        Ok(self.records().join(format!("{id}.json")))
    }

    /// Take the store's exclusive lock, creating the directory; held until the file drops.
    fn lock(&self) -> Result<File, RecordError> {
        let records = self.records();
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&records).map_err(io_err(&records))?;
        let path = records.join(".lock");
        let file = File::options().append(true).create(true).open(&path);
        let file = file.map_err(io_err(&path))?;
        file.lock().map_err(io_err(&path))?;
        Ok(file)
    }

    /// Open a new record, OPEN, under a fresh id.
    pub fn open(&self, fields: NewRecord) -> Result<Record, RecordError> {
        check_field("image", &fields.image)?;
        check_field("network_arch", &fields.network_arch)?;
        check_field("action", &fields.action)?;
        check_field("results_dir", &fields.results_dir)?;
        check_field("source", &fields.source)?;
        let _lock = self.lock()?;
        // A taken id (same second, same 4 hex) is retried with new randomness. The file is
        // created by `persist_noclobber`, an atomic create-new of the whole file: `create_new`
        // then write would show lockless readers an empty record in between.
        let now = SystemTime::now();
        let mut record = Record {
            id: new_id(now),
            platform: PLATFORM.to_string(),
            image: fields.image,
            network_arch: fields.network_arch,
            action: fields.action,
            storage_tier: fields.storage_tier,
            results_dir: fields.results_dir,
            backend_ref: None,
            backend_uid: None,
            objects: Vec::new(),
            state: State::Open,
            history: vec![Event {
                state: State::Open,
                at: rfc3339(now),
                source: fields.source,
                reason: None,
            }],
        };
        for _ in 0..64 {
            match self.write(&record, false) {
                Err(RecordError::Io { source, .. })
                    if source.kind() == io::ErrorKind::AlreadyExists =>
                {
                    record.id = new_id(now);
                }
                written => return written.map(|()| record),
            }
        }
        let failed = io::Error::other("no free record id after 64 tries");
        Err(io_err(&self.records())(failed))
    }

    /// Move record `id` to `state`, appending to its history; see the module doc for the rules.
    pub fn mark(
        &self,
        id: &str,
        state: State,
        source: &str,
        reason: Option<&str>,
        backend_ref: Option<&str>,
    ) -> Result<Record, RecordError> {
        let path = self.path(id)?;
        if let Some(r) = backend_ref.filter(|r| !is_backend_ref(r)) {
            return Err(RecordError::InvalidBackendRef(r.to_string()));
        }
        check_field("source", source)?;
        if let Some(reason) = reason {
            check_field("reason", reason)?;
        }
        let _lock = self.lock()?;
        let mut record = read(id, &path)?;
        if !record.state.allows(state) {
            return Err(RecordError::InvalidTransition {
                id: id.to_string(),
                from: record.state,
                to: state,
            });
        }
        if record.state == state {
            return Ok(record);
        }
        record.state = state;
        if let Some(r) = backend_ref {
            record.backend_ref = Some(r.to_string());
            // The uid of the Job this record created under that name, if it created one.
            record.backend_uid = record
                .objects
                .iter()
                .find(|o| {
                    crate::kube::is_workload(&o.kind) && r == format!("{}/{}", o.namespace, o.name)
                })
                .map(|o| o.uid.clone());
        }
        record.history.push(Event {
            state,
            at: rfc3339(SystemTime::now()),
            source: source.to_string(),
            reason: reason.map(str::to_string),
        });
        self.write(&record, true)?;
        Ok(record)
    }

    /// Add an object the driver created to record `id` (before anything else can fail, so
    /// that only objects it names are ever deleted). A record that ended takes none but a
    /// reader Pod ([`AFTER_END_KIND`]).
    pub fn own(&self, id: &str, object: Owned) -> Result<Record, RecordError> {
        let path = self.path(id)?;
        object.check()?;
        let _lock = self.lock()?;
        let mut record = read(id, &path)?;
        if record.state.is_terminal() && object.kind != AFTER_END_KIND {
            return Err(RecordError::InvalidField {
                field: "objects",
                problem: format!("cannot grow: record {id} is {}", record.state),
            });
        }
        if !record.objects.iter().any(|o| o.uid == object.uid) {
            if record.objects.len() >= MAX_OWNED {
                return Err(RecordError::InvalidField {
                    field: "objects",
                    problem: format!("holds {MAX_OWNED} objects already"),
                });
            }
            record.objects.push(object);
            self.write(&record, true)?;
        }
        Ok(record)
    }

    /// Take the object of `uid` off record `id`'s objects: the driver deleted it (the NCCL
    /// probe's Job, once it ran), so no later delete names it.
    pub fn disown(&self, id: &str, uid: &str) -> Result<Record, RecordError> {
        let path = self.path(id)?;
        let _lock = self.lock()?;
        let mut record = read(id, &path)?;
        let before = record.objects.len();
        record.objects.retain(|o| o.uid != uid);
        if record.objects.len() != before {
            self.write(&record, true)?;
        }
        Ok(record)
    }

    /// The record `id`.
    pub fn show(&self, id: &str) -> Result<Record, RecordError> {
        read(id, &self.path(id)?)
    }

    /// Every record, sorted by id (so by opening time, to the second), and the errors of the
    /// record files that could not be read (each names its file): one bad record does not
    /// hide the others. A record removed while the directory is read is left out.
    pub fn list(&self) -> Result<(Vec<Record>, Vec<RecordError>), RecordError> {
        let dir = self.records();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Default::default()),
            Err(e) => return Err(io_err(&dir)(e)),
        };
        let (mut records, mut skipped) = (Vec::new(), Vec::new());
        for entry in entries {
            let path = entry.map_err(io_err(&dir))?.path();
            // Skips `.lock` and the `.tmp*` files of writers that died mid-write.
            let Some(id) = path
                .file_name()
                .and_then(|n| n.to_str()?.strip_suffix(".json"))
            else {
                continue;
            };
            if names::is_dns1035_label(id) {
                match read(id, &path) {
                    Ok(record) => records.push(record),
                    Err(RecordError::NotFound { .. }) => {}
                    Err(e) => skipped.push(e),
                }
            }
        }
        records.sort_by(|a, b| a.id.cmp(&b.id));
        Ok((records, skipped))
    }

    /// Write a whole record or nothing; `replace: false` fails with `AlreadyExists` if taken.
    fn write(&self, record: &Record, replace: bool) -> Result<(), RecordError> {
        let dir = self.records();
        let path = dir.join(format!("{}.json", record.id));
        let mut text = serde_json::to_vec_pretty(record).expect("records serialize");
        text.push(b'\n');
        let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(io_err(&dir))?;
        tmp.write_all(&text).map_err(io_err(tmp.path()))?;
        tmp.as_file().sync_all().map_err(io_err(tmp.path()))?;
        let persisted = if replace {
            tmp.persist(&path)
        } else {
            tmp.persist_noclobber(&path)
        };
        persisted.map(drop).map_err(|e| io_err(&path)(e.error))
    }
}

/// The one platform of this project's records.
pub const PLATFORM: &str = "kubernetes";

/// The most objects a record lists: a job, its Service, ConfigMap, two Secrets, the probe's
/// Job and Service, with room to spare.
pub const MAX_OWNED: usize = 16;

/// The largest record file read: a record is a few hundred bytes.
pub const MAX_RECORD_BYTES: u64 = 1 << 20;

fn read(id: &str, path: &Path) -> Result<Record, RecordError> {
    let read = |path: &Path| -> io::Result<Vec<u8>> {
        let mut text = Vec::new();
        File::open(path)?
            .take(MAX_RECORD_BYTES + 1)
            .read_to_end(&mut text)?;
        Ok(text)
    };
    let text = match read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let (id, path) = (id.to_string(), path.to_path_buf());
            return Err(RecordError::NotFound { id, path });
        }
        Err(e) => return Err(io_err(path)(e)),
    };
    let corrupt = |message: String| RecordError::Corrupt {
        path: path.to_path_buf(),
        message,
    };
    if text.len() as u64 > MAX_RECORD_BYTES {
        return Err(corrupt(format!("larger than {MAX_RECORD_BYTES} bytes")));
    }
    let record: Record = serde_json::from_slice(&text).map_err(|e| corrupt(e.to_string()))?;
    if record.id != id {
        return Err(corrupt(format!("its id is {}", record.id)));
    }
    check_record(&record).map_err(|e| corrupt(e.to_string()))?;
    Ok(record)
}

/// The state directory from environment variables; empty values count as unset, and a relative
/// `XDG_STATE_HOME` is ignored as the XDG spec says.
pub fn state_dir(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let var = |k: &str| var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("TAO_K8S_STATE_DIR")
        .or_else(|| {
            var("XDG_STATE_HOME")
                .filter(|p| p.is_absolute())
                .map(|p| p.join("tao-k8s"))
        })
        .or_else(|| var("HOME").map(|h| h.join(".local/state/tao-k8s")))
}

/// `<namespace>/<job-name>`: a DNS-1123 label and a DNS-1123 subdomain, so the driver can pass
/// both parts to kubectl as they are.
fn is_backend_ref(s: &str) -> bool {
    s.split_once('/')
        .is_some_and(|(ns, name)| names::is_dns1123_label(ns) && names::is_dns1123_subdomain(name))
}

/// `tao-YYYYMMDD-HHMMSS-xxxx`: sorts by time to the second, and the 4 hex (sha256 of the clock's
/// nanoseconds, the pid and a process-wide counter) tell apart ids of the same second.
fn new_id(now: SystemTime) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let mut hash = Sha256::new();
    hash.update(since.as_nanos().to_le_bytes());
    hash.update(std::process::id().to_le_bytes());
    hash.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let h = hash.finalize();
    let [y, mo, d, hh, mm, ss] = utc(now);
    format!(
        "tao-{y:04}{mo:02}{d:02}-{hh:02}{mm:02}{ss:02}-{:02x}{:02x}",
        h[0], h[1]
    )
}

/// RFC 3339 in UTC to the second, e.g. `2026-12-02T08:31:07Z`.
pub fn rfc3339(t: SystemTime) -> String {
    let [y, mo, d, hh, mm, ss] = utc(t);
    format!("{y:04}-{mo:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// Year, month, day, hour, minute, second in UTC (times before 1970 clamp to the epoch).
fn utc(t: SystemTime) -> [u64; 6] {
    let secs = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    // Howard Hinnant's civil_from_days, on days since 0000-03-01 so leap days come last.
    let z = secs / 86_400 + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = era * 400 + yoe + u64::from(month <= 2);
    let s = secs % 86_400;
    [year, month, day, s / 3600, s / 60 % 60, s % 60]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_names_led_by_the_time() {
        let id = new_id(UNIX_EPOCH + std::time::Duration::from_secs(1_796_200_267));
        assert!(
            id.starts_with("tao-20261202-083107-") && id.len() == 24,
            "{id}"
        );
        assert!(names::is_dns1035_label(&id));
    }

    /// A record that ended lists no new object but the reader Pod of its kept logs, which the
    /// driver takes off again once it deleted it.
    #[test]
    fn an_ended_record_owns_a_reader_pod_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().to_path_buf());
        let record = store
            .open(NewRecord {
                image: "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt".into(),
                network_arch: "dino".into(),
                action: "train".into(),
                storage_tier: StorageTier::A,
                results_dir: "/results/dino".into(),
                source: "driver".into(),
            })
            .unwrap();
        let id = record.id.as_str();
        let object = |kind: &str, uid: &str| Owned {
            kind: kind.into(),
            namespace: "vision".into(),
            name: "dino-logs-0a1b2c3d".into(),
            uid: uid.into(),
        };
        store.mark(id, State::Failed, "driver", None, None).unwrap();
        assert!(store.own(id, object("Secret", "1111")).is_err());
        assert!(store.own(id, object("Deployment", "2222")).is_err());
        let owned = store.own(id, object("Pod", "3333")).unwrap();
        assert_eq!(owned.objects, [object("Pod", "3333")]);
        assert_eq!(store.show(id).unwrap().objects.len(), 1);
        assert!(store.disown(id, "3333").unwrap().objects.is_empty());
        assert_eq!(store.show(id).unwrap().state, State::Failed);
    }

    /// The field limits keep the largest possible record far below what a read accepts.
    #[test]
    fn a_record_with_every_field_full_is_far_below_the_read_limit() {
        let full = |field: &str| {
            let limit = FIELD_LIMITS.iter().find(|(f, _)| *f == field).unwrap().1;
            // `"` is escaped as two bytes: the worst case of JSON.
            "\"".repeat(limit)
        };
        let event = |state| Event {
            state,
            at: rfc3339(SystemTime::now()),
            source: full("source"),
            reason: Some(full("reason")),
        };
        let record = Record {
            id: new_id(SystemTime::now()),
            platform: PLATFORM.into(),
            image: full("image"),
            network_arch: full("network_arch"),
            action: full("action"),
            storage_tier: StorageTier::A,
            results_dir: full("results_dir"),
            backend_ref: Some(format!("{}/{}", "n".repeat(63), "j".repeat(253))),
            backend_uid: Some("f".repeat(64)),
            objects: vec![
                Owned {
                    kind: "ConfigMap".into(),
                    namespace: "n".repeat(63),
                    name: "j".repeat(253),
                    uid: "f".repeat(64),
                };
                MAX_OWNED
            ],
            state: State::Failed,
            history: [State::Open, State::Submitted, State::Running, State::Failed]
                .map(event)
                .to_vec(),
        };
        check_record(&record).unwrap();
        let size = serde_json::to_vec_pretty(&record).unwrap().len() as u64;
        assert!(size < MAX_RECORD_BYTES / 10, "{size} bytes");
    }
}
