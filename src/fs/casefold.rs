//! Case-insensitive names (the `casefold` feature, encoding utf8-12.1).
//!
//! A casefolded directory hashes and compares names by their "NFD +
//! case fold" form, as the kernel's utf8 tables (and e2fsprogs', the same
//! tables) compute it: full case folding (CaseFolding.txt, statuses C and
//! F), canonical decomposition and canonical ordering, with the default
//! ignorable code points removed. A name that is not well-formed UTF-8
//! has no folded form: it hashes as its bytes and equals no other name.
//!
//! Supported: the folding of every character Unicode 12.1 assigns, from
//! the `caseless` and `unicode-normalization` tables. Not reproduced:
//! characters assigned after 12.1, which the kernel's 12.1 tables pass
//! through unchanged but newer tables may fold or decompose (a name using
//! them may hash differently than the kernel hashed it).

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
    // Fold, then decompose and order what folding produced.
    let folded: String = s
        .chars()
        .filter(|&c| !ignorable(c))
        .default_case_fold()
        .nfd()
        .collect();
    Some(folded.into_bytes())
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
        // Invalid names equal nothing, not even themselves.
        assert!(!same(b"A\xff", b"A\xff"));
        assert_eq!(fold(b"A\xff"), None);
    }
}
