//! Where e2fsck -y starts over. Some of its fixes change what its pass 1
//! read (a cleared bad-blocks inode, an inode cleared for too many illegal
//! blocks, a group's never-used mark lowered so that pass 1 reads the
//! inodes past it): it then checks the whole file system again from the
//! beginning, and its report shows the problems up to that point, the
//! restart, then the new check's. A repair does the same: the problems
//! before the restart point are fixed alone, and a new check of the result
//! goes on from there (`session.rs`).

use crate::check::Report;
use crate::check::problem::{Code, Pass, Problem, ProblemList};
use crate::fs::num::Ino;

/// The problems e2fsck's run sees before it restarts.
#[derive(Debug)]
pub struct Cut {
    /// Parallel to the report's problems: shown (and fixed) before the
    /// restart.
    pub keep: Vec<bool>,
    /// The problem whose fix makes e2fsck start over.
    pub trigger: usize,
    /// The last pass whose header e2fsck prints before it starts over.
    pub pass: u8,
}

/// When e2fsck starts over after fixing a problem of code `c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum When {
    /// At once: pass 1 stops there.
    Now,
    /// Once pass 2 has walked every directory block.
    AfterPass2,
}

fn when(c: Code) -> Option<When> {
    match c {
        Code::BadBlocksInodeInBadBlock | Code::InodeTooManyIllegalBlocks => Some(When::Now),
        Code::DirEntryUnusedArea | Code::DirEntryUninitGroup => Some(When::AfterPass2),
        _ => None,
    }
}

/// The problems of `rep` in the order the report prints them (pass by
/// pass), with their indices.
fn in_order(rep: &Report) -> Vec<(usize, Code, Pass)> {
    rep.problems
        .in_print_order()
        .map(|(k, p)| (k, p.code, p.code.spec().pass))
        .collect()
}

/// Where e2fsck -y, answering yes to everything, would start over on the
/// file system `rep` describes: the problems its run shows up to there
/// (a report of its own) and the cut over them; None when it would not.
/// `kept_type` is the file type problem of an entry naming an unused
/// inode that e2fsck keeps (`check::kept_unused_entry_type`).
pub fn cut(rep: &Report, kept_type: impl Fn(&Problem) -> Option<Problem>) -> Option<(Report, Cut)> {
    let order = in_order(rep);
    // The resize and journal inodes are judged before pass 1 and made
    // anew: what pass 1 says of their blocks restarts nothing.
    let special = |k: usize| {
        rep.problems
            .get(k)
            .and_then(|p| p.args().ino)
            .is_some_and(|i| i == Ino::RESIZE || i == Ino::JOURNAL)
    };
    let (at, when) = order
        .iter()
        .enumerate()
        .find_map(|(i, &(k, c, _))| when(c).filter(|_| !special(k)).map(|w| (i, w)))?;
    let trigger = order[at].0;
    match when {
        When::Now => {
            let mut keep = vec![false; rep.problems.len()];
            for &(k, _, _) in &order[..=at] {
                keep[k] = true;
            }
            let cut = Cut {
                keep,
                trigger,
                pass: 1,
            };
            Some((rep.with_problems(rep.problems.clone()), cut))
        }
        When::AfterPass2 => {
            // Once it knows it will start over, e2fsck's pass 2 no longer
            // clears entries naming unused inodes (the new check reads the
            // inodes its pass 1 skipped): it checks their file type.
            let later: Vec<usize> = order[at + 1..]
                .iter()
                .filter(|&&(_, c, _)| c == Code::DirEntryDeletedInode)
                .map(|&(k, _, _)| k)
                .collect();
            let mut list = ProblemList::new();
            let mut keep = Vec::new();
            let mut new_trigger = 0;
            for (k, p) in rep.problems.iter().enumerate() {
                if later.contains(&k) {
                    if let Some(q) = kept_type(&p) {
                        list.push(q);
                        keep.push(true);
                    }
                    continue;
                }
                if k == trigger {
                    new_trigger = keep.len();
                }
                keep.push(p.spec().pass <= Pass::P2);
                list.push(p);
            }
            let cut = Cut {
                keep,
                trigger: new_trigger,
                pass: 2,
            };
            Some((rep.with_problems(list), cut))
        }
    }
}
