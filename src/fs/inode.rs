//! The on-disk inode (`s_inode_size` bytes, at least 128).

use super::bytes::{le16, le32, put_le16, put_le32};
use super::checksum::{crc32c_raw, crc32c_raw_masked, crc32c_raw_u64};
use super::num::Ino;
use crate::narrow::{hi16, lo16, lo32};

// The reserved inodes' raw numbers, for the scans that still hold an inode
// number as u32 (match patterns included); `Ino`'s constants are the source.
pub const BAD_INO: u32 = Ino::BAD.get();
pub const ROOT_INO: u32 = Ino::ROOT.get();
pub const USR_QUOTA_INO: u32 = Ino::USR_QUOTA.get();
pub const GRP_QUOTA_INO: u32 = Ino::GRP_QUOTA.get();
pub const BOOT_LOADER_INO: u32 = Ino::BOOT_LOADER.get();
pub const UNDEL_DIR_INO: u32 = Ino::UNDEL_DIR.get();
pub const RESIZE_INO: u32 = Ino::RESIZE.get();
pub const JOURNAL_INO: u32 = Ino::JOURNAL.get();
pub const EXCLUDE_INO: u32 = Ino::EXCLUDE.get();
pub const REPLICA_INO: u32 = Ino::REPLICA.get();

pub const S_IFMT: u16 = 0xF000;
pub const S_IFSOCK: u16 = 0xC000;
pub const S_IFLNK: u16 = 0xA000;
pub const S_IFREG: u16 = 0x8000;
pub const S_IFBLK: u16 = 0x6000;
pub const S_IFDIR: u16 = 0x4000;
pub const S_IFCHR: u16 = 0x2000;
pub const S_IFIFO: u16 = 0x1000;

pub mod flags {
    pub const SECRM: u32 = 0x1;
    pub const UNRM: u32 = 0x2;
    pub const COMPR: u32 = 0x4;
    pub const SYNC: u32 = 0x8;
    pub const IMMUTABLE: u32 = 0x10;
    pub const APPEND: u32 = 0x20;
    pub const NODUMP: u32 = 0x40;
    pub const NOATIME: u32 = 0x80;
    pub const DIRTY: u32 = 0x100;
    pub const COMPRBLK: u32 = 0x200;
    pub const NOCOMPR: u32 = 0x400;
    pub const ENCRYPT: u32 = 0x800;
    pub const INDEX: u32 = 0x1000;
    pub const IMAGIC: u32 = 0x2000;
    pub const JOURNAL_DATA: u32 = 0x4000;
    pub const NOTAIL: u32 = 0x8000;
    pub const DIRSYNC: u32 = 0x10000;
    pub const TOPDIR: u32 = 0x20000;
    pub const HUGE_FILE: u32 = 0x40000;
    pub const EXTENTS: u32 = 0x80000;
    pub const VERITY: u32 = 0x100000;
    pub const EA_INODE: u32 = 0x200000;
    pub const INLINE_DATA: u32 = 0x10000000;
    pub const PROJINHERIT: u32 = 0x20000000;
    pub const CASEFOLD: u32 = 0x40000000;
}

/// Size of the fixed part every inode has.
pub const GOOD_OLD_INODE_SIZE: usize = 128;

/// What libext2fs' large inode structure adds to the old 128 bytes: the
/// i_extra_isize of the inodes it makes, and the superblock's min and
/// want extra isize e2fsck puts back when they are invalid.
pub const NEW_EXTRA_ISIZE: u16 = 32;

/// Byte offsets of the inode fields repairs write (the layout the parser
/// below reads), one table for every fix that edits raw inode bytes.
pub mod field {
    pub const I_MODE: usize = 0x00;
    pub const I_SIZE_LO: usize = 0x04;
    pub const I_ATIME: usize = 0x08;
    pub const I_CTIME: usize = 0x0C;
    pub const I_MTIME: usize = 0x10;
    pub const I_DTIME: usize = 0x14;
    pub const I_LINKS_COUNT: usize = 0x1A;
    pub const I_BLOCKS_LO: usize = 0x1C;
    pub const I_FLAGS: usize = 0x20;
    pub const I_VERSION: usize = 0x24;
    /// i_block: 15 pointers or the extent root, 60 bytes.
    pub const I_BLOCK: usize = 0x28;
    pub const I_BLOCK_LEN: usize = 60;
    pub const I_BLOCK_END: usize = 0x64;
    pub const I_GENERATION: usize = 0x64;
    pub const I_FILE_ACL_LO: usize = 0x68;
    pub const I_SIZE_HIGH: usize = 0x6C;
    pub const I_FADDR: usize = 0x70;
    pub const I_BLOCKS_HIGH: usize = 0x74;
    /// On a file system the Hurd made, the two bytes Linux reads as
    /// i_blocks_hi are the fragment number and size, unused and zero.
    pub const I_HURD_FRAG: usize = 0x74;
    pub const I_HURD_FSIZE: usize = 0x75;
    pub const I_FILE_ACL_HIGH: usize = 0x76;
    pub const I_CHECKSUM_LO: usize = 0x7C;
    pub const I_EXTRA_ISIZE: usize = 0x80;
    pub const I_CHECKSUM_HI: usize = 0x82;
    pub const I_CRTIME: usize = 0x90;
    pub const I_PROJID: usize = 0x9C;
    /// Block pointers 12, 13 and 14: indirect, double, triple.
    pub const I_IND: usize = I_BLOCK + 4 * 12;
    pub const I_DIND: usize = I_BLOCK + 4 * 13;
    pub const I_TIND: usize = I_BLOCK + 4 * 14;
}
/// Block pointers of a block-mapped inode that name data blocks directly.
pub const DIRECT_BLOCKS: usize = 12;
/// The slot in i_block of the double indirect block.
pub const DIND_SLOT: usize = 13;
const CSUM_LO: usize = 0x7C;
const CSUM_HI: usize = 0x82;
/// The 8-byte-aligned offset of the 16 bytes holding both checksum halves.
const MASKED: usize = 0x78;

/// File type as used in directory entries (with the filetype feature).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileType {
    Unknown = 0,
    Regular = 1,
    Directory = 2,
    CharDev = 3,
    BlockDev = 4,
    Fifo = 5,
    Socket = 6,
    Symlink = 7,
}

impl FileType {
    pub fn from_mode(mode: u16) -> FileType {
        match mode & S_IFMT {
            S_IFREG => FileType::Regular,
            S_IFDIR => FileType::Directory,
            S_IFCHR => FileType::CharDev,
            S_IFBLK => FileType::BlockDev,
            S_IFIFO => FileType::Fifo,
            S_IFSOCK => FileType::Socket,
            S_IFLNK => FileType::Symlink,
            _ => FileType::Unknown,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Inode {
    pub mode: u16,
    pub uid: u32,
    pub size: u64,
    pub atime: u32,
    pub ctime: u32,
    pub mtime: u32,
    pub dtime: u32,
    pub gid: u32,
    pub links_count: u16,
    /// i_blocks_lo | l_i_blocks_high << 32, in the units the flags say.
    pub blocks_raw: u64,
    pub flags: u32,
    pub version: u32,
    /// The 60 bytes of i_block: block pointers, extent root, inline data or
    /// a fast symlink target.
    pub block: [u8; 60],
    pub generation: u32,
    pub file_acl: u64,
    pub size_high: u32,
    pub faddr: u32,
    pub checksum_lo: u16,
    pub extra_isize: u16,
    pub checksum_hi: u16,
    /// How many bytes of the inode were read (the inode size).
    pub disk_size: usize,
}

impl Inode {
    pub fn parse(b: &[u8]) -> Inode {
        let mut block = [0u8; 60];
        if let Some(s) = b.get(0x28..0x28 + 60) {
            block.copy_from_slice(s);
        }
        let extra_isize = if b.len() > GOOD_OLD_INODE_SIZE {
            le16(b, 0x80)
        } else {
            0
        };
        Inode {
            mode: le16(b, 0x0),
            uid: u32::from(le16(b, 0x2)) | (u32::from(le16(b, 0x78)) << 16),
            size: u64::from(le32(b, 0x4)) | (u64::from(le32(b, 0x6C)) << 32),
            atime: le32(b, 0x8),
            ctime: le32(b, 0xC),
            mtime: le32(b, 0x10),
            dtime: le32(b, 0x14),
            gid: u32::from(le16(b, 0x18)) | (u32::from(le16(b, 0x7A)) << 16),
            links_count: le16(b, 0x1A),
            blocks_raw: u64::from(le32(b, 0x1C)) | (u64::from(le16(b, 0x74)) << 32),
            flags: le32(b, 0x20),
            version: le32(b, 0x24),
            block,
            generation: le32(b, 0x64),
            file_acl: u64::from(le32(b, 0x68)) | (u64::from(le16(b, 0x76)) << 32),
            size_high: le32(b, 0x6C),
            faddr: le32(b, 0x70),
            checksum_lo: le16(b, CSUM_LO),
            extra_isize,
            checksum_hi: if b.len() > GOOD_OLD_INODE_SIZE && extra_isize >= 4 {
                le16(b, CSUM_HI)
            } else {
                0
            },
            disk_size: b.len(),
        }
    }

    /// The xattr block i_file_acl names: without `bit64` the high half
    /// means nothing (the kernel and e2fsck read the low half only; pass 2
    /// asks to zero it).
    pub fn acl_block(&self, bit64: bool) -> u64 {
        if bit64 {
            self.file_acl
        } else {
            self.file_acl & 0xFFFF_FFFF
        }
    }

    pub fn file_type(&self) -> FileType {
        FileType::from_mode(self.mode)
    }
    pub fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }
    pub fn is_reg(&self) -> bool {
        self.mode & S_IFMT == S_IFREG
    }
    pub fn is_symlink(&self) -> bool {
        self.mode & S_IFMT == S_IFLNK
    }
    pub fn has_flag(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    /// i_block as 15 little-endian u32 block pointers ([`DIRECT_BLOCKS`]
    /// direct ones, then indirect, double and triple indirect).
    pub fn block_ptrs(&self) -> [u32; 15] {
        let mut p = [0u32; 15];
        for (i, v) in p.iter_mut().enumerate() {
            *v = le32(&self.block, i * 4);
        }
        p
    }

    /// Word `i` (0..15) of i_block: a block pointer of a block-mapped
    /// inode, raw bytes of any other.
    pub fn block_ptr(&self, i: usize) -> u32 {
        le32(&self.block, 4 * i)
    }

    /// Device number for character and block special files.
    pub fn is_all_zero_block(&self) -> bool {
        self.block.iter().all(|&b| b == 0)
    }

    /// Does the checksum cover the hi half (is there room for it)?
    pub fn has_csum_hi(&self) -> bool {
        self.disk_size > GOOD_OLD_INODE_SIZE && self.extra_isize >= 4
    }

    pub fn stored_checksum(&self) -> u32 {
        if self.has_csum_hi() {
            u32::from(self.checksum_lo) | (u32::from(self.checksum_hi) << 16)
        } else {
            u32::from(self.checksum_lo)
        }
    }
}

/// The raw bytes of one inode, edited field by field (the layout `Inode`
/// parses). Writes past the end of a short inode are dropped, as
/// `bytes::put_le*` drops them.
pub struct InodeMut<'a>(pub &'a mut [u8]);

impl InodeMut<'_> {
    pub fn bytes(&self) -> &[u8] {
        self.0
    }
    pub fn mode(&self) -> u16 {
        le16(self.0, field::I_MODE)
    }
    pub fn set_mode(&mut self, v: u16) {
        put_le16(self.0, field::I_MODE, v);
    }
    /// i_size, both halves.
    pub fn set_size(&mut self, v: u64) {
        put_le32(self.0, field::I_SIZE_LO, lo32(v));
        put_le32(self.0, field::I_SIZE_HIGH, (v >> 32) as u32);
    }
    /// The low half of i_size only (the high half kept as it is).
    pub fn set_size_lo(&mut self, v: u32) {
        put_le32(self.0, field::I_SIZE_LO, v);
    }
    /// atime, ctime and mtime.
    pub fn set_times(&mut self, t: u32) {
        for f in [field::I_ATIME, field::I_CTIME, field::I_MTIME] {
            put_le32(self.0, f, t);
        }
    }
    /// atime and mtime (a file's content changed, not its inode).
    pub fn set_atime_mtime(&mut self, t: u32) {
        put_le32(self.0, field::I_ATIME, t);
        put_le32(self.0, field::I_MTIME, t);
    }
    pub fn ctime(&self) -> u32 {
        le32(self.0, field::I_CTIME)
    }
    pub fn set_ctime(&mut self, t: u32) {
        put_le32(self.0, field::I_CTIME, t);
    }
    /// The reference count of an EA inode, kept in i_ctime (high half)
    /// and i_version (low).
    pub fn set_ea_refcount(&mut self, n: u64) {
        put_le32(self.0, field::I_CTIME, (n >> 32) as u32);
        put_le32(self.0, field::I_VERSION, lo32(n));
    }
    pub fn set_faddr(&mut self, v: u32) {
        put_le32(self.0, field::I_FADDR, v);
    }
    /// i_file_acl; the high half only with `bit64` (64bit), where it
    /// means something.
    pub fn file_acl(&self, bit64: bool) -> u64 {
        let hi = if bit64 {
            u64::from(le16(self.0, field::I_FILE_ACL_HIGH))
        } else {
            0
        };
        u64::from(le32(self.0, field::I_FILE_ACL_LO)) | hi << 32
    }
    pub fn set_file_acl(&mut self, v: u64, bit64: bool) {
        put_le32(self.0, field::I_FILE_ACL_LO, lo32(v));
        if bit64 {
            put_le16(self.0, field::I_FILE_ACL_HIGH, hi16(v));
        }
    }
    /// Zeroes the high half of i_file_acl (meaningless without 64bit).
    pub fn clear_file_acl_high(&mut self) {
        put_le16(self.0, field::I_FILE_ACL_HIGH, 0);
    }
    pub fn set_dtime(&mut self, v: u32) {
        put_le32(self.0, field::I_DTIME, v);
    }
    pub fn links(&self) -> u16 {
        le16(self.0, field::I_LINKS_COUNT)
    }
    pub fn set_links(&mut self, v: u16) {
        put_le16(self.0, field::I_LINKS_COUNT, v);
    }
    /// i_blocks; the high 16 bits only with `huge` (huge_file), as they
    /// mean nothing without it.
    pub fn blocks(&self, huge: bool) -> u64 {
        let hi = if huge {
            u64::from(le16(self.0, field::I_BLOCKS_HIGH))
        } else {
            0
        };
        u64::from(le32(self.0, field::I_BLOCKS_LO)) | hi << 32
    }
    pub fn set_blocks(&mut self, v: u64, huge: bool) {
        put_le32(self.0, field::I_BLOCKS_LO, lo32(v));
        if huge {
            put_le16(self.0, field::I_BLOCKS_HIGH, hi16(v));
        }
    }
    pub fn flags(&self) -> u32 {
        le32(self.0, field::I_FLAGS)
    }
    pub fn set_flags(&mut self, v: u32) {
        put_le32(self.0, field::I_FLAGS, v);
    }
    pub fn generation(&self) -> u32 {
        le32(self.0, field::I_GENERATION)
    }
    /// The 60 bytes of i_block.
    pub fn i_block(&self) -> &[u8] {
        self.0
            .get(field::I_BLOCK..field::I_BLOCK_END)
            .unwrap_or(&[])
    }
    pub fn i_block_mut(&mut self) -> &mut [u8] {
        self.0
            .get_mut(field::I_BLOCK..field::I_BLOCK_END)
            .unwrap_or(&mut [])
    }
    /// Block pointer `i` (0..15) of a block-mapped inode.
    pub fn block_ptr(&self, i: usize) -> u32 {
        le32(self.0, field::I_BLOCK + 4 * i)
    }
    pub fn set_block_ptr(&mut self, i: usize, v: u32) {
        if i < 15 {
            put_le32(self.0, field::I_BLOCK + 4 * i, v);
        }
    }
    pub fn extra_isize(&self) -> u16 {
        if self.0.len() > GOOD_OLD_INODE_SIZE {
            le16(self.0, field::I_EXTRA_ISIZE)
        } else {
            0
        }
    }
    pub fn set_extra_isize(&mut self, v: u16) {
        put_le16(self.0, field::I_EXTRA_ISIZE, v);
    }
    pub fn set_crtime(&mut self, v: u32) {
        put_le32(self.0, field::I_CRTIME, v);
    }
    /// Stores the checksum inode `ino` should carry (the high half only
    /// where the inode has room for it).
    pub fn set_checksum(&mut self, fs_seed: u32, ino: Ino) {
        let c = compute_checksum(fs_seed, ino, self.0);
        put_le16(self.0, CSUM_LO, lo16(c));
        if self.0.len() > GOOD_OLD_INODE_SIZE && le16(self.0, field::I_EXTRA_ISIZE) >= 4 {
            put_le16(self.0, CSUM_HI, (c >> 16) as u16);
        }
    }
}

/// The 128-byte inode a superblock's journal backup stands for
/// (s_jnl_blocks: the 15 words of i_block, then i_size_high and i_size):
/// a regular file of mode 0600 with one link, all else zero.
pub fn from_journal_backup(jnl_blocks: &[u32; 17]) -> Vec<u8> {
    let mut raw = vec![0u8; GOOD_OLD_INODE_SIZE];
    put_le16(&mut raw, field::I_MODE, S_IFREG | 0o600);
    put_le16(&mut raw, field::I_LINKS_COUNT, 1);
    for (i, &w) in jnl_blocks[..15].iter().enumerate() {
        put_le32(&mut raw, field::I_BLOCK + 4 * i, w);
    }
    put_le32(&mut raw, field::I_SIZE_HIGH, jnl_blocks[15]);
    put_le32(&mut raw, field::I_SIZE_LO, jnl_blocks[16]);
    raw
}

/// Pointer `i` of a block map array: i_block of a block-mapped inode
/// (15 of them) or an indirect block, little-endian 32-bit block numbers.
pub fn map_ptr(b: &[u8], i: usize) -> u32 {
    le32(b, 4 * i)
}

/// Stores pointer `i` of a block map array (see `map_ptr`).
pub fn set_map_ptr(b: &mut [u8], i: usize, v: u32) {
    put_le32(b, 4 * i, v);
}

/// The pointers of a block map array, in order.
pub fn map_ptrs(b: &[u8]) -> impl Iterator<Item = u32> + '_ {
    b.chunks_exact(4).map(|p| le32(p, 0))
}

/// i_extra_isize of raw inode `b`; 0 for a 128-byte inode, which has
/// none.
pub fn extra_isize(b: &[u8]) -> u16 {
    if b.len() > GOOD_OLD_INODE_SIZE {
        le16(b, field::I_EXTRA_ISIZE)
    } else {
        0
    }
}

/// i_projid of raw inode `b`; 0 where the inode or its i_extra_isize does
/// not reach the field.
pub fn projid(b: &[u8]) -> u32 {
    let end = field::I_PROJID + 4;
    let covered =
        b.len() >= end && GOOD_OLD_INODE_SIZE + usize::from(le16(b, field::I_EXTRA_ISIZE)) >= end;
    if covered { le32(b, field::I_PROJID) } else { 0 }
}

/// Seed of every checksum of metadata owned by an inode (extent blocks,
/// directory blocks, xattr in the inode).
pub fn inode_csum_seed(fs_seed: u32, ino: Ino, generation: u32) -> u32 {
    crc32c_raw_u64(fs_seed, u64::from(ino.0) | u64::from(generation) << 32)
}

/// The checksum inode `ino` (raw bytes `b`) should carry, truncated like the
/// stored one. The checksum fields count as zero: the bytes are summed
/// around them rather than copied (pass 1 does this for every inode).
pub fn compute_checksum(fs_seed: u32, ino: Ino, b: &[u8]) -> u32 {
    const ZERO: [u8; 2] = [0; 2];
    let generation = le32(b, 0x64);
    let hi = b.len() > GOOD_OLD_INODE_SIZE && le16(b, 0x80) >= 4;
    let mut c = inode_csum_seed(fs_seed, ino, generation);
    // Both halves sit in the two words at 0x78: summed from a copy of
    // those, the rest in place, in whole words.
    if b.len() >= MASKED + 16 {
        let mut mask = [0xFF; 16];
        mask[CSUM_LO - MASKED..CSUM_LO - MASKED + 2].fill(0);
        if hi {
            mask[CSUM_HI - MASKED..CSUM_HI - MASKED + 2].fill(0);
        }
        let c = crc32c_raw_masked(c, b, MASKED, &mask);
        return if hi { c } else { c & 0xFFFF };
    }
    // The stored checksum's halves, zeroed where the inode holds them.
    let mut at = 0;
    for field in [Some(CSUM_LO), hi.then_some(CSUM_HI)].into_iter().flatten() {
        if let Some(before) = b.get(at..field)
            && field + 2 <= b.len()
        {
            c = crc32c_raw(c, before);
            c = crc32c_raw(c, &ZERO);
            at = field + 2;
        }
    }
    c = crc32c_raw(c, &b[at..]);
    if hi { c } else { c & 0xFFFF }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::put_le32;

    #[test]
    fn parse_basic_fields() {
        let mut b = vec![0u8; 256];
        put_le16(&mut b, 0, S_IFDIR | 0o755);
        put_le32(&mut b, 4, 4096);
        put_le16(&mut b, 0x80, 32);
        let i = Inode::parse(&b);
        assert!(i.is_dir());
        assert_eq!(i.size, 4096);
        assert!(i.has_csum_hi());
        let c = compute_checksum(1, Ino(12), &b);
        put_le16(&mut b, 0x7C, lo16(c));
        put_le16(&mut b, 0x82, (c >> 16) as u16);
        assert_eq!(compute_checksum(1, Ino(12), &b), c);
        assert_eq!(Inode::parse(&b).stored_checksum(), c);
    }

    #[test]
    fn checksum_skips_its_fields_as_a_zeroed_copy_would() {
        // The plain definition: a copy with both halves zeroed.
        let reference = |ino: u32, b: &[u8]| {
            let mut d = b.to_vec();
            put_le16(&mut d, CSUM_LO, 0);
            let hi = d.len() > GOOD_OLD_INODE_SIZE && le16(&d, 0x80) >= 4;
            if hi {
                put_le16(&mut d, CSUM_HI, 0);
            }
            let c = crc32c_raw(inode_csum_seed(7, Ino(ino), le32(&d, 0x64)), &d);
            if hi { c } else { c & 0xFFFF }
        };
        for size in [
            100, 125, 126, 128, 130, 131, 132, 135, 136, 137, 160, 256, 512, 1024,
        ] {
            for extra in [0u16, 2, 3, 4, 32, 160] {
                let mut b: Vec<u8> = (0..size).map(|i| (i * 37 + size) as u8).collect();
                if size > GOOD_OLD_INODE_SIZE {
                    put_le16(&mut b, 0x80, extra);
                }
                assert_eq!(
                    compute_checksum(7, Ino(12), &b),
                    reference(12, &b),
                    "{size} {extra}"
                );
            }
        }
    }

    #[test]
    fn edits_round_trip_through_the_parser() {
        let mut b = vec![0u8; 256];
        let mut m = InodeMut(&mut b);
        m.set_mode(S_IFREG | 0o600);
        m.set_size(5 << 32 | 7);
        m.set_links(3);
        m.set_blocks(9 << 32 | 8, true);
        m.set_flags(flags::EXTENTS);
        m.set_extra_isize(32);
        m.set_checksum(1, Ino(12));
        let i = Inode::parse(&b);
        assert_eq!(
            (i.size, i.links_count, i.blocks_raw),
            (5 << 32 | 7, 3, 9 << 32 | 8)
        );
        assert!(i.is_reg() && i.has_flag(flags::EXTENTS));
        assert_eq!(i.stored_checksum(), compute_checksum(1, Ino(12), &b));
        // A 128-byte inode keeps only the low half of the checksum.
        let mut small = vec![0u8; 128];
        InodeMut(&mut small).set_checksum(1, Ino(12));
        assert_eq!(
            u32::from(le16(&small, CSUM_LO)),
            compute_checksum(1, Ino(12), &small)
        );
    }

    #[test]
    fn short_inode_does_not_panic() {
        let i = Inode::parse(&[1, 2, 3]);
        assert_eq!(i.mode, 0x0201);
        let _ = compute_checksum(0, Ino(1), &[]);
    }
}
