//! Repairs of the superblock and group descriptors: a zeroed primary
//! superblock and a primary descriptor table pointing a bitmap outside
//! the file system are restored from the backup the check used; then
//! `e2fsck -fn` and `pfsck -fn` exit 0 and every file keeps its contents.
//!
//! Bases: ext2 with 1 KiB blocks (the primary superblock fills block 1)
//! and ext4 with metadata_csum and 4 KiB blocks (it shares block 0), with
//! small groups and with mke2fs's default ones.

use crate::common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

#[derive(Clone, Copy, Debug)]
enum Base {
    Ext2,
    Ext4,
    /// mke2fs's default 32768 blocks per group: where both checkers look
    /// for a backup when the primary superblock is unreadable.
    Ext4Default,
}

impl Base {
    fn image(self) -> PathBuf {
        let (key, size, opts) = match self {
            Base::Ext2 => (
                "super-base-ext2",
                16 * MIB,
                MkfsOpts::ext2().block_size(1024),
            ),
            Base::Ext4 => (
                "super-base-ext4",
                32 * MIB,
                MkfsOpts::ext4().block_size(4096).blocks_per_group(2048),
            ),
            Base::Ext4Default => ("super-base-ext4-default", 160 * MIB, MkfsOpts::ext4()),
        };
        cached_image(key, |img| {
            mkfs(img, size, &opts, Some(&standard_tree_dir()));
            assert_eq!(e2fsck_fn(img), 0, "base {self:?} is not clean");
        })
    }
}

const FILES: [&str; 5] = ["f300k", "f70k", "dir1/sub/c", "dir1/b.bin", "f4096"];

/// Do the primary superblock's magic or group 0's descriptor (as
/// `dumpe2fs`, which reads the primary copies, prints it) differ from the
/// clean image's?
fn primary_differs(clean: &Path, img: &Path) -> bool {
    let magic = |p: &Path| read_at(p, 1024 + 0x38, 2);
    if magic(clean) != magic(img) {
        return true;
    }
    let g0 = |p: &Path| {
        let g = &dumpe2fs(p).groups[0];
        (g.block_bitmap, g.inode_bitmap, g.inode_table)
    };
    g0(clean) != g0(img)
}

/// The -fy round trip; `expect` must appear in pfsck's output. With
/// `restores`, the damage hides behind a backup both checkers fall back
/// to, and the primary copies must be restored.
fn repairs(name: &str, base: Base, expect: &str, restores: bool, damage: impl FnOnce(&Path)) {
    repairs_with(name, base, &[], expect, restores, damage)
}

/// As [`repairs`], with `extra` options before `-fy` (a backup named with
/// `-b`).
fn repairs_with(
    name: &str,
    base: Base,
    extra: &[&str],
    expect: &str,
    restores: bool,
    damage: impl FnOnce(&Path),
) {
    let ctx = format!("{name} on {base:?}");
    let tmp = TempDir::new(&format!("super-{name}"));
    let img = tmp.join("disk.img");
    copy_image(&base.image(), &img);
    damage(&img);
    if restores {
        // Both checkers fall back to the backup and find it consistent,
        // so the damage shows only in what the primary copies hold.
        assert!(
            primary_differs(&base.image(), &img),
            "[{ctx}] the damage left the primary copies as they were"
        );
    } else {
        assert_ne!(e2fsck_fn(&img), 0, "[{ctx}] e2fsck -fn sees no damage");
    }
    let mut args: Vec<&OsStr> = extra.iter().map(OsStr::new).collect();
    args.extend([OsStr::new("-fy"), img.as_os_str()]);
    let out = pfsck(&args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "[{ctx}] pfsck -fy:\n{text}");
    assert!(text.contains(expect), "[{ctx}]\n{text}");
    assert_both_clean(&ctx, &img);
    assert!(
        !restores || !primary_differs(&base.image(), &img),
        "[{ctx}] the primary superblock or descriptors were not restored"
    );
    let tree = standard_tree_dir();
    for f in FILES {
        let want = std::fs::read(tree.join(f)).unwrap();
        let got = std::process::Command::new(tool("debugfs"))
            .arg("-R")
            .arg(format!("cat /{f}"))
            .arg(&img)
            .output()
            .unwrap()
            .stdout;
        assert!(got == want, "[{ctx}] /{f} changed by the repair");
    }
}

#[test]
fn zeroed_primary_superblock() {
    for b in [Base::Ext2, Base::Ext4Default] {
        repairs("zero-sb", b, "using the copy at block", true, |img| {
            write_at(img, 1024, &[0u8; 1024])
        });
    }
}

/// A primary superblock whose metadata_csum checksum does not match (a
/// flipped UUID byte, which also seeds every other checksum): like
/// e2fsck, pfsck checks through the backup and restores the primary from
/// it. It used to check through the primary and "fix" every checksum of
/// the file system, clearing inodes e2fsck keeps (difffuzz seed 1, 111).
#[test]
fn primary_superblock_checksum_wrong() {
    repairs(
        "sb-csum",
        Base::Ext4Default,
        "using the copy at block",
        false,
        |img| {
            let uuid0 = read_at(img, 1024 + 0x68, 1)[0];
            write_at(img, 1024 + 0x68, &[uuid0 ^ 0x0b]);
        },
    );
}

/// A wrong inodes count. With groups of 2048 blocks no backup lies where
/// both checkers look (group 1 of mke2fs's default geometry): e2fsck loads
/// the primary despite the count and sets it to groups x inodes per group,
/// and so does pfsck; `-n` answers no and stops (exit 12) in both. With
/// the default geometry the backup is used and the primary restored.
#[test]
fn inodes_count_wrong() {
    for b in [Base::Ext4, Base::Ext4Default] {
        let count = dumpe2fs(&b.image()).inodes_count;
        let damage = |img: &Path| {
            debugfs_w(img, &[format!("ssv inodes_count {}", count + 8)]);
        };
        if matches!(b, Base::Ext4) {
            let tmp = TempDir::new("super-inodes-count-n");
            let img = tmp.join("disk.img");
            copy_image(&b.image(), &img);
            damage(&img);
            let n = pfsck(&[OsStr::new("-fn"), img.as_os_str()]);
            assert_eq!(e2fsck_fn(&img), 12, "e2fsck -fn");
            assert_eq!(
                n.status.code(),
                Some(12),
                "pfsck -fn:\n{}",
                String::from_utf8_lossy(&n.stdout)
            );
        }
        let expect = match b {
            Base::Ext4 => "The superblock's inode count",
            _ => "using the copy at block",
        };
        repairs("inodes-count", b, expect, false, damage);
    }
}

/// A primary superblock with a bad magic and no backup where e2fsck looks
/// (groups of 2048 blocks): both stop (exit 8) until the backup is named
/// with `-b 2048 -B 4096`; then the primary copies are restored from it
/// and the later rounds check the restored primary.
#[test]
fn backup_named_with_b() {
    let damage = |img: &Path| write_at(img, 1024 + 0x38, &[0x34, 0x12]);
    let tmp = TempDir::new("super-b-n");
    let img = tmp.join("disk.img");
    copy_image(&Base::Ext4.image(), &img);
    damage(&img);
    assert_eq!(e2fsck_fn(&img), 8, "e2fsck -fn finds a backup");
    let n = pfsck(&[OsStr::new("-fn"), img.as_os_str()]);
    assert_eq!(n.status.code(), Some(8), "pfsck -fn finds a backup");
    repairs_with(
        "b-2048",
        Base::Ext4,
        &["-b", "2048", "-B", "4096"],
        "repairs written to the file system",
        true,
        damage,
    );
}

#[test]
fn primary_descriptors_unusable() {
    for b in [Base::Ext2, Base::Ext4] {
        repairs("bad-gd", b, "using the copy at block", true, |img| {
            debugfs_w(img, &["set_bg 0 block_bitmap 0"]);
        });
    }
}

/// A bitmap listed as a bad block moves to a free block of its group (its
/// contents copied); the bad blocks inode keeps the block.
#[test]
fn bitmaps_on_bad_blocks_relocated() {
    for (b, which) in [(Base::Ext2, "inode"), (Base::Ext4, "block")] {
        let info = dumpe2fs(&b.image());
        let g1 = &info.groups[1];
        let blk = if which == "inode" {
            g1.inode_bitmap
        } else {
            g1.block_bitmap
        };
        let bs = info.block_size;
        let expect = format!("Group 1's {which} bitmap sits on bad block {blk}.  Relocate? yes");
        repairs("bad-bitmap", b, &expect, false, |img| {
            debugfs_w(
                img,
                &[
                    format!("sif <1> block[0] {blk}"),
                    format!("sif <1> size {bs}"),
                    format!("sif <1> blocks {}", bs / 512),
                ],
            );
        });
    }
}

/// Quota inode numbers that name no possible inode are cleared (the
/// quota type then has no file, as e2fsck leaves it).
#[test]
fn invalid_quota_inode_numbers_cleared() {
    let tmp = TempDir::new("super-quota");
    let img = tmp.join("disk.img");
    // No tree: mke2fs -d leaves the quota files without the tree's usage.
    mkfs(&img, 32 * MIB, &MkfsOpts::ext4().features("quota"), None);
    assert_eq!(e2fsck_fn(&img), 0, "base is not clean");
    // The project type has no file: clearing the field leaves nothing
    // behind (an orphaned user or group quota inode would need clearing).
    debugfs_w(&img, &["ssv prj_quota_inum 808464432"]);
    assert_ne!(e2fsck_fn(&img), 0, "e2fsck -fn sees no damage");
    let out = pfsck(&[OsStr::new("-fy"), img.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "pfsck -fy:\n{text}");
    assert!(
        text.contains("The project quota file named in the superblock"),
        "{text}"
    );
    assert_both_clean("quota-inum", &img);
}

/// Usage recorded in a quota file entry is rewritten with what the check
/// counted (debugfs writes files without updating quota usage).
#[test]
fn quota_usage_rewritten() {
    for (name, size, opts) in [
        (
            "quota-1k",
            8 * MIB,
            MkfsOpts::ext4().block_size(1024).features("quota"),
        ),
        ("quota-4k", 32 * MIB, MkfsOpts::ext4().features("quota")),
    ] {
        let tmp = TempDir::new(&format!("super-{name}"));
        let img = tmp.join("disk.img");
        mkfs(&img, size, &opts, None);
        let data = tmp.join("data");
        std::fs::write(&data, file_content("data", 50_000)).unwrap();
        debugfs_w(&img, &[format!("write {} data", data.display())]);
        assert_ne!(e2fsck_fn(&img), 0, "[{name}] e2fsck -fn sees no damage");
        let out = pfsck(&[OsStr::new("-fy"), img.as_os_str()]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert_eq!(out.status.code(), Some(1), "[{name}] pfsck -fy:\n{text}");
        assert!(text.contains("Quota usage differs"), "[{name}] {text}");
        assert_both_clean(name, &img);
    }
}

/// resize_inode turned off with the resize inode still in place: the
/// inode is cleared and the reserved GDT blocks given back, as e2fsck does.
#[test]
fn resize_inode_without_the_feature() {
    for bs in [1024, 4096] {
        let name = format!("resize-off-{bs}");
        let tmp = TempDir::new(&name);
        let img = tmp.join("disk.img");
        let opts = MkfsOpts::ext4().block_size(bs).features("resize_inode");
        mkfs(&img, 32 * MIB, &opts, None);
        assert_eq!(e2fsck_fn(&img), 0, "[{name}] base is not clean");
        debugfs_w(&img, &["feature -resize_inode"]);
        // e2fsck -n reports it but exits 0: it asks before its passes,
        // which find nothing wrong with the inode.
        let seen = pfsck(&[OsStr::new("-fn"), img.as_os_str()]);
        let said = String::from_utf8_lossy(&seen.stdout).to_string();
        assert_eq!(seen.status.code(), Some(0), "[{name}] pfsck -fn:\n{said}");
        assert!(said.contains("GDT blocks are reserved"), "[{name}] {said}");
        assert!(said.contains("not empty.  Clear? no"), "[{name}] {said}");
        let out = pfsck(&[OsStr::new("-fy"), img.as_os_str()]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert_eq!(out.status.code(), Some(1), "[{name}] pfsck -fy:\n{text}");
        assert!(
            text.contains("resize inode is not empty"),
            "[{name}] {text}"
        );
        let sb = dumpe2fs(&img);
        assert_eq!(
            sb.header.get("Reserved GDT blocks").map(String::as_str),
            None,
            "[{name}] reserved GDT blocks left"
        );
        assert_both_clean(&name, &img);
    }
}

/// A zeroed primary superblock on file systems with no backup at all
/// (sparse_super2 with no backup superblock; one group without
/// sparse_super): e2fsck 1.47.4 tries the backups it guesses, finds none
/// and stops with one line naming the device (exit 8) in every mode;
/// pfsck stops the same way and writes nothing.
#[test]
fn zeroed_primary_without_any_backup() {
    let tmp = TempDir::new("super-no-backup");
    let cases = [
        (
            "sparse_super2, no backup, 1 KiB",
            MkfsOpts::ext4()
                .block_size(1024)
                .features("sparse_super2")
                .extended("num_backup_sb=0"),
            32u64 << 20,
        ),
        (
            "sparse_super2, no backup, 4 KiB",
            MkfsOpts::ext4()
                .block_size(4096)
                .features("sparse_super2")
                .extended("num_backup_sb=0"),
            300 << 20,
        ),
        (
            "one group, no sparse_super",
            MkfsOpts::ext4()
                .block_size(1024)
                .features("^sparse_super,^resize_inode"),
            4 << 20,
        ),
    ];
    for (ctx, opts, size) in cases {
        let img = tmp.join("disk.img");
        mkfs(&img, size, &opts, None);
        write_at(&img, 1024, &[0u8; 1024]);
        let before = hash_file(&img);
        for mode in ["-fn", "-fy", "-fp"] {
            let oracle = {
                let copy = tmp.join("oracle.img");
                copy_image(&img, &copy);
                oracle_run(&copy, &[mode])
            };
            assert_eq!(oracle.code(), Some(8), "[{ctx}] e2fsck {mode}");
            let (code, out) = pfsck_code(&[mode], &img);
            assert_eq!(code, 8, "[{ctx}] pfsck {mode}:\n{out}");
            let name = img.display().to_string();
            assert!(
                out.lines()
                    .any(|l| l.contains("superblock magic") && l.contains(&name)),
                "[{ctx}] pfsck {mode}:\n{out}"
            );
            assert_eq!(before, hash_file(&img), "[{ctx}] pfsck {mode} wrote");
        }
        std::fs::remove_file(&img).unwrap();
    }
}
