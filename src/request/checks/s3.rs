use super::{Checker, IMAGE, QUANTITY, STORAGE, path, with};
use crate::kube::quantity;
use crate::request::{ActionRequest, S3, Tier};

request_check! {
    /// What it checks: `storage.s3` goes with `tier: C` and tier C has an `s3` section; each
    /// input's `uri` and the results' `uri` are `s3://bucket/...` with a bucket name S3 accepts
    /// and no `..`; each input's `path` is a clean absolute container path outside the paths
    /// tao-k8s mounts; an input's `sizeLimit` is a positive quantity; the staging image
    /// (`s3.image`) is pinned like `spec.image`.
    ///
    /// Why it matters: tier C stages inputs from S3 into the pod before the action and uploads
    /// the results after it: a URI the S3 client cannot read fails the job only after it was
    /// scheduled, with the GPUs already held, and an `s3` section under tier A is silently
    /// never staged.
    ///
    /// Example: `tier: A` with an `s3` section, or `uri: s3://My_Bucket/data`.
    ///
    /// Fix: set `tier: C` (or remove `s3`) and write URIs as `s3://bucket/prefix/`.
    pub(super) const CHECK = {
        name: "s3",
        codes: [STORAGE, QUANTITY, IMAGE],
        run: check,
    }
}

fn check(c: &mut Checker, req: &ActionRequest) {
    let s = &req.spec.storage;
    match (s.tier, &s.s3) {
        (Some(Tier::A), Some(_)) => c.error(
            STORAGE,
            &path("spec.storage.s3"),
            "`s3` staging needs tier C, but `tier` is A".into(),
            "tier C only",
            Some("set `tier: C` or remove `s3`".into()),
        ),
        (Some(Tier::C), None) => c.error(
            STORAGE,
            &path("spec.storage.tier"),
            "tier C needs `storage.s3`".into(),
            "no `s3` section",
            None,
        ),
        _ => {}
    }
    if let Some(s3) = &s.s3 {
        s3_section(c, s3);
    }
}

/// `s3://bucket/key-or-prefix`: a bucket name S3 accepts, and no `..`.
fn s3_uri_problem(uri: &str) -> Option<&'static str> {
    let Some(rest) = uri.strip_prefix("s3://") else {
        return Some("does not start with `s3://`");
    };
    let bucket = rest.split('/').next().unwrap_or_default();
    let bucket_ok = (3..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
        && bucket.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !bucket_ok {
        Some("has no valid bucket name (3-63 lowercase letters, digits, `.` and `-`)")
    } else if rest.split('/').any(|s| s == "..") {
        Some("has a `..` segment")
    } else {
        None
    }
}

fn s3_section(c: &mut Checker, s3: &S3) {
    let base = path("spec.storage.s3");
    for (i, input) in s3.inputs.iter().enumerate() {
        let at = with(with(base.clone(), "inputs"), i);
        if let Some(problem) = s3_uri_problem(&input.uri) {
            c.error(
                STORAGE,
                &with(at.clone(), "uri"),
                format!("`{}` {problem}", input.uri),
                "not an S3 URI",
                Some("write `s3://bucket/prefix/`".into()),
            );
        }
        super::storage::container_path(c, &with(at.clone(), "path"), "path", &input.path);
        if let Some(q) = &input.size_limit
            && quantity::parse(&q.0).is_none_or(|v| v <= 0.0)
        {
            c.error(
                QUANTITY,
                &with(at.clone(), "sizeLimit"),
                format!(
                    "`sizeLimit` is not a positive Kubernetes quantity: found `{}`",
                    q.0
                ),
                "expected a quantity",
                None,
            );
        }
    }
    if let Some(results) = &s3.results
        && let Some(problem) = s3_uri_problem(&results.uri)
    {
        c.error(
            STORAGE,
            &path("spec.storage.s3.results.uri"),
            format!("`{}` {problem}", results.uri),
            "not an S3 URI",
            Some("write `s3://bucket/prefix/`".into()),
        );
    }
    if let Some(image) = &s3.image {
        super::image::image(c, image, &with(base, "image"));
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports};
    use serde_json::{Value, json};

    fn tier_c(s3: Value) -> impl FnOnce(&mut Value) {
        move |r| {
            r["spec"]["storage"]["tier"] = json!("C");
            r["spec"]["storage"]["s3"] = s3;
        }
    }

    #[test]
    fn a_tier_c_section_with_good_uris_is_quiet() {
        let s3 = json!({"inputs": [{"uri": "s3://tao-data/coco/", "path": "/data/coco", "sizeLimit": "20Gi"}],
                        "results": {"uri": "s3://tao-results/run-1/"}});
        assert_eq!(reports(&super::CHECK, tier_c(s3)), NONE);
    }

    #[test]
    fn tier_and_section_go_together() {
        let a = reports(&super::CHECK, |r| {
            r["spec"]["storage"]["tier"] = json!("A");
            r["spec"]["storage"]["s3"] = json!({"inputs": []});
        });
        assert_eq!(a, [("TK018", "spec.storage.s3")]);
        let c = reports(&super::CHECK, |r| r["spec"]["storage"]["tier"] = json!("C"));
        assert_eq!(c, [("TK018", "spec.storage.tier")]);
    }

    #[test]
    fn bad_uris_paths_limits_and_images_are_refused_where_they_are() {
        let s3 = json!({"inputs": [{"uri": "http://tao-data/coco", "path": "data", "sizeLimit": "0"}],
                        "results": {"uri": "s3://ab/../x"},
                        "image": "amazon/aws-cli:latest"});
        assert_eq!(
            reports(&super::CHECK, tier_c(s3)),
            [
                ("TK018", "spec.storage.s3.inputs[0].uri"),
                ("TK018", "spec.storage.s3.inputs[0].path"),
                ("TK014", "spec.storage.s3.inputs[0].sizeLimit"),
                ("TK018", "spec.storage.s3.results.uri"),
                ("TK012", "spec.storage.s3.image"),
            ]
        );
    }
}
