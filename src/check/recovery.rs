//! Journal recovery planning: what replaying the jbd2 journal would write
//! home, computed without writing anything, and the read-only view of the
//! file system as it will be after that replay.
//!
//! The planner walks the circular log the way the kernel and e2fsck do, in
//! three passes from `s_start` with `s_sequence`:
//! 1. scan: find the end of the log — the first block that is not a log
//!    block of the expected transaction, or a commit that fails its
//!    checksum (v1 running crc32_be, v2/v3 block crc32c). A v2/v3
//!    descriptor or revoke block that fails its checksum is tolerated while
//!    scanning (it may be stale, from before a lazy journal init), but then
//!    the transaction's commit decides: a commit time that does not go
//!    backwards means real corruption and recovery fails as a whole;
//! 2. revoke: collect revoke records of the transactions before the end;
//!    a record written by transaction R revokes the copies of that block
//!    journalled by transactions T <= R (sequence numbers compared modulo
//!    2^32);
//! 3. replay: every journalled copy, in log order, that is not revoked and
//!    passes its v2/v3 tag checksum (a failing copy is skipped and the
//!    recovery reported as failed at the end, as e2fsck does), with the
//!    jbd2 magic restored in escaped blocks. Later copies replace earlier
//!    ones, so the result is the last good copy of each block.
//!
//! Everything is bounded: each pass advances through at most `maxlen` log
//! positions, descriptor tags are bounded by the block size, and numbers
//! from the journal are validated before they index anything.
//!
//! Relies on pass 0's journal checks having found a usable journal; when the
//! journal cannot be read this returns `Unusable` and the caller falls back
//! to checking the on-disk state (as `e2fsck -n` does).

use super::Options;
use super::blockmap::{self, MapInfo, MapVisitor, Scratch};
use super::problem::{Code, Problem};
use super::superblock;
use crate::error::Result;
use crate::fs::inode::{Inode, flags};
use crate::fs::journal::{
    self as jfmt, BLOCKTYPE_COMMIT, BLOCKTYPE_DESCRIPTOR, BLOCKTYPE_REVOKE, JBD2_MAGIC,
    JournalSuperblock, tag_flags,
};
use crate::fs::num::Blk;
use crate::fs::superblock::{
    STATE_VALID, SUPERBLOCK_OFFSET, SuperblockMut, compat, incompat, ro_compat,
};
use crate::narrow;
use crate::volume::Fs;
use std::collections::{BTreeMap, HashMap};

/// Why recovery as a whole fails (the kernel's error codes, which e2fsck
/// reports in its own words).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// EFSBADCRC: a checksum proves the log corrupt ("Journal checksum
    /// error found").
    BadChecksum(String),
    /// EFSCORRUPTED: the log points outside the journal.
    Corrupted(String),
    /// EINVAL: a revoke block's count is impossible.
    Invalid(String),
    /// EIO: a log block could not be read, or the passes disagreed.
    Io(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::BadChecksum(s) => write!(f, "journal checksum error: {s}"),
            Failure::Corrupted(s) => write!(f, "journal corrupted: {s}"),
            Failure::Invalid(s) => write!(f, "invalid argument: {s}"),
            Failure::Io(s) => write!(f, "I/O error: {s}"),
        }
    }
}

/// What replay would do.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// File system block → its contents after replay, for every block the
    /// replay writes (the last good copy).
    pub blocks: BTreeMap<u64, Vec<u8>>,
    /// First transaction in the log (`s_sequence`).
    pub start_transaction: u32,
    /// First transaction not replayed: the log ends here.
    pub end_transaction: u32,
    /// Copies written (a block journalled twice counts twice).
    pub replays: u64,
    /// Revoke records collected, and copies they suppressed.
    pub revokes: u64,
    pub revoke_hits: u64,
    /// A commit failed its checksum and replay stopped before it (e2fsck's
    /// "Journal transaction N was corrupt, replay was aborted").
    pub failed_commit: Option<u32>,
    /// Copies skipped because their tag checksum failed (fs block numbers).
    pub bad_data_blocks: Vec<u64>,
    /// Recovery reports an error. Blocks already in `blocks` were replayed
    /// before it (a failure in the scan or revoke pass replays nothing).
    pub failure: Option<Failure>,
    /// The fast-commit records recovery replays after the log (a valid
    /// scan of the fast-commit area for the transaction after the last
    /// one replayed), with that transaction's id.
    pub fast_commit: Option<(u32, Vec<crate::fs::fast_commit::Tag>)>,
    /// The sequence the reset journal starts at.
    pub next_sequence: u32,
}

impl Plan {
    pub fn transactions(&self) -> u32 {
        self.end_transaction.wrapping_sub(self.start_transaction)
    }
}

/// `a >= b` for transaction ids, which wrap.
fn tid_geq(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

fn tid_gt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum PassKind {
    Revoke,
    Replay,
}

/// The log geometry, validated once.
struct Log<'a> {
    j: &'a JournalSuperblock,
    /// Reads journal block `n` (0 ≤ n < maxlen); Err on a hole or I/O error.
    read: &'a dyn Fn(u32) -> std::result::Result<Vec<u8>, String>,
    first: u32,
    /// One past the last log block; fast-commit blocks follow.
    last: u32,
    maxlen: u32,
    block_size: usize,
}

impl Log<'_> {
    /// The block `by` blocks after `pos` in the circular log. As jbd2, a
    /// position at or past `last` is taken back once by the ring's length
    /// (`last - first`, in wrapping arithmetic): it lands `first` blocks
    /// on, whatever `first` holds. A `first` outside the journal so
    /// leads to a read past its end, which fails the replay; a log that
    /// never wraps never uses it.
    fn advance(&self, pos: u32, by: u32) -> u32 {
        let next = u64::from(pos) + u64::from(by);
        if next < u64::from(self.last) {
            // Below `last`, a u32.
            return narrow::sat32(next);
        }
        // At or past `maxlen` when it does not fit: `read` refuses it.
        narrow::sat32(next - u64::from(self.last) + u64::from(self.first))
    }

    fn read(&self, pos: u32) -> std::result::Result<Vec<u8>, Failure> {
        if pos >= self.maxlen {
            return Err(Failure::Corrupted(format!(
                "log block {pos} beyond the journal"
            )));
        }
        let b = (self.read)(pos).map_err(|e| Failure::Io(format!("log block {pos}: {e}")))?;
        if b.len() != self.block_size {
            return Err(Failure::Io(format!("log block {pos}: short read")));
        }
        Ok(b)
    }
}

/// Plans the replay of the journal whose superblock is `j`, reading journal
/// blocks through `read`. Returns Err when the superblock's numbers do not
/// describe a usable log (nothing can be replayed). Fast-commit blocks are
/// left alone (see [`plan_with`]).
pub fn plan(
    j: &JournalSuperblock,
    block_size: u32,
    read: &dyn Fn(u32) -> std::result::Result<Vec<u8>, String>,
) -> std::result::Result<Plan, String> {
    plan_with(j, block_size, read, false)
}

/// [`plan`], and with `fast_commit` (the file system has the fast_commit
/// feature, so recovery replays the area) the fast-commit scan: it runs
/// after the log scan, for the transaction after the log, and a scan
/// that fails fails recovery before anything is replayed.
pub fn plan_with(
    j: &JournalSuperblock,
    block_size: u32,
    read: &dyn Fn(u32) -> std::result::Result<Vec<u8>, String>,
    fast_commit: bool,
) -> std::result::Result<Plan, String> {
    if j.blocksize != block_size || !(1024..=65536).contains(&block_size) {
        return Err(format!("journal block size {} is unusable", j.blocksize));
    }
    let fc = j.fc_blocks();
    let last = j
        .maxlen
        .checked_sub(fc)
        .ok_or_else(|| format!("{fc} fast-commit blocks in a {}-block journal", j.maxlen))?;
    let mut plan = Plan {
        start_transaction: j.sequence,
        end_transaction: j.sequence,
        next_sequence: j.sequence.wrapping_add(1),
        ..Plan::default()
    };
    if j.start == 0 {
        // Cleanly unmounted: nothing to replay.
        return Ok(plan);
    }
    let log = Log {
        j,
        read,
        first: j.first,
        last,
        maxlen: j.maxlen,
        block_size: block_size as usize,
    };
    let mut revoked: HashMap<u64, u32> = HashMap::new();
    let mut fc_tags = None;
    let result = scan(&log, &mut plan)
        .and_then(|()| {
            if fast_commit && fc > 0 {
                fc_tags = fc_scan(&log, plan.end_transaction)?;
            }
            Ok(())
        })
        .and_then(|()| revoke_pass(&log, &plan, &mut revoked).map(|n| plan.revokes = n));
    // Recovery that fails before replaying anything leaves the journal's
    // sequence where it was (e2fsck 1.47.0 on j_corrupt_descr_csum and
    // j_corrupt_revoke_rcount): the reset journal starts at s_sequence.
    let failed_early = result.is_err();
    let result = result.and_then(|()| replay(&log, &mut plan, &revoked));
    if let Err(f) = result {
        plan.failure = Some(f);
    }
    if plan.failure.is_none()
        && let Some(tags) = fc_tags
        && !tags.is_empty()
    {
        plan.fast_commit = Some((plan.end_transaction, tags));
    }
    plan.next_sequence = if failed_early {
        j.sequence
    } else {
        plan.end_transaction.wrapping_add(1)
    };
    Ok(plan)
}

/// The fast-commit scan: the area after the log (from one past the log's
/// last block to the journal's end), for transaction `tid`.
fn fc_scan(
    log: &Log,
    tid: u32,
) -> std::result::Result<Option<Vec<crate::fs::fast_commit::Tag>>, Failure> {
    use crate::fs::fast_commit::{self as fc, ScanError};
    let first = log.last.saturating_add(1);
    let blocks: Vec<Option<Vec<u8>>> = (first..log.maxlen)
        .map(|n| log.read(n).ok())
        .take_while(Option::is_some)
        .collect();
    let out = fc::scan(blocks.iter().map(|b| b.as_deref()), tid);
    match out.error {
        None => Ok(Some(out.tags)),
        Some(e @ ScanError::BadCrc) => Err(Failure::BadChecksum(e.to_string())),
        Some(e) => Err(Failure::Invalid(e.to_string())),
    }
}

/// Pass 1: finds `end_transaction`.
fn scan(log: &Log, plan: &mut Plan) -> std::result::Result<(), Failure> {
    let j = log.j;
    let mut next_id = j.sequence;
    let mut pos = j.start;
    let mut end: Option<u32> = None;
    let mut need_check_commit_time = false;
    let mut last_commit_time = 0u64;
    let mut crc_sum = !0u32;
    let mut budget = u64::from(log.maxlen);
    loop {
        if budget == 0 {
            break;
        }
        budget -= 1;
        let b = log.read(pos)?;
        pos = log.advance(pos, 1);
        let h = jfmt::parse_header(&b);
        if h.magic != JBD2_MAGIC || h.sequence != next_id {
            break;
        }
        match h.blocktype {
            BLOCKTYPE_DESCRIPTOR => {
                if !jfmt::tail_checksum_ok(j, &b) {
                    need_check_commit_time = true;
                }
                let n = narrow::sat32(jfmt::parse_tags(j, &b).len());
                budget = budget.saturating_sub(u64::from(n));
                if j.has_v1_checksum() && !need_check_commit_time && end.is_none() {
                    crc_sum = jfmt::crc32_be(crc_sum, &b);
                    let mut readable = true;
                    for _ in 0..n {
                        match log.read(pos) {
                            Ok(d) => crc_sum = jfmt::crc32_be(crc_sum, &d),
                            Err(_) => {
                                readable = false;
                                break;
                            }
                        }
                        pos = log.advance(pos, 1);
                    }
                    if !readable {
                        break;
                    }
                } else {
                    pos = log.advance(pos, n);
                }
            }
            BLOCKTYPE_COMMIT => {
                let c = jfmt::parse_commit(&b);
                if need_check_commit_time {
                    if c.commit_sec >= last_commit_time {
                        return Err(Failure::BadChecksum(format!(
                            "transaction {next_id} has a block that fails its checksum"
                        )));
                    }
                    // Older commit time: stale blocks from an earlier use
                    // of the journal; the log ends here.
                    break;
                }
                let mut bad = false;
                if j.has_v1_checksum() {
                    if let Some(e) = end {
                        plan.failed_commit = Some(e);
                        break;
                    }
                    bad = !jfmt::commit_v1_ok(&c, crc_sum);
                    crc_sum = !0;
                }
                if !bad && !jfmt::commit_checksum_ok(j, &b) {
                    bad = true;
                }
                if bad {
                    if c.commit_sec < last_commit_time {
                        break;
                    }
                    end = Some(next_id);
                    if !j.async_commit() {
                        plan.failed_commit = Some(next_id);
                        break;
                    }
                }
                last_commit_time = c.commit_sec;
                next_id = next_id.wrapping_add(1);
            }
            BLOCKTYPE_REVOKE => {
                if !jfmt::tail_checksum_ok(j, &b) {
                    need_check_commit_time = true;
                }
            }
            _ => break,
        }
    }
    plan.end_transaction = end.unwrap_or(next_id);
    Ok(())
}

/// Walks the transactions before the end for the revoke and replay
/// passes, handing each log block to `visit` with the current tid. The
/// visitor gets the tid, the log position after the block (where a
/// descriptor's data blocks start), the block and its sequence.
fn walk(
    log: &Log,
    end: u32,
    pass: PassKind,
    mut visit: impl FnMut(u32, u32, &[u8], u32) -> std::result::Result<(), Failure>,
) -> std::result::Result<(), Failure> {
    let j = log.j;
    let mut next_id = j.sequence;
    let mut pos = j.start;
    let mut budget = u64::from(log.maxlen);
    while !tid_geq(next_id, end) && budget > 0 {
        budget -= 1;
        let b = log.read(pos)?;
        pos = log.advance(pos, 1);
        let h = jfmt::parse_header(&b);
        if h.magic != JBD2_MAGIC || h.sequence != next_id {
            break;
        }
        match h.blocktype {
            BLOCKTYPE_DESCRIPTOR => {
                if !jfmt::tail_checksum_ok(j, &b) {
                    return Err(Failure::BadChecksum(format!(
                        "descriptor block {} in log",
                        pos
                    )));
                }
                let n = narrow::sat32(jfmt::parse_tags(j, &b).len());
                budget = budget.saturating_sub(u64::from(n));
                visit(next_id, pos, &b, h.sequence)?;
                pos = log.advance(pos, n);
            }
            BLOCKTYPE_COMMIT => next_id = next_id.wrapping_add(1),
            BLOCKTYPE_REVOKE => visit(next_id, pos, &b, h.sequence)?,
            _ => break,
        }
    }
    if next_id != end {
        return Err(Failure::Io(format!(
            "{pass:?} pass ended at transaction {next_id}, expected {end}"
        )));
    }
    Ok(())
}

/// Pass 2: block → the latest transaction that revoked it.
fn revoke_pass(
    log: &Log,
    plan: &Plan,
    revoked: &mut HashMap<u64, u32>,
) -> std::result::Result<u64, Failure> {
    let mut count = 0u64;
    walk(
        log,
        plan.end_transaction,
        PassKind::Revoke,
        |tid, _, b, _| {
            if jfmt::parse_header(b).blocktype != BLOCKTYPE_REVOKE {
                return Ok(());
            }
            let list = jfmt::parse_revoke(log.j, b).map_err(|e| {
                Failure::Invalid(format!("revoke block in transaction {tid}: {e:?}"))
            })?;
            for blk in list {
                count += 1;
                let e = revoked.entry(blk).or_insert(tid);
                if tid_gt(tid, *e) {
                    *e = tid;
                }
            }
            Ok(())
        },
    )?;
    Ok(count)
}

/// Pass 3: the copies to write home.
fn replay(
    log: &Log,
    plan: &mut Plan,
    revoked: &HashMap<u64, u32>,
) -> std::result::Result<(), Failure> {
    let j = log.j;
    let mut blocks = std::mem::take(&mut plan.blocks);
    let (mut replays, mut hits, mut bad) = (0u64, 0u64, Vec::new());
    let mut read_error: Option<Failure> = None;
    let result = walk(
        log,
        plan.end_transaction,
        PassKind::Replay,
        |tid, data_pos, b, seq| {
            if jfmt::parse_header(b).blocktype != BLOCKTYPE_DESCRIPTOR {
                return Ok(());
            }
            let mut pos = data_pos;
            for tag in jfmt::parse_tags(j, b) {
                let io = pos;
                pos = log.advance(pos, 1);
                let mut data = match log.read(io) {
                    Ok(d) => d,
                    Err(e) => {
                        // Recover what can be read, report the failure at the end.
                        read_error = Some(e);
                        continue;
                    }
                };
                if revoked.get(&tag.blocknr).is_some_and(|&r| !tid_gt(tid, r)) {
                    hits += 1;
                    continue;
                }
                if !jfmt::data_checksum_ok(j, &tag, seq, &data) {
                    bad.push(tag.blocknr);
                    continue;
                }
                if tag.has(tag_flags::ESCAPE)
                    && let Some(s) = data.get_mut(0..4)
                {
                    s.copy_from_slice(&JBD2_MAGIC.to_be_bytes());
                }
                replays += 1;
                blocks.insert(tag.blocknr, data);
            }
            Ok(())
        },
    );
    plan.blocks = blocks;
    plan.replays = replays;
    plan.revoke_hits = hits;
    let had_bad = !bad.is_empty();
    plan.bad_data_blocks = bad;
    result?;
    if let Some(e) = read_error {
        return Err(e);
    }
    if had_bad {
        return Err(Failure::BadChecksum(format!(
            "{} journalled block(s) fail their checksum",
            plan.bad_data_blocks.len()
        )));
    }
    Ok(())
}

// ---- Reading the internal journal ----

/// Logical → physical runs of the journal inode.
struct JournalMap {
    /// (logical, physical, length), sorted by logical block.
    runs: Vec<(u64, u64, u64)>,
}

impl JournalMap {
    fn physical(&self, lblk: u64) -> Option<u64> {
        let i = self.runs.partition_point(|r| r.0 <= lblk).checked_sub(1)?;
        let (l, p, len) = self.runs[i];
        (lblk < l.saturating_add(len)).then(|| p + (lblk - l))
    }
}

struct Collect {
    runs: Vec<(u64, u64, u64)>,
    /// Stops the walk once the log's length is mapped.
    want: u64,
    mapped: u64,
}

impl MapVisitor for Collect {
    fn data(&mut self, lblk: u64, pblk: u64, len: u64, _unwritten: bool) {
        self.runs.push((lblk, pblk, len));
        self.mapped = self.mapped.saturating_add(len);
    }
    fn node(&mut self, _pblk: u64) {}
    fn problem(&mut self, _p: Problem) {}
    fn done(&self) -> bool {
        self.mapped >= self.want
    }
}

fn map_journal(fs: &Fs, ino: u32, inode: &Inode, maxlen: u32) -> JournalMap {
    let bs = u64::from(fs.geo.block_size);
    let mut c = Collect {
        runs: Vec::new(),
        want: u64::from(maxlen),
        mapped: 0,
    };
    let mut scratch = Scratch::new();
    if inode.has_flag(flags::EXTENTS) {
        let info = MapInfo {
            ino,
            is_dir: false,
            eof_block: (inode.size / bs).saturating_sub(1),
            csum_seed: None,
            large_dir: false,
            read_only: false,
            inode_unreadable: false,
        };
        blockmap::walk_extents(fs, info, &inode.block, &mut scratch, &mut c);
    } else {
        blockmap::walk_indirect(fs, ino, &inode.block_ptrs(), &mut scratch, &mut c);
    }
    c.runs.sort_unstable();
    JournalMap { runs: c.runs }
}

/// The internal journal's superblock and a plan for it, or why there is
/// nothing to plan (no usable internal journal).
pub fn plan_internal(fs: &Fs) -> std::result::Result<(JournalSuperblock, Plan, u64), String> {
    let ino = fs.sb.journal_inum;
    let inode = super::journal::journal_inode(fs)?;
    let jsb_raw = super::journal::journal_first_block(fs, &inode)?;
    let j = jfmt::parse_superblock(&jsb_raw);
    if j.magic != JBD2_MAGIC
        || (j.blocktype != jfmt::BLOCKTYPE_SB_V1 && j.blocktype != jfmt::BLOCKTYPE_SB_V2)
    {
        return Err("bad journal superblock".into());
    }
    if j.blocktype == jfmt::BLOCKTYPE_SB_V2 && j.feature_incompat & !jfmt::incompat::KNOWN != 0 {
        return Err("unknown journal features".into());
    }
    let map = map_journal(fs, ino, &inode, j.maxlen);
    let inode_blocks = inode.size / u64::from(fs.geo.block_size);
    if u64::from(j.maxlen) > inode_blocks {
        return Err(format!(
            "journal length {} exceeds its inode ({inode_blocks} blocks)",
            j.maxlen
        ));
    }
    let Some(jsb_phys) = map.physical(0) else {
        return Err("journal block 0 is not mapped".into());
    };
    let read = |n: u32| -> std::result::Result<Vec<u8>, String> {
        let p = map
            .physical(u64::from(n))
            .ok_or_else(|| format!("journal block {n} is not mapped"))?;
        if !fs.geo.block_in_fs(p) {
            return Err(format!("journal block {n} maps outside the file system"));
        }
        fs.read_block(p).map_err(|e| e.to_string())
    };
    let fc = fs.sb.has_compat(compat::FAST_COMMIT);
    let plan = plan_with(&j, fs.geo.block_size, &read, fc)?;
    Ok((j, plan, jsb_phys))
}

/// The file system view to check with `-n`: when the superblock says the
/// journal needs recovery and the internal journal is usable, the device
/// is overlaid with what replay would write (the journalled blocks, then the
/// superblock with needs_recovery cleared and the journal reset, as e2fsck
/// leaves them), and the superblock and descriptors are loaded again through
/// it. Otherwise `fs` is returned as is.
///
/// With [`Options::replay_anyway`], an internal journal holding
/// transactions without needs_recovery is replayed the same way (the
/// problem saying so is then reported with the replay, the view's
/// journal being reset).
///
/// Returns the view and the problems that replace the first opening's (the
/// superblock in use may differ after replay).
pub fn after_replay(
    fs: Box<Fs>,
    first_probs: Vec<Problem>,
    opts: &Options,
) -> Result<superblock::Opened> {
    let sb = &fs.sb;
    let unflagged = opts.replay_anyway
        && !sb.has_incompat(incompat::RECOVER)
        && super::journal::check(&fs, true)
            .iter()
            .any(|p| p.code == Code::JournalNeedsRecoveryNoFlag);
    if !(sb.has_incompat(incompat::RECOVER) || unflagged)
        || !sb.has_compat(compat::HAS_JOURNAL)
        || opts.superblock.is_some()
    {
        return Ok(superblock::Opened::Fs(fs, first_probs));
    }
    let external = super::journal::external(&fs);
    // e2fsck replays nothing from a journal whose superblock it finds
    // corrupt (a checksum that fails, a block size or length it refuses):
    // -n stops there, a repair resets the superblock and the transactions
    // are lost. Pass 0 judges the disk as it is.
    if !external
        && super::journal::check(&fs, opts.repairing)
            .iter()
            .any(|p| p.code == Code::JournalSuperblockCorrupt)
    {
        return Ok(superblock::Opened::Fs(fs, first_probs));
    }
    let planned = if !external && sb.journal_inum != 0 {
        plan_internal(&fs).map(|(j, p, phys)| (j, p, Some(phys)))
    } else if external
        && let Some(path) = super::journal::external_path(&fs, opts.journal_device.as_deref())
    {
        // An external journal (given with -j, or found by its UUID): its
        // superblock reset is written to that device by the repair, not
        // through this view.
        super::external_journal::open(&fs, &path).map(|e| (e.j, e.plan, None))
    } else {
        return Ok(superblock::Opened::Fs(fs, first_probs));
    };
    let Ok((_, plan, jsb_phys)) = planned else {
        // Pass 0's journal checks say what is wrong; check the disk as is.
        return Ok(superblock::Opened::Fs(fs, first_probs));
    };
    let mut notes = Vec::new();
    if unflagged {
        notes.push(super::journal::needs_recovery_no_flag(&fs));
    }
    let replayed = plan.failure.is_none() || !plan.blocks.is_empty();
    let fc_note = match &plan.fast_commit {
        Some((_, tags)) => format!(
            ", then {} fast-commit record{}",
            tags.len(),
            if tags.len() == 1 { "" } else { "s" }
        ),
        None => String::new(),
    };
    notes.push(Problem::new(Code::JournalAfterReplay).detail(format!(
        "{} transaction{}, {} block{}{fc_note}",
        if replayed { plan.transactions() } else { 0 },
        if plan.transactions() == 1 && replayed {
            ""
        } else {
            "s"
        },
        plan.blocks.len(),
        if plan.blocks.len() == 1 { "" } else { "s" }
    )));
    if let Some(t) = plan.failed_commit {
        notes.push(Problem::new(Code::JournalTransactionCorrupt).num(u64::from(t)));
    }
    for &b in &plan.bad_data_blocks {
        notes.push(Problem::new(Code::JournalBlockChecksum).blk(Blk(b)));
    }
    if let Some(f) = &plan.failure {
        notes.push(Problem::new(Code::JournalRecoveryFails).detail(f.to_string()));
    }
    let overlay = overlay_after(&fs, &plan, jsb_phys);
    // e2fsck's fast-commit replay writes the descriptor table it loaded
    // before the log was replayed.
    let pre_gd = fs.gd_raw.clone();
    let Fs { dev, .. } = *fs;
    let dev = dev.with_overlay(overlay);
    let opened = superblock::open(dev, opts)?;
    let opened = match (&plan.fast_commit, opened) {
        (Some((tid, tags)), superblock::Opened::Fs(view, probs)) => {
            match super::fast_commit::replay(&view, &pre_gd, tags) {
                Ok(written) => {
                    let bs = u64::from(view.geo.block_size);
                    let ranges: BTreeMap<u64, Vec<u8>> =
                        written.into_iter().map(|(b, d)| (b * bs, d)).collect();
                    let Fs { dev, .. } = *view;
                    let _ = probs;
                    superblock::open(dev.with_overlay(ranges), opts)?
                }
                Err(why) => {
                    let mut probs = probs;
                    probs.push(
                        Problem::new(Code::JournalFastCommitReplay)
                            .num(u64::from(*tid))
                            .detail(why),
                    );
                    superblock::Opened::Fatal(probs)
                }
            }
        }
        (_, opened) => opened,
    };
    Ok(match opened {
        superblock::Opened::Fs(fs, mut probs) => {
            probs.extend(notes);
            superblock::Opened::Fs(fs, probs)
        }
        superblock::Opened::Fatal(mut probs) => {
            probs.extend(notes);
            superblock::Opened::Fatal(probs)
        }
    })
}

/// Byte ranges of the device after replay: the journalled blocks, the
/// superblock in use with needs_recovery cleared (checksum redone) and
/// the journal superblock reset to start empty at the next sequence.
fn overlay_after(fs: &Fs, plan: &Plan, jsb_phys: Option<u64>) -> BTreeMap<u64, Vec<u8>> {
    let bs = u64::from(fs.geo.block_size);
    let dev_size = fs.dev.size();
    let mut out: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    for (&blk, data) in &plan.blocks {
        // Blocks past the device cannot be written home; e2fsck's write
        // would fail, so they stay out of the view.
        if let Some(off) = blk.checked_mul(bs)
            && off.checked_add(bs).is_some_and(|e| e <= dev_size)
        {
            out.insert(off, data.clone());
        }
    }
    let current = |out: &BTreeMap<u64, Vec<u8>>, blk: u64| -> Option<Vec<u8>> {
        match out.get(&(blk * bs)) {
            Some(d) => Some(d.clone()),
            None => fs.read_block(blk).ok(),
        }
    };
    // The superblock in use: a backup when the primary was refused. A
    // primary rewritten here with its checksum redone would be taken
    // next time, with whatever damage made it refused (a flipped UUID
    // seeds every other checksum); e2fsck goes on from the backup too.
    let (sb_blk, sb_off) = if fs.sb_block == fs.primary_sb_block() {
        (
            SUPERBLOCK_OFFSET / bs,
            narrow::to_usize(SUPERBLOCK_OFFSET % bs),
        )
    } else {
        (fs.sb_block, 0)
    };
    if let Some(mut b) = current(&out, sb_blk)
        && let Some(s) = b.get_mut(sb_off..sb_off + 1024)
    {
        let mut m = SuperblockMut(s);
        m.set_incompat(m.incompat() & !incompat::RECOVER);
        // A recovery that reports an error leaves the file system marked
        // not cleanly unmounted (e2fsck 1.47.0: "check forced" on the next
        // preen run), so the replayed view is not skipped as clean; a
        // repair marks it valid again once checked (`fix::journal`).
        if plan.failure.is_some() {
            m.set_state(m.state() & !STATE_VALID);
        }
        if m.ro_compat() & ro_compat::METADATA_CSUM != 0 {
            m.set_checksum();
        }
        out.insert(sb_blk * bs, b);
    }
    if let Some(jsb_phys) = jsb_phys
        && let Some(mut b) = current(&out, jsb_phys)
    {
        jfmt::reset_superblock(&mut b, plan.next_sequence);
        out.insert(jsb_phys * bs, b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::journal::incompat as jinc;

    const BS: usize = 1024;
    const MAXLEN: u32 = 64;

    fn jsb(seq: u32, start: u32, incompat: u32) -> JournalSuperblock {
        let mut b = vec![0u8; BS];
        b[0..4].copy_from_slice(&JBD2_MAGIC.to_be_bytes());
        b[4..8].copy_from_slice(&jfmt::BLOCKTYPE_SB_V2.to_be_bytes());
        b[0xC..0x10].copy_from_slice(&(BS as u32).to_be_bytes());
        b[0x10..0x14].copy_from_slice(&MAXLEN.to_be_bytes());
        b[0x14..0x18].copy_from_slice(&1u32.to_be_bytes());
        b[0x18..0x1C].copy_from_slice(&seq.to_be_bytes());
        b[0x1C..0x20].copy_from_slice(&start.to_be_bytes());
        b[0x28..0x2C].copy_from_slice(&incompat.to_be_bytes());
        jfmt::parse_superblock(&b)
    }

    fn header(kind: u32, seq: u32) -> Vec<u8> {
        let mut b = vec![0u8; BS];
        b[0..4].copy_from_slice(&JBD2_MAGIC.to_be_bytes());
        b[4..8].copy_from_slice(&kind.to_be_bytes());
        b[8..12].copy_from_slice(&seq.to_be_bytes());
        b
    }

    /// A 32-bit, checksum-less descriptor (8-byte tags).
    fn desc(seq: u32, blocks: &[u64]) -> Vec<u8> {
        let mut b = header(BLOCKTYPE_DESCRIPTOR, seq);
        let mut off = 12;
        for (i, &blk) in blocks.iter().enumerate() {
            let mut fl = if i == 0 { 0 } else { tag_flags::SAME_UUID };
            if i + 1 == blocks.len() {
                fl |= tag_flags::LAST_TAG;
            }
            b[off..off + 4].copy_from_slice(&(blk as u32).to_be_bytes());
            b[off + 6..off + 8].copy_from_slice(&(fl as u16).to_be_bytes());
            off += 8 + if i == 0 { 16 } else { 0 };
        }
        b
    }

    fn revoke(seq: u32, blocks: &[u64]) -> Vec<u8> {
        let mut b = header(BLOCKTYPE_REVOKE, seq);
        let count = 16 + 4 * blocks.len() as u32;
        b[12..16].copy_from_slice(&count.to_be_bytes());
        for (i, &blk) in blocks.iter().enumerate() {
            b[16 + 4 * i..20 + 4 * i].copy_from_slice(&(blk as u32).to_be_bytes());
        }
        b
    }

    fn commit(seq: u32, time: u64) -> Vec<u8> {
        let mut b = header(BLOCKTYPE_COMMIT, seq);
        b[0x30..0x38].copy_from_slice(&time.to_be_bytes());
        b
    }

    fn data(tag: u8) -> Vec<u8> {
        vec![tag; BS]
    }

    /// Lays `blocks` out in the log from `start`, wrapping at MAXLEN.
    fn journal(start: u32, blocks: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        let mut j = vec![vec![0u8; BS]; MAXLEN as usize];
        let mut pos = start;
        for b in blocks {
            j[pos as usize] = b;
            pos += 1;
            if pos >= MAXLEN {
                pos = 1;
            }
        }
        j
    }

    fn run(j: &JournalSuperblock, log: &[Vec<u8>]) -> Plan {
        let read = |n: u32| -> std::result::Result<Vec<u8>, String> {
            log.get(n as usize).cloned().ok_or_else(|| "hole".into())
        };
        plan(j, BS as u32, &read).unwrap()
    }

    #[test]
    fn revoke_applies_to_earlier_and_same_transactions_only() {
        let log = journal(
            1,
            vec![
                desc(10, &[100, 101]),
                data(1),
                data(2),
                commit(10, 1),
                // Transaction 11 revokes 100 and journals 101 again, then
                // transaction 12 journals 100 again (after its revoke).
                desc(11, &[101]),
                data(3),
                revoke(11, &[100, 101]),
                commit(11, 2),
                desc(12, &[100]),
                data(4),
                commit(12, 3),
            ],
        );
        let p = run(&jsb(10, 1, jinc::REVOKE), &log);
        assert_eq!(p.transactions(), 3);
        assert_eq!(p.blocks.keys().copied().collect::<Vec<_>>(), vec![100]);
        assert_eq!(p.blocks[&100], data(4));
        assert_eq!(p.revoke_hits, 3);
        assert_eq!(p.next_sequence, 14);
    }

    #[test]
    fn log_wraps_around() {
        let log = journal(
            60,
            vec![
                desc(5, &[200, 201, 202]),
                data(7),
                data(8),
                data(9),
                commit(5, 1),
            ],
        );
        let p = run(&jsb(5, 60, 0), &log);
        assert_eq!(p.blocks.len(), 3);
        assert_eq!(p.blocks[&202], data(9));
    }

    #[test]
    fn uncommitted_and_out_of_sequence_end_the_log() {
        let log = journal(
            1,
            vec![
                desc(1, &[300]),
                data(1),
                commit(1, 1),
                desc(2, &[301]),
                data(2),
                commit(7, 2),
            ],
        );
        let p = run(&jsb(1, 1, 0), &log);
        assert_eq!(p.blocks.keys().copied().collect::<Vec<_>>(), vec![300]);
        assert_eq!(p.end_transaction, 2);
    }

    #[test]
    fn sequence_numbers_wrap() {
        let log = journal(
            1,
            vec![
                desc(u32::MAX, &[400]),
                data(1),
                commit(u32::MAX, 1),
                desc(0, &[401]),
                data(2),
                revoke(0, &[400]),
                commit(0, 2),
            ],
        );
        let p = run(&jsb(u32::MAX, 1, 0), &log);
        assert_eq!(p.transactions(), 2);
        assert_eq!(p.blocks.keys().copied().collect::<Vec<_>>(), vec![401]);
    }

    #[test]
    fn bad_revoke_count_fails_before_replay() {
        let mut r = revoke(1, &[500]);
        r[12..16].copy_from_slice(&2000u32.to_be_bytes());
        let log = journal(1, vec![desc(1, &[501]), data(1), r, commit(1, 1)]);
        let p = run(&jsb(1, 1, 0), &log);
        assert!(matches!(p.failure, Some(Failure::Invalid(_))));
        assert!(p.blocks.is_empty());
    }

    #[test]
    fn clean_journal_and_bad_geometry() {
        let p = run(&jsb(3, 0, 0), &journal(1, vec![]));
        assert!(p.blocks.is_empty() && p.failure.is_none());
        let p = run(&jsb(3, 70, 0), &journal(1, vec![]));
        assert!(matches!(p.failure, Some(Failure::Corrupted(_))));
        assert!(plan(&jsb(3, 1, 0), 4096, &|_| Ok(vec![0u8; BS])).is_err());
    }

    /// s_first is used only where the log wraps, as jbd2 uses it: a log
    /// that ends before the journal's end replays whatever s_first holds,
    /// one that wraps goes on at s_first (past the journal's end: the
    /// replay fails; at block 0: the journal superblock ends the log).
    #[test]
    fn first_block_matters_only_where_the_log_wraps() {
        let txn = |seq| vec![desc(seq, &[300]), data(9), commit(seq, 1)];
        for first in [0, 2, MAXLEN, u32::MAX] {
            let mut j = jsb(3, 1, 0);
            j.first = first;
            let p = run(&j, &journal(1, txn(3)));
            assert!(p.failure.is_none(), "first {first}");
            assert_eq!(p.blocks.keys().copied().collect::<Vec<_>>(), vec![300]);
        }
        // Descriptor and data at the journal's last two blocks, the
        // commit at block 1 (where journal() wraps).
        let log = journal(MAXLEN - 2, txn(3));
        for first in [MAXLEN, u32::MAX] {
            let mut j = jsb(3, MAXLEN - 2, 0);
            j.first = first;
            let p = run(&j, &log);
            assert!(matches!(p.failure, Some(Failure::Corrupted(_))), "{first}");
            assert!(p.blocks.is_empty());
        }
        let mut j = jsb(3, MAXLEN - 2, 0);
        j.first = 0;
        let p = run(&j, &log);
        assert!(p.failure.is_none() && p.blocks.is_empty());
        j.first = 1;
        assert_eq!(run(&j, &log).blocks.len(), 1);
    }

    /// Garbage logs (deterministic pseudo-random) never panic and stay
    /// within the journal's length.
    #[test]
    fn garbage_logs_are_bounded() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..200u32 {
            let mut log = vec![vec![0u8; BS]; MAXLEN as usize];
            for (n, b) in log.iter_mut().enumerate() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if x.is_multiple_of(3) {
                    let kind = (x >> 8) as u32 % 6;
                    *b = header(kind, 1 + (x >> 16) as u32 % 3);
                }
                for (i, byte) in b.iter_mut().enumerate().skip(12) {
                    *byte = (x >> ((i + n) % 56)) as u8;
                }
            }
            let feats =
                [0, jinc::BIT64, jinc::CSUM_V3 | jinc::BIT64, jinc::CSUM_V2][round as usize % 4];
            let reads = std::cell::Cell::new(0u32);
            let read = |n: u32| -> std::result::Result<Vec<u8>, String> {
                reads.set(reads.get() + 1);
                log.get(n as usize).cloned().ok_or_else(|| "hole".into())
            };
            let _ = plan(&jsb(1, 1 + round % 60, feats), BS as u32, &read);
            // Three passes, each reading at most maxlen blocks plus the
            // data blocks of the descriptors it replays.
            assert!(reads.get() <= 6 * MAXLEN + 1, "{} reads", reads.get());
        }
    }
}
