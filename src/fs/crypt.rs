//! fscrypt (the `encrypt` feature): the encryption context every encrypted
//! inode keeps in its xattr `c` (name index 9), and the on-disk forms that
//! encryption changes (names, symlink targets).
//!
//! The context is the policy (version, modes, flags, master key) plus a
//! per-file nonce. Files of one directory tree must share the policy; the
//! nonce differs per file, so policies are compared without it.

use super::bytes::le16;

/// xattr name index of the encryption context.
pub const XATTR_INDEX: u8 = 9;
/// xattr name of the encryption context.
pub const XATTR_NAME: &[u8] = b"c";
/// Encrypted names are padded to a multiple of this (and are at least this
/// long): the cipher's block.
pub const NAME_MIN: usize = 16;

/// Context sizes: version 1 has an 8-byte key descriptor, version 2 four
/// reserved bytes and a 16-byte key identifier; both end in a 16-byte nonce.
const CTX_V1_LEN: usize = 28;
const CTX_V2_LEN: usize = 40;
const NONCE_LEN: usize = 16;

/// What an encryption context says about the policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Version 1 or 2: the context without its nonce.
    Known(Vec<u8>),
    /// A version this checker does not know: possibly valid, and all such
    /// inodes are taken as sharing one policy (as e2fsck does).
    Unrecognized,
    /// Version 0 or a size that does not match the version.
    Corrupt,
}

/// Classifies the value of an inode's `c` xattr.
pub fn parse_context(v: &[u8]) -> Policy {
    let Some(&version) = v.first() else {
        return Policy::Corrupt;
    };
    let len = match version {
        0 => return Policy::Corrupt,
        1 => CTX_V1_LEN,
        2 => CTX_V2_LEN,
        _ => return Policy::Unrecognized,
    };
    if v.len() != len {
        return Policy::Corrupt;
    }
    Policy::Known(v[..len - NONCE_LEN].to_vec())
}

/// Length an encrypted symlink target takes in its buffer: a 16-bit
/// ciphertext length, then the ciphertext.
pub fn symlink_len(target: &[u8]) -> usize {
    usize::from(le16(target, 0)) + 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts() {
        let mut v1 = vec![1u8, 1, 4, 0];
        v1.extend([0x42; 8]);
        v1.extend([7; 16]);
        assert_eq!(parse_context(&v1), Policy::Known(v1[..12].to_vec()));
        // Same policy, different nonce.
        let mut other = v1.clone();
        other[20] ^= 1;
        assert_eq!(parse_context(&other), parse_context(&v1));
        let mut v2 = vec![2u8, 1, 4, 0, 0, 0, 0, 0];
        v2.extend([9; 32]);
        assert_eq!(parse_context(&v2), Policy::Known(v2[..24].to_vec()));
        assert_eq!(parse_context(&v1[..27]), Policy::Corrupt);
        assert_eq!(parse_context(&[]), Policy::Corrupt);
        assert_eq!(parse_context(&[0; 28]), Policy::Corrupt);
        assert_eq!(parse_context(&[7, 1, 2]), Policy::Unrecognized);
    }

    #[test]
    fn symlink_length() {
        assert_eq!(symlink_len(&[16, 0, 1, 2]), 18);
        assert_eq!(symlink_len(&[]), 2);
    }
}
