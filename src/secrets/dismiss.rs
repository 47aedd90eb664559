//! Dismissers: values that look like a credential but are safe to commit.
//!
//! Four families, each a reason a recogniser's candidate is dropped: *encrypted* (SOPS
//! `ENC[...]`, age and PGP armored messages; a SealedSecret's `encryptedData` is dismissed by
//! its place, in the lint rule), *public by design* (Stripe `pk_`, reCAPTCHA site keys, SSH
//! public keys), *digests and ids* (hex digests, `sha256:` values, UUIDs, ULIDs, dates,
//! Kubernetes-style names) and *placeholders and references* (`<your-token>`, `${TOKEN}`,
//! `changeme`, `REPLACE_ME`, values ending in EXAMPLE). Placeholders stay silent: they are what a
//! template or a README is supposed to hold, and a note for each would bury real findings.

use super::WordPattern;
use regex::Regex;
use std::sync::LazyLock;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("dismiss.rs patterns are valid")
}

/// Whole values that are a template's slot: shell and Kubernetes expansions, Go/Helm/Jinja
/// templates, Octopus `#{Name}`, Python `%(name)s` and `{name}`, Windows `%NAME%`, `@NAME@`
/// and `__NAME__` token-replacement markers.
static REFERENCE: WordPattern = WordPattern::new(
    r"^(?:\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_][A-Za-z0-9_]*|\{\{.*\}\}|%\{[^}]*\}|#\{[^}]*\}#?|%\([A-Za-z_][\w.]*\)[sdr]|\{[A-Za-z_][\w.]*\}|%[A-Za-z_]\w*%|@[A-Za-z_]\w*@|__[A-Za-z_]\w*__)$",
);
/// Values published in documentation as examples, safe by being public: the jwt.io sample
/// token's signature, Stripe's documented test keys, AWS's EXAMPLE keys (caught by EXAMPLE).
const DOC_EXAMPLES: [&str; 3] = [
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    "sk_test_BQokikJOvBiI2HlWgH4olfQ2",
];
/// Lowercase words joined by `-`, `.` or `_` (Kubernetes names, UUIDs, snake_case keys) or an
/// env var name (`NGC_API_KEY_2`). Random tokens mix case, so they never match; uppercase groups
/// joined by `-` (`ABCD-1234-…` licence keys) are not exempt.
static IDENTIFIER: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(?:[a-z0-9]+(?:[-._][a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)$"));
/// Digests and timestamps (`PasswordLastUsed: 2016-09-08T20:…`) are data, not secrets.
static DIGEST_OR_DATE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?:sha256|sha384|sha512|sha1|md5):[0-9a-f]{32,}|^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ]|$)")
});
/// A UUID (any case) or a ULID (Crockford base32, 26 characters, timestamp-first).
static UUID_OR_ULID: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:(?i:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})|[0-7][0-9A-HJKMNP-TV-Z]{25})$",
    )
});
/// A UUID inside a longer value (`access-sandbox-<uuid>`): a prefixed key, not a name.
static UUID_INSIDE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"));
/// Public by design: Stripe publishable keys, PostHog project keys, reCAPTCHA site keys, SSH
/// public keys (a bare base64 body starts `AAAA` + the algorithm's length), OpenPGP public key
/// blocks.
static PUBLIC: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:pk_(?:live|test)_[A-Za-z0-9]+|phc_[A-Za-z0-9]{30,}|6L[0-9A-Za-z_-]{38}|(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com) AAAA\S+.*|AAAA[BC]3Nza[A-Za-z0-9+/=]+|-----BEGIN PGP PUBLIC KEY BLOCK-----[\s\S]*)$",
    )
});
/// Encrypted at rest: SOPS values, age and PGP armored messages, Ansible vault.
static ENCRYPTED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:ENC\[[A-Z0-9_]+,data:[\s\S]*\]|-----BEGIN (?:AGE ENCRYPTED FILE|PGP MESSAGE)-----[\s\S]*|\$ANSIBLE_VAULT;[\s\S]*)$",
    )
});

/// Whole values (any case) that are placeholders.
const PLACEHOLDER_WORDS: &str = "dummy tbd fixme none null nil undefined n/a na test fake secret \
    password token changeit sample foo bar foobar empty unset";
/// Parts that make any value a placeholder (`AKIA…EXAMPLE`, `paste-your-key`, `abcd****`).
const PLACEHOLDER_PARTS: &str = "xxxx *** changeme change_me change-me redacted placeholder \
    example replaceme replace_me replace-me your_ your- yourkey yourtoken";

fn listed(list: &str, word: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}

/// True for values that are obviously not real credentials: empty, `changeme`, `<your-key>`,
/// `${VAR}`, `$(VAR)`, `xxx...`, `***`, `REDACTED`, `dummy`, `example`, values ending in `EXAMPLE`
/// (AWS docs), `your-...`, `TODO`, etc.
///
/// Surrounding quotes and whitespace are ignored; one repeated char (`xxx`, `000`), `$VAR` and
/// `{{ … }}` templates count, and so does our own `mask` output (it has `****`). Bare common
/// words (`password`, `secret`, `test`) count too: they are defaults, not leaked credentials.
pub fn is_placeholder(value: &str) -> bool {
    let v = value.trim().trim_matches(['"', '\'']).trim();
    let lower = v.to_ascii_lowercase();
    let mut chars = v.chars();
    let first = chars.next();
    first.is_none()
        || chars.all(|c| Some(c) == first)
        || REFERENCE.regex(v).is_match(v)
        || (v.starts_with('<') && v.ends_with('>'))
        || lower.starts_with("todo")
        || listed(PLACEHOLDER_WORDS, &lower)
        || PLACEHOLDER_PARTS
            .split_whitespace()
            .any(|p| lower.contains(p))
}

/// Why a whole value is safe although it may look like a credential, if it is.
pub fn dismissed(v: &str) -> Option<&'static str> {
    if is_placeholder(v) {
        Some("placeholder")
    } else if DOC_EXAMPLES.iter().any(|e| v.contains(e)) {
        Some("documentation example")
    } else if ENCRYPTED.is_match(v) {
        Some("encrypted")
    } else if PUBLIC.is_match(v) {
        Some("public by design")
    } else if is_digest(v) || UUID_OR_ULID.is_match(v) {
        Some("digest or id")
    } else {
        None
    }
}

/// Hex of a SHA-2 digest's length, or a `sha256:`-style value. MD5 and SHA-1 lengths are left
/// out: 32 and 40 hex characters are API key formats too (Weights & Biases keys are 40 hex), and
/// a commit id under a credential name is rare.
pub fn is_digest(v: &str) -> bool {
    (matches!(v.len(), 56 | 64 | 96 | 128) && v.bytes().all(|b| b.is_ascii_hexdigit()))
        || DIGEST_OR_DATE.is_match(v)
}

/// Lowercase words joined by `-`, `.`, `_`, or an env var name: `db-password-secret`. Not
/// when its parts are random rather than words: more than half of them mix letters and digits
/// (switching between them at least twice)
/// (`x7k2-p9q4-m3n8`, a prefixed UUID `rh-api-1b4e28ba-…`), or one of 11 or more characters
/// does (`pul-` or `key-` and 32 hex; a pod-template hash has 10).
pub fn is_dashed_name(v: &str) -> bool {
    if !IDENTIFIER.is_match(v) {
        return false;
    }
    // Random parts switch between letters and digits (`7f9c2`); words with a number do not
    // (`resnet18`, `v2`).
    let mixed = |p: &str| {
        p.as_bytes()
            .windows(2)
            .filter(|w| w[0].is_ascii_digit() != w[1].is_ascii_digit())
            .count()
            >= 2
    };
    if UUID_INSIDE.is_match(v) {
        return false;
    }
    let parts: Vec<&str> = v.split(['-', '.', '_']).collect();
    let random = parts.iter().filter(|p| mixed(p)).count();
    random * 2 <= parts.len() && !parts.iter().any(|p| p.len() >= 11 && mixed(p))
}

/// A UUID or bare hex of a digest's length: an id or a digest, except under a credential name.
pub fn is_bare_hex_or_uuid(v: &str) -> bool {
    (matches!(v.len(), 56 | 64 | 96 | 128) && v.bytes().all(|b| b.is_ascii_hexdigit()))
        || (v.len() == 36 && UUID_OR_ULID.is_match(v))
}

/// Names and ids rather than random text: Kubernetes names, env var names, camelCase words,
/// digests, dates, UUIDs.
pub fn is_identifier(v: &str) -> bool {
    is_dashed_name(v) || is_camel_words(v) || DIGEST_OR_DATE.is_match(v) || UUID_OR_ULID.is_match(v)
}

/// camelCase/PascalCase words (`awsSecretAccessKey2`, `PublicIpv4Pools`, a `secretKeyRef.key`):
/// uppercase but at most a third of it, at least half lowercase, and no lone lowercase letter.
/// Random mixed-case keys have lone lowercase letters between capitals and digits, or more
/// capitals (`FAKEja3azoIUXttwlRPRjwrC`).
fn is_camel_words(v: &str) -> bool {
    let lower = v.bytes().filter(u8::is_ascii_lowercase).count();
    let upper = v.bytes().filter(u8::is_ascii_uppercase).count();
    upper > 0
        && upper * 3 <= v.len()
        && lower * 2 >= v.len()
        && !v
            .split(|c: char| !c.is_ascii_lowercase())
            .any(|run| run.len() == 1)
}

/// References to a secret rather than the secret: shell expansions, templates (anywhere in the
/// value: `cache-{{ checksum }}`), AWS ARNs, paths, URLs (a URL password has its own shape).
pub fn is_reference(v: &str) -> bool {
    // Each of these starts with `$`, `{`, `<`, `:`, `%` or `#`: a value without one has none.
    let marked = v
        .bytes()
        .any(|b| matches!(b, b'$' | b'{' | b'<' | b':' | b'%' | b'#'));
    (marked
        && ["${", "$(", "{{", "<<", "://", "%{", "#{", "%("]
            .iter()
            .any(|p| v.contains(p)))
        || v.starts_with('$')
        || v.starts_with("arn:")
        || ["/", "./", "../", "~/"].iter().any(|p| v.starts_with(p))
        // Base64 has `/` but never `.`, `-`, `_`, `~`, and random keys have uppercase.
        || (v.contains('/')
            && (v.contains(['.', '-', '_', '~']) || !v.contains(|c: char| c.is_ascii_uppercase())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dismissal_table() {
        let hex64 = "0123456789abcdef".repeat(4);
        let table: &[(&str, Option<&str>)] = &[
            ("changeme", Some("placeholder")),
            ("<your-token>", Some("placeholder")),
            ("${TOKEN}", Some("placeholder")),
            ("REPLACE_ME", Some("placeholder")),
            ("AKIAIOSFODNN7EXAMPLE", Some("placeholder")),
            (
                "ENC[AES256_GCM,data:Zm9vYmFy,iv:abc=,tag:def=,type:str]",
                Some("encrypted"),
            ),
            (
                "-----BEGIN AGE ENCRYPTED FILE-----\nYWdl\n-----END AGE ENCRYPTED FILE-----",
                Some("encrypted"),
            ),
            (
                "-----BEGIN PGP MESSAGE-----\nwcBMA\n-----END PGP MESSAGE-----",
                Some("encrypted"),
            ),
            (
                "pk_live_FAKE51HqLyjWDarjtT1zdp7dcFAKE",
                Some("public by design"),
            ),
            (
                "6LeIxAcTAAAAAJcZVRqyHh71UMIEGNQ_MXjiZKhI",
                Some("public by design"),
            ),
            (
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFAKEFAKE user@host",
                Some("public by design"),
            ),
            (hex64.as_str(), Some("digest or id")),
            (
                "sha256:0123456789abcdef0123456789abcdef",
                Some("digest or id"),
            ),
            ("123E4567-E89B-42D3-A456-426614174000", Some("digest or id")),
            ("01ARZ3NDEKTSV4RRFFQ69G5FAV", Some("digest or id")),
            ("sk_live_FAKE51HqLyjWDarjtT1zdp7dc", None),
            ("0123456789abcdef0123456789abcdef", None), // 32 hex: an API key format too
            ("hunter2hunter2", None),
            ("FAKEja3azoIUXttwlRPRjwrC", None), // camel-like runs, but a third is capitals
        ];
        for (v, want) in table {
            assert_eq!(dismissed(v), *want, "{v:?}");
        }
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
}
