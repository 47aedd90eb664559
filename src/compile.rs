//! The whole compile: request text -> checked request -> Plan -> rendered objects ->
//! verified objects. The rendered text is parsed back and every object validated against the
//! strict schema of its kind before anything is handed out, so a template author's mistake is
//! caught here, with the template name and the JSON pointer, and never reaches a cluster.

use crate::diag::Diagnostic;
use crate::plan::{self, Options, Plan};
use crate::render::{self, Rendered, Templates};
use crate::request;
use crate::schema;
use crate::source::Source;
use crate::yaml;
use serde_json::Value as Json;

/// Code of rendered output that is not a valid object of its kind.
pub const INVALID_OUTPUT: &str = "TK091";

/// What a compile produces.
#[derive(Debug)]
pub struct Compiled {
    pub plan: Plan,
    /// The objects, in apply order, as verified.
    pub objects: Vec<Json>,
    /// The objects as one YAML stream, exactly as rendered.
    pub yaml: String,
    /// Warnings about the request (they do not refuse it).
    pub warnings: Vec<Diagnostic>,
}

/// Why a compile produced nothing.
#[derive(Debug)]
pub enum Failure {
    /// The request was refused: diagnostics point into the request source.
    Request(Vec<Diagnostic>),
    /// A template or its output is wrong: a bug, or a template author's mistake.
    Output(Vec<Diagnostic>),
}

/// Compile one request with the given templates.
pub fn compile(
    source: &Source,
    opts: &Options,
    templates: &Templates,
) -> Result<Compiled, Failure> {
    let mut loaded = request::load(source).map_err(Failure::Request)?;
    if opts.nccl_probe {
        loaded.request =
            plan::nccl_probe(&loaded.request).map_err(|d| Failure::Request(vec![d]))?;
        // The probe has no storage and no results: only its layout matters, not its checks,
        // which the request itself passed.
        loaded.staging = crate::staging::stage(&loaded.request, &loaded.tree).0;
    }
    let plan = plan::build(&loaded, opts).map_err(|mut errors| {
        errors.extend(loaded.warnings.iter().cloned());
        Failure::Request(errors)
    })?;
    let rendered = render::render_all(&plan, templates).map_err(|d| Failure::Output(vec![d]))?;
    let objects = verify(&rendered).map_err(Failure::Output)?;
    let yaml: String = rendered
        .iter()
        .map(|r| format!("---\n{}", r.text))
        .collect();
    lint_output(&yaml).map_err(Failure::Output)?;
    Ok(Compiled {
        plan,
        objects,
        yaml,
        warnings: loaded.warnings,
    })
}

/// Code of rendered output that fails the project's own lint.
pub const LINTED_OUTPUT: &str = "TK092";

/// The project's own lint over what it renders: an error-level finding refuses the render, so
/// a template author's mistake cannot reach kubectl. (The strict schemas ran in `verify`.)
fn lint_output(yaml: &str) -> Result<(), Vec<Diagnostic>> {
    let source = Source::new("rendered manifests", yaml);
    let selection = crate::lint::Selection {
        select: Vec::new(),
        ignore: vec!["strict-schema".into()],
    };
    let found = crate::lint::lint(&source, &selection).map_err(|e| {
        vec![Diagnostic::error(
            INVALID_OUTPUT,
            format!("rendered output is not YAML: {e}"),
        )]
    })?;
    let errors: Vec<Diagnostic> = found
        .into_iter()
        .filter(|r| r.diagnostic.is_error())
        .map(|r| {
            Diagnostic::error(
                LINTED_OUTPUT,
                format!(
                    "the rendered {} fails {}: {} (line {} of the output)",
                    r.object.unwrap_or_default(),
                    r.diagnostic.code,
                    r.diagnostic.message,
                    r.line
                ),
            )
            .help("a template produced this; fix the template (or the rule, if the rule is wrong)")
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Parse every rendered object back and validate it strictly.
pub fn verify(rendered: &[Rendered]) -> Result<Vec<Json>, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut objects = Vec::new();
    for r in rendered {
        let source = Source::new(r.template.clone(), r.text.clone());
        let bad = |message: String, offset: usize| {
            let (line, col) = source.line_col(offset);
            Diagnostic::error(
                INVALID_OUTPUT,
                format!("template `{}` produced invalid output: {message} (line {line}, column {col} of its output)", r.template),
            )
            .help("the template does not lay out the Plan as a valid Kubernetes object; fix the template")
        };
        let stream = match yaml::parse(&source, yaml::Limits::default()) {
            Ok(s) => s,
            Err(e) => {
                errors.push(bad(format!("not YAML: {}", e.message), e.span.start));
                continue;
            }
        };
        for d in &stream.duplicates {
            errors.push(bad(format!("duplicate key `{}`", d.key), d.second.start));
        }
        let [document] = stream.documents.as_slice() else {
            errors.push(bad(
                format!(
                    "expected one object, found {} documents",
                    stream.documents.len()
                ),
                0,
            ));
            continue;
        };
        let object = document.to_json();
        match schema::validate(&object) {
            None => errors.push(bad("not an object of a kind with a known schema".into(), 0)),
            Some(schema_errors) => {
                for e in schema_errors {
                    let pointer = e.instance_path().to_string();
                    let steps: Vec<yaml::Step> = e
                        .instance_path()
                        .iter()
                        .map(|s| match s {
                            jsonschema::paths::LocationSegment::Property(p) => {
                                yaml::Step::Key(p.to_string())
                            }
                            jsonschema::paths::LocationSegment::Index(i) => yaml::Step::Index(i),
                        })
                        .collect();
                    let (_, _, mut node) = document.deepest(&steps);
                    // Point at an unknown key itself, not at the object that holds it.
                    if let jsonschema::error::ValidationErrorKind::AdditionalProperties {
                        unexpected,
                    } = e.kind()
                        && let Some((key, _)) = unexpected.first().and_then(|k| node.entry(k))
                    {
                        node = key;
                    }
                    errors.push(bad(
                        format!("at `{pointer}`: {}", e.masked()),
                        node.span.start,
                    ));
                }
            }
        }
        objects.push(object);
    }
    if errors.is_empty() {
        Ok(objects)
    } else {
        Err(errors)
    }
}
