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
