//! Rebuilding a directory (e2fsck's pass 3A): its entries are read from
//! all of its blocks, '.' and '..' written anew, duplicate names resolved,
//! and everything written back compactly into the directory's own blocks,
//! in their logical order, each with its checksum tail (metadata_csum).
//! Blocks left over after the entries become empty blocks, so the block
//! map, i_size and the bitmaps stay as they are.
//!
//! Used for what cannot be mended entry by entry: a broken htree index
//! (the index flag is cleared and the directory becomes a linear one, which
//! every kernel reads), duplicate names, a missing or misplaced '.' or
//! '..', a missing checksum tail without room for one.
//!
//! Duplicates: of two entries with the same name, a second one naming the
//! same inode is dropped; naming another inode, it is renamed as e2fsck
//! does (`name~0`, then `~1`, ...), so no file loses its name.
//!
//! Reading is lenient: each block's records are taken up to the first one
//! that cannot be read (the salvage in `dirblock.rs` runs first when the
//! check reported the block); index blocks hide behind empty records and
//! contribute nothing. Entries naming unused or invalid inodes are kept:
//! the next round's check reports them and `dir.rs` removes them.

use super::dirblock::write_tail_header;
use super::edit_bytes;
use super::lostfound::{Links, add, dir_seed, inode_pos};
use crate::check::Fs;
use crate::check::problem::Code;
use crate::check::state::{State, iflag};
use crate::fs::bytes::{le16, le32, put_le16, put_le32};
use crate::fs::dir_entry::{
    HEADER_LEN, TAIL_LEN, compute_tail_checksum, decode_rec_len, encode_rec_len, rec_len_for,
};
use crate::fs::inode::{ROOT_INO, flags};
use crate::fs::superblock::incompat;
use crate::repair::overlay::Overlay;
use std::collections::BTreeMap;

/// Problems fixed by rebuilding the directory they name.
pub(super) const CODES: &[Code] = &[
    Code::DirEntryDuplicate,
    Code::DirDotMissing,
    Code::DirDotDotMissing,
    Code::DirDotBadInode,
    Code::DirDotRecLen,
    Code::DirDotNotTerminated,
    Code::DirDotDotBadForm,
    Code::DirDotSecondEntry,
    Code::HtreeRootInvalid,
    Code::HtreeRootBad,
    Code::HtreeHashVersion,
    Code::HtreeDepth,
    Code::HtreeLimit,
    Code::HtreeCount,
    Code::HtreeHashOrder,
    Code::HtreeBadBlock,
    Code::HtreeNodeChecksum,
    Code::HtreeHashRange,
    Code::HtreeBlockReferenced,
    Code::HtreeNoIndexFlag,
    Code::HtreeFlagNoRoot,
    Code::HtreeLeafDepth,
];

const I_FLAGS: u64 = 0x20;
const FT_DIR: u8 = 2;
const MIN_REC: usize = 12;
/// Renaming a duplicate gives up after this many candidate names.
const MAX_RENAMES: usize = 10_000;

/// One entry to write back.
struct Ent {
    ino: u32,
    name: Vec<u8>,
    ft: u8,
}

/// Rebuilds directory `dir`; returns whether anything was staged. Refuses
/// (false) what it cannot do safely: inline directories, blocks outside
/// the file system or shared with another file, entries carrying a stored
/// hash (encrypted and casefolded), more entries than the blocks hold.
pub(super) fn rebuild(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    dir: u32,
    links: &mut Links,
) -> Result<bool, String> {
    let Some(k) = state.dir_index(dir) else {
        return Ok(false);
    };
    if !state.inode_used.get(dir as u64) || state.has_iflag(dir, iflag::INLINE) {
        return Ok(false);
    }
    let mut blocks: Vec<(u32, u64)> = state
        .dir_blocks
        .iter()
        .filter(|d| d.ino == dir)
        .map(|d| (d.lblk, d.pblk))
        .collect();
    blocks.sort_unstable();
    blocks.dedup();
    if blocks.is_empty()
        || blocks.windows(2).any(|w| w[0].0 == w[1].0)
        || blocks
            .iter()
            .any(|&(_, b)| !super::dirblock::writable(fs, state, b))
    {
        return Ok(false);
    }
    let ipos = inode_pos(fs, dir)?;
    let mut fl = [0u8; 4];
    overlay
        .read_at(&fs.dev, ipos + I_FLAGS, &mut fl)
        .map_err(|e| format!("cannot read inode {dir}: {e}"))?;
    let iflags = u32::from_le_bytes(fl);
    if iflags & flags::ENCRYPT != 0 && iflags & flags::CASEFOLD != 0 {
        return Ok(false);
    }

    let bs = fs.block_size();
    let filetype = fs.sb.has_incompat(incompat::FILETYPE);
    let mut ents = Vec::new();
    let mut old_dotdot = 0u32;
    let mut buf = vec![0u8; bs];
    for &(lblk, pblk) in &blocks {
        overlay
            .read_at(&fs.dev, pblk * bs as u64, &mut buf)
            .map_err(|e| format!("cannot read block {pblk}: {e}"))?;
        collect(&buf, lblk == 0, filetype, &mut ents, &mut old_dotdot);
    }
    for ino in dedup(&mut ents) {
        add(links, ino, -1);
    }

    let parent = if dir == ROOT_INO {
        ROOT_INO
    } else {
        match state.dir_parent.get(k).copied().unwrap_or(0) {
            0 if old_dotdot != 0 && old_dotdot <= fs.geo.inodes_count => old_dotdot,
            // No parent known: pass 3 reconnects the directory and points
            // '..' at lost+found; the root stands in until then, as in
            // e2fsck.
            0 => ROOT_INO,
            p => p,
        }
    };
    let csum = fs.metadata_csum();
    let Some(images) = layout(bs, csum, filetype, dir, parent, &ents, blocks.len()) else {
        return Ok(false);
    };
    let seed = if csum {
        Some(dir_seed(fs, state, overlay, dir)?)
    } else {
        None
    };
    for ((_, pblk), mut b) in blocks.iter().copied().zip(images) {
        if let Some(seed) = seed {
            let c = compute_tail_checksum(seed, &b);
            put_le32(&mut b, bs - 4, c);
        }
        overlay
            .read_at(&fs.dev, pblk * bs as u64, &mut buf)
            .map_err(|e| format!("cannot read block {pblk}: {e}"))?;
        if buf != b {
            overlay.stage(pblk, b).map_err(|e| e.to_string())?;
        }
    }
    if iflags & flags::INDEX != 0 {
        let seed = fs.csum_seed;
        edit_bytes(fs, overlay, ipos, fs.geo.inode_size as usize, |b| {
            let f = le32(b, I_FLAGS as usize) & !flags::INDEX;
            put_le32(b, I_FLAGS as usize, f);
            if csum {
                super::inode::set_checksum(seed, dir, b);
            }
        })?;
    }
    Ok(true)
}

/// Appends the used entries of block `b` (up to the first unreadable
/// record) to `out`; '.' and '..' are left out, the target of '..' in
/// the second record of block 0 goes to `dotdot`.
fn collect(b: &[u8], first: bool, filetype: bool, out: &mut Vec<Ent>, dotdot: &mut u32) {
    let bs = b.len();
    let mut off = 0;
    let mut n = 0;
    while off + HEADER_LEN <= bs {
        let rec = decode_rec_len(le16(b, off + 4), bs);
        let name_len = b[off + 6] as usize;
        if rec < MIN_REC || !rec.is_multiple_of(4) || rec > bs - off || name_len + HEADER_LEN > rec
        {
            break;
        }
        let ino = le32(b, off);
        let name = &b[off + HEADER_LEN..off + HEADER_LEN + name_len];
        if first && n == 1 && name == b".." {
            *dotdot = ino;
        }
        if ino != 0 && !name.is_empty() && name != b"." && name != b".." {
            out.push(Ent {
                ino,
                name: name.to_vec(),
                ft: if filetype { b[off + 7] } else { 0 },
            });
        }
        off += rec;
        n += 1;
    }
}

/// Resolves repeated names: a later entry naming the same inode is
/// dropped (its inode is returned, one per dropped entry), one naming
/// another inode renamed to a free name.
fn dedup(ents: &mut Vec<Ent>) -> Vec<u32> {
    let mut seen: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
    let mut dropped = Vec::new();
    let mut keep = vec![true; ents.len()];
    for i in 0..ents.len() {
        let e = &ents[i];
        match seen.get(&e.name) {
            None => {
                seen.insert(e.name.clone(), e.ino);
            }
            Some(&ino) if ino == e.ino => {
                keep[i] = false;
                dropped.push(e.ino);
            }
            Some(_) => {
                let mut name = e.name.clone();
                let mut tries = 0;
                loop {
                    tries += 1;
                    if tries > MAX_RENAMES || !mutate(&mut name) {
                        // No free name: the entry goes; the inode then
                        // shows up unattached and goes to lost+found.
                        keep[i] = false;
                        dropped.push(e.ino);
                        break;
                    }
                    if !seen.contains_key(&name) {
                        break;
                    }
                }
                if keep[i] {
                    seen.insert(name.clone(), ents[i].ino);
                    ents[i].name = name;
                }
            }
        }
    }
    let mut i = 0;
    ents.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    dropped
}

/// The next candidate name for a duplicate, as e2fsck forms it: a name
/// not yet ending in `~digits` gets `~0` in its last two bytes of padding
/// (so the record keeps its length where it can); one that does has the
/// number counted up. False when no further name can be formed.
fn mutate(name: &mut Vec<u8>) -> bool {
    let digits = name.iter().rev().take_while(|c| c.is_ascii_digit()).count();
    let len = name.len();
    if digits == 0 || digits >= len || name[len - digits - 1] != b'~' {
        let l = if (len.saturating_sub(1) & 3) < 2 {
            len + 2
        } else {
            (len + 3) & !3
        };
        if !(2..=255).contains(&l) {
            return false;
        }
        name.resize(l, 0);
        name[l - 2] = b'~';
        name[l - 1] = b'0';
        return true;
    }
    // Count the trailing number up; past all nines it grows a digit.
    for i in (len - digits..len).rev() {
        if name[i] == b'9' {
            name[i] = b'0';
        } else {
            name[i] += 1;
            return true;
        }
    }
    if len >= 255 {
        return false;
    }
    name.insert(len - digits, b'1');
    true
}

/// The new contents of the directory's `nblocks` blocks: '.' and '..'
/// first, then the entries packed in order; each block's last record runs
/// to its end (before the tail, whose header is written; the caller adds
/// the checksum). None if the entries do not fit.
fn layout(
    bs: usize,
    csum: bool,
    filetype: bool,
    dir: u32,
    parent: u32,
    ents: &[Ent],
    nblocks: usize,
) -> Option<Vec<Vec<u8>>> {
    let cap = if csum { bs - TAIL_LEN } else { bs };
    let dir_ft = if filetype { FT_DIR } else { 0 };
    let mut out = Vec::with_capacity(nblocks);
    let mut cur = vec![0u8; bs];
    put(&mut cur, bs, 0, dir, b".", dir_ft, MIN_REC);
    put(&mut cur, bs, MIN_REC, parent, b"..", dir_ft, MIN_REC);
    let mut used = 2 * MIN_REC;
    let mut last = MIN_REC;
    for e in ents {
        let need = rec_len_for(e.name.len());
        if used + need > cap {
            finish(&mut cur, bs, last, cap, csum);
            out.push(std::mem::replace(&mut cur, vec![0u8; bs]));
            if out.len() >= nblocks {
                return None;
            }
            used = 0;
        }
        put(&mut cur, bs, used, e.ino, &e.name, e.ft, need);
        last = used;
        used += need;
    }
    finish(&mut cur, bs, last, cap, csum);
    out.push(cur);
    while out.len() < nblocks {
        let mut b = vec![0u8; bs];
        put(&mut b, bs, 0, 0, b"", 0, cap);
        finish(&mut b, bs, 0, cap, csum);
        out.push(b);
    }
    Some(out)
}

/// Writes one record at `off`.
fn put(b: &mut [u8], bs: usize, off: usize, ino: u32, name: &[u8], ft: u8, rec: usize) {
    put_le32(b, off, ino);
    put_le16(b, off + 4, encode_rec_len(rec, bs));
    b[off + 6] = name.len() as u8;
    b[off + 7] = ft;
    b[off + HEADER_LEN..off + HEADER_LEN + name.len()].copy_from_slice(name);
}

/// Stretches the record at `last` to `cap` and writes the tail header.
fn finish(b: &mut [u8], bs: usize, last: usize, cap: usize, csum: bool) {
    put_le16(b, last + 4, encode_rec_len(cap - last, bs));
    if csum {
        write_tail_header(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ent(ino: u32, name: &str) -> Ent {
        Ent {
            ino,
            name: name.as_bytes().to_vec(),
            ft: 1,
        }
    }

    #[test]
    fn duplicate_names() {
        let mut v = vec![
            ent(20, "a"),
            ent(21, "b"),
            ent(20, "a"),
            ent(22, "a"),
            ent(23, "modules.conf.old"),
            ent(24, "modules.conf.old"),
        ];
        assert_eq!(dedup(&mut v), vec![20]);
        let names: Vec<&[u8]> = v.iter().map(|e| &e.name[..]).collect();
        assert_eq!(
            names,
            vec![
                &b"a"[..],
                b"b",
                b"a~0",
                b"modules.conf.old",
                b"modules.conf.o~0"
            ]
        );
    }

    #[test]
    fn mutations_count_up() {
        let mut n = b"x~9".to_vec();
        assert!(mutate(&mut n));
        assert_eq!(n, b"x~10");
        let mut n = b"ab~3".to_vec();
        assert!(mutate(&mut n));
        assert_eq!(n, b"ab~4");
    }

    #[test]
    fn layout_packs_and_pads() {
        let ents: Vec<Ent> = (0..100)
            .map(|i| ent(20 + i, &format!("file{i:04}")))
            .collect();
        let blocks = layout(1024, true, true, 12, 2, &ents, 3).unwrap();
        assert_eq!(blocks.len(), 3);
        let mut seen = 0;
        for (i, b) in blocks.iter().enumerate() {
            assert!(crate::fs::dir_entry::has_tail(b));
            let mut v = Vec::new();
            let mut dd = 0;
            collect(b, i == 0, true, &mut v, &mut dd);
            if i == 0 {
                assert_eq!(dd, 2);
                assert_eq!(le32(b, 0), 12);
            }
            seen += v.len();
        }
        assert_eq!(seen, 100);
        assert!(layout(1024, true, true, 12, 2, &ents, 1).is_none());
    }
}
