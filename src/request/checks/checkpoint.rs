use super::{CHECKPOINT, Checker, RENDEZVOUS_ENV, is_under, path, path_problem};
use crate::kube::names;
use crate::request::{ActionRequest, CommandMode, Tier};

request_check! {
    /// What it checks: `spec.checkpoint` can work: `dir` is a clean absolute path under
    /// `resultsDir`; `pattern` is a glob of one path segment (no `/`, no blank); `resume` has
    /// exactly one of `arg` (an override name without `=` or blanks, for `args` and `config`
    /// modes, whose argv it extends) and `env` (a variable name tao-k8s does not set itself);
    /// in tier C, the results are uploaded (`storage.s3.results`) by rank 0 alone (not
    /// `perRank`), which is where the checkpoints are synced to and fetched back from.
    ///
    /// Why it matters: a retried pod resumes from the newest checkpoint in `dir`; a directory
    /// outside the results is not kept (tier C) or not the one the action writes, a `shell`
    /// or `script` text does not read arguments appended after it, and a variable of the
    /// renderer's would be overwritten.
    ///
    /// Example: `checkpoint: {dir: /tmp/ckpt, resume: {arg: "--resume"}}` with a `shell`
    /// command.
    ///
    /// Fix: write the checkpoints under `resultsDir`; with a `shell` or `script` command, pass
    /// the path by `resume.env` and read it in the text.
    pub(super) const CHECK = {
        name: "checkpoint",
        codes: [CHECKPOINT],
        run: check,
    }
}

fn check(c: &mut Checker, req: &ActionRequest) {
    let Some(checkpoint) = &req.spec.checkpoint else {
        return;
    };
    let results_dir = req.spec.results_dir.trim_end_matches('/');
    let dir = &checkpoint.dir;
    if let Some(problem) = path_problem(dir) {
        c.error(
            CHECKPOINT,
            &path("spec.checkpoint.dir"),
            format!("checkpoint.dir `{dir}` {problem}"),
            "not a clean absolute path",
            None,
        );
    } else if !is_under(dir.trim_end_matches('/'), results_dir) {
        c.error(
            CHECKPOINT,
            &path("spec.checkpoint.dir"),
            format!("checkpoint.dir `{dir}` is not under resultsDir `{results_dir}`"),
            "outside resultsDir",
            Some(format!(
                "write the checkpoints under {results_dir}, where the action's results are kept"
            )),
        );
    }
    if let Some(pattern) = &checkpoint.pattern
        && (pattern.is_empty()
            || pattern.contains('/')
            || pattern
                .chars()
                .any(|ch| ch.is_whitespace() || ch.is_control())
            || pattern == "."
            || pattern == "..")
    {
        c.error(
            CHECKPOINT,
            &path("spec.checkpoint.pattern"),
            format!("checkpoint.pattern `{pattern}` is not a glob of file names"),
            "not one path segment",
            Some("a glob of the checkpoint files' names in dir, e.g. `*.pth`".into()),
        );
    }
    let resume = &checkpoint.resume;
    match (&resume.arg, &resume.env) {
        (Some(_), Some(_)) | (None, None) => c.error(
            CHECKPOINT,
            &path("spec.checkpoint.resume"),
            "checkpoint.resume needs exactly one of `arg` and `env`".into(),
            "one of arg, env",
            Some("`arg: train.resume_training_checkpoint_path` appends `<arg>=<path>` to the argv; `env: NAME` sets NAME to the path".into()),
        ),
        (Some(arg), None) => {
            let mode = req.spec.command.mode();
            if arg.is_empty()
                || arg.contains('=')
                || arg.chars().any(|ch| ch.is_whitespace() || ch.is_control())
            {
                c.error(
                    CHECKPOINT,
                    &path("spec.checkpoint.resume.arg"),
                    format!("checkpoint.resume.arg `{arg}` is not an override name"),
                    "not an override name",
                    Some("the name alone, e.g. `train.resume_training_checkpoint_path`: `=<path>` is added".into()),
                );
            } else if let Some(mode @ (CommandMode::Shell(_) | CommandMode::Script(_))) = mode {
                c.error(
                    CHECKPOINT,
                    &path("spec.checkpoint.resume.arg"),
                    format!(
                        "checkpoint.resume.arg extends the action's argv, but a `{}` command is a text the shell runs, which does not read it",
                        mode.name()
                    ),
                    "no argv to extend",
                    Some("use `resume.env` and read the variable in the text".into()),
                );
            }
        }
        (None, Some(env)) => {
            let reserved = env.starts_with("TAO_K8S_")
                || RENDEZVOUS_ENV.contains(&env.as_str())
                || req.spec.env.contains_key(env)
                || crate::request::credentials::CREDENTIAL_ENV.contains(&env.as_str())
                || req.spec.credentials.extra.contains(env);
            if !names::is_env_name(env) || reserved {
                let why = if reserved {
                    "is set by tao-k8s, by `env` or by a credential"
                } else {
                    "is not a valid environment variable name"
                };
                c.error(
                    CHECKPOINT,
                    &path("spec.checkpoint.resume.env"),
                    format!("checkpoint.resume.env `{env}` {why}"),
                    "not a free variable name",
                    Some("a name of the action's own, e.g. `TAO_RESUME_CHECKPOINT`".into()),
                );
            }
        }
    }
    if req.tier() == Tier::C {
        let results = req
            .spec
            .storage
            .s3
            .as_ref()
            .and_then(|s| s.results.as_ref());
        match results {
            None => c.error(
                CHECKPOINT,
                &path("spec.checkpoint"),
                "checkpoints in tier C are kept only with a results upload, and there is none"
                    .into(),
                "not kept",
                Some("set storage.s3.results.uri".into()),
            ),
            Some(r) if r.per_rank && req.nodes() > 1 => c.error(
                CHECKPOINT,
                &path("spec.checkpoint"),
                "checkpoints are synced from rank 0 to the results URI, which storage.s3.results.perRank splits by rank".into(),
                "perRank results",
                Some("drop perRank, or keep the checkpoints on a mounted claim (tier A)".into()),
            ),
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports};
    use serde_json::{Value, json};

    fn checkpoint(edit: impl FnOnce(&mut Value)) -> Vec<(&'static str, &'static str)> {
        reports(&super::CHECK, |r| {
            r["spec"]["checkpoint"] = json!({
                "dir": "/results/run/checkpoints",
                "resume": {"arg": "train.resume_training_checkpoint_path"}
            });
            edit(r)
        })
    }

    #[test]
    fn a_checkpoint_under_the_results_is_quiet() {
        assert_eq!(checkpoint(|_| {}), NONE);
        assert_eq!(
            checkpoint(|r| r["spec"]["checkpoint"]["dir"] = json!("/results/run")),
            NONE
        );
        let env = |r: &mut Value| {
            r["spec"]["checkpoint"]["resume"] = json!({"env": "TAO_RESUME_CHECKPOINT"});
            r["spec"]["command"] = json!({"shell": "dino train"});
        };
        assert_eq!(checkpoint(env), NONE);
        assert_eq!(
            checkpoint(|r| r["spec"]["checkpoint"]["pattern"] = json!("model_epoch_*.pth")),
            NONE
        );
    }

    #[test]
    fn a_directory_outside_the_results_is_refused() {
        for dir in [
            "/tmp/ckpt",
            "/results/runner",
            "results/run",
            "/results/run/../x",
        ] {
            assert_eq!(
                checkpoint(|r| r["spec"]["checkpoint"]["dir"] = json!(dir)),
                [("TK019", "spec.checkpoint.dir")],
                "{dir}"
            );
        }
    }

    #[test]
    fn patterns_are_one_segment() {
        for pattern in ["", "a/*.pth", "*.pth x", ".."] {
            assert_eq!(
                checkpoint(|r| r["spec"]["checkpoint"]["pattern"] = json!(pattern)),
                [("TK019", "spec.checkpoint.pattern")],
                "{pattern}"
            );
        }
    }

    #[test]
    fn resume_takes_one_way_that_reaches_the_action() {
        let both = |r: &mut Value| {
            r["spec"]["checkpoint"]["resume"] = json!({"arg": "a", "env": "B"});
        };
        assert_eq!(checkpoint(both), [("TK019", "spec.checkpoint.resume")]);
        let none = |r: &mut Value| r["spec"]["checkpoint"]["resume"] = json!({});
        assert_eq!(checkpoint(none), [("TK019", "spec.checkpoint.resume")]);
        for arg in ["", "a=b", "--resume x"] {
            let edit = |r: &mut Value| r["spec"]["checkpoint"]["resume"]["arg"] = json!(arg);
            assert_eq!(checkpoint(edit), [("TK019", "spec.checkpoint.resume.arg")]);
        }
        let shell = |r: &mut Value| r["spec"]["command"] = json!({"shell": "dino train"});
        assert_eq!(checkpoint(shell), [("TK019", "spec.checkpoint.resume.arg")]);
        for env in ["1BAD", "TAO_K8S_LOG_DIR", "AWS_SECRET_ACCESS_KEY", "FOO"] {
            let edit = |r: &mut Value| {
                r["spec"]["env"] = json!({"FOO": "1"});
                r["spec"]["checkpoint"]["resume"] = json!({"env": env});
            };
            assert_eq!(
                checkpoint(edit),
                [("TK019", "spec.checkpoint.resume.env")],
                "{env}"
            );
        }
    }

    #[test]
    fn tier_c_keeps_checkpoints_only_through_rank_0s_upload() {
        let tier_c = |r: &mut Value, results: Value| {
            r["spec"]["storage"] = json!({
                "s3": {"inputs": [{"uri": "s3://b/in/", "path": "/data"}], "results": results}
            });
            r["spec"]["resources"]["nodes"] = json!(2);
        };
        assert_eq!(
            checkpoint(|r| tier_c(r, json!({"uri": "s3://b/out/"}))),
            NONE
        );
        assert_eq!(
            checkpoint(|r| tier_c(r, json!({"uri": "s3://b/out/", "perRank": true}))),
            [("TK019", "spec.checkpoint")]
        );
        let no_results = |r: &mut Value| {
            r["spec"]["storage"] =
                json!({"s3": {"inputs": [{"uri": "s3://b/in/", "path": "/data"}]}});
        };
        assert_eq!(checkpoint(no_results), [("TK019", "spec.checkpoint")]);
    }
}
