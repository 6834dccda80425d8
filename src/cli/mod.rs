//! Command line: e2fsck's options, the report, exit codes (fsck(8)).

mod ask;
pub mod progress;
mod repair;
pub mod report;
mod rollback;

use crate::check::{self, Options};
use crate::engine::Threads;
use crate::error::Error;
use crate::fix;
use clap::Parser;
use std::io::IsTerminal;
use std::path::PathBuf;

pub const EXIT_OK: i32 = 0;
pub const EXIT_CORRECTED: i32 = 1;
pub const EXIT_UNCORRECTED: i32 = 4;
pub const EXIT_OPERATIONAL: i32 = 8;
pub const EXIT_USAGE: i32 = 16;
pub const EXIT_CANCELLED: i32 = 32;

/// Check an ext2/ext3/ext4 file system, in parallel.
#[derive(Parser, Debug)]
#[command(
    name = "pfsck",
    version,
    about,
    after_help = "Exit codes: 0 clean, 1 errors corrected, 4 errors left uncorrected, \
                  8 operational error, 16 usage error, 32 cancelled."
)]
pub struct Args {
    /// Open the file system read-only and answer "no" to every question.
    #[arg(short = 'n')]
    pub no: bool,
    /// Repair: answer "yes" to every question (fixes what pfsck can fix so
    /// far; the rest is left and reported, exit 4).
    #[arg(short = 'y')]
    pub yes: bool,
    /// Preen: fix what is safe without asking; stop on anything else with
    /// "UNEXPECTED INCONSISTENCY" (exit 4; the fixes made before it and the
    /// superblock's error state written, as e2fsck).
    #[arg(short = 'p')]
    pub preen: bool,
    /// Same as -p.
    #[arg(short = 'a')]
    pub auto: bool,
    /// Check even if the file system seems clean.
    #[arg(short = 'f')]
    pub force: bool,
    /// Verbose: print statistics at the end.
    #[arg(short = 'v')]
    pub verbose: bool,
    /// The external journal device (made with mke2fs -O journal_dev).
    #[arg(short = 'j', value_name = "JOURNAL")]
    pub journal: Option<PathBuf>,
    /// Use this superblock (a backup) instead of the primary.
    #[arg(short = 'b', value_name = "SUPERBLOCK")]
    pub superblock: Option<u64>,
    /// Block size to look for the superblock given with -b.
    #[arg(short = 'B', value_name = "BLOCKSIZE")]
    pub blocksize: Option<u32>,
    /// Worker threads: a number, or "auto" for the usable CPUs.
    #[arg(
        short = 'm',
        long = "threads",
        value_name = "N|auto",
        default_value = "auto"
    )]
    pub threads: String,
    /// Run at SCHED_IDLE: use only CPU time no other process wants.
    #[arg(long)]
    pub idle: bool,
    /// Print the report as JSON on standard output.
    #[arg(long)]
    pub json: bool,
    /// Print time and bytes read per pass.
    #[arg(short = 't')]
    pub timing: bool,
    /// Progress: 0 = a bar on stderr; FD > 0 = e2fsck's "PASS CURRENT MAX
    /// DEVICE" lines on that file descriptor.
    #[arg(short = 'C', value_name = "FD")]
    pub progress_fd: Option<i32>,
    /// Show a progress bar on stderr (same as -C 0).
    #[arg(long)]
    pub progress: bool,
    /// Undo log of a repair (e2fsck's -z). Default: IMAGE.pfsck-undo next to
    /// an image file, /var/lib/pfsck/NAME.pfsck-undo for a block device.
    #[arg(short = 'z', long = "undo", value_name = "FILE")]
    pub undo: Option<PathBuf>,
    /// Restore the device from the undo log FILE: undoes an interrupted or an
    /// unwanted repair, byte for byte.
    #[arg(
        long = "rollback",
        value_name = "FILE",
        conflicts_with_all = ["no", "yes", "preen", "auto"]
    )]
    pub rollback: Option<PathBuf>,
    /// The device or image file to check.
    pub device: PathBuf,
}

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

pub fn main() -> i32 {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            use clap::error::ErrorKind;
            let code = match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => EXIT_OK,
                _ => EXIT_USAGE,
            };
            let _ = e.print();
            return code;
        }
    };
    run(&args)
}

pub fn run(args: &Args) -> i32 {
    if let Some(log) = &args.rollback {
        return rollback::run(log, &args.device);
    }
    let preen = args.preen || args.auto;
    if [args.no, args.yes, preen].iter().filter(|&&m| m).count() > 1 {
        eprintln!("pfsck: only one of the options -p/-a, -n or -y may be specified");
        return EXIT_USAGE;
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
            return EXIT_OPERATIONAL;
        }
        if args.json {
            eprintln!("pfsck: --json needs -n, -p or -y (questions would mix with the JSON)");
            return EXIT_USAGE;
        }
    }
    if args
        .blocksize
        .is_some_and(|b| !(b.is_power_of_two() && (1024..=65536).contains(&b)))
    {
        eprintln!("pfsck: invalid block size for -B (1024 to 65536, a power of two)");
        return EXIT_USAGE;
    }
    let threads = match parse_threads(&args.threads) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("pfsck: {e}");
            return EXIT_USAGE;
        }
    };
    let _ = ctrlc::set_handler(check::interrupt);
    if args.idle
        && let Err(e) = crate::engine::budget::set_idle_priority()
    {
        eprintln!("pfsck: cannot switch to SCHED_IDLE: {e}");
        return EXIT_OPERATIONAL;
    }
    let opts = Options {
        auto_threads: args.threads == "auto",
        threads,
        force: args.force,
        superblock: args.superblock,
        blocksize: args.blocksize,
        repairing: false,
        journal_device: args.journal.clone(),
    };
    let device = args.device.display().to_string();
    let target = match (args.progress, args.progress_fd) {
        (true, _) | (false, Some(0)) => Some(progress::Target::Bar),
        (false, Some(fd)) if fd > 0 => Some(progress::Target::Fd(fd)),
        (false, Some(fd)) => {
            eprintln!("pfsck: invalid progress file descriptor {fd}");
            return EXIT_USAGE;
        }
        (false, None) => None,
    };
    let reporter = match target.map(|t| progress::Reporter::start(t, device.clone())) {
        Some(Ok(r)) => Some(r),
        Some(Err(e)) => {
            eprintln!("pfsck: cannot write progress: {e}");
            return EXIT_USAGE;
        }
        None => None,
    };
    if !args.no {
        let code = match mode {
            Some(mode) => repair::run(args, &opts, mode, &device, None),
            None => {
                let stdin = std::io::stdin();
                let mut asker = ask::Asker::new(stdin.lock(), std::io::stdout());
                let mut answer = |r: &check::Report| asker.ask(r);
                repair::run(args, &opts, fix::Mode::Yes, &device, Some(&mut answer))
            }
        };
        if let Some(r) = reporter {
            r.finish();
        }
        return code;
    }
    let result = check::run(&args.device, &opts);
    if let Some(r) = reporter {
        r.finish();
    }
    match result {
        Ok(rep) => report::print(&rep, &device, args),
        Err(Error::Interrupted) => {
            eprintln!("{device}: check cancelled by user");
            EXIT_CANCELLED
        }
        Err(e) => {
            if args.json {
                report::print_error_json(&device, &e.to_string(), EXIT_OPERATIONAL);
            }
            eprintln!("pfsck: {e}");
            EXIT_OPERATIONAL
        }
    }
}
