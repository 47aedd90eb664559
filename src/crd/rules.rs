//! A CRD's validation rules (`x-kubernetes-validations`), CEL expressions evaluated by the
//! `cel` crate with `self` bound to the value at the rule's place, as the API server evaluates
//! them on create: a transition rule (one that reads `oldSelf`) has nothing to compare and is
//! skipped; a rule that does not compile makes the CRD invalid, once, at its place.
//!
//! The strings and sets extensions and Kubernetes' own libraries are evaluated (`ENV`): lists,
//! regex, quantity, IP, CIDR, URL, semver and format. A library function that refuses the
//! object's value fails the rule with the API server's error ([`evaluate`]). What the engine
//! lacks leaves a rule unevaluated rather than guessed; so does a rule whose cost on an object
//! would exceed [`COST_LIMIT`] (the crate counts no cost, so it is bounded before it runs).

use crate::yaml::{Node, Step, Value};
use cel::objects::{Key, Map};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

/// Roughly the API server's per-call cost limit, in visited values.
const COST_LIMIT: u64 = 10_000_000;

/// CEL's standard library, the strings extension Kubernetes enables (`ext.Strings`:
/// `lowerAscii`, `split`, `join`, `trim`, `replace`, `indexOf`, `substring`...), the sets
/// extension, and Kubernetes' own libraries: lists, regex, quantity, IP, CIDR, URL, semver
/// and format.
static ENV: LazyLock<Arc<cel::Env>> = LazyLock::new(|| {
    let mut env = cel::Env::stdlib();
    env.add_extension(cel::extensions::strings)
        .and_then(|()| env.add_extension(super::cel_k8s::lists))
        .and_then(|()| env.add_extension(super::cel_k8s::regex))
        .and_then(|()| env.add_extension(super::cel_k8s::quantity))
        .and_then(|()| env.add_extension(super::cel_k8s::sets))
        .and_then(|()| env.add_extension(super::cel_net::ip))
        .and_then(|()| env.add_extension(super::cel_net::cidr))
        .and_then(|()| env.add_extension(super::cel_url::url))
        .and_then(|()| env.add_extension(super::cel_semver::semver))
        .and_then(|()| env.add_extension(super::cel_format::format))
        .expect("each library declares its overloads once");
    Arc::new(env)
});

pub struct Rule {
    program: cel::Program,
    text: Box<str>,
    message: Option<Box<str>>,
    message_expression: Option<cel::Program>,
    field_path: Vec<Step>,
    reason: &'static str,
    /// Reads `oldSelf`: an update's rule.
    transition: bool,
    /// Comprehensions (`all`, `exists`, `map`, `filter`...), the exponent of the cost bound.
    loops: u32,
}

/// What a rule says of a value.
pub enum Verdict {
    Pass,
    /// Refused: the API server's error type and message, and the sub-path `fieldPath` names.
    Fail {
        reason: &'static str,
        message: String,
        field_path: Vec<Step>,
    },
    /// Not evaluated here (a transition rule, a library the crate lacks, over the cost bound).
    Unknown,
}

impl Rule {
    /// One entry of `x-kubernetes-validations`; `Err` says what the API server says of it
    /// (with the key it is about).
    pub fn read(node: &Node) -> Result<Rule, (&'static str, String)> {
        let text = |key: &str| match node.get(key).map(|n| &n.value) {
            Some(Value::Str(s)) => Some(s.as_str()),
            _ => None,
        };
        let Some(rule) = text("rule").filter(|r| !r.trim().is_empty()) else {
            return Err(("rule", "Required value: rule is not specified".into()));
        };
        let program = compile(rule).map_err(|e| ("rule", compile_error(rule, &e)))?;
        let message_expression = match text("messageExpression") {
            Some(m) => Some(compile(m).map_err(|e| ("messageExpression", compile_error(m, &e)))?),
            None => None,
        };
        let reason = match text("reason") {
            None | Some("FieldValueInvalid") => "Invalid value",
            Some("FieldValueRequired") => "Required value",
            Some("FieldValueForbidden") => "Forbidden",
            Some("FieldValueDuplicate") => "Duplicate value",
            Some(other) => {
                return Err((
                    "reason",
                    format!(
                        "Unsupported value: {}: supported values: \"FieldValueDuplicate\", \
                         \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"",
                        serde_json::Value::from(other)
                    ),
                ));
            }
        };
        let field_path = match text("fieldPath") {
            None => Vec::new(),
            Some(path) => field_path(path).ok_or((
                "fieldPath",
                format!(
                    "Invalid value: {}: not a path of the form `.field`, `['field']` or `[0]`",
                    serde_json::Value::from(path)
                ),
            ))?,
        };
        let references = program.references();
        let loops = ["all(", "exists(", "exists_one(", "map(", "filter("]
            .iter()
            .map(|f| rule.matches(&format!(".{f}")).count() as u32)
            .sum();
        Ok(Rule {
            transition: references.has_variable("oldSelf"),
            program,
            text: rule.into(),
            message: text("message").map(Into::into),
            message_expression,
            field_path,
            reason,
            loops,
        })
    }

    pub fn check(&self, node: &Node) -> Verdict {
        if self.transition {
            return Verdict::Unknown;
        }
        // What a loop may run over: the value, and the lists the rule itself writes.
        let size = u64::from(values(node, COST_LIMIT)) + self.text.len() as u64;
        if size.saturating_pow(self.loops.max(1)) > COST_LIMIT {
            return Verdict::Unknown;
        }
        let variables = [("self", to_cel(node))];
        let failed = match evaluate(&self.program, &variables) {
            Ok(Some(cel::Value::Bool(true))) => return Verdict::Pass,
            Ok(Some(cel::Value::Bool(false))) => None,
            // Not a bool (the API server refuses such a rule when the CRD is created), or not
            // evaluated here.
            Ok(_) => return Verdict::Unknown,
            Err(error) => Some(error),
        };
        let rule = self.message.as_deref().unwrap_or(&self.text);
        let message = match failed {
            // A function given arguments it has no overload for, at run time.
            Some(error) if error.starts_with("no such overload") => format!(
                "'{error}': call arguments did not match a supported operator, function or \
                 macro signature for rule: {rule}"
            ),
            Some(error) => format!("{error} evaluating rule: {rule}"),
            None => self.message(&variables),
        };
        Verdict::Fail {
            reason: self.reason,
            message,
            field_path: self.field_path.clone(),
        }
    }

    /// The message of a failed rule: `messageExpression`'s string, else `message`, else the
    /// rule, as the API server words it.
    fn message(&self, variables: &[(&str, cel::Value)]) -> String {
        if let Some(expression) = &self.message_expression
            && let Ok(Some(cel::Value::String(s))) = evaluate(expression, variables)
            && !s.trim().is_empty()
        {
            return s.to_string();
        }
        match &self.message {
            Some(m) => m.to_string(),
            None => format!("failed rule: {}", self.text),
        }
    }
}

/// A CEL expression compiled as the API server's environment reads it (the standard
/// library and macros); `Err` is the first line of why not.
pub fn compile(expression: &str) -> Result<cel::Program, String> {
    // cel-go's parser refuses longer expressions before it reads them.
    let size = expression.chars().count();
    if size > MAX_CODE_POINTS {
        return Err(format!(
            "expression code point size exceeds limit: size: {size}, limit {MAX_CODE_POINTS}"
        ));
    }
    // The first error, without the crate's caret line (whose width formatting panics past
    // 65,535 columns).
    ENV.compile(expression).map_err(|e| match e.errors.first() {
        Some(first) => format!(
            "ERROR: <input>:{}:{}: {}",
            first.pos.0, first.pos.1, first.msg
        ),
        None => "not an expression".into(),
    })
}

/// The longest expression the API server's CEL parser reads, in code points.
const MAX_CODE_POINTS: usize = 100_000;

/// `program` with these variables bound. `Err`: the evaluation fails, with the error the API
/// server reports (a missing key, a division by zero, a Kubernetes library function refusing
/// its argument: `quantity('x')`, `ip('1.2.3')`, `[].min()`). `Ok(None)`: not evaluated here
/// (a function or variable the engine lacks, a value it cannot represent: the engine's error,
/// not the object's).
pub fn evaluate(
    program: &cel::Program,
    variables: &[(&str, cel::Value)],
) -> Result<Option<cel::Value>, String> {
    let mut context = cel::Context::with_env(ENV.clone());
    for (name, value) in variables {
        context.add_variable_from_value(*name, value.clone());
    }
    match program.execute(&context) {
        Ok(value) => Ok(Some(value)),
        Err(cel::ExecutionError::NoSuchKey(key)) => Err(format!("no such key: {key}")),
        Err(cel::ExecutionError::DivisionByZero(_)) => Err("division by zero".into()),
        Err(cel::ExecutionError::RemainderByZero(_)) => Err("modulus by zero".into()),
        Err(error) => match super::cel_k8s::refusal(&error) {
            Some(message) => Err(message.to_string()),
            None => Ok(None),
        },
    }
}

/// The API server's words for an expression that does not compile; the expression is
/// shortened (one may be 100,000 characters long).
pub fn compile_error(expression: &str, error: &str) -> String {
    format!(
        "Invalid value: {}: compilation failed: {error}",
        serde_json::Value::from(crate::diag::shown(expression, 120))
    )
}

/// `fieldPath`: `.a.b`, `.a['b.c']`, `.a[0]`.
fn field_path(path: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']")?;
            steps.push(Step::Key(after[..end].to_string().into()));
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            steps.push(Step::Index(after[..end].parse().ok()?));
            rest = &after[end + 1..];
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return None;
            }
            steps.push(Step::Key(after[..end].to_string().into()));
            rest = &after[end..];
        } else {
            return None;
        }
    }
    Some(steps)
}

/// How many values `node` holds, counted up to `cap`.
fn values(node: &Node, cap: u64) -> u32 {
    fn count(node: &Node, left: &mut u64) {
        if *left == 0 {
            return;
        }
        *left -= 1;
        match &node.value {
            Value::Seq(items) => items.iter().for_each(|i| count(i, left)),
            Value::Map(entries) => entries.iter().for_each(|(_, v)| count(v, left)),
            _ => {}
        }
    }
    let mut left = cap;
    count(node, &mut left);
    u32::try_from(cap - left).unwrap_or(u32::MAX)
}

/// A YAML value as CEL sees the JSON the API server decodes.
pub fn to_cel(node: &Node) -> cel::Value {
    match &node.value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Int(i) => cel::Value::Int(*i),
        Value::Float(f) => cel::Value::Float(*f),
        Value::Str(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Seq(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Map(entries) => {
            let map: HashMap<Key, cel::Value> = entries
                .iter()
                .map(|(k, v)| {
                    (
                        Key::String(Arc::new(crate::yaml::key_text(k).into_owned())),
                        to_cel(v),
                    )
                })
                .collect();
            cel::Value::Map(Map { map: Arc::new(map) })
        }
    }
}

#[cfg(test)]
mod never_panic_tests {
    use super::{compile, evaluate};
    use proptest::strategy::Strategy;

    /// Every Kubernetes library function that reads a string, on any string the object holds:
    /// an answer or an error, never a panic (they slice their input by byte offsets).
    const CALLS: &[&str] = &[
        "ip(self)",
        "isIP(self)",
        "ip.isCanonical(self)",
        "cidr(self)",
        "isCIDR(self)",
        "cidr('10.0.0.0/8').containsIP(self)",
        "cidr('::/0').containsCIDR(self)",
        "url(self).getHost()",
        "url(self).getHostname()",
        "url(self).getPort()",
        "url(self).getEscapedPath()",
        "url(self).getQuery()",
        "isURL(self)",
        "semver(self)",
        "semver(self, true)",
        "isSemver(self)",
        "isSemver(self, true)",
        "quantity(self)",
        "isQuantity(self)",
        "format.dns1123Label().validate(self)",
        "format.named(self).hasValue()",
        "format.uri().validate(self)",
        "format.date().validate(self)",
        "self.find('[a-z]+')",
    ];

    /// Strings made of pieces of addresses, URLs, versions and quantities, and of characters
    /// of more than one byte next to them.
    fn texts() -> impl proptest::strategy::Strategy<Value = String> {
        let piece = proptest::sample::select(vec![
            "1", "255", "0x", ".", ":", "::", "/", "//", "[", "]", "%", "%2", "%25", "é", "😀",
            "\u{2028}", "-", "+", "v", "a", "Z", "@", "?", "#", "=", "&", "Ki", "e9", " ", "ß",
            "http:", "https://", "1.2.3", "fe80", "ffff", "::1", "/24",
        ]);
        proptest::collection::vec(piece, 0..12).prop_map(|p| p.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
        #[test]
        fn library_functions_never_panic(text in texts()) {
            for call in CALLS {
                let program = compile(call).unwrap_or_else(|e| panic!("{call}: {e}"));
                let _ = evaluate(&program, &[("self", cel::Value::String(text.clone().into()))]);
            }
        }
    }
}
