//! The redaction rules (`TK101 inline-credential`, `TK102 secret-data`) against a corpus of
//! realistic manifests in `tests/redaction/`: `NN-<what>.yaml` files are written by hand,
//! `gen-NNN-<family>-<place>.yaml` files by `tests/redaction/gen.py` from hand-written templates
//! and the families it plants (the expectations come from what was planted, never from a
//! scanner's output).
//!
//! * `positive/` files plant exactly one (obviously fake) credential and mark the line it must
//!   be reported on with `# expect: TK101` (or `TK102`), as the rule fixtures do; the header
//!   lists the planted literal(s) as `# planted: <literal>` comments and the family as
//!   `# family: <name>`. A file counts as found when its marked line is reported.
//! * `negative/` files hold no credential but near-misses (encrypted values, public keys,
//!   digests, ids, placeholders, references, credential files without a credential). A file
//!   with any report is a false positive.
//!
//! Goals, per family and overall: recall >= 0.98, false-positive rate <= 0.01.
//!
//! No message may show a planted credential: the rules mask a value as its first 4 characters
//! then `****`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tao_k8s::lint::{Reported, Selection, lint};
use tao_k8s::source::Source;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/redaction");
const MIN_FILES: usize = 300;
const MIN_RECALL: f64 = 0.98;
const MAX_FP_RATE: f64 = 0.01;
const FAMILY: &str = "# family: ";
const CODES: [&str; 2] = ["TK101", "TK102"];
const EXPECT: &str = "# expect: ";
const PLANTED: &str = "# planted: ";

/// The corpus files of one side, sorted, each named `NN-<what>.yaml`.
fn corpus(side: &str) -> Vec<PathBuf> {
    let dir = Path::new(CORPUS).join(side);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let (nn, rest) = name.split_at_checked(3).unwrap_or_default();
        let hand =
            nn.len() == 3 && nn[..2].bytes().all(|b| b.is_ascii_digit()) && nn.ends_with('-');
        let generated = name.starts_with("gen-")
            && name
                .get(4..8)
                .is_some_and(|n| n[..3].bytes().all(|b| b.is_ascii_digit()) && n.ends_with('-'));
        assert!(
            (hand || generated) && rest.len() > ".yaml".len() && rest.ends_with(".yaml"),
            "{side}/{name} is not named NN-<what>.yaml or gen-NNN-<family>-<place>.yaml"
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
        // A marker may close a comment of the file's own syntax: `<!-- # expect: TK101 -->`.
        .flat_map(|(line, codes)| {
            codes.split(',').map(move |c| {
                (
                    line,
                    c.split_whitespace().next().unwrap_or_default().to_string(),
                )
            })
        })
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

/// The family a file plants (its `# family:` header), `hand-written` without one.
fn family(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(FAMILY))
        .map_or_else(|| "hand-written".to_string(), |f| f.trim().to_string())
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
                literal.len() >= 5,
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

/// Per family: files, found (positives) or flagged (negatives).
type Tally = std::collections::BTreeMap<String, (usize, usize)>;

#[test]
fn recall_and_false_positive_rate_meet_the_goals() {
    let (positives, negatives) = (corpus("positive"), corpus("negative"));
    let (mut found, mut flagged) = (Tally::new(), Tally::new());
    let (mut misses, mut alarms, mut extras) = (Vec::new(), Vec::new(), Vec::new());
    for path in &positives {
        let (text, reported) = lint_file(path);
        let want = marked(&text);
        let got = reported_at(&reported);
        let hit = want.is_subset(&got);
        let entry = found.entry(family(&text)).or_default();
        entry.0 += 1;
        entry.1 += usize::from(hit);
        if !hit {
            misses.push(format!(
                "{}: want {want:?}, got:{}",
                name(path),
                describe(&reported)
            ));
        } else if got != want {
            extras.push(format!(
                "{}: unmarked findings:{}",
                name(path),
                describe(&reported)
            ));
        }
    }
    for path in &negatives {
        let (text, reported) = lint_file(path);
        let entry = flagged.entry(family(&text)).or_default();
        entry.0 += 1;
        if !reported.is_empty() {
            entry.1 += 1;
            alarms.push(format!(
                "{}: false positive:{}",
                name(path),
                describe(&reported)
            ));
        }
    }
    let rate = |(n, k): (usize, usize)| k as f64 / n.max(1) as f64;
    let total = |t: &Tally| t.values().fold((0, 0), |a, v| (a.0 + v.0, a.1 + v.1));
    let mut failures = Vec::new();
    eprintln!("redaction corpus, positives: family, files, found, recall");
    for (fam, &counts) in found.iter().chain([(&"all".to_string(), &total(&found))]) {
        eprintln!(
            "  {fam:<24} {:>4} {:>4} {:.3}",
            counts.0,
            counts.1,
            rate(counts)
        );
        if rate(counts) < MIN_RECALL {
            failures.push(format!(
                "recall of {fam} is {:.3} < {MIN_RECALL}",
                rate(counts)
            ));
        }
    }
    eprintln!("redaction corpus, negatives: family, files, flagged, false-positive rate");
    for (fam, &counts) in flagged
        .iter()
        .chain([(&"all".to_string(), &total(&flagged))])
    {
        eprintln!(
            "  {fam:<24} {:>4} {:>4} {:.3}",
            counts.0,
            counts.1,
            rate(counts)
        );
        if rate(counts) > MAX_FP_RATE {
            failures.push(format!(
                "false-positive rate of {fam} is {:.3} > {MAX_FP_RATE}",
                rate(counts)
            ));
        }
    }
    // Unmarked findings in a positive file are false alarms too, held to the same rate.
    let extra_rate = rate((positives.len(), extras.len()));
    eprintln!(
        "redaction corpus: {} positive files with unmarked findings ({extra_rate:.3})",
        extras.len()
    );
    if extra_rate > MAX_FP_RATE {
        failures.push(format!(
            "unmarked findings in {extra_rate:.3} of the positives"
        ));
    }
    for line in misses.iter().chain(&alarms).chain(&extras) {
        eprintln!("{line}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
                // Not the literal, nor any 8 consecutive characters of it: the mask keeps 4
                // (none of a value under 8 characters).
                let chars: Vec<char> = literal.chars().collect();
                let leak = chars
                    .windows(8.min(chars.len()))
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
