//! The `tao-k8s` command: parse the command line, run, map the outcome to an exit code.

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
