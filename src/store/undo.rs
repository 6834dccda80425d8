//! The undo log's on-disk format: encoding and pure, panic-free parsing.
//!
//! A log holds the before-image of every block a repair rewrites, so that
//! the original image can be restored byte for byte. Layout (little-endian):
//!
//! ```text
//! 0      header (128 bytes, crc32c of bytes 0..124 at 124):
//!          magic "PFSCKUND", version, header length (4096), block size,
//!          flags (0), device size, crc32c of each 512-byte sector of the
//!          superblock (bytes 1024..2048) before and after the repair,
//!          record count, length of the record area, reserved zeros
//! 512    state slot (16 bytes): "STAT", state, reserved, crc32c of 0..12
//! 4096   records, in increasing block order, each:
//!          "UREC", length, block number, crc32c (of the 16 header bytes,
//!          the after-image crcs and the data), the crc32c of each
//!          512-byte sector of the block as the repair wrote it (version 2
//!          only), data (the block before the repair)
//! end    trailer (24 bytes): "UEND", reserved, record count,
//!          crc32c over the records' crcs, crc32c of trailer bytes 0..20
//! ```
//!
//! The state slot is the only part rewritten in place, and it sits alone in
//! its own 512-byte sector, so a state change is a single sector write that
//! cannot tear the header. A slot that fails its checksum is read as
//! `Applying`: the device may have been written, and restoring the
//! before-images is always safe. Everything else is written once, into a
//! temporary file that is renamed into place only after it is complete and
//! synced, so a log at its final name without a valid trailer is damage,
//! never an interrupted write, and is refused.
//!
//! The after-image crcs let a rollback tell whether a block still holds what
//! the repair wrote: a block changed since (the file system mounted, or
//! edited with debugfs) would lose that change if its before-image were
//! written back. They are per sector for the reason the superblock's are: a
//! repair cut by a power loss may leave a block half old, half new, and that
//! block is still the repair's. Version 1 logs, without them, are still read;
//! their rollback cannot make that check.

use crate::narrow::to_usize;
use std::fmt;

pub const MAGIC: [u8; 8] = *b"PFSCKUND";
/// The version written.
pub const VERSION: u32 = 2;
/// The first format, without the after-image crcs; still read.
pub const VERSION_1: u32 = 1;
/// The unit of the after-image crcs: the smallest write a device tears.
pub const SECTOR: usize = 512;
pub const HEADER_LEN: usize = 4096;
/// Where the header's checksum sits (it covers the bytes before it).
const HEADER_CRC_AT: usize = 124;
pub const STATE_OFFSET: u64 = 512;
pub const STATE_LEN: usize = 16;
pub const RECORD_HEADER_LEN: usize = 20;
pub const TRAILER_LEN: usize = 24;
const STATE_MAGIC: [u8; 4] = *b"STAT";
const RECORD_MAGIC: [u8; 4] = *b"UREC";
const TRAILER_MAGIC: [u8; 4] = *b"UEND";

/// Where a repair stands, as last made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// The log is written; the device has not been touched.
    Prepared,
    /// The device is being (or may have been partly) written.
    Applying,
    /// Every new block is on the device and synced.
    Complete,
    /// The before-images were restored and synced.
    RolledBack,
}

impl State {
    fn code(self) -> u32 {
        match self {
            State::Prepared => 1,
            State::Applying => 2,
            State::Complete => 3,
            State::RolledBack => 4,
        }
    }

    fn from_code(c: u32) -> Option<State> {
        Some(match c {
            1 => State::Prepared,
            2 => State::Applying,
            3 => State::Complete,
            4 => State::RolledBack,
            _ => return None,
        })
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::Prepared => "prepared (device untouched)",
            State::Applying => "applying (repair interrupted)",
            State::Complete => "complete",
            State::RolledBack => "rolled back",
        })
    }
}

/// What identifies the device a log belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub device_size: u64,
    /// crc32c of each sector of the superblock before the repair.
    pub sb_before: [u32; 2],
    /// The same after the repair (equal to `sb_before` when the repair
    /// leaves the superblock alone).
    pub sb_after: [u32; 2],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// [`VERSION`] or [`VERSION_1`].
    pub version: u32,
    pub block_size: u32,
    pub identity: Identity,
    pub record_count: u64,
    /// Bytes of the record area (between the header and the trailer).
    pub records_len: u64,
}

/// One before-image, borrowed from the log's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub block: u64,
    pub data: &'a [u8],
    /// crc32c (4 bytes, little-endian) of each sector of the block as the
    /// repair wrote it; empty in a version 1 log.
    pub after: &'a [u8],
}

impl Record<'_> {
    /// Whether `current` (the block as the device holds it now) is still
    /// the repair's: each sector either as the repair wrote it or as it
    /// was before (not yet written, or already restored). `None` when the
    /// log cannot tell (version 1).
    pub fn unchanged(&self, current: &[u8]) -> Option<bool> {
        if self.after.is_empty() {
            return None;
        }
        if current.len() != self.data.len() {
            return Some(false);
        }
        let sectors = current
            .chunks(SECTOR)
            .zip(self.data.chunks(SECTOR))
            .zip(self.after.chunks_exact(4));
        Some(
            sectors
                .into_iter()
                .all(|((now, before), want)| now == before || crc(now).to_le_bytes() == want),
        )
    }
}

#[derive(Clone, Debug)]
pub struct UndoLog<'a> {
    pub header: Header,
    pub state: State,
    /// The state slot failed its checksum (read as `Applying`).
    pub state_damaged: bool,
    pub records: Vec<Record<'a>>,
}

/// Why a log cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogError(pub String);

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad<T>(msg: impl Into<String>) -> Result<T, LogError> {
    Err(LogError(msg.into()))
}

fn crc(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes(s.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(8)?)?;
    Some(u64::from_le_bytes(s.try_into().ok()?))
}

/// Length of one record of the current version holding a block of
/// `block_size` bytes.
pub fn record_len(block_size: u32) -> u64 {
    record_len_of(VERSION, block_size)
}

/// Bytes of after-image crcs in a record of `version`.
fn after_len(version: u32, block_size: u32) -> usize {
    if version == VERSION_1 {
        0
    } else {
        (block_size as usize).div_ceil(SECTOR) * 4
    }
}

/// Length of one record of `version` holding a block of `block_size` bytes.
pub fn record_len_of(version: u32, block_size: u32) -> u64 {
    RECORD_HEADER_LEN as u64 + after_len(version, block_size) as u64 + u64::from(block_size)
}

impl Header {
    pub fn record_len(&self) -> u64 {
        record_len_of(self.version, self.block_size)
    }
}

/// The header block (4096 bytes), with the state slot set to `state`.
pub fn encode_header(h: &Header, state: State) -> Vec<u8> {
    let mut b = vec![0u8; HEADER_LEN];
    b[0..8].copy_from_slice(&MAGIC);
    b[8..12].copy_from_slice(&h.version.to_le_bytes());
    #[allow(clippy::cast_possible_truncation)] // HEADER_LEN is 4096
    b[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    b[16..20].copy_from_slice(&h.block_size.to_le_bytes());
    b[24..32].copy_from_slice(&h.identity.device_size.to_le_bytes());
    b[32..36].copy_from_slice(&h.identity.sb_before[0].to_le_bytes());
    b[36..40].copy_from_slice(&h.identity.sb_before[1].to_le_bytes());
    b[40..44].copy_from_slice(&h.identity.sb_after[0].to_le_bytes());
    b[44..48].copy_from_slice(&h.identity.sb_after[1].to_le_bytes());
    b[48..56].copy_from_slice(&h.record_count.to_le_bytes());
    b[56..64].copy_from_slice(&h.records_len.to_le_bytes());
    let c = crc(&b[0..HEADER_CRC_AT]);
    b[HEADER_CRC_AT..HEADER_CRC_AT + 4].copy_from_slice(&c.to_le_bytes());
    let s = to_usize(STATE_OFFSET);
    b[s..s + STATE_LEN].copy_from_slice(&encode_state(state));
    b
}

/// The state slot, written alone at `STATE_OFFSET` to change state.
pub fn encode_state(state: State) -> [u8; STATE_LEN] {
    let mut b = [0u8; STATE_LEN];
    b[0..4].copy_from_slice(&STATE_MAGIC);
    b[4..8].copy_from_slice(&state.code().to_le_bytes());
    let c = crc(&b[0..12]);
    b[12..16].copy_from_slice(&c.to_le_bytes());
    b
}

/// Appends one record to `out`: block `block`, `data` before the repair,
/// `after` as the repair writes it (`None`: a version 1 record). Returns
/// its crc (folded into the trailer).
pub fn encode_record(out: &mut Vec<u8>, block: u64, data: &[u8], after: Option<&[u8]>) -> u32 {
    let start = out.len();
    out.extend_from_slice(&RECORD_MAGIC);
    #[allow(clippy::cast_possible_truncation)] // a block: at most 64 KiB
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&block.to_le_bytes());
    let mut c = crc32c::crc32c(&out[start..start + 16]);
    let mut crcs = Vec::new();
    if let Some(after) = after {
        for sector in after.chunks(SECTOR) {
            crcs.extend_from_slice(&crc(sector).to_le_bytes());
        }
    }
    c = crc32c::crc32c_append(c, &crcs);
    c = crc32c::crc32c_append(c, data);
    out.extend_from_slice(&c.to_le_bytes());
    out.extend_from_slice(&crcs);
    out.extend_from_slice(data);
    c
}

/// Running crc over the records' crcs, for the trailer.
pub fn fold_record_crc(acc: u32, record_crc: u32) -> u32 {
    crc32c::crc32c_append(acc, &record_crc.to_le_bytes())
}

pub fn encode_trailer(record_count: u64, records_crc: u32) -> [u8; TRAILER_LEN] {
    let mut b = [0u8; TRAILER_LEN];
    b[0..4].copy_from_slice(&TRAILER_MAGIC);
    b[8..16].copy_from_slice(&record_count.to_le_bytes());
    b[16..20].copy_from_slice(&records_crc.to_le_bytes());
    let c = crc(&b[0..20]);
    b[20..24].copy_from_slice(&c.to_le_bytes());
    b
}

/// Parses the header and state slot only (from at least the first
/// `HEADER_LEN` bytes): enough to tell whether a file is a pfsck log and
/// what state it is in, without reading the records.
pub fn parse_header(b: &[u8]) -> Result<(Header, State, bool), LogError> {
    if b.get(0..8).is_none_or(|m| m != MAGIC) {
        return bad("not a pfsck undo log (bad magic)");
    }
    if b.len() < HEADER_LEN {
        return bad(format!(
            "truncated undo log: {} bytes, shorter than its {HEADER_LEN}-byte header",
            b.len()
        ));
    }
    let field = |off| u32_at(b, off).unwrap_or(0);
    let field64 = |off| u64_at(b, off).unwrap_or(0);
    if field(HEADER_CRC_AT) != crc(&b[0..HEADER_CRC_AT]) {
        return bad("undo log header checksum mismatch");
    }
    let version = field(8);
    if version != VERSION && version != VERSION_1 {
        return bad(format!(
            "undo log version {version} is not supported (this pfsck reads versions \
             {VERSION_1} and {VERSION})"
        ));
    }
    if field(12) as usize != HEADER_LEN {
        return bad(format!("undo log header length {} is invalid", field(12)));
    }
    let block_size = field(16);
    if !(block_size.is_power_of_two() && (1024..=65536).contains(&block_size)) {
        return bad(format!("undo log block size {block_size} is invalid"));
    }
    if field(20) != 0 {
        return bad(format!("undo log has unknown flags {:#x}", field(20)));
    }
    let header = Header {
        version,
        block_size,
        identity: Identity {
            device_size: field64(24),
            sb_before: [field(32), field(36)],
            sb_after: [field(40), field(44)],
        },
        record_count: field64(48),
        records_len: field64(56),
    };
    let s = to_usize(STATE_OFFSET);
    let slot = &b[s..s + STATE_LEN];
    let slot_ok = slot[0..4] == STATE_MAGIC && u32_at(slot, 12) == Some(crc(&slot[0..12]));
    let state = if slot_ok {
        State::from_code(u32_at(slot, 4).unwrap_or(0))
    } else {
        None
    };
    Ok(match state {
        Some(st) => (header, st, false),
        None => (header, State::Applying, true),
    })
}

/// Parses and verifies a whole log: header, every record's checksum, block
/// order and bounds, and the trailer. Any damage is an error.
pub fn parse(b: &[u8]) -> Result<UndoLog<'_>, LogError> {
    let (header, state, state_damaged) = parse_header(b)?;
    let rlen = header.record_len();
    let expected_records_len = header.record_count.checked_mul(rlen);
    if expected_records_len != Some(header.records_len) {
        return bad("undo log header: record count and record area length disagree");
    }
    let total = (HEADER_LEN as u64)
        .checked_add(header.records_len)
        .and_then(|t| t.checked_add(TRAILER_LEN as u64));
    match total {
        Some(t) if t == b.len() as u64 => {}
        Some(t) if t > b.len() as u64 => {
            return bad(format!(
                "truncated undo log: {} bytes, its header describes {t}",
                b.len()
            ));
        }
        _ => {
            return bad(format!(
                "undo log has {} bytes, its header describes {}",
                b.len(),
                total.map_or("more than 2^64".to_string(), |t| t.to_string())
            ));
        }
    }
    // Fits in memory: checked against the slice's length just above.
    let count = to_usize(header.record_count);
    let rlen = to_usize(rlen);
    let mut records = Vec::with_capacity(count);
    let mut pos = HEADER_LEN;
    let mut acc = 0u32;
    let mut prev: Option<u64> = None;
    for i in 0..count {
        let rec = &b[pos..pos + rlen];
        let (record, c) = parse_record(&header, i as u64, pos as u64, rec, prev)?;
        prev = Some(record.block);
        acc = fold_record_crc(acc, c);
        records.push(record);
        pos += rlen;
    }
    check_trailer(&header, &b[pos..pos + TRAILER_LEN], acc)?;
    Ok(UndoLog {
        header,
        state,
        state_damaged,
        records,
    })
}

/// Length of the whole log a header describes, if it is consistent.
pub fn expected_len(header: &Header) -> Result<u64, LogError> {
    let rlen = header.record_len();
    if header.record_count.checked_mul(rlen) != Some(header.records_len) {
        return bad("undo log header: record count and record area length disagree");
    }
    (HEADER_LEN as u64)
        .checked_add(header.records_len)
        .and_then(|t| t.checked_add(TRAILER_LEN as u64))
        .ok_or_else(|| LogError("undo log header describes more than 2^64 bytes".to_string()))
}

/// Verifies record `i` (at byte `pos` of the log; `rec` its
/// `record_len` bytes) against the header and the block of the record
/// before it; returns it and its crc (for the trailer).
pub fn parse_record<'a>(
    header: &Header,
    i: u64,
    pos: u64,
    rec: &'a [u8],
    prev: Option<u64>,
) -> Result<(Record<'a>, u32), LogError> {
    let bs = header.block_size as usize;
    let alen = after_len(header.version, header.block_size);
    if rec.len() as u64 != header.record_len() {
        return bad(format!("undo log record {i} (at byte {pos}): truncated"));
    }
    if rec[0..4] != RECORD_MAGIC {
        return bad(format!("undo log record {i} (at byte {pos}): bad magic"));
    }
    let len = u32_at(rec, 4).unwrap_or(0) as usize;
    let block = u64_at(rec, 8).unwrap_or(0);
    if len != bs {
        return bad(format!(
            "undo log record {i}: length {len} differs from the block size {bs}"
        ));
    }
    let stored = u32_at(rec, 16).unwrap_or(0);
    let c = crc32c::crc32c_append(crc(&rec[0..16]), &rec[RECORD_HEADER_LEN..]);
    if c != stored {
        return bad(format!(
            "undo log record {i} (block {block}): checksum mismatch"
        ));
    }
    if prev.is_some_and(|p| block <= p) {
        return bad(format!("undo log record {i}: block {block} out of order"));
    }
    let end = block
        .checked_mul(bs as u64)
        .and_then(|o| o.checked_add(bs as u64));
    if end.is_none_or(|e| e > header.identity.device_size) {
        return bad(format!(
            "undo log record {i}: block {block} lies beyond the device"
        ));
    }
    Ok((
        Record {
            block,
            data: &rec[RECORD_HEADER_LEN + alen..],
            after: &rec[RECORD_HEADER_LEN..RECORD_HEADER_LEN + alen],
        },
        c,
    ))
}

/// Verifies the trailer `t` against the header and the folded crc of
/// every record (`acc`).
pub fn check_trailer(header: &Header, t: &[u8], acc: u32) -> Result<(), LogError> {
    if t.len() != TRAILER_LEN || t[0..4] != TRAILER_MAGIC || u32_at(t, 20) != Some(crc(&t[0..20])) {
        return bad("undo log trailer missing or damaged (the log was not completely written)");
    }
    if u64_at(t, 8) != Some(header.record_count) || u32_at(t, 16) != Some(acc) {
        return bad("undo log trailer does not match its records");
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data, small by construction
mod tests {
    use super::*;

    fn sample(state: State) -> Vec<u8> {
        sample_of(VERSION, state)
    }

    fn sample_of(version: u32, state: State) -> Vec<u8> {
        let blocks: [(u64, u8); 3] = [(1, 0x11), (5, 0x55), (6, 0x66)];
        let mut recs = Vec::new();
        let mut acc = 0;
        for &(b, v) in &blocks {
            let new = [!v; 1024];
            let after = (version == VERSION).then_some(&new[..]);
            acc = fold_record_crc(acc, encode_record(&mut recs, b, &[v; 1024], after));
        }
        let h = Header {
            version,
            block_size: 1024,
            identity: Identity {
                device_size: 8192,
                sb_before: [7, 8],
                sb_after: [9, 10],
            },
            record_count: 3,
            records_len: recs.len() as u64,
        };
        let mut out = encode_header(&h, state);
        out.extend_from_slice(&recs);
        out.extend_from_slice(&encode_trailer(3, acc));
        out
    }

    #[test]
    fn round_trip() {
        let b = sample(State::Applying);
        let log = parse(&b).unwrap();
        assert_eq!(log.state, State::Applying);
        assert!(!log.state_damaged);
        assert_eq!(log.header.identity.sb_after, [9, 10]);
        let got: Vec<(u64, u8)> = log.records.iter().map(|r| (r.block, r.data[0])).collect();
        assert_eq!(got, vec![(1, 0x11), (5, 0x55), (6, 0x66)]);
    }

    #[test]
    fn after_images_tell_a_changed_block() {
        let b = sample(State::Complete);
        let log = parse(&b).unwrap();
        let r = log.records[0];
        assert_eq!(r.unchanged(&[!0x11; 1024]), Some(true));
        assert_eq!(r.unchanged(&[0x11; 1024]), Some(true));
        // Torn: the first sector restored, the second still the repair's.
        let mut torn = [!0x11u8; 1024];
        torn[..512].fill(0x11);
        assert_eq!(r.unchanged(&torn), Some(true));
        let mut edited = [!0x11u8; 1024];
        edited[700] = 0;
        assert_eq!(r.unchanged(&edited), Some(false));
    }

    #[test]
    fn version_1_logs_are_still_read() {
        let b = sample_of(VERSION_1, State::Complete);
        let log = parse(&b).unwrap();
        assert_eq!(log.header.version, VERSION_1);
        assert_eq!(log.records.len(), 3);
        assert_eq!(log.records[1].data, &[0x55; 1024][..]);
        assert_eq!(log.records[1].unchanged(&[0; 1024]), None);
        assert_eq!(b.len() as u64, expected_len(&log.header).unwrap());
    }

    #[test]
    fn state_changes_in_its_slot() {
        let mut b = sample(State::Prepared);
        let s = STATE_OFFSET as usize;
        b[s..s + STATE_LEN].copy_from_slice(&encode_state(State::Complete));
        assert_eq!(parse(&b).unwrap().state, State::Complete);
        b[s + 5] ^= 1;
        let log = parse(&b).unwrap();
        assert_eq!(log.state, State::Applying);
        assert!(log.state_damaged);
    }

    #[test]
    fn every_truncation_is_refused() {
        let b = sample(State::Applying);
        for len in 0..b.len() {
            assert!(parse(&b[..len]).is_err(), "length {len}");
        }
        let mut longer = b.clone();
        longer.push(0);
        assert!(parse(&longer).is_err());
    }

    #[test]
    fn every_flipped_byte_outside_the_state_slot_is_refused() {
        for version in [VERSION_1, VERSION] {
            flipped_bytes_refused(&sample_of(version, State::Applying));
        }
    }

    fn flipped_bytes_refused(b: &[u8]) {
        let s = STATE_OFFSET as usize;
        for i in 0..b.len() {
            if (s..s + STATE_LEN).contains(&i) {
                continue;
            }
            // Padding of the header block is not covered by any checksum and
            // means nothing.
            if (HEADER_CRC_AT + 4..HEADER_LEN).contains(&i) {
                continue;
            }
            let mut c = b.to_vec();
            c[i] ^= 0x40;
            assert!(parse(&c).is_err(), "flip at byte {i} accepted");
        }
    }

    /// What the fuzz target `undo_log` does, for a fixed count of random
    /// mutations of a valid log (in case no fuzzer runs here): flips,
    /// overwritten fields with extreme values, truncations, insertions.
    /// No panic; any log accepted has exactly the length its header says.
    #[test]
    fn mutations_of_a_valid_log_never_panic() {
        let good = sample(State::Complete);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let mut b = good.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() % b.len() as u64) as usize;
                match next() % 5 {
                    0 => b[at] ^= 1 << (next() % 8),
                    1 => {
                        let v = [0u64, u64::MAX, u64::MAX / 2, 1 << 40][(next() % 4) as usize];
                        let end = (at + 8).min(b.len());
                        b[at..end].copy_from_slice(&v.to_le_bytes()[..end - at]);
                    }
                    2 => b.truncate(at),
                    3 => b.insert(at, next() as u8),
                    _ => b.extend_from_slice(&[0; 24]),
                }
                if b.is_empty() {
                    break;
                }
            }
            if let Ok(log) = parse(&b) {
                assert_eq!(expected_len(&log.header).ok(), Some(b.len() as u64));
                for r in &log.records {
                    let _ = r.unchanged(r.data);
                }
            }
            if let Ok((h, _, _)) = parse_header(&b) {
                let _ = expected_len(&h);
            }
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut x: u64 = 0x1234_5678;
        for n in 0..2000usize {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 6000) as usize;
            let mut v: Vec<u8> = (0..len).map(|i| (x >> (i % 56)) as u8).collect();
            if n % 2 == 0 && v.len() >= 8 {
                v[0..8].copy_from_slice(&MAGIC);
            }
            let _ = parse(&v);
        }
        // A valid header claiming an absurd record count.
        let h = Header {
            version: VERSION,
            block_size: 4096,
            identity: Identity {
                device_size: u64::MAX,
                sb_before: [0; 2],
                sb_after: [0; 2],
            },
            record_count: u64::MAX / 2,
            records_len: u64::MAX,
        };
        assert!(parse(&encode_header(&h, State::Applying)).is_err());
    }
}
