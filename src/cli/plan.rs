//! `tao-k8s plan`: the template context of one request (the Plan), as JSON or YAML, for
//! template authors; its schema is `tao-k8s schema --template-context`.

use super::render::{Files, read_request};
use super::{Format, REFUSED, emit, report::Reporter};
use std::path::Path;
use std::process::ExitCode;
use tao_k8s::plan::Options;

pub(crate) fn run(
    out: &Reporter,
    path: &Path,
    format: Format,
    mut opts: Options,
    files: &Files,
) -> ExitCode {
    let source = match read_request(out, path, &mut opts, files) {
        Ok(source) => source,
        Err(code) => return code,
    };
    let plan = match tao_k8s::compile::plan(&source, &opts) {
        Ok(plan) => plan,
        Err(failure) => {
            let diags = failure.diagnostics();
            out.diagnostics(Some(&source), diags);
            out.summary(diags, source.name());
            return ExitCode::from(REFUSED);
        }
    };
    let text = match format {
        Format::Json => serde_json::to_string_pretty(&plan).expect("the Plan serializes") + "\n",
        Format::Yaml => serde_saphyr::to_string(&plan).expect("the Plan serializes"),
    };
    emit(&text)
}
