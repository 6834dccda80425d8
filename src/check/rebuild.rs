//! Pass 3A: the directories e2fsck rebuilds, and what it finds rebuilding
//! them.
//!
//! Pass 2 schedules a directory for a rebuild when one of its blocks
//! repeats a name (`DirEntryDuplicate`). e2fsck then reads all of the
//! directory's entries, sorts them (by hash, then name, equal names by
//! falling inode number) and compares each with the one before it: the
//! whole directory, not one block at a time. Each pair with the same
//! name is a question: naming the same inode, the second entry is
//! dropped; naming another, it is renamed (in an encrypted directory,
//! whose names cannot be altered without the key, dropped).
//!
//! e2fsck -n schedules no other rebuild (the other reasons are answers
//! it declines), and asks every question of each pair, declining each.
//!
//! Reads the directory blocks pass 1 listed; writes nothing. Relies on
//! pass 1 (`dir_blocks`, the inode flags) and pass 2's problems.

use super::problem::{Code, Problem};
use super::problem_list::ProblemList;
use super::state::{State, iflag};
use crate::fs::casefold;
use crate::fs::dir_entry::{HEADER_LEN, inode_at, name_len_at, rec_len_at};
use crate::fs::num::Ino;
use crate::fs::superblock::compat;
use crate::volume::Fs;

/// One entry as e2fsck's rebuild lists it.
struct Ent {
    ino: u32,
    name: Vec<u8>,
}

/// The problems of pass 3A for the directories pass 2's `found` schedules.
/// `repairing`: the answers are yes (a dropped entry then names inode 0
/// for the next comparison).
pub fn check(fs: &Fs, st: &State, found: &ProblemList, repairing: bool) -> Vec<Problem> {
    let mut dirs: Vec<u32> = found
        .iter()
        .filter(|p| p.code == Code::DirEntryDuplicate)
        .filter_map(|p| p.args().ino.map(Ino::get))
        .collect();
    dirs.sort_unstable();
    dirs.dedup();
    let mut out = Vec::new();
    for dir in dirs {
        if !st.inode_used.get(Ino(dir)) || st.has_iflag(Ino(dir), iflag::INLINE) {
            continue;
        }
        let Some((mut ents, compress)) = entries(fs, st, dir) else {
            continue;
        };
        let cf = st.has_iflag(Ino(dir), iflag::CASEFOLD);
        let key = |e: &Ent| {
            cf.then(|| casefold::fold(&e.name))
                .flatten()
                .unwrap_or_else(|| e.name.clone())
        };
        // A small directory is compacted: its first two entries stay
        // where they are.
        let fixed = if compress { ents.len().min(2) } else { 0 };
        ents[fixed..].sort_by(|a, b| {
            key(a)
                .cmp(&key(b))
                .then(a.name.len().cmp(&b.name.len()))
                .then(b.ino.cmp(&a.ino))
        });
        let encrypted = st.has_iflag(Ino(dir), iflag::ENCRYPTED);
        pairs(dir, &mut ents, cf, encrypted, repairing, &mut out);
    }
    out
}

/// Compares each entry with the one before it, as e2fsck does.
fn pairs(
    dir: u32,
    ents: &mut [Ent],
    cf: bool,
    encrypted: bool,
    repairing: bool,
    out: &mut Vec<Problem>,
) {
    let same = |a: &[u8], b: &[u8]| {
        if cf {
            casefold::same(a, b) || a == b
        } else {
            a == b
        }
    };
    for i in 1..ents.len() {
        if ents[i].ino == 0 || !same(&ents[i].name, &ents[i - 1].name) {
            continue;
        }
        let p = || {
            Problem::new(Code::DirRebuildDuplicate)
                .ino(Ino(dir))
                .num(u64::from(ents[i].ino))
                .detail(super::dirblock::name_str(&ents[i].name))
        };
        if ents[i].ino == ents[i - 1].ino {
            out.push(p().e2fsck(0x020041));
            if repairing {
                ents[i].ino = 0;
                continue;
            }
        }
        if encrypted {
            out.push(p().e2fsck(0x020054));
            if repairing {
                ents[i].ino = 0;
            }
            continue;
        }
        out.push(p().e2fsck(0x020042));
    }
}

/// The entries of `dir` in the order of its blocks, and whether e2fsck
/// compacts it (no index feature, or fewer than two blocks): then '.' and
/// '..' are listed too, otherwise left out. None when a block cannot be
/// read.
fn entries(fs: &Fs, st: &State, dir: u32) -> Option<(Vec<Ent>, bool)> {
    let blocks = st.dir_blocks_once(Ino(dir));
    let compress = !fs.sb.has_compat(compat::DIR_INDEX) || blocks.len() < 2;
    let mut ents = Vec::new();
    for &(_, pblk) in &blocks {
        let b = fs.read_block(pblk.0).ok()?;
        let bs = b.len();
        let mut off = 0;
        while off + HEADER_LEN <= bs {
            let rec = rec_len_at(&b, off, bs);
            let name_len = name_len_at(&b, off);
            if rec < HEADER_LEN
                || !rec.is_multiple_of(4)
                || rec > bs - off
                || name_len + HEADER_LEN > rec
            {
                break;
            }
            let ino = inode_at(&b, off).get();
            let name = &b[off + HEADER_LEN..off + HEADER_LEN + name_len];
            off += rec;
            if ino == 0 || (!compress && (name == b"." || name == b"..")) {
                continue;
            }
            ents.push(Ent {
                ino,
                name: name.to_vec(),
            });
        }
    }
    Some((ents, compress))
}
