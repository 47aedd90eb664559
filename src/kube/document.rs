//! One Kubernetes object of a stream, as the checkers see it, and a finding about one of its
//! nodes.

use crate::kube::KubeVersion;
use crate::source::{Source, Span};
use crate::yaml::{Node, Step, Value};

/// One object of a stream, with what rules usually want to know about it.
pub struct Document<'a> {
    pub source: &'a Source,
    pub root: &'a Node,
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: Option<&'a str>,
    /// Plain scalars YAML 1.1 tools read as booleans (`no`, `on`), by span.
    pub yaml11_booleans: &'a [Span],
    /// The Kubernetes version the object is checked against (`--kube-version`).
    pub kube_version: KubeVersion,
    /// The Pod Security Standards level its namespace enforces (a Namespace's label in the
    /// same file, else `--pod-security`); `None`: not checked.
    pub pod_security: Option<super::PodSecurity>,
    /// Which replicated Job of a JobSet the pod spec is taken from (0 for every other kind):
    /// the lint runs the rules once per replicated Job ([`Document::replicated`]).
    pub replicated_job: usize,
    /// The pod spec's path and node, found once: most rules start from it.
    pod: std::cell::OnceCell<Option<(Vec<Step>, &'a Node)>>,
    /// The pod spec's containers, found once: many rules walk them.
    containers: std::cell::OnceCell<Vec<(ContainerPath, &'a Node)>>,
}

/// Every container list of a pod spec; names are unique across all of them.
pub const CONTAINER_LISTS: &[&str] = &["initContainers", "containers", "ephemeralContainers"];

/// Where a container of a pod spec is; made into a path only when a finding needs one, since
/// every rule about containers walks every container of every object.
#[derive(Debug, Clone)]
pub struct ContainerPath {
    pod: std::rc::Rc<[Step]>,
    list: &'static str,
    index: usize,
}

impl ContainerPath {
    /// `<pod spec>.<list>[<index>]`
    pub fn get(&self) -> Vec<Step> {
        let mut p = self.pod.to_vec();
        p.push(Step::Key(self.list.into()));
        p.push(Step::Index(self.index));
        p
    }

    /// The list the container is in: `initContainers`, `containers` or `ephemeralContainers`.
    pub fn list(&self) -> &'static str {
        self.list
    }
}

impl<'a> Document<'a> {
    /// `kind/namespace/name`, for messages and reports.
    pub fn label(&self) -> String {
        match self.namespace {
            Some(ns) => format!("{}/{ns}/{}", self.kind, self.name),
            None => format!("{}/{}", self.kind, self.name),
        }
    }

    /// The node at a path of keys and indexes.
    pub fn at(&self, path: &[Step]) -> Option<&Node> {
        self.root.lookup(path).map(|(_, n)| n)
    }

    /// The pod spec node and its path (see [`Document::pod_spec_path`]).
    pub fn pod_spec(&self) -> Option<(&[Step], &'a Node)> {
        self.pod
            .get_or_init(|| {
                let path = self.find_pod_spec()?;
                let node = self.root.lookup(&path)?.1;
                Some((path, node))
            })
            .as_ref()
            .map(|(path, node)| (path.as_slice(), *node))
    }

    /// Every container of the pod spec (init, main and ephemeral), with where it is.
    pub fn containers(&self) -> &[(ContainerPath, &'a Node)] {
        self.containers.get_or_init(|| {
            let Some((pod, spec)) = self.pod_spec() else {
                return Vec::new();
            };
            let pod: std::rc::Rc<[Step]> = pod.into();
            let mut out = Vec::new();
            for &list in CONTAINER_LISTS {
                let Some(Node {
                    value: Value::Seq(items),
                    ..
                }) = spec.get(list)
                else {
                    continue;
                };
                for (index, container) in items.iter().enumerate() {
                    let at = ContainerPath {
                        pod: pod.clone(),
                        list,
                        index,
                    };
                    out.push((at, container));
                }
            }
            out
        })
    }

    /// The path of the pod spec of a Pod, or of the template of a Job, Deployment,
    /// StatefulSet, DaemonSet, ReplicaSet, CronJob, or of a JobSet's replicated Job
    /// ([`Document::replicated_job`]).
    pub fn pod_spec_path(&self) -> Option<&[Step]> {
        self.pod_spec().map(|(path, _)| path)
    }

    fn find_pod_spec(&self) -> Option<Vec<Step>> {
        if let Some(job) = self.jobset_job_path() {
            let mut path = job;
            path.extend(["template", "spec"].map(|k| Step::Key(k.into())));
            return Some(path);
        }
        let keys: &[&'static str] = match self.kind {
            "Pod" => &["spec"],
            "Job" | "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" => {
                &["spec", "template", "spec"]
            }
            "CronJob" => &["spec", "jobTemplate", "spec", "template", "spec"],
            _ => return None,
        };
        Some(keys.iter().map(|&k| Step::Key(k.into())).collect())
    }
}

impl<'a> Document<'a> {
    /// The Job spec of the document's replicated Job of a JobSet
    /// (`spec.replicatedJobs[i].template.spec`, `i` being [`Document::replicated_job`]).
    pub fn jobset_job_path(&self) -> Option<Vec<Step>> {
        self.jobset_job_path_at(self.replicated_job)
    }

    /// The Job spec of the JobSet's `i`th replicated Job, if the document is a JobSet that
    /// has one.
    pub fn jobset_job_path_at(&self, i: usize) -> Option<Vec<Step>> {
        if self.kind != "JobSet" || !self.api_version.starts_with("jobset.x-k8s.io/") {
            return None;
        }
        let path = vec![
            Step::Key("spec".into()),
            Step::Key("replicatedJobs".into()),
            Step::Index(i),
            Step::Key("template".into()),
            Step::Key("spec".into()),
        ];
        self.at(&path).is_some().then_some(path)
    }

    /// How many replicated Jobs a JobSet lists (0 for every other kind).
    pub fn replicated_jobs(&self) -> usize {
        if self.kind != "JobSet" || !self.api_version.starts_with("jobset.x-k8s.io/") {
            return 0;
        }
        match self.root.get("spec").and_then(|s| s.get("replicatedJobs")) {
            Some(Node {
                value: Value::Seq(jobs),
                ..
            }) => jobs.len(),
            _ => 0,
        }
    }

    /// The same object, its pod spec taken from the JobSet's `i`th replicated Job.
    pub fn replicated(&self, i: usize) -> Document<'a> {
        Document {
            replicated_job: i,
            pod: std::cell::OnceCell::new(),
            containers: std::cell::OnceCell::new(),
            ..*self
        }
    }
}

impl<'a> Document<'a> {
    /// A Kubernetes object (a mapping with `apiVersion` and `kind`), or `None`.
    pub fn new(
        source: &'a Source,
        root: &'a Node,
        yaml11_booleans: &'a [Span],
    ) -> Option<Document<'a>> {
        let text = |node: Option<&'a Node>| match node.map(|n| &n.value) {
            Some(Value::Str(s)) => Some(s.as_str()),
            _ => None,
        };
        let meta = |key: &str| text(root.get("metadata").and_then(|m| m.get(key)));
        Some(Document {
            source,
            root,
            api_version: text(root.get("apiVersion"))?,
            kind: text(root.get("kind"))?,
            name: meta("name").or(meta("generateName")).unwrap_or(""),
            namespace: meta("namespace"),
            yaml11_booleans,
            kube_version: KubeVersion::NEWEST,
            pod_security: None,
            replicated_job: 0,
            pod: std::cell::OnceCell::new(),
            containers: std::cell::OnceCell::new(),
        })
    }
}

/// A rule's report about one node.
#[derive(Debug, Clone)]
pub struct Finding {
    pub message: String,
    pub help: Option<String>,
    /// Where in the document (a JSON path: `spec.template.spec.containers[0].env[3].value`).
    pub path: Vec<Step>,
    /// The node it is about.
    pub span: Span,
}
