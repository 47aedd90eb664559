use crate::lint::api::{Report, index, items, key, text};
use crate::lint::pods::container_name;
use crate::lint::{Document, Findings, Rule};
use crate::yaml::{Node, Step};

crate::rule! {
    /// What it checks: NUL bytes (`\0`, written `"\0"` or `"\x00"` in double-quoted YAML) in
    /// what a container runs with: its `command`, `args`, `workingDir` and the `value` of its
    /// `env` entries (init, main and ephemeral containers). Other control characters (a
    /// newline in a script, a tab) are fine there and not reported.
    ///
    /// Why it matters: the API server stores the string, but a process receives its
    /// arguments and environment as NUL-terminated C strings, so no runtime can start it: the
    /// container fails at start (`StartError` / `CreateContainerError`) on every attempt, and
    /// the Job burns its `backoffLimit` without running anything. A NUL usually comes from a
    /// value read from a binary file or a bad escape in a generator.
    ///
    /// Example: `args: ["--name", "run\0"]`.
    ///
    /// Fix: remove the NUL byte; pass binary data through a file (a ConfigMap `binaryData`
    /// or a volume), not through argv or the environment.
    pub struct NulByte {
        code: "TK412",
        name: "nul-byte",
        group: Api,
        severity: Error,
    }
}

impl Rule for NulByte {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let mut report = Report::new(doc, out);
        for (path, container) in doc.containers() {
            let name = container_name(container);
            // The path and the words for the message are built only for a finding.
            let mut check = |node: &Node, place: &dyn Fn() -> (Vec<Step>, String)| {
                if let Some(s) = text(node)
                    && let Some(at) = s.find('\0')
                {
                    let (p, what) = place();
                    report.at(
                        p,
                        node,
                        format!("the {what} of container `{name}` has a NUL byte (at byte {at}): no process can be started with it, the container fails at start"),
                        "remove the NUL byte; pass binary data through a file, not argv or the environment",
                    );
                }
            };
            for list in ["command", "args"] {
                if let Some(words) = container.get(list) {
                    for (i, w) in items(words).iter().enumerate() {
                        check(w, &|| {
                            (index(&key(&path.get(), list), i), format!("`{list}[{i}]`"))
                        });
                    }
                }
            }
            if let Some(dir) = container.get("workingDir") {
                check(dir, &|| {
                    (key(&path.get(), "workingDir"), "`workingDir`".into())
                });
            }
            if let Some(env) = container.get("env") {
                for (i, var) in items(env).iter().enumerate() {
                    if let Some(value) = var.get("value") {
                        check(value, &|| {
                            let var_name = var.get("name").and_then(text).unwrap_or("?");
                            let p = key(&index(&key(&path.get(), "env"), i), "value");
                            (p, format!("value of env `{var_name}`"))
                        });
                    }
                }
            }
        }
    }
}
