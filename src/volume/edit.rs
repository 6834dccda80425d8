//! Reading and editing through the staged writes: blocks, byte ranges,
//! inodes (with their checksum), the superblock and the group descriptor
//! table (with theirs). Every edit stages the block only when its bytes
//! change.

use super::{Fs, Stage};
use crate::error::{Error, Result};
use crate::fs::group_desc::DescMut;
use crate::fs::inode::InodeMut;
use crate::fs::num::{Blk, Group, Ino};
use crate::fs::superblock::{
    STATE_VALID, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE, SuperblockMut, incompat,
};
use crate::narrow::to_usize;

/// Block `blk` as the staged writes leave it.
pub fn read_block<S: Stage + ?Sized>(fs: &Fs, st: &S, blk: u64) -> Result<Vec<u8>> {
    let bs = u64::from(fs.geo.block_size);
    let off = blk
        .checked_mul(bs)
        .ok_or_else(|| Error::Corrupt(format!("block {blk} is beyond the addressable range")))?;
    let mut buf = vec![0u8; fs.block_size()];
    st.read_at(&fs.dev, off, &mut buf)?;
    Ok(buf)
}

/// Reads `len` bytes at `offset` (inside one block) through the staged
/// writes, lets `edit` change them, and stages the block if they changed.
pub fn edit_bytes<S: Stage + ?Sized>(
    fs: &Fs,
    st: &mut S,
    offset: u64,
    len: usize,
    edit: impl FnOnce(&mut [u8]),
) -> Result<()> {
    edit_bytes_as(fs, st, offset, len, edit, false)
}

/// [`edit_bytes`] for the encoders of the superblock and the descriptor
/// table, whose blocks alone the commit writes over the primary ones.
pub fn edit_encoded_bytes<S: Stage + ?Sized>(
    fs: &Fs,
    st: &mut S,
    offset: u64,
    len: usize,
    edit: impl FnOnce(&mut [u8]),
) -> Result<()> {
    edit_bytes_as(fs, st, offset, len, edit, true)
}

fn edit_bytes_as<S: Stage + ?Sized>(
    fs: &Fs,
    st: &mut S,
    offset: u64,
    len: usize,
    edit: impl FnOnce(&mut [u8]),
    encoded: bool,
) -> Result<()> {
    let bs = u64::from(fs.geo.block_size);
    let block = offset / bs;
    let end = offset
        .checked_add(len as u64)
        .ok_or_else(|| Error::Corrupt(format!("byte range at {offset} overflows")))?;
    if len == 0 || (end - 1) / bs != block {
        return Err(Error::Corrupt(format!(
            "byte range at {offset} ({len} bytes) spans blocks"
        )));
    }
    let mut buf = read_block(fs, st, block)?;
    let start = to_usize(offset - block * bs);
    let before = buf.clone();
    edit(&mut buf[start..start + len]);
    if buf != before {
        if encoded {
            st.stage_encoded(Blk(block), buf)?;
        } else {
            st.stage(Blk(block), buf)?;
        }
    }
    Ok(())
}

/// Stages `data` as block `blk` unless the block already reads so.
pub fn stage_if_changed<S: Stage + ?Sized>(
    fs: &Fs,
    st: &mut S,
    blk: u64,
    data: Vec<u8>,
) -> Result<()> {
    if read_block(fs, st, blk)? != data {
        st.stage(Blk(blk), data)?;
    }
    Ok(())
}

/// Inode `ino` as the staged writes leave it; None when it lies outside
/// the inode tables.
pub fn read_inode<S: Stage + ?Sized>(fs: &Fs, st: &S, ino: Ino) -> Result<Option<Vec<u8>>> {
    let Some(pos) = fs.inode_offset(ino) else {
        return Ok(None);
    };
    let mut b = vec![0u8; fs.geo.inode_len()];
    st.read_at(&fs.dev, pos, &mut b)?;
    Ok(Some(b))
}

/// Lets `change` edit inode `ino` (read through the staged writes), then
/// stores its checksum with metadata_csum and stages the block. False
/// when the inode lies outside the inode tables.
pub fn edit_inode<S: Stage + ?Sized>(
    fs: &Fs,
    st: &mut S,
    ino: Ino,
    change: impl FnOnce(&mut InodeMut),
) -> Result<bool> {
    let Some(pos) = fs.inode_offset(ino) else {
        return Ok(false);
    };
    let csum = fs.metadata_csum();
    let seed = fs.csum_seed;
    edit_bytes(fs, st, pos, fs.geo.inode_len(), |b| {
        let mut m = InodeMut(b);
        change(&mut m);
        if csum {
            m.set_checksum(seed, ino);
        }
    })?;
    Ok(true)
}

/// Writes `raw` as inode `ino` (with its checksum under metadata_csum).
/// False when the inode lies outside the inode tables.
pub fn write_inode<S: Stage + ?Sized>(fs: &Fs, st: &mut S, ino: Ino, raw: &[u8]) -> Result<bool> {
    edit_inode(fs, st, ino, |m| {
        let n = raw.len().min(m.0.len());
        m.0[..n].copy_from_slice(&raw[..n]);
    })
}

/// Lets `edit` change the primary superblock (read through the staged
/// writes), then stores its checksum with metadata_csum.
pub fn edit_superblock<S: Stage + ?Sized>(
    fs: &Fs,
    st: &mut S,
    edit: impl FnOnce(&mut SuperblockMut),
) -> Result<()> {
    let csum = fs.metadata_csum();
    edit_encoded_bytes(fs, st, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE, |b| {
        let mut sb = SuperblockMut(b);
        edit(&mut sb);
        if csum {
            sb.set_checksum();
        }
    })
}

/// Byte position of group `g`'s descriptor in the table that follows the
/// superblock in use.
fn desc_offset(fs: &Fs, g: u32) -> u64 {
    let bs = u64::from(fs.geo.block_size);
    let byte = u64::from(g) * u64::from(fs.geo.desc_size);
    // desc_size <= block size, so the index is at most g.
    #[allow(clippy::cast_possible_truncation)]
    let blk = fs.geo.desc_block_location(fs.sb_block, (byte / bs) as u32);
    blk * bs + byte % bs
}

/// Lets `edit` change group `g`'s descriptor in place (read through the
/// staged writes), then stores its checksum.
pub fn edit_desc<S: Stage + ?Sized>(
    fs: &Fs,
    st: &mut S,
    g: u32,
    edit: impl FnOnce(&mut DescMut),
) -> Result<()> {
    let ds = fs.geo.desc_len();
    edit_encoded_bytes(fs, st, desc_offset(fs, g), ds, |d| {
        let mut m = DescMut(d);
        edit(&mut m);
        m.set_checksum(&fs.sb, g);
    })
}

/// A copy of the loaded descriptor table, for edits written back whole by
/// [`write_desc_table`]: `desc(g)` is group `g`'s descriptor.
pub struct DescTable {
    pub raw: Vec<u8>,
    desc_size: usize,
}

impl DescTable {
    pub fn loaded(fs: &Fs) -> DescTable {
        DescTable {
            raw: fs.gd_raw.clone(),
            desc_size: fs.geo.desc_len(),
        }
    }

    /// Group `g`'s descriptor flags as edited so far; None past the
    /// loaded groups.
    pub fn flags(&self, g: u32) -> Option<u16> {
        let ds = self.desc_size;
        let start = Group(g).index().checked_mul(ds)?;
        self.raw
            .get(start..start + ds)
            .map(crate::fs::group_desc::flags_of)
    }

    /// Group `g`'s descriptor; None past the loaded groups.
    pub fn desc(&mut self, g: u32) -> Option<DescMut<'_>> {
        let ds = self.desc_size;
        let start = Group(g).index().checked_mul(ds)?;
        self.raw.get_mut(start..start + ds).map(DescMut)
    }
}

/// Stages `table` as the descriptor table following superblock block
/// `sb_block`, block by block; with `unless_equal`, the blocks whose part
/// of the table is the same there are left alone. Table blocks outside the
/// file system are skipped, unless right after the superblock.
pub fn write_desc_table<S: Stage + ?Sized>(
    fs: &Fs,
    st: &mut S,
    sb_block: u64,
    table: &[u8],
    unless_equal: Option<&[u8]>,
) -> Result<()> {
    let bs = fs.block_size();
    for i in 0..fs.geo.desc_blocks {
        let start = (i as usize).saturating_mul(bs);
        let end = start.saturating_add(bs).min(table.len());
        if start >= end {
            break;
        }
        if unless_equal.is_some_and(|old| old.get(start..end) == Some(&table[start..end])) {
            continue;
        }
        let blk = fs.geo.desc_block_location(sb_block, i);
        if !fs.geo.block_in_fs(blk) && blk != sb_block + 1 + u64::from(i) {
            continue;
        }
        let pos = blk.checked_mul(bs as u64).ok_or_else(|| {
            Error::Corrupt(format!(
                "descriptor block {blk} lies beyond the addressable range"
            ))
        })?;
        let part = &table[start..end];
        edit_encoded_bytes(fs, st, pos, bs, |b| b[..part.len()].copy_from_slice(part))?;
    }
    Ok(())
}

/// Writes the superblock and descriptor table backups from the primary
/// (read through the staged writes), as e2fsck does after changing what
/// the backups must name too (a new journal). Backups are marked not
/// clean and without needs_recovery, which only the primary keeps;
/// descriptor backups of meta_bg groups are left alone.
pub fn write_backups<S: Stage + ?Sized>(fs: &Fs, st: &mut S) -> Result<()> {
    let geo = &fs.geo;
    let bs = fs.block_size() as u64;
    let mut sb = vec![0u8; SUPERBLOCK_SIZE];
    st.read_at(&fs.dev, SUPERBLOCK_OFFSET, &mut sb)?;
    let ndesc = if geo.meta_bg {
        geo.first_meta_bg.min(geo.desc_blocks)
    } else {
        geo.desc_blocks
    };
    let mut descs = Vec::new();
    for i in 0..ndesc {
        descs.push(read_block(fs, st, geo.desc_block_location(fs.sb_block, i))?);
    }
    for g in 1..geo.groups {
        if !geo.group_has_super(g) {
            continue;
        }
        let start = geo.group_first_block(g);
        let mut copy = sb.clone();
        let mut m = SuperblockMut(&mut copy);
        // A 16-bit field: past group 65535 the number wraps, as mke2fs and
        // e2fsck store it.
        #[allow(clippy::cast_possible_truncation)]
        m.set_block_group_nr(g as u16);
        let state = m.state() & !STATE_VALID;
        m.set_state(state);
        let inc = m.incompat() & !incompat::RECOVER;
        m.set_incompat(inc);
        if fs.metadata_csum() {
            m.set_checksum();
        }
        edit_encoded_bytes(fs, st, start * bs, SUPERBLOCK_SIZE, |b| {
            b.copy_from_slice(&copy)
        })?;
        for (i, d) in descs.iter().enumerate() {
            let blk = start + 1 + i as u64;
            if geo.block_in_fs(blk) {
                edit_encoded_bytes(fs, st, blk * bs, to_usize(bs), |b| b.copy_from_slice(d))?;
            }
        }
    }
    Ok(())
}
