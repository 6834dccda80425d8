//! Where pfsck -n's exit differed from e2fsck 1.47.4 -n's in the
//! differential fuzzer's seed fz36 (damages 0-3999): e2fsck gave up (8
//! added to its code) where pfsck went on, or the other way round. Each
//! damage is made again from scratch with the real tools and judged
//! against e2fsck.

use crate::common::*;

const MIB: u64 = 1 << 20;

/// A directory whose inode checksum fails on an inline_data file system
/// (seed fz36, damages 56, 362, 2801, 3357: bits of the root inode
/// flipped). Before each directory block e2fsck asks the directory's
/// inode for its inline size; under -n the checksum is still wrong, the
/// read fails and the block is passed over unchecked. Its '.' and '..'
/// go uncounted, so pass 3 finds the directory's children unconnected
/// and pass 4 reads the inode again for its count, and gives up there
/// (12). pfsck checked the blocks, found the counts right and exited 4.
#[test]
fn inline_data_directory_with_bad_checksum_skipped_by_pass_2() {
    let tmp = TempDir::new("fz36-inline-dir-csum");
    for (name, ino) in [("root", 2), ("lost+found", 11)] {
        let img = tmp.join(name);
        mkfs(
            &img,
            8 * MIB,
            &MkfsOpts::ext4().block_size(1024).features("inline_data"),
            None,
        );
        debugfs_w(&img, &["mkdir d"]);
        // The low half of the inode's checksum: nothing else changes.
        let at = inode_offset(&img, ino) + 0x7c;
        write_at(&img, at, &[0x55]);
        let (out, _) = judged_by_oracle(name, &img, 12, 1);
        assert!(
            out.contains(&format!(
                "The check stops at inode {ino}, whose checksum it may not fix"
            )),
            "[{name}] {out}"
        );
        // Nothing said of its blocks, which were never read.
        assert!(
            !out.contains(&format!("Directory inode {ino}, block")),
            "[{name}] {out}"
        );
    }
}

/// The orphan file's inode with a checksum that fails (seed fz36,
/// damages 137, 828, 929, 3047). After pass 5, before its quota check,
/// e2fsck reads that inode to set the orphan file up; under -n the
/// checksum is still wrong, the read fails and it gives up (12). pfsck
/// went on to the quota check and exited 4.
#[test]
fn orphan_file_inode_with_bad_checksum_stops_after_pass_5() {
    let tmp = TempDir::new("fz36-orphan-file-csum");
    let img = tmp.join("img");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4()
            .block_size(1024)
            .features("orphan_file,quota"),
        None,
    );
    let data = tmp.join("data");
    std::fs::write(&data, b"hello\n").unwrap();
    // A file the quota files do not count: a quota problem for the check
    // to reach, were it not to stop before it.
    debugfs_w(&img, &[format!("write {} f", data.display())]);
    let inum = 12;
    assert!(
        debugfs_r(&img, "stats")
            .lines()
            .any(|l| l.starts_with("Orphan file inode:")
                && l.split_whitespace().last() == Some(&inum.to_string())),
        "mke2fs put the orphan file elsewhere"
    );
    // The low half of the inode's checksum: nothing else changes.
    let at = inode_offset(&img, inum) + 0x7c;
    write_at(&img, at, &[0x55]);
    let (out, _) = judged_by_oracle("orphan-file-csum", &img, 12, 1);
    assert!(
        out.contains(&format!(
            "The check stops at the orphan file's inode {inum}, whose checksum it may not fix"
        )),
        "{out}"
    );
    assert!(out.contains("Pass 5") && !out.contains("uota"), "{out}");
}

/// The orphan file is charged to no quota: e2fsck counts every ordinary
/// inode's blocks but the project quota file's and the orphan file's.
/// Found making the orphan file checksum test: pfsck charged the orphan
/// file's 32 KiB to user and group 0, so its repair wrote quota files
/// e2fsck then found wrong, after exiting 1 (a false claim).
#[test]
fn orphan_file_charged_to_no_quota() {
    let tmp = TempDir::new("fz36-orphan-file-quota");
    let img = tmp.join("img");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4()
            .block_size(1024)
            .features("orphan_file,quota"),
        None,
    );
    let data = tmp.join("data");
    std::fs::write(&data, b"hello\n").unwrap();
    // A file the quota files do not count yet.
    debugfs_w(&img, &[format!("write {} f", data.display())]);
    let (out, _) = judged_by_oracle("orphan-file-quota", &img, 4, 1);
    // The root, lost+found (12 KiB) and the file: not the orphan file.
    assert!(
        out.contains("user ID 0: 14336 bytes in 3 inodes counted"),
        "{out}"
    );
}

/// An illegal indirect pointer in the resize inode's double indirect
/// block (seed fz36, damage 823: bits flipped in that block, in-range
/// pointers after it). e2fsck's walk of a double indirect block ends at
/// the first indirect pointer it may not zero, so no indirect block is
/// read after it, the walk ends in error and -n gives up (12). pfsck
/// walked the pointers after it, whose reads cleared the error, and
/// exited 4.
#[test]
fn walk_of_a_double_indirect_block_ends_at_an_illegal_pointer() {
    let tmp = TempDir::new("fz36-dind-illegal");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    let stat = debugfs_r(&img, "stat <7>");
    let dind: u64 = stat
        .split("(DIND):")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no double indirect block:\n{stat}"));
    // Its 21st pointer (to a reserved GDT block), with more after it.
    write_at(&img, dind * 1024 + 21 * 4, &131_101u32.to_le_bytes());
    let (out, _) = judged_by_oracle("dind-illegal", &img, 12, 1);
    assert!(
        out.contains("Indirect block (131101) of inode 7 is out of bounds")
            && out.contains("The check stops at inode 7's indirect block outside the file system"),
        "{out}"
    );
}

/// A superblock value e2fsck's check of the superblock stops at, on a
/// file system whose journal cannot be used then (seed fz36, damages
/// 560, 637, 640, 1125, 1855: a block count that leaves the journal
/// outside; 1522: a journal UUID that names an external journal). e2fsck
/// checks the journal first; -n may not clear it and cannot proceed (12).
/// pfsck judged the value first and exited 8.
#[test]
fn journal_checked_before_the_superblock_values() {
    let tmp = TempDir::new("fz36-journal-first");
    // (name, mkfs options, debugfs edits, words of pfsck's report)
    let cases: [(&str, MkfsOpts, &[&str], &str); 3] = [
        (
            "blocks_count",
            MkfsOpts::ext4().block_size(4096),
            &["ssv blocks_count 1"],
            "The journal is unusable and -n forbids clearing it",
        ),
        (
            "despite errors",
            MkfsOpts::ext4()
                .block_size(1024)
                .features("meta_bg,^resize_inode")
                .blocks_per_group(1024),
            &["ssv blocks_count 4"],
            "The journal is unusable and -n forbids clearing it",
        ),
        (
            "external",
            MkfsOpts::ext4().block_size(1024),
            &[
                "ssv journal_uuid 0f4d1a0e-3b2c-4c1d-9e8f-123456789abc",
                "ssv r_blocks_count 9000",
            ],
            "Can't find external journal",
        ),
    ];
    for (name, opts, edits, words) in cases {
        let img = tmp.join(name.replace(' ', "-"));
        mkfs(&img, 16 * MIB, &opts, None);
        debugfs_w(&img, edits);
        let (out, mine) = both_exit(&img, &["-fn"], 12);
        assert!(
            out.contains(words) && !out.contains("corruption found in superblock"),
            "[{name}] {out}"
        );
        assert_eq!(hash_file(&mine), hash_file(&img), "[{name}] -fn wrote");
    }
}

/// A first data block written over on a 1 KiB-block file system (seed
/// fz36, damages 339, 2397, 3792). The descriptors then look bad, and
/// e2fsck looks for group 1's backup one group past the first data block
/// the block size calls for, finds it and checks with it (4). pfsck
/// looked one group past the damaged value, found none, and stopped at
/// the value (8).
#[test]
fn backup_found_past_a_first_data_block_written_over() {
    let tmp = TempDir::new("fz36-first-data-block");
    for (name, bpg) in [("8192", 8192), ("1024", 1024)] {
        let img = tmp.join(name);
        mkfs(
            &img,
            16 * MIB,
            &MkfsOpts::ext4().block_size(1024).blocks_per_group(bpg),
            None,
        );
        debugfs_w(&img, &["ssv first_data_block 128"]);
        let (out, _) = both_exit(&img, &["-fn"], 4);
        assert!(
            out.contains(&format!("using the copy at block {}", bpg + 1)),
            "[{name}] {out}"
        );
        let (code, out) = pfsck_code(&["-fy"], &img);
        assert_eq!(code, 1, "[{name}] pfsck -fy: {out}");
        if oracle().is_some() {
            assert_eq!(oracle_fn(&img), 0, "[{name}] after pfsck -fy: {out}");
        }
    }
}
