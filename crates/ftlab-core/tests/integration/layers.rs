//! The core's modules form layers (see the crate docs): a module may name, through a
//! `crate::` or `super::` path, only modules of its own layer or an earlier one. This test
//! reads every source file under `src/`, resolves each such path (use statements, inline
//! paths, use groups, `super` chains out of inline modules) to the top-level module it
//! enters, and fails naming the file, the line and the edge that goes up a layer. Unit
//! tests (`#[cfg(test)]` modules) are exempt: they may build what they test from the top
//! (the host stacks' tests assemble a `run::config::Config`); the library itself may not.

use std::path::{Path, PathBuf};

/// The layers, lowest first; every top-level module of the crate must be in one.
const LAYERS: &[&[&str]] = &[
    &["units", "rng", "divide", "error", "request"],
    &["io"],
    &["device"],
    &["ftl"],
    &["controller"],
    &["host"],
    &["run"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Path, // `::`
    Open,
    Close,
    Comma,
    Other(char),
}

/// The tokens of Rust source that matter to paths, each with its line; comments, string
/// and character literals are skipped (a path in a doc comment is no dependency).
fn tokens(src: &str) -> Vec<(Tok, usize)> {
    let s: Vec<char> = src.chars().collect();
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    let at = |i: usize| s.get(i).copied().unwrap_or('\0');
    while i < s.len() {
        let c = s[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            '/' if at(i + 1) == '/' => {
                while i < s.len() && s[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                let mut depth = 0;
                loop {
                    if at(i) == '/' && at(i + 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if at(i) == '*' && at(i + 1) == '/' {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else if i >= s.len() {
                        break;
                    } else {
                        line += usize::from(s[i] == '\n');
                        i += 1;
                    }
                }
            }
            'r' | 'b' if is_raw_string(&s, i) => {
                // r"..", r#".."#, br#".."#: no escapes; ends at the quote and its hashes.
                while s[i] != '#' && s[i] != '"' {
                    i += 1;
                }
                let hashes = s[i..].iter().take_while(|&&c| c == '#').count();
                i += hashes + 1;
                loop {
                    if i >= s.len() {
                        break;
                    }
                    if s[i] == '"' && s[i + 1..].iter().take_while(|&&c| c == '#').count() >= hashes
                    {
                        i += 1 + hashes;
                        break;
                    }
                    line += usize::from(s[i] == '\n');
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while i < s.len() && s[i] != '"' {
                    if s[i] == '\\' {
                        i += 1;
                    }
                    line += usize::from(at(i) == '\n');
                    i += 1;
                }
                i += 1;
            }
            // A character literal ('a', '\n', '\u{..}'), not a lifetime ('a).
            '\'' if at(i + 2) == '\'' || at(i + 1) == '\\' => {
                i += 1;
                while i < s.len() && s[i] != '\'' {
                    if s[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                    i += 1;
                }
                let word: String = s[start..i].iter().collect();
                // b'x' and b"..": a byte literal's prefix is no identifier.
                if word == "b" && (at(i) == '\'' || at(i) == '"') {
                    continue;
                }
                out.push((Tok::Ident(word), line));
            }
            ':' if at(i + 1) == ':' => {
                out.push((Tok::Path, line));
                i += 2;
            }
            '{' => {
                out.push((Tok::Open, line));
                i += 1;
            }
            '}' => {
                out.push((Tok::Close, line));
                i += 1;
            }
            ',' => {
                out.push((Tok::Comma, line));
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            c => {
                out.push((Tok::Other(c), line));
                i += 1;
            }
        }
    }
    out
}

fn is_raw_string(s: &[char], i: usize) -> bool {
    if i > 0 && (s[i - 1].is_alphanumeric() || s[i - 1] == '_') {
        return false;
    }
    let j = if s[i] == 'b' && s.get(i + 1) == Some(&'r') {
        i + 2
    } else if s[i] == 'r' {
        i + 1
    } else {
        return false;
    };
    let k = j + s[j..].iter().take_while(|&&c| c == '#').count();
    s.get(k) == Some(&'"')
}

/// A path out of the crate root or out of the file's module: the top-level module it
/// enters (or the root item it names), and its line.
#[derive(Debug)]
struct Edge {
    target: String,
    line: usize,
}

/// What one file says about paths: its `crate::`/`super::` edges outside test code, and
/// the child modules it declares under `#[cfg(test)]` in their own files.
#[derive(Debug, Default)]
struct Scan {
    edges: Vec<Edge>,
    test_children: Vec<String>,
}

/// Scans the tokens of the file whose module path is `module` (`["ftl", "leaftl",
/// "table"]` for `src/ftl/leaftl/table.rs`). Test modules are exempt: a unit test may
/// assemble a whole run to exercise its layer, a dependency of the test build only.
fn scan(toks: &[(Tok, usize)], module: &[String]) -> Scan {
    let ident = |i: usize| match toks.get(i) {
        Some((Tok::Ident(w), _)) => Some(w.as_str()),
        _ => None,
    };
    let is = |i: usize, t: Tok| toks.get(i).map(|(k, _)| *k == t).unwrap_or(false);
    let cfg_test = |i: usize| {
        let want = [
            Tok::Other('#'),
            Tok::Other('['),
            Tok::Ident("cfg".into()),
            Tok::Other('('),
            Tok::Ident("test".into()),
            Tok::Other(')'),
            Tok::Other(']'),
        ];
        want.iter().enumerate().all(|(k, t)| is(i + k, t.clone()))
    };
    let mut out = Scan::default();
    // Inline modules (`mod tests { .. }`) deepen the module path until their brace closes;
    // each remembers the depth it opened at and whether it is test code.
    let mut inline: Vec<(String, usize, bool)> = Vec::new();
    let (mut depth, mut test_attr) = (0usize, false);
    let mut i = 0;
    while i < toks.len() {
        if cfg_test(i) {
            test_attr = true;
            i += 7;
            continue;
        }
        let in_test = inline.iter().any(|&(_, _, t)| t);
        match &toks[i].0 {
            Tok::Open => {
                depth += 1;
                test_attr = false;
            }
            Tok::Other(';') => test_attr = false,
            Tok::Close => {
                depth -= 1;
                if inline.last().map(|&(_, d, _)| d) == Some(depth) {
                    inline.pop();
                }
            }
            Tok::Ident(w) if w == "mod" => {
                if let Some(name) = ident(i + 1) {
                    if is(i + 2, Tok::Open) {
                        inline.push((name.to_string(), depth, test_attr));
                    } else if test_attr || in_test {
                        out.test_children.push(name.to_string());
                    }
                }
                test_attr = false;
            }
            Tok::Ident(w) if (w == "crate" || w == "super") && !(i > 0 && is(i - 1, Tok::Path)) => {
                let line = toks[i].1;
                let mut base: Vec<String> = module
                    .iter()
                    .cloned()
                    .chain(inline.iter().map(|(m, _, _)| m.clone()))
                    .collect();
                let mut j = i;
                if w == "crate" {
                    base.clear();
                } else {
                    // super(::super)*
                    base.pop();
                    while is(j + 1, Tok::Path) && ident(j + 2) == Some("super") {
                        base.pop();
                        j += 2;
                    }
                }
                if !is(j + 1, Tok::Path) {
                    i += 1;
                    continue;
                }
                let mut found = Vec::new();
                if let Some(top) = base.first() {
                    found.push((top.clone(), line));
                } else if let Some(name) = ident(j + 2) {
                    found.push((name.to_string(), line));
                } else if is(j + 2, Tok::Open) {
                    // A group at the root: the first segment of each of its items.
                    let (mut k, mut level, mut first) = (j + 3, 1, true);
                    while k < toks.len() && level > 0 {
                        match &toks[k].0 {
                            Tok::Open => level += 1,
                            Tok::Close => level -= 1,
                            Tok::Comma if level == 1 => first = true,
                            Tok::Ident(name) if level == 1 && first => {
                                found.push((name.clone(), toks[k].1));
                                first = false;
                            }
                            _ => {}
                        }
                        k += 1;
                    }
                }
                if !in_test {
                    out.edges.extend(
                        found
                            .into_iter()
                            .map(|(target, line)| Edge { target, line }),
                    );
                }
                i = j + 1;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The module path of a source file relative to `src/`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The names `lib.rs` re-exports at the root (`pub use error::{Error, Result};`), with the
/// module they come from: `crate::Error` enters `error`.
fn root_exports(lib: &str) -> Vec<(String, String)> {
    let toks = tokens(lib);
    let mut out = Vec::new();
    for i in 0..toks.len().saturating_sub(2) {
        if let [(Tok::Ident(u), _), (Tok::Ident(m), _), (Tok::Path, _)] = &toks[i..i + 3] {
            if u == "use" {
                // The names up to the statement's `;`.
                for (t, _) in toks[i + 3..]
                    .iter()
                    .take_while(|(t, _)| *t != Tok::Other(';'))
                {
                    if let Tok::Ident(name) = t {
                        out.push((name.clone(), m.clone()));
                    }
                }
            }
        }
    }
    out
}

/// Every edge that goes up a layer or names a module no layer holds, as
/// `file:line: from -> to`.
fn violations(src: &Path) -> Vec<String> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let exports = root_exports(&lib);
    let mut files = Vec::new();
    sources(src, &mut files);
    files.sort();
    let scans: Vec<(PathBuf, Vec<String>, Scan)> = files
        .into_iter()
        .map(|file| {
            let rel = file.strip_prefix(src).unwrap().to_path_buf();
            let module = module_path(&rel);
            let scan = scan(&tokens(&std::fs::read_to_string(&file).unwrap()), &module);
            (rel, module, scan)
        })
        .collect();
    // Modules in files of their own declared under `#[cfg(test)]`, and all below them.
    let test_modules: Vec<Vec<String>> = scans
        .iter()
        .flat_map(|(_, module, scan)| {
            scan.test_children.iter().map(move |child| {
                let mut m = module.clone();
                m.push(child.clone());
                m
            })
        })
        .collect();
    let mut bad = Vec::new();
    for (rel, module, scan) in &scans {
        let Some(from) = module.first() else {
            continue; // lib.rs: the root declares the layers
        };
        let Some(from_layer) = layer(from) else {
            bad.push(format!(
                "src/{}: module `{from}` is in no layer",
                rel.display()
            ));
            continue;
        };
        if test_modules.iter().any(|t| module.starts_with(t)) {
            continue;
        }
        for e in &scan.edges {
            let target = exports
                .iter()
                .find(|(name, _)| *name == e.target)
                .map(|(_, m)| m.as_str())
                .unwrap_or(&e.target);
            match layer(target) {
                Some(l) if l <= from_layer => {}
                Some(_) => bad.push(format!(
                    "src/{}:{}: `{from}` uses `{target}`, a higher layer",
                    rel.display(),
                    e.line
                )),
                None => bad.push(format!(
                    "src/{}:{}: `{from}` uses `crate::{}`, in no layer",
                    rel.display(),
                    e.line,
                    e.target
                )),
            }
        }
    }
    bad
}

#[test]
fn no_module_uses_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let bad = violations(&src);
    assert!(
        bad.is_empty(),
        "the core's layers are {LAYERS:?}, lowest first; these paths go up:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_checker_finds_planted_edges() {
    let module = |p: &str| module_path(Path::new(p));
    let found = |src: &str, file: &str| -> Vec<(String, usize)> {
        scan(&tokens(src), &module(file))
            .edges
            .into_iter()
            .map(|e| (e.target, e.line))
            .collect()
    };
    // A use statement, an inline path, a root group and a `super` chain out of the crate.
    let src = "use crate::ftl::Ftl;\n\
               fn f() { let _ = crate::run::api::x(); }\n\
               use crate::{controller::a,\n host::b};\n\
               use super::super::host::c;\n";
    assert_eq!(
        found(src, "device/nand.rs"),
        [
            ("ftl".into(), 1),
            ("run".into(), 2),
            ("controller".into(), 3),
            ("host".into(), 4),
            ("host".into(), 5)
        ]
    );
    // `super` from an inline test module stays in its file's module; comments, strings
    // and raw strings are not code.
    let src = "// crate::run\n/* crate::run */\nconst S: &str = \"crate::run\";\n\
               const R: &str = r#\"crate::run \"x\" \"#;\nconst C: char = '\"';\n\
               mod tests { use super::Flash; use super::super::blocks::B; }\n";
    assert_eq!(
        found(src, "device/nand.rs"),
        [("device".into(), 6), ("device".into(), 6)]
    );
    // Test modules, inline or in their own file, are exempt; the code after them is not.
    let src = "#[cfg(test)]\nmod tests { use crate::run::x; }\n\
               #[cfg(test)]\npub(crate) mod more;\nuse crate::host::y;\n";
    assert_eq!(found(src, "device/nand.rs"), [("host".into(), 5)]);
    assert_eq!(
        scan(&tokens(src), &module("device/nand.rs")).test_children,
        ["more"]
    );
    // A top-level file's `super` names the root's modules.
    assert_eq!(
        found("fn f() { super::run::x(); }", "units.rs"),
        [("run".into(), 1)]
    );
    // Root re-exports resolve to their module.
    assert_eq!(
        root_exports("pub mod error;\npub use error::{Error, Result};\n"),
        [
            ("Error".to_string(), "error".to_string()),
            ("Result".to_string(), "error".to_string())
        ]
    );
}
