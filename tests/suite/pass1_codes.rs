//! Pass 1 codes of e2fsck's table (issue 13), each made from scratch:
//! e2fsck 1.47.4 `-fn` must log the code on the damaged image, pfsck
//! `-fn --json` must give the same set of codes, and after `pfsck -fy`
//! e2fsck must find the image clean.

use crate::common::*;
use crate::problem_codes::assert_same_codes;
use std::path::Path;

/// The codes agree, `-fn` gives exit `want` and writes nothing, and one
/// `pfsck -fy` (exit 1) leaves an image e2fsck 1.47.4 finds clean.
fn judged(ctx: &str, img: &Path, must: &[u32], want: i32) {
    assert_same_codes(img, must);
    if oracle().is_none() {
        return;
    }
    judged_by_oracle(ctx, img, want, 1);
}

/// A journal inode that is a FIFO on ext3: pass 0 reads the journal
/// through the superblock's copy of its block map, and pass 1 finds the
/// inode is not a regular file (0x010035); the repair makes it one.
#[test]
fn journal_inode_not_a_regular_file() {
    let tmp = TempDir::new("p1-journal-mode");
    let img = tmp.join("image");
    mkfs(&img, 16 << 20, &MkfsOpts::ext3(), None);
    debugfs_w(&img, &["sif <8> mode 010600"]);
    judged("journal-mode", &img, &[0x010035], 4);
}

/// A journal inode with a link count on a file system without a journal
/// (0x010034): the repair zeroes it.
#[test]
fn journal_inode_unused_but_holding_data() {
    let tmp = TempDir::new("p1-journal-unused");
    let img = tmp.join("image");
    mkfs(&img, 16 << 20, &MkfsOpts::ext2(), None);
    debugfs_w(&img, &["sif <8> links_count 1"]);
    judged("journal-unused", &img, &[0x010034], 4);
}

/// The user quota inode a FIFO (0x010062): its blocks are then not a
/// file's; the repair makes it a regular file again.
#[test]
fn quota_inode_not_a_regular_file() {
    let tmp = TempDir::new("p1-quota-mode");
    let img = tmp.join("image");
    mkfs(&img, 16 << 20, &MkfsOpts::ext4().features("quota"), None);
    debugfs_w(&img, &["sif <3> mode 010600"]);
    judged("quota-mode", &img, &[0x010062, 0x01000D], 4);
}

/// A quota inode with a link count without the quota feature (0x010063).
#[test]
fn quota_inode_unused_but_holding_data() {
    let tmp = TempDir::new("p1-quota-unused");
    let img = tmp.join("image");
    mkfs(&img, 16 << 20, &MkfsOpts::ext4(), None);
    debugfs_w(&img, &["sif <3> links_count 1"]);
    judged("quota-unused", &img, &[0x010063], 4);
}

/// Files with both INLINE_DATA_FL and EXTENTS_FL: e2fsck asks in turn
/// to drop the extent flag (the size fits inline: 0x010078), to drop both
/// (i_block could be a block map: 0x010079) and to clear the inode
/// (0x01007A), and for a FIFO to drop both flags (0x010076); -n hears
/// every question.
#[test]
fn inline_data_and_extent_flags_together() {
    let tmp = TempDir::new("p1-inline-extents");
    let img = tmp.join("image");
    let opts = MkfsOpts::ext4()
        .features("inline_data,^metadata_csum")
        .inode_size(256);
    mkfs(&img, 16 << 20, &opts, None);
    let small = tmp.join("small");
    std::fs::write(&small, b"hello").unwrap();
    let big = tmp.join("big");
    std::fs::write(&big, file_content("big", 5000)).unwrap();
    let mut cmds = vec![
        format!("write {} a", small.display()),
        format!("write {} b", big.display()),
        format!("write {} c", big.display()),
        "mknod p p".to_string(),
    ];
    for f in ["a", "b", "c", "p"] {
        cmds.push(format!("sif {f} flags 0x10080000"));
    }
    // b's i_block all zeros (a block map of holes), c's beyond the
    // file system.
    cmds.extend((0..5).map(|k| format!("sif b block[{k}] 0")));
    cmds.push("sif c block[0] 0xffffffff".to_string());
    debugfs_w(&img, &cmds);
    judged(
        "inline-extents",
        &img,
        &[0x010078, 0x010079, 0x01007A, 0x010076],
        4,
    );
}

/// A file larger than 4 GiB on a revision 0 file system: after pass 2
/// e2fsck asks for the large_file feature (0x020033), then to make the
/// file system's revision dynamic (0x010033); the repair does both.
#[test]
fn large_file_on_a_revision_0_file_system() {
    let tmp = TempDir::new("p1-rev0-large");
    let img = tmp.join("image");
    let mut opts = MkfsOpts::ext2();
    opts.extra_args = vec!["-r".into(), "0".into()];
    mkfs(&img, 8 << 20, &opts, None);
    let small = tmp.join("small");
    std::fs::write(&small, b"hello").unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} f", small.display()),
            "sif f size 4294967301".to_string(),
        ],
    );
    judged("rev0-large", &img, &[0x020033, 0x010033], 4);
}

/// A 1 KiB ext2 image whose bad blocks inode lists block 5000, its
/// indirect pointer then set to `ind`.
fn bad_blocks_inode_with_indirect(tmp: &TempDir, ind: u64) -> std::path::PathBuf {
    let img = tmp.join("image");
    mkfs(&img, 8 << 20, &MkfsOpts::ext2().block_size(1024), None);
    debugfs_w(
        &img,
        &[
            "setb 5000".to_string(),
            "sif <1> block[0] 5000".to_string(),
            "sif <1> size 1024".to_string(),
            "sif <1> blocks 2".to_string(),
            format!("sif <1> block[IND] {ind}"),
        ],
    );
    img
}

/// The bad blocks inode's indirect block is the bad block it lists
/// (0x010015): e2fsck -n asks whether to go on (0x010016) and stops
/// (exit 12); the repair zeroes the pointer.
#[test]
fn bad_blocks_inode_indirect_block_in_its_list() {
    let tmp = TempDir::new("p1-bb-ind-listed");
    let img = bad_blocks_inode_with_indirect(&tmp, 5000);
    judged("bb-ind-listed", &img, &[0x010013, 0x010015, 0x010016], 12);
}

/// The bad blocks inode's indirect block is an (unused) inode table
/// block (0x01004D).
#[test]
fn bad_blocks_inode_indirect_block_on_metadata() {
    let tmp = TempDir::new("p1-bb-ind-meta");
    let img = bad_blocks_inode_with_indirect(&tmp, 300);
    judged("bb-ind-meta", &img, &[0x010013, 0x01004D, 0x010016], 12);
}
