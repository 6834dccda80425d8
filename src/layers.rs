//! The layer matrix, enforced: every top-level module a module of src/
//! names outside test code (`crate::X`, `use crate::{X, ..}`, or a
//! `super::` chain climbing to the crate root) must be one its row of
//! [`MATRIX`] allows, and docs/ARCHITECTURE.md must show the same matrix.
//! Cargo would enforce this with crates; until the crate split, this test
//! does.
//!
//! The scan is lexical: comments, string and character literals are blanked
//! first, then `#[cfg(test)]` items (and the files of `#[cfg(test)] mod
//! x;`) are skipped. Files are found by following `mod x;` from lib.rs, and
//! every .rs file under src/ must be reached or be test code, so a module
//! the walk misses fails too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module and the modules it may use besides itself. A
/// module sees only those below it; `check` does not see `store` (a check
/// never writes: its views stage into `volume::stage::Blocks`), `fs` does
/// no I/O (no `newfile`), and `repair` and `online` do not see each other.
pub(crate) const MATRIX: &[(&str, &[&str])] = &[
    (
        "cli",
        &[
            "repair", "online", "fix", "check", "volume", "store", "io", "engine", "fs", "narrow",
            "newfile", "error",
        ],
    ),
    (
        "repair",
        &[
            "fix", "check", "volume", "store", "io", "engine", "fs", "narrow", "newfile", "error",
        ],
    ),
    (
        "online",
        &[
            "check", "volume", "store", "io", "engine", "fs", "narrow", "newfile", "error",
        ],
    ),
    (
        "fix",
        &[
            "check", "volume", "store", "io", "engine", "fs", "narrow", "newfile", "error",
        ],
    ),
    (
        "check",
        &["volume", "io", "engine", "fs", "narrow", "newfile", "error"],
    ),
    (
        "volume",
        &["store", "io", "engine", "fs", "narrow", "newfile", "error"],
    ),
    (
        "store",
        &["io", "engine", "fs", "narrow", "newfile", "error"],
    ),
    ("io", &["engine", "fs", "narrow", "newfile", "error"]),
    ("engine", &["narrow", "newfile", "error"]),
    ("fs", &["narrow", "error"]),
    ("narrow", &[]),
    ("newfile", &[]),
    ("error", &[]),
];

/// A use of another top-level module: the file, its line, the user and
/// the module used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Use {
    file: String,
    line: usize,
    from: String,
    to: String,
}

/// Blanks comments, string and character literals (newlines kept, so
/// lines still count), leaving only code to scan.
fn code_only(text: &str) -> Vec<char> {
    let c: Vec<char> = text.chars().collect();
    let mut out = c.clone();
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for o in &mut out[from..to.min(c.len())] {
            if *o != '\n' {
                *o = ' ';
            }
        }
    };
    let mut i = 0;
    while i < c.len() {
        let start = i;
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (i == 0 || !ident(c[i - 1]) || (c[i - 1] == 'b' && (i < 2 || !ident(c[i - 2]))))
            && matches!(c.get(i + 1), Some('"' | '#'))
        {
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            i = j + 1;
            while i < c.len() {
                if c[i] == '"' && (1..=hashes).all(|h| c.get(i + h) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c[i] == '\'' && c.get(i + 1) == Some(&'\\') {
            i += 2;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            i += 3;
        } else {
            // A lifetime's quote, or any other code.
            i += 1;
            continue;
        }
        blank(&mut out, start, i);
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

fn tokens(code: &[char]) -> Vec<(Tok, usize)> {
    let mut toks = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < code.len() {
        let ch = code[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' {
            let s = i;
            while i < code.len() && (code[i].is_alphanumeric() || code[i] == '_') {
                i += 1;
            }
            toks.push((Tok::Ident(code[s..i].iter().collect()), line));
        } else if ch == ':' && code.get(i + 1) == Some(&':') {
            toks.push((Tok::PathSep, line));
            i += 2;
        } else {
            toks.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    toks
}

fn is_ident(t: Option<&(Tok, usize)>, name: &str) -> bool {
    matches!(t, Some((Tok::Ident(s), _)) if s == name)
}

fn is_punct(t: Option<&(Tok, usize)>, ch: char) -> bool {
    matches!(t, Some((Tok::Punct(p), _)) if *p == ch)
}

/// The end (exclusive) of the bracketed group opening at `i`.
fn group_end(toks: &[(Tok, usize)], i: usize, open: char, close: char) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j < toks.len() {
        if is_punct(toks.get(j), open) {
            depth += 1;
        } else if is_punct(toks.get(j), close) {
            depth -= 1;
            if depth == 0 {
                return j + 1;
            }
        }
        j += 1;
    }
    toks.len()
}

/// Is the attribute opening at `i` (`#`) exactly `#[cfg(test)]`? Its end.
fn attribute(toks: &[(Tok, usize)], i: usize) -> Option<(bool, usize)> {
    if !is_punct(toks.get(i), '#') || !is_punct(toks.get(i + 1), '[') {
        return None;
    }
    let end = group_end(toks, i + 1, '[', ']');
    let body: Vec<&Tok> = toks[i + 2..end - 1].iter().map(|(t, _)| t).collect();
    let test = body.len() == 4
        && body[0] == &Tok::Ident("cfg".into())
        && body[1] == &Tok::Punct('(')
        && body[2] == &Tok::Ident("test".into())
        && body[3] == &Tok::Punct(')');
    Some((test, end))
}

/// The end of the item starting at `i`: its `;`, or its block's `}`.
fn item_end(toks: &[(Tok, usize)], mut i: usize) -> usize {
    while let Some((_, end)) = attribute(toks, i) {
        i = end;
    }
    while i < toks.len() {
        if is_punct(toks.get(i), ';') {
            return i + 1;
        }
        if is_punct(toks.get(i), '{') {
            return group_end(toks, i, '{', '}');
        }
        i += 1;
    }
    toks.len()
}

/// The top-level modules named at `i` (just after `crate::` or a `super::`
/// chain reaching the root): one name, or the first name of each item of
/// a `{..}` group.
fn named_at(toks: &[(Tok, usize)], i: usize) -> Vec<(String, usize)> {
    match toks.get(i) {
        Some((Tok::Ident(s), line)) => vec![(s.clone(), *line)],
        Some((Tok::Punct('{'), _)) => {
            let end = group_end(toks, i, '{', '}');
            let mut names = Vec::new();
            let mut depth = 0;
            let mut expect = true;
            for (t, line) in &toks[i..end] {
                match t {
                    Tok::Punct('{') => {
                        depth += 1;
                        expect = depth == 1;
                    }
                    Tok::Punct('}') => depth -= 1,
                    Tok::Punct(',') if depth == 1 => expect = true,
                    Tok::Ident(s) if expect && depth == 1 => {
                        names.push((s.clone(), *line));
                        expect = false;
                    }
                    _ => expect = false,
                }
            }
            names
        }
        _ => Vec::new(),
    }
}

/// What one file's code names: the top-level modules it uses (with their
/// lines) and the modules it declares out of line (`mod x;`), test code
/// left out. `depth`: how far below the crate root the file's module is.
fn scan(text: &str, depth: usize) -> (Vec<(String, usize)>, Vec<String>) {
    let toks = tokens(&code_only(text));
    let mut used = Vec::new();
    let mut children = Vec::new();
    // The inline modules open around the scan: each `{` says whether it
    // opened one.
    let mut braces: Vec<bool> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if let Some((test, end)) = attribute(&toks, i) {
            i = if test { item_end(&toks, end) } else { end };
            continue;
        }
        let here = depth + braces.iter().filter(|m| **m).count();
        let after_sep = i > 0 && toks[i - 1].0 == Tok::PathSep;
        match &toks[i].0 {
            Tok::Ident(s) if s == "mod" => {
                if let Some((Tok::Ident(name), _)) = toks.get(i + 1) {
                    if is_punct(toks.get(i + 2), ';') {
                        children.push(name.clone());
                    } else if is_punct(toks.get(i + 2), '{') {
                        braces.push(true);
                        i += 3;
                        continue;
                    }
                }
            }
            Tok::Ident(s)
                if s == "crate"
                    && !after_sep
                    && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::PathSep) =>
            {
                used.extend(named_at(&toks, i + 2));
            }
            Tok::Ident(s) if s == "super" && !after_sep => {
                let mut k = 0;
                let mut j = i;
                while is_ident(toks.get(j), "super")
                    && toks.get(j + 1).map(|t| &t.0) == Some(&Tok::PathSep)
                {
                    k += 1;
                    j += 2;
                }
                if k == here {
                    used.extend(named_at(&toks, j));
                }
                i = j.max(i + 1);
                continue;
            }
            Tok::Punct('{') => braces.push(false),
            Tok::Punct('}') => {
                braces.pop();
            }
            _ => {}
        }
        i += 1;
    }
    (used, children)
}

/// The file of module `name` declared in `parent` (`lib.rs`, a `mod.rs` or
/// a `name.rs` whose children sit in `name/`).
fn child_file(parent: &Path, name: &str) -> Option<PathBuf> {
    let dir = match parent.file_name().and_then(|f| f.to_str()) {
        Some("lib.rs" | "mod.rs") => parent.parent()?.to_path_buf(),
        _ => parent.with_extension(""),
    };
    [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// Every use of one top-level module by another in the library's non-test
/// code under `src`, and the .rs files the walk did not reach (test code,
/// `main.rs`, or a file it should have).
pub(crate) fn uses(src: &Path) -> (Vec<Use>, BTreeSet<PathBuf>) {
    let mut found = Vec::new();
    let mut reached = BTreeSet::new();
    // (file, its top-level module, its depth below the root)
    let mut todo = vec![(src.join("lib.rs"), String::new(), 0usize)];
    while let Some((file, top, depth)) = todo.pop() {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let (used, children) = scan(&text, depth);
        for name in children {
            let Some(f) = child_file(&file, &name) else {
                continue;
            };
            let t = if depth == 0 { name } else { top.clone() };
            todo.push((f, t, depth + 1));
        }
        let rel = file
            .strip_prefix(src)
            .unwrap_or(&file)
            .display()
            .to_string();
        if depth > 0 {
            found.extend(
                used.into_iter()
                    .filter(|(to, _)| *to != top)
                    .map(|(to, line)| Use {
                        file: rel.clone(),
                        line,
                        from: top.clone(),
                        to,
                    }),
            );
        }
        reached.insert(file);
    }
    let mut all = BTreeSet::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && !reached.contains(&p) {
                all.insert(p);
            }
        }
    }
    (found, all)
}

/// The uses `MATRIX` forbids, as messages.
pub(crate) fn forbidden(uses: &[Use]) -> Vec<String> {
    let rows: BTreeMap<&str, &[&str]> = MATRIX.iter().copied().collect();
    uses.iter()
        .filter_map(|u| {
            let row = rows.get(u.from.as_str());
            let known = rows.contains_key(u.to.as_str());
            let allowed = row.is_some_and(|r| r.contains(&u.to.as_str()));
            (!allowed).then(|| {
                let why = if row.is_none() {
                    "the user is not in the matrix"
                } else if !known {
                    "not a module of the matrix"
                } else {
                    "a use the layer matrix forbids"
                };
                format!("src/{}:{}: {} uses {}: {why}", u.file, u.line, u.from, u.to)
            })
        })
        .collect()
}

/// The matrix docs/ARCHITECTURE.md shows under "## Layers": rows
/// "| `module` | `a`, `b` |" ("nothing" for none).
fn documented(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let names = |cell: &str| -> BTreeSet<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    doc.split("\n## ")
        .find(|s| s.starts_with("Layers\n"))
        .unwrap_or("")
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            let mut m = names(cells.get(1)?).into_iter();
            let (module, None) = (m.next()?, m.next()) else {
                return None;
            };
            (cells.len() == 4).then(|| (module, names(cells[2])))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn every_use_of_another_module_is_one_the_matrix_allows() {
        let (uses, unreached) = uses(&root().join("src"));
        assert!(uses.len() > 100, "the scan found only {} uses", uses.len());
        let bad = forbidden(&uses);
        assert!(bad.is_empty(), "layer violations:\n{}", bad.join("\n"));
        // Only test code and the binary's root are left out.
        let src = root().join("src");
        let expected: BTreeSet<PathBuf> = ["main.rs", "testfs.rs", "layers.rs"]
            .iter()
            .map(|f| src.join(f))
            .collect();
        let unexplained: Vec<_> = unreached
            .iter()
            .filter(|p| !expected.contains(*p) && !p.starts_with(src.join("check/unit")))
            .collect();
        assert!(
            unexplained.is_empty(),
            "files the walk missed: {unexplained:?}"
        );
    }

    #[test]
    fn the_documented_matrix_is_the_enforced_one() {
        let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
        let shown = documented(&doc);
        let enforced: BTreeMap<String, BTreeSet<String>> = MATRIX
            .iter()
            .map(|(m, r)| (m.to_string(), r.iter().map(|s| s.to_string()).collect()))
            .collect();
        assert_eq!(shown, enforced);
    }

    #[test]
    fn the_scan_sees_code_and_skips_comments_strings_and_tests() {
        let text = r##"
            // crate::cli in a comment
            /* crate::cli /* nested */ crate::cli */
            use crate::{fs::num::Ino, io};
            const S: &str = "crate::cli";
            const R: &str = r#"crate::cli"#;
            const C: char = '{';
            fn f<'a>(x: &'a str) { crate::engine::pool::run(x); super::store::Overlay::new(); }
            #[cfg(test)]
            mod tests { use crate::cli; }
            #[cfg(test)]
            use crate::cli;
            mod inner { fn g() { super::super::volume::Fs::open(); } }
            #[cfg(test)]
            mod unit;
            mod pass1;
        "##;
        let (used, children) = scan(text, 1);
        let names: Vec<&str> = used.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["fs", "io", "engine", "store", "volume"]);
        assert_eq!(children, ["pass1"]);
        let bad = forbidden(&[Use {
            file: "check/x.rs".into(),
            line: 3,
            from: "check".into(),
            to: "store".into(),
        }]);
        assert_eq!(bad.len(), 1);
    }
}
