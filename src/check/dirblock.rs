//! The checks pass 2 makes on one directory block (or on the inline area of
//! an inline-data directory), as pure functions over the block's bytes.
//!
//! What the rest of the file system says about an entry's target (in use?
//! a directory? flagged bad by pass 1?) comes through the `Targets` trait,
//! so these checks run on hand-made buffers in tests exactly as on disk.
//! Everything a block teaches the later stages (links seen, subdirectory
//! entries, '..' targets, index nodes, leaf hash ranges) goes into a `Sink`
//! owned by one worker; the caller merges sinks in unit order.

use super::problem::{Code, Problem, ProblemList};
use crate::fs::bytes::u8_at;
use crate::fs::casefold;
use crate::fs::crypt;
use crate::fs::dir_entry::{self};
use crate::fs::dir_entry::{inode_at, name_len_at, rec_len_at};
use crate::fs::dir_salvage;
use crate::fs::dx_hash::{DX_HASH_SIPHASH, dx_hash};
use crate::fs::htree;

use crate::fs::num::{Blk, Ino};
use crate::narrow;

// Smallest record that can hold an entry with a name (header + 1..4 bytes).
use crate::fs::dir_salvage::MIN_REC as MIN_REC_LEN;
/// The (hash, minor hash) pair an encrypted casefolded entry carries.
const DIRENT_HASH_LEN: usize = 8;
/// e2fsck's EXT4_DX_BLOCK_MASK: the top 4 bits of an index entry's block
/// number are reserved.
pub const DX_BLOCK_MASK: u32 = 0x0FFF_FFFF;

/// What pass 1 knows about an entry's target inode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TargetInfo {
    pub used: bool,
    pub dir: bool,
    pub reg: bool,
    /// Pass 1 found fields it could not accept (e2fsck's inode_bad_map).
    pub bad: bool,
    /// The inode sits in an inode table block listed as bad.
    pub in_bad_block: bool,
    /// `FileType as u8` from the mode.
    pub ftype: u8,
    /// Carries EA_INODE_FL (`iflag::EA_INODE`): an entry naming it is
    /// wrong once pass 1 has found xattrs referring to it.
    pub ea_inode: bool,
    /// Its checksum fails, left so by a read-only check
    /// (`iflag::CSUM_FAILED`).
    pub csum_failed: bool,
}

pub trait Targets {
    fn info(&self, ino: Ino) -> TargetInfo;
    /// Counts one more directory entry naming `ino`.
    fn add_link(&self, ino: Ino);
    /// The encryption policy id of `ino` (None: not encrypted).
    fn policy(&self, _ino: Ino) -> Option<u32> {
        None
    }
}

/// Per-group facts for "entry points into an area pass 1 did not scan".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupInodes {
    pub inode_uninit: bool,
    /// Index in the group of the first inode past the itable_unused mark.
    pub first_unused: u32,
}

/// File-system-wide parameters of the checks.
#[derive(Clone, Debug)]
pub struct FsParams {
    pub bs: usize,
    pub inodes_count: u32,
    pub first_ino: u32,
    /// Files the superblock names that no entry may name (the quota
    /// files and the orphan file, with their features; zero for none).
    pub hidden: [u32; 4],
    pub inodes_per_group: u32,
    pub filetype: bool,
    pub metadata_csum: bool,
    pub largedir: bool,
    /// inline_data: e2fsck asks each directory's inode for its inline
    /// size before reading any of its blocks.
    pub inline_data: bool,
    pub hash_seed: [u32; 4],
    pub unsigned_hash: bool,
    /// casefold with the strict encoding flag: names of casefolded
    /// directories must be valid UTF-8, and compare case-insensitively.
    pub strict_names: bool,
    /// A repair follows: an entry whose fix clears it (a '.' or '..' past
    /// the first two) is gone for the rest of the check, as e2fsck goes
    /// on to the next entry once it cleared one.
    pub repairing: bool,
    /// Empty when the descriptors carry no uninit flags (no uninit_bg).
    pub groups: Vec<GroupInodes>,
}

impl FsParams {
    /// Highest accepted `indirect_levels` + 1.
    pub fn max_dx_levels(&self) -> u8 {
        if self.largedir {
            htree::MAX_LEVELS_LARGEDIR
        } else {
            htree::MAX_LEVELS
        }
    }

    /// Hash version to use for names in a directory whose root says `v`.
    pub fn effective_hash_version(&self, v: u8) -> u8 {
        if v <= crate::fs::dx_hash::DX_HASH_TEA && self.unsigned_hash {
            v + 3
        } else {
            v
        }
    }
}

/// How a directory's blocks are to be read.
#[derive(Clone, Copy, Debug, Default)]
pub struct DirParams {
    pub ino: Ino,
    /// Seed of the directory's block checksums (metadata_csum only).
    pub csum_seed: u32,
    /// Some for an indexed directory.
    pub htree: Option<HtreeParams>,
    /// The directory's encryption policy id: its names are ciphertext.
    pub policy: Option<u32>,
    /// Casefolded (on a casefold file system): names hash folded.
    pub casefold: bool,
}

impl DirParams {
    /// Encrypted and casefolded: each entry after '..' carries its name's
    /// hash (8 bytes after the name), which cannot be computed without the
    /// key.
    fn hash_in_dirent(&self) -> bool {
        self.casefold && self.policy.is_some()
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct HtreeParams {
    /// Hash version names are hashed with; None when the root's is unknown.
    pub hash_version: Option<u8>,
    /// Logical blocks of the directory (index entries must stay below).
    pub numblocks: u32,
}

/// An entry naming a directory (not '.' or '..'): decides the directory's
/// parent once all blocks are seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubdirRef {
    /// Order in which e2fsck meets the entry, packed (one per entry naming
    /// a directory, all held to the end of pass 2): the block sort key
    /// (dir_index's "block 0 first" in the top bit, then the physical
    /// block; the directory, then the logical block), then the offset.
    key_blk: u64,
    key_dir: u64,
    off: u16,
    pub name_len: u8,
    pub child: Ino,
    /// The name, in the sink's `names` arena.
    pub name_start: u32,
}

impl SubdirRef {
    pub fn key(&self) -> (u64, u64, u16) {
        (self.key_blk, self.key_dir, self.off)
    }
    /// The directory holding the entry.
    pub fn parent(&self) -> Ino {
        Ino((self.key_dir >> 32) as u32)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DxKind {
    Root,
    Node,
}

/// An htree index block: where it is and what its entries say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DxRec {
    pub dir: Ino,
    pub lblk: u32,
    pub pblk: u64,
    pub kind: DxKind,
    /// The root's indirect_levels (0 for nodes).
    pub indirect_levels: u8,
    /// (hash with bit 0 cleared, 0 for entry 0; block & DX_BLOCK_MASK),
    /// `count` entries (clamped to the limit the block can hold).
    pub entries: Vec<(u32, u32)>,
}

/// The range of name hashes found in an htree leaf block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafRec {
    pub dir: Ino,
    pub lblk: u32,
    pub min_hash: u32,
    pub max_hash: u32,
}

/// What one worker collects.
#[derive(Default, Debug)]
pub struct Sink {
    pub problems: ProblemList,
    pub subdirs: Vec<SubdirRef>,
    pub names: Vec<u8>,
    /// (directory, its '..' target).
    pub dotdots: Vec<(Ino, Ino)>,
    /// ((lblk, offset), inode) of entries named lost+found in the root.
    pub lost_found: Vec<((u32, u32), Ino)>,
    pub dx: Vec<DxRec>,
    pub leaves: Vec<LeafRec>,
    /// (directory, target) of entries named '..' past the second slot:
    /// e2fsck's path of a directory follows the last '..' it holds.
    pub later_dotdots: Vec<(Ino, Ino)>,
    /// Directories with a block e2fsck's library will not read (a
    /// checksum that fails, a chain of record lengths that breaks): their
    /// paths are e2fsck's `???`.
    pub unreadable: Vec<Ino>,
    /// (directory, inode) of entries before a later '..' in their block.
    pub before_later: Vec<(Ino, Ino)>,
    /// Inodes the entries of the block being checked name so far.
    block_inodes: Vec<Ino>,
    /// Names of the block being checked, for duplicate detection:
    /// (fingerprint, offset, length, the problems' mark after the entry's
    /// own). Reused from block to block.
    seen: Vec<(u64, u32, u8, usize)>,
}

impl Sink {
    /// Frees the per-block scratch space (a sink kept to the end of pass
    /// 2 needs none).
    pub fn release_scratch(&mut self) {
        self.seen = Vec::new();
        self.block_inodes = Vec::new();
    }
}

/// Where a block sits, for messages and ordering.
#[derive(Clone, Copy, Debug)]
pub struct BlockPos {
    pub lblk: u32,
    pub pblk: u64,
    /// e2fsck's block order puts every directory's block 0 first when the
    /// file system has dir_index (so roots are read before leaves).
    pub zero_first: bool,
}

/// One entry as it sits in the block.
struct Entry<'a> {
    off: usize,
    rec_len: usize,
    /// False for the '.' and '..' an inline directory only implies.
    real: bool,
    inode: Ino,
    name: &'a [u8],
    file_type: u8,
    /// The byte after the name (0 for a properly terminated '.'/'..').
    after_name: u8,
    /// The hash stored after the name (encrypted casefolded entries only).
    stored_hash: u32,
}

/// File type code of a symlink in an entry.
const FT_SYMLINK: u8 = 7;

fn is_dot(name: &[u8]) -> bool {
    name == b"."
}
fn is_dotdot(name: &[u8]) -> bool {
    name == b".."
}

/// An entry's name as a problem's detail: as it is when it is UTF-8,
/// else escaped as e2fsck prints names (`M-^?` for byte 0xFF), so that
/// the bytes that are not UTF-8 are still told apart. Escaping again for
/// the terminal leaves that form as it is. The repair finds the entry
/// again through the same function.
pub fn name_str(name: &[u8]) -> String {
    match std::str::from_utf8(name) {
        Ok(s) => s.to_string(),
        Err(_) => super::problem::escape_name(name),
    }
}

/// FNV-1a: names of one block only need to be told apart cheaply.
fn fingerprint(name: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in name {
        h ^= u64::from(c);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// Classifies block `lblk` of an indexed directory.
pub fn dx_kind(fsp: &FsParams, lblk: u32, b: &[u8]) -> Option<DxKind> {
    if lblk == 0 {
        return Some(DxKind::Root);
    }
    // A node hides behind one empty entry spanning the block; its limit
    // must be what a node of this block size holds, otherwise an empty
    // leaf would be taken for a node.
    let rec_len = rec_len_at(b, 0, fsp.bs);
    let csum = if fsp.metadata_csum { 8 } else { 0 };
    let expect = narrow::sat16(fsp.bs.saturating_sub(htree::NODE_COUNT_OFFSET + csum) / 8);
    if inode_at(b, 0) == Ino::NONE
        && rec_len == fsp.bs
        && name_len_at(b, 0) == 0
        && htree::parse_count_limit(b, htree::NODE_COUNT_OFFSET).limit == expect
    {
        Some(DxKind::Node)
    } else {
        None
    }
}

/// Checks one directory block `b` (exactly `fsp.bs` bytes) of directory `d`.
pub fn check_block<T: Targets>(
    fsp: &FsParams,
    d: &DirParams,
    pos: BlockPos,
    b: &[u8],
    t: &T,
    out: &mut Sink,
) {
    if b.len() != fsp.bs {
        return;
    }
    // With inline_data, e2fsck reads the directory's inode for its inline
    // size before each block; a checksum left failing by -n fails that
    // read, and the block is passed over without a word: nothing in it is
    // checked or counted.
    if fsp.inline_data && fsp.metadata_csum && t.info(d.ino).csum_failed {
        return;
    }
    let kind = d.htree.and_then(|_| dx_kind(fsp, pos.lblk, b));
    let mut max = fsp.bs;
    let mut bad_csum = false;
    // e2fsck reads the directory's inode again for each block's
    // checksum: when that inode's own checksum fails (left so by -n), no
    // block's checksum can be verified.
    let inode_unreadable = fsp.metadata_csum && t.info(d.ino).csum_failed;
    if fsp.metadata_csum {
        if kind.is_none() {
            let tail = tail_state(b);
            if tail != Tail::Missing {
                max = fsp.bs - dir_entry::TAIL_LEN;
            }
            if tail == Tail::Present {
                bad_csum = inode_unreadable
                    || dir_entry::compute_tail_checksum(d.csum_seed, b)
                        != dir_entry::stored_tail_checksum(b);
            } else if tail == Tail::Missing {
                out.problems.push(
                    Problem::new(Code::DirBlockNoTail)
                        .ino(d.ino)
                        .blk(Blk(pos.pblk))
                        .num(u64::from(pos.lblk)),
                );
            }
        } else {
            bad_csum =
                inode_unreadable || !dx_csum_ok(fsp, d.csum_seed, b, kind == Some(DxKind::Root));
        }
    }
    let leaf_hashing = if kind.is_none() {
        d.htree.and_then(|h| h.hash_version)
    } else {
        None
    };
    let mut hashes = (u32::MAX, 0u32);
    let first_state = if pos.lblk == 0 { 0 } else { 2 };
    let mut cx = EntryCx {
        fsp,
        d,
        pos,
        t,
        hash_version: leaf_hashing,
        hashes: &mut hashes,
    };
    out.seen.clear();
    out.block_inodes.clear();
    let walked = walk(&mut cx, b, 0, max, first_state, out);
    let csum_fails =
        fsp.metadata_csum && (bad_csum || (kind.is_none() && tail_state(b) != Tail::Present));
    if (csum_fails || chain_breaks(b)) && out.unreadable.last() != Some(&d.ino) {
        out.unreadable.push(d.ino);
    }
    if walked.clean && bad_csum && kind.is_none() {
        out.problems.push(
            Problem::new(Code::DirBlockChecksum)
                .ino(d.ino)
                .blk(Blk(pos.pblk))
                .num(u64::from(pos.lblk)),
        );
    }
    report_duplicate(d.ino, walked.bytes(b), cf_names(fsp, d), out);
    out.problems.extend(walked.stray);
    if let Some(h) = d.htree {
        match kind {
            Some(k) => parse_index(fsp, d, &h, pos, b, k, bad_csum, out),
            None => out.leaves.push(LeafRec {
                dir: d.ino,
                lblk: pos.lblk,
                min_hash: hashes.0,
                max_hash: hashes.1,
            }),
        }
    }
}

/// Checks an inline directory: `iblock` is the 60 bytes of i_block (the
/// parent's inode number, then entries); `ea` the system.data value (more
/// entries), empty if none.
pub fn check_inline<T: Targets>(
    fsp: &FsParams,
    d: &DirParams,
    iblock: &[u8],
    ea: &[u8],
    t: &T,
    out: &mut Sink,
) {
    let mut hashes = (u32::MAX, 0u32);
    let pos0 = BlockPos {
        lblk: 0,
        pblk: 0,
        zero_first: true,
    };
    let ft_dir = if fsp.filetype { 2 } else { 0 };
    out.seen.clear();
    out.block_inodes.clear();
    {
        let mut cx = EntryCx {
            fsp,
            d,
            pos: pos0,
            t,
            hash_version: None,
            hashes: &mut hashes,
        };
        // The '.' of an inline directory is implied and '..' is just the
        // parent's number: both still count as references.
        let dot = Entry {
            off: 0,
            rec_len: MIN_REC_LEN,
            real: false,
            inode: d.ino,
            name: b".",
            file_type: ft_dir,
            after_name: 0,
            stored_hash: 0,
        };
        cx.entry(&dot, 0, out);
        let dotdot = Entry {
            off: 0,
            rec_len: MIN_REC_LEN,
            real: false,
            inode: Ino(dir_entry::inline_parent(iblock)),
            name: b"..",
            file_type: ft_dir,
            after_name: 0,
            stored_hash: 0,
        };
        cx.entry(&dotdot, 1, out);
        let walked = if iblock.len() > dir_entry::INLINE_ENTRIES_AT {
            walk(
                &mut cx,
                iblock,
                dir_entry::INLINE_ENTRIES_AT,
                iblock.len(),
                2,
                out,
            )
        } else {
            Walked {
                clean: true,
                salvaged: None,
                stray: None,
            }
        };
        report_duplicate(d.ino, walked.bytes(iblock), cf_names(fsp, d), out);
        out.problems.extend(walked.stray);
    }
    if !ea.is_empty() {
        out.seen.clear();
        out.block_inodes.clear();
        let mut cx = EntryCx {
            fsp,
            d,
            pos: BlockPos {
                lblk: 1,
                pblk: 0,
                zero_first: true,
            },
            t,
            hash_version: None,
            hashes: &mut hashes,
        };
        let walked = walk(&mut cx, ea, 0, ea.len(), 2, out);
        report_duplicate(d.ino, walked.bytes(ea), cf_names(fsp, d), out);
        out.problems.extend(walked.stray);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    Present,
    /// The entries run to the end of the block: no room for a tail.
    Missing,
    /// A record length breaks the chain before the tail; e2fsck then
    /// assumes the tail is there and reports the broken entry instead.
    Corrupt,
}

/// Where does the chain of rec_lens end, and is a checksum tail there?
pub fn tail_state(b: &[u8]) -> Tail {
    let top = b.len().saturating_sub(dir_entry::TAIL_LEN);
    let mut off = 0usize;
    // Each step advances by at least 8 bytes, so this ends within the block.
    while off < top {
        let rl = usize::from(dir_entry::stored_rec_len(b, off));
        if rl < dir_entry::HEADER_LEN || !rl.is_multiple_of(4) || rl > b.len() - off {
            return Tail::Corrupt;
        }
        off += rl;
    }
    if off == top && dir_entry::has_tail(b) {
        Tail::Present
    } else {
        Tail::Missing
    }
}

/// Does a record length or name length leave the block, or fall short of
/// an entry? Any such entry stops e2fsck's library from reading the
/// directory at all.
fn chain_breaks(b: &[u8]) -> bool {
    let mut off = 0usize;
    while off < b.len() {
        let rl = rec_len_at(b, off, b.len());
        if rl < dir_entry::HEADER_LEN
            || !rl.is_multiple_of(4)
            || rl > b.len() - off
            || name_len_at(b, off) + dir_entry::HEADER_LEN > rl
        {
            return true;
        }
        off += rl;
    }
    false
}

/// Does the dx tail of a root or node block hold the right checksum?
fn dx_csum_ok(fsp: &FsParams, seed: u32, b: &[u8], root: bool) -> bool {
    let count_off = if root {
        // The checksum code only recognises a root with the standard info.
        if u8_at(b, htree::ROOT_INFO_OFFSET + 5) != 8 {
            return false;
        }
        htree::ROOT_INFO_OFFSET + 8
    } else {
        htree::NODE_COUNT_OFFSET
    };
    let cl = htree::parse_count_limit(b, count_off);
    let sane = (fsp.bs - count_off) / 8;
    if usize::from(cl.limit) > sane || usize::from(cl.count) > sane {
        return false;
    }
    let tail = count_off + usize::from(cl.limit) * 8;
    if tail + 8 > fsp.bs {
        return false;
    }
    match htree::compute_tail_checksum(seed, b, count_off, cl) {
        Some(c) => c == htree::stored_tail_checksum(b, count_off, cl),
        None => false,
    }
}

/// Reads the index of a root or node block and reports what is wrong with
/// its header; records the entries for the whole-tree checks.
#[allow(clippy::too_many_arguments)]
fn parse_index(
    fsp: &FsParams,
    d: &DirParams,
    h: &HtreeParams,
    pos: BlockPos,
    b: &[u8],
    kind: DxKind,
    bad_csum: bool,
    out: &mut Sink,
) {
    let ino = d.ino;
    let mut levels = 0;
    let count_off = match kind {
        DxKind::Root => {
            let info = htree::parse_root_info(b);
            levels = info.indirect_levels;
            // Pass 1 reports an unknown hash version or incompatible flags
            // (as e2fsck does); pass 2 only refuses a root it cannot walk.
            if info.reserved_zero != 0
                || info.info_length < 8
                || info.indirect_levels >= fsp.max_dx_levels()
            {
                out.problems
                    .push(Problem::new(Code::HtreeRootBad).ino(ino).detail(format!(
                        "reserved {:#x}, info length {}, depth {}",
                        info.reserved_zero, info.info_length, info.indirect_levels
                    )));
            }
            htree::root_count_offset(&info)
        }
        DxKind::Node => htree::NODE_COUNT_OFFSET,
    };
    if bad_csum {
        let e2 = if kind == DxKind::Root {
            0x020049
        } else {
            0x02004A
        };
        out.problems.push(
            Problem::new(Code::HtreeNodeChecksum)
                .ino(ino)
                .num(u64::from(pos.lblk))
                .e2fsck(e2),
        );
    }
    let csum = if fsp.metadata_csum { 8 } else { 0 };
    let expect = fsp.bs.saturating_sub(count_off + csum) / 8;
    let cl = htree::parse_count_limit(b, count_off);
    if usize::from(cl.limit) != expect {
        out.problems.push(
            Problem::new(Code::HtreeLimit)
                .ino(ino)
                .num(u64::from(pos.lblk))
                .num2(u64::from(cl.limit)),
        );
    }
    let mut count = usize::from(cl.count);
    if count > expect {
        out.problems.push(
            Problem::new(Code::HtreeCount)
                .ino(ino)
                .num(u64::from(pos.lblk))
                .num2(count as u64),
        );
        count = expect;
    }
    let mut entries = Vec::with_capacity(count);
    let mut prev = 0u32;
    let mut unordered = false;
    for i in 0..count {
        let (raw_hash, raw_blk) = htree::dx_entry(b, count_off, i);
        let hash = raw_hash & !1;
        let blk = raw_blk & DX_BLOCK_MASK;
        if blk >= h.numblocks {
            out.problems.push(
                Problem::new(Code::HtreeBadBlock)
                    .ino(ino)
                    .num(u64::from(blk)),
            );
        } else if hash < prev {
            unordered = true;
        }
        prev = hash;
        entries.push((hash, blk));
    }
    if unordered {
        out.problems.push(
            Problem::new(Code::HtreeHashOrder)
                .ino(ino)
                .num(u64::from(pos.lblk)),
        );
    }
    out.dx.push(DxRec {
        dir: ino,
        lblk: pos.lblk,
        pblk: pos.pblk,
        kind,
        indirect_levels: levels,
        entries,
    });
}

/// Names compare case-insensitively (e2fsck only does so in strict
/// mode, and never on ciphertext).
fn cf_names(fsp: &FsParams, d: &DirParams) -> bool {
    d.casefold && fsp.strict_names && d.policy.is_none()
}

/// Reports the first repeated name among the block's entries (e2fsck
/// reports one per block and then schedules the directory for a rebuild).
/// `b` is the buffer the entries' offsets refer to.
fn report_duplicate(ino: Ino, b: &[u8], cf: bool, out: &mut Sink) {
    if out.seen.len() < 2 {
        return;
    }
    // Folded names of different lengths may be equal.
    out.seen
        .sort_unstable_by_key(|&(fp, off, len, _)| (fp, if cf { 0 } else { len }, off));
    let name = |off: u32, len: u8| {
        let s = off as usize + dir_entry::HEADER_LEN;
        b.get(s..s + len as usize).unwrap_or(&[])
    };
    // The duplicate is the later of two equal names; e2fsck meets the one
    // with the lowest offset first.
    let mut best: Option<(u32, u8, usize)> = None;
    for w in out.seen.windows(2) {
        let ((fp, off, len, _), (fp2, off2, len2, mark)) = (w[0], w[1]);
        let equal = if cf {
            casefold::same(name(off, len), name(off2, len2))
        } else {
            len == len2 && name(off, len) == name(off2, len2)
        };
        if fp == fp2 && equal && best.is_none_or(|(o, _, _)| off2 < o) {
            best = Some((off2, len2, mark));
        }
    }
    if let Some((off, len, mark)) = best {
        // e2fsck finds it while it checks that entry: after the entry's
        // own problems, before those of the entries that follow.
        let after = out.problems.split_off(mark);
        out.problems.push(
            Problem::new(Code::DirEntryDuplicate)
                .ino(ino)
                .detail(name_str(name(off, len))),
        );
        out.problems.append(after);
    }
}

struct EntryCx<'a, T: Targets> {
    fsp: &'a FsParams,
    d: &'a DirParams,
    pos: BlockPos,
    t: &'a T,
    hash_version: Option<u8>,
    hashes: &'a mut (u32, u32),
}

/// What a walk over an entry area found.
struct Walked {
    /// No record was broken.
    clean: bool,
    /// The area as salvaged, when a record was broken: the offsets of the
    /// problems found after it refer to these bytes.
    salvaged: Option<Vec<u8>>,
    /// The broken record the salvage left with a stray rec_len
    /// (`dir_salvage::stray_rec_len`), which e2fsck asks about once the
    /// block's other problems are reported.
    stray: Option<Problem>,
}

impl Walked {
    /// The bytes the walk's offsets refer to.
    fn bytes<'a>(&'a self, b: &'a [u8]) -> &'a [u8] {
        self.salvaged.as_deref().unwrap_or(b)
    }
}

/// Walks the entries of `area[start..max]`. At a broken record it reports
/// the block corrupt and, as e2fsck does once allowed to salvage, goes
/// on over a copy salvaged step by step (`fs::dir_salvage`), so that the
/// entries the salvage keeps are counted and checked at the offsets they
/// end at. (A read-only check stops the whole check at the first one.)
fn walk<T: Targets>(
    cx: &mut EntryCx<'_, T>,
    area: &[u8],
    start: usize,
    max: usize,
    first_state: u32,
    out: &mut Sink,
) -> Walked {
    let bs = cx.fsp.bs;
    let mut off = start;
    let mut state = first_state;
    let mut prev: Option<usize> = None;
    let mut copy: Option<Vec<u8>> = None;
    let mut steps = dir_salvage::max_steps(max.saturating_sub(start));
    let mut stray = None;
    while off < max {
        let b = copy.as_deref().unwrap_or(area);
        let fits = max - off >= dir_entry::HEADER_LEN;
        let rec_len = if fits {
            rec_len_at(b, off, bs)
        } else {
            MIN_REC_LEN
        };
        let name_len = dir_entry::name_len_at(b, off);
        // Entries after '..' that carry a hash need room for it.
        let extra = if state > 1 && cx.d.hash_in_dirent() {
            DIRENT_HASH_LEN
        } else {
            0
        };
        if !fits
            || off + rec_len > max
            || rec_len < MIN_REC_LEN + extra
            || !rec_len.is_multiple_of(4)
            || name_len + dir_entry::HEADER_LEN > rec_len
            || (extra > 0 && dir_entry::rec_len_for(name_len) + extra > rec_len)
        {
            out.problems.push(
                Problem::new(Code::DirBlockCorrupt)
                    .ino(cx.d.ino)
                    .blk(Blk(cx.pos.pblk))
                    .num(u64::from(cx.pos.lblk))
                    .num2(off as u64),
            );
            if steps == 0 {
                break;
            }
            steps -= 1;
            let whole = copy.get_or_insert_with(|| area.to_vec());
            let at = off - start;
            let before = prev.map(|p| p - start);
            let inodes = cx.fsp.inodes_count;
            let (next, rest_dropped) =
                dir_salvage::salvage_step(&mut whole[start..max], bs, inodes, at, before);
            if rest_dropped {
                stray = stray_problem(cx, &whole[..max], off);
            }
            off = start + next;
            continue;
        }
        let name_at = off + dir_entry::HEADER_LEN;
        let e = Entry {
            off,
            rec_len,
            real: true,
            inode: dir_entry::inode_at(b, off),
            name: &b[name_at..name_at + name_len],
            file_type: dir_entry::file_type_at(b, off),
            after_name: u8_at(b, name_at + name_len),
            stored_hash: dir_entry::hash_after_name(b, off, name_len),
        };
        cx.entry(&e, state, out);
        prev = Some(off);
        off += rec_len;
        state = state.saturating_add(1);
    }
    Walked {
        clean: copy.is_none(),
        salvaged: copy,
        stray,
    }
}

/// The stray rec_len e2fsck's salvage leaves in the broken record at
/// `off` of `b` (from the start of e2fsck's buffer to the area's end),
/// as a problem, if it leaves one.
fn stray_problem<T: Targets>(cx: &EntryCx<'_, T>, b: &[u8], off: usize) -> Option<Problem> {
    let v = dir_salvage::stray_rec_len(b, cx.fsp.bs, off)?;
    let name_at = off + dir_entry::HEADER_LEN;
    let name_end = (name_at + dir_entry::name_len_at(b, off)).min(b.len());
    Some(
        Problem::new(Code::DirEntryBadRecLen)
            .ino(cx.d.ino)
            .blk(Blk(cx.pos.pblk))
            .num(u64::from(cx.pos.lblk))
            .num2(off as u64)
            .detail(format!(
                "'{}' (rec_len {}, to be {v})",
                name_str(&b[name_at..name_end]),
                rec_len_at(b, off, cx.fsp.bs)
            )),
    )
}

impl<T: Targets> EntryCx<'_, T> {
    fn problem(&self, code: Code, e: &Entry<'_>) -> Problem {
        Problem::new(code)
            .ino(self.d.ino)
            .blk(Blk(self.pos.pblk))
            .detail(name_str(e.name))
    }

    /// `state`: 0 for the first entry of block 0, 1 for the second, 2+ after.
    fn entry(&mut self, e: &Entry<'_>, state: u32, out: &mut Sink) {
        let dir = self.d.ino;
        if e.inode != Ino::NONE {
            if state > 1 && is_dotdot(e.name) {
                out.later_dotdots.push((dir, e.inode));
                // e2fsck stops reading a directory at the entry it looks
                // for: those before this '..' are found under the first.
                let before = out.block_inodes.iter().map(|&i| (dir, i));
                out.before_later.extend(before);
            }
            out.block_inodes.push(e.inode);
        }
        match state {
            0 => self.check_dot(e, out),
            1 => self.check_dotdot(e, out),
            _ => {
                if e.inode == dir {
                    out.problems
                        .push(self.problem(Code::DirEntryLinkToDot, e).num(e.off as u64));
                }
            }
        }
        if e.inode == Ino::NONE {
            return;
        }
        let fsp = self.fsp;
        if e.inode.get() > fsp.inodes_count {
            out.problems.push(
                self.problem(Code::DirEntryBadInode, e)
                    .num(u64::from(e.inode.get())),
            );
            return;
        }
        // e2fsck's pass 2 rejects an entry naming one of them as it
        // rejects an impossible number.
        if fsp.hidden.contains(&e.inode.get()) {
            out.problems.push(
                self.problem(Code::DirEntryBadInode, e)
                    .num(u64::from(e.inode.get())),
            );
            return;
        }
        if e.inode != Ino::ROOT && e.inode.get() < fsp.first_ino {
            out.problems.push(
                self.problem(Code::DirEntryReservedInode, e)
                    .num(u64::from(e.inode.get())),
            );
            return;
        }
        let mut named_wrongly = false;
        // Answered no, e2fsck meets the same question again further on in
        // its checks of the entry when the inode is in use (unused, it asks
        // about that instead): -n prints it twice (`report::asked_twice`).
        let again = |p: Problem| {
            if self.t.info(e.inode).used {
                p.num2(1)
            } else {
                p
            }
        };
        if state > 1 {
            named_wrongly = true;
            if is_dot(e.name) || is_dotdot(e.name) {
                let code = if is_dot(e.name) { 0x02001A } else { 0x02001B };
                let p = self
                    .problem(Code::DirDotSecondEntry, e)
                    .num(e.off as u64)
                    .e2fsck(code);
                if fsp.repairing {
                    // Cleared: it names nothing, repeats no name.
                    out.problems.push(p);
                    return;
                }
                out.problems.push(again(p));
            } else if e.inode == Ino::ROOT {
                out.problems
                    .push(again(self.problem(Code::DirEntryLinkToRoot, e)));
            } else if e.name.is_empty() {
                out.problems.push(
                    Problem::new(Code::DirEntryZeroLenName)
                        .ino(dir)
                        .blk(Blk(self.pos.pblk))
                        .num(e.off as u64),
                );
            } else {
                named_wrongly = false;
            }
        }
        let ti = self.t.info(e.inode);
        if ti.ea_inode && !named_wrongly {
            // A candidate: whether xattrs refer to the inode is known only
            // after pass 1, which drops the candidates they do not
            // (`pass2::finish`).
            out.problems.push(
                self.problem(Code::DirEntryEaInode, e)
                    .num(u64::from(e.inode.get())),
            );
        }
        if ti.in_bad_block {
            out.problems.push(
                self.problem(Code::DirEntryInodeInBadBlock, e)
                    .num(u64::from(e.inode.get())),
            );
        }
        self.check_group_area(e, out);
        if ti.bad {
            out.problems.push(
                self.problem(Code::DirEntryBadInodeTarget, e)
                    .num(u64::from(e.inode.get())),
            );
        }
        if !ti.used {
            out.problems.push(
                self.problem(Code::DirEntryDeletedInode, e)
                    .num(u64::from(e.inode.get())),
            );
        }
        self.check_name_and_type(e, state, &ti, out);
        if let Some(v) = self.hash_version
            && let Some(h) = self.name_hash(e, v, state)
        {
            self.hashes.0 = self.hashes.0.min(h);
            self.hashes.1 = self.hashes.1.max(h);
        }
        self.record(e, state, &ti, out);
    }

    /// The entry's name (its characters, or as ciphertext in an encrypted
    /// directory) and its file type against its target's.
    fn check_name_and_type(&self, e: &Entry<'_>, state: u32, ti: &TargetInfo, out: &mut Sink) {
        let fsp = self.fsp;
        if let Some(dp) = self.d.policy {
            // Names are ciphertext: any byte may appear, but the cipher
            // pads them to at least one block.
            if state > 1 {
                self.check_encrypted(e, dp, ti, out);
            }
        } else {
            if self.d.casefold && fsp.strict_names && casefold::invalid_at(e.name).is_some() {
                out.problems.push(self.problem(Code::DirEntryBadUtf8, e));
            }
            if e.name.iter().any(|&c| c == b'/' || c == 0) {
                out.problems
                    .push(self.problem(Code::DirEntryIllegalChars, e));
            }
        }
        if !fsp.filetype {
            if e.file_type != 0 {
                out.problems
                    .push(self.problem(Code::DirEntryFileTypeSet, e));
            }
        } else if ti.used && !(ti.dir || ti.reg || ti.bad) && ti.csum_failed {
            // e2fsck's pass 1 maps only directories and regular files (and
            // bad inodes): for any other target it reads the inode again to
            // learn its type, and under -n that read fails on the checksum
            // it did not fix, which aborts it.
            out.problems
                .push(Problem::new(Code::StoppedAtInodeChecksumP2).ino(e.inode));
        } else if ti.used {
            let should = if ti.dir {
                2
            } else if ti.reg {
                1
            } else if ti.bad {
                0
            } else {
                ti.ftype
            };
            if e.file_type != should {
                let code = if e.file_type == 0 {
                    Code::DirEntryFileTypeUnset
                } else {
                    Code::DirEntryFileType
                };
                out.problems.push(
                    self.problem(code, e)
                        .num(u64::from(e.file_type))
                        .num2(u64::from(should)),
                );
            }
        }
    }

    /// Keeps what the later passes need of the entry: subdirectories with
    /// their names, lost+found, names for the duplicate search, the link.
    fn record(&self, e: &Entry<'_>, state: u32, ti: &TargetInfo, out: &mut Sink) {
        let dir = self.d.ino;
        if state > 1 && ti.dir && e.inode != Ino::ROOT {
            let start = narrow::sat32(out.names.len());
            out.names.extend_from_slice(e.name);
            let later = self.pos.zero_first && self.pos.lblk != 0;
            out.subdirs.push(SubdirRef {
                // Block numbers stay below 2^48 (64-bit ext4's limit) and
                // offsets below 64 KiB, the largest block.
                key_blk: (u64::from(later) << 63) | (self.pos.pblk & !(1 << 63)),
                key_dir: (u64::from(dir.get()) << 32) | u64::from(self.pos.lblk),
                off: narrow::sat16(e.off),
                child: e.inode,
                name_start: start,
                name_len: narrow::sat8(e.name.len()),
            });
        }
        if dir == Ino::ROOT && e.name == b"lost+found" {
            out.lost_found
                .push(((self.pos.lblk, narrow::sat32(e.off)), e.inode));
        }
        if e.real {
            if cf_names(self.fsp, self.d) {
                // Names that do not fold equal no other name.
                if let Some(f) = casefold::fold(e.name) {
                    out.seen.push((
                        fingerprint(&f),
                        narrow::sat32(e.off),
                        narrow::sat8(e.name.len()),
                        out.problems.mark(),
                    ));
                }
            } else {
                out.seen.push((
                    fingerprint(e.name),
                    narrow::sat32(e.off),
                    narrow::sat8(e.name.len()),
                    out.problems.mark(),
                ));
            }
        }
        self.t.add_link(e.inode);
    }

    /// The hash an htree leaf entry is sorted by.
    fn name_hash(&self, e: &Entry<'_>, version: u8, state: u32) -> Option<u32> {
        if version == DX_HASH_SIPHASH {
            // Only the kernel, with the key, can compute it: the entry
            // carries it after the name.
            if state < 2 || !self.d.hash_in_dirent() {
                return None;
            }
            return Some(e.stored_hash);
        }
        if self.d.casefold
            && self.d.policy.is_none()
            && let Some(f) = casefold::fold(e.name)
        {
            return dx_hash(&f, version, &self.fsp.hash_seed).map(|h| h.0);
        }
        dx_hash(e.name, version, &self.fsp.hash_seed).map(|h| h.0)
    }

    /// e2fsck's rules for an entry of an encrypted directory: a name of at
    /// least one cipher block, and a regular file, directory or symlink
    /// encrypted with the directory's policy.
    fn check_encrypted(&self, e: &Entry<'_>, dir_policy: u32, ti: &TargetInfo, out: &mut Sink) {
        if e.name.len() < crypt::NAME_MIN {
            out.problems.push(
                self.problem(Code::DirEntryEncryptedShort, e)
                    .num(u64::from(e.inode.get())),
            );
        }
        match self.t.policy(e.inode) {
            Some(p) if p == dir_policy => {}
            Some(_) => out.problems.push(
                self.problem(Code::DirEntryPolicyMismatch, e)
                    .num(u64::from(e.inode.get())),
            ),
            None => {
                let needs = match e.file_type {
                    0 => ti.reg || ti.dir || ti.ftype == FT_SYMLINK,
                    ft => ft == 1 || ft == 2 || ft == FT_SYMLINK,
                };
                if needs {
                    out.problems.push(
                        self.problem(Code::DirEntryUnencrypted, e)
                            .num(u64::from(e.inode.get())),
                    );
                }
            }
        }
    }

    /// The form shared by '.' and '..': present with the right name, and
    /// NUL after the name. Returns (present, terminated).
    fn dot_form(
        &mut self,
        e: &Entry<'_>,
        is_name: fn(&[u8]) -> bool,
        missing: Code,
        out: &mut Sink,
    ) -> (bool, bool) {
        if e.inode == Ino::NONE || !is_name(e.name) {
            let mut p = Problem::new(missing)
                .ino(self.d.ino)
                .blk(Blk(self.pos.pblk));
            // An entry in use under another name has e2fsck codes of its
            // own ("not '.'", "not '..'").
            if e.inode != Ino::NONE {
                p = p.e2fsck(if missing == Code::DirDotMissing {
                    0x02000B
                } else {
                    0x02000C
                });
            }
            out.problems.push(p);
            return (false, false);
        }
        if e.after_name != 0 {
            out.problems
                .push(self.problem(Code::DirDotNotTerminated, e));
            return (true, false);
        }
        (true, true)
    }

    fn check_dot(&mut self, e: &Entry<'_>, out: &mut Sink) {
        let dir = self.d.ino;
        if !self.dot_form(e, is_dot, Code::DirDotMissing, out).0 {
            return;
        }
        if e.inode != dir {
            out.problems.push(
                Problem::new(Code::DirDotBadInode)
                    .ino(dir)
                    .num(u64::from(e.inode.get())),
            );
        }
        // Room for at least one more entry after '.' is wasted space the
        // kernel never leaves (it would have split the record).
        if e.rec_len > 2 * MIN_REC_LEN {
            out.problems.push(
                Problem::new(Code::DirDotRecLen)
                    .ino(dir)
                    .num(e.rec_len as u64),
            );
        }
    }

    fn check_dotdot(&mut self, e: &Entry<'_>, out: &mut Sink) {
        if self.dot_form(e, is_dotdot, Code::DirDotDotMissing, out).1 {
            out.dotdots.push((self.d.ino, e.inode));
        }
    }

    fn check_group_area(&self, e: &Entry<'_>, out: &mut Sink) {
        let fsp = self.fsp;
        if fsp.groups.is_empty() || fsp.inodes_per_group == 0 {
            return;
        }
        let g = e.inode.group(fsp.inodes_per_group);
        let idx = e.inode.index_in_group(fsp.inodes_per_group);
        let Some(gi) = fsp.groups.get(g.index()) else {
            return;
        };
        if gi.inode_uninit {
            out.problems.push(
                self.problem(Code::DirEntryUninitGroup, e)
                    .num(u64::from(e.inode.get()))
                    .group(g),
            );
        } else if idx >= gi.first_unused {
            out.problems.push(
                self.problem(Code::DirEntryUnusedArea, e)
                    .num(u64::from(e.inode.get()))
                    .group(g),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::{put_le16, put_le32};
    use std::sync::atomic::{AtomicU32, Ordering};

    const BS: usize = 1024;

    struct Fake {
        used: Vec<bool>,
        dir: Vec<bool>,
        bad: Vec<bool>,
        ftype: Vec<u8>,
        links: Vec<AtomicU32>,
        policies: Vec<Option<u32>>,
    }

    impl Fake {
        fn new() -> Fake {
            let n = 65;
            let mut f = Fake {
                used: vec![false; n],
                dir: vec![false; n],
                bad: vec![false; n],
                ftype: vec![0; n],
                links: (0..n).map(|_| AtomicU32::new(0)).collect(),
                policies: vec![None; n],
            };
            for i in [2usize, 11, 12, 13] {
                f.used[i] = true;
                f.dir[i] = true;
                f.ftype[i] = 2;
            }
            for i in 14..20 {
                f.used[i] = true;
                f.ftype[i] = 1;
            }
            f
        }
        fn links(&self, i: usize) -> u32 {
            self.links[i].load(Ordering::Relaxed)
        }
    }

    impl Targets for Fake {
        fn info(&self, ino: Ino) -> TargetInfo {
            let i = ino.index();
            TargetInfo {
                used: self.used.get(i).copied().unwrap_or(false),
                dir: self.dir.get(i).copied().unwrap_or(false),
                reg: self.ftype.get(i) == Some(&1),
                bad: self.bad.get(i).copied().unwrap_or(false),
                in_bad_block: false,
                ftype: self.ftype.get(i).copied().unwrap_or(0),
                ea_inode: false,
                csum_failed: false,
            }
        }
        fn add_link(&self, ino: Ino) {
            if let Some(c) = self.links.get(ino.index()) {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
        fn policy(&self, ino: Ino) -> Option<u32> {
            self.policies.get(ino.index()).copied().flatten()
        }
    }

    fn run_with(f: &FsParams, d: DirParams, b: &[u8], t: &Fake) -> Sink {
        let mut s = Sink::default();
        let pos = BlockPos {
            lblk: 1,
            pblk: 500,
            zero_first: true,
        };
        check_block(f, &d, pos, b, t, &mut s);
        s
    }

    #[test]
    fn encrypted_directory_entries() {
        let mut t = Fake::new();
        for i in [12usize, 14, 15] {
            t.policies[i] = Some(3);
        }
        t.policies[16] = Some(4);
        let d = DirParams {
            ino: Ino(12),
            policy: Some(3),
            ..Default::default()
        };
        let f = fsp(false);
        // Ciphertext may hold '/' and NUL; 16 bytes is the shortest name.
        let good: &[u8] = b"ab/\0cdefghijklmn";
        let b = block(&[(14, good, 1)], BS);
        assert!(run_with(&f, d, &b, &t).problems.is_empty());
        let b = block(&[(15, b"short", 1)], BS);
        assert_eq!(
            codes(&run_with(&f, d, &b, &t)),
            vec![Code::DirEntryEncryptedShort]
        );
        let b = block(&[(17, b"0123456789abcdefXY", 1)], BS);
        assert_eq!(
            codes(&run_with(&f, d, &b, &t)),
            vec![Code::DirEntryUnencrypted]
        );
        let b = block(&[(16, b"0123456789abcdefXY", 1)], BS);
        assert_eq!(
            codes(&run_with(&f, d, &b, &t)),
            vec![Code::DirEntryPolicyMismatch]
        );
        // Devices, FIFOs and sockets need no encryption.
        t.ftype[18] = 3;
        let b = block(&[(18, b"0123456789abcdefXY", 3)], BS);
        assert!(run_with(&f, d, &b, &t).problems.is_empty());
        // Both rules at once, as e2fsck -n reports them.
        let b = block(&[(17, b"x", 1)], BS);
        assert_eq!(
            codes(&run_with(&f, d, &b, &t)),
            vec![Code::DirEntryEncryptedShort, Code::DirEntryUnencrypted]
        );
    }

    #[test]
    fn casefolded_directory_entries() {
        let t = Fake::new();
        let d = DirParams {
            ino: Ino(12),
            casefold: true,
            ..Default::default()
        };
        let strict = fsp(false);
        let b = block(&[(14, b"A\xff", 1), (15, b"ok", 1)], BS);
        assert_eq!(
            codes(&run_with(&strict, d, &b, &t)),
            vec![Code::DirEntryBadUtf8]
        );
        let b = block(&[(14, b"Readme", 1), (15, "README".as_bytes(), 1)], BS);
        let s = run_with(&strict, d, &b, &t);
        assert_eq!(codes(&s), vec![Code::DirEntryDuplicate]);
        assert_eq!(s.problems.get(0).unwrap().args().detail, "README");
        let b = block(
            &[(14, "stra\u{df}e".as_bytes(), 1), (15, b"STRASSE", 1)],
            BS,
        );
        assert_eq!(
            codes(&run_with(&strict, d, &b, &t)),
            vec![Code::DirEntryDuplicate]
        );
        // Without strict mode names are bytes, as e2fsck compares them.
        let mut lax = fsp(false);
        lax.strict_names = false;
        let b = block(
            &[(14, b"A\xff", 1), (15, b"README", 1), (16, b"readme", 1)],
            BS,
        );
        assert!(run_with(&lax, d, &b, &t).problems.is_empty());
    }

    fn fsp(csum: bool) -> FsParams {
        FsParams {
            bs: BS,
            inodes_count: 64,
            first_ino: 11,
            hidden: [0; 4],
            inodes_per_group: 32,
            filetype: true,
            metadata_csum: csum,
            largedir: false,
            inline_data: false,
            hash_seed: [1, 2, 3, 4],
            unsigned_hash: false,
            strict_names: true,
            repairing: false,
            groups: Vec::new(),
        }
    }

    /// Lays out (inode, name, file_type) entries, the last one spanning to
    /// `end`; returns the block.
    fn block(entries: &[(u32, &[u8], u8)], end: usize) -> Vec<u8> {
        let mut b = vec![0u8; BS];
        let mut off = 0;
        for (i, &(ino, name, ft)) in entries.iter().enumerate() {
            let rl = if i + 1 == entries.len() {
                end - off
            } else {
                dir_entry::rec_len_for(name.len())
            };
            put_le32(&mut b, off, ino);
            put_le16(&mut b, off + 4, rl as u16);
            b[off + 6] = name.len() as u8;
            b[off + 7] = ft;
            b[off + 8..off + 8 + name.len()].copy_from_slice(name);
            off += rl;
        }
        b
    }

    fn with_tail(mut b: Vec<u8>, seed: u32) -> Vec<u8> {
        let t = BS - dir_entry::TAIL_LEN;
        put_le32(&mut b, t, 0);
        put_le16(&mut b, t + 4, 12);
        b[t + 6] = 0;
        b[t + 7] = dir_entry::TAIL_FT;
        let c = dir_entry::compute_tail_checksum(seed, &b);
        put_le32(&mut b, BS - 4, c);
        b
    }

    fn run(f: &FsParams, dir: u32, lblk: u32, b: &[u8], t: &Fake) -> Sink {
        let d = DirParams {
            ino: Ino(dir),
            csum_seed: 77,
            htree: None,
            ..Default::default()
        };
        let mut s = Sink::default();
        let pos = BlockPos {
            lblk,
            pblk: 500,
            zero_first: true,
        };
        check_block(f, &d, pos, b, t, &mut s);
        s
    }

    fn codes(s: &Sink) -> Vec<Code> {
        s.problems.iter().map(|p| p.code).collect()
    }

    #[test]
    fn healthy_first_block() {
        let t = Fake::new();
        let b = block(
            &[
                (12, b".", 2),
                (2, b"..", 2),
                (14, b"file", 1),
                (13, b"sub", 2),
            ],
            BS,
        );
        let s = run(&fsp(false), 12, 0, &b, &t);
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        assert_eq!(s.dotdots, vec![(Ino(12), Ino(2))]);
        assert_eq!(s.subdirs.len(), 1);
        assert_eq!(
            (s.subdirs[0].parent(), s.subdirs[0].child),
            (Ino(12), Ino(13))
        );
        assert_eq!(
            (t.links(12), t.links(2), t.links(14), t.links(13)),
            (1, 1, 1, 1)
        );
    }

    #[test]
    fn checksum_tail() {
        let t = Fake::new();
        let f = fsp(true);
        let entries: &[(u32, &[u8], u8)] = &[(12, b".", 2), (2, b"..", 2), (14, b"f", 1)];
        let good = with_tail(block(entries, BS - 12), 77);
        assert!(run(&f, 12, 0, &good, &t).problems.is_empty());
        let mut bad = good.clone();
        bad[BS - 1] ^= 1;
        assert_eq!(
            codes(&run(&f, 12, 0, &bad, &t)),
            vec![Code::DirBlockChecksum]
        );
        let none = block(entries, BS);
        assert_eq!(
            codes(&run(&f, 12, 0, &none, &t)),
            vec![Code::DirBlockNoTail]
        );
    }

    #[test]
    fn corrupt_records_stop_the_block() {
        let t = Fake::new();
        let f = fsp(false);
        let base = block(&[(14, b"a", 1), (15, b"b", 1), (16, b"c", 1)], BS);
        for (off, val) in [(4usize, 13u16), (4, 4), (4, 2000), (16, 0)] {
            let mut b = base.clone();
            put_le16(&mut b, off, val);
            let s = run(&f, 12, 1, &b, &t);
            assert_eq!(
                codes(&s),
                vec![Code::DirBlockCorrupt],
                "rec_len {val} at {off}"
            );
        }
        let mut b = base.clone();
        b[6] = 9; // name longer than the 12-byte record
        assert_eq!(codes(&run(&f, 12, 1, &b, &t)), vec![Code::DirBlockCorrupt]);
        // A chain that stops short of the block end runs into garbage.
        let mut b = block(&[(14, b"a", 1)], 512);
        put_le16(&mut b, 512 + 4, 0);
        assert_eq!(codes(&run(&f, 12, 1, &b, &t)), vec![Code::DirBlockCorrupt]);
    }

    #[test]
    fn entries_after_a_salvaged_record_are_counted() {
        let t = Fake::new();
        let f = fsp(false);
        let mut b = block(&[(14, b"a", 1), (15, b"b", 1), (16, b"c", 1)], BS);
        b[12 + 6] = 9; // "b"'s name runs past its 12-byte record
        let s = run(&f, 12, 1, &b, &t);
        assert_eq!(codes(&s), vec![Code::DirBlockCorrupt]);
        assert_eq!(
            s.problems.iter().next().and_then(|p| p.args().num2),
            Some(12)
        );
        // "a" absorbs "b"; "c" is still named.
        assert_eq!((t.links(14), t.links(15), t.links(16)), (1, 0, 1));
        // An 8-byte record is cut out: the entries behind move up and are
        // reported at their new offsets; the 8 bytes freed at the end are
        // a broken record in turn, which the last entry absorbs.
        let t = Fake::new();
        let mut b = vec![0u8; BS];
        let head = block(&[(14, b"a", 1)], 12);
        b[..12].copy_from_slice(&head[..12]);
        put_le16(&mut b, 12 + 4, 8);
        let tail = block(&[(16, b"c", 1), (0, b"", 1)], BS - 20);
        b[20..].copy_from_slice(&tail[..BS - 20]);
        // Names the directory itself.
        b[20] = 12;
        b[27] = 2;
        let s = run(&f, 12, 1, &b, &t);
        assert_eq!(
            codes(&s),
            vec![
                Code::DirBlockCorrupt,
                Code::DirEntryLinkToDot,
                Code::DirBlockCorrupt
            ]
        );
        assert_eq!(
            s.problems.iter().nth(1).and_then(|p| p.args().num),
            Some(12)
        );
    }

    #[test]
    fn dot_and_dotdot() {
        let t = Fake::new();
        let f = fsp(false);
        let b = block(&[(13, b".", 2), (2, b"..", 2)], BS);
        assert_eq!(codes(&run(&f, 12, 0, &b, &t)), vec![Code::DirDotBadInode]);
        let b = block(&[(14, b"x", 1), (2, b"..", 2)], BS);
        assert!(codes(&run(&f, 12, 0, &b, &t)).contains(&Code::DirDotMissing));
        let b = block(&[(12, b".", 2), (14, b"x", 1)], BS);
        let s = run(&f, 12, 0, &b, &t);
        assert_eq!(codes(&s), vec![Code::DirDotDotMissing]);
        assert!(s.dotdots.is_empty());
        // '.' swallowing the whole block.
        let b = block(&[(12, b".", 2)], BS);
        let c = codes(&run(&f, 12, 0, &b, &t));
        assert!(c.contains(&Code::DirDotRecLen));
        // '.' followed by a stray byte.
        let mut b = block(&[(12, b".", 2), (2, b"..", 2)], BS);
        b[9] = b'x';
        assert_eq!(
            codes(&run(&f, 12, 0, &b, &t)),
            vec![Code::DirDotNotTerminated]
        );
        // '.' and '..' later in the directory.
        let b = block(&[(12, b".", 2), (2, b"..", 2)], BS);
        let c = codes(&run(&f, 12, 1, &b, &t));
        assert_eq!(
            c,
            vec![
                Code::DirEntryLinkToDot,
                Code::DirDotSecondEntry,
                Code::DirDotSecondEntry
            ]
        );
    }

    #[test]
    fn entry_targets() {
        let mut t = Fake::new();
        t.bad[17] = true;
        let f = fsp(false);
        let cases: &[(u32, &[u8], u8, Code)] = &[
            (99, b"big", 1, Code::DirEntryBadInode),
            (7, b"resv", 1, Code::DirEntryReservedInode),
            (30, b"gone", 1, Code::DirEntryDeletedInode),
            (17, b"bad", 1, Code::DirEntryBadInodeTarget),
            (14, b"a/b", 1, Code::DirEntryIllegalChars),
            (14, b"ft", 2, Code::DirEntryFileType),
            (2, b"root", 2, Code::DirEntryLinkToRoot),
            (12, b"self", 2, Code::DirEntryLinkToDot),
            (14, b"", 1, Code::DirEntryZeroLenName),
        ];
        for &(ino, name, ft, code) in cases {
            let b = block(&[(ino, name, ft)], BS);
            let c = codes(&run(&f, 12, 3, &b, &t));
            assert_eq!(c, vec![code], "entry {:?}", String::from_utf8_lossy(name));
        }
        let mut nf = fsp(false);
        nf.filetype = false;
        let b = block(&[(14, b"x", 1)], BS);
        assert_eq!(
            codes(&run(&nf, 12, 3, &b, &t)),
            vec![Code::DirEntryFileTypeSet]
        );
    }

    #[test]
    fn uninit_areas() {
        let t = Fake::new();
        let mut f = fsp(false);
        f.groups = vec![
            GroupInodes {
                inode_uninit: false,
                first_unused: 16,
            },
            GroupInodes {
                inode_uninit: true,
                first_unused: 0,
            },
        ];
        let b = block(&[(19, b"late", 1), (40, b"uninit", 1)], BS);
        let c = codes(&run(&f, 12, 3, &b, &t));
        assert_eq!(
            c,
            vec![
                Code::DirEntryUnusedArea,
                Code::DirEntryUninitGroup,
                Code::DirEntryDeletedInode
            ]
        );
    }

    #[test]
    fn duplicates_in_a_block() {
        let t = Fake::new();
        let b = block(&[(14, b"same", 1), (15, b"other", 1), (16, b"same", 1)], BS);
        let s = run(&fsp(false), 12, 2, &b, &t);
        assert_eq!(codes(&s), vec![Code::DirEntryDuplicate]);
        assert_eq!(s.problems.get(0).unwrap().args().detail, "same");
    }

    fn dx_root(levels: u8, entries: &[(u32, u32)], csum: bool) -> Vec<u8> {
        let mut b = block(&[(12, b".", 2), (2, b"..", 2)], BS);
        let r = htree::ROOT_INFO_OFFSET;
        b[r + 4] = 1;
        b[r + 5] = 8;
        b[r + 6] = levels;
        let co = r + 8;
        let limit = (BS - co - if csum { 8 } else { 0 }) / 8;
        put_le16(&mut b, co, limit as u16);
        put_le16(&mut b, co + 2, entries.len() as u16);
        for (i, &(h, blk)) in entries.iter().enumerate() {
            if i > 0 {
                put_le32(&mut b, co + 8 * i, h);
            }
            put_le32(&mut b, co + 8 * i + 4, blk);
        }
        b
    }

    fn run_dx(f: &FsParams, lblk: u32, b: &[u8], t: &Fake) -> Sink {
        let d = DirParams {
            ino: Ino(12),
            csum_seed: 77,
            htree: Some(HtreeParams {
                hash_version: Some(1),
                numblocks: 4,
            }),
            ..Default::default()
        };
        let mut s = Sink::default();
        let pos = BlockPos {
            lblk,
            pblk: 900,
            zero_first: true,
        };
        check_block(f, &d, pos, b, t, &mut s);
        s
    }

    #[test]
    fn htree_root_and_node() {
        let t = Fake::new();
        let f = fsp(false);
        let b = dx_root(0, &[(0, 1), (0x8000_0001, 2), (0x9000_0000, 3)], false);
        let s = run_dx(&f, 0, &b, &t);
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        assert_eq!(
            s.dx[0].entries,
            vec![(0, 1), (0x8000_0000, 2), (0x9000_0000, 3)]
        );
        assert_eq!(s.dotdots, vec![(Ino(12), Ino(2))]);

        let mut b2 = b.clone();
        b2[htree::ROOT_INFO_OFFSET + 4] = 9;
        b2[htree::ROOT_INFO_OFFSET + 6] = 2;
        put_le16(&mut b2, 0x20, 7);
        put_le32(&mut b2, 0x20 + 8 * 2 + 4, 50);
        let c = codes(&run_dx(&f, 0, &b2, &t));
        for code in [Code::HtreeRootBad, Code::HtreeLimit, Code::HtreeBadBlock] {
            assert!(c.contains(&code), "{code:?} in {c:?}");
        }
        let mut b3 = b.clone();
        put_le16(&mut b3, 0x22, 500);
        let c = codes(&run_dx(&f, 0, &b3, &t));
        assert!(c.contains(&Code::HtreeCount));

        // An interior node: one empty entry over the block, then the index.
        let mut n = vec![0u8; BS];
        put_le16(&mut n, 4, BS as u16);
        put_le16(&mut n, 8, ((BS - 8) / 8) as u16);
        put_le16(&mut n, 10, 2);
        put_le32(&mut n, 12, 3);
        put_le32(&mut n, 16, 0x4000_0000);
        put_le32(&mut n, 20, 2);
        let s = run_dx(&f, 1, &n, &t);
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        assert_eq!(s.dx[0].kind, DxKind::Node);
        // An empty leaf (wrong limit) stays a leaf.
        put_le16(&mut n, 8, 3);
        let s = run_dx(&f, 1, &n, &t);
        assert!(s.dx.is_empty());
        assert_eq!(s.leaves.len(), 1);
    }

    #[test]
    fn htree_checksums() {
        let t = Fake::new();
        let f = fsp(true);
        let mut b = dx_root(0, &[(0, 1), (0x8000_0000, 2)], true);
        let co = 0x20;
        let cl = htree::parse_count_limit(&b, co);
        let c = htree::compute_tail_checksum(77, &b, co, cl).unwrap();
        put_le32(&mut b, co + usize::from(cl.limit) * 8 + 4, c);
        assert!(run_dx(&f, 0, &b, &t).problems.is_empty());
        b[co + 9] ^= 0x10;
        let c = codes(&run_dx(&f, 0, &b, &t));
        assert!(c.contains(&Code::HtreeNodeChecksum));
    }

    #[test]
    fn encrypted_casefolded_entries_carry_their_hash() {
        let mut t = Fake::new();
        for i in [12usize, 14, 15] {
            t.policies[i] = Some(1);
        }
        let d = DirParams {
            ino: Ino(12),
            policy: Some(1),
            casefold: true,
            htree: Some(HtreeParams {
                hash_version: Some(DX_HASH_SIPHASH),
                numblocks: 4,
            }),
            ..Default::default()
        };
        let f = fsp(false);
        // Two 16-byte names, each followed by (hash, minor hash).
        let mut b = vec![0u8; BS];
        let rec = dir_entry::rec_len_for(16) + DIRENT_HASH_LEN;
        for (k, (ino, h)) in [(14u32, 0x5000_0000u32), (15, 0x2000_0000)]
            .iter()
            .enumerate()
        {
            let off = k * rec;
            put_le32(&mut b, off, *ino);
            let rl = if k == 1 { BS - off } else { rec };
            put_le16(&mut b, off + 4, rl as u16);
            b[off + 6] = 16;
            b[off + 7] = 1;
            b[off + 8..off + 24].copy_from_slice(&[0xA5 + k as u8; 16]);
            put_le32(&mut b, off + 24, *h);
        }
        let s = run_with(&f, d, &b, &t);
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        assert_eq!(
            (s.leaves[0].min_hash, s.leaves[0].max_hash),
            (0x2000_0000, 0x5000_0000)
        );
        // A record with no room for the hash is corrupt.
        put_le16(&mut b, 4, dir_entry::rec_len_for(16) as u16);
        put_le32(&mut b, dir_entry::rec_len_for(16), 0);
        put_le16(&mut b, dir_entry::rec_len_for(16) + 4, 8);
        let s = run_with(&f, d, &b, &t);
        assert!(
            codes(&s).contains(&Code::DirBlockCorrupt),
            "{:?}",
            s.problems
        );
    }

    #[test]
    fn leaf_hash_range_recorded() {
        let t = Fake::new();
        let f = fsp(false);
        let b = block(
            &[(14, b"alpha", 1), (0, b"deleted", 0), (15, b"beta", 1)],
            BS,
        );
        let s = run_dx(&f, 2, &b, &t);
        let ha = dx_hash(b"alpha", 1, &f.hash_seed).unwrap().0;
        let hb = dx_hash(b"beta", 1, &f.hash_seed).unwrap().0;
        assert_eq!(s.leaves[0].min_hash, ha.min(hb));
        assert_eq!(s.leaves[0].max_hash, ha.max(hb));
    }

    #[test]
    fn inline_directory() {
        let t = Fake::new();
        let f = fsp(false);
        let d = DirParams {
            ino: Ino(13),
            csum_seed: 0,
            htree: None,
            ..Default::default()
        };
        let mut ib = vec![0u8; 60];
        put_le32(&mut ib, 0, 2);
        let tail = block(&[(14, b"in", 1)], 56);
        ib[4..60].copy_from_slice(&tail[..56]);
        let ea = block(&[(15, b"ea", 1)], 40)[..40].to_vec();
        let mut s = Sink::default();
        check_inline(&f, &d, &ib, &ea, &t, &mut s);
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        assert_eq!(s.dotdots, vec![(Ino(13), Ino(2))]);
        assert_eq!((t.links(13), t.links(14), t.links(15)), (1, 1, 1));
        put_le16(&mut ib, 8, 100);
        let mut s = Sink::default();
        check_inline(&f, &d, &ib, &ea, &t, &mut s);
        assert_eq!(codes(&s), vec![Code::DirBlockCorrupt]);
    }

    #[test]
    fn random_blocks_never_panic() {
        let t = Fake::new();
        let mut x: u64 = 0x1234_5678;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..2000 {
            let mut b = vec![0u8; BS];
            for v in b.iter_mut() {
                *v = next() as u8;
            }
            // Give some blocks plausible small rec_lens so the walk goes on.
            if round % 2 == 0 {
                for off in (0..BS).step_by(16) {
                    put_le16(&mut b, off + 4, 16);
                    b[off + 6] = (next() % 9) as u8;
                }
            }
            let f = fsp(round % 3 == 0);
            for lblk in [0, 1, 5] {
                let _ = run(&f, 12, lblk, &b, &t);
                let _ = run_dx(&f, lblk, &b, &t);
            }
            let mut s = Sink::default();
            let d = DirParams::default();
            check_inline(&f, &d, &b[..60], &b[60..60 + (round % 200)], &t, &mut s);
        }
    }
}
