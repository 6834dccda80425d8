//! Pass 1 repairs of whole inodes, end to end: an image made with
//! `mkfs -d` from the standard tree, one inode damaged with `debugfs -w`
//! (or bytes written in place), then `pfsck -fy` must exit 1, leave an
//! image both `e2fsck -fn` and `pfsck -fn` find clean, keep the files the
//! damage did not touch, and leave the damaged inode the way e2fsck -y
//! does (cleared, or with the bad field or flag fixed).
//!
//! Bases: ext2 with 1 KiB blocks, ext4 with metadata_csum and 4 KiB
//! blocks (both with mkfs's 256-byte inodes).

use crate::common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    Ext2,
    Ext4,
}

const ALL: [Base; 2] = [Base::Ext2, Base::Ext4];

impl Base {
    fn image(self) -> PathBuf {
        let (key, size, opts) = match self {
            Base::Ext2 => (
                "inode-repair-ext2",
                16 * MIB,
                MkfsOpts::ext2().block_size(1024),
            ),
            Base::Ext4 => (
                "inode-repair-ext4",
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

/// Files no damage below touches.
const KEPT: [&str; 5] = ["f300k", "f70k", "dir1/sub/c", "dir1/b.bin", "f4096"];

fn assert_files_kept(ctx: &str, img: &Path) {
    let tree = standard_tree_dir();
    for f in KEPT {
        let want = std::fs::read(tree.join(f)).unwrap();
        let got = debugfs_cat(img, f);
        assert!(got == want, "[{ctx}] /{f} changed by the repair");
    }
}

fn debugfs_cat(img: &Path, f: &str) -> Vec<u8> {
    std::process::Command::new(tool("debugfs"))
        .arg("-R")
        .arg(format!("cat /{f}"))
        .arg(img)
        .output()
        .unwrap()
        .stdout
}

fn pfsck_run(args: &[&OsStr]) -> (Option<i32>, String) {
    let out = pfsck(args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// Damages a copy of `base`, runs `pfsck -fy` and checks the result; then
/// hands the repaired image to `after` for what the damage should have
/// become.
fn repairs(name: &str, base: Base, damage: impl FnOnce(&Path), after: impl FnOnce(&str, &Path)) {
    let ctx = format!("{name} on {base:?}");
    let tmp = TempDir::new(&format!("inode-{name}"));
    let img = tmp.join("disk.img");
    copy_image(&base.image(), &img);
    damage(&img);
    assert_ne!(e2fsck_fn(&img), 0, "[{ctx}] e2fsck -fn sees no damage");
    let (code, text) = pfsck_run(&[OsStr::new("-fy"), img.as_os_str()]);
    assert_eq!(code, Some(1), "[{ctx}] pfsck -fy:\n{text}");
    assert!(
        text.contains("***** repairs written to the file system *****"),
        "[{ctx}]\n{text}"
    );
    assert_both_clean(&ctx, &img);
    assert_files_kept(&ctx, &img);
    after(&ctx, &img);
}

fn sif(cmds: &[String]) -> impl FnOnce(&Path) + '_ {
    move |img: &Path| {
        debugfs_w_unchecked(img, cmds);
    }
}

/// The path no longer names anything (its inode was cleared and the
/// entry removed).
fn gone(path: &'static str) -> impl FnOnce(&str, &Path) {
    move |ctx: &str, img: &Path| {
        let out = debugfs_r(img, &format!("stat /{path}"));
        assert!(
            !out.contains("Inode: "),
            "[{ctx}] /{path} still there:\n{out}"
        );
    }
}

/// `stat` of the path after the repair.
fn stat(img: &Path, path: &str) -> String {
    debugfs_r(img, &format!("stat /{path}"))
}

fn flags_of(img: &Path, path: &str) -> u32 {
    let out = stat(img, path);
    let at = out.find("Flags: 0x").expect("no flags in stat");
    let hex: String = out[at + 9..]
        .chars()
        .take_while(|c| c.is_ascii_hexdigit())
        .collect();
    u32::from_str_radix(&hex, 16).unwrap()
}

#[test]
fn invalid_mode_clears_the_inode() {
    for b in ALL {
        repairs(
            "bad-mode",
            b,
            sif(&["sif /tiny mode 0170644".into()]),
            gone("tiny"),
        );
    }
}

#[test]
fn illegal_device_is_cleared_special_flags_and_size_fixed() {
    for b in ALL {
        repairs(
            "devices",
            b,
            sif(&[
                // Immutable with stray block pointers: not a device.
                "sif /chardev flags 0x10".into(),
                "sif /chardev block[6] 77".into(),
                // Only immutable, and a size: both go.
                "sif /blockdev flags 0x10".into(),
                "sif /fifo size 100".into(),
                "sif /socket flags 0x80000".into(),
            ]),
            |ctx, img| {
                gone("chardev")(ctx, img);
                assert_eq!(flags_of(img, "blockdev") & 0x10, 0, "[{ctx}]");
                assert!(stat(img, "fifo").contains("Size: 0"), "[{ctx}]");
                // A socket with EXTENTS_FL is no valid socket: cleared.
                gone("socket")(ctx, img);
            },
        );
    }
}

#[test]
fn invalid_symlinks_are_cleared() {
    for b in ALL {
        repairs(
            "symlinks",
            b,
            sif(&[
                "sif /fastlink size 200".into(),
                "sif /slowlink size 150".into(),
                "sif /dir1/dangling size 0".into(),
            ]),
            |ctx, img| {
                gone("fastlink")(ctx, img);
                gone("slowlink")(ctx, img);
                gone("dir1/dangling")(ctx, img);
            },
        );
    }
}

/// A block-mapped slow symlink mapping a second block: e2fsck -y clears
/// the block (it makes the symlink too big) and keeps the symlink.
#[test]
fn symlink_loses_a_second_block() {
    repairs(
        "symlink-second-block",
        Base::Ext2,
        sif(&["sif /slowlink block[1] 5".into()]),
        |ctx, img| {
            let out = debugfs_r(img, "stat /slowlink");
            assert!(out.contains("Type: symlink"), "[{ctx}] {out}");
            assert!(out.contains("TOTAL: 1"), "[{ctx}] {out}");
            let size = format!("Size: {}", slow_symlink_target().len());
            assert!(out.contains(&size), "[{ctx}] {out}");
        },
    );
}

#[test]
fn bad_fields_are_zeroed() {
    for b in ALL {
        repairs(
            "fields",
            b,
            sif(&[
                "sif /f4097 file_acl 99999999".into(),
                "sif /f12k faddr 5".into(),
                "sif /dir1/a.txt flags 0x2000".into(),
            ]),
            |ctx, img| {
                assert!(stat(img, "f4097").contains("File ACL: 0"), "[{ctx}]");
                assert!(stat(img, "f12k").contains("Address: 0"), "[{ctx}]");
                assert_eq!(flags_of(img, "dir1/a.txt") & 0x2000, 0, "[{ctx}]");
                // The files themselves are intact.
                let tree = standard_tree_dir();
                for f in ["f4097", "f12k", "dir1/a.txt"] {
                    let want = std::fs::read(tree.join(f)).unwrap();
                    assert!(debugfs_cat(img, f) == want, "[{ctx}] /{f}");
                }
            },
        );
    }
}

#[test]
fn blocks_hi_without_huge_file_is_zeroed() {
    repairs_blocks_hi(Base::Ext2);
}

fn repairs_blocks_hi(b: Base) {
    repairs(
        "blocks-hi",
        b,
        sif(&["sif /f12k blocks_hi 3".into()]),
        |ctx, img| {
            let tree = standard_tree_dir();
            let want = std::fs::read(tree.join("f12k")).unwrap();
            assert!(debugfs_cat(img, "f12k") == want, "[{ctx}]");
        },
    );
}

#[test]
fn deleted_inode_gets_its_dtime() {
    for b in ALL {
        repairs(
            "zero-dtime",
            b,
            sif(&["sif /f4095 links_count 0".into()]),
            gone("f4095"),
        );
    }
}

#[test]
fn extents_flag_without_the_feature_clears_the_inode() {
    // ext2: no extents feature and a block map in i_block.
    repairs(
        "extents-no-feature",
        Base::Ext2,
        sif(&["sif /f4097 flags 0x80000".into()]),
        gone("f4097"),
    );
}

#[test]
fn missing_extents_flag_is_set() {
    repairs(
        "extents-flag-missing",
        Base::Ext4,
        sif(&["sif /f12k flags 0".into()]),
        |ctx, img| {
            assert_ne!(flags_of(img, "f12k") & 0x80000, 0, "[{ctx}]");
            let want = std::fs::read(standard_tree_dir().join("f12k")).unwrap();
            assert!(debugfs_cat(img, "f12k") == want, "[{ctx}]");
        },
    );
}

#[test]
fn inline_data_flag_without_the_feature_or_its_xattr() {
    for b in ALL {
        repairs(
            "inline-no-feature",
            b,
            sif(&["sif /f4097 flags 0x10000000".into()]),
            gone("f4097"),
        );
    }
}

#[test]
fn extra_isize_is_fixed() {
    repairs(
        "extra-isize",
        Base::Ext4,
        sif(&["sif /small extra_isize 0xffff".into()]),
        |ctx, img| {
            let out = stat(img, "small");
            assert!(
                out.contains("Size of extra inode fields: 32"),
                "[{ctx}] {out}"
            );
        },
    );
}

#[test]
fn corrupt_in_inode_xattrs_are_dropped() {
    repairs(
        "in-inode-xattr",
        Base::Ext4,
        |img| {
            debugfs_w(img, &["ea_set /small user.colour blue"]);
            // The first entry's value size (area: 128 + extra_isize, then
            // the 4-byte magic; e_value_size at +8 in the entry).
            let ino = inode_of(img, "/small");
            let off = inode_offset(img, ino) + 128 + 32 + 4 + 8;
            write_at(img, off, &[0xff, 0xff, 0, 0]);
        },
        |ctx, img| {
            let out = debugfs_r(img, "ea_list /small");
            assert!(!out.contains("colour"), "[{ctx}] {out}");
        },
    );
}

#[test]
fn garbage_inode_table_block_is_cleared() {
    // More than half the inodes of one inode-table block fail their
    // checksum: e2fsck clears every inode of the block in use. The block
    // holding the /many files is chosen so none of the kept files is in it.
    let b = Base::Ext4;
    let victim = inode_of(&b.image(), "/many/entry-with-a-long-name-0030");
    let ipb = 4096 / 256;
    let first = (victim - 1) / ipb * ipb + 1;
    for f in KEPT {
        let ino = inode_of(&b.image(), &format!("/{f}"));
        assert!(
            ino < first || ino >= first + ipb,
            "/{f} in the garbage block"
        );
    }
    repairs(
        "garbage",
        b,
        |img| {
            for ino in first..first + ipb / 2 + 1 {
                // i_generation is covered by the checksum only.
                let off = inode_offset(img, ino) + 0x64;
                let old = read_at(img, off, 1);
                write_at(img, off, &[old[0] ^ 0x5a]);
            }
        },
        |ctx, img| {
            let out = debugfs_r(img, "ls -l /many");
            assert!(
                !out.contains("entry-with-a-long-name-0030"),
                "[{ctx}] {out}"
            );
        },
    );
}

#[test]
fn missing_root_is_recreated() {
    // Without its root every top-level name is lost: e2fsck makes a new,
    // empty root and a new /lost+found, and reconnects what the old root
    // held there as #INO. The files keep their contents.
    for (b, damage) in [
        (Base::Ext2, "clri <2>"),
        (Base::Ext4, "clri <2>"),
        (Base::Ext2, "sif <2> mode 0100644"),
    ] {
        let ctx = format!("{damage} on {b:?}");
        let tmp = TempDir::new("inode-no-root");
        let img = tmp.join("disk.img");
        copy_image(&b.image(), &img);
        let f300k = inode_of(&img, "/f300k");
        let dir1 = inode_of(&img, "/dir1");
        debugfs_w_unchecked(&img, &[damage]);
        assert_ne!(e2fsck_fn(&img), 0, "[{ctx}] e2fsck -fn sees no damage");
        let by_e2fsck = tmp.join("e2fsck.img");
        copy_image(&img, &by_e2fsck);
        e2fsck(&by_e2fsck, &["-fy"]);
        let (code, text) = pfsck_run(&[OsStr::new("-fy"), img.as_os_str()]);
        assert_eq!(code, Some(1), "[{ctx}] pfsck -fy:\n{text}");
        if damage == "clri <2>" {
            // One new root (pass 1 and pass 3 both report it missing), in
            // the lowest free block as e2fsck's.
            assert_eq!(
                debugfs_r(&img, "bmap <2> 0").trim(),
                debugfs_r(&by_e2fsck, "bmap <2> 0").trim(),
                "[{ctx}] the new root's block\n{text}"
            );
        }
        assert!(
            text.lines()
                .any(|l| (l.starts_with("The root inode is not in use.  ")
                    || l.starts_with("The root inode is not a directory.  "))
                    && l.ends_with("? yes")),
            "[{ctx}]\n{text}"
        );
        assert_both_clean(&ctx, &img);
        let tree = standard_tree_dir();
        for (path, src) in [
            (format!("lost+found/#{f300k}"), "f300k"),
            (format!("lost+found/#{dir1}/sub/c"), "dir1/sub/c"),
        ] {
            let want = std::fs::read(tree.join(src)).unwrap();
            assert!(debugfs_cat(&img, &path) == want, "[{ctx}] /{path}");
        }
    }
}

/// The xattr block of `path` after giving it an xattr too big for the
/// inode.
fn with_xattr_block(img: &Path, path: &str) -> u64 {
    let value = "v".repeat(700);
    let file = img.with_extension("value");
    std::fs::write(&file, &value).unwrap();
    debugfs_w(
        img,
        &[format!("ea_set -f {} {path} user.big", file.display())],
    );
    let out = stat(img, path.trim_start_matches('/'));
    let at = out.find("File ACL: ").expect("no File ACL in stat");
    out[at + 10..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .filter(|&n: &u64| n != 0)
        .unwrap_or_else(|| panic!("no xattr block:\n{out}"))
}

#[test]
fn bad_xattr_block_is_dropped() {
    for b in ALL {
        repairs(
            "xattr-block-magic",
            b,
            |img| {
                let blk = with_xattr_block(img, "/f4097");
                let bs = if b == Base::Ext2 { 1024 } else { 4096 };
                write_at(img, blk * bs, &[0xde, 0xad, 0xbe, 0xef]);
            },
            |ctx, img| {
                assert!(stat(img, "f4097").contains("File ACL: 0"), "[{ctx}]");
                let want = std::fs::read(standard_tree_dir().join("f4097")).unwrap();
                assert!(debugfs_cat(img, "f4097") == want, "[{ctx}]");
            },
        );
    }
}

#[test]
fn shared_xattr_block_gets_its_reference_count() {
    for b in ALL {
        repairs(
            "xattr-block-refcount",
            b,
            |img| {
                let blk = with_xattr_block(img, "/f4097");
                // A second inode names the block: refcount 1, 2 users.
                debugfs_w_unchecked(img, &[format!("sif /f12k file_acl {blk}")]);
            },
            |ctx, img| {
                for f in ["f4097", "f12k"] {
                    let out = debugfs_r(img, &format!("ea_list /{f}"));
                    assert!(out.contains("user.big"), "[{ctx}] /{f}: {out}");
                }
            },
        );
    }
}

#[test]
fn reserved_inodes_and_index_flags() {
    for b in ALL {
        let extents = if b == Base::Ext4 { 0x80000 } else { 0 };
        repairs(
            "reserved-and-index",
            b,
            sif(&[
                // The bad blocks inode must have no mode; a reserved inode
                // without a use none either.
                "sif <1> mode 0100644".into(),
                "sif <6> mode 0100644".into(),
                // INDEX_FL on a regular file.
                format!("sif /f4097 flags {:#x}", extents | 0x1000),
            ]),
            |ctx, img| {
                assert_eq!(flags_of(img, "f4097") & 0x1000, 0, "[{ctx}]");
                let want = std::fs::read(standard_tree_dir().join("f4097")).unwrap();
                assert!(debugfs_cat(img, "f4097") == want, "[{ctx}]");
            },
        );
    }
}
