//! Pass 1B: multiply-claimed blocks (e2fsck's passes 1B to 1D, read-only).
//!
//! Checks nothing new: for every block pass 1 found claimed twice, it finds
//! all the owners, and reports once per inode how many of its blocks are
//! shared and with whom ("file system metadata" counts as an owner).
//!
//! Keeps the owners in `State::dup_owners` for the repair. Relies on pass 1: `block_dup` (the blocks), the
//! metadata map, `map_walked` (which inodes' maps pass 1 walked, so the
//! same ones are walked here with the same walker) and the xattr blocks
//! pass 1 accepted.
//!
//! Cost: nothing when there are no duplicates. Otherwise the inode tables
//! are read again but only block maps are walked (no checks), each mapped
//! run looked up in the sorted list of duplicate blocks; parallel over the
//! same units as pass 1, merged in inode order.

use super::blockmap::{self, MapVisitor, Scratch};
use super::pass1::{self, Ctx};
use super::problem::{Code, Problem};
use super::state::State;
use crate::engine::{Control, Threads, par_map};
use crate::error::Result;
use crate::fs::inode::{self, Inode};
use crate::fs::num::{Blk, Cluster, Ino, LBlk};
use crate::narrow;
use crate::volume::Fs;

/// Longest list of owners kept in a problem's detail.
const DETAIL_CAP: usize = 2000;

/// Collects the duplicate blocks an inode maps, as e2fsck's pass 1B
/// submits them: without bigalloc every mapping of a duplicate block (a
/// block an inode maps twice counts twice). With bigalloc one per cluster
/// run: a data block of a duplicate cluster counts when it starts another
/// logical cluster or another physical cluster than the block before it
/// (so a logical cluster spread over two physical clusters counts twice),
/// a mapping block always. Each hit is the first block of its run.
struct Finder<'a> {
    dups: &'a [u64],
    hits: Vec<u64>,
    /// Every mapped block of a duplicate cluster, in map order, as runs of
    /// consecutive blocks (e2fsck's pass 1B list).
    runs: Vec<(Blk, Blk)>,
    /// Skip blocks that are metadata (the bad blocks inode, whose blocks
    /// inside metadata pass 1 did not claim).
    skip_meta: Option<&'a State>,
    /// Claim nothing but the double indirect block (the resize inode).
    only: Option<u64>,
    budget: u64,
    /// log2 of blocks per cluster; with bigalloc `dups` lists clusters.
    bits: u32,
    /// (logical cluster, physical cluster) of the block seen last; a
    /// mapping block's logical cluster is `NODE`.
    last: Option<(u64, u64)>,
    /// Walk as e2fsck -n's rescan does: it ends in error (`failed`) at an
    /// extent node failing its checksum or with a bad header, or at an
    /// illegal indirect pointer
    /// that pass 1 forgot in core only (one inside an indirect block on
    /// metadata), which stops the blocks holding it as any illegal one.
    verify: bool,
    failed: bool,
}

/// The logical cluster e2fsck gives mapping blocks (their negative block
/// count shifted right).
const NODE: u64 = u64::MAX;

impl Finder<'_> {
    /// Blocks `first..=last` were met, in map order.
    fn mark(&mut self, first: u64, last: u64) {
        match self.runs.last_mut() {
            Some(r) if r.1.0.checked_add(1) == Some(first) => r.1 = Blk(last),
            _ => self.runs.push((Blk(first), Blk(last))),
        }
    }

    /// Bigalloc: the blocks of `pblk..pblk+len` in duplicate clusters.
    fn mark_clusters(&mut self, pblk: u64, len: u64) {
        let bits = self.bits;
        let (first_c, last_c) = (pblk >> bits, (pblk + len - 1) >> bits);
        let mut i = self.dups.partition_point(|&c| c < first_c);
        while let Some(&c) = self.dups.get(i) {
            if c > last_c {
                break;
            }
            let lo = (c << bits).max(pblk);
            let hi = (((c + 1) << bits) - 1).min(pblk + len - 1);
            if self.keep(lo) {
                self.mark(lo, hi);
            }
            i += 1;
        }
    }

    fn look(&mut self, pblk: u64, len: u64) {
        let mut i = self.dups.partition_point(|&d| d < pblk);
        while let Some(&d) = self.dups.get(i) {
            if d >= pblk.saturating_add(len) {
                break;
            }
            if self.only.is_none_or(|o| o == d)
                && self
                    .skip_meta
                    .is_none_or(|s| !s.block_meta.get(s.cluster(d)))
            {
                self.hits.push(d);
                self.mark(d, d);
            }
            i += 1;
        }
    }

    fn is_dup_cluster(&self, c: u64) -> bool {
        self.dups.binary_search(&c).is_ok()
    }

    /// Bigalloc: a run of data blocks, cut where the logical or the
    /// physical cluster changes; only the first block of a piece may count.
    fn cluster_run(&mut self, lblk: u64, pblk: u64, len: u64) {
        let bits = self.bits;
        let mask = (1u64 << bits) - 1;
        let (first_c, last_c) = (pblk >> bits, (pblk + len - 1) >> bits);
        let lo = self.dups.partition_point(|&c| c < first_c);
        if self.dups.get(lo).is_none_or(|&c| c > last_c) {
            // No duplicate cluster in the run: only where it ends matters.
            self.last = Some(((lblk + len - 1) >> bits, last_c));
            return;
        }
        let mut k = 0u64;
        while k < len {
            let (l, p) = (lblk + k, pblk + k);
            let key = (l >> bits, p >> bits);
            if self.last != Some(key) && self.is_dup_cluster(key.1) && self.keep(p) {
                self.hits.push(p);
            }
            self.last = Some(key);
            let step = (mask + 1 - (l & mask)).min(mask + 1 - (p & mask));
            k += step;
        }
    }

    /// Whether `p`, met by a walk that stops at a bad node, is where
    /// e2fsck's walk ends in error: a node failing its checksum, one whose
    /// header is bad (not one merely empty, which libext2fs steps over),
    /// an illegal indirect pointer.
    fn ends_walk(p: &Problem) -> bool {
        match p.code {
            Code::InodeExtentNodeChecksum | Code::StoppedAtIllegalIndirect => true,
            Code::InodeExtentNodeBad => p.args().detail != blockmap::EMPTY_NODE,
            _ => false,
        }
    }

    fn keep(&self, b: u64) -> bool {
        self.skip_meta
            .is_none_or(|s| !s.block_meta.get(s.cluster(b)))
    }
}

impl MapVisitor for Finder<'_> {
    fn data(&mut self, lblk: u64, pblk: u64, len: u64, _unwritten: bool) {
        let len = len.min(self.budget);
        self.budget -= len;
        if len == 0 {
            return;
        }
        if self.bits > 0 {
            if self.only.is_none() {
                self.cluster_run(lblk, pblk, len);
                self.mark_clusters(pblk, len);
            }
        } else {
            self.look(pblk, len);
        }
    }
    fn node(&mut self, pblk: u64) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        if self.bits > 0 {
            let c = pblk >> self.bits;
            if self.only.is_none_or(|o| o == pblk) && self.is_dup_cluster(c) && self.keep(pblk) {
                self.hits.push(pblk);
                self.mark(pblk, pblk);
            }
            self.last = Some((NODE, c));
        } else {
            self.look(pblk, 1);
        }
    }
    fn problem(&mut self, p: Problem) {
        self.failed |= self.verify && Self::ends_walk(&p);
    }
    fn done(&self) -> bool {
        self.budget == 0
    }
    fn stops_at_bad_node(&self) -> bool {
        self.verify
    }
}

/// The duplicate blocks, in increasing order; with bigalloc the duplicate
/// clusters.
fn dup_list(state: &State) -> Vec<u64> {
    let n = if state.any_dup() {
        state.block_dup.len()
    } else {
        0
    };
    let mut out = Vec::new();
    let mut base = 0u64;
    while base < n {
        let mut w = state.block_dup.word_at(Cluster(base));
        while w != 0 {
            let k = u64::from(w.trailing_zeros());
            w &= w - 1;
            out.push(base + k);
        }
        base += 64;
    }
    out
}

/// `read_only`: e2fsck -n's rescan, whose walks end at an extent node
/// failing its checksum (a repair has rewritten the checksum by then).
pub fn run(
    fs: &Fs,
    state: &mut State,
    read_only: bool,
    threads: Threads,
    ctl: &Control,
) -> Result<Vec<Problem>> {
    // With shared_blocks, files may share blocks on purpose (deduplicated
    // images); e2fsck leaves them be unless asked to unshare.
    if fs
        .sb
        .has_ro_compat(crate::fs::superblock::ro_compat::SHARED_BLOCKS)
    {
        return Ok(Vec::new());
    }
    let dups = dup_list(state);
    if dups.is_empty() {
        return Ok(Vec::new());
    }
    let scan = scan_owners(fs, state, &dups, read_only, threads, ctl);
    let (found, unreadable) = (scan.found, scan.unreadable);
    let mut listed = Vec::with_capacity(found.len());
    let mut owners: Vec<(Ino, Vec<u64>)> = Vec::with_capacity(found.len());
    for (ino, hits, runs, mtime) in found {
        listed.push((ino, runs, mtime));
        owners.push((ino, hits));
    }
    let mut problems = dup_problems(state, &owners);
    problems.extend(
        scan.failed
            .iter()
            .map(|&ino| Problem::new(Code::DupRescanFailed).ino(ino)),
    );
    let mut dups = listing(fs, state, &owners, listed);
    dups.names = pass1c(fs, state, &dups);
    dups.unreadable = unreadable;
    state.dups = Some(std::sync::Arc::new(dups));
    // The repair (pass 1D) resolves the sharing from this list alone.
    state.dup_owners = owners;
    Ok(problems)
}

/// An owner of duplicate blocks as the scan finds it: its inode, the
/// duplicate blocks it claims (`Finder::hits`), its runs of mapped
/// blocks in duplicate clusters, its mtime.
type Found = (Ino, Vec<u64>, Vec<(Blk, Blk)>, u32);

/// What the rescan found: the owners, the first inode whose checksum
/// fails, the inodes whose walk ended at an extent node failing its
/// checksum.
struct Scan {
    found: Vec<Found>,
    unreadable: Option<Ino>,
    failed: Vec<Ino>,
}

/// Walks every inode's map again, in inode order, for the owners of the
/// duplicate blocks `dups`.
fn scan_owners(
    fs: &Fs,
    state: &State,
    dups: &[u64],
    read_only: bool,
    threads: Threads,
    ctl: &Control,
) -> Scan {
    let mut ctx = Ctx::new(fs, state);
    // Under -n pass 1 left the illegal indirect pointers in place, and
    // e2fsck's rescan meets them again: not on metadata this time, as it
    // walks without pass 1's care for blocks on it.
    ctx.read_only = read_only;
    let units = pass1::make_units(fs);
    let isz = fs.geo.inode_len();
    let csum = fs.metadata_csum();
    // Per unit: its owners of shared blocks, its first inode whose
    // checksum fails, its walks ended at a node's checksum.
    let per_unit: Vec<(Vec<Found>, Option<Ino>, Vec<Ino>)> = par_map(
        units.len(),
        threads,
        ctl,
        || (Vec::new(), Scratch::new()),
        |(table, scratch), u| {
            let unit = units[u];
            let mut found = Vec::new();
            let mut unreadable = None;
            let mut failed = Vec::new();
            let Ok(Some(at)) = pass1::read_unit(fs, unit, table) else {
                return (found, unreadable, failed);
            };
            let table = &table[at];
            let first = pass1::unit_first_ino(fs, unit);
            for i in 0..unit.count as usize {
                let ino = first + narrow::sat32(i);
                let Some(raw) = table.get(i * isz..(i + 1) * isz) else {
                    break;
                };
                if csum && unreadable.is_none() && !csum_ok(fs, ino, raw) {
                    unreadable = Some(Ino(ino));
                }
                if !state.map_walked(Ino(ino)) {
                    continue;
                }
                let inode = Inode::parse(raw);
                let mut f = Finder {
                    dups,
                    hits: Vec::new(),
                    runs: Vec::new(),
                    skip_meta: (ino == inode::BAD_INO).then_some(state),
                    only: None,
                    budget: fs.geo.blocks_count,
                    bits: state.cluster_bits,
                    last: None,
                    verify: read_only,
                    failed: false,
                };
                pass1::walk_map(&ctx, ino, &inode, ino == inode::BAD_INO, scratch, &mut f);
                if f.failed {
                    failed.push(Ino(ino));
                }
                let acl = inode.acl_block(ctx.bit64);
                if acl != 0
                    && state
                        .xattr_blocks
                        .binary_search_by_key(&acl, |x| x.blk)
                        .is_ok()
                    && dups.binary_search(&state.cluster(acl).get()).is_ok()
                {
                    f.hits.push(acl);
                    f.mark(acl, acl);
                }
                if !f.hits.is_empty() {
                    found.push((Ino(ino), f.hits, f.runs, inode.mtime));
                }
            }
            (found, unreadable, failed)
        },
    );
    let unreadable = per_unit.iter().find_map(|u| u.1);
    let failed = per_unit.iter().flat_map(|u| u.2.iter().copied()).collect();
    let found: Vec<Found> = per_unit.into_iter().flat_map(|u| u.0).collect();
    Scan {
        found,
        unreadable,
        failed,
    }
}

/// One problem per owner but the bad blocks inode: how many duplicate
/// blocks it claims and whom it shares them with.
fn dup_problems(state: &State, owners: &[(Ino, Vec<u64>)]) -> Vec<Problem> {
    // (cluster, owner) pairs, to find who else holds each cluster (the
    // block itself without bigalloc).
    let bits = state.cluster_bits;
    let mut by_block: Vec<(u64, Ino)> = owners
        .iter()
        .flat_map(|(ino, hits)| hits.iter().map(move |&b| (b >> bits, *ino)))
        .collect();
    by_block.sort_unstable();
    by_block.dedup();

    let mut problems = Vec::new();
    for (ino, hits) in owners {
        if *ino == Ino::BAD {
            // The bad blocks inode is named as an owner, not reported.
            continue;
        }
        let mut others: Vec<Ino> = Vec::new();
        let mut meta = false;
        for &b in hits {
            let c = state.cluster(b);
            meta |= state.block_meta.get(c);
            let b = c.get();
            let lo = by_block.partition_point(|&(x, _)| x < b);
            for &(x, o) in &by_block[lo..] {
                if x != b {
                    break;
                }
                if o != *ino {
                    others.push(o);
                }
            }
        }
        others.sort_unstable();
        others.dedup();
        let mut detail = String::new();
        for o in &others {
            if detail.len() > DETAIL_CAP {
                detail.push_str(", ...");
                break;
            }
            if !detail.is_empty() {
                detail.push_str(", ");
            }
            if *o == Ino::BAD {
                detail.push_str("<the bad blocks inode> (inode #1)");
            } else {
                detail.push_str(&format!("inode #{o}"));
            }
        }
        if meta {
            if !detail.is_empty() {
                detail.push_str(", ");
            }
            detail.push_str("<file system metadata>");
        }
        let nshared = others.len() as u64 + u64::from(meta);
        problems.push(
            Problem::new(Code::DupBlocks)
                .ino(*ino)
                .num(hits.len() as u64)
                .num2(nshared)
                .detail(detail),
        );
    }
    problems
}

/// What e2fsck's passes 1B to 1D tell of the multiply-claimed blocks:
/// each owner's blocks, whom it shares them with and in which order, the
/// entry naming it. The report prints it; the repair's outcome decides
/// the answers (`Dups::fates`).
#[derive(Clone, Debug, Default)]
pub struct Dups {
    /// Owners that are files (from the first non-reserved inode on, and
    /// the root): the number e2fsck gives.
    pub files: u64,
    /// Every owner, the reserved ones included, in inode order.
    pub owners: Vec<DupOwner>,
    /// The first inode whose checksum fails: e2fsck -n's rescan stops
    /// there (`stops::at_pass1b_checksum`).
    pub unreadable: Option<Ino>,
    /// The directory and name of the first entry naming each owner that
    /// is a file, in disk order of the directory blocks (pass 1C).
    pub names: std::collections::BTreeMap<Ino, (Ino, Vec<u8>)>,
}

#[derive(Clone, Debug)]
pub struct DupOwner {
    pub ino: Ino,
    /// Its modification time (seconds since the epoch).
    pub mtime: u32,
    /// Its mapped blocks in duplicate clusters, in map order, as runs of
    /// consecutive blocks.
    pub runs: Vec<(Blk, Blk)>,
    /// Its claims on duplicate clusters (e2fsck's block count).
    pub claims: u64,
    /// The inodes it shares clusters with, in the order e2fsck lists them
    /// (its claims from the last, each cluster's claimants from the last).
    pub shared: Vec<Ino>,
    /// Its claimed clusters, in map order, and whether each is metadata.
    pub clusters: Vec<(Cluster, bool)>,
}

/// How pass 1D ends for an owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DupFate {
    /// Nothing of its clusters is shared any more (others were copied).
    Resolved,
    /// Its shared blocks were copied.
    Cloned,
    /// Left sharing.
    Left,
}

impl Dups {
    /// Each owner's pass 1D outcome when those `cloned` says were given
    /// copies, in e2fsck's bookkeeping: an owner needs copies while one of
    /// its clusters is metadata or has more than one claim; a copy gives
    /// up one claim on each cluster it copies. Parallel to `owners`; the
    /// bad blocks and resize inodes are never resolved.
    pub fn fates(&self, cloned: impl Fn(Ino) -> bool) -> Vec<Option<DupFate>> {
        let mut count: std::collections::HashMap<Cluster, u32> = std::collections::HashMap::new();
        for o in &self.owners {
            for &(c, _) in &o.clusters {
                *count.entry(c).or_default() += 1;
            }
        }
        let mut dup: std::collections::HashSet<Cluster> = count.keys().copied().collect();
        self.owners
            .iter()
            .map(|o| {
                if o.ino == Ino::BAD || o.ino == Ino::RESIZE {
                    return None;
                }
                let busy = o
                    .clusters
                    .iter()
                    .any(|&(c, meta)| meta || count.get(&c).is_some_and(|&n| n > 1));
                // A file sharing with no one (its sharers' rescans ended
                // early) is still asked about, as one sharing with itself.
                if !busy && !o.shared.is_empty() {
                    return Some(DupFate::Resolved);
                }
                if !cloned(o.ino) {
                    return Some(DupFate::Left);
                }
                for &(c, meta) in &o.clusters {
                    if meta || !dup.contains(&c) {
                        continue;
                    }
                    if let Some(n) = count.get_mut(&c) {
                        *n = n.saturating_sub(1);
                        if *n <= 1 {
                            dup.remove(&c);
                        }
                    }
                }
                Some(DupFate::Cloned)
            })
            .collect()
    }
}

/// An owner's (inode, runs of duplicate blocks, modification time).
type Listed = (Ino, Vec<(Blk, Blk)>, u32);

/// The owners as e2fsck lists them: runs, claims and sharers.
fn listing(fs: &Fs, state: &State, owners: &[(Ino, Vec<u64>)], listed: Vec<Listed>) -> Dups {
    // Each cluster's claimants, in the order pass 1B met them.
    let mut claimants: std::collections::HashMap<u64, Vec<Ino>> = std::collections::HashMap::new();
    for (ino, hits) in owners {
        for &b in hits {
            claimants
                .entry(state.cluster(b).get())
                .or_default()
                .push(*ino);
        }
    }
    let first = Ino(fs.geo.first_ino);
    let mut dups = Dups::default();
    for ((ino, hits), (_, runs, mtime)) in owners.iter().zip(listed) {
        let ino = *ino;
        if ino >= first || ino == Ino::ROOT {
            dups.files += 1;
        }
        let mut shared = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &b in hits.iter().rev() {
            let c = state.cluster(b).get();
            for &o in claimants.get(&c).into_iter().flatten().rev() {
                if o != ino && seen.insert(o) {
                    shared.push(o);
                }
            }
        }
        let clusters = hits
            .iter()
            .map(|&b| {
                let c = state.cluster(b);
                (c, state.block_meta.get(c))
            })
            .collect();
        dups.owners.push(DupOwner {
            ino,
            mtime,
            runs,
            claims: hits.len() as u64,
            shared,
            clusters,
        });
    }
    dups
}

/// e2fsck's pass 1C: the first entry naming each owner that is a file,
/// directory blocks read in disk order (the dots left out). Like e2fsck it
/// stops once every owner is named, or at a block it cannot read or parse.
fn pass1c(fs: &Fs, state: &State, dups: &Dups) -> std::collections::BTreeMap<Ino, (Ino, Vec<u8>)> {
    use crate::fs::dir_entry::read_entry;
    let first = Ino(fs.geo.first_ino);
    let mut wanted: std::collections::HashSet<Ino> = dups
        .owners
        .iter()
        .map(|o| o.ino)
        .filter(|&i| i >= first)
        .collect();
    let mut names = std::collections::BTreeMap::new();
    let mut order: Vec<&super::state::DirBlock> = state.dir_blocks.iter().collect();
    order.sort_by_key(|d| (d.pblk, d.ino, d.lblk));
    let max = Ino(fs.geo.inodes_count);
    for d in order {
        if wanted.is_empty() {
            break;
        }
        let Ok(b) = fs.read_block(d.pblk.0) else {
            break;
        };
        let mut off = 0;
        let mut entry = 0u32;
        while off < b.len() {
            let Ok(e) = read_entry(&b, off, true) else {
                return names;
            };
            let dot = d.lblk == LBlk(0) && entry < 2;
            entry += 1;
            off += e.rec_len;
            let ino = Ino(e.inode);
            if dot || ino < first || ino > max || !wanted.remove(&ino) {
                continue;
            }
            names.insert(ino, (d.ino, e.name.to_vec()));
        }
    }
    names
}

/// Is the inode's checksum right (an inode never written, its first 128
/// bytes zero, passes)?
fn csum_ok(fs: &Fs, ino: u32, raw: &[u8]) -> bool {
    inode::compute_checksum(fs.csum_seed, Ino(ino), raw) == Inode::parse(raw).stored_checksum()
        || raw[..inode::GOOD_OLD_INODE_SIZE.min(raw.len())]
            .iter()
            .all(|&b| b == 0)
}
