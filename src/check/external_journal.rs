//! External journals (`-j FILE`, e2fsck's option): a journal device made
//! with `mke2fs -O journal_dev`, named by the file system's journal UUID.
//!
//! The device carries an ext2 superblock at 1024 with the journal_dev
//! feature and the journal's UUID, and the jbd2 superblock in the block
//! after it (block 2 with 1 KiB blocks, else 1); journal block numbers are
//! device block numbers. When it checks, the replay is planned with the
//! same planner as the internal journal, read from the device, and the
//! replayed blocks join the file system's read overlay; the journal
//! superblock reset lives on the other device, so a repair writes it in a
//! second commit after the file system's (`reset_block`).

use super::recovery::{self, Plan};
use crate::fs::journal::{self as jfmt, JBD2_MAGIC, JournalSuperblock};
use crate::fs::superblock::{EXT2_MAGIC, SUPERBLOCK_SIZE, Superblock, SuperblockMut, incompat};
use crate::io::Device;
use crate::narrow;
use crate::volume::Fs;
use std::path::Path;

/// A journal device that matches the file system, with its replay plan.
pub struct External {
    pub j: JournalSuperblock,
    pub plan: Plan,
    /// Device block of the jbd2 superblock.
    pub jsb_block: u64,
    /// The jbd2 superblock as read.
    pub jsb_raw: Vec<u8>,
    /// The device's own (ext2) superblock has metadata_csum and a
    /// checksum that does not match it.
    pub sb_checksum_bad: bool,
}

/// Opens the journal device at `path` read-only, checks that it is the
/// file system's journal, and plans its replay.
pub fn open(fs: &Fs, path: &Path) -> Result<External, String> {
    let dev = Device::open_read_only(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut raw = vec![0u8; 1024];
    dev.read_at(1024, &mut raw)
        .map_err(|e| format!("cannot read the journal device's superblock: {e}"))?;
    let jdev_sb = Superblock::parse(&raw);
    if jdev_sb.magic != EXT2_MAGIC || !jdev_sb.has_incompat(incompat::JOURNAL_DEV) {
        return Err(format!(
            "{} is not an external journal device",
            path.display()
        ));
    }
    if jdev_sb.uuid != fs.sb.journal_uuid {
        return Err("the external journal's UUID is not the file system's journal UUID".into());
    }
    let bs = fs.geo.block_size;
    if jdev_sb.log_block_size >= 7 || 1024u32 << jdev_sb.log_block_size != bs {
        return Err("the external journal's block size differs from the file system's".into());
    }
    let sb_checksum_bad = jdev_sb.metadata_csum() && jdev_sb.compute_checksum() != jdev_sb.checksum;
    let jsb_block = if bs == 1024 { 2 } else { 1 };
    let blocks = dev.size() / u64::from(bs);
    let read = |n: u32| -> Result<Vec<u8>, String> {
        if u64::from(n) >= blocks {
            return Err(format!("journal block {n} is past the device"));
        }
        let mut b = vec![0u8; bs as usize];
        dev.read_at(u64::from(n) * u64::from(bs), &mut b)
            .map_err(|e| e.to_string())?;
        Ok(b)
    };
    let jsb_raw = read(jsb_block)?;
    let j = jfmt::parse_superblock(&jsb_raw);
    if j.magic != JBD2_MAGIC
        || (j.blocktype != jfmt::BLOCKTYPE_SB_V1 && j.blocktype != jfmt::BLOCKTYPE_SB_V2)
    {
        return Err("the external journal's superblock is corrupt".into());
    }
    if j.blocksize != bs {
        return Err("the external journal's block size differs".into());
    }
    if j.uuid != fs.sb.journal_uuid {
        return Err("the external journal superblock's UUID does not match".into());
    }
    // s_first is not judged, as e2fsck does not: only a replay that
    // wraps uses it (`recovery`).
    if u64::from(j.maxlen) > blocks {
        return Err("the external journal's length is invalid".into());
    }
    if j.blocktype == jfmt::BLOCKTYPE_SB_V2 && j.feature_incompat & !jfmt::incompat::KNOWN != 0 {
        return Err("the external journal has unknown features".into());
    }
    let plan = recovery::plan(&j, bs, &read)?;
    Ok(External {
        j,
        plan,
        jsb_block: u64::from(jsb_block),
        jsb_raw,
        sb_checksum_bad,
    })
}

/// The block of the journal device at `path` that holds its own
/// superblock (byte 1024), with that superblock's checksum set right:
/// its device block number (in blocks of `bs` bytes) and its bytes.
pub fn superblock_fixed(path: &Path, bs: u32) -> Result<(u64, Vec<u8>), String> {
    let dev = Device::open_read_only(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let block = 1024 / u64::from(bs);
    let mut b = vec![0u8; bs as usize];
    dev.read_at(block * u64::from(bs), &mut b)
        .map_err(|e| format!("cannot read the journal device's superblock: {e}"))?;
    let at = narrow::to_usize(1024 % u64::from(bs));
    SuperblockMut(&mut b[at..at + SUPERBLOCK_SIZE]).set_checksum();
    Ok((block, b))
}

/// The journal device's superblock block as recovery leaves it: empty
/// (s_start 0) at the next sequence, checksum redone.
pub fn reset_block(ext: &External) -> Vec<u8> {
    let mut b = ext.jsb_raw.clone();
    jfmt::reset_superblock(&mut b, ext.plan.next_sequence);
    b
}
