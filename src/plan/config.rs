//! The staged config spec (config mode): materialised from the request's file or inline spec
//! with producer paths rewritten by the staging map, checked against its pinned and staged
//! digests, and shipped as a ConfigMap the pod mounts read-only.

use super::names::Names;
use super::{
    CONFIG_DIGEST, CONFIG_DIR, CONFIG_FILE, CONFIG_SHA256_ANNOTATION, ConfigMap, MAX_CONFIG_BYTES,
    OPTION, Options,
};
use crate::diag::Diagnostic;
use crate::request::{ConfigCommand, Loaded, pin};
use crate::source::Source;
use crate::staging::{StagedConfig, Staging, StagingMap};
use crate::yaml::Step;
use sha2::{Digest, Sha256};

/// Materialise the config spec (config mode) with its paths rewritten, check it against the
/// pinned digest and any staged file passed back, and record it in the staging map.
pub(super) fn config_map(
    loaded: &Loaded,
    staging: &Staging,
    names: &Names,
    opts: &Options,
) -> Result<(Option<ConfigMap>, StagingMap), Vec<Diagnostic>> {
    let mut map = staging.map.clone();
    let Some(config) = &loaded.request.spec.command.config else {
        if opts.staged_config.is_some() {
            return Err(vec![
                Diagnostic::error(
                    CONFIG_DIGEST,
                    "a staged config spec was given, but the request stages none (it is not in config mode)",
                )
                .help("drop --staged-config, or render the request it was staged for"),
            ]);
        }
        return Ok((None, map));
    };
    let Some(spec) = materialise(loaded, staging, config, &map, opts)? else {
        return Ok((None, map)); // refused by the request checks
    };
    let data = serde_saphyr::to_string(&spec).map_err(|e| {
        vec![Diagnostic::error(
            OPTION,
            format!("cannot write the config spec as YAML: {e}"),
        )]
    })?;
    let sha256 = hex(&Sha256::digest(data.as_bytes()));
    check_digests(&loaded.tree, config, &data, &sha256, opts)?;
    // Every rank reads the verified, read-only ConfigMap mount itself, as one pod does.
    let path = format!("{CONFIG_DIR}/{CONFIG_FILE}");
    map.config = Some(StagedConfig {
        pod_path: path.clone(),
        sha256: sha256.clone(),
        bytes: data.len(),
    });
    let cm = ConfigMap {
        name: names.config_map.clone(),
        annotations: [(CONFIG_SHA256_ANNOTATION.to_string(), sha256.clone())].into(),
        immutable: true,
        key: CONFIG_FILE.into(),
        data,
        sha256,
        path,
    };
    Ok((Some(cm), map))
}

/// The path of a field of `spec.command.config`.
fn at(field: &'static str) -> [Step; 4] {
    ["spec", "command", "config", field].map(|k| Step::Key(k.into()))
}

/// The spec as a tree with its producer paths rewritten: the inline one, or the file the
/// caller read for `spec`; `None` when the request has neither (the request checks refuse it).
fn materialise(
    loaded: &Loaded,
    staging: &Staging,
    config: &ConfigCommand,
    map: &StagingMap,
    opts: &Options,
) -> Result<Option<crate::yaml::Node>, Vec<Diagnostic>> {
    let tree = &loaded.tree;
    let spec = match (&staging.spec_inline, &config.spec) {
        (Some(inline), _) => inline.clone(),
        (None, Some(file)) => {
            let source = match opts.read_spec.as_ref().map(|r| r.read(file)) {
                Some(Ok(source)) => source,
                Some(Err(why)) => {
                    let d = Diagnostic::error(OPTION, format!("the spec file `{file}`: {why}"))
                        .help("`spec` is a path relative to the request file");
                    return Err(vec![pin(tree, &at("spec"), d, "not readable")]);
                }
                None => {
                    let d = Diagnostic::error(OPTION, format!("the spec file `{file}` was not provided"))
                        .help("the caller reads `command.config.spec` (relative to the request) and passes it in");
                    return Err(vec![pin(tree, &at("spec"), d, "not read")]);
                }
            };
            spec_from_file(&source, map, tree, &at("spec"))?
        }
        (None, None) => return Ok(None),
    };
    Ok(Some(spec))
}

/// The staged spec fits a ConfigMap, and has the digest the request pins and the one a staged
/// file passed back has.
fn check_digests(
    tree: &crate::yaml::Node,
    config: &ConfigCommand,
    data: &str,
    sha256: &str,
    opts: &Options,
) -> Result<(), Vec<Diagnostic>> {
    if data.len() > MAX_CONFIG_BYTES {
        let d = Diagnostic::error(
            CONFIG_DIGEST,
            format!(
                "the config spec is {} bytes: more than a ConfigMap holds",
                data.len()
            ),
        )
        .help("put the spec on a PVC and pass its path in args mode");
        return Err(vec![pin(
            tree,
            &at(if config.spec.is_some() {
                "spec"
            } else {
                "specInline"
            }),
            d,
            "too large to stage",
        )]);
    }
    if let Some(pinned) = &config.sha256
        && !pinned.eq_ignore_ascii_case(sha256)
    {
        let d = Diagnostic::error(
            CONFIG_DIGEST,
            "the materialised config spec does not match the pinned `sha256`",
        )
        .help(format!(
            "the spec materialises to sha256 {sha256}; update the pin if the change is intended"
        ));
        return Err(vec![pin(tree, &at("sha256"), d, "pinned digest differs")]);
    }
    if let Some(staged) = &opts.staged_config {
        let got = hex(&Sha256::digest(staged.as_bytes()));
        if got != sha256 {
            return Err(vec![Diagnostic::error(
                CONFIG_DIGEST,
                format!("the staged config spec has sha256 {got}, but the request stages {sha256}: it changed after staging"),
            )
            .help("stage again with `tao-k8s stage`, or pass the file it wrote unchanged")]);
        }
    }
    Ok(())
}

/// A spec file as a JSON value with its producer paths rewritten.
fn spec_from_file(
    source: &Source,
    map: &StagingMap,
    tree: &crate::yaml::Node,
    at: &[Step],
) -> Result<crate::yaml::Node, Vec<Diagnostic>> {
    let fail = |message: String| {
        let d = Diagnostic::error(OPTION, format!("spec file `{}`: {message}", source.name()));
        vec![pin(tree, at, d, "this file")]
    };
    let stream = crate::yaml::parse(source, crate::yaml::Limits::default()).map_err(|e| {
        let (line, col) = source.line_col(e.span.start);
        fail(format!("invalid YAML at {line}:{col}: {}", e.message))
    })?;
    if let Some(d) = stream.duplicates.first() {
        let (line, col) = source.line_col(d.second.start);
        return Err(fail(format!("duplicate key `{}` at {line}:{col}", d.key)));
    }
    let [document] = stream.documents.as_slice() else {
        return Err(fail("expected exactly one YAML document".into()));
    };
    let mut spec = document.clone();
    let mut missing = Vec::new();
    crate::staging::rewrite_spec(map, &mut spec, &mut Vec::new(), &mut missing);
    if !missing.is_empty() {
        return Err(missing
            .iter()
            .flat_map(|(path, value)| {
                fail(format!(
                    "`{value}` at `{}` is a logical path that no mount alias covers",
                    crate::yaml::display_path(path)
                ))
            })
            .collect());
    }
    Ok(spec)
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
