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
    SbCorrupt = ("0x0001", Super, Fatal, false, "No usable ext2/ext3/ext4 superblock here: {detail}"),
    SbUsedBackup = ("0x0002", Super, Notice, false, "The primary superblock is unusable ({detail}); using the copy at block {blk}"),
    SbFeatureUnsupported = ("0x0003", Super, Fatal, false, "Features this checker does not know are set: {detail}"),
    SbChecksum = ("0x0004", Super, Error, true, "The superblock's checksum is wrong"),
    // e2fsck asks whether to abort: -n says no and checks on; a repair
    // says yes and stops (`SbSizeAbort`, the same question answered).
    SbBlocksCountTooBig = ("0x0005", Super, Error, false, "The superblock counts {num} blocks; the device has room for {num2}"),
    SbSizeAbort = ("0x0020", Super, Fatal, false, "The superblock counts {num} blocks; the device has room for {num2}"),
    // Asked for with -E bmap2extent (a repair only), not found wrong: e2fsck
    // sets the feature and converts without a word, and neither is a
    // correction (exit 0).
    SbExtentsForConversion = ("0x0022", Super, Notice, true, "The extent feature is not set; -E bmap2extent sets it to convert block maps"),
    SbFirstDataBlock = ("0x0006", Super, Fatal, false, "The superblock's first data block is {num}; it must be {num2}"),
    SbInodesCount = ("0x0007", Super, Error, false, "The superblock's inode count {num} disagrees with the geometry ({num2})"),
    SbFirstMetaBg = ("0x0017", Super, Error, false, "The first meta_bg ({num}) is beyond the descriptor blocks (at most {num2})"),
    SbFreeBlocksInvalid = ("0x0008", Super, Notice, true, "The superblock's free block count {num} exceeds the block count {num2}"),
    SbFreeInodesInvalid = ("0x0009", Super, Notice, true, "The superblock's free inode count {num} exceeds the inode count {num2}"),
    SbFirstIno = ("0x000A", Super, Error, false, "The superblock's first ordinary inode ({num}) is out of range"),
    SbRevLevel = ("0x000B", Super, Fatal, false, "Superblock revision {num} is beyond what this checker reads"),
    SbLastMountFuture = ("0x000C", Super, Notice, true, "The last mount time ({time:num}) lies ahead of the clock ({time:num2})"),
    SbLastWriteFuture = ("0x000D", Super, Notice, true, "The last write time ({time:num}) lies ahead of the clock ({time:num2})"),
    SbHugeFileNoLargeFile = ("0x000E", Super, Error, true, "huge_file is set without large_file"),
    SbOrphanList = ("0x000F", Super, Notice, true, "Orphan inodes starting at {ino} are waiting to be released"),
    SbExtraIsize = ("0x0010", Super, Notice, false, "The superblock's {detail} extra inode size {num} is out of range"),
    SbNeedsRecovery = ("0x0011", Super, Notice, false, "The journal needs replaying, which a read-only check leaves undone"),
    SbMetadataCsumAndGdtCsum = ("0x0012", Super, Notice, true, "metadata_csum and uninit_bg (gdt_csum) are both set; only the first is wanted"),
    SbDescSize = ("0x0013", Super, Fatal, false, "Group descriptor size {num} is invalid for a 64bit file system"),
    SbResizeInodeNoFeature = ("0x0014", Super, Error, false, "The resize inode is wrong: {detail}"),
    SbQuotaInode = ("0x0016", Super, Error, false, "The {detail} quota file named in the superblock (inode {ino}) is unusable"),
    SbInodeFieldNoFeature = ("0x0018", Super, Error, false, "Superblock names inode {ino} as its {detail} file, but that feature is off"),
    SbBlocksPerGroupInvalid = ("0x0015", Super, Fatal, false, "The superblock's blocks per group ({num}) is out of range"),
    SbNoUuid = ("0x0019", Super, Error, true, "The file system has no UUID; a new one is made"),
    SbTestFs = ("0x001A", Super, Error, true, "The test_fs flag is set (and ext4 is available)"),
    SbDirHashHint = ("0x001B", Super, Error, true, "No directory hash hint is recorded; one is added"),
    Sb64bitNoExtents = ("0x001C", Super, Notice, true, "A 64bit file system without the extents feature cannot reach all its blocks"),
    SbRev0Features = ("0x001E", Super, Notice, true, "Feature flags are set on a revision 0 file system"),
    SbJournalBackupMissing = ("0x001F", Super, Error, true, "The superblock keeps no copy of the journal inode's block map; one is saved"),
    SbHurdFiletype = ("0x0722", Super, Error, false, "The Hurd cannot use the filetype feature, which is set"),
    SbCsumSeedNoCsum = ("0x001D", Super, Notice, true, "metadata_csum_seed is set without metadata_csum"),
    GdBlockBitmapLocation = ("0x0101", Super, Error, false, "Group {group}'s block bitmap (block {blk}) lies outside the group"),
    GdInodeBitmapLocation = ("0x0102", Super, Error, false, "Group {group}'s inode bitmap (block {blk}) lies outside the group"),
    GdInodeTableLocation = ("0x0103", Super, Error, false, "Group {group}'s inode table (block {blk}) lies outside the group"),
    // e2fsck looks the journal's UUID up as blkid does and sets the hint
    // to the device number it finds, before it marks the file system
    // valid: a no leaves -n's verdict to the passes.
    SbJournalDevHint = ("0x0021", Super, Error, true, "The superblock's hint for the external journal's device ({num2}) is not the number of the device its UUID names ({num})"),
    GdChecksum = ("0x0104", Super, Notice, true, "Group descriptor checksums are wrong (first: group {group})"),
    GdUninitWithoutCsum = ("0x0105", Super, Notice, true, "Group {group} is flagged uninitialised on a file system without group checksums"),
    GdItableUnused = ("0x0106", Super, Error, true, "Group {group}'s count of never-used inodes ({num}) is out of range"),
    GdFreeBlocksInvalid = ("0x0107", Super, Error, true, "Group {group}'s free block count ({num}) is out of range"),
    GdFreeInodesInvalid = ("0x0108", Super, Error, true, "Group {group}'s free inode count ({num}) is out of range"),
    GdMetadataOverlap = ("0x0109", Super, Error, false, "{detail} for group {group} (block {blk}) overlaps other file system metadata"),
    GdBlockUninitLastGroup = ("0x010A", Super, Notice, true, "The last group's block bitmap is flagged uninitialised"),
    GdInodeUninitNotZeroed = ("0x010B", Super, Notice, true, "Group {group}'s inode table is not flagged as zeroed"),
    // e2fsck's library refuses such descriptors; with no backup to fall
    // back on it checks with them as they are, and so does pfsck.
    GdRejectedNoBackup = ("0x010C", Super, Notice, false, "Group descriptors look bad ({detail}); no usable backup, checking with them as they are"),
    JournalSuperblockCorrupt = ("0x0201", Super, Error, true, "The journal superblock is corrupt: {detail}"),
    JournalInodeInvalid = ("0x0202", Super, Error, true, "The journal (inode {ino}) is unusable: {detail}"),
    JournalFeatureUnsupported = ("0x0203", Super, Error, false, "The journal has unsupported feature(s): {detail}"),
    JournalInodeNoFeature = ("0x0205", Super, Error, true, "Inode {ino} holds a journal but has_journal is not set"),
    JournalExternalUnsupported = ("0x0206", Super, Fatal, false, "The file system uses an external journal device, which is not supported"),
    JournalChecksum = ("0x0207", Super, Error, true, "The journal superblock's checksum is wrong"),
    JournalNeedsRecoveryNoFlag = ("0x0208", Super, Error, false, "The journal has data to replay but the needs_recovery flag is not set"),
    JournalVersionUnsupported = ("0x0730", Super, Error, false, "The journal superblock's version (block type {num}) is not supported"),
    JournalVersionAbort = ("0x0731", Super, Fatal, false, "The check is aborted: the journal may hold updates pfsck cannot read (an unknown version or features), and replacing it would lose them"),
    JournalCannotProceed = ("0x020A", Super, Fatal, false, "The journal is unusable and -n forbids clearing it: cannot proceed with the file system check"),
    JournalRecoverNoJournal = ("0x0209", Super, Error, true, "needs_recovery is set on a file system without a journal"),
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
    OrphanFileBlockDirty = ("0x0223", Super, Error, true, "Block {num} of the orphan file (inode {ino}) still lists inodes"),
    // e2fsck -n answers no without marking the file system (NO_OK), and
    // its repair clears the flag as part of the orphan processing.
    OrphanPresentClean = ("0x0224", Super, Notice, true, "orphan_present is set, yet the orphan file lists nothing"),
    OrphanNotProcessed = ("0x0222", Super, Notice, true, "Orphan processing stopped: {detail}; the full check follows"),
    // The two ways a block map stops e2fsck's orphan release (it asks
    // nothing: the release stops and the full check follows).
    OrphanBlockIllegal = ("0x0720", Super, Notice, true, "Orphan inode {ino} maps block {blk}, outside the file system: orphan processing stopped; the full check follows"),
    OrphanBlockFreed = ("0x0721", Super, Notice, true, "Orphan inode {ino} maps block {blk}, already released: orphan processing stopped; the full check follows"),
    OrphanFileInodeInvalid = ("0x0226", Super, Error, true, "orphan_file is set but its inode ({ino}) is unusable"),
    OrphanFileWrongSize = ("0x0227", Super, Notice, false, "The orphan file's size (inode {ino}) is not whole blocks"),
    OrphanFileHole = ("0x0228", Super, Notice, false, "The orphan file (inode {ino}) has no block at {num}"),
    OrphanFileCorrupt = ("0x0229", Super, Error, true, "The orphan file (inode {ino}) cannot be set up ({detail})"),
    OrphanPresentNoFile = ("0x022A", Super, Error, true, "orphan_present is set without orphan_file"),
    // After its passes e2fsck drops an orphan file on a file system
    // without a journal (the kernel uses it only with one).
    OrphanFileNoJournal = ("0x022B", Super, Error, true, "The file system has an orphan file (inode {ino}) but no journal"),

    // ---- Pass 1: inodes, blocks and sizes ----
    InodeChecksum = ("0x1001", P1, Error, true, "Inode {ino} is sound apart from its checksum"),
    InodeBadMode = ("0x1002", P1, Error, false, "Inode {ino}'s mode ({num}) is no known file type"),
    InodeDtimeSet = ("0x1003", P1, Error, true, "Inode {ino} is in use yet carries a deletion time"),
    InodeZeroDtimeDeleted = ("0x1004", P1, Error, true, "Inode {ino} is free but has no deletion time"),
    InodeBadFlags = ("0x1005", P1, Error, false, "Inode {ino} has flags {detail} set that are invalid for its type"),
    // Asked with NO_OK: e2fsck -n answers no and stays clean (exit 0).
    InodeTimesPre1970 = ("0x1760", P1, Notice, true, "Inode {ino} has time stamps past 2310 in the old extra-field format, probably before 1970"),
    InodeExtentsNoFeature = ("0x1006", P1, Error, false, "Inode {ino} is flagged as extent-mapped, but the extents feature is off"),
    InodeExtentFormatNoFeature = ("0x1700", P1, Error, false, "Inode {ino} holds an extent tree, but the extents feature is off"),
    InodeInlineNoFeature = ("0x1007", P1, Error, false, "Inode {ino} is flagged as holding inline data, but the inline_data feature is off"),
    InodeIllegalBlock = ("0x1008", P1, Error, false, "Inode {ino} maps block {blk}, which it may not ({detail})"),
    // e2fsck asks it with NO_OK: a no leaves the verdict to the illegal
    // blocks themselves, each asked before it.
    InodeTooManyIllegalBlocks = ("0x1009", P1, Notice, false, "Inode {ino} maps too many blocks it may not"),
    InodeISize = ("0x100B", P1, Error, true, "Inode {ino}: size {num}, expected {num2}"),
    InodeIBlocks = ("0x100C", P1, Error, true, "Inode {ino}: i_blocks {num}, expected {num2}"),
    ClusterMisaligned = ("0x10E4", P1, Error, false, "Inode {ino} places logical block {num} at block {blk}, off its cluster's alignment"),
    InodeBigallocBlockMap = ("0x10E5", P1, Error, false, "Inode {ino} uses a block map, which bigalloc does not allow"),
    InodeDirHole = ("0x100D", P1, Error, false, "Directory inode {ino} has no block at #{num}"),
    InodeExtentHeader = ("0x100E", P1, Error, false, "Inode {ino} has an invalid extent tree header ({detail})"),
    InodeExtentBad = ("0x100F", P1, Error, false, "Inode {ino} has an invalid extent (logical block {num}, physical block {blk}, length {num2}): {detail}"),
    InodeExtentOrder = ("0x1010", P1, Error, false, "Inode {ino}: extents out of order at logical block {num} (block {blk})"),
    InodeExtentNodeChecksum = ("0x1011", P1, Error, false, "Extent block {blk} of inode {ino} is sound apart from its checksum"),
    InodeExtentTooDeep = ("0x1012", P1, Notice, false, "Inode {ino}'s extent tree has depth {num}; {num2} would do"),
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
    // e2fsck walks it all the same (what it points to is claimed) and
    // never writes it; a message, not a question.
    InodeIndirectOnMetadata = ("0x1047", P1, Notice, false, "Inode {ino} uses block {blk}, which holds file system metadata, as an indirect block: what it points to is counted, nothing in it is repaired"),
    InodeBlockMapShared = ("0x1044", P1, Error, false, "Inode {ino} block map reaches indirect block {blk} more than once (indirect blocks shared)"),
    // Pass 1E's offers (e2fsck's NOT_A_FIX): the tree is consistent, it
    // could only take fewer blocks or levels. Declining leaves the file
    // system clean; making it is not a correction either (exit 0).
    ExtentTreeShorter = ("0x1045", P1, Notice, false, "Inode {ino}: its extent tree, from level {num}, would fit in fewer levels"),
    ExtentTreeNarrower = ("0x1046", P1, Notice, false, "Inode {ino}: its extent tree, at level {num}, would fit in fewer nodes"),
    InodeExtentNodeBad = ("0x1013", P1, Error, false, "Inode {ino}: extent node at block {blk} (logical block {num}) is damaged"),
    InodeExtentIndexEnd = ("0x1014", P1, Error, false, "Inode {ino}: an extent index says {num}, but its node starts at {num2}"),
    InodeExtentPastEof = ("0x1015", P1, Error, false, "Inode {ino}: the extent at logical block {num} (block {blk}, {num2} long) ends past what the file may hold"),
    InodeFastSymlink = ("0x1016", P1, Error, false, "Symbolic link inode {ino} is malformed ({detail})"),
    InodeDeviceBlocks = ("0x1017", P1, Error, false, "Device, socket or FIFO inode {ino} carries block data or flags"),
    InodeInlineData = ("0x1018", P1, Error, false, "Inode {ino} has corrupt inline data ({detail})"),
    InodeExtraIsize = ("0x1019", P1, Error, true, "Inode {ino}'s extra size ({num}) is out of range"),
    InodeFileAcl = ("0x101A", P1, Error, false, "Inode {ino} names extended attribute block {blk}, which is unusable"),
    InodeXattrInInode = ("0x101B", P1, Error, true, "Inode {ino} has corrupt extended attributes in the inode ({detail})"),
    XattrBlockHeader = ("0x101C", P1, Error, false, "Extended attribute block {blk} (inode {ino}) has a bad header ({detail})"),
    XattrBlockEntries = ("0x101D", P1, Error, false, "Extended attribute block {blk} (inode {ino}) is corrupt ({detail})"),
    XattrBlockChecksum = ("0x101E", P1, Error, false, "Extended attribute block {blk} is sound apart from its checksum"),
    XattrBlockRefcount = ("0x101F", P1, Error, false, "Extended attribute block {blk} claims {num} users; {num2} found"),
    XattrHash = ("0x1020", P1, Error, true, "An extended attribute of inode {ino} carries a wrong hash ({num})"),
    InodeReservedBad = ("0x1021", P1, Error, true, "Reserved inode {ino} ({detail}) has an invalid mode or contents"),
    RootNotDirectory = ("0x1022", P1, Error, false, "The root inode is not a directory"),
    InodeHugeFileNoFeature = ("0x1023", P1, Error, false, "Inode {ino} is flagged huge_file, but that feature is off"),
    InodeLargeFileNoFeature = ("0x1024", P1, Error, true, "Inode {ino} is larger than 2 GiB but the large_file feature is not set"),
    InodeIndexNoFeature = ("0x1025", P1, Error, true, "Inode {ino} is flagged as an indexed directory, but dir_index is off"),
    // e2fsck asks at the end of pass 1, though its code is pass 2's.
    FeatureLargeDirs = ("0x10EC", P1, Error, true, "Directories use large_dir's sizes, but that feature is off"),
    InodeIndexNotDir = ("0x1026", P1, Error, true, "Inode {ino} is flagged as an indexed directory, but is not a directory"),
    InodeImagic = ("0x1027", P1, Error, false, "Inode {ino} is flagged imagic, which this file system does not support"),
    InodeInUseBitmapClear = ("0x1028", P1, Error, true, "Inode {ino} is in use but is beyond the group's unused-inode mark (itable_unused)"),
    InodeCompression = ("0x1029", P1, Error, false, "Inode {ino} is flagged compressed, which this file system does not support"),
    InodeEncrypted = ("0x102A", P1, Fatal, false, "Inode {ino} is encrypted, which is not supported"),
    InodeBadSize = ("0x102B", P1, Error, false, "Inode {ino} has an invalid size {num}"),
    InodeBlockBitmapUnreadable = ("0x102C", P1, Error, false, "Error reading block {blk} ({detail}) while checking inode {ino}"),
    InodeTableUnreadable = ("0x102D", P1, Error, false, "Inode table for group {group} cannot be read (block {blk})"),
    InodeEaInodeFlag = ("0x102E", P1, Error, true, "Inode {ino} keeps an extended attribute value in an EA inode, but the ea_inode feature is off"),
    InodeCasefold = ("0x102F", P1, Error, false, "Inode {ino} is flagged casefold, but that feature is off"),
    InodeCasefoldNonDir = ("0x10E1", P1, Error, false, "Inode {ino} is flagged casefold but is not a directory"),
    InodeEaInodeNonReg = ("0x10E6", P1, Error, false, "Inode {ino} is flagged as an EA inode but is not a regular file"),
    InodeEncryptNoXattr = ("0x10E2", P1, Error, false, "Inode {ino} is flagged encrypted but has no encryption context"),
    InodeEncryptCorrupt = ("0x10E3", P1, Error, false, "Encrypted inode {ino} has a malformed encryption context"),
    InodeOrphanInUse = ("0x1030", P1, Error, false, "Inode {ino} is on the orphan list ({detail})"),
    BadBlockInMetadata = ("0x1031", P1, Error, false, "Bad block {blk} is in use by file system metadata"),
    BadBlockInBackup = ("0x1761", P1, Notice, true, "Bad block {blk} lies in group {group}'s backup {detail}"),
    BadBlockUnnamed = ("0x1762", P1, Notice, true, "Bad block {blk} lies in the file system's own blocks, but in none the bad block check names (a reserved descriptor block): it stays listed"),
    BadBlocksInodeInBadBlock = ("0x1036", P1, Error, false, "Bad block list says the bad block list inode is bad"),
    HtreeRootInvalid = ("0x1032", P1, Error, true, "Indexed directory inode {ino}: its index root is unusable ({detail})"),
    XattrEaInodeInvalid = ("0x1034", P1, Error, true, "Inode {ino} keeps an attribute value in inode {num}, which cannot hold one"),
    XattrValueSize = ("0x10ED", P1, Error, true, "An extended attribute of inode {ino} gives an impossible value size ({num})"),
    XattrEaInodeNoFlag = ("0x1035", P1, Error, true, "Inode {ino} keeps an attribute value in inode {num}, which is not flagged as an EA inode"),
    // e2fsck's inode scan: more than half the inodes of an inode-table
    // block fail their checksum or have an impossible block map, so every
    // in-use inode of that block is taken for garbage.
    InodeReallyDir = ("0x1041", P1, Error, false, "Inode {ino} says {detail}, but its contents are a directory's"),
    InodeGarbage = ("0x1040", P1, Error, false, "Inode {ino} looks like random bytes"),
    SpecialImmutable = ("0x1033", P1, Notice, false, "Device, socket, FIFO or symbolic link inode {ino} is flagged immutable or append-only"),

    // ---- Pass 1B-1D: multiply-claimed blocks ----
    DupBlocks = ("0x1101", P1B, Error, false, "Inode {ino} shares {num} block(s) with {num2} other file(s): {detail}"),
    // e2fsck -n walks the maps again with checksums verified: the walk
    // ends at an extent node failing its checksum, whose fix pass 1 was
    // refused; the blocks past it are not looked at for sharing.
    DupRescanFailed = ("0x1103", P1B, Notice, false, "Inode {ino}: the search for shared blocks stopped early, at a damaged extent block or one failing its checksum, or at an indirect block outside the file system"),

    // ---- Pass 2: directory structure ----
    DirEntryBadRecLen = ("0x2001", P2, Error, false, "Directory inode {ino}, block #{num}, offset {num2}: entry {detail}, left inside the entry before it by the salvage, gets a rec_len reaching the end of the block"),
    DirEntryBadInode = ("0x2002", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) names inode {num}, which does not exist"),
    DirEntryDeletedInode = ("0x2003", P2, Error, true, "Entry '{detail}' in {path:ino} ({ino}) names inode {num}, which is free"),
    DirEntryLinkToDir = ("0x2004", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) is a second link to directory {num}"),
    DirEntryLinkToRoot = ("0x2005", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) links to the root directory"),
    DirEntryIllegalChars = ("0x2006", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}): the name holds a '/' or a NUL"),
    DirEntryZeroLenName = ("0x2007", P2, Error, false, "Directory inode {ino}, offset {num}: an entry with an empty name"),
    DirEntryFileType = ("0x2008", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}): file type {num}, the inode's is {num2}"),
    // e2fsck's PR_2_SET_FILETYPE: a type of 0 where the feature wants one
    // is filled in by a repair and not an error for a read-only check.
    DirEntryFileTypeUnset = ("0x2050", P2, Notice, true, "Entry '{detail}' in {path:ino} ({ino}) gets file type {num2}"),
    DirEntryFileTypeSet = ("0x2009", P2, Error, true, "Entry '{detail}' in {path:ino} ({ino}) carries a file type, but the filetype feature is off"),
    DirEntryReservedInode = ("0x200A", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) points to reserved inode {num}"),
    DirEntryBadInodeTarget = ("0x200B", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) points to inode {num} which is bad"),
    DirEntryDuplicate = ("0x200C", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) is there twice"),
    DirDotMissing = ("0x200D", P2, Error, false, "Directory inode {ino} has no '.' entry"),
    DirDotDotMissing = ("0x200E", P2, Error, false, "Directory inode {ino} has no '..' entry"),
    DirDotBadInode = ("0x200F", P2, Error, false, "'.' in directory inode {ino} names inode {num}"),
    // e2fsck's PR_2_SPLIT_DOT is NO_OK: a '.' spanning free space is
    // still a valid entry.
    DirDotRecLen = ("0x2010", P2, Notice, false, "'.' in directory inode {ino} has record length {num}"),
    DirDotDotBadForm = ("0x2011", P2, Error, false, "'..' in directory inode {ino} is malformed"),
    DirDotSecondEntry = ("0x2012", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) is a '.' or '..' entry in the wrong place"),
    DirBlockChecksum = ("0x2013", P2, Error, true, "Directory inode {ino}, block #{num}: the block is sound apart from its checksum"),
    DirBlockNoTail = ("0x2014", P2, Error, true, "Directory inode {ino}, block #{num}: the block lacks its checksum tail"),
    DirBlockCorrupt = ("0x2015", P2, Error, false, "Directory inode {ino}, block #{num}, offset {num2}: the entries are damaged"),
    DirBlockUnreadable = ("0x2016", P2, Error, false, "Directory block {blk} (inode {ino}) cannot be read"),
    HtreeRootBad = ("0x2017", P2, Error, true, "Directory inode {ino} has a bad htree root node ({detail})"),
    HtreeHashVersion = ("0x2018", P2, Error, true, "Directory inode {ino} htree root uses an unsupported hash version ({num})"),
    HtreeDepth = ("0x2019", P2, Error, true, "Directory inode {ino} htree has too big a depth ({num})"),
    HtreeLimit = ("0x201A", P2, Error, true, "Directory inode {ino} htree node at block #{num} has a bad limit ({num2})"),
    HtreeCount = ("0x201B", P2, Error, true, "Directory inode {ino} htree node at block #{num} has a bad count ({num2})"),
    HtreeHashOrder = ("0x201C", P2, Error, true, "Directory inode {ino} htree is not sorted by hash at block #{num}"),
    HtreeBadBlock = ("0x201D", P2, Error, false, "Directory inode {ino} ({path:ino}) htree points to an invalid block #{num}"),
    HtreeNodeChecksum = ("0x201E", P2, Error, true, "Indexed directory inode {ino}: an interior index block fails its checksum"),
    HtreeHashRange = ("0x201F", P2, Error, false, "Directory inode {ino} has a bad hash ({detail}) in htree leaf block #{num}"),
    HtreeBlockReferenced = ("0x2020", P2, Error, false, "Directory inode {ino} htree block #{num} is referenced {num2} times"),
    HtreeNoIndexFlag = ("0x2021", P2, Error, false, "Directory inode {ino} has an htree root but not the INDEX flag"),
    HtreeInvalid = ("0x2022", P2, Error, false, "Directory inode {ino} ({path:ino}) has an invalid htree index"),
    DirInlineBad = ("0x2023", P2, Error, false, "Directory inode {ino} has corrupt inline data ({detail})"),
    DirInlineSizeStuck = ("0x2034", P2, Error, false, "Directory inode {ino}: its inline size cannot be corrected, its system.data being in its xattr block; the directory is left as it is"),
    DirEntryEncryptedShort = ("0x2024", P2, Error, false, "Encrypted entry '{detail}' in {path:ino} ({ino}) has a name too short to be a ciphertext"),
    DirEntryUnencrypted = ("0x20E1", P2, Error, false, "Encrypted entry '{detail}' in {path:ino} ({ino}) names inode {num}, which is not encrypted"),
    DirEntryPolicyMismatch = ("0x20E2", P2, Error, false, "Encrypted entry '{detail}' in {path:ino} ({ino}) names inode {num}, encrypted under another policy"),
    DirEntryEaInode = ("0x20E4", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) names EA inode {num}, which holds an extended attribute value"),
    DirEntryBadUtf8 = ("0x20E3", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) has a name that is not valid UTF-8"),
    DirEntryUnusedArea = ("0x2026", P2, Error, true, "Entry '{detail}' in {path:ino} ({ino}) names inode {num}, in group {group}'s never-used inode range"),
    DirEntryUninitGroup = ("0x2027", P2, Error, true, "Entry '{detail}' in {path:ino} ({ino}) names inode {num}, in group {group} whose inode table is flagged uninitialised"),
    DirBlockEmpty = ("0x2025", P2, Error, false, "Directory inode {ino} block #{num} should be a directory block but is empty or garbage"),
    DirHole = ("0x2028", P2, Error, false, "Directory inode {ino} has no block at #{num}"),
    // e2fsck's pass 1 leaves a directory block it clears as a hole in
    // its list of directory blocks: -y then meets it in pass 2 and gives
    // it a new block (the one named), even past the directory's last.
    DirHoleCleared = ("0x2032", P2, Error, false, "Directory inode {ino} has no block at #{num} once its illegal block is cleared; block {blk} takes its place"),
    // That block lies outside what the index of the directory covers:
    // the index goes, as e2fsck clears it.
    HtreeUnexpectedBlock = ("0x2033", P2, Error, false, "Indexed directory inode {ino} ({path:ino}) gains a block its index does not cover; the index goes"),
    DirEntryLinkToDot = ("0x2029", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) links to the directory itself"),
    DirDotNotTerminated = ("0x202A", P2, Error, false, "The '{detail}' entry of directory inode {ino} has non-zero bytes after its name"),
    DirEntryInodeInBadBlock = ("0x202C", P2, Error, false, "Entry '{detail}' in {path:ino} ({ino}) names inode {num}, stored in a bad block"),
    HtreeLeafDepth = ("0x202B", P2, Error, false, "Directory inode {ino} htree leaf block #{num} is not at depth {num2}"),
    // e2fsck counts regular files of 2 GiB or more in pass 1 and asks at
    // the end of pass 2: kernels without the feature would refuse them.
    FeatureLargeFiles = ("0x202D", P2, Error, true, "Files over 2 GiB exist, but large_file is off"),
    // e2fsck -n gives up at a directory block it may not salvage: what
    // the later passes would say rests on that directory.
    // e2fsck -n cannot walk below an indirect pointer it may not zero:
    // its block walk fails and it aborts after that inode.
    // e2fsck -n's walk of an extent tree fails at a node it cannot read
    // (declined "Ignore error?"), and after its question about the
    // failure it aborts.
    StoppedAtUnreadableExtent = ("0x10EF", P1, Notice, false, "The check stops at inode {ino}, whose extent tree cannot be read, as e2fsck -n does; run a repair to check the rest"),
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
    InodeBlockMapToExtents = ("0x1104", P1, Notice, true, "Inode {ino} maps its blocks indirectly; -E bmap2extent converts the map to an extent tree"),
    StoppedAtInodeChecksumP1B = ("0x1102", P1B, Notice, false, "The check stops at inode {ino}, whose checksum it may not fix, as e2fsck -n does; run a repair to check the rest"),
    StoppedAtUnreadableDir = ("0x2031", P2, Notice, false, "The check stops at directory block {blk}, which cannot be read, as e2fsck -n does; run a repair to check the rest"),
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
    // e2fsck -n places a bitmap recorded at block 0 anew at the end of
    // pass 1; the block it zeroes waits in libext2fs' cache, and the read
    // that evicts it fails on the read-only device.
    StoppedAtRelocatedBitmap = ("0x2051", P2, Notice, false, "The check stops at directory block {blk} of inode {ino}: group {group}'s {detail} lies at block 0, e2fsck -n places it anew in pass 1 and cannot write it, and the read that writes it fails; run a repair to check the rest"),

    // ---- Pass 3: directory connectivity ----
    RootMissing = ("0x3001", P3, Error, false, "The root inode is not in use"),
    StoppedWithoutRoot = ("0x3740", P3, Notice, false, "The check stops: without a root directory, which -n may not make, nothing can be connected, as e2fsck -n gives up; run a repair to check the rest"),
    DirUnconnected = ("0x3002", P3, Error, false, "Directory inode {ino} (was in {path:num}) is reachable from no directory"),
    DirDotDotWrong = ("0x3003", P3, Error, false, "'..' in {path:detail/ino} ({ino}) names {path:num2} ({num2}); its parent is {path:detail} ({detail})"),
    // Only a repair looks for lost+found (e2fsck -n does not), so these
    // three are never reported by a read-only check; declined, they leave
    // the file system invalid, as e2fsck's flags say.
    LostFoundMissing = ("0x3004", P3, Error, true, "There is no /lost+found"),
    LostFoundNotDir = ("0x3005", P3, Error, false, "/lost+found (inode {ino}) is not a directory"),
    LostFoundEncrypted = ("0x30E1", P3, Error, false, "/lost+found is encrypted (inode {ino})"),
    LostFoundFull = ("0x3008", P3, Error, false, "/lost+found has no room left for inode {ino}"),
    LostFoundInlineData = ("0x3760", P3, Error, false, "/lost+found keeps its entries inline (inode {ino})"),
    DirMultipleParents = ("0x3007", P3, Error, false, "Directory inode {ino} is linked from more than one directory ({num} and {num2})"),
    DirRebuildDuplicate = ("0x3710", P3, Error, false, "Duplicate entry '{detail}' in {path:ino} ({ino}) found rebuilding the directory"),

    // ---- Pass 4: reference counts ----
    InodeUnattached = ("0x4001", P4, Error, false, "Inode {ino} is in use but no directory names it"),
    // 0x030002 again, asked when pass 4 connects an inode.
    LostFoundFullP4 = ("0x4009", P4, Error, false, "/lost+found has no room left for inode {ino}"),
    InodeUnattachedZero = ("0x4002", P4, Error, true, "Inode {ino} is empty and no directory names it"),
    InodeLinkCount = ("0x4003", P4, Error, true, "Inode {ino} has link count {num}, counted {num2}"),
    DirNlinkFeature = ("0x4005", P4, Error, false, "A directory has more subdirectories than links can count, but dir_nlink is off"),
    InodeEaInodeSpurious = ("0x4006", P4, Error, true, "Inode {ino} has the EA_INODE flag but no extended attribute or directory entry refers to it"),
    // e2fsck asks this only in a repair; a read-only check takes the
    // count 1 of an indexed directory as an overflow.
    DirLinkOverflowExact = ("0x4008", P4, Error, true, "Directory inode {ino}'s link count says 'too many to count', but {num2} would fit"),
    InodeEaInodeRefs = ("0x4004", P4, Error, true, "EA inode {ino} has link count {num}, counted {num2}"),

    // ---- Pass 5: bitmaps and summaries ----
    BlockBitmapDiff = ("0x5001", P5, Error, true, "Blocks whose bitmap bit is wrong: {detail}"),
    InodeBitmapDiff = ("0x5002", P5, Error, true, "Inodes whose bitmap bit is wrong: {detail}"),
    GroupFreeBlocks = ("0x5003", P5, Error, true, "Group {group}: {num} free blocks recorded, {num2} counted"),
    GroupFreeInodes = ("0x5004", P5, Error, true, "Group {group}: {num} free inodes recorded, {num2} counted"),
    GroupDirsCount = ("0x5005", P5, Error, true, "Group {group}: {num} directories recorded, {num2} counted"),
    SuperFreeBlocks = ("0x5006", P5, Notice, true, "Whole file system: {num} free blocks recorded, {num2} counted"),
    SuperFreeInodes = ("0x5007", P5, Notice, true, "Whole file system: {num} free inodes recorded, {num2} counted"),
    BlockBitmapChecksum = ("0x5008", P5, Error, true, "Group {group}'s block bitmap fails its checksum"),
    InodeBitmapChecksum = ("0x5009", P5, Error, true, "Group {group}'s inode bitmap fails its checksum"),
    BlockBitmapPadding = ("0x500A", P5, Error, true, "The unused tail of group {group}'s block bitmap is not all ones"),
    InodeBitmapPadding = ("0x500B", P5, Error, true, "The unused tail of group {group}'s inode bitmap is not all ones"),
    GroupUninitFlags = ("0x500C", P5, Error, true, "Group {group} {detail}"),
    QuotaUsage = ("0x500E", P5, Error, true, "Quota usage differs for {detail}"),
    QuotaEntryMissing = ("0x500F", P5, Error, true, "The {detail} quota file has no record for ID {num}"),
    QuotaFileBad = ("0x5010", P5, Error, true, "Quota file cannot be used: {detail}"),
    BitmapUnreadable = ("0x500D", P5, Error, false, "Cannot read {detail} bitmap of group {group} (block {blk})"),
    // e2fsck -n asks once per used block (inode) of such a group, as its
    // "no" keeps the flag: millions of questions on a large file system.
    // pfsck asks up to a bound, then stops there.
    StoppedAtUninitGroup = ("0x5011", P5, Notice, false, "The check stops at groups whose uninitialised flag it may not clear, after too many blocks or inodes in use in them; run a repair to check the rest"),
    // e2fsck reads the orphan file's inode after pass 5, before the quota
    // check, to set the file up.
    StoppedAtOrphanFileInode = ("0x5020", P5, Notice, false, "The check stops at the orphan file's inode {ino}, whose checksum it may not fix, as e2fsck -n does; run a repair to check the rest"),
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

    /// The message template: the code's own, or a more precise one for the
    /// e2fsck problem the check named where one code stands for several.
    fn template(&self) -> &'static str {
        match (self.code, self.e2fsck_code()) {
            (Code::InodeInlineNoFeature, Some(0x01006F)) => {
                return "Inode {ino} holds inline data, but the inline_data feature is off";
            }
            (Code::InodeExtentHeader, Some(0x010081)) => {
                return "Inode {ino}'s extent tree header is damaged";
            }
            (Code::HtreeNodeChecksum, Some(0x020049)) => {
                return "Indexed directory inode {ino}: the index root fails its checksum";
            }
            _ => {}
        }
        match (self.code, self.e2fsck_override()) {
            (Code::BadBlockInMetadata, Some(0x01000A)) if self.args().group.is_some() => {
                "Group {group}'s block bitmap sits on bad block {blk}"
            }
            (Code::BadBlockInMetadata, Some(0x01000B)) if self.args().group.is_some() => {
                "Group {group}'s inode bitmap sits on bad block {blk}"
            }
            (Code::BadBlockInMetadata, Some(0x010019)) => {
                "The primary superblock ({blk}) is listed as a bad block. If it really is, the file system cannot be repaired; dropping it from the list keeps it in use, with no guarantee it can be read"
            }
            (Code::BadBlockInMetadata, Some(0x01001A)) => {
                "Block {blk} of the primary group descriptors is listed as a bad block. If it really is, the file system cannot be repaired; dropping it from the list keeps it in use, with no guarantee it can be read"
            }
            (Code::SbLastMountFuture, Some(0x00003C)) => {
                "The last mount time is less than a day ahead of the clock, which probably keeps local time"
            }
            (Code::SbLastWriteFuture, Some(0x00003D)) => {
                "The last write time is less than a day ahead of the clock, which probably keeps local time"
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
        assert_eq!(p.message(), "Inode 12: size 0, expected 1024");
    }
}
