//! Problems of e2fsck 1.47.4's catalogue (issue 13) where pfsck's
//! verdict or exit code differed, each made on a fresh file system and
//! judged against e2fsck: a journal superblock with features jbd2 does
//! not know (0x000025, 0x000026), how each mode meets a journal it
//! cannot load, and the journal questions whose no does not count
//! (0x000016, 0x000018).

use crate::common::*;
use crate::problem_codes::assert_same_codes;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

/// A journalled file system whose journal superblock has the big-endian
/// `value` written at byte `offset`.
fn journal_sb_field(tmp: &TempDir, name: &str, offset: u64, value: u32) -> PathBuf {
    let img = tmp.join(name);
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    let first = debugfs_number(&img, "bmap <8> 0");
    write_at(&img, first * 1024 + offset, &value.to_be_bytes());
    img
}

/// Whether the superblock of `img` says the file system has errors.
fn marked_with_errors(img: &Path) -> bool {
    dumpe2fs(img)
        .header
        .get("Filesystem state")
        .is_some_and(|s| s.contains("errors"))
}

/// A journal e2fsck asks to abort on (an unknown version, or features
/// jbd2 does not know): `-n` answers no and cannot proceed, a repair
/// aborts, both exit 12 without writing, forced or not (the journal is
/// looked at before a clean file system is skipped); `-p` may not answer
/// and stops with UNEXPECTED INCONSISTENCY (exit 4), the superblock
/// marked with errors.
#[track_caller]
fn aborts_in_every_mode(img: &Path) {
    for args in [&["-fn"][..], &["-n"], &["-fy"], &["-y"]] {
        let before = hash_file(img);
        let (_, mine) = both_exit(img, args, 12);
        assert_eq!(hash_file(&mine), before, "pfsck {args:?} wrote");
    }
    for args in [&["-fp"][..], &["-p"]] {
        let (out, mine) = both_exit(img, args, 4);
        assert!(
            out.contains("STOPPED: a problem preen may not fix"),
            "{out}"
        );
        assert!(out.contains("journal"), "{out}");
        assert!(
            marked_with_errors(&mine),
            "pfsck {args:?} did not mark errors"
        );
    }
}

#[test]
fn unknown_journal_features_abort() {
    let tmp = TempDir::new("c13i-jfeat");
    // s_feature_incompat, then s_feature_ro_compat (jbd2 knows none).
    for (name, offset, code) in [("incompat", 0x28, 0x000026), ("rocompat", 0x2C, 0x000025)] {
        let img = journal_sb_field(&tmp, name, offset, 0x8000_0000);
        assert_same_codes(&img, &[code, 0x000015]);
        aborts_in_every_mode(&img);
        let (fy, _) = both_exit(&img, &["-fy"], 12);
        assert!(fy.contains("Abort? yes"), "{fy}");
    }
}

#[test]
fn unknown_journal_version_stops_preen_and_unforced_checks() {
    let tmp = TempDir::new("c13i-jversion");
    let img = journal_sb_field(&tmp, "version", 4, 6);
    aborts_in_every_mode(&img);
}

/// A journal listing many users: a repair clears the fields (quietly),
/// `-n` cannot proceed, forced or not.
#[test]
fn journal_users_stop_an_unforced_read_only_check() {
    let tmp = TempDir::new("c13i-jusers");
    let img = journal_sb_field(&tmp, "users", 0x40, 256);
    both_exit(&img, &["-n"], 12);
    both_exit(&img, &["-fn"], 12);
    both_exit(&img, &["-p"], 0);
}

/// `img` is judged as e2fsck judges it in each mode (`want`: -fn, -n,
/// -fp, -p, -fy, -y), and every repair leaves it clean for e2fsck.
#[track_caller]
fn judged_in_every_mode(img: &Path, want: [i32; 6]) {
    let modes: [&[&str]; 6] = [&["-fn"], &["-n"], &["-fp"], &["-p"], &["-fy"], &["-y"]];
    for (args, code) in modes.into_iter().zip(want) {
        let (_, mine) = both_exit(img, args, code);
        if oracle().is_some() && args != ["-fn"] && args != ["-n"] {
            assert_eq!(oracle_fn(&mine), 0, "e2fsck -fn after pfsck {args:?}");
        }
    }
}

/// A journal inode the superblock names without has_journal: e2fsck asks
/// before it marks the file system valid for its passes, so -n's no does
/// not count (exit 0); a repair clears it and checks in full even when
/// the file system is marked clean (exit 1).
#[test]
fn journal_without_has_journal_counts_only_when_repaired() {
    let tmp = TempDir::new("c13i-nofeature");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext3().block_size(1024), None);
    debugfs_w(&img, &["feature ^has_journal"]);
    assert_same_codes(&img, &[0x000016]);
    judged_in_every_mode(&img, [0, 0, 1, 1, 1, 1]);
}

/// A journal holding transactions (s_start set) without needs_recovery:
/// -n says no and exits 0; a repair replays it (nothing valid there, exit
/// 0); preen may not decide, and stops before skipping a clean file
/// system (exit 4).
#[test]
fn journal_data_without_needs_recovery() {
    let tmp = TempDir::new("c13i-jstart");
    let img = journal_sb_field(&tmp, "start", 0x1C, 1);
    assert_same_codes(&img, &[0x000018]);
    judged_in_every_mode(&img, [0, 0, 4, 4, 0, 0]);
}

/// No root inode: -n declines to make one (0x030001) and e2fsck gives up
/// there (exit 12), logging nothing of passes 3 to 5; -y makes a root.
#[test]
fn read_only_check_stops_without_a_root() {
    let tmp = TempDir::new("c13i-noroot");
    let img = tmp.join("img");
    mkfs(&img, 4 * MIB, &MkfsOpts::ext2().block_size(1024), None);
    debugfs_w(&img, &["mkdir foo", "clri <2>"]);
    let (out, _) = both_exit(&img, &["-fn"], 12);
    assert!(out.contains("The root inode is not in use"), "{out}");
    assert!(!out.contains("Pass 4"), "{out}");
    let (_, mine) = both_exit(&img, &["-fy"], 1);
    if oracle().is_some() {
        assert_eq!(oracle_fn(&mine), 0);
    }
}

/// e2fsprogs' f_noroot: the same codes as e2fsck's problem log.
#[test]
fn public_f_noroot_stops_in_pass_3() {
    let tmp = TempDir::new("c13i-f-noroot");
    let Some(dir) = conformance_dir() else {
        eprintln!("no conformance images: skipped");
        return;
    };
    let img = tmp.join("f_noroot");
    if extract_image(&dir.join("e2fsprogs").join("f_noroot"), &img).is_err() {
        return;
    }
    assert_same_codes(&img, &[0x030001]);
    both_exit(&img, &["-fn"], 12);
}

/// e2fsprogs' f_corrupt_dirent_tail: -n stops at the corrupt entry of a
/// block without a checksum tail, before the checksum question e2fsck
/// asks at the block's end (0x02004d).
#[test]
fn public_f_corrupt_dirent_tail_stops_before_the_checksum() {
    let tmp = TempDir::new("c13i-f-cdt");
    let Some(dir) = conformance_dir() else {
        eprintln!("no conformance images: skipped");
        return;
    };
    let img = tmp.join("f_corrupt_dirent_tail");
    if extract_image(&dir.join("e2fsprogs").join("f_corrupt_dirent_tail"), &img).is_err() {
        return;
    }
    assert_same_codes(&img, &[0x02004C, 0x020013]);
    both_exit(&img, &["-fn"], 12);
}
