//! Extended attributes: the header of an xattr block, the entries (shared by
//! blocks and the in-inode area) and their hashes.

use super::bytes::{le16, le32, put_le32, u8_at};
use super::checksum::crc32c_raw;
use super::inode::{GOOD_OLD_INODE_SIZE, extra_isize};

pub const XATTR_MAGIC: u32 = 0xEA02_0000;
pub const BLOCK_HEADER_LEN: usize = 32;
pub const ENTRY_HEADER_LEN: usize = 16;
const BLOCK_CSUM_OFFSET: usize = 0x10;
/// Where an entry header keeps the hash of its name and value.
pub const ENTRY_HASH_AT: usize = 0xC;
/// The name index of "system." names (system.data holds inline data).
pub const INDEX_SYSTEM: u8 = 7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub magic: u32,
    pub refcount: u32,
    pub blocks: u32,
    pub hash: u32,
    pub checksum: u32,
}

pub fn parse_block_header(b: &[u8]) -> BlockHeader {
    BlockHeader {
        magic: le32(b, 0),
        refcount: le32(b, 4),
        blocks: le32(b, 8),
        hash: le32(b, 0xC),
        checksum: le32(b, BLOCK_CSUM_OFFSET),
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    pub offset: usize,
    pub name_index: u8,
    pub value_offs: u16,
    pub value_inum: u32,
    pub value_size: u32,
    pub hash: u32,
    pub name: &'a [u8],
}

impl Entry<'_> {
    /// Bytes the entry takes in the table (header + name, 4-aligned).
    pub fn len(&self) -> usize {
        (ENTRY_HEADER_LEN + self.name.len() + 3) & !3
    }
    pub fn is_empty(&self) -> bool {
        self.name.is_empty()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntriesError {
    /// An entry header or name runs past the end of the area.
    Overrun,
}

/// The entry header at `off` in `area`, whatever its validity; a name that
/// runs past the area reads as empty (callers that care check the bounds).
pub fn entry_at(area: &[u8], off: usize) -> Entry<'_> {
    let name_len = usize::from(u8_at(area, off));
    let name_start = off.saturating_add(ENTRY_HEADER_LEN);
    Entry {
        offset: off,
        name_index: u8_at(area, off + 1),
        value_offs: le16(area, off + 2),
        value_inum: le32(area, off + 4),
        value_size: le32(area, off + 8),
        hash: le32(area, off + ENTRY_HASH_AT),
        name: area
            .get(name_start..name_start.saturating_add(name_len))
            .unwrap_or(&[]),
    }
}

/// Reads the entry table of `area` from `start` until the 4 zero bytes that
/// end it. The number of entries is bounded by the area's size.
pub fn read_entries(area: &[u8], start: usize) -> Result<Vec<Entry<'_>>, EntriesError> {
    let mut out = Vec::new();
    let mut off = start;
    loop {
        if off + 4 > area.len() {
            return Err(EntriesError::Overrun);
        }
        if le32(area, off) == 0 {
            return Ok(out);
        }
        if off + ENTRY_HEADER_LEN > area.len() {
            return Err(EntriesError::Overrun);
        }
        let name_len = usize::from(u8_at(area, off));
        let name_end = off + ENTRY_HEADER_LEN + name_len;
        if name_end > area.len() {
            return Err(EntriesError::Overrun);
        }
        let e = entry_at(area, off);
        off += e.len();
        out.push(e);
    }
}

/// Hash of one entry (name, then value words), in the signed-char variant
/// old kernels used or the unsigned one; both are accepted on disk.
pub fn entry_hash(name: &[u8], value: &[u8], signed: bool) -> u32 {
    let mut h: u32 = 0;
    for &c in name {
        let c = if signed {
            i32::from(c as i8) as u32
        } else {
            u32::from(c)
        };
        h = (h << 5) ^ (h >> 27) ^ c;
    }
    let mut i = 0;
    while i < value.len() {
        let mut w = [0u8; 4];
        for (k, slot) in w.iter_mut().enumerate() {
            *slot = value.get(i + k).copied().unwrap_or(0);
        }
        h = (h << 16) ^ (h >> 16) ^ u32::from_le_bytes(w);
        i += 4;
    }
    h
}

/// Hash of an entry whose value lives in an EA inode: the name hash mixed
/// with the value hash the EA inode keeps (`ea_inode_value_hash`).
pub fn ea_inode_entry_hash(name: &[u8], value_hash: u32, signed: bool) -> u32 {
    let h = entry_hash(name, &[], signed);
    (h << 16) ^ (h >> 16) ^ value_hash
}

/// The hash of the value an EA inode holds, kept in its i_atime.
pub fn ea_inode_value_hash(raw_inode: &[u8]) -> u32 {
    le32(raw_inode, 0x08)
}

/// How many xattr entries refer to an EA inode, by its own account: i_ctime
/// holds the high half and i_version (osd1) the low half.
pub fn ea_inode_refcount(raw_inode: &[u8]) -> u64 {
    (u64::from(le32(raw_inode, 0x0C)) << 32) | u64::from(le32(raw_inode, 0x24))
}

/// Hash of a whole xattr block, from its entries' hashes; 0 if any entry
/// hash is 0 (the kernel then leaves the block unhashed).
pub fn block_hash(entries: &[Entry<'_>]) -> u32 {
    let mut h: u32 = 0;
    for e in entries {
        if e.hash == 0 {
            return 0;
        }
        h = (h << 16) ^ (h >> 16) ^ e.hash;
    }
    h
}

/// Sets an xattr block's reference count.
pub fn set_refcount(b: &mut [u8], n: u32) {
    super::bytes::put_le32(b, 4, n);
}

/// Stores the checksum of xattr block `b` (at block `blocknr`).
pub fn set_block_checksum(fs_seed: u32, blocknr: u64, b: &mut [u8]) {
    let c = compute_block_checksum(fs_seed, blocknr, b);
    super::bytes::put_le32(b, BLOCK_CSUM_OFFSET, c);
}

pub fn compute_block_checksum(fs_seed: u32, blocknr: u64, b: &[u8]) -> u32 {
    let mut d = b.to_vec();
    super::bytes::put_le32(&mut d, BLOCK_CSUM_OFFSET, 0);
    let c = crc32c_raw(fs_seed, &blocknr.to_le_bytes());
    crc32c_raw(c, &d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_end_on_zero() {
        let mut b = vec![0u8; 64];
        b[0] = 4;
        b[1] = 1;
        b[2] = 40;
        b[8] = 3;
        b[16..20].copy_from_slice(b"user");
        let es = read_entries(&b, 0).unwrap();
        assert_eq!(es.len(), 1);
        assert_eq!(es[0].name, b"user");
        assert_eq!(es[0].len(), 20);
        assert_eq!(read_entries(&b[..18], 0), Err(EntriesError::Overrun));
        assert_eq!(entry_hash(b"a", &[], false), u32::from(b'a'));
        assert_eq!(
            ea_inode_entry_hash(b"a", 0x1234_5678, false),
            (u32::from(b'a') << 16) ^ 0x1234_5678
        );
        let mut ino = vec![0u8; 128];
        ino[0x08] = 7;
        ino[0x0C] = 1;
        ino[0x24] = 2;
        assert_eq!(ea_inode_value_hash(&ino), 7);
        assert_eq!(ea_inode_refcount(&ino), (1 << 32) | 2);
        assert_ne!(
            entry_hash(&[0x80], &[], true),
            entry_hash(&[0x80], &[], false)
        );
    }

    /// A 256-byte inode with i_extra_isize 32 and system.data of `len`
    /// bytes (value hash 0) at the end of its attribute area.
    fn inline_inode(len: usize) -> Vec<u8> {
        let mut raw = vec![0u8; 256];
        raw[128] = 32;
        put_le32(&mut raw, 160, XATTR_MAGIC);
        let offs = 92 - ((len + 3) & !3);
        let e = 164;
        raw[e] = 4;
        raw[e + 1] = INDEX_SYSTEM;
        raw[e + 2..e + 4].copy_from_slice(&u16::try_from(offs).unwrap().to_le_bytes());
        put_le32(&mut raw, e + 8, u32::try_from(len).unwrap());
        raw[e + 16..e + 20].copy_from_slice(b"data");
        raw[164 + offs..164 + offs + len].fill(b'q');
        raw
    }

    #[test]
    fn inline_value_resized_in_its_padding() {
        let mut raw = inline_inode(13);
        // 76, the value's offset, less the 20-byte table and its end.
        assert_eq!(inline_grow_room(&raw), Some(52));
        assert!(!set_inline_data_len(&mut raw, 17));
        assert!(set_inline_data_len(&mut raw, 16));
        let d = inline_data(&raw).unwrap();
        assert_eq!(d.value.1 - d.value.0, 16);
        assert_eq!(raw[d.value.0 + 12..d.value.1], [b'q', 0, 0, 0]);
        assert_eq!(le32(&raw, d.hash_at), 0);
        // A value filling the area leaves no room to grow.
        assert_eq!(inline_grow_room(&inline_inode(65)), Some(0));
        assert_eq!(inline_grow_room(&[0u8; 128]), None);
    }

    #[test]
    fn names_read_as_c_strings() {
        assert!(name_is(INDEX_SYSTEM, b"data", INDEX_SYSTEM, b"data"));
        assert!(name_is(INDEX_SYSTEM, b"data\0\0", INDEX_SYSTEM, b"data"));
        assert!(name_is(0, b"system.data", INDEX_SYSTEM, b"data"));
        assert!(!name_is(INDEX_SYSTEM, b"dat", INDEX_SYSTEM, b"data"));
        assert!(!name_is(INDEX_SYSTEM, b"data1", INDEX_SYSTEM, b"data"));
        assert!(!name_is(1, b"data", INDEX_SYSTEM, b"data"));
    }
}

/// Where the in-inode attribute area of raw inode `raw` starts (past its
/// magic), when it has one: after the 128-byte base and i_extra_isize.
pub fn ibody_start(raw: &[u8]) -> Option<usize> {
    if raw.len() <= GOOD_OLD_INODE_SIZE {
        return None;
    }
    let start = GOOD_OLD_INODE_SIZE + usize::from(extra_isize(raw));
    (le32(raw, start) == XATTR_MAGIC).then_some(start + 4)
}

/// The system.data attribute of a raw inode (inline data past i_block):
/// its value's byte range in the inode, and where its entry keeps the hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineData {
    pub value: (usize, usize),
    pub hash_at: usize,
    /// The stored name's byte range: a new hash covers all its bytes.
    pub name: (usize, usize),
    /// Where its entry keeps the value's size.
    pub size_at: usize,
}

/// The prefix libext2fs puts before a stored name, by name index; none for
/// an index it does not know.
fn index_prefix(index: u8) -> &'static [u8] {
    match index {
        1 => b"user.",
        2 => b"system.posix_acl_access",
        3 => b"system.posix_acl_default",
        4 => b"trusted.",
        5 => b"lustre.",
        6 => b"security.",
        7 => b"system.",
        8 => b"system.richacl",
        10 => b"gnu.",
        _ => b"",
    }
}

/// Whether the stored entry (`index`, `name`) is attribute `want_name` of
/// `want_index` as libext2fs looks it up for e2fsck: it joins prefix and
/// stored name into a C string, so a NUL ends the name early (a damaged
/// name length turning "data" into "data\0\0" still reads as system.data)
/// and an index without a prefix may carry the whole name.
pub fn name_is(index: u8, name: &[u8], want_index: u8, want_name: &[u8]) -> bool {
    let stored = name.iter().take_while(|&&c| c != 0);
    index_prefix(index)
        .iter()
        .chain(stored)
        .eq(index_prefix(want_index).iter().chain(want_name))
}

/// Finds system.data (stored in the inode, not in an EA inode) among the
/// in-inode attributes of `raw`.
pub fn inline_data(raw: &[u8]) -> Option<InlineData> {
    let base = ibody_start(raw)?;
    let entries = read_entries(raw.get(base..)?, 0).ok()?;
    let e = entries
        .iter()
        .find(|e| name_is(e.name_index, e.name, INDEX_SYSTEM, b"data") && e.value_inum == 0)?;
    let a = base + e.value_offs as usize;
    let n = base + e.offset + ENTRY_HEADER_LEN;
    Some(InlineData {
        value: (a, a + e.value_size as usize),
        hash_at: base + e.offset + ENTRY_HASH_AT,
        name: (n, n + e.name.len()),
        size_at: base + e.offset + 8,
    })
}

/// The room libext2fs finds for system.data to grow in the in-inode area
/// of `raw` (ext2fs_xattr_inode_max_size, which e2fsck's store of a
/// corrected inline size consults): from the lowest value offset, bounded
/// by the inode size less 164 (its large-inode struct and a word), less
/// the entry table and its end marker. It counts neither the padding of
/// the value itself nor the area's true end, and its unsigned arithmetic
/// wraps, so a table past that bound finds room without end. None: the
/// inode has no attribute area.
pub fn inline_grow_room(raw: &[u8]) -> Option<usize> {
    let start = ibody_start(raw)?;
    let mut low = raw.len().saturating_sub(164);
    let entries = read_entries(raw.get(start..)?, 0).ok()?;
    for e in &entries {
        if e.value_inum == 0 && e.value_size != 0 {
            low = low.min(usize::from(e.value_offs));
        }
    }
    let table = entries.last().map_or(0, |e| e.offset + e.len());
    Some(low.wrapping_sub(table).wrapping_sub(4))
}

/// Sets the length of the in-inode system.data value of `raw` to `len`
/// within the room its value already takes (its length rounded up to 4
/// bytes), the bytes past `len` zeroed and the entry's hash redone (left
/// 0 when it was: 0 means not hashed). False, and nothing changed, when
/// there is no such value or `len` does not fit there.
pub fn set_inline_data_len(raw: &mut [u8], len: usize) -> bool {
    let Some(d) = inline_data(raw) else {
        return false;
    };
    let (a, z) = d.value;
    let slot = a + ((z - a + 3) & !3);
    if slot > raw.len() || a + len > slot {
        return false;
    }
    let Ok(size) = u32::try_from(len) else {
        return false;
    };
    raw[a + len..slot].fill(0);
    put_le32(raw, d.size_at, size);
    if le32(raw, d.hash_at) != 0 {
        let h = entry_hash(&raw[d.name.0..d.name.1], &raw[a..a + len], false);
        put_le32(raw, d.hash_at, h);
    }
    true
}
