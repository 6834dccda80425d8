//! Block map repairs (`src/fix/blockmap.rs`): real images made with
//! `mkfs -d` from a generated tree, block pointers and extent trees damaged
//! with `debugfs -w` or raw writes, then one `pfsck -fy` must exit 1 and
//! leave an image both `e2fsck -fn` and `pfsck -fn` find clean, with every
//! file the damage did not touch unchanged.
//!
//! Bases: ext2 with 1 KiB blocks (direct, single and double indirect
//! blocks); ext4 with 1 KiB blocks and metadata_csum, holding a file
//! written every other block, whose 400 extents need a two-level tree
//! (root → one index node → five leaves).

use crate::common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;
const BS: u64 = 1024;

/// Extents in /frag: one data block every other block.
const FRAG_EXTENTS: u64 = 400;

fn tree() -> Vec<Node> {
    let mut t = vec![
        Node::file("big", 300 * 1024),
        Node::file("small", 20 * 1024),
        Node::file("keep1", 70 * 1024),
        Node::file("keep2", 5000),
        Node::dir("d"),
        Node::dir("wide"),
        Node::sparse(
            "frag",
            FRAG_EXTENTS * 2 * BS,
            &(0..FRAG_EXTENTS)
                .map(|k| (k * 2 * BS, BS))
                .collect::<Vec<_>>(),
        ),
    ];
    for i in 0..8 {
        t.push(Node::file(&format!("d/f{i}"), 100 + i * 10));
    }
    // Enough entries for a directory of several blocks.
    for i in 0..120 {
        t.push(Node::file(
            &format!("wide/entry-with-a-long-name-{i:04}"),
            10,
        ));
    }
    t
}

fn tree_dir() -> PathBuf {
    let dir = cache_dir().join("blockmap-tree");
    static ONCE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| build_tree(&dir, &tree()));
    dir
}

#[derive(Clone, Copy, Debug)]
enum Base {
    Ext2,
    Ext4,
}

impl Base {
    fn image(self) -> PathBuf {
        let (key, size, opts) = match self {
            Base::Ext2 => ("blockmap-ext2", 8 * MIB, MkfsOpts::ext2().block_size(1024)),
            Base::Ext4 => (
                "blockmap-ext4",
                16 * MIB,
                MkfsOpts::ext4().block_size(1024).features("metadata_csum"),
            ),
        };
        cached_image(key, |img| {
            mkfs(img, size, &opts, Some(&tree_dir()));
            assert_eq!(e2fsck_fn(img), 0, "base {self:?} is not clean");
        })
    }
}

/// Files compared with the tree after every repair, except those a case
/// damages.
const FILES: [&str; 6] = ["big", "small", "keep1", "keep2", "frag", "d/f3"];

fn assert_files_kept(ctx: &str, img: &Path, damaged: &[&str]) {
    let tree = tree_dir();
    for f in FILES.iter().filter(|f| !damaged.contains(f)) {
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

/// Damages a copy of `base`, checks that e2fsck sees it, repairs it with
/// one `pfsck -fy` and checks the result. Returns pfsck's output.
fn repairs(name: &str, base: Base, damaged_files: &[&str], damage: impl FnOnce(&Path)) -> String {
    repairs_exiting(name, base, damaged_files, 1, damage)
}

/// [`repairs`], with the exit `pfsck -fy` must give.
fn repairs_exiting(
    name: &str,
    base: Base,
    damaged_files: &[&str],
    want: i32,
    damage: impl FnOnce(&Path),
) -> String {
    let ctx = format!("{name} on {base:?}");
    let tmp = TempDir::new(&format!("blockmap-{name}"));
    let img = tmp.join("disk.img");
    copy_image(&base.image(), &img);
    damage(&img);
    assert_ne!(e2fsck_fn(&img), 0, "[{ctx}] e2fsck -fn sees no damage");
    let out = pfsck(&[OsStr::new("-fy"), img.as_os_str()]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(want), "[{ctx}] pfsck -fy:\n{text}");
    assert_both_clean(&ctx, &img);
    assert_files_kept(&ctx, &img, damaged_files);
    text
}

fn write_u32(img: &Path, off: u64, v: u32) {
    write_at(img, off, &v.to_le_bytes());
}

/// The blocks `debugfs stat` lists under a tag such as "IND" or "ETB1",
/// in the order listed.
fn tagged_blocks(img: &Path, path: &str, tag: &str) -> Vec<u64> {
    let text = debugfs_r(img, &format!("stat {path}"));
    let key = format!("({tag}):");
    text.match_indices(&key)
        .filter_map(|(i, _)| {
            text[i + key.len()..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok())
        })
        .collect()
}

fn sif(path: &str, field: &str, v: u64) -> String {
    format!("sif {path} {field} {v}")
}

#[test]
fn illegal_direct_pointer_is_zeroed() {
    let text = repairs("direct", Base::Ext2, &["big"], |img| {
        debugfs_w(img, &[sif("/big", "block[2]", 99_999_999)]);
    });
    assert!(text.contains("Block #2 (99999999) of inode"), "{text}");
}

#[test]
fn illegal_pointer_in_an_indirect_block_is_zeroed() {
    let base = Base::Ext2;
    let ind = tagged_blocks(&base.image(), "/big", "IND")[0];
    let dind = tagged_blocks(&base.image(), "/big", "DIND")[0];
    repairs("indirect", base, &["big"], |img| {
        write_u32(img, ind * BS + 8, 77_777_777);
        // And a whole illegal indirect block below the double indirect one.
        write_u32(img, dind * BS, 0xFFFF_FFF0);
    });
}

#[test]
fn too_many_illegal_blocks_clear_the_inode() {
    let text = repairs("toomany", Base::Ext2, &["big"], |img| {
        let mut cmds: Vec<String> = (0..12)
            .map(|i| sif("/big", &format!("block[{i}]"), 9_999_999))
            .collect();
        cmds.push(sif("/big", "block[IND]", 9_999_999));
        debugfs_w(img, &cmds);
    });
    assert!(text.contains("maps too many blocks it may not"), "{text}");
    // The entry naming the cleared inode went in a later round.
    assert!(text.contains("which is free"), "{text}");
}

#[test]
fn extent_with_a_bad_start_block_is_removed() {
    let base = Base::Ext4;
    let leaves = tagged_blocks(&base.image(), "/frag", "ETB1");
    assert_eq!(leaves.len(), 5, "expected five leaves");
    repairs("leafbad", base, &["frag"], |img| {
        write_u32(img, leaves[1] * BS + 12 + 12 * 3 + 8, 0xFFFF_FFF0);
    });
}

#[test]
fn leaf_with_a_bad_magic_is_dropped() {
    let base = Base::Ext4;
    let leaves = tagged_blocks(&base.image(), "/frag", "ETB1");
    repairs("leafmagic", base, &["frag"], |img| {
        write_at(img, leaves[2] * BS, &[0, 0]);
    });
}

#[test]
fn index_to_an_illegal_block_is_removed() {
    let base = Base::Ext4;
    let index = tagged_blocks(&base.image(), "/frag", "ETB0")[0];
    repairs("indexbad", base, &["frag"], |img| {
        write_u32(img, index * BS + 12 + 12 * 2 + 4, 0xFFFF_FFF0);
    });
}

#[test]
fn removing_every_leaf_leaves_an_empty_root() {
    let base = Base::Ext4;
    let leaves = tagged_blocks(&base.image(), "/frag", "ETB1");
    repairs("allleaves", base, &["frag"], |img| {
        for l in &leaves {
            write_at(img, l * BS, &[0, 0]);
        }
    });
}

#[test]
fn index_start_moves_to_its_child() {
    let base = Base::Ext4;
    let index = tagged_blocks(&base.image(), "/frag", "ETB0")[0];
    let text = repairs("indexstart", base, &[], |img| {
        let off = index * BS + 12 + 12;
        let first = u32::from_le_bytes(read_at(img, off, 4).try_into().unwrap());
        write_u32(img, off, first + 3);
    });
    // The child's extents all stay: only the index moved.
    assert!(!text.contains("out of order"), "{text}");
}

#[test]
fn bad_checksum_of_a_valid_node_is_recomputed() {
    let base = Base::Ext4;
    let leaves = tagged_blocks(&base.image(), "/frag", "ETB1");
    let last = *leaves.last().unwrap();
    // e2fsck writes the block through its extent handle, without marking
    // the file system changed: exit 0, as its own.
    let text = repairs_exiting("csum", base, &[], 0, |img| {
        // A byte in an unused slot: the node stays valid.
        write_at(img, last * BS + 12 + 12 * 80, &[0x55]);
    });
    assert!(text.contains("is sound apart from its checksum"), "{text}");
    assert!(!text.contains("repairs written"), "{text}");
}

#[test]
fn zero_length_extent_in_the_root_is_removed() {
    repairs("zerolen", Base::Ext4, &["small"], |img| {
        // i_block[4]: the first extent's length and high start bits.
        debugfs_w(img, &[sif("/small", "block[4]", 0)]);
    });
}

#[test]
fn uninitialized_extent_of_a_directory_is_initialized() {
    let base = Base::Ext4;
    let len = debugfs_r(&base.image(), "stat /d");
    assert!(len.contains("EXTENTS"), "{len}");
    repairs("uninitdir", base, &[], |img| {
        debugfs_w(img, &[sif("/d", "block[4]", 32768 + 1)]);
    });
}

#[test]
fn extent_directory_hole_is_closed() {
    let base = Base::Ext4;
    let blocks = blocks_of(&base.image(), "/wide");
    assert!(blocks.len() >= 3, "/wide has {} blocks", blocks.len());
    repairs("exthole", base, &[], |img| {
        // The directory's only extent starts at logical 2 instead of 0.
        debugfs_w(img, &[sif("/wide", "block[3]", 2)]);
    });
}

#[test]
fn block_mapped_directory_hole_gets_a_block() {
    let base = Base::Ext2;
    let blocks = blocks_of(&base.image(), "/wide");
    assert!(blocks.len() >= 3, "/wide has {} blocks", blocks.len());
    let text = repairs("indhole", base, &[], |img| {
        debugfs_w(img, &[sif("/wide", "block[1]", 0)]);
    });
    assert!(text.contains("no block at #1"), "{text}");
}

#[test]
fn invalid_root_header_clears_the_inode() {
    let text = repairs("rootmagic", Base::Ext4, &["small"], |img| {
        debugfs_w(img, &[sif("/small", "block[0]", 0x1234)]);
    });
    assert!(text.contains("which is free"), "{text}");
}

#[test]
fn directory_block_past_the_size_limit_is_cleared() {
    let base = Base::Ext2;
    let free: Vec<u64> = debugfs_r(&base.image(), "ffb 4 4000")
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(free.len() >= 4, "no free blocks: {free:?}");
    let (tind, dind, ind, data) = (free[0], free[1], free[2], free[3]);
    let text = repairs("toobig", base, &[], |img| {
        for b in [tind, dind, ind, data] {
            write_at(img, b * BS, &[0u8; BS as usize]);
        }
        // Slot 40 of the triple indirect block starts past logical
        // 2^21, the limit of a directory without large_dir.
        write_u32(img, tind * BS + 4 * 40, dind as u32);
        write_u32(img, dind * BS, ind as u32);
        write_u32(img, ind * BS, data as u32);
        debugfs_w(
            img,
            &[
                sif("/wide", "block[TIND]", tind),
                format!("setb {tind}"),
                format!("setb {dind}"),
                format!("setb {ind}"),
                format!("setb {data}"),
            ],
        );
    });
    assert!(
        text.contains("lies past the largest directory size.  CLEARED."),
        "{text}"
    );
}

/// The inode table block holding inode `ino`.
fn itable_block(img: &Path, ino: u64) -> u64 {
    imap(img, ino).0
}

/// Makes inode 1 list one bad block.
fn bad_block_list(blk: u64) -> Vec<String> {
    vec![
        sif("<1>", "block[0]", blk),
        sif("<1>", "size", BS),
        sif("<1>", "blocks", BS / 512),
    ]
}

#[test]
fn bad_block_list_naming_its_own_inode_is_cleared() {
    let base = Base::Ext2;
    let blk = itable_block(&base.image(), 1);
    let text = repairs("bbinbb", base, &[], |img| {
        debugfs_w(img, &bad_block_list(blk));
    });
    assert!(text.contains("bad block list inode is bad"), "{text}");
}

#[test]
fn inodes_in_a_bad_inode_table_block_lose_their_entries() {
    let base = Base::Ext2;
    let ino = inode_of(&base.image(), "/d/f3");
    let blk = itable_block(&base.image(), ino);
    let text = repairs("bbitable", base, &["d/f3"], |img| {
        debugfs_w(img, &bad_block_list(blk));
    });
    assert!(text.contains("stored in a bad block"), "{text}");
}

#[test]
fn bitmap_on_a_bad_block_moves() {
    let base = Base::Ext2;
    let info = debugfs_r(&base.image(), "stats");
    let ibitmap: u64 = info
        .split_once("inode bitmap at ")
        .and_then(|(_, r)| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no inode bitmap in:\n{info}"));
    repairs("bbbitmap", base, &[], |img| {
        debugfs_w(img, &bad_block_list(ibitmap));
    });
}

#[test]
fn bitmaps_outside_their_group_move() {
    for (field, code) in [
        ("block_bitmap", "block bitmap"),
        ("inode_bitmap", "inode bitmap"),
    ] {
        let text = repairs(&format!("moved-{field}"), Base::Ext2, &[], |img| {
            debugfs_w(img, &[format!("set_bg 0 {field} 9000")]);
        });
        assert!(
            text.contains(&format!(
                "Group 0's {code} (block 9000) lies outside the group"
            )),
            "{text}"
        );
    }
}

#[test]
fn inode_table_outside_its_group_moves_and_starts_empty() {
    // Two groups; the second's inode table pointed out of the file system.
    let tmp = TempDir::new("blockmap-itable");
    let img = tmp.join("disk.img");
    mkfs(
        &img,
        4 * MIB,
        &MkfsOpts::ext2().block_size(1024).blocks_per_group(2048),
        None,
    );
    debugfs_w(
        &img,
        &["mkdir /a", "mkdir /b", "set_bg 1 inode_table 99999"],
    );
    assert_ne!(e2fsck_fn(&img), 0);
    let out = pfsck(&[OsStr::new("-fy"), img.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    // Like e2fsck, pfsck first looks for the backup descriptors where the
    // primary superblock says group 1 starts; they are intact here, so the
    // primary table is restored from them instead of the table moved.
    assert!(
        text.contains("Group 1's inode table") || text.contains("using the copy at block"),
        "{text}"
    );
    assert_both_clean("itable", &img);
}
