//! Every diagnostic code the project reports outside its lint rules, each with one meaning:
//! the request's structure (TK00x) and its checks (TK01x), the lint's own reports (TK02x),
//! options (TK03x), staging (TK04x), and the templates' output (TK09x). The lint rules carry
//! their codes themselves (TK1xx redaction, TK2xx schema, TK3xx GPU jobs, TK4xx what the API
//! server refuses); a test in
//! `lint::registry`, which sees both, checks that no code anywhere has two meanings.
//! `tao-k8s explain` reads this table too.

/// A code, its kebab name and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Code {
    pub code: &'static str,
    pub name: &'static str,
    pub summary: &'static str,
}

macro_rules! codes {
    ($($(#[doc = $doc:expr])* $ident:ident = $code:literal, $name:literal;)*) => {
        $($(#[doc = $doc])* pub const $ident: &str = $code;)*
        /// Every code of this table, in order.
        pub const ALL: &[Code] = &[$(Code {
            code: $code,
            name: $name,
            summary: concat!($($doc),*),
        }),*];
    };
}

codes! {
    /// The request is not YAML.
    YAML_SYNTAX = "TK001", "yaml-syntax";
    /// A key appears twice in one mapping of the request.
    DUPLICATE_KEY = "TK002", "duplicate-key-in-request";
    /// The request has a field the format does not know.
    UNKNOWN_FIELD = "TK003", "unknown-field";
    /// A request field has the wrong type.
    WRONG_TYPE = "TK004", "wrong-type";
    /// A required request field is missing.
    MISSING_FIELD = "TK005", "missing-field";
    /// A request field has a value outside what it accepts.
    INVALID_VALUE = "TK006", "invalid-value";
    /// A request value YAML 1.1 tools read as a boolean.
    YAML11_BOOLEAN = "TK007", "yaml11-boolean-in-request";
    /// Lint: the findings of one file past `--max-findings`, counted in one report.
    TOO_MANY = "TK009", "too-many-findings";
    /// The request has no command mode, or more than one.
    COMMAND_MODE = "TK010", "command-mode";
    /// `{config_path}` outside config mode, or config mode that never passes it.
    CONFIG_PATH = "TK011", "config-path";
    /// The image is not pinned or not a valid reference.
    IMAGE = "TK012", "image";
    /// The results directory is not a clean path, or lands nowhere writable.
    RESULTS_DIR = "TK013", "results-dir";
    /// A resource quantity is not valid, or does not fit.
    QUANTITY = "TK014", "quantity";
    /// An environment variable name is not valid, or reserved.
    ENV_NAME = "TK015", "env-name";
    /// A credential is written into the request.
    CREDENTIAL = "TK016", "credential-in-request";
    /// A name, label or namespace Kubernetes would refuse.
    NAME = "TK017", "name";
    /// A storage layout that makes no sense.
    STORAGE = "TK018", "storage";
    /// A checkpoint directory, pattern or resume option that cannot work.
    CHECKPOINT = "TK019", "checkpoint";
    /// Lint: a suppression annotation that suppresses nothing.
    UNUSED_SUPPRESSION = "TK020", "unused-suppression";
    /// Lint: a document that is not a Kubernetes object, or of a kind with no schema at hand
    /// (not built in, no `--crd`, or a CRD version without one); an error with `--strict-kinds`.
    UNKNOWN_KIND = "TK021", "unknown-kind";
    /// An option (`--namespace`, `--kube-version`, a spec file) that cannot be used.
    OPTION = "TK030", "option";
    /// A config spec whose digest is not the pinned or staged one, or too large to stage.
    CONFIG_DIGEST = "TK031", "config-digest";
    /// A storage layout Kubernetes would refuse or that loses data.
    CONFLICT = "TK040", "staging-conflict";
    /// A producer path that lands nowhere in the pod.
    UNCOVERED = "TK041", "uncovered-path";
    /// An absolute path in the command or the config spec that is under no mount and not a
    /// path the image has: the pod will not find it (a warning).
    UNMOUNTED = "TK042", "unmounted-path";
    /// A template that failed to compile or render, or a template file that replaces none.
    TEMPLATE = "TK090", "template";
    /// Rendered output that is not a valid object of its kind.
    INVALID_OUTPUT = "TK091", "invalid-output";
    /// Rendered output that fails the project's own lint.
    LINTED_OUTPUT = "TK092", "linted-output";
}

/// Codes that meant something else before, still accepted where a user writes codes
/// (suppression annotations), with a note saying the new one: `(old, new)`.
pub const RENAMED: &[(&str, &str)] = &[("TK001", UNUSED_SUPPRESSION), ("TK002", UNKNOWN_KIND)];

/// The entry of a code.
pub fn find(code: &str) -> Option<&'static Code> {
    ALL.iter().find(|c| c.code.eq_ignore_ascii_case(code))
}
