use super::Checker;
use crate::codes::INVALID_VALUE;
use crate::request::ActionRequest;
use crate::yaml::{At, Node, Visitor, owned, visit};

request_check! {
    /// What it checks: no control character in a name or a path (any string outside free
    /// text, and every key), and no NUL anywhere: free text (`shell`, a script's `text`,
    /// `args`, `argv`, `env` values and `specInline`) may hold tabs and line breaks.
    ///
    /// Why it matters: bash and the kernel cannot carry a NUL in an argument or an environment
    /// value, so a value holding one would reach the pod (or the driver script, or a job
    /// record) as a different value; an escape sequence in a name rewrites the terminal of
    /// whoever reads the diagnostics, the logs or `kubectl get`.
    ///
    /// Example: `resultsDir: "/results/run\u001b[2J"`, or a NUL in an `env` value.
    ///
    /// Fix: remove the character.
    pub(super) const CHECK = {
        name: "control-characters",
        codes: [INVALID_VALUE],
        run: check,
    }
}

fn check(c: &mut Checker, _req: &ActionRequest) {
    let tree = c.tree;
    visit(tree, &mut ControlCharacters { c });
}

struct ControlCharacters<'c, 't> {
    c: &'c mut Checker<'t>,
}

impl<'a> Visitor<'a> for ControlCharacters<'_, '_> {
    fn string(&mut self, at: &[At<'a>], _node: &'a Node, s: &'a str) {
        // Most strings are printable ASCII: nothing to find, whatever the path.
        if crate::source::printable_ascii(s) {
            return;
        }
        let free_text = matches!(
            at.iter().rev().find_map(At::key),
            Some("shell" | "text" | "args" | "argv" | "env" | "specInline")
        ) || at
            .iter()
            .any(|s| matches!(s.key(), Some("env" | "specInline")));
        // Free text (a script, argv, env values) may hold tabs and line breaks.
        let bad = s.chars().find(|&ch| {
            if free_text {
                ch == '\0'
            } else {
                ch.is_control()
            }
        });
        if let Some(ch) = bad {
            let message = if ch == '\0' {
                "the value holds a NUL character, which no process argument, environment value or script can carry".to_string()
            } else {
                format!(
                    "the value holds the control character {}: names and paths hold printable characters only",
                    ch.escape_default()
                )
            };
            self.c.error(
                INVALID_VALUE,
                &owned(at),
                message,
                "control character",
                Some("remove it".into()),
            );
        }
    }

    fn key(&mut self, at: &[At<'a>], _key: &'a Node, key: &str) {
        if let Some(ch) = key.chars().find(|ch| ch.is_control()) {
            self.c.key_error(
                INVALID_VALUE,
                &owned(at),
                format!(
                    "the key holds the control character {}",
                    ch.escape_default()
                ),
                "control character",
                None,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports};
    use serde_json::json;

    #[test]
    fn line_breaks_in_free_text_are_quiet() {
        let found = reports(&super::CHECK, |r| {
            r["spec"]["command"] = json!({"shell": "set -e\n\tdino train"});
            r["spec"]["env"] = json!({"NOTE": "two\nlines"});
        });
        assert_eq!(found, NONE);
    }

    #[test]
    fn control_characters_in_names_and_paths_are_refused() {
        let found = reports(&super::CHECK, |r| {
            r["spec"]["resultsDir"] = json!("/results/run\u{1b}[2J");
            r["metadata"]["labels"] = json!({"team\t": "vision"});
        });
        assert_eq!(
            found,
            [
                ("TK006", "metadata.labels[\"team\\t\"]"),
                ("TK006", "spec.resultsDir"),
            ]
        );
    }

    #[test]
    fn a_nul_is_refused_even_in_free_text() {
        let found = reports(&super::CHECK, |r| {
            r["spec"]["command"]["args"] = json!(["dino", "tra\u{0}in"])
        });
        assert_eq!(found, [("TK006", "spec.command.args[1]")]);
    }
}
