//! What a number is: an inode, a physical block, a cluster, a group or a
//! logical block of a file.
//!
//! ext4 counts five different things with bare integers, and with bigalloc
//! two of them (blocks and clusters) share a type and differ by a shift:
//! a map indexed by clusters set with a block number compiles, and marks a
//! stranger cluster. These wrappers make each conversion a named call
//! that says what it needs (the cluster shift, the inodes per group).
//! There is deliberately no `From<u64>` in either direction: building one
//! from a raw number is `Blk(n)`, visible at the call, and reading it back
//! is `.0` or `get()`, and neither happens by accident in arithmetic.
//!
//! Display prints the bare number, so messages keep e2fsck's wording.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

macro_rules! number {
    ($(#[$doc:meta])* $name:ident($raw:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(transparent)]
        pub struct $name(pub $raw);

        impl $name {
            /// The bare number (for on-disk fields and messages).
            pub const fn get(self) -> $raw {
                self.0
            }

            /// The one after this one.
            pub const fn next(self) -> $name {
                $name(self.0 + 1)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        /// Moving forward by a count of the same unit.
        impl Add<$raw> for $name {
            type Output = $name;
            fn add(self, n: $raw) -> $name {
                $name(self.0 + n)
            }
        }

        impl AddAssign<$raw> for $name {
            fn add_assign(&mut self, n: $raw) {
                self.0 += n;
            }
        }

        /// How many units lie between two numbers.
        impl Sub for $name {
            type Output = $raw;
            fn sub(self, o: $name) -> $raw {
                self.0 - o.0
            }
        }
    };
}

number!(
    /// An inode number: 1-based, 0 meaning none (as in directory entries).
    Ino(u32)
);
number!(
    /// A physical block number: the unit of the device, of staged writes
    /// and of block maps in inodes.
    Blk(u64)
);
number!(
    /// A cluster number: the unit of the block bitmaps and the in-use maps
    /// (the block itself without bigalloc, where the shift is 0).
    Cluster(u64)
);
number!(
    /// A block group number.
    Group(u32)
);
number!(
    /// A logical block of a file (its offset in blocks).
    LBlk(u32)
);

impl Blk {
    /// The first block a 32-bit block pointer (indirect maps, direct
    /// pointers in the inode) cannot name.
    pub const PTR32_END: Blk = Blk(1 << 32);

    /// The cluster holding this block, `cluster_bits` being log2 of the
    /// blocks per cluster (`Geometry::cluster_bits`).
    pub const fn cluster(self, cluster_bits: u32) -> Cluster {
        Cluster(self.0 >> cluster_bits)
    }

    /// Where this block lies in its cluster (0 without bigalloc).
    pub const fn in_cluster(self, cluster_bits: u32) -> u64 {
        self.0 & ((1 << cluster_bits) - 1)
    }

    /// Its first byte on the device, for blocks of `block_size` bytes.
    pub fn byte(self, block_size: u32) -> u64 {
        self.0 * u64::from(block_size)
    }

    /// The number as a 32-bit block pointer (indirect maps), when it fits.
    pub fn ptr32(self) -> Option<u32> {
        u32::try_from(self.0).ok()
    }
}

impl Cluster {
    /// Its first block.
    pub const fn first_block(self, cluster_bits: u32) -> Blk {
        Blk(self.0 << cluster_bits)
    }

    /// Its blocks, [first, first of the next).
    pub const fn blocks(self, cluster_bits: u32) -> std::ops::Range<Blk> {
        Blk(self.0 << cluster_bits)..Blk((self.0 + 1) << cluster_bits)
    }
}

impl Ino {
    /// No inode: an unused directory entry, a missing parent.
    pub const NONE: Ino = Ino(0);
    /// The bad blocks inode: its map lists the unusable blocks.
    pub const BAD: Ino = Ino(1);
    /// The root directory.
    pub const ROOT: Ino = Ino(2);
    /// The user quota file of the old layout (before the quota feature
    /// named its inodes in the superblock).
    pub const USR_QUOTA: Ino = Ino(3);
    /// The group quota file of the old layout.
    pub const GRP_QUOTA: Ino = Ino(4);
    /// The boot loader inode.
    pub const BOOT_LOADER: Ino = Ino(5);
    /// The undelete directory inode (reserved, never used).
    pub const UNDEL_DIR: Ino = Ino(6);
    /// The resize inode: the blocks reserved for the descriptors of
    /// online growth.
    pub const RESIZE: Ino = Ino(7);
    /// The internal journal.
    pub const JOURNAL: Ino = Ino(8);
    /// The exclude bitmap inode (reserved).
    pub const EXCLUDE: Ino = Ino(9);
    /// The replica inode (reserved).
    pub const REPLICA: Ino = Ino(10);
    /// The first inode a revision 0 file system does not reserve (a later
    /// revision stores its own in s_first_ino, never below this): where
    /// mke2fs puts lost+found.
    pub const GOOD_OLD_FIRST: Ino = Ino(11);

    /// The group holding this inode, for `inodes_per_group` inodes a group.
    pub const fn group(self, inodes_per_group: u32) -> Group {
        Group(self.0.saturating_sub(1) / inodes_per_group)
    }

    /// Its index in its group's inode table (and inode bitmap).
    pub const fn index_in_group(self, inodes_per_group: u32) -> u32 {
        self.0.saturating_sub(1) % inodes_per_group
    }

    /// Its index in tables kept by inode number (entry 0 unused).
    pub fn index(self) -> usize {
        crate::narrow::to_usize(u64::from(self.0))
    }

    /// Its bit in the in-use maps of inodes, which are indexed by the
    /// inode number itself (bit 0 unused).
    pub fn bit(self) -> u64 {
        u64::from(self.0)
    }
}

impl Group {
    /// Its index in per-group tables: the descriptors, per-group lists.
    pub fn index(self) -> usize {
        crate::narrow::to_usize(u64::from(self.0))
    }
}

impl LBlk {
    /// The logical cluster holding this block.
    pub const fn cluster(self, cluster_bits: u32) -> u32 {
        self.0 >> cluster_bits
    }

    /// Where this block lies in its logical cluster.
    pub fn in_cluster(self, cluster_bits: u32) -> u64 {
        u64::from(self.0) & ((1 << cluster_bits) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_clusters_convert_by_the_shift() {
        let b = Blk(0x1234);
        assert_eq!(b.cluster(4), Cluster(0x123));
        assert_eq!(b.in_cluster(4), 4);
        assert_eq!(b.cluster(0), Cluster(0x1234));
        assert_eq!(Cluster(0x123).first_block(4), Blk(0x1230));
        assert_eq!(Cluster(2).blocks(2), Blk(8)..Blk(12));
        assert_eq!(Blk(3).byte(4096), 3 * 4096);
        assert_eq!(Blk(1 << 32).ptr32(), None);
        assert_eq!(LBlk(17).cluster(4), 1);
        assert_eq!(LBlk(17).in_cluster(4), 1);
    }

    #[test]
    fn inodes_map_to_groups() {
        assert_eq!(Ino(1).group(8), Group(0));
        assert_eq!(Ino(8).group(8), Group(0));
        assert_eq!(Ino(9).group(8), Group(1));
        assert_eq!(Ino(9).index_in_group(8), 0);
        assert_eq!(Group(3).index(), 3);
        assert_eq!(Ino(12).bit(), 12);
    }

    #[test]
    fn arithmetic_stays_in_the_unit() {
        let mut b = Blk(10);
        b += 5;
        assert_eq!(b + 1, Blk(16));
        assert_eq!(Blk(16) - Blk(10), 6);
        assert_eq!(Cluster(3).next(), Cluster(4));
        assert_eq!(format!("{} {}", Ino(11), Group(2)), "11 2");
    }
}
