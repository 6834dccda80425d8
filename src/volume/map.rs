//! In-use maps keyed by what they index.
//!
//! The block maps of a check (in use, claimed twice, metadata) and the
//! block bitmaps have one bit per cluster, not per block: a `ClusterMap`
//! takes only a [`Cluster`], so a block number must be converted
//! (`Blk::cluster`) before it reaches one.

use crate::engine::{AtomicBitmap, LinkCounts};
use crate::fs::num::{Cluster, Ino};

/// One bit per cluster, shared between threads (`AtomicBitmap`).
pub struct ClusterMap(AtomicBitmap);

impl ClusterMap {
    /// A map of `clusters` clear bits.
    pub fn new(clusters: u64) -> ClusterMap {
        ClusterMap(AtomicBitmap::new(clusters))
    }

    /// A map in `spill`'s scratch file (`--max-memory`), or in memory.
    pub fn new_in(
        clusters: u64,
        spill: Option<&std::sync::Arc<crate::engine::Spill>>,
    ) -> ClusterMap {
        ClusterMap(AtomicBitmap::new_in(clusters, spill))
    }

    /// Bytes of the map in memory now.
    pub fn resident_bytes(&self) -> u64 {
        self.0.resident_bytes()
    }

    /// Clusters the map covers.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Marks `c`; returns whether it was marked already.
    pub fn set(&self, c: Cluster) -> bool {
        self.0.set(c.0)
    }

    pub fn clear(&self, c: Cluster) {
        self.0.clear(c.0)
    }

    pub fn get(&self, c: Cluster) -> bool {
        self.0.get(c.0)
    }

    /// Marks the clusters of `mask` in word `w` (cluster `64 * w + k` for
    /// bit k); returns the bits that were marked already.
    pub fn set_word(&self, w: u64, mask: u64) -> u64 {
        self.0.set_word(w, mask)
    }

    /// The 64 bits from cluster `start` on (bit k is `start + k`), clear
    /// past the end.
    pub fn word_at(&self, start: Cluster) -> u64 {
        self.0.word_at(start.0)
    }

    /// Marked clusters in [start, end).
    pub fn count_range(&self, start: Cluster, end: Cluster) -> u64 {
        self.0.count_range(start.0, end.0)
    }

    /// The marked clusters in [start, end), in increasing order.
    pub fn iter_set(&self, start: Cluster, end: Cluster) -> impl Iterator<Item = Cluster> + '_ {
        self.0.iter_set(start.0, end.0).map(Cluster)
    }
}

/// One bit per inode, indexed by the inode number itself (bit 0 unused),
/// shared between threads: the per-inode maps of a check take only an
/// [`Ino`].
pub struct InodeMap(AtomicBitmap);

impl InodeMap {
    /// A map for inodes 1 to `inodes_count` (all clear).
    pub fn new(inodes_count: u32) -> InodeMap {
        InodeMap::new_in(inodes_count, None)
    }

    /// The same in `spill`'s scratch file (`--max-memory`), or in memory.
    pub fn new_in(
        inodes_count: u32,
        spill: Option<&std::sync::Arc<crate::engine::Spill>>,
    ) -> InodeMap {
        InodeMap(AtomicBitmap::new_in(u64::from(inodes_count) + 1, spill))
    }

    /// Bytes of the map in memory now.
    pub fn resident_bytes(&self) -> u64 {
        self.0.resident_bytes()
    }

    /// Marks `ino`; returns whether it was marked already.
    pub fn set(&self, ino: Ino) -> bool {
        self.0.set(ino.bit())
    }

    pub fn clear(&self, ino: Ino) {
        self.0.clear(ino.bit())
    }

    pub fn get(&self, ino: Ino) -> bool {
        self.0.get(ino.bit())
    }

    // Ranges are inode numbers widened to u64: a range's end, one past
    // the last inode, may not fit an inode number.

    /// The 64 bits from inode `start` on (bit k is `start + k`), clear
    /// past the last inode.
    pub fn word_at(&self, start: u64) -> u64 {
        self.0.word_at(start)
    }

    /// `get` by an inode number widened to u64, for walks over ranges.
    pub fn get_wide(&self, ino: u64) -> bool {
        self.0.get(ino)
    }

    /// Marked inodes in [start, end).
    pub fn count_range(&self, start: u64, end: u64) -> u64 {
        self.0.count_range(start, end)
    }

    /// Marked inodes of the whole map.
    pub fn count(&self) -> u64 {
        self.0.count_range(0, self.0.len())
    }

    /// The marked inodes in [start, end), in increasing order.
    pub fn iter_set(&self, start: u64, end: u64) -> impl Iterator<Item = Ino> + '_ {
        // The map has inodes_count + 1 bits: its marks are inode numbers,
        // which fit a u32.
        #[allow(clippy::cast_possible_truncation)]
        self.0.iter_set(start, end).map(|i| Ino(i as u32))
    }
}

/// Directory entries seen per inode (pass 2), indexed by the inode number
/// itself: engine's [`LinkCounts`] taking only an [`Ino`], so a count is
/// never kept under a block or group number.
pub struct InodeCounts(LinkCounts);

impl InodeCounts {
    /// Counters for inodes 1 to `inodes_count` (all 0).
    pub fn new(inodes_count: u32) -> InodeCounts {
        InodeCounts::new_in(inodes_count, None)
    }

    /// The same in `spill`'s scratch file (`--max-memory`), or in memory.
    pub fn new_in(
        inodes_count: u32,
        spill: Option<&std::sync::Arc<crate::engine::Spill>>,
    ) -> InodeCounts {
        InodeCounts(LinkCounts::new_in(inodes_count as usize + 1, spill))
    }

    /// Bytes of the counters in memory now.
    pub fn resident_bytes(&self) -> u64 {
        self.0.resident_bytes()
    }

    /// One more entry names `ino`.
    pub fn incr(&self, ino: Ino) {
        self.0.incr(ino.index())
    }

    /// The entries naming `ino` (saturated at u16::MAX).
    pub fn get(&self, ino: Ino) -> u16 {
        self.0.get(ino.index())
    }
}
