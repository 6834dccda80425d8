//! Pass 4: reference counts.
//!
//! Compares, for every inode in use, the number of directory entries pass 2
//! found naming it with its i_links_count; inodes no entry names are
//! reported as unattached (zero-length ones separately, since e2fsck offers
//! to delete those rather than reconnect them).
//!
//! Collects nothing.
//!
//! Relies on pass 1 (`inode_used`, `inode_dir`, `i_links`, `iflags`,
//! `ea_inode_refs`) and pass 2 (`links_seen`). Reads an inode only when
//! xattrs refer to it or no directory entry names it. As in e2fsck 1.47.4,
//! an inode xattr entries refer to counts as linked once (with or without
//! EA_INODE_FL, and whatever entries name it), and the count it keeps of
//! those entries is compared with the entries pass 1 found; any other
//! inode no entry names is unattached (zero-length ones told apart), and
//! one carrying EA_INODE_FL is reported for the flag first.
//!
//! Rules that make a count acceptable although it differs: a directory
//! with more than 65000 links counts as 1 (dir_nlink), and an indexed
//! directory whose count is 1 has overflowed once and is left alone in a
//! read-only check.

use super::problem::{Code, Problem, ProblemList};
use super::state::{State, iflag};
use crate::engine::{Control, Threads, par_map};
use crate::error::Result;
use crate::fs::inode::{Inode, ROOT_INO};
use crate::fs::num::Ino;
use crate::fs::superblock::ro_compat;
use crate::fs::xattr;
use crate::narrow;
use crate::volume::Fs;

/// Above this many links a directory's i_links_count is 1 (EXT2_LINK_MAX).
const LINK_MAX: u16 = 65000;
/// Inodes per work unit (a multiple of 64: units start on bitmap words).
const UNIT_INODES: u64 = 1 << 16;

/// `repairing`: e2fsck only offers to make an overflowed count exact in
/// a repair (a read-only check leaves it, as it is not an error).
pub fn run(
    fs: &Fs,
    state: &State,
    threads: Threads,
    ctl: &Control,
    repairing: bool,
) -> Result<ProblemList> {
    let skip = [fs.sb.prj_quota_inum, fs.sb.orphan_file_inum];
    let mut out = ProblemList::new();
    // A directory with more subdirectories than a link count can say
    // needs dir_nlink (its count is then 1).
    if !fs.sb.has_ro_compat(ro_compat::DIR_NLINK)
        && state
            .dirs
            .iter()
            .any(|&d| state.links_seen.get(d) > LINK_MAX)
    {
        out.push(Problem::new(Code::DirNlinkFeature));
    }
    out.append(check(
        state,
        fs.geo.inodes_count,
        fs.geo.first_ino,
        Skip {
            inodes: &skip,
            repairing,
        },
        threads,
        ctl,
        |ino| fs.read_inode_raw(Ino(ino)).ok(),
    ));
    Ok(out)
}

/// What pass 4 needs from an unreferenced inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreferenced {
    ZeroLength,
    Other,
}

pub fn classify(raw: &[u8]) -> Unreferenced {
    let i = Inode::parse(raw);
    // An inode whose only content may be extended attributes is kept.
    let has_ea = xattr::ibody_start(raw).is_some();
    if i.blocks_raw == 0 && !has_ea && (i.is_reg() || i.is_dir()) {
        Unreferenced::ZeroLength
    } else {
        Unreferenced::Other
    }
}

/// What [`check`] leaves out: inodes it does not judge (the project
/// quota and orphan file inodes), and, outside a repair, the offer to
/// make an overflowed directory count exact.
#[derive(Clone, Copy)]
pub struct Skip<'a> {
    pub inodes: &'a [u32],
    pub repairing: bool,
}

/// Checks every used inode, in ranges of `UNIT_INODES` on `threads`;
/// problems come out in inode order whatever the thread count.
pub fn check(
    st: &State,
    inodes_count: u32,
    first_ino: u32,
    skip: Skip<'_>,
    threads: Threads,
    ctl: &Control,
    read: impl Fn(u32) -> Option<Vec<u8>> + Sync,
) -> ProblemList {
    let end = u64::from(inodes_count) + 1;
    let units = narrow::to_usize(end.div_ceil(UNIT_INODES));
    par_map(
        units,
        threads,
        ctl,
        || (),
        |_, u| {
            st.tick();
            let a = (u as u64 * UNIT_INODES).max(1);
            let z = ((u as u64 + 1) * UNIT_INODES).min(end);
            check_range(st, a, z, first_ino, skip, &read)
        },
    )
    .into_iter()
    .fold(ProblemList::new(), |mut all, l| {
        all.append(l);
        all
    })
}

fn check_range(
    st: &State,
    start: u64,
    end: u64,
    first_ino: u32,
    skip: Skip<'_>,
    read: &impl Fn(u32) -> Option<Vec<u8>>,
) -> ProblemList {
    let mut out = ProblemList::new();
    let mut other = st
        .links_other_from(Ino(narrow::sat32(start)))
        .iter()
        .peekable();
    for i in st.inode_used.iter_set(start, end) {
        let ino = i.get();
        if i == Ino::BAD
            || (ino > ROOT_INO && ino < first_ino)
            || skip.inodes.contains(&ino)
            || st.has_iflag(Ino(ino), iflag::IN_BAD_BLOCK)
        {
            continue;
        }
        // `i_links(ino)`, read in step with the walk.
        while other.next_if(|&&(j, _)| j < i).is_some() {}
        let have = other.next_if(|&&(j, _)| j == i).map_or(1, |&(_, n)| n);
        let mut seen = st.links_seen.get(Ino(ino));
        let refs = st.ea_refs(Ino(ino));
        if refs > 0 {
            // Xattrs keep their values in it: it counts as linked once,
            // whatever entries name it (pass 2 reports those), and the
            // count it keeps of those xattrs must be theirs.
            if let Some(raw) = read(ino) {
                let i = Inode::parse(&raw);
                let stored = xattr::ea_inode_refcount(&raw);
                // Old Lustre-style EA inodes keep no count; they are told
                // by equal ctime and atime.
                if stored != refs && i.ctime != i.atime {
                    out.push(
                        Problem::new(Code::InodeEaInodeRefs)
                            .ino(Ino(ino))
                            .num(stored)
                            .num2(refs),
                    );
                }
            }
            seen = 1;
        } else if seen == 0 {
            // EA_INODE_FL on an inode nothing refers to: the flag goes
            // (e2fsck takes it for a stray one) and the file is
            // reconnected as any other.
            if st.has_iflag(Ino(ino), iflag::EA_INODE) {
                out.push(Problem::new(Code::InodeEaInodeSpurious).ino(Ino(ino)));
            }
            let kind = read(ino).map_or(Unreferenced::Other, |raw| classify(&raw));
            let code = match kind {
                Unreferenced::ZeroLength => Code::InodeUnattachedZero,
                Unreferenced::Other => Code::InodeUnattached,
            };
            out.push(Problem::new(code).ino(Ino(ino)));
            // Left unattached, the count is not worth comparing.
            continue;
        }
        let dir = st.inode_dir.get(i);
        if dir && seen > LINK_MAX {
            seen = 1;
        }
        if seen == have {
            continue;
        }
        if dir && seen > 1 && have == 1 && st.has_iflag(Ino(ino), iflag::HTREE) {
            // Counted 1 once it overflowed, it may now be exact again.
            if skip.repairing {
                out.push(
                    Problem::new(Code::DirLinkOverflowExact)
                        .ino(Ino(ino))
                        .num(u64::from(have))
                        .num2(u64::from(seen)),
                );
            }
            continue;
        }
        out.push(
            Problem::new(Code::InodeLinkCount)
                .ino(Ino(ino))
                .num(u64::from(have))
                .num2(u64::from(seen)),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::{put_le16, put_le32};
    use crate::fs::inode::flags;

    fn raw(mode: u16, blocks: u32, iflags: u32) -> Vec<u8> {
        let mut b = vec![0u8; 256];
        put_le16(&mut b, 0, mode);
        put_le32(&mut b, 0x1C, blocks);
        put_le32(&mut b, 0x20, iflags);
        put_le16(&mut b, 0x80, 32);
        b
    }

    #[test]
    fn counts_and_unattached() {
        let st = State::new(10, 32);
        for ino in [2u32, 11, 12, 13, 14, 15, 16] {
            st.inode_used.set(Ino(ino));
        }
        let mut st = st;
        st.inode_dir.set(Ino(2));
        st.set_i_links(Ino(2), 3);
        st.set_i_links(Ino(11), 1);
        st.set_i_links(Ino(12), 2);
        st.set_i_links(Ino(13), 1);
        st.set_i_links(Ino(14), 1);
        st.set_i_links(Ino(15), 1);
        for _ in 0..3 {
            st.links_seen.incr(Ino(2));
        }
        st.links_seen.incr(Ino(11));
        st.links_seen.incr(Ino(12));
        st.set_iflag(Ino(16), iflag::EA_INODE);
        let p = check(
            &st,
            32,
            11,
            Skip {
                inodes: &[],
                repairing: false,
            },
            Threads(2),
            &Control::default(),
            |ino| {
                Some(match ino {
                    13 => raw(0o100644, 0, 0),
                    14 => raw(0o100644, 8, 0),
                    15 => raw(0o100644, 8, flags::EA_INODE),
                    _ => raw(0o100644, 0, 0),
                })
            },
        );
        let c: Vec<_> = p
            .iter()
            .map(|p| (p.code, p.args().ino.unwrap().get()))
            .collect();
        assert_eq!(
            c,
            vec![
                (Code::InodeLinkCount, 12),
                (Code::InodeUnattachedZero, 13),
                (Code::InodeUnattached, 14),
                // EA_INODE_FL as pass 1 left it counts, not the raw flag.
                (Code::InodeUnattached, 15),
                // A tracked EA inode nothing refers to loses the flag and
                // is reconnected.
                (Code::InodeEaInodeSpurious, 16),
                (Code::InodeUnattachedZero, 16),
            ]
        );
    }

    #[test]
    fn ea_inode_references() {
        let mut st = State::new(10, 32);
        for ino in [12u32, 13, 14] {
            st.inode_used.set(Ino(ino));
            st.set_i_links(Ino(ino), 1);
        }
        st.set_i_links(Ino(14), 2);
        st.ea_inode_refs = vec![(12, 2), (13, 1), (14, 1)];
        // An entry naming an EA inode changes nothing here: it counts once.
        st.links_seen.incr(Ino(13));
        st.links_seen.incr(Ino(13));
        let ea = |refcount: u32| {
            let mut b = raw(0o100600, 8, flags::EA_INODE);
            put_le32(&mut b, 0x24, refcount);
            put_le32(&mut b, 0x08, 0x1234);
            b
        };
        let p = check(
            &st,
            32,
            11,
            Skip {
                inodes: &[],
                repairing: false,
            },
            Threads(2),
            &Control::default(),
            |ino| Some(ea(if ino == 12 { 5 } else { 1 })),
        );
        let c: Vec<_> = p
            .iter()
            .map(|p| {
                (
                    p.code,
                    p.args().ino.unwrap().get(),
                    p.args().num,
                    p.args().num2,
                )
            })
            .collect();
        assert_eq!(
            c,
            vec![
                (Code::InodeEaInodeRefs, 12, Some(5), Some(2)),
                (Code::InodeLinkCount, 14, Some(2), Some(1)),
            ]
        );
    }

    #[test]
    fn dir_nlink_rules() {
        let mut st = State::new(10, 32);
        for ino in [12u32, 13] {
            st.inode_used.set(Ino(ino));
            st.inode_dir.set(Ino(ino));
            st.set_i_links(Ino(ino), 1);
        }
        st.set_iflag(Ino(13), iflag::HTREE);
        for _ in 0..65010 {
            st.links_seen.incr(Ino(12));
        }
        for _ in 0..5 {
            st.links_seen.incr(Ino(13));
        }
        assert!(
            check(
                &st,
                32,
                11,
                Skip {
                    inodes: &[],
                    repairing: false
                },
                Threads(2),
                &Control::default(),
                |_| None
            )
            .is_empty()
        );
    }
}
