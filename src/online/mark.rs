//! Recording an online check's verdict on the mounted origin.
//!
//! e2scrub marks a file system with problems as e2fsck's preen halt does
//! (`tune2fs -E force_fsck`: `s_state |= EXT2_ERROR_FS` in the primary
//! superblock), and a clean one as checked (`tune2fs -C 0 -T NOW`: mount
//! count 0, last check time). pfsck writes the same fields, and one more:
//! Linux keeps its own copy of `s_state` from mount time and writes it back
//! at a clean unmount of a read-write mount, which erases e2scrub's mark
//! (tested on 6.18: the mark survives a crash and a read-only remount,
//! not `umount`). The kernel's own record of an error that must outlive a
//! mount is the journal superblock's `s_errno`: the next mount turns it
//! into `EXT2_ERROR_FS` ("error recorded from previous mount"), and
//! e2fsck forces a full check on it. So with an internal journal pfsck
//! also sets `s_errno` to -EUCLEAN, unless it already holds an error.
//!
//! Both are written through the block device while the file system is
//! frozen: the kernel's superblock buffers are the block device's page
//! cache, so the bytes land in the very buffers the kernel writes back,
//! and nothing else writes them meanwhile. This is not the repair's
//! commit (no undo log): a mounted file system cannot have one, and these
//! are the same few bytes tune2fs writes.

use super::sys;
use super::target::Target;
use super::watchdog::Guard;
use crate::check::Fs;
use crate::fs::journal::{self, BLOCKTYPE_SB_V1, BLOCKTYPE_SB_V2, JBD2_MAGIC};
use crate::fs::superblock::{
    STATE_ERROR, SUPERBLOCK_OFFSET, Superblock, SuperblockMut, compat, ro_compat,
};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

/// What an online check records on the origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Problems found: check it (unmounted) at the next opportunity.
    Errors,
    /// A full check found nothing: mount count 0, last check time now.
    Checked,
}

/// -EUCLEAN, the kernel's "structure needs cleaning" (EFSCORRUPTED).
const ERRNO_CORRUPT: i32 = -117;

/// What the snapshot tells about the origin's layout, taken from the
/// checked snapshot (the journal does not move while mounted).
#[derive(Clone, Debug)]
pub struct Origin {
    pub uuid: [u8; 16],
    /// Byte offset of the internal journal's superblock.
    pub journal_sb: Option<u64>,
}

impl Origin {
    pub fn of(fs: &Fs) -> Origin {
        let journal_sb = (fs.sb.has_compat(compat::HAS_JOURNAL)
            && !crate::check::journal::external(fs))
        .then(|| crate::check::journal::journal_inode(fs).ok())
        .flatten()
        .and_then(|ino| crate::check::journal::first_block(fs, &ino).ok())
        .filter(|&b| fs.geo.block_in_fs(b))
        .map(|b| b * u64::from(fs.geo.block_size));
        Origin {
            uuid: fs.sb.uuid,
            journal_sb,
        }
    }
}

/// Applies `mark` to the 1024 bytes of a primary superblock, checksum
/// included. `now`: seconds since the epoch.
pub fn edit_superblock(sb: &mut [u8], mark: Mark, now: u64) {
    let csum = Superblock::parse(sb).has_ro_compat(ro_compat::METADATA_CSUM);
    let mut m = SuperblockMut(sb);
    match mark {
        Mark::Errors => {
            let st = m.state() | STATE_ERROR;
            m.set_state(st);
        }
        Mark::Checked => {
            m.set_mnt_count(0);
            m.set_lastcheck(now);
        }
    }
    if csum {
        m.set_checksum();
    }
}

/// Records an error in a journal superblock (1024 bytes); false when it
/// holds one already (kept: it is the kernel's own) or is not one.
pub fn edit_journal_superblock(j: &mut [u8]) -> bool {
    let parsed = journal::parse_superblock(j);
    if parsed.magic != JBD2_MAGIC
        || !matches!(parsed.blocktype, BLOCKTYPE_SB_V1 | BLOCKTYPE_SB_V2)
        || parsed.errno != 0
    {
        return false;
    }
    journal::set_errno(j, ERRNO_CORRUPT);
    true
}

/// What was written.
#[derive(Clone, Copy, Debug)]
pub struct Recorded {
    pub mark: Mark,
    /// The journal superblock's error number was set too.
    pub journal: bool,
    /// How long the file system was frozen for the write (None: someone
    /// else held it frozen, so pfsck wrote without its own freeze).
    pub frozen: Option<Duration>,
}

/// Writes `mark` on the mounted origin.
pub fn record(
    t: &Target,
    origin: &Origin,
    mark: Mark,
    now: u64,
    guard: &dyn Guard,
) -> Result<Recorded, String> {
    let dev_name = t.device.display();
    let dev = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&t.device)
        .map_err(|e| format!("cannot open {dev_name} to record the result: {e}"))?;
    let mount = File::open(&t.mount_point)
        .map_err(|e| format!("cannot open {}: {e}", t.mount_point.display()))?;
    guard
        .arm_thaw(&t.mount_point)
        .map_err(|e| format!("cannot reach the watchdog: {e}"))?;
    let t0 = Instant::now();
    let frozen = match sys::Frozen::take(&mount) {
        Ok(f) => Some(f),
        // Frozen by someone else: nothing writes the superblock meanwhile.
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => None,
        Err(e) => {
            let _ = guard.disarm_thaw();
            return Err(format!("cannot freeze {}: {e}", t.mount_point.display()));
        }
    };
    let written = write_marks(&dev, origin, mark, now);
    let mut window = None;
    if let Some(f) = frozen {
        f.thaw()
            .map_err(|e| format!("cannot thaw {}: {e}", t.mount_point.display()))?;
        window = Some(t0.elapsed());
    }
    let _ = guard.disarm_thaw();
    let journal = written.map_err(|e| format!("{dev_name}: {e}"))?;
    // The kernel wrote its superblock at the thaw: the mark must be in it.
    if mark == Mark::Errors {
        let mut b = vec![0u8; 1024];
        dev.read_exact_at(&mut b, SUPERBLOCK_OFFSET)
            .map_err(|e| format!("cannot read back the superblock of {dev_name}: {e}"))?;
        if Superblock::parse(&b).state & STATE_ERROR == 0 {
            return Err(format!(
                "the kernel wrote over the error mark on {dev_name}"
            ));
        }
    }
    Ok(Recorded {
        mark,
        journal,
        frozen: window,
    })
}

/// The read-modify-write of the frozen origin; true when the journal
/// superblock was marked too.
fn write_marks(dev: &File, origin: &Origin, mark: Mark, now: u64) -> Result<bool, String> {
    let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
    let mut sb = vec![0u8; 1024];
    dev.read_exact_at(&mut sb, SUPERBLOCK_OFFSET)
        .map_err(|e| io("cannot read the superblock", e))?;
    let parsed = Superblock::parse(&sb);
    if parsed.magic != 0xEF53 || parsed.uuid != origin.uuid {
        return Err("the superblock is not the checked file system's".into());
    }
    edit_superblock(&mut sb, mark, now);
    dev.write_all_at(&sb, SUPERBLOCK_OFFSET)
        .map_err(|e| io("cannot write the superblock", e))?;
    let mut journal = false;
    if let (Mark::Errors, Some(at)) = (mark, origin.journal_sb) {
        let mut j = vec![0u8; 1024];
        dev.read_exact_at(&mut j, at)
            .map_err(|e| io("cannot read the journal superblock", e))?;
        if edit_journal_superblock(&mut j) {
            dev.write_all_at(&j, at)
                .map_err(|e| io("cannot write the journal superblock", e))?;
            journal = true;
        }
    }
    dev.sync_all()
        .map_err(|e| io("cannot flush the marks", e))?;
    Ok(journal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn superblock(csum: bool) -> Vec<u8> {
        let mut sb = vec![0u8; 1024];
        sb[0x38..0x3A].copy_from_slice(&0xEF53u16.to_le_bytes());
        sb[0x3A] = 1;
        sb[0x34] = 7;
        if csum {
            sb[0x64..0x68].copy_from_slice(&ro_compat::METADATA_CSUM.to_le_bytes());
        }
        sb
    }

    #[test]
    fn errors_set_the_state_and_keep_the_checksum_right() {
        for csum in [false, true] {
            let mut sb = superblock(csum);
            edit_superblock(&mut sb, Mark::Errors, 5);
            let p = Superblock::parse(&sb);
            assert_eq!(p.state, 1 | STATE_ERROR);
            assert_eq!(p.mnt_count, 7, "only the state changes");
            if csum {
                assert_eq!(p.checksum, p.compute_checksum());
            } else {
                assert_eq!(p.checksum, 0);
            }
        }
    }

    #[test]
    fn checked_resets_the_count_and_sets_the_time() {
        let mut sb = superblock(true);
        let now = (1u64 << 32) + 1234;
        edit_superblock(&mut sb, Mark::Checked, now);
        let p = Superblock::parse(&sb);
        assert_eq!((p.mnt_count, p.lastcheck, p.state), (0, now, 1));
        assert_eq!(sb[0x277], 1, "the high byte of the time");
        assert_eq!(p.checksum, p.compute_checksum());
    }

    #[test]
    fn journal_errno_is_set_once_with_its_checksum() {
        let mut j = vec![0u8; 1024];
        j[0..4].copy_from_slice(&JBD2_MAGIC.to_be_bytes());
        j[4..8].copy_from_slice(&BLOCKTYPE_SB_V2.to_be_bytes());
        // Incompatible feature csum_v3.
        j[0x28..0x2C].copy_from_slice(&0x10u32.to_be_bytes());
        assert!(edit_journal_superblock(&mut j));
        let parsed = journal::parse_superblock(&j);
        assert_eq!(parsed.errno, ERRNO_CORRUPT);
        let mut zeroed = j.clone();
        // The checksum is the superblock's last word.
        zeroed[0xFC..0x100].fill(0);
        let c = crate::fs::checksum::crc32c_raw(!0, &zeroed);
        assert_eq!(parsed.checksum, c, "crc32c with the field zeroed");
        // A kernel error already recorded is kept.
        assert!(!edit_journal_superblock(&mut j));
        let mut not = vec![0u8; 1024];
        assert!(!edit_journal_superblock(&mut not));
    }
}
