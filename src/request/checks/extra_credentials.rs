use super::{Checker, ENV_NAME, path, with};
use crate::request::ActionRequest;

request_check! {
    /// What it checks: each name of `credentials.extra` is one the driver script can pass
    /// from the submitter's environment: upper case letters, digits and `_`, not starting with
    /// a digit, not the S3 keys, `NGC_KEY` or a `TAO_K8S_` setting, and listed once.
    ///
    /// Why it matters: the driver reads each listed name from the submitter's environment into
    /// the credentials Secret; a name it cannot read, or one it already passes for its own use,
    /// would leave the model without its key or hand it the wrong one.
    ///
    /// Example: `credentials: {extra: [hf-token, HF_TOKEN, HF_TOKEN]}`.
    ///
    /// Fix: list the model's own keys once each, in upper case, e.g. `HF_TOKEN`.
    pub(super) const CHECK = {
        name: "extra-credentials",
        codes: [ENV_NAME],
        run: check,
    }
}

fn check(c: &mut Checker, req: &ActionRequest) {
    let extra = &req.spec.credentials.extra;
    // The submitter passes each of them from their environment (upper-case names, never the
    // S3 keys, NGC_KEY or a tao-k8s setting: see `request::credentials`).
    for (i, name) in extra.iter().enumerate() {
        let at = with(path("spec.credentials.extra"), i);
        if let Some(problem) = crate::request::credentials::extra_problem(name) {
            c.error(
                ENV_NAME,
                &at,
                format!("`{name}` cannot be passed from the submitter's environment: {problem}"),
                "not a name the driver passes",
                Some(
                    "list the model's own keys, in upper case: letters, digits and `_`, not starting with a digit, e.g. `HF_TOKEN`"
                        .into(),
                ),
            );
        } else if extra[..i].contains(name) {
            c.error(
                ENV_NAME,
                &at,
                format!("`{name}` is listed twice in `credentials.extra`"),
                "listed before",
                Some("list each credential once".into()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports};
    use serde_json::json;

    fn extra(names: serde_json::Value) -> Vec<(&'static str, &'static str)> {
        reports(&super::CHECK, |r| {
            r["spec"]["credentials"] = json!({ "extra": names })
        })
    }

    #[test]
    fn upper_case_names_listed_once_are_quiet() {
        assert_eq!(extra(json!(["HF_TOKEN", "WANDB_API_KEY"])), NONE);
    }

    #[test]
    fn names_the_driver_cannot_pass_and_repeats_are_refused_at_the_item() {
        let found = extra(json!(["hf-token", "HF_TOKEN", "NGC_KEY", "HF_TOKEN"]));
        assert_eq!(
            found,
            [
                ("TK015", "spec.credentials.extra[0]"),
                ("TK015", "spec.credentials.extra[2]"),
                ("TK015", "spec.credentials.extra[3]"),
            ]
        );
    }
}
