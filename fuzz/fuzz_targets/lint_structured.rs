//! Kubernetes-like objects from structured input, written out as YAML (block and flow styles,
//! anchors and aliases, YAML 1.1 booleans and other odd scalars, long and unicode strings),
//! then linted with the `lint_bytes` property. Random bytes rarely form a Job with a pod
//! template; this reaches the rules behind one.
#![no_main]

#[path = "../oracles.rs"]
mod oracles;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|stream: Stream| {
    let text = stream.to_yaml();
    oracles::lint_text(&text);
});

/// Scalars that YAML 1.1, YAML 1.2 and Kubernetes read differently, and values the rules look
/// at.
const WORDS: &[&str] = &[
    "yes",
    "no",
    "on",
    "off",
    "y",
    "n",
    "Yes",
    "NO",
    "True",
    "false",
    "~",
    "null",
    "Null",
    "",
    "0x1",
    "0o17",
    "017",
    "1e3",
    ".inf",
    "-.inf",
    ".nan",
    "1_000",
    "+1",
    "-1",
    "0",
    "1",
    "2",
    "8",
    "16",
    "500m",
    "1Gi",
    "16Gi",
    "64Mi",
    "0.5",
    "1.5Gi",
    "2Ti",
    "Memory",
    "Indexed",
    "NonIndexed",
    "Never",
    "OnFailure",
    "Always",
    "None",
    "TCP",
    "29500",
    "300",
    "3600",
    "nvidia.com/gpu",
    "NoSchedule",
    "Exists",
    "Equal",
    "WORLD_SIZE",
    "NODE_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "NNODES",
    "NPROC_PER_NODE",
    "NUM_GPU_PER_NODE",
    "JOB_COMPLETION_INDEX",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "NGC_KEY",
    "PASSWORD",
    "token",
    "ubuntu:22.04",
    "ubuntu",
    "ubuntu:latest",
    "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt",
    "nvcr.io/nvidia/pytorch",
    "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "AKIAIOSFODNN7EXAMPLE",
    "AKIAZ7Q3EXAMPLE4KEYX",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "Zm9vYmFyYmF6cXV4",
    "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "nvapi-0123456789abcdefghijABCDEFGHIJ0123456789abcdefghij",
    "s3://bucket/key",
    "https://user:pa55w0rd@example.com/x",
    "job-0.svc",
    "tao-k8s.io/ignore",
    "TK101 # reason",
    "TK310",
    "TK999",
    "/dev/shm",
    "/data",
    "/results",
    "dshm",
    "x",
    "a-very-long-name-that-goes-on-and-on-past-sixty-three-characters-for-sure-0123456789",
    "日本語",
    "ç",
    "\u{feff}",
    "é\u{301}",
    "\u{85}",
    "\u{2028}",
];

const KEYS: &[&str] = &[
    "name",
    "value",
    "image",
    "command",
    "args",
    "env",
    "resources",
    "limits",
    "requests",
    "volumes",
    "volumeMounts",
    "mountPath",
    "emptyDir",
    "medium",
    "sizeLimit",
    "annotations",
    "labels",
    "metadata",
    "spec",
    "template",
    "containers",
    "initContainers",
    "restartPolicy",
    "completionMode",
    "completions",
    "parallelism",
    "backoffLimit",
    "ttlSecondsAfterFinished",
    "subdomain",
    "clusterIP",
    "selector",
    "ports",
    "port",
    "data",
    "stringData",
    "binaryData",
    "type",
    "valueFrom",
    "secretKeyRef",
    "key",
    "tolerations",
    "imagePullSecrets",
    "nodeSelector",
    "nvidia.com/gpu",
    "cpu",
    "memory",
    "<<",
    "? x",
    "a:b",
    "unknownField",
];

#[derive(Arbitrary, Debug)]
pub struct Stream {
    docs: Vec<Doc>,
    /// Style decisions, consumed in turn: block or flow, anchors, aliases, quoting.
    styles: Vec<u8>,
    leading_marker: bool,
    trailing: Option<Text>,
}

#[derive(Arbitrary, Debug)]
enum Text {
    Word(u8),
    Any(String),
    Long(char, u16),
    Number(i64),
    Float(f64),
}

#[derive(Arbitrary, Debug)]
enum Kind {
    Job,
    Service,
    Secret,
    ConfigMap,
    Pod,
    Deployment,
    CronJob,
    Other(Text),
}

#[derive(Arbitrary, Debug)]
struct Doc {
    kind: Kind,
    api_version: Option<Text>,
    name: Option<Text>,
    namespace: Option<Text>,
    generate_name: bool,
    annotations: Vec<(Text, Text)>,
    labels: Vec<(Text, Text)>,
    job: JobSpec,
    service: ServiceSpec,
    data: Vec<(Text, Text)>,
    string_data: Vec<(Text, Text)>,
    secret_type: Option<Text>,
    extra: Vec<(Text, Free)>,
}

#[derive(Arbitrary, Debug)]
struct JobSpec {
    completion_mode: Option<Text>,
    completions: Option<Text>,
    parallelism: Option<Text>,
    backoff_limit: Option<Text>,
    ttl: Option<Text>,
    pod: PodSpec,
    template_labels: Vec<(Text, Text)>,
}

#[derive(Arbitrary, Debug)]
struct PodSpec {
    containers: Vec<Container>,
    init_containers: Vec<Container>,
    volumes: Vec<Volume>,
    restart_policy: Option<Text>,
    subdomain: Option<Text>,
    tolerations: Vec<(Text, Text, Text)>,
    pull_secrets: Vec<Text>,
    node_selector: Vec<(Text, Text)>,
    extra: Vec<(Text, Free)>,
}

#[derive(Arbitrary, Debug)]
struct Container {
    name: Text,
    image: Option<Text>,
    command: Vec<Text>,
    args: Vec<Text>,
    env: Vec<Env>,
    limits: Vec<(Resource, Text)>,
    requests: Vec<(Resource, Text)>,
    mounts: Vec<(Text, Text)>,
    extra: Vec<(Text, Free)>,
}

#[derive(Arbitrary, Debug)]
enum Resource {
    Gpu,
    Cpu,
    Memory,
    Other(Text),
}

#[derive(Arbitrary, Debug)]
struct Env {
    name: Text,
    value: EnvValue,
}

#[derive(Arbitrary, Debug)]
enum EnvValue {
    Value(Text),
    SecretKeyRef(Text, Text),
    ConfigMapKeyRef(Text, Text),
    FieldRef(Text),
    Both(Text, Text, Text),
    Nothing,
}

#[derive(Arbitrary, Debug)]
enum Volume {
    EmptyDir {
        name: Text,
        medium: Option<Text>,
        size: Option<Text>,
    },
    Pvc(Text, Text),
    Secret(Text, Text),
    ConfigMap(Text, Text),
    Other(Text, Free),
}

#[derive(Arbitrary, Debug)]
enum ServiceSpec {
    Headless {
        selector: Vec<(Text, Text)>,
        publish_not_ready: Option<Text>,
    },
    ClusterIp(Text),
    Ports(Vec<(Text, Text)>),
    None,
}

/// Anything at all.
#[derive(Arbitrary, Debug)]
enum Free {
    Scalar(Text),
    Map(Vec<(Text, Free)>),
    Seq(Vec<Free>),
}

/// The tree written out.
enum Y {
    S(String),
    M(Vec<(String, Y)>),
    L(Vec<Y>),
}

impl Text {
    fn text(&self) -> String {
        match self {
            Text::Word(i) => WORDS[*i as usize % WORDS.len()].to_string(),
            Text::Any(s) => s.clone(),
            Text::Long(c, n) => std::iter::repeat_n(*c, (*n as usize) % 5000).collect(),
            Text::Number(n) => n.to_string(),
            Text::Float(f) => f.to_string(),
        }
    }
    fn key(&self) -> String {
        match self {
            Text::Word(i) => KEYS[*i as usize % KEYS.len()].to_string(),
            other => other.text(),
        }
    }
}

fn s(t: &Text) -> Y {
    Y::S(t.text())
}
fn w(v: &str) -> Y {
    Y::S(v.to_string())
}
fn pairs(items: &[(Text, Text)]) -> Y {
    Y::M(items.iter().map(|(k, v)| (k.key(), s(v))).collect())
}
fn free(f: &Free) -> Y {
    match f {
        Free::Scalar(t) => s(t),
        Free::Map(m) => Y::M(m.iter().map(|(k, v)| (k.key(), free(v))).collect()),
        Free::Seq(l) => Y::L(l.iter().map(free).collect()),
    }
}
fn opt(m: &mut Vec<(String, Y)>, key: &str, value: &Option<Text>) {
    if let Some(v) = value {
        m.push((key.into(), s(v)));
    }
}
fn extend(m: &mut Vec<(String, Y)>, extra: &[(Text, Free)]) {
    m.extend(extra.iter().map(|(k, v)| (k.key(), free(v))));
}

impl Container {
    fn y(&self) -> Y {
        let mut m = vec![("name".to_string(), s(&self.name))];
        opt(&mut m, "image", &self.image);
        if !self.command.is_empty() {
            m.push(("command".into(), Y::L(self.command.iter().map(s).collect())));
        }
        if !self.args.is_empty() {
            m.push(("args".into(), Y::L(self.args.iter().map(s).collect())));
        }
        if !self.env.is_empty() {
            m.push(("env".into(), Y::L(self.env.iter().map(Env::y).collect())));
        }
        let res = |items: &[(Resource, Text)]| {
            Y::M(
                items
                    .iter()
                    .map(|(r, v)| {
                        let k = match r {
                            Resource::Gpu => "nvidia.com/gpu".to_string(),
                            Resource::Cpu => "cpu".into(),
                            Resource::Memory => "memory".into(),
                            Resource::Other(t) => t.key(),
                        };
                        (k, s(v))
                    })
                    .collect(),
            )
        };
        if !self.limits.is_empty() || !self.requests.is_empty() {
            let mut r = Vec::new();
            if !self.limits.is_empty() {
                r.push(("limits".into(), res(&self.limits)));
            }
            if !self.requests.is_empty() {
                r.push(("requests".into(), res(&self.requests)));
            }
            m.push(("resources".into(), Y::M(r)));
        }
        if !self.mounts.is_empty() {
            let mounts = self
                .mounts
                .iter()
                .map(|(n, p)| Y::M(vec![("name".into(), s(n)), ("mountPath".into(), s(p))]))
                .collect();
            m.push(("volumeMounts".into(), Y::L(mounts)));
        }
        extend(&mut m, &self.extra);
        Y::M(m)
    }
}

impl Env {
    fn y(&self) -> Y {
        let mut m = vec![("name".to_string(), s(&self.name))];
        let key_ref = |kind: &str, n: &Text, k: &Text| {
            Y::M(vec![(
                kind.to_string(),
                Y::M(vec![("name".into(), s(n)), ("key".into(), s(k))]),
            )])
        };
        match &self.value {
            EnvValue::Value(v) => m.push(("value".into(), s(v))),
            EnvValue::SecretKeyRef(n, k) => {
                m.push(("valueFrom".into(), key_ref("secretKeyRef", n, k)))
            }
            EnvValue::ConfigMapKeyRef(n, k) => {
                m.push(("valueFrom".into(), key_ref("configMapKeyRef", n, k)))
            }
            EnvValue::FieldRef(p) => m.push((
                "valueFrom".into(),
                Y::M(vec![(
                    "fieldRef".into(),
                    Y::M(vec![("fieldPath".into(), s(p))]),
                )]),
            )),
            EnvValue::Both(v, n, k) => {
                m.push(("value".into(), s(v)));
                m.push(("valueFrom".into(), key_ref("secretKeyRef", n, k)));
            }
            EnvValue::Nothing => {}
        }
        Y::M(m)
    }
}

impl Volume {
    fn y(&self) -> Y {
        let named = |n: &Text, k: &str, v: Y| Y::M(vec![("name".into(), s(n)), (k.into(), v)]);
        match self {
            Volume::EmptyDir { name, medium, size } => {
                let mut e = Vec::new();
                opt(&mut e, "medium", medium);
                opt(&mut e, "sizeLimit", size);
                named(name, "emptyDir", Y::M(e))
            }
            Volume::Pvc(n, c) => named(
                n,
                "persistentVolumeClaim",
                Y::M(vec![("claimName".into(), s(c))]),
            ),
            Volume::Secret(n, c) => named(n, "secret", Y::M(vec![("secretName".into(), s(c))])),
            Volume::ConfigMap(n, c) => named(n, "configMap", Y::M(vec![("name".into(), s(c))])),
            Volume::Other(n, f) => named(n, "hostPath", free(f)),
        }
    }
}

impl PodSpec {
    fn y(&self) -> Y {
        let mut m = Vec::new();
        if !self.init_containers.is_empty() {
            let c = self.init_containers.iter().map(Container::y).collect();
            m.push(("initContainers".into(), Y::L(c)));
        }
        m.push((
            "containers".into(),
            Y::L(self.containers.iter().map(Container::y).collect()),
        ));
        if !self.volumes.is_empty() {
            m.push((
                "volumes".into(),
                Y::L(self.volumes.iter().map(Volume::y).collect()),
            ));
        }
        opt(&mut m, "restartPolicy", &self.restart_policy);
        opt(&mut m, "subdomain", &self.subdomain);
        if !self.tolerations.is_empty() {
            let t = self
                .tolerations
                .iter()
                .map(|(k, o, e)| {
                    Y::M(vec![
                        ("key".into(), s(k)),
                        ("operator".into(), s(o)),
                        ("effect".into(), s(e)),
                    ])
                })
                .collect();
            m.push(("tolerations".into(), Y::L(t)));
        }
        if !self.pull_secrets.is_empty() {
            let p = self
                .pull_secrets
                .iter()
                .map(|n| Y::M(vec![("name".into(), s(n))]))
                .collect();
            m.push(("imagePullSecrets".into(), Y::L(p)));
        }
        if !self.node_selector.is_empty() {
            m.push(("nodeSelector".into(), pairs(&self.node_selector)));
        }
        extend(&mut m, &self.extra);
        Y::M(m)
    }
}

impl JobSpec {
    fn template(&self) -> Y {
        let mut meta = Vec::new();
        if !self.template_labels.is_empty() {
            meta.push(("labels".to_string(), pairs(&self.template_labels)));
        }
        Y::M(vec![
            ("metadata".into(), Y::M(meta)),
            ("spec".into(), self.pod.y()),
        ])
    }
    fn y(&self) -> Y {
        let mut m = Vec::new();
        opt(&mut m, "completionMode", &self.completion_mode);
        opt(&mut m, "completions", &self.completions);
        opt(&mut m, "parallelism", &self.parallelism);
        opt(&mut m, "backoffLimit", &self.backoff_limit);
        opt(&mut m, "ttlSecondsAfterFinished", &self.ttl);
        m.push(("template".into(), self.template()));
        Y::M(m)
    }
}

impl Doc {
    fn y(&self) -> Y {
        let (kind, api) = match &self.kind {
            Kind::Job => ("Job".to_string(), "batch/v1"),
            Kind::Service => ("Service".into(), "v1"),
            Kind::Secret => ("Secret".into(), "v1"),
            Kind::ConfigMap => ("ConfigMap".into(), "v1"),
            Kind::Pod => ("Pod".into(), "v1"),
            Kind::Deployment => ("Deployment".into(), "apps/v1"),
            Kind::CronJob => ("CronJob".into(), "batch/v1"),
            Kind::Other(t) => (t.text(), "v1"),
        };
        let api = self
            .api_version
            .as_ref()
            .map_or(api.to_string(), Text::text);
        let mut meta = Vec::new();
        if let Some(n) = &self.name {
            let key = if self.generate_name {
                "generateName"
            } else {
                "name"
            };
            meta.push((key.to_string(), s(n)));
        }
        opt(&mut meta, "namespace", &self.namespace);
        if !self.annotations.is_empty() {
            meta.push(("annotations".into(), pairs(&self.annotations)));
        }
        if !self.labels.is_empty() {
            meta.push(("labels".into(), pairs(&self.labels)));
        }
        let mut m = vec![
            ("apiVersion".to_string(), Y::S(api)),
            ("kind".into(), Y::S(kind.clone())),
            ("metadata".into(), Y::M(meta)),
        ];
        match kind.as_str() {
            "Job" => m.push(("spec".into(), self.job.y())),
            "Pod" => m.push(("spec".into(), self.job.pod.y())),
            "Deployment" => m.push((
                "spec".into(),
                Y::M(vec![("template".into(), self.job.template())]),
            )),
            "CronJob" => m.push((
                "spec".into(),
                Y::M(vec![
                    ("schedule".into(), w("0 * * * *")),
                    (
                        "jobTemplate".into(),
                        Y::M(vec![("spec".into(), self.job.y())]),
                    ),
                ]),
            )),
            "Service" => {
                let spec = match &self.service {
                    ServiceSpec::Headless {
                        selector,
                        publish_not_ready,
                    } => {
                        let mut sm = vec![
                            ("clusterIP".to_string(), w("None")),
                            ("selector".into(), pairs(selector)),
                        ];
                        opt(&mut sm, "publishNotReadyAddresses", publish_not_ready);
                        Y::M(sm)
                    }
                    ServiceSpec::ClusterIp(t) => Y::M(vec![("clusterIP".into(), s(t))]),
                    ServiceSpec::Ports(p) => Y::M(vec![(
                        "ports".into(),
                        Y::L(
                            p.iter()
                                .map(|(n, v)| {
                                    Y::M(vec![("name".into(), s(n)), ("port".into(), s(v))])
                                })
                                .collect(),
                        ),
                    )]),
                    ServiceSpec::None => Y::M(Vec::new()),
                };
                m.push(("spec".into(), spec));
            }
            _ => {}
        }
        if !self.data.is_empty() {
            m.push(("data".into(), pairs(&self.data)));
        }
        if !self.string_data.is_empty() {
            m.push(("stringData".into(), pairs(&self.string_data)));
        }
        opt(&mut m, "type", &self.secret_type);
        extend(&mut m, &self.extra);
        Y::M(m)
    }
}

/// Writes YAML, taking each style decision from the fuzz input.
struct Writer<'a> {
    out: String,
    styles: &'a [u8],
    next: usize,
    anchors: usize,
}

impl Writer<'_> {
    fn pick(&mut self) -> u8 {
        if self.styles.is_empty() {
            return 0;
        }
        let b = self.styles[self.next % self.styles.len()];
        self.next += 1;
        b
    }

    /// `&aN ` (an anchor) or `*aN` (an alias to an earlier anchor, replacing the value), by
    /// the next style byte.
    fn anchor_or_alias(&mut self) -> (String, bool) {
        match self.pick() {
            b @ 0xF0..=0xF7 if self.anchors > 0 => {
                (format!("*a{}", b as usize % self.anchors), true)
            }
            0xF8..=0xFF => {
                self.anchors += 1;
                (format!("&a{} ", self.anchors - 1), false)
            }
            _ => (String::new(), false),
        }
    }

    fn scalar(&mut self, v: &str, flow: bool) -> String {
        let plain_ok = !v.is_empty()
            && v.chars()
                .all(|c| c.is_alphanumeric() || "-_./@~+".contains(c))
            && !v.starts_with(['-', '@', '.'])
            || v == "~";
        match self.pick() % 4 {
            0 | 1 if plain_ok => v.to_string(),
            2 if !v.chars().any(|c| {
                c.is_control()
                    || c == '\u{feff}'
                    || c == '\u{2028}'
                    || c == '\u{2029}'
                    || c == '\u{85}'
            }) =>
            {
                format!("'{}'", v.replace('\'', "''"))
            }
            3 if !flow && plain_ok => v.to_string(),
            _ => {
                let mut out = String::from("\"");
                for c in v.chars() {
                    match c {
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        ' ' | '!'..='~' => out.push(c),
                        c if c.is_alphanumeric() && self.pick() % 2 == 0 => out.push(c),
                        c => out.push_str(&format!("\\U{:08x}", c as u32)),
                    }
                }
                out.push('"');
                out
            }
        }
    }

    fn key(&mut self, k: &str) -> String {
        self.scalar(k, true)
    }

    fn flow(&mut self, y: &Y) -> String {
        let (mark, alias) = self.anchor_or_alias();
        if alias {
            return mark;
        }
        let body = match y {
            Y::S(v) => self.scalar(v, true),
            Y::M(m) => {
                let items: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{}: {}", self.key(k), self.flow(v)))
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
            Y::L(l) => {
                let items: Vec<String> = l.iter().map(|v| self.flow(v)).collect();
                format!("[{}]", items.join(", "))
            }
        };
        format!("{mark}{body}")
    }

    /// A value after `key:` or `-`: on the same line (scalar, flow, alias) or below.
    fn value(&mut self, y: &Y, indent: usize) {
        let (mark, alias) = self.anchor_or_alias();
        if alias {
            self.out.push(' ');
            self.out.push_str(&mark);
            self.out.push('\n');
            return;
        }
        let empty = matches!(y, Y::M(m) if m.is_empty()) || matches!(y, Y::L(l) if l.is_empty());
        match y {
            Y::S(v) => {
                let v = self.scalar(v, false);
                self.out.push_str(&format!(" {mark}{v}\n"));
            }
            _ if empty || self.pick() % 5 == 0 => {
                let v = self.flow(y);
                self.out.push_str(&format!(" {mark}{v}\n"));
            }
            _ => {
                if !mark.is_empty() {
                    self.out.push(' ');
                    self.out.push_str(mark.trim_end());
                }
                self.out.push('\n');
                self.block(y, indent + 2);
            }
        }
    }

    fn block(&mut self, y: &Y, indent: usize) {
        let pad = " ".repeat(indent);
        match y {
            Y::M(m) => {
                for (k, v) in m {
                    let k = self.key(k);
                    self.out.push_str(&format!("{pad}{k}:"));
                    self.value(v, indent);
                }
            }
            Y::L(l) => {
                for v in l {
                    self.out.push_str(&format!("{pad}-"));
                    self.value(v, indent);
                }
            }
            Y::S(v) => {
                let v = self.scalar(v, false);
                self.out.push_str(&format!("{pad}{v}\n"));
            }
        }
    }
}

impl Stream {
    fn to_yaml(&self) -> String {
        let mut w = Writer {
            out: String::new(),
            styles: &self.styles,
            next: 0,
            anchors: 0,
        };
        for (i, doc) in self.docs.iter().enumerate() {
            if i > 0 || self.leading_marker {
                w.out.push_str("---\n");
            }
            w.anchors = 0; // anchors do not cross documents
            let y = doc.y();
            if w.pick() % 7 == 0 {
                let f = w.flow(&y);
                w.out.push_str(&f);
                w.out.push('\n');
            } else {
                w.block(&y, 0);
            }
        }
        if let Some(t) = &self.trailing {
            w.out.push_str("# ");
            w.out.push_str(&t.text().replace(['\n', '\r'], " "));
            w.out.push('\n');
        }
        w.out
    }
}
