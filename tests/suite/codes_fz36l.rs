//! e2fsck problem codes pfsck's `--json` gave differently from e2fsck
//! 1.47.4's problem log on the differential fuzzer's seed fz36 (issue
//! 13), where both exit alike: each damage made again on a fresh file
//! system with mke2fs and debugfs, its codes compared with e2fsck's,
//! pfsck's own words checked, and its repair found clean by e2fsck.

use crate::common::*;
use crate::problem_codes::assert_same_codes;
use std::path::Path;
use std::time::Duration;

const MIB: u64 = 1 << 20;

/// Each code as many times in pfsck's `--json` as in e2fsck's problem
/// log (the sets `assert_same_codes` compares hide a code logged once
/// too often).
fn assert_same_code_counts(img: &Path) {
    let Some((_, log)) = e2fsck_logged(img, &["-fn"]) else {
        println!("e2fsck 1.47.4 not found, skipped");
        return;
    };
    let mut want = log_codes(&log);
    let run = pfsck_timeout(
        &["-fn".as_ref(), "--json".as_ref(), img.as_os_str()],
        Duration::from_secs(60),
    );
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("pfsck --json");
    let mut got = report_e2fsck_codes(&json);
    // Pass headers are logged by e2fsck alone.
    want.retain(|c| c & 0xFFF != 0 || got.contains(c));
    want.sort_unstable();
    got.sort_unstable();
    let hex = |v: &[u32]| v.iter().map(|c| format!("{c:06x}")).collect::<Vec<_>>();
    assert_eq!(hex(&got), hex(&want), "pfsck's codes, then e2fsck's");
}

/// A file whose double indirect pointer names the group descriptor
/// block (fz36 #790, "missing 0x011006"). Pass 1 walks that block as
/// e2fsck does, dropping in core the illegal pointers the descriptors'
/// counts make; e2fsck's pass 1B meets them again as illegal indirect
/// blocks, and its walk of the file ends there in error. pfsck walked
/// on, finding more shared blocks and never saying the search stopped.
#[test]
fn rescan_stops_at_an_illegal_pointer_in_metadata() {
    let tmp = TempDir::new("codes-fz36-1b-meta");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext2().block_size(1024), None);
    let data = tmp.join("data");
    std::fs::write(&data, file_content("f", 40 * 1024)).unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} f", data.display()),
            "sif f block[DIND] 2".into(),
        ],
    );
    let ino = inode_of(&img, "/f");
    assert_same_codes(&img, &[0x010071, 0x011006]);
    assert_same_code_counts(&img);
    let (fn_out, _) = judged_by_oracle("fz36 1B meta", &img, 4, 1);
    assert!(
        fn_out.contains(&format!(
            "Inode {ino}: the search for shared blocks stopped early, at a damaged extent \
             block or one failing its checksum, or at an indirect block outside the file \
             system"
        )),
        "{fn_out}"
    );
}

/// A file whose extent leaf has lost its magic number while two other
/// files share a block (fz36 #7460, #16744, "missing 0x011006"). Pass 1
/// declines to clear the node; e2fsck's pass 1B cannot go down into it
/// and its walk of the file ends in error, which pfsck did not say.
#[test]
fn rescan_stops_at_an_extent_node_with_a_bad_header() {
    let tmp = TempDir::new("codes-fz36-1b-header");
    let tree = tmp.join("tree");
    let holes: Vec<(u64, u64)> = (0..8).map(|i| (i * 8192, 4096)).collect();
    build_tree(
        &tree,
        &[
            Node::file("a", 8192),
            Node::file("b", 8192),
            Node::sparse("sparse", 8 * 8192, &holes),
        ],
    );
    let img = tmp.join("img");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4().block_size(4096),
        Some(&tree),
    );
    let a = blocks_of(&img, "/a")[0];
    debugfs_w(&img, &[format!("sif b block[5] {a}")]);
    let stat = debugfs_r(&img, "stat sparse");
    let leaf: u64 = stat
        .split("(ETB0):")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no extent tree block in:\n{stat}"));
    let ino = inode_of(&img, "/sparse");
    write_at(&img, leaf * 4096, &[0, 0]);
    assert_same_codes(&img, &[0x01005F, 0x011006]);
    assert_same_code_counts(&img);
    let (fn_out, _) = judged_by_oracle("fz36 1B header", &img, 4, 1);
    assert!(
        fn_out.contains(&format!(
            "Inode {ino}: the search for shared blocks stopped early"
        )),
        "{fn_out}"
    );
}

/// The resize inode shares a reserved descriptor block with a file, and
/// two other files share a block between them (fz36 #790, #5489, #19929,
/// "pfsck only 0x013003"). e2fsck passes the resize inode over in pass
/// 1D before looking at its blocks, so the metadata it shares does not
/// make the files after it share with the metadata too: only the file
/// on the reserved block does.
#[test]
fn resize_inode_does_not_make_later_files_share_metadata() {
    let tmp = TempDir::new("codes-fz36-1d-meta");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext2().block_size(1024), None);
    let data = tmp.join("data");
    std::fs::write(&data, file_content("d", 3000)).unwrap();
    let d = data.display();
    debugfs_w(
        &img,
        &[
            format!("write {d} a"),
            format!("write {d} b"),
            format!("write {d} c"),
        ],
    );
    let a = blocks_of(&img, "/a")[0];
    let gdt = first_reserved_gdt_block(&img);
    debugfs_w(
        &img,
        &[
            format!("sif b block[0] {a}"),
            format!("sif c block[0] {gdt}"),
        ],
    );
    let a_ino = inode_of(&img, "/a");
    assert_same_codes(&img, &[0x013003]);
    assert_same_code_counts(&img);
    let (fn_out, _) = judged_by_oracle("fz36 1D meta", &img, 4, 1);
    let part = fn_out
        .split(&format!("/a (inode {a_ino}, modified "))
        .nth(1)
        .unwrap_or_else(|| panic!("no pass 1D entry for /a:\n{fn_out}"));
    let entry = part.split("Delete file?").next().unwrap_or(part);
    assert!(
        entry.contains("shares 1 block(s) with 1 file(s):"),
        "{fn_out}"
    );
    assert!(!entry.contains("<file system metadata>"), "{fn_out}");
}

/// The resize inode failing its checksum (fz36 #462, #650, #1326 and 35
/// more: "missing 0x01004E"). e2fsck cannot read it to make it again at
/// the end of pass 1, asks whether to go on, and -n's no ends the check:
/// pfsck stopped there too but left the question out of its codes.
#[test]
fn resize_inode_unreadable_asks_before_the_stop() {
    let tmp = TempDir::new("codes-fz36-resize-csum");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4(), None);
    debugfs_w(&img, &["sif <7> checksum 0x1234"]);
    assert_same_codes(&img, &[0x010068, 0x01004E]);
    assert_same_code_counts(&img);
    let (fn_out, _) = judged_by_oracle("fz36 resize csum", &img, 12, 1);
    assert!(
        fn_out.contains("Inode 7 is sound apart from its checksum.  Fix? no"),
        "{fn_out}"
    );
    assert!(
        fn_out.contains("The check stops at inode 7, whose checksum it may not fix"),
        "{fn_out}"
    );
}

/// An orphan to truncate whose extent leaf fails its checksum (fz36
/// #436, #1572, #2030 and 22 more: "missing 0x01006A"). pfsck checks the
/// view after the truncation, where the kept leaf is rewritten with its
/// checksum; e2fsck -n leaves the orphan be and its pass 1 asks about
/// the leaf, naming its last extent's block.
#[test]
fn orphan_left_unreleased_has_a_leaf_failing_its_checksum() {
    let tmp = TempDir::new("codes-fz36-orphan-leaf");
    let tree = tmp.join("tree");
    let runs: Vec<(u64, u64)> = (0..8).map(|i| (i * 8192, 4096)).collect();
    build_tree(&tree, &[Node::sparse("s", 8 * 8192, &runs)]);
    let img = tmp.join("img");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4().block_size(4096),
        Some(&tree),
    );
    let ino = inode_of(&img, "/s");
    let stat = debugfs_r(&img, "stat s");
    let leaf: u64 = stat
        .split("(ETB0):")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no extent tree block in:\n{stat}"));
    debugfs_w(
        &img,
        &[format!("ssv last_orphan {ino}"), "sif s size 1".into()],
    );
    // The leaf's checksum (its tail, the block's last four bytes).
    let at = leaf * 4096 + 4092;
    let bad: Vec<u8> = read_at(&img, at, 1).iter().map(|b| !b).collect();
    write_at(&img, at, &bad);
    assert_same_codes(&img, &[0x01006A, 0x01000C]);
    assert_same_code_counts(&img);
    let (fn_out, _) = judged_by_oracle("fz36 orphan leaf csum", &img, 4, 0);
    assert!(
        fn_out.contains(&format!("Truncating orphaned inode {ino} (")),
        "{fn_out}"
    );
}

/// Two deleted orphans on the list and a bad blocks inode failing its
/// checksum (fz36 #10679, #11098, #12766 and 19 more: "pfsck only
/// 0x010004"). e2fsck -n leaves the orphans and stops at inode 1, at the
/// start of pass 1's scan, before it reaches them: what its pass 1 would
/// have said of them is not logged. pfsck gave their codes anyway.
#[test]
fn orphans_past_a_stop_at_the_bad_blocks_inode_are_not_reached() {
    let tmp = TempDir::new("codes-fz36-orphans-stop");
    let img = tmp.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4(), None);
    let data = tmp.join("data");
    std::fs::write(&data, file_content("o", 5000)).unwrap();
    let d = data.display();
    debugfs_w(&img, &[format!("write {d} a"), format!("write {d} b")]);
    let (a, b) = (inode_of(&img, "/a"), inode_of(&img, "/b"));
    debugfs_w(
        &img,
        &[
            "unlink a".into(),
            "unlink b".into(),
            format!("sif <{a}> links_count 0"),
            format!("sif <{b}> links_count 0"),
            format!("sif <{a}> dtime {b}"),
            format!("ssv last_orphan {a}"),
            "sif <1> checksum 0x1234".into(),
        ],
    );
    assert_same_codes(&img, &[0x010065]);
    assert_same_code_counts(&img);
    let (fn_out, _) = judged_by_oracle("fz36 orphans stop", &img, 12, 1);
    assert!(
        fn_out.contains("The check stops at inode 1, whose checksum it may not fix"),
        "{fn_out}"
    );
    assert!(
        fn_out.contains(&format!("Clearing orphaned inode {b} (")),
        "{fn_out}"
    );
}
