//! Where a read-only check stops because e2fsck -n aborts: a read that
//! e2fsck repeats in a later step fails on what it was not allowed to fix
//! (a checksum, an xattr block header), and it gives up there, exit 12.
//! Each function gets one pass's problems in e2fsck's order, cuts them
//! where e2fsck aborts, and ends them with a notice; it returns whether
//! the check stopped. The other stops (a directory block it may not
//! salvage, an illegal indirect pointer, an uninitialised group) are in
//! `mod.rs` and `pass5.rs`.

use super::e2fsck_map::{self, Run};
use super::problem::{Code, Pass, Problem};
use super::problem_list::ProblemList;
use super::state::{DirBlock, State, iflag};
use crate::fs::dir_entry;
use crate::fs::inode::{self, GOOD_OLD_INODE_SIZE, Inode};
use crate::fs::num::{Blk, Group, Ino, LBlk};
use crate::fs::superblock::incompat;
use crate::narrow;
use crate::volume::Fs;
use std::collections::BTreeSet;

/// Inodes whose checksum fails (pass 1 says so in a read-only check).
pub(super) fn bad_checksum_inodes(problems: &ProblemList) -> BTreeSet<u32> {
    problems
        .iter_where(|c| c == Code::InodeChecksum)
        .filter_map(|(_, p)| p.args().ino.map(Ino::get))
        .collect()
}

/// End of pass 1: e2fsck sets each xattr block's reference count right by
/// reading the block again, the ones counted too high first, then those
/// counted too low, each in block order. A block with a bad header or a
/// bad checksum cannot be read there.
pub(super) fn at_unreadable_xattr(problems: &mut ProblemList) -> bool {
    let unreadable: BTreeSet<u64> = problems
        .iter()
        .filter(|p| match p.code {
            Code::XattrBlockChecksum => true,
            Code::XattrBlockHeader => !p.args().detail.starts_with("cannot read"),
            _ => false,
        })
        .filter_map(|p| p.args().blk.map(Blk::get))
        .collect();
    if unreadable.is_empty() {
        return false;
    }
    let order = |p: &Problem| {
        let a = p.args();
        let low = a.num.unwrap_or(0) < a.num2.unwrap_or(0);
        (low, a.blk.map_or(0, Blk::get))
    };
    let Some(stop) = problems
        .iter()
        .filter(|p| p.code == Code::XattrBlockRefcount)
        .filter(|p| p.args().blk.is_some_and(|b| unreadable.contains(&b.get())))
        .map(|p| order(&p))
        .min()
    else {
        return false;
    };
    problems.retain(|p| p.code != Code::XattrBlockRefcount || order(p) < stop);
    problems.push(Problem::new(Code::StoppedAtUnreadableXattr).blk(Blk(stop.1)));
    true
}

/// Pass 2: meeting an entry that names an inode pass 1 marked bad, e2fsck
/// reads the inode again to ask about it; a checksum it was not allowed
/// to fix fails that read. `pass2` ends before that entry; the problems
/// pass 1 found in bad inodes that e2fsck would have asked about in pass
/// 2 stay only for the inodes it reached before (`pass1`).
pub(super) fn at_bad_inode_checksum(
    pass1: &mut ProblemList,
    pass2: &mut ProblemList,
    bad_csum: &BTreeSet<u32>,
) -> bool {
    let target = |p: &Problem| {
        (p.code == Code::DirEntryBadInodeTarget)
            .then(|| p.args().num)
            .flatten()
            .and_then(|n| u32::try_from(n).ok())
    };
    let Some(at) = pass2.iter().position(|p| {
        p.code == Code::StoppedAtInodeChecksumP2
            || target(&p).is_some_and(|n| bad_csum.contains(&n))
    }) else {
        return false;
    };
    let marked = pass2.iter().nth(at).map(|p| p.code) == Some(Code::StoppedAtInodeChecksumP2);
    // A directory block it may not salvage stops it earlier.
    if pass2.codes().take(at).any(|c| c == Code::DirBlockCorrupt) {
        return false;
    }
    let reached: BTreeSet<u32> = pass2.iter().take(at).filter_map(|p| target(&p)).collect();
    let stop_ino = pass2.iter().nth(at).and_then(|p| target(&p));
    let keep = at + usize::from(marked);
    let mut k = 0;
    pass2.retain(|_| {
        k += 1;
        k <= keep
    });
    if !marked {
        let mut stop = Problem::new(Code::StoppedAtInodeChecksumP2);
        if let Some(ino) = stop_ino {
            stop = stop.ino(Ino(ino));
        }
        pass2.push(stop);
    }
    keep_asked_before(pass1, &reached);
    true
}

/// The inodes pass 2's entries name that pass 1 marked bad, in `pass2`.
fn bad_targets(pass2: &ProblemList) -> BTreeSet<u32> {
    pass2
        .iter()
        .filter(|p| p.code == Code::DirEntryBadInodeTarget)
        .filter_map(|p| p.args().num.and_then(|n| u32::try_from(n).ok()))
        .collect()
}

/// Pass 2 stopped: of the problems pass 1 found that e2fsck asks about
/// in pass 2 (when an entry names the inode), `pass1` keeps those of the
/// inodes in `reached`.
fn keep_asked_before(pass1: &mut ProblemList, reached: &BTreeSet<u32>) {
    pass1.retain(|p| {
        let asked_in_pass2 = p.spec().pass == Pass::P1 && {
            let refs = e2fsck_map::refs(p, Run::ReadOnly);
            !refs.is_empty() && refs.iter().all(|r| r.code >> 16 == 2)
        };
        !asked_in_pass2 || p.args().ino.is_some_and(|i| reached.contains(&i.get()))
    });
}

/// After [`dir_without_info`] cut pass 2 (`pass2` ends with its notice):
/// `pass1` as for [`at_bad_inode_checksum`]. Whether it stopped.
pub(super) fn at_no_dir_info(pass1: &mut ProblemList, pass2: &ProblemList) -> bool {
    if !pass2.codes().any(|c| c == Code::StoppedAtNoDirInfo) {
        return false;
    }
    keep_asked_before(pass1, &bad_targets(pass2));
    true
}

/// Pass 4: e2fsck reads again each inode in use that no entry names, each
/// whose link count differs from the entries found, and each carrying
/// EA_INODE_FL (to judge it as an EA inode, however many entries name
/// it); a checksum it was not allowed to fix fails that read. `pass4`
/// keeps the problems of the inodes before it (and those naming no
/// inode).
pub(super) fn at_pass4_checksum(
    pass4: &mut ProblemList,
    state: &State,
    bad_csum: &BTreeSet<u32>,
    first_ino: u32,
    skip: &[u32],
) -> bool {
    let miscounted: BTreeSet<u32> = pass4
        .iter_where(|c| c == Code::InodeLinkCount)
        .filter_map(|(_, p)| p.args().ino.map(Ino::get))
        .collect();
    let Some(stop) = bad_csum.iter().copied().find(|&ino| {
        (ino == crate::fs::inode::ROOT_INO || ino >= first_ino)
            && !skip.contains(&ino)
            && !state.has_iflag(Ino(ino), iflag::IN_BAD_BLOCK)
            && state.inode_used.get(Ino(ino))
            && (state.links_seen.get(Ino(ino)) == 0
                || miscounted.contains(&ino)
                || state.has_iflag(Ino(ino), iflag::EA_INODE))
    }) else {
        return false;
    };
    pass4.retain(|p| p.args().ino.is_none_or(|i| i.get() < stop));
    pass4.push(Problem::new(Code::StoppedAtInodeChecksumP4).ino(Ino(stop)));
    true
}

/// Pass 2: told no about an entry naming an unused inode, e2fsck keeps it
/// and checks its file type against the mode it reads from that inode (a
/// deleted file keeps its mode; a zeroed or overwritten one may not). A
/// checksum failing on that read aborts it: the entry is then followed by
/// a stop marker, which [`at_bad_inode_checksum`] cuts at.
pub(super) fn after_unused_entries(fs: &Fs, pass2: &mut ProblemList) {
    if !pass2.codes().any(|c| c == Code::DirEntryDeletedInode) {
        return;
    }
    let filetype = fs.sb.has_incompat(incompat::FILETYPE);
    let csum = fs.metadata_csum();
    let mut out = ProblemList::new();
    for p in pass2.iter() {
        let follow = (p.code == Code::DirEntryDeletedInode)
            .then(|| follow_up(fs, &p, filetype, csum))
            .flatten();
        out.push(p);
        if let Some(f) = follow {
            out.push(f);
        }
    }
    *pass2 = out;
}

/// The file type e2fsck checks on an entry naming an unused inode that it
/// keeps: told no (see `after_unused_entries`), or under -y once it
/// knows it will start over (then it clears no such entry). The problem,
/// if the type is wrong.
pub fn kept_unused_entry_type(fs: &Fs, p: &Problem) -> Option<Problem> {
    if p.code != Code::DirEntryDeletedInode {
        return None;
    }
    let filetype = fs.sb.has_incompat(incompat::FILETYPE);
    follow_up(fs, p, filetype, fs.metadata_csum())
        .filter(|q| q.code != Code::StoppedAtInodeChecksumP2)
}

/// What e2fsck asks after declining `p` (an entry naming an unused
/// inode): nothing, a file type, or (a stop marker) nothing more.
fn follow_up(fs: &Fs, p: &Problem, filetype: bool, csum: bool) -> Option<Problem> {
    let a = p.args();
    let target = u32::try_from(a.num?).ok()?;
    let raw = fs.read_inode_raw(Ino(target)).ok()?;
    let node = Inode::parse(&raw);
    let zero = raw[..GOOD_OLD_INODE_SIZE.min(raw.len())]
        .iter()
        .all(|&b| b == 0);
    if csum
        && !zero
        && inode::compute_checksum(fs.csum_seed, Ino(target), &raw) != node.stored_checksum()
    {
        return Some(Problem::new(Code::StoppedAtInodeChecksumP2).ino(Ino(target)));
    }
    // '.' and '..' are judged as any entry here: their type, too, must
    // be the mode's.
    if !filetype {
        return None;
    }
    // The entry's own file type, from its block (block 0 for an inline
    // directory: its inode): the first naming it.
    let blk = a.blk?.get();
    let have = if blk == 0 {
        inline_entry_type(fs, a.ino?, Ino(target))?
    } else {
        entry_type(&fs.read_block(blk).ok()?, Ino(target))?
    };
    let should = node.file_type() as u8;
    if have == should {
        return None;
    }
    let code = if have == 0 {
        Code::DirEntryFileTypeUnset
    } else {
        Code::DirEntryFileType
    };
    Some(
        Problem::new(code)
            .ino(a.ino?)
            .blk(Blk(blk))
            .detail(a.detail.to_string())
            .num(u64::from(have))
            .num2(u64::from(should)),
    )
}

/// The file type of the first entry of directory bytes `b` naming
/// `target`.
fn entry_type(b: &[u8], target: Ino) -> Option<u8> {
    let mut off = 0;
    loop {
        if off + dir_entry::HEADER_LEN > b.len() {
            return None;
        }
        let rec = dir_entry::rec_len_at(b, off, b.len());
        if dir_entry::inode_at(b, off) == target {
            return Some(dir_entry::file_type_at(b, off));
        }
        if rec < dir_entry::HEADER_LEN {
            return None;
        }
        off += rec;
    }
}

/// [`entry_type`] in inline directory `dir`: its i_block past the parent,
/// then its system.data value.
fn inline_entry_type(fs: &Fs, dir: Ino, target: Ino) -> Option<u8> {
    let raw = fs.read_inode_raw(dir).ok()?;
    let node = Inode::parse(&raw);
    if let Some(t) = node.block.get(4..).and_then(|b| entry_type(b, target)) {
        return Some(t);
    }
    let data = crate::fs::xattr::inline_data(&raw)?;
    entry_type(raw.get(data.value.0..data.value.1)?, target)
}

/// A read that checks `ino`'s checksum fails on it: metadata_csum, an
/// inode not all zero (never written) and a checksum that does not match.
pub(super) fn inode_unreadable(fs: &Fs, ino: u32) -> bool {
    if !fs.metadata_csum() {
        return false;
    }
    let Ok(raw) = fs.read_inode_raw(Ino(ino)) else {
        return false;
    };
    let zero = raw[..GOOD_OLD_INODE_SIZE.min(raw.len())]
        .iter()
        .all(|&b| b == 0);
    !zero
        && inode::compute_checksum(fs.csum_seed, Ino(ino), &raw)
            != Inode::parse(&raw).stored_checksum()
}

/// Pass 1, the bad blocks inode: one whose checksum fails is judged
/// invalid, and declined, e2fsck then walks its list through a read
/// that fails on that checksum, and aborts. `problems` (pass 1's) end
/// with that judgement. Whether it stopped.
pub(super) fn at_bad_blocks_inode(fs: &Fs, problems: &mut ProblemList) -> bool {
    if !inode_unreadable(fs, inode::BAD_INO) {
        return false;
    }
    let Some(at) = problems
        .iter()
        .position(|p| p.code == Code::InodeReservedBad && p.args().ino == Some(Ino::BAD))
    else {
        return false;
    };
    problems.truncate(at + 1);
    problems.push(Problem::new(Code::StoppedAtInodeChecksumP1).ino(Ino::BAD));
    true
}

/// Pass 1, the bad blocks inode: after an indirect block it refuses
/// (declined), e2fsck asks whether to go on with the inode and, told no,
/// aborts. `problems` (pass 1's) end with that inode's. Whether it
/// stopped.
pub(super) fn at_bad_blocks_indirect(problems: &mut ProblemList) -> bool {
    if !problems.codes().any(|c| c == Code::BadBlocksInodeIndirect) {
        return false;
    }
    let bad = Some(Ino::BAD);
    let Some(at) = problems
        .iter()
        .enumerate()
        .filter(|(_, p)| p.args().ino == bad)
        .map(|(k, _)| k)
        .last()
    else {
        return false;
    };
    problems.truncate(at + 1);
    problems.push(Problem::new(Code::StoppedAtBadBlocksInode).ino(Ino::BAD));
    true
}

/// Pass 1: e2fsck's inode scan refuses a group whose inode table runs
/// outside the file system (relocating it was declined before pass 1),
/// and -n aborts there. `problems` (pass 1's) keep those of the inodes of
/// the groups before it. Whether it stopped.
pub(super) fn at_inode_table_outside(fs: &Fs, problems: &mut ProblemList) -> bool {
    let geo = &fs.geo;
    let outside = |t: u64| {
        t != 0
            && (t < geo.first_data_block
                || t.saturating_add(u64::from(geo.inode_table_blocks)) > geo.blocks_count)
    };
    let Some(g) = fs.gds.iter().position(|gd| outside(gd.inode_table)) else {
        return false;
    };
    let first = g as u64 * u64::from(geo.inodes_per_group) + 1;
    problems.retain(|p| p.args().ino.is_some_and(|i| u64::from(i.get()) < first));
    problems.push(Problem::new(Code::StoppedAtInodeTable).group(Group(narrow::sat32(g))));
    true
}

/// After pass 5, before the quota check, e2fsck reads the orphan file's
/// inode to set the file up; under -n its checksum is still wrong, the
/// read fails and it gives up there. The notice, when it stops (an
/// inode number naming no inode is the superblock check's).
pub(super) fn at_orphan_file_inode(fs: &Fs) -> Option<Problem> {
    let inum = fs.sb.orphan_file_inum;
    (fs.sb.has_compat(crate::fs::superblock::compat::ORPHAN_FILE)
        && (1..=fs.geo.inodes_count).contains(&inum)
        && inode_unreadable(fs, inum))
    .then(|| Problem::new(Code::StoppedAtOrphanFileInode).ino(Ino(inum)))
}

/// Before pass 1, e2fsck cannot read a resize inode whose checksum
/// fails: it says nothing then and plans to make the inode again at the
/// end of pass 1, where the same read fails and, told not to go on, it
/// aborts.
pub(super) fn resize_inode_unreadable(fs: &Fs) -> bool {
    fs.sb
        .has_compat(crate::fs::superblock::compat::RESIZE_INODE)
        && inode_unreadable(fs, inode::RESIZE_INO)
}

/// End of pass 1 (after the xattr reference counts): see
/// [`resize_inode_unreadable`]. Whether it stopped.
pub(super) fn at_resize_inode(fs: &Fs, problems: &mut ProblemList) -> bool {
    if !resize_inode_unreadable(fs) {
        return false;
    }
    problems.push(Problem::new(Code::StoppedAtInodeChecksumP1).ino(Ino::RESIZE));
    true
}

/// Pass 1B rescans every inode with a read that checks checksums: at the
/// first that fails (`unreadable`, from pass 1B) e2fsck aborts. The
/// owners of shared blocks before it stay listed, with their problems
/// (what pass 1B logged of them; pass 1D, which asks about them, is never
/// reached); the others' give way to the notice. Whether it stopped.
pub(super) fn at_pass1b_checksum(
    problems: &mut ProblemList,
    dups: &mut Option<std::sync::Arc<super::pass1b::Dups>>,
) -> bool {
    let Some(d) = dups.as_deref() else {
        return false;
    };
    let Some(bad) = d.unreadable else {
        return false;
    };
    let mut d = d.clone();
    d.owners.retain(|o| o.ino < bad);
    *dups = Some(std::sync::Arc::new(d));
    // What the rescan said of the inodes before the one it stops at
    // stays.
    problems.retain(|p| p.spec().pass != Pass::P1B || p.args().ino.is_some_and(|i| i < bad));
    problems.push(Problem::new(Code::StoppedAtInodeChecksumP1B).ino(bad));
    true
}

/// Where pass 2 stops on a directory e2fsck -n keeps no record of.
pub(super) struct NoDirInfo {
    /// The block it stops in: block 0 of that directory.
    pub at: DirBlock,
    /// What it says about the block before it stops, the notice last.
    pub problems: ProblemList,
}

/// Pass 2: a reserved inode (below `s_first_ino`, root aside) with a
/// directory's mode keeps that mode under -n, so e2fsck walks its blocks
/// as a directory's, but it records directories only among the ordinary
/// inodes. Setting the parent named by the '..' of such a directory's
/// first block finds no record, and it aborts there (after saying that
/// '.' names a reserved inode). The first such block in its block order;
/// none when its '.' and '..' are not both plain, which e2fsck would
/// question (and not abort on) instead.
pub(super) fn dir_without_info(fs: &Fs, state: &State) -> Option<NoDirInfo> {
    let first_ino = fs.geo.first_ino;
    // The first by physical block, and only first blocks are looked at:
    // e2fsck's order either way (with dir_index it takes every first
    // block before the others). A read-only check keeps the blocks in
    // inode order; these are few (reserved inodes only).
    let (at, ino) = state
        .dir_blocks
        .iter()
        .filter(|b| {
            b.lblk == LBlk(0)
                && b.ino != Ino::ROOT
                && b.ino < Ino(first_ino)
                && state.dir_index(b.ino).is_none()
                && !state.has_iflag(b.ino, iflag::INLINE)
        })
        .filter_map(|b| Some((*b, plain_dot_dotdot(fs, b)?)))
        .min_by_key(|&(b, _)| b)?;
    let mut problems = ProblemList::new();
    problems.push(
        Problem::new(Code::DirEntryReservedInode)
            .ino(at.ino)
            .blk(at.pblk)
            .detail(".".to_string())
            .num(u64::from(ino.get())),
    );
    problems.push(Problem::new(Code::StoppedAtNoDirInfo).ino(at.ino));
    Some(NoDirInfo { at, problems })
}

/// The inode a directory block's '.' names, when it names its own
/// directory and is followed by a plain '..' naming some inode.
fn plain_dot_dotdot(fs: &Fs, b: &DirBlock) -> Option<Ino> {
    let buf = fs.read_block(b.pblk.0).ok()?;
    let bs = buf.len();
    let name = |off: usize, len: usize| buf.get(off + dir_entry::HEADER_LEN..off + 9 + len);
    let dot_len = dir_entry::rec_len_at(&buf, 0, bs);
    let dot = dir_entry::inode_at(&buf, 0);
    // A '.' longer than 24 bytes is split first (a question, not an abort).
    if dot != b.ino
        || dir_entry::name_len_at(&buf, 0) != 1
        || name(0, 1)? != b".\0"
        || !(12..=24).contains(&dot_len)
        || !dot_len.is_multiple_of(4)
    {
        return None;
    }
    let off = dot_len;
    let len = dir_entry::rec_len_at(&buf, off, bs);
    let fits = len >= 12 && len.is_multiple_of(4) && off + len <= bs;
    (fits
        && dir_entry::inode_at(&buf, off) != Ino::NONE
        && dir_entry::name_len_at(&buf, off) == 2
        && name(off, 2)? == b"..\0")
        .then_some(dot)
}

/// How many blocks libext2fs' block cache holds: a block written under
/// -n stays there until the cache gives its slot to the eighth other
/// block read after it.
const BLOCK_CACHE_SLOTS: usize = 8;

/// Where pass 2 stops after e2fsck -n placed a bitmap anew.
pub(super) struct RelocatedBitmap {
    /// The directory block whose read fails.
    pub at: DirBlock,
    /// What it says, the notice alone.
    pub problem: Problem,
}

/// A group's block or inode bitmap recorded at block 0 (as the check
/// reads the descriptors: e2fsck's superblock check sets an out-of-group
/// one to 0 only when told yes) is one e2fsck relocates at the end of
/// pass 1, under -n too: it picks a free block and zeroes it through
/// libext2fs' write-back cache of `BLOCK_CACHE_SLOTS` blocks. The device
/// is open read-only, so the write fails when that slot is taken for
/// another block, and the read that takes it fails with it; in pass 2,
/// that of a directory block, where e2fsck asks whether to go on and -n
/// gives up. Pass 2 reads the directory blocks in its order (with
/// dir_index every first block, then the others, each by physical
/// block), and the slot goes at about the eighth: the block taken here
/// (the blocks pass 1 left in the cache, or inodes read between them,
/// move it a few places, which only changes what is said before the
/// stop). None with fewer blocks (e2fsck fails later, on reads this does
/// not follow) or with shared blocks (pass 1B reads first).
pub(super) fn relocated_bitmap(fs: &Fs, state: &State) -> Option<RelocatedBitmap> {
    let (g, which) = fs.gds.iter().enumerate().find_map(|(g, gd)| {
        if gd.block_bitmap == 0 {
            Some((g, "block bitmap"))
        } else if gd.inode_bitmap == 0 {
            Some((g, "inode bitmap"))
        } else {
            None
        }
    })?;
    let zero_first = fs.sb.has_compat(crate::fs::superblock::compat::DIR_INDEX);
    let mut blocks: Vec<(bool, DirBlock)> = state
        .dir_blocks
        .iter()
        .filter(|b| b.pblk != Blk(0) && !state.has_iflag(b.ino, iflag::INLINE))
        .map(|b| (zero_first && b.lblk != LBlk(0), *b))
        .collect();
    blocks.sort_unstable();
    let (_, at) = *blocks.get(BLOCK_CACHE_SLOTS - 1)?;
    let problem = Problem::new(Code::StoppedAtRelocatedBitmap)
        .ino(at.ino)
        .blk(at.pblk)
        .group(Group(narrow::sat32(g)))
        .detail(which.to_string());
    Some(RelocatedBitmap { at, problem })
}

/// After [`relocated_bitmap`] cut pass 2 before its block: `pass2` ends
/// with the notice, and `pass1` keeps what pass 2 would have asked of
/// the inodes its entries named before (as [`at_bad_inode_checksum`]).
pub(super) fn at_relocated_bitmap(
    pass1: &mut ProblemList,
    pass2: &mut ProblemList,
    stop: RelocatedBitmap,
) -> bool {
    keep_asked_before(pass1, &bad_targets(pass2));
    pass2.push(stop.problem);
    true
}
