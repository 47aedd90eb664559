//! The command line: clap definitions (their doc comments are the help), file and stdin
//! reading, output, and exit codes: 0 clean, 1 refused input or findings, 2 usage or I/O error.

mod report;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tao_k8s::plan::{KubeVersion, Options};
use tao_k8s::render::Templates;
use tao_k8s::source::Source;
use tao_k8s::{Failure, request};

/// Exit codes.
const REFUSED: u8 = 1;
const USAGE: u8 = 2;

/// Compile NVIDIA TAO action requests into validated Kubernetes manifests, offline.
#[derive(Parser)]
#[command(name = "tao-k8s", version, about, long_about = None)]
#[command(after_help = "Exit codes: 0 clean, 1 refused input or findings, 2 usage or I/O error.")]
struct Cli {
    /// When to color diagnostics.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    color: Color,
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
enum Format {
    Yaml,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Render an action request as Kubernetes objects, verified, on stdout.
    #[command(after_help = "Examples:
  tao-k8s render request.yaml | kubectl apply -f -
  tao-k8s render request.yaml -n vision --kube-version 1.30
  cat request.json | tao-k8s render - -o json
  tao-k8s render --nccl-probe request.yaml | kubectl apply -f -

The namespace is --namespace, else the request's metadata.namespace, else $TAO_K8S_NAMESPACE,
else `default`. Diagnostics go to stderr; nothing is printed on stdout unless the whole
request compiles and every object passes its strict schema.")]
    Render {
        /// The request file (YAML or JSON), or `-` for stdin.
        request: PathBuf,
        /// Output format: one YAML stream, or JSON (a List when there are several objects).
        #[arg(short, long, value_enum, default_value_t = Format::Yaml)]
        output: Format,
        /// Namespace of every object; wins over the request.
        #[arg(short, long)]
        namespace: Option<String>,
        /// Target Kubernetes minor version: only fields on by default there are emitted.
        #[arg(long, default_value = "1.28", value_parser = parse_kube_version)]
        kube_version: KubeVersion,
        /// A directory of templates (`*.j2`) that replace the embedded ones of the same name.
        #[arg(long, value_name = "DIR")]
        templates: Option<PathBuf>,
        /// Render a 2-node NCCL all-reduce probe with the request's image, GPUs, scheduling,
        /// pull secrets, /dev/shm and rendezvous, instead of the action.
        #[arg(long)]
        nccl_probe: bool,
    },
    /// Print the JSON Schema (draft-07) of action requests, for editors and validators.
    Schema,
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

fn parse_kube_version(s: &str) -> Result<KubeVersion, String> {
    s.parse()
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
    let out = report::Reporter { styled };
    match cli.command {
        Command::Render {
            request,
            output,
            namespace,
            kube_version,
            templates,
            nccl_probe,
        } => {
            let opts = Options {
                namespace,
                env_namespace: std::env::var("TAO_K8S_NAMESPACE").ok(),
                kube_version,
                nccl_probe,
            };
            render(&out, &request, output, &opts, templates.as_deref())
        }
        Command::Schema => emit(&request::schema_text()),
        Command::Completions { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "tao-k8s", &mut buf);
            emit(&String::from_utf8_lossy(&buf))
        }
    }
}

fn render(
    out: &report::Reporter,
    path: &Path,
    format: Format,
    opts: &Options,
    templates: Option<&Path>,
) -> ExitCode {
    let source = match read_source(path) {
        Ok(s) => s,
        Err(message) => return out.io_error(&message),
    };
    let owned;
    let templates = match templates {
        None => Templates::embedded(),
        Some(dir) => match read_templates(dir) {
            Ok(files) => match Templates::new(&files) {
                Ok(t) => {
                    owned = t;
                    &owned
                }
                Err(d) => {
                    out.diagnostics(None, &[d]);
                    return ExitCode::from(REFUSED);
                }
            },
            Err(message) => return out.io_error(&message),
        },
    };
    match tao_k8s::compile(&source, opts, templates) {
        Ok(compiled) => {
            out.diagnostics(Some(&source), &compiled.warnings);
            for note in &compiled.plan.notes {
                out.note(note);
            }
            let text = match format {
                Format::Yaml => compiled.yaml,
                Format::Json => {
                    let value = match compiled.objects.as_slice() {
                        [one] => one.clone(),
                        many => {
                            serde_json::json!({"apiVersion": "v1", "kind": "List", "items": many})
                        }
                    };
                    serde_json::to_string_pretty(&value).expect("JSON values serialize") + "\n"
                }
            };
            emit(&text)
        }
        Err(Failure::Request(diags)) => {
            out.diagnostics(Some(&source), &diags);
            out.summary(&diags, source.name());
            ExitCode::from(REFUSED)
        }
        Err(Failure::Output(diags)) => {
            out.diagnostics(None, &diags);
            ExitCode::from(REFUSED)
        }
    }
}

/// Print to stdout; a closed pipe is not an error worth a panic.
fn emit(text: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            ExitCode::from(USAGE)
        }
    }
}

/// A file, or stdin for `-`, as a named source.
fn read_source(path: &Path) -> Result<Source, String> {
    let mut bytes = Vec::new();
    let name = if path == Path::new("-") {
        std::io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read stdin: {e}"))?;
        "<stdin>".to_string()
    } else {
        bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        path.display().to_string()
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "{name} is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    Ok(Source::new(name, text))
}

/// Every `*.j2` file of a directory, by file name.
fn read_templates(dir: &Path) -> Result<Vec<(String, String)>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.ends_with(".j2") {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            files.push((name.to_string(), text));
        }
    }
    files.sort();
    Ok(files)
}
