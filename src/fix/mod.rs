//! Fixes: turning a check's problems into staged block writes.
//!
//! Sits between `repair` (the session running the rounds) above and `check`,
//! `volume`, `store` below: it reads the problems, the file
//! system view and the state of a finished check, decides which problems
//! the mode lets it fix and which it knows how to fix, and stages the new
//! contents of the blocks concerned in a [`crate::store::overlay::Overlay`].
//! Nothing here writes; `store::commit` does, afterwards.
//!
//! A repair runs in rounds (`repair::session`): each round's plan comes from
//! a check of what the earlier rounds staged. Fixes that change what the
//! passes could read run alone in their round, in this order, and the next
//! round's check judges the result: the replay and orphans, the primary
//! superblock from a backup, a reset of an impossible itable_unused, the
//! bad-blocks inode, bitmaps and inode tables that move; then, once pass 0 and 1
//! have nothing left to fix, pass 1D's copies, then the directory
//! structure (salvage, rebuilds, holes). Everything else is staged together.
//!
//! Order is deterministic: per-inode fixes are staged in problem order, each
//! reading the inode through the overlay so that two fixes of one inode
//! (size and block count, say) both land; the summary (bitmaps, group
//! descriptor counts, flags and checksums, superblock counts and checksum)
//! is recomputed last from what passes 1–4 found, so it covers whatever
//! the earlier fixes staged.
//!
//! Every fix reads and writes through the write library (`crate::volume`:
//! the allocator, inode, superblock and descriptor edits, extent trees,
//! the pass 5 summary).
//!
//! Which problems are fixed, by which fixer, in which phase of a round
//! and under which policy (bigalloc, alone in the round, ...) is one table,
//! `table.rs`; `plan.rs` stages a round's fixes phase by phase from it.
//!
//! Files: `clear.rs` (pass 1 fixes of whole inodes: clearing, bad flags
//! and fields, features an inode shows in use; staged first),
//! `blockmap.rs` (block maps and extent trees, bad blocks, relocated
//! bitmaps and inode tables), `journal_inode.rs` (a bad journal replaced),
//! `orphan_file.rs` (an unusable orphan file made anew),
//! `inode.rs` (pass 1 and pass 4 fixes of single inode fields),
//! `lostfound.rs` (reconnecting into /lost+found, clearing empty inodes),
//! `dir.rs` (single directory entries and '..'), `dirblock.rs` (salvaging
//! whole directory blocks, checksum tails), `dirhole.rs` (directory holes),
//! `rehash.rs` (rebuilding directories and their htree index),
//! `dup.rs` (multiply-claimed blocks: copies, or deletion),
//! `extents.rs` (pass 1E: block maps on bigalloc rebuilt as extent trees),
//! `superblock.rs` (the primary superblock and descriptors restored from
//! the backup the check used), `resize.rs` (an invalid resize inode
//! recreated, staged right after the whole-inode fixes),
//! `quota.rs` (quota inode numbers in the superblock, quota files
//! rewritten from the counted usage in a round with no other fix but the
//! summary),
//! `badblocks.rs` (a new bad blocks list from `-l`/`-L`/`-c`, staged
//! before the first check),
//! `journal.rs` (the journal replay and orphan processing the check read
//! through, staged first so the fixes land on top of them), `finish.rs`
//! (the end-of-check record in the superblock, staged after the last
//! round's check).

pub mod badblocks;
mod blockmap;
mod clear;
mod dir;
mod dirblock;
mod dirhole;
mod dup;
mod extents;
pub mod finish;
mod inode;
pub mod journal;
mod journal_inode;
mod lostfound;
mod mmp;
mod orphan_file;
mod plan;
mod quota;
mod rehash;
mod resize;
mod superblock;
mod table;

pub use plan::{plan, plan_keeping};
pub use table::{rebuilds_directory, repaired, supported};

use crate::check::Report;
use crate::check::e2fsck_map;
use crate::check::problem::{Code, Problem, Severity};
use crate::check::state::State;
use crate::store::StoreError;
use crate::store::overlay::{Overlay, Staging};
use crate::volume::Fs;
use crate::volume::edit::edit_superblock;

/// Which problems the user allowed to be fixed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `-y`: every problem.
    Yes,
    /// `-p`/`-a`: only problems whose table entry says `preen_ok`.
    Preen,
}

/// What a repair run decided.
pub struct Plan {
    pub overlay: Overlay,
    /// Parallel to the report's problems: staged a fix for it.
    pub fixed: Vec<bool>,
    /// The overlay starts with a journal replay (see `journal.rs`).
    pub replayed: bool,
    /// Some fix changed a block beyond what the replay writes, or the
    /// replay reports a failed recovery (e2fsck exits 0 after a replay
    /// alone, 1 once it fixed something; see `journal.rs`).
    pub fixes_staged: bool,
}

/// Why the repair cannot even start; the problems stay as they are.
#[derive(Debug)]
pub enum Refusal {
    /// `-p` met a problem preen may not fix: e2fsck's "UNEXPECTED
    /// INCONSISTENCY". Nothing is staged; [`plan_preen_halt`] stages what
    /// e2fsck writes when it stops there.
    Unexpected,
    /// The file system is in a state the fixes do not handle yet (the
    /// message says which); nothing is staged.
    Unsupported(String),
    /// Staging failed (a block could not be read, the staging limit).
    Failed(FixError),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Unexpected => write!(f, "STOPPED: a problem preen may not fix needs a person"),
            Refusal::Unsupported(why) => write!(f, "{why}"),
            Refusal::Failed(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Refusal {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Refusal::Failed(e) => Some(e),
            _ => None,
        }
    }
}

impl From<crate::error::Error> for Refusal {
    fn from(e: crate::error::Error) -> Refusal {
        Refusal::Failed(e.into())
    }
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Refusal {
        Refusal::Failed(e.into())
    }
}

impl From<FixError> for Refusal {
    fn from(e: FixError) -> Refusal {
        Refusal::Failed(e)
    }
}

/// Why a fix could not be staged; nothing of it is.
#[derive(Debug)]
pub enum FixError {
    /// Reading the file system, or editing it through the write library,
    /// failed.
    Volume(crate::error::Error),
    /// The staged writes refused a block (beyond the device, the staging
    /// limit, the spill file).
    Staging(StoreError),
    /// What the fixer found on disk is not what it can act on (the
    /// message says what).
    Invalid(String),
}

impl std::fmt::Display for FixError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FixError::Volume(e) => write!(f, "{e}"),
            FixError::Staging(e) => write!(f, "{e}"),
            FixError::Invalid(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for FixError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FixError::Volume(e) => Some(e),
            FixError::Staging(e) => Some(e),
            FixError::Invalid(_) => None,
        }
    }
}

impl From<crate::error::Error> for FixError {
    fn from(e: crate::error::Error) -> FixError {
        FixError::Volume(e)
    }
}

impl From<StoreError> for FixError {
    fn from(e: StoreError) -> FixError {
        FixError::Staging(e)
    }
}

impl From<String> for FixError {
    fn from(s: String) -> FixError {
        FixError::Invalid(s)
    }
}

impl From<&str> for FixError {
    fn from(s: &str) -> FixError {
        FixError::Invalid(s.to_string())
    }
}

/// What a fixer returns.
pub type Result<T> = std::result::Result<T, FixError>;

/// Does the repair leave `code` alone on `fs` by policy, though it has a
/// fix for it: a fix that still works in blocks, on bigalloc?
pub fn left_on(fs: &Fs, code: Code) -> bool {
    fs.geo.cluster_bits > 0 && supported(code) && !table::cluster_safe(code)
}

/// Is the problem one the mode lets us fix (regardless of whether we can)?
/// Can a cleared root be made again? Pass 3's new root is not built on
/// bigalloc yet: there the root stays, damaged, rather than go missing.
fn root_remade(fs: &Fs) -> bool {
    fs.geo.cluster_bits == 0 || table::cluster_safe(Code::RootMissing)
}

fn allowed(p: &Problem, mode: Mode) -> bool {
    match mode {
        Mode::Yes => true,
        Mode::Preen => e2fsck_map::preen_ok(p),
    }
}

/// The problem `-p` stops at (e2fsck's preenhalt): the first error preen
/// may not fix. What pass 1 says about an unusable journal's inode goes
/// with the journal, which preen replaces (e2fsck -p: "Recreate journal")
/// or restores from the superblock's backup.
pub fn preen_halt_at(report: &Report) -> Option<usize> {
    preen_halt_in(report)
}

/// Does `-p` stop before the passes, where e2fsck asks to abort a check
/// (PROMPT_ABORT without PREEN_OK: a journal of an unknown version or
/// features)? The check itself ended there.
pub fn preen_halts_before_passes(report: &Report) -> bool {
    preen_halt_in(report)
        .and_then(|k| report.problems.get(k))
        .is_some_and(|p| e2fsck_map::aborted(&p))
}

fn preen_halt_in(report: &Report) -> Option<usize> {
    let bad_journal = report.problems.iter().any(|p| {
        matches!(
            p.code,
            Code::JournalInodeInvalid
                | Code::JournalSuperblockCorrupt
                | Code::JournalInodeFromBackup
        )
    });
    report.problems.iter().position(|p| {
        (p.spec().severity == Severity::Error || e2fsck_map::halts_preen(&p))
            && !e2fsck_map::preen_ok(&p)
            && !(bad_journal && journal_inode::resolves(&p))
    })
}

/// What `-p` writes when it stops at the problem [`preen_halt_at`] finds,
/// as e2fsck's preenhalt leaves the file system: the preen fixes of the
/// problems found before that one, which e2fsck has made by then (it
/// writes each fix as it goes: `e2fsck -fp` on an image with a wrong
/// i_blocks in pass 1 and an unattached inode in pass 4 writes the
/// i_blocks), in this one round, without the pass 5 summary (e2fsck
/// writes bitmaps and counts only when it gets there); then the
/// superblock marked with errors (s_state |= EXT2_ERROR_FS, checksum
/// redone), so the next boot's check does not skip the file system as
/// clean. The journal replay and orphans the check read through are in
/// it. `fixed` maps onto all of `report`'s problems. Without `state` the
/// check stopped before pass 1 (at a journal e2fsck asks to abort on), and
/// only the superblock's error state is staged there.
pub fn plan_preen_halt(
    fs: &Fs,
    state: Option<&State>,
    report: &Report,
    staging: &Staging,
) -> Result<Plan> {
    let at = preen_halt_at(report).unwrap_or(report.problems.len());
    let mut kept = Vec::new();
    let mut before = crate::check::problem::ProblemList::new();
    for (k, p) in report.problems.iter().enumerate().take(at) {
        if !table::is(p.code, table::Fixer::Summary) {
            kept.push(k);
            before.push(p);
        }
    }
    let before = report.with_problems(before);
    let mut fixed = vec![false; report.problems.len()];
    let planned = match state {
        Some(state) => plan(fs, state, &before, Mode::Preen, staging),
        None => Err(Refusal::Unexpected),
    };
    let (mut overlay, replayed) = match planned {
        Ok(p) => {
            for (j, &k) in kept.iter().enumerate() {
                fixed[k] = p.fixed.get(j).copied().unwrap_or(false);
            }
            (p.overlay, p.replayed)
        }
        // Nothing of it can be staged (a refusal): what e2fsck writes
        // before the passes, and the error state.
        Err(_) => {
            let o = journal::staged_before_passes(fs, staging)?;
            let replayed = !journal::staged(fs, staging)?.is_empty();
            (o, replayed)
        }
    };
    mark_errors(fs, &mut overlay)?;
    Ok(Plan {
        overlay,
        fixed,
        replayed,
        fixes_staged: true,
    })
}

/// Marks the superblock "not clean with errors" (EXT2_ERROR_FS), as
/// e2fsck's preenhalt does.
fn mark_errors(fs: &Fs, overlay: &mut Overlay) -> Result<()> {
    Ok(edit_superblock(fs, overlay, |sb| {
        sb.set_state(sb.state() | crate::fs::superblock::STATE_ERROR);
    })?)
}

/// The problems of `rep` answered yes, with those not asked about (no fix
/// exists, but the planner reads some of them: a failed journal recovery,
/// other damage of an inode whose checksum it would otherwise recompute),
/// and for each kept problem its index in `rep`.
/// The summary's counts and bitmaps that `rep`'s problems answered no
/// (`yes` parallel to them) leave as the device has them, with the maps
/// of `state` as the check found them where a bitmap is kept.
pub fn kept_summary(
    fs: &Fs,
    state: &State,
    rep: &Report,
    yes: &[bool],
) -> crate::volume::summary::Kept {
    use crate::volume::summary::Kept;
    let mut kept = Kept::default();
    for (k, p) in rep.problems.iter().enumerate() {
        if yes.get(k).copied().unwrap_or(false) {
            continue;
        }
        let a = p.args();
        let pair = (a.num.unwrap_or(0), a.num2.unwrap_or(0));
        let group = a.group.map(|g| g.0);
        match (p.code, group) {
            (Code::GroupFreeBlocks, Some(g)) => drop(kept.free_blocks.insert(g, pair)),
            (Code::GroupFreeInodes, Some(g)) => drop(kept.free_inodes.insert(g, pair)),
            (Code::GroupDirsCount, Some(g)) => drop(kept.dirs.insert(g, pair)),
            (Code::SuperFreeBlocks, _) => kept.sb_free_blocks = Some(pair),
            (Code::SuperFreeInodes, _) => kept.sb_free_inodes = Some(pair),
            (Code::BlockBitmapDiff, _) => {
                let map = &state.block_used;
                let words = Kept::words(map.len(), |c| map.word_at(crate::fs::num::Cluster(c)));
                kept.clusters = Some(words);
            }
            (Code::InodeBitmapDiff, _) => {
                let map = &state.inode_used;
                let bits = u64::from(fs.geo.inodes_count) + 1;
                kept.inodes = Some(Kept::words(bits, |i| map.word_at(i)));
            }
            _ => {}
        }
    }
    kept
}

pub fn answered(rep: &Report, yes: &[bool]) -> (Report, Vec<usize>) {
    let mut idx = Vec::new();
    let mut kept = crate::check::problem::ProblemList::new();
    for (k, p) in rep.problems.iter().enumerate() {
        if yes.get(k).copied().unwrap_or(false) || !supported(p.code) {
            idx.push(k);
            kept.push(p);
        }
    }
    (rep.with_problems(kept), idx)
}
