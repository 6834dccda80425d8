//! The file system handle and the write library.
//!
//! `Fs` is the file system as the passes see it: the device, the
//! superblock in use, its validated geometry and the group descriptors.
//! Beside it, everything a fix needs to change the file system, each in
//! one place, all writing into a [`Stage`] (a repair's `Overlay`, or the
//! in-memory blocks of the orphan view) and never to the device:
//!
//! - [`alloc`]: the one block allocator (clusters with bigalloc; blocks
//!   staged or taken earlier in the same repair are never handed out);
//! - [`edit`]: blocks and byte ranges read through the staged writes,
//!   inodes read and edited with their checksum, the superblock and group
//!   descriptors edited with theirs;
//! - [`extent`]: extent trees built from runs of blocks;
//! - [`extent_append`]: extent trees grown extent by extent as libext2fs
//!   grows them (e2fsck's rewrite of an extent list);
//! - [`summary`]: the pass 5 summary (bitmaps, counts, flags, checksums)
//!   rewritten from what the passes found.
//!
//! Encoding the structures (field offsets, entry and node layouts,
//! checksums) is `fs/`'s, without I/O; this module adds where they live
//! and how they are staged.

pub mod alloc;
pub mod edit;
pub mod extent;
pub mod extent_append;
pub mod map;
pub mod stage;
pub mod stats;
pub mod summary;

pub use alloc::Allocator;
pub use map::{ClusterMap, InodeCounts, InodeMap};
pub use stage::{Blocks, Stage};

use crate::error::Result;
use crate::fs::geometry::Geometry;
use crate::fs::group_desc::{self, GroupDesc};
use crate::fs::num::{Blk, Group, Ino};
use crate::fs::superblock::Superblock;
use crate::io::Device;
use crate::narrow::to_usize;

pub struct Fs {
    pub dev: Device,
    pub sb: Superblock,
    /// Block number (in file system blocks) of the superblock in use: 0/1
    /// for the primary, a group's first block for a backup.
    pub sb_block: u64,
    pub geo: Geometry,
    pub gds: Vec<GroupDesc>,
    /// The raw descriptors, `desc_size` bytes each, for checksums.
    pub gd_raw: Vec<u8>,
    pub csum_seed: u32,
    /// The run's time (`check::Options::clock`): what a repair stamps.
    pub clock: crate::engine::Clock,
}

impl Fs {
    pub fn block_size(&self) -> usize {
        self.geo.block_len()
    }

    pub fn metadata_csum(&self) -> bool {
        self.sb.metadata_csum()
    }

    /// Reads block `blk` into a new buffer.
    pub fn read_block(&self, blk: u64) -> Result<Vec<u8>> {
        let mut b = vec![0u8; self.block_size()];
        self.read_block_into(blk, &mut b)?;
        Ok(b)
    }

    pub fn read_block_into(&self, blk: u64, buf: &mut [u8]) -> Result<()> {
        let off = blk.saturating_mul(u64::from(self.geo.block_size));
        self.dev.read_at(off, buf)
    }

    /// Reads `buf.len() / block_size` consecutive blocks starting at `blk`.
    pub fn read_blocks(&self, blk: u64, buf: &mut [u8]) -> Result<()> {
        self.read_block_into(blk, buf)
    }

    /// `read_blocks` if the blocks are in the page cache already
    /// (`Device::read_cached`: otherwise how much of them it holds).
    pub fn read_blocks_cached(&self, blk: u64, buf: &mut [u8]) -> Result<crate::io::FromCache> {
        let off = blk.saturating_mul(u64::from(self.geo.block_size));
        self.dev.read_cached(off, buf)
    }

    /// Group `g`'s descriptor; None past the last group.
    pub fn gd(&self, g: Group) -> Option<&GroupDesc> {
        self.gds.get(g.index())
    }

    /// Group `g`'s descriptor, for a group the caller knows exists (one
    /// below `geo.groups`); past the last group this panics, as indexing.
    pub fn gd_at(&self, g: Group) -> &GroupDesc {
        &self.gds[g.index()]
    }

    pub fn gd_raw(&self, g: u32) -> &[u8] {
        let ds = self.geo.desc_len();
        let start = Group(g).index() * ds;
        self.gd_raw.get(start..start + ds).unwrap_or(&[])
    }

    pub fn gd_checksum_ok(&self, g: u32) -> bool {
        match group_desc::compute_checksum(&self.sb, g, self.gd_raw(g)) {
            Some(c) => c == self.gd_at(Group(g)).checksum,
            None => true,
        }
    }

    /// Block and byte offset of inode `ino` in its group's inode table, or
    /// None if the inode number or the table location is out of range.
    pub fn inode_location(&self, ino: Ino) -> Option<(u64, usize)> {
        if ino == Ino::NONE || ino.0 > self.geo.inodes_count {
            return None;
        }
        let g = self.geo.group_of_inode(ino);
        let idx = ino.index_in_group(self.geo.inodes_per_group);
        let byte = u64::from(idx) * u64::from(self.geo.inode_size);
        let table = self.gd(Group(g))?.inode_table;
        let blk = table.checked_add(byte / u64::from(self.geo.block_size))?;
        if !self.geo.block_in_fs(blk) {
            return None;
        }
        Some((blk, to_usize(byte % u64::from(self.geo.block_size))))
    }

    /// Byte position of inode `ino` on the device, or None if the inode
    /// number or its table's location is out of range.
    pub fn inode_offset(&self, ino: Ino) -> Option<u64> {
        let (blk, off) = self.inode_location(ino)?;
        blk.checked_mul(u64::from(self.geo.block_size))?
            .checked_add(off as u64)
    }

    /// Reads the raw bytes of inode `ino`.
    pub fn read_inode_raw(&self, ino: Ino) -> Result<Vec<u8>> {
        let Some(pos) = self.inode_offset(ino) else {
            return Err(crate::error::Error::Corrupt(format!(
                "inode {ino} has no valid location"
            )));
        };
        let mut b = vec![0u8; self.geo.inode_len()];
        self.dev.read_at(pos, &mut b)?;
        Ok(b)
    }

    /// The block holding the primary superblock (0 or 1).
    pub fn primary_sb_block(&self) -> u64 {
        crate::fs::superblock::SUPERBLOCK_OFFSET / u64::from(self.geo.block_size)
    }

    /// Every block of group `g`'s own metadata that lies inside the file
    /// system: superblock and descriptor copies, reserved GDT blocks, the
    /// two bitmaps and the inode table (which, with flex_bg, may sit in
    /// another group).
    pub fn group_metadata_blocks(&self, g: u32) -> impl Iterator<Item = u64> + '_ {
        let geo = &self.geo;
        let count = geo.blocks_count;
        let sb_gdt = geo
            .group_super_and_gdt(g)
            .into_iter()
            .flat_map(move |(start, len)| start..start.saturating_add(len).min(count));
        let gd = self.gd(Group(g));
        let bitmaps = gd
            .into_iter()
            .flat_map(|gd| [gd.block_bitmap, gd.inode_bitmap])
            .filter(|&b| geo.block_in_fs(b));
        let table = gd
            .filter(|gd| geo.block_in_fs(gd.inode_table))
            .map_or(0..0, |gd| {
                gd.inode_table
                    ..gd.inode_table
                        .saturating_add(u64::from(geo.inode_table_blocks))
                        .min(count)
            });
        sb_gdt.chain(bitmaps).chain(table)
    }

    /// The blocks that read as in use because of the groups `uninit`
    /// names (BLOCK_UNINIT groups): their superblock and descriptor
    /// copies, reserved GDT blocks, bitmaps and inode table, by cluster
    /// (as the block bitmaps). Pass 5 and the summary rewrite each say
    /// which flags they trust.
    pub fn uninit_view(&self, uninit: impl Fn(u32) -> bool) -> Option<ClusterMap> {
        let geo = &self.geo;
        let groups: Vec<u32> = (0..geo.groups).filter(|&g| uninit(g)).collect();
        if groups.is_empty() {
            return None;
        }
        let map = ClusterMap::new(geo.clusters_count());
        for g in groups {
            for b in self.group_metadata_blocks(g) {
                map.set(Blk(b).cluster(geo.cluster_bits));
            }
        }
        Some(map)
    }

    /// Do group descriptors carry uninit flags that must be honoured?
    pub fn uninit_bg(&self) -> bool {
        self.sb.group_desc_csum()
    }

    /// Number of inodes of group `g` that pass 1 must read: all of them,
    /// or up to the itable_unused mark, or none for an INODE_UNINIT group.
    pub fn inodes_to_scan(&self, g: u32) -> u32 {
        let ipg = self.geo.inodes_per_group;
        if !self.uninit_bg() {
            return ipg;
        }
        let gd = self.gd_at(Group(g));
        if gd.has_flag(group_desc::BG_INODE_UNINIT) {
            return 0;
        }
        ipg.saturating_sub(gd.itable_unused.min(ipg))
    }
}
