//! The strict checker (`tao_k8s::k8s`) against an independent oracle: the 1.28 JSON schemas of
//! seven kinds (`schemas/k8s/v1.28/*.json`, generated from k8s-openapi by schemars) run by the
//! `jsonschema` crate. On the fixtures, rendered requests, a generated lint corpus and
//! property-generated objects, both must give the same verdict and the same error paths.
//!
//! Where the checker is deliberately stricter than the JSON schemas, as the API server is,
//! its problems are left out of the comparison: fixed sets of strings (the schemas carry no
//! enums), 32-bit ranges (JSON Schema ignores `format: int32`), integral floats for integers
//! (JSON Schema counts `1.0` as an integer; Go's decoder refuses it) and quantity exponents
//! with a fraction (the schemas' pattern allows `1e2.5`).

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tao_k8s::kube::KubeVersion;
use tao_k8s::source::Source;
use tao_k8s::yaml::{self, Node, Step, Value};

const V1_28: KubeVersion = KubeVersion {
    major: 1,
    minor: 28,
};
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The error paths the oracle reports (an unknown field at the field itself), or `None` for
/// a kind it has no schema of.
fn oracle(object: &Node) -> Option<BTreeSet<String>> {
    let errors = tao_k8s::schema::validate(object)?;
    let mut paths = BTreeSet::new();
    for e in errors {
        let path: Vec<Step> = e
            .instance_path()
            .iter()
            .map(|s| match s {
                LocationSegment::Property(p) => Step::Key(p.to_string().into()),
                LocationSegment::Index(i) => Step::Index(i),
            })
            .collect();
        if let ValidationErrorKind::AdditionalProperties { unexpected } = e.kind() {
            for name in unexpected {
                let mut field = path.clone();
                field.push(Step::Key(name.clone().into()));
                paths.insert(yaml::display_path(&field));
            }
        } else {
            paths.insert(yaml::display_path(&path));
        }
    }
    Some(paths)
}

/// Whether the checker's problem is one the oracle cannot see (see the module comment).
fn beyond_the_oracle(object: &Node, problem: &tao_k8s::k8s::Problem) -> bool {
    let node = object.lookup(&problem.path).map(|(_, n)| n);
    problem.message.starts_with("expected one of")
        || problem.message.starts_with("expected a 32-bit integer")
        || (problem.message.starts_with("expected an integer")
            && node.is_some_and(|n| matches!(n.value, Value::Float(f) if f.fract() == 0.0)))
        || (problem.message.starts_with("not a quantity")
            && node.is_some_and(|n| matches!(&n.value, Value::Str(s) if fractional_exponent(s))))
}

/// A quantity like `1e2.5`: the schemas' pattern (controller-gen's) allows a fraction in the
/// exponent, the API server's parser does not.
fn fractional_exponent(s: &str) -> bool {
    s.split_once(['e', 'E']).is_some_and(|(m, e)| {
        !m.is_empty() && e.contains('.') && m.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    })
}

/// The checker's error paths, where comparable.
fn checker(object: &Node) -> BTreeSet<String> {
    tao_k8s::k8s::check(object, V1_28)
        .expect("the oracle's seven kinds are built in")
        .iter()
        .filter(|p| !beyond_the_oracle(object, p))
        .map(|p| yaml::display_path(&p.path))
        .collect()
}

/// Compares every object of the seven kinds in `text`; returns how many were compared.
fn agree(name: &str, text: &str) -> usize {
    let source = Source::new(name, text);
    let Ok(stream) = yaml::parse(&source, yaml::Limits::default()) else {
        return 0;
    };
    let mut compared = 0;
    for (i, object) in stream.documents.iter().enumerate() {
        let Some(want) = oracle(object) else { continue };
        let got = checker(object);
        assert_eq!(
            got, want,
            "{name}, document {i}: the checker (left) and the 1.28 JSON schemas (right) disagree"
        );
        compared += 1;
    }
    compared
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

#[test]
fn agrees_on_the_fixtures() {
    let mut files = Vec::new();
    for dir in [
        "fixtures/lint",
        "fixtures/lint-cli",
        "tests/redaction",
        "bench/chart",
    ] {
        yaml_files(&Path::new(ROOT).join(dir), &mut files);
    }
    let mut compared = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        compared += agree(&file.display().to_string(), &text);
    }
    // Hundreds of objects, the invalid ones of the strict-schema fixture among them.
    assert!(compared > 300, "only {compared} objects compared");
}

#[test]
fn agrees_on_rendered_requests() {
    let mut files = Vec::new();
    yaml_files(&Path::new(ROOT).join("fixtures/requests/valid"), &mut files);
    files.push(Path::new(ROOT).join("examples/dino-train.yaml"));
    let mut compared = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let source = Source::new(file.display().to_string(), text);
        let opts = tao_k8s::plan::Options::default();
        let Ok(compiled) = tao_k8s::compile(&source, &opts, tao_k8s::render::Templates::embedded())
        else {
            continue; // requests that need a spec file
        };
        compared += agree(&file.display().to_string(), &compiled.yaml);
    }
    assert!(compared >= 10, "only {compared} objects compared");
}

#[test]
fn agrees_on_the_bench_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("python3")
        .arg(Path::new(ROOT).join("bench/gen_corpus.py"))
        .arg(dir.path())
        .args(["2000", "1"])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python3 runs bench/gen_corpus.py");
    assert!(status.success());
    let text = std::fs::read_to_string(dir.path().join("stream.yaml")).unwrap();
    assert_eq!(agree("corpus", &text), 2000);
}

/// A valid Job with most kinds of field: the seed the properties mutate.
const SEED: &str = "\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: vision
  labels: {app: tao}
  annotations: {note: FAKE}
spec:
  backoffLimit: 0
  completionMode: Indexed
  completions: 2
  parallelism: 2
  ttlSecondsAfterFinished: 86400
  template:
    metadata: {labels: {app: tao}}
    spec:
      restartPolicy: Never
      subdomain: train
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]
      nodeSelector: {nvidia.com/gpu.product: EXAMPLE}
      securityContext: {runAsUser: 1000, fsGroup: 1000}
      containers:
      - name: main
        image: nvcr.io/EXAMPLE/tao:1
        command: [python]
        args: [train.py, --epochs, '10']
        env:
        - {name: WORLD_SIZE, value: '2'}
        - name: POD
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        ports: [{containerPort: 29500, name: rdzv, protocol: TCP}]
        resources:
          limits: {nvidia.com/gpu: '8', memory: 64Gi, cpu: 16}
          requests: {memory: 1.5e3, cpu: 500m}
        livenessProbe: {httpGet: {port: 8080, path: /}, periodSeconds: 10}
        volumeMounts: [{name: shm, mountPath: /dev/shm, readOnly: false}]
      volumes:
      - {name: shm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}
      - name: cfg
        configMap: {name: spec, items: [{key: a, path: a, mode: 420}]}
      - {name: data, persistentVolumeClaim: {claimName: data}}
";

/// A scalar or small collection to put somewhere in the seed.
fn replacement() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop_oneof![Just(0i64), Just(-1), Just(2), Just(1 << 40), any::<i64>()]
            .prop_map(Value::Int),
        prop_oneof![Just(1.5f64), Just(-0.25), Just(3.0)].prop_map(Value::Float),
        prop_oneof![
            Just("64Gi"),
            Just("500m"),
            Just("8 GB"),
            Just("1e3"),
            Just("abc"),
            Just(""),
            Just("RkFLRQ=="),
            Just("RkFLRQ="),
            Just("2024-01-31T12:00:00Z"),
            Just("Never"),
            Just("TCP"),
            Just("-1"),
            Just("Exists"),
        ]
        .prop_map(|s| Value::Str(s.to_owned())),
    ];
    scalar.prop_recursive(2, 4, 2, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..2)
                .prop_map(|v| Value::Seq(v.into_iter().map(node).collect())),
            prop::collection::vec(
                (
                    prop_oneof![Just("name"), Just("bogus"), Just("port"), Just("key")],
                    inner
                ),
                0..2
            )
            .prop_map(|entries| {
                let mut seen = BTreeSet::new();
                Value::Map(
                    entries
                        .into_iter()
                        .filter(|(k, _)| seen.insert(*k))
                        .map(|(k, v)| (node(Value::Str(k.to_owned())), node(v)))
                        .collect(),
                )
            }),
        ]
    })
}

fn node(value: Value) -> Node {
    Node { value, span: 0..0 }
}

/// One change to the tree: the `pick`-th node (in document order) gets `new` as its value,
/// loses one entry, or gains an unknown or known-looking key.
#[derive(Debug, Clone)]
enum Mutation {
    Replace(usize, Value),
    Remove(usize),
    Add(usize, &'static str, Value),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), replacement()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        any::<usize>().prop_map(Mutation::Remove),
        (
            any::<usize>(),
            prop_oneof![
                Just("bogus"),
                Just("name"),
                Just("image"),
                Just("resource"),
                Just("managedBy")
            ],
            replacement()
        )
            .prop_map(|(i, k, v)| Mutation::Add(i, k, v)),
    ]
}

fn count(node: &Node) -> usize {
    1 + match &node.value {
        Value::Seq(items) => items.iter().map(count).sum(),
        Value::Map(entries) => entries.iter().map(|(_, v)| count(v)).sum(),
        _ => 0,
    }
}

/// Applies `m` at the `at`-th node; returns whether it was applied.
fn apply(node: &mut Node, at: &mut usize, m: &Mutation) -> bool {
    if *at == 0 {
        match (m, &mut node.value) {
            (Mutation::Replace(_, v), value) => *value = v.clone(),
            (Mutation::Remove(_), Value::Map(entries)) if !entries.is_empty() => {
                entries.remove(entries.len() / 2);
            }
            (Mutation::Remove(_), Value::Seq(items)) if !items.is_empty() => {
                items.remove(0);
            }
            (Mutation::Add(_, k, v), Value::Map(entries)) => {
                entries.retain(|(key, _)| yaml::key_text(key) != *k);
                entries.push((node_str(k), super_node(v)));
            }
            _ => return false,
        }
        return true;
    }
    *at -= 1;
    match &mut node.value {
        Value::Seq(items) => items.iter_mut().any(|n| apply(n, at, m)),
        Value::Map(entries) => entries.iter_mut().any(|(_, n)| apply(n, at, m)),
        _ => false,
    }
}

fn node_str(s: &str) -> Node {
    node(Value::Str(s.to_owned()))
}

fn super_node(v: &Value) -> Node {
    node(v.clone())
}

fn seed() -> Node {
    let source = Source::new("seed", SEED);
    yaml::parse(&source, yaml::Limits::default())
        .unwrap()
        .documents
        .remove(0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Objects one to three changes away from a valid Job: same verdicts, same paths.
    #[test]
    fn agrees_on_generated_objects(mutations in prop::collection::vec(mutation(), 1..4)) {
        let mut object = seed();
        for m in &mutations {
            let (Mutation::Replace(i, _) | Mutation::Remove(i) | Mutation::Add(i, _, _)) = m;
            // Not the root: apiVersion and kind choose the schema.
            let mut at = 1 + i % (count(&object) - 1);
            apply(&mut object, &mut at, m);
        }
        if tao_k8s::schema::validate(&object).is_none() {
            return Ok(()); // apiVersion or kind changed: no schema on either side
        }
        let want = oracle(&object).unwrap();
        let got = checker(&object);
        prop_assert_eq!(got, want, "{:?}", object.to_json());
    }
}

#[test]
fn the_seed_is_valid_on_both_sides() {
    let object = seed();
    assert_eq!(oracle(&object).unwrap(), BTreeSet::new());
    assert!(tao_k8s::k8s::check(&object, V1_28).unwrap().is_empty());
}
