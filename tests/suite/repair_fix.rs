//! End-to-end repairs: damage a real image with `debugfs -w`, run
//! `pfsck -fy` (or `-fp`), and require what e2fsck's own users rely on:
//!
//! - exit 1 and "repairs written to the file system" for a damage pfsck fixes, then
//!   `e2fsck -fn` and `pfsck -fn` both exit 0;
//! - files the damage did not touch keep their exact contents (read back
//!   with `debugfs cat` and compared with the tree the image was made from);
//! - the undo log exists and `pfsck --rollback` restores the damaged image
//!   byte for byte;
//! - preen fixes preen-safe damage (exit 1) and refuses the rest with
//!   "STOPPED: a problem preen may not fix" (exit 4, only the superblock's error
//!   state written, as e2fsck);
//! - a damage pfsck does not fix yet gives exit 4 with the problem listed.
//!
//! Bases: ext2 (1 KiB), ext4 with metadata_csum, flex_bg and uninit groups
//! (4 KiB), ext4 without metadata_csum but with uninit_bg (1 KiB, crc16
//! descriptor checksums).

use crate::common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;
/// The problem left by a repair: an inline directory's size that cannot
/// be stored, its system.data being in its xattr block (e2fsck's
/// 0x02004F; e2fsck -fy leaves errors there too).
const STUCK: &str = "0x2034";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    Ext2,
    Ext4,
    Ext4NoCsum,
}

const ALL: [Base; 3] = [Base::Ext2, Base::Ext4, Base::Ext4NoCsum];

impl Base {
    fn image(self) -> PathBuf {
        let (key, size, opts) = match self {
            Base::Ext2 => (
                "repair-base-ext2",
                16 * MIB,
                MkfsOpts::ext2().block_size(1024),
            ),
            Base::Ext4 => (
                "repair-base-ext4",
                32 * MIB,
                MkfsOpts::ext4().block_size(4096).blocks_per_group(2048),
            ),
            Base::Ext4NoCsum => (
                "repair-base-ext4-gdtcsum",
                16 * MIB,
                MkfsOpts::ext4()
                    .block_size(1024)
                    .features("^metadata_csum,uninit_bg"),
            ),
        };
        cached_image(key, |img| {
            mkfs(img, size, &opts, Some(&standard_tree_dir()));
            assert_eq!(e2fsck_fn(img), 0, "base {self:?} is not clean");
        })
    }
}

/// Files whose contents must survive every repair below (none of the
/// damages touches them).
const KEPT: [&str; 5] = ["f300k", "f70k", "dir1/sub/c", "dir1/b.bin", "f4096"];

fn assert_files_kept(ctx: &str, img: &Path) {
    let tree = standard_tree_dir();
    for f in KEPT {
        let want = std::fs::read(tree.join(f)).unwrap();
        let out = std::process::Command::new(tool("debugfs"))
            .arg("-R")
            .arg(format!("cat /{f}"))
            .arg(img)
            .output()
            .unwrap();
        assert!(out.stdout == want, "[{ctx}] /{f} changed by the repair");
    }
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

/// Damages a copy of `base` with `cmds` (computed from the clean image)
/// and returns the image path; the damage must be visible to both checkers.
fn damaged(tmp: &TempDir, base: Base, cmds: &[String]) -> PathBuf {
    damaged_with(tmp, base, |img| {
        debugfs_w_unchecked(img, cmds);
    })
}

fn damaged_with(tmp: &TempDir, base: Base, damage: impl FnOnce(&Path)) -> PathBuf {
    let img = tmp.join("disk.img");
    copy_image(&base.image(), &img);
    damage(&img);
    assert_ne!(e2fsck_fn(&img), 0, "{base:?}: e2fsck -fn sees no damage");
    img
}

/// The whole -fy round trip for one damage made with debugfs.
fn repairs(name: &str, base: Base, cmds: &[String]) {
    repairs_with(name, base, |img| {
        debugfs_w_unchecked(img, cmds);
    })
}

/// The whole -fy round trip for one damage.
fn repairs_with(name: &str, base: Base, damage: impl FnOnce(&Path)) {
    let ctx = format!("{name} on {base:?}");
    let tmp = TempDir::new(&format!("repair-{name}"));
    let img = damaged_with(&tmp, base, damage);
    let before = std::fs::read(&img).unwrap();
    let (code, text) = pfsck_run(&[OsStr::new("-fy"), img.as_os_str()]);
    assert_eq!(code, Some(1), "[{ctx}] pfsck -fy:\n{text}");
    assert!(
        text.contains("***** repairs written to the file system *****"),
        "[{ctx}]\n{text}"
    );
    assert!(text.contains("? yes\n"), "[{ctx}]\n{text}");
    assert_both_clean(&ctx, &img);
    assert_files_kept(&ctx, &img);

    let log = pfsck::store::default_undo_path(&img);
    assert!(log.exists(), "[{ctx}] no undo log at {}", log.display());
    let (code, text) = pfsck_run(&[OsStr::new("--rollback"), log.as_os_str(), img.as_os_str()]);
    assert_eq!(code, Some(0), "[{ctx}] rollback:\n{text}");
    assert!(
        std::fs::read(&img).unwrap() == before,
        "[{ctx}] rollback is not byte-exact"
    );
}

fn used_block(base: Base) -> u64 {
    blocks_of(&base.image(), "/f300k")[3]
}

/// The first block no file uses: in the first group, which is never
/// BLOCK_UNINIT (debugfs would not write the bitmap of an uninit group).
fn free_block(base: Base) -> u64 {
    let out = debugfs_r(&base.image(), "ffb 1 1");
    out.split_whitespace()
        .filter_map(|w| w.parse::<u64>().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no free block found: {out}"))
}

fn free_inode(base: Base) -> u64 {
    let out = debugfs_r(&base.image(), "ffi");
    out.split_whitespace()
        .filter_map(|w| w.parse::<u64>().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no free inode found: {out}"))
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn block_bitmap_bits_cleared() {
    for b in ALL {
        repairs("freeb", b, &[format!("freeb {} 4", used_block(b))]);
    }
}

#[test]
fn block_bitmap_bits_set() {
    for b in ALL {
        repairs("setb", b, &[format!("setb {} 3", free_block(b))]);
    }
}

#[test]
fn inode_bitmap_bits() {
    for b in ALL {
        let ino = inode_of(&b.image(), "/f70k");
        repairs("freei", b, &[format!("freei <{ino}>")]);
        repairs("seti", b, &[format!("seti <{}>", free_inode(b))]);
    }
}

#[test]
fn group_and_superblock_counts() {
    for b in ALL {
        repairs(
            "counts",
            b,
            &s(&[
                "set_bg 1 free_blocks_count 7",
                "set_bg 0 free_inodes_count 3",
                "set_bg 0 used_dirs_count 99",
                "ssv free_blocks_count 17",
                "ssv free_inodes_count 5",
            ]),
        );
    }
}

#[test]
fn descriptor_and_bitmap_checksums() {
    repairs(
        "gd-csum",
        Base::Ext4,
        &s(&["set_bg 0 checksum 0", "set_bg 1 checksum 7"]),
    );
    // debugfs recomputes gdt_csum checksums when it writes; damage the
    // crc16 of group 1 in place (1 KiB blocks: the table is block 2;
    // 64-byte descriptors).
    repairs_with("gd-crc16", Base::Ext4NoCsum, |img| {
        let off = 2 * 1024 + 64 + 0x1E;
        let old = read_at(img, off, 2);
        write_at(img, off, &[!old[0], old[1]]);
    });
    repairs(
        "bitmap-csum",
        Base::Ext4,
        &s(&[
            "set_bg 0 block_bitmap_csum 0",
            "set_bg 0 inode_bitmap_csum 1",
        ]),
    );
}

#[test]
fn link_counts() {
    for b in ALL {
        repairs(
            "links",
            b,
            &s(&["sif /small links_count 7", "sif /f4095 links_count 2"]),
        );
    }
}

#[test]
fn inode_fields_of_pass1() {
    for b in ALL {
        repairs(
            "dtime-size-blocks",
            b,
            &s(&[
                "sif /f4097 dtime 12345",
                "sif /f12k blocks 2",
                "sif /dir1/a.txt size 0",
            ]),
        );
    }
}

#[test]
fn many_damages_at_once() {
    for b in ALL {
        let ino = inode_of(&b.image(), "/f70k");
        repairs(
            "mixed",
            b,
            &[
                format!("freeb {} 2", used_block(b)),
                format!("freei <{ino}>"),
                "set_bg 1 free_blocks_count 1".into(),
                "sif /small links_count 1".into(),
                "sif /tiny dtime 1".into(),
                "ssv free_inodes_count 1".into(),
            ],
        );
    }
}

#[test]
fn preen_fixes_safe_damage() {
    let b = Base::Ext4;
    let tmp = TempDir::new("repair-preen-ok");
    let img = damaged(
        &tmp,
        b,
        &s(&["set_bg 1 free_blocks_count 7", "sif /small links_count 9"]),
    );
    let (code, text) = pfsck_run(&[OsStr::new("-fp"), img.as_os_str()]);
    assert_eq!(code, Some(1), "{text}");
    assert_both_clean("preen", &img);
    assert_files_kept("preen", &img);
}

#[test]
fn preen_refuses_unsafe_damage() {
    let b = Base::Ext4;
    let tmp = TempDir::new("repair-preen-unsafe");
    // An unattached non-empty inode is not preen-safe (e2fsck asks before
    // reconnecting it); the count damage alongside (pass 5, after it) must
    // not be written either: only the superblock's error state is, as
    // e2fsck's preenhalt writes it, and the undo log takes it back.
    let img = damaged(
        &tmp,
        b,
        &s(&["unlink /f70k", "set_bg 1 free_blocks_count 7"]),
    );
    let before = std::fs::read(&img).unwrap();
    let bs = dumpe2fs(&img).block_size as usize;
    for flag in ["-fp", "-fa"] {
        let (code, text) = pfsck_run(&[OsStr::new(flag), img.as_os_str()]);
        assert_eq!(code, Some(4), "{flag}: {text}");
        assert!(
            text.contains("STOPPED: a problem preen may not fix needs a person."),
            "{text}"
        );
        let after = std::fs::read(&img).unwrap();
        let changed: Vec<usize> = (0..before.len() / bs)
            .filter(|&k| before[k * bs..(k + 1) * bs] != after[k * bs..(k + 1) * bs])
            .collect();
        assert_eq!(changed, vec![0], "{flag} wrote more than the superblock");
        let state = u16::from_le_bytes([after[1024 + 0x3A], after[1024 + 0x3B]]);
        assert_eq!(state & 2, 2, "{flag}: no error state");
        let log = pfsck::store::default_undo_path(&img);
        let (rb, _) = pfsck_run(&[OsStr::new("--rollback"), log.as_os_str(), img.as_os_str()]);
        assert_eq!(rb, Some(0));
        assert!(std::fs::read(&img).unwrap() == before, "{flag}: rollback");
    }
}

/// An image with one damage no repair fixes (an inline directory whose
/// system.data sits in its xattr block with a size no store can correct:
/// e2fsck -fy exits 4 there as well) and a wrong link count, which is
/// fixed beside it.
fn unsupported_damaged(tmp: &TempDir) -> PathBuf {
    let img = tmp.join("disk.img");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext4()
            .block_size(1024)
            .inode_size(256)
            .features("inline_data,^metadata_csum"),
        Some(&standard_tree_dir()),
    );
    inline_dir_data_in_xattr_block(&img, tmp.path());
    debugfs_w(&img, &["sif /f70k links_count 9"]);
    img
}

#[test]
fn unsupported_damage_is_left_and_listed() {
    let tmp = TempDir::new("repair-unsupported");
    let img = unsupported_damaged(&tmp);
    let (code, text) = pfsck_run(&[OsStr::new("-fy"), img.as_os_str()]);
    // Errors left: 4 without the 1, as e2fsck, though a fix was written.
    assert_eq!(code, Some(4), "{text}");
    assert!(
        text.contains("its inline size cannot be corrected"),
        "{text}"
    );
    assert!(text.contains("? no\n"), "{text}");
    assert!(
        text.contains("WARNING: errors are left in the file system"),
        "{text}"
    );
    // The image still shows the damage to both checkers, alike.
    let e = e2fsck_fn(&img);
    assert_ne!(e, 0);
    let (code, _) = pfsck_run(&[OsStr::new("-fn"), img.as_os_str()]);
    assert_eq!(code, Some(e));
}

#[test]
fn clean_image_gets_only_the_check_record() {
    let tmp = TempDir::new("repair-clean");
    let img = tmp.join("disk.img");
    copy_image(&Base::Ext4.image(), &img);
    let before = std::fs::read(&img).unwrap();
    for flag in ["-fy", "-fp"] {
        let (code, text) = pfsck_run(&[OsStr::new(flag), img.as_os_str()]);
        assert_eq!(code, Some(0), "{flag}: {text}");
        assert!(!text.contains("repairs written"), "{text}");
    }
    // Only what e2fsck writes after any check (mount count, time), and
    // no undo log for it.
    assert_only_check_record_changed(&before, &std::fs::read(&img).unwrap());
    assert!(!pfsck::store::default_undo_path(&img).exists());
}

#[test]
fn modes_conflict_and_no_mode_needs_a_terminal() {
    let img = Base::Ext2.image();
    // Two modes: exit 8, as e2fsck 1.47.4 (a usage error, not 16).
    let (code, _) = pfsck_run(&[OsStr::new("-ny"), img.as_os_str()]);
    assert_eq!(code, Some(8));
    let (code, _) = pfsck_run(&[OsStr::new("-py"), img.as_os_str()]);
    assert_eq!(code, Some(8));
    // The test harness's stdin is not a terminal: e2fsck exits 8 here.
    let out = std::process::Command::new(pfsck_bin())
        .arg("-f")
        .arg(&img)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(8));
}

#[test]
fn inode_checksum_of_an_otherwise_valid_inode() {
    repairs_with("inode-csum", Base::Ext4, |img| {
        // i_generation is covered only by the checksum.
        let off = inode_offset(img, inode_of(img, "/small")) + 0x64;
        let old = read_at(img, off, 1);
        write_at(img, off, &[old[0] ^ 0x5a]);
    });
}

#[test]
fn json_marks_what_was_fixed() {
    let tmp = TempDir::new("repair-json");
    let img = unsupported_damaged(&tmp);
    let out = pfsck(&[OsStr::new("-fy"), OsStr::new("--json"), img.as_os_str()]);
    assert_eq!(out.status.code(), Some(4), "fixed one, left one");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["modified"], true);
    assert_eq!(v["exit_code"], 4);
    let probs = v["problems"].as_array().unwrap();
    let fixed = |code: &str| {
        probs
            .iter()
            .find(|p| p["code"] == code)
            .map(|p| p["fixed"].as_bool().unwrap())
    };
    assert_eq!(fixed("0x4003"), Some(true), "link count: {probs:?}");
    assert_eq!(fixed(STUCK), Some(false), "inline size: {probs:?}");
    let left = v["problems_after_repair"].as_array().unwrap();
    assert!(left.iter().any(|p| p["code"] == STUCK), "{left:?}");
}

#[test]
fn repair_is_the_same_for_any_thread_count() {
    let b = Base::Ext4;
    let tmp = TempDir::new("repair-threads");
    let ino = inode_of(&b.image(), "/f70k");
    let img = damaged(
        &tmp,
        b,
        &[
            format!("freeb {} 3", used_block(b)),
            format!("freei <{ino}>"),
            "sif /small links_count 4".into(),
            "set_bg 2 free_inodes_count 1".into(),
        ],
    );
    let mut results = Vec::new();
    for threads in ["1", "4"] {
        let copy = tmp.join(format!("copy-{threads}.img"));
        copy_image(&img, &copy);
        // One clock for both runs: the repair records the check's time.
        let out = std::process::Command::new(pfsck_bin())
            .env("PFSCK_TIME", "1700000000")
            .args([OsStr::new("-fy"), OsStr::new("-m"), OsStr::new(threads)])
            .arg(&copy)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let (code, text) = (
            out.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        );
        assert_eq!(code, Some(1), "{text}");
        results.push((
            std::fs::read(&copy).unwrap(),
            text.replace(&*copy.to_string_lossy(), "IMG"),
        ));
    }
    assert!(results[0].0 == results[1].0, "repaired images differ");
    assert_eq!(results[0].1, results[1].1, "reports differ");
}

#[test]
fn preen_without_force_skips_a_clean_file_system() {
    let tmp = TempDir::new("repair-preen-clean");
    let img = tmp.join("disk.img");
    copy_image(&Base::Ext2.image(), &img);
    let before = std::fs::read(&img).unwrap();
    let (code, text) = pfsck_run(&[OsStr::new("-p"), img.as_os_str()]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("clean"), "{text}");
    assert!(std::fs::read(&img).unwrap() == before);
}

/// A clean, unforced file system whose group descriptors e2fsck's
/// superblock check rejects (a descriptor checksum; uninit marks without
/// group checksums, as a fast-commit replay leaves them) is not skipped:
/// e2fsck fixes the descriptor and runs the full check (-p, -y: after the
/// fix, silently), or says why it checks (-n). pfsck said "clean" and
/// left them, e2fsck -fn then finding the bitmap differences the full
/// check repairs.
#[test]
fn bad_descriptors_are_not_skipped_as_clean() {
    let cases = [
        ("checksum", "", "set_bg 1 checksum 0x1234", 1, 4),
        (
            "uninit",
            "^metadata_csum,^uninit_bg",
            "set_bg 1 flags 1",
            0,
            0,
        ),
    ];
    for (name, features, damage, fixed_exit, n_exit) in cases {
        let tmp = TempDir::new(&format!("desc-noskip-{name}"));
        let img = tmp.join("disk.img");
        mkfs(&img, 32 << 20, &MkfsOpts::ext4().features(features), None);
        debugfs_w(&img, &[damage]);
        for (mode, want) in [("-p", fixed_exit), ("-y", fixed_exit), ("-n", n_exit)] {
            let copy = tmp.join(format!("{mode}.img"));
            copy_image(&img, &copy);
            let (code, text) = pfsck_run(&[OsStr::new(mode), copy.as_os_str()]);
            assert_eq!(code, Some(want), "[{name} {mode}] {text}");
            assert!(!text.contains("clean,"), "[{name} {mode}] {text}");
            assert!(
                text.contains("Pass 5") || mode == "-p",
                "[{name} {mode}] {text}"
            );
            if mode == "-n" {
                assert!(text.contains("file system with errors"), "[{name}] {text}");
            } else {
                assert_eq!(oracle_fn(&copy), 0, "[{name} {mode}] e2fsck -fn after");
                let e2 = tmp.join(format!("e{mode}.img"));
                copy_image(&img, &e2);
                assert_eq!(
                    oracle_run(&e2, &[mode]).code(),
                    code,
                    "[{name} {mode}] e2fsck"
                );
            }
        }
    }
}

/// `debugfs cat` of `path` in `img`.
fn cat(img: &Path, path: &str) -> Vec<u8> {
    std::process::Command::new(tool("debugfs"))
        .arg("-R")
        .arg(format!("cat {path}"))
        .arg(img)
        .output()
        .unwrap()
        .stdout
}

#[test]
fn unattached_inodes_and_unconnected_dirs_go_to_lost_found() {
    for b in ALL {
        let f4097 = inode_of(&b.image(), "/f4097");
        let many = inode_of(&b.image(), "/many");
        let emptydir = inode_of(&b.image(), "/emptydir");
        let empty = inode_of(&b.image(), "/empty");
        repairs(
            "lost+found",
            b,
            &s(&[
                "unlink /f4097",
                "unlink /many",
                "unlink /emptydir",
                "unlink /empty",
                "unlink /hardlink1",
            ]),
        );
        // `repairs` rolled its image back; repair a fresh copy and look at
        // what lost+found holds.
        let tmp = TempDir::new("repair-lf-contents");
        let img = damaged(
            &tmp,
            b,
            &s(&[
                "unlink /f4097",
                "unlink /many",
                "unlink /emptydir",
                "unlink /empty",
            ]),
        );
        let (code, text) = pfsck_run(&[OsStr::new("-fy"), img.as_os_str()]);
        assert_eq!(code, Some(1), "{b:?}: {text}");
        let tree = standard_tree_dir();
        assert!(
            cat(&img, &format!("/lost+found/#{f4097}"))
                == std::fs::read(tree.join("f4097")).unwrap(),
            "{b:?}: reconnected file lost its contents"
        );
        assert!(
            cat(
                &img,
                &format!("/lost+found/#{many}/entry-with-a-long-name-0010")
            ) == std::fs::read(tree.join("many/entry-with-a-long-name-0010")).unwrap(),
            "{b:?}: reconnected directory lost its entries"
        );
        assert_eq!(
            inode_of(&img, &format!("/lost+found/#{emptydir}")),
            emptydir
        );
        // The zero-length file is cleared, not reconnected.
        let ls = debugfs_r(&img, "ls /lost+found");
        assert!(!ls.contains(&format!("#{empty}")), "{b:?}: {ls}");
    }
}

#[test]
fn bad_directory_entries_are_removed_or_retyped() {
    for b in ALL {
        repairs(
            "entries",
            b,
            &s(&[
                // An entry naming a cleared inode (its blocks become free).
                "clri /f4097",
                // A second name for the root.
                "link <2> /dir1/rootlink",
                // The fifo's inode is now a regular file: the entry's type
                // is wrong.
                "sif /fifo mode 0100644",
            ]),
        );
    }
}

impl Base {
    fn block_size(self) -> u64 {
        match self {
            Base::Ext4 => 4096,
            Base::Ext2 | Base::Ext4NoCsum => 1024,
        }
    }
}

#[test]
fn wrong_dotdot_is_pointed_at_the_parent() {
    for b in ALL {
        let blk = blocks_of(&b.image(), "/dir1/sub/deeper")[0];
        // '..' is the second record of block 0, at byte 12: make it name
        // the root instead of /dir1/sub (with metadata_csum the block's
        // checksum breaks too; the fix rewrites it).
        repairs_with("dotdot", b, |img| {
            write_at(img, blk * b.block_size() + 12, &2u32.to_le_bytes());
        });
    }
}

#[test]
fn missing_lost_found_is_created_for_what_it_must_hold() {
    for b in ALL {
        let f4097 = inode_of(&b.image(), "/f4097");
        repairs(
            "mklf",
            b,
            &s(&["rmdir /lost+found", "unlink /f4097", "unlink /emptydir"]),
        );
        let tmp = TempDir::new("repair-mklf-contents");
        let img = damaged(&tmp, b, &s(&["rmdir /lost+found", "unlink /f4097"]));
        let (code, text) = pfsck_run(&[OsStr::new("-fy"), img.as_os_str()]);
        assert_eq!(code, Some(1), "{b:?}: {text}");
        assert!(
            cat(&img, &format!("/lost+found/#{f4097}"))
                == std::fs::read(standard_tree_dir().join("f4097")).unwrap(),
            "{b:?}: reconnected file lost its contents"
        );
    }
}

/// Replaces the first `from` in block 0 of directory `dir` with `to`.
fn edit_dir_name(img: &Path, base: Base, dir: &str, from: &[u8], to: &[u8]) {
    let blk = blocks_of(img, dir)[0];
    let bs = base.block_size();
    let b = read_at(img, blk * bs, bs as usize);
    let i = b
        .windows(from.len())
        .position(|w| w == from)
        .unwrap_or_else(|| panic!("{dir} has no {from:?}"));
    write_at(img, blk * bs + i as u64, to);
}

#[test]
fn illegal_characters_become_dots() {
    for b in ALL {
        repairs_with("illegal-chars", b, |img| {
            edit_dir_name(img, b, "/dir1", b"a.txt", b"a/tx\0");
        });
    }
}

#[test]
fn directory_block_failing_only_its_checksum() {
    repairs_with("dir-csum", Base::Ext4, |img| {
        edit_dir_name(img, Base::Ext4, "/dir1", b"a.txt", b"a.txu");
    });
}

#[test]
fn impossible_itable_unused_becomes_zero() {
    for b in [Base::Ext4, Base::Ext4NoCsum] {
        repairs("itable-unused", b, &s(&["set_bg 1 itable_unused 65000"]));
    }
}
