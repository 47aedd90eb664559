use super::{Checker, path};
use crate::codes::INVALID_VALUE;
use crate::request::{ActionRequest, S3, Tier};

request_check! {
    /// What it checks: what the job record keeps of the request fits the record's limits:
    /// `spec.image`, and where the results go (`spec.resultsDir`, or the S3 results URI under
    /// tier C), each at most the bytes `record` keeps of that field.
    ///
    /// Why it matters: the driver opens a job record at submit; a field over the record's
    /// limit is refused there, so no submit of the bundle could ever start the job. Refusing
    /// it at render time says so before anything is written.
    ///
    /// Example: an image reference or a `resultsDir` of several kilobytes.
    ///
    /// Fix: shorten the field to the limit the message gives.
    pub(super) const CHECK = {
        name: "record-limits",
        codes: [INVALID_VALUE],
        run: check,
    }
}

fn check(c: &mut Checker, req: &ActionRequest) {
    // What the job record keeps of the request must fit the record's limits, or no submit
    // of the bundle could open one.
    let results = match (req.tier(), req.spec.storage.s3.as_ref()) {
        (
            Tier::C,
            Some(S3 {
                results: Some(r), ..
            }),
        ) => ("spec.storage.s3.results.uri", r.uri.as_str()),
        _ => ("spec.resultsDir", req.spec.results_dir.as_str()),
    };
    for (field, at, value) in [
        ("image", "spec.image", req.spec.image.as_str()),
        ("results_dir", results.0, results.1),
    ] {
        let limit = crate::record::field_limit(field);
        if value.len() > limit {
            c.error(
                INVALID_VALUE,
                &path(at),
                format!(
                    "`{at}` is {} bytes long, over the {limit} bytes a job record keeps",
                    value.len()
                ),
                "too long",
                Some(format!("shorten it to {limit} bytes or fewer")),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports};
    use serde_json::json;

    #[test]
    fn fields_within_the_limits_are_quiet() {
        assert_eq!(reports(&super::CHECK, |_| {}), NONE);
    }

    #[test]
    fn fields_over_the_limits_are_refused_at_the_field() {
        let long = "a".repeat(crate::record::field_limit("image") + 1);
        let image = format!("nvcr.io/{long}:1");
        let found = reports(&super::CHECK, |r| r["spec"]["image"] = json!(image));
        assert_eq!(found, [("TK006", "spec.image")]);
        let dir = format!(
            "/results/{}",
            "d".repeat(crate::record::field_limit("results_dir"))
        );
        let found = reports(&super::CHECK, |r| r["spec"]["resultsDir"] = json!(dir));
        assert_eq!(found, [("TK006", "spec.resultsDir")]);
        let uri = format!(
            "s3://tao-results/{}",
            "u".repeat(crate::record::field_limit("results_dir"))
        );
        let found = reports(&super::CHECK, |r| {
            r["spec"]["storage"]["tier"] = json!("C");
            r["spec"]["storage"]["s3"] = json!({"results": {"uri": uri}});
        });
        assert_eq!(found, [("TK006", "spec.storage.s3.results.uri")]);
    }
}
