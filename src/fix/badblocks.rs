//! `-l`, `-L` and `-c`: a new bad blocks list written into the bad blocks
//! inode (inode 1) before the check, as e2fsck does after its superblock
//! checks and before pass 1. The passes then judge the list like any
//! other: a bad block a file uses is shared with inode 1 (pass 1B-1D), one
//! in the bitmaps or an inode table moves them or costs the inodes in it,
//! one in the primary superblock or descriptors is refused.
//!
//! What e2fsck's library does, in its order, since the passes see the
//! result (the counts included):
//! 1. pointers of inode 1 outside the file system are dropped (reported);
//! 2. with `replace` off, the blocks the inode lists are kept;
//! 3. every block the inode maps (its index blocks too) is freed through
//!    the allocation statistics, its index blocks remembered and zeroed;
//! 4. the list (kept and new blocks, sorted, each once) is mapped anew: 12
//!    direct pointers, then an indirect block, a double and a triple
//!    indirect one as needed. An index block is taken when the walk
//!    reaches it, even with no block left to put in it (12 bad blocks
//!    give an empty indirect block): the remembered ones first, those
//!    not in use by then, then the lowest free block. Each block mapped
//!    is counted in use, whether it was before or not (a block in use
//!    twice then shows as a wrong free count in pass 5, as in e2fsck);
//! 5. i_blocks counts the bad blocks alone (not the index blocks, as
//!    e2fsck's library sets it), i_size as many blocks, atime and mtime
//!    the run's time, ctime too when it was 0.
//!
//! Only the primary superblock's free count changes, as e2fsck writes
//! only the primary during a check.

use super::Result;
use crate::fs::inode::{self, flags};
use crate::fs::num::{Blk, Ino};
use crate::fs::superblock::ro_compat;
use crate::store::overlay::{Overlay, Staging};
use crate::volume::stats::{AllocStats, FreeError};
use crate::volume::{self as vol, Allocator, Fs};
use std::collections::BTreeSet;

/// The blocks to record and how.
#[derive(Clone, Debug, Default)]
pub struct NewList {
    /// Block numbers as read (badblocks(8)'s output or a file of it).
    pub blocks: Vec<u64>,
    /// Replace the list the inode holds (`-L`, `-c` without `-k`), or
    /// add to it.
    pub replace: bool,
}

/// The staged update.
pub struct Staged {
    pub overlay: Overlay,
    /// Pointers of the bad blocks inode outside the file system: dropped.
    pub dropped: Vec<u64>,
    /// Listed blocks outside the file system: ignored.
    pub ignored: Vec<u64>,
    /// Bad blocks the inode lists now.
    pub count: u64,
}

/// Levels of a block map pointer: a data block, or an index block whose
/// pointers are one level down.
const DATA: u8 = 0;

/// What inode 1 maps: its legal data blocks in order, its legal index
/// blocks in the order e2fsck's depth-first walk frees them (children
/// first), and the illegal pointers met (in walk order, parents first).
#[derive(Default)]
struct OldMap {
    data: Vec<u64>,
    index: Vec<u64>,
    dropped: Vec<u64>,
}

fn legal(fs: &Fs, b: u64) -> bool {
    b >= fs.geo.first_data_block && b < fs.geo.blocks_count
}

fn walk_old(fs: &Fs, st: &Overlay, ptr: u64, level: u8, map: &mut OldMap) -> Result<()> {
    if ptr == 0 {
        return Ok(());
    }
    if !legal(fs, ptr) {
        map.dropped.push(ptr);
        return Ok(());
    }
    if level == DATA {
        map.data.push(ptr);
        return Ok(());
    }
    let block = vol::edit::read_block(fs, st, ptr)?;
    for child in inode::map_ptrs(&block) {
        walk_old(fs, st, u64::from(child), level - 1, map)?;
    }
    map.index.push(ptr);
    Ok(())
}

/// The new map being laid out: the blocks left to place, the index blocks
/// to reuse, and the counting.
struct Layout<'a> {
    fs: &'a Fs,
    list: std::collections::btree_set::IntoIter<u64>,
    reuse: std::vec::IntoIter<u64>,
    stats: AllocStats<'a>,
    count: u64,
    /// Index blocks and their contents, staged at the end.
    index: Vec<(u64, Vec<u8>)>,
}

fn counted(r: std::result::Result<(), FreeError>) -> Result<()> {
    match r {
        Ok(()) | Err(FreeError::Illegal | FreeError::AlreadyFree) => Ok(()),
        Err(FreeError::Other(e)) => Err(e.into()),
    }
}

impl Layout<'_> {
    /// The next bad block, counted in use; None when the list is done.
    fn next_data(&mut self, st: &mut Overlay) -> Result<Option<u64>> {
        let Some(b) = self.list.next() else {
            return Ok(None);
        };
        counted(self.stats.count_block(st, b, true))?;
        self.count += 1;
        Ok(Some(b))
    }

    /// An index block: a remembered one not in use by now, else the
    /// lowest free block; counted in use.
    fn take_index(&mut self, st: &mut Overlay) -> Result<u64> {
        let reused = loop {
            match self.reuse.next() {
                Some(b) if self.stats.block_marked(st, b) => {}
                other => break other,
            }
        };
        let b = match reused {
            Some(b) => b,
            None => {
                let used = self.stats.in_use_map(st);
                let mut alloc = Allocator::new(self.fs, &used);
                alloc
                    .take(st, Blk(0))
                    .ok_or("no free block left for the bad blocks inode's indirect block")?
                    .0
            }
        };
        counted(self.stats.count_block(st, b, true))?;
        Ok(b)
    }

    /// Fills the pointer at `slot` (a `level` pointer) and what lies
    /// below it; false once the list is done.
    fn fill(&mut self, st: &mut Overlay, level: u8, slot: &mut u32) -> Result<bool> {
        if level == DATA {
            return Ok(match self.next_data(st)? {
                Some(b) => {
                    *slot = narrow32(b)?;
                    true
                }
                None => false,
            });
        }
        let b = self.take_index(st)?;
        *slot = narrow32(b)?;
        let per = self.fs.block_size() / 4;
        let mut ptrs = vec![0u32; per];
        let mut more = true;
        for p in &mut ptrs {
            if !self.fill(st, level - 1, p)? {
                more = false;
                break;
            }
        }
        let mut block = vec![0u8; self.fs.block_size()];
        for (i, &p) in ptrs.iter().enumerate() {
            inode::set_map_ptr(&mut block, i, p);
        }
        self.index.push((b, block));
        Ok(more)
    }
}

fn narrow32(b: u64) -> Result<u32> {
    u32::try_from(b).map_err(|_| format!("bad block {b} does not fit a block map").into())
}

/// Stages the bad blocks inode holding `list` (with the inode's own list
/// unless it is replaced), over nothing staged yet.
pub fn stage(fs: &Fs, list: &NewList, staging: &Staging) -> Result<Staged> {
    let mut st = Overlay::with_staging(fs.geo.block_size, fs.dev.size(), staging)?;
    let raw = fs.read_inode_raw(Ino::BAD)?;
    let ino = inode::Inode::parse(&raw);
    if ino.flags & (flags::EXTENTS | flags::INLINE_DATA) != 0 {
        return Err("the bad blocks inode is not a block map: its list cannot be changed".into());
    }
    let ptrs = ino.block_ptrs();
    let mut old = OldMap::default();
    for (i, &p) in ptrs.iter().enumerate() {
        // Pointers 12, 13, 14: one, two and three levels of index.
        let level = u8::try_from(i.saturating_sub(11)).unwrap_or(DATA);
        walk_old(fs, &st, u64::from(p), level, &mut old)?;
    }
    let mut blocks: BTreeSet<u64> = BTreeSet::new();
    if !list.replace {
        blocks.extend(&old.data);
    }
    let mut ignored = Vec::new();
    for &b in &list.blocks {
        if legal(fs, b) {
            blocks.insert(b);
        } else {
            ignored.push(b);
        }
    }
    let mut stats = AllocStats::new(fs);
    for &b in old.data.iter().chain(&old.index) {
        counted(stats.count_block(&mut st, b, false))?;
    }
    for &b in &old.index {
        st.stage(Blk(b), vec![0u8; fs.block_size()])?;
    }
    let mut lay = Layout {
        fs,
        list: blocks.into_iter(),
        reuse: old.index.clone().into_iter(),
        stats,
        count: 0,
        index: Vec::new(),
    };
    let mut new_ptrs = [0u32; 15];
    for (i, slot) in new_ptrs.iter_mut().enumerate() {
        let level = u8::try_from(i.saturating_sub(11)).unwrap_or(DATA);
        if !lay.fill(&mut st, level, slot)? {
            break;
        }
    }
    let Layout {
        mut stats,
        count,
        index,
        ..
    } = lay;
    for (b, block) in index {
        st.stage(Blk(b), block)?;
    }
    stats.flush_counted(&mut st);
    vol::edit::edit_superblock(fs, &mut st, |sb| stats.count_in(sb))?;
    let now = fs.clock.now_u32();
    let huge_fs = fs.sb.has_ro_compat(ro_compat::HUGE_FILE);
    let bs = u64::from(fs.geo.block_size);
    vol::edit::edit_inode(fs, &mut st, Ino::BAD, |m| {
        for (i, &p) in new_ptrs.iter().enumerate() {
            m.set_block_ptr(i, p);
        }
        m.set_atime_mtime(now);
        if m.ctime() == 0 {
            m.set_ctime(now);
        }
        let huge = huge_fs && m.flags() & flags::HUGE_FILE != 0;
        m.set_blocks(count * fs.geo.i_blocks_per_cluster(huge), huge_fs);
        m.set_size(count * bs);
    })?;
    Ok(Staged {
        overlay: st,
        dropped: old.dropped,
        ignored,
        count,
    })
}

/// Drops `blocks` from the bad blocks inode's list (e2fsck's answer to a
/// primary superblock or descriptor block on it): their pointers zeroed
/// where the map holds them as bad blocks, i_blocks and i_size left as
/// they are, as e2fsck leaves them. Whether anything was staged.
pub(super) fn unlist(fs: &Fs, overlay: &mut Overlay, blocks: &[u64]) -> Result<bool> {
    let Some(raw) = vol::edit::read_inode(fs, overlay, Ino::BAD)? else {
        return Ok(false);
    };
    let ptrs = inode::Inode::parse(&raw).block_ptrs();
    let mut root = ptrs;
    let mut staged = false;
    for (i, p) in root.iter_mut().enumerate() {
        let level = u8::try_from(i.saturating_sub(11)).unwrap_or(DATA);
        if level == DATA {
            if blocks.contains(&u64::from(*p)) {
                *p = 0;
            }
        } else {
            staged |= unlist_below(fs, overlay, u64::from(*p), level, blocks)?;
        }
    }
    if root != ptrs {
        vol::edit::edit_inode(fs, overlay, Ino::BAD, |m| {
            for (i, &p) in root.iter().enumerate() {
                m.set_block_ptr(i, p);
            }
        })?;
        staged = true;
    }
    Ok(staged)
}

fn unlist_below(
    fs: &Fs,
    overlay: &mut Overlay,
    ptr: u64,
    level: u8,
    blocks: &[u64],
) -> Result<bool> {
    if ptr == 0 || !legal(fs, ptr) {
        return Ok(false);
    }
    let mut block = vol::edit::read_block(fs, overlay, ptr)?;
    let mut staged = false;
    let mut changed = false;
    let n = block.len() / 4;
    for i in 0..n {
        let child = u64::from(inode::map_ptr(&block, i));
        if level - 1 == DATA {
            if blocks.contains(&child) {
                inode::set_map_ptr(&mut block, i, 0);
                changed = true;
            }
        } else {
            staged |= unlist_below(fs, overlay, child, level - 1, blocks)?;
        }
    }
    if changed {
        overlay.stage(Blk(ptr), block)?;
    }
    Ok(staged || changed)
}
