//! Pass 3: directory connectivity.
//!
//! Checks that the root directory exists, that every directory can be
//! reached from it by following the parent each one got in pass 2 (the
//! first entry naming it), and that each directory's '..' names that
//! parent. Notes whether /lost+found exists and is a directory.
//!
//! Collects nothing for later passes.
//!
//! Relies on pass 1 (`inode_used`, `inode_dir`, `dirs`) and pass 2
//! (`dir_parent`, `dir_dotdot`, `lost_found`).
//!
//! The walk up from a directory stops at the first directory already
//! proven connected (or already visited: a loop of directories whose
//! parents only name each other is then not reported on its own, as with
//! e2fsck, but its members still show up in pass 4 or as unconnected when
//! something in the chain has no parent). Each directory is visited once,
//! so the pass is linear in the number of directories.

use super::problem::{Code, Problem};
use super::state::{State, iflag};
use crate::error::Result;
use crate::fs::num::Ino;
use crate::volume::Fs;

/// Directories walked between two `State::tick`s.
const PER_TICK: usize = 4096;

/// `repairing`: only a repair looks for /lost+found (e2fsck -n leaves it
/// alone: it would reconnect nothing there).
pub fn run(_fs: &Fs, state: &mut State, repairing: bool) -> Result<Vec<Problem>> {
    Ok(check(state, repairing))
}

pub fn check(st: &State, repairing: bool) -> Vec<Problem> {
    let mut out = Vec::new();
    if !st.inode_used.get(Ino::ROOT) {
        out.push(Problem::new(Code::RootMissing));
        if !repairing {
            // Declined, e2fsck cannot go on without a root (it aborts).
            out.push(Problem::new(Code::StoppedWithoutRoot));
            return out;
        }
    } else if !st.inode_dir.get(Ino::ROOT) && !repairing {
        // A root that is no directory, which -n declined to clear in pass
        // 1: e2fsck gives up here without a question.
        out.push(Problem::new(Code::StoppedWithoutRoot));
        return out;
    }
    let n = st.dirs.len();
    let parent = |i: usize| st.dir_parent.get(i).copied().unwrap_or_default();
    let dotdot = |i: usize| st.dir_dotdot.get(i).copied().unwrap_or_default();
    let mut done = vec![false; n];
    if let Some(r) = st.dir_index(Ino::ROOT) {
        done[r] = true;
    }
    for i in 0..n {
        // With `--max-memory` the lists walked are in the scratch file.
        if i % PER_TICK == 0 {
            st.tick();
        }
        let ino = st.dirs[i];
        if !st.inode_dir.get(ino) {
            continue;
        }
        let mut cur = i;
        // Every step marks a new directory, so this ends within n steps.
        while !done[cur] {
            done[cur] = true;
            let p = parent(cur);
            match st.dir_index(p).filter(|_| p != Ino::NONE) {
                Some(pi) => cur = pi,
                None => {
                    out.push(
                        Problem::new(Code::DirUnconnected)
                            .ino(st.dirs[cur])
                            .num(u64::from(dotdot(cur).0)),
                    );
                    break;
                }
            }
        }
        if dotdot(i) != parent(i) {
            out.push(
                Problem::new(Code::DirDotDotWrong)
                    .ino(ino)
                    .num(u64::from(ino.0))
                    .num2(u64::from(dotdot(i).0))
                    .detail(parent(i).to_string()),
            );
        }
    }
    if repairing {
        lost_found(st, &mut out);
    }
    out
}

fn lost_found(st: &State, out: &mut Vec<Problem>) {
    if st.lost_found == Ino::NONE {
        out.push(Problem::new(Code::LostFoundMissing));
    } else if !st.inode_dir.get(st.lost_found) {
        out.push(Problem::new(Code::LostFoundNotDir).ino(st.lost_found));
    } else if st.has_iflag(st.lost_found, iflag::ENCRYPTED) {
        // Names put there by the repair would have to be encrypted.
        out.push(Problem::new(Code::LostFoundEncrypted).ino(st.lost_found));
    } else if st.has_iflag(st.lost_found, iflag::INLINE) {
        // The repair adds entries by block (as e2fsck's link does): an
        // inline directory has none to add them to.
        out.push(Problem::new(Code::LostFoundInlineData).ino(st.lost_found));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(dirs: &[(u32, u32, u32)]) -> State {
        let mut st = State::new(100, 64);
        for &(d, p, dd) in dirs {
            st.inode_used.set(Ino(d));
            st.inode_dir.set(Ino(d));
            st.dirs.push(Ino(d));
            st.dir_parent.push(Ino(p));
            st.dir_dotdot.push(Ino(dd));
        }
        st.lost_found = Ino(11);
        st
    }

    fn codes(p: &[Problem]) -> Vec<(Code, Option<u32>)> {
        p.iter()
            .map(|p| (p.code, p.args().ino.map(Ino::get)))
            .collect()
    }

    #[test]
    fn healthy_tree() {
        let st = state(&[(2, 2, 2), (11, 2, 2), (12, 2, 2), (13, 12, 12)]);
        assert!(check(&st, true).is_empty());
    }

    #[test]
    fn unconnected_and_dotdot() {
        // 13's parent chain ends at 14, which nothing names.
        let st = state(&[(2, 2, 2), (11, 2, 2), (13, 14, 14), (14, 0, 2), (15, 2, 12)]);
        let c = codes(&check(&st, true));
        assert!(c.contains(&(Code::DirUnconnected, Some(14))));
        assert!(!c.contains(&(Code::DirUnconnected, Some(13))));
        assert!(c.contains(&(Code::DirDotDotWrong, Some(14))));
        assert!(c.contains(&(Code::DirDotDotWrong, Some(15))));
    }

    #[test]
    fn root_and_lost_found() {
        let mut st = state(&[(12, 0, 0)]);
        st.lost_found = Ino::NONE;
        let c = codes(&check(&st, true));
        assert!(c.contains(&(Code::RootMissing, None)));
        assert!(c.contains(&(Code::LostFoundMissing, None)));
        st.lost_found = Ino(20);
        assert!(codes(&check(&st, true)).contains(&(Code::LostFoundNotDir, Some(20))));
        assert!(
            check(&st, false)
                .iter()
                .all(|p| p.code != Code::LostFoundNotDir)
        );
    }

    #[test]
    fn parent_loop_terminates() {
        let st = state(&[(2, 2, 2), (11, 2, 2), (12, 13, 13), (13, 12, 12)]);
        let _ = check(&st, true);
    }
}
