//! The problem table: every inconsistency pfsck can report, with a stable
//! code, the pass that finds it, its message and whether preen may fix it.
//!
//! Checks never print: they push a `Problem` carrying a code and numbers;
//! the CLI renders it. Message templates use `{ino}`, `{blk}`, `{group}`,
//! `{num}`, `{num2}` and `{detail}` (`{time:num}`: a time as a date).

use crate::fs::num::{Blk, Group, Ino};
use crate::narrow;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pass {
    /// Superblock, group descriptors, journal: before pass 1.
    Super,
    P1,
    /// Multiply-claimed blocks (e2fsck's passes 1B-1D).
    P1B,
    P2,
    P3,
    P4,
    P5,
}

impl Pass {
    pub fn number(self) -> u8 {
        match self {
            Pass::Super => 0,
            Pass::P1 | Pass::P1B => 1,
            Pass::P2 => 2,
            Pass::P3 => 3,
            Pass::P4 => 4,
            Pass::P5 => 5,
        }
    }
}

/// How a problem counts toward the verdict when it is left unfixed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The file system is inconsistent (exit 4 when not fixed).
    Error,
    /// Reported, but a file system left this way is still consistent (e.g.
    /// the superblock's free counts, which the kernel keeps only lazily).
    Notice,
    /// The check could not go on (exit 8).
    Fatal,
}

pub struct Spec {
    pub code: &'static str,
    pub pass: Pass,
    pub severity: Severity,
    /// May `-p` fix it without asking (e2fsck's PREEN_OK)?
    pub preen_ok: bool,
    pub message: &'static str,
}

macro_rules! problems {
    ($( $name:ident = ($code:literal, $pass:ident, $sev:ident, $preen:literal, $msg:literal), )*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $( $name, )* }

        impl Code {
            pub fn spec(self) -> &'static Spec {
                match self {
                    $( Code::$name => &Spec {
                        code: $code,
                        pass: Pass::$pass,
                        severity: Severity::$sev,
                        preen_ok: $preen,
                        message: $msg,
                    }, )*
                }
            }
            pub const ALL: &'static [Code] = &[ $( Code::$name, )* ];
        }
    };
}

problems! {
    // ---- Superblock, group descriptors, journal ----
    SbCorrupt = ("0x0001", Super, Fatal, false, "The superblock could not be read or does not describe a valid ext2/ext3/ext4 file system: {detail}"),
    SbUsedBackup = ("0x0002", Super, Notice, false, "Using the backup superblock at block {blk} ({detail})"),
    SbFeatureUnsupported = ("0x0003", Super, Fatal, false, "The file system has unsupported feature(s): {detail}"),
    SbChecksum = ("0x0004", Super, Error, true, "Superblock checksum does not match superblock"),
    SbBlocksCountTooBig = ("0x0005", Super, Fatal, false, "The file system size (according to the superblock) is {num} blocks, but the device holds only {num2} blocks"),
    SbFirstDataBlock = ("0x0006", Super, Fatal, false, "Superblock first_data_block = {num}, should have been {num2}"),
    SbInodesCount = ("0x0007", Super, Error, false, "Inode count in superblock is {num}, should be {num2}"),
    SbFirstMetaBg = ("0x0017", Super, Error, false, "The first meta_bg ({num}) is beyond the descriptor blocks (at most {num2})"),
    SbFreeBlocksInvalid = ("0x0008", Super, Notice, true, "Superblock free blocks count {num} is larger than the block count {num2}"),
    SbFreeInodesInvalid = ("0x0009", Super, Notice, true, "Superblock free inodes count {num} is larger than the inode count {num2}"),
    SbFirstIno = ("0x000A", Super, Error, false, "Superblock first_ino = {num} is invalid"),
    SbRevLevel = ("0x000B", Super, Fatal, false, "Superblock revision level {num} is not supported"),
    SbLastMountFuture = ("0x000C", Super, Notice, true, "Superblock last mount time ({time:num}) is in the future (now {time:num2})"),
    SbLastWriteFuture = ("0x000D", Super, Notice, true, "Superblock last write time ({time:num}) is in the future (now {time:num2})"),
    SbHugeFileNoLargeFile = ("0x000E", Super, Error, true, "Filesystem has huge files but the large_file flag is not set"),
    SbOrphanList = ("0x000F", Super, Notice, true, "The orphan inode list starting at inode {ino} needs processing"),
    SbExtraIsize = ("0x0010", Super, Notice, false, "Superblock {detail}_extra_isize {num} is invalid"),
    SbNeedsRecovery = ("0x0011", Super, Notice, false, "Warning: skipping journal recovery because doing a read-only filesystem check"),
    SbMetadataCsumAndGdtCsum = ("0x0012", Super, Notice, true, "Superblock has both metadata_csum and uninit_bg (gdt_csum) set"),
    SbDescSize = ("0x0013", Super, Fatal, false, "Superblock 64bit filesystem has an invalid group descriptor size {num}"),
    SbResizeInodeNoFeature = ("0x0014", Super, Error, false, "Resize inode not valid: {detail}"),
    SbQuotaInode = ("0x0016", Super, Error, false, "Invalid {detail} quota inode {ino}"),
    SbInodeFieldNoFeature = ("0x0018", Super, Error, false, "Superblock names inode {ino} as its {detail} file, but that feature is off"),
    SbBlocksPerGroupInvalid = ("0x0015", Super, Fatal, false, "Superblock blocks per group {num} is invalid"),
    SbNoUuid = ("0x0019", Super, Error, true, "Filesystem did not have a UUID; generating one."),
    SbTestFs = ("0x001A", Super, Error, true, "The test_fs flag is set (and ext4 is available)"),
    SbDirHashHint = ("0x001B", Super, Error, true, "Adding dirhash hint to filesystem."),
    Sb64bitNoExtents = ("0x001C", Super, Notice, true, "Superblock 64bit filesystem needs extents to access the whole disk"),
    SbRev0Features = ("0x001E", Super, Notice, true, "Filesystem has feature flag(s) set, but is a revision 0 filesystem"),
    SbJournalBackupMissing = ("0x001F", Super, Error, true, "Backing up journal inode block information."),
    SbHurdFiletype = ("0x0722", Super, Error, false, "The Hurd cannot use the filetype feature, which is set"),
    SbCsumSeedNoCsum = ("0x001D", Super, Notice, true, "Superblock metadata_csum_seed is not necessary without metadata_csum"),
    GdBlockBitmapLocation = ("0x0101", Super, Error, false, "Block bitmap for group {group} is not in group (block {blk})"),
    GdInodeBitmapLocation = ("0x0102", Super, Error, false, "Inode bitmap for group {group} is not in group (block {blk})"),
    GdInodeTableLocation = ("0x0103", Super, Error, false, "Inode table for group {group} is not in group (block {blk})"),
    GdChecksum = ("0x0104", Super, Notice, true, "One or more block group descriptor checksums are invalid (group {group})"),
    GdUninitWithoutCsum = ("0x0105", Super, Notice, true, "Group descriptor {group} marked uninitialized without the feature set"),
    GdItableUnused = ("0x0106", Super, Error, true, "Group descriptor {group} has invalid unused inodes count {num}"),
    GdFreeBlocksInvalid = ("0x0107", Super, Error, true, "Group descriptor {group} free blocks count {num} is invalid"),
    GdFreeInodesInvalid = ("0x0108", Super, Error, true, "Group descriptor {group} free inodes count {num} is invalid"),
    GdMetadataOverlap = ("0x0109", Super, Error, false, "{detail} for group {group} (block {blk}) overlaps other file system metadata"),
    GdBlockUninitLastGroup = ("0x010A", Super, Notice, true, "Last group block bitmap uninitialized"),
    GdInodeUninitNotZeroed = ("0x010B", Super, Notice, true, "Group {group} inode table not zeroed"),
    // e2fsck's library refuses such descriptors; with no backup to fall
    // back on it checks with them as they are, and so does pfsck.
    GdRejectedNoBackup = ("0x010C", Super, Notice, false, "Group descriptors look bad ({detail}); no usable backup, checking with them as they are"),
    JournalSuperblockCorrupt = ("0x0201", Super, Error, true, "The journal superblock is corrupt: {detail}"),
    JournalInodeInvalid = ("0x0202", Super, Error, true, "Superblock has an invalid journal (inode {ino}): {detail}"),
    JournalFeatureUnsupported = ("0x0203", Super, Error, false, "The journal has unsupported feature(s): {detail}"),
    JournalInodeNoFeature = ("0x0205", Super, Error, true, "Superblock has no has_journal flag, but a journal inode {ino} is present"),
    JournalExternalUnsupported = ("0x0206", Super, Fatal, false, "The file system uses an external journal device, which is not supported"),
    JournalChecksum = ("0x0207", Super, Error, true, "The journal superblock checksum does not match"),
    JournalNeedsRecoveryNoFlag = ("0x0208", Super, Error, false, "The journal has data to replay but the needs_recovery flag is not set"),
    JournalVersionUnsupported = ("0x0730", Super, Error, false, "The journal superblock's version (block type {num}) is not supported"),
    JournalVersionAbort = ("0x0731", Super, Fatal, false, "The check is aborted: the journal may hold updates pfsck cannot read (an unknown version or features), and replacing it would lose them"),
    JournalCannotProceed = ("0x020A", Super, Fatal, false, "The journal is unusable and -n forbids clearing it: cannot proceed with the file system check"),
    JournalRecoverNoJournal = ("0x0209", Super, Error, true, "The needs_recovery flag is set but the file system has no journal"),
    JournalAfterReplay = ("0x0210", Super, Notice, false, "Checking the file system as it will be after journal recovery ({detail})"),
    JournalTransactionCorrupt = ("0x0211", Super, Notice, true, "Journal transaction {num} is corrupt, replay would be aborted there"),
    JournalBlockChecksum = ("0x0212", Super, Notice, false, "Journalled copy of block {blk} fails its checksum and would not be replayed"),
    JournalRecoveryFails = ("0x0213", Super, Notice, false, "Journal recovery would report an error ({detail}); the journal would then be reset"),
    JournalFastCommitReplay = ("0x0214", Super, Fatal, false, "The journal holds fast-commit data for transaction {num} whose replay pfsck does not model ({detail}); run e2fsck"),
    JournalExternalBad = ("0x0216", Super, Error, false, "{detail}"),
    JournalExternalCannotProceed = ("0x0217", Super, Fatal, false, "Cannot proceed with the file system check without its external journal"),
    JournalExternalChecksum = ("0x0219", Super, Notice, true, "The external journal device's own superblock fails its checksum"),
    JournalStrayV2Fields = ("0x0218", Super, Notice, true, "The journal superblock (inode {ino}) has version 2 fields a version 1 journal, or an internal one, cannot have: the fields past the version 1 layout are cleared"),
    JournalVisible = ("0x021A", Super, Error, true, "The journal (inode {ino}) is the visible file /{detail}; moved to the reserved journal inode"),
    QuotaVisible = ("0x0771", Super, Error, true, "The {detail} quota file is the visible inode {ino}; moved to its reserved inode"),
    JournalInodeFromBackup = ("0x0215", Super, Error, true, "Journal inode {ino} is invalid ({detail}); restored from the superblock's backup of its block map"),
    MmpBlockInvalid = ("0x0230", Super, Fatal, true, "The superblock's MMP block number {blk} is invalid"),
    MmpBadMagic = ("0x0231", Super, Error, true, "The MMP block {blk} has a bad magic number"),
    MmpChecksum = ("0x0232", Super, Error, true, "The MMP block {blk} checksum does not match"),
    MmpCannotProceed = ("0x0233", Super, Fatal, false, "Cannot proceed with the file system check while its MMP block stands as it is"),
    MmpBusy = ("0x0234", Super, Error, false, "MMP check failed: {detail}. If you are sure the file system is not in use on any node, clear it with tune2fs -f -E clear_mmp"),
    // Processing the orphans is not a correction (e2fsck exits 0 after
    // it), but -n leaves it undone, which e2fsck -n reports as errors.
    OrphansPending = ("0x0220", Super, Error, true, "The orphan inode list or orphan file needs processing ({detail}); checking the file system as it will be after"),
    OrphansPendingHarmless = ("0x0225", Super, Notice, true, "The orphan inode list needs processing ({detail}); checking the file system as it will be after"),
    OrphanReleased = ("0x0221", Super, Notice, true, "{detail}"),
    OrphanFileBlockDirty = ("0x0223", Super, Error, true, "Orphan file (inode {ino}) block {num} is not clean"),
    // e2fsck -n answers no without marking the file system (NO_OK), and
    // its repair clears the flag as part of the orphan processing.
    OrphanPresentClean = ("0x0224", Super, Notice, true, "Flag orphan_present is set but orphan file is clean"),
    OrphanNotProcessed = ("0x0222", Super, Notice, true, "Orphan processing stopped: {detail}; the full check follows"),
    // The two ways a block map stops e2fsck's orphan release (it asks
    // nothing: the release stops and the full check follows).
    OrphanBlockIllegal = ("0x0720", Super, Notice, true, "Illegal block {blk} found in orphaned inode {ino}: orphan processing stopped; the full check follows"),
    OrphanBlockFreed = ("0x0721", Super, Notice, true, "Already cleared block {blk} found in orphaned inode {ino}: orphan processing stopped; the full check follows"),
    OrphanFileInodeInvalid = ("0x0226", Super, Error, true, "The orphan_file feature is set, but the orphan file inode {ino} is invalid"),
    OrphanFileWrongSize = ("0x0227", Super, Notice, false, "Orphan file (inode {ino}) size is not a whole number of blocks"),
    OrphanFileHole = ("0x0228", Super, Notice, false, "Orphan file (inode {ino}) has a hole at block {num}"),
    OrphanFileCorrupt = ("0x0229", Super, Error, true, "The orphan file (inode {ino}) cannot be set up ({detail})"),
    OrphanPresentNoFile = ("0x022A", Super, Error, true, "Flag orphan_present is set but flag orphan_file is not"),
    // After its passes e2fsck drops an orphan file on a file system
    // without a journal (the kernel uses it only with one).
    OrphanFileNoJournal = ("0x022B", Super, Error, true, "The file system has an orphan file (inode {ino}) but no journal"),

    // ---- Pass 1: inodes, blocks and sizes ----
    InodeChecksum = ("0x1001", P1, Error, true, "Inode {ino} passes checks, but checksum does not match inode"),
    InodeBadMode = ("0x1002", P1, Error, false, "Inode {ino} has a bad mode ({num})"),
    InodeDtimeSet = ("0x1003", P1, Error, true, "Inode {ino} is in use, but has dtime set"),
    InodeZeroDtimeDeleted = ("0x1004", P1, Error, true, "Deleted inode {ino} has zero dtime"),
    InodeBadFlags = ("0x1005", P1, Error, false, "Inode {ino} has flags {detail} set that are invalid for its type"),
    // Asked with NO_OK: e2fsck -n answers no and stays clean (exit 0).
    InodeTimesPre1970 = ("0x1760", P1, Notice, true, "Inode {ino} has time stamps past 2310 in the old extra-field format, probably before 1970"),
    InodeExtentsNoFeature = ("0x1006", P1, Error, false, "Inode {ino} has EXTENTS_FL flag set on a file system without extents support"),
    InodeExtentFormatNoFeature = ("0x1700", P1, Error, false, "Inode {ino} is in extent format, but the superblock lacks the extents feature"),
    InodeInlineNoFeature = ("0x1007", P1, Error, false, "Inode {ino} has INLINE_DATA_FL flag on filesystem without inline data support"),
    InodeIllegalBlock = ("0x1008", P1, Error, false, "Inode {ino} has an illegal block {blk} ({detail})"),
    // e2fsck asks it with NO_OK: a no leaves the verdict to the illegal
    // blocks themselves, each asked before it.
    InodeTooManyIllegalBlocks = ("0x1009", P1, Notice, false, "Inode {ino} has too many illegal blocks"),
    InodeISize = ("0x100B", P1, Error, true, "Inode {ino}, i_size is {num}, should be {num2}"),
    InodeIBlocks = ("0x100C", P1, Error, true, "Inode {ino}, i_blocks is {num}, should be {num2}"),
    ClusterMisaligned = ("0x10E4", P1, Error, false, "Inode {ino} logical block {num} (physical block {blk}) violates cluster allocation rules"),
    InodeBigallocBlockMap = ("0x10E5", P1, Error, false, "Inode {ino} on bigalloc filesystem cannot be block mapped"),
    InodeDirHole = ("0x100D", P1, Error, false, "Directory inode {ino} has an unallocated block #{num}"),
    InodeExtentHeader = ("0x100E", P1, Error, false, "Inode {ino} has an invalid extent tree header ({detail})"),
    InodeExtentBad = ("0x100F", P1, Error, false, "Inode {ino} has an invalid extent (logical block {num}, physical block {blk}, length {num2}): {detail}"),
    InodeExtentOrder = ("0x1010", P1, Error, false, "Inode {ino} has out-of-order extents (logical block {num}, physical block {blk})"),
    InodeExtentNodeChecksum = ("0x1011", P1, Error, false, "Inode {ino} extent block {blk} passes checks, but checksum does not match extent"),
    InodeExtentTooDeep = ("0x1012", P1, Notice, false, "Inode {ino} extent tree could be more shallow ({num}; could be <= {num2})"),
    // More valid levels than pfsck walks: a repair cannot rebuild what it
    // cannot read, and clears the inode.
    InodeExtentTreeUnwalkable = ("0x1042", P1, Error, false, "Inode {ino} extent tree has more than {num} levels of valid nodes, too deep to check"),
    // An index node reached twice in one tree (index entries sharing a
    // child): walking every path costs the product of the fan-outs, not
    // the tree's size. e2fsck ends up clearing such an inode (-y); a
    // repair clears it.
    InodeExtentTreeShared = ("0x1043", P1, Error, false, "Inode {ino} extent tree reaches node {blk} more than once (index nodes shared), walk stopped"),
    // An indirect block reached twice in one inode's map (pointers
    // sharing it): the same product of fan-outs; a repair clears it.
    InodeBlockMapShared = ("0x1044", P1, Error, false, "Inode {ino} block map reaches indirect block {blk} more than once (indirect blocks shared), walk stopped"),
    // Pass 1E's offers (e2fsck's NOT_A_FIX): the tree is consistent, it
    // could only take fewer blocks or levels. Declining leaves the file
    // system clean; making it is not a correction either (exit 0).
    ExtentTreeShorter = ("0x1045", P1, Notice, false, "Inode {ino} extent tree (at level {num}) could be shorter"),
    ExtentTreeNarrower = ("0x1046", P1, Notice, false, "Inode {ino} extent tree (at level {num}) could be narrower"),
    InodeExtentNodeBad = ("0x1013", P1, Error, false, "Inode {ino} has an invalid extent node (blk {blk}, lblk {num})"),
    InodeExtentIndexEnd = ("0x1014", P1, Error, false, "Inode {ino} extent index start {num} does not match its node's first extent {num2}"),
    InodeExtentPastEof = ("0x1015", P1, Error, false, "Inode {ino}, end of extent exceeds allowed value (logical block {num}, physical block {blk}, len {num2})"),
    InodeFastSymlink = ("0x1016", P1, Error, false, "Symlink inode {ino} is invalid ({detail})"),
    InodeDeviceBlocks = ("0x1017", P1, Error, false, "Special (device/socket/fifo) inode {ino} has non-zero block data or flags"),
    InodeInlineData = ("0x1018", P1, Error, false, "Inode {ino} has corrupt inline data ({detail})"),
    InodeExtraIsize = ("0x1019", P1, Error, true, "Inode {ino} has a extra size ({num}) which is invalid"),
    InodeFileAcl = ("0x101A", P1, Error, false, "Inode {ino} has a bad extended attribute block {blk}"),
    InodeXattrInInode = ("0x101B", P1, Error, true, "Inode {ino} has corrupt extended attributes in the inode ({detail})"),
    XattrBlockHeader = ("0x101C", P1, Error, false, "Extended attribute block {blk} (inode {ino}) has a bad header ({detail})"),
    XattrBlockEntries = ("0x101D", P1, Error, false, "Extended attribute block {blk} (inode {ino}) is corrupt ({detail})"),
    XattrBlockChecksum = ("0x101E", P1, Error, false, "Extended attribute block {blk} passes checks, but checksum does not match block"),
    XattrBlockRefcount = ("0x101F", P1, Error, false, "Extended attribute block {blk} has reference count {num}, should be {num2}"),
    XattrHash = ("0x1020", P1, Error, true, "Extended attribute in inode {ino} has a hash ({num}) which is invalid"),
    InodeReservedBad = ("0x1021", P1, Error, true, "Reserved inode {ino} ({detail}) has an invalid mode or contents"),
    RootNotDirectory = ("0x1022", P1, Error, false, "Root inode is not a directory"),
    InodeHugeFileNoFeature = ("0x1023", P1, Error, false, "Inode {ino} has HUGE_FILE flag set on a file system without huge_file support"),
    InodeLargeFileNoFeature = ("0x1024", P1, Error, true, "Inode {ino} is larger than 2 GiB but the large_file feature is not set"),
    InodeIndexNoFeature = ("0x1025", P1, Error, true, "Inode {ino} has INDEX_FL flag set on a file system without htree support"),
    // e2fsck asks at the end of pass 1, though its code is pass 2's.
    FeatureLargeDirs = ("0x10EC", P1, Error, true, "Filesystem has large directories, but lacks LARGE_DIR flag in superblock"),
    InodeIndexNotDir = ("0x1026", P1, Error, true, "Inode {ino} has INDEX_FL flag set but is not a directory"),
    InodeImagic = ("0x1027", P1, Error, false, "Inode {ino} has imagic flag set"),
    InodeInUseBitmapClear = ("0x1028", P1, Error, true, "Inode {ino} is in use but is beyond the group's unused-inode mark (itable_unused)"),
    InodeCompression = ("0x1029", P1, Error, false, "Inode {ino} has compression flags set on a file system without compression support"),
    InodeEncrypted = ("0x102A", P1, Fatal, false, "Inode {ino} is encrypted, which is not supported"),
    InodeBadSize = ("0x102B", P1, Error, false, "Inode {ino} has an invalid size {num}"),
    InodeBlockBitmapUnreadable = ("0x102C", P1, Error, false, "Error reading block {blk} ({detail}) while checking inode {ino}"),
    InodeTableUnreadable = ("0x102D", P1, Error, false, "Inode table for group {group} cannot be read (block {blk})"),
    InodeEaInodeFlag = ("0x102E", P1, Error, true, "Inode {ino} keeps an extended attribute value in an EA inode, but the ea_inode feature is off"),
    InodeCasefold = ("0x102F", P1, Error, false, "Inode {ino} has CASEFOLD flag set on a file system without casefold support"),
    InodeCasefoldNonDir = ("0x10E1", P1, Error, false, "Inode {ino} has the casefold flag set but is not a directory"),
    InodeEaInodeNonReg = ("0x10E6", P1, Error, false, "Inode {ino} has the ea_inode flag set but is not a regular file"),
    InodeEncryptNoXattr = ("0x10E2", P1, Error, false, "Inode {ino} has encrypt flag but no encryption extended attribute"),
    InodeEncryptCorrupt = ("0x10E3", P1, Error, false, "Encrypted inode {ino} has corrupt encryption extended attribute"),
    InodeOrphanInUse = ("0x1030", P1, Error, false, "Inode {ino} is on the orphan list ({detail})"),
    BadBlockInMetadata = ("0x1031", P1, Error, false, "Bad block {blk} is in use by file system metadata"),
    BadBlockInBackup = ("0x1761", P1, Notice, true, "Bad block {blk} lies in group {group}'s backup {detail}"),
    BadBlockUnnamed = ("0x1762", P1, Notice, true, "Bad block {blk} lies in the file system's own blocks, but in none the bad block check names (a reserved descriptor block): it stays listed"),
    BadBlocksInodeInBadBlock = ("0x1036", P1, Error, false, "Bad block list says the bad block list inode is bad"),
    HtreeRootInvalid = ("0x1032", P1, Error, true, "HTREE directory inode {ino} has an invalid root node ({detail})"),
    XattrEaInodeInvalid = ("0x1034", P1, Error, true, "Inode {ino} has illegal extended attribute value inode {num}"),
    XattrValueSize = ("0x10ED", P1, Error, true, "Extended attribute in inode {ino} has a value size ({num}) which is invalid"),
    XattrEaInodeNoFlag = ("0x1035", P1, Error, true, "Inode {ino} has invalid extended attribute. EA inode {num} missing EA_INODE flag"),
    // e2fsck's inode scan: more than half the inodes of an inode-table
    // block fail their checksum or have an impossible block map, so every
    // in-use inode of that block is taken for garbage.
    InodeReallyDir = ("0x1041", P1, Error, false, "Inode {ino} is a {detail} but it looks like it is really a directory"),
    InodeGarbage = ("0x1040", P1, Error, false, "Inode {ino} seems to contain garbage"),
    SpecialImmutable = ("0x1033", P1, Notice, false, "Special (device/socket/fifo/symlink) file (inode {ino}) has immutable or append-only flag set"),

    // ---- Pass 1B-1D: multiply-claimed blocks ----
    DupBlocks = ("0x1101", P1B, Error, false, "Inode {ino} has {num} multiply-claimed block(s), shared with {num2} file(s): {detail}"),

    // ---- Pass 2: directory structure ----
    DirEntryBadRecLen = ("0x2001", P2, Error, false, "Directory inode {ino}, block #{num}, offset {num2}: entry {detail}, left inside the entry before it by the salvage, gets a rec_len reaching the end of the block"),
    DirEntryBadInode = ("0x2002", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) has bad inode #: {num}"),
    DirEntryDeletedInode = ("0x2003", P2, Error, true, "Entry '{detail}' in {path:ino} ({ino}) has deleted/unused inode {num}"),
    DirEntryLinkToDir = ("0x2004", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) is a link to directory {num}"),
    DirEntryLinkToRoot = ("0x2005", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) is a link to the root inode"),
    DirEntryIllegalChars = ("0x2006", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) has illegal characters in its name"),
    DirEntryZeroLenName = ("0x2007", P2, Error, false, "Entry in directory inode {ino} at offset {num} has a zero-length name"),
    DirEntryFileType = ("0x2008", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) has an incorrect filetype (was {num}, should be {num2})"),
    // e2fsck's PR_2_SET_FILETYPE: a type of 0 where the feature wants one
    // is filled in by a repair and not an error for a read-only check.
    DirEntryFileTypeUnset = ("0x2050", P2, Notice, true, "Setting filetype for entry '{detail}' in {path:ino} ({ino}) to {num2}"),
    DirEntryFileTypeSet = ("0x2009", P2, Error, true, "Entry '{detail}' in {path:ino} ({ino}) has filetype set on a file system without the filetype feature"),
    DirEntryReservedInode = ("0x200A", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) points to reserved inode {num}"),
    DirEntryBadInodeTarget = ("0x200B", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) points to inode {num} which is bad"),
    DirEntryDuplicate = ("0x200C", P2, Error, false, "Duplicate entry '{detail}' found in {path:ino} ({ino})"),
    DirDotMissing = ("0x200D", P2, Error, false, "Missing '.' in directory inode {ino}"),
    DirDotDotMissing = ("0x200E", P2, Error, false, "Missing '..' in directory inode {ino}"),
    DirDotBadInode = ("0x200F", P2, Error, false, "'.' in directory inode {ino} has wrong inode number {num}"),
    // e2fsck's PR_2_SPLIT_DOT is NO_OK: a '.' spanning free space is
    // still a valid entry.
    DirDotRecLen = ("0x2010", P2, Notice, false, "'.' directory entry in directory inode {ino} has a bad rec_len {num}"),
    DirDotDotBadForm = ("0x2011", P2, Error, false, "'..' in directory inode {ino} is malformed"),
    DirDotSecondEntry = ("0x2012", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) is a '.' or '..' entry in the wrong place"),
    DirBlockChecksum = ("0x2013", P2, Error, true, "Directory inode {ino}, block #{num}, offset 0: directory passes checks but fails checksum"),
    DirBlockNoTail = ("0x2014", P2, Error, true, "Directory inode {ino}, block #{num}: directory block has no checksum tail"),
    DirBlockCorrupt = ("0x2015", P2, Error, false, "Directory inode {ino}, block #{num}, offset {num2}: directory corrupted"),
    DirBlockUnreadable = ("0x2016", P2, Error, false, "Error reading directory block {blk} (inode {ino})"),
    HtreeRootBad = ("0x2017", P2, Error, true, "Directory inode {ino} has a bad htree root node ({detail})"),
    HtreeHashVersion = ("0x2018", P2, Error, true, "Directory inode {ino} htree root uses an unsupported hash version ({num})"),
    HtreeDepth = ("0x2019", P2, Error, true, "Directory inode {ino} htree has too big a depth ({num})"),
    HtreeLimit = ("0x201A", P2, Error, true, "Directory inode {ino} htree node at block #{num} has a bad limit ({num2})"),
    HtreeCount = ("0x201B", P2, Error, true, "Directory inode {ino} htree node at block #{num} has a bad count ({num2})"),
    HtreeHashOrder = ("0x201C", P2, Error, true, "Directory inode {ino} htree is not sorted by hash at block #{num}"),
    HtreeBadBlock = ("0x201D", P2, Error, false, "Directory inode {ino} ({path:ino}) htree points to an invalid block #{num}"),
    HtreeNodeChecksum = ("0x201E", P2, Error, true, "Problem in HTREE directory inode {ino}: internal node fails checksum"),
    HtreeHashRange = ("0x201F", P2, Error, false, "Directory inode {ino} has a bad hash ({detail}) in htree leaf block #{num}"),
    HtreeBlockReferenced = ("0x2020", P2, Error, false, "Directory inode {ino} htree block #{num} is referenced {num2} times"),
    HtreeNoIndexFlag = ("0x2021", P2, Error, false, "Directory inode {ino} has an htree root but not the INDEX flag"),
    HtreeInvalid = ("0x2022", P2, Error, false, "Directory inode {ino} ({path:ino}) has an invalid htree index"),
    DirInlineBad = ("0x2023", P2, Error, false, "Directory inode {ino} has corrupt inline data ({detail})"),
    DirEntryEncryptedShort = ("0x2024", P2, Error, false, "Encrypted entry '{detail}' in {path:ino} ({ino}) is too short"),
    DirEntryUnencrypted = ("0x20E1", P2, Error, false, "Encrypted entry '{detail}' in {path:ino} ({ino}) references unencrypted inode {num}"),
    DirEntryPolicyMismatch = ("0x20E2", P2, Error, false, "Encrypted entry '{detail}' in {path:ino} ({ino}) references inode {num}, which has a different encryption policy"),
    DirEntryEaInode = ("0x20E4", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) names EA inode {num}, which holds an extended attribute value"),
    DirEntryBadUtf8 = ("0x20E3", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) has illegal UTF-8 characters in its name"),
    DirEntryUnusedArea = ("0x2026", P2, Error, true, "Entry '{detail}' in {path:ino} ({ino}) references inode {num} found in group {group}'s unused inodes area"),
    DirEntryUninitGroup = ("0x2027", P2, Error, true, "Entry '{detail}' in {path:ino} ({ino}) references inode {num} in group {group} where _INODE_UNINIT is set"),
    DirBlockEmpty = ("0x2025", P2, Error, false, "Directory inode {ino} block #{num} should be a directory block but is empty or garbage"),
    DirHole = ("0x2028", P2, Error, false, "Directory inode {ino} has an unallocated block #{num}"),
    DirEntryLinkToDot = ("0x2029", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) is a link to '.'"),
    DirDotNotTerminated = ("0x202A", P2, Error, false, "'{detail}' directory entry in directory inode {ino} is not NULL terminated"),
    DirEntryInodeInBadBlock = ("0x202C", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) points to inode {num} located in a bad block"),
    HtreeLeafDepth = ("0x202B", P2, Error, false, "Directory inode {ino} htree leaf block #{num} is not at depth {num2}"),
    // e2fsck counts regular files of 2 GiB or more in pass 1 and asks at
    // the end of pass 2: kernels without the feature would refuse them.
    FeatureLargeFiles = ("0x202D", P2, Error, true, "Filesystem contains large files, but lacks LARGE_FILE flag in superblock"),
    // e2fsck -n gives up at a directory block it may not salvage: what
    // the later passes would say rests on that directory.
    // e2fsck -n cannot walk below an indirect pointer it may not zero:
    // its block walk fails and it aborts after that inode.
    StoppedAtIllegalIndirect = ("0x10E7", P1, Notice, false, "The check stops at inode {ino}'s indirect block outside the file system, as e2fsck -n does; run a repair to check the rest"),
    // e2fsck -n reads an xattr block again to set its reference count
    // right; a block it could not read (bad header or checksum) fails
    // there, and it aborts.
    StoppedAtUnreadableXattr = ("0x10E8", P1, Notice, false, "The check stops at extended attribute block {blk}, whose reference count it cannot set right, as e2fsck -n does; run a repair to check the rest"),
    // e2fsck -n reads again, with its checksum checked, the bad blocks
    // inode to walk its list (after declining to clear it), the resize
    // inode to make it again (end of pass 1) and every inode in pass 1B.
    // An indirect block of the bad blocks inode that is file system
    // metadata or a block its list already names (e2fsck zeroes the
    // pointer).
    BadBlocksInodeIndirect = ("0x10EA", P1, Error, false, "Bad blocks inode's indirect block {blk} is {detail}"),
    // After such an indirect block e2fsck asks whether to go on with a
    // bad blocks inode that looks corrupt; -n answers no and aborts.
    StoppedAtInodeTable = ("0x10EE", P1, Notice, false, "The check stops at group {group}, whose inode table lies outside the file system and was not relocated, as e2fsck -n does; run a repair to check the rest"),
    StoppedAtBadBlocksInode = ("0x10EB", P1, Notice, false, "The check stops at the bad blocks inode, whose list looks corrupt, as e2fsck -n does; run a repair to check the rest"),
    StoppedAtInodeChecksumP1 = ("0x10E9", P1, Notice, false, "The check stops at inode {ino}, whose checksum it may not fix, as e2fsck -n does; run a repair to check the rest"),
    StoppedAtInodeChecksumP1B = ("0x1102", P1B, Notice, false, "The check stops at inode {ino}, whose checksum it may not fix, as e2fsck -n does; run a repair to check the rest"),
    StoppedAtCorruptDir = ("0x202E", P2, Notice, false, "The check stops at the directory block it may not salvage, as e2fsck -n does; run a repair to check the rest"),
    // e2fsck -n reads an inode again where pass 2 meets an entry naming
    // one it marked bad, and pass 4 where a link count differs: a checksum
    // it was not allowed to fix fails that read, and it aborts.
    StoppedAtInodeChecksumP2 = ("0x202F", P2, Notice, false, "The check stops at inode {ino}, whose checksum it may not fix, as e2fsck -n does; run a repair to check the rest"),
    StoppedAtInodeChecksumP4 = ("0x4007", P4, Notice, false, "The check stops at inode {ino}, whose checksum it may not fix, as e2fsck -n does; run a repair to check the rest"),
    // e2fsck -n walks a reserved inode with a directory's mode as a
    // directory but keeps no record of it: setting its parent from '..'
    // fails, and it aborts.
    StoppedAtNoDirInfo = ("0x2030", P2, Notice, false, "The check stops at reserved inode {ino}, a directory e2fsck -n keeps no record of, as e2fsck -n does; run a repair to check the rest"),

    // ---- Pass 3: directory connectivity ----
    RootMissing = ("0x3001", P3, Error, false, "Root inode not allocated"),
    StoppedWithoutRoot = ("0x3740", P3, Notice, false, "The check stops: without a root directory, which -n may not make, nothing can be connected, as e2fsck -n gives up; run a repair to check the rest"),
    DirUnconnected = ("0x3002", P3, Error, false, "Unconnected directory inode {ino} (was in {path:num})"),
    DirDotDotWrong = ("0x3003", P3, Error, false, "'..' in {path:detail/ino} ({ino}) is {path:num2} ({num2}), should be {path:detail} ({detail})"),
    // Only a repair looks for lost+found (e2fsck -n does not), so these
    // three are never reported by a read-only check; declined, they leave
    // the file system invalid, as e2fsck's flags say.
    LostFoundMissing = ("0x3004", P3, Error, true, "/lost+found not found"),
    LostFoundNotDir = ("0x3005", P3, Error, false, "/lost+found is not a directory (inode {ino})"),
    LostFoundEncrypted = ("0x30E1", P3, Error, false, "/lost+found is encrypted (inode {ino})"),
    LostFoundFull = ("0x3008", P3, Error, false, "No room in /lost+found for inode {ino}"),
    LostFoundInlineData = ("0x3760", P3, Error, false, "/lost+found keeps its entries inline (inode {ino})"),
    DirMultipleParents = ("0x3007", P3, Error, false, "Directory inode {ino} is linked from more than one directory ({num} and {num2})"),
    DirRebuildDuplicate = ("0x3710", P3, Error, false, "Duplicate entry '{detail}' in {path:ino} ({ino}) found rebuilding the directory"),

    // ---- Pass 4: reference counts ----
    InodeUnattached = ("0x4001", P4, Error, false, "Unattached inode {ino}"),
    // 0x030002 again, asked when pass 4 connects an inode.
    LostFoundFullP4 = ("0x4009", P4, Error, false, "No room in /lost+found for inode {ino}"),
    InodeUnattachedZero = ("0x4002", P4, Error, true, "Unattached zero-length inode {ino}"),
    InodeLinkCount = ("0x4003", P4, Error, true, "Inode {ino} ref count is {num}, should be {num2}"),
    DirNlinkFeature = ("0x4005", P4, Error, false, "Directory exceeds max links, but no DIR_NLINK feature in superblock"),
    InodeEaInodeSpurious = ("0x4006", P4, Error, true, "Inode {ino} has the EA_INODE flag but no extended attribute or directory entry refers to it"),
    // e2fsck asks this only in a repair; a read-only check takes the
    // count 1 of an indexed directory as an overflow.
    DirLinkOverflowExact = ("0x4008", P4, Error, true, "Directory inode {ino} ref count set to overflow but could be exact value {num2}"),
    InodeEaInodeRefs = ("0x4004", P4, Error, true, "Extended attribute inode {ino} ref count is {num}, should be {num2}"),

    // ---- Pass 5: bitmaps and summaries ----
    BlockBitmapDiff = ("0x5001", P5, Error, true, "Block bitmap differences: {detail}"),
    InodeBitmapDiff = ("0x5002", P5, Error, true, "Inode bitmap differences: {detail}"),
    GroupFreeBlocks = ("0x5003", P5, Error, true, "Free blocks count wrong for group #{group} ({num}, counted={num2})"),
    GroupFreeInodes = ("0x5004", P5, Error, true, "Free inodes count wrong for group #{group} ({num}, counted={num2})"),
    GroupDirsCount = ("0x5005", P5, Error, true, "Directories count wrong for group #{group} ({num}, counted={num2})"),
    SuperFreeBlocks = ("0x5006", P5, Notice, true, "Free blocks count wrong ({num}, counted={num2})"),
    SuperFreeInodes = ("0x5007", P5, Notice, true, "Free inodes count wrong ({num}, counted={num2})"),
    BlockBitmapChecksum = ("0x5008", P5, Error, true, "Group {group} block bitmap does not match checksum"),
    InodeBitmapChecksum = ("0x5009", P5, Error, true, "Group {group} inode bitmap does not match checksum"),
    BlockBitmapPadding = ("0x500A", P5, Error, true, "Padding at end of block bitmap of group {group} is not set"),
    InodeBitmapPadding = ("0x500B", P5, Error, true, "Padding at end of inode bitmap of group {group} is not set"),
    GroupUninitFlags = ("0x500C", P5, Error, true, "Group {group} {detail}"),
    QuotaUsage = ("0x500E", P5, Error, true, "Usage inconsistent for {detail}"),
    QuotaEntryMissing = ("0x500F", P5, Error, true, "Missing {detail} quota entry for ID {num}"),
    QuotaFileBad = ("0x5010", P5, Error, true, "Quota file cannot be used: {detail}"),
    BitmapUnreadable = ("0x500D", P5, Error, false, "Cannot read {detail} bitmap of group {group} (block {blk})"),
    // e2fsck -n asks once per used block (inode) of such a group, as its
    // "no" keeps the flag: millions of questions on a large file system.
    // pfsck asks up to a bound, then stops there.
    StoppedAtUninitGroup = ("0x5011", P5, Notice, false, "The check stops at groups whose uninitialised flag it may not clear, after too many blocks or inodes in use in them; run a repair to check the rest"),
}

pub use super::problem_list::ProblemList;

/// One reported inconsistency. Which fields mean what depends on the code's
/// message; unused ones are absent. Read the fields with [`Problem::args`].
/// Lists keep problems encoded ([`ProblemList`], a few bytes each instead
/// of this value's 56): a check can find hundreds of thousands, and the
/// report keeps them all (issue 4: many errors without a memory blow-up).
#[derive(Clone, PartialEq, Eq)]
pub struct Problem {
    pub code: Code,
    /// Which of the numbers are set (`HAS_*` bits).
    has: u8,
    ino: Ino,
    group: Group,
    blk: Blk,
    num: u64,
    num2: u64,
    /// The e2fsck code the check named (`HAS_E2`), where the code's
    /// usual one is not it (see `e2fsck_map`).
    e2: u32,
    /// None for an empty detail, as most problems have.
    detail: Option<Box<str>>,
}

const HAS_INO: u8 = 1;
const HAS_BLK: u8 = 2;
const HAS_GROUP: u8 = 4;
const HAS_NUM: u8 = 8;
const HAS_NUM2: u8 = 16;
const HAS_E2: u8 = 32;

/// A problem's numbers and detail, as its message fills them in; None
/// where the problem has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Args<'a> {
    pub ino: Option<Ino>,
    pub blk: Option<Blk>,
    pub group: Option<Group>,
    pub num: Option<u64>,
    pub num2: Option<u64>,
    /// Empty when there is none.
    pub detail: &'a str,
}

impl std::fmt::Debug for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = self.args();
        f.debug_struct("Problem")
            .field("code", &self.code)
            .field("ino", &a.ino)
            .field("blk", &a.blk)
            .field("group", &a.group)
            .field("num", &a.num)
            .field("num2", &a.num2)
            .field("detail", &a.detail)
            .field("e2fsck", &self.e2fsck_override())
            .finish()
    }
}

impl Problem {
    pub fn new(code: Code) -> Problem {
        Problem {
            code,
            has: 0,
            ino: Ino::NONE,
            group: Group(0),
            blk: Blk(0),
            num: 0,
            num2: 0,
            e2: 0,
            detail: None,
        }
    }
    pub fn ino(mut self, ino: Ino) -> Problem {
        self.ino = ino;
        self.has |= HAS_INO;
        self
    }
    pub fn blk(mut self, blk: Blk) -> Problem {
        self.blk = blk;
        self.has |= HAS_BLK;
        self
    }
    pub fn group(mut self, g: Group) -> Problem {
        self.group = g;
        self.has |= HAS_GROUP;
        self
    }
    pub fn num(mut self, n: u64) -> Problem {
        self.num = n;
        self.has |= HAS_NUM;
        self
    }
    pub fn num2(mut self, n: u64) -> Problem {
        self.num2 = n;
        self.has |= HAS_NUM2;
        self
    }
    /// Names the e2fsck code this problem stands for, one of
    /// `e2fsck_map::codes(code)`: e2fsck has one code for each variant
    /// that pfsck reports under one code and a detail.
    pub fn e2fsck(mut self, code: u32) -> Problem {
        debug_assert!(
            super::e2fsck_map::codes(self.code).contains(&code),
            "{:?} cannot stand for e2fsck's {code:06x}",
            self.code
        );
        self.e2 = code;
        self.has |= HAS_E2;
        self
    }
    /// The e2fsck code named with [`Problem::e2fsck`].
    pub fn e2fsck_override(&self) -> Option<u32> {
        (self.has & HAS_E2 != 0).then_some(self.e2)
    }
    pub fn detail(mut self, d: impl Into<String>) -> Problem {
        let d: String = d.into();
        self.detail = (!d.is_empty()).then(|| d.into_boxed_str());
        self
    }

    /// The numbers and the detail.
    pub fn args(&self) -> Args<'_> {
        let some = |bit: u8| self.has & bit != 0;
        Args {
            ino: some(HAS_INO).then_some(self.ino),
            blk: some(HAS_BLK).then_some(self.blk),
            group: some(HAS_GROUP).then_some(self.group),
            num: some(HAS_NUM).then_some(self.num),
            num2: some(HAS_NUM2).then_some(self.num2),
            detail: self.detail.as_deref().unwrap_or(""),
        }
    }

    pub fn spec(&self) -> &'static Spec {
        self.code.spec()
    }

    /// The message with its placeholders filled in (the detail as it is:
    /// for JSON, which escapes it itself).
    pub fn message(&self) -> String {
        self.message_in(None)
    }

    /// [`Problem::message`], with directories named by their path in
    /// `tree` where e2fsck names them so.
    pub fn message_in(&self, tree: Option<&super::paths::DirTree>) -> String {
        self.render(|d| d.to_string(), tree)
    }

    /// The message for a terminal: the detail (mostly a file name, chosen
    /// by whoever made the file system) escaped as e2fsck prints names, so
    /// that none of its bytes moves the cursor, clears the screen or
    /// starts a line that looks like pfsck's own.
    pub fn text(&self) -> String {
        self.text_in(None)
    }

    /// [`Problem::text`], with directories named by their path in `tree`
    /// where e2fsck names them so.
    pub fn text_in(&self, tree: Option<&super::paths::DirTree>) -> String {
        self.render(|d| escape_name(d.as_bytes()), tree)
    }

    /// The message template: the code's own, or e2fsck's wording for the
    /// e2fsck problem the check named where one code stands for several.
    fn template(&self) -> &'static str {
        match (self.code, self.e2fsck_code()) {
            (Code::InodeInlineNoFeature, Some(0x01006F)) => {
                return "Inode {ino} has inline data, but superblock is missing INLINE_DATA feature";
            }
            (Code::InodeExtentHeader, Some(0x010081)) => {
                return "Inode {ino} has corrupt extent header";
            }
            (Code::HtreeNodeChecksum, Some(0x020049)) => {
                return "Problem in HTREE directory inode {ino}: root node fails checksum";
            }
            _ => {}
        }
        match (self.code, self.e2fsck_override()) {
            (Code::BadBlockInMetadata, Some(0x01000A)) if self.args().group.is_some() => {
                "Group {group}'s block bitmap ({blk}) is bad"
            }
            (Code::BadBlockInMetadata, Some(0x01000B)) if self.args().group.is_some() => {
                "Group {group}'s inode bitmap ({blk}) is bad"
            }
            (Code::BadBlockInMetadata, Some(0x010019)) => {
                "The primary superblock ({blk}) is listed as a bad block. If it really is, the file system cannot be repaired; dropping it from the list keeps it in use, with no guarantee it can be read"
            }
            (Code::BadBlockInMetadata, Some(0x01001A)) => {
                "Block {blk} of the primary group descriptors is listed as a bad block. If it really is, the file system cannot be repaired; dropping it from the list keeps it in use, with no guarantee it can be read"
            }
            (Code::SbLastMountFuture, Some(0x00003C)) => {
                "Superblock last mount time is in the future, by less than a day (the hardware clock is probably set to local time)"
            }
            (Code::SbLastWriteFuture, Some(0x00003D)) => {
                "Superblock last write time is in the future, by less than a day (the hardware clock is probably set to local time)"
            }
            _ => self.spec().message,
        }
    }

    /// `{path:ino}`, `{path:num}`: the path of that directory, or `???`
    /// (what e2fsck prints when it cannot find one) without a tree.
    fn render(
        &self,
        detail: impl Fn(&str) -> String,
        tree: Option<&super::paths::DirTree>,
    ) -> String {
        // As e2fsck's %p: the path of a directory (inode 0 by its role).
        let pass = self.spec().pass;
        let path = |n: Option<u64>| match (tree, n) {
            (Some(t), Some(n)) => t.pathname_in(pass, Ino(narrow::sat32(n)), Ino::NONE),
            _ => "???".to_string(),
        };
        let mut out = String::new();
        let mut rest = self.template();
        while let Some(start) = rest.find('{') {
            out.push_str(&rest[..start]);
            let Some(len) = rest[start..].find('}') else {
                break;
            };
            let key = &rest[start + 1..start + len];
            let opt = |v: Option<u64>| v.map_or_else(|| "?".to_string(), |n| n.to_string());
            let a = self.args();
            match key {
                "ino" => out.push_str(&opt(a.ino.map(|i| u64::from(i.get())))),
                "blk" => out.push_str(&opt(a.blk.map(Blk::get))),
                "group" => out.push_str(&opt(a.group.map(|g| u64::from(g.get())))),
                "num" => out.push_str(&opt(a.num)),
                "num2" => out.push_str(&opt(a.num2)),
                // Seconds since the epoch, as a date: what a reader can
                // compare with the clock.
                "time:num" => out.push_str(&a.num.map_or("?".into(), |n| ctime(narrow::sat32(n)))),
                "time:num2" => {
                    out.push_str(&a.num2.map_or("?".into(), |n| ctime(narrow::sat32(n))))
                }
                "detail" => out.push_str(&detail(a.detail)),
                "path:ino" => out.push_str(&path(a.ino.map(|i| u64::from(i.get())))),
                "path:num" => out.push_str(&path(a.num)),
                "path:num2" => out.push_str(&path(a.num2)),
                // The detail is the number of a directory.
                "path:detail" => out.push_str(&path(a.detail.parse().ok())),
                "path:detail/ino" => out.push_str(&match (tree, a.detail.parse().ok(), a.ino) {
                    (Some(t), Some(d), Some(i)) => t.pathname_in(pass, Ino(d), i),
                    _ => "???".to_string(),
                }),
                other => {
                    out.push('{');
                    out.push_str(other);
                    out.push('}');
                }
            }
            rest = &rest[start + len + 1..];
        }
        out.push_str(rest);
        out
    }
}

/// `bytes` as e2fsck prints a name: a byte with the high bit set as `M-`
/// and the byte without it, a control character (and DEL) as `^` and the
/// character 0x40 away (`^[` for ESC, `^?` for DEL), so `M-^[` for the
/// C1 CSI 0x9b. e2fsck leaves 0x80 itself raw; it is escaped here too
/// (`M-^@`), since no byte of a name should reach a terminal as a control.
pub fn escape_name(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        let mut c = b;
        if c >= 0x80 {
            out.push_str("M-");
            c -= 0x80;
        }
        if c < 0x20 || c == 0x7f {
            out.push('^');
            c ^= 0x40;
        }
        out.push(char::from(c));
    }
    out
}

/// A time as e2fsck prints an inode's (`Tue Sep 21 03:19:14 1993`), in
/// UTC.
pub fn ctime(secs: u32) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = i64::from(secs);
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // Days since 1970-01-01 to a civil date (Howard Hinnant's method).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{} {} {day:>2} {:02}:{:02}:{:02} {year}",
        DAYS[usize::try_from(days.rem_euclid(7)).unwrap_or(0)],
        MONTHS[usize::try_from(month - 1).unwrap_or(0)],
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_and_prefixed_by_pass() {
        let mut seen = HashSet::new();
        for c in Code::ALL {
            let s = c.spec();
            assert!(seen.insert(s.code), "duplicate code {}", s.code);
            let digit = s.code.as_bytes()[2] - b'0';
            let expect = match s.pass {
                Pass::Super => 0,
                Pass::P1 | Pass::P1B => 1,
                p => p.number(),
            };
            assert_eq!(digit, expect, "code {} in pass {:?}", s.code, s.pass);
        }
    }

    #[test]
    fn names_are_escaped_as_e2fsck_does() {
        assert_eq!(escape_name(b"a\x1b[2Jb"), "a^[[2Jb");
        assert_eq!(escape_name(b"cr\rX\nY\x7f"), "cr^MX^JY^?");
        assert_eq!(escape_name("é".as_bytes()), "M-CM-)");
        assert_eq!(escape_name(b"\x9b\xff\x80"), "M-^[M-^?M-^@");
        let p = Problem::new(Code::DirEntryDeletedInode)
            .ino(Ino(2))
            .num(12)
            .detail("nl\nPass 5");
        assert!(p.text().starts_with("Entry 'nl^JPass 5' in"));
        assert!(p.message().starts_with("Entry 'nl\nPass 5' in"));
    }

    #[test]
    fn message_fills_placeholders() {
        let p = Problem::new(Code::InodeISize)
            .ino(Ino(12))
            .num(0)
            .num2(1024);
        assert_eq!(p.message(), "Inode 12, i_size is 0, should be 1024");
    }
}
