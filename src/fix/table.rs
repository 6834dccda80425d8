//! The fix table: for every problem code pfsck fixes, the fixer that
//! stages it, where in a repair's rounds that happens and the policy
//! flags, as e2fsck's problem table drives its own. The planner
//! (`plan.rs`) and the interactive questions read policy here only;
//! a code without a row is not fixed (and not asked about).
//!
//! Whether `-p` may fix a problem is not a flag of this table: it is
//! e2fsck's PREEN_OK for the e2fsck code a problem names
//! (`check::e2fsck_map::preen_ok`), which the report needs too.
//!
//! A new fix: add its row (and a `Fixer` if no fixer stages it yet), and
//! call the fixer from the phase of `plan.rs` its row names.

use crate::check::problem::Code;

/// Who stages the fix of a problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fixer {
    /// The view the check read through (`check::orphan`, and the replay
    /// `-y` makes of a journal without needs_recovery): staging the view
    /// does it; never chosen nor asked about.
    View,
    /// Staged over the journal replay, before the passes' fixes
    /// (`journal_inode::clear_v2_fields`, `mmp::rewrite`).
    WithReplay,
    /// The external journal device's own superblock checksum: written on
    /// that device by the session after the file system's commit
    /// (`Session::reset_external`); the plan only marks it fixed.
    ExternalJournal,
    /// The primary superblock and descriptors from the backup the check
    /// read (`superblock::restore_primary`).
    SuperFromBackup,
    /// The journal inode from the superblock's backup of it
    /// (`journal_inode::restore_from_backup`).
    JournalFromBackup,
    /// A journal kept in a visible file moved to the reserved inode
    /// (`journal_inode::move_to_hidden`).
    JournalToHidden,
    /// Visible user and group quota files moved to their reserved
    /// inodes (`quota::move_to_hidden`).
    QuotaToHidden,
    /// The bad-blocks inode cleared (`blockmap::clear_bad_blocks_inode`).
    BadBlocksInode,
    /// An inode's block map or extent tree (`blockmap::fix`, per inode);
    /// with [`RELOCATE`], bitmaps and inode tables moved first.
    BlockMap,
    /// Pass 1D's copies of multiply-claimed blocks (`dup::fix`).
    Dup,
    /// Pass 1E: a block map on bigalloc as an extent tree, an extent tree
    /// rebuilt shorter or narrower (`extents.rs`).
    Extents,
    /// Whole inodes: cleared, or bad flags and fields (`clear.rs`).
    Clear,
    /// The resize inode: recreated (`resize.rs`) or its feature dropped
    /// (`superblock::fix_resize_inode`).
    ResizeInode,
    /// /lost+found created, an encrypted one replaced (`lostfound.rs`).
    LostFound,
    /// Reconnection into /lost+found (`lostfound::fix`).
    Tree,
    /// One directory entry or '..' (`dir::fix`).
    Entry,
    /// An unusable journal replaced (`journal_inode::recreate`).
    NewJournal,
    /// An orphan file that cannot be set up made anew
    /// (`orphan_file::recreate`).
    NewOrphanFile,
    /// orphan_present without orphan_file cleared
    /// (`orphan_file::clear_present`).
    OrphanPresent,
    /// One field of one inode (`inode::fix`).
    Field,
    /// The large_file feature set.
    Feature,
    /// The superblock's inodes count (`superblock::fix_inodes_count`).
    InodesCount,
    /// The superblock's first_meta_bg (`superblock::fix_first_meta_bg`).
    FirstMetaBg,
    /// A flag or feature of the superblock alone (`superblock::fix_flag`).
    SuperFlag,
    /// A new UUID, alone in its round: descriptor checksums and backups
    /// follow it (`superblock::new_uuid`).
    NewUuid,
    /// The orphan_file feature without a usable inode, dropped
    /// (`superblock::drop_orphan_file`).
    OrphanFile,
    /// A quota inode number cleared in the superblock (`quota::clear_inum`).
    QuotaInode,
    /// A quota file rewritten from the counted usage (`quota::rewrite`).
    QuotaFile,
    /// Bitmaps, group and superblock counts, flags and checksums,
    /// recomputed (`volume::summary`).
    Summary,
    /// A group's never-used mark lowered to 0, or its INODE_UNINIT flag
    /// cleared, over the summary (a directory entry names an inode behind
    /// them: the next check reads those inodes, as e2fsck's restart does).
    UnusedMark,
    /// Whole directory blocks salvaged, checksum tails (`dirblock.rs`).
    DirBlock,
    /// Directories rebuilt with their htree index (`rehash.rs`).
    Rehash,
}

/// Where a fixer's work falls in a repair's rounds (see `plan.rs`), in
/// the order the planner stages them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Phase {
    /// With the journal replay, before any fix.
    Replay,
    /// In a round of its own, before any other fix.
    Alone,
    /// Pass 1's whole-inode fixes, first in the main round.
    Inodes,
    /// /lost+found, reconnections and directory entries.
    Tree,
    /// Block maps, one inode at a time.
    Maps,
    /// Single fields of inodes and of the superblock, in problem order.
    Fields,
    /// Quota files, in a round that fixes nothing else but the summary.
    Quota,
    /// A new journal.
    Journal,
    /// The summary, recomputed last.
    Summary,
    /// Once passes 0 and 1 have nothing left to fix, in a round of its
    /// own: pass 1D, else the directory structure.
    Late,
}

impl Fixer {
    pub(super) fn phase(self) -> Phase {
        use Fixer::*;
        match self {
            View | WithReplay | ExternalJournal => Phase::Replay,
            SuperFromBackup | JournalFromBackup | JournalToHidden | QuotaToHidden
            | BadBlocksInode | NewUuid => Phase::Alone,
            Clear | ResizeInode | Extents => Phase::Inodes,
            LostFound | Tree | Entry => Phase::Tree,
            BlockMap => Phase::Maps,
            Field | Feature | InodesCount | FirstMetaBg | SuperFlag | OrphanFile
            | OrphanPresent | QuotaInode => Phase::Fields,
            QuotaFile => Phase::Quota,
            NewJournal | NewOrphanFile => Phase::Journal,
            Summary | UnusedMark => Phase::Summary,
            Dup | DirBlock | Rehash => Phase::Late,
        }
    }
}

/// Right on bigalloc too: the fix allocates nothing, or charges a whole
/// cluster for what it allocates (quota files), or keeps the cluster
/// rules (pass 1D's copies, pass 1E's extent trees). Fixes without it
/// (block maps, cleared inodes, directory rebuilds and holes) still think
/// in blocks and are left for a later run.
pub(super) const BIGALLOC: u8 = 1;
/// Fixed alone in its round, the next round's check judging the result:
/// it changes what the passes could read.
pub(super) const ALONE: u8 = 2;
/// A pass 1 problem fixed after pass 1D, as e2fsck fixes it: a block
/// breaking the cluster rules is claimed twice and copied by pass 1D
/// ("will fix in pass 1B"), a block map on bigalloc is rebuilt as an
/// extent tree by pass 1E once the sharing is resolved.
pub(super) const AFTER_1D: u8 = 4;
/// A checksum of a block that waits, while the block is multiply-claimed,
/// for pass 1D to give each owner a copy.
pub(super) const WAITS_FOR_COPY: u8 = 8;
/// Asks to move bitmaps or an inode table (`blockmap::bitmaps_to_move`).
pub(super) const RELOCATE: u8 = 16;
/// A directory hole, closed by `dirhole.rs` in the late round (the main
/// round leaves it to the block map fix).
pub(super) const HOLE: u8 = 32;

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    pub code: Code,
    pub fixer: Fixer,
    pub flags: u8,
}

impl Entry {
    pub(super) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

const fn row(code: Code, fixer: Fixer, flags: u8) -> Entry {
    Entry { code, fixer, flags }
}

use Fixer as F;

const S: u8 = BIGALLOC;

/// The table, grouped by fixer.
const TABLE: &[Entry] = &[
    // Orphan processing, done by staging the view the check read through.
    row(Code::OrphansPending, F::View, 0),
    row(Code::OrphansPendingHarmless, F::View, 0),
    row(Code::OrphanFileBlockDirty, F::View, 0),
    row(Code::OrphanPresentClean, F::View, 0),
    // Replayed anyway by -y, with the journal the view reads through.
    row(Code::JournalNeedsRecoveryNoFlag, F::View, 0),
    row(Code::JournalStrayV2Fields, F::WithReplay, 0),
    row(Code::MmpBadMagic, F::WithReplay, 0),
    row(Code::MmpChecksum, F::WithReplay, 0),
    row(Code::JournalExternalChecksum, F::ExternalJournal, S),
    row(Code::SbUsedBackup, F::SuperFromBackup, ALONE),
    row(
        Code::JournalInodeFromBackup,
        F::JournalFromBackup,
        ALONE | S,
    ),
    row(Code::JournalVisible, F::JournalToHidden, ALONE | S),
    row(Code::QuotaVisible, F::QuotaToHidden, ALONE | S),
    row(Code::BadBlocksInodeInBadBlock, F::BadBlocksInode, ALONE),
    // Bitmaps on bad blocks, outside their group or on other metadata.
    row(Code::BadBlockInMetadata, F::BlockMap, RELOCATE | ALONE),
    row(
        Code::GdBlockBitmapLocation,
        F::BlockMap,
        RELOCATE | ALONE | S,
    ),
    row(
        Code::GdInodeBitmapLocation,
        F::BlockMap,
        RELOCATE | ALONE | S,
    ),
    row(Code::GdInodeTableLocation, F::BlockMap, RELOCATE | ALONE),
    row(Code::GdMetadataOverlap, F::BlockMap, RELOCATE | ALONE | S),
    row(Code::InodeIllegalBlock, F::BlockMap, S),
    row(Code::InodeTooManyIllegalBlocks, F::BlockMap, 0),
    row(Code::InodeExtentHeader, F::BlockMap, S),
    row(Code::InodeExtentTreeUnwalkable, F::BlockMap, S),
    row(Code::InodeExtentTreeShared, F::BlockMap, S),
    row(Code::InodeBlockMapShared, F::BlockMap, 0),
    row(Code::InodeExtentBad, F::BlockMap, S),
    row(Code::InodeExtentOrder, F::BlockMap, S),
    row(
        Code::InodeExtentNodeChecksum,
        F::BlockMap,
        WAITS_FOR_COPY | S,
    ),
    row(Code::InodeExtentNodeBad, F::BlockMap, S),
    row(Code::InodeExtentIndexEnd, F::BlockMap, S),
    row(Code::InodeExtentPastEof, F::BlockMap, S),
    // On bigalloc too: an extent moved down keeps its cluster offsets.
    row(Code::InodeDirHole, F::BlockMap, HOLE | S),
    row(Code::DirHole, F::BlockMap, HOLE),
    // After pass 1's size and i_blocks, in problem order, as e2fsck's
    // pass 2 gives the hole its block after pass 1 fixed those.
    row(Code::DirHoleCleared, F::Field, 0),
    row(Code::HtreeUnexpectedBlock, F::Field, 0),
    row(Code::DupBlocks, F::Dup, AFTER_1D | S),
    row(Code::ClusterMisaligned, F::Dup, AFTER_1D | S),
    row(Code::InodeBigallocBlockMap, F::Extents, AFTER_1D | S),
    row(Code::InodeBlockMapToExtents, F::Extents, AFTER_1D | S),
    // e2fsck's forced rebuild of a tree deeper than it can be.
    row(Code::InodeExtentTooDeep, F::Extents, AFTER_1D | S),
    row(Code::ExtentTreeShorter, F::Extents, AFTER_1D | S),
    row(Code::ExtentTreeNarrower, F::Extents, AFTER_1D | S),
    row(Code::InodeGarbage, F::Clear, S),
    row(Code::InodeEncryptCorrupt, F::Clear, S),
    row(Code::InodeBadMode, F::Clear, S),
    row(Code::InodeDeviceBlocks, F::Clear, S),
    row(Code::InodeFastSymlink, F::Clear, S),
    row(Code::SpecialImmutable, F::Clear, S),
    row(Code::InodeBadSize, F::Clear, S),
    row(Code::InodeBadFlags, F::Clear, S),
    row(Code::InodeTimesPre1970, F::Clear, S),
    row(Code::InodeFileAcl, F::Clear, S),
    row(Code::InodeImagic, F::Clear, S),
    row(Code::InodeExtraIsize, F::Clear, S),
    row(Code::InodeXattrInInode, F::Clear, S),
    row(Code::XattrHash, F::Clear, S),
    row(Code::XattrEaInodeInvalid, F::Clear, S),
    row(Code::XattrEaInodeNoFlag, F::Clear, S),
    row(Code::XattrValueSize, F::Clear, S),
    row(Code::XattrBlockHeader, F::Clear, S),
    row(Code::XattrBlockEntries, F::Clear, S),
    row(Code::XattrBlockChecksum, F::Clear, S),
    row(Code::XattrBlockRefcount, F::Clear, S),
    row(Code::InodeEaInodeRefs, F::Clear, S),
    row(Code::InodeInlineNoFeature, F::Clear, S),
    row(Code::InodeInlineData, F::Clear, S),
    row(Code::InodeExtentsNoFeature, F::Clear, S),
    row(Code::InodeExtentFormatNoFeature, F::Clear, S),
    row(Code::DirNlinkFeature, F::Clear, S),
    row(Code::FeatureLargeDirs, F::Clear, S),
    row(Code::InodeReallyDir, F::Clear, S),
    row(Code::RootMissing, F::Clear, 0),
    row(Code::RootNotDirectory, F::Clear, 0),
    row(Code::InodeReservedBad, F::Clear, S),
    row(Code::BadBlocksInodeIndirect, F::Clear, S),
    row(Code::InodeIndexNotDir, F::Clear, S),
    row(Code::InodeIndexNoFeature, F::Clear, S),
    row(Code::SbResizeInodeNoFeature, F::ResizeInode, 0),
    row(Code::LostFoundMissing, F::LostFound, S),
    row(Code::LostFoundEncrypted, F::LostFound, S),
    row(Code::LostFoundNotDir, F::LostFound, S),
    row(Code::LostFoundInlineData, F::LostFound, S),
    row(Code::InodeUnattached, F::Tree, S),
    row(Code::InodeUnattachedZero, F::Tree, S),
    row(Code::DirUnconnected, F::Tree, S),
    row(Code::LostFoundFull, F::Tree, S),
    row(Code::LostFoundFullP4, F::Tree, S),
    row(Code::DirEntryDeletedInode, F::Entry, S),
    row(Code::DirEntryBadInode, F::Entry, S),
    row(Code::DirEntryReservedInode, F::Entry, S),
    row(Code::DirEntryInodeInBadBlock, F::Entry, S),
    row(Code::DirEntryLinkToRoot, F::Entry, S),
    row(Code::DirEntryLinkToDir, F::Entry, S),
    row(Code::DirEntryFileType, F::Entry, S),
    row(Code::DirEntryFileTypeUnset, F::Entry, S),
    row(Code::DirEntryFileTypeSet, F::Entry, S),
    row(Code::DirEntryIllegalChars, F::Entry, S),
    row(Code::DirEntryBadUtf8, F::Entry, S),
    row(Code::DirEntryEncryptedShort, F::Entry, S),
    row(Code::DirEntryUnencrypted, F::Entry, S),
    row(Code::DirEntryPolicyMismatch, F::Entry, S),
    row(Code::DirEntryEaInode, F::Entry, S),
    row(Code::DirDotDotWrong, F::Entry, S),
    row(Code::DirBlockChecksum, F::Entry, S | WAITS_FOR_COPY),
    row(Code::JournalInodeInvalid, F::NewJournal, S),
    row(Code::JournalSuperblockCorrupt, F::NewJournal, S),
    row(Code::InodeChecksum, F::Field, S),
    row(Code::InodeLinkCount, F::Field, S),
    row(Code::DirLinkOverflowExact, F::Field, S),
    row(Code::InodeDtimeSet, F::Field, S),
    row(Code::InodeZeroDtimeDeleted, F::Field, S),
    row(Code::InodeOrphanInUse, F::Field, S),
    row(Code::InodeISize, F::Field, S),
    row(Code::InodeIBlocks, F::Field, S),
    row(Code::InodeEncryptNoXattr, F::Field, S),
    row(Code::InodeCasefold, F::Field, S),
    row(Code::InodeCasefoldNonDir, F::Field, S),
    row(Code::InodeEaInodeNonReg, F::Field, S),
    row(Code::InodeEaInodeSpurious, F::Field, S),
    row(Code::FeatureLargeFiles, F::Feature, S),
    row(Code::SbInodesCount, F::InodesCount, S),
    row(Code::SbFirstMetaBg, F::FirstMetaBg, 0),
    row(Code::SbNoUuid, F::NewUuid, ALONE | S),
    row(Code::SbTestFs, F::SuperFlag, S),
    row(Code::SbJournalDevHint, F::SuperFlag, S),
    row(Code::SbDirHashHint, F::SuperFlag, S),
    row(Code::SbHurdFiletype, F::SuperFlag, S),
    row(Code::Sb64bitNoExtents, F::SuperFlag, S),
    row(Code::SbExtentsForConversion, F::SuperFlag, S),
    row(Code::InodeEaInodeFlag, F::SuperFlag, S),
    row(Code::SbCsumSeedNoCsum, F::SuperFlag, S),
    row(Code::SbRev0Features, F::SuperFlag, S),
    row(Code::SbMetadataCsumAndGdtCsum, F::SuperFlag, S),
    row(Code::SbJournalBackupMissing, F::SuperFlag, S),
    row(Code::JournalInodeNoFeature, F::SuperFlag, S),
    row(Code::JournalRecoverNoJournal, F::SuperFlag, S),
    row(Code::SbLastMountFuture, F::SuperFlag, S),
    row(Code::SbLastWriteFuture, F::SuperFlag, S),
    row(Code::SbExtraIsize, F::SuperFlag, S),
    row(Code::OrphanFileInodeInvalid, F::OrphanFile, S),
    row(Code::OrphanFileNoJournal, F::OrphanFile, S),
    row(Code::OrphanPresentNoFile, F::OrphanPresent, S),
    row(Code::OrphanFileCorrupt, F::NewOrphanFile, 0),
    row(Code::SbQuotaInode, F::QuotaInode, S),
    row(Code::SbInodeFieldNoFeature, F::QuotaInode, S),
    row(Code::QuotaUsage, F::QuotaFile, S),
    row(Code::QuotaEntryMissing, F::QuotaFile, S),
    row(Code::QuotaFileBad, F::QuotaFile, S),
    row(Code::BlockBitmapDiff, F::Summary, S),
    row(Code::InodeBitmapDiff, F::Summary, S),
    row(Code::GroupFreeBlocks, F::Summary, S),
    row(Code::GroupFreeInodes, F::Summary, S),
    row(Code::GroupDirsCount, F::Summary, S),
    row(Code::SuperFreeBlocks, F::Summary, S),
    row(Code::SuperFreeInodes, F::Summary, S),
    row(Code::BlockBitmapChecksum, F::Summary, S),
    row(Code::InodeBitmapChecksum, F::Summary, S),
    row(Code::BlockBitmapPadding, F::Summary, S),
    row(Code::InodeBitmapPadding, F::Summary, S),
    row(Code::GdChecksum, F::Summary, S),
    row(Code::GdFreeBlocksInvalid, F::Summary, S),
    row(Code::GdFreeInodesInvalid, F::Summary, S),
    row(Code::SbChecksum, F::Summary, S),
    row(Code::SbFreeBlocksInvalid, F::Summary, S),
    row(Code::SbFreeInodesInvalid, F::Summary, S),
    // Alone when the value is impossible: pass 1 skipped inodes.
    row(Code::GdItableUnused, F::Summary, S | ALONE),
    row(Code::GroupUninitFlags, F::Summary, S),
    row(Code::GdUninitWithoutCsum, F::Summary, S),
    row(Code::GdBlockUninitLastGroup, F::Summary, S),
    // An entry naming an inode its group's marks hide: the marks go and,
    // as e2fsck restarts, the next round reads those inodes.
    row(Code::DirEntryUnusedArea, F::UnusedMark, S),
    row(Code::DirEntryUninitGroup, F::UnusedMark, S),
    // e2fsck fixes the size before it reads the entries: the directory's
    // other problems wait for the next round's check.
    row(Code::DirInlineBad, F::DirBlock, S),
    row(Code::DirBlockCorrupt, F::DirBlock, S),
    // After its block's salvage, which it follows in the report.
    row(Code::DirEntryBadRecLen, F::DirBlock, S),
    row(Code::DirBlockNoTail, F::DirBlock, S),
    row(Code::DirEntryZeroLenName, F::DirBlock, S),
    row(Code::DirEntryLinkToDot, F::DirBlock, S),
    // Cleared in place, as e2fsck (no pass 3A); an inline directory is
    // rebuilt instead.
    row(Code::DirDotSecondEntry, F::DirBlock, S),
    row(Code::DirEntryDuplicate, F::Rehash, S),
    row(Code::DirRebuildDuplicate, F::Rehash, S),
    row(Code::DirDotMissing, F::Rehash, S),
    row(Code::DirDotDotMissing, F::Rehash, S),
    row(Code::DirDotBadInode, F::Rehash, S),
    row(Code::DirDotRecLen, F::Rehash, S),
    row(Code::DirDotNotTerminated, F::Rehash, S),
    row(Code::DirDotDotBadForm, F::Rehash, S),
    row(Code::HtreeRootInvalid, F::Rehash, S),
    row(Code::HtreeRootBad, F::Rehash, S),
    row(Code::HtreeHashVersion, F::Rehash, S),
    row(Code::HtreeDepth, F::Rehash, S),
    row(Code::HtreeLimit, F::Rehash, S),
    row(Code::HtreeCount, F::Rehash, S),
    row(Code::HtreeHashOrder, F::Rehash, S),
    row(Code::HtreeBadBlock, F::Rehash, S),
    row(Code::HtreeNodeChecksum, F::Rehash, WAITS_FOR_COPY | S),
    row(Code::HtreeHashRange, F::Rehash, S),
    row(Code::HtreeBlockReferenced, F::Rehash, S),
    row(Code::HtreeNoIndexFlag, F::Rehash, S),
    row(Code::HtreeInvalid, F::Rehash, S),
    row(Code::HtreeLeafDepth, F::Rehash, S),
];

/// No row.
const NONE: u16 = u16::MAX;

/// Row of each code (by its index in `Code::ALL`), built at compile time;
/// a code given two rows fails the build.
#[allow(clippy::cast_possible_truncation)] // the assert keeps every row below NONE
static INDEX: [u16; Code::ALL.len()] = {
    let mut index = [NONE; Code::ALL.len()];
    assert!(TABLE.len() < NONE as usize);
    let mut i = 0;
    while i < TABLE.len() {
        let c = TABLE[i].code as usize;
        assert!(index[c] == NONE, "a code has two rows in the fix table");
        index[c] = i as u16;
        i += 1;
    }
    index
};

/// The row of `code`, if pfsck fixes it.
pub(super) fn entry(code: Code) -> Option<&'static Entry> {
    match INDEX[code as usize] {
        NONE => None,
        i => TABLE.get(i as usize),
    }
}

/// Its fixer.
pub(super) fn fixer(code: Code) -> Option<Fixer> {
    entry(code).map(|e| e.fixer)
}

/// Is `code`'s fixer `f`?
pub(super) fn is(code: Code, f: Fixer) -> bool {
    fixer(code) == Some(f)
}

/// Does `code`'s row carry `flag`?
pub(super) fn has(code: Code, flag: u8) -> bool {
    entry(code).is_some_and(|e| e.has(flag))
}

/// Can pfsck fix problems of this class yet (a fix a run chooses, so
/// asked about interactively)?
pub fn supported(code: Code) -> bool {
    fixer(code).is_some_and(|f| f != Fixer::View)
}

/// Does a repair fix problems of this class, chosen ([`supported`]) or
/// by staging the view the check read through (orphan processing)?
pub fn repaired(code: Code) -> bool {
    fixer(code).is_some()
}

/// Is this class fixed by rebuilding its directory (e2fsck's pass 3A)?
pub fn rebuilds_directory(code: Code) -> bool {
    is(code, Fixer::Rehash)
}

/// Is the fix right on bigalloc ([`BIGALLOC`])?
pub(super) fn cluster_safe(code: Code) -> bool {
    has(code, BIGALLOC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_found_by_their_code() {
        for e in TABLE {
            assert_eq!(entry(e.code).map(|r| r.code), Some(e.code));
        }
        assert!(entry(Code::SbCorrupt).is_none());
    }

    #[test]
    fn flags_fit_their_fixers() {
        for e in TABLE {
            if e.has(ALONE) {
                assert!(
                    e.fixer.phase() <= Phase::Alone || e.has(RELOCATE) || e.fixer == F::Summary
                );
            }
            if e.has(AFTER_1D) {
                assert!(matches!(e.fixer, F::Dup | F::Extents));
            }
            if e.has(HOLE) || e.has(RELOCATE) {
                assert_eq!(e.fixer, F::BlockMap);
            }
        }
        assert!(!supported(Code::OrphansPending));
        assert!(supported(Code::DirHole) && !cluster_safe(Code::DirHole));
    }
}
