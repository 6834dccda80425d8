//! e2fsck's passes 1B to 1D as pfsck prints them (issue 16): the list of
//! each owner's multiply-claimed blocks, the count, each file's paragraph
//! with its path, mod time and sharers (the file system metadata among
//! them), and the answer, line for line in the shape of e2fsck 1.47.4's (common::report_shape)
//! under -fn and -fy.

use crate::common::*;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

/// ext2 with 1 KiB blocks: /a/f1 and /f2 share a block, /f3 shares one
/// with the group descriptors, /f4 (after it) shares a run with /a/f1.
fn shared_image() -> PathBuf {
    cached_image("dup-output", |img| {
        mkfs(img, 8 * MIB, &MkfsOpts::ext2().block_size(1024), None);
        debugfs_w(
            img,
            &[
                "mkdir a",
                "write /etc/services a/f1",
                "write /etc/services f2",
                "write /etc/services f3",
                "write /etc/services f4",
                "set_current_time 20200102030405",
            ],
        );
        let b = blocks_of(img, "/a/f1");
        debugfs_w(
            img,
            &[
                format!("sif f2 block[0] {}", b[3]),
                "sif f3 block[1] 2".to_string(),
                format!("sif f4 block[2] {}", b[5]),
                format!("sif f4 block[3] {}", b[6]),
                "sif f2 mtime 20200102030405".to_string(),
            ],
        );
    })
}

/// The lines from pass 1B's announcement (e2fsck's or pfsck's) to pass
/// 2's header.
fn dup_section(out: &str) -> String {
    let start = out
        .find("Running additional passes")
        .or_else(|| out.find("Some blocks belong to more than one inode"))
        .unwrap_or_else(|| panic!("no pass 1B in:\n{out}"));
    let end = out[start..]
        .find("Pass 2:")
        .map_or(out.len(), |e| start + e);
    out[start..end].to_string()
}

fn run_pfsck(img: &Path, mode: &str) -> String {
    let out = pfsck(&[std::ffi::OsStr::new(mode), img.as_os_str()]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn passes_1b_to_1d_print_as_e2fscks() {
    for mode in ["-fn", "-fy"] {
        let dir = TempDir::new("dup-output");
        let img = dir.join("img");
        copy_image(&shared_image(), &img);
        let e2 = oracle_run(&img, &[mode]).stdout;
        copy_image(&shared_image(), &img);
        let ours = run_pfsck(&img, mode);
        let want = dup_section(&e2);
        assert!(want.contains("<filesystem metadata>"), "{want}");
        assert!(want.contains("/a/f1"), "{want}");
        assert_eq!(
            report_shape(&dup_section(&ours)),
            report_shape(&want),
            "pfsck {mode} prints passes 1B-1D unlike e2fsck:\n{ours}\n--- e2fsck ---\n{e2}"
        );
    }
}

#[test]
fn mod_times_print_as_ctime() {
    assert_eq!(
        pfsck::check::problem::ctime(748_581_554),
        "Tue Sep 21 03:19:14 1993"
    );
    assert_eq!(pfsck::check::problem::ctime(0), "Thu Jan  1 00:00:00 1970");
    assert_eq!(
        pfsck::check::problem::ctime(951_782_400),
        "Tue Feb 29 00:00:00 2000"
    );
}

/// Where e2fsck ends a message's line before its question (pass 5's
/// bitmap differences and free counts), pfsck does too.
#[test]
fn questions_on_their_own_line_as_e2fscks() {
    let dir = TempDir::new("dup-output-lines");
    let img = dir.join("img");
    copy_image(&shared_image(), &img);
    let e2 = oracle_run(&img, &["-fn"]).stdout;
    let ours = run_pfsck(&img, "-fn");
    let tail = |s: &str| s[s.find("Pass 5:").unwrap_or(0)..].to_string();
    assert!(tail(&e2).contains("differences:"), "{e2}");
    assert_eq!(
        report_shape(&tail(&ours)),
        report_shape(&tail(&e2)),
        "pfsck:\n{ours}\n--- e2fsck ---\n{e2}"
    );

    let counts = cached_image("dup-output-counts", |img| {
        mkfs(img, 8 * MIB, &MkfsOpts::ext2().block_size(1024), None);
        debugfs_w(
            img,
            &[
                "write /etc/services f1",
                "set_bg 0 free_blocks_count 123",
                "set_bg 0 free_inodes_count 77",
            ],
        );
    });
    copy_image(&counts, &img);
    let e2 = oracle_run(&img, &["-fn"]).stdout;
    let ours = run_pfsck(&img, "-fn");
    // Each count paragraph, the message's line then the question's:
    // e2fsck's figures, in pfsck's words.
    let counts = |out: &str| -> Vec<Vec<String>> {
        out.split("\n\n")
            .filter(|p| p.contains("free ") || p.contains("Free "))
            .map(|p| {
                assert!(p.ends_with(".\nFix? no"), "{p}");
                // The message's line and the question's (the first
                // paragraph also holds the pass headers).
                let lines: Vec<&str> = p.lines().collect();
                report_shape(&lines[lines.len().saturating_sub(2)..].join("\n"))
            })
            .collect()
    };
    assert_eq!(counts(&ours), counts(&e2), "pfsck:\n{ours}\n---\n{e2}");
}
