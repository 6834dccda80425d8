//! An unusable internal journal (bad superblock magic, a cleared inode,
//! has_journal without a journal inode) is replaced by `pfsck -fy` with the
//! journal `e2fsck -fy` recreates, and a cleared block-mapped journal inode
//! is restored from the superblock's backup as e2fsck restores it: copy A
//! through e2fsck, copy B through pfsck; the exit codes must be equal,
//! `e2fsck -fn` must find B clean, the bitmaps and group summaries, the
//! journal inode (times and checksum aside), the new journal superblock
//! and every other block (the superblock's own fields aside) must be the
//! same. `pfsck -fn` must stop as `e2fsck -fn` does and write nothing.

use crate::common::journal::{groups, masked_sb};
use crate::common::*;
use std::path::Path;
use std::process::Command;

fn header(img: &Path) -> Vec<String> {
    let out = Command::new(tool("dumpe2fs"))
        .arg("-h")
        .arg(img)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            [
                "Filesystem features:",
                "Journal",
                "Total journal",
                "Free blocks:",
            ]
            .iter()
            .any(|k| l.starts_with(k))
        })
        .map(String::from)
        .collect()
}

fn stat8(img: &Path) -> String {
    debugfs_r(img, "stat <8>")
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            !["ctime:", "atime:", "mtime:", "crtime:", "Inode checksum:"]
                .iter()
                .any(|k| t.starts_with(k))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn journal_block0(img: &Path) -> u64 {
    debugfs_r(img, "bmap <8> 0")
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no journal block 0 in {}", img.display()))
}

fn compare(dir: &TempDir, img: &Path, bs: usize) {
    compare_as(dir, img, bs, "journal has been regenerated")
}

/// [`compare`], with what e2fsck -fy must print.
fn compare_as(dir: &TempDir, img: &Path, bs: usize, e2fsck_says: &str) {
    let before = hash_file(img);
    let n = pfsck(&["-fn".as_ref(), img.as_os_str()]);
    let e2n = e2fsck(img, &["-fn"]);
    assert_eq!(hash_file(img), before, "pfsck -fn wrote");
    assert_eq!(n.status.code(), e2n.code(), "-fn verdicts differ");

    let a = dir.join("A");
    let b = dir.join("B");
    copy_image(img, &a);
    copy_image(img, &b);
    let e2 = e2fsck(&a, &["-fy"]);
    assert!(
        e2.stdout.contains(e2fsck_says),
        "e2fsck -fy did not say `{e2fsck_says}`:\n{}",
        e2.stdout
    );
    let out = pfsck(&["-fy".as_ref(), b.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let ctx = format!("pfsck -fy:\n{text}\ne2fsck -fy:\n{}", e2.stdout);
    assert_eq!(out.status.code(), e2.code(), "exit codes differ\n{ctx}");
    let after = e2fsck(&b, &["-fn"]);
    assert_eq!(
        after.code(),
        Some(0),
        "e2fsck -fn after:\n{}\n{ctx}",
        after.stdout
    );
    assert_eq!(header(&a), header(&b), "superblock journal fields\n{ctx}");
    assert_eq!(groups(&a), groups(&b), "bitmaps or summaries\n{ctx}");
    assert_eq!(stat8(&a), stat8(&b), "journal inode\n{ctx}");
    let j0 = journal_block0(&a);
    assert_eq!(j0, journal_block0(&b));
    let da = std::fs::read(&a).unwrap();
    let db = std::fs::read(&b).unwrap();
    assert_eq!(masked_sb(&da), masked_sb(&db), "superblocks differ");
    let ino_blk: u64 = debugfs_r(&a, "imap <8>")
        .split_whitespace()
        .skip_while(|w| *w != "at")
        .nth(2)
        .and_then(|w| w.trim_end_matches(',').parse().ok())
        .expect("imap <8>");
    let sb_blk = if bs == 1024 { 1 } else { 0 };
    for (k, (x, y)) in da.chunks(bs).zip(db.chunks(bs)).enumerate() {
        let k = k as u64;
        if k == sb_blk || k == ino_blk {
            continue;
        }
        // Backup superblocks (e2fsck writes them after clearing a journal):
        // the tools' own fields aside, as for the primary.
        let is_backup_sb = x.len() >= 1024 && x[0x38..0x3A] == [0x53, 0xEF];
        if is_backup_sb {
            let pad = |b: &[u8]| {
                let mut v = vec![0u8; 2048];
                v[1024..2048].copy_from_slice(&b[..1024]);
                masked_sb(&v)
            };
            assert_eq!(
                pad(x),
                pad(y),
                "backup superblock in block {k} differs\n{ctx}"
            );
            continue;
        }
        assert!(x == y, "block {k} differs (journal block 0 is {j0})\n{ctx}");
    }
}

fn tree(dir: &TempDir) -> std::path::PathBuf {
    let root = dir.join("tree");
    build_tree(
        &root,
        &[
            Node::file("a", 30_000),
            Node::dir("d"),
            Node::file("d/b", 200_000),
        ],
    );
    root
}

/// ext4 (extents, metadata_csum): the journal superblock's magic is gone.
#[test]
fn bad_journal_superblock_ext4() {
    let dir = TempDir::new("jrecreate-ext4");
    let img = dir.join("img");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&tree(&dir)),
    );
    let j0 = journal_block0(&img);
    let mut data = std::fs::read(&img).unwrap();
    data[(j0 * 1024) as usize..(j0 * 1024) as usize + 4].fill(0);
    std::fs::write(&img, data).unwrap();
    compare(&dir, &img, 1024);
    // Preen recreates it too, as e2fsck -p does.
    let (a, b) = (dir.join("PA"), dir.join("PB"));
    copy_image(&img, &a);
    copy_image(&img, &b);
    let e2 = e2fsck(&a, &["-p"]);
    let out = pfsck(&["-p".as_ref(), b.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        e2.code(),
        "{text}\ne2fsck -p:\n{}",
        e2.stdout
    );
    assert_eq!(e2fsck_fn(&b), 0, "{text}");
    assert_eq!(groups(&a), groups(&b));
}

/// ext4 with several groups and flex_bg: e2fsck's choice of the group the
/// new journal starts in (the middle flex group) is followed.
#[test]
fn bad_journal_superblock_ext4_many_groups() {
    let dir = TempDir::new("jrecreate-ext4-groups");
    let img = dir.join("img");
    mkfs(
        &img,
        64 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&tree(&dir)),
    );
    let j0 = journal_block0(&img);
    let mut data = std::fs::read(&img).unwrap();
    data[(j0 * 1024) as usize..(j0 * 1024) as usize + 4].fill(0);
    std::fs::write(&img, data).unwrap();
    compare(&dir, &img, 1024);
}

/// ext3 (block-mapped journal, indirect blocks): bad journal superblock
/// magic.
#[test]
fn bad_journal_superblock_ext3() {
    let dir = TempDir::new("jrecreate-ext3");
    let img = dir.join("img");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext3().block_size(1024),
        Some(&tree(&dir)),
    );
    let j0 = journal_block0(&img);
    let mut data = std::fs::read(&img).unwrap();
    data[(j0 * 1024) as usize..(j0 * 1024) as usize + 4].fill(0);
    std::fs::write(&img, data).unwrap();
    compare(&dir, &img, 1024);
}

/// The corruption tests' ext3 geometry: 4 KiB blocks, 4 groups of 1024.
fn ext3_four_groups(dir: &TempDir) -> std::path::PathBuf {
    let img = dir.join("img");
    mkfs(
        &img,
        16 << 20,
        &MkfsOpts::ext3().block_size(4096).blocks_per_group(1024),
        Some(&tree(dir)),
    );
    img
}

/// has_journal set, s_journal_inum 0: e2fsck's "invalid journal (inode
/// 0)", cleared, the old inode 8 cleared in pass 1, a journal recreated.
/// Block-mapped, so e2fsck's library allocates it from the start of the
/// journal inode's group (group 0), not around the middle as for extents.
#[test]
fn journal_inum_zero_ext3() {
    let dir = TempDir::new("jrecreate-inum0");
    let img = ext3_four_groups(&dir);
    debugfs_w(&img, &["ssv journal_inum 0"]);
    compare(&dir, &img, 4096);
}

/// ext4 with a cleared journal inode: the superblock's backup of an
/// extent-mapped inode is of no use to e2fsck (it walks the copy as block
/// pointers), so the journal is recreated.
#[test]
fn journal_inode_cleared_ext4() {
    let dir = TempDir::new("jrecreate-clri-ext4");
    let img = dir.join("img");
    mkfs(
        &img,
        32 << 20,
        &MkfsOpts::ext4().block_size(4096).blocks_per_group(2048),
        Some(&tree(&dir)),
    );
    debugfs_w(&img, &["clri <8>"]);
    compare(&dir, &img, 4096);
}

/// ext3 with a cleared journal inode: e2fsck writes the inode back from
/// the superblock's backup of its block map (before pass 1, silently),
/// then pass 1 fixes its i_blocks; pfsck does the same, -p included. A
/// clean file system checked with -p and without -f is skipped after the
/// journal is looked at: e2fsck has then written the inode back (exit 0)
/// and left i_blocks for a full check, and so does pfsck.
#[test]
fn journal_inode_restored_from_backup_ext3() {
    let dir = TempDir::new("jrestore-ext3");
    let img = ext3_four_groups(&dir);
    debugfs_w(&img, &["clri <8>"]);
    compare_as(&dir, &img, 4096, "i_blocks is 0, should be");
    for (flag, clean_after) in [("-fp", true), ("-p", false)] {
        let (a, b) = (dir.join("PA"), dir.join("PB"));
        copy_image(&img, &a);
        copy_image(&img, &b);
        let e2 = e2fsck(&a, &[flag]);
        let out = pfsck(&[flag.as_ref(), b.as_os_str()]);
        let text = String::from_utf8_lossy(&out.stdout);
        let ctx = format!("{flag}: {text}\ne2fsck:\n{}", e2.stdout);
        assert_eq!(out.status.code(), e2.code(), "{ctx}");
        assert_eq!(e2fsck_fn(&a) == 0, clean_after, "{ctx}");
        assert_eq!(e2fsck_fn(&b) == 0, clean_after, "{ctx}");
        assert_eq!(stat8(&a), stat8(&b), "{ctx}");
        assert_eq!(groups(&a), groups(&b), "{ctx}");
    }
}
