//! `tao-k8s snapshot`: snapshot tests for template authors. Each request is rendered (with
//! the author's `--templates`) and compared with its stored snapshot, `DIR/<stem>.snap` (and
//! `DIR/<stem>.nccl-probe.snap` for a multi-node request's probe), in insta's file format, so
//! that `cargo insta review` and an author's own `insta::assert_snapshot!` read the same files.
//! A change prints a unified diff and exits 1; `--update` writes the snapshots instead.

use super::input::{self, Kind};
use super::render::{Files, Requests, read_request, read_templates, report_refusal};
use super::report::Reporter;
use super::{REFUSED, emit, write_atomic};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tao_k8s::plan::Options;
use tao_k8s::render::Templates;

/// One snapshot as rendered: its file, header and body.
struct Taken {
    file: PathBuf,
    request: String,
    expression: String,
    body: String,
}

impl Taken {
    /// The file as insta writes it: a YAML header between `---` lines, then the body with
    /// its trailing whitespace trimmed and one newline.
    fn text(&self) -> String {
        format!(
            "---\nsource: {}\nexpression: {}\ninput_file: {}\n---\n{}\n",
            scalar("tao-k8s snapshot"),
            scalar(&self.expression),
            scalar(&self.request),
            normalize(&self.body)
        )
    }
}

/// A header value as insta's YAML reads it: plain when it can be, else a JSON string.
fn scalar(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " ._/-+=".contains(c))
        && !text.starts_with([' ', '-'])
        && !text.ends_with(' ');
    if plain {
        text.to_string()
    } else {
        serde_json::to_string(text).expect("a string serializes")
    }
}

/// What insta compares: the body without trailing whitespace, with LF line ends.
fn normalize(body: &str) -> String {
    body.trim_end().replace("\r\n", "\n")
}

/// The body of a stored snapshot (insta's format: the part after the header's closing `---`
/// line), normalized; `None` if the file is not a snapshot.
fn stored_body(text: &str) -> Option<String> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    Some(normalize(&rest[end + 5..]))
}

pub(crate) struct Args {
    pub requests: Vec<PathBuf>,
    pub snapshots: PathBuf,
    pub templates: Option<PathBuf>,
    pub update: bool,
}

pub(crate) fn run(out: &Reporter, args: Args, opts: Options, files: &Files) -> ExitCode {
    let requests = match Requests::expand(&args.requests) {
        Ok(r) => r,
        Err(message) => return out.io_error(&message),
    };
    let owned = match read_templates(out, args.templates.as_deref()) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let templates = owned.as_ref().unwrap_or(Templates::embedded());
    // Every request first: one refused request refuses the run, and nothing is written.
    let taken = match take(out, &requests, &args, templates, &opts, files) {
        Ok(taken) => taken,
        Err(code) => return code,
    };
    let comparison = match compare(out, &taken) {
        Ok(comparison) => comparison,
        Err(code) => return code,
    };
    note_stale(out, &args.snapshots, &taken);
    conclude(out, &args, &comparison)
}

/// Render every request into its snapshots (two for a multi-node request: the job and its
/// probe); exit 1 if any request is refused, 2 if two would write one file.
fn take(
    out: &Reporter,
    requests: &Requests,
    args: &Args,
    templates: &Templates,
    opts: &Options,
    files: &Files,
) -> Result<Vec<Taken>, ExitCode> {
    let expression = match &args.templates {
        Some(dir) => format!("tao-k8s render --templates {}", dir.display()),
        None => "tao-k8s render".to_string(),
    };
    let mut taken: Vec<Taken> = Vec::new();
    let mut refused = 0;
    // Which request writes each snapshot file: a probe's name may be another request's.
    let mut names: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
    for path in &requests.paths {
        let mut opts = opts.clone();
        let source = read_request(out, path, &mut opts, files)?;
        let stem = super::render::checked_stem(path, &args.snapshots)
            .map_err(|message| out.io_error(&message))?;
        let mut claim = |file: &PathBuf| match names.insert(file.clone(), path.clone()) {
            Some(other) => Err(out.io_error(&format!(
                "`{}` and `{}` would share the snapshot `{}`: rename one",
                other.display(),
                path.display(),
                file.file_name().unwrap_or_default().to_string_lossy()
            ))),
            None => Ok(()),
        };
        let file = args.snapshots.join(format!("{stem}.snap"));
        claim(&file)?;
        let bundle = match tao_k8s::bundle(&source, &opts, templates) {
            Ok(b) => b,
            Err(failure) => {
                report_refusal(out, &source, failure, files);
                refused += 1;
                continue;
            }
        };
        let request = source.name().to_string();
        taken.push(Taken {
            file,
            request: request.clone(),
            expression: expression.clone(),
            body: bundle.job.yaml,
        });
        if let Some(probe) = bundle.probe {
            let file = args.snapshots.join(format!("{stem}.nccl-probe.snap"));
            claim(&file)?;
            taken.push(Taken {
                file,
                request,
                expression: format!("{expression} --nccl-probe"),
                body: probe.yaml,
            });
        }
    }
    if refused > 0 {
        eprintln!("error: {refused} request(s) refused: no snapshot compared or written");
        return Err(ExitCode::from(REFUSED));
    }
    Ok(taken)
}

/// The rendered snapshots against the stored ones.
struct Comparison<'a> {
    same: usize,
    changed: usize,
    new: usize,
    /// The unified diffs of those changed or new.
    diffs: String,
    /// Those changed or new.
    writes: Vec<&'a Taken>,
}

fn compare<'a>(out: &Reporter, taken: &'a [Taken]) -> Result<Comparison<'a>, ExitCode> {
    let mut comparison = Comparison {
        same: 0,
        changed: 0,
        new: 0,
        diffs: String::new(),
        writes: Vec::new(),
    };
    for t in taken {
        let stored = stored(out, &t.file)?;
        let body = normalize(&t.body);
        match &stored {
            Some(old) if *old == body => {
                comparison.same += 1;
                continue;
            }
            Some(_) => comparison.changed += 1,
            None => comparison.new += 1,
        }
        comparison
            .diffs
            .push_str(&diff(t, stored.as_deref(), &body));
        comparison.writes.push(t);
    }
    Ok(comparison)
}

/// The body of the stored snapshot `file`, `None` when there is none; exit 2 if it is not a
/// snapshot or cannot be read.
fn stored(out: &Reporter, file: &Path) -> Result<Option<String>, ExitCode> {
    match input::read_if_present(file, Kind::Snapshot) {
        Ok(Some(text)) => match stored_body(text.text()) {
            Some(body) => Ok(Some(body)),
            None => Err(out.io_error(&format!(
                "`{}` is not a snapshot (insta's format: a `---` header, then the body)",
                file.display()
            ))),
        },
        Ok(None) => Ok(None),
        Err(e) => Err(out.io_error(e.message())),
    }
}

/// The unified diff from the stored body (from /dev/null when there is none) to the rendered.
fn diff(t: &Taken, stored: Option<&str>, body: &str) -> String {
    let name = t.file.display().to_string();
    let old = stored.map_or_else(String::new, |old| format!("{old}\n"));
    similar::TextDiff::from_lines(&old, &format!("{body}\n"))
        .unified_diff()
        .context_radius(3)
        .header(
            &if stored.is_some() {
                name.clone()
            } else {
                "/dev/null".into()
            },
            &format!("{name} (rendered from {})", t.request),
        )
        .to_string()
}

/// Stored snapshots that no request made: left alone, but said.
fn note_stale(out: &Reporter, dir: &Path, taken: &[Taken]) {
    let made: Vec<&Path> = taken.iter().map(|t| t.file.as_path()).collect();
    if let Ok(entries) = input::list(dir, false) {
        let stale: Vec<PathBuf> = entries
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "snap") && !made.contains(&p.as_path()))
            .collect();
        for file in stale {
            out.note(&format!("{} is no request's snapshot", file.display()));
        }
    }
}

/// Write the new and changed snapshots (`--update`), or print their diff and exit 1.
fn conclude(out: &Reporter, args: &Args, comparison: &Comparison) -> ExitCode {
    let Comparison {
        same,
        changed,
        new,
        diffs,
        writes,
    } = comparison;
    let counts = format!("{same} unchanged, {changed} changed, {new} new");
    if args.update {
        if !writes.is_empty()
            && let Err(message) = input::create_dir(&args.snapshots)
        {
            return out.io_error(&message);
        }
        for t in writes {
            if let Err(message) = write_atomic(&t.file, &t.text()) {
                return out.io_error(&message);
            }
        }
        eprintln!("snapshots: {counts}; {} written", writes.len());
        return ExitCode::SUCCESS;
    }
    if writes.is_empty() {
        eprintln!("snapshots: {counts}");
        return ExitCode::SUCCESS;
    }
    let code = emit(diffs);
    if code != ExitCode::SUCCESS {
        return code;
    }
    eprintln!("snapshots: {counts}: review the diff, then run again with --update to accept it");
    ExitCode::from(REFUSED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_reads_back_as_its_body() {
        let t = Taken {
            file: PathBuf::from("x.snap"),
            request: "requests/a b.yaml".into(),
            expression: "tao-k8s render".into(),
            body: "---\nkind: Job\n---\nkind: Service\n".into(),
        };
        let text = t.text();
        assert_eq!(
            text,
            "---\nsource: tao-k8s snapshot\nexpression: tao-k8s render\ninput_file: requests/a b.yaml\n---\n---\nkind: Job\n---\nkind: Service\n"
        );
        assert_eq!(
            stored_body(&text).unwrap(),
            "---\nkind: Job\n---\nkind: Service"
        );
        assert_eq!(scalar("a: b"), "\"a: b\"");
        assert_eq!(scalar("-x"), "\"-x\"");
        assert!(stored_body("kind: Job\n").is_none());
    }
}
