//! An internal journal that cannot be used (its inode or its superblock is
//! invalid) is replaced by a fresh one, as e2fsck does: it clears the
//! journal ("*** journal has been deleted ***"), lets pass 1 clear the
//! inode and pass 5 free its blocks, and after the check recreates it
//! ("Recreate journal? yes ... *** journal has been regenerated ***").
//! Here both happen in one fix, on the maps of the finished check: the old
//! inode's blocks that no one else claims count as free, and the new
//! journal takes free blocks the way e2fsck's library allocates them.
//!
//! What e2fsck decides, followed here:
//! - size: the old journal's size from the superblock backup (s_jnl_blocks,
//!   read as megabytes) when that is at least 1024, else the default for
//!   the file system size (1024 blocks under 32768 blocks, ... 262144);
//!   under 2048 blocks no journal is made and has_journal is cleared;
//! - place: free blocks in ascending order, wrapping at the end, from the
//!   first block of the group with the most free blocks among the middle
//!   group and its neighbours (with flex_bg, the first group of the middle
//!   flex group that has free blocks) for an extent-mapped journal; from
//!   the first block of the journal inode's (flex) group for a
//!   block-mapped one, each indirect block taken just before the first
//!   block it maps;
//! - contents: every journal block zeroed, block 0 a v2 journal superblock
//!   (first 1, sequence 1, empty, one user, the file system's UUID); the
//!   inode a regular file 0600 with one link, EXTENTS_FL with extents;
//!   the superblock's backup of the inode's block map, has_journal set,
//!   needs_recovery cleared.
//!
//! Not done (the repair leaves the problem): fast_commit journals, and an
//! extent-mapped journal needing more than the four extents the inode
//! holds (e2fsck would add an extent tree block).

use crate::check::blockmap::{self, MapInfo, MapVisitor, Scratch};
use crate::check::problem::{Code, Problem};
use crate::check::state::State;
use crate::fs::bytes::put_le32;
use crate::fs::extent::Extent;
use crate::fs::inode::{self as finode, InodeMut, flags};
use crate::fs::num::{Blk, Ino};
use crate::fs::superblock::{JNL_BACKUP_BLOCKS, compat, incompat};
use crate::narrow;
use crate::store::overlay::Overlay;
use crate::volume::{Allocator, Fs, edit as vol, extent};
use std::collections::BTreeSet;

/// e2fsck's size rule reads the backup size in MiB; below this the
/// default size is used.
const MIN_BACKUP_SIZE: i64 = 1024;
/// Longest initialised extent.
const MAX_EXTENT: u64 = 32768;
/// Bytes of old journal contents zeroed at most. A journal whose s_start
/// is 0 is never read past its superblock, so leftovers are harmless;
/// zeroing more would only grow the undo log.
const ZEROING_BUDGET: u64 = 256 * 1024 * 1024;

/// e2fsck's default journal size in blocks for a file system of `blocks`
/// blocks; None when it is too small for a journal.
pub fn default_journal_blocks(blocks: u64) -> Option<u64> {
    let k = 1024u64;
    Some(match blocks {
        b if b < 2048 => return None,
        b if b < 32 * k => 1024,
        b if b < 256 * k => 4096,
        b if b < 512 * k => 8192,
        b if b < 4096 * k => 16384,
        b if b < 8192 * k => 32768,
        b if b < 16384 * k => 65536,
        b if b < 32768 * k => 131072,
        _ => 262144,
    })
}

/// Replaces the journal. Ok(None) when done (or when the file system is
/// too small for one, then has_journal is cleared instead); Ok(Some(why))
/// when this case is not handled, nothing staged.
pub(super) fn recreate(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
) -> super::Result<Option<String>> {
    let sb = &fs.sb;
    let geo = &fs.geo;
    if sb.has_compat(compat::FAST_COMMIT) {
        return Ok(Some(
            "recreating a journal with fast-commit blocks is not implemented yet".into(),
        ));
    }
    let Some(n) = journal_blocks(fs) else {
        vol::edit_superblock(fs, overlay, |s| {
            s.set_compat(s.compat() & !compat::HAS_JOURNAL);
            s.clear_journal();
        })?;
        return Ok(None);
    };

    // The old journal's blocks that only it claimed become free.
    let old = old_blocks(fs);
    let only_old = |b: u64| {
        let c = state.cluster(b);
        old.contains(&b) && !state.block_dup.get(c) && !state.block_meta.get(c)
    };
    // In clusters, as the descriptors count free space on bigalloc.
    let group_free = |g: u32| {
        let first = geo.group_first_block(g);
        let end = first + u64::from(geo.group_blocks(g));
        let (c0, c1) = (state.cluster(first), state.cluster(end));
        let used = state.block_used.count_range(c0, c1);
        let back: BTreeSet<_> = old
            .range(first..end)
            .filter(|&&b| only_old(b))
            .map(|&b| state.cluster(b))
            .collect();
        (c1.0 - c0.0).saturating_sub(used) + back.len() as u64
    };
    let extents = sb.has_incompat(incompat::EXTENTS);
    // The library aims an extent-mapped journal at the middle of the file
    // system; a block-mapped one it allocates block by block, each from
    // the block before, the first from the start of the journal inode's
    // (flex) group, where an inode without blocks has its goal.
    let goal = if extents {
        midpoint_goal(fs, &group_free)
    } else {
        inode_group_goal(fs)
    };
    let mut alloc = Allocator::new(fs, &state.block_used);
    let spot = match place(&mut alloc, fs, state, overlay, &old, goal, n, "journal") {
        Ok(spot) => spot,
        Err(why) => return Ok(Some(why)),
    };
    let Placement {
        block,
        data,
        ind_blocks,
        ind_count,
    } = spot;

    stage_contents(fs, overlay, &data, ind_blocks, n)?;

    let size = n * u64::from(geo.block_size);
    // i_blocks counts whole clusters on bigalloc.
    let blocks = (n + ind_count).next_multiple_of(1 << geo.cluster_bits);
    let raw = journal_inode(fs, size, blocks, extents, &block);
    if !vol::write_inode(fs, overlay, Ino::JOURNAL, &raw)? {
        return Err("the journal inode has no valid location".into());
    }

    // The superblock.
    vol::edit_superblock(fs, overlay, |s| {
        s.set_compat(s.compat() | compat::HAS_JOURNAL);
        s.set_incompat(s.incompat() & !incompat::RECOVER);
        s.clear_journal();
        s.set_journal_inum(Ino::JOURNAL);
        s.set_journal_backup(&block, size);
    })?;
    Ok(None)
}

/// The new journal's size in blocks, as e2fsck picks it: the old one's
/// from the superblock's backup when that is large enough, else the
/// default for the file system's size; None when it is too small for one.
fn journal_blocks(fs: &Fs) -> Option<u64> {
    let sb = &fs.sb;
    let backup = if sb.jnl_backup_type == JNL_BACKUP_BLOCKS {
        (i64::from(sb.jnl_blocks[15]) << 12) | (i64::from(sb.jnl_blocks[16]) >> 20)
    } else {
        -1
    };
    if backup < MIN_BACKUP_SIZE {
        default_journal_blocks(fs.geo.blocks_count)
    } else {
        Some(backup as u64)
    }
}

/// The inode's i_block for a file on the blocks `picked` (in logical
/// order): an extent tree in the inode, or Err(the extents it would need)
/// when more than the inode holds.
fn extent_root(picked: &[u64], bs: usize) -> Result<[u8; 60], usize> {
    let runs = extent_runs(picked);
    // In the inode only (no leaf blocks).
    match extent::build(&runs, bs, 0, None, || None) {
        Some(tree) => Ok(tree.root),
        None => Err(runs.len()),
    }
}

/// Where a recreated special file (the journal, the orphan file) goes:
/// its i_block, its data blocks in logical order, and its indirect blocks
/// with their contents.
pub(super) struct Placement {
    pub block: [u8; 60],
    pub data: Vec<u64>,
    pub ind_blocks: Vec<(u64, Vec<u8>)>,
    pub ind_count: u64,
}

/// Places a new `n`-block file from `goal`, the blocks of the old one
/// (`old`) that nothing else claims free again: mapped by extents in the
/// inode where the file system has extents, else block-mapped.
/// Err(why the case is not handled), with the allocator as it was;
/// `what` names the file in that reason.
#[allow(clippy::too_many_arguments)]
pub(super) fn place(
    alloc: &mut Allocator,
    fs: &Fs,
    state: &State,
    overlay: &Overlay,
    old: &BTreeSet<u64>,
    goal: u64,
    n: u64,
    what: &str,
) -> Result<Placement, String> {
    let extents = fs.sb.has_incompat(incompat::EXTENTS);
    let bs = fs.block_size();
    let apb = (bs / 4) as u64;
    let ind_count = if extents { 0 } else { indirect_blocks(n, apb) };
    let need = n + ind_count;
    let checkpoint = alloc.checkpoint();
    for &b in old {
        let c = state.cluster(b);
        if !state.block_dup.get(c) && !state.block_meta.get(c) {
            alloc.free(Blk(b));
        }
    }
    let picked = pick(alloc, overlay, goal, need, 1 << fs.geo.cluster_bits);
    if (picked.len() as u64) < need {
        alloc.rollback(checkpoint);
        return Err(format!("not enough free blocks for a {n}-block {what}"));
    }
    let mut spot = Placement {
        block: [0u8; 60],
        data: Vec::with_capacity(narrow::to_usize(n)),
        ind_blocks: Vec::new(),
        ind_count,
    };
    if extents {
        spot.data.extend_from_slice(&picked);
        match extent_root(&picked, bs) {
            Ok(root) => spot.block = root,
            Err(k) => {
                alloc.rollback(checkpoint);
                return Err(format!(
                    "the free space would give the {what} {k} extents; more than the inode \
                     holds is not implemented yet"
                ));
            }
        }
    } else if picked.iter().any(|&b| u32::try_from(b).is_err()) {
        // A block map holds 32-bit pointers only.
        alloc.rollback(checkpoint);
        return Err(format!(
            "a block-mapped {what} cannot reach the free blocks past 2^32"
        ));
    } else {
        map_indirect(
            &picked,
            n,
            apb,
            bs,
            &mut spot.block,
            &mut spot.data,
            &mut spot.ind_blocks,
        );
    }
    Ok(spot)
}

/// The extents that map `picked` (logical block i at picked[i]), runs of
/// consecutive blocks joined up to the longest extent.
fn extent_runs(picked: &[u64]) -> Vec<Extent> {
    let mut runs: Vec<Extent> = Vec::new();
    for (l, &p) in picked.iter().enumerate() {
        match runs.last_mut() {
            Some(e) if e.pblk + u64::from(e.len) == p && u64::from(e.len) < MAX_EXTENT => {
                e.len += 1
            }
            _ => runs.push(Extent {
                lblk: narrow::sat32(l),
                len: 1,
                pblk: p,
                unwritten: false,
            }),
        }
    }
    runs
}

/// Stages the journal's contents: zeroed blocks (only where not zero
/// already, and within the staging budget: a journal with s_start 0 is
/// never read past its superblock, so leftovers there are harmless), the
/// indirect blocks, the journal superblock in block 0.
fn stage_contents(
    fs: &Fs,
    overlay: &mut Overlay,
    data: &[u64],
    ind_blocks: Vec<(u64, Vec<u8>)>,
    n: u64,
) -> super::Result<()> {
    let bs = fs.block_size();
    let zero = vec![0u8; bs];
    let mut cur = vec![0u8; bs];
    for &p in data.iter().skip(1) {
        if overlay.staged_bytes() + (bs as u64) * 64 > ZEROING_BUDGET {
            break;
        }
        overlay
            .read_at(&fs.dev, Blk(p).byte(fs.geo.block_size), &mut cur)
            .map_err(|e| format!("cannot read block {p}: {e}"))?;
        if cur != zero {
            overlay.stage(Blk(p), zero.clone())?;
        }
    }
    for (p, bytes) in ind_blocks {
        overlay.stage(Blk(p), bytes)?;
    }
    let jsb = crate::fs::journal::new_superblock(fs.geo.block_size, narrow::sat32(n), &fs.sb.uuid);
    overlay.stage(Blk(data[0]), jsb)?;
    Ok(())
}

/// The journal inode: a regular file 0600 with one link, `size` bytes on
/// `blocks` blocks (its map's own included), i_block as given.
fn journal_inode(fs: &Fs, size: u64, blocks: u64, extents: bool, i_block: &[u8; 60]) -> Vec<u8> {
    let geo = &fs.geo;
    let now = fs.clock.now_u32();
    let isz = geo.inode_len();
    let sectors = blocks * geo.block_sectors();
    let mut raw = vec![0u8; isz];
    let mut m = InodeMut(&mut raw);
    m.set_mode(0o100600);
    m.set_size(size);
    m.set_times(now);
    m.set_links(1);
    m.set_blocks(sectors, true);
    if extents {
        m.set_flags(flags::EXTENTS);
    }
    m.i_block_mut().copy_from_slice(i_block);
    if isz > finode::GOOD_OLD_INODE_SIZE {
        m.set_extra_isize(narrow::sat16(isz - 128).min(32));
        if isz >= crate::fs::inode::field::I_CRTIME + 4 {
            m.set_crtime(now);
        }
    }
    raw
}

/// `need` free blocks in libext2fs' order: ascending from `goal`, then
/// from the first data block up to it; fewer when there are not as many.
/// On bigalloc every block of a cluster taken is used (`cluster_blocks`
/// per cluster): the allocator hands out whole clusters, and a file
/// given only their first blocks would be one extent per block.
fn pick(
    alloc: &mut Allocator,
    overlay: &Overlay,
    goal: u64,
    need: u64,
    cluster_blocks: u64,
) -> Vec<u64> {
    let first = alloc.first_data_block();
    let start = Blk(goal).max(first);
    let mut picked = Vec::new();
    let (mut at, mut end, mut wrapped) = (start, alloc.end_block(), false);
    while (picked.len() as u64) < need {
        match alloc.take_from(overlay, at, end) {
            Some(b) => {
                let left = need - picked.len() as u64;
                picked.extend(b.get()..b.get() + cluster_blocks.min(left));
                at = b.next();
            }
            None if !wrapped => (at, end, wrapped) = (first, start, true),
            None => break,
        }
    }
    picked
}

/// Writes the journal inode the check read from the superblock's backup
/// (`check::journal::backup_inode_bytes`) over the invalid one, as e2fsck
/// does before pass 1: its first 128 bytes, the rest of the on-disk inode
/// kept, the checksum recomputed. Whether it staged something.
pub(super) fn restore_from_backup(fs: &Fs, overlay: &mut Overlay) -> super::Result<bool> {
    let Some(small) = crate::check::journal::backup_inode_bytes(fs) else {
        return Ok(false);
    };
    let ino = fs.sb.journal_inum;
    let placed = vol::edit_inode(fs, overlay, Ino(ino), |m| {
        let n = small.len().min(m.0.len());
        m.0[..n].copy_from_slice(&small[..n]);
    })?;
    if !placed {
        return Err("the journal inode has no valid location".into());
    }
    Ok(true)
}

/// Moves a journal kept in a visible file of the root directory
/// (`check::journal::visible`) to the reserved journal inode, as e2fsck
/// does before pass 1: the root's entry removed, the first 128 bytes of
/// the file's inode copied over the journal inode (the rest of that inode
/// kept), the file's inode released (no links, deleted now, free in its
/// group's bitmap and counts), the superblock and its backups pointed at
/// the journal inode. The journal's blocks stay where they are. Whether
/// it staged something (nothing when the entry is gone).
pub(super) fn move_to_hidden(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    p: &Problem,
) -> super::Result<bool> {
    let Some(old) = p.args().ino else {
        return Ok(false);
    };
    let Some(raw) = vol::read_inode(fs, overlay, old)? else {
        return Ok(false);
    };
    let mut links = super::lostfound::Links::new();
    if !super::dir::unlink(
        fs,
        state,
        overlay,
        Ino::ROOT,
        old,
        p.args().detail,
        &mut links,
    )? {
        return Ok(false);
    }
    let small = &raw[..finode::GOOD_OLD_INODE_SIZE.min(raw.len())];
    let placed = vol::edit_inode(fs, overlay, Ino::JOURNAL, |m| {
        m.0[..small.len()].copy_from_slice(small);
    })?;
    if !placed {
        return Err("the journal inode has no valid location".into());
    }
    let t = super::lostfound::now(fs);
    vol::edit_inode(fs, overlay, old, |m| {
        m.set_links(0);
        m.set_dtime(t);
    })?;
    let mut stats = crate::volume::stats::AllocStats::new(fs);
    stats.free_inode(overlay, old, false);
    stats.flush(overlay);
    vol::edit_superblock(fs, overlay, |sb| {
        sb.set_journal_inum(Ino::JOURNAL);
        stats.count_in(sb);
    })?;
    vol::write_backups(fs, overlay)?;
    Ok(true)
}

/// Clears the journal superblock's fields past the version 1 layout
/// (`check::journal::stray_v2_fields`), as e2fsck does before it reads the
/// journal. Whether it staged something.
pub(super) fn clear_v2_fields(fs: &Fs, overlay: &mut Overlay) -> super::Result<bool> {
    let inode = crate::check::journal::journal_inode(fs)?;
    let blk = crate::check::journal::first_block(fs, &inode)?;
    let bs = u64::from(fs.geo.block_size);
    let before = vol::read_block(fs, overlay, blk)?;
    let mut after = before.clone();
    crate::fs::journal::clear_v2_fields(&mut after);
    if after == before {
        return Ok(false);
    }
    vol::edit_bytes(fs, overlay, blk * bs, fs.block_size(), |b| {
        b.copy_from_slice(&after)
    })?;
    Ok(true)
}

/// Blocks the old journal inode maps (as pass 1 walked it).
fn old_blocks(fs: &Fs) -> BTreeSet<u64> {
    match fs.read_inode_raw(Ino::JOURNAL) {
        Ok(raw) => mapped_blocks(fs, Ino::JOURNAL.get(), &finode::Inode::parse(&raw)),
        Err(_) => BTreeSet::new(),
    }
}

/// Every block an inode's map names, its tree nodes and indirect blocks
/// included, walked as pass 1 walks it.
pub(super) fn mapped_blocks(fs: &Fs, ino: u32, inode: &finode::Inode) -> BTreeSet<u64> {
    #[derive(Default)]
    struct V(BTreeSet<u64>);
    impl MapVisitor for V {
        fn data(&mut self, _l: u64, p: u64, len: u64, _u: bool) {
            for b in p..p.saturating_add(len) {
                self.0.insert(b);
            }
        }
        fn node(&mut self, p: u64) {
            self.0.insert(p);
        }
        fn problem(&mut self, _p: Problem) {}
    }
    let mut v = V::default();
    let mut scratch = Scratch::new();
    if inode.has_flag(flags::EXTENTS) {
        let info = MapInfo::unbounded(ino, false);
        blockmap::walk_extents(fs, info, &inode.block, &mut scratch, &mut v);
    } else {
        blockmap::walk_indirect(fs, ino, &inode.block_ptrs(), &mut scratch, &mut v);
    }
    v.0
}

/// e2fsck's goal for a new journal: the first block of the group with
/// the most free blocks around the middle of the file system.
fn midpoint_goal(fs: &Fs, group_free: &dyn Fn(u32) -> u64) -> u64 {
    let geo = &fs.geo;
    let mid = (geo.blocks_count - geo.first_data_block) / 2;
    let mut group = geo.group_of_block(mid.max(geo.first_data_block));
    let log_flex = fs.sb.log_groups_per_flex;
    let flex = if log_flex < 32 { 1u32 << log_flex } else { 1 };
    let start;
    if log_flex != 0 && group > flex {
        group &= !(flex - 1);
        while group < geo.groups && group_free(group) == 0 {
            group += 1;
        }
        if group == geo.groups {
            group = 0;
        }
        start = group;
    } else {
        start = group.saturating_sub(1);
    }
    let end = if group + 1 < geo.groups {
        group + 1
    } else {
        group
    };
    let mut best = start;
    for g in start + 1..=end {
        if group_free(g) > group_free(best) {
            best = g;
        }
    }
    geo.group_first_block(best)
}

/// The first block of the journal inode's group, rounded down to its flex
/// group.
fn inode_group_goal(fs: &Fs) -> u64 {
    let mut group = fs.geo.group_of_inode(Ino::JOURNAL);
    let log_flex = fs.sb.log_groups_per_flex;
    if log_flex != 0 && log_flex < 32 {
        group &= !((1u32 << log_flex) - 1);
    }
    fs.geo.group_first_block(group)
}

/// Indirect blocks a block-mapped file of `n` blocks needs.
fn indirect_blocks(n: u64, apb: u64) -> u64 {
    let mut count = 0;
    let mut left = n.saturating_sub(12);
    if left > 0 {
        count += 1;
        left = left.saturating_sub(apb);
    }
    if left > 0 {
        let d = left.min(apb * apb);
        count += 1 + d.div_ceil(apb);
        left -= d;
    }
    if left > 0 {
        count += 1 + left.div_ceil(apb * apb) + left.div_ceil(apb);
    }
    count
}

/// Lays out a block-mapped file over `picked` (in allocation order): each
/// indirect block before the first block it maps. Fills i_block, the data
/// blocks in logical order and the indirect blocks' contents. Every
/// picked block is below 2^32 (`place` sees to it).
fn map_indirect(
    picked: &[u64],
    n: u64,
    apb: u64,
    bs: usize,
    block: &mut [u8; 60],
    data: &mut Vec<u64>,
    ind: &mut Vec<(u64, Vec<u8>)>,
) {
    let mut it = picked.iter().copied();
    let mut take = || it.next().unwrap_or(0);
    // Open indirect blocks by level (1 single, 2 double, 3 triple): index
    // into `ind`.
    let mut open: [Option<usize>; 4] = [None; 4];
    let set = |ind: &mut Vec<(u64, Vec<u8>)>, k: usize, slot: u64, v: u64| {
        put_le32(&mut ind[k].1, narrow::to_usize(slot * 4), narrow::sat32(v));
    };
    for l in 0..n {
        if l < 12 {
            let p = take();
            put_le32(block, narrow::to_usize(l * 4), narrow::sat32(p));
            data.push(p);
            continue;
        }
        let r1 = l - 12;
        let (top, r) = if r1 < apb {
            (1usize, r1)
        } else if r1 - apb < apb * apb {
            (2, r1 - apb)
        } else {
            (3, r1 - apb - apb * apb)
        };
        // New blocks at each level whose span starts here, top down.
        for level in (1..=top).rev() {
            let span = apb.pow(narrow::sat32(level - 1));
            if r % (span * apb) == 0 || (level == top && r == 0) {
                let p = take();
                ind.push((p, vec![0u8; bs]));
                let k = ind.len() - 1;
                if level == top {
                    put_le32(block, (11 + top) * 4, narrow::sat32(p));
                } else if let Some(parent) = open[level + 1] {
                    set(ind, parent, (r / (span * apb)) % apb, p);
                }
                open[level] = Some(k);
            }
        }
        let p = take();
        if let Some(k) = open[1] {
            set(ind, k, r % apb, p);
        }
        data.push(p);
    }
}

/// Problems that a recreated journal resolves.
pub(super) fn resolves(p: &Problem) -> bool {
    matches!(
        p.code,
        Code::JournalInodeInvalid | Code::JournalSuperblockCorrupt
    ) || p.args().ino == Some(Ino::JOURNAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sizes() {
        assert_eq!(default_journal_blocks(2047), None);
        assert_eq!(default_journal_blocks(8192), Some(1024));
        assert_eq!(default_journal_blocks(1 << 20), Some(16384));
    }

    #[test]
    fn indirect_layout_matches_count() {
        for (n, apb) in [
            (1024u64, 256u64),
            (12, 256),
            (13, 256),
            (96, 4),
            (50, 4),
            (33, 4),
        ] {
            let need = n + indirect_blocks(n, apb);
            let picked: Vec<u64> = (100..100 + need).collect();
            let mut block = [0u8; 60];
            let (mut data, mut ind) = (Vec::new(), Vec::new());
            map_indirect(
                &picked,
                n,
                apb,
                (apb * 4) as usize,
                &mut block,
                &mut data,
                &mut ind,
            );
            assert_eq!(data.len() as u64, n);
            assert_eq!(ind.len() as u64, indirect_blocks(n, apb), "n {n} apb {apb}");
            let mut all: Vec<u64> = data
                .iter()
                .copied()
                .chain(ind.iter().map(|x| x.0))
                .collect();
            all.sort();
            assert_eq!(all, picked);
        }
    }
}
