//! The planner: one round's fixes, staged phase by phase in the order the
//! fix table (`table.rs`) gives, each phase reading only the problems of
//! its fixers (`ProblemList::iter_where` skips the others undecoded).

use super::table::{self, AFTER_1D, Fixer, HOLE, RELOCATE, WAITS_FOR_COPY};
use super::{
    Mode, Plan, Refusal, allowed, badblocks, blockmap, clear, dir, dirblock, dirhole, dup, extents,
    inode, journal, journal_inode, lostfound, mmp, orphan_file, preen_halt_at, quota, rehash,
    resize, superblock,
};
use crate::check::problem::{Code, Pass, Problem};
use crate::check::state::State;
use crate::check::{Report, pass1};
use crate::fs::group_desc::{BG_BLOCK_UNINIT, BG_INODE_UNINIT};
use crate::fs::inode::RESIZE_INO;
use crate::fs::num::{Blk, Group, Ino};
use crate::fs::superblock::ro_compat;
use crate::store::overlay::{Overlay, Staging};
use crate::volume::Fs;
use crate::volume::edit::edit_superblock;
use crate::volume::summary::Kept;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

type Fixed<T> = Result<T, Refusal>;

/// Stages fixes for the problems of `report` that `mode` allows and that
/// pfsck supports.
pub fn plan(
    fs: &Fs,
    state: &State,
    report: &Report,
    mode: Mode,
    staging: &Staging,
) -> Result<Plan, Refusal> {
    plan_keeping(fs, state, report, mode, staging, &Kept::default())
}

/// [`plan`], leaving the summary's counts and bitmaps that `kept` names
/// as the device has them (their questions answered no).
pub fn plan_keeping(
    fs: &Fs,
    state: &State,
    report: &Report,
    mode: Mode,
    staging: &Staging,
    kept: &Kept,
) -> Result<Plan, Refusal> {
    if mode == Mode::Preen && preen_halt_at(report).is_some() {
        return Err(Refusal::Unexpected);
    }
    let mut r = Round::start(fs, state, report, mode, staging)?;
    r.kept = kept;
    let mut want = Wanted {
        mode,
        bigalloc: fs.geo.cluster_bits > 0,
        state,
        sharing: false,
        changed: false,
    };
    if !r.any(&want, |_| true) {
        let staged = r.replay_fix || r.orphan_fix;
        return Ok(r.plan(staged));
    }
    if let Some(staged) = r.alone(&want)? {
        return Ok(r.plan(staged));
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
    want.sharing = r.any(&want, |c| c == Code::DupBlocks);
    let early = r.any(&want, |c| {
        !table::has(c, AFTER_1D) && c.spec().pass <= Pass::P1
    });
    if !early {
        let mut fixed = std::mem::take(&mut r.fixed);
        let staged = late_round(fs, state, report, &want, &mut r.overlay, &mut fixed)?;
        r.fixed = fixed;
        if staged {
            return Ok(r.plan(true));
        }
    }
    r.main(want, early)
}

/// Which problems this round fixes: those the mode allows and the table
/// supports (on bigalloc, only the cluster-safe ones); once pass 1D is
/// due, not the checksums of shared blocks; once pass 1 changed inodes,
/// nothing passes 2-5 found.
struct Wanted<'a> {
    mode: Mode,
    bigalloc: bool,
    state: &'a State,
    /// Pass 1D is due (a wanted `DupBlocks`).
    sharing: bool,
    /// Pass 1's fixes cleared or changed inodes, or pass 1D's copies are
    /// still to come: what passes 2-5 found waits for the next round.
    changed: bool,
}

impl Wanted<'_> {
    fn ok(&self, p: &Problem) -> bool {
        allowed(p, self.mode)
            && table::supported(p.code)
            && (!self.bigalloc || table::cluster_safe(p.code))
            && !self.on_shared(p)
            && !(self.changed && p.spec().pass > Pass::P1B)
    }

    fn on_shared(&self, p: &Problem) -> bool {
        self.sharing
            && table::has(p.code, WAITS_FOR_COPY)
            && p.args()
                .blk
                .is_some_and(|Blk(b)| self.state.block_dup.get(self.state.cluster(b)))
    }
}

static NOTHING_KEPT: Kept = Kept {
    free_blocks: std::collections::BTreeMap::new(),
    free_inodes: std::collections::BTreeMap::new(),
    dirs: std::collections::BTreeMap::new(),
    sb_free_blocks: None,
    sb_free_inodes: None,
    clusters: None,
    inodes: None,
};

/// One round being planned.
struct Round<'a> {
    fs: &'a Fs,
    state: &'a State,
    report: &'a Report,
    mode: Mode,
    overlay: Overlay,
    /// Parallel to the report's problems.
    fixed: Vec<bool>,
    replayed: bool,
    /// The replay counts as a correction (e2fsck exits 1).
    replay_fix: bool,
    /// So does the orphan file's cleanup.
    orphan_fix: bool,
    /// What the summary rewrite leaves as it is.
    kept: &'a Kept,
}

impl<'a> Round<'a> {
    /// The replay goes first: the check judged the replayed file system,
    /// so the fixes must be staged over those bytes. In a later round the
    /// check read through the earlier rounds' staging, which this round's
    /// lies over (and which counts as the replay here).
    fn start(
        fs: &'a Fs,
        state: &'a State,
        report: &'a Report,
        mode: Mode,
        staging: &Staging,
    ) -> Fixed<Round<'a>> {
        let mut fixed = vec![false; report.problems.len()];
        if let Some(why) = journal::unrecovered(fs) {
            return Err(Refusal::Unsupported(why));
        }
        let replay =
            journal::staged(fs, staging).map_err(|e| Refusal::Unsupported(e.to_string()))?;
        let replay = stray_v2_fields_cleared(fs, report, replay, &mut fixed)?;
        let replay = mmp_rewritten(fs, report, replay, &mut fixed)?;
        let replayed = !replay.is_empty();
        let mut overlay = Overlay::over(replay);
        // Orphan processing is part of that view (`check::orphan`):
        // staging the view does it. The orphan file cleanup in it is a
        // correction (e2fsck exits 1).
        let mut orphan_fix = false;
        let view = |c: Code| table::is(c, Fixer::View);
        for (k, p) in report.problems.iter_where(view) {
            if replayed && allowed(&p, mode) {
                fixed[k] = true;
                // Clearing orphan_present over a clean file is part of the
                // processing in e2fsck's repair (exit 0).
                orphan_fix |= p.code == Code::OrphanFileBlockDirty;
            }
        }
        let jdev = |c: Code| table::is(c, Fixer::ExternalJournal);
        for (k, p) in report.problems.iter_where(jdev) {
            fixed[k] = allowed(&p, mode);
        }
        let replay_fix = replayed && journal::replay_is_correction(report);
        if replay_fix {
            journal::mark_valid(fs, &mut overlay)?;
        }
        Ok(Round {
            fs,
            state,
            report,
            mode,
            overlay,
            fixed,
            replayed,
            replay_fix,
            orphan_fix,
            kept: &NOTHING_KEPT,
        })
    }

    fn plan(self, fixes_staged: bool) -> Plan {
        Plan {
            overlay: self.overlay,
            fixed: self.fixed,
            replayed: self.replayed,
            fixes_staged,
        }
    }

    /// Is some problem whose code `code` accepts wanted?
    fn any(&self, want: &Wanted, code: impl Fn(Code) -> bool) -> bool {
        self.report
            .problems
            .iter_where(|c| table::supported(c) && code(c))
            .any(|(_, p)| want.ok(&p))
    }

    /// The first wanted problem of code `code`.
    /// The inodes whose block map this round fixes.
    fn map_fixed(&self, want: &Wanted) -> BTreeSet<u32> {
        self.report
            .problems
            .iter_where(|c| table::is(c, Fixer::BlockMap))
            .filter(|(_, q)| want.ok(q))
            .filter_map(|(_, q)| q.args().ino.map(Ino::get))
            .collect()
    }

    fn first(&self, want: &Wanted, code: Code) -> Option<(usize, Problem)> {
        self.report
            .problems
            .iter_where(|c| c == code)
            .find(|(_, p)| want.ok(p))
    }

    /// The fixes made alone in their round, in this order: the primary
    /// superblock from its backup, the journal inode from its backup, a
    /// visible journal moved to its reserved inode, visible quota files
    /// moved to theirs, an impossible
    /// itable_unused, the bad-blocks inode, moved bitmaps.
    /// Whether one ended the round (and whether it staged a fix).
    fn alone(&mut self, want: &Wanted) -> Fixed<Option<bool>> {
        let fs = self.fs;
        // The fixes below edit the primary superblock and descriptors;
        // when the check read a backup, the first round only puts it
        // back as the primary (`superblock.rs`) and the next round's
        // check goes on from there.
        if superblock::used_backup(fs) {
            if self.mode == Mode::Preen {
                // e2fsck -p does not go looking for backups of bad
                // descriptors; a manual run decides.
                return Err(Refusal::Unsupported(
                    "the primary superblock or descriptors are unusable; run with -y to restore them from the backup".into(),
                ));
            }
            superblock::restore_primary(fs, &mut self.overlay)?;
            // What `start` staged below (a journal replay from the
            // backup's view) stays fixed.
            for (k, c) in self.report.problems.codes().enumerate() {
                self.fixed[k] |= c == Code::SbUsedBackup;
            }
            return Ok(Some(true));
        }
        // A journal inode the check read from the superblock's backup is
        // written from it, alone in its round, as e2fsck writes it before
        // pass 1: what the passes found on the old inode (its mode, the
        // journal's blocks nobody claimed) is judged again on the
        // restored one, and not shown when that finds it gone.
        if let Some((k, _)) = self.first(want, Code::JournalInodeFromBackup)
            && journal_inode::restore_from_backup(fs, &mut self.overlay)?
        {
            self.fixed[k] = true;
            return Ok(Some(true));
        }
        // The passes counted the visible file as in use and linked: the
        // next round judges the journal in its reserved inode.
        if let Some((k, p)) = self.first(want, Code::JournalVisible) {
            self.fixed[k] = journal_inode::move_to_hidden(fs, self.state, &mut self.overlay, &p)?;
            return Ok(Some(self.fixed[k] || self.replay_fix));
        }
        // As the journal's: both files move in the one round.
        let (ks, visible): (Vec<usize>, Vec<Problem>) = self
            .report
            .problems
            .iter_where(|c| c == Code::QuotaVisible)
            .filter(|(_, p)| want.ok(p))
            .unzip();
        if !visible.is_empty() {
            let moved = quota::move_to_hidden(fs, self.state, &mut self.overlay, &visible)?;
            for (&k, done) in ks.iter().zip(&moved) {
                self.fixed[k] = *done;
            }
            return Ok(Some(moved.contains(&true) || self.replay_fix));
        }
        if self.itable_unused_reset(want)? {
            return Ok(Some(true));
        }
        // A new UUID changes every descriptor checksum: the next round
        // judges the descriptors under it.
        if let Some((k, _)) = self.first(want, Code::SbNoUuid) {
            self.fixed[k] = superblock::new_uuid(fs, &mut self.overlay)?;
            return Ok(Some(self.fixed[k] || self.replay_fix));
        }
        // A bad-block list naming the block of its own inode is not
        // believed: the inode is cleared and, as e2fsck restarts there,
        // nothing else is fixed this round (the check read that block's
        // inodes as unreadable).
        if let Some((k, _)) = self.first(want, Code::BadBlocksInodeInBadBlock) {
            self.fixed[k] = blockmap::clear_bad_blocks_inode(fs, &mut self.overlay)?;
            return Ok(Some(self.fixed[k] || self.replay_fix));
        }
        self.relocate(want)
    }

    /// An impossible itable_unused, or uninit marks on a descriptor whose
    /// checksum fails, made pass 1 skip inodes: fixed alone, and the next
    /// round checks every inode.
    fn itable_unused_reset(&mut self, want: &Wanted) -> Fixed<bool> {
        let fs = self.fs;
        let unused: Vec<(usize, u32)> = self
            .report
            .problems
            .iter_where(|c| matches!(c, Code::GdItableUnused | Code::DirEntryUnusedArea))
            .filter(|(_, p)| want.ok(p))
            .filter_map(|(k, p)| p.args().group.map(|Group(g)| (k, p.code, g)))
            .filter(|&(_, c, g)| {
                c == Code::DirEntryUnusedArea
                    || fs.gd(Group(g)).is_some_and(|d| {
                        d.itable_unused > fs.geo.inodes_per_group
                            || d.itable_unused > d.free_inodes_count
                    })
            })
            .map(|(k, _, g)| (k, g))
            .collect();
        // A descriptor whose checksum fails loses its uninit marks (as
        // e2fsck's pass 0 clears them): pass 1 skipped what they hid.
        let marked: Vec<(usize, u32)> = self
            .report
            .problems
            .iter_where(|c| matches!(c, Code::GdChecksum | Code::DirEntryUninitGroup))
            .filter(|(_, p)| want.ok(p))
            .filter_map(|(k, p)| p.args().group.map(|Group(g)| (k, p.code, g)))
            .filter(|&(_, c, g)| {
                c == Code::DirEntryUninitGroup
                    || fs.gd(Group(g)).is_some_and(|d| {
                        d.has_flag(BG_INODE_UNINIT | BG_BLOCK_UNINIT) || d.itable_unused != 0
                    })
            })
            .map(|(k, _, g)| (k, g))
            .collect();
        if unused.is_empty() && marked.is_empty() {
            return Ok(false);
        }
        let groups = |v: &[(usize, u32)]| v.iter().map(|&(_, g)| g).collect::<Vec<u32>>();
        crate::volume::summary::reset_uninit_marks(
            fs,
            &mut self.overlay,
            &groups(&unused),
            &groups(&marked),
        )?;
        for &(k, _) in unused.iter().chain(&marked) {
            self.fixed[k] = true;
        }
        Ok(true)
    }

    /// Bitmaps on bad blocks, outside their group or on other metadata
    /// move first, alone in their round (the summary rewrite works from
    /// the descriptors this check loaded).
    fn relocate(&mut self, want: &Wanted) -> Fixed<Option<bool>> {
        let mut moves = Vec::new();
        let mut movers = Vec::new();
        // The primary superblock or descriptors on the bad block list
        // cannot move: e2fsck's yes drops the entry instead.
        let mut unlisted = Vec::new();
        let codes = |c: Code| table::has(c, RELOCATE);
        for (k, p) in self.report.problems.iter_where(codes) {
            if !want.ok(&p) {
                continue;
            }
            if p.code == Code::BadBlockInMetadata
                && matches!(p.e2fsck_override(), Some(0x010019 | 0x01001A))
            {
                unlisted.extend(p.args().blk.map(|Blk(b)| (k, b)));
                continue;
            }
            let m = blockmap::bitmaps_to_move(self.fs, &p);
            if !m.is_empty() {
                movers.push((k, moves.len(), m.len()));
                moves.extend(m);
            }
        }
        let blocks: Vec<u64> = unlisted.iter().map(|&(_, b)| b).collect();
        let dropped = !blocks.is_empty() && badblocks::unlist(self.fs, &mut self.overlay, &blocks)?;
        if dropped {
            for &(k, _) in &unlisted {
                self.fixed[k] = true;
            }
        }
        if moves.is_empty() {
            return Ok(dropped.then_some(true));
        }
        let moved = blockmap::relocate_bitmaps(self.fs, self.state, &mut self.overlay, &moves)?;
        if !moved.iter().any(|&m| m) {
            return Ok(dropped.then_some(true));
        }
        for &(k, at, n) in &movers {
            self.fixed[k] = moved[at..at + n].iter().all(|&m| m);
        }
        Ok(Some(true))
    }

    /// The main round: whole inodes, the tree, block maps, fields, quota
    /// files, the journal, the summary; or, when none of them staged
    /// anything, the late round.
    fn main(mut self, mut want: Wanted, early: bool) -> Fixed<Plan> {
        let mut m = self.inodes(&want)?;
        // Pass 1D waits for this round's pass 1 fixes, and e2fsck copies
        // a shared block as passes 0-1 left it: a later pass's fix of a
        // block that is also a copied file's data (an inode table block a
        // torn file maps) must not land in the copy, so it waits as well.
        // (Only when pass 1D is still to come: with no pass 1 fix left,
        // it ran before this round and staged nothing.)
        let copies_pending = want.sharing && early;
        // The directory structure waits for a round without pass 0-1
        // fixes, and what passes 2-5 found was found on the blocks as
        // pass 2 salvaged them: counts and entries that only hold once
        // the structure is fixed wait with it (a link count or an
        // unattached file judged without the entries of a salvaged
        // block would cost the file its entry).
        let structure_pending = early && self.any(&want, is_structure);
        want.changed = !m.round.cleared.is_empty()
            || !m.round.modified.is_empty()
            || m.symlink_waits
            || copies_pending
            || structure_pending;
        self.tree(&want, &mut m)?;
        self.maps(&want, &mut m)?;
        self.fields(&want, &mut m)?;
        self.relinked(&mut m)?;
        self.quota_files(&want, &mut m)?;
        self.journal(&mut m)?;
        self.orphan_file(&want, &mut m)?;
        let (fs, state) = (self.fs, self.state);
        if m.large_file && !fs.sb.has_ro_compat(ro_compat::LARGE_FILE) {
            set_large_file(fs, &mut self.overlay)?;
        }
        if m.summary {
            let used = state.in_use();
            crate::volume::summary::rewrite_keeping(fs, &used, self.kept, &mut self.overlay)?;
        }
        // Over the summary, which puts the mark back behind the last inode
        // in use: the next check must read the inodes the entries name.
        for &(g, uninit) in &m.unused_marks {
            crate::volume::edit::edit_desc(fs, &mut self.overlay, g, |d| {
                if uninit {
                    d.set_flags(d.flags() & !BG_INODE_UNINIT);
                } else {
                    d.set_itable_unused(0);
                }
            })?;
        }
        if m.journal_made {
            crate::volume::edit::write_backups(fs, &mut self.overlay)?;
        }
        let fixes_staged =
            self.replay_fix || self.orphan_fix || self.overlay.differs_from_base()?;
        if !fixes_staged {
            // The earlier fixes staged nothing after all (a pass 1 problem
            // no fix could act on): pass 1D and the directory structure go
            // on.
            let mut late = vec![false; self.report.problems.len()];
            if late_round(fs, state, self.report, &want, &mut self.overlay, &mut late)? {
                self.fixed = late;
                return Ok(self.plan(true));
            }
        }
        Ok(self.plan(fixes_staged))
    }

    /// Whole-inode fixes first, as e2fsck's pass 1 makes them before it
    /// looks at directories: what they clear is no longer reconnected,
    /// counted or rewritten below. Then the resize inode and pass 1E.
    fn inodes(&mut self, want: &Wanted) -> Fixed<Main> {
        let (fs, state, report) = (self.fs, self.state, self.report);
        // A bad inode checksum is only recomputed when pass 1 found
        // nothing else wrong with the inode: over other damage it would
        // bless contents a later, fuller repair must still judge. (A fix
        // of that damage rewrites the checksum itself; the next round
        // judges what is left.)
        let mut m = Main {
            damaged: report
                .problems
                .iter_where(|c| {
                    c != Code::InodeChecksum
                        && c.spec().pass == Pass::P1
                        && !matches!(
                            c,
                            Code::ExtentTreeShorter
                                | Code::ExtentTreeNarrower
                                | Code::InodeBlockMapToExtents
                        )
                })
                .filter_map(|(_, p)| p.args().ino.map(Ino::get))
                .collect(),
            ..Main::default()
        };
        // An invalid resize inode is rebuilt whole below: what pass 1
        // says about the old one is not fixed field by field.
        m.resize = report
            .problems
            .iter_where(|c| c == Code::SbResizeInodeNoFeature)
            .find(|(_, p)| want.ok(p) && resize::recreates(fs, p))
            .map(|(k, _)| k);
        let resize_ino = |p: &Problem| m.resize.is_some() && p.args().ino == Some(Ino::RESIZE);
        // A symlink whose only fault is direct blocks past the first
        // waits for the block map fix that zeroes them (e2fsck's pass 1
        // does, then its pass 2 judges the symlink again): cleared now,
        // a symlink e2fsck keeps would be lost.
        let mapped = self.map_fixed(want);
        let waits_for_map = |p: &Problem| {
            p.code == Code::InodeFastSymlink
                && p.args().detail == pass1::detail::SYMLINK_EXTRA_BLOCKS
                && p.args().ino.is_some_and(|i| mapped.contains(&i.get()))
        };
        let codes = |c: Code| table::is(c, Fixer::Clear);
        for (k, p) in report.problems.iter_where(codes) {
            if !want.ok(&p) || resize_ino(&p) {
                continue;
            }
            if waits_for_map(&p) {
                m.symlink_waits = true;
                continue;
            }
            self.fixed[k] = clear::fix(fs, state, &mut self.overlay, &p, &mut m.round)?;
        }
        clear::finish(fs, &mut self.overlay, &m.round)?;
        // e2fsck recreates it at the end of its pass 1, before anything
        // later allocates a block.
        if let Some(k) = m.resize {
            self.fixed[k] = resize::recreate(fs, state, &mut self.overlay, &mut m.large_file)?;
            m.summary |= self.fixed[k];
        }
        if !self.any(want, |c| c == Code::DupBlocks) {
            self.extents(want, &mut m)?;
        }
        // Cleared inodes need nothing more; changed ones are judged again
        // by the next round. Once pass 1 cleared or changed an inode, what
        // passes 2-5 found was found on the old inode: those fixes wait
        // for the next round's check, as e2fsck's later passes run on the
        // fixed inodes.
        m.gone = m.round.cleared.union(&m.round.modified).copied().collect();
        if m.resize.is_some() {
            m.gone.insert(RESIZE_INO);
        }
        Ok(m)
    }

    /// Pass 1E, once pass 1D has nothing left: a block map on bigalloc
    /// (or any, with `-E bmap2extent`) becomes an extent tree, an extent
    /// tree that could be shorter or narrower is rebuilt. Not over other
    /// map fixes of the same inode (they go first, the next round
    /// converts what they leave).
    fn extents(&mut self, want: &Wanted, m: &mut Main) -> Fixed<()> {
        let round = &mut m.round;
        let report = self.report;
        let mapped = self.map_fixed(want);
        // Inodes whose tree pass 1E rebuilt: their other offers (and a
        // tree too deep) are fixed with it.
        let mut rebuilt = BTreeSet::new();
        for (k, p) in report.problems.iter_where(|c| table::is(c, Fixer::Extents)) {
            let Some(Ino(ino)) = p.args().ino else {
                continue;
            };
            if p.code != Code::InodeBigallocBlockMap && rebuilt.contains(&ino) {
                self.fixed[k] = true;
                continue;
            }
            if !want.ok(&p)
                || round.cleared.contains(&ino)
                || round.modified.contains(&ino)
                || mapped.contains(&ino)
            {
                continue;
            }
            let done = if matches!(
                p.code,
                Code::InodeBigallocBlockMap | Code::InodeBlockMapToExtents
            ) {
                // Indirect blocks given back, tree blocks taken: the
                // summary follows.
                let done = extents::convert(self.fs, self.state, &mut self.overlay, ino)?;
                m.summary |= done;
                done
            } else {
                // Tree blocks given back: the summary follows.
                let done = extents::optimize(self.fs, self.state, &mut self.overlay, ino)?;
                m.summary |= done;
                if done {
                    rebuilt.insert(ino);
                }
                done
            };
            if done {
                self.fixed[k] = true;
                round.modified.insert(ino);
            }
        }
        Ok(())
    }

    /// Tree and entry fixes, in problem order: what they change in link
    /// counts (`links`) and in the in-use maps is then part of the link
    /// count fixes and the summary. A missing /lost+found is created
    /// before anything needs it.
    fn tree(&mut self, want: &Wanted, m: &mut Main) -> Fixed<()> {
        let (fs, state) = (self.fs, self.state);
        let mut lf = lostfound::LostFound::new(state);
        if let Some(made) = self.lost_found(want, m)? {
            lf = made;
        }
        let full = |c: Code| matches!(c, Code::LostFoundFull | Code::LostFoundFullP4);
        lf.may_grow = (self.report.problems.iter_where(full))
            .filter(|(_, p)| want.ok(p))
            .filter_map(|(_, p)| p.args().ino)
            .collect();
        let mut reconnected = BTreeSet::new();
        let codes = |c: Code| matches!(table::fixer(c), Some(Fixer::Tree | Fixer::Entry));
        for (k, p) in self.report.problems.iter_where(codes) {
            if !want.ok(&p) || p.args().ino.is_some_and(|Ino(i)| m.gone.contains(&i)) {
                continue;
            }
            if table::is(p.code, Fixer::Tree) {
                self.fixed[k] =
                    lostfound::fix(fs, state, &mut self.overlay, &mut lf, &p, &mut m.links)?;
                if self.fixed[k] {
                    m.summary = true;
                    if p.code == Code::InodeUnattachedZero {
                        m.gone.extend(p.args().ino.map(Ino::get));
                    } else {
                        reconnected.extend(p.args().ino.map(Ino::get));
                    }
                }
            } else if p.code == Code::DirDotDotWrong
                && p.args().ino.is_some_and(|Ino(i)| reconnected.contains(&i))
            {
                // Reconnecting the directory (its problem comes first)
                // pointed its '..' at lost+found, where the re-check finds
                // its parent.
                self.fixed[k] = true;
            } else {
                self.fixed[k] = dir::fix(fs, state, &mut self.overlay, &p, &mut m.links)?;
            }
        }
        Ok(())
    }

    /// A missing /lost+found created; an encrypted one, or one that is not
    /// a directory, unlinked (it becomes an unconnected inode the next
    /// round reconnects) and replaced, as e2fsck. The new one, if made.
    fn lost_found(&mut self, want: &Wanted, m: &mut Main) -> Fixed<Option<lostfound::LostFound>> {
        let (fs, state) = (self.fs, self.state);
        let codes = |c: Code| table::is(c, Fixer::LostFound);
        let Some((k, p)) = self
            .report
            .problems
            .iter_where(codes)
            .find(|(_, p)| want.ok(p))
        else {
            return Ok(None);
        };
        if matches!(
            p.code,
            Code::LostFoundEncrypted | Code::LostFoundNotDir | Code::LostFoundInlineData
        ) && !dir::unlink(
            fs,
            state,
            &mut self.overlay,
            Ino::ROOT,
            state.lost_found,
            "lost+found",
            &mut m.links,
        )? {
            return Ok(None);
        }
        let made = lostfound::create(fs, state, &mut self.overlay, &mut m.links)?;
        if made.is_some() {
            self.fixed[k] = true;
            m.summary = true;
        }
        Ok(made)
    }

    /// Block maps, one inode at a time with all its map problems, before
    /// the field fixes: those read the inode through the overlay and keep
    /// the map rewritten here. An unusable journal is replaced
    /// (`journal_inode.rs`); what pass 1 said about the old journal inode
    /// goes with it.
    fn maps(&mut self, want: &Wanted, m: &mut Main) -> Fixed<()> {
        let report = self.report;
        m.new_journal = self.any(want, |c| table::is(c, Fixer::NewJournal));
        // Per inode with map problems to fix: those (index and code), and
        // all its problems (a map whose kind is in doubt is left alone,
        // see `blockmap::fix`). Only those inodes are collected: on a
        // check of very many problems few are map problems.
        type MapFixes = (Vec<(usize, Code)>, Vec<Problem>);
        let mut maps: BTreeMap<u32, MapFixes> = Default::default();
        for (k, p) in report
            .problems
            .iter_where(|c| table::is(c, Fixer::BlockMap))
        {
            if let Some(Ino(ino)) = p.args().ino
                && want.ok(&p)
                && !m.gone.contains(&ino)
                && !(m.new_journal && journal_inode::resolves(&p))
            {
                maps.entry(ino).or_default().0.push((k, p.code));
            }
        }
        if !maps.is_empty() {
            for p in &report.problems {
                if let Some(e) = p.args().ino.and_then(|Ino(i)| maps.get_mut(&i)) {
                    e.1.push(p);
                }
            }
        }
        for (&ino, (ks, all)) in &maps {
            let codes: Vec<Code> = ks.iter().map(|&(_, c)| c).collect();
            let all: Vec<&Problem> = all.iter().collect();
            if blockmap::fix(self.fs, self.state, &mut self.overlay, ino, &codes, &all)? {
                m.summary = true;
                for &(k, _) in ks {
                    self.fixed[k] = true;
                }
            }
        }
        Ok(())
    }

    /// Single fields of inodes and of the superblock, in problem order
    /// (two fixes of one inode, size and block count say, both land).
    fn fields(&mut self, want: &Wanted, m: &mut Main) -> Fixed<()> {
        let codes = |c: Code| {
            table::fixer(c).is_some_and(|f| f.phase() == table::Phase::Fields)
                || matches!(
                    table::fixer(c),
                    Some(
                        Fixer::Summary | Fixer::UnusedMark | Fixer::ResizeInode | Fixer::QuotaFile
                    )
                )
        };
        for (k, p) in self.report.problems.iter_where(codes) {
            if p.code == Code::QuotaFileBad
                && allowed(&p, self.mode)
                && p.args()
                    .ino
                    .is_some_and(|Ino(i)| m.cleared_quota.contains(&i))
            {
                // The superblock no longer names that file.
                self.fixed[k] = true;
                continue;
            }
            if (m.new_journal && journal_inode::resolves(&p))
                || !want.ok(&p)
                || p.args().ino.is_some_and(|Ino(i)| m.gone.contains(&i))
                || (p.code == Code::InodeChecksum
                    && p.args().ino.is_some_and(|Ino(i)| m.damaged.contains(&i)))
            {
                continue;
            }
            self.field(k, &p, m)?;
        }
        Ok(())
    }

    /// The fix of one problem of [`Self::fields`].
    fn field(&mut self, k: usize, p: &Problem, m: &mut Main) -> Fixed<()> {
        let (fs, overlay) = (self.fs, &mut self.overlay);
        let Some(fixer) = table::fixer(p.code) else {
            return Ok(());
        };
        let fixed = match fixer {
            Fixer::Field if matches!(p.code, Code::InodeLinkCount | Code::DirLinkOverflowExact) => {
                // The count pass 2 found, plus what the tree fixes changed.
                let ino = p.args().ino.map_or(0, Ino::get);
                let d = m.links.get(&Ino(ino)).copied().unwrap_or(0);
                let want = p
                    .args()
                    .num2
                    .map(|n| link_target(self.state, ino, n as i64 + d));
                m.link_fixed.insert(ino);
                if want == Some(u64::from(self.state.i_links(Ino(ino)))) {
                    // The tree fixes took away the entries that made the
                    // count wrong (a link to the root cleared): nothing
                    // to write, and e2fsck, counting after them, says
                    // nothing; unfixed, the problem is not shown.
                    false
                } else {
                    let q = match want {
                        Some(n) => p.clone().num2(n),
                        None => p.clone(),
                    };
                    inode::fix(fs, overlay, &q, &mut m.large_file)?
                }
            }
            Fixer::Field if p.code == Code::DirHoleCleared => {
                blockmap::fill_cleared_hole(fs, overlay, p)?
            }
            Fixer::Field if p.code == Code::HtreeUnexpectedBlock => {
                let ino = p.args().ino.unwrap_or(Ino::NONE);
                crate::volume::edit::edit_inode(fs, overlay, ino, |m| {
                    m.set_flags(m.flags() & !crate::fs::inode::flags::INDEX);
                })?
            }
            Fixer::Field => inode::fix(fs, overlay, p, &mut m.large_file)?,
            Fixer::Summary => {
                m.summary = true;
                true
            }
            Fixer::UnusedMark => match p.args().group {
                Some(Group(g)) if fs.gd(Group(g)).is_some() => {
                    m.unused_marks
                        .push((g, p.code == Code::DirEntryUninitGroup));
                    true
                }
                _ => false,
            },
            Fixer::InodesCount => superblock::fix_inodes_count(fs, overlay)?,
            Fixer::FirstMetaBg => superblock::fix_first_meta_bg(fs, overlay)?,
            Fixer::SuperFlag => superblock::fix_flag(fs, overlay, p)?,
            Fixer::OrphanFile => superblock::drop_orphan_file(fs, overlay)?,
            Fixer::OrphanPresent => orphan_file::clear_present(fs, overlay)?,
            // Recreated whole in pass 1's phase.
            Fixer::ResizeInode if m.resize.is_some() => return Ok(()),
            Fixer::ResizeInode => superblock::fix_resize_inode(fs, overlay, p)?,
            Fixer::QuotaInode => {
                let done = quota::clear_inum(fs, overlay, p)?;
                if done {
                    m.cleared_quota.extend(p.args().ino.map(Ino::get));
                }
                done
            }
            Fixer::Feature => {
                m.large_file = true;
                true
            }
            // Below, once the other fixes of this round are known.
            _ => return Ok(()),
        };
        self.fixed[k] = fixed;
        Ok(())
    }

    /// Inodes whose count the check found right but the tree fixes
    /// changed (lost+found gaining a subdirectory, a reconnected
    /// directory's old '..' target, the reconnected inodes themselves).
    fn relinked(&mut self, m: &mut Main) -> Fixed<()> {
        let state = self.state;
        for (&Ino(ino), &d) in &m.links {
            // A cleared inode keeps the count its clearing wrote.
            let cleared = m.gone.contains(&ino) && !m.round.modified.contains(&ino);
            if m.link_fixed.contains(&ino) || cleared || !state.inode_used.get(Ino(ino)) {
                continue;
            }
            let have = state.i_links(Ino(ino));
            let seen = i64::from(state.links_seen.get(Ino(ino)));
            let want = link_target(state, ino, seen + d);
            if want != u64::from(have) {
                let q = Problem::new(Code::InodeLinkCount)
                    .ino(Ino(ino))
                    .num(u64::from(have))
                    .num2(want);
                inode::fix(self.fs, &mut self.overlay, &q, &mut m.large_file)?;
            }
        }
        Ok(())
    }

    /// Quota files are rewritten from the usage this round's check
    /// counted, so only in a round that fixes nothing else (the next
    /// round's check counts again after the others).
    fn quota_files(&mut self, want: &Wanted, m: &mut Main) -> Fixed<()> {
        let (fs, report) = (self.fs, self.report);
        let other_fix = m.new_journal
            || report.problems.codes().zip(&self.fixed).any(|(c, &f)| {
                f && !matches!(
                    table::fixer(c),
                    Some(Fixer::Summary | Fixer::QuotaFile | Fixer::View)
                )
            });
        if other_fix {
            return Ok(());
        }
        let codes = |c: Code| table::is(c, Fixer::QuotaFile);
        let mut types = BTreeSet::new();
        for (_, p) in report.problems.iter_where(codes) {
            if want.ok(&p)
                && !p
                    .args()
                    .ino
                    .is_some_and(|Ino(i)| m.cleared_quota.contains(&i))
            {
                types.extend(quota::problem_type(fs, &p));
            }
        }
        for qtype in types {
            if quota::rewrite(fs, self.state, &mut self.overlay, qtype)? {
                m.summary = true;
                for (k, p) in report.problems.iter_where(codes) {
                    if want.ok(&p) && quota::problem_type(fs, &p) == Some(qtype) {
                        self.fixed[k] = true;
                    }
                }
            }
        }
        Ok(())
    }

    /// The unusable journal replaced, and what pass 1 said about its
    /// inode fixed with it.
    fn journal(&mut self, m: &mut Main) -> Fixed<()> {
        if !m.new_journal {
            return Ok(());
        }
        m.journal_made = true;
        let made = journal_inode::recreate(self.fs, self.state, &mut self.overlay)?;
        if let Some(why) = made {
            return Err(Refusal::Unsupported(why));
        }
        m.summary = true;
        for (k, p) in self.report.problems.iter().enumerate() {
            if journal_inode::resolves(&p) {
                self.fixed[k] = true;
            }
        }
        Ok(())
    }
}

impl Round<'_> {
    /// An orphan file that cannot be set up made anew, as e2fsck does
    /// after its passes: once pass 1 has nothing left to fix on its inode
    /// (a size pass 1 corrects can make it usable again).
    fn orphan_file(&mut self, want: &Wanted, m: &mut Main) -> Fixed<()> {
        let Some((k, _)) = self.first(want, Code::OrphanFileCorrupt) else {
            return Ok(());
        };
        let ino = self.fs.sb.orphan_file_inum;
        let pass1_first = m.gone.contains(&ino)
            || self.report.problems.iter().any(|p| {
                p.spec().pass == Pass::P1 && p.args().ino == Some(Ino(ino)) && want.ok(&p)
            });
        if pass1_first {
            return Ok(());
        }
        if orphan_file::recreate(self.fs, self.state, &mut self.overlay)?.is_some() {
            // Left for e2fsck; the report says it is not fixed.
            return Ok(());
        }
        m.summary = true;
        self.fixed[k] = true;
        Ok(())
    }
}

/// What the main round's phases pass on to the later ones.
#[derive(Default)]
struct Main {
    /// Inodes pass 1 found something wrong with besides their checksum.
    damaged: BTreeSet<u32>,
    /// The problem whose resize inode is recreated.
    resize: Option<usize>,
    round: clear::Round,
    /// Inodes cleared or changed: later phases leave them alone.
    gone: BTreeSet<u32>,
    links: lostfound::Links,
    link_fixed: BTreeSet<u32>,
    cleared_quota: BTreeSet<u32>,
    new_journal: bool,
    journal_made: bool,
    summary: bool,
    large_file: bool,
    /// A symlink waits for its map fix to be judged again: what passes
    /// 2-5 found on it (its entries' file type) waits as well.
    symlink_waits: bool,
    /// Groups whose never-used mark goes to 0 (false) or whose
    /// INODE_UNINIT flag is cleared (true), over the summary.
    unused_marks: Vec<(u32, bool)>,
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
) -> Fixed<Arc<Overlay>> {
    let replaced = report
        .problems
        .codes()
        .any(|c| table::is(c, Fixer::NewJournal));
    let Some(k) = report
        .problems
        .codes()
        .position(|c| c == Code::JournalStrayV2Fields)
    else {
        return Ok(replay);
    };
    if replaced {
        return Ok(replay);
    }
    let mut overlay = Overlay::over(replay);
    journal_inode::clear_v2_fields(fs, &mut overlay)?;
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
) -> Fixed<Arc<Overlay>> {
    let Some(k) = report
        .problems
        .codes()
        .position(|c| matches!(c, Code::MmpBadMagic | Code::MmpChecksum))
    else {
        return Ok(replay);
    };
    let mut overlay = Overlay::over(replay);
    mmp::rewrite(fs, &mut overlay)?;
    fixed[k] = true;
    Ok(Arc::new(overlay))
}

/// Pass 1D, or when it has nothing to do, the directory structure;
/// whether either staged something (then `fixed` says what).
fn late_round(
    fs: &Fs,
    state: &State,
    report: &Report,
    want: &Wanted,
    overlay: &mut Overlay,
    fixed: &mut Vec<bool>,
) -> Fixed<bool> {
    // e2fsck moves a directory's extents down in pass 1, before pass 1B
    // judges clusters: on bigalloc the move can end the misalignment of
    // a block that pass 1D would otherwise copy to a new cluster.
    if fs.geo.cluster_bits > 0 && collapse_first(fs, state, report, want, overlay, fixed)? {
        return Ok(true);
    }
    let sharing = report
        .problems
        .iter_where(|c| c == Code::DupBlocks)
        .any(|(_, p)| want.ok(&p));
    if sharing && let Some(f) = dup_round(fs, state, report, overlay)? {
        *fixed = f;
        return Ok(true);
    }
    structure(fs, state, report, want, overlay, fixed)
}

/// The directories whose extents pass 1 found past a gap, moved down
/// (`dirhole`) in a round of their own; whether any was.
fn collapse_first(
    fs: &Fs,
    state: &State,
    report: &Report,
    want: &Wanted,
    overlay: &mut Overlay,
    fixed: &mut [bool],
) -> Fixed<bool> {
    let mut dirs: BTreeMap<Ino, Vec<usize>> = Default::default();
    for (k, p) in report.problems.iter_where(|c| c == Code::InodeDirHole) {
        if want.ok(&p)
            && let Some(dir) = p.args().ino
        {
            dirs.entry(dir).or_default().push(k);
        }
    }
    let mut staged = false;
    for (dir, ks) in dirs {
        if dirhole::fix(fs, state, overlay, dir)? {
            staged = true;
            for k in ks {
                fixed[k] = true;
            }
        }
    }
    Ok(staged)
}

/// Pass 1D; returns which problems it fixed, None when it staged nothing.
fn dup_round(
    fs: &Fs,
    state: &State,
    report: &Report,
    overlay: &mut Overlay,
) -> Fixed<Option<Vec<bool>>> {
    let out = dup::fix(fs, state, overlay)?;
    if !out.staged {
        return Ok(None);
    }
    let mut fixed = vec![false; report.problems.len()];
    for (k, p) in report.problems.iter_where(|c| table::is(c, Fixer::Dup)) {
        fixed[k] = p.args().ino.is_some_and(|i| out.resolved.contains(&i));
    }
    Ok(Some(fixed))
}

/// Is `c` fixed by `structure`?
fn is_structure(c: Code) -> bool {
    matches!(table::fixer(c), Some(Fixer::DirBlock | Fixer::Rehash)) || table::has(c, HOLE)
}

/// Stages the fixes of whole directory blocks and whole directories (the
/// salvage and tail fixes of `dirblock.rs`, then the rebuilds of
/// `rehash.rs`, each directory once); returns whether any was staged.
fn structure(
    fs: &Fs,
    state: &State,
    report: &Report,
    want: &Wanted,
    overlay: &mut Overlay,
    fixed: &mut [bool],
) -> Fixed<bool> {
    let mut staged = false;
    let mut rebuild: BTreeMap<Ino, Vec<usize>> = Default::default();
    let mut holes: BTreeMap<Ino, Vec<usize>> = Default::default();
    let mut dot_fixed = BTreeSet::new();
    let mut salvaged = BTreeSet::new();
    let mut resized = BTreeSet::new();
    for (k, p) in report.problems.iter_where(is_structure) {
        if !want.ok(&p) {
            continue;
        }
        let Some(dir) = p.args().ino else {
            continue;
        };
        if resized.contains(&dir) {
            // Found within the old size.
            continue;
        }
        if p.code == Code::DirInlineBad {
            fixed[k] = dirblock::fix_inline_size(fs, overlay, &p)?;
            if fixed[k] {
                resized.insert(dir);
                rebuild.remove(&dir);
                holes.remove(&dir);
            }
            staged |= fixed[k];
        } else if table::is(p.code, Fixer::DirBlock) {
            let blk = (dir, p.args().blk, p.args().num);
            fixed[k] = if p.code == Code::DirBlockCorrupt && salvaged.contains(&blk) {
                // A later broken record of a block pass 2 walked on
                // salvaged: the block's first salvage took it too.
                true
            } else if p.code == Code::DirEntryBadRecLen && !salvaged.contains(&blk) {
                // The record is stray only in the salvaged block.
                false
            } else {
                dirblock::fix(fs, state, overlay, &p)?
            };
            if p.code == Code::DirBlockCorrupt && fixed[k] {
                salvaged.insert(blk);
            }
            staged |= fixed[k];
            if !fixed[k] && matches!(p.code, Code::DirBlockNoTail | Code::DirDotSecondEntry) {
                rebuild.entry(dir).or_default().push(k);
            }
        } else if p.code == Code::DirDotMissing && dirblock::fix_dot(fs, state, overlay, &p)? {
            // In place, as e2fsck: the records behind '.' stay where they
            // are; the next round's check judges the block again.
            fixed[k] = true;
            staged = true;
            dot_fixed.insert(dir);
        } else if p.code == Code::HtreeRootInvalid && p.args().detail == pass1::detail::INLINE_INDEX
        {
            // An inline directory has no root block for its index flag to
            // describe, and nothing to rebuild: the flag goes, as e2fsck's
            // pass 1 clears it.
            fixed[k] = crate::volume::edit::edit_inode(fs, overlay, dir, |m| {
                m.set_flags(m.flags() & !crate::fs::inode::flags::INDEX);
            })?;
            staged |= fixed[k];
        } else if table::is(p.code, Fixer::Rehash) {
            rebuild.entry(dir).or_default().push(k);
        } else {
            holes.entry(dir).or_default().push(k);
        }
    }
    for dir in &dot_fixed {
        rebuild.remove(dir);
    }
    // Holes first: a rebuild writes into the blocks the directory has.
    for (dir, ks) in holes {
        if dirhole::fix(fs, state, overlay, dir)? {
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
        if rehash::rebuild(fs, state, overlay, dir, &mut links)? {
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

/// The link count inode `ino`, still in use, should carry when `n`
/// entries name it.
///
/// Never 0: a count of 0 on an inode in use reads as a deleted inode
/// with zero dtime to the next round's pass 1, which clears it, while
/// e2fsck's pass 4 reconnects an in-use inode nothing names. A round
/// that drops the last entry of a file (a duplicate name, a second link
/// to a directory, a '..' moved) leaves it with one link, and the next
/// round's pass 4 finds it unattached and reconnects it to /lost+found.
fn link_target(state: &State, ino: u32, n: i64) -> u64 {
    if state.inode_dir.get(Ino(ino)) && n > LINK_MAX {
        1
    } else {
        n.max(1) as u64
    }
}

/// Sets the large_file feature, needed once a regular file is 2 GiB or
/// more (a revision 0 superblock made dynamic first).
fn set_large_file(fs: &Fs, overlay: &mut Overlay) -> super::Result<()> {
    Ok(edit_superblock(fs, overlay, |sb| {
        sb.make_dynamic();
        sb.set_ro_compat(sb.ro_compat() | ro_compat::LARGE_FILE);
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_in_use_never_gets_a_link_count_of_zero() {
        let state = State::new(1024, 64);
        state.inode_used.set(Ino(12));
        state.inode_used.set(Ino(13));
        state.inode_dir.set(Ino(13));
        // The one entry naming file 12 dropped this round: one link is
        // left, for the next round's pass 4 to find it unattached.
        assert_eq!(link_target(&state, 12, 1 - 1), 1);
        assert_eq!(link_target(&state, 12, -1), 1);
        assert_eq!(link_target(&state, 12, 3), 3);
        assert_eq!(link_target(&state, 13, 0), 1);
        assert_eq!(link_target(&state, 13, 70000), 1);
        assert_eq!(link_target(&state, 13, 5), 5);
    }
}
