//! What the integration tests share: one way to run the `tao-k8s` binary built for the tests
//! and to read what it did. Each test file is its own crate (`mod common;`) and uses a part of
//! this, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The binary under test, as cargo built it for this test run.
pub const BIN: &str = env!("CARGO_BIN_EXE_tao-k8s");
/// The repository: examples and fixtures are named relative to it.
pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The one bound on time a test may have: a hang guard, not a speed goal, far above what the
/// slowest case takes on a loaded 2-core machine (about 2.5 s of CPU). Speed is measured in
/// `bench/`.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// The bare binary: the test's working directory and environment, stdin an empty pipe.
pub fn tao() -> Tao {
    Tao::new()
}

/// The binary as a user at the repository runs it: from its root, outside any namespace
/// set in the environment and outside a pod (where the namespace would default to the
/// service account's), without colour.
pub fn user() -> Tao {
    let mut tao = Tao::new();
    tao.current_dir(ROOT)
        .env_remove("TAO_K8S_NAMESPACE")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .arg("--color=never");
    tao
}

/// What goes to the child's stdin.
enum Stdin {
    /// A pipe: these bytes, then end of file.
    Pipe(Vec<u8>),
    /// `/dev/null`.
    Null,
}

/// One command line of the binary, built like `std::process::Command`.
pub struct Tao {
    command: Command,
    stdin: Stdin,
    timeout: Option<Duration>,
}

impl Default for Tao {
    fn default() -> Self {
        Tao::new()
    }
}

impl Tao {
    pub fn new() -> Tao {
        Tao::at(BIN)
    }

    /// The binary at `bin`: a copy of the one under test, or a stand-in for it.
    pub fn at(bin: impl AsRef<OsStr>) -> Tao {
        Tao {
            command: Command::new(bin),
            stdin: Stdin::Pipe(Vec::new()),
            timeout: None,
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Tao {
        self.command.arg(arg);
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Tao
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command.args(args);
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Tao {
        self.command.current_dir(dir);
        self
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Tao {
        self.command.env(key, value);
        self
    }

    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Tao
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.command.envs(vars);
        self
    }

    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Tao {
        self.command.env_remove(key);
        self
    }

    pub fn env_clear(&mut self) -> &mut Tao {
        self.command.env_clear();
        self
    }

    /// These bytes on stdin, then end of file.
    pub fn write_stdin(&mut self, bytes: impl Into<Vec<u8>>) -> &mut Tao {
        self.stdin = Stdin::Pipe(bytes.into());
        self
    }

    /// `/dev/null` on stdin instead of an empty pipe.
    pub fn stdin_null(&mut self) -> &mut Tao {
        self.stdin = Stdin::Null;
        self
    }

    /// Kill the child after `limit` of wall time: a hang guard, never a speed goal.
    pub fn timeout(&mut self, limit: Duration) -> &mut Tao {
        self.timeout = Some(limit);
        self
    }

    /// The underlying command, for what the methods above do not cover.
    pub fn command(&mut self) -> &mut Command {
        &mut self.command
    }

    /// Run to the end (or to the timeout, then killed) and collect its output.
    pub fn output(&mut self) -> std::io::Result<Output> {
        let mut child = self
            .command
            .stdin(match self.stdin {
                Stdin::Pipe(_) => Stdio::piped(),
                Stdin::Null => Stdio::null(),
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let feeder = match (&self.stdin, child.stdin.take()) {
            (Stdin::Pipe(bytes), Some(mut pipe)) => {
                let bytes = bytes.clone();
                // A child that exits without reading all of it closes the pipe: not an error.
                Some(std::thread::spawn(move || {
                    let _ = pipe.write_all(&bytes);
                }))
            }
            _ => None,
        };
        let stdout = drain(child.stdout.take().unwrap());
        let stderr = drain(child.stderr.take().unwrap());
        let status = wait(&mut child, self.timeout)?;
        if let Some(feeder) = feeder {
            feeder.join().unwrap();
        }
        Ok(Output {
            status,
            stdout: stdout.join().unwrap(),
            stderr: stderr.join().unwrap(),
        })
    }

    /// Run; the output must be UTF-8.
    pub fn run(&mut self) -> Run {
        let out = self.output().unwrap();
        Run {
            code: out.status.code(),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    /// Run; bytes that are not UTF-8 are shown replaced.
    pub fn run_lossy(&mut self) -> Run {
        Run::lossy(&self.output().unwrap())
    }

    /// Run, for assertions on the exit code and output in a chain.
    pub fn assert(&mut self) -> Assert {
        Assert {
            output: self.output().unwrap(),
        }
    }
}

fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        pipe.read_to_end(&mut bytes).unwrap();
        bytes
    })
}

fn wait(child: &mut Child, timeout: Option<Duration>) -> std::io::Result<ExitStatus> {
    let Some(limit) = timeout else {
        return child.wait();
    };
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            child.kill()?;
            return child.wait();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What one run did.
pub struct Run {
    /// None when a signal ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn lossy(out: &Output) -> Run {
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// A finished run, checked link by link: `.assert().success().get_output()`.
pub struct Assert {
    output: Output,
}

impl Assert {
    fn context(&self) -> String {
        format!(
            "stdout: {}\nstderr: {}",
            String::from_utf8_lossy(&self.output.stdout),
            String::from_utf8_lossy(&self.output.stderr)
        )
    }

    /// Exit code 0.
    pub fn success(self) -> Assert {
        assert!(
            self.output.status.success(),
            "exit {:?}\n{}",
            self.output.status.code(),
            self.context()
        );
        self
    }

    /// Exit code `code`.
    pub fn code(self, code: i32) -> Assert {
        assert_eq!(
            self.output.status.code(),
            Some(code),
            "exit code\n{}",
            self.context()
        );
        self
    }

    /// Stdout is exactly `expected`.
    pub fn stdout(self, expected: impl AsRef<str>) -> Assert {
        assert!(
            self.output.stdout == expected.as_ref().as_bytes(),
            "stdout is not {:?}\n{}",
            expected.as_ref(),
            self.context()
        );
        self
    }

    /// Stderr is exactly `expected`.
    pub fn stderr(self, expected: impl AsRef<str>) -> Assert {
        assert!(
            self.output.stderr == expected.as_ref().as_bytes(),
            "stderr is not {:?}\n{}",
            expected.as_ref(),
            self.context()
        );
        self
    }

    pub fn get_output(&self) -> &Output {
        &self.output
    }
}
