use super::{CREDENTIAL, Checker, path};
use crate::request::ActionRequest;
use crate::secrets;
use crate::yaml::{At, Node, Step, Visitor, owned, same_path, visit};

request_check! {
    /// What it checks: every string of the request, keys included, for a credential, with the
    /// recognisers the lint's `inline-credential` rule uses: provider tokens by their format,
    /// passwords in URLs, `Authorization` headers, private keys, values under credential names
    /// (`env: {HF_TOKEN: ...}`), and option values across the items of an argv
    /// (`command.args` and `command.config.argv`: `[--token, X]`, `[mysql, -pX]`), reported
    /// on the value's item.
    ///
    /// Why it matters: a request is committed, reviewed, copied into the rendered bundle and
    /// kept in the job record; a credential written into it is a leaked credential. The driver
    /// script reads credentials from the submitter's environment into a Secret instead.
    ///
    /// Example: `command: {args: [huggingface-cli, login, --token, hf_...]}`, or
    /// `env: {WANDB_API_KEY: 0123abcd...}`.
    ///
    /// Fix: remove the value, name the variable in `credentials.extra`, and export it in the
    /// environment `tao-k8s submit` runs in.
    pub(super) const CHECK = {
        name: "credential-in-request",
        codes: [CREDENTIAL],
        run: check,
    }
}

/// No string anywhere in the request may look like a credential.
fn check(c: &mut Checker, _req: &ActionRequest) {
    let tree = c.tree;
    let argv = [path("spec.command.args"), path("spec.command.config.argv")];
    visit(tree, &mut Credentials { c, argv });
}

struct Credentials<'c, 't> {
    c: &'c mut Checker<'t>,
    /// The argv lists, judged item by item with their neighbours.
    argv: [Vec<Step>; 2],
}

impl Credentials<'_, '_> {
    fn refuse(&mut self, at: &[Step], f: &secrets::Finding, s: &str) {
        let shown = secrets::mask(&s[f.range.clone()]);
        self.c.error(
            CREDENTIAL,
            at,
            format!("{} is written into the request (`{shown}`)", f.what),
            "credential-shaped value",
            Some("never put credentials in a request: the driver script reads them from the submitter's environment into a Secret; name them in `credentials.extra`".into()),
        );
    }
}

impl<'a> Visitor<'a> for Credentials<'_, '_> {
    fn string(&mut self, at: &[At<'a>], _node: &'a Node, s: &'a str) {
        let name = at.last().and_then(At::key).unwrap_or_default();
        if let Some(f) = secrets::scan_assignment(name, s).first() {
            self.refuse(&owned(at), f, s);
        }
    }

    /// An argv (`command.args`, `command.config.argv`): option values across items
    /// (`[--token, X]`, `[mysql, -pX]`), reported on the value's item, which is then not
    /// judged again alone.
    fn seq(&mut self, at: &[At<'a>], items: &'a [Node]) -> Vec<usize> {
        if !self.argv.iter().any(|a| same_path(at, a)) {
            return Vec::new();
        }
        let words = crate::yaml::words(items);
        let mut flagged = Vec::new();
        let mut item = owned(at);
        for (i, f) in secrets::scan_argv(&words) {
            item.push(Step::Index(i));
            self.refuse(&item, &f, words[i]);
            item.pop();
            flagged.push(i);
        }
        flagged
    }

    /// No key may be a credential either: label keys and env names reach every object.
    fn key(&mut self, at: &[At<'a>], _key: &'a Node, key: &str) {
        if let Some(f) = secrets::scan_text(key).first() {
            let shown = secrets::mask(&key[f.range.clone()]);
            self.c.key_error(
                CREDENTIAL,
                &owned(at),
                format!(
                    "{} is written into the request as a key (`{shown}`)",
                    f.what
                ),
                "credential-shaped key",
                Some("never put credentials in a request, not even as a name".into()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports};
    use serde_json::json;

    /// Shaped like a Hugging Face token, recognised by its format alone.
    const TOKEN: &str = "hf_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE";

    #[test]
    fn ordinary_strings_are_quiet() {
        let found = reports(&super::CHECK, |r| {
            r["spec"]["env"] = json!({"TAO_LOG_LEVEL": "debug", "HF_HOME": "/results/hf"})
        });
        assert_eq!(found, NONE);
    }

    #[test]
    fn a_credential_value_is_refused_where_it_is() {
        let found = reports(&super::CHECK, |r| {
            r["spec"]["env"] = json!({ "HF_TOKEN": TOKEN })
        });
        assert_eq!(found, [("TK016", "spec.env.HF_TOKEN")]);
    }

    #[test]
    fn an_option_value_in_argv_is_refused_once_on_its_item() {
        let found = reports(&super::CHECK, |r| {
            r["spec"]["command"]["args"] = json!(["mysql", "--password", "s3cr3t-Pa55w0rd!"])
        });
        assert_eq!(found, [("TK016", "spec.command.args[2]")]);
        let config = reports(
            &super::CHECK,
            |r| r["spec"]["command"] = json!({"config": {"argv": ["mysql", "-ps3cr3t-Pa55w0rd!", "{config_path}"], "spec": "a.yaml"}}),
        );
        assert_eq!(config, [("TK016", "spec.command.config.argv[1]")]);
    }

    #[test]
    fn a_credential_as_a_key_is_refused_at_the_key() {
        let found = reports(&super::CHECK, |r| {
            r["metadata"]["labels"] = json!({ TOKEN: "x" })
        });
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "TK016");
        assert!(found[0].1.starts_with("metadata.labels"), "{found:?}");
    }
}
