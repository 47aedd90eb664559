use super::{Checker, RESULTS_DIR, path, path_problem};
use crate::request::ActionRequest;

request_check! {
    /// What it checks: `spec.resultsDir` is a clean absolute path: it starts with `/` and has
    /// no empty, `.` or `..` segment. Whether it lands on a writable mount is decided with the
    /// staging layout (TK013 from staging).
    ///
    /// Why it matters: the action writes its checkpoints and logs there, and the job record
    /// keeps the path to find them again; a relative or `..` path means a different directory
    /// in the container than the one the record points to.
    ///
    /// Example: `resultsDir: results/run-1`, or `resultsDir: /results/../tmp`.
    ///
    /// Fix: write the absolute path under a mount, e.g. `/results/run-1`.
    pub(super) const CHECK = {
        name: "results-dir",
        codes: [RESULTS_DIR],
        run: check,
    }
}

/// `resultsDir` must be a clean absolute path; where it lands is the staging layout's concern.
fn check(c: &mut Checker, req: &ActionRequest) {
    let dir = &req.spec.results_dir;
    if let Some(problem) = path_problem(dir) {
        c.error(
            RESULTS_DIR,
            &path("spec.resultsDir"),
            format!("resultsDir `{dir}` {problem}"),
            "not a clean absolute path",
            None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{NONE, reports};
    use serde_json::json;

    fn results_dir(dir: &str) -> Vec<(&'static str, &'static str)> {
        reports(&super::CHECK, |r| r["spec"]["resultsDir"] = json!(dir))
    }

    #[test]
    fn clean_absolute_paths_are_quiet() {
        assert_eq!(results_dir("/results/run-1"), NONE);
        assert_eq!(results_dir("/results/run-1/"), NONE);
    }

    #[test]
    fn relative_and_unclean_paths_are_refused() {
        for dir in [
            "results",
            "/results/../tmp",
            "/results//run",
            "/results/./run",
        ] {
            assert_eq!(results_dir(dir), [("TK013", "spec.resultsDir")], "{dir}");
        }
    }
}
