//! The command line: clap definitions (their doc comments are the help) and the dispatch of
//! each command to the module that runs it. Exit codes: 0 clean, 1 refused input or findings,
//! 2 usage or I/O error.

mod driver;
mod gate;
mod input;
mod krm;
mod lint;
mod namespace;
mod plan;
mod record;
mod render;
mod report;
mod snapshot;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
pub(crate) use input::{ReadError, make_executable, read_named, read_source, write_atomic};
use namespace::options;
use render::{Files, Output};
pub(crate) use report::{Reporter, emit, emit_with};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use tao_k8s::kube::KubeVersion;
use tao_k8s::plan::Options;
use tao_k8s::request;

/// Exit codes.
const REFUSED: u8 = 1;
pub(crate) const USAGE: u8 = 2;

/// Compile NVIDIA TAO action requests into validated Kubernetes manifests, offline.
#[derive(Parser)]
#[command(name = "tao-k8s", version = env!("TAO_K8S_VERSION"), about, long_about = None)]
#[command(after_help = "Exit codes: 0 clean, 1 refused input or findings, 2 usage or I/O error.")]
struct Cli {
    /// When to color diagnostics.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    color: Color,
    /// The largest file (or stdin) read, as a byte count or a quantity such as `64Mi`; larger
    /// inputs are refused without being read whole.
    #[arg(long, global = true, value_name = "SIZE", env = "TAO_K8S_MAX_INPUT_SIZE",
          default_value = "16Mi", value_parser = parse_size, hide_env_values = true)]
    max_input_size: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Format {
    Yaml,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Render action requests (files, `-`, folders) as Kubernetes objects, verified, on stdout.
    #[command(after_help = "Examples:
  tao-k8s render request.yaml | kubectl apply -f -
  tao-k8s render requests/ --keep-going | kubectl apply -f -
  tao-k8s render request.yaml -n vision --kube-version 1.30
  cat request.json | tao-k8s render - -o json
  tao-k8s render --nccl-probe request.yaml | kubectl apply -f -

The namespace is --namespace, else the request's metadata.namespace, else $TAO_K8S_NAMESPACE,
else (in a pod with no kubeconfig) its service account's, else `default`; a --namespace other
than metadata.namespace is refused. Diagnostics go to stderr; nothing is printed on stdout
unless every request compiles and every object passes its strict schema (or, with
--keep-going, for the requests that do; the exit code is still 1).")]
    Render(RenderArgs),
    /// Print the driver script (bash, for kubectl) of a request: preflight, submit, status,
    /// logs, cancel. It reads manifest.yaml beside it; `render --out DIR` writes both.
    Script(ScriptArgs),
    /// Decide the driver's gates (existing Job, who holds the bundle's names, the credentials
    /// the submitter allows, server version, claims, where the pods fit, the GPU nodes'
    /// runtime) from the manifest and what kubectl returned. Used by the driver script.
    Gate(gate::GateArgs),
    /// The status of a Job and its pods, from what kubectl returned. Used by the driver script.
    #[command(hide = true)]
    JobStatus(driver::StatusArgs),
    /// The steps of the driver script that decide or build something.
    #[command(hide = true)]
    Driver(driver::DriverArgs),
    /// Write the staging map and, in config mode, the materialised spec into a directory.
    #[command(after_help = "Examples:
  tao-k8s stage request.yaml --out staged/
  tao-k8s render request.yaml --staged-config staged/spec.yaml | kubectl apply -f -")]
    Stage(StageArgs),
    /// Lint Kubernetes YAML: credentials inline, strict schemas, GPU-job rules.
    #[command(after_help = "Examples:
  tao-k8s lint manifests/
  helm template chart/ | tao-k8s lint -
  tao-k8s lint --select redaction --format github k8s/
  tao-k8s lint --format sarif deploy/ > tao-k8s.sarif

Suppress a rule on one object with the annotation `tao-k8s.io/ignore: \"TK310 # why\"`.
Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage, I/O, or input that is not YAML
(or is over a limit: see --max-input-size and the README).")]
    Lint(LintArgs),
    /// List the lint rules.
    Rules {
        #[arg(long, value_enum, default_value_t = lint::LintFormat::Text)]
        format: lint::LintFormat,
    },
    /// Explain a lint rule: what it checks, why it matters, an example, the fix.
    Explain {
        /// A rule code (TK101) or name (inline-credential), in any case.
        rule: String,
    },
    /// Job records: mint an id before launch, bind the applied object to it, follow its state.
    Record(record::RecordArgs),
    /// Print the JSON Schema (draft-07) of action requests, for editors and validators.
    Schema {
        /// Instead, the schema of the template context: the Plan every template receives
        /// (`tao-k8s plan REQUEST` prints one).
        #[arg(long)]
        template_context: bool,
    },
    /// Snapshot-test templates: render each request and compare it with its stored snapshot
    /// (insta's `.snap` format); print a unified diff and exit 1 on any change.
    #[command(after_help = "Examples:
  tao-k8s snapshot --templates my-templates/ requests/ --snapshots snapshots/ --update
  tao-k8s snapshot --templates my-templates/ requests/ --snapshots snapshots/

Each request gets DIR/<file stem>.snap (and <stem>.nccl-probe.snap for a multi-node request's
probe). `cargo insta review` and `insta::assert_snapshot!` read the same files.")]
    Snapshot(SnapshotArgs),
    /// A KRM function (kpt, kustomize exec generator or transformer): read a ResourceList on
    /// stdin, replace its ActionRequest items by their verified objects, pass the other items
    /// through, and report diagnostics as its results; exit 1 on an error.
    #[command(after_help = "Examples:
  kpt fn source requests/ | tao-k8s krm | kpt fn sink rendered/
  kpt fn eval requests/ --exec \"tao-k8s krm --lint\"
  (kustomize: see the README, \"In pipelines\")

functionConfig (a ConfigMap) may set `data.namespace` and `data.kubeVersion`.")]
    Krm(KrmArgs),
    /// Print the template context of a request: the Plan every template receives.
    #[command(after_help = "Examples:
  tao-k8s plan request.yaml
  tao-k8s plan request.yaml -o yaml --nccl-probe
  tao-k8s schema --template-context   # what every field means")]
    Plan(PlanArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

// The arguments several commands share, each declared once and flattened where it is taken
// (one struct per flag, so that every command lists its flags in the order it always has).

// `--namespace`.
#[derive(Args)]
struct NamespaceArg {
    /// Namespace of every object; refused if the request names another.
    #[arg(short, long)]
    namespace: Option<String>,
}

// `--kube-version` of the commands that compile: the target, the oldest supported by default.
#[derive(Args)]
struct TargetArg {
    #[arg(long, help = target_version_help(), default_value_t = KubeVersion::DEFAULT,
          value_parser = parse_kube_version)]
    kube_version: KubeVersion,
    /// What runs the pods: a batch/v1 Job, Indexed for several nodes, with its headless
    /// Service; or a JobSet (jobset.x-k8s.io/v1alpha2, on clusters that run JobSet 0.6 or
    /// later) that creates both and restarts all pods together. The NCCL probe is a Job either way.
    #[arg(long, value_enum, default_value_t = Target::IndexedJob)]
    target: Target,
}

/// `--target`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Target {
    IndexedJob,
    #[value(name = "jobset")]
    JobSet,
}

impl From<Target> for tao_k8s::plan::Workload {
    fn from(t: Target) -> Self {
        match t {
            Target::IndexedJob => Self::IndexedJob,
            Target::JobSet => Self::JobSet,
        }
    }
}

// `--templates`.
#[derive(Args)]
struct TemplatesArg {
    /// A directory of templates (`*.j2`) that replace the embedded ones of the same name; a
    /// file that replaces none is refused, and the objects they render are verified as the
    /// embedded ones' are.
    #[arg(long, value_name = "DIR")]
    templates: Option<PathBuf>,
}

// `--spec-root`.
#[derive(Args)]
struct SpecRootArg {
    /// A folder the request may name files in (`command.config.spec`), besides its own: by
    /// default a request reads only files inside the folder it is in (the working directory
    /// for stdin and `krm`).
    #[arg(long, value_name = "DIR")]
    spec_root: Option<PathBuf>,
}

/// The help of `--kube-version` on the commands that compile.
fn target_version_help() -> String {
    format!(
        "Target Kubernetes minor version ({}): only fields on by default there are emitted, and \
         the output is checked strictly against that version's API. The default stays the \
         oldest supported version, so the output applies to every supported cluster",
        KubeVersion::supported_range()
    )
}

/// The help of `lint --kube-version`.
fn lint_version_help() -> String {
    format!(
        "The Kubernetes minor version ({}) objects are checked against: its kinds, its fields, \
         the API versions it no longer serves. Default: the newest, {}",
        KubeVersion::supported_range(),
        KubeVersion::NEWEST
    )
}

#[derive(Args)]
struct RenderArgs {
    /// Request files (YAML or JSON), `-` for stdin, or folders: their *.yaml, *.yml and
    /// *.json files, sorted, not their subfolders.
    #[arg(required = true, value_name = "REQUEST")]
    requests: Vec<PathBuf>,
    /// Several requests: write (or print) those that compile even when others are
    /// refused; still exit 1.
    #[arg(long)]
    keep_going: bool,
    /// Output format: one YAML stream, or JSON (a List when there are several objects).
    /// Not with --out, whose bundle is YAML for kubectl and the driver script.
    #[arg(short, long, value_enum, conflicts_with = "out")]
    output: Option<Format>,
    #[command(flatten)]
    namespace: NamespaceArg,
    #[command(flatten)]
    target: TargetArg,
    #[command(flatten)]
    templates: TemplatesArg,
    /// When the templates' output fails verification, print it on stdout anyway (with
    /// credentials masked) to read beside the diagnostics' line numbers; still exit 1.
    #[arg(long, conflicts_with = "out")]
    emit_unverified: bool,
    /// Render a 2-node NCCL all-reduce probe with the request's image, GPUs, scheduling,
    /// pull secrets, /dev/shm and rendezvous, instead of the action.
    #[arg(long)]
    nccl_probe: bool,
    /// Also write the staging map (where every producer path lands) to FILE, as JSON.
    #[arg(long, value_name = "FILE")]
    staging_map: Option<PathBuf>,
    /// A config spec written by `tao-k8s stage`: refused unless it is exactly what the
    /// request stages (its sha256 is checked).
    #[arg(long, value_name = "FILE")]
    staged_config: Option<PathBuf>,
    /// Write a bundle into DIR instead: manifest.yaml, staging-map.json, the driver script
    /// job.sh, and nccl-probe.yaml for multi-node. With several requests (or a folder),
    /// one bundle per request in DIR/<file stem>/.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    spec_root: SpecRootArg,
}

#[derive(Args)]
struct ScriptArgs {
    /// The request file (YAML or JSON), or `-` for stdin.
    request: PathBuf,
    #[command(flatten)]
    namespace: NamespaceArg,
    /// The version and workload of the manifest the script drives (as `render` had them).
    #[command(flatten)]
    target: TargetArg,
    #[command(flatten)]
    templates: TemplatesArg,
    #[command(flatten)]
    spec_root: SpecRootArg,
}

#[derive(Args)]
struct StageArgs {
    /// The request file (YAML or JSON), or `-` for stdin.
    request: PathBuf,
    /// The directory to write `staging-map.json` and `spec.yaml` into (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    namespace: NamespaceArg,
    #[command(flatten)]
    templates: TemplatesArg,
    #[command(flatten)]
    spec_root: SpecRootArg,
}

#[derive(Args)]
struct LintArgs {
    /// Files (always linted), directories (searched for *.yaml, *.yml and *.json like
    /// `kubectl apply -f DIR`, skipping templates/, hidden and git-ignored paths), or `-`.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = lint::LintFormat::Text)]
    format: lint::LintFormat,
    /// Only these rules: codes, names or groups (redaction, schema, gpu, api), comma-separated,
    /// in any case.
    #[arg(long, value_delimiter = ',')]
    select: Vec<String>,
    /// Not these rules: codes, names or groups, comma-separated.
    #[arg(long, value_delimiter = ',')]
    ignore: Vec<String>,
    /// The lowest severity that makes the run fail.
    #[arg(long, value_enum, default_value_t = lint::FailOn::Error)]
    fail_on: lint::FailOn,
    /// Exit 0 whatever is found (still 2 for usage, I/O or input that is not YAML).
    #[arg(long)]
    exit_zero: bool,
    /// Most findings reported per file; the rest are counted in one last report (TK009).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    max_findings: usize,
    /// CustomResourceDefinitions (files or folders, repeatable): objects of their kinds are
    /// checked against their `openAPIV3Schema`, unknown fields included. The CRDs a linted
    /// file holds are used for its own objects too. JobSet's is built in; a CRD given here for
    /// its group and kind is used instead.
    #[arg(long, value_name = "PATH")]
    crd: Vec<PathBuf>,
    /// A kind with no schema (not built in, no `--crd`) is an error, not a note.
    #[arg(long)]
    strict_kinds: bool,
    // The version objects are checked against: the newest supported unless given.
    #[arg(long, value_name = "X.Y", help = lint_version_help(), value_parser = parse_kube_version)]
    kube_version: Option<KubeVersion>,
    /// Check pods and pod templates against a Pod Security Standards level (`baseline`,
    /// `restricted`, optionally `:v1.30`), as admission enforces it in a namespace; a
    /// Namespace in the same file with a `pod-security.kubernetes.io/enforce` label decides
    /// for its own objects.
    #[arg(long, value_name = "LEVEL[:VERSION]", value_parser = parse_pod_security)]
    pod_security: Option<tao_k8s::kube::PodSecurity>,
    /// ValidatingAdmissionPolicies and their bindings (files or folders, repeatable; params
    /// and Namespaces in them are used too): objects are checked as admission evaluates them
    /// on create.
    #[arg(long, value_name = "PATH")]
    policy: Vec<PathBuf>,
}

#[derive(Args)]
struct SnapshotArgs {
    /// Request files, `-` for stdin, or folders of requests (as `render` reads them).
    #[arg(required = true, value_name = "REQUEST")]
    requests: Vec<PathBuf>,
    /// The directory of the stored snapshots.
    #[arg(long, value_name = "DIR")]
    snapshots: PathBuf,
    #[command(flatten)]
    templates: TemplatesArg,
    /// Write the snapshots that are new or changed instead of failing on them.
    #[arg(long)]
    update: bool,
    #[command(flatten)]
    namespace: NamespaceArg,
    #[command(flatten)]
    target: TargetArg,
    #[command(flatten)]
    spec_root: SpecRootArg,
}

#[derive(Args)]
struct KrmArgs {
    /// Validate instead: items pass through unchanged; the lint's findings on them, and
    /// the diagnostics of ActionRequest items, are the results.
    #[arg(long)]
    lint: bool,
    #[command(flatten)]
    templates: TemplatesArg,
    #[command(flatten)]
    spec_root: SpecRootArg,
}

#[derive(Args)]
struct PlanArgs {
    /// The request file (YAML or JSON), or `-` for stdin.
    request: PathBuf,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Json)]
    output: Format,
    #[command(flatten)]
    namespace: NamespaceArg,
    #[command(flatten)]
    target: TargetArg,
    /// The context of the request's NCCL probe instead.
    #[arg(long)]
    nccl_probe: bool,
    #[command(flatten)]
    spec_root: SpecRootArg,
}

fn parse_kube_version(s: &str) -> Result<KubeVersion, String> {
    let version: KubeVersion = s.parse()?;
    if version.is_supported() {
        Ok(version)
    } else {
        Err(format!(
            "Kubernetes {version} is not supported: the supported versions are {}",
            KubeVersion::supported_range()
        ))
    }
}

fn parse_pod_security(s: &str) -> Result<tao_k8s::kube::PodSecurity, String> {
    s.parse()
}

fn parse_size(s: &str) -> Result<u64, String> {
    match tao_k8s::kube::quantity::parse(s) {
        Some(n) if n >= 1.0 && n.fract() == 0.0 && n <= u64::MAX as f64 => Ok(n as u64),
        _ => Err(format!("`{s}` is no byte count (e.g. 16777216, 16Mi, 1Gi)")),
    }
}

/// Run the command line and return the exit code.
pub fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { USAGE } else { 0 });
        }
    };
    let styled = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    input::set_max_input(cli.max_input_size);
    dispatch(&Reporter::new(styled), cli.command)
}

/// Hand each command to the module that runs it.
fn dispatch(out: &Reporter, command: Command) -> ExitCode {
    match command {
        Command::Render(args) => render_command(out, args),
        Command::Script(args) => {
            let request = render::Requests::one(args.request);
            let opts = Options {
                kube_version: args.target.kube_version,
                workload: args.target.target.into(),
                ..options(args.namespace.namespace)
            };
            let files = Files::with_spec_root(args.spec_root.spec_root);
            let templates = args.templates.templates.as_deref();
            render::render(out, &request, Output::Script, opts, templates, &files)
        }
        Command::Stage(args) => {
            let request = render::Requests::one(args.request);
            let opts = options(args.namespace.namespace);
            let files = Files::with_spec_root(args.spec_root.spec_root);
            let templates = args.templates.templates.as_deref();
            render::render(
                out,
                &request,
                Output::Stage(args.out),
                opts,
                templates,
                &files,
            )
        }
        Command::Lint(args) => lint_command(out, args),
        Command::Rules { format } => lint::rules(format),
        Command::Explain { rule } => lint::explain(&rule),
        Command::Driver(args) => driver::run(args),
        Command::JobStatus(args) => driver::status(args),
        Command::Record(args) => record::run(args),
        Command::Gate(args) => gate::run(args),
        Command::Schema { template_context } => emit(&if template_context {
            tao_k8s::plan::context_schema_text()
        } else {
            request::schema_text()
        }),
        Command::Krm(args) => krm::run(
            out,
            args.lint,
            args.templates.templates.as_deref(),
            args.spec_root.spec_root,
        ),
        Command::Snapshot(args) => snapshot_command(out, args),
        Command::Plan(args) => {
            let opts = Options {
                kube_version: args.target.kube_version,
                workload: args.target.target.into(),
                nccl_probe: args.nccl_probe,
                ..options(args.namespace.namespace)
            };
            let files = Files::with_spec_root(args.spec_root.spec_root);
            plan::run(out, &args.request, args.output, opts, &files)
        }
        Command::Completions { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "tao-k8s", &mut buf);
            emit(&String::from_utf8_lossy(&buf))
        }
    }
}

fn render_command(out: &Reporter, args: RenderArgs) -> ExitCode {
    let opts = Options {
        kube_version: args.target.kube_version,
        workload: args.target.target.into(),
        nccl_probe: args.nccl_probe,
        ..options(args.namespace.namespace)
    };
    let files = Files {
        staging_map: args.staging_map,
        staged_config: args.staged_config,
        spec_root: args.spec_root.spec_root,
        emit_unverified: args.emit_unverified,
        keep_going: args.keep_going,
    };
    let output = match args.out {
        Some(dir) => Output::Bundle(dir),
        None => Output::Manifests(args.output.unwrap_or(Format::Yaml)),
    };
    let requests = match render::Requests::expand(&args.requests) {
        Ok(r) => r,
        Err(message) => return out.io_error(&message),
    };
    let templates = args.templates.templates.as_deref();
    render::render(out, &requests, output, opts, templates, &files)
}

fn lint_command(out: &Reporter, args: LintArgs) -> ExitCode {
    let crds = match lint::crds(out, &args.crd) {
        Ok(crds) => crds,
        Err(code) => return code,
    };
    let policies = match lint::policies(out, &args.policy) {
        Ok(policies) => policies,
        Err(code) => return code,
    };
    let selection = tao_k8s::lint::Selection {
        select: args.select,
        ignore: args.ignore,
        max_findings: Some(args.max_findings),
        crds,
        strict_kinds: args.strict_kinds,
        kube_version: args.kube_version,
        pod_security: args.pod_security,
        policies,
    };
    lint::run(
        out,
        &args.paths,
        args.format,
        &selection,
        args.fail_on,
        args.exit_zero,
    )
}

fn snapshot_command(out: &Reporter, args: SnapshotArgs) -> ExitCode {
    let opts = Options {
        kube_version: args.target.kube_version,
        workload: args.target.target.into(),
        ..options(args.namespace.namespace)
    };
    let files = Files::with_spec_root(args.spec_root.spec_root);
    let run = snapshot::Args {
        requests: args.requests,
        snapshots: args.snapshots,
        templates: args.templates.templates,
        update: args.update,
    };
    snapshot::run(out, run, opts, &files)
}
