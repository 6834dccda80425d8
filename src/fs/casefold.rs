//! Case-insensitive names (the `casefold` feature, encoding utf8-12.1).
//!
//! A casefolded directory hashes and compares names by their "NFD +
//! case fold" form, as the kernel's utf8 tables (and e2fsprogs', the same
//! tables) compute it: full case folding (CaseFolding.txt, statuses C and
//! F), canonical decomposition and canonical ordering, with the default
//! ignorable code points removed. A name that is not well-formed UTF-8
//! has no folded form: it hashes as its bytes and equals no other name.
//!
//! The folding comes from the `caseless` and `unicode-normalization`
//! tables (newer Unicode versions). Characters assigned after 12.1 pass
//! through the kernel's tables unchanged, as starters: those the newer
//! tables would fold, decompose or reorder are listed in `NEWER` and kept
//! as they are, so the result is 12.1's for every name.

use caseless::Caseless;
use unicode_normalization::UnicodeNormalization;

/// s_encoding: the only encoding defined, utf8 at Unicode 12.1.
pub const ENCODING_UTF8_12_1: u16 = 1;
/// s_encoding_flags: names that are not valid UTF-8 are errors.
pub const ENCODING_STRICT: u16 = 0x1;

/// Default_Ignorable_Code_Point in Unicode 12.1: folded to nothing.
const IGNORABLE: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

/// Code points not assigned in Unicode 12.1 that the crates' tables fold,
/// decompose or give a combining class (generated from ICU's character
/// ages and the crates' mappings).
const NEWER: &[(u32, u32)] = &[
    (0x5C8, 0x5C9),
    (0x897, 0x89F),
    (0x8CA, 0x8D2),
    (0xC3C, 0xC3C),
    (0x1715, 0x1715),
    (0x1ABF, 0x1AF0),
    (0x1C89, 0x1C89),
    (0x1DFA, 0x1DFA),
    (0x2C2F, 0x2C2F),
    (0xA7C0, 0xA7C0),
    (0xA7C7, 0xA7C7),
    (0xA7C9, 0xA7C9),
    (0xA7CB, 0xA7CC),
    (0xA7D0, 0xA7D0),
    (0xA7D6, 0xA7D6),
    (0xA7D8, 0xA7D8),
    (0xA7DA, 0xA7DA),
    (0xA7DC, 0xA7DC),
    (0xA7F5, 0xA7F5),
    (0xA82C, 0xA82C),
    (0x10570, 0x1057A),
    (0x1057C, 0x1058A),
    (0x1058C, 0x10592),
    (0x10594, 0x10595),
    (0x105C9, 0x105C9),
    (0x105E4, 0x105E4),
    (0x10D50, 0x10D65),
    (0x10D69, 0x10D6D),
    (0x10EAB, 0x10EAC),
    (0x10ECB, 0x10ECF),
    (0x10EF0, 0x10EFB),
    (0x10EFD, 0x10EFF),
    (0x10F82, 0x10F85),
    (0x11070, 0x11070),
    (0x11383, 0x11383),
    (0x11385, 0x11385),
    (0x1138E, 0x1138E),
    (0x11391, 0x11391),
    (0x113C5, 0x113C5),
    (0x113C7, 0x113C8),
    (0x113CE, 0x113D0),
    (0x11938, 0x11938),
    (0x1193D, 0x1193E),
    (0x11943, 0x11943),
    (0x11F41, 0x11F42),
    (0x16121, 0x16128),
    (0x1612F, 0x1612F),
    (0x16D68, 0x16D6A),
    (0x16FF0, 0x16FF1),
    (0x1D127, 0x1D128),
    (0x1D250, 0x1D252),
    (0x1D25B, 0x1D25C),
    (0x1D25F, 0x1D25F),
    (0x1D280, 0x1D281),
    (0x1E08F, 0x1E08F),
    (0x1E2AE, 0x1E2AE),
    (0x1E4EC, 0x1E4EF),
    (0x1E5EE, 0x1E5EF),
    (0x1E6E3, 0x1E6E3),
    (0x1E6E6, 0x1E6E6),
    (0x1E6EE, 0x1E6EF),
    (0x1E6F5, 0x1E6F5),
];

fn newer(c: char) -> bool {
    let c = c as u32;
    let k = NEWER.partition_point(|&(_, b)| b < c);
    NEWER.get(k).is_some_and(|&(a, _)| a <= c)
}

fn ignorable(c: char) -> bool {
    let c = c as u32;
    IGNORABLE.iter().any(|&(a, b)| (a..=b).contains(&c))
}

/// The part of a name the utf8 tables look at: up to the first NUL.
fn until_nul(name: &[u8]) -> &[u8] {
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    &name[..end]
}

/// Offset of the first byte that does not start a well-formed UTF-8
/// character (before any NUL), or None when the name is valid.
pub fn invalid_at(name: &[u8]) -> Option<usize> {
    match std::str::from_utf8(until_nul(name)) {
        Ok(_) => None,
        Err(e) => Some(e.valid_up_to()),
    }
}

/// The folded form of `name` as UTF-8 bytes; None if it is not valid UTF-8.
pub fn fold(name: &[u8]) -> Option<Vec<u8>> {
    let s = std::str::from_utf8(until_nul(name)).ok()?;
    // Fold, then decompose and order what folding produced; a character
    // newer than 12.1 stays as it is and stops reordering.
    let mut out = String::with_capacity(s.len());
    let mut seg = String::new();
    let flush = |seg: &mut String, out: &mut String| {
        out.extend(seg.chars().default_case_fold().nfd());
        seg.clear();
    };
    for c in s.chars().filter(|&c| !ignorable(c)) {
        if newer(c) {
            flush(&mut seg, &mut out);
            out.push(c);
        } else {
            seg.push(c);
        }
    }
    flush(&mut seg, &mut out);
    Some(out.into_bytes())
}

/// Do two names of a casefolded directory name the same file? Names that
/// are not valid UTF-8 equal nothing (the kernel's comparison fails).
pub fn same(a: &[u8], b: &[u8]) -> bool {
    match (fold(a), fold(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity() {
        assert_eq!(invalid_at(b"plain"), None);
        assert_eq!(invalid_at("Grüße".as_bytes()), None);
        assert_eq!(invalid_at(b"A\xff"), Some(1));
        assert_eq!(invalid_at(b"A\xfe"), Some(1));
        // Overlong, surrogate, truncated sequences.
        assert_eq!(invalid_at(b"\xc0\xaf"), Some(0));
        assert_eq!(invalid_at(b"x\xed\xa0\x80"), Some(1));
        assert_eq!(invalid_at(b"ab\xe2\x82"), Some(2));
        // The tables stop at a NUL.
        assert_eq!(invalid_at(b"a\0\xff"), None);
    }

    #[test]
    fn folding() {
        assert_eq!(fold(b"ABC").unwrap(), b"abc");
        // Full folding: sharp s becomes "ss".
        assert!(same("STRASSE".as_bytes(), "straße".as_bytes()));
        // Precomposed and decomposed forms are one name.
        assert!(same("\u{c5}".as_bytes(), "a\u{30a}".as_bytes()));
        assert!(same("\u{212b}".as_bytes(), "\u{e5}".as_bytes()));
        // Ignorable code points vanish.
        assert!(same("ab".as_bytes(), "a\u{ad}b".as_bytes()));
        assert!(!same(b"a", b"b"));
        // Letters newer than Unicode 12.1 do not fold (U+A7C0, 14.0), the
        // rest of the name does.
        assert!(!same("\u{a7c0}".as_bytes(), "\u{a7c1}".as_bytes()));
        assert_eq!(
            fold("X\u{a7c0}".as_bytes()).unwrap(),
            "x\u{a7c0}".as_bytes()
        );
        assert!(NEWER.windows(2).all(|w| w[0].1 < w[1].0));
        // Invalid names equal nothing, not even themselves.
        assert!(!same(b"A\xff", b"A\xff"));
        assert_eq!(fold(b"A\xff"), None);
    }
}
