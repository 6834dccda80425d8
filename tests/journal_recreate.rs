//! An unusable internal journal (bad superblock magic, a cleared inode) is
//! replaced by `pfsck -fy` with the journal `e2fsck -fy` recreates: copy A
//! through e2fsck, copy B through pfsck; the exit codes must be equal,
//! `e2fsck -fn` must find B clean, the bitmaps and group summaries, the
//! journal inode (times and checksum aside), the new journal superblock
//! and every other block (the superblock's own fields aside) must be the
//! same. `pfsck -fn` must stop as `e2fsck -fn` does and write nothing.

mod common;

use common::journal::{groups, masked_sb};
use common::*;
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
        e2.stdout.contains("journal has been regenerated"),
        "e2fsck did not recreate the journal:\n{}",
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
