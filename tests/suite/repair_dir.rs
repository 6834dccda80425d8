//! Directory repairs end to end: real images (`mke2fs -d`, then `e2fsck
//! -fyD` so the big directory gets an htree index), damaged with raw byte
//! edits in directory blocks and htree nodes, repaired with `pfsck -fy`.
//! Each case requires exit 1, then `e2fsck -fn` and `pfsck -fn` clean, and
//! every file whose entry the damage did not touch still at its path with
//! its contents (the whole tree is read back with `debugfs rdump`); a file
//! whose entry was damaged must survive somewhere (its path, a renamed
//! entry, or /lost+found).
//!
//! Bases: ext2 with 1 KiB blocks, ext4 with metadata_csum and 4 KiB blocks.

use crate::common::*;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;
/// Entries of the indexed directory.
const BIG: usize = 1500;
/// Entries of a directory of a few blocks (1 KiB blocks) or one (4 KiB).
const MID: usize = 150;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    Ext2,
    Ext4,
}

const ALL: [Base; 2] = [Base::Ext2, Base::Ext4];

fn tree() -> Vec<Node> {
    let mut v = vec![
        Node::file("top.bin", 5000),
        Node::dir("small"),
        Node::dir("small/sub"),
        Node::file("small/sub/deep", 300),
    ];
    for i in 1..=6 {
        v.push(Node::file(&format!("small/f{i}"), 100 + i));
    }
    // A few blocks of entries, without an index.
    for i in 0..MID {
        v.push(Node::file(&format!("mid/m{i:03}"), 10));
    }
    for i in 0..BIG {
        v.push(Node::file(
            &format!("big/entry_with_a_longer_name_{i:05}"),
            (i % 50) as u64 + 1,
        ));
    }
    v
}

fn tree_dir() -> PathBuf {
    let dir = cache_dir().join("repair-dir-tree");
    static ONCE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        let _ = std::fs::remove_dir_all(&dir);
        build_tree(&dir, &tree());
    });
    dir
}

impl Base {
    fn image(self) -> PathBuf {
        let (key, opts) = match self {
            Base::Ext2 => ("repair-dir-ext2", MkfsOpts::ext2().block_size(1024)),
            Base::Ext4 => ("repair-dir-ext4", MkfsOpts::ext4().block_size(4096)),
        };
        cached_image(key, |img| {
            mkfs(img, 32 * MIB, &opts, Some(&tree_dir()));
            // Index the big directory.
            let r = e2fsck(img, &["-fyD"]);
            assert!(
                r.code().is_some_and(|c| c <= 1),
                "e2fsck -fyD: {}",
                r.describe()
            );
            assert_eq!(e2fsck_fn(img), 0, "base {self:?} is not clean");
            let h = debugfs_r(img, "htree /big");
            assert!(h.contains("Root node dump"), "/big is not indexed:\n{h}");
        })
    }
}

fn block_size(img: &Path) -> u64 {
    dumpe2fs(img).block_size
}

/// (offset, inode, rec_len, name) of the records of a directory block.
fn records(b: &[u8]) -> Vec<(usize, u32, usize, Vec<u8>)> {
    let mut v = Vec::new();
    let mut off = 0;
    while off + 8 <= b.len() {
        let rec = u16::from_le_bytes([b[off + 4], b[off + 5]]) as usize;
        if rec < 8 || off + rec > b.len() {
            break;
        }
        let ino = u32::from_le_bytes(b[off..off + 4].try_into().unwrap());
        let nl = b[off + 6] as usize;
        v.push((
            off,
            ino,
            rec,
            b[off + 8..off + 8 + nl.min(rec - 8)].to_vec(),
        ));
        off += rec;
    }
    v
}

/// Byte position in the image of logical block `lblk` of directory `dir`,
/// and the block's bytes.
fn dir_block(img: &Path, dir: &str, lblk: usize) -> (u64, Vec<u8>) {
    let bs = block_size(img);
    // `blocks` would list extent tree blocks too.
    let pos = debugfs_number(img, &format!("bmap {dir} {lblk}")) * bs;
    (pos, read_at(img, pos, bs as usize))
}

/// Image position of the record named `name` in block `lblk` of `dir`.
fn record_pos(img: &Path, dir: &str, lblk: usize, name: &str) -> u64 {
    let (pos, b) = dir_block(img, dir, lblk);
    let r = records(&b)
        .into_iter()
        .find(|r| r.3 == name.as_bytes())
        .unwrap_or_else(|| panic!("no entry {name} in {dir} block {lblk}"));
    pos + r.0 as u64
}

/// The last record of block `lblk` of `dir` before a checksum tail.
fn last_record(img: &Path, dir: &str, lblk: usize) -> u64 {
    let (pos, b) = dir_block(img, dir, lblk);
    let r = records(&b);
    let last = r.iter().rev().find(|r| r.1 != 0 || r.2 != 12).unwrap();
    pos + last.0 as u64
}

fn put16(img: &Path, pos: u64, v: u16) {
    write_at(img, pos, &v.to_le_bytes());
}

/// Runs the repair and all the checks of the module comment. `damaged`:
/// paths whose entries the damage touched.
fn repairs(name: &str, base: Base, damaged: &[&str], damage: impl FnOnce(&Path)) -> TempDir {
    let ctx = format!("{name} on {base:?}");
    let tmp = TempDir::new(&format!("repair-dir-{name}"));
    let img = tmp.join("disk.img");
    copy_image(&base.image(), &img);
    damage(&img);
    assert_ne!(e2fsck_fn(&img), 0, "[{ctx}] e2fsck -fn sees no damage");
    let out = pfsck(&[OsStr::new("-fy"), img.as_os_str()]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "[{ctx}] pfsck -fy:\n{text}");
    assert_both_clean(&ctx, &img);
    files_kept(&ctx, &img, &tmp, damaged);
    tmp
}

/// The big directory still has an index after its rebuild.
fn indexed(tmp: &TempDir) {
    let h = debugfs_r(&tmp.join("disk.img"), "htree /big");
    assert!(h.contains("Root node dump"), "/big lost its index:\n{h}");
}

/// Every file of the tree at its path with its contents, except the
/// `damaged` ones, whose contents must be found somewhere.
fn files_kept(ctx: &str, img: &Path, tmp: &TempDir, damaged: &[&str]) {
    let out = tmp.join("rdump");
    std::fs::create_dir_all(&out).unwrap();
    debugfs_r(img, &format!("rdump / {}", out.display()));
    let mut found: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
    for e in walk(&out) {
        *found.entry(std::fs::read(&e).unwrap()).or_default() += 1;
    }
    for n in tree() {
        let Node::File { path, size } = n else {
            continue;
        };
        let want = file_content(&path, size as usize);
        if damaged.contains(&path.as_str()) {
            assert!(
                found.contains_key(&want),
                "[{ctx}] contents of damaged /{path} are gone"
            );
            continue;
        }
        let got = std::fs::read(out.join(&path)).ok();
        assert!(
            got.as_deref() == Some(&want[..]),
            "[{ctx}] /{path} missing or changed"
        );
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v
}

#[test]
fn name_longer_than_its_record_is_salvaged() {
    for b in ALL {
        repairs("name-len", b, &["small/f3"], |img| {
            // name_len past its 12-byte record: the record goes to the
            // entry before it, the walk goes on after it.
            write_at(img, record_pos(img, "/small", 0, "f3") + 6, &[200]);
        });
    }
}

#[test]
fn record_running_past_the_block_is_cut() {
    for b in ALL {
        repairs("overrun", b, &[], |img| {
            let pos = last_record(img, "/small", 0);
            put16(img, pos + 4, 0xFFF0);
        });
    }
}

#[test]
fn record_length_off_the_grid_loses_the_rest_of_the_block() {
    for b in ALL {
        let lost: Vec<String> = {
            let (_, blk) = dir_block(&b.image(), "/small", 0);
            let r = records(&blk);
            let at = r.iter().position(|r| r.3 == b"f4").unwrap();
            r[at..]
                .iter()
                .filter(|r| r.1 != 0 && r.3.starts_with(b"f"))
                .map(|r| format!("small/{}", String::from_utf8_lossy(&r.3)))
                .collect()
        };
        let lost: Vec<&str> = lost.iter().map(|s| s.as_str()).collect();
        let mut damaged = lost.clone();
        damaged.push("small/sub/deep");
        repairs("rec-len", b, &damaged, |img| {
            let pos = record_pos(img, "/small", 0, "f4");
            put16(img, pos + 4, 14);
        });
    }
}

#[test]
fn missing_dot_is_recreated() {
    for b in ALL {
        repairs("dot", b, &[], |img| {
            let (pos, _) = dir_block(img, "/small", 0);
            write_at(img, pos + 8, b"x");
        });
    }
}

/// '.' with rec_len 0: the salvage empties the first record over the
/// whole block, then '.' is put back in 12 bytes and, since the old '..'
/// record follows, the whole old chain is kept, as e2fsck keeps it
/// (a rebuild from the emptied block would lose every entry).
#[test]
fn dot_with_zero_rec_len_keeps_the_block() {
    for b in ALL {
        repairs("dot-rec-len", b, &[], |img| {
            let (pos, _) = dir_block(img, "/small", 0);
            put16(img, pos + 4, 0);
        });
    }
}

#[test]
fn second_dotdot_is_removed() {
    for b in ALL {
        repairs("dup-dotdot", b, &["small/f5"], |img| {
            let pos = record_pos(img, "/small", 0, "f5");
            write_at(img, pos + 8, b"..");
        });
    }
}

#[test]
fn duplicate_name_is_renamed() {
    for b in ALL {
        // As in e2fsck's pass 3A, the entry naming the higher inode (f2's)
        // keeps the name and f1's is renamed f1~0: both move.
        repairs("dup-name", b, &["small/f1", "small/f2"], |img| {
            let pos = record_pos(img, "/small", 0, "f2");
            write_at(img, pos + 8, b"f1");
        });
    }
}

#[test]
fn missing_checksum_tail_is_inserted() {
    repairs("no-tail", Base::Ext4, &[], |img| {
        let pos = last_record(img, "/small", 0);
        let rec = u16::from_le_bytes(read_at(img, pos + 4, 2).try_into().unwrap());
        put16(img, pos + 4, rec + 12);
    });
}

#[test]
fn bad_htree_root_clears_the_index() {
    for b in ALL {
        indexed(&repairs("htree-hash-version", b, &[], |img| {
            let (pos, _) = dir_block(img, "/big", 0);
            write_at(img, pos + 0x1C, &[0xF0]);
        }));
        indexed(&repairs("htree-depth", b, &[], |img| {
            let (pos, _) = dir_block(img, "/big", 0);
            write_at(img, pos + 0x1E, &[7]);
        }));
    }
}

#[test]
fn unordered_htree_index_is_rebuilt() {
    for b in ALL {
        let t = repairs("htree-order", b, &[], |img| {
            // Entries 1 and 2 of the root swap their hashes.
            let (pos, _) = dir_block(img, "/big", 0);
            let e1 = pos + 0x20 + 8;
            let h1 = read_at(img, e1, 4);
            let h2 = read_at(img, e1 + 8, 4);
            write_at(img, e1, &h2);
            write_at(img, e1 + 8, &h1);
        });
        indexed(&t);
    }
}

#[test]
fn corrupt_htree_leaf_is_salvaged_and_the_directory_rebuilt() {
    for b in ALL {
        let victim = {
            let (_, blk) = dir_block(&b.image(), "/big", 2);
            let r = records(&blk);
            format!("big/{}", String::from_utf8_lossy(&r[1].3))
        };
        let t = repairs("htree-leaf", b, &[victim.as_str()], |img| {
            let (pos, blk) = dir_block(img, "/big", 2);
            let r = records(&blk);
            write_at(img, pos + r[1].0 as u64 + 6, &[250]);
        });
        indexed(&t);
    }
}

#[test]
fn hole_in_a_block_mapped_directory_gets_a_new_block() {
    let b = Base::Ext2;
    let (lost, blk): (Vec<String>, u64) = {
        let img = b.image();
        let (_, blk) = dir_block(&img, "/mid", 1);
        let names = records(&blk)
            .into_iter()
            .filter(|r| r.1 != 0)
            .map(|r| format!("mid/{}", String::from_utf8_lossy(&r.3)))
            .collect();
        (names, debugfs_number(&img, "bmap /mid 1"))
    };
    assert!(!lost.is_empty());
    let lost: Vec<&str> = lost.iter().map(|s| s.as_str()).collect();
    repairs("hole-ext2", b, &lost, |img| {
        debugfs_w(
            img,
            &["sif /mid block[1] 0".to_string(), format!("freeb {blk}")],
        );
    });
}

#[test]
fn hole_in_an_extent_mapped_directory_is_closed() {
    let b = Base::Ext4;
    let img = b.image();
    // One extent, in the inode, for the whole directory.
    let h = debugfs_r(&img, "ex /mid");
    assert_eq!(h.lines().filter(|l| l.contains(" - ")).count(), 1, "{h}");
    repairs("hole-ext4", b, &[], |img| {
        // The extent's first logical block (i_block word 3) moves up by 3.
        debugfs_w(img, &["sif /mid block[3] 3"]);
    });
}

#[test]
fn preen_rebuilds_an_index_failing_its_checksum() {
    let b = Base::Ext4;
    let tmp = TempDir::new("repair-dir-preen-htree");
    let img = tmp.join("disk.img");
    copy_image(&b.image(), &img);
    // The root's dx tail checksum: the last 4 bytes of the 4 KiB block.
    let (pos, blk) = dir_block(&img, "/big", 0);
    write_at(&img, pos + 4092, &[!blk[4092]]);
    assert_ne!(e2fsck_fn(&img), 0);
    let out = pfsck(&[OsStr::new("-fp"), img.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "pfsck -fp:\n{text}");
    assert_both_clean("preen-htree", &img);
    files_kept("preen-htree", &img, &tmp, &[]);
    indexed(&tmp);
}

#[test]
fn full_lost_found_is_expanded() {
    for b in ALL {
        let mid: Vec<String> = (0..MID).map(|i| format!("mid/m{i:03}")).collect();
        let damaged: Vec<&str> = mid.iter().map(|s| s.as_str()).collect();
        let t = repairs("expand-lf", b, &damaged, |img| {
            // A one-block lost+found, and more unattached files than fit.
            let mut cmds = vec![
                "rmdir lost+found".to_string(),
                "mkdir lost+found".to_string(),
            ];
            cmds.extend(mid.iter().map(|m| format!("unlink /{m}")));
            debugfs_w(img, &cmds);
        });
        let img = t.join("disk.img");
        let ls = debugfs_r(&img, "ls /lost+found");
        let n = ls.split_whitespace().filter(|w| w.starts_with('#')).count();
        assert_eq!(n, MID, "{ls}");
        if b == Base::Ext2 {
            // 150 entries of 16 bytes need 3 KiB blocks.
            assert!(blocks_of(&img, "/lost+found").len() >= 3);
        }
    }
}

#[test]
fn missing_root_is_recreated() {
    for b in ALL {
        // Every entry of the root goes with it: the files survive in
        // /lost+found (on the ext4 base, a new one whose inode lies past
        // its group's itable_unused mark).
        let all: Vec<String> = tree()
            .into_iter()
            .filter_map(|n| match n {
                Node::File { path, .. } => Some(path),
                _ => None,
            })
            .collect();
        let damaged: Vec<&str> = all.iter().map(|s| s.as_str()).collect();
        let t = repairs("no-root", b, &damaged, |img| {
            debugfs_w(img, &["clri <2>", "freei <2>"]);
        });
        let ls = debugfs_r(&t.join("disk.img"), "ls /lost+found");
        assert!(ls.contains("#"), "nothing reconnected:\n{ls}");
    }
}
