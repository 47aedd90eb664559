//! The redaction rules (`TK101 inline-credential`, `TK102 secret-data`) against a corpus of
//! realistic manifests in `fixtures/lint/corpus/`:
//!
//! * `positive/NN-<what>.yaml` plants exactly one (obviously fake) credential and marks the line
//!   it must be reported on with `# expect: TK101` (or `TK102`), as the rule fixtures do; its
//!   header lists the planted literal(s) as `# planted: <literal>` comments. Recall must be
//!   100%: every marked line reported, nothing else reported.
//! * `negative/NN-<what>.yaml` holds no credential but many near-misses (references,
//!   placeholders, digests, UUIDs, key names that are about a credential, ...). False
//!   positives must be 0.
//!
//! No message may show a planted credential: the rules mask a value as its first 4 characters
//! then `****`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tao_k8s::lint::{Reported, Selection, lint};
use tao_k8s::source::Source;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/lint/corpus");
const MIN_FILES: usize = 40;
const CODES: [&str; 2] = ["TK101", "TK102"];
const EXPECT: &str = "# expect: ";
const PLANTED: &str = "# planted: ";

/// The corpus files of one side, sorted, each named `NN-<what>.yaml`.
fn corpus(side: &str) -> Vec<PathBuf> {
    let dir = Path::new(CORPUS).join(side);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("readable directory entry").path())
        .collect();
    files.sort();
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let (nn, rest) = name.split_at_checked(3).unwrap_or_default();
        assert!(
            nn.len() == 3
                && nn[..2].bytes().all(|b| b.is_ascii_digit())
                && nn.ends_with('-')
                && rest.len() > ".yaml".len()
                && rest.ends_with(".yaml"),
            "{side}/{name} is not named NN-<what>.yaml"
        );
    }
    files
}

/// The text of a corpus file and what the redaction group reports on it.
fn lint_file(path: &Path) -> (String, Vec<Reported>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let source = Source::new(path.display().to_string(), text.clone());
    let selection = Selection {
        select: vec!["redaction".into()],
        ignore: Vec::new(),
        ..Default::default()
    };
    let reported = lint(&source, &selection).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (text, reported)
}

/// `(line, code)` of every `# expect: CODE` marker.
fn marked(text: &str) -> BTreeSet<(usize, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| line.split_once(EXPECT).map(|(_, codes)| (i + 1, codes)))
        .flat_map(|(line, codes)| codes.split(',').map(move |c| (line, c.trim().to_string())))
        .collect()
}

/// `(line, code)` of every report.
fn reported_at(reported: &[Reported]) -> BTreeSet<(usize, String)> {
    reported
        .iter()
        .map(|r| (r.line, r.diagnostic.code.to_string()))
        .collect()
}

/// The literals listed by `# planted: <literal>` header comments.
fn planted(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| line.strip_prefix(PLANTED))
        .map(str::trim)
        .collect()
}

/// Standard or URL-safe base64 (padding optional), when it decodes to UTF-8 text.
fn decode_base64(text: &str) -> Option<String> {
    let (mut bits, mut count) = (0u32, 0);
    let mut out = Vec::new();
    for c in text.bytes().filter(|&b| b != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(v);
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    String::from_utf8(out).ok()
}

/// `needle` in `text`, or in the base64 decoding of a run of `text` (nested up to `depth`):
/// a credential planted in `binaryData` or a Secret's `data` is only there encoded.
fn occurs(text: &str, needle: &str, depth: usize) -> bool {
    text.contains(needle)
        || depth > 0
            && text
                .split(|c: char| !(c.is_ascii_alphanumeric() || "+/=".contains(c)))
                .filter(|run| run.len() >= 8)
                .filter_map(decode_base64)
                .any(|decoded| occurs(&decoded, needle, depth - 1))
}

fn name(path: &Path) -> String {
    let side = path.parent().and_then(Path::file_name).unwrap_or_default();
    let file = path.file_name().unwrap_or_default();
    format!("{}/{}", side.to_string_lossy(), file.to_string_lossy())
}

fn describe(reported: &[Reported]) -> String {
    reported
        .iter()
        .map(|r| {
            format!(
                "\n    {}:{} {} {}: {}",
                r.line, r.column, r.diagnostic.code, r.json_path, r.diagnostic.message
            )
        })
        .collect()
}

#[test]
fn the_corpus_is_large_enough_and_well_formed() {
    let (positives, negatives) = (corpus("positive"), corpus("negative"));
    assert!(
        positives.len() >= MIN_FILES,
        "{} positive files, want >= {MIN_FILES}",
        positives.len()
    );
    assert!(
        negatives.len() >= MIN_FILES,
        "{} negative files, want >= {MIN_FILES}",
        negatives.len()
    );
    for path in &positives {
        let text = std::fs::read_to_string(path).expect("readable corpus file");
        let marks = marked(&text);
        assert_eq!(
            marks.len(),
            1,
            "{}: one credential, so one `{EXPECT}` marker",
            name(path)
        );
        assert!(
            marks.iter().all(|(_, code)| CODES.contains(&code.as_str())),
            "{}: markers name {CODES:?} only: {marks:?}",
            name(path)
        );
        let literals = planted(&text);
        assert!(
            !literals.is_empty(),
            "{}: no `{PLANTED}` header",
            name(path)
        );
        for literal in literals {
            assert!(
                literal.len() >= 8,
                "{}: planted {literal:?} is too short to check",
                name(path)
            );
            // Outside the header comment: in the manifest itself, possibly base64-encoded.
            let manifest: String = text
                .lines()
                .filter(|l| !l.starts_with(PLANTED))
                .collect::<Vec<_>>()
                .join("\n");
            assert!(
                occurs(&manifest, literal, 2),
                "{}: planted {literal:?} is not in the manifest",
                name(path)
            );
        }
    }
    for path in &negatives {
        let text = std::fs::read_to_string(path).expect("readable corpus file");
        assert!(
            !text.contains(EXPECT) && !text.contains(PLANTED),
            "{}: a negative marks nothing and plants nothing",
            name(path)
        );
    }
}

#[test]
fn recall_is_complete_and_there_are_no_false_positives() {
    let (positives, negatives) = (corpus("positive"), corpus("negative"));
    let mut failures = Vec::new();
    let (mut expected, mut found, mut findings, mut extra) = (0, 0, 0, 0);
    for path in &positives {
        let (text, reported) = lint_file(path);
        let want = marked(&text);
        let got = reported_at(&reported);
        findings += reported.len();
        expected += want.len();
        found += want.intersection(&got).count();
        extra += got.difference(&want).count();
        if !reported.iter().any(|r| CODES.contains(&r.diagnostic.code)) {
            failures.push(format!(
                "{}: no TK101/TK102 finding (want {want:?})",
                name(path)
            ));
        } else if got != want {
            failures.push(format!(
                "{}: want {want:?}, got:{}",
                name(path),
                describe(&reported)
            ));
        }
    }
    let mut flagged = 0;
    let mut negative_findings = 0;
    for path in &negatives {
        let (_, reported) = lint_file(path);
        negative_findings += reported.len();
        if !reported.is_empty() {
            flagged += 1;
            failures.push(format!(
                "{}: false positive:{}",
                name(path),
                describe(&reported)
            ));
        }
    }
    let recall = 100.0 * found as f64 / expected.max(1) as f64;
    let fp_rate = 100.0 * flagged as f64 / negatives.len().max(1) as f64;
    eprintln!(
        "redaction corpus: {} positive files, {findings} findings, {found}/{expected} marked \
         findings reported (recall {recall:.1}%), {extra} unmarked findings",
        positives.len()
    );
    eprintln!(
        "redaction corpus: {} negative files, {negative_findings} findings, {flagged} files \
         flagged (false-positive rate {fp_rate:.1}%)",
        negatives.len()
    );
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!((found, extra, flagged), (expected, 0, 0));
}

#[test]
fn messages_never_show_a_planted_credential() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for path in corpus("positive") {
        let (text, reported) = lint_file(&path);
        for r in &reported {
            let message = &r.diagnostic.message;
            checked += 1;
            if !message.contains("****`") {
                failures.push(format!("{}: no masked value in {message:?}", name(&path)));
            }
            for literal in planted(&text) {
                // Not the literal, nor any 8 consecutive characters of it: the mask keeps 4.
                let chars: Vec<char> = literal.chars().collect();
                let leak = chars
                    .windows(8)
                    .map(|w| w.iter().collect::<String>())
                    .find(|w| message.contains(w.as_str()));
                if let Some(leak) = leak {
                    failures.push(format!(
                        "{}: {message:?} shows {leak:?} of {literal:?}",
                        name(&path)
                    ));
                }
            }
        }
    }
    eprintln!("redaction corpus: {checked} messages checked for planted credentials");
    assert!(checked > 0, "no message to check");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
