//! `-y` and `-p`/`-a`: check, stage the fixes, re-check, commit.
//!
//! The re-check runs before the commit, read-only, on the device seen
//! through the staged blocks: exactly the bytes the commit will leave (the
//! commit writes the overlay and nothing else). So the verdict printed and
//! the exit code describe the repaired file system, and a fix that does
//! not achieve what it claims shows up as exit 4 with the problem listed.
//!
//! Exit code, like e2fsck: 1 when blocks were written, 4 when the re-check
//! still finds errors (problems pfsck does not fix yet, or a refusal), 8
//! when something operational failed (the commit included: then the undo
//! log, if the device was touched, restores it).

use super::report::{self, Repaired};
use super::{Args, EXIT_CORRECTED, EXIT_OPERATIONAL, EXIT_UNCORRECTED};
use crate::check::problem::ProblemList;
use crate::check::{self, Options};
use crate::error::Error;
use crate::fix::{self, Mode, Refusal};
use crate::io::Device;
use crate::io::writable::DeviceLock;
use crate::repair::UndoTarget;
use crate::repair::commit::{self, CommitOptions};
use crate::repair::faults::NoFaults;
use crate::repair::overlay::{Overlay, Staging};
use std::sync::Arc;

/// Check-and-fix rounds at most: each round's fixes come from a check of
/// the previous rounds' staged result.
const MAX_ROUNDS: u32 = 16;

/// How long a repair waits for another one on the same device to finish.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Answers, per problem of a check, whether to fix it (interactive mode).
pub type Ask<'a> = &'a mut dyn FnMut(&check::Report) -> Vec<bool>;

/// With `ask`, the problems answered yes are fixed as `-y` would (`mode`
/// is then Yes); without, `mode` decides.
pub fn run(args: &Args, opts: &Options, mode: Mode, device: &str, ask: Option<Ask>) -> i32 {
    // e2fsck holds the MMP block from before its check until it is done:
    // a node mounting the file system meanwhile sees it being checked.
    let claim = match crate::repair::mmp::claim(&args.device) {
        Ok(c) => c,
        Err(e) => {
            if args.json {
                report::print_error_json(device, &e, EXIT_UNCORRECTED | EXIT_OPERATIONAL);
            }
            eprintln!("pfsck: {e}");
            return EXIT_UNCORRECTED | EXIT_OPERATIONAL;
        }
    };
    let opts = &Options {
        mmp_claimed: claim.is_some(),
        ..opts.clone()
    };
    let code = run_claimed(args, opts, mode, device, ask);
    if let Some(c) = claim
        && let Err(e) = c.release()
    {
        eprintln!("pfsck: {e}");
        return code | EXIT_OPERATIONAL;
    }
    code
}

fn run_claimed(args: &Args, opts: &Options, mode: Mode, device: &str, mut ask: Option<Ask>) -> i32 {
    // -y and -p replace an unusable journal (e2fsck clears and recreates
    // it, preen included) and fix a wrong inodes count, so the check goes
    // on past them.
    let opts = &Options {
        repairing: true,
        ..opts.clone()
    };
    let fail = |e: String| {
        if args.json {
            report::print_error_json(device, &e, EXIT_OPERATIONAL);
        }
        eprintln!("pfsck: {e}");
        EXIT_OPERATIONAL
    };
    // Held until the commit is done: a second repair waits briefly, then
    // refuses before it has checked anything.
    let _lock = match DeviceLock::acquire(&args.device, LOCK_WAIT) {
        Ok(l) => l,
        Err(e) => return fail(e.to_string()),
    };
    let dev = match Device::open_read_only(&args.device) {
        Ok(d) => d,
        Err(e) => return fail(e.to_string()),
    };
    let checked = match check::check_device(dev, opts) {
        Ok(c) => c,
        Err(Error::Interrupted) => return super::cancelled(device),
        Err(e) => return fail(e.to_string()),
    };
    let rep = &checked.report;
    let Some(fs) = &checked.fs else {
        // No file system or a fatal problem: the check's verdict stands.
        return report::print(rep, device, args);
    };
    if rep.has_fatal() {
        return report::print(rep, device, args);
    }
    let Some(state) = &checked.state else {
        // Marked clean and not forced: nothing to fix, but e2fsck still
        // replays a journal that needs it (the check ran on the replayed
        // view, which is what was found clean).
        if let Err(e) = replay_only(args, opts, fs, rep, device) {
            return fail(e);
        }
        return report::print(rep, device, args);
    };

    let staging = &staging(args);
    let planned = plan_round(fs, state, rep, mode, staging, &mut ask);
    let no_fix = vec![false; rep.problems.len()];
    let plan = match planned {
        Ok(p) => p,
        Err(Refusal::Unexpected) => {
            return preen_halt(
                args,
                opts,
                fs,
                state,
                rep,
                &ProblemList::new(),
                device,
                staging,
            )
            .unwrap_or_else(fail);
        }
        Err(Refusal::Unsupported(why)) | Err(Refusal::Failed(why)) => {
            let code = report::exit_code(rep);
            let r = Repaired {
                fixed: &no_fix,
                modified: false,
                after: None,
                refusal: Some(format!("not repaired: {why}")),
            };
            report::print_repair(rep, device, args, &r, code);
            return code;
        }
    };
    drop(checked.state);

    if plan.overlay.is_empty() {
        // Nothing to fix: either nothing we may fix, or fixes that change
        // no byte. The first check is the verdict, and only the record of
        // the check is written (not after an interactive user declined a
        // fix: answering no leaves the disk as it was).
        let mut code = report::exit_code(rep);
        let mut recorded = fix::finish::Recorded::default();
        if ask.is_none() || !rep.has_errors() {
            recorded = match record_check(args, fs, rep, staging) {
                Ok(r) => r,
                Err(e) => return fail(e),
            };
        }
        if recorded.became_valid {
            code |= EXIT_CORRECTED;
        }
        let r = Repaired {
            fixed: &plan.fixed,
            modified: recorded.journal_errno_cleared,
            after: None,
            refusal: None,
        };
        report::print_repair(rep, device, args, &r, code);
        return code;
    }

    // Later rounds: a fix often uncovers the next problem (a cleared inode
    // leaves entries naming it, a removed entry changes a link count), so
    // the staged result is checked again and fixed again until nothing
    // more can be fixed. The last check is the verdict.
    let mut shown = rep.problems.clone();
    let mut shown_fixed = plan.fixed.clone();
    let mut fixes_staged = plan.fixes_staged;
    // Shared with each re-check's device, which reads through it.
    let mut overlay = match plan.overlay.flattened() {
        Ok(o) => Arc::new(o),
        Err(e) => return fail(e.to_string()),
    };
    let mut round = 1;
    // A check that read a backup superblock (found by itself, or named
    // with -b) restores the primary copies in the first round, alone; the
    // later rounds read the restored primary, as the kernel will.
    let recheck_opts = &Options {
        superblock: None,
        blocksize: None,
        ..opts.clone()
    };
    let last = loop {
        let dev = match Device::open_read_only(&args.device) {
            Ok(d) => d.with_read_overlay(overlay.clone()),
            Err(e) => return fail(e.to_string()),
        };
        let again = match check::check_device(dev, recheck_opts) {
            Ok(c) => c,
            Err(Error::Interrupted) => return super::cancelled(device),
            Err(e) => return fail(format!("re-check of the repaired file system: {e}")),
        };
        round += 1;
        let (Some(fs2), Some(state2)) = (&again.fs, &again.state) else {
            break again;
        };
        if round > MAX_ROUNDS || !again.report.has_errors() || again.report.has_fatal() {
            break again;
        }
        let next = match plan_round(fs2, state2, &again.report, mode, staging, &mut ask) {
            Ok(next) => next,
            // A fix uncovered a problem preen may not fix: e2fsck would
            // stop there too, with what it fixed so far written.
            Err(Refusal::Unexpected) => {
                let earlier: ProblemList = shown
                    .iter()
                    .zip(&shown_fixed)
                    .filter(|(_, f)| **f)
                    .map(|(p, _)| p)
                    .collect();
                return preen_halt(
                    args,
                    opts,
                    fs2,
                    state2,
                    &again.report,
                    &earlier,
                    device,
                    staging,
                )
                .unwrap_or_else(fail);
            }
            Err(_) => break again,
        };
        if !next.fixes_staged {
            break again;
        }
        let unfixed = by_key(&shown, |k| !shown_fixed[k]);
        for (key, f) in again.report.problems.keys().zip(&next.fixed) {
            if !*f {
                continue;
            }
            // A problem an earlier round left for later (directory
            // structure goes first) is shown once, as fixed.
            let same = equal_keys(&unfixed, &shown, key).find(|&k| !shown_fixed[k]);
            match same {
                Some(k) => shown_fixed[k] = true,
                None => {
                    shown.push_key(key);
                    shown_fixed.push(true);
                }
            }
        }
        fixes_staged = true;
        // This round's staging lies over the one the re-check read; with
        // the re-check's device gone, the two merge into one.
        drop(again);
        drop(overlay);
        overlay = match next.overlay.flattened() {
            Ok(o) => Arc::new(o),
            Err(e) => return fail(e.to_string()),
        };
    };
    let check::Checked {
        report: after,
        fs: last_fs,
        ..
    } = last;
    // The record of the check goes with the repair, staged over it on the
    // file system as the last check read it.
    let mut recorded = fix::finish::Recorded::default();
    if !after.has_fatal() {
        let mut top = Overlay::over(overlay.clone());
        recorded = match fix::finish::stage(
            last_fs.as_ref().unwrap_or(fs),
            &mut top,
            !after.has_errors(),
            check::now(),
        ) {
            Ok(v) => v,
            Err(e) => return fail(e),
        };
        // The last check's device reads through the staging: gone, the
        // two layers merge.
        drop(last_fs);
        drop(overlay);
        overlay = match top.flattened() {
            Ok(o) => Arc::new(o),
            Err(e) => return fail(e.to_string()),
        };
    }
    // What is shown: the first check's problems, then those later rounds
    // found and fixed, each in its pass. A first-check problem of passes
    // 1-5 neither fixed nor found by the last check was a consequence of
    // another problem (inodes an impossible itable_unused hid, say) and is
    // not shown; pass 0's notes (the journal replay) stay.
    let mut keep: Vec<bool> = shown
        .iter()
        .zip(&shown_fixed)
        .map(|(p, &f)| f || p.spec().pass == check::problem::Pass::Super)
        .collect();
    let unfixed = by_key(&shown, |k| !keep[k]);
    for key in after.problems.keys() {
        for k in equal_keys(&unfixed, &shown, key) {
            keep[k] = true;
        }
    }
    let mut kept_fixed = Vec::new();
    let shown_rep =
        rep.with_problems(shown.select_by_pass(&keep, |k| kept_fixed.push(shown_fixed[k])));
    let shown_fixed = kept_fixed;
    let rep = &shown_rep;
    super::fault("before-commit");
    // The last moment a signal cancels the repair: nothing written yet.
    if crate::engine::cancelled() {
        return super::cancelled(device);
    }
    let log = undo_log(args);
    let committed = commit_run(args, &overlay);
    let written = match committed {
        Ok(r) => r.blocks_written,
        Err(e) => {
            let r = Repaired {
                fixed: &no_fix,
                modified: false,
                after: None,
                refusal: None,
            };
            report::print_repair(rep, device, args, &r, EXIT_OPERATIONAL);
            return fail(not_written("repair", &e, &log, &args.device));
        }
    };
    if let Err(e) = reset_external(opts, fs, rep) {
        return fail(e);
    }
    let mut code = 0;
    // A journal replay alone is not a correction: e2fsck exits 0 after it.
    if (written > 0 && (fixes_staged || !plan.replayed)) || recorded.became_valid {
        code |= EXIT_CORRECTED;
    }
    if plan.replayed && !args.json && fix::journal::journal_replayed(rep) {
        outln!("{device}: recovering journal");
    }
    code |= report::exit_code(&after);
    let r = Repaired {
        fixed: &shown_fixed,
        modified: code & EXIT_CORRECTED != 0 || recorded.journal_errno_cleared,
        after: Some(&after),
        refusal: None,
    };
    report::print_repair(rep, device, args, &r, code);
    if written > 0 && !args.json && mode != Mode::Preen {
        outln!("Undo log: {}", log.display());
    }
    code
}

/// e2fsck -p stopping at a problem it may not fix (its preenhalt), in the
/// round whose check is `fs`, `state`, `rep`, after `earlier` rounds fixed
/// the problems listed: stages what e2fsck has written by then and at the
/// stop (`fix::plan_preen_halt`: the preen fixes before that problem, the
/// superblock marked with errors), commits it through the undo log, and
/// prints what e2fsck prints: each fix (`NAME: message.  FIXED.`, with
/// the word of its question), the
/// problem, then `UNEXPECTED INCONSISTENCY; RUN fsck MANUALLY.` on
/// standard error. Exit 4, as e2fsck.
#[allow(clippy::too_many_arguments)]
fn preen_halt(
    args: &Args,
    opts: &Options,
    fs: &check::Fs,
    state: &check::state::State,
    rep: &check::Report,
    earlier: &ProblemList,
    device: &str,
    staging: &Staging,
) -> Result<i32, String> {
    let plan = fix::plan_preen_halt(fs, state, rep, staging)?;
    let log = undo_log(args);
    let mut written = 0;
    if !plan.overlay.is_empty() {
        written = commit_run(args, &plan.overlay)
            .map_err(|e| not_written("preen stop", &e, &log, &args.device))?
            .blocks_written;
        reset_external(opts, fs, rep)?;
    }
    let halt = fix::preen_halt_at(rep).and_then(|k| rep.problems.get(k));
    if args.json {
        let mut problems = earlier.clone();
        problems.append(rep.problems.clone());
        let mut fixed = vec![true; earlier.len()];
        fixed.extend(&plan.fixed);
        let r = Repaired {
            fixed: &fixed,
            modified: written > 0,
            after: None,
            refusal: Some(format!(
                "UNEXPECTED INCONSISTENCY; RUN fsck MANUALLY: preen may not fix: {}",
                halt.as_ref()
                    .map(|p| p.message_in(rep.tree.as_deref()))
                    .unwrap_or_default()
            )),
        };
        report::print_repair(
            &rep.with_problems(problems),
            device,
            args,
            &r,
            EXIT_UNCORRECTED,
        );
        return Ok(EXIT_UNCORRECTED);
    }
    // e2fsck names the file system by its label when it has one.
    let name = if rep.volume_label.is_empty() {
        device.to_string()
    } else {
        crate::check::problem::escape_name(rep.volume_label.as_bytes())
    };
    if plan.replayed && fix::journal::journal_replayed(rep) {
        outln!("{name}: recovering journal");
    }
    let fixed_now = rep.problems.iter().zip(&plan.fixed).filter(|(_, f)| **f);
    let said = |p: &crate::check::problem::Problem| !crate::check::e2fsck_map::preen_quiet(p);
    for p in earlier.iter().chain(fixed_now.map(|(p, _)| p)).filter(said) {
        let done = crate::check::e2fsck_map::prompt(&p).preen_done();
        outln!("{name}: {}.  {done}.", p.text_in(rep.tree.as_deref()));
    }
    if let Some(p) = &halt {
        outln!("{name}: {}.", p.text_in(rep.tree.as_deref()));
    }
    eprintln!(
        "\n\n{name}: UNEXPECTED INCONSISTENCY; RUN fsck MANUALLY.\n\t(i.e., without -a or -p options)"
    );
    Ok(EXIT_UNCORRECTED)
}

/// The problems of `list` that `pick` names, as (hash of key, index,
/// offset) sorted: problems of another list are found among them by
/// their key with a binary search (a linear search per problem was
/// quadratic with a hundred thousand problems).
fn by_key(list: &ProblemList, pick: impl Fn(usize) -> bool) -> Vec<(u64, usize, usize)> {
    let mut v: Vec<(u64, usize, usize)> = list
        .keys_at()
        .enumerate()
        .filter(|&(k, _)| pick(k))
        .map(|(k, (at, key))| (key_hash(key), k, at))
        .collect();
    v.sort_unstable();
    v
}

/// Indices, in order, of the problems of `list` in `index` (from
/// [`by_key`]) equal to the problem whose key is `key`.
fn equal_keys<'a>(
    index: &'a [(u64, usize, usize)],
    list: &'a ProblemList,
    key: &'a [u8],
) -> impl Iterator<Item = usize> + 'a {
    let h = key_hash(key);
    let from = index.partition_point(|&(x, _, _)| x < h);
    index[from..]
        .iter()
        .take_while(move |&&(x, _, _)| x == h)
        .filter(move |&&(_, _, at)| list.key_at(at) == Some(key))
        .map(|&(_, k, _)| k)
}

fn key_hash(key: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// Plans one round's fixes; in interactive mode, only for the problems
/// answered yes, with `fixed` mapped back onto all of `rep`'s problems.
fn plan_round(
    fs: &check::Fs,
    state: &check::state::State,
    rep: &check::Report,
    mode: Mode,
    staging: &Staging,
    ask: &mut Option<Ask>,
) -> Result<fix::Plan, Refusal> {
    let Some(ask) = ask else {
        return fix::plan(fs, state, rep, mode, staging);
    };
    let yes = ask(rep);
    let (kept, idx) = super::ask::keep(rep, &yes);
    let mut plan = fix::plan(fs, state, &kept, Mode::Yes, staging)?;
    let mut fixed = vec![false; rep.problems.len()];
    for (j, &k) in idx.iter().enumerate() {
        fixed[k] = plan.fixed[j];
    }
    plan.fixed = fixed;
    Ok(plan)
}

/// Where a repair stages: blocks beyond a small budget spill to a file
/// beside the undo log (never on the device being repaired).
fn staging(args: &Args) -> Staging {
    Staging::beside_log(&undo_log(args))
}

/// The undo log path: the resolved log, or the one wanted when the repair
/// goes without (for messages and staging).
fn undo_log(args: &Args) -> std::path::PathBuf {
    undo_target(args).path().to_path_buf()
}

/// The undo log of this run, decided once (a process repairs one device):
/// `--undo`, or the default beside the image (or in `/var/lib/pfsck` for a
/// block device). When its directory cannot be written, as `/var/lib` at
/// boot, the default moves to the run directory (`/run/pfsck`); an
/// explicit `--undo` moves only under -p, the unattended boot check, which
/// must not stop the machine. When the run directory fails too, -p and -y
/// (with the default log; -p with an explicit one) repair without a log,
/// as e2fsck always does; other runs keep the log and the commit refuses.
fn undo_target(args: &Args) -> &'static UndoTarget {
    static TARGET: std::sync::OnceLock<UndoTarget> = std::sync::OnceLock::new();
    TARGET.get_or_init(|| {
        let unattended = args.preen || args.auto;
        let (wanted, may_move) = match &args.undo {
            Some(p) => (p.clone(), unattended),
            None => (crate::repair::default_undo_path(&args.device), true),
        };
        crate::repair::resolve_undo(&wanted, may_move, may_move && (unattended || args.yes))
    })
}

/// Commits `overlay` through this run's undo log, or without one when none
/// can be written; either change of plan is said on stderr, once, before
/// the device is written.
fn commit_run(args: &Args, overlay: &Overlay) -> crate::repair::Result<commit::CommitReport> {
    static WARNED: std::sync::Once = std::sync::Once::new();
    let target = undo_target(args);
    if !overlay.is_empty() {
        WARNED.call_once(|| match target {
            UndoTarget::Log {
                path,
                moved: Some((wanted, why)),
            } => eprintln!(
                "pfsck: warning: the undo log cannot be written as {} ({why}); it goes to {}",
                wanted.display(),
                path.display()
            ),
            UndoTarget::Without { wanted, why } => eprintln!(
                "pfsck: warning: no undo log can be written ({} and the fallback: {why}); \
                 repairing without one: this repair cannot be rolled back",
                wanted.display()
            ),
            UndoTarget::Log { moved: None, .. } => {}
        });
    }
    match target {
        UndoTarget::Log { path, .. } => commit::commit(
            &args.device,
            overlay,
            path,
            &mut NoFaults,
            &CommitOptions::default(),
        ),
        UndoTarget::Without { .. } => commit::commit_unlogged(
            &args.device,
            overlay,
            &mut NoFaults,
            &CommitOptions::default(),
        ),
    }
}

/// Writes the end-of-check record (`fix::finish`) of a run that stages
/// no fix, straight to the device (`commit::record`).
fn record_check(
    args: &Args,
    fs: &check::Fs,
    rep: &check::Report,
    staging: &Staging,
) -> Result<fix::finish::Recorded, String> {
    let mut overlay = Overlay::with_staging(fs.geo.block_size, fs.dev.size(), staging)
        .map_err(|e| e.to_string())?;
    let recorded = fix::finish::stage(fs, &mut overlay, !rep.has_errors(), check::now())?;
    commit::record(&args.device, &overlay).map_err(|e| format!("check record not written: {e}"))?;
    Ok(recorded)
}

/// Writes the journal replay and orphan processing the check read through
/// (and a journal inode restored from the superblock's backup), and
/// nothing else, for the runs that stage no fix (clean and not forced).
/// Prints e2fsck's line when it replayed a journal.
fn replay_only(
    args: &Args,
    opts: &Options,
    fs: &check::Fs,
    rep: &check::Report,
    device: &str,
) -> Result<(), String> {
    let overlay = fix::journal::staged_before_passes(fs, &staging(args))?;
    if overlay.is_empty() {
        return Ok(());
    }
    let log = undo_log(args);
    commit_run(args, &overlay)
        .map_err(|e| not_written("journal replay", &e, &log, &args.device))?;
    reset_external(opts, fs, rep)?;
    if !args.json && fix::journal::journal_replayed(rep) {
        outln!("{device}: recovering journal");
    }
    Ok(())
}

/// After the file system's commit (its superblock no longer asks for
/// recovery), an external journal that was replayed is reset on its own
/// device, in a commit of its own: a crash between the two leaves a
/// journal the kernel wipes, since the file system says nothing is due.
fn reset_external(opts: &Options, fs: &check::Fs, rep: &check::Report) -> Result<(), String> {
    if !check::journal::external(fs) || !fix::journal::journal_replayed(rep) {
        return Ok(());
    }
    let Some(path) = check::journal::external_path(fs, opts.journal_device.as_deref()) else {
        return Ok(());
    };
    let path = &path;
    let ext = check::external_journal::open(fs, path)?;
    let bs = fs.geo.block_size;
    let dev = Device::open_read_only(path).map_err(|e| e.to_string())?;
    let mut overlay =
        crate::repair::overlay::Overlay::new(bs, dev.size(), crate::repair::overlay::DEFAULT_LIMIT)
            .map_err(|e| e.to_string())?;
    overlay
        .stage(ext.jsb_block, check::external_journal::reset_block(&ext))
        .map_err(|e| e.to_string())?;
    let log = crate::repair::default_undo_path(path);
    commit::commit(
        path,
        &overlay,
        &log,
        &mut NoFaults,
        &CommitOptions::default(),
    )
    .map_err(|e| {
        format!(
            "{} (the file system itself is repaired)",
            not_written("external journal reset", &e, &log, path)
        )
    })?;
    Ok(())
}

/// The message of a commit that failed: a rollback is suggested only when
/// a log at `log` says the device may have been written (never a log that
/// was not written, nor whatever file `--undo` named).
fn not_written(
    what: &str,
    e: &crate::repair::RepairError,
    log: &std::path::Path,
    device: &std::path::Path,
) -> String {
    if commit::interrupted_log(log) {
        format!(
            "{what} not written completely: {e}; the device may be partly written, \
             `pfsck --rollback {} {}` restores it",
            log.display(),
            device.display()
        )
    } else {
        format!("{what} not written: {e}; the device was not modified")
    }
}
