//! Orphan processing against e2fsck: files left open-unlinked (deleted) or
//! mid-truncate by a crash, on the orphan list (`s_last_orphan` chained
//! through i_dtime) and in the orphan file, made with debugfs -w the way
//! the kernel leaves them.
//!
//! Copy A goes through `e2fsck -fy`, copy B through `pfsck -fy`: the exit
//! codes must be equal, `e2fsck -fn` must find B clean, the bitmaps and
//! group summaries must be the same (same blocks and inodes freed), every
//! orphan inode must read the same (`debugfs stat`, dtime and checksum
//! aside: dtime is the time of the run), a truncated file must keep the
//! same contents, and every other block must be byte-identical (the
//! superblock's own fields aside). `pfsck -fn` on the original must judge
//! as `e2fsck -fn` does (exit 4) and write nothing. Also a real crash, when
//! loop mounts are allowed: a file unlinked while still open, the image
//! copied while mounted.

use crate::common::journal::{groups, masked_sb};
use crate::common::*;
use std::path::Path;
use std::process::Command;

const BS: u64 = 1024;

fn ino_of(img: &Path, path: &str) -> u32 {
    let out = debugfs_r(img, &format!("stat {path}"));
    out.split_whitespace()
        .skip_while(|w| *w != "Inode:")
        .nth(1)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no inode for {path}: {out}"))
}

fn crc32c(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ if crc & 1 != 0 { 0x82F6_3B78 } else { 0 };
        }
    }
    crc
}

/// Writes orphan file block 0 of `img` holding `entries`, with the tail
/// magic and (metadata_csum) checksum the kernel writes.
fn write_orphan_block(img: &Path, entries: &[u32]) {
    let ino = dumpe2fs_field(img, "Orphan file inode:")
        .parse::<u32>()
        .expect("orphan file inode");
    let pblk = debugfs_r(img, &format!("bmap <{ino}> 0"))
        .trim()
        .parse::<u64>()
        .expect("orphan file block");
    let generation = debugfs_r(img, &format!("stat <{ino}>"))
        .split_whitespace()
        .skip_while(|w| *w != "Generation:")
        .nth(1)
        .and_then(|w| w.parse::<u32>().ok())
        .expect("generation");
    let uuid = dumpe2fs_field(img, "Filesystem UUID:").replace('-', "");
    let uuid: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&uuid[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let bs = BS as usize;
    let mut b = vec![0u8; bs];
    for (i, e) in entries.iter().enumerate() {
        b[4 * i..4 * i + 4].copy_from_slice(&e.to_le_bytes());
    }
    b[bs - 8..bs - 4].copy_from_slice(&0x0B10_CA04u32.to_le_bytes());
    let seed = crc32c(!0, &uuid);
    let mut c = crc32c(seed, &ino.to_le_bytes());
    c = crc32c(c, &generation.to_le_bytes());
    c = crc32c(c, &pblk.to_le_bytes());
    c = crc32c(c, &b[..bs - 8]);
    b[bs - 4..].copy_from_slice(&c.to_le_bytes());
    let mut data = std::fs::read(img).unwrap();
    let off = (pblk * BS) as usize;
    data[off..off + bs].copy_from_slice(&b);
    std::fs::write(img, data).unwrap();
}

fn dumpe2fs_field(img: &Path, name: &str) -> String {
    let out = Command::new(tool("dumpe2fs"))
        .arg("-h")
        .arg(img)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
        .unwrap_or_else(|| panic!("dumpe2fs has no {name}"))
}

fn stat_masked(img: &Path, ino: u32) -> String {
    debugfs_r(img, &format!("stat <{ino}>"))
        .lines()
        .filter(|l| !l.trim_start().starts_with("dtime:") && !l.starts_with("Inode checksum:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Blocks holding inode `ino` in the inode table (from debugfs imap).
fn inode_block(img: &Path, ino: u32) -> u64 {
    let out = debugfs_r(img, &format!("imap <{ino}>"));
    out.split_whitespace()
        .skip_while(|w| *w != "at")
        .nth(2)
        .and_then(|w| w.trim_end_matches(',').parse().ok())
        .unwrap_or_else(|| panic!("imap <{ino}>: {out}"))
}

/// Extent tree blocks of inode `ino` ("(ETB0):2255" in debugfs stat).
fn etb_blocks(img: &Path, ino: u32) -> Vec<u64> {
    debugfs_r(img, &format!("stat <{ino}>"))
        .split([' ', ',', '\n'])
        .filter_map(|w| w.strip_prefix("(ETB"))
        .filter_map(|w| w.split_once("):").and_then(|(_, b)| b.trim().parse().ok()))
        .collect()
}

/// Runs both checkers on copies of `img` and compares as the module
/// comment says. `deleted`/`truncated`: the orphans.
fn compare(dir: &TempDir, img: &Path, deleted: &[u32], truncated: &[u32]) {
    let a = dir.join("A");
    let b = dir.join("B");
    copy_image(img, &a);
    copy_image(img, &b);

    let before = hash_file(img);
    let n = pfsck(&["-fn".as_ref(), img.as_os_str()]);
    let e2n = e2fsck(img, &["-fn"]);
    assert_eq!(hash_file(img), before, "pfsck -fn wrote");
    assert_eq!(
        n.status.code(),
        e2n.code(),
        "-fn verdicts differ\npfsck: {}\ne2fsck: {}",
        String::from_utf8_lossy(&n.stdout),
        e2n.stdout
    );

    let e2 = e2fsck(&a, &["-fy"]);
    let out = pfsck(&["-fy".as_ref(), b.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let ctx = format!("pfsck -fy:\n{text}\ne2fsck -fy:\n{}", e2.stdout);
    assert_eq!(out.status.code(), e2.code(), "exit codes differ\n{ctx}");
    for &i in deleted.iter().chain(truncated) {
        let verb = if deleted.contains(&i) {
            "Clearing"
        } else {
            "Truncating"
        };
        assert!(
            text.contains(&format!("{verb} orphaned inode {i} ")),
            "no '{verb} orphaned inode {i}'\n{ctx}"
        );
    }
    let after = e2fsck(&b, &["-fn"]);
    assert_eq!(
        after.code(),
        Some(0),
        "e2fsck -fn after pfsck -fy:\n{}",
        after.stdout
    );
    assert_eq!(
        groups(&a),
        groups(&b),
        "bitmaps or group summaries differ\n{ctx}"
    );
    let mut skip = vec![1u64];
    for &i in deleted.iter().chain(truncated) {
        assert_eq!(stat_masked(&a, i), stat_masked(&b, i), "inode {i} differs");
        skip.push(inode_block(&a, i));
    }
    for &i in truncated {
        assert_eq!(
            debugfs_r(&a, &format!("cat <{i}>")),
            debugfs_r(&b, &format!("cat <{i}>")),
            "contents of truncated inode {i} differ"
        );
        // Extent slots past the entry count hold stale entries in both
        // results, but not the same ones (e2fsck unmaps block by block), so
        // the inode and its extent tree blocks are compared through stat.
        skip.push(inode_block(&a, i));
        skip.extend(etb_blocks(&a, i));
    }
    let da = std::fs::read(&a).unwrap();
    let db = std::fs::read(&b).unwrap();
    assert_eq!(masked_sb(&da), masked_sb(&db), "superblocks differ");
    for (k, (x, y)) in da
        .chunks(BS as usize)
        .zip(db.chunks(BS as usize))
        .enumerate()
    {
        if !skip.contains(&(k as u64)) {
            assert!(x == y, "block {k} differs\n{ctx}");
        }
    }
}

/// Makes `ino` an orphan chained to `next` (0 ends the list).
fn chain(list: &[u32]) -> Vec<String> {
    let mut cmds = vec![format!("ssv last_orphan {}", list[0])];
    for (k, &i) in list.iter().enumerate() {
        let next = list.get(k + 1).copied().unwrap_or(0);
        cmds.push(format!("sif <{i}> dtime {next}"));
    }
    cmds
}

fn tree(dir: &TempDir) -> std::path::PathBuf {
    let root = dir.join("tree");
    build_tree(
        &root,
        &[
            Node::file("f1", 20_123),
            Node::file("f2", 40_123),
            Node::file("f3", 60_123),
            Node::file("f4", 80_123),
            Node::file("f5", 100_123),
            Node::dir("d"),
            Node::file("d/big", 300_000),
            Node::sparse(
                "frag",
                400_000,
                &[
                    (0, 3000),
                    (40_000, 3000),
                    (80_000, 3000),
                    (120_000, 3000),
                    (160_000, 3000),
                    (200_000, 3000),
                    (240_000, 3000),
                    (280_000, 3000),
                ],
            ),
        ],
    );
    root
}

/// ext4 (extents, metadata_csum, orphan file): deletes and truncates on
/// the list, including a fragmented file whose extent tree has a leaf
/// block, and entries in the orphan file.
#[test]
fn orphan_list_and_orphan_file_ext4() {
    let dir = TempDir::new("orphan-ext4");
    let img = dir.join("img");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext4().block_size(1024).features("orphan_file"),
        Some(&tree(&dir)),
    );
    let (f1, f3, f4, f5, big, frag) = (
        ino_of(&img, "/f1"),
        ino_of(&img, "/f3"),
        ino_of(&img, "/f4"),
        ino_of(&img, "/f5"),
        ino_of(&img, "/d/big"),
        ino_of(&img, "/frag"),
    );
    assert!(
        debugfs_r(&img, &format!("stat <{frag}>")).contains("(ETB0)"),
        "the fragmented file should have an extent tree block"
    );
    let mut cmds = vec![
        "unlink /f1".to_string(),
        format!("sif <{f1}> links_count 0"),
        format!("sif <{f3}> size 5000"),
        "unlink /d/big".into(),
        format!("sif <{big}> links_count 0"),
        format!("sif <{frag}> size 130000"),
        "unlink /f5".into(),
        format!("sif <{f5}> links_count 0"),
        format!("sif <{f4}> size 1"),
        "feature orphan_present".into(),
    ];
    cmds.extend(chain(&[f1, f3, big, frag]));
    debugfs_w(&img, &cmds);
    write_orphan_block(&img, &[f4, f5]);
    compare(&dir, &img, &[f1, big, f5], &[f3, frag, f4]);
}

/// ext3 (indirect blocks): a truncate inside the double indirect range, a
/// truncate to 0, a delete.
#[test]
fn orphan_list_ext3_indirect() {
    let dir = TempDir::new("orphan-ext3");
    let img = dir.join("img");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext3().block_size(1024),
        Some(&tree(&dir)),
    );
    let (f2, f3, big) = (
        ino_of(&img, "/f2"),
        ino_of(&img, "/f3"),
        ino_of(&img, "/d/big"),
    );
    let mut cmds = vec![
        "unlink /f2".to_string(),
        format!("sif <{f2}> links_count 0"),
        format!("sif <{f3}> size 0"),
        format!("sif <{big}> size 280500"),
    ];
    cmds.extend(chain(&[big, f2, f3]));
    debugfs_w(&img, &cmds);
    compare(&dir, &img, &[f2], &[big, f3]);
}

/// A chain that names an illegal inode: what was released before stays
/// released, the rest is left to the full check, as e2fsck does.
#[test]
fn corrupted_orphan_list_stops_like_e2fsck() {
    let dir = TempDir::new("orphan-bad");
    let img = dir.join("img");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&tree(&dir)),
    );
    let f1 = ino_of(&img, "/f1");
    let f2 = ino_of(&img, "/f2");
    debugfs_w(
        &img,
        &[
            "unlink /f1".to_string(),
            format!("sif <{f1}> links_count 0"),
            format!("ssv last_orphan {f1}"),
            format!("sif <{f1}> dtime {f2}"),
            format!("sif <{f2}> dtime 3"),
        ],
    );
    let a = dir.join("A");
    let b = dir.join("B");
    copy_image(&img, &a);
    copy_image(&img, &b);
    let e2 = e2fsck(&a, &["-fy"]);
    assert!(
        e2.stdout
            .contains("Illegal inode 3 in orphaned inode list."),
        "{}",
        e2.stdout
    );
    let out = pfsck(&["-fy".as_ref(), "--json".as_ref(), b.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Orphan processing stopped"), "{text}");
    // Named as e2fsck's 0x000024, with the inode its message names.
    let rep = parse_report(&text).unwrap();
    let named = rep.raw["problems"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["e2fsck"].as_array().cloned().unwrap_or_default())
        .any(|r| r["code"] == "0x000024" && r["ino"] == 3);
    assert!(named, "{text}");
    // And e2fsck logs that code itself, on a copy of its own.
    let c = dir.join("C");
    copy_image(&img, &c);
    if let Some(codes) = e2fsck_codes(&c, &["-fy"]) {
        assert!(codes.contains(&0x000024), "e2fsck's codes: {codes:x?}");
    }
    // The rest (the list's dtimes, the entry naming the cleared inode)
    // is left to the passes, which fix it as e2fsck's do.
    assert_eq!(
        out.status.code(),
        e2.code(),
        "{text}\ne2fsck:\n{}",
        e2.stdout
    );
    assert_eq!(e2fsck_fn(&b), 0, "{text}");
    assert_eq!(groups(&a), groups(&b), "{text}\ne2fsck:\n{}", e2.stdout);
}

/// `-p` without `-f`: the orphans are processed and the clean file
/// system is then skipped, as e2fsck -p does.
#[test]
fn preen_processes_orphans_then_skips() {
    let dir = TempDir::new("orphan-preen");
    let img = dir.join("img");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&tree(&dir)),
    );
    let f3 = ino_of(&img, "/f3");
    let mut cmds = vec![format!("sif <{f3}> size 3000")];
    cmds.extend(chain(&[f3]));
    debugfs_w(&img, &cmds);
    let a = dir.join("A");
    let b = dir.join("B");
    copy_image(&img, &a);
    copy_image(&img, &b);
    let e2 = e2fsck(&a, &["-p"]);
    let out = pfsck(&["-p".as_ref(), b.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), e2.code(), "{text}\n{}", e2.stdout);
    assert!(text.contains("clean"), "{text}");
    assert_eq!(e2fsck_fn(&b), 0);
    assert_eq!(groups(&a), groups(&b));
    assert_eq!(stat_masked(&a, f3), stat_masked(&b, f3));
}

/// A real crash: a file unlinked while open on a loop-mounted image, the
/// image copied while still mounted after sync. Skipped with a notice
/// where mounting is not allowed.
#[test]
fn open_unlinked_file_on_mounted_image() {
    let dir = TempDir::new("orphan-mount");
    let img = dir.join("img");
    mkfs(
        &img,
        16 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&tree(&dir)),
    );
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-o", "loop"])
        .arg(&img)
        .arg(&mnt)
        .output();
    if !mounted.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("notice: loop mount not allowed here; real-crash orphan test skipped");
        return;
    }
    let copy = dir.join("copy");
    let result = std::panic::catch_unwind(|| {
        let f = std::fs::File::open(mnt.join("f4")).unwrap();
        std::fs::remove_file(mnt.join("f4")).unwrap();
        run_ok(Command::new("sync").arg("-f").arg(&mnt));
        copy_image(&img, &copy);
        drop(f);
    });
    let _ = Command::new("umount").arg(&mnt).status();
    result.unwrap();
    let a = dir.join("A");
    copy_image(&copy, &a);
    let e2 = e2fsck(&a, &["-fy"]);
    let out = pfsck(&["-fy".as_ref(), copy.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{text}");
    assert_eq!(e2fsck_fn(&copy), 0, "{text}");
    assert_eq!(groups(&a), groups(&copy), "{text}\n{}", e2.stdout);
}

/// A list holding one file that keeps its links and has nothing past its
/// size (the kernel lists files it extends too): e2fsck -n finds nothing
/// wrong, so pfsck -n must not fail either; -fy clears the list.
#[test]
fn harmless_orphan_list_is_not_an_error() {
    let dir = TempDir::new("orphan-harmless");
    let img = dir.join("img");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&tree(&dir)),
    );
    let f2 = ino_of(&img, "/f2");
    debugfs_w(&img, &[format!("ssv last_orphan {f2}")]);
    assert_eq!(e2fsck_fn(&img), 0);
    compare(&dir, &img, &[], &[f2]);
}

/// An orphan whose map names a block outside the file system (e2fsck's
/// 0x000021) or one already free (0x000022), at logical block 5 of a file
/// mapped by indirect blocks: e2fsck frees the blocks before it, stops the
/// release there and the full check does the rest; pfsck names the same
/// block and ends with the same bitmaps.
#[test]
fn orphan_with_a_bad_block_stops_the_release() {
    for (name, illegal) in [("illegal", true), ("freed", false)] {
        let dir = TempDir::new(&format!("orphan-block-{name}"));
        let img = dir.join("img");
        mkfs(
            &img,
            8 << 20,
            &MkfsOpts::ext3().block_size(1024),
            Some(&tree(&dir)),
        );
        let f2 = ino_of(&img, "/f2");
        let b5: u64 = debugfs_r(&img, &format!("bmap <{f2}> 5"))
            .trim()
            .parse()
            .expect("bmap");
        let (bad, damage, code) = if illegal {
            (9_999_999, format!("sif <{f2}> block[5] 9999999"), "0x0720")
        } else {
            (b5, format!("freeb {b5}"), "0x0721")
        };
        debugfs_w(
            &img,
            &[
                "unlink /f2".to_string(),
                format!("sif <{f2}> links_count 0"),
                damage,
                format!("ssv last_orphan {f2}"),
            ],
        );
        let n = pfsck(&["-fn".as_ref(), img.as_os_str()]);
        assert_eq!(n.status.code(), e2fsck(&img, &["-fn"]).code(), "{name}");
        let (a, b) = (dir.join("A"), dir.join("B"));
        copy_image(&img, &a);
        copy_image(&img, &b);
        let e2 = e2fsck(&a, &["-fy"]);
        assert!(
            e2.stdout
                .contains(&format!("block #5 ({bad}) found in orphaned inode {f2}.")),
            "{}",
            e2.stdout
        );
        let out = pfsck(&["-fy".as_ref(), "--json".as_ref(), b.as_os_str()]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let rep = parse_report(&text).unwrap();
        assert!(
            rep.problems
                .iter()
                .any(|p| p.code == code && p.ino == Some(f2.into()) && p.block == Some(bad)),
            "{name}: no {code} for block {bad} of inode {f2}\n{text}"
        );
        assert_eq!(out.status.code(), e2.code(), "{text}\n{}", e2.stdout);
        assert_eq!(e2fsck_fn(&b), 0, "{text}");
        assert_eq!(groups(&a), groups(&b), "{text}\ne2fsck:\n{}", e2.stdout);
    }
}

/// A list head that is no inode: e2fsck -n, which never releases the
/// list, finds nothing and exits 0; -y says so, clears the head and
/// checks the rest.
#[test]
fn illegal_list_head_is_not_an_error_under_n() {
    let dir = TempDir::new("orphan-illegal-head");
    let img = dir.join("img");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&tree(&dir)),
    );
    debugfs_w(&img, &["ssv last_orphan 99999".to_string()]);
    assert_eq!(e2fsck_fn(&img), 0);
    compare(&dir, &img, &[], &[]);
}

/// bigalloc (clusters of 4 blocks of 1 KiB), orphan list and orphan file:
/// deleted files free their clusters once each, as e2fsck's release
/// frees them, and the orphan file is emptied. (Truncations are left out:
/// e2fsck 1.47.4 unmaps only the first block of each cluster past the
/// cut, see `check::orphan`.)
#[test]
fn deleted_orphans_on_bigalloc() {
    let dir = TempDir::new("orphan-bigalloc");
    let img = dir.join("img");
    let mut opts = MkfsOpts::ext4()
        .block_size(1024)
        .features("bigalloc,orphan_file");
    opts.extra_args = vec!["-C".into(), "4096".into()];
    mkfs(&img, 16 << 20, &opts, Some(&tree(&dir)));
    let (f1, f2, f5, big) = (
        ino_of(&img, "/f1"),
        ino_of(&img, "/f2"),
        ino_of(&img, "/f5"),
        ino_of(&img, "/d/big"),
    );
    let mut cmds = vec!["feature orphan_present".to_string()];
    for (path, ino) in [("/f1", f1), ("/f2", f2), ("/f5", f5), ("/d/big", big)] {
        cmds.push(format!("unlink {path}"));
        cmds.push(format!("sif <{ino}> links_count 0"));
    }
    cmds.extend(chain(&[f1, big]));
    debugfs_w(&img, &cmds);
    write_orphan_block(&img, &[f5, f2]);
    compare(&dir, &img, &[f1, big, f5, f2], &[]);
}

/// An orphan list on a file system whose group descriptor fails its
/// checksum (seed fz34-final, damages 525, 1216, 2643, 5747, 7661: a
/// bitmap moved by set_bg, descriptor bytes flipped). e2fsck -n never
/// releases orphans and checks the disk as it is (exit 4). pfsck -n
/// checked the view after the release, whose counts came from the
/// untrusted descriptors (every inode of the group never used, the root
/// with them) and stopped without a root (exit 12). A repair still
/// releases the orphans, as e2fsck -y does.
#[test]
fn orphans_under_untrusted_descriptors_checked_as_they_are() {
    let dir = TempDir::new("orphan-bad-gd");
    let img = dir.join("img");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&tree(&dir)),
    );
    let f1 = ino_of(&img, "/f1");
    let mut cmds = vec![
        "unlink /f1".to_string(),
        format!("sif <{f1}> links_count 0"),
    ];
    cmds.extend(chain(&[f1]));
    // A free block as the inode bitmap: the descriptor's checksum fails.
    cmds.push("set_bg 0 inode_bitmap 7000".to_string());
    debugfs_w(&img, &cmds);
    let (out, _) = both_exit(&img, &["-fn"], 4);
    assert!(out.contains("the file system is checked as it is"), "{out}");
    assert!(out.contains("Pass 5"), "{out}");
    let (_, mine) = both_exit(&img, &["-fy"], 1);
    assert_eq!(e2fsck_fn(&mine), 0, "e2fsck -fn after pfsck -fy");
}
