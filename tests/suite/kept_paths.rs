//! Where files end up after a repair (issue 19): small ext4 images damaged
//! with `debugfs -w` and byte edits in directory blocks, repaired once by
//! e2fsck 1.47.4 `-fy` and once by `pfsck -fy`. Both results must be clean
//! for the oracle, and every path (with its inode, mode and size) must be
//! the one e2fsck's repair leaves: unattached files reconnected or deleted
//! as pass 4 decides, duplicate names renamed as pass 3A does, the entries
//! of a directory block two directories claim kept where pass 1D and 2
//! keep them. Skipped with a notice without the oracle.

use crate::common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;
const BS: u64 = 1024;

/// An ext4 image (1 KiB blocks, no metadata_csum so byte edits of entries
/// need no checksum) with a few files in /d, then `cmds`.
fn image(tmp: &TempDir, name: &str, cmds: &[String]) -> PathBuf {
    let img = tmp.path().join(format!("{name}.img"));
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4()
            .block_size(BS as u32)
            .features("^metadata_csum"),
        None,
    );
    let mut all: Vec<String> = [
        "mkdir d",
        "write /etc/services d/big",
        "write /etc/hostname d/small",
        "write /dev/null d/empty",
        "symlink d/sl /some/where/over/the/rainbow",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    all.extend(cmds.iter().cloned());
    debugfs_w_unchecked(&img, &all);
    img
}

/// The contents of the file at `path`.
fn debugfs_cat(img: &Path, path: &str) -> Vec<u8> {
    std::process::Command::new(tool("debugfs"))
        .args(["-R", &format!("cat \"{path}\"")])
        .arg(img)
        .output()
        .unwrap()
        .stdout
}

/// Every path below the root: "path ino mode size" (no size for
/// directories, a hash of the contents for regular files), sorted.
fn listing(img: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec!["/".to_string()];
    while let Some(dir) = todo.pop() {
        let text = debugfs_r(img, &format!("ls -p \"{dir}\""));
        for l in text.lines() {
            // "/INO/MODE/UID/GID/NAME/SIZE/"
            let f: Vec<&str> = l.trim().split('/').collect();
            if f.len() < 7 || f[1] == "0" || f[5] == "." || f[5] == ".." {
                continue;
            }
            let path = format!("{}/{}", dir.trim_end_matches('/'), f[5]);
            if f[2].starts_with("040") {
                out.push(format!("{path} {} {}", f[1], f[2]));
                if out.len() < 10_000 {
                    todo.push(path);
                }
            } else if f[2].starts_with("100") {
                let data = debugfs_cat(img, &path);
                out.push(format!(
                    "{path} {} {} {} {:016x}",
                    f[1],
                    f[2],
                    f[6],
                    hash_bytes(&data)
                ));
            } else {
                out.push(format!("{path} {} {} {}", f[1], f[2], f[6]));
            }
        }
    }
    out.sort();
    out
}

/// Repairs copies of `img` with both checkers and compares what they keep.
/// Returns the two repaired copies (e2fsck's, pfsck's) and pfsck's output.
pub(crate) fn same_paths(name: &str, img: &Path) -> (PathBuf, PathBuf, String) {
    let e = img.with_extension("e2fsck");
    let p = img.with_extension("pfsck");
    std::fs::copy(img, &e).unwrap();
    std::fs::copy(img, &p).unwrap();
    let er = oracle_run(&e, &["-fy"]);
    let pr = pfsck(&[OsStr::new("-fy"), p.as_os_str()]);
    let ptext = output_text(&pr);
    assert_eq!(oracle_fn(&e), 0, "{name}: e2fsck's own repair is not clean");
    assert_eq!(
        oracle_fn(&p),
        0,
        "{name}: e2fsck -fn finds pfsck's repair unclean\n{ptext}"
    );
    let (le, lp) = (listing(&e), listing(&p));
    assert!(
        le == lp,
        "{name}: paths differ\ne2fsck:\n{}\npfsck:\n{}\ne2fsck's run:\n{}\npfsck's run:\n{ptext}",
        le.join("\n"),
        lp.join("\n"),
        er.stdout
    );
    (e, p, ptext)
}

fn with_oracle() -> bool {
    if oracle().is_none() {
        eprintln!("kept_paths: no e2fsck 1.47.4 oracle, skipped");
        return false;
    }
    true
}

fn cmds(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Pass 4's decisions: a file no entry names is reconnected (dtime set or
/// not, after an orphan-list truncation), one of zero length deleted, one
/// without links deleted in pass 1.
#[test]
fn unattached_files_are_reconnected_or_deleted_as_e2fsck_decides() {
    if !with_oracle() {
        return;
    }
    let tmp = TempDir::new("kept-unattached");
    // Inode numbers of the base: d 12, big 13, small 14, empty 15, sl 16.
    let cases: &[(&str, &[&str])] = &[
        ("no-entry", &["unlink d/big"]),
        ("no-entry-dtime", &["unlink d/big", "sif <13> dtime 12345"]),
        (
            "no-entry-two-links",
            &["unlink d/big", "sif <13> links_count 2"],
        ),
        ("no-links", &["unlink d/small", "sif <14> links_count 0"]),
        ("no-links-entry-left", &["sif <13> links_count 0"]),
        ("zero-length", &["unlink d/empty"]),
        ("symlink", &["unlink d/sl"]),
        ("orphan-truncate", &["unlink d/big", "ssv last_orphan 13"]),
        (
            "orphan-two",
            &[
                "unlink d/big",
                "ssv last_orphan 13",
                "sif <13> dtime 14",
                "unlink d/small",
                "sif <14> links_count 0",
            ],
        ),
    ];
    for (name, c) in cases {
        let img = image(&tmp, name, &cmds(c));
        same_paths(name, &img);
    }
}

/// Replaces the name `old` of an entry in the directory block at `blk`
/// by `new` (same length).
fn rename_in_block(img: &Path, blk: u64, old: &[u8], new: &[u8]) {
    assert_eq!(old.len(), new.len());
    let b = read_at(img, blk * BS, BS as usize);
    let mut key = vec![old.len() as u8, 1];
    key.extend_from_slice(old);
    let at = b
        .windows(key.len())
        .position(|w| w == key.as_slice())
        .unwrap_or_else(|| panic!("no entry {}", String::from_utf8_lossy(old)));
    write_at(img, blk * BS + at as u64 + 2, new);
}

/// Entries of one directory sharing a name: the one naming the highest
/// inode keeps it, the others are renamed in e2fsck's way (`~0` in the
/// padding, the last two bytes of a 254- or 255-byte name, `x~9` counted
/// up to `y~0`), an entry naming the same inode twice renamed too.
#[test]
fn duplicate_names_are_renamed_as_e2fsck_renames_them() {
    if !with_oracle() {
        return;
    }
    let tmp = TempDir::new("kept-dupnames");
    for len in [9usize, 251, 252, 253, 254] {
        let stem = "a".repeat(len);
        let name = format!("dup{len}");
        let img = image(
            &tmp,
            &name,
            &cmds(&[
                "mkdir e",
                &format!("write /etc/hostname e/{stem}1"),
                &format!("write /etc/passwd e/{stem}2"),
            ]),
        );
        let blk = blocks_of(&img, "/e")[0];
        rename_in_block(
            &img,
            blk,
            format!("{stem}2").as_bytes(),
            format!("{stem}1").as_bytes(),
        );
        same_paths(&name, &img);
    }
    // Names up to x~9 taken: the next is y~0.
    let mut c = cmds(&["mkdir e", "write /etc/hostname e/x"]);
    c.extend((0..10).map(|i| format!("write /etc/hostname e/x~{i}")));
    c.push("write /etc/passwd e/w".into());
    let img = image(&tmp, "count-up", &c);
    rename_in_block(&img, blocks_of(&img, "/e")[0], b"w", b"x");
    same_paths("count-up", &img);
    // Two entries of one inode and one of a higher inode, one name.
    let img = image(
        &tmp,
        "same-inode",
        &cmds(&[
            "mkdir e",
            "write /etc/hostname e/a",
            "ln e/a e/q",
            "sif e/a links_count 2",
            "write /etc/passwd e/r",
        ]),
    );
    let blk = blocks_of(&img, "/e")[0];
    rename_in_block(&img, blk, b"q", b"a");
    rename_in_block(&img, blk, b"r", b"a");
    same_paths("same-inode", &img);
}

/// Two directories mapping the same directory block: pass 1D clones it
/// for the first, both keep its files (two links each), a subdirectory
/// stays where pass 2 first finds it, the other directory's own entries
/// go to lost+found.
#[test]
fn a_directory_block_two_directories_claim() {
    if !with_oracle() {
        return;
    }
    let tmp = TempDir::new("kept-shared-dirblock");
    for free_low in [false, true] {
        let name = if free_low { "shared-low" } else { "shared" };
        let mut c = Vec::new();
        if free_low {
            // A free block below the shared one: the clone lands there and
            // pass 2 meets the first directory's copy first.
            c.push("write /etc/services low".to_string());
        }
        c.extend(cmds(&[
            "mkdir a",
            "mkdir b",
            "mkdir a/sub",
            "mkdir b/bsub",
            "write /etc/hostname a/f1",
            "write /etc/passwd a/f2",
            "write /etc/group b/g1",
            "write /etc/hosts b/g2",
        ]));
        if free_low {
            c.push("rm low".into());
        }
        let img = image(&tmp, name, &c);
        let a = blocks_of(&img, "/a")[0];
        // Word 5 of an extent inode's i_block: the first extent's start.
        debugfs_w(&img, &[format!("sif /b block[5] {a}")]);
        same_paths(name, &img);
    }
}

/// A file mapping an inode table block (torn: the block was reused) and
/// an illegal block, and an unattached zero-length inode in that inode
/// table block. e2fsck gives the file its copy of the block in pass 1D,
/// after pass 1 and before pass 4 clears the inode: the copy keeps the
/// inode as it was. pfsck cleared it in the round before the copy.
#[test]
fn a_shared_block_is_copied_before_later_passes_change_it() {
    if !with_oracle() {
        return;
    }
    let tmp = TempDir::new("kept-copy-order");
    let img = tmp.path().join("copy-order.img");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext2().block_size(BS as u32).inode_size(256),
        None,
    );
    let mut c = cmds(&["write /etc/services f"]);
    // Fillers, so that z's inode lies in another inode table block than f's.
    c.extend((1..=5).map(|i| format!("write /etc/hostname g{i}")));
    c.extend(cmds(&["write /dev/null z", "unlink z"]));
    debugfs_w_unchecked(&img, &c);
    let z = debugfs_r(&img, "imap <18>");
    // "located at block 40, offset 0x0100"
    let table_block: u64 = z
        .split("located at block")
        .nth(1)
        .and_then(|w| w.split(',').next())
        .and_then(|w| w.trim().parse().ok())
        .unwrap_or_else(|| panic!("no block in `imap <18>`: {z}"));
    debugfs_w(
        &img,
        &[
            format!("sif f block[2] {table_block}"),
            "sif f block[4] 99999999".to_string(),
        ],
    );
    same_paths("copy-order", &img);
}

/// A file whose garbage block map names a directory's block as its
/// indirect block (a torn ext2 copy): the entries' name and length words
/// are illegal block numbers. e2fsck zeroes the first eleven before it
/// gives up and clears the file, and writes that block: the directory
/// loses the block's entries to a salvage and pass 4 reconnects their
/// files to /lost+found. pfsck cleared the file without the writes and
/// kept the entries where they were.
#[test]
fn a_garbage_indirect_block_on_a_directory_block() {
    if !with_oracle() {
        return;
    }
    let tmp = TempDir::new("kept-garbage-ind");
    let img = tmp.path().join("garbage-ind.img");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext2().block_size(BS as u32).inode_size(256),
        None,
    );
    let mut c = cmds(&["mkdir d"]);
    c.extend((0..40).map(|i| format!("write /etc/hostname d/entry-with-a-long-name-{i:04}")));
    c.push("write /etc/services victim".into());
    debugfs_w_unchecked(&img, &c);
    let second = blocks_of(&img, "/d")[1];
    debugfs_w(&img, &[format!("sif victim block[IND] {second}")]);
    same_paths("garbage-ind", &img);
}

/// Link count of each inode `listing` names, in its order.
fn link_counts(img: &Path, listing: &[String]) -> Vec<String> {
    listing
        .iter()
        .filter_map(|l| l.split(' ').nth(1))
        .map(|ino| {
            let text = debugfs_r(img, &format!("stat <{ino}>"));
            let links = text
                .split("Links: ")
                .nth(1)
                .and_then(|w| w.split_whitespace().next())
                .unwrap_or("?");
            format!("<{ino}> {links}")
        })
        .collect()
}

/// An entry of directory /d whose name_len runs past its (sound) rec_len,
/// in the middle of a block: e2fsck salvages the block (the entry before
/// takes the broken one's record) and goes on counting the entries after
/// it, so only the broken entry's file goes to /lost+found. pfsck's walk
/// stopped at the broken entry: when the same round also reconnected
/// files (a pass 1 fix made it a main round), the files named after it
/// got a second name in /lost+found, which e2fsck -fn finds consistent.
/// On ext2, on ext4 with metadata_csum (the checksum broken too), and in
/// a leaf of an indexed directory.
#[test]
fn entries_after_a_salvaged_record_keep_their_only_name() {
    if !with_oracle() {
        return;
    }
    let tmp = TempDir::new("kept-salvage-walk");
    let cases: &[(&str, MkfsOpts, bool)] = &[
        ("ext2", MkfsOpts::ext2(), false),
        ("csum", MkfsOpts::ext4().features("metadata_csum"), false),
        ("htree", MkfsOpts::ext4().features("metadata_csum"), true),
        (
            "htree-nocsum",
            MkfsOpts::ext4().features("^metadata_csum"),
            true,
        ),
    ];
    for (name, opts, htree) in cases {
        for pass1 in [false, true] {
            let name = format!("{name}{}", if pass1 { "-p1" } else { "" });
            let img = tmp.path().join(format!("{name}.img"));
            mkfs(&img, 8 * MIB, &opts.clone().block_size(BS as u32), None);
            let files = if *htree { 120 } else { 40 };
            let mut c = cmds(&["mkdir d", "write /etc/hostname f"]);
            c.extend(
                (0..files)
                    .map(|i| format!("write /etc/hostname d/entry-with-a-rather-long-name-{i:04}")),
            );
            debugfs_w(&img, &c);
            if *htree {
                // debugfs does not index; e2fsck -D does.
                e2fsck(&img, &["-fyD"]);
                assert!(
                    debugfs_r(&img, "stat /d").contains("Flags: 0x81000"),
                    "{name}: /d not indexed"
                );
            }
            // The fourth entry of the directory's second block.
            let blk = debugfs_number(&img, "bmap /d 1");
            let b = read_at(&img, blk * BS, BS as usize);
            let mut off = 0usize;
            for _ in 0..3 {
                off += u16::from_le_bytes([b[off + 4], b[off + 5]]) as usize;
            }
            assert!(b[off + 6] > 0 && off + 48 < BS as usize, "{name}: no entry");
            write_at(&img, blk * BS + off as u64 + 6, &[0xbd]);
            if pass1 {
                debugfs_w(&img, &["sif f size 140737488355370"]);
            }
            same_paths(&name, &img);
            let e = img.with_extension("e2fsck");
            let p = img.with_extension("pfsck");
            let l = listing(&e);
            assert_eq!(
                link_counts(&e, &l),
                link_counts(&p, &l),
                "{name}: link counts differ"
            );
        }
    }
}
