use crate::k8s;
use crate::lint::{Document, Finding, Findings, Rule};

crate::rule! {
    /// What it checks: the associative lists of built-in kinds, as server-side apply keys
    /// them in the Kubernetes version given by `--kube-version` (the upstream OpenAPI's
    /// `x-kubernetes-list-type: map` with its `x-kubernetes-list-map-keys`, `set`, or a
    /// patch merge key): no two entries with one key. Keys are compared after the server's
    /// defaults (`protocol: TCP` of ports), so `{containerPort: 93}` and `{containerPort: 93,
    /// protocol: TCP}` are one key. Lists whose duplicates the API server refuses on create
    /// as well (container and volume names, mount paths, Service ports) are the API rules'
    /// errors, not this; lists of custom resources are checked by their CRD's schema
    /// (`strict-schema`).
    ///
    /// Why it matters: `kubectl create` and a client-side `kubectl apply` store both entries
    /// (at most with a warning: "duplicate port definition"), and which one a container sees
    /// depends on the tool; `kubectl apply --server-side`, and tools that always apply
    /// server-side (Helm 4, Flux, Argo CD's server-side sync), refuse the whole object with
    /// `failed to create typed patch object ...: duplicate entries for key
    /// [containerPort=93,protocol="TCP"]`. The same manifest works on one pipeline and
    /// fails on the next.
    ///
    /// Example: `env: [{name: LOG_LEVEL, value: info}, ..., {name: LOG_LEVEL, value: debug}]`
    /// in one container; two ports 8080/TCP named `http` and `metrics`; a finalizer listed
    /// twice.
    ///
    /// Fix: one entry per key: remove the repeated one, or give it its own key (another
    /// port or protocol; a Service can target a port by number).
    pub struct DuplicateListEntry {
        code: "TK203",
        name: "duplicate-list-entry",
        group: Schema,
        severity: Warning,
    }
}

impl Rule for DuplicateListEntry {
    fn check(&self, doc: &Document, out: &mut Findings) {
        for p in k8s::duplicate_entries(doc.root, doc.kube_version) {
            out.push(Finding {
                message: format!("{}: {}", doc.label(), p.message),
                help: p.help,
                path: p.path,
                span: p.span,
            });
        }
    }
}
