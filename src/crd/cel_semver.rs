//! Kubernetes' semver library (`semver('1.2.3')`, `isSemver`, `major()`, `minor()`,
//! `patch()`, `isLessThan`, `isGreaterThan`, `compareTo`, and the `normalize` forms
//! `semver('v1.2', true)` and `isSemver('v1.2', true)`), as the API server has it since 1.33.
//!
//! Versions are read as the `blang/semver` package the library uses reads them, and refused in
//! its words: `MAJOR.MINOR.PATCH`, no leading zeros, then a prerelease after the first `-`
//! and build metadata after the first `+`, each of dot-separated identifiers of
//! `[0-9A-Za-z-]`. Build metadata does not count in comparisons or equality. Normalizing
//! drops a leading `v` and leading zeros, and completes `1` and `1.2` with zeros. The `semver`
//! crate is not used: its errors are its own, and the library's messages are blang's.

use super::cel_k8s::{Function, boolean, int, methods, opaque, refused, string_arg, the};
use super::cel_net::go_quote;
use cel::common::types::{BOOL_TYPE, STRING_TYPE, Type};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError};
use std::cmp::Ordering;

const SEMVER: &str = "kubernetes.Semver";

/// A prerelease identifier: a number, or other text.
#[derive(Debug, Clone)]
enum Pre {
    Number(u64),
    Text(String),
}

#[derive(Debug, Clone)]
struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Pre>,
}

impl Semver {
    /// `blang/semver`'s `Compare`: by numbers, then a version without prerelease above one
    /// with, then prerelease identifiers in order (numbers below text).
    fn compare(&self, other: &Semver) -> Ordering {
        let numbers =
            (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if numbers != Ordering::Equal {
            return numbers;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            (false, false) => {}
        }
        for (a, b) in self.pre.iter().zip(&other.pre) {
            let order = match (a, b) {
                (Pre::Number(a), Pre::Number(b)) => a.cmp(b),
                (Pre::Number(_), Pre::Text(_)) => Ordering::Less,
                (Pre::Text(_), Pre::Number(_)) => Ordering::Greater,
                (Pre::Text(a), Pre::Text(b)) => a.cmp(b),
            };
            if order != Ordering::Equal {
                return order;
            }
        }
        self.pre.len().cmp(&other.pre.len())
    }
}

impl PartialEq for Semver {
    fn eq(&self, other: &Semver) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        SEMVER
    }
}

const NUMBERS: &str = "0123456789";
const ALPHANUMERIC: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789";

fn only(s: &str, set: &str) -> bool {
    s.chars().all(|c| set.contains(c))
}

fn leading_zero(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

/// Go's `strconv.ParseUint(s, 10, 64)` of digits, with its errors.
fn number(s: &str) -> Result<u64, String> {
    if s.is_empty() {
        return Err(format!(
            "strconv.ParseUint: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    s.parse().map_err(|_| {
        format!(
            "strconv.ParseUint: parsing {}: value out of range",
            go_quote(s)
        )
    })
}

/// A part of `MAJOR.MINOR.PATCH`.
fn part(s: &str, name: &str) -> Result<u64, String> {
    if !only(s, NUMBERS) {
        return Err(format!(
            "Invalid character(s) found in {name} number {}",
            go_quote(s)
        ));
    }
    if leading_zero(s) {
        let name = format!("{}{}", name[..1].to_uppercase(), &name[1..]);
        return Err(format!(
            "{name} number must not contain leading zeroes {}",
            go_quote(s)
        ));
    }
    number(s)
}

/// `blang/semver`'s `Parse`.
fn parse(s: &str) -> Result<Semver, String> {
    if s.is_empty() {
        return Err("Version string empty".into());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    let [major, minor, rest] = parts[..] else {
        return Err("No Major.Minor.Patch elements found".into());
    };
    let major = part(major, "major")?;
    let minor = part(minor, "minor")?;
    let (rest, build) = match rest.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (rest, None),
    };
    let (patch, pre) = match rest.split_once('-') {
        Some((patch, pre)) => (patch, Some(pre)),
        None => (rest, None),
    };
    let patch = part(patch, "patch")?;
    let mut identifiers = Vec::new();
    for id in pre
        .map(|p| p.split('.').collect::<Vec<_>>())
        .unwrap_or_default()
    {
        if id.is_empty() {
            return Err("Prerelease is empty".into());
        }
        if only(id, NUMBERS) {
            if leading_zero(id) {
                return Err(format!(
                    "Numeric PreRelease version must not contain leading zeroes {}",
                    go_quote(id)
                ));
            }
            identifiers.push(Pre::Number(number(id)?));
        } else if only(id, ALPHANUMERIC) {
            identifiers.push(Pre::Text(id.into()));
        } else {
            return Err(format!(
                "Invalid character(s) found in prerelease {}",
                go_quote(id)
            ));
        }
    }
    for id in build
        .map(|b| b.split('.').collect::<Vec<_>>())
        .unwrap_or_default()
    {
        if id.is_empty() {
            return Err("Build meta data is empty".into());
        }
        if !only(id, ALPHANUMERIC) {
            return Err(format!(
                "Invalid character(s) found in build meta data {}",
                go_quote(id)
            ));
        }
    }
    Ok(Semver {
        major,
        minor,
        patch,
        pre: identifiers,
    })
}

/// The library's normalizing reading: no `v`, no leading zeros, missing parts zero.
fn parse_normalized(s: &str) -> Result<Semver, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s
        .splitn(3, '.')
        .map(|p| {
            if p.len() <= 1 {
                return p.to_string();
            }
            let trimmed = p.trim_start_matches('0');
            if trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                trimmed.to_string()
            } else {
                format!("0{trimmed}")
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".into());
        }
        parts.resize(3, "0".into());
    }
    parse(&parts.join("."))
}

/// The version `semver(s)` or `semver(s, normalize)` reads.
fn read(args: &[CowVal<'_, '_>], function: &str) -> Result<Result<Semver, String>, ExecutionError> {
    let raw = string_arg(args[0].as_ref(), function)?;
    let normalize = match args.get(1) {
        Some(flag) => {
            *<&bool>::try_from(flag.as_ref()).map_err(|_| refused(function, "no such overload"))?
        }
        None => false,
    };
    Ok(if normalize {
        parse_normalized(raw)
    } else {
        parse(raw)
    })
}

/// The semver library, with the `normalize` overloads of its version 1.
pub fn semver(env: &mut Env) -> Result<(), DeclarationError> {
    let semver = || Type::new_opaque_type(SEMVER);
    env.add_type(semver())?;
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], to_semver)?;
    env.add_overload(
        "semver",
        "string_bool_to_semver",
        vec![STRING_TYPE, BOOL_TYPE],
        to_semver,
    )?;
    env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver)?;
    env.add_overload(
        "isSemver",
        "is_semver_string_bool",
        vec![STRING_TYPE, BOOL_TYPE],
        is_semver,
    )?;
    let unary: [(&str, Function); 3] = [("major", major), ("minor", minor), ("patch", patch)];
    methods(env, "semver", semver, Vec::new, &unary)?;
    let binary: [(&str, Function); 3] = [
        ("isGreaterThan", is_greater_than),
        ("isLessThan", is_less_than),
        ("compareTo", compare_to),
    ];
    methods(env, "semver", semver, || vec![semver()], &binary)
}

fn to_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let version = read(&args, "semver")?.map_err(|why| refused("semver", why))?;
    Ok(opaque(version))
}

fn is_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(boolean(read(&args, "isSemver")?.is_ok()))
}

/// The receiver, and the other version of a comparison.
fn versions(args: &[CowVal<'_, '_>], function: &str) -> Result<(Semver, Semver), ExecutionError> {
    Ok((
        the(args[0].as_ref(), function)?,
        the(args[1].as_ref(), function)?,
    ))
}

// The parts are unsigned 64-bit numbers upstream, made CEL ints as Go converts them.
fn major<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let v: Semver = the(args[0].as_ref(), "major")?;
    Ok(int(v.major as i64))
}

fn minor<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let v: Semver = the(args[0].as_ref(), "minor")?;
    Ok(int(v.minor as i64))
}

fn patch<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let v: Semver = the(args[0].as_ref(), "patch")?;
    Ok(int(v.patch as i64))
}

fn is_greater_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = versions(&args, "isGreaterThan")?;
    Ok(boolean(a.compare(&b) == Ordering::Greater))
}

fn is_less_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = versions(&args, "isLessThan")?;
    Ok(boolean(a.compare(&b) == Ordering::Less))
}

fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = versions(&args, "compareTo")?;
    Ok(int(a.compare(&b) as i64))
}

#[cfg(test)]
mod tests {
    use crate::crd::cel_k8s::tests::{all_true, error};

    // Expected values from kubernetes/apiserver `pkg/cel/library/semver_test.go`; the
    // prerelease order and the errors' words are blang/semver's (`semver_test.go` there).

    #[test]
    fn semver_reads_and_compares_as_upstream() {
        all_true(&[
            "semver('1.2.3') == semver('1.2.3')",
            "semver('1.2.3') != semver('1.0.0')",
            "isSemver('1.2.3-beta.1+build.1')",
            "!isSemver('') && !isSemver('v1.0.0') && !isSemver(' 1.0.0')",
            "!isSemver('1. 0.0') && !isSemver('1.0.0 ') && !isSemver('01.01.01')",
            "!isSemver('1') && !isSemver('1.1')",
            "!isSemver('', true) && !isSemver(' 1.0.0', true) && !isSemver('1. 0.0', true)",
            "!isSemver('1.0.0 ', true)",
            "isSemver('v1.0.0', true) && isSemver('01.01.01', true)",
            "isSemver('1', true) && isSemver('1.1', true)",
            "semver('v01.01', true) == semver('1.1.0')",
            "semver('1.0.0').isLessThan(semver('1.2.3'))",
            "!semver('1.0.0').isLessThan(semver('1.0.0'))",
            "semver('1.2.3').isGreaterThan(semver('1.0.0'))",
            "!semver('1.0.0').isGreaterThan(semver('1.0.0'))",
            "semver('1.2.3').compareTo(semver('1.2.3')) == 0",
            "semver('1.0.0').compareTo(semver('1.2.3')) == -1",
            "semver('1.2.3').compareTo(semver('1.0.0')) == 1",
            "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2",
            "semver('1.2.3').patch() == 3",
            // Prereleases sort below their release, numbers below text; build metadata
            // does not count.
            "semver('1.0.0-alpha').isLessThan(semver('1.0.0'))",
            "semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))",
            "semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))",
            "semver('1.0.0+build.1') == semver('1.0.0+build.2')",
            "type(semver('1.0.0')) == kubernetes.Semver",
        ]);
        assert_eq!(
            error("semver('v1.0')"),
            "No Major.Minor.Patch elements found"
        );
        assert_eq!(error("semver('')"), "Version string empty");
        assert_eq!(
            error("semver('01.0.0')"),
            "Major number must not contain leading zeroes \"01\""
        );
        assert_eq!(
            error("semver('1.0.0-01')"),
            "Numeric PreRelease version must not contain leading zeroes \"01\""
        );
        assert_eq!(
            error("semver('1.x.0')"),
            "Invalid character(s) found in minor number \"x\""
        );
        assert_eq!(
            error("semver('1.2-rc', true)"),
            "short version cannot contain PreRelease/Build meta data"
        );
    }
}
