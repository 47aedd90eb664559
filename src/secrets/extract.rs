//! Extractors: where a value sits, and the name it is judged by.
//!
//! A credential is rarely alone: it is the value of `NAME=value` or `name: value`, the argument
//! after `--password`, the glued tail of `mysql -pX`, the secret half of `curl -u user:secret`,
//! the last field of a `.pgpass` line, the word after `password` in a `.netrc`, the text of a
//! `<password>` element in Maven's `settings.xml`, the token of an `Authorization:` header.
//! Each extractor yields [`Candidate`]s (a name and a byte range of the value); the recognisers
//! decide. Shell text is split into words by `shlex` (POSIX quoting rules: `'...'`, `"..."`,
//! backslashes), so a quoted password is one word, as the shell would pass it.

use super::WordPattern;
use regex::Regex;
use std::ops::Range;
use std::sync::LazyLock;

/// A value to judge: the name it is assigned to (or a stand-in such as `password` for the
/// secret half of `user:secret`), its byte range, and whether it is an Authorization header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub name: String,
    pub range: Range<usize>,
    pub header: bool,
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("extract.rs patterns are valid")
}

/// A value in `name=value` / `name: value` / `--name value`: quoted, or a bare run up to a shell
/// or flow-collection delimiter.
const VALUE: &str = r#"(?:"([^"\n]*)"|'([^'\n]*)'|([^\s"'`;&|,}\]<]+))"#;
/// `name=value`, `name: value`, `name := value`, `"name": "value"` inside free text: groups
/// name, separator, value. Names may hold `/` for annotation keys (`example.com/api-key`).
static ASSIGN: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r#"([A-Za-z_][A-Za-z0-9_./-]*)(["']?[ \t]*(?::=|=|:))[ \t]*{VALUE}"#
    ))
});
/// `--name value` flags (`--name=value` is `ASSIGN`), with the same groups.
static FLAG: LazyLock<Regex> =
    LazyLock::new(|| re(&format!(r"--([A-Za-z][A-Za-z0-9_.-]*)([ \t]+){VALUE}")));
/// `.netrc`: `machine h login u password p` (any layout); only in text that says `machine`.
static NETRC: LazyLock<Regex> = LazyLock::new(|| re(r"(?:^|\s)(?:password|passwd)[ \t]+([^\s]+)"));
/// `.pgpass`: `host:port:database:user:password`, one per line.
static PGPASS: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?m)^[A-Za-z0-9_.*-]+:(?:[0-9]+|\*):[A-Za-z0-9_.*-]+:[A-Za-z0-9_.@*-]+:([^\s]+)[ \t]*$")
});
/// XML elements with text (Maven `settings.xml`: `<password>…</password>`).
static XML: WordPattern =
    WordPattern::new(r"<([A-Za-z][\w.:-]*)>[ \t]*([^<\s]+)[ \t]*</([A-Za-z][\w.:-]*)>");
/// `Authorization: Bearer …`, `Basic …`, `token …` (headers in curl arguments, probes, files),
/// also as an nginx directive's argument (`proxy_set_header Authorization "Basic …";`).
static AUTH_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?i)\b(?:proxy-)?authorization\\?["']?(?:\s*[:=]\s*|[ \t]+)\\?["']?(?:bearer|basic|token|apikey|sso-key)\s+([A-Za-z0-9._~+/=:-]{8,})"#,
    )
});
/// A config directive, `name value` alone on its line: redis `requirepass …`, fluent-bit
/// `HTTP_Passwd …`, keepalived `auth_pass …` (judged by the name model like any assignment).
static DIRECTIVE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?m)^[ \t]*([A-Za-z_][A-Za-z0-9_.-]*)[ \t]+(?:"([^"\n]+)"|'([^'\n]+)'|([^\s"'#;]+))[ \t]*;?[ \t]*$"#,
    )
});

/// Tools whose `-p` is a password: glued only (`mysql -pX`; `-p X` prompts and `X` is a database).
const GLUED_P: &str = "mysql mysqldump mysqladmin mariadb mariadb-dump mysqlimport mysqlshow";
/// Tools whose `-p X` / `-pX` is a password (registry logins only in a `login` command).
const SPACED_P: &str = "sshpass mongo mongosh mongodump mongorestore";
const LOGIN_P: &str = "docker podman nerdctl buildah helm oras skopeo crane regctl";
/// Tools whose `-u user:secret` holds a password.
const USER_PAIR: &str = "curl wget http https xh lftp";
/// Long options whose value is `user:secret` for any tool.
const PAIR_OPTIONS: &str = "user proxy-user creds src-creds dest-creds basic-auth";

fn listed(list: &str, word: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}

/// `name=value`, `name: value` and `--name value` assignments in free text (env files, INI,
/// properties, `.npmrc`, `.pypirc`, YAML or JSON inside a string, URLs' query strings).
pub fn assignments(text: &str, flags: bool, out: &mut Vec<Candidate>) {
    for (re, is_flag) in [(&*ASSIGN, false), (&*FLAG, true)]
        .into_iter()
        .filter(|(_, f)| !*f || flags)
    {
        let mut at = 0;
        while let Some(c) = re.captures_at(text, at) {
            let group = |i| c.get(i).expect("name and separator always participate");
            let (name, sep) = (group(1).as_str(), group(2));
            let value = (3..=5)
                .find_map(|i| c.get(i))
                .expect("one value group participates");
            // A colon needs a space (YAML) or quotes (JSON): `arn:aws:…:secret:x`, `host:port`.
            let tight_colon =
                sep.as_str() == ":" && c.get(5).is_some() && value.start() == sep.end();
            // In `--token --verbose` the "value" is the next flag.
            let next_flag = is_flag && value.as_str().starts_with('-');
            if !tight_colon && !next_flag {
                out.push(Candidate {
                    name: name.to_owned(),
                    range: value.range(),
                    header: false,
                });
            }
            // Resume inside the value, so `--set HF_TOKEN=…` still sees the inner assignment.
            at = value.start();
        }
    }
}

/// Credential files by format: `.netrc`, `.pgpass`, XML elements, Authorization headers.
pub fn files(text: &str, out: &mut Vec<Candidate>) {
    let mut push = |name: &str, range: Range<usize>, header| {
        out.push(Candidate {
            name: name.to_owned(),
            range,
            header,
        })
    };
    if text.contains("machine") || text.contains("login") {
        for c in NETRC.captures_iter(text) {
            push("password", c.get(1).expect("group 1").range(), false);
        }
    }
    // A `.pgpass` line has four colons.
    if text.bytes().filter(|&b| b == b':').count() >= 4 {
        for c in PGPASS.captures_iter(text) {
            push("password", c.get(1).expect("group 1").range(), false);
        }
    }
    if text.contains("</") {
        for c in XML.regex(text).captures_iter(text) {
            let (open, close) = (&c[1], &c[3]);
            if open == close {
                push(open, c.get(2).expect("group 2").range(), false);
            }
        }
    }
    // A directive has a blank between its name and its value.
    if text.contains([' ', '\t']) && super::recognise::has_secret_hint(text) {
        for c in DIRECTIVE.captures_iter(text) {
            let value = (2..=4)
                .find_map(|i| c.get(i))
                .expect("one value group participates");
            push(&c[1], value.range(), false);
        }
    }
    if text.len() >= 20
        && text
            .as_bytes()
            .windows(13)
            .any(|w| w.eq_ignore_ascii_case(b"authorization"))
    {
        for c in AUTH_HEADER.captures_iter(text) {
            push("authorization", c.get(1).expect("group 1").range(), true);
        }
    }
}

/// Values in an argv (a list of words): `--password X`, `--db-pass=X`, `-pX`, `-p X`,
/// `-u user:secret`, `redis-cli -a X`, `NAME=value` before a command or after `export`.
/// Returns `(word index, candidate)` with the range inside that word.
pub fn argv<S: AsRef<str>>(words: &[S]) -> Vec<(usize, Candidate)> {
    let mut out = Vec::new();
    let mut tool = String::new();
    // A list that starts with an option is the arguments of an image's entrypoint.
    let mut expect_cmd = words.first().is_some_and(|w| !w.as_ref().starts_with('-'));
    let mut login = false;
    // The command's words that are not options: `htpasswd -b FILE USER PASS`, `vault login
    // TOKEN`, `mc alias set NAME URL ACCESS SECRET` put a credential at a fixed position.
    let mut positionals: Vec<usize> = Vec::new();
    let mut flags = String::new();
    let mut push = |i: usize, name: &str, range: Range<usize>| {
        out.push((
            i,
            Candidate {
                name: name.to_owned(),
                range,
                header: false,
            },
        ));
    };
    for (i, w) in words.iter().map(AsRef::as_ref).enumerate() {
        let next = words
            .get(i + 1)
            .map(AsRef::as_ref)
            .filter(|n| !n.starts_with('-') && !n.is_empty());
        if matches!(w, "&&" | "||" | ";" | "|" | "then" | "do" | "(" | "{" | "#") {
            if let Some(at) = positional_secret(&tool, &flags, &positionals, words) {
                push(at, "password", 0..words[at].as_ref().len());
            }
            (positionals, flags) = (Vec::new(), String::new());
            expect_cmd = true;
            login = false;
            continue;
        }
        if expect_cmd {
            if let Some((name, _)) = w.split_once('=')
                && !name.is_empty()
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                push(i, name, name.len() + 1..w.len());
                continue;
            }
            if matches!(
                w,
                "export" | "env" | "sudo" | "exec" | "time" | "nohup" | "command"
            ) {
                continue;
            }
            tool = w.rsplit('/').next().unwrap_or(w).to_owned();
            expect_cmd = false;
            continue;
        }
        login |= w == "login";
        if let Some(body) = w.strip_prefix("--") {
            if let Some((at, name, range)) = long_option(words, i, body, next) {
                push(at, name, range);
            }
            continue;
        }
        let Some(short) = w.strip_prefix('-').filter(|s| !s.is_empty()) else {
            positionals.push(i);
            continue;
        };
        flags.push_str(short);
        if let Some((at, range)) = short_option(words, i, short, &tool, login, next) {
            push(at, "password", range);
        }
    }
    if let Some(at) = positional_secret(&tool, &flags, &positionals, words) {
        push(at, "password", 0..words[at].as_ref().len());
    }
    out
}

/// `--opt X` or `--opt=X`: the value, when the option names a credential, or the password of
/// a `user:password` pair option. `(word index, name, range in that word)`.
fn long_option<'w, S: AsRef<str>>(
    words: &'w [S],
    i: usize,
    body: &'w str,
    next: Option<&str>,
) -> Option<(usize, &'w str, Range<usize>)> {
    let w = words[i].as_ref();
    let (opt, inline) = match body.split_once('=') {
        Some((o, _)) => (o, Some(2 + o.len() + 1)),
        None => (body, None),
    };
    let (at, range) = match inline {
        Some(from) => (i, from..w.len()),
        None => (i + 1, 0..next?.len()),
    };
    let text = &words[at].as_ref()[range.clone()];
    if listed(PAIR_OPTIONS, opt) {
        let (user, _) = text.split_once(':')?;
        Some((at, "password", range.start + user.len() + 1..range.end))
    } else if super::recognise::name_kind(opt) != super::recognise::NameKind::None {
        Some((at, opt, range))
    } else {
        None
    }
}

/// `-p X`, `-pX`, `-a X`, `-u user:password`: the password, for the tools that take one that
/// way. `(word index, range in that word)`.
fn short_option<S: AsRef<str>>(
    words: &[S],
    i: usize,
    short: &str,
    tool: &str,
    login: bool,
    next: Option<&str>,
) -> Option<(usize, Range<usize>)> {
    let w = words[i].as_ref();
    // The flag is one character, which need not be one byte (`-\u{2028}`).
    let (flag, glued) = short.split_at(short.chars().next().map_or(0, char::len_utf8));
    let (at, range) = if glued.is_empty() {
        (i + 1, 0..next?.len())
    } else {
        (i, 1 + flag.len()..w.len())
    };
    match flag {
        "p" if listed(GLUED_P, tool) && !glued.is_empty() => Some((at, range)),
        "p" if listed(SPACED_P, tool) || (listed(LOGIN_P, tool) && login) => Some((at, range)),
        "a" if tool == "redis-cli" => Some((at, range)),
        "u" if listed(USER_PAIR, tool) => {
            let text = &words[at].as_ref()[range.clone()];
            let (user, _) = text.split_once(':')?;
            Some((at, range.start + user.len() + 1..range.end))
        }
        _ => None,
    }
}

/// Tools of [`positional_secret`], as a command line names them: one without an option or an
/// assignment is only worth splitting when it runs one (and a command line has a blank).
pub fn has_positional_tool(text: &str) -> bool {
    text.contains(' ')
        && ["htpasswd ", "vault ", "mc "]
            .iter()
            .any(|t| text.contains(t))
}

/// Whether an argv word is a tool of [`positional_secret`].
pub fn is_positional_tool(word: &str) -> bool {
    let tool = word.rsplit('/').next().unwrap_or(word);
    matches!(tool, "htpasswd" | "vault" | "mc")
}

/// The word of a command that its tool takes as a secret by position, if any.
fn positional_secret<S: AsRef<str>>(
    tool: &str,
    flags: &str,
    positionals: &[usize],
    words: &[S],
) -> Option<usize> {
    let word = |k: usize| positionals.get(k).map(|&i| words[i].as_ref());
    let at = match tool {
        // `-b`: the password on the command line; `-n`: no file, to stdout.
        "htpasswd" if flags.contains('b') => {
            positionals.get(if flags.contains('n') { 1 } else { 2 })
        }
        "vault" if word(0) == Some("login") => positionals.get(1),
        "mc" if word(0) == Some("alias") && word(1) == Some("set") => positionals.get(5),
        "mc" if word(0) == Some("config") && word(1) == Some("host") && word(2) == Some("add") => {
            positionals.get(6)
        }
        _ => None,
    };
    at.copied().filter(|&i| !words[i].as_ref().contains('='))
}

/// Shell text split into words (POSIX rules), the argv rules applied, each value located back
/// in `text`. A word that is itself a script (`sh -c '…'`, `bash -lc "…"`) is split again,
/// once.
pub fn shell(text: &str, out: &mut Vec<Candidate>) {
    shell_at(text, 0, 2, out);
}

fn shell_at(text: &str, base: usize, depth: usize, out: &mut Vec<Candidate>) {
    // One command line at a time: a newline ends a command unless escaped (`\` continuation).
    let mut start = 0;
    for (i, _) in text.match_indices('\n') {
        if !text[..i].ends_with('\\') {
            line_at(&text[start..i], base + start, depth, out);
            start = i + 1;
        }
    }
    line_at(&text[start..], base + start, depth, out);
}

fn line_at(text: &str, base: usize, depth: usize, out: &mut Vec<Candidate>) {
    if !text.contains('-') && !text.contains('=') && !has_positional_tool(text) {
        return;
    }
    let words =
        shlex::split(text).unwrap_or_else(|| text.split_whitespace().map(str::to_owned).collect());
    // Where each word starts in `text`, when it is there literally (quotes removed by the
    // split leave the inside literal); else where the search for it stood, for its value.
    let mut offsets = Vec::with_capacity(words.len());
    let mut cursor = 0;
    for w in &words {
        match text[cursor..].find(w.as_str()) {
            Some(at) if !w.is_empty() => {
                offsets.push(Ok(cursor + at));
                cursor += at + w.len();
            }
            _ => offsets.push(Err(cursor)),
        }
    }
    for (i, c) in argv(&words) {
        let start = match offsets[i] {
            Ok(start) => Some(start + c.range.start),
            // `NAME='quoted value'`: the value is literal inside its quotes.
            Err(from) => {
                let value = &words[i][c.range.clone()];
                text[from..]
                    .find(value)
                    .filter(|_| !value.is_empty())
                    .map(|at| from + at)
            }
        };
        if let Some(start) = start {
            out.push(Candidate {
                name: c.name,
                range: base + start..base + start + c.range.len(),
                header: false,
            });
        }
    }
    if depth > 1 {
        for (w, at) in words.iter().zip(&offsets) {
            if let Ok(at) = at
                && w.contains(char::is_whitespace)
                && w.contains('-')
            {
                shell_at(w, base + at, depth - 1, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(name, value)` of every candidate of the shell extractor.
    fn shell_values(text: &str) -> Vec<(String, &str)> {
        let mut out = Vec::new();
        shell(text, &mut out);
        out.into_iter().map(|c| (c.name, &text[c.range])).collect()
    }

    #[test]
    fn options_of_characters_wider_than_a_byte_are_cut_on_boundaries() {
        // Found by the injection property: `-\u{2028}` was split inside its character.
        for words in [
            &["mysql", "-\u{2028}"][..],
            &["mysql", "-é-FAKEpw1"],
            &["mysql", "-pé-FAKEpw1"],
            &["train", "--é=x"],
            &["curl", "-ué:FAKEpw1"],
        ] {
            for (i, c) in argv(words) {
                assert!(words[i].get(c.range.clone()).is_some(), "{words:?}: {c:?}");
            }
        }
        let found = argv(&["mysql", "-pé-FAKEpw1"]);
        assert_eq!(found.len(), 1);
        assert_eq!(&"-pé-FAKEpw1"[found[0].1.range.clone()], "é-FAKEpw1");
    }

    #[test]
    fn shell_table() {
        let table: &[(&str, &[(&str, &str)])] = &[
            (
                "train --password FAKEpw1 --epochs 3",
                &[("password", "FAKEpw1")],
            ),
            ("train --db-pass=FAKEpw1", &[("db-pass", "FAKEpw1")]),
            ("mysql -uroot -pFAKEpw1 db", &[("password", "FAKEpw1")]),
            ("mysql -u root -p db", &[]),
            (
                "curl -u admin:FAKEpw1 https://h",
                &[("password", "FAKEpw1")],
            ),
            (
                "curl --user 'admin:FAKE pw' https://h",
                &[("password", "FAKE pw")],
            ),
            ("sshpass -p 'FAKEpw1' ssh h", &[("password", "FAKEpw1")]),
            (
                "docker login -u u -p FAKEpw1 nvcr.io",
                &[("password", "FAKEpw1")],
            ),
            ("docker run -p 8080:80 nginx", &[]),
            ("redis-cli -h r -a FAKEpw1 ping", &[("password", "FAKEpw1")]),
            (
                "PGPASSWORD=FAKEpw1 psql -h db",
                &[("PGPASSWORD", "FAKEpw1")],
            ),
            ("export API_TOKEN='FAKE0tok'", &[("API_TOKEN", "FAKE0tok")]),
            ("set -e; x --token --verbose", &[]),
            (
                "set -e\ndocker login -u u \\\n  -p FAKEpw1 r",
                &[("password", "FAKEpw1")],
            ),
            (
                "sh -c \"skopeo copy --src-creds u:FAKEpw1 a b\"",
                &[("password", "FAKEpw1")],
            ),
        ];
        for (text, want) in table {
            let want: Vec<(String, &str)> = want.iter().map(|(n, v)| (n.to_string(), *v)).collect();
            assert_eq!(shell_values(text), want, "{text}");
        }
    }

    #[test]
    fn argv_pairs_cross_elements() {
        let words = ["--token", "FAKE0tok", "--epochs", "3"];
        let got = argv(&words);
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].0, got[0].1.range.clone()), (1, 0..8));
    }

    #[test]
    fn files_table() {
        let table: &[(&str, &[(&str, &str)])] = &[
            (
                "machine api.example.com login tao password FAKEpw1\n",
                &[("password", "FAKEpw1")],
            ),
            (
                "db.internal:5432:jobs:tao:FAKEpw1\n",
                &[("password", "FAKEpw1")],
            ),
            (
                "<server><id>r</id><password>FAKEpw1</password></server>",
                &[("id", "r"), ("password", "FAKEpw1")],
            ),
            (
                "curl -H 'Authorization: Bearer FAKEtok0FAKE' x",
                &[("authorization", "FAKEtok0FAKE")],
            ),
        ];
        for (text, want) in table {
            let mut out = Vec::new();
            files(text, &mut out);
            let got: Vec<(String, &str)> =
                out.into_iter().map(|c| (c.name, &text[c.range])).collect();
            let want: Vec<(String, &str)> = want.iter().map(|(n, v)| (n.to_string(), *v)).collect();
            assert_eq!(got, want, "{text}");
        }
    }
}
