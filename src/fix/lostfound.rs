//! Pass 3 and 4 fixes that change the directory tree: unattached inodes
//! and unconnected directories get an entry `#INO` in /lost+found;
//! unattached zero-length inodes are cleared.
//!
//! Every edit changes how many entries name some inode, so each one
//! records its effect in [`Links`]: the link count fixes staged afterwards
//! (`super::plan`) add it to what pass 2 counted, and inodes whose count
//! only changes because of these edits (lost+found gaining a subdirectory,
//! the old parent of a reconnected directory losing its '..') are fixed
//! too. Clearing an inode also clears it in `State::inode_used`, so the
//! summary rebuilt last frees it in the bitmap and the counts.
//!
//! Directory blocks are read through the overlay, so several entries added
//! to one block accumulate; a full lost+found grows by a block (`expand`).
//! What is not built yet is left unfixed (and so listed by the re-check):
//! an indexed (htree) or inline lost+found, one whose map is deeper than
//! the inode's extent root or the direct pointers, indexed or inline
//! directories to reconnect.

use crate::check::problem::{Code, Problem};
use crate::check::state::{State, iflag};
use crate::fs::dir_entry::{
    self, TAIL_LEN, has_tail, inode_at, insert_entry, put_name, set_inode_at,
};
use crate::fs::extent::{self, EXTENT_MAGIC, Extent, INIT_MAX_LEN};
use crate::fs::inode::{InodeMut, ROOT_INO, inode_csum_seed};
use crate::fs::num::{Blk, Group, Ino, LBlk};
use crate::fs::superblock::incompat;
use crate::narrow;
use crate::store::overlay::Overlay;
use crate::volume::{Allocator, Fs, edit as vol};
use std::collections::BTreeMap;

/// Changes to the number of entries naming each inode, made by the fixes.
pub(super) type Links = BTreeMap<Ino, i64>;

pub(super) fn add(links: &mut Links, ino: Ino, d: i64) {
    *links.entry(ino).or_default() += d;
}

/// Directory file type codes (the entry's file_type byte).
const FT_DIR: u8 = 2;

/// Where reconnected inodes go: /lost+found as the check found it, or as
/// `create` made it.
pub(super) struct LostFound {
    pub ino: Ino,
    /// Its blocks in logical order.
    blocks: Vec<Blk>,
    /// The inodes whose names it grew by a block for.
    grown_for: std::collections::BTreeSet<Ino>,
    /// The inodes whose names it may grow for: those whose question to
    /// expand it (`LostFoundFull`, which the check puts after each
    /// connection that finds no room) is among the fixes planned. An
    /// expansion answered no leaves lost+found as it is, and the inode
    /// unconnected, as e2fsck's no does.
    pub may_grow: std::collections::BTreeSet<Ino>,
}

impl LostFound {
    pub(super) fn new(state: &State) -> LostFound {
        let blocks = if state.lost_found == Ino::NONE {
            Vec::new()
        } else {
            state.dir_blocks_of(state.lost_found)
        };
        LostFound {
            ino: state.lost_found,
            blocks: blocks.into_iter().map(|(_, b)| b).collect(),
            grown_for: Default::default(),
            may_grow: Default::default(),
        }
    }
}

/// Stages the fix of one pass 3/4 problem; returns whether it was fixed.
pub(super) fn fix(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    lf: &mut LostFound,
    p: &Problem,
    links: &mut Links,
) -> super::Result<bool> {
    let Some(ino) = p.args().ino else {
        return Ok(false);
    };
    match p.code {
        Code::InodeUnattached | Code::DirUnconnected => {
            reconnect(fs, state, overlay, lf, ino, links)
        }
        Code::InodeUnattachedZero => clear(fs, state, overlay, ino),
        // Asked after the question connecting `ino`, whose fix grew it.
        Code::LostFoundFull | Code::LostFoundFullP4 => Ok(lf.grown_for.contains(&ino)),
        _ => Ok(false),
    }
}

/// The block (physical) holding logical block `lblk` of directory `ino`.
pub(super) fn dir_block(state: &State, ino: Ino, lblk: LBlk) -> Option<Blk> {
    state
        .dir_blocks
        .iter()
        .find(|d| d.ino == ino && d.lblk == lblk)
        .map(|d| d.pblk)
}

/// The checksum seed of directory `ino`'s blocks. The inode is read
/// through the overlay: a lost+found created by this repair exists only
/// there.
pub(super) fn dir_seed(fs: &Fs, state: &State, overlay: &Overlay, ino: Ino) -> super::Result<u32> {
    let generation = match (state.dir_index(ino), state.dir_gen.is_empty()) {
        (Some(k), false) => state.dir_gen.get(k).copied().unwrap_or(0),
        _ => {
            let raw = vol::read_inode(fs, overlay, ino)?
                .ok_or_else(|| format!("inode {ino} lies beyond the addressable range"))?;
            InodeMut(&mut raw.clone()).generation()
        }
    };
    Ok(inode_csum_seed(fs.csum_seed, ino, generation))
}

/// Reads block `pblk` of directory `dir` through the overlay, lets `edit`
/// change its entries (the part before a checksum tail), recomputes the
/// tail and stages it. `edit` returns false when it found nothing to do.
pub(super) fn edit_dir_block(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    dir: Ino,
    pblk: Blk,
    edit: impl FnOnce(&mut [u8]) -> bool,
) -> super::Result<bool> {
    let bs = fs.block_size();
    let seed = if fs.metadata_csum() {
        Some(dir_seed(fs, state, overlay, dir)?)
    } else {
        None
    };
    let mut done = false;
    let htree = state.has_iflag(dir, iflag::HTREE);
    vol::edit_bytes(fs, overlay, pblk.byte(fs.geo.block_size), bs, |b| {
        let tail = seed.is_some() && has_tail(b);
        let end = if tail { b.len() - TAIL_LEN } else { b.len() };
        done = edit(&mut b[..end]);
        if done && let Some(seed) = seed.filter(|_| tail) {
            dir_entry::set_tail_checksum(seed, b);
        } else if done && let Some(seed) = seed.filter(|_| htree) {
            // An htree root ('..' rewritten) keeps its checksum in the
            // dx tail after the index.
            dx_root_reseal(b, dir, seed);
        }
    })?;
    Ok(done)
}

/// Recomputes the dx tail checksum of block `b` if it is the htree root
/// of `dir` ('.' naming it, the standard 8-byte root info).
fn dx_root_reseal(b: &mut [u8], dir: Ino, seed: u32) {
    use crate::fs::htree;
    if inode_at(b, 0) != dir || htree::parse_root_info(b).info_length != htree::ROOT_INFO_LEN {
        return;
    }
    let count_off = htree::ROOT_INFO_OFFSET + 8;
    let cl = htree::parse_count_limit(b, count_off);
    if let Some(c) = htree::compute_tail_checksum(seed, b, count_off, cl) {
        htree::set_tail_checksum(b, count_off, cl, c);
    }
}

/// Can entries be added to / rewritten in directory `dir` by these fixes?
fn plain_dir(state: &State, dir: Ino) -> bool {
    state.inode_dir.get(dir) && !state.has_iflag(dir, iflag::HTREE | iflag::INLINE | iflag::BAD)
}

/// Names `ino` as `#ino` in /lost+found; a directory also gets its '..'
/// pointed there.
fn reconnect(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    lost_found: &mut LostFound,
    ino: Ino,
    links: &mut Links,
) -> super::Result<bool> {
    let lf = lost_found.ino;
    if lf == Ino::NONE || lf == ino || !plain_dir(state, lf) {
        return Ok(false);
    }
    let is_dir = state.inode_dir.get(ino);
    // A directory's '..' must be rewritten too; find where it is before
    // adding the entry, so a directory that cannot be fixed is left whole.
    let inline = is_dir && state.has_iflag(ino, iflag::INLINE);
    if inline && state.has_iflag(ino, iflag::BAD) {
        return Ok(false);
    }
    let dotdot_blk = if is_dir && !inline {
        // An indexed directory's '..' can be rewritten too (its root's
        // checksum is recomputed); only entries cannot be added to one.
        let ok = !state.has_iflag(ino, iflag::BAD);
        match dir_block(state, ino, LBlk(0)).filter(|_| ok) {
            Some(b) => Some(b),
            None => return Ok(false),
        }
    } else {
        None
    };
    let filetype = fs.sb.has_incompat(incompat::FILETYPE);
    let ft = if filetype { state.ftype(ino) } else { 0 };
    let name = format!("#{ino}");
    let mut added = false;
    for &pblk in &lost_found.blocks {
        if edit_dir_block(fs, state, overlay, lf, pblk, |b| {
            insert_entry(b, ino, name.as_bytes(), ft, filetype)
        })? {
            added = true;
            break;
        }
    }
    if !added {
        if !lost_found.may_grow.contains(&ino) {
            return Ok(false);
        }
        // No room: lost+found grows by a block, as e2fsck's "Expand".
        let mut alloc = Allocator::new(fs, &state.block_used);
        let Some(pblk) = expand(fs, state, overlay, lost_found, &mut alloc)? else {
            return Ok(false);
        };
        // The new block's one empty record becomes the entry.
        let n = name.as_bytes();
        edit_dir_block(fs, state, overlay, lf, pblk, |b| {
            set_inode_at(b, 0, ino);
            put_name(b, 0, n, filetype.then_some(ft));
            true
        })?;
        lost_found.grown_for.insert(ino);
    }
    add(links, ino, 1);
    if let Some(pblk) = dotdot_blk {
        super::dir::set_dotdot(fs, state, overlay, ino, pblk, lf, links)?;
    } else if inline {
        super::dir::set_inline_dotdot(fs, overlay, ino, lf, links)?;
    }
    Ok(true)
}

/// How `expand` changes the block map in the inode.
enum MapEdit {
    /// The last of the root's extents grows by one block.
    Grow,
    /// A new extent of one block after the others.
    Add,
    /// A direct pointer is set.
    Direct,
}

/// Adds one empty block at the end of /lost+found, as e2fsck's "Expand":
/// with bigalloc, the next block of the cluster its last block is in when
/// its logical cluster goes on (nothing allocated); else the last extent
/// grows when the next block is free, or a new extent (or direct pointer)
/// takes the lowest free block (cluster). Deeper extent trees and indirect blocks are not handled
/// (None). i_size grows by the block, i_blocks by a newly taken cluster.
fn expand(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    lf: &mut LostFound,
    alloc: &mut Allocator,
) -> super::Result<Option<Blk>> {
    let ino = lf.ino.get();
    let Some(mut raw) = vol::read_inode(fs, overlay, Ino(ino))? else {
        return Ok(None);
    };
    let node = InodeMut(&mut raw);
    let bs = fs.block_size();
    let bits = fs.geo.cluster_bits;
    // The new block's place in the directory.
    let count = lf.blocks.len();
    let Ok(lblk) = u32::try_from(count).map(LBlk) else {
        return Ok(None);
    };
    // With bigalloc, where the block lies in its cluster.
    let offset = lblk.in_cluster(bits);
    let view: &Overlay = overlay;
    // A new cluster costs its sectors in i_blocks; a block of the last
    // cluster nothing.
    let mut taken = true;
    let (blk, edit) = if node.flags() & EXTENTS_FL != 0 {
        let root = node.i_block();
        let h = extent::parse_header(root);
        let n = usize::from(h.entries);
        if h.magic != EXTENT_MAGIC || h.depth != 0 || n == 0 || n > 4 {
            return Ok(None);
        }
        let last = extent::parse_leaf(root, n - 1);
        // An unwritten last extent, or one not ending where the directory
        // does, is pass 1's business.
        if last.len == 0
            || last.unwritten
            || last.len >= u32::from(INIT_MAX_LEN)
            || last.lblk as usize + last.len as usize != count
        {
            return Ok(None);
        }
        let next = Blk(last.pblk) + u64::from(last.len);
        let room = last.len < u32::from(INIT_MAX_LEN) - 1;
        if room && offset != 0 && next.in_cluster(bits) == offset {
            taken = false;
            (next, MapEdit::Grow)
        } else if room && alloc.take_at(view, next) {
            (next, MapEdit::Grow)
        } else if n < 4 {
            let Some(blk) = alloc.take_lowest(view) else {
                return Ok(None);
            };
            (blk + offset, MapEdit::Add)
        } else {
            return Ok(None);
        }
    } else {
        if count >= 12 || node.block_ptr(count) != 0 {
            return Ok(None);
        }
        let first = alloc.first_data_block();
        let Some(blk) = alloc.take_from(view, first, Blk::PTR32_END) else {
            return Ok(None);
        };
        (blk + offset, MapEdit::Direct)
    };
    let size = narrow::sat32((count + 1) * bs);
    let sectors = if taken { fs.geo.cluster_sectors() } else { 0 };
    vol::edit_inode(fs, overlay, Ino(ino), |m| {
        match edit {
            MapEdit::Grow | MapEdit::Add => {
                let root = m.i_block_mut();
                let mut entries: Vec<_> = (0..usize::from(extent::parse_header(root).entries))
                    .filter_map(|i| extent::raw_entry(root, i))
                    .collect();
                match (edit, entries.last_mut()) {
                    (MapEdit::Grow, Some(e)) => {
                        let mut x = extent::decode_leaf(e);
                        x.len += 1;
                        *e = x.encode();
                    }
                    _ => entries.push(
                        Extent {
                            lblk: lblk.get(),
                            len: 1,
                            pblk: blk.get(),
                            unwritten: false,
                        }
                        .encode(),
                    ),
                }
                extent::put_entries(root, &entries);
            }
            // Taken below Blk::PTR32_END above.
            MapEdit::Direct => m.set_block_ptr(count, narrow::sat32(blk.get())),
        }
        m.set_size_lo(size);
        let blocks = m
            .blocks(false)
            .saturating_add(sectors)
            .min(u64::from(u32::MAX));
        m.set_blocks(blocks, false);
    })?;
    let seed = if fs.metadata_csum() {
        Some(dir_seed(fs, state, overlay, lf.ino)?)
    } else {
        None
    };
    overlay.stage(blk, dir_entry::empty_block(bs, seed))?;
    lf.blocks.push(blk);
    Ok(Some(blk))
}

/// The time stamps written (dtime, a new directory's times).
pub(super) fn now(fs: &Fs) -> u32 {
    fs.clock.now_u32()
}

const EXTENTS_FL: u32 = crate::fs::inode::flags::EXTENTS;

/// Creates /lost+found when the check found none, as e2fsck does: a
/// directory of one block, its inode and block the first free ones pass 1
/// left (marked in use in `State`, so the summary allocates them), named
/// in the root, whose link count grows by its '..'; a root without room
/// for the entry grows by a block first (as `expand` grows lost+found).
/// Only the simple case: the root a plain directory, the inode in a
/// group whose table is initialised. Returns None otherwise. (With quota,
/// the next round's check counts the new directory and the quota files
/// are rewritten then.)
pub(super) fn create(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    links: &mut Links,
) -> super::Result<Option<LostFound>> {
    if !plain_dir(state, Ino::ROOT) {
        return Ok(None);
    }
    let geo = &fs.geo;
    // The first free inode of a group whose inode table is initialised
    // (past the group's itable_unused mark, the summary lowers the mark).
    let ino = (geo.first_ino.max(ROOT_INO + 1)..=geo.inodes_count).find(|&i| {
        if state.inode_used.get(Ino(i)) {
            return false;
        }
        let g = geo.group_of_inode(Ino(i));
        let Some(gd) = fs.gd(Group(g)) else {
            return false;
        };
        !fs.uninit_bg() || !gd.has_flag(crate::fs::group_desc::BG_INODE_UNINIT)
    });
    let Some(ino) = ino
        .filter(|&i| fs.inode_location(Ino(i)).is_some())
        .map(Ino)
    else {
        return Ok(None);
    };
    let mut alloc = Allocator::new(fs, &state.block_used);
    let checkpoint = alloc.checkpoint();
    let Some(blk) = alloc.take_lowest(overlay) else {
        return Ok(None);
    };
    // The entry in the root first: without room there, nothing is made.
    let filetype = fs.sb.has_incompat(incompat::FILETYPE);
    let ft = if filetype { FT_DIR } else { 0 };
    let root_blocks = state.dir_blocks_of(Ino::ROOT);
    let mut named = false;
    for &(_, pblk) in &root_blocks {
        if edit_dir_block(fs, state, overlay, Ino::ROOT, pblk, |b| {
            insert_entry(b, ino, b"lost+found", ft, filetype)
        })? {
            named = true;
            break;
        }
    }
    if !named {
        // A full root grows by a block, as e2fsck expands it before it
        // links the new directory (the directory's block is taken first).
        let mut root = LostFound {
            ino: Ino::ROOT,
            blocks: root_blocks.iter().map(|&(_, b)| b).collect(),
            grown_for: Default::default(),
            may_grow: Default::default(),
        };
        let grown = expand(fs, state, overlay, &mut root, &mut alloc)?;
        let Some(pblk) = grown else {
            alloc.rollback(checkpoint);
            return Ok(None);
        };
        edit_dir_block(fs, state, overlay, Ino::ROOT, pblk, |b| {
            set_inode_at(b, 0, ino);
            put_name(b, 0, b"lost+found", filetype.then_some(ft));
            true
        })?;
    }

    write_dir(fs, overlay, ino, Ino::ROOT, blk, 0o040700)?;

    // The summary allocates what is marked here; the root gains a link
    // from the new '..'.
    state.inode_used.set(ino);
    state.inode_dir.set(ino);
    add(links, Ino::ROOT, 1);
    // Its own count is the one written ('.' and the root's entry) plus
    // the subdirectories reconnected into it: recorded like any change,
    // so the link count fixes in `super::plan` land on the right total.
    add(links, ino, 2);
    Ok(Some(LostFound {
        ino,
        blocks: vec![blk],
        grown_for: Default::default(),
        may_grow: Default::default(),
    }))
}

/// Writes a new directory of one block: inode `ino` (mode `mode`,
/// generation 0, two links) mapping block `blk`, which holds '.' and
/// '..' (naming `parent`) and, with metadata_csum, the checksum tail.
pub(super) fn write_dir(
    fs: &Fs,
    overlay: &mut Overlay,
    ino: Ino,
    parent: Ino,
    blk: Blk,
    mode: u16,
) -> super::Result<()> {
    let bs = fs.block_size();
    let filetype = fs.sb.has_incompat(incompat::FILETYPE);
    let extents = fs.sb.has_incompat(incompat::EXTENTS);
    let isize = fs.geo.inode_len();
    let extra = if isize > 128 {
        let want = match fs.sb.want_extra_isize {
            0 => 32,
            w => w as usize,
        };
        narrow::sat16(want.min(isize - 128))
    } else {
        0
    };
    let one = Extent {
        lblk: 0,
        len: 1,
        pblk: blk.get(),
        unwritten: false,
    };
    let root = crate::volume::extent::build(&[one], bs, 0, None, || None).map(|t| t.root);
    let ptr = match root.filter(|_| extents) {
        Some(_) => 0,
        None => blk
            .ptr32()
            .ok_or_else(|| format!("a block-mapped directory cannot map block {blk}"))?,
    };
    let t = now(fs);
    // The inode: a directory of one block, generation 0.
    let placed = vol::edit_inode(fs, overlay, ino, |m| {
        m.0.fill(0);
        m.set_mode(mode);
        m.set_size(bs as u64);
        m.set_times(t);
        m.set_links(2);
        // One block, charged as its whole cluster (bigalloc).
        m.set_blocks(fs.geo.cluster_sectors(), false);
        match root.filter(|_| extents) {
            Some(root) => {
                m.set_flags(EXTENTS_FL);
                m.i_block_mut().copy_from_slice(&root);
            }
            None => m.set_block_ptr(0, ptr),
        }
        if extra > 0 {
            m.set_extra_isize(extra);
        }
    })?;
    if !placed {
        return Err(format!("inode {ino} lies beyond the addressable range").into());
    }
    // Its block: '.', '..' (the rest of the block), the checksum tail.
    let seed = fs
        .metadata_csum()
        .then(|| inode_csum_seed(fs.csum_seed, ino, 0));
    let b = dir_entry::dots_block(
        bs,
        ino.get(),
        parent.get(),
        filetype.then_some(FT_DIR),
        seed,
    );
    overlay.stage(blk, b)?;
    Ok(())
}

/// Clears an unattached zero-length inode, as e2fsck does (with quota,
/// the next round's check finds the usage it had and the quota files are
/// rewritten then).
fn clear(fs: &Fs, state: &State, overlay: &mut Overlay, ino: Ino) -> super::Result<bool> {
    if ino == Ino::ROOT {
        return Ok(false);
    }
    // e2fsck's clear_inode: no links, a deletion time, no flags.
    let how = super::inode::Release {
        flags: true,
        ..Default::default()
    };
    super::inode::release(fs, state, overlay, ino.get(), how)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::put_le16;
    use crate::fs::bytes::{le16, le32, put_le32};
    use crate::fs::dir_entry::{decode_rec_len, put_rec_len};

    fn block() -> Vec<u8> {
        let mut b = vec![0u8; 1024];
        put_le32(&mut b, 0, 11);
        put_le16(&mut b, 4, 12);
        b[6] = 1;
        b[7] = 2;
        b[8] = b'.';
        put_le32(&mut b, 12, 2);
        put_le16(&mut b, 16, 1012);
        b[18] = 2;
        b[19] = 2;
        b[20..22].copy_from_slice(b"..");
        b
    }

    #[test]
    fn splits_the_slack_of_the_last_entry() {
        let mut b = block();
        assert!(insert_entry(&mut b, Ino(99), b"#99", 1, true));
        assert_eq!(le16(&b, 16), 12);
        assert_eq!(le32(&b, 24), 99);
        assert_eq!(le16(&b, 28), 1000);
        assert_eq!((b[30], b[31]), (3, 1));
        assert_eq!(&b[32..35], b"#99");
    }

    #[test]
    fn rec_len_round_trips_for_64k_blocks() {
        let mut b = vec![0u8; 65536];
        for len in [12, 65524, 65536] {
            put_rec_len(&mut b, 0, len);
            assert_eq!(decode_rec_len(le16(&b, 4), b.len()), len);
        }
    }

    #[test]
    fn full_block_takes_nothing() {
        let mut b = block();
        b.truncate(24);
        put_le16(&mut b, 16, 12);
        assert!(!insert_entry(&mut b, Ino(99), b"#99", 1, true));
    }
}
