//! Quota: superblock quota inode numbers that name no possible inode are
//! cleared, as e2fsck does; the quota type then has no file (e2fsck does
//! not create one in that run either). A quota file whose usage differs
//! from what pass 1 counted, that lacks an id pass 1 charged, or that
//! cannot be read is rewritten whole, as e2fsck's "Update quota info for
//! quota type N" does:
//!
//! - its entries: every id pass 1 charged or the old file lists, with the
//!   usage pass 1 counted and the limits the old file gives (none when it
//!   cannot be read); `fs/quota.rs` serialises them as e2fsprogs' quota
//!   library writes a new file (default grace times, its tree layout);
//! - its inode: a new one in the same place, as the library makes it
//!   (regular file, mode 0600, immutable, extents when the feature is on,
//!   one link, times set to now, nothing else);
//! - its blocks: the old ones are freed first, then each file system block
//!   of the new file is allocated in the order the library first writes it,
//!   the way libext2fs allocates: the lowest free block from the block
//!   before it in the file (from the start of the file system for the
//!   first), with bigalloc a whole cluster (or the cluster the file's other
//!   blocks of that logical cluster use); extents are added as libext2fs
//!   maps a hole (joining the extent before or after when they continue
//!   each other); up to four stay in the inode, more go to one leaf block;
//!   a block map holds the direct blocks and one indirect block;
//! - i_size is the file's length, i_blocks its blocks (clusters), and the
//!   block maps in `State` follow, so the summary rewrite that runs with it
//!   writes the bitmaps and counts.
//!
//! The rewrite waits for a round in which no other fix is staged: the
//! usage it writes must be the usage of the file system as it is left.

use crate::check::blockmap::{MapVisitor, Scratch};
use crate::check::pass1;
use crate::check::problem::{Code, Problem};
use crate::check::state::State;
use crate::check::superblock::FIELD_NAMES;
use crate::fs::bytes::put_le32;
use crate::fs::extent::{Extent, INIT_MAX_LEN};
use crate::fs::inode::{GOOD_OLD_INODE_SIZE, Inode, InodeMut, flags, inode_csum_seed};
use crate::fs::num::{Blk, Ino};
use crate::fs::quota::{self, Dquot, Limits, QUOTA_BLOCK};
use crate::fs::superblock::incompat;
use crate::narrow;
use crate::store::overlay::Overlay;
use crate::volume::{Allocator, Fs, edit as vol, extent};
use std::collections::{BTreeMap, BTreeSet};

const TYPE_NAMES: [&str; 3] = ["user", "group", "project"];

/// Clears the field `p` (an `SbQuotaInode`, or an
/// `SbInodeFieldNoFeature`) names. Returns whether it did.
pub(super) fn clear_inum(fs: &Fs, overlay: &mut Overlay, p: &Problem) -> super::Result<bool> {
    let detail = p.args().detail;
    match p.code {
        Code::SbQuotaInode => {
            let Some(qtype) = TYPE_NAMES.iter().position(|&n| n == detail) else {
                return Ok(false);
            };
            vol::edit_superblock(fs, overlay, |sb| sb.set_quota_inum(qtype, 0))?;
        }
        Code::SbInodeFieldNoFeature => {
            let Some(field) = FIELD_NAMES.iter().position(|&n| n == detail) else {
                return Ok(false);
            };
            vol::edit_superblock(fs, overlay, |sb| match field {
                0..=2 => sb.set_quota_inum(field, 0),
                _ => sb.set_orphan_file_inum(0),
            })?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Moves the quota files the superblock names at ordinary inodes
/// (`check::quota::visible`, the problems `ps`) into their types'
/// reserved inodes, as e2fsck does before pass 1: each reserved inode is
/// written new from its file's first 128 bytes (one link, a regular file
/// of mode 0600, immutable, with the extents flag when the feature is on,
/// its extra fields new), the file's entry in the root removed (the check
/// reports only a file the root names so), the file's inode released (free in its group's bitmap and
/// counts, its first 128 bytes zeroed) and the superblock pointed at the
/// reserved inode. The blocks stay where they are; the backups are left
/// as e2fsck leaves them. Whether each was moved.
pub(super) fn move_to_hidden(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    ps: &[Problem],
) -> super::Result<Vec<bool>> {
    // One account of the freed inodes: the descriptors and the
    // superblock's count are written once, for every file moved.
    let mut stats = crate::volume::stats::AllocStats::new(fs);
    let mut moved = Vec::new();
    let mut fields = Vec::new();
    for p in ps {
        let done = match move_one(fs, state, overlay, &mut stats, p)? {
            Some(qtype) => {
                fields.push(qtype);
                true
            }
            None => false,
        };
        moved.push(done);
    }
    stats.flush(overlay);
    vol::edit_superblock(fs, overlay, |sb| {
        for &qtype in &fields {
            sb.set_quota_inum(qtype, [Ino::USR_QUOTA, Ino::GRP_QUOTA][qtype].get());
        }
        stats.count_in(sb);
    })?;
    Ok(moved)
}

/// One file of [`move_to_hidden`]; its quota type when moved.
fn move_one(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    stats: &mut crate::volume::stats::AllocStats,
    p: &Problem,
) -> super::Result<Option<usize>> {
    let Some(qtype) = TYPE_NAMES[..2].iter().position(|&n| n == p.args().detail) else {
        return Ok(None);
    };
    let Some(old) = p.args().ino else {
        return Ok(None);
    };
    let Some(raw) = vol::read_inode(fs, overlay, old)? else {
        return Ok(None);
    };
    let to = [Ino::USR_QUOTA, Ino::GRP_QUOTA][qtype];
    let now = super::lostfound::now(fs);
    let mut new = vec![0u8; fs.geo.inode_len()];
    let small = GOOD_OLD_INODE_SIZE.min(raw.len()).min(new.len());
    new[..small].copy_from_slice(&raw[..small]);
    let mut m = InodeMut(&mut new);
    m.set_links(1);
    m.set_mode(QUOTA_MODE);
    let extents = if fs.sb.has_incompat(incompat::EXTENTS) {
        flags::EXTENTS
    } else {
        0
    };
    m.set_flags(flags::IMMUTABLE | extents);
    if m.0.len() >= crate::fs::inode::field::I_CRTIME + 4 {
        m.set_extra_isize(crate::fs::inode::NEW_EXTRA_ISIZE);
        m.set_crtime(now);
    }
    if !vol::write_inode(fs, overlay, to, &new)? {
        return Err("the reserved quota inode has no valid location".into());
    }
    let mut links = super::lostfound::Links::new();
    super::dir::unlink(
        fs,
        state,
        overlay,
        Ino::ROOT,
        old,
        crate::check::quota::FILE_NAMES[qtype],
        &mut links,
    )?;
    stats.free_inode(overlay, old, false);
    vol::edit_inode(fs, overlay, old, |m| m.0[..small].fill(0))?;
    Ok(Some(qtype))
}

fn inums(fs: &Fs) -> [u32; 3] {
    [
        fs.sb.usr_quota_inum,
        fs.sb.grp_quota_inum,
        fs.sb.prj_quota_inum,
    ]
}

/// The quota type a problem fixed by the rewrite (`Fixer::QuotaFile`) is about.
pub(super) fn problem_type(fs: &Fs, p: &Problem) -> Option<usize> {
    match p.code {
        Code::QuotaUsage | Code::QuotaEntryMissing => TYPE_NAMES
            .iter()
            .position(|n| p.args().detail == *n || p.args().detail.starts_with(&format!("{n} "))),
        Code::QuotaFileBad => {
            let ino = p.args().ino?.get();
            inums(fs).iter().position(|&i| i == ino)
        }
        _ => None,
    }
}

/// Regular file, mode 0600.
const QUOTA_MODE: u16 = 0x8180;
/// Direct block pointers of a block map.
const NDIR: u64 = 12;

/// Rewrites the quota file of type `qtype` from the usage pass 1 counted.
/// Returns whether it staged it (false: no such file, or a file the
/// layout here cannot hold).
pub(super) fn rewrite(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    qtype: usize,
) -> super::Result<bool> {
    let Some(&field) = inums(fs).get(qtype) else {
        return Ok(false);
    };
    let Some(usage) = &state.quota else {
        return Ok(false);
    };
    if field == 0 || field > fs.geo.inodes_count {
        return Ok(false);
    }
    // e2fsck's quota library writes the user and group files to their
    // reserved inodes whatever the field names, then points the field
    // there: an inode of the tree the field named is left alone, data and
    // all. The project file goes where the field says.
    let ino = match qtype {
        0 => Ino::USR_QUOTA.get(),
        1 => Ino::GRP_QUOTA.get(),
        _ => field,
    };
    if ino == field && !state.inode_used.get(Ino(ino)) {
        return Ok(false);
    }
    if ino != field {
        // Pass 1 did not claim the blocks of a reserved inode no field
        // names: it is cleared first (its own fix, an earlier round).
        let raw = fs
            .read_inode_raw(Ino(ino))
            .map_err(|e| format!("cannot read quota inode {ino}: {e}"))?;
        let old = Inode::parse(&raw);
        if old.links_count != 0 || old.blocks_raw != 0 || old.block_ptrs()[0] != 0 {
            return Ok(false);
        }
    }
    let Some(counted) = usage.by_type.get(qtype) else {
        return Ok(false);
    };
    // Limits survive from the old file when it can be read.
    let old = crate::check::quota::read_file(fs, field, qtype).unwrap_or_default();
    let mut entries: BTreeMap<u32, Dquot> = BTreeMap::new();
    for d in &old {
        entries.entry(d.id).or_insert(Dquot {
            id: d.id,
            space: 0,
            inodes: 0,
            limits: d.limits,
        });
    }
    for (&id, u) in counted {
        let e = entries.entry(id).or_insert(Dquot {
            id,
            space: 0,
            inodes: 0,
            limits: Limits::default(),
        });
        e.space = u.space;
        e.inodes = u.inodes;
    }
    let entries: Vec<Dquot> = entries.into_values().collect();
    let now = fs.clock.now();
    let Some(file) = quota::write_file(qtype, &entries, now) else {
        return Ok(false);
    };
    let mut alloc = Allocator::new(fs, &state.block_used);
    let checkpoint = alloc.checkpoint();
    let Some(plan) = Layout::plan(fs, state, overlay, &mut alloc, ino, &file)? else {
        alloc.rollback(checkpoint);
        return Ok(false);
    };
    // Stage the data, then the map blocks, then the inode.
    let bs = fs.block_size();
    let bytes: Vec<u8> = file.blocks.concat();
    for (&lblk, &pblk) in &plan.map {
        let mut b = vec![0u8; bs];
        let from = narrow::to_usize(lblk).saturating_mul(bs);
        if let Some(src) = bytes.get(from..(from + bs).min(bytes.len())) {
            b[..src.len()].copy_from_slice(src);
        }
        overlay.stage(Blk(pblk), b)?;
    }
    for (b, data) in &plan.map_blocks {
        overlay.stage(Blk(*b), data.clone())?;
    }
    let raw = new_inode(fs, &plan, bytes.len() as u64, now);
    if !vol::write_inode(fs, overlay, Ino(ino), &raw)? {
        return Err(format!("quota inode {ino} has no place in the inode tables").into());
    }
    if ino != field {
        vol::edit_superblock(fs, overlay, |sb| sb.set_quota_inum(qtype, ino))?;
    }
    Ok(true)
}

/// The inode libext2fs writes for a new quota file, with the map and sizes
/// of `plan`.
/// (The checksum is the write's.)
fn new_inode(fs: &Fs, plan: &Layout, size: u64, now: u64) -> Vec<u8> {
    let isz = fs.geo.inode_len();
    let mut b = vec![0u8; isz];
    // New inodes carry 32-bit times, as the quota writer's do.
    let t = narrow::lo32(now);
    let mut m = InodeMut(&mut b);
    m.set_mode(QUOTA_MODE);
    m.set_size(size);
    m.set_times(t);
    m.set_links(1);
    let units = fs.geo.cluster_sectors();
    m.set_blocks(plan.allocated * units, false);
    let extents = if plan.extents { flags::EXTENTS } else { 0 };
    m.set_flags(flags::IMMUTABLE | extents);
    m.i_block_mut().copy_from_slice(&plan.i_block);
    // Room for the creation time: the large inode libext2fs writes.
    if isz >= crate::fs::inode::field::I_CRTIME + 4 {
        m.set_extra_isize(crate::fs::inode::NEW_EXTRA_ISIZE);
        m.set_crtime(t);
    }
    b
}

/// Where a new quota file goes.
struct Layout {
    /// File system block of each logical block of the file.
    map: BTreeMap<u64, u64>,
    /// i_block: an extent root or block pointers.
    i_block: [u8; 60],
    extents: bool,
    /// Extent leaf or indirect block, with its contents.
    map_blocks: Vec<(u64, Vec<u8>)>,
    /// Blocks (clusters) allocated, data and map blocks: i_blocks.
    allocated: u64,
}

/// Every block an inode's map holds, data and mapping blocks.
struct AllBlocks {
    blocks: Vec<u64>,
    budget: u64,
}

impl MapVisitor for AllBlocks {
    fn data(&mut self, _lblk: u64, pblk: u64, len: u64, _unwritten: bool) {
        let len = len.min(self.budget);
        self.budget -= len;
        self.blocks.extend(pblk..pblk + len);
    }
    fn node(&mut self, pblk: u64) {
        if self.budget > 0 {
            self.budget -= 1;
            self.blocks.push(pblk);
        }
    }
    fn problem(&mut self, _p: Problem) {}
    fn done(&self) -> bool {
        self.budget == 0
    }
}

impl Layout {
    /// The new file's blocks, taken from `alloc` (which the caller rolls
    /// back when there is no layout).
    fn plan(
        fs: &Fs,
        state: &State,
        overlay: &Overlay,
        alloc: &mut Allocator,
        ino: u32,
        file: &quota::Written,
    ) -> super::Result<Option<Layout>> {
        let geo = &fs.geo;
        let bs = u64::from(geo.block_size);
        let bits = geo.cluster_bits;
        let mask = (1u64 << bits) - 1;
        let extents = fs.sb.has_incompat(incompat::EXTENTS);
        if bits > 0 && !extents {
            return Ok(None);
        }
        // The old file's blocks are freed first (the library truncates it).
        let raw = fs
            .read_inode_raw(Ino(ino))
            .map_err(|e| format!("cannot read quota inode {ino}: {e}"))?;
        let inode = Inode::parse(&raw);
        let mut old = AllBlocks {
            blocks: Vec::new(),
            budget: geo.blocks_count,
        };
        let ctx = pass1::Ctx::new(fs, state);
        let mut scratch = Scratch::new();
        pass1::walk_map(&ctx, ino, &inode, false, &mut scratch, &mut old);
        for &b in &old.blocks {
            let c = state.cluster(b);
            if !state.block_meta.get(c) && !state.block_dup.get(c) {
                alloc.free(Blk(b));
            }
        }
        // File system blocks in the order the quota writer first writes
        // them.
        let per = bs / QUOTA_BLOCK as u64;
        let mut order: Vec<u64> = Vec::new();
        let mut seen = BTreeSet::new();
        for &q in &file.first_written {
            let l = u64::from(q) / per;
            if seen.insert(l) {
                order.push(l);
            }
        }
        let nblocks = (file.blocks.len() as u64 * QUOTA_BLOCK as u64).div_ceil(bs);
        order.extend((0..nblocks).filter(|l| !seen.contains(l)));
        let mut map: BTreeMap<u64, u64> = BTreeMap::new();
        let mut allocated = 0u64;
        let mut ext = Extents::default();
        let mut ind: Option<(u64, Vec<u8>)> = None;
        let apb = bs / 4;
        for l in order {
            if !extents && l >= NDIR + apb {
                return Ok(None);
            }
            // Bigalloc: a logical cluster already mapped implies the
            // physical cluster of its other blocks.
            let base_l = l & !mask;
            let implied = map
                .range(base_l..=base_l + mask)
                .next()
                .and_then(|(&x, &p)| p.checked_sub(x - base_l)?.checked_add(l - base_l));
            let p = match implied {
                Some(p) if bits > 0 => p,
                _ => {
                    let goal = if extents {
                        l.checked_sub(1)
                            .and_then(|x| map.get(&x).copied())
                            .unwrap_or(0)
                    } else if l >= NDIR {
                        if ind.is_none() {
                            let g = map.get(&(NDIR - 1)).copied().unwrap_or(0);
                            let Some(b) = alloc.take(overlay, Blk(g)).map(Blk::get) else {
                                return Ok(None);
                            };
                            allocated += 1;
                            ind = Some((b, vec![0u8; narrow::to_usize(bs)]));
                        }
                        let ib = ind.as_ref().map_or(0, |i| i.0);
                        if l == NDIR {
                            ib
                        } else {
                            map.get(&(l - 1)).copied().unwrap_or(0)
                        }
                    } else if l == 0 {
                        group_goal(fs, ino)
                    } else {
                        map.get(&(l - 1)).copied().unwrap_or(0)
                    };
                    let Some(b) = alloc.take(overlay, Blk(goal)).map(Blk::get) else {
                        return Ok(None);
                    };
                    allocated += 1;
                    b + (l & mask)
                }
            };
            map.insert(l, p);
            if extents {
                let Ok(l) = u32::try_from(l) else {
                    return Ok(None);
                };
                ext.map_hole(l, p);
            } else if u32::try_from(p).is_err() {
                // A block map holds 32-bit pointers only.
                return Ok(None);
            } else if l < NDIR {
                // Placed in i_block below.
            } else if let Some((_, buf)) = ind.as_mut() {
                put_le32(buf, narrow::to_usize((l - NDIR) * 4), narrow::sat32(p));
            }
        }
        let mut i_block = [0u8; 60];
        let mut map_blocks = Vec::new();
        if extents {
            let seed = fs
                .metadata_csum()
                .then(|| inode_csum_seed(fs.csum_seed, Ino(ino), 0));
            // One leaf at most (the new inode's generation is 0).
            let tree = extent::build(&ext.extents(), narrow::to_usize(bs), 1, seed, || {
                alloc.take(overlay, Blk(0)).map(Blk::get)
            });
            let Some(tree) = tree else {
                return Ok(None);
            };
            allocated += tree.leaves.len() as u64;
            i_block = tree.root;
            map_blocks = tree.leaves;
        } else {
            for (&l, &p) in map.range(..NDIR) {
                put_le32(&mut i_block, narrow::to_usize(l * 4), narrow::sat32(p));
            }
            if let Some((b, buf)) = ind {
                put_le32(&mut i_block, narrow::to_usize(NDIR * 4), narrow::sat32(b));
                map_blocks.push((b, buf));
            }
        }
        Ok(Some(Layout {
            map,
            i_block,
            extents,
            map_blocks,
            allocated,
        }))
    }
}

/// The first block of the (flex) group of inode `ino`: where libext2fs
/// starts looking for the first block of a block-mapped file.
fn group_goal(fs: &Fs, ino: u32) -> u64 {
    let geo = &fs.geo;
    let mut g = geo.group_of_inode(Ino(ino));
    let log_flex = fs.sb.log_groups_per_flex;
    if fs.sb.has_incompat(incompat::FLEX_BG) && log_flex < 32 {
        g &= !((1u32 << log_flex) - 1);
    }
    geo.group_first_block(g)
}

/// Extents built by mapping holes one block at a time, as libext2fs does:
/// a block joins the extent ending right before it, or the one starting
/// right after it, when both lie contiguously and the extent has room.
#[derive(Default)]
struct Extents {
    /// (logical, physical, length), sorted.
    list: Vec<(u32, u64, u32)>,
}

impl Extents {
    fn map_hole(&mut self, l: u32, p: u64) {
        // libext2fs keeps a joined extent one block short of the longest.
        let room = |n: u32| n + 1 < u32::from(INIT_MAX_LEN);
        let k = self.list.partition_point(|e| e.0 < l);
        if let Some(prev) = k.checked_sub(1).and_then(|i| self.list.get_mut(i))
            && prev.0 + prev.2 == l
            && prev.1 + u64::from(prev.2) == p
            && room(prev.2)
        {
            prev.2 += 1;
            return;
        }
        if let Some(next) = self.list.get_mut(k)
            && next.0 == l + 1
            && next.1 == p + 1
            && room(next.2)
        {
            next.0 -= 1;
            next.1 -= 1;
            next.2 += 1;
            return;
        }
        self.list.insert(k, (l, p, 1));
    }

    fn extents(&self) -> Vec<Extent> {
        self.list
            .iter()
            .map(|&(l, p, n)| Extent {
                lblk: l,
                len: n,
                pblk: p,
                unwritten: false,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holes_join_as_libext2fs_maps_them() {
        // Blocks first written in the order 0, 2, 3, 4, 5, 1 (a quota file
        // with one id), allocated lowest first: 1172, 1173.., then 1177.
        let mut e = Extents::default();
        for (l, p) in [
            (0, 1172),
            (2, 1173),
            (3, 1174),
            (4, 1175),
            (5, 1176),
            (1, 1177),
        ] {
            e.map_hole(l, p);
        }
        assert_eq!(e.list, vec![(0, 1172, 1), (1, 1177, 1), (2, 1173, 4)]);
        // Contiguous in both: one extent, whatever the order.
        let mut e = Extents::default();
        for (l, p) in [(0, 10), (2, 12), (1, 11)] {
            e.map_hole(l, p);
        }
        assert_eq!(e.list, vec![(0, 10, 2), (2, 12, 1)]);
    }
}
