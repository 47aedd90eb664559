//! Kubernetes name syntax, as the API server validates it: DNS labels and subdomains, label
//! values and qualified names, environment variable and port names.

/// Maximum length of a DNS-1123 / DNS-1035 label, and of a label value.
pub const MAX_LABEL: usize = 63;
/// Maximum length of a DNS-1123 subdomain (most object names, e.g. ConfigMap and Secret).
pub const MAX_SUBDOMAIN: usize = 253;
/// The most bytes the API server takes in all annotations of one object, keys and values.
pub const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// How the rules describe a syntax they expect, after "must be".
pub const DNS1123_LABEL: &str = "a DNS-1123 label: at most 63 lowercase letters, digits and `-`, starting and ending with a letter or digit";
pub const DNS1035_LABEL: &str = "a DNS-1035 label: at most 63 lowercase letters, digits and `-`, starting with a letter and ending with a letter or digit";
pub const DNS1123_SUBDOMAIN: &str = "a DNS-1123 subdomain: at most 253 lowercase letters, digits, `-` and `.`, each dot-separated part starting and ending with a letter or digit";
pub const LABEL_KEY: &str = "a qualified name: an optional DNS-1123 subdomain prefix and `/`, then at most 63 letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit";
pub const LABEL_VALUE: &str = "empty, or at most 63 letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit";
pub const PORT_NAME: &str = "an IANA service name: at most 15 lowercase letters, digits and `-`, with at least one letter, not starting or ending with `-` and without `--`";

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` with no length limit.
fn dns_label_shape(b: &[u8]) -> bool {
    matches!((b.first(), b.last()), (Some(&f), Some(&l)) if is_lower_alnum(f) && is_lower_alnum(l))
        && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63 chars.
fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() <= MAX_LABEL
        && matches!((b.first(), b.last()), (Some(f), Some(l)) if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric())
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// DNS-1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 chars.
pub fn is_dns1123_label(s: &str) -> bool {
    s.len() <= MAX_LABEL && dns_label_shape(s.as_bytes())
}

/// DNS-1035 label: `[a-z]([-a-z0-9]*[a-z0-9])?`, at most 63 chars.
pub fn is_dns1035_label(s: &str) -> bool {
    is_dns1123_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

/// DNS-1123 subdomain: dot-separated DNS-1123 label shapes, at most 253 chars in total. Like
/// Kubernetes' `IsDNS1123Subdomain`, the 63-char limit is not applied to each dot-separated part.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    // One pass: a part starts after the start or a dot, and a dot or the end needs a letter
    // or digit before it.
    let mut prev = b'.';
    s.len() <= MAX_SUBDOMAIN
        && s.bytes().all(|c| {
            let ok = match c {
                b'a'..=b'z' | b'0'..=b'9' => true,
                b'-' => prev != b'.',
                b'.' => is_lower_alnum(prev),
                _ => false,
            };
            prev = c;
            ok
        })
        && is_lower_alnum(prev)
}

/// Kubernetes label value: empty, or at most 63 chars of `[A-Za-z0-9._-]`, starting and ending
/// alphanumeric.
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_name_part(s)
}

/// Kubernetes qualified name for label/annotation keys: optional DNS-1123 subdomain prefix
/// (<= 253) + `/`, then a name of at most 63 chars `[A-Za-z0-9._-]`, starting and ending
/// alphanumeric.
pub fn is_qualified_name(s: &str) -> bool {
    match memchr::memchr(b'/', s.as_bytes()) {
        None => is_name_part(s),
        // `/` is ASCII: both sides are text.
        Some(i) => is_dns1123_subdomain(&s[..i]) && is_name_part(&s[i + 1..]),
    }
}

/// Environment variable name valid for Kubernetes 1.28 (`[-._a-zA-Z][-._a-zA-Z0-9]*`); like
/// Kubernetes' `IsEnvVarName`, `.`, `..` and names starting with `..` are rejected too.
pub fn is_env_name(s: &str) -> bool {
    let b = s.as_bytes();
    matches!(b.first(), Some(f) if !f.is_ascii_digit())
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
        && s != "."
        && !s.starts_with("..")
}

/// IANA service name (`IANA_SVC_NAME`, the name of a container port): 1 to 15 of
/// `[a-z0-9-]` with at least one letter, no `-` at either end and no `--`.
pub fn is_port_name(s: &str) -> bool {
    (1..=15).contains(&s.len())
        && s.bytes().all(|b| is_lower_alnum(b) || b == b'-')
        && s.bytes().any(|b| b.is_ascii_lowercase())
        && !s.starts_with('-')
        && !s.ends_with('-')
        && !s.contains("--")
}

/// Environment variable name as Kubernetes 1.32 and later accept it by default
/// (RelaxedEnvironmentVariableValidation): printable ASCII but `=`, not empty.
pub fn is_relaxed_env_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'=')
}

/// A name that is one segment of a URL path (RBAC objects): not `.` or `..`, no `/` or `%`.
pub fn is_path_segment_name(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '%'])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass subdomain test answers as the part-by-part definition does.
    #[test]
    fn a_subdomain_is_its_parts() {
        let by_parts = |s: &str| {
            s.len() <= MAX_SUBDOMAIN && s.as_bytes().split(|&b| b == b'.').all(dns_label_shape)
        };
        let mut texts = crate::source::every_string(&['a', 'z', '0', '-', '.', 'A', '_'], 4);
        texts.push("a".repeat(253));
        texts.push("a".repeat(254));
        for text in &texts {
            assert_eq!(is_dns1123_subdomain(text), by_parts(text), "{text:?}");
        }
    }

    fn check(f: fn(&str) -> bool, good: &[&str], bad: &[&str]) {
        good.iter()
            .for_each(|s| assert!(f(s), "should accept {s:?}"));
        bad.iter()
            .for_each(|s| assert!(!f(s), "should reject {s:?}"));
    }

    #[test]
    fn dns_validators() {
        let (a63, a64) = ("a".repeat(63), "a".repeat(64));
        let good = ["a", "0", "a-b", "a--b", "9z", &a63];
        check(
            is_dns1123_label,
            &good,
            &["", "-a", "a-", "A", "a_b", "a.b", "é", &a64],
        );
        check(
            is_dns1035_label,
            &["a1", "a-1", &a63],
            &["", "1a", "-a", &a64],
        );
        let long = format!("{}.{}", "a".repeat(126), "b".repeat(126));
        let good = ["a", "a.b", "a-1.b2", &long, &format!("{a64}.b")];
        let bad = ["", ".a", "a.", "a..b", "A.b", "a_b.c", &format!("{long}a")];
        check(is_dns1123_subdomain, &good, &bad);
    }

    #[test]
    fn label_and_key_validators() {
        let (a63, a64) = ("a".repeat(63), "a".repeat(64));
        let good = ["", "a", "A.b_c-D", "1", &a63];
        check(
            is_label_value,
            &good,
            &["-a", "a-", "_a", "a b", "a/b", &a64],
        );
        let prefix = "p".repeat(253);
        let good = [
            "app",
            "App_1",
            "example.com/App_1",
            "a.b/c",
            &format!("{prefix}/x"),
        ];
        let bad_prefix = format!("{prefix}p/x");
        let bad = [
            "",
            "/a",
            "a/",
            "a/b/c",
            "Example.com/a",
            "a b",
            &a64,
            &bad_prefix,
        ];
        check(is_qualified_name, &good, &bad);
    }

    #[test]
    fn env_name_validator() {
        let good = ["FOO", "my.env-name", "MyEnvName1", "_x", "-x", ".x", "a..b"];
        check(
            is_env_name,
            &good,
            &["", "1A", "A=B", "A B", "é", ".", "..", "..x"],
        );
    }

    #[test]
    fn port_env_and_path_segment_validators() {
        let good = ["http", "a", "h2c", "metrics-9090", "x-y", &"a".repeat(15)];
        let bad = [
            "",
            "9090",
            "-http",
            "http-",
            "a--b",
            "HTTP",
            "a_b",
            &"a".repeat(16),
        ];
        check(is_port_name, &good, &bad);
        let good = ["FOO", "1A", "A B", "my var!", "~"];
        check(
            is_relaxed_env_name,
            &good,
            &["", "A=B", "A\tB", "é", "A\u{0}"],
        );
        check(
            is_path_segment_name,
            &["a", "a:b", "..a"],
            &["", ".", "..", "a/b", "a%2F"],
        );
    }
}
