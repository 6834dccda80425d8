//! The journal superblock's version and the superblock's journal flags
//! (issue 13: e2fsck's 0x000027, 0x000016, 0x000017), each made on a
//! fresh file system and judged against e2fsck 1.47.4.

use crate::common::*;
use crate::problem_codes::assert_same_codes;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// A journalled file system whose journal superblock has block type
/// `blocktype` (big-endian, after the magic number).
fn journal_blocktype(tmp: &TempDir, blocktype: u32) -> std::path::PathBuf {
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    let first = debugfs_number(&img, "bmap <8> 0");
    write_at(&img, first * 1024 + 4, &blocktype.to_be_bytes());
    img
}

/// `bin` exits `want` with `args` on a copy of `img`; its output.
#[track_caller]
fn exits(img: &Path, args: &[&str], want: i32, oracle: bool) -> String {
    let copy = img.with_extension(if oracle { "e2" } else { "pf" });
    copy_image(img, &copy);
    let (code, out) = if oracle {
        let r = oracle_run(&copy, args);
        (r.code().unwrap_or(-1), r.stdout)
    } else {
        pfsck_code(args, &copy)
    };
    assert_eq!(code, want, "{args:?} (oracle: {oracle}):\n{out}");
    out
}

/// A version jbd2 does not know: e2fsck asks to abort. `-n` answers no,
/// then no to resetting the journal superblock, and cannot proceed; `-y`
/// aborts. Both exit 12 and write nothing.
#[test]
fn unknown_journal_version_aborts() {
    let tmp = TempDir::new("jnl-version");
    for blocktype in [0, 6] {
        let img = journal_blocktype(&tmp, blocktype);
        assert_same_codes(&img, &[0x000027, 0x000015]);
        let have_oracle = oracle().is_some();
        for args in [&["-fn"][..], &["-fy"][..]] {
            if have_oracle {
                exits(&img, args, 12, true);
            }
            let before = hash_file(&img);
            let (code, out) = pfsck_code(args, &img);
            assert_eq!(code, 12, "{args:?}:\n{out}");
            assert!(out.contains("not supported"), "{out}");
            assert_eq!(hash_file(&img), before, "pfsck {args:?} wrote");
        }
        let (_, out) = pfsck_code(&["-fy"], &img);
        assert!(out.contains("Abort? yes"), "{out}");
    }
}

/// A block type jbd2 knows but not for a superblock (a descriptor) is
/// damage, not a version: the journal superblock is reset.
#[test]
fn descriptor_block_type_is_a_corrupt_journal_superblock() {
    let tmp = TempDir::new("jnl-version-desc");
    let img = journal_blocktype(&tmp, 1);
    assert_same_codes(&img, &[0x000015]);
    if oracle().is_some() {
        exits(&img, &["-fy"], 1, true);
    }
    judged_by_oracle("jnl-desc", &img, 12, 1);
}

/// needs_recovery without a journal: -y clears the flag (exit 1); -n
/// leaves it, and e2fsck then cannot open the file system (exit 12).
#[test]
fn needs_recovery_without_a_journal_is_cleared() {
    let tmp = TempDir::new("jnl-recover-none");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext2(), None);
    debugfs_w(&img, &["feature needs_recovery"]);
    if oracle().is_some() {
        exits(&img, &["-fy"], 1, true);
    }
    judged_by_oracle("jnl-recover-none", &img, 12, 1);
    let features = debugfs_r(&img, "stats");
    assert!(!features.contains("needs_recovery"), "{features}");
}

/// A journal inode the superblock names without has_journal: -y forgets
/// the journal and pass 1 then clears the inode and frees its blocks, as
/// e2fsck does (exit 1, the same summary). Under -n both exit 0 (the
/// journal questions do not count toward the verdict:
/// `catalogue_13i::journal_without_has_journal_counts_only_when_repaired`).
#[test]
fn journal_without_has_journal_is_forgotten() {
    let tmp = TempDir::new("jnl-no-feature");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext3().block_size(1024), None);
    debugfs_w(&img, &["feature ^has_journal"]);
    let e2 = oracle().is_some().then(|| exits(&img, &["-fy"], 1, true));
    let copy = img.with_extension("copy");
    copy_image(&img, &copy);
    let (code, out) = pfsck_code(&["-fy"], &copy);
    assert_eq!(code, 1, "{out}");
    if let Some(e2) = e2 {
        assert_eq!(summary(&out), summary(&e2), "{out}\n{e2}");
        assert_eq!(oracle_fn(&copy), 0);
    }
    assert!(out.contains("Clear? yes"), "{out}");
}

/// The figures of the closing line ("N/M files (...), N/M blocks").
/// The summary line's figures (e2fsck and pfsck word it differently).
fn summary(out: &str) -> Option<Vec<String>> {
    out.lines()
        .rfind(|l| l.contains(" files (") || l.contains(" inodes ("))
        .and_then(|l| l.split_once(": "))
        .map(|(_, figures)| report_shape(figures))
}
