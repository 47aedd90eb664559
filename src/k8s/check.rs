//! The strict check of one object against its kind in one Kubernetes minor: unknown fields
//! (with the nearest known name, or the minor that has the field), wrong types, missing
//! required fields, and values the API server cannot decode (quantities, base64, RFC 3339
//! times, int-or-string, 32-bit integers, fixed sets of strings), each at its node.
//!
//! Values are never quoted in messages: an object may hold credentials anywhere.

use super::{Def, Field, Ty, Version, field_since};
use crate::kube::KubeVersion;
use crate::source::Span;
use crate::yaml::{At, Node, Step, Value, key_text, owned};

/// One thing the API server would refuse.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Where: the field or item the problem is about.
    pub path: Vec<Step>,
    /// The node to point at: an unknown key itself, the key of a mapping or sequence that is
    /// wrong as a whole (or lacks a field), a scalar value.
    pub span: Span,
    pub message: String,
    pub help: Option<String>,
}

/// Every problem of `object` against its kind in `version`, or `None` if `version` does not
/// serve its `apiVersion`/`kind` (see [`super::kind`] for what to say then).
pub fn check(object: &Node, version: KubeVersion) -> Option<Vec<Problem>> {
    let text = |key: &str| match object.get(key).map(|n| &n.value) {
        Some(Value::Str(s)) => Some(s.as_str()),
        _ => None,
    };
    let this = Version::of(version)?;
    let def = this.kind(text("apiVersion")?, text("kind")?)?;
    let mut walk = Walk {
        version: this,
        path: Vec::new(),
        out: Vec::new(),
    };
    walk.object(object, &object.span, def);
    // A manifest with no metadata has no name: the API server refuses it (the definitions of
    // a few kinds, Status-like ones, do not require it).
    if object.get("metadata").is_none() && def.field("metadata").is_some_and(|f| !f.required) {
        walk.missing(&object.span, "metadata");
    }
    Some(walk.out)
}

struct Walk<'a> {
    version: &'static Version,
    /// Borrowed from the object: made owned only for what is reported.
    path: Vec<At<'a>>,
    out: Vec<Problem>,
}

impl<'a> Walk<'a> {
    fn report(&mut self, span: &Span, message: String, help: Option<String>) {
        self.out.push(Problem {
            path: owned(&self.path),
            span: span.clone(),
            message,
            help,
        });
    }

    fn missing(&mut self, at: &Span, field: &str) {
        self.report(at, format!("missing required field `{field}`"), None);
    }

    /// `node` against `ty`; `at` is where to point for a collection (its key, if it has one).
    fn value(&mut self, node: &'a Node, at: &Span, ty: Ty) {
        let scalar_at = &node.span;
        match (ty, &node.value) {
            (Ty::Any, _) => {}
            (Ty::Ref(name), Value::Map(_)) => {
                // The module tests check that every reference resolves in its version.
                if let Some(def) = self.version.def(name) {
                    self.object(node, at, def);
                }
            }
            (Ty::Object, Value::Map(_)) => {}
            (Ty::List(items), Value::Seq(list)) => {
                for (i, item) in list.iter().enumerate() {
                    self.path.push(At::Index(i));
                    self.value(item, &item.span, *items);
                    self.path.pop();
                }
            }
            (Ty::Map(values), Value::Map(entries)) => {
                for (k, v) in entries {
                    self.path.push(At::Key(key_text(k)));
                    self.value(v, &k.span, *values);
                    self.path.pop();
                }
            }
            (Ty::Str, Value::Str(_)) => {}
            (Ty::Enum(allowed), Value::Str(s)) => {
                if !allowed.contains(&s.as_str()) {
                    let help = allowed
                        .iter()
                        .find(|a| a.eq_ignore_ascii_case(s))
                        .map(|a| format!("did you mean `{a}`?"));
                    self.report(
                        scalar_at,
                        format!("expected one of {}", quoted(allowed)),
                        help,
                    );
                }
            }
            (Ty::Int64, Value::Int(_)) | (Ty::IntOrString, Value::Int(_)) => {}
            (Ty::Int32, Value::Int(i)) => {
                if i32::try_from(*i).is_err() {
                    self.report(
                        scalar_at,
                        "expected a 32-bit integer, found one out of range".into(),
                        None,
                    );
                }
            }
            (Ty::Number | Ty::Quantity, Value::Int(_)) => {}
            (Ty::Number | Ty::Quantity, Value::Float(f)) if f.is_finite() => {}
            (Ty::IntOrString, Value::Str(_)) => {}
            (Ty::Quantity, Value::Str(s)) => {
                if crate::kube::quantity::parse(s).is_none() {
                    self.report(
                        scalar_at,
                        "not a quantity: expected a number or a string like 500m, 64Gi or 1e3"
                            .into(),
                        None,
                    );
                }
            }
            (Ty::Byte, Value::Str(s)) => {
                if !is_base64(s) {
                    self.report(scalar_at, "not valid base64".into(), None);
                }
            }
            (Ty::DateTime, Value::Null) => {}
            (Ty::DateTime, Value::Str(s)) => {
                if !is_date_time(s) {
                    self.report(
                        scalar_at,
                        "not an RFC 3339 date-time (like 2024-01-31T12:00:00Z)".into(),
                        None,
                    );
                }
            }
            (Ty::Bool, Value::Bool(_)) => {}
            // A non-finite float reads as a string (JSON has no such number).
            (Ty::Str | Ty::IntOrString, Value::Float(f)) if !f.is_finite() => {}
            (ty, _) => {
                let at = match node.value {
                    Value::Map(_) | Value::Seq(_) => at,
                    _ => scalar_at,
                };
                self.report(
                    at,
                    format!("expected {}, found {}", expected(ty), node.describe()),
                    None,
                );
            }
        }
    }

    /// A mapping against a definition.
    fn object(&mut self, node: &'a Node, at: &Span, def: &'static Def) {
        let Value::Map(entries) = &node.value else {
            return;
        };
        for (k, v) in entries {
            let name = key_text(k);
            match def.field(&name) {
                Some(field) => {
                    self.path.push(At::Key(name));
                    self.value(v, &k.span, field.ty);
                    self.path.pop();
                }
                None => {
                    self.path.push(At::Key(name.clone()));
                    self.unknown(&k.span, &name, def);
                    self.path.pop();
                }
            }
        }
        for field in def.fields.iter().filter(|f| f.required) {
            if !entries.iter().any(|(k, _)| key_text(k) == field.name) {
                self.missing(at, field.name);
            }
        }
    }

    fn unknown(&mut self, at: &Span, name: &str, def: &'static Def) {
        if let Some(since) = field_since(def.name, name, self.version) {
            self.report(
                at,
                format!(
                    "field `{name}` needs Kubernetes {since} or newer (checking against 1.{})",
                    self.version.minor
                ),
                Some(format!(
                    "remove it, or check against the cluster's version with --kube-version {since}"
                )),
            );
            return;
        }
        let help = crate::kube::nearest(name, def.fields.iter().map(|f: &Field| f.name))
            .map(|best| format!("did you mean `{best}`?"));
        self.report(at, format!("unknown field `{name}`"), help);
    }
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a type expects, for "expected ..., found ..." messages.
fn expected(ty: Ty) -> &'static str {
    match ty {
        Ty::Str | Ty::Enum(_) => "a string",
        Ty::Int32 | Ty::Int64 => "an integer",
        Ty::Number => "a number",
        Ty::Bool => "a boolean",
        Ty::Byte => "a base64 string",
        Ty::DateTime => "an RFC 3339 date-time string",
        Ty::Quantity => "a quantity (a number, or a string like 500m or 64Gi)",
        Ty::IntOrString => "an integer or a string",
        Ty::Object | Ty::Ref(_) | Ty::Map(_) => "a mapping",
        Ty::List(_) => "a sequence",
        Ty::Any => "anything",
    }
}

/// Padded standard base64 as Go's JSON decoder reads `[]byte` (it skips `\r` and `\n`).
pub(crate) fn is_base64(s: &str) -> bool {
    let mut len = 0usize;
    let mut padding = 0usize;
    for b in s.bytes().filter(|b| !matches!(b, b'\r' | b'\n')) {
        match b {
            b'=' => padding += 1,
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' if padding == 0 => {}
            _ => return false,
        }
        len += 1;
    }
    len.is_multiple_of(4) && padding <= 2
}

/// RFC 3339 `date-time`: `2024-01-31T12:00:00Z`, optional fraction, `Z` or a `±hh:mm` offset.
pub(crate) fn is_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        b.get(r.clone())
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
            .then(|| s[r].parse::<u32>().unwrap_or(0))
    };
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = (
        digits(0..4),
        digits(5..7),
        digits(8..10),
        digits(11..13),
        digits(14..16),
        digits(17..19),
    ) else {
        return false;
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return false;
    }
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if day == 0 || day > days || hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut rest = &s[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let n = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &fraction[n..];
    }
    match rest.as_bytes() {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => {
            [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit())
                && (h1 - b'0') * 10 + (h2 - b'0') <= 23
                && (m1 - b'0') * 10 + (m2 - b'0') <= 59
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;
    use crate::yaml;

    fn problems(text: &str, minor: u32) -> Vec<(String, String, usize, usize)> {
        let source = Source::new("t", text);
        let doc = yaml::parse(&source, yaml::Limits::default())
            .unwrap()
            .documents
            .remove(0);
        check(&doc, KubeVersion { major: 1, minor })
            .expect("a served kind")
            .into_iter()
            .map(|p| {
                let (line, col) = source.line_col(p.span.start);
                (
                    yaml::display_path(&p.path),
                    format!(
                        "{}{}",
                        p.message,
                        p.help.map(|h| format!(" ({h})")).unwrap_or_default()
                    ),
                    line,
                    col,
                )
            })
            .collect()
    }

    const JOB: &str = "\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: nvcr.io/EXAMPLE/tao:1
";

    #[test]
    fn a_valid_job_has_no_problem_in_any_version() {
        for minor in KubeVersion::OLDEST.minor..=KubeVersion::NEWEST.minor {
            assert_eq!(problems(JOB, minor), vec![], "1.{minor}");
        }
    }

    #[test]
    fn unknown_fields_point_at_the_key_with_the_nearest_name() {
        let text = JOB.replace("        image:", "        resource: {}\n        image:");
        assert_eq!(
            problems(&text, 37),
            [(
                "spec.template.spec.containers[0].resource".into(),
                "unknown field `resource` (did you mean `resources`?)".into(),
                12,
                9
            )]
        );
    }

    #[test]
    fn a_newer_field_names_the_version_that_has_it() {
        let text = JOB.replace("  backoffLimit: 0", "  managedBy: example.com/FAKE");
        assert_eq!(problems(&text, 37), vec![]);
        let found = problems(&text, 29);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "spec.managedBy");
        assert!(
            found[0].1.starts_with(
                "field `managedBy` needs Kubernetes 1.30 or newer (checking against 1.29)"
            ),
            "{found:?}"
        );
        assert_eq!((found[0].2, found[0].3), (6, 3));
    }

    #[test]
    fn types_required_fields_and_values() {
        let text = "\
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {a: 1}, creationTimestamp: null}
spec:
  restartPolicy: never
  activeDeadlineSeconds: 1.5
  priority: 4294967296
  containers:
  - name: c
    ports: [{containerPort: 80, protocol: TCP}, {name: x}]
    resources: {limits: {memory: 8 GB, cpu: 2, nvidia.com/gpu: \"1\"}}
    livenessProbe: {httpGet: {port: [1]}}
  volumes: yes
";
        let found = problems(text, 30);
        let quantity = "not a quantity: expected a number or a string like 500m, 64Gi or 1e3";
        let expect = [
            (
                "metadata.labels.a",
                "expected a string, found an integer",
                3,
                33,
            ),
            (
                "spec.restartPolicy",
                "expected one of `Always`, `Never`, `OnFailure` (did you mean `Never`?)",
                5,
                18,
            ),
            (
                "spec.activeDeadlineSeconds",
                "expected an integer, found a number",
                6,
                26,
            ),
            (
                "spec.priority",
                "expected a 32-bit integer, found one out of range",
                7,
                13,
            ),
            (
                "spec.containers[0].ports[1]",
                "missing required field `containerPort`",
                10,
                49,
            ),
            (
                "spec.containers[0].resources.limits.memory",
                quantity,
                11,
                34,
            ),
            (
                "spec.containers[0].livenessProbe.httpGet.port",
                "expected an integer or a string, found a sequence",
                12,
                31,
            ),
            (
                "spec.volumes",
                "expected a sequence, found a string",
                13,
                12,
            ),
        ];
        let expect: Vec<(String, String, usize, usize)> = expect
            .iter()
            .map(|&(p, m, l, c)| (p.to_owned(), m.to_owned(), l, c))
            .collect();
        // `image` is not required by the API; `creationTimestamp: null` is the zero time.
        assert_eq!(found, expect);
    }

    #[test]
    fn base64_and_date_time() {
        assert!(is_base64("RkFLRQ=="));
        assert!(is_base64("RkFL\nRQ=="));
        assert!(is_base64(""));
        assert!(!is_base64("RkFLRQ="));
        assert!(!is_base64("RkFL RQ=="));
        assert!(!is_base64("Rk=LRQ=="));
        assert!(is_date_time("2024-01-31T12:00:00Z"));
        assert!(is_date_time("2024-02-29T23:59:60.123+05:30"));
        assert!(!is_date_time("2023-02-29T00:00:00Z"));
        assert!(!is_date_time("2024-01-31 12:00:00Z"));
        assert!(!is_date_time("2024-01-31T12:00:00"));
    }
}
