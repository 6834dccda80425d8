//! An invalid resize inode, recreated as e2fsck does.
//!
//! e2fsck answers "Resize inode not valid. Recreate?" by clearing inode 7
//! before its pass 1 (so nothing there claims the old double indirect
//! block) and, at the end of pass 1, letting its library build the inode
//! again from nothing. Both happen here in one fix, on the maps of the
//! finished check: the old double indirect block counts as free unless
//! something else claims it, then the new inode is laid out the way the
//! library lays it out:
//!
//! - the double indirect block: the first block free in what pass 1 found
//!   at or after `sb + desc_blocks + reserved_gdt_blocks + 2 +
//!   inode_blocks_per_group` (wrapping to the first data block), where
//!   `sb` is the superblock's block; before that, e2fsck's pass 1 sets
//!   aside the lowest free block for a missing root and the next for a
//!   missing lost+found (their repairs use them later), so those are
//!   skipped here too;
//! - slot `(desc_blocks + r) % (block_size / 4)` of it names reserved GDT
//!   block `r`, which lies at `sb + 1 + desc_blocks + r`;
//! - each reserved GDT block of group 0 is rewritten to list the same
//!   block's copies in the groups that hold a superblock backup, in the
//!   library's order (with sparse_super2 the two named groups, as given);
//! - the inode: a regular file 0600 with one link, only i_block[13] set,
//!   i_size as if every double indirect slot were used
//!   (`(apb² + apb + 12) · block_size`, which sets large_file when it is
//!   2 GiB or more), i_blocks counting the double indirect block, the
//!   reserved GDT blocks and their listed copies, every time field the
//!   repair's time, everything else zero (extra fields: i_extra_isize 32
//!   and the creation time).
//!
//! Not on bigalloc (the fix is not `cluster_safe`), and nothing is staged
//! when a block number would not fit the 32-bit map or no block is free
//! (e2fsck then gives up on the inode too).

use crate::check::problem::{Code, Problem};
use crate::check::state::State;
use crate::fs::inode::field::I_CRTIME;
use crate::fs::inode::{GOOD_OLD_INODE_SIZE, InodeMut};
use crate::fs::num::{Blk, Ino};
use crate::fs::superblock::{compat, incompat, ro_compat};
use crate::narrow;
use crate::store::overlay::Overlay;
use crate::volume::{Allocator, Fs, edit as vol};

use crate::fs::inode::{DIND_SLOT, set_map_ptr};
const MODE: u16 = 0o100_600;
/// Files this large need the large_file feature.
const LARGE_FILE_SIZE: u64 = 0x8000_0000;
/// Direct slots of a block map.
const NDIR_BLOCKS: u64 = 12;

/// Is `p` the invalid resize inode e2fsck recreates (the feature stays on;
/// without it, or with meta_bg, `superblock::fix_resize_inode` clears it)?
pub(super) fn recreates(fs: &Fs, p: &Problem) -> bool {
    p.code == Code::SbResizeInodeNoFeature
        && fs.sb.has_compat(compat::RESIZE_INODE)
        && !fs.sb.has_incompat(incompat::META_BG)
}

/// The groups whose reserved GDT blocks copy group 0's, in the order a
/// reserved GDT block lists them: every group holding a superblock backup
/// in ascending order, except with sparse_super2, where the two groups
/// the superblock names come as given (a zero entry skipped, the list
/// ending at the first one past the last group).
pub(crate) fn backup_groups(fs: &Fs) -> Vec<u32> {
    let geo = &fs.geo;
    if fs.sb.has_compat(compat::SPARSE_SUPER2) {
        return fs
            .sb
            .backup_bgs
            .iter()
            .copied()
            .filter(|&g| g != 0)
            .take_while(|&g| g < geo.groups)
            .collect();
    }
    (1..geo.groups)
        .filter(|&g| geo.group_has_super(g))
        .collect()
}

/// The block holding the superblock: block 1 for 1 KiB blocks (also with
/// bigalloc, where the first data block is 0).
fn super_block(fs: &Fs) -> u64 {
    let geo = &fs.geo;
    if geo.block_size == 1024 && geo.first_data_block == 0 {
        1
    } else {
        geo.first_data_block
    }
}

/// Recreates the resize inode; returns whether it was staged. Sets
/// `large_file` when the new inode's size needs the feature.
pub(super) fn recreate(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    large_file: &mut bool,
) -> super::Result<bool> {
    let geo = &fs.geo;
    let bs = fs.block_size();
    let apb = u64::from(geo.block_size / 4);
    let sb_blk = super_block(fs);
    let desc = u64::from(geo.desc_blocks);
    let rsv = u64::from(geo.reserved_gdt_blocks);
    let Some(mut old) = vol::read_inode(fs, overlay, Ino::RESIZE)? else {
        return Ok(false);
    };
    let first_gdt = sb_blk + 1 + desc;
    let backups = backup_groups(fs);
    let copy = |gdt: u64, g: u32| gdt + u64::from(g) * u64::from(geo.blocks_per_group);
    // Every number the maps hold is 32 bits; the reserved blocks must lie
    // inside the file system.
    let last_gdt = first_gdt + rsv;
    let fits = |b: u64| b < geo.blocks_count && u32::try_from(b).is_ok();
    if rsv > 0
        && (!fits(last_gdt - 1)
            || backups
                .last()
                .is_some_and(|&g| u32::try_from(copy(last_gdt - 1, g)).is_err()))
    {
        return Ok(false);
    }

    // The old double indirect block goes back unless it is shared or
    // metadata (then it stays in use for its other owner).
    let old_dind = u64::from(InodeMut(&mut old).block_ptr(DIND_SLOT));
    let freed = geo.block_in_fs(old_dind) && {
        let c = state.cluster(old_dind);
        state.block_used.get(c) && !state.block_dup.get(c) && !state.block_meta.get(c)
    };
    let mut alloc = Allocator::new(fs, &state.block_used);
    let checkpoint = alloc.checkpoint();
    if freed {
        alloc.free(Blk(old_dind));
    }
    // Blocks e2fsck's pass 1 sets aside for a missing root and a missing
    // lost+found before it recreates this inode: the lowest free ones.
    let set_aside =
        usize::from(!state.inode_used.get(Ino::ROOT)) + usize::from(state.lost_found == Ino::NONE);
    let aside: Vec<Blk> = (0..set_aside)
        .map_while(|_| alloc.take_lowest(overlay))
        .collect();
    let goal = sb_blk + desc + rsv + 2 + u64::from(geo.inode_table_blocks);
    let dind = alloc.take(overlay, Blk(goal));
    for &b in &aside {
        alloc.free(b);
    }
    let Some(dind32) = dind.and_then(Blk::ptr32) else {
        alloc.rollback(checkpoint);
        return Ok(false);
    };
    let dind = u64::from(dind32);

    // The double indirect block and the reserved GDT blocks it maps.
    let mut dind_buf = vec![0u8; bs];
    let mut count = 1u64;
    for r in 0..rsv {
        let gdt = first_gdt + r;
        let slot = narrow::to_usize((desc + r) % apb);
        // The resize inode is block-mapped: its blocks sit below 2^32.
        set_map_ptr(&mut dind_buf, slot, narrow::sat32(gdt));
        let mut gdt_buf = vec![0u8; bs];
        for (j, &g) in backups.iter().enumerate().take(bs / 4) {
            set_map_ptr(&mut gdt_buf, j, narrow::sat32(copy(gdt, g)));
        }
        count += 1 + backups.len().min(bs / 4) as u64;
        vol::stage_if_changed(fs, overlay, gdt, gdt_buf)?;
    }
    vol::stage_if_changed(fs, overlay, dind, dind_buf)?;

    // The inode, as the library writes a new one.
    let now = super::lostfound::now(fs);
    let size = (apb * apb + apb + NDIR_BLOCKS) * bs as u64;
    let i_blocks = count * fs.geo.block_sectors();
    let huge = fs.sb.has_ro_compat(ro_compat::HUGE_FILE);
    if !huge && i_blocks > u64::from(u32::MAX) {
        alloc.rollback(checkpoint);
        return Ok(false);
    }
    if !vol::edit_inode(fs, overlay, Ino::RESIZE, |m| {
        m.0.fill(0);
        m.set_mode(MODE);
        m.set_size(size);
        m.set_times(now);
        m.set_links(1);
        m.set_blocks(i_blocks, huge);
        m.set_block_ptr(DIND_SLOT, dind32);
        if m.0.len() > GOOD_OLD_INODE_SIZE {
            m.set_extra_isize(crate::fs::inode::NEW_EXTRA_ISIZE);
            if m.0.len() >= I_CRTIME + 4 {
                m.set_crtime(now);
            }
        }
    })? {
        alloc.rollback(checkpoint);
        return Ok(false);
    }
    if size >= LARGE_FILE_SIZE {
        *large_file = true;
    }
    Ok(true)
}
