//! The defects of issue 13, each made from scratch (mkfs, debugfs -w, raw
//! writes) and judged against e2fsck 1.47.4 (`common::oracle`): pfsck's
//! `-fn` verdict must be the oracle's, and one `pfsck -fy` must leave a
//! file system the oracle finds clean, without freeing blocks a live file
//! still maps.

use crate::common::*;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// An ext4 image with 1 KiB blocks and one file `/f` of `len` bytes.
fn image_with_file(img: &Path, features: &str, len: usize) {
    mkfs(
        img,
        8 * MIB,
        &MkfsOpts::ext4().block_size(1024).features(features),
        None,
    );
    let data = img.with_extension("data");
    std::fs::write(&data, file_content("f", len)).unwrap();
    debugfs_w(img, &[format!("write {} f", data.display())]);
    std::fs::remove_file(&data).unwrap();
}

/// [`judged_by_oracle`] (which also checks that -fn writes nothing).
fn judged(ctx: &str, img: &Path, want: i32, want_fy: i32) -> (String, String) {
    judged_by_oracle(ctx, img, want, want_fy)
}

/// Whether every block of `first..first+len` is marked in use.
fn all_in_use(img: &Path, first: u64, len: u64) -> bool {
    let out = debugfs_r(img, &format!("testb {first} {len}"));
    !out.contains("not in use")
}

// ---- 1. extent trees deeper than the walker goes ----

/// A bit flip of a leaf root's eh_depth (0 → 256): e2fsck reads its
/// entries as index entries, finds them invalid and removes them, so the
/// file loses its blocks as e2fsck's repair loses them. Before, the walk
/// gave up: no problem on the inode, its blocks freed by pass 5 while the
/// inode still mapped them.
#[test]
fn extent_depth_bit_flip() {
    let tmp = TempDir::new("depth-flip");
    let img = tmp.join("disk.img");
    image_with_file(&img, "metadata_csum", 300_000);
    let blocks = blocks_of(&img, "/f");
    // i_block[1] holds eh_max (4) and eh_depth.
    debugfs_w(&img, &["sif /f block[1] 0x01000004"]);
    let damaged = tmp.join("damaged.img");
    copy_image(&img, &damaged);

    // Preen stops without freeing anything.
    let (code, out) = pfsck_code(&["-fp"], &img);
    assert_eq!(code, 4, "pfsck -fp:\n{out}");
    assert!(
        all_in_use(&img, blocks[0], blocks.len() as u64),
        "-fp freed blocks the inode maps:\n{out}"
    );

    copy_image(&damaged, &img);
    let (out, _) = judged("depth-flip", &img, 4, 1);
    assert!(
        out.contains("extent tree has depth 256; 5 would do"),
        "{out}"
    );
}

/// Writes a chain of `depth` extent nodes (one index entry each, the last
/// a leaf mapping `/f`'s one data block) on free blocks, with the root of
/// `/f` pointing at it, and the bitmap and counts updated: a valid tree,
/// only too deep.
fn deep_chain(img: &Path, depth: u16) {
    const BS: u64 = 1024;
    let data = blocks_of(img, "/f")[0];
    let free: Vec<u64> = debugfs_r(img, &format!("ffb {depth} 2000"))
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(free.len(), usize::from(depth));
    for (k, &blk) in free.iter().enumerate() {
        let d = depth - 1 - k as u16;
        let mut node = extent_header(1, 84, d);
        node.extend_from_slice(&0u32.to_le_bytes());
        if d == 0 {
            node.extend_from_slice(&1u16.to_le_bytes());
            node.extend_from_slice(&0u16.to_le_bytes());
            node.extend_from_slice(&(data as u32).to_le_bytes());
        } else {
            node.extend_from_slice(&(free[k + 1] as u32).to_le_bytes());
            node.extend_from_slice(&[0; 4]);
        }
        write_at(img, blk * BS, &node);
    }
    let mut root = extent_header(1, 4, depth);
    root.extend_from_slice(&0u32.to_le_bytes());
    root.extend_from_slice(&(free[0] as u32).to_le_bytes());
    root.resize(60, 0);
    let mut cmds: Vec<String> = root
        .chunks(4)
        .zip(
            (0..12)
                .map(|i| i.to_string())
                .chain(["IND", "DIND", "TIND"].map(String::from)),
        )
        .map(|(w, name)| {
            format!(
                "sif /f block[{name}] {}",
                u32::from_le_bytes([w[0], w[1], w[2], w[3]])
            )
        })
        .collect();
    cmds.push(format!("sif /f blocks {}", (u64::from(depth) + 1) * 2));
    cmds.push(format!("setb {} {depth}", free[0]));
    let stats = debugfs_r(img, "stats");
    let number_after = |key: &str| -> u64 {
        let at = stats.find(key).unwrap() + key.len();
        stats[at..]
            .split(|c: char| !c.is_ascii_digit())
            .find(|s| !s.is_empty())
            .unwrap()
            .parse()
            .unwrap()
    };
    let sb_free = number_after("Free blocks:");
    let g0_free = {
        let at = stats.find("Group  0:").unwrap();
        let line = &stats[at..];
        let end = line.find(" free blocks").unwrap();
        line[..end]
            .rsplit(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    cmds.push(format!(
        "set_bg 0 free_blocks_count {}",
        g0_free - u64::from(depth)
    ));
    cmds.push(format!(
        "ssv free_blocks_count {}",
        sb_free - u64::from(depth)
    ));
    debugfs_w(img, &cmds);
}

/// A valid chain deeper than the walk goes (33 levels and more): e2fsck
/// walks and rebuilds it; pfsck cannot read what is below its limit, so
/// it reports the tree and the repair clears the inode rather than let
/// pass 5 free blocks the inode still maps. Within the limit, the verdict
/// is e2fsck's (a tree that could be shallower is not an error).
#[test]
fn extent_chain_deeper_than_the_walk() {
    let tmp = TempDir::new("deep-chain");
    let img = tmp.join("disk.img");
    image_with_file(&img, "^metadata_csum", 100);
    let base = tmp.join("base.img");
    copy_image(&img, &base);

    deep_chain(&img, 20);
    let (code, out) = pfsck_code(&["-fn"], &img);
    assert_eq!((code, oracle_fn(&img)), (0, 0), "depth 20:\n{out}");

    copy_image(&base, &img);
    deep_chain(&img, 40);
    let (code, out) = pfsck_code(&["-fn"], &img);
    assert_eq!(code, 4, "depth 40:\n{out}");
    assert!(out.contains("too deep to check"), "{out}");
    let (code, out) = pfsck_code(&["-fy", "-z", tmp.join("undo").to_str().unwrap()], &img);
    assert_eq!(code, 1, "depth 40, -fy:\n{out}");
    assert_eq!(oracle_fn(&img), 0, "depth 40 after -fy:\n{out}");
}

// ---- 2. a journal inode with a bad block map ----

/// An extent of the journal (ext4) pointing outside the file system: e2fsck
/// walks the journal's whole map before it uses it, finds the map ends
/// before the size, and calls the journal invalid (-n: 12; -y: cleared
/// and recreated). Before, only its first block was read: the journal was
/// judged usable and pass 1 repaired inode 8 as an ordinary file, freeing
/// the blocks of the bad extent.
#[test]
fn journal_extent_out_of_range() {
    let tmp = TempDir::new("jnl-extent");
    let img = tmp.join("disk.img");
    image_with_file(&img, "metadata_csum", 1000);
    // i_block[8]: the low word of the second extent's start (mke2fs maps
    // the journal with three extents on this geometry).
    debugfs_w(&img, &["sif <8> block[8] 99999999"]);
    let (fn_out, _) = judged("jnl-extent", &img, 12, 1);
    assert!(
        fn_out.contains("The journal (inode 8) is unusable"),
        "{fn_out}"
    );
}

/// A direct pointer of an ext3 journal outside the file system: e2fsck's
/// walk stops there, the inode is not used, and the superblock's backup
/// of the map is (-y writes it back and fixes its i_blocks): the journal
/// keeps every block it had, none is freed.
#[test]
fn journal_block_map_restored_from_backup() {
    let tmp = TempDir::new("jnl-indirect");
    let img = tmp.join("disk.img");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext3().block_size(1024), None);
    let blocks = blocks_of(&img, "<8>");
    debugfs_w(&img, &["sif <8> block[5] 99999999"]);
    let (_, fy_out) = judged("jnl-indirect", &img, 4, 1);
    assert!(
        fy_out.contains("restored from the superblock's backup"),
        "{fy_out}"
    );
    for b in blocks {
        assert!(all_in_use(&img, b, 1), "journal block {b} freed:\n{fy_out}");
    }
}

// ---- 3. the journal superblock's fields ----

/// A fresh ext4 image (1 KiB blocks, internal journal) with the journal
/// superblock's big-endian words at `(offset, value)` rewritten.
fn journal_sb_patched(img: &Path, words: &[(u64, u32)]) {
    mkfs(img, 8 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    let jsb = debugfs_number(img, "bmap <8> 0");
    for &(off, v) in words {
        write_at(img, jsb * 1024 + off, &v.to_be_bytes());
    }
}

/// s_maxlen larger than the journal inode (the kernel refuses to mount
/// it): e2fsck calls the journal superblock corrupt (-n: 12, -y: fixed).
#[test]
fn journal_sb_maxlen_past_inode() {
    let tmp = TempDir::new("jsb-maxlen");
    let img = tmp.join("disk.img");
    journal_sb_patched(&img, &[(0x10, 2048)]);
    judged("jsb-maxlen", &img, 12, 1);
}

/// A huge s_nr_users on an internal v2 journal: e2fsck -n stops (12);
/// -y clears the fields past the v1 layout, which it does not count as
/// a correction (0).
#[test]
fn journal_sb_many_users() {
    let tmp = TempDir::new("jsb-users");
    let img = tmp.join("disk.img");
    journal_sb_patched(&img, &[(0x40, 0x10000)]);
    judged("jsb-users", &img, 12, 0);
}

/// A v1 journal superblock carrying v2 fields (a user, a feature):
/// e2fsck -n reads on (0), -y clears the fields (0), after which e2fsck no
/// longer mentions them.
#[test]
fn journal_sb_v1_with_v2_fields() {
    let tmp = TempDir::new("jsb-v1");
    let img = tmp.join("disk.img");
    journal_sb_patched(&img, &[(0x4, 3), (0x24, 1)]);
    judged("jsb-v1", &img, 0, 0);
    let after = oracle_run(&img, &["-fn"]);
    assert!(!after.stdout.contains("V1 journal"), "{}", after.stdout);
}

/// A journal superblock checksum (v3) that does not match: corrupt (12/1).
#[test]
fn journal_sb_bad_checksum() {
    let tmp = TempDir::new("jsb-csum");
    let img = tmp.join("disk.img");
    // incompat csum_v3, checksum type crc32c, a wrong checksum.
    journal_sb_patched(
        &img,
        &[(0x28, 0x10), (0x50, 0x0400_0000), (0xFC, 0x1234_5678)],
    );
    judged("jsb-csum", &img, 12, 1);
}

/// A bad block inside an ext3 journal's indirect block (the backup of
/// the map names the same indirect block): the journal is invalid (12),
/// cleared and recreated by -y; before, pass 1 repaired inode 8 as a file.
#[test]
fn journal_bad_block_in_indirect_block() {
    let tmp = TempDir::new("jnl-ind");
    let img = tmp.join("disk.img");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext3().block_size(1024), None);
    let ind = debugfs_number(&img, "bmap <8> 12");
    // The first pointer of the single indirect block.
    let ind_block = debugfs_r(&img, "stat <8>");
    let at = ind_block.find("(IND):").expect("an indirect block") + "(IND):".len();
    let ind_blk: u64 = ind_block[at..]
        .split(|c: char| !c.is_ascii_digit())
        .find(|s| !s.is_empty())
        .unwrap()
        .parse()
        .unwrap();
    assert_ne!(ind, ind_blk);
    write_at(&img, ind_blk * 1024 + 40, &99_999_999u32.to_le_bytes());
    judged("jnl-ind", &img, 12, 1);
}

// ---- 5. a zeroed primary superblock ----

/// e2fsck goes on from the first backup, whose descriptors are as old as
/// mkfs: its library reads every group as initialised then, so the
/// bitmaps of the groups never written differ (-n: 4). Before, pfsck
/// kept the backup's uninit flags and found nothing (0). -y writes the
/// primary back.
#[test]
fn zeroed_primary_superblock() {
    let tmp = TempDir::new("zero-sb");
    let img = tmp.join("disk.img");
    mkfs(&img, 32 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    write_at(&img, 1024, &[0u8; 1024]);
    let (fn_out, _) = judged("zero-sb", &img, 4, 1);
    assert!(fn_out.contains("using the copy at block 8193"), "{fn_out}");
    // The primary is back: debugfs opens the image without -b.
    assert!(debugfs_r(&img, "stats").contains("Filesystem magic number"));

    // Without group checksums nothing is uninitialised: still 0.
    let img2 = tmp.join("ext2.img");
    mkfs(&img2, 32 * MIB, &MkfsOpts::ext2().block_size(1024), None);
    write_at(&img2, 1024, &[0u8; 1024]);
    judged("zero-sb-ext2", &img2, 0, 1);
}

// ---- 4. multiple-mount protection ----

/// An ext4 image with MMP whose MMP block is rewritten by `edit` (the
/// checksum redone unless `bad_csum`).
fn mmp_image(img: &Path, edit: impl FnOnce(&mut pfsck::fs::mmp::Mmp), bad_csum: bool) {
    use pfsck::fs::mmp;
    mkfs(
        img,
        32 * MIB,
        &MkfsOpts::ext4().block_size(1024).features("mmp"),
        None,
    );
    let bytes = std::fs::read(img).unwrap();
    let sb = pfsck::fs::superblock::Superblock::parse(&bytes[1024..2048]);
    let at = (sb.mmp_block * 1024) as usize;
    let mut m = mmp::parse(&bytes[at..at + 1024]);
    edit(&mut m);
    let mut b = vec![0u8; 1024];
    mmp::write(&mut b, &m, Some(sb.csum_seed()));
    if bad_csum {
        b[0x3FC] ^= 0xFF;
    }
    write_at(img, at as u64, &b);
}

/// Another node's checker holds the file system (sequence "fsck"), or
/// the block names an unknown operation: e2fsck refuses in every mode
/// (12) and writes nothing. Before, pfsck ignored MMP and repaired.
#[test]
fn mmp_held_by_another_checker() {
    let tmp = TempDir::new("mmp-busy");
    let img = tmp.join("disk.img");
    for seq in [pfsck::fs::mmp::SEQ_FSCK, 0xF000_0000] {
        mmp_image(
            &img,
            |m| {
                m.seq = seq;
                m.nodename = "othernode".into();
            },
            false,
        );
        let before = std::fs::read(&img).unwrap();
        assert_eq!(oracle_fn(&img), 12);
        for mode in ["-fn", "-fy", "-fp"] {
            let (code, out) = pfsck_code(&[mode], &img);
            assert_eq!(code, 12, "pfsck {mode}, sequence {seq:x}:\n{out}");
            assert!(out.contains("MMP check failed"), "{out}");
        }
        assert!(
            std::fs::read(&img).unwrap() == before,
            "the image was written"
        );
    }
}

/// An invalid MMP block (bad magic, bad checksum): e2fsck -n stops (12),
/// -y rewrites it without counting a correction (0). A repair claims the
/// block and leaves it clean, with this node's name.
#[test]
fn mmp_invalid_block_rewritten() {
    let tmp = TempDir::new("mmp-bad");
    let img = tmp.join("disk.img");
    mmp_image(&img, |m| m.magic = 0x1234, false);
    judged("mmp-magic", &img, 12, 0);
    mmp_image(&img, |_| {}, true);
    judged("mmp-csum", &img, 12, 0);

    // A clean one is claimed and released by -y: clean, our node name.
    mmp_image(&img, |m| m.nodename = "othernode".into(), false);
    let (code, out) = pfsck_code(&["-fy"], &img);
    assert_eq!(code, 0, "{out}");
    let dump = debugfs_r(&img, "dump_mmp");
    assert!(dump.contains("ff4d4d50"), "{dump}");
    assert!(!dump.contains("othernode"), "{dump}");
}

/// Defect 7: an entry naming an inode `clri` zeroed. e2fsck 1.47.4 -fp
/// clears the entry (its code 0x020003 is PREEN_OK) and exits 1; pfsck
/// stopped preen there with UNEXPECTED INCONSISTENCY (exit 4) before its
/// preen flags came from e2fsck's table.
#[test]
fn preen_clears_entry_to_deleted_inode() {
    let tmp = TempDir::new("preen-deleted-entry");
    let img = tmp.join("disk.img");
    image_with_file(&img, "", 2000);
    debugfs_w(&img, &["clri f"]);
    let theirs = tmp.join("oracle.img");
    copy_image(&img, &theirs);

    let oracle = oracle_run(&theirs, &["-fp"]);
    assert_eq!(oracle.code(), Some(1), "e2fsck -fp:\n{}", oracle.stdout);
    assert!(
        oracle.stdout.contains("deleted/unused inode"),
        "{}",
        oracle.stdout
    );
    assert_eq!(oracle_fn(&theirs), 0);

    let (code, out) = pfsck_code(&["-fp"], &img);
    assert_eq!(code, 1, "pfsck -fp:\n{out}");
    assert!(out.contains("which is free"), "{out}");
    let after = oracle_run(&img, &["-fn"]);
    assert_eq!(
        after.code(),
        Some(0),
        "e2fsck -fn after pfsck -fp:\n{}\npfsck -fp:\n{out}",
        after.stdout
    );
}
