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
//!
//! Where the disk says otherwise than the tree, e2fsck's reading of it is
//! followed: a directory's '..' is the last entry so named (a second
//! '..' further on wins), a directory whose block the library refuses
//! (checksum, broken record lengths) makes the whole path `???` (until
//! pass 2 rewrites it, on a repair), and a '..' naming a directory the
//! check does not hold (a root inode freed with its blocks intact) is read
//! from the disk: its first blocks, once, after pass 2.

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

/// Each directory's '..' and its name in that directory, as pass 2 found
/// them.
///
/// With `--max-memory` the lists live in the scratch file.
#[derive(Clone, Debug, Default)]
pub struct DirTree {
    /// Directories, sorted; the other lists are parallel.
    dirs: ScratchList<Ino>,
    /// Where each run of inode numbers starts in `dirs`.
    buckets: super::state::DirBuckets,
    dotdot: ScratchList<Ino>,
    /// The directory holding the first entry naming each directory.
    parent: ScratchList<Ino>,
    /// End of each directory's name (in `parent`) in `names` (the start is
    /// the previous end).
    ends: ScratchList<u32>,
    names: ScratchList<u8>,
    /// (directory, its last entry named '..') where that is not the
    /// second entry; sorted, one a directory.
    later_dotdot: Vec<(Ino, Ino)>,
    /// (directory, inode) of entries ahead of the later '..': found under
    /// the first; sorted.
    before_later: Vec<(Ino, Ino)>,
    /// Directories e2fsck's library will not read; sorted.
    unreadable: Vec<Ino>,
    /// Are they still unread after pass 2 (a check that rewrites
    /// nothing)?
    unreadable_later: bool,
    /// Directories outside `dirs` that a '..' names, as the disk holds
    /// them; sorted.
    disk: Vec<DiskDir>,
}

/// A directory the check has not linked, read for its names only.
#[derive(Clone, Debug, Default)]
struct DiskDir {
    ino: Ino,
    dotdot: Ino,
    /// (inode, name) of its entries naming the directories of the tree.
    names: Vec<(Ino, Vec<u8>)>,
}

/// Directories outside the tree read from the disk at most: e2fsck reads
/// each on every message; a bound keeps a tree of loops cheap.
const MAX_DISK_DIRS: usize = 64;
/// Blocks read of each such directory.
const DISK_DIR_BLOCKS: usize = 12;

impl DirTree {
    /// The tree of `state` after pass 2: `ends[k]`, the end in `names` of
    /// the name of the entry that made `state.dirs[k]`'s parent
    /// (`dir_parent`) its parent (its start, the previous end).
    pub fn with_names(state: &State, mut ends: Vec<u32>, mut names: Vec<u8>) -> DirTree {
        names.shrink_to_fit();
        let n = state.dirs.len();
        let mut dotdot: Vec<Ino> = state.dir_dotdot.to_vec();
        let mut parent: Vec<Ino> = state.dir_parent.to_vec();
        dotdot.resize(n, Ino::NONE);
        parent.resize(n, Ino::NONE);
        ends.resize(n, narrow::sat32(names.len()));
        let spill = state.spill.as_ref();
        DirTree {
            buckets: super::state::DirBuckets::new(&state.dirs),
            dirs: ScratchList::settle(state.dirs.to_vec(), spill),
            dotdot: ScratchList::settle(dotdot, spill),
            parent: ScratchList::settle(parent, spill),
            ends: ScratchList::settle(ends, spill),
            names: ScratchList::settle(names, spill),
            ..DirTree::default()
        }
    }

    /// Adds what pass 2 saw that e2fsck reads from the disk as it prints:
    /// later '..' entries (in block order, the last wins), directories it
    /// cannot read (`repairing`: only until pass 2 has rewritten them),
    /// and the directories outside the tree that a '..' names.
    pub fn add_disk_facts(
        &mut self,
        fs: &crate::volume::Fs,
        later_dotdots: Vec<(Ino, Ino)>,
        mut before_later: Vec<(Ino, Ino)>,
        mut unreadable: Vec<Ino>,
        repairing: bool,
    ) {
        let mut later = later_dotdots;
        // Stable: the last of a directory's entries stays last.
        later.sort_by_key(|&(d, _)| d);
        later.reverse();
        later.dedup_by_key(|&mut (d, _)| d);
        later.reverse();
        self.later_dotdot = later;
        before_later.sort_unstable();
        before_later.dedup();
        self.before_later = before_later;
        unreadable.sort_unstable();
        unreadable.dedup();
        self.unreadable = unreadable;
        self.unreadable_later = !repairing;
        self.read_disk_dirs(fs);
    }

    /// Reads the directories that a '..' names but the tree lacks, and
    /// those theirs name, up to `MAX_DISK_DIRS`.
    fn read_disk_dirs(&mut self, fs: &crate::volume::Fs) {
        let mut want: Vec<Ino> = self
            .dotdot
            .iter()
            .copied()
            .chain(self.later_dotdot.iter().map(|&(_, p)| p))
            .filter(|&p| p != Ino::NONE && self.index(p).is_none())
            .collect();
        want.sort_unstable();
        want.dedup();
        let mut seen: Vec<Ino> = Vec::new();
        while let Some(ino) = want.pop() {
            if seen.len() >= MAX_DISK_DIRS {
                break;
            }
            if seen.contains(&ino) {
                continue;
            }
            seen.push(ino);
            let Some(d) = read_disk_dir(fs, ino, |i| self.index(i).is_some()) else {
                continue;
            };
            if d.dotdot != Ino::NONE && self.index(d.dotdot).is_none() {
                want.push(d.dotdot);
            }
            self.disk.push(d);
        }
        self.disk.sort_by_key(|d| d.ino);
    }

    fn disk_dir(&self, ino: Ino) -> Option<&DiskDir> {
        self.disk
            .binary_search_by_key(&ino, |d| d.ino)
            .ok()
            .map(|k| &self.disk[k])
    }

    /// `dir`'s '..' as e2fsck finds it looking for `ino` there.
    fn dotdot_of(&self, k: usize, dir: Ino, ino: Ino) -> Ino {
        match self.later_dotdot.binary_search_by_key(&dir, |&(d, _)| d) {
            Ok(j) if self.before_later.binary_search(&(dir, ino)).is_err() => {
                self.later_dotdot[j].1
            }
            _ => self.dotdot[k],
        }
    }

    /// The path of `ino` in directory `dir` as a message of `pass`
    /// prints it: a directory e2fsck cannot read yet makes it `???`.
    pub fn pathname_in(&self, pass: super::problem::Pass, dir: Ino, ino: Ino) -> String {
        let early = pass.number() <= 2;
        if dir == Ino::NONE
            && let Some(name) = SPECIAL.get(ino.index())
        {
            return name.to_string();
        }
        let ino = if dir == ino { Ino::NONE } else { ino };
        let unread =
            |d: Ino| (early || self.unreadable_later) && self.unreadable.binary_search(&d).is_ok();
        match self.resolve_with(dir, ino, MAX_DEPTH, &unread) {
            Some(p) => super::problem::escape_name(&p),
            None => "???".to_string(),
        }
    }

    fn index(&self, ino: Ino) -> Option<usize> {
        self.buckets.find(&self.dirs, ino)
    }

    /// The path of directory `dir`, as e2fsck prints it (escaped as a
    /// name is).
    pub fn path(&self, dir: Ino) -> String {
        self.pathname(dir, Ino::NONE)
    }

    /// The path of `ino` as named in directory `dir` (0: of `dir`
    /// itself), as e2fsck prints it: with no directory, a reserved inode
    /// by its role. Only directories' names are known, so a file's is
    /// `???`.
    pub fn pathname(&self, dir: Ino, ino: Ino) -> String {
        if dir == Ino::NONE
            && let Some(name) = SPECIAL.get(ino.index())
        {
            return name.to_string();
        }
        let ino = if dir == ino { Ino::NONE } else { ino };
        super::problem::escape_name(&self.resolve(dir, ino, MAX_DEPTH))
    }

    fn resolve(&self, dir: Ino, ino: Ino, depth: i32) -> Vec<u8> {
        self.resolve_with(dir, ino, depth, &|_| false)
            .unwrap_or_else(|| b"???".to_vec())
    }

    /// The path of the entry `name` in directory `dir`, as e2fsck prints
    /// it.
    pub fn path_of_entry(&self, dir: Ino, name: &[u8]) -> String {
        let parent = self.resolve(dir, Ino::NONE, MAX_DEPTH);
        let mut out = if parent.len() > 1 { parent } else { Vec::new() };
        out.push(b'/');
        out.extend_from_slice(name);
        super::problem::escape_name(&out)
    }

    /// The name of `ino` (0: of `dir` itself) under `dir`'s path; None
    /// where e2fsck's library fails to read a directory on the way.
    fn resolve_with(
        &self,
        dir: Ino,
        ino: Ino,
        depth: i32,
        unread: &dyn Fn(Ino) -> bool,
    ) -> Option<Vec<u8>> {
        if dir == ino {
            return Some(if dir == Ino::ROOT {
                b"/".to_vec()
            } else {
                b".".to_vec()
            });
        }
        if dir == Ino::NONE || depth < 0 {
            return Some(b"...".to_vec());
        }
        let (dotdot, name): (Ino, Option<&[u8]>) = match self.index(dir) {
            Some(_) if unread(dir) => return None,
            Some(k) => {
                let name = self.index(ino).and_then(|j| {
                    let start = if j == 0 { 0 } else { self.ends[j - 1] as usize };
                    let end = self.ends[j] as usize;
                    // The first entry naming it is the one e2fsck finds in
                    // `dir` if it is there.
                    (self.parent[j] == dir && end > start).then(|| &self.names[start..end])
                });
                (self.dotdot_of(k, dir, ino), name)
            }
            None => match self.disk_dir(dir) {
                Some(d) => (
                    d.dotdot,
                    d.names
                        .iter()
                        .find(|(i, _)| *i == ino)
                        .map(|(_, n)| n.as_slice()),
                ),
                None => {
                    let s = if ino != Ino::NONE {
                        format!("<{dir}>/<{ino}>")
                    } else {
                        format!("<{dir}>")
                    };
                    return Some(s.into_bytes());
                }
            },
        };
        let parent = self.resolve_with(dotdot, dir, depth - 1, unread)?;
        if ino == Ino::NONE {
            return Some(parent);
        }
        // A one-character parent ("/" or ".") is left out.
        let mut out = if parent.len() > 1 { parent } else { Vec::new() };
        out.push(b'/');
        out.extend_from_slice(name.unwrap_or(b"???"));
        Some(out)
    }
}

/// Directory `ino` as the disk holds it, if its inode says it is one:
/// its last '..' and the entries that name directories of the tree
/// (`known`), from its first blocks (direct pointers, or the extents in
/// the inode).
fn read_disk_dir(fs: &crate::volume::Fs, ino: Ino, known: impl Fn(Ino) -> bool) -> Option<DiskDir> {
    use crate::fs::dir_entry::{HEADER_LEN, inode_at, name_len_at, rec_len_at};
    use crate::fs::inode::Inode;
    let raw = fs.read_inode_raw(ino).ok()?;
    let inode = Inode::parse(&raw);
    if !inode.is_dir() || inode.has_flag(crate::fs::inode::flags::INLINE_DATA) {
        return None;
    }
    let bs = fs.geo.block_len();
    let mut blocks: Vec<u64> = Vec::new();
    if inode.has_flag(crate::fs::inode::flags::EXTENTS) {
        use crate::fs::extent::{parse_header, parse_leaf};
        let h = parse_header(&inode.block);
        if h.magic != 0xF30A || h.depth != 0 {
            return None;
        }
        for e in 0..usize::from(h.entries).min(4) {
            let x = parse_leaf(&inode.block, e);
            let room = DISK_DIR_BLOCKS.saturating_sub(blocks.len());
            blocks.extend((0..u64::from(x.len)).map(|i| x.pblk + i).take(room));
        }
    } else {
        blocks.extend(
            (0..DISK_DIR_BLOCKS)
                .map(|i| u64::from(inode.block_ptr(i)))
                .take_while(|&b| b != 0),
        );
    }
    let total = fs.geo.blocks_count;
    let mut d = DiskDir {
        ino,
        ..DiskDir::default()
    };
    let mut buf = vec![0u8; bs];
    for b in blocks.into_iter().take(DISK_DIR_BLOCKS) {
        if b == 0 || b >= total || fs.read_blocks(b, &mut buf).is_err() {
            break;
        }
        let mut off = 0;
        while off + HEADER_LEN <= bs {
            let rl = rec_len_at(&buf, off, bs);
            let nl = name_len_at(&buf, off);
            if rl < HEADER_LEN || !rl.is_multiple_of(4) || rl > bs - off || nl + HEADER_LEN > rl {
                break;
            }
            let child = inode_at(&buf, off);
            let name = &buf[off + HEADER_LEN..off + HEADER_LEN + nl];
            if child != Ino::NONE {
                if name == b".." {
                    d.dotdot = child;
                } else if known(child) && !d.names.iter().any(|(i, _)| *i == child) {
                    d.names.push((child, name.to_vec()));
                }
            }
            off += rl;
        }
    }
    Some(d)
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
        assert_eq!(t.pathname(Ino::NONE, Ino::NONE), "<The NULL inode>");
        assert_eq!(t.pathname(Ino::NONE, Ino(18)), "...");
        assert_eq!(t.pathname(Ino(12), Ino(13)), "/doc/examples");
        assert_eq!(t.pathname(Ino(12), Ino(40)), "/doc/???");
        // Named by the root, though its own '..' is lost.
        assert_eq!(t.pathname(Ino(2), Ino(19)), "/lost+found");
        // A loop ends after 32 levels.
        assert!(t.path(Ino(17)).starts_with(".../"), "{}", t.path(Ino(17)));
    }
}
