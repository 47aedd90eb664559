use crate::lint::Rule;

crate::rule! {
    /// What it checks: a mapping that has the same key twice.
    ///
    /// Why it matters: kubectl refuses such a document; tools that do not keep one of the
    /// values silently, so what runs is not what was reviewed.
    ///
    /// Example: two `env:` keys in one container.
    ///
    /// Fix: keep one of them. (Found while parsing, so it is reported even for unknown kinds.)
    pub struct DuplicateKey {
        code: "TK202",
        name: "duplicate-key",
        group: Schema,
        severity: Error,
    }
}

impl Rule for DuplicateKey {}
