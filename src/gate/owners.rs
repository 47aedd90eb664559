//! The ownership gate: an object of a name the bundle derives (its Service, ConfigMap,
//! Secrets, the NCCL probe's Job and Service) that exists already is the submitter's only when
//! its uid is listed in one of the submitter's job records. Anything else belongs to someone
//! else, and the submit is refused before anything is made, naming the object and who holds
//! it (labels, field managers, owner references). The one exception is the Secret the request
//! names itself (`credentials.secretName`): it is used as it is, read-only, when it holds
//! every key the pod needs.

use super::{Outcome, Verdict};
use crate::diag::shown;
use crate::driver::objects::RECORD_LABEL;
use crate::record::{Owned, Record};
use serde_json::Value;

/// An object of a derived name as kubectl returned it (a Secret without its values).
#[derive(Debug, Clone)]
pub struct Existing {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    object: Value,
}

impl Existing {
    /// The object, when it has a kind, a name and a uid.
    pub fn new(object: Value) -> Option<Existing> {
        let text = |p: &str| object.pointer(p).and_then(Value::as_str).map(String::from);
        Some(Existing {
            kind: text("/kind")?,
            namespace: text("/metadata/namespace").unwrap_or_default(),
            name: text("/metadata/name")?,
            uid: text("/metadata/uid")?,
            object,
        })
    }

    /// `Kind namespace/name`.
    pub fn label(&self) -> String {
        format!("{} {}/{}", self.kind, self.namespace, self.name)
    }

    /// Who holds the object, as far as it says: its labels of origin, its field managers, its
    /// owners.
    pub fn holder(&self) -> String {
        let mut said = Vec::new();
        let labels = self.object.pointer("/metadata/labels");
        for key in [
            "app.kubernetes.io/managed-by",
            "app.kubernetes.io/instance",
            "helm.sh/chart",
            RECORD_LABEL,
        ] {
            if let Some(v) = labels.and_then(|l| l.get(key)).and_then(Value::as_str) {
                said.push(format!("label {key}={}", shown(v, 80)));
            }
        }
        let mut managers: Vec<String> = self
            .object
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| m["manager"].as_str().map(|s| shown(s, 80)))
            .collect();
        managers.sort();
        managers.dedup();
        if !managers.is_empty() {
            said.push(format!("field managers {}", managers.join(", ")));
        }
        let owners: Vec<String> = self
            .object
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|o| {
                format!(
                    "{}/{}",
                    shown(o["kind"].as_str().unwrap_or("?"), 80),
                    shown(o["name"].as_str().unwrap_or("?"), 80)
                )
            })
            .collect();
        if !owners.is_empty() {
            said.push(format!("owned by {}", owners.join(", ")));
        }
        if said.is_empty() {
            "nothing says who made it".into()
        } else {
            said.join("; ")
        }
    }

    /// The keys a Secret holds.
    pub fn keys(&self) -> Vec<&str> {
        ["data", "stringData"]
            .iter()
            .filter_map(|f| self.object.get(*f)?.as_object())
            .flat_map(|m| m.keys().map(String::as_str))
            .collect()
    }
}

/// The job record (among `records`) that created the object of this uid, if one did.
pub fn creator<'a>(records: &'a [Record], existing: &Existing) -> Option<&'a Record> {
    records.iter().find(|r| {
        r.objects.iter().any(|o| {
            o.uid == existing.uid
                && o.kind == existing.kind
                && o.name == existing.name
                && o.namespace == existing.namespace
        })
    })
}

/// What the ownership gate was told.
#[derive(Debug, Clone, Default)]
pub struct Ask<'a> {
    /// The Job of the manifest: the job gate judges it.
    pub job: &'a str,
    /// The Secret the request names, which may be used read-only, and the keys the pod needs
    /// from it.
    pub named_secret: Option<&'a str>,
    pub needed_keys: &'a [String],
    /// `--replace`: the submitter's own leftovers are deleted.
    pub replace: bool,
}

/// What the gate decided beside its verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    /// The submitter's own objects that `--replace` deletes (the Job is the job gate's).
    pub deletes: Vec<Owned>,
    /// The named Secret exists and is used as it is: the driver creates no credentials Secret.
    pub named_secret_exists: bool,
}

/// The ownership gate over the objects of derived names that exist.
pub fn gate(existing: &[Existing], records: &[Record], ask: &Ask) -> (Verdict, Decision) {
    let mut decision = Decision::default();
    let mut refusals = Vec::new();
    let mut notes = Vec::new();
    for e in existing {
        if crate::kube::is_workload(&e.kind) && e.name == ask.job {
            continue;
        }
        let owned = Owned {
            kind: e.kind.clone(),
            namespace: e.namespace.clone(),
            name: e.name.clone(),
            uid: e.uid.clone(),
        };
        match creator(records, e) {
            Some(r) if ask.replace => {
                notes.push(format!(
                    "{} was made by job record {}: --replace deletes it",
                    e.label(),
                    r.id
                ));
                decision.deletes.push(owned);
            }
            Some(r) => refusals.push(format!(
                "{} exists, left by job record {} of this bundle: job.sh submit --replace deletes \
                 it, or job.sh cancel --record {}",
                e.label(),
                r.id,
                r.id
            )),
            None if e.kind == "Secret" && ask.named_secret == Some(e.name.as_str()) => {
                let keys = e.keys();
                let missing: Vec<&str> = ask
                    .needed_keys
                    .iter()
                    .map(String::as_str)
                    .filter(|k| !keys.contains(k))
                    .collect();
                if missing.is_empty() {
                    notes.push(format!(
                        "{} (credentials.secretName) exists and is not this bundle's: the pod \
                         reads its keys {} as they are; it is never written or deleted",
                        e.label(),
                        ask.needed_keys.join(", ")
                    ));
                    decision.named_secret_exists = true;
                } else {
                    refusals.push(format!(
                        "{} (credentials.secretName) exists and is not this bundle's, and has no \
                         key {}: the pod would never start; add the keys to it, or name another \
                         Secret",
                        e.label(),
                        missing.join(", ")
                    ));
                }
            }
            None => refusals.push(format!(
                "{} exists and is not this bundle's ({}, uid {}): the driver neither changes nor \
                 deletes it; render the request under another metadata.name, or ask its owner",
                e.label(),
                e.holder(),
                shown(&e.uid, 80)
            )),
        }
    }
    let verdict = if !refusals.is_empty() {
        Verdict::new("owners", Outcome::Refuse, refusals.join("; "))
    } else if !notes.is_empty() {
        Verdict::new("owners", Outcome::Pass, notes.join("; "))
    } else {
        Verdict::new(
            "owners",
            Outcome::Pass,
            "no object of the bundle's names exists".into(),
        )
    };
    (verdict, decision)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{State, StorageTier};
    use serde_json::json;

    fn existing(kind: &str, name: &str, uid: &str, extra: Value) -> Existing {
        let mut object =
            json!({"kind": kind, "metadata": {"name": name, "namespace": "ns", "uid": uid}});
        for (k, v) in extra.as_object().unwrap() {
            object[k] = v.clone();
        }
        Existing::new(object).unwrap()
    }

    fn record(id: &str, objects: &[(&str, &str, &str)]) -> Record {
        Record {
            id: id.into(),
            platform: "kubernetes".into(),
            image: "i".into(),
            network_arch: "dino".into(),
            action: "train".into(),
            storage_tier: StorageTier::A,
            results_dir: "/r".into(),
            backend_ref: None,
            backend_uid: None,
            objects: objects
                .iter()
                .map(|(kind, name, uid)| Owned {
                    kind: kind.to_string(),
                    namespace: "ns".into(),
                    name: name.to_string(),
                    uid: uid.to_string(),
                })
                .collect(),
            state: State::Failed,
            history: Vec::new(),
        }
    }

    #[test]
    fn a_foreign_object_of_a_derived_name_is_refused_naming_who_holds_it() {
        let service = existing(
            "Service",
            "dino",
            "aaaa-1",
            json!({"metadata": {"name": "dino", "namespace": "ns", "uid": "aaaa-1",
                "labels": {"app.kubernetes.io/managed-by": "Helm", RECORD_LABEL: "tao-x"},
                "managedFields": [{"manager": "helm"}, {"manager": "kubectl\u{1b}[2J"}],
                "ownerReferences": [{"kind": "Deployment", "name": "web"}]}}),
        );
        let ask = Ask {
            job: "dino",
            ..Ask::default()
        };
        let (v, d) = gate(std::slice::from_ref(&service), &[], &ask);
        assert_eq!(v.outcome, Outcome::Refuse);
        for said in [
            "Service ns/dino exists and is not this bundle's",
            "label app.kubernetes.io/managed-by=Helm",
            "label tao-k8s.io/job-record=tao-x",
            "field managers helm, kubectl\\u{1b}[2J",
            "owned by Deployment/web",
        ] {
            assert!(v.message.contains(said), "{said}: {}", v.message);
        }
        assert!(!v.message.contains('\u{1b}'));
        assert_eq!(d, Decision::default());
        // A record here with the same name but another uid does not make it ours.
        let other = record("tao-1", &[("Service", "dino", "bbbb-2")]);
        let (v, _) = gate(&[service], &[other], &ask);
        assert_eq!(v.outcome, Outcome::Refuse);
    }

    #[test]
    fn the_submitter_s_leftovers_are_refused_or_deleted_under_replace() {
        let cm = existing("ConfigMap", "dino-spec", "cccc-3", json!({}));
        let records = [record("tao-1", &[("ConfigMap", "dino-spec", "cccc-3")])];
        let mut ask = Ask {
            job: "dino",
            ..Ask::default()
        };
        let (v, _) = gate(std::slice::from_ref(&cm), &records, &ask);
        assert_eq!(v.outcome, Outcome::Refuse);
        assert!(
            v.message.contains("job.sh cancel --record tao-1"),
            "{}",
            v.message
        );
        ask.replace = true;
        let (v, d) = gate(&[cm], &records, &ask);
        assert_eq!(v.outcome, Outcome::Pass);
        assert_eq!(d.deletes.len(), 1);
        assert_eq!(d.deletes[0].uid, "cccc-3");
    }

    #[test]
    fn a_named_secret_is_used_read_only_when_it_has_the_keys() {
        let secret = existing(
            "Secret",
            "team-creds",
            "dddd-4",
            json!({"data": {"HF_TOKEN": "", "OTHER": ""}}),
        );
        let needed = ["HF_TOKEN".to_string()];
        let ask = Ask {
            job: "dino",
            named_secret: Some("team-creds"),
            needed_keys: &needed,
            replace: true,
        };
        let (v, d) = gate(std::slice::from_ref(&secret), &[], &ask);
        assert_eq!(v.outcome, Outcome::Pass, "{}", v.message);
        assert!(d.named_secret_exists && d.deletes.is_empty());
        let needed = ["WANDB_API_KEY".to_string()];
        let ask = Ask {
            needed_keys: &needed,
            ..ask
        };
        let (v, _) = gate(&[secret], &[], &ask);
        assert_eq!(v.outcome, Outcome::Refuse);
        assert!(
            v.message.contains("has no key WANDB_API_KEY"),
            "{}",
            v.message
        );
    }
}
