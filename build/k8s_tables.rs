//! Turns the committed description of the Kubernetes API (`schemas/k8s/`, written by
//! `cargo run -p xtask -- k8s-description`) into static Rust tables, so that the strict checker
//! (`src/k8s/`) reads them with no parse or compile at run time.
//!
//! Output (`$OUT_DIR/k8s_tables.rs`): `NAMES` (every definition name, sorted), `DEFS` (every
//! distinct definition of any version, its fields sorted by name) and `VERSIONS` (per minor:
//! its kinds sorted by apiVersion and kind, and for each name the definition it uses there).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

pub fn generate(root: &Path, out: &Path) {
    let dir = root.join("schemas/k8s");
    println!("cargo:rerun-if-changed={}", dir.display());
    let store_text =
        fs::read_to_string(dir.join("definitions.txt")).expect("schemas/k8s/definitions.txt");
    // address -> (name, fields text)
    let mut store: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    for line in store_text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (address, rest) = line.split_once(' ').expect("<address> <name> ...");
        let (name, fields) = rest.split_once(' ').unwrap_or((rest, ""));
        store.insert(address, (name, fields));
    }
    let mut indexes: Vec<(u32, String)> = Vec::new();
    for entry in fs::read_dir(&dir).expect("schemas/k8s") {
        let path = entry.expect("entry").path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(minor) = file
            .strip_prefix("v1.")
            .and_then(|f| f.strip_suffix(".txt"))
        {
            let minor: u32 = minor.parse().expect("v1.<minor>.txt");
            indexes.push((minor, fs::read_to_string(&path).expect("index")));
        }
    }
    indexes.sort();
    // The supported range is the minors described here: adding a version is generating its
    // index, nothing else.
    let minors: Vec<u32> = indexes.iter().map(|(m, _)| *m).collect();
    let (oldest, newest) = (minors[0], minors[minors.len() - 1]);
    assert!(
        minors.iter().copied().eq(oldest..=newest),
        "schemas/k8s describes minors {minors:?}: the supported range has no gaps"
    );
    fs::write(
        out.join("kube_versions.rs"),
        format!("/// Generated from `schemas/k8s/`.\nconst OLDEST_MINOR: u32 = {oldest};\n/// Generated from `schemas/k8s/`.\nconst NEWEST_MINOR: u32 = {newest};\n"),
    )
    .expect("OUT_DIR is writable");
    let names: BTreeSet<&str> = store.values().map(|(n, _)| *n).collect();
    let names: Vec<&str> = names.into_iter().collect();
    let name_id = |n: &str| {
        names
            .binary_search(&n)
            .unwrap_or_else(|_| panic!("unknown definition {n}"))
    };
    let addresses: Vec<&str> = store.keys().copied().collect();
    let mut code = String::new();
    // The names are for messages in tests; the checker refers to definitions by number.
    writeln!(code, "#[cfg(test)]").unwrap();
    writeln!(
        code,
        "pub(super) static NAMES: [&str; {}] = {:?};",
        names.len(),
        names
    )
    .unwrap();
    writeln!(
        code,
        "pub(super) static DEFS: [Def; {}] = [",
        addresses.len()
    )
    .unwrap();
    for address in &addresses {
        let (name, fields) = store[address];
        write!(code, "Def {{ name: {}, fields: &[", name_id(name)).unwrap();
        for field in fields.split(' ').filter(|f| !f.is_empty()) {
            let (field_name, ty) = field.split_once(':').expect("<field>:<type>");
            let (ty, required) = match ty.strip_suffix('!') {
                Some(t) => (t, true),
                None => (ty, false),
            };
            write!(
                code,
                "Field {{ name: {field_name:?}, ty: {}, required: {required} }},",
                rust_type(ty, &name_id)
            )
            .unwrap();
        }
        writeln!(code, "] }},").unwrap();
    }
    writeln!(code, "];").unwrap();
    writeln!(
        code,
        "pub(super) static VERSIONS: [Version; {}] = [",
        indexes.len()
    )
    .unwrap();
    let mut by_minor: Vec<(u32, Vec<u16>)> = Vec::new();
    for (minor, text) in &indexes {
        let mut kinds = Vec::new();
        let mut by_name = vec![u16::MAX; names.len()];
        for line in text.lines() {
            let words: Vec<&str> = line.split(' ').collect();
            match words.as_slice() {
                ["kind", api_version, kind, definition] => {
                    kinds.push((*api_version, *kind, *definition))
                }
                ["def", name, address] => {
                    let at = addresses.binary_search(address).unwrap_or_else(|_| {
                        panic!("v1.{minor}.txt: {address} is not in definitions.txt")
                    });
                    by_name[name_id(name)] =
                        u16::try_from(at).expect("fewer than 65535 definitions");
                }
                _ => {}
            }
        }
        kinds.sort();
        write!(code, "Version {{ minor: {minor}, kinds: &[").unwrap();
        for (api_version, kind, definition) in kinds {
            write!(
                code,
                "({api_version:?}, {kind:?}, {}),",
                name_id(definition)
            )
            .unwrap();
        }
        writeln!(code, "], defs: &{by_name:?} }},").unwrap();
        by_minor.push((*minor, by_name));
    }
    writeln!(code, "];").unwrap();
    let lists = lists(&dir, &name_id, (oldest, newest), &mut code);
    // REACH: per minor (in VERSIONS' order), a bit per name id: whether objects of that
    // definition can hold an associative list the server-side apply rule checks, so its walk
    // skips the rest.
    let refs: BTreeMap<&str, Vec<(&str, Vec<usize>)>> = store
        .iter()
        .map(|(address, (_, fields))| {
            let fields = fields
                .split(' ')
                .filter(|f| !f.is_empty())
                .map(|f| {
                    let (field, ty) = f.split_once(':').expect("<field>:<type>");
                    let inner = ty.trim_end_matches('!').trim_start_matches(['[', '{']);
                    let inner = inner.trim_end_matches([']', '}']);
                    (
                        field,
                        inner.strip_prefix('@').map(&name_id).into_iter().collect(),
                    )
                })
                .collect();
            (*address, fields)
        })
        .collect();
    writeln!(
        code,
        "pub(super) static REACH: [&[u64]; {}] = [",
        by_minor.len()
    )
    .unwrap();
    for (minor, by_name) in &by_minor {
        let checked: BTreeSet<(usize, &str)> = lists
            .iter()
            .filter(|(_, _, minors, validated)| minors & (1 << minor) != 0 && !validated)
            .map(|(n, f, _, _)| (*n, f.as_str()))
            .collect();
        let mut reach = vec![false; names.len()];
        let mut changed = true;
        while changed {
            changed = false;
            for (name, &at) in by_name.iter().enumerate() {
                if at == u16::MAX || reach[name] {
                    continue;
                }
                let fields = &refs[addresses[usize::from(at)]];
                if fields.iter().any(|(field, to)| {
                    checked.contains(&(name, *field)) || to.iter().any(|&r| reach[r])
                }) {
                    reach[name] = true;
                    changed = true;
                }
            }
        }
        let mut words = vec![0u64; names.len().div_ceil(64)];
        for (name, _) in reach.iter().enumerate().filter(|(_, r)| **r) {
            words[name / 64] |= 1 << (name % 64);
        }
        writeln!(code, "&{words:?},").unwrap();
    }
    writeln!(code, "];").unwrap();
    fs::write(out.join("k8s_tables.rs"), code).expect("OUT_DIR is writable");
}

/// `LISTS`: the associative lists of `lists.txt` (see its header), sorted by definition name id
/// and field, each with a bit per minor (`1 << minor`), its keys (none: a set) and whether the
/// API server's create validation refuses its duplicates too. Returns `(name id, field,
/// minors, validated)` of each.
fn lists(
    dir: &Path,
    name_id: &dyn Fn(&str) -> usize,
    (oldest, newest): (u32, u32),
    code: &mut String,
) -> Vec<(usize, String, u64, bool)> {
    let text = fs::read_to_string(dir.join("lists.txt")).expect("schemas/k8s/lists.txt");
    let mut rows = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let words: Vec<&str> = line.split(' ').collect();
        let (name, field, topology, minors, validated) = match words[..] {
            [n, f, t, m] => (n, f, t, m, ""),
            [n, f, t, m, mark @ ("validated" | "refused")] => (n, f, t, m, mark),
            _ => panic!("lists.txt: <definition> <field> <topology> <minors> [validated]: {line}"),
        };
        let mut bits = 0u64;
        for part in minors.split(',') {
            let (first, last) = part.split_once('-').unwrap_or((part, part));
            let (first, last): (u32, u32) = (first.parse().unwrap(), last.parse().unwrap());
            assert!(
                oldest <= first && last <= newest,
                "lists.txt: minors {minors} outside the range"
            );
            for m in first..=last {
                bits |= 1 << m;
            }
        }
        let keys: Vec<(&str, Option<&str>)> = match topology {
            "set" => Vec::new(),
            _ => topology
                .strip_prefix("map(")
                .and_then(|t| t.strip_suffix(')'))
                .unwrap_or_else(|| panic!("lists.txt: topology {topology}"))
                .split(',')
                .map(|k| match k.split_once('=') {
                    Some((k, default)) => (k, Some(default)),
                    None => (k, None),
                })
                .collect(),
        };
        rows.push((
            name_id(name),
            field,
            bits,
            keys,
            validated == "validated",
            validated == "refused",
        ));
    }
    rows.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    for pair in rows.windows(2) {
        assert!(
            (pair[0].0, pair[0].1) != (pair[1].0, pair[1].1) || pair[0].2 & pair[1].2 == 0,
            "lists.txt: {} has two topologies in one minor",
            pair[0].1
        );
    }
    writeln!(code, "pub(super) static LISTS: [List; {}] = [", rows.len()).unwrap();
    let out = rows
        .iter()
        .map(|(name, field, minors, _, validated, _)| {
            (*name, field.to_string(), *minors, *validated)
        })
        .collect();
    for (name, field, minors, keys, validated, refused) in rows {
        writeln!(code, "List {{ name: {name}, field: {field:?}, minors: {minors}, keys: &{keys:?}, validated: {validated}, refused: {refused} }},").unwrap();
    }
    writeln!(code, "];").unwrap();
    out
}

/// The Rust expression of a compact type (see schemas/k8s/README.md).
fn rust_type(ty: &str, name_id: &dyn Fn(&str) -> usize) -> String {
    if let Some(inner) = ty.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        return format!("Ty::List(&{})", rust_type(inner, name_id));
    }
    if let Some(inner) = ty.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        return format!("Ty::Map(&{})", rust_type(inner, name_id));
    }
    if let Some(name) = ty.strip_prefix('@') {
        return format!("Ty::Ref({})", name_id(name));
    }
    if let Some(values) = ty.strip_prefix("string(").and_then(|t| t.strip_suffix(')')) {
        let values: Vec<&str> = values.split('|').collect();
        return format!("Ty::Enum(&{values:?})");
    }
    match ty {
        "string" => "Ty::Str",
        "int32" => "Ty::Int32",
        "int64" => "Ty::Int64",
        "number" => "Ty::Number",
        "bool" => "Ty::Bool",
        "byte" => "Ty::Byte",
        "date-time" => "Ty::DateTime",
        "quantity" => "Ty::Quantity",
        "int-or-string" => "Ty::IntOrString",
        "object" => "Ty::Object",
        "any" => "Ty::Any",
        other => panic!("unknown type {other} in schemas/k8s"),
    }
    .to_owned()
}
