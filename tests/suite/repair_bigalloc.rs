//! Repairs on bigalloc (clusters of 16 blocks) against e2fsck: files made
//! to share clusters, to break the cluster rules or to be block mapped,
//! with `debugfs -w` on images `mkfs.ext4 -O bigalloc -C ...` made. One
//! `pfsck -fy` must exit 1 and leave the image clean for `e2fsck -fn` and
//! `pfsck -fn`, and byte for byte what `e2fsck -fy` leaves once it runs
//! clean (e2fsck sometimes needs more than one run: its first one counts
//! the blocks it copies away in i_blocks and leaves their clusters marked
//! in use), the superblock aside (times, mount count, write counters).
//!
//! Bases: 1 KiB blocks with 16 KiB clusters, 4 KiB blocks with 64 KiB
//! clusters (the e2fsprogs images `f_badcluster` and `f_dup_ba` have the
//! same shapes; they are compared too when `../shared/conformance` is
//! there). The tree has no directory of three blocks or more: e2fsck -fy
//! indexes those on any run, which is no repair.

use crate::common::*;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

#[derive(Clone, Copy, Debug)]
struct Base {
    block: u32,
    cluster: u32,
}

const SMALL: Base = Base {
    block: 1024,
    cluster: 16384,
};
const LARGE: Base = Base {
    block: 4096,
    cluster: 65536,
};

impl Base {
    fn ratio(self) -> u64 {
        u64::from(self.cluster / self.block)
    }

    fn image(self) -> PathBuf {
        let key = format!("bigalloc-{}-{}", self.block, self.cluster);
        cached_image(&key, |img| {
            let tree = cache_dir().join(format!("{key}-tree"));
            let _ = std::fs::remove_dir_all(&tree);
            build_tree(
                &tree,
                &[
                    Node::dir("dir"),
                    Node::file("dir/a", 500),
                    Node::file("f4096", 4096),
                    Node::file("f12k", 12 * 1024 + 1),
                    Node::file("f70k", 70 * 1024),
                    Node::file("f300k", 300 * 1024),
                    Node::file("last", 20_000),
                ],
            );
            let mut opts = MkfsOpts::ext4().block_size(self.block).features("bigalloc");
            opts.extra_args = vec!["-C".into(), self.cluster.to_string()];
            mkfs(img, 64 * MIB, &opts, Some(&tree));
            assert_eq!(e2fsck_fn(img), 0, "base {self:?} is not clean");
        })
    }
}

/// The extent root of a file as `sif ... block[N]` words: magic and entry
/// count, then for each extent its logical block, length and start.
fn extent_root(path: &str, extents: &[(u32, u32, u64)]) -> Vec<String> {
    let mut cmds = vec![format!(
        "sif {path} block[0] {}",
        0xF30Au32 | (extents.len() as u32) << 16
    )];
    for (i, &(l, n, p)) in extents.iter().enumerate() {
        let w = 3 + 3 * i;
        cmds.push(format!("sif {path} block[{w}] {l}"));
        cmds.push(format!(
            "sif {path} block[{}] {}",
            w + 1,
            n | ((p >> 32) as u32) << 16
        ));
        cmds.push(format!("sif {path} block[{}] {}", w + 2, p as u32));
    }
    cmds
}

/// Runs `e2fsck -fy` until it finds nothing (at most four runs).
fn e2fsck_until_clean(img: &Path, ctx: &str) {
    for _ in 0..4 {
        let r = e2fsck(img, &["-fy"]);
        match r.code() {
            Some(0) => return,
            Some(1) => continue,
            _ => panic!("[{ctx}] e2fsck -fy: {}", r.describe()),
        }
    }
    panic!("[{ctx}] e2fsck -fy still finds problems after four runs");
}

/// The blocks (of `bs` bytes) in which `a` and `b` differ, but the one
/// holding the primary superblock.
fn differing_blocks(a: &Path, b: &Path, bs: usize) -> Vec<usize> {
    let (x, y) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    assert_eq!(x.len(), y.len());
    let sb = 1024 / bs;
    (0..x.len() / bs)
        .filter(|&k| k != sb && x[k * bs..(k + 1) * bs] != y[k * bs..(k + 1) * bs])
        .collect()
}

/// Damages a copy of `base`, then requires: e2fsck -fn sees it, one
/// pfsck -fy (exit 1, mentioning `expect`) leaves it clean for both
/// checkers and equal to what e2fsck -fy makes of it.
fn repairs_like_e2fsck(name: &str, img: &Path, bs: u32, expect: &str) {
    repairs_with(name, img, bs, expect, true);
}

/// As [`repairs_like_e2fsck`]; with `exact` false, the result need not
/// equal e2fsck's byte for byte (e2fsck leaves a deleted extent's bytes
/// after the last entry, pfsck zeroes them).
fn repairs_with(name: &str, img: &Path, bs: u32, expect: &str, exact: bool) {
    let tmp = TempDir::new(&format!("ba-{name}"));
    let mine = tmp.join("pfsck.img");
    let theirs = tmp.join("e2fsck.img");
    copy_image(img, &mine);
    copy_image(img, &theirs);
    assert_ne!(e2fsck_fn(img), 0, "[{name}] e2fsck -fn sees no damage");
    let out = pfsck(&[
        "-fy".as_ref(),
        "--undo".as_ref(),
        tmp.join("undo").as_os_str(),
        mine.as_os_str(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "[{name}] pfsck -fy:\n{text}");
    assert!(text.contains(expect), "[{name}] no '{expect}' in:\n{text}");
    assert_both_clean(name, &mine);
    if !exact {
        return;
    }
    e2fsck_until_clean(&theirs, name);
    let diff = differing_blocks(&mine, &theirs, bs as usize);
    assert!(
        diff.is_empty(),
        "[{name}] blocks differing from e2fsck's repair: {:?}\n{text}",
        &diff[..diff.len().min(20)]
    );
}

/// Applies `cmds` (debugfs -w) to a copy of the base and checks the repair.
fn case(base: Base, name: &str, expect: &str, cmds: &[String]) {
    case_with(base, name, expect, cmds, true);
}

fn case_with(base: Base, name: &str, expect: &str, cmds: &[String], exact: bool) {
    let tmp = TempDir::new(&format!("ba-case-{name}"));
    let img = tmp.join("disk.img");
    copy_image(&base.image(), &img);
    debugfs_w(&img, cmds);
    repairs_with(&format!("{name} {base:?}"), &img, base.block, expect, exact);
}

fn all_cases(base: Base) {
    let img = base.image();
    let big = blocks_of(&img, "/f300k")[0];
    let f4096 = blocks_of(&img, "/f4096");
    let r = base.ratio();
    // A free cluster far from everything.
    let far = {
        let fs = dumpe2fs(&img);
        (fs.blocks_count / 2) / r * r
    };

    // Two files on the same clusters (pass 1B/1D in clusters): the first
    // in inode order gets copies, whole logical clusters at a time.
    case(
        base,
        "shared",
        "shares block(s)",
        &[format!("sif /f70k block[5] {big}")],
    );
    // Blocks at another offset in a shared cluster than in the file.
    case(
        base,
        "misaligned-shared",
        "off its cluster's alignment",
        &[format!("sif /f4096 block[5] {}", big + 1)],
    );
    // Misaligned inside the file's own cluster: it shares with no one,
    // and still gets a new cluster.
    case(
        base,
        "misaligned-alone",
        "off its cluster's alignment",
        &[format!("sif /f4096 block[5] {}", f4096[0] + 1)],
    );
    // One logical cluster over two physical clusters: the stray block
    // joins the cluster the file's other blocks use (implied allocation).
    let f12k = blocks_of(&img, "/f12k")[0];
    case(
        base,
        "split-logical-cluster",
        "off its cluster's alignment",
        &extent_root("/f12k", &[(0, 1, f12k), (2, 1, far + 2)]),
    );
    // A block-mapped regular file: rebuilt as an extent tree (pass 1E).
    let mut cmds = vec!["sif /f4096 flags 0".to_string()];
    for k in 0..6usize {
        let p = f4096.get(k).copied().unwrap_or(0);
        cmds.push(format!("sif /f4096 block[{k}] {p}"));
    }
    case(
        base,
        "block-mapped",
        "uses a block map, which bigalloc does not allow",
        &cmds,
    );
}

/// Fixes that allocate nothing and free nothing by themselves (an inode
/// field, an xattr reference, an extent entry, a directory block rewritten
/// in place): made on bigalloc in the same run as elsewhere, the next
/// round's check judging what they leave (difffuzz seed 31 left them all
/// for a second run).
fn in_place_cases(base: Base) {
    let img = base.image();
    let fs = dumpe2fs(&img);
    let r = base.ratio();
    let far = (fs.blocks_count / 2) / r * r;
    case(
        base,
        "extra-isize",
        "extra size",
        &["sif /f4096 extra_isize 4174".to_string()],
    );
    // A reference to a zeroed cluster: no xattr magic there.
    case(
        base,
        "xattr-block-magic",
        "bad header",
        &[format!("sif /f12k file_acl {far}")],
    );
    // The last block of the file mapped outside the file system.
    let f12k = blocks_of(&img, "/f12k");
    let n = f12k.len() as u32;
    case_with(
        base,
        "extent-past-end",
        "invalid extent",
        &extent_root(
            "/f12k",
            &[(0, n - 1, f12k[0]), (n - 1, 1, fs.blocks_count + 5)],
        ),
        false,
    );
    // The directory's last entry ('a', after '.' and '..') runs over its
    // checksum tail: its rec_len (at byte 28) reaches the block's end.
    let dir = blocks_of(&img, "/dir")[0];
    let [lo, hi] = ((base.block - 24) as u16).to_le_bytes();
    case(
        base,
        "dir-no-tail",
        "lacks its checksum tail",
        &[
            format!("zap_block -o 28 -l 1 -p {lo} {dir}"),
            format!("zap_block -o 29 -l 1 -p {hi} {dir}"),
        ],
    );
}

#[test]
fn clusters_of_16_blocks_of_1k() {
    all_cases(SMALL);
}

#[test]
fn in_place_fixes_on_clusters_of_1k() {
    in_place_cases(SMALL);
}

#[test]
fn in_place_fixes_on_clusters_of_4k() {
    in_place_cases(LARGE);
}

#[test]
fn clusters_of_16_blocks_of_4k() {
    all_cases(LARGE);
}

/// e2fsprogs' own bigalloc images: cluster rule violations, a block map,
/// sharing with files and with a triple indirect block (`f_badcluster`),
/// one file sharing five clusters with five others (`f_dup_ba`).
#[test]
fn e2fsprogs_bigalloc_images() {
    let Some(dir) = conformance_dir() else {
        println!("conformance images not found, skipped");
        return;
    };
    let tmp = TempDir::new("ba-conformance");
    for (t, bs) in [("f_badcluster", 1024), ("f_dup_ba", 4096)] {
        let img = tmp.join(format!("{t}.img"));
        if extract_image(&dir.join("e2fsprogs").join(t), &img).is_err() {
            println!("{t} not found, skipped");
            continue;
        }
        repairs_like_e2fsck(t, &img, bs, "shares block(s)");
    }
}

/// A full /lost+found on bigalloc grows by a block of the cluster it
/// already has (1 KiB blocks, 16 KiB clusters: its 12 blocks leave 4 of
/// their cluster unused), as e2fsck's "Expand": nothing allocated, i_blocks
/// (counted in clusters) unchanged. The repair's report names only the
/// unattached inodes e2fsck finds, and the result is e2fsck's.
#[test]
fn full_lost_found_grows_inside_its_cluster() {
    full_lost_found_grows("ba-full-lost-found", 1024, 16384, 3);
}

/// A full /lost+found whose cluster is full (4 KiB blocks, 16 KiB
/// clusters: its 4 blocks are the whole cluster) takes a new cluster to
/// grow, and then blocks of that cluster: the in-use map (one bit per
/// cluster) gets the new cluster, not the block number, and i_blocks grows
/// by one cluster. Enough unattached inodes for two new blocks.
#[test]
fn full_lost_found_grows_into_a_new_cluster() {
    full_lost_found_grows("ba-full-lost-found-new", 4096, 16384, 400);
}

/// Fills /lost+found of a new bigalloc file system (blocks of `bs`,
/// clusters of `cluster` bytes) and unlinks `files` files: a repair must
/// grow /lost+found to reconnect them, and end as e2fsck does.
fn full_lost_found_grows(name: &str, bs: u32, cluster: u32, files: u32) {
    let tmp = TempDir::new(name);
    let img = tmp.join("disk.img");
    let mut opts = MkfsOpts::ext4().block_size(bs).features("bigalloc");
    opts.inodes = Some(2048);
    opts.extra_args = vec!["-C".into(), cluster.to_string()];
    mkfs(&img, 64 * MIB, &opts, None);
    let info = dumpe2fs(&img);
    let size = lost_found_size(&img);
    let bs = info.block_size;
    let tail = if info.features.iter().any(|f| f == "metadata_csum") {
        12
    } else {
        0
    };
    // Records of 12 bytes (names of 4 characters) fill every block to
    // within less than one record; '.' and '..' take two.
    let room = size / bs * ((bs - tail) / 12) - 2;
    let mut cmds = vec!["cd /lost+found".to_string()];
    cmds.extend((1..=room).map(|i| format!("mknod {i:04x} p")));
    cmds.push("cd /".into());
    cmds.push("mkdir d".into());
    for i in 1..=files {
        cmds.push(format!("write /etc/hostname d/f{i}"));
        cmds.push(format!("unlink d/f{i}"));
    }
    debugfs_w(&img, &cmds);
    assert_eq!(
        lost_found_size(&img),
        size,
        "lost+found grew while it was filled"
    );
    let seen = e2fsck(&img, &["-fn"]);
    assert_eq!(
        seen.stdout.matches("Unattached inode").count(),
        files as usize,
        "{}",
        seen.describe()
    );
    let mine = tmp.join("pfsck.img");
    copy_image(&img, &mine);
    let out = pfsck(&[
        "-fy".as_ref(),
        "--undo".as_ref(),
        tmp.join("undo").as_os_str(),
        mine.as_os_str(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "pfsck -fy:\n{text}");
    for made_up in [
        "i_blocks",
        "Blocks whose bitmap bit is wrong",
        "free blocks recorded",
    ] {
        assert!(
            !text.contains(made_up),
            "pfsck reports '{made_up}':\n{text}"
        );
    }
    assert_both_clean(name, &mine);
    assert!(lost_found_size(&mine) > size, "lost+found did not grow");
    let theirs = tmp.join("e2fsck.img");
    copy_image(&img, &theirs);
    e2fsck_until_clean(&theirs, name);
    let diff = differing_blocks(&mine, &theirs, bs as usize);
    assert!(
        diff.is_empty(),
        "blocks differing from e2fsck's: {diff:?}\n{text}"
    );
}

/// i_size of /lost+found.
fn lost_found_size(img: &Path) -> u64 {
    let out = debugfs_r(img, "stat /lost+found");
    out.split("Size: ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no size in: {out}"))
}
