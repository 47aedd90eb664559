//! The driver: a constant bash program (`scripts/driver.sh`, the bundle's `job.sh`) that runs
//! kubectl in order, and the decisions it asks this module for. The program holds only the
//! kubectl calls and the order of the steps; what it decides comes from here and from
//! [`crate::gate`]:
//!
//! - [`values`]: the job's values the program reads (`job.env`), written through the one
//!   function that quotes a value for the shell, so that no value is part of the program;
//! - [`credentials`]: which environment variables the submitter lets into the pod, and the
//!   Secrets built from them (values read from the environment only, never from argv);
//! - [`objects`]: the objects a submit creates, stamped with the job record that owns them,
//!   and the exact deletes (preconditioned on the uid the driver created);
//! - [`kept`]: what the API server kept of what the driver sent;
//! - [`logs`]: where the pods keep their logs beyond their own life, and the reader Pod that
//!   `job.sh logs` makes to read them from a volume once the pods are gone.
//!
//! The driver owns only what it created: an object is its own when its uid is listed in one
//! of the submitter's job records ([`crate::record`]), never because of its name.

pub mod credentials;
pub mod kept;
pub mod logs;
pub mod objects;
pub mod values;

pub use values::JobValues;

/// The driver program, the same for every job.
pub const DRIVER: &str = include_str!("../../scripts/driver.sh");
/// The line of the program that reads the job's values from `job.env` beside it.
pub const DATA_LINE: &str = ". \"$here/job.env\"\n";
/// NGC's literal registry user name.
pub const NGC_USERNAME: &str = "$oauthtoken";

/// A docker config (`.dockerconfigjson`) for one registry: `auths.<server>` with the user name,
/// the password and their base64 `auth`, as `docker login` writes it.
pub fn docker_config(server: &str, username: &str, password: &str) -> String {
    let auth = base64(format!("{username}:{password}").as_bytes());
    serde_json::json!({"auths": {server: {"username": username, "password": password, "auth": auth}}})
        .to_string()
}

/// Standard base64 with padding.
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, &b| n << 8 | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `value` as one bash word that expands to exactly `value`: single quotes, with each `'`
/// written as `'\''`. Every value reaches the script through this function.
pub fn shell_quote(value: &str) -> String {
    // Always quoted, even plain words: `ACTION=export` would read as a command to a reader
    // (and to shellcheck).
    format!("'{}'", value.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::{DATA_LINE, DRIVER, base64, docker_config, shell_quote};

    #[test]
    fn base64_is_the_standard_alphabet_with_padding() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("$oauthtoken:FAKE-key+/", "JG9hdXRodG9rZW46RkFLRS1rZXkrLw=="),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain}");
        }
        let config: serde_json::Value =
            serde_json::from_str(&docker_config("nvcr.io", "$oauthtoken", "a\"b\\c")).unwrap();
        assert_eq!(config["auths"]["nvcr.io"]["password"], "a\"b\\c");
    }

    #[test]
    fn the_program_reads_its_values_on_one_line() {
        assert_eq!(DRIVER.matches(DATA_LINE).count(), 1);
    }

    #[test]
    fn quoting_round_trips_through_bash() {
        let values = [
            "",
            "plain",
            "a b",
            "it's",
            "$(rm -rf /)",
            "`x`",
            "a\nb",
            "\\",
            "\"q\"",
            "*",
            "~",
            "-n",
            "日本",
            "a'b'c",
            "!event",
            "${X:-y}",
        ];
        for v in values {
            let out = std::process::Command::new("bash")
                .args(["-c", &format!("printf %s {}", shell_quote(v))])
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8(out.stdout).unwrap(),
                v,
                "{v:?} -> {}",
                shell_quote(v)
            );
        }
    }
}
