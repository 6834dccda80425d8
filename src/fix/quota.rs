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

use super::{edit_bytes, edit_superblock};
use crate::check::blockmap::{MapVisitor, Scratch};
use crate::check::pass1;
use crate::check::problem::{Code, Problem};
use crate::check::state::State;
use crate::fs::bytes::{put_le16, put_le32};
use crate::fs::extent::{self, EXTENT_MAGIC, INIT_MAX_LEN};
use crate::fs::inode::field::*;
use crate::fs::inode::{Inode, inode_csum_seed};
use crate::fs::quota::{self, Dquot, Limits, QUOTA_BLOCK};
use crate::fs::superblock::incompat;
use crate::repair::overlay::Overlay;
use crate::volume::Fs;
use std::collections::{BTreeMap, BTreeSet};

// Superblock fields holding the quota inode numbers.
const S_USR_QUOTA_INUM: usize = 0x240;
const S_GRP_QUOTA_INUM: usize = 0x244;
const S_PRJ_QUOTA_INUM: usize = 0x26C;

/// Problems the rewrite of their quota type's file fixes.
pub(super) const REWRITE: &[Code] = &[
    Code::QuotaUsage,
    Code::QuotaEntryMissing,
    Code::QuotaFileBad,
];

const TYPE_NAMES: [&str; 3] = ["user", "group", "project"];

/// Clears the field `p` (an `SbQuotaInode`) names. Returns whether it did.
pub(super) fn clear_inum(fs: &Fs, overlay: &mut Overlay, p: &Problem) -> Result<bool, String> {
    if p.code != Code::SbQuotaInode {
        return Ok(false);
    }
    let off = match p.args().detail {
        "user" => S_USR_QUOTA_INUM,
        "group" => S_GRP_QUOTA_INUM,
        "project" => S_PRJ_QUOTA_INUM,
        _ => return Ok(false),
    };
    edit_superblock(fs, overlay, |sb| put_le32(sb, off, 0))?;
    Ok(true)
}

fn inums(fs: &Fs) -> [u32; 3] {
    [
        fs.sb.usr_quota_inum,
        fs.sb.grp_quota_inum,
        fs.sb.prj_quota_inum,
    ]
}

/// The quota type a problem of `REWRITE` is about.
pub(super) fn problem_type(fs: &Fs, p: &Problem) -> Option<usize> {
    match p.code {
        Code::QuotaUsage | Code::QuotaEntryMissing => TYPE_NAMES
            .iter()
            .position(|n| p.args().detail == *n || p.args().detail.starts_with(&format!("{n} "))),
        Code::QuotaFileBad => {
            let ino = p.args().ino?;
            inums(fs).iter().position(|&i| i == ino)
        }
        _ => None,
    }
}

/// i_extra_isize of a new inode (libext2fs: its large inode structure).
const NEW_EXTRA_ISIZE: u16 = 32;
/// Regular file, mode 0600.
const QUOTA_MODE: u16 = 0x8180;
const IMMUTABLE_FL: u32 = 0x10;
const EXTENTS_FL: u32 = 0x8_0000;
/// Entries an extent root in i_block holds.
const ROOT_MAX: usize = 4;
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
) -> Result<bool, String> {
    let Some(&ino) = inums(fs).get(qtype) else {
        return Ok(false);
    };
    let Some(usage) = &state.quota else {
        return Ok(false);
    };
    if ino == 0 || ino > fs.geo.inodes_count || !state.inode_used.get(u64::from(ino)) {
        return Ok(false);
    }
    let Some(counted) = usage.by_type.get(qtype) else {
        return Ok(false);
    };
    // Limits survive from the old file when it can be read.
    let old = crate::check::quota::read_file(fs, ino, qtype).unwrap_or_default();
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
    let now = crate::check::now();
    let Some(file) = quota::write_file(qtype, &entries, now) else {
        return Ok(false);
    };
    let Some(plan) = Layout::plan(fs, state, overlay, ino, &file)? else {
        return Ok(false);
    };
    // Stage the data, then the map blocks, then the inode.
    let bs = fs.block_size();
    let bytes: Vec<u8> = file.blocks.concat();
    for (&lblk, &pblk) in &plan.map {
        let mut b = vec![0u8; bs];
        let from = (lblk as usize).saturating_mul(bs);
        if let Some(src) = bytes.get(from..(from + bs).min(bytes.len())) {
            b[..src.len()].copy_from_slice(src);
        }
        overlay.stage(pblk, b).map_err(|e| e.to_string())?;
    }
    for (b, data) in &plan.map_blocks {
        overlay.stage(*b, data.clone()).map_err(|e| e.to_string())?;
    }
    let raw = new_inode(fs, ino, &plan, bytes.len() as u64, now);
    let pos = fs
        .inode_location(ino)
        .and_then(|(blk, off)| blk.checked_mul(bs as u64)?.checked_add(off as u64))
        .ok_or_else(|| format!("quota inode {ino} has no place in the inode tables"))?;
    edit_bytes(fs, overlay, pos, raw.len(), |b| b.copy_from_slice(&raw))?;
    for &c in &plan.freed {
        state.block_used.clear(c);
    }
    for &c in &plan.taken {
        state.block_used.set(c);
    }
    Ok(true)
}

/// The inode libext2fs writes for a new quota file, with the map and sizes
/// of `plan`.
fn new_inode(fs: &Fs, ino: u32, plan: &Layout, size: u64, now: u64) -> Vec<u8> {
    let isz = fs.geo.inode_size as usize;
    let mut b = vec![0u8; isz];
    let t = now as u32;
    put_le16(&mut b, I_MODE, QUOTA_MODE);
    put_le32(&mut b, I_SIZE_LO, size as u32);
    put_le32(&mut b, I_ATIME, t);
    put_le32(&mut b, I_CTIME, t);
    put_le32(&mut b, I_MTIME, t);
    put_le16(&mut b, I_LINKS_COUNT, 1);
    let units = u64::from(fs.geo.block_size / 512) << fs.geo.cluster_bits;
    put_le32(&mut b, I_BLOCKS_LO, (plan.allocated * units) as u32);
    let flags = IMMUTABLE_FL | if plan.extents { EXTENTS_FL } else { 0 };
    put_le32(&mut b, I_FLAGS, flags);
    b[I_BLOCK..I_BLOCK + 60].copy_from_slice(&plan.i_block);
    if isz >= I_CRTIME + 4 {
        put_le16(&mut b, I_EXTRA_ISIZE, NEW_EXTRA_ISIZE);
        put_le32(&mut b, I_CRTIME, t);
    }
    if fs.metadata_csum() {
        super::inode::set_checksum(fs.csum_seed, ino, &mut b);
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
    /// Clusters freed (the old file) and taken (the new one) in the block
    /// maps of `State`.
    freed: BTreeSet<u64>,
    taken: BTreeSet<u64>,
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

/// libext2fs' block allocation over the block maps of `State`, with the
/// old file's clusters free and the new file's taken.
struct Allocator<'a> {
    fs: &'a Fs,
    state: &'a State,
    overlay: &'a Overlay,
    freed: BTreeSet<u64>,
    taken: BTreeSet<u64>,
}

impl Allocator<'_> {
    fn free(&self, c: u64) -> bool {
        let bits = self.fs.geo.cluster_bits;
        (!self.state.block_used.get(c) || self.freed.contains(&c))
            && !self.taken.contains(&c)
            && !self.overlay.any_in(c << bits..(c + 1) << bits)
            && (c + 1) << bits <= self.fs.geo.blocks_count
    }

    /// The first block of the lowest free cluster from `goal` on, then
    /// from the start (ext2fs_new_block2), taken.
    fn take(&mut self, goal: u64) -> Option<u64> {
        let geo = &self.fs.geo;
        let bits = geo.cluster_bits;
        let first = geo.first_data_block >> bits;
        let goal = if goal == 0 || goal >= geo.blocks_count {
            geo.first_data_block
        } else {
            goal
        };
        let start = goal >> bits;
        let end = geo.clusters_count();
        let c = (start..end).chain(first..start).find(|&c| self.free(c))?;
        self.taken.insert(c);
        Some(c << bits)
    }
}

impl Layout {
    fn plan(
        fs: &Fs,
        state: &State,
        overlay: &Overlay,
        ino: u32,
        file: &quota::Written,
    ) -> Result<Option<Layout>, String> {
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
            .read_inode_raw(ino)
            .map_err(|e| format!("cannot read quota inode {ino}: {e}"))?;
        let inode = Inode::parse(&raw);
        let mut old = AllBlocks {
            blocks: Vec::new(),
            budget: geo.blocks_count,
        };
        let ctx = pass1::Ctx::new(fs, state);
        let mut scratch = Scratch::new();
        pass1::walk_map(&ctx, ino, &inode, false, &mut scratch, &mut old);
        let freed: BTreeSet<u64> = old
            .blocks
            .iter()
            .map(|&b| state.cluster(b))
            .filter(|&c| !state.block_meta.get(c) && !state.block_dup.get(c))
            .collect();
        let mut alloc = Allocator {
            fs,
            state,
            overlay,
            freed,
            taken: BTreeSet::new(),
        };
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
                            let Some(b) = alloc.take(g) else {
                                return Ok(None);
                            };
                            allocated += 1;
                            ind = Some((b, vec![0u8; bs as usize]));
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
                    let Some(b) = alloc.take(goal) else {
                        return Ok(None);
                    };
                    allocated += 1;
                    b + (l & mask)
                }
            };
            map.insert(l, p);
            if extents {
                ext.map_hole(l, p);
            } else if l < NDIR {
                // Placed in i_block below.
            } else if let Some((_, buf)) = ind.as_mut() {
                put_le32(buf, ((l - NDIR) * 4) as usize, p as u32);
            }
        }
        let mut i_block = [0u8; 60];
        let mut map_blocks = Vec::new();
        if extents {
            put_le16(&mut i_block, 0, EXTENT_MAGIC);
            put_le16(&mut i_block, 4, ROOT_MAX as u16);
            let entries = ext.entries();
            if entries.len() <= ROOT_MAX {
                put_entries(&mut i_block, &entries);
            } else {
                let per_leaf = extent::max_entries(bs as usize);
                if entries.len() > per_leaf as usize {
                    return Ok(None);
                }
                let Some(leaf) = alloc.take(0) else {
                    return Ok(None);
                };
                allocated += 1;
                let mut node = vec![0u8; bs as usize];
                put_le16(&mut node, 0, EXTENT_MAGIC);
                put_le16(&mut node, 4, per_leaf);
                put_entries(&mut node, &entries);
                if fs.metadata_csum() {
                    // The new inode's generation is 0.
                    let seed = inode_csum_seed(fs.csum_seed, ino, 0);
                    if let Some(c) = extent::compute_block_checksum(seed, &node) {
                        put_le32(&mut node, extent::tail_offset(per_leaf), c);
                    }
                }
                put_le16(&mut i_block, 6, 1);
                let mut ix = [0u8; 12];
                put_le32(&mut ix, 4, leaf as u32);
                put_le16(&mut ix, 8, (leaf >> 32) as u16);
                put_entries(&mut i_block, &[ix]);
                map_blocks.push((leaf, node));
            }
        } else {
            for (&l, &p) in map.range(..NDIR) {
                put_le32(&mut i_block, (l * 4) as usize, p as u32);
            }
            if let Some((b, buf)) = ind {
                put_le32(&mut i_block, (NDIR * 4) as usize, b as u32);
                map_blocks.push((b, buf));
            }
        }
        Ok(Some(Layout {
            map,
            i_block,
            extents,
            map_blocks,
            allocated,
            freed: alloc.freed,
            taken: alloc.taken,
        }))
    }
}

/// The first block of the (flex) group of inode `ino`: where libext2fs
/// starts looking for the first block of a block-mapped file.
fn group_goal(fs: &Fs, ino: u32) -> u64 {
    let geo = &fs.geo;
    let mut g = geo.group_of_inode(ino);
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
    list: Vec<(u64, u64, u64)>,
}

impl Extents {
    fn map_hole(&mut self, l: u64, p: u64) {
        // libext2fs keeps a joined extent one block short of the longest.
        let room = |n: u64| n + 1 < u64::from(INIT_MAX_LEN);
        let k = self.list.partition_point(|e| e.0 < l);
        if let Some(prev) = k.checked_sub(1).and_then(|i| self.list.get_mut(i))
            && prev.0 + prev.2 == l
            && prev.1 + prev.2 == p
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

    fn entries(&self) -> Vec<[u8; 12]> {
        self.list
            .iter()
            .map(|&(l, p, n)| {
                let mut e = [0u8; 12];
                put_le32(&mut e, 0, l as u32);
                put_le16(&mut e, 4, n as u16);
                put_le16(&mut e, 6, (p >> 32) as u16);
                put_le32(&mut e, 8, p as u32);
                e
            })
            .collect()
    }
}

/// Writes `entries` after a node header and sets its entry count.
fn put_entries(node: &mut [u8], entries: &[[u8; 12]]) {
    put_le16(node, 2, entries.len() as u16);
    for (i, e) in entries.iter().enumerate() {
        let off = 12 + 12 * i;
        node[off..off + 12].copy_from_slice(e);
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
