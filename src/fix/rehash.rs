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

use super::lostfound::{Links, add, dir_seed};
use crate::check::state::{State, iflag};
use crate::fs::dir_entry::{HEADER_LEN, TAIL_LEN, rec_len_for};
use crate::fs::dir_entry::{file_type_at, inode_at, name_len_at, rec_len_at, set_rec_len_at};
use crate::fs::dir_entry::{put_entry, put_tail_header, set_tail_checksum};
use crate::fs::dx_hash::{DX_HASH_HALF_MD4, DX_HASH_LEGACY, DX_HASH_TEA, dx_hash};
use crate::fs::htree;
use crate::fs::inode::{ROOT_INO, flags};
use crate::fs::num::{Ino, LBlk};
use crate::fs::superblock::{compat, incompat};
use crate::narrow;
use crate::store::overlay::Overlay;
use crate::volume::Fs;
use crate::volume::edit as vol;
use std::collections::BTreeMap;

/// dx_root_info and the index after it in block 0; a node's index.
const ROOT_INFO: usize = htree::ROOT_INFO_OFFSET;
const ROOT_INFO_LEN: u8 = htree::ROOT_INFO_LEN;
const ROOT_COUNT_OFF: usize = ROOT_INFO + ROOT_INFO_LEN as usize;
const NODE_COUNT_OFF: usize = htree::NODE_COUNT_OFFSET;
use crate::fs::htree::DX_TAIL_LEN;
const FT_DIR: u8 = 2;
use crate::fs::dir_salvage::MIN_REC;
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
    dir: Ino,
    links: &mut Links,
) -> super::Result<bool> {
    let Some(k) = state.dir_index(dir) else {
        return Ok(false);
    };
    if !state.inode_used.get(dir) || state.has_iflag(dir, iflag::INLINE) {
        return Ok(false);
    }
    let blocks = state.dir_blocks_once(dir);
    if blocks.is_empty()
        || blocks.windows(2).any(|w| w[0].0 == w[1].0)
        || blocks
            .iter()
            .any(|&(_, b)| !super::dirblock::writable(fs, state, b.0))
    {
        return Ok(false);
    }
    let Some(mut raw) = vol::read_inode(fs, overlay, dir)? else {
        return Err(format!("inode {dir} lies beyond the addressable range").into());
    };
    let iflags = crate::fs::inode::InodeMut(&mut raw).flags();
    if iflags & flags::ENCRYPT != 0 && iflags & flags::CASEFOLD != 0 {
        return Ok(false);
    }

    let bs = fs.block_size();
    let filetype = fs.sb.has_incompat(incompat::FILETYPE);
    let mut ents = Vec::new();
    let mut old_dotdot = 0u32;
    for &(lblk, pblk) in &blocks {
        let buf = vol::read_block(fs, overlay, pblk.0)?;
        collect(&buf, lblk == LBlk(0), filetype, &mut ents, &mut old_dotdot);
    }
    for ino in dedup(&mut ents) {
        add(links, Ino(ino), -1);
    }

    let parent = if dir == Ino::ROOT {
        ROOT_INO
    } else {
        match state.dir_parent.get(k).map_or(0, |p| p.0) {
            0 if old_dotdot != 0 && old_dotdot <= fs.geo.inodes_count => old_dotdot,
            // No parent known: pass 3 reconnects the directory and points
            // '..' at lost+found; the root stands in until then, as in
            // e2fsck.
            0 => ROOT_INO,
            p => p,
        }
    };
    let csum = fs.metadata_csum();
    let seed = if csum {
        Some(dir_seed(fs, state, overlay, dir)?)
    } else {
        None
    };
    let g = Geom {
        bs,
        csum,
        filetype,
        dir: dir.0,
        parent,
    };
    // An index when the file system has them, the entries need more than
    // one block and the directory's blocks follow each other; names of
    // casefolded or encrypted directories hash differently, so those stay
    // linear. Whatever cannot be indexed is written linear.
    let contiguous = blocks
        .iter()
        .enumerate()
        .all(|(i, &(l, _))| usize::try_from(l.0) == Ok(i));
    let indexed = fs.sb.has_compat(compat::DIR_INDEX)
        && contiguous
        && iflags & (flags::CASEFOLD | flags::ENCRYPT) == 0
        && linear(&g, &ents, 1).is_none();
    let hv = match fs.sb.def_hash_version {
        v @ (DX_HASH_LEGACY | DX_HASH_HALF_MD4 | DX_HASH_TEA) => v,
        _ => DX_HASH_HALF_MD4,
    };
    let eff = if fs.sb.unsigned_hash() { hv + 3 } else { hv };
    let tree = if indexed {
        htree(&g, &ents, blocks.len(), hv, eff, &fs.sb.hash_seed)
    } else {
        None
    };
    let is_tree = tree.is_some();
    let Some(images) = tree.or_else(|| linear(&g, &ents, blocks.len())) else {
        return Ok(false);
    };
    for ((_, pblk), mut b) in blocks.iter().copied().zip(images) {
        if let Some(seed) = seed {
            seal(&mut b, seed);
        }
        vol::stage_if_changed(fs, overlay, pblk.0, b)?;
    }
    let want = if is_tree {
        iflags | flags::INDEX
    } else {
        iflags & !flags::INDEX
    };
    if want != iflags {
        vol::edit_inode(fs, overlay, dir, |m| m.set_flags(want))?;
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
        let rec = rec_len_at(b, off, bs);
        let name_len = name_len_at(b, off);
        if rec < MIN_REC || !rec.is_multiple_of(4) || rec > bs - off || name_len + HEADER_LEN > rec
        {
            break;
        }
        let ino = inode_at(b, off).get();
        let name = &b[off + HEADER_LEN..off + HEADER_LEN + name_len];
        if first && n == 1 && name == b".." {
            *dotdot = ino;
        }
        if ino != 0 && !name.is_empty() && name != b"." && name != b".." {
            out.push(Ent {
                ino,
                name: name.to_vec(),
                ft: if filetype { file_type_at(b, off) } else { 0 },
            });
        }
        // A first record longer than '.' needs (an empty one left by a
        // salvage, or a '.' that is too big) is split by e2fsck at 12
        // bytes, and a record named '..' found there is kept: so is what
        // follows it.
        off += if first && n == 0 && rec > 2 * MIN_REC && names_dotdot(b, MIN_REC) {
            MIN_REC
        } else {
            rec
        };
        n += 1;
    }
}

/// Whether a record at `off` of `b` carries the name '..'.
fn names_dotdot(b: &[u8], off: usize) -> bool {
    b.get(off + 6) == Some(&2) && b.get(off + HEADER_LEN..off + HEADER_LEN + 2) == Some(b"..")
}

/// Resolves repeated names as e2fsck's pass 3A does: the entries are
/// sorted by name, equal names by inode, highest first (a dropped entry
/// counting as inode 0), and each entry is compared with the one before
/// it; an entry naming the same inode is dropped (its inode is returned,
/// one per dropped entry), one naming another inode is renamed to a name
/// no entry carries (dropped ones included). Sorting and comparing repeat
/// until a pass changes nothing, so the entry naming the highest inode
/// keeps the name and the others get `~0`, `~1`... in falling inode order.
fn dedup(ents: &mut Vec<Ent>) -> Vec<u32> {
    let mut names: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
    for e in ents.iter() {
        *names.entry(e.name.clone()).or_default() += 1;
    }
    if names.len() == ents.len() {
        return Vec::new();
    }
    let mut alive = vec![true; ents.len()];
    let mut dropped = Vec::new();
    let mut order: Vec<usize> = (0..ents.len()).collect();
    for _ in 0..MAX_RENAMES {
        let key = |k: usize| (std::cmp::Reverse(if alive[k] { ents[k].ino } else { 0 }), k);
        order.sort_by(|&a, &b| (&ents[a].name, key(a)).cmp(&(&ents[b].name, key(b))));
        let mut changed = false;
        for w in 1..order.len() {
            let (prev, i) = (order[w - 1], order[w]);
            if !alive[i] || ents[i].name != ents[prev].name {
                continue;
            }
            changed = true;
            if alive[prev] && ents[prev].ino == ents[i].ino {
                alive[i] = false;
                dropped.push(ents[i].ino);
                continue;
            }
            let mut name = ents[i].name.clone();
            let mut tries = 0;
            let free = loop {
                tries += 1;
                if tries > MAX_RENAMES || !mutate(&mut name) {
                    break false;
                }
                if !names.contains_key(&name) {
                    break true;
                }
            };
            if !free {
                // No free name: the entry goes; the inode then shows up
                // unattached and goes to lost+found.
                alive[i] = false;
                dropped.push(ents[i].ino);
                continue;
            }
            if let Some(n) = names.get_mut(&ents[i].name) {
                *n -= 1;
            }
            *names.entry(name.clone()).or_default() += 1;
            ents[i].name = name;
        }
        if !changed {
            break;
        }
    }
    let mut i = 0;
    ents.retain(|_| {
        i += 1;
        alive[i - 1]
    });
    dropped
}

/// The next candidate name for a duplicate, as e2fsck forms it: a name
/// not yet ending in `~digits` gets `~0` in its last two bytes of padding
/// (so the record keeps its length where it can; a name at the 255-byte
/// limit has its last two bytes replaced); one that does has the number
/// counted up within the same length: past all nines, the character
/// before the `~` becomes `~` and the `~` a `1` (`ab~9` gives `a~10`), and
/// with a single character before it, that character is counted up instead
/// (`x~9` gives `y~0`). False when no name can be formed.
fn mutate(name: &mut Vec<u8>) -> bool {
    let len = name.len();
    if len == 0 {
        return false;
    }
    let digits = name.iter().rev().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || digits >= len || name[len - digits - 1] != b'~' {
        let l = if ((len - 1) & 3) < 2 {
            len + 2
        } else {
            (len + 3) & !3
        };
        let l = l.min(255);
        name.resize(l, 0);
        name[l - 2] = b'~';
        name[l - 1] = b'0';
        return true;
    }
    for i in (len - digits..len).rev() {
        if name[i] == b'9' {
            name[i] = b'0';
        } else {
            name[i] += 1;
            return true;
        }
    }
    let tilde = len - digits - 1;
    if tilde == 1 {
        match name[0] {
            b'z' => name[0] = b'A',
            b'Z' => {
                name[0] = b'~';
                name[1] = b'0';
            }
            c => name[0] = c.wrapping_add(1),
        }
    } else if tilde > 1 {
        name[tilde] = b'1';
        name[tilde - 1] = b'~';
    } else {
        name[0] = if name[0] == b'~' {
            b'a'
        } else {
            name[0].wrapping_add(1)
        };
    }
    true
}

/// What every block layout needs to know.
struct Geom {
    bs: usize,
    csum: bool,
    filetype: bool,
    dir: u32,
    parent: u32,
}

impl Geom {
    /// Bytes for entries in a leaf block (before the checksum tail).
    fn cap(&self) -> usize {
        if self.csum {
            self.bs - TAIL_LEN
        } else {
            self.bs
        }
    }
    fn dir_ft(&self) -> u8 {
        if self.filetype { FT_DIR } else { 0 }
    }
    /// Bytes an index block leaves for its entries after `count_off`.
    fn limit(&self, count_off: usize) -> usize {
        (self.bs - count_off - if self.csum { DX_TAIL_LEN } else { 0 }) / 8
    }
}

/// The new contents of a linear directory of `nblocks` blocks: '.' and
/// '..' first, then the entries packed in order; each block's last record
/// runs to its end (before the tail, whose header is written; `seal` adds
/// the checksum). None if the entries do not fit.
fn linear(g: &Geom, ents: &[Ent], nblocks: usize) -> Option<Vec<Vec<u8>>> {
    let (bs, cap) = (g.bs, g.cap());
    let mut out = Vec::with_capacity(nblocks);
    let mut cur = vec![0u8; bs];
    put(&mut cur, bs, 0, g.dir, b".", g.dir_ft(), MIN_REC);
    put(&mut cur, bs, MIN_REC, g.parent, b"..", g.dir_ft(), MIN_REC);
    let mut used = 2 * MIN_REC;
    let mut last = MIN_REC;
    for e in ents {
        let need = rec_len_for(e.name.len());
        if used + need > cap {
            finish(&mut cur, bs, last, cap, g.csum);
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
    finish(&mut cur, bs, last, cap, g.csum);
    out.push(cur);
    while out.len() < nblocks {
        out.push(leaf(g, &[]));
    }
    Some(out)
}

/// One leaf block holding `ents` (an empty record if none).
fn leaf(g: &Geom, ents: &[&Ent]) -> Vec<u8> {
    let (bs, cap) = (g.bs, g.cap());
    let mut b = vec![0u8; bs];
    let mut used = 0;
    let mut last = 0;
    if ents.is_empty() {
        put(&mut b, bs, 0, 0, b"", 0, cap);
    }
    for e in ents {
        let need = rec_len_for(e.name.len());
        put(&mut b, bs, used, e.ino, &e.name, e.ft, need);
        last = used;
        used += need;
    }
    finish(&mut b, bs, last, cap, g.csum);
    b
}

/// The new contents of an indexed directory using all of its `nblocks`
/// blocks (every block of an indexed directory must be referenced by the
/// index): block 0 the root, then the interior nodes if one level is not
/// enough, then the leaves, with the entries sorted by hash and spread
/// evenly over the leaves, a run of equal hashes never split. `hv` is the
/// version the root records, `eff` the one names are hashed with. None
/// when that is not possible (too few entries for the blocks, too many
/// for two levels, a hash the version cannot compute).
fn htree(
    g: &Geom,
    ents: &[Ent],
    nblocks: usize,
    hv: u8,
    eff: u8,
    seed: &[u32; 4],
) -> Option<Vec<Vec<u8>>> {
    let mut sorted: Vec<(u32, u32, &Ent)> = Vec::with_capacity(ents.len());
    for e in ents {
        let (h, minor) = dx_hash(&e.name, eff, seed)?;
        sorted.push((h, minor, e));
    }
    sorted.sort_by(|a, b| (a.0, a.1, &a.2.name).cmp(&(b.0, b.1, &b.2.name)));
    let root_limit = g.limit(ROOT_COUNT_OFF);
    let node_limit = g.limit(NODE_COUNT_OFF);
    let avail = nblocks.checked_sub(1)?;
    let nodes = if avail <= root_limit {
        0
    } else {
        (1..=root_limit).find(|&k| avail > k && avail - k <= k * node_limit)?
    };
    let nleaves = avail - nodes;
    let spans = spread(g, &sorted, nleaves)?;
    let first_hash = |j: usize| sorted[spans[j].0].0;
    let mut out = Vec::with_capacity(nblocks);
    // Root: '.', then '..' over the rest of the block, hiding the index.
    let mut root = vec![0u8; g.bs];
    put(&mut root, g.bs, 0, g.dir, b".", g.dir_ft(), MIN_REC);
    put(
        &mut root,
        g.bs,
        MIN_REC,
        g.parent,
        b"..",
        g.dir_ft(),
        g.bs - MIN_REC,
    );
    htree::put_root_info(&mut root, hv, u8::from(nodes > 0));
    let leaf_base = 1 + nodes;
    if nodes == 0 {
        let entries: Vec<(u32, u32)> = (0..nleaves)
            .map(|j| (first_hash(j), narrow::sat32(leaf_base + j)))
            .collect();
        htree::put_index(&mut root, ROOT_COUNT_OFF, root_limit, &entries);
        out.push(root);
    } else {
        // Leaves shared out evenly over the nodes.
        let per = nleaves.div_ceil(nodes);
        let groups: Vec<(usize, usize)> = (0..nodes)
            .map(|k| (k * per, ((k + 1) * per).min(nleaves)))
            .collect();
        if groups.iter().any(|&(a, z)| a >= z || z - a > node_limit) {
            return None;
        }
        let top: Vec<(u32, u32)> = groups
            .iter()
            .enumerate()
            .map(|(k, &(a, _))| (first_hash(a), narrow::sat32(1 + k)))
            .collect();
        htree::put_index(&mut root, ROOT_COUNT_OFF, root_limit, &top);
        out.push(root);
        for &(a, z) in &groups {
            let mut n = vec![0u8; g.bs];
            set_rec_len_at(&mut n, 0, g.bs, g.bs);
            let entries: Vec<(u32, u32)> = (a..z)
                .map(|j| (first_hash(j), narrow::sat32(leaf_base + j)))
                .collect();
            htree::put_index(&mut n, NODE_COUNT_OFF, node_limit, &entries);
            out.push(n);
        }
    }
    for &(a, z) in &spans {
        let es: Vec<&Ent> = sorted[a..z].iter().map(|s| s.2).collect();
        out.push(leaf(g, &es));
    }
    Some(out)
}

/// Splits the hash-sorted entries into `n` non-empty runs that each fit a
/// leaf, about equal in bytes, never between two equal hashes.
fn spread(g: &Geom, sorted: &[(u32, u32, &Ent)], n: usize) -> Option<Vec<(usize, usize)>> {
    if n == 0 || sorted.len() < n {
        return None;
    }
    let cap = g.cap();
    let need = |i: usize| rec_len_for(sorted[i].2.name.len());
    let total: usize = (0..sorted.len()).map(need).sum();
    let target = total.div_ceil(n);
    let mut spans = Vec::with_capacity(n);
    let (mut start, mut used) = (0, 0);
    for i in 0..sorted.len() {
        let after = n - spans.len() - 1;
        if i > start && after > 0 {
            let full = used + need(i) > cap;
            let force = sorted.len() - i <= after;
            let split_ok = sorted[i].0 != sorted[i - 1].0;
            if (full || force || used >= target) && split_ok {
                spans.push((start, i));
                start = i;
                used = 0;
            } else if full || force {
                return None;
            }
        }
        used += need(i);
        if used > cap {
            return None;
        }
    }
    spans.push((start, sorted.len()));
    (spans.len() == n).then_some(spans)
}

/// Stores the checksum of a block made by the layouts: a leaf's in its
/// dirent tail, a root's or node's in the dx tail after its index.
fn seal(b: &mut [u8], seed: u32) {
    if crate::fs::dir_entry::has_tail(b) {
        set_tail_checksum(seed, b);
        return;
    }
    let count_off = if inode_at(b, 0) == Ino::NONE {
        NODE_COUNT_OFF
    } else {
        ROOT_COUNT_OFF
    };
    let cl = htree::parse_count_limit(b, count_off);
    if let Some(c) = htree::compute_tail_checksum(seed, b, count_off, cl) {
        htree::set_tail_checksum(b, count_off, cl, c);
    }
}

/// Writes one record at `off`.
fn put(b: &mut [u8], bs: usize, off: usize, ino: u32, name: &[u8], ft: u8, rec: usize) {
    put_entry(b, bs, off, ino, rec, name, Some(ft));
}

/// Stretches the record at `last` to `cap` and writes the tail header.
fn finish(b: &mut [u8], bs: usize, last: usize, cap: usize, csum: bool) {
    set_rec_len_at(b, last, cap - last, bs);
    if csum {
        put_tail_header(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::le32;

    fn geom(bs: usize, csum: bool) -> Geom {
        Geom {
            bs,
            csum,
            filetype: true,
            dir: 12,
            parent: 2,
        }
    }

    #[test]
    fn dotdot_behind_an_oversized_first_record_is_kept() {
        let bs = 1024;
        let mut b = vec![0u8; bs];
        // An empty first record over the whole block (what a salvage of a
        // broken '.' leaves), with the old '..' and an entry behind it.
        put(&mut b, bs, 0, 0, b"", 0, bs);
        put(&mut b, bs, 12, 2, b"..", 2, 12);
        put(&mut b, bs, 24, 20, b"a", 1, bs - 24);
        let (mut out, mut dotdot) = (Vec::new(), 0);
        collect(&b, true, true, &mut out, &mut dotdot);
        assert_eq!(dotdot, 2);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].ino, &out[0].name[..]), (20, &b"a"[..]));
        // Anything else at 12 stays hidden, as e2fsck blanks it.
        put(&mut b, bs, 12, 2, b"xy", 2, 12);
        let (mut out, mut dotdot) = (Vec::new(), 0);
        collect(&b, true, true, &mut out, &mut dotdot);
        assert_eq!((out.len(), dotdot), (0, 0));
        // Not in a later block.
        put(&mut b, bs, 12, 2, b"..", 2, 12);
        let (mut out, mut dotdot) = (Vec::new(), 0);
        collect(&b, false, true, &mut out, &mut dotdot);
        assert_eq!((out.len(), dotdot), (0, 0));
    }

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
        // As e2fsck 1.47.4 leaves them: the highest inode keeps a name;
        // inode 20's second entry is renamed too (the first, renamed in
        // the same pass, no longer sits next to it).
        assert_eq!(dedup(&mut v), Vec::<u32>::new());
        let got: Vec<(u32, &[u8])> = v.iter().map(|e| (e.ino, &e.name[..])).collect();
        assert_eq!(
            got,
            vec![
                (20, &b"a~0"[..]),
                (21, b"b"),
                (20, b"a~1"),
                (22, b"a"),
                (23, b"modules.conf.o~0"),
                (24, b"modules.conf.old"),
            ]
        );
        let mut v = vec![ent(30, "x"), ent(30, "x"), ent(31, "y")];
        assert_eq!(dedup(&mut v), vec![30]);
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn mutations_count_up() {
        let mut n = b"x~9".to_vec();
        assert!(mutate(&mut n));
        assert_eq!(n, b"y~0");
        let mut n = b"ab~99".to_vec();
        assert!(mutate(&mut n));
        assert_eq!(n, b"a~100");
        let mut n = vec![b'a'; 254];
        assert!(mutate(&mut n));
        assert_eq!(n.len(), 255);
        assert_eq!(&n[252..], b"a~0");
        let mut n = b"ab~3".to_vec();
        assert!(mutate(&mut n));
        assert_eq!(n, b"ab~4");
    }

    #[test]
    fn layout_packs_and_pads() {
        let ents: Vec<Ent> = (0..100)
            .map(|i| ent(20 + i, &format!("file{i:04}")))
            .collect();
        let g = geom(1024, true);
        let mut blocks = linear(&g, &ents, 3).unwrap();
        assert_eq!(blocks.len(), 3);
        let mut seen = 0;
        for (i, b) in blocks.iter_mut().enumerate() {
            seal(b, 5);
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
        assert!(linear(&g, &ents, 1).is_none());
    }

    /// Walks an index built by `htree`: every leaf referenced once, in
    /// order, each leaf's hashes inside its index range.
    fn check_tree(blocks: &[Vec<u8>], eff: u8, seed: &[u32; 4]) -> (u8, usize) {
        let levels = blocks[0][ROOT_INFO + 6];
        let index = |b: &[u8], off: usize| -> Vec<(u32, u32)> {
            let cl = htree::parse_count_limit(b, off);
            (0..usize::from(cl.count))
                .map(|i| htree::dx_entry(b, off, i))
                .collect()
        };
        let mut leaves = Vec::new();
        let top = index(&blocks[0], ROOT_COUNT_OFF);
        for (i, &(h, blk)) in top.iter().enumerate() {
            let hi = top.get(i + 1).map_or(u32::MAX, |e| e.0);
            if levels == 0 {
                leaves.push((h, hi, blk));
            } else {
                let sub = index(&blocks[blk as usize], NODE_COUNT_OFF);
                for (j, &(h2, b2)) in sub.iter().enumerate() {
                    let lo = if j == 0 { h } else { h2 };
                    let hi2 = sub.get(j + 1).map_or(hi, |e| e.0);
                    leaves.push((lo, hi2, b2));
                }
            }
        }
        let mut n = 0;
        for (k, &(lo, hi, blk)) in leaves.iter().enumerate() {
            assert_eq!(blk as usize, blocks.len() - leaves.len() + k);
            let mut v = Vec::new();
            let mut dd = 0;
            collect(&blocks[blk as usize], false, true, &mut v, &mut dd);
            assert!(!v.is_empty());
            for e in &v {
                let h = dx_hash(&e.name, eff, seed).unwrap().0;
                assert!(
                    h >= lo && h < hi,
                    "leaf {blk}: {h:#x} not in {lo:#x}..{hi:#x}"
                );
            }
            n += v.len();
        }
        assert_eq!(
            blocks.len(),
            1 + leaves.len() + if levels > 0 { top.len() } else { 0 }
        );
        (levels, n)
    }

    #[test]
    fn htree_one_and_two_levels() {
        let seed = [1, 2, 3, 4];
        let ents: Vec<Ent> = (0..3000)
            .map(|i| ent(20 + i, &format!("a_rather_long_file_name_{i:06}")))
            .collect();
        let g = geom(1024, true);
        // One level: the blocks the entries need, plus room.
        let t = htree(&g, &ents[..500], 30, 1, 1, &seed).unwrap();
        assert_eq!(check_tree(&t, 1, &seed), (0, 500));
        // More leaves than the root holds: interior nodes.
        let t = htree(&g, &ents, 200, 1, 1, &seed).unwrap();
        assert_eq!(check_tree(&t, 1, &seed), (1, 3000));
        // Fewer entries than blocks, or more than fit: no index.
        assert!(htree(&g, &ents[..10], 30, 1, 1, &seed).is_none());
        assert!(htree(&g, &ents, 20, 1, 1, &seed).is_none());
    }
}
