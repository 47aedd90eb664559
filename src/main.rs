//! The `tao-k8s` command: parse the command line, run, map the outcome to an exit code.

mod cli;

// Lint and render build a spanned tree of many small strings and vectors and drop it per
// document: allocation is a quarter of a lint's instructions with the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::run()
}
