//! `pfsck --online TARGET`: the online check's command line, report and
//! exit code; the work is `online::run`'s.

use super::{
    Args, EXIT_CANCELLED, EXIT_OPERATIONAL, EXIT_USAGE, parse_threads, progress_reporter, report,
};
use crate::check;
use crate::online::{self, OnlineError};

/// Options of the check of the snapshot: always a full check; threads
/// as asked (by default sized from the idle CPUs, again at every pass).
pub fn check_options(args: &Args) -> Result<check::Options, String> {
    Ok(check::Options {
        auto_threads: args.threads == "auto",
        threads: parse_threads(&args.threads)?,
        force: true,
        superblock: args.superblock,
        blocksize: args.blocksize,
        repairing: false,
        replay_anyway: false,
        recheck: false,
        mmp_claimed: false,
        journal_device: args.journal.clone(),
        control: super::control().clone(),
        clock: super::clock(),
        time_trust: super::conf::load().time_trust(),
        overlap: super::overlap(),
        optimize_extents: !args.extended.no_optimize_extents && !args.extended.fixes_only,
        rehash_dirs: false,
        journal_only: false,
        convert_bmap: false,
        events: None,
        spill: None,
    })
}

/// Ctrl-C, SIGTERM and SIGHUP cancel the check; the snapshot is then
/// removed and the file system is never left frozen.
pub fn cancel_on_signals() {
    extern "C" fn on_signal(_: libc::c_int) {
        // An atomic store: async-signal-safe (the control exists: made
        // before the handler is installed).
        if let Some(c) = super::CONTROL.get() {
            c.cancel();
        }
    }
    let _ = ctrlc::set_handler(|| super::control().cancel());
    super::control();
    online::sys::cancel_on_terminate(on_signal);
}

/// `PFSCK_ONLINE_FAULT=POINT`: the online check's test hook (see
/// `online::Options::fault`).
pub fn fault_point() -> Option<String> {
    std::env::var("PFSCK_ONLINE_FAULT").ok()
}

/// e2scrub's configuration also sizes pfsck's LVM snapshots.
pub fn lvm_snap_mb() -> u64 {
    online::lvm::snap_size_mb(&std::fs::read_to_string(online::lvm::CONF).unwrap_or_default())
}

pub fn run(args: &Args) -> i32 {
    let mut opts = match check_options(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("pfsck: {e}");
            return EXIT_USAGE;
        }
    };
    // The snapshot's check honours the cap as an offline one does.
    match super::spill(args) {
        Ok(s) => opts.spill = s,
        Err(e) => {
            eprintln!("pfsck: {e}");
            return EXIT_OPERATIONAL;
        }
    }
    cancel_on_signals();
    let name = args.device.display().to_string();
    let reporter = match progress_reporter(args, &name) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let result = online::run(
        &args.device,
        &online::Options {
            check: &opts,
            mark: !args.no,
            lvm_snap_mb: lvm_snap_mb(),
            fault: fault_point(),
        },
    );
    if let Some(r) = reporter {
        r.finish();
    }
    match result {
        Ok(out) => report::print_online(&out.report, args, &out.info),
        Err(OnlineError::Cancelled) => {
            eprintln!("{name}: online check cancelled; snapshot removed");
            EXIT_CANCELLED
        }
        Err(e) => {
            if args.json {
                report::print_error_json(&name, &e.to_string(), EXIT_OPERATIONAL);
            }
            eprintln!("pfsck: {e}");
            EXIT_OPERATIONAL
        }
    }
}
