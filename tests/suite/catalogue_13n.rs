//! Problems of e2fsck 1.47.4's catalogue (issue 13) that pfsck reported
//! but its repair left, each made on a fresh file system and judged
//! against e2fsck: the exit codes of -n, -p and -y, and e2fsck -fn clean
//! after pfsck -fy.

use crate::common::*;
use crate::problem_codes::assert_same_codes;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// The byte offset of the first in-inode xattr entry of inode `ino`.
fn first_ibody_entry(img: &Path, ino: u64) -> u64 {
    let at = inode_offset(img, ino);
    let extra = read_at(img, at + 128, 2);
    let extra = u64::from(u16::from_le_bytes([extra[0], extra[1]]));
    let magic = read_at(img, at + 128 + extra, 4);
    assert_eq!(magic, [0, 0, 2, 0xea], "no in-inode xattrs in inode {ino}");
    at + 128 + extra + 4
}

/// 0x01008b: an encrypted file whose context (xattr "c" of the
/// encryption index) is too short for its version. e2fsck clears the
/// inode, then its entry and its blocks follow (-y exits 1); preen may
/// not (exit 4).
#[test]
fn corrupt_encryption_context_clears_the_inode() {
    let tmp = TempDir::new("c13n-encctx");
    let img = tmp.join("image");
    // Without metadata_csum: the xattr's index is set by hand below.
    let opts = MkfsOpts::ext4()
        .block_size(1024)
        .features("encrypt,^metadata_csum");
    mkfs(&img, 8 * MIB, &opts, None);
    let data = tmp.join("data");
    std::fs::write(&data, b"hi\n").unwrap();
    // A version 1 context is 28 bytes long; this one has 4.
    let value = tmp.join("value");
    std::fs::write(&value, [1u8, 1, 4, 0]).unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} f", data.display()),
            format!("ea_set -f {} f c", value.display()),
            "sif f flags 0x80800".into(),
        ],
    );
    let ino = inode_of(&img, "f");
    // debugfs knows no prefix for the encryption index (9): it stores
    // "c" under index 0, moved to 9 here.
    let entry = first_ibody_entry(&img, ino);
    assert_eq!(read_at(&img, entry, 2), [1, 0], "name length, index");
    write_at(&img, entry + 1, &[9]);
    assert_same_codes(&img, &[0x01008B]);
    both_exit(&img, &["-fp"], 4);
    let (_, fy) = judged_by_oracle("c13n-encctx", &img, 4, 1);
    assert!(fy.contains("Clear inode? yes"), "{fy}");
    let stat = debugfs_r(&img, &format!("stat <{ino}>"));
    assert!(stat.contains("Links: 0"), "{stat}");
}

/// 0x010092: a file keeps an xattr value in an EA inode, on a file system
/// whose ea_inode feature is off. e2fsck asks to set the feature (preen
/// may) and judges the reference as it would with it; the value stays.
#[test]
fn ea_inode_value_without_the_feature_sets_it() {
    let tmp = TempDir::new("c13n-eafeat");
    let img = tmp.join("image");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext4().block_size(1024).features("ea_inode"),
        None,
    );
    let data = tmp.join("data");
    std::fs::write(&data, b"hi\n").unwrap();
    let big = tmp.join("big");
    std::fs::write(&big, vec![b'x'; 4000]).unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} f", data.display()),
            format!("ea_set -f {} f user.big", big.display()),
            // debugfs charges the file nothing for its EA inode's block.
            "sif f blocks 4".into(),
        ],
    );
    assert_same_codes(&img, &[]);
    debugfs_w(&img, &["feature -ea_inode"]);
    assert_same_codes(&img, &[0x010092]);
    let (out, preened) = both_exit(&img, &["-fp"], 1);
    assert!(out.contains("ea_inode feature is off.  FIXED."), "{out}");
    assert!(dumpe2fs(&preened).has_feature("ea_inode"));
    judged_by_oracle("c13n-eafeat", &img, 4, 1);
    assert!(dumpe2fs(&img).has_feature("ea_inode"));
    let value = debugfs_r(&img, "ea_get f user.big");
    assert!(value.contains(&"x".repeat(100)), "{value}");
}
