//! Compile many action requests in one process, for the side-by-side benchmark
//! (bench/side-by-side.sh): `render_many DIR` compiles every `*.yaml` file of DIR, and
//! `render_many REQUEST N` compiles one request N times. The manifests go to stdout.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tao_k8s::plan::{Options, SpecReader};
use tao_k8s::render::Templates;
use tao_k8s::source::Source;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (paths, count): (Vec<PathBuf>, usize) = match args.as_slice() {
        [dir] => {
            let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
                Ok(entries) => entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
                    .collect(),
                Err(e) => {
                    eprintln!("error: cannot read {dir}: {e}");
                    return ExitCode::from(2);
                }
            };
            paths.sort();
            (paths, 1)
        }
        [file, n] => match n.parse() {
            Ok(n) => (vec![PathBuf::from(file)], n),
            Err(_) => return usage(),
        },
        _ => return usage(),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for path in &paths {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", path.display());
                return ExitCode::from(2);
            }
        };
        let source = Source::new(path.display().to_string(), text);
        // As `tao-k8s render` does: a config spec file is read relative to the request.
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let opts = Options {
            read_spec: Some(SpecReader::new(move |spec| {
                let file = dir.join(spec);
                std::fs::read_to_string(&file)
                    .map(|t| Source::new(file.display().to_string(), t))
                    .map_err(|e| format!("cannot read {}: {e}", file.display()))
            })),
            ..Options::default()
        };
        for _ in 0..count {
            match tao_k8s::compile(&source, &opts, Templates::embedded()) {
                Ok(compiled) => {
                    if out.write_all(compiled.yaml.as_bytes()).is_err() {
                        return ExitCode::from(2);
                    }
                }
                Err(_) => {
                    eprintln!("error: {} does not compile", path.display());
                    return ExitCode::from(1);
                }
            }
        }
    }
    if out.flush().is_err() {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!("usage: render_many DIR | render_many REQUEST COUNT");
    ExitCode::from(2)
}
