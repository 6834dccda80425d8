//! Extended attribute checks for pass 1: the area after the inode's fixed
//! part (with extra_isize), xattr blocks (validated once per block, after
//! the inode scan, so the inode named in a report does not depend on thread
//! timing) and their reference counts; and the size of inline data.

use super::fsview::Fs;
use super::problem::{Code, Problem};
use super::state::{State, XattrBlockRef};
use crate::engine::{Threads, par_map};
use crate::fs::bytes::{le16, le32, u8_at};
use crate::fs::inode::{GOOD_OLD_INODE_SIZE, Inode};
use crate::fs::xattr::{self, ENTRY_HEADER_LEN, XATTR_MAGIC};

/// Index of the "system." namespace, where inline data keeps "data".
const SYSTEM_INDEX: u8 = 7;
/// i_block holds the first 60 bytes of inline data.
pub const MIN_INLINE_DATA_SIZE: u64 = 60;

fn round4(n: usize) -> usize {
    (n + 3) & !3
}

/// Byte ranges handed out inside an area; reports overlaps and overruns.
struct Region {
    max: usize,
    used: Vec<(usize, usize)>,
}

impl Region {
    fn new(max: usize) -> Region {
        Region {
            max,
            used: Vec::new(),
        }
    }
    /// Takes [start, start+len); false if outside or overlapping.
    fn take(&mut self, start: usize, len: usize) -> bool {
        let Some(end) = start.checked_add(len) else {
            return false;
        };
        if end > self.max {
            return false;
        }
        if self.used.iter().any(|&(s, e)| start < e && s < end) {
            return false;
        }
        self.used.push((start, end));
        true
    }
}

/// Is the stored hash one of the two variants (unsigned or signed chars)?
fn hash_ok(stored: u32, name: &[u8], value: &[u8]) -> bool {
    stored == xattr::entry_hash(name, value, false)
        || stored == xattr::entry_hash(name, value, true)
}

/// The in-inode xattr area (after the magic), or None when there is none.
fn inode_area<'a>(raw: &'a [u8], inode: &Inode) -> Option<&'a [u8]> {
    if raw.len() <= GOOD_OLD_INODE_SIZE {
        return None;
    }
    let start = GOOD_OLD_INODE_SIZE + inode.extra_isize as usize;
    if start + 4 > raw.len() || le32(raw, start) != XATTR_MAGIC {
        return None;
    }
    raw.get(start + 4..)
}

/// Checks extra_isize, the in-inode xattrs and the extra time fields.
pub fn check_inode_extra(probs: &mut Vec<Problem>, ino: u32, raw: &[u8], inode: &Inode) {
    let isz = raw.len();
    if isz <= GOOD_OLD_INODE_SIZE {
        return;
    }
    let max = isz - GOOD_OLD_INODE_SIZE;
    let extra = inode.extra_isize as usize;
    if extra != 0 && (extra < 4 || extra > max || extra & 3 != 0) {
        probs.push(
            Problem::new(Code::InodeExtraIsize)
                .ino(ino)
                .num(extra as u64),
        );
        return;
    }
    if extra + 4 < max && le32(raw, GOOD_OLD_INODE_SIZE + extra) == XATTR_MAGIC {
        let header = GOOD_OLD_INODE_SIZE + extra;
        if let Some(why) = in_inode_problem(&raw[header..]) {
            probs.push(Problem::new(Code::InodeXattrInInode).ino(ino).detail(why));
        }
    }
    // Old kernels stored pre-1970 extra times with both epoch bits set;
    // e2fsck rewrites them.
    let fits = |off: usize| off + 4 <= GOOD_OLD_INODE_SIZE + extra;
    for (base, xoff) in [
        (0x0Cusize, 0x84usize),
        (0x10, 0x88),
        (0x08, 0x8C),
        (0x90, 0x94),
    ] {
        if fits(xoff)
            && (base < GOOD_OLD_INODE_SIZE || fits(base))
            && le32(raw, base) & 0x8000_0000 != 0
            && le32(raw, xoff) & 3 == 3
        {
            probs.push(
                Problem::new(Code::InodeBadFlags)
                    .ino(ino)
                    .detail("extra time fields in the old, invalid format"),
            );
            break;
        }
    }
}

/// e2fsck's walk of the in-inode entries: names and values must fit the
/// space left, values may not overlap, hashes must match (0 allowed).
fn in_inode_problem(area: &[u8]) -> Option<&'static str> {
    let storage = area.len();
    let mut region = Region::new(storage);
    region.take(0, 4);
    let mut remain = storage.saturating_sub(4);
    let mut off = 4usize;
    while remain >= ENTRY_HEADER_LEN && le32(area, off) != 0 {
        remain -= ENTRY_HEADER_LEN;
        let name_len = u8_at(area, off) as usize;
        let name_size = round4(name_len);
        if name_size > remain {
            return Some("attribute name too long");
        }
        remain -= name_size;
        let value_offs = le16(area, off + 2) as usize;
        let value_inum = le32(area, off + 4);
        let value_size = le32(area, off + 8) as usize;
        let hash = le32(area, off + 12);
        if value_inum != 0 {
            return Some("value stored in an inode without ea_inode");
        }
        if value_size > remain {
            return Some("attribute value size too big");
        }
        if value_size != 0 && !region.take(4 + value_offs, round4(value_size)) {
            return Some("attribute values overlap");
        }
        let name = area.get(off + ENTRY_HEADER_LEN..off + ENTRY_HEADER_LEN + name_len);
        let vstart = 4 + value_offs;
        let value = area
            .get(vstart..(vstart + round4(value_size)).min(storage))
            .unwrap_or(&[]);
        if hash != 0 && !hash_ok(hash, name.unwrap_or(&[]), value) {
            return Some("attribute hash is invalid");
        }
        remain -= value_size;
        off += ENTRY_HEADER_LEN + name_size;
    }
    if !region.take(off, 4) {
        return Some("entry table overlaps values");
    }
    None
}

/// Finds the value size of `system.data` among the entries of `area`
/// (value offsets relative to `vbase`).
fn find_system_data(area: &[u8], first: usize) -> Option<u64> {
    let entries = xattr::read_entries(area, first).ok()?;
    entries
        .iter()
        .find(|e| e.name_index == SYSTEM_INDEX && e.name == b"data")
        .map(|e| e.value_size as u64)
}

/// Size of an inode's inline data: 60 bytes in i_block plus the value of
/// its `system.data` xattr. Without the xattr the size is 60, unless
/// `require` (e2fsck's "INLINE_DATA_FL flag but extended attribute not
/// found"); xattrs that cannot be read are an error either way.
pub fn inline_data_size(
    fs: &Fs,
    raw: &[u8],
    inode: &Inode,
    buf: &mut [u8],
    require: bool,
) -> Result<u64, &'static str> {
    if let Some(area) = inode_area(raw, inode) {
        match xattr::read_entries(area, 0) {
            Ok(es) => {
                if let Some(e) = es
                    .iter()
                    .find(|e| e.name_index == SYSTEM_INDEX && e.name == b"data")
                {
                    return Ok(MIN_INLINE_DATA_SIZE + e.value_size as u64);
                }
            }
            Err(_) => return Err("corrupt in-inode extended attributes"),
        }
    }
    if inode.file_acl != 0 && fs.geo.block_in_fs(inode.file_acl) {
        if fs.read_block_into(inode.file_acl, buf).is_err() {
            return Err("xattr block unreadable");
        }
        if le32(buf, 0) == XATTR_MAGIC
            && let Some(sz) = find_system_data(buf, xattr::BLOCK_HEADER_LEN)
        {
            return Ok(MIN_INLINE_DATA_SIZE + sz);
        }
    }
    if require {
        Err("no system.data extended attribute")
    } else {
        Ok(MIN_INLINE_DATA_SIZE)
    }
}

/// Validates one xattr block like e2fsck; returns the problems (empty when
/// the block is good) and its stored reference count.
fn check_block(fs: &Fs, blk: u64, ino: u32, buf: &mut [u8]) -> (Vec<Problem>, u32) {
    let mut out = Vec::new();
    if let Err(e) = fs.read_block_into(blk, buf) {
        out.push(
            Problem::new(Code::XattrBlockHeader)
                .ino(ino)
                .blk(blk)
                .detail(format!("cannot read: {e}")),
        );
        return (out, 0);
    }
    let h = xattr::parse_block_header(buf);
    if h.magic != XATTR_MAGIC {
        out.push(
            Problem::new(Code::XattrBlockHeader)
                .ino(ino)
                .blk(blk)
                .detail("bad magic"),
        );
        return (out, h.refcount);
    }
    if h.blocks != 1 {
        out.push(
            Problem::new(Code::XattrBlockHeader)
                .ino(ino)
                .blk(blk)
                .detail(format!("h_blocks is {}", h.blocks)),
        );
        return (out, h.refcount);
    }
    let bs = buf.len();
    let mut region = Region::new(bs);
    region.take(0, xattr::BLOCK_HEADER_LEN);
    let mut off = xattr::BLOCK_HEADER_LEN;
    let entries = |why: &str| {
        Problem::new(Code::XattrBlockEntries)
            .ino(ino)
            .blk(blk)
            .detail(why.to_string())
    };
    while off + 4 <= bs && le32(buf, off) != 0 {
        let name_len = u8_at(buf, off) as usize;
        if !region.take(off, round4(ENTRY_HEADER_LEN + name_len)) {
            out.push(entries("entries overlap"));
            break;
        }
        if u8_at(buf, off + 1) == 0 {
            out.push(entries("bad attribute name"));
            break;
        }
        let value_offs = le16(buf, off + 2) as usize;
        let value_inum = le32(buf, off + 4);
        let value_size = le32(buf, off + 8) as usize;
        let hash = le32(buf, off + 12);
        if value_inum != 0 {
            out.push(entries("value stored in an inode without ea_inode"));
        } else {
            if value_offs + value_size > bs {
                out.push(entries("bad attribute value"));
                break;
            }
            if value_size != 0 && !region.take(value_offs, round4(value_size)) {
                out.push(entries("attribute values overlap"));
            }
            let name = buf
                .get(off + ENTRY_HEADER_LEN..off + ENTRY_HEADER_LEN + name_len)
                .unwrap_or(&[]);
            let value = buf
                .get(value_offs..(value_offs + round4(value_size)).min(bs))
                .unwrap_or(&[]);
            if !hash_ok(hash, name, value) {
                out.push(
                    Problem::new(Code::XattrHash)
                        .ino(ino)
                        .num(hash as u64)
                        .blk(blk),
                );
            }
        }
        off += round4(ENTRY_HEADER_LEN + name_len);
    }
    if out.is_empty() && !region.take(off, 4) {
        out.push(entries("entry table overlaps values"));
    }
    if out.is_empty()
        && fs.metadata_csum()
        && xattr::compute_block_checksum(fs.csum_seed, blk, buf) != h.checksum
    {
        out.push(Problem::new(Code::XattrBlockChecksum).ino(ino).blk(blk));
    }
    (out, h.refcount)
}

/// Validates every xattr block referenced by an in-use inode (once per
/// block), claims the good ones, records them in `state.xattr_blocks` and
/// compares their reference counts with the inodes that point at them.
pub fn check_blocks(
    fs: &Fs,
    state: &mut State,
    mut xrefs: Vec<(u64, u32)>,
    threads: Threads,
) -> Vec<Problem> {
    xrefs.sort_unstable();
    // (block, first inode, inodes referencing it)
    let mut blocks: Vec<(u64, u32, u32)> = Vec::new();
    for &(blk, ino) in &xrefs {
        match blocks.last_mut() {
            Some(last) if last.0 == blk => last.2 += 1,
            _ => blocks.push((blk, ino, 1)),
        }
    }
    const CHUNK: usize = 64;
    let nunits = blocks.len().div_ceil(CHUNK);
    let bs = fs.block_size();
    let results = par_map(
        nunits,
        threads,
        || vec![0u8; bs],
        |buf, u| {
            let lo = u * CHUNK;
            let hi = (lo + CHUNK).min(blocks.len());
            blocks[lo..hi]
                .iter()
                .map(|&(blk, ino, _)| check_block(fs, blk, ino, buf))
                .collect::<Vec<_>>()
        },
    );
    let mut probs = Vec::new();
    for (&(blk, _, seen), (p, refcount)) in blocks.iter().zip(results.into_iter().flatten()) {
        let good = p.is_empty() || p.iter().all(|x| x.code == Code::XattrBlockChecksum);
        probs.extend(p);
        if !good {
            continue;
        }
        state.claim_block(blk);
        state.xattr_blocks.push(XattrBlockRef {
            blk,
            refcount,
            seen,
        });
        if refcount != seen {
            probs.push(
                Problem::new(Code::XattrBlockRefcount)
                    .blk(blk)
                    .num(refcount as u64)
                    .num2(seen as u64),
            );
        }
    }
    probs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::{put_le16, put_le32};

    fn area_with_entry(hash_fix: bool) -> Vec<u8> {
        // 96 bytes: magic, one entry "user.a" = "xyz", terminator, value.
        let mut a = vec![0u8; 96];
        put_le32(&mut a, 0, XATTR_MAGIC);
        a[4] = 1; // name_len
        a[5] = 1; // user.
        put_le16(&mut a, 6, 60); // value offset (from the first entry)
        put_le32(&mut a, 12, 3);
        a[20] = b'a';
        a[64..67].copy_from_slice(b"xyz");
        if hash_fix {
            let h = xattr::entry_hash(b"a", &a[64..68], false);
            put_le32(&mut a, 16, h);
        } else {
            put_le32(&mut a, 16, 12345);
        }
        a
    }

    #[test]
    fn in_inode_entries() {
        assert_eq!(in_inode_problem(&area_with_entry(true)), None);
        assert_eq!(
            in_inode_problem(&area_with_entry(false)),
            Some("attribute hash is invalid")
        );
        let mut a = area_with_entry(true);
        put_le16(&mut a, 6, 200);
        assert!(in_inode_problem(&a).is_some());
        let mut a = area_with_entry(true);
        put_le32(&mut a, 12, 5000);
        assert_eq!(in_inode_problem(&a), Some("attribute value size too big"));
    }

    #[test]
    fn region_overlaps() {
        let mut r = Region::new(100);
        assert!(r.take(0, 4));
        assert!(!r.take(2, 4));
        assert!(r.take(4, 96));
        assert!(!r.take(99, 2));
        assert!(!r.take(usize::MAX, 2));
    }
}
