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
use super::state::{State, iflag};
use crate::fs::dir_entry;
use crate::fs::inode::{self, GOOD_OLD_INODE_SIZE, Inode};
use crate::fs::num::{Blk, Ino};
use crate::fs::superblock::incompat;
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
    pass1.retain(|p| {
        let asked_in_pass2 = p.spec().pass == Pass::P1 && {
            let refs = e2fsck_map::refs(p, Run::ReadOnly);
            !refs.is_empty() && refs.iter().all(|r| r.code >> 16 == 2)
        };
        !asked_in_pass2 || p.args().ino.is_some_and(|i| reached.contains(&i.get()))
    });
    true
}

/// Pass 4: e2fsck reads again each inode in use that no entry names, and
/// each whose link count differs from the entries found; a checksum it
/// was not allowed to fix fails that read. `pass4` keeps the problems of
/// the inodes before it (and those naming no inode).
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
            && !state.has_iflag(ino, iflag::IN_BAD_BLOCK)
            && state.inode_used.get(Ino(ino))
            && (state.links_seen.get(Ino(ino)) == 0 || miscounted.contains(&ino))
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
    let filetype = fs.sb.has_incompat(incompat::FILETYPE) && fs.sb.creator_os != EXT2_OS_HURD;
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

const EXT2_OS_HURD: u32 = 1;

/// What e2fsck asks after declining `p` (an entry naming an unused
/// inode): nothing, a file type, or (a stop marker) nothing more.
fn follow_up(fs: &Fs, p: &Problem, filetype: bool, csum: bool) -> Option<Problem> {
    let a = p.args();
    let target = u32::try_from(a.num?).ok()?;
    let raw = fs.read_inode_raw(target).ok()?;
    let node = Inode::parse(&raw);
    let zero = raw[..GOOD_OLD_INODE_SIZE.min(raw.len())]
        .iter()
        .all(|&b| b == 0);
    if csum
        && !zero
        && inode::compute_checksum(fs.csum_seed, target, &raw) != node.stored_checksum()
    {
        return Some(Problem::new(Code::StoppedAtInodeChecksumP2).ino(Ino(target)));
    }
    if !filetype || a.detail == "." || a.detail == ".." {
        return None;
    }
    // The entry's own file type, from its block: the first naming it.
    let blk = a.blk?.get();
    let b = fs.read_block(blk).ok()?;
    let mut off = 0;
    let have = loop {
        if off + dir_entry::HEADER_LEN > b.len() {
            return None;
        }
        let rec = dir_entry::rec_len_at(&b, off, b.len());
        if dir_entry::inode_at(&b, off) == target {
            break dir_entry::file_type_at(&b, off);
        }
        if rec < dir_entry::HEADER_LEN {
            return None;
        }
        off += rec;
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
