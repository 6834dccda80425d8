//! Extended attribute checks for pass 1: the area after the inode's fixed
//! part (with extra_isize), xattr blocks (validated once per block, after
//! the inode scan, so the inode named in a report does not depend on thread
//! timing) and their reference counts; and the size of inline data.
//!
//! With ea_inode, an entry may keep its value in an EA inode
//! (`e_value_inum`): the inode must be in range, its stored value hash must
//! give the entry's hash, and it must carry EA_INODE. Every such entry is
//! counted as a reference (pass 4 compares the counts) and its value, in
//! blocks, is charged to the inode owning the xattr (i_blocks and quota),
//! as the kernel does.

use super::problem::{Code, Problem, ProblemList};
use super::state::{State, XattrBlockRef};
use crate::engine::{Control, Threads, par_map};
use crate::fs::bytes::{le32, u8_at};
use crate::fs::inode::{GOOD_OLD_INODE_SIZE, Inode, flags};
use crate::fs::num::{Blk, Ino};
use crate::fs::superblock::incompat;
use crate::fs::xattr::{self, ENTRY_HEADER_LEN, XATTR_MAGIC};
use crate::narrow;
use crate::volume::Fs;

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

/// What the EA-inode entries of one inode's xattr area (or one xattr block)
/// charge to the inodes owning them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct EaCharge {
    /// File system blocks of the values held in EA inodes (valid entries).
    pub blocks: u64,
    /// Entries whose value is in an EA inode (each counts as an inode for
    /// quota).
    pub inodes: u64,
}

/// The inode owning an xattr, as the EA inode checks need it.
#[derive(Clone, Copy, Debug)]
pub struct Owner {
    pub ino: u32,
    pub generation: u32,
}

/// One entry whose value lives in an EA inode.
struct EaEntry<'a> {
    name: &'a [u8],
    value_inum: u32,
    value_size: u32,
    hash: u32,
}

/// e2fsck's check of an EA-inode reference. Ok gives the blocks the value
/// is charged for (0 for an old Lustre-style reference, whose EA inode
/// names its owner in i_mtime instead of carrying a value hash).
fn check_ea_ref(fs: &Fs, owner: Owner, e: &EaEntry) -> Result<u64, Problem> {
    let illegal = || {
        Problem::new(Code::XattrEaInodeInvalid)
            .ino(Ino(owner.ino))
            .num(u64::from(e.value_inum))
    };
    if e.value_inum < fs.geo.first_ino || e.value_inum > fs.geo.inodes_count {
        return Err(illegal());
    }
    let Ok(raw) = fs.read_inode_raw(Ino(e.value_inum)) else {
        return Err(illegal());
    };
    let ea = Inode::parse(&raw);
    // A value in an EA inode has a size, and it is the EA inode's (e2fsck
    // judges this before the hash).
    if e.value_size == 0 || u64::from(e.value_size) != ea.size {
        return Err(Problem::new(Code::XattrValueSize)
            .ino(Ino(owner.ino))
            .num(u64::from(e.value_size)));
    }
    let value_hash = xattr::ea_inode_value_hash(&raw);
    let hash_ok = e.hash == xattr::ea_inode_entry_hash(e.name, value_hash, false)
        || e.hash == xattr::ea_inode_entry_hash(e.name, value_hash, true);
    let has_flag = ea.has_flag(flags::EA_INODE);
    let blocks = if hash_ok {
        u64::from(e.value_size).div_ceil(u64::from(fs.geo.block_size))
    } else if ea.mtime == owner.ino && ea.generation == owner.generation {
        0
    } else if !has_flag {
        return Err(illegal());
    } else {
        return Err(Problem::new(Code::XattrHash)
            .ino(Ino(owner.ino))
            .num(u64::from(e.hash)));
    };
    if !has_flag {
        return Err(Problem::new(Code::XattrEaInodeNoFlag)
            .ino(Ino(owner.ino))
            .e2fsck(0x010086)
            .num(u64::from(e.value_inum)));
    }
    Ok(blocks)
}

/// An entry keeps its value in an EA inode on a file system without the
/// ea_inode feature. e2fsck asks to set the feature for each such entry
/// and, yes or no, judges the reference as it would with the feature.
fn feature_missing(fs: &Fs, owner: Owner) -> Option<Problem> {
    (!fs.sb.has_incompat(incompat::EA_INODE))
        .then(|| Problem::new(Code::InodeEaInodeFlag).ino(Ino(owner.ino)))
}

/// The EA inodes the entries of `area` (from `start`) refer to, pushed to
/// `refs`. Like e2fsck, every entry counts, valid or not, as long as the
/// table can be walked.
fn collect_ea_refs(area: &[u8], start: usize, refs: &mut Vec<u32>) {
    let mut off = start;
    while off + ENTRY_HEADER_LEN <= area.len() && le32(area, off) != 0 {
        let inum = le32(area, off + 4);
        if inum != 0 {
            refs.push(inum);
        }
        off += round4(ENTRY_HEADER_LEN + usize::from(u8_at(area, off)));
    }
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
/// Returns what the EA-inode entries of the area charge to the inode, and
/// pushes the EA inodes they refer to onto `ea_refs` (with ea_inode only).
pub fn check_inode_extra(
    fs: &Fs,
    probs: &mut ProblemList,
    ea_refs: &mut Vec<u32>,
    owner: Owner,
    raw: &[u8],
    inode: &Inode,
) -> EaCharge {
    let ino = owner.ino;
    let mut charge = EaCharge::default();
    let isz = raw.len();
    if isz <= GOOD_OLD_INODE_SIZE {
        return charge;
    }
    let max = isz - GOOD_OLD_INODE_SIZE;
    let extra = inode.extra_isize as usize;
    if extra != 0 && (extra < 4 || extra > max || extra & 3 != 0) {
        probs.push(
            Problem::new(Code::InodeExtraIsize)
                .ino(Ino(ino))
                .num(extra as u64),
        );
        return charge;
    }
    if extra + 4 < max && le32(raw, GOOD_OLD_INODE_SIZE + extra) == XATTR_MAGIC {
        let header = GOOD_OLD_INODE_SIZE + extra;
        let area = &raw[header..];
        let mut check_ref = |e: &EaEntry| -> Result<u64, Problem> {
            if let Some(p) = feature_missing(fs, owner) {
                probs.push(p);
            }
            check_ea_ref(fs, owner, e)
        };
        let issue = in_inode_problem(area, &mut charge, &mut check_ref);
        match issue {
            Some(InInodeIssue::Corrupt(why, e2)) => {
                probs.push(
                    Problem::new(Code::InodeXattrInInode)
                        .ino(Ino(ino))
                        .e2fsck(e2)
                        .detail(why),
                );
            }
            Some(InInodeIssue::Entry(p)) => probs.push(p),
            None => {}
        }
        collect_ea_refs(area, 4, ea_refs);
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
            probs.push(Problem::new(Code::InodeTimesPre1970).ino(Ino(ino)));
            break;
        }
    }
    charge
}

/// The first thing wrong with an in-inode xattr area.
#[derive(Debug, PartialEq, Eq)]
enum InInodeIssue {
    /// The area itself is corrupt: why, and e2fsck's code for it.
    Corrupt(&'static str, u32),
    /// An entry's EA-inode reference is wrong (its own problem).
    Entry(Problem),
}

/// e2fsck's walk of the in-inode entries: names and values must fit the
/// space left, values may not overlap, hashes must match (0 allowed).
/// Entries with a value in an EA inode take no value space; `check_ref`
/// judges them and what valid ones charge is added to `charge`. Like
/// e2fsck, the walk stops at the first problem.
fn in_inode_problem(
    area: &[u8],
    charge: &mut EaCharge,
    check_ref: &mut dyn FnMut(&EaEntry) -> Result<u64, Problem>,
) -> Option<InInodeIssue> {
    use InInodeIssue::Corrupt;
    let storage = area.len();
    let mut region = Region::new(storage);
    region.take(0, 4);
    let mut remain = storage.saturating_sub(4);
    let mut off = 4usize;
    while remain >= ENTRY_HEADER_LEN && le32(area, off) != 0 {
        let name_len = usize::from(u8_at(area, off));
        if !region.take(off, round4(ENTRY_HEADER_LEN + name_len)) {
            return Some(Corrupt("entry overlaps another entry or a value", 0x010069));
        }
        remain -= ENTRY_HEADER_LEN;
        let name_size = round4(name_len);
        if name_size > remain {
            return Some(Corrupt("attribute name too long", 0x010050));
        }
        remain -= name_size;
        let entry = xattr::entry_at(area, off);
        let (value_offs, value_inum) = (entry.value_offs as usize, entry.value_inum);
        let (value_size, hash, name) = (entry.value_size as usize, entry.hash, entry.name);
        if value_inum != 0 {
            let e = EaEntry {
                name,
                value_inum,
                value_size: narrow::sat32(value_size),
                hash,
            };
            match check_ref(&e) {
                Ok(blocks) => {
                    charge.blocks += blocks;
                    charge.inodes += 1;
                }
                Err(p) => return Some(InInodeIssue::Entry(p)),
            }
        } else {
            if value_size > remain {
                return Some(Corrupt("attribute value size too big", 0x010053));
            }
            if value_size != 0 && !region.take(4 + value_offs, round4(value_size)) {
                return Some(Corrupt("attribute values overlap", 0x010069));
            }
            let vstart = 4 + value_offs;
            let value = area
                .get(vstart..(vstart + round4(value_size)).min(storage))
                .unwrap_or(&[]);
            if hash != 0 && !hash_ok(hash, name, value) {
                return Some(Corrupt("attribute hash is invalid", 0x010054));
            }
            remain -= value_size;
        }
        off += ENTRY_HEADER_LEN + name_size;
    }
    if !region.take(off, 4) {
        return Some(Corrupt("entry table overlaps values", 0x010069));
    }
    None
}

/// Size of an inode's inline data: 60 bytes in i_block plus the value of
/// its `system.data` xattr. Without the xattr the size is 60, unless
/// `require` (e2fsck's "INLINE_DATA_FL flag but extended attribute not
/// found"); xattrs that cannot be read are an error either way. They are
/// read as libext2fs reads them for e2fsck (`library_read`): the in-inode
/// area, then the xattr block, any error in either hiding the value.
pub fn inline_data_size(
    fs: &Fs,
    raw: &[u8],
    inode: &Inode,
    buf: &mut [u8],
    require: bool,
) -> Result<u64, &'static str> {
    let ea_inode = fs.sb.has_incompat(incompat::EA_INODE);
    let read_inode = |ino: u32| fs.read_inode_raw(Ino(ino)).ok();
    let mut found = None;
    if let Some(area) = inode_area(raw, inode) {
        found = library_read(area, 0, ea_inode, &read_inode)
            .map_err(|_| "corrupt in-inode extended attributes")?;
    }
    let acl = inode.acl_block(fs.sb.is_64bit());
    if acl != 0 {
        if !fs.geo.block_in_fs(acl) {
            return Err("xattr block out of range");
        }
        if fs.read_block_into(acl, buf).is_err() {
            return Err("xattr block unreadable");
        }
        if xattr::parse_block_header(buf).magic != XATTR_MAGIC {
            return Err("xattr block has a bad header");
        }
        let in_block = library_read(buf, xattr::BLOCK_HEADER_LEN, ea_inode, &read_inode)
            .map_err(|_| "corrupt xattr block")?;
        found = found.or(in_block);
    }
    match found {
        Some(sz) => Ok(MIN_INLINE_DATA_SIZE + sz),
        None if require => Err("no system.data extended attribute"),
        None => Ok(MIN_INLINE_DATA_SIZE),
    }
}

/// [`inline_data_size`] as e2fsck's first look at an inline-data inode
/// reads it: the library also verifies the xattr block's checksum there,
/// unless the inode's own checksum failed (`inode_csum_ok` false), which
/// has e2fsck ignore checksum errors for that inode.
pub fn inline_data_size_verified(
    fs: &Fs,
    (raw, inode, inode_csum_ok): (&[u8], &Inode, bool),
    buf: &mut [u8],
) -> Result<u64, &'static str> {
    let size = inline_data_size(fs, raw, inode, buf, true)?;
    let acl = inode.acl_block(fs.sb.is_64bit());
    // `buf` holds the xattr block that was just read.
    if acl != 0
        && inode_csum_ok
        && fs.metadata_csum()
        && xattr::compute_block_checksum(fs.csum_seed, acl, buf)
            != xattr::parse_block_header(buf).checksum
    {
        return Err("its xattr block fails its checksum");
    }
    Ok(size)
}

/// Reads an xattr table the way libext2fs does before e2fsck may use a
/// value (stricter than e2fsck's own checks of the table): `buf` is what
/// value offsets count from, the entries start at `first`. Returns the
/// value size of `system.data`, if there. The error is the first rule
/// broken; e2fsck then takes the inline data for missing.
fn library_read(
    buf: &[u8],
    first: usize,
    ea_inode: bool,
    read_inode: &dyn Fn(u32) -> Option<Vec<u8>>,
) -> Result<Option<u64>, &'static str> {
    let storage = buf.len().saturating_sub(first);
    let round = |n: usize| (n + 3) & !3;
    let last = |at: usize| at + 4 > buf.len() || le32(buf, at) == 0;
    // The end of the table: every name must fit.
    let (mut end, mut remain) = (first, storage);
    while remain >= xattr::ENTRY_HEADER_LEN && !last(end) {
        remain -= xattr::ENTRY_HEADER_LEN;
        let name = round(usize::from(buf[end]));
        if name > remain {
            return Err("name runs past the table");
        }
        remain -= name;
        end += xattr::ENTRY_HEADER_LEN + name;
    }
    let (mut at, mut remain) = (first, storage);
    let mut data = None;
    while remain >= xattr::ENTRY_HEADER_LEN && !last(at) {
        let e = xattr::entry_at(buf, at);
        remain -= xattr::ENTRY_HEADER_LEN + round(e.name.len());
        let size = e.value_size as usize;
        let offs = usize::from(e.value_offs);
        let value: &[u8] = if e.value_inum == 0 {
            if size > remain {
                return Err("value larger than the table");
            }
            if offs + size > buf.len() || (size > 0 && offs < end + 4) {
                return Err("value outside the value area");
            }
            remain -= size;
            &buf[offs..offs + size]
        } else {
            if !ea_inode {
                return Err("value in an inode without ea_inode");
            }
            if offs != 0 {
                return Err("value offset with an EA inode");
            }
            if size > 64 * 1024 {
                return Err("EA inode value too large");
            }
            let Some(raw) = read_inode(e.value_inum) else {
                return Err("EA inode unreadable");
            };
            let child = Inode::parse(&raw);
            if child.has_flag(flags::INLINE_DATA)
                || !child.has_flag(flags::EA_INODE)
                || child.links_count == 0
            {
                return Err("EA inode corrupted");
            }
            if child.size != u64::from(e.value_size) {
                return Err("EA inode size is not the value size");
            }
            &[]
        };
        if e.hash != 0 {
            let ok = if e.value_inum == 0 {
                e.hash == xattr::entry_hash(e.name, value, false)
                    || e.hash == xattr::entry_hash(e.name, value, true)
            } else {
                // (libext2fs also takes an old Lustre-style reference,
                // which no inline-data inode has.)
                let raw = read_inode(e.value_inum).unwrap_or_default();
                let vh = xattr::ea_inode_value_hash(&raw);
                e.hash == xattr::ea_inode_entry_hash(e.name, vh, false)
                    || e.hash == xattr::ea_inode_entry_hash(e.name, vh, true)
            };
            if !ok {
                return Err("entry hash is wrong");
            }
        }
        if xattr::name_is(e.name_index, e.name, xattr::INDEX_SYSTEM, b"data") && data.is_none() {
            data = Some(u64::from(e.value_size));
        }
        at += xattr::ENTRY_HEADER_LEN + round(e.name.len());
    }
    Ok(data)
}

/// The value of xattr (`index`, `name`) of an inode: the in-inode area
/// first, then the xattr block. None when it is absent, kept in an EA
/// inode, or the areas cannot be read (e2fsck then finds no value either).
pub fn find_value(
    fs: &Fs,
    raw: &[u8],
    inode: &Inode,
    buf: &mut [u8],
    index: u8,
    name: &[u8],
) -> Option<Vec<u8>> {
    let pick = |area: &[u8], first: usize| -> Option<Option<Vec<u8>>> {
        let es = xattr::read_entries(area, first).ok()?;
        Some(
            es.iter()
                .find(|e| e.name_index == index && e.name == name && e.value_inum == 0)
                .and_then(|e| {
                    let s = e.value_offs as usize;
                    area.get(s..s.checked_add(e.value_size as usize)?)
                        .map(<[u8]>::to_vec)
                }),
        )
    };
    if let Some(area) = inode_area(raw, inode)
        && let Some(v) = pick(area, 0)?
    {
        return Some(v);
    }
    let acl = inode.acl_block(fs.sb.is_64bit());
    if acl != 0
        && fs.geo.block_in_fs(acl)
        && fs.read_block_into(acl, buf).is_ok()
        && xattr::parse_block_header(buf).magic == XATTR_MAGIC
    {
        return pick(buf, xattr::BLOCK_HEADER_LEN)?;
    }
    None
}

/// What validating one xattr block found.
#[derive(Default)]
struct BlockCheck {
    /// Problems that make e2fsck clear the block (when allowed to).
    problems: Vec<Problem>,
    /// Problems with EA-inode references only: the block itself stays.
    ea_problems: Vec<Problem>,
    refcount: u32,
    charge: EaCharge,
    ea_refs: Vec<u32>,
    /// The block could be read.
    read: bool,
}

/// Validates one xattr block like e2fsck (`owner` is the first inode
/// referring to it). `repairing`: e2fsck clears the block at its first
/// problem; declined (-n), it goes on checking the rest of it.
fn check_block(fs: &Fs, blk: u64, owner: Owner, buf: &mut [u8], repairing: bool) -> BlockCheck {
    let ino = owner.ino;
    let mut out = BlockCheck::default();
    if let Err(e) = fs.read_block_into(blk, buf) {
        out.problems.push(
            Problem::new(Code::XattrBlockHeader)
                .ino(Ino(ino))
                .blk(Blk(blk))
                .e2fsck(0x010039)
                .detail(format!("cannot read: {e}")),
        );
        return out;
    }
    out.read = true;
    let h = xattr::parse_block_header(buf);
    out.refcount = h.refcount;
    if h.magic != XATTR_MAGIC {
        out.problems.push(
            Problem::new(Code::XattrBlockHeader)
                .ino(Ino(ino))
                .blk(Blk(blk))
                .detail("bad magic"),
        );
        if repairing {
            return out;
        }
    }
    if h.blocks != 1 {
        out.problems.push(
            Problem::new(Code::XattrBlockHeader)
                .ino(Ino(ino))
                .blk(Blk(blk))
                .e2fsck(0x01003E)
                .detail(format!("h_blocks is {}", h.blocks)),
        );
        if repairing {
            return out;
        }
    }
    let bs = buf.len();
    let mut region = Region::new(bs);
    region.take(0, xattr::BLOCK_HEADER_LEN);
    let mut off = xattr::BLOCK_HEADER_LEN;
    // e2fsck's codes: overlapping entries, a bad name, a bad value.
    let (overlap, bad_name, bad_value) = (0x010040, 0x010041, 0x010042);
    let entries = |why: &str, e2: u32| {
        Problem::new(Code::XattrBlockEntries)
            .ino(Ino(ino))
            .blk(Blk(blk))
            .e2fsck(e2)
            .detail(why.to_string())
    };
    while off + 4 <= bs && le32(buf, off) != 0 {
        let name_len = usize::from(u8_at(buf, off));
        if !region.take(off, round4(ENTRY_HEADER_LEN + name_len)) {
            out.problems.push(entries("entries overlap", overlap));
            break;
        }
        if u8_at(buf, off + 1) == 0 {
            out.problems.push(entries("bad attribute name", bad_name));
            break;
        }
        let entry = xattr::entry_at(buf, off);
        let (value_offs, value_inum) = (entry.value_offs as usize, entry.value_inum);
        let (value_size, hash, name) = (entry.value_size as usize, entry.hash, entry.name);
        if value_inum != 0 {
            out.ea_problems.extend(feature_missing(fs, owner));
            let e = EaEntry {
                name,
                value_inum,
                value_size: narrow::sat32(value_size),
                hash,
            };
            // Declined, e2fsck keeps the entry and counts it for quota.
            match check_ea_ref(fs, owner, &e) {
                Ok(blocks) => out.charge.blocks += blocks,
                Err(p) => out.ea_problems.push(p.blk(Blk(blk))),
            }
            out.charge.inodes += 1;
        } else {
            if value_offs + value_size > bs {
                out.problems.push(entries("bad attribute value", bad_value));
                break;
            }
            if value_size != 0 && !region.take(value_offs, round4(value_size)) {
                out.problems
                    .push(entries("attribute values overlap", overlap));
            }
            let value = buf
                .get(value_offs..(value_offs + round4(value_size)).min(bs))
                .unwrap_or(&[]);
            if !hash_ok(hash, name, value) {
                out.problems.push(
                    Problem::new(Code::XattrHash)
                        .ino(Ino(ino))
                        .num(u64::from(hash))
                        .blk(Blk(blk)),
                );
            }
        }
        off += round4(ENTRY_HEADER_LEN + name_len);
    }
    // Declined, e2fsck goes on from where the walk stopped: the four bytes
    // of the end marker are taken there, on the entry it stopped at.
    if (out.problems.is_empty() || !repairing) && !region.take(off, 4) {
        out.problems
            .push(entries("entry table overlaps values", overlap));
    }
    // A header e2fsck's library rejects (magic, h_blocks) hides the
    // checksum.
    if (out.problems.is_empty() || !repairing)
        && h.magic == XATTR_MAGIC
        && h.blocks == 1
        && fs.metadata_csum()
        && xattr::compute_block_checksum(fs.csum_seed, blk, buf) != h.checksum
    {
        out.problems.push(
            Problem::new(Code::XattrBlockChecksum)
                .ino(Ino(ino))
                .blk(Blk(blk)),
        );
    }
    collect_ea_refs(buf, xattr::BLOCK_HEADER_LEN, &mut out.ea_refs);
    out
}

/// Validates every xattr block referenced by an in-use inode (once per
/// block), claims the good ones, records them in `state.xattr_blocks` and
/// compares their reference counts with the inodes that point at them.
/// `xrefs` holds (block, referencing inode, its i_generation). The EA
/// inodes the blocks refer to are pushed onto `ea_refs`, once per block.
///
/// Declined (`repairing` false), e2fsck keeps a readable block whatever
/// it found in it: it counts it for the inode and in use, and checks its
/// reference count.
pub fn check_blocks(
    fs: &Fs,
    state: &mut State,
    mut xrefs: Vec<(u64, u32, u32)>,
    ea_refs: &mut Vec<u32>,
    repairing: bool,
    threads: Threads,
    ctl: &Control,
) -> Vec<Problem> {
    xrefs.sort_unstable();
    // (block, first inode, its generation, inodes referencing it)
    let mut blocks: Vec<(u64, Owner, u32)> = Vec::new();
    for &(blk, ino, generation) in &xrefs {
        match blocks.last_mut() {
            Some(last) if last.0 == blk => last.2 += 1,
            _ => blocks.push((blk, Owner { ino, generation }, 1)),
        }
    }
    const CHUNK: usize = 64;
    let nunits = blocks.len().div_ceil(CHUNK);
    let bs = fs.block_size();
    let results = par_map(
        nunits,
        threads,
        ctl,
        || vec![0u8; bs],
        |buf, u| {
            let lo = u * CHUNK;
            let hi = (lo + CHUNK).min(blocks.len());
            blocks[lo..hi]
                .iter()
                .map(|&(blk, owner, _)| check_block(fs, blk, owner, buf, repairing))
                .collect::<Vec<_>>()
        },
    );
    let mut probs = Vec::new();
    for (&(blk, _, seen), r) in blocks.iter().zip(results.into_iter().flatten()) {
        let good = r
            .problems
            .iter()
            .all(|x| x.code == Code::XattrBlockChecksum)
            || (!repairing && r.read);
        probs.extend(r.problems);
        probs.extend(r.ea_problems);
        ea_refs.extend(r.ea_refs);
        if !good {
            continue;
        }
        state.claim_block(blk);
        state.xattr_blocks.push(XattrBlockRef {
            blk,
            refcount: r.refcount,
            seen,
            charge: r.charge,
        });
        if r.refcount != seen {
            probs.push(
                Problem::new(Code::XattrBlockRefcount)
                    .blk(Blk(blk))
                    .num(u64::from(r.refcount))
                    .num2(u64::from(seen)),
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

    fn walk(a: &[u8]) -> (Option<InInodeIssue>, EaCharge) {
        let mut charge = EaCharge::default();
        let mut check = |e: &EaEntry| -> Result<u64, Problem> {
            if e.value_inum == 99 {
                Err(Problem::new(Code::XattrEaInodeInvalid).num(99))
            } else {
                Ok(2)
            }
        };
        let r = in_inode_problem(a, &mut charge, &mut check);
        (r, charge)
    }

    #[test]
    fn in_inode_entries() {
        assert_eq!(walk(&area_with_entry(true)).0, None);
        assert_eq!(
            walk(&area_with_entry(false)).0,
            Some(InInodeIssue::Corrupt("attribute hash is invalid", 0x010054))
        );
        let mut a = area_with_entry(true);
        put_le16(&mut a, 6, 200);
        assert!(walk(&a).0.is_some());
        let mut a = area_with_entry(true);
        put_le32(&mut a, 12, 5000);
        assert_eq!(
            walk(&a).0,
            Some(InInodeIssue::Corrupt(
                "attribute value size too big",
                0x010053
            ))
        );
    }

    #[test]
    fn in_inode_ea_inode_entries() {
        // The value lives in inode 20: no value space, a charge instead.
        let mut a = area_with_entry(true);
        put_le32(&mut a, 8, 20);
        put_le32(&mut a, 12, 5000);
        let (r, charge) = walk(&a);
        assert_eq!(r, None);
        assert_eq!(
            charge,
            EaCharge {
                blocks: 2,
                inodes: 1
            }
        );
        put_le32(&mut a, 8, 99);
        assert!(matches!(walk(&a).0, Some(InInodeIssue::Entry(_))));
        let mut refs = Vec::new();
        collect_ea_refs(&a, 4, &mut refs);
        assert_eq!(refs, vec![99]);
        // A table running off the end stops the walk without a panic.
        collect_ea_refs(&a[..10], 4, &mut refs);
        assert_eq!(refs, vec![99]);
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
