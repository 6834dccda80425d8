//! The same command lines through e2fsck 1.47.4 and pfsck: whether the
//! options are accepted, the exit code, and which stream carries the
//! messages (stdout for the report, stderr for refusals and errors).
//! e2fsck's version banner and pfsck's undo log line on stderr are left
//! out of the comparison.

use crate::common::*;
use std::process::{Command, Stdio};

struct Seen {
    code: Option<i32>,
    stdout: bool,
    stderr: bool,
}

fn run(bin: &std::path::Path, args: &[&str], img: &std::path::Path) -> Seen {
    let out = Command::new("timeout")
        .args(["-s", "KILL", "60"])
        .arg(bin)
        .args(args)
        .arg(img)
        .stdin(Stdio::null())
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    Seen {
        code: out.status.code(),
        stdout: !out.stdout.is_empty(),
        // pfsck names the undo log of a repair that wrote (its own line).
        stderr: err
            .lines()
            .any(|l| !l.starts_with("e2fsck 1.47") && !l.starts_with("Undo log: ")),
    }
}

#[test]
fn options_exit_codes_and_streams_match_e2fsck() {
    let Some(e2fsck) = oracle() else {
        eprintln!("skipped: no e2fsck 1.47.4 oracle");
        return;
    };
    let dir = TempDir::new("cli-compat");
    let base = dir.join("base");
    mkfs(&base, 8 << 20, &MkfsOpts::ext4(), None);
    let empty = dir.join("empty-list");
    std::fs::write(&empty, "").unwrap();
    let empty = empty.to_str().unwrap().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["-fn"],
        vec!["-fn", "-r"],
        vec!["-fn", "-d"],
        vec!["-fn", "-k"],
        vec!["-fy", "-k"],
        vec!["-fn", "-D"],
        vec!["-fy", "-D"],
        vec!["-fn", "-c"],
        vec!["-fy", "-c"],
        vec!["-fy", "-cc", "-k"],
        vec!["-fn", "-l", &empty],
        vec!["-fy", "-L", &empty],
        vec!["-fy", "-l", "/nonexistent/list"],
        vec!["-fn", "-E", "journal_only"],
        vec!["-fn", "-E", "discard,nodiscard,readahead_kb=64"],
        vec!["-fn", "-E", "fixes_only"],
        vec!["-fn", "-E", "unshare_blocks"],
        vec!["-fn", "-E", "optimize_extents,no_optimize_extents"],
        vec!["-fn", "-E", "inode_count_fullmap"],
        vec!["-fn", "-E", "fixes_only,bmap2extent"],
        vec!["-fy", "-D", "-E", "fixes_only"],
        vec!["-fn", "-P", "1"],
        vec!["-fn", "-I", "1"],
        vec!["-fn", "-s"],
        vec!["-n", "-y"],
        vec!["-fp"],
        vec!["-p"],
    ];
    let mut diffs = Vec::new();
    for args in &cases {
        let mut seen = Vec::new();
        for bin in [e2fsck.as_path(), pfsck_bin()] {
            let img = dir.join("img");
            copy_image(&base, &img);
            seen.push(run(bin, args, &img));
        }
        let (e, p) = (&seen[0], &seen[1]);
        if (e.code, e.stdout, e.stderr) != (p.code, p.stdout, p.stderr) {
            diffs.push(format!(
                "{args:?}: e2fsck exit {:?} stdout {} stderr {}; pfsck exit {:?} stdout {} stderr {}",
                e.code, e.stdout, e.stderr, p.code, p.stdout, p.stderr
            ));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// Option spellings e2fsck exits 1 or 8 on for reasons pfsck treats
/// differently, on purpose (README "Options").
#[test]
fn deliberate_differences() {
    let dir = TempDir::new("cli-compat-diff");
    let img = dir.join("img");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4(), None);
    // An unknown -E option is a usage error (e2fsck exits 1, "errors
    // corrected", which a boot script would misread).
    let p = pfsck(&["-fn", "-E", "bogus", img.to_str().unwrap()]);
    assert_eq!(p.status.code(), Some(16));
    assert!(String::from_utf8_lossy(&p.stderr).contains("unknown extended option"));
    // -F on an image file: e2fsck fails on the block-device ioctl; pfsck
    // syncs the file and goes on.
    let p = pfsck(&["-fn", "-F", img.to_str().unwrap()]);
    assert_eq!(p.status.code(), Some(0));
}

/// A zeroed device: the "while trying to open" line with the device's
/// name on stderr (as e2fsck), the explanation and the `-b` hint on
/// stdout, exit 8, in every mode.
#[test]
fn zeroed_device_fails_as_e2fsck() {
    let dir = TempDir::new("cli-compat-zero");
    let img = dir.join("zero");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let name = img.to_str().unwrap();
    if let Some(e2fsck) = oracle() {
        let e = run(&e2fsck, &["-fn"], &img);
        assert_eq!((e.code, e.stdout, e.stderr), (Some(8), true, true));
    }
    for mode in ["-fn", "-fy", "-fp"] {
        let p = pfsck(&[mode, name]);
        assert_eq!(p.status.code(), Some(8), "{mode}");
        let err = String::from_utf8_lossy(&p.stderr);
        assert!(
            err.contains(&format!(
                "cannot open {name}: no ext2/ext3/ext4 superblock magic"
            )),
            "{mode}: {err}"
        );
        let out = String::from_utf8_lossy(&p.stdout);
        assert!(out.contains("-b 8193") && out.contains("-b 32768"), "{out}");
    }
}

/// A closed stdout (`pfsck -fy IMG | head -1` once head has gone) must
/// not stop a repair: it finishes, and the exit code is the repair's, as
/// e2fsck's is; pfsck used to panic on the first write to the pipe.
#[test]
fn closed_stdout_does_not_stop_the_repair() {
    let dir = TempDir::new("cli-compat-pipe");
    let img = dir.join("fs.img");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4(), None);
    debugfs_w(&img, &["mkdir d", "sif d links_count 7", "freeb 200 30"]);
    let mut child = Command::new(pfsck_bin())
        .args(["-fy"])
        .arg(&img)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Nobody reads: the first write fails with EPIPE.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let after = e2fsck(&img, &["-fn"]);
    assert_eq!(
        after.status.and_then(|s| s.code()),
        Some(0),
        "the repair did not finish: {}",
        after.stdout
    );
}

/// e2fsck -n gives up at a directory block it may not salvage ("e2fsck:
/// aborted"), which adds 8 to its exit code: 12. pfsck stops there too
/// and exited 4.
#[test]
fn a_read_only_check_that_stops_exits_as_e2fsck_aborts() {
    let Some(e2fsck) = oracle() else {
        eprintln!("skipped: no e2fsck 1.47.4 oracle");
        return;
    };
    let dir = TempDir::new("cli-compat-stop");
    let img = dir.join("stop.img");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext4().block_size(1024).features("^metadata_csum"),
        None,
    );
    debugfs_w(&img, &["mkdir d", "write /etc/hostname d/f"]);
    let blk = blocks_of(&img, "/d")[0];
    // The '.' entry's rec_len becomes 0.
    write_at(&img, blk * 1024 + 4, &[0, 0]);
    let e = run(&e2fsck, &["-fn"], &img);
    let p = run(pfsck_bin(), &["-fn"], &img);
    assert_eq!(e.code, Some(12), "the oracle no longer aborts here");
    assert_eq!(p.code, e.code);
}

/// e2fsck -n cannot walk below an indirect pointer outside the file
/// system that it may not zero: its block walk fails and it aborts (12)
/// after that inode. pfsck went on through pass 5 and exited 4.
#[test]
fn a_read_only_check_stops_at_an_illegal_indirect_block() {
    let Some(e2fsck) = oracle() else {
        eprintln!("skipped: no e2fsck 1.47.4 oracle");
        return;
    };
    let dir = TempDir::new("cli-compat-ind");
    let img = dir.join("ind.img");
    mkfs(&img, 8 << 20, &MkfsOpts::ext2().block_size(1024), None);
    debugfs_w(
        &img,
        &[
            "write /etc/services a",
            "write /etc/services b",
            "sif a block[IND] 99999999",
        ],
    );
    // A later problem e2fsck -n never reaches.
    debugfs_w(&img, &["sif b links_count 7"]);
    let e = run(&e2fsck, &["-fn"], &img);
    let p = run(pfsck_bin(), &["-fn"], &img);
    assert_eq!(e.code, Some(12), "the oracle no longer aborts here");
    assert_eq!(p.code, e.code);
    let out = pfsck(&[std::ffi::OsStr::new("-fn"), img.as_os_str()]);
    let text = output_text(&out);
    assert!(
        text.contains("The check stops at inode 12's indirect block"),
        "{text}"
    );
    assert!(!text.contains("Pass 2"), "{text}");
}

/// Runs e2fsck -n and pfsck -n on `img`: both must exit 12, and pfsck's
/// report must say `stop` and nothing of the passes after `last_pass`.
fn both_abort(img: &std::path::Path, stop: &str, last_pass: u8) {
    let Some(e2fsck) = oracle() else {
        eprintln!("skipped: no e2fsck 1.47.4 oracle");
        return;
    };
    let e = run(&e2fsck, &["-fn"], img);
    assert_eq!(e.code, Some(12), "the oracle no longer aborts here");
    let out = pfsck(&[std::ffi::OsStr::new("-fn"), img.as_os_str()]);
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(12), "{text}");
    assert!(text.contains(stop), "{text}");
    let next = format!("Pass {}", last_pass + 1);
    assert!(!text.contains(&next), "{text}");
}

/// e2fsck -n reads an inode again in pass 4 when its link count is off;
/// the checksum it could not fix in pass 1 fails that read, and it aborts
/// (12). pfsck went on through pass 5 and exited 4.
#[test]
fn a_read_only_check_stops_at_a_bad_checksum_in_pass_4() {
    let dir = TempDir::new("cli-compat-csum4");
    let img = dir.join("csum4.img");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(
        &img,
        &[
            "write /etc/services a",
            "write /etc/services b",
            "sif a links_count 3",
            "sif a checksum 0x1234",
            // A later problem e2fsck -n never reaches.
            "sif b links_count 5",
        ],
    );
    both_abort(&img, "The check stops at inode 12", 4);
}

/// An entry naming an inode pass 1 found bad (i_faddr set) makes e2fsck
/// read it again in pass 2: its checksum fails there, and e2fsck -n
/// aborts before asking about it.
#[test]
fn a_read_only_check_stops_at_a_bad_inode_with_a_bad_checksum() {
    let dir = TempDir::new("cli-compat-csum2");
    let img = dir.join("csum2.img");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(
        &img,
        &[
            "write /etc/services a",
            "sif a faddr 5",
            "sif a checksum 0x1234",
        ],
    );
    both_abort(&img, "The check stops at inode 12", 2);
}

/// An xattr block whose reference count is wrong is read again at the end
/// of pass 1 to set it right; its checksum (not fixed under -n) fails
/// that read, and e2fsck -n aborts.
#[test]
fn a_read_only_check_stops_at_an_unreadable_xattr_block() {
    let dir = TempDir::new("cli-compat-xattr");
    let img = dir.join("xattr.img");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4().block_size(1024), None);
    let value = dir.join("value");
    std::fs::write(&value, "v".repeat(600)).unwrap();
    debugfs_w(
        &img,
        &[
            "write /etc/services a".to_string(),
            format!("ea_set -f {} a user.big", value.display()),
        ],
    );
    let acl = debugfs_r(&img, "stat a")
        .split("File ACL: ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .expect("an xattr block");
    // h_refcount 7 where one inode refers to it.
    write_at(&img, acl * 1024 + 4, &7u32.to_le_bytes());
    both_abort(&img, &format!("extended attribute block {acl}"), 1);
}

/// An entry naming an unused inode, kept (-n): e2fsck reads that inode
/// for its file type, and its checksum fails there.
#[test]
fn a_read_only_check_stops_at_an_unused_inode_with_a_bad_checksum() {
    let dir = TempDir::new("cli-compat-csum-unused");
    let img = dir.join("unused.img");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(
        &img,
        &[
            "write /etc/services a",
            "write /etc/services b",
            "sif a links_count 0",
            "sif a dtime 12345",
            "sif a checksum 0x1234",
            // A later problem e2fsck -n never reaches.
            "sif b links_count 4",
        ],
    );
    both_abort(&img, "The check stops at inode 12", 2);
}

/// `s_first_ino` raised past lost+found (11) and a directory (12): both
/// are reserved inodes now, kept under -n with a directory's mode. e2fsck
/// walks their blocks as a directory's but keeps no record of them, and
/// aborts at the '..' of the first one (12); pfsck went on to pass 5 (4).
/// Repaired (-fy), both inodes are cleared and lost+found made again:
/// e2fsck finds the result clean.
#[test]
fn a_read_only_check_stops_at_a_reserved_directory() {
    let dir = TempDir::new("cli-compat-first-ino");
    let img = dir.join("first-ino.img");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4(), None);
    debugfs_w(&img, &["mkdir d", "ssv first_ino 13"]);
    both_abort(&img, "The check stops at reserved inode 11", 2);
    if oracle().is_none() {
        return;
    }
    let out = pfsck(&[std::ffi::OsStr::new("-fy"), img.as_os_str()]);
    assert_eq!(out.status.code(), Some(1), "{}", output_text(&out));
    assert_eq!(oracle_fn(&img), 0, "{}", oracle_run(&img, &["-fn"]).stdout);
}

/// The bad blocks inode's checksum fails: e2fsck judges the inode
/// invalid and, told no, walks its list through a read that checks the
/// checksum, fails and aborts (12). pfsck went through pass 5 (4).
#[test]
fn a_read_only_check_stops_at_the_bad_blocks_inode_checksum() {
    let dir = TempDir::new("cli-compat-badino-csum");
    let img = dir.join("bb.img");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4(), None);
    // A later problem e2fsck -n never reaches.
    debugfs_w(&img, &["write /etc/services a", "sif a links_count 4"]);
    debugfs_w(&img, &["sif <1> checksum 0x1234"]);
    both_abort(&img, "The check stops at inode 1,", 1);
}

/// The resize inode's checksum fails: e2fsck says nothing before pass 1,
/// plans to make the inode again at its end, where the same read fails;
/// told not to go on, it aborts (12). pfsck went through pass 5 (4).
#[test]
fn a_read_only_check_stops_at_the_resize_inode_checksum() {
    let dir = TempDir::new("cli-compat-resize-csum");
    let img = dir.join("resize.img");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4(), None);
    debugfs_w(&img, &["write /etc/services a", "sif a links_count 4"]);
    debugfs_w(&img, &["sif <7> checksum 0x1234"]);
    both_abort(&img, "The check stops at inode 7,", 1);
    let text = output_text(&pfsck(&[std::ffi::OsStr::new("-fn"), img.as_os_str()]));
    assert!(!text.contains("Resize inode not valid"), "{text}");
}

/// Pass 1B rescans the inodes with their checksums checked: e2fsck lists
/// the owners of shared blocks up to the first inode whose checksum fails
/// and aborts there (12), before passes 1C and 1D. pfsck went on (4).
#[test]
fn a_read_only_check_stops_in_pass1b_at_a_bad_checksum() {
    let dir = TempDir::new("cli-compat-1b-csum");
    let img = dir.join("1b.img");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext4().features("^extent,^64bit"),
        None,
    );
    debugfs_w(
        &img,
        &[
            "write /etc/services a",
            "write /etc/services b",
            "write /etc/services c",
        ],
    );
    let shared = blocks_of(&img, "/a")[0];
    debugfs_w(&img, &[format!("sif b block[0] {shared}")]);
    debugfs_w(&img, &["sif c checksum 0x1234"]);
    both_abort(&img, "The check stops at inode 14,", 1);
    let text = output_text(&pfsck(&[std::ffi::OsStr::new("-fn"), img.as_os_str()]));
    assert!(text.contains("Inode 13 shares block(s)"), "{text}");
    assert!(!text.contains("Pass 1C"), "{text}");
}

/// The journal inode's checksum fails: e2fsck's read of it fails, so the
/// journal is invalid; -n may not clear it and it cannot proceed (12).
/// pfsck only reported the checksum in pass 1 (4). Repaired, the journal
/// is made again, as e2fsck -fy does, and e2fsck finds the result clean.
#[test]
fn a_journal_inode_with_a_bad_checksum_is_an_invalid_journal() {
    let dir = TempDir::new("cli-compat-journal-csum");
    let img = dir.join("jcsum.img");
    mkfs(&img, 16 << 20, &MkfsOpts::ext4(), None);
    debugfs_w(&img, &["sif <8> checksum 0x1234"]);
    both_abort(&img, "cannot proceed", 0);
    if oracle().is_none() {
        return;
    }
    let out = pfsck(&[std::ffi::OsStr::new("-fy"), img.as_os_str()]);
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("The journal (inode 8) is unusable"), "{text}");
    assert_eq!(oracle_fn(&img), 0, "{}", oracle_run(&img, &["-fn"]).stdout);
}

/// `-E journal_only` without `-f`: e2fsck replays the journal and skips the
/// file system whatever its state says (here "not clean" with a damaged
/// directory entry), writing nothing and printing nothing; with `-f` it
/// checks in full. pfsck ran the full check and repaired (exit 1).
#[test]
fn journal_only_skips_the_check_without_force() {
    let dir = TempDir::new("cli-compat-jonly");
    let base = dir.join("base.img");
    mkfs(&base, 8 << 20, &MkfsOpts::ext4(), None);
    debugfs_w(&base, &["clri <11>", "ssv state 0"]);
    let e2fsck = oracle();
    for mode in ["-y", "-p", "-n"] {
        let img = dir.join("p.img");
        copy_image(&base, &img);
        let out = pfsck(&[mode, "-E", "journal_only", img.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "pfsck {mode}");
        assert!(out.stdout.is_empty(), "pfsck {mode}: {:?}", out.stdout);
        assert_eq!(hash_file(&img), hash_file(&base), "pfsck {mode} wrote");
        if let Some(e2fsck) = &e2fsck {
            copy_image(&base, &img);
            let e = run(e2fsck, &[mode, "-E", "journal_only"], &img);
            assert_eq!(e.code, Some(0), "the oracle no longer skips ({mode})");
            assert_eq!(hash_file(&img), hash_file(&base), "e2fsck {mode} wrote");
        }
    }
    let img = dir.join("f.img");
    copy_image(&base, &img);
    let out = pfsck(&["-fy", "-E", "journal_only", img.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "-f checks in full");
    assert_eq!(pfsck_code(&["-fn"], &img).0, 0);
}
