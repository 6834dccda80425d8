//! The ext2/3/4 superblock (1024 bytes at byte offset 1024 of the device).

use super::bytes::{le16, le32, put_le16, put_le32, u8_at};
use super::checksum::crc32c_raw;
use super::num::Ino;
use crate::narrow::{hi8, lo32};

pub const SUPERBLOCK_OFFSET: u64 = 1024;
pub const SUPERBLOCK_SIZE: usize = 1024;
pub const EXT2_MAGIC: u16 = 0xEF53;
/// Where s_magic lies in the superblock.
pub const MAGIC_AT: usize = 0x38;
/// `s_creator_os` of a file system made by the GNU Hurd.
pub const OS_HURD: u32 = 1;

pub mod compat {
    pub const DIR_PREALLOC: u32 = 0x1;
    pub const IMAGIC_INODES: u32 = 0x2;
    pub const HAS_JOURNAL: u32 = 0x4;
    pub const EXT_ATTR: u32 = 0x8;
    pub const RESIZE_INODE: u32 = 0x10;
    pub const DIR_INDEX: u32 = 0x20;
    pub const LAZY_BG: u32 = 0x40;
    pub const EXCLUDE_BITMAP: u32 = 0x100;
    pub const SPARSE_SUPER2: u32 = 0x200;
    pub const FAST_COMMIT: u32 = 0x400;
    pub const STABLE_INODES: u32 = 0x800;
    pub const ORPHAN_FILE: u32 = 0x1000;
}

pub mod ro_compat {
    pub const SPARSE_SUPER: u32 = 0x1;
    pub const LARGE_FILE: u32 = 0x2;
    pub const BTREE_DIR: u32 = 0x4;
    pub const HUGE_FILE: u32 = 0x8;
    pub const GDT_CSUM: u32 = 0x10;
    pub const DIR_NLINK: u32 = 0x20;
    pub const EXTRA_ISIZE: u32 = 0x40;
    pub const HAS_SNAPSHOT: u32 = 0x80;
    pub const QUOTA: u32 = 0x100;
    pub const BIGALLOC: u32 = 0x200;
    pub const METADATA_CSUM: u32 = 0x400;
    pub const REPLICA: u32 = 0x800;
    pub const READONLY: u32 = 0x1000;
    pub const PROJECT: u32 = 0x2000;
    pub const SHARED_BLOCKS: u32 = 0x4000;
    pub const VERITY: u32 = 0x8000;
    pub const ORPHAN_PRESENT: u32 = 0x10000;
}

pub mod incompat {
    pub const COMPRESSION: u32 = 0x1;
    pub const FILETYPE: u32 = 0x2;
    pub const RECOVER: u32 = 0x4;
    pub const JOURNAL_DEV: u32 = 0x8;
    pub const META_BG: u32 = 0x10;
    pub const EXTENTS: u32 = 0x40;
    pub const BIT64: u32 = 0x80;
    pub const MMP: u32 = 0x100;
    pub const FLEX_BG: u32 = 0x200;
    pub const EA_INODE: u32 = 0x400;
    pub const DIRDATA: u32 = 0x1000;
    pub const CSUM_SEED: u32 = 0x2000;
    pub const LARGEDIR: u32 = 0x4000;
    pub const INLINE_DATA: u32 = 0x8000;
    pub const ENCRYPT: u32 = 0x10000;
    pub const CASEFOLD: u32 = 0x20000;
}

/// Byte offsets (in the 1024 superblock bytes) of the fields repairs
/// write, the layout `Superblock::parse` reads.
pub mod field {
    pub const S_INODES_COUNT: usize = 0x00;
    pub const S_FREE_BLOCKS_LO: usize = 0x0C;
    pub const S_FREE_INODES: usize = 0x10;
    pub const S_MNT_COUNT: usize = 0x34;
    pub const S_STATE: usize = 0x3A;
    pub const S_MTIME: usize = 0x2C;
    pub const S_WTIME: usize = 0x30;
    pub const S_LASTCHECK: usize = 0x40;
    pub const S_REV_LEVEL: usize = 0x4C;
    pub const S_FIRST_INO: usize = 0x54;
    pub const S_UUID: usize = 0x68;
    pub const S_INODE_SIZE: usize = 0x58;
    pub const S_BLOCK_GROUP_NR: usize = 0x5A;
    pub const S_FEATURE_COMPAT: usize = 0x5C;
    pub const S_FEATURE_INCOMPAT: usize = 0x60;
    pub const S_FEATURE_RO_COMPAT: usize = 0x64;
    pub const S_PREALLOC_DIR_BLOCKS: usize = 0xCD;
    pub const S_RESERVED_GDT_BLOCKS: usize = 0xCE;
    pub const S_FIRST_META_BG: usize = 0x104;
    pub const S_JOURNAL_UUID: usize = 0xD0;
    pub const S_JOURNAL_INUM: usize = 0xE0;
    pub const S_JOURNAL_DEV: usize = 0xE4;
    pub const S_LAST_ORPHAN: usize = 0xE8;
    pub const S_JNL_BACKUP_TYPE: usize = 0xFD;
    pub const S_MKFS_TIME: usize = 0x108;
    pub const S_MMP_UPDATE_INTERVAL: usize = 0x166;
    /// s_jnl_blocks: 15 words of i_block, then the size's two halves.
    pub const S_JNL_BLOCKS: usize = 0x10C;
    pub const S_JNL_BLOCKS_LEN: usize = 68;
    pub const S_FREE_BLOCKS_HI: usize = 0x158;
    pub const S_MIN_EXTRA_ISIZE: usize = 0x15C;
    pub const S_WANT_EXTRA_ISIZE: usize = 0x15E;
    pub const S_FLAGS: usize = 0x160;
    pub const S_USR_QUOTA_INUM: usize = 0x240;
    pub const S_GRP_QUOTA_INUM: usize = 0x244;
    pub const S_PRJ_QUOTA_INUM: usize = 0x26C;
    pub const S_CHECKSUM_SEED: usize = 0x270;
    pub const S_ORPHAN_FILE_INUM: usize = 0x280;
    pub const S_WTIME_HI: usize = 0x274;
    pub const S_MTIME_HI: usize = 0x275;
    pub const S_LASTCHECK_HI: usize = 0x277;
    pub const S_CHECKSUM: usize = 0x3FC;
    /// The error record the kernel keeps (s_error_count up to
    /// s_mount_opts): counts, first and last error time, place and inode.
    pub const S_ERROR_RECORD: std::ops::Range<usize> = 0x194..0x200;
}

/// The 1024 raw bytes of a superblock, edited field by field. Checksums
/// are the caller's to redo (`set_checksum`), as only it knows whether the
/// file system it writes for has metadata_csum.
pub struct SuperblockMut<'a>(pub &'a mut [u8]);

impl SuperblockMut<'_> {
    pub fn state(&self) -> u16 {
        le16(self.0, field::S_STATE)
    }
    pub fn set_state(&mut self, v: u16) {
        put_le16(self.0, field::S_STATE, v);
    }
    pub fn set_inodes_count(&mut self, v: u32) {
        put_le32(self.0, field::S_INODES_COUNT, v);
    }
    /// The free block count; the high half only with `is_64` (64bit).
    pub fn set_free_blocks(&mut self, v: u64, is_64: bool) {
        put_le32(self.0, field::S_FREE_BLOCKS_LO, lo32(v));
        if is_64 {
            put_le32(self.0, field::S_FREE_BLOCKS_HI, (v >> 32) as u32);
        }
    }
    pub fn free_blocks(&self, is_64: bool) -> u64 {
        let hi = if is_64 {
            u64::from(le32(self.0, field::S_FREE_BLOCKS_HI))
        } else {
            0
        };
        u64::from(le32(self.0, field::S_FREE_BLOCKS_LO)) | hi << 32
    }
    pub fn free_inodes(&self) -> u32 {
        le32(self.0, field::S_FREE_INODES)
    }
    pub fn set_free_inodes(&mut self, v: u32) {
        put_le32(self.0, field::S_FREE_INODES, v);
    }
    pub fn rev_level(&self) -> u32 {
        le32(self.0, field::S_REV_LEVEL)
    }
    /// Makes a revision 0 superblock dynamic, with the values revision 0
    /// implies (first inode 11, 128-byte inodes), so nothing changes
    /// meaning; features need it.
    pub fn make_dynamic(&mut self) {
        if self.rev_level() == 0 {
            put_le32(self.0, field::S_REV_LEVEL, 1);
            put_le32(self.0, field::S_FIRST_INO, Ino::GOOD_OLD_FIRST.get());
            put_le16(self.0, field::S_INODE_SIZE, 128);
        }
    }
    pub fn set_block_group_nr(&mut self, g: u16) {
        put_le16(self.0, field::S_BLOCK_GROUP_NR, g);
    }
    pub fn compat(&self) -> u32 {
        le32(self.0, field::S_FEATURE_COMPAT)
    }
    pub fn set_compat(&mut self, v: u32) {
        put_le32(self.0, field::S_FEATURE_COMPAT, v);
    }
    pub fn incompat(&self) -> u32 {
        le32(self.0, field::S_FEATURE_INCOMPAT)
    }
    pub fn set_incompat(&mut self, v: u32) {
        put_le32(self.0, field::S_FEATURE_INCOMPAT, v);
    }
    pub fn ro_compat(&self) -> u32 {
        le32(self.0, field::S_FEATURE_RO_COMPAT)
    }
    pub fn set_ro_compat(&mut self, v: u32) {
        put_le32(self.0, field::S_FEATURE_RO_COMPAT, v);
    }
    pub fn set_reserved_gdt_blocks(&mut self, v: u16) {
        put_le16(self.0, field::S_RESERVED_GDT_BLOCKS, v);
    }
    pub fn set_min_extra_isize(&mut self, v: u16) {
        put_le16(self.0, field::S_MIN_EXTRA_ISIZE, v);
    }
    pub fn set_want_extra_isize(&mut self, v: u16) {
        put_le16(self.0, field::S_WANT_EXTRA_ISIZE, v);
    }
    pub fn set_first_meta_bg(&mut self, v: u32) {
        put_le32(self.0, field::S_FIRST_META_BG, v);
    }
    pub fn set_last_orphan(&mut self, v: u32) {
        put_le32(self.0, field::S_LAST_ORPHAN, v);
    }
    /// The quota inode field of quota type `qtype` (user, group, project).
    pub fn set_quota_inum(&mut self, qtype: usize, v: u32) {
        let off = match qtype {
            0 => field::S_USR_QUOTA_INUM,
            1 => field::S_GRP_QUOTA_INUM,
            2 => field::S_PRJ_QUOTA_INUM,
            _ => return,
        };
        put_le32(self.0, off, v);
    }
    pub fn set_uuid(&mut self, uuid: &[u8; 16]) {
        if let Some(u) = self.0.get_mut(field::S_UUID..field::S_UUID + 16) {
            u.copy_from_slice(uuid);
        }
    }
    pub fn flags(&self) -> u32 {
        le32(self.0, field::S_FLAGS)
    }
    pub fn set_flags(&mut self, v: u32) {
        put_le32(self.0, field::S_FLAGS, v);
    }
    pub fn set_checksum_seed(&mut self, v: u32) {
        put_le32(self.0, field::S_CHECKSUM_SEED, v);
    }
    pub fn set_orphan_file_inum(&mut self, v: u32) {
        put_le32(self.0, field::S_ORPHAN_FILE_INUM, v);
    }
    /// Forgets the journal: its UUID, inode, device and the backup of its
    /// inode's map.
    pub fn clear_journal(&mut self) {
        let end = field::S_JNL_BLOCKS + field::S_JNL_BLOCKS_LEN;
        if let Some(u) = self
            .0
            .get_mut(field::S_JOURNAL_UUID..field::S_JOURNAL_UUID + 16)
        {
            u.fill(0);
        }
        put_le32(self.0, field::S_JOURNAL_INUM, 0);
        put_le32(self.0, field::S_JOURNAL_DEV, 0);
        if let Some(j) = self.0.get_mut(field::S_JNL_BLOCKS..end) {
            j.fill(0);
        }
    }
    pub fn set_journal_dev(&mut self, dev: u32) {
        put_le32(self.0, field::S_JOURNAL_DEV, dev);
    }
    pub fn set_journal_inum(&mut self, ino: Ino) {
        put_le32(self.0, field::S_JOURNAL_INUM, ino.0);
    }
    /// The superblock's backup of the journal inode: its i_block and
    /// size, marked as a copy of the inode's map.
    pub fn set_journal_backup(&mut self, i_block: &[u8], size: u64) {
        for w in 0..15 {
            put_le32(self.0, field::S_JNL_BLOCKS + 4 * w, le32(i_block, 4 * w));
        }
        put_le32(self.0, field::S_JNL_BLOCKS + 60, (size >> 32) as u32);
        put_le32(self.0, field::S_JNL_BLOCKS + 64, lo32(size));
        if let Some(t) = self.0.get_mut(field::S_JNL_BACKUP_TYPE) {
            *t = JNL_BACKUP_BLOCKS;
        }
    }
    /// Forgets the errors the kernel recorded (after a check that saw
    /// their consequences).
    pub fn clear_error_record(&mut self) {
        if let Some(r) = self.0.get_mut(field::S_ERROR_RECORD) {
            r.fill(0);
        }
    }
    pub fn set_mnt_count(&mut self, v: u16) {
        put_le16(self.0, field::S_MNT_COUNT, v);
    }
    /// Last check time, seconds since the epoch (40 bits).
    pub fn set_lastcheck(&mut self, t: u64) {
        put_le32(self.0, field::S_LASTCHECK, lo32(t));
        if let Some(hi) = self.0.get_mut(field::S_LASTCHECK_HI) {
            *hi = hi8(t);
        }
    }
    /// Last mount time, seconds since the epoch (40 bits).
    pub fn set_mtime(&mut self, t: u64) {
        self.set_time(field::S_MTIME, field::S_MTIME_HI, t);
    }
    /// Last write time, seconds since the epoch (40 bits).
    pub fn set_wtime(&mut self, t: u64) {
        self.set_time(field::S_WTIME, field::S_WTIME_HI, t);
    }
    fn set_time(&mut self, lo: usize, hi: usize, t: u64) {
        put_le32(self.0, lo, lo32(t));
        if let Some(h) = self.0.get_mut(hi) {
            *h = hi8(t);
        }
    }
    /// Stores the metadata_csum checksum of these bytes.
    pub fn set_checksum(&mut self) {
        if self.0.len() >= SUPERBLOCK_SIZE {
            let c = crc32c_raw(!0, &self.0[..field::S_CHECKSUM]);
            put_le32(self.0, field::S_CHECKSUM, c);
        }
    }
}

/// s_checksum_type of metadata_csum: crc32c, the only one defined.
pub const CSUM_TYPE_CRC32C: u8 = 1;

/// s_jnl_backup_type: s_jnl_blocks holds a copy of the inode's i_block.
pub const JNL_BACKUP_BLOCKS: u8 = 1;

/// s_state bits.
pub const STATE_VALID: u16 = 0x1;
pub const STATE_ERROR: u16 = 0x2;
pub const STATE_ORPHANS: u16 = 0x4;

/// s_flags bits for the directory hash signedness.
pub const FLAGS_SIGNED_HASH: u32 = 0x1;
pub const FLAGS_UNSIGNED_HASH: u32 = 0x2;
/// s_flags: a development file system, which ext4 mounts only when asked.
pub const FLAGS_TEST_FS: u32 = 0x4;

/// Parsed superblock. Field names follow the kernel's `struct ext4_super_block`
/// without the `s_` prefix; `*_lo`/`*_hi` pairs are combined.
#[derive(Clone, Debug)]
pub struct Superblock {
    pub raw: Vec<u8>,
    pub inodes_count: u32,
    pub blocks_count: u64,
    pub r_blocks_count: u64,
    pub free_blocks_count: u64,
    pub free_inodes_count: u32,
    pub first_data_block: u32,
    pub log_block_size: u32,
    pub log_cluster_size: u32,
    pub blocks_per_group: u32,
    pub clusters_per_group: u32,
    pub inodes_per_group: u32,
    pub mtime: u32,
    pub wtime: u32,
    pub mnt_count: u16,
    pub max_mnt_count: i16,
    pub magic: u16,
    pub state: u16,
    pub errors: u16,
    pub minor_rev_level: u16,
    /// Seconds since the epoch (s_lastcheck and its high byte).
    pub lastcheck: u64,
    pub checkinterval: u32,
    pub creator_os: u32,
    pub rev_level: u32,
    pub first_ino: u32,
    pub inode_size: u16,
    pub block_group_nr: u16,
    pub feature_compat: u32,
    pub feature_incompat: u32,
    pub feature_ro_compat: u32,
    pub uuid: [u8; 16],
    pub volume_name: [u8; 16],
    pub reserved_gdt_blocks: u16,
    pub journal_uuid: [u8; 16],
    pub journal_inum: u32,
    pub journal_dev: u32,
    pub last_orphan: u32,
    pub hash_seed: [u32; 4],
    pub def_hash_version: u8,
    pub jnl_backup_type: u8,
    pub desc_size: u16,
    pub first_meta_bg: u32,
    pub jnl_blocks: [u32; 17],
    pub min_extra_isize: u16,
    pub want_extra_isize: u16,
    pub flags: u32,
    pub mmp_block: u64,
    pub log_groups_per_flex: u8,
    pub checksum_type: u8,
    pub usr_quota_inum: u32,
    pub grp_quota_inum: u32,
    pub prj_quota_inum: u32,
    pub backup_bgs: [u32; 2],
    pub lpf_ino: u32,
    pub checksum_seed: u32,
    pub encoding: u16,
    pub encoding_flags: u16,
    pub orphan_file_inum: u32,
    pub checksum: u32,
}

impl Superblock {
    /// Parses the 1024 superblock bytes. Never fails: validation is the
    /// checker's job, so even garbage is returned as fields.
    /// s_mkfs_time.
    pub fn mkfs_time(&self) -> u32 {
        le32(&self.raw, field::S_MKFS_TIME)
    }

    /// Last mount time with its high byte, seconds since the epoch.
    pub fn last_mount_time(&self) -> u64 {
        self.time40(field::S_MTIME, field::S_MTIME_HI)
    }

    /// Last write time with its high byte, seconds since the epoch.
    pub fn last_write_time(&self) -> u64 {
        self.time40(field::S_WTIME, field::S_WTIME_HI)
    }

    fn time40(&self, lo: usize, hi: usize) -> u64 {
        u64::from(le32(&self.raw, lo)) | u64::from(self.raw.get(hi).copied().unwrap_or(0)) << 32
    }

    /// s_mmp_update_interval (seconds).
    pub fn mmp_update_interval(&self) -> u16 {
        le16(&self.raw, field::S_MMP_UPDATE_INTERVAL)
    }

    /// s_prealloc_dir_blocks.
    pub fn prealloc_dir_blocks(&self) -> u8 {
        u8_at(&self.raw, field::S_PREALLOC_DIR_BLOCKS)
    }

    pub fn parse(b: &[u8]) -> Superblock {
        let mut raw = b.to_vec();
        raw.resize(SUPERBLOCK_SIZE, 0);
        let b = &raw[..];
        let is64 = le32(b, 0x60) & incompat::BIT64 != 0;
        let hi = |off: usize| {
            if is64 {
                u64::from(le32(b, off)) << 32
            } else {
                0
            }
        };
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&b[0x68..0x78]);
        let mut volume_name = [0u8; 16];
        volume_name.copy_from_slice(&b[0x78..0x88]);
        let mut journal_uuid = [0u8; 16];
        journal_uuid.copy_from_slice(&b[0xD0..0xE0]);
        let mut jnl_blocks = [0u32; 17];
        for (i, v) in jnl_blocks.iter_mut().enumerate() {
            *v = le32(b, 0x10C + 4 * i);
        }
        Superblock {
            inodes_count: le32(b, 0x0),
            blocks_count: u64::from(le32(b, 0x4)) | hi(0x150),
            r_blocks_count: u64::from(le32(b, 0x8)) | hi(0x154),
            free_blocks_count: u64::from(le32(b, 0xC)) | hi(0x158),
            free_inodes_count: le32(b, 0x10),
            first_data_block: le32(b, 0x14),
            log_block_size: le32(b, 0x18),
            log_cluster_size: le32(b, 0x1C),
            blocks_per_group: le32(b, 0x20),
            clusters_per_group: le32(b, 0x24),
            inodes_per_group: le32(b, 0x28),
            mtime: le32(b, 0x2C),
            wtime: le32(b, 0x30),
            mnt_count: le16(b, 0x34),
            max_mnt_count: le16(b, 0x36) as i16,
            magic: le16(b, MAGIC_AT),
            state: le16(b, 0x3A),
            errors: le16(b, 0x3C),
            minor_rev_level: le16(b, 0x3E),
            lastcheck: u64::from(le32(b, 0x40))
                | u64::from(b.get(field::S_LASTCHECK_HI).copied().unwrap_or(0)) << 32,
            checkinterval: le32(b, 0x44),
            creator_os: le32(b, 0x48),
            rev_level: le32(b, 0x4C),
            first_ino: le32(b, 0x54),
            inode_size: le16(b, 0x58),
            block_group_nr: le16(b, 0x5A),
            feature_compat: le32(b, 0x5C),
            feature_incompat: le32(b, 0x60),
            feature_ro_compat: le32(b, 0x64),
            uuid,
            volume_name,
            reserved_gdt_blocks: le16(b, 0xCE),
            journal_uuid,
            journal_inum: le32(b, 0xE0),
            journal_dev: le32(b, 0xE4),
            last_orphan: le32(b, 0xE8),
            hash_seed: [le32(b, 0xEC), le32(b, 0xF0), le32(b, 0xF4), le32(b, 0xF8)],
            def_hash_version: u8_at(b, 0xFC),
            jnl_backup_type: u8_at(b, 0xFD),
            desc_size: le16(b, 0xFE),
            first_meta_bg: le32(b, 0x104),
            jnl_blocks,
            min_extra_isize: le16(b, field::S_MIN_EXTRA_ISIZE),
            want_extra_isize: le16(b, field::S_WANT_EXTRA_ISIZE),
            flags: le32(b, 0x160),
            mmp_block: u64::from(le32(b, 0x168)) | (u64::from(le32(b, 0x16C)) << 32),
            log_groups_per_flex: u8_at(b, 0x174),
            checksum_type: u8_at(b, 0x175),
            usr_quota_inum: le32(b, 0x240),
            grp_quota_inum: le32(b, 0x244),
            backup_bgs: [le32(b, 0x24C), le32(b, 0x250)],
            lpf_ino: le32(b, 0x268),
            prj_quota_inum: le32(b, 0x26C),
            checksum_seed: le32(b, 0x270),
            encoding: le16(b, 0x27C),
            encoding_flags: le16(b, 0x27E),
            orphan_file_inum: le32(b, field::S_ORPHAN_FILE_INUM),
            checksum: le32(b, 0x3FC),
            raw,
        }
    }

    pub fn has_compat(&self, f: u32) -> bool {
        self.feature_compat & f != 0
    }
    pub fn has_ro_compat(&self, f: u32) -> bool {
        self.feature_ro_compat & f != 0
    }
    pub fn has_incompat(&self, f: u32) -> bool {
        self.feature_incompat & f != 0
    }
    pub fn metadata_csum(&self) -> bool {
        self.has_ro_compat(ro_compat::METADATA_CSUM)
    }
    /// Group descriptors carry a checksum (crc16 or crc32c).
    pub fn group_desc_csum(&self) -> bool {
        self.metadata_csum() || self.has_ro_compat(ro_compat::GDT_CSUM)
    }
    pub fn is_64bit(&self) -> bool {
        self.has_incompat(incompat::BIT64)
    }

    /// Block size in bytes, or None when the exponent is absurd.
    pub fn block_size(&self) -> Option<u32> {
        // ext4 allows 1 KiB to 64 KiB blocks.
        if self.log_block_size > 6 {
            return None;
        }
        Some(1024u32 << self.log_block_size)
    }

    /// Size of a group descriptor as the file system uses it.
    pub fn desc_size(&self) -> u32 {
        if self.is_64bit() {
            u32::from(self.desc_size)
        } else {
            32
        }
    }

    pub fn inode_size(&self) -> u32 {
        if self.rev_level == 0 {
            128
        } else {
            u32::from(self.inode_size)
        }
    }

    pub fn first_ino(&self) -> u32 {
        if self.rev_level == 0 {
            Ino::GOOD_OLD_FIRST.get()
        } else {
            self.first_ino
        }
    }

    /// Seed of every metadata_csum checksum.
    pub fn csum_seed(&self) -> u32 {
        if self.has_incompat(incompat::CSUM_SEED) {
            self.checksum_seed
        } else {
            crc32c_raw(!0, &self.uuid)
        }
    }

    /// The checksum the superblock should carry.
    pub fn compute_checksum(&self) -> u32 {
        crc32c_raw(!0, &self.raw[..field::S_CHECKSUM])
    }

    /// Directory hash version used for new directories, with the signedness
    /// of the superblock flags folded in.
    pub fn unsigned_hash(&self) -> bool {
        self.flags & FLAGS_UNSIGNED_HASH != 0
    }

    pub fn volume_label(&self) -> String {
        let end = self.volume_name.iter().position(|&c| c == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.volume_name[..end]).into_owned()
    }

    /// The file system's UUID as it is written (lowercase, 8-4-4-4-12).
    pub fn uuid_text(&self) -> String {
        let hex: Vec<String> = self.uuid.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            hex[..4].concat(),
            hex[4..6].concat(),
            hex[6..8].concat(),
            hex[8..10].concat(),
            hex[10..].concat()
        )
    }

    /// The features set, by the names mke2fs and tune2fs take: compatible,
    /// incompatible, then read-only compatible ones, each by bit; a bit
    /// with no name as `FEATURE_C12` (I, R), as dumpe2fs shows it.
    pub fn feature_names(&self) -> Vec<String> {
        let sets: [(u32, char, FeatureNames); 3] = [
            (self.feature_compat, 'C', COMPAT_NAMES),
            (self.feature_incompat, 'I', INCOMPAT_NAMES),
            (self.feature_ro_compat, 'R', RO_COMPAT_NAMES),
        ];
        let mut out = Vec::new();
        for (bits, letter, names) in sets {
            for bit in 0..32 {
                let f = 1u32 << bit;
                if bits & f == 0 {
                    continue;
                }
                match names.iter().find(|(v, _)| *v == f) {
                    Some((_, n)) => out.push((*n).to_string()),
                    None => out.push(format!("FEATURE_{letter}{bit}")),
                }
            }
        }
        out
    }
}

/// A feature set's bits and their names.
type FeatureNames = &'static [(u32, &'static str)];

const COMPAT_NAMES: FeatureNames = &[
    (compat::DIR_PREALLOC, "dir_prealloc"),
    (compat::IMAGIC_INODES, "imagic_inodes"),
    (compat::HAS_JOURNAL, "has_journal"),
    (compat::EXT_ATTR, "ext_attr"),
    (compat::RESIZE_INODE, "resize_inode"),
    (compat::DIR_INDEX, "dir_index"),
    (compat::LAZY_BG, "lazy_bg"),
    (compat::EXCLUDE_BITMAP, "snapshot_bitmap"),
    (compat::SPARSE_SUPER2, "sparse_super2"),
    (compat::FAST_COMMIT, "fast_commit"),
    (compat::STABLE_INODES, "stable_inodes"),
    (compat::ORPHAN_FILE, "orphan_file"),
];

const INCOMPAT_NAMES: FeatureNames = &[
    (incompat::COMPRESSION, "compression"),
    (incompat::FILETYPE, "filetype"),
    (incompat::RECOVER, "needs_recovery"),
    (incompat::JOURNAL_DEV, "journal_dev"),
    (incompat::META_BG, "meta_bg"),
    (incompat::EXTENTS, "extent"),
    (incompat::BIT64, "64bit"),
    (incompat::MMP, "mmp"),
    (incompat::FLEX_BG, "flex_bg"),
    (incompat::EA_INODE, "ea_inode"),
    (incompat::DIRDATA, "dirdata"),
    (incompat::CSUM_SEED, "metadata_csum_seed"),
    (incompat::LARGEDIR, "large_dir"),
    (incompat::INLINE_DATA, "inline_data"),
    (incompat::ENCRYPT, "encrypt"),
    (incompat::CASEFOLD, "casefold"),
];

const RO_COMPAT_NAMES: FeatureNames = &[
    (ro_compat::SPARSE_SUPER, "sparse_super"),
    (ro_compat::LARGE_FILE, "large_file"),
    (ro_compat::HUGE_FILE, "huge_file"),
    (ro_compat::GDT_CSUM, "uninit_bg"),
    (ro_compat::DIR_NLINK, "dir_nlink"),
    (ro_compat::EXTRA_ISIZE, "extra_isize"),
    (ro_compat::QUOTA, "quota"),
    (ro_compat::BIGALLOC, "bigalloc"),
    (ro_compat::METADATA_CSUM, "metadata_csum"),
    (ro_compat::REPLICA, "replica"),
    (ro_compat::READONLY, "read-only"),
    (ro_compat::PROJECT, "project"),
    (ro_compat::SHARED_BLOCKS, "shared_blocks"),
    (ro_compat::VERITY, "verity"),
    (ro_compat::ORPHAN_PRESENT, "orphan_present"),
];

/// Compatible features e2fsck accepts (a kernel may ignore the others,
/// but e2fsck stops on them, "Get a newer version of e2fsck", and so does
/// this checker: a repair would otherwise bless bits no tool can check).
pub const SUPPORTED_COMPAT: u32 = compat::DIR_PREALLOC
    | compat::IMAGIC_INODES
    | compat::HAS_JOURNAL
    | compat::EXT_ATTR
    | compat::RESIZE_INODE
    | compat::DIR_INDEX
    | compat::SPARSE_SUPER2
    | compat::FAST_COMMIT
    | compat::STABLE_INODES
    | compat::ORPHAN_FILE;

/// Incompatible and read-only features this checker understands. Anything
/// else makes the check stop with exit 8 rather than give a wrong verdict.
/// The read-only set is e2fsck's: btree_dir (0x4) was reserved and never
/// built, so e2fsck refuses it as unknown, and pfsck does too.
pub const SUPPORTED_INCOMPAT: u32 = incompat::FILETYPE
    | incompat::RECOVER
    | incompat::META_BG
    | incompat::EXTENTS
    | incompat::BIT64
    | incompat::MMP
    | incompat::FLEX_BG
    | incompat::CSUM_SEED
    | incompat::LARGEDIR
    | incompat::INLINE_DATA
    | incompat::EA_INODE
    | incompat::ENCRYPT
    | incompat::CASEFOLD;

pub const SUPPORTED_RO_COMPAT: u32 = ro_compat::SPARSE_SUPER
    | ro_compat::LARGE_FILE
    | ro_compat::HUGE_FILE
    | ro_compat::GDT_CSUM
    | ro_compat::DIR_NLINK
    | ro_compat::EXTRA_ISIZE
    | ro_compat::METADATA_CSUM
    | ro_compat::READONLY
    | ro_compat::PROJECT
    | ro_compat::QUOTA
    | ro_compat::SHARED_BLOCKS
    | ro_compat::BIGALLOC
    | ro_compat::ORPHAN_PRESENT
    | ro_compat::VERITY;

/// Human names of feature bits, for messages.
pub fn incompat_name(bit: u32) -> &'static str {
    match bit {
        incompat::COMPRESSION => "compression",
        incompat::FILETYPE => "filetype",
        incompat::RECOVER => "needs_recovery",
        incompat::JOURNAL_DEV => "journal_dev",
        incompat::META_BG => "meta_bg",
        incompat::EXTENTS => "extent",
        incompat::BIT64 => "64bit",
        incompat::MMP => "mmp",
        incompat::FLEX_BG => "flex_bg",
        incompat::EA_INODE => "ea_inode",
        incompat::DIRDATA => "dirdata",
        incompat::CSUM_SEED => "metadata_csum_seed",
        incompat::LARGEDIR => "large_dir",
        incompat::INLINE_DATA => "inline_data",
        incompat::ENCRYPT => "encrypt",
        incompat::CASEFOLD => "casefold",
        _ => "unknown",
    }
}

pub fn compat_name(bit: u32) -> &'static str {
    match bit {
        compat::LAZY_BG => "lazy_bg",
        compat::EXCLUDE_BITMAP => "exclude_bitmap",
        _ => "unknown",
    }
}

pub fn ro_compat_name(bit: u32) -> &'static str {
    match bit {
        ro_compat::SPARSE_SUPER => "sparse_super",
        ro_compat::LARGE_FILE => "large_file",
        ro_compat::BTREE_DIR => "btree_dir",
        ro_compat::HUGE_FILE => "huge_file",
        ro_compat::GDT_CSUM => "uninit_bg",
        ro_compat::DIR_NLINK => "dir_nlink",
        ro_compat::EXTRA_ISIZE => "extra_isize",
        ro_compat::HAS_SNAPSHOT => "snapshot",
        ro_compat::QUOTA => "quota",
        ro_compat::BIGALLOC => "bigalloc",
        ro_compat::METADATA_CSUM => "metadata_csum",
        ro_compat::REPLICA => "replica",
        ro_compat::READONLY => "read-only",
        ro_compat::PROJECT => "project",
        ro_compat::SHARED_BLOCKS => "shared_blocks",
        ro_compat::VERITY => "verity",
        ro_compat::ORPHAN_PRESENT => "orphan_present",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::{put_le16, put_le32};

    #[test]
    fn parses_fields_and_checksum() {
        let mut b = vec![0u8; 1024];
        put_le32(&mut b, 0x4, 8192);
        put_le32(&mut b, 0x18, 2);
        put_le16(&mut b, 0x38, EXT2_MAGIC);
        put_le32(&mut b, 0x64, ro_compat::METADATA_CSUM);
        let c = crc32c_raw(!0, &b[..0x3FC]);
        put_le32(&mut b, 0x3FC, c);
        let sb = Superblock::parse(&b);
        assert_eq!(sb.blocks_count, 8192);
        assert_eq!(sb.block_size(), Some(4096));
        assert_eq!(sb.magic, EXT2_MAGIC);
        assert_eq!(sb.compute_checksum(), sb.checksum);
    }

    #[test]
    fn short_input_does_not_panic() {
        let sb = Superblock::parse(&[0xFF; 10]);
        assert_eq!(sb.magic, 0);
        assert_eq!(sb.block_size(), None.or(sb.block_size()));
    }
}
