use super::{Checker, IMAGE, path};
use crate::request::ActionRequest;
use crate::yaml::Step;

request_check! {
    /// What it checks: `spec.image` (and `storage.s3.image`, see the `s3` check) is a
    /// reference the kubelet can pull that pins a version: a tag other than `latest`, or a
    /// `sha256:` digest of 64 lowercase hexadecimal characters; no spaces, a lowercase
    /// repository, a tag of at most 128 letters, digits, `.`, `_` and `-`.
    ///
    /// Why it matters: an unpinned image (`:latest`, or no tag, which means `:latest`) runs
    /// whatever was pushed last: a rerun of the same request trains with other code, and the
    /// job record cannot say what ran. A malformed reference fails only in the cluster, as an
    /// `InvalidImageName` pod.
    ///
    /// Example: `image: nvcr.io/nvidia/tao/tao-toolkit:latest`, or `image: nvcr.io/nvidia/tao`.
    ///
    /// Fix: pin a version, e.g. `nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt` or
    /// `...@sha256:<digest>`.
    pub(super) const CHECK = {
        name: "image",
        codes: [IMAGE],
        run: check,
    }
}

fn check(c: &mut Checker, req: &ActionRequest) {
    image(c, &req.spec.image, &path("spec.image"));
}

/// An image reference must pin a version: a tag other than `latest`, or a digest.
pub(super) fn image(c: &mut Checker, image: &str, at: &[Step]) {
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = last.split_once(':').map(|(_, t)| t);
    let repo = name
        .strip_suffix(tag.map(|t| format!(":{t}")).as_deref().unwrap_or(""))
        .unwrap_or(name);
    let problem = if image.is_empty()
        || image
            .chars()
            .any(|ch| ch.is_whitespace() || ch.is_control())
    {
        Some("an image reference has no spaces".to_string())
    } else if let Some(d) = digest {
        let ok = d.strip_prefix("sha256:").is_some_and(|h| {
            h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        });
        (!ok).then(|| {
            format!("the digest must be `sha256:` and 64 lowercase hex characters, found `{d}`")
        })
    } else {
        match tag {
            None => Some("the image has no tag or digest".to_string()),
            Some("latest") => Some("the image uses `:latest`, which is not a version".to_string()),
            Some(t)
                if t.is_empty()
                    || t.len() > 128
                    || !t
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) =>
            {
                Some(format!("`{t}` is not a valid tag"))
            }
            Some(_) => None,
        }
    };
    let problem = problem.or_else(|| {
        let path = repo.split_once('/').map_or(repo, |(host, rest)| if host.contains(['.', ':']) || host == "localhost" { rest } else { repo });
        (path.is_empty() || path.bytes().any(|b| b.is_ascii_uppercase()))
            .then(|| format!("`{repo}` is not a valid repository name (lowercase letters, digits, `.`, `_`, `-`, `/`)"))
    });
    // The grammar the kubelet parses references with (a tag such as `---` is refused there).
    let problem = problem.or_else(|| crate::kube::image::problem(image));
    if let Some(problem) = problem {
        c.error(
            IMAGE,
            at,
            format!("image `{image}` cannot be used: {problem}"),
            "expected a pinned image",
            Some("pin a version, e.g. `nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt` or `...@sha256:<digest>`".into()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports};
    use serde_json::json;

    fn image(reference: &str) -> Vec<(&'static str, &'static str)> {
        reports(&super::CHECK, |r| r["spec"]["image"] = json!(reference))
    }

    #[test]
    fn pinned_images_are_quiet() {
        assert_eq!(image("nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt"), NONE);
        assert_eq!(image("localhost:5000/tao:v1"), NONE);
        let digest = format!("nvcr.io/nvidia/tao@sha256:{}", "a".repeat(64));
        assert_eq!(image(&digest), NONE);
    }

    #[test]
    fn unpinned_and_malformed_images_are_refused_at_the_image() {
        for bad in [
            "nvcr.io/nvidia/tao/tao-toolkit:latest",
            "nvcr.io/nvidia/tao/tao-toolkit",
            "nvcr.io/nvidia/tao/tao-toolkit:v 1",
            "nvcr.io/nvidia/tao@sha256:ABC",
            "nvcr.io/NVIDIA/tao:1.0",
            "nvcr.io/nvidia/tao:bad/tag!",
            "",
        ] {
            assert_eq!(image(bad), [("TK012", "spec.image")], "{bad:?}");
        }
    }
}
