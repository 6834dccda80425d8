//! Online checking: a mounted ext2/3/4 file system checked through a
//! consistent snapshot, on CPU time nobody else wants, with the verdict
//! recorded on it for the next offline check (what e2scrub does with LVM
//! and e2fsck).
//!
//! `run`: resolve the target (`target.rs`), start the watchdog that
//! undoes a freeze or a snapshot if pfsck dies (`watchdog.rs`), take the
//! cheapest snapshot the device allows (`reflink.rs`: a loop device backed
//! by a file on XFS or btrfs; `lvm.rs`: an LVM logical volume), check it
//! read-only at `SCHED_IDLE` with the automatic thread budget, drop the
//! snapshot, and record the verdict on the origin (`mark.rs`). The freeze
//! windows run at normal priority: an idle-priority process holding a
//! freeze could be starved by the very workload it blocks. System calls
//! std lacks are in `sys.rs`.
//!
//! `Options::fault` is a test hook (the binary's `PFSCK_ONLINE_FAULT`):
//! `kill-frozen` kills pfsck with SIGKILL inside the snapshot's freeze
//! window, `stop-before-check` stops it (SIGSTOP) once the snapshot is
//! taken, so that tests can deliver signals at a known point.

pub mod lvm;
pub mod mark;
mod reflink;
pub mod sys;
pub mod target;
pub mod watchdog;

use crate::check::problem::{Code, Problem, ProblemList};
use crate::check::{self, Report};
use crate::engine::budget;
use crate::error::Error;
use crate::io::Device;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
pub use target::{Kind, Target};
use watchdog::Watchdog;

/// Why an online check did not happen, or stopped. In every case the
/// snapshot is gone and the file system is not left frozen.
#[derive(Debug)]
pub enum OnlineError {
    /// This target cannot be checked online as things are (read-only,
    /// already frozen, not mounted, no permission); nothing was changed.
    Refused(String),
    /// No snapshot mechanism applies to the target (not ext2/3/4, or a
    /// device that is neither a logical volume nor a loop device backed
    /// by a file that can be cloned).
    Unsupported(String),
    /// Something failed on the way.
    Failed(String),
    /// Ctrl-C, SIGTERM or SIGHUP.
    Cancelled,
}

impl std::fmt::Display for OnlineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OnlineError::Refused(s) | OnlineError::Unsupported(s) | OnlineError::Failed(s) => {
                f.write_str(s)
            }
            OnlineError::Cancelled => f.write_str("cancelled"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    Reflink,
    Lvm,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Reflink => "reflink",
            Mechanism::Lvm => "lvm",
        }
    }
}

/// What keeps a snapshot alive; dropping it removes the snapshot.
pub(crate) enum Hold<'a> {
    /// The unnamed clone (`O_TMPFILE`), only held open.
    File(#[allow(dead_code)] std::fs::File),
    Lvm(lvm::Snap<'a>),
}

/// A consistent image of the origin, readable at `path`.
pub struct Snapshot<'a> {
    pub mechanism: Mechanism,
    pub path: PathBuf,
    /// What it is a snapshot of: the backing file, or VG/LV.
    pub of: String,
    /// How long the origin was frozen to take it.
    pub frozen: Duration,
    /// `frozen` is the whole snapshot command's run (LVM freezes inside it).
    pub frozen_is_upper_bound: bool,
    hold: Hold<'a>,
}

pub struct Options<'a> {
    pub check: &'a check::Options,
    /// Record the verdict on the origin (not with `-n`).
    pub mark: bool,
    /// Size of an LVM snapshot's copy-on-write space.
    pub lvm_snap_mb: u64,
    /// The test hook's point (see the module's documentation).
    pub fault: Option<String>,
}

/// What an online check did, besides the report.
#[derive(Clone, Debug)]
pub struct Info {
    pub mechanism: Mechanism,
    pub device: PathBuf,
    pub mount_point: PathBuf,
    /// The backing file, or VG/LV.
    pub snapshot_of: String,
    pub frozen_seconds: f64,
    pub frozen_is_upper_bound: bool,
    /// Wall and CPU time of the check of the snapshot (all threads).
    pub check_seconds: f64,
    pub check_cpu_seconds: f64,
    /// What was recorded on the origin.
    pub recorded: Option<mark::Recorded>,
    /// Why recording failed.
    pub mark_error: Option<String>,
}

pub struct Outcome {
    pub report: Report,
    pub info: Info,
}

/// The test hook (see the module's documentation).
fn fault(armed: Option<&str>, point: &str) {
    if armed == Some(point) {
        match point {
            "kill-frozen" => sys::raise(libc::SIGKILL),
            "stop-before-check" => sys::raise(libc::SIGSTOP),
            _ => {}
        }
    }
}

/// The normal CPU and I/O priority, for work that blocks others.
fn normal_priority() {
    let _ = budget::set_normal_priority();
    let _ = sys::set_io_idle(false);
}

fn cancelled(ctl: &crate::engine::Control) -> Result<(), OnlineError> {
    if ctl.cancelled() {
        Err(OnlineError::Cancelled)
    } else {
        Ok(())
    }
}

/// Takes the snapshot the target's device allows.
fn take<'a>(t: &Target, guard: &'a Watchdog, opts: &Options) -> Result<Snapshot<'a>, OnlineError> {
    match &t.kind {
        Kind::Loop(l) => reflink::take(t, l, guard, opts.fault.as_deref()),
        Kind::Lvm => lvm::take(&lvm::System, guard, &t.device, opts.lvm_snap_mb),
        Kind::Other(what) => Err(no_mechanism(t, what)),
    }
}

fn no_mechanism(t: &Target, what: &str) -> OnlineError {
    OnlineError::Unsupported(format!(
        "{} is {what}: pfsck --online snapshots LVM logical volumes (lvcreate -s) and loop devices backed by files on XFS or btrfs (reflink); check it unmounted instead",
        t.device.display()
    ))
}

/// In a snapshot of a live file system, a pending orphan list is open
/// files that were deleted and truncations under way: the kernel processes
/// them, they are not damage.
fn live_orphans_are_not_errors(report: &mut Report) {
    if !report.problems.codes().any(|c| c == Code::OrphansPending) {
        return;
    }
    let mut out = ProblemList::new();
    for p in report.problems.iter() {
        if p.code == Code::OrphansPending {
            out.push(Problem::new(Code::OrphansPendingHarmless).detail(p.args().detail));
        } else {
            out.push_ref(&p);
        }
    }
    report.problems = out;
}

/// The online check of `target`.
pub fn run(target: &Path, opts: &Options) -> Result<Outcome, OnlineError> {
    // A unit may start pfsck idle already (e2scrub@.service does): the
    // freeze must not wait behind the workload it blocks.
    normal_priority();
    let t = Target::resolve(target)?;
    let guard = Watchdog::start()
        .map_err(|e| OnlineError::Failed(format!("cannot start the watchdog process: {e}")))?;
    let snapshot = take(&t, &guard, opts)?;
    cancelled(&opts.check.control)?;
    fault(opts.fault.as_deref(), "stop-before-check");

    let dev = Device::open_read_only(&snapshot.path)
        .map_err(|e| OnlineError::Failed(format!("cannot open the snapshot: {e}")))?;
    budget::set_idle_priority()
        .map_err(|e| OnlineError::Failed(format!("cannot switch to SCHED_IDLE: {e}")))?;
    // Best effort: not every I/O scheduler has classes.
    let _ = sys::set_io_idle(true);
    let (wall, cpu) = (Instant::now(), sys::cpu_time());
    let checked = check::check_device(dev, opts.check);
    let (check_seconds, check_cpu) = (wall.elapsed(), sys::cpu_time().saturating_sub(cpu));
    // Before anything that freezes or suspends the origin again (the
    // mark, an LVM removal).
    normal_priority();
    let checked = match checked {
        Ok(c) => c,
        Err(Error::Interrupted) => return Err(OnlineError::Cancelled),
        Err(e) => return Err(OnlineError::Failed(format!("check of the snapshot: {e}"))),
    };
    let mut report = checked.report;
    live_orphans_are_not_errors(&mut report);
    if let Hold::Lvm(s) = &snapshot.hold
        && (report.has_errors() || report.has_fatal())
        && s.invalid()
    {
        return Err(OnlineError::Failed(format!(
            "the snapshot {} overflowed its copy-on-write space while being checked; its problems say nothing of the origin (raise snap_size_mb in {})",
            s.name,
            lvm::CONF
        )));
    }
    let origin = checked.fs.as_ref().map(mark::Origin::of);
    drop(checked.fs);
    let info_base = Info {
        mechanism: snapshot.mechanism,
        device: t.device.clone(),
        mount_point: t.mount_point.clone(),
        snapshot_of: snapshot.of.clone(),
        frozen_seconds: snapshot.frozen.as_secs_f64(),
        frozen_is_upper_bound: snapshot.frozen_is_upper_bound,
        check_seconds: check_seconds.as_secs_f64(),
        check_cpu_seconds: check_cpu.as_secs_f64(),
        recorded: None,
        mark_error: None,
    };
    drop(snapshot);

    let mut info = info_base;
    if opts.mark && !report.has_fatal() {
        let m = if report.has_errors() {
            mark::Mark::Errors
        } else {
            mark::Mark::Checked
        };
        match origin {
            Some(o) => match mark::record(&t, &o, m, opts.check.clock.now(), &guard) {
                Ok(r) => info.recorded = Some(r),
                Err(e) => info.mark_error = Some(e),
            },
            None => info.mark_error = Some("the snapshot has no usable superblock".into()),
        }
    }
    Ok(Outcome { report, info })
}

/// What `run` would do with `target`, in words (e2scrub's `-n`).
pub fn describe(target: &Path) -> Result<String, OnlineError> {
    let t = Target::resolve(target)?;
    let how = match &t.kind {
        Kind::Loop(l) => format!(
            "freeze {mp}, clone the backing file of /dev/{} into an unnamed file beside it (FICLONERANGE), thaw",
            l.loop_name,
            mp = t.mount_point.display()
        ),
        Kind::Lvm => {
            let lv = lvm::identify(&lvm::System, &t.device)?;
            format!(
                "lvcreate -s -L {}m -n {}.e2scrub {}/{}",
                lvm::snap_size_mb(&std::fs::read_to_string(lvm::CONF).unwrap_or_default()),
                lv.lv,
                lv.vg,
                lv.lv
            )
        }
        Kind::Other(what) => return Err(no_mechanism(&t, what)),
    };
    Ok(format!(
        "snapshot {dev} ({ty}, mounted on {mp}): {how}; check the snapshot read-only at idle priority; remove it; record the verdict in the superblock of {dev}",
        dev = t.device.display(),
        ty = t.fs_type,
        mp = t.mount_point.display()
    ))
}

/// Removes a snapshot a killed run left (only LVM snapshots have names;
/// reflink snapshots are unnamed files). True when there was one.
pub fn reap(target: &Path) -> Result<bool, OnlineError> {
    let t = Target::resolve(target)?;
    match t.kind {
        Kind::Lvm => lvm::reap(&lvm::System, &t.device),
        _ => Ok(false),
    }
}

/// Discards the origin's unused blocks (e2scrub's `-t`, after a clean
/// check): bytes trimmed.
pub fn trim(target: &Path) -> Result<u64, OnlineError> {
    let t = Target::resolve(target)?;
    std::fs::File::open(&t.mount_point)
        .and_then(|f| sys::trim(&f))
        .map_err(|e| OnlineError::Failed(format!("fstrim of {}: {e}", t.mount_point.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::num::Ino;

    #[test]
    fn pending_orphans_of_a_live_file_system_are_notices() {
        let mut r = Report::default();
        r.problems
            .push(Problem::new(Code::OrphansPending).detail("1 inode to clear, 0 to truncate"));
        r.problems
            .push(Problem::new(Code::InodeBadMode).ino(Ino(12)).num(7));
        assert!(r.has_errors());
        live_orphans_are_not_errors(&mut r);
        let codes: Vec<Code> = r.problems.codes().collect();
        assert_eq!(codes, [Code::OrphansPendingHarmless, Code::InodeBadMode]);
        assert!(
            r.problems
                .get(0)
                .unwrap()
                .message()
                .contains("1 inode to clear")
        );
        r.problems = ProblemList::new();
        r.problems
            .push(Problem::new(Code::OrphansPending).detail("x"));
        live_orphans_are_not_errors(&mut r);
        assert!(!r.has_errors());
    }
}
