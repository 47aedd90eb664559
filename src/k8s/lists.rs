//! Entries of associative lists that server-side apply cannot tell apart. The API server
//! stores a built-in object with two `env` entries named `FOO`, or two ports `93/TCP`, when it
//! is created or applied client-side (at most with a warning), but server-side apply keys
//! such lists (`schemas/k8s/lists.txt`, from the upstream OpenAPI) and refuses the object:
//! `duplicate entries for key [containerPort=93,protocol="TCP"]`. Keys are compared as
//! structured-merge-diff compares them: after the server's defaults for absent key fields,
//! with absent fields (no default) left out of the key; an entry with no key field at all,
//! and a set's non-scalar item, are left to the schema check. Lists whose duplicates the
//! create validation refuses as well (container and volume names, mount paths, Service
//! ports) are the API rules' findings, not these.

use super::{Def, List, Problem, Ty, Version, list, reaches_list};
use crate::kube::KubeVersion;
use crate::yaml::{At, Node, Step, Value, owned};
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// Every entry of an associative list of `object` whose key an earlier entry has, in
/// `version` (nothing if `version` does not serve the object's kind).
pub fn duplicate_entries(object: &Node, version: KubeVersion) -> Vec<Problem> {
    let text = |key: &str| match object.get(key).map(|n| &n.value) {
        Some(Value::Str(s)) => Some(s.as_str()),
        _ => None,
    };
    let (Some(this), Some(api_version), Some(kind)) =
        (Version::of(version), text("apiVersion"), text("kind"))
    else {
        return Vec::new();
    };
    let Some(def) = this.kind(api_version, kind) else {
        return Vec::new();
    };
    if !reaches_list(def.name, this) {
        return Vec::new();
    }
    let mut walk = Walk {
        version: this,
        path: Vec::new(),
        out: Vec::new(),
    };
    walk.object(object, def);
    walk.out
}

struct Walk<'a> {
    version: &'static Version,
    path: Vec<At<'a>>,
    out: Vec<Problem>,
}

impl<'a> Walk<'a> {
    fn object(&mut self, node: &'a Node, def: &'static Def) {
        let Value::Map(entries) = &node.value else {
            return;
        };
        for (k, v) in entries {
            let Value::Str(name) = &k.value else {
                continue;
            };
            let Some(field) = def.field(name) else {
                continue;
            };
            self.path.push(At::Key(name.into()));
            if let Ty::List(_) = field.ty
                && let Some(list) = list(def.name, name, self.version)
                && !list.validated
            {
                self.entries(name, v, list);
            }
            self.value(v, field.ty);
            self.path.pop();
        }
    }

    fn value(&mut self, node: &'a Node, ty: Ty) {
        match (ty, &node.value) {
            (Ty::Ref(name), Value::Map(_)) if reaches_list(name, self.version) => {
                if let Some(def) = self.version.def(name) {
                    self.object(node, def);
                }
            }
            (Ty::List(items), Value::Seq(list)) if holds_lists(*items) => {
                for (i, item) in list.iter().enumerate() {
                    self.path.push(At::Index(i));
                    self.value(item, *items);
                    self.path.pop();
                }
            }
            (Ty::Map(values), Value::Map(entries)) if holds_lists(*values) => {
                for (k, v) in entries {
                    if let Value::Str(key) = &k.value {
                        self.path.push(At::Key(key.into()));
                        self.value(v, *values);
                        self.path.pop();
                    }
                }
            }
            _ => {}
        }
    }

    /// The entries of the list `field` (at the top of the path) against their keys.
    fn entries(&mut self, field: &str, node: &'a Node, list: &'static List) {
        let Value::Seq(items) = &node.value else {
            return;
        };
        if items.len() < 2 {
            return;
        }
        let mut seen: HashMap<String, usize> = HashMap::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let Some(key) = entry_key(item, list) else {
                continue;
            };
            match seen.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(i);
                }
                Entry::Occupied(first) => {
                    self.report(field, i, *first.get(), item, first.key(), list.refused);
                }
            }
        }
    }

    fn report(
        &mut self,
        field: &str,
        at: usize,
        first: usize,
        item: &Node,
        key: &str,
        refused: bool,
    ) {
        let mut path = owned(&self.path);
        path.push(Step::Index(at));
        self.out.push(Problem {
            path,
            span: item.span.clone(),
            message: if refused {
                format!(
                    "`{field}[{at}]` has the key of `{field}[{first}]`: the API server refuses the object (Duplicate value), and server-side apply too (duplicate entries for key {key})"
                )
            } else {
                format!(
                    "`{field}[{at}]` has the key of `{field}[{first}]`: server-side apply refuses the object (duplicate entries for key {key})"
                )
            },
            help: Some(if refused {
                "give each entry its own key, or remove one".into()
            } else {
                "`kubectl create` and a client-side `kubectl apply` store both entries, but \
                 `kubectl apply --server-side`, and tools that apply server-side (Helm 4, Flux, \
                 Argo CD's server-side sync), fail: give each entry its own key, or remove one"
                    .into()
            }),
        });
    }
}

/// Whether values of `ty` can hold an associative list (scalars cannot).
fn holds_lists(ty: Ty) -> bool {
    matches!(ty, Ty::Ref(_) | Ty::List(_) | Ty::Map(_))
}

/// The entry's key as structured-merge-diff prints it: `[containerPort=93,protocol="TCP"]`
/// (key fields sorted by name) or, in a set, `[="value"]`; `None` when it has none.
fn entry_key(item: &Node, list: &List) -> Option<String> {
    if list.keys.is_empty() {
        return Some(format!("[={}]", scalar(item)?));
    }
    let Value::Map(_) = item.value else {
        return None;
    };
    let mut fields: Vec<(&str, String)> = Vec::with_capacity(list.keys.len());
    for &(name, default) in list.keys {
        match item.get(name) {
            Some(value) => fields.push((name, scalar(value)?)),
            None => {
                if let Some(default) = default {
                    fields.push((name, format!("{default:?}")));
                }
            }
        }
    }
    if fields.is_empty() {
        return None;
    }
    fields.sort_unstable_by_key(|(name, _)| *name);
    let fields: Vec<String> = fields
        .into_iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    Some(format!("[{}]", fields.join(",")))
}

/// A scalar as Go's `%v`/`%q` prints it; `None` for a collection.
fn scalar(node: &Node) -> Option<String> {
    Some(match &node.value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Str(s) => format!("{s:?}"),
        Value::Seq(_) | Value::Map(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;
    use crate::yaml;

    fn duplicates(text: &str, minor: u32) -> Vec<(String, String)> {
        let source = Source::new("t", text);
        let doc = yaml::parse(&source, yaml::Limits::default())
            .unwrap()
            .documents
            .remove(0);
        duplicate_entries(&doc, KubeVersion { major: 1, minor })
            .into_iter()
            .map(|p| (yaml::display_path(&p.path), p.message))
            .collect()
    }

    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, finalizers: [a/b, a/b]}\nspec:\n  containers:\n  - name: c\n    image: busybox\n    env: [{name: FOO, value: x}, {name: BAR}, {name: FOO}]\n    ports: [{containerPort: 93, name: p}, {containerPort: 93, protocol: TCP, name: q}, {containerPort: 93, protocol: UDP}]\n";

    #[test]
    fn keys_after_defaults_as_server_side_apply_prints_them() {
        let found = duplicates(POD, 37);
        let messages: Vec<&str> = found.iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(
            found.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
            [
                "metadata.finalizers[1]",
                "spec.containers[0].env[2]",
                "spec.containers[0].ports[1]"
            ]
        );
        assert!(messages[0].ends_with("(duplicate entries for key [=\"a/b\"])"));
        assert!(messages[1].starts_with("`env[2]` has the key of `env[0]`"));
        assert!(messages[1].ends_with("(duplicate entries for key [name=\"FOO\"])"));
        assert!(
            messages[2]
                .ends_with("(duplicate entries for key [containerPort=93,protocol=\"TCP\"])")
        );
    }

    #[test]
    fn distinct_keys_atomic_lists_and_other_kinds_pass() {
        let clean = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: a, image: x, args: [x, x], ports: [{containerPort: 1}, {containerPort: 1, protocol: UDP}]}\n  - {name: b, image: x}\n  tolerations: [{key: k}, {key: k}]\n";
        assert!(duplicates(clean, 28).is_empty());
        // A custom resource is its CRD's business; a kind the version lacks, the schema's.
        assert!(
            duplicates(
                "apiVersion: example.com/v1\nkind: W\nspec: {x: [1, 1]}\n",
                37
            )
            .is_empty()
        );
        // Entries without any key field are left to the schema check.
        assert!(
            duplicates(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{image: x}, {image: y}]\n",
                37
            )
            .is_empty()
        );
    }

    #[test]
    fn templates_of_controllers_are_walked() {
        let job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: x, env: [{name: A}, {name: A}]}, {name: c, image: y}]\n";
        let found = duplicates(job, 30);
        // Two containers named `c` are the container-names rule's error, not this.
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, "spec.template.spec.containers[0].env[1]");
    }
}
