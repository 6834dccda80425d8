//! Exit codes and verdicts of the differential fuzzer's seed fz36
//! (damages 0-19999) where pfsck and e2fsck 1.47.4 still differed after
//! the first round of fixes: each damage made again from scratch with the
//! real tools and judged against e2fsck.

use crate::common::*;

const MIB: u64 = 1 << 20;

/// pfsck -fn's e2fsck codes and e2fsck -fn's problem log, each sorted.
fn same_codes_as_e2fsck(name: &str, img: &std::path::Path) {
    let Some((_, log)) = e2fsck_logged(img, &["-fn"]) else {
        return;
    };
    let json = pfsck(&["-fn".as_ref(), "--json".as_ref(), img.as_os_str()]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let (mut want, mut got) = (log_codes(&log), report_e2fsck_codes(&json));
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want, "[{name}] pfsck's codes, then e2fsck's");
}

/// A 64bit file system of one group whose descriptor size is a power of
/// two below 64 (seed fz36, damage 16565: `s_desc_size` 16). libext2fs
/// refuses the size, e2fsck loads the superblock again overlooking its
/// errors, and with a single group the descriptor is read in place: the
/// check goes on, finding only the descriptor's checksum wrong (it now
/// covers the descriptor size's bytes), which -n declines with exit 0 and
/// -y rewrites. pfsck refused the file system (8). A size that is no
/// power of two stays refused by both (8).
#[test]
fn small_desc_size_on_one_group_read_despite_errors() {
    let tmp = TempDir::new("fz36j-desc-size");
    let base = tmp.join("base");
    mkfs(
        &base,
        16 * MIB,
        &MkfsOpts::ext4().block_size(4096).features("64bit"),
        Some(&standard_tree_dir()),
    );
    for size in [16, 32, 1] {
        let name = format!("desc_size {size}");
        let img = tmp.join(format!("d{size}"));
        copy_image(&base, &img);
        debugfs_w(&img, &[format!("ssv desc_size {size}")]);
        same_codes_as_e2fsck(&name, &img);
        let (out, fixed) = judged_by_oracle(&name, &img, 0, 0);
        assert!(
            out.contains("Group descriptor checksums are wrong (first: group 0)"),
            "[{name}] {out}"
        );
        assert!(fixed.contains("Fix? yes"), "[{name}] {fixed}");
        // The size is left as it is, as e2fsck leaves it.
        let sb = read_at(&img, 1024 + 0xFE, 2);
        assert_eq!(
            u32::from(u16::from_le_bytes([sb[0], sb[1]])),
            size,
            "[{name}]"
        );
    }
    let img = tmp.join("d48");
    copy_image(&base, &img);
    debugfs_w(&img, &["ssv desc_size 48"]);
    both_exit(&img, &["-fn"], 8);
}

/// The user quota inode, unused (no quota feature), with only the high
/// 16 bits of its block count set (seed fz36, damage 14820: 64 bytes of
/// inode 3 overwritten). e2fsck asks whether an unused quota inode holds
/// data by its links, the low 32 bits of its block count and its first
/// block pointer: nothing to it here (exit 0). pfsck read the whole
/// 48-bit count and reported the inode (exit 4). Set in the low half,
/// both report it.
#[test]
fn unused_quota_inode_judged_by_low_block_count() {
    let tmp = TempDir::new("fz36j-quota-blocks-hi");
    let base = tmp.join("base");
    mkfs(
        &base,
        12 * MIB,
        &MkfsOpts::ext4()
            .block_size(1024)
            .features("^metadata_csum,^quota"),
        None,
    );
    let img = tmp.join("hi");
    copy_image(&base, &img);
    // l_i_blocks_hi, and the high half of the size, which e2fsck does
    // not judge on an unused reserved inode either.
    write_at(&img, inode_offset(&img, 3) + 0x74, &[0xff, 0xff]);
    write_at(&img, inode_offset(&img, 3) + 0x6c, &[0xff; 4]);
    same_codes_as_e2fsck("blocks_hi", &img);
    let (out, _) = judged_by_oracle("blocks_hi", &img, 0, 0);
    assert!(!out.contains("Inode 3"), "{out}");
    let img = tmp.join("lo");
    copy_image(&base, &img);
    write_at(&img, inode_offset(&img, 3) + 0x1c, &[2]);
    same_codes_as_e2fsck("blocks_lo", &img);
    let (out, _) = judged_by_oracle("blocks_lo", &img, 4, 1);
    assert!(
        out.contains("Reserved inode 3 (quota inode is not in use, but contains data)"),
        "{out}"
    );
}

/// A first data block of 1 written into a 4 KiB file system's superblock
/// (seed fz36, damages 13960, 7446). libext2fs reads the primary's
/// descriptor table after the first data block, from block 2 here (a
/// reserved GDT block), not after the superblock: the descriptors it
/// gets are bad, there is no backup with a single group, and with them
/// the journal inode has no valid location. e2fsck's journal check comes
/// before its check of the first data block: -n may not clear the
/// journal and cannot proceed (12). pfsck read the table at block 1,
/// found the journal sound and stopped at the first data block (8).
#[test]
fn first_data_block_moves_the_primary_descriptor_table() {
    let tmp = TempDir::new("fz36j-fdb-table");
    let img = tmp.join("img");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4()
            .block_size(4096)
            .features("^metadata_csum,^64bit"),
        None,
    );
    // s_first_data_block, written raw: debugfs would move the table too.
    write_at(&img, 1024 + 0x14, &1u32.to_le_bytes());
    same_codes_as_e2fsck("fdb 1", &img);
    let (out, _) = both_exit(&img, &["-fn"], 12);
    assert!(
        out.contains("The journal (inode 8) is unusable")
            && out.contains("cannot proceed with the file system check"),
        "{out}"
    );
    assert!(!out.contains("first data block"), "{out}");
}

/// More inodes per group than one bitmap block holds, written into the
/// primary superblock of a file system of several groups (seed fz36,
/// damages 10085, 18748: ext2, 1 KiB blocks, `-g 2048`). libext2fs
/// refuses the primary (its inodes count no longer matches), finds no
/// backup at block 8193, then loads the primary overlooking its errors:
/// there it bounds the inode table's blocks, not the inodes by a bitmap
/// block, and its check of the descriptors sends e2fsck to the backup
/// of group 1, which it checks through (4: counts the backup does not
/// know). pfsck refused the primary even overlooking its errors (8).
#[test]
fn inodes_per_group_beyond_a_bitmap_read_despite_errors() {
    let tmp = TempDir::new("fz36j-ipg-bitmap");
    let img = tmp.join("img");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext2().block_size(1024).blocks_per_group(2048),
        None,
    );
    // A file the backups do not count.
    let data = tmp.join("data");
    std::fs::write(&data, vec![7u8; 5000]).unwrap();
    debugfs_w(&img, &[format!("write {} f", data.display())]);
    write_at(&img, 1024 + 0x28, &8704u32.to_le_bytes());
    same_codes_as_e2fsck("ipg 8704", &img);
    let (out, _) = judged_by_oracle("ipg 8704", &img, 4, 1);
    assert!(
        out.contains("The primary superblock is unusable")
            && out.contains("using the copy at block 2049"),
        "{out}"
    );
}

/// A journal extent grown over the next one (seed fz36, damage 14760:
/// the journal's second extent made 271 blocks long, its third now out
/// of order). e2fsck's walk of the journal's map goes through every
/// extent in the tree's order, so the map still reaches the journal's
/// size and the journal is used; pass 1 then finds the extents out of
/// order (4). pfsck's walk skipped the extent pass 1 rejects, found the
/// map too short, called the journal unusable and could not proceed
/// under -n (12).
#[test]
fn journal_extent_out_of_order_still_reaches_its_size() {
    let tmp = TempDir::new("fz36j-journal-order");
    let img = tmp.join("img");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4()
            .block_size(4096)
            .features("^metadata_csum,^64bit"),
        None,
    );
    let extents = debugfs_r(&img, "ex <8>");
    assert!(
        extents.contains(" 2/  3    10 -    24"),
        "mke2fs laid the journal out otherwise:\n{extents}"
    );
    // ee_len of the second entry of the tree in i_block.
    write_at(
        &img,
        inode_offset(&img, 8) + 0x28 + 12 + 12 + 4,
        &271u16.to_le_bytes(),
    );
    same_codes_as_e2fsck("journal order", &img);
    let (out, _) = judged_by_oracle("journal order", &img, 4, 1);
    assert!(
        out.contains("Inode 8: extents out of order at logical block 25"),
        "{out}"
    );
    assert!(!out.contains("unusable"), "{out}");
}

/// EXTENTS_FL on a file of a file system without the extents feature,
/// over block pointers with an indirect block outside the file system
/// (seed fz36, damage 18836: 512 bytes of an ext3 inode table written
/// over). Declined clearing (-n), e2fsck walks the map as its library
/// does, by the flag: the pointers are no extent header, so it finds no
/// block and no error (i_blocks should be 0; exit 4). pfsck walked them
/// as block pointers and gave up at the indirect block, as e2fsck -n
/// does for a block-mapped file (12).
#[test]
fn extents_flag_without_feature_walks_no_pointers() {
    let tmp = TempDir::new("fz36j-extents-flag");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext3().block_size(1024), None);
    let data = tmp.join("data");
    std::fs::write(&data, b"hello\n").unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} f", data.display()),
            "sif f flags 0x80000".to_string(),
            "sif f block[IND] 4000000000".to_string(),
        ],
    );
    same_codes_as_e2fsck("extents flag", &img);
    let (out, fixed) = judged_by_oracle("extents flag", &img, 4, 1);
    assert!(
        out.contains("Inode 12 is flagged as extent-mapped, but the extents feature is off")
            && out.contains("Inode 12: i_blocks 2, expected 0"),
        "{out}"
    );
    assert!(!out.contains("The check stops"), "{out}");
    assert!(fixed.contains("Clear? yes"), "{fixed}");
}

/// Unknown incompat features and a flex group size of 2^206 written
/// over the primary superblock together (seed fz36, damage 11814).
/// libext2fs refuses the unknown features before it judges any value,
/// and e2fsck looks for no backup after that refusal: it stops (8).
/// pfsck refused the flex group size first, took the backup and checked
/// through it (4).
#[test]
fn unknown_features_refused_before_values() {
    let tmp = TempDir::new("fz36j-features-first");
    let img = tmp.join("img");
    mkfs(
        &img,
        12 * MIB,
        &MkfsOpts::ext4()
            .block_size(1024)
            .features("^metadata_csum,^metadata_csum_seed"),
        None,
    );
    // s_log_groups_per_flex, and incompat bit 0x20 (unassigned).
    write_at(&img, 1024 + 0x174, &[206]);
    let incompat = read_at(&img, 1024 + 0x60, 4);
    let incompat = u32::from_le_bytes(incompat.try_into().unwrap()) | 0x20;
    write_at(&img, 1024 + 0x60, &incompat.to_le_bytes());
    same_codes_as_e2fsck("features first", &img);
    for mode in ["-fn", "-fy"] {
        let (out, mine) = both_exit(&img, &[mode], 8);
        assert_eq!(hash_file(&mine), hash_file(&img), "{mode} wrote");
        assert!(!out.contains("using the copy"), "{mode}: {out}");
    }
    let run = pfsck(&["-fn".as_ref(), img.as_os_str()]);
    let text = output_text(&run);
    assert!(
        text.contains("Features this checker does not know are set: unknown (incompat 0x20)"),
        "{text}"
    );
}
