use super::{CREDENTIAL, Checker, ENV_NAME, RENDEZVOUS_ENV, path, with};
use crate::kube::names;
use crate::request::ActionRequest;

request_check! {
    /// What it checks: each name of `spec.env` is a valid environment variable name, is not
    /// one tao-k8s sets for a multi-node rendezvous (`WORLD_SIZE`, `MASTER_ADDR`, ...), and is
    /// not a credential's name (the S3 keys, `NGC_KEY`, or a name of `credentials.extra`).
    ///
    /// Why it matters: the API server refuses an invalid name; a rendezvous variable set by
    /// hand disagrees with the one the renderer derives from `resources` and the ranks wait
    /// for each other forever; a credential in `env` is written into the request, the
    /// rendered Job and the job record, where the credentials Secret keeps it out of all three.
    ///
    /// Example: `env: {"1BAD": x}`, `env: {MASTER_PORT: "29501"}` with two nodes, or
    /// `env: {HF_TOKEN: ...}`.
    ///
    /// Fix: rename or remove it; list credential names in `credentials.extra` and export them
    /// in the submitter's environment.
    pub(super) const CHECK = {
        name: "env",
        codes: [ENV_NAME, CREDENTIAL],
        run: check,
    }
}

fn check(c: &mut Checker, req: &ActionRequest) {
    let extra = &req.spec.credentials.extra;
    for name in req.spec.env.keys() {
        let at = with(path("spec.env"), name);
        if !names::is_env_name(name) {
            c.key_error(
                ENV_NAME,
                &at,
                format!("`{name}` is not a valid environment variable name"),
                "invalid name",
                Some("use letters, digits, `_`, `-` and `.`, not starting with a digit".into()),
            );
        } else if req.nodes() > 1 && RENDEZVOUS_ENV.contains(&name.as_str()) {
            c.key_error(
                ENV_NAME,
                &at,
                format!("`{name}` is set by tao-k8s for multi-node rendezvous and cannot be set in `env`"),
                "set by the renderer",
                Some(format!(
                    "remove it: {} are derived from `resources` and `rendezvous`",
                    RENDEZVOUS_ENV.join(", ")
                )),
            );
        } else if crate::request::credentials::CREDENTIAL_ENV.contains(&name.as_str())
            || extra.contains(name)
        {
            c.key_error(
                CREDENTIAL,
                &at,
                format!("`{name}` is a credential and cannot be set in `env`"),
                "credential name",
                Some("credentials come from the submitter's environment through the credentials Secret; list model keys in `credentials.extra`".into()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports};
    use serde_json::json;

    #[test]
    fn ordinary_names_are_quiet() {
        let found =
            reports(
                &super::CHECK,
                |r| {
                    r["spec"]["env"] =
                        json!({"TAO_LOG_LEVEL": "debug", "nccl.debug": "INFO", "MASTER_PORT": "1"})
                },
            );
        assert_eq!(found, NONE);
    }

    #[test]
    fn invalid_rendezvous_and_credential_names_are_refused_at_the_name() {
        let found = reports(&super::CHECK, |r| {
            r["spec"]["resources"]["nodes"] = json!(2);
            r["spec"]["credentials"] = json!({"extra": ["MODEL_KEY"]});
            r["spec"]["env"] =
                json!({"1BAD": "x", "MASTER_PORT": "1", "NGC_KEY": "x", "MODEL_KEY": "x"});
        });
        assert_eq!(
            found,
            [
                ("TK015", "spec.env.1BAD"),
                ("TK015", "spec.env.MASTER_PORT"),
                ("TK016", "spec.env.MODEL_KEY"),
                ("TK016", "spec.env.NGC_KEY"),
            ]
        );
    }
}
