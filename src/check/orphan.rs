//! Orphan processing: the inodes a crash left on the orphan list (the
//! `s_last_orphan` chain through i_dtime) or in the orphan file, released
//! as e2fsck releases them before pass 1, computed without writing.
//!
//! Like the journal replay view (`recovery.rs`), the result is a read
//! overlay: the passes then check the file system as it will be once the
//! orphans are processed, and a repair commits exactly those bytes. An
//! orphan whose link count is 0 is deleted (its blocks, extent or indirect
//! blocks and xattr block reference freed, the inode freed with dtime
//! set); one with links is truncated to i_size (blocks from
//! ceil(size / block size) on freed, extents clipped, emptied extent nodes
//! and indirect blocks freed, i_blocks lowered). The list head is cleared
//! and orphan file blocks are rewritten empty (magic and checksum only),
//! which clears orphan_present.
//!
//! What e2fsck decides, followed here: a file system marked with errors
//! has its list dropped unprocessed; an illegal inode number in the chain,
//! a block outside the file system or already free in the bitmap, a bad
//! xattr block header, or an orphan file block with a bad magic or
//! checksum stops the processing (what was released stays released) and
//! the file system is marked not clean so the full check follows. The
//! partial last block is zeroed from i_size % block size in the first block
//! past EOF (the one e2fsck zeroes before freeing it).
//!
//! Not done: quota usage (e2fsck subtracts the released space and inodes
//! from the quota files; here the quota check reports the difference), and
//! recreating an orphan file whose structure is bad. Bigalloc file systems
//! are left as they are.
//!
//! Everything is bounded: chain length by the inode count, block map walks
//! by a node budget, orphan file size by the file system size.

use super::Options;
use super::blockmap::{self, MapInfo, MapVisitor, Scratch};
use super::problem::{Code, Problem};
use super::superblock;
use crate::error::Result;
use crate::fs::bytes::{le16, le32, put_le16, put_le32};
use crate::fs::extent::{self, EXTENT_MAGIC, INIT_MAX_LEN};
use crate::fs::group_desc::{self, BG_BLOCK_UNINIT, BG_INODE_UNINIT};
use crate::fs::inode::field::*;
use crate::fs::inode::{self as finode, GOOD_OLD_INODE_SIZE, Inode, flags};
use crate::fs::superblock::{STATE_ERROR, STATE_VALID, SUPERBLOCK_OFFSET, compat, ro_compat};
use crate::volume::Fs;
use std::collections::{BTreeMap, BTreeSet};

/// Tail magic of an orphan file block.
pub const ORPHAN_BLOCK_MAGIC: u32 = 0x0B10_CA04;
/// Largest orphan file mapped (mke2fs makes at most 512 blocks).
const MAX_ORPHAN_FILE_BLOCKS: u64 = 1 << 16;
/// xattr block magic (the only one e2fsck's refcount update accepts).
const XATTR_MAGIC: u32 = 0xEA02_0000;

// Descriptor fields (low half; high half for wide descriptors).
const BG_FREE_BLOCKS: (usize, usize) = (0x0C, 0x2C);
const BG_FREE_INODES: (usize, usize) = (0x0E, 0x2E);
const BG_USED_DIRS: (usize, usize) = (0x10, 0x30);
const BG_FLAGS: usize = 0x12;
const BG_BLOCK_BITMAP_CSUM: (usize, usize) = (0x18, 0x38);
const BG_INODE_BITMAP_CSUM: (usize, usize) = (0x1A, 0x3A);
const BG_ITABLE_UNUSED: (usize, usize) = (0x1C, 0x32);
const BG_CHECKSUM: usize = 0x1E;

// Superblock fields.
const S_FREE_BLOCKS_LO: usize = 0x0C;
const S_FREE_INODES: usize = 0x10;
const S_STATE: usize = 0x3A;
const S_FEATURE_RO_COMPAT: usize = 0x64;
const S_LAST_ORPHAN: usize = 0xE8;
const S_FREE_BLOCKS_HI: usize = 0x158;
const S_CHECKSUM: usize = 0x3FC;

/// Why processing stopped (e2fsck's wording of the problem that stops it).
type Abort = String;

/// What processing the orphans changed, as whole blocks.
pub struct Outcome {
    pub blocks: BTreeMap<u64, Vec<u8>>,
    pub notes: Vec<Problem>,
    pub cleared: u32,
    pub truncated: u32,
    /// There was a list or orphan file entries to process (not only an
    /// orphan file to clean).
    pub list: bool,
    /// Processing only clears the list head of a single orphan that keeps
    /// its links and frees nothing: the disk is consistent as it is.
    pub trivial: bool,
}

/// Reopens the file system seen through the orphan processing, when there
/// is something to process; otherwise hands it back unchanged. Runs after
/// the journal replay view, on the replayed bytes (replay can change the
/// list).
pub fn after_orphans(
    fs: Box<Fs>,
    first_probs: Vec<Problem>,
    opts: &Options,
) -> Result<superblock::Opened> {
    let Some(out) = plan(&fs, opts) else {
        return Ok(superblock::Opened::Fs(fs, first_probs));
    };
    if out.blocks.is_empty() {
        return Ok(superblock::Opened::Fs(fs, first_probs));
    }
    let bs = fs.geo.block_size as u64;
    // Laid over the device's overlays (a journal replay), not merged.
    let mut ranges: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    for (b, d) in out.blocks {
        ranges.insert(b * bs, d);
    }
    let mut notes = Vec::new();
    if out.list {
        // A list e2fsck -n would not notice (one truncation that frees
        // nothing) is not an error left by -n.
        let code = if out.trivial {
            Code::OrphansPendingHarmless
        } else {
            Code::OrphansPending
        };
        notes.push(Problem::new(code).detail(format!(
            "{} inode{} to clear, {} to truncate",
            out.cleared,
            if out.cleared == 1 { "" } else { "s" },
            out.truncated
        )));
    }
    notes.extend(out.notes);
    // The journal notes of the replay view are kept; everything else the
    // first open reported, the reopen reports again.
    let kept: Vec<Problem> = first_probs
        .into_iter()
        .filter(|p| {
            matches!(
                p.code,
                Code::JournalAfterReplay
                    | Code::JournalTransactionCorrupt
                    | Code::JournalBlockChecksum
                    | Code::JournalRecoveryFails
            )
        })
        .collect();
    let Fs { dev, .. } = *fs;
    let dev = dev.with_overlay(ranges);
    Ok(match superblock::open(dev, opts)? {
        superblock::Opened::Fs(fs, mut probs) => {
            probs.extend(kept);
            probs.extend(notes);
            superblock::Opened::Fs(fs, probs)
        }
        superblock::Opened::Fatal(mut probs) => {
            probs.extend(kept);
            probs.extend(notes);
            superblock::Opened::Fatal(probs)
        }
    })
}

/// Computes the processing; None when there is nothing to process or the
/// file system is not one it handles (backup superblock, bigalloc).
pub fn plan(fs: &Fs, opts: &Options) -> Option<Outcome> {
    let sb = &fs.sb;
    let orphan_file = sb.has_compat(compat::ORPHAN_FILE);
    let present = sb.has_ro_compat(ro_compat::ORPHAN_PRESENT);
    if sb.last_orphan == 0 && !present && !orphan_file {
        return None;
    }
    if opts.superblock.is_some()
        || fs.sb_block != SUPERBLOCK_OFFSET / u64::from(fs.geo.block_size)
        || sb.has_ro_compat(ro_compat::BIGALLOC)
    {
        return None;
    }
    let mut w = Work::new(fs);
    let mut failed = false;
    if sb.last_orphan != 0 || present {
        if sb.state & STATE_ERROR != 0 {
            // The list cannot be trusted; the full check follows anyway.
            w.notes.push(Problem::new(Code::OrphanNotProcessed).detail(
                "the file system is marked with errors, so the orphan list is dropped unprocessed"
                    .to_string(),
            ));
        } else if let Err(why) = w.release_all(orphan_file, present) {
            w.notes
                .push(Problem::new(Code::OrphanNotProcessed).detail(why));
            failed = true;
        }
    }
    // After the check, e2fsck empties the orphan file block by block (each
    // a fix of its own) and clears orphan_present once the file is clean.
    let mut clear_present = false;
    if orphan_file {
        match w.clean_orphan_file() {
            Ok(dirty) => {
                if dirty.is_empty() && present {
                    w.notes.push(Problem::new(Code::OrphanPresentClean));
                }
                for (l, _) in &dirty {
                    w.notes.push(
                        Problem::new(Code::OrphanFileBlockDirty)
                            .ino(sb.orphan_file_inum)
                            .num(*l),
                    );
                }
                clear_present = present;
            }
            Err(why) => w
                .notes
                .push(Problem::new(Code::OrphanNotProcessed).detail(why)),
        }
    }
    w.finish(sb.last_orphan != 0, clear_present, failed);
    Some(Outcome {
        blocks: w.blocks,
        notes: w.notes,
        cleared: w.cleared,
        truncated: w.truncated,
        list: sb.last_orphan != 0 || w.cleared + w.truncated > 0 || failed,
        trivial: !failed
            && w.cleared == 0
            && w.truncated <= 1
            && w.freed_blocks == 0
            && w.freed_inodes == 0
            && w.chained <= 1
            && sb.state & STATE_ERROR == 0,
    })
}

struct Work<'a> {
    fs: &'a Fs,
    bs: usize,
    /// Blocks changed so far, whole.
    blocks: BTreeMap<u64, Vec<u8>>,
    /// The descriptor table, edited.
    gd: Vec<u8>,
    gd_dirty: BTreeSet<u32>,
    block_bm_dirty: BTreeSet<u32>,
    inode_bm_dirty: BTreeSet<u32>,
    freed_blocks: u64,
    freed_inodes: u64,
    notes: Vec<Problem>,
    cleared: u32,
    truncated: u32,
    /// Inodes released from the s_last_orphan chain.
    chained: u32,
    now: u32,
    /// Block map nodes left to visit (all inodes together).
    budget: u64,
}

impl<'a> Work<'a> {
    fn new(fs: &'a Fs) -> Work<'a> {
        let now = super::now().min(u32::MAX as u64) as u32;
        Work {
            fs,
            bs: fs.block_size(),
            blocks: BTreeMap::new(),
            gd: fs.gd_raw.clone(),
            gd_dirty: BTreeSet::new(),
            block_bm_dirty: BTreeSet::new(),
            inode_bm_dirty: BTreeSet::new(),
            freed_blocks: 0,
            freed_inodes: 0,
            notes: Vec::new(),
            cleared: 0,
            truncated: 0,
            chained: 0,
            now,
            budget: fs.geo.blocks_count.saturating_add(64),
        }
    }

    fn read(&self, blk: u64) -> std::result::Result<Vec<u8>, Abort> {
        if let Some(b) = self.blocks.get(&blk) {
            return Ok(b.clone());
        }
        self.fs
            .read_block(blk)
            .map_err(|e| format!("cannot read block {blk}: {e}"))
    }

    fn write(&mut self, blk: u64, data: Vec<u8>) {
        self.blocks.insert(blk, data);
    }

    fn spend(&mut self) -> std::result::Result<(), Abort> {
        if self.budget == 0 {
            return Err("the orphans' block maps are larger than the file system".into());
        }
        self.budget -= 1;
        Ok(())
    }

    // ---- descriptors ----

    fn desc(&mut self, g: u32) -> &mut [u8] {
        let ds = self.fs.geo.desc_size as usize;
        let s = g as usize * ds;
        &mut self.gd[s..s + ds]
    }

    fn wide(&self) -> bool {
        self.fs.geo.desc_size >= 64
    }

    fn get_split(&mut self, g: u32, f: (usize, usize)) -> u32 {
        let wide = self.wide();
        let d = self.desc(g);
        le16(d, f.0) as u32 | if wide { (le16(d, f.1) as u32) << 16 } else { 0 }
    }

    fn put_split(&mut self, g: u32, f: (usize, usize), v: u32) {
        let wide = self.wide();
        let d = self.desc(g);
        put_le16(d, f.0, v as u16);
        if wide {
            put_le16(d, f.1, (v >> 16) as u16);
        }
    }

    fn group_flags(&mut self, g: u32) -> u16 {
        le16(self.desc(g), BG_FLAGS)
    }

    fn uninit(&mut self, g: u32, f: u16) -> bool {
        self.fs.uninit_bg() && self.group_flags(g) & f != 0
    }

    // ---- allocation ----

    /// Frees `blk` in the block bitmap as e2fsck's release does: a block
    /// outside the file system or already free stops the processing.
    fn free_block(&mut self, blk: u64) -> std::result::Result<(), Abort> {
        let geo = &self.fs.geo;
        if blk < geo.first_data_block || blk >= geo.blocks_count {
            return Err(format!("illegal block {blk} in an orphaned inode"));
        }
        let g = geo.group_of_block(blk);
        let bit = blk - geo.group_first_block(g);
        let Some(bm_blk) = self.fs.gds.get(g as usize).map(|d| d.block_bitmap) else {
            return Err(format!("group {g} of block {blk} has no descriptor"));
        };
        if self.uninit(g, BG_BLOCK_UNINIT) || !geo.block_in_fs(bm_blk) {
            return Err(format!(
                "already cleared block {blk} found in an orphaned inode"
            ));
        }
        let mut bm = self.read(bm_blk)?;
        let (byte, mask) = ((bit / 8) as usize, 1u8 << (bit % 8));
        if bm.get(byte).is_none_or(|b| b & mask == 0) {
            return Err(format!(
                "already cleared block {blk} found in an orphaned inode"
            ));
        }
        bm[byte] &= !mask;
        self.write(bm_blk, bm);
        let free = self.get_split(g, BG_FREE_BLOCKS);
        self.put_split(g, BG_FREE_BLOCKS, free.saturating_add(1));
        self.gd_dirty.insert(g);
        self.block_bm_dirty.insert(g);
        self.freed_blocks += 1;
        Ok(())
    }

    /// Frees inode `ino` in the inode bitmap, with e2fsck's descriptor
    /// bookkeeping (counts, INODE_UNINIT cleared, itable_unused lowered
    /// when the inode lay past it).
    fn free_inode(&mut self, ino: u32, is_dir: bool) {
        let geo = &self.fs.geo;
        let ipg = geo.inodes_per_group;
        let g = geo.group_of_inode(ino);
        let idx = (ino - 1) % ipg;
        let bm_blk = self.fs.gds[g as usize].inode_bitmap;
        if geo.block_in_fs(bm_blk)
            && !self.uninit(g, BG_INODE_UNINIT)
            && let Ok(mut bm) = self.read(bm_blk)
        {
            let (byte, mask) = ((idx / 8) as usize, 1u8 << (idx % 8));
            if let Some(b) = bm.get_mut(byte) {
                *b &= !mask;
            }
            self.write(bm_blk, bm);
            self.inode_bm_dirty.insert(g);
        }
        let free = self.get_split(g, BG_FREE_INODES);
        self.put_split(g, BG_FREE_INODES, free.saturating_add(1));
        if is_dir {
            let dirs = self.get_split(g, BG_USED_DIRS);
            self.put_split(g, BG_USED_DIRS, dirs.saturating_sub(1));
        }
        self.gd_dirty.insert(g);
        self.freed_inodes += 1;
    }

    /// What e2fsck's library sets on every descriptor it writes with
    /// group checksums: BLOCK_UNINIT for an entirely free group (not the
    /// last), INODE_UNINIT and a full itable_unused for a group without
    /// inodes, else itable_unused from the last inode in use.
    fn uninit_marks(&mut self, g: u32) {
        let geo = &self.fs.geo;
        let (ipg, bpg, last) = (geo.inodes_per_group, geo.blocks_per_group, geo.groups - 1);
        let mut flags = self.group_flags(g);
        if self.get_split(g, BG_FREE_BLOCKS) == bpg && g != last {
            flags |= BG_BLOCK_UNINIT;
        }
        if self.get_split(g, BG_FREE_INODES) == ipg {
            flags |= BG_INODE_UNINIT;
            self.put_split(g, BG_ITABLE_UNUSED, ipg);
        } else {
            flags &= !BG_INODE_UNINIT;
            let bm = self.read(self.fs.gds[g as usize].inode_bitmap).ok();
            let used = |i: u32| {
                bm.as_ref()
                    .and_then(|b| b.get((i / 8) as usize))
                    .is_some_and(|b| b & (1 << (i % 8)) != 0)
            };
            let last_used = (0..ipg).rev().find(|&i| used(i)).map_or(0, |i| i + 1);
            self.put_split(g, BG_ITABLE_UNUSED, ipg - last_used);
        }
        put_le16(self.desc(g), BG_FLAGS, flags);
    }

    // ---- inodes ----

    fn read_inode(&self, ino: u32) -> std::result::Result<Vec<u8>, Abort> {
        let (blk, off) = self
            .fs
            .inode_location(ino)
            .ok_or_else(|| format!("inode {ino} has no valid location"))?;
        let b = self.read(blk)?;
        let isz = self.fs.geo.inode_size as usize;
        b.get(off..off + isz)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| format!("inode {ino} lies past its block"))
    }

    fn write_inode(&mut self, ino: u32, raw: &mut [u8]) -> std::result::Result<(), Abort> {
        if self.fs.metadata_csum() {
            let c = finode::compute_checksum(self.fs.csum_seed, ino, raw);
            put_le16(raw, I_CHECKSUM_LO, c as u16);
            if raw.len() > GOOD_OLD_INODE_SIZE && le16(raw, I_EXTRA_ISIZE) >= 4 {
                put_le16(raw, I_CHECKSUM_HI, (c >> 16) as u16);
            }
        }
        let (blk, off) = self
            .fs
            .inode_location(ino)
            .ok_or_else(|| format!("inode {ino} has no valid location"))?;
        let mut b = self.read(blk)?;
        b[off..off + raw.len()].copy_from_slice(raw);
        self.write(blk, b);
        Ok(())
    }

    /// The orphan list, then the orphan file's entries.
    fn release_all(&mut self, orphan_file: bool, present: bool) -> std::result::Result<(), Abort> {
        let geo = &self.fs.geo;
        let mut ino = self.fs.sb.last_orphan;
        if ino != 0 && (ino < geo.first_ino || ino > geo.inodes_count) {
            return Err(format!("illegal inode {ino} in orphaned inode list head"));
        }
        // Released inodes end the chain (dtime 0 or a time, never a small
        // inode number), so a loop stops by itself; the bound is for
        // chains that are merely very long.
        let mut left = u64::from(geo.inodes_count) + 1;
        while ino != 0 {
            if left == 0 {
                return Err("the orphan list is longer than the inode table".into());
            }
            left -= 1;
            self.chained += 1;
            ino = self.release_inode(ino)?;
        }
        if present && !orphan_file {
            return Err("orphan_present is set without an orphan file".into());
        }
        if orphan_file {
            self.release_orphan_file()?;
        }
        Ok(())
    }

    /// Releases one orphan; returns the next inode of the chain (its dtime).
    fn release_inode(&mut self, ino: u32) -> std::result::Result<u32, Abort> {
        let geo = &self.fs.geo;
        let mut raw = self.read_inode(ino)?;
        let inode = Inode::parse(&raw);
        let truncating = inode.links_count != 0;
        self.notes
            .push(Problem::new(Code::OrphanReleased).ino(ino).detail(format!(
                "{} orphaned inode {} (uid={}, gid={}, mode=0{:o}, size={})",
                if truncating { "Truncating" } else { "Clearing" },
                ino,
                inode.uid,
                inode.gid,
                inode.mode,
                inode.size
            )));
        let next = inode.dtime;
        if next != 0 && (next < geo.first_ino || next > geo.inodes_count) {
            return Err(format!("illegal inode {next} in orphaned inode list"));
        }
        if has_valid_blocks(&inode) {
            if truncating {
                self.truncate_blocks(ino, &mut raw, &inode)?;
            } else {
                self.delete_blocks(ino, &inode)?;
            }
        }
        self.release_acl(&mut raw, &inode)?;
        if truncating {
            put_le32(&mut raw, I_DTIME, 0);
            self.truncated += 1;
        } else {
            self.free_inode(ino, inode.is_dir());
            put_le32(&mut raw, I_DTIME, self.now.max(1));
            self.cleared += 1;
        }
        self.write_inode(ino, &mut raw)?;
        Ok(next)
    }

    /// Every block of a deleted orphan is freed; the inode keeps its map.
    fn delete_blocks(&mut self, ino: u32, inode: &Inode) -> std::result::Result<(), Abort> {
        let mut c = Collect::default();
        let mut scratch = Scratch::new();
        let info = MapInfo {
            ino,
            is_dir: inode.is_dir(),
            eof_block: u64::MAX - 1,
            csum_seed: None,
            large_dir: true,
        };
        if inode.has_flag(flags::EXTENTS) {
            blockmap::walk_extents(self.fs, info, &inode.block, &mut scratch, &mut c);
        } else {
            blockmap::walk_indirect(self.fs, ino, &inode.block_ptrs(), &mut scratch, &mut c);
        }
        if let Some(why) = c.broken {
            return Err(format!("inode {ino}: {why}"));
        }
        for (pblk, len) in c.runs {
            for b in pblk..pblk.saturating_add(len) {
                self.spend()?;
                self.free_block(b)?;
            }
        }
        Ok(())
    }

    /// Truncation to i_size: the blocks from `ceil(size / bs)` on go,
    /// emptied extent nodes and indirect blocks with them.
    fn truncate_blocks(
        &mut self,
        ino: u32,
        raw: &mut [u8],
        inode: &Inode,
    ) -> std::result::Result<(), Abort> {
        let bs = self.bs as u64;
        let t = Trunc {
            first: inode.size.div_ceil(bs),
            offset: (le32(raw, I_SIZE_LO) as u64 % bs) as usize,
            seed: self
                .fs
                .metadata_csum()
                .then(|| finode::inode_csum_seed(self.fs.csum_seed, ino, inode.generation)),
        };
        let mut freed = 0u64;
        let mut root = inode.block.to_vec();
        if inode.has_flag(flags::EXTENTS) {
            let h = extent::parse_header(&root);
            if h.magic != EXTENT_MAGIC || h.depth > extent::MAX_DEPTH {
                return Err(format!("inode {ino} has a bad extent tree root"));
            }
            self.trunc_node(&mut root, h.depth, &t, &mut freed)?;
            let h = extent::parse_header(&root);
            if h.entries == 0 && h.depth > 0 {
                put_le16(&mut root, 6, 0);
            }
        } else {
            let apb = bs / 4;
            let mut lblk = 0u64;
            let span = [1, apb, apb * apb, apb * apb * apb];
            for i in 0..15usize {
                let p = le32(&root, i * 4) as u64;
                let level = i.saturating_sub(11);
                if p != 0 {
                    let gone = if level == 0 {
                        self.trunc_data(lblk, p, &t, &mut freed)?
                    } else {
                        self.trunc_ind(p, level, lblk, &t, &mut freed)?
                    };
                    if gone {
                        put_le32(&mut root, i * 4, 0);
                    }
                }
                lblk = lblk.saturating_add(span[level]);
            }
        }
        raw[I_BLOCK..I_BLOCK + 60].copy_from_slice(&root);
        if freed > 0 {
            let huge =
                self.fs.sb.has_ro_compat(ro_compat::HUGE_FILE) && inode.has_flag(flags::HUGE_FILE);
            let unit = if huge { 1 } else { bs / 512 };
            let blocks = inode.blocks_raw.saturating_sub(freed.saturating_mul(unit));
            put_le32(raw, I_BLOCKS_LO, blocks as u32);
            put_le16(raw, I_BLOCKS_HIGH, (blocks >> 32) as u16);
        }
        Ok(())
    }

    /// One data block at logical `lblk`: freed when at or past the cut.
    fn trunc_data(
        &mut self,
        lblk: u64,
        pblk: u64,
        t: &Trunc,
        freed: &mut u64,
    ) -> std::result::Result<bool, Abort> {
        self.spend()?;
        if lblk < t.first {
            return Ok(false);
        }
        if lblk == t.first && t.offset != 0 && self.fs.geo.block_in_fs(pblk) {
            let mut b = self.read(pblk)?;
            b[t.offset..].fill(0);
            self.write(pblk, b);
        }
        self.free_block(pblk)?;
        *freed += 1;
        Ok(true)
    }

    /// An indirect block at `level` (1 single, 2 double, 3 triple) mapping
    /// from logical `lblk`; freed when it ends up empty.
    fn trunc_ind(
        &mut self,
        blk: u64,
        level: usize,
        lblk: u64,
        t: &Trunc,
        freed: &mut u64,
    ) -> std::result::Result<bool, Abort> {
        self.spend()?;
        let geo = &self.fs.geo;
        if blk < geo.first_data_block || blk >= geo.blocks_count {
            return Err(format!("illegal indirect block {blk} in an orphaned inode"));
        }
        let apb = (self.bs / 4) as u64;
        let span = apb.saturating_pow(level as u32 - 1);
        let mut b = self.read(blk)?;
        let mut changed = false;
        for i in 0..apb as usize {
            let p = le32(&b, i * 4) as u64;
            if p == 0 {
                continue;
            }
            let child = lblk.saturating_add(i as u64 * span);
            let gone = if level == 1 {
                self.trunc_data(child, p, t, freed)?
            } else {
                self.trunc_ind(p, level - 1, child, t, freed)?
            };
            if gone {
                put_le32(&mut b, i * 4, 0);
                changed = true;
            }
        }
        let empty = b.iter().all(|&x| x == 0);
        if changed {
            self.write(blk, b);
        }
        if empty {
            self.free_block(blk)?;
            *freed += 1;
        }
        Ok(empty)
    }

    /// Clips the extent node `node` (the inode root or a tree block) of
    /// `depth` at the cut, recursing into index entries.
    fn trunc_node(
        &mut self,
        node: &mut [u8],
        depth: u16,
        t: &Trunc,
        freed: &mut u64,
    ) -> std::result::Result<(), Abort> {
        self.spend()?;
        let h = extent::parse_header(node);
        let max = extent::max_entries(node.len());
        if h.magic != EXTENT_MAGIC || h.depth != depth || h.entries > max {
            return Err("bad extent node in an orphaned inode".into());
        }
        let mut kept: Vec<[u8; 12]> = Vec::new();
        for i in 0..h.entries as usize {
            let off = 12 + 12 * i;
            let mut e = [0u8; 12];
            e.copy_from_slice(&node[off..off + 12]);
            if depth == 0 {
                let x = extent::parse_leaf(node, i);
                let start = x.lblk as u64;
                let keep = t.first.saturating_sub(start).min(x.len as u64);
                for j in keep..x.len as u64 {
                    self.trunc_data(start + j, x.pblk + j, t, freed)?;
                }
                if keep > 0 {
                    let raw_len = keep as u16 + if x.unwritten { INIT_MAX_LEN } else { 0 };
                    put_le16(&mut e, 4, raw_len);
                    kept.push(e);
                }
            } else {
                let idx = extent::parse_index(node, i);
                if !self.fs.geo.block_in_fs(idx.leaf) {
                    return Err(format!("illegal extent node block {}", idx.leaf));
                }
                let mut child = self.read(idx.leaf)?;
                self.trunc_node(&mut child, depth - 1, t, freed)?;
                if extent::parse_header(&child).entries == 0 {
                    self.free_block(idx.leaf)?;
                    *freed += 1;
                } else {
                    if let Some(seed) = t.seed {
                        let cmax = extent::parse_header(&child).max;
                        let tail = extent::tail_offset(cmax);
                        if let Some(c) = extent::compute_block_checksum(seed, &child) {
                            put_le32(&mut child, tail, c);
                        }
                    }
                    self.write(idx.leaf, child);
                    kept.push(e);
                }
            }
        }
        if kept.len() != h.entries as usize || depth == 0 {
            for (i, e) in kept.iter().enumerate() {
                node[12 + 12 * i..24 + 12 * i].copy_from_slice(e);
            }
            // Slots past the new count keep their stale bytes, as e2fsck's
            // extent deletion leaves them.
            put_le16(node, 2, kept.len() as u16);
        }
        Ok(())
    }

    /// Drops the orphan's xattr block reference (e2fsck does this for
    /// truncated orphans too); the block is freed when no one else refers
    /// to it.
    fn release_acl(&mut self, raw: &mut [u8], inode: &Inode) -> std::result::Result<(), Abort> {
        let blk = inode.file_acl;
        if blk == 0 {
            return Ok(());
        }
        let geo = &self.fs.geo;
        if blk >= geo.first_data_block && blk < geo.blocks_count {
            let mut b = self.read(blk)?;
            if le32(&b, 0) != XATTR_MAGIC {
                return Err(format!("bad extended attribute block {blk} header"));
            }
            let count = le32(&b, 4).saturating_sub(1);
            put_le32(&mut b, 4, count);
            if self.fs.metadata_csum() {
                let c = crate::fs::xattr::compute_block_checksum(self.fs.csum_seed, blk, &b);
                put_le32(&mut b, 0x10, c);
            }
            self.write(blk, b);
            if count == 0 {
                self.free_block(blk)?;
            }
        }
        put_le32(raw, I_FILE_ACL_LO, 0);
        put_le16(raw, I_FILE_ACL_HIGH, 0);
        Ok(())
    }

    // ---- orphan file ----

    /// The orphan file's blocks in logical order: (logical, physical).
    fn orphan_file_blocks(&self) -> std::result::Result<(u32, u32, Vec<u64>), Abort> {
        let ino = self.fs.sb.orphan_file_inum;
        let geo = &self.fs.geo;
        if ino == 0 || ino > geo.inodes_count {
            return Err(format!("the orphan file inode {ino} is invalid"));
        }
        let raw = self.read_inode(ino)?;
        let inode = Inode::parse(&raw);
        let bs = self.bs as u64;
        if !inode.size.is_multiple_of(bs) {
            return Err(format!("the orphan file (inode {ino}) has a wrong size"));
        }
        let n = inode.size / bs;
        // The kernel and mke2fs make it 512 blocks at most; anything far
        // larger is not an orphan file worth a map in memory.
        if n > geo.blocks_count || n > MAX_ORPHAN_FILE_BLOCKS {
            return Err(format!(
                "the orphan file (inode {ino}) is larger than the file system"
            ));
        }
        let mut c = Collect {
            data_only: true,
            ..Collect::default()
        };
        let mut scratch = Scratch::new();
        let info = MapInfo {
            ino,
            is_dir: false,
            eof_block: u64::MAX - 1,
            csum_seed: None,
            large_dir: true,
        };
        if inode.has_flag(flags::EXTENTS) {
            blockmap::walk_extents(self.fs, info, &inode.block, &mut scratch, &mut c);
        } else {
            blockmap::walk_indirect(self.fs, ino, &inode.block_ptrs(), &mut scratch, &mut c);
        }
        if let Some(why) = c.broken {
            return Err(format!("the orphan file (inode {ino}): {why}"));
        }
        let mut map = vec![0u64; n as usize];
        for (lblk, pblk, len) in c.mapped {
            for j in 0..len {
                if let Some(slot) = lblk.checked_add(j).and_then(|l| map.get_mut(l as usize)) {
                    *slot = pblk + j;
                }
            }
        }
        if let Some(hole) = map.iter().position(|&p| p == 0) {
            return Err(format!(
                "the orphan file (inode {ino}) has a hole at block {hole}"
            ));
        }
        Ok((ino, inode.generation, map))
    }

    fn orphan_block_csum(&self, ino: u32, generation: u32, pblk: u64, b: &[u8]) -> u32 {
        let c = crate::fs::checksum::crc32c_raw(self.fs.csum_seed, &ino.to_le_bytes());
        let c = crate::fs::checksum::crc32c_raw(c, &generation.to_le_bytes());
        let c = crate::fs::checksum::crc32c_raw(c, &pblk.to_le_bytes());
        crate::fs::checksum::crc32c_raw(c, &b[..self.bs - 8])
    }

    fn release_orphan_file(&mut self) -> std::result::Result<(), Abort> {
        let (ino, generation, map) = self.orphan_file_blocks()?;
        let geo = &self.fs.geo;
        let (first_ino, count) = (geo.first_ino, geo.inodes_count);
        for (l, &p) in map.iter().enumerate() {
            let b = self.read(p)?;
            if le32(&b, self.bs - 8) != ORPHAN_BLOCK_MAGIC {
                return Err(format!(
                    "orphan file (inode {ino}) block {l} has a bad magic"
                ));
            }
            if self.fs.metadata_csum()
                && le32(&b, self.bs - 4) != self.orphan_block_csum(ino, generation, p, &b)
            {
                return Err(format!(
                    "orphan file (inode {ino}) block {l} has a bad checksum"
                ));
            }
            for k in 0..(self.bs - 8) / 4 {
                let o = le32(&b, k * 4);
                if o == 0 {
                    continue;
                }
                if o < first_ino || o > count {
                    return Err(format!("illegal inode {o} in the orphan file"));
                }
                self.release_inode(o)?;
            }
        }
        Ok(())
    }

    /// Rewrites every orphan file block that is not empty (zero entries,
    /// magic, checksum); returns those rewritten (logical, physical).
    fn clean_orphan_file(&mut self) -> std::result::Result<Vec<(u64, u64)>, Abort> {
        let (ino, generation, map) = self.orphan_file_blocks()?;
        let mut dirty = Vec::new();
        for (l, &p) in map.iter().enumerate() {
            let mut want = vec![0u8; self.bs];
            put_le32(&mut want, self.bs - 8, ORPHAN_BLOCK_MAGIC);
            if self.fs.metadata_csum() {
                let c = self.orphan_block_csum(ino, generation, p, &want);
                put_le32(&mut want, self.bs - 4, c);
            }
            if self.read(p)? != want {
                self.write(p, want);
                dirty.push((l as u64, p));
            }
        }
        Ok(dirty)
    }

    /// Bitmap and descriptor checksums, the descriptor table and the
    /// superblock (list head cleared, counts, flags, checksum).
    fn finish(&mut self, clear_head: bool, clear_present: bool, failed: bool) {
        let fs = self.fs;
        let geo = &fs.geo;
        let csum = fs.metadata_csum();
        let wide = self.wide();
        if csum {
            let bbytes = ((geo.blocks_per_group / 8) as usize).min(self.bs);
            for g in std::mem::take(&mut self.block_bm_dirty) {
                if let Ok(bm) = self.read(fs.gds[g as usize].block_bitmap) {
                    let c = group_desc::bitmap_checksum(&fs.sb, &bm[..bbytes], wide);
                    self.put_split(g, BG_BLOCK_BITMAP_CSUM, c);
                }
            }
            let ibytes = ((geo.inodes_per_group / 8) as usize).min(self.bs);
            for g in std::mem::take(&mut self.inode_bm_dirty) {
                if let Ok(bm) = self.read(fs.gds[g as usize].inode_bitmap) {
                    let c = group_desc::bitmap_checksum(&fs.sb, &bm[..ibytes], wide);
                    self.put_split(g, BG_INODE_BITMAP_CSUM, c);
                }
            }
        }
        for g in std::mem::take(&mut self.gd_dirty) {
            if fs.uninit_bg() {
                self.uninit_marks(g);
            }
            if let Some(c) = group_desc::compute_checksum(&fs.sb, g, self.desc(g)) {
                put_le16(self.desc(g), BG_CHECKSUM, c);
            }
        }
        let bs = self.bs;
        for i in 0..geo.desc_blocks {
            let start = (i as usize).saturating_mul(bs);
            let end = start.saturating_add(bs).min(self.gd.len());
            if start >= end || self.gd[start..end] == fs.gd_raw[start..end] {
                continue;
            }
            let blk = geo.desc_block_location(fs.sb_block, i);
            if let Ok(mut b) = self.read(blk) {
                b[..end - start].copy_from_slice(&self.gd[start..end]);
                self.write(blk, b);
            }
        }
        let changed = !self.blocks.is_empty();
        if !(changed || clear_head || clear_present || failed) {
            return;
        }
        let sb_blk = SUPERBLOCK_OFFSET / bs as u64;
        let sb_off = (SUPERBLOCK_OFFSET % bs as u64) as usize;
        let Ok(mut b) = self.read(sb_blk) else {
            return;
        };
        let s = &mut b[sb_off..sb_off + 1024];
        put_le32(s, S_LAST_ORPHAN, 0);
        let fb = (le32(s, S_FREE_BLOCKS_LO) as u64
            | if fs.sb.is_64bit() {
                (le32(s, S_FREE_BLOCKS_HI) as u64) << 32
            } else {
                0
            })
        .saturating_add(self.freed_blocks);
        put_le32(s, S_FREE_BLOCKS_LO, fb as u32);
        if fs.sb.is_64bit() {
            put_le32(s, S_FREE_BLOCKS_HI, (fb >> 32) as u32);
        }
        let fi = le32(s, S_FREE_INODES).saturating_add(self.freed_inodes as u32);
        put_le32(s, S_FREE_INODES, fi);
        if clear_present {
            let ro = le32(s, S_FEATURE_RO_COMPAT) & !ro_compat::ORPHAN_PRESENT;
            put_le32(s, S_FEATURE_RO_COMPAT, ro);
        }
        if failed {
            let st = le16(s, S_STATE) & !STATE_VALID;
            put_le16(s, S_STATE, st);
        }
        if csum {
            let c = crate::fs::checksum::crc32c_raw(!0, &s[..S_CHECKSUM]);
            put_le32(s, S_CHECKSUM, c);
        }
        self.write(sb_blk, b);
    }
}

/// Where a truncation cuts.
struct Trunc {
    /// First logical block freed.
    first: u64,
    /// i_size % block size: the first freed block is zeroed from here.
    offset: usize,
    /// Checksum seed of the inode's extent blocks (metadata_csum).
    seed: Option<u32>,
}

/// Collects a block map: data runs and nodes, or the first problem that
/// makes e2fsck's block iteration fail.
#[derive(Default)]
struct Collect {
    data_only: bool,
    /// (physical, length) of every data run and node, in walk order.
    runs: Vec<(u64, u64)>,
    /// (logical, physical, length) of data runs.
    mapped: Vec<(u64, u64, u64)>,
    broken: Option<String>,
}

impl MapVisitor for Collect {
    fn data(&mut self, lblk: u64, pblk: u64, len: u64, _unwritten: bool) {
        self.runs.push((pblk, len));
        self.mapped.push((lblk, pblk, len));
    }
    fn node(&mut self, pblk: u64) {
        if !self.data_only {
            self.runs.push((pblk, 1));
        }
    }
    fn problem(&mut self, p: Problem) {
        // Checksums are ignored (e2fsck iterates with checksum errors
        // ignored), and so are order and EOF, which its iteration does not
        // judge; a block it cannot map stops it.
        let fatal = matches!(
            p.code,
            Code::InodeExtentHeader
                | Code::InodeExtentNodeBad
                | Code::InodeIllegalBlock
                | Code::InodeTooManyIllegalBlocks
                | Code::InodeBlockBitmapUnreadable
                | Code::InodeExtentBad
        );
        if fatal && self.broken.is_none() {
            self.broken = Some(p.message());
        }
    }
}

/// e2fsck's "does this inode map blocks" (device files, fast symlinks and
/// inline data do not).
fn has_valid_blocks(inode: &Inode) -> bool {
    if !(inode.is_dir() || inode.is_reg() || inode.is_symlink()) {
        return false;
    }
    if inode.is_symlink() {
        if inode.file_acl == 0 {
            if inode.blocks_raw == 0 {
                return false;
            }
        } else {
            if inode.size >= 60 {
                return true;
            }
            if inode.size > 4 && le32(&inode.block, 4) == 0 {
                return true;
            }
            return false;
        }
    }
    !inode.has_flag(flags::INLINE_DATA)
}
