//! Problems of e2fsck 1.47.4's catalogue (issue 13) each made on an image
//! and judged against e2fsck: the Hurd's filetype feature (0x00000e), the
//! journal superblock's feature checks, the xattr block's high bits, and
//! where `-n` stops as e2fsck -n stops.

use crate::common::*;
use std::path::PathBuf;

/// A public image of e2fsprogs' tests, extracted under `tmp`, if the
/// conformance set is here.
fn public_image(tmp: &TempDir, name: &str) -> Option<PathBuf> {
    let dir = conformance_dir()?.join("e2fsprogs").join(name);
    let img = tmp.join(name);
    extract_image(&dir, &img).ok()?;
    Some(img)
}

/// A small ext2 file system made as by the Hurd, yet with the filetype
/// feature (which mke2fs -o hurd would leave off).
fn hurd_with_filetype(tmp: &TempDir) -> PathBuf {
    let img = tmp.join("hurd");
    mkfs(&img, 4 << 20, &MkfsOpts::ext2().block_size(1024), None);
    debugfs_w(&img, &["ssv creator_os 1"]);
    img
}

#[test]
fn hurd_filetype_is_cleared_when_repairing() {
    let tmp = TempDir::new("c13g-hurd");
    let img = hurd_with_filetype(&tmp);
    // -n keeps the feature, and with it the entries' file types.
    both_exit(&img, &["-fn"], 0);
    let fy = both_exit(&img, &["-fy"], 1).0;
    assert!(fy.contains("Hurd"), "{fy}");
    // Not preen-safe, and asked before a clean file system is skipped.
    both_exit(&img, &["-fp"], 4);
    debugfs_w(&img, &["ssv state 1", "ssv lastcheck now"]);
    both_exit(&img, &["-p"], 4);
    let y = both_exit(&img, &["-y"], 1).0;
    assert!(y.contains("Hurd"), "{y}");
    let (_, fy) = judged_by_oracle("c13g-hurd", &img, 0, 1);
    assert!(fy.contains("Hurd"), "{fy}");
    let (code, again) = pfsck_code(&["-fn"], &img);
    assert_eq!(code, 0, "{again}");
}

#[test]
fn public_f_hurd_agrees_without_a_dirhash_hint() {
    let tmp = TempDir::new("c13g-f-hurd");
    let Some(img) = public_image(&tmp, "f_hurd") else {
        eprintln!("no conformance images: skipped");
        return;
    };
    both_exit(&img, &["-fn"], 0);
    let fy = both_exit(&img, &["-fy"], 1).0;
    assert!(fy.contains("Hurd"), "{fy}");
    // No dir_index, so no hashed names to hint about.
    assert!(!fy.contains("dirhash"), "{fy}");
    let (code, out) = pfsck_code(&["-fn", "--json"], &img);
    assert_eq!(code, 0, "{out}");
    let unset = out.matches("\"0x020027\"").count();
    assert_eq!(
        unset, 5,
        "e2fsck -n logs five entries without a type:\n{out}"
    );
}
