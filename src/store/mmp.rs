//! Multiple-mount protection around a repair, as e2fsck takes it: before
//! anything is checked for a repair, the MMP block is claimed (a random
//! sequence, a wait long enough for a live node to rewrite it, then the
//! "being checked" sequence with this node's name); when the repair is
//! done it is released ("clean"). A read-only check never writes it.

use crate::fs::mmp::{self, MMP_MAGIC, Mmp, SEQ_CLEAN, SEQ_FSCK, SEQ_MAX};
use crate::fs::superblock::{SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE, Superblock, incompat};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The shortest interval a node may use between rewrites (seconds).
const MIN_INTERVAL: u16 = 5;

/// This node's name as MMP records it.
pub fn node_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// An MMP block with sequence `seq`, written now by this node for
/// `device`; `seed`: the metadata_csum seed when the block has a checksum.
pub fn block(
    block_size: usize,
    seq: u32,
    interval: u16,
    device: &str,
    seed: Option<u32>,
) -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let m = Mmp {
        magic: MMP_MAGIC,
        seq,
        time: now,
        nodename: node_name(),
        bdevname: device.to_string(),
        check_interval: interval,
        checksum: 0,
    };
    let mut b = vec![0u8; block_size];
    mmp::write(&mut b, &m, seed);
    b
}

/// The update interval of a superblock (`MIN_INTERVAL` at least).
pub fn interval(sb: &Superblock) -> u16 {
    sb.mmp_update_interval().max(MIN_INTERVAL)
}

/// A claim held on a device's MMP block.
pub struct Claim {
    path: PathBuf,
    offset: u64,
    block_size: usize,
    interval: u16,
    device: String,
    seed: Option<u32>,
}

fn read(file: &File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut b = vec![0u8; len];
    file.read_exact_at(&mut b, offset)?;
    Ok(b)
}

/// Claims the MMP block of the file system on `path` for a repair. None
/// when there is nothing to claim: no MMP, or a block the check will
/// judge first (unreadable, invalid, or held by a checker: the check
/// stops there). Err when a node is still using the file system.
pub fn claim(path: &Path) -> Result<Option<Claim>, String> {
    if super::mounted::ensure_not_mounted(path, false).is_err() {
        // The repair refuses a mounted file system before it writes.
        return Ok(None);
    }
    let io = |e: std::io::Error| format!("MMP: {}: {e}", path.display());
    let file = OpenOptions::new().read(true).open(path).map_err(io)?;
    let Ok(raw) = read(&file, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE) else {
        return Ok(None);
    };
    let sb = Superblock::parse(&raw);
    if sb.magic != crate::fs::superblock::EXT2_MAGIC || !sb.has_incompat(incompat::MMP) {
        return Ok(None);
    }
    let Some(block_size) = 1024usize
        .checked_shl(sb.log_block_size)
        .filter(|_| sb.log_block_size < 7)
        .filter(|&b| b <= 65536)
    else {
        return Ok(None);
    };
    let Some(offset) = sb.mmp_block.checked_mul(block_size as u64) else {
        return Ok(None);
    };
    let Ok(first) = read(&file, offset, block_size) else {
        return Ok(None);
    };
    let m = mmp::parse(&first);
    let seed = sb.metadata_csum().then(|| sb.csum_seed());
    if m.magic != MMP_MAGIC
        || seed.is_some_and(|s| mmp::compute_checksum(s, &first) != m.checksum)
        || m.seq == SEQ_FSCK
        || (m.seq > SEQ_MAX && m.seq != SEQ_CLEAN)
    {
        return Ok(None);
    }
    let interval = interval(&sb).max(m.check_interval);
    let wait = Duration::from_secs(2 * u64::from(interval) + 1);
    let active = || {
        "MMP: the file system is in use on another node (its MMP block changed); not repairing"
            .to_string()
    };
    if m.seq != SEQ_CLEAN {
        // A node wrote it: if it is alive it rewrites within the interval.
        std::thread::sleep(wait);
        if read(&file, offset, block_size).map_err(io)? != first {
            return Err(active());
        }
    }
    let device = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let c = Claim {
        path: path.to_path_buf(),
        offset,
        block_size,
        interval,
        device,
        seed,
    };
    let mine = random_seq();
    let ours = c.write(mine)?;
    std::thread::sleep(wait);
    if read(&file, offset, block_size).map_err(io)? != ours {
        return Err(active());
    }
    c.write(SEQ_FSCK)?;
    Ok(Some(c))
}

/// A sequence number no node is likely to hold.
fn random_seq() -> u32 {
    let mut b = [0u8; 4];
    if File::open("/dev/urandom")
        .and_then(|f| f.read_exact_at(&mut b, 0))
        .is_err()
    {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        b = (t ^ std::process::id()).to_le_bytes();
    }
    u32::from_le_bytes(b) % SEQ_MAX
}

impl Claim {
    fn write(&self, seq: u32) -> Result<Vec<u8>, String> {
        let b = block(self.block_size, seq, self.interval, &self.device, self.seed);
        let io = |e: std::io::Error| format!("MMP: writing {}: {e}", self.path.display());
        let file = OpenOptions::new()
            .write(true)
            .open(&self.path)
            .map_err(io)?;
        file.write_all_at(&b, self.offset).map_err(io)?;
        file.sync_data().map_err(io)?;
        Ok(b)
    }

    /// Marks the file system free again.
    pub fn release(self) -> Result<(), String> {
        self.write(SEQ_CLEAN).map(|_| ())
    }
}
