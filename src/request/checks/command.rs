use super::{COMMAND_MODE, CONFIG_PATH, CONFIG_PATH_TOKEN, Checker, path, with};
use crate::codes::INVALID_VALUE;
use crate::request::{ActionRequest, Command, ConfigCommand};
use crate::yaml::Step;

request_check! {
    /// What it checks: `spec.command` has exactly one mode (`shell`, `args`, `config` or
    /// `script`); `{config_path}` appears only in config mode, and config mode passes it in its
    /// `argv`; config mode names its spec once (`spec` or `specInline`), a `sha256` pin is 64
    /// hexadecimal characters; a script's `shell` is an absolute path.
    ///
    /// Why it matters: the pod runs one command, and tao-k8s replaces `{config_path}` with the
    /// in-pod path of the staged spec only in config mode: anywhere else the container gets
    /// the literal text `{config_path}` and the action fails on a file that does not exist.
    ///
    /// Example: `command: {args: [dino, train], shell: "dino train"}` (two modes), or
    /// `args: [dino, train, -e, "{config_path}"]` (a token nothing replaces).
    ///
    /// Fix: keep one mode; to pass a staged spec, use `command.config` with `argv` holding
    /// `"{config_path}"` and `spec` (a file) or `specInline`.
    pub(super) const CHECK = {
        name: "command",
        codes: [COMMAND_MODE, CONFIG_PATH, INVALID_VALUE],
        run: check,
    }
}

fn check(c: &mut Checker, req: &ActionRequest) {
    let cmd = &req.spec.command;
    modes(c, cmd);
    for (at, text) in texts(c, cmd) {
        if text.contains(CONFIG_PATH_TOKEN) {
            c.error(
                CONFIG_PATH,
                &at,
                "`{config_path}` is only replaced in config mode".into(),
                "would reach the container literally",
                Some(
                    "use `command.config` with `argv` and a spec, or write the path itself".into(),
                ),
            );
        }
    }
    if let Some(config) = &cmd.config {
        config_mode(c, config);
    }
}

/// Exactly one mode.
fn modes(c: &mut Checker, cmd: &Command) {
    let modes: Vec<&str> = cmd.modes().iter().map(|m| m.name()).collect();
    let help = Some("give exactly one of `shell`, `args`, `config` or `script`".to_string());
    match modes.len() {
        0 => c.error(
            COMMAND_MODE,
            &path("spec.command"),
            "no command mode in `spec.command`".into(),
            "expected one of `shell`, `args`, `config`, `script`",
            help,
        ),
        1 => {}
        _ => c.error(
            COMMAND_MODE,
            &path("spec.command"),
            format!(
                "`spec.command` has {} modes ({}); exactly one is allowed",
                modes.len(),
                modes.join(", ")
            ),
            "more than one mode",
            help,
        ),
    }
}

/// The texts no `{config_path}` is replaced in, with their paths; on the way, a script's shell
/// must be absolute.
fn texts<'r>(c: &mut Checker, cmd: &'r Command) -> Vec<(Vec<Step>, &'r str)> {
    let mut texts: Vec<(Vec<Step>, &str)> = Vec::new();
    if let Some(shell) = &cmd.shell {
        texts.push((path("spec.command.shell"), shell));
    }
    if let Some(args) = &cmd.args {
        texts.extend(
            args.iter()
                .enumerate()
                .map(|(i, a)| (with(path("spec.command.args"), i), a.as_str())),
        );
    }
    if let Some(script) = &cmd.script {
        texts.push((path("spec.command.script.text"), &script.text));
        if !script.shell.starts_with('/') {
            c.error(
                INVALID_VALUE,
                &path("spec.command.script.shell"),
                format!(
                    "the script shell must be an absolute path, found {:?}",
                    script.shell
                ),
                "expected e.g. /bin/bash",
                None,
            );
        }
    }
    texts
}

/// One spec, a well-formed pin, and an argv that passes the spec.
fn config_mode(c: &mut Checker, config: &ConfigCommand) {
    let at = path("spec.command.config");
    match (&config.spec, &config.spec_inline) {
        (None, None) => c.error(
            COMMAND_MODE,
            &at,
            "config mode needs `spec` (a file) or `specInline`".into(),
            "neither is given",
            None,
        ),
        (Some(_), Some(_)) => c.error(
            COMMAND_MODE,
            &at,
            "config mode takes `spec` or `specInline`, not both".into(),
            "both are given",
            None,
        ),
        (Some(file), None) if file.is_empty() || file.contains('\0') => c.error(
            INVALID_VALUE,
            &with(at.clone(), "spec"),
            "`spec` must name a file".into(),
            "not a file name",
            None,
        ),
        (Some(_), None) => {}
        (None, Some(_)) => {}
    }
    if let Some(sum) = &config.sha256
        && (sum.len() != 64 || !sum.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        c.error(
            INVALID_VALUE,
            &with(at.clone(), "sha256"),
            "`sha256` must be 64 hexadecimal characters".into(),
            "not a sha256 digest",
            None,
        );
    }
    if !config.argv.iter().any(|a| a.contains(CONFIG_PATH_TOKEN)) {
        c.warn(
            CONFIG_PATH,
            &with(at, "argv"),
            "config mode argv never mentions `{config_path}`: the staged spec is mounted but not passed".into(),
            "no `{config_path}` here",
            Some("pass it, e.g. `[dino, train, -e, \"{config_path}\"]`".into()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports, severities};
    use serde_json::json;

    #[test]
    fn one_mode_is_quiet() {
        assert_eq!(reports(&super::CHECK, |_| {}), NONE);
    }

    #[test]
    fn no_mode_and_two_modes_are_refused_at_the_command() {
        let none = reports(&super::CHECK, |r| r["spec"]["command"] = json!({}));
        assert_eq!(none, [("TK010", "spec.command")]);
        let two = reports(&super::CHECK, |r| {
            r["spec"]["command"]["shell"] = json!("dino train")
        });
        assert_eq!(two, [("TK010", "spec.command")]);
    }

    #[test]
    fn config_path_outside_config_mode_is_refused_where_it_is() {
        let found = reports(&super::CHECK, |r| {
            r["spec"]["command"] = json!({"args": ["dino", "-e", "{config_path}"]})
        });
        assert_eq!(found, [("TK011", "spec.command.args[2]")]);
        let shell = reports(&super::CHECK, |r| {
            r["spec"]["command"] = json!({"shell": "dino -e {config_path}"})
        });
        assert_eq!(shell, [("TK011", "spec.command.shell")]);
    }

    #[test]
    fn a_relative_script_shell_is_refused() {
        let found = reports(&super::CHECK, |r| {
            r["spec"]["command"] = json!({"script": {"shell": "bash", "text": "dino train"}})
        });
        assert_eq!(found, [("TK006", "spec.command.script.shell")]);
    }

    #[test]
    fn config_mode_needs_one_spec_a_digest_and_the_token() {
        let config = |c: serde_json::Value| {
            move |r: &mut serde_json::Value| r["spec"]["command"] = json!({ "config": c })
        };
        let argv = json!(["dino", "-e", "{config_path}"]);
        let ok = config(json!({"argv": argv, "spec": "train.yaml"}));
        assert_eq!(reports(&super::CHECK, ok), NONE);
        let neither = config(json!({"argv": argv}));
        assert_eq!(
            reports(&super::CHECK, neither),
            [("TK010", "spec.command.config")]
        );
        let both = config(json!({"argv": argv, "spec": "a.yaml", "specInline": {"a": 1}}));
        assert_eq!(
            reports(&super::CHECK, both),
            [("TK010", "spec.command.config")]
        );
        let empty = config(json!({"argv": argv, "spec": ""}));
        assert_eq!(
            reports(&super::CHECK, empty),
            [("TK006", "spec.command.config.spec")]
        );
        let sum = config(json!({"argv": argv, "spec": "a.yaml", "sha256": "abc"}));
        assert_eq!(
            reports(&super::CHECK, sum),
            [("TK006", "spec.command.config.sha256")]
        );
        let no_token = config(json!({"argv": ["dino", "train"], "spec": "a.yaml"}));
        assert_eq!(
            severities(&super::CHECK, no_token),
            [("TK011", "spec.command.config.argv", "warning")]
        );
    }
}
