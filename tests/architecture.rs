//! The floors of `ARCHITECTURE.md` hold: every import in `src/` goes to a lower floor.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Module -> floor, from the table of `ARCHITECTURE.md`.
fn floors() -> BTreeMap<String, u32> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(floor), Some(modules)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Ok(floor) = floor.parse::<u32>() else {
            continue;
        };
        for module in modules.split('`').skip(1).step_by(2) {
            assert!(
                out.insert(module.to_string(), floor).is_none(),
                "ARCHITECTURE.md places `{module}` twice"
            );
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its comments and its test module.
fn stripped(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            break;
        }
        let line = line.split("//").next().unwrap_or("");
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The top-level modules a file's code names: `crate::m`, `crate::{m, n::x}`, and the
/// crate-root macros (`crate::rule!`) by the module that defines them.
fn imports(code: &str, macros: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The names of the group, at depth 0, each before its first `::`, `,` or `}`.
            let mut depth = 0;
            let mut word = String::new();
            let mut taking = true;
            for c in group.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        taking = false;
                    }
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        if !word.is_empty() {
                            out.insert(std::mem::take(&mut word));
                        }
                        taking = true;
                    }
                    c if depth == 0 && taking && (c.is_alphanumeric() || c == '_') => word.push(c),
                    c if depth == 0 && taking && !c.is_whitespace() => {
                        if !word.is_empty() {
                            out.insert(std::mem::take(&mut word));
                        }
                        taking = false;
                    }
                    _ => {}
                }
            }
            if !word.is_empty() {
                out.insert(word);
            }
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if rest[name.len()..].starts_with('!') {
            if let Some(module) = macros.get(&name) {
                out.insert(module.clone());
            }
        } else {
            out.insert(name);
        }
    }
    out.remove("self");
    out
}

/// The top-level module a file of `src/` belongs to; `None` for the binary.
fn module_of(path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root().join("src")).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let module = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (!matches!(module.as_str(), "main" | "cli" | "lib")).then_some(module)
}

#[test]
fn every_import_goes_down_a_floor() {
    let floors = floors();
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    files.sort();
    let mut macros = BTreeMap::new();
    let mut codes = Vec::new();
    for path in &files {
        let Some(module) = module_of(path) else {
            continue;
        };
        let code = stripped(&std::fs::read_to_string(path).unwrap());
        for (at, _) in code.match_indices("macro_rules!") {
            let name: String = code[at + "macro_rules!".len()..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            macros.insert(name, module.clone());
        }
        codes.push((path, module, code));
    }
    let mut wrong = Vec::new();
    let mut placed = BTreeSet::new();
    for (path, module, code) in &codes {
        let rel = path.strip_prefix(root()).unwrap().display();
        let Some(&floor) = floors.get(module) else {
            wrong.push(format!(
                "{rel}: module `{module}` is on no floor of ARCHITECTURE.md"
            ));
            continue;
        };
        placed.insert(module.clone());
        for import in imports(code, &macros) {
            if import == *module {
                continue;
            }
            match floors.get(&import) {
                Some(&to) if to < floor => {}
                Some(&to) => wrong.push(format!(
                    "{rel}: `{module}` (floor {floor}) imports `{import}` (floor {to})"
                )),
                None => wrong.push(format!(
                    "{rel}: `{module}` imports `{import}`, which is on no floor"
                )),
            }
        }
    }
    for module in floors.keys() {
        if !placed.contains(module) {
            wrong.push(format!(
                "ARCHITECTURE.md places `{module}`, which src/ does not have"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_import_reader_sees_every_form() {
    let macros = BTreeMap::from([("rule".to_string(), "lint".to_string())]);
    let code = "use crate::a::b;\nuse crate::{c, d::{e, f}, g::h};\nlet x = crate::i::j(); \
                crate::rule! {}\nlet y = $crate::k::l; my_crate::m::n;";
    let got: Vec<String> = imports(code, &macros).into_iter().collect();
    assert_eq!(got, ["a", "c", "d", "g", "i", "lint"]);
    assert_eq!(
        stripped("a();\n// crate::x\n#[cfg(test)]\nmod tests {\n use crate::y;\n}\n"),
        "a();\n\n"
    );
}
