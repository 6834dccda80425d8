//! e2fsck 1.47.4's problem codes of passes 2 to 5 (issue 13), each damage
//! made from scratch and judged against the oracle: the same verdict with
//! `-fn` (nothing written), the same problem codes in e2fsck's problem
//! log, and e2fsck clean after one `pfsck -fy`.

use crate::common::*;
use crate::problem_codes::assert_same_codes;
use std::path::Path;

/// A 1 KiB-block ext4 image without metadata_csum (so raw edits need no
/// checksum), holding `cmds` made with debugfs.
fn image(img: &Path, cmds: &[&str]) {
    mkfs(
        img,
        8 << 20,
        &MkfsOpts::ext4().block_size(1024).features("^metadata_csum"),
        None,
    );
    if !cmds.is_empty() {
        debugfs_w(img, cmds);
    }
}

/// Directory `d` with 200 entries, made an htree by `e2fsck -fyD`.
fn htree_image(img: &Path, subdirs: &[&str]) {
    let mut cmds = vec!["mkdir d".to_string()];
    cmds.extend((0..200).map(|i| format!("write /dev/null d/file_with_a_long_name_{i}")));
    cmds.extend(subdirs.iter().map(|s| format!("mkdir d/{s}")));
    let refs: Vec<&str> = cmds.iter().map(String::as_str).collect();
    image(img, &refs);
    let r = e2fsck(img, &["-fyD"]);
    assert!(matches!(r.code(), Some(0 | 1)), "e2fsck -fyD: {}", r.stdout);
    assert!(
        debugfs_r(img, "stat d").contains("Flags: 0x81000"),
        "d is not an htree"
    );
}

/// 0x020024: '.' spanning 36 bytes (room for an entry after it). e2fsck
/// asks to split it but a "no" leaves the file system valid (NO_OK).
#[test]
fn dot_entry_spanning_free_space() {
    let tmp = TempDir::new("cat-split-dot");
    let img = tmp.join("image");
    image(&img, &["mkdir d"]);
    let blk = blocks_of(&img, "d")[0];
    let at = blk * 1024;
    let old = read_at(&img, at, 24);
    let dotdot = u32::from_le_bytes(old[12..16].try_into().unwrap());
    // '.' 36 long, then '..' at 36 taking the rest of the block.
    let mut b = vec![0u8; 1024];
    b[..12].copy_from_slice(&old[..12]);
    b[4..6].copy_from_slice(&36u16.to_le_bytes());
    b[36..40].copy_from_slice(&dotdot.to_le_bytes());
    b[40..42].copy_from_slice(&(1024u16 - 36).to_le_bytes());
    b[42] = 2;
    b[43] = 2;
    b[44..46].copy_from_slice(b"..");
    write_at(&img, at, &b);
    assert_same_codes(&img, &[0x020024]);
    let (fn_out, fy_out) = judged_by_oracle("split-dot", &img, 0, 1);
    assert!(fn_out.contains("Split? no"), "{fn_out}");
    assert!(fy_out.contains("Split? yes"), "{fy_out}");
}

/// 0x040007: an indexed directory whose count reads 1 (overflowed) but
/// whose links fit: only a repair makes it exact (e2fsck -n leaves it).
#[test]
fn overflowed_directory_count_made_exact() {
    let tmp = TempDir::new("cat-dir-overflow");
    let img = tmp.join("image");
    htree_image(&img, &["sub1", "sub2"]);
    debugfs_w(&img, &["sif d links_count 1"]);
    assert_same_codes(&img, &[]);
    let (_, fy_out) = judged_by_oracle("dir-overflow", &img, 0, 1);
    assert!(fy_out.contains("but 4 would fit"), "pfsck -fy:\n{fy_out}");
    assert!(debugfs_r(&img, "stat d").contains("Links: 4"));
}

/// 0x020039: an indexed directory of 4 GiB (i_size_high set) without
/// large_dir: e2fsck asks for the feature at the end of pass 1, before
/// it fixes the size.
#[test]
fn large_directory_without_large_dir() {
    let tmp = TempDir::new("cat-large-dir");
    let img = tmp.join("image");
    htree_image(&img, &[]);
    debugfs_w(&img, &["sif d size 0x100002400"]);
    assert_same_codes(&img, &[0x020039, 0x01000c]);
    let (_, fy_out) = judged_by_oracle("large-dir", &img, 4, 1);
    assert!(fy_out.contains("but that feature is off"), "{fy_out}");
    assert!(debugfs_r(&img, "features").contains("large_dir"));
}

/// 0x030004: lost+found removed. e2fsck -n does not look for it (exit 0,
/// nothing said); a repair creates it.
#[test]
fn lost_found_missing_only_in_a_repair() {
    let tmp = TempDir::new("cat-no-lf");
    let img = tmp.join("image");
    image(&img, &["rmdir lost+found"]);
    assert_same_codes(&img, &[]);
    let (fn_out, fy_out) = judged_by_oracle("no-lf", &img, 0, 1);
    assert!(!fn_out.contains("lost+found"), "{fn_out}");
    assert!(fy_out.contains("There is no /lost+found"), "{fy_out}");
    assert!(inode_of(&img, "lost+found") > 0);
}

/// 0x020029: an entry with a file type on ext2 without the filetype
/// feature: the type byte is cleared, the name kept.
#[test]
fn file_type_without_the_feature_cleared() {
    let tmp = TempDir::new("cat-ft-set");
    let img = tmp.join("image");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext2().block_size(1024).features("^filetype"),
        None,
    );
    debugfs_w(&img, &["mkdir d", "write /etc/hostname d/f"]);
    let at = blocks_of(&img, "d")[0] * 1024;
    let b = read_at(&img, at, 1024);
    // '.' and '..' take 12 bytes each: 'f' is the third entry.
    assert_eq!(&b[24 + 8..24 + 9], b"f");
    write_at(&img, at + 24 + 7, &[1]);
    assert_same_codes(&img, &[0x020029]);
    let (_, fy_out) = judged_by_oracle("ft-set", &img, 4, 1);
    assert!(fy_out.contains("Clear? yes"), "{fy_out}");
    assert!(debugfs_r(&img, "ls d").contains(" f "));
}

/// 0x030017: /lost+found is a regular file. A repair unlinks it, makes a
/// new lost+found and reconnects the file there (e2fsck -n does not look).
#[test]
fn lost_found_not_a_directory_replaced() {
    let tmp = TempDir::new("cat-lf-file");
    let img = tmp.join("image");
    image(
        &img,
        &["rmdir lost+found", "write /etc/hostname lost+found"],
    );
    let old = inode_of(&img, "lost+found");
    assert_same_codes(&img, &[]);
    let (_, fy_out) = judged_by_oracle("lf-file", &img, 0, 1);
    assert!(fy_out.contains("is not a directory"), "{fy_out}");
    assert!(
        debugfs_r(&img, "ls -l lost+found").contains(&format!("#{old}")),
        "{}",
        debugfs_r(&img, "ls -l lost+found")
    );
}

/// An entry naming inode `ino` on a 16 MiB ext4 image with 1 KiB blocks
/// (two groups of 2048 inodes, the second INODE_UNINIT).
fn entry_to(img: &Path, ino: u32) {
    mkfs(img, 16 << 20, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(img, &[format!("ln <{ino}> x")]);
}

/// 0x020046: an entry naming an inode of a group marked INODE_UNINIT. The
/// mark goes (as e2fsck, which then restarts), and the entry, naming an
/// unused inode, is cleared.
#[test]
fn entry_into_an_uninit_group() {
    let tmp = TempDir::new("cat-uninit-ref");
    let img = tmp.join("image");
    entry_to(&img, 2048 + 5);
    assert_same_codes(&img, &[0x020046, 0x020003]);
    let (_, fy_out) = judged_by_oracle("uninit-ref", &img, 4, 1);
    assert!(
        fy_out.contains("whose inode table is flagged uninitialised.\nFix? yes"),
        "{fy_out}"
    );
}

/// 0x020047: an entry naming an inode in its group's never-used area
/// (past itable_unused's mark): the mark goes, the entry is cleared.
#[test]
fn entry_into_the_unused_inode_area() {
    let tmp = TempDir::new("cat-unused-ref");
    let img = tmp.join("image");
    entry_to(&img, 2000);
    assert_same_codes(&img, &[0x020047, 0x020003]);
    let (_, fy_out) = judged_by_oracle("unused-ref", &img, 4, 1);
    assert!(
        fy_out.contains("never-used inode range.\nFix? yes"),
        "{fy_out}"
    );
}

/// A block-mapped (ext3) directory `d` of 200 entries, an htree made by
/// `e2fsck -fyD` when `indexed`, given one more block by `expand_dir`
/// whose pointer is then made illegal. Returns its listing.
fn dir_with_illegal_last_block(img: &Path, indexed: bool) -> Vec<String> {
    mkfs(img, 8 << 20, &MkfsOpts::ext3().block_size(1024), None);
    let mut cmds = vec!["mkdir d".to_string()];
    cmds.extend((0..200).map(|i| format!("write /dev/null d/file_with_a_long_name_{i}")));
    let refs: Vec<&str> = cmds.iter().map(String::as_str).collect();
    debugfs_w(img, &refs);
    if indexed {
        let r = e2fsck(img, &["-fyD"]);
        assert!(matches!(r.code(), Some(0 | 1)), "e2fsck -fyD: {}", r.stdout);
        assert!(
            debugfs_r(img, "stat d").contains("Flags: 0x1000"),
            "not an htree"
        );
    }
    let before = names_in_d(img);
    debugfs_w(img, &["expand_dir d"]);
    let last = blocks_of(img, "d").len() - 1;
    debugfs_w(img, &[&format!("sif d block[{last}] 99999999")]);
    before
}

fn names_in_d(img: &Path) -> Vec<String> {
    let mut names: Vec<String> = debugfs_r(img, "ls d")
        .split_whitespace()
        .filter(|w| w.starts_with("file_with"))
        .map(String::from)
        .collect();
    names.sort();
    names
}

/// e2fsck 1.47.4's codes of `args` on a copy of `img`, then pfsck's
/// (`--json`) on another; each sorted, once.
fn codes_of_both(img: &Path, args: &[&str]) -> Option<(Vec<u32>, Vec<u32>)> {
    let theirs = img.with_extension("theirs");
    copy_image(img, &theirs);
    let want = e2fsck_codes(&theirs, args)?;
    let mine = img.with_extension("mine");
    copy_image(img, &mine);
    let mut all: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    all.extend(["--json".as_ref(), mine.as_os_str()]);
    let run = pfsck(&all);
    let json: serde_json::Value = serde_json::from_slice(&run.stdout).expect("pfsck --json");
    let mut got = report_e2fsck_codes(&json);
    got.sort_unstable();
    got.dedup();
    Some((want, got))
}

/// 0x020045: e2fsck -y's pass 1 clears the illegal last block of a
/// block-mapped htree directory but keeps it in its list of directory
/// blocks; pass 2 gives the hole a new block (0x020015), finds it past
/// every block the index was built over, and clears the index. A
/// read-only check declines the clearing: no hole, no question.
#[test]
fn htree_block_outside_the_index_clears_the_index() {
    let tmp = TempDir::new("cat-htree-unexpected");
    let img = tmp.join("image");
    let names = dir_with_illegal_last_block(&img, true);
    assert_same_codes(&img, &[0x01000e]);
    if let Some((want, got)) = codes_of_both(&img, &["-fy"]) {
        assert!(
            want.contains(&0x020045) && want.contains(&0x020015),
            "{want:x?}"
        );
        assert_eq!(got, want, "pfsck -fy's codes, then e2fsck's");
    }
    let theirs = tmp.join("theirs");
    copy_image(&img, &theirs);
    let (fn_out, fy_out) = judged_by_oracle("htree-unexpected", &img, 4, 1);
    assert!(!fn_out.contains("index does not cover"), "{fn_out}");
    assert!(
        fy_out.contains("once its illegal block is cleared")
            && fy_out.contains("gains a block its index does not cover"),
        "{fy_out}"
    );
    assert_eq!(names_in_d(&img), names, "pfsck -fy's listing");
    if oracle().is_some() {
        oracle_run(&theirs, &["-fy"]);
        assert_eq!(names_in_d(&theirs), names, "e2fsck -fy's listing");
    }
}

/// 0x020015 in a repair only: the illegal last block of a block-mapped
/// directory without an index becomes a hole e2fsck -y's pass 2 gives
/// a new, empty block (the size follows); e2fsck -n never lists it.
#[test]
fn cleared_last_directory_block_is_allocated_again() {
    let tmp = TempDir::new("cat-dir-tail-hole");
    let img = tmp.join("image");
    let names = dir_with_illegal_last_block(&img, false);
    let n = blocks_of(&img, "d").len();
    if let Some((want, got)) = codes_of_both(&img, &["-fy"]) {
        assert!(want.contains(&0x020015), "{want:x?}");
        assert_eq!(got, want, "pfsck -fy's codes, then e2fsck's");
    }
    let (_, fy_out) = judged_by_oracle("dir-tail-hole", &img, 4, 1);
    assert!(
        fy_out.contains("once its illegal block is cleared"),
        "{fy_out}"
    );
    assert_eq!(blocks_of(&img, "d").len(), n, "the hole has a block again");
    assert!(debugfs_r(&img, "stat d").contains(&format!("Size: {}", n * 1024)));
    assert_eq!(names_in_d(&img), names);
}
