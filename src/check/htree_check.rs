//! Whole-tree checks of one indexed directory, once every block of it has
//! been read: each block referenced by exactly one index entry, leaves all
//! at the depth the root announces, and every block's names hashing into
//! the range its parent's index entry gives it.
//!
//! The ranges follow e2fsck's rules so that both tools agree on what is
//! bad: an index entry covers [its hash, the next entry's hash] (the upper
//! bound is inclusive because a run of equal hashes may spill into the
//! next block), the first entry of a node inherits its bound from the
//! node's own parent, and an interior node's range is what its first and
//! last children actually hold.

use super::dirblock::{DxKind, DxRec, LeafRec};
use super::problem::{Code, Problem, ProblemList};
use crate::fs::num::Ino;

/// Upper bound of the last entry of a node: e2fsck's highest even hash.
const TOP_HASH: u32 = 0xFFFF_FFFE;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Never read (a hole, or beyond what pass 1 mapped).
    Unknown,
    Root,
    Node,
    Leaf,
}

#[derive(Clone, Copy, Debug)]
struct Blk {
    kind: Kind,
    min_hash: u32,
    max_hash: u32,
    node_min: u32,
    node_max: u32,
    parent: u32,
    previous: u32,
    referenced: bool,
    dup_ref: bool,
    first: bool,
    last: bool,
}

impl Blk {
    fn new() -> Blk {
        Blk {
            kind: Kind::Unknown,
            min_hash: 0,
            max_hash: 0,
            node_min: 0,
            node_max: 0,
            parent: 0,
            previous: 0,
            referenced: false,
            dup_ref: false,
            first: false,
            last: false,
        }
    }
}

/// Directories with more blocks than this are not cross-checked (the
/// per-block table would be too big to allocate on a corrupt size).
pub const MAX_BLOCKS: u32 = 1 << 24;

/// Checks directory `ino` of `numblocks` blocks. `dx` holds its root then
/// its interior nodes in the order they were read; `leaves` its leaf blocks.
pub fn verify(ino: Ino, numblocks: u32, dx: &[&DxRec], leaves: &[LeafRec], out: &mut ProblemList) {
    // Without a root read (its block a hole), e2fsck -n still judges the
    // blocks it read as an index's: with a depth of 0, nothing
    // referenced but block 0.
    let root = dx.first().filter(|r| r.kind == DxKind::Root && r.lblk == 0);
    if numblocks == 0 || numblocks > MAX_BLOCKS || (root.is_none() && leaves.is_empty()) {
        return;
    }
    let depth = root.map_or(0, |r| u32::from(r.indirect_levels) + 1);
    let mut blks = vec![Blk::new(); numblocks as usize];
    for l in leaves {
        if let Some(b) = blks.get_mut(l.lblk as usize) {
            b.kind = Kind::Leaf;
            b.min_hash = l.min_hash;
            b.max_hash = l.max_hash;
        }
    }
    for r in dx {
        let Some(b) = blks.get_mut(r.lblk as usize) else {
            continue;
        };
        b.kind = if r.kind == DxKind::Root {
            Kind::Root
        } else {
            Kind::Node
        };
        if r.kind == DxKind::Root {
            b.first = true;
            b.last = true;
        }
    }
    for r in dx {
        link_children(&mut blks, r, numblocks);
    }
    // The root is referenced by the inode itself.
    if blks[0].referenced {
        blks[0].dup_ref = true;
    } else {
        blks[0].referenced = true;
    }
    // Leaves first, then nodes: a node's actual range is known only once
    // its children's are.
    propagate(&mut blks, Kind::Leaf);
    propagate(&mut blks, Kind::Node);

    let before = out.len();
    for (i, b) in blks.iter().enumerate() {
        let lblk = i as u64;
        if !b.first && b.min_hash < b.node_min {
            out.push(
                Problem::new(Code::HtreeHashRange)
                    .ino(ino)
                    .num(lblk)
                    .detail(format!("min {:#010x} < {:#010x}", b.min_hash, b.node_min)),
            );
        }
        if b.kind == Kind::Leaf {
            let d = leaf_depth(&blks, i);
            if d != depth {
                out.push(
                    Problem::new(Code::HtreeLeafDepth)
                        .ino(ino)
                        .num(lblk)
                        .num2(u64::from(depth)),
                );
            }
        }
        if i != 0 && b.max_hash > b.node_max {
            out.push(
                Problem::new(Code::HtreeHashRange)
                    .ino(ino)
                    .num(lblk)
                    .e2fsck(0x020037)
                    .detail(format!("max {:#010x} > {:#010x}", b.max_hash, b.node_max)),
            );
        }
        if !b.referenced {
            out.push(
                Problem::new(Code::HtreeBlockReferenced)
                    .ino(ino)
                    .num(lblk)
                    .num2(0),
            );
        } else if b.dup_ref {
            out.push(
                Problem::new(Code::HtreeBlockReferenced)
                    .ino(ino)
                    .num(lblk)
                    .num2(2),
            );
        }
    }
    // As e2fsck, any of these makes the index invalid as a whole (its
    // repair rebuilds the directory).
    if out.len() > before {
        out.push(Problem::new(Code::HtreeInvalid).ino(ino));
    }
}

/// Applies the entries of index block `r` to its children.
fn link_children(blks: &mut [Blk], r: &DxRec, numblocks: u32) {
    let mut min = u32::MAX;
    let mut max = 0u32;
    let n = r.entries.len();
    for (i, &(hash, blk)) in r.entries.iter().enumerate() {
        if blk >= numblocks {
            continue;
        }
        let next = r.entries.get(i + 1).map(|&(h, _)| h);
        let prev_blk = if i > 0 { r.entries[i - 1].1 } else { 0 };
        let Some(c) = blks.get_mut(blk as usize) else {
            continue;
        };
        if c.referenced {
            c.dup_ref = true;
        } else {
            c.referenced = true;
            c.parent = r.lblk;
        }
        c.previous = prev_blk;
        c.node_min = hash;
        match next {
            Some(h) if i + 1 < n => c.node_max = h,
            _ => {
                c.node_max = TOP_HASH;
                c.last = true;
            }
        }
        if i == 0 {
            c.first = true;
        }
        min = min.min(hash);
        max = max.max(hash);
    }
    if let Some(b) = blks.get_mut(r.lblk as usize) {
        b.min_hash = min;
        b.max_hash = max;
    }
}

/// Gives each parent of a `kind` block the real range of its first and
/// last children, and tightens the upper bound of the parent's previous
/// sibling accordingly.
fn propagate(blks: &mut [Blk], kind: Kind) {
    for i in 0..blks.len() {
        let b = blks[i];
        if b.kind != kind {
            continue;
        }
        let p = b.parent as usize;
        if p >= blks.len() {
            continue;
        }
        if b.first {
            blks[p].min_hash = b.min_hash;
            let prev = blks[p].previous as usize;
            let pmin = blks[p].min_hash;
            if prev != 0
                && let Some(pb) = blks.get_mut(prev)
            {
                pb.node_max = pmin;
            }
        }
        if b.last {
            blks[p].max_hash = b.max_hash;
        }
    }
}

/// Steps from leaf `i` up to the root (bounded: a real tree has at most 3
/// levels, and a cycle of parents must not loop forever).
fn leaf_depth(blks: &[Blk], i: usize) -> u32 {
    let mut d = 0;
    let mut cur = i;
    while blks[cur].kind != Kind::Root && d < 8 {
        cur = blks[cur].parent as usize;
        if cur >= blks.len() {
            break;
        }
        d += 1;
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(entries: Vec<(u32, u32)>, levels: u8) -> DxRec {
        DxRec {
            dir: Ino(12),
            lblk: 0,
            pblk: 100,
            kind: DxKind::Root,
            indirect_levels: levels,
            entries,
        }
    }

    fn leaf(lblk: u32, min: u32, max: u32) -> LeafRec {
        LeafRec {
            dir: Ino(12),
            lblk,
            min_hash: min,
            max_hash: max,
        }
    }

    #[test]
    fn good_one_level_tree() {
        let r = root(vec![(0, 1), (0x8000_0000, 2)], 0);
        let leaves = [
            leaf(1, 0x10, 0x7fff_fff0),
            leaf(2, 0x8000_0000, 0xffff_0000),
        ];
        let mut out = ProblemList::new();
        verify(Ino(12), 3, &[&r], &leaves, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn collision_spill_is_allowed() {
        // A name with exactly the next entry's hash may stay in the first block.
        let r = root(vec![(0, 1), (0x8000_0000, 2)], 0);
        let leaves = [
            leaf(1, 0x10, 0x8000_0000),
            leaf(2, 0x8000_0000, 0x9000_0000),
        ];
        let mut out = ProblemList::new();
        verify(Ino(12), 3, &[&r], &leaves, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn bad_hashes_and_references() {
        let r = root(vec![(0, 1), (0x8000_0000, 2)], 0);
        let leaves = [
            leaf(1, 0x10, 0x9000_0000),
            leaf(2, 0x7000_0000, 0x9000_0000),
            leaf(3, u32::MAX, 0),
        ];
        let mut out = ProblemList::new();
        verify(Ino(12), 4, &[&r], &leaves, &mut out);
        let codes: Vec<_> = out.iter().map(|p| (p.code, p.args().num)).collect();
        assert!(codes.contains(&(Code::HtreeHashRange, Some(1))));
        assert!(codes.contains(&(Code::HtreeHashRange, Some(2))));
        assert!(codes.contains(&(Code::HtreeBlockReferenced, Some(3))));
    }

    #[test]
    fn two_levels_and_depth() {
        let r = root(vec![(0, 1), (0x8000_0000, 2)], 1);
        let n1 = DxRec {
            lblk: 1,
            kind: DxKind::Node,
            indirect_levels: 0,
            entries: vec![(0, 3), (0x4000_0000, 4)],
            ..root(vec![], 0)
        };
        let n2 = DxRec {
            lblk: 2,
            kind: DxKind::Node,
            indirect_levels: 0,
            entries: vec![(0x8000_0000, 5)],
            ..root(vec![], 0)
        };
        let leaves = [
            leaf(3, 0x100, 0x3fff_0000),
            leaf(4, 0x4000_0000, 0x7000_0000),
            leaf(5, 0x8000_0002, 0xf000_0000),
        ];
        let mut out = ProblemList::new();
        verify(Ino(12), 6, &[&r, &n1, &n2], &leaves, &mut out);
        assert!(out.is_empty(), "{out:?}");
        // A leaf hung directly under the root of a 2-level tree.
        let r2 = root(vec![(0, 1), (0x8000_0000, 5)], 1);
        let mut out = ProblemList::new();
        verify(Ino(12), 6, &[&r2, &n1], &leaves, &mut out);
        assert!(out.iter().any(|p| p.code == Code::HtreeLeafDepth));
        assert!(
            out.iter()
                .any(|p| p.code == Code::HtreeBlockReferenced && p.args().num == Some(2))
        );
    }

    #[test]
    fn hostile_input_does_not_panic() {
        let r = root(vec![(0, 0), (5, 0), (3, 99), (1, 1)], 7);
        let n = DxRec {
            lblk: 1,
            kind: DxKind::Node,
            indirect_levels: 0,
            entries: vec![(0, 1), (0, 0)],
            ..root(vec![], 0)
        };
        let mut out = ProblemList::new();
        verify(Ino(12), 2, &[&r, &n], &[leaf(7, 0, 0)], &mut out);
        verify(Ino(12), 0, &[&r], &[], &mut out);
        verify(Ino(12), u32::MAX, &[&r], &[], &mut out);
    }
}
