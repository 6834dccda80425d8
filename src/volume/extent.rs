//! Extent trees built whole for a file's extents, as the repairs make new
//! ones (a rebuilt block map, a quota file, a journal, a directory, pass
//! 1E's rebuilt trees): up to four extents in the inode's root; more go
//! to leaf blocks, each filled in turn, under as many index levels as
//! they need, each node filled in turn too, the root holding the top
//! level's (at most four) entries.

use crate::fs::extent::{self, Extent, ExtentIndex, ROOT_MAX, RawEntry};
use crate::fs::inode::field::I_BLOCK_LEN;

/// A new tree: the root for i_block and the blocks below it (leaves and
/// index nodes), with their contents (checksum tails set when a seed was
/// given).
pub struct Tree {
    pub root: [u8; I_BLOCK_LEN],
    pub leaves: Vec<(u64, Vec<u8>)>,
    /// Levels below the root (the root's depth).
    pub depth: u16,
}

/// Blocks below the root a tree of `n` extents needs, with
/// `per_node` entries a block.
pub fn blocks_needed(n: usize, per_node: usize) -> Option<usize> {
    let mut total = 0;
    let mut level = n;
    while level > usize::from(ROOT_MAX) {
        if per_node < 2 {
            return None;
        }
        level = level.div_ceil(per_node);
        total += level;
    }
    Some(total)
}

/// Builds the tree for `extents` (in logical order, each at most 32768
/// blocks). `block_size` sizes the blocks below the root, at most
/// `max_blocks` of them, each taken from `new_block` in order (leaves
/// first, then each index level up); `seed` is the inode's checksum
/// seed under metadata_csum. None when the extents need more blocks, or
/// `new_block` finds none.
pub fn build(
    extents: &[Extent],
    block_size: usize,
    max_blocks: usize,
    seed: Option<u32>,
    mut new_block: impl FnMut() -> Option<u64>,
) -> Option<Tree> {
    let mut level: Vec<RawEntry> = extents.iter().map(Extent::encode).collect();
    let per_node = extent::max_entries(block_size);
    if blocks_needed(level.len(), usize::from(per_node))? > max_blocks {
        return None;
    }
    let mut blocks = Vec::new();
    let mut depth = 0u16;
    while level.len() > usize::from(ROOT_MAX) {
        let mut index = Vec::with_capacity(level.len().div_ceil(usize::from(per_node)));
        for chunk in level.chunks(usize::from(per_node)) {
            let b = new_block()?;
            let mut node = vec![0u8; block_size];
            extent::put_header(&mut node, 0, per_node, depth);
            extent::put_entries(&mut node, chunk);
            if let Some(seed) = seed {
                extent::set_block_checksum(seed, &mut node);
            }
            let lblk = chunk.first().map_or(0, extent::entry_lblk);
            index.push(ExtentIndex { lblk, leaf: b }.encode());
            blocks.push((b, node));
        }
        level = index;
        depth += 1;
    }
    let mut root = [0u8; I_BLOCK_LEN];
    extent::put_header(&mut root, 0, ROOT_MAX, depth);
    extent::put_entries(&mut root, &level);
    Some(Tree {
        root,
        leaves: blocks,
        depth,
    })
}

/// Splits the runs (logical, physical, length) into extents of at most
/// `max_len` blocks; None when a logical block does not fit 32 bits.
pub fn split_runs(runs: &[(u64, u64, u64)], max_len: u64) -> Option<Vec<Extent>> {
    let mut out = Vec::new();
    for &(l, p, n) in runs {
        let mut k = 0;
        while k < n {
            let len = (n - k).min(max_len);
            out.push(Extent {
                lblk: u32::try_from(l + k).ok()?,
                len: u32::try_from(len).ok()?,
                pblk: p + k,
                unwritten: false,
            });
            k += len;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::extent::{parse_header, parse_index, parse_leaf};

    fn ext(l: u32, p: u64) -> Extent {
        Extent {
            lblk: l,
            len: 1,
            pblk: p,
            unwritten: false,
        }
    }

    #[test]
    fn four_extents_stay_in_the_root() {
        let e: Vec<Extent> = (0..4).map(|i| ext(i * 2, 100 + u64::from(i))).collect();
        let t = build(&e, 1024, 4, None, || None).unwrap();
        assert!(t.leaves.is_empty());
        let h = parse_header(&t.root);
        assert_eq!((h.entries, h.max, h.depth), (4, 4, 0));
        assert_eq!(parse_leaf(&t.root, 3), e[3]);
    }

    #[test]
    fn more_go_to_leaves_under_an_index() {
        // 1 KiB leaves hold 84 entries: 100 extents take two.
        let e: Vec<Extent> = (0..100)
            .map(|i| ext(i * 2, 1000 + u64::from(i) * 2))
            .collect();
        let mut next = 50;
        let t = build(&e, 1024, 4, Some(9), || {
            next += 1;
            Some(next)
        })
        .unwrap();
        let h = parse_header(&t.root);
        assert_eq!((h.entries, h.depth), (2, 1));
        assert_eq!(parse_index(&t.root, 1).lblk, 168);
        assert_eq!(
            t.leaves.iter().map(|l| l.0).collect::<Vec<_>>(),
            vec![51, 52]
        );
        assert_eq!(parse_header(&t.leaves[1].1).entries, 16);
        assert!(build(&e, 1024, 1, None, || Some(1)).is_none());
    }

    #[test]
    fn many_leaves_get_index_levels() {
        // 1 KiB nodes hold 84 entries: 84 * 4 + 1 extents need five
        // leaves, under one index node.
        let n = 84 * 4 + 1;
        let e: Vec<Extent> = (0..n).map(|i| ext(i * 2, 5000 + u64::from(i))).collect();
        assert_eq!(blocks_needed(e.len(), 84), Some(6));
        let mut next = 100;
        let t = build(&e, 1024, 6, None, || {
            next += 1;
            Some(next)
        })
        .unwrap();
        assert_eq!(t.depth, 2);
        let h = parse_header(&t.root);
        assert_eq!((h.entries, h.depth), (1, 2));
        assert_eq!(parse_index(&t.root, 0).leaf, 106);
        let top = &t.leaves[5].1;
        let h = parse_header(top);
        assert_eq!((h.entries, h.depth), (5, 1));
        assert_eq!(parse_index(top, 4).lblk, 84 * 4 * 2);
        assert_eq!(parse_index(top, 4).leaf, 105);
        let last = &t.leaves[4].1;
        assert_eq!(parse_header(last).entries, 1);
        assert_eq!(parse_leaf(last, 0), e[n as usize - 1]);
        assert!(build(&e, 1024, 5, None, || Some(1)).is_none());
        // Deeper still: 84 * 84 * 4 + 1 extents take three levels.
        assert_eq!(blocks_needed(84 * 84 * 4 + 1, 84), Some(337 + 5 + 1));
    }

    #[test]
    fn long_runs_split() {
        let e = split_runs(&[(0, 10, 40000)], 32768).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!((e[1].lblk, e[1].len, e[1].pblk), (32768, 7232, 32778));
    }
}
