//! An orphan file that cannot be set up (its size not a whole number of
//! blocks, a hole before i_size's last block, a map that cannot be
//! walked: `check::orphan`) is made anew, as e2fsck answers "Failed to
//! initialize orphan file. Recreate? yes" after its passes: the old file's
//! blocks are given back, the inode emptied, and a file of the default
//! size made in the same inode.
//!
//! What e2fsck decides, followed here:
//! - size: 32 blocks under 128 Ki blocks, one block in 4096 under 2 Mi
//!   blocks, else 512 (rounded up to a whole cluster);
//! - place: free blocks in ascending order from the first data block,
//!   each searched from the one before (the old file's blocks free
//!   again, so it usually lands where it was); a block-mapped file takes
//!   each indirect block just before the first block it maps;
//! - contents: every block empty (no entries, the tail magic, and with
//!   metadata_csum its checksum for generation 0); the inode a regular
//!   file 0600 with one link, generation 0, EXTENTS_FL with extents,
//!   times now; orphan_file set, orphan_present cleared.
//!
//! Not done (the problem is left): bigalloc, and an extent-mapped file
//! that free space would split into more extents than the inode holds.

use super::journal_inode::{Placement, mapped_blocks, place};
use crate::check::state::State;
use crate::fs::inode::{self as finode, InodeMut, flags};
use crate::fs::num::{Blk, Ino};
use crate::fs::orphan as ofile;
use crate::fs::superblock::{compat, incompat, ro_compat};
use crate::narrow;
use crate::store::overlay::Overlay;
use crate::volume::{Allocator, Fs, edit as vol};
use std::collections::BTreeSet;

/// e2fsck's orphan file size, in blocks, for a file system of `blocks`
/// blocks and clusters of `ratio` blocks.
pub fn default_blocks(blocks: u64, ratio: u64) -> u64 {
    let n = match blocks {
        b if b < 128 * 1024 => 32,
        b if b < 2 * 1024 * 1024 => b / 4096,
        _ => 512,
    };
    n.div_ceil(ratio.max(1)) * ratio.max(1)
}

/// Makes the orphan file anew. Ok(None) when done; Ok(Some(why)) when
/// this case is not handled, nothing staged.
pub(super) fn recreate(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
) -> super::Result<Option<String>> {
    let sb = &fs.sb;
    let geo = &fs.geo;
    let ino = sb.orphan_file_inum;
    if geo.cluster_bits > 0 {
        return Ok(Some(
            "recreating the orphan file on bigalloc is not implemented yet".into(),
        ));
    }
    let n = default_blocks(geo.blocks_count, 1);
    let old = old_blocks(fs, overlay, ino);
    let extents = sb.has_incompat(incompat::EXTENTS);
    let mut alloc = Allocator::new(fs, &state.block_used);
    let checkpoint = alloc.checkpoint();
    let spot = match place(
        &mut alloc,
        fs,
        state,
        overlay,
        &old,
        geo.first_data_block,
        n,
        "orphan file",
    ) {
        Ok(spot) => spot,
        Err(why) => return Ok(Some(why)),
    };
    let Placement {
        block,
        data,
        ind_blocks,
        ind_count,
    } = spot;
    let need = n + ind_count;
    let bs = fs.block_size();

    // Empty blocks, checksummed for generation 0 (the new inode's).
    for &p in &data {
        let csum = fs.metadata_csum().then_some((fs.csum_seed, Ino(ino), 0, p));
        vol::stage_if_changed(fs, overlay, p, ofile::empty_block(bs, csum))?;
    }
    for (p, bytes) in ind_blocks {
        overlay.stage(Blk(p), bytes)?;
    }

    let now = fs.clock.now_u32();
    let isz = geo.inode_len();
    let sectors = need * geo.block_sectors();
    let mut raw = vec![0u8; isz];
    let mut m = InodeMut(&mut raw);
    m.set_mode(0o100600);
    m.set_size(n * u64::from(geo.block_size));
    m.set_times(now);
    m.set_links(1);
    m.set_blocks(sectors, true);
    if extents {
        m.set_flags(flags::EXTENTS);
    }
    m.i_block_mut().copy_from_slice(&block);
    if isz > finode::GOOD_OLD_INODE_SIZE {
        m.set_extra_isize(narrow::sat16(isz - 128).min(32));
        if isz >= finode::field::I_CRTIME + 4 {
            m.set_crtime(now);
        }
    }
    if !vol::write_inode(fs, overlay, Ino(ino), &raw)? {
        alloc.rollback(checkpoint);
        return Err("the orphan file inode has no valid location".into());
    }
    // A file in use now, whatever pass 1 made of the old inode.
    state.inode_used.set(Ino(ino));

    vol::edit_superblock(fs, overlay, |s| {
        s.set_compat(s.compat() | compat::ORPHAN_FILE);
        s.set_ro_compat(s.ro_compat() & !ro_compat::ORPHAN_PRESENT);
        s.set_orphan_file_inum(ino);
    })?;
    Ok(None)
}

/// orphan_present without orphan_file cleared, as e2fsck clears it after
/// its passes. Whether it staged something.
pub(super) fn clear_present(fs: &Fs, overlay: &mut Overlay) -> super::Result<bool> {
    let sb = &fs.sb;
    if !sb.has_ro_compat(ro_compat::ORPHAN_PRESENT) || sb.has_compat(compat::ORPHAN_FILE) {
        return Ok(false);
    }
    vol::edit_superblock(fs, overlay, |s| {
        s.set_ro_compat(s.ro_compat() & !ro_compat::ORPHAN_PRESENT);
    })?;
    Ok(true)
}

/// Blocks the old orphan file maps, nodes included.
fn old_blocks(fs: &Fs, overlay: &Overlay, ino: u32) -> BTreeSet<u64> {
    let Ok(Some(raw)) = vol::read_inode(fs, overlay, Ino(ino)) else {
        return BTreeSet::new();
    };
    let inode = finode::Inode::parse(&raw);
    if inode.links_count == 0 || inode.has_flag(flags::INLINE_DATA) {
        // Pass 1 took it for unused: its blocks are not counted in use.
        return BTreeSet::new();
    }
    mapped_blocks(fs, ino, &inode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sizes() {
        assert_eq!(default_blocks(16384, 1), 32);
        assert_eq!(default_blocks(128 * 1024, 1), 32);
        assert_eq!(default_blocks(1 << 20, 1), 256);
        assert_eq!(default_blocks(1 << 30, 1), 512);
        assert_eq!(default_blocks(16384, 16), 32);
        assert_eq!(default_blocks(200 * 1024, 16), 64);
    }
}
