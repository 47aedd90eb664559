//! Every file the tool reads goes through `src/cli/input.rs`, which refuses what is not a
//! regular file, caps the bytes and confines what an input names. A file-system call anywhere
//! else in `src/` (outside unit tests) is a read that skips those checks: this test names it.

use std::path::{Path, PathBuf};

/// The calls that reach the file system.
const CALLS: &[&str] = &[
    "std::fs",
    "fs::",
    "File::open",
    "File::create",
    "OpenOptions",
    "read_to_string(",
    "read_dir(",
    "canonicalize(",
    "symlink_metadata(",
    ".metadata()",
    "NamedTempFile",
];

/// Files allowed to call them, and why.
const ALLOWED: &[(&str, &str)] = &[
    ("src/cli/input.rs", "the input module itself"),
    (
        "src/record.rs",
        "the job-record store: files the tool wrote itself under a 0700 folder, each read capped",
    ),
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_file_read_goes_through_the_input_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files.sort();
    let mut bypasses = Vec::new();
    for file in &files {
        let name = file.strip_prefix(root).unwrap().display().to_string();
        if ALLOWED.iter().any(|(allowed, _)| *allowed == name) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for (i, line) in text.lines().enumerate() {
            // A file's unit tests come last, after their `#[cfg(test)]`.
            if line.trim() == "#[cfg(test)]" {
                break;
            }
            let code = line.split("//").next().unwrap_or_default();
            if let Some(call) = CALLS.iter().find(|c| code.contains(*c)) {
                bypasses.push(format!("{name}:{}: {call}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        bypasses.is_empty(),
        "file-system calls outside src/cli/input.rs (read through it instead):\n{}",
        bypasses.join("\n")
    );
}

/// The check finds what it looks for: the input module itself is full of such calls.
#[test]
fn the_check_sees_the_calls_it_forbids() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli/input.rs"))
            .unwrap();
    for call in ["std::fs", "OpenOptions", "read_dir("] {
        assert!(text.contains(call), "{call}");
    }
}
