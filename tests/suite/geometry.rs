//! Issue 13, defect 6 ("geometry and flags"): damages made from scratch
//! (mke2fs, debugfs -w, byte patches) and judged against e2fsck 1.47.4
//! (`common::oracle`). pfsck's `-fn` verdict must be the oracle's, `-fn`
//! must not write, and one `pfsck -fy` must leave a file system the oracle
//! finds clean, exiting 1 exactly when there was something to fix.
//!
//! The EA-inode rules are those e2fsck 1.47.1-1.47.4 added: EA_INODE_FL
//! only on regular files, no directory entry naming an inode xattrs keep
//! their values in, an EA_INODE_FL inode nothing refers to loses the flag,
//! and a fast symlink charged for an EA-inode value is still a fast
//! symlink. The public images (`f_ea_inode*`, `f_bad_fname`) are checked
//! too when `../shared/conformance` is there.

use crate::common::*;
use std::path::{Path, PathBuf};

const SIZE: u64 = 32 << 20;

/// [`judged_by_oracle`], with `pfsck -fy` exiting 1 (0 when clean).
#[track_caller]
fn judged(ctx: &str, img: &Path, want: i32) -> (String, String) {
    judged_by_oracle(ctx, img, want, if want == 0 { 0 } else { 1 })
}

/// Repairs `img` with the oracle (values set by debugfs are not charged to
/// their owner until e2fsck does it).
fn settle(img: &Path) {
    let r = oracle_run(img, &["-fy"]);
    assert!(
        matches!(r.code(), Some(0 | 1)),
        "e2fsck -fy: {}",
        r.describe()
    );
}

/// ea_inode, 4 KiB blocks: /a (an EA-inode value), /b, /sub, /ln (a fast
/// symlink with an EA-inode value).
fn ea_base() -> PathBuf {
    cached_image("geometry-ea.img", |img| {
        let dir = TempDir::new("geometry-ea");
        let t = dir.join("tree");
        std::fs::create_dir_all(t.join("sub")).unwrap();
        std::fs::write(t.join("a"), b"a\n").unwrap();
        std::fs::write(t.join("b"), b"bb\n").unwrap();
        std::os::unix::fs::symlink("a", t.join("ln")).unwrap();
        let opts = MkfsOpts::ext4()
            .block_size(4096)
            .inode_size(256)
            .features("ea_inode");
        mkfs(img, SIZE, &opts, Some(&t));
        let big = dir.join("big");
        std::fs::write(&big, file_content("big", 6000)).unwrap();
        let big2 = dir.join("big2");
        std::fs::write(&big2, file_content("big2", 7000)).unwrap();
        debugfs_w(
            img,
            &[
                format!("ea_set -f {} /a user.one", big.display()),
                format!("ea_set -f {} /ln user.two", big2.display()),
            ],
        );
        settle(img);
    })
}

/// An inode holding an xattr value (the first with EA_INODE_FL).
fn an_ea_inode(img: &Path) -> u64 {
    (12..64)
        .find(|&i| debugfs_r(img, &format!("stat <{i}>")).contains("Flags: 0x280000"))
        .unwrap_or_else(|| panic!("no EA inode in {}", img.display()))
}

/// A copy of the base with debugfs `cmds` applied.
fn damaged(name: &str, cmds: &[String]) -> (TempDir, PathBuf) {
    let dir = TempDir::new(name);
    let img = dir.join("x.img");
    copy_image(&ea_base(), &img);
    if !cmds.is_empty() {
        debugfs_w(&img, cmds);
    }
    (dir, img)
}

#[test]
fn ea_inode_base_is_clean() {
    let (_d, img) = damaged("geo-ea-clean", &[]);
    let ln = debugfs_r(&img, "stat /ln");
    assert!(
        ln.contains("Fast link dest"),
        "/ln is no fast symlink:\n{ln}"
    );
    // The symlink is charged for its EA-inode value: before, pfsck took
    // its target for block numbers.
    assert!(!ln.contains("Blockcount: 0"), "/ln is not charged:\n{ln}");
    judged("ea-clean", &img, 0);
}

#[test]
fn ea_inode_flag_on_non_regular_files() {
    for (name, cmd) in [
        ("dir", "sif /sub flags 0x280000"),
        ("root", "sif <2> flags 0x280000"),
        ("symlink", "sif /ln flags 0x200000"),
        // Reserved inodes are judged whatever their link count.
        ("reserved", "sif <9> flags 0x200000"),
    ] {
        let (_d, img) = damaged(&format!("geo-ea-nonreg-{name}"), &[cmd.to_string()]);
        let (fn_out, _) = judged(name, &img, 4);
        assert!(
            fn_out.contains("is flagged as an EA inode but is not a regular file"),
            "[{name}] {fn_out}"
        );
    }
}

#[test]
fn ea_inode_flag_where_e2fsck_accepts_it() {
    // A deleted inode is not judged; a linked regular file with the flag
    // and no xattr referring to it is left alone.
    let sub = inode_of(&ea_base(), "/sub");
    for (name, cmds) in [
        (
            "deleted-dir",
            vec![
                "rmdir /sub".to_string(),
                format!("sif <{sub}> flags 0x200000"),
            ],
        ),
        ("linked-file", vec!["sif /b flags 0x280000".to_string()]),
    ] {
        let (_d, img) = damaged(&format!("geo-ea-ok-{name}"), &cmds);
        judged(name, &img, 0);
    }
}

#[test]
fn entry_naming_an_ea_inode() {
    let base = ea_base();
    let ea = an_ea_inode(&base);
    let (_d, img) = damaged("geo-ea-dirlink", &[format!("ln <{ea}> /xlink")]);
    let (fn_out, fy_out) = judged("dirlink", &img, 4);
    assert!(fn_out.contains("'xlink'"), "{fn_out}");
    assert!(fy_out.contains("'xlink'"), "{fy_out}");
    assert!(
        !debugfs_r(&img, "ls /").contains("xlink"),
        "the entry is still there"
    );
    // With its link count raised as well: the count follows.
    let (_d, img) = damaged(
        "geo-ea-dirlink2",
        &[
            format!("ln <{ea}> /xlink"),
            format!("sif <{ea}> links_count 2"),
        ],
    );
    judged("dirlink-count", &img, 4);
}

#[test]
fn unreferenced_ea_inode_flag() {
    // A file no entry and no xattr names, carrying EA_INODE_FL: the flag
    // goes and the file is reconnected.
    let b = inode_of(&ea_base(), "/b");
    let (_d, img) = damaged(
        "geo-ea-spurious",
        &["unlink /b".to_string(), format!("sif <{b}> flags 0x280000")],
    );
    judged("spurious", &img, 4);
    let after = debugfs_r(&img, &format!("stat <{b}>"));
    assert!(!after.contains("Flags: 0x280000"), "{after}");
}

#[test]
fn ea_inode_missing_its_flag_gets_it_back() {
    let base = ea_base();
    let ea = an_ea_inode(&base);
    let (_d, img) = damaged("geo-ea-noflag", &[format!("sif <{ea}> flags 0x80000")]);
    let (_, fy_out) = judged("noflag", &img, 4);
    let after = debugfs_r(&img, &format!("stat <{ea}>"));
    assert!(after.contains("Flags: 0x280000"), "{after}");
    // The owner's i_blocks was right all along: no fix of it is claimed.
    assert!(!fy_out.contains("i_blocks"), "{fy_out}");
}

/// The public e2fsprogs images of these rules: same verdict, and a clean
/// one-run repair.
#[test]
fn public_ea_inode_images() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/e2fsprogs");
    if !root.is_dir() || oracle().is_none() {
        eprintln!("no conformance images or oracle: skipped");
        return;
    }
    for (name, want) in [
        ("f_ea_inode", 4),
        ("f_ea_inode_dir_ref", 4),
        ("f_ea_inode_fast_symlink", 0),
        ("f_ea_inode_spurious_flag_dir", 4),
        ("f_bad_fname", 4),
    ] {
        let gz = root.join(name).join("image.gz");
        if !gz.is_file() {
            continue;
        }
        let dir = TempDir::new(&format!("geo-pub-{name}"));
        let img = dir.join("x.img");
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(&gz)
            .output()
            .unwrap();
        assert!(out.status.success(), "gzip -dc {}", gz.display());
        std::fs::write(&img, out.stdout).unwrap();
        judged(name, &img, want);
    }
}

// ---- superblock geometry ----

const KIB: u64 = 1024;
/// Byte offsets of the superblock copies of a 32 MiB, 1 KiB-block image
/// (groups 0, 1 and 3 with sparse_super).
const SB_COPIES: [u64; 3] = [KIB, 8193 * KIB, 24577 * KIB];

fn small_fs(name: &str, features: &str, size: u64) -> (TempDir, PathBuf) {
    let dir = TempDir::new(name);
    let img = dir.join("x.img");
    mkfs(
        &img,
        size,
        &MkfsOpts::ext4().block_size(1024).features(features),
        None,
    );
    (dir, img)
}

/// Applies debugfs `cmd` (which rewrites every superblock copy) and puts
/// the backups back: only the primary is damaged.
fn primary_only(img: &Path, cmd: &str) {
    let saved: Vec<Vec<u8>> = SB_COPIES[1..]
        .iter()
        .map(|&o| read_at(img, o, 1024))
        .collect();
    debugfs_w(img, &[cmd]);
    for (&o, b) in SB_COPIES[1..].iter().zip(&saved) {
        write_at(img, o, b);
    }
}

#[test]
fn log_groups_per_flex_out_of_range() {
    // Every copy damaged (one group, no backup): libext2fs cannot open
    // it, e2fsck exits 8 and so must pfsck.
    let (_d, img) = small_fs("geo-flex-all", "", 8 << 20);
    debugfs_w(&img, &["ssv log_groups_per_flex 32"]);
    assert_eq!(oracle_fn(&img), 8);
    let (code, out) = pfsck_code(&["-fn"], &img);
    assert_eq!(code, 8, "{out}");
    // 31 is a valid shift.
    let (_d, img) = small_fs("geo-flex-31", "", 8 << 20);
    debugfs_w(&img, &["ssv log_groups_per_flex 31"]);
    judged("flex-31", &img, 0);
    // The primary alone: the backup is used and written back.
    let (_d, img) = small_fs("geo-flex-primary", "", 32 << 20);
    primary_only(&img, "ssv log_groups_per_flex 40");
    let (fn_out, _) = judged("flex-primary", &img, 4);
    assert!(fn_out.contains("using the copy at block"), "{fn_out}");
}

#[test]
fn first_meta_bg_too_big() {
    // All copies say so (no checksums to redo): e2fsck loads the
    // superblock despite it, turns meta_bg off and zeroes the field.
    for v in [2u32, 100] {
        let (_d, img) = small_fs(
            "geo-meta-all",
            "meta_bg,^resize_inode,^metadata_csum",
            32 << 20,
        );
        for o in SB_COPIES {
            write_at(&img, o + 0x104, &v.to_le_bytes());
        }
        let (fn_out, fy_out) = judged(&format!("meta-all-{v}"), &img, 4);
        assert!(fn_out.contains("first meta_bg"), "{fn_out}");
        assert!(fy_out.contains("first meta_bg"), "{fy_out}");
        let sb = dumpe2fs(&img);
        assert!(!sb.has_feature("meta_bg"), "meta_bg still set");
    }
    // The primary alone: the backup is used.
    let (_d, img) = small_fs("geo-meta-primary", "meta_bg,^resize_inode", 32 << 20);
    primary_only(&img, "ssv first_meta_bg 2");
    let (fn_out, _) = judged("meta-primary", &img, 4);
    assert!(fn_out.contains("using the copy at block"), "{fn_out}");
}

// ---- flags and in-inode xattrs ----

#[test]
fn casefold_flag_on_reserved_inodes() {
    // e2fsck judges the flag on reserved inodes too, in use or not.
    for (name, features, ino) in [("cf", "casefold", 9), ("nocf", "", 7)] {
        let (_d, img) = small_fs(&format!("geo-cf-{name}"), features, 32 << 20);
        debugfs_w(&img, &[format!("sif <{ino}> flags 0x40000000")]);
        let (fn_out, _) = judged(&format!("casefold-{name}"), &img, 4);
        assert!(fn_out.contains("casefold"), "{fn_out}");
    }
}

#[test]
fn inline_data_xattr_area_garbage() {
    // Bytes after system.data where the table's terminator belongs: e2fsck
    // reads them as an entry that libext2fs refuses, so system.data is
    // not found and the inline data is truncated.
    let dir = TempDir::new("geo-inline-ea");
    let tree = dir.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("med"), vec![b'x'; 100]).unwrap();
    let img = dir.join("x.img");
    mkfs(
        &img,
        32 << 20,
        &MkfsOpts::ext4()
            .block_size(1024)
            .inode_size(256)
            .features("inline_data,^metadata_csum"),
        Some(&tree),
    );
    let ino = inode_of(&img, "/med");
    let at = inode_offset(&img, ino);
    // i_extra_isize 32: the table starts at 128 + 32 + 4; system.data's
    // entry takes 20 bytes.
    assert_eq!(read_at(&img, at + 128, 2), vec![32, 0]);
    assert_eq!(read_at(&img, at + 180, 4), b"data".to_vec());
    write_at(&img, at + 184, &[0x0a, 0x0b, 0x0c, 0x0d]);
    let (fn_out, _) = judged("inline-ea-garbage", &img, 4);
    assert!(fn_out.contains("inline data"), "{fn_out}");
}

#[test]
fn verity_feature_is_checked() {
    // The feature is checked, not refused; a VERITY_FL file may keep
    // blocks past i_size (its Merkle tree), with or without the feature,
    // and any other file may not.
    for (name, features, flags, want) in [
        ("verity-file", "verity", "0x180000", 0),
        ("verity-flag-only", "", "0x180000", 0),
        ("plain-file", "verity", "0x80000", 4),
    ] {
        let dir = TempDir::new(&format!("geo-{name}"));
        let tree = dir.join("tree");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(tree.join("g"), file_content("g", 20_000)).unwrap();
        let img = dir.join("x.img");
        mkfs(
            &img,
            32 << 20,
            &MkfsOpts::ext4().block_size(1024).features(features),
            Some(&tree),
        );
        debugfs_w(
            &img,
            &[
                format!("sif /g flags {flags}"),
                "sif /g size 1000".to_string(),
            ],
        );
        judged(name, &img, want);
    }
}
