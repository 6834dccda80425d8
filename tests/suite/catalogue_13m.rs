//! Problems of e2fsck 1.47.4's catalogue (issue 13) that pfsck reported
//! and left under `-y` where e2fsck repairs them, or that e2fsck itself
//! leaves: each made on a fresh file system and judged against e2fsck.

use crate::catalogue_13j::repaired_as_e2fsck;
use crate::common::*;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// A directory `d` holding files aa, bb and cc (13, 14 and 15).
fn three_files(img: &Path, opts: &MkfsOpts) {
    mkfs(img, 8 * MIB, opts, None);
    let data = img.with_extension("data");
    std::fs::write(&data, b"hi\n").unwrap();
    let mut cmds = vec!["mkdir d".to_string()];
    for f in ["aa", "bb", "cc"] {
        cmds.push(format!("write {} d/{f}", data.display()));
    }
    debugfs_w(img, &cmds);
}

/// 0x02001D: e2fsck's salvage gives the rest of an entry area to the
/// entry before a broken record (a rec_len not a multiple of 4) and then
/// walks on from the end of a whole block; where the area ends earlier
/// (before a checksum tail, or an inline directory's 60 bytes) it finds
/// the last rec_len wrong and sets the broken record's rec_len, inside
/// the entry before it by then. -n stops at the salvage (12); -y salvages,
/// sets it, and connects the files the salvage dropped (1). pfsck's
/// repair must leave the same bytes.
#[test]
fn salvage_before_the_area_end_sets_the_last_rec_len() {
    let tmp = TempDir::new("c13m-final-reclen");
    // The directory block, with a tail: bb's rec_len at 36 + 4.
    let img = tmp.join("block");
    three_files(
        &img,
        &MkfsOpts::ext4()
            .block_size(1024)
            .features("metadata_csum,^inline_data"),
    );
    let blk = debugfs_number(&img, "bmap d 0");
    let at = blk * 1024;
    write_at(&img, at + 40, &13u16.to_le_bytes());
    let (out, mine) = repaired_as_e2fsck("block", &img, 12, 1);
    assert!(out.contains("rec_len 13, to be 25"), "{out}");
    let theirs = img.with_extension("oracle");
    if oracle().is_some() {
        assert_eq!(read_at(&mine, at, 1024), read_at(&theirs, at, 1024));
    }

    // An inline directory: bb's rec_len at i_block 16 + 4 (word 5).
    let img = tmp.join("inline");
    three_files(
        &img,
        &MkfsOpts::ext4()
            .block_size(1024)
            .inode_size(256)
            .features("inline_data,metadata_csum"),
    );
    debugfs_w(&img, &["sif d block[5] 0x0102000d"]);
    let (out, mine) = repaired_as_e2fsck("inline", &img, 12, 1);
    assert!(out.contains("rec_len 13, to be 977"), "{out}");
    let theirs = img.with_extension("oracle");
    if oracle().is_some() {
        let ino = inode_offset(&img, 12);
        assert_eq!(read_at(&mine, ino, 256), read_at(&theirs, ino, 256));
    }
}

/// 0x03001D is never asked by e2fsck 1.47.4: a loop of 2100 directories
/// cut off from the root (the top one unlinked from / and linked from the
/// deepest) passes its 2048-parent limit, yet e2fsck only sets the top's
/// '..' to the parent pass 2 found (0x030005), and leaves the loop. pfsck
/// does the same.
#[test]
fn directory_loop_is_left_as_e2fsck_leaves_it() {
    let tmp = TempDir::new("c13m-dir-loop");
    let img = tmp.join("image");
    mkfs(
        &img,
        32 * MIB,
        &MkfsOpts::ext4().block_size(1024).inodes(4096),
        None,
    );
    let depth = 2100;
    let mut cmds = Vec::new();
    for _ in 0..depth {
        cmds.push("mkdir c".to_string());
        cmds.push("cd c".to_string());
    }
    cmds.push("cd /".to_string());
    cmds.push(format!("link c /{}x", "c/".repeat(depth)));
    cmds.push("unlink c".to_string());
    debugfs_w(&img, &cmds);
    crate::problem_codes::assert_same_codes(&img, &[0x030005]);
    repaired_as_e2fsck("loop", &img, 4, 1);
}

/// 0x01000F is never asked by e2fsck 1.47.4: a file's block on group 0's
/// block bitmap is a block claimed twice, shared with the file system's
/// metadata; pass 1D copies it (exit 1). pfsck the same.
#[test]
fn file_block_on_metadata_is_a_shared_block() {
    let tmp = TempDir::new("c13m-block-on-meta");
    let img = tmp.join("image");
    three_files(&img, &MkfsOpts::ext4().block_size(1024));
    let stats = debugfs_r(&img, "stats");
    let bitmap: u64 = stats
        .lines()
        .find_map(|l| l.trim().strip_prefix("Group  0: block bitmap at "))
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no block bitmap in:\n{stats}"));
    // The first extent's start (i_block word 5) moved onto the bitmap.
    debugfs_w(&img, &[format!("sif d/aa block[5] {bitmap}")]);
    crate::problem_codes::assert_same_codes(&img, &[0x011001]);
    repaired_as_e2fsck("block-on-meta", &img, 4, 1);
}

/// 0x020020 is left as e2fsck leaves it on an image file: a directory
/// block fails to read only past the file's end (here d's block, moved
/// near the end of a file system whose image is then cut short). e2fsck
/// -n declines to abort at the file system being larger than the device
/// (0x000005), then declines to go on at the block (exit 12); -y stops
/// at 0x000005 before pass 2, exit 8. pfsck does both.
#[test]
fn unreadable_directory_block_stops_before_pass_2() {
    let tmp = TempDir::new("c13m-dir-unreadable");
    let img = tmp.join("image");
    three_files(&img, &MkfsOpts::ext4().block_size(1024));
    let old = debugfs_number(&img, "bmap d 0");
    let new = 8150u64;
    write_at(&img, new * 1024, &read_at(&img, old * 1024, 1024));
    debugfs_w(
        &img,
        &[
            format!("sif d block[5] {new}"),
            format!("freeb {old}"),
            format!("setb {new}"),
        ],
    );
    std::fs::OpenOptions::new()
        .write(true)
        .open(&img)
        .unwrap()
        .set_len(8100 * 1024)
        .unwrap();
    if let Some(codes) = e2fsck_codes(&img, &["-fn"]) {
        assert!(codes.contains(&0x020020), "{codes:x?}");
    }
    let (out, mine) = both_exit(&img, &["-fy"], 8);
    assert!(out.contains("8192 blocks"), "{out}");
    assert_eq!(hash_file(&mine), hash_file(&img), "pfsck -fy wrote");
    let (out, _) = both_exit(&img, &["-fn"], 12);
    assert!(
        out.contains("Directory block 8150 (inode 12) cannot be read"),
        "{out}"
    );
}
