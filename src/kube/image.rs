//! Container image references, as the kubelet parses them
//! (`[host[:port]/]path[:tag][@digest]`).

/// Why `image` is not a valid reference, if it is not.
pub fn problem(image: &str) -> Option<String> {
    if image.is_empty() {
        return Some("it is empty".into());
    }
    if image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("it has a space or a control character".into());
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    if let Some(d) = digest
        && let Some(p) = digest_problem(d)
    {
        return Some(p);
    }
    // A tag follows the last `:` after the last `/` (`host:5000/img` has none).
    let slash = name.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name[slash..].rfind(':') {
        Some(i) => (&name[..slash + i], Some(&name[slash + i + 1..])),
        None => (name, None),
    };
    if let Some(t) = tag
        && !is_tag(t)
    {
        return Some(format!(
            "the tag `{t}` must be 1 to 128 letters, digits, `_`, `.` and `-`, not starting with `.` or `-`"
        ));
    }
    if name.len() > 255 {
        return Some(format!(
            "the name has {} characters, more than 255",
            name.len()
        ));
    }
    // The first component is a registry host if it has a `.` or `:`, is `localhost`, or
    // has a capital letter (which no path component may have), as the kubelet splits it.
    let (host, path) = match name.split_once('/') {
        Some((h, rest))
            if h.contains(['.', ':'])
                || h == "localhost"
                || h.bytes().any(|b| b.is_ascii_uppercase()) =>
        {
            (Some(h), rest)
        }
        _ => (None, name),
    };
    if let Some(h) = host
        && !is_host(h)
    {
        return Some(format!(
            "the registry `{h}` must be a host name (letters, digits, inner `-`, parts joined by `.`) with an optional `:port`"
        ));
    }
    if path.bytes().any(|b| b.is_ascii_uppercase()) {
        return Some(format!("the repository `{path}` must be lowercase"));
    }
    if let Some(c) = path.split('/').find(|c| !is_path_component(c)) {
        return Some(format!(
            "the repository part `{c}` must be lowercase letters and digits, joined by `.`, `_`, `__` or `-`"
        ));
    }
    None
}

fn digest_problem(d: &str) -> Option<String> {
    let hex_len = match d.split_once(':') {
        Some(("sha256", h)) => (64, h),
        Some(("sha384", h)) => (96, h),
        Some(("sha512", h)) => (128, h),
        _ => {
            return Some(format!(
                "the digest `{d}` must be `sha256:` and 64 lowercase hex digits"
            ));
        }
    };
    let (len, hex) = hex_len;
    (hex.len() != len || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))).then(|| {
        format!("the digest `{d}` must have {len} lowercase hex digits after the algorithm")
    })
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `[\w][\w.-]{0,127}`
fn is_tag(t: &str) -> bool {
    let b = t.as_bytes();
    (1..=128).contains(&b.len())
        && is_word(b[0])
        && b.iter().all(|&c| is_word(c) || c == b'.' || c == b'-')
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`
fn is_path_component(c: &str) -> bool {
    let lower = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let b = c.as_bytes();
    if b.is_empty() || !lower(b[0]) || !lower(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if lower(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !lower(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|s| s == b'-')) {
            return false;
        }
    }
    true
}

/// A DNS host name (or a bracketed IPv6 address) with an optional numeric port.
fn is_host(h: &str) -> bool {
    let (host, port) = if let Some(rest) = h.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        if v6.is_empty()
            || !v6
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return false;
        }
        match after {
            "" => (None, None),
            _ => match after.strip_prefix(':') {
                Some(p) => (None, Some(p)),
                None => return false,
            },
        }
    } else {
        match h.rsplit_once(':') {
            Some((n, p)) => (Some(n), Some(p)),
            None => (Some(h), None),
        }
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok = host.is_none_or(|n| {
        n.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'-')
        })
    });
    port_ok && host_ok
}

#[cfg(test)]
mod tests {
    use super::problem;

    #[test]
    fn references_the_kubelet_parses() {
        let hex = "0123456789abcdef".repeat(4);
        for good in [
            "tao".to_string(),
            "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt".into(),
            "registry.example.com:5000/team/tao:v1".into(),
            "localhost/tao:1".into(),
            "localhost:5000/a__b/c-d.e:_x".into(),
            "[::1]:5000/tao:1".into(),
            format!("tao@sha256:{hex}"),
            format!("tao:6.0@sha256:{hex}"),
            "a---b/c:LATEST".into(),
            "My-Registry.example.com/tao:1".into(),
        ] {
            assert_eq!(problem(&good), None, "{good}");
        }
    }

    #[test]
    fn references_it_refuses() {
        let hex = "0123456789abcdef".repeat(4);
        for bad in [
            "".to_string(),
            "repo:---".into(),
            "repo:.x".into(),
            "repo:".into(),
            " repo:1".into(),
            "repo:1\n".into(),
            "nvcr.io/NVIDIA/tao:6.0".into(),
            "Tao:1".into(),
            "a..b:1".into(),
            "a/-b:1".into(),
            "a___b:1".into(),
            "tao@sha256:abc".into(),
            format!("tao@sha256:{}", hex.to_uppercase()),
            format!("tao@md5:{hex}"),
            "host:port/tao:1".into(),
            "-host.io/tao:1".into(),
            "host.io//tao:1".into(),
            format!("{}:1", "a".repeat(256)),
            format!("tao:{}", "a".repeat(129)),
        ] {
            assert!(problem(&bad).is_some(), "{bad:?}");
        }
    }
}
