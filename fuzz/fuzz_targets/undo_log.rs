//! Fuzz target: the undo log as `--rollback` reads it, a header first and
//! then one record at a time, each record's after-image crcs compared with
//! a block. Any bytes must give an error or a log, never a panic, and
//! nothing may be allocated from a length the log claims.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pfsck::store::undo;

fuzz_target!(|data: &[u8]| {
    let _ = undo::parse(data);
    let Ok((header, _, _)) = undo::parse_header(data) else {
        return;
    };
    let Ok(len) = undo::expected_len(&header) else {
        return;
    };
    if len != data.len() as u64 {
        return;
    }
    let rlen = header.record_len() as usize;
    let mut pos = undo::HEADER_LEN;
    let mut prev = None;
    let mut acc = 0u32;
    for i in 0..header.record_count {
        let Some(rec) = data.get(pos..pos + rlen) else {
            return;
        };
        let Ok((r, c)) = undo::parse_record(&header, i, pos as u64, rec, prev) else {
            return;
        };
        // The block as a device might hold it now: the before-image with
        // one byte changed.
        let mut now = r.data.to_vec();
        if let Some(b) = now.get_mut(i as usize % r.data.len().max(1)) {
            *b ^= 1;
        }
        let _ = r.unchanged(&now);
        let _ = r.unchanged(r.data);
        prev = Some(r.block);
        acc = undo::fold_record_crc(acc, c);
        pos += rlen;
    }
    let _ = undo::check_trailer(&header, &data[pos.min(data.len())..], acc);
});
