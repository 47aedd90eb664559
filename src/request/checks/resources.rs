use super::{Checker, QUANTITY, path, with};
use crate::codes::INVALID_VALUE;
use crate::kube::quantity;
use crate::request::ActionRequest;

request_check! {
    /// What it checks: `resources.cpu`, `memory`, `shmSize` and `ephemeralStorage` are
    /// positive Kubernetes quantities; `/dev/shm` (the given `shmSize`, or the multi-node
    /// default) fits in `memory`; and warns when `rendezvous` is given for a single node,
    /// where nothing reads it.
    ///
    /// Why it matters: the API server refuses a quantity it cannot parse, and only when the
    /// driver submits the Job. A memory-backed `/dev/shm` counts against the container's
    /// memory limit: a `shmSize` above `memory` gets the pod OOM-killed as soon as NCCL or the
    /// data loaders fill it.
    ///
    /// Example: `memory: lots`, `cpu: "-2"`, or `memory: 8Gi` with `shmSize: 16Gi`.
    ///
    /// Fix: write quantities such as `16`, `500m`, `64Gi`; raise `memory` or lower `shmSize`.
    pub(super) const CHECK = {
        name: "resources",
        codes: [QUANTITY, INVALID_VALUE],
        run: check,
    }
}

fn check(c: &mut Checker, req: &ActionRequest) {
    let r = &req.spec.resources;
    let mut values = Vec::new();
    for (field, q) in [
        ("cpu", &r.cpu),
        ("memory", &r.memory),
        ("shmSize", &r.shm_size),
        ("ephemeralStorage", &r.ephemeral_storage),
    ] {
        let Some(q) = q else { continue };
        let at = with(path("spec.resources"), field);
        match quantity::parse(&q.0) {
            Some(v) if v > 0.0 => values.push((field, v)),
            Some(_) => c.error(QUANTITY, &at, format!("`{field}` must be positive, found `{}`", q.0), "not positive", None),
            None => c.error(
                QUANTITY,
                &at,
                format!("`{field}` is not a Kubernetes quantity: found `{}`", q.0),
                "expected a quantity",
                Some("write e.g. `16`, `500m`, `64Gi` (binary suffixes Ki Mi Gi Ti, decimal k M G T)".into()),
            ),
        }
    }
    let memory = values.iter().find(|(n, _)| *n == "memory").map(|(_, v)| *v);
    let shm = req.shm_size().and_then(quantity::parse);
    if let (Some(mem), Some(shm)) = (memory, shm)
        && mem < shm
    {
        let (at, what, label) = match r.shm_size {
            Some(_) => (
                path("spec.resources.shmSize"),
                "`shmSize`".to_string(),
                "larger than `memory`",
            ),
            None => (
                path("spec.resources.memory"),
                format!(
                    "the multi-node default `shmSize` ({})",
                    crate::request::DEFAULT_SHM_SIZE
                ),
                "smaller than /dev/shm",
            ),
        };
        c.error(
            QUANTITY,
            &at,
            format!("{what} is larger than `memory`: a memory-backed /dev/shm counts against the memory limit"),
            label,
            Some("raise `memory` or lower `shmSize`".into()),
        );
    }
    if req.nodes() == 1 && req.spec.rendezvous.is_some() {
        c.warn(
            INVALID_VALUE,
            &path("spec.rendezvous"),
            "`rendezvous` is ignored for a single node".into(),
            "ignored",
            None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports, severities};
    use serde_json::json;

    #[test]
    fn positive_quantities_that_fit_are_quiet() {
        let found =
            reports(
                &super::CHECK,
                |r| {
                    r["spec"]["resources"] =
                        json!({"gpusPerNode": 1, "cpu": "500m", "memory": "64Gi", "shmSize": "8Gi"})
                },
            );
        assert_eq!(found, NONE);
    }

    #[test]
    fn quantities_that_do_not_parse_or_are_not_positive_are_refused() {
        let found = reports(&super::CHECK, |r| {
            r["spec"]["resources"]["memory"] = json!("lots");
            r["spec"]["resources"]["cpu"] = json!("0");
        });
        assert_eq!(
            found,
            [
                ("TK014", "spec.resources.cpu"),
                ("TK014", "spec.resources.memory")
            ]
        );
    }

    #[test]
    fn shm_larger_than_memory_is_refused_at_the_field_that_sets_it() {
        let given = reports(&super::CHECK, |r| {
            r["spec"]["resources"]["memory"] = json!("8Gi");
            r["spec"]["resources"]["shmSize"] = json!("16Gi");
        });
        assert_eq!(given, [("TK014", "spec.resources.shmSize")]);
        let default = reports(&super::CHECK, |r| {
            r["spec"]["resources"]["nodes"] = json!(2);
            r["spec"]["resources"]["memory"] = json!("8Gi");
        });
        assert_eq!(default, [("TK014", "spec.resources.memory")]);
    }

    #[test]
    fn rendezvous_for_one_node_is_a_warning() {
        let found = severities(&super::CHECK, |r| {
            r["spec"]["rendezvous"] = json!({"port": 29500})
        });
        assert_eq!(found, [("TK006", "spec.rendezvous", "warning")]);
    }
}
