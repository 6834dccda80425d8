//! Problems of e2fsck 1.47.4's catalogue (issue 13) that pfsck did not
//! detect, or flagged differently, each made on a fresh file system and
//! judged against e2fsck in the modes where they differ.

use crate::common::*;
use crate::problem_codes::assert_same_codes;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// 0x030018: /lost+found keeps its entries inline. Only a repair looks
/// (so -n is clean); it unlinks the directory, makes a new lost+found and
/// reconnects the old one there; preen may not (exit 4).
#[test]
fn inline_lost_found_is_replaced() {
    let tmp = TempDir::new("c13k-lf-inline");
    let img = tmp.join("image");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext4().block_size(1024).features("inline_data"),
        None,
    );
    debugfs_w(&img, &["rmdir lost+found", "mkdir lost+found"]);
    let old = inode_of(&img, "lost+found");
    assert_same_codes(&img, &[]);
    let out = both_exit(&img, &["-fp"], 4).0;
    assert!(
        out.contains("STOPPED: a problem preen may not fix"),
        "{out}"
    );
    let (_, fy) = judged_by_oracle("lf-inline", &img, 0, 1);
    assert!(fy.contains("lost+found keeps its entries inline"), "{fy}");
    let listing = debugfs_r(&img, "ls -l lost+found");
    assert!(listing.contains(&format!("#{old}")), "{listing}");
}

/// 0x000036: a group marked uninitialised on a file system without group
/// checksums. e2fsck asks in its superblock check: -n answers no and exits
/// 0; a repair clears the mark in memory and writes it with the
/// descriptors, without counting it as a change (exit 0, as for a
/// descriptor checksum).
#[test]
fn uninit_group_without_checksums() {
    let tmp = TempDir::new("c13k-uninit");
    let img = tmp.join("image");
    let opts = MkfsOpts::ext4()
        .block_size(1024)
        .features("^metadata_csum,^uninit_bg");
    mkfs(&img, 16 * MIB, &opts, None);
    debugfs_w(&img, &["set_bg 1 flags 1"]);
    assert_same_codes(&img, &[0x000036]);
    both_exit(&img, &["-fp"], 0);
    let (fn_out, fy) = judged_by_oracle("uninit", &img, 0, 0);
    assert!(fn_out.contains("flagged uninitialised"), "{fn_out}");
    assert!(!fy.contains("repairs written"), "{fy}");
    let stats = debugfs_r(&img, "stats");
    assert!(!stats.contains("Inode not init"), "{stats}");
}

/// 0x010082: time stamps past 2310 in the old extra-field format (both
/// epoch bits set), which old kernels wrote for times before 1970. e2fsck
/// asks with NO_OK: -n answers no and exits 0; a repair clears the bits.
#[test]
fn old_extra_times_leave_n_clean() {
    let tmp = TempDir::new("c13k-times");
    let img = tmp.join("image");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4().block_size(1024).inode_size(256),
        None,
    );
    let data = tmp.join("data");
    std::fs::write(&data, b"hi\n").unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} f", data.display()),
            "sif f ctime 0x80000010".into(),
            "sif f ctime_extra 3".into(),
        ],
    );
    assert_same_codes(&img, &[0x010082]);
    both_exit(&img, &["-fp"], 1);
    let (fn_out, _) = judged_by_oracle("times", &img, 0, 1);
    assert!(fn_out.contains("1970"), "{fn_out}");
}

/// A file system made with a bad block list naming `block`.
fn with_bad_block(tmp: &TempDir, name: &str, block: u64) -> std::path::PathBuf {
    let list = tmp.join(format!("{name}.bad"));
    std::fs::write(&list, format!("{block}\n")).unwrap();
    let img = tmp.join(name);
    let opts = MkfsOpts {
        extra_args: vec!["-l".into(), list.display().to_string()],
        ..MkfsOpts::ext4().block_size(1024)
    };
    mkfs(&img, 32 * MIB, &opts, None);
    img
}

/// 0x01001B, 0x01001C: a bad block in group 1's backup superblock or
/// descriptor table. e2fsck warns (no question) and goes on: exit 0 in
/// every mode, nothing to fix.
#[test]
fn bad_block_in_a_backup_is_a_warning() {
    let tmp = TempDir::new("c13k-bad-backup");
    for (name, block, code, what) in [
        ("super", 8193, 0x01001B, "backup superblock"),
        ("gdt", 8194, 0x01001C, "backup group descriptors"),
    ] {
        let img = with_bad_block(&tmp, name, block);
        assert_same_codes(&img, &[code]);
        both_exit(&img, &["-fp"], 0);
        let (fn_out, _) = judged_by_oracle(name, &img, 0, 0);
        assert!(fn_out.contains(what), "{fn_out}");
    }
}

/// 0x00004D: an invalid minimum extra inode size, asked by e2fsck's
/// superblock check: declined, -n exits 0, as pfsck's notice.
#[test]
fn superblock_questions_leave_n_clean() {
    let tmp = TempDir::new("c13k-extra-isize");
    let img = tmp.join("image");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(&img, &["ssv min_extra_isize 3"]);
    assert_same_codes(&img, &[0x00004D]);
    both_exit(&img, &["-fn"], 0);
}

/// 0x00002A: a version 1 journal superblock with a version 2 field set.
/// e2fsck states it while loading the journal and clears the fields in a
/// repair; -n exits 0, and so does every mode.
#[test]
fn stray_v2_journal_fields_leave_n_clean() {
    let tmp = TempDir::new("c13k-v1-journal");
    let img = tmp.join("image");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    let first = debugfs_number(&img, "bmap <8> 0");
    // s_blocktype: a version 1 superblock; then s_feature_compat.
    write_at(&img, first * 1024 + 4, &3u32.to_be_bytes());
    write_at(&img, first * 1024 + 0x24, &1u32.to_be_bytes());
    assert_same_codes(&img, &[0x00002A]);
    for args in [&["-fn"][..], &["-fp"], &["-fy"]] {
        both_exit(&img, args, 0);
    }
}

/// 0x000043, 0x000047: an MMP block with a bad magic number or checksum.
/// e2fsck's flag says a no is harmless, but -n cannot go on without the
/// block: exit 12 in both; a repair rewrites it (exit 0).
#[test]
fn bad_mmp_block_stops_n() {
    let tmp = TempDir::new("c13k-mmp");
    for (name, offset, code) in [("magic", 0, 0x000043), ("csum", 1020, 0x000047)] {
        let img = tmp.join(name);
        mkfs(
            &img,
            32 * MIB,
            &MkfsOpts::ext4().block_size(4096).features("mmp"),
            None,
        );
        let mmp: u64 = dumpe2fs(&img).header["MMP block number"]
            .trim()
            .parse()
            .unwrap();
        write_at(&img, mmp * 4096 + offset, &[1, 2, 3, 4]);
        assert_same_codes(&img, &[code]);
        both_exit(&img, &["-fn"], 12);
        judged_in_repairs(&img, 0);
    }
}

/// pfsck and e2fsck repair copies of `img` with -fp and -fy, both exiting
/// `want`, and e2fsck -fn finds pfsck's copy clean.
#[track_caller]
fn judged_in_repairs(img: &Path, want: i32) {
    for args in [&["-fp"][..], &["-fy"]] {
        both_exit(img, args, want);
        if oracle().is_some() {
            assert_eq!(oracle_fn(&img.with_extension("pfsck")), 0, "{args:?}");
        }
    }
}

/// 0x010033: large files on a revision 0 file system. e2fsck asks it
/// after 0x020033 (large_file missing), whose no marks the file system:
/// -n exits 4 in both.
#[test]
fn large_file_on_revision_0() {
    let tmp = TempDir::new("c13k-rev0-large");
    let img = tmp.join("image");
    let opts = MkfsOpts {
        extra_args: vec!["-r".into(), "0".into()],
        ..MkfsOpts::ext2().block_size(1024)
    };
    mkfs(&img, 8 * MIB, &opts, None);
    let data = tmp.join("data");
    std::fs::write(&data, b"hi\n").unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} f", data.display()),
            "sif f size 0x90000000".into(),
        ],
    );
    assert_same_codes(&img, &[0x020033, 0x010033]);
    judged_in_repairs(&img, 1);
    // Last: it repairs the image itself.
    judged_by_oracle("rev0-large", &img, 4, 1);
}

/// 0x010076: a FIFO with both the extents and inline data flags. e2fsck
/// asks with NO_OK, but declined the flags stay and pass 2 asks to clear
/// the FIFO: -n exits 4 in both; preen may not (PREEN_NO), and stops.
#[test]
fn device_with_extents_and_inline_data() {
    let tmp = TempDir::new("c13k-fifo-flags");
    let img = tmp.join("image");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4().block_size(1024).features("inline_data"),
        None,
    );
    debugfs_w(&img, &["mknod p p", "sif p flags 0x10080000"]);
    let out = both_exit(&img, &["-fp"], 4).0;
    assert!(
        out.contains("STOPPED: a problem preen may not fix"),
        "{out}"
    );
    judged_by_oracle("fifo-flags", &img, 4, 1);
}

/// 0x040001: an empty inode no entry names. e2fsck asks with NO_OK, but
/// declined it asks to connect the inode (0x040002): -n exits 4 in both;
/// preen clears it.
#[test]
fn unattached_empty_inode() {
    let tmp = TempDir::new("c13k-unattached-empty");
    let img = tmp.join("image");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    let empty = tmp.join("empty");
    std::fs::write(&empty, b"").unwrap();
    debugfs_w(
        &img,
        &[format!("write {} z", empty.display()), "unlink z".into()],
    );
    judged_in_repairs(&img, 1);
    judged_by_oracle("unattached-empty", &img, 4, 1);
}
