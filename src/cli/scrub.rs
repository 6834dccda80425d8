//! The e2scrub-compatible entry point: `pfsck --e2scrub [-n|-r|-t|-V]
//! TARGET`, or this binary run under the name `e2scrub`. Options and exit
//! codes are e2scrub's, so that the `e2scrub@.service` unit that
//! `e2scrub_all.timer` starts can run pfsck instead (docs/online.md):
//!
//! - `-n`: say what would be done, do nothing; `-r`: remove a snapshot a
//!   killed run left, check nothing; `-t`: discard unused blocks (FITRIM)
//!   after a clean check; `-V`: version.
//! - Exit 0: no problems; 6: problems found, the file system marked for a
//!   full check; 8: operational error (no snapshot, an overflowed one, a
//!   failed check); 16: not ext2/3/4, or no snapshot mechanism for its
//!   device; 1: not root, no target, or stopped by a signal; 2: unknown
//!   option. Run as a service (`SERVICE_MODE` set), every failure is 1,
//!   after a 2-second pause so journald ties the last lines to the unit.

use super::{Args, online as cli_online, report};
use crate::online::{self, OnlineError};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

const EXIT_CLEAN: i32 = 0;
const EXIT_GENERIC: i32 = 1;
const EXIT_BAD_OPTION: i32 = 2;
const EXIT_CORRUPT: i32 = 6;
const EXIT_OPERATIONAL: i32 = 8;
const EXIT_NOT_SUPPORTED: i32 = 16;

/// The first argument that selects this entry point.
const ARG: &str = "--e2scrub";

pub fn invoked(argv: &[OsString]) -> bool {
    let named = argv
        .first()
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|n| n == "e2scrub");
    named || argv.get(1).is_some_and(|a| a == ARG)
}

fn help() {
    outln!(
        "Usage: pfsck {ARG} [OPTIONS] MOUNTPOINT|DEVICE\n\n\
         Checks a mounted ext2/3/4 file system through a snapshot (LVM, or a reflink\n\
         copy of a loop device's backing file on XFS/btrfs), as e2scrub does.\n\
         -n: show what would be done\n\
         -r: remove a leftover snapshot and exit\n\
         -t: discard unused blocks (fstrim) after a clean check\n\
         -V: print the version and exit"
    );
}

#[derive(Default)]
struct Opts {
    dry_run: bool,
    reap: bool,
    trim: bool,
    target: Option<PathBuf>,
}

/// e2scrub's getopts "nrtV": clustered flags, options before the target.
fn parse(args: &[OsString]) -> Result<Opts, i32> {
    let mut o = Opts::default();
    let mut it = args.iter();
    for a in it.by_ref() {
        let s = a.to_string_lossy();
        if s == "--" {
            break;
        }
        let Some(flags) = s.strip_prefix('-').filter(|f| !f.is_empty()) else {
            o.target = Some(PathBuf::from(a));
            return Ok(o);
        };
        for c in flags.chars() {
            match c {
                'n' => o.dry_run = true,
                'r' => o.reap = true,
                't' => o.trim = true,
                'V' => {
                    outln!(
                        "pfsck {} (git {}, e2scrub mode)",
                        env!("CARGO_PKG_VERSION"),
                        env!("PFSCK_GIT_COMMIT")
                    );
                    return Err(EXIT_CLEAN);
                }
                _ => {
                    help();
                    return Err(EXIT_BAD_OPTION);
                }
            }
        }
    }
    o.target = it.next().map(PathBuf::from);
    Ok(o)
}

pub fn main(argv: &[OsString]) -> i32 {
    let skip = if argv.get(1).is_some_and(|a| a == ARG) {
        2
    } else {
        1
    };
    let code = match parse(argv.get(skip..).unwrap_or(&[])) {
        Ok(o) => scrub(&o),
        Err(code) => return code,
    };
    if std::env::var_os("SERVICE_MODE").is_some() && code != EXIT_CLEAN {
        std::thread::sleep(std::time::Duration::from_secs(2));
        return EXIT_GENERIC;
    }
    code
}

fn scrub(o: &Opts) -> i32 {
    let Some(target) = &o.target else {
        help();
        return EXIT_GENERIC;
    };
    let arg = target.display();
    if !online::sys::is_root() {
        outln!("pfsck {ARG} must be run as root");
        return EXIT_GENERIC;
    }
    let refused = |e: OnlineError| {
        outln!("{arg}: {e}");
        match e {
            OnlineError::Unsupported(_) => EXIT_NOT_SUPPORTED,
            OnlineError::Cancelled => EXIT_GENERIC,
            OnlineError::Refused(_) | OnlineError::Failed(_) => EXIT_OPERATIONAL,
        }
    };
    if o.reap {
        return match online::reap(target) {
            Ok(true) => {
                outln!("{arg}: leftover snapshot removed");
                EXIT_CLEAN
            }
            Ok(false) => EXIT_CLEAN,
            Err(e) => refused(e),
        };
    }
    if o.dry_run {
        return match online::describe(target) {
            Ok(plan) => {
                outln!("Would {plan}");
                EXIT_CLEAN
            }
            Err(e) => refused(e),
        };
    }
    let args = Args {
        threads: "auto".into(),
        device: target.clone(),
        ..Args::default()
    };
    let Ok(check) = cli_online::check_options(&args) else {
        return EXIT_OPERATIONAL;
    };
    cli_online::cancel_on_signals();
    let opts = online::Options {
        check: &check,
        mark: true,
        lvm_snap_mb: cli_online::lvm_snap_mb(),
        fault: cli_online::fault_point(),
    };
    let out = match online::run(target, &opts) {
        Ok(out) => out,
        Err(e) => return refused(e),
    };
    report::print_online(&out.report, &args, &out.info);
    if out.report.has_fatal() || out.info.mark_error.is_some() {
        outln!("{arg}: online check could not be completed");
        return EXIT_OPERATIONAL;
    }
    if out.report.has_errors() {
        outln!("{arg}: online check found problems; unmount it and run pfsck -fy (or e2fsck -fy)");
        return EXIT_CORRUPT;
    }
    outln!("{arg}: online check found no problems");
    if o.trim {
        match online::trim(target) {
            Ok(n) => outln!("{arg}: {n} bytes trimmed"),
            Err(e) => outln!("{arg}: {e}"),
        }
    }
    EXIT_CLEAN
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Opts, i32> {
        parse(&args.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn e2scrub_options() {
        let o = p(&["-nt", "/mnt"]).ok().unwrap();
        assert!(o.dry_run && o.trim && !o.reap);
        assert_eq!(o.target, Some(PathBuf::from("/mnt")));
        let o = p(&["-r", "--", "-odd"]).ok().unwrap();
        assert!(o.reap);
        assert_eq!(o.target, Some(PathBuf::from("-odd")));
        assert!(p(&[]).ok().unwrap().target.is_none());
        assert_eq!(p(&["-x", "/mnt"]).err(), Some(EXIT_BAD_OPTION));
        assert_eq!(p(&["-V"]).err(), Some(EXIT_CLEAN));
    }

    #[test]
    fn entry_point_by_name_or_argument() {
        let v = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(invoked(&v(&["/usr/local/sbin/e2scrub", "/mnt"])));
        assert!(invoked(&v(&["pfsck", "--e2scrub", "-t", "/mnt"])));
        assert!(!invoked(&v(&["pfsck", "-n", "--e2scrub"])));
        assert!(!invoked(&v(&["pfsck"])));
    }
}
