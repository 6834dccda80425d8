//! The commit protocol and rollback.
//!
//! Commit, for the blocks staged in an overlay:
//!
//! 1. read the before-image of every changed block from the device (opened
//!    for writing only after [`mounted::ensure_not_mounted`]), write them
//!    all to `LOG.tmp` (state `Prepared`), fsync it, rename it to `LOG`,
//!    fsync the directory. Until the rename is durable the device has not
//!    been touched, so losing the log loses nothing.
//! 2. set the log's state to `Applying`, fsync it. From here on the device
//!    may change, and the log that can undo every change is durable.
//! 3. write the new blocks, fsync the device.
//! 4. set the state to `Complete`, fsync the log.
//!
//! A crash anywhere leaves either an untouched device (no log, a `.tmp`
//! log, or a `Prepared` one), or a durable `Applying` log whose rollback
//! restores the original bytes, or a finished repair. Rollback writes the
//! before-images, fsyncs the device, then marks the log `RolledBack`; every
//! step is idempotent, so an interrupted rollback is simply run again.
//!
//! Every write, fsync and rename goes through a [`Faults`] hook so tests can
//! stop the protocol after any one of them.

use super::faults::{Faults, Op};
use super::overlay::Overlay;
use super::undo::{self, Header, Identity, State};
use super::{Result, StoreError, files, mounted};
use crate::fs::num::Blk;
use crate::io::writable::WritableDevice;
use crate::narrow::to_usize;
use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Where the superblock lives, whatever the block size; its checksum
/// identifies the device a log was made for.
const SB_OFFSET: u64 = 1024;
const SB_LEN: usize = 1024;

/// Largest log `rollback` reads into memory. Logs are bounded by the
/// overlay's limit; this only guards against a huge file given by mistake.
pub const MAX_LOG_BYTES: u64 = 8 * 1024 * 1024 * 1024;

/// Tuning of the commit's writes.
#[derive(Clone, Debug)]
pub struct CommitOptions {
    /// Log bytes gathered before each write (0: one write per record).
    pub log_write_chunk: usize,
    /// Longest run of adjacent blocks written to the device at once
    /// (0: one write per block).
    pub device_write_run: usize,
    /// The device may be mounted read-only (`-f` on a read-only mount,
    /// which e2fsck repairs after its warning; the caller warned).
    pub read_only_mount: bool,
    /// Refuse the commit when the primary superblock or descriptor blocks
    /// were staged by anything but their encoders (`store::guard`); off
    /// only for a device that is not the file system (an external
    /// journal).
    pub primary_guard: bool,
}

/// 256 KiB each: large enough that a write's cost is the bytes, small
/// enough that the two buffers are a small part of a repair's memory.
impl Default for CommitOptions {
    fn default() -> CommitOptions {
        CommitOptions {
            log_write_chunk: 256 << 10,
            device_write_run: 256 << 10,
            read_only_mount: false,
            primary_guard: true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitReport {
    /// Blocks whose contents changed (staged blocks equal to the device are
    /// neither logged nor written).
    pub blocks_written: u64,
    /// `None` when nothing changed and no log was written.
    pub log: Option<PathBuf>,
}

/// Which logs `rollback` acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RollbackScope {
    /// Only an interrupted repair (`Applying`, or already `RolledBack`).
    Interrupted,
    /// Also a `Complete` one: undo a finished repair.
    IncludingComplete,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RollbackOutcome {
    /// The log is `Prepared`: the repair never wrote to the device.
    DeviceUntouched,
    /// The before-images of `blocks` blocks were written back.
    Restored {
        blocks: u64,
        was: State,
        /// Blocks changed since the repair and restored anyway (`force`).
        overwritten: u64,
        /// The log (version 1) cannot tell whether its blocks changed
        /// since the repair: none was checked.
        unverified: bool,
    },
}

/// Runs every durable operation through the fault hook.
struct Steps<'f> {
    faults: &'f mut dyn Faults,
}

impl Steps<'_> {
    fn write_file(&mut self, file: &File, path: &Path, offset: u64, data: &[u8]) -> Result<()> {
        let op = Op::Write {
            file: path,
            offset,
            len: data.len(),
        };
        self.faults.before(&op);
        file.write_all_at(data, offset)
            .map_err(|e| StoreError::Io {
                what: format!("cannot write undo log {}", path.display()),
                source: e,
            })?;
        Ok(self.faults.after(&op)?)
    }

    fn sync_file(&mut self, file: &File, path: &Path) -> Result<()> {
        let op = Op::Sync { file: path };
        self.faults.before(&op);
        file.sync_all().map_err(|e| StoreError::Io {
            what: format!("cannot sync undo log {}", path.display()),
            source: e,
        })?;
        Ok(self.faults.after(&op)?)
    }

    fn write_dev(&mut self, dev: &WritableDevice, offset: u64, data: &[u8]) -> Result<()> {
        let op = Op::Write {
            file: dev.path(),
            offset,
            len: data.len(),
        };
        self.faults.before(&op);
        dev.write_at(offset, data)?;
        Ok(self.faults.after(&op)?)
    }

    fn sync_dev(&mut self, dev: &WritableDevice) -> Result<()> {
        let op = Op::Sync { file: dev.path() };
        self.faults.before(&op);
        dev.sync()?;
        Ok(self.faults.after(&op)?)
    }

    fn rename(&mut self, from: &Path, to: &Path) -> Result<()> {
        let op = Op::Rename { from, to };
        self.faults.before(&op);
        std::fs::rename(from, to).map_err(|e| StoreError::Io {
            what: format!("cannot rename {} to {}", from.display(), to.display()),
            source: e,
        })?;
        Ok(self.faults.after(&op)?)
    }

    fn sync_dir(&mut self, dir: &Path) -> Result<()> {
        let op = Op::SyncDir { dir };
        self.faults.before(&op);
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| StoreError::Io {
                what: format!("cannot sync directory {}", dir.display()),
                source: e,
            })?;
        Ok(self.faults.after(&op)?)
    }

    /// Writes `blocks` (sorted, distinct) to the device, adjacent blocks
    /// gathered into runs of at most `max_run` bytes, then fsyncs it.
    fn write_blocks<'a>(
        &mut self,
        dev: &WritableDevice,
        block_size: u32,
        blocks: impl Iterator<Item = Result<(u64, Cow<'a, [u8]>)>>,
        max_run: usize,
    ) -> Result<u64> {
        let bs = u64::from(block_size);
        let mut run: Vec<u8> = Vec::new();
        let mut run_start = 0u64;
        let mut run_next = 0u64;
        let mut count = 0u64;
        for item in blocks {
            let (block, data) = item?;
            let extends = !run.is_empty()
                && block == run_next
                && run.len().saturating_add(data.len()) <= max_run;
            if !extends && !run.is_empty() {
                self.write_dev(dev, offset_of(run_start, bs)?, &run)?;
                run.clear();
            }
            if run.is_empty() {
                run_start = block;
            }
            run.extend_from_slice(&data);
            run_next = block.saturating_add(1);
            count = count.saturating_add(1);
        }
        if !run.is_empty() {
            self.write_dev(dev, offset_of(run_start, bs)?, &run)?;
        }
        self.sync_dev(dev)?;
        Ok(count)
    }
}

fn offset_of(block: u64, bs: u64) -> Result<u64> {
    block
        .checked_mul(bs)
        .ok_or_else(|| StoreError::Invalid(format!("block {block} overflows a byte offset")))
}

/// Writes the staged contents of `changes` (block numbers of `overlay`)
/// to the device, in runs, and syncs it; returns the blocks written.
fn write_new_blocks(
    steps: &mut Steps<'_>,
    dev: &WritableDevice,
    overlay: &Overlay,
    changes: &[u64],
    opts: &CommitOptions,
) -> Result<u64> {
    let bs = overlay.block_size();
    steps.write_blocks(
        dev,
        bs,
        changes.iter().map(|&b| {
            let mut data = vec![0u8; bs as usize];
            overlay.read_block(Blk(b), &mut data)?;
            Ok((b, Cow::Owned(data)))
        }),
        opts.device_write_run,
    )
}

/// The numbers of the staged blocks whose bytes differ from the device's
/// now, in the overlay's order; `on_change` sees each one's new bytes.
/// Unchanged blocks are left out so that neither the log nor the device
/// is written for a block the repair put back as it was.
fn changed_blocks(
    dev: &WritableDevice,
    overlay: &Overlay,
    mut on_change: impl FnMut(u64, &[u8]),
) -> Result<Vec<u64>> {
    let bs = overlay.block_size();
    let mut changes = Vec::new();
    let mut before = vec![0u8; bs as usize];
    let mut new = vec![0u8; bs as usize];
    for blk in overlay.blocks() {
        let block = blk.get();
        overlay.read_block(blk, &mut new)?;
        dev.read_at(offset_of(block, u64::from(bs))?, &mut before)?;
        if before != new {
            changes.push(block);
            on_change(block, &new);
        }
    }
    Ok(changes)
}

/// [`open_for_write`], refusing a device whose size is not the one
/// `overlay` was staged for.
fn open_staged_for(
    device: &Path,
    overlay: &Overlay,
    opts: &CommitOptions,
) -> Result<WritableDevice> {
    let dev = open_for_write(device, opts.read_only_mount)?;
    if dev.size() != overlay.device_size() {
        return Err(StoreError::Refused(format!(
            "{} has {} bytes, the repair was staged for {}",
            device.display(),
            dev.size(),
            overlay.device_size()
        )));
    }
    Ok(dev)
}

/// Opens the device for writing, refusing a mounted file system (but the
/// root mounted read-only, as e2fsck, and with `read_only_ok` any
/// read-only mount). The only place a `WritableDevice` is made.
fn open_for_write(device: &Path, read_only_ok: bool) -> Result<WritableDevice> {
    mounted::ensure_not_mounted(device, read_only_ok)?;
    // A mounted device cannot be claimed exclusively.
    let open = match mounted::mount_state(device) {
        mounted::MountState::ReadOnlyRoot => WritableDevice::open_mounted,
        mounted::MountState::ReadOnly(_) if read_only_ok => WritableDevice::open_mounted,
        _ => WritableDevice::open,
    };
    open(device).map_err(|e| match e {
        crate::error::Error::Io { what, source } if source.raw_os_error() == Some(libc::EBUSY) => {
            StoreError::Mounted(format!("{what}: {source}"))
        }
        other => other.into(),
    })
}

/// crc32c of each 512-byte sector of the superblock. Per sector, because a
/// power loss can tear a block write between sectors: an interrupted repair
/// may leave one sector old and the other new, and that is still the device
/// the log was made for.
fn superblock_crcs(bytes: &[u8]) -> [u32; 2] {
    let (a, b) = bytes.split_at(bytes.len().min(SB_LEN / 2));
    [crc32c::crc32c(a), crc32c::crc32c(b)]
}

/// The superblock bytes as far as the device has them (a device shorter
/// than 2 KiB has no ext superblock; its identity is then the size alone).
fn superblock_len(device_size: u64) -> usize {
    usize::try_from(device_size.saturating_sub(SB_OFFSET)).map_or(SB_LEN, |n| n.min(SB_LEN))
}

/// Prefix of the log's temporary names (`LOG.tmp.PID-RANDOM`).
fn tmp_base(log: &Path) -> PathBuf {
    let mut s = log.as_os_str().to_os_string();
    s.push(".tmp");
    PathBuf::from(s)
}

fn parent_dir(log: &Path) -> PathBuf {
    match log.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Refuses to replace a log that may still be needed: one of an interrupted
/// repair, or a file that is not a pfsck log at all.
/// Anything but a regular file there (a symlink, a device, a FIFO) is
/// refused unread: the rename would replace it, and reading it could
/// block or follow a link planted by someone else.
fn check_existing_log(log: &Path) -> Result<()> {
    match std::fs::symlink_metadata(log) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Ok(m) if !m.file_type().is_file() => {
            return Err(StoreError::Refused(format!(
                "{} exists and is not a regular file (a symlink, device or FIFO); remove it or \
                 choose another log with --undo",
                log.display()
            )));
        }
        _ => {}
    }
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(log)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(StoreError::Io {
                what: format!("cannot read existing undo log {}", log.display()),
                source: e,
            });
        }
    };
    let mut head = vec![0u8; undo::HEADER_LEN];
    let n = read_prefix(&file, &mut head);
    match undo::parse_header(&head[..n]) {
        Ok((_, State::Applying, _)) => Err(StoreError::Refused(format!(
            "{} is the undo log of an interrupted repair; restore the device first with \
             `pfsck --rollback {} DEVICE`",
            log.display(),
            log.display()
        ))),
        Ok(_) => Ok(()),
        Err(e) => Err(StoreError::Refused(format!(
            "{} exists and is not a usable pfsck undo log ({e}); remove it or choose another \
             log with --undo",
            log.display()
        ))),
    }
}

/// Whether `log` is the undo log of a repair that may have written to its
/// device and not finished (state `Applying`): the one case where the
/// user should be told to roll back.
pub fn interrupted_log(log: &Path) -> bool {
    let regular = std::fs::symlink_metadata(log).is_ok_and(|m| m.file_type().is_file());
    let Ok(file) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(log)
    else {
        return false;
    };
    let mut head = vec![0u8; undo::HEADER_LEN];
    let n = read_prefix(&file, &mut head);
    regular && matches!(undo::parse_header(&head[..n]), Ok((_, State::Applying, _)))
}

fn read_prefix(file: &File, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], n as u64) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    n
}

/// Writes the overlay's blocks to `device` under the protection of the undo
/// log `log`, following the protocol in this module's documentation.
pub fn commit(
    device: &Path,
    overlay: &Overlay,
    log: &Path,
    faults: &mut dyn Faults,
    opts: &CommitOptions,
) -> Result<CommitReport> {
    let dev = open_staged_for(device, overlay, opts)?;
    let bs = overlay.block_size();
    let bsu = u64::from(bs);

    // Before-images come from the device as it is now, not from what the
    // checker read earlier: they are what a rollback must put back. Only
    // the numbers of the changed blocks are kept; their bytes are read
    // again as the log and the device are written, a batch at a time, so
    // the commit's memory does not grow with the repair.
    let sb_len = superblock_len(dev.size());
    let mut sb = vec![0u8; sb_len];
    dev.read_at(SB_OFFSET.min(dev.size()), &mut sb)?;
    let sb_before = superblock_crcs(&sb);
    let changes = changed_blocks(&dev, overlay, |block, new| {
        patch_range(&mut sb, SB_OFFSET, block, bsu, new);
    })?;
    if changes.is_empty() {
        return Ok(CommitReport {
            blocks_written: 0,
            log: None,
        });
    }
    check_existing_log(log)?;
    if opts.primary_guard {
        super::guard::check(overlay, &changes, &sb)?;
    }
    let sb_after = superblock_crcs(&sb);

    let rlen = undo::record_len(bs);
    let count = changes.len() as u64;
    let header = Header {
        version: undo::VERSION,
        block_size: bs,
        identity: Identity {
            device_size: dev.size(),
            sb_before,
            sb_after,
        },
        record_count: count,
        records_len: count
            .checked_mul(rlen)
            .ok_or_else(|| StoreError::Invalid("undo log too large".to_string()))?,
    };

    let mut steps = Steps { faults };

    // 1. The log, complete and durable under its final name. It is built
    // in a new file of its own (never an existing one, never through a
    // symlink) and removed if any step before the rename fails, a full
    // disk included. An injected crash leaves it, as a dead process would.
    let (file, tmp) = files::create_unique(&tmp_base(log), "undo log")?;
    let mut guard = files::RemoveOnDrop::new(&tmp);
    let written = write_log(
        &mut steps, &file, &tmp, log, &dev, overlay, &header, &changes, opts,
    );
    match &written {
        Err(StoreError::Crash) => guard.keep(),
        Err(_) => {}
        Ok(()) => guard.keep(),
    }
    drop(guard);
    written?;
    steps.sync_dir(&parent_dir(log))?;

    // 2. From here on the device may change.
    steps.write_file(
        &file,
        log,
        undo::STATE_OFFSET,
        &undo::encode_state(State::Applying),
    )?;
    steps.sync_file(&file, log)?;

    // 3. The new blocks.
    let written = write_new_blocks(&mut steps, &dev, overlay, &changes, opts)?;

    // 4. Done.
    steps.write_file(
        &file,
        log,
        undo::STATE_OFFSET,
        &undo::encode_state(State::Complete),
    )?;
    steps.sync_file(&file, log)?;
    Ok(CommitReport {
        blocks_written: written,
        log: Some(log.to_path_buf()),
    })
}

/// Writes the overlay's blocks to `device` with no undo log, as e2fsck
/// always does: the last resort of an unattended repair (`-p`, `-y`) when
/// no log location can be written, chosen and announced by the caller.
/// The repair cannot be rolled back.
pub fn commit_unlogged(
    device: &Path,
    overlay: &Overlay,
    faults: &mut dyn Faults,
    opts: &CommitOptions,
) -> Result<CommitReport> {
    let dev = open_staged_for(device, overlay, opts)?;
    let mut sb = vec![0u8; superblock_len(dev.size())];
    dev.read_at(SB_OFFSET.min(dev.size()), &mut sb)?;
    let bsu = u64::from(overlay.block_size());
    let changes = changed_blocks(&dev, overlay, |block, new| {
        patch_range(&mut sb, SB_OFFSET, block, bsu, new);
    })?;
    if opts.primary_guard {
        super::guard::check(overlay, &changes, &sb)?;
    }
    let mut steps = Steps { faults };
    let written = write_new_blocks(&mut steps, &dev, overlay, &changes, opts)?;
    Ok(CommitReport {
        blocks_written: written,
        log: None,
    })
}

/// Blocks the end-of-check record may change: the primary superblock's
/// and the journal superblock's.
pub const RECORD_MAX_BLOCKS: usize = 2;

/// Writes the end-of-check record of a run that fixed nothing (the
/// superblock's state, mount count, check time and error record, and a
/// journal's error number) straight to `device`, without an undo log, as
/// e2fsck writes it: a log for every clean check would be noise, and the
/// record has nothing a rollback should restore. Anything larger is
/// refused: it belongs in [`commit`]. Returns the blocks written.
pub fn record(device: &Path, overlay: &Overlay, opts: &CommitOptions) -> Result<u64> {
    let blocks = overlay.len();
    if blocks > RECORD_MAX_BLOCKS {
        return Err(StoreError::Refused(format!(
            "a check record of {blocks} blocks needs the undo log"
        )));
    }
    Ok(commit_unlogged(device, overlay, &mut super::faults::NoFaults, opts)?.blocks_written)
}

/// Writes the whole log (state `Prepared`) to `tmp`, syncs it and renames
/// it to `log`.
#[allow(clippy::too_many_arguments)]
fn write_log(
    steps: &mut Steps<'_>,
    file: &File,
    tmp: &Path,
    log: &Path,
    dev: &WritableDevice,
    overlay: &Overlay,
    header: &Header,
    changes: &[u64],
    opts: &CommitOptions,
) -> Result<()> {
    let bsu = u64::from(header.block_size);
    let mut before = vec![0u8; header.block_size as usize];
    let mut after = vec![0u8; header.block_size as usize];
    let head = undo::encode_header(header, State::Prepared);
    steps.write_file(file, tmp, 0, &head)?;
    let mut pos = undo::HEADER_LEN as u64;
    let mut buf: Vec<u8> = Vec::new();
    let mut acc = 0u32;
    for &block in changes {
        dev.read_at(offset_of(block, bsu)?, &mut before)?;
        overlay.read_block(Blk(block), &mut after)?;
        let c = undo::encode_record(&mut buf, block, &before, Some(&after));
        acc = undo::fold_record_crc(acc, c);
        if buf.len() >= opts.log_write_chunk {
            steps.write_file(file, tmp, pos, &buf)?;
            pos = pos.saturating_add(buf.len() as u64);
            buf.clear();
        }
    }
    buf.extend_from_slice(&undo::encode_trailer(header.record_count, acc));
    steps.write_file(file, tmp, pos, &buf)?;
    drop(buf);
    steps.sync_file(file, tmp)?;
    steps.rename(tmp, log)
}

/// Copies the part of block `block` (contents `data`) that overlaps the
/// range starting at byte `range_start` into `range`.
fn patch_range(range: &mut [u8], range_start: u64, block: u64, bs: u64, data: &[u8]) {
    let Some(bstart) = block.checked_mul(bs) else {
        return;
    };
    let Some(bend) = bstart.checked_add(data.len() as u64) else {
        return;
    };
    let rend = range_start.saturating_add(range.len() as u64);
    let lo = bstart.max(range_start);
    let hi = bend.min(rend);
    if lo < hi {
        range[to_usize(lo - range_start)..to_usize(hi - range_start)]
            .copy_from_slice(&data[to_usize(lo - bstart)..to_usize(hi - bstart)]);
    }
}

/// Reads a whole log file, bounded by [`MAX_LOG_BYTES`].
pub fn read_log(log: &Path) -> Result<Vec<u8>> {
    let meta = std::fs::metadata(log)
        .map_err(|e| StoreError::BadLog(format!("cannot open undo log {}: {e}", log.display())))?;
    if meta.len() > MAX_LOG_BYTES {
        return Err(StoreError::BadLog(format!(
            "{} has {} bytes, more than any pfsck undo log",
            log.display(),
            meta.len()
        )));
    }
    std::fs::read(log)
        .map_err(|e| StoreError::BadLog(format!("cannot read undo log {}: {e}", log.display())))
}

/// Opens a log to roll back: a regular file (no symlink followed, never a
/// FIFO or a device, which could block or never end), owned by the caller
/// and writable by nobody else (a log others can rewrite is theirs to
/// write onto the device: crc32c authenticates nothing).
fn open_log(path: &Path) -> Result<File> {
    use std::os::unix::fs::MetadataExt;
    let bad = |why: String| StoreError::BadLog(format!("{}: {why}", path.display()));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| bad(format!("cannot open undo log: {e}")))?;
    let m = file
        .metadata()
        .map_err(|e| bad(format!("cannot stat undo log: {e}")))?;
    if !m.file_type().is_file() {
        return Err(bad("not a regular file".to_string()));
    }
    // The process's own directory in /proc belongs to its effective uid.
    if let Ok(me) = std::fs::metadata("/proc/self")
        && m.uid() != me.uid()
    {
        return Err(bad(format!(
            "owned by uid {}, not by the caller (uid {}); refusing to use it",
            m.uid(),
            me.uid()
        )));
    }
    if m.mode() & 0o022 != 0 {
        return Err(bad(format!(
            "mode {:o} lets others write it; refusing to use it",
            m.mode() & 0o7777
        )));
    }
    Ok(file)
}

/// A record read from a log file.
struct OwnedRecord {
    block: u64,
    data: Vec<u8>,
    after: Vec<u8>,
}

impl OwnedRecord {
    fn of(r: &undo::Record<'_>) -> OwnedRecord {
        OwnedRecord {
            block: r.block,
            data: r.data.to_vec(),
            after: r.after.to_vec(),
        }
    }

    fn record(&self) -> undo::Record<'_> {
        undo::Record {
            block: self.block,
            data: &self.data,
            after: &self.after,
        }
    }
}

/// A log opened for rollback, its header validated and its length the one
/// the header describes; records are read one at a time.
struct LogFile {
    file: File,
    path: PathBuf,
    header: Header,
    state: State,
}

impl LogFile {
    fn open(path: &Path) -> Result<LogFile> {
        let bad = |e: undo::LogError| StoreError::BadLog(format!("{}: {e}", path.display()));
        let file = open_log(path)?;
        let mut head = vec![0u8; undo::HEADER_LEN];
        let n = read_prefix(&file, &mut head);
        let (header, state, _) = undo::parse_header(&head[..n]).map_err(bad)?;
        let want = undo::expected_len(&header).map_err(bad)?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len != want {
            return Err(StoreError::BadLog(format!(
                "{}: undo log has {len} bytes, its header describes {want}",
                path.display()
            )));
        }
        Ok(LogFile {
            file,
            path: path.to_path_buf(),
            header,
            state,
        })
    }

    /// The records in order, each verified; the trailer checked after the
    /// last. Memory: one record.
    fn records(&self) -> impl Iterator<Item = Result<OwnedRecord>> + '_ {
        let rlen = to_usize(self.header.record_len());
        let count = self.header.record_count;
        let mut i = 0u64;
        let mut prev = None;
        let mut acc = 0u32;
        let mut done = false;
        let mut buf = vec![0u8; rlen];
        let bad = move |path: &Path, e: undo::LogError| {
            StoreError::BadLog(format!("{}: {e}", path.display()))
        };
        std::iter::from_fn(move || {
            if done {
                return None;
            }
            let pos = (undo::HEADER_LEN as u64).saturating_add(i.saturating_mul(rlen as u64));
            if i == count {
                done = true;
                let mut t = [0u8; undo::TRAILER_LEN];
                let r = self
                    .file
                    .read_exact_at(&mut t, pos)
                    .map_err(|e| StoreError::BadLog(format!("{}: {e}", self.path.display())))
                    .and_then(|()| {
                        undo::check_trailer(&self.header, &t, acc).map_err(|e| bad(&self.path, e))
                    });
                return r.err().map(Err);
            }
            let r = self
                .file
                .read_exact_at(&mut buf, pos)
                .map_err(|e| StoreError::BadLog(format!("{}: {e}", self.path.display())))
                .and_then(|()| {
                    undo::parse_record(&self.header, i, pos, &buf, prev)
                        .map(|(r, c)| (OwnedRecord::of(&r), c))
                        .map_err(|e| bad(&self.path, e))
                });
            match r {
                Ok((rec, c)) => {
                    prev = Some(rec.block);
                    acc = undo::fold_record_crc(acc, c);
                    i += 1;
                    Some(Ok(rec))
                }
                Err(e) => {
                    done = true;
                    Some(Err(e))
                }
            }
        })
    }

    /// Reads every record and the trailer: any damage is an error.
    fn verify(&self) -> Result<()> {
        for r in self.records() {
            r?;
        }
        Ok(())
    }
}

/// Blocks named in the message of a refused rollback.
const CHANGED_SHOWN: usize = 10;

/// Restores the before-images recorded in `log` onto `device`, refusing if
/// any block no longer holds what the repair wrote.
pub fn rollback(
    log_path: &Path,
    device: &Path,
    scope: RollbackScope,
    faults: &mut dyn Faults,
) -> Result<RollbackOutcome> {
    rollback_with(log_path, device, scope, false, faults)
}

/// [`rollback`]; with `force`, blocks changed since the repair (and a
/// superblock that is neither the one before nor after it) are restored
/// anyway, losing those changes.
pub fn rollback_with(
    log_path: &Path,
    device: &Path,
    scope: RollbackScope,
    force: bool,
    faults: &mut dyn Faults,
) -> Result<RollbackOutcome> {
    // Bounded memory whatever the file: the header first, then the
    // records one at a time, all verified before the device is opened.
    let log = LogFile::open(log_path)?;
    log.verify()?;
    match (log.state, scope) {
        (State::Prepared, _) => return Ok(RollbackOutcome::DeviceUntouched),
        (State::Complete, RollbackScope::Interrupted) => {
            return Err(StoreError::Refused(format!(
                "{}: the repair completed; undoing it must be asked for explicitly",
                log_path.display()
            )));
        }
        _ => {}
    }
    let dev = open_for_write(device, false)?;
    let id = log.header.identity;
    if dev.size() != id.device_size {
        return Err(StoreError::Refused(format!(
            "{} has {} bytes, the undo log {} was made for a device of {} bytes",
            device.display(),
            dev.size(),
            log_path.display(),
            id.device_size
        )));
    }
    let mut sb = vec![0u8; superblock_len(dev.size())];
    dev.read_at(SB_OFFSET.min(dev.size()), &mut sb)?;
    let now = superblock_crcs(&sb);
    let known = (0..2).all(|i| now[i] == id.sb_before[i] || now[i] == id.sb_after[i]);
    if !known && !force {
        return Err(StoreError::Refused(format!(
            "the superblock of {} is neither the one before nor the one after the repair \
             recorded in {}: wrong device, or it changed since (mounted?); refusing to roll back \
             (--force restores it anyway)",
            device.display(),
            log_path.display()
        )));
    }
    // Every block must still hold what the repair wrote (or what it held
    // before): anything else is a later change that the before-image
    // would silently undo.
    let (changed, shown) = changed_since(&log, &dev)?;
    if changed > 0 && !force {
        let list: Vec<String> = shown.iter().map(u64::to_string).collect();
        let more = if changed > shown.len() as u64 {
            ", ..."
        } else {
            ""
        };
        return Err(StoreError::Refused(format!(
            "{changed} of the {} blocks to restore changed since the repair recorded in {} \
             (block{} {}{more}); rolling back would lose those changes. Refusing to roll back \
             (--force restores them anyway)",
            log.header.record_count,
            log_path.display(),
            if changed == 1 { "" } else { "s" },
            list.join(", ")
        )));
    }
    let mut steps = Steps { faults };
    let blocks = steps.write_blocks(
        &dev,
        log.header.block_size,
        log.records()
            .map(|r| r.map(|r| (r.block, Cow::Owned(r.data)))),
        CommitOptions::default().device_write_run,
    )?;
    steps.write_file(
        &log.file,
        log_path,
        undo::STATE_OFFSET,
        &undo::encode_state(State::RolledBack),
    )?;
    steps.sync_file(&log.file, log_path)?;
    Ok(RollbackOutcome::Restored {
        blocks,
        was: log.state,
        overwritten: changed,
        unverified: log.header.version == undo::VERSION_1,
    })
}

/// How many of the log's blocks the device holds neither as the repair
/// wrote them nor as they were before, and the first few of them.
fn changed_since(log: &LogFile, dev: &WritableDevice) -> Result<(u64, Vec<u64>)> {
    let bsu = u64::from(log.header.block_size);
    let mut now = vec![0u8; log.header.block_size as usize];
    let mut changed = 0u64;
    let mut shown = Vec::new();
    for rec in log.records() {
        let rec = rec?;
        dev.read_at(offset_of(rec.block, bsu)?, &mut now)?;
        if rec.record().unchanged(&now) == Some(false) {
            changed += 1;
            if shown.len() < CHANGED_SHOWN {
                shown.push(rec.block);
            }
        }
    }
    Ok((changed, shown))
}
