//! `docs/problems.md`, generated from the code (issue 13): every code of
//! e2fsck 1.47.4's problem table (`check::catalogue`), the pfsck problems
//! standing for it (`check::e2fsck_map::codes`), whether pfsck detects and
//! fixes it (`fix::repaired`), whether its flags agree, and the test that
//! makes that damage from scratch ([`DAMAGE`]).
//!
//! `problems_md_is_current` fails when the file differs from what the code
//! says; `PFSCK_WRITE_DOCS=1 cargo test --release --test suite
//! problems_doc` writes it anew.

use pfsck::check::catalogue::{self, Entry, Kind};
use pfsck::check::e2fsck_map;
use pfsck::check::problem::{Code, Problem, Severity};
use std::fmt::Write as _;
use std::path::Path;

/// A test that makes the damage a pfsck problem reports, from a freshly
/// made file system: `module::test_fn`, or `corruptions::case` for one
/// case of the table in `corruptions.rs`. Found by running each test's
/// images through `pfsck -fn --json`; the first test giving the code is
/// named. `damage_tests_exist` keeps the names true. Problems made only
/// by other tests (`repair_*.rs`, `pass234.rs`, ...) are not named yet.
const DAMAGE: &[(Code, &str)] = &[
    (Code::SbCorrupt, "corruptions::ext2-sb-r-blocks-count"),
    (
        Code::SbUsedBackup,
        "corruptions::ext2-bg-block-bitmap-in-group0",
    ),
    (
        Code::SbFeatureUnsupported,
        "corruptions::ext3-unknown-incompat-feature",
    ),
    (Code::SbChecksum, "corruptions::ext4-raw-sb-checksum"),
    (
        Code::InodeEncryptCorrupt,
        "catalogue_13n::corrupt_encryption_context_clears_the_inode",
    ),
    (
        Code::InodeEaInodeFlag,
        "catalogue_13n::ea_inode_value_without_the_feature_sets_it",
    ),
    (
        Code::JournalExternalChecksum,
        "catalogue_13n::external_journal_superblock_checksum_is_set",
    ),
    (Code::SbInodesCount, "corruptions::ext4-sb-inodes-count"),
    (Code::SbNoUuid, "sb_flags::no_uuid_gets_a_new_one"),
    (
        Code::SbHurdFiletype,
        "catalogue_13g::hurd_filetype_is_cleared_when_repairing",
    ),
    (Code::SbTestFs, "sb_flags::test_fs_flag_is_cleared"),
    (Code::SbDirHashHint, "sb_flags::dirhash_hint_is_added"),
    (
        Code::SbJournalBackupMissing,
        "sb_flags::journal_backup_is_written",
    ),
    (Code::SbRev0Features, "sb_flags::features_on_revision_0"),
    (
        Code::JournalVisible,
        "catalogue_13o::visible_journal_moves_to_its_inode",
    ),
    (
        Code::QuotaVisible,
        "quota_hide::visible_quota_files_move_to_their_inodes",
    ),
    (
        Code::InodeBlockMapToExtents,
        "bmap2extent::bmap2extent_converts_ext3_1k",
    ),
    (
        Code::SbExtentsForConversion,
        "bmap2extent::bmap2extent_sets_the_extent_feature_with_metadata_csum",
    ),
    (
        Code::SbExtraIsize,
        "catalogue_13j::invalid_extra_isize_in_the_superblock_is_reset",
    ),
    (
        Code::JournalInodeNoFeature,
        "journal_flags::journal_without_has_journal_is_forgotten",
    ),
    (
        Code::JournalRecoverNoJournal,
        "journal_flags::needs_recovery_without_a_journal_is_cleared",
    ),
    (
        Code::JournalNeedsRecoveryNoFlag,
        "catalogue_13i::journal_data_without_needs_recovery",
    ),
    (
        Code::JournalFeatureUnsupported,
        "catalogue_13i::unknown_journal_features_abort",
    ),
    (
        Code::JournalVersionUnsupported,
        "journal_flags::unknown_journal_version_aborts",
    ),
    (
        Code::SbLastMountFuture,
        "sb_times::times_days_ahead_are_asked_about_and_set",
    ),
    (
        Code::SbLastWriteFuture,
        "sb_times::times_days_ahead_are_asked_about_and_set",
    ),
    (
        Code::SbMetadataCsumAndGdtCsum,
        "sb_flags::metadata_csum_with_uninit_bg",
    ),
    (
        Code::Sb64bitNoExtents,
        "sb_flags::sixty_four_bit_without_extents",
    ),
    (
        Code::SbCsumSeedNoCsum,
        "sb_flags::csum_seed_without_metadata_csum",
    ),
    (
        Code::SbResizeInodeNoFeature,
        "corruptions::ext2-resize-inode-cleared",
    ),
    (Code::GdChecksum, "corruptions::ext4-bg-checksum"),
    (
        Code::GdItableUnused,
        "corruptions::ext4-bg-itable-unused-too-big",
    ),
    (
        Code::JournalSuperblockCorrupt,
        "corruptions::ext3-raw-journal-sb-magic",
    ),
    (
        Code::JournalInodeInvalid,
        "corruptions::ext2-sb-journal-inum",
    ),
    (
        Code::JournalCannotProceed,
        "corruptions::ext2-sb-journal-inum",
    ),
    (
        Code::JournalExternalBad,
        "corruptions::ext4-sb-journal-uuid",
    ),
    (
        Code::JournalExternalCannotProceed,
        "corruptions::ext4-sb-journal-uuid",
    ),
    (
        Code::OrphansPendingHarmless,
        "corruptions::ext3-orphan-list-head-live-inode",
    ),
    (
        Code::OrphanReleased,
        "corruptions::ext3-orphan-list-head-live-inode",
    ),
    (
        Code::MmpBlockInvalid,
        "catalogue_13j::invalid_mmp_block_is_left_as_e2fsck_leaves_it",
    ),
    (
        Code::OrphanFileBlockDirty,
        "orphan_file::orphan_file_blocks_with_bad_tails",
    ),
    (
        Code::OrphanPresentClean,
        "orphan_file::orphan_present_over_a_clean_orphan_file",
    ),
    (
        Code::OrphanNotProcessed,
        "orphan_file::orphan_file_blocks_with_bad_tails",
    ),
    (
        Code::OrphanBlockIllegal,
        "orphans::orphan_with_a_bad_block_stops_the_release",
    ),
    (
        Code::OrphanBlockFreed,
        "orphans::orphan_with_a_bad_block_stops_the_release",
    ),
    (
        Code::OrphanFileWrongSize,
        "orphan_file::orphan_file_of_a_wrong_size_is_made_anew",
    ),
    (
        Code::OrphanFileHole,
        "orphan_file::orphan_file_with_a_hole_is_made_anew",
    ),
    (
        Code::OrphanFileCorrupt,
        "orphan_file::orphan_file_with_a_hole_is_made_anew",
    ),
    (
        Code::OrphanPresentNoFile,
        "orphan_file::orphan_present_without_orphan_file",
    ),
    (Code::InodeChecksum, "corruptions::ext4-raw-inode-checksum"),
    (Code::InodeBadMode, "corruptions::ext2-raw-inode-bad-mode"),
    (Code::InodeDtimeSet, "corruptions::ext2-dtime-on-live-inode"),
    (
        Code::InodeZeroDtimeDeleted,
        "corruptions::ext2-links-count-zero",
    ),
    (
        Code::InodeBadFlags,
        "corruptions::ext4-extents-flag-cleared",
    ),
    (
        Code::InodeExtentsNoFeature,
        "corruptions::ext2-extents-flag-without-feature",
    ),
    (
        Code::InodeExtentFormatNoFeature,
        "fuzz_finds::extents_feature_turned_off",
    ),
    (
        Code::InodeInlineNoFeature,
        "corruptions::ext4-inline-flag-without-feature",
    ),
    (
        Code::InodeIllegalBlock,
        "corruptions::ext2-illegal-direct-block",
    ),
    (
        Code::InodeTooManyIllegalBlocks,
        "corruptions::ext2-dind-equals-ind",
    ),
    (Code::InodeISize, "corruptions::ext2-dind-equals-ind"),
    (Code::InodeIBlocks, "corruptions::ext2-illegal-direct-block"),
    (
        Code::InodeExtentHeader,
        "corruptions::ext4-extent-header-magic",
    ),
    (
        Code::InodeExtentBad,
        "corruptions::ext4-extent-start-past-end",
    ),
    (
        Code::InodeExtentTooDeep,
        "corruptions::ext4-extent-depth-too-big",
    ),
    (
        Code::ExtentTreeShorter,
        "pass1e::a_tree_that_could_be_shorter_is_offered_under_n_and_p",
    ),
    (
        Code::ExtentTreeNarrower,
        "pass1e::a_tree_that_could_be_narrower_is_offered_under_n_and_p",
    ),
    (
        Code::InodeFastSymlink,
        "corruptions::ext2-slow-symlink-size-zero",
    ),
    (
        Code::InodeDeviceBlocks,
        "corruptions::ext2-immutable-fifo-with-block",
    ),
    (
        Code::InodeExtraIsize,
        "corruptions::ext4-extra-isize-invalid",
    ),
    (
        Code::InodeFileAcl,
        "corruptions::ext2-file-acl-out-of-range",
    ),
    (
        Code::InodeReservedBad,
        "corruptions::ext3-journal-inode-cleared",
    ),
    (Code::RootNotDirectory, "corruptions::ext2-root-not-dir"),
    (Code::InodeBadSize, "corruptions::ext4-socket-with-size"),
    (
        Code::HtreeRootInvalid,
        "corruptions::ext2-index-flag-on-small-dir",
    ),
    (Code::DupBlocks, "corruptions::ext2-dup-block-two-files"),
    (
        Code::BadBlocksInodeIndirect,
        "pass1_codes::bad_blocks_inode_indirect_block_in_its_list",
    ),
    (
        Code::DirEntryBadInode,
        "corruptions::ext2-raw-dirent-inode-too-big",
    ),
    (
        Code::DirEntryDeletedInode,
        "corruptions::ext2-links-count-zero",
    ),
    (
        Code::DirEntryLinkToDir,
        "corruptions::ext2-hard-link-to-dir",
    ),
    (
        Code::DirEntryIllegalChars,
        "corruptions::ext2-raw-dirent-slash-in-name",
    ),
    (Code::DirEntryFileType, "corruptions::ext2-root-not-dir"),
    (
        Code::DirEntryBadInodeTarget,
        "corruptions::ext2-file-acl-out-of-range",
    ),
    (Code::DirDotMissing, "corruptions::ext4nc-raw-dot-renamed"),
    (Code::DirDotBadInode, "corruptions::ext3-dup-block-two-dirs"),
    (
        Code::DirBlockChecksum,
        "corruptions::ext4-raw-dir-block-checksum",
    ),
    (
        Code::DirBlockCorrupt,
        "corruptions::ext2-raw-dir-dot-reclen-zero",
    ),
    (
        Code::HtreeRootBad,
        "corruptions::ext2-index-flag-on-small-dir",
    ),
    (
        Code::HtreeLimit,
        "corruptions::ext2-index-flag-on-small-dir",
    ),
    (
        Code::HtreeNodeChecksum,
        "corruptions::ext4-raw-htree-hash-version",
    ),
    (Code::HtreeInvalid, "corruptions::ext4-raw-htree-depth"),
    (Code::HtreeLeafDepth, "corruptions::ext4-raw-htree-depth"),
    (
        Code::StoppedAtIllegalIndirect,
        "cli_compat::a_read_only_check_stops_at_an_illegal_indirect_block",
    ),
    (
        Code::StoppedAtInodeTable,
        "codes_13l::inode_table_outside_stops_read_only_check",
    ),
    (Code::XattrValueSize, "codes_13l::ea_inode_entry_value_size"),
    (
        Code::StoppedAtCorruptDir,
        "corruptions::ext2-raw-dir-dot-reclen-zero",
    ),
    (
        Code::RootMissing,
        "corruptions::ext4-bg-itable-unused-too-big",
    ),
    (Code::DirUnconnected, "corruptions::ext2-clri-dir"),
    (Code::DirDotDotWrong, "corruptions::ext2-clri-dir"),
    (Code::LostFoundMissing, "corruptions::ext2-root-not-dir"),
    (
        Code::InodeDirHole,
        "catalogue_13o::directory_gap_is_asked_about_per_block",
    ),
    (
        Code::LostFoundFullP4,
        "catalogue_13o::full_lost_found_is_expanded",
    ),
    (Code::InodeUnattached, "corruptions::ext2-clri-dir"),
    (Code::InodeUnattachedZero, "corruptions::ext2-root-not-dir"),
    (
        Code::InodeLinkCount,
        "corruptions::ext2-links-count-too-high",
    ),
    (
        Code::BlockBitmapDiff,
        "corruptions::ext2-illegal-direct-block",
    ),
    (Code::InodeBitmapDiff, "corruptions::ext2-links-count-zero"),
    (Code::GroupFreeBlocks, "corruptions::ext2-freeb-used-block"),
    (Code::GroupFreeInodes, "corruptions::ext2-freei-used-inode"),
    (Code::GroupDirsCount, "corruptions::ext2-clri-dir"),
    (Code::SuperFreeBlocks, "corruptions::ext2-freeb-used-block"),
    (Code::SuperFreeInodes, "corruptions::ext2-freei-used-inode"),
    (Code::BlockBitmapChecksum, "corruptions::ext4-bg-checksum"),
    (Code::InodeBitmapChecksum, "corruptions::ext4-bg-checksum"),
    (Code::BlockBitmapPadding, "corruptions::ext4-bg-checksum"),
    (Code::InodeBitmapPadding, "corruptions::ext4-bg-checksum"),
    (
        Code::DirDotRecLen,
        "catalogue_p2_5::dot_entry_spanning_free_space",
    ),
    (
        Code::DirLinkOverflowExact,
        "catalogue_p2_5::overflowed_directory_count_made_exact",
    ),
    (
        Code::FeatureLargeDirs,
        "catalogue_p2_5::large_directory_without_large_dir",
    ),
    (
        Code::DirEntryFileTypeSet,
        "catalogue_p2_5::file_type_without_the_feature_cleared",
    ),
    (
        Code::LostFoundNotDir,
        "catalogue_p2_5::lost_found_not_a_directory_replaced",
    ),
    (
        Code::LostFoundInlineData,
        "catalogue_13k::inline_lost_found_is_replaced",
    ),
    (
        Code::GdUninitWithoutCsum,
        "catalogue_13k::uninit_group_without_checksums",
    ),
    (
        Code::InodeTimesPre1970,
        "catalogue_13k::old_extra_times_leave_n_clean",
    ),
    (
        Code::BadBlockInBackup,
        "catalogue_13k::bad_block_in_a_backup_is_a_warning",
    ),
    (
        Code::BadBlockUnnamed,
        "badblocks::lists_from_a_file_as_e2fsck",
    ),
    (
        Code::DirEntryUninitGroup,
        "catalogue_p2_5::entry_into_an_uninit_group",
    ),
    (
        Code::DirEntryUnusedArea,
        "catalogue_p2_5::entry_into_the_unused_inode_area",
    ),
    (
        Code::DirEntryBadRecLen,
        "catalogue_13m::salvage_before_the_area_end_sets_the_last_rec_len",
    ),
    (
        Code::InodeBlockBitmapUnreadable,
        "catalogue_13o::extent_leaf_past_the_device_end_fails_the_walk",
    ),
    (
        Code::StoppedAtUnreadableExtent,
        "catalogue_13o::extent_leaf_past_the_device_end_fails_the_walk",
    ),
    (
        Code::SbJournalDevHint,
        "external_journal::journal_device_hint_follows_the_uuid",
    ),
    (
        Code::HtreeUnexpectedBlock,
        "catalogue_p2_5::htree_block_outside_the_index_clears_the_index",
    ),
    (
        Code::DirHoleCleared,
        "catalogue_p2_5::cleared_last_directory_block_is_allocated_again",
    ),
    (
        Code::DirInlineBad,
        "codes_13l::inline_dir_size_fixed_as_e2fsck",
    ),
    (
        Code::DirInlineSizeStuck,
        "codes_13l::inline_dir_data_in_the_xattr_block",
    ),
];

/// The pfsck problems batching a latch group's entries into one problem,
/// asked once, as e2fsck's latch asks once for the group. Elsewhere pfsck
/// asks once per set where e2fsck's group question asks
/// (`e2fsck_map::latch_set`), and each problem on its own outside latch
/// groups (`a` answers all).
const BATCHED: &[Code] = &[Code::BlockBitmapDiff, Code::InodeBitmapDiff];

/// Latch groups whose question asks nothing: e2fsck prints it once, a
/// warning, and then asks each problem of the group on its own, as pfsck
/// does. The relocation group's question (0x00000a) warns of data loss
/// and has no prompt.
const LATCH_ASKS_EACH: &[u32] = &[catalogue::LATCH_RELOC];

/// Why an e2fsck problem is not detected, where the reason is known.
const WHY_NOT: &[(u32, &str)] = &[];

fn damage(c: Code) -> Option<&'static str> {
    DAMAGE.iter().find(|(d, _)| *d == c).map(|(_, t)| *t)
}

/// The pfsck codes standing for `code`.
fn pfsck_for(code: u32) -> Vec<Code> {
    Code::ALL
        .iter()
        .copied()
        .filter(|&c| e2fsck_map::codes(c).contains(&code))
        .collect()
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "**no**" }
}

/// pfsck's preen answer for `c` standing for `e`.
fn preens(c: Code, e: &Entry) -> bool {
    e2fsck_map::preen_ok(&Problem::new(c).e2fsck(e.code))
}

/// Pass 0 statements whose caller asks another code next (not through
/// AFTER_CODE): preen answers that question.
const ASKED_NEXT: &[(u32, u32)] = &[
    // The journal holds transactions without needs_recovery: "replay
    // anyway?", which preen may not answer.
    (0x000018, 0x00002B),
];

fn preen_fixes(e: &Entry) -> bool {
    if let Some(&(_, next)) = ASKED_NEXT.iter().find(|(c, _)| *c == e.code) {
        return catalogue::entry(next).is_some_and(preen_fixes);
    }
    // A pass 0 problem that asks nothing (and asks no other code next)
    // never stops preen: e2fsck does what it says and goes on.
    let stated = e.prompt == catalogue::Prompt::None
        && e.pass() == 0
        && e.flags & (catalogue::AFTER_CODE | catalogue::FATAL) == 0;
    stated || (e.preen_ok() && e.flags & catalogue::PREEN_NO == 0)
}

/// A "no" leaves the file system unmarked: a notice in pfsck, which does
/// not count toward the verdict, or a question e2fsck asks before it
/// marks the file system valid for its passes (`e2fsck_map::before_valid`).
fn no_ok(c: Code, e: &Entry) -> bool {
    c.spec().severity == Severity::Notice
        || e2fsck_map::before_valid(&Problem::new(c).e2fsck(e.code))
}

/// e2fsck codes whose NO_OK flag is not what decides e2fsck -n's verdict,
/// each judged against e2fsck 1.47.4 by a test: whether its "no" leaves
/// the file system unmarked (exit 0 on that damage alone), and why.
const NO_VERDICT: &[(u32, bool, &str)] = &[
    (
        0x000033,
        true,
        "asked before the file system is marked valid for the passes: -n exits 0 \
         (`external_journal::journal_device_hint_follows_the_uuid`)",
    ),
    (
        0x00002A,
        true,
        "stated while the journal is loaded, not asked: -n exits 0 \
         (`catalogue_13k::stray_v2_journal_fields_leave_n_clean`)",
    ),
    (
        0x000035,
        true,
        "asked by the superblock check, whose no leaves the verdict to the \
         passes (0x000036 and 0x00004d alone: -n exits 0)",
    ),
    (
        0x000036,
        true,
        "asked by the superblock check: -n exits 0 \
         (`catalogue_13k::uninit_group_without_checksums`)",
    ),
    (
        0x000039,
        true,
        "asked by the superblock check, whose no leaves the verdict to the \
         passes (0x000036 and 0x00004d alone: -n exits 0)",
    ),
    (
        0x00004D,
        true,
        "asked by the superblock check: -n exits 0 \
         (`catalogue_13k::superblock_questions_leave_n_clean`)",
    ),
    (
        0x00004E,
        true,
        "asked by the superblock check, as 0x00004d: -n exits 0",
    ),
    (
        0x00004A,
        true,
        "asked as the journal is loaded, before e2fsck marks the file system valid \
         for its passes: -n exits 0 \
         (`catalogue_13n::external_journal_superblock_checksum_is_set`)",
    ),
    (
        0x06000F,
        true,
        "stated, not asked: e2fsck never marks the file system for a statement; the \
         verdict is that of 0x060009, asked next (-n exits 4 in both: \
         `orphan_file::orphan_file_of_a_wrong_size_is_made_anew`)",
    ),
    (
        0x060010,
        true,
        "stated, not asked, as 0x06000f: the verdict is that of 0x060009 (-n exits 4 \
         in both: `orphan_file::orphan_file_with_a_hole_is_made_anew`)",
    ),
    (
        0x000016,
        true,
        "asked by the journal check, before the passes: -n exits 0 \
         (`catalogue_13i::journal_without_has_journal_counts_only_when_repaired`)",
    ),
    (
        0x000018,
        true,
        "asked by the journal check, before the passes: -n exits 0 \
         (`catalogue_13i::journal_data_without_needs_recovery`)",
    ),
    (
        0x00004F,
        true,
        "asked by the superblock check; a kept field counts only through what \
         the passes find: -n exits 0 \
         (`fuzz_finds::invalid_quota_field_declined_alone_exits_0`)",
    ),
    (
        0x00002E,
        true,
        "asked by the resize inode check, before the passes: -n exits 0 \
         (`fuzz_finds::resize_questions_leave_n_clean`)",
    ),
    (
        0x00002F,
        true,
        "asked by the resize inode check, before the passes: -n exits 0 \
         (`fuzz_finds::resize_questions_leave_n_clean`)",
    ),
    (
        0x000030,
        true,
        "asked by the resize inode check, before the passes, which judge the \
         inode (its i_blocks): -n exits 0 after 0x000051 \
         (`fuzz_finds::resize_questions_leave_n_clean`)",
    ),
    (
        0x000051,
        true,
        "asked by the superblock check: -n exits 0 \
         (`fuzz_finds::resize_questions_leave_n_clean`)",
    ),
    (
        0x000043,
        false,
        "a no stops the check: -n exits 12 in both \
         (`catalogue_13k::bad_mmp_block_stops_n`)",
    ),
    (
        0x000047,
        false,
        "a no stops the check: -n exits 12 in both \
         (`catalogue_13k::bad_mmp_block_stops_n`)",
    ),
    (
        0x01001B,
        true,
        "stated, not asked: -n warns and exits 0 \
         (`catalogue_13k::bad_block_in_a_backup_is_a_warning`)",
    ),
    (
        0x01001C,
        true,
        "stated, not asked: -n warns and exits 0 \
         (`catalogue_13k::bad_block_in_a_backup_is_a_warning`)",
    ),
    (
        0x010033,
        false,
        "asked after 0x020033 about the same large file, which has no \
         NO_OK: -n exits 4 (`catalogue_13k::large_file_on_revision_0`)",
    ),
    (
        0x010076,
        false,
        "declined, the flags stay and pass 2 asks to clear the device \
         (0x020025): -n exits 4 (`catalogue_13k::device_with_extents_and_inline_data`)",
    ),
    (
        0x040001,
        false,
        "declined, e2fsck asks to connect the inode (0x040002), which has \
         no NO_OK: -n exits 4 (`catalogue_13k::unattached_empty_inode`)",
    ),
];

/// Whether a no to `e` leaves the file system unmarked in e2fsck: its
/// NO_OK flag, unless [`NO_VERDICT`] says otherwise; none for what e2fsck
/// only states in a repair (a statement is never answered no there, and
/// -n does not reach it).
fn e2fsck_no_ok(e: &Entry, pfsck: &[Code]) -> Option<bool> {
    if let Some(&(_, clean, _)) = NO_VERDICT.iter().find(|(c, _, _)| *c == e.code) {
        return Some(clean);
    }
    let stated = e.prompt == catalogue::Prompt::None;
    if stated && pfsck.iter().all(|&c| e2fsck_map::repair_only(c)) {
        return None;
    }
    Some(e.no_ok())
}

struct Row {
    entry: &'static Entry,
    pfsck: Vec<Code>,
    fixed: bool,
    preen: Option<bool>,
    no_ok: Option<bool>,
    latch: Option<bool>,
    test: Option<&'static str>,
}

fn row(e: &'static Entry) -> Row {
    let pfsck = pfsck_for(e.code);
    let all = |f: &dyn Fn(Code) -> bool| (!pfsck.is_empty()).then(|| pfsck.iter().all(|&c| f(c)));
    let group = e.flags & catalogue::LATCH_MASK;
    let latch = group != 0 && !LATCH_ASKS_EACH.contains(&group);
    Row {
        entry: e,
        fixed: pfsck.iter().any(|&c| pfsck::fix::repaired(c)),
        // What stops the check is fixed in no mode: preen has no say.
        preen: all(&|c| c.spec().severity == Severity::Fatal || preens(c, e) == preen_fixes(e)),
        no_ok: e2fsck_no_ok(e, &pfsck).and_then(|want| all(&|c| no_ok(c, e) == want)),
        latch: all(&|c| (BATCHED.contains(&c) || e2fsck_map::asks_once(group)) == latch),
        test: pfsck.iter().find_map(|&c| damage(c)),
        pfsck,
    }
}

fn mark(b: Option<bool>) -> &'static str {
    match b {
        None => "",
        Some(true) => "yes",
        Some(false) => "**no**",
    }
}

fn render() -> String {
    let rows: Vec<Row> = catalogue::TABLE.iter().map(row).collect();
    let problems: Vec<&Row> = rows
        .iter()
        .filter(|r| r.entry.kind == Kind::Problem)
        .collect();
    let detected = problems.iter().filter(|r| !r.pfsck.is_empty()).count();
    let fixed = problems.iter().filter(|r| r.fixed).count();
    let flags_ok = |r: &&&Row| r.preen != Some(false) && r.no_ok != Some(false);
    let flags = problems
        .iter()
        .filter(|r| !r.pfsck.is_empty())
        .filter(flags_ok)
        .count();
    let tested = problems.iter().filter(|r| r.test.is_some()).count();
    let na = |r: &&&Row| catalogue::not_applicable(r.entry.code).is_some();
    let applicable: Vec<&&Row> = problems.iter().filter(|r| !na(r)).collect();
    let detected_app = applicable.iter().filter(|r| !r.pfsck.is_empty()).count();
    let left_as_e2fsck = applicable
        .iter()
        .filter(|r| !r.fixed && catalogue::unfixed_by_e2fsck(r.entry.code).is_some())
        .count();
    let fixed_app = applicable.iter().filter(|r| r.fixed).count();
    let pct = |n: usize| 100.0 * n as f64 / problems.len() as f64;

    let mut s = String::new();
    let _ = writeln!(
        s,
        "# e2fsck's problem codes in pfsck\n\n\
         Generated from the code by `PFSCK_WRITE_DOCS=1 cargo test --release \
         --test suite problems_doc` (`tests/suite/problems_doc.rs`), which fails \
         while this file is stale. Sources: e2fsck 1.47.4's problem table \
         (`src/check/catalogue.rs`, descriptions in pfsck's words), the pfsck \
         problems standing for each code (`src/check/e2fsck_map.rs`), the fixes \
         pfsck makes (`fix::repaired`) and the tests that make each damage.\n\n\
         Columns: **pfsck**: the pfsck problem codes standing for the e2fsck \
         code (`--json` gives the e2fsck code of every problem, with the inode \
         and block e2fsck's message names, under `e2fsck`); **fixed**: `pfsck \
         -y` repairs it; **preen**: `-p` fixes it exactly where e2fsck's \
         PREEN_OK (without PREEN_NO) says so; **no-ok**: answering no leaves \
         the file system unmarked in both (pfsck: a notice) or in neither \
         (e2fsck's NO_OK flag, or its verdict where the flag does not decide \
         it, listed below; blank for what e2fsck states only in a repair, \
         which is never answered no); \
         **latch**: e2fsck asks once for a group of such problems (latch), and \
         pfsck batches them into one problem or asks once per set, or neither does (a latch whose question \
         asks nothing, the relocation warning, leaves each problem asked on its own); \
         **test**: a test \
         that makes that damage from scratch.\n"
    );
    let _ = writeln!(s, "## Summary\n");
    let _ = writeln!(
        s,
        "- e2fsck's table: {} codes, {} of them problems found on disk (the rest: \
         pass headers, latch questions, list items, messages and e2fsck's own \
         failures, listed at the end).",
        rows.len(),
        problems.len()
    );
    let _ = writeln!(
        s,
        "- Detected: {detected} of {} problems ({:.1}%).",
        problems.len(),
        pct(detected)
    );
    let _ = writeln!(
        s,
        "- Fixed: {fixed} of {} problems ({:.1}%).",
        problems.len(),
        pct(fixed)
    );
    let _ = writeln!(
        s,
        "- Preen-ok and no-ok flags as e2fsck's: {flags} of the {detected} detected."
    );
    let _ = writeln!(
        s,
        "- A test making the damage: {tested} of {} problems.",
        problems.len()
    );
    let _ = writeln!(
        s,
        "- Applicable (the rest cannot occur, listed with the reason): {} problems; \
         detected {detected_app}; fixed {fixed_app}, and {left_as_e2fsck} more left as \
         e2fsck 1.47.4 leaves them ({:.1}% fixed or left as e2fsck leaves them).\n",
        applicable.len(),
        100.0 * (fixed_app + left_as_e2fsck) as f64 / applicable.len() as f64
    );
    let _ = writeln!(s, "### Not applicable\n");
    for (code, why) in catalogue::NOT_APPLICABLE {
        let what = catalogue::entry(*code).map_or("", |e| e.what);
        let _ = writeln!(s, "- `0x{code:06x}` {what}: {why}");
    }
    let _ = writeln!(s);

    let _ = writeln!(s, "### Not detected\n");
    let undetected: Vec<_> = problems
        .iter()
        .filter(|r| r.pfsck.is_empty() && !na(r))
        .collect();
    if undetected.is_empty() {
        let _ = writeln!(s, "None: every applicable problem is detected.");
    }
    for r in undetected {
        let why = WHY_NOT
            .iter()
            .find(|(c, _)| *c == r.entry.code)
            .map_or("no pfsck problem stands for it", |(_, w)| *w);
        let _ = writeln!(s, "- `0x{:06x}` {}: {why}", r.entry.code, r.entry.what);
    }
    let _ = writeln!(s, "\n### Detected, not fixed\n");
    for r in problems.iter().filter(|r| !r.pfsck.is_empty() && !r.fixed) {
        let why = catalogue::unfixed_by_e2fsck(r.entry.code)
            .map_or("reported, `-y` leaves it".to_string(), |w| {
                format!("reported; e2fsck does not fix it either: {w}")
            });
        let _ = writeln!(
            s,
            "- `0x{:06x}` {} ({}): {why}",
            r.entry.code,
            r.entry.what,
            codes(&r.pfsck)
        );
    }
    let _ = writeln!(s, "\n### No-ok judged by e2fsck's verdict\n");
    for (code, clean, why) in NO_VERDICT {
        let what = catalogue::entry(*code).map_or("", |e| e.what);
        let verdict = if *clean { "unmarked" } else { "marked" };
        let _ = writeln!(
            s,
            "- `0x{code:06x}` {what}: a no leaves it {verdict}: {why}"
        );
    }
    let _ = writeln!(s, "\n### Flags that differ\n");
    for r in problems
        .iter()
        .filter(|r| r.preen == Some(false) || r.no_ok == Some(false))
    {
        let mut what = Vec::new();
        if r.preen == Some(false) {
            what.push("preen");
        }
        if r.no_ok == Some(false) {
            what.push("no-ok");
        }
        let _ = writeln!(
            s,
            "- `0x{:06x}` {} ({}): {}",
            r.entry.code,
            r.entry.what,
            codes(&r.pfsck),
            what.join(", ")
        );
    }

    let _ = writeln!(
        s,
        "\n## Problems\n\n\
         | e2fsck | flags | what | pfsck | fixed | preen | no-ok | latch | test |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for r in &problems {
        let _ = writeln!(
            s,
            "| `0x{:06x}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.entry.code,
            r.entry.flag_names().join(" "),
            r.entry.what,
            if r.pfsck.is_empty() && catalogue::not_applicable(r.entry.code).is_some() {
                "not applicable".to_string()
            } else if r.pfsck.is_empty() {
                "**not detected**".to_string()
            } else {
                codes(&r.pfsck)
            },
            if r.pfsck.is_empty() { "" } else { yes(r.fixed) },
            mark(r.preen),
            mark(r.no_ok),
            mark(r.latch),
            r.test.map_or(String::new(), |t| format!("`{t}`")),
        );
    }
    let _ = writeln!(
        s,
        "\n## Other entries\n\n\
         | e2fsck | kind | flags | what | pfsck |\n\
         | --- | --- | --- | --- | --- |"
    );
    for r in rows.iter().filter(|r| r.entry.kind != Kind::Problem) {
        let _ = writeln!(
            s,
            "| `0x{:06x}` | {:?} | {} | {} | {} |",
            r.entry.code,
            r.entry.kind,
            r.entry.flag_names().join(" "),
            r.entry.what,
            codes(&r.pfsck)
        );
    }
    let none: Vec<String> = e2fsck_map::NONE
        .iter()
        .map(|c| format!("`{}` {c:?}", c.spec().code))
        .collect();
    let _ = writeln!(
        s,
        "\n## pfsck problems without an e2fsck code\n\n{}",
        none.join(", ")
    );
    s
}

fn codes(cs: &[Code]) -> String {
    cs.iter()
        .map(|c| format!("`{}` {c:?}", c.spec().code))
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn problems_md_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/problems.md");
    let want = render();
    if std::env::var_os("PFSCK_WRITE_DOCS").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/problems.md is stale: run PFSCK_WRITE_DOCS=1 cargo test --release --test suite \
         problems_doc"
    );
}

/// Every test [`DAMAGE`] names exists: a test function of that module,
/// or a case of the corruption table.
#[test]
fn damage_tests_exist() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite");
    for (c, t) in DAMAGE {
        let (module, name) = t.split_once("::").expect("module::name");
        let src = std::fs::read_to_string(dir.join(format!("{module}.rs")))
            .unwrap_or_else(|e| panic!("{c:?}: {t}: {e}"));
        let found = src.contains(&format!("fn {name}("))
            || (module == "corruptions" && src.contains(&format!("case(\"{name}\"")));
        assert!(found, "{c:?}: no test {t}");
    }
}
