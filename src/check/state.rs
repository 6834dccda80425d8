//! What the passes learn about the file system and hand to the next ones.
//!
//! Shared maps are lock-free (atomic bitmaps and counters) so workers of a
//! pass write to them without merging; everything else is built from
//! per-worker results merged once, in unit order.

use super::xattr::EaCharge;
use crate::engine::{AtomicBitmap, LinkCounts};
use std::collections::BTreeMap;

/// Per-inode flag bits kept by pass 1 (`State::iflags`).
pub mod iflag {
    /// i_size is 0 and no blocks are mapped (pass 4: "zero-length").
    pub const ZERO_LENGTH: u8 = 0x1;
    /// Directory uses an htree index (INDEX_FL).
    pub const HTREE: u8 = 0x2;
    /// Directory or file keeps its data inline in the inode.
    pub const INLINE: u8 = 0x4;
    /// Pass 1 found the inode broken beyond repair of single fields: entries
    /// pointing at it are themselves reported by pass 2.
    pub const BAD: u8 = 0x8;
    /// Fragmented (for the summary's non-contiguous percentage).
    pub const FRAGMENTED: u8 = 0x10;
    /// Encrypted with a readable policy (its id is in `State::enc_policy`).
    pub const ENCRYPTED: u8 = 0x20;
    /// CASEFOLD_FL on a casefold file system: names hash (and compare)
    /// case-insensitively.
    pub const CASEFOLD: u8 = 0x40;
    /// Lies in an inode table block the bad-block list names: in use, never
    /// read (pass 4 leaves its count alone, as e2fsck does).
    pub const IN_BAD_BLOCK: u8 = 0x80;
}

/// Policy id of every encrypted inode whose version this checker does not
/// know (e2fsck takes them as sharing one policy).
pub const POLICY_UNRECOGNIZED: u32 = u32::MAX;

/// One block of a directory, as found by pass 1 while mapping the directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DirBlock {
    /// Physical block (first field: sorting gives disk order).
    pub pblk: u64,
    pub ino: u32,
    /// Logical block number in the directory.
    pub lblk: u32,
}

/// Counts for the summary line and `-v`.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub inodes_used: u64,
    pub regular: u64,
    pub directories: u64,
    pub chardev: u64,
    pub blockdev: u64,
    pub fifos: u64,
    pub sockets: u64,
    pub symlinks: u64,
    pub fast_symlinks: u64,
    pub fragmented: u64,
    pub extent_files: u64,
    pub inline_files: u64,
    pub large_files: u64,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        self.inodes_used += o.inodes_used;
        self.regular += o.regular;
        self.directories += o.directories;
        self.chardev += o.chardev;
        self.blockdev += o.blockdev;
        self.fifos += o.fifos;
        self.sockets += o.sockets;
        self.symlinks += o.symlinks;
        self.fast_symlinks += o.fast_symlinks;
        self.fragmented += o.fragmented;
        self.extent_files += o.extent_files;
        self.inline_files += o.inline_files;
        self.large_files += o.large_files;
    }
}

/// An xattr block seen by pass 1: its stored refcount and how many inodes
/// point at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct XattrBlockRef {
    pub blk: u64,
    pub refcount: u32,
    pub seen: u32,
    /// What its EA-inode entries charge to every inode referring to it.
    pub charge: EaCharge,
}

/// Space (in bytes) and inodes charged to one quota id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuotaUse {
    pub space: u64,
    pub inodes: u64,
}

/// Quota types, in the order of the superblock's quota inode fields.
pub const QUOTA_TYPES: usize = 3;

/// Usage per id, by quota type (user, group, project), as pass 1 counts it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuotaUsage {
    pub by_type: [BTreeMap<u32, QuotaUse>; QUOTA_TYPES],
}

impl QuotaUsage {
    /// Charges `space` bytes and `inodes` inodes to the ids of one inode
    /// (uid, gid, project id).
    pub fn charge(&mut self, ids: [u32; QUOTA_TYPES], space: u64, inodes: u64) {
        for (map, id) in self.by_type.iter_mut().zip(ids) {
            let u = map.entry(id).or_default();
            u.space = u.space.saturating_add(space);
            u.inodes = u.inodes.saturating_add(inodes);
        }
    }

    pub fn merge(&mut self, other: QuotaUsage) {
        for (map, o) in self.by_type.iter_mut().zip(other.by_type) {
            for (id, v) in o {
                let u = map.entry(id).or_default();
                u.space = u.space.saturating_add(v.space);
                u.inodes = u.inodes.saturating_add(v.inodes);
            }
        }
    }
}

pub struct State {
    /// log2 of blocks per cluster: the three block maps below are indexed
    /// by cluster (`cluster`), which is the block itself without bigalloc.
    pub cluster_bits: u32,
    /// Blocks in use: file system metadata and every block an inode claims.
    pub block_used: AtomicBitmap,
    /// Blocks claimed more than once (for pass 1B).
    pub block_dup: AtomicBitmap,
    /// File system metadata (superblock and descriptor copies, reserved GDT
    /// blocks, bitmaps, inode tables): pass 1B names it as an owner.
    pub block_meta: AtomicBitmap,
    /// Indexed by inode number (bit 0 unused): in use per pass 1.
    pub inode_used: AtomicBitmap,
    pub inode_dir: AtomicBitmap,
    pub inode_reg: AtomicBitmap,
    /// Inodes whose block map (and xattr block) pass 1 walked: pass 1B
    /// walks exactly these again.
    pub inode_mapped: AtomicBitmap,
    /// `FileType as u8` by inode number; 0 for unused inodes.
    pub ftype: Vec<u8>,
    /// i_links_count by inode number.
    pub i_links: Vec<u16>,
    /// `iflag` bits by inode number.
    pub iflags: Vec<u8>,
    /// References found in directories (pass 2), by inode number.
    pub links_seen: LinkCounts,
    /// Directory blocks, sorted by physical block.
    pub dir_blocks: Vec<DirBlock>,
    /// Directories in use, sorted; `dir_parent`/`dir_dotdot` are parallel.
    pub dirs: Vec<u32>,
    /// The directory holding the (first) entry that names this directory; 0 if none.
    pub dir_parent: Vec<u32>,
    /// The inode the directory's '..' entry points at; 0 if missing.
    pub dir_dotdot: Vec<u32>,
    /// i_generation of each directory in `dirs` (parallel), for the seed of
    /// directory block checksums. Pass 1 may leave it empty; pass 2 then
    /// reads the directory inodes itself.
    pub dir_gen: Vec<u32>,
    /// The inode named "lost+found" in the root directory (pass 2); 0 if none.
    pub lost_found: u32,
    /// Xattr blocks referenced by inodes, sorted by block.
    pub xattr_blocks: Vec<XattrBlockRef>,
    /// (EA inode, xattr entries referring to it), sorted; ea_inode only.
    pub ea_inode_refs: Vec<(u32, u64)>,
    /// Quota usage computed by pass 1; None without the quota feature.
    pub quota: Option<QuotaUsage>,
    /// Pass 1B: every inode mapping a multiply-claimed block, in inode
    /// order, with those blocks in map order (repeats kept). Empty when no
    /// block is shared.
    pub dup_owners: Vec<(u32, Vec<u64>)>,
    /// (inode, encryption policy id) of the inodes flagged `ENCRYPTED`,
    /// sorted; equal ids mean equal policies.
    pub enc_policy: Vec<(u32, u32)>,
    pub stats: Stats,
}

impl State {
    pub fn new(blocks_count: u64, inodes_count: u32) -> State {
        State::with_clusters(blocks_count, inodes_count, 0)
    }

    /// A state whose block maps have one bit per cluster of 2^`bits` blocks.
    pub fn with_clusters(blocks_count: u64, inodes_count: u32, bits: u32) -> State {
        let n = inodes_count as usize + 1;
        let clusters = blocks_count.div_ceil(1 << bits);
        State {
            cluster_bits: bits,
            block_used: AtomicBitmap::new(clusters),
            block_dup: AtomicBitmap::new(clusters),
            block_meta: AtomicBitmap::new(clusters),
            inode_used: AtomicBitmap::new(n as u64),
            inode_dir: AtomicBitmap::new(n as u64),
            inode_reg: AtomicBitmap::new(n as u64),
            inode_mapped: AtomicBitmap::new(n as u64),
            ftype: vec![0; n],
            i_links: vec![0; n],
            iflags: vec![0; n],
            links_seen: LinkCounts::new(n),
            dir_blocks: Vec::new(),
            dirs: Vec::new(),
            dir_parent: Vec::new(),
            dir_dotdot: Vec::new(),
            dir_gen: Vec::new(),
            lost_found: 0,
            xattr_blocks: Vec::new(),
            ea_inode_refs: Vec::new(),
            quota: None,
            dup_owners: Vec::new(),
            enc_policy: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// Index of directory `ino` in `dirs`, if it is one.
    pub fn dir_index(&self, ino: u32) -> Option<usize> {
        self.dirs.binary_search(&ino).ok()
    }

    /// How many xattr entries refer to EA inode `ino`.
    pub fn ea_refs(&self, ino: u32) -> u64 {
        self.ea_inode_refs
            .binary_search_by_key(&ino, |&(i, _)| i)
            .map_or(0, |k| self.ea_inode_refs[k].1)
    }

    /// The encryption policy id of inode `ino`; None when it is not
    /// encrypted (or its policy could not be read).
    pub fn policy(&self, ino: u32) -> Option<u32> {
        if !self.has_iflag(ino, iflag::ENCRYPTED) {
            return None;
        }
        self.enc_policy
            .binary_search_by_key(&ino, |&(i, _)| i)
            .ok()
            .map(|k| self.enc_policy[k].1)
    }

    pub fn has_iflag(&self, ino: u32, f: u8) -> bool {
        self.iflags.get(ino as usize).is_some_and(|v| v & f != 0)
    }

    /// The index of block `blk` in the block maps.
    pub fn cluster(&self, blk: u64) -> u64 {
        blk >> self.cluster_bits
    }

    /// Claims `blk` (its cluster) for a file; returns false (and marks it
    /// as duplicate) if it was already claimed.
    pub fn claim_block(&self, blk: u64) -> bool {
        let c = self.cluster(blk);
        if self.block_used.set(c) {
            self.block_dup.set(c);
            false
        } else {
            true
        }
    }
}
