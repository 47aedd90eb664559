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

use regex::Regex;
use std::ops::Range;
use std::sync::LazyLock;

/// One credential-shaped run inside a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Stable short id of the shape, e.g. "aws-access-key-id", "ngc-api-key", "private-key",
    /// "assigned-secret".
    pub kind: &'static str,
    /// Human description, e.g. "an AWS access key id".
    pub what: &'static str,
    /// Byte range of the credential inside the scanned text.
    pub range: Range<usize>,
}

/// A shape's stable id and description.
type Shape = (&'static str, &'static str);
const URL_PASSWORD: Shape = ("url-password", "a password in a URL");
const AWS_KEY_ID: Shape = ("aws-access-key-id", "an AWS access key id");
const AWS_SECRET: Shape = ("aws-secret-access-key", "an AWS secret access key");
const NGC: Shape = ("ngc-api-key", "an NGC API key");
const HF: Shape = ("huggingface-token", "a Hugging Face token");
const GITHUB: Shape = ("github-token", "a GitHub token");
const SLACK: Shape = ("slack-token", "a Slack token");
const JWT: Shape = ("jwt", "a JSON Web Token");
const PRIVATE_KEY: Shape = ("private-key", "a PEM private key");
const DOCKER: Shape = ("docker-config-auth", "a docker config registry auth");
const ASSIGNED: Shape = ("assigned-secret", "a secret assigned to a credential name");

/// Shapes recognised by their own prefix/structure. A `(?P<s>…)` group narrows the finding (a
/// URL's password only); otherwise the whole match is the credential. Earlier entries win.
/// Unsigned JWTs (`alg: none`) have an empty third segment and are still bearer tokens.
#[rustfmt::skip]
const SHAPES: [(Shape, &str); 7] = [
    (URL_PASSWORD, r#"[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@]*:(?P<s>[^\s/?#"'<>`\\]+)@"#),
    (AWS_KEY_ID, r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    (NGC, r"\bnvapi-[A-Za-z0-9_-]{40,}"),
    (HF, r"\bhf_[A-Za-z0-9]{34,}\b"),
    (GITHUB, r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b"),
    (SLACK, r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    (JWT, r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*"),
];
/// A value in `name=value` / `name: value` / `--name value`: quoted, or a bare run up to a shell
/// or flow-collection delimiter.
const VALUE: &str = r#"(?:"([^"\n]*)"|'([^'\n]*)'|([^\s"'`;&|,}\]]+))"#;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("secrets.rs patterns are valid")
}

/// All shapes at once: one pass tells which of them can match at all.
static SHAPE_SET: LazyLock<regex::RegexSet> = LazyLock::new(|| {
    regex::RegexSet::new(SHAPES.iter().map(|s| s.1)).expect("secrets.rs patterns are valid")
});
static SHAPE_RES: LazyLock<Vec<Regex>> = LazyLock::new(|| SHAPES.iter().map(|s| re(s.1)).collect());
static PEM_BEGIN: LazyLock<Regex> =
    LazyLock::new(|| re(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"));
static PEM_END: LazyLock<Regex> =
    LazyLock::new(|| re(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"));
/// Base64 right after the header (past newlines, escaped `\n`s and `Proc-Type:`-style lines):
/// a bare header, as in `grep "BEGIN RSA PRIVATE KEY"`, is not a key.
static PEM_BODY: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^(?:\s|\\[nr])*(?:[A-Za-z-]+: [^\n\\]*(?:\s|\\[nr])+)*[A-Za-z0-9+/=]{20,}")
});
/// Docker config JSON, possibly escaped inside another string (`{\"auths\": …}`).
static DOCKER_AUTHS: LazyLock<Regex> = LazyLock::new(|| re(r#"\\?"auths\\?"\s*:\s*\{"#));
static DOCKER_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    re(r#"\\?"(?:auth|password|identitytoken|registrytoken)\\?"\s*:\s*\\?"([^"\\]+)\\?""#)
});
/// Maximal runs of token-ish characters; an AWS secret key is exactly one 40-char run.
static RUN: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z0-9/+._-]+"));
/// `name=value`, `name: value`, `name := value`, `"name": "value"` inside free text: groups
/// name, separator, value. Names may hold `/` for annotation keys (`example.com/api-key`).
static ASSIGN: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r#"([A-Za-z_][A-Za-z0-9_./-]*)(["']?[ \t]*(?::=|=|:))[ \t]*{VALUE}"#
    ))
});
/// `--name value` flags (`--name=value` is `ASSIGN`), with the same groups.
static FLAG: LazyLock<Regex> =
    LazyLock::new(|| re(&format!(r"--([A-Za-z][A-Za-z0-9_.-]*)([ \t]+){VALUE}")));
static REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^(?:\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_][A-Za-z0-9_]*|\{\{.*\}\}|%\{[^}]*\})$")
});
/// Lowercase words joined by `-`, `.` or `_` (Kubernetes names, UUIDs, snake_case keys) or an
/// env var name (`NGC_API_KEY_2`). Random tokens mix case, so they never match; uppercase groups
/// joined by `-` (`ABCD-1234-…` licence keys) are not exempt.
static IDENTIFIER: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(?:[a-z0-9]+(?:[-._][a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)$"));
/// Digests and timestamps (`PasswordLastUsed: 2016-09-08T20:…`) are data, not secrets.
static DIGEST_OR_DATE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?:sha256|sha384|sha512|sha1|md5):[0-9a-f]{32,}|^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ]|$)")
});

/// Name words that say the value is a credential (compound words cover `APIKEY`, `SECRETKEY`).
const SECRET_WORDS: &str = "key keys token tokens secret secrets password passwords passwd pass \
    passphrase credential credentials creds apikey secretkey accesskey privatekey authtoken \
    accesstoken";
/// Name words that make the value *about* a credential: as the last word (`KMS_KEY_ID`,
/// `TOKEN_URL`, `PASSWORD_FILE`, `secretName`, `secretKeyRef`) ...
const QUALIFIERS: &str = "id ids name names file files path paths dir url uri endpoint host port \
    ref arn type kind mode length len size bits algorithm alg format header prefix field version \
    ttl expiry region mount namespace selector count enabled stdin";
/// ... or anywhere (`checksum/secret` holds a hash, `PUBLIC_KEY` is public).
const NOT_SECRET_WORDS: &str = "public pub checksum hash digest sha sha1 sha256 fingerprint";
/// Whole values (any case) that are placeholders.
const PLACEHOLDER_WORDS: &str = "dummy tbd fixme none null nil undefined n/a na test fake secret \
    password token changeit sample foo bar foobar empty unset";
/// Parts that make any value a placeholder (`AKIA…EXAMPLE`, `paste-your-key`, `abcd****`).
const PLACEHOLDER_PARTS: &str = "xxxx *** changeme change_me change-me redacted placeholder \
    example replaceme replace_me replace-me your_ your- yourkey yourtoken";

fn listed(list: &str, word: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}

fn finding((kind, what): Shape, range: Range<usize>) -> Finding {
    Finding { kind, what, range }
}

/// Credential shapes anywhere in free text (a value, a shell script, a config file, a URL).
///
/// Findings are sorted by start and never overlap: a shape wins over the name rule, so
/// `HF_TOKEN=hf_…` is one "huggingface-token" finding.
pub fn scan_text(text: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    // Every shape needs a token of 12 or more characters, a URL password (`@`) or a PEM
    // block: most strings of a manifest (names, short values) have none, and skip the regexes.
    let longest = text.split_whitespace().map(str::len).max().unwrap_or(0);
    if longest < 12 && !text.contains('@') && !text.contains("-----") {
        return out;
    }
    for begin in PEM_BEGIN.find_iter(text) {
        // Through the END line, or to the end of a truncated text.
        let end = PEM_END.find_at(text, begin.end());
        let (body_end, key_end) = end.map_or((text.len(), text.len()), |e| (e.start(), e.end()));
        if PEM_BODY.is_match(&text[begin.end()..body_end]) {
            push(&mut out, finding(PRIVATE_KEY, begin.start()..key_end));
        }
    }
    if let Some(auths) = DOCKER_AUTHS.find(text) {
        for c in DOCKER_FIELD.captures_iter(&text[auths.end()..]) {
            let m = c.get(1).expect("group 1 always participates");
            let range = auths.end() + m.start()..auths.end() + m.end();
            if !is_placeholder(m.as_str()) {
                push(&mut out, finding(DOCKER, range));
            }
        }
    }
    for i in SHAPE_SET.matches(text).iter() {
        let ((shape, _), re) = (&SHAPES[i], &SHAPE_RES[i]);
        for c in re.captures_iter(text) {
            let m = c
                .name("s")
                .or_else(|| c.get(0))
                .expect("a match has group 0");
            if !is_placeholder(m.as_str()) {
                push(&mut out, finding(*shape, m.range()));
            }
        }
    }
    // A bare 40-char key is only an AWS secret shortly after the word "secret" (`aws configure
    // set aws_secret_access_key …`, `"SecretAccessKey": …`): AWS-heavy text is full of 40-char
    // CamelCase names and paths, so "aws" alone is not enough.
    let aws_secret = |m: &regex::Match| is_aws_secret(m.as_str()) && !m.as_str().starts_with('/');
    for m in RUN
        .find_iter(text)
        .filter(|m| longest >= 40 && aws_secret(m))
    {
        let mut from = m.start().saturating_sub(80);
        while !text.is_char_boundary(from) {
            from += 1;
        }
        let before = text[from..m.start()].to_ascii_lowercase();
        if before.contains("secret") {
            push(&mut out, finding(AWS_SECRET, m.range()));
        }
    }
    // The name rule needs a name with a secret word, and every one of SECRET_WORDS contains one
    // of these: text without them holds no assignment worth parsing.
    let lower = text.to_ascii_lowercase();
    let named = ["key", "token", "secret", "pass", "cred"]
        .iter()
        .any(|w| lower.contains(w));
    let assignments = named && text.contains(['=', ':']);
    let flags = named && text.contains("--");
    for (re, is_flag) in [(&*ASSIGN, false), (&*FLAG, true)]
        .into_iter()
        .filter(|(_, f)| if *f { flags } else { assignments })
    {
        let mut at = 0;
        while let Some(c) = re.captures_at(text, at) {
            let group = |i| c.get(i).expect("name and separator always participate");
            let (name, sep) = (group(1).as_str(), group(2));
            let value = (3..=5)
                .find_map(|i| c.get(i))
                .expect("one value group participates");
            // A colon needs a space (YAML) or quotes (JSON): `arn:aws:…:secret:x`, `host:port`.
            let tight_colon =
                sep.as_str() == ":" && c.get(5).is_some() && value.start() == sep.end();
            // In `--token --verbose` the "value" is the next flag.
            let next_flag = is_flag && value.as_str().starts_with('-');
            if !tight_colon
                && !next_flag
                && let Some(f) = name_rule(name, value.as_str(), value.start())
            {
                push(&mut out, f);
            }
            // Resume inside the value, so `--set HF_TOKEN=…` still sees the inner assignment.
            at = value.start();
        }
    }
    out.sort_by_key(|f| f.range.start);
    out
}

/// A value assigned to a name (env var name, map key, YAML key). Runs `scan_text`, and also flags
/// a high-entropy value when the name says KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL (any
/// case, as a word part: `HF_TOKEN`, `apiKey`, `db-password`), unless the value is a placeholder
/// or reference.
///
/// Ranges are relative to `value`. A name whose last word is a qualifier (`*_KEY_ID`,
/// `TOKEN_URL`, `PASSWORD_FILE`, `secretName`) or that says PUBLIC/checksum/hash is not a
/// credential name. The whole value must be one word (no whitespace) for the name rule.
pub fn scan_assignment(name: &str, value: &str) -> Vec<Finding> {
    let mut out = scan_text(value);
    if let Some(f) = name_rule(name, value, 0) {
        push(&mut out, f);
        out.sort_by_key(|f| f.range.start);
    }
    out
}

/// True for values that are obviously not real credentials: empty, `changeme`, `<your-key>`,
/// `${VAR}`, `$(VAR)`, `xxx...`, `***`, `REDACTED`, `dummy`, `example`, values ending in `EXAMPLE`
/// (AWS docs), `your-...`, `TODO`, etc.
///
/// Surrounding quotes and whitespace are ignored; one repeated char (`xxx`, `000`), `$VAR` and
/// `{{ … }}` templates count, and so does our own [`mask`] output (it has `****`). Bare common
/// words (`password`, `secret`, `test`) count too: they are defaults, not leaked credentials.
pub fn is_placeholder(value: &str) -> bool {
    let v = value.trim().trim_matches(['"', '\'']).trim();
    let lower = v.to_ascii_lowercase();
    let mut chars = v.chars();
    let first = chars.next();
    first.is_none()
        || chars.all(|c| Some(c) == first)
        || REFERENCE.is_match(v)
        || (v.starts_with('<') && v.ends_with('>'))
        || lower.starts_with("todo")
        || listed(PLACEHOLDER_WORDS, &lower)
        || PLACEHOLDER_PARTS
            .split_whitespace()
            .any(|p| lower.contains(p))
}

/// Mask for display: the first 4 characters, then `****` (fewer than 8 chars: only `****`).
/// Works on char boundaries (unicode-safe).
pub fn mask(secret: &str) -> String {
    if secret.chars().count() < 8 {
        return "****".to_owned();
    }
    secret.chars().take(4).chain("****".chars()).collect()
}

/// `text` with every credential-shaped run masked in place: its first 4 characters kept, every
/// other byte replaced by `*`, so that byte offsets (and so diagnostic spans) stay valid.
/// Used wherever source text is shown, such as code frames.
pub fn redact(text: &str) -> std::borrow::Cow<'_, str> {
    let findings = scan_text(text);
    mask_ranges(text, findings.into_iter().map(|f| f.range))
}

/// `text` with each of `ranges` (sorted, not overlapping, on character boundaries) masked in
/// place as [`redact`] does.
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
        for (i, c) in text[range.clone()].chars().enumerate() {
            if i < 4 && range.len() >= 8 {
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

/// 40 chars of base64 with upper, lower and digit and >= 4 bits/char: a git hash (hex, no
/// uppercase) never qualifies; a random AWS key (~5 bits/char) nearly always does.
fn is_aws_secret(v: &str) -> bool {
    v.len() == 40
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'/' || b == b'+')
        && [
            u8::is_ascii_uppercase,
            u8::is_ascii_lowercase,
            u8::is_ascii_digit,
        ]
        .iter()
        .all(|class| v.bytes().any(|b| class(&b)))
        && entropy(v) >= 4.0
        && !is_placeholder(v)
}

/// The name rule for one assignment; `base` is the byte offset of `value` in the scanned text.
fn name_rule(name: &str, value: &str, base: usize) -> Option<Finding> {
    // Every outcome below needs 12 characters or more: skip the name's words for short values.
    if value.trim().trim_matches(['"', '\'']).len() < 12 {
        return None;
    }
    let words = name_words(name);
    let has = |w: &str| words.iter().any(|x| x == w);
    if !words.iter().any(|w| listed(SECRET_WORDS, w))
        || words.last().is_some_and(|w| listed(QUALIFIERS, w))
        || words.iter().any(|w| listed(NOT_SECRET_WORDS, w))
    {
        return None;
    }
    let v = value.trim().trim_matches(['"', '\'']);
    let start = base + (v.as_ptr() as usize - value.as_ptr() as usize);
    let range = start..start + v.len();
    if v.contains(char::is_whitespace) || is_placeholder(v) || is_reference(v) {
        return None;
    }
    if has("secret") && (has("aws") || has("access")) && is_aws_secret(v) {
        return Some(finding(AWS_SECRET, range));
    }
    // Legacy NGC keys: ~84 base64 chars with no prefix, only recognisable by the name.
    let base64 = v
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b));
    if has("ngc") && (80..=90).contains(&v.len()) && base64 {
        return Some(finding(NGC, range));
    }
    // Threshold: >= 12 chars, >= 3.0 bits/char (Shannon), letters and digits. Random keys of that
    // length measure 3.3-3.6 (the max for 12 chars is log2 12 = 3.58) and nearly always mix
    // letters and digits; words and repetitive values (`abc123abc123`: 2.58) stay below.
    // Kubernetes names, UUIDs, env var names, camelCase words, digests and dates are not secrets.
    let mixed =
        v.contains(|c: char| c.is_ascii_alphabetic()) && v.contains(|c: char| c.is_ascii_digit());
    let identifier = IDENTIFIER.is_match(v) || is_camel_words(v) || DIGEST_OR_DATE.is_match(v);
    (v.len() >= 12 && mixed && entropy(v) >= 3.0 && !identifier).then(|| finding(ASSIGNED, range))
}

/// camelCase/PascalCase words (`awsSecretAccessKey2`, `PublicIpv4Pools`, a `secretKeyRef.key`):
/// uppercase, at least half lowercase, and no lone lowercase letter. Random mixed-case keys have
/// lone lowercase letters between capitals and digits.
fn is_camel_words(v: &str) -> bool {
    let lower = v.bytes().filter(u8::is_ascii_lowercase).count();
    v.contains(|c: char| c.is_ascii_uppercase())
        && lower * 2 >= v.len()
        && !v
            .split(|c: char| !c.is_ascii_lowercase())
            .any(|run| run.len() == 1)
}

/// References to a secret rather than the secret: shell expansions, templates (anywhere in the
/// value: `cache-{{ checksum }}`), AWS ARNs, paths, URLs (a URL password has its own shape).
fn is_reference(v: &str) -> bool {
    ["${", "$(", "{{", "<<", "://"].iter().any(|p| v.contains(p))
        || v.starts_with('$')
        || v.starts_with("arn:")
        || ["/", "./", "../", "~/"].iter().any(|p| v.starts_with(p))
        // Base64 has `/` but never `.`, `-`, `_`, `~`, and random keys have uppercase.
        || (v.contains('/')
            && (v.contains(['.', '-', '_', '~']) || !v.contains(|c: char| c.is_ascii_uppercase())))
}

/// Lowercase words of a name, split at `_`, `-`, `.` (any non-alphanumeric) and camelCase
/// boundaries: `apiKey` -> [api, key], `HFToken` -> [hf, token], `monkey` -> [monkey].
fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| !p.is_empty())
    {
        let b = part.as_bytes();
        let mut start = 0;
        for i in 1..b.len() {
            let lower_to_upper = !b[i - 1].is_ascii_uppercase() && b[i].is_ascii_uppercase();
            let acronym_end = b[i - 1].is_ascii_uppercase()
                && b[i].is_ascii_uppercase()
                && b.get(i + 1).is_some_and(u8::is_ascii_lowercase);
            if lower_to_upper || acronym_end {
                words.push(part[start..i].to_ascii_lowercase());
                start = i;
            }
        }
        words.push(part[start..].to_ascii_lowercase());
    }
    words
}

/// Shannon entropy in bits per char.
fn entropy(v: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in v.chars() {
        *counts.entry(c).or_insert(0u32) += 1;
    }
    let n = v.chars().count() as f64;
    counts
        .values()
        .map(|&k| f64::from(k) / n)
        .map(|p| -p * p.log2())
        .sum()
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
        assert!(red.ends_with(" # é\n"));
        assert!(matches!(
            redact("nothing here"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            format!("sh -c 'train --password={v} && x'"),
            format!("run --api-key {v} --verbose"),
            format!("{{\"apiKey\":\"{v}\"}}"),
            format!("helm install --set db.password={v} x"),
            format!("annotations: {{example.com/api-key: {v}}}"),
        ] {
            hit(&text, ASSIGNED, v);
        }
    }

    #[test]
    fn name_rule_words_and_threshold() {
        let secret = "abcd1234abcd1234"; // 8 symbols, evenly: exactly 3.0 bits/char
        let names = "HF_TOKEN apiKey db-password MY_PASSWD SecretKey gcp.credentials APIKEY";
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
    fn placeholders() {
        let yes = "|  |changeme|<your-key>|${HF_TOKEN}|$(HF_TOKEN)|$HF_TOKEN|{{ .Values.key }}|xxx|\
            XXXXXXXX|***|REDACTED|dummy|example|AKIAIOSFODNN7EXAMPLE|your-api-key|TODO|abcd****";
        for v in yes.split('|') {
            assert!(is_placeholder(v), "{v:?}");
        }
        for v in ["abcd1234abcd1234", "FAKE0FAKE0", "monkey"] {
            assert!(!is_placeholder(v), "{v:?}");
        }
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
            "PASSWORD=abcd123abcd123 HF_TOKEN=ABCDEFGHIJKLMNOP docker login --password-stdin nvcr.io",
            "key: project-cache-v2-{{ checksum \"Cargo.lock\" }}\nsecretKeyRef: {key: awsSecretAccessKey2}",
            "\"result_key\": \"PublicIpv4Pools\", \"PasswordLastUsed\": \"2016-09-08T20:00:00Z\"",
            "arn:aws:secretsmanager:us-west-2:123456789012:secret:MyTestDatabaseSecret-a1b2c3",
            "AWS_KEY_POLICY=arn:aws:iam::aws:policy/AWSCompromisedKeyQuarantineV2",
        ];
        let built = [
            format!(
                "image: nvcr.io/nvidia/tao/tao-toolkit@sha256:{hex64} CACHE_KEY=sha256:{hex64}"
            ),
            format!("checksum/secret: {hex64}\nrun-id {uuid} API_KEY={uuid}"),
            format!("git checkout {hex40} && COMMIT={hex40}"),
            format!("checksum {} here", seq40()), // AWS-shaped, but no aws/secret word nearby
            format!("aws s3 cp --checksum {} s3://b/", seq40()), // "aws" alone is not enough
        ];
        for text in fixed.into_iter().map(str::to_owned).chain(built) {
            assert_eq!(scan_text(&text), [], "{text:?}");
        }
    }

    #[test]
    fn findings_do_not_overlap_and_are_sorted() {
        let hf = format!("hf_{}", "FAKE0".repeat(8));
        let found = scan_text(&format!("TOKEN=abcd1234abcd1234\nHF_TOKEN={hf}\n"));
        assert_eq!(found, [finding(ASSIGNED, 6..22), finding(HF, 32..75)]);
    }

    #[test]
    fn mask_is_unicode_safe() {
        assert_eq!(mask("abc"), "****");
        assert_eq!(mask("abcdefg"), "****");
        assert_eq!(mask("abcdefgh"), "abcd****");
        assert_eq!(mask("ééééxyz1"), "éééé****");
    }
}
