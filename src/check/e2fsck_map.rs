//! Which e2fsck 1.47.4 code each pfsck problem stands for.
//!
//! [`codes`] lists, per pfsck code, the e2fsck codes it can stand for:
//! the first unless the check named another one where it found the
//! problem (`Problem::e2fsck`; e2fsck has one code per variant where
//! pfsck has one code and a detail; and for the codes of `NAMED_ONLY`
//! only there). [`refs`] turns a problem into the
//! (code, inode, block) triples e2fsck's problem log would hold for it,
//! which the differential tests compare; most problems give one, a pass
//! 5 bitmap difference gives one per run, as e2fsck logs each.
//!
//! pfsck codes that e2fsck has no code for (notes about the journal
//! replay view, pfsck's refusals) are listed in [`NONE`].

use super::catalogue;
use super::problem::{Code, Problem};
use crate::fs::num::{Blk, Group, Ino};
use crate::narrow;

/// The e2fsck codes `code` can stand for, the usual one first; empty for
/// the codes of [`NONE`].
pub fn codes(code: Code) -> &'static [u32] {
    use Code::*;
    match code {
        SbCorrupt => &[0x000004, 0x00000B, 0x000050, 0x000044],
        SbBlocksCountTooBig | SbSizeAbort => &[0x000005],
        SbFirstDataBlock => &[0x000008],
        SbInodesCount => &[0x00000D],
        SbFirstMetaBg => &[0x000049],
        SbFreeBlocksInvalid => &[0x000040],
        SbFreeInodesInvalid => &[0x00003F],
        SbFirstIno => &[0x00000B],
        SbLastMountFuture => &[0x000031, 0x00003C],
        SbLastWriteFuture => &[0x000032, 0x00003D],
        SbHugeFileNoLargeFile => &[0x020033],
        SbExtraIsize => &[0x00004D, 0x00004E],
        SbMetadataCsumAndGdtCsum => &[0x000046],
        SbDescSize => &[0x00000B],
        SbResizeInodeNoFeature => &[0x000030, 0x00002E, 0x00002F, 0x000051],
        SbQuotaInode => &[0x00004F],
        SbInodeFieldNoFeature => &[0x020002, 0x010063, 0x010090, 0x050009],
        SbBlocksPerGroupInvalid => &[0x000007],
        SbNoUuid => &[0x000009],
        SbTestFs => &[0x00003B],
        SbJournalDevHint => &[0x000033],
        SbDirHashHint => &[0x000034],
        SbHurdFiletype => &[0x00000E],
        Sb64bitNoExtents => &[0x000048],
        SbCsumSeedNoCsum => &[0x00004B],
        SbRev0Features => &[0x00001A],
        SbJournalBackupMissing => &[0x00002D],
        JournalVisible => &[0x000028],
        QuotaVisible => &[0x000041],
        GdBlockBitmapLocation => &[0x000001],
        GdInodeBitmapLocation => &[0x000002],
        GdInodeTableLocation => &[0x000003],
        GdChecksum => &[0x000035],
        GdUninitWithoutCsum => &[0x000036],
        GdItableUnused => &[0x000038],
        GdMetadataOverlap => &[0x010007, 0x010008, 0x010009, 0x010021],
        GdBlockUninitLastGroup => &[0x000039],
        JournalSuperblockCorrupt => &[0x000015, 0x00000F],
        JournalInodeInvalid => &[0x00000F],
        JournalFeatureUnsupported => &[0x000026, 0x000025],
        JournalVersionUnsupported => &[0x000027],
        JournalInodeNoFeature => &[0x000016],
        JournalChecksum => &[0x000015],
        JournalNeedsRecoveryNoFlag => &[0x000018],
        JournalRecoverNoJournal => &[0x000017],
        JournalTransactionCorrupt => &[0x00003A],
        JournalExternalBad => &[0x000012, 0x000013, 0x000010],
        JournalExternalChecksum => &[0x00004A],
        JournalExternalCannotProceed => &[0x000011],
        JournalInodeFromBackup => &[0x00000F],
        JournalStrayV2Fields => &[0x00002A],
        MmpBlockInvalid => &[0x000042],
        MmpBadMagic => &[0x000043],
        MmpChecksum => &[0x000047],
        OrphanReleased => &[0x000020],
        OrphanFileBlockDirty => &[0x06000C],
        OrphanPresentClean => &[0x06000D],
        OrphanFileWrongSize => &[0x06000F],
        OrphanFileHole => &[0x060010],
        OrphanFileCorrupt => &[0x060009],
        OrphanPresentNoFile => &[0x06000E],
        OrphanFileNoJournal => &[0x060007],
        OrphanNotProcessed => &[0x000023, 0x000024, 0x000052, 0x000053, 0x000054, 0x000055],
        OrphanBlockIllegal => &[0x000021],
        OrphanBlockFreed => &[0x000022],
        _ => inode_codes(code),
    }
}

/// Pass 1 and 1B problems.
fn inode_codes(code: Code) -> &'static [u32] {
    use Code::*;
    match code {
        InodeChecksum => &[0x010068],
        InodeBadMode => &[0x020012],
        InodeDtimeSet => &[0x010005, 0x010002],
        InodeZeroDtimeDeleted => &[0x010004],
        InodeBadFlags => &[
            0x010077, 0x01005C, 0x02000D, 0x020010, 0x020011, 0x020044, 0x010078, 0x010079,
            0x01007A,
        ],
        InodeTimesPre1970 => &[0x010082],
        InodeExtentsNoFeature => &[0x01005A],
        InodeExtentFormatNoFeature => &[0x01005B],
        InodeInlineNoFeature => &[0x010070, 0x01006F],
        InodeIllegalBlock => &[0x01000E, 0x010012, 0x010044, 0x010045, 0x010046],
        InodeTooManyIllegalBlocks => &[0x010011],
        InodeIndirectOnMetadata => &[0x010071],
        InodeISize => &[0x01000C],
        InodeIBlocks => &[0x01000D],
        ClusterMisaligned => &[0x010074],
        InodeBigallocBlockMap => &[0x010080],
        InodeExtentHeader => &[0x010081, 0x01005F],
        InodeExtentBad => &[0x010058, 0x010059, 0x010066, 0x01007D, 0x010044, 0x010073],
        InodeExtentOrder => &[0x01005E],
        InodeExtentNodeChecksum => &[0x01006A],
        InodeExtentTooDeep => &[0x01007F],
        ExtentTreeShorter => &[0x014006],
        ExtentTreeNarrower => &[0x014007],
        InodeExtentNodeBad => &[0x01005F],
        InodeExtentIndexEnd => &[0x01006D],
        InodeExtentPastEof => &[0x01006E],
        InodeFastSymlink => &[0x020031, 0x01005D],
        InodeDeviceBlocks => &[0x020018, 0x020019, 0x020025, 0x020026, 0x010076],
        InodeInlineData => &[0x010075, 0x02004E],
        InodeExtraIsize => &[0x01004F],
        InodeFileAcl => &[0x020032, 0x020048, 0x02000E],
        InodeXattrInInode => &[0x010053, 0x010050, 0x010051, 0x010052, 0x010054, 0x010069],
        XattrBlockHeader => &[0x01003A, 0x010039, 0x01003E],
        XattrBlockEntries => &[0x010040, 0x010041, 0x010042],
        XattrBlockChecksum => &[0x01006C],
        XattrBlockRefcount => &[0x01003C],
        XattrHash => &[0x010054],
        InodeReservedBad => &[
            0x010003, 0x010065, 0x01008F, 0x010035, 0x010034, 0x010062, 0x010063,
        ],
        RootNotDirectory => &[0x010001],
        InodeHugeFileNoFeature => &[0x020044],
        InodeLargeFileNoFeature => &[0x020033],
        InodeIndexNoFeature => &[0x010047],
        InodeIndexNotDir => &[0x010048],
        FeatureLargeDirs => &[0x020039],
        InodeImagic => &[0x01002F],
        InodeInUseBitmapClear => &[0x020047],
        InodeBadSize => &[0x02000F, 0x010032, 0x010006],
        InodeTableUnreadable => &[0x010028],
        InodeEaInodeFlag => &[0x010092],
        InodeCasefold => &[0x010089],
        InodeCasefoldNonDir => &[0x010088],
        InodeEaInodeNonReg => &[0x010091],
        InodeEncryptNoXattr => &[0x01008A],
        InodeEncryptCorrupt => &[0x01008B],
        InodeOrphanInUse => &[0x010036],
        BadBlockInMetadata => &[0x010019, 0x01001A, 0x01000A, 0x01000B],
        BadBlockInBackup => &[0x01001B, 0x01001C],
        BadBlockUnnamed => &[0x01001D],
        BadBlocksInodeInBadBlock => &[0x01007B],
        BadBlocksInodeIndirect => &[0x010015, 0x01004D],
        HtreeRootInvalid => &[0x010049, 0x01004A, 0x01004B, 0x01004C, 0x01008D, 0x01008E],
        XattrEaInodeInvalid => &[0x010083],
        XattrEaInodeNoFlag => &[0x010085, 0x010086],
        XattrValueSize => &[0x010053],
        InodeReallyDir => &[0x010055],
        InodeGarbage => &[0x010067],
        SpecialImmutable => &[0x010030],
        DupBlocks => &[0x011001],
        DupRescanFailed => &[0x011006],
        _ => dir_codes(code),
    }
}

/// Pass 2 to 5 problems, quota usage and the superblock a check fell
/// back to.
fn dir_codes(code: Code) -> &'static [u32] {
    use Code::*;
    match code {
        DirEntryBadRecLen => &[0x02001D],
        DirEntryBadInode => &[0x020002],
        DirEntryDeletedInode => &[0x020003],
        DirEntryLinkToDir => &[0x020006],
        DirEntryLinkToRoot => &[0x020007],
        DirEntryIllegalChars => &[0x020008],
        DirEntryZeroLenName => &[0x020030],
        DirEntryFileType => &[0x020028],
        DirEntryFileTypeUnset => &[0x020027],
        DirEntryFileTypeSet => &[0x020029],
        DirEntryReservedInode => &[0x020002],
        DirEntryDuplicate => &[0x020043],
        DirDotMissing => &[0x020009, 0x02000B],
        DirDotDotMissing => &[0x02000A, 0x02000C],
        DirDotBadInode => &[0x020001],
        DirDotRecLen => &[0x020024],
        DirDotDotBadForm => &[0x02000C],
        DirDotSecondEntry => &[0x02001A, 0x02001B],
        DirBlockChecksum => &[0x02004D],
        DirBlockNoTail => &[0x02004C],
        DirBlockCorrupt => &[0x020013],
        DirBlockUnreadable => &[0x020020],
        HtreeRootBad => &[0x02003C],
        HtreeHashVersion => &[0x01004A],
        HtreeDepth => &[0x01004C],
        HtreeLimit => &[0x02003D],
        HtreeCount => &[0x02003E],
        HtreeHashOrder => &[0x02003F],
        HtreeBadBlock => &[0x02003A],
        HtreeNodeChecksum => &[0x02004A, 0x020049],
        HtreeHashRange => &[0x020036, 0x020037],
        HtreeBlockReferenced => &[0x020034, 0x020035],
        HtreeNoIndexFlag => &[0x020038],
        HtreeInvalid => &[0x020038],
        DirInlineBad => &[0x02004E],
        DirInlineSizeStuck => &[0x02004F],
        DirEntryEncryptedShort => &[0x020050],
        DirEntryUnencrypted => &[0x020051],
        DirEntryPolicyMismatch => &[0x020052],
        DirEntryBadUtf8 => &[0x020053],
        DirEntryEaInode => &[0x020055],
        DirEntryUnusedArea => &[0x020047],
        DirEntryUninitGroup => &[0x020046],
        DirBlockEmpty => &[0x020013],
        DirHole | DirHoleCleared => &[0x020015],
        InodeBlockBitmapUnreadable => &[0x010057],
        HtreeUnexpectedBlock => &[0x020045],
        DirEntryLinkToDot => &[0x020004],
        DirDotNotTerminated => &[0x020016, 0x020017],
        DirEntryInodeInBadBlock => &[0x020005],
        HtreeLeafDepth => &[0x020040],
        FeatureLargeFiles => &[0x020033, 0x010033],

        RootMissing => &[0x030001],
        DirUnconnected => &[0x030003],
        DirDotDotWrong => &[0x030005],
        LostFoundMissing => &[0x030004],
        LostFoundNotDir => &[0x030017],
        LostFoundEncrypted => &[0x03001B],
        LostFoundInlineData => &[0x030018],
        DirMultipleParents => &[0x020006],
        DirRebuildDuplicate => &[0x020041, 0x020054, 0x020042],

        InodeUnattached => &[0x040002],
        InodeDirHole => &[0x010072],
        LostFoundFull | LostFoundFullP4 => &[0x030002],
        InodeUnattachedZero => &[0x040001],
        InodeLinkCount => &[0x040003],
        DirNlinkFeature => &[0x040006],
        DirLinkOverflowExact => &[0x040007],
        InodeEaInodeRefs => &[0x040005],
        InodeEaInodeSpurious => &[0x040008],

        BlockBitmapDiff => &[0x050004, 0x050005, 0x050014, 0x050015],
        InodeBitmapDiff => &[0x050008, 0x050009, 0x050016, 0x050017],
        GroupFreeBlocks => &[0x05000E],
        GroupFreeInodes => &[0x05000B],
        GroupDirsCount => &[0x05000C],
        SuperFreeBlocks => &[0x05000F],
        SuperFreeInodes => &[0x05000D],
        BlockBitmapChecksum => &[0x05001B],
        InodeBitmapChecksum => &[0x05001A],
        BlockBitmapPadding => &[0x050002],
        InodeBitmapPadding => &[0x050001],
        GroupUninitFlags => &[0x050018, 0x050019],
        QuotaUsage | QuotaEntryMissing | QuotaFileBad => &[0x060002],
        SbUsedBackup => &[0x000044, 0x000045],
        GdRejectedNoBackup => &[0x000045],
        _ => &[],
    }
}

/// pfsck codes with no e2fsck code: what e2fsck prints outside its
/// table (unsupported features, the backup superblock it falls back to,
/// its refusal to go on under `-n`), pfsck's notes on the journal replay
/// view it checks, and problems e2fsck does not look for.
pub const NONE: &[Code] = &[
    Code::SbOrphanList,
    Code::StoppedAtCorruptDir,
    Code::StoppedAtUnreadableDir,
    Code::StoppedAtUninitGroup,
    Code::StoppedAtOrphanFileInode,
    // e2fsck's aborts are outside its problem log (a fatal problem ends
    // it before the entry is written).
    Code::StoppedAtIllegalIndirect,
    Code::StoppedAtUnreadableExtent,
    // Its question (0x010016) is logged, by `refs`.
    Code::StoppedAtBadBlocksInode,
    Code::StoppedAtInodeTable,
    Code::StoppedAtUnreadableXattr,
    Code::StoppedAtInodeChecksumP2,
    Code::StoppedAtInodeChecksumP4,
    Code::StoppedAtNoDirInfo,
    // Its read of the directory block (0x020020) is logged, by `refs`.
    Code::StoppedAtRelocatedBitmap,
    // At the resize inode, its question (0x01004E) is logged, by `refs`.
    Code::StoppedAtInodeChecksumP1,
    Code::StoppedAtInodeChecksumP1B,
    Code::StoppedWithoutRoot,
    Code::SbFeatureUnsupported,
    Code::SbChecksum,
    Code::SbRevLevel,
    Code::SbNeedsRecovery,
    Code::GdFreeBlocksInvalid,
    Code::GdFreeInodesInvalid,
    Code::GdInodeUninitNotZeroed,
    Code::JournalExternalUnsupported,
    Code::JournalCannotProceed,
    // e2fsck's "Abort? yes" to 0x000025-0x000027 (the journal's version
    // or features unsupported).
    Code::JournalVersionAbort,
    // e2fsck prints its MMP refusals outside its table.
    Code::MmpCannotProceed,
    Code::MmpBusy,
    // e2fsck stops with an error reading that inode (exit 8) before it
    // asks anything about it.
    Code::OrphanFileInodeInvalid,
    Code::JournalAfterReplay,
    Code::JournalBlockChecksum,
    Code::JournalRecoveryFails,
    Code::JournalFastCommitReplay,
    Code::OrphansPending,
    Code::OrphansPendingHarmless,
    Code::InodeCompression,
    Code::InodeEncrypted,
    Code::BitmapUnreadable,
    // A valid tree deeper than pfsck's walk: e2fsck walks any depth.
    Code::InodeExtentTreeUnwalkable,
    // e2fsck walks every path through shared nodes, printing without end
    // under -n; under -y it clears the inode, as pfsck's repair does.
    Code::InodeExtentTreeShared,
    // Likewise for indirect blocks: e2fsck walks every path (a dup block
    // each time; with illegal pointers below, its -n prints without end).
    Code::InodeBlockMapShared,
    // e2fsck reports the target's own problem there (pfsck did in pass 1).
    Code::DirEntryBadInodeTarget,
    // -E bmap2extent's work, which e2fsck does without a problem: the
    // feature set in pass 0, each block map scheduled for pass 1E.
    Code::SbExtentsForConversion,
    Code::InodeBlockMapToExtents,
];

/// One entry of e2fsck's problem log: its code and the inode and block
/// its message names (absent where the message names none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ref {
    pub code: u32,
    pub ino: Option<u32>,
    pub blk: Option<u64>,
}

impl Ref {
    /// An entry naming no block.
    fn of(code: u32, ino: Option<u32>) -> Ref {
        Ref {
            code,
            ino,
            blk: None,
        }
    }
}

impl Problem {
    /// The e2fsck code this problem stands for, if e2fsck has one.
    pub fn e2fsck_code(&self) -> Option<u32> {
        self.e2fsck_override().or_else(|| {
            (!NAMED_ONLY.contains(&self.code))
                .then(|| codes(self.code).first().copied())
                .flatten()
        })
    }
}

/// The question e2fsck asks about `p`: its code's prompt, or, where that
/// code only informs, the prompt of the code e2fsck asks next;
/// `Prompt::Fix` where there is neither.
pub fn prompt(p: &Problem) -> catalogue::Prompt {
    use catalogue::Prompt;
    // A bitmap at block 0 e2fsck places anew without asking (0x010021):
    // pfsck asks as it does of any overlap.
    if p.code == Code::GdMetadataOverlap {
        return Prompt::Relocate;
    }
    let mut code = p.e2fsck_code();
    // The chain of follow-up codes is short; the bound only guards the
    // walk against a cycle.
    for _ in 0..4 {
        let Some(e) = code.and_then(catalogue::entry) else {
            break;
        };
        match e.prompt {
            Prompt::None if e.flags & catalogue::AFTER_CODE != 0 => code = Some(e.after),
            Prompt::None => break,
            other => return other,
        }
    }
    Prompt::Fix
}

/// Does e2fsck only state `p`, asking nothing about it (a problem of its
/// table with no prompt and no question asked next)? The question comes
/// later, about the whole object: pass 2's "Clear HTree index?" after an
/// htree's bad hashes and block references, pass 1D's after a cluster
/// that breaks bigalloc's rules. The superblock's and journal's such
/// problems stand in pfsck for a question e2fsck asks by other means, and
/// pass 1B's list of shared blocks prints in its own form.
pub fn message_only(p: &Problem) -> bool {
    use super::problem::Pass;
    // What e2fsck sets on its own before asking anything: stated.
    if matches!(
        p.code,
        Code::SbNoUuid
            | Code::SbDirHashHint
            | Code::SbJournalBackupMissing
            | Code::JournalVisible
            | Code::QuotaVisible
    ) {
        return true;
    }
    // A time stamp ahead of the clock by less than the fudge: set right
    // without a question.
    if matches!(p.e2fsck_code(), Some(0x00003C | 0x00003D)) {
        return true;
    }
    if matches!(p.spec().pass, Pass::Super) || p.code == Code::DupBlocks {
        return false;
    }
    p.e2fsck_code().and_then(catalogue::entry).is_some_and(|e| {
        e.kind == catalogue::Kind::Problem
            && e.prompt == catalogue::Prompt::None
            && e.flags & (catalogue::AFTER_CODE | catalogue::FATAL | catalogue::LATCH_MASK) == 0
    })
}

/// Is `p` a pass 1 or 2 notice (or a superblock time ahead of the
/// clock) that e2fsck still asks about, its answer
/// no leaving the file system consistent (a question with NO_OK: '.'
/// spanning free space, among others)?
pub fn asked_notice(p: &Problem) -> bool {
    use super::problem::{Pass, Severity};
    // Asked as the journal is loaded, or by the superblock check (the
    // extra inode sizes), before e2fsck's passes: its no (without NO_OK)
    // leaves -n's verdict clean.
    if matches!(p.code, Code::JournalExternalChecksum | Code::SbExtraIsize) {
        return true;
    }
    // And pass 0's superblock times ahead of the clock.
    let times = matches!(p.code, Code::SbLastMountFuture | Code::SbLastWriteFuture);
    if !(matches!(p.spec().pass, Pass::P1 | Pass::P2) || times)
        || p.spec().severity != Severity::Notice
    {
        return false;
    }
    p.e2fsck_code()
        .and_then(catalogue::entry)
        .is_some_and(|e| asks(e) && e.prompt != catalogue::Prompt::Null && e.no_ok())
}

/// Does e2fsck -p fix `p` without a word (PREEN_NOMSG: the bitmap and
/// free-count differences of pass 5, among others; what an option asked
/// for, [`requested`])?
pub fn preen_quiet(p: &Problem) -> bool {
    requested(p)
        || p.e2fsck_code()
            .and_then(catalogue::entry)
            .is_some_and(|e| e.flags & catalogue::PREEN_NOMSG != 0)
}

/// Is `p` work an option asked for rather than something found wrong
/// (`-E bmap2extent`: the extent feature set, a block map converted)?
/// e2fsck does it without a question or a word, under its pass 1E header,
/// and it is no correction (exit 0).
pub fn requested(p: &Problem) -> bool {
    matches!(
        p.code,
        Code::SbExtentsForConversion | Code::InodeBlockMapToExtents
    )
}

/// Is `p` asked before e2fsck marks the file system valid for its
/// passes, so that answering no leaves the verdict clean? Its journal
/// checks (`e2fsck -n` exits 0 on a journal inode without has_journal,
/// or a journal holding transactions without needs_recovery) and its
/// superblock quota fields come first; a kept quota field changes the
/// verdict only through what the passes then find, which the check marks
/// with `num2` 1. So are its questions about the resize feature and
/// inode (meta_bg with resize_inode, reserved GDT blocks or a resize
/// inode in use without the feature, an invalid resize inode): declined,
/// what pass 1 finds in the inode decides. The journal problems that stop
/// the check are fatal on their own.
pub fn before_valid(p: &Problem) -> bool {
    match p.code {
        Code::JournalInodeNoFeature
        | Code::JournalNeedsRecoveryNoFlag
        | Code::SbResizeInodeNoFeature
        | Code::SbJournalDevHint => true,
        Code::SbQuotaInode => p.args().num2 != Some(1),
        _ => false,
    }
}

/// Is `p` a fatal problem e2fsck meets after its library opened the file
/// system but before it marks it valid for its passes, so that its abort
/// also reports errors left (exit 12, not 8)? Features its own check
/// refuses (unknown compat ones, unknown ro_compat ones in a read-only
/// check, a casefold encoding it does not know) and an invalid MMP block
/// number it was not allowed to clear; the check marks them with `num` 1.
/// Also a stop whose own question -n declines (whether to go on past a
/// directory block it cannot read after a bitmap was placed anew).
pub fn aborts_unjudged(p: &Problem) -> bool {
    (matches!(p.code, Code::SbFeatureUnsupported | Code::MmpBlockInvalid)
        && p.args().num == Some(1))
        || p.code == Code::StoppedAtRelocatedBitmap
}

/// Is `p` a problem at which e2fsck -n gives up once its passes are
/// done (exit 8 added to theirs)? An orphan file inode number naming no
/// inode: e2fsck reads that inode after pass 5 to set the file up, and
/// the read fails. The check marks it with `num` 1 under -n.
pub fn stops_after(p: &Problem) -> bool {
    p.code == Code::OrphanFileInodeInvalid && p.args().num == Some(1)
}

/// Is `p` fixed without e2fsck marking the file system changed? Its
/// pass 0 resets a descriptor whose checksum fails (uninit marks,
/// unused-inodes count) in memory only, and its closing checksum pass
/// writes the descriptors: alone, that exits 0 without "MODIFIED". Uninit
/// marks without group checksums are cleared the same way. So are a new
/// UUID, the test_fs flag cleared and the dirhash hint added,
/// which it makes in pass 0 before its passes count what they fix, and
/// the superblock's times ahead of the clock (set in memory, written when
/// the superblock is). And an extent block's checksum alone: its extent
/// handle writes the block straight to the device. So does its journal
/// code the external journal device's superblock checksum.
pub fn unmarked_fix(p: &Problem) -> bool {
    matches!(
        p.code,
        Code::GdChecksum
            | Code::JournalExternalChecksum
            | Code::InodeExtentNodeChecksum
            | Code::GdUninitWithoutCsum
            | Code::SbNoUuid
            | Code::SbTestFs
            | Code::SbDirHashHint
            | Code::SbJournalBackupMissing
            | Code::JournalVisible
            | Code::QuotaVisible
            | Code::SbLastMountFuture
            | Code::SbLastWriteFuture
    )
}

/// Is `p` a question e2fsck answers by aborting (its "Abort? yes" of a
/// repair): a file system larger than its device, or an unsupported
/// journal version or feature, which the check marks so (`num2` 1) where
/// it stops a repair.
pub fn aborted(p: &Problem) -> bool {
    p.code == Code::SbSizeAbort
        || matches!(
            p.code,
            Code::JournalVersionUnsupported | Code::JournalFeatureUnsupported
        ) && p.args().num2 == Some(1)
}

/// Is `p` an offer rather than a fix (NOT_A_FIX: pass 1E's optimisation
/// of an extent tree)? e2fsck asks it in every mode, and neither answer
/// changes the exit code.
pub fn not_a_fix(p: &Problem) -> bool {
    p.e2fsck_code()
        .and_then(catalogue::entry)
        .is_some_and(|e| e.flags & catalogue::NOT_A_FIX != 0)
}

/// Does e2fsck -n leave `p` unsaid (NO_NOMSG: the file type it would set
/// on an entry that has none)?
pub fn no_quiet(p: &Problem) -> bool {
    p.e2fsck_code()
        .and_then(catalogue::entry)
        .is_some_and(|e| e.flags & catalogue::NO_NOMSG != 0)
}

/// May `-p` fix `p` without asking? e2fsck's flag (PREEN_OK) on the code
/// the problem stands for, where that code asks a question or is an item
/// of a latch group (whose question carries the same flag); pfsck's own
/// table where e2fsck has no such code (a message, whose answer comes
/// from the question asked after it, or no code at all).
pub fn preen_ok(p: &Problem) -> bool {
    match p.e2fsck_code().and_then(catalogue::entry) {
        Some(e) if (asks(e) || latched(e)) && !PREEN_OWN.iter().any(|(c, _)| *c == p.code) => {
            preen_fixes(e)
        }
        _ => p.spec().preen_ok,
    }
}

/// Preen fixes what is PREEN_OK, but not what is also PREEN_NO: that
/// one preen leaves alone without stopping (pfsck: a notice).
fn preen_fixes(e: &catalogue::Entry) -> bool {
    e.preen_ok() && e.flags & catalogue::PREEN_NO == 0
}

fn asks(e: &catalogue::Entry) -> bool {
    e.kind == catalogue::Kind::Problem && e.prompt != catalogue::Prompt::None
}

fn latched(e: &catalogue::Entry) -> bool {
    e.kind == catalogue::Kind::Problem && e.flags & catalogue::LATCH_MASK != 0
}

/// Codes whose preen flag stays pfsck's own, with the reason.
const PREEN_OWN: &[(Code, &str)] = &[];

/// Notices that stop `-p` all the same: pass 0 questions whose no leaves
/// the verdict clean, but which e2fsck asks without PREEN_OK, so its
/// preen stops there (exit 4).
pub fn halts_preen(p: &Problem) -> bool {
    matches!(p.code, Code::SbExtraIsize | Code::SbSizeAbort)
}

/// What e2fsck does, and so logs, differently in a repair and in a
/// read-only check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    /// `-n`: e2fsck neither replays the journal nor releases orphans,
    /// does not look for lost+found, leaves out-of-range superblock counts
    /// and quota files unasked about.
    ReadOnly,
    Repair,
}

/// Problems e2fsck only logs when it repairs (see [`Run::ReadOnly`]).
const REPAIR_ONLY: &[Code] = &[
    Code::SbNoUuid,
    Code::SbTestFs,
    Code::SbDirHashHint,
    Code::SbHurdFiletype,
    Code::SbRev0Features,
    Code::SbJournalBackupMissing,
    Code::JournalVisible,
    Code::QuotaVisible,
    Code::OrphanReleased,
    Code::OrphanNotProcessed,
    Code::OrphanBlockIllegal,
    Code::OrphanBlockFreed,
    Code::JournalTransactionCorrupt,
    Code::SbFreeBlocksInvalid,
    Code::SbFreeInodesInvalid,
    Code::LostFoundMissing,
    Code::LostFoundNotDir,
    Code::LostFoundEncrypted,
    Code::LostFoundInlineData,
    Code::LostFoundFull,
    Code::LostFoundFullP4,
    // Pass 1 of e2fsck -n keeps an illegal block it may not clear out of
    // its list of directory blocks.
    Code::DirHoleCleared,
    Code::HtreeUnexpectedBlock,
];

/// Is `c` a problem e2fsck only logs when it repairs ([`Run::ReadOnly`])?
pub fn repair_only(c: Code) -> bool {
    REPAIR_ONLY.contains(&c)
}

/// Codes that stand for their e2fsck code only where the check names it:
/// e2fsck asks once per quota type to rewrite its file, and reports the
/// ids themselves outside its table.
///
/// A backup superblock stands for e2fsck's failed open of the primary
/// only when pfsck tried the primary (not one named with `-b`).
///
/// A directory's hole found in pass 1 stands for e2fsck's offer to move
/// the extent after it down only on an extent-mapped directory, once per
/// gap: e2fsck finds the other holes in pass 2 only, where DirHole stands
/// for them.
///
/// A block of a block map that cannot be read is reported by e2fsck's
/// I/O error handler, outside its problem table; declined (-n), an
/// extent node's stands for its failed walk of the tree (0x010057).
const NAMED_ONLY: &[Code] = &[
    Code::InodeBlockBitmapUnreadable,
    Code::InodeDirHole,
    Code::SbUsedBackup,
    Code::QuotaUsage,
    Code::QuotaEntryMissing,
    Code::QuotaFileBad,
];

/// The entries e2fsck's problem log would hold for `p`, found by a check
/// of kind `run`.
pub fn refs(p: &Problem, run: Run) -> Vec<Ref> {
    // e2fsck's question whether to go on with a corrupt-looking bad
    // blocks inode, answered no.
    if p.code == Code::StoppedAtBadBlocksInode {
        return vec![Ref::of(0x010016, None)];
    }
    // The read of the directory block that fails, and its question
    // whether to go on, answered no.
    if p.code == Code::StoppedAtRelocatedBitmap {
        let a = p.args();
        return vec![Ref {
            code: 0x020020,
            ino: a.ino.map(Ino::get),
            blk: a.blk.map(Blk::get),
        }];
    }
    // Making the resize inode again failed (its read fails the
    // checksum), and e2fsck's question whether to go on, answered no.
    if p.code == Code::StoppedAtInodeChecksumP1 && p.args().ino == Some(Ino::RESIZE) {
        return vec![Ref::of(0x01004E, None)];
    }
    let Some(code) = p.e2fsck_code() else {
        return Vec::new();
    };
    // A fatal problem ends e2fsck as it is printed, before its log entry
    // is written (the external journal's, several users on a journal).
    if catalogue::entry(code).is_some_and(catalogue::Entry::fatal) {
        return Vec::new();
    }
    let a = p.args();
    if run == Run::ReadOnly && p.code == Code::OrphanReleased {
        return orphan_left(p);
    }
    if run == Run::ReadOnly && REPAIR_ONLY.contains(&p.code) {
        return Vec::new();
    }
    // e2fsck's slots are bare numbers: counts stand in them in pass 5.
    let (a_ino, a_blk) = (a.ino.map(Ino::get), a.blk.map(Blk::get));
    if matches!(p.code, Code::BlockBitmapDiff | Code::InodeBitmapDiff) {
        return bitmap_refs(p);
    }
    let names = catalogue::entry(code).map_or("", |e| e.names);
    let ino_named = names.contains(['i', 'd']);
    match (p.code, code) {
        // The root's deletion time is asked about twice: as the root's,
        // then as any in-use inode's.
        (Code::InodeDtimeSet, 0x010002) => {
            return vec![Ref::of(code, None), Ref::of(0x010005, a_ino)];
        }
        // Declined, a missing tail leaves the block failing its checksum,
        // which e2fsck then asks about too.
        (Code::DirBlockNoTail, _) if run == Run::ReadOnly => {
            return vec![Ref::of(code, a_ino), Ref::of(0x02004D, a_ino)];
        }
        // An open the library refused (`num` times: e2fsck tries again
        // where the magic number is right), then the superblock judged
        // unusable.
        (Code::SbCorrupt, 0x000044) => {
            let tries = a.num.unwrap_or(1);
            return (0..tries)
                .map(|_| Ref::of(code, None))
                .chain(std::iter::once(Ref::of(0x000004, None)))
                .collect();
        }
        // The primary refused, then read despite its errors with bad
        // descriptors (`num` 2): both refusals, before the backup.
        (Code::SbUsedBackup, 0x000045) if a.num == Some(2) => {
            return [0x000044, 0x000045]
                .into_iter()
                .map(|code| Ref::of(code, None))
                .collect();
        }
        // A field out of range: the library's refusals of the primary
        // before (`num`, one when not given), then the field named with
        // the superblock judged unusable after it.
        (Code::SbCorrupt, 0x00000B) => {
            let refusals = a.num.unwrap_or(1);
            return (0..refusals)
                .map(|_| 0x000044)
                .chain([0x000004, 0x00000B])
                .map(|code| Ref::of(code, None))
                .collect();
        }
        // Declined, clearing a journal inode without the magic number
        // leaves its superblock judged corrupt.
        (Code::JournalSuperblockCorrupt, 0x00000F) if run == Run::ReadOnly => {
            return vec![Ref::of(code, a_ino), Ref::of(0x000015, None)];
        }
        // Declined, a dirty orphan file block leaves the orphan file
        // unusable, which e2fsck then offers to recreate.
        (Code::OrphanFileBlockDirty, _) if run == Run::ReadOnly => {
            return vec![Ref::of(code, a_ino), Ref::of(0x060009, None)];
        }
        // Under -n, pass 2 finds the entries naming the inode itself.
        (Code::SbInodeFieldNoFeature, 0x020002) if run == Run::ReadOnly => return Vec::new(),
        // Declined, clearing an inode with too many illegal blocks gives
        // way to the offer to say no more of them, which e2fsck asks too.
        (Code::InodeTooManyIllegalBlocks, _) if run == Run::ReadOnly => {
            return vec![Ref::of(code, a_ino), Ref::of(0x01002D, None)];
        }
        // Declined, clearing an empty unattached inode gives way to
        // connecting it, which e2fsck then asks about too.
        (Code::InodeUnattachedZero, _) if run == Run::ReadOnly => {
            return [code, 0x040002]
                .into_iter()
                .map(|code| Ref::of(code, a_ino))
                .collect();
        }
        // Stated, then the question whether to replay anyway (on a backup
        // superblock, whose flag is never set, a statement that it does);
        // declined, the one whether to reset the journal.
        (Code::JournalNeedsRecoveryNoFlag, _) => {
            let anyway = if a.num.is_some() { 0x00002C } else { 0x00002B };
            let mut asked = vec![code, anyway];
            if run == Run::ReadOnly {
                asked.push(0x000019);
            }
            return asked.into_iter().map(|c| Ref::of(c, None)).collect();
        }
        (Code::FeatureLargeFiles, _) if a.detail == super::pass2::LARGE_FILES_REV0 => {
            return vec![Ref::of(code, None), Ref::of(0x010033, None)];
        }
        // Declined, setting the EA inode's flag gives way to dropping the
        // entry, which e2fsck then asks about too.
        (Code::XattrEaInodeNoFlag, 0x010086) if run == Run::ReadOnly => {
            return [code, 0x010085]
                .into_iter()
                .map(|code| Ref::of(code, a_ino))
                .collect();
        }
        // The bad blocks inode's illegal blocks have a code of their own.
        (Code::InodeIllegalBlock, _) if a.ino == Some(Ino::BAD) => {
            return vec![Ref {
                code: 0x010012,
                ino: None,
                blk: a_blk,
            }];
        }
        _ => {}
    }
    // Counts in pass 5 stand in the slots of the inode or block.
    let (ino, blk) = match p.code {
        Code::GroupFreeBlocks | Code::SuperFreeBlocks => (None, a.num),
        Code::GroupFreeInodes | Code::SuperFreeInodes | Code::GroupDirsCount => {
            (a.num.map(narrow::sat32), None)
        }
        // The logical block stands in the block slot there.
        Code::ClusterMisaligned => (a_ino, a.num),
        // The depth stands in the block slot there.
        Code::InodeExtentTooDeep | Code::ExtentTreeShorter | Code::ExtentTreeNarrower => {
            (a_ino, a.num)
        }
        Code::GdItableUnused => (None, a.num),
        // e2fsck names the last entry its walk scanned below the node.
        Code::InodeExtentNodeChecksum => (a_ino, a.num.or(a_blk)),
        // The logical block of the orphan file stands in the block slot.
        Code::OrphanFileHole => (a_ino, a.num),
        _ => (a_ino, a_blk),
    };
    vec![Ref {
        code,
        ino: if ino_named { ino } else { None },
        blk: if names.contains('b') { blk } else { None },
    }]
}

/// What e2fsck logs for a pass-5 bitmap difference: the set's question,
/// one entry per run of bits, the set's end.
fn bitmap_refs(p: &Problem) -> Vec<Ref> {
    let runs: Vec<Run5> = bitmap_runs(p.args().detail).collect();
    runs_refs(p.code == Code::InodeBitmapDiff, &runs)
}

/// A run of pass 5's differences: sign ('+' marked in use where the
/// bitmap says free), first and last (blocks or inodes).
type Run5 = (char, u64, u64);

/// The entries of one bitmap's set of differences (`inodes`: the inode
/// bitmap's), none without a run.
fn runs_refs(inodes: bool, runs: &[Run5]) -> Vec<Ref> {
    // The set's question, the runs, its end.
    let (question, end, diff) = if inodes {
        (0x050007, 0x05000A, Code::InodeBitmapDiff)
    } else {
        (0x050003, 0x050006, Code::BlockBitmapDiff)
    };
    if runs.is_empty() {
        return Vec::new();
    }
    let bare = |code| Ref::of(code, None);
    let each = runs.iter().map(|&(sign, first, last)| {
        // -N, +N, -(N--M), +(N--M), in e2fsck's code order.
        let k = usize::from(sign == '+') + if last > first { 2 } else { 0 };
        let code = codes(diff)[k];
        if inodes {
            Ref::of(code, Some(narrow::sat32(first)))
        } else {
            Ref {
                code,
                ino: None,
                blk: Some(first),
            }
        }
    });
    std::iter::once(bare(question))
        .chain(each)
        .chain(std::iter::once(bare(end)))
        .collect()
}

/// Pass 5's runs `runs` (units `step` apart) as e2fsck -n finds them,
/// which leaves the orphans unreleased: the units the release freed
/// (`freed`, sorted) are still marked, so where the view finds one in
/// use with its bit clear e2fsck finds nothing, and where it finds one
/// free and clear e2fsck finds it marked in use by no file. Runs that
/// then touch join, as e2fsck reports runs of like differences.
fn unreleased_runs(runs: &[Run5], freed: &[u64], step: u64) -> Vec<Run5> {
    let step = step.max(1);
    let mut gone: Vec<(u64, u64)> = Vec::new();
    for &u in freed {
        let i = u / step;
        match gone.last_mut() {
            Some(last) if last.1 + 1 >= i => last.1 = last.1.max(i),
            _ => gone.push((i, i)),
        }
    }
    let idx = |sign| {
        runs.iter()
            .filter(move |r| r.0 == sign)
            .map(|r| (r.1 / step, r.2 / step))
            .collect::<Vec<_>>()
    };
    let (plus, minus) = (idx('+'), idx('-'));
    let mut all: Vec<Run5> = subtract(&plus, &gone)
        .into_iter()
        .map(|(a, b)| ('+', a, b))
        .chain(minus.into_iter().map(|(a, b)| ('-', a, b)))
        .chain(subtract(&gone, &plus).into_iter().map(|(a, b)| ('-', a, b)))
        .collect();
    all.sort_unstable_by_key(|r| r.1);
    let mut out: Vec<Run5> = Vec::with_capacity(all.len());
    for r in all {
        match out.last_mut() {
            Some(last) if last.0 == r.0 && last.2 + 1 == r.1 => last.2 = r.2,
            _ => out.push(r),
        }
    }
    out.into_iter()
        .map(|(sign, a, b)| (sign, a * step, b * step))
        .collect()
}

/// The parts of the sorted, disjoint ranges `a` outside those of `b`.
fn subtract(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut k = 0;
    for &(first, last) in a {
        let mut from = first;
        while k < b.len() && b[k].1 < from {
            k += 1;
        }
        let mut j = k;
        while from <= last {
            match b.get(j) {
                Some(&(bf, bl)) if bf <= last => {
                    if bf > from {
                        out.push((from, bf - 1));
                    }
                    if bl >= last {
                        break;
                    }
                    from = from.max(bl + 1);
                    j += 1;
                }
                _ => {
                    out.push((from, last));
                    break;
                }
            }
        }
    }
    out
}

/// What e2fsck -n, which leaves the orphans unreleased, logs in pass 1
/// for one orphan pfsck's view releases (its dtime in `num`, the blocks
/// the release frees in `num2`). A chain link in i_dtime is an inode
/// number, below the inode count: a deletion time too low to be one. An
/// orphan to delete has no links: with no dtime it is a deleted inode
/// without one (its inode and blocks, still marked in use by no file,
/// are pass 5's: [`LatchLog::refs`]). One to truncate is in use: any
/// dtime is one too many, a leaf failing its checksum on the disk (in
/// `blk`) is asked about, and the blocks past i_size make i_size wrong.
fn orphan_left(p: &Problem) -> Vec<Ref> {
    let a = p.args();
    let a_ino = a.ino.map(Ino::get);
    let dtime = a.num.unwrap_or(0);
    let freed = a.num2.unwrap_or(0);
    let at = |code, ino, blk| Ref { code, ino, blk };
    let mut out = Vec::new();
    if a.detail.starts_with(super::orphan::TRUNCATING) {
        if dtime != 0 {
            out.push(at(0x010036, a_ino, None));
            out.push(at(0x010005, a_ino, None));
        }
        // A leaf failing its checksum, which the view rewrote.
        if let Some(b) = a.blk {
            out.push(at(0x01006A, a_ino, Some(b.get())));
        }
        if freed > 0 {
            out.push(at(0x01000C, a_ino, None));
        }
        return out;
    }
    out.push(at(
        if dtime == 0 { 0x010004 } else { 0x010036 },
        a_ino,
        None,
    ));
    out
}

/// A latch group of e2fsck: problems it asks about as a set. It logs
/// the group's question before the first problem of the set, named by
/// that problem's objects, and, where the group has one, an end entry
/// after the last.
struct Latch {
    flag: u32,
    question: u32,
    /// The set is a file's (e2fsck ends the group after each inode), not
    /// the whole check's.
    per_inode: bool,
}

/// e2fsck's latch groups whose question pfsck's problems can raise; the
/// bitmap differences of pass 5 carry their question and end themselves
/// (one pfsck problem is one whole set).
const LATCHES: &[Latch] = &[
    Latch {
        flag: catalogue::LATCH_BLOCK,
        question: 0x010010,
        per_inode: true,
    },
    Latch {
        flag: catalogue::LATCH_BBLOCK,
        question: 0x010013,
        per_inode: false,
    },
    Latch {
        flag: catalogue::LATCH_IBITMAP,
        question: 0x050007,
        per_inode: false,
    },
    Latch {
        flag: catalogue::LATCH_BBITMAP,
        question: 0x050003,
        per_inode: false,
    },
    Latch {
        flag: catalogue::LATCH_RELOC,
        question: 0x00000A,
        per_inode: false,
    },
    Latch {
        flag: catalogue::LATCH_LOW_DTIME,
        question: 0x010037,
        per_inode: false,
    },
    Latch {
        flag: catalogue::LATCH_TOOBIG,
        question: 0x010043,
        per_inode: true,
    },
    Latch {
        flag: catalogue::LATCH_BG_CHECKSUM,
        question: 0x00003E,
        per_inode: false,
    },
];

/// The set of e2fsck's latch group `p` belongs to, where the group's
/// question asks (a file's illegal blocks, the bad-block inode's, a file
/// too big, the orphan-list refugees, the descriptor checksums): e2fsck
/// asks once per set (per inode for a file's) and answers the rest of it
/// alike. None outside such a group.
pub fn latch_set(p: &Problem) -> Option<(u32, Option<Ino>)> {
    let flag = catalogue::entry(p.e2fsck_code()?)?.flags & catalogue::LATCH_MASK;
    let latch = LATCHES.iter().find(|l| l.flag == flag && flag != 0)?;
    asks_once(flag).then(|| (flag, latch.per_inode.then_some(p.args().ino).flatten()))
}

/// Does e2fsck ask once for the problems of latch group `flag`: is its
/// question one that asks? (The relocation warning and the bitmap
/// differences' header ask nothing there.)
pub fn asks_once(flag: u32) -> bool {
    LATCHES
        .iter()
        .find(|l| l.flag == flag && flag != 0)
        .and_then(|l| catalogue::entry(l.question))
        .is_some_and(|q| q.prompt != catalogue::Prompt::None)
}

/// The entries of e2fsck's problem log for the problems of one report,
/// taken in order: [`refs`] of each, and before the first problem of a
/// latch group, the group's question.
///
/// Read-only, e2fsck leaves the orphans unreleased: the extent trees
/// pfsck's view truncates are not the trees e2fsck offers to shorten.
///
/// Where the check stopped as e2fsck -n stops (`stopped`), e2fsck logs
/// nothing of the later passes: the orphans' pass 5 and orphan file
/// entries stay out.
#[derive(Default)]
pub struct LatchLog {
    /// The latch groups asked so far: flag, and the inode where the set
    /// is one file's.
    asked: Vec<(u32, Option<u32>)>,
    /// Orphans the view truncates, in a read-only check.
    truncated: Vec<u32>,
    /// The pass the check stopped in, if it did.
    stop: Option<u32>,
    /// The inode pass 1's scan stopped at, if it stopped in the middle
    /// of the scan: e2fsck logs nothing of the inodes past it.
    stop_ino: Option<u32>,
    /// Pass 2 entries (see [`EntryKey`]) naming an inode not in use.
    unused_targets: std::collections::HashSet<EntryKey>,
    /// Pass 2 entries with a problem of e2fsck's first series of checks
    /// on an entry (see [`asked_again`]).
    first_series: std::collections::HashSet<EntryKey>,
    /// Per inode pass 1 found bad: how many times e2fsck meets it later
    /// (each entry naming it in pass 2, and pass 4 when no entry does).
    bad_met: std::collections::HashMap<u32, usize>,
    /// The directory block a read-only check stopped in (its directory
    /// and block): e2fsck -n aborts in the middle of it, before the
    /// questions it asks at the block's end.
    stop_block: Option<(Option<Ino>, Option<Blk>)>,
    /// What e2fsck -n finds marked in use by no file where the view
    /// does not (the orphans' release freed it, or its pass 1 skipped
    /// it): sorted first blocks of clusters, sorted inodes, blocks per
    /// cluster.
    freed: Option<(Vec<u64>, Vec<u64>, u64)>,
    /// The resize inode's i_blocks, when e2fsck's pass 1 finds no block
    /// in it (and has not said so yet).
    resize_blocks: Option<u64>,
    /// The groups whose directories count e2fsck -n finds wrong where
    /// the view does not (deleted orphan directories), with the count.
    dirs_off: Vec<(Group, u32)>,
    /// The groups whose directories count the view finds wrong.
    dirs_found: Vec<Group>,
    /// The report has a block (inode) bitmap difference.
    block_diff: bool,
    inode_diff: bool,
}

/// A directory entry, as pass 2's problems about it name it: the
/// directory, the block, the entry's name.
type EntryKey = (Option<Ino>, Option<Blk>, Box<str>);

fn entry_key(p: &Problem) -> EntryKey {
    let a = p.args();
    (a.ino, a.blk, a.detail.into())
}

/// The problems of e2fsck's first series of checks on an entry (a bad
/// block inode, a second '.' or '..', a link to the root, an empty name,
/// an EA inode), which it asks about when it finds them.
const FIRST_SERIES: &[Code] = &[
    Code::DirEntryInodeInBadBlock,
    Code::DirDotSecondEntry,
    Code::DirEntryLinkToRoot,
    Code::DirEntryZeroLenName,
    Code::DirEntryEaInode,
];

impl LatchLog {
    /// For the problems of one report, in order.
    pub fn new(problems: impl IntoIterator<Item = Problem>) -> LatchLog {
        let mut log = LatchLog::default();
        let mut last_corrupt = None;
        for p in problems {
            if log.stop.is_none() {
                log.stop = stop_pass(p.code);
                log.stop_ino = stops_scan_at(&p);
            }
            if p.code == Code::SbUsedBackup {
                // e2fsck gives its advice before relocating only when it
                // runs on the primary superblock: the advice is to try
                // the backup.
                log.asked.push((catalogue::LATCH_RELOC, None));
            }
            if p.code == Code::DirBlockCorrupt {
                last_corrupt = Some((p.args().ino, p.args().blk));
            } else if p.code == Code::StoppedAtCorruptDir {
                log.stop_block = last_corrupt;
            }
            let met = match p.code {
                Code::DirEntryBadInodeTarget => p.args().num.map(narrow::sat32),
                Code::InodeUnattached | Code::InodeUnattachedZero => p.args().ino.map(Ino::get),
                _ => None,
            };
            if let Some(i) = met {
                *log.bad_met.entry(i).or_default() += 1;
            }
            if p.code == Code::DirEntryDeletedInode {
                log.unused_targets.insert(entry_key(&p));
            } else if FIRST_SERIES.contains(&p.code) {
                log.first_series.insert(entry_key(&p));
            }
            if p.code == Code::GroupDirsCount
                && let Some(g) = p.args().group
            {
                log.dirs_found.push(g);
            }
            log.block_diff |= p.code == Code::BlockBitmapDiff;
            log.inode_diff |= p.code == Code::InodeBitmapDiff;
        }
        log
    }

    /// What the orphans' release freed in the view the check looked
    /// through ([`super::orphan::Freed`]): e2fsck -n finds it in pass 5.
    #[must_use]
    pub fn with_orphans_freed(mut self, freed: Option<&super::orphan::Freed>) -> LatchLog {
        if let Some(f) = freed {
            self.unmarked(f);
            self.dirs_off.extend(
                f.dirs
                    .iter()
                    .filter(|(g, _)| !self.dirs_found.contains(g))
                    .copied(),
            );
        }
        self
    }

    /// The resize inode e2fsck's pass 1 finds no block in, after a
    /// reserved inode's bad checksum (`check::Report::resize_unwalked`):
    /// its i_blocks, and its double indirect block, which e2fsck then
    /// finds marked in use by no file.
    #[must_use]
    pub fn with_resize_unwalked(
        mut self,
        resize: Option<&(u64, std::sync::Arc<super::orphan::Freed>)>,
    ) -> LatchLog {
        if let Some((blocks, dind)) = resize {
            self.resize_blocks = Some(*blocks);
            self.unmarked(dind);
        }
        self
    }

    /// Adds `f` to the units e2fsck -n finds marked in use by no file.
    fn unmarked(&mut self, f: &super::orphan::Freed) {
        let (blocks, inodes, _) = self
            .freed
            .get_or_insert_with(|| (Vec::new(), Vec::new(), 1u64 << f.cluster_bits));
        blocks.extend(f.blocks.iter().map(|b| b.get()));
        inodes.extend(f.inodes.iter().map(|i| u64::from(i.get())));
        blocks.sort_unstable();
        blocks.dedup();
        inodes.sort_unstable();
        inodes.dedup();
    }

    /// In a read-only check, pass 5's sets of differences as e2fsck -n
    /// finds them, the orphans unreleased and the resize inode unwalked
    /// ([`unreleased_runs`]): in place of the view's (`p` a bitmap
    /// difference), or, where the view found none, with the first orphan
    /// released or the checksum that leaves the resize inode unwalked
    /// (which also gives e2fsck's i_blocks question on it). None where
    /// `p` gives its own.
    fn unreleased_refs(&mut self, p: &Problem, run: Run) -> Option<Vec<Ref>> {
        if run != Run::ReadOnly {
            return None;
        }
        let resize_trigger = p.code == Code::InodeChecksum
            && p.args().ino.is_some_and(|i| (3..=6).contains(&i.get()));
        let mut out = Vec::new();
        if resize_trigger && let Some(n) = self.resize_blocks.take() {
            out = refs(p, run);
            if n != 0 {
                out.push(Ref::of(0x01000D, Some(Ino::RESIZE.get())));
            }
        }
        let Some((blocks, inodes, step)) = self.freed.as_ref() else {
            return (!out.is_empty()).then_some(out);
        };
        let view: Vec<Run5> = bitmap_runs(p.args().detail).collect();
        let out = match p.code {
            Code::BlockBitmapDiff => runs_refs(false, &unreleased_runs(&view, blocks, *step)),
            Code::InodeBitmapDiff => runs_refs(true, &unreleased_runs(&view, inodes, 1)),
            Code::OrphanReleased | Code::InodeChecksum
                if p.code == Code::OrphanReleased || !out.is_empty() =>
            {
                if out.is_empty() {
                    out = refs(p, run);
                }
                if !self.block_diff {
                    out.extend(runs_refs(false, &unreleased_runs(&[], blocks, *step)));
                }
                if !self.inode_diff {
                    out.extend(runs_refs(true, &unreleased_runs(&[], inodes, 1)));
                }
                // A directories count per group, after the sets.
                out.extend(
                    std::mem::take(&mut self.dirs_off)
                        .into_iter()
                        .map(|(_, n)| Ref::of(0x05000C, Some(n))),
                );
                // Once: the sets are the whole check's.
                self.block_diff = true;
                self.inode_diff = true;
                out
            }
            _ => return (!out.is_empty()).then_some(out),
        };
        Some(out)
    }

    /// How many more times than once e2fsck -n asks about the pass 2
    /// problem `p`. Declined, a problem of its first series of checks on
    /// an entry stays the entry's problem, and e2fsck asks about it again
    /// at its second question on the entry, unless that one is about the
    /// inode not in use. An entry linking to its own directory is asked
    /// about before that series: when none of it applies, the link stays
    /// the problem at both questions.
    fn asked_again(&self, p: &Problem) -> usize {
        let key = entry_key(p);
        let unused = self.unused_targets.contains(&key);
        if FIRST_SERIES.contains(&p.code) {
            usize::from(!unused)
        } else if p.code == Code::DirEntryLinkToDot && !self.first_series.contains(&key) {
            1 + usize::from(!unused)
        } else {
            0
        }
    }
}

impl LatchLog {
    /// How many more times than once e2fsck -n asks about `p`, a problem
    /// pass 1 found in an inode it marked bad that e2fsck asks about in
    /// pass 2 (`refs`, all its codes): declined, the inode stays bad, and
    /// e2fsck asks again at every entry naming it, and in pass 4 about
    /// an unattached one.
    fn bad_asked_again(&self, p: &Problem, refs: &[Ref]) -> usize {
        use super::problem::Pass;
        if p.spec().pass != Pass::P1 || refs.is_empty() || refs.iter().any(|r| r.code >> 16 != 2) {
            return 0;
        }
        p.args()
            .ino
            .and_then(|i| self.bad_met.get(&i.get()))
            .map_or(0, |n| n.saturating_sub(1))
    }
}

/// The inode at which a stop ends pass 1's scan of the inode table, from
/// the problem that says so (the resize inode's is at the scan's end).
fn stops_scan_at(p: &Problem) -> Option<u32> {
    let ino = p.args().ino?;
    match p.code {
        Code::StoppedAtInodeChecksumP1 if ino == Ino::RESIZE => None,
        Code::StoppedAtInodeChecksumP1
        | Code::StoppedAtIllegalIndirect
        | Code::StoppedAtUnreadableExtent
        | Code::StoppedAtBadBlocksInode => Some(ino.get()),
        _ => None,
    }
}

/// The pass a check stopped in, from the problem that says it did.
fn stop_pass(code: Code) -> Option<u32> {
    match code {
        // An unusable journal ends e2fsck before the orphans are released
        // and before pass 1: nothing of the passes is logged.
        Code::JournalCannotProceed | Code::JournalVersionAbort => Some(0),
        Code::StoppedAtIllegalIndirect
        | Code::StoppedAtUnreadableExtent
        | Code::StoppedAtBadBlocksInode
        | Code::StoppedAtInodeTable
        | Code::StoppedAtUnreadableXattr
        | Code::StoppedAtInodeChecksumP1
        | Code::StoppedAtInodeChecksumP1B => Some(1),
        Code::StoppedAtCorruptDir
        | Code::StoppedAtUnreadableDir
        | Code::StoppedAtInodeChecksumP2
        | Code::StoppedAtNoDirInfo
        | Code::StoppedAtRelocatedBitmap => Some(2),
        Code::StoppedWithoutRoot => Some(3),
        Code::StoppedAtInodeChecksumP4 => Some(4),
        Code::StoppedAtUninitGroup | Code::StoppedAtOrphanFileInode => Some(5),
        _ => None,
    }
}

/// Is `code` found by e2fsck's superblock check (check_super_block: the
/// superblock's values and times, the group descriptors, the quota
/// fields, the orphans), which runs after its journal check? An unusable
/// journal ends e2fsck before it; pfsck judges these first.
fn after_journal_check(code: Code) -> bool {
    matches!(
        code,
        Code::GdBlockBitmapLocation
            | Code::GdInodeBitmapLocation
            | Code::GdInodeTableLocation
            | Code::GdChecksum
            | Code::GdUninitWithoutCsum
            | Code::GdItableUnused
            | Code::GdFreeBlocksInvalid
            | Code::GdFreeInodesInvalid
            | Code::GdMetadataOverlap
            | Code::GdBlockUninitLastGroup
            | Code::GdInodeUninitNotZeroed
            | Code::SbInodesCount
            | Code::SbFirstMetaBg
            | Code::SbFreeBlocksInvalid
            | Code::SbFreeInodesInvalid
            | Code::SbFirstIno
            | Code::SbLastMountFuture
            | Code::SbLastWriteFuture
            | Code::SbQuotaInode
            | Code::OrphansPending
            | Code::OrphansPendingHarmless
            | Code::OrphanReleased
    )
}

impl LatchLog {
    pub fn refs(&mut self, p: &Problem, run: Run) -> Vec<Ref> {
        if self.stop == Some(0) && after_journal_check(p.code) {
            return Vec::new();
        }
        let mut out = self.refs_all(p, run);
        if let Some(stop) = self.stop {
            // Pass 1B-1E codes are pass 1's, 3A pass 3's.
            out.retain(|r| r.code >> 16 <= stop);
        }
        // What e2fsck's pass 1 finds of the orphans it leaves (listed
        // before the passes) is of inodes the scan may not reach, the
        // latch question they raise with them.
        if let Some(at) = self.stop_ino
            && p.code == Code::OrphanReleased
        {
            let p1 = |r: &Ref| r.code >> 16 == 1;
            let past = out.iter().any(|r| p1(r) && r.ino.is_some_and(|i| i > at));
            out.retain(|r| !p1(r) || r.ino.map_or(!past, |i| i <= at));
        }
        out
    }

    fn refs_all(&mut self, p: &Problem, run: Run) -> Vec<Ref> {
        let a = p.args();
        if run == Run::ReadOnly {
            if p.code == Code::OrphanReleased
                && a.detail.starts_with(super::orphan::TRUNCATING)
                && let Some(ino) = a.ino.map(Ino::get)
            {
                self.truncated.push(ino);
            }
            if matches!(p.code, Code::ExtentTreeShorter | Code::ExtentTreeNarrower)
                && a.ino.is_some_and(|i| self.truncated.contains(&i.get()))
            {
                return Vec::new();
            }
        }
        let mut own = self.unreleased_refs(p, run).unwrap_or_else(|| refs(p, run));
        if p.code == Code::DirBlockNoTail && self.stop_block == Some((a.ino, a.blk)) {
            // The checksum question comes at the block's end, which the
            // stopped check never reaches.
            own.retain(|r| r.code != 0x02004D);
        }
        if run == Run::ReadOnly {
            let once = own.clone();
            for _ in 0..self.asked_again(p) + self.bad_asked_again(p, &once) {
                own.extend_from_slice(&once);
            }
        }
        let mut out = Vec::with_capacity(own.len() + 1);
        for r in &own {
            let flag = catalogue::entry(r.code).map_or(0, |e| e.flags & catalogue::LATCH_MASK);
            let Some(latch) = LATCHES.iter().find(|l| l.flag == flag && flag != 0) else {
                continue;
            };
            if own.iter().any(|o| o.code == latch.question) {
                continue;
            }
            let ino = r.ino.or(p.args().ino.map(Ino::get));
            let key = (flag, latch.per_inode.then_some(ino).flatten());
            if self.asked.contains(&key) {
                continue;
            }
            self.asked.push(key);
            let names = catalogue::entry(latch.question).map_or("", |e| e.names);
            out.push(Ref {
                code: latch.question,
                ino: if names.contains('i') { ino } else { None },
                blk: if names.contains('b') { r.blk } else { None },
            });
        }
        out.extend(own);
        out
    }
}

/// The entries e2fsck's passes 1B and 1D log for `ino`, one of the files
/// sharing blocks (its `DupBlocks` problem stands for the first of them,
/// 0x011001, already): its blocks as pass 1B lists them (a block, or a
/// range, each), the list's end; then in a read-only check the file in
/// pass 1D with the files it shares with (and the metadata), the two
/// questions declined, and, for the first such file (`first`), the count
/// of files opening pass 1D. A repair's pass 1D depends on what was
/// cloned before: only pass 1B's part is given.
pub fn dup_refs(dups: &super::pass1b::Dups, ino: u32, first: bool, run: Run) -> Vec<Ref> {
    let Ok(k) = dups.owners.binary_search_by_key(&Ino(ino), |o| o.ino) else {
        return Vec::new();
    };
    let o = &dups.owners[k];
    // e2fsck starts each file's list as if block 0 came before: a first
    // run from block 1 continues it, and is logged as a range from 0.
    let mut out: Vec<Ref> = o
        .runs
        .iter()
        .enumerate()
        .map(|(i, &(a, b))| {
            let a = if i == 0 && a.get() == 1 { 0 } else { a.get() };
            Ref {
                code: if a == b.get() { 0x011002 } else { 0x011008 },
                ino: None,
                blk: (a != 0).then_some(a),
            }
        })
        .collect();
    out.push(Ref::of(0x011003, None));
    // A rescan stopped at an inode it cannot read (-n) never reaches
    // pass 1D, which passes the resize inode over.
    if run == Run::Repair || dups.unreadable.is_some() || o.ino == Ino::RESIZE {
        return out;
    }
    if first {
        out.push(Ref::of(0x013004, None));
    }
    out.push(Ref::of(0x013001, Some(ino)));
    // Once a file shares with the metadata, e2fsck lists the metadata for
    // every file after it too; the bad blocks and resize inodes, passed
    // over before their blocks are looked at, do not start it.
    let meta = dups.owners[..=k]
        .iter()
        .filter(|o| o.ino != Ino::BAD && o.ino != Ino::RESIZE)
        .any(|o| o.clusters.iter().any(|&(_, m)| m));
    if meta {
        out.push(Ref::of(0x013003, None));
    }
    out.extend(o.shared.iter().map(|&s| Ref::of(0x013002, Some(s.get()))));
    out.push(Ref::of(0x013006, None));
    out.push(Ref::of(0x013007, None));
    out
}

/// The runs of a bitmap difference's detail (`+5 -(7--9)`): sign, first
/// and last.
fn bitmap_runs(detail: &str) -> impl Iterator<Item = (char, u64, u64)> + '_ {
    detail.split_whitespace().filter_map(|w| {
        let sign = w.chars().next()?;
        let body = w.get(1..)?;
        let (first, last) = match body.strip_prefix('(').and_then(|b| b.strip_suffix(')')) {
            Some(range) => {
                let (a, b) = range.split_once("--")?;
                (a.parse().ok()?, b.parse().ok()?)
            }
            None => {
                let n = body.parse().ok()?;
                (n, n)
            }
        };
        matches!(sign, '+' | '-').then_some((sign, first, last))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::catalogue::Kind;
    use crate::check::problem::Severity;
    use crate::fs::num::Group;

    #[test]
    fn every_code_is_mapped_or_listed_as_unmapped() {
        for &c in Code::ALL {
            let mapped = !codes(c).is_empty();
            assert!(
                mapped != NONE.contains(&c),
                "{c:?}: map it in e2fsck_map::codes or list it in NONE"
            );
            for &e in codes(c) {
                let entry = catalogue::entry(e)
                    .unwrap_or_else(|| panic!("{c:?} maps to {e:06x}, not in e2fsck's table"));
                // A question that e2fsck asks alone in some cases (pass
                // 3A's rename of a duplicate naming another inode).
                let alone = e == 0x020042;
                assert!(
                    alone || matches!(entry.kind, Kind::Problem | Kind::Message | Kind::Internal),
                    "{c:?} maps to {e:06x}, a {:?}",
                    entry.kind
                );
            }
        }
    }

    #[test]
    fn bitmap_runs_give_one_ref_each() {
        let p = Problem::new(Code::BlockBitmapDiff).detail("-25 +(30--32) -(40--41) +7");
        let got: Vec<(u32, Option<u64>)> = refs(&p, Run::Repair)
            .iter()
            .map(|r| (r.code, r.blk))
            .collect();
        assert_eq!(
            got,
            vec![
                (0x050003, None),
                (0x050004, Some(25)),
                (0x050015, Some(30)),
                (0x050014, Some(40)),
                (0x050005, Some(7)),
                (0x050006, None)
            ]
        );
        let p = Problem::new(Code::InodeBitmapDiff).detail("-(12--32)");
        let got: Vec<(u32, Option<u32>)> = refs(&p, Run::Repair)
            .iter()
            .map(|r| (r.code, r.ino))
            .collect();
        assert_eq!(
            got,
            vec![(0x050007, None), (0x050016, Some(12)), (0x05000A, None)]
        );
    }

    /// The orphans' freed units, still marked for e2fsck -n: a '+' of the
    /// view there goes, elsewhere a '-' comes, and like runs that touch
    /// join (clusters of 4 blocks here).
    #[test]
    fn unreleased_runs_join_the_views() {
        let view = [('+', 8, 16), ('-', 24, 24), ('+', 40, 40)];
        let freed = [12, 28, 32, 40, 44];
        assert_eq!(
            unreleased_runs(&view, &freed, 4),
            vec![('+', 8, 8), ('+', 16, 16), ('-', 24, 32), ('-', 44, 44)]
        );
        assert_eq!(
            unreleased_runs(&[], &[5, 6, 9], 1),
            vec![('-', 5, 6), ('-', 9, 9)]
        );
        assert_eq!(
            subtract(&[(0, 10)], &[(2, 3), (5, 5), (9, 12)]),
            vec![(0, 1), (4, 4), (6, 8)]
        );
    }

    /// e2fsck asks a latch group's question once per set: per inode for
    /// illegal blocks, once per check for the others.
    #[test]
    fn latch_questions_once_per_set() {
        let mut log = LatchLog::default();
        let codes = |v: Vec<Ref>| v.iter().map(|r| (r.code, r.ino)).collect::<Vec<_>>();
        let bad = |ino| {
            Problem::new(Code::InodeIllegalBlock)
                .ino(Ino(ino))
                .blk(Blk(7))
        };
        assert_eq!(
            codes(log.refs(&bad(12), Run::ReadOnly)),
            vec![(0x010010, Some(12)), (0x01000E, Some(12))]
        );
        assert_eq!(
            codes(log.refs(&bad(12), Run::ReadOnly)),
            vec![(0x01000E, Some(12))]
        );
        assert_eq!(
            codes(log.refs(&bad(13), Run::ReadOnly)),
            vec![(0x010010, Some(13)), (0x01000E, Some(13))]
        );
        let gd = |g| Problem::new(Code::GdChecksum).group(Group(g));
        assert_eq!(
            codes(log.refs(&gd(0), Run::ReadOnly)),
            vec![(0x00003E, None), (0x000035, None)]
        );
        assert_eq!(
            codes(log.refs(&gd(1), Run::ReadOnly)),
            vec![(0x000035, None)]
        );
        let csum = |g| Problem::new(Code::InodeBitmapChecksum).group(Group(g));
        let diff = Problem::new(Code::InodeBitmapDiff).detail("+14");
        assert_eq!(log.refs(&diff, Run::ReadOnly).len(), 3);
        assert_eq!(
            codes(log.refs(&csum(0), Run::ReadOnly)),
            vec![(0x050007, None), (0x05001A, None)]
        );
        assert_eq!(
            codes(log.refs(&csum(1), Run::ReadOnly)),
            vec![(0x05001A, None)]
        );
    }

    #[test]
    fn objects_follow_the_message() {
        let p = Problem::new(Code::DirEntryDeletedInode)
            .ino(Ino(2))
            .num(13)
            .blk(Blk(99));
        assert_eq!(
            refs(&p, Run::Repair),
            vec![Ref {
                code: 0x020003,
                ino: Some(2),
                blk: None
            }]
        );
        let p = Problem::new(Code::GroupFreeBlocks)
            .group(Group(0))
            .num(50)
            .num2(49);
        assert_eq!(refs(&p, Run::Repair)[0].blk, Some(50));
    }

    /// Every pfsck problem standing for an e2fsck code that asks a
    /// question preens as e2fsck's flag says, but the listed exceptions;
    /// and the flag written in pfsck's table agrees, so the table does not
    /// mislead a reader.
    #[test]
    fn preen_flags_are_e2fscks() {
        use crate::check::catalogue::Prompt;
        let mut wrong = Vec::new();
        for &c in Code::ALL {
            let Some(&e) = codes(c).first() else { continue };
            let entry = catalogue::entry(e).unwrap();
            if !asks(entry) || PREEN_OWN.iter().any(|(o, _)| *o == c) {
                continue;
            }
            let p = Problem::new(c);
            assert_eq!(preen_ok(&p), preen_fixes(entry), "{c:?}");
            if entry.flags & catalogue::PREEN_NO != 0 {
                assert_ne!(
                    c.spec().severity,
                    Severity::Error,
                    "{c:?}: preen must not stop"
                );
            }
            if c.spec().preen_ok != preen_fixes(entry) {
                wrong.push(format!("{c:?} ({e:06x})"));
            }
            assert_ne!(entry.prompt, Prompt::None);
        }
        assert!(
            wrong.is_empty(),
            "preen flag differs from e2fsck's: {wrong:?}"
        );
    }

    #[test]
    fn entry_to_a_deleted_inode_preens() {
        assert!(preen_ok(&Problem::new(Code::DirEntryDeletedInode)));
    }
}
