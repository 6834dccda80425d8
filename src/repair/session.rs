//! A repair (`-y`, `-p`/`-a`, interactive): check, plan, stage, re-check,
//! commit, as a library type. [`Session::run`] returns what happened
//! ([`Outcome`]), with a [`Status`] per problem shown; the caller prints
//! it and picks the exit code. Nothing here prints.
//!
//! The re-check runs before the commit, read-only, on the device seen
//! through the staged blocks: exactly the bytes the commit will leave (the
//! commit writes the overlay and nothing else). So the verdict and the
//! exit code describe the repaired file system, and a fix that does not
//! achieve what it claims shows up as a problem left.
//!
//! Rounds: a fix often uncovers the next problem (a cleared inode leaves
//! entries naming it, a removed entry changes a link count), so the staged
//! result is checked again and fixed again until nothing more can be
//! fixed, at most [`MAX_ROUNDS`] times; the last check is the verdict.

use crate::check::problem::{Code, Pass, Problem, ProblemList};
use crate::check::{self, Options, Report};
use crate::error::Error;
use crate::fix::{self, FixError, Mode, Refusal};
use crate::fs::num::{Blk, Ino};
use crate::io::Device;
use crate::io::writable::DeviceLock;
use crate::store::commit::{self, CommitOptions};
use crate::store::faults::NoFaults;
use crate::store::overlay::{Overlay, Staging};
use crate::store::{StoreError, UndoTarget};
use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Check-and-fix rounds at most: each round's fixes come from a check of
/// the previous rounds' staged result.
pub const MAX_ROUNDS: u32 = 16;

/// How long a repair waits for another one on the same device to finish.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Answers, per problem of a check, whether to fix it (interactive mode).
pub type Ask<'a> = &'a mut dyn FnMut(&Report) -> Vec<bool>;

/// What became of a problem shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// A fix was staged and committed for it.
    Fixed,
    /// Answered no (interactive mode).
    Declined,
    /// pfsck has no fix for it.
    NotFixable,
    /// Left as it is: the mode does not allow its fix, or the fix did not
    /// apply (the last check says whether it is still there).
    Unfixed,
}

/// Said while the session runs, before the device is written.
#[derive(Debug)]
pub enum Notice<'a> {
    /// The undo log goes to `path`, since `wanted` cannot be written.
    UndoMoved {
        wanted: &'a Path,
        path: &'a Path,
        why: &'a str,
    },
    /// No undo log can be written: the repair goes without.
    NoUndo { wanted: &'a Path, why: &'a str },
    /// The file system is mounted and the repair goes on all the same
    /// (`-f` on a read-only mount): e2fsck's warning. The commit still
    /// refuses to write under a mount.
    MountedWarning,
    /// The root file system mounted read-only (the boot case): repaired
    /// in place; a repair that changes it asks for a reboot.
    ReadOnlyRoot,
    /// A new bad blocks list is staged (`with_bad_blocks`): the inode's
    /// pointers outside the file system dropped, the listed blocks
    /// outside it ignored.
    BadBlocks {
        dropped: &'a [u64],
        ignored: &'a [u64],
    },
}

/// How a run may go on with a mounted file system, judged once before
/// the check with e2fsck's rules ([`mount_policy`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MountVerdict {
    /// Not mounted.
    NotMounted,
    /// The root mounted read-only (the boot case): checked, and repaired,
    /// without a word; a repair asks for a reboot.
    ReadOnlyRoot,
    /// Mounted: a check (`-n`), or a forced repair of a read-only mount,
    /// goes on after e2fsck's warning.
    Warn,
}

/// e2fsck's rules for a mounted file system: a check (`repair` false) of
/// one goes on after a warning; a repair of one mounted read-write, or
/// read-only without `force` (`-f`), is refused ([`SessionError::Mounted`],
/// exit 8); with `force` a read-only mount is repaired after the warning,
/// written under the mount as e2fsck writes it; the root mounted read-only
/// is checked and repaired silently.
pub fn mount_policy(
    device: &Path,
    repair: bool,
    force: bool,
) -> std::result::Result<MountVerdict, SessionError> {
    use crate::store::mounted::{MountState, mount_state};
    match mount_state(device) {
        MountState::NotMounted => Ok(MountVerdict::NotMounted),
        MountState::ReadOnlyRoot => Ok(MountVerdict::ReadOnlyRoot),
        _ if !repair => Ok(MountVerdict::Warn),
        MountState::ReadOnly(_) if force => Ok(MountVerdict::Warn),
        MountState::ReadOnly(m) | MountState::ReadWrite(m) => Err(SessionError::Mounted(m)),
    }
}

/// What a session did.
#[derive(Debug)]
pub enum Outcome {
    /// No file system, a fatal problem, or marked clean and not forced:
    /// the check's verdict stands. `replay_written`: the journal replay
    /// and orphan processing the check read through were committed.
    Checked {
        report: Report,
        replay_written: bool,
    },
    /// The repair could not start; nothing was staged.
    Refused { report: Report, why: Refusal },
    /// `-p` stopped at a problem preen may not fix (e2fsck's preenhalt).
    PreenHalt(Box<PreenHalt>),
    /// Nothing to stage: the first check is the verdict; only its record
    /// was written.
    Unchanged {
        report: Report,
        status: Vec<Status>,
        recorded: fix::finish::Recorded,
    },
    /// The fixes were committed.
    Repaired(Box<Repaired>),
    /// The commit failed; `report` is what would have been shown.
    NotWritten { report: Report, error: SessionError },
}

/// A committed repair.
#[derive(Debug)]
pub struct Repaired {
    /// The first check's problems, then those later rounds found and
    /// fixed, each in its pass.
    pub report: Report,
    /// Parallel to `report`'s problems.
    pub status: Vec<Status>,
    /// The last check: the verdict on the repaired file system.
    pub after: Report,
    /// An error shown was answered no (its fix not allowed, not made, or
    /// declined). e2fsck's no leaves its file system marked not valid and
    /// exits 4, whatever its later passes find; so does this repair, even
    /// where the last check no longer sees the problem (a pass 0 problem
    /// the passes' fixes hid).
    pub declined_errors: bool,
    pub blocks_written: u64,
    /// Some fix beyond the journal replay was staged.
    pub fixes_staged: bool,
    /// The first round started with a journal replay (or with the new
    /// bad blocks list, which is no correction either).
    pub replayed: bool,
    /// A new bad blocks list was written (`Session::with_bad_blocks`).
    pub bad_blocks_written: bool,
    pub recorded: fix::finish::Recorded,
    pub undo_log: PathBuf,
    /// What the checks before each restart showed (e2fsck -y starts over
    /// after some fixes, `super::restart`), in order; `report` is then the
    /// last restart's check and those after it.
    pub restarts: Vec<Restart>,
}

/// The problems a check showed before the repair started over.
#[derive(Debug)]
pub struct Restart {
    /// Those problems, with the check's paths.
    pub report: Report,
    /// Parallel to `report`'s problems: fixed before the restart.
    pub fixed: Vec<bool>,
    /// The last pass whose header is shown.
    pub pass: u8,
}

/// Restarts the repair made, and where they left it: the staging so far
/// and the check of it.
struct Restarted {
    restarts: Vec<Restart>,
    overlay: Arc<Overlay>,
    checked: check::Checked,
}

/// At most this many restarts: e2fsck restarts as long as its fixes ask
/// for it, a repair stops starting over after this many.
const MAX_RESTARTS: usize = 8;

/// A preen run stopped, with what e2fsck has written by then.
#[derive(Debug)]
pub struct PreenHalt {
    /// The check of the round that stopped.
    pub report: Report,
    /// What earlier rounds fixed.
    pub earlier: ProblemList,
    /// Parallel to `report`'s problems: fixed before the stop.
    pub fixed: Vec<bool>,
    /// The problem preen may not fix.
    pub halt: Option<Problem>,
    pub blocks_written: u64,
    pub replayed: bool,
}

/// Why a session stopped; the device is untouched unless the error says
/// otherwise.
#[derive(Debug)]
pub enum SessionError {
    /// A signal cancelled the run before anything was written.
    Interrupted,
    /// The multi-mount protection block could not be claimed.
    Mmp(String),
    /// The device could not be locked, opened or checked.
    Device(Error),
    /// A repair of a mounted file system, refused before the check (the
    /// message says where; see [`mount_policy`]).
    Mounted(String),
    /// The check of the staged result failed.
    Recheck(Error),
    /// Staging failed: nothing was written.
    Staging(FixError),
    /// A commit failed (see [`NotWritten`]).
    NotWritten(NotWritten),
    /// The record of a check that fixed nothing could not be written.
    Record(StoreError),
    /// The replayed external journal could not be reset; the file system
    /// itself is repaired.
    JournalReset(String),
}

/// A commit that failed: what, why, and whether the log says the device
/// may have been written (then a rollback is suggested).
#[derive(Debug)]
pub struct NotWritten {
    pub what: &'static str,
    pub source: StoreError,
    /// The log that can roll it back, when the device may be partly
    /// written.
    pub rollback: Option<(PathBuf, PathBuf)>,
}

impl fmt::Display for NotWritten {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, e) = (self.what, &self.source);
        match &self.rollback {
            Some((log, device)) => write!(
                f,
                "{what} not written completely: {e}; the device may be partly written, \
                 `pfsck --rollback {} {}` restores it",
                log.display(),
                device.display()
            ),
            None => write!(f, "{what} not written: {e}; the device was not modified"),
        }
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Interrupted => write!(f, "interrupted"),
            SessionError::Mmp(s) | SessionError::JournalReset(s) => write!(f, "{s}"),
            SessionError::Device(e) => write!(f, "{e}"),
            SessionError::Mounted(m) => write!(
                f,
                "{m}; refusing to repair a mounted file system: unmount it first"
            ),
            SessionError::Recheck(e) => write!(f, "re-check of the repaired file system: {e}"),
            SessionError::Staging(e) => write!(f, "{e}"),
            SessionError::NotWritten(e) => write!(f, "{e}"),
            SessionError::Record(e) => write!(f, "check record not written: {e}"),
        }
    }
}

impl std::error::Error for SessionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SessionError::Device(e) | SessionError::Recheck(e) => Some(e),
            SessionError::Staging(e) => Some(e),
            SessionError::NotWritten(e) => Some(&e.source),
            SessionError::Record(e) => Some(e),
            _ => None,
        }
    }
}

impl From<FixError> for SessionError {
    fn from(e: FixError) -> SessionError {
        SessionError::Staging(e)
    }
}

impl From<StoreError> for SessionError {
    fn from(e: StoreError) -> SessionError {
        SessionError::Staging(FixError::from(e))
    }
}

type Result<T> = std::result::Result<T, SessionError>;

/// Where the undo log goes, decided the first time it is needed.
#[derive(Clone, Debug)]
pub struct UndoChoice {
    /// `--undo`.
    pub explicit: Option<PathBuf>,
    /// `-p`/`-a`: the unattended boot check, which must not stop the
    /// machine for want of a log.
    pub unattended: bool,
    /// `-y`.
    pub yes: bool,
    /// Bytes of staged blocks kept in memory before they spill beside the
    /// log; `None`: the default budget. A test hook (`PFSCK_STAGING_MEMORY`).
    pub memory: Option<u64>,
}

/// One repair of one device.
pub struct Session<'a, 'q> {
    device: PathBuf,
    opts: Options,
    mode: Mode,
    undo: UndoChoice,
    target: OnceLock<UndoTarget>,
    warned: bool,
    ask: Option<Ask<'q>>,
    notify: &'a mut dyn FnMut(Notice),
    before_commit: &'a dyn Fn(),
    /// Keys of the problems answered no.
    declined: HashSet<Vec<u8>>,
    /// The device is mounted read-only and `-f` was given: the commit
    /// writes under the mount, as e2fsck does.
    read_only_mount: bool,
    /// The new bad blocks list to write before the check.
    bad_blocks: Option<fix::badblocks::NewList>,
    /// It was staged under the first check.
    bad_blocks_staged: bool,
}

impl<'a, 'q> Session<'a, 'q> {
    /// A repair of `device` with the check options `opts`. With `ask`,
    /// the problems answered yes are fixed as `-y` would (`mode` is then
    /// Yes); without, `mode` decides. `notify` hears of the undo log's
    /// change of place before the device is written; `before_commit` runs
    /// last before the commit (a test's fault point).
    pub fn new(
        device: &Path,
        opts: &Options,
        mode: Mode,
        undo: UndoChoice,
        ask: Option<Ask<'q>>,
        notify: &'a mut dyn FnMut(Notice),
        before_commit: &'a dyn Fn(),
    ) -> Session<'a, 'q> {
        Session {
            device: device.to_path_buf(),
            opts: opts.clone(),
            mode,
            undo,
            target: OnceLock::new(),
            warned: false,
            ask,
            notify,
            before_commit,
            declined: HashSet::new(),
            read_only_mount: false,
            bad_blocks: None,
            bad_blocks_staged: false,
        }
    }

    /// Writes `list` into the bad blocks inode before the check, as e2fsck
    /// does for `-l`, `-L` and `-c`; the check is then forced. The passes
    /// judge the result (blocks in use elsewhere, in the metadata).
    pub fn with_bad_blocks(mut self, list: fix::badblocks::NewList) -> Self {
        self.opts.force = true;
        self.bad_blocks = Some(list);
        self
    }

    /// The device the first check reads: with the new bad blocks list
    /// staged under it, when there is one.
    fn first_device(&mut self) -> Result<Device> {
        let dev = Device::open_read_only(&self.device).map_err(SessionError::Device)?;
        let Some(list) = self.bad_blocks.take() else {
            return Ok(dev);
        };
        let fs = match check::superblock::open(dev, &self.opts) {
            Ok(check::superblock::Opened::Fs(fs, _)) => fs,
            // No file system to write it in: the check says why.
            Ok(check::superblock::Opened::Fatal(_)) => {
                return Device::open_read_only(&self.device).map_err(SessionError::Device);
            }
            Err(e) => return Err(SessionError::Device(e)),
        };
        // e2fsck replays the journal first and writes the list on the
        // primary superblock's file system; pfsck does not stack the two.
        if fs.sb.has_incompat(crate::fs::superblock::incompat::RECOVER) {
            return Err(FixError::from(
                "the journal needs recovery: repair without -l, -L or -c first, then record the bad blocks",
            )
            .into());
        }
        if fs.sb_block != fs.primary_sb_block() {
            return Err(FixError::from(
                "the primary superblock is not in use: repair without -l, -L or -c first, then record the bad blocks",
            )
            .into());
        }
        let staged = fix::badblocks::stage(&fs, &list, &self.staging())?;
        (self.notify)(Notice::BadBlocks {
            dropped: &staged.dropped,
            ignored: &staged.ignored,
        });
        self.bad_blocks_staged = true;
        Ok(Device::open_read_only(&self.device)
            .map_err(SessionError::Device)?
            .with_read_overlay(Arc::new(staged.overlay)))
    }

    /// Runs the repair. e2fsck holds the MMP block from before its check
    /// until it is done: a node mounting the file system meanwhile sees it
    /// being checked. The second result is the MMP block's release, which
    /// fails after the rest is done.
    pub fn run(mut self) -> (Result<Outcome>, std::result::Result<(), String>) {
        // Judged before anything is claimed or read: a refused repair
        // leaves no trace. A mount made later is the commit's to refuse.
        match mount_policy(&self.device, true, self.opts.force) {
            Ok(MountVerdict::NotMounted) => {}
            Ok(MountVerdict::ReadOnlyRoot) => (self.notify)(Notice::ReadOnlyRoot),
            Ok(MountVerdict::Warn) => {
                // Only a read-only mount under -f gets here: e2fsck
                // repairs it after the warning, and so does the commit.
                self.read_only_mount = true;
                (self.notify)(Notice::MountedWarning)
            }
            Err(e) => return (Err(e), Ok(())),
        }
        let claim = match crate::store::mmp::claim(&self.device) {
            Ok(c) => c,
            Err(e) => return (Err(SessionError::Mmp(e)), Ok(())),
        };
        self.opts.mmp_claimed = claim.is_some();
        // -y and -p replace an unusable journal (e2fsck clears and
        // recreates it, preen included) and fix a wrong inodes count, so
        // the check goes on past them.
        self.opts.repairing = true;
        self.opts.replay_anyway = self.mode == Mode::Yes && self.ask.is_none();
        let result = self.run_claimed();
        let released = match claim {
            Some(c) => c.release(),
            None => Ok(()),
        };
        (result, released)
    }

    fn run_claimed(&mut self) -> Result<Outcome> {
        // Held until the commit is done: a second repair waits briefly,
        // then refuses before it has checked anything.
        let _lock = DeviceLock::acquire(&self.device, LOCK_WAIT).map_err(SessionError::Device)?;
        let dev = self.first_device()?;
        let checked = match check::check_device(dev, &self.opts) {
            Ok(c) => c,
            Err(Error::Interrupted) => return Err(SessionError::Interrupted),
            Err(e) => return Err(SessionError::Device(e)),
        };
        let staging = &self.staging();
        if let Some(fs) = &checked.fs
            && self.mode == Mode::Preen
            && self.ask.is_none()
            && fix::preen_halts_before_passes(&checked.report)
        {
            return self.preen_halt(fs, None, &checked.report, &ProblemList::new(), staging);
        }
        let (Some(fs), false) = (&checked.fs, checked.report.has_fatal()) else {
            // No file system or a fatal problem: the check's verdict stands.
            return Ok(Outcome::Checked {
                report: checked.report,
                replay_written: false,
            });
        };
        let Some(state) = &checked.state else {
            // Marked clean and not forced: nothing to fix, but e2fsck still
            // replays a journal that needs it (the check ran on the
            // replayed view, which is what was found clean).
            let replay_written = self.replay_only(fs, &checked.report)?;
            return Ok(Outcome::Checked {
                report: checked.report,
                replay_written,
            });
        };
        let rep = &checked.report;
        if let Some(r) = self.restart(fs, state, rep, staging)? {
            return self.restarted(fs, r, staging);
        }
        let plan = match self.plan_round(fs, state, rep, staging) {
            Ok(p) => p,
            Err(Refusal::Unexpected) => {
                return self.preen_halt(fs, Some(state), rep, &ProblemList::new(), staging);
            }
            Err(why) => {
                return Ok(Outcome::Refused {
                    report: checked.report,
                    why,
                });
            }
        };
        if plan.overlay.is_empty() {
            // Nothing to fix: either nothing we may fix, or fixes that
            // change no byte. The first check is the verdict, and only the
            // record of the check is written (not after an interactive
            // user declined a fix: answering no leaves the disk as it was).
            let mut recorded = fix::finish::Recorded::default();
            if self.ask.is_none() || !rep.has_errors() {
                recorded = self.record_check(fs, rep, staging)?;
            }
            // What a fix writes on the journal device alone.
            self.reset_external(fs, rep, &rep.problems, &plan.fixed)?;
            let status = self.status(&rep.problems, &plan.fixed);
            return Ok(Outcome::Unchanged {
                report: checked.report,
                status,
                recorded,
            });
        }
        let shown = Shown {
            problems: rep.problems.clone(),
            fixed: plan.fixed.clone(),
            fixes_staged: plan.fixes_staged,
        };
        let overlay = Arc::new(plan.overlay.flattened()?);
        drop(checked.state);
        let (shown, overlay, last) = match self.rounds(shown, overlay, staging)? {
            Ended::Done(shown, overlay, last) => (shown, overlay, last),
            Ended::Halted(halted) => return Ok(*halted),
        };
        self.commit_repair(fs, rep, plan.replayed, shown, overlay, last)
    }

    /// The later rounds, each planned from a check of the staging so far,
    /// until one stages nothing new. The problems shown, the staging and
    /// the last check; or a preen run's stop.
    fn rounds(
        &mut self,
        mut shown: Shown,
        mut overlay: Arc<Overlay>,
        staging: &Staging,
    ) -> Result<Ended> {
        let mut round = 1;
        // A check that read a backup superblock (found by itself, or named
        // with -b) restores the primary copies in the first round, alone;
        // the later rounds read the restored primary, as the kernel will.
        let recheck_opts = &Options {
            superblock: None,
            blocksize: None,
            // The re-checks are not shown pass by pass: their problems
            // are asked about, or listed, after them.
            events: None,
            recheck: true,
            ..self.opts.clone()
        };
        loop {
            let dev = Device::open_read_only(&self.device)
                .map_err(SessionError::Device)?
                .with_read_overlay(overlay.clone());
            let mut again = match check::check_device(dev, recheck_opts) {
                Ok(c) => c,
                Err(Error::Interrupted) => return Err(SessionError::Interrupted),
                Err(e) => return Err(SessionError::Recheck(e)),
            };
            round += 1;
            let (Some(fs2), Some(state2)) = (&again.fs, &again.state) else {
                return Ok(Ended::Done(shown, overlay, Box::new(again)));
            };
            // A missing /lost+found is only a notice, but e2fsck -y
            // creates it whenever it finds it missing (a root recreated
            // in this round has none yet).
            let lost_found = again
                .report
                .problems
                .iter()
                .any(|p| p.code == Code::LostFoundMissing);
            // e2fsck judges a tree for pass 1E once, in pass 1, after
            // its pass-1 fixes: an offer made now on an inode no earlier
            // round found a pass-1 problem on (a tree only pass 1D's copy
            // changed) is one e2fsck's run never makes.
            let pass1: HashSet<u32> = shown
                .problems
                .iter()
                .filter(|p| p.spec().pass == check::problem::Pass::P1)
                .filter_map(|p| p.args().ino.map(Ino::get))
                .collect();
            again.report.problems.retain(|p| {
                !matches!(p.code, Code::ExtentTreeShorter | Code::ExtentTreeNarrower)
                    || p.args().ino.is_some_and(|Ino(i)| pass1.contains(&i))
            });
            // Nor is pass 1E's offer on a tree an earlier round mended
            // (e2fsck makes it in the same run), or -E bmap2extent's
            // conversion of a map an earlier round fixed first.
            let offer = again.report.problems.iter().any(|p| {
                matches!(
                    p.code,
                    Code::ExtentTreeShorter
                        | Code::ExtentTreeNarrower
                        | Code::InodeExtentTooDeep
                        | Code::InodeBlockMapToExtents
                )
            });
            if round > MAX_ROUNDS
                || !(again.report.has_errors() || lost_found || offer)
                || again.report.has_fatal()
            {
                return Ok(Ended::Done(shown, overlay, Box::new(again)));
            }
            let next = match self.plan_round(fs2, state2, &again.report, staging) {
                Ok(next) => next,
                // A fix uncovered a problem preen may not fix: e2fsck
                // would stop there too, with what it fixed so far written.
                Err(Refusal::Unexpected) => {
                    let earlier: ProblemList = shown
                        .problems
                        .iter()
                        .zip(&shown.fixed)
                        .filter(|(_, f)| **f)
                        .map(|(p, _)| p)
                        .collect();
                    let halted =
                        self.preen_halt(fs2, Some(state2), &again.report, &earlier, staging)?;
                    return Ok(Ended::Halted(Box::new(halted)));
                }
                Err(_) => return Ok(Ended::Done(shown, overlay, Box::new(again))),
            };
            if !next.fixes_staged {
                return Ok(Ended::Done(shown, overlay, Box::new(again)));
            }
            shown.merge(&again.report, &next.fixed);
            // This round's staging lies over the one the re-check read;
            // with the re-check's device gone, the two merge into one.
            drop(again);
            drop(overlay);
            overlay = Arc::new(next.overlay.flattened()?);
        }
    }

    /// Stages the record of the check over the repair, picks the problems
    /// shown, and commits.
    fn commit_repair(
        &mut self,
        fs: &check::Fs,
        rep: &Report,
        replayed: bool,
        shown: Shown,
        mut overlay: Arc<Overlay>,
        last: Box<check::Checked>,
    ) -> Result<Outcome> {
        let check::Checked {
            report: after,
            fs: last_fs,
            ..
        } = *last;
        let fixes_staged = shown.fixes_staged;
        let (report, fixed) = shown.kept(rep, &after);
        let status = self.status(&report.problems, &fixed);
        let declined_errors = declined_errors(fs, &report, &status);
        // The record of the check goes with the repair, staged over it on
        // the file system as the last check read it.
        let mut recorded = fix::finish::Recorded::default();
        if !after.has_fatal() {
            let mut top = Overlay::over(overlay.clone());
            recorded = fix::finish::stage(
                last_fs.as_ref().unwrap_or(fs),
                &mut top,
                !after.has_errors() && !declined_errors,
                self.opts.clock.now(),
            )?;
            // The last check's device reads through the staging: gone, the
            // two layers merge.
            drop(last_fs);
            drop(overlay);
            overlay = Arc::new(top.flattened()?);
        }
        (self.before_commit)();
        // The last moment a signal cancels the repair: nothing written yet.
        if self.opts.control.cancelled() {
            return Err(SessionError::Interrupted);
        }
        let log = self.undo_log();
        let written = match self.commit_run(&overlay) {
            Ok(r) => r.blocks_written,
            Err(e) => {
                let error = SessionError::NotWritten(self.not_written("repair", e, &log));
                return Ok(Outcome::NotWritten { report, error });
            }
        };
        self.reset_external(fs, &report, &report.problems, &fixed)?;
        Ok(Outcome::Repaired(Box::new(Repaired {
            report,
            status,
            after,
            declined_errors,
            blocks_written: written,
            fixes_staged,
            replayed,
            bad_blocks_written: self.bad_blocks_staged,
            recorded,
            undo_log: log,
            restarts: Vec::new(),
        })))
    }

    /// e2fsck -y starts over after some fixes (`super::restart`): where it
    /// would, the problems before that point are fixed alone and the
    /// result checked anew, as often as that check calls for it. None
    /// when no restart applies (interactive and preen runs do not
    /// restart, nor a run that replays a journal).
    fn restart(
        &mut self,
        fs: &check::Fs,
        state: &check::state::State,
        rep: &Report,
        staging: &Staging,
    ) -> Result<Option<Restarted>> {
        if self.ask.is_some() || self.mode != Mode::Yes {
            return Ok(None);
        }
        let Some((first, mut overlay)) = self.restart_round(fs, state, rep, staging, true)? else {
            return Ok(None);
        };
        let mut restarts = vec![first];
        loop {
            let checked = self.recheck(&overlay)?;
            let next = match (&checked.fs, &checked.state) {
                (Some(fs2), Some(state2))
                    if !checked.report.has_fatal() && restarts.len() < MAX_RESTARTS =>
                {
                    self.restart_round(fs2, state2, &checked.report, staging, false)?
                }
                _ => None,
            };
            let Some((r, staged)) = next else {
                return Ok(Some(Restarted {
                    restarts,
                    overlay,
                    checked,
                }));
            };
            restarts.push(r);
            drop(checked);
            overlay = staged;
        }
    }

    /// One check's fixes up to its restart point; None when it has none,
    /// or the fix that restarts e2fsck is not made. The first check's
    /// plan may not replay a journal (its report tells of the replay).
    fn restart_round(
        &mut self,
        fs: &check::Fs,
        state: &check::state::State,
        rep: &Report,
        staging: &Staging,
        first: bool,
    ) -> Result<Option<(Restart, Arc<Overlay>)>> {
        let Some((rep, cut)) = super::restart::cut(rep, |p| check::kept_unused_entry_type(fs, p))
        else {
            return Ok(None);
        };
        let rep = &rep;
        let (kept, idx) = fix::answered(rep, &cut.keep);
        let Ok(plan) = fix::plan(fs, state, &kept, Mode::Yes, staging) else {
            return Ok(None);
        };
        let mut fixed = vec![false; rep.problems.len()];
        for (j, &k) in idx.iter().enumerate() {
            fixed[k] = plan.fixed.get(j).copied().unwrap_or(false);
        }
        if !fixed[cut.trigger] || !plan.fixes_staged || (first && plan.replayed) {
            return Ok(None);
        }
        // e2fsck fixes everything it meets before it starts over; where a
        // fix of those waits for a later round here (a directory block's
        // salvage, say), the repair does not start over.
        let waits = rep
            .problems
            .codes()
            .enumerate()
            .any(|(k, c)| cut.keep[k] && !fixed[k] && fix::supported(c));
        if waits {
            return Ok(None);
        }
        let mut shown_fixed = Vec::new();
        let problems: ProblemList = rep
            .problems
            .iter()
            .enumerate()
            .filter(|&(k, _)| cut.keep[k])
            .map(|(k, p)| {
                shown_fixed.push(fixed[k]);
                p
            })
            .collect();
        let restart = Restart {
            report: rep.with_problems(problems),
            fixed: shown_fixed,
            pass: cut.pass,
        };
        Ok(Some((restart, Arc::new(plan.overlay.flattened()?))))
    }

    /// A check of the device read through `overlay`.
    fn recheck(&self, overlay: &Arc<Overlay>) -> Result<check::Checked> {
        let dev = Device::open_read_only(&self.device)
            .map_err(SessionError::Device)?
            .with_read_overlay(overlay.clone());
        let opts = Options {
            superblock: None,
            blocksize: None,
            events: None,
            recheck: true,
            ..self.opts.clone()
        };
        match check::check_device(dev, &opts) {
            Ok(c) => Ok(c),
            Err(Error::Interrupted) => Err(SessionError::Interrupted),
            Err(e) => Err(SessionError::Recheck(e)),
        }
    }

    /// The repair after its restarts: the last restart's check is fixed
    /// round by round as a first check is, over what the restarts staged.
    fn restarted(&mut self, fs: &check::Fs, r: Restarted, staging: &Staging) -> Result<Outcome> {
        let Restarted {
            restarts,
            overlay,
            checked,
        } = r;
        let rep = checked
            .report
            .with_problems(checked.report.problems.clone());
        let n = rep.problems.len();
        let plan = match (&checked.fs, &checked.state) {
            (Some(fs2), Some(state2)) if !rep.has_fatal() => {
                fix::plan(fs2, state2, &rep, Mode::Yes, staging).ok()
            }
            _ => None,
        };
        let (shown, overlay, last) = match plan {
            Some(plan) if plan.fixes_staged => {
                let shown = Shown {
                    problems: rep.problems.clone(),
                    fixed: plan.fixed.clone(),
                    fixes_staged: true,
                };
                let staged = Arc::new(plan.overlay.flattened()?);
                drop(checked);
                drop(overlay);
                match self.rounds(shown, staged, staging)? {
                    Ended::Done(shown, overlay, last) => (shown, overlay, last),
                    Ended::Halted(halted) => return Ok(*halted),
                }
            }
            _ => {
                let shown = Shown {
                    problems: rep.problems.clone(),
                    fixed: vec![false; n],
                    fixes_staged: true,
                };
                (shown, overlay, Box::new(checked))
            }
        };
        let mut outcome = self.commit_repair(fs, &rep, false, shown, overlay, last)?;
        if let Outcome::Repaired(done) = &mut outcome {
            done.restarts = restarts;
        }
        Ok(outcome)
    }

    /// Plans one round's fixes; in interactive mode, only for the problems
    /// answered yes, with `fixed` mapped back onto all of `rep`'s problems.
    fn plan_round(
        &mut self,
        fs: &check::Fs,
        state: &check::state::State,
        rep: &Report,
        staging: &Staging,
    ) -> std::result::Result<fix::Plan, Refusal> {
        let Some(ask) = &mut self.ask else {
            return fix::plan(fs, state, rep, self.mode, staging);
        };
        let yes = ask(rep);
        for (k, (key, code)) in rep.problems.keys().zip(rep.problems.codes()).enumerate() {
            if !yes.get(k).copied().unwrap_or(false) && fix::supported(code) {
                self.declined.insert(key.to_vec());
            }
        }
        let (kept, idx) = fix::answered(rep, &yes);
        let summary = fix::kept_summary(fs, state, rep, &yes);
        let mut plan = fix::plan_keeping(fs, state, &kept, Mode::Yes, staging, &summary)?;
        let mut fixed = vec![false; rep.problems.len()];
        for (j, &k) in idx.iter().enumerate() {
            fixed[k] = plan.fixed[j];
        }
        plan.fixed = fixed;
        Ok(plan)
    }

    /// e2fsck -p stopping at a problem it may not fix (its preenhalt), in
    /// the round whose check is `fs`, `state`, `rep`, after `earlier`
    /// rounds fixed the problems listed: stages what e2fsck has written by
    /// then and at the stop (`fix::plan_preen_halt`: the preen fixes
    /// before that problem, the superblock marked with errors) and commits
    /// it through the undo log.
    fn preen_halt(
        &mut self,
        fs: &check::Fs,
        state: Option<&check::state::State>,
        rep: &Report,
        earlier: &ProblemList,
        staging: &Staging,
    ) -> Result<Outcome> {
        let plan = fix::plan_preen_halt(fs, state, rep, staging)?;
        let mut written = 0;
        if !plan.overlay.is_empty() {
            let log = self.undo_log();
            written = self
                .commit_run(&plan.overlay)
                .map_err(|e| SessionError::NotWritten(self.not_written("preen stop", e, &log)))?
                .blocks_written;
            self.reset_external(fs, rep, &rep.problems, &plan.fixed)?;
        }
        Ok(Outcome::PreenHalt(Box::new(PreenHalt {
            report: rep.with_problems(rep.problems.clone()),
            earlier: earlier.clone(),
            fixed: plan.fixed,
            halt: fix::preen_halt_at(rep).and_then(|k| rep.problems.get(k)),
            blocks_written: written,
            replayed: plan.replayed,
        })))
    }

    /// What became of each problem of `problems`, fixed or not.
    fn status(&self, problems: &ProblemList, fixed: &[bool]) -> Vec<Status> {
        problems
            .keys()
            .zip(problems.codes())
            .enumerate()
            .map(|(k, (key, code))| {
                if fixed.get(k).copied().unwrap_or(false) {
                    Status::Fixed
                } else if !fix::supported(code) {
                    Status::NotFixable
                } else if self.declined.contains(key) {
                    Status::Declined
                } else {
                    Status::Unfixed
                }
            })
            .collect()
    }

    /// Where a repair stages: blocks beyond a small budget spill to a file
    /// beside the undo log (never on the device being repaired), or stay in
    /// memory when there is no log, since its directory could not be
    /// written either.
    fn staging(&self) -> Staging {
        match self.undo_target() {
            UndoTarget::Log { path, .. } => Staging::beside_log(path, self.undo.memory),
            UndoTarget::Without { .. } => Staging::without_log(),
        }
    }

    /// The undo log path: the resolved log, or the one wanted when the
    /// repair goes without (for messages and staging).
    fn undo_log(&self) -> PathBuf {
        self.undo_target().path().to_path_buf()
    }

    /// The undo log of this run, decided once: `--undo`, or the default
    /// beside the image (or in `/var/lib/pfsck` for a block device). When
    /// its directory cannot be written, as `/var/lib` at boot, the default
    /// moves to the run directory (`/run/pfsck`); an explicit `--undo`
    /// moves only under -p, the unattended boot check, which must not stop
    /// the machine. When the run directory fails too, -p and -y (with the
    /// default log; -p with an explicit one) repair without a log, as
    /// e2fsck always does; other runs keep the log and the commit refuses.
    fn undo_target(&self) -> &UndoTarget {
        self.target.get_or_init(|| {
            let u = &self.undo;
            let (wanted, may_move) = match &u.explicit {
                Some(p) => (p.clone(), u.unattended),
                None => (crate::store::default_undo_path(&self.device), true),
            };
            crate::store::resolve_undo(&wanted, may_move, may_move && (u.unattended || u.yes))
        })
    }

    /// Commits `overlay` through this run's undo log, or without one when
    /// none can be written; either change of plan is told, once, before
    /// the device is written.
    fn commit_run(&mut self, overlay: &Overlay) -> crate::store::Result<commit::CommitReport> {
        let target = self.undo_target().clone();
        if !overlay.is_empty() && !self.warned {
            self.warned = true;
            match &target {
                UndoTarget::Log {
                    path,
                    moved: Some((wanted, why)),
                } => (self.notify)(Notice::UndoMoved { wanted, path, why }),
                UndoTarget::Without { wanted, why } => {
                    (self.notify)(Notice::NoUndo { wanted, why })
                }
                UndoTarget::Log { moved: None, .. } => {}
            }
        }
        match &target {
            UndoTarget::Log { path, .. } => commit::commit(
                &self.device,
                overlay,
                path,
                &mut NoFaults,
                &self.commit_options(),
            ),
            UndoTarget::Without { .. } => commit::commit_unlogged(
                &self.device,
                overlay,
                &mut NoFaults,
                &self.commit_options(),
            ),
        }
    }

    /// How this session's commits write to its device.
    fn commit_options(&self) -> CommitOptions {
        CommitOptions {
            read_only_mount: self.read_only_mount,
            ..CommitOptions::default()
        }
    }

    /// Writes the end-of-check record (`fix::finish`) of a run that stages
    /// no fix, straight to the device (`commit::record`).
    fn record_check(
        &self,
        fs: &check::Fs,
        rep: &Report,
        staging: &Staging,
    ) -> Result<fix::finish::Recorded> {
        let mut overlay = Overlay::with_staging(fs.geo.block_size, fs.dev.size(), staging)?;
        let recorded = fix::finish::stage(fs, &mut overlay, !rep.has_errors(), fs.clock.now())?;
        commit::record(&self.device, &overlay, &self.commit_options())
            .map_err(SessionError::Record)?;
        Ok(recorded)
    }

    /// Writes the journal replay and orphan processing the check read
    /// through (and a journal inode restored from the superblock's
    /// backup), and nothing else, for the runs that stage no fix (clean
    /// and not forced). Whether there was anything to write.
    fn replay_only(&mut self, fs: &check::Fs, rep: &Report) -> Result<bool> {
        let overlay = fix::journal::staged_before_passes(fs, &self.staging())?;
        if overlay.is_empty() {
            return Ok(false);
        }
        let log = self.undo_log();
        self.commit_run(&overlay)
            .map_err(|e| SessionError::NotWritten(self.not_written("journal replay", e, &log)))?;
        self.reset_external(fs, rep, &rep.problems, &[])?;
        Ok(true)
    }

    /// After the file system's commit (its superblock no longer asks for
    /// recovery), an external journal that was replayed is reset on its
    /// own device, in a commit of its own: a crash between the two leaves
    /// a journal the kernel wipes, since the file system says nothing is
    /// due. The device's own superblock checksum, when `fixed` marks it
    /// fixed among `problems`, goes in the same commit.
    fn reset_external(
        &self,
        fs: &check::Fs,
        rep: &Report,
        problems: &ProblemList,
        fixed: &[bool],
    ) -> Result<()> {
        let csum = problems
            .codes()
            .zip(fixed)
            .any(|(c, &f)| f && c == Code::JournalExternalChecksum);
        let replayed = fix::journal::journal_replayed(rep);
        if !check::journal::external(fs) || !(replayed || csum) {
            return Ok(());
        }
        let Some(path) = check::journal::external_path(fs, self.opts.journal_device.as_deref())
        else {
            return Ok(());
        };
        let path = &path;
        let ext = check::external_journal::open(fs, path).map_err(SessionError::JournalReset)?;
        let bs = fs.geo.block_size;
        let dev =
            Device::open_read_only(path).map_err(|e| SessionError::JournalReset(e.to_string()))?;
        let mut overlay = Overlay::new(bs, dev.size(), 2 * u64::from(bs))
            .map_err(|e| SessionError::JournalReset(e.to_string()))?;
        let mut stage = |blk: u64, bytes: Vec<u8>| {
            overlay
                .stage(Blk(blk), bytes)
                .map_err(|e| SessionError::JournalReset(e.to_string()))
        };
        if replayed {
            stage(ext.jsb_block, check::external_journal::reset_block(&ext))?;
        }
        if csum {
            let (blk, bytes) = check::external_journal::superblock_fixed(path, bs)
                .map_err(SessionError::JournalReset)?;
            stage(blk, bytes)?;
        }
        let log = crate::store::default_undo_path(path);
        commit::commit(
            path,
            &overlay,
            &log,
            &mut NoFaults,
            &CommitOptions {
                primary_guard: false,
                ..CommitOptions::default()
            },
        )
        .map_err(|e| {
            let e = not_written("external journal reset", e, &log, path);
            SessionError::JournalReset(format!("{e} (the file system itself is repaired)"))
        })?;
        Ok(())
    }

    fn not_written(&self, what: &'static str, e: StoreError, log: &Path) -> NotWritten {
        not_written(what, e, log, &self.device)
    }
}

/// A commit that failed: a rollback is suggested only when a log at
/// `log` says the device may have been written (never a log that was not
/// written, nor whatever file `--undo` named).
fn not_written(what: &'static str, e: StoreError, log: &Path, device: &Path) -> NotWritten {
    let rollback = commit::interrupted_log(log).then(|| (log.to_path_buf(), device.to_path_buf()));
    NotWritten {
        what,
        source: e,
        rollback,
    }
}

/// How the later rounds ended: with the problems shown, the staging and
/// the last check; or with a preen run's stop.
enum Ended {
    Done(Shown, Arc<Overlay>, Box<check::Checked>),
    Halted(Box<Outcome>),
}

/// The problems shown so far: the first check's, then those later rounds
/// found and fixed.
struct Shown {
    problems: ProblemList,
    /// Parallel to `problems`.
    fixed: Vec<bool>,
    /// Some round staged a fix beyond the journal replay.
    fixes_staged: bool,
}

impl Shown {
    /// Adds a later round's fixes: a problem an earlier round left for
    /// later (directory structure goes first) is shown once, as fixed.
    fn merge(&mut self, rep: &Report, fixed: &[bool]) {
        let unfixed = by_key(&self.problems, |k| !self.fixed[k]);
        for (key, f) in rep.problems.keys().zip(fixed) {
            if !*f {
                continue;
            }
            let same = equal_keys(&unfixed, &self.problems, key).find(|&k| !self.fixed[k]);
            match same {
                Some(k) => self.fixed[k] = true,
                None => {
                    self.problems.push_key(key);
                    self.fixed.push(true);
                }
            }
        }
        self.fixes_staged = true;
    }

    /// What is shown: the first check's problems, then those later rounds
    /// found and fixed, each in its pass. A first-check problem of passes
    /// 1-5 neither fixed nor found by the last check was a consequence of
    /// another problem (inodes an impossible itable_unused hid, say) and
    /// is not shown; pass 0's notes (the journal replay) stay. The report
    /// (`rep`'s, with those problems) and which were fixed.
    fn kept(self, rep: &Report, after: &Report) -> (Report, Vec<bool>) {
        let Shown {
            problems: shown,
            fixed: shown_fixed,
            ..
        } = self;
        let mut keep: Vec<bool> = shown
            .iter()
            .zip(&shown_fixed)
            .map(|(p, &f)| f || p.spec().pass == Pass::Super)
            .collect();
        let unfixed = by_key(&shown, |k| !keep[k]);
        for key in after.problems.keys() {
            for k in equal_keys(&unfixed, &shown, key) {
                keep[k] = true;
            }
        }
        let mut kept_fixed = Vec::new();
        let report =
            rep.with_problems(shown.select_by_pass(&keep, |k| kept_fixed.push(shown_fixed[k])));
        (report, kept_fixed)
    }
}

/// Is an error of `report` answered no ([`Repaired::declined_errors`]):
/// declined by the user, or left by the repair's policy on `fs`
/// (`fix::left_on`)? Not a problem a later round's fix settled another
/// way (an orphan file's size fixed by pass 1), nor one that e2fsck asks
/// before it marks its file system valid for the passes
/// (`e2fsck_map::before_valid`), nor one it only states (no question, no
/// answer), nor one whose no it lets pass (NO_OK).
fn declined_errors(fs: &check::Fs, report: &Report, status: &[Status]) -> bool {
    use check::catalogue;
    report.problems.iter().zip(status).any(|(p, s)| {
        (*s == Status::Declined || (*s == Status::Unfixed && fix::left_on(fs, p.code)))
            && p.spec().severity == crate::check::problem::Severity::Error
            && !check::e2fsck_map::before_valid(&p)
            && !check::e2fsck_map::message_only(&p)
            && !p
                .e2fsck_code()
                .and_then(catalogue::entry)
                .is_some_and(|e| e.no_ok())
    })
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
