use crate::lint::api::{DNS1123_LABEL, Report, key, shown, text};
use crate::lint::{Document, Findings, Rule};
use std::collections::HashMap;

crate::rule! {
    /// What it checks: the `name` of every container of a pod spec (init, main and
    /// ephemeral containers): present, a DNS-1123 label (at most 63 lowercase letters,
    /// digits and `-`, starting and ending with a letter or digit), and unique across all
    /// three lists.
    ///
    /// Why it matters: the API server refuses the pod, or the Job or Deployment whose
    /// template holds it. Two containers of one name usually come from a copied block (an
    /// init container and the main container both called `tao`), and `kubectl logs -c`
    /// could not tell them apart.
    ///
    /// Example: a container named `Trainer_1`, or an init container and a container both
    /// named `main`.
    ///
    /// Fix: give each container its own lowercase name (`fetch-data`, `train`).
    pub struct ContainerNames {
        code: "TK405",
        name: "container-names",
        group: Api,
        severity: Error,
    }
}

impl Rule for ContainerNames {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let mut report = Report::new(doc, out);
        let containers = doc.containers();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, (path, container)) in containers.iter().enumerate() {
            let container = *container;
            let Some(node) = container.get("name") else {
                report.at(
                    path.get(),
                    container,
                    "a container has no `name`".into(),
                    "name it, e.g. `train`",
                );
                continue;
            };
            let Some(name) = text(node) else {
                continue;
            };
            if !crate::kube::names::is_dns1123_label(name) {
                report.at(
                    key(&path.get(), "name"),
                    node,
                    format!(
                        "container name `{}` must be {DNS1123_LABEL}",
                        shown(node, 80)
                    ),
                    "",
                );
            } else if let Some(&first) = seen.get(name) {
                let first = crate::yaml::display_path(&containers[first].0.get());
                let message = format!(
                    "container name `{name}` is used twice in the pod (first at `{first}`)"
                );
                report.at(
                    key(&path.get(), "name"),
                    node,
                    message,
                    "give each container of the pod its own name",
                );
            } else {
                seen.insert(name, i);
            }
        }
    }
}
