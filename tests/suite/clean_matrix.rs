//! Clean file systems across the configurations pfsck must accept: every
//! test builds an image with the real mke2fs (and debugfs / e2fsck -D where
//! a structure cannot be made otherwise), checks that the structure it is
//! about really is in the image, then asserts that `e2fsck -fn` and
//! `pfsck -fn` both exit 0 and that pfsck did not write to the image.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const MIB: u64 = 1 << 20;

/// Builds (once per run) an image of the standard tree with `opts` and
/// returns a private copy of it in `tmp`.
fn standard_image(tmp: &TempDir, key: &str, size: u64, opts: MkfsOpts) -> PathBuf {
    let base = cached_image(&format!("clean-{key}"), |img| {
        mkfs(img, size, &opts, Some(&standard_tree_dir()));
    });
    let img = tmp.join("image");
    copy_image(&base, &img);
    img
}

/// The default ext4 image (4 KiB blocks) of the standard tree; the tests of
/// special inodes look into it.
fn ext4_default_image(tmp: &TempDir) -> PathBuf {
    standard_image(
        tmp,
        "ext4-default",
        64 * MIB,
        MkfsOpts::ext4().block_size(4096),
    )
}

fn stat(img: &Path, path: &str) -> String {
    debugfs_r(img, &format!("stat \"{path}\""))
}

fn assert_features(img: &Path, present: &[&str], absent: &[&str]) {
    let fs = dumpe2fs(img);
    for f in present {
        assert!(fs.has_feature(f), "feature {f} missing: {:?}", fs.features);
    }
    for f in absent {
        assert!(!fs.has_feature(f), "feature {f} present: {:?}", fs.features);
    }
}

#[test]
fn ext2() {
    let tmp = TempDir::new("clean-ext2");
    let img = standard_image(&tmp, "ext2", 32 * MIB, MkfsOpts::ext2().block_size(1024));
    assert_features(&img, &[], &["has_journal", "extent"]);
    assert_both_clean("ext2", &img);
}

#[test]
fn ext3() {
    let tmp = TempDir::new("clean-ext3");
    let img = standard_image(&tmp, "ext3", 32 * MIB, MkfsOpts::ext3().block_size(4096));
    assert_features(&img, &["has_journal"], &["extent"]);
    assert_both_clean("ext3", &img);
}

#[test]
fn ext4_default() {
    let tmp = TempDir::new("clean-ext4");
    let img = ext4_default_image(&tmp);
    assert_features(
        &img,
        &["has_journal", "extent", "metadata_csum", "64bit", "flex_bg"],
        &[],
    );
    assert_both_clean("ext4 default", &img);
}

#[test]
fn ext4_without_metadata_csum() {
    let tmp = TempDir::new("clean-nocsum");
    let img = standard_image(
        &tmp,
        "ext4-nocsum",
        32 * MIB,
        MkfsOpts::ext4().block_size(4096).features("^metadata_csum"),
    );
    assert_features(&img, &["extent"], &["metadata_csum"]);
    assert_both_clean("ext4 -O ^metadata_csum", &img);
}

#[test]
fn ext4_without_64bit() {
    let tmp = TempDir::new("clean-no64");
    let img = standard_image(
        &tmp,
        "ext4-no64bit",
        32 * MIB,
        MkfsOpts::ext4().block_size(4096).features("^64bit"),
    );
    assert_features(&img, &["extent", "metadata_csum"], &["64bit"]);
    assert_both_clean("ext4 -O ^64bit", &img);
}

#[test]
fn ext4_without_flex_bg() {
    let tmp = TempDir::new("clean-noflex");
    // Small groups so that there are several, each with its own bitmaps
    // and inode table.
    let img = standard_image(
        &tmp,
        "ext4-noflex",
        32 * MIB,
        MkfsOpts::ext4()
            .block_size(4096)
            .features("^flex_bg")
            .blocks_per_group(2048),
    );
    assert_features(&img, &["extent"], &["flex_bg"]);
    assert!(dumpe2fs(&img).groups_count() >= 4);
    assert_both_clean("ext4 -O ^flex_bg", &img);
}

#[test]
fn ext4_1k_blocks() {
    let tmp = TempDir::new("clean-1k");
    let img = standard_image(&tmp, "ext4-1k", 32 * MIB, MkfsOpts::ext4().block_size(1024));
    let fs = dumpe2fs(&img);
    assert_eq!(fs.block_size, 1024);
    assert!(fs.groups_count() >= 4);
    assert_both_clean("ext4 -b 1024", &img);
}

#[test]
fn ext4_inline_data() {
    let tmp = TempDir::new("clean-inline");
    let tree = tmp.join("tree");
    let mut spec = vec![Node::dir("emptydir"), Node::file("bigger", 10_000)];
    for i in 0..6 {
        spec.push(Node::file(&format!("small{i}"), 10 * i + 1));
    }
    // Directories of one or two entries stay inline; one of eight does not.
    spec.push(Node::file("d1/only", 40));
    spec.push(Node::file("d2/one", 3));
    spec.push(Node::file("d2/two", 50));
    for i in 0..8 {
        spec.push(Node::file(&format!("d3/entry{i}"), 5));
    }
    spec.push(Node::symlink("d1/link", "../small1"));
    build_tree(&tree, &spec);
    let img = tmp.join("image");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4().block_size(4096).features("inline_data"),
        Some(&tree),
    );
    assert_features(&img, &["inline_data"], &[]);
    for p in ["/small0", "/small5", "/d1", "/d2", "/emptydir"] {
        let s = stat(&img, p);
        assert!(
            s.contains("Size of inline data"),
            "{p} is not inline in the fixture:\n{s}"
        );
    }
    assert!(!stat(&img, "/bigger").contains("Size of inline data"));
    assert_both_clean("ext4 -O inline_data", &img);
}

/// A directory of 50,000+ entries with a two-level htree (indirect_levels
/// = 1). mke2fs -d links entries linearly (quadratic), so the image starts
/// with 1,000 entries, `e2fsck -fyD` turns the directory into an htree, and
/// debugfs adds the rest through the index.
#[test]
fn htree_directory_50k_entries() {
    const INITIAL: u64 = 1_000;
    const TOTAL: u64 = 50_500;
    let tmp = TempDir::new("clean-htree");
    let tree = tmp.join("tree");
    let spec: Vec<Node> = (0..INITIAL)
        .map(|i| Node::file(&format!("big/f{i:06}"), 0))
        .collect();
    build_tree(&tree, &spec);
    let img = tmp.join("image");
    mkfs(
        &img,
        64 * MIB,
        &MkfsOpts::ext4().block_size(1024).inodes(60_000),
        Some(&tree),
    );
    let d = e2fsck(&img, &["-fyD"]);
    assert!(
        matches!(d.code(), Some(0..=1)),
        "e2fsck -fyD: {}\n{}",
        d.describe(),
        d.dump(4000)
    );
    let mut cmds = vec!["cd /big".to_string()];
    cmds.extend((INITIAL..TOTAL).map(|i| format!("mknod g{i:06} p")));
    debugfs_w(&img, &cmds);

    let dump = debugfs_r(&img, "htree_dump /big");
    let levels = dump
        .lines()
        .find_map(|l| l.trim().strip_prefix("Indirect levels: "))
        .unwrap_or_else(|| panic!("/big is not an htree:\n{}", truncate(&dump, 2000)));
    assert_eq!(levels.trim(), "1", "expected a two-level htree");
    let listing = debugfs_r(&img, "ls /big");
    let entries = listing
        .split_whitespace()
        .filter(|w| w.starts_with("(") && w.ends_with(')'))
        .count();
    assert!(
        entries as u64 >= TOTAL,
        "only {entries} entries in /big (expected {TOTAL})"
    );
    assert_both_clean("htree with 50k entries", &img);
}

/// A file of 1,100 extents: a contiguous file with every other block
/// punched out.
#[test]
fn file_with_1000_extents() {
    const BLOCKS: u64 = 2_200;
    let tmp = TempDir::new("clean-extents");
    let tree = tmp.join("tree");
    build_tree(
        &tree,
        &[Node::file("frag", BLOCKS * 4096), Node::file("other", 5000)],
    );
    let img = tmp.join("image");
    mkfs(
        &img,
        32 * MIB,
        &MkfsOpts::ext4().block_size(4096),
        Some(&tree),
    );
    let cmds: Vec<String> = (0..BLOCKS / 2)
        .map(|i| format!("punch /frag {0} {0}", 2 * i + 1))
        .collect();
    debugfs_w(&img, &cmds);
    let ex = debugfs_r(&img, "ex /frag");
    let leaves = ex
        .lines()
        .filter(|l| {
            let Some((lvl, rest)) = l.trim_start().split_once('/') else {
                return false;
            };
            let max = rest.split_whitespace().next().unwrap_or("");
            lvl.trim().parse::<u32>().ok().is_some() && lvl.trim() == max
        })
        .count();
    assert!(
        leaves >= 1000,
        "/frag has only {leaves} extents:\n{}",
        truncate(&ex, 2000)
    );
    assert_both_clean("file with 1000+ extents", &img);
}

/// Extended attributes stored in the inode body and in an external block.
#[test]
fn xattrs_in_inode_and_block() {
    let tmp = TempDir::new("clean-xattr");
    let tree = tmp.join("tree");
    build_tree(
        &tree,
        &[
            Node::file("inode-xattr", 300),
            Node::file("block-xattr", 300),
            Node::dir("dir-xattr"),
        ],
    );
    let big_value = "v".repeat(2000);
    // With setfattr the attributes are copied by mke2fs -d; without it (or
    // when the host file system refuses user xattrs) debugfs sets them.
    let via_setfattr = try_tool("setfattr").is_some_and(|setfattr| {
        let set = |name: &str, value: &str, file: &str| {
            Command::new(&setfattr)
                .args(["-n", name, "-v", value])
                .arg(tree.join(file))
                .status()
                .is_ok_and(|s| s.success())
        };
        set("user.small", "hello", "inode-xattr")
            && set("user.dir", "d", "dir-xattr")
            && set("user.big", &big_value, "block-xattr")
    });
    let img = tmp.join("image");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4().block_size(4096).inode_size(256),
        Some(&tree),
    );
    if !via_setfattr {
        let value_file = tmp.join("big-value");
        std::fs::write(&value_file, &big_value).unwrap();
        debugfs_w(
            &img,
            &[
                "ea_set /inode-xattr user.small hello".to_string(),
                "ea_set /dir-xattr user.dir d".to_string(),
                format!("ea_set -f {} /block-xattr user.big", value_file.display()),
            ],
        );
    }
    let small = stat(&img, "/inode-xattr");
    assert!(
        small.contains("File ACL: 0") && small.contains("user.small"),
        "in-inode xattr missing:\n{small}"
    );
    let big = stat(&img, "/block-xattr");
    assert!(
        !big.contains("File ACL: 0") && big.contains("user.big"),
        "xattr block missing:\n{big}"
    );
    assert_both_clean("xattrs in inode and block", &img);
}

#[test]
fn fast_and_slow_symlinks() {
    let tmp = TempDir::new("clean-symlinks");
    let img = ext4_default_image(&tmp);
    let fast = stat(&img, "/fastlink");
    assert!(fast.contains("Fast link dest"), "not fast:\n{fast}");
    assert!(!stat(&img, "/slowlink").contains("Fast link dest"));
    assert!(blocks_of(&img, "/slowlink").len() == 1);
    assert_both_clean("fast and slow symlinks", &img);
}

#[test]
fn hard_links() {
    let tmp = TempDir::new("clean-hardlinks");
    let img = ext4_default_image(&tmp);
    let ino = inode_of(&img, "/small");
    assert_eq!(inode_of(&img, "/hardlink1"), ino);
    assert_eq!(inode_of(&img, "/dir1/hardlink2"), ino);
    assert!(stat(&img, "/small").contains("Links: 3"));
    assert_both_clean("hard links", &img);
}

#[test]
fn fifos_sockets_devices() {
    let tmp = TempDir::new("clean-special");
    let img = ext4_default_image(&tmp);
    assert!(stat(&img, "/fifo").contains("Type: FIFO"));
    assert!(stat(&img, "/socket").contains("Type: socket"));
    for (path, kind) in [
        ("/chardev", "character special"),
        ("/blockdev", "block special"),
    ] {
        let s = stat(&img, path);
        if s.contains("Inode:") {
            assert!(s.contains(kind), "{path}:\n{s}");
        } else {
            eprintln!("notice: {path} not in the image (mknod not permitted?)");
        }
    }
    assert_both_clean("FIFOs, sockets, devices", &img);
}

#[test]
fn sparse_and_huge_files() {
    let tmp = TempDir::new("clean-sparse");
    let img = ext4_default_image(&tmp);
    let huge = stat(&img, "/huge");
    assert!(huge.contains("Size: 5368709120"), "huge file:\n{huge}");
    assert!(blocks_of(&img, "/sparse").len() < (1 << 20) / 4096);
    assert_both_clean("sparse files and a >4 GiB file", &img);
}
