use crate::lint::{Document, Findings, Rule};

crate::rule! {
    /// What it checks: objects against the ValidatingAdmissionPolicies that bind to them, as
    /// admission evaluates them on create: the policies and bindings of the linted file and
    /// of `lint --policy FILE`, matched by resource, operation and object and namespace
    /// selectors, then `matchConditions`, `variables`, `params` and `validations` (CEL), with
    /// the binding's `validationActions` (`Deny` refuses, `Warn` is said, `Audit` is not). A
    /// policy whose expressions do not compile is reported on itself. A validation that reads
    /// `authorizer` needs the cluster: a note says so, once. Off when no binding is in sight.
    ///
    /// Why it matters: a cluster's policies refuse what its owners forbid (a replica count,
    /// an image registry, a missing label) only when the object reaches the API server; here
    /// the same verdict is had before a commit.
    ///
    /// Example: a Deployment with `replicas: 10` where a bound policy says
    /// `object.spec.replicas <= 5`.
    ///
    /// Fix: change the object as the policy's message says, or the policy.
    pub struct AdmissionPolicy {
        code: "TK416",
        name: "admission-policy",
        group: Api,
        severity: Error,
    }
}

impl Rule for AdmissionPolicy {
    /// The policy objects themselves; the objects they bind to are checked by the engine,
    /// which holds the policies of the run.
    fn check(&self, doc: &Document, out: &mut Findings) {
        for finding in crate::lint::policy::flaws(doc) {
            out.push(finding);
        }
    }
}
