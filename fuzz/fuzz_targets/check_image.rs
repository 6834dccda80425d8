//! A whole read-only check of an arbitrary image held in memory: it may
//! report anything, but must not panic, hang or exhaust memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pfsck::check::{Options, run_device};
use pfsck::engine::Threads;
use pfsck::io::Device;

fuzz_target!(|data: &[u8]| {
    let opts = Options {
        threads: Threads(1),
        ..Options::default()
    };
    let _ = run_device(Device::from_bytes(data.to_vec()), &opts);
});
