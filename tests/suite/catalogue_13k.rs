//! Problems of e2fsck 1.47.4's catalogue (issue 13) that pfsck did not
//! detect, or flagged differently, each made on a fresh file system and
//! judged against e2fsck in the modes where they differ.

use crate::common::*;
use crate::problem_codes::assert_same_codes;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// pfsck run with `args` on a copy of `img` exits `want`, as e2fsck
/// 1.47.4 does on another copy; pfsck's output is returned.
#[track_caller]
fn both_exit(img: &Path, args: &[&str], want: i32) -> String {
    let mine = img.with_extension("pfsck");
    copy_image(img, &mine);
    if oracle().is_some() {
        let theirs = img.with_extension("oracle");
        copy_image(img, &theirs);
        let oracle = oracle_run(&theirs, args);
        assert_eq!(
            oracle.code(),
            Some(want),
            "e2fsck {args:?}:\n{}",
            oracle.stdout
        );
    }
    let (code, out) = pfsck_code(args, &mine);
    assert_eq!(code, want, "pfsck {args:?}:\n{out}");
    out
}

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
    let out = both_exit(&img, &["-fp"], 4);
    assert!(out.contains("UNEXPECTED INCONSISTENCY"), "{out}");
    let (_, fy) = judged_by_oracle("lf-inline", &img, 0, 1);
    assert!(fy.contains("lost+found keeps its entries inline"), "{fy}");
    let listing = debugfs_r(&img, "ls -l lost+found");
    assert!(listing.contains(&format!("#{old}")), "{listing}");
}
