//! Questions printed where and as e2fsck asks them (in pfsck's words). Problems it asks about as a
//! set (its latches): a block-mapped file's illegal blocks under one
//! question, one line each with what became of it, and the question about
//! too many of them, after which e2fsck names no more of them. The
//! superblock's free counts, asked under `-n` too.

use crate::common::*;
use std::process::Command;

/// The lines of pass 1's section (between its header and pass 2's).
fn pass1(out: &str) -> String {
    let from = out.find("Pass 1: ").expect("pass 1 ran");
    let from = from + out[from..].find('\n').unwrap() + 1;
    let to = out[from..].find("Pass 2: ").map_or(out.len(), |t| from + t);
    out[from..to].to_string()
}

/// An ext2 file system with files `a` (3 blocks) and `big` (20 blocks),
/// damaged by `cmds`.
fn image(dir: &TempDir, name: &str, cmds: &[String]) -> std::path::PathBuf {
    let img = dir.join(name);
    mkfs(&img, 8 << 20, &MkfsOpts::ext2().block_size(1024), None);
    let small = dir.join("small");
    std::fs::write(&small, vec![7u8; 3000]).unwrap();
    let big = dir.join("bigdata");
    std::fs::write(&big, vec![9u8; 20 * 1024]).unwrap();
    let mut all = vec![
        format!("write {} a", small.display()),
        format!("write {} big", big.display()),
    ];
    all.extend(cmds.iter().cloned());
    debugfs_w(&img, &all);
    img
}

fn pfsck(img: &std::path::Path, mode: &str) -> String {
    let out = Command::new(pfsck_bin())
        .arg(mode)
        .arg(img)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Pass 1 of pfsck and e2fsck, `-fn` and `-fy`, in shape
/// (common::report_shape), up to the end of `upto` of that mode where
/// given: e2fsck's line, then pfsck's.
fn same_pass1(cmds: &[String], upto: &[(&str, &str, &str)]) {
    if oracle().is_none() {
        return;
    }
    let dir = TempDir::new("latch-output");
    for mode in ["-fn", "-fy"] {
        let e2 = image(&dir, "e2", cmds);
        let pf = image(&dir, "pf", cmds);
        let want = pass1(&oracle_run(&e2, &[mode]).stdout);
        let got = pass1(&pfsck(&pf, mode));
        let end = upto.iter().find(|(m, _, _)| *m == mode);
        let cut = |s: &str, end: Option<&str>| match end {
            Some(end) => s[..s.find(end).map_or(s.len(), |i| i + end.len())].to_string(),
            None => s.to_string(),
        };
        let (theirs, ours) = (end.map(|e| e.1), end.map(|e| e.2));
        assert_eq!(
            report_shape(&cut(&got, ours)),
            report_shape(&cut(&want, theirs)),
            "pfsck {mode}:\n{got}\n--- e2fsck:\n{want}"
        );
    }
}

#[test]
fn illegal_blocks_under_one_question() {
    same_pass1(
        &[
            "sif a block[1] 99999999".to_string(),
            "sif a block[2] 99999998".to_string(),
        ],
        &[],
    );
}

#[test]
fn too_many_illegal_blocks() {
    let cmds: Vec<String> = (0..12)
        .map(|i| format!("sif big block[{i}] {}", 9_999_000 + i))
        .chain(["sif big block[IND] 9999999".to_string()])
        .collect();
    same_pass1(
        &cmds,
        &[
            // e2fsck -n stops at the indirect block (pfsck says so in its
            // own words); e2fsck -y starts over after clearing the inode,
            // pfsck goes on.
            (
                "-fn",
                "Illegal indirect block (9999999) in inode 13.  IGNORED.\n",
                "Indirect block (9999999) of inode 13 is out of bounds.  IGNORED.\n",
            ),
            ("-fy", "Clear inode? yes\n\n", "Clear inode? yes\n\n"),
        ],
    );
}

/// The superblock's free counts, pfsck's notices, are e2fsck's questions:
/// `-n` answers them no, as e2fsck -n.
#[test]
fn free_counts_are_asked_under_n() {
    if oracle().is_none() {
        return;
    }
    let dir = TempDir::new("latch-free-counts");
    let make = |name: &str| {
        let img = dir.join(name);
        mkfs(&img, 8 << 20, &MkfsOpts::ext2().block_size(1024), None);
        debugfs_w(
            &img,
            &[
                "set_bg 0 free_blocks_count 100",
                "ssv free_blocks_count 100",
            ],
        );
        img
    };
    let (e2, pf) = (make("e2"), make("pf"));
    let pass5 = |s: &str, img: &std::path::Path| {
        let from = s.find("Pass 5: ").expect("pass 5 ran");
        s[from..].replace(&img.display().to_string(), "IMG")
    };
    let want = pass5(&oracle_run(&e2, &["-fn"]).stdout, &e2);
    let got = pass5(&pfsck(&pf, "-fn"), &pf);
    assert!(
        got.contains("Whole file system: 100 free blocks recorded, "),
        "{got}"
    );
    assert_eq!(report_shape(got.trim_end()), report_shape(want.trim_end()));
}
