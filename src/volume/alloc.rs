//! The one block allocator of a repair.
//!
//! Free space is what the check found free: the in-use map the passes
//! filled (`State::block_used`, one bit per cluster), which the allocator
//! updates as it hands clusters out or takes them back, so every later
//! fix of the repair (and the summary rewritten from that map) sees them.
//! A cluster holding any staged block is never handed out, whatever the
//! map says: the staged writes of this repair (a copy, a new directory
//! block, a replayed journal block) must not be overwritten. Clusters lie
//! wholly inside the file system.
//!
//! Every search is in increasing cluster order from a goal, as libext2fs'
//! `ext2fs_new_block2` does, so the same check gives the same blocks for
//! any thread count. With bigalloc a whole cluster is taken and its first
//! block returned; a file's further blocks in that cluster are its own
//! (the caller places them).
//!
//! What a fix takes and gives back can be undone as a whole
//! (`checkpoint`, `rollback`): a fix that finds halfway that it cannot be
//! made leaves the map as it found it.

use super::{ClusterMap, Fs, Stage};
use crate::fs::geometry::Geometry;
use crate::fs::num::{Blk, Cluster};

pub struct Allocator<'a> {
    geo: &'a Geometry,
    used: &'a ClusterMap,
    /// Every cluster below this one is in use (a search from lower down
    /// starts here). Only clusters given back through `free` lower it.
    low: Cluster,
    /// What changed, to undo: (cluster, was in use before).
    log: Vec<(Cluster, bool)>,
}

/// A point to roll back to.
#[derive(Clone, Copy, Debug)]
pub struct Checkpoint(usize);

impl<'a> Allocator<'a> {
    /// An allocator over `used`, the in-use map (one bit per cluster) of
    /// the file system `fs`.
    pub fn new(fs: &'a Fs, used: &'a ClusterMap) -> Allocator<'a> {
        Allocator::with_geometry(&fs.geo, used)
    }

    fn with_geometry(geo: &'a Geometry, used: &'a ClusterMap) -> Allocator<'a> {
        Allocator {
            geo,
            used,
            low: Cluster(0),
            log: Vec::new(),
        }
    }

    pub fn first_data_block(&self) -> Blk {
        Blk(self.geo.first_data_block)
    }

    /// The block past the last of the file system.
    pub fn end_block(&self) -> Blk {
        Blk(self.geo.blocks_count)
    }

    fn bits(&self) -> u32 {
        self.geo.cluster_bits
    }

    /// The cluster holding block `blk`.
    pub fn cluster(&self, blk: Blk) -> Cluster {
        blk.cluster(self.bits())
    }

    /// Clusters that lie wholly inside the file system: those below this.
    fn end(&self) -> Cluster {
        Blk(self.geo.blocks_count).cluster(self.bits())
    }

    /// Is cluster `c` free: not in use, inside the file system, and with
    /// no block staged in `st`?
    pub fn is_free<S: Stage + ?Sized>(&self, st: &S, c: Cluster) -> bool {
        c < self.end() && !self.used.get(c) && !st.any_in(c.blocks(self.bits()))
    }

    /// Is block `blk`'s cluster free?
    pub fn block_free<S: Stage + ?Sized>(&self, st: &S, blk: Blk) -> bool {
        blk >= self.first_data_block() && self.is_free(st, self.cluster(blk))
    }

    /// The lowest free cluster in [from, to), not taken.
    fn find<S: Stage + ?Sized>(&self, st: &S, from: Cluster, to: Cluster) -> Option<Cluster> {
        let to = to.min(self.end());
        let mut c = from;
        while c < to {
            let next = self.next_clear(c, to)?;
            if self.is_free(st, next) {
                return Some(next);
            }
            c = next.next();
        }
        None
    }

    /// The first cluster in [from, to) the in-use map has clear.
    fn next_clear(&self, from: Cluster, to: Cluster) -> Option<Cluster> {
        let mut c = from;
        while c < to {
            let w = !self.used.word_at(c);
            if w != 0 {
                let k = c + u64::from(w.trailing_zeros());
                return (k < to).then_some(k);
            }
            c += 64;
        }
        None
    }

    fn mark(&mut self, c: Cluster, used: bool) {
        let was = self.used.get(c);
        if was == used {
            return;
        }
        self.log.push((c, was));
        if used {
            self.used.set(c);
        } else {
            self.used.clear(c);
            self.low = self.low.min(c);
        }
    }

    /// Takes cluster `c`; returns its first block.
    fn take_cluster(&mut self, c: Cluster) -> Blk {
        self.mark(c, true);
        c.first_block(self.bits())
    }

    /// Takes the lowest free cluster whose blocks lie in [from, to) (block
    /// numbers; from rounded down to its cluster); its first block.
    pub fn take_from<S: Stage + ?Sized>(&mut self, st: &S, from: Blk, to: Blk) -> Option<Blk> {
        let start = self.cluster(from);
        let lowest = start <= self.low;
        let start = start.max(self.low);
        let end = Blk(to.0.saturating_add((1 << self.bits()) - 1)).cluster(self.bits());
        let Some(c) = self.find(st, start, end) else {
            if lowest && end >= self.end() {
                self.low = self.low.max(end);
            }
            return None;
        };
        if lowest {
            self.low = c;
        }
        Some(self.take_cluster(c))
    }

    /// libext2fs' choice of a new block: the lowest free cluster from
    /// `goal`'s on, else from the first data block's up to it (a goal
    /// outside the file system counts as the first data block); taken,
    /// its first block returned.
    pub fn take<S: Stage + ?Sized>(&mut self, st: &S, goal: Blk) -> Option<Blk> {
        let (first, end) = (self.first_data_block(), self.end_block());
        let goal = if goal < first || goal >= end {
            first
        } else {
            goal
        };
        self.take_from(st, goal, end)
            .or_else(|| self.take_from(st, first, goal))
    }

    /// Takes the lowest free cluster (from the first data block on).
    pub fn take_lowest<S: Stage + ?Sized>(&mut self, st: &S) -> Option<Blk> {
        self.take_from(st, self.first_data_block(), self.end_block())
    }

    /// Takes block `blk`'s cluster if it is free; whether it did.
    pub fn take_at<S: Stage + ?Sized>(&mut self, st: &S, blk: Blk) -> bool {
        if !self.block_free(st, blk) {
            return false;
        }
        self.take_cluster(self.cluster(blk));
        true
    }

    /// Takes the first run of `n` free blocks (clusters without bigalloc
    /// are blocks) lying in [from, to]; its first block.
    pub fn take_run<S: Stage + ?Sized>(
        &mut self,
        st: &S,
        from: Blk,
        to: Blk,
        n: u64,
    ) -> Option<Blk> {
        let (first, last) = (self.cluster(from), self.cluster(to));
        let n = n.div_ceil(1 << self.bits()).max(1);
        let mut start = first;
        let mut c = first;
        while c <= last {
            if !self.is_free(st, c) {
                start = c.next();
            } else if c.next() - start >= n {
                for k in 0..n {
                    self.take_cluster(start + k);
                }
                return Some(start.first_block(self.bits()));
            }
            c = c.next();
        }
        None
    }

    /// Gives block `blk`'s cluster back (a file that no longer maps it).
    pub fn free(&mut self, blk: Blk) {
        self.mark(self.cluster(blk), false);
    }

    /// Where `rollback` returns to.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint(self.log.len())
    }

    /// Undoes everything taken and given back since `cp`.
    pub fn rollback(&mut self, cp: Checkpoint) {
        while self.log.len() > cp.0 {
            let Some((c, was)) = self.log.pop() else {
                break;
            };
            if was {
                self.used.set(c);
            } else {
                self.used.clear(c);
                self.low = self.low.min(c);
            }
        }
    }

    /// Clusters taken since `cp` (their first blocks), in the order taken.
    pub fn taken_since(&self, cp: Checkpoint) -> Vec<Blk> {
        self.log[cp.0..]
            .iter()
            .filter(|&&(_, was)| !was)
            .map(|&(c, _)| c.first_block(self.bits()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::volume::Blocks;

    /// The geometry fields the allocator reads.
    fn geo(blocks: u64, first: u64, bits: u32) -> Geometry {
        Geometry {
            block_size: 1024,
            blocks_count: blocks,
            first_data_block: first,
            blocks_per_group: 8192,
            inodes_per_group: 8,
            inodes_count: 8,
            inode_size: 128,
            groups: 1,
            desc_size: 32,
            desc_per_block: 32,
            desc_blocks: 1,
            inode_table_blocks: 1,
            first_ino: 11,
            meta_bg: false,
            first_meta_bg: 0,
            reserved_gdt_blocks: 0,
            sparse_super: true,
            sparse_super2: None,
            flex_bg_size: 1,
            cluster_bits: bits,
        }
    }

    fn alloc<'a>(g: &'a Geometry, used: &'a ClusterMap) -> Allocator<'a> {
        Allocator::with_geometry(g, used)
    }

    #[test]
    fn takes_lowest_from_the_goal_then_wraps() {
        let g = geo(64, 1, 0);
        let used = ClusterMap::new(64);
        for b in [0, 1, 2, 5] {
            used.set(Cluster(b));
        }
        let st = Blocks::new(1024);
        let mut a = alloc(&g, &used);
        assert_eq!(a.take_lowest(&st), Some(Blk(3)));
        assert_eq!(a.take(&st, Blk(60)), Some(Blk(60)));
        assert_eq!(a.take(&st, Blk(63)), Some(Blk(63)));
        // Nothing left above the goal: from the first data block.
        assert_eq!(a.take(&st, Blk(63)), Some(Blk(4)));
        assert!([3, 60, 4].iter().all(|&c| used.get(Cluster(c))));
    }

    #[test]
    fn staged_blocks_are_never_handed_out() {
        let g = geo(64, 0, 0);
        let used = ClusterMap::new(64);
        let mut st = Blocks::new(1024);
        st.map.insert(0, vec![0; 1024]);
        st.map.insert(1, vec![0; 1024]);
        let mut a = alloc(&g, &used);
        assert_eq!(a.take_lowest(&st), Some(Blk(2)));
        assert!(!a.take_at(&st, Blk(1)));
    }

    #[test]
    fn bigalloc_hands_out_whole_clusters_inside_the_file_system() {
        // 4 blocks per cluster, 30 blocks: cluster 7 (28..32) is partial.
        let g = geo(30, 0, 2);
        let used = ClusterMap::new(8);
        used.set(Cluster(0));
        let mut st = Blocks::new(1024);
        st.map.insert(6, vec![0; 1024]);
        let mut a = alloc(&g, &used);
        assert_eq!(a.take_lowest(&st), Some(Blk(8)));
        assert_eq!(a.cluster(Blk(9)), Cluster(2));
        assert_eq!(a.take(&st, Blk(25)), Some(Blk(24)));
        assert_eq!(a.take(&st, Blk(25)), Some(Blk(12)));
        assert!([2, 6, 3].iter().all(|&c| used.get(Cluster(c))));
        assert!(!a.block_free(&st, Blk(29)));
    }

    #[test]
    fn rollback_restores_the_map() {
        let g = geo(16, 0, 0);
        let used = ClusterMap::new(16);
        used.set(Cluster(3));
        let st = Blocks::new(1024);
        let mut a = alloc(&g, &used);
        let cp = a.checkpoint();
        a.free(Blk(3));
        assert_eq!(a.take_lowest(&st), Some(Blk(0)));
        assert_eq!(a.take_run(&st, Blk(2), Blk(15), 3), Some(Blk(2)));
        assert_eq!(a.taken_since(cp), [0, 2, 3, 4].map(Blk));
        a.rollback(cp);
        assert_eq!(
            (0..16)
                .filter(|&c| used.get(Cluster(c)))
                .collect::<Vec<_>>(),
            vec![3]
        );
        assert_eq!(a.take_lowest(&st), Some(Blk(0)));
    }
}
