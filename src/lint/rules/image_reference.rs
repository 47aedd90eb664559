use crate::kube::image::problem;
use crate::lint::api::{Report, key, shown, text};
use crate::lint::pods::container_name;
use crate::lint::{Document, Findings, Rule};

crate::rule! {
    /// What it checks: the `image` of every container (init, main, ephemeral) against the
    /// image reference grammar the kubelet parses it with (`[host[:port]/]path[:tag][@digest]`):
    /// the path is lowercase components of letters and digits joined by `.`, `_`, `__` or
    /// `-` runs, separated by `/`; the host is DNS components (letters, digits, inner `-`)
    /// joined by `.`, with an optional numeric port; the tag is at most 128 letters, digits,
    /// `_`, `.` and `-`, not starting with `.` or `-`; a digest is `sha256:` and 64 (or
    /// `sha384:` 96, `sha512:` 128) lowercase hex digits; the name is at most 255
    /// characters. A missing or empty image, or one with spaces or control characters, is
    /// reported too.
    ///
    /// Why it matters: the API server accepts any non-empty image (only a Pod's may not
    /// start or end with a space), so the Job is created; the kubelet then cannot parse the
    /// reference, the pod waits in `InvalidImageName`, and the Job neither runs nor fails.
    ///
    /// Example: `image: repo:---`, `image: nvcr.io/NVIDIA/tao:6.0`,
    /// `image: tao@sha256:abc`.
    ///
    /// Fix: write the reference as `docker pull` takes it, e.g.
    /// `nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt` or `…@sha256:<64 hex>`.
    pub struct ImageReference {
        code: "TK411",
        name: "image-reference",
        group: Api,
        severity: Error,
    }
}

impl Rule for ImageReference {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let mut report = Report::new(doc, out);
        for (path, container) in doc.containers() {
            let image = container.get("image");
            if !matches!(container.value, crate::yaml::Value::Map(_)) {
                continue; // the strict schema says what it should be
            }
            // The API server requires a non-empty image of every container, in a Pod and in a
            // template (`validateContainerCommon`: `image: Required value`).
            if image.is_none_or(|node| text(node) == Some("")) {
                report.at(
                    key(&path.get(), "image"),
                    image.unwrap_or(container),
                    format!(
                        "container `{}` has no `image`: the API server refuses it (image: Required value)",
                        container_name(container)
                    ),
                    "name the image the container runs, e.g. `nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt`",
                );
                continue;
            }
            let Some(node) = image else {
                continue;
            };
            let Some(image) = text(node) else {
                continue;
            };
            let Some(problem) = problem(image) else {
                continue;
            };
            report.at(
                key(&path.get(), "image"),
                node,
                format!(
                    "image `{}` of container `{}` is not a valid image reference: {problem}; the kubelet refuses it and the pod stays in InvalidImageName",
                    shown(node, 120),
                    container_name(container)
                ),
                "write it as `docker pull` takes it, e.g. `nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt`",
            );
        }
    }
}
