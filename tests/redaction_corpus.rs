//! The redaction rule (`TK101 inline-credential`) against corpora it was not written from.
//!
//! The redaction corpus, `tests/redaction/`: `NN-<what>.yaml` files are written by hand,
//! `gen-NNN-<family>-<place>.yaml` files by `tests/redaction/gen.py` from hand-written templates
//! and the families it plants (the expectations come from what was planted, never from a
//! scanner's output). It has two parts: the development part (`positive/`, `negative/`), that
//! the detector is tuned on, and the held-out part (`heldout/positive/`, `heldout/negative/`: a
//! quarter of the files by a hash of their name, and real-world shapes from public Helm charts),
//! that it is not: its figure is the one that says how the detector does on what it has not
//! seen.
//!
//! * `positive/` files plant exactly one (obviously fake) credential and mark the line it must
//!   be reported on with `# expect: TK101`, as the rule fixtures do; the header
//!   lists the planted literal(s) as `# planted: <literal>` comments and the family as
//!   `# family: <name>`. A file counts as found when its marked line is reported.
//! * `negative/` files hold no credential but near-misses (encrypted values, public keys,
//!   digests, ids, placeholders, references, credential files without a credential). A file
//!   with any report is a false positive.
//!
//! Goals: on the development part, per family and overall, recall >= 0.98 and false-positive
//! rate <= 0.01; on the held-out part, overall, recall >= 0.97 and false-positive rate <= 0.01.
//!
//! The catalogue corpus, `tests/redaction/catalogue.jsonl`: credentials sampled from the regexes
//! of the gitleaks and TruffleHog rule catalogues, each planted in a Kubernetes place, by
//! `bench/catalogue/gen.py`. Goal: recall >= 0.98.
//!
//! No message may show a planted credential: a masked value shows at most a public prefix.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tao_k8s::lint::{Reported, Selection, lint};
use tao_k8s::source::Source;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/redaction");
/// The parts of the corpus: directory, fewest files a side, recall and false-positive goals,
/// whether the goals hold per family (else overall only).
const PARTS: [(&str, usize, f64, f64, bool); 2] = [
    ("", 250, 0.98, 0.01, true),
    ("heldout", 80, 0.97, 0.01, false),
];
const CATALOGUE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/redaction/catalogue.jsonl"
);
const CATALOGUE_RECALL: f64 = 0.98;
const FAMILY: &str = "# family: ";
const CODES: [&str; 1] = ["TK101"];
const EXPECT: &str = "# expect: ";
const PLANTED: &str = "# planted: ";

/// The corpus files of one side of one part, sorted, each named `NN-<what>.yaml`.
fn corpus(part: &str, side: &str) -> Vec<PathBuf> {
    let dir = Path::new(CORPUS).join(part).join(side);
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
    path.strip_prefix(CORPUS)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
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
    for (part, min_files, ..) in PARTS {
        well_formed(part, min_files);
    }
}

fn well_formed(part: &str, min_files: usize) {
    let (positives, negatives) = (corpus(part, "positive"), corpus(part, "negative"));
    assert!(
        positives.len() >= min_files,
        "{part}: {} positive files, want >= {min_files}",
        positives.len()
    );
    assert!(
        negatives.len() >= min_files,
        "{part}: {} negative files, want >= {min_files}",
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
fn recall_and_false_positive_rate_meet_the_goals_on_the_development_part() {
    let (part, _, recall, fp_rate, per_family) = PARTS[0];
    goals(part, recall, fp_rate, per_family);
}

#[test]
fn recall_and_false_positive_rate_meet_the_goals_on_the_held_out_part() {
    let (part, _, recall, fp_rate, per_family) = PARTS[1];
    goals(part, recall, fp_rate, per_family);
}

fn goals(part: &str, min_recall: f64, max_fp_rate: f64, per_family: bool) {
    let (positives, negatives) = (corpus(part, "positive"), corpus(part, "negative"));
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
    let part = if part.is_empty() { "development" } else { part };
    eprintln!("redaction corpus ({part}), positives: family, files, found, recall");
    for (fam, &counts) in found.iter().chain([(&"all".to_string(), &total(&found))]) {
        eprintln!(
            "  {fam:<24} {:>4} {:>4} {:.3}",
            counts.0,
            counts.1,
            rate(counts)
        );
        if (per_family || fam == "all") && rate(counts) < min_recall {
            failures.push(format!(
                "{part}: recall of {fam} is {:.3} < {min_recall}",
                rate(counts)
            ));
        }
    }
    eprintln!("redaction corpus ({part}), negatives: family, files, flagged, false-positive rate");
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
        if (per_family || fam == "all") && rate(counts) > max_fp_rate {
            failures.push(format!(
                "{part}: false-positive rate of {fam} is {:.3} > {max_fp_rate}",
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
    if extra_rate > max_fp_rate {
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
    for path in PARTS.iter().flat_map(|(part, ..)| corpus(part, "positive")) {
        let (text, reported) = lint_file(&path);
        for r in &reported {
            let message = &r.diagnostic.message;
            checked += 1;
            if !message.contains("****`") {
                failures.push(format!("{}: no masked value in {message:?}", name(&path)));
            }
            // What the message quotes of the input; the rest is the rule's own words.
            let quoted: String = message.split('`').skip(1).step_by(2).collect();
            for literal in planted(&text) {
                // No 6 consecutive characters of its body: a mask shows a public prefix at most.
                let leak = body_window(literal, &quoted);
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

/// A window of 6 characters of `secret`'s body (past the public prefix a mask may show) that
/// `shown` holds, if any.
fn body_window(secret: &str, shown: &str) -> Option<String> {
    let prefix = tao_k8s::secrets::public_prefix(secret).map_or(0, str::len);
    let body: Vec<char> = secret[prefix..].chars().collect();
    body.windows(6.min(body.len()))
        .map(|w| w.iter().collect::<String>())
        .find(|w| shown.contains(w.as_str()))
}

/// One sample of the catalogue corpus.
#[derive(serde::Deserialize)]
struct Sample {
    catalogue: String,
    rule: String,
    place: String,
    secret: String,
    /// The line a report must be on.
    line: usize,
    manifest: String,
}

#[test]
fn recall_on_the_catalogue_corpus_meets_the_goal() {
    let text = std::fs::read_to_string(CATALOGUE).expect("readable catalogue corpus");
    let samples: Vec<Sample> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a sample per line"))
        .collect();
    assert!(samples.len() >= 1000, "{} samples", samples.len());
    let selection = Selection {
        select: vec!["inline-credential".into()],
        ..Default::default()
    };
    let mut misses = Vec::new();
    let mut leaks = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        let source = Source::new(format!("sample-{i}.yaml"), s.manifest.clone());
        let reported = lint(&source, &selection).unwrap_or_else(|e| panic!("sample {i}: {e}"));
        if !reported
            .iter()
            .any(|r| r.line == s.line && r.diagnostic.code == "TK101")
        {
            misses.push(format!("{} {} in {}", s.catalogue, s.rule, s.place));
        }
        for r in &reported {
            // What the message quotes of the input (the rest is the rule's own words, and a
            // webhook URL's host is in them: "a webhook URL").
            let shown = &r.diagnostic.message;
            let quoted: String = shown.split('`').skip(1).step_by(2).collect();
            if let Some(w) = body_window(&s.secret, &quoted) {
                leaks.push(format!("{} {}: {shown:?} shows {w:?}", s.catalogue, s.rule));
            }
        }
    }
    let recall = 1.0 - misses.len() as f64 / samples.len() as f64;
    eprintln!(
        "catalogue corpus: {} samples, {} missed, recall {recall:.3}",
        samples.len(),
        misses.len()
    );
    for m in &misses {
        eprintln!("  missed: {m}");
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n"));
    assert!(
        recall >= CATALOGUE_RECALL,
        "recall {recall:.3} < {CATALOGUE_RECALL}"
    );
}
