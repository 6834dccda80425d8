//! Fast-commit replay: what e2fsck's recovery writes after the full-commit
//! replay when the journal's fast-commit area holds valid records for the
//! transaction after the log, computed as staged blocks over the replayed
//! view (nothing is written here; the check reads through the result, and
//! a repair commits the same bytes).
//!
//! Replay follows e2fsck 1.47.4, record by record:
//! - INODE: the logged inode image replaces the on-disk one except its
//!   block map (i_block is kept; an extent inode whose i_block holds no
//!   extent header gets an empty root); i_blocks is counted again from the
//!   extent tree as libext2fs counts (the data, and the index nodes but
//!   not the leaves), and the inode bitmap follows the link count;
//! - ADD_RANGE / DEL_RANGE: the inode's extents are loaded into a list
//!   (tree blocks below the root freed), the range mapped or unmapped in
//!   it (blocks unmapped are freed, blocks mapped marked in the bitmap),
//!   and the list written back as a new tree when another inode's record
//!   comes, grown extent by extent as libext2fs grows it
//!   (`volume::extent_append`), i_blocks then set from libext2fs' count,
//!   which leaves the leaves out (e2fsck's pass 1 finds such a file's
//!   i_blocks wrong after its own replay, and so does pfsck's);
//! - CREAT / LINK: the name is unlinked from the parent whatever it names,
//!   then linked to the inode in the first directory slot with room, in
//!   an indexed directory in the leaf the name's hash leads to (a
//!   symlink is left unlinked, as e2fsck's replay returns early for it);
//! - UNLINK: the name naming that inode is removed.
//!
//! At the end the free counts and uninit marks of every group and the
//! superblock are computed from the bitmaps, and the bitmaps written. The
//! group descriptors written are those e2fsck held in memory: the table as
//! it was before the full-commit replay, with the recomputed fields.
//!
//! What e2fsck would do that this does not model is reported as
//! `Unsupported` (the check then stops as before, nothing written): a
//! replay step that fails in e2fsck (its replay stops half way), a link
//! into a full leaf of an indexed directory (libext2fs splits the leaf)
//! or into a casefolded indexed one, indirect-mapped inodes, bigalloc,
//! extent lists whose tree would split an index block below the root
//! (more leaves than one index block holds: about 7,000 extents with
//! 1 KiB blocks, 115,000 with 4 KiB).

use crate::fs::bitmap;
use crate::fs::dir_entry;
use crate::fs::dir_entry::{inode_at, rec_len_at, set_file_type_at, set_inode_at, set_name_len_at};
use crate::fs::dx_hash::{DX_HASH_TEA, dx_hash};
use crate::fs::extent::{self, EXTENT_MAGIC, Extent, INIT_MAX_LEN, ROOT_MAX};
use crate::fs::fast_commit::{DentryOp, Tag};
use crate::fs::group_desc::{self, BG_BLOCK_UNINIT, BG_INODE_UNINIT, DescMut};
use crate::fs::htree;
use crate::fs::inode::{
    GOOD_OLD_INODE_SIZE, InodeMut, S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG,
    S_IFSOCK, field, flags, inode_csum_seed,
};
use crate::fs::num::{Blk, Group, Ino};
use crate::fs::superblock::{incompat, ro_compat};
use crate::narrow;
use crate::volume::edit::{self, read_block, read_inode, write_desc_table};
use crate::volume::{Blocks, Fs, extent_append};

/// Why the replay cannot be computed here.
pub type Unsupported = String;

/// Blocks recovery's fast-commit replay writes, by block number.
pub type Written = std::collections::BTreeMap<u64, Vec<u8>>;

/// ext2fs_extent as replay keeps it: 64-bit logical start (end
/// arithmetic wraps as in e2fsck), length, physical start, unwritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ext {
    lblk: u64,
    len: u64,
    pblk: u64,
    uninit: bool,
}

impl Ext {
    fn end(&self) -> u64 {
        self.lblk.wrapping_add(self.len).wrapping_sub(1)
    }
    fn pend(&self) -> u64 {
        self.pblk.wrapping_add(self.len).wrapping_sub(1)
    }
}

struct List {
    ino: Ino,
    extents: Vec<Ext>,
}

/// A name to link and what its entry needs.
struct Slot<'a> {
    parent: Ino,
    ino: Ino,
    name: &'a [u8],
    ftype: u8,
    /// The record length the name needs.
    need: usize,
    /// The directory block's checksum tail, 0 without metadata_csum.
    csum_size: usize,
    dir_raw: Vec<u8>,
}

/// An extent tree as read: its extents (leaves in order), its blocks
/// below the root, and how many of its nodes libext2fs' block count
/// (ext2fs_count_blocks, which e2fsck sets i_blocks from) adds to the
/// data: the index nodes, the root included, but not the leaves.
#[derive(Default)]
struct Tree {
    leaves: Vec<Ext>,
    nodes: Vec<u64>,
    counted_nodes: u64,
}

/// A plain bitset over `0..n`.
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: u64) -> Bits {
        Bits(vec![0; narrow::to_usize(n.div_ceil(64)) + 1])
    }
    fn get(&self, i: u64) -> bool {
        self.0
            .get((i / 64) as usize)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    fn set(&mut self, i: u64, v: bool) {
        if let Some(w) = self.0.get_mut((i / 64) as usize) {
            if v {
                *w |= 1 << (i % 64);
            } else {
                *w &= !(1 << (i % 64));
            }
        }
    }
}

struct Replay<'a> {
    fs: &'a Fs,
    st: Blocks,
    /// By block number (bits past the end of the file system unused).
    blocks: Bits,
    /// By inode number.
    inodes: Bits,
    list: Option<List>,
}

/// Computes the replay of `tags` (a scan's valid records) on `fs`, the
/// file system after the full-commit replay. `pre_gd` is the descriptor
/// table as loaded before that replay.
pub fn replay(fs: &Fs, pre_gd: &[u8], tags: &[Tag]) -> Result<Written, Unsupported> {
    if fs.geo.cluster_bits != 0 {
        return Err("bigalloc".into());
    }
    if pre_gd.len() != fs.gd_raw.len() {
        return Err("descriptor table changed size in the replay".into());
    }
    let mut r = Replay {
        fs,
        st: Blocks::new(fs.geo.block_size),
        blocks: Bits::new(fs.geo.blocks_count),
        inodes: Bits::new(u64::from(fs.geo.inodes_count) + 1),
        list: None,
    };
    r.read_bitmaps()?;
    for t in tags {
        match t {
            Tag::Dentry {
                op: DentryOp::Create | DentryOp::Link,
                parent,
                ino,
                name,
            } => r.link(*parent, *ino, name)?,
            Tag::Dentry {
                op: DentryOp::Unlink,
                parent,
                ino,
                name,
            } => r.unlink(*parent, *ino, name)?,
            Tag::AddRange { ino, extent } => r.add_range(*ino, extent)?,
            Tag::DelRange { ino, lblk, len } => r.del_range(*ino, *lblk, *len)?,
            Tag::Inode { ino, raw } => r.inode(*ino, raw)?,
            Tag::Tail { .. } => r.flush(Ino::NONE)?,
            Tag::Head { .. } | Tag::Pad => {}
            Tag::Unknown(t) => return Err(format!("fast-commit tag {t}")),
        }
    }
    r.finish(pre_gd)?;
    Ok(r.st.map)
}

fn io(e: crate::error::Error) -> Unsupported {
    e.to_string()
}

/// ext2fs_new_block: the first free block from `goal` to the end, then
/// from the first data block.
fn first_free(blocks: &Bits, first: u64, count: u64, goal: u64) -> Option<u64> {
    let goal = if goal == 0 || goal >= count {
        first
    } else {
        goal
    };
    (goal..count).chain(first..goal).find(|&b| !blocks.get(b))
}

impl Replay<'_> {
    fn uninit_bg(&self) -> bool {
        self.fs.uninit_bg()
    }

    /// The bitmaps as libext2fs reads them: BLOCK_UNINIT groups (with a
    /// good descriptor checksum) as their own metadata, INODE_UNINIT
    /// groups as empty; checksum errors ignored.
    fn read_bitmaps(&mut self) -> Result<(), Unsupported> {
        let fs = self.fs;
        let geo = &fs.geo;
        let trusted = |g: u32, f: u16| {
            fs.uninit_bg() && fs.gd_at(Group(g)).has_flag(f) && fs.gd_checksum_ok(g)
        };
        let view = fs.uninit_view(|g| trusted(g, BG_BLOCK_UNINIT));
        for g in 0..geo.groups {
            let first = geo.group_first_block(g);
            let n = u64::from(geo.group_blocks(g));
            if trusted(g, BG_BLOCK_UNINIT) {
                for b in first..first + n {
                    let c = Blk(b).cluster(geo.cluster_bits);
                    self.blocks.set(b, view.as_ref().is_some_and(|m| m.get(c)));
                }
            } else {
                let bm = read_block(fs, &self.st, fs.gd_at(Group(g)).block_bitmap).map_err(io)?;
                for i in 0..n {
                    self.blocks.set(first + i, bitmap::test(&bm, i));
                }
            }
            let ipg = geo.inodes_per_group;
            let ifirst = u64::from(g) * u64::from(ipg) + 1;
            if !trusted(g, BG_INODE_UNINIT) {
                let bm = read_block(fs, &self.st, fs.gd_at(Group(g)).inode_bitmap).map_err(io)?;
                for i in 0..u64::from(ipg) {
                    self.inodes.set(ifirst + i, bitmap::test(&bm, i));
                }
            }
        }
        Ok(())
    }

    fn mark_range(&mut self, pblk: u64, len: u64, v: bool) {
        for b in pblk..pblk.saturating_add(len).min(self.fs.geo.blocks_count) {
            self.blocks.set(b, v);
        }
    }

    fn inode_raw(&self, ino: Ino) -> Result<Vec<u8>, Unsupported> {
        read_inode(self.fs, &self.st, ino)
            .map_err(io)?
            .ok_or_else(|| format!("inode {ino} outside the inode tables"))
    }

    fn write_inode(&mut self, ino: Ino, raw: &[u8]) -> Result<(), Unsupported> {
        edit::write_inode(self.fs, &mut self.st, ino, raw).map_err(io)?;
        Ok(())
    }

    fn inode_seed(&self, ino: Ino, raw: &[u8]) -> Option<u32> {
        self.fs.metadata_csum().then(|| {
            inode_csum_seed(
                self.fs.csum_seed,
                ino,
                crate::fs::bytes::le32(raw, field::I_GENERATION),
            )
        })
    }

    // ---- extent trees ----

    /// The extents of an extent inode's tree (leaves in order) and its
    /// blocks below the root. An inode whose i_block is all zero reads as
    /// an empty tree (libext2fs opens it so); any other non-extent inode
    /// is not modelled.
    fn load_tree(&self, ino: Ino, raw: &[u8]) -> Result<Tree, Unsupported> {
        let iblock = &raw[field::I_BLOCK..field::I_BLOCK + field::I_BLOCK_LEN];
        let fl = InodeMutRead(raw).flags();
        if fl & flags::EXTENTS == 0 {
            if iblock.iter().all(|&b| b == 0) {
                return Ok(Tree::default());
            }
            return Err(format!("inode {ino} is not extent-mapped"));
        }
        let mut t = Tree::default();
        let depth = extent::parse_header(iblock).depth;
        self.walk_node(ino, iblock, depth, &mut t)?;
        Ok(t)
    }

    /// Walks `node`, `depth` levels above the leaves: counted down from
    /// the root's depth, as libext2fs counts, a child's own depth field
    /// unread.
    fn walk_node(
        &self,
        ino: Ino,
        node: &[u8],
        depth: u16,
        t: &mut Tree,
    ) -> Result<(), Unsupported> {
        let h = extent::parse_header(node);
        let cap = narrow::sat16(node.len().saturating_sub(extent::HEADER_LEN) / extent::ENTRY_LEN);
        if h.magic != EXTENT_MAGIC || h.entries > h.max || h.max > cap || depth > extent::MAX_DEPTH
        {
            return Err(format!("inode {ino} has a damaged extent tree"));
        }
        let before = t.leaves.len();
        for i in 0..usize::from(h.entries) {
            if depth == 0 {
                let e = extent::parse_leaf(node, i);
                t.leaves.push(Ext {
                    lblk: u64::from(e.lblk),
                    len: u64::from(e.len),
                    pblk: e.pblk,
                    uninit: e.unwritten,
                });
            } else {
                let ix = extent::parse_index(node, i);
                if !self.fs.geo.block_in_fs(ix.leaf) || t.nodes.len() > 1 << 20 {
                    return Err(format!("inode {ino} has a damaged extent tree"));
                }
                t.nodes.push(ix.leaf);
                let b = read_block(self.fs, &self.st, ix.leaf).map_err(io)?;
                self.walk_node(ino, &b, depth - 1, t)?;
            }
        }
        // libext2fs counts an index node when it first meets an extent
        // below it.
        if depth > 0 && t.leaves.len() > before {
            t.counted_nodes += 1;
        }
        Ok(())
    }

    /// Loads inode `ino`'s extents into the list (e2fsck_read_extents):
    /// tree blocks are freed, physically adjacent extents joined.
    fn read_extents(&mut self, ino: Ino) -> Result<(), Unsupported> {
        if self.list.as_ref().is_some_and(|l| l.ino == ino) {
            return Ok(());
        }
        let raw = self.inode_raw(ino)?;
        let tree = self.load_tree(ino, &raw)?;
        for &b in &tree.nodes {
            self.blocks.set(b, false);
        }
        let mut extents: Vec<Ext> = Vec::new();
        for e in tree.leaves {
            if let Some(last) = extents.last_mut() {
                let end = last.pblk + last.len;
                if last.lblk + last.len == e.lblk
                    && end == e.pblk
                    && last.uninit == e.uninit
                    && end < 1 << 32
                {
                    last.len += e.len;
                    continue;
                }
            }
            extents.push(e);
        }
        self.list = Some(List { ino, extents });
        Ok(())
    }

    /// Writes the pending list back unless it belongs to `ino` (0: always).
    fn flush(&mut self, ino: Ino) -> Result<(), Unsupported> {
        match &self.list {
            Some(l) if l.ino != ino => {}
            _ => return Ok(()),
        }
        let Some(list) = self.list.take() else {
            return Ok(());
        };
        self.rewrite_tree(list)
    }

    /// e2fsck_rewrite_extent_tree: a new tree holding the list, then
    /// i_blocks counted from it.
    fn rewrite_tree(&mut self, list: List) -> Result<(), Unsupported> {
        let ino = list.ino;
        let mut raw = self.inode_raw(ino)?;
        let fl = InodeMutRead(&raw).flags();
        if fl & flags::INLINE_DATA != 0 {
            return Ok(());
        }
        // Extents longer than an entry holds are split.
        let mut out: Vec<Extent> = Vec::new();
        for e in list.extents.iter().filter(|e| e.len > 0) {
            let max = if e.uninit {
                u64::from(INIT_MAX_LEN) - 1
            } else {
                u64::from(INIT_MAX_LEN)
            };
            let mut done = 0;
            while done < e.len {
                let n = (e.len - done).min(max);
                let lblk = u32::try_from(e.lblk + done)
                    .map_err(|_| format!("inode {ino}: logical block past 2^32"))?;
                out.push(Extent {
                    lblk,
                    len: narrow::sat32(n),
                    pblk: e.pblk + done,
                    unwritten: e.uninit,
                });
                done += n;
            }
        }
        let seed = self.inode_seed(ino, &raw);
        let geo = &self.fs.geo;
        let blocks = &mut self.blocks;
        let grown = extent_append::grow(&out, self.fs.block_size(), seed, |goal| {
            let b = first_free(blocks, geo.first_data_block, geo.blocks_count, goal)?;
            blocks.set(b, true);
            Some(b)
        })
        .map_err(|why| format!("inode {ino}: {why}"))?;
        for (b, data) in &grown.blocks {
            self.st.map.insert(*b, data.clone());
        }
        raw[field::I_BLOCK..field::I_BLOCK + field::I_BLOCK_LEN].copy_from_slice(&grown.root);
        let mut m = InodeMut(&mut raw);
        m.set_flags(fl | flags::EXTENTS);
        let count = out.iter().map(|e| u64::from(e.len)).sum::<u64>() + grown.counted_tree_blocks();
        self.set_iblocks(&mut raw, count);
        self.write_inode(ino, &raw)
    }

    /// ext2fs_iblk_set: `count` file system blocks.
    fn set_iblocks(&self, raw: &mut [u8], count: u64) {
        let huge = self.fs.sb.has_ro_compat(ro_compat::HUGE_FILE);
        let mut m = InodeMut(raw);
        let units = if huge && m.flags() & flags::HUGE_FILE != 0 {
            count
        } else {
            count * self.fs.geo.block_sectors()
        };
        m.set_blocks(units, huge);
    }

    /// ext4_modify_extent_list: punches `ex`'s logical range out of the
    /// list (freeing what it unmaps), adds `ex` unless deleting, joins
    /// neighbours and marks every mapped block in use.
    fn modify(&mut self, ex: Ext, del: bool) {
        let Some(mut list) = self.list.take() else {
            return;
        };
        let l = &mut list.extents;
        let mut i = 0;
        while i < l.len() {
            let e = l[i];
            if e.end() < ex.lblk {
                i += 1;
                continue;
            }
            if e.lblk > ex.end() {
                break;
            }
            self.mark_range(e.pblk, e.len, false);
            if e.lblk < ex.lblk && e.end() > ex.end() {
                let off = ex.end().wrapping_add(1).wrapping_sub(e.lblk);
                let tail = Ext {
                    lblk: e.lblk.wrapping_add(off),
                    pblk: e.pblk.wrapping_add(off),
                    len: e.len.wrapping_sub(off),
                    uninit: e.uninit,
                };
                l.insert(i + 1, tail);
                l[i].len = ex.lblk - e.lblk;
                break;
            }
            if ex.lblk <= e.lblk && e.end() <= ex.end() {
                l[i].len = 0;
                i += 1;
                continue;
            }
            if e.end() > ex.end() {
                let off = ex.end().wrapping_add(1).wrapping_sub(e.lblk);
                l[i].lblk = e.lblk.wrapping_add(off);
                l[i].pblk = e.pblk.wrapping_add(off);
                l[i].len = e.len.wrapping_sub(off);
                break;
            }
            l[i].len = ex.lblk.saturating_sub(e.lblk);
            i += 1;
        }
        if ex.len != 0 && !del {
            l.push(ex);
        }
        l.retain(|e| e.len != 0);
        l.sort_by_key(|e| (e.lblk, e.len));
        let mut merged: Vec<Ext> = Vec::with_capacity(l.len());
        for e in l.drain(..) {
            if let Some(last) = merged.last_mut()
                && last.end().wrapping_add(1) == e.lblk
                && last.pend().wrapping_add(1) == e.pblk
                && last.uninit == e.uninit
            {
                last.len += e.len;
                continue;
            }
            merged.push(e);
        }
        *l = merged;
        for e in l.iter() {
            let (p, n) = (e.pblk, e.len);
            self.mark_range(p, n, true);
        }
        self.list = Some(list);
    }

    fn add_range(&mut self, ino: Ino, e: &Extent) -> Result<(), Unsupported> {
        self.flush(ino)?;
        self.read_extents(ino)?;
        self.modify(
            Ext {
                lblk: u64::from(e.lblk),
                len: u64::from(e.len),
                pblk: e.pblk,
                uninit: e.unwritten,
            },
            false,
        );
        Ok(())
    }

    fn del_range(&mut self, ino: Ino, lblk: u32, len: u32) -> Result<(), Unsupported> {
        self.flush(ino)?;
        self.read_extents(ino)?;
        self.modify(
            Ext {
                lblk: u64::from(lblk),
                len: u64::from(len),
                pblk: 0,
                uninit: false,
            },
            true,
        );
        Ok(())
    }

    // ---- inodes ----

    fn inode(&mut self, ino: Ino, fc: &[u8]) -> Result<(), Unsupported> {
        let isz = self.fs.geo.inode_len();
        let mut len = GOOD_OLD_INODE_SIZE;
        if isz > GOOD_OLD_INODE_SIZE {
            let extra = usize::from(crate::fs::bytes::le16(fc, field::I_EXTRA_ISIZE));
            if extra < 4 || extra > isz - GOOD_OLD_INODE_SIZE {
                return Err(format!("fast-commit inode {ino} has a bad extra size"));
            }
            len += extra;
        }
        if fc.len() < len {
            return Err(format!("fast-commit inode {ino} is short"));
        }
        self.flush(ino)?;
        let mut raw = self.inode_raw(ino)?;
        raw[..field::I_BLOCK].copy_from_slice(&fc[..field::I_BLOCK]);
        raw[field::I_GENERATION..len].copy_from_slice(&fc[field::I_GENERATION..len]);
        let fl = InodeMutRead(&raw).flags();
        let ib = field::I_BLOCK..field::I_BLOCK + field::I_BLOCK_LEN;
        if fl & flags::EXTENTS != 0 {
            if extent::parse_header(&raw[ib.clone()]).magic != EXTENT_MAGIC {
                extent::put_header(&mut raw[ib.clone()], 0, ROOT_MAX, 0);
                raw[ib.start + 8..ib.start + 12].fill(0);
            }
        } else if fl & flags::INLINE_DATA != 0 {
            raw[ib.clone()].copy_from_slice(&fc[ib.clone()]);
        }
        // ext2fs_count_blocks opens the extent tree, which gives an inode
        // with an empty i_block an empty root.
        if fl & flags::EXTENTS == 0 {
            if raw[ib.clone()].iter().any(|&b| b != 0) {
                return Err(format!(
                    "fast-commit inode {ino} is not extent-mapped (e2fsck's replay fails)"
                ));
            }
            extent::put_header(&mut raw[ib.clone()], 0, ROOT_MAX, 0);
            InodeMut(&mut raw).set_flags(fl | flags::EXTENTS);
        }
        let tree = self.load_tree(ino, &raw)?;
        let count = tree.leaves.iter().map(|e| e.len).sum::<u64>() + tree.counted_nodes;
        self.set_iblocks(&mut raw, count);
        self.write_inode(ino, &raw)?;
        let links = InodeMutRead(&raw).links();
        self.inodes.set(ino.bit(), links != 0);
        Ok(())
    }

    // ---- directories ----

    /// The parent's directory blocks in logical order, with the seed of
    /// their checksums.
    fn dir_blocks(&self, parent: Ino) -> Result<(Vec<u64>, Vec<u8>), Unsupported> {
        let raw = self.inode_raw(parent)?;
        let mode = InodeMutRead(&raw).mode();
        if mode & S_IFMT != S_IFDIR {
            return Err(format!("fast-commit parent {parent} is not a directory"));
        }
        let leaves = self.load_tree(parent, &raw)?.leaves;
        let mut out = Vec::new();
        for e in leaves {
            if e.uninit {
                continue;
            }
            for k in 0..e.len {
                if out.len() > 1 << 20 {
                    return Err(format!("directory {parent} is too large"));
                }
                out.push(e.pblk + k);
            }
        }
        Ok((out, raw))
    }

    fn write_dir_block(&mut self, blk: u64, mut b: Vec<u8>, dir_raw: &[u8], dir: Ino) {
        if let Some(seed) = self.inode_seed(dir, dir_raw)
            && dir_entry::has_tail(&b)
        {
            dir_entry::set_tail_checksum(seed, &mut b);
        }
        self.st.map.insert(blk, b);
    }

    /// The entries of a directory block as libext2fs iterates them
    /// (including empty ones, the checksum tail left out): (offset,
    /// rec_len, inode, name_len, name).
    fn entries(&self, b: &[u8], dir: Ino) -> Result<Vec<(usize, usize, Ino, usize)>, Unsupported> {
        let bs = b.len();
        let csum = self.fs.metadata_csum();
        let filetype = self.fs.sb.has_incompat(incompat::FILETYPE);
        let mut out = Vec::new();
        let mut off = 0;
        while off < bs {
            let e = dir_entry::read_entry(b, off, filetype)
                .map_err(|_| format!("directory {dir} has a damaged block"))?;
            if e.rec_len < 8 || off + e.rec_len > bs {
                return Err(format!("directory {dir} has a damaged block"));
            }
            let is_tail =
                csum && e.inode == 0 && off == bs - dir_entry::TAIL_LEN && e.rec_len == 12;
            if !is_tail {
                out.push((off, e.rec_len, Ino(e.inode), e.name_len));
            }
            off += e.rec_len;
        }
        Ok(out)
    }

    /// ext2fs_unlink: removes the first entry named `name` (naming `ino`
    /// unless `force`, any used entry then). False when none was found.
    fn remove_name(
        &mut self,
        parent: Ino,
        name: &[u8],
        ino: Ino,
        force: bool,
    ) -> Result<bool, Unsupported> {
        let (blocks, raw) = self.dir_blocks(parent)?;
        for blk in blocks {
            let mut b = read_block(self.fs, &self.st, blk).map_err(io)?;
            let ents = self.entries(&b, parent)?;
            for (k, &(off, rec_len, inode, name_len)) in ents.iter().enumerate() {
                if name_len != name.len() || b.get(off + 8..off + 8 + name_len) != Some(name) {
                    continue;
                }
                if !force && ino != Ino::NONE {
                    if inode != ino {
                        continue;
                    }
                } else if inode == Ino::NONE {
                    continue;
                }
                if off != 0 && k > 0 {
                    let (poff, prec, _, _) = ents[k - 1];
                    dir_entry::put_rec_len(&mut b, poff, prec + rec_len);
                } else {
                    b[off..off + 4].fill(0);
                }
                self.write_dir_block(blk, b, &raw, parent);
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn unlink(&mut self, parent: Ino, ino: Ino, name: &[u8]) -> Result<(), Unsupported> {
        self.flush(ino)?;
        if !self.remove_name(parent, name, ino, false)? {
            return Err(format!(
                "fast-commit unlink of a name missing from directory {parent} \
                 (e2fsck's replay stops there)"
            ));
        }
        Ok(())
    }

    fn link(&mut self, parent: Ino, ino: Ino, name: &[u8]) -> Result<(), Unsupported> {
        self.flush(Ino::NONE)?;
        let raw = self.inode_raw(ino)?;
        let ft = match InodeMutRead(&raw).mode() & S_IFMT {
            S_IFREG => 1,
            S_IFDIR => 2,
            S_IFCHR => 3,
            S_IFBLK => 4,
            // e2fsck's replay returns before linking a symlink.
            S_IFLNK => return Ok(()),
            S_IFIFO => 5,
            S_IFSOCK => 6,
            _ => {
                return Err(format!(
                    "fast-commit link of inode {ino} of unknown type (e2fsck's replay stops)"
                ));
            }
        };
        self.remove_name(parent, name, ino, true)?;
        if name.is_empty() || name.len() > 255 {
            return Err(format!("fast-commit name of {} bytes", name.len()));
        }
        let filetype = self.fs.sb.has_incompat(incompat::FILETYPE);
        let (blocks, dir_raw) = self.dir_blocks(parent)?;
        let indexed = InodeMutRead(&dir_raw).flags() & flags::INDEX != 0;
        // An indexed directory takes the name only in the leaf its hash
        // leads to (libext2fs' dx_link), any other in its first block
        // with room.
        let candidates = if indexed {
            vec![self.dx_leaf(parent, &dir_raw, name)?]
        } else {
            blocks
        };
        let slot = Slot {
            parent,
            ino,
            name,
            ftype: if filetype { ft } else { 0 },
            need: dir_entry::rec_len_for(name.len()),
            csum_size: if self.fs.metadata_csum() {
                dir_entry::TAIL_LEN
            } else {
                0
            },
            dir_raw,
        };
        for blk in candidates {
            if self.link_in_block(blk, &slot)? {
                return Ok(());
            }
        }
        if indexed {
            return Err(format!(
                "fast-commit link into a full leaf of indexed directory {parent} is not modelled"
            ));
        }
        Err(format!(
            "no room in directory {parent} for a fast-commit link (e2fsck's replay stops)"
        ))
    }

    /// libext2fs' link walk over one directory block: an unused entry
    /// absorbs an unused successor; a used one with slack is split, and
    /// the new empty entry is taken on the next step. Whether the name
    /// went in (the block is written when it changed either way).
    fn link_in_block(&mut self, blk: u64, slot: &Slot<'_>) -> Result<bool, Unsupported> {
        let mut b = read_block(self.fs, &self.st, blk).map_err(io)?;
        let bs = b.len();
        let mut changed = false;
        let mut off = 0;
        // libext2fs' link walk: an unused entry absorbs an unused
        // successor; a used one with slack is split, and the new
        // empty entry is taken on the next step.
        while off < bs {
            let ents = self.entries(&b, slot.parent)?;
            let Some(&(_, mut cur, inode, name_len)) = ents.iter().find(|e| e.0 == off) else {
                break;
            };
            let next = off + cur;
            if next < bs - (8 + slot.csum_size) && inode_at(&b, next) == Ino::NONE {
                let nrec = rec_len_at(&b, next, bs);
                if next + nrec <= bs {
                    cur += nrec;
                    dir_entry::put_rec_len(&mut b, off, cur);
                    changed = true;
                }
            }
            if inode != Ino::NONE {
                let min = dir_entry::rec_len_for(name_len);
                if cur >= min + slot.need {
                    dir_entry::put_rec_len(&mut b, off, min);
                    let n = off + min;
                    set_inode_at(&mut b, n, Ino::NONE);
                    set_name_len_at(&mut b, n, 0);
                    set_file_type_at(&mut b, n, 0);
                    dir_entry::put_rec_len(&mut b, n, cur - min);
                    changed = true;
                }
                off += rec_len_at(&b, off, bs);
                continue;
            }
            if cur < slot.need {
                off += cur;
                continue;
            }
            set_inode_at(&mut b, off, slot.ino);
            dir_entry::put_name(&mut b, off, slot.name, Some(slot.ftype));
            self.write_dir_block(blk, b, &slot.dir_raw, slot.parent);
            return Ok(true);
        }
        if changed {
            self.write_dir_block(blk, b, &slot.dir_raw, slot.parent);
        }
        Ok(false)
    }

    /// The physical block of logical block `lblk` of directory `dir`.
    fn dir_block_at(&self, dir: Ino, raw: &[u8], lblk: u64) -> Result<u64, Unsupported> {
        self.load_tree(dir, raw)?
            .leaves
            .iter()
            .find(|e| !e.uninit && e.lblk <= lblk && lblk < e.lblk + e.len)
            .map(|e| e.pblk + (lblk - e.lblk))
            .ok_or_else(|| format!("indexed directory {dir} has no block {lblk}"))
    }

    /// The leaf block of indexed directory `dir` that `name` hashes to,
    /// found as libext2fs' dx_lookup finds it: at each index level the
    /// last entry whose hash is not above the name's.
    fn dx_leaf(&self, dir: Ino, raw: &[u8], name: &[u8]) -> Result<u64, Unsupported> {
        let unmodelled =
            || format!("fast-commit link into indexed directory {dir} is not modelled");
        if InodeMutRead(raw).flags() & flags::CASEFOLD != 0 {
            return Err(unmodelled());
        }
        let mut node =
            read_block(self.fs, &self.st, self.dir_block_at(dir, raw, 0)?).map_err(io)?;
        let info = htree::parse_root_info(&node);
        let max_levels = if self.fs.sb.has_incompat(incompat::LARGEDIR) {
            htree::MAX_LEVELS_LARGEDIR
        } else {
            htree::MAX_LEVELS
        };
        if info.hash_version > DX_HASH_TEA || info.indirect_levels >= max_levels {
            return Err(unmodelled());
        }
        let version = if self.fs.sb.unsigned_hash() {
            info.hash_version + 3
        } else {
            info.hash_version
        };
        let hash = dx_hash(name, version, &self.fs.sb.hash_seed)
            .ok_or_else(unmodelled)?
            .0;
        let mut off = htree::root_count_offset(&info);
        let mut level = 0;
        loop {
            let count = usize::from(htree::parse_count_limit(&node, off).count);
            let (mut p, mut q) = (1usize, count.saturating_sub(1));
            while p <= q {
                let m = p + (q - p) / 2;
                if htree::dx_entry(&node, off, m).0 > hash {
                    q = m - 1;
                } else {
                    p = m + 1;
                }
            }
            let child = u64::from(htree::dx_entry(&node, off, p - 1).1 & 0x0fff_ffff);
            let blk = self.dir_block_at(dir, raw, child)?;
            if level == info.indirect_levels {
                return Ok(blk);
            }
            node = read_block(self.fs, &self.st, blk).map_err(io)?;
            off = htree::NODE_COUNT_OFFSET;
            level += 1;
        }
    }

    // ---- the end: summary, bitmaps, descriptors ----

    fn finish(&mut self, pre_gd: &[u8]) -> Result<(), Unsupported> {
        self.flush(Ino::NONE)?;
        let fs = self.fs;
        let geo = &fs.geo;
        let bs = fs.block_size();
        let bpg = u64::from(geo.blocks_per_group);
        let ipg = geo.inodes_per_group;
        let csum_flag = self.uninit_bg();
        let wide = geo.desc_size >= 64;
        let mut table = pre_gd.to_vec();
        let ds = geo.desc_len();
        let mut free_blocks_total = 0u64;
        let mut free_inodes_total = 0u64;
        for g in 0..geo.groups {
            let first = geo.group_first_block(g);
            let n = u64::from(geo.group_blocks(g));
            let used_blocks = (first..first + n).filter(|&b| self.blocks.get(b)).count() as u64;
            let free_b = n - used_blocks;
            free_blocks_total += free_b;
            let ifirst = u64::from(g) * u64::from(ipg) + 1;
            let last_used = (0..u64::from(ipg))
                .rev()
                .find(|&i| self.inodes.get(ifirst + i))
                .map(|i| i + 1);
            let used_i = (0..u64::from(ipg))
                .filter(|&i| self.inodes.get(ifirst + i))
                .count() as u64;
            let free_i = u64::from(ipg) - used_i;
            free_inodes_total += free_i;
            let last_group = g + 1 == geo.groups;
            let Some(raw) = table.get_mut(Group(g).index() * ds..(Group(g).index() + 1) * ds)
            else {
                continue;
            };
            let mut d = DescMut(raw);
            d.set_free_blocks(narrow::sat32(free_b));
            let mut fl = d.flags();
            if used_blocks == 0 && !last_group {
                fl |= BG_BLOCK_UNINIT;
            } else {
                fl &= !BG_BLOCK_UNINIT;
            }
            d.set_free_inodes(narrow::sat32(free_i));
            // ext2fs_set_gdt_csum then settles the inode marks.
            if csum_flag {
                if free_b == bpg && !last_group {
                    fl |= BG_BLOCK_UNINIT;
                }
                if free_i == u64::from(ipg) {
                    fl |= BG_INODE_UNINIT;
                    d.set_itable_unused(ipg);
                } else {
                    fl &= !BG_INODE_UNINIT;
                    d.set_itable_unused(ipg - narrow::sat32(last_used.unwrap_or(0)));
                }
            } else if let Some(lu) = last_used {
                fl &= !BG_INODE_UNINIT;
                d.set_itable_unused(ipg - narrow::sat32(lu % u64::from(ipg)));
            } else {
                fl |= BG_INODE_UNINIT;
                d.set_itable_unused(0);
            }
            d.set_flags(fl);
            // The bitmaps, written unless the group stays uninit.
            if !(csum_flag && fl & BG_BLOCK_UNINIT != 0) {
                let nbytes = (bpg / 8) as usize;
                let mut bm = vec![0xFFu8; bs];
                for i in 0..bpg.min(bs as u64 * 8) {
                    let b = first + i;
                    let used = if b < geo.blocks_count {
                        self.blocks.get(b)
                    } else {
                        true
                    };
                    if !used {
                        bitmap::clear(&mut bm, i);
                    }
                }
                if csum_flag {
                    d.set_block_bitmap_csum(group_desc::bitmap_checksum(
                        &fs.sb,
                        &bm[..nbytes.min(bs)],
                        wide,
                    ));
                }
                let loc = fs.gd_at(Group(g)).block_bitmap;
                if loc != 0 && loc < geo.blocks_count {
                    self.st.map.insert(loc, bm);
                }
            }
            if !(csum_flag && fl & BG_INODE_UNINIT != 0) {
                let nbytes = (ipg / 8) as usize;
                let mut bm = vec![0xFFu8; bs];
                for i in 0..u64::from(ipg).min(bs as u64 * 8) {
                    if !self.inodes.get(ifirst + i) {
                        bitmap::clear(&mut bm, i);
                    }
                }
                if csum_flag {
                    d.set_inode_bitmap_csum(group_desc::bitmap_checksum(
                        &fs.sb,
                        &bm[..nbytes.min(bs)],
                        wide,
                    ));
                }
                let loc = fs.gd_at(Group(g)).inode_bitmap;
                if loc != 0 && loc < geo.blocks_count {
                    self.st.map.insert(loc, bm);
                }
            }
            d.set_checksum(&fs.sb, g);
        }
        write_desc_table(fs, &mut self.st, fs.sb_block, &table, None).map_err(io)?;
        let is_64 = fs.sb.is_64bit();
        edit::edit_superblock(fs, &mut self.st, |sb| {
            sb.set_free_blocks(free_blocks_total, is_64);
            sb.set_free_inodes(narrow::sat32(free_inodes_total));
        })
        .map_err(io)?;
        Ok(())
    }
}

/// Read-only accessors over raw inode bytes.
struct InodeMutRead<'a>(&'a [u8]);

impl InodeMutRead<'_> {
    fn flags(&self) -> u32 {
        crate::fs::bytes::le32(self.0, field::I_FLAGS)
    }
    fn mode(&self) -> u16 {
        crate::fs::bytes::le16(self.0, field::I_MODE)
    }
    fn links(&self) -> u16 {
        crate::fs::bytes::le16(self.0, field::I_LINKS_COUNT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::superblock::{self, Opened};
    use crate::io::Device;
    use crate::testfs::{Image, options};

    /// The first blocks of the free ranges dumpe2fs lists for group `g`
    /// ("Free blocks: a-b, c, ..."), as (first, last) pairs.
    fn free_ranges(dump: &str, g: u32) -> Vec<(u64, u64)> {
        let group = dump
            .split(&format!("Group {g}: "))
            .nth(1)
            .expect("no such group");
        let line = group
            .lines()
            .find_map(|l| l.trim().strip_prefix("Free blocks:"))
            .expect("no free blocks line");
        line.split(',')
            .filter_map(|r| {
                let r = r.trim();
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                Some((a.parse().ok()?, b.parse().ok()?))
            })
            .collect()
    }

    /// A BLOCK_UNINIT group on bigalloc is read as libext2fs reads it:
    /// the clusters of its superblock backup and descriptor copies in use,
    /// the rest free. The uninit view is a map of clusters: looked up with
    /// a block number, it named the wrong cluster and read every block of
    /// the group as free.
    #[test]
    fn block_uninit_group_on_bigalloc_reads_by_cluster() {
        let img = Image::new("64M", &["-O", "bigalloc", "-b", "1024", "-C", "4096"]);
        img.debugfs("set_bg 1 flags 3\nset_bg 1 checksum calc\n");
        let dump = img.dumpe2fs();
        assert!(dump.contains("BLOCK_UNINIT"), "{dump}");
        let free = free_ranges(&dump, 1);
        let Opened::Fs(fs, _) =
            superblock::open(Device::from_bytes(img.bytes()), &options(1)).unwrap()
        else {
            panic!("the image does not open");
        };
        assert_eq!(fs.geo.cluster_bits, 2);
        let mut r = Replay {
            fs: &fs,
            st: Blocks::new(fs.geo.block_size),
            blocks: Bits::new(fs.geo.blocks_count),
            inodes: Bits::new(u64::from(fs.geo.inodes_count) + 1),
            list: None,
        };
        r.read_bitmaps().unwrap();
        let first = fs.geo.group_first_block(1);
        let end = first + u64::from(fs.geo.group_blocks(1));
        let mut used = 0;
        // dumpe2fs names each cluster by its first block.
        for b in (first..end).step_by(4) {
            let is_free = free.iter().any(|&(a, z)| (a..=z).contains(&b));
            assert_eq!(r.blocks.get(b), !is_free, "block {b}");
            used += u64::from(!is_free);
        }
        assert!(used > 0, "group 1 holds a superblock backup");
    }
}
