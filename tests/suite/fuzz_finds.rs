//! What the differential fuzzer (`scripts/difffuzz.py`) found (seeds 1,
//! 102, fz13c, fz13c-2, fz13d), each damage made again from scratch (mkfs, debugfs -w, raw writes)
//! and judged against e2fsck 1.47.4: pfsck's `-fn` verdict must be the
//! oracle's, one `pfsck -fy` must leave a file system the oracle finds
//! clean, and the files e2fsck keeps must still be there.

use crate::common::*;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// An image of `opts` with one file `/f` of `len` bytes (inode 12).
fn image_with_file(img: &Path, opts: &MkfsOpts, len: usize) {
    mkfs(img, 8 * MIB, opts, None);
    let data = img.with_extension("data");
    std::fs::write(&data, file_content("f", len)).unwrap();
    debugfs_w(img, &[format!("write {} f", data.display())]);
    std::fs::remove_file(&data).unwrap();
    assert_eq!(inode_of(img, "/f"), 12);
}

/// 1 KiB blocks in 4 KiB clusters: the bigalloc geometry of the fuzzer's
/// profiles.
fn bigalloc_1k() -> MkfsOpts {
    let mut opts = MkfsOpts::ext4().block_size(1024).features("bigalloc");
    opts.extra_args = vec!["-C".into(), "4096".into()];
    opts
}

/// `/f` is still inode 12 and still holds its bytes.
fn file_kept(img: &Path, len: usize) {
    let out = debugfs_r(img, "stat /f");
    assert!(out.contains(&format!("Size: {len}")), "{out}");
    assert_eq!(inode_of(img, "/f"), 12);
}

// ---- superblock fields naming inodes of features that are off ----

/// `ssv usr_quota_inum 2` on ext2 (seed 1, damage 2091): e2fsck rejects
/// a quota inode number naming the root whatever the features, and clears
/// it. pfsck judged the field only with the quota feature on, and said
/// clean.
#[test]
fn quota_field_naming_root_without_quota() {
    let tmp = TempDir::new("fuzz-quota-root");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext2().block_size(1024), 3000);
    debugfs_w(&img, &["ssv usr_quota_inum 2"]);
    let (fn_out, _) = judged_by_oracle("usr_quota_inum 2", &img, 4, 1);
    assert!(
        fn_out.contains("The user quota file named in the superblock (inode 2) is unusable"),
        "{fn_out}"
    );
    file_kept(&img, 3000);
}

/// Quota fields naming inodes e2fsck rejects (seed fz13c, damage 134:
/// `s_grp_quota_inum` 1073741824 on ext2). e2fsck asks to clear them
/// before it marks the file system valid for its passes, so under `-n`
/// the "no" alone exits 0; only what the kept field does to the passes
/// counts: a project field naming the resize inode makes it a quota
/// inode that "contains data" (exit 4), one naming the empty boot loader
/// inode does nothing. pfsck exited 4 for every one. `-p` still stops
/// (the question is not preen-safe) and `-y` clears the field.
#[test]
fn invalid_quota_field_declined_alone_exits_0() {
    // (name, superblock offset, value, e2fsck -fn's exit)
    let cases: [(&str, u64, u32, i32); 4] = [
        ("group past the last inode", 0x244, 1 << 30, 0),
        ("user bad blocks inode", 0x240, 1, 0),
        ("project boot loader", 0x26c, 5, 0),
        ("project resize inode", 0x26c, 7, 4),
    ];
    for (name, off, value, want) in cases {
        let tmp = TempDir::new("fuzz-quota-declined");
        let img = tmp.join("disk.img");
        image_with_file(&img, &MkfsOpts::ext2().block_size(1024), 3000);
        write_at(&img, 1024 + off, &value.to_le_bytes());
        let preen = tmp.join("preen.img");
        copy_image(&img, &preen);
        let (fn_out, _) = judged_by_oracle(name, &img, want, 1);
        assert!(
            fn_out.contains(&format!("(inode {value}) is unusable")),
            "[{name}] {fn_out}"
        );
        let (code, out) = pfsck_code(&["-fp"], &preen);
        assert_eq!(code, 4, "[{name}] pfsck -fp:\n{out}");
        file_kept(&img, 3000);
    }
}

/// A group quota field naming a live file without the quota feature
/// (damages 614, 1801, 1407): e2fsck calls every entry naming it invalid,
/// unlinks it, reconnects the inode to /lost+found and finds the same
/// again on the next run. pfsck said nothing. The field is what is wrong:
/// pfsck clears it and the file stays where it is.
#[test]
fn quota_field_naming_a_file_without_quota() {
    let tmp = TempDir::new("fuzz-quota-file");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext4().block_size(1024), 5000);
    debugfs_w(&img, &["ssv grp_quota_inum 12"]);
    let theirs = tmp.join("oracle.img");
    copy_image(&img, &theirs);
    let oracle = oracle_run(&theirs, &["-fn"]);
    assert!(
        oracle.stdout.contains("has invalid inode #: 12"),
        "{}",
        oracle.stdout
    );
    judged_by_oracle("grp_quota_inum 12", &img, 4, 1);
    file_kept(&img, 5000);
}

/// The project quota inode (12, named by the superblock: the project
/// quota has no reserved inode) cleared (seed fz36, damage 18340, where
/// group 0's inode table moved onto zeros). e2fsck takes the inode the
/// superblock names for a reserved quota inode whatever its link count,
/// makes it a regular file and writes the quota again. pfsck took inode
/// 12 for a free inode, then declined to rewrite a quota file in it:
/// e2fsck still found the project quota unreadable.
#[test]
fn project_quota_inode_cleared() {
    let tmp = TempDir::new("fuzz-prj-quota-clri");
    let root = tmp.join("tree");
    build_tree(&root, &[Node::dir("d"), Node::file("d/f", 3000)]);
    let img = tmp.join("disk.img");
    let opts = MkfsOpts::ext4().block_size(1024).features("quota,project");
    mkfs(&img, 8 * MIB, &opts, Some(&root));
    let sb = debugfs_r(&img, "stats");
    assert!(sb.contains("Project quota inode:      12"), "{sb}");
    debugfs_w(&img, &["clri <12>"]);
    assert_eq!(oracle_fn(&img), 4);
    let (code, out) = pfsck_code(&["-fn", "--json"], &img);
    assert_eq!(code, 4, "{out}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(report_e2fsck_codes(&json).contains(&0x010062), "{out}");
    let (_, _, fy) = crate::kept_paths::same_paths("project quota inode", &img);
    assert!(!fy.contains("? no"), "{fy}");
    assert!(
        fy.contains("Reserved inode 12 (quota inode is not a regular file)"),
        "{fy}"
    );
}

/// A user or group quota field naming a live file with the quota feature
/// on (seed fz13c-2, damage 718: `ssv usr_quota_inum 31`). The file is no
/// quota file, so the quota must be written again; e2fsck's quota library
/// writes it to the reserved inode (3 or 4) and points the field there,
/// leaving the file's data alone (e2fsck also moves the file to
/// /lost+found, its pass 2 having unlinked it). pfsck rewrote the quota
/// file in place: the user's file was overwritten, and the entry naming
/// it was left for e2fsck to reject.
#[test]
fn quota_field_naming_a_file_with_quota() {
    for (field, reserved) in [("usr_quota_inum", 3), ("grp_quota_inum", 4)] {
        let tmp = TempDir::new("fuzz-quota-file-on");
        let img = tmp.join("disk.img");
        image_with_file(
            &img,
            &MkfsOpts::ext4().block_size(1024).features("quota"),
            5000,
        );
        debugfs_w(&img, &[format!("ssv {field} 12")]);
        judged_by_oracle(field, &img, 4, 1);
        file_kept(&img, 5000);
        let data = tmp.join("dumped");
        debugfs_r(&img, &format!("dump /f {}", data.display()));
        assert_eq!(
            std::fs::read(&data).unwrap(),
            file_content("f", 5000),
            "{field}"
        );
        let sb = debugfs_r(&img, "stats");
        let name = if reserved == 3 { "User" } else { "Group" };
        assert!(
            sb.lines()
                .any(|l| l.starts_with(&format!("{name} quota inode:"))
                    && l.ends_with(&format!(" {reserved}"))),
            "{field}: {sb}"
        );
    }
}

/// The orphan file field naming a live file without the orphan_file
/// feature (damage 1995): e2fsck clears the inode as an orphan file that
/// holds data, and the entry naming it.
#[test]
fn orphan_file_field_naming_a_file_without_the_feature() {
    let tmp = TempDir::new("fuzz-orphan-field");
    let img = tmp.join("disk.img");
    let opts = MkfsOpts::ext4().block_size(1024).features("^orphan_file");
    image_with_file(&img, &opts, 5000);
    debugfs_w(&img, &["ssv orphan_file_inum 12"]);
    judged_by_oracle("orphan_file_inum 12", &img, 4, 1);
    file_kept(&img, 5000);
}

/// The project quota field naming a free inode on ext2 (damages 96, 246):
/// e2fsck marks it in use whatever it holds, and asks to set its bitmap
/// bit.
#[test]
fn project_quota_field_naming_a_free_inode() {
    let tmp = TempDir::new("fuzz-prj-free");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext2().block_size(1024), 3000);
    debugfs_w(&img, &["ssv prj_quota_inum 100"]);
    judged_by_oracle("prj_quota_inum 100", &img, 4, 1);
    file_kept(&img, 3000);
}

// ---- quota files ----

/// A quota tree reference past the blocks the file's info block counts
/// (damage 521): e2fsprogs stops reading the tree there, and e2fsck
/// rewrites the file. pfsck followed the reference, read zeros and found
/// the file as good as the usage.
#[test]
fn quota_tree_reference_past_the_file() {
    let tmp = TempDir::new("fuzz-quota-ref");
    let img = tmp.join("disk.img");
    let opts = MkfsOpts::ext4().block_size(1024).features("quota");
    image_with_file(&img, &opts, 3000);
    // Quota block 1 is the tree's root; its slot 7 leads to ids 7 << 24..
    let root = debugfs_number(&img, "bmap <3> 1");
    write_at(&img, root * 1024 + 7 * 4, &0x2000_0000u32.to_le_bytes());
    let (fn_out, _) = judged_by_oracle("quota reference", &img, 4, 1);
    assert!(fn_out.contains("user quota file"), "{fn_out}");
    file_kept(&img, 3000);
}

// ---- group descriptors ----

/// The only (so the last) group marked BLOCK_UNINIT with a count of
/// unused inodes, on ext3, without group checksums (damage 1763):
/// e2fsck asks to clear both (and exits 0 when declined: the flags
/// change no count). pfsck reported the first, fixed neither, and e2fsck
/// still found them after its repair.
#[test]
fn uninit_flags_without_group_checksums() {
    let tmp = TempDir::new("fuzz-uninit-ext3");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext3().block_size(4096), 3000);
    debugfs_w(&img, &["set_bg 0 flags 2", "set_bg 0 itable_unused 5"]);
    let oracle = oracle_run(&img, &["-fn"]);
    assert!(
        oracle
            .stdout
            .contains("Last group block bitmap uninitialized"),
        "{}",
        oracle.stdout
    );
    let (_, fy_out) = judged_by_oracle("ext3 uninit flags", &img, 0, 1);
    let after = oracle_run(&img, &["-fn"]);
    assert!(
        !after.stdout.contains("uninitialized"),
        "e2fsck -fn after pfsck -fy:\n{}\npfsck -fy:\n{fy_out}",
        after.stdout
    );
    file_kept(&img, 3000);
}

/// Group 0's flags changed behind its descriptor checksum (debugfs
/// `set_bg` leaves the checksum as it was): e2fsck's pass 0 resets the
/// descriptor without marking the file system changed, and its closing
/// checksum pass writes it. `e2fsck -fy` exits 0, without "MODIFIED";
/// pfsck exited 1.
#[test]
fn descriptor_checksum_reset_alone_exits_0() {
    for flags in [1, 3] {
        let tmp = TempDir::new("fuzz-gd-csum-exit");
        let img = tmp.join("disk.img");
        mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(4096), None);
        debugfs_w(&img, &["mkdir d", "write /etc/hostname d/f"]);
        debugfs_w(&img, &[format!("set_bg 0 flags {flags}")]);
        let theirs = tmp.join("oracle.img");
        copy_image(&img, &theirs);
        let oracle = oracle_run(&theirs, &["-fy"]);
        assert_eq!(oracle.code(), Some(0), "{}", oracle.stdout);
        assert!(oracle.stdout.contains("checksum"), "{}", oracle.stdout);
        let (code, out) = pfsck_code(&["-fy"], &img);
        assert_eq!(code, 0, "[flags {flags}] {out}");
        assert!(!out.contains("repairs written"), "[flags {flags}] {out}");
        assert_eq!(oracle_fn(&img), 0, "[flags {flags}]");
    }
}

/// Group 0's block bitmap pointed into its inode table (damages 109,
/// 1706): e2fsck marks the inode table first and relocates the bitmap.
/// pfsck marked the bitmap first, moved the inode table away from its
/// inodes and lost every file.
#[test]
fn block_bitmap_inside_the_inode_table() {
    let tmp = TempDir::new("fuzz-bb-in-itable");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext2().block_size(4096), 3000);
    let table = group0_inode_table(&img);
    debugfs_w(&img, &[format!("set_bg 0 block_bitmap {}", table + 3)]);
    judged_by_oracle("block bitmap in inode table", &img, 4, 1);
    file_kept(&img, 3000);
}

/// The first block of group 0's inode table (debugfs `stats`).
fn group0_inode_table(img: &Path) -> u64 {
    let out = debugfs_r(img, "stats");
    out.lines()
        .find(|l| l.trim_start().starts_with("Group  0:"))
        .and_then(|l| l.split("inode table at ").nth(1))
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no inode table in {out}"))
}

/// Group 0's inode table pointed at a block of zeros (damages 563, 465,
/// 1239): the root and /lost+found are gone. e2fsck recreates the root,
/// then /lost+found. pfsck recreated the root in a later round, and the
/// round after it found only a missing /lost+found, a notice, and
/// stopped there.
#[test]
fn lost_found_created_after_the_root() {
    let tmp = TempDir::new("fuzz-itable-zeros");
    let img = tmp.join("disk.img");
    let opts = MkfsOpts::ext2().block_size(1024).blocks_per_group(2048);
    image_with_file(&img, &opts, 3000);
    debugfs_w(&img, &["set_bg 0 inode_table 1024"]);
    // -n stops without a root, as e2fsck -n does (12).
    assert_eq!(oracle_fn(&img), 12);
    assert_eq!(pfsck_code(&["-fn"], &img).0, 12);
    let (code, out) = pfsck_code(&["-fy"], &img);
    assert_eq!(code, 1, "pfsck -fy:\n{out}");
    let after = oracle_run(&img, &["-fn"]);
    assert_eq!(after.code(), Some(0), "e2fsck -fn after:\n{}", after.stdout);
    assert_eq!(inode_of(&img, "/lost+found"), 11);
}

/// Group 0's inode table pointed at block 0 on 4 KiB blocks (seed fz36,
/// damages 1241, 4231, 5366, 9860, 10027): a location of 0 is no
/// location, so e2fsck gives the group a zeroed table, then clears the
/// journal and makes a new one, and recreates the root and /lost+found.
/// pfsck copied block 0 (the superblock and what follows) into the new
/// table: its bytes became reserved inodes and "random" inodes, a journal
/// inode it declined to clear, and e2fsck still found the journal invalid.
#[test]
fn inode_table_at_block_0_starts_zeroed() {
    let tmp = TempDir::new("fuzz-itable-block0");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext4().block_size(4096), 3000);
    debugfs_w(&img, &["set_bg 0 inode_table 0"]);
    // Without its journal inode, -n cannot go on (as e2fsck -n).
    assert_eq!(oracle_fn(&img), 12);
    assert_eq!(pfsck_code(&["-fn"], &img).0, 12);
    let (e, p, out) = crate::kept_paths::same_paths("inode table at 0", &img);
    assert!(!out.contains("random bytes"), "{out}");
    // The reserved inodes neither tool recreates (the resize inode and
    // the journal are made again, their blocks where each allocator puts
    // them) are as the zeroed table left them.
    for ino in 3..=6 {
        let cmd = format!("stat <{ino}>");
        assert_eq!(
            debugfs_r(&e, &cmd),
            debugfs_r(&p, &cmd),
            "inode {ino}:\n{out}"
        );
    }
}

/// The root directory's extent header damaged, or left with no extent
/// (seed fz36, damages 2573, 2593, 8996, 9851, 10481, 11585, 13085,
/// 17253, 17637): e2fsck clears the root in pass 1, and its pass 3
/// allocates a new one, then /lost+found, and reconnects the old root's
/// directories there. pfsck never cleared the root (recreating it was not
/// built then), answered no, and left the tree unconnected.
#[test]
fn root_with_a_broken_extent_tree_is_recreated() {
    // (what the damage is, i_block[0]: a bad magic, or no entries)
    for (name, word) in [("bad magic", "0x1234"), ("no extents", "0x0000F30A")] {
        let tmp = TempDir::new("fuzz-root-extents");
        let root = tmp.join("tree");
        build_tree(
            &root,
            &[
                Node::dir("d1"),
                Node::file("d1/f1", 3000),
                Node::dir("d1/d2"),
                Node::file("d1/d2/g", 100),
                Node::file("top", 5000),
            ],
        );
        let img = tmp.join("disk.img");
        mkfs(
            &img,
            8 * MIB,
            &MkfsOpts::ext4().block_size(1024),
            Some(&root),
        );
        debugfs_w(&img, &[format!("sif <2> block[0] {word}")]);
        assert_eq!(oracle_fn(&img), 4, "{name}");
        assert_eq!(pfsck_code(&["-fn"], &img).0, 4, "{name}");
        let (_, _, out) = crate::kept_paths::same_paths(name, &img);
        assert!(
            out.contains("The root inode is not in use.  Allocate? yes"),
            "[{name}] {out}"
        );
        assert!(!out.contains("? no"), "[{name}] {out}");
    }
    // On bigalloc pfsck makes no new root yet: the damaged root is kept
    // (exit 4), rather than cleared and left missing (e2fsck -n would
    // then stop, 12).
    let tmp = TempDir::new("fuzz-root-extents-bigalloc");
    let img = tmp.join("disk.img");
    mkfs(&img, 8 * MIB, &bigalloc_1k(), None);
    debugfs_w(&img, &["sif <2> block[0] 0x1234"]);
    let (code, out) = pfsck_code(&["-fy"], &img);
    assert_eq!(code, 4, "{out}");
    assert_eq!(oracle_fn(&img), 4, "{out}");
}

/// A directory's one extent moved far up on bigalloc, off its cluster's
/// alignment (seed fz36, damages 671, 2039, 4407, 6741: `sif <ino>
/// block[3] N`). e2fsck's pass 1 moves the extent down to where the
/// directory's blocks start, keeping the block's offset in its cluster,
/// and then finds no cluster to copy. pfsck left directory holes alone on
/// bigalloc, so pass 1D copied the block to a new cluster and the
/// directory kept its gap: e2fsck still asked to move it.
#[test]
fn bigalloc_directory_extent_past_a_gap_moved_down() {
    let tmp = TempDir::new("fuzz-bigalloc-dir-gap");
    let root = tmp.join("tree");
    build_tree(
        &root,
        &[
            Node::dir("d"),
            Node::file("d/f1", 10),
            Node::file("d/f2", 2000),
        ],
    );
    let img = tmp.join("disk.img");
    mkfs(&img, 8 * MIB, &bigalloc_1k(), Some(&root));
    let dir = inode_of(&img, "/d");
    // 1106 is 2 past a cluster boundary; the block starts its cluster.
    debugfs_w(&img, &[format!("sif <{dir}> block[3] 1106")]);
    assert_eq!(oracle_fn(&img), 4);
    assert_eq!(pfsck_code(&["-fn"], &img).0, 4);
    let (_, p, out) = crate::kept_paths::same_paths("bigalloc dir gap", &img);
    assert!(!out.contains("? no"), "{out}");
    let stat = debugfs_r(&p, "stat /d");
    assert!(stat.contains("Size: 1024"), "{stat}");
}

// ---- superblock ----

/// The casefold feature with an encoding nobody defined (damage 1453):
/// e2fsck stops ("unsupported encoding"), after its library opened the
/// file system, so with 12 in every mode. pfsck checked the file system
/// as if it had none and found it clean.
#[test]
fn casefold_with_an_unknown_encoding() {
    let tmp = TempDir::new("fuzz-casefold-enc");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext4().block_size(1024), 3000);
    debugfs_w(&img, &["feature casefold", "ssv encoding 23"]);
    assert_eq!(oracle_fn(&img), 12);
    let before = hash_file(&img);
    for mode in ["-fn", "-fy"] {
        let (code, out) = pfsck_code(&[mode], &img);
        assert_eq!(code, 12, "pfsck {mode}:\n{out}");
        assert!(out.contains("encoding 23"), "{out}");
    }
    assert_eq!(before, hash_file(&img), "pfsck wrote");
}

/// The reserved GDT block count raised over group 0's bitmaps and inode
/// table, and a backup superblock failing its checksum (seed 3, damage
/// 181): e2fsck goes back to the primary, relocates the bitmaps and the
/// inode table and copies the table's inodes along. pfsck moved the table
/// but started it zeroed: the root, the journal and every file were lost.
#[test]
fn inode_table_under_reserved_gdt_blocks_keeps_its_inodes() {
    let tmp = TempDir::new("fuzz-itable-overlap");
    let img = tmp.join("disk.img");
    let opts = MkfsOpts::ext4().block_size(1024).features("^orphan_file");
    mkfs(&img, 12 * MIB, &opts, None);
    let data = tmp.join("f.data");
    std::fs::write(&data, file_content("f", 5000)).unwrap();
    debugfs_w(&img, &[format!("write {} f", data.display())]);
    let imap = debugfs_r(&img, "imap <2>");
    assert!(imap.contains("located at block 102,"), "{imap}");
    debugfs_w(&img, &["ssv reserved_gdt_blocks 194"]);
    // s_volume_name of the backup in group 1: its checksum fails.
    write_at(&img, 8193 * 1024 + 120, b"X");
    let (fn_out, fy_out) = judged_by_oracle("itable under reserved GDT", &img, 4, 1);
    assert!(fn_out.contains("Inode table for group 0"), "{fn_out}");
    assert!(!fy_out.contains("root inode"), "{fy_out}");
    file_kept(&img, 5000);
}

// ---- symlinks ----

/// One `pfsck -fy`, then e2fsck -fn must find the image clean and
/// `path` still a symlink to `target`.
fn symlink_kept(img: &Path, path: &str, target: &str) {
    let (code, out) = pfsck_code(&["-fy"], img);
    assert_eq!(code, 1, "pfsck -fy:\n{out}");
    let after = oracle_run(img, &["-fn"]);
    assert_eq!(
        after.code(),
        Some(0),
        "e2fsck -fn after:\n{}\npfsck -fy:\n{out}",
        after.stdout
    );
    let stat = debugfs_r(img, &format!("stat {path}"));
    assert!(stat.contains("Type: symlink"), "{stat}");
    assert!(stat.contains(&format!("Size: {}", target.len())), "{stat}");
}

/// A slow symlink with illegal block pointers besides its block
/// (damages 698, 1468, 1760): e2fsck clears the pointers, and the
/// symlink is then valid. pfsck judged the symlink first and cleared it.
#[test]
fn symlink_with_illegal_block_pointers() {
    let tmp = TempDir::new("fuzz-symlink-illegal");
    let img = tmp.join("disk.img");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext2().block_size(1024), None);
    let target = format!("/{}", "a".repeat(100));
    debugfs_w(
        &img,
        &[
            format!("symlink /l {target}"),
            "sif /l block[3] 2147483647".to_string(),
            "sif /l block[IND] 99999999".to_string(),
        ],
    );
    // e2fsck -n stops at the illegal indirect block (12), and so does
    // pfsck -n.
    assert_eq!(oracle_fn(&img), 12);
    assert_eq!(pfsck_code(&["-fn"], &img).0, 12);
    symlink_kept(&img, "/l", &target);
}

/// A slow symlink mapping an in-range block past its first (seed 4,
/// damage 135: bits flipped in `i_block[2]`): e2fsck's pass 1 clears the
/// block as making the symlink too big, and its pass 2 then finds the
/// symlink valid (and its entry's file type right). pfsck judged the
/// symlink before the block fix and cleared it.
#[test]
fn symlink_with_a_block_past_its_first() {
    let tmp = TempDir::new("fuzz-symlink-toobig");
    let img = tmp.join("disk.img");
    mkfs(&img, 64 * MIB, &MkfsOpts::ext2().block_size(4096), None);
    let target = format!("/{}", "b".repeat(79));
    debugfs_w(
        &img,
        &[
            "mkdir /d".to_string(),
            format!("symlink /d/l {target}"),
            "sif /d/l block[2] 8".to_string(),
        ],
    );
    let oracle = oracle_run(&img, &["-fn"]);
    assert_eq!(oracle.code(), Some(4), "{}", oracle.stdout);
    assert!(oracle.stdout.contains("causes symlink to be too big"));
    assert_eq!(pfsck_code(&["-fn"], &img).0, 4);
    symlink_kept(&img, "/d/l", &target);
    let ls = debugfs_r(&img, "ls -l /d");
    assert!(ls.contains("120777 (7)"), "{ls}");
}

/// A fast symlink with the encrypt flag and no encryption context
/// (damage 1666): e2fsck clears the flag and reads the target as plain
/// text. pfsck read it as ciphertext, found it invalid and cleared it.
#[test]
fn symlink_with_a_stray_encrypt_flag() {
    let tmp = TempDir::new("fuzz-symlink-encrypt");
    let img = tmp.join("disk.img");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(&img, &["symlink /s /short/target", "sif /s flags 0x800"]);
    assert_eq!(oracle_fn(&img), 4);
    assert_eq!(pfsck_code(&["-fn"], &img).0, 4);
    symlink_kept(&img, "/s", "/short/target");
}

/// Symlinks, fast and slow, with INDEX_FL among garbage flags (seed
/// fz33-20k, damages 9097, 3616 and 14730: `write inode+0x20/4`).
/// e2fsck's pass 1 finds the symlink bad and clears the index flag (not a
/// directory); its pass 2 judges the symlink again, now valid, and keeps
/// it (`-n` leaves the flag, and the symlink invalid). pfsck judged the
/// symlink with the flag still set and cleared the inode.
#[test]
fn symlink_with_index_flag_kept() {
    let tmp = TempDir::new("fuzz-symlink-index");
    let img = tmp.join("disk.img");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    let slow = format!("/{}", "c".repeat(100));
    debugfs_w(
        &img,
        &[
            "symlink /s /short/target".to_string(),
            format!("symlink /l {slow}"),
        ],
    );
    // The slow one keeps its EXTENTS_FL.
    debugfs_w(&img, &["sif /s flags 0x1000", "sif /l flags 0x81000"]);
    let (fn_out, fy_out) = judged_by_oracle("symlink index flag", &img, 4, 1);
    assert!(fn_out.contains("indexed directory"), "{fn_out}");
    assert!(!fy_out.contains("which is free"), "{fy_out}");
    for (path, target) in [("/s", "/short/target"), ("/l", slow.as_str())] {
        let stat = debugfs_r(&img, &format!("stat {path}"));
        assert!(stat.contains("Type: symlink"), "{stat}");
        assert!(stat.contains(&format!("Size: {}", target.len())), "{stat}");
    }
}

// ---- seed 2 ----

/// The orphan_file feature with an orphan file inode number that cannot
/// be an inode (seed 2, damages 105 and 747: `feature orphan_file` set by
/// debugfs, leaving the number 0). e2fsck reads that inode after its
/// passes and stops (exit 8), -fn and -fy alike; pfsck said clean, or
/// only noted that orphan processing stopped, and exited 1 after -fy.
/// Its -n exit is e2fsck's (seed fz34-final, damage 8640: it was 4).
/// pfsck turns the feature off; the kernel then keeps its orphans in the
/// superblock's list.
#[test]
fn orphan_file_feature_without_a_valid_inode() {
    let tmp = TempDir::new("fuzz-orphan-file-inum");
    let cases: [(&str, MkfsOpts, &str); 3] = [
        (
            "ext3 feature orphan_file",
            MkfsOpts::ext3().block_size(1024),
            "feature orphan_file",
        ),
        (
            "ext4 orphan_file_inum 0",
            MkfsOpts::ext4().block_size(1024).features("orphan_file"),
            "ssv orphan_file_inum 0",
        ),
        (
            "ext4 orphan_file_inum past the last inode",
            MkfsOpts::ext4().block_size(1024).features("orphan_file"),
            "ssv orphan_file_inum 999999",
        ),
    ];
    for (ctx, opts, damage) in cases {
        let img = tmp.join("disk.img");
        mkfs(&img, 8 * MIB, &opts, None);
        let data = tmp.join("f.data");
        std::fs::write(&data, file_content("f", 3000)).unwrap();
        debugfs_w(&img, &[format!("write {} f", data.display())]);
        debugfs_w(&img, &[damage]);
        // 12 where it also finds the old orphan file unattached.
        let want = if ctx.starts_with("ext3") { 8 } else { 12 };
        if oracle().is_some() {
            assert_eq!(oracle_fn(&img), want, "[{ctx}]");
        }
        let before = hash_file(&img);
        let (code, out) = pfsck_code(&["-fn"], &img);
        assert_eq!(code, want, "[{ctx}] pfsck -fn:\n{out}");
        assert!(
            out.contains("orphan_file is set but its inode"),
            "[{ctx}] {out}"
        );
        assert_eq!(before, hash_file(&img), "[{ctx}] pfsck -fn wrote");
        let (code, out) = pfsck_code(&["-fy"], &img);
        assert_eq!(code, 1, "[{ctx}] pfsck -fy:\n{out}");
        let after = oracle_run(&img, &["-fn"]);
        assert_eq!(
            after.code(),
            Some(0),
            "[{ctx}] after:\n{}\n{out}",
            after.stdout
        );
        let stat = debugfs_r(&img, "stat /f");
        assert!(stat.contains("Size: 3000"), "[{ctx}] {stat}");
        std::fs::remove_file(&img).unwrap();
    }
}

/// e2fsck bounds the last subtree of an extent tree's root by i_size (its
/// library measures the root's last index entry up to i_size in blocks):
/// a file whose size falls short of the extents in that subtree has them
/// "exceed the allowed value", and e2fsck clears them. pfsck let the root's
/// last index run to 2^32 and fixed i_size instead (seed 2, extent header
/// bound finds). A size of one block leaves that entry of length 1, which
/// bounds nothing (an end of 0 is none): then i_size is what is wrong.
#[test]
fn extent_root_last_index_bounded_by_i_size() {
    let tmp = TempDir::new("fuzz-extent-root-bound");
    let tree = tmp.join("tree");
    std::fs::create_dir(&tree).unwrap();
    // 40 blocks, every other one: a depth-1 tree of 40 one-block extents.
    let mut data = vec![0u8; 79 * 4096];
    for i in 0..40 {
        data[i * 2 * 4096..(i * 2 + 1) * 4096].fill(b'x');
    }
    std::fs::write(tree.join("sp"), &data).unwrap();
    let cases = [
        (
            200000u64,
            "end of extent exceeds allowed value",
            "ends past what the file may hold",
            15,
        ),
        (
            4096,
            "i_size is 4096, should be 323584",
            "size 4096, expected 323584",
            0,
        ),
    ];
    for (size, theirs, msg, cleared) in cases {
        let img = tmp.join("disk.img");
        mkfs(
            &img,
            16 * MIB,
            &MkfsOpts::ext4().block_size(4096),
            Some(&tree),
        );
        debugfs_w(&img, &[format!("sif /sp size {size}")]);
        let oracle = oracle_run(&img, &["-fn"]);
        assert!(oracle.stdout.contains(theirs), "{}", oracle.stdout);
        let (fn_out, _) = judged_by_oracle(&format!("size {size}"), &img, 4, 1);
        assert!(fn_out.contains(msg), "{fn_out}");
        assert_eq!(
            fn_out.matches("ends past what the file may hold").count(),
            cleared,
            "{fn_out}"
        );
        std::fs::remove_file(&img).unwrap();
    }
}

/// Group 0 marked INODE_UNINIT by a descriptor whose checksum then fails
/// (seed 2, descriptor flag finds): e2fsck's pass 0 clears the uninit
/// marks of such a descriptor before pass 1 and finds everything in
/// place. pfsck's pass 1 skipped the group's inodes, found the root
/// unallocated and made a new, empty one: every file was lost.
#[test]
fn uninit_marks_on_a_descriptor_failing_its_checksum() {
    let tmp = TempDir::new("fuzz-gd-uninit-csum");
    for (ctx, opts) in [
        (
            "uninit_bg",
            MkfsOpts::ext4().features("^metadata_csum,uninit_bg"),
        ),
        ("metadata_csum", MkfsOpts::ext4()),
    ] {
        let img = tmp.join("disk.img");
        mkfs(&img, 16 * MIB, &opts.block_size(4096), None);
        debugfs_w(&img, &["mkdir d", "write /etc/hostname d/f"]);
        debugfs_w(&img, &["set_bg 0 flags 1"]);
        let oracle = oracle_run(&img, &["-fn"]);
        assert!(
            oracle.stdout.contains("checksum"),
            "[{ctx}] {}",
            oracle.stdout
        );
        assert_ne!(oracle.code(), Some(0), "[{ctx}]");
        assert_eq!(Some(pfsck_code(&["-fn"], &img).0), oracle.code(), "[{ctx}]");
        // e2fsck -fy exits 0: its pass 0 resets the descriptor without
        // marking the file system changed.
        let (code, out) = pfsck_code(&["-fy"], &img);
        assert_eq!(code, 0, "[{ctx}] {out}");
        assert!(
            !out.contains("The root inode is not in use"),
            "[{ctx}] {out}"
        );
        let after = oracle_run(&img, &["-fn"]);
        assert_eq!(after.code(), Some(0), "[{ctx}] {}\n{out}", after.stdout);
        assert!(
            debugfs_r(&img, "ls /d").contains(" f "),
            "[{ctx}] /d/f lost"
        );
        std::fs::remove_file(&img).unwrap();
    }
}

/// INODE_UNINIT on group 0 without group checksums: e2fsck's pass 0 only
/// clears the mark when it may write, so under -n its pass 2 finds every
/// entry naming an inode of that group to lie in an uninit group (exit 4).
/// pfsck looked at the marks only with group checksums and said clean.
#[test]
fn inode_uninit_without_group_checksums_under_n() {
    let tmp = TempDir::new("fuzz-gd-uninit-nocsum");
    let img = tmp.join("disk.img");
    let opts = MkfsOpts::ext4()
        .block_size(4096)
        .features("^metadata_csum,^uninit_bg");
    mkfs(&img, 16 * MIB, &opts, None);
    debugfs_w(&img, &["mkdir d", "set_bg 0 flags 1"]);
    let (fn_out, _) = judged_by_oracle("nocsum INODE_UNINIT", &img, 4, 1);
    assert!(
        fn_out.contains("whose inode table is flagged uninitialised"),
        "{fn_out}"
    );
    assert!(debugfs_r(&img, "ls /").contains(" d "));
}

/// The orphan file inode made a directory: e2fsck's pass 1 makes it a
/// regular file again (mode 0100000) and all is well. pfsck judged it as
/// a directory, rewrote its blocks as orphan blocks and left it a
/// directory whose blocks e2fsck then found invalid (exit 5).
#[test]
fn orphan_file_inode_not_a_regular_file() {
    let tmp = TempDir::new("fuzz-orphan-file-mode");
    let img = tmp.join("disk.img");
    let opts = MkfsOpts::ext4().block_size(1024).features("orphan_file");
    mkfs(&img, 16 * MIB, &opts, None);
    assert_eq!(inode_of(&img, "/lost+found"), 11);
    debugfs_w(&img, &["mkdir d", "sif <12> mode 040600"]);
    // e2fsck -n then reads it as a directory and aborts in pass 2; so
    // does pfsck -n.
    assert_eq!(oracle_fn(&img), 12);
    let (code, fn_out) = pfsck_code(&["-fn"], &img);
    assert_eq!(code, 12, "{fn_out}");
    assert!(fn_out.contains("not a regular file"), "{fn_out}");
    let (code, out) = pfsck_code(&["-fy"], &img);
    assert_eq!(code, 1, "{out}");
    let after = oracle_run(&img, &["-fn"]);
    assert_eq!(after.code(), Some(0), "{}\n{out}", after.stdout);
    let stat = debugfs_r(&img, "stat <12>");
    assert!(stat.contains("Type: regular"), "{stat}");
    assert!(stat.contains("Size: 32768"), "{stat}");
}

/// The inode table block of the last BLOCK_UNINIT group, from debugfs's
/// `stats` (with flex_bg it lies in group 0).
fn uninit_group_inode_table(img: &Path) -> u64 {
    let stats = debugfs_r(img, "stats");
    let lines: Vec<&str> = stats.lines().collect();
    let mut table = None;
    for (i, l) in lines.iter().enumerate() {
        let uninit = lines
            .get(i + 2)
            .is_some_and(|f| f.contains("Block not init"));
        if let Some(at) = l.split("inode table at ").nth(1)
            && uninit
        {
            table = at.trim().parse().ok();
        }
    }
    table.unwrap_or_else(|| panic!("no BLOCK_UNINIT group:\n{stats}"))
}

/// `freeb` of blocks of a BLOCK_UNINIT group's inode table that flex_bg
/// put in group 0 (seed 102, damage 281): the library reads every bitmap
/// with the uninit groups' metadata ORed in, so e2fsck sees no difference
/// but a group 0 bitmap whose checksum (debugfs's, over the cleared bits)
/// is not that of the bitmap as read, and rewrites it. pfsck took the
/// checksum over the bytes on disk and said clean.
#[test]
fn uninit_group_table_freed_in_another_groups_bitmap() {
    let tmp = TempDir::new("fuzz-uninit-overlay");
    let img = tmp.join("disk.img");
    let opts = MkfsOpts::ext4()
        .block_size(1024)
        .blocks_per_group(1024)
        .features("meta_bg,^resize_inode");
    image_with_file(&img, &opts, 3000);
    let table = uninit_group_inode_table(&img);
    debugfs_w(&img, &[format!("freeb {} 8", table + 10)]);
    let (fn_out, _) = judged_by_oracle("uninit overlay", &img, 4, 1);
    assert!(
        fn_out.contains("Group 0's block bitmap fails its checksum"),
        "{fn_out}"
    );
    file_kept(&img, 3000);
}

/// `feature ^extent` on an ext4 file system (seed 102, damage 964): every
/// extent-mapped inode keeps a sound tree. e2fsck's block walk still
/// follows the trees; it offers to set the feature back (-n: and then to
/// clear each inode) and, repairing, sets it at the first inode. pfsck
/// read the trees as block maps, "fixed" sizes and block counts from that
/// reading and lost the files.
#[test]
fn extents_feature_turned_off() {
    let tmp = TempDir::new("fuzz-extents-off");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext4().features("^metadata_csum"), 50_000);
    debugfs_w(&img, &["mkdir d", "feature ^extent"]);
    let (fn_out, fy_out) = judged_by_oracle("feature ^extent", &img, 4, 1);
    assert!(fn_out.contains("Inode 12 holds an extent tree"), "{fn_out}");
    assert!(!fn_out.contains("illegal block"), "{fn_out}");
    assert_eq!(
        fy_out.matches("holds an extent tree").count(),
        1,
        "{fy_out}"
    );
    assert!(!fy_out.contains("i_size"), "{fy_out}");
    file_kept(&img, 50_000);
    assert!(debugfs_r(&img, "stat /d").contains("Type: directory"));
}

/// `feature bigalloc` on ext3 (seed 102, damage 235): the cluster size
/// field already equals the block size, so clusters are one block. e2fsck
/// asks about every block map all the same: its test is the feature, not
/// the cluster size. With the extents feature its pass 1E rebuilds each
/// map as a tree; without it, "yes" changes nothing and the file system
/// still has errors. pfsck judged only clusters of several blocks, said
/// clean and, repairing, claimed a fix e2fsck did not find.
#[test]
fn bigalloc_feature_with_one_block_clusters_on_block_maps() {
    let tmp = TempDir::new("fuzz-bigalloc-1");
    let img = tmp.join("disk.img");
    let opts = MkfsOpts::ext3().block_size(1024);
    image_with_file(&img, &opts, 3000);
    let extents = tmp.join("extents.img");
    copy_image(&img, &extents);
    debugfs_w(&img, &["feature bigalloc"]);
    let oracle = oracle_run(&img, &["-fn"]);
    assert_eq!(oracle.code(), Some(4), "{}", oracle.stdout);
    let before = hash_file(&img);
    let (code, fn_out) = pfsck_code(&["-fn"], &img);
    assert_eq!(code, 4, "{fn_out}");
    assert!(
        fn_out.contains("Inode 12 uses a block map, which bigalloc"),
        "{fn_out}"
    );
    assert_eq!(before, hash_file(&img), "pfsck -fn wrote");
    // No extents feature: nothing can be rebuilt, and pfsck says so.
    let (code, fy_out) = pfsck_code(&["-fy"], &img);
    assert_eq!(code, 4, "{fy_out}");
    file_kept(&img, 3000);
    // With it, the maps become trees, as e2fsck's pass 1E makes them.
    debugfs_w(&extents, &["feature extent", "feature bigalloc"]);
    let (fn_out, _) = judged_by_oracle("bigalloc, one-block clusters", &extents, 4, 1);
    assert!(
        fn_out.contains("Inode 12 uses a block map, which bigalloc"),
        "{fn_out}"
    );
    file_kept(&extents, 3000);
    assert!(debugfs_r(&extents, "stat /f").contains("EXTENTS:"));
}

/// A sparse file `/f` of eight 1 KiB runs (a depth-1 tree) and a
/// one-block file `/g` on `opts`; returns the leaf block of `/f` and the
/// extents debugfs lists for it.
fn image_with_extent_leaf(tmp: &TempDir, img: &Path, opts: &MkfsOpts) -> (u64, String) {
    let root = tmp.join("tree");
    let runs: Vec<(u64, u64)> = (0..8).map(|i| (i * 8192, 1024)).collect();
    build_tree(
        &root,
        &[Node::sparse("f", 8 * 8192, &runs), Node::file("g", 1000)],
    );
    mkfs(img, 8 * MIB, opts, Some(&root));
    let stat = debugfs_r(img, "stat /f");
    let leaf = stat
        .split("(ETB0):")
        .nth(1)
        .and_then(|w| w.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .expect("a depth-1 extent tree");
    (leaf, extents_of(&stat))
}

/// The EXTENTS section of a debugfs `stat`.
fn extents_of(stat: &str) -> String {
    stat.split("EXTENTS:")
        .nth(1)
        .unwrap_or("")
        .trim()
        .to_string()
}

/// An extent leaf whose eh_depth is 0x04b7 (seed 102, damage 325):
/// libext2fs counts levels down from the root and never reads a child's
/// depth, so e2fsck keeps the leaf (with metadata_csum it rewrites the
/// leaf's checksum, the field left as it is). pfsck dropped the leaf as
/// "depth does not match its parent", and with it the file's blocks; its
/// tree repair and its copy of shared blocks dropped or skipped it too.
#[test]
fn extent_leaf_with_a_wrong_depth_field() {
    let csum = MkfsOpts::ext4().block_size(1024);
    let nocsum = MkfsOpts::ext4().block_size(1024).features("^metadata_csum");
    // (name, options, what else is damaged, e2fsck -fn's exit)
    let cases: [(&str, &MkfsOpts, &str, i32); 4] = [
        ("csum", &csum, "", 4),
        ("nocsum", &nocsum, "", 0),
        // A bad entry in the same leaf: the tree is repaired around it.
        ("entry", &nocsum, "entry", 4),
        // /g shares the leaf's third block: pass 1D copies it for /f.
        ("shared", &csum, "shared", 4),
    ];
    for (name, opts, extra, want) in cases {
        let tmp = TempDir::new(&format!("fuzz-leaf-depth-{name}"));
        let img = tmp.join("disk.img");
        let (leaf, mut extents) = image_with_extent_leaf(&tmp, &img, opts);
        if extra == "entry" {
            // The third extent's start: past the file system.
            write_at(
                &img,
                leaf * 1024 + 12 + 2 * 12 + 8,
                &0xFFFF_FFF0u32.to_le_bytes(),
            );
        } else if extra == "shared" {
            let third = debugfs_number(&img, "bmap /f 16");
            debugfs_w(&img, &[format!("sif /g block[5] {third}")]);
        }
        write_at(&img, leaf * 1024 + 6, &0x04b7u16.to_le_bytes());
        let theirs = tmp.join("oracle.img");
        copy_image(&img, &theirs);
        // Its exit: a leaf checksum rewritten alone leaves 0 (the extent
        // handle writes the block without marking the file system).
        let want_fy = oracle_run(&theirs, &["-fy"]).code().unwrap();
        let after = oracle_run(&theirs, &["-fn"]);
        assert_eq!(after.code(), Some(0), "[{name}] {}", after.stdout);
        if !extra.is_empty() {
            // What e2fsck's repair changed is what pfsck's must change.
            extents = extents_of(&debugfs_r(&theirs, "stat /f"));
        }
        let ctx = format!("leaf depth field, {name}");
        let (fn_out, _) = judged_by_oracle(&ctx, &img, want, want_fy);
        assert!(!fn_out.contains("extent node at block"), "{fn_out}");
        let stat = debugfs_r(&img, "stat /f");
        assert_eq!(extents_of(&stat), extents, "[{name}] {stat}");
        assert!(extents.contains("(56):"), "[{name}] {extents}");
    }
}

/// The same leaf depth field on a file of the orphan list, deleted (links
/// 0) or truncated to 20000 bytes: e2fsck's release walks the tree from
/// the root's depth and processes the orphan, then finds nothing (exit 0).
/// pfsck's release stopped at the leaf, and its full check then repaired
/// what the release would have done (exit 1).
#[test]
fn orphan_with_an_extent_leaf_with_a_wrong_depth_field() {
    for (name, cmds) in [
        ("deleted", &["unlink /f", "sif <12> links_count 0"][..]),
        ("truncated", &["sif <12> size 20000"][..]),
    ] {
        let tmp = TempDir::new(&format!("fuzz-orphan-leaf-depth-{name}"));
        let img = tmp.join("disk.img");
        let opts = MkfsOpts::ext4().block_size(1024).features("^metadata_csum");
        let (leaf, _) = image_with_extent_leaf(&tmp, &img, &opts);
        let mut all: Vec<String> = cmds.iter().map(|c| c.to_string()).collect();
        all.extend(["ssv last_orphan 12".into(), "sif <12> dtime 0".into()]);
        debugfs_w(&img, &all);
        write_at(&img, leaf * 1024 + 6, &0x04b7u16.to_le_bytes());
        let theirs = tmp.join("oracle.img");
        copy_image(&img, &theirs);
        let ey = oracle_run(&theirs, &["-fy"]);
        assert_eq!(ey.code(), Some(0), "[{name}] {}", ey.stdout);
        let ctx = format!("orphan, leaf depth field, {name}");
        let (_, fy_out) = judged_by_oracle(&ctx, &img, 4, 0);
        assert!(!fy_out.contains("stopped"), "[{name}] {fy_out}");
        if name == "truncated" {
            let stat = debugfs_r(&img, "stat /f");
            assert_eq!(
                extents_of(&stat),
                extents_of(&debugfs_r(&theirs, "stat /f")),
                "{stat}"
            );
        }
    }
}

/// An inode whose checksum alone fails, named by a directory entry
/// (seed fz13c, damage 110: a symlink). e2fsck's pass 2 knows directories
/// and regular files from pass 1's maps; for any other target it reads
/// the inode again to check the entry's file type, and under -n that
/// read fails on the checksum it was told not to fix: it aborts (exit
/// 12). pfsck went on to pass 5 (exit 4). A regular file is not read
/// again: e2fsck goes on.
#[test]
fn entry_naming_a_symlink_whose_checksum_fails() {
    for (name, path, want) in [("symlink", "/d/l", 12), ("file", "/d/f", 4)] {
        let tmp = TempDir::new(&format!("fuzz-csum-target-{name}"));
        let img = tmp.join("disk.img");
        mkfs(&img, 8 * MIB, &MkfsOpts::ext4().block_size(1024), None);
        let data = tmp.join("data");
        std::fs::write(&data, file_content("f", 3000)).unwrap();
        debugfs_w(
            &img,
            &[
                "mkdir d".to_string(),
                "symlink d/l /a/target".to_string(),
                format!("write {} d/f", data.display()),
            ],
        );
        let ino = inode_of(&img, path);
        // i_checksum_lo
        let at = inode_offset(&img, ino) + 0x7c;
        let old = read_at(&img, at, 1)[0];
        write_at(&img, at, &[old ^ 0x55]);
        let (fn_out, _) = judged_by_oracle(name, &img, want, 1);
        assert!(fn_out.contains("checksum"), "[{name}] {fn_out}");
        assert_eq!(fn_out.contains("Pass 3"), want != 12, "[{name}] {fn_out}");
        assert_eq!(inode_of(&img, path), ino);
    }
}

/// The extents feature turned off on a 64bit file system, and a file's
/// extent pointing past the end (seed fz13c-2, damage 770). e2fsck sets
/// the feature back in pass 0 and its pass 1 clears the bad extent, the
/// file kept. pfsck's check walked the file as an extent tree too, but
/// its repair, reading the feature from the superblock, rewrote i_block
/// as a block map: the extent header zeroed, the next round cleared the
/// inode as having a corrupt header and removed its entry.
#[test]
fn extent_fixed_while_the_feature_is_being_set_back() {
    let tmp = TempDir::new("fuzz-extent-feature-64bit");
    let img = tmp.join("disk.img");
    image_with_file(
        &img,
        &MkfsOpts::ext4().block_size(1024).features("64bit"),
        20000,
    );
    debugfs_w(&img, &["feature ^extent", "sif /f block[5] 9000"]);
    let (fn_out, fy_out) = judged_by_oracle("extent feature off, 64bit", &img, 4, 1);
    assert!(
        fn_out.contains("without the extents feature cannot reach"),
        "{fn_out}"
    );
    assert!(!fy_out.contains("Clear inode"), "{fy_out}");
    assert!(fy_out.contains("Inode 12"), "{fy_out}");
    assert_eq!(inode_of(&img, "/f"), 12);
}

/// The fast_commit flag set in a 1024-block journal's superblock (seed
/// fz13c-2, damage 1823: one bit). With s_num_fc_blks 0 the area is 256
/// blocks, which leaves the journal proper under jbd2's minimum of 1024:
/// e2fsck calls the journal superblock corrupt (-n cannot proceed, exit
/// 12; -y resets it). pfsck found nothing and exited 0.
#[test]
fn fast_commit_area_leaving_too_small_a_journal() {
    let tmp = TempDir::new("fuzz-fc-area");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext4().block_size(1024), 3000);
    let jsb = debugfs_number(&img, "bmap <8> 0");
    assert_eq!(read_at(&img, jsb * 1024 + 0x10, 4), 1024u32.to_be_bytes());
    // The lowest byte of s_feature_incompat (big-endian at 0x28).
    let at = jsb * 1024 + 0x2b;
    let old = read_at(&img, at, 1)[0];
    write_at(&img, at, &[old | 0x20]);
    let (fn_out, _) = judged_by_oracle("fast commit area", &img, 12, 1);
    assert!(fn_out.contains("fast commit"), "{fn_out}");
    file_kept(&img, 3000);
}

/// `ssv last_orphan N` naming an inode that is free (seed fz13c-2,
/// damages 60, 422, 722). e2fsck -n leaves the orphan list alone and its
/// passes find nothing: exit 0. Its -y releases the free inode anyway,
/// which counts it free once more, and pass 5 puts the counts right
/// (exit 1). pfsck -n checked the file system as the release leaves it
/// and exited 4 on those counts.
#[test]
fn orphan_list_naming_a_free_inode() {
    for (opts, ino) in [
        (MkfsOpts::ext4().block_size(1024), 300),
        (MkfsOpts::ext4().block_size(1024), 2000),
        (MkfsOpts::ext2().block_size(1024), 1000),
    ] {
        let tmp = TempDir::new("fuzz-orphan-free");
        let img = tmp.join("disk.img");
        image_with_file(&img, &opts, 3000);
        debugfs_w(&img, &[format!("ssv last_orphan {ino}")]);
        let (fn_out, _) = judged_by_oracle(&format!("last_orphan {ino}"), &img, 0, 1);
        assert!(fn_out.contains("orphan inode list"), "{fn_out}");
        file_kept(&img, 3000);
    }
}

/// A journal inode number past the last inode (seed fz36, damage 16585:
/// `s_journal_inum` 16447 of 16384). e2fsck rejects the number before it
/// reads anything, the superblock's backup of the journal's map
/// included: the journal is invalid (-n cannot proceed, exit 12), and
/// -y clears it, clears inode 8, which still holds the old journal, and
/// makes a new journal. pfsck took the backup (and replayed through it),
/// could not write the journal inode back and answered no, leaving e2fsck
/// the same invalid journal.
#[test]
fn journal_inode_number_past_the_last_inode() {
    let tmp = TempDir::new("fuzz-journal-inum");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext3().block_size(4096), 3000);
    debugfs_w(&img, &["ssv journal_inum 100000"]);
    assert_eq!(oracle_fn(&img), 12);
    let (code, out) = pfsck_code(&["-fn"], &img);
    assert_eq!(code, 12, "{out}");
    assert!(
        out.contains("The journal (inode 100000) is unusable: inode 100000 is past the last inode"),
        "{out}"
    );
    let (_, p, fy) = crate::kept_paths::same_paths("journal inum", &img);
    assert!(!fy.contains("? no"), "{fy}");
    assert_eq!(inode_of(&p, "/f"), 12);
    assert!(dumpe2fs(&p).has_feature("has_journal"), "{fy}");
}

/// The first log block of an empty journal (`s_start` 0) out of range
/// (seed fz13c-2, damages 203, 1223, 1352: `s_first` 2147483647,
/// 2967955263, 2547; 0 too). e2fsck loads the field without judging it
/// and uses it only to replay, so it finds the file system clean and
/// leaves the journal alone. pfsck called the journal superblock
/// corrupt (-n exit 12, -y remade the journal).
#[test]
fn empty_journal_with_a_first_block_out_of_range() {
    for first in [0x7fff_ffffu32, 2547, 0] {
        let tmp = TempDir::new("fuzz-jsb-first");
        let img = tmp.join("disk.img");
        image_with_file(&img, &MkfsOpts::ext4().block_size(1024), 3000);
        let jsb = debugfs_number(&img, "bmap <8> 0");
        assert_eq!(read_at(&img, jsb * 1024 + 0x1c, 4), [0; 4]);
        write_at(&img, jsb * 1024 + 0x14, &first.to_be_bytes());
        judged_by_oracle(&format!("s_first {first}"), &img, 0, 0);
        assert_eq!(read_at(&img, jsb * 1024 + 0x14, 4), first.to_be_bytes());
        file_kept(&img, 3000);
    }
}

/// `s_first_ino` raised past the orphan file (seed fz13c-2, damage 1588,
/// where the superblock checksum was broken too). e2fsck judges the
/// orphan file before the reserved range, so inode 12 stays the orphan
/// file; only lost+found (11) is a reserved inode with a bad mode. pfsck
/// cleared inode 12 as reserved too, and e2fsck then found the orphan
/// file inode not a regular file: a false claim.
#[test]
fn orphan_file_below_a_raised_first_inode() {
    let tmp = TempDir::new("fuzz-orphan-file-first-ino");
    let img = tmp.join("disk.img");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext4().block_size(1024).features("orphan_file"),
        None,
    );
    let data = img.with_extension("data");
    std::fs::write(&data, file_content("f", 5000)).unwrap();
    debugfs_w(&img, &[format!("write {} f", data.display())]);
    assert_eq!(inode_of(&img, "/f"), 13);
    debugfs_w(&img, &["ssv first_ino 13"]);
    let (_, fy_out) = judged_by_oracle("first_ino 13", &img, 12, 1);
    assert!(!fy_out.contains("inode 12"), "{fy_out}");
    let out = debugfs_r(&img, "stat /f");
    assert!(out.contains("Size: 5000"), "{out}");
}

/// A group's `bg_itable_unused` larger than the group on ext2, without
/// group checksums (seed fz13c-2, damage 521: 65534 in group 0). e2fsck
/// declines to clear it and its pass 2 computes the first unused inode
/// in 32-bit arithmetic, which wraps to the top: no entry is in the
/// unused area, exit 0. pfsck capped the mark at the group and found
/// every entry of the group in the unused area (exit 4).
#[test]
fn itable_unused_past_the_group_without_checksums() {
    let tmp = TempDir::new("fuzz-itable-unused-wrap");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext2().block_size(1024), 3000);
    debugfs_w(&img, &["set_bg 0 itable_unused 65534"]);
    // -fy clears the uninit mark e2fsck finds without the feature, which
    // it does without marking the file system changed: exit 0.
    judged_by_oracle("itable_unused 65534", &img, 0, 0);
    file_kept(&img, 3000);
}

/// A reserved inode (the boot loader's, 5) with an xattr block outside
/// the file system (seed fz13c-2, damage 1742), or any xattr block
/// without the ext_attr feature. e2fsck only marks the inode bad, and
/// judges bad inodes in pass 2 when an entry names them, which none does
/// for a reserved inode: exit 0. pfsck reported it in pass 1 (exit 4).
#[test]
fn reserved_inode_with_an_invalid_xattr_block() {
    for (name, opts, blk) in [
        ("out of range", MkfsOpts::ext4().block_size(1024), 1 << 20),
        (
            "no ext_attr",
            MkfsOpts::ext2().block_size(1024).features("^ext_attr"),
            3000,
        ),
    ] {
        let tmp = TempDir::new("fuzz-reserved-xattr");
        let img = tmp.join("disk.img");
        image_with_file(&img, &opts, 3000);
        debugfs_w(&img, &[format!("sif <5> file_acl {blk}")]);
        judged_by_oracle(name, &img, 0, 0);
        file_kept(&img, 3000);
    }
}

/// `s_orphan_file_inum` naming a free inode past its group's
/// itable_unused mark without the orphan_file feature (seed fz13d, damage
/// 1113: 1502 on ext4 with quota). e2fsck's inode scan never reaches
/// that inode, so its pass 1 does not mark it in use and pass 5 finds
/// nothing: exit 0. pfsck expected pass 5 to trip on it (exit 4).
#[test]
fn orphan_file_field_naming_an_inode_never_scanned() {
    let tmp = TempDir::new("fuzz-orphan-field-unscanned");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext4().block_size(1024), 3000);
    let unused = debugfs_r(&img, "stats");
    assert!(unused.contains("unused inodes"), "{unused}");
    debugfs_w(&img, &["ssv orphan_file_inum 1500"]);
    judged_by_oracle("orphan_file_inum 1500", &img, 0, 0);
    file_kept(&img, 3000);
}

/// An inline directory whose system.data entry says its name is 6 bytes,
/// "data" and two NULs, with the inode checksum then failing (seed fz13d,
/// damage 2585). libext2fs joins prefix and name into a C string, so
/// e2fsck still finds system.data and only fixes the checksum. pfsck
/// compared the name's bytes, found no system.data, truncated the
/// directory and cleared it, losing its entries. Under -n, e2fsck's pass 2
/// cannot read the directory again (its checksum still fails), so it
/// skips it: pass 3 finds no '..' and pass 4 stops at the inode (exit 12).
#[test]
fn inline_data_name_padded_with_nuls() {
    let tmp = TempDir::new("fuzz-inline-name-nuls");
    let img = tmp.join("disk.img");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext4().block_size(4096).features("inline_data"),
        None,
    );
    debugfs_w(&img, &["mkdir d", "symlink d/l /a/target"]);
    let dir = inode_of(&img, "/d");
    let link = inode_of(&img, "/d/l");
    let raw = inode_offset(&img, dir);
    let extra = u16::from_le_bytes(read_at(&img, raw + 128, 2).try_into().unwrap());
    // The magic, then the first entry: name length, index, ..., hash, name.
    let entry = raw + 128 + u64::from(extra) + 4;
    let head = read_at(&img, entry, 24);
    assert_eq!(&head[..2], &[4, 7], "{head:?}");
    assert_eq!(&head[12..16], &[0; 4], "hashed entry: {head:?}");
    assert_eq!(&head[16..24], b"data\0\0\0\0", "{head:?}");
    write_at(&img, entry, &[6]);
    let (fn_out, fy_out) = judged_by_oracle("name data\\0\\0", &img, 12, 1);
    assert!(fn_out.contains("checksum"), "{fn_out}");
    let no_parent = format!("'..' in /d ({dir}) names <The NULL inode>");
    assert!(fn_out.contains(&no_parent), "{fn_out}");
    assert!(!fy_out.contains("inline data"), "{fy_out}");
    assert_eq!(inode_of(&img, "/d"), dir);
    assert_eq!(inode_of(&img, "/d/l"), link);
}

// ---- seed fz33 ----

/// A journal inode marked encrypted, or as holding inline data, with its
/// extent tree intact (the flag bits of seed fz33, damage 2706). e2fsck
/// takes no encrypted inode for a journal, and its walk of an inline-data
/// inode's map finds no block: the journal is invalid (and the backup in
/// the superblock, an extent root read as block pointers, does not help),
/// so -n cannot proceed and -y clears and recreates the journal. pfsck
/// read the journal through the extent tree and said clean.
#[test]
fn journal_inode_encrypted_or_inline() {
    for flags in ["0x80800", "0x10080000"] {
        let tmp = TempDir::new("fuzz-journal-flags");
        let img = tmp.join("disk.img");
        image_with_file(&img, &MkfsOpts::ext4().block_size(1024), 3000);
        debugfs_w(&img, &[format!("sif <8> flags {flags}")]);
        let (fn_out, _) = judged_by_oracle(flags, &img, 12, 1);
        assert!(
            fn_out.contains("The journal (inode 8) is unusable"),
            "[{flags}] {fn_out}"
        );
        file_kept(&img, 3000);
    }
}

/// An invalid journal on bigalloc (seed fz33, damage 2706: every flag
/// of the journal inode set). The new journal was left to a later run on
/// bigalloc, so -y answered no to clearing it, fixed the inode's flags
/// instead and exited 1, while e2fsck still found the journal invalid
/// (12). e2fsck -y clears the journal and makes a new one of the same
/// size; so does pfsck now, whole clusters at a time.
#[test]
fn invalid_journal_recreated_on_bigalloc() {
    let tmp = TempDir::new("fuzz-journal-bigalloc");
    let img = tmp.join("disk.img");
    let opts = bigalloc_1k();
    mkfs(&img, 16 * MIB, &opts, None);
    let data = img.with_extension("data");
    std::fs::write(&data, file_content("f", 3000)).unwrap();
    debugfs_w(&img, &[format!("write {} f", data.display())]);
    std::fs::remove_file(&data).unwrap();
    debugfs_w(&img, &["sif <8> flags 0xffffffff"]);
    let (_, fy_out) = judged_by_oracle("journal flags on bigalloc", &img, 12, 1);
    assert!(fy_out.contains("Clear? yes"), "{fy_out}");
    let stat = debugfs_r(&img, "stat <8>");
    assert!(stat.contains("Size: 1048576"), "{stat}");
    file_kept(&img, 3000);
}

/// A device, FIFO or socket with INDEX_FL set (seed fz33, damage 2057:
/// an inode table moved onto data blocks, where e2fsck kept inode 64 in
/// /lost+found and pfsck cleared it). e2fsck's pass 1 finds the inode bad
/// and clears the index flag (not a directory); its pass 2 judges the
/// device again, now valid, and keeps it. pfsck judged the device with
/// the flag still set and cleared the inode.
#[test]
fn special_file_with_index_flag_kept() {
    for (name, mknod) in [("cdev", "mknod cdev c 1 2"), ("fifo", "mknod fifo p")] {
        let tmp = TempDir::new("fuzz-special-index");
        let img = tmp.join("disk.img");
        image_with_file(&img, &MkfsOpts::ext4().block_size(1024), 3000);
        debugfs_w(&img, &[mknod]);
        let ino = inode_of(&img, &format!("/{name}"));
        debugfs_w(&img, &[format!("sif <{ino}> flags 0x1000")]);
        let (fn_out, fy_out) = judged_by_oracle(name, &img, 4, 1);
        assert!(fn_out.contains("indexed directory"), "[{name}] {fn_out}");
        assert!(!fy_out.contains("which is free"), "[{name}] {fy_out}");
        assert_eq!(inode_of(&img, &format!("/{name}")), ino, "[{name}]");
        file_kept(&img, 3000);
    }
}

/// The resize feature turned off with the resize inode and reserved GDT
/// blocks left (seed fz33, damages 1658 and 2001: `feature ^resize_inode`),
/// or turned on over meta_bg (damage 1974: `feature resize_inode`).
/// e2fsck asks about them before its passes, each under its own code
/// (0x00002e the reserved GDT blocks, 0x00002f the inode in use, 0x000051
/// meta_bg, then 0x000030 the inode the feature now wants): answered no,
/// the passes decide, and -n exits 0. pfsck asked one question (0x000030)
/// and exited 4. -y turns the feature off, clears the inode and frees
/// the reserved blocks, as e2fsck.
#[test]
fn resize_questions_leave_n_clean() {
    // (name, mkfs features, debugfs command, e2fsck codes asked)
    let cases: [(&str, &str, &str, &[&str]); 2] = [
        (
            "feature off",
            "",
            "feature ^resize_inode",
            &["95 GDT blocks", "not empty"],
        ),
        (
            "resize_inode on meta_bg",
            "meta_bg,^resize_inode",
            "feature resize_inode",
            &["meta_bg", "bad block pointers"],
        ),
    ];
    for (name, features, damage, said) in cases {
        let tmp = TempDir::new("fuzz-resize-questions");
        let img = tmp.join("disk.img");
        let mut opts = MkfsOpts::ext4().block_size(1024);
        if !features.is_empty() {
            opts = opts.features(features).blocks_per_group(1024);
        }
        mkfs(&img, 12 * MIB, &opts, None);
        debugfs_w(&img, &[damage]);
        let (fn_out, _) = judged_by_oracle(name, &img, 0, 1);
        for s in said {
            assert!(fn_out.contains(s), "[{name}] {fn_out}");
        }
    }
}

/// Seed fz33-final #651 (ext3-1k, `write inode+0x30/4@69632`): the
/// bad-block list names block 8, a reserved descriptor block of group 0.
/// e2fsck names what a bad block in metadata holds only for the
/// superblock, the descriptors and the bitmaps; of any other metadata
/// block it only remarks that it was claimed (0x01001D) and exits 0 in
/// every mode. pfsck asked to clear it and exited 4.
#[test]
fn bad_block_in_reserved_descriptors_is_remarked() {
    let tmp = TempDir::new("fuzz-bad-reserved-gdt");
    let img = tmp.join("disk.img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext3().block_size(1024), None);
    debugfs_w(
        &img,
        &[
            "sif <1> block[0] 8",
            "sif <1> size 1024",
            "sif <1> blocks 2",
        ],
    );
    crate::problem_codes::assert_same_codes(&img, &[0x01001D]);
    judged_by_oracle("bad-reserved-gdt", &img, 0, 0);
    both_exit(&img, &["-fp"], 0);
}

// ---- seed fz33-20k ----

/// An inodes per group that is not a multiple of 8 on a file system of
/// one group, so with no backup superblock (seed fz33-20k, damages 895,
/// 3571 and 11450: `ssv inodes_per_group 44`, 30, 42). e2fsck believes
/// the field and cuts the inode count to it; its library reads a group's
/// inode bitmap in whole bytes, so the inodes of the last, partial byte
/// always read free, and e2fsck -y itself leaves "inode bitmap
/// differences" it finds on the next run. pfsck read those bits and
/// claimed a clean repair (exit 1); it now reads them as e2fsck does and
/// says the errors its repair leaves (exit 4), and -n then agrees with
/// e2fsck.
#[test]
fn inodes_per_group_not_a_multiple_of_eight() {
    let tmp = TempDir::new("fuzz-ipg-partial-byte");
    let img = tmp.join("disk.img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext2().block_size(4096), None);
    let data = img.with_extension("data");
    std::fs::write(&data, file_content("f", 100)).unwrap();
    // Inodes 12 to 23: 17 to 20 lie in the partial byte of 20 per group.
    let writes: Vec<String> = (1..=12)
        .map(|i| format!("write {} f{i}", data.display()))
        .collect();
    debugfs_w(&img, &writes);
    std::fs::remove_file(&data).unwrap();
    assert_eq!(inode_of(&img, "/f9"), 20);
    debugfs_w(&img, &["ssv inodes_per_group 20"]);
    assert_eq!(oracle_fn(&img), 12);
    let (code, out) = pfsck_code(&["-fn"], &img);
    assert_eq!(code, 12, "pfsck -fn:\n{out}");
    let undo = tmp.join("undo");
    let (code, fy_out) = pfsck_code(&["-fy", "-z", undo.to_str().unwrap()], &img);
    assert_eq!(code, 4, "pfsck -fy:\n{fy_out}");
    assert!(fy_out.contains("errors are left"), "{fy_out}");
    let after = oracle_run(&img, &["-fn"]);
    assert_eq!(after.code(), Some(4), "{}", after.stdout);
    assert!(after.stdout.contains("+(17--20)"), "{}", after.stdout);
    let (code, out) = pfsck_code(&["-fn"], &img);
    assert_eq!(code, 4, "pfsck -fn after:\n{out}");
    assert!(out.contains("+(17--20)"), "{out}");
    assert_eq!(inode_of(&img, "/f9"), 20);
}

/// Fewer reserved GDT blocks on 1 KiB bigalloc (seed fz33-20k, damage
/// 9110: `ssv reserved_gdt_blocks 22`). Group 0 starts at block 0 there,
/// yet the superblock is block 1: the reserved blocks are 3 to 24, and
/// cluster 6 (blocks 24 to 27) holds the last one. pfsck counted the
/// superblock at block 0, freed that cluster with the ones past the new
/// end, and claimed a repair e2fsck then found wrong (+24).
#[test]
fn fewer_reserved_gdt_blocks_on_1k_bigalloc() {
    let tmp = TempDir::new("fuzz-rsv-gdt-bigalloc");
    let img = tmp.join("disk.img");
    let opts = bigalloc_1k();
    mkfs(&img, 16 * MIB, &opts, None);
    debugfs_w(&img, &["ssv reserved_gdt_blocks 22"]);
    let (fn_out, _) = judged_by_oracle("reserved_gdt_blocks 22", &img, 4, 1);
    assert!(
        fn_out.contains("Blocks whose bitmap bit is wrong:  -28\n"),
        "{fn_out}"
    );
}

/// `s_orphan_file_inum` naming the root without the orphan_file feature
/// (seed fz33-20k, damage 5417: `ssv orphan_file_inum 2` on ext4).
/// e2fsck's pass 2 rejects every entry naming the orphan file's inode,
/// here '.' of / and each '..' naming it, and -y clears them only to
/// find the same again. pfsck left reserved inodes out of its look at
/// such fields and said clean. The field is what is wrong: it is
/// cleared, and the tree stays as it is.
#[test]
fn orphan_file_field_naming_the_root() {
    let tmp = TempDir::new("fuzz-orphan-field-root");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext4().block_size(1024), 3000);
    debugfs_w(&img, &["mkdir d", "ssv orphan_file_inum 2"]);
    let theirs = tmp.join("oracle.img");
    copy_image(&img, &theirs);
    let oracle = oracle_run(&theirs, &["-fn"]);
    assert!(
        oracle
            .stdout
            .contains("Entry '..' in /d (13) has invalid inode #: 2."),
        "{}",
        oracle.stdout
    );
    let (fn_out, _) = judged_by_oracle("orphan_file_inum 2", &img, 4, 1);
    assert!(fn_out.contains("inode 2 as its orphan file"), "{fn_out}");
    file_kept(&img, 3000);
    assert_eq!(inode_of(&img, "/d"), 13);
}

/// `s_orphan_file_inum` naming a free inode without the feature on ext3
/// (seed fz34a, damage 358: `write sb+0x280/4`, inode 4087). e2fsck's
/// pass 1 passes over an unlinked inode before it looks at what the
/// orphan field names, so it marks nothing in use: exit 0, whatever the
/// free inode still holds. pfsck expected an inode bitmap difference
/// there, as for the project quota field, and exited 4. Linked, the
/// inode is cleared as an orphan file holding data, as before.
#[test]
fn orphan_file_field_naming_an_unlinked_inode() {
    for (name, edit, want) in [
        ("free", None, 0),
        ("free with blocks", Some("sif <40> blocks 8"), 0),
        ("linked", Some("sif <40> links_count 1"), 4),
    ] {
        let tmp = TempDir::new("fuzz-orphan-field-unlinked");
        let img = tmp.join("disk.img");
        image_with_file(&img, &MkfsOpts::ext3().block_size(1024), 3000);
        let mut cmds = vec!["ssv orphan_file_inum 40".to_string()];
        cmds.extend(edit.map(str::to_string));
        debugfs_w(&img, &cmds);
        judged_by_oracle(name, &img, want, i32::from(want != 0));
        file_kept(&img, 3000);
    }
}

/// A superblock field overwritten without its checksum on a file system
/// of one group, where no backup exists (seed fz33-20k, damages 8462:
/// `s_orphan_file_inum`, and 10279: `s_reserved_gdt_blocks`). e2fsck's
/// library refuses the primary, no backup is found, and e2fsck stops
/// (exit 8) in every mode, writing nothing. pfsck checked on through the
/// damaged primary, and its repair sealed the garbage field with a fresh
/// checksum: e2fsck then found what the field broke (exit 1, then 4).
/// A field that made the primary unreadable (the inodes count) stopped
/// pfsck -n on that field (12), not on the checksum e2fsck judges first.
#[test]
fn superblock_checksum_wrong_without_backup() {
    let bigalloc = bigalloc_1k();
    // (name, options, size, superblock offset)
    let cases = [
        (
            "bigalloc orphan_file_inum",
            bigalloc.clone(),
            16 * MIB,
            0x280,
        ),
        ("4k reserved_gdt_blocks", MkfsOpts::ext4(), 8 * MIB, 0xce),
        // A field that makes the superblock unreadable: the library
        // judges the checksum first (seed fz34b, damages 305 and 784).
        ("bigalloc inodes_count", bigalloc, 16 * MIB, 0x0),
    ];
    for (name, opts, size, at) in cases {
        let tmp = TempDir::new("fuzz-sb-csum-one-group");
        let img = tmp.join("disk.img");
        mkfs(&img, size, &opts, None);
        assert_eq!(dumpe2fs(&img).groups_count(), 1, "[{name}]");
        let old = read_at(&img, 1024 + at, 1)[0];
        write_at(&img, 1024 + at, &[old ^ 0x07]);
        for args in [["-fn"], ["-fy"], ["-fp"]] {
            let (out, mine) = both_exit(&img, &args, 8);
            assert!(out.contains("checksum does not match"), "[{name}] {out}");
            assert_eq!(hash_file(&mine), hash_file(&img), "[{name}] {args:?} wrote");
        }
    }
}

/// The resize inode's mode overwritten with one that maps no block (seed
/// fz33-20k, damage 6506: a socket on bigalloc). e2fsck's pass 1 walks
/// no map for such a mode, so the double indirect block is free to its
/// pass 5 (-n: "-1092", exit 4); -y clears the mode and frees the block.
/// pfsck claimed the double indirect block whatever the mode, and its
/// repair left it marked in use (e2fsck -fn after: 4).
#[test]
fn resize_inode_with_a_mode_that_maps_nothing() {
    let bigalloc = bigalloc_1k();
    for (name, opts) in [
        ("bigalloc", bigalloc),
        ("1k", MkfsOpts::ext4().block_size(1024)),
    ] {
        let tmp = TempDir::new("fuzz-resize-mode");
        let img = tmp.join("disk.img");
        mkfs(&img, 16 * MIB, &opts, None);
        let dind = debugfs_r(&img, "stat <7>");
        let dind = dind
            .split("(DIND):")
            .nth(1)
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .unwrap_or_else(|| panic!("[{name}] {dind}"))
            .to_string();
        debugfs_w(&img, &["sif <7> mode 0140600"]);
        let (fn_out, _) = judged_by_oracle(name, &img, 4, 1);
        assert!(
            fn_out.contains(&format!("Blocks whose bitmap bit is wrong:  -{dind}")),
            "[{name}] {fn_out}"
        );
    }
}

/// A directory holding inline data with the index flag set (seed
/// fz33-20k, damage 13960: every flag of an inline directory). e2fsck
/// finds no root block for the index, reports it and clears the flag.
/// pfsck left inline directories out of its index check: -y cleared the
/// other flags, kept the index flag and exited 1 (e2fsck -fn after: 4).
#[test]
fn inline_directory_with_the_index_flag() {
    for flags in ["0x10001000", "0x7fffffff"] {
        let tmp = TempDir::new("fuzz-inline-index");
        let img = tmp.join("disk.img");
        mkfs(
            &img,
            8 * MIB,
            &MkfsOpts::ext4().block_size(4096).features("inline_data"),
            None,
        );
        debugfs_w(&img, &["mkdir d", "mkdir d/e"]);
        let e = inode_of(&img, "/d/e");
        debugfs_w(&img, &[format!("sif d flags {flags}")]);
        let (fn_out, fy_out) = judged_by_oracle(flags, &img, 4, 1);
        assert!(
            fn_out.contains("index root is unusable"),
            "[{flags}] {fn_out}"
        );
        assert!(!fy_out.contains("Pass 3A"), "[{flags}] {fy_out}");
        assert_eq!(inode_of(&img, "/d/e"), e, "[{flags}]");
    }
}

/// `s_orphan_file_inum` naming a reserved inode without the orphan_file
/// feature (seed fz33-20k, damage 8462 with its checksum made good: the
/// resize inode, 7). e2fsck's pass 1 asks whether an inode is the orphan
/// file before it judges the reserved ones, finds the resize inode "not
/// in use, but contains data" (exit 4), and -y clears it. pfsck judged
/// the field only for inodes past the reserved ones: -n said clean and
/// -y exited 0 on what e2fsck still found. The field is cleared; the
/// resize inode is kept. Reserved inodes that hold nothing, and those
/// e2fsck takes by number first (the journal), change nothing.
#[test]
fn orphan_file_field_naming_a_reserved_inode() {
    for (ino, want) in [(7, 4), (8, 0), (9, 0)] {
        let tmp = TempDir::new("fuzz-orphan-field-reserved");
        let img = tmp.join("disk.img");
        image_with_file(&img, &MkfsOpts::ext4().block_size(1024), 3000);
        debugfs_w(&img, &[format!("ssv orphan_file_inum {ino}")]);
        let name = format!("orphan_file_inum {ino}");
        let (fn_out, _) = judged_by_oracle(&name, &img, want, want.min(1));
        assert_eq!(fn_out.contains("inode 7"), ino == 7, "[{name}] {fn_out}");
        let stat = debugfs_r(&img, "stat <7>");
        assert!(stat.contains("Links: 1"), "[{name}] {stat}");
        file_kept(&img, 3000);
    }
}

/// Every incompat feature cleared on an inline_data file system (seed
/// fz33-20k, damage 8472: `ssv feature_incompat 0`). e2fsck -y sets
/// inline_data back at the first inode with sound inline data, and its
/// size check of a directory flagged inline reads the inline data with
/// the feature or without it. pfsck judged those directories without
/// the feature: no blocks and a size of 60 for none, so it cleared them
/// and lost what they held; it then asked about the feature at every
/// inline inode, where e2fsck asks once.
#[test]
fn inline_dirs_kept_when_incompat_cleared() {
    let tmp = TempDir::new("fuzz-incompat-cleared");
    let img = tmp.join("disk.img");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext4().block_size(4096).features("inline_data"),
        None,
    );
    debugfs_w(&img, &["mkdir d", "mkdir d/e", "symlink d/e/l /a/target"]);
    let (d, e, l) = (
        inode_of(&img, "/d"),
        inode_of(&img, "/d/e"),
        inode_of(&img, "/d/e/l"),
    );
    assert!(debugfs_r(&img, "stat /d/e").contains("Size of inline data: 60"));
    debugfs_w(&img, &["ssv feature_incompat 0"]);
    let (fn_out, fy_out) = judged_by_oracle("feature_incompat 0", &img, 4, 1);
    assert!(
        fn_out.contains(&format!("Inode {e} holds inline data")),
        "{fn_out}"
    );
    assert!(!fn_out.contains("invalid size"), "{fn_out}");
    assert_eq!(fy_out.matches("holds inline data").count(), 1, "{fy_out}");
    assert!(!fy_out.contains("Connect to"), "{fy_out}");
    assert_eq!(inode_of(&img, "/d"), d);
    assert_eq!(inode_of(&img, "/d/e"), e);
    assert_eq!(inode_of(&img, "/d/e/l"), l);
}

/// A journal to replay when the primary superblock's checksum fails (seed
/// fz33-20k, damages 10733 and 2676: a bit of the UUID flipped). e2fsck
/// goes on from the backup, replays the journal (the backup does not say
/// it needs recovery, so it runs it anyway) and writes the backup back as
/// the primary. pfsck's replay view rewrote the primary superblock with
/// its checksum redone, so the re-check took that primary, bad UUID and
/// all: every metadata checksum failed and -fy cleared every inode.
#[test]
fn replay_when_primary_superblock_is_refused() {
    let tmp = TempDir::new("fuzz-replay-backup-sb");
    let opts = MkfsOpts::ext4().block_size(1024);
    let img = journal::build(&tmp, &opts, 16 * MIB, "", |free| {
        vec![journal::Txn::write(&free[..2], 9)]
    });
    let data = tmp.join("f.data");
    std::fs::write(&data, file_content("f", 3000)).unwrap();
    debugfs_w(&img, &["mkdir d", &format!("write {} d/f", data.display())]);
    let (d, f) = (inode_of(&img, "/d"), inode_of(&img, "/d/f"));
    let uuid = 1024 + 0x69;
    let byte = read_at(&img, uuid, 1)[0];
    write_at(&img, uuid, &[byte ^ 0x24]);
    let (fn_out, fy_out) = judged_by_oracle("uuid flipped", &img, 4, 1);
    assert!(fn_out.contains("using the copy at block"), "{fn_out}");
    assert!(fy_out.contains("replaying the journal"), "{fy_out}");
    assert!(!fy_out.contains("Clear? yes"), "{fy_out}");
    assert_eq!(inode_of(&img, "/d"), d);
    assert_eq!(inode_of(&img, "/d/f"), f);
    assert!(debugfs_r(&img, "stat /d/f").contains("Size: 3000"));
}

/// A file with both INLINE_DATA_FL and EXTENTS_FL, no extent header in
/// i_block, a size no inline data holds and an i_extra_isize past the
/// inode's end (seed fz33-20k, damage 4704: 512 bytes of an inode table
/// overwritten). e2fsck reckons the room for inline data unsigned, so
/// that i_extra_isize makes it huge: the size fits, it drops the extent
/// flag and keeps the file (truncated). pfsck's check saturated the room
/// to 0 and asked to clear the inode, and its fixer, deciding apart from
/// the check, cleared it.
#[test]
fn inline_and_extent_flags_with_extra_isize_past_the_inode() {
    let tmp = TempDir::new("fuzz-inline-extents-isize");
    let img = tmp.join("disk.img");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext4().block_size(4096).features("inline_data"),
        None,
    );
    let data = tmp.join("f.data");
    std::fs::write(&data, file_content("f", 30)).unwrap();
    debugfs_w(&img, &[format!("write {} f", data.display())]);
    let f = inode_of(&img, "/f");
    debugfs_w(
        &img,
        &[
            "sif /f flags 0x10080000",
            "sif /f size 100000",
            "sif /f block[0] 0xffffffff",
            "sif /f extra_isize 200",
        ],
    );
    let (fn_out, fy_out) = judged_by_oracle("extra_isize 200", &img, 4, 1);
    assert!(fn_out.contains("INLINE_DATA_FL and EXTENTS_FL"), "{fn_out}");
    assert!(!fy_out.contains("Clear inode"), "{fy_out}");
    assert_eq!(inode_of(&img, "/f"), f);
}

/// A refused primary superblock, or only its descriptors refused (group
/// 0's inode table at block 0), and a backup whose descriptors are bad
/// too (seed fz33-20k, damage 11560: a bit of group 1's inode bitmap
/// address flipped in the backup table). e2fsck takes any backup that
/// opens and relocates the bitmap; pfsck wanted a backup with sound
/// descriptors, found none and checked the primary, whose table cost
/// every file (-fn stopped at 12, -fy lost 20 files).
#[test]
fn refused_primary_and_backup_with_bad_descriptors() {
    for (name, csum_broken) in [("superblock refused", true), ("descriptors refused", false)] {
        let tmp = TempDir::new("fuzz-backup-bad-desc");
        let img = tmp.join("disk.img");
        let opts = MkfsOpts::ext4().block_size(1024).features("^flex_bg");
        mkfs(&img, 12 * MIB, &opts, None);
        let data = tmp.join("f.data");
        std::fs::write(&data, file_content("f", 5000)).unwrap();
        debugfs_w(&img, &["mkdir d", &format!("write {} d/f", data.display())]);
        let (d, f) = (inode_of(&img, "/d"), inode_of(&img, "/d/f"));
        debugfs_w(&img, &["set_bg 0 inode_table 0"]);
        // Group 1's descriptor in the backup table (block 8194), 64 bytes
        // each: the top byte of bg_inode_bitmap_hi.
        let hi = 8194 * 1024 + 64 + 0x27;
        write_at(&img, hi, &[0x80]);
        if csum_broken {
            let csum = 1024 + 0x3FC;
            let byte = read_at(&img, csum, 1)[0];
            write_at(&img, csum, &[byte ^ 0xFF]);
        }
        let (fn_out, fy_out) = judged_by_oracle(name, &img, 4, 1);
        assert!(
            fn_out.contains("using the copy at block"),
            "[{name}] {fn_out}"
        );
        assert!(fy_out.contains("Relocate? yes"), "[{name}] {fy_out}");
        assert_eq!(
            fy_out.matches("using the copy at block").count(),
            1,
            "[{name}] {fy_out}"
        );
        assert_eq!(inode_of(&img, "/d"), d, "[{name}]");
        assert_eq!(inode_of(&img, "/d/f"), f, "[{name}]");
        assert!(
            debugfs_r(&img, "stat /d/f").contains("Size: 5000"),
            "[{name}]"
        );
    }
}

// ---- seed fz34b ----

/// Unknown incompat features with descriptors the new features no longer
/// read right (seed fz34b, damage 242: `ssv feature_incompat 5`, the
/// compression and recovery bits alone, 64bit gone). libext2fs refuses
/// the features before it reads the descriptors, and e2fsck looks for no
/// backup then: it stops (8). pfsck found the descriptors bad first,
/// checked through the backup, whose features are sound, and repaired
/// (exit 4, then 1).
#[test]
fn unknown_incompat_feature_stops_before_the_backup() {
    let tmp = TempDir::new("fuzz-incompat-backup");
    let img = tmp.join("disk.img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    assert!(dumpe2fs(&img).groups_count() > 1);
    debugfs_w(&img, &["ssv feature_incompat 5"]);
    for args in [["-fn"], ["-fy"]] {
        let (out, mine) = both_exit(&img, &args, 8);
        assert!(out.contains("compression"), "{args:?} {out}");
        assert_eq!(hash_file(&mine), hash_file(&img), "{args:?} wrote");
    }
}

/// A directory's first record unreadable (its name_len raised past its
/// rec_len) while pass 1 fixes an inode's checksum elsewhere (seed
/// fz33-20k, damage 303). e2fsck salvages the block, and its fix of '.'
/// brings the old records back: every entry stays. pfsck's directory
/// fixes waited for a round without pass 1 fixes, but the link counts
/// and unattached inodes pass 4 judged on the salvaged view (where the
/// records behind the first are gone) were fixed at once: a zero-length
/// file was cleared, and its entry with it in the next round.
#[test]
fn salvaged_first_record_beside_a_pass1_fix() {
    let tmp = TempDir::new("fuzz-salvage-pass1");
    let img = tmp.join("disk.img");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(
        &img,
        &[
            "mkdir d",
            "write /dev/null d/empty",
            "write /etc/hostname d/f",
            "symlink d/l /etc/hostname",
            "write /etc/hostname other",
        ],
    );
    let dir = debugfs_number(&img, "bmap /d 0");
    write_at(&img, dir * 1024 + 6, &[45]);
    // i_generation changed behind the inode's checksum.
    let other = inode_offset(&img, inode_of(&img, "/other"));
    write_at(&img, other + 0x64, &[0x5a]);
    let oracle = oracle_run(&img, &["-fn"]);
    assert!(
        oracle.stdout.contains("checksum does not match"),
        "{}",
        oracle.stdout
    );
    // -n stops at the block it may not salvage (e2fsck -n aborts, 8).
    let (code, _) = pfsck_code(&["-fn"], &img);
    assert_eq!(Some(code), oracle.code());
    let (code, out) = pfsck_code(&["-fy"], &img);
    assert_eq!(code, 1, "pfsck -fy:\n{out}");
    assert!(!out.contains("which is free"), "{out}");
    assert_eq!(oracle_fn(&img), 0, "pfsck -fy:\n{out}");
    let ls = debugfs_r(&img, "ls /d");
    for name in ["empty", "f", "l"] {
        assert!(ls.contains(&format!(" {name} ")), "{name}: {ls}");
    }
}

/// A directory whose extent tree has an index level, its mode's type bits
/// gone (seed fz33-20k, damage 15747: `sif <20> mode 1408`, an indexed
/// directory). e2fsck looks its block 0 up through the tree, finds '.'
/// and '..' there, and makes the inode a directory again (0x01000d);
/// indexed, it reads the root through the tree too and finds it sound.
/// pfsck followed only a tree whose root holds the leaves: it cleared the
/// inode for its bad mode and every file below it went to /lost+found
/// (and, indexed, it found no root).
#[test]
fn typeless_directory_with_an_extent_index_kept() {
    for indexed in [false, true] {
        let tmp = TempDir::new("fuzz-really-dir-depth");
        let img = tmp.join("disk.img");
        let opts = MkfsOpts::ext4().block_size(1024).features("^metadata_csum");
        mkfs(&img, 8 * MIB, &opts, None);
        let data = tmp.join("data");
        std::fs::write(&data, "hello\n").unwrap();
        // Each file's block lands between two of the directory's: more
        // extents than the inode holds.
        let mut cmds = vec!["mkdir big".to_string()];
        for i in 0..100 {
            cmds.push(format!(
                "write {} big/entry-with-a-rather-long-name-{i:04}",
                data.display()
            ));
        }
        debugfs_w(&img, &cmds);
        if indexed {
            oracle_run(&img, &["-fyD"]);
            let stat = debugfs_r(&img, "stat /big");
            assert!(stat.contains("Flags: 0x81000"), "{stat}");
        }
        let ex = debugfs_r(&img, "ex /big");
        assert!(ex.contains(" 0/ 1 "), "{ex}");
        debugfs_w(&img, &["sif /big mode 02600"]);
        let ctx = format!("indexed {indexed}");
        let (fn_out, fy_out) = judged_by_oracle(&ctx, &img, 4, 1);
        assert!(
            fn_out.contains("contents are a directory's"),
            "[{ctx}] {fn_out}"
        );
        assert!(
            !fn_out.contains("index root is unusable"),
            "[{ctx}] {fn_out}"
        );
        assert!(!fy_out.contains("lost+found"), "[{ctx}] {fy_out}");
        let stat = debugfs_r(&img, "stat /big/entry-with-a-rather-long-name-0099");
        assert!(stat.contains("Size: 6"), "[{ctx}] {stat}");
    }
}

/// A journal superblock listing several users (`s_nr_users`, seed
/// fz34-final: damages 277, 1605 and 1176 `write jsb+0x40`, and on the
/// orphan profiles 649, 2271 and 9473; with a group descriptor written
/// too, 1946). e2fsck -n clears the fields past the version 1 layout
/// (declined, logged as 0x00002A), then calls the several users fatal:
/// it ends as it prints that, before the problem log entry, and before
/// its superblock check (the group descriptors, the orphans) and pass 1.
/// pfsck -n's report named e2fsck's 0x000010, the descriptor checksum
/// codes it judges first, and with orphans to release, the pass 1 and 5
/// codes an unreleased orphan leaves: none of them are in e2fsck's log.
#[test]
fn journal_with_several_users_ends_the_check_before_the_orphans() {
    for damage in ["", "orphan", "descriptor checksum"] {
        let tmp = TempDir::new("fuzz-jsb-users");
        let img = tmp.join("disk.img");
        let opts = MkfsOpts::ext4()
            .block_size(1024)
            .features("^metadata_csum,uninit_bg");
        image_with_file(&img, &opts, 3000);
        match damage {
            "orphan" => {
                debugfs_w(&img, &["sif <12> links_count 0", "ssv last_orphan 12"]);
            }
            "descriptor checksum" => {
                debugfs_w(&img, &["set_bg 0 checksum 0x1234"]);
            }
            _ => {}
        }
        let jsb = debugfs_number(&img, "bmap <8> 0");
        write_at(&img, jsb * 1024 + 0x40, &11u32.to_be_bytes());
        let out = pfsck(&["-fn".as_ref(), img.as_os_str()]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(12), "{damage}: {text}");
        assert!(
            text.contains("The journal lists 11 file systems as its users (unsupported)"),
            "{text}"
        );
        if damage == "descriptor checksum" {
            assert!(
                text.contains("Group descriptor checksums are wrong"),
                "{text}"
            );
        }
        crate::problem_codes::assert_same_codes(&img, &[0x00002A]);
    }
}

/// `s_journal_inum` moved off inode 8 (seed fz34-final: damages 3570,
/// 7123 and 1943, `ssv journal_inum` 38, 3900, 2). e2fsck finds its
/// journal through the superblock's backup of the block map, and in pass
/// 1 offers to clear inode 8, which still maps the old journal's blocks.
/// Declined (-n), it checks inode 8 on as an ordinary file, so those
/// blocks stay in use. pfsck left them unclaimed: its pass 5 reported
/// them all free (0x050003, 0x050006, 0x050014 on top of e2fsck's one
/// code).
#[test]
fn stray_journal_inode_declined_keeps_its_blocks() {
    let tmp = TempDir::new("fuzz-journal-inum");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext3().block_size(1024), 3000);
    debugfs_w(&img, &["ssv journal_inum 30"]);
    let (_, fn_out) = pfsck_code(&["-fn"], &img);
    assert!(
        fn_out.contains("journal inode is not in use, but contains data"),
        "{fn_out}"
    );
    assert!(
        !fn_out.contains("Blocks whose bitmap bit is wrong"),
        "{fn_out}"
    );
    crate::problem_codes::assert_same_codes(&img, &[0x010034]);
    judged_by_oracle("journal_inum 30", &img, 4, 1);
    file_kept(&img, 3000);
}

/// An unknown incompatible feature set in a checksummed journal
/// superblock whose checksum then fails (seed fz34-final, damage 7300:
/// ext3 4 KiB, `write jsb+0x28`). e2fsck judges the journal's features
/// before its checksum: it asks to abort (declined, 0x000026), then calls
/// the superblock corrupt (0x000015). pfsck judged the checksum first and
/// named only the corruption.
#[test]
fn journal_features_judged_before_its_checksum() {
    let tmp = TempDir::new("fuzz-jsb-incompat");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext4().block_size(1024), 3000);
    // An empty transaction list: debugfs turns the journal's checksums on.
    debugfs_w(&img, &["jo -c", "jc"]);
    let jsb = debugfs_number(&img, "bmap <8> 0");
    let incompat = read_at(&img, jsb * 1024 + 0x28, 4);
    let mut v = u32::from_be_bytes([incompat[0], incompat[1], incompat[2], incompat[3]]);
    // Checksum v3 on: the superblock carries a checksum the write breaks.
    assert_ne!(v & 0x10, 0, "no journal checksum v3");
    v |= 0x0100_0000;
    write_at(&img, jsb * 1024 + 0x28, &v.to_be_bytes());
    let (code, out) = pfsck_code(&["-fn"], &img);
    assert_eq!(code, 12, "{out}");
    assert!(out.contains("unsupported feature(s): incompat 0x"), "{out}");
    crate::problem_codes::assert_same_codes(&img, &[0x000026, 0x000015]);
}

/// A file's triple indirect pointer naming the group descriptor block
/// (seed fz34-final, damage 5314: `sif <13> block[TIND] 2`). e2fsck walks
/// a block of critical metadata used as an indirect block all the same,
/// says so (0x010071), claims what it points to and never writes it: an
/// illegal pointer inside it is dropped in core without a question. pfsck
/// reported the descriptors' own numbers as illegal indirect blocks and
/// its -n stopped there (exit 12, e2fsck 4).
#[test]
fn indirect_block_on_critical_metadata() {
    let tmp = TempDir::new("fuzz-ind-on-meta");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext2().block_size(1024), 5000);
    debugfs_w(&img, &["sif /f block[TIND] 2"]);
    let oracle = oracle_run(&img, &["-fn"]);
    assert_eq!(oracle.code(), Some(4), "{}", oracle.stdout);
    let (code, out) = pfsck_code(&["-fn"], &img);
    assert_eq!(code, 4, "pfsck -fn:\n{out}");
    let blocks_of_lines = |text: &str, marker: &str, word: usize| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains(marker))
            .filter_map(|l| l.split_whitespace().nth(word).map(str::to_string))
            .map(|w| w.trim_end_matches(',').to_string())
            .collect()
    };
    let ours = blocks_of_lines(&out, "holds file system metadata, as an indirect block", 4);
    let theirs = blocks_of_lines(&oracle.stdout, "conflicts with critical metadata", 3);
    assert!(ours.len() >= 4, "pfsck -fn:\n{out}");
    assert!(theirs.starts_with(&ours), "{ours:?} / {theirs:?}\n{out}");
    let json = pfsck(&["-fn", "--json", img.to_str().unwrap()]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(report_e2fsck_codes(&json).contains(&0x010071), "{json}");
    if let Some(codes) = e2fsck_codes(&img, &["-fn"]) {
        assert!(codes.contains(&0x010071), "{codes:x?}");
    }
    // The repair clears the file (e2fsck does too, for its illegal
    // pointers) and writes nothing into the descriptors' block but their
    // counts.
    let (code, out) = pfsck_code(&["-fy"], &img);
    assert_eq!(code, 1, "pfsck -fy:\n{out}");
    assert_eq!(oracle_fn(&img), 0, "pfsck -fy:\n{out}");
    let ls = debugfs_r(&img, "ls -l /");
    assert!(ls.contains(" 11 ") && ls.contains("lost+found"), "{ls}");
}

/// A superblock counting more blocks than the device holds (seed
/// fz34-final, damages 2842, 6930, 8765, 888: `ssv blocks_count`, or a
/// byte of it). e2fsck asks whether to abort before it decides to skip a
/// clean file system: -n declines and checks in full (exit 4: the
/// bitmap's padding past the old end), -p stops for a person (exit 4,
/// marking the superblock with errors), -y aborts (exit 8, nothing
/// written). pfsck stopped every mode with exit 8, and without -f said
/// the file system was clean.
#[test]
fn block_count_past_the_device() {
    let tmp = TempDir::new("fuzz-size-past-device");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext2().block_size(4096), 5000);
    debugfs_w(&img, &["ssv blocks_count 2100"]);
    for (args, want) in [
        (&["-n"][..], 4),
        (&["-fn"][..], 4),
        (&["-p"][..], 4),
        (&["-y"][..], 8),
        (&["-fy"][..], 8),
    ] {
        let (out, mine) = both_exit(&img, args, want);
        assert!(
            out.contains("The superblock counts 2100 blocks; the device has room for 2048"),
            "{args:?}:\n{out}"
        );
        if args[0].ends_with('n') || args[0].ends_with('y') {
            assert_eq!(hash_file(&mine), hash_file(&img), "pfsck {args:?} wrote");
        }
        if args == ["-fn"] {
            assert!(out.contains("Abort? no"), "{out}");
            assert!(out.contains("Pass 5"), "{out}");
        }
        if args == ["-fy"] {
            assert!(out.contains("Abort? yes"), "{out}");
        }
    }
    let json = pfsck(&["-fn", "--json", img.to_str().unwrap()]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let codes = report_e2fsck_codes(&json);
    assert_eq!(codes.first(), Some(&0x000005), "{json}");
    if let Some(theirs) = e2fsck_codes(&img, &["-fn"]) {
        let mut ours = codes.clone();
        ours.sort_unstable();
        ours.dedup();
        assert_eq!(ours, theirs);
    }
}

/// An indirect pointer outside the file system, with a good indirect
/// block read after it (seed fz34-final, damages 2501, 8763, 9008: the
/// resize inode's single indirect slot, whose double indirect block is
/// read next). e2fsck's walk keeps only the last error, and a good read
/// clears it: its -n goes on (exit 4). It gives up (exit 12) only when
/// the illegal pointer is the walk's last word. pfsck -n stopped at any
/// illegal indirect pointer.
#[test]
fn illegal_indirect_pointer_before_a_good_one() {
    let tmp = TempDir::new("fuzz-illegal-ind-then-good");
    // A file with single and double indirect blocks (1 KiB blocks).
    let base = tmp.join("base.img");
    image_with_file(&base, &MkfsOpts::ext2().block_size(1024), 400_000);
    for (what, cmd, want) in [
        ("single, then double", "sif /f block[IND] 536870912", 4),
        ("double, last", "sif /f block[DIND] 536870912", 12),
        ("resize inode", "sif <7> block[IND] 536870912", 4),
    ] {
        let img = tmp.join("disk.img");
        copy_image(&base, &img);
        debugfs_w(&img, &[cmd]);
        let (out, _) = both_exit(&img, &["-fn"], want);
        assert!(out.contains("536870912"), "[{what}] {out}");
        let (_, mine) = both_exit(&img, &["-fy"], 1);
        assert_eq!(oracle_fn(&mine), 0, "[{what}] e2fsck -fn after pfsck -fy");
    }
}

/// The bad blocks inode naming an xattr block (seed fz34-final, damages
/// 4258 and 2797: `sif <1> file_acl`, a block that holds no xattrs).
/// e2fsck walks that inode's list alone: its i_file_acl only makes the
/// inode invalid, and the block is never read as xattrs. pfsck read it,
/// found its header bad, and its -n stopped where e2fsck would fix the
/// block's reference count (exit 12, e2fsck 4).
#[test]
fn bad_blocks_inode_naming_an_xattr_block() {
    let tmp = TempDir::new("fuzz-badblocks-acl");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext2().block_size(1024), 5000);
    let data = debugfs_number(&img, "bmap /f 0");
    debugfs_w(&img, &[format!("sif <1> file_acl {data}")]);
    let (out, _) = both_exit(&img, &["-fn"], 4);
    assert!(out.contains("bad blocks inode"), "{out}");
    assert!(!out.contains("extended attribute"), "{out}");
    let (_, mine) = both_exit(&img, &["-fy"], 1);
    assert_eq!(oracle_fn(&mine), 0, "e2fsck -fn after pfsck -fy");
    file_kept(&mine, 5000);
}

/// An out-of-range pointer in one of the resize inode's reserved GDT
/// blocks on bigalloc (seed fz34-final, damages 1776, 371, 1071 and 60
/// more: a write or bit flip in an indirect block of inode 7). The
/// resize inode check looks only at the slots that name backups, so
/// e2fsck's pass 1 finds the illegal block and zeroes it. pfsck left
/// every block-map fix to a later run on bigalloc and exited 4; zeroing a
/// pointer allocates and frees nothing by itself (the next round's check
/// counts the clusters), so it now does the same.
#[test]
fn resize_inode_illegal_block_zeroed_on_bigalloc() {
    let tmp = TempDir::new("fuzz-resize-illegal-bigalloc");
    let img = tmp.join("disk.img");
    let opts = bigalloc_1k();
    mkfs(&img, 16 * MIB, &opts, None);
    let data = img.with_extension("data");
    std::fs::write(&data, file_content("f", 3000)).unwrap();
    debugfs_w(&img, &[format!("write {} f", data.display())]);
    std::fs::remove_file(&data).unwrap();
    let ind = first_reserved_gdt_block(&img);
    // Slot 4 names no backup (one group): block 131072, past the end.
    write_at(&img, ind * 1024 + 16, &131_072u32.to_le_bytes());
    crate::problem_codes::assert_same_codes(&img, &[0x01000E]);
    let (fn_out, fy_out) = judged_by_oracle("resize inode on bigalloc", &img, 4, 1);
    assert!(
        fn_out.contains("(131072) of inode 7 is out of bounds.  IGNORED."),
        "{fn_out}"
    );
    assert!(
        fy_out.contains("Inode 7 maps blocks it may not.  Clear? yes"),
        "{fy_out}"
    );
    assert!(
        fy_out.contains("(131072) of inode 7 is out of bounds.  CLEARED."),
        "{fy_out}"
    );
    assert!(!fy_out.contains("Problems left"), "{fy_out}");
    file_kept(&img, 3000);
}

/// A bitmap over other metadata or outside its group on bigalloc (seed
/// fz34-final, damages 573, 4836, 7403 and 10 more: writes and bit flips
/// in the descriptor table). e2fsck's pass 1 asks to relocate it and
/// takes the group's first free cluster. pfsck left relocation to a
/// later run on bigalloc and exited 5; it now moves the bitmap to the
/// same block as e2fsck, marking the cluster's bit, not the block's.
#[test]
fn bitmap_relocated_on_bigalloc() {
    // (damage, pfsck's question, where e2fsck puts them: block bitmap,
    // inode bitmap)
    let cases = [
        (
            "set_bg 0 inode_bitmap 34",
            "Inode bitmap for group 0 (block 34) overlaps other file system metadata.\nRelocate? yes",
            (34, 48),
        ),
        (
            "set_bg 0 inode_bitmap 70000",
            "Group 0's inode bitmap (block 70000) lies outside the group\nRelocate? yes",
            (34, 48),
        ),
        (
            "set_bg 0 block_bitmap 66",
            "Block bitmap for group 0 (block 66) overlaps other file system metadata.\nRelocate? yes",
            (2112, 50),
        ),
    ];
    for (damage, question, at) in cases {
        let tmp = TempDir::new("fuzz-bitmap-bigalloc");
        let img = tmp.join("disk.img");
        let opts = bigalloc_1k();
        mkfs(&img, 16 * MIB, &opts, None);
        debugfs_w(&img, &[damage]);
        let theirs = tmp.join("oracle.img");
        copy_image(&img, &theirs);
        let (_, fy_out) = judged_by_oracle(damage, &img, 4, 1);
        assert!(fy_out.contains(question), "[{damage}] {fy_out}");
        assert_eq!(oracle_run(&theirs, &["-fy"]).code(), Some(1), "[{damage}]");
        for (who, i) in [("e2fsck", &theirs), ("pfsck", &img)] {
            let g = &dumpe2fs(i).groups[0];
            assert_eq!((g.block_bitmap, g.inode_bitmap), at, "[{damage}] {who}");
        }
    }
}

// ---- seed fz34-final: which superblock e2fsck opens ----

const ALL_MODES: &[&str] = &["-fn", "-fy", "-fp"];

/// `img`'s primary superblock refused with no backup e2fsck takes: in
/// each of `modes` both stop (8) without writing, e2fsck's codes are
/// pfsck's (-n), and the report is the open failure alone, its reason
/// `says` on stderr as e2fsck's is, no pass run.
fn refused_without_backup(name: &str, img: &Path, modes: &[&str], says: &str) {
    for &mode in modes {
        let args = [mode];
        let (out, mine) = both_exit(img, &args, 8);
        assert_eq!(hash_file(&mine), hash_file(img), "[{name}] {args:?} wrote");
        assert!(!out.contains("Pass 1"), "[{name}] {args:?} {out}");
    }
    let run = pfsck(&["-fn".as_ref(), img.as_os_str()]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("pfsck: cannot open"), "[{name}] {err}");
    assert!(err.contains(says), "[{name}] {err}");
    if let Some((_, log)) = e2fsck_logged(img, &["-fn"]) {
        let json = pfsck(&["-fn".as_ref(), "--json".as_ref(), img.as_os_str()]);
        let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        let (mut want, mut got) = (log_codes(&log), report_e2fsck_codes(&json));
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want, "[{name}] pfsck's codes, then e2fsck's");
    }
}

/// The primary superblock's checksum broken on file systems with fewer
/// blocks per group than a bitmap holds (seed fz34-final, damage 135 and
/// 60 others: meta_bg, 1 KiB blocks, `-g 1024`; damage 9400: ext2 with
/// `-g 2048`, metadata_csum turned on by the damage). With the primary
/// refused, e2fsck does not trust its blocks per group: it looks for a
/// backup only at block 8193 (1 KiB blocks) or 8 times the block size,
/// finds none there and stops (8). pfsck took the backup where the
/// primary put group 1 (block 1025 or 2049) and checked through it
/// (exit 4).
#[test]
fn refused_primary_backup_only_where_e2fsck_looks() {
    let cases = [
        (
            "meta_bg -g 1024",
            MkfsOpts::ext4()
                .block_size(1024)
                .blocks_per_group(1024)
                .features("meta_bg,^resize_inode"),
        ),
        (
            "-g 2048",
            MkfsOpts::ext4().block_size(1024).blocks_per_group(2048),
        ),
    ];
    for (name, opts) in cases {
        let tmp = TempDir::new("fuzz-backup-probe");
        let img = tmp.join("disk.img");
        mkfs(&img, 12 * MIB, &opts, None);
        assert!(dumpe2fs(&img).groups_count() > 4, "[{name}]");
        // s_feature_compat changed behind the checksum.
        let at = 1024 + 0x5c;
        let old = read_at(&img, at, 1)[0];
        write_at(&img, at, &[old ^ 0x40]);
        refused_without_backup(name, &img, ALL_MODES, "checksum does not match");
    }
}

/// A revision level libext2fs does not know, with a sound checksum
/// (seed fz34-final, damages 481, 4330, 4524, 6201, 8775, 9957: `ssv
/// rev_level`; 2635, 5347, 5769, 9624: the field overwritten on ext2/3
/// without checksums). libext2fs refuses it as "revision too high", and
/// e2fsck looks for no backup then: it stops (8). pfsck took the backup
/// at 8193 and checked (exit 4).
#[test]
fn revision_too_high_stops_without_a_backup() {
    let tmp = TempDir::new("fuzz-rev-high");
    let img = tmp.join("disk.img");
    mkfs(&img, 12 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    assert!(dumpe2fs(&img).groups_count() > 1);
    debugfs_w(&img, &["ssv rev_level 2"]);
    refused_without_backup("rev_level 2", &img, ALL_MODES, "revision level 2");
}

/// A 64bit file system's descriptor size set to 0 (seed fz34-final,
/// damage 914: `ssv desc_size 0`). libext2fs refuses the size itself, not
/// the superblock as corrupt, and e2fsck looks for no backup then; read
/// again despite errors, a size of 0 is still refused: it stops (8).
/// pfsck took the backup at 8193 and checked (exit 4).
#[test]
fn descriptor_size_zero_stops_without_a_backup() {
    let tmp = TempDir::new("fuzz-desc-size-0");
    let img = tmp.join("disk.img");
    mkfs(&img, 12 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    assert!(dumpe2fs(&img).groups_count() > 1);
    debugfs_w(&img, &["ssv desc_size 0"]);
    refused_without_backup("desc_size 0", &img, ALL_MODES, "descriptor size 0");
}

/// The primary refused for a value, read again despite its errors, and a
/// value e2fsck's check of the superblock rejects (seed fz34-final,
/// damages 2274: inodes_count 0 on ext3, and 5898: `ssv inodes_per_group
/// 12`; one group of 4 KiB blocks, no backup). e2fsck judges the values
/// before the inodes count, and stops on the value (8). pfsck first asked
/// about the inodes count (exit 12). (ext3: e2fsck reads the journal
/// before it judges the values, through the superblock's copy of the
/// journal inode when the count leaves inode 8 out, which an extent
/// mapped journal's copy does not survive: it stops there, 12.)
#[test]
fn value_judged_before_the_inodes_count() {
    for (name, cmd, says) in [
        ("inodes_count 0", "ssv inodes_count 0", "inodes_count = 0"),
        (
            "inodes_per_group 12",
            "ssv inodes_per_group 12",
            "inodes_per_group = 12",
        ),
    ] {
        let tmp = TempDir::new("fuzz-despite-value");
        let img = tmp.join("disk.img");
        mkfs(&img, 16 * MIB, &MkfsOpts::ext3().block_size(4096), None);
        assert_eq!(dumpe2fs(&img).groups_count(), 1, "[{name}]");
        debugfs_w(&img, &[cmd]);
        // -y: e2fsck clears the journal it then reads through the
        // inodes count it overlooked, before it stops (9).
        refused_without_backup(name, &img, &["-fn"], says);
    }
}

/// The checksum type overwritten with another refused field (seed
/// fz34-final, damage 3345: the blocks count and `s_checksum_type`).
/// libext2fs judges the checksum whatever the type says, before any
/// value: e2fsck stops on the checksum (8). pfsck took a checksum of an
/// unknown type for no checksum, read the primary despite its errors
/// and asked about the inodes count (exit 12).
#[test]
fn checksum_judged_whatever_its_type() {
    let tmp = TempDir::new("fuzz-csum-type");
    let img = tmp.join("disk.img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(4096), None);
    assert_eq!(dumpe2fs(&img).groups_count(), 1);
    // s_blocks_count_lo raised past a group, then s_checksum_type.
    write_at(&img, 1024 + 0x4, &[0x00, 0x00, 0x00, 0x01]);
    write_at(&img, 1024 + 0x175, &[0x07]);
    refused_without_backup("checksum type", &img, ALL_MODES, "checksum does not match");
}

/// Group 0's inode table beyond the end of the file system, in the
/// descriptors pass 0 goes on with (seed fz34-final, damages 409, 6471,
/// 9277: the primary's on one group, where there is no backup; 2178: the
/// backup's, the primary refused). e2fsck -n declines the relocation,
/// and its scan of inodes stops at the table (8): what it declined in
/// pass 0 counts only through what the passes then find, as it marks
/// the file system valid again before them, so the abort alone is the
/// verdict. pfsck counted the declined relocation as an error left
/// (12). Checking through a backup, e2fsck gives no advice to try the
/// backup first.
#[test]
fn stop_at_inode_table_after_a_declined_relocation() {
    for (name, backup) in [("primary", false), ("backup", true)] {
        let tmp = TempDir::new("fuzz-itable-stop");
        let img = tmp.join("disk.img");
        if backup {
            let opts = MkfsOpts::ext3().block_size(1024);
            mkfs(&img, 16 * MIB, &opts, None);
            debugfs_w(&img, &["ssv log_cluster_size 4294967295"]);
            // bg_inode_table of group 0 in the backup table at 8194.
            write_at(&img, 8194 * 1024 + 8, &[0xff; 4]);
        } else {
            mkfs(&img, 16 * MIB, &MkfsOpts::ext2().block_size(4096), None);
            assert_eq!(dumpe2fs(&img).groups_count(), 1);
            debugfs_w(&img, &["set_bg 0 inode_table 17137"]);
        }
        let (out, mine) = both_exit(&img, &["-fn"], 8);
        assert_eq!(hash_file(&mine), hash_file(&img), "[{name}] -n wrote");
        assert!(out.contains("Relocate? no"), "[{name}] {out}");
        assert!(out.contains("The check stops at group 0"), "[{name}] {out}");
        assert!(!out.contains("errors are left"), "[{name}] {out}");
        if let Some((_, log)) = e2fsck_logged(&img, &["-fn"]) {
            let json = pfsck(&["-fn".as_ref(), "--json".as_ref(), img.as_os_str()]);
            let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
            let (mut want, mut got) = (log_codes(&log), report_e2fsck_codes(&json));
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "[{name}] pfsck's codes, then e2fsck's");
        }
    }
}

/// The primary refused for its inodes count, read despite its errors,
/// with a first inode beyond the count the inodes per group make (seed
/// fz34-final, damage 2967: `ssv inodes_per_group 9` on bigalloc, one
/// group). e2fsck asks about the inodes count before it looks at the
/// first inode; declined, it stops there with the file system marked
/// with errors (12). pfsck judged the first inode against the count it
/// would go on with, and stopped on it first (8).
#[test]
fn inodes_count_asked_before_the_first_inode() {
    let tmp = TempDir::new("fuzz-despite-first-ino");
    let img = tmp.join("disk.img");
    let bigalloc = bigalloc_1k();
    mkfs(&img, 16 * MIB, &bigalloc, None);
    assert_eq!(dumpe2fs(&img).groups_count(), 1);
    debugfs_w(&img, &["ssv inodes_per_group 9"]);
    let (out, mine) = both_exit(&img, &["-fn"], 12);
    assert_eq!(hash_file(&mine), hash_file(&img), "-n wrote");
    assert!(out.contains("inode count 4096"), "{out}");
    assert!(out.contains("inodes_count = 4096"), "{out}");
}

/// The primary refused for its inodes count, read despite its errors,
/// and its descriptors then looking bad (seed fz34-final, damage 5971:
/// `ssv inodes_per_group 7452` on meta_bg with `-g 1024`, the inode
/// tables no longer where the count puts them). e2fsck, still
/// overlooking superblock errors, tries the backup where that primary
/// puts group 1 (block 1025), takes it and checks (4; -y repairs).
/// pfsck judged the primary's values and stopped (8; 12 before).
#[test]
fn despite_errors_then_the_backup_of_group_1() {
    let tmp = TempDir::new("fuzz-despite-backup");
    let img = tmp.join("disk.img");
    let opts = MkfsOpts::ext4()
        .block_size(1024)
        .blocks_per_group(1024)
        .features("meta_bg,^resize_inode");
    mkfs(&img, 12 * MIB, &opts, None);
    debugfs_w(&img, &["ssv inodes_per_group 7452"]);
    if let Some((_, log)) = e2fsck_logged(&img, &["-fn"]) {
        let json = pfsck(&["-fn".as_ref(), "--json".as_ref(), img.as_os_str()]);
        let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        let opening =
            |codes: Vec<u32>| -> Vec<u32> { codes.into_iter().filter(|c| *c < 0x10000).collect() };
        assert_eq!(
            opening(report_e2fsck_codes(&json)),
            opening(log_codes(&log)),
            "pfsck's pass 0 codes, then e2fsck's"
        );
    }
    let (fn_out, _) = judged_by_oracle("inodes_per_group 7452", &img, 4, 1);
    assert!(fn_out.contains("using the copy at block 1025"), "{fn_out}");
}

/// A 64bit descriptor size other than 0 that libext2fs refuses (seed
/// fz34-final, damage 8281: `ssv desc_size 23`). e2fsck looks for no
/// backup after that refusal, but reads the primary again despite its
/// errors, which overlooks the size; its check of the descriptors then
/// refuses the size and sends it to the backup of group 1, which it
/// takes (-n 4, -y repairs). This branch's first commit stopped on the
/// size (8).
#[test]
fn bad_descriptor_size_despite_errors_then_the_backup() {
    for size in ["23", "96"] {
        let tmp = TempDir::new("fuzz-desc-size-backup");
        let img = tmp.join("disk.img");
        let opts = MkfsOpts::ext4().block_size(1024).features("64bit");
        mkfs(&img, 12 * MIB, &opts, None);
        assert!(dumpe2fs(&img).groups_count() > 1);
        debugfs_w(&img, &[format!("ssv desc_size {size}")]);
        let (fn_out, _) = judged_by_oracle(size, &img, 4, 1);
        assert!(fn_out.contains("using the copy at block 8193"), "{fn_out}");
    }
}

/// A file whose double and triple indirect pointers both name a reserved
/// GDT block (seed fz35-final, damage 1219: bytes of an ext3 inode's
/// i_block flipped). e2fsck walks that block on metadata once per pointer,
/// says so each time, finds its blocks shared with the resize inode, and
/// its repair copies them: the file is kept. pfsck stopped at the second
/// visit (an indirect block reached twice) and its repair cleared the
/// file, a file e2fsck keeps.
#[test]
fn indirect_block_on_metadata_named_twice() {
    let tmp = TempDir::new("fuzz-ind-on-meta-twice");
    let img = tmp.join("disk.img");
    image_with_file(&img, &MkfsOpts::ext3().block_size(1024), 5000);
    let reserved = first_reserved_gdt_block(&img);
    debugfs_w(
        &img,
        &[
            format!("sif /f block[DIND] {reserved}"),
            format!("sif /f block[TIND] {reserved}"),
        ],
    );
    let (out, _) = both_exit(&img, &["-fn"], 4);
    let visits = out
        .lines()
        .filter(|l| {
            l.contains(&format!(
                "uses block {reserved}, which holds file system metadata"
            ))
        })
        .count();
    assert_eq!(visits, 2, "{out}");
    assert!(!out.contains("more than once"), "{out}");
    let (_, mine) = both_exit(&img, &["-fy"], 1);
    assert_eq!(oracle_fn(&mine), 0, "e2fsck -fn after pfsck -fy");
    let stat = debugfs_r(&mine, "stat /f");
    assert!(stat.contains("Type: regular"), "{stat}");
}

// ---- repairs that must not write other structures' blocks ----

/// The resize inode's double indirect block naming the superblock's block
/// as one of its indirect blocks, beside pointers past the end of the
/// file system (seed fz36, damage 823: 8 bits flipped in that block of an
/// ext4 1 KiB bigalloc image). The superblock read as block pointers is
/// full of numbers past the end (its magic number among them), and the
/// repair of inode 7's map zeroed them in block 1: the superblock lost its
/// magic number and the file system could no longer be opened (e2fsck
/// 1.47.4 -fy does the same). A block the resize inode does not own is
/// never written: the entry naming it goes, and e2fsck then finds the file
/// system clean.
#[test]
fn resize_dind_naming_the_superblock() {
    for (name, opts) in [
        ("bigalloc", bigalloc_1k()),
        ("1k", MkfsOpts::ext4().block_size(1024)),
    ] {
        let tmp = TempDir::new("fuzz-resize-dind-sb");
        let img = tmp.join("disk.img");
        mkfs(&img, 16 * MIB, &opts, None);
        let stat = debugfs_r(&img, "stat <7>");
        let dind: u64 = stat
            .split("(DIND):")
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("[{name}] no DIND block in:\n{stat}"));
        let sb_block: u32 = 1;
        // Slot 58: the superblock's block; slot 64: past the end.
        write_at(&img, dind * 1024 + 58 * 4, &sb_block.to_le_bytes());
        write_at(&img, dind * 1024 + 64 * 4, &(1u32 << 30).to_le_bytes());
        let sb_before = read_at(&img, 1024, 1024);
        let (code, out) = pfsck_code(&["-fy"], &img);
        assert_eq!(code, 1, "[{name}] pfsck -fy:\n{out}");
        let sb_after = read_at(&img, 1024, 1024);
        assert_eq!(
            sb_after[0x38..0x3A],
            sb_before[0x38..0x3A],
            "[{name}] magic"
        );
        assert_eq!(sb_after[..0x30], sb_before[..0x30], "[{name}] geometry");
        assert_eq!(
            oracle_fn(&img),
            0,
            "[{name}] e2fsck -fn after pfsck -fy:\n{out}"
        );
    }
}

// ---- repairs left undone ----

/// A NUL in the name of an entry of an indexed directory (seed fz36,
/// damages 513, 2107, 2374, 2503, 3106, 3896: a byte of a name in an
/// htree leaf overwritten). e2fsck makes each NUL a '.' in any directory
/// and judges the leaf's hash range with the new name (the index is
/// rebuilt when it no longer fits). pfsck left names in indexed
/// directories alone ("the new name would hash elsewhere"): -fy exited 4.
#[test]
fn nul_in_a_name_of_an_indexed_directory() {
    let tmp = TempDir::new("fuzz-htree-nul-name");
    let opts = MkfsOpts::ext4().block_size(1024).features("^metadata_csum");
    let img = long_named_htree_image(&tmp, &opts, 300, 10);
    let stat = debugfs_r(&img, "stat /d");
    let flags = stat
        .split("Flags: 0x")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .unwrap_or(0);
    assert!(flags & 0x1000 != 0, "not indexed:\n{stat}");
    // The first name of the directory's second block (a leaf): its first
    // byte made a NUL.
    let leaf = debugfs_number(&img, "bmap /d 1");
    let name = read_at(&img, leaf * 1024 + 8, 4);
    assert_eq!(&name, b"file", "leaf starts elsewhere");
    write_at(&img, leaf * 1024 + 8, &[0]);
    let (fn_out, _) = judged_by_oracle("NUL in an htree name", &img, 4, 1);
    assert!(fn_out.contains("the name holds a '/' or a NUL"), "{fn_out}");
    let ls = debugfs_r(&img, "ls /d");
    assert!(ls.contains(".ile_with_a_long_name_"), "{ls}");
}

/// A primary superblock whose s_first_data_block is wrong (seed fz36,
/// damages 339, 2397, 3792: 128, 2 and 4142 on 1 KiB file systems). The
/// descriptors it places are garbage; e2fsck finds the backup of group 1
/// where a right first data block puts it and repairs from it. pfsck
/// looked for the backup where the damaged field put group 1, found
/// none, and stopped (-fy exit 8).
#[test]
fn damaged_first_data_block_finds_the_backup() {
    let tmp = TempDir::new("fuzz-first-data-block");
    let img = tmp.join("disk.img");
    // Two groups: a backup in group 1 (which counts no file: exit 4).
    mkfs(&img, 16 * MIB, &MkfsOpts::ext3().block_size(1024), None);
    let data = img.with_extension("data");
    std::fs::write(&data, file_content("f", 3000)).unwrap();
    debugfs_w(&img, &[format!("write {} f", data.display())]);
    write_at(&img, 1024 + 0x14, &128u32.to_le_bytes());
    let (fn_out, _) = judged_by_oracle("first data block 128", &img, 4, 1);
    assert!(fn_out.contains("using the copy at block 8193"), "{fn_out}");
    file_kept(&img, 3000);
}

/// A wrong inode count in the superblock of a bigalloc file system (seed
/// fz36, damages 2859 and 3298: `ssv inodes_count`). e2fsck sets it to
/// the groups times the inodes per group; pfsck had the same fix but left
/// it undone on bigalloc (a superblock field: nothing to do with
/// clusters), and -fy exited 4.
#[test]
fn wrong_inodes_count_on_bigalloc() {
    let tmp = TempDir::new("fuzz-inodes-count-bigalloc");
    let img = tmp.join("disk.img");
    mkfs(&img, 16 * MIB, &bigalloc_1k(), None);
    debugfs_w(&img, &["ssv inodes_count 46"]);
    let (fn_out, _) = judged_by_oracle("bigalloc inodes_count 46", &img, 12, 1);
    assert!(
        fn_out.contains("The superblock's inode count 46 disagrees with the geometry"),
        "{fn_out}"
    );
}

/// 1 KiB blocks, bigalloc and meta_bg (seed fz36, damage 14388): group 0
/// starts at block 0, so its meta_bg descriptors are in block 2, after the
/// superblock. pfsck looked for them in block 1: a clean file system
/// straight from mke2fs failed its -fn ("the journal is unusable"), and a
/// descriptor fix was written over the superblock, which e2fsck could no
/// longer open.
#[test]
fn meta_bg_descriptors_on_1k_bigalloc() {
    let tmp = TempDir::new("fuzz-metabg-1k-bigalloc");
    let img = tmp.join("disk.img");
    mkfs(
        &img,
        16 * MIB,
        &bigalloc_1k().features("meta_bg,^resize_inode"),
        None,
    );
    let (code, out) = pfsck_code(&["-fn"], &img);
    assert_eq!(code, 0, "pfsck -fn on mke2fs's image:\n{out}");
    debugfs_w(
        &img,
        &["set_bg 0 free_blocks_count 5", "set_bg 0 checksum calc"],
    );
    if oracle().is_some() {
        assert_eq!(oracle_fn(&img), 4, "the oracle no longer finds the damage");
    }
    let (code, out) = pfsck_code(&["-fy"], &img);
    assert_eq!(code, 1, "pfsck -fy:\n{out}");
    if oracle().is_some() {
        assert_eq!(oracle_fn(&img), 0, "e2fsck -fn after pfsck -fy:\n{out}");
    }
}
