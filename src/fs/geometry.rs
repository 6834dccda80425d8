//! Numbers derived from the superblock, validated once so that every later
//! computation on them is in range: group counts, where each group starts,
//! where superblock and descriptor copies live.

use super::num::Ino;
use super::superblock::{Superblock, compat, incompat, ro_compat};

#[derive(Clone, Debug)]
pub struct Geometry {
    pub block_size: u32,
    pub blocks_count: u64,
    pub first_data_block: u64,
    pub blocks_per_group: u32,
    pub inodes_per_group: u32,
    pub inodes_count: u32,
    pub inode_size: u32,
    pub groups: u32,
    pub desc_size: u32,
    pub desc_per_block: u32,
    /// Blocks holding the group descriptor table (without reserved blocks).
    pub desc_blocks: u32,
    pub inode_table_blocks: u32,
    pub first_ino: u32,
    pub meta_bg: bool,
    pub first_meta_bg: u32,
    pub reserved_gdt_blocks: u32,
    pub sparse_super: bool,
    pub sparse_super2: Option<[u32; 2]>,
    pub flex_bg_size: u64,
    /// log2 of blocks per cluster (bigalloc); 0 otherwise. Block bitmaps,
    /// the descriptors' free counts and allocation work in clusters.
    pub cluster_bits: u32,
}

impl Geometry {
    /// Validates the superblock's shape. The error names the bad field so the
    /// caller can try a backup superblock.
    pub fn new(sb: &Superblock) -> Result<Geometry, String> {
        Geometry::build(sb, true)
    }

    /// As [`Geometry::new`], but an inodes count that is not the groups
    /// times the inodes per group is replaced by that product (e2fsck's
    /// "load the superblock despite errors", whose only leniency is this
    /// count); the caller reports and fixes the stored value.
    pub fn despite_inodes_count(sb: &Superblock) -> Result<Geometry, String> {
        Geometry::build(sb, false)
    }

    /// With meta_bg, a first meta group beyond the descriptor blocks
    /// (libext2fs refuses it unless told to overlook superblock errors).
    pub fn first_meta_bg_too_big(&self) -> bool {
        self.meta_bg && self.first_meta_bg > self.desc_blocks
    }

    /// `strict`: refuse what libext2fs refuses to open; otherwise overlook
    /// what e2fsck overlooks when it loads the superblock despite errors
    /// (the inodes count, first_meta_bg), which pass 0 then reports.
    fn build(sb: &Superblock, strict: bool) -> Result<Geometry, String> {
        let bs = sb
            .block_size()
            .ok_or_else(|| format!("invalid block size (log {})", sb.log_block_size))?;
        let cluster_bits = if sb.has_ro_compat(ro_compat::BIGALLOC) {
            // A cluster of 2^n blocks, up to 2^16 (e2fsprogs' limit), with
            // groups of whole clusters.
            match sb.log_cluster_size.checked_sub(sb.log_block_size) {
                Some(n) if n <= 16 => n,
                _ => {
                    return Err(format!(
                        "cluster size (log {}) is invalid",
                        sb.log_cluster_size
                    ));
                }
            }
        } else {
            // Without bigalloc libext2fs refuses a cluster size other than
            // the block size, and groups of clusters other than of blocks
            // (ext2fs_open2: "The ext2 superblock is corrupt"), and e2fsck
            // then looks for a backup.
            if sb.log_cluster_size != sb.log_block_size {
                return Err(format!(
                    "cluster size (log {}) differs from the block size without bigalloc",
                    sb.log_cluster_size
                ));
            }
            if sb.clusters_per_group != sb.blocks_per_group {
                return Err(format!(
                    "clusters per group {} differs from blocks per group {} without bigalloc",
                    sb.clusters_per_group, sb.blocks_per_group
                ));
            }
            0
        };
        let bits = u64::from(bs) * 8;
        let per_bitmap = if cluster_bits > 0 {
            if sb.clusters_per_group == 0
                || u64::from(sb.clusters_per_group) > bits
                || u64::from(sb.clusters_per_group) << cluster_bits
                    != u64::from(sb.blocks_per_group)
            {
                return Err(format!(
                    "clusters per group {} is invalid",
                    sb.clusters_per_group
                ));
            }
            u64::from(sb.blocks_per_group)
        } else {
            bits
        };
        if sb.blocks_per_group == 0 || u64::from(sb.blocks_per_group) > per_bitmap {
            return Err(format!(
                "blocks per group {} is invalid",
                sb.blocks_per_group
            ));
        }
        let ipg_invalid = || {
            Err(format!(
                "inodes per group {} is invalid",
                sb.inodes_per_group
            ))
        };
        if sb.inodes_per_group == 0 || (strict && u64::from(sb.inodes_per_group) > bits) {
            return ipg_invalid();
        }
        let inode_size = sb.inode_size();
        if inode_size < 128 || inode_size > bs || !inode_size.is_power_of_two() {
            return Err(format!("inode size {inode_size} is invalid"));
        }
        // Overlooking superblock errors, libext2fs bounds the inode
        // table's blocks per group by its most inodes per group (a bound
        // of another unit, but the one it applies), not the inodes by one
        // bitmap block: pass 0 stops before any pass reads such a group
        // (`check::superblock`).
        let per_block = u64::from(bs / inode_size);
        let itable =
            (u64::from(sb.inodes_per_group) * u64::from(inode_size)).div_ceil(u64::from(bs));
        if itable > (1 << 16) - per_block {
            return ipg_invalid();
        }
        let fdb = u64::from(sb.first_data_block);
        let expect_fdb = if bs == 1024 { 1 } else { 0 };
        if fdb != expect_fdb && fdb >= sb.blocks_count {
            return Err(format!("first data block {fdb} is invalid"));
        }
        if sb.blocks_count <= fdb {
            return Err(format!("block count {} is invalid", sb.blocks_count));
        }
        let groups64 = (sb.blocks_count - fdb).div_ceil(u64::from(sb.blocks_per_group));
        let groups = match u32::try_from(groups64) {
            Ok(g) if g > 0 => g,
            _ => return Err(format!("group count {groups64} is invalid")),
        };
        let ic = u64::from(groups) * u64::from(sb.inodes_per_group);
        let inodes_count = match u32::try_from(ic) {
            Ok(n) if n == sb.inodes_count || !strict => n,
            _ => {
                return Err(format!(
                    "inodes count {} is not {} groups x {} inodes",
                    sb.inodes_count, groups, sb.inodes_per_group
                ));
            }
        };
        let desc_size = match sb.desc_size() {
            s if !sb.is_64bit() || ((64..=1024).contains(&s) && s.is_power_of_two()) => s,
            // Overlooking superblock errors, libext2fs takes a smaller
            // power of two as it is and its check of the descriptors
            // passes when there is one group: that descriptor is read in
            // place with a 32-byte one's fields (no high halves), and only
            // its checksum covers fewer bytes (`group_desc::compute_checksum`).
            // With more groups the others are read at the wrong places.
            s if !strict && groups == 1 && s != 0 && s < 64 && s.is_power_of_two() => 32,
            s => return Err(format!("group descriptor size {s} is invalid")),
        };
        let desc_per_block = bs / desc_size;
        let desc_blocks = groups.div_ceil(desc_per_block);
        if strict && sb.has_incompat(incompat::META_BG) && sb.first_meta_bg > desc_blocks {
            return Err(format!(
                "first meta_bg {} is beyond the {desc_blocks} descriptor blocks",
                sb.first_meta_bg
            ));
        }
        // inode_size <= bs (checked above): at most inodes_per_group.
        #[allow(clippy::cast_possible_truncation)]
        let inode_table_blocks =
            (u64::from(sb.inodes_per_group) * u64::from(inode_size)).div_ceil(u64::from(bs)) as u32;
        // A first inode out of range is not a reason to look for a backup
        // (libext2fs opens the superblock); pass 0 stops on it as e2fsck's
        // check of the superblock's values does, before any pass uses it.
        let first_ino = sb.first_ino();
        // libext2fs refuses a flex group size it cannot shift by, flex_bg
        // or not, and e2fsck then looks for a backup.
        if sb.log_groups_per_flex >= 32 {
            return Err(format!(
                "log groups per flex {} is invalid",
                sb.log_groups_per_flex
            ));
        }
        let flex_bg_size = if sb.has_incompat(incompat::FLEX_BG) {
            1u64 << sb.log_groups_per_flex
        } else {
            1
        };
        Ok(Geometry {
            block_size: bs,
            blocks_count: sb.blocks_count,
            first_data_block: fdb,
            blocks_per_group: sb.blocks_per_group,
            inodes_per_group: sb.inodes_per_group,
            inodes_count,
            inode_size,
            groups,
            desc_size,
            desc_per_block,
            desc_blocks,
            inode_table_blocks,
            first_ino,
            meta_bg: sb.has_incompat(incompat::META_BG),
            first_meta_bg: sb.first_meta_bg,
            reserved_gdt_blocks: u32::from(sb.reserved_gdt_blocks),
            sparse_super: sb.has_ro_compat(ro_compat::SPARSE_SUPER),
            sparse_super2: if sb.has_compat(compat::SPARSE_SUPER2) {
                Some(sb.backup_bgs)
            } else {
                None
            },
            flex_bg_size,
            cluster_bits,
        })
    }

    /// The cluster holding block `blk`.
    pub fn cluster_of(&self, blk: u64) -> u64 {
        blk >> self.cluster_bits
    }

    /// Clusters in a group: the bits of its block bitmap and the unit of
    /// the descriptors' free counts (blocks without bigalloc).
    pub fn clusters_per_group(&self) -> u32 {
        self.blocks_per_group >> self.cluster_bits
    }

    /// A block's size as the length of a buffer.
    pub fn block_len(&self) -> usize {
        crate::narrow::to_usize(u64::from(self.block_size))
    }

    /// An inode's size (in the inode table) as the length of a buffer.
    pub fn inode_len(&self) -> usize {
        crate::narrow::to_usize(u64::from(self.inode_size))
    }

    /// A group descriptor's size as the length of a slice.
    pub fn desc_len(&self) -> usize {
        crate::narrow::to_usize(u64::from(self.desc_size))
    }

    /// Bytes of a block bitmap that hold the group's bits: what its
    /// checksum covers (the rest of the block is padding).
    pub fn block_bitmap_bytes(&self) -> usize {
        crate::narrow::to_usize(u64::from(self.clusters_per_group() / 8))
            .min(crate::narrow::to_usize(u64::from(self.block_size)))
    }

    /// Bytes of an inode bitmap that hold the group's bits, as
    /// `block_bitmap_bytes`.
    pub fn inode_bitmap_bytes(&self) -> usize {
        crate::narrow::to_usize(u64::from(self.inodes_per_group / 8))
            .min(crate::narrow::to_usize(u64::from(self.block_size)))
    }

    /// 512-byte sectors in a block: the unit of i_blocks (without
    /// HUGE_FILE). Blocks are 1 KiB at least, so this is exact.
    pub fn block_sectors(&self) -> u64 {
        u64::from(self.block_size / 512)
    }

    /// Sectors in a cluster: what one allocation adds to i_blocks (a
    /// block's without bigalloc).
    pub fn cluster_sectors(&self) -> u64 {
        self.block_sectors() << self.cluster_bits
    }

    /// What one cluster adds to i_blocks: its sectors, or its blocks in
    /// an inode with the HUGE_FILE flag (on a huge_file file system).
    pub fn i_blocks_per_cluster(&self, huge: bool) -> u64 {
        if huge {
            1 << self.cluster_bits
        } else {
            self.cluster_sectors()
        }
    }

    /// Clusters in the file system (the last one may be partial).
    pub fn clusters_count(&self) -> u64 {
        self.blocks_count.div_ceil(1 << self.cluster_bits)
    }

    pub fn group_first_block(&self, g: u32) -> u64 {
        self.first_data_block + u64::from(g) * u64::from(self.blocks_per_group)
    }

    pub fn group_last_block(&self, g: u32) -> u64 {
        (self.group_first_block(g) + u64::from(self.blocks_per_group) - 1)
            .min(self.blocks_count - 1)
    }

    // At most blocks_per_group, a u32.
    #[allow(clippy::cast_possible_truncation)]
    pub fn group_blocks(&self, g: u32) -> u32 {
        (self.group_last_block(g) - self.group_first_block(g) + 1) as u32
    }

    /// The group of `blk`; u32::MAX (no group) for a block so far past the
    /// end that its group would not fit.
    pub fn group_of_block(&self, blk: u64) -> u32 {
        u32::try_from(blk.saturating_sub(self.first_data_block) / u64::from(self.blocks_per_group))
            .unwrap_or(u32::MAX)
    }

    pub fn group_of_inode(&self, ino: Ino) -> u32 {
        ino.group(self.inodes_per_group).0
    }

    /// Does group `g` hold a backup of the superblock (and descriptors)?
    pub fn group_has_super(&self, g: u32) -> bool {
        if g == 0 {
            return true;
        }
        if let Some(bgs) = self.sparse_super2 {
            return g == bgs[0] || g == bgs[1];
        }
        if !self.sparse_super || g == 1 {
            return true;
        }
        if g.is_multiple_of(2) {
            return false;
        }
        is_power_of(g, 3) || is_power_of(g, 5) || is_power_of(g, 7)
    }

    /// Blocks of group `g` taken by the superblock copy, the descriptor
    /// table copy and the reserved GDT blocks, as (first, count) runs.
    pub fn group_super_and_gdt(&self, g: u32) -> Vec<(u64, u64)> {
        let mut runs = Vec::new();
        let start = self.group_first_block(g);
        let has_super = self.group_has_super(g);
        let mut next = start;
        if has_super {
            // 1 KiB blocks with bigalloc start group 0 at block 0, but the
            // superblock is still block 1: the boot block and the
            // superblock come first, the descriptors after them.
            let len = if start == 0 && self.block_size == 1024 {
                2
            } else {
                1
            };
            runs.push((start, len));
            next = start + len;
        }
        // For 1 KiB blocks group 0 starts at block 1; block 0 (boot) belongs
        // to no group. For larger blocks the superblock shares block 0.
        let old_desc = if self.meta_bg {
            u64::from(self.first_meta_bg.min(self.desc_blocks))
        } else {
            u64::from(self.desc_blocks) + u64::from(self.reserved_gdt_blocks)
        };
        let meta_group = g / self.desc_per_block;
        if !self.meta_bg || meta_group < self.first_meta_bg {
            if has_super && old_desc > 0 {
                runs.push((next, old_desc));
            }
        } else {
            let idx = g % self.desc_per_block;
            if idx == 0 || idx == 1 || idx == self.desc_per_block - 1 {
                runs.push((next, 1));
            }
        }
        runs
    }

    /// Number of blocks that `group_super_and_gdt` reports for `g`.
    pub fn group_overhead(&self, g: u32) -> u64 {
        self.group_super_and_gdt(g).iter().map(|r| r.1).sum()
    }

    /// Block holding descriptor block `i` of the table whose superblock is at
    /// `sb_block` (the primary or a backup group's first block).
    pub fn desc_block_location(&self, sb_block: u64, i: u32) -> u64 {
        let bg = i.saturating_mul(self.desc_per_block);
        if self.meta_bg && i >= self.first_meta_bg {
            // 1 KiB blocks with bigalloc start group 0 at block 0, where
            // the superblock is block 1: the descriptors follow it.
            let start = match self.group_first_block(bg) {
                0 if self.block_size == 1024 => 1,
                b => b,
            };
            start + u64::from(self.group_has_super(bg))
        } else {
            sb_block + 1 + u64::from(i)
        }
    }

    pub fn block_in_fs(&self, blk: u64) -> bool {
        blk >= self.first_data_block && blk < self.blocks_count
    }

    /// Inodes per block of the inode table.
    pub fn inodes_per_block(&self) -> u32 {
        self.block_size / self.inode_size
    }
}

fn is_power_of(mut n: u32, base: u32) -> bool {
    while n > 1 {
        if !n.is_multiple_of(base) {
            return false;
        }
        n /= base;
    }
    n == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_groups() {
        let g = Geometry {
            block_size: 4096,
            blocks_count: 1 << 30,
            first_data_block: 0,
            blocks_per_group: 32768,
            inodes_per_group: 8192,
            inodes_count: 0,
            inode_size: 256,
            groups: 32768,
            desc_size: 64,
            desc_per_block: 64,
            desc_blocks: 512,
            inode_table_blocks: 512,
            first_ino: 11,
            meta_bg: false,
            first_meta_bg: 0,
            reserved_gdt_blocks: 0,
            sparse_super: true,
            sparse_super2: None,
            flex_bg_size: 16,
            cluster_bits: 0,
        };
        let have: Vec<u32> = (0..100).filter(|&x| g.group_has_super(x)).collect();
        assert_eq!(have, vec![0, 1, 3, 5, 7, 9, 25, 27, 49, 81]);
    }

    /// 1 KiB blocks, bigalloc, meta_bg: group 0 starts at block 0 and its
    /// descriptors come after the superblock in block 1, where
    /// `group_super_and_gdt` places them too (seed fz36, damage 14388:
    /// the repair wrote group 0's descriptor over the superblock).
    #[test]
    fn meta_bg_descriptors_follow_the_superblock_on_1k_bigalloc() {
        let g = Geometry {
            block_size: 1024,
            blocks_count: 16384,
            first_data_block: 0,
            blocks_per_group: 32768,
            inodes_per_group: 4096,
            inodes_count: 4096,
            inode_size: 256,
            groups: 1,
            desc_size: 64,
            desc_per_block: 16,
            desc_blocks: 1,
            inode_table_blocks: 1024,
            first_ino: 11,
            meta_bg: true,
            first_meta_bg: 0,
            reserved_gdt_blocks: 0,
            sparse_super: true,
            sparse_super2: None,
            flex_bg_size: 16,
            cluster_bits: 2,
        };
        assert_eq!(g.desc_block_location(1, 0), 2);
        assert!(g.group_super_and_gdt(0).contains(&(2, 1)));
    }
}
