//! Pass 1 fixes of one inode as a whole: what e2fsck -y does to an inode
//! it finds broken while scanning the inode table (or, for the inodes it
//! marks bad there, when pass 2 or 4 meets them): clear it, or rewrite the
//! fields and flags that make it invalid, or set the superblock feature it
//! shows the file system uses.
//!
//! Clearing is e2fsck's: no links, a deletion time, no flags (a reserved
//! inode also loses its block map), and the inode leaves `State`'s in-use
//! maps so the summary rebuilt last frees it. What follows from it (the
//! entries naming it, its blocks in the bitmaps, an xattr block's
//! reference count, quota usage) is found by the next round's check and
//! fixed there, as e2fsck finds it in its later passes.
//!
//! Each fix reads the inode through the overlay, so it sees what earlier
//! fixes of this round changed. Where e2fsck changes the mode, a flag or
//! the mapping and then judges the inode on with the change (a fast
//! symlink with EXTENTS_FL, both INLINE_DATA_FL and EXTENTS_FL, a socket
//! that is really a directory), the inode's other problems, found on the
//! old contents, are left to the next round's check (`Round::modified`).

use crate::check::pass1::detail as d;
use crate::check::problem::{Code, Problem};
use crate::check::state::State;
use crate::check::{blockmap, pass1, xattr as xcheck};
use crate::fs::bytes::{le16, le32, put_le16, put_le32};
use crate::fs::inode::field::*;
use crate::fs::inode::{GOOD_OLD_INODE_SIZE, Inode, InodeMut, ROOT_INO, S_IFDIR, flags};
use crate::fs::num::{Blk, Ino};
use crate::fs::superblock::{compat, incompat, ro_compat};
use crate::fs::xattr;
use crate::narrow;
use crate::store::overlay::Overlay;
use crate::volume::{Allocator, Fs, edit as vol};
use std::collections::BTreeSet;

/// What this round's fixes did so far.
#[derive(Default)]
pub(super) struct Round {
    /// Inodes cleared: their other problems need no fix.
    pub cleared: BTreeSet<u32>,
    /// Inodes whose mode, flags or mapping a fix changed: e2fsck judges
    /// them on with the change, so their other problems (found on the old
    /// contents) wait for the next round's check.
    pub modified: BTreeSet<u32>,
    /// Incompat features the inodes showed the file system uses.
    incompat: u32,
    /// Read-only compatible features likewise.
    ro_compat: u32,
}

/// Stages the fix of `p` (its fixer in the fix table is `Clear`). Returns whether the problem is
/// taken care of.
pub(super) fn fix(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    p: &Problem,
    round: &mut Round,
) -> super::Result<bool> {
    if let Some(done) = fix_fs_wide(fs, state, overlay, p, round)? {
        return Ok(done);
    }
    let Some(Ino(ino)) = p.args().ino else {
        return Ok(false);
    };
    if round.cleared.contains(&ino) {
        return Ok(true);
    }
    // Judged on what the inode was before a change of this round; the
    // next round judges it again.
    if round.modified.contains(&ino) {
        return Ok(false);
    }
    let Some(raw) = vol::read_inode(fs, overlay, Ino(ino))? else {
        return Ok(false);
    };
    let node = Inode::parse(&raw);
    let extents_fs =
        fs.sb.has_incompat(incompat::EXTENTS) || round.incompat & incompat::EXTENTS != 0;
    let inline_fs =
        fs.sb.has_incompat(incompat::INLINE_DATA) || round.incompat & incompat::INLINE_DATA != 0;
    let target = Target {
        ino,
        raw: &raw,
        node,
        extents_fs,
        inline_fs,
    };
    fix_inode(fs, state, overlay, p, round, &target)
}

/// The inode a problem names, as this round read it.
struct Target<'r> {
    ino: u32,
    raw: &'r [u8],
    node: Inode,
    /// The file system uses extents (its feature, or an inode showed it).
    extents_fs: bool,
    /// Likewise inline data.
    inline_fs: bool,
}

/// Problems of blocks or of the file system, not of one inode: Some
/// (whether taken care of) for those, None for the others.
fn fix_fs_wide(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    p: &Problem,
    round: &mut Round,
) -> super::Result<Option<bool>> {
    let done = match p.code {
        Code::DirNlinkFeature => {
            round.ro_compat |= ro_compat::DIR_NLINK;
            Ok(true)
        }
        Code::FeatureLargeDirs => {
            round.incompat |= incompat::LARGEDIR;
            Ok(true)
        }
        // e2fsck clears a root that is no directory in pass 1 and makes a
        // new one in pass 3: the new one directly.
        Code::RootMissing | Code::RootNotDirectory => make_root(fs, state, overlay, round),
        Code::XattrBlockChecksum => xattr_block(fs, overlay, p.args().blk.map(Blk::get), None),
        Code::XattrBlockRefcount => {
            let Some(n) = p.args().num2.and_then(|n| u32::try_from(n).ok()) else {
                return Ok(Some(false));
            };
            xattr_block(fs, overlay, p.args().blk.map(Blk::get), Some(n))
        }
        Code::InodeEaInodeRefs => {
            let (Some(Ino(ino)), Some(n)) = (p.args().ino, p.args().num2) else {
                return Ok(Some(false));
            };
            edit(fs, overlay, ino, |m| m.set_ea_refcount(n))
        }
        Code::XattrEaInodeNoFlag => {
            let Some(ea) = p.args().num.and_then(|n| u32::try_from(n).ok()) else {
                return Ok(Some(false));
            };
            if ea == 0 || ea > fs.geo.inodes_count || round.cleared.contains(&ea) {
                return Ok(Some(false));
            }
            // With the flag set the entry is valid and its value charged
            // to the owner again: the owner's i_blocks, found without the
            // charge, is judged by the next round.
            round.modified.extend(p.args().ino.map(Ino::get));
            edit(fs, overlay, ea, |m| {
                m.set_flags(m.flags() | flags::EA_INODE)
            })
        }
        _ => return Ok(None),
    };
    done.map(Some)
}

/// The problems of one inode.
fn fix_inode(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    p: &Problem,
    round: &mut Round,
    t: &Target,
) -> super::Result<bool> {
    let (ino, raw, node) = (t.ino, t.raw, &t.node);
    let (extents_fs, inline_fs) = (t.extents_fs, t.inline_fs);
    match p.code {
        Code::InodeGarbage | Code::InodeBadMode | Code::InodeEncryptCorrupt => {
            clear(fs, state, overlay, ino, round)
        }
        // e2fsck zeroes the pointer; only the inode's own are fixed here.
        Code::BadBlocksInodeIndirect => {
            let Some(Blk(b)) = p.args().blk else {
                return Ok(false);
            };
            match (crate::fs::inode::DIRECT_BLOCKS..15).find(|&k| u64::from(node.block_ptr(k)) == b)
            {
                Some(k) => {
                    round.modified.insert(ino);
                    edit(fs, overlay, ino, |m| m.set_block_ptr(k, 0))
                }
                None => Ok(false),
            }
        }
        Code::InodeDeviceBlocks => {
            // 0x010076: both flags on a special file, which e2fsck drops
            // before it judges the device.
            if p.e2fsck_code() == Some(0x010076) || pass1::device_ok(node) {
                set_flags(
                    fs,
                    overlay,
                    ino,
                    round,
                    0,
                    flags::INLINE_DATA | flags::EXTENTS,
                )
            } else {
                clear(fs, state, overlay, ino, round)
            }
        }
        Code::InodeFastSymlink => {
            if extents_fs
                && node.is_symlink()
                && node.has_flag(flags::EXTENTS)
                && !pass1::has_valid_blocks(node)
            {
                set_flags(fs, overlay, ino, round, 0, flags::EXTENTS)
            } else {
                clear(fs, state, overlay, ino, round)
            }
        }
        Code::InodeReallyDir => {
            round.modified.insert(ino);
            edit(fs, overlay, ino, |m| {
                m.set_mode((m.mode() & 0o7777) | S_IFDIR)
            })
        }
        Code::SpecialImmutable => {
            // Not a change the validity of the inode depends on.
            edit(fs, overlay, ino, |m| {
                m.set_flags(m.flags() & !(flags::IMMUTABLE | flags::APPEND));
            })
        }
        Code::InodeBadSize => match p.args().detail {
            d::SPECIAL_SIZE => edit(fs, overlay, ino, |m| m.set_size(0)),
            d::DIR_SIZE_HIGH => edit(fs, overlay, ino, |m| put_le32(m.0, I_SIZE_HIGH, 0)),
            d::ZERO_LENGTH_DIR => clear(fs, state, overlay, ino, round),
            _ => Ok(false),
        },
        Code::InodeBadFlags => match p.args().detail {
            d::INLINE_AND_EXTENTS => {
                inline_and_extents(fs, state, overlay, ino, raw, round, extents_fs, inline_fs)
            }
            d::EXTENTS_FL_MISSING => set_flags(fs, overlay, ino, round, flags::EXTENTS, 0),
            d::FADDR => edit(fs, overlay, ino, |m| m.set_faddr(0)),
            d::BLOCKS_HI => edit(fs, overlay, ino, |m| put_le16(m.0, I_BLOCKS_HIGH, 0)),
            d::HURD_FRAG => edit(fs, overlay, ino, |m| m.0[I_HURD_FRAG] = 0),
            d::HURD_FSIZE => edit(fs, overlay, ino, |m| m.0[I_HURD_FSIZE] = 0),
            _ => Ok(false),
        },
        Code::InodeTimesPre1970 => edit(fs, overlay, ino, |m| fix_extra_times(m.0)),
        Code::InodeFileAcl => {
            let xattr_fs = fs.sb.has_compat(compat::EXT_ATTR);
            let bit64 = fs.sb.is_64bit();
            let (first, count) = (fs.geo.first_data_block, fs.geo.blocks_count);
            edit(fs, overlay, ino, |m| {
                file_acl(m.0, xattr_fs, bit64, first, count)
            })
        }
        Code::InodeReservedBad => match p.args().detail {
            // e2fsck zeroes the bad blocks inode's first 128 bytes: its
            // list goes, and the blocks it held are freed.
            d::BAD_BLOCKS_INODE => {
                round.modified.insert(ino);
                edit(fs, overlay, ino, |m| m.0[..GOOD_OLD_INODE_SIZE].fill(0))
            }
            d::RESERVED_BAD_MODE => edit(fs, overlay, ino, |m| m.set_mode(0)),
            // Judged again as a regular file by the next round.
            // e2fsck makes these regular files with no permission bits.
            d::ORPHAN_FILE_MODE | d::JOURNAL_MODE | d::QUOTA_MODE => {
                round.modified.insert(ino);
                edit(fs, overlay, ino, |m| m.set_mode(0o100000))
            }
            // e2fsck zeroes the whole inode; the blocks it mapped were
            // never counted as in use, and pass 5 frees them.
            d::JOURNAL_UNUSED | d::QUOTA_UNUSED => {
                round.modified.insert(ino);
                edit(fs, overlay, ino, |m| m.0.fill(0))
            }
            _ => Ok(false),
        },
        // An index flag where it cannot be (not a directory, or no
        // dir_index): the flag goes; the directory is then read plain.
        Code::InodeIndexNotDir | Code::InodeIndexNoFeature => {
            set_flags(fs, overlay, ino, round, 0, flags::INDEX)
        }
        Code::InodeImagic => edit(fs, overlay, ino, |m| {
            m.set_flags(m.flags() & !flags::IMAGIC)
        }),
        Code::InodeExtraIsize => {
            let want = fs.sb.want_extra_isize;
            edit(fs, overlay, ino, |m| fix_extra_isize(m.0, want))
        }
        Code::InodeXattrInInode
        | Code::XattrHash
        | Code::XattrEaInodeInvalid
        | Code::XattrValueSize
        | Code::XattrBlockHeader
        | Code::XattrBlockEntries => fix_xattrs(fs, overlay, p, t),
        Code::InodeInlineNoFeature
        | Code::InodeInlineData
        | Code::InodeExtentsNoFeature
        | Code::InodeExtentFormatNoFeature => fix_features(fs, state, overlay, p, round, t),
        _ => Ok(false),
    }
}

/// An inode's extended attributes, in the inode or in their block.
fn fix_xattrs(fs: &Fs, overlay: &mut Overlay, p: &Problem, t: &Target) -> super::Result<bool> {
    let (ino, node) = (t.ino, &t.node);
    match p.code {
        Code::InodeXattrInInode
        | Code::XattrHash
        | Code::XattrEaInodeInvalid
        | Code::XattrValueSize
            if p.args().blk.is_none() =>
        {
            // e2fsck drops every in-inode xattr: the area's magic goes.
            edit(fs, overlay, ino, |m| {
                let at = GOOD_OLD_INODE_SIZE + usize::from(m.extra_isize());
                if m.0.len() > GOOD_OLD_INODE_SIZE && at + 4 <= m.0.len() {
                    put_le32(m.0, at, 0);
                }
            })
        }
        Code::XattrHash
        | Code::XattrEaInodeInvalid
        | Code::XattrValueSize
        | Code::XattrBlockHeader
        | Code::XattrBlockEntries => {
            // A bad xattr block: the inode loses its reference to it.
            let bit64 = fs.sb.is_64bit();
            if p.args()
                .blk
                .is_none_or(|blk| blk != Blk(node.acl_block(bit64)))
            {
                return Ok(false);
            }
            edit(fs, overlay, ino, |m| m.set_file_acl(0, bit64))
        }
        _ => Ok(false),
    }
}

/// An inode using inline data or extents the file system does not
/// declare, or inline data that is lost.
fn fix_features(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    p: &Problem,
    round: &mut Round,
    t: &Target,
) -> super::Result<bool> {
    let (ino, raw, node) = (t.ino, t.raw, &t.node);
    let (extents_fs, inline_fs) = (t.extents_fs, t.inline_fs);
    match p.code {
        Code::InodeInlineNoFeature => {
            if inline_fs {
                return Ok(true);
            }
            let mut buf = vec![0u8; fs.block_size()];
            if xcheck::inline_data_size(fs, raw, node, &mut buf, true).is_ok() {
                round.incompat |= incompat::INLINE_DATA;
                Ok(true)
            } else {
                clear(fs, state, overlay, ino, round)
            }
        }
        Code::InodeInlineData => {
            // The data is lost with its xattr: the inode is truncated.
            round.modified.insert(ino);
            edit(fs, overlay, ino, |m| {
                m.set_size(0);
                m.set_flags(m.flags() & !flags::INLINE_DATA);
                m.i_block_mut().fill(0);
            })
        }
        Code::InodeExtentFormatNoFeature => {
            round.incompat |= incompat::EXTENTS;
            Ok(true)
        }
        Code::InodeExtentsNoFeature => {
            if extents_fs {
                return Ok(true);
            }
            if blockmap::header_problem(&node.block, 60).is_none() {
                round.incompat |= incompat::EXTENTS;
                Ok(true)
            } else {
                clear(fs, state, overlay, ino, round)
            }
        }
        _ => Ok(false),
    }
}

/// `volume::edit::edit_inode`, its failure as text.
fn edit(
    fs: &Fs,
    overlay: &mut Overlay,
    ino: u32,
    change: impl FnOnce(&mut InodeMut),
) -> super::Result<bool> {
    Ok(vol::edit_inode(fs, overlay, Ino(ino), change)?)
}

/// Sets the superblock features the round found in use.
pub(super) fn finish(fs: &Fs, overlay: &mut Overlay, round: &Round) -> super::Result<()> {
    if round.incompat == 0 && round.ro_compat == 0 {
        return Ok(());
    }
    let (inc, ro) = (round.incompat, round.ro_compat);
    Ok(vol::edit_superblock(fs, overlay, |sb| {
        sb.set_incompat(sb.incompat() | inc);
        sb.set_ro_compat(sb.ro_compat() | ro);
    })?)
}

/// e2fsck's clear of an inode. A cleared root is made again by the next
/// round's pass 3 (`make_root`), as e2fsck's pass 3 allocates one.
fn clear(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    ino: u32,
    round: &mut Round,
) -> super::Result<bool> {
    if ino == ROOT_INO && !super::root_remade(fs) {
        return Ok(false);
    }
    let how = super::inode::Release {
        flags: true,
        reserved_map: true,
    };
    if !super::inode::release(fs, state, overlay, ino, how)? {
        return Ok(false);
    }
    round.cleared.insert(ino);
    Ok(true)
}

/// e2fsck's pass 3 answer to a missing root (or one pass 1 cleared for
/// not being a directory): a new, empty root directory
/// of one block (the first free one), '..' naming itself. The passes that
/// found the old tree's problems judged it without a root: their fixes
/// wait for the next round (the root counts as changed).
fn make_root(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    round: &mut Round,
) -> super::Result<bool> {
    // Both "not a directory" (pass 1) and "not allocated" (pass 3) may be
    // reported: one new root.
    if round.modified.contains(&ROOT_INO) {
        return Ok(true);
    }
    if fs.inode_location(Ino::ROOT).is_none() {
        return Ok(false);
    }
    let Some(blk) = Allocator::new(fs, &state.block_used).take_lowest(overlay) else {
        return Ok(false);
    };
    super::lostfound::write_dir(fs, overlay, Ino::ROOT, Ino::ROOT, blk, S_IFDIR | 0o755)?;
    state.inode_used.set(Ino::ROOT);
    state.inode_dir.set(Ino::ROOT);
    round.modified.insert(ROOT_INO);
    Ok(true)
}

/// Sets `add` and clears `remove` in the inode's flags.
fn set_flags(
    fs: &Fs,
    overlay: &mut Overlay,
    ino: u32,
    round: &mut Round,
    add: u32,
    remove: u32,
) -> super::Result<bool> {
    round.modified.insert(ino);
    edit(fs, overlay, ino, |m| {
        m.set_flags((m.flags() | add) & !remove)
    })
}

/// e2fsck's choice for an inode with both INLINE_DATA_FL and EXTENTS_FL:
/// special files lose both; an inode whose i_block holds an extent header
/// keeps extents, one small enough for inline data keeps that, one whose
/// i_block could be a block map keeps neither flag; anything else is
/// cleared. Without either feature the flags are left to the other checks.
#[allow(clippy::too_many_arguments)]
fn inline_and_extents(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    ino: u32,
    raw: &[u8],
    round: &mut Round,
    extents_fs: bool,
    inline_fs: bool,
) -> super::Result<bool> {
    let node = Inode::parse(raw);
    if !node.has_flag(flags::INLINE_DATA) || !node.has_flag(flags::EXTENTS) {
        return Ok(true);
    }
    if !extents_fs && !inline_fs {
        return Ok(false);
    }
    let both = flags::INLINE_DATA | flags::EXTENTS;
    let special = !node.is_dir() && !node.is_reg() && !node.is_symlink() && node.mode & 0xF000 != 0;
    if special {
        return set_flags(fs, overlay, ino, round, 0, both);
    }
    // The first of e2fsck's questions is the one a repair answers yes.
    match pass1::inline_extents_questions(&node, fs.geo.blocks_count).first() {
        Some(0x010077) => set_flags(fs, overlay, ino, round, 0, flags::INLINE_DATA),
        Some(0x010078) => set_flags(fs, overlay, ino, round, 0, flags::EXTENTS),
        Some(0x010079) => set_flags(fs, overlay, ino, round, 0, both),
        _ => clear(fs, state, overlay, ino, round),
    }
}

/// e2fsck's pass 2 repair of i_file_acl: zero without the ext_attr
/// feature, the high half zeroed without 64bit (where it means nothing),
/// zero when outside the file system.
fn file_acl(b: &mut [u8], xattr_fs: bool, bit64: bool, first: u64, count: u64) {
    let block = |b: &[u8]| {
        let lo = u64::from(le32(b, I_FILE_ACL_LO));
        if bit64 {
            lo | u64::from(le16(b, I_FILE_ACL_HIGH)) << 32
        } else {
            lo
        }
    };
    let zero = |b: &mut [u8]| {
        put_le32(b, I_FILE_ACL_LO, 0);
        if bit64 {
            put_le16(b, I_FILE_ACL_HIGH, 0);
        }
    };
    if block(b) != 0 && !xattr_fs {
        zero(b);
    }
    if !bit64 {
        put_le16(b, I_FILE_ACL_HIGH, 0);
    }
    let acl = block(b);
    if acl != 0 && (acl < first || acl >= count) {
        zero(b);
    }
}

/// e2fsck's fix of i_extra_isize: out of range becomes the superblock's
/// wanted size, a misaligned one is rounded up.
fn fix_extra_isize(b: &mut [u8], want: u16) {
    if b.len() <= GOOD_OLD_INODE_SIZE {
        return;
    }
    let max = narrow::sat16(b.len() - GOOD_OLD_INODE_SIZE);
    let e = le16(b, I_EXTRA_ISIZE);
    let fixed = if !(4..=max).contains(&e) {
        want
    } else {
        (e + 3) & !3
    };
    put_le16(b, I_EXTRA_ISIZE, fixed);
}

/// Pre-1970 extra times stored with both epoch bits set lose them.
fn fix_extra_times(b: &mut [u8]) {
    if b.len() <= GOOD_OLD_INODE_SIZE {
        return;
    }
    let end = GOOD_OLD_INODE_SIZE + usize::from(le16(b, I_EXTRA_ISIZE));
    let len = b.len();
    let fits = |off: usize| off + 4 <= end && off + 4 <= len;
    for (base, xoff) in [
        (0x0Cusize, 0x84usize),
        (0x10, 0x88),
        (0x08, 0x8C),
        (0x90, 0x94),
    ] {
        if fits(xoff)
            && (base < GOOD_OLD_INODE_SIZE || fits(base))
            && le32(b, base) & 0x8000_0000 != 0
            && le32(b, xoff) & 3 == 3
        {
            put_le32(b, xoff, le32(b, xoff) & !3);
        }
    }
}

/// Rewrites an xattr block's reference count (when given) and its
/// checksum (with metadata_csum).
fn xattr_block(
    fs: &Fs,
    overlay: &mut Overlay,
    blk: Option<u64>,
    refcount: Option<u32>,
) -> super::Result<bool> {
    let Some(blk) = blk.filter(|&b| fs.geo.block_in_fs(b)) else {
        return Ok(false);
    };
    let bs = fs.block_size();
    let csum = fs.metadata_csum();
    let seed = fs.csum_seed;
    let pos = blk
        .checked_mul(bs as u64)
        .ok_or_else(|| format!("block {blk} lies beyond the addressable range"))?;
    vol::edit_bytes(fs, overlay, pos, bs, |b| {
        if xattr::parse_block_header(b).magic != xattr::XATTR_MAGIC {
            return;
        }
        if let Some(n) = refcount {
            xattr::set_refcount(b, n);
        }
        if csum {
            xattr::set_block_checksum(seed, blk, b);
        }
    })?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_acl_follows_e2fsck() {
        let mut b = vec![0u8; 256];
        // High half set without 64bit: only it goes.
        put_le32(&mut b, I_FILE_ACL_LO, 50);
        put_le16(&mut b, I_FILE_ACL_HIGH, 2);
        file_acl(&mut b, true, false, 1, 100);
        assert_eq!(
            (le32(&b, I_FILE_ACL_LO), le16(&b, I_FILE_ACL_HIGH)),
            (50, 0)
        );
        // Out of range: zero.
        put_le32(&mut b, I_FILE_ACL_LO, 500);
        file_acl(&mut b, true, false, 1, 100);
        assert_eq!(le32(&b, I_FILE_ACL_LO), 0);
        // No ext_attr feature: zero whatever the block.
        put_le32(&mut b, I_FILE_ACL_LO, 50);
        file_acl(&mut b, false, false, 1, 100);
        assert_eq!(le32(&b, I_FILE_ACL_LO), 0);
    }

    #[test]
    fn extra_isize_is_wanted_or_rounded() {
        let mut b = vec![0u8; 256];
        put_le16(&mut b, I_EXTRA_ISIZE, 0xFFFF);
        fix_extra_isize(&mut b, 32);
        assert_eq!(le16(&b, I_EXTRA_ISIZE), 32);
        put_le16(&mut b, I_EXTRA_ISIZE, 30);
        fix_extra_isize(&mut b, 32);
        assert_eq!(le16(&b, I_EXTRA_ISIZE), 32);
        put_le16(&mut b, I_EXTRA_ISIZE, 2);
        fix_extra_isize(&mut b, 28);
        assert_eq!(le16(&b, I_EXTRA_ISIZE), 28);
    }

    #[test]
    fn old_extra_times_lose_their_epoch_bits() {
        let mut b = vec![0u8; 256];
        put_le16(&mut b, I_EXTRA_ISIZE, 32);
        put_le32(&mut b, 0x0C, 0x8000_0001);
        put_le32(&mut b, 0x84, 0x0000_0107);
        fix_extra_times(&mut b);
        assert_eq!(le32(&b, 0x84), 0x0000_0104);
    }
}
