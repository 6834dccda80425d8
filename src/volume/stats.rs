//! Freeing blocks and inodes one at a time, as libext2fs' allocation
//! statistics do: the bitmap bit, the group's counts (and, at the end,
//! its uninit marks, bitmap and descriptor checksums, the descriptor
//! table and the superblock's counts). What the orphan processing uses,
//! where e2fsck frees through its library before any pass has counted
//! anything; a repair after the passes rewrites the summary whole instead
//! (`summary`).

use super::edit::{DescTable, read_block, write_desc_table};
use super::{Fs, Stage};
use crate::fs::bitmap;
use crate::fs::group_desc::{self, BG_BLOCK_UNINIT, BG_INODE_UNINIT};
use crate::fs::num::{Blk, Group, Ino};
use crate::fs::superblock::SuperblockMut;
use std::collections::BTreeSet;

/// Why a block could not be freed.
#[derive(Debug, PartialEq, Eq)]
pub enum FreeError {
    /// Outside the file system's data blocks.
    Illegal,
    /// Already free in the bitmap (or its group's bitmap is uninit).
    AlreadyFree,
    /// The bitmap could not be read or staged.
    Other(String),
}

pub struct AllocStats<'a> {
    fs: &'a Fs,
    table: DescTable,
    desc_dirty: BTreeSet<u32>,
    block_bm_dirty: BTreeSet<u32>,
    inode_bm_dirty: BTreeSet<u32>,
    pub freed_blocks: u64,
    pub freed_inodes: u64,
    /// Clusters `count_block` marked in use (counted whatever they were).
    pub taken_blocks: u64,
    /// A bitmap or descriptor checksum wrong before the freeing is left
    /// as it was.
    keep_bad_csums: bool,
}

impl<'a> AllocStats<'a> {
    pub fn new(fs: &'a Fs) -> AllocStats<'a> {
        AllocStats {
            fs,
            table: DescTable::loaded(fs),
            desc_dirty: BTreeSet::new(),
            block_bm_dirty: BTreeSet::new(),
            inode_bm_dirty: BTreeSet::new(),
            freed_blocks: 0,
            freed_inodes: 0,
            taken_blocks: 0,
            keep_bad_csums: false,
        }
    }

    /// `flush` leaves a bitmap or descriptor checksum that did not match
    /// before the freeing as it was, rather than making it right.
    pub fn keeping_bad_checksums(mut self) -> AllocStats<'a> {
        self.keep_bad_csums = true;
        self
    }

    /// Did group `g`'s block (`inodes`: inode) bitmap carry a wrong
    /// checksum on the device, before any change staged here? An
    /// unreadable one counts as right (its read fails again later).
    fn csum_was_bad(&self, g: u32, inodes: bool) -> bool {
        let fs = self.fs;
        let geo = &fs.geo;
        let gd = fs.gd_at(Group(g));
        let (blk, bytes) = if inodes {
            (gd.inode_bitmap, geo.inode_bitmap_bytes())
        } else {
            (gd.block_bitmap, geo.block_bitmap_bytes())
        };
        let Ok(bm) = fs.read_block(blk) else {
            return false;
        };
        let Some(bm) = bm.get(..bytes) else {
            return false;
        };
        if inodes {
            !gd.inode_bitmap_csum_ok(&fs.sb, bm)
        } else {
            !gd.block_bitmap_csum_ok(&fs.sb, bm)
        }
    }

    fn uninit(&self, g: u32, f: u16) -> bool {
        self.fs.uninit_bg() && self.table.flags(g).is_some_and(|x| x & f != 0)
    }

    /// Where `blk`'s bit lies: its group, the bitmap block and the bit
    /// (a cluster's on bigalloc). An error when the block is outside the
    /// file system or free (its group's bitmap uninit or unplaced).
    fn block_bit<S: Stage + ?Sized>(
        &mut self,
        st: &S,
        blk: u64,
    ) -> Result<(u32, u64, Vec<u8>, usize, u8), FreeError> {
        let geo = &self.fs.geo;
        if blk < geo.first_data_block || blk >= geo.blocks_count {
            return Err(FreeError::Illegal);
        }
        let g = geo.group_of_block(blk);
        let bit = (blk - geo.group_first_block(g)) >> geo.cluster_bits;
        let Some(bm_blk) = self.fs.gd(Group(g)).map(|d| d.block_bitmap) else {
            return Err(FreeError::Other(format!(
                "group {g} of block {blk} has no descriptor"
            )));
        };
        if self.uninit(g, BG_BLOCK_UNINIT) || !geo.block_in_fs(bm_blk) {
            return Err(FreeError::AlreadyFree);
        }
        let bm = read_block(self.fs, st, bm_blk)
            .map_err(|e| FreeError::Other(format!("cannot read block {bm_blk}: {e}")))?;
        let (byte, mask) = bitmap::byte_and_mask(bit);
        if bm.get(byte).is_none_or(|b| b & mask == 0) {
            return Err(FreeError::AlreadyFree);
        }
        Ok((g, bm_blk, bm, byte, mask))
    }

    /// Whether `blk` could be freed: inside the file system and in use in
    /// the bitmap as staged so far.
    pub fn check_block<S: Stage + ?Sized>(&mut self, st: &S, blk: u64) -> Result<(), FreeError> {
        self.block_bit(st, blk).map(|_| ())
    }

    /// Frees `blk` (its cluster on bigalloc) in its group's block bitmap
    /// (read and staged through `st`). A block outside the file system, or
    /// already free, is an error: the caller's map is not to be trusted.
    pub fn free_block<S: Stage + ?Sized>(&mut self, st: &mut S, blk: u64) -> Result<(), FreeError> {
        let (g, bm_blk, mut bm, byte, mask) = self.block_bit(st, blk)?;
        bm[byte] &= !mask;
        st.stage(Blk(bm_blk), bm)
            .map_err(|e| FreeError::Other(e.to_string()))?;
        if let Some(mut d) = self.table.desc(g) {
            d.set_free_blocks(d.free_blocks().saturating_add(1));
        }
        self.desc_dirty.insert(g);
        self.block_bm_dirty.insert(g);
        self.freed_blocks += 1;
        Ok(())
    }

    /// Group `g`'s block bitmap block and its bytes as libext2fs holds
    /// them: as staged or on the device; for a BLOCK_UNINIT group, none
    /// in use but the blocks the uninit groups' metadata take (e2fsck's
    /// bitmap as read), the bits past the group set as a written bitmap
    /// has them.
    fn block_bitmap<S: Stage + ?Sized>(&self, st: &S, g: u32) -> Result<(u64, Vec<u8>), FreeError> {
        let fs = self.fs;
        let geo = &fs.geo;
        let Some(bm_blk) = fs.gd(Group(g)).map(|d| d.block_bitmap) else {
            return Err(FreeError::Other(format!("group {g} has no descriptor")));
        };
        if !geo.block_in_fs(bm_blk) {
            return Err(FreeError::Other(format!(
                "group {g}'s block bitmap {bm_blk} lies outside the file system"
            )));
        }
        if !self.uninit(g, BG_BLOCK_UNINIT) {
            let bm = read_block(fs, st, bm_blk)
                .map_err(|e| FreeError::Other(format!("cannot read block {bm_blk}: {e}")))?;
            return Ok((bm_blk, bm));
        }
        let mut bm = vec![0xFFu8; fs.block_size()];
        let bits = geo.cluster_bits;
        let first = Blk(geo.group_first_block(g)).cluster(bits);
        let n = u64::from(geo.group_blocks(g)).div_ceil(1 << bits);
        let view = fs.uninit_view(|h| self.uninit(h, BG_BLOCK_UNINIT));
        for i in 0..n {
            if !view.as_ref().is_some_and(|v| v.get(first + i)) {
                bitmap::clear(&mut bm, i);
            }
        }
        Ok((bm_blk, bm))
    }

    /// Is `blk`'s cluster marked in use in its group's bitmap as libext2fs
    /// holds it (`block_bitmap`)? False outside the file system.
    pub fn block_marked<S: Stage + ?Sized>(&self, st: &S, blk: u64) -> bool {
        let geo = &self.fs.geo;
        if blk < geo.first_data_block || blk >= geo.blocks_count {
            return false;
        }
        let g = geo.group_of_block(blk);
        let bit = (blk - geo.group_first_block(g)) >> geo.cluster_bits;
        self.block_bitmap(st, g)
            .is_ok_and(|(_, bm)| bitmap::test(&bm, bit))
    }

    /// The in-use map libext2fs would allocate from: every group's bitmap
    /// as `block_bitmap` reads it (a group whose bitmap cannot be read
    /// counts as full).
    pub fn in_use_map<S: Stage + ?Sized>(&self, st: &S) -> super::ClusterMap {
        let geo = &self.fs.geo;
        let bits = geo.cluster_bits;
        let map = super::ClusterMap::new(geo.clusters_count());
        for g in 0..geo.groups {
            let first = Blk(geo.group_first_block(g)).cluster(bits);
            let n = u64::from(geo.group_blocks(g)).div_ceil(1 << bits);
            let bm = self.block_bitmap(st, g).ok().map(|(_, bm)| bm);
            for i in 0..n {
                if bm.as_ref().is_none_or(|b| bitmap::test(b, i)) {
                    map.set(first + i);
                }
            }
        }
        map
    }

    /// Marks `blk`'s cluster in use (`in_use`) or free as libext2fs'
    /// allocation statistics do: the bit set or cleared, and the group's
    /// free count moved by one whatever the bit was before (a block marked
    /// twice is counted twice, and pass 5 then finds the count wrong, as
    /// e2fsck's does), the group's BLOCK_UNINIT cleared.
    pub fn count_block<S: Stage + ?Sized>(
        &mut self,
        st: &mut S,
        blk: u64,
        in_use: bool,
    ) -> Result<(), FreeError> {
        let geo = &self.fs.geo;
        if blk < geo.first_data_block || blk >= geo.blocks_count {
            return Err(FreeError::Illegal);
        }
        let g = geo.group_of_block(blk);
        let bit = (blk - geo.group_first_block(g)) >> geo.cluster_bits;
        let (bm_blk, mut bm) = self.block_bitmap(st, g)?;
        let (byte, mask) = bitmap::byte_and_mask(bit);
        if let Some(b) = bm.get_mut(byte) {
            if in_use {
                *b |= mask;
            } else {
                *b &= !mask;
            }
        }
        st.stage(Blk(bm_blk), bm)
            .map_err(|e| FreeError::Other(e.to_string()))?;
        if let Some(mut d) = self.table.desc(g) {
            let free = d.free_blocks();
            d.set_free_blocks(if in_use {
                free.wrapping_sub(1)
            } else {
                free.wrapping_add(1)
            });
            d.set_flags(d.flags() & !BG_BLOCK_UNINIT);
        }
        self.desc_dirty.insert(g);
        self.block_bm_dirty.insert(g);
        if in_use {
            self.taken_blocks += 1;
        } else {
            self.freed_blocks += 1;
        }
        Ok(())
    }

    /// Frees inode `ino` in its group's inode bitmap, with the counts
    /// (directories too for a directory).
    pub fn free_inode<S: Stage + ?Sized>(&mut self, st: &mut S, ino: Ino, is_dir: bool) {
        let geo = &self.fs.geo;
        let ipg = geo.inodes_per_group;
        let g = geo.group_of_inode(ino);
        let idx = ino.index_in_group(ipg);
        let bm_blk = self.fs.gd_at(Group(g)).inode_bitmap;
        if geo.block_in_fs(bm_blk)
            && !self.uninit(g, BG_INODE_UNINIT)
            && let Ok(mut bm) = read_block(self.fs, st, bm_blk)
        {
            bitmap::clear(&mut bm, u64::from(idx));
            if st.stage(Blk(bm_blk), bm).is_ok() {
                self.inode_bm_dirty.insert(g);
            }
        }
        if let Some(mut d) = self.table.desc(g) {
            d.set_free_inodes(d.free_inodes().saturating_add(1));
            if is_dir {
                d.set_used_dirs(d.used_dirs().saturating_sub(1));
            }
        }
        self.desc_dirty.insert(g);
        self.freed_inodes += 1;
    }

    /// What e2fsck's library sets on every descriptor it writes with
    /// group checksums: BLOCK_UNINIT for an entirely free group (not the
    /// last), INODE_UNINIT and a full itable_unused for a group without
    /// inodes, else itable_unused from the last inode in use.
    fn uninit_marks<S: Stage + ?Sized>(&mut self, st: &S, g: u32) {
        let geo = &self.fs.geo;
        // The descriptor counts clusters.
        let cpg = geo.clusters_per_group();
        let (ipg, last) = (geo.inodes_per_group, geo.groups - 1);
        let bm = read_block(self.fs, st, self.fs.gd_at(Group(g)).inode_bitmap).ok();
        let Some(mut d) = self.table.desc(g) else {
            return;
        };
        let mut flags = d.flags();
        if d.free_blocks() == cpg && g != last {
            flags |= BG_BLOCK_UNINIT;
        }
        if d.free_inodes() == ipg {
            flags |= BG_INODE_UNINIT;
            d.set_itable_unused(ipg);
        } else {
            flags &= !BG_INODE_UNINIT;
            let used = |i: u32| bm.as_ref().is_some_and(|b| bitmap::test(b, u64::from(i)));
            let last_used = (0..ipg).rev().find(|&i| used(i)).map_or(0, |i| i + 1);
            d.set_itable_unused(ipg - last_used);
        }
        d.set_flags(flags);
    }

    /// Stages what the freeing changed beyond the bitmaps: their
    /// checksums, the changed descriptors (uninit marks, checksums) in
    /// the table that follows the superblock in use. Failures to read or
    /// stage a block leave that block as it was.
    pub fn flush<S: Stage + ?Sized>(&mut self, st: &mut S) {
        self.flush_with(st, true);
    }

    /// As `flush`, but the descriptors keep the flags the counting left
    /// them (libext2fs' statistics clear BLOCK_UNINIT and set nothing).
    pub fn flush_counted<S: Stage + ?Sized>(&mut self, st: &mut S) {
        self.flush_with(st, false);
    }

    fn flush_with<S: Stage + ?Sized>(&mut self, st: &mut S, marks: bool) {
        let fs = self.fs;
        let geo = &fs.geo;
        if fs.metadata_csum() {
            let wide = geo.desc_size >= 64;
            let bbytes = geo.block_bitmap_bytes();
            for g in std::mem::take(&mut self.block_bm_dirty) {
                if self.keep_bad_csums && self.csum_was_bad(g, false) {
                    continue;
                }
                if let Ok(bm) = read_block(fs, st, fs.gd_at(Group(g)).block_bitmap)
                    && let Some(mut d) = self.table.desc(g)
                {
                    d.set_block_bitmap_csum(group_desc::bitmap_checksum(
                        &fs.sb,
                        &bm[..bbytes],
                        wide,
                    ));
                }
            }
            let ibytes = geo.inode_bitmap_bytes();
            for g in std::mem::take(&mut self.inode_bm_dirty) {
                if self.keep_bad_csums && self.csum_was_bad(g, true) {
                    continue;
                }
                if let Ok(bm) = read_block(fs, st, fs.gd_at(Group(g)).inode_bitmap)
                    && let Some(mut d) = self.table.desc(g)
                {
                    d.set_inode_bitmap_csum(group_desc::bitmap_checksum(
                        &fs.sb,
                        &bm[..ibytes],
                        wide,
                    ));
                }
            }
        }
        for g in std::mem::take(&mut self.desc_dirty) {
            // Nor its uninit marks: e2fsck -n judges them as they are.
            if self.keep_bad_csums && !fs.gd_checksum_ok(g) {
                continue;
            }
            if marks && fs.uninit_bg() {
                self.uninit_marks(st, g);
            }
            if let Some(mut d) = self.table.desc(g) {
                d.set_checksum(&fs.sb, g);
            }
        }
        let _ = write_desc_table(fs, st, fs.sb_block, &self.table.raw, Some(&fs.gd_raw));
    }

    /// Adds what was freed, less what was taken, to the superblock's free
    /// counts.
    pub fn count_in(&self, sb: &mut SuperblockMut) {
        let is_64 = self.fs.sb.is_64bit();
        // Counted in clusters, the superblock's count is in blocks.
        let freed = self.freed_blocks << self.fs.geo.cluster_bits;
        let taken = self.taken_blocks << self.fs.geo.cluster_bits;
        let blocks = sb
            .free_blocks(is_64)
            .saturating_add(freed)
            .saturating_sub(taken);
        sb.set_free_blocks(blocks, is_64);
        let freed = u32::try_from(self.freed_inodes).unwrap_or(u32::MAX);
        let inodes = sb.free_inodes().saturating_add(freed);
        sb.set_free_inodes(inodes);
    }
}
