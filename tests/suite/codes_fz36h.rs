//! e2fsck problem codes pfsck's `--json` gave differently from e2fsck
//! 1.47.4's problem log on the differential fuzzer's seed fz36 (issue
//! 13), each damage made again on a fresh file system with mke2fs and
//! debugfs and judged against e2fsck: the set of codes, pfsck's own
//! words, and a repair e2fsck then finds clean.

use crate::common::*;
use crate::problem_codes::assert_same_codes;

const MIB: u64 = 1 << 20;

/// An indirect block overwritten with 0xff (fz36 #1131, #278, #1635,
/// #3058, #3470, #3739: "missing 0x01002D"): every pointer is out of
/// range, and past the twelfth e2fsck offers to clear the inode; -n
/// declines, so it asks whether to say no more of them, which pfsck
/// printed but left out of its codes.
#[test]
fn too_many_illegal_blocks_declined_then_suppress_asked() {
    let tmp = TempDir::new("codes-fz36-suppress");
    let img = tmp.join("img");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext2().block_size(1024), None);
    let data = tmp.join("data");
    std::fs::write(&data, vec![7u8; 40 * 1024]).unwrap();
    debugfs_w(&img, &[format!("write {} f", data.display())]);
    let stat = debugfs_r(&img, "stat f");
    let ind: u64 = stat
        .split("(IND):")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no indirect block in:\n{stat}"));
    write_at(&img, ind * 1024, &[0xFF; 1024]);
    assert_same_codes(&img, &[0x010011, 0x01002D]);
    let (fn_out, _) = judged_by_oracle("fz36 suppress", &img, 4, 1);
    assert!(
        fn_out
            .contains("maps too many blocks it may not.\nClear inode? no\n\nSuppress messages? no"),
        "{fn_out}"
    );
}

/// An extent root whose header e2fsck refuses (fz36 #161, #190, #317 and
/// ten more: "pfsck only 0x014006"): here its max entries and depth
/// overwritten. Declined, e2fsck leaves the inode without walking its
/// map, so there is no tree to offer to make shorter; pfsck offered it
/// from the refused root's depth.
#[test]
fn refused_extent_root_is_not_offered_a_shorter_tree() {
    let tmp = TempDir::new("codes-fz36-root");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4(), None);
    let data = tmp.join("data");
    std::fs::write(&data, vec![7u8; 40 * 1024]).unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} f", data.display()),
            "sif f block[1] 2147483647".into(),
        ],
    );
    let ino = inode_of(&img, "/f");
    assert_same_codes(&img, &[0x010081]);
    let (fn_out, _) = judged_by_oracle("fz36 refused root", &img, 4, 1);
    assert!(
        fn_out.contains(&format!(
            "Inode {ino}'s extent tree header is damaged.  Clear inode? no"
        )),
        "{fn_out}"
    );
    assert!(!fn_out.contains("fewer levels"), "{fn_out}");
}

/// An inline-data file whose xattr block fails only its checksum (fz36
/// #1597, #693, #765 and four more: "missing 0x010075"). Looking for the
/// inline data's attribute, e2fsck's library verifies the block's
/// checksum and, failing it, finds none: the data is taken for lost
/// (0x010075) before the block's checksum is asked about (0x01006C).
/// With the inode's own checksum failing too, e2fsck ignores checksums
/// for that inode, and only the two checksums are asked about.
#[test]
fn inline_data_behind_an_xattr_block_failing_its_checksum() {
    let tmp = TempDir::new("codes-fz36-inline-xattr");
    let tree = tmp.join("tree");
    build_tree(&tree, &[Node::file("f", 6)]);
    let img = tmp.join("img");
    let opts = MkfsOpts::ext4().block_size(4096).features("inline_data");
    mkfs(&img, 16 * MIB, &opts, Some(&tree));
    let value = tmp.join("value");
    std::fs::write(&value, "v".repeat(1500)).unwrap();
    debugfs_w(
        &img,
        &[format!("ea_set -f {} /f user.big", value.display())],
    );
    let ino = inode_of(&img, "/f");
    let stat = debugfs_r(&img, "stat /f");
    assert!(stat.contains("Size of inline data"), "{stat}");
    let acl: u64 = stat
        .split("File ACL: ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no xattr block in:\n{stat}"));
    // The block's checksum (h_checksum, at 0x10), made wrong.
    let at = acl * 4096 + 0x10;
    let bad: Vec<u8> = read_at(&img, at, 4).iter().map(|b| !b).collect();
    write_at(&img, at, &bad);
    let both = tmp.join("both");
    copy_image(&img, &both);
    assert_same_codes(&img, &[0x010075, 0x01006C]);
    let (fn_out, _) = judged_by_oracle("fz36 inline xattr csum", &img, 4, 1);
    assert!(
        fn_out.contains(&format!(
            "Inode {ino} has corrupt inline data (its xattr block fails its checksum).  \
             Truncate? no"
        )),
        "{fn_out}"
    );
    // The inode's checksum (i_checksum_lo, at 0x7c) made wrong as well.
    let raw = inode_offset(&both, ino);
    let bad: Vec<u8> = read_at(&both, raw + 0x7C, 2).iter().map(|b| !b).collect();
    write_at(&both, raw + 0x7C, &bad);
    assert_same_codes(&both, &[0x010068, 0x01006C]);
}

/// Superblock fields naming a linked inode without their feature (fz36
/// #699, #2843, #2933 and four more: "missing 0x020002", then 0x030003
/// and 0x030005 where the inode is a directory). Declined, e2fsck leaves
/// the field, and its pass 2 rejects every entry naming that inode as it
/// rejects an impossible number; a directory so unlinked is then
/// unconnected in pass 3, its '..' naming a parent no entry leads from.
/// pfsck left the entries alone under -n.
#[test]
fn entries_naming_an_inode_a_field_names_without_its_feature() {
    let tmp = TempDir::new("codes-fz36-field-entries");
    let img = tmp.join("img");
    let opts = MkfsOpts::ext4()
        .block_size(1024)
        .features("^quota,^orphan_file");
    mkfs(&img, 8 * MIB, &opts, None);
    debugfs_w(&img, &["mkdir d", "write /dev/null f"]);
    let dir = inode_of(&img, "/d");
    let file = inode_of(&img, "/f");
    let orphan = tmp.join("orphan");
    copy_image(&img, &orphan);
    debugfs_w(&img, &[format!("ssv prj_quota_inum {dir}")]);
    assert_same_codes(&img, &[0x010063, 0x020002, 0x030003, 0x030005]);
    let (fn_out, _) = judged_by_oracle("fz36 project field", &img, 4, 1);
    assert!(
        fn_out.contains(&format!(
            "Entry 'd' in / (2) names inode {dir}, which does not exist."
        )),
        "{fn_out}"
    );
    assert!(
        fn_out.contains(&format!(
            "Directory inode {dir} (was in /) is reachable from no directory"
        )),
        "{fn_out}"
    );
    debugfs_w(&orphan, &[format!("ssv orphan_file_inum {file}")]);
    assert_same_codes(&orphan, &[0x010090, 0x020002]);
    judged_by_oracle("fz36 orphan field", &orphan, 4, 1);
}

/// A file's extent leaf made to map another file's block, its checksum
/// left stale (fz36 #1213, #1228, #3275, #3750, #3827: "missing
/// 0x011006"). e2fsck -n's pass 1B walks the maps again with checksums
/// verified: the walk of the file ends at that leaf, whose blocks it never
/// sees, so the other file shares its block with no one, and pass 1D
/// still asks to copy it. pfsck's rescan read on past the leaf.
#[test]
fn shared_block_behind_an_extent_leaf_failing_its_checksum() {
    let tmp = TempDir::new("codes-fz36-1b-csum");
    let tree = tmp.join("tree");
    // Eight runs: more extents than the inode holds, so one leaf block.
    let runs: Vec<(u64, u64)> = (0..8).map(|i| (i * 8192, 1024)).collect();
    build_tree(
        &tree,
        &[Node::file("f", 2048), Node::sparse("s", 8 * 8192, &runs)],
    );
    let img = tmp.join("img");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext4().block_size(1024),
        Some(&tree),
    );
    let out = debugfs_r(&img, "ex /s");
    let leaf: u64 = out
        .lines()
        .find(|l| l.trim_start().starts_with("0/"))
        .and_then(|l| l.split_whitespace().rev().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("/s has no extent leaf block:\n{out}"));
    let target = blocks_of(&img, "/f")[0];
    // The leaf's last entry (of eight) starts at the other file's block.
    let start_lo = leaf * 1024 + 12 + 7 * 12 + 8;
    write_at(
        &img,
        start_lo,
        &u32::try_from(target).unwrap().to_le_bytes(),
    );
    let file = inode_of(&img, "/f");
    let sparse = inode_of(&img, "/s");
    assert_same_codes(&img, &[0x01006A, 0x011006, 0x013004]);
    let (fn_out, _) = judged_by_oracle("fz36 1B checksum", &img, 4, 1);
    let stopped = format!(
        "Inode {file} shares block(s): {target}\nInode {sparse}: the search for shared \
         blocks stopped early, at a damaged extent block or one failing its checksum"
    );
    assert!(fn_out.contains(&stopped), "{fn_out}");
    assert!(
        fn_out.contains(&format!("(inode {file}, modified")),
        "{fn_out}"
    );
    assert!(!fn_out.contains("copied or released already"), "{fn_out}");
}

/// Entries naming an unused inode whose clearing -n declines, where
/// pfsck did not then judge their file type (fz36 #214, #2836, #3291,
/// #3742: "missing 0x020028"): a '..' or a '.' (e2fsck judges their type
/// as any entry's, against the mode it reads from the inode), and an
/// entry of an inline directory.
#[test]
fn file_type_of_kept_entries_naming_unused_inodes() {
    let tmp = TempDir::new("codes-fz36-unused-type");
    let img = tmp.join("img");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext2().block_size(1024), None);
    debugfs_w(&img, &["mkdir d"]);
    let dir = inode_of(&img, "/d");
    let block0 = blocks_of(&img, "/d")[0];
    // '..' (the second entry, at 12) names inode 100, never used.
    write_at(&img, block0 * 1024 + 12, &100u32.to_le_bytes());
    assert_same_codes(&img, &[0x020003, 0x020028]);
    let (fn_out, _) = judged_by_oracle("fz36 '..' unused", &img, 4, 1);
    // (The path is found through '..', which names no directory.)
    assert!(
        fn_out.contains(&format!("({dir}): file type 2, the inode's is 0.")),
        "{fn_out}"
    );

    let tmp = TempDir::new("codes-fz36-unused-type-inline");
    let img = tmp.join("img");
    let opts = MkfsOpts::ext4().block_size(4096).features("inline_data");
    mkfs(&img, 16 * MIB, &opts, None);
    let data = tmp.join("data");
    std::fs::write(&data, "hello").unwrap();
    debugfs_w(
        &img,
        &[
            "mkdir d".to_string(),
            format!("write {} d/f", data.display()),
        ],
    );
    assert!(debugfs_r(&img, "stat /d").contains("Size of inline data"));
    debugfs_w(&img, &["clri d/f"]);
    assert_same_codes(&img, &[0x020003, 0x020028]);
    judged_by_oracle("fz36 inline unused", &img, 4, 1);
}

/// An indexed directory whose block 0 becomes a hole: the first extent
/// of its leaf given an impossible start, the leaf's checksum left stale
/// (fz36 #1288, #1144, #1365: "missing 0x020034, 0x020037, 0x020040,
/// 0x020038"). Declined, e2fsck keeps the index flag: pass 2 judges the
/// blocks it reads as an index's without a root, at a depth of 0 and
/// hashed with the legacy hash, so each is unreferenced, too deep and
/// past its (empty) hash range, and the index is invalid. pfsck judged
/// no index without its root.
#[test]
fn indexed_directory_without_its_root_block() {
    let tmp = TempDir::new("codes-fz36-rootless");
    let img = long_named_htree_image(&tmp, &MkfsOpts::ext4().block_size(1024), 200, 2);
    let out = debugfs_r(&img, "ex /d");
    let leaf: u64 = out
        .lines()
        .find(|l| l.trim_start().starts_with("0/"))
        .and_then(|l| l.split_whitespace().rev().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("/d has no extent leaf block:\n{out}"));
    let dir = inode_of(&img, "/d");
    // The first entry's ee_start_hi (at 12 + 6).
    write_at(&img, leaf * 1024 + 18, &0x1234u16.to_le_bytes());
    assert_same_codes(&img, &[0x020040, 0x020037, 0x020034, 0x020038]);
    let (fn_out, _) = judged_by_oracle("fz36 rootless htree", &img, 4, 1);
    assert!(
        fn_out.contains(&format!(
            "Directory inode {dir} htree leaf block #1 is not at depth 0"
        )),
        "{fn_out}"
    );
}
