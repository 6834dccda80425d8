//! `-y` and `-p`/`-a`: runs a repair session (`repair::session`: check,
//! plan, stage, re-check, commit) and prints what it did.
//!
//! Exit code, like e2fsck: 1 when blocks were written, 4 when the re-check
//! still finds errors (problems pfsck does not fix yet, a refusal, or an
//! error answered no), then without the 1 even when blocks were written, 8
//! when something operational failed (the commit included: then the undo
//! log, if the device was touched, restores it).

use super::report::{self, Repaired};
use super::{Args, EXIT_CORRECTED, EXIT_OPERATIONAL, EXIT_REBOOT, EXIT_UNCORRECTED};
use crate::check::problem::Code;
use crate::check::{Options, Report};
use crate::fix::{self, Mode};
use crate::repair::session::{self, Notice, Outcome, Session, SessionError, Status, UndoChoice};

pub use crate::repair::session::{Ask, LOCK_WAIT};

/// With `ask`, the problems answered yes are fixed as `-y` would (`mode`
/// is then Yes); without, `mode` decides.
pub fn run(args: &Args, opts: &Options, mode: Mode, device: &str, ask: Option<Ask>) -> i32 {
    let mut notify = |n: Notice| match n {
        Notice::UndoMoved { wanted, path, why } => eprintln!(
            "pfsck: warning: the undo log cannot be written as {} ({why}); it goes to {}",
            wanted.display(),
            path.display()
        ),
        Notice::NoUndo { wanted, why } => eprintln!(
            "pfsck: warning: no undo log can be written ({} and the fallback: {why}); \
             repairing without one: this repair cannot be rolled back",
            wanted.display()
        ),
        Notice::MountedWarning => super::warn_mounted(args, device),
        Notice::ReadOnlyRoot => {
            report::REBOOT_IF_MODIFIED.store(true, std::sync::atomic::Ordering::Relaxed)
        }
        Notice::BadBlocks { dropped, ignored } if !args.json => {
            for b in dropped {
                outln!("Block {b} in the bad blocks inode lies outside the file system: dropped.");
            }
            for b in ignored {
                outln!("Bad block {b} of the list lies outside the file system: ignored.");
            }
            outln!("{device}: writing the bad blocks list into the bad blocks inode.");
        }
        Notice::BadBlocks { .. } => {}
    };
    let bad_blocks = match super::badblocks::new_list(args, device) {
        Ok(list) => list,
        Err(e) => {
            if args.json {
                report::print_error_json(device, &e, EXIT_OPERATIONAL);
            }
            eprintln!("pfsck: {e}");
            return EXIT_OPERATIONAL;
        }
    };
    let undo = UndoChoice {
        explicit: args.undo.clone(),
        unattended: args.preen || args.auto,
        yes: args.yes,
        memory: std::env::var("PFSCK_STAGING_MEMORY")
            .ok()
            .and_then(|v| v.parse().ok()),
    };
    let before_commit = || super::fault("before-commit");
    let mut session = Session::new(
        &args.device,
        opts,
        mode,
        undo,
        ask,
        &mut notify,
        &before_commit,
    );
    if let Some(list) = bad_blocks {
        session = session.with_bad_blocks(list);
    }
    let (result, released) = session.run();
    let code = match result {
        Ok(outcome) => print(args, mode, device, outcome),
        Err(SessionError::Mmp(e)) => {
            if args.json {
                report::print_error_json(device, &e, EXIT_UNCORRECTED | EXIT_OPERATIONAL);
            }
            eprintln!("pfsck: {e}");
            return EXIT_UNCORRECTED | EXIT_OPERATIONAL;
        }
        Err(SessionError::Interrupted)
            if super::stream::STOPPED.load(std::sync::atomic::Ordering::Relaxed) =>
        {
            // An answer stopped the run where e2fsck stops: nothing written.
            outln!(
                "\n{device}: ********** WARNING: errors are left in the file system **********\n"
            );
            EXIT_UNCORRECTED | EXIT_OPERATIONAL
        }
        Err(SessionError::Interrupted) => super::cancelled(device),
        Err(e @ SessionError::Mounted(_)) => super::refuse_mounted(args, device, &e.to_string()),
        Err(e) => fail(args, device, &e),
    };
    if let Err(e) = released {
        eprintln!("pfsck: {e}");
        return code | EXIT_OPERATIONAL;
    }
    code
}

/// An operational failure: exit 8.
fn fail(args: &Args, device: &str, e: &SessionError) -> i32 {
    if args.json {
        report::print_error_json(device, &e.to_string(), EXIT_OPERATIONAL);
    }
    eprintln!("pfsck: {e}");
    EXIT_OPERATIONAL
}

/// Prints what the session did; the exit code.
fn print(args: &Args, mode: Mode, device: &str, outcome: Outcome) -> i32 {
    match outcome {
        Outcome::Checked {
            report: rep,
            replay_written,
        } => {
            if replay_written && !args.json && fix::journal::journal_replayed(&rep) {
                outln!("{device}: replaying the journal");
            }
            report::print(&rep, device, args)
        }
        Outcome::Refused { report: rep, why } => {
            let code = report::exit_code(&rep);
            let r = Repaired {
                fixed: &[],
                modified: false,
                after: None,
                refusal: Some(format!("not repaired: {why}")),
                restarts: &[],
            };
            report::print_repair(&rep, device, args, &r, code);
            code
        }
        Outcome::PreenHalt(h) => preen_halt(args, device, &h),
        Outcome::Unchanged {
            report: rep,
            status,
            recorded,
        } => {
            let mut code = report::exit_code(&rep);
            if recorded.became_valid {
                code |= EXIT_CORRECTED;
            }
            let r = Repaired {
                fixed: &fixed(&status),
                modified: recorded.journal_errno_cleared,
                after: None,
                refusal: None,
                restarts: &[],
            };
            report::print_repair(&rep, device, args, &r, code);
            code
        }
        Outcome::Repaired(done) => repaired(args, mode, device, &done),
        Outcome::NotWritten { report: rep, error } => {
            let r = Repaired {
                fixed: &[],
                modified: false,
                after: None,
                refusal: None,
                restarts: &[],
            };
            report::print_repair(&rep, device, args, &r, EXIT_OPERATIONAL);
            fail(args, device, &error)
        }
    }
}

fn fixed(status: &[Status]) -> Vec<bool> {
    status.iter().map(|&s| s == Status::Fixed).collect()
}

/// e2fsck's verdict when errors are left: exit 4 alone, though it wrote
/// (and says so): "some fixed, some left" is not the "corrected" that
/// fsck(8) reads in 1. The mounted root, read-only, still asks for its
/// reboot (2), which `cli::run` adds only to a 1.
fn errors_left_first(code: i32) -> i32 {
    if code & EXIT_UNCORRECTED == 0 || code & EXIT_CORRECTED == 0 {
        return code;
    }
    let root = report::REBOOT_IF_MODIFIED.load(std::sync::atomic::Ordering::Relaxed);
    let reboot = if root { EXIT_REBOOT } else { 0 };
    (code & !EXIT_CORRECTED) | reboot
}

/// A committed repair: the problems shown with what was fixed, the
/// verdict of the last check.
fn repaired(args: &Args, mode: Mode, device: &str, done: &session::Repaired) -> i32 {
    let written = done.blocks_written;
    let mut code = 0;
    // Pass 1E's optimisations alone are no correction either (e2fsck's
    // NOT_A_FIX), nor is what -E bmap2extent asked for: the file system
    // is modified, the exit is 0. Orphans
    // processed with them change nothing to that, as alone.
    let status = &done.status;
    let offers_only = status.contains(&Status::Fixed)
        && done.report.problems.iter().zip(status).all(|(p, &s)| {
            s != Status::Fixed
                || crate::check::e2fsck_map::not_a_fix(&p)
                || crate::check::e2fsck_map::requested(&p)
                || (done.replayed && p.code == Code::OrphansPending)
        });
    // Nor are descriptor checksum resets alone (e2fsck never marks its
    // file system changed for them): exit 0, not modified; after a
    // journal replay too (e2fsck checks the replayed file system after
    // reopening it, unchanged: a fast-commit replay on a file system
    // without group checksums leaves uninit marks it then clears so).
    let unmarked_only = status.contains(&Status::Fixed)
        && done
            .report
            .problems
            .iter()
            .zip(status)
            .all(|(p, &s)| s != Status::Fixed || crate::check::e2fsck_map::unmarked_fix(&p));
    // A journal replay alone is not a correction: e2fsck exits 0 after it.
    if (written > 0 && (done.fixes_staged || !done.replayed) && !offers_only && !unmarked_only)
        || done.recorded.became_valid
    {
        code |= EXIT_CORRECTED;
    }
    let rep: &Report = &done.report;
    if done.replayed && !args.json && fix::journal::journal_replayed(rep) {
        outln!("{device}: replaying the journal");
    }
    code |= report::exit_code(&done.after);
    if done.declined_errors {
        code |= EXIT_UNCORRECTED;
    }
    let corrected = code & EXIT_CORRECTED != 0;
    code = errors_left_first(code);
    let r = Repaired {
        fixed: &fixed(&done.status),
        modified: corrected
            || done.recorded.journal_errno_cleared
            || (done.bad_blocks_written && written > 0)
            || (offers_only && written > 0 && !unmarked_only),
        after: Some(&done.after),
        refusal: None,
        restarts: &done.restarts,
    };
    report::print_repair(rep, device, args, &r, code);
    // On standard error: e2fsck's report on standard output has no such
    // line, and scripts compare or parse that report.
    if written > 0 && !args.json && mode != Mode::Preen {
        eprintln!("Undo log: {}", done.undo_log.display());
    }
    code
}

/// e2fsck -p stopping at a problem it may not fix (its preenhalt), after
/// writing what it fixed by then: prints what e2fsck prints, each fix
/// (`NAME: message.  FIXED.`, with the word of its question), the
/// problem, then the "STOPPED" line on
/// standard error. Exit 4, as e2fsck.
fn preen_halt(args: &Args, device: &str, h: &session::PreenHalt) -> i32 {
    let rep = &h.report;
    if args.json {
        let mut problems = h.earlier.clone();
        problems.append(rep.problems.clone());
        let mut fixed = vec![true; h.earlier.len()];
        fixed.extend(&h.fixed);
        let r = Repaired {
            fixed: &fixed,
            modified: h.blocks_written > 0,
            after: None,
            refusal: Some(format!(
                "STOPPED: a problem preen may not fix needs a person: {}",
                h.halt
                    .as_ref()
                    .map(|p| p.message_in(rep.tree.as_deref()))
                    .unwrap_or_default()
            )),
            restarts: &[],
        };
        report::print_repair(
            &rep.with_problems(problems),
            device,
            args,
            &r,
            EXIT_UNCORRECTED,
        );
        return EXIT_UNCORRECTED;
    }
    // e2fsck names the file system by its label when it has one.
    let name = if rep.volume_label.is_empty() {
        device.to_string()
    } else {
        crate::check::problem::escape_name(rep.volume_label.as_bytes())
    };
    if h.replayed && fix::journal::journal_replayed(rep) {
        outln!("{name}: replaying the journal");
    }
    let fixed_now = rep.problems.iter().zip(&h.fixed).filter(|(_, f)| **f);
    let said = |p: &crate::check::problem::Problem| !crate::check::e2fsck_map::preen_quiet(p);
    for p in h
        .earlier
        .iter()
        .chain(fixed_now.map(|(p, _)| p))
        .filter(said)
    {
        let done = crate::check::e2fsck_map::prompt(&p).preen_done();
        outln!("{name}: {}.  {done}.", p.text_in(rep.tree.as_deref()));
    }
    if let Some(p) = &h.halt {
        outln!("{name}: {}.", p.text_in(rep.tree.as_deref()));
    }
    eprintln!(
        "\n\n{name}: STOPPED: a problem preen may not fix needs a person.\n\tRun pfsck (or fsck) again without -a or -p."
    );
    EXIT_UNCORRECTED
}
