//! Problems of e2fsck 1.47.4's catalogue (issue 13) that pfsck reported
//! and left as they were under `-y` where e2fsck repairs them: each made
//! on a fresh file system, repaired by both, and the result judged by
//! e2fsck.

use crate::common::*;
use crate::problem_codes::assert_same_codes;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

/// `img` repaired as e2fsck repairs it: e2fsck -fn exits `want_n` and -fy
/// `want_y` (on a copy), pfsck the same, and e2fsck -fn finds pfsck's
/// repair clean. Returns pfsck's -fy output and its repaired copy.
#[track_caller]
fn repaired_as_e2fsck(ctx: &str, img: &Path, want_n: i32, want_y: i32) -> (String, PathBuf) {
    let mine = img.with_extension("pfsck");
    copy_image(img, &mine);
    if oracle().is_none() {
        let (code, out) = pfsck_code(&["-fy"], &mine);
        assert_eq!(code, want_y, "[{ctx}] pfsck -fy:\n{out}");
        return (out, mine);
    }
    let theirs = img.with_extension("oracle");
    copy_image(img, &theirs);
    let y = oracle_run(&theirs, &["-fy"]);
    assert_eq!(y.code(), Some(want_y), "[{ctx}] e2fsck -fy:\n{}", y.stdout);
    let (_, out) = judged_by_oracle(ctx, &mine, want_n, want_y);
    (out, mine)
}

/// The superblock's min and want extra inode sizes, invalid (past the
/// inode's room, or not a multiple of 4): e2fsck sets each back to the
/// 32 bytes libext2fs' inodes carry (exit 1); pfsck reported them and
/// left them.
#[test]
fn invalid_extra_isize_in_the_superblock_is_reset() {
    let tmp = TempDir::new("c13j-extra-isize");
    for (field, value, code) in [
        ("min_extra_isize", "1000", 0x00004D),
        ("want_extra_isize", "3", 0x00004E),
    ] {
        let img = tmp.join(field);
        mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
        debugfs_w(&img, &[format!("ssv {field} {value}")]);
        assert_same_codes(&img, &[code]);
        let (out, mine) = repaired_as_e2fsck(field, &img, 0, 1);
        assert!(out.contains("Fix? yes"), "[{field}] {out}");
        let sb = dumpe2fs(&mine).header;
        assert_eq!(
            sb.get("Required extra isize").map(String::as_str),
            Some("32")
        );
        assert_eq!(
            sb.get("Desired extra isize").map(String::as_str),
            Some("32")
        );
    }
}
