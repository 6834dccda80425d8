//! Pass 1E's offer: an extent tree that is consistent but could be
//! shorter (fewer levels) or narrower (fewer nodes at a level), judged as
//! e2fsck 1.47.4 judges it from the nodes pass 1 walked.
//!
//! Per level (0 the root in the inode, counting down), the entries in
//! use and their room are summed over the level's nodes. A node below
//! the root that is not full counts one entry less room: the kernel's
//! split on append leaves a node one entry short of full, and a tree
//! left that way is not worth rebuilding over and over. Then, level by
//! level from the root, the first of these decides:
//! - the room exceeds the entries by more than one block's worth of
//!   entries: the level could be narrower;
//! - the entries would fit in the room of a level above: the tree could
//!   be shorter.
//!
//! A tree of [`LEVELS`] levels or more could always be shorter; levels
//! from there down are not counted.

use super::problem::{Code, Problem};
use crate::fs::num::Ino;
use crate::narrow;

/// Levels whose statistics are kept (e2fsck's MAX_EXTENT_DEPTH_COUNT).
pub const LEVELS: usize = 8;

/// The statistics of one tree.
#[derive(Clone, Copy, Debug, Default)]
pub struct TreeStats {
    /// Per level: entries in use, room.
    levels: [(u64, u64); LEVELS],
}

impl TreeStats {
    /// A node of `level` with `entries` in use out of `max`.
    pub fn node(&mut self, level: u16, entries: u16, max: u16) {
        let Some(l) = self.levels.get_mut(usize::from(level)) else {
            return;
        };
        l.0 += u64::from(entries);
        l.1 += u64::from(max);
        if level > 0 && entries < max {
            l.1 -= 1;
        }
    }

    /// Adds the statistics of a part of the same tree walked apart.
    pub fn add(&mut self, o: &TreeStats) {
        for (l, o) in self.levels.iter_mut().zip(&o.levels) {
            l.0 += o.0;
            l.1 += o.1;
        }
    }

    /// The offer for a tree whose root says `depth`, with blocks of
    /// `block_size` bytes: the problem's code and the level it names.
    pub fn offer(&self, depth: u16, block_size: u32) -> Option<(Code, u16)> {
        if usize::from(depth) >= LEVELS {
            return Some((Code::ExtentTreeShorter, depth));
        }
        // Entries of 12 bytes after a 12-byte header.
        let per_block = u64::from(block_size.saturating_sub(12) / 12);
        let levels = &self.levels[..=usize::from(depth)];
        for (i, &(used, room)) in levels.iter().enumerate() {
            if room.saturating_sub(used) > per_block {
                return Some((Code::ExtentTreeNarrower, narrow::sat16(i)));
            }
            if levels[..i].iter().any(|&(_, above)| used < above) {
                return Some((Code::ExtentTreeShorter, narrow::sat16(i)));
            }
        }
        None
    }

    /// The problem for inode `ino`, if its tree is offered pass 1E.
    pub fn problem(&self, ino: u32, depth: u16, block_size: u32) -> Option<Problem> {
        self.offer(depth, block_size)
            .map(|(code, level)| Problem::new(code).ino(Ino(ino)).num(u64::from(level)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(nodes: &[(u16, u16, u16)]) -> TreeStats {
        let mut t = TreeStats::default();
        for &(l, e, m) in nodes {
            t.node(l, e, m);
        }
        t
    }

    #[test]
    fn a_leaf_that_fits_in_the_root_could_be_shorter() {
        // The kernel's tree after punching a file down to 3 extents.
        let t = tree(&[(0, 1, 4), (1, 3, 340)]);
        assert_eq!(t.offer(1, 4096), Some((Code::ExtentTreeShorter, 1)));
        // Five extents need the leaf.
        let t = tree(&[(0, 1, 4), (1, 5, 340)]);
        assert_eq!(t.offer(1, 4096), None);
    }

    #[test]
    fn half_empty_leaves_could_be_narrower() {
        // Two leaves of 1 KiB (84 entries each) holding 40 in all: room
        // 166 (neither full), 126 more than used, over 84.
        let t = tree(&[(0, 2, 4), (1, 20, 84), (1, 20, 84)]);
        assert_eq!(t.offer(1, 1024), Some((Code::ExtentTreeNarrower, 1)));
        // 100 in use: room 166, 66 spare, fine.
        let t = tree(&[(0, 2, 4), (1, 50, 84), (1, 50, 84)]);
        assert_eq!(t.offer(1, 1024), None);
    }

    #[test]
    fn a_full_node_counts_all_its_room() {
        // 84 + 83 + 1 entries in three 1 KiB leaves: room 84 + 83 + 83.
        let t = tree(&[(0, 3, 4), (1, 84, 84), (1, 83, 84), (1, 1, 84)]);
        assert_eq!(t.offer(1, 1024), None);
        let t = tree(&[(0, 3, 4), (1, 83, 84), (1, 83, 84), (1, 1, 84)]);
        assert_eq!(t.offer(1, 1024), None);
    }

    #[test]
    fn deep_trees_could_be_shorter() {
        assert_eq!(
            TreeStats::default().offer(8, 1024),
            Some((Code::ExtentTreeShorter, 8))
        );
        // An index level of one node above leaves that fit in the root's
        // room.
        let t = tree(&[(0, 1, 4), (1, 1, 340), (2, 4, 340)]);
        assert_eq!(t.offer(2, 4096), Some((Code::ExtentTreeShorter, 1)));
    }
}
