//! The one place the command line touches the file system. Every file it reads (requests, the
//! files they name, templates, snapshots, CRDs, manifests, what kubectl returned, the service
//! account's namespace, stdin) is read here: regular files only (a FIFO, socket or device is
//! refused with its path, without waiting on it), at most a byte cap per kind, and, for a
//! file named by an input rather than by whoever runs the tool, inside a root the caller
//! gives (no absolute path, no `..`, no symbolic link out of it). The folders it lists and
//! the files it writes are here too. `tests/input_paths.rs` fails on a file-system call
//! elsewhere in `src/`.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use tao_k8s::source::{Source, TextError};

/// The input size limit of this run, set once from `--max-input-size`.
static MAX_INPUT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// Set the input size limit of this run (`--max-input-size`); the first setting holds.
pub(crate) fn set_max_input(bytes: u64) {
    MAX_INPUT.get_or_init(|| bytes);
}

/// What is read, for its byte cap.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// A request, manifest, template, CRD, spec file or stdin: `--max-input-size`.
    Input,
    /// A stored snapshot: a rendered manifest (at most 16 MiB) and its header.
    Snapshot,
    /// What kubectl returned (`gate --cluster DIR`): read as a stream, never held whole.
    Cluster,
    /// The service account's namespace file: one DNS label.
    ServiceAccount,
}

impl Kind {
    pub(crate) fn limit(self) -> u64 {
        let input = *MAX_INPUT.get_or_init(|| tao_k8s::source::DEFAULT_MAX_INPUT);
        match self {
            Kind::Input => input,
            Kind::Snapshot => input.max(tao_k8s::source::DEFAULT_MAX_INPUT) + (64 << 10),
            // The pods of a large cluster run to hundreds of megabytes; only a few fields of
            // each are kept.
            Kind::Cluster => 1 << 30,
            Kind::ServiceAccount => 4 << 10,
        }
    }
}

/// Why an input was not read.
pub(crate) enum ReadError {
    /// It could not be read: exit 2.
    Io(String),
    /// It was read and refused (over the size limit, not UTF-8 or YAML text): exit 1.
    Refused(String),
}

impl ReadError {
    pub(crate) fn message(&self) -> &str {
        match self {
            ReadError::Io(m) | ReadError::Refused(m) => m,
        }
    }

    /// Report it and give the exit code.
    pub(crate) fn report(&self, out: &super::report::Reporter) -> std::process::ExitCode {
        match self {
            ReadError::Io(m) => out.io_error(m),
            ReadError::Refused(m) => {
                eprintln!("error: {m}");
                std::process::ExitCode::from(super::REFUSED)
            }
        }
    }
}

/// Why an I/O operation failed, in words (no `(os error 2)`).
pub(crate) fn io_reason(e: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        NotFound => "no such file or directory".into(),
        PermissionDenied => "permission denied".into(),
        IsADirectory => "it is a directory, not a file".into(),
        NotADirectory => "a part of the path is not a directory".into(),
        _ => {
            // The OS text without its `(os error N)` suffix.
            let text = e.to_string();
            match text.rsplit_once(" (os error ") {
                Some((reason, _)) => reason.to_lowercase(),
                None => text,
            }
        }
    }
}

/// `path` opened for reading if it is a regular file (symbolic links followed). It is opened
/// without blocking, so that a FIFO with no writer is refused at once rather than waited on;
/// a regular file reads the same either way.
pub(crate) fn open(path: &Path) -> std::io::Result<File> {
    open_sized(path).map(|(file, _)| file)
}

/// [`open`], with the file's size when it was opened (what a whole read allocates at once).
fn open_sized(path: &Path) -> std::io::Result<(File, u64)> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let metadata = file.metadata()?;
    let kind = metadata.file_type();
    let what = if kind.is_file() {
        return Ok((file, metadata.len()));
    } else if kind.is_dir() {
        return Err(std::io::ErrorKind::IsADirectory.into());
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a file"
    };
    Err(std::io::Error::other(format!(
        "it is {what}, not a regular file"
    )))
}

/// A reader that fails once more than `limit` bytes come through it: a stream is refused as
/// soon as it passes its cap, whoever reads it (a JSON deserializer, say).
pub(crate) struct Capped<R> {
    inner: std::io::Take<R>,
    limit: u64,
    read: u64,
}

impl<R: Read> Capped<R> {
    pub(crate) fn new(inner: R, limit: u64) -> Capped<R> {
        Capped {
            inner: inner.take(limit + 1),
            limit,
            read: 0,
        }
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > self.limit {
            return Err(std::io::Error::other(format!(
                "larger than {} bytes",
                self.limit
            )));
        }
        Ok(n)
    }
}

fn cannot_read(path: &Path, e: &std::io::Error) -> ReadError {
    ReadError::Io(format!(
        "cannot read `{}`: {}",
        path.display(),
        io_reason(e)
    ))
}

/// A file, or stdin for `-`, as a named source: at most the cap of `kind` is read, so an
/// endless stream is refused as soon as it passes it.
pub(crate) fn read(path: &Path, kind: Kind) -> Result<Source, ReadError> {
    let limit = kind.limit();
    let (name, reader, size): (String, Box<dyn Read>, u64) = if path == Path::new("-") {
        ("<stdin>".into(), Box::new(std::io::stdin().lock()), 0)
    } else {
        let (file, size) = open_sized(path).map_err(|e| cannot_read(path, &e))?;
        (path.display().to_string(), Box::new(file), size)
    };
    let refused = |e: TextError| ReadError::Refused(format!("{name}: {e}"));
    // The size is a hint (the file may grow or shrink): room for it and the end-of-file read,
    // within the cap.
    let hint = usize::try_from(size.min(limit) + 1).unwrap_or(0);
    let mut bytes = Vec::with_capacity(hint);
    reader
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot_read(path, &e))?;
    if bytes.len() as u64 > limit {
        return Err(refused(TextError::TooLarge { limit }));
    }
    Source::from_bytes(name.as_str(), bytes).map_err(refused)
}

/// A file, or stdin for `-`, as a named source (see [`read`]).
pub(crate) fn read_source(path: &Path) -> Result<Source, ReadError> {
    read(path, Kind::Input)
}

/// [`read`], `None` when there is no such file.
pub(crate) fn read_if_present(path: &Path, kind: Kind) -> Result<Option<Source>, ReadError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => read(path, kind).map(Some),
    }
}

/// A regular file opened as a capped stream, `None` when there is no such file.
pub(crate) fn stream_if_present(path: &Path, kind: Kind) -> Result<Option<impl Read>, ReadError> {
    match open(path) {
        // The buffer is outermost: a JSON reader takes a byte at a time, and a byte from a
        // `BufReader` is a slice index, where through `Capped` it would be three calls.
        Ok(file) => Ok(Some(std::io::BufReader::new(Capped::new(
            file,
            kind.limit(),
        )))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(cannot_read(path, &e)),
    }
}

/// `dir/name`, what kubectl returned, as JSON, `None` when there is no such file: read as a
/// stream (never held whole) into the few fields the caller keeps.
pub(crate) fn cluster_json<T: serde::de::DeserializeOwned>(
    dir: &Path,
    name: &str,
) -> Result<Option<T>, String> {
    cluster_json_seed(dir, name, std::marker::PhantomData::<T>)
}

/// [`cluster_json`] read through `seed` (one that folds a list's items as they come, say).
pub(crate) fn cluster_json_seed<S, V>(dir: &Path, name: &str, seed: S) -> Result<Option<V>, String>
where
    S: for<'de> serde::de::DeserializeSeed<'de, Value = V>,
{
    let path = dir.join(name);
    let Some(stream) =
        stream_if_present(&path, Kind::Cluster).map_err(|e| e.message().to_string())?
    else {
        return Ok(None);
    };
    let refused =
        |e: &dyn std::fmt::Display| format!("{}: not what kubectl returns: {e}", path.display());
    let mut de = serde_json::Deserializer::from_reader(stream);
    let mut track = serde_path_to_error::Track::new();
    let value = seed
        .deserialize(serde_path_to_error::Deserializer::new(&mut de, &mut track))
        .map_err(|e| refused(&serde_path_to_error::Error::new(track.path(), e)))?;
    de.end().map_err(|e| refused(&e))?;
    Ok(Some(value))
}

/// A file a request names, relative to its folder `base`: the request comes from a producer,
/// not from whoever runs the tool, so the file must resolve (symbolic links followed) inside
/// one of `roots` (its folder, and `--spec-root` when the caller widens it). No absolute
/// path, no `..` or link out of them.
pub(crate) fn read_named(base: &Path, named: &str, roots: &[&Path]) -> Result<Source, String> {
    let widen = "a request names files inside its own folder; `--spec-root DIR` allows another";
    if Path::new(named).is_absolute() {
        return Err(format!("an absolute path is refused: {widen}"));
    }
    let allowed = roots
        .iter()
        .map(|r| canonical(r))
        .collect::<Result<Vec<_>, _>>()?;
    let file = canonical(&base.join(named))?;
    if !allowed.iter().any(|dir| file.starts_with(dir)) {
        return Err(format!(
            "it resolves to `{}`, outside `{}`: {widen}",
            file.display(),
            allowed
                .first()
                .map_or(Path::new(""), PathBuf::as_path)
                .display()
        ));
    }
    // Read what was checked; name it as the request wrote it.
    let source = read(&file, Kind::Input).map_err(|e| e.message().to_string())?;
    Ok(Source::new(
        base.join(named).display().to_string(),
        source.text().to_string(),
    ))
}

/// `path` with every symbolic link, `.` and `..` resolved.
pub(crate) fn canonical(path: &Path) -> Result<PathBuf, String> {
    path.canonicalize()
        .map_err(|e| format!("cannot read `{}`: {}", path.display(), io_reason(&e)))
}

/// Whether a relative path stays where it is put: no absolute path, no `..`.
pub(crate) fn stays_inside(path: &Path) -> bool {
    path.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// A folder's entries, sorted by name. With `confined`, an entry that is a symbolic link
/// resolving outside the folder is refused, naming both.
pub(crate) fn list(dir: &Path, confined: bool) -> Result<Vec<PathBuf>, String> {
    Ok(entries(dir, confined)?
        .into_iter()
        .map(|(p, _)| p)
        .collect())
}

/// [`list`], only the regular files (links followed), told by the folder's own entry types:
/// no system call per file.
pub(crate) fn list_files(dir: &Path, confined: bool) -> Result<Vec<PathBuf>, String> {
    Ok(entries(dir, confined)?
        .into_iter()
        .filter(|(_, file)| *file)
        .map(|(p, _)| p)
        .collect())
}

/// A folder's entries, sorted by name, each with whether it is a regular file.
fn entries(dir: &Path, confined: bool) -> Result<Vec<(PathBuf, bool)>, String> {
    let fail = |e: std::io::Error| format!("cannot read `{}`: {}", dir.display(), io_reason(&e));
    let mut out = Vec::new();
    let root = if confined {
        Some(canonical(dir)?)
    } else {
        None
    };
    for entry in std::fs::read_dir(dir).map_err(fail)? {
        let entry = entry.map_err(fail)?;
        let path = entry.path();
        // Only a link can lead out: any other entry is in the folder (resolving the path of
        // each would cost a system call per component).
        let kind = entry.file_type().ok();
        let link = kind.is_none_or(|t| t.is_symlink());
        if link
            && let Some(root) = &root
            && let Ok(target) = path.canonicalize()
            && !target.starts_with(root)
        {
            return Err(format!(
                "`{}` is a link to `{}`, outside `{}`: the requests of a folder stay in it",
                path.display(),
                target.display(),
                dir.display()
            ));
        }
        let file = match kind {
            Some(t) if !t.is_symlink() => t.is_file(),
            _ => path.is_file(),
        };
        out.push((path, file));
    }
    out.sort();
    Ok(out)
}

/// A directory's device and inode (symbolic links followed): the same folder reached by two
/// paths has one identity.
pub(crate) fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Write a whole file or nothing: a temporary file beside it, renamed into place.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let fail = |e: std::io::Error| format!("cannot write `{}`: {}", path.display(), io_reason(&e));
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)?;
    file.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

/// Create `path`, which must not exist, readable by its owner only, with `text`.
pub(crate) fn write_private(path: &Path, text: &str) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |e: std::io::Error| format!("cannot write `{}`: {}", path.display(), io_reason(&e));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)
}

pub(crate) fn create_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create `{}`: {}", dir.display(), io_reason(&e)))
}

pub(crate) fn make_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot make {} executable: {e}", path.display()))
}
