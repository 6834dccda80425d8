//! Quota files rewritten as e2fsck rewrites them ("Update quota info for
//! quota type N"): images made with `mke2fs -O quota[,project] -d` and
//! settled with `e2fsck -fy`, then given files owned by ids the quota files
//! lack (`debugfs sif ... uid|gid|projid`), entries removed, limits set or
//! the file's info block damaged (byte edits in the quota file). One
//! `pfsck -fy` must exit 1 and leave the image clean for `e2fsck -fn` and
//! `pfsck -fn`; every quota file must then list the same ids, usage and
//! limits (`debugfs list_quota`) as after `e2fsck -fy`, and, both run at
//! the same time (`PFSCK_TIME`, `E2FSCK_TIME`), the images must be equal
//! block for block but for the superblock.
//!
//! Bases: ext4 with 4 KiB and 1 KiB blocks (user, group and project quota),
//! ext3 (block-mapped quota files, an indirect block once they grow), and
//! bigalloc with 16 KiB clusters.

use crate::common::*;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;
/// The time both checkers are told it is.
const NOW: &str = "1700000000";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    Ext4,
    Ext4Small,
    Ext3,
    Bigalloc,
}

impl Base {
    fn project(self) -> bool {
        matches!(self, Base::Ext4 | Base::Ext4Small)
    }

    fn image(self) -> PathBuf {
        let key = format!("quota-repair-{self:?}");
        cached_image(&key, |img| {
            let (opts, size) = match self {
                Base::Ext4 => (
                    MkfsOpts::ext4()
                        .block_size(4096)
                        .inode_size(256)
                        .features("quota,project"),
                    32 * MIB,
                ),
                Base::Ext4Small => (
                    MkfsOpts::ext4()
                        .block_size(1024)
                        .inode_size(256)
                        .features("quota,project"),
                    32 * MIB,
                ),
                Base::Ext3 => (
                    MkfsOpts::ext3()
                        .block_size(1024)
                        .inode_size(256)
                        .features("quota"),
                    32 * MIB,
                ),
                Base::Bigalloc => {
                    let mut o = MkfsOpts::ext4()
                        .block_size(1024)
                        .inode_size(256)
                        .features("bigalloc,quota");
                    o.extra_args = vec!["-C".into(), "16384".into()];
                    (o, 64 * MIB)
                }
            };
            mkfs(img, size, &opts, Some(&standard_tree_dir()));
            // mke2fs -d leaves the usage of the tree out of the files.
            let r = e2fsck(img, &["-fy"]);
            assert!(matches!(r.code(), Some(0 | 1)), "{}", r.describe());
            assert_eq!(e2fsck_fn(img), 0, "base {self:?} is not clean");
        })
    }
}

/// One quota file entry as `debugfs list_quota` prints it: id, space,
/// block soft and hard limits, inodes, inode soft and hard limits.
type Row = [u64; 7];

fn list_quota(img: &Path, qtype: &str) -> Vec<Row> {
    let text = debugfs_r(img, &format!("list_quota {qtype}"));
    text.lines()
        .filter_map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .map(|w| w.parse().ok())
                .collect::<Option<_>>()?;
            v.try_into().ok()
        })
        .collect()
}

fn types(base: Base) -> &'static [&'static str] {
    if base.project() {
        &["user", "group", "project"]
    } else {
        &["user", "group"]
    }
}

/// A quota file's contents as read with debugfs `dump`, and where each of
/// its file system blocks lies.
struct QuotaFile {
    data: Vec<u8>,
    blocks: Vec<u64>,
    bs: u64,
}

impl QuotaFile {
    fn read(img: &Path, ino: u64) -> QuotaFile {
        let tmp = TempDir::new("quota-dump");
        let out = tmp.join("q");
        debugfs_r(img, &format!("dump <{ino}> {}", out.display()));
        QuotaFile {
            data: std::fs::read(&out).unwrap(),
            blocks: blocks_of(img, &format!("<{ino}>")),
            bs: dumpe2fs(img).block_size,
        }
    }

    fn le32(&self, off: usize) -> u64 {
        u64::from(u32::from_le_bytes(
            self.data[off..off + 4].try_into().unwrap(),
        ))
    }

    /// The byte offset in the file of `id`'s entry (revision 1 tree).
    fn entry(&self, id: u32) -> usize {
        let mut blk = 1u64;
        for depth in 0..4 {
            let slot = ((id >> (8 * (3 - depth))) & 0xFF) as usize;
            blk = self.le32(blk as usize * 1024 + slot * 4);
            assert_ne!(blk, 0, "no entry for id {id}");
        }
        (0..14)
            .map(|k| blk as usize * 1024 + 16 + k * 72)
            .find(|&o| {
                self.le32(o) == u64::from(id) && self.data[o..o + 72].iter().any(|&b| b != 0)
            })
            .unwrap_or_else(|| panic!("no entry for id {id}"))
    }

    /// Writes `bytes` at byte `off` of the file, on the image.
    fn patch(&self, img: &Path, off: usize, bytes: &[u8]) {
        let bs = self.bs as usize;
        let dev = self.blocks[off / bs] * self.bs + (off % bs) as u64;
        write_at(img, dev, bytes);
    }
}

/// Quota inode of a type, as the superblock names it.
fn quota_inode(img: &Path, qtype: &str) -> u64 {
    let key = match qtype {
        "user" => "User quota inode",
        "group" => "Group quota inode",
        _ => "Project quota inode",
    };
    dumpe2fs(img).header[key].parse().unwrap()
}

/// Damages a copy of the base, then requires the repair described in the
/// module comment; `expect` must appear in pfsck's report.
fn repairs(base: Base, name: &str, expect: &str, damage: impl FnOnce(&Path)) {
    repairs_as(base, name, expect, true, damage);
}

/// Like [`repairs`]; `same_bytes` false skips the block comparison (for
/// fixes besides quota whose layout differs from e2fsck's).
fn repairs_as(base: Base, name: &str, expect: &str, same_bytes: bool, damage: impl FnOnce(&Path)) {
    let ctx = format!("{name} on {base:?}");
    let tmp = TempDir::new(&format!("quota-{name}"));
    let img = tmp.join("damaged.img");
    copy_image(&base.image(), &img);
    damage(&img);
    assert_ne!(e2fsck_fn(&img), 0, "[{ctx}] e2fsck -fn sees no damage");
    let mine = tmp.join("pfsck.img");
    let theirs = tmp.join("e2fsck.img");
    copy_image(&img, &mine);
    copy_image(&img, &theirs);

    let out = std::process::Command::new(pfsck_bin())
        .args(["-fy".as_ref(), mine.as_os_str()])
        .env("PFSCK_TIME", NOW)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "[{ctx}] pfsck -fy:\n{text}");
    assert!(text.contains(expect), "[{ctx}] no '{expect}' in:\n{text}");
    assert_both_clean(&ctx, &mine);

    let mut cmd = std::process::Command::new(tool("e2fsck"));
    cmd.args(["-fy".as_ref(), theirs.as_os_str()])
        .env("E2FSCK_TIME", NOW);
    let e2 = run_timeout_merged(cmd, E2FSCK_TIMEOUT);
    assert_eq!(e2.code(), Some(1), "[{ctx}] e2fsck -fy: {}", e2.describe());

    for t in types(base) {
        assert_eq!(
            list_quota(&mine, t),
            list_quota(&theirs, t),
            "[{ctx}] {t} quota differs from e2fsck's"
        );
    }
    if !same_bytes {
        return;
    }
    let bs = dumpe2fs(&mine).block_size as usize;
    let (x, y) = (
        std::fs::read(&mine).unwrap(),
        std::fs::read(&theirs).unwrap(),
    );
    let sb = 1024 / bs;
    let diff: Vec<usize> = (0..x.len() / bs)
        .filter(|&k| k != sb && x[k * bs..(k + 1) * bs] != y[k * bs..(k + 1) * bs])
        .collect();
    assert!(
        diff.is_empty(),
        "[{ctx}] blocks differing from e2fsck's: {:?}\n{text}",
        &diff[..diff.len().min(20)]
    );
}

fn sif(img: &Path, cmds: &[String]) {
    debugfs_w(img, cmds);
}

fn all_cases(base: Base) {
    // Files owned by ids the quota files do not know.
    repairs(
        base,
        "new-uid",
        "The user quota file has no record for ID 4321",
        |img| {
            sif(img, &["sif /small uid 4321".to_string()]);
        },
    );
    repairs(
        base,
        "new-gid",
        "The group quota file has no record for ID 77",
        |img| {
            sif(
                img,
                &[
                    "sif /dir1/sub/c gid 77".to_string(),
                    "sif /f70k gid 78".into(),
                ],
            );
        },
    );
    if base.project() {
        repairs(
            base,
            "new-projid",
            "The project quota file has no record for ID 5",
            |img| {
                sif(img, &["sif /f300k projid 5".to_string()]);
            },
        );
    }
    // Forty new owners: several data blocks and index blocks (and, for a
    // block-mapped file of 1 KiB blocks, an indirect block).
    repairs(
        base,
        "many-ids",
        "The user quota file has no record",
        |img| {
            let cmds: Vec<String> = (0..40)
                .map(|i| {
                    format!(
                        "sif /many/entry-with-a-long-name-{i:04} uid {}",
                        1000 * i + 7
                    )
                })
                .collect();
            sif(img, &cmds);
        },
    );
    // An entry taken out of the file.
    repairs(
        base,
        "entry-removed",
        "The user quota file has no record for ID 0",
        |img| {
            let q = QuotaFile::read(img, quota_inode(img, "user"));
            let off = q.entry(0);
            q.patch(img, off, &[0u8; 72]);
        },
    );
    // Limits (below usage only as far as no grace time starts) survive.
    repairs(
        base,
        "limits-kept",
        "The user quota file has no record for ID 4321",
        |img| {
            for (t, fields) in [("user", [32usize, 40]), ("group", [8, 16])] {
                let q = QuotaFile::read(img, quota_inode(img, t));
                let off = q.entry(0);
                for (k, f) in fields.iter().enumerate() {
                    let v: u64 = if k == 0 { 1 << 40 } else { 1 << 30 };
                    q.patch(img, off + f, &v.to_le_bytes());
                }
            }
            sif(img, &["sif /small uid 4321".to_string()]);
        },
    );
    // An info block e2fsck refuses: the file is rewritten from the usage
    // alone.
    repairs(base, "info-damaged", "Quota file cannot be used", |img| {
        let q = QuotaFile::read(img, quota_inode(img, "group"));
        q.patch(img, 8 + 12, &999u32.to_le_bytes());
    });
    // The quota inode itself damaged (its size gone): pass 1 fixes it,
    // then the file is rewritten.
    repairs(
        base,
        "inode-size",
        "The user quota file has no record for ID 4321",
        |img| {
            let ino = quota_inode(img, "user");
            sif(
                img,
                &[
                    format!("sif <{ino}> size 0"),
                    "sif /small uid 4321".to_string(),
                ],
            );
        },
    );
    // With other fixes in the same run (a link count, a quota block
    // marked free): the rewrite comes once they are made.
    repairs(
        base,
        "with-other-fixes",
        "The user quota file has no record for ID 4321",
        |img| {
            let q = QuotaFile::read(img, quota_inode(img, "user"));
            sif(
                img,
                &[
                    "sif /small uid 4321".to_string(),
                    "sif /f70k links_count 9".into(),
                    format!("freeb {}", q.blocks[0]),
                ],
            );
        },
    );
    // Fixes that change usage: an unattached empty file cleared, a
    // /lost+found created (pfsck's is extent-mapped where e2fsck's is
    // block-mapped, so only the quota contents are compared there); the
    // quota files follow in the next round.
    repairs(
        base,
        "empty-file-cleared",
        "is empty and no directory names it",
        |img| {
            sif(img, &["unlink /empty".to_string()]);
        },
    );
    repairs_as(base, "usage-changed", "Quota usage differs", false, |img| {
        sif(
            img,
            &[
                "rmdir /lost+found".to_string(),
                "sif /tiny links_count 0".into(),
                "sif /tiny size 0".into(),
                "unlink /tiny".into(),
            ],
        );
    });
}

#[test]
fn ext4_4k() {
    all_cases(Base::Ext4);
}

#[test]
fn ext4_1k() {
    all_cases(Base::Ext4Small);
}

#[test]
fn ext3_block_mapped_quota_files() {
    all_cases(Base::Ext3);
}

#[test]
fn bigalloc() {
    all_cases(Base::Bigalloc);
}
