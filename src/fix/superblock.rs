//! The primary superblock and descriptor table, restored from the backup
//! the check used.
//!
//! When the primary superblock (or the descriptors it leads to) is
//! unusable, pass 0 loads a backup and every pass judges the file system
//! through it; e2fsck then writes that superblock and table back as the
//! primary ones. Staged alone, in a round of its own: the next round's
//! check reads the primary again and the usual fixes (counts, bitmaps)
//! follow from there, with their edits landing on the restored copy.

use crate::fs::inode::GOOD_OLD_INODE_SIZE;
use crate::fs::num::Ino;
use crate::fs::superblock::{SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE, SuperblockMut};
use crate::store::overlay::Overlay;
use crate::volume::{Fs, edit as vol};

/// Did the check read a backup instead of the primary superblock?
pub(super) fn used_backup(fs: &Fs) -> bool {
    fs.sb_block != SUPERBLOCK_OFFSET / u64::from(fs.geo.block_size)
}

/// Stages the loaded superblock and descriptor table as the primary ones.
pub(super) fn restore_primary(fs: &Fs, overlay: &mut Overlay) -> super::Result<()> {
    let mut sb = fs.sb.raw.clone();
    sb.resize(SUPERBLOCK_SIZE, 0);
    let mut m = SuperblockMut(&mut sb);
    m.set_block_group_nr(0);
    if fs.metadata_csum() {
        m.set_checksum();
    }
    vol::edit_encoded_bytes(fs, overlay, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE, |b| {
        b.copy_from_slice(&sb)
    })?;
    Ok(vol::write_desc_table(
        fs,
        overlay,
        fs.primary_sb_block(),
        &fs.gd_raw,
        None,
    )?)
}

/// A wrong inodes count (the check went on with the groups times the
/// inodes per group, as e2fsck does after loading the superblock despite
/// it) is set to that product.
pub(super) fn fix_inodes_count(fs: &Fs, overlay: &mut Overlay) -> super::Result<bool> {
    let want = fs.geo.inodes_count;
    if fs.sb.inodes_count == want {
        return Ok(false);
    }
    vol::edit_superblock(fs, overlay, |sb| sb.set_inodes_count(want))?;
    Ok(true)
}

/// A first meta_bg beyond the descriptor blocks: e2fsck turns meta_bg off
/// and zeroes the field. Staged only where that keeps every descriptor
/// where the check read it (one descriptor block, which both layouts put
/// right after the superblock); the next round judges the rest with the
/// classic layout.
pub(super) fn fix_first_meta_bg(fs: &Fs, overlay: &mut Overlay) -> super::Result<bool> {
    use crate::fs::superblock::incompat;
    if !fs.geo.first_meta_bg_too_big() || fs.geo.desc_blocks != 1 {
        return Ok(false);
    }
    vol::edit_superblock(fs, overlay, |sb| {
        sb.set_incompat(sb.incompat() & !incompat::META_BG);
        sb.set_first_meta_bg(0);
    })?;
    Ok(true)
}

/// An orphan_file feature whose inode number cannot be an inode: e2fsck
/// would recreate the file but stops on reading that inode, so nothing it
/// does converges. The feature (and orphan_present with it) is turned
/// off, as e2fsck turns it off for an orphan file without a journal: the
/// kernel then keeps orphans in the superblock's list. No file is lost:
/// there was no orphan file inode.
///
/// Without a journal the orphan file goes too. e2fsck -fy zeroes its
/// inode but leaves it marked in use and the superblock naming it, which
/// its next check finds wrong (inode bitmap, free inodes count); here the
/// superblock stops naming it, and the next round's pass 5 frees the
/// zeroed inode and its blocks: the file system ends clean.
pub(super) fn drop_orphan_file(fs: &Fs, overlay: &mut Overlay) -> super::Result<bool> {
    use crate::fs::superblock::{compat, ro_compat};
    let sb = &fs.sb;
    let inum = sb.orphan_file_inum;
    let valid = inum != 0 && inum <= fs.geo.inodes_count;
    if !sb.has_compat(compat::ORPHAN_FILE) || (valid && sb.has_compat(compat::HAS_JOURNAL)) {
        return Ok(false);
    }
    vol::edit_superblock(fs, overlay, |s| {
        s.set_compat(s.compat() & !compat::ORPHAN_FILE);
        s.set_ro_compat(s.ro_compat() & !ro_compat::ORPHAN_PRESENT);
        s.set_orphan_file_inum(0);
    })?;
    if valid {
        vol::edit_inode(fs, overlay, Ino(inum), |m| m.0.fill(0))?;
    }
    Ok(true)
}

/// The resize inode, as e2fsck's pass 0 settles it: with meta_bg the
/// feature cannot work and is turned off; without the feature the inode
/// must be empty, so it is cleared, and there are no reserved GDT blocks.
/// An invalid resize inode while the feature stays is `resize.rs`'s.
/// Returns whether the problem is settled: e2fsck asks up to three
/// questions here (meta_bg, the reserved GDT blocks, the inode), all
/// settled by the one change the first of them stages.
pub(super) fn fix_resize_inode(
    fs: &Fs,
    overlay: &mut Overlay,
    p: &crate::check::problem::Problem,
) -> super::Result<bool> {
    use crate::fs::superblock::{compat, incompat};
    if p.code != crate::check::problem::Code::SbResizeInodeNoFeature {
        return Ok(false);
    }
    let has = fs.sb.has_compat(compat::RESIZE_INODE);
    if has && !fs.sb.has_incompat(incompat::META_BG) {
        return Ok(false);
    }
    // Without the feature there are no reserved GDT blocks either.
    vol::edit_superblock(fs, overlay, |sb| {
        sb.set_compat(sb.compat() & !compat::RESIZE_INODE);
        sb.set_reserved_gdt_blocks(0);
    })?;
    // The part of the inode e2fsck clears (its `struct ext2_inode`).
    vol::edit_inode(fs, overlay, Ino::RESIZE, |m| {
        let n = GOOD_OLD_INODE_SIZE.min(m.0.len());
        m.0[..n].fill(0);
    })?;
    Ok(true)
}

/// A superblock flag or feature set right, as e2fsck's pass 0 does: the
/// test_fs flag cleared (on the backups too, as e2fsck writes them), the
/// directory hash signedness of this machine's `char` recorded, extents
/// turned on for a 64bit file system (and for `-E bmap2extent`, on the
/// backups too), metadata_csum_seed turned off (and
/// its seed zeroed) without metadata_csum, a last mount or write time
/// ahead of the clock set to the check's time (the problem's `num2`), an
/// invalid min or want extra inode size set to what libext2fs' inodes
/// carry (the problem's detail names the field).
/// Returns whether it staged.
pub(super) fn fix_flag(
    fs: &Fs,
    overlay: &mut Overlay,
    p: &crate::check::problem::Problem,
) -> super::Result<bool> {
    use crate::check::problem::Code;
    let code = p.code;
    let now = p.args().num2;
    use crate::fs::superblock::{FLAGS_SIGNED_HASH, FLAGS_TEST_FS, FLAGS_UNSIGNED_HASH, incompat};
    let backups = matches!(
        code,
        Code::SbTestFs
            | Code::SbRev0Features
            | Code::SbJournalBackupMissing
            | Code::SbExtentsForConversion
    );
    // The journal inode as this round leaves it.
    let journal = if code == Code::SbJournalBackupMissing {
        match vol::read_inode(fs, overlay, Ino(fs.sb.journal_inum))? {
            Some(raw) => Some(crate::fs::inode::Inode::parse(&raw)),
            None => return Ok(false),
        }
    } else {
        None
    };
    // The device number the check found (32 bits, or it found none).
    let dev = p.args().num.and_then(|n| u32::try_from(n).ok());
    vol::edit_superblock(fs, overlay, |sb| match code {
        Code::SbRev0Features => sb.make_dynamic(),
        Code::SbJournalDevHint => {
            if let Some(d) = dev {
                sb.set_journal_dev(d);
            }
        }
        // metadata_csum supersedes uninit_bg's descriptor checksums.
        Code::SbMetadataCsumAndGdtCsum => {
            sb.set_ro_compat(sb.ro_compat() & !crate::fs::superblock::ro_compat::GDT_CSUM);
        }
        Code::SbJournalBackupMissing => {
            if let Some(j) = &journal {
                sb.set_journal_backup(&j.block, j.size);
            }
        }
        Code::SbTestFs => sb.set_flags(sb.flags() & !FLAGS_TEST_FS),
        Code::SbDirHashHint => {
            // e2fsck hashes names as its `char` is signed or not.
            let hint = if std::ffi::c_char::MIN == 0 {
                FLAGS_UNSIGNED_HASH
            } else {
                FLAGS_SIGNED_HASH
            };
            sb.set_flags(sb.flags() | hint);
        }
        Code::SbHurdFiletype => sb.set_incompat(sb.incompat() & !incompat::FILETYPE),
        Code::Sb64bitNoExtents | Code::SbExtentsForConversion => {
            sb.set_incompat(sb.incompat() | incompat::EXTENTS);
        }
        Code::InodeEaInodeFlag => sb.set_incompat(sb.incompat() | incompat::EA_INODE),
        Code::SbCsumSeedNoCsum => {
            sb.set_incompat(sb.incompat() & !incompat::CSUM_SEED);
            sb.set_checksum_seed(0);
        }
        // A journal without has_journal: the superblock forgets it (pass
        // 1 then clears the inode, no longer the journal's); and nothing
        // is left to recover.
        Code::JournalInodeNoFeature => {
            sb.clear_journal();
            sb.set_incompat(sb.incompat() & !incompat::RECOVER);
        }
        Code::JournalRecoverNoJournal => sb.set_incompat(sb.incompat() & !incompat::RECOVER),
        Code::SbLastMountFuture => sb.set_mtime(now.unwrap_or(0)),
        Code::SbLastWriteFuture => sb.set_wtime(now.unwrap_or(0)),
        Code::SbExtraIsize if p.args().detail == "min" => {
            sb.set_min_extra_isize(crate::fs::inode::NEW_EXTRA_ISIZE);
        }
        Code::SbExtraIsize => sb.set_want_extra_isize(crate::fs::inode::NEW_EXTRA_ISIZE),
        _ => {}
    })?;
    if backups {
        vol::write_backups(fs, overlay)?;
    }
    Ok(matches!(
        code,
        Code::SbTestFs
            | Code::SbDirHashHint
            | Code::SbHurdFiletype
            | Code::Sb64bitNoExtents
            | Code::SbExtentsForConversion
            | Code::InodeEaInodeFlag
            | Code::SbCsumSeedNoCsum
            | Code::SbRev0Features
            | Code::SbJournalBackupMissing
            | Code::SbMetadataCsumAndGdtCsum
            | Code::JournalInodeNoFeature
            | Code::JournalRecoverNoJournal
            | Code::SbExtraIsize
    ) || (matches!(code, Code::SbLastMountFuture | Code::SbLastWriteFuture) && now.is_some())
        || (code == Code::SbJournalDevHint && dev.is_some()))
}

/// A file system without a UUID gets a random one (version 4), written
/// to the backups too, with every descriptor's checksum redone under it
/// (uninit_bg seeds them with the UUID; e2fsck leaves a metadata_csum
/// file system alone, so the check never asks for that).
pub(super) fn new_uuid(fs: &Fs, overlay: &mut Overlay) -> super::Result<bool> {
    let uuid = uuid_of(&fs.sb.raw);
    vol::edit_superblock(fs, overlay, |sb| sb.set_uuid(&uuid))?;
    if fs.sb.group_desc_csum() {
        let mut sb = fs.sb.clone();
        sb.uuid = uuid;
        let mut table = vol::DescTable::loaded(fs);
        for g in 0..fs.geo.groups {
            if let Some(mut d) = table.desc(g) {
                d.set_checksum(&sb, g);
            }
        }
        vol::write_desc_table(
            fs,
            overlay,
            fs.primary_sb_block(),
            &table.raw,
            Some(&fs.gd_raw),
        )?;
    }
    vol::write_backups(fs, overlay)?;
    Ok(true)
}

/// A version 4 (RFC 4122) UUID drawn from the superblock's bytes rather
/// than a random device: the same image gets the same repaired bytes at
/// any thread count and on a rerun (pfsck's determinism rule), and two
/// file systems still differ wherever their superblocks do (times,
/// counts). Never all zero: the version bits are set.
fn uuid_of(sb_raw: &[u8]) -> [u8; 16] {
    let mut u = [0u8; 16];
    for (k, part) in u.chunks_exact_mut(4).enumerate() {
        let seed = 0x5EED_0000 | u32::try_from(k).unwrap_or(0);
        part.copy_from_slice(&crate::fs::checksum::crc32c_raw(seed, sb_raw).to_le_bytes());
    }
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}
