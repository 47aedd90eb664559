//! Kubernetes' format library (`format.dns1123Label()`, `format.named('uuid')`,
//! `<format>.validate(string)`), as the API server has it since 1.31: `validate` gives
//! `optional.none()` for a valid string and an optional list of apimachinery's error strings
//! otherwise; `format.named` gives an optional format, none for an unknown name. The `cel`
//! crate has CEL's optional values (`optional.none()`, `hasValue()`, `value()`), which these
//! are.
//!
//! The names: `dns1123Label`, `dns1123Subdomain`, `dns1035Label`, `qualifiedName`, their
//! `Prefix` forms (a trailing `-` allowed, as for `generateName`), `labelValue`, `uri`
//! (`url.ParseRequestURI`'s error), `uuid`, `byte`, `date` and `datetime` (the OpenAPI
//! formats, read as the CRD schema check reads them). The messages are those of apimachinery's
//! `util/validation` (labels and subdomains: "must be no more than 63 characters") and
//! `api/validate/content` (qualified names and label values: "... bytes"), as their current
//! sources word them.

use super::cel_k8s::{opaque, string_arg, the};
use cel::common::types::{CelList, CelOptional, CelString, STRING_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError};

const FORMAT: &str = "kubernetes.NamedFormat";

/// The formats, by the name `format.<name>()` and `format.named` know them.
const NAMES: [&str; 13] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

/// A named format: its index in [`NAMES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Format(usize);

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        FORMAT
    }
}

/// The format library.
pub fn format(env: &mut Env) -> Result<(), DeclarationError> {
    let format = || Type::new_opaque_type(FORMAT);
    env.add_type(format())?;
    let constants: [cel::common::functions::Function; 13] = [
        constant::<0>,
        constant::<1>,
        constant::<2>,
        constant::<3>,
        constant::<4>,
        constant::<5>,
        constant::<6>,
        constant::<7>,
        constant::<8>,
        constant::<9>,
        constant::<10>,
        constant::<11>,
        constant::<12>,
    ];
    for (name, op) in NAMES.iter().zip(constants) {
        let qualified = format!("format.{name}");
        env.add_overload(&qualified, &qualified, vec![], op)?;
    }
    env.add_overload("format.named", "format-named", vec![STRING_TYPE], named)?;
    env.add_member_overload(
        "validate",
        "format-validate",
        format(),
        vec![STRING_TYPE],
        validate,
    )?;
    Ok(())
}

fn constant<'b, 'v, const I: usize>(
    _: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(opaque(Format(I)))
}

fn named<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let name = string_arg(args[0].as_ref(), "format.named")?;
    let found = NAMES.iter().position(|n| *n == name).map(|i| {
        let CowVal::Owned(value) = opaque(Format(i)) else {
            unreachable!("an opaque value is owned")
        };
        value
    });
    Ok(CowVal::Owned(Box::new(CelOptional::from(found))))
}

fn validate<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let Format(index) = the(args[0].as_ref(), "validate")?;
    let value = string_arg(args[1].as_ref(), "validate")?;
    let errors = errors(NAMES[index], value);
    let optional = if errors.is_empty() {
        CelOptional::none()
    } else {
        let list: Vec<Box<dyn Val + 'v>> = errors
            .into_iter()
            .map(|e| Box::new(CelString::from(e)) as Box<dyn Val + 'v>)
            .collect();
        CelOptional::of(Box::new(CelList::from(list)))
    };
    Ok(CowVal::Owned(Box::new(optional)))
}

const LABEL: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const SUBDOMAIN: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const KEY: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const VALUE: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

/// A DNS-1123 label: alphanumerics and `-` inside.
fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_subdomain(s: &str) -> bool {
    s.split('.').all(is_label)
}

fn is_dns1035(s: &str) -> bool {
    is_label(s) && s.starts_with(|c: char| c.is_ascii_lowercase())
}

/// A label key's name, or a label value's text: alphanumerics, `-`, `_` and `.` inside.
fn is_key(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// apimachinery's `RegexError`.
fn regex_error(message: &str, regex: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{regex}')");
    }
    let examples: String = examples
        .iter()
        .map(|e| format!("'{e}', "))
        .collect::<Vec<_>>()
        .join(" or ");
    format!("{message} (e.g. {examples}regex used for validation is '{regex}')")
}

/// A generated name's prefix may end with `-`: it is checked as if the last two characters
/// were `a`, as apimachinery's `maskTrailingDash` does.
fn masked(s: &str) -> String {
    if s.len() > 1 && s.ends_with('-') {
        format!("{}a", String::from_utf8_lossy(&s.as_bytes()[..s.len() - 2]))
    } else {
        s.to_string()
    }
}

fn dns1123_label(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !is_label(s) {
        errors.push(if is_subdomain(s) {
            "must not contain dots".to_string()
        } else {
            regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters \
                 or '-', and must start and end with an alphanumeric character",
                LABEL,
                &["my-name", "123-abc"],
            )
        });
    }
    errors
}

/// A subdomain, with the words of `util/validation` (`characters`) or of
/// `api/validate/content` (`bytes`).
fn dns1123_subdomain(s: &str, unit: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 253 {
        errors.push(format!("must be no more than 253 {unit}"));
    }
    if !is_subdomain(s) {
        errors.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character",
            SUBDOMAIN,
            &["example.com"],
        ));
    }
    errors
}

fn dns1035_label(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !is_dns1035(s) {
        errors.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start \
             with an alphabetic character, and end with an alphanumeric character",
            DNS1035,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

const KEY_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must \
                           start and end with an alphanumeric character";

/// A qualified name (a label key): an optional subdomain and `/`, then a name.
fn qualified_name(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors.extend(
                    dns1123_subdomain(prefix, "bytes")
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. \
                 'example.com/MyName')",
                regex_error(KEY_MESSAGE, KEY, &["MyName", "my.name", "123-abc"])
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 bytes".to_string());
    }
    if !is_key(name) {
        errors.push(format!(
            "name part {}",
            regex_error(KEY_MESSAGE, KEY, &["MyName", "my.name", "123-abc"])
        ));
    }
    errors
}

fn label_value(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push("must be no more than 63 bytes".to_string());
    }
    if !s.is_empty() && !is_key(s) {
        errors.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', \
             '_' or '.', and must start and end with an alphanumeric character",
            VALUE,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// What the format says of `s`: nothing when it is valid.
fn errors(name: &str, s: &str) -> Vec<String> {
    let openapi = |format: &str, error: &str| {
        if super::structural::formatted(format, s) {
            Vec::new()
        } else {
            vec![error.to_string()]
        }
    };
    match name {
        "dns1123Label" => dns1123_label(s),
        "dns1123Subdomain" => dns1123_subdomain(s, "characters"),
        "dns1035Label" => dns1035_label(s),
        "qualifiedName" => qualified_name(s),
        "dns1123LabelPrefix" => dns1123_label(&masked(s)),
        "dns1123SubdomainPrefix" => dns1123_subdomain(&masked(s), "characters"),
        "dns1035LabelPrefix" => dns1035_label(&masked(s)),
        "labelValue" => label_value(s),
        "uri" => super::cel_url::request_uri_error(s).into_iter().collect(),
        "uuid" => openapi("uuid", "does not match the UUID format"),
        "byte" => openapi("byte", "invalid base64"),
        "date" => openapi("date", "invalid date"),
        _ => openapi("datetime", "invalid datetime"),
    }
}

#[cfg(test)]
mod tests {
    use crate::crd::cel_k8s::tests::all_true;

    // Expected values from kubernetes/apiextensions-apiserver
    // `pkg/apiserver/schema/cel/validation_test.go` ("format") and kubernetes/apiserver
    // `pkg/cel/library/format_test.go`.

    #[test]
    fn formats_validate_as_upstream() {
        all_true(&[
            "format.dns1123Label().validate('my-label-name') == optional.none()",
            "format.dns1123Subdomain().validate('apiextensions.k8s.io') == optional.none()",
            "format.qualifiedName().validate('apiextensions.k8s.io/v1beta1') == optional.none()",
            "format.dns1123LabelPrefix().validate('my-label-prefix-') == optional.none()",
            "format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-') == optional.none()",
            "format.dns1035LabelPrefix().validate('my-label-prefix-') == optional.none()",
            "format.uri().validate('http://example.com') == optional.none()",
            "format.uuid().validate('123e4567-e89b-12d3-a456-426614174000') == optional.none()",
            "format.byte().validate('aGVsbG8=') == optional.none()",
            "format.date().validate('2021-01-01') == optional.none()",
            "format.datetime().validate('2021-01-01T00:00:00Z') == optional.none()",
            "format.named('dns1123Label').value().validate('my-name') == optional.none()",
            "format.dns1123Label().validate('contains a space').value()[0] == \"a lowercase RFC \
             1123 label must consist of lower case alphanumeric characters or '-', and must \
             start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', \
             regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')\"",
            "!format.named('unknown').hasValue()",
            // format_test.go
            "format.dns1123Subdomain().validate('contains a space').value() == [\"a lowercase \
             RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', \
             and must start and end with an alphanumeric character (e.g. 'example.com', regex \
             used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')\"]",
            "format.dns1035Label().validate('contains a space').value() == [\"a DNS-1035 label \
             must consist of lower case alphanumeric characters or '-', start with an alphabetic \
             character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', \
             regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')\"]",
            "format.qualifiedName().validate('contains a space').value() == [\"name part must \
             consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
             alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for \
             validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')\"]",
            "format.dns1123LabelPrefix().validate('contains a space-').value()[0]\
             .startsWith('a lowercase RFC 1123 label must consist')",
            "format.dns1123SubdomainPrefix().validate('contains a space-').value()[0]\
             .startsWith('a lowercase RFC 1123 subdomain must consist')",
            "format.dns1035LabelPrefix().validate('contains a space-').value()[0]\
             .startsWith('a DNS-1035 label must consist')",
            "format.dns1123Subdomain().validate('example.com') == optional.none()",
            "format.dns1035Label().validate('my-label-name') == optional.none()",
            "format.qualifiedName().validate('my.name') == optional.none()",
            "format.byte().validate('aGVsbG8').value() == ['invalid base64']",
            "format.date().validate('2020-01-01') == optional.none()",
            "format.date().validate('2020-01-32').value() == ['invalid date']",
            "format.datetime().validate('2020-01-01T00:00:00Z') == optional.none()",
            "format.datetime().validate('2020-01-32T00:00:00Z').value() == ['invalid datetime']",
            // Cases of this project's.
            "format.dns1123Label().validate('a.b').value() == ['must not contain dots']",
            "format.dns1035Label().validate('1abc').hasValue()",
            "format.labelValue().validate('') == optional.none()",
            "format.labelValue().validate('-a').hasValue()",
            "format.qualifiedName().validate('/a').value() == ['prefix part must be non-empty']",
            "format.uri().validate('../relative').value() == \
             ['parse \"../relative\": invalid URI for request']",
            "format.uuid().validate('not-a-uuid').value() == ['does not match the UUID format']",
            "format.byte().validate('!').value() == ['invalid base64']",
            "format.date().validate('2021-13').value() == ['invalid date']",
            "format.datetime().validate('yesterday').value() == ['invalid datetime']",
            "format.dns1123Label() == format.named('dns1123Label').value()",
            "format.dns1123Label() != format.dns1035Label()",
            "type(format.uuid()) == kubernetes.NamedFormat",
            "format.dns1123Label().validate('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\
             aaaaaaaaaaaaa').value() == ['must be no more than 63 characters']",
        ]);
    }
}
