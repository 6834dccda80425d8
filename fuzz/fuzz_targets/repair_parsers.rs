//! Fuzz target: the repair layer's parsers (undo log, mountinfo) must
//! return errors, never panic, on any bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = pfsck::store::undo::parse(data);
    let _ = pfsck::store::undo::parse_header(data);
    let _ = pfsck::store::mounted::parse_mountinfo(&String::from_utf8_lossy(data));
});
