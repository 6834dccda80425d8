//! A damaged orphan file (feature orphan_file, the inode the superblock's
//! s_orphan_file_inum names), made from scratch with mke2fs -O
//! orphan_file and debugfs -w, judged against e2fsck 1.47.4: the same
//! `-fn` verdict and problem codes, the same `-fy` exit, and after
//! `pfsck -fy` the same file system as e2fsck's repair leaves (the
//! superblock's own fields and the new inode's times aside), which
//! e2fsck -fn finds clean.
//!
//! e2fsck walks the orphan file after its passes as its block iteration
//! hands the blocks out (holes between extents unseen, one empty slot
//! past the last extent), and makes it anew when its size is not a whole
//! number of blocks or a slot before i_size's last block is empty.

use crate::common::journal::masked_sb;
use crate::common::*;
use crate::problem_codes::assert_same_codes;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// An image with the orphan file (inode 12) and one small file.
fn image(img: &Path, opts: MkfsOpts, size: u64) {
    mkfs(img, size, &opts.features("orphan_file"), None);
    let data = img.with_extension("data");
    std::fs::write(&data, file_content("f", 3000)).unwrap();
    debugfs_w(img, &[format!("write {} f", data.display())]);
    std::fs::remove_file(&data).unwrap();
    assert!(debugfs_r(img, "stat <12>").contains("Type: regular"));
}

fn ext4_1k() -> MkfsOpts {
    MkfsOpts::ext4().block_size(1024)
}

/// `debugfs stat` of an inode without its times and checksum (a new
/// inode's times are the time of the run).
fn stat_masked(img: &Path, ino: u32) -> String {
    debugfs_r(img, &format!("stat <{ino}>"))
        .lines()
        .filter(|l| !l.contains("time:") && !l.starts_with("Inode checksum:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Judges `img` by e2fsck as the module comment says: `-fn` exits
/// `want_n` in both, `-fy` exits `want_y` in both, and both repairs
/// leave the same blocks (e2fsck's in `A`, pfsck's in `B` beside `img`).
#[track_caller]
fn as_e2fsck(ctx: &str, img: &Path, want_n: i32, want_y: i32) -> String {
    assert_same_codes(img, &[]);
    let dir = img.parent().unwrap();
    let (a, b) = (dir.join("A"), dir.join("B"));
    copy_image(img, &a);
    copy_image(img, &b);
    let oracle_y = oracle_run(&a, &["-fy"]);
    assert_eq!(
        oracle_y.code(),
        Some(want_y),
        "[{ctx}] e2fsck -fy:\n{}",
        oracle_y.stdout
    );
    let (_, y_out) = judged_by_oracle(ctx, &b, want_n, want_y);
    let (da, db) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(masked_sb(&da), masked_sb(&db), "[{ctx}] superblocks differ");
    let ino_blk = inode_offset(&a, 12) / 1024;
    for (k, (x, y)) in da.chunks(1024).zip(db.chunks(1024)).enumerate() {
        let k = k as u64;
        if k != 1 && k != ino_blk {
            assert!(
                x == y,
                "[{ctx}] 1 KiB block {k} differs\npfsck -fy:\n{y_out}\ne2fsck -fy:\n{}",
                oracle_y.stdout
            );
        }
    }
    assert_eq!(stat_masked(&a, 12), stat_masked(&b, 12), "[{ctx}] inode 12");
    y_out
}

/// A size that is not a whole number of blocks: e2fsck makes the file
/// anew (32 blocks here), with and without orphan_present (which makes
/// it try the orphans first and stop there). pfsck said clean.
#[test]
fn orphan_file_of_a_wrong_size_is_made_anew() {
    let tmp = TempDir::new("orphan-file-size");
    for (ctx, damage) in [
        ("size 32000", vec!["sif <12> size 32000"]),
        (
            "size 32000, orphan_present",
            vec!["sif <12> size 32000", "feature orphan_present"],
        ),
    ] {
        let img = tmp.join("disk.img");
        image(&img, ext4_1k(), 16 * MIB);
        debugfs_w(&img, &damage);
        let out = as_e2fsck(ctx, &img, 4, 1);
        assert!(out.contains("Recreate? yes"), "[{ctx}] {out}");
        let repaired = tmp.join("B");
        assert!(debugfs_r(&repaired, "stat <12>").contains("Size: 32768"));
    }
}

/// Slots before i_size's last block that e2fsck's walk finds empty: a
/// size past the mapped blocks, an extent map cut short, a block-mapped
/// file with a zero pointer. The default size follows the file system's
/// (43 blocks on 179200). pfsck said clean, or only that orphan
/// processing stopped.
#[test]
fn orphan_file_with_a_hole_is_made_anew() {
    let tmp = TempDir::new("orphan-file-hole");
    let cases: [(&str, MkfsOpts, u64, &[&str]); 5] = [
        (
            "past its blocks",
            ext4_1k(),
            16 * MIB,
            &["sif <12> size 65536"],
        ),
        ("map cut short", ext4_1k(), 16 * MIB, &["punch <12> 10"]),
        (
            "block-mapped, zero pointer",
            ext4_1k().features("^extent,^64bit"),
            16 * MIB,
            &["sif <12> block[5] 0"],
        ),
        (
            "block-mapped, past its blocks",
            ext4_1k().features("^extent,^64bit"),
            16 * MIB,
            &["sif <12> size 65536"],
        ),
        (
            "4 KiB blocks, size 100",
            MkfsOpts::ext4().block_size(4096),
            700 * MIB,
            &["sif <12> size 100"],
        ),
    ];
    for (ctx, opts, size, damage) in cases {
        let img = tmp.join("disk.img");
        image(&img, opts, size);
        debugfs_w(&img, damage);
        as_e2fsck(ctx, &img, 4, 1);
        std::fs::remove_file(&img).unwrap();
    }
}

/// orphan_present over an orphan file e2fsck finds clean (a hole between
/// extents it never sees): its repair clears the flag as part of the
/// orphan processing (exit 0), and -n answers no without marking the
/// file system (exit 0). pfsck said 4, then 1, and took the hole for one.
#[test]
fn orphan_present_over_a_clean_orphan_file() {
    let tmp = TempDir::new("orphan-file-present");
    for (ctx, damage) in [
        ("clean", vec!["feature orphan_present"]),
        (
            "hole between extents",
            vec!["punch <12> 5 5", "feature orphan_present"],
        ),
    ] {
        let img = tmp.join("disk.img");
        image(&img, ext4_1k(), 16 * MIB);
        debugfs_w(&img, &damage);
        as_e2fsck(ctx, &img, 0, 0);
        let features = debugfs_r(&tmp.join("B"), "features");
        assert!(!features.contains("orphan_present"), "[{ctx}] {features}");
    }
}

/// orphan_present without orphan_file: e2fsck clears the flag after its
/// passes (exit 1). pfsck left it, and the orphan processing it asked
/// for, behind (exit 5). (e2fsck clears the old orphan file's inode,
/// pfsck the superblock field naming it, keeping the inode: the trees
/// differ, both are clean.)
#[test]
fn orphan_present_without_orphan_file() {
    let tmp = TempDir::new("orphan-file-nofile");
    let img = tmp.join("disk.img");
    image(&img, ext4_1k(), 16 * MIB);
    debugfs_w(&img, &["feature -orphan_file orphan_present"]);
    assert_same_codes(&img, &[0x06000E]);
    let (fn_out, _) = judged_by_oracle("orphan_present, no orphan_file", &img, 4, 1);
    assert!(fn_out.contains("orphan_present"), "{fn_out}");
    assert!(!debugfs_r(&img, "features").contains("orphan_present"));
    assert!(debugfs_r(&img, "stat /f").contains("Size: 3000"));
}

/// The orphan file inode cleared (`clri`): to e2fsck it is an unused
/// inode (no links), and only pass 5 finds its blocks and inode still
/// marked. pfsck also called it a reserved inode of a bad mode.
#[test]
fn orphan_file_inode_cleared() {
    let tmp = TempDir::new("orphan-file-clri");
    for (ctx, damage) in [
        ("clri", vec!["clri <12>"]),
        (
            "clri, orphan_present",
            vec!["clri <12>", "feature orphan_present"],
        ),
    ] {
        let img = tmp.join("disk.img");
        image(&img, ext4_1k(), 16 * MIB);
        debugfs_w(&img, &damage);
        let out = as_e2fsck(ctx, &img, 4, 1);
        assert!(!out.contains("Reserved inode 12"), "[{ctx}] {out}");
    }
}

/// Orphan file blocks with a bad magic or checksum, with and without
/// orphan_present (the orphan processing stops at them): e2fsck rewrites
/// them empty; declined, it offers to make the file anew.
#[test]
fn orphan_file_blocks_with_bad_tails() {
    let tmp = TempDir::new("orphan-file-tail");
    for (ctx, tail_off, present) in [
        ("magic", 8u64, false),
        ("checksum", 4, false),
        ("magic, orphan_present", 8, true),
        ("checksum, orphan_present", 4, true),
    ] {
        let img = tmp.join("disk.img");
        image(&img, ext4_1k(), 16 * MIB);
        let blk = debugfs_number(&img, "bmap <12> 3");
        write_at(&img, (blk + 1) * 1024 - tail_off, &[0x5a]);
        if present {
            debugfs_w(&img, &["feature orphan_present"]);
        }
        as_e2fsck(ctx, &img, 4, 1);
    }
}

/// A dirty orphan file block on a file system whose primary superblock
/// is unusable: e2fsck, checking with a backup, still walks the orphan
/// file after its passes and offers to clean the block (declined, to
/// make the file anew). pfsck looked at no orphan file on a backup.
#[test]
fn orphan_file_checked_with_a_backup_superblock() {
    let tmp = TempDir::new("orphan-file-backup");
    let img = tmp.join("disk.img");
    image(&img, ext4_1k(), 16 * MIB);
    let blk = debugfs_number(&img, "bmap <12> 3");
    write_at(&img, (blk + 1) * 1024 - 8, &[0x5a]);
    // The primary's magic number.
    write_at(&img, 1024 + 0x38, &[0, 0]);
    assert_same_codes(&img, &[0x06000C, 0x060009]);
    let (fn_out, _) = judged_by_oracle("backup", &img, 4, 1);
    assert!(
        fn_out.contains("Block 3 of the orphan file (inode 12) still lists inodes."),
        "{fn_out}"
    );
}

/// An orphan file without a journal (0x060007): e2fsck asks to clear it
/// after its passes (exit 4 under -n), pfsck said nothing of it. e2fsck
/// -fy zeroes the inode but leaves it marked in use and named by the
/// superblock, so its own next check is not clean; pfsck drops the
/// feature, the superblock's inode number and the inode, and frees its
/// blocks: e2fsck finds the result clean.
#[test]
fn orphan_file_without_a_journal_is_dropped() {
    let tmp = TempDir::new("orphan-file-nojournal");
    let img = tmp.join("disk.img");
    image(&img, ext4_1k(), 16 * MIB);
    debugfs_w(
        &img,
        &[
            "feature -has_journal",
            "kill_file <8>",
            "clri <8>",
            "ssv journal_inum 0",
            "ssv jnl_backup_type 0",
        ],
    );
    let (fn_out, y_out) = judged_by_oracle("orphan file, no journal", &img, 4, 1);
    assert!(
        fn_out.contains("orphan file (inode 12) but no journal"),
        "{fn_out}"
    );
    assert!(y_out.contains("no journal.\nClear? yes"), "{y_out}");
    assert!(!debugfs_r(&img, "features").contains("orphan_file"));
    assert!(debugfs_r(&img, "stat /f").contains("Size: 3000"));
}
