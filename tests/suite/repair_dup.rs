//! Repairs of multiply-claimed blocks (e2fsck's passes 1B-1D): damage a
//! real image with `debugfs -w` so that files share blocks (with each
//! other, with themselves, with file system metadata), run `pfsck -fy`,
//! and require exit 1, then `e2fsck -fn` and `pfsck -fn` exit 0, files the
//! damage did not touch unchanged, and every sharing file still reading
//! exactly what it read before the repair (each got its own copy).
//!
//! Bases: ext2 with 1 KiB blocks (block pointers, indirect blocks) and
//! ext4 with metadata_csum (extents, checksummed inodes and tree blocks).

use crate::common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    Ext2,
    Ext4,
}

impl Base {
    fn image(self) -> PathBuf {
        let (key, size, opts) = match self {
            Base::Ext2 => ("dup-base-ext2", 16 * MIB, MkfsOpts::ext2().block_size(1024)),
            Base::Ext4 => (
                "dup-base-ext4",
                32 * MIB,
                MkfsOpts::ext4().block_size(4096).blocks_per_group(2048),
            ),
        };
        cached_image(key, |img| {
            mkfs(img, size, &opts, Some(&standard_tree_dir()));
            assert_eq!(e2fsck_fn(img), 0, "base {self:?} is not clean");
        })
    }
}

/// Reads a file of the image with `debugfs cat`.
fn cat(img: &Path, path: &str) -> Vec<u8> {
    let out = std::process::Command::new(tool("debugfs"))
        .arg("-R")
        .arg(format!("cat /{path}"))
        .arg(img)
        .output()
        .unwrap();
    out.stdout
}

/// The -fy round trip: `shared` are the files the damage made share
/// blocks (they must read as before the repair), `kept`
/// files the damage did not touch (they must match the source tree).
fn repairs(name: &str, base: Base, shared: &[&str], kept: &[&str], damage: impl FnOnce(&Path)) {
    let ctx = format!("{name} on {base:?}");
    let tmp = TempDir::new(&format!("dup-{name}"));
    let img = tmp.join("disk.img");
    copy_image(&base.image(), &img);
    damage(&img);
    assert_ne!(e2fsck_fn(&img), 0, "[{ctx}] e2fsck -fn sees no damage");
    let before: Vec<Vec<u8>> = shared.iter().map(|f| cat(&img, f)).collect();

    let out = pfsck(&[OsStr::new("-fy"), img.as_os_str()]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "[{ctx}] pfsck -fy:\n{text}");
    assert!(text.contains("shares block(s)"), "[{ctx}]\n{text}");
    assert_both_clean(&ctx, &img);
    for (f, want) in shared.iter().zip(&before) {
        // A map that gained blocks past i_size has its size raised (pass
        // 1), so a file may grow; what it read must stay.
        let got = cat(&img, f);
        assert!(
            got.len() >= want.len() && &got[..want.len()] == want,
            "[{ctx}] /{f} does not read as before the repair"
        );
    }
    let tree = standard_tree_dir();
    for f in kept {
        let want = std::fs::read(tree.join(f)).unwrap();
        assert!(cat(&img, f) == want, "[{ctx}] /{f} changed by the repair");
    }
}

const KEPT: [&str; 3] = ["dir1/sub/c", "dir1/b.bin", "f4096"];

/// Block pointers: a direct pointer of one file aimed at another file's
/// data block, and one at a block its indirect block maps.
#[test]
fn ext2_files_share_blocks() {
    let base = Base::Ext2;
    let big = blocks_of(&base.image(), "/f300k");
    repairs("direct", base, &["f70k", "f300k"], &KEPT, |img| {
        debugfs_w(img, &[format!("sif /f70k block[2] {}", big[5])]);
    });
    // f300k's 20th block is mapped through its indirect block (the 13th
    // entry of `blocks` is the indirect block itself).
    repairs("indirect", base, &["f70k", "f300k"], &KEPT, |img| {
        debugfs_w(img, &[format!("sif /f70k block[IND] {}", big[12])]);
    });
}

/// A file mapping one block twice gets a copy for one of the two.
#[test]
fn ext2_file_maps_a_block_twice() {
    let base = Base::Ext2;
    let b = blocks_of(&base.image(), "/f70k");
    repairs("twice", base, &["f70k"], &KEPT, |img| {
        debugfs_w(img, &[format!("sif /f70k block[3] {}", b[1])]);
    });
}

/// Blocks shared with metadata (the first group's block bitmap and a
/// block of its inode table) are always copied away from it.
#[test]
fn ext2_file_shares_metadata() {
    let base = Base::Ext2;
    let info = dumpe2fs(&base.image());
    let g0 = &info.groups[0];
    repairs("bitmap", base, &["f70k"], &KEPT, |img| {
        debugfs_w(img, &[format!("sif /f70k block[0] {}", g0.block_bitmap)]);
    });
    // A late inode table block: no inode the repair edits lives there.
    repairs("itable", base, &["f70k"], &KEPT, |img| {
        debugfs_w(img, &[format!("sif /f70k block[1] {}", g0.inode_table.1)]);
    });
}

/// Extents: a file's only extent moved onto another file's blocks (whole
/// extents shared), and onto the middle of them (the other file's extent
/// is split around the copies).
#[test]
fn ext4_extents_share_blocks() {
    let base = Base::Ext4;
    let big = blocks_of(&base.image(), "/f300k");
    // i_block[5] is the start (low 32 bits) of the root's first extent.
    repairs("whole-extent", base, &["f70k", "f300k"], &KEPT, |img| {
        debugfs_w(img, &[format!("sif /f70k block[5] {}", big[0])]);
    });
    repairs("mid-extent", base, &["f70k", "f300k"], &KEPT, |img| {
        debugfs_w(img, &[format!("sif /f70k block[5] {}", big[30])]);
    });
}

/// An extent file sharing the first group's block bitmap.
#[test]
fn ext4_extent_shares_metadata() {
    let base = Base::Ext4;
    let info = dumpe2fs(&base.image());
    let bb = info.groups[1].block_bitmap;
    repairs("ext4-bitmap", base, &["f70k"], &KEPT, |img| {
        debugfs_w(img, &[format!("sif /f70k block[5] {bb}")]);
    });
}

/// No free block left for a copy: the file is deleted instead and its
/// entry removed; the other owner keeps the block and its contents.
#[test]
fn no_space_deletes_the_file() {
    let tmp = TempDir::new("dup-full");
    let img = tmp.join("disk.img");
    let src = tmp.join("tree");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("a"), file_content("a", 3000)).unwrap();
    std::fs::write(src.join("b"), file_content("b", 3000)).unwrap();
    mkfs(
        &img,
        2 * MIB,
        &MkfsOpts::ext2().block_size(1024),
        Some(&src),
    );
    // Fill every free block with a file of its own.
    let info = dumpe2fs(&img);
    let filler = tmp.join("fill");
    std::fs::write(&filler, vec![7u8; (info.free_blocks as usize + 64) * 1024]).unwrap();
    let _ = debugfs_w_unchecked(&img, &[format!("write {} fill", filler.display())]);
    let b = blocks_of(&img, "/b");
    // An extra pointer: /a gives up no block of its own, so nothing is free.
    debugfs_w(&img, &[format!("sif /a block[3] {}", b[0])]);
    assert_ne!(e2fsck_fn(&img), 0);
    let b_before = cat(&img, "b");
    let out = pfsck(&[OsStr::new("-fy"), img.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "pfsck -fy:\n{text}");
    assert_both_clean("full", &img);
    assert_eq!(cat(&img, "b"), b_before, "/b lost its data");
    let ls = debugfs_r(&img, "ls -l /");
    assert!(!ls.contains(" a "), "/a still listed:\n{ls}");
}

/// A file whose extent tree has a leaf block below the root (made by
/// writing it into a fragmented file system): a later file sharing one of
/// its data blocks makes it split a leaf extent around the copy; sharing
/// the leaf block itself makes it copy the node and repoint the index.
#[test]
fn ext4_tree_below_the_root() {
    let tmp = TempDir::new("dup-tree");
    let src = tmp.join("tree");
    std::fs::create_dir_all(&src).unwrap();
    for i in 0..60 {
        std::fs::write(
            src.join(format!("s{i}")),
            file_content(&format!("s{i}"), 4096),
        )
        .unwrap();
    }
    let base = tmp.join("base.img");
    mkfs(
        &base,
        16 * MIB,
        &MkfsOpts::ext4().block_size(4096),
        Some(&src),
    );
    let big = tmp.join("big");
    let late = tmp.join("late");
    std::fs::write(&big, file_content("big", 200_000)).unwrap();
    std::fs::write(&late, file_content("late", 8192)).unwrap();
    let mut cmds: Vec<String> = (0..60).step_by(2).map(|i| format!("rm /s{i}")).collect();
    cmds.push(format!("write {} big", big.display()));
    cmds.push(format!("write {} late", late.display()));
    debugfs_w(&base, &cmds);
    assert_eq!(e2fsck_fn(&base), 0, "fragmented base is not clean");
    let stat = debugfs_r(&base, "stat /big");
    assert!(stat.contains("(ETB0)"), "/big has no tree block:\n{stat}");
    let blocks = blocks_of(&base, "/big");
    // `blocks` lists the leaf block first, then the data blocks.
    let leaf = blocks[0];
    let data = blocks[blocks.len() - 5];
    for (name, target) in [("leaf-extent", data), ("leaf-node", leaf)] {
        let img = tmp.join(format!("{name}.img"));
        copy_image(&base, &img);
        debugfs_w(&img, &[format!("sif /late block[5] {target}")]);
        assert_ne!(e2fsck_fn(&img), 0, "[{name}] e2fsck -fn sees no damage");
        let before: Vec<Vec<u8>> = ["big", "late"].iter().map(|f| cat(&img, f)).collect();
        let out = pfsck(&[OsStr::new("-fy"), img.as_os_str()]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert_eq!(out.status.code(), Some(1), "[{name}] pfsck -fy:\n{text}");
        assert_both_clean(name, &img);
        for (f, want) in ["big", "late"].iter().zip(&before) {
            assert!(&cat(&img, f) == want, "[{name}] /{f} changed");
        }
    }
}

/// Root index entries and the middle of a long extent in a leaf `ex`
/// lists: (root entries, physical block in the middle of the first leaf's
/// first extent of 3 blocks or more).
fn tree_shape(img: &Path, path: &str) -> (usize, Option<u64>) {
    let ex = debugfs_r(img, &format!("ex {path}"));
    let mut root = 0;
    let mut mid = None;
    for line in ex.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        // "0/ 1   1/  3     0 -   180  1381            181"
        if w.len() < 8 {
            continue;
        }
        if w[0] == "0/" {
            root += 1;
        } else if w[0] == "1/" && mid.is_none() && w.len() >= 11 {
            // "1/ 1   6/ 83     9 -    12  1384 -  1387      4"
            let (Ok(start), Ok(len)) = (w[7].parse::<u64>(), w[10].parse::<u64>()) else {
                continue;
            };
            if len >= 3 {
                mid = Some(start + 1);
            }
        }
    }
    (root, mid)
}

/// A nearly full leaf (1 KiB blocks: 84 entries) whose extent is split in
/// three by the copies: the leaf itself splits and the root gains an
/// index entry.
#[test]
fn ext4_full_leaf_splits() {
    let tmp = TempDir::new("dup-full-leaf");
    let src = tmp.join("tree");
    std::fs::create_dir_all(&src).unwrap();
    for i in 0..400 {
        std::fs::write(
            src.join(format!("s{i}")),
            file_content(&format!("s{i}"), 2048),
        )
        .unwrap();
    }
    let img = tmp.join("disk.img");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext4().block_size(1024).inodes(1024),
        Some(&src),
    );
    let big = tmp.join("big");
    let late = tmp.join("late");
    std::fs::write(&big, file_content("big", 380_000)).unwrap();
    std::fs::write(&late, file_content("late", 2048)).unwrap();
    let mut cmds: Vec<String> = (0..400).step_by(2).map(|i| format!("rm /s{i}")).collect();
    cmds.push(format!("write {} big", big.display()));
    cmds.push(format!("write {} late", late.display()));
    debugfs_w(&img, &cmds);
    assert_eq!(e2fsck_fn(&img), 0, "fragmented base is not clean");
    let (root_before, mid) = tree_shape(&img, "/big");
    let mid = mid.expect("no extent of 3 blocks in /big's first leaf");
    debugfs_w(&img, &[format!("sif /late block[5] {mid}")]);
    let before: Vec<Vec<u8>> = ["big", "late"].iter().map(|f| cat(&img, f)).collect();
    let theirs = tmp.join("theirs.img");
    copy_image(&img, &theirs);
    let e = oracle_run(&theirs, &["-fy"]);
    assert_eq!(e.code(), Some(1), "e2fsck -fy:\n{}", e.stdout);
    let out = pfsck(&[OsStr::new("-fy"), img.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "pfsck -fy:\n{text}");
    assert_both_clean("full-leaf", &img);
    for (f, want) in ["big", "late"].iter().zip(&before) {
        assert!(&cat(&img, f) == want, "/{f} changed");
    }
    let (root_after, _) = tree_shape(&img, "/big");
    let (root_theirs, _) = tree_shape(&theirs, "/big");
    assert_eq!(
        root_after, root_theirs,
        "not e2fsck's tree (before: {root_before} leaves):\n{text}\ne2fsck:\n{}",
        e.stdout
    );
}
