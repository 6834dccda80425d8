//! Where e2fsck 1.47.4 gives up with errors left (exit 12) and pfsck
//! said only that it could not go on (8) or went on to the end (4): the
//! classes "e2fsck 12, pfsck 8" and "e2fsck 12, pfsck 4" of the
//! differential fuzzer's seed fz34-final, each damage made again from
//! scratch and judged against e2fsck.

use crate::common::*;
use crate::problem_codes::assert_same_codes;

const MIB: u64 = 1 << 20;

/// Features e2fsck refuses itself, after its library opened the file
/// system (seed fz34-final, damages 623 and 1067: unknown ro_compat bits;
/// 901 and 1618: unknown compat bits; 1542: casefold with encoding 0).
/// e2fsck has not judged the file system valid yet, so its abort says
/// errors are left: 12. The library refuses unknown incompat bits itself,
/// and unknown ro_compat ones when it opens to write (-y, -p): 8 there.
/// pfsck said 8 for all.
#[test]
fn features_e2fsck_refuses_itself_exit_12() {
    let tmp = TempDir::new("fuzz-abort-features");
    // (name, debugfs edit, -fn exit, -fy exit, words of pfsck's report)
    let cases: [(&str, &str, i32, i32, &str); 4] = [
        (
            "compat",
            "feature FEATURE_C7",
            12,
            12,
            "unknown (compat 0x80)",
        ),
        (
            "ro_compat",
            "feature FEATURE_R20",
            12,
            8,
            "(ro_compat 0x100000)",
        ),
        (
            "incompat",
            "feature FEATURE_I20",
            8,
            8,
            "(incompat 0x100000)",
        ),
        (
            "encoding",
            "feature casefold",
            12,
            12,
            "casefold with unknown encoding 0",
        ),
    ];
    for (name, edit, want_n, want_y, words) in cases {
        let img = tmp.join(name);
        mkfs(&img, 8 * MIB, &MkfsOpts::ext4().block_size(1024), None);
        debugfs_w(&img, &[edit]);
        assert_same_codes(&img, &[]);
        for (args, want) in [
            (&["-fn"][..], want_n),
            (&["-fy"], want_y),
            (&["-fp"], want_y),
        ] {
            let (out, mine) = both_exit(&img, args, want);
            assert!(
                out.contains("Features this checker does not know are set") && out.contains(words),
                "[{name}] {args:?}: {out}"
            );
            assert_eq!(hash_file(&mine), hash_file(&img), "[{name}] {args:?} wrote");
        }
    }
}

/// An MMP block number outside the file system (seed fz34-final, damages
/// 2433, 5975, 8624: `feature mmp` leaves the number 0). e2fsck -n may
/// not clear it and gives up before it judged the file system: 12 (a
/// repair clears it and then cannot open the file system: 8). pfsck -n
/// said 8.
#[test]
fn invalid_mmp_block_number_declined_exit_12() {
    let tmp = TempDir::new("fuzz-abort-mmp");
    let img = tmp.join("img");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(&img, &["feature mmp"]);
    assert_same_codes(&img, &[0x000042]);
    let (out, mine) = both_exit(&img, &["-fn"], 12);
    assert!(
        out.contains("The superblock's MMP block number 0 is invalid"),
        "{out}"
    );
    assert_eq!(hash_file(&mine), hash_file(&img), "-fn wrote");
}

/// A file carrying EA_INODE_FL whose checksum fails (seed fz34-final,
/// damages 3484, 3654, 9327, 9736: `write inode+0x20/4` sets every flag;
/// 2980, 5505, 7423 alike). e2fsck's pass 4 reads every inode with that
/// flag again, to judge it as an EA inode however many entries name it,
/// and under -n that read fails on the checksum it was not allowed to
/// fix: it stops there (12). pfsck read it again only when its link count
/// was off, went on to pass 5 and exited 4.
#[test]
fn ea_inode_flag_with_bad_checksum_stops_pass_4() {
    let tmp = TempDir::new("fuzz-abort-ea-csum");
    let img = tmp.join("img");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    let data = tmp.join("data");
    std::fs::write(&data, b"hello\n").unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} f", data.display()),
            "sif /f flags 0x280000".into(),
        ],
    );
    assert_eq!(inode_of(&img, "/f"), 12);
    // A byte of i_block past the extent header: the checksum no longer
    // matches, nothing else changes.
    let at = inode_offset(&img, 12) + 0x64;
    write_at(&img, at, &[1]);
    assert_same_codes(&img, &[0x010068]);
    let (out, _) = judged_by_oracle("ea-inode-csum", &img, 12, 1);
    assert!(
        out.contains("The check stops at inode 12, whose checksum it may not fix"),
        "{out}"
    );
    assert!(!out.contains("Pass 5"), "{out}");
}

/// An orphan list with group 0's unused inode count out of range (seed
/// fz34-final, damages 6798, 9826; 1960, 3335, 3972, 5447, 6747, 8111
/// alike with a wrong descriptor checksum or uninit mark). e2fsck judges
/// the descriptors before any orphan is released, and -n leaves them
/// damaged: its inode scan skips what the count calls unused, the root
/// among them, and it stops in pass 3 (12). pfsck checked the view after
/// the orphan release, whose descriptors the release had rewritten: no
/// descriptor problem, the root found, exit 4.
#[test]
fn orphans_over_damaged_descriptors_checked_as_they_are() {
    let tmp = TempDir::new("fuzz-abort-orphan-desc");
    let img = tmp.join("img");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    let data = tmp.join("data");
    std::fs::write(&data, b"hello\n").unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} f", data.display()),
            "unlink /f".into(),
            "sif <12> links_count 0".into(),
            "ssv last_orphan 12".into(),
        ],
    );
    // Alone in its session, so that nothing rewrites the descriptor.
    debugfs_w(&img, &["set_bg 0 itable_unused 2147483647"]);
    assert_same_codes(&img, &[0x000038, 0x030001]);
    let (out, _) = both_exit(&img, &["-fn"], 12);
    for words in [
        "the group descriptors need fixes -n may not make",
        "Group 0's count of never-used inodes (2147483647) is out of range",
        "The root inode is not in use",
    ] {
        assert!(out.contains(words), "{words}: {out}");
    }
    let (code, out) = pfsck_code(&["-fy"], &img);
    assert!(code == 0 || code == 1, "pfsck -fy {code}: {out}");
    if oracle().is_some() {
        assert_eq!(oracle_fn(&img), 0, "after pfsck -fy: {out}");
    }
}

/// orphan_file set with an orphan file inode number naming no inode (seed
/// fz34-final, damage 8640: `feature orphan_file` on a file system
/// without one, the number 0). e2fsck -n reads that inode after its
/// passes to set the orphan file up, fails and gives up (8, with 4 for
/// what it declined: 12). pfsck said the number was unusable and exited
/// 4. A repair sets the orphan file up (e2fsck -y gives up there too,
/// exit 9, and leaves it).
#[test]
fn orphan_file_inode_naming_no_inode_stops_n_after_the_passes() {
    let tmp = TempDir::new("fuzz-abort-orphan-inum");
    for (name, inum) in [("zero", "0"), ("past", "99999")] {
        let img = tmp.join(name);
        mkfs(
            &img,
            16 * MIB,
            &MkfsOpts::ext4().block_size(1024).features("orphan_file"),
            None,
        );
        debugfs_w(&img, &[format!("ssv orphan_file_inum {inum}")]);
        assert_same_codes(&img, &[]);
        let (out, _) = both_exit(&img, &["-fn"], 12);
        assert!(
            out.contains(&format!(
                "orphan_file is set but its inode ({inum}) is unusable"
            )),
            "[{name}] {out}"
        );
        let (code, out) = pfsck_code(&["-fy"], &img);
        assert_eq!(code, 1, "[{name}] pfsck -fy: {out}");
        if oracle().is_some() {
            assert_eq!(oracle_fn(&img), 0, "[{name}] after pfsck -fy: {out}");
        }
    }
}

/// A root inode that is no directory (seed fz34-final, damages 1242 and
/// 3305: `write gdt+0x8/4` moves ext2's inode table; 6843 alike). -n
/// declines to clear it in pass 1, and e2fsck's pass 3 gives up there
/// without a question (12). pfsck went on through passes 3 to 5 and
/// exited 4.
#[test]
fn root_that_is_no_directory_stops_pass_3() {
    let tmp = TempDir::new("fuzz-abort-root-not-dir");
    let img = tmp.join("img");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(&img, &["sif <2> mode 0100644"]);
    assert_same_codes(&img, &[0x010001]);
    let (out, _) = judged_by_oracle("root-not-dir", &img, 12, 1);
    assert!(out.contains("The root inode is not a directory"), "{out}");
    assert!(
        out.contains("The check stops: without a root directory") && !out.contains("Pass 4"),
        "{out}"
    );
}

/// A group's block or inode bitmap recorded at block 0 on a file system
/// with no backup descriptors (seed fz36, damages 2045, 3439, 13646,
/// 15467, 16061, 16324, 17173, 17644, 19602: `set_bg 0 block_bitmap 0`
/// or `inode_bitmap 0` on one-group 4 KiB images; 977, 2140, 15757,
/// 18778, 4310, 4636 alike). e2fsck -n places the bitmap anew at the end
/// of pass 1 through its block cache; the block cannot be written to the
/// read-only device, and the pass 2 read that evicts it fails: it
/// declines to go on past that directory block (12). pfsck went on to
/// pass 5 and exited 4.
#[test]
fn bitmap_at_block_zero_stops_pass_2() {
    let tmp = TempDir::new("fuzz-abort-bitmap-zero");
    // Enough directory blocks for pass 2 to reach the failing read.
    let tree = tmp.join("tree");
    let spec: Vec<Node> = (0..10).map(|i| Node::file(&format!("d{i}/f"), 3)).collect();
    build_tree(&tree, &spec);
    for (fs_type, which) in [
        ("ext2", "block_bitmap"),
        ("ext2", "inode_bitmap"),
        ("ext4", "block_bitmap"),
    ] {
        let name = format!("{fs_type}-{which}");
        let img = tmp.join(&name);
        let opts = if fs_type == "ext2" {
            MkfsOpts::ext2()
        } else {
            MkfsOpts::ext4()
        };
        mkfs(&img, 16 * MIB, &opts.block_size(4096), Some(&tree));
        debugfs_w(&img, &[format!("set_bg 0 {which} 0")]);
        assert_same_codes(&img, &[0x010021, 0x020020]);
        let (out, _) = judged_by_oracle(&name, &img, 12, 1);
        let bitmap = which.replace('_', " ");
        assert!(
            out.contains(&format!(
                "group 0's {bitmap} lies at block 0, e2fsck -n places it anew"
            )) && out.contains("The check stops at directory block"),
            "[{name}] {out}"
        );
        assert!(!out.contains("Pass 3"), "[{name}] {out}");
    }
}

/// An extent tree block whose entry count is 0 (seed fz36, damages 6672,
/// 9039, 12894, 16292, 18847: `write etb+0x2/2`). libext2fs will not go
/// down into a node listing nothing: e2fsck's walk of the tree fails
/// there (0x010057), -n declines to clear the inode, offers the shorter
/// tree (0x014006) and gives up (12). pfsck judged the node damaged
/// (0x01005F), went on to pass 5 and exited 4. A repair still ends clean.
#[test]
fn empty_extent_node_stops_n_in_pass_1() {
    let tmp = TempDir::new("fuzz-abort-empty-node");
    let tree = tmp.join("tree");
    // Eight one-block extents: more than the inode holds, one leaf block.
    let data: Vec<(u64, u64)> = (0..8).map(|k| (k * 65536, 4096)).collect();
    build_tree(&tree, &[Node::sparse("s", 8 * 65536, &data)]);
    let img = tmp.join("img");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4().block_size(4096),
        Some(&tree),
    );
    let out = debugfs_r(&img, "ex /s");
    let leaf: u64 = out
        .lines()
        .find(|l| l.trim_start().starts_with("0/"))
        .and_then(|l| l.split_whitespace().rev().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("/s has no extent leaf block:\n{out}"));
    // eh_entries, two bytes into the node's header.
    write_at(&img, leaf * 4096 + 2, &[0, 0]);
    assert_same_codes(&img, &[0x010057, 0x014006]);
    let (out, _) = judged_by_oracle("empty-extent-node", &img, 12, 1);
    assert!(
        out.contains(&format!(
            "Error reading block {leaf} (extent node: it lists no entries to go down to)"
        )) && out.contains("whose extent tree cannot be read"),
        "{out}"
    );
    assert!(!out.contains("Pass 2"), "{out}");
}
