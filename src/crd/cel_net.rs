//! Kubernetes' IP and CIDR libraries (`ip('10.0.0.1')`, `isIP`, `ip.isCanonical`, `family()`,
//! `isLoopback()`...; `cidr('10.0.0.0/8')`, `isCIDR`, `containsIP`, `containsCIDR`, `ip()`,
//! `masked()`, `prefixLength()`), which the API server has had since 1.30, with `string()` of
//! both and equality.
//!
//! Addresses are read as Go's `netip.ParseAddr` reads them, and refused in its words (the
//! library's own errors quote them): a leading zero in an IPv4 octet is refused, an IPv6 field
//! may have more than four digits while its value fits in 16 bits, an embedded IPv4 address
//! must end the address. Then the library refuses what `netip` accepts and Kubernetes does
//! not: a zone (`fe80::1%eth0`) and an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`). Prefixes
//! are `netip.ParsePrefix`'s: an address, `/`, and a length read as Go's `strconv.Atoi` reads
//! it (a sign, leading zeros), up to the address's bits; they are kept unmasked, as written.

use super::cel_k8s::{Function, boolean, int, methods, opaque, refused, string, string_arg, the};
use cel::common::types::{STRING_TYPE, Type};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const IP: &str = "net.IP";
const CIDR: &str = "net.CIDR";

/// An address of `ip(...)`: never with a zone, never IPv4-mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ip(IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        IP
    }
}

/// A prefix of `cidr(...)`: its address as written (not masked) and its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        CIDR
    }
}

/// The IP library.
pub fn ip(env: &mut Env) -> Result<(), DeclarationError> {
    let ip = || Type::new_opaque_type(IP);
    env.add_type(ip())?;
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], to_ip)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload(
        "ip.isCanonical",
        "ip_is_canonical",
        vec![STRING_TYPE],
        is_canonical,
    )?;
    env.add_overload("string", "ip_to_string", vec![ip()], ip_to_string)?;
    let members: [(&str, Function); 6] = [
        ("family", family),
        ("isUnspecified", is_unspecified),
        ("isLoopback", is_loopback),
        ("isLinkLocalMulticast", is_link_local_multicast),
        ("isLinkLocalUnicast", is_link_local_unicast),
        ("isGlobalUnicast", is_global_unicast),
    ];
    methods(env, "ip", ip, Vec::new, &members)
}

/// The CIDR library.
pub fn cidr(env: &mut Env) -> Result<(), DeclarationError> {
    let cidr = || Type::new_opaque_type(CIDR);
    let ip = || Type::new_opaque_type(IP);
    env.add_type(cidr())?;
    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], to_cidr)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_overload("string", "cidr_to_string", vec![cidr()], cidr_to_string)?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_string",
        cidr(),
        vec![STRING_TYPE],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_ip",
        cidr(),
        vec![ip()],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_string",
        cidr(),
        vec![STRING_TYPE],
        contains_cidr,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr",
        cidr(),
        vec![cidr()],
        contains_cidr,
    )?;
    env.add_member_overload("ip", "cidr_ip", cidr(), vec![], cidr_ip)?;
    env.add_member_overload("masked", "cidr_masked", cidr(), vec![], masked)?;
    env.add_member_overload(
        "prefixLength",
        "cidr_prefix_length",
        cidr(),
        vec![],
        prefix_length,
    )?;
    Ok(())
}

/// Go's `strconv.Quote` of what a message quotes: `"` and `\` escaped, control characters
/// as escapes.
pub(super) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A refusal of `netip.ParseAddr`: its message, and where in the input it was met.
struct AddrError {
    input: String,
    message: String,
    at: Option<String>,
}

impl std::fmt::Display for AddrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ParseAddr({}): {}", go_quote(&self.input), self.message)?;
        match &self.at {
            Some(at) => write!(f, " (at {})", go_quote(at)),
            None => Ok(()),
        }
    }
}

fn addr_error(input: &str, message: &str, at: Option<&str>) -> AddrError {
    AddrError {
        input: input.into(),
        message: message.into(),
        at: at.map(Into::into),
    }
}

/// An address as `netip.ParseAddr` reads it, with its zone (possibly empty, when none).
fn parse_addr(s: &str) -> Result<(IpAddr, &str), AddrError> {
    match s.bytes().find(|b| matches!(b, b'.' | b':' | b'%')) {
        Some(b'.') => parse_v4(s).map(|a| (IpAddr::V4(a), "")),
        Some(b':') => parse_v6(s).map(|(a, zone)| (IpAddr::V6(a), zone)),
        Some(_) => Err(addr_error(s, "missing IPv6 address", None)),
        None => Err(addr_error(s, "unable to parse IP", None)),
    }
}

fn parse_v4(s: &str) -> Result<Ipv4Addr, AddrError> {
    let bytes = s.as_bytes();
    let mut octets = [0u8; 4];
    let (mut field, mut value, mut digits) = (0usize, 0u32, 0usize);
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'0'..=b'9' => {
                if digits == 1 && value == 0 {
                    return Err(addr_error(
                        s,
                        "IPv4 field has octet with leading zero",
                        None,
                    ));
                }
                value = value * 10 + u32::from(b - b'0');
                digits += 1;
                if value > 255 {
                    return Err(addr_error(s, "IPv4 field has value >255", None));
                }
            }
            b'.' => {
                if i == 0 || i == bytes.len() - 1 || bytes[i - 1] == b'.' {
                    return Err(addr_error(
                        s,
                        "IPv4 field must have at least one digit",
                        Some(&s[i..]),
                    ));
                }
                if field == 3 {
                    return Err(addr_error(s, "IPv4 address too long", None));
                }
                octets[field] = value as u8;
                field += 1;
                value = 0;
                digits = 0;
            }
            _ => {
                return Err(addr_error(s, "unexpected character", Some(&s[i..])));
            }
        }
    }
    if field < 3 {
        return Err(addr_error(s, "IPv4 address too short", None));
    }
    octets[3] = value as u8;
    Ok(Ipv4Addr::from(octets))
}

fn parse_v6(input: &str) -> Result<(Ipv6Addr, &str), AddrError> {
    let fail = |message: &str, at: Option<&str>| addr_error(input, message, at);
    let (mut s, zone) = match input.split_once('%') {
        Some((_, "")) => return Err(fail("zone must be a non-empty string", None)),
        Some((address, zone)) => (address, zone),
        None => (input, ""),
    };
    let mut ip = [0u8; 16];
    // Where `::` stands, in bytes of `ip`.
    let mut ellipsis: Option<usize> = None;
    if let Some(rest) = s.strip_prefix("::") {
        ellipsis = Some(0);
        s = rest;
        if s.is_empty() {
            return Ok((Ipv6Addr::UNSPECIFIED, zone));
        }
    }
    let mut i = 0;
    while i < 16 {
        let digits = s.bytes().take_while(u8::is_ascii_hexdigit).count();
        let mut value: u32 = 0;
        for b in s.bytes().take(digits) {
            value = (value << 4) | (b as char).to_digit(16).unwrap_or(0);
            if value > 0xffff {
                return Err(fail("IPv6 field has value >=2^16", Some(s)));
            }
        }
        if digits == 0 {
            return Err(fail(
                "each colon-separated field must have at least one digit",
                Some(s),
            ));
        }
        if s.as_bytes().get(digits) == Some(&b'.') {
            if ellipsis.is_none() && i != 12 {
                return Err(fail(
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    Some(s),
                ));
            }
            if i + 4 > 16 {
                return Err(fail(
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    Some(s),
                ));
            }
            let v4 = parse_v4(s).map_err(|e| fail(&e.to_string(), Some(s)))?;
            ip[i..i + 4].copy_from_slice(&v4.octets());
            s = "";
            i += 4;
            break;
        }
        ip[i] = (value >> 8) as u8;
        ip[i + 1] = value as u8;
        i += 2;
        s = &s[digits..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return Err(fail("unexpected character, want colon", Some(s)));
        }
        if s.len() == 1 {
            return Err(fail("colon must be followed by more characters", Some(s)));
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis.is_some() {
                return Err(fail("multiple :: in address", Some(s)));
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(fail("trailing garbage after address", Some(s)));
    }
    if i < 16 {
        let Some(at) = ellipsis else {
            return Err(fail("address string too short", None));
        };
        let n = 16 - i;
        ip.copy_within(at..i, at + n);
        ip[at..at + n].fill(0);
    } else if ellipsis.is_some() {
        return Err(fail(
            "the :: must expand to at least one field of zeros",
            None,
        ));
    }
    Ok((Ipv6Addr::from(ip), zone))
}

/// The library's reading of an address: `netip`'s, less zones and IPv4-mapped addresses.
fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    let (addr, zone) = parse_addr(raw).map_err(|e| {
        format!(
            "IP Address {} parse error during conversion from string: {e}",
            go_quote(raw)
        )
    })?;
    if !zone.is_empty() {
        return Err(format!(
            "IP address {} with zone value is not allowed",
            go_quote(raw)
        ));
    }
    if is_4in6(addr) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(raw)
        ));
    }
    Ok(addr)
}

fn is_4in6(addr: IpAddr) -> bool {
    matches!(addr, IpAddr::V6(a) if a.to_ipv4_mapped().is_some())
}

/// The library's reading of a prefix: `netip.ParsePrefix`'s, less IPv4-mapped addresses.
fn parse_cidr(raw: &str) -> Result<Cidr, String> {
    let refuse = |why: String| {
        format!(
            "network address parse error during conversion from string: netip.ParsePrefix({}): {why}",
            go_quote(raw)
        )
    };
    let Some((address, bits)) = raw.rsplit_once('/') else {
        return Err(refuse("no '/'".into()));
    };
    let (addr, zone) = parse_addr(address).map_err(|e| refuse(e.to_string()))?;
    if !zone.is_empty() {
        return Err(refuse("IPv6 zones cannot be present in a prefix".into()));
    }
    // `strconv.Atoi`: a sign, then decimal digits, in range of an int.
    let digits = bits.strip_prefix(['+', '-']).unwrap_or(bits);
    let length = match bits.parse::<i64>() {
        Ok(n) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => return Err(refuse(format!("bad bits after slash: {}", go_quote(bits)))),
    };
    let most = if addr.is_ipv4() { 32 } else { 128 };
    if !(0..=most).contains(&length) {
        return Err(refuse("prefix length out of range".into()));
    }
    if is_4in6(addr) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(raw)
        ));
    }
    Ok(Cidr {
        addr,
        bits: length as u8,
    })
}

/// The address with all but its first `bits` bits cleared.
fn mask(addr: IpAddr, bits: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let keep = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & keep))
        }
        IpAddr::V6(a) => {
            let keep = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & keep))
        }
    }
}

impl Cidr {
    fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.addr.is_ipv4() && mask(ip, self.bits) == mask(self.addr, self.bits)
    }

    /// `netip.Prefix.Overlaps` and no longer than `other`: `other` lies within.
    fn contains_cidr(&self, other: &Cidr) -> bool {
        let same_family = self.addr.is_ipv4() == other.addr.is_ipv4();
        let overlaps = self == other
            || (same_family && {
                let bits = self.bits.min(other.bits);
                mask(self.addr, bits) == mask(other.addr, bits)
            });
        overlaps && self.bits <= other.bits
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

fn to_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let raw = string_arg(args[0].as_ref(), "ip")?;
    let addr = parse_ip(raw).map_err(|why| refused("ip", why))?;
    Ok(opaque(Ip(addr)))
}

fn is_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let raw = string_arg(args[0].as_ref(), "isIP")?;
    Ok(boolean(parse_ip(raw).is_ok()))
}

fn is_canonical<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let raw = string_arg(args[0].as_ref(), "ip.isCanonical")?;
    let addr = parse_ip(raw).map_err(|why| refused("ip.isCanonical", why))?;
    Ok(boolean(addr.to_string() == raw))
}

fn ip_to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let Ip(addr) = the(args[0].as_ref(), "string")?;
    Ok(string(addr.to_string()))
}

fn family<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let Ip(addr) = the(args[0].as_ref(), "family")?;
    Ok(int(if addr.is_ipv4() { 4 } else { 6 }))
}

fn is_unspecified<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let Ip(addr) = the(args[0].as_ref(), "isUnspecified")?;
    Ok(boolean(addr.is_unspecified()))
}

fn loopback(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.octets()[0] == 127,
        IpAddr::V6(a) => a == Ipv6Addr::LOCALHOST,
    }
}

fn is_loopback<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let Ip(addr) = the(args[0].as_ref(), "isLoopback")?;
    Ok(boolean(loopback(addr)))
}

fn is_link_local_multicast<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let Ip(addr) = the(args[0].as_ref(), "isLinkLocalMulticast")?;
    Ok(boolean(match addr {
        IpAddr::V4(a) => a.octets()[..3] == [224, 0, 0],
        IpAddr::V6(a) => a.segments()[0] & 0xff0f == 0xff02,
    }))
}

fn link_local_unicast(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.octets()[..2] == [169, 254],
        IpAddr::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_link_local_unicast<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let Ip(addr) = the(args[0].as_ref(), "isLinkLocalUnicast")?;
    Ok(boolean(link_local_unicast(addr)))
}

fn is_global_unicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let Ip(addr) = the(args[0].as_ref(), "isGlobalUnicast")?;
    let multicast = match addr {
        IpAddr::V4(a) => a.octets()[0] & 0xf0 == 0xe0,
        IpAddr::V6(a) => a.octets()[0] == 0xff,
    };
    let global = match addr {
        IpAddr::V4(a) => !a.is_unspecified() && !a.is_broadcast(),
        IpAddr::V6(a) => !a.is_unspecified(),
    } && !loopback(addr)
        && !multicast
        && !link_local_unicast(addr);
    Ok(boolean(global))
}

fn to_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let raw = string_arg(args[0].as_ref(), "cidr")?;
    // The library words the error of its own parser again: the prefix is said twice.
    let cidr = parse_cidr(raw).map_err(|why| {
        refused(
            "cidr",
            format!("network address parse error during conversion from string: {why}"),
        )
    })?;
    Ok(opaque(cidr))
}

fn is_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let raw = string_arg(args[0].as_ref(), "isCIDR")?;
    Ok(boolean(parse_cidr(raw).is_ok()))
}

fn cidr_to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let cidr: Cidr = the(args[0].as_ref(), "string")?;
    Ok(string(cidr.to_string()))
}

/// What the library answers when the string argument of `containsIP` or `containsCIDR` does
/// not parse: its overloads find no value of the type, and cel-go says so.
fn no_such_overload(function: &str) -> ExecutionError {
    refused(function, "no such overload")
}

fn contains_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let cidr: Cidr = the(args[0].as_ref(), "containsIP")?;
    let ip = match string_arg(args[1].as_ref(), "containsIP") {
        Ok(raw) => parse_ip(raw).map_err(|_| no_such_overload("containsIP"))?,
        Err(_) => the::<Ip>(args[1].as_ref(), "containsIP")?.0,
    };
    Ok(boolean(cidr.contains(ip)))
}

fn contains_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let cidr: Cidr = the(args[0].as_ref(), "containsCIDR")?;
    let other = match string_arg(args[1].as_ref(), "containsCIDR") {
        Ok(raw) => parse_cidr(raw).map_err(|_| no_such_overload("containsCIDR"))?,
        Err(_) => the::<Cidr>(args[1].as_ref(), "containsCIDR")?,
    };
    Ok(boolean(cidr.contains_cidr(&other)))
}

fn cidr_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let cidr: Cidr = the(args[0].as_ref(), "ip")?;
    Ok(opaque(Ip(cidr.addr)))
}

fn masked<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let cidr: Cidr = the(args[0].as_ref(), "masked")?;
    Ok(opaque(Cidr {
        addr: mask(cidr.addr, cidr.bits),
        bits: cidr.bits,
    }))
}

fn prefix_length<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let cidr: Cidr = the(args[0].as_ref(), "prefixLength")?;
    Ok(int(i64::from(cidr.bits)))
}

#[cfg(test)]
mod tests {
    use crate::crd::cel_k8s::tests::{all_true, error};

    // Expected values from kubernetes/apiserver `pkg/cel/library/ip_test.go` and
    // `cidr_test.go`, and kubernetes/apiextensions-apiserver
    // `pkg/apiserver/schema/cel/validation_test.go` ("IP and CIDR").

    #[test]
    fn ip_reads_and_classifies_addresses_as_upstream() {
        all_true(&[
            "ip('192.168.0.1') == ip('192.168.0.1')",
            "ip('192.168.0.1') != ip('192.168.0.2')",
            "isIP('192.168.0.1') && !isIP('192.168.0.1.0')",
            "isIP('2001:db8::68') && !isIP('2001:db8:::68')",
            "ip.isCanonical('127.0.0.1')",
            "ip.isCanonical('2001:db8::68') && !ip.isCanonical('2001:DB8::68')",
            "!ip.isCanonical('2001:db8::0:0:0:abcd') && ip.isCanonical('2001:db8::abcd')",
            "ip('192.168.0.1').family() == 4 && ip('2001:db8::68').family() == 6",
            "ip('0.0.0.0').isUnspecified() && !ip('127.0.0.1').isUnspecified()",
            "ip('::').isUnspecified() && !ip('::1').isUnspecified()",
            "ip('127.0.0.1').isLoopback() && !ip('1.2.3.4').isLoopback()",
            "ip('::1').isLoopback() && !ip('2001:db8::abcd').isLoopback()",
            "ip('224.0.0.1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast()",
            "ip('ff02::1').isLinkLocalMulticast() && !ip('fd00::1').isLinkLocalMulticast()",
            "ip('169.254.169.254').isLinkLocalUnicast() && !ip('192.168.0.1').isLinkLocalUnicast()",
            "ip('fe80::1').isLinkLocalUnicast() && !ip('fd80::1').isLinkLocalUnicast()",
            "ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()",
            "ip('2001:db8::abcd').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()",
            "string(ip('192.168.0.1')) == '192.168.0.1'",
            "string(ip('2001:DB8::0:0:68')) == '2001:db8::68'",
            "type(ip('192.168.0.1')) == net.IP",
            // netip's reading: more than four digits in a field whose value fits.
            "isIP('00001::')",
            // Refused by the library although netip reads them.
            "!isIP('::ffff:1.2.3.4') && !isIP('fe80::1%eth0') && !isIP('010.0.0.1')",
            "isIP('::1.2.3.4')",
        ]);
        assert_eq!(
            error("ip('192.168.0.1.0')"),
            "IP Address \"192.168.0.1.0\" parse error during conversion from string: \
             ParseAddr(\"192.168.0.1.0\"): IPv4 address too long"
        );
        assert_eq!(
            error("ip('2001:db8:::68')"),
            "IP Address \"2001:db8:::68\" parse error during conversion from string: \
             ParseAddr(\"2001:db8:::68\"): each colon-separated field must have at least one \
             digit (at \":68\")"
        );
        assert_eq!(
            error("ip.isCanonical('127.0.0.1.0')"),
            "IP Address \"127.0.0.1.0\" parse error during conversion from string: \
             ParseAddr(\"127.0.0.1.0\"): IPv4 address too long"
        );
        assert_eq!(
            error("ip('1.2.3')"),
            "IP Address \"1.2.3\" parse error during conversion from string: \
             ParseAddr(\"1.2.3\"): IPv4 address too short"
        );
        assert_eq!(
            error("ip('::ffff:1.2.3.4')"),
            "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed"
        );
        assert_eq!(
            error("ip('fe80::1%eth0')"),
            "IP address \"fe80::1%eth0\" with zone value is not allowed"
        );
    }

    #[test]
    fn cidr_reads_and_compares_prefixes_as_upstream() {
        all_true(&[
            "cidr('192.168.0.0/24') == cidr('192.168.0.0/24')",
            "cidr('192.168.0.1/24') != cidr('192.168.0.0/24')",
            "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))",
            "!cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))",
            "cidr('192.168.0.0/24').containsIP('192.168.0.1')",
            "!cidr('192.168.0.0/24').containsIP('192.168.1.1')",
            "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))",
            "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.1/32'))",
            "!cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/23'))",
            "!cidr('192.168.0.0/24').containsCIDR(cidr('192.169.0.1/32'))",
            "cidr('192.168.0.0/24').containsCIDR('192.168.0.0/25')",
            "!cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')",
            "cidr('192.168.0.0/24').ip() == ip('192.168.0.0')",
            "cidr('192.168.0.0/24').masked() == cidr('192.168.0.0/24')",
            "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
            "cidr('192.168.0.0/24').prefixLength() == 24",
            "cidr('2001:db8::/32').containsIP(ip('2001:db8::1'))",
            "!cidr('2001:db8::/32').containsIP(ip('2001:dc8::1'))",
            "cidr('2001:db8::/32').containsIP('2001:db8::1')",
            "!cidr('2001:db8::/32').containsIP('2001:dc8::1')",
            "cidr('2001:db8::/32').containsCIDR(cidr('2001:db8::/33'))",
            "!cidr('2001:db8::/32').containsCIDR(cidr('2001:db8::/31'))",
            "cidr('2001:db8::/32').containsCIDR('2001:db8::/33')",
            "!cidr('2001:db8::/32').containsCIDR('2001:db8::/31')",
            "cidr('2001:db8::/32').ip() == ip('2001:db8::')",
            "cidr('2001:db8:1::/32').masked() == cidr('2001:db8::/32')",
            "cidr('2001:db8::/32').prefixLength() == 32",
            "string(cidr('192.168.0.0/24')) == '192.168.0.0/24'",
            "type(cidr('192.168.0.0/24')) == net.CIDR",
            "type(cidr('2001:db8::/32').ip()) == net.IP",
            "cidr('::1/128').ip().family() == 6",
            // An IPv4 address is in no IPv6 prefix.
            "!cidr('::/0').containsIP('10.0.0.1') && cidr('0.0.0.0/0').containsIP('10.0.0.1')",
            "isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0') && !isCIDR('10.0.0.0/33')",
            "isCIDR('10.0.0.0/+8') && isCIDR('10.0.0.0/08')",
        ]);
        assert_eq!(
            error("cidr('192.168.0.0/')"),
            "network address parse error during conversion from string: network address parse \
             error during conversion from string: netip.ParsePrefix(\"192.168.0.0/\"): bad bits \
             after slash: \"\""
        );
        assert_eq!(
            error("cidr('2001:db8::/')"),
            "network address parse error during conversion from string: network address parse \
             error during conversion from string: netip.ParsePrefix(\"2001:db8::/\"): bad bits \
             after slash: \"\""
        );
        // The string overloads give cel-go's overload error for a string that does not parse.
        assert_eq!(
            error("cidr('10.0.0.0/8').containsIP('10.0.0')"),
            "no such overload"
        );
    }
}
