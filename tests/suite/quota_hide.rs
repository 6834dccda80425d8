//! Quota files the superblock names at ordinary, visible inodes (e2fsck
//! 1.47.4's 0x000041), and entries naming a quota file, judged against
//! e2fsck on file systems made with mke2fs and debugfs.

use crate::common::*;
use crate::problem_codes::assert_same_codes;

const MIB: u64 = 1 << 20;

/// The e2fsck codes of pfsck's JSON report for `args`, sorted, each once.
fn pfsck_codes(img: &std::path::Path, args: &[&str]) -> Vec<u32> {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--json");
    all.push(img.to_str().unwrap());
    let out = pfsck(&all);
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("pfsck --json: {e}"));
    let mut got = report_e2fsck_codes(&json);
    got.sort_unstable();
    got.dedup();
    got
}

/// 0x000041: the user and group quota files moved out of their reserved
/// inodes into visible files of the root, /aquota.user and /aquota.group,
/// which the superblock names. -n flags the entries naming them and the
/// inodes as unattached (and their usage counted); -y and -p (exit 0, as
/// e2fsck) move each back into inode 3 or 4, unlink its name and release
/// the visible inode, and the quota files then agree with the usage.
#[test]
fn visible_quota_files_move_to_their_inodes() {
    let tmp = TempDir::new("quota-hide");
    let img = tmp.join("image");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4().block_size(1024).features("quota,project"),
        None,
    );
    debugfs_w(
        &img,
        &[
            "write /dev/null aquota.user",
            "write /dev/null aquota.group",
            "copy_inode <3> <13>",
            "copy_inode <4> <14>",
            "clri <3>",
            "clri <4>",
            "ssv usr_quota_inum 13",
            "ssv grp_quota_inum 14",
        ],
    );
    assert_same_codes(&img, &[0x020002, 0x040002, 0x060002]);
    for args in [&["-fp"][..], &["-p"], &["-y"]] {
        let (out, mine) = both_exit(&img, args, 0);
        assert!(out.contains("user quota"), "{args:?}: {out}");
        assert_eq!(oracle_fn(&mine), 0, "{args:?}: {out}");
    }
    let copy = tmp.join("copy");
    copy_image(&img, &copy);
    if let Some(want) = e2fsck_codes(&copy, &["-fy"]) {
        assert_eq!(want, [0x000041]);
        copy_image(&img, &copy);
        assert_eq!(pfsck_codes(&copy, &["-fy"]), want);
    }
    judged_by_oracle("quota-hide", &img, 4, 0);
    let header = dumpe2fs(&img).header;
    assert_eq!(header["User quota inode"].trim(), "3");
    assert_eq!(header["Group quota inode"].trim(), "4");
    let listing = debugfs_r(&img, "ls");
    assert!(!listing.contains("aquota"), "{listing}");
    // The files kept their entries: root and lost+found, charged to id 0.
    let users = debugfs_r(&img, "list_quota user");
    assert!(
        users
            .lines()
            .any(|l| l.split_whitespace().next() == Some("0")),
        "{users}"
    );
}

/// An entry naming the project quota file, which has no reserved inode:
/// e2fsck's pass 2 rejects it as an invalid inode number, and a repair
/// clears it (the file stays where the superblock says).
#[test]
fn entry_naming_the_project_quota_file_is_cleared() {
    let tmp = TempDir::new("quota-prj-entry");
    let img = tmp.join("image");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4().block_size(1024).features("quota,project"),
        None,
    );
    let prj = dumpe2fs(&img).header["Project quota inode"]
        .trim()
        .to_string();
    debugfs_w(
        &img,
        &[
            format!("ln <{prj}> pq"),
            format!("sif <{prj}> links_count 2"),
        ],
    );
    assert_same_codes(&img, &[0x020002]);
    judged_by_oracle("quota-prj-entry", &img, 4, 1);
    let listing = debugfs_r(&img, "ls");
    assert!(!listing.contains("pq"), "{listing}");
}
