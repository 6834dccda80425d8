//! Repairs of a file's block map (pass 1): what e2fsck -y does to extent
//! trees and block pointers it cannot trust.
//!
//! One inode at a time, its map is walked again through the overlay with
//! the check's own tests (`check::blockmap::entry_fault`), so the repair
//! removes exactly the entries the check skipped:
//! - extent entries the check rejects are deleted (an index entry with
//!   the subtree below it); a node left empty is dropped from its parent,
//!   an empty root becomes a depth-0 root; an index whose child now starts
//!   elsewhere is moved to the child's first block (e2fsck's "fix
//!   parents"); uninitialized extents of a directory become initialized;
//!   every node rewritten, or whose checksum alone was wrong, gets its
//!   checksum recomputed;
//! - illegal block pointers (direct or inside indirect blocks) are zeroed,
//!   with whatever an illegal indirect pointer would have mapped;
//! - an inode whose root header is invalid, or with too many illegal
//!   blocks, is cleared, as e2fsck clears it (`clear`; with too many, the
//!   first eleven illegal pointers in its indirect blocks are zeroed
//!   first, as e2fsck writes them before it gives up); so is one whose
//!   tree holds more valid levels than the check walks (e2fsck walks and
//!   rebuilds it; pfsck cannot rebuild what it did not read, and leaving
//!   it would let pass 5 free blocks it still maps).
//!
//! The blocks the map no longer names, i_blocks and i_size, and the entries
//! naming a cleared inode are left to the next round's check and fixes.

use crate::check::blockmap::{
    Bounds, Entry, WALK_DEPTH_LIMIT, child_bound, child_end_blk, dir_block_limit, entry_fault,
    header_problem, indirect_limit, node_entry, root_end_blk,
};
use crate::check::problem::{Code, Problem};
use crate::check::state::State;
use crate::fs::bytes::{le32, put_le32};
use crate::fs::dir_entry;
use crate::fs::extent;
use crate::fs::group_desc::{self, Location};
use crate::fs::inode::field::*;
use crate::fs::inode::{self, Inode, flags};
use crate::fs::num::{Blk, Group, Ino};
use crate::fs::superblock::incompat;
use crate::narrow;
use crate::store::overlay::Overlay;
use crate::volume::{Allocator, Fs, edit as vol};

/// Problems that put the kind of an inode's map in doubt (extent tree,
/// block pointers or inline data): e2fsck first settles the kind (sets the
/// feature, the flag, or clears the inode), so a map read as the wrong
/// kind must not be "repaired" into garbage.
fn kind_in_doubt(p: &Problem) -> bool {
    match p.code {
        Code::InodeExtentsNoFeature | Code::InodeInlineNoFeature => true,
        Code::InodeBadFlags => p.args().detail.contains("EXTENTS_FL"),
        _ => false,
    }
}

/// Stages the repair of inode `ino`'s block map, given the codes of the
/// map problems the check found in it (`codes`) and of all its problems
/// (`all`). Returns whether anything was staged.
pub(super) fn fix(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    ino: u32,
    codes: &[Code],
    all: &[&Problem],
) -> super::Result<bool> {
    if all.iter().any(|p| kind_in_doubt(p)) {
        return Ok(false);
    }
    let Some(raw) = vol::read_inode(fs, overlay, Ino(ino))? else {
        return Ok(false);
    };
    let ind = Inode::parse(&raw);
    // The bad blocks inode only loses its illegal pointers (e2fsck never
    // clears it for having many).
    let clear_it = ino != inode::BAD_INO
        && codes.iter().any(|c| {
            matches!(
                c,
                Code::InodeExtentHeader
                    | Code::InodeTooManyIllegalBlocks
                    | Code::InodeExtentTreeUnwalkable
                    | Code::InodeExtentTreeShared
                    | Code::InodeBlockMapShared
            )
        });
    // As pass 1 walked it: without the feature, a flagged inode whose
    // root header is sound is still an extent tree (the repair sets the
    // feature, in pass 0 for a 64bit file system or at the first such
    // inode); rewritten as a block map, its header would be zeroed.
    let extents = ind.has_flag(flags::EXTENTS)
        && ino != inode::BAD_INO
        && (fs.sb.has_incompat(incompat::EXTENTS)
            || header_problem(&ind.block, I_BLOCK_LEN).is_none());
    if clear_it {
        let mut staged = false;
        if !extents
            && codes.contains(&Code::InodeTooManyIllegalBlocks)
            && !codes.contains(&Code::InodeBlockMapShared)
        {
            staged = zero_first_illegal(fs, state, overlay, ino, &ind)?;
        }
        return Ok(clear(fs, state, overlay, ino)? || staged);
    }
    // The rewrite below judges pointers one by one; a block that makes a
    // file too big is known only to the count of the whole walk, which
    // it does not keep: such a map is left as it is rather than half done.
    if all.iter().any(|p| p.e2fsck_code() == Some(0x010045)) {
        return Ok(false);
    }
    let mut root = ind.block;
    // Blocks below i_block that were rewritten.
    let staged_below;
    let changed = if extents {
        if header_problem(&root, I_BLOCK_LEN).is_some() {
            return Ok(false);
        }
        let depth = extent::parse_header(&root).depth;
        let bs = u64::from(fs.geo.block_size);
        let is_dir = ind.is_dir();
        let large_dir = fs.sb.has_incompat(incompat::LARGEDIR);
        let mut rw = ExtentRewrite {
            fs,
            state,
            overlay,
            seed: fs
                .metadata_csum()
                .then(|| inode::inode_csum_seed(fs.csum_seed, Ino(ino), ind.generation)),
            is_dir,
            eof_block: ind.size.div_ceil(bs).wrapping_sub(1),
            dir_limit: (is_dir && !large_dir).then(|| dir_block_limit(fs)),
            last_lblk: None,
            nodes_left: fs.geo.blocks_count,
            levels: 0,
            staged: false,
        };
        let end_blk = root_end_blk(rw.eof_block);
        let changed = rw.node(&mut root, depth, 0, None, end_blk)?;
        staged_below = rw.staged;
        changed
    } else {
        let mut ir = IndirectRewrite::new(fs, state, overlay, ino, &ind, None);
        let mut changed = ir.root(&mut root)?;
        // Not on bigalloc, where a block map is pass 1E's to rebuild: a
        // block per hole would break the cluster rules.
        if ind.is_dir()
            && fs.geo.cluster_bits == 0
            && codes
                .iter()
                .any(|c| matches!(c, Code::InodeDirHole | Code::DirHole))
        {
            changed |= fill_dir_holes(fs, state, ir.overlay, ino, &ind, &mut root)?;
        }
        staged_below = ir.staged;
        changed
    };
    if !changed {
        return Ok(staged_below);
    }
    vol::edit_inode(fs, overlay, Ino(ino), |m| {
        m.i_block_mut().copy_from_slice(&root)
    })?;
    Ok(true)
}

/// Gives a block-mapped directory a new, empty block in each hole among
/// its direct pointers before its last one, as e2fsck's pass 2 does ("has
/// an unallocated block. Allocate?"); block 0 gets '.' and '..' (pointing
/// at the root, which pass 3 corrects). Blocks are taken from those pass 1
/// left free and marked in use, so later fixes of this round skip them.
/// Holes deeper in the map are left as they are.
fn fill_dir_holes(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    ino: u32,
    ind: &Inode,
    root: &mut [u8; I_BLOCK_LEN],
) -> super::Result<bool> {
    let ptrs: Vec<u32> = inode::map_ptrs(root).collect();
    let mapped_after = |i: usize| ptrs[i + 1..].iter().any(|&p| p != 0);
    let mut alloc = Allocator::new(fs, &state.block_used);
    let mut changed = false;
    let mut from = alloc.first_data_block();
    for (i, &p) in ptrs.iter().enumerate().take(12) {
        if p != 0 || !mapped_after(i) {
            continue;
        }
        let Some(blk) = alloc.take_from(overlay, from, Blk::PTR32_END) else {
            break;
        };
        from = blk.next();
        overlay.stage(blk, empty_dir_block(fs, ino, ind.generation, i == 0))?;
        // Taken below Blk::PTR32_END.
        inode::set_map_ptr(root, i, narrow::sat32(blk.get()));
        changed = true;
    }
    Ok(changed)
}

/// Gives a block-mapped directory the block its pass 2 problem names
/// (`DirHoleCleared`, taken by the check as libext2fs takes it) in the
/// direct pointer of the hole, as e2fsck's pass 2 fills a block its pass
/// 1 cleared: the block holds no entry, i_blocks counts it and the size
/// grows to cover it.
pub(super) fn fill_cleared_hole(
    fs: &Fs,
    overlay: &mut Overlay,
    p: &Problem,
) -> super::Result<bool> {
    let (Some(dir), Some(lblk), Some(blk)) = (p.args().ino, p.args().num, p.args().blk) else {
        return Ok(false);
    };
    let (Ok(slot), Ok(ptr)) = (usize::try_from(lblk), u32::try_from(blk.0)) else {
        return Ok(false);
    };
    let Some(raw) = vol::read_inode(fs, overlay, dir)? else {
        return Ok(false);
    };
    let ind = Inode::parse(&raw);
    if slot >= inode::DIRECT_BLOCKS || ind.has_flag(flags::EXTENTS) || ind.block_ptrs()[slot] != 0 {
        return Ok(false);
    }
    let bs = u64::from(fs.geo.block_size);
    overlay.stage(blk, empty_dir_block(fs, dir.0, ind.generation, slot == 0))?;
    let sectors = fs.geo.block_sectors();
    let size = ind.size.max((lblk + 1) * bs);
    Ok(vol::edit_inode(fs, overlay, dir, |m| {
        m.set_block_ptr(slot, ptr);
        let blocks = m.blocks(false).saturating_add(sectors);
        m.set_blocks(blocks, false);
        m.set_size(size);
    })?)
}

/// A directory block holding no entry (or only '.' and '..'), with its
/// checksum tail under metadata_csum.
fn empty_dir_block(fs: &Fs, ino: u32, generation: u32, dots: bool) -> Vec<u8> {
    let bs = fs.block_size();
    let seed = fs
        .metadata_csum()
        .then(|| inode::inode_csum_seed(fs.csum_seed, Ino(ino), generation));
    if dots {
        let ft = fs.sb.has_incompat(incompat::FILETYPE).then_some(FT_DIR);
        dir_entry::dots_block(bs, ino, inode::ROOT_INO, ft, seed)
    } else {
        dir_entry::empty_block(bs, seed)
    }
}

/// File type of a directory in an entry (filetype feature).
const FT_DIR: u8 = 2;

/// Clears inode `ino` as e2fsck does when its map is beyond repair: the
/// next check finds it free (and the entries naming it deleted); a
/// reserved inode also loses its map. The root is never cleared here.
fn clear(fs: &Fs, state: &State, overlay: &mut Overlay, ino: u32) -> super::Result<bool> {
    if ino == inode::ROOT_INO && !super::root_remade(fs) {
        return Ok(false);
    }
    let how = super::inode::Release {
        reserved_map: true,
        ..Default::default()
    };
    super::inode::release(fs, state, overlay, ino, how)
}

/// Clears the bad blocks inode entirely (e2fsck zeroes its whole base
/// inode), which empties the bad-block list.
pub(super) fn clear_bad_blocks_inode(fs: &Fs, overlay: &mut Overlay) -> super::Result<bool> {
    Ok(vol::edit_inode(fs, overlay, Ino::BAD, |m| {
        m.0[..inode::GOOD_OLD_INODE_SIZE].fill(0);
    })?)
}

/// A bitmap (or inode table) to move: its group and which, and whether
/// its contents go with it.
#[derive(Clone, Copy)]
pub(super) struct Move {
    group: u32,
    field: Location,
    /// e2fsck copies what the old location holds unless the check let go
    /// of it (outside the group: the descriptor's field is zeroed first).
    /// Bitmaps are rewritten by pass 5 whatever they start with; an inode
    /// table that overlaps other metadata keeps its inodes.
    copied: bool,
}

const BLOCK_BITMAP: Location = Location::BlockBitmap;
const INODE_BITMAP: Location = Location::InodeBitmap;
const INODE_TABLE: Location = Location::InodeTable;

/// The bitmaps a problem asks to move: those on a bad block
/// (`BadBlockInMetadata`), outside their group, or overlapping other
/// metadata (as e2fsck's "Relocate?").
pub(super) fn bitmaps_to_move(fs: &Fs, p: &Problem) -> Vec<Move> {
    let which = |detail: &str| match detail {
        "Block bitmap" => Some(BLOCK_BITMAP),
        "Inode bitmap" => Some(INODE_BITMAP),
        "Inode table" => Some(INODE_TABLE),
        _ => None,
    };
    let one = |field: Location, copied: bool| {
        p.args()
            .group
            .map(|Group(group)| Move {
                group,
                field,
                copied,
            })
            .into_iter()
            .collect()
    };
    match p.code {
        Code::BadBlockInMetadata => {
            let Some(Blk(blk)) = p.args().blk else {
                return Vec::new();
            };
            let mut v = Vec::new();
            for (g, gd) in fs.gds.iter().enumerate() {
                for (at, field) in [
                    (gd.block_bitmap, BLOCK_BITMAP),
                    (gd.inode_bitmap, INODE_BITMAP),
                ] {
                    if at == blk {
                        v.push(Move {
                            group: narrow::sat32(g),
                            field,
                            copied: true,
                        });
                    }
                }
            }
            v
        }
        Code::GdBlockBitmapLocation => one(BLOCK_BITMAP, true),
        Code::GdInodeBitmapLocation => one(INODE_BITMAP, true),
        Code::GdInodeTableLocation => one(INODE_TABLE, false),
        Code::GdMetadataOverlap => match which(p.args().detail) {
            Some(field) => one(field, true),
            None => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Moves bitmaps (and inode tables) to free blocks, as e2fsck does at the end of its pass 1:
/// the first block pass 1 left free in the group (with flex_bg, in its
/// flex group), else anywhere; the old contents are copied when the move
/// keeps them and the old block lies in the file system (pass 5 of the
/// next round corrects bitmaps either way) and the primary descriptor
/// points at the new block.
/// Returns, per move, whether it was made. The caller fixes nothing else
/// in this round: the summary rewrite would put the descriptors back.
pub(super) fn relocate_bitmaps(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    moves: &[Move],
) -> super::Result<Vec<bool>> {
    let geo = &fs.geo;
    let mut alloc = Allocator::new(fs, &state.block_used);
    let mut moved = vec![false; moves.len()];
    let mut done = std::collections::BTreeSet::new();
    for (k, mv) in moves.iter().enumerate() {
        let (g, field) = (mv.group, mv.field);
        let Some(gd) = fs.gd(Group(g)) else {
            continue;
        };
        if !done.insert((g, field)) {
            moved[k] = true;
            continue;
        }
        let old = match field {
            BLOCK_BITMAP => gd.block_bitmap,
            INODE_BITMAP => gd.inode_bitmap,
            _ => gd.inode_table,
        };
        // An inode table needs its blocks in one run; one moved from
        // outside its group loses its inodes (e2fsck: "SEVERE DATA LOSS
        // POSSIBLE") and starts zeroed.
        let n = if field == INODE_TABLE {
            u64::from(geo.inode_table_blocks)
        } else {
            1
        };
        let flex = geo.flex_bg_size.max(1);
        // Both within the groups, as g is.
        let first_g = narrow::sat32(u64::from(g) / flex * flex);
        let last_g = narrow::sat32((u64::from(first_g) + flex - 1).min(u64::from(geo.groups) - 1));
        let view: &Overlay = overlay;
        let mut free = |from: u64, to: u64| alloc.take_run(view, Blk(from), Blk(to), n);
        let Some(new) = free(geo.group_first_block(first_g), geo.group_last_block(last_g))
            .or_else(|| free(geo.first_data_block, geo.blocks_count - 1))
            .map(Blk::get)
        else {
            continue;
        };
        for (i, b) in (new..new + n).enumerate() {
            let from = old + i as u64;
            // A location of 0 is no location: e2fsck zeroes the new
            // blocks instead of copying block 0 (the superblock's, with
            // 4 KiB blocks) into them.
            let data = if mv.copied && old != 0 && geo.block_in_fs(old) && geo.block_in_fs(from) {
                vol::read_block(fs, overlay, from).unwrap_or_else(|_| vec![0u8; fs.block_size()])
            } else {
                vec![0u8; fs.block_size()]
            };
            overlay.stage(Blk(b), data)?;
            // Not into a block bitmap that is itself moving (a bad block,
            // or outside its group): the next round writes the new one.
            let h = geo.group_of_block(b);
            if !moves
                .iter()
                .any(|m| m.group == h && m.field == BLOCK_BITMAP)
            {
                mark_in_bitmap(fs, overlay, b)?;
            }
        }
        vol::edit_desc(fs, overlay, g, |d| d.set_location(field, new))?;
        moved[k] = true;
    }
    Ok(moved)
}

/// Sets `blk`'s bit in the on-disk block bitmap of its group, with that
/// bitmap's checksum, as e2fsck's allocation does. The next round's pass 5
/// does not miss the bit when the moved metadata belongs to an uninit
/// group (it reads as used through that group), but the checksum e2fsck
/// computes over the bitmap it reads would then be wrong.
fn mark_in_bitmap(fs: &Fs, overlay: &mut Overlay, blk: u64) -> super::Result<()> {
    let geo = &fs.geo;
    let h = geo.group_of_block(blk);
    let Some(gd) = fs.gd(Group(h)) else {
        return Ok(());
    };
    if fs.uninit_bg() && gd.has_flag(group_desc::BG_BLOCK_UNINIT) {
        return Ok(());
    }
    let bs = fs.block_size() as u64;
    let bm = gd.block_bitmap;
    if !geo.block_in_fs(bm) || bm == fs.primary_sb_block() {
        return Ok(());
    }
    // One bit per cluster on bigalloc.
    let bit = (blk - geo.group_first_block(h)) >> geo.cluster_bits;
    let mut bytes = Vec::new();
    vol::edit_bytes(fs, overlay, bm * bs, fs.block_size(), |b| {
        if let Some(x) = b.get_mut(narrow::to_usize(bit / 8)) {
            *x |= 1 << (bit % 8);
        }
        bytes = b.to_vec();
    })?;
    if !fs.metadata_csum() {
        return Ok(());
    }
    let n = geo.block_bitmap_bytes().min(bytes.len());
    let c = group_desc::bitmap_checksum(&fs.sb, &bytes[..n], gd.wide);
    Ok(vol::edit_desc(fs, overlay, h, |d| {
        d.set_block_bitmap_csum(c)
    })?)
}

struct ExtentRewrite<'a> {
    fs: &'a Fs,
    state: &'a State,
    overlay: &'a mut Overlay,
    /// The inode's checksum seed, with metadata_csum.
    seed: Option<u32>,
    is_dir: bool,
    eof_block: u64,
    dir_limit: Option<u64>,
    /// As the check's walk: last logical block of the previous kept leaf.
    last_lblk: Option<u64>,
    /// Same bound on nodes as the check's walk.
    nodes_left: u64,
    /// Nodes below the root on the way down to the current one; as deep
    /// as the check walks, and no deeper.
    levels: u16,
    /// Some node below the root was staged.
    staged: bool,
}

const ENTRY: usize = 12;

impl ExtentRewrite<'_> {
    /// Rewrites node `b` (depth `depth`, mapping [start, end]) in place,
    /// staging the children it changes. Returns whether `b` changed.
    fn node(
        &mut self,
        b: &mut [u8],
        depth: u16,
        start: u64,
        end: Option<u64>,
        end_blk: u64,
    ) -> super::Result<bool> {
        let h = extent::parse_header(b);
        let leaf = depth == 0;
        let mut keep: Vec<[u8; ENTRY]> = Vec::with_capacity(usize::from(h.entries));
        let mut changed = false;
        let mut start_block = start;
        let mut stopped = false;
        for i in 0..usize::from(h.entries) {
            let off = ENTRY + ENTRY * i;
            let Some(slot) = b.get(off..off + ENTRY) else {
                break;
            };
            let mut raw = [0u8; ENTRY];
            raw.copy_from_slice(slot);
            if stopped {
                keep.push(raw);
                continue;
            }
            let (lblk, pblk, len, unwritten) = node_entry(b, i, leaf, end_blk);
            let e = Entry {
                leaf,
                lblk,
                pblk,
                len,
                unwritten,
            };
            let bounds = Bounds {
                start: start_block,
                last_lblk: self.last_lblk,
                end,
                nblocks: self.fs.geo.blocks_count,
                first_data_block: self.fs.geo.first_data_block,
                eof_block: self.eof_block,
                dir_limit: self.dir_limit,
            };
            if entry_fault(&e, &bounds).is_some() {
                changed = true;
                continue;
            }
            let mut last = lblk + len.max(1) - 1;
            if leaf {
                if unwritten && self.is_dir {
                    // The blocks are read as directory blocks from now on.
                    // An initialised length: at most 32768.
                    extent::set_leaf_raw_len(&mut raw, narrow::sat16(len));
                    changed = true;
                }
                // A directory's extents follow each other without holes:
                // e2fsck moves an extent after a gap down to close it
                // (pass 3 would otherwise fill the gap block by block).
                let next = self.last_lblk.map_or(0, |l| l + 1);
                if self.is_dir && lblk > next {
                    // Below lblk, a 32-bit field.
                    extent::set_entry_lblk(&mut raw, narrow::sat32(next));
                    last = next + len - 1;
                    changed = true;
                }
                self.last_lblk = Some(last);
                start_block = last;
                keep.push(raw);
                continue;
            }
            if self.nodes_left == 0 {
                // The check stopped here too: keep the rest as it is.
                stopped = true;
                keep.push(raw);
                continue;
            }
            self.nodes_left -= 1;
            let (bound, below) = (child_bound(lblk, len), child_end_blk(b, i, end_blk));
            match self.child(pblk, depth, bound, below)? {
                Child::Drop => changed = true,
                Child::Same => {
                    start_block = lblk;
                    keep.push(raw);
                }
                Child::Keep(first) => {
                    if u64::from(first) != lblk {
                        extent::set_entry_lblk(&mut raw, first);
                        changed = true;
                    }
                    start_block = lblk;
                    keep.push(raw);
                }
            }
        }
        if changed {
            // No more than the node held.
            extent::set_entry_count(b, narrow::sat16(keep.len()));
            if keep.is_empty() {
                // An empty root maps nothing at depth 0 (as e2fsck leaves
                // it); an empty lower node is dropped by its parent.
                extent::set_depth(b, 0);
            }
            let max = usize::from(h.max);
            for k in 0..max {
                let off = ENTRY + ENTRY * k;
                if let Some(slot) = b.get_mut(off..off + ENTRY) {
                    match keep.get(k) {
                        Some(raw) => slot.copy_from_slice(raw),
                        None => slot.fill(0),
                    }
                }
            }
        }
        Ok(changed)
    }

    /// Repairs the node at `pblk` below an index of a depth-`depth` node
    /// that maps [lblk, end] (end None: unbounded) and runs to `end_blk`.
    fn child(
        &mut self,
        pblk: u64,
        depth: u16,
        end: Option<u64>,
        end_blk: u64,
    ) -> super::Result<Child> {
        // A node on critical metadata is not repaired, nor anything below
        // it (e2fsck: "conflicts with critical metadata, skipping block
        // checks"); the duplicate block repair moves it first. A node that
        // cannot be read is left as it is too.
        if self.state.block_meta.get(self.state.cluster(pblk)) || self.levels >= WALK_DEPTH_LIMIT {
            return Ok(Child::Same);
        }
        let Ok(mut buf) = vol::read_block(self.fs, &*self.overlay, pblk) else {
            return Ok(Child::Same);
        };
        let ch = extent::parse_header(&buf);
        // The child's own depth field is not read, as the check does not.
        if header_problem(&buf, buf.len()).is_some() || ch.entries == 0 {
            return Ok(Child::Drop);
        }
        let csum_bad = self.seed.is_some_and(|seed| {
            extent::compute_block_checksum(seed, &buf)
                .is_some_and(|c| c != extent::stored_block_checksum(&buf))
        });
        // Scanned from its own first block, as the check does.
        let first = u64::from(le32(&buf, ENTRY));
        self.levels += 1;
        let changed = self.node(&mut buf, depth - 1, first, end, end_blk);
        self.levels -= 1;
        let changed = changed?;
        if extent::parse_header(&buf).entries == 0 {
            return Ok(Child::Drop);
        }
        let first = le32(&buf, ENTRY);
        if changed || csum_bad {
            if let Some(c) = self
                .seed
                .and_then(|seed| extent::compute_block_checksum(seed, &buf))
            {
                let off = extent::tail_offset(extent::parse_header(&buf).max);
                put_le32(&mut buf, off, c);
            }
            self.overlay.stage(Blk(pblk), buf)?;
            self.staged = true;
        }
        Ok(Child::Keep(first))
    }
}

/// What becomes of an index entry once its child was repaired.
enum Child {
    /// The child is invalid or empty: the entry goes.
    Drop,
    /// The entry stays; the child's first logical block.
    Keep(u32),
    /// The entry stays as it is (the child was not looked at).
    Same,
}

struct IndirectRewrite<'a> {
    fs: &'a Fs,
    state: &'a State,
    overlay: &'a mut Overlay,
    /// Block pointers per indirect block.
    apb: u64,
    /// Some indirect block was staged.
    staged: bool,
    /// Last logical block data may have (see `indirect_limit`).
    limit: Option<u64>,
    /// Indirect blocks left to read: as many as the file system has
    /// blocks (a garbage map must not fan out forever).
    budget: u64,
    /// The map is the resize inode's: its own indirect blocks are the
    /// primary reserved GDT blocks (these), metadata it owns, which e2fsck
    /// rewrites too. Any other block its double indirect block names is
    /// another structure's (the superblock, a descriptor block, an inode
    /// table): never written, the pointer to it is dropped instead.
    resize: Option<std::ops::Range<u64>>,
    /// Illegal pointers met so far, when the walk stops at the twelfth
    /// (`zero_first_illegal`).
    illegal_seen: Option<u32>,
    /// The twelfth was met: nothing more is read or zeroed.
    stopped: bool,
}

/// Stages what e2fsck writes of a block map it gives up on: it zeroes
/// the first eleven illegal pointers as it meets them, writing each
/// indirect block they sit in, and asks to clear the inode at the
/// twelfth. A garbage pointer that names another file's block as an
/// indirect block so damages that block, as it does under e2fsck, and the
/// next round judges it there. The inode itself is cleared by the caller.
fn zero_first_illegal(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    ino: u32,
    ind: &Inode,
) -> super::Result<bool> {
    let mut ir = IndirectRewrite::new(fs, state, overlay, ino, ind, Some(0));
    let mut root = ind.block;
    ir.root(&mut root)?;
    Ok(ir.staged)
}

impl<'a> IndirectRewrite<'a> {
    fn new(
        fs: &'a Fs,
        state: &'a State,
        overlay: &'a mut Overlay,
        ino: u32,
        ind: &Inode,
        illegal_seen: Option<u32>,
    ) -> Self {
        IndirectRewrite {
            fs,
            state,
            overlay,
            apb: u64::from(fs.geo.block_size / 4),
            staged: false,
            limit: (ino != inode::BAD_INO)
                .then(|| {
                    indirect_limit(
                        fs,
                        ind.is_dir(),
                        ind.is_symlink(),
                        fs.sb.has_incompat(incompat::LARGEDIR),
                    )
                })
                .flatten(),
            budget: fs.geo.blocks_count,
            resize: (ino == inode::RESIZE_INO).then(|| {
                let first = fs.primary_sb_block() + 1 + u64::from(fs.geo.desc_blocks);
                first..first + u64::from(fs.geo.reserved_gdt_blocks)
            }),
            illegal_seen,
            stopped: false,
        }
    }

    /// Whether an illegal pointer just met is zeroed: always, unless the
    /// walk counts toward e2fsck's twelfth, where it stops.
    fn zero_this_one(&mut self) -> bool {
        let Some(n) = self.illegal_seen.as_mut() else {
            return true;
        };
        *n += 1;
        self.stopped = n.is_multiple_of(12);
        !self.stopped
    }

    /// Is the pointer to `blk` (a data block at `lblk` when `data`) one the
    /// check rejects?
    fn illegal(&self, blk: u64, lblk: u64, data: bool) -> bool {
        !self.fs.geo.block_in_fs(blk) || (data && self.limit.is_some_and(|l| lblk > l))
    }

    /// Zeroes the illegal pointers of i_block and below. Returns whether
    /// i_block changed.
    fn root(&mut self, root: &mut [u8; I_BLOCK_LEN]) -> super::Result<bool> {
        let mut changed = false;
        let mut base = 12u64;
        for i in 0..15 {
            if self.stopped {
                break;
            }
            let p = u64::from(inode::map_ptr(root, i));
            let level = narrow::sat32(i.saturating_sub(11));
            let lblk = if i < 12 { i as u64 } else { base };
            if i >= 12 {
                base = base.saturating_add(self.apb.saturating_pow(level));
            }
            if p == 0 {
                continue;
            }
            if self.illegal(p, lblk, level == 0) {
                if self.zero_this_one() {
                    inode::set_map_ptr(root, i, 0);
                    changed = true;
                }
            } else if level > 0 && self.indirect(p, level, lblk)? == Indirect::Drop {
                inode::set_map_ptr(root, i, 0);
                changed = true;
            }
        }
        Ok(changed)
    }

    /// Zeroes the illegal pointers of indirect block `blk` (`level` 1 to
    /// 3, mapping from logical block `lblk`) and below, staging every
    /// block that changes; says when the pointer to `blk` must go instead.
    fn indirect(&mut self, blk: u64, level: u32, lblk: u64) -> super::Result<Indirect> {
        if self.budget == 0 || self.stopped {
            return Ok(Indirect::Kept);
        }
        self.budget -= 1;
        let Ok(mut buf) = vol::read_block(self.fs, &*self.overlay, blk) else {
            return Ok(Indirect::Kept);
        };
        let span = self.apb.saturating_pow(level - 1);
        let mut changed = false;
        for k in 0..narrow::to_usize(self.apb) {
            if self.stopped {
                break;
            }
            let p = u64::from(inode::map_ptr(&buf, k));
            if p == 0 {
                continue;
            }
            let l = lblk.saturating_add((k as u64).saturating_mul(span));
            if self.illegal(p, l, level == 1) {
                if self.zero_this_one() {
                    inode::set_map_ptr(&mut buf, k, 0);
                    changed = true;
                }
            } else if level > 1 && self.indirect(p, level - 1, l)? == Indirect::Drop {
                inode::set_map_ptr(&mut buf, k, 0);
                changed = true;
            }
        }
        if !changed {
            return Ok(Indirect::Kept);
        }
        let on_meta = self.state.block_meta.get(self.state.cluster(blk));
        let writable = match &self.resize {
            // The resize inode's own: its reserved GDT blocks, where e2fsck
            // zeroes an illegal entry (pass 0 only judges the first
            // quarter), and its double indirect block. Anything else its
            // map names is not its to write, whatever e2fsck does there
            // (it zeroes "entries" of the superblock itself); the entry
            // naming it goes.
            Some(own) if level == 1 => own.contains(&blk),
            _ => !on_meta,
        };
        if writable {
            self.overlay.stage(Blk(blk), buf)?;
            self.staged = true;
            return Ok(Indirect::Kept);
        }
        // An indirect block on critical metadata of another inode is never
        // written (it is the metadata's block); e2fsck only forgets the
        // pointers in core, and so does the check.
        Ok(if self.resize.is_some() {
            Indirect::Drop
        } else {
            Indirect::Kept
        })
    }
}

/// What becomes of the pointer to an indirect block the repair walked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Indirect {
    Kept,
    /// The block needed changes the repair may not write there.
    Drop,
}
