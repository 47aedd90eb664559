//! Hostile inputs on every input path: each is refused with one clear diagnostic, and the
//! process stays inside 256 MiB of memory, read from the child's own resource usage (wait4).
//!
//! What is checked is what does not depend on the machine: the exit code, the diagnostic that
//! names the limit, the peak memory, and the work done where that proves boundedness (bytes
//! taken from stdin, findings kept). Time is not a result here: the CPU-time goal (2 s per
//! case) is measured by `bench/limits.sh`. The CPU bound below only catches a hang, far above
//! what the slowest machine takes.

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{BIN, HANG_GUARD, ROOT};

const EXAMPLE: &str = "examples/dino-train.yaml";
const MAX_RSS_KIB: i64 = 256 * 1024;

/// What to feed the child on stdin.
enum Input<'a> {
    None,
    Bytes(&'a [u8]),
    /// An endless-looking stream: up to this many bytes of `a`, until the child stops reading.
    Flood(u64),
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    max_rss_kib: i64,
    cpu: Duration,
    /// Bytes of stdin the child took (for `Input::Flood`).
    fed: u64,
}

impl Run {
    /// Exit code, one line of diagnostic naming `needle`, and the bounds.
    fn refused(&self, code: i32, needle: &str) -> &Run {
        assert_eq!(self.code, Some(code), "stderr: {}", self.stderr);
        assert!(
            self.stderr.contains(needle),
            "{needle:?} not in {}",
            self.stderr
        );
        assert!(self.stdout.is_empty(), "stdout: {}", self.stdout);
        self.bounded()
    }

    fn bounded(&self) -> &Run {
        eprintln!("peak RSS {} KiB, CPU {:?}", self.max_rss_kib, self.cpu);
        assert!(
            self.max_rss_kib < MAX_RSS_KIB,
            "peak RSS {} KiB",
            self.max_rss_kib
        );
        assert!(self.cpu < HANG_GUARD, "CPU time {:?}: a hang", self.cpu);
        self
    }
}

fn run(args: &[&str], input: Input) -> Run {
    run_in(&mut Command::new(BIN), args, input)
}

// The child is reaped by wait4, which also gives its resource usage.
#[allow(clippy::zombie_processes)]
fn run_in(command: &mut Command, args: &[&str], input: Input) -> Run {
    let mut child = command
        .args(args)
        .current_dir(ROOT)
        .env_remove("TAO_K8S_MAX_INPUT_SIZE")
        .stdin(match input {
            Input::None => Stdio::null(),
            _ => Stdio::piped(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let feeder = child.stdin.take().map(|mut stdin| {
        let bytes = match input {
            Input::Bytes(b) => b.to_vec(),
            _ => Vec::new(),
        };
        let flood = match input {
            Input::Flood(n) => n,
            _ => 0,
        };
        std::thread::spawn(move || {
            let mut fed = 0u64;
            if stdin.write_all(&bytes).is_ok() {
                fed = bytes.len() as u64;
            }
            let chunk = vec![b'a'; 1 << 16];
            while fed < flood {
                match stdin.write(&chunk) {
                    Ok(n) => fed += n as u64,
                    Err(_) => break, // the child closed its stdin: refused early
                }
            }
            fed
        })
    });
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            pipe.read_to_end(&mut text).unwrap();
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: waits for our own child; `status` and `usage` are valid for writes.
    let reaped = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(reaped, child.id() as libc::pid_t);
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Run {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        max_rss_kib: usage.ru_maxrss,
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
        fed: feeder.map_or(0, |f| f.join().unwrap()),
    }
}

fn file(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.display().to_string()
}

/// The bundled example with `extra` spliced in as more of its `spec`.
fn request_with(extra: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(EXAMPLE))
        .unwrap()
        .replacen("spec:\n", &format!("spec:\n{extra}"), 1)
}

/// Nine levels of ten aliases each: 10^9 nodes from under a kilobyte.
fn bomb() -> String {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        text += &format!("a{i}: &a{i} [{refs}]\n");
    }
    text
}

#[test]
fn a_billion_laughs_is_refused_on_every_parse() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = file(dir.path(), "bomb.yaml", bomb());
    run(&["lint", &manifest], Input::None).refused(2, "aliases expand into more than 1000000");
    let indented: String = bomb().lines().map(|l| format!("  {l}\n")).collect();
    let request = file(dir.path(), "r.yaml", request_with(&indented));
    run(&["render", &request], Input::None).refused(1, "aliases expand into more than 100000");
    // One small bomb per document: the alias budget is the stream's, not a document's.
    let small = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n\
                 c: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n";
    let many = file(
        dir.path(),
        "many.yaml",
        format!("---\n{small}").repeat(5_000),
    );
    run(&["lint", &many], Input::None).refused(2, "aliases expand into more than 1000000");
}

#[test]
fn deep_nesting_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let flow = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    // Compact nested block sequences: `- - - x`.
    let block = format!("{}x\n", "- ".repeat(10_000));
    // The parser's own recursion limit meets deep flow collections first.
    let cases = [
        ("flow.yaml", flow, "recursion limit exceeded"),
        ("block.yaml", block, "nesting deeper than 128 levels"),
    ];
    for (name, text, message) in cases {
        let path = file(dir.path(), name, text);
        run(&["lint", &path], Input::None).refused(2, message);
    }
    let deep = format!("  x: {}{}\n", "{a: ".repeat(10_000), "}".repeat(10_000));
    let request = file(dir.path(), "r.yaml", request_with(&deep));
    run(&["render", &request], Input::None).refused(1, "nesting deeper than 64 levels");
}

#[test]
fn a_file_over_the_size_limit_is_refused_unless_the_limit_is_raised() {
    let dir = tempfile::tempdir().unwrap();
    // 20 MiB of valid YAML: comments only.
    let big = file(dir.path(), "big.yaml", "# padding\n".repeat(2 << 20));
    let too_large = "larger than 16777216 bytes (raise the limit with --max-input-size)";
    run(&["lint", &big], Input::None).refused(2, too_large);
    run(&["render", &big], Input::None).refused(1, too_large);
    let raised = run(&["lint", "--max-input-size", "32Mi", &big], Input::None);
    assert_eq!(raised.code, Some(0), "{}", raised.stderr);
    raised.bounded();
    // The staged config path reads through the same limit.
    let staged = ["render", EXAMPLE, "--staged-config", &big];
    run(&staged, Input::None).refused(1, too_large);
    let bad = run(&["lint", "--max-input-size", "lots", &big], Input::None);
    assert_eq!(bad.code, Some(2));
    assert!(
        bad.stderr.contains("`lots` is no byte count"),
        "{}",
        bad.stderr
    );
}

#[test]
fn a_gigabyte_on_stdin_is_refused_early_not_read_whole() {
    for command in ["render", "lint"] {
        let run = run(&[command, "-"], Input::Flood(1 << 30));
        run.refused(
            if command == "lint" { 2 } else { 1 },
            "<stdin>: larger than",
        );
        // The limit plus what the pipe buffers held when the child stopped reading.
        assert!(run.fed < 32 << 20, "{} bytes were taken", run.fed);
    }
}

#[test]
fn invalid_utf8_and_control_characters_are_refused_with_their_position() {
    let not_utf8 = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \xff}\n";
    let message = "<stdin>: not UTF-8 text: byte 0xFF at 3:18 (offset 48) is invalid";
    run(&["render", "-"], Input::Bytes(not_utf8)).refused(1, message);
    run(&["lint", "-"], Input::Bytes(not_utf8)).refused(2, message);
    let nul = b"apiVersion: v1\nkind: ConfigMap\ndata: {k: \"a\0b\"}\n";
    let message = "<stdin>: a NUL byte (U+0000) at 3:13: YAML text holds no control characters";
    run(&["render", "-"], Input::Bytes(nul)).refused(1, message);
    run(&["lint", "-"], Input::Bytes(nul)).refused(2, message);
    let escape = "kind: \u{1b}[2J\n".as_bytes();
    run(&["lint", "-"], Input::Bytes(escape)).refused(2, "a control character (U+001B) at 1:7");
}

#[test]
fn long_strings_and_many_documents_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let long = format!(
        "apiVersion: v1\nkind: ConfigMap\ndata:\n  k: {}\n",
        "x".repeat(3 << 20)
    );
    let path = file(dir.path(), "long.yaml", long);
    run(&["lint", &path], Input::None)
        .refused(2, "a scalar of 3145728 bytes, over the limit of 2097152");
    let docs = file(dir.path(), "docs.yaml", "--- {}\n".repeat(50_001));
    run(&["lint", &docs], Input::None).refused(2, "more than 50000 documents");
    let nodes = format!("  x: [{}]\n", "0,".repeat(200_000));
    let request = file(dir.path(), "r.yaml", request_with(&nodes));
    run(&["render", &request], Input::None).refused(1, "more than 100000 nodes in one document");
}

#[test]
fn a_file_full_of_findings_reports_the_first_ten_thousand_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    // Every document relates to another (an Indexed Job and its Service) and carries
    // several findings: the stream rules keep a part of each, and nothing is printed twice.
    let pair = |i: usize| {
        format!(
            "---\napiVersion: batch/v1\nkind: Job\nmetadata: {{name: j{i}}}\nspec:\n  \
             completionMode: Indexed\n  completions: 2\n  template:\n    spec:\n      \
             subdomain: s{i}\n      containers: [{{name: c, image: \"nvcr.io/x:1\", \
             resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]\n---\napiVersion: v1\n\
             kind: Service\nmetadata: {{name: s{i}}}\nspec: {{clusterIP: None, selector: \
             {{a: b}}}}\n"
        )
    };
    let text: String = (0..24_000).map(pair).collect();
    assert!(text.len() > 6 << 20);
    let path = file(dir.path(), "findings.yaml", text);
    for format in ["text", "jsonl"] {
        let run = run(&["lint", "--format", format, &path], Input::None);
        assert_eq!(run.code, Some(1));
        run.bounded();
        let out = &run.stdout;
        assert!(
            out.contains("TK009"),
            "{}",
            &out[out.len().saturating_sub(2000)..]
        );
        assert!(out.contains("more findings in"), "{out}");
        if format == "jsonl" {
            assert_eq!(run.stdout.lines().count(), 10_001);
        }
    }
}

#[test]
fn a_record_file_over_its_limit_is_corrupt_not_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().display().to_string();
    let record = |args: &[&str]| {
        common::tao()
            .env("TAO_K8S_STATE_DIR", &state)
            .arg("record")
            .args(args)
            .stdin_null()
            .output()
            .unwrap()
    };
    let opened = record(&[
        "open",
        "--image",
        "nvcr.io/x:1",
        "--network-arch",
        "dino",
        "--action",
        "train",
        "--storage-tier",
        "A",
        "--results-dir",
        "/results",
    ]);
    assert!(
        opened.status.success(),
        "{}",
        String::from_utf8_lossy(&opened.stderr)
    );
    let id = String::from_utf8(opened.stdout).unwrap().trim().to_string();
    let path = dir.path().join("records").join(format!("{id}.json"));
    std::fs::write(&path, " ".repeat(64 << 20)).unwrap();
    let mut command = Command::new(BIN);
    command.env("TAO_K8S_STATE_DIR", &state);
    run_in(&mut command, &["record", "show", &id], Input::None)
        .refused(2, "is not a valid record: larger than 1048576 bytes");
}

#[test]
fn a_template_that_loops_or_writes_without_end_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
            "job.yaml.j2:1: engine ran out of fuel",
        ),
        (
            "{% for i in range(100000) %}{{ \"x\" * 1000000 }}{% endfor %}",
            "job.yaml.j2 writes more than 16777216 bytes",
        ),
        // Seven joins of eight copies each: 2 GB from a 700-byte template. Fuel counts the
        // instructions (a few dozen), not the bytes: every value has a byte budget too.
        (&seven_joins("join"), "a value of more than 16777216 bytes"),
        // Nested lists share their items, written out they are the same 2 GB.
        (
            &seven_joins("list"),
            "writing a value of more than 16777216 bytes",
        ),
        // `~` is an operator, no filter: the fuel left bounds what it builds (it took 780 MB).
        (&seven_joins("concat"), "engine ran out of fuel"),
        (
            &seven_joins("format"),
            "a value of more than 16777216 bytes",
        ),
        (
            &seven_joins("replace"),
            "a value of more than 16777216 bytes",
        ),
    ];
    for (template, message) in cases {
        std::fs::write(dir.path().join("job.yaml.j2"), template).unwrap();
        let templates = dir.path().display().to_string();
        run(&["render", "--templates", &templates, EXAMPLE], Input::None).refused(1, message);
    }
}

/// `{% set a = "x" * 1000 %}` and seven levels of eight copies each (joined, nested in lists,
/// concatenated, formatted or replaced), then written.
fn seven_joins(how: &str) -> String {
    let mut text = String::from("{% set l0 = \"x\" * 1000 %}");
    for i in 1..=7 {
        let last = format!("l{}", i - 1);
        let items = [last.as_str(); 8];
        let value = match how {
            "join" => format!("[{}]|join", items.join(", ")),
            "list" => format!("[{}]", items.join(", ")),
            "concat" => items.join(" ~ "),
            "format" => format!("\"{}\"|format({})", "%s".repeat(8), items.join(", ")),
            _ => format!("{last}|replace(\"x\", \"xxxxxxxx\")"),
        };
        text += &format!("{{% set l{i} = {value} %}}");
    }
    text + "x: {{ l7 }}\n"
}

/// A 13 MB Pod whose 199,990 env entries each hold a password: near the node limit, every
/// value a finding. Lint stays inside the memory bound (it took 305 MB when every rule's
/// findings, a serde_json copy of the Pod for the schema and a copy of its containers for
/// the stream rules were held at once). Peak memory is asserted; CPU time only as a hang guard.
#[test]
fn a_pod_with_two_hundred_thousand_inline_passwords_stays_inside_the_memory_bound() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\nspec:\n  containers:\n  - name: app\n    \
         image: nvcr.io/nvidia/tao/tao-toolkit:5.5.0-pyt\n    env:\n",
    );
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    for i in 0..199_990 {
        // splitmix64: a value that looks random, so every one reads as a password.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        text += &format!("    - name: DB_PASSWORD_{i}\n      value: FAKE{z:016x}Q\n");
    }
    assert!(text.len() > 12 << 20);
    let path = file(dir.path(), "pod.yaml", text);
    for format in ["text", "json"] {
        let run = run(&["lint", "--format", format, &path], Input::None);
        eprintln!(
            "{format}: peak RSS {} KiB, CPU {:?}",
            run.max_rss_kib, run.cpu
        );
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        assert!(run.stdout.contains("more findings in"));
        assert!(
            run.max_rss_kib < MAX_RSS_KIB,
            "{format}: peak RSS {} KiB",
            run.max_rss_kib
        );
        assert!(run.cpu < HANG_GUARD, "hang guard: {:?}", run.cpu);
    }
}

/// `gate` on the pods of a large cluster (200,000 running pods, 34 MB of what kubectl returns)
/// counts each pod where it runs as it reads it: every one is counted (the node's 200,000 pod
/// slots are full), and the pods are never held (the list alone took over 256 MiB when it was).
#[test]
fn gate_counts_a_large_cluster_s_pods_without_holding_them() {
    let dir = tempfile::tempdir().unwrap();
    let render = run(&["render", EXAMPLE], Input::None);
    assert_eq!(render.code, Some(0), "{}", render.stderr);
    let manifest = file(dir.path(), "manifest.yaml", &render.stdout);
    let cluster = dir.path().join("cluster");
    std::fs::create_dir(&cluster).unwrap();
    file(
        &cluster,
        "nodes.json",
        r#"{"items": [{"metadata": {"name": "gpu-0"}, "status": {"allocatable": {"cpu": "100000",
            "memory": "1000Ti", "nvidia.com/gpu": "8", "pods": "200000"},
            "conditions": [{"type": "Ready", "status": "True"}]}}]}"#,
    );
    let mut pods = String::from(r#"{"apiVersion": "v1", "kind": "List", "items": ["#);
    for i in 0..200_000 {
        if i > 0 {
            pods.push(',');
        }
        pods += &format!(
            r#"{{"metadata":{{"name":"p{i}","namespace":"team"}},"spec":{{"nodeName":"gpu-0","containers":[{{"name":"c","resources":{{"requests":{{"cpu":"100m","memory":"1Gi"}}}}}}]}},"status":{{"phase":"Running"}}}}"#
        );
    }
    pods += "]}";
    assert!(pods.len() > 30 << 20);
    file(&cluster, "pods.json", pods);
    let run = run(
        &[
            "gate",
            &manifest,
            "--cluster",
            &cluster.display().to_string(),
        ],
        Input::None,
    );
    assert!(
        run.stdout.contains("room for 0 of 1 pod now") && run.stdout.contains("gpu-0: 0 pods free"),
        "{}{}",
        run.stdout,
        run.stderr
    );
    run.bounded();
}
