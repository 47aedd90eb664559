//! Kubernetes' URL library (`url('https://example.com:80/path?k=v')`, `isURL`, `getScheme()`,
//! `getHost()`, `getHostname()`, `getPort()`, `getEscapedPath()`, `getQuery()`), which the API
//! server has always had.
//!
//! A URL is what Go's `url.ParseRequestURI` accepts, as the library checks it: an absolute URI
//! (`scheme:...`) or an absolute path (`/path`), no control character, well-formed `%`
//! escapes, a numeric port; its parts are then those `url.Parse` gives (the fragment cut
//! off). Parsed here by hand after Go's `net/url`, because the `url` crate follows the WHATWG
//! standard, which answers otherwise: it refuses `/path`, normalizes paths and lower-cases
//! hosts. Two URLs are equal when their parts are (upstream compares their strings, which
//! are made of them).

use super::cel_k8s::{Function, boolean, methods, opaque, refused, string, string_arg, the};
use super::cel_net::go_quote;
use cel::common::types::{CelList, CelMap, CelMapKey, CelString, STRING_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError};
use std::collections::HashMap;

const URL: &str = "kubernetes.URL";

/// The parts of a URL that the library reads, as `net/url` keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Url {
    scheme: String,
    opaque: String,
    user: Option<String>,
    host: String,
    /// The path, unescaped.
    path: Vec<u8>,
    /// The path as written, when escaping the path does not give it back.
    raw_path: String,
    force_query: bool,
    raw_query: String,
    fragment: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        URL
    }
}

/// The URL library.
pub fn url(env: &mut Env) -> Result<(), DeclarationError> {
    let url = || Type::new_opaque_type(URL);
    env.add_type(url())?;
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], to_url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    let members: [(&str, Function); 6] = [
        ("getScheme", get_scheme),
        ("getHost", get_host),
        ("getHostname", get_hostname),
        ("getPort", get_port),
        ("getEscapedPath", get_escaped_path),
        ("getQuery", get_query),
    ];
    methods(env, "url", url, Vec::new, &members)
}

/// The parts of a URL `net/url` escapes differently.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// `net/url`'s `shouldEscape`: whether `c` is escaped in that part.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone) && b"!$&'()*+,;=:[]<>\"".contains(&c) {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => {
            return match mode {
                Mode::Path => c == b'?',
                Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
                Mode::QueryComponent => true,
                Mode::Fragment => false,
                Mode::Host | Mode::Zone => true,
            };
        }
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

fn hex(c: u8) -> u8 {
    (c as char).to_digit(16).unwrap_or(0) as u8
}

/// `net/url`'s `unescape`: `%XX` decoded (`+` a space in a query), with its errors.
fn unescape(s: &str, mode: Mode) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len()
                    || !b[i + 1].is_ascii_hexdigit()
                    || !b[i + 2].is_ascii_hexdigit()
                {
                    let bad: String = s[i..].chars().take(3).collect();
                    return Err(format!("invalid URL escape {}", go_quote(&bad)));
                }
                let escape = &s[i..i + 3];
                let v = hex(b[i + 1]) << 4 | hex(b[i + 2]);
                if mode == Mode::Host && hex(b[i + 1]) < 8 && escape != "%25" {
                    return Err(format!("invalid URL escape {}", go_quote(escape)));
                }
                if mode == Mode::Zone
                    && escape != "%25"
                    && v != b' '
                    && should_escape(v, Mode::Host)
                {
                    return Err(format!("invalid URL escape {}", go_quote(escape)));
                }
                out.push(v);
                i += 3;
            }
            b'+' => {
                out.push(if mode == Mode::QueryComponent {
                    b' '
                } else {
                    b'+'
                });
                i += 1;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {} in host name",
                        go_quote(&(c as char).to_string())
                    ));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// `net/url`'s `escape`.
fn escape(s: &[u8], mode: Mode) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s {
        if !should_escape(c, mode) {
            out.push(c as char);
        } else if c == b' ' && mode == Mode::QueryComponent {
            out.push('+');
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
    out
}

/// Whether `port` is empty or `:` and digits.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
}

fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(close) = host.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let port = &host[close + 1..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", go_quote(port)));
        }
        if let Some(zone) = host[..close].find("%25") {
            let mut out = unescape(&host[..zone], Mode::Host)?;
            out.extend(unescape(&host[zone..close], Mode::Zone)?);
            out.extend(unescape(&host[close..], Mode::Host)?);
            return Ok(String::from_utf8_lossy(&out).into_owned());
        }
    } else if let Some(colon) = host.rfind(':') {
        let port = &host[colon..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", go_quote(port)));
        }
    }
    Ok(String::from_utf8_lossy(&unescape(host, Mode::Host)?).into_owned())
}

fn valid_userinfo(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c))
}

/// `net/url`'s `parse`: a URL (`via_request`: only an absolute URI or an absolute path).
fn parse(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".into());
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = b"*".to_vec();
        return Ok(url);
    }
    // A scheme: a letter, then letters, digits, `+`, `-` and `.`, then `:`.
    let mut rest = raw;
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => {
                url.scheme = raw[..i].to_ascii_lowercase();
                rest = &raw[i + 1..];
                break;
            }
            _ => break,
        }
    }
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        url.force_query = true;
        rest = &rest[..rest.len() - 1];
    } else if let Some((before, query)) = rest.split_once('?') {
        url.raw_query = query.into();
        rest = before;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.into();
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        let segment = rest.split('/').next().unwrap_or_default();
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///"))
        && rest.starts_with("//")
    {
        let after = &rest[2..];
        let (authority, path) = after.split_at(after.find('/').unwrap_or(after.len()));
        let (userinfo, host) = match authority.rfind('@') {
            Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
            None => (None, authority),
        };
        url.host = parse_host(host)?;
        if let Some(userinfo) = userinfo {
            if !valid_userinfo(userinfo) {
                return Err("net/url: invalid userinfo".into());
            }
            for part in userinfo.splitn(2, ':') {
                unescape(part, Mode::UserPassword)?;
            }
            url.user = Some(userinfo.into());
        }
        rest = path;
    }
    url.path = unescape(rest, Mode::Path)?;
    if escape(&url.path, Mode::Path) != rest {
        url.raw_path = rest.into();
    }
    Ok(url)
}

/// `url.ParseRequestURI`'s error, as the library words it; `None` for a URL it accepts.
pub(super) fn request_uri_error(raw: &str) -> Option<String> {
    parse(raw, true)
        .err()
        .map(|why| format!("parse {}: {why}", go_quote(raw)))
}

/// The URL `url.Parse` reads, after `url.ParseRequestURI` has accepted it.
fn read(raw: &str) -> Result<Url, String> {
    if let Some(why) = request_uri_error(raw) {
        return Err(format!(
            "URL parse error during conversion from string: {why}"
        ));
    }
    let (before, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    let mut url = parse(before, false).map_err(|why| {
        format!(
            "URL parse error during conversion from string: parse {}: {why}",
            go_quote(before)
        )
    })?;
    let fragment = unescape(fragment, Mode::Fragment).map_err(|why| {
        format!(
            "URL parse error during conversion from string: parse {}: {why}",
            go_quote(raw)
        )
    })?;
    url.fragment = String::from_utf8_lossy(&fragment).into_owned();
    Ok(url)
}

/// Whether `s` holds only what a path may hold unescaped, or escapes.
fn valid_encoded(s: &str) -> bool {
    s.bytes()
        .all(|c| b"!$&'()*+,;=:@[]%".contains(&c) || !should_escape(c, Mode::Path))
}

impl Url {
    /// `net/url`'s `EscapedPath`: the path as written when that is a valid escaping of it.
    fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path)
            && unescape(&self.raw_path, Mode::Path).is_ok_and(|p| p == self.path)
        {
            return self.raw_path.clone();
        }
        if self.path == b"*" {
            return "*".into();
        }
        escape(&self.path, Mode::Path)
    }

    /// The host and the port of `host:port` (the port only if it is digits), without the
    /// brackets of an IPv6 address.
    fn host_port(&self) -> (&str, &str) {
        let (mut host, mut port) = (self.host.as_str(), "");
        if let Some(colon) = host.rfind(':')
            && valid_optional_port(&host[colon..])
        {
            (host, port) = (&self.host[..colon], &self.host[colon + 1..]);
        }
        if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            host = inner;
        }
        (host, port)
    }

    /// `net/url`'s `Query`: the pairs of the query, those that do not parse left out.
    fn query(&self) -> Vec<(String, String)> {
        let mut pairs = Vec::new();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if let (Ok(key), Ok(value)) = (
                unescape(key, Mode::QueryComponent),
                unescape(value, Mode::QueryComponent),
            ) {
                pairs.push((
                    String::from_utf8_lossy(&key).into_owned(),
                    String::from_utf8_lossy(&value).into_owned(),
                ));
            }
        }
        pairs
    }
}

fn to_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let raw = string_arg(args[0].as_ref(), "url")?;
    let url = read(raw).map_err(|why| refused("url", why))?;
    Ok(opaque(url))
}

fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let raw = string_arg(args[0].as_ref(), "isURL")?;
    Ok(boolean(request_uri_error(raw).is_none()))
}

fn get_scheme<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let url: Url = the(args[0].as_ref(), "getScheme")?;
    Ok(string(url.scheme))
}

fn get_host<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let url: Url = the(args[0].as_ref(), "getHost")?;
    Ok(string(url.host))
}

fn get_hostname<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let url: Url = the(args[0].as_ref(), "getHostname")?;
    Ok(string(url.host_port().0.to_string()))
}

fn get_port<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let url: Url = the(args[0].as_ref(), "getPort")?;
    Ok(string(url.host_port().1.to_string()))
}

fn get_escaped_path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let url: Url = the(args[0].as_ref(), "getEscapedPath")?;
    Ok(string(url.escaped_path()))
}

fn get_query<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let url: Url = the(args[0].as_ref(), "getQuery")?;
    let mut values: HashMap<String, Vec<String>> = HashMap::new();
    for (key, value) in url.query() {
        values.entry(key).or_default().push(value);
    }
    let map: HashMap<CelMapKey, Box<dyn Val + 'v>> = values
        .into_iter()
        .map(|(key, list)| {
            let list: Vec<Box<dyn Val + 'v>> = list
                .into_iter()
                .map(|v| Box::new(CelString::from(v)) as Box<dyn Val + 'v>)
                .collect();
            (
                CelMapKey::from(key),
                Box::new(CelList::from(list)) as Box<dyn Val + 'v>,
            )
        })
        .collect();
    Ok(CowVal::Owned(Box::new(CelMap::from(map))))
}

#[cfg(test)]
mod tests {
    use crate::crd::cel_k8s::tests::{all_true, error};

    // Expected values from kubernetes/apiextensions-apiserver
    // `pkg/apiserver/schema/cel/validation_test.go` ("URL parsing").

    #[test]
    fn url_reads_urls_as_upstream() {
        all_true(&[
            "url('/path').getScheme() == ''",
            "url('https://example.com/').getScheme() == 'https'",
            "url('https://example.com:80/').getHost() == 'example.com:80'",
            "url('https://example.com/').getHost() == 'example.com'",
            "url('https://[::1]:80/').getHost() == '[::1]:80'",
            "url('https://[::1]/').getHost() == '[::1]'",
            "url('/path').getHost() == ''",
            "url('https://example.com:80/').getHostname() == 'example.com'",
            "url('https://127.0.0.1/').getHostname() == '127.0.0.1'",
            "url('https://[::1]/').getHostname() == '::1'",
            "url('/path').getHostname() == ''",
            "url('https://example.com:80/').getPort() == '80'",
            "url('https://example.com/').getPort() == ''",
            "url('/path').getPort() == ''",
            "url('https://example.com/path').getEscapedPath() == '/path'",
            "url('https://example.com/with space/').getEscapedPath() == '/with%20space/'",
            "url('https://example.com').getEscapedPath() == ''",
            "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == \
             {'k1': ['a'], 'k2': ['b', 'c']}",
            "url('https://example.com/path?key with spaces=value with spaces').getQuery() == \
             {'key with spaces': ['value with spaces']}",
            "url('https://example.com/path?').getQuery() == {}",
            "url('https://example.com/path').getQuery() == {}",
            "url('https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor')\
             .getHost() == 'kubernetes.io:80'",
            "url('https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor')\
             .getEscapedPath() == '/docs/home'",
            "url('https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor')\
             .getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
            "isURL('https://user:pass@example.com:80/path?query=val#fragment')",
            "isURL('/path') == true",
            "isURL('https://a:b:c/') == false",
            "isURL('../relative-path') == false",
            // An opaque URL (a scheme, then no `/`) is one, as in cost tests upstream.
            "url('https:://kubernetes.io/').getHostname() != 'test'",
            // The escaping as written is kept when it is a valid one.
            "url('https://example.com/a%2Fb').getEscapedPath() == '/a%2Fb'",
            "url('https://example.com/a') == url('https://example.com/a')",
            "url('https://example.com/a') != url('https://example.com/b')",
            "type(url('/path')) == kubernetes.URL",
        ]);
        assert_eq!(
            error("url('../relative-path')"),
            "URL parse error during conversion from string: parse \"../relative-path\": \
             invalid URI for request"
        );
        assert_eq!(
            error("url('https://a:b:c/')"),
            "URL parse error during conversion from string: parse \"https://a:b:c/\": \
             invalid port \":c\" after host"
        );
        assert_eq!(
            error("url('')"),
            "URL parse error during conversion from string: parse \"\": empty url"
        );
        assert_eq!(
            error("url('/a%zz')"),
            "URL parse error during conversion from string: parse \"/a%zz\": \
             invalid URL escape \"%zz\""
        );
    }
}
