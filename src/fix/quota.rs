//! Quota: superblock quota inode numbers that name no possible inode are
//! cleared, as e2fsck does; the quota type then has no file (e2fsck does
//! not create one in that run either). The usage recorded in an id's entry
//! is rewritten with what pass 1 counted.
//!
//! Not built yet: adding the entry of an id the file lacks.

use super::{edit_bytes, edit_superblock};
use crate::check::Fs;
use crate::check::blockmap::{MapVisitor, Scratch};
use crate::check::pass1;
use crate::check::problem::{Code, Problem};
use crate::check::state::State;
use crate::fs::bytes::{le32, put_le32};
use crate::fs::inode::Inode;
use crate::repair::overlay::Overlay;

// Superblock fields holding the quota inode numbers.
const S_USR_QUOTA_INUM: usize = 0x240;
const S_GRP_QUOTA_INUM: usize = 0x244;
const S_PRJ_QUOTA_INUM: usize = 0x26C;

/// Clears the field `p` (an `SbQuotaInode`) names. Returns whether it did.
pub(super) fn clear_inum(fs: &Fs, overlay: &mut Overlay, p: &Problem) -> Result<bool, String> {
    if p.code != Code::SbQuotaInode {
        return Ok(false);
    }
    let off = match p.detail.as_str() {
        "user" => S_USR_QUOTA_INUM,
        "group" => S_GRP_QUOTA_INUM,
        "project" => S_PRJ_QUOTA_INUM,
        _ => return Ok(false),
    };
    edit_superblock(fs, overlay, |sb| put_le32(sb, off, 0))?;
    Ok(true)
}

/// Rewrites the usage of the quota file entries pass 5 found wrong
/// (`QuotaUsage`: the id has an entry) with what pass 1 counted. Entries
/// are found by the id's path through the tree (one byte per level). An
/// id with no entry (`QuotaEntryMissing`) needs a new entry in the tree:
/// not built yet. Returns whether the entry was rewritten.
pub(super) fn fix_usage(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    p: &Problem,
) -> Result<bool, String> {
    let (Code::QuotaUsage, Some(id)) = (p.code, p.num) else {
        return Ok(false);
    };
    let Ok(id) = u32::try_from(id) else {
        return Ok(false);
    };
    let Some(qtype) = ["user ", "group ", "project "]
        .iter()
        .position(|n| p.detail.starts_with(n))
    else {
        return Ok(false);
    };
    let ino = [
        fs.sb.usr_quota_inum,
        fs.sb.grp_quota_inum,
        fs.sb.prj_quota_inum,
    ][qtype];
    let Some(usage) = &state.quota else {
        return Ok(false);
    };
    let want = usage.by_type[qtype].get(&id).copied().unwrap_or_default();
    let Some(file) = QuotaFile::open(fs, state, ino) else {
        return Ok(false);
    };
    // Root (quota block 1), three index levels, then the data block.
    let mut blk = 1u32;
    for depth in 0..4 {
        let Some(b) = file.read(fs, overlay, blk) else {
            return Ok(false);
        };
        let slot = ((id >> (8 * (3 - depth))) & 0xFF) as usize;
        blk = le32(&b, slot * 4);
        if blk == 0 {
            return Ok(false);
        }
    }
    let Some(data) = file.read(fs, overlay, blk) else {
        return Ok(false);
    };
    let Some(k) = (0..ENTRIES_PER_BLOCK).find(|&k| {
        let e = &data[DATA_HEADER_LEN + k * ENTRY_LEN..DATA_HEADER_LEN + (k + 1) * ENTRY_LEN];
        le32(e, 0) == id && e.iter().any(|&x| x != 0)
    }) else {
        return Ok(false);
    };
    let Some(pos) = file.position(blk) else {
        return Ok(false);
    };
    let off = pos + (DATA_HEADER_LEN + k * ENTRY_LEN) as u64;
    edit_bytes(fs, overlay, off, ENTRY_LEN, |e| {
        put_le64(e, E_CURINODES, want.inodes);
        put_le64(e, E_CURSPACE, want.space);
        // An all-zero entry reads as free: the kernel keeps one marked.
        if e.iter().all(|&x| x == 0) {
            put_le64(e, E_ITIME, 1);
        }
    })?;
    Ok(true)
}

// Quota tree layout (see fs/quota.rs).
const QUOTA_BLOCK: u64 = 1024;
const DATA_HEADER_LEN: usize = 16;
const ENTRY_LEN: usize = 72;
const ENTRIES_PER_BLOCK: usize = (QUOTA_BLOCK as usize - DATA_HEADER_LEN) / ENTRY_LEN;
// Fields of a revision 1 entry.
const E_CURINODES: usize = 24;
const E_CURSPACE: usize = 48;
const E_ITIME: usize = 64;

fn put_le64(b: &mut [u8], off: usize, v: u64) {
    put_le32(b, off, v as u32);
    put_le32(b, off + 4, (v >> 32) as u32);
}

/// A quota file's mapped runs: (logical block, physical block, length).
struct QuotaFile {
    runs: Vec<(u64, u64, u64)>,
    fs_block_size: u64,
}

impl MapVisitor for QuotaFile {
    fn data(&mut self, lblk: u64, pblk: u64, len: u64, _unwritten: bool) {
        self.runs.push((lblk, pblk, len));
    }
    fn node(&mut self, _pblk: u64) {}
    fn problem(&mut self, _p: Problem) {}
    fn done(&self) -> bool {
        self.runs.len() >= 1 << 16
    }
}

impl QuotaFile {
    fn open(fs: &Fs, state: &State, ino: u32) -> Option<QuotaFile> {
        if ino == 0 {
            return None;
        }
        let raw = fs.read_inode_raw(ino).ok()?;
        let inode = Inode::parse(&raw);
        let mut f = QuotaFile {
            runs: Vec::new(),
            fs_block_size: u64::from(fs.geo.block_size),
        };
        let ctx = pass1::Ctx::new(fs, state);
        let mut scratch = Scratch::new();
        pass1::walk_map(&ctx, ino, &inode, false, &mut scratch, &mut f).then_some(f)
    }

    /// Byte position on the device of quota block `n`.
    fn position(&self, n: u32) -> Option<u64> {
        let byte = u64::from(n) * QUOTA_BLOCK;
        let fsb = self.fs_block_size;
        let lblk = byte / fsb;
        // Runs are in file system blocks; find the one holding the byte.
        self.runs.iter().find_map(|&(l, p, len)| {
            (lblk >= l && lblk < l + len).then(|| (p + (lblk - l)) * fsb + byte % fsb)
        })
    }

    fn read(&self, fs: &Fs, overlay: &Overlay, n: u32) -> Option<Vec<u8>> {
        let pos = self.position(n)?;
        let mut b = vec![0u8; QUOTA_BLOCK as usize];
        overlay.read_at(&fs.dev, pos, &mut b).ok()?;
        Some(b)
    }
}
