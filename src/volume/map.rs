//! In-use maps keyed by what they index.
//!
//! The block maps of a check (in use, claimed twice, metadata) and the
//! block bitmaps have one bit per cluster, not per block: a `ClusterMap`
//! takes only a [`Cluster`], so a block number must be converted
//! (`Blk::cluster`) before it reaches one.

use crate::engine::AtomicBitmap;
use crate::fs::num::Cluster;

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
