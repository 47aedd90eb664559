//! The credentials a request may ask for, by name: the S3 keys, NGC_KEY, the model keys of
//! `credentials.extra`. Their values never pass through a request: the submitter's
//! environment holds them and the driver passes them (`driver::credentials`).

/// Environment names that carry credentials: they come from the submitter's environment
/// through the credentials Secret, never from the request.
pub const CREDENTIAL_ENV: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "ACCESS_KEY",
    "SECRET_KEY",
    "NGC_KEY",
    "NGC_API_KEY",
];

/// The credential keys of S3 access, as the pod reads them from the Secret: the first two
/// are required.
pub const S3_KEYS: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "S3_BUCKET_NAME",
    "S3_ENDPOINT_URL",
];

/// The legacy names of the two required S3 keys, read when the AWS names are unset.
pub const LEGACY_S3_KEYS: [(&str, &str); 2] = [
    ("AWS_ACCESS_KEY_ID", "ACCESS_KEY"),
    ("AWS_SECRET_ACCESS_KEY", "SECRET_KEY"),
];
/// The nvcr.io API key, passed only as the pull Secret.
pub const NGC_KEY: &str = "NGC_KEY";

/// Why `name` can never be a `credentials.extra` key, if it cannot.
pub fn extra_problem(name: &str) -> Option<String> {
    let upper = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if !upper {
        return Some("not an upper-case environment variable name ([A-Z_][A-Z0-9_]*)".into());
    }
    if name == NGC_KEY {
        return Some(
            "NGC_KEY reaches the cluster only as the nvcr.io pull Secret, never in the pod".into(),
        );
    }
    if S3_KEYS.contains(&name) || LEGACY_S3_KEYS.iter().any(|(_, legacy)| *legacy == name) {
        return Some(format!(
            "{name} is an S3 key: it reaches the pod only when the request uses S3 (`credentials.s3`)"
        ));
    }
    if name.starts_with("TAO_K8S_") {
        return Some(format!(
            "{name} is a setting of tao-k8s itself, not a value for the pod"
        ));
    }
    None
}
