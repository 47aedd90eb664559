//! The template layer: a minijinja environment with the project's templates embedded (or a
//! template author's directory laid over them). `.yaml.j2` templates are JSON-escaped: every
//! value is printed as a quoted JSON scalar (or flow collection), so no value can add a key,
//! end a document, or be read as a YAML 1.1 boolean; undefined values are errors.

use crate::diag::Diagnostic;
use crate::plan::Plan;
use minijinja::value::ValueKind;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};
use serde_json::Value as Json;
use std::sync::LazyLock;

pub use crate::codes::TEMPLATE;

/// The embedded templates, by name.
pub const EMBEDDED: &[(&str, &str)] = &[
    (
        "configmap.yaml.j2",
        include_str!("../templates/configmap.yaml.j2"),
    ),
    ("job.yaml.j2", include_str!("../templates/job.yaml.j2")),
    (
        "jobset.yaml.j2",
        include_str!("../templates/jobset.yaml.j2"),
    ),
    (
        "service.yaml.j2",
        include_str!("../templates/service.yaml.j2"),
    ),
    (
        "_container.yaml.j2",
        include_str!("../templates/_container.yaml.j2"),
    ),
    (
        "_job_spec.yaml.j2",
        include_str!("../templates/_job_spec.yaml.j2"),
    ),
];

/// One object's YAML, and the template it came from.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub template: String,
    pub text: String,
}

/// Fuel of one render: an instruction costs one, a byte written or built 1/64 (an operator
/// such as `~` builds a value only if the fuel left could pay for it). 2^19 is 524,288
/// instructions, thirty times what the largest embedded render takes (1,000 nodes with the
/// probe run under 16,384), and values of at most 32 MiB, twice [`MAX_OUTPUT`] so that the
/// output's own limit is met first. At 10,000,000 one operator could build 640 MB: seven `~` of
/// eight copies each took 780 MB.
const MAX_FUEL: u64 = 1 << 19;
/// Bytes one template may write: as much as any input may hold.
const MAX_OUTPUT: usize = crate::source::DEFAULT_MAX_INPUT as usize;

/// A template's output, refused (kept one write past the limit, to say so) beyond
/// [`MAX_OUTPUT`] bytes.
struct Bounded(Vec<u8>);

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        if self.0.len() > MAX_OUTPUT {
            return Err(std::io::Error::other("too large"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A template set, compiled once.
pub struct Templates {
    env: Environment<'static>,
}

static EMBEDDED_TEMPLATES: LazyLock<Templates> =
    LazyLock::new(|| Templates::new(&[]).expect("the embedded templates compile"));

impl Templates {
    /// The templates shipped in the binary.
    pub fn embedded() -> &'static Templates {
        &EMBEDDED_TEMPLATES
    }

    /// The embedded templates with some replaced by a template author's files (name, text).
    /// A file that replaces no embedded template is refused: a misspelt name would otherwise
    /// be ignored and the embedded template used without a word.
    pub fn new(overrides: &[(String, String)]) -> Result<Templates, Diagnostic> {
        if let Some(d) = overrides
            .iter()
            .find_map(|(name, _)| overrides_nothing(name))
        {
            return Err(d);
        }
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // A template author's loop cannot run for ever (`--templates`).
        env.set_fuel(Some(MAX_FUEL));
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .keep_trailing_newline(true)
                .build()
                .expect("the default delimiters are valid"),
        );
        // `.yaml.j2`: every value is a JSON scalar (or flow collection).
        env.set_formatter(|out, state, value| match state.auto_escape() {
            // A string (most values) is escaped straight into the output.
            AutoEscape::Json if value.kind() == ValueKind::String => {
                write_escaped(out, value.as_str().unwrap_or_default())?;
                Ok(())
            }
            AutoEscape::Json if let Some(block) = value.downcast_object_ref::<Block>() => {
                out.write_str(&block.0)?;
                Ok(())
            }
            AutoEscape::Json => {
                let mut text = String::new();
                write_value(&mut text, value)?;
                out.write_str(&text)?;
                Ok(())
            }
            _ => minijinja::escape_formatter(out, state, value),
        });
        budget::install(&mut env);
        env.add_filter("indent", indent);
        env.add_filter("safe", |_: &Value| -> Result<Value, minijinja::Error> {
            Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                "`safe` is refused: a value is always written as a JSON scalar, so that it cannot add a key",
            ))
        });
        if overrides.is_empty() {
            // Each embedded template compiles when it is first used: a render uses three of
            // six (a test compiles every one).
            env.set_loader(|name| Ok(EMBEDDED.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)));
            return Ok(Templates { env });
        }
        // An author's templates are all compiled now: a mistake is said before any request.
        for (name, text) in EMBEDDED {
            if !overrides.iter().any(|(n, _)| n == name) {
                env.add_template(name, text).map_err(template_error)?;
            }
        }
        for (name, text) in overrides {
            env.add_template_owned(name.clone(), text.clone())
                .map_err(template_error)?;
        }
        Ok(Templates { env })
    }

    /// Render one template with the Plan as its context.
    pub fn render(&self, name: &str, plan: &Plan) -> Result<Rendered, Diagnostic> {
        self.render_context(name, &context(plan))
    }

    /// Render one template with a context made by [`context`] (once for all templates).
    fn render_context(&self, name: &str, context: &Value) -> Result<Rendered, Diagnostic> {
        let template = self.env.get_template(name).map_err(template_error)?;
        let mut out = Bounded(Vec::with_capacity(4096));
        let rendered = template.render_captured_to(context, &mut out);
        if out.0.len() > MAX_OUTPUT {
            return Err(Diagnostic::error(
                TEMPLATE,
                format!("{name} writes more than {MAX_OUTPUT} bytes"),
            ));
        }
        rendered.map_err(template_error)?;
        let text = String::from_utf8(out.0).map_err(|_| {
            Diagnostic::error(TEMPLATE, format!("{name}: the output is not UTF-8 text"))
        })?;
        Ok(Rendered {
            template: name.to_string(),
            text,
        })
    }
}

/// A template's own output, captured by `{% filter indent(N) %}…{% endfilter %}` and indented:
/// written as it is, not as a JSON scalar. Only a block's output becomes one (it was escaped
/// when it was written), never a value.
#[derive(Debug)]
struct Block(String);

impl minijinja::value::Object for Block {}

/// `{% filter indent(N) %}`: every line but blank ones of the block's output moved N spaces
/// to the right, as an included template's output is nested into a deeper object. A value is
/// refused: indenting it would write it outside a JSON scalar.
fn indent(value: &Value, width: usize) -> Result<Value, minijinja::Error> {
    let refuse =
        |why: &str| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, why.to_string());
    let text = match value.as_str() {
        Some(text) if value.is_safe() => text,
        _ => {
            return Err(refuse(
                "`indent` indents a block's own output (`{% filter indent(N) %}…{% endfilter %}`), not a value",
            ));
        }
    };
    if width > 64 {
        return Err(refuse("`indent` moves a block at most 64 spaces"));
    }
    let pad = " ".repeat(width);
    let mut out = String::with_capacity(text.len() + text.len() / 8 * width / 8 + width);
    for line in text.split_inclusive('\n') {
        if !line.trim().is_empty() {
            out.push_str(&pad);
        }
        out.push_str(line);
        if out.len() > MAX_OUTPUT {
            return Err(refuse(
                "`indent` would build a value larger than a template may write",
            ));
        }
    }
    Ok(Value::from_object(Block(out)))
}

/// A byte budget on the values a template builds, beside fuel: fuel bounds the instructions
/// run, and lets one instruction build as much as the fuel left could pay for (hundreds of
/// megabytes), so that seven `join`s of eight copies each reach gigabytes. The filters whose
/// result can outgrow their input many times over (`join`, `format`, `replace`) check the size
/// of what they would build first, and refuse a value over [`MAX_OUTPUT`] bytes, the most a
/// template may write.
mod budget {
    use super::MAX_OUTPUT;
    use minijinja::value::{Kwargs, Rest, StringInput, ValueOrKwargs};
    use minijinja::{Environment, Error, ErrorKind, State, Value};

    fn too_large(filter: &str) -> Error {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("`{filter}` would build a value of more than {MAX_OUTPUT} bytes"),
        )
    }

    /// Bytes a value takes written out, counted up to `limit` (then `None`).
    fn written_len(value: &Value, limit: usize) -> Option<usize> {
        if let Some(s) = value.as_str() {
            return (s.len() <= limit).then_some(s.len());
        }
        struct Count(usize, usize);
        impl std::fmt::Write for Count {
            fn write_str(&mut self, s: &str) -> std::fmt::Result {
                self.0 += s.len();
                if self.0 > self.1 {
                    Err(std::fmt::Error)
                } else {
                    Ok(())
                }
            }
        }
        let mut count = Count(0, limit);
        std::fmt::write(&mut count, format_args!("{value}")).ok()?;
        Some(count.0)
    }

    /// `size` plus what `values` take written out, within the budget.
    fn add_up<'a>(
        filter: &str,
        mut size: usize,
        values: impl Iterator<Item = &'a Value>,
    ) -> Result<usize, Error> {
        for value in values {
            let left = MAX_OUTPUT
                .checked_sub(size)
                .ok_or_else(|| too_large(filter))?;
            size += written_len(value, left).ok_or_else(|| too_large(filter))?;
        }
        Ok(size)
    }

    fn checked(filter: &str, value: Value) -> Result<Value, Error> {
        match value.as_str() {
            Some(s) if s.len() > MAX_OUTPUT => Err(too_large(filter)),
            _ => Ok(value),
        }
    }

    pub(super) fn install(env: &mut Environment<'static>) {
        env.add_filter(
            "join",
            |state: &mut State,
             value: &Value,
             joiner: Option<StringInput<'_>>,
             attribute: Option<&str>,
             kwargs: Kwargs| {
                let items: Vec<Value> = value.try_iter()?.collect();
                let sep = joiner.as_ref().map_or(0, |j| j.as_str().len());
                let size = sep.saturating_mul(items.len());
                // An item's attribute is part of what the item writes: counted whole.
                add_up("join", size, items.iter())?;
                let joined = minijinja::filters::join(state, value, joiner, attribute, kwargs)?;
                checked("join", joined)
            },
        );
        env.add_filter(
            "replace",
            |state: &mut State,
             value: StringInput<'_>,
             from: StringInput<'_>,
             to: StringInput<'_>| {
                let (text, old) = (value.as_str(), from.as_str());
                let hits = if old.is_empty() {
                    text.chars().count() + 1
                } else {
                    text.matches(old).count()
                };
                let size = hits
                    .saturating_mul(to.as_str().len())
                    .saturating_add(text.len());
                if size > MAX_OUTPUT {
                    return Err(too_large("replace"));
                }
                checked(
                    "replace",
                    minijinja::filters::replace(state, value, from, to)?,
                )
            },
        );
        env.add_filter(
            "format",
            |state: &mut State, format: &Value, args: Rest<ValueOrKwargs>| {
                let text = format.as_str().unwrap_or_default();
                // A width (`%1000000000s`) pads: every number in the format counts.
                let widths = text
                    .split(|c: char| !c.is_ascii_digit())
                    .filter_map(|n| n.parse::<usize>().ok())
                    .fold(text.len(), usize::saturating_add);
                // Keyword arguments too: counted as they write.
                add_up("format", widths, args.iter().map(|a| &**a))?;
                checked("format", minijinja::filters::format(state, format, args)?)
            },
        );
    }
}

/// The refusal of a template author's file that replaces no embedded template, if it does not.
fn overrides_nothing(name: &str) -> Option<Diagnostic> {
    if EMBEDDED.iter().any(|(n, _)| *n == name) {
        return None;
    }
    let names: Vec<&str> = EMBEDDED.iter().map(|(n, _)| *n).collect();
    let help = if name == "driver.sh.j2" {
        "the driver script is no template: `render --out` writes the fixed driver `job.sh` and \
         its values in `job.env`; remove this file"
            .to_string()
    } else {
        let closest = names
            .iter()
            .map(|n| (strsim::damerau_levenshtein(name, n), *n))
            .filter(|(distance, _)| *distance <= 3)
            .min();
        match closest {
            Some((_, n)) => format!("did you mean `{n}`? (rename the file)"),
            None => format!(
                "remove it or rename it after the template it replaces: {}",
                names.join(", ")
            ),
        }
    };
    Some(
        Diagnostic::error(
            TEMPLATE,
            format!(
                "`{name}` in --templates overrides no template: the templates are {}",
                names.join(", ")
            ),
        )
        .help(help),
    )
}

/// Render every object of the Plan, in apply order: ConfigMap, (Service,) Job or JobSet.
pub fn render_all(plan: &Plan, templates: &Templates) -> Result<Vec<Rendered>, Diagnostic> {
    // The Plan becomes a template value once, for every template it is laid out by.
    let context = context(plan);
    let mut out = Vec::new();
    if plan.config_map.is_some() {
        out.push(templates.render_context("configmap.yaml.j2", &context)?);
    }
    if plan.service.is_some() {
        out.push(templates.render_context("service.yaml.j2", &context)?);
    }
    out.push(templates.render_context(
        if plan.job_set.is_some() {
            "jobset.yaml.j2"
        } else {
            "job.yaml.j2"
        },
        &context,
    )?);
    Ok(out)
}

/// The Plan as the context of a template.
fn context(plan: &Plan) -> Value {
    Value::from(minijinja::value::Serde(plan))
}

fn template_error(e: minijinja::Error) -> Diagnostic {
    let place = match (e.name(), e.line()) {
        (Some(name), Some(line)) => format!("{name}:{line}: "),
        (Some(name), None) => format!("{name}: "),
        _ => String::new(),
    };
    let detail = e.detail().map(|d| format!(" ({d})")).unwrap_or_default();
    Diagnostic::error(
        TEMPLATE,
        format!("template error: {place}{}{detail}", e.kind()),
    )
    .help("this is a bug in the template; check the template against the Plan's fields")
}

/// A template value as flow JSON, in the order the Plan's fields and maps have (a toleration
/// reads `key, operator, value, effect`, as people write it).
/// Refused past [`MAX_OUTPUT`] bytes: nested lists share their items, so a small value may
/// write out to gigabytes.
fn write_value(out: &mut String, value: &Value) -> Result<(), minijinja::Error> {
    if out.len() > MAX_OUTPUT {
        return Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("writing a value of more than {MAX_OUTPUT} bytes"),
        ));
    }
    match value.kind() {
        ValueKind::String => write_str(out, value.as_str().unwrap_or_default()),
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            for (i, item) in value.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, &item)?;
            }
            out.push(']');
        }
        ValueKind::Map => {
            // Keys with their values, without a lookup per key.
            let pairs = value
                .as_object()
                .and_then(|map| map.try_iter_pairs())
                .ok_or_else(|| {
                    minijinja::Error::new(
                        minijinja::ErrorKind::InvalidOperation,
                        format!("{} is not iterable", value.kind()),
                    )
                })?;
            out.push('{');
            for (i, (key, item)) in pairs.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                match key.as_str() {
                    Some(key) => write_str(out, key),
                    None => write_str(out, &key.to_string()),
                }
                out.push_str(": ");
                write_value(out, &item)?;
            }
            out.push('}');
        }
        // Integers and booleans (most of the rest) read the same in JSON as in Rust.
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number if value.is_integer() => {
            use std::fmt::Write;
            let _ = write!(out, "{value}");
        }
        _ => {
            let json = serde_json::to_value(value).map_err(|e| {
                minijinja::Error::new(minijinja::ErrorKind::BadSerialization, e.to_string())
            })?;
            write_json(out, &json);
        }
    }
    Ok(())
}

/// A value as flow JSON that every YAML parser reads back exactly: JSON string escapes, plus
/// escapes for the characters YAML treats as line breaks or does not allow (NEL, LS, PS,
/// C1 controls, DEL, BOM), which plain JSON leaves raw.
pub fn yaml_json(value: &Json) -> String {
    let mut out = String::new();
    write_json(&mut out, value);
    out
}

fn write_json(out: &mut String, value: &Json) {
    match value {
        Json::String(s) => write_str(out, s),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Json::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str(out, k);
                out.push_str(": ");
                write_json(out, v);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A string as a JSON string, into a `String` (which a write cannot fail on).
fn write_str(out: &mut String, s: &str) {
    let _ = write_escaped(out, s);
}

/// `s` quoted and escaped as [`yaml_json`] writes strings.
fn write_escaped(out: &mut impl std::fmt::Write, s: &str) -> std::fmt::Result {
    let plain = crate::source::every_byte(s, |b| {
        (0x20..0x7f).contains(&b) & (b != b'"') & (b != b'\\')
    });
    // Most values are short and need no escape: quoted on the stack, they take one write (each
    // write to a template's output is several calls deep).
    const ROOM: usize = 126;
    if plain && s.len() <= ROOM {
        let mut quoted = [b'"'; ROOM + 2];
        quoted[1..=s.len()].copy_from_slice(s.as_bytes());
        // Printable ASCII and quotes: UTF-8.
        let quoted = std::str::from_utf8(&quoted[..s.len() + 2]).map_err(|_| std::fmt::Error)?;
        return out.write_str(quoted);
    }
    out.write_char('"')?;
    // Runs of characters written as they are are copied whole.
    let mut run = 0;
    if !plain {
        for (i, c) in s.char_indices() {
            let escape = match c {
                '"' => Some("\\\""),
                '\\' => Some("\\\\"),
                '\n' => Some("\\n"),
                '\t' => Some("\\t"),
                '\r' => Some("\\r"),
                c if (c as u32) < 0x20
                    || ('\u{7f}'..='\u{9f}').contains(&c)
                    || matches!(
                        c,
                        '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
                    ) =>
                {
                    None
                }
                _ => continue,
            };
            out.write_str(&s[run..i])?;
            match escape {
                Some(escape) => out.write_str(escape)?,
                None => write!(out, "\\u{:04x}", c as u32)?,
            }
            run = i + c.len_utf8();
        }
    }
    out.write_str(&s[run..])?;
    out.write_char('"')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;
    use crate::yaml;

    #[test]
    fn every_embedded_template_compiles() {
        for (name, _) in EMBEDDED {
            if let Err(e) = Templates::embedded().env.get_template(name) {
                panic!("{name}: {e:#}");
            }
        }
    }

    #[test]
    fn every_string_reads_back_exactly() {
        let nasty = [
            "plain",
            "no",
            "on",
            "y",
            "~",
            "null",
            "1e3",
            "0x10",
            "a: b",
            "# c",
            "---",
            "...",
            "{{ x }}",
            "$(VAR) ${VAR}",
            "line\nbreak\r\n",
            "tab\there",
            "quote\" back\\slash",
            "nel\u{85} ls\u{2028} ps\u{2029} bom\u{feff} del\u{7f} nul\u{0}",
            "emoji 🚀 日本",
            " leading and trailing ",
        ];
        for s in nasty {
            let text = format!("key: {}\n", yaml_json(&Json::from(s)));
            let doc = yaml::parse(&Source::new("t", text.as_str()), yaml::Limits::default())
                .unwrap()
                .documents
                .remove(0);
            assert_eq!(doc.to_json(), serde_json::json!({ "key": s }), "{text}");
            assert!(!text.contains('\u{2028}') && !text.contains('\u{85}'));
        }
    }

    #[test]
    fn scalars_are_written_as_json_writes_them() {
        let scalars = [
            Value::from(0),
            Value::from(-7_i64),
            Value::from(i64::MIN),
            Value::from(u64::MAX),
            Value::from(i128::MIN),
            Value::from(u128::MAX),
            Value::from(true),
            Value::from(false),
            Value::from(2.0),
            Value::from(1.5e300),
            Value::from(()),
        ];
        for v in scalars {
            let mut text = String::new();
            write_value(&mut text, &v).unwrap();
            assert_eq!(text, serde_json::to_string(&v).unwrap(), "{v:?}");
        }
    }

    #[test]
    fn collections_are_flow_json() {
        let v = serde_json::json!({"a": [1, "x", true, null], "b": {"c": 1.5}});
        assert_eq!(
            yaml_json(&v),
            r#"{"a": [1, "x", true, null], "b": {"c": 1.5}}"#
        );
    }
}
