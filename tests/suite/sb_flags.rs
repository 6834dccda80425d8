//! Superblock flags and features pass 0 sets right (issue 13, e2fsck's
//! 0x000009, 0x00003b, 0x000034, 0x000048, 0x00004b): each damage made
//! with debugfs on a fresh file system, judged against e2fsck 1.47.4.
//! The first three e2fsck only fixes when it may write, without calling
//! them corrections (exit 0); the last two it asks about under `-n` too.

use crate::common::*;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// The superblock's text as `debugfs -R stats` prints it.
fn stats(img: &Path) -> String {
    debugfs_r(img, "stats")
}

fn line<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no {key} in:\n{text}"))
}

/// Several groups with descriptor checksums seeded by the UUID.
fn uninit_bg(tmp: &TempDir, name: &str) -> std::path::PathBuf {
    let img = tmp.join(name);
    let opts = MkfsOpts::ext4().block_size(1024).features("^metadata_csum");
    mkfs(&img, 20 * MIB, &opts, None);
    img
}

/// `pfsck -fy` and e2fsck 1.47.4 -fy on a copy both exit `want`.
#[track_caller]
fn oracle_fy_agrees(img: &Path, want: i32) {
    let copy = img.with_extension("oracle");
    copy_image(img, &copy);
    assert_eq!(oracle_run(&copy, &["-fy"]).code(), Some(want));
}

#[test]
fn no_uuid_gets_a_new_one() {
    let tmp = TempDir::new("sb-no-uuid");
    let img = uninit_bg(&tmp, "img");
    debugfs_w(&img, &["ssv uuid null"]);
    assert!(line(&stats(&img), "Filesystem UUID:").contains("<none>"));
    oracle_fy_agrees(&img, 0);
    let (fn_out, fy_out) = judged_by_oracle("no-uuid", &img, 0, 0);
    assert!(!fn_out.contains("UUID"), "{fn_out}");
    assert!(fy_out.contains("has no UUID"), "{fy_out}");
    let uuid = line(&stats(&img), "Filesystem UUID:").to_string();
    assert!(!uuid.contains("<none>"), "{uuid}");
    // The backups carry it too (e2fsck -b judges the first one clean).
    let b = oracle_run(&img, &["-fn", "-b", "8193", "-B", "1024"]);
    assert_eq!(b.code(), Some(0), "{}", b.stdout);
}

#[test]
fn test_fs_flag_is_cleared() {
    let tmp = TempDir::new("sb-test-fs");
    let img = uninit_bg(&tmp, "img");
    debugfs_w(&img, &["ssv flags 5"]);
    oracle_fy_agrees(&img, 0);
    let (_, fy_out) = judged_by_oracle("test-fs", &img, 0, 0);
    let ext4 = std::fs::read_to_string("/proc/filesystems").is_ok_and(|t| t.contains("\text4"));
    let flags = line(&stats(&img), "Filesystem flags:").to_string();
    assert_eq!(
        flags.contains("test_filesystem"),
        !ext4,
        "{flags}\n{fy_out}"
    );
}

#[test]
fn dirhash_hint_is_added() {
    let tmp = TempDir::new("sb-dirhash");
    let img = uninit_bg(&tmp, "img");
    debugfs_w(&img, &["ssv flags 0"]);
    oracle_fy_agrees(&img, 0);
    let (_, fy_out) = judged_by_oracle("dirhash", &img, 0, 0);
    assert!(fy_out.contains("directory hash hint"), "{fy_out}");
    let flags = line(&stats(&img), "Filesystem flags:").to_string();
    assert!(flags.contains("directory_hash"), "{flags}");
}

#[test]
fn sixty_four_bit_without_extents() {
    let tmp = TempDir::new("sb-64bit");
    let img = tmp.join("img");
    // One group, so 64-byte descriptors read the 32-byte ones' fields.
    mkfs(&img, 8 * MIB, &MkfsOpts::ext2().block_size(4096), None);
    debugfs_w(&img, &["ssv desc_size 64", "feature 64bit"]);
    oracle_fy_agrees(&img, 1);
    let (fn_out, _) = judged_by_oracle("64bit-no-extents", &img, 0, 1);
    assert!(
        fn_out.contains("without the extents feature cannot reach"),
        "{fn_out}"
    );
    assert!(line(&stats(&img), "Filesystem features:").contains("extent"));
}

#[test]
fn csum_seed_without_metadata_csum() {
    let tmp = TempDir::new("sb-csum-seed");
    let img = uninit_bg(&tmp, "img");
    debugfs_w(&img, &["feature metadata_csum_seed"]);
    oracle_fy_agrees(&img, 1);
    let (fn_out, _) = judged_by_oracle("csum-seed", &img, 0, 1);
    assert!(fn_out.contains("metadata_csum_seed"), "{fn_out}");
    let features = line(&stats(&img), "Filesystem features:").to_string();
    assert!(!features.contains("metadata_csum_seed"), "{features}");
}

#[test]
fn journal_backup_is_written() {
    let tmp = TempDir::new("sb-jnl-backup");
    let img = uninit_bg(&tmp, "img");
    debugfs_w(&img, &["ssv jnl_backup_type 0"]);
    oracle_fy_agrees(&img, 0);
    let (_, fy_out) = judged_by_oracle("jnl-backup", &img, 0, 0);
    assert!(
        fy_out.contains("keeps no copy of the journal inode"),
        "{fy_out}"
    );
    let backup = line(&stats(&img), "Journal backup:").to_string();
    assert!(backup.contains("inode blocks"), "{backup}");
}

#[test]
fn features_on_revision_0() {
    let tmp = TempDir::new("sb-rev0");
    let img = tmp.join("img");
    let opts = MkfsOpts::ext2().block_size(1024);
    let opts = MkfsOpts {
        extra_args: vec!["-r".into(), "0".into()],
        ..opts
    };
    mkfs(&img, 8 * MIB, &opts, None);
    debugfs_w(&img, &["feature filetype"]);
    oracle_fy_agrees(&img, 1);
    let (_, fy_out) = judged_by_oracle("rev0", &img, 0, 1);
    assert!(fy_out.contains("revision 0"), "{fy_out}");
    let rev = line(&stats(&img), "Filesystem revision #:").to_string();
    assert!(rev.contains("1 (dynamic)"), "{rev}");
}

#[test]
fn metadata_csum_with_uninit_bg() {
    let tmp = TempDir::new("sb-csum-gdt");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4(), None);
    debugfs_w(&img, &["feature uninit_bg"]);
    oracle_fy_agrees(&img, 1);
    let (fn_out, _) = judged_by_oracle("csum-gdt", &img, 0, 1);
    assert!(fn_out.contains("uninit_bg"), "{fn_out}");
    let features = line(&stats(&img), "Filesystem features:").to_string();
    assert!(!features.contains("uninit_bg"), "{features}");
}
