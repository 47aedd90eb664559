//! The whole compile: request text -> checked request -> Plan -> rendered objects ->
//! verified objects. The rendered text is parsed back and every object checked strictly
//! against its kind in the target Kubernetes version (`--kube-version`, the version the Plan
//! is laid out for) before anything is handed out, so a template author's mistake is caught
//! here, with the template name and the field's path, and never reaches a cluster.

use crate::diag::{Diagnostic, has_errors};
use crate::k8s;
use crate::kube::KubeVersion;
use crate::plan::{self, Options, Plan};
use crate::render::{self, Rendered, Templates};
use crate::request;
use crate::source::Source;
use crate::staging::{self, Staging};
use crate::yaml;
use serde_json::Value as Json;

pub use crate::codes::{INVALID_OUTPUT, LINTED_OUTPUT};

/// What a compile produces.
#[derive(Debug)]
pub struct Compiled {
    pub plan: Plan,
    /// The objects, in apply order, as verified: the trees the check read (their spans point
    /// into `yaml`). [`Compiled::objects`] gives them as JSON.
    pub documents: Vec<yaml::Node>,
    /// The objects as one YAML stream, exactly as rendered.
    pub yaml: String,
    /// Warnings about the request (they do not refuse it).
    pub warnings: Vec<Diagnostic>,
}

impl Compiled {
    /// The objects as JSON, in apply order. Made when asked: printing the YAML stream needs
    /// none of them.
    pub fn objects(&self) -> Vec<Json> {
        self.documents.iter().map(yaml::Node::to_json).collect()
    }
}

/// Why a compile produced nothing.
#[derive(Debug)]
pub enum Failure {
    /// The request was refused: diagnostics point into the request source.
    Request(Vec<Diagnostic>),
    /// A template or its output is wrong: a bug, or a template author's mistake.
    Output {
        diagnostics: Vec<Diagnostic>,
        /// The stream the templates wrote, unverified, when they wrote one: the diagnostics'
        /// labels point into it (`render --emit-unverified` prints it).
        rendered: Option<String>,
    },
}

impl Failure {
    /// The diagnostics, whatever failed.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Failure::Request(diagnostics) | Failure::Output { diagnostics, .. } => diagnostics,
        }
    }
}

/// The name of the rendered stream in diagnostics.
pub const RENDERED: &str = "rendered manifests";

/// Compile one request with the given templates.
pub fn compile(
    source: &Source,
    opts: &Options,
    templates: &Templates,
) -> Result<Compiled, Failure> {
    let (loaded, staging) = check(source)?;
    compile_loaded(&loaded, &staging, opts, templates)
}

/// Load the request and lay out its storage: the problems of both are reported in one run.
fn check(source: &Source) -> Result<(request::Loaded, Staging), Failure> {
    match request::load(source) {
        Ok(mut loaded) => {
            let (staging, diags) = staging::stage(&loaded.request, &loaded.tree);
            loaded.warnings.extend(diags);
            if has_errors(&loaded.warnings) {
                // A path on no mount follows from the errors of a refused layout: not said.
                loaded
                    .warnings
                    .retain(|d| d.code != crate::codes::UNMOUNTED);
                return Err(Failure::Request(loaded.warnings));
            }
            Ok((loaded, staging))
        }
        Err(refused) => {
            let mut diags = refused.diagnostics;
            if let Some(partial) = refused.partial {
                let (_, staged) = staging::stage(&partial.request, &partial.tree);
                diags.extend(
                    staged
                        .into_iter()
                        .filter(|d| partial.admits(d) && d.code != crate::codes::UNMOUNTED),
                );
            }
            Err(Failure::Request(diags))
        }
    }
}

/// The request's own checks and the layout of its storage, as `render` runs them before any
/// plan: every diagnostic, errors and warnings, pointing into `source` (`lint` runs them on the
/// action requests it meets). Options and spec files are not read: what they decide is not
/// checked here.
pub fn check_request(source: &Source) -> Vec<Diagnostic> {
    match check(source) {
        Ok((loaded, _)) => loaded.warnings,
        Err(failure) => failure.diagnostics().to_vec(),
    }
}

/// Everything `render --out` writes, from one load of the request: the Job's objects, the NCCL
/// probe's (multi-node with GPUs), and the driver script's constants.
#[derive(Debug)]
pub struct Bundle {
    pub job: Compiled,
    pub probe: Option<Compiled>,
    pub script: crate::driver::JobValues,
}

/// Compile the bundle of one request. A probe that does not compile refuses the bundle with
/// every one of its diagnostics: the driver would otherwise run without its gate.
pub fn bundle(source: &Source, opts: &Options, templates: &Templates) -> Result<Bundle, Failure> {
    let (loaded, staging) = check(source)?;
    let job_opts = Options {
        nccl_probe: false,
        ..opts.clone()
    };
    let job = compile_loaded(&loaded, &staging, &job_opts, templates)?;
    let probe = if loaded.request.nodes() > 1 && loaded.request.spec.resources.gpus_per_node > 0 {
        let probe_opts = Options {
            nccl_probe: true,
            ..opts.clone()
        };
        Some(compile_loaded(&loaded, &staging, &probe_opts, templates)?)
    } else {
        None
    };
    let mut script = crate::driver::JobValues::new(&job.plan);
    if let Some(probe) = &probe {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(probe.yaml.as_bytes());
        script.probe_digest = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    }
    Ok(Bundle { job, probe, script })
}

/// The Plan of one request: the context every template receives (`tao-k8s plan`). Nothing
/// is rendered, so a template's mistake cannot hide it.
pub fn plan(source: &Source, opts: &Options) -> Result<Plan, Failure> {
    let (loaded, staging) = check(source)?;
    plan_loaded(&loaded, &staging, opts)
}

fn compile_loaded(
    loaded: &request::Loaded,
    staging: &Staging,
    opts: &Options,
    templates: &Templates,
) -> Result<Compiled, Failure> {
    let plan = plan_loaded(loaded, staging, opts)?;
    let rendered = render::render_all(&plan, templates).map_err(|d| Failure::Output {
        diagnostics: vec![d],
        rendered: None,
    })?;
    let mut yaml = String::with_capacity(rendered.iter().map(|r| 4 + r.text.len()).sum());
    for r in &rendered {
        yaml.push_str("---\n");
        yaml.push_str(&r.text);
    }
    // A pod the request runs as a non-root user must meet `restricted`, as admission checks it.
    let restricted = plan.job.pod.security_context.is_some();
    let source = Source::new(RENDERED, yaml);
    let documents =
        verify(&rendered, &source, opts.kube_version, restricted).map_err(|diagnostics| {
            Failure::Output {
                diagnostics,
                rendered: Some(source.text().to_string()),
            }
        })?;
    Ok(Compiled {
        plan,
        documents,
        yaml: source.into_text(),
        warnings: loaded.warnings.clone(),
    })
}

fn plan_loaded(
    loaded: &request::Loaded,
    staging: &Staging,
    opts: &Options,
) -> Result<Plan, Failure> {
    let plan = if opts.nccl_probe {
        let mut probe = loaded.clone();
        probe.request = plan::nccl_probe(&probe.request, opts.workload)
            .map_err(|d| Failure::Request(vec![d]))?;
        // The probe has no storage and no results: only its layout matters, not its checks,
        // which the request itself passed. It is a Job, whatever runs the action.
        let (staging, _) = staging::stage(&probe.request, &probe.tree);
        let probe_opts = Options {
            workload: plan::Workload::IndexedJob,
            ..opts.clone()
        };
        plan::build(&probe, &staging, &probe_opts)
    } else {
        plan::build(loaded, staging, opts)
    };
    plan.map_err(|mut errors| {
        errors.extend(loaded.warnings.iter().cloned());
        Failure::Request(errors)
    })
}

/// Parse the rendered stream back, once (`source`: each of `rendered` after a `---` line):
/// each template's object is checked strictly against
/// its kind in `version`, then the project's own lint runs over the whole stream, with the
/// `restricted` Pod Security Standard when `restricted`. A template author's mistake is
/// reported with the template's name and never reaches kubectl. The documents are the
/// objects, as parsed.
pub fn verify(
    rendered: &[Rendered],
    source: &Source,
    version: KubeVersion,
    restricted: bool,
) -> Result<Vec<yaml::Node>, Vec<Diagnostic>> {
    // The template whose output holds a byte offset of the stream.
    let starts: Vec<usize> = rendered
        .iter()
        .scan(0, |at, r| {
            let start = *at;
            *at += 4 + r.text.len();
            Some(start)
        })
        .collect();
    let template_at = |offset: usize| {
        rendered[starts.partition_point(|&s| s <= offset).saturating_sub(1)]
            .template
            .as_str()
    };
    let bad = |template: &str, message: String, offset: usize| {
        let (line, col) = source.line_col(offset);
        Diagnostic::error(
            INVALID_OUTPUT,
            format!("template `{template}` produced invalid output: {message} (line {line}, column {col} of the rendered manifests)"),
        )
        .help("the template does not lay out the Plan as a valid Kubernetes object; fix the template")
        .primary(offset..offset, "here")
    };
    let stream = yaml::parse(source, yaml::Limits::default()).map_err(|e| {
        vec![bad(
            template_at(e.span.start),
            format!("not YAML: {}", e.message),
            e.span.start,
        )]
    })?;
    let mut errors: Vec<Diagnostic> = stream
        .duplicates
        .iter()
        .map(|d| {
            bad(
                template_at(d.second.start),
                format!("duplicate key `{}`", d.key),
                d.second.start,
            )
        })
        .collect();
    if stream.documents.len() != rendered.len() {
        errors.push(Diagnostic::error(
            INVALID_OUTPUT,
            format!("the templates produced {} documents for {} objects: each template lays out exactly one object", stream.documents.len(), rendered.len()),
        ));
        return Err(errors);
    }
    for (document, r) in stream.documents.iter().zip(rendered) {
        match k8s::check(document, version) {
            None if let Some(problems) = check_custom(source, document, version) => {
                errors.extend(problems.into_iter().map(|p| {
                    bad(
                        &r.template,
                        format!("at `{}`: {}", yaml::display_path(&p.path), p.message),
                        p.span.start,
                    )
                }));
            }
            None => {
                let kind = |key| document.get(key).map(yaml::key_text).unwrap_or_default();
                let why = match k8s::kind(&kind("apiVersion"), &kind("kind"), version) {
                    k8s::Kind::Removed { since, .. } => {
                        format!("an API removed in Kubernetes {since} (target {version})")
                    }
                    k8s::Kind::Newer { since } => {
                        format!("an API Kubernetes {version} does not serve (it needs {since})")
                    }
                    _ => "not an object of a built-in Kubernetes kind".into(),
                };
                errors.push(bad(&r.template, why, document.span.start));
            }
            Some(problems) => errors.extend(problems.into_iter().map(|p| {
                bad(
                    &r.template,
                    format!("at `{}`: {}", yaml::display_path(&p.path), p.message),
                    p.span.start,
                )
            })),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    self_lint(source, &stream, restricted)?;
    Ok(stream.documents)
}

/// A custom resource the project renders (a JobSet), checked strictly: against its built-in
/// CRD, as the API server checks it, and its Job templates against the target version's
/// `batch/v1` Job, whose fields the CRD's schema does not gate by version. `None` for a kind
/// no built-in CRD defines.
fn check_custom(
    source: &Source,
    document: &yaml::Node,
    version: KubeVersion,
) -> Option<Vec<k8s::Problem>> {
    let doc = crate::kube::Document::new(source, document, &[])?;
    let crate::crd::Answer::Checked(findings) = crate::crd::check(&[], &doc) else {
        return None;
    };
    let mut out: Vec<_> = findings
        .into_iter()
        .map(|f| k8s::Problem {
            path: f.path,
            span: f.span,
            message: f.message,
            help: f.help,
        })
        .collect();
    let jobs = document
        .get("spec")
        .and_then(|s| s.get("replicatedJobs"))
        .map(crate::lint::api::items)
        .unwrap_or_default();
    for (i, job) in jobs.iter().enumerate() {
        let Some(template) = job.get("template") else {
            continue;
        };
        let at = [
            yaml::Step::Key("spec".into()),
            yaml::Step::Key("replicatedJobs".into()),
            yaml::Step::Index(i),
            yaml::Step::Key("template".into()),
        ];
        let scalar = |text: &str| yaml::Node {
            value: yaml::Value::Str(text.into()),
            span: template.span.clone(),
        };
        // The template as the Job it becomes: what the JobSet controller creates.
        let mut entries = vec![
            (scalar("apiVersion"), scalar("batch/v1")),
            (scalar("kind"), scalar("Job")),
        ];
        if let yaml::Value::Map(fields) = &template.value {
            entries.extend(fields.iter().cloned());
        }
        if !entries.iter().any(|(k, _)| yaml::key_text(k) == "metadata") {
            entries.push((
                scalar("metadata"),
                yaml::Node {
                    value: yaml::Value::Map(Vec::new()),
                    span: template.span.clone(),
                },
            ));
        }
        let job = yaml::Node {
            value: yaml::Value::Map(entries),
            span: template.span.clone(),
        };
        for mut p in k8s::check(&job, version).unwrap_or_default() {
            p.path = [at.as_slice(), &p.path].concat();
            out.push(p);
        }
    }
    Some(out)
}

/// The project's own lint over the rendered stream (the strict schemas ran already), on the
/// same parse.
fn self_lint(
    source: &Source,
    stream: &yaml::Stream,
    restricted: bool,
) -> Result<(), Vec<Diagnostic>> {
    use crate::kube::pod_security::{Level, PodSecurity};
    // Only errors refuse the output: rules that report nothing else run, strict-schema ran
    // already.
    let ignore = crate::lint::registry::RULES
        .iter()
        .map(|r| r.meta())
        .filter(|m| {
            m.code == crate::lint::rules::StrictSchema::META.code
                || m.severity != crate::diag::Severity::Error
        })
        .map(|m| m.code.to_string())
        .collect();
    let selection = crate::lint::Selection {
        select: Vec::new(),
        ignore,
        pod_security: restricted.then_some(PodSecurity {
            level: Level::Restricted,
            version: None,
        }),
        ..Default::default()
    };
    let lint_errors: Vec<Diagnostic> = crate::lint::lint_parsed(source, &selection, stream)
        .into_iter()
        .filter(|r| r.diagnostic.is_error())
        .map(|r| Diagnostic {
            // The rule's own labels point into the rendered stream: the failing place is framed.
            labels: r.diagnostic.labels,
            ..Diagnostic::error(
                LINTED_OUTPUT,
                format!(
                    "the rendered {} fails {}: {} (line {} of the rendered manifests)",
                    r.object.unwrap_or_default(),
                    r.diagnostic.code,
                    r.diagnostic.message,
                    r.line
                ),
            )
            .help("the templates produced this from the request: if a request value ends up in the field named (a long argument list, say), change the request; otherwise fix the template (or the rule, if the rule is wrong)")
        })
        .collect();
    if lint_errors.is_empty() {
        Ok(())
    } else {
        Err(lint_errors)
    }
}
