//! e2fsck problem codes pfsck's `--json` gave differently from e2fsck
//! 1.47.4's problem log on the differential fuzzer's seed fz34-final
//! (issue 13), each damage made again on a fresh file system with mke2fs
//! and debugfs and judged against e2fsck: the set of codes, the printed
//! report's shape where pfsck's words stand for e2fsck's, and a repair
//! e2fsck then finds clean.

use crate::common::*;
use crate::problem_codes::assert_same_codes;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

/// The report from its first line holding `from` on, as
/// `common::report_shape` sees it.
fn shape_from(out: &str, from: &str) -> Vec<String> {
    let at = out
        .lines()
        .position(|l| l.contains(from))
        .unwrap_or_else(|| panic!("no line with {from:?} in:\n{out}"));
    let rest: Vec<&str> = out.lines().skip(at).collect();
    report_shape(&rest.join("\n"))
}

/// The physical block of the first extent tree block of `path`, from
/// debugfs's `ex` listing (its level 0 line names it).
fn first_extent_node(img: &Path, path: &str) -> u64 {
    let out = debugfs_r(img, &format!("ex {path}"));
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("0/"))
        .unwrap_or_else(|| panic!("{path} has no extent tree block:\n{out}"));
    // " 0/ 1   1/  1     0 -    13  1847             14"
    let fields: Vec<&str> = line.split_whitespace().collect();
    fields[fields.len() - 2].parse().unwrap()
}

/// A 1 KiB-block ext4 image whose directory `/d` (300 entries) is
/// indexed by `e2fsck -fyD` and maps its blocks through an extent tree
/// block: files written between the directory's blocks scatter them into
/// more extents than the inode holds.
fn indexed_dir_image(tmp: &TempDir) -> PathBuf {
    long_named_htree_image(tmp, &MkfsOpts::ext4().block_size(1024), 300, 1500)
}

/// A journal holding transactions without needs_recovery, seen through a
/// backup superblock (fz34-final #457: the primary's checksum fails).
/// A backup never carries the flag, so e2fsck states that it replays the
/// journal anyway (0x00002C) where, on the primary, it asks (0x00002B);
/// pfsck's report named the question.
#[test]
fn journal_without_needs_recovery_on_a_backup_superblock() {
    let tmp = TempDir::new("codes-fz34-jbackup");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    let jsb = debugfs_number(&img, "bmap <8> 0") * 1024;
    write_at(&img, jsb + 0x1C, &1u32.to_be_bytes());
    // The primary superblock's checksum, made wrong.
    let sum = read_at(&img, 1024 + 0x3FC, 4);
    let bad: Vec<u8> = sum.iter().map(|b| !b).collect();
    write_at(&img, 1024 + 0x3FC, &bad);
    assert_same_codes(&img, &[0x000044, 0x000018, 0x00002C]);
    judged_by_oracle("journal, backup superblock", &img, 4, 1);
}

/// An indexed directory whose extent tree block fails only its checksum
/// (fz34-final #62, #118, #124: 101 damages). Under -n e2fsck leaves the
/// block as it is and then looks the index root up through the tree with
/// checksums verified: the lookup fails, and it judges the root unusable
/// (0x010049). pfsck found the root through its own walk and said
/// nothing of it. A repair rewrites the checksum first: the root is fine.
#[test]
fn htree_root_behind_an_extent_block_failing_its_checksum() {
    let tmp = TempDir::new("codes-fz34-htree-csum");
    let img = indexed_dir_image(&tmp);
    let node = first_extent_node(&img, "/d");
    let sum = read_at(&img, node * 1024 + 1020, 4);
    let bad: Vec<u8> = sum.iter().map(|b| !b).collect();
    write_at(&img, node * 1024 + 1020, &bad);
    assert_same_codes(&img, &[0x01006A, 0x010049]);
    if oracle().is_some() {
        let theirs = oracle_run(&img, &["-fn"]);
        let (_, ours) = pfsck_code(&["-fn"], &img);
        assert!(
            ours.contains(&format!(
                "Indexed directory inode {}: its index root is unusable \
                 (an extent block on the way to it fails its checksum)",
                inode_of(&img, "/d")
            )),
            "{ours}"
        );
        assert_eq!(
            shape_from(&ours, "index root"),
            shape_from(&theirs.stdout, "HTREE directory"),
            "pfsck:\n{ours}\ne2fsck:\n{}",
            theirs.stdout
        );
    }
    let (_, fy) = judged_by_oracle("htree, extent checksum", &img, 4, 0);
    assert!(!fy.contains("index root"), "{fy}");
}

/// A directory whose inode fails only its checksum (fz34-final #43,
/// #256, #937, #1867: "missing 0x02004D", "missing 0x01006A"). libext2fs
/// verifies a directory block's or an extent block's checksum by reading
/// the inode again for its generation; under -n the inode's checksum is
/// left failing, that read fails, and so does every checksum it seeds:
/// each leaf block is "sound apart from its checksum" (0x02004D), and on
/// an indexed directory mapped through an extent block, that block too
/// (0x01006A), the index root looked up through it (0x010049) and the
/// root's own checksum in pass 2 (0x020049). pfsck verified them with the
/// generation it had read and found them right. A repair rewrites the
/// inode's checksum in pass 1 first: then every block is right.
#[test]
fn directory_inode_failing_its_checksum() {
    let tmp = TempDir::new("codes-fz34-dir-icsum");
    // A plain directory of one block.
    let tree = tmp.join("tree");
    build_tree(&tree, &[Node::dir("sub"), Node::file("sub/f", 100)]);
    let plain = tmp.join("plain");
    mkfs(
        &plain,
        8 * MIB,
        &MkfsOpts::ext4().block_size(1024),
        Some(&tree),
    );
    debugfs_w(&plain, &["sif /sub checksum 0x1234"]);
    assert_same_codes(&plain, &[0x010068, 0x02004D]);
    let (fn_out, _) = judged_by_oracle("plain directory", &plain, 4, 1);
    let sub = inode_of(&plain, "/sub");
    assert!(
        fn_out.contains(&format!(
            "Directory inode {sub}, block #0: the block is sound apart from its checksum"
        )),
        "{fn_out}"
    );
    // An indexed one behind an extent tree block.
    let img = indexed_dir_image(&tmp);
    debugfs_w(&img, &["sif /d checksum 0x1234"]);
    assert_same_codes(&img, &[0x01006A, 0x010049, 0x010068, 0x020049, 0x02004D]);
    if oracle().is_some() {
        let theirs = oracle_run(&img, &["-fn"]);
        let (_, ours) = pfsck_code(&["-fn"], &img);
        assert_eq!(
            shape_from(&ours, "Pass 2"),
            shape_from(&theirs.stdout, "Pass 2"),
            "pfsck:\n{ours}\ne2fsck:\n{}",
            theirs.stdout
        );
    }
    let (_, fy) = judged_by_oracle("indexed directory", &img, 4, 1);
    assert!(!fy.contains("index root"), "{fy}");
}

/// An xattr block with neither its magic number nor one block in
/// h_blocks (fz34-final #88, #185, #394: 62 damages "missing 0x01003E").
/// Declined, e2fsck's check of the bad magic goes on to h_blocks, and
/// asks about it too (0x01003E); a header its library rejects hides the
/// block's checksum (#1291 and others, which the magic alone makes fail).
/// pfsck stopped at the magic number.
#[test]
fn xattr_block_without_magic_and_with_several_blocks() {
    let tmp = TempDir::new("codes-fz34-xattr-magic");
    let base = tmp.join("base");
    image_with_xattr_block(&base);
    let acl = xattr_block_of(&base, "/f");
    for (name, h_blocks, want) in [
        ("magic and h_blocks", 2u32, &[0x01003A, 0x01003E][..]),
        ("magic alone", 1, &[0x01003A]),
    ] {
        let img = tmp.join(name.replace(' ', "-"));
        copy_image(&base, &img);
        write_at(&img, acl * 1024, &[0; 4]);
        write_at(&img, acl * 1024 + 8, &h_blocks.to_le_bytes());
        assert_same_codes(&img, want);
        let (fn_out, _) = judged_by_oracle(name, &img, 4, 1);
        assert!(
            fn_out.contains(&format!(
                "Extended attribute block {acl} (inode 12) has a bad header (bad magic)"
            )),
            "[{name}] {fn_out}"
        );
    }
}

/// A 1 KiB-block ext4 image with a file `/f` (inode 12) whose xattr
/// is too big for the inode, so it goes to a block.
fn image_with_xattr_block(img: &Path) {
    mkfs(img, 8 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    let data = img.with_extension("data");
    std::fs::write(&data, b"data\n").unwrap();
    let value = img.with_extension("value");
    std::fs::write(&value, vec![b'v'; 700]).unwrap();
    debugfs_w(
        img,
        &[
            format!("write {} f", data.display()),
            format!("ea_set -f {} /f user.big", value.display()),
        ],
    );
    assert_eq!(inode_of(img, "/f"), 12);
}

/// The xattr block of `path`, from debugfs's `stat`.
fn xattr_block_of(img: &Path, path: &str) -> u64 {
    let out = debugfs_r(img, &format!("stat {path}"));
    out.split("File ACL:")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .filter(|&b: &u64| b != 0)
        .unwrap_or_else(|| panic!("{path} has no xattr block:\n{out}"))
}

/// A superblock field out of range that the library accepts
/// (fz34-final #684, #851, #1090, #8519: `ssv first_ino`, 26 damages
/// "missing 0x00000B"). e2fsck's own range check names the field
/// (0x00000B), then judges the superblock unusable (0x000004) and stops
/// (exit 8, -n and -y alike). pfsck's problem stood for the second only.
#[test]
fn superblock_field_out_of_range_names_the_field() {
    for (first_ino, bs) in [(65536u32, 1024u32), (2, 4096), (0, 1024)] {
        let tmp = TempDir::new("codes-fz34-first-ino");
        let img = tmp.join("img");
        mkfs(&img, 8 * MIB, &MkfsOpts::ext4().block_size(bs), None);
        debugfs_w(&img, &[format!("ssv first_ino {first_ino}")]);
        assert_same_codes(&img, &[0x000004, 0x00000B]);
        for args in [&["-fn"][..], &["-fy"]] {
            let (out, _) = both_exit(&img, args, 8);
            assert!(
                out.contains(&format!(
                    "corruption found in superblock (first_ino = {first_ino})"
                )),
                "[{first_ino}] {out}"
            );
        }
    }
}

/// The bad blocks inode with a mode (fz34-final #561, #853, #897: 20
/// damages "0x010065 where pfsck maps 0x010003"). e2fsck has a code of
/// its own for an invalid bad blocks inode (0x010065), apart from the
/// other reserved inodes' bad mode (0x010003).
#[test]
fn bad_blocks_inode_invalid_has_its_own_code() {
    let tmp = TempDir::new("codes-fz34-bad-ino");
    let img = tmp.join("img");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(&img, &["sif <1> mode 0100644"]);
    assert_same_codes(&img, &[0x010065]);
    let (fn_out, _) = judged_by_oracle("bad blocks inode mode", &img, 4, 1);
    assert!(
        fn_out.contains("Reserved inode 1 (bad blocks inode) has an invalid mode or contents"),
        "{fn_out}"
    );
}

/// A revision level past the dynamic one (fz34-final #818, #3007,
/// #3112: 17 damages `ssv rev_level`, "extra 0x000044"). The library's
/// refusal there is none e2fsck logs or tries again after: it only
/// judges the superblock unusable (0x000004) and stops (exit 8).
#[test]
fn revision_too_high_is_no_logged_refusal() {
    for opts in [MkfsOpts::ext2().block_size(1024), MkfsOpts::ext4()] {
        let tmp = TempDir::new("codes-fz34-rev");
        let img = tmp.join("img");
        mkfs(&img, 8 * MIB, &opts, None);
        debugfs_w(&img, &["ssv rev_level 4294967295"]);
        assert_same_codes(&img, &[0x000004]);
        for args in [&["-fn"][..], &["-fy"]] {
            let (out, _) = both_exit(&img, args, 8);
            assert!(
                out.contains("revision level 4294967295 is newer than any this checker knows"),
                "{out}"
            );
        }
    }
}

/// A file sharing block 1 (the group descriptors of a 4 KiB file
/// system) first (fz34-final #214, #2517, #3507: 8 damages "0x011008 vs
/// 0x011002"). e2fsck starts each file's list of shared blocks as if
/// block 0 came before: a first run from block 1 continues it, and is
/// logged as a range from 0 (0x011008) though one block is shared.
#[test]
fn shared_block_one_is_logged_as_a_range() {
    let tmp = TempDir::new("codes-fz34-dup-one");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext3().block_size(4096), None);
    let data = tmp.join("data");
    std::fs::write(&data, file_content("f", 4096)).unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} f", data.display()),
            "sif /f block[0] 1".to_string(),
        ],
    );
    assert_same_codes(&img, &[0x011001, 0x011008, 0x011003]);
    let (fn_out, _) = judged_by_oracle("shares block 1", &img, 4, 1);
    assert!(fn_out.contains("Inode 12 shares block(s): 1\n"), "{fn_out}");
}

/// A file mapping a reserved GDT block, which the resize inode maps too
/// (fz34-final #316, #441: 23 damages "missing 0x013002"; #1057, #1137:
/// 23 "missing 0x011001-3"). e2fsck's pass 1B walks the resize inode's
/// whole map: the resize inode is listed among the files sharing the
/// block (0x011001-3) and, in pass 1D, among those the file shares with
/// (0x013002), though pass 1D asks nothing about it. pfsck looked at its
/// double indirect block only. Read-only, a rescan stopping at an inode
/// failing its checksum keeps what it listed before it (the resize
/// inode, here).
#[test]
fn resize_inode_listed_among_the_files_sharing_a_block() {
    let tmp = TempDir::new("codes-fz34-dup-resize");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(4096), None);
    let data = tmp.join("data");
    std::fs::write(&data, file_content("f", 4096)).unwrap();
    let reserved = first_reserved_gdt_block(&img);
    debugfs_w(&img, &[format!("write {} f", data.display())]);
    // The leaf's one extent (its start's low half is i_block[5]) moved
    // onto the resize inode's first reserved GDT block.
    debugfs_w(&img, &[format!("sif /f block[5] {reserved}")]);
    let stops = tmp.join("stops");
    copy_image(&img, &stops);
    assert_same_codes(&img, &[0x011001, 0x011002, 0x013002]);
    let (fn_out, _) = judged_by_oracle("resize inode shares", &img, 4, 1);
    assert!(
        fn_out.contains(&format!("Inode 7 shares block(s): {reserved}\n")),
        "{fn_out}"
    );
    debugfs_w(&stops, &["sif /f checksum 0x1234"]);
    assert_same_codes(&stops, &[0x010068, 0x011001, 0x011002, 0x011003]);
    let (code, out) = pfsck_code(&["-fn"], &stops);
    assert_eq!(code, 12, "{out}");
    assert!(
        out.contains(&format!("Inode 7 shares block(s): {reserved}\n")),
        "{out}"
    );
}
