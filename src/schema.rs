//! Strict JSON schemas of the Kubernetes kinds the project emits or lints, embedded in the
//! binary and compiled once. The schemas are generated from k8s-openapi types by
//! `cargo run -p xtask -- k8s-schemas` (see `schemas/k8s/v1.28/README.md`), with unknown
//! fields made errors, as `kubectl apply --validate=strict` would.

use jsonschema::{ValidationError, Validator};
use serde_json::Value as Json;
use std::sync::OnceLock;

/// `(apiVersion, kind, schema text)` of every kind we know.
const KINDS: &[(&str, &str, &str)] = &[
    (
        "batch/v1",
        "Job",
        include_str!("../schemas/k8s/v1.28/job.json"),
    ),
    ("v1", "Pod", include_str!("../schemas/k8s/v1.28/pod.json")),
    (
        "v1",
        "Service",
        include_str!("../schemas/k8s/v1.28/service.json"),
    ),
    (
        "v1",
        "ConfigMap",
        include_str!("../schemas/k8s/v1.28/configmap.json"),
    ),
    (
        "v1",
        "Secret",
        include_str!("../schemas/k8s/v1.28/secret.json"),
    ),
    (
        "apps/v1",
        "Deployment",
        include_str!("../schemas/k8s/v1.28/deployment.json"),
    ),
    (
        "apps/v1",
        "StatefulSet",
        include_str!("../schemas/k8s/v1.28/statefulset.json"),
    ),
];

/// One compiled validator per kind, built on first use of that kind.
static VALIDATORS: [OnceLock<Validator>; KINDS.len()] = [const { OnceLock::new() }; KINDS.len()];

/// The strict validator for an object's `apiVersion` and `kind`, if we know the kind.
pub fn validator_for(api_version: &str, kind: &str) -> Option<&'static Validator> {
    let i = KINDS
        .iter()
        .position(|&(v, k, _)| v == api_version && k == kind)?;
    Some(VALIDATORS[i].get_or_init(|| {
        let schema: Json = serde_json::from_str(KINDS[i].2).expect("embedded schemas are JSON");
        jsonschema::draft7::new(&schema).expect("embedded schemas compile")
    }))
}

/// The kinds we have schemas for, as `apiVersion/kind`.
pub fn known_kinds() -> impl Iterator<Item = (&'static str, &'static str)> {
    KINDS.iter().map(|&(v, k, _)| (v, k))
}

/// Every schema error of an object, or `None` if its kind is unknown.
pub fn validate(object: &Json) -> Option<Vec<ValidationError<'_>>> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let validator = validator_for(api_version, kind)?;
    Some(validator.iter_errors(object).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_schema_compiles_and_is_strict() {
        for (v, k) in known_kinds() {
            let object = serde_json::json!({"apiVersion": v, "kind": k, "metadata": {"name": "x"}, "bogus": 1});
            let errors = validate(&object).unwrap();
            assert!(
                errors.iter().any(|e| e.to_string().contains("bogus")),
                "{k}: {errors:?}"
            );
        }
        assert!(validate(&serde_json::json!({"apiVersion": "v1", "kind": "Nope"})).is_none());
    }
}
