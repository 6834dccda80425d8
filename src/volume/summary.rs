//! The summary, rewritten from what passes 1–4 found: block and inode
//! bitmaps, per-group free counts, directory counts and uninit flags,
//! bitmap and descriptor checksums, the superblock's free counts and
//! checksum.
//!
//! Rebuilding from the in-core maps instead of patching single bits means
//! one rule covers every pass 5 problem: a bitmap is written when the
//! file system would read it differently from `State`, and every derived
//! field is set to its computed value. Only blocks whose bytes change are
//! staged, so a group the check found right is left alone.
//!
//! Uninit flags: once this rewrite fixes the descriptor checksums, the
//! flags will be trusted (pass 5 ignores them only under a bad checksum).
//! So a group keeps BLOCK_UNINIT when what it would read as (its own
//! metadata) is exactly what pass 1 found in use; otherwise its bitmap is
//! written and the flag cleared. INODE_UNINIT stays as long as pass 1 found
//! no inode in use in the group.
//!
//! Only the primary superblock and descriptor table are written, as e2fsck
//! does by default; the backups are not compared by either checker.

use super::edit::{DescTable, edit_superblock, write_desc_table};
use super::{ClusterMap, Fs, InodeMap, Stage};
use crate::error::{Error, Result};
use crate::fs::bitmap;
use crate::fs::group_desc::{self, BG_BLOCK_UNINIT, BG_INODE_UNINIT, GroupDesc};
use crate::fs::num::{Blk, Cluster, Group};
use crate::narrow;

/// What the passes found in use, which the summary is written from.
pub struct InUse<'a> {
    /// One bit per cluster (per block without bigalloc).
    pub clusters: &'a ClusterMap,
    /// By inode number (bit 0 unused).
    pub inodes: &'a InodeMap,
    pub dirs: &'a InodeMap,
}

/// What a repair leaves as the device has it, its question answered no
/// (interactive mode): each count keeps the value the check read, moved
/// only by what the round's other fixes allocate or free, as e2fsck's
/// library moves the counts it was told not to fix; each bitmap keeps
/// its bits but those the other fixes change.
#[derive(Default)]
pub struct Kept {
    /// By group: the free clusters recorded and counted by the check.
    pub free_blocks: std::collections::BTreeMap<u32, (u64, u64)>,
    /// By group: the free inodes recorded and counted.
    pub free_inodes: std::collections::BTreeMap<u32, (u64, u64)>,
    /// By group: the directories recorded and counted.
    pub dirs: std::collections::BTreeMap<u32, (u64, u64)>,
    /// The superblock's free blocks (in blocks) recorded and counted.
    pub sb_free_blocks: Option<(u64, u64)>,
    /// The superblock's free inodes recorded and counted.
    pub sb_free_inodes: Option<(u64, u64)>,
    /// The clusters in use as the check found them, 64 to a word, when
    /// the block bitmaps are kept.
    pub clusters: Option<Vec<u64>>,
    /// The inodes in use as the check found them (by number, 64 to a
    /// word), when the inode bitmaps are kept.
    pub inodes: Option<Vec<u64>>,
}

impl Kept {
    /// The words of `word_at` over `bits` bits.
    pub fn words(bits: u64, word_at: impl Fn(u64) -> u64) -> Vec<u64> {
        (0..bits.div_ceil(64)).map(|w| word_at(w * 64)).collect()
    }

    fn bit(words: &[u64], i: u64) -> bool {
        let w = usize::try_from(i / 64).unwrap_or(usize::MAX);
        words.get(w).is_some_and(|x| x >> (i % 64) & 1 == 1)
    }

    /// `now`, the count a rewrite computes, for a count the check read as
    /// `kept` = (recorded, counted): the recorded value moved by what the
    /// fixes changed since.
    fn count(now: u64, kept: Option<&(u64, u64)>) -> u64 {
        match kept {
            Some(&(recorded, counted)) => (recorded + now).saturating_sub(counted),
            None => now,
        }
    }
}

/// May a bitmap be written at `blk`? Not outside the file system, and
/// never over the primary superblock (block 0 with blocks of 2 KiB or
/// more, where a zeroed descriptor field points).
fn writable(fs: &Fs, blk: u64) -> bool {
    let sb = crate::fs::superblock::SUPERBLOCK_OFFSET / fs.block_size() as u64;
    fs.geo.block_in_fs(blk) && blk != sb
}

/// Are the bytes past a group's `bits` all ones (as `build` writes them)?
fn padded(bm: &[u8], bits: u64) -> bool {
    let from = usize::try_from(bits / 8).unwrap_or(usize::MAX);
    bm.get(from..).is_none_or(|t| t.iter().all(|&b| b == 0xFF))
}

/// A bitmap block as the kernel and mke2fs lay it out: `used(i)` for the
/// first `n` bits, every other bit of the block set (the padding past the
/// last group's end, and the bytes past the group's bitmap).
fn build(bs: usize, n: u64, used: impl Fn(u64) -> bool) -> Vec<u8> {
    let mut b = vec![0xFFu8; bs];
    // The geometry keeps a group's bits within one block; the bound only
    // guards the indexing.
    for i in 0..n.min(bs as u64 * 8) {
        if !used(i) {
            bitmap::clear(&mut b, i);
        }
    }
    b
}

/// Bitmap block `disk` with the first `n` bits that `changed` set to
/// `used`, the others as they are.
fn keep_bits(
    disk: &[u8],
    n: u64,
    used: impl Fn(u64) -> bool,
    changed: impl Fn(u64) -> bool,
) -> Vec<u8> {
    let mut b = disk.to_vec();
    for i in (0..n.min(b.len() as u64 * 8)).filter(|&i| changed(i)) {
        if used(i) {
            bitmap::set(&mut b, i);
        } else {
            bitmap::clear(&mut b, i);
        }
    }
    b
}

/// The first cluster of group `g` and how many it has.
fn group_clusters(geo: &crate::fs::geometry::Geometry, g: u32) -> (Cluster, u64) {
    (
        Blk(geo.group_first_block(g)).cluster(geo.cluster_bits),
        u64::from(geo.group_blocks(g)).div_ceil(1 << geo.cluster_bits),
    )
}

/// Sets itable_unused to 0 in the descriptors of `unused` and also clears
/// INODE_UNINIT and BLOCK_UNINIT in those of `marks` (setting their
/// checksums), nothing else. A round of its own: pass 1 trusted the
/// impossible mark, or the marks of a descriptor whose checksum fails,
/// and skipped the inodes behind them, so nothing else the check found
/// can be relied on until a check reads every inode of those groups (as
/// e2fsck resets them before its pass 1).
pub fn reset_uninit_marks<S: Stage + ?Sized>(
    fs: &Fs,
    st: &mut S,
    unused: &[u32],
    marks: &[u32],
) -> Result<()> {
    let mut table = DescTable::loaded(fs);
    for (&g, flags) in unused
        .iter()
        .map(|g| (g, false))
        .chain(marks.iter().map(|g| (g, true)))
    {
        if fs.gd(Group(g)).is_none() {
            continue;
        }
        let mut d = table.desc(g).ok_or_else(|| missing(g))?;
        if flags {
            d.set_flags(d.flags() & !(BG_INODE_UNINIT | BG_BLOCK_UNINIT));
        }
        d.set_itable_unused(0);
        d.set_checksum(&fs.sb, g);
    }
    write_desc_table(fs, st, fs.sb_block, &table.raw, Some(&fs.gd_raw))
}

fn missing(g: u32) -> Error {
    Error::Corrupt(format!("descriptor of group {g} is missing"))
}

/// Rebuilds the summary from what the passes found: bitmaps, descriptor
/// counts, flags, never-used marks and checksums, the superblock's counts.
pub fn rewrite<S: Stage + ?Sized>(fs: &Fs, used: &InUse, st: &mut S) -> Result<()> {
    rewrite_keeping(fs, used, &Kept::default(), st)
}

/// [`rewrite`], but for what `kept` keeps.
pub fn rewrite_keeping<S: Stage + ?Sized>(
    fs: &Fs,
    used: &InUse,
    kept: &Kept,
    st: &mut S,
) -> Result<()> {
    let groups = Groups::new(fs, used, kept);
    let mut table = DescTable::loaded(fs);
    let (mut free_blocks, mut free_inodes) = (0u64, 0u64);
    let mut disk = vec![0u8; fs.block_size()];
    for g in 0..fs.geo.groups {
        let (blocks, inodes) = groups.rewrite_group(st, &mut table, g, &mut disk)?;
        free_blocks += blocks;
        free_inodes += inodes;
    }

    // The primary descriptor table, block by block, where it changed. The
    // loaded table stops at the last group, so the tail of the last block
    // keeps the device's bytes.
    write_desc_table(fs, st, fs.sb_block, &table.raw, Some(&fs.gd_raw))?;

    let blocks = Kept::count(
        free_blocks << fs.geo.cluster_bits,
        kept.sb_free_blocks.as_ref(),
    );
    let inodes = Kept::count(free_inodes, kept.sb_free_inodes.as_ref());
    super_counts(fs, st, blocks, inodes)
}

/// What the rewrite of every group reads.
struct Groups<'a> {
    fs: &'a Fs,
    used: &'a InUse<'a>,
    kept: &'a Kept,
    csum: bool,
    uninit_bg: bool,
    /// Bits of a group in the block bitmaps: clusters (blocks without
    /// bigalloc), as the descriptors' counts are.
    bpg: u64,
    /// Bits of a group in the inode bitmaps.
    ipg: u64,
    /// The groups that keep BLOCK_UNINIT.
    keep: Vec<bool>,
    /// The clusters those groups read as in use (their metadata).
    view: Option<ClusterMap>,
}

impl<'a> Groups<'a> {
    fn new(fs: &'a Fs, used: &'a InUse<'a>, kept: &'a Kept) -> Self {
        let geo = &fs.geo;
        let mut groups = Groups {
            fs,
            used,
            kept,
            csum: fs.metadata_csum(),
            uninit_bg: fs.uninit_bg(),
            bpg: u64::from(geo.clusters_per_group()),
            ipg: u64::from(geo.inodes_per_group),
            keep: Vec::new(),
            view: None,
        };
        groups.decide_block_uninit();
        groups
    }

    /// Is flag `f` of a group's descriptor set, and trusted (with group
    /// checksums)?
    fn flagged(&self, gd: &GroupDesc, f: u16) -> bool {
        self.uninit_bg && gd.has_flag(f)
    }

    fn view_bit(&self, c: Cluster) -> bool {
        self.view.as_ref().is_some_and(|m| m.get(c))
    }

    /// Which groups keep BLOCK_UNINIT: those whose blocks, read through
    /// the metadata of the groups that stay uninit, are what pass 1 found.
    /// A group losing its flag takes its metadata (which with flex_bg may
    /// lie in another group) out of the view, so decide until nothing
    /// changes; the set only shrinks, so this ends. The last group's
    /// bitmap covers blocks past the end of the file system: it is always
    /// written out.
    fn decide_block_uninit(&mut self) {
        let (fs, geo) = (self.fs, &self.fs.geo);
        self.keep = (0..geo.groups)
            .zip(&fs.gds)
            .map(|(g, gd)| g + 1 < geo.groups && self.flagged(gd, BG_BLOCK_UNINIT))
            .collect();
        loop {
            self.view = fs.uninit_view(|g| self.keep[Group(g).index()]);
            let mut changed = false;
            for g in 0..geo.groups {
                if self.keep[Group(g).index()] {
                    let (first, n) = group_clusters(geo, g);
                    if !(0..n)
                        .all(|i| self.used.clusters.get(first + i) == self.view_bit(first + i))
                    {
                        self.keep[Group(g).index()] = false;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// Group `g`'s bitmaps (staged where they differ) and descriptor;
    /// its free clusters and free inodes.
    fn rewrite_group<S: Stage + ?Sized>(
        &self,
        st: &mut S,
        table: &mut DescTable,
        g: u32,
        disk: &mut [u8],
    ) -> Result<(u64, u64)> {
        let (fs, used, ipg) = (self.fs, self.used, self.ipg);
        let gd = fs.gd_at(Group(g));
        let mut d = table.desc(g).ok_or_else(|| missing(g))?;
        let mut flags = gd.flags;

        let (first, n) = group_clusters(&fs.geo, g);
        let block_bm = if self.keep[Group(g).index()] {
            None
        } else {
            self.block_bitmap(st, g, gd, disk)?
        };
        if self.uninit_bg && block_bm.is_some() {
            flags &= !BG_BLOCK_UNINIT;
        }
        if self.csum
            && let Some(bm) = &block_bm
        {
            let c =
                group_desc::bitmap_checksum(&fs.sb, &bm[..fs.geo.block_bitmap_bytes()], gd.wide);
            d.set_block_bitmap_csum(c);
        }
        let free_blocks = n - used.clusters.count_range(first, first + n);
        let written = Kept::count(free_blocks, self.kept.free_blocks.get(&g));
        d.set_free_blocks(narrow::sat32(written));

        let ino0 = u64::from(g) * ipg + 1;
        let ino_bm = self.inode_bitmap(st, g, gd, disk)?;
        if self.uninit_bg && ino_bm.is_some() {
            flags &= !BG_INODE_UNINIT;
        }
        if self.csum
            && let Some(bm) = &ino_bm
        {
            let c =
                group_desc::bitmap_checksum(&fs.sb, &bm[..fs.geo.inode_bitmap_bytes()], gd.wide);
            d.set_inode_bitmap_csum(c);
        }
        let free_inodes = ipg - used.inodes.count_range(ino0, ino0 + ipg);
        let written = Kept::count(free_inodes, self.kept.free_inodes.get(&g));
        d.set_free_inodes(narrow::sat32(written));
        let dirs = used.dirs.count_range(ino0, ino0 + ipg);
        let written = Kept::count(dirs, self.kept.dirs.get(&g));
        d.set_used_dirs(narrow::sat32(written));
        if self.uninit_bg {
            // e2fsck ends every repair with the library's descriptor pass,
            // which puts the never-used mark right behind the group's last
            // inode in use (an impossible mark, or one a fix allocated
            // past, included); the same rule leaves e2fsck's bytes.
            let last = (0..ipg).rev().find(|&i| used.inodes.get_wide(ino0 + i));
            let unused = last.map_or(ipg, |l| ipg - (l + 1));
            #[allow(clippy::cast_possible_truncation)] // at most inodes per group
            d.set_itable_unused(unused as u32);
        } else {
            // Without group checksums the kernel ignores these; e2fsck
            // clears them.
            flags &= !(BG_BLOCK_UNINIT | BG_INODE_UNINIT);
            d.set_itable_unused(0);
        }
        d.set_flags(flags);
        d.set_checksum(&fs.sb, g);
        Ok((free_blocks, free_inodes))
    }

    /// The block bitmap of group `g` (descriptor `gd`), which does not
    /// keep BLOCK_UNINIT, as the file system will read it, staged where
    /// it differs from the device; `None` where it lies outside the file
    /// system (reported by pass 0, not fixed yet: it cannot be written,
    /// and its checksum stays as it is).
    fn block_bitmap<S: Stage + ?Sized>(
        &self,
        st: &mut S,
        g: u32,
        gd: &GroupDesc,
        disk: &mut [u8],
    ) -> Result<Option<Vec<u8>>> {
        let (fs, bs, bpg) = (self.fs, self.fs.block_size(), self.bpg);
        if !writable(fs, gd.block_bitmap) {
            return Ok(None);
        }
        let (first, n) = group_clusters(&fs.geo, g);
        let found = |i: u64| self.used.clusters.get(first + i);
        let mut want = build(bs, bpg, |i| i >= n || found(i));
        let differs = if self.flagged(gd, BG_BLOCK_UNINIT) {
            true
        } else if let Some(then) = &self.kept.clusters {
            st.read_at(&fs.dev, Blk(gd.block_bitmap).byte(fs.geo.block_size), disk)?;
            let changed = |i: u64| found(i) != Kept::bit(then, (first + i).0);
            want = keep_bits(disk, n, found, changed);
            *disk != want[..]
        } else {
            st.read_at(&fs.dev, Blk(gd.block_bitmap).byte(fs.geo.block_size), disk)?;
            // e2fsck compares the bitmap as the library reads it, with
            // the uninit groups' metadata ORed in; where only those
            // bits are missing on disk, it rewrites the bitmap when its
            // checksum is not that of the bitmap as read.
            let read_differs = (0..bpg).any(|i| {
                let on_disk = bitmap::test(disk, i) || (i < n && self.view_bit(first + i));
                on_disk != (i >= n || found(i))
            }) || !padded(disk, bpg);
            read_differs
                || (self.csum
                    && *disk != want[..]
                    && !gd.block_bitmap_csum_ok(&fs.sb, &want[..fs.geo.block_bitmap_bytes()]))
        };
        if differs {
            st.stage(Blk(gd.block_bitmap), want.clone())?;
        }
        Ok(Some(if differs { want } else { disk.to_vec() }))
    }

    /// Group `g`'s inode bitmap, as `block_bitmap`; `None` where the
    /// group keeps INODE_UNINIT (no inode in use) or the bitmap lies
    /// outside the file system.
    fn inode_bitmap<S: Stage + ?Sized>(
        &self,
        st: &mut S,
        g: u32,
        gd: &GroupDesc,
        disk: &mut [u8],
    ) -> Result<Option<Vec<u8>>> {
        let (fs, bs, ipg) = (self.fs, self.fs.block_size(), self.ipg);
        let ino0 = u64::from(g) * ipg + 1;
        let in_use = |i: u64| self.used.inodes.get_wide(ino0 + i);
        let uninit = self.flagged(gd, BG_INODE_UNINIT);
        if (uninit && self.used.inodes.count_range(ino0, ino0 + ipg) == 0)
            || !writable(fs, gd.inode_bitmap)
        {
            return Ok(None);
        }
        let mut want = build(bs, ipg, in_use);
        let differs = if uninit {
            true
        } else if let Some(then) = &self.kept.inodes {
            st.read_at(&fs.dev, Blk(gd.inode_bitmap).byte(fs.geo.block_size), disk)?;
            let changed = |i: u64| in_use(i) != Kept::bit(then, ino0 + i);
            want = keep_bits(disk, ipg, in_use, changed);
            *disk != want[..]
        } else {
            st.read_at(&fs.dev, Blk(gd.inode_bitmap).byte(fs.geo.block_size), disk)?;
            (0..ipg).any(|i| bitmap::test(disk, i) != in_use(i)) || !padded(disk, ipg)
        };
        if differs {
            st.stage(Blk(gd.inode_bitmap), want.clone())?;
        }
        Ok(Some(if differs { want } else { disk.to_vec() }))
    }
}

/// The superblock's free counts, in blocks (its checksum is redone by
/// the edit).
fn super_counts<S: Stage + ?Sized>(fs: &Fs, st: &mut S, blocks: u64, inodes: u64) -> Result<()> {
    let is_64 = fs.sb.is_64bit();
    edit_superblock(fs, st, |sb| {
        sb.set_free_blocks(blocks, is_64);
        // Free inodes are at most the inode count, a u32.
        #[allow(clippy::cast_possible_truncation)]
        sb.set_free_inodes(inodes as u32);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_blocks_are_padded_with_ones() {
        let b = build(1024, 12, |i| i % 2 == 0);
        assert_eq!(b[0], 0b0101_0101);
        assert_eq!(b[1], 0xF5);
        assert!(b[2..].iter().all(|&x| x == 0xFF));
        assert!(bitmap::test(&b, 0) && !bitmap::test(&b, 1) && bitmap::test(&b, 13));
    }

    /// A kept bitmap changes only where the fixes changed what is in use;
    /// a kept count moves by as much as the count did.
    #[test]
    fn kept_bits_and_counts_move_with_the_fixes() {
        let disk = [0b0000_0011u8, 0];
        let b = keep_bits(&disk, 16, |i| i == 1 || i == 9, |i| i == 9);
        assert_eq!(b, [0b0000_0011, 0b0000_0010]);
        assert_eq!(Kept::count(50, Some(&(100, 52))), 98);
        assert_eq!(Kept::count(50, None), 50);
        assert!(Kept::bit(&[1 << 3], 3));
    }
}
