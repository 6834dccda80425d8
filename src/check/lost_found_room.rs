//! Whether /lost+found has room for the names a repair adds to it. e2fsck
//! asks to expand it (0x030002) each time a `#ino` name does not fit, right
//! after the question that connects the inode; the repair
//! (`fix::lostfound`) places names the same way (`dir_entry::insert_entry`,
//! a new block when none has room), so the check replays that placement on
//! copies of the blocks. Only a repair connects anything: -n never asks.

use super::problem::{Code, Problem};
use super::problem_list::ProblemList;
use super::state::{State, iflag};
use crate::fs::dir_entry::{self, TAIL_LEN, has_tail, insert_entry, put_name, set_inode_at};
use crate::fs::num::Ino;
use crate::fs::superblock::incompat;
use crate::volume::Fs;

/// The entry parts of /lost+found's blocks as the repair will fill them.
pub struct Room {
    blocks: Vec<Vec<u8>>,
    /// What a new block holds before its first entry.
    empty: Vec<u8>,
    filetype: bool,
}

impl Room {
    /// /lost+found as the check found it; a new one of one block where
    /// the repair makes one (none, or one it replaces); None where the
    /// repair adds nothing to it (indexed, or unreadable), or where the
    /// check is not `repairing`.
    pub fn new(fs: &Fs, st: &State, repairing: bool) -> Option<Room> {
        if !repairing {
            return None;
        }
        let bs = fs.block_size();
        let csum = fs.metadata_csum();
        let entries = |mut b: Vec<u8>| {
            if csum && has_tail(&b) {
                b.truncate(bs - TAIL_LEN);
            }
            b
        };
        let lf = st.lost_found;
        let replaced = lf == Ino::NONE
            || !st.inode_dir.get(lf)
            || st.has_iflag(lf, iflag::ENCRYPTED | iflag::INLINE);
        let blocks = if replaced {
            let b = dir_entry::dots_block(bs, 0, Ino::ROOT.get(), None, csum.then_some(0));
            vec![entries(b)]
        } else if st.has_iflag(lf, iflag::HTREE | iflag::BAD) {
            return None;
        } else {
            let mut out = Vec::new();
            for (_, pblk) in st.dir_blocks_of(lf) {
                out.push(entries(fs.read_block(pblk.get()).ok()?));
            }
            out
        };
        Some(Room {
            blocks,
            empty: entries(dir_entry::empty_block(bs, csum.then_some(0))),
            filetype: fs.sb.has_incompat(incompat::FILETYPE),
        })
    }

    /// Places `#ino`; false when lost+found had to grow by a block for it.
    fn place(&mut self, ino: Ino) -> bool {
        let name = format!("#{ino}");
        let (name, ft) = (name.as_bytes(), 0);
        if self
            .blocks
            .iter_mut()
            .any(|b| insert_entry(b, ino, name, ft, self.filetype))
        {
            return true;
        }
        let mut b = self.empty.clone();
        set_inode_at(&mut b, 0, ino);
        put_name(&mut b, 0, name, self.filetype.then_some(ft));
        self.blocks.push(b);
        false
    }

    /// `list` with the question to expand after each connection whose
    /// name finds no room.
    fn annotate(&mut self, list: ProblemList) -> ProblemList {
        if !list.codes().any(|c| full_after(c).is_some()) {
            return list;
        }
        let mut out = ProblemList::new();
        for p in list.iter() {
            let ino = p.args().ino;
            let full = full_after(p.code).filter(|_| ino.is_some_and(|i| !self.place(i)));
            out.push(p);
            if let (Some(full), Some(ino)) = (full, ino) {
                out.push(Problem::new(full).ino(ino));
            }
        }
        out
    }
}

/// The problem standing for e2fsck's question to expand lost+found after
/// a connection of problem `c`: pass 3's for a directory, pass 4's for
/// any other inode.
fn full_after(c: Code) -> Option<Code> {
    match c {
        Code::DirUnconnected => Some(Code::LostFoundFull),
        Code::InodeUnattached => Some(Code::LostFoundFullP4),
        _ => None,
    }
}

/// Pass 3's or pass 4's problems `list`, with the questions to expand
/// lost+found a repair asks after their connections (none without `room`).
pub fn annotate(room: Option<&mut Room>, list: ProblemList) -> ProblemList {
    match room {
        Some(r) => r.annotate(list),
        None => list,
    }
}
