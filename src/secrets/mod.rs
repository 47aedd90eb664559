//! Credential shapes: the one place that knows what a secret looks like.
//!
//! No credential may appear inline in a manifest or in a request's `env`; the request checks and
//! the redaction lint (every string of any Kubernetes YAML) both ask this module, so the rules
//! stay in one place. It is pure (no I/O). Two kinds of evidence count:
//!
//! * *shapes*: a token's own structure (`AKIA…`, `nvapi-…`, `hf_…`, `ghp_…`, `xoxb-…`, PEM
//!   private keys, JWTs, `user:password@` in URLs, docker config `auths`), found anywhere;
//! * the *name rule*: a high-entropy value assigned to a name that says KEY, TOKEN, SECRET,
//!   PASSWORD, PASSWD or CREDENTIAL, both via [`scan_assignment`] and for `name=value`,
//!   `name: value` and `--name value` inside free text.
//!
//! False positives break CI, so references (`${VAR}`, `$(VAR)`, `{{ … }}`), placeholders, paths,
//! URLs, digests, UUIDs and Kubernetes-style names are deliberately never findings.

//! Credential detection: the one place that knows what a secret looks like.
//!
//! No credential may appear inline in a manifest or in a request; the request checks, the
//! redaction lint (every string of any Kubernetes YAML), render's self-lint and the driver's
//! lint before apply all ask this module, so the rules stay in one place. It is pure (no I/O)
//! and has three layers, each with its own test table:
//!
//! * [`extract`]: where a value sits (assignments, argv pairs, shell words, credential files,
//!   Authorization headers) and the name it is judged by;
//! * [`recognise`]: the token catalogue (provider prefixes, checksums), the name model (KEY,
//!   TOKEN, SECRET need a random value; PASSWORD takes any real value), the decoders;
//! * [`dismiss`]: what is safe although it looks like a secret (encrypted, public by design,
//!   digests and ids, placeholders and references). Placeholders are silent, never a note.
//!
//! One verdict type, [`Finding`]: the family (`kind`), a description, the byte range, a
//! [`Confidence`] and the reason.

mod dismiss;
mod extract;
mod recognise;

pub use dismiss::is_placeholder;
use extract::Candidate;
use recognise::*;
use regex::Regex;
use std::ops::Range;
use std::sync::LazyLock;

/// How sure a verdict is: `High` for a provider's own format (checksum valid where it has
/// one) or a structure (PEM, URL password), `Medium` for the name model and option values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Confidence {
    Medium,
    High,
}

/// One credential-shaped run inside a string: the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Stable short id of the family, e.g. "aws-access-key-id", "github-token", "password",
    /// "assigned-secret".
    pub kind: &'static str,
    /// Human description, e.g. "an AWS access key id".
    pub what: &'static str,
    /// Byte range of the credential inside the scanned text.
    pub range: Range<usize>,
    pub confidence: Confidence,
    /// Why it is a credential, e.g. "a GitHub token with a valid CRC32 checksum".
    pub reason: &'static str,
}

static PEM_BEGIN: LazyLock<Regex> =
    LazyLock::new(|| re(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"));
static PEM_END: LazyLock<Regex> =
    LazyLock::new(|| re(r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"));
/// Base64 right after the header (past newlines, escaped `\n`s and `Proc-Type:`-style lines):
/// a bare header, as in `grep "BEGIN RSA PRIVATE KEY"`, is not a key.
static PEM_BODY: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^(?:\s|\\[nr])*(?:[A-Za-z-]+: [^\n\\]*(?:\s|\\[nr])+)*[A-Za-z0-9+/=_-]{20,}")
});
/// Docker config JSON, possibly escaped inside another string (`{\"auths\": …}`).
static DOCKER_AUTHS: LazyLock<Regex> = LazyLock::new(|| re(r#"\\?"auths\\?"\s*:\s*\{"#));
static DOCKER_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    re(r#"\\?"(auth|password|identitytoken|registrytoken)\\?"\s*:\s*\\?"([^"\\]+)\\?""#)
});
/// Maximal runs of token-ish characters; an AWS secret key is exactly one 40-char run.
static RUN: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z0-9/+._-]+"));

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("secrets patterns are valid")
}

/// A pattern that holds `\w`, compiled on first use for the kind of text it meets: Unicode's
/// word class makes an automaton about twenty times as long to build as ASCII's (2 ms instead
/// of 0.1 ms), and one finding in a small file paid for it. On ASCII text `\w` and
/// `[[:word:]]` match the same characters, so an ASCII text is matched with the ASCII classes
/// and any other with the pattern as written.
pub(crate) struct WordPattern {
    pattern: &'static str,
    ascii: std::sync::OnceLock<Regex>,
    unicode: std::sync::OnceLock<Regex>,
}

impl WordPattern {
    pub(crate) const fn new(pattern: &'static str) -> WordPattern {
        WordPattern {
            pattern,
            ascii: std::sync::OnceLock::new(),
            unicode: std::sync::OnceLock::new(),
        }
    }

    /// The regex to match `text` with.
    pub(crate) fn regex(&self, text: &str) -> &Regex {
        if text.is_ascii() {
            // `[[:word:]]` is a class of its own, or a class nested in a class (`[\w.]`
            // becomes `[[[:word:]].]`, their union).
            self.ascii
                .get_or_init(|| re(&self.pattern.replace(r"\w", "[[:word:]]")))
        } else {
            self.unicode.get_or_init(|| re(self.pattern))
        }
    }
}

/// Credential shapes anywhere in free text (a value, a shell script, a config file, a URL).
///
/// Findings are sorted by start and never overlap: a catalogue shape wins over the name model,
/// so `HF_TOKEN=hf_…` is one "huggingface-token" finding.
pub fn scan_text(text: &str) -> Vec<Finding> {
    // The same short strings come back again and again (an image in every document of a
    // stream, a request's values in the objects rendered from it): each is scanned once per
    // thread. The memo holds at most `MEMO_ENTRIES` texts of at most `MEMO_TEXT` bytes.
    if text.len() > MEMO_TEXT {
        return scan(text);
    }
    // A short text without a hint holds nothing (see `scan`): said before the memo's hash.
    if short_and_plain(text) {
        return Vec::new();
    }
    if let Some(found) = MEMO.with(|m| m.borrow().get(text).cloned()) {
        return found;
    }
    let found = scan(text);
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= MEMO_ENTRIES {
            m.clear();
        }
        m.insert(text.into(), found.clone());
    });
    found
}

const MEMO_TEXT: usize = 256;
const MEMO_ENTRIES: usize = 8192;

thread_local! {
    // foldhash: a text is hashed at every lookup, and SipHash took a fifth of a lookup's
    // cost; its per-process seed and the entry bound keep a hostile input from hurting.
    static MEMO: std::cell::RefCell<std::collections::HashMap<Box<str>, Vec<Finding>, foldhash::fast::RandomState>> =
        std::cell::RefCell::default();
}

/// Shorter than any catalogue token (12 characters), without a secret word, a URL password
/// (`@`) or an option (` -`): a text [`scan`] finds nothing in, known without scanning it.
fn short_and_plain(text: &str) -> bool {
    text.len() < 12 && !text.contains('@') && !has_option(text) && !has_secret_hint(text)
}

/// An option after a blank (` -`, as in `mysql -p…`): a byte search, where `contains(" -")`
/// would set a substring searcher up for every short text.
fn has_option(text: &str) -> bool {
    text.as_bytes().windows(2).any(|w| w == b" -")
}

/// [`scan_text`], without the memo.
fn scan(text: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    // The name model needs a name with a secret word: text without one holds no assignment
    // worth parsing.
    let named = has_secret_hint(text);
    // Every catalogue shape needs a token of 12 or more characters, a URL password (`@`) or a
    // PEM block; shorter credentials need a credential name or an option (` -`). Most strings
    // of a manifest (names, short values) have none of these and skip the regexes.
    let longest = text.split_whitespace().map(str::len).max().unwrap_or(0);
    if longest < 12 && !named && !text.contains('@') && !has_option(text) {
        return out;
    }
    // Each regex below runs (and is compiled) only on text that holds its literal.
    structured(text, &mut out);
    if longest >= 12 {
        catalogue(text, &mut out);
    }
    // A bare 40-char key is only an AWS secret shortly after the word "secret" (`aws configure
    // set aws_secret_access_key …`, `"SecretAccessKey": …`): AWS-heavy text is full of 40-char
    // CamelCase names and paths, so "aws" alone is not enough.
    let aws_secret = |m: &regex::Match| is_aws_secret(m.as_str()) && !m.as_str().starts_with('/');
    let runs = (longest >= 40).then(|| RUN.find_iter(text));
    for m in runs.into_iter().flatten().filter(aws_secret) {
        let mut from = m.start().saturating_sub(80);
        while !text.is_char_boundary(from) {
            from += 1;
        }
        let before = text[from..m.start()].to_ascii_lowercase();
        if before.contains("secret") {
            push(&mut out, finding(AWS_SECRET, m.range()));
        }
    }
    named_values(text, named, &mut out);
    out.sort_by_key(|f| f.range.start);
    out
}

/// PEM private keys and the `auth`s of a Docker config.
fn structured(text: &str, out: &mut Vec<Finding>) {
    let pems = text
        .contains("-----BEGIN")
        .then(|| PEM_BEGIN.find_iter(text));
    for begin in pems.into_iter().flatten() {
        // Through the END line, or to the end of a truncated text.
        let end = PEM_END.find_at(text, begin.end());
        let (body_end, key_end) = end.map_or((text.len(), text.len()), |e| (e.start(), e.end()));
        if PEM_BODY.is_match(&text[begin.end()..body_end]) {
            push(out, finding(PRIVATE_KEY, begin.start()..key_end));
        }
    }
    if let Some(auths) = text
        .contains("auths")
        .then(|| DOCKER_AUTHS.find(text))
        .flatten()
    {
        for c in DOCKER_FIELD.captures_iter(&text[auths.end()..]) {
            let m = c.get(2).expect("group 2 always participates");
            let range = auths.end() + m.start()..auths.end() + m.end();
            let real = if &c[1] == "auth" {
                docker_auth_is_real(m.as_str())
            } else {
                dismiss::dismissed(m.as_str()).is_none()
            };
            if real {
                push(out, finding(DOCKER, range));
            }
        }
    }
}

/// The catalogue's token shapes (`ghp_…`, `AKIA…`, URL passwords), those a placeholder or a
/// test value does not explain.
fn catalogue(text: &str, out: &mut Vec<Finding>) {
    for (shape, re) in candidate_shapes(text) {
        for c in re.captures_iter(text) {
            let m = c
                .name("s")
                .or_else(|| c.get(0))
                .expect("a match has group 0");
            // `mailto:user@host` and its kin are addresses, not `user:password@host`.
            let address = c
                .name("u")
                .is_some_and(|u| ["mailto", "sip", "sips", "xmpp", "tel"].contains(&u.as_str()));
            // A URL's signature is a digest of its request: hex of a digest's length is
            // what one looks like, not a reason to dismiss it.
            let safe = match shape == SIGNED_URL {
                true => is_placeholder(m.as_str()),
                false => dismiss::dismissed(m.as_str()).is_some(),
            };
            // A provider token has its provider's length: one glued to more letters or
            // digits is part of a longer run (a digest that starts like `4b1d…`).
            let glued = shape == VENDOR
                && text[m.end()..]
                    .bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_alphanumeric());
            if !address && !safe && !glued {
                push(out, catalogue_finding(shape, m.as_str(), m.range()));
            }
        }
    }
}

/// Values of credential names and options (`PASSWORD=…`, `--token …`, `-p…`), judged by the
/// recognisers.
fn named_values(text: &str, named: bool, out: &mut Vec<Finding>) {
    // Extractors, then the recognisers on what they found.
    let mut candidates: Vec<Candidate> = Vec::new();
    if named && text.contains(['=', ':']) {
        extract::assignments(text, text.contains("--"), &mut candidates);
    } else if named && text.contains("--") {
        extract::assignments(text, true, &mut candidates);
    }
    extract::files(text, &mut candidates);
    // Options need a dash after a blank, and a credential option a secret word or one of the
    // short options and `user:secret` options the argv rules know (`-p`, `-u`, `-a`, `--user`).
    let options = [" -p", " -u", " -a", "-user", "basic-auth"];
    if (has_option(text) && (named || options.iter().any(|o| text.contains(o))))
        || extract::has_positional_tool(text)
    {
        extract::shell(text, &mut candidates);
    }
    for c in candidates {
        if let Some(f) = judge(&c, &text[c.range.clone()], c.range.start) {
            push(out, f);
        }
    }
}

/// One candidate through the recognisers; `base` is the offset of `value` in the scanned text.
fn judge(c: &Candidate, value: &str, base: usize) -> Option<Finding> {
    if c.header {
        let v = value.trim_end_matches(['"', '\'', '\\']);
        let real = v.len() >= 8
            && !dismiss::is_reference(v)
            && dismiss::dismissed(v).is_none()
            && (decode_base64(v).is_none_or(|d| !d.contains(':')) || docker_auth_is_real(v));
        return real.then(|| finding(HEADER, base..base + v.len()));
    }
    name_rule(&c.name, value, base)
}

/// Credentials in an argv given as a list (container `command`/`args`, a request's
/// `command.args` or `config.argv`): option values across elements (`[--token, X]`), glued
/// short options (`-pX`), `user:secret` pairs. Returns `(element index, finding)`, the range
/// inside that element. Each element's own text is for [`scan_text`].
pub fn scan_argv<S: AsRef<str>>(words: &[S]) -> Vec<(usize, Finding)> {
    // Lists without an option or an assignment (ports, names, paths) hold no option value.
    if !words
        .iter()
        .any(|w| w.as_ref().contains(['-', '=']) || extract::is_positional_tool(w.as_ref()))
    {
        return Vec::new();
    }
    let mut out: Vec<(usize, Finding)> = extract::argv(words)
        .into_iter()
        .filter_map(|(i, c)| {
            let word = words[i].as_ref();
            judge(&c, &word[c.range.clone()], c.range.start).map(|f| (i, f))
        })
        .collect();
    out.dedup_by_key(|(i, _)| *i);
    out
}

/// A value assigned to a name (env var name, map key, YAML key, header name). Runs
/// `scan_text`, and also judges the whole value by the name model: a high-entropy value when
/// the name says KEY, TOKEN, SECRET, CREDENTIAL (any case, as a word part: `HF_TOKEN`, `apiKey`),
/// any real value when it says PASSWORD (`DB_PASSWORD: hunter`), unless a dismisser applies.
///
/// Ranges are relative to `value`. A name whose last word is a qualifier (`*_KEY_ID`,
/// `TOKEN_URL`, `PASSWORD_FILE`, `secretName`) or that says PUBLIC/checksum/hash is not a
/// credential name. The whole value must be one word (no whitespace) for the name model; an
/// `Authorization` header's value is judged as one.
pub fn scan_assignment(name: &str, value: &str) -> Vec<Finding> {
    // Most values of a manifest are short words (`Always`, `8080`, `main`): under 12 characters
    // without `@` or a blank, only a password name can make one a credential.
    if value.len() < 12
        && !value.contains(['@', ' '])
        && recognise::name_kind(name) != NameKind::Password
    {
        return Vec::new();
    }
    let mut out = scan_text(value);
    let header = name.eq_ignore_ascii_case("authorization")
        || name.eq_ignore_ascii_case("proxy-authorization");
    let found = if header {
        value.split_once(' ').and_then(|(_, token)| {
            let start = token.as_ptr() as usize - value.as_ptr() as usize;
            let c = Candidate {
                name: name.to_owned(),
                range: start..value.len(),
                header: true,
            };
            judge(&c, token, start)
        })
    } else {
        name_rule(name, value, 0)
    };
    if let Some(f) = found {
        push(&mut out, f);
        out.sort_by_key(|f| f.range.start);
    }
    out
}

/// One entry of a Secret's `data` (decoded) or `stringData`: judged like any assigned value,
/// except that under a credential name any real value counts, as under a password name. The
/// object itself says the author meant it as secret; a CA certificate under `ca.crt`, a flag or
/// a URL without a password under a plain name are not credentials. Ranges are relative to
/// `value`.
pub fn scan_secret_entry(key: &str, value: &str) -> Vec<Finding> {
    let mut out = scan_assignment(key, value);
    if out.is_empty()
        && recognise::name_kind(key) == NameKind::Secret
        && let Some(f) = recognise::named_value(NameKind::Password, key, value, 0)
    {
        out.push(finding(ASSIGNED, f.range));
    }
    out
}

/// Whole values of a Secret's `data` (base64) or `stringData` that are safe to commit: empty,
/// placeholders, SOPS-encrypted, a docker config whose auths are placeholders; `data` is
/// decoded first.
pub fn is_safe_secret_value(value: &str, base64: bool) -> bool {
    let decoded = base64.then(|| decode_base64(value)).flatten();
    let v = decoded.as_deref().unwrap_or(value).trim();
    // A docker config is safe when none of its `auths` holds a real password.
    if v.contains("\"auths\"") {
        return scan_text(v).is_empty();
    }
    v.is_empty() || is_placeholder(v) || matches!(dismiss::dismissed(v), Some("encrypted"))
}

/// Standard or URL-safe base64, when it decodes to UTF-8 text (ConfigMap `binaryData`).
pub fn decode_base64(text: &str) -> Option<String> {
    recognise::decode_base64(text)
}

/// Provider prefixes a mask may show: public (the format's documentation names them), of a
/// fixed length per format, and never a character of the secret's own body.
#[rustfmt::skip]
const PUBLIC_PREFIXES: [&str; 40] = [
    "github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "glpat-", "gldt-", "glrt-", "AKIA",
    "ASIA", "hvs.", "hvb.", "hf_", "nvapi-", "xoxb-", "xoxp-", "xoxa-", "xapp-", "sk_live_",
    "sk_test_", "rk_live_", "sk-proj-", "sk-ant-", "npm_", "pypi-", "AIza", "dop_v1_", "glsa_",
    "glc_", "SG.", "shpat_", "pul-", "dapi", "sntrys_", "sntryu_", "lin_api_", "pnu_", "tskey-",
    "AGE-SECRET-KEY-",
];

/// The public prefix `secret` starts with, when its body is long enough to stay hidden: what
/// [`mask`] shows of it.
pub fn public_prefix(secret: &str) -> Option<&'static str> {
    PUBLIC_PREFIXES
        .iter()
        .find(|p| secret.starts_with(*p) && secret.len() >= p.len() + 8)
        .copied()
}

/// Mask for display: at most the provider's public prefix, then `****`, whatever the length
/// (`ghp_****`, `AKIA****`; `****` for a value without one). No character of the secret's
/// body and not its length.
pub fn mask(secret: &str) -> String {
    format!("{}****", public_prefix(secret).unwrap_or(""))
}

/// `text` with every credential replaced by its [`mask`]: for messages and any text shown
/// whole (offsets change).
pub fn redact_text(text: &str) -> std::borrow::Cow<'_, str> {
    let findings = scan_text(text);
    if findings.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for f in findings {
        out.push_str(&text[last..f.range.start]);
        out.push_str(&mask(&text[f.range.clone()]));
        last = f.range.end;
    }
    out.push_str(&text[last..]);
    std::borrow::Cow::Owned(out)
}

/// `text` with every credential-shaped run masked in place, as [`mask_ranges`] does, so that
/// byte offsets (and so diagnostic spans) stay valid: for code frames.
pub fn redact(text: &str) -> std::borrow::Cow<'_, str> {
    let findings = scan_text(text);
    mask_ranges(text, findings.into_iter().map(|f| f.range))
}

/// `text` with each of `ranges` (sorted, not overlapping, on character boundaries) masked in
/// place: the public prefix kept, every other byte a `*` but line breaks, so that a frame
/// keeps its lines and its offsets.
pub fn mask_ranges(
    text: &str,
    ranges: impl IntoIterator<Item = std::ops::Range<usize>>,
) -> std::borrow::Cow<'_, str> {
    let mut ranges = ranges.into_iter().peekable();
    if ranges.peek().is_none() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for range in ranges {
        let range = range.start.max(last)..range.end.min(text.len());
        if range.start >= range.end
            || !text.is_char_boundary(range.start)
            || !text.is_char_boundary(range.end)
        {
            continue;
        }
        out.push_str(&text[last..range.start]);
        let value = &text[range.clone()];
        let prefix = public_prefix(value).unwrap_or("");
        out.push_str(prefix);
        for c in value[prefix.len()..].chars() {
            if c == '\n' || c == '\r' {
                out.push(c);
            } else {
                out.extend(std::iter::repeat_n('*', c.len_utf8()));
            }
        }
        last = range.end;
    }
    out.push_str(&text[last..]);
    std::borrow::Cow::Owned(out)
}

/// Adds `f` unless it overlaps an earlier (higher-priority) finding.
fn push(out: &mut Vec<Finding>, f: Finding) {
    let overlaps = |o: &Finding| o.range.start < f.range.end && f.range.start < o.range.end;
    if !out.iter().any(overlaps) {
        out.push(f);
    }
}

#[cfg(test)]
mod redact_tests {
    use super::*;

    #[test]
    fn redaction_keeps_offsets_and_hides_the_rest() {
        let key = format!("AKIA{}", "Q".repeat(16));
        let text = format!("a: 1\nkey: {key} # é\n");
        let red = redact(&text);
        assert_eq!(red.len(), text.len());
        assert!(
            !red.contains(&key) && red.contains("AKIA****************"),
            "{red}"
        );
        // Every line of a multi-line credential, and no line break lost.
        let pem = format!(
            "k: |\n  -----BEGIN PRIVATE KEY-----\n  {}\n  -----END PRIVATE KEY-----\n",
            "QUFB".repeat(16)
        );
        let masked = redact(&pem);
        let shape = (masked.len(), masked.lines().count());
        assert_eq!(shape, (pem.len(), pem.lines().count()));
        assert!(
            !masked.contains("QUFBQU") && !masked.contains("BEGIN"),
            "{masked}"
        );
        assert_eq!(
            redact_text(&format!("token {key} end")),
            "token AKIA**** end"
        );
        assert!(red.ends_with(" # é\n"));
        assert!(matches!(
            redact("nothing here"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}

#[cfg(test)]
mod tests {
    /// On ASCII text a word pattern's ASCII classes match exactly as `\w` does; other text is
    /// matched with `\w` itself (a placeholder named in another script is still one).
    #[test]
    fn word_patterns_match_ascii_text_as_unicode_classes_do() {
        let pattern = r"^(?:\{[A-Za-z_][\w.]*\}|%[A-Za-z_]\w*%)$|<([A-Za-z][\w.:-]*)>";
        let words = WordPattern::new(pattern);
        let unicode = re(pattern);
        let texts = [
            "{name}",
            "{a.b_c9}",
            "%NAME%",
            "%A-B%",
            "{9x}",
            "<pass.word>x",
            "<a:b-c>",
            "{}",
            "%_%",
            "{a b}",
            "<>",
            "x{name}",
            "{name}x",
        ];
        let mut texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        // Every printable ASCII character, in every place of a slot.
        for c in (b' '..=b'~').map(char::from) {
            texts.extend([format!("{{a{c}}}"), format!("%a{c}%"), format!("<a{c}>")]);
        }
        for text in &texts {
            assert!(text.is_ascii());
            let found = |r: &regex::Regex| r.find(text).map(|m| m.range());
            assert_eq!(found(words.regex(text)), found(&unicode), "{text:?}");
        }
        assert!(!words.regex("{x}").as_str().contains(r"\w"));
        // Beyond ASCII, `\w` as written: letters of any script.
        for text in ["{pässwort}", "%Nимя%", "<aпароль>"] {
            assert!(words.regex(text).is_match(text), "{text}");
        }
        assert!(dismiss::is_placeholder("{pässwort}"));
    }

    /// The memo answers what a fresh scan answers, and stays within its bound.
    #[test]
    fn the_memo_answers_as_a_scan_and_is_bounded() {
        let text = &format!("HF_TOKEN=hf_{}", "FAKE0".repeat(8));
        assert!(!scan(text).is_empty(), "the sample is a finding");
        assert_eq!(scan_text(text), scan(text));
        assert_eq!(
            scan_text(text),
            scan(text),
            "a second call is answered by the memo"
        );
        for i in 0..MEMO_ENTRIES + 100 {
            // Long enough to be kept, not answered by the short-text test.
            scan_text(&format!("a-longer-value-{i}"));
        }
        assert!(MEMO.with(|m| m.borrow().len()) <= MEMO_ENTRIES);
        assert!(MEMO.with(|m| m.borrow().len()) > 100, "texts are kept");
        let long = "x ".repeat(MEMO_TEXT);
        scan_text(&long);
        assert!(MEMO.with(|m| !m.borrow().contains_key(long.as_str())));
    }

    use super::*;

    #[test]
    fn a_digest_that_starts_like_a_provider_token_is_not_one() {
        // A config spec's sha256 (render puts it in an annotation and an env value) that
        // starts with a provider's prefix: obviously fake, sequential hex.
        let digest = &format!("4b1d{}", "0123456789abcdef".repeat(4))[..64];
        assert_eq!(scan_text(digest), []);
        assert_eq!(
            scan_text(&format!("tao-k8s.io/config-sha256: {digest}")),
            []
        );
        // The token itself, of its provider's length, is still found.
        let token = &digest[..42];
        assert_eq!(scan_text(token).len(), 1, "{token}");
        assert_eq!(scan_text(&format!("key: {token} end")).len(), 1);
    }

    /// 40 distinct sequential chars `A..Q a..m 0..9`: obviously fake, but AWS-secret-shaped.
    fn seq40() -> String {
        ('A'..='Q').chain('a'..='m').chain('0'..='9').collect()
    }

    /// Scans `text`, expecting exactly one finding of `shape` covering `needle`.
    fn hit(text: &str, shape: Shape, needle: &str) {
        let start = text.find(needle).expect("needle in text");
        let found = scan_text(text);
        assert_eq!(found.len(), 1, "{text:?}: {found:?}");
        let want = (shape.0, start..start + needle.len());
        assert_eq!((found[0].kind, found[0].range.clone()), want, "{text:?}");
    }

    #[test]
    fn aws_access_key_id() {
        let key = format!("AKIA{}", "Q".repeat(16));
        hit(&format!("aws_access_key_id = {key}"), AWS_KEY_ID, &key);
        let key = format!("A3TZ{}", "7".repeat(16));
        hit(&format!("id {key}."), AWS_KEY_ID, &key);
        assert_eq!(
            scan_assignment("AWS_ACCESS_KEY_ID", &key),
            [finding(AWS_KEY_ID, 0..20)]
        );
    }

    #[test]
    fn aws_secret_access_key() {
        let key = seq40();
        hit(
            &format!("export AWS_SECRET_ACCESS_KEY={key}"),
            AWS_SECRET,
            &key,
        );
        hit(
            &format!("aws configure set aws_secret_access_key {key}"),
            AWS_SECRET,
            &key,
        );
        let found = scan_assignment("SecretAccessKey", &key);
        assert_eq!(found, [finding(AWS_SECRET, 0..40)]);
    }

    #[test]
    fn ngc_keys() {
        let key = format!("nvapi-{}", "fAkE".repeat(16));
        hit(&format!("NGC_API_KEY: {key}\n"), NGC, &key);
        let legacy = format!("{}AbC=", "FaKe0nGc".repeat(10));
        assert_eq!(
            scan_assignment("NGC_API_KEY", &legacy),
            [finding(NGC, 0..84)]
        );
    }

    #[test]
    fn huggingface_token() {
        let hf = format!("hf_{}", "FAKE0".repeat(8));
        hit(&format!("HF_TOKEN={hf}"), HF, &hf);
    }

    #[test]
    fn github_tokens() {
        let ghp = format!("ghp_{}", "FaKe".repeat(9));
        hit(
            &format!("git clone https://{ghp}@github.com/o/r"),
            GITHUB,
            &ghp,
        );
        let pat = format!("github_pat_{}_{}", "1".repeat(22), "F".repeat(59));
        hit(&format!("GH={pat}"), GITHUB, &pat);
    }

    #[test]
    fn slack_token() {
        let slack = format!("xoxb-{}-{}-{}", 1, "2".repeat(13), "fAkE".repeat(6));
        hit(
            &format!("curl -H 'Authorization: Bearer {slack}'"),
            SLACK,
            &slack,
        );
    }

    #[test]
    fn private_key() {
        let body = "QUFB".repeat(16);
        let pem = format!("-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----");
        hit(&format!("tls.key: |\n{pem}\n"), PRIVATE_KEY, &pem);
        let truncated = format!("-----BEGIN OPENSSH PRIVATE KEY-----\\n{body}");
        hit(&truncated, PRIVATE_KEY, &truncated);
    }

    #[test]
    fn jwt() {
        let jwt = format!(
            "eyJ{}.eyJ{}.{}",
            "A".repeat(20),
            "B".repeat(20),
            "C".repeat(20)
        );
        hit(&format!("Authorization: Bearer {jwt}"), JWT, &jwt);
    }

    #[test]
    fn url_password_masks_only_the_password() {
        hit(
            "postgres://tao:s3cr3t-fake-pw@db:5432/jobs",
            URL_PASSWORD,
            "s3cr3t-fake-pw",
        );
        hit("redis://:fake0pw@cache:6379", URL_PASSWORD, "fake0pw");
    }

    #[test]
    fn docker_config_auths() {
        let auth = "QUFB".repeat(6);
        let json = format!(r#"{{"auths":{{"nvcr.io":{{"auth":"{auth}"}}}}}}"#);
        hit(&json, DOCKER, &auth);
        let escaped = format!(r#"{{\"auths\":{{\"r\":{{\"password\":\"{auth}\"}}}}}}"#);
        hit(&escaped, DOCKER, &auth);
    }

    #[test]
    fn name_rule_in_free_text() {
        let v = "abcd1234abcd1234";
        for text in [
            format!("sh -c 'train --api-token={v} && x'"),
            format!("run --api-key {v} --verbose"),
            format!("{{\"apiKey\":\"{v}\"}}"),
            format!("helm install --set db.apiKey={v} x"),
            format!("annotations: {{example.com/api-key: {v}}}"),
        ] {
            hit(&text, ASSIGNED, v);
        }
    }

    #[test]
    fn name_rule_words_and_threshold() {
        let secret = "abcd1234abcd1234"; // 8 symbols, evenly: exactly 3.0 bits/char
        let names = "HF_TOKEN apiKey SecretKey gcp.credentials APIKEY";
        for name in names.split(' ') {
            assert_eq!(
                scan_assignment(name, secret),
                [finding(ASSIGNED, 0..16)],
                "{name}"
            );
        }
        // 2.58 bits/char; 11 chars; no digits.
        for value in ["abc123abc123abc1", "abcd1234abc", "abcdefghijklmnop"] {
            assert_eq!(scan_assignment("HF_TOKEN", value), [], "{value}");
        }
        for name in ["db-password", "MY_PASSWD"] {
            assert_eq!(scan_assignment(name, secret), [finding(PASSWORD, 0..16)]);
        }
        let names = "monkey keyboard hotkeys GPG_KEY_ID TOKEN_URL PASSWORD_FILE secretName \
            secretKeyRef PUBLIC_KEY checksum/secret value --password-stdin";
        for name in names.split_whitespace() {
            assert_eq!(scan_assignment(name, secret), [], "{name}");
        }
        let found = scan_assignment("HF_TOKEN", &format!(" \"{secret}\" "));
        assert_eq!(found, [finding(ASSIGNED, 2..18)]);
        let licence = "ABCD-1234-EFGH-5678";
        assert_eq!(
            scan_assignment("LICENSE_KEY", licence),
            [finding(ASSIGNED, 0..19)]
        );
    }

    #[test]
    fn near_misses() {
        let hex40 = &"0123456789abcdef".repeat(3)[..40];
        let hex64 = "0123456789abcdef".repeat(4);
        let uuid = "12345678-1234-4abc-8def-123456789abc";
        let fixed = [
            "- name: HF_TOKEN\n  valueFrom:\n    secretKeyRef:\n      name: hf-token-secret\n      key: token\n",
            "HF_TOKEN=$(HF_TOKEN) NGC_API_KEY=${NGC_API_KEY} PASSWORD=\"$(cat /run/secrets/pw)\"",
            "name: tao-train-resnet18-7f9c2\nexistingSecret: ngc-api-key-2024\nsecretName: tao-creds-v2",
            "python /workspace/tao/train.py --model_key=NGC_API_KEY_2 --results_dir /results/run1",
            "https://nvcr.io/v2/nvidia/tao ssh://git@github.com:22/o/r https://user@host/x https://:@h",
            "https://tao:${DB_PASSWORD}@db/x https://tao:$(DB_PASSWORD)@db/x https://tao:****@db",
            "{\"u\":\"http://host:8080\",\"e\":\"a@b.io\"}",
            "aws_access_key_id=AKIAIOSFODNN7EXAMPLE",
            "PASSWORD=changeme API_KEY=<your-key> TOKEN=xxxxxxxx SECRET=*** PASSWORD=REDACTED PASS=abc",
            "monkey=abcd1234abcd1234 keyboard: abcd1234abcd1234",
            "GPG_KEY_ID=ABCDEF0123456789 KMS_KEY_ID=arn:aws:kms:us-east-1:123456789012:key/abcd1234",
            "TOKEN_URL=https://auth.example.io/oauth2/token PASSWORD_FILE=/run/secrets/x",
            "SSL_KEY=certs/tls2.key S3_KEY=models/resnet18/v2 TOKEN=secrets/hf-2",
            "grep -q '-----BEGIN RSA PRIVATE KEY-----' k.pem; -----BEGIN PUBLIC KEY-----\nQUFBQUFBQUFBQUFBQUFB\n",
            "{\"auths\":{\"nvcr.io\":{\"auth\":\"\"}},\"credsStore\":\"desktop\"}",
            "hf_short ghp_short nvapi-short xoxb-1 eyJhbGci.eyJ.x AKIA1234",
            "HF_TOKEN=ABCDEFGHIJKLMNOP docker login --password-stdin nvcr.io",
            "key: project-cache-v2-{{ checksum \"Cargo.lock\" }}\nsecretKeyRef: {key: awsSecretAccessKey2}",
            "\"result_key\": \"PublicIpv4Pools\", \"PasswordLastUsed\": \"2016-09-08T20:00:00Z\"",
            "arn:aws:secretsmanager:us-west-2:123456789012:secret:MyTestDatabaseSecret-a1b2c3",
            "AWS_KEY_POLICY=arn:aws:iam::aws:policy/AWSCompromisedKeyQuarantineV2",
        ];
        let built = [
            format!(
                "image: nvcr.io/nvidia/tao/tao-toolkit@sha256:{hex64} CACHE_KEY=sha256:{hex64}"
            ),
            format!("checksum/secret: {hex64}\nrun-id {uuid} RUN_KEY={uuid}"),
            format!("git checkout {hex40} && COMMIT={hex40}"),
            format!("checksum {} here", seq40()), // AWS-shaped, but no aws/secret word nearby
            format!("aws s3 cp --checksum {} s3://b/", seq40()), // "aws" alone is not enough
        ];
        for text in fixed.into_iter().map(str::to_owned).chain(built) {
            assert_eq!(scan_text(&text), [], "{text:?}");
        }
    }

    /// Formats with no credential name beside them, and names the model did not read: each
    /// text holds one credential, `secret`.
    #[test]
    fn formats_found_by_their_place() {
        let sas = "sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-12-31T00:00:00Z&sig=FAKEa8Jx2kq0%2BzR4nT7vQ1mYw3Lp9sD6cE5fG8hU0iB%3D";
        let sig = "FAKEa8Jx2kq0%2BzR4nT7vQ1mYw3Lp9sD6cE5fG8hU0iB%3D";
        let discord = "https://discord.com/api/webhooks/112233445566778899/FAKEx9Kq2Lm4Np6Rs8Tu0Vw1Xy3Za5Bc7De9Fg2Hi4Jk6Lm8No0Pq2Rs4Tu6Vw8Xy0";
        let teams = "https://acme.webhook.office.com/webhookb2/5f0c8a3e-2b7d-4c91-9e6a-1d3f5b7c9e21@0c9d7e5a-3f1b-4d8e-a2c6-7b9e1f3d5a80/IncomingWebhook/FAKE9c1d2e3f4a5b6c7d8e9f0a1b2c3d4e/7e4b1c9d-5a2f-4e8b-b3d6-0f1a2c4e6b8d";
        let tg = "123456789:AAFAKE0kq2Lm4Np6Rs8Tu0Vw1Xy3Za5Bc7D";
        let vault = format!("hvs.FAKE{}", "x9Kq2Lm4Np6Rs8Tu0Vw1Xy3Z".repeat(4));
        let table: Vec<(String, &str)> = vec![
            (format!("https://acct.blob.core.windows.net/c?{sas}"), sig),
            (format!("curl -X POST {discord}"), discord),
            (format!("url: {teams}"), teams),
            ("kubeadm join 10.0.0.1:6443 --token abcdef.0fake1fake2fake3 --discovery-token-ca-cert-hash sha256:0123".into(), "abcdef.0fake1fake2fake3"),
            ("%any 10.0.0.2 : PSK \"FAKE-psk-2b7d4c91\"".into(), "FAKE-psk-2b7d4c91"),
            ("registry=https://npm.internal/\n_auth=ZmFrZXVzZXI6RkFLRXB3OTk=\n".into(), "ZmFrZXVzZXI6RkFLRXB3OTk="),
            ("bind 0.0.0.0\nrequirepass FAKEredis99\nappendonly yes\n".into(), "FAKEredis99"),
            ("[OUTPUT]\n    Name  http\n    HTTP_User  shipper\n    HTTP_Passwd  FAKEship99\n".into(), "FAKEship99"),
            ("htpasswd -b -c /etc/nginx/.htpasswd admin FAKEhtpw99".into(), "FAKEhtpw99"),
            ("proxy_set_header Authorization \"Basic ZmFrZXVzZXI6RkFLRXB3OTk=\";".into(), "ZmFrZXVzZXI6RkFLRXB3OTk="),
            (format!("vault login {vault}"), vault.as_str()),
            ("vault login -no-print s.FAKE9kq2Lm4Np6Rs8Tu0Vw1X".into(), "s.FAKE9kq2Lm4Np6Rs8Tu0Vw1X"),
            (format!("curl https://api.telegram.org/bot{tg}/sendMessage"), tg),
            ("mc alias set minio http://minio:9000 FAKEACCESS99 FAKEsecret0minio99".into(), "FAKEsecret0minio99"),
            ("nfs.server: admin:FAKEnfs99@nfs.lab.internal".into(), "FAKEnfs99"),
            ("image: deploy:FAKEimg99@registry.acme.io/app:1.0".into(), "FAKEimg99"),
        ];
        for (text, secret) in &table {
            let start = text.find(secret).expect("secret in text");
            let found = scan_text(text);
            assert!(
                found
                    .iter()
                    .any(|f| f.range == (start..start + secret.len())),
                "{text:?}: {found:?}"
            );
        }
    }

    /// Values that look like credentials, or sit under credential names, and are not.
    #[test]
    fn safe_values_stay_quiet() {
        let texts = [
            "PASSWORD_HASHER: argon2id",
            "PASSWORD_REGEX: ^(?=.*[A-Z])(?=.*[0-9]).{12,}$",
            "DB_PASSWORD=#{DbPassword}#",
            "API_KEY: {{ .Values.apiKey }}",
            "SECRET_KEY = %(secret_key)s",
            "token: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
            "STRIPE_KEY=sk_test_4eC39HqLyjWDarjtT1zdp7dc",
            "POSTHOG_KEY=phc_FAKE0kq2Lm4Np6Rs8Tu0Vw1Xy3Za5Bc7De9Fg2",
            "contact: mailto:ops@acme.io",
            "image: nginx:1.25@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "git clone git@github.com:acme/repo.git",
            "htpasswd -c /etc/nginx/.htpasswd admin",
            "vault login -method=oidc",
        ];
        for text in texts {
            assert_eq!(scan_text(text), [], "{text:?}");
        }
    }

    #[test]
    fn findings_do_not_overlap_and_are_sorted() {
        let hf = format!("hf_{}", "FAKE0".repeat(8));
        let found = scan_text(&format!("TOKEN=abcd1234abcd1234\nHF_TOKEN={hf}\n"));
        assert_eq!(found, [finding(ASSIGNED, 6..22), finding(HF, 32..75)]);
    }

    #[test]
    fn masks_show_a_public_prefix_at_most_and_never_the_length() {
        assert_eq!(mask("abc"), "****");
        assert_eq!(mask("abcdefgh"), "****");
        assert_eq!(mask("ééééxyz1"), "****");
        assert_eq!(mask(&format!("ghp_{}", "F".repeat(36))), "ghp_****");
        assert_eq!(mask(&format!("ghp_{}", "F".repeat(90))), "ghp_****");
        assert_eq!(mask("ghp_short"), "****");
        assert_eq!(mask(&format!("AKIA{}", "Q".repeat(16))), "AKIA****");
    }
}
