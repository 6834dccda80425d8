//! e2fsck problem codes pfsck's `--json` gave differently from e2fsck
//! 1.47.4's problem log on the differential fuzzer's seed fz34-final
//! (issue 13), each damage made again on a fresh file system with mke2fs
//! and debugfs and judged against e2fsck: the set of codes, the printed
//! report's shape where pfsck's words stand for e2fsck's, and a repair
//! e2fsck then finds clean.

use crate::common::*;
use crate::problem_codes::assert_same_codes;

const MIB: u64 = 1 << 20;

/// A journal holding transactions without needs_recovery, seen through a
/// backup superblock (fz34-final #457: the primary's checksum fails).
/// A backup never carries the flag, so e2fsck states that it replays the
/// journal anyway (0x00002C) where, on the primary, it asks (0x00002B);
/// pfsck's report named the question.
#[test]
fn journal_without_needs_recovery_on_a_backup_superblock() {
    let tmp = TempDir::new("codes-fz34-jbackup");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    let jsb = debugfs_number(&img, "bmap <8> 0") * 1024;
    write_at(&img, jsb + 0x1C, &1u32.to_be_bytes());
    // The primary superblock's checksum, made wrong.
    let sum = read_at(&img, 1024 + 0x3FC, 4);
    let bad: Vec<u8> = sum.iter().map(|b| !b).collect();
    write_at(&img, 1024 + 0x3FC, &bad);
    assert_same_codes(&img, &[0x000044, 0x000018, 0x00002C]);
    judged_by_oracle("journal, backup superblock", &img, 4, 1);
}
