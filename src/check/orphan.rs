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
//! past EOF (the one e2fsck zeroes before freeing it). A bitmap or
//! descriptor checksum that was wrong on the disk is left wrong in the
//! view (and such a descriptor's uninit marks as they were): e2fsck -n,
//! which releases nothing, finds it so, and the repair then fixes it as
//! such.
//!
//! After the passes e2fsck walks the orphan file again to empty it; one it
//! cannot walk as an orphan file (a wrong size, a hole) it makes anew
//! (`OrphanFileCorrupt`, fixed by `fix::orphan_file`). It does so on a
//! backup superblock too, where nothing is released (the backup's list
//! head and orphan_present are stale copies) and the superblock is left
//! to the restore from the backup.
//!
//! On bigalloc a block in the cluster of the block walked before it is
//! skipped, as e2fsck skips it, and a cluster is freed once. A truncation
//! there unmaps every block past the cut and frees the clusters wholly
//! past it; e2fsck 1.47.4 unmaps only the first block of each such
//! cluster (the rest stay mapped over freed clusters, which its passes
//! then fix by growing i_size and cloning), a result pfsck does not copy.
//!
//! Not done: quota usage (e2fsck subtracts the released space and inodes
//! from the quota files; here the quota check reports the difference).
//!
//! Everything is bounded: chain length by the inode count, block map walks
//! by a node budget, orphan file size by the file system size.

use super::Options;
use super::blockmap::{self, MapInfo, MapVisitor, Scratch};
use super::problem::{Code, Problem};
use super::superblock;
use crate::error::Result;
use crate::fs::extent::{self, EXTENT_MAGIC};
use crate::fs::inode::{self as finode, Inode, InodeMut, flags};
use crate::fs::num::{Blk, Group, Ino};
use crate::fs::superblock::{STATE_ERROR, STATE_VALID, SuperblockMut, compat, ro_compat};
use crate::fs::{orphan as ofile, xattr};
use crate::narrow;
use crate::volume::stats::{AllocStats, FreeError};
use crate::volume::{Blocks, Fs, edit as vol};
use std::collections::BTreeMap;

/// How the note of an orphan kept with its links begins.
pub const TRUNCATING: &str = "Truncating";

/// Largest orphan file mapped (mke2fs makes at most 512 blocks).
const MAX_ORPHAN_FILE_BLOCKS: u64 = 1 << 16;

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
    /// The list names only inodes already free (no mode, no links, clear
    /// in the bitmap) and there is nothing else to do: e2fsck -n, which
    /// leaves the list alone, sees nothing, while releasing them counts
    /// each free inode freed once more (what e2fsck -y's pass 5 then
    /// puts right).
    pub only_free: bool,
    pub freed: Freed,
}

/// What releasing the deleted orphans cleared in the bitmaps: e2fsck -n,
/// which leaves the orphans alone, finds it still marked in use by no
/// file in pass 5, where the view finds it free. (A truncation's blocks
/// stay mapped for e2fsck -n: in use, as marked.)
#[derive(Clone, Debug, Default)]
pub struct Freed {
    /// The clusters, by their first block, in the order freed.
    pub blocks: Vec<Blk>,
    /// The inodes that were marked in use.
    pub inodes: Vec<Ino>,
    /// The groups of the directories among them, each once, with the
    /// directories count their descriptor had (e2fsck -n counts the
    /// deleted directories out of it).
    pub dirs: Vec<(Group, u32)>,
    /// Blocks per cluster, as a power of two.
    pub cluster_bits: u32,
}

impl Freed {
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty() && self.inodes.is_empty()
    }
}

/// Reopens the file system seen through the orphan processing, when there
/// is something to process; otherwise hands it back unchanged. Runs after
/// the journal replay view, on the replayed bytes (replay can change the
/// list).
///
/// With the reopened file system goes what the release freed (see
/// [`Freed`]); empty where the view is not taken.
pub fn after_orphans(
    fs: Box<Fs>,
    first_probs: Vec<Problem>,
    opts: &Options,
) -> Result<(superblock::Opened, Freed)> {
    let Some(out) = plan(&fs, opts) else {
        return Ok((superblock::Opened::Fs(fs, first_probs), Freed::default()));
    };
    // e2fsck judges the descriptors before any orphan is released, and -n
    // leaves them damaged for its passes (an unused inode count or uninit
    // mark can hide the root); rejected descriptors, or one failing its
    // checksum, would also give the view garbage counts. The view would
    // rewrite them, so -n looks at the file system as it is.
    let rejected = first_probs
        .iter()
        .any(|p| p.code == Code::GdRejectedNoBackup);
    if !opts.repairing && (rejected || superblock::descriptors_need_fixes(&fs)) {
        let mut probs = first_probs;
        probs.extend(out.notes.into_iter().filter(|p| {
            matches!(
                p.code,
                Code::OrphanFileBlockDirty
                    | Code::OrphanPresentClean
                    | Code::OrphanFileHole
                    | Code::OrphanFileCorrupt
                    | Code::OrphanFileWrongSize
            )
        }));
        probs.push(Problem::new(Code::OrphanNotProcessed).detail(
            "the group descriptors need fixes -n may not make, so the file system is checked as it is"
                .to_string(),
        ));
        return Ok((superblock::Opened::Fs(fs, probs), Freed::default()));
    }
    if out.only_free && !opts.repairing {
        // Checked as e2fsck -n checks it: as it is.
        let mut probs = first_probs;
        probs.push(Problem::new(Code::OrphansPendingHarmless).detail(format!(
            "{} inode{} to clear, 0 to truncate",
            out.cleared,
            if out.cleared == 1 { "" } else { "s" }
        )));
        return Ok((superblock::Opened::Fs(fs, probs), Freed::default()));
    }
    if out.blocks.is_empty() {
        // Nothing to lay over; what the orphan file is found to need
        // (made anew) is still said.
        let mut probs = first_probs;
        probs.extend(out.notes);
        return Ok((superblock::Opened::Fs(fs, probs), Freed::default()));
    }
    let bs = u64::from(fs.geo.block_size);
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
    let opened = match superblock::open(dev, opts)? {
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
    };
    Ok((opened, out.freed))
}

/// Computes the processing; None when there is nothing to process (on a
/// backup superblock, no orphan file).
pub fn plan(fs: &Fs, opts: &Options) -> Option<Outcome> {
    let sb = &fs.sb;
    let orphan_file = sb.has_compat(compat::ORPHAN_FILE);
    let present = sb.has_ro_compat(ro_compat::ORPHAN_PRESENT);
    // orphan_present without orphan_file and without a list: e2fsck
    // stops its processing there without a word (the superblock check
    // reports the flag, `OrphanPresentNoFile`).
    if sb.last_orphan == 0 && !orphan_file {
        return None;
    }
    // On a backup superblock (its list and flag are stale copies) only
    // the orphan file is looked at, as e2fsck does after its passes.
    let backup = opts.superblock.is_some() || fs.sb_block != fs.primary_sb_block();
    if backup && !orphan_file {
        return None;
    }
    let mut w = Work::new(fs);
    let mut failed = false;
    let present = present && !backup;
    if !backup && (sb.last_orphan != 0 || present) {
        if sb.state & STATE_ERROR != 0 {
            // The list cannot be trusted; the full check follows anyway.
            w.notes.push(Problem::new(Code::OrphanNotProcessed).detail(
                "the file system is marked with errors, so the orphan list is dropped unprocessed"
                    .to_string(),
            ));
        } else if let Err(why) = w.release_all(orphan_file, present) {
            let p = w
                .stop
                .take()
                .unwrap_or_else(|| Problem::new(Code::OrphanNotProcessed).detail(why));
            w.notes.push(p);
            failed = true;
        }
    }
    // After the check, e2fsck empties the orphan file (the first block
    // not empty named, it and all after it rewritten) and clears
    // orphan_present once the file is clean; one it cannot set up is to be
    // made anew (`fix::orphan_file`), which clears orphan_present too.
    let mut clear_present = false;
    let inum = sb.orphan_file_inum;
    // An orphan file inode number that is no inode is the superblock
    // check's (`OrphanFileInodeInvalid`).
    if orphan_file && inum != 0 && inum <= fs.geo.inodes_count {
        let ino = Ino(sb.orphan_file_inum);
        let corrupt = |why: &str| {
            Problem::new(Code::OrphanFileCorrupt)
                .ino(ino)
                .detail(why.to_string())
        };
        match w.clean_orphan_file() {
            Ok(c) => {
                if let Some(l) = c.first_dirty {
                    w.notes
                        .push(Problem::new(Code::OrphanFileBlockDirty).ino(c.ino).num(l));
                } else if present && c.hole.is_none() {
                    w.notes.push(Problem::new(Code::OrphanPresentClean));
                }
                if let Some(h) = c.hole {
                    w.notes
                        .push(Problem::new(Code::OrphanFileHole).ino(c.ino).num(h));
                    w.notes.push(corrupt(&format!("a hole at block {h}")));
                } else {
                    clear_present = present;
                }
            }
            Err(Unusable::WrongSize) => {
                w.notes
                    .push(Problem::new(Code::OrphanFileWrongSize).ino(ino));
                w.notes
                    .push(corrupt("its size is not a whole number of blocks"));
            }
            Err(Unusable::Broken(why)) => w.notes.push(corrupt(&why)),
        }
    }
    if !backup {
        w.finish(sb.last_orphan != 0, clear_present, failed);
    }
    let (freed_blocks, freed_inodes) = (w.stats.freed_blocks, w.stats.freed_inodes);
    let only_notes = w.notes.iter().all(|p| p.code == Code::OrphanReleased);
    Some(Outcome {
        blocks: w.st.map,
        notes: w.notes,
        cleared: w.cleared,
        truncated: w.truncated,
        list: (!backup && sb.last_orphan != 0) || w.cleared + w.truncated > 0 || failed,
        // Stopped before releasing anything (an illegal list head): e2fsck
        // -n, which never releases, finds nothing either.
        trivial: (!failed || w.chained == 0)
            && w.cleared == 0
            && w.truncated <= 1
            && freed_blocks == 0
            && freed_inodes == 0
            && w.chained <= 1
            && sb.state & STATE_ERROR == 0,
        only_free: !failed
            && w.chained > 0
            && w.free_orphans == w.chained
            && w.cleared == w.chained
            && w.truncated == 0
            && freed_blocks == 0
            && only_notes,
        freed: w.freed,
    })
}

struct Work<'a> {
    fs: &'a Fs,
    bs: usize,
    /// Blocks changed so far, whole.
    st: Blocks,
    /// Bitmaps and counts of what was freed.
    stats: AllocStats<'a>,
    notes: Vec<Problem>,
    cleared: u32,
    truncated: u32,
    /// Inodes released from the s_last_orphan chain.
    chained: u32,
    /// Of those, the ones that were already free (`Outcome::only_free`).
    free_orphans: u32,
    now: u32,
    /// Block map nodes left to visit (all inodes together).
    budget: u64,
    /// The orphan being released, and the cluster of the last block its
    /// walk handed out (e2fsck skips a block in that same cluster).
    ino_now: Ino,
    last_cluster: u64,
    /// The problem that stopped the release at a block, when e2fsck has a
    /// code for it (an illegal block, one already free).
    stop: Option<Problem>,
    /// The orphan being released is deleted (not truncated).
    deleting: bool,
    /// A leaf of the orphan being truncated fails its checksum on the
    /// disk: the physical block of its last extent, where e2fsck -n's
    /// pass 1, walking the whole unreleased tree, asks about it. The view
    /// rewrites every leaf it keeps, checksum included.
    bad_leaf: Option<u64>,
    freed: Freed,
}

impl<'a> Work<'a> {
    fn new(fs: &'a Fs) -> Work<'a> {
        let now = fs.clock.now_u32();
        Work {
            fs,
            bs: fs.block_size(),
            st: Blocks::new(fs.geo.block_size),
            // e2fsck -n checks the bitmaps' and descriptors' checksums as
            // they are on the disk: one wrong there stays wrong in the view.
            stats: AllocStats::new(fs).keeping_bad_checksums(),
            notes: Vec::new(),
            cleared: 0,
            truncated: 0,
            chained: 0,
            free_orphans: 0,
            now,
            budget: fs.geo.blocks_count.saturating_add(64),
            ino_now: Ino::NONE,
            last_cluster: 0,
            stop: None,
            deleting: false,
            bad_leaf: None,
            freed: Freed {
                cluster_bits: fs.geo.cluster_bits,
                ..Freed::default()
            },
        }
    }

    fn read(&self, blk: u64) -> std::result::Result<Vec<u8>, Abort> {
        vol::read_block(self.fs, &self.st, blk).map_err(|e| format!("cannot read block {blk}: {e}"))
    }

    fn write(&mut self, blk: u64, data: Vec<u8>) {
        self.st.map.insert(blk, data);
    }

    fn spend(&mut self) -> std::result::Result<(), Abort> {
        if self.budget == 0 {
            return Err("the orphans' block maps are larger than the file system".into());
        }
        self.budget -= 1;
        Ok(())
    }

    fn free_block(&mut self, blk: u64) -> std::result::Result<(), Abort> {
        self.stats
            .free_block(&mut self.st, blk)
            .map_err(|e| self.block_stop(e, blk))?;
        if self.deleting {
            let geo = &self.fs.geo;
            let first = Blk(geo.cluster_of(blk) << geo.cluster_bits);
            self.freed.blocks.push(first);
        }
        Ok(())
    }

    /// One block of an orphan's map as e2fsck's release sees it, in its
    /// walk order: false when it is skipped (a hole, or the cluster of the
    /// block before); an illegal block or one already free stops the
    /// release, whether or not the block was to be freed.
    fn visit(&mut self, blk: u64) -> std::result::Result<bool, Abort> {
        if blk == 0 {
            return Ok(false);
        }
        let cluster = self.fs.geo.cluster_of(blk);
        if cluster == self.last_cluster {
            return Ok(false);
        }
        self.last_cluster = cluster;
        self.stats
            .check_block(&self.st, blk)
            .map_err(|e| self.block_stop(e, blk))?;
        Ok(true)
    }

    /// A stop e2fsck names with `e2` (and the inode and block its message
    /// names: for the orphan file, the file and a logical block).
    fn named_stop(&mut self, e2: u32, ino: Ino, blk: Option<u64>, why: Abort) -> Abort {
        let mut p = Problem::new(Code::OrphanNotProcessed)
            .e2fsck(e2)
            .ino(ino)
            .detail(why.clone());
        if let Some(b) = blk {
            p = p.blk(Blk(b));
        }
        self.stop = Some(p);
        why
    }

    /// The abort for block `blk` of the orphan being released.
    fn block_stop(&mut self, e: FreeError, blk: u64) -> Abort {
        let code = match e {
            FreeError::Illegal => Code::OrphanBlockIllegal,
            FreeError::AlreadyFree => Code::OrphanBlockFreed,
            FreeError::Other(why) => return why,
        };
        let p = Problem::new(code).ino(self.ino_now).blk(Blk(blk));
        let why = p.message();
        self.stop = Some(p);
        why
    }

    // ---- inodes ----

    fn read_inode(&self, ino: Ino) -> std::result::Result<Vec<u8>, Abort> {
        match vol::read_inode(self.fs, &self.st, ino) {
            Ok(Some(raw)) => Ok(raw),
            Ok(None) => Err(format!("inode {ino} has no valid location")),
            Err(e) => Err(format!("cannot read inode {ino}: {e}")),
        }
    }

    fn write_inode(&mut self, ino: Ino, raw: &[u8]) -> std::result::Result<(), Abort> {
        match vol::write_inode(self.fs, &mut self.st, ino, raw) {
            Ok(true) => Ok(()),
            Ok(false) => Err(format!("inode {ino} has no valid location")),
            Err(e) => Err(format!("cannot write inode {ino}: {e}")),
        }
    }

    /// The orphan list, then the orphan file's entries.
    fn release_all(&mut self, orphan_file: bool, present: bool) -> std::result::Result<(), Abort> {
        let geo = &self.fs.geo;
        let mut ino = Ino(self.fs.sb.last_orphan);
        if ino != Ino::NONE && (ino < Ino(geo.first_ino) || ino > Ino(geo.inodes_count)) {
            let why = format!("illegal inode {ino} in orphaned inode list head");
            return Err(self.named_stop(0x000023, ino, None, why));
        }
        // Released inodes end the chain (dtime 0 or a time, never a small
        // inode number), so a loop stops by itself; the bound is for
        // chains that are merely very long.
        let mut left = u64::from(geo.inodes_count) + 1;
        while ino != Ino::NONE {
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

    /// Is `ino` marked in use in its group's inode bitmap as the bitmap is
    /// now? A group never initialised has none in use; a bitmap that
    /// cannot be read counts as in use (the release is not known to be a
    /// no-op then).
    fn inode_marked(&self, ino: Ino) -> bool {
        let geo = &self.fs.geo;
        let Some(d) = self.fs.gd(ino.group(geo.inodes_per_group)) else {
            return true;
        };
        if d.flags & crate::fs::group_desc::BG_INODE_UNINIT != 0 && self.fs.sb.group_desc_csum() {
            return false;
        }
        let idx = ino.index_in_group(geo.inodes_per_group);
        if !geo.block_in_fs(d.inode_bitmap) {
            return true;
        }
        self.read(d.inode_bitmap).map_or(true, |bm| {
            bm.get(narrow::to_usize(u64::from(idx / 8)))
                .is_none_or(|b| b & (1 << (idx % 8)) != 0)
        })
    }

    /// Releases one orphan; returns the next inode of the chain (its dtime).
    fn release_inode(&mut self, ino: Ino) -> std::result::Result<Ino, Abort> {
        let geo = &self.fs.geo;
        let mut raw = self.read_inode(ino)?;
        let inode = Inode::parse(&raw);
        let truncating = inode.links_count != 0;
        if !truncating && inode.mode == 0 && !self.inode_marked(ino) {
            self.free_orphans += 1;
        }
        self.ino_now = ino;
        self.deleting = !truncating;
        self.last_cluster = 0;
        self.bad_leaf = None;
        // The dtime as found: what e2fsck -n's pass 1, which leaves the
        // orphans alone, judges (e2fsck_map::refs).
        let at = self.notes.len();
        self.notes.push(
            Problem::new(Code::OrphanReleased)
                .ino(ino)
                .num(u64::from(inode.dtime))
                .detail(format!(
                    "{} orphaned inode {} (uid={}, gid={}, mode=0{:o}, size={})",
                    if truncating { TRUNCATING } else { "Clearing" },
                    ino,
                    inode.uid,
                    inode.gid,
                    inode.mode,
                    inode.size
                )),
        );
        let next = Ino(inode.dtime);
        if next != Ino::NONE && (next < Ino(geo.first_ino) || next > Ino(geo.inodes_count)) {
            let why = format!("illegal inode {next} in orphaned inode list");
            return Err(self.named_stop(0x000024, next, None, why));
        }
        if has_valid_blocks(&inode) {
            let (first, count) = if truncating {
                self.truncate_blocks(ino, &mut raw, &inode)?
            } else {
                self.delete_blocks(ino, &inode)?
            };
            // The blocks the release frees, which e2fsck -n finds still
            // mapped past i_size (a truncation) or marked in use by no
            // file (a deletion).
            if count > 0 {
                let note = &mut self.notes[at];
                *note = note.clone().num2(count);
                if let Some(b) = first {
                    *note = note.clone().blk(Blk(b));
                }
            }
            // A truncation frees no first block: the slot names the leaf.
            if let Some(b) = self.bad_leaf.filter(|_| truncating) {
                let note = &mut self.notes[at];
                *note = note.clone().blk(Blk(b));
            }
        }
        self.release_acl(&mut raw, &inode)?;
        if truncating {
            InodeMut(&mut raw).set_dtime(0);
            self.truncated += 1;
        } else {
            if self.inode_marked(ino) {
                self.freed.inodes.push(ino);
            }
            let g = Group(geo.group_of_inode(ino));
            if inode.is_dir()
                && !self.freed.dirs.iter().any(|d| d.0 == g)
                && let Some(d) = self.fs.gd(g)
            {
                self.freed.dirs.push((g, d.used_dirs_count));
            }
            self.stats.free_inode(&mut self.st, ino, inode.is_dir());
            InodeMut(&mut raw).set_dtime(self.now.max(1));
            self.cleared += 1;
        }
        self.write_inode(ino, &raw)?;
        Ok(next)
    }

    /// Every block of a deleted orphan is freed; the inode keeps its map.
    /// Returns the first block freed and how many.
    fn delete_blocks(
        &mut self,
        ino: Ino,
        inode: &Inode,
    ) -> std::result::Result<(Option<u64>, u64), Abort> {
        let mut blocks = Vec::new();
        if inode.has_flag(flags::EXTENTS) {
            let root = inode.block.to_vec();
            let h = extent::parse_header(&root);
            if h.magic != EXTENT_MAGIC || h.depth > extent::MAX_DEPTH {
                return Err(format!("inode {ino} has a bad extent tree root"));
            }
            self.list_extent_node(&root, h.depth, &mut blocks)?;
        } else {
            let ptrs = inode.block_ptrs();
            for &p in &ptrs[..12] {
                self.spend()?;
                blocks.push(u64::from(p));
            }
            for (level, &p) in (1..=3).zip(&ptrs[12..15]) {
                self.list_ind(u64::from(p), level, &mut blocks)?;
            }
        }
        let mut first = None;
        let mut count = 0u64;
        for b in blocks {
            if self.visit(b)? {
                self.free_block(b)?;
                first.get_or_insert(b);
                count += 1;
            }
        }
        Ok((first, count))
    }

    /// The blocks of an extent node of `depth` in e2fsck's walk order
    /// (a tree block after the blocks below it). A node that cannot be
    /// read as one stops the release (e2fsck's walk fails there); its
    /// depth field is not read (levels count down from the root's).
    fn list_extent_node(
        &mut self,
        node: &[u8],
        depth: u16,
        out: &mut Vec<u64>,
    ) -> std::result::Result<(), Abort> {
        self.spend()?;
        let h = extent::parse_header(node);
        if h.magic != EXTENT_MAGIC || h.entries > extent::max_entries(node.len()) {
            return Err("bad extent node in an orphaned inode".into());
        }
        for i in 0..usize::from(h.entries) {
            if depth == 0 {
                let Some(e) = extent::raw_entry(node, i) else {
                    return Err("bad extent node in an orphaned inode".into());
                };
                let x = extent::decode_leaf(&e);
                for j in 0..u64::from(x.len) {
                    self.spend()?;
                    out.push(x.pblk.saturating_add(j));
                }
            } else {
                let leaf = extent::parse_index(node, i).leaf;
                if !self.fs.geo.block_in_fs(leaf) {
                    return Err(format!("illegal extent node block {leaf}"));
                }
                let child = self.read(leaf)?;
                self.list_extent_node(&child, depth - 1, out)?;
                out.push(leaf);
            }
        }
        Ok(())
    }

    /// The blocks below an indirect block at `level` (1 single), then the
    /// block itself, as e2fsck's walk hands them out; an indirect block
    /// outside the file system stops the release.
    fn list_ind(
        &mut self,
        blk: u64,
        level: u32,
        out: &mut Vec<u64>,
    ) -> std::result::Result<(), Abort> {
        if blk == 0 {
            return Ok(());
        }
        self.spend()?;
        let geo = &self.fs.geo;
        if blk < geo.first_data_block || blk >= geo.blocks_count {
            return Err(format!("illegal indirect block {blk} in an orphaned inode"));
        }
        let b = self.read(blk)?;
        for i in 0..self.bs / 4 {
            let p = u64::from(crate::fs::inode::map_ptr(&b, i));
            if level == 1 {
                if p != 0 {
                    self.spend()?;
                    out.push(p);
                }
            } else {
                self.list_ind(p, level - 1, out)?;
            }
        }
        out.push(blk);
        Ok(())
    }

    /// Truncation to i_size: the blocks from `ceil(size / bs)` on go,
    /// emptied extent nodes and indirect blocks with them. Returns how
    /// many (no first block: e2fsck -n names the inode, not them).
    fn truncate_blocks(
        &mut self,
        ino: Ino,
        raw: &mut [u8],
        inode: &Inode,
    ) -> std::result::Result<(Option<u64>, u64), Abort> {
        let bs = self.bs as u64;
        let t = Trunc {
            first: inode.size.div_ceil(bs),
            offset: narrow::to_usize(inode.size % bs),
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
                extent::set_depth(&mut root, 0);
            }
        } else {
            let apb = bs / 4;
            let mut lblk = 0u64;
            let span = [1, apb, apb * apb, apb * apb * apb];
            for i in 0..15usize {
                let p = u64::from(finode::map_ptr(&root, i));
                let level = i.saturating_sub(11);
                if p != 0 {
                    let gone = if level == 0 {
                        self.trunc_data(lblk, p, &t, &mut freed)?
                    } else {
                        self.trunc_ind(p, level, lblk, &t, &mut freed)?
                    };
                    if gone {
                        finode::set_map_ptr(&mut root, i, 0);
                    }
                }
                lblk = lblk.saturating_add(span[level]);
            }
        }
        let mut m = InodeMut(raw);
        m.i_block_mut().copy_from_slice(&root);
        if freed > 0 {
            let huge =
                self.fs.sb.has_ro_compat(ro_compat::HUGE_FILE) && inode.has_flag(flags::HUGE_FILE);
            // i_blocks counts whole clusters on bigalloc.
            let unit = self.fs.geo.i_blocks_per_cluster(huge);
            let blocks = inode.blocks_raw.saturating_sub(freed.saturating_mul(unit));
            m.set_blocks(blocks, true);
        }
        Ok((None, freed))
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
        if !self.visit(pblk)? || lblk < t.first {
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
        let span = apb.saturating_pow(narrow::sat32(level - 1));
        let mut b = self.read(blk)?;
        let mut changed = false;
        for i in 0..apb as usize {
            let p = u64::from(finode::map_ptr(&b, i));
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
                finode::set_map_ptr(&mut b, i, 0);
                changed = true;
            }
        }
        let empty = b.iter().all(|&x| x == 0);
        if changed {
            self.write(blk, b);
        }
        if self.visit(blk)? && empty {
            self.free_block(blk)?;
            *freed += 1;
        }
        Ok(empty)
    }

    /// Clips the extent node `node` (the inode root or a tree block) of
    /// `depth` at the cut, recursing into index entries. A child's depth
    /// field is not read, as libext2fs does not read it.
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
        if h.magic != EXTENT_MAGIC || h.entries > max {
            return Err("bad extent node in an orphaned inode".into());
        }
        let mut kept: Vec<extent::RawEntry> = Vec::new();
        for i in 0..usize::from(h.entries) {
            let Some(e) = extent::raw_entry(node, i) else {
                return Err("bad extent node in an orphaned inode".into());
            };
            if depth == 0 {
                let mut x = extent::decode_leaf(&e);
                let start = u64::from(x.lblk);
                let keep = t.first.saturating_sub(start).min(u64::from(x.len));
                // The blocks kept are walked too: e2fsck judges each block
                // before it decides whether to free it.
                for j in 0..u64::from(x.len) {
                    self.trunc_data(start + j, x.pblk + j, t, freed)?;
                }
                if keep > 0 {
                    x.len = narrow::sat32(keep);
                    kept.push(x.encode());
                }
            } else {
                let idx = extent::parse_index(node, i);
                if !self.fs.geo.block_in_fs(idx.leaf) {
                    return Err(format!("illegal extent node block {}", idx.leaf));
                }
                let mut child = self.read(idx.leaf)?;
                if depth == 1 && self.bad_leaf.is_none() {
                    self.bad_leaf = t.seed.and_then(|seed| bad_leaf_at(seed, &child));
                }
                self.trunc_node(&mut child, depth - 1, t, freed)?;
                if extent::parse_header(&child).entries == 0 {
                    self.free_block(idx.leaf)?;
                    *freed += 1;
                } else {
                    if let Some(seed) = t.seed {
                        extent::set_block_checksum(seed, &mut child);
                    }
                    self.write(idx.leaf, child);
                    kept.push(e);
                }
            }
        }
        if kept.len() != usize::from(h.entries) || depth == 0 {
            // Slots past the new count keep their stale bytes, as e2fsck's
            // extent deletion leaves them.
            extent::put_entries(node, &kept);
        }
        Ok(())
    }

    /// Drops the orphan's xattr block reference (e2fsck does this for
    /// truncated orphans too); the block is freed when no one else refers
    /// to it.
    fn release_acl(&mut self, raw: &mut [u8], inode: &Inode) -> std::result::Result<(), Abort> {
        let bit64 = self.fs.sb.is_64bit();
        let blk = inode.acl_block(bit64);
        if blk == 0 {
            return Ok(());
        }
        let geo = &self.fs.geo;
        if blk >= geo.first_data_block && blk < geo.blocks_count {
            let mut b = self.read(blk)?;
            let header = xattr::parse_block_header(&b);
            if header.magic != xattr::XATTR_MAGIC {
                return Err(format!("bad extended attribute block {blk} header"));
            }
            let count = header.refcount.saturating_sub(1);
            xattr::set_refcount(&mut b, count);
            if self.fs.metadata_csum() {
                xattr::set_block_checksum(self.fs.csum_seed, blk, &mut b);
            }
            self.write(blk, b);
            if count == 0 {
                self.free_block(blk)?;
            }
        }
        InodeMut(raw).set_file_acl(0, bit64);
        Ok(())
    }

    // ---- orphan file ----

    /// The orphan file's blocks as e2fsck's block iteration hands them to
    /// its orphan code (data only, empty slots included): every mapped
    /// block in iteration order, blocks past i_size too, up to the first
    /// empty slot. An extent-mapped file has one, just past its last
    /// extent (holes between extents are never seen); a block-mapped one
    /// has one at the first zero pointer among the direct blocks and
    /// inside its indirect blocks (a zero indirect pointer skips its
    /// whole span unseen).
    fn walk_orphan_file(&self) -> std::result::Result<OrphanWalk, Unusable> {
        let ino = Ino(self.fs.sb.orphan_file_inum);
        let geo = &self.fs.geo;
        if ino == Ino::NONE || ino > Ino(geo.inodes_count) {
            return Err(Unusable::Broken(format!(
                "the orphan file inode {ino} is invalid"
            )));
        }
        let raw = self.read_inode(ino).map_err(Unusable::Broken)?;
        let inode = Inode::parse(&raw);
        let bs = self.bs as u64;
        if !inode.size.is_multiple_of(bs) {
            return Err(Unusable::WrongSize);
        }
        if inode.has_flag(flags::INLINE_DATA) {
            return Err(Unusable::Broken("it holds inline data".into()));
        }
        let mut w = OrphanWalk {
            ino,
            generation: inode.generation,
            blocks: inode.size / bs,
            calls: Vec::new(),
            stop: None,
        };
        // Far more blocks than the file system holds is not an orphan
        // file worth listing (the kernel and mke2fs make 512 at most).
        let cap = geo.blocks_count.min(MAX_ORPHAN_FILE_BLOCKS) as usize;
        let too_big = || Unusable::Broken("it maps more blocks than an orphan file can".into());
        if inode.has_flag(flags::EXTENTS) {
            let mut c = Collect {
                data_only: true,
                ..Collect::default()
            };
            let mut scratch = Scratch::new();
            let info = MapInfo::unbounded(ino.get(), false);
            blockmap::walk_extents(self.fs, info, &inode.block, &mut scratch, &mut c);
            if let Some(why) = c.broken {
                return Err(Unusable::Broken(why));
            }
            // e2fsck's iteration skips an extent that ends before the
            // previous one did, and starts one that overlaps it as far
            // into its blocks as the previous one reached.
            let mut at = 0u64;
            for (lblk, pblk, len) in c.mapped {
                if lblk.saturating_add(len) <= at {
                    continue;
                }
                let skew = at.saturating_sub(lblk);
                for j in 0..len {
                    if w.calls.len() >= cap {
                        return Err(too_big());
                    }
                    w.calls.push((lblk + j, pblk + skew + j));
                }
                at = lblk + len;
            }
            w.stop = Some(at);
        } else {
            let ptrs = inode.block_ptrs();
            for (l, &p) in ptrs.iter().take(12).enumerate() {
                if p == 0 {
                    w.stop = Some(l as u64);
                    return Ok(w);
                }
                w.calls.push((l as u64, u64::from(p)));
            }
            let apb = bs / 4;
            let mut lblk = 12u64;
            for (level, &p) in [1u32, 2, 3].iter().zip(&ptrs[finode::DIRECT_BLOCKS..]) {
                if p == 0 {
                    lblk = lblk.saturating_add(apb.saturating_pow(*level));
                    continue;
                }
                if let Some(stop) =
                    self.walk_orphan_ind(u64::from(p), *level, &mut lblk, &mut w, cap)?
                {
                    w.stop = Some(stop);
                    return Ok(w);
                }
            }
        }
        Ok(w)
    }

    /// One indirect block of the orphan file at `level` (1 single); the
    /// logical block of the first zero data pointer, if any.
    fn walk_orphan_ind(
        &self,
        blk: u64,
        level: u32,
        lblk: &mut u64,
        w: &mut OrphanWalk,
        cap: usize,
    ) -> std::result::Result<Option<u64>, Unusable> {
        let geo = &self.fs.geo;
        if blk < geo.first_data_block || blk >= geo.blocks_count {
            return Err(Unusable::Broken(format!("illegal indirect block {blk}")));
        }
        let b = self.read(blk).map_err(Unusable::Broken)?;
        let apb = (self.bs / 4) as u64;
        for i in 0..apb as usize {
            let p = u64::from(finode::map_ptr(&b, i));
            if level == 1 {
                if p == 0 {
                    return Ok(Some(*lblk));
                }
                if w.calls.len() >= cap {
                    return Err(Unusable::Broken(
                        "it maps more blocks than an orphan file can".into(),
                    ));
                }
                w.calls.push((*lblk, p));
                *lblk += 1;
            } else if p == 0 {
                *lblk = lblk.saturating_add(apb.saturating_pow(level - 1));
            } else if let Some(stop) = self.walk_orphan_ind(p, level - 1, lblk, w, cap)? {
                return Ok(Some(stop));
            }
        }
        Ok(None)
    }

    fn release_orphan_file(&mut self) -> std::result::Result<(), Abort> {
        let w = match self.walk_orphan_file() {
            Ok(w) => w,
            Err(Unusable::WrongSize) => {
                let ino = Ino(self.fs.sb.orphan_file_inum);
                let why = format!("the orphan file (inode {ino}) has a wrong size");
                return Err(self.named_stop(0x000055, ino, None, why));
            }
            Err(Unusable::Broken(why)) => {
                return Err(format!(
                    "the orphan file (inode {}): {why}",
                    self.fs.sb.orphan_file_inum
                ));
            }
        };
        let ino = w.ino;
        let geo = &self.fs.geo;
        let (first_ino, count) = (geo.first_ino, geo.inodes_count);
        for &(l, p) in &w.calls {
            let b = self.read(p)?;
            if ofile::magic(&b) != ofile::BLOCK_MAGIC {
                let why = format!("orphan file (inode {ino}) block {l} has a bad magic");
                return Err(self.named_stop(0x000053, ino, Some(l), why));
            }
            let seed = self.fs.csum_seed;
            if self.fs.metadata_csum()
                && ofile::stored_checksum(&b)
                    != ofile::compute_checksum(seed, ino, w.generation, p, &b)
            {
                let why = format!("orphan file (inode {ino}) block {l} has a bad checksum");
                return Err(self.named_stop(0x000054, ino, Some(l), why));
            }
            for o in ofile::entries(&b) {
                if o == 0 {
                    continue;
                }
                if o < first_ino || o > count {
                    return Err(format!("illegal inode {o} in the orphan file"));
                }
                self.release_inode(Ino(o))?;
            }
        }
        match w.hole() {
            Some(hole) => {
                let why = format!("the orphan file (inode {ino}) has a hole at block {hole}");
                Err(self.named_stop(0x000052, ino, Some(hole), why))
            }
            None => Ok(()),
        }
    }

    /// Rewrites the orphan file's blocks that are not empty (zero
    /// entries, magic, checksum), as e2fsck does after its passes: it
    /// names the first such block only and rewrites it and every block
    /// after it. An orphan file it cannot set up that way (a wrong size, a
    /// hole, a map it cannot walk) is to be made anew.
    fn clean_orphan_file(&mut self) -> std::result::Result<Cleaned, Unusable> {
        let w = self.walk_orphan_file()?;
        let mut first_dirty = None;
        for &(l, p) in &w.calls {
            let csum =
                self.fs
                    .metadata_csum()
                    .then_some((self.fs.csum_seed, w.ino, w.generation, p));
            let want = ofile::empty_block(self.bs, csum);
            if first_dirty.is_none() {
                let have = self.read(p).map_err(Unusable::Broken)?;
                if have == want {
                    continue;
                }
                first_dirty = Some(l);
            }
            self.write(p, want);
        }
        Ok(Cleaned {
            ino: w.ino,
            first_dirty,
            hole: w.hole(),
        })
    }

    /// Bitmap and descriptor checksums, the descriptor table and the
    /// superblock (list head cleared, counts, flags, checksum).
    fn finish(&mut self, clear_head: bool, clear_present: bool, failed: bool) {
        let fs = self.fs;
        self.stats.flush(&mut self.st);
        let changed = !self.st.map.is_empty();
        if !(changed || clear_head || clear_present || failed) {
            return;
        }
        let bs = self.bs;
        let sb_blk = fs.primary_sb_block();
        let sb_off = narrow::to_usize(crate::fs::superblock::SUPERBLOCK_OFFSET % bs as u64);
        let Ok(mut b) = self.read(sb_blk) else {
            return;
        };
        let mut s = SuperblockMut(&mut b[sb_off..sb_off + 1024]);
        s.set_last_orphan(0);
        self.stats.count_in(&mut s);
        if clear_present {
            s.set_ro_compat(s.ro_compat() & !ro_compat::ORPHAN_PRESENT);
        }
        if failed {
            s.set_state(s.state() & !STATE_VALID);
        }
        if fs.metadata_csum() {
            s.set_checksum();
        }
        self.write(sb_blk, b);
    }
}

/// The orphan file as e2fsck's block iteration walks it
/// (`Work::walk_orphan_file`).
struct OrphanWalk {
    ino: Ino,
    generation: u32,
    /// i_size in blocks.
    blocks: u64,
    /// (logical, physical) of every mapped block handed out.
    calls: Vec<(u64, u64)>,
    /// The logical block of the empty slot the walk stopped at.
    stop: Option<u64>,
}

impl OrphanWalk {
    /// An empty slot before i_size's last block is a hole.
    fn hole(&self) -> Option<u64> {
        self.stop.filter(|&s| s != self.blocks)
    }
}

/// Why the orphan file cannot be walked as one.
enum Unusable {
    /// i_size is not a whole number of blocks.
    WrongSize,
    /// Its map cannot be walked (e2fsck's block iteration fails).
    Broken(String),
}

/// What cleaning the orphan file found.
struct Cleaned {
    ino: Ino,
    /// The first block that was not empty (logical), rewritten with all
    /// after it.
    first_dirty: Option<u64>,
    /// The logical block of a hole that makes the file unusable.
    hole: Option<u64>,
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
/// The physical block of the last extent of leaf `b` when the leaf
/// fails its checksum (`seed` the inode's).
fn bad_leaf_at(seed: u32, b: &[u8]) -> Option<u64> {
    if extent::compute_block_checksum(seed, b)
        .is_some_and(|c| c == extent::stored_block_checksum(b))
    {
        return None;
    }
    let n = usize::from(extent::parse_header(b).entries);
    let last = extent::raw_entry(b, n.checked_sub(1)?)?;
    Some(extent::decode_leaf(&last).pblk)
}

fn has_valid_blocks(inode: &Inode) -> bool {
    if !(inode.is_dir() || inode.is_reg() || inode.is_symlink()) {
        return false;
    }
    if inode.is_symlink() {
        if inode.file_acl == 0 {
            if inode.blocks_raw == 0 {
                return false;
            }
            return !(inode.size != 0 && inode.size < 60);
        } else {
            if inode.size >= 60 {
                return true;
            }
            if inode.size > 4 && inode.block_ptr(1) == 0 {
                return true;
            }
            return false;
        }
    }
    !inode.has_flag(flags::INLINE_DATA)
}
