//! Extent trees built whole for a file's extents, as the repairs make new
//! ones (a rebuilt block map, a quota file, a journal, a directory): up
//! to four extents in the inode's root; more go to leaf blocks, each
//! filled in turn, under a one-level index in the root.

use crate::fs::extent::{self, Extent, ExtentIndex, ROOT_MAX, RawEntry};
use crate::fs::inode::field::I_BLOCK_LEN;

/// A new tree: the root for i_block and the leaf blocks, with their
/// contents (checksum tails set when a seed was given).
pub struct Tree {
    pub root: [u8; I_BLOCK_LEN],
    pub leaves: Vec<(u64, Vec<u8>)>,
}

/// Builds the tree for `extents` (in logical order, each at most 32768
/// blocks). `block_size` sizes the leaves, at most `max_leaves` of them
/// (at most four, the root's capacity), each taken from `new_leaf` in
/// order; `seed` is the inode's checksum seed under metadata_csum. None
/// when the extents need more leaves, or `new_leaf` finds no block.
pub fn build(
    extents: &[Extent],
    block_size: usize,
    max_leaves: usize,
    seed: Option<u32>,
    mut new_leaf: impl FnMut() -> Option<u64>,
) -> Option<Tree> {
    let entries: Vec<RawEntry> = extents.iter().map(Extent::encode).collect();
    let mut root = [0u8; I_BLOCK_LEN];
    if entries.len() <= usize::from(ROOT_MAX) {
        extent::put_header(&mut root, 0, ROOT_MAX, 0);
        extent::put_entries(&mut root, &entries);
        return Some(Tree {
            root,
            leaves: Vec::new(),
        });
    }
    let per_leaf = extent::max_entries(block_size);
    if per_leaf == 0 {
        return None;
    }
    let chunks: Vec<&[RawEntry]> = entries.chunks(usize::from(per_leaf)).collect();
    if chunks.len() > max_leaves.min(usize::from(ROOT_MAX)) {
        return None;
    }
    let mut index = Vec::with_capacity(chunks.len());
    let mut leaves = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let b = new_leaf()?;
        let mut node = vec![0u8; block_size];
        extent::put_header(&mut node, 0, per_leaf, 0);
        extent::put_entries(&mut node, chunk);
        if let Some(seed) = seed {
            extent::set_block_checksum(seed, &mut node);
        }
        let lblk = chunk.first().map_or(0, extent::entry_lblk);
        index.push(ExtentIndex { lblk, leaf: b }.encode());
        leaves.push((b, node));
    }
    extent::put_header(&mut root, 0, ROOT_MAX, 1);
    extent::put_entries(&mut root, &index);
    Some(Tree { root, leaves })
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
                len: len as u32,
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
    fn long_runs_split() {
        let e = split_runs(&[(0, 10, 40000)], 32768).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!((e[1].lblk, e[1].len, e[1].pblk), (32768, 7232, 32778));
    }
}
