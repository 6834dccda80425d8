//! Path names of directories, for messages that name a directory by its
//! path as e2fsck does ("Entry 'x' in /doc/examples (19)").
//!
//! e2fsck finds a path when it prints a message: from the directory it
//! reads '..', then in that parent the entry naming the directory, and so
//! on up to the root. pfsck has both facts from pass 2 (each directory's
//! '..' and the first entry naming it), so the path is put together from
//! them with no further read, following e2fsck's rules where a step
//! fails: `...` past a directory with no '..' (or past 32 levels, as in a
//! loop), `???` for a name its parent does not hold, `<N>` for an inode
//! that is not a directory.

use super::state::State;
use crate::engine::ScratchList;
use crate::fs::num::Ino;
use crate::narrow;

/// How e2fsck names the reserved inodes when no directory is known.
const SPECIAL: [&str; 11] = [
    "<The NULL inode>",
    "<The bad blocks inode>",
    "/",
    "<The user quota inode>",
    "<The group quota inode>",
    "<The boot loader inode>",
    "<The undelete directory inode>",
    "<The group descriptor inode>",
    "<The journal inode>",
    "<Reserved inode 9>",
    "<Reserved inode 10>",
];

/// How deep e2fsck follows '..' before giving up.
const MAX_DEPTH: i32 = 32;
const ROOT_INO: Ino = Ino(2);

/// Each directory's '..' and its name in that directory, as pass 2 found
/// them.
///
/// With `--max-memory` the lists live in the scratch file.
#[derive(Clone, Debug, Default)]
pub struct DirTree {
    /// Directories, sorted; the other lists are parallel.
    dirs: ScratchList<Ino>,
    dotdot: ScratchList<Ino>,
    /// The directory holding the first entry naming each directory.
    parent: ScratchList<Ino>,
    /// End of each directory's name (in `parent`) in `names` (the start is
    /// the previous end).
    ends: ScratchList<u32>,
    names: ScratchList<u8>,
}

impl DirTree {
    /// The tree of `state` after pass 2: `ends[k]`, the end in `names` of
    /// the name of the entry that made `state.dirs[k]`'s parent
    /// (`dir_parent`) its parent (its start, the previous end).
    pub fn with_names(state: &State, mut ends: Vec<u32>, mut names: Vec<u8>) -> DirTree {
        names.shrink_to_fit();
        let n = state.dirs.len();
        let mut dotdot: Vec<Ino> = state.dir_dotdot.to_vec();
        let mut parent: Vec<Ino> = state.dir_parent.to_vec();
        dotdot.resize(n, Ino(0));
        parent.resize(n, Ino(0));
        ends.resize(n, narrow::sat32(names.len()));
        let spill = state.spill.as_ref();
        DirTree {
            dirs: ScratchList::settle(state.dirs.to_vec(), spill),
            dotdot: ScratchList::settle(dotdot, spill),
            parent: ScratchList::settle(parent, spill),
            ends: ScratchList::settle(ends, spill),
            names: ScratchList::settle(names, spill),
        }
    }

    fn index(&self, ino: Ino) -> Option<usize> {
        self.dirs.binary_search(&ino).ok()
    }

    /// The path of directory `dir`, as e2fsck prints it (escaped as a
    /// name is).
    pub fn path(&self, dir: Ino) -> String {
        self.pathname(dir, Ino(0))
    }

    /// The path of `ino` as named in directory `dir` (0: of `dir`
    /// itself), as e2fsck prints it: with no directory, a reserved inode
    /// by its role. Only directories' names are known, so a file's is
    /// `???`.
    pub fn pathname(&self, dir: Ino, ino: Ino) -> String {
        if dir == Ino(0)
            && let Some(name) = SPECIAL.get(ino.get() as usize)
        {
            return name.to_string();
        }
        let ino = if dir == ino { Ino(0) } else { ino };
        super::problem::escape_name(&self.resolve(dir, ino, MAX_DEPTH))
    }

    /// The path of the entry `name` in directory `dir`, as e2fsck prints
    /// it.
    pub fn path_of_entry(&self, dir: Ino, name: &[u8]) -> String {
        let parent = self.resolve(dir, Ino(0), MAX_DEPTH);
        let mut out = if parent.len() > 1 { parent } else { Vec::new() };
        out.push(b'/');
        out.extend_from_slice(name);
        super::problem::escape_name(&out)
    }

    /// The name of `ino` (0: of `dir` itself) under `dir`'s path.
    fn resolve(&self, dir: Ino, ino: Ino, depth: i32) -> Vec<u8> {
        if dir == ino {
            return if dir == ROOT_INO {
                b"/".to_vec()
            } else {
                b".".to_vec()
            };
        }
        if dir == Ino(0) || depth < 0 {
            return b"...".to_vec();
        }
        let Some(k) = self.index(dir) else {
            let s = if ino != Ino(0) {
                format!("<{dir}>/<{ino}>")
            } else {
                format!("<{dir}>")
            };
            return s.into_bytes();
        };
        let parent = self.resolve(self.dotdot[k], dir, depth - 1);
        if ino == Ino(0) {
            return parent;
        }
        let name = self.index(ino).and_then(|j| {
            let start = if j == 0 { 0 } else { self.ends[j - 1] as usize };
            let end = self.ends[j] as usize;
            // The first entry naming it is the one e2fsck finds in `dir`
            // if it is there.
            (self.parent[j] == dir && end > start).then(|| &self.names[start..end])
        });
        // A one-character parent ("/" or ".") is left out.
        let mut out = if parent.len() > 1 { parent } else { Vec::new() };
        out.push(b'/');
        out.extend_from_slice(name.unwrap_or(b"???"));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (directory, its '..', the directory naming it first, that name).
    fn tree(rows: &[(u32, u32, u32, &str)]) -> DirTree {
        let mut t = DirTree::default();
        for &(d, dd, p, n) in rows {
            t.dirs.push(Ino(d));
            t.dotdot.push(Ino(dd));
            t.parent.push(Ino(p));
            t.names.vec_mut().extend_from_slice(n.as_bytes());
            t.ends.push(t.names.len() as u32);
        }
        t
    }

    #[test]
    fn paths_follow_e2fscks_rules() {
        let t = tree(&[
            (2, 2, 2, ""),
            (12, 2, 2, "doc"),
            (13, 12, 12, "examples"),
            (14, 0, 0, ""),
            (15, 14, 14, "below"),
            (16, 12, 13, "elsewhere"),
            (17, 18, 18, "a"),
            (18, 17, 17, "b"),
            (19, 0, 2, "lost+found"),
        ]);
        assert_eq!(t.path(Ino(2)), "/");
        assert_eq!(t.path(Ino(12)), "/doc");
        assert_eq!(t.path(Ino(13)), "/doc/examples");
        // No '..': e2fsck cannot go up.
        assert_eq!(t.path(Ino(14)), "...");
        assert_eq!(t.path(Ino(15)), ".../below");
        // Its '..' does not name it.
        assert_eq!(t.path(Ino(16)), "/doc/???");
        // Not a directory.
        assert_eq!(t.path(Ino(40)), "<40>");
        assert_eq!(t.pathname(Ino(0), Ino(0)), "<The NULL inode>");
        assert_eq!(t.pathname(Ino(0), Ino(18)), "...");
        assert_eq!(t.pathname(Ino(12), Ino(13)), "/doc/examples");
        assert_eq!(t.pathname(Ino(12), Ino(40)), "/doc/???");
        // Named by the root, though its own '..' is lost.
        assert_eq!(t.pathname(Ino(2), Ino(19)), "/lost+found");
        // A loop ends after 32 levels.
        assert!(t.path(Ino(17)).starts_with(".../"), "{}", t.path(Ino(17)));
    }
}
