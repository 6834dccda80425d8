//! Command line: e2fsck's options, the report, exit codes (fsck(8)).

/// `println!`/`print!` to stdout that ignore a closed stdout: `pfsck ... |
/// head` must finish its repair and exit with its code, as e2fsck does,
/// not panic on the broken pipe.
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($t)*);
    }};
}

mod args;
mod ask;
mod badblocks;
mod conf;
mod online;
pub mod progress;
mod repair;
pub mod report;
mod rollback;
mod scrub;
mod stream;

use crate::check::{self, Options};
use crate::engine::{Clock, Control, Threads};
use crate::error::Error;
use crate::fix;
pub use args::Args;
use std::io::IsTerminal;

pub const EXIT_OK: i32 = 0;
pub const EXIT_CORRECTED: i32 = 1;
/// The root file system was repaired while mounted: reboot before use.
pub const EXIT_REBOOT: i32 = 2;
pub const EXIT_UNCORRECTED: i32 = 4;
pub const EXIT_OPERATIONAL: i32 = 8;
pub const EXIT_USAGE: i32 = 16;
pub const EXIT_CANCELLED: i32 = 32;

fn parse_threads(s: &str) -> Result<Threads, String> {
    if s == "auto" {
        return Ok(Threads::auto());
    }
    match s.parse::<usize>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(Threads(n)),
        _ => Err(format!(
            "invalid thread count '{s}' (a number from 1 to 1024, or auto)"
        )),
    }
}

/// The process's run control: the signal handlers cancel it, the progress
/// reporter reads it, every check this process runs shares it. Process
/// state, so the binary's (a library user makes a `Control` per run).
static CONTROL: std::sync::OnceLock<Control> = std::sync::OnceLock::new();

fn control() -> &'static Control {
    CONTROL.get_or_init(Control::default)
}

/// `PFSCK_TIME=SECONDS` fixes the clock of a run (like e2fsck's
/// `E2FSCK_TIME`: tests and reproducible repairs).
fn clock() -> Clock {
    std::env::var("PFSCK_TIME")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Clock::System, Clock::Fixed)
}

/// `PFSCK_NO_OVERLAP=1`: pass 2 after pass 1, as before the pipeline
/// (tests compare the two; benchmarks measure it).
fn overlap() -> bool {
    std::env::var_os("PFSCK_NO_OVERLAP").is_none_or(|v| v != "1")
}

pub fn main() -> i32 {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv
        .get(1)
        .is_some_and(|a| a == crate::online::watchdog::ARG)
    {
        return crate::online::watchdog::serve();
    }
    if scrub::invoked(&argv) {
        return scrub::main(&argv);
    }
    match args::parse(argv) {
        Ok(args::Parsed::Run(a)) => run(&a),
        Ok(args::Parsed::Help(text)) => {
            out!("{text}");
            EXIT_OK
        }
        Ok(args::Parsed::Version) => {
            outln!(
                "pfsck {} (git {})",
                env!("CARGO_PKG_VERSION"),
                env!("PFSCK_GIT_COMMIT")
            );
            EXIT_OK
        }
        Err(text) => {
            eprint!("{text}");
            EXIT_USAGE
        }
    }
}

/// The progress output `-C`/`--progress` ask for, started; Err: the exit
/// code of a bad request (already reported).
fn progress_reporter(args: &Args, device: &str) -> Result<Option<progress::Reporter>, i32> {
    let target = match (args.progress, args.progress_fd) {
        (true, _) | (false, Some(0)) => progress::Target::Bar,
        (false, Some(fd)) if fd > 0 => progress::Target::Fd(fd),
        (false, Some(fd)) => {
            eprintln!("pfsck: invalid progress file descriptor {fd}");
            return Err(EXIT_USAGE);
        }
        (false, None) => return Ok(None),
    };
    progress::Reporter::start(target, device.to_string(), control().clone())
        .map(Some)
        .map_err(|e| {
            eprintln!("pfsck: cannot write progress: {e}");
            EXIT_USAGE
        })
}

/// Options e2fsck refuses together (one line on stderr, exit 8 as e2fsck).
fn option_conflicts(args: &Args) -> Result<(), i32> {
    let ext = &args.extended;
    let conflict = if args.no && args.optimize_dirs {
        Some("the -n and -D options are incompatible")
    } else if args.no && args.scan_bad_blocks > 0 {
        Some("the -n and -c options are incompatible")
    } else if args.no && args.bad_blocks_file.is_some() {
        Some("the -n and -l/-L options are incompatible")
    } else if args.optimize_dirs && ext.fixes_only {
        Some("the -D and -E fixes_only options are incompatible")
    } else if ext.bmap2extent && ext.fixes_only {
        Some("the -E bmap2extent and fixes_only options are incompatible")
    } else {
        None
    };
    match conflict {
        Some(msg) => {
            eprintln!("pfsck: {msg}");
            Err(EXIT_OPERATIONAL)
        }
        None => Ok(()),
    }
}

/// Test hook: `PFSCK_FAULT=POINT` stops pfsck (SIGSTOP) at that point
/// (`before-check`, `before-commit`, `pass-N` once pass N's header is
/// printed), so that a test can deliver a signal or read the output
/// there.
fn fault(point: &str) {
    if std::env::var_os("PFSCK_FAULT").is_some_and(|v| v == point) {
        crate::online::sys::raise(libc::SIGSTOP);
        // The signal handler runs on its own thread: give it time to set
        // the flag the run then looks at.
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// e2fsck's warning before a check of a mounted file system.
fn warn_mounted(args: &Args, device: &str) {
    if args.json {
        eprintln!("pfsck: warning: {device} is mounted");
    } else {
        outln!("Warning: {device} is mounted.");
    }
}

/// A repair of a mounted file system refused (`repair::session::
/// mount_policy`): e2fsck's "is mounted." line, exit 8.
fn refuse_mounted(args: &Args, device: &str, msg: &str) -> i32 {
    if args.json {
        report::print_error_json(device, msg, EXIT_OPERATIONAL);
    } else {
        outln!("{device} is mounted.");
    }
    eprintln!("pfsck: {msg}");
    EXIT_OPERATIONAL
}

/// `--max-memory`'s scratch file, offline or online.
pub(crate) fn spill(args: &Args) -> Result<Option<std::sync::Arc<crate::engine::Spill>>, String> {
    let Some(cap) = args.max_memory else {
        return Ok(None);
    };
    let dir = crate::engine::spill::scratch_dir();
    match crate::engine::Spill::new(cap, &dir) {
        Ok(s) => Ok(Some(std::sync::Arc::new(s))),
        Err(e) => Err(format!(
            "--max-memory: cannot create a scratch file in {}: {e}",
            dir.display()
        )),
    }
}

/// A run stopped by a signal before anything was written: exit 32.
fn cancelled(device: &str) -> i32 {
    eprintln!("{device}: check cancelled by user");
    EXIT_CANCELLED
}

/// The repair mode the options ask for (None: interactive, or `-n`)
/// and the threads, once the options are known to go together; Err(the
/// exit code) when they do not.
fn modes(args: &Args) -> Result<(Option<fix::Mode>, Threads), i32> {
    let preen = args.preen || args.auto;
    if [args.no, args.yes, preen].iter().filter(|&&m| m).count() > 1 {
        // e2fsck exits 8 here, not 16.
        eprintln!("pfsck: only one of the options -p/-a, -n or -y may be specified");
        return Err(EXIT_OPERATIONAL);
    }
    option_conflicts(args)?;
    if args.no && args.extended.bmap2extent {
        // e2fsck -n schedules no conversion either (it then fails to write
        // the superblock it marked changed).
        eprintln!("pfsck: -E bmap2extent converts nothing under -n");
    }
    let mode = if args.yes {
        Some(fix::Mode::Yes)
    } else if preen {
        Some(fix::Mode::Preen)
    } else {
        None
    };
    if !args.no && mode.is_none() {
        // Like e2fsck: questions need someone to answer them.
        if !std::io::stdin().is_terminal() {
            eprintln!(
                "pfsck: need a terminal for interactive repairs; use -n to check, -p or -y to repair"
            );
            return Err(EXIT_OPERATIONAL);
        }
        if args.json {
            eprintln!("pfsck: --json needs -n, -p or -y (questions would mix with the JSON)");
            return Err(EXIT_USAGE);
        }
    }
    if args
        .blocksize
        .is_some_and(|b| !(b.is_power_of_two() && (1024..=65536).contains(&b)))
    {
        eprintln!("pfsck: invalid block size for -B (1024 to 65536, a power of two)");
        return Err(EXIT_USAGE);
    }
    let threads = match parse_threads(&args.threads) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("pfsck: {e}");
            return Err(EXIT_USAGE);
        }
    };
    Ok((mode, threads))
}

/// What the run sets up before the check: the signal handlers, the
/// flush (`-F`), the idle priority.
fn prepare(args: &Args) -> Result<(), i32> {
    {
        // Ctrl-C, SIGTERM, SIGHUP: the check stops at its next unit and
        // exits 32 (nothing is written before the commit, and the commit,
        // once begun, finishes: its undo log covers a kill).
        let device = args.device.display().to_string();
        let _ = ctrlc::set_handler(move || {
            control().cancel();
            if ask::ASKING.load(std::sync::atomic::Ordering::Relaxed) {
                eprintln!("\n{device}: check cancelled by user");
                std::process::exit(EXIT_CANCELLED);
            }
        });
    }
    if args.flush
        && let Err(e) = std::fs::File::open(&args.device).and_then(|f| f.sync_all())
    {
        eprintln!("pfsck: {e} while trying to flush {}", args.device.display());
        return Err(EXIT_OPERATIONAL);
    }
    if args.idle
        && let Err(e) = crate::engine::budget::set_idle_priority()
    {
        eprintln!("pfsck: cannot switch to SCHED_IDLE: {e}");
        return Err(EXIT_OPERATIONAL);
    }
    Ok(())
}

/// The check's options from the command line.
fn options(args: &Args, threads: Threads) -> Result<Options, i32> {
    let mut opts = Options {
        auto_threads: args.threads == "auto",
        threads,
        force: args.force,
        superblock: args.superblock,
        blocksize: args.blocksize,
        repairing: false,
        replay_anyway: false,
        recheck: false,
        mmp_claimed: false,
        journal_device: args.journal.clone(),
        control: control().clone(),
        clock: clock(),
        time_trust: conf::load().time_trust(),
        overlap: overlap(),
        optimize_extents: !args.extended.no_optimize_extents && !args.extended.fixes_only,
        rehash_dirs: args.optimize_dirs,
        journal_only: args.extended.journal_only && !args.force,
        convert_bmap: args.extended.bmap2extent,
        events: None,
        spill: None,
    };
    match spill(args) {
        Ok(s) => opts.spill = s,
        Err(e) => {
            eprintln!("pfsck: {e}");
            return Err(EXIT_OPERATIONAL);
        }
    }
    Ok(opts)
}

pub fn run(args: &Args) -> i32 {
    if let Some(log) = &args.rollback {
        return rollback::run(log, &args.device, args.force_rollback);
    }
    if args.online {
        return online::run(args);
    }
    let (mode, threads) = match modes(args) {
        Ok(m) => m,
        Err(code) => return code,
    };
    if let Err(code) = prepare(args) {
        return code;
    }
    let mut opts = match options(args, threads) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let device = args.device.display().to_string();
    let reporter = match progress_reporter(args, &device) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if args.no {
        // A repair's session judges the mount itself.
        use crate::repair::session::{MountVerdict, mount_policy};
        if let Ok(MountVerdict::Warn) = mount_policy(&args.device, false, args.force) {
            warn_mounted(args, &device);
        }
    }
    fault("before-check");
    let bar = reporter.as_ref().and_then(|r| r.bar());
    if !args.no {
        let mut code = match mode {
            // Preen prints no headers, only the fixes once they are made.
            Some(fix::Mode::Yes) if !args.json => {
                let streamer = std::sync::Arc::new(std::sync::Mutex::new(
                    stream::Streamer::repairing(&device, bar),
                ));
                opts.events = Some(stream::Streamer::events(&streamer));
                repair::run(args, &opts, fix::Mode::Yes, &device, None)
            }
            Some(mode) => repair::run(args, &opts, mode, &device, None),
            None => {
                // Questions are asked as the check goes, under their
                // pass's header.
                let asker =
                    ask::Asker::new(std::io::BufReader::new(std::io::stdin()), std::io::stdout());
                let streamer = std::sync::Arc::new(std::sync::Mutex::new(stream::Streamer::new(
                    &device,
                    Some(asker),
                    bar,
                )));
                opts.events = Some(stream::Streamer::events(&streamer));
                let mut answer = |r: &check::Report| match streamer.lock() {
                    Ok(mut s) => s.ask(r),
                    Err(_) => vec![false; r.problems.len()],
                };
                repair::run(args, &opts, fix::Mode::Yes, &device, Some(&mut answer))
            }
        };
        if let Some(r) = reporter {
            r.finish();
        }
        let root = report::REBOOT_IF_MODIFIED.load(std::sync::atomic::Ordering::Relaxed);
        if root && code & EXIT_CORRECTED != 0 {
            code |= EXIT_REBOOT;
        }
        return code;
    }
    if !args.json {
        let streamer = std::sync::Arc::new(std::sync::Mutex::new(stream::Streamer::new(
            &device, None, bar,
        )));
        opts.events = Some(stream::Streamer::events(&streamer));
    }
    let result = check::run(&args.device, &opts);
    if let Some(r) = reporter {
        r.finish();
    }
    match result {
        Ok(rep) => report::print(&rep, &device, args),
        Err(Error::Interrupted) => cancelled(&device),
        Err(e) => {
            if args.json {
                report::print_error_json(&device, &e.to_string(), EXIT_OPERATIONAL);
            }
            eprintln!("pfsck: {e}");
            EXIT_OPERATIONAL
        }
    }
}
