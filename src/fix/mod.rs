//! Fixes: turning a check's problems into staged block writes.
//!
//! Sits between `cli` and `check`/`repair`: it reads the problems, the file
//! system view and the state of a finished check, decides which problems
//! the mode lets it fix and which it knows how to fix, and stages the new
//! contents of the blocks concerned in a [`crate::repair::overlay::Overlay`].
//! Nothing here writes; `repair::commit` does, afterwards.
//!
//! A repair runs in rounds (`cli/repair.rs`): each round's plan comes from
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
//! Files: `clear.rs` (pass 1 fixes of whole inodes: clearing, bad flags
//! and fields, features an inode shows in use; staged first),
//! `blockmap.rs` (block maps and extent trees, bad blocks, relocated
//! bitmaps and inode tables), `journal_inode.rs` (a bad journal replaced),
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
//! `journal.rs` (the journal replay and orphan processing the check read
//! through, staged first so the fixes land on top of them), `finish.rs`
//! (the end-of-check record in the superblock, staged after the last
//! round's check).

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
mod quota;
mod rehash;
mod resize;
mod superblock;

use crate::check::Report;
use crate::check::e2fsck_map;
use crate::check::problem::{Code, Pass, Problem, Severity};
use crate::check::state::State;
use crate::fs::inode::ROOT_INO;
use crate::fs::superblock::ro_compat;
use crate::repair::overlay::{Overlay, Staging};
use crate::volume::Fs;
use crate::volume::edit::edit_superblock;
use std::sync::Arc;

/// Which problems the user allowed to be fixed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `-y`: every problem.
    Yes,
    /// `-p`/`-a`: only problems whose table entry says `preen_ok`.
    Preen,
}

/// Problems fixed by recomputing the summary (pass 5 and the descriptor
/// and superblock fields and checksums derived from it).
const SUMMARY: &[Code] = &[
    Code::BlockBitmapDiff,
    Code::InodeBitmapDiff,
    Code::GroupFreeBlocks,
    Code::GroupFreeInodes,
    Code::GroupDirsCount,
    Code::SuperFreeBlocks,
    Code::SuperFreeInodes,
    Code::BlockBitmapChecksum,
    Code::InodeBitmapChecksum,
    Code::BlockBitmapPadding,
    Code::InodeBitmapPadding,
    Code::GdChecksum,
    Code::GdFreeBlocksInvalid,
    Code::GdFreeInodesInvalid,
    Code::SbChecksum,
    Code::SbFreeBlocksInvalid,
    Code::SbFreeInodesInvalid,
    Code::GdItableUnused,
    Code::GroupUninitFlags,
    Code::GdUninitWithoutCsum,
    Code::GdBlockUninitLastGroup,
];

/// Orphan processing, done by staging the view the check read through.
const ORPHAN: &[Code] = &[
    Code::OrphansPending,
    Code::OrphansPendingHarmless,
    Code::OrphanFileBlockDirty,
    Code::OrphanPresentClean,
];

/// Problems fixed by setting a superblock feature.
const FEATURE: &[Code] = &[Code::FeatureLargeFiles];

/// Problems fixed by rewriting one field of one inode.
const INODE: &[Code] = &[
    Code::InodeChecksum,
    Code::InodeLinkCount,
    Code::InodeDtimeSet,
    Code::InodeZeroDtimeDeleted,
    Code::InodeOrphanInUse,
    Code::InodeISize,
    Code::InodeIBlocks,
    Code::InodeEncryptNoXattr,
    Code::InodeCasefold,
    Code::InodeCasefoldNonDir,
    Code::InodeEaInodeNonReg,
    Code::InodeEaInodeSpurious,
];

/// Problems fixed by changing the directory tree (`lostfound.rs`); staged
/// before the others, since they change link counts and bitmaps.
const TREE: &[Code] = &[
    Code::InodeUnattached,
    Code::InodeUnattachedZero,
    Code::DirUnconnected,
];

/// Can pfsck fix problems of this class yet?
pub fn supported(code: Code) -> bool {
    SUMMARY.contains(&code)
        || INODE.contains(&code)
        || FEATURE.contains(&code)
        || TREE.contains(&code)
        || DIR.contains(&code)
        || blockmap::CODES.contains(&code)
        || clear::CODES.contains(&code)
        || dirblock::CODES.contains(&code)
        || rehash::CODES.contains(&code)
        || HOLES.contains(&code)
        || code == Code::LostFoundMissing
        || code == Code::JournalInodeInvalid
        || code == Code::JournalSuperblockCorrupt
        || code == Code::JournalInodeFromBackup
        || WITH_REPLAY.contains(&code)
        || code == Code::DupBlocks
        || code == Code::ClusterMisaligned
        || code == Code::InodeBigallocBlockMap
        || code == Code::SbUsedBackup
        || code == Code::SbQuotaInode
        || code == Code::SbInodeFieldNoFeature
        || quota::REWRITE.contains(&code)
        || code == Code::SbResizeInodeNoFeature
        || code == Code::SbInodesCount
        || code == Code::SbFirstMetaBg
        || code == Code::LostFoundEncrypted
}

/// The fixes that are right on bigalloc too: they allocate nothing, or
/// charge a whole cluster for what they allocate (quota files), or keep
/// the cluster rules (pass 1D's copies, pass 1E's extent trees). The others (block
/// maps, cleared inodes, directory rebuilds and holes) still think in
/// blocks and are left for a later run.
fn cluster_safe(code: Code) -> bool {
    SUMMARY.contains(&code)
        || INODE.contains(&code)
        || FEATURE.contains(&code)
        || TREE.contains(&code)
        || DIR.contains(&code)
        || LATE_P1.contains(&code)
        || quota::REWRITE.contains(&code)
        || code == Code::LostFoundMissing
        || code == Code::LostFoundEncrypted
        || code == Code::JournalInodeFromBackup
        || code == Code::SbQuotaInode
        || code == Code::SbInodeFieldNoFeature
}

/// Pass 1 problems fixed after pass 1D, as e2fsck fixes them: a block
/// breaking the cluster rules is claimed twice and copied by pass 1D
/// ("will fix in pass 1B"), a block map on bigalloc is rebuilt as an
/// extent tree by pass 1E once the sharing is resolved.
const LATE_P1: &[Code] = &[
    Code::DupBlocks,
    Code::ClusterMisaligned,
    Code::InodeBigallocBlockMap,
];

/// Checksums of a block that wait, while the block is multiply-claimed,
/// for pass 1D to give each owner a copy.
const SHARED_WAIT: &[Code] = &[
    Code::InodeExtentNodeChecksum,
    Code::DirBlockChecksum,
    Code::HtreeNodeChecksum,
];

/// Problems fixed by editing one directory entry (`dir.rs`); staged with
/// the tree fixes, since they change link counts too.
const DIR: &[Code] = &[
    Code::DirEntryDeletedInode,
    Code::DirEntryBadInode,
    Code::DirEntryReservedInode,
    Code::DirEntryInodeInBadBlock,
    Code::DirEntryLinkToRoot,
    Code::DirEntryLinkToDir,
    Code::DirEntryFileType,
    Code::DirEntryFileTypeUnset,
    Code::DirEntryIllegalChars,
    Code::DirEntryBadUtf8,
    Code::DirEntryEncryptedShort,
    Code::DirEntryUnencrypted,
    Code::DirEntryPolicyMismatch,
    Code::DirEntryEaInode,
    Code::DirDotDotWrong,
    Code::DirBlockChecksum,
];

/// Problems fixed with the journal replay, before the passes' fixes
/// (`stray_v2_fields_cleared`, `mmp_rewritten`).
const WITH_REPLAY: &[Code] = &[
    Code::JournalStrayV2Fields,
    Code::MmpBadMagic,
    Code::MmpChecksum,
];

/// Problems fixed by closing the holes of a directory (`dirhole.rs`).
const HOLES: &[Code] = &[Code::InodeDirHole, Code::DirHole];

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
    Failed(String),
}

/// Is the problem one the mode lets us fix (regardless of whether we can)?
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
    let bad_journal = report.problems.iter().any(|p| {
        matches!(
            p.code,
            Code::JournalInodeInvalid
                | Code::JournalSuperblockCorrupt
                | Code::JournalInodeFromBackup
        )
    });
    report.problems.iter().position(|p| {
        p.spec().severity == Severity::Error
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
/// it. `fixed` maps onto all of `report`'s problems.
pub fn plan_preen_halt(
    fs: &Fs,
    state: &State,
    report: &Report,
    staging: &Staging,
) -> Result<Plan, String> {
    let at = preen_halt_at(report).unwrap_or(report.problems.len());
    let mut kept = Vec::new();
    let mut before = crate::check::problem::ProblemList::new();
    for (k, p) in report.problems.iter().enumerate().take(at) {
        if !SUMMARY.contains(&p.code) {
            kept.push(k);
            before.push(p);
        }
    }
    let before = report.with_problems(before);
    let mut fixed = vec![false; report.problems.len()];
    let (mut overlay, replayed) = match plan(fs, state, &before, Mode::Preen, staging) {
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
fn mark_errors(fs: &Fs, overlay: &mut Overlay) -> Result<(), String> {
    Ok(edit_superblock(fs, overlay, |sb| {
        sb.set_state(sb.state() | crate::fs::superblock::STATE_ERROR);
    })?)
}

/// Stages fixes for the problems of `report` that `mode` allows and that
/// pfsck supports.
pub fn plan(
    fs: &Fs,
    state: &State,
    report: &Report,
    mode: Mode,
    staging: &Staging,
) -> Result<Plan, Refusal> {
    if mode == Mode::Preen && preen_halt_at(report).is_some() {
        return Err(Refusal::Unexpected);
    }

    let mut fixed = vec![false; report.problems.len()];
    if let Some(why) = journal::unrecovered(fs) {
        return Err(Refusal::Unsupported(why));
    }
    // The replay goes first: the check judged the replayed file system,
    // so the fixes must be staged over those bytes. In a later round the
    // check read through the earlier rounds' staging, which this round's
    // lies over (and which counts as the replay here).
    let replay = journal::staged(fs, staging).map_err(Refusal::Unsupported)?;
    let replay = stray_v2_fields_cleared(fs, report, replay, &mut fixed)?;
    let replay = mmp_rewritten(fs, report, replay, &mut fixed)?;
    let replayed = !replay.is_empty();
    let mut overlay = Overlay::over(replay);
    // Orphan processing is part of that view (`check::orphan`): staging
    // the view does it.
    // The orphan file cleanup in it is a correction (e2fsck exits 1).
    let mut orphan_fix = false;
    for (k, ref p) in report.problems.iter().enumerate() {
        if ORPHAN.contains(&p.code) && replayed && allowed(p, mode) {
            fixed[k] = true;
            orphan_fix |= matches!(
                p.code,
                Code::OrphanFileBlockDirty | Code::OrphanPresentClean
            );
        }
    }
    let replay_fix = replayed && journal::replay_is_correction(report);
    let bigalloc = fs.geo.cluster_bits > 0;
    let wanted =
        |p: &Problem| allowed(p, mode) && supported(p.code) && (!bigalloc || cluster_safe(p.code));
    if replay_fix {
        journal::mark_valid(fs, &mut overlay).map_err(Refusal::Failed)?;
    }
    if !report.problems.iter().any(|p| wanted(&p)) {
        return Ok(Plan {
            overlay,
            fixed,
            replayed,
            fixes_staged: replay_fix || orphan_fix,
        });
    }
    // The fixes below edit the primary superblock and descriptors; when
    // the check read a backup, the first round only puts it back as the
    // primary (`superblock.rs`) and the next round's check goes on from
    // there.
    if superblock::used_backup(fs) {
        if mode == Mode::Preen {
            // e2fsck -p does not go looking for backups of bad descriptors;
            // a manual run decides.
            return Err(Refusal::Unsupported(
                "the primary superblock or descriptors are unusable; run with -y to restore them from the backup".into(),
            ));
        }
        superblock::restore_primary(fs, &mut overlay).map_err(Refusal::Failed)?;
        for (k, ref p) in report.problems.iter().enumerate() {
            fixed[k] = p.code == Code::SbUsedBackup;
        }
        return Ok(Plan {
            overlay,
            fixed,
            replayed,
            fixes_staged: true,
        });
    }

    // A journal inode the check read from the superblock's backup is
    // written from it, alone in its round, as e2fsck writes it before pass
    // 1: what the passes found on the old inode (its mode, the journal's
    // blocks nobody claimed) is judged again on the restored one, and not
    // shown when that finds it gone.
    if let Some(k) = report
        .problems
        .iter()
        .position(|ref p| wanted(p) && p.code == Code::JournalInodeFromBackup)
        && journal_inode::restore_from_backup(fs, &mut overlay).map_err(Refusal::Failed)?
    {
        fixed[k] = true;
        return Ok(Plan {
            overlay,
            fixed,
            replayed,
            fixes_staged: true,
        });
    }

    // An impossible itable_unused made pass 1 skip inodes: fixed alone,
    // and the next round checks every inode.
    let unused: Vec<(usize, u32)> = report
        .problems
        .iter()
        .enumerate()
        .filter(|(_, p)| wanted(p) && p.code == Code::GdItableUnused)
        .filter_map(|(k, p)| p.args().group.map(|g| (k, g)))
        .filter(|&(_, g)| {
            fs.gds.get(g as usize).is_some_and(|d| {
                d.itable_unused > fs.geo.inodes_per_group || d.itable_unused > d.free_inodes_count
            })
        })
        .collect();
    if !unused.is_empty() {
        let groups: Vec<u32> = unused.iter().map(|&(_, g)| g).collect();
        crate::volume::summary::reset_itable_unused(fs, &mut overlay, &groups)
            .map_err(|e| Refusal::Failed(e.to_string()))?;
        for &(k, _) in &unused {
            fixed[k] = true;
        }
        return Ok(Plan {
            overlay,
            fixed,
            replayed,
            fixes_staged: true,
        });
    }

    // A bad-block list naming the block of its own inode is not believed:
    // the inode is cleared and, as e2fsck restarts there, nothing else is
    // fixed this round (the check read that block's inodes as unreadable).
    if let Some(k) = report
        .problems
        .iter()
        .position(|ref p| wanted(p) && p.code == Code::BadBlocksInodeInBadBlock)
    {
        fixed[k] = blockmap::clear_bad_blocks_inode(fs, &mut overlay).map_err(Refusal::Failed)?;
        let fixes_staged = fixed[k] || replay_fix;
        return Ok(Plan {
            overlay,
            fixed,
            replayed,
            fixes_staged,
        });
    }
    // Bitmaps on bad blocks, outside their group or on other metadata
    // move first, alone in their round (the summary rewrite works from the
    // descriptors this check loaded).
    let mut moves = Vec::new();
    let mut movers = Vec::new();
    for (k, ref p) in report.problems.iter().enumerate() {
        if !wanted(p) {
            continue;
        }
        let m = blockmap::bitmaps_to_move(fs, p);
        if !m.is_empty() {
            movers.push((k, moves.len(), m.len()));
            moves.extend(m);
        }
    }
    if !moves.is_empty() {
        let moved =
            blockmap::relocate_bitmaps(fs, state, &mut overlay, &moves).map_err(Refusal::Failed)?;
        if moved.iter().any(|&m| m) {
            for &(k, at, n) in &movers {
                fixed[k] = moved[at..at + n].iter().all(|&m| m);
            }
            return Ok(Plan {
                overlay,
                fixed,
                replayed,
                fixes_staged: true,
            });
        }
    }
    // Pass 1D, then the directory structure (salvaged blocks, rebuilt
    // directories), each alone in its round and only once pass 0 and 1
    // have nothing left to fix (as e2fsck resolves sharing and checks
    // directories on inodes pass 1 already repaired): pass 1D's copies
    // change the blocks other fixes would edit (a directory's block, an
    // inode's map), and once a directory block's records change, what
    // pass 2 counted and pass 3 found no longer holds. Everything else
    // waits for the next round's check.
    // A checksum of a block that two inodes claim fits one owner only:
    // fixed for one, it fails for the other, round after round. Pass 1D
    // first gives each owner its own copy (with its checksum); the next
    // round's check judges what is left on each copy.
    let sharing = report
        .problems
        .iter()
        .any(|p| wanted(&p) && p.code == Code::DupBlocks);
    let on_shared = |p: &Problem| {
        sharing
            && SHARED_WAIT.contains(&p.code)
            && p.args()
                .blk
                .is_some_and(|b| state.block_dup.get(state.cluster(b)))
    };
    let wanted = |p: &Problem| wanted(p) && !on_shared(p);
    let early = |p: &Problem| wanted(p) && !LATE_P1.contains(&p.code) && p.spec().pass <= Pass::P1;
    if !report.problems.iter().any(|p| early(&p))
        && late_round(fs, state, report, &wanted, &mut overlay, &mut fixed)?
    {
        return Ok(Plan {
            overlay,
            fixed,
            replayed,
            fixes_staged: true,
        });
    }

    // A bad inode checksum is only recomputed when pass 1 found nothing
    // else wrong with the inode: over other damage it would bless contents
    // a later, fuller repair must still judge. (A fix of that damage
    // rewrites the checksum itself; the next round judges what is left.)
    let damaged: std::collections::BTreeSet<u32> = report
        .problems
        .iter()
        .filter(|p| {
            p.code != Code::InodeChecksum && p.spec().pass == crate::check::problem::Pass::P1
        })
        .filter_map(|p| p.args().ino)
        .collect();
    let mut summary = false;
    let mut large_file = false;
    // Whole-inode fixes first, as e2fsck's pass 1 makes them before it
    // looks at directories: what they clear is no longer reconnected,
    // counted or rewritten below.
    let mut round = clear::Round::default();
    // An invalid resize inode is rebuilt whole below: what pass 1 says
    // about the old one is not fixed field by field.
    let resize = report
        .problems
        .iter()
        .position(|ref p| wanted(p) && resize::recreates(fs, p));
    let resize_ino =
        |p: &Problem| resize.is_some() && p.args().ino == Some(crate::fs::inode::RESIZE_INO);
    for (k, ref p) in report.problems.iter().enumerate() {
        if wanted(p) && clear::CODES.contains(&p.code) && !resize_ino(p) {
            fixed[k] =
                clear::fix(fs, state, &mut overlay, p, &mut round).map_err(Refusal::Failed)?;
        }
    }
    clear::finish(fs, &mut overlay, &round).map_err(Refusal::Failed)?;
    // e2fsck recreates it at the end of its pass 1, before anything later
    // allocates a block.
    if let Some(k) = resize {
        fixed[k] =
            resize::recreate(fs, state, &mut overlay, &mut large_file).map_err(Refusal::Failed)?;
        summary |= fixed[k];
    }
    // Pass 1E, once pass 1D has nothing left: a block map on bigalloc
    // becomes an extent tree. Not over other map fixes of the same inode
    // (they go first, the next round converts what they leave).
    if !report
        .problems
        .iter()
        .any(|p| wanted(&p) && p.code == Code::DupBlocks)
    {
        for (k, ref p) in report.problems.iter().enumerate() {
            let Some(ino) = p.args().ino else { continue };
            if !wanted(p)
                || p.code != Code::InodeBigallocBlockMap
                || round.cleared.contains(&ino)
                || round.modified.contains(&ino)
                || report.problems.iter().any(|q| {
                    q.args().ino == Some(ino) && wanted(&q) && blockmap::CODES.contains(&q.code)
                })
            {
                continue;
            }
            if extents::rebuild(fs, state, &mut overlay, ino).map_err(Refusal::Failed)? {
                fixed[k] = true;
                round.modified.insert(ino);
            }
        }
    }
    // Cleared inodes need nothing more; changed ones are judged again by
    // the next round. Once pass 1 cleared or changed an inode, what passes
    // 2-5 found was found on the old inode: those fixes wait for the next
    // round's check, as e2fsck's later passes run on the fixed inodes.
    let mut gone: std::collections::BTreeSet<u32> =
        round.cleared.union(&round.modified).copied().collect();
    if resize.is_some() {
        gone.insert(crate::fs::inode::RESIZE_INO);
    }
    let later = |p: &Problem| changed_inodes(&round) && p.spec().pass > Pass::P1B;
    let wanted = |p: &Problem| wanted(p) && !later(p);
    // Tree and entry fixes first, in problem order: what they change in
    // link counts (`links`) and in the in-use maps is then part of the link
    // count fixes and the summary.
    let mut links = lostfound::Links::new();
    let mut reconnected = std::collections::BTreeSet::new();
    // A missing /lost+found is created before anything needs it.
    let mut lf = lostfound::LostFound::new(state);
    for (k, ref p) in report.problems.iter().enumerate() {
        if wanted(p) && matches!(p.code, Code::LostFoundMissing | Code::LostFoundEncrypted) {
            // An encrypted one is unlinked (it becomes an unconnected
            // directory the next round reconnects) and replaced, as e2fsck.
            if p.code == Code::LostFoundEncrypted
                && !dir::unlink(
                    fs,
                    state,
                    &mut overlay,
                    ROOT_INO,
                    state.lost_found,
                    "lost+found",
                    &mut links,
                )
                .map_err(Refusal::Failed)?
            {
                break;
            }
            if let Some(made) =
                lostfound::create(fs, state, &mut overlay, &mut links).map_err(Refusal::Failed)?
            {
                lf = made;
                fixed[k] = true;
                summary = true;
            }
            break;
        }
    }
    for (k, ref p) in report.problems.iter().enumerate() {
        if !wanted(p) || p.args().ino.is_some_and(|i| gone.contains(&i)) {
            continue;
        }
        if TREE.contains(&p.code) {
            fixed[k] = lostfound::fix(fs, state, &mut overlay, &mut lf, p, &mut links)
                .map_err(Refusal::Failed)?;
            if fixed[k] {
                summary = true;
                if p.code == Code::InodeUnattachedZero {
                    gone.extend(p.args().ino);
                } else {
                    reconnected.extend(p.args().ino);
                }
            }
        } else if p.code == Code::DirDotDotWrong
            && p.args().ino.is_some_and(|i| reconnected.contains(&i))
        {
            // Reconnecting the directory (its problem comes first) pointed
            // its '..' at lost+found, where the re-check finds its parent.
            fixed[k] = true;
        } else if DIR.contains(&p.code) {
            fixed[k] = dir::fix(fs, state, &mut overlay, p, &mut links).map_err(Refusal::Failed)?;
        }
    }
    // An unusable journal is replaced (`journal_inode.rs`); what pass 1
    // said about the old journal inode goes with it.
    let new_journal = report.problems.iter().any(|p| {
        wanted(&p)
            && matches!(
                p.code,
                Code::JournalInodeInvalid | Code::JournalSuperblockCorrupt
            )
    });
    // Block maps next, one inode at a time with all its map problems, and
    // before the field fixes: those read the inode through the overlay and
    // keep the map rewritten here.
    // Per inode with map problems to fix: those (index and code), and all
    // its problems (a map whose kind is in doubt is left alone, see
    // `blockmap::fix`). Only those inodes are collected: on a check of
    // very many problems few are map problems.
    type MapFixes = (Vec<(usize, Code)>, Vec<Problem>);
    let mut maps: std::collections::BTreeMap<u32, MapFixes> = Default::default();
    for (k, ref p) in report.problems.iter().enumerate() {
        if let Some(ino) = p.args().ino
            && wanted(p)
            && blockmap::CODES.contains(&p.code)
            && !gone.contains(&ino)
            && !(new_journal && journal_inode::resolves(p))
        {
            maps.entry(ino).or_default().0.push((k, p.code));
        }
    }
    if !maps.is_empty() {
        for p in &report.problems {
            if let Some(e) = p.args().ino.and_then(|i| maps.get_mut(&i)) {
                e.1.push(p);
            }
        }
    }
    for (&ino, (ks, all)) in &maps {
        let codes: Vec<Code> = ks.iter().map(|&(_, c)| c).collect();
        let all: Vec<&Problem> = all.iter().collect();
        if blockmap::fix(fs, state, &mut overlay, ino, &codes, &all).map_err(Refusal::Failed)? {
            summary = true;
            for &(k, _) in ks {
                fixed[k] = true;
            }
        }
    }
    let mut link_fixed = std::collections::BTreeSet::new();
    let mut cleared_quota = std::collections::BTreeSet::new();
    for (k, ref p) in report.problems.iter().enumerate() {
        if p.code == Code::QuotaFileBad
            && allowed(p, mode)
            && p.args().ino.is_some_and(|i| cleared_quota.contains(&i))
        {
            // The superblock no longer names that file.
            fixed[k] = true;
            continue;
        }
        if new_journal && journal_inode::resolves(p) {
            continue;
        }
        if !wanted(p)
            || blockmap::CODES.contains(&p.code)
            || TREE.contains(&p.code)
            || DIR.contains(&p.code)
            || clear::CODES.contains(&p.code)
            || p.code == Code::LostFoundMissing
            || p.args().ino.is_some_and(|i| gone.contains(&i))
            || LATE_P1.contains(&p.code)
            || p.code == Code::LostFoundEncrypted
            || WITH_REPLAY.contains(&p.code)
            || (p.code == Code::InodeChecksum && p.args().ino.is_some_and(|i| damaged.contains(&i)))
        {
            continue;
        }
        if p.code == Code::InodeLinkCount {
            // The count pass 2 found, plus what the tree fixes changed.
            let ino = p.args().ino.unwrap_or(0);
            let d = links.get(&ino).copied().unwrap_or(0);
            let mut q = p.clone();
            if let Some(n) = p.args().num2 {
                q = q.num2(link_target(state, ino, n as i64 + d));
            }
            fixed[k] =
                inode::fix(fs, &mut overlay, &q, &mut large_file).map_err(Refusal::Failed)?;
            link_fixed.insert(ino);
        } else if SUMMARY.contains(&p.code) {
            summary = true;
            fixed[k] = true;
        } else if p.code == Code::SbInodesCount {
            fixed[k] = superblock::fix_inodes_count(fs, &mut overlay).map_err(Refusal::Failed)?;
        } else if p.code == Code::SbFirstMetaBg {
            fixed[k] = superblock::fix_first_meta_bg(fs, &mut overlay).map_err(Refusal::Failed)?;
        } else if p.code == Code::SbResizeInodeNoFeature {
            if resize.is_some() {
                continue;
            }
            fixed[k] =
                superblock::fix_resize_inode(fs, &mut overlay, p).map_err(Refusal::Failed)?;
        } else if quota::REWRITE.contains(&p.code) {
            // Below, once the other fixes of this round are known.
        } else if matches!(p.code, Code::SbQuotaInode | Code::SbInodeFieldNoFeature) {
            fixed[k] = quota::clear_inum(fs, &mut overlay, p).map_err(Refusal::Failed)?;
            if fixed[k] {
                cleared_quota.extend(p.args().ino);
            }
        } else if FEATURE.contains(&p.code) {
            large_file = true;
            fixed[k] = true;
        } else {
            fixed[k] = inode::fix(fs, &mut overlay, p, &mut large_file).map_err(Refusal::Failed)?;
        }
    }
    // Inodes whose count the check found right but the tree fixes changed
    // (lost+found gaining a subdirectory, a reconnected directory's old
    // '..' target, the reconnected inodes themselves).
    for (&ino, &d) in &links {
        if link_fixed.contains(&ino) || !state.inode_used.get(ino as u64) {
            continue;
        }
        let have = state.i_links(ino);
        let seen = i64::from(state.links_seen.get(ino as usize));
        let want = link_target(state, ino, seen + d);
        if want != u64::from(have) {
            let q = Problem::new(Code::InodeLinkCount)
                .ino(ino)
                .num(u64::from(have))
                .num2(want);
            inode::fix(fs, &mut overlay, &q, &mut large_file).map_err(Refusal::Failed)?;
        }
    }
    // Quota files are rewritten from the usage this round's check counted,
    // so only in a round that fixes nothing else (the next round's check
    // counts again after the others).
    let other_fix = new_journal
        || report.problems.iter().zip(&fixed).any(|(p, &f)| {
            f && !SUMMARY.contains(&p.code)
                && !quota::REWRITE.contains(&p.code)
                && !ORPHAN.contains(&p.code)
        });
    if !other_fix {
        let mut types = std::collections::BTreeSet::new();
        for ref p in &report.problems {
            if wanted(p)
                && quota::REWRITE.contains(&p.code)
                && !p.args().ino.is_some_and(|i| cleared_quota.contains(&i))
            {
                types.extend(quota::problem_type(fs, p));
            }
        }
        for qtype in types {
            if quota::rewrite(fs, state, &mut overlay, qtype).map_err(Refusal::Failed)? {
                summary = true;
                for (k, ref p) in report.problems.iter().enumerate() {
                    if wanted(p)
                        && quota::REWRITE.contains(&p.code)
                        && quota::problem_type(fs, p) == Some(qtype)
                    {
                        fixed[k] = true;
                    }
                }
            }
        }
    }
    let mut journal_made = false;
    if new_journal {
        journal_made = true;
        match journal_inode::recreate(fs, state, &mut overlay).map_err(Refusal::Failed)? {
            None => {
                summary = true;
                for (k, ref p) in report.problems.iter().enumerate() {
                    if journal_inode::resolves(p) {
                        fixed[k] = true;
                    }
                }
            }
            Some(why) => return Err(Refusal::Unsupported(why)),
        }
    }
    if large_file && !fs.sb.has_ro_compat(ro_compat::LARGE_FILE) {
        set_large_file(fs, &mut overlay).map_err(Refusal::Failed)?;
    }
    if summary {
        crate::volume::summary::rewrite(fs, &state.in_use(), &mut overlay)
            .map_err(|e| Refusal::Failed(e.to_string()))?;
    }
    if journal_made {
        crate::volume::edit::write_backups(fs, &mut overlay)
            .map_err(|e| Refusal::Failed(e.to_string()))?;
    }
    let fixes_staged = replay_fix
        || orphan_fix
        || overlay
            .differs_from_base()
            .map_err(|e| Refusal::Failed(e.to_string()))?;
    if !fixes_staged {
        // The earlier fixes staged nothing after all (a pass 1 problem no
        // fix could act on): pass 1D and the directory structure go on.
        let mut late = vec![false; report.problems.len()];
        if late_round(fs, state, report, &wanted, &mut overlay, &mut late)? {
            return Ok(Plan {
                overlay,
                fixed: late,
                replayed,
                fixes_staged: true,
            });
        }
    }
    Ok(Plan {
        overlay,
        fixed,
        replayed,
        fixes_staged,
    })
}

/// The replay, with the journal superblock's stray version 2 fields
/// cleared over it when the journal is kept (a replaced one gets a new
/// superblock). e2fsck clears them whenever it may write, -p included,
/// and does not count it as a correction (exit 0): staged with the
/// replay, it does not count here either.
fn stray_v2_fields_cleared(
    fs: &Fs,
    report: &Report,
    replay: Arc<Overlay>,
    fixed: &mut [bool],
) -> Result<Arc<Overlay>, Refusal> {
    let replaced = report.problems.iter().any(|p| {
        matches!(
            p.code,
            Code::JournalInodeInvalid | Code::JournalSuperblockCorrupt
        )
    });
    let Some(k) = report
        .problems
        .iter()
        .position(|p| p.code == Code::JournalStrayV2Fields)
    else {
        return Ok(replay);
    };
    if replaced {
        return Ok(replay);
    }
    let mut overlay = Overlay::over(replay);
    journal_inode::clear_v2_fields(fs, &mut overlay).map_err(Refusal::Failed)?;
    fixed[k] = true;
    Ok(Arc::new(overlay))
}

/// The replay, with an invalid MMP block rewritten over it: e2fsck does
/// it before it checks and does not count it as a correction.
fn mmp_rewritten(
    fs: &Fs,
    report: &Report,
    replay: Arc<Overlay>,
    fixed: &mut [bool],
) -> Result<Arc<Overlay>, Refusal> {
    let Some(k) = report
        .problems
        .iter()
        .position(|p| matches!(p.code, Code::MmpBadMagic | Code::MmpChecksum))
    else {
        return Ok(replay);
    };
    let mut overlay = Overlay::over(replay);
    mmp::rewrite(fs, &mut overlay).map_err(Refusal::Failed)?;
    fixed[k] = true;
    Ok(Arc::new(overlay))
}

/// Pass 1D, or when it has nothing to do, the directory structure;
/// whether either staged something (then `fixed` says what).
fn late_round(
    fs: &Fs,
    state: &State,
    report: &Report,
    wanted: &dyn Fn(&Problem) -> bool,
    overlay: &mut Overlay,
    fixed: &mut Vec<bool>,
) -> Result<bool, Refusal> {
    if report
        .problems
        .iter()
        .any(|p| wanted(&p) && p.code == Code::DupBlocks)
        && let Some(f) = dup_round(fs, state, report, overlay)?
    {
        *fixed = f;
        return Ok(true);
    }
    structure(fs, state, report, wanted, overlay, fixed)
}

/// Did the whole-inode fixes clear or change any inode?
fn changed_inodes(round: &clear::Round) -> bool {
    !round.cleared.is_empty() || !round.modified.is_empty()
}

/// Pass 1D; returns which problems it fixed, None when it staged nothing.
fn dup_round(
    fs: &Fs,
    state: &State,
    report: &Report,
    overlay: &mut Overlay,
) -> Result<Option<Vec<bool>>, Refusal> {
    let out = dup::fix(fs, state, overlay).map_err(Refusal::Failed)?;
    if !out.staged {
        return Ok(None);
    }
    Ok(Some(
        report
            .problems
            .iter()
            .map(|p| {
                matches!(p.code, Code::DupBlocks | Code::ClusterMisaligned)
                    && p.args().ino.is_some_and(|i| out.resolved.contains(&i))
            })
            .collect(),
    ))
}

/// Stages the fixes of whole directory blocks and whole directories (the
/// salvage and tail fixes of `dirblock.rs`, then the rebuilds of
/// `rehash.rs`, each directory once); returns whether any was staged.
fn structure(
    fs: &Fs,
    state: &State,
    report: &Report,
    wanted: &dyn Fn(&Problem) -> bool,
    overlay: &mut Overlay,
    fixed: &mut [bool],
) -> Result<bool, Refusal> {
    let mut staged = false;
    let mut rebuild: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    let mut holes: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    let mut dot_fixed = std::collections::BTreeSet::new();
    for (k, ref p) in report.problems.iter().enumerate() {
        if !wanted(p) {
            continue;
        }
        let Some(dir) = p.args().ino else {
            continue;
        };
        if dirblock::CODES.contains(&p.code) {
            fixed[k] = dirblock::fix(fs, state, overlay, p).map_err(Refusal::Failed)?;
            staged |= fixed[k];
            if !fixed[k] && p.code == Code::DirBlockNoTail {
                rebuild.entry(dir).or_default().push(k);
            }
        } else if p.code == Code::DirDotMissing
            && dirblock::fix_dot(fs, state, overlay, p).map_err(Refusal::Failed)?
        {
            // In place, as e2fsck: the records behind '.' stay where they
            // are; the next round's check judges the block again.
            fixed[k] = true;
            staged = true;
            dot_fixed.insert(dir);
        } else if rehash::CODES.contains(&p.code) {
            rebuild.entry(dir).or_default().push(k);
        } else if HOLES.contains(&p.code) {
            holes.entry(dir).or_default().push(k);
        }
    }
    for dir in &dot_fixed {
        rebuild.remove(dir);
    }
    // Holes first: a rebuild writes into the blocks the directory has.
    for (dir, ks) in holes {
        if dirhole::fix(fs, state, overlay, dir).map_err(Refusal::Failed)? {
            staged = true;
            for k in ks {
                fixed[k] = true;
            }
            rebuild.remove(&dir);
        }
    }
    // Link changes from dropped duplicates are not needed: nothing else is
    // staged in this round, and the next check counts afresh.
    let mut links = lostfound::Links::new();
    for (dir, ks) in rebuild {
        if rehash::rebuild(fs, state, overlay, dir, &mut links).map_err(Refusal::Failed)? {
            staged = true;
            for k in ks {
                fixed[k] = true;
            }
        }
    }
    Ok(staged)
}

/// Above this many links a directory's count is 1 (dir_nlink), as pass 4
/// judges it.
const LINK_MAX: i64 = 65000;

/// The link count inode `ino` should carry when `n` entries name it.
fn link_target(state: &State, ino: u32, n: i64) -> u64 {
    if state.inode_dir.get(ino as u64) && n > LINK_MAX {
        1
    } else {
        n.max(0) as u64
    }
}

/// Sets the large_file feature, needed once a regular file is 2 GiB or
/// more (a revision 0 superblock made dynamic first).
fn set_large_file(fs: &Fs, overlay: &mut Overlay) -> Result<(), String> {
    Ok(edit_superblock(fs, overlay, |sb| {
        sb.make_dynamic();
        sb.set_ro_compat(sb.ro_compat() | ro_compat::LARGE_FILE);
    })?)
}
