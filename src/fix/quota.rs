//! Quota: superblock quota inode numbers that name no possible inode are
//! cleared, as e2fsck does; the quota type then has no file (e2fsck does
//! not create one in that run either).
//!
//! Not built yet: rewriting the usage recorded in quota files.

use super::edit_superblock;
use crate::check::Fs;
use crate::check::problem::{Code, Problem};
use crate::fs::bytes::put_le32;
use crate::repair::overlay::Overlay;

// Superblock fields holding the quota inode numbers.
const S_USR_QUOTA_INUM: usize = 0x240;
const S_GRP_QUOTA_INUM: usize = 0x244;
const S_PRJ_QUOTA_INUM: usize = 0x26C;

/// Clears the field `p` (an `SbQuotaInode`) names. Returns whether it did.
pub(super) fn clear_inum(fs: &Fs, overlay: &mut Overlay, p: &Problem) -> Result<bool, String> {
    if p.code != Code::SbQuotaInode {
        return Ok(false);
    }
    let off = match p.detail.as_str() {
        "user" => S_USR_QUOTA_INUM,
        "group" => S_GRP_QUOTA_INUM,
        "project" => S_PRJ_QUOTA_INUM,
        _ => return Ok(false),
    };
    edit_superblock(fs, overlay, |sb| put_le32(sb, off, 0))?;
    Ok(true)
}
