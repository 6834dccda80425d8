//! The checks: pass 0 (superblock, descriptors, journal) then passes 1–5.
//!
//! Checks never print. Each pass takes the file system view (`Fs`) and the
//! shared `State`, and returns problems in a deterministic order.

pub mod blockmap;
pub mod catalogue;
pub mod dirblock;
pub mod e2fsck_map;
pub mod external_journal;
pub mod fast_commit;
pub mod htree_check;
pub mod journal;
pub mod lost_found_room;
pub mod mmp;
pub mod orphan;
pub mod pass1;
pub mod pass1b;
pub mod pass1e;
pub mod pass2;
pub mod pass3;
pub mod pass4;
pub mod pass5;
pub mod paths;
pub(crate) mod pipeline;
pub mod problem;
pub mod problem_list;
pub mod quota;
pub mod rebuild;
pub mod recovery;
pub mod state;
mod stops;
pub use stops::kept_unused_entry_type;
pub mod superblock;
#[cfg(test)]
mod unit;
pub mod xattr;

use crate::engine::{Budget, Clock, Control, Threads, TimeTrust};
use crate::error::{Error, Result};
use crate::fs::num::{Blk, Cluster, Ino};
use crate::io::Device;
use crate::narrow;
pub use crate::volume::Fs;
use problem::{ProblemList, Severity};
use state::{State, Stats};
use std::path::Path;
use std::time::Instant;

#[derive(Clone, Debug)]
pub struct Options {
    /// Threads per pass; with `auto_threads` only the first pass's count,
    /// later ones follow the machine's idle CPUs.
    pub threads: Threads,
    pub auto_threads: bool,
    pub force: bool,
    /// `-b`: superblock location (in blocks of `blocksize`, or 1 KiB units
    /// when no block size is given, like e2fsck).
    pub superblock: Option<u64>,
    /// `-B`: block size to interpret `superblock` with.
    pub blocksize: Option<u32>,
    /// A repair (`-y`, `-p`) follows: what `-n` must stop at in pass 0
    /// (an unusable journal, which `fix::journal_inode` replaces; a wrong
    /// inodes count) is reported for the repair to fix, and the check goes
    /// on.
    pub repairing: bool,
    /// `-y` (not preen, not asking): a journal holding transactions while
    /// needs_recovery is clear is replayed anyway, as e2fsck -y answers
    /// yes to running it; preen may not decide and stops there.
    pub replay_anyway: bool,
    /// A repair's re-check of what it staged: its first check already
    /// decided not to skip the file system as clean (e2fsck decides once),
    /// and a staging that keeps the superblock's clean state must not
    /// make the re-check skip what is left.
    pub recheck: bool,
    /// The repair holds the MMP block (`store::mmp::claim`): the
    /// "being checked" sequence there is its own.
    pub mmp_claimed: bool,
    /// `-j`: the external journal device.
    pub journal_device: Option<std::path::PathBuf>,
    /// Cancellation and progress of this run (a repair's rounds share
    /// one).
    pub control: Control,
    /// The time the run works with (and a repair stamps).
    pub clock: Clock,
    /// How far the superblock's times are trusted against `clock`
    /// (e2fsck.conf's options, which the binary reads).
    pub time_trust: TimeTrust,
    /// False: pass 2 starts once pass 1 is whole, as before the pipeline
    /// (the binary's `PFSCK_NO_OVERLAP=1`: tests compare the two,
    /// benchmarks measure it).
    pub overlap: bool,
    /// Pass 1E's offers to make extent trees shorter or narrower (off
    /// with `-E no_optimize_extents` or `-E fixes_only`, as in e2fsck).
    pub optimize_extents: bool,
    /// `-D`: every directory is rebuilt, so none is offered pass 1E.
    pub rehash_dirs: bool,
    /// `-E journal_only` without `-f`: after the replay the file system is
    /// skipped whatever its state says, as e2fsck skips it (only a fix
    /// made before the skip, or pending orphans, still run the check).
    pub journal_only: bool,
    /// `-E bmap2extent` (a repair only): every block map pass 1E may
    /// convert is reported for it, as e2fsck schedules each for its pass
    /// 1E, with the extent feature set first where it is missing.
    pub convert_bmap: bool,
    /// Told of each pass as it begins (the CLI prints as the check goes).
    pub events: Option<Events>,
    /// `--max-memory`: the scratch file the per-inode and per-block maps
    /// live in, trimmed from memory past the cap (`engine::spill`).
    pub spill: Option<std::sync::Arc<crate::engine::Spill>>,
}

/// What a running check tells its caller; the caller may print, checks
/// never do.
pub enum Event<'a> {
    /// Pass `pass` (1–5) begins. `report` holds what the check found so
    /// far: the problems of every earlier pass (and pass 1B before pass
    /// 2) are final, in the order of the finished report.
    PassStart { pass: u8, report: &'a Report },
}

/// The receiver of a check's events, called on the thread that runs the
/// check, between passes.
#[derive(Clone)]
pub struct Events(pub std::sync::Arc<dyn Fn(Event<'_>) + Send + Sync>);

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Events")
    }
}

impl Options {
    fn emit(&self, pass: u8, report: &Report) {
        if let Some(e) = &self.events {
            (e.0)(Event::PassStart { pass, report });
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            threads: Threads(1),
            auto_threads: false,
            force: true,
            superblock: None,
            blocksize: None,
            repairing: false,
            replay_anyway: false,
            recheck: false,
            mmp_claimed: false,
            journal_device: None,
            control: Control::default(),
            clock: Clock::System,
            time_trust: TimeTrust::default(),
            overlap: true,
            optimize_extents: true,
            rehash_dirs: false,
            journal_only: false,
            convert_bmap: false,
            events: None,
            spill: None,
        }
    }
}

/// Figures for the summary line.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub inodes_used: u64,
    pub inodes_count: u64,
    pub blocks_used: u64,
    pub blocks_count: u64,
    pub noncontiguous_pct: f64,
    /// Files and directories in more than one piece.
    pub fragmented: u64,
    /// Inodes and blocks in use as the superblock's free counts say (what
    /// e2fsck's closing line shows; after a repair, the counted values).
    pub sb_inodes_used: Option<u64>,
    pub sb_blocks_used: Option<u64>,
    pub regular: u64,
    pub directories: u64,
    pub symlinks: u64,
    pub fast_symlinks: u64,
    pub chardev: u64,
    pub blockdev: u64,
    pub fifos: u64,
    pub sockets: u64,
    pub extent_files: u64,
    pub large_files: u64,
    /// Directories among `fragmented`.
    pub fragmented_dirs: u64,
    /// Block-mapped inodes with an indirect, double, triple indirect block.
    pub ind_inodes: [u64; 3],
    /// Extent-mapped inodes by tree depth (0 to 3, then 4 and deeper).
    pub extent_depths: [u64; 5],
    pub bad_blocks: u64,
    /// Extra names of files (hard links beyond the first), as e2fsck
    /// counts them: directory entries past an inode's first, less those a
    /// directory tree has anyway ('..' and the names of directories).
    pub links: u64,
    /// Directory entries less those of the directory tree itself: the
    /// files and their extra names.
    pub files: u64,
}

/// Time and bytes read by one pass.
#[derive(Clone, Debug)]
pub struct PassTiming {
    pub pass: String,
    /// Wall time the pass ran. Passes 1 and 2 overlap: theirs are each
    /// pass's own span, and the row `pass1-2` is the wall time of both
    /// (with pass 1B) together.
    pub seconds: f64,
    /// Passes 1 and 2: seconds their units ran, summed over the workers.
    pub work_seconds: Option<f64>,
    pub bytes_read: u64,
    /// Resident memory at the end of the pass, and the peak so far (KiB).
    pub rss_kib: u64,
    pub peak_rss_kib: u64,
    /// On the `pass1-2` row: what the pipeline's scheduler did.
    pub scheduler: Option<crate::engine::pipeline::Stats>,
}

#[derive(Debug, Default)]
pub struct Report {
    pub problems: ProblemList,
    pub summary: Summary,
    /// Not checked because it is marked clean (no `-f`): what the
    /// "clean" line adds (how soon a check is due), often nothing.
    pub skipped_clean: Option<String>,
    /// Checked without `-f` although marked clean: why (e2fsck's "check
    /// forced" line).
    pub forced: Option<String>,
    /// Lines to print before the passes (e.g. which superblock was used).
    pub notes: Vec<String>,
    pub timings: Vec<PassTiming>,
    pub volume_label: String,
    /// The superblock's UUID (8-4-4-4-12); empty when none was read.
    pub uuid: String,
    /// The features set, by their mke2fs names.
    pub features: Vec<String>,
    /// Directory paths for the messages that name a directory by its
    /// path; None before pass 2 has run.
    pub tree: Option<std::sync::Arc<paths::DirTree>>,
    /// Passes 1B to 1C's account of the multiply-claimed blocks, when
    /// there are some.
    pub dups: Option<std::sync::Arc<pass1b::Dups>>,
    /// What releasing the deleted orphans freed, when the check looked
    /// at the file system through that release and it freed something.
    pub orphan_freed: Option<std::sync::Arc<orphan::Freed>>,
    /// The resize inode's i_blocks and its double indirect block (as
    /// the units e2fsck then finds marked in use by no file), when
    /// e2fsck's pass 1 would find no block in it (see the private fn `resize_unwalked`).
    pub resize_unwalked: Option<(u64, std::sync::Arc<orphan::Freed>)>,
    /// Bytes in memory by structure once passes 1 and 2 are done (`-t`).
    pub census: Vec<(&'static str, u64)>,
    /// What `--max-memory` did; None without it.
    pub spill: Option<crate::engine::SpillStats>,
}

impl Report {
    /// The same report with another list of problems (a repair shows the
    /// problems of several rounds; interactive mode plans the chosen ones).
    pub fn with_problems(&self, problems: ProblemList) -> Report {
        Report {
            problems,
            summary: self.summary.clone(),
            skipped_clean: self.skipped_clean.clone(),
            forced: self.forced.clone(),
            notes: self.notes.clone(),
            timings: self.timings.clone(),
            volume_label: self.volume_label.clone(),
            uuid: self.uuid.clone(),
            features: self.features.clone(),
            tree: self.tree.clone(),
            dups: self.dups.clone(),
            orphan_freed: self.orphan_freed.clone(),
            resize_unwalked: self.resize_unwalked.clone(),
            census: self.census.clone(),
            spill: self.spill,
        }
    }

    pub fn has_errors(&self) -> bool {
        self.problems
            .codes()
            .any(|c| c.spec().severity == Severity::Error)
    }
    pub fn has_fatal(&self) -> bool {
        self.problems
            .codes()
            .any(|c| c.spec().severity == Severity::Fatal)
    }
    /// The highest numbered pass that ran (for printing their headers).
    pub fn passes_run(&self) -> u8 {
        // pass0, pass1b and the pass1-2 total have no header of their own.
        self.timings
            .iter()
            .filter(|t| {
                matches!(
                    t.pass.as_str(),
                    "pass1" | "pass2" | "pass3" | "pass4" | "pass5"
                )
            })
            .count()
            .min(5)
            .try_into()
            .unwrap_or(5)
    }
}

/// After a cancellation (`opts.control`) the engine stops handing out
/// units, and the check stops after the current pass.
fn check_interrupt(ctl: &Control) -> Result<()> {
    if ctl.cancelled() {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}

/// A finished check with what a repair needs to turn its problems into
/// fixes: the file system view and what the passes learnt. `fs` is None
/// when no usable superblock was found, `state` when pass 1 did not run.
pub struct Checked {
    pub report: Report,
    pub fs: Option<Fs>,
    pub state: Option<State>,
}

/// Checks the file system at `path` read-only.
pub fn run(path: &Path, opts: &Options) -> Result<Report> {
    run_device(Device::open_read_only(path)?, opts)
}

/// Checks the file system on `dev` read-only.
pub fn run_device(dev: Device, opts: &Options) -> Result<Report> {
    Ok(check_device(dev, opts)?.report)
}

/// Checks the file system on `dev` read-only and keeps the view and state.
pub fn check_device(dev: Device, opts: &Options) -> Result<Checked> {
    let mut report = Report::default();
    let mut timer = Timer::new();
    let fs = match pass0(dev, opts, &mut report, &mut timer)? {
        Pass0::Go(fs) => fs,
        Pass0::Stop(fs) => {
            return Ok(Checked {
                report,
                fs,
                state: None,
            });
        }
    };
    check_interrupt(&opts.control)?;
    passes(fs, opts, report, timer)
}

/// e2fsck 1.47.4's pass 1, once it has met a reserved inode below the
/// resize inode (3 to 6) whose checksum alone is wrong, finds no block
/// in the resize inode: it says its i_blocks should be 0 and leaves its
/// double indirect block unmarked (whichever way the checksum question
/// is answered; its repair then damages the resize inode, which pfsck
/// does not copy). The resize inode's i_blocks and that block, for the
/// e2fsck codes of a report (`e2fsck_map::LatchLog`), where `problems`
/// hold such a checksum.
fn resize_unwalked(
    fs: &Fs,
    problems: &ProblemList,
) -> Option<(u64, std::sync::Arc<orphan::Freed>)> {
    let trigger = problems.iter().any(|p| {
        p.code == problem::Code::InodeChecksum
            && p.args().ino.is_some_and(|i| (3..=6).contains(&i.get()))
    });
    if !trigger
        || !fs
            .sb
            .has_compat(crate::fs::superblock::compat::RESIZE_INODE)
    {
        return None;
    }
    let inode = crate::fs::inode::Inode::parse(&fs.read_inode_raw(Ino::RESIZE).ok()?);
    let dind = u64::from(inode.block_ptrs()[crate::fs::inode::DIND_SLOT]);
    let bits = fs.geo.cluster_bits;
    let unmarked = orphan::Freed {
        blocks: (dind != 0)
            .then(|| Blk(fs.geo.cluster_of(dind) << bits))
            .into_iter()
            .collect(),
        inodes: Vec::new(),
        dirs: Vec::new(),
        cluster_bits: bits,
    };
    Some((inode.blocks_raw, std::sync::Arc::new(unmarked)))
}

/// Whether the passes follow pass 0.
enum Pass0 {
    Go(Fs),
    /// The check ends here (no usable superblock, a fatal problem, a clean
    /// file system skipped).
    Stop(Option<Fs>),
}

/// What the report says of the file system it opened.
fn describe(fs: &Fs, opts: &Options, report: &mut Report) {
    report.volume_label = fs.sb.volume_label();
    report.uuid = fs.sb.uuid_text();
    report.features = fs.sb.feature_names();
    // e2fsck's progress lines name the file system by its label.
    opts.control
        .progress()
        .set_name(Some(report.volume_label.clone()).filter(|l| !l.is_empty()));
    report.summary.inodes_count = u64::from(fs.geo.inodes_count);
    report.summary.blocks_count = fs.geo.blocks_count;
}

/// Opens the file system (the journal replayed and the orphans processed
/// in read overlays) and makes the pass 0 checks.
fn pass0(dev: Device, opts: &Options, report: &mut Report, timer: &mut Timer) -> Result<Pass0> {
    let opened = match superblock::open(dev, opts)? {
        // -n never writes: a journal that needs recovery is replayed into a
        // read overlay and the file system is checked as it will be after.
        superblock::Opened::Fs(fs, probs) => recovery::after_replay(fs, probs, opts)?,
        fatal => fatal,
    };
    // Then the orphans, on the replayed bytes, the same way.
    let opened = match opened {
        superblock::Opened::Fs(fs, probs) => {
            let (opened, freed) = orphan::after_orphans(fs, probs, opts)?;
            report.orphan_freed = (!freed.is_empty()).then(|| std::sync::Arc::new(freed));
            opened
        }
        fatal => fatal,
    };
    let mut fs = match opened {
        superblock::Opened::Fs(fs, probs) => {
            report.problems.extend(probs);
            *fs
        }
        superblock::Opened::Fatal(probs) => {
            report.problems.extend(probs);
            return Ok(Pass0::Stop(None));
        }
    };
    describe(&fs, opts, report);

    // e2fsck sets the hint before it looks at the journal, clean or not.
    let hint = journal::journal_dev_hint(&fs);
    let hint_fix = hint.is_some() && opts.repairing;
    report.problems.extend(hint);
    // An external journal that cannot be found or used stops the check
    // before anything else, as it stops e2fsck.
    let external = journal::external_problems(&fs, opts.journal_device.as_deref());
    if !external.is_empty() {
        report.problems.extend(external);
        return Ok(Pass0::Stop(Some(fs)));
    }
    // Asked as e2fsck loads the journal. A fixed one forces the full
    // check, as any fix does in e2fsck. The journal device is written
    // after the file system's commit, so a re-check cannot see it fixed.
    let jdev_csum =
        journal::external_checksum(&fs, opts.journal_device.as_deref()).filter(|_| !opts.recheck);
    let jdev_fix = jdev_csum.is_some() && opts.repairing;
    report.problems.extend(jdev_csum);
    // e2fsck looks at the journal before it decides to skip a clean file
    // system: an unusable one is cleared (or stops -n) even then.
    if !opts.force && !opts.journal_only {
        report.forced = superblock::forced_reason(&fs, opts);
    }
    let past_device = superblock::past_device(&fs, opts.repairing);
    let too_small = past_device.is_some();
    if let Some(p) = past_device {
        let fatal = p.spec().severity == problem::Severity::Fatal;
        report.problems.push(p);
        if fatal {
            return Ok(Pass0::Stop(Some(fs)));
        }
        if !opts.force && report.forced.is_none() {
            report.forced = Some("contains a file system with errors".into());
        }
    }
    // Asked before the skip too (`superblock::check` reports them).
    let extra_isize = !superblock::extra_isize(&fs).is_empty();
    if extra_isize && !opts.force && !opts.repairing && report.forced.is_none() {
        report.forced = Some("contains a file system with errors".into());
    }
    // The descriptors too: e2fsck's superblock check judges each group's
    // before it decides to skip, and a bad one (a checksum, uninit marks
    // without group checksums, counts out of range) fails the file
    // system's validity, so the full check runs (after a fix, silently).
    let bad_desc = superblock::check(&fs)
        .iter()
        .any(|p| superblock::descriptor_fails_validity(p.code));
    if bad_desc && !opts.force && !opts.repairing && report.forced.is_none() {
        report.forced = Some("contains a file system with errors".into());
    }
    // Times ahead of the clock, which e2fsck judges before it decides to
    // skip: a repair sets them right, so it does not skip then (e2fsck
    // skips after setting one within the fudge; pfsck checks in full).
    let times = superblock::future_times(&fs, opts);
    if !opts.force
        && !opts.recheck
        && !jdev_fix
        && !hint_fix
        && !extra_isize
        && !bad_desc
        && !too_small
        && (times.is_empty() || !opts.repairing)
        && (!opts.repairing || !superblock::hurd_filetype(&fs.sb))
        // e2fsck moves a visible journal before it decides to skip.
        && (!opts.repairing || journal::visible(&fs).is_none())
        // So does it a visible quota file.
        && (!opts.repairing || quota::visible(&fs).is_empty())
        && let Some(reason) = superblock::clean_skip_reason(&fs, opts)
        && !journal::stops_clean_skip(&fs, opts.repairing)
    {
        report.summary.inodes_used =
            u64::from(fs.geo.inodes_count) - u64::from(fs.sb.free_inodes_count);
        report.summary.blocks_used = fs.geo.blocks_count.saturating_sub(fs.sb.free_blocks_count);
        report.skipped_clean = Some(reason);
        // e2fsck processes the orphans and then finds the file system
        // clean; pending orphans alone do not fail a skipped check.
        report
            .problems
            .retain(|p| p.code != problem::Code::OrphansPending);
        return Ok(Pass0::Stop(Some(fs)));
    }

    if opts.repairing {
        let fixes = superblock::repair_only(&fs);
        // e2fsck clears the Hurd's filetype feature in memory at once, so
        // its later passes judge entries as having no file types.
        if fixes
            .iter()
            .any(|p| p.code == problem::Code::SbHurdFiletype)
        {
            fs.sb.feature_incompat &= !crate::fs::superblock::incompat::FILETYPE;
        }
        report.problems.extend(fixes);
        // e2fsck sets the feature in memory before its passes: they judge
        // the file system as having it.
        let extents = crate::fs::superblock::incompat::EXTENTS;
        if opts.convert_bmap && !fs.sb.has_incompat(extents) {
            fs.sb.feature_incompat |= extents;
            report
                .problems
                .push(problem::Problem::new(problem::Code::SbExtentsForConversion));
        }
    }
    report
        .problems
        .extend(superblock::check(&fs).into_iter().map(|p| {
            // e2fsck -n reads the orphan file's inode after its passes to
            // set the file up, and gives up there (`e2fsck_map::stops_after`).
            if p.code == problem::Code::OrphanFileInodeInvalid && !opts.repairing {
                p.num(1)
            } else {
                p
            }
        }));
    report.problems.extend(times);
    report
        .problems
        .extend(mmp::check(&fs, opts.repairing, opts.mmp_claimed));
    if report.has_fatal() {
        return Ok(Pass0::Stop(Some(fs)));
    }
    let journal = journal::check(&fs, opts.repairing);
    // e2fsck moves a visible journal only once it has found it usable.
    let usable = !journal.iter().any(|p| {
        matches!(
            p.code,
            problem::Code::JournalInodeInvalid
                | problem::Code::JournalSuperblockCorrupt
                | problem::Code::JournalInodeFromBackup
        )
    });
    report.problems.extend(journal);
    if opts.repairing && usable {
        report.problems.extend(journal::visible(&fs));
    }
    // Last of e2fsck's superblock checks, in a repair only.
    if opts.repairing {
        report.problems.extend(quota::visible(&fs));
    }
    // Before pass 1, as e2fsck: its problem is printed before the pass 1
    // header, which a streamed report prints as pass 1 begins. One it
    // cannot read it says nothing of (`stops::resize_inode_unreadable`).
    if !report.has_fatal() {
        let read_inode = opts.repairing || !stops::resize_inode_unreadable(&fs);
        report
            .problems
            .extend(pass1::check_resize(&fs, opts.repairing, read_inode));
    }
    timer.lap(report, "pass0", &fs);
    if report.has_fatal() {
        return Ok(Pass0::Stop(Some(fs)));
    }
    Ok(Pass0::Go(fs))
}

/// Where a read-only check's pass 2 stops before a directory block: on a
/// directory e2fsck keeps no record of, or on the read that fails after
/// a bitmap was placed anew, whichever comes first in e2fsck's order (at
/// most one is returned). Neither when repairing; not the read after a
/// relocation with `shared` blocks (pass 1B reads first).
fn pass2_stops(
    fs: &Fs,
    state: &State,
    repairing: bool,
    shared: bool,
) -> (Option<stops::NoDirInfo>, Option<stops::RelocatedBitmap>) {
    if repairing {
        return (None, None);
    }
    let no_dir_info = stops::dir_without_info(fs, state);
    let relocated = (!shared)
        .then(|| stops::relocated_bitmap(fs, state))
        .flatten();
    let zero_first = fs.sb.has_compat(crate::fs::superblock::compat::DIR_INDEX);
    let key = |b: &state::DirBlock| (zero_first && b.lblk != crate::fs::num::LBlk(0), *b);
    match (no_dir_info, relocated) {
        (Some(n), Some(r)) if key(&r.at) < key(&n.at) => (None, Some(r)),
        (n, None) => (n, None),
        (n @ Some(_), Some(_)) => (n, None),
        (None, r) => (None, r),
    }
}

/// The bytes each structure of the check holds, pass 2's results last.
fn census(state: &State, outs2: &[pass2::UnitOut2], spilled: bool) -> Vec<(&'static str, u64)> {
    let mut out = state.census();
    out.push(("pass-2 results", pass2::out_bytes(outs2)));
    if spilled {
        out.push((
            "pass-2 results in the scratch file",
            pass2::out_scratch_bytes(outs2),
        ));
    }
    out
}

/// Passes 1 to 5 (and the quota check) after pass 0.
fn passes(fs: Fs, opts: &Options, mut report: Report, mut timer: Timer) -> Result<Checked> {
    let ctl = &opts.control;
    let spill = opts.spill.as_ref();
    let mut state = State::with_clusters_in(
        fs.geo.blocks_count,
        fs.geo.inodes_count,
        fs.geo.cluster_bits,
        spill,
    );
    // Fixed, or sized again before each pass from the CPUs left idle.
    let mut budget = Budget::new((!opts.auto_threads).then_some(opts.threads.0));
    // Passes 1 and 2 overlap (`pipeline.rs`): pass 2 checks directory
    // blocks while pass 1 scans, and finishes once pass 1 is whole.
    // e2fsck's progress steps: groups in passes 1 and 4, each group's
    // two bitmaps in pass 5 (passes 2 and 3 as soon as they are known).
    let groups = u64::from(fs.geo.groups);
    let progress = ctl.progress();
    progress.pass_complete(0);
    progress.set_steps(1, groups);
    progress.set_steps(2, 0);
    progress.set_steps(3, 0);
    progress.set_steps(4, groups);
    progress.set_steps(5, 2 * groups);
    progress.begin_overlap(1, 2);
    opts.emit(1, &report);
    let piped = pipeline::run(&fs, &mut state, &mut budget, opts)?;
    crate::engine::memory::release_free();
    if let Some(s) = spill {
        s.check();
    }
    report.census = census(&state, &piped.outs2, spill.is_some());
    // Pass 2's steps are directory blocks: all known once pass 1 is.
    progress.set_steps(2, piped.counts2.blocks);
    progress.pass_complete(1);
    let r = &mut report;
    let mut found1 = piped.pass1;
    let stop1 = !opts.repairing
        && (stops::at_inode_table_outside(&fs, &mut found1)
            || stops::at_bad_blocks_inode(&fs, &mut found1)
            || stops::at_bad_blocks_indirect(&mut found1)
            || stop_at_illegal_indirect(&mut found1)
            || stops::at_unreadable_xattr(&mut found1)
            || stops::at_resize_inode(&fs, &mut found1));
    if opts.repairing {
        pass1::features_asked_once(&mut found1);
    }
    let bad_csum = if opts.repairing {
        Default::default()
    } else {
        stops::bad_checksum_inodes(&found1)
    };
    r.problems.append(found1);
    let (s1, w1, b1) = piped.pass1_time;
    timer.push(r, "pass1", s1, Some(w1), b1);
    if r.has_fatal() || stop1 {
        // As if pass 2 had not run: what it counted is dropped.
        state.links_seen = crate::volume::InodeCounts::new(fs.geo.inodes_count);
        return checked(report, fs, state);
    }
    check_interrupt(ctl)?;
    let t = budget.threads();
    timer.restart(&fs);
    // Shown under pass 2, which the pipeline has reached: pass numbers
    // in progress output only grow.
    step(r, &mut timer, &fs, ctl, "pass1b", 2, || {
        pass1b::run(&fs, &mut state, !opts.repairing, t, ctl).map(ProblemList::from)
    })?;
    r.dups = state.dups.clone();
    if !opts.repairing && stops::at_pass1b_checksum(&mut r.problems, &mut r.dups) {
        state.links_seen = crate::volume::InodeCounts::new(fs.geo.inodes_count);
        return checked(report, fs, state);
    }
    let t = budget.threads();
    // Pass 1D's lines name files by their paths: with shared blocks the
    // report up to pass 2 waits for pass 2's directory tree.
    let late = r.dups.is_some();
    if !late {
        opts.emit(2, r);
    }
    let start2 = Instant::now();
    let bytes2 = fs.dev.bytes_read();
    let (no_dir_info, relocated) = pass2_stops(&fs, &state, opts.repairing, late);
    let run2 = if opts.repairing {
        pass2::Finish::Repair
    } else {
        pass2::Finish::ReadOnly {
            stop_before: no_dir_info
                .as_ref()
                .map(|s| s.at)
                .or(relocated.as_ref().map(|s| s.at)),
        }
    };
    let mut found2 = pass2::finish(&fs, &mut state, piped.outs2, piped.counts2, run2, t, ctl);
    if let Some(s) = no_dir_info {
        found2.append(s.problems);
    }
    r.tree = state.tree.clone();
    // The directory lists and the tree of paths are in the scratch file
    // now (`State::settle_lists`): past the cap, out of memory with the
    // maps.
    if let Some(s) = spill {
        s.check();
    }
    if late {
        opts.emit(2, r);
    }
    if !opts.repairing {
        stops::after_unused_entries(&fs, &mut found2);
    }
    let stop = !opts.repairing
        && (stops::at_bad_inode_checksum(&mut r.problems, &mut found2, &bad_csum)
            || stop_at_corrupt_dir(&mut found2)
            || stops::at_no_dir_info(&mut r.problems, &found2)
            || relocated
                .is_some_and(|s| stops::at_relocated_bitmap(&mut r.problems, &mut found2, s)));
    r.problems.append(found2);
    crate::engine::memory::release_free();
    let end2 = start2.elapsed().as_secs_f64();
    let (s2, w2, b2) = piped.pass2_time;
    let b2 = b2 + fs.dev.bytes_read() - bytes2;
    timer.push(r, "pass2", s2 + end2, Some(w2 + end2), b2);
    timer.push_total(r, "pass1-2", &fs);
    if let Some(row) = r.timings.last_mut() {
        row.scheduler = Some(piped.stats);
    }
    check_interrupt(ctl)?;
    if stop {
        return checked(report, fs, state);
    }
    progress.set_steps(3, state.dirs.len() as u64);
    progress.pass_complete(2);
    timer.restart(&fs);
    opts.emit(3, r);
    // Pass 3A, run before pass 3: the directories pass 2 scheduled to
    // rebuild. Pass 3 leaves State alone, so only the report's order
    // matters: 3A's problems follow pass 3's, where e2fsck (rebuilding at
    // the end of its pass 3) reports them.
    let rebuilt = rebuild::check(&fs, &state, &r.problems, opts.repairing);
    let mut room = lost_found_room::Room::new(&fs, &state, opts.repairing);
    let p3 = Pass3::new(rebuilt, opts.repairing, room.as_mut());
    if pass3_stops(r, &mut timer, &fs, ctl, &mut state, p3)? {
        return checked(report, fs, state);
    }
    progress.pass_complete(3);
    let t = budget.threads();
    opts.emit(4, r);
    let mut stop4 = false;
    step(r, &mut timer, &fs, ctl, "pass4", 4, || {
        let mut found = pass4::run(&fs, &state, t, ctl, opts.repairing)?;
        found = lost_found_room::annotate(room.as_mut(), found);
        let skip = [fs.sb.prj_quota_inum, fs.sb.orphan_file_inum];
        stop4 = !opts.repairing
            && stops::at_pass4_checksum(&mut found, &state, &bad_csum, fs.geo.first_ino, &skip);
        Ok(found)
    })?;
    if stop4 {
        return checked(report, fs, state);
    }
    progress.pass_complete(4);
    let t = budget.threads();
    opts.emit(5, r);
    if pass5_stops(r, &mut timer, &fs, opts, &state, t)? {
        return checked(report, fs, state);
    }
    progress.pass_complete(5);
    r.spill = spill.map(|s| s.stats());

    fill_summary(&mut report.summary, &fs, &state);
    // Problems are produced in a deterministic order within each pass; a
    // stable sort by pass keeps that order and puts passes in sequence
    // (mostly they already are, and then nothing is copied).
    report.problems.sort_by_pass();
    checked(report, fs, state)
}

/// Pass 5, then the quota check. Whether a read-only check stopped
/// between them: e2fsck -n sets the orphan file up after pass 5, and
/// gives up there on an inode it cannot read
/// (`stops::at_orphan_file_inode`).
fn pass5_stops(
    r: &mut Report,
    timer: &mut Timer,
    fs: &Fs,
    opts: &Options,
    state: &State,
    t: Threads,
) -> Result<bool> {
    let ctl = &opts.control;
    step(r, timer, fs, ctl, "pass5", 5, || {
        pass5::run(fs, state, t, ctl, opts.repairing)
    })?;
    if !opts.repairing
        && let Some(stop) = stops::at_orphan_file_inode(fs)
    {
        r.problems.push(stop);
        return Ok(true);
    }
    step(r, timer, fs, ctl, "quota", 5, || {
        Ok(quota::run(fs, state).into())
    })?;
    Ok(false)
}

/// The outcome of a check that went through pass 1, to its end or to
/// where it stopped.
fn checked(mut report: Report, fs: Fs, state: State) -> Result<Checked> {
    report.resize_unwalked = resize_unwalked(&fs, &report.problems);
    Ok(Checked {
        report,
        fs: Some(fs),
        state: Some(state),
    })
}

/// Runs one pass: progress and timing around it, cancellation after it.
/// A read-only check stops at the first directory block it may not
/// salvage, or cannot read (declining to go on), as e2fsck -n does (the
/// block's directory, and so what passes 3 to 5 would find, is unknown):
/// `problems` (pass 2's, in e2fsck's order) end there, with a notice
/// saying so. Whether it stopped.
fn stop_at_corrupt_dir(problems: &mut ProblemList) -> bool {
    use problem::Code;
    let Some((at, p)) = problems
        .iter()
        .enumerate()
        .find(|(_, p)| matches!(p.code, Code::DirBlockCorrupt | Code::DirBlockUnreadable))
    else {
        return false;
    };
    problems.truncate(at + 1);
    problems.push(if p.code == Code::DirBlockCorrupt {
        problem::Problem::new(Code::StoppedAtCorruptDir)
    } else {
        let mut stop = problem::Problem::new(Code::StoppedAtUnreadableDir);
        if let Some(b) = p.args().blk {
            stop = stop.blk(b);
        }
        stop
    });
    true
}

/// A read-only check stops after pass 1 at the first inode whose block
/// walk e2fsck ends in error, as e2fsck -n does: an indirect pointer
/// outside the file system, which it may not zero, and no indirect block
/// read after it (pass 1 notes it with the stop notice, after the walk's
/// problems: `blockmap::walk_indirect_limited`), or an extent node that
/// cannot be read (noted after pass 1E's offer for the tree). `problems` (pass 1's, in
/// e2fsck's order) end there. Whether it stopped.
fn stop_at_illegal_indirect(problems: &mut ProblemList) -> bool {
    use problem::Code::{StoppedAtIllegalIndirect, StoppedAtUnreadableExtent};
    let Some(at) = problems
        .codes()
        .position(|c| matches!(c, StoppedAtIllegalIndirect | StoppedAtUnreadableExtent))
    else {
        return false;
    };
    problems.truncate(at + 1);
    true
}

/// What pass 3 is given besides the file system.
struct Pass3<'a, R> {
    /// Pass 3A's problems.
    rebuilt: R,
    repairing: bool,
    /// Where a repair connects directories (`lost_found_room`).
    room: Option<&'a mut lost_found_room::Room>,
}

impl<'a, R> Pass3<'a, R> {
    fn new(rebuilt: R, repairing: bool, room: Option<&'a mut lost_found_room::Room>) -> Self {
        Pass3 {
            rebuilt,
            repairing,
            room,
        }
    }
}

/// Pass 3, then pass 3A's problems; whether a read-only check stopped
/// there (no root, which -n may not make).
fn pass3_stops<R: IntoIterator<Item = problem::Problem>>(
    r: &mut Report,
    timer: &mut Timer,
    fs: &Fs,
    ctl: &Control,
    state: &mut State,
    p3: Pass3<'_, R>,
) -> Result<bool> {
    step(r, timer, fs, ctl, "pass3", 3, || {
        let mut found = ProblemList::from(pass3::run(fs, state, p3.repairing)?);
        found = lost_found_room::annotate(p3.room, found);
        for p in p3.rebuilt {
            found.push(p);
        }
        Ok(found)
    })?;
    Ok(r.problems
        .codes()
        .any(|c| c == problem::Code::StoppedWithoutRoot))
}

fn step(
    report: &mut Report,
    timer: &mut Timer,
    fs: &Fs,
    ctl: &Control,
    name: &str,
    number: u8,
    pass: impl FnOnce() -> Result<ProblemList>,
) -> Result<()> {
    ctl.progress().begin_pass(number);
    let found = pass()?;
    report.problems.append(found);
    crate::engine::memory::release_free();
    timer.lap(report, name, fs);
    check_interrupt(ctl)
}

fn fill_summary(s: &mut Summary, fs: &Fs, state: &State) {
    let st: &Stats = &state.stats;
    s.inodes_used = st.inodes_used;
    s.blocks_used = (state
        .block_used
        .count_range(Cluster(0), Cluster(fs.geo.clusters_count()))
        << fs.geo.cluster_bits)
        .min(fs.geo.blocks_count);
    s.noncontiguous_pct = if st.inodes_used > 0 {
        st.fragmented as f64 * 100.0 / st.inodes_used as f64
    } else {
        0.0
    };
    s.fragmented = st.fragmented;
    s.sb_inodes_used =
        Some(u64::from(fs.geo.inodes_count).saturating_sub(u64::from(fs.sb.free_inodes_count)));
    s.sb_blocks_used = Some(fs.geo.blocks_count.saturating_sub(fs.sb.free_blocks_count));
    s.regular = st.regular;
    s.directories = st.directories;
    s.symlinks = st.symlinks;
    s.fast_symlinks = st.fast_symlinks;
    s.chardev = st.chardev;
    s.blockdev = st.blockdev;
    s.fifos = st.fifos;
    s.sockets = st.sockets;
    s.extent_files = st.extent_files;
    s.large_files = st.large_files;
    s.fragmented_dirs = st.fragmented_dirs;
    s.ind_inodes = st.ind_inodes;
    s.extent_depths = st.extent_depths;
    s.bad_blocks = st.bad_blocks;
    // Entries every directory tree has: each directory's own name (but
    // the root's) and its '..', the root's '..' naming the root.
    let tree_links = (2 * st.directories).saturating_sub(1);
    let (mut entries, mut extra) = (0u64, 0u64);
    for ino in 1..=fs.geo.inodes_count {
        let n = u64::from(state.links_seen.get(Ino(ino)));
        entries += n;
        extra += n.saturating_sub(1);
    }
    // e2fsck subtracts in 32 bits: a tree with fewer entries than
    // directories (entries lost) shows the wrapped difference.
    let wrapped = |n: u64| u64::from(narrow::lo32(n).wrapping_sub(narrow::lo32(tree_links)));
    s.links = wrapped(extra);
    s.files = wrapped(entries);
}

struct Timer {
    start: Instant,
    bytes: u64,
    /// Start of the overlapping passes (`push_total`).
    section: Option<(Instant, u64)>,
}

impl Timer {
    fn new() -> Timer {
        Timer {
            start: Instant::now(),
            bytes: 0,
            section: None,
        }
    }

    /// A row measured elsewhere (overlapping passes); the first one
    /// starts the section `push_total` closes.
    fn push(
        &mut self,
        report: &mut Report,
        pass: &str,
        seconds: f64,
        work: Option<f64>,
        bytes: u64,
    ) {
        self.section.get_or_insert((self.start, self.bytes));
        let mem = crate::engine::budget::memory_kib();
        report.timings.push(PassTiming {
            pass: pass.to_string(),
            seconds,
            work_seconds: work,
            bytes_read: bytes,
            rss_kib: mem.map_or(0, |m| m.0),
            peak_rss_kib: mem.map_or(0, |m| m.1),
            scheduler: None,
        });
    }

    /// The wall time and bytes since the first `push`.
    fn push_total(&mut self, report: &mut Report, pass: &str, fs: &Fs) {
        let Some((start, bytes)) = self.section.take() else {
            return;
        };
        let seconds = start.elapsed().as_secs_f64();
        let read = fs.dev.bytes_read().saturating_sub(bytes);
        self.push(report, pass, seconds, None, read);
        self.section = None;
    }

    /// Laps count from now.
    fn restart(&mut self, fs: &Fs) {
        self.start = Instant::now();
        self.bytes = fs.dev.bytes_read();
    }

    fn lap(&mut self, report: &mut Report, pass: &str, fs: &Fs) {
        let now = Instant::now();
        let bytes = fs.dev.bytes_read();
        let mem = crate::engine::budget::memory_kib();
        report.timings.push(PassTiming {
            pass: pass.to_string(),
            seconds: now.duration_since(self.start).as_secs_f64(),
            work_seconds: None,
            bytes_read: bytes.saturating_sub(self.bytes),
            rss_kib: mem.map_or(0, |m| m.0),
            peak_rss_kib: mem.map_or(0, |m| m.1),
            scheduler: None,
        });
        self.start = now;
        self.bytes = bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library user runs one check after another in one process: a
    /// cancelled run leaves nothing behind that stops or skews the next.
    #[test]
    fn checks_after_a_cancelled_one_run_whole() {
        let path = std::env::temp_dir().join(format!("pfsck-two-runs-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let made = std::process::Command::new("mkfs.ext4")
            .args(["-q", "-F", "-b", "1024", "-E", "nodiscard"])
            .arg(&path)
            .arg("4096")
            .stdout(std::process::Stdio::null())
            .status()
            .expect("mkfs.ext4 runs");
        assert!(made.success());
        let stopped = Options::default();
        stopped.control.cancel();
        assert!(matches!(run(&path, &stopped), Err(Error::Interrupted)));
        for _ in 0..2 {
            let opts = Options {
                threads: Threads(2),
                ..Options::default()
            };
            let report = run(&path, &opts).expect("the check runs");
            assert!(!report.has_errors() && !report.has_fatal());
            assert_eq!(report.passes_run(), 5);
            let (pass, done, total) = opts.control.progress().snapshot();
            assert_eq!((pass, done), (5, total));
        }
        let _ = std::fs::remove_file(&path);
    }
}
