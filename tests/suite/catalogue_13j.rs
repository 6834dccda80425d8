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
pub(crate) fn repaired_as_e2fsck(
    ctx: &str,
    img: &Path,
    want_n: i32,
    want_y: i32,
) -> (String, PathBuf) {
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

/// The orphan file's own repairs, made by staging the orphan processing
/// the check read through, never chosen on their own: an entry left in
/// an orphan file block without orphan_present (0x06000c: cleared with
/// exit 1) and orphan_present over an empty orphan file (0x06000d:
/// cleared with exit 0). They count as fixed.
#[test]
fn orphan_file_repairs_of_the_view_count_as_fixed() {
    use pfsck::check::problem::Code;
    for c in [Code::OrphanFileBlockDirty, Code::OrphanPresentClean] {
        assert!(pfsck::fix::repaired(c), "{c:?}");
        assert!(!pfsck::fix::supported(c), "{c:?} is never asked about");
    }
    let tmp = TempDir::new("c13j-orphan-view");
    let opts = MkfsOpts::ext4().block_size(1024).features("orphan_file");
    let img = tmp.join("entry");
    mkfs(&img, 16 * MIB, &opts, None);
    let blk = debugfs_number(&img, "bmap <12> 0");
    write_at(&img, blk * 1024, &11u32.to_le_bytes());
    assert_same_codes(&img, &[0x06000C]);
    let (out, _) = repaired_as_e2fsck("entry", &img, 4, 1);
    assert!(out.contains("Clear? yes"), "{out}");
    let img = tmp.join("present");
    mkfs(&img, 16 * MIB, &opts, None);
    debugfs_w(&img, &["feature orphan_present"]);
    assert_same_codes(&img, &[0x06000D]);
    repaired_as_e2fsck("present", &img, 0, 0);
}

/// An MMP block number past the file system (0x000042): e2fsck -n cannot
/// go on (exit 12); -y clears the number, then cannot open the file
/// system (exit 8), and its next check finds the MMP block as invalid as
/// before: e2fsck leaves it, and so does pfsck (exit 8, nothing written).
#[test]
fn invalid_mmp_block_is_left_as_e2fsck_leaves_it() {
    let tmp = TempDir::new("c13j-mmp-block");
    let img = tmp.join("img");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4().block_size(1024).features("mmp"),
        None,
    );
    // debugfs says on closing that the number is out of range.
    debugfs_w_unchecked(&img, &["ssv mmp_block 999999"]);
    if oracle().is_some() {
        let theirs = tmp.join("oracle");
        copy_image(&img, &theirs);
        assert_eq!(oracle_run(&theirs, &["-fy"]).code(), Some(8));
        assert_ne!(oracle_fn(&theirs), 0, "e2fsck repaired it");
    }
    let mine = tmp.join("mine");
    copy_image(&img, &mine);
    let before = hash_file(&mine);
    let (code, out) = pfsck_code(&["-fy"], &mine);
    assert_eq!(code, 8, "{out}");
    assert!(out.contains("MMP block number 999999 is invalid"), "{out}");
    assert_eq!(hash_file(&mine), before, "pfsck -fy wrote");
}

/// A journal holding transactions (s_start set) while needs_recovery is
/// clear (0x000018): e2fsck -y runs it anyway (nothing valid there, exit
/// 0; unforced, it then finds the file system clean) and its next check
/// says nothing; pfsck answered no and left the journal as it was, which
/// e2fsck -fn still reported.
#[test]
fn journal_data_without_needs_recovery_is_replayed_by_yes() {
    let tmp = TempDir::new("c13j-jstart");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    let jsb = debugfs_number(&img, "bmap <8> 0") * 1024;
    write_at(&img, jsb + 0x1C, &1u32.to_be_bytes());
    assert_same_codes(&img, &[0x000018]);
    for args in [&["-fy"][..], &["-y"]] {
        let mine = tmp.join("mine");
        copy_image(&img, &mine);
        let (code, out) = pfsck_code(args, &mine);
        assert_eq!(code, 0, "pfsck {args:?}:\n{out}");
        if args == ["-fy"] {
            assert!(out.contains("not set.  Fix? yes"), "{out}");
        }
        assert_eq!(read_at(&mine, jsb + 0x1C, 4), vec![0; 4], "s_start");
        if oracle().is_some() {
            let after = oracle_run(&mine, &["-fn"]);
            assert_eq!(after.code(), Some(0), "{}", after.stdout);
            assert!(
                !after.stdout.contains("journal has data"),
                "{}",
                after.stdout
            );
        }
    }
}
