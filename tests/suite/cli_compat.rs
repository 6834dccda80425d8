//! The same command lines through e2fsck 1.47.4 and pfsck: whether the
//! options are accepted, the exit code, and which stream carries the
//! messages (stdout for the report, stderr for refusals and errors).
//! e2fsck's version banner on stderr is left out of the comparison.

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
        stderr: err.lines().any(|l| !l.starts_with("e2fsck 1.47")),
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
    // -fy -c: badblocks' own progress goes to stderr under e2fsck, which
    // always passes it -s; pfsck passes -s only with a progress bar.
    diffs.retain(|d| !d.starts_with("[\"-fy\", \"-c\"]") && !d.starts_with("[\"-fy\", \"-cc\""));
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
    // A non-empty bad-blocks list: refused before anything is written.
    let list = dir.join("list");
    std::fs::write(&list, "5\n").unwrap();
    let before = hash_file(&img);
    let p = pfsck(&["-fy", "-l", list.to_str().unwrap(), img.to_str().unwrap()]);
    assert_eq!(p.status.code(), Some(8));
    assert!(p.stdout.is_empty());
    assert_eq!(hash_file(&img), before);
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
                "Bad magic number in super-block while trying to open {name}"
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
