use crate::k8s::{self, Kind};
use crate::lint::{Document, Finding, Findings, Rule};
use crate::yaml::Step;

crate::rule! {
    /// What it checks: objects of every built-in kind against the API of the Kubernetes
    /// version given by `--kube-version` (default: the newest supported): unknown
    /// fields, wrong types, missing required fields, values the API server cannot decode
    /// (quantities, base64, date-times, 32-bit integers, fixed sets like `restartPolicy`),
    /// fields only a newer version has, API versions that version no longer serves, and
    /// kinds or versions a built-in group does not define (`kind: configmap` in `v1`); the
    /// `openAPIV3Schema` of a CustomResourceDefinition as the API server checks it (a
    /// structural schema: known types, `items` of arrays, no `$ref`, list-map keys that are
    /// required or defaulted, defaults that match their schema, `pattern`s of RE2); custom
    /// resources against their CRD (`--crd`; JobSet's is built in).
    ///
    /// Why it matters: an unknown field is dropped silently by `kubectl apply` without
    /// `--validate=strict` (a typo like `restartPolicyy` simply does nothing), a wrong type
    /// fails only at apply time, and a removed API version (`batch/v1beta1` CronJob) is
    /// refused by the cluster outright.
    ///
    /// Example: `spec.template.spec.containers[0].resource` (for `resources`); `apiVersion:
    /// extensions/v1beta1` for an Ingress.
    ///
    /// Fix: correct the field, or move to the replacement API version the message names;
    /// values are never quoted.
    pub struct StrictSchema {
        code: "TK201",
        name: "strict-schema",
        group: Schema,
        severity: Error,
    }
}

impl Rule for StrictSchema {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let version = doc.kube_version;
        let Some(problems) = k8s::check(doc.root, version) else {
            self.not_served(doc, out);
            return;
        };
        for p in problems {
            out.push(Finding {
                message: format!("{} is not a valid {}: {}", doc.label(), doc.kind, p.message),
                help: p.help,
                path: p.path,
                span: p.span,
            });
        }
        // A CRD's schema is checked as the API server checks it (structural rules).
        if (doc.api_version, doc.kind) == ("apiextensions.k8s.io/v1", "CustomResourceDefinition") {
            for (path, flaw) in crate::crd::flaws(doc.root) {
                out.push(Finding {
                    message: format!(
                        "{} is not a valid {}: {}",
                        doc.label(),
                        doc.kind,
                        flaw.message
                    ),
                    help: None,
                    path,
                    span: flaw.span,
                });
            }
        }
    }
}

impl StrictSchema {
    /// A built-in API the version does not serve: removed (with its replacement) or newer.
    fn not_served(&self, doc: &Document, out: &mut Findings) {
        let version = doc.kube_version;
        let (message, help) = match k8s::kind(doc.api_version, doc.kind, version) {
            Kind::Removed { since, replacement } => (
                format!(
                    "{} {} was removed in Kubernetes {since} (checking against {version})",
                    doc.api_version, doc.kind
                ),
                Some(match replacement {
                    Some(r) => format!("use `apiVersion: {r}` (check the fields that changed)"),
                    None => format!("{version} has no replacement for this API"),
                }),
            ),
            Kind::Newer { since } => (
                format!(
                    "{} {} needs Kubernetes {since} or newer (checking against {version})",
                    doc.api_version, doc.kind
                ),
                Some(format!(
                    "check against the cluster's version with --kube-version {since}, or use an API version {version} serves"
                )),
            ),
            // Unknown in a group Kubernetes defines: no custom resource lives there.
            Kind::Unknown => {
                match k8s::unknown_in_builtin_group(doc.api_version, doc.kind, version) {
                    Some((message, help)) => (message, Some(help)),
                    // Not built in: the lint's unknown-kind note says so.
                    None => return,
                }
            }
            Kind::Served => return,
        };
        let span = doc
            .root
            .get("apiVersion")
            .map_or(doc.root.span.clone(), |n| n.span.clone());
        out.push(Finding {
            message,
            help,
            path: vec![Step::Key("apiVersion".into())],
            span,
        });
    }
}
