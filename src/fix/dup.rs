//! Multiply-claimed blocks (e2fsck's pass 1D, as `-y` answers it).
//!
//! Nothing is rescanned: pass 1B left every owner and its shared blocks in
//! `State::dup_owners`; only the maps of those inodes are walked again, to
//! repoint them.
//!
//! The bookkeeping is e2fsck's, per cluster (the block itself without
//! bigalloc): each cluster counts the claims pass 1B found on it and stays
//! "duplicate" until the claims drop to one (metadata always stays). In
//! inode order, an inode is given copies when one of its clusters is
//! metadata or still claimed more than once, or when it shares its
//! clusters with no other inode at all (it maps one twice, or breaks the
//! cluster rules); otherwise the others' copies already resolved it.
//! Copying walks its map and gives every block of a still duplicate
//! cluster its own copy, giving up one claim of the cluster: the lowest
//! block that is neither in use nor staged, the data copied, the pointer,
//! index entry or extent repointed (an extent is split around the copies;
//! a tree block that overflows is split in two, the root pushed down a
//! level), extent block checksums recomputed. So the last inode holding a
//! block keeps it, and an inode mapping a block twice copies it once.
//!
//! With bigalloc the copies keep the cluster rules, as e2fsck's do: a
//! logical cluster moves to one new physical cluster, each block at its
//! logical offset in it; the new cluster is the one the file's other
//! blocks of that logical cluster already use when they lie elsewhere
//! (e2fsck's implied cluster allocation, which fixes a logical cluster
//! split over two physical clusters), else the lowest free cluster.
//! Blocks of that logical cluster met after the first copy follow it.
//!
//! When free space runs out the inode is deleted instead (no links, a
//! deletion time): the next round's check removes the entries naming it
//! and frees its blocks. The bad blocks inode and the resize inode keep
//! theirs.
//!
//! Each inode is one transaction: its copies and edited blocks are kept
//! aside and staged only once its whole map is done, so an inode that
//! cannot be resolved (no space, a tree at its deepest) leaves nothing behind.
//! The walk skips the map entries pass 1's walker skips (out of range, out
//! of order, bad node headers): those blocks were never claimed.

use crate::check::blockmap::{MapVisitor, Scratch};
use crate::check::pass1;
use crate::check::problem::Problem;
use crate::check::state::State;
use crate::fs::extent::{self, Extent, ExtentIndex, INIT_MAX_LEN, RawEntry};
use crate::fs::inode::{self, Inode, InodeMut, flags, inode_csum_seed};
use crate::fs::num::{Blk, Cluster, Ino};
use crate::fs::superblock::incompat;
use crate::fs::xattr;
use crate::narrow;
use crate::store::overlay::Overlay;
use crate::volume::{Allocator, Fs, edit as vol};
use std::collections::{BTreeMap, BTreeSet};

/// The block counts e2fsck's block iterator gives a mapping block and an
/// xattr block: with bigalloc their copies sit at these offsets (masked)
/// in a new cluster.
const NODE_COUNT: i64 = -1;
const XATTR_COUNT: i64 = -5;
/// Longest unwritten extent (one less than a written one).
const UNWRITTEN_MAX_LEN: u64 = INIT_MAX_LEN as u64 - 1;

/// What became of the inodes pass 1B named.
pub(super) struct Outcome {
    /// Inodes that no longer share a block: given copies, deleted, or left
    /// sole owner by the others' copies.
    pub resolved: BTreeSet<Ino>,
    /// Some block was staged.
    pub staged: bool,
}

/// Why one inode's transaction was abandoned.
enum Stop {
    /// No free block left: the inode is deleted instead.
    NoSpace,
    /// The map could not take the new layout (a tree already at the
    /// deepest level), or could not be read: the inode is left as it is.
    Unsupported,
}

/// Claims on duplicate clusters and which are still duplicate: the state
/// pass 1D works through, inode after inode.
#[derive(Clone)]
struct Claims {
    /// Claims pass 1B found on each cluster, less those given up since.
    count: BTreeMap<Cluster, u32>,
    /// Clusters still duplicate: copies are made of their blocks.
    dup: BTreeSet<Cluster>,
}

impl Claims {
    /// One claim on cluster `c` is given up (a copy made, its owner
    /// deleted); below two claims the cluster is no longer duplicate,
    /// unless it is metadata.
    fn give_up(&mut self, state: &State, c: Cluster) {
        if let Some(n) = self.count.get_mut(&c) {
            *n = n.saturating_sub(1);
            if *n <= 1 && !state.block_meta.get(c) {
                self.dup.remove(&c);
            }
        }
    }
}

/// Resolves every multiply-claimed block pass 1B found.
pub(super) fn fix(fs: &Fs, state: &State, overlay: &mut Overlay) -> super::Result<Outcome> {
    let mut count: BTreeMap<Cluster, u32> = BTreeMap::new();
    // The inodes claiming each cluster (in inode order, each once).
    let mut owners: BTreeMap<Cluster, Vec<Ino>> = BTreeMap::new();
    for (ino, hits) in &state.dup_owners {
        for &b in hits {
            let c = state.cluster(b);
            *count.entry(c).or_default() += 1;
            let o = owners.entry(c).or_default();
            if o.last() != Some(ino) {
                o.push(*ino);
            }
        }
    }
    let mut claims = Claims {
        dup: count.keys().copied().collect(),
        count,
    };
    let mut out = Outcome {
        resolved: BTreeSet::new(),
        staged: false,
    };
    let mut alloc = Allocator::new(fs, &state.block_used);
    for (ino, hits) in &state.dup_owners {
        let ino = *ino;
        if ino == Ino::BAD || ino == Ino::RESIZE {
            continue;
        }
        let clusters = || hits.iter().map(|&b| state.cluster(b));
        // e2fsck's pass 1D: an inode is fine when its clusters are no
        // metadata, none is claimed twice any more, and it shares them
        // with some other inode (which gave them up); alone, it copies.
        let busy = clusters()
            .any(|c| state.block_meta.get(c) || claims.count.get(&c).is_some_and(|&n| n > 1));
        let alone = clusters().all(|c| owners.get(&c).is_none_or(|o| o.iter().all(|&x| x == ino)));
        let still = clusters().any(|c| claims.dup.contains(&c));
        if !(busy || alone) || !still {
            out.resolved.insert(ino);
            continue;
        }
        let Some(mut raw) = vol::read_inode(fs, overlay, ino)? else {
            continue;
        };
        let checkpoint = alloc.checkpoint();
        let mut tx = Tx {
            fs,
            state,
            overlay,
            claims: claims.clone(),
            alloc: &mut alloc,
            writes: BTreeMap::new(),
            budget: fs.geo.blocks_count.saturating_mul(4).saturating_add(64),
            seed: fs
                .metadata_csum()
                .then(|| inode_csum_seed(fs.csum_seed, ino, Inode::parse(&raw).generation)),
            new_nodes: 0,
            clusters: ClusterCopy::default(),
        };
        let res = tx.clone_inode(ino.get(), &mut raw);
        let Tx {
            writes,
            claims: tx_claims,
            ..
        } = tx;
        if res.is_err() {
            alloc.rollback(checkpoint);
        }
        match res {
            Ok(()) => {
                for (b, data) in writes {
                    overlay.stage(Blk(b), data)?;
                }
                claims = tx_claims;
                vol::write_inode(fs, overlay, ino, &raw)?;
                out.resolved.insert(ino);
                out.staged = true;
            }
            Err(Stop::NoSpace) => {
                // e2fsck deletes the file; its claims are given up, so the
                // other owners may keep the blocks.
                for c in clusters() {
                    claims.give_up(state, c);
                }
                // e2fsck's pass 1D deletes it: no links and a deletion
                // time; the next round's pass 1 sees it unused.
                super::inode::release(fs, state, overlay, ino.get(), Default::default())?;
                out.resolved.insert(ino);
                out.staged = true;
            }
            Err(Stop::Unsupported) => {}
        }
    }
    Ok(out)
}

/// One inode's copies, kept aside until its whole map is done.
struct Tx<'a, 't> {
    fs: &'a Fs,
    state: &'a State,
    overlay: &'t Overlay,
    claims: Claims,
    /// Taken clusters are marked in use at once; the caller rolls them
    /// back when the inode cannot be resolved.
    alloc: &'t mut Allocator<'a>,
    /// New contents of blocks: copies and edited map blocks.
    writes: BTreeMap<u64, Vec<u8>>,
    /// Map entries left to visit (a looping or absurd map stops the walk).
    budget: u64,
    /// Extent block checksum seed (metadata_csum).
    seed: Option<u32>,
    /// Tree blocks added (a split node, a pushed-down root).
    new_nodes: u64,
    /// Where the logical clusters went (bigalloc).
    clusters: ClusterCopy,
}

/// Bigalloc: the logical cluster copied last and where it went, and the
/// file's data runs, for e2fsck's implied cluster allocation.
#[derive(Default)]
struct ClusterCopy {
    /// (logical cluster, first block of the physical cluster it moved to).
    last: Option<(u64, u64)>,
    /// The file's data runs (logical, physical, length), in logical order,
    /// as the walk found them before any copy.
    runs: Vec<(u64, u64, u64)>,
    /// Data blocks copied so far: logical block → new physical block.
    moved: BTreeMap<u64, u64>,
}

impl Tx<'_, '_> {
    fn read(&self, b: u64) -> Result<Vec<u8>, Stop> {
        if let Some(d) = self.writes.get(&b) {
            return Ok(d.clone());
        }
        let bs = self.fs.block_size();
        let mut buf = vec![0u8; bs];
        let off = b.checked_mul(bs as u64).ok_or(Stop::Unsupported)?;
        self.overlay
            .read_at(&self.fs.dev, off, &mut buf)
            .map_err(|_| Stop::Unsupported)?;
        Ok(buf)
    }

    fn tick(&mut self) -> Result<(), Stop> {
        if self.budget == 0 {
            return Err(Stop::Unsupported);
        }
        self.budget -= 1;
        Ok(())
    }

    fn shared(&self, b: u64) -> bool {
        self.claims.dup.contains(&self.state.cluster(b))
    }

    /// If `b` is still shared, copies it to a new block and gives this
    /// claim up; returns the copy. With bigalloc the copy is the block at
    /// e2fsck's offset for a mapping block (`count`: its negative block
    /// count) in a new cluster.
    fn copy(&mut self, b: u64, limit: u64, count: i64) -> Result<Option<u64>, Stop> {
        if !self.shared(b) {
            return Ok(None);
        }
        let data = self.read(b)?;
        let taken = self.take_below(limit)?;
        let new = taken + (count as u64 & self.cluster_mask());
        self.writes.insert(new, data);
        let c = self.state.cluster(b);
        if !self.state.block_meta.get(c) {
            self.claims.give_up(self.state, c);
        }
        Ok(Some(new))
    }

    /// The lowest free cluster whose first block lies below `limit`.
    fn take_below(&mut self, limit: u64) -> Result<u64, Stop> {
        let first = self.alloc.first_data_block();
        self.alloc
            .take_from(self.overlay, first, Blk(limit))
            .map(Blk::get)
            .ok_or(Stop::NoSpace)
    }

    fn cluster_mask(&self) -> u64 {
        (1u64 << self.state.cluster_bits) - 1
    }

    fn clone_inode(&mut self, ino: u32, raw: &mut [u8]) -> Result<(), Stop> {
        let fs = self.fs;
        let inode = Inode::parse(raw);
        let inline =
            fs.sb.has_incompat(incompat::INLINE_DATA) && inode.has_flag(flags::INLINE_DATA);
        if !inline && pass1::has_valid_blocks(&inode) {
            let mut root = inode.block;
            if fs.sb.has_incompat(incompat::EXTENTS) && inode.has_flag(flags::EXTENTS) {
                if self.state.cluster_bits > 0 {
                    self.clusters.runs = data_runs(fs, self.state, ino, &inode);
                }
                self.extent_root(&mut root, &inode)?;
                for _ in 0..self.new_nodes {
                    add_one_block(fs, raw, &inode);
                }
            } else if self.state.cluster_bits > 0 {
                // A block map cannot keep the cluster rules; pass 1E turns
                // it into an extent tree once the sharing is resolved.
                return Err(Stop::Unsupported);
            } else {
                self.indirect_root(&mut root)?;
            }
            InodeMut(raw).i_block_mut().copy_from_slice(&root);
        }
        let bit64 = fs.sb.is_64bit();
        let acl = inode.acl_block(bit64);
        if acl != 0
            && self
                .state
                .xattr_blocks
                .binary_search_by_key(&acl, |x| x.blk)
                .is_ok()
            && self.claims.count.contains_key(&self.state.cluster(acl))
            && let Some(new) = self.copy(acl, u64::MAX, XATTR_COUNT)?
        {
            // The copy belongs to this inode alone.
            let mut b = self.writes.remove(&new).unwrap_or_default();
            xattr::set_refcount(&mut b, 1);
            if fs.metadata_csum() {
                xattr::set_block_checksum(fs.csum_seed, new, &mut b);
            }
            self.writes.insert(new, b);
            InodeMut(raw).set_file_acl(new, bit64);
        }
        Ok(())
    }

    // ---- ext2/3 block pointers ----

    fn indirect_root(&mut self, root: &mut [u8; 60]) -> Result<(), Stop> {
        for i in 0..15usize {
            let level = narrow::sat32(i.saturating_sub(11));
            let p = inode::map_ptr(root, i);
            let np = self.indirect(p, level)?;
            inode::set_map_ptr(root, i, np);
        }
        Ok(())
    }

    /// Visits pointer `p` of a block at `level` (0: data); returns the
    /// pointer to store (the copy's number when `p` was copied).
    fn indirect(&mut self, p: u32, level: u32) -> Result<u32, Stop> {
        if p == 0 || !self.fs.geo.block_in_fs(u64::from(p)) {
            return Ok(p);
        }
        self.tick()?;
        // Block pointers are 32 bits: copies must stay below 2^32.
        let target = self
            .copy(u64::from(p), 1 << 32, NODE_COUNT)?
            .unwrap_or(u64::from(p));
        if level > 0 {
            let mut buf = self.read(target)?;
            let mut changed = false;
            for k in 0..buf.len() / 4 {
                let c = inode::map_ptr(&buf, k);
                let n = self.indirect(c, level - 1)?;
                if n != c {
                    inode::set_map_ptr(&mut buf, k, n);
                    changed = true;
                }
            }
            if changed {
                self.writes.insert(target, buf);
            }
        }
        // Below 2^32: the copy's limit above.
        Ok(narrow::sat32(target))
    }

    // ---- extent trees ----

    fn extent_root(&mut self, root: &mut [u8; 60], inode: &Inode) -> Result<(), Stop> {
        if crate::check::blockmap::header_problem(root, 60).is_some() {
            return Ok(());
        }
        let h = extent::parse_header(root);
        if h.depth > crate::check::blockmap::WALK_DEPTH_LIMIT {
            return Ok(());
        }
        let bs = u64::from(self.fs.geo.block_size);
        let mut walk = ExtWalk {
            last: None,
            eof_block: inode.size.div_ceil(bs).wrapping_sub(1),
        };
        let Some(entries) = self.extent_node(root, h.depth, 0, None, &mut walk)? else {
            return Ok(());
        };
        if entries.len() <= usize::from(h.max) {
            extent::put_entries_zeroed(root, &entries);
            return Ok(());
        }
        // The root overflowed: its entries move down into a new node and
        // the root, one level deeper, points at it.
        let bsz = self.fs.block_size();
        let max = extent::max_entries(bsz);
        let deepest = crate::check::blockmap::max_tree_depth(self.fs.geo.block_size);
        if entries.len() > max as usize || h.depth >= deepest {
            return Err(Stop::Unsupported);
        }
        let nb = self.new_node()?;
        let mut node = vec![0u8; bsz];
        extent::put_header(&mut node, 0, max, h.depth);
        extent::put_entries_zeroed(&mut node, &entries);
        self.finish_node(&mut node);
        self.writes.insert(nb, node);
        let index = ExtentIndex {
            lblk: extent::entry_lblk(&entries[0]),
            leaf: nb,
        };
        root[extent::HEADER_LEN..].fill(0);
        extent::put_header(root, 0, h.max, h.depth + 1);
        extent::put_entries(root, &[index.encode()]);
        Ok(())
    }

    /// A new tree block (not a copy): counted in the inode's i_blocks.
    fn new_node(&mut self) -> Result<u64, Stop> {
        let b = self.take_below(u64::MAX)?;
        self.new_nodes += 1;
        Ok(b)
    }

    /// Stores the checksum tail of an extent block.
    fn finish_node(&self, b: &mut [u8]) {
        if let Some(seed) = self.seed {
            extent::set_block_checksum(seed, b);
        }
    }

    /// Walks one node whose entries lie in [start, end]. Returns the node's
    /// new entries when any changed (the caller stores them: they may no
    /// longer fit).
    fn extent_node(
        &mut self,
        b: &[u8],
        depth: u16,
        start: u64,
        end: Option<u64>,
        walk: &mut ExtWalk,
    ) -> Result<Option<Vec<RawEntry>>, Stop> {
        let geo = &self.fs.geo;
        let h = extent::parse_header(b);
        let mut out: Vec<RawEntry> = Vec::with_capacity(usize::from(h.entries));
        let mut changed = false;
        let mut start_block = start;
        for i in 0..usize::from(h.entries) {
            self.tick()?;
            let mut raw = extent::raw_entry(b, i).ok_or(Stop::Unsupported)?;
            let leaf = depth == 0;
            let (lblk, pblk, len, unwritten) = if leaf {
                let e = extent::parse_leaf(b, i);
                (u64::from(e.lblk), e.pblk, u64::from(e.len), e.unwritten)
            } else {
                let ix = extent::parse_index(b, i);
                let next = if i + 1 < usize::from(h.entries) {
                    u64::from(extent::parse_index(b, i + 1).lblk)
                } else {
                    end.map_or(1u64 << 32, |e| e + 1)
                };
                (
                    u64::from(ix.lblk),
                    ix.leaf,
                    next.saturating_sub(u64::from(ix.lblk)).max(1),
                    false,
                )
            };
            let last = lblk + len.max(1) - 1;
            // The entries pass 1's walker skips (never claimed).
            let skipped = pblk == 0
                || !geo.block_in_fs(pblk)
                || lblk < start_block
                || (leaf && walk.last.is_some_and(|l| lblk <= l))
                || (end.is_some_and(|e| last > e) && !(last > walk.eof_block && unwritten))
                || (leaf && (len == 0 || pblk.saturating_add(len) > geo.blocks_count));
            if skipped {
                out.push(raw);
                continue;
            }
            if leaf {
                walk.last = Some(last);
                start_block = last;
                let mut edit = Remap::new(&mut out, lblk, pblk, len, unwritten);
                self.split(&mut edit)?;
                if edit.finish() {
                    changed = true;
                } else {
                    out.push(raw);
                }
                continue;
            }
            let child = self.read(pblk)?;
            let ch = extent::parse_header(&child);
            // The child's own depth field is not read, as the check does not.
            if crate::check::blockmap::header_problem(&child, child.len()).is_some() {
                out.push(raw);
                continue;
            }
            let target = self.copy(pblk, u64::MAX, NODE_COUNT)?;
            let at = target.unwrap_or(pblk);
            let mut split = None;
            if ch.entries > 0 {
                let mut node = self.read(at)?;
                if let Some(entries) =
                    self.extent_node(&child, depth - 1, lblk, Some(lblk + len - 1), walk)?
                {
                    let max = usize::from(ch.max);
                    if entries.len() <= max {
                        extent::put_entries_zeroed(&mut node, &entries);
                        self.finish_node(&mut node);
                        self.writes.insert(at, node);
                    } else {
                        // Split in two nodes; the parent gains an index
                        // entry for the second (and may overflow in turn).
                        let (a, rest) = entries.split_at(entries.len() / 2);
                        if a.len() > max || rest.len() > max || max == 0 {
                            return Err(Stop::Unsupported);
                        }
                        let nb = self.new_node()?;
                        let mut second = vec![0u8; node.len()];
                        second[..12].copy_from_slice(&node[..12]);
                        extent::put_entries_zeroed(&mut node, a);
                        self.finish_node(&mut node);
                        self.writes.insert(at, node);
                        extent::put_entries_zeroed(&mut second, rest);
                        self.finish_node(&mut second);
                        self.writes.insert(nb, second);
                        let ix = ExtentIndex {
                            lblk: extent::entry_lblk(&rest[0]),
                            leaf: nb,
                        };
                        split = Some(ix.encode());
                    }
                }
            }
            if let Some(new) = target {
                extent::set_index_leaf(&mut raw, new);
                changed = true;
            }
            out.push(raw);
            if let Some(ix) = split {
                out.push(ix);
                changed = true;
            }
            start_block = lblk;
        }
        Ok(changed.then_some(out))
    }

    /// Copies the shared blocks of one leaf extent, in logical order,
    /// repointing each through `edit`.
    fn split(&mut self, edit: &mut Remap) -> Result<(), Stop> {
        let (lblk, pblk, len) = (edit.rest.0, edit.rest.1, edit.rest.2);
        if self.state.cluster_bits > 0 {
            return self.split_clusters(lblk, pblk, len, edit);
        }
        // Without bigalloc a cluster is its block.
        let candidates: Vec<u64> = self
            .claims
            .count
            .range(Cluster(pblk)..Cluster(pblk.saturating_add(len)))
            .map(|(&c, _)| c.first_block(0).get())
            .collect();
        for b in candidates {
            self.tick()?;
            if let Some(new) = self.copy(b, u64::MAX, 0)? {
                edit.remap(lblk + (b - pblk), new);
            }
        }
        Ok(())
    }

    /// Bigalloc: the blocks of one leaf extent, in pieces whose logical
    /// and physical clusters do not change. A piece of the logical cluster
    /// copied last follows it; a piece in a still duplicate cluster moves
    /// its logical cluster to a new physical cluster; other pieces stay.
    fn split_clusters(
        &mut self,
        lblk: u64,
        pblk: u64,
        len: u64,
        edit: &mut Remap,
    ) -> Result<(), Stop> {
        let bits = self.state.cluster_bits;
        let mask = self.cluster_mask();
        let mut k = 0u64;
        while k < len {
            self.tick()?;
            let (l, p) = (lblk + k, pblk + k);
            let n = (mask + 1 - (l & mask))
                .min(mask + 1 - (p & mask))
                .min(len - k);
            let lc = l >> bits;
            let pc = Blk(p).cluster(bits);
            let to = match self.clusters.last {
                Some((c, base)) if c == lc => Some(base),
                _ if self.claims.dup.contains(&pc) => {
                    let base = match self.implied(l, p) {
                        Some(b) => b,
                        None => self.take_below(u64::MAX)?,
                    };
                    self.clusters.last = Some((lc, base));
                    if !self.state.block_meta.get(pc) {
                        self.claims.give_up(self.state, pc);
                    }
                    Some(base)
                }
                _ => None,
            };
            if let Some(base) = to {
                for j in 0..n {
                    let new = base + ((l + j) & mask);
                    let data = self.read(p + j)?;
                    self.writes.insert(new, data);
                    self.clusters.moved.insert(l + j, new);
                    edit.remap(l + j, new);
                }
            }
            k += n;
        }
        Ok(())
    }

    /// e2fsck's implied cluster allocation for logical block `l` now at
    /// `p`: the first other block of its logical cluster the file maps
    /// tells which physical cluster the logical cluster uses; that cluster
    /// (its first block) when it is not `p`'s own.
    fn implied(&self, l: u64, p: u64) -> Option<u64> {
        let bits = self.state.cluster_bits;
        let mask = self.cluster_mask();
        let base_l = l & !mask;
        let runs = &self.clusters.runs;
        let mut i = runs.partition_point(|&(rl, _, rn)| rl + rn <= base_l);
        let (x, xp) = loop {
            let &(rl, rp, rn) = runs.get(i)?;
            if rl > base_l + mask {
                return None;
            }
            let mut x = rl.max(base_l);
            if x == l {
                x += 1;
            }
            if x < rl + rn && x <= base_l + mask {
                break (x, rp + (x - rl));
            }
            i += 1;
        };
        let xp = self.clusters.moved.get(&x).copied().unwrap_or(xp);
        let at = xp.checked_sub(x - base_l)?.checked_add(l - base_l)?;
        (at != 0 && at >> bits != p >> bits && self.fs.geo.block_in_fs(at)).then_some(at & !mask)
    }
}

/// One leaf extent remapped block by block, in logical order, the way
/// e2fsck's library sets a block's mapping: a single-block extent is
/// repointed in place; the first block of a longer one joins the extent
/// before it when they continue each other (else it becomes its own
/// extent before); any other block splits the extent around it.
struct Remap<'a> {
    out: &'a mut Vec<[u8; 12]>,
    /// What is left of the original extent after the blocks remapped so
    /// far: (logical, physical, length).
    rest: (u64, u64, u64),
    unwritten: bool,
    changed: bool,
}

impl<'a> Remap<'a> {
    fn new(out: &'a mut Vec<[u8; 12]>, lblk: u64, pblk: u64, len: u64, unwritten: bool) -> Self {
        Remap {
            out,
            rest: (lblk, pblk, len),
            unwritten,
            changed: false,
        }
    }

    fn entry(&self, l: u64, p: u64, n: u64) -> RawEntry {
        Extent {
            // Parts of an extent read from disk: both fit as they did.
            lblk: narrow::sat32(l),
            len: narrow::sat32(n),
            pblk: p,
            unwritten: self.unwritten,
        }
        .encode()
    }

    /// Logical block `l` (inside what is left) now lives at `new`.
    fn remap(&mut self, l: u64, new: u64) {
        let (rl, rp, rn) = self.rest;
        if rn == 0 || l < rl || l >= rl + rn {
            return;
        }
        self.changed = true;
        let i = l - rl;
        if rn == 1 {
            let e = self.entry(l, new, 1);
            self.out.push(e);
        } else if i == 0 {
            if !self.extend_last(l, new) {
                let e = self.entry(l, new, 1);
                self.out.push(e);
            }
        } else {
            let head = self.entry(rl, rp, i);
            let e = self.entry(l, new, 1);
            self.out.push(head);
            self.out.push(e);
        }
        self.rest = (l + 1, rp + i + 1, rn - i - 1);
    }

    /// Grows the entry before by block `l` at `new` when it ends right
    /// before both, is of the same kind and has room (e2fsck keeps a
    /// merged extent one block short of the longest).
    fn extend_last(&mut self, l: u64, new: u64) -> bool {
        let unwritten = self.unwritten;
        let Some(last) = self.out.last_mut() else {
            return false;
        };
        let mut e = extent::decode_leaf(last);
        let (n, ll, lp) = (u64::from(e.len), u64::from(e.lblk), e.pblk);
        let max_len = if unwritten {
            UNWRITTEN_MAX_LEN
        } else {
            u64::from(INIT_MAX_LEN)
        };
        if e.unwritten != unwritten || ll + n != l || lp + n != new || n + 1 >= max_len {
            return false;
        }
        e.len += 1;
        *last = e.encode();
        true
    }

    /// Appends what is left of the extent; whether anything was remapped.
    fn finish(self) -> bool {
        if self.changed && self.rest.2 > 0 {
            let (l, p, n) = self.rest;
            let e = self.entry(l, p, n);
            self.out.push(e);
        }
        self.changed
    }
}

/// The data runs of an extent-mapped inode as pass 1's walker finds them.
fn data_runs(fs: &Fs, state: &State, ino: u32, inode: &Inode) -> Vec<(u64, u64, u64)> {
    struct Collect {
        runs: Vec<(u64, u64, u64)>,
        budget: u64,
    }
    impl MapVisitor for Collect {
        fn data(&mut self, lblk: u64, pblk: u64, len: u64, _unwritten: bool) {
            let len = len.min(self.budget);
            self.budget -= len;
            if len > 0 {
                self.runs.push((lblk, pblk, len));
            }
        }
        fn node(&mut self, _pblk: u64) {}
        fn problem(&mut self, _p: Problem) {}
        fn done(&self) -> bool {
            self.budget == 0
        }
    }
    let ctx = pass1::Ctx::new(fs, state);
    let mut c = Collect {
        runs: Vec::new(),
        budget: fs.geo.blocks_count,
    };
    let mut scratch = Scratch::new();
    pass1::walk_map(&ctx, ino, inode, false, &mut scratch, &mut c);
    c.runs.sort_unstable();
    c.runs
}

/// Where the extent walk stands (the order checks pass 1's walker makes).
struct ExtWalk {
    last: Option<u64>,
    eof_block: u64,
}

/// Counts one more map block (with bigalloc, its cluster) in i_blocks.
fn add_one_block(fs: &Fs, raw: &mut [u8], inode: &Inode) {
    let huge = fs
        .sb
        .has_ro_compat(crate::fs::superblock::ro_compat::HUGE_FILE);
    let units = if huge && inode.has_flag(flags::HUGE_FILE) {
        1
    } else {
        fs.geo.block_sectors()
    } << fs.geo.cluster_bits;
    let mut m = InodeMut(raw);
    let n = m.blocks(huge).saturating_add(units);
    m.set_blocks(n, huge);
}
