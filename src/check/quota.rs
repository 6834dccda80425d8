//! Quota usage, checked after pass 5 like e2fsck does.
//!
//! Checks, for each quota type whose file the superblock names (user,
//! group, project; only with the quota feature), that the usage recorded in
//! the quota file equals the usage pass 1 computed: every id in the file
//! must show the space and inodes counted for it (zero if none), and every
//! id pass 1 charged must have an entry. A file that cannot be read (an
//! unreadable block, a header e2fsprogs refuses: see `fs/quota.rs`) is a
//! problem of its own, as e2fsck then offers to rewrite it.
//!
//! Collects nothing.
//!
//! Relies on pass 1 (`State::quota`). Reads the quota inodes' data through
//! the block-map walker pass 1 uses, one 1 KiB quota block at a time, so
//! memory does not grow with the file's size.

use super::blockmap::{self, MapInfo, MapVisitor, Scratch};
use super::problem::{Code, Problem};
use super::state::{QUOTA_TYPES, QuotaUse, State};
use crate::fs::inode::{self, Inode, flags};
use crate::fs::num::Ino;
use crate::fs::quota::{self, QUOTA_BLOCK};
use crate::fs::superblock::{incompat, ro_compat};
use crate::narrow;
use crate::volume::Fs;
use std::collections::BTreeSet;

const TYPE_NAMES: [&str; QUOTA_TYPES] = ["user", "group", "project"];

/// User and group quota files the superblock names at an ordinary inode
/// rather than their reserved one (3, 4), under the name e2fsprogs gives
/// them in the root (`aquota.user`, `aquota.group`): a repair moves each
/// into its reserved inode before pass 1, as e2fsck does when it may
/// write (-n leaves it to pass 2, which rejects the entries naming the
/// file). Under any other name e2fsck's move stops half-way (the reserved
/// inode overwritten, the field and the file kept); pfsck leaves such a
/// file to the passes, which end where e2fsck's repair ends (the entry
/// rejected, the file in /lost+found, the quota file written anew). A
/// project file has no reserved inode: wherever it is, it stays. A
/// number that cannot be an inode is `SbQuotaInode`'s, and a reserved
/// inode other than the type's own is left where it is. The problem
/// carries the file's inode and its type's name.
pub fn visible(fs: &Fs) -> Vec<Problem> {
    if !fs.sb.has_ro_compat(ro_compat::QUOTA) {
        return Vec::new();
    }
    let fields = [fs.sb.usr_quota_inum, fs.sb.grp_quota_inum];
    let wanted: Vec<_> = fields
        .into_iter()
        .zip(TYPE_NAMES)
        .zip(FILE_NAMES)
        .filter(|&((ino, _), _)| ino >= fs.geo.first_ino && ino <= fs.geo.inodes_count)
        .collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let entries = super::journal::root_entries(fs);
    wanted
        .into_iter()
        .filter(|&((ino, _), file)| {
            entries
                .iter()
                .find(|(n, _)| n.as_slice() == file.as_bytes())
                .is_some_and(|&(_, i)| i == ino)
        })
        .map(|((ino, name), _)| Problem::new(Code::QuotaVisible).ino(Ino(ino)).detail(name))
        .collect()
}

/// The names e2fsprogs gives the user and group quota files.
pub const FILE_NAMES: [&str; 2] = ["aquota.user", "aquota.group"];

/// Mapped runs of a file kept by the walker: no more than this many (a
/// quota file has a few blocks; more runs mean a corrupt map).
const MAX_RUNS: usize = 1 << 16;

pub fn run(fs: &Fs, state: &State) -> Vec<Problem> {
    let mut out = Vec::new();
    let Some(usage) = &state.quota else {
        return out;
    };
    if !fs.sb.has_ro_compat(ro_compat::QUOTA) {
        return out;
    }
    let inums = [
        fs.sb.usr_quota_inum,
        fs.sb.grp_quota_inum,
        fs.sb.prj_quota_inum,
    ];
    for (qtype, &ino) in inums.iter().enumerate() {
        if ino == 0 {
            continue;
        }
        let name = TYPE_NAMES[qtype];
        let bad = |why: String| {
            Problem::new(Code::QuotaFileBad)
                .ino(Ino(ino))
                .detail(format!("{name} quota file (inode {ino}): {why}"))
        };
        let first = out.len();
        match read_file(fs, ino, qtype) {
            Ok(disk) => out.extend(compare(qtype, &usage.by_type[qtype], &disk)),
            Err(why) => out.push(bad(why)),
        }
        // e2fsck asks once per type whether to rewrite the file.
        if let Some(p) = out.get_mut(first) {
            *p = p.clone().e2fsck(0x060002);
        }
    }
    out
}

/// Compares the entries of a quota file with the usage pass 1 counted, in
/// e2fsck's order: the file's entries as they come, then the ids missing
/// from the file.
fn compare(
    qtype: usize,
    counted: &std::collections::BTreeMap<u32, QuotaUse>,
    disk: &[quota::Dquot],
) -> Vec<Problem> {
    let name = TYPE_NAMES.get(qtype).copied().unwrap_or("?");
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for d in disk {
        seen.insert(d.id);
        let c = counted.get(&d.id).copied().unwrap_or_default();
        if c.space != d.space || c.inodes != d.inodes {
            out.push(
                Problem::new(Code::QuotaUsage)
                    .num(u64::from(d.id))
                    .detail(format!(
                        "{name} ID {}: {} bytes in {} inodes counted, {} bytes in {} inodes recorded",
                        d.id, c.space, c.inodes, d.space, d.inodes
                    )),
            );
        }
    }
    for id in counted.keys() {
        if !seen.contains(id) {
            out.push(
                Problem::new(Code::QuotaEntryMissing)
                    .num(u64::from(*id))
                    .detail(name),
            );
        }
    }
    out
}

/// Mapped runs of a file: (logical block, physical block, length).
#[derive(Default)]
struct Runs {
    runs: Vec<(u64, u64, u64)>,
}

impl MapVisitor for Runs {
    fn data(&mut self, lblk: u64, pblk: u64, len: u64, _unwritten: bool) {
        self.runs.push((lblk, pblk, len));
    }
    fn node(&mut self, _pblk: u64) {}
    fn problem(&mut self, _p: Problem) {}
    fn done(&self) -> bool {
        self.runs.len() >= MAX_RUNS
    }
}

/// Reads the entries of quota file `ino` of type `qtype` (the repair
/// keeps their limits).
pub(crate) fn read_file(fs: &Fs, ino: u32, qtype: usize) -> Result<Vec<quota::Dquot>, String> {
    let raw = fs
        .read_inode_raw(Ino(ino))
        .map_err(|e| format!("cannot read the inode: {e}"))?;
    let inode = Inode::parse(&raw);
    let bs = u64::from(fs.geo.block_size);
    let mut v = Runs::default();
    let mut scratch = Scratch::new();
    let extents = fs.sb.has_incompat(incompat::EXTENTS) && inode.has_flag(flags::EXTENTS);
    if inode.has_flag(flags::INLINE_DATA) {
        return Err("inline data".into());
    }
    if extents {
        let info = MapInfo {
            ino,
            is_dir: false,
            eof_block: inode.size.div_ceil(bs).wrapping_sub(1),
            csum_seed: fs
                .metadata_csum()
                .then(|| inode::inode_csum_seed(fs.csum_seed, Ino(ino), inode.generation)),
            large_dir: false,
            read_only: false,
            inode_unreadable: false,
        };
        blockmap::walk_extents(fs, info, &inode.block, &mut scratch, &mut v);
    } else {
        blockmap::walk_indirect(fs, ino, &inode.block_ptrs(), &mut scratch, &mut v);
    }
    v.runs.sort_unstable();
    let size = inode.size;
    let mut fsblock = vec![0u8; fs.block_size()];
    let mut read = |n: u32, buf: &mut [u8; QUOTA_BLOCK]| -> bool {
        buf.fill(0);
        let off = u64::from(n) * QUOTA_BLOCK as u64;
        // Like a file read: nothing past i_size, holes read as zeros.
        if off >= size {
            return true;
        }
        let lblk = off / bs;
        let k = v.runs.partition_point(|r| r.0 <= lblk);
        let Some(&(start, pblk, len)) = k.checked_sub(1).and_then(|k| v.runs.get(k)) else {
            return true;
        };
        if lblk >= start + len {
            return true;
        }
        if fs
            .read_block_into(pblk + (lblk - start), &mut fsblock)
            .is_err()
        {
            return false;
        }
        let within = narrow::to_usize(off % bs);
        let avail = narrow::to_usize((size - off).min(QUOTA_BLOCK as u64));
        if let Some(src) = fsblock.get(within..within + avail) {
            buf[..avail].copy_from_slice(src);
        }
        true
    };
    quota::read_dquots(qtype, size, &mut read).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn compare_reports_differences_and_missing_ids() {
        let mut counted = BTreeMap::new();
        counted.insert(
            0,
            QuotaUse {
                space: 13312,
                inodes: 2,
            },
        );
        counted.insert(
            7,
            QuotaUse {
                space: 1024,
                inodes: 1,
            },
        );
        let disk = [
            quota::Dquot {
                id: 0,
                space: 14336,
                inodes: 3,
                limits: Default::default(),
            },
            // Zero usage for an id nothing is charged to agrees.
            quota::Dquot {
                id: 9,
                space: 0,
                inodes: 0,
                limits: Default::default(),
            },
        ];
        let p = compare(0, &counted, &disk);
        let c: Vec<_> = p.iter().map(|p| (p.code, p.args().num)).collect();
        assert_eq!(
            c,
            vec![
                (Code::QuotaUsage, Some(0)),
                (Code::QuotaEntryMissing, Some(7))
            ]
        );
        assert_eq!(
            p[0].message(),
            "Quota usage differs for user ID 0: 13312 bytes in 2 inodes counted, 14336 bytes in 3 inodes recorded"
        );
        assert!(compare(1, &BTreeMap::new(), &disk[1..]).is_empty());
    }
}
