//! Extent trees grown as libext2fs grows one when a file's extents are
//! inserted one after another, each after the last, into an empty root:
//! e2fsck rewrites a file's extent list so in its fast-commit replay, and
//! its result is the reference a replay must reproduce byte for byte.
//!
//! What sets this layout apart from [`super::extent::build`]'s:
//! - a full node is split when the next extent comes, not before: the
//!   root moves all its entries to a new block and keeps one index entry
//!   (its other slots keep the bytes they held); a full leaf moves only
//!   its last entry to the new leaf (libext2fs does not balance a split
//!   made at the end of the file), so every leaf but the last holds one
//!   entry fewer than it could, and keeps the moved entry's bytes past
//!   its count;
//! - each new block is the first free one from the block before the first
//!   entry of the node being split (its extent's start or its child);
//! - an index block under the root is filled in turn, one per level; the
//!   split of a full index block below the root is not modelled.

use crate::fs::extent::{self, Extent, ExtentIndex, ROOT_MAX, RawEntry};
use crate::fs::inode::field::I_BLOCK_LEN;

/// A grown tree: the root for i_block, the blocks below it with their
/// contents (checksum tails set when a seed was given), its depth and
/// how many index blocks it has below the root.
pub struct Grown {
    pub root: [u8; I_BLOCK_LEN],
    pub blocks: Vec<(u64, Vec<u8>)>,
    pub depth: u16,
    pub index_blocks: usize,
}

impl Grown {
    /// The tree blocks libext2fs' block count (ext2fs_count_blocks, which
    /// e2fsck sets i_blocks from after the rewrite) adds to the data: one
    /// for each index node, the root included, none for the leaves.
    pub fn counted_tree_blocks(&self) -> u64 {
        if self.depth == 0 {
            0
        } else {
            1 + self.index_blocks as u64
        }
    }
}

struct Node {
    blk: u64,
    buf: Vec<u8>,
}

impl Node {
    fn entries(&self) -> usize {
        usize::from(extent::parse_header(&self.buf).entries)
    }
    fn full(&self) -> bool {
        let h = extent::parse_header(&self.buf);
        h.entries >= h.max
    }
    fn depth(&self) -> u16 {
        extent::parse_header(&self.buf).depth
    }
    fn slot(&self, i: usize) -> RawEntry {
        extent::raw_entry(&self.buf, i).unwrap_or([0; extent::ENTRY_LEN])
    }
    fn set_slot(&mut self, i: usize, e: &RawEntry) {
        let at = extent::HEADER_LEN + i * extent::ENTRY_LEN;
        if let Some(s) = self.buf.get_mut(at..at + extent::ENTRY_LEN) {
            s.copy_from_slice(e);
        }
    }
    fn set_entries(&mut self, n: usize) {
        extent::set_entry_count(&mut self.buf, u16::try_from(n).unwrap_or(u16::MAX));
    }
    fn push(&mut self, e: &RawEntry) {
        let n = self.entries();
        self.set_slot(n, e);
        self.set_entries(n + 1);
    }
    /// The block the first entry names: an extent's start or a child.
    fn first_target(&self) -> u64 {
        if self.depth() == 0 {
            extent::parse_leaf(&self.buf, 0).pblk
        } else {
            extent::parse_index(&self.buf, 0).leaf
        }
    }
}

struct Grower<F> {
    nodes: Vec<Node>,
    /// The rightmost path, node indices from the root down to a leaf.
    right: Vec<usize>,
    block_size: usize,
    alloc: F,
}

impl<F: FnMut(u64) -> Option<u64>> Grower<F> {
    /// A new block below the root holding `moved` (with the header of the
    /// node it came from, at that node's depth).
    fn new_node(&mut self, from: usize, moved: &[RawEntry], goal: u64) -> Result<usize, String> {
        let blk = (self.alloc)(goal).ok_or("no free block for an extent tree block")?;
        let mut buf = vec![0u8; self.block_size];
        buf[..extent::HEADER_LEN].copy_from_slice(&self.nodes[from].buf[..extent::HEADER_LEN]);
        let depth = self.nodes[from].depth();
        extent::put_header(&mut buf, 0, extent::max_entries(self.block_size), depth);
        extent::put_entries(&mut buf, moved);
        self.nodes.push(Node { blk, buf });
        Ok(self.nodes.len() - 1)
    }

    /// Splits the node at `level` of the rightmost path, its parent first
    /// when that is full, so that the path's last node at that level has
    /// room for an entry.
    fn split(&mut self, mut level: usize) -> Result<(), String> {
        let id = self.right[level];
        let goal = self.nodes[id].first_target().wrapping_sub(1);
        if level > 0 && self.nodes[self.right[level - 1]].full() {
            if level - 1 != 0 {
                return Err("an extent index block would split".into());
            }
            self.split(0)?;
            level += 1;
        }
        if level == 0 {
            let n = self.nodes[0].entries();
            let moved: Vec<RawEntry> = (0..n).map(|i| self.nodes[0].slot(i)).collect();
            let child = self.new_node(0, &moved, goal)?;
            let ix = ExtentIndex {
                lblk: extent::first_lblk(&self.nodes[child].buf),
                leaf: self.nodes[child].blk,
            };
            let root = &mut self.nodes[0];
            let depth = root.depth() + 1;
            extent::set_depth(&mut root.buf, depth);
            root.set_slot(0, &ix.encode());
            root.set_entries(1);
            self.right.insert(1, child);
            return Ok(());
        }
        let n = self.nodes[id].entries();
        let last = self.nodes[id].slot(n - 1);
        let child = self.new_node(id, &[last], goal)?;
        self.nodes[id].set_entries(n - 1);
        let ix = ExtentIndex {
            lblk: extent::entry_lblk(&last),
            leaf: self.nodes[child].blk,
        };
        self.nodes[self.right[level - 1]].push(&ix.encode());
        self.right[level] = child;
        Ok(())
    }
}

/// Grows the tree for `extents` (in logical order, each at most an
/// entry's length) from an empty root, taking each new block from
/// `alloc(goal)`, which returns the block it marked in use; `seed` is the
/// inode's checksum seed under metadata_csum. An error names what is not
/// modelled or what failed.
pub fn grow(
    extents: &[Extent],
    block_size: usize,
    seed: Option<u32>,
    alloc: impl FnMut(u64) -> Option<u64>,
) -> Result<Grown, String> {
    let mut root = vec![0u8; I_BLOCK_LEN];
    extent::put_header(&mut root, 0, ROOT_MAX, 0);
    let mut g = Grower {
        nodes: vec![Node { blk: 0, buf: root }],
        right: vec![0],
        block_size,
        alloc,
    };
    for e in extents {
        let level = g.right.len() - 1;
        if g.nodes[g.right[level]].full() {
            g.split(level)?;
        }
        let leaf = g.right[g.right.len() - 1];
        g.nodes[leaf].push(&e.encode());
    }
    let depth = g.nodes[0].depth();
    let mut nodes = g.nodes.into_iter();
    let root_node = nodes.next().map(|n| n.buf).unwrap_or_default();
    let mut root = [0u8; I_BLOCK_LEN];
    root.copy_from_slice(&root_node[..I_BLOCK_LEN]);
    let mut blocks = Vec::new();
    let mut index_blocks = 0;
    for mut n in nodes {
        if n.depth() > 0 {
            index_blocks += 1;
        }
        if let Some(seed) = seed {
            extent::set_block_checksum(seed, &mut n.buf);
        }
        blocks.push((n.blk, n.buf));
    }
    Ok(Grown {
        root,
        blocks,
        depth,
        index_blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extents(n: u32) -> Vec<Extent> {
        (0..n)
            .map(|i| Extent {
                lblk: 2 * i,
                len: 1,
                pblk: 1000 + 2 * u64::from(i),
                unwritten: false,
            })
            .collect()
    }

    fn next_free() -> impl FnMut(u64) -> Option<u64> {
        let mut used = std::collections::BTreeSet::new();
        move |goal| {
            let b = (goal..).find(|b| !used.contains(b))?;
            used.insert(b);
            Some(b)
        }
    }

    #[test]
    fn root_holds_four_then_one_leaf() {
        let g = grow(&extents(4), 1024, None, next_free()).unwrap();
        assert_eq!((g.depth, g.blocks.len()), (0, 0));
        let g = grow(&extents(5), 1024, None, next_free()).unwrap();
        assert_eq!(
            (g.depth, g.blocks.len(), g.counted_tree_blocks()),
            (1, 1, 1)
        );
        // The block before the first extent's.
        assert_eq!(g.blocks[0].0, 999);
        // The root's slots past its one index entry keep extents 2-4.
        assert_eq!(extent::raw_entry(&g.root, 1), Some(extents(5)[1].encode()));
    }

    #[test]
    fn full_leaves_give_up_one_entry() {
        // 1 KiB blocks: 84 entries a leaf; 201 extents make 83 + 83 + 35.
        let g = grow(&extents(201), 1024, None, next_free()).unwrap();
        let counts: Vec<u16> = g
            .blocks
            .iter()
            .map(|(_, b)| extent::parse_header(b).entries)
            .collect();
        assert_eq!(counts, vec![83, 83, 35]);
        assert_eq!(g.counted_tree_blocks(), 1);
        // The moved entry's bytes stay in the first leaf past its count.
        let first = &g.blocks[0].1;
        assert_eq!(
            extent::raw_entry(first, 83),
            Some(extents(201)[83].encode())
        );
    }

    #[test]
    fn a_fifth_leaf_moves_the_root_to_an_index_block() {
        let g = grow(&extents(750), 1024, None, next_free()).unwrap();
        assert_eq!(
            (g.depth, g.index_blocks, g.counted_tree_blocks()),
            (2, 1, 2)
        );
        assert_eq!(extent::parse_header(&g.root).entries, 1);
        // Index block allocated before the fifth leaf, near the first leaf.
        assert_eq!(g.blocks.len(), 11);
    }
}
