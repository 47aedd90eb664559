use crate::lint::pods::{ALL_CONTAINERS, container_name, containers};
use crate::lint::{Document, Finding, Findings, Rule};
use crate::yaml::{Step, Value};

crate::rule! {
    /// What it checks: the `image` of every container and init container (Pods, Jobs,
    /// CronJobs, Deployments, StatefulSets, DaemonSets, ReplicaSets) that has neither a tag
    /// nor a digest, or whose tag is `latest`. The port of a registry host
    /// (`registry:5000/tao`) is not a tag; a digest (`@sha256:…`) pins the image whatever
    /// the tag says.
    ///
    /// Why it matters: an untagged image means `:latest`, which moves. Nodes that pulled it
    /// at different times run different code, so the ranks of one multi-node run can load
    /// different PyTorch or NCCL builds and hang in their first collective, and a rerun of
    /// last month's training is not the same training. `:latest` also makes every pod pull
    /// the image again (`imagePullPolicy` defaults to `Always`), tens of gigabytes for TAO.
    ///
    /// Example: `image: nvcr.io/nvidia/tao/tao-toolkit` or
    /// `image: registry.example.com:5000/tao-toolkit:latest`.
    ///
    /// Fix: name a version tag (`nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt`) or, to pin the
    /// exact bytes, a digest (`nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt@sha256:…`).
    pub struct UnpinnedImage {
        code: "TK304",
        name: "unpinned-image",
        group: Gpu,
        severity: Error,
    }
}

impl Rule for UnpinnedImage {
    fn check(&self, doc: &Document, out: &mut Findings) {
        for (at, container) in containers(doc, ALL_CONTAINERS) {
            let Some(node) = container.get("image") else {
                continue;
            };
            let Value::Str(image) = &node.value else {
                continue;
            };
            let Some(problem) = unpinned(image) else {
                continue;
            };
            let mut path = at.get();
            path.push(Step::Key("image".into()));
            out.push(Finding {
                message: format!(
                    "{} runs image `{image}` in container `{}`, {problem}",
                    doc.label(),
                    container_name(container)
                ),
                help: Some(
                    "pin a version tag (`nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt`) or a digest (`…@sha256:<64 hex>`)"
                        .into(),
                ),
                path,
                span: node.span.clone(),
            });
        }
    }
}

/// Why an image reference is not pinned, if it is not.
fn unpinned(image: &str) -> Option<&'static str> {
    if image.trim().is_empty() || image.contains('@') {
        return None;
    }
    // A tag follows the last `:` of the last path component: `host:5000/img` has none.
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        None | Some((_, "")) => {
            Some("which has no tag or digest: it means `:latest`, which moves between pulls")
        }
        Some((_, "latest")) => Some("tagged `:latest`, which moves between pulls"),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::unpinned;

    #[test]
    fn tags_ports_and_digests() {
        for bad in [
            "tao",
            "nvcr.io/nvidia/tao/tao-toolkit",
            "nvcr.io/nvidia/tao/tao-toolkit:latest",
            "registry:5000/tao",
            "registry:5000/team/tao:latest",
            "tao:",
        ] {
            assert!(unpinned(bad).is_some(), "{bad}");
        }
        for good in [
            "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt",
            "registry:5000/team/tao:6.0.0",
            "tao@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "tao:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "nvcr.io/nvidia/tao/tao-toolkit:latest-6.0",
        ] {
            assert!(unpinned(good).is_none(), "{good}");
        }
    }
}
