//! e2fsck's passes 1B to 1D as pfsck prints them (issue 16): the list of
//! each owner's multiply-claimed blocks, the count, each file's paragraph
//! with its path, mod time and sharers (the file system metadata among
//! them), and the answer, line for line as e2fsck 1.47.4 prints them
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

/// The lines from pass 1B's announcement to pass 2's header.
fn dup_section(out: &str) -> String {
    let start = out
        .find("Running additional passes")
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
            dup_section(&ours),
            want,
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
        tail(&ours),
        tail(&e2),
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
    let paras = e2
        .split("\n\n")
        .filter_map(|p| p.find("Free ").map(|k| &p[k..]));
    for para in paras {
        assert!(para.ends_with(".\nFix? no"), "{para}");
        assert!(
            ours.contains(para),
            "pfsck -fn lacks e2fsck's\n{para}\n---\n{ours}"
        );
    }
}
