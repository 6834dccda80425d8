//! Pass 1E: a block-mapped file rebuilt as an extent tree, as e2fsck does
//! for a regular file or directory of a bigalloc file system ("cannot be
//! block mapped": the kernel cannot allocate clusters to a block map).
//!
//! The mapping stays what it is: the data blocks are walked in logical
//! order (pass 1's walker, so exactly the blocks pass 1 claimed), runs
//! that continue each other logically and physically become one extent
//! (at most 32768 blocks), the indirect blocks are dropped and no longer
//! counted in i_blocks (e2fsck's accounting: each counted as a cluster).
//! Up to four extents sit in the inode; more go to leaf blocks under a
//! one-level index in the inode (lowest free clusters), up to four leaves.
//! The freed blocks and i_blocks are judged again by the next round's
//! check, as e2fsck's next run would.
//!
//! It runs once pass 1D has nothing left to copy, as e2fsck's pass 1E runs
//! after it: pass 1D copies the blocks of the files sharing with this one
//! as they were.

use super::dup::Alloc;
use crate::check::blockmap::{MapVisitor, Scratch};
use crate::check::pass1;
use crate::check::problem::Problem;
use crate::check::state::State;
use crate::fs::bytes::{le16, le32, put_le16, put_le32};
use crate::fs::extent::{self, EXTENT_MAGIC, INIT_MAX_LEN};
use crate::fs::inode::field::*;
use crate::fs::inode::{Inode, flags, inode_csum_seed};
use crate::fs::superblock::{incompat, ro_compat};
use crate::repair::overlay::Overlay;
use crate::volume::Fs;

/// Entries an extent root in i_block holds.
const ROOT_MAX: usize = 4;

/// The data runs and mapping blocks of a block map.
struct Collect {
    /// (logical, physical, length), merged as e2fsck merges them.
    runs: Vec<(u64, u64, u64)>,
    nodes: u64,
    budget: u64,
}

impl MapVisitor for Collect {
    fn data(&mut self, lblk: u64, pblk: u64, len: u64, _unwritten: bool) {
        let len = len.min(self.budget);
        self.budget -= len;
        if len == 0 {
            return;
        }
        if let Some(r) = self.runs.last_mut()
            && r.0 + r.2 == lblk
            && r.1 + r.2 == pblk
            && r.2 + len < 1 << 32
        {
            r.2 += len;
            return;
        }
        self.runs.push((lblk, pblk, len));
    }
    fn node(&mut self, _pblk: u64) {
        self.budget = self.budget.saturating_sub(1);
        self.nodes += 1;
    }
    fn problem(&mut self, _p: Problem) {}
    fn done(&self) -> bool {
        self.budget == 0
    }
}

/// Rebuilds inode `ino`'s block map as an extent tree. Returns whether it
/// staged the new inode (false: not a block map, no extents feature, or
/// too many extents for a one-level tree).
pub(super) fn rebuild(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    ino: u32,
) -> Result<bool, String> {
    if !fs.sb.has_incompat(incompat::EXTENTS) {
        // e2fsck answers yes and does nothing without the feature.
        return Ok(false);
    }
    let Some(raw) = super::inode::read(fs, overlay, ino)? else {
        return Ok(false);
    };
    let inode = Inode::parse(&raw);
    if inode.has_flag(flags::EXTENTS)
        || inode.has_flag(flags::INLINE_DATA)
        || inode.links_count == 0
        || !pass1::has_valid_blocks(&inode)
    {
        return Ok(false);
    }
    let ctx = pass1::Ctx::new(fs, state);
    let mut c = Collect {
        runs: Vec::new(),
        nodes: 0,
        budget: fs.geo.blocks_count,
    };
    let mut scratch = Scratch::new();
    pass1::walk_map(&ctx, ino, &inode, false, &mut scratch, &mut c);
    // Extents hold at most 32768 blocks and a 32-bit logical start.
    let max = u64::from(INIT_MAX_LEN);
    let mut entries: Vec<[u8; 12]> = Vec::new();
    for &(l, p, n) in &c.runs {
        let mut k = 0;
        while k < n {
            let len = (n - k).min(max);
            let Ok(lblk) = u32::try_from(l + k) else {
                return Ok(false);
            };
            let mut e = [0u8; 12];
            put_le32(&mut e, 0, lblk);
            put_le16(&mut e, 4, len as u16);
            put_le16(&mut e, 6, ((p + k) >> 32) as u16);
            put_le32(&mut e, 8, (p + k) as u32);
            entries.push(e);
            k += len;
        }
    }
    let bs = fs.block_size();
    let per_leaf = extent::max_entries(bs) as usize;
    let mut root = [0u8; 60];
    put_le16(&mut root, 0, EXTENT_MAGIC);
    put_le16(&mut root, 4, ROOT_MAX as u16);
    let mut leaves: Vec<(u64, Vec<u8>)> = Vec::new();
    if entries.len() <= ROOT_MAX {
        put_entries(&mut root, &entries);
    } else {
        let chunks: Vec<&[[u8; 12]]> = entries.chunks(per_leaf.max(1)).collect();
        if chunks.len() > ROOT_MAX || per_leaf == 0 {
            return Ok(false);
        }
        let seed = fs
            .metadata_csum()
            .then(|| inode_csum_seed(fs.csum_seed, ino, inode.generation));
        let mut alloc = Alloc::new(fs);
        let mut index = Vec::new();
        for chunk in chunks {
            let Some(b) = alloc.take(state, overlay, u64::MAX) else {
                return Ok(false);
            };
            let mut node = vec![0u8; bs];
            put_le16(&mut node, 0, EXTENT_MAGIC);
            put_le16(&mut node, 4, per_leaf as u16);
            put_entries(&mut node, chunk);
            if let Some(seed) = seed
                && let Some(sum) = extent::compute_block_checksum(seed, &node)
            {
                put_le32(&mut node, extent::tail_offset(per_leaf as u16), sum);
            }
            let mut ix = [0u8; 12];
            put_le32(&mut ix, 0, le32(&chunk[0], 0));
            put_le32(&mut ix, 4, b as u32);
            put_le16(&mut ix, 8, (b >> 32) as u16);
            index.push(ix);
            leaves.push((b, node));
        }
        put_le16(&mut root, 6, 1);
        put_entries(&mut root, &index);
        for &b in &alloc.taken {
            state.block_used.set(state.cluster(b));
        }
    }
    for (b, node) in leaves.iter() {
        overlay.stage(*b, node.clone()).map_err(|e| e.to_string())?;
    }
    // i_blocks loses the mapping blocks and gains the leaves, each
    // counted as a whole cluster (e2fsck's i_blocks arithmetic).
    let huge = fs.sb.has_ro_compat(ro_compat::HUGE_FILE) && inode.has_flag(flags::HUGE_FILE);
    let unit = if huge {
        1
    } else {
        u64::from(fs.geo.block_size / 512)
    } << fs.geo.cluster_bits;
    let hi_ok = fs.sb.has_ro_compat(ro_compat::HUGE_FILE);
    let new_leaves = leaves.len() as u64;
    super::inode::edit(fs, overlay, ino, |b| {
        let hi = if hi_ok {
            u64::from(le16(b, I_BLOCKS_HIGH))
        } else {
            0
        };
        let blocks = (u64::from(le32(b, I_BLOCKS_LO)) | (hi << 32))
            .saturating_sub(c.nodes.saturating_mul(unit))
            .saturating_add(new_leaves * unit);
        put_le32(b, I_BLOCKS_LO, blocks as u32);
        if hi_ok {
            put_le16(b, I_BLOCKS_HIGH, (blocks >> 32) as u16);
        }
        put_le32(b, I_FLAGS, le32(b, I_FLAGS) | flags::EXTENTS);
        b[I_BLOCK..I_BLOCK + 60].copy_from_slice(&root);
    })
}

/// Writes `entries` after a node header and sets its entry count.
fn put_entries(node: &mut [u8], entries: &[[u8; 12]]) {
    put_le16(node, 2, entries.len() as u16);
    for (i, e) in entries.iter().enumerate() {
        let off = 12 + 12 * i;
        node[off..off + 12].copy_from_slice(e);
    }
}
