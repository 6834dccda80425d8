//! Problems of e2fsck 1.47.4's catalogue (issue 13) that pfsck did not
//! detect, each made on a fresh file system and judged against e2fsck.

use crate::common::*;
use crate::problem_codes::assert_same_codes;

const MIB: u64 = 1 << 20;

/// 0x000028: the journal kept as the visible file /.journal (what
/// tune2fs -J makes on a mounted file system). Only a repair looks, so -n
/// is clean; a repair moves it to inode 8 and unlinks the name without
/// counting a correction (exit 0), in every mode, forced or not.
#[test]
fn visible_journal_moves_to_its_inode() {
    let tmp = TempDir::new("c13o-visible-journal");
    let img = tmp.join("image");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(
        &img,
        &[
            "write /dev/null .journal",
            "copy_inode <8> <12>",
            "clri <8>",
            "ssv journal_inum 12",
        ],
    );
    assert_same_codes(&img, &[]);
    for args in [&["-fp"][..], &["-p"], &["-y"]] {
        let out = both_exit(&img, args, 0).0;
        assert!(out.contains("/.journal"), "{args:?}: {out}");
    }
    let (_, fy) = judged_by_oracle("visible-journal", &img, 0, 0);
    assert!(fy.contains("/.journal"), "{fy}");
    assert_eq!(dumpe2fs(&img).header["Journal inode"].trim(), "8");
    let listing = debugfs_r(&img, "ls");
    assert!(!listing.contains(".journal"), "{listing}");
}
