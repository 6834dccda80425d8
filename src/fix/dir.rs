//! Pass 2 and 3 fixes of single directory entries: entries that name no
//! usable inode are removed, a wrong file type is rewritten, '/' and NUL
//! in a name become '.', a wrong '..' is pointed at the directory's real
//! parent, the checksum tail of a block that fails only its checksum is
//! recomputed.
//!
//! An entry is found again from what the problem carries (directory,
//! physical block, name, target inode), by walking the block read through
//! the overlay. Removing an entry gives its space to the entry before it
//! (rec_len), or, first in its block, leaves it as an empty record (inode
//! 0), which is how the kernel deletes too. The checksum tail is
//! recomputed by `lostfound::edit_dir_block`. Changes in how many entries
//! name an inode go to [`Links`], like the reconnections.

use super::lostfound::{Links, add, dir_block, edit_dir_block};
use crate::check::problem::{Code, Problem};
use crate::check::state::{State, iflag};
use crate::fs::bytes::{le32, put_le32};
use crate::fs::dir_entry::{HEADER_LEN, put_rec_len};
use crate::fs::dir_entry::{
    file_type_at, inline_parent, inode_at, name_len_at, name_len16_at, rec_len_at,
    set_file_type_at, set_inline_parent, set_inode_at,
};
use crate::fs::num::{Blk, Ino, LBlk};
use crate::fs::superblock::incompat;
use crate::store::overlay::Overlay;
use crate::volume::Fs;

/// Problems fixed by removing the entry.
pub(super) const REMOVE: &[Code] = &[
    Code::DirEntryDeletedInode,
    Code::DirEntryBadInode,
    Code::DirEntryReservedInode,
    Code::DirEntryLinkToRoot,
    // A second name of a directory (e2fsck clears it; the count follows
    // in the next round's check).
    Code::DirEntryLinkToDir,
    Code::DirEntryInodeInBadBlock,
    // Entries of an encrypted directory that the kernel cannot use.
    Code::DirEntryEncryptedShort,
    Code::DirEntryUnencrypted,
    Code::DirEntryPolicyMismatch,
    // A name for an inode xattrs keep their values in.
    Code::DirEntryEaInode,
];

/// Stages the fix of one entry problem (`REMOVE`, `DirEntryFileType`,
/// `DirDotDotWrong`); returns whether it was fixed.
pub(super) fn fix(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    p: &Problem,
    links: &mut Links,
) -> super::Result<bool> {
    let Some(dir) = p.args().ino else {
        return Ok(false);
    };
    let inline = state.has_iflag(dir, iflag::INLINE);
    // An inline directory has no checksum tail.
    if inline && p.code == Code::DirBlockChecksum {
        return Ok(false);
    }
    if p.code == Code::DirDotDotWrong {
        return dotdot(fs, state, overlay, dir, links);
    }
    // An inline directory's '..' is a bare inode number: its file type is
    // not stored but taken from the inode it names, which pass 3's fix of
    // '..' makes a directory (as e2fsck, whose rewrite of it is a no-op).
    if inline && p.args().detail == ".." {
        return Ok(matches!(
            p.code,
            Code::DirEntryFileType | Code::DirEntryFileTypeUnset | Code::DirEntryFileTypeSet
        ));
    }
    if p.code == Code::DirEntryLinkToDir {
        // Found after pass 2 from the subdirectory references, which carry
        // no block: looked for in every block of the directory.
        let Some(child) = p.args().num.and_then(|n| u32::try_from(n).ok()) else {
            return Ok(false);
        };
        return unlink(fs, state, overlay, dir, Ino(child), p.args().detail, links);
    }
    if p.code == Code::DirBlockChecksum {
        // The entries passed every check: only the tail is rewritten
        // (`edit_dir_block` recomputes it over whatever the other fixes of
        // this block staged).
        let Some(pblk) = p.args().blk else {
            return Ok(false);
        };
        return edit_dir_block(fs, state, overlay, dir, pblk, |_| true);
    }
    let Some(key) = entry_key(state, dir, p) else {
        return Ok(false);
    };
    let pblk = p.args().blk;
    if pblk.is_none() && !inline {
        return Ok(false);
    }
    // '.' and '..' are pass 3's (and a later fix's) to rewrite, not remove;
    // only their file type is set here.
    let typed = matches!(
        p.code,
        Code::DirEntryFileType | Code::DirEntryFileTypeUnset | Code::DirEntryFileTypeSet
    );
    if (p.args().detail == "." || p.args().detail == "..") && !typed {
        return Ok(false);
    }
    let filetype = fs.sb.has_incompat(incompat::FILETYPE);
    let name = p.args().detail;
    let code = p.code;
    // Without the feature the type byte is read as the high byte of the
    // name length; where it is set by mistake, the name is the low byte's.
    let low_len = filetype || code == Code::DirEntryFileTypeSet;
    let want_ft = p.args().num2.and_then(|n| u8::try_from(n).ok());
    let apply = |b: &mut [u8]| {
        find(b, key, name, low_len)
            .is_some_and(|(prev, off)| rewrite_entry(b, prev, off, code, name, filetype, want_ft))
    };
    let done = match pblk {
        Some(pblk) if !inline => edit_dir_block(fs, state, overlay, dir, pblk, apply)?,
        _ => edit_inline(fs, overlay, dir, apply)?,
    };
    // Pass 2 counted the root entry among root's links; the others named
    // inodes whose count is not compared (unused or out of range).
    if done && code == Code::DirEntryLinkToRoot {
        add(links, Ino::ROOT, -1);
    }
    Ok(done)
}

/// What tells the entry of `p` apart besides its name: the inode it
/// names (a link to the root carries none: it is the root), or for a
/// wrong file type the type it has now; `None` where the problem is not
/// fixed by editing its entry.
fn entry_key(state: &State, dir: Ino, p: &Problem) -> Option<Key> {
    match p.code {
        Code::DirEntryLinkToRoot => Some(Key::Inode(Ino::ROOT)),
        // In an indexed directory too, as e2fsck: a new name that hashes
        // out of its leaf's range is the next round's htree problem, and
        // the directory is rebuilt then.
        Code::DirEntryIllegalChars => Some(Key::Any),
        Code::DirEntryBadUtf8 if state.has_iflag(dir, iflag::HTREE) => None,
        Code::DirEntryBadUtf8 => Some(Key::Any),
        // The entry's type byte is all that is wrong: its name tells it.
        Code::DirEntryFileTypeSet => Some(Key::Any),
        Code::DirEntryFileType | Code::DirEntryFileTypeUnset => p
            .args()
            .num
            .and_then(|n| u8::try_from(n).ok())
            .map(Key::FileType),
        _ => p
            .args()
            .num
            .and_then(|n| u32::try_from(n).ok())
            .map(|i| Key::Inode(Ino(i))),
    }
}

/// Fixes the entry at `off` of block `b` (`prev`: the entry before it)
/// for problem `code`; `name` is the problem's rendering of its name,
/// `want_ft` the file type it should have. Whether it changed.
fn rewrite_entry(
    b: &mut [u8],
    prev: Option<usize>,
    off: usize,
    code: Code,
    name: &str,
    filetype: bool,
    want_ft: Option<u8>,
) -> bool {
    match code {
        Code::DirEntryFileType | Code::DirEntryFileTypeUnset if filetype => match want_ft {
            Some(ft) => {
                set_file_type_at(b, off, ft);
                true
            }
            None => false,
        },
        // e2fsck's repair: the byte cleared, the name length kept.
        Code::DirEntryFileTypeSet => {
            set_file_type_at(b, off, 0);
            true
        }
        Code::DirEntryIllegalChars => {
            // e2fsck's repair: each '/' or NUL becomes '.'.
            let len = name.len();
            for c in &mut b[off + HEADER_LEN..off + HEADER_LEN + len] {
                if *c == b'/' || *c == 0 {
                    *c = b'.';
                }
            }
            true
        }
        Code::DirEntryBadUtf8 => {
            // e2fsck's repair: from the first byte that does not start
            // a valid character up to a NUL or the end, bytes become '.'.
            // The detail is an escaped rendering: the length is the
            // entry's.
            let len = name_len_at(b, off);
            let n = &mut b[off + HEADER_LEN..off + HEADER_LEN + len];
            let Some(at) = crate::fs::casefold::invalid_at(n) else {
                return false;
            };
            for c in n[at..].iter_mut().take_while(|c| **c != 0) {
                *c = b'.';
            }
            true
        }
        _ if REMOVE.contains(&code) => {
            remove(b, prev, off);
            true
        }
        _ => false,
    }
}

/// Removes the entry `name` naming `ino` from directory `dir` (whichever
/// of its blocks holds it); returns whether one was found.
pub(super) fn unlink(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    dir: Ino,
    ino: Ino,
    name: &str,
    links: &mut Links,
) -> super::Result<bool> {
    let filetype = fs.sb.has_incompat(incompat::FILETYPE);
    let drop_entry = |b: &mut [u8]| match find(b, Key::Inode(ino), name, filetype) {
        Some((prev, off)) => {
            remove(b, prev, off);
            true
        }
        None => false,
    };
    if state.has_iflag(dir, iflag::INLINE) {
        let done = edit_inline(fs, overlay, dir, drop_entry)?;
        if done {
            add(links, ino, -1);
        }
        return Ok(done);
    }
    for (_, pblk) in state.dir_blocks_of(dir) {
        let done = edit_dir_block(fs, state, overlay, dir, pblk, drop_entry)?;
        if done {
            add(links, ino, -1);
            return Ok(true);
        }
    }
    Ok(false)
}

/// Lets `edit` change the entries an inline directory keeps in its inode
/// (after the 4-byte parent number in i_block), then, where none of those
/// changed, those in its system.data attribute (whose hash is redone when
/// it has one), through the overlay with the inode checksum redone;
/// whether `edit` changed something.
fn edit_inline(
    fs: &Fs,
    overlay: &mut Overlay,
    dir: Ino,
    mut edit: impl FnMut(&mut [u8]) -> bool,
) -> super::Result<bool> {
    let mut changed = false;
    crate::volume::edit::edit_inode(fs, overlay, dir, |m| {
        changed = edit(&mut m.i_block_mut()[crate::fs::dir_entry::INLINE_ENTRIES_AT..]);
        if changed {
            return;
        }
        let raw = &mut *m.0;
        let Some(data) = crate::fs::xattr::inline_data(raw) else {
            return;
        };
        let (a, z) = data.value;
        if a >= z || z > raw.len() {
            return;
        }
        changed = edit(&mut raw[a..z]);
        if changed && le32(raw, data.hash_at) != 0 {
            let name = raw[data.name.0..data.name.1].to_vec();
            let h = crate::fs::xattr::entry_hash(&name, &raw[a..z], false);
            put_le32(raw, data.hash_at, h);
        }
    })?;
    Ok(changed)
}

/// Besides its name, what an entry to fix must have.
#[derive(Clone, Copy, Debug)]
enum Key {
    Inode(Ino),
    FileType(u8),
    /// Any used entry (the name alone tells it).
    Any,
}

/// The entry called `name` matching `key` in `b`: (offset of the entry
/// before it, if any; its offset).
fn find(b: &[u8], key: Key, name: &str, filetype: bool) -> Option<(Option<usize>, usize)> {
    let mut off = 0;
    let mut prev = None;
    while off + HEADER_LEN <= b.len() {
        let rec = rec_len_at(b, off, b.len());
        if rec < HEADER_LEN || !rec.is_multiple_of(4) || off + rec > b.len() {
            return None;
        }
        let name_len = if filetype {
            name_len_at(b, off)
        } else {
            name_len16_at(b, off)
        };
        let n = b.get(off + HEADER_LEN..off + HEADER_LEN + name_len)?;
        let hit = match key {
            Key::Inode(i) => inode_at(b, off) == i,
            Key::FileType(t) => {
                filetype && inode_at(b, off) != Ino::NONE && file_type_at(b, off) == t
            }
            Key::Any => inode_at(b, off) != Ino::NONE,
        };
        if hit && crate::check::dirblock::name_str(n) == name {
            return Some((prev, off));
        }
        prev = Some(off);
        off += rec;
    }
    None
}

/// Removes the entry at `off`: merged into the one before, or emptied.
fn remove(b: &mut [u8], prev: Option<usize>, off: usize) {
    match prev {
        Some(p) => {
            let merged = rec_len_at(b, p, b.len()) + rec_len_at(b, off, b.len());
            put_rec_len(b, p, merged);
        }
        None => set_inode_at(b, off, Ino::NONE),
    }
}

/// Points directory `dir`'s '..' at the parent pass 2 found for it.
fn dotdot(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    dir: Ino,
    links: &mut Links,
) -> super::Result<bool> {
    let Some(k) = state.dir_index(dir) else {
        return Ok(false);
    };
    let parent = state.dir_parent.get(k).copied().unwrap_or(Ino::NONE);
    // No parent: the directory is unconnected, and reconnecting it (or
    // not) decides its '..'. (An htree root's dx tail is recomputed by
    // `edit_dir_block`.)
    if parent == Ino::NONE {
        return Ok(false);
    }
    if state.has_iflag(dir, iflag::INLINE) {
        return set_inline_dotdot(fs, overlay, dir, parent, links);
    }
    let Some(pblk) = dir_block(state, dir, LBlk(0)) else {
        return Ok(false);
    };
    set_dotdot(fs, state, overlay, dir, pblk, parent, links)
}

/// Rewrites the '..' of inline directory `dir` (the first 4 bytes of
/// i_block) to `to`, recording the change of links.
pub(super) fn set_inline_dotdot(
    fs: &Fs,
    overlay: &mut Overlay,
    dir: Ino,
    to: Ino,
    links: &mut Links,
) -> super::Result<bool> {
    let mut old = Ino::NONE;
    let done = crate::volume::edit::edit_inode(fs, overlay, dir, |m| {
        let b = m.i_block_mut();
        old = Ino(inline_parent(b));
        set_inline_parent(b, to);
    })?;
    if done {
        if old != Ino::NONE {
            add(links, old, -1);
        }
        add(links, to, 1);
    }
    Ok(done)
}

/// Rewrites the '..' entry (the second record of block 0, `pblk`) of
/// `dir` to `to`, recording the change of links.
pub(super) fn set_dotdot(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    dir: Ino,
    pblk: Blk,
    to: Ino,
    links: &mut Links,
) -> super::Result<bool> {
    let mut old = Ino::NONE;
    let done = edit_dir_block(fs, state, overlay, dir, pblk, |b| {
        let first = rec_len_at(b, 0, b.len());
        if first < HEADER_LEN || first + HEADER_LEN > b.len() || b.get(first + 8) != Some(&b'.') {
            return false;
        }
        old = inode_at(b, first);
        set_inode_at(b, first, to);
        true
    })?;
    if done {
        if old != Ino::NONE {
            add(links, old, -1);
        }
        add(links, to, 1);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::put_le16;
    use crate::fs::bytes::{le16, le32, put_le32};

    fn block() -> Vec<u8> {
        let mut b = vec![0u8; 64];
        for (off, ino, rec, name) in [
            (0usize, 2u32, 12u16, &b"."[..]),
            (12, 2, 12, b".."),
            (24, 40, 16, b"gone"),
            (40, 12, 24, b"kept"),
        ] {
            put_le32(&mut b, off, ino);
            put_le16(&mut b, off + 4, rec);
            b[off + 6] = name.len() as u8;
            b[off + 8..off + 8 + name.len()].copy_from_slice(name);
        }
        b
    }

    #[test]
    fn removal_merges_into_the_previous_entry() {
        let mut b = block();
        let (prev, off) = find(&b, Key::Inode(Ino(40)), "gone", true).unwrap();
        assert_eq!((prev, off), (Some(12), 24));
        remove(&mut b, prev, off);
        assert_eq!(le16(&b, 16), 28);
        assert!(find(&b, Key::Inode(Ino(40)), "gone", true).is_none());
        assert_eq!(
            find(&b, Key::Inode(Ino(12)), "kept", true),
            Some((Some(12), 40))
        );
    }

    #[test]
    fn removal_of_a_first_entry_empties_it() {
        let mut b = block();
        remove(&mut b, None, 0);
        assert_eq!(le32(&b, 0), 0);
        assert_eq!(le16(&b, 4), 12);
    }
}
