//! e2fsck.conf: the `[options]` pfsck takes from e2fsck's configuration
//! file, read where e2fsck reads it (`E2FSCK_CONFIG`, else
//! /etc/e2fsck.conf), so that one file set up for a machine's boot checks
//! governs both. Read here and passed to the check in its options; the
//! check never reads files or the environment.
//!
//! The format is the profile format of e2fsck's library: `[stanza]`
//! headers, `tag = value` relations, `tag = {` ... `}` subsections,
//! comment lines starting with `;` or `#`, values in double quotes with
//! `\n`, `\t`, `\b` and `\\` escapes. Where a tag is given twice the first
//! counts, as in e2fsck.

use crate::engine::TimeTrust;
use crate::engine::clock::TIME_FUDGE;
use std::path::PathBuf;

/// The file e2fsck reads when `E2FSCK_CONFIG` names none.
const DEFAULT_PATH: &str = "/etc/e2fsck.conf";

/// The top-level relations of a configuration file: (stanza, tag, value),
/// in file order. Relations inside subsections are left out: no option
/// pfsck takes lives there.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conf {
    relations: Vec<(String, String, String)>,
}

/// Where e2fsck reads its configuration.
fn path() -> PathBuf {
    std::env::var_os("E2FSCK_CONFIG").map_or_else(|| PathBuf::from(DEFAULT_PATH), PathBuf::from)
}

/// The configuration in effect: empty (every default) when the file is
/// missing or unreadable, as e2fsck goes on without it.
pub fn load() -> Conf {
    std::fs::read(path())
        .map(|b| parse(&String::from_utf8_lossy(&b)))
        .unwrap_or_default()
}

/// Parses a configuration file's text. Lines it cannot read are skipped
/// (e2fsck reports a syntax error and goes on with what it read).
pub fn parse(text: &str) -> Conf {
    let mut conf = Conf::default();
    let mut stanza: Option<String> = None;
    // Subsections open below the stanza's top level.
    let mut depth = 0usize;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            if let Some(end) = rest.find(']') {
                stanza = Some(rest[..end].to_string());
                depth = 0;
            }
            continue;
        }
        if line.starts_with('}') {
            depth = depth.saturating_sub(1);
            continue;
        }
        let Some((tag, value)) = line.split_once('=') else {
            continue;
        };
        let (tag, value) = (tag.trim(), value.trim());
        if value.starts_with('{') {
            depth += 1;
            continue;
        }
        if let (Some(s), 0, false) = (&stanza, depth, tag.is_empty()) {
            conf.relations
                .push((s.clone(), unquote(tag), unquote(value)));
        }
    }
    conf
}

/// A value as written, or the string a double-quoted one stands for.
fn unquote(v: &str) -> String {
    let Some(body) = v.strip_prefix('"') else {
        return v.to_string();
    };
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('b') => out.push('\u{8}'),
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    out
}

/// A boolean as e2fsck's library reads one (any case); None for anything
/// else, which leaves the default.
fn boolean(v: &str) -> Option<bool> {
    const YES: [&str; 6] = ["y", "yes", "true", "t", "1", "on"];
    const NO: [&str; 6] = ["n", "no", "false", "nil", "0", "off"];
    let is = |list: &[&str]| list.iter().any(|w| w.eq_ignore_ascii_case(v));
    if is(&YES) {
        Some(true)
    } else if is(&NO) {
        Some(false)
    } else {
        None
    }
}

impl Conf {
    /// The first value of `tag` in `stanza`.
    fn get(&self, stanza: &str, tag: &str) -> Option<&str> {
        self.relations
            .iter()
            .find(|(s, t, _)| s == stanza && t == tag)
            .map(|(_, _, v)| v.as_str())
    }

    /// `[options] tag` as a boolean, `default` when absent or not one.
    fn option(&self, tag: &str, default: bool) -> bool {
        self.get("options", tag)
            .and_then(boolean)
            .unwrap_or(default)
    }

    /// How far the superblock's times are trusted: `broken_system_clock`
    /// (off by default) and `accept_time_fudge` (on by default; its old
    /// name `buggy_init_scripts` wins where both are given, as in e2fsck).
    pub fn time_trust(&self) -> TimeTrust {
        let fudge = self.option("accept_time_fudge", true);
        let fudge = self.option("buggy_init_scripts", fudge);
        TimeTrust {
            broken_clock: self.option("broken_system_clock", false),
            fudge: if fudge { TIME_FUDGE } else { 0 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_without_a_file() {
        let t = parse("").time_trust();
        assert_eq!(t, TimeTrust::default());
        assert_eq!(t.fudge, TIME_FUDGE);
        assert!(!t.broken_clock);
    }

    #[test]
    fn options_stanza_is_read() {
        let text = "# boot checks\n[options]\n\tbroken_system_clock = true\n\
                    accept_time_fudge = \"off\"\n; comment\n";
        let t = parse(text).time_trust();
        assert!(t.broken_clock);
        assert_eq!(t.fudge, 0);
    }

    #[test]
    fn other_stanzas_and_subsections_do_not_count() {
        let text = "[problems]\nbroken_system_clock = 1\n0x000031 = {\n\
                    broken_system_clock = 1\n}\n[options]\nx = {\n\
                    accept_time_fudge = false\n}\n";
        assert_eq!(parse(text).time_trust(), TimeTrust::default());
    }

    #[test]
    fn old_name_wins_and_first_value_counts() {
        let text = "[options]\naccept_time_fudge = no\nbuggy_init_scripts = YES\n\
                    broken_system_clock = 0\nbroken_system_clock = 1\n";
        let t = parse(text).time_trust();
        assert_eq!(t.fudge, TIME_FUDGE);
        assert!(!t.broken_clock);
    }

    #[test]
    fn a_bad_boolean_keeps_the_default() {
        let t = parse("[options]\naccept_time_fudge = maybe\n").time_trust();
        assert_eq!(t.fudge, TIME_FUDGE);
    }

    #[test]
    fn quoted_values_unescape() {
        assert_eq!(unquote("\"a\\tb\\\\c\" trailing"), "a\tb\\c");
        assert_eq!(unquote("plain"), "plain");
    }
}
