//! The end-of-check record a repairing run leaves in the superblock (state,
//! mount count, last-check time, error record, a journal's error number)
//! and the "check forced" reasons of a run without `-f`, compared with
//! e2fsck 1.47.4: output shape, exit code and the superblock it leaves. Without
//! the record, a file system whose mount count ran out was checked in full
//! at every boot.

use crate::common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// One clock for both tools, an hour ahead of the real one so that the
/// images' own times are in the past.
fn clock() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    (now + 3600).to_string()
}

/// Bytes of the superblock that e2fsck maintains and pfsck does not: the
/// last write time, the lifetime kilobytes written, and the checksum over
/// them.
const NOT_COMPARED: &[std::ops::Range<usize>] = &[0x30..0x34, 0x178..0x180, 0x3FC..0x400];

fn superblock(img: &Path) -> Vec<u8> {
    let mut sb = read_at(img, 1024, 1024);
    for r in NOT_COMPARED {
        sb[r.clone()].fill(0);
    }
    sb
}

struct Run {
    code: Option<i32>,
    /// stdout and stderr, e2fsck's version banner left out.
    output: String,
}

/// Runs `bin` with `args` on `dir/fs.img` from inside `dir`, so that both
/// tools print the same device name.
fn run(bin: &Path, dir: &Path, args: &[&str], now: &str) -> Run {
    let mut cmd = Command::new(bin);
    cmd.current_dir(dir)
        .args(args)
        .arg("fs.img")
        .env("E2FSCK_TIME", now)
        .env("PFSCK_TIME", now);
    let r = run_timeout_merged(cmd, Duration::from_secs(60));
    assert!(!r.timed_out, "{} {args:?} timed out", bin.display());
    let output = r
        .stdout
        .lines()
        .filter(|l| !l.starts_with("e2fsck 1.47"))
        .collect::<Vec<_>>()
        .join("\n");
    Run {
        code: r.code(),
        output,
    }
}

/// Runs e2fsck 1.47.4 and pfsck with `args` on copies of `img`; asserts the
/// same output shape (common::report_shape), exit code and superblock
/// (and `extra` block, when given);
/// returns pfsck's run and the copy it left. None without the oracle.
fn same_as_e2fsck(
    tmp: &TempDir,
    img: &Path,
    args: &[&str],
    extra: Option<u64>,
) -> Option<(Run, std::path::PathBuf)> {
    let oracle = oracle()?;
    let now = clock();
    let tag = args.join("");
    let (e2, pf) = (tmp.join(format!("e2{tag}")), tmp.join(format!("pf{tag}")));
    for d in [&e2, &pf] {
        std::fs::create_dir_all(d).unwrap();
        copy_image(img, &d.join("fs.img"));
    }
    let theirs = run(&oracle, &e2, args, &now);
    let ours = run(pfsck_bin(), &pf, args, &now);
    assert_eq!(
        (ours.code, report_shape(&ours.output)),
        (theirs.code, report_shape(&theirs.output)),
        "pfsck {args:?} against e2fsck 1.47.4:\n{}\n---\n{}",
        ours.output,
        theirs.output
    );
    let (e2img, pfimg) = (e2.join("fs.img"), pf.join("fs.img"));
    assert_eq!(
        superblock(&pfimg),
        superblock(&e2img),
        "superblock after {args:?}: pfsck (left), e2fsck (right)"
    );
    if let Some(b) = extra {
        assert_eq!(
            read_at(&pfimg, b * 1024, 1024),
            read_at(&e2img, b * 1024, 1024),
            "block {b} after {args:?}"
        );
    }
    Some((ours, pfimg))
}

fn image(tmp: &TempDir, name: &str, opts: &MkfsOpts, cmds: &[&str]) -> std::path::PathBuf {
    let img = tmp.join(name);
    mkfs(&img, 8 << 20, opts, None);
    if !cmds.is_empty() {
        debugfs_w(&img, cmds);
    }
    img
}

fn notice_no_oracle() {
    eprintln!("NOTICE: e2fsck 1.47.4 not found (../shared/tools); comparison skipped");
}

#[test]
fn expired_mount_count_is_recorded_so_the_next_boot_skips() {
    let tmp = TempDir::new("record-mnt");
    let img = image(
        &tmp,
        "mnt.img",
        &MkfsOpts::ext4(),
        &["ssv max_mnt_count 20", "ssv mnt_count 25"],
    );
    let Some((ours, after)) = same_as_e2fsck(&tmp, &img, &["-p"], None) else {
        return notice_no_oracle();
    };
    assert!(
        ours.output
            .contains("checked because it was mounted 25 times since its last check."),
        "{}",
        ours.output
    );
    // The next boot finds it clean and checks nothing.
    let dir = after.parent().unwrap();
    let again = run(pfsck_bin(), dir, &["-p"], &clock());
    assert_eq!(again.code, Some(0));
    assert!(again.output.contains("fs.img: clean, "), "{}", again.output);
}

#[test]
fn not_cleanly_unmounted_becomes_valid_with_exit_1() {
    let tmp = TempDir::new("record-state");
    let img = image(&tmp, "state.img", &MkfsOpts::ext2(), &["ssv state 0"]);
    for args in [&["-p"][..], &["-y"], &["-fy"], &["-n"]] {
        let Some((ours, after)) = same_as_e2fsck(&tmp, &img, args, None) else {
            return notice_no_oracle();
        };
        if args == ["-n"] {
            assert_eq!(hash_file(&after), hash_file(&img), "-n wrote");
        } else {
            assert_eq!(ours.code, Some(1), "{args:?}: {}", ours.output);
        }
    }
}

#[test]
fn error_state_record_and_journal_errno_are_cleared() {
    let tmp = TempDir::new("record-errors");
    // No metadata_csum: the fixture edits the journal superblock by hand.
    let opts = MkfsOpts::ext4().block_size(1024).features("^metadata_csum");
    let img = image(
        &tmp,
        "err.img",
        &opts,
        &[
            "ssv state 3",
            "ssv error_count 3",
            "ssv first_error_time 1700000000",
            "ssv first_error_func ext4_lookup",
            "ssv last_error_ino 12",
        ],
    );
    let jsb = debugfs_number(&img, "bmap <8> 0");
    // s_errno, as the kernel leaves it after aborting the journal (-EIO).
    write_at(&img, jsb * 1024 + 0x20, &(-5i32).to_be_bytes());
    // (e2fsck 1.47.4 -n tries to write the journal here and waits for an
    // answer: only the writing modes are compared.)
    for args in [&["-p"][..], &["-y"], &["-fy"]] {
        let Some((ours, after)) = same_as_e2fsck(&tmp, &img, args, Some(jsb)) else {
            return notice_no_oracle();
        };
        // -f checks without giving a reason.
        let forced = ours
            .output
            .contains("checked because it has errors recorded.");
        assert_eq!(forced, args != ["-fy"], "{}", ours.output);
        let sb = read_at(&after, 1024, 1024);
        assert!(sb[0x194..0x200].iter().all(|&b| b == 0), "error record");
        assert_eq!(read_at(&after, jsb * 1024 + 0x20, 4), [0; 4], "s_errno");
        assert_eq!(oracle_fn(&after), 0);
    }
    // -n reports the reason and writes nothing.
    let copy = tmp.join("n.img");
    copy_image(&img, &copy);
    let out = pfsck(&[std::ffi::OsStr::new("-n"), copy.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("checked because it has errors recorded."),
        "{text}"
    );
    assert_eq!(hash_file(&copy), hash_file(&img), "-n wrote");
}

#[test]
fn check_interval_overdue_or_in_the_future() {
    let tmp = TempDir::new("record-interval");
    let overdue = image(
        &tmp,
        "overdue.img",
        &MkfsOpts::ext4(),
        &["ssv checkinterval 86400", "ssv lastcheck 20200101"],
    );
    let future = image(
        &tmp,
        "future.img",
        &MkfsOpts::ext4(),
        &["ssv checkinterval 86400", "ssv lastcheck 20991231"],
    );
    for (img, why) in [
        (&overdue, "days.\n"),
        (&future, "says it was last checked in the future."),
    ] {
        for args in [&["-p"][..], &["-y"], &["-n"]] {
            let Some((ours, _)) = same_as_e2fsck(&tmp, img, args, None) else {
                return notice_no_oracle();
            };
            assert!(ours.output.contains(why), "{args:?}: {}", ours.output);
        }
    }
}

#[test]
fn clean_line_says_when_the_next_check_is_due() {
    let tmp = TempDir::new("record-soon");
    let img = image(
        &tmp,
        "soon.img",
        &MkfsOpts::ext4(),
        &["ssv max_mnt_count 20", "ssv mnt_count 17"],
    );
    let Some((ours, after)) = same_as_e2fsck(&tmp, &img, &["-p"], None) else {
        return notice_no_oracle();
    };
    assert!(
        ours.output.ends_with("(check in 3 mounts)"),
        "{}",
        ours.output
    );
    // Skipped as clean: nothing written.
    assert_eq!(hash_file(&after), hash_file(&img));
}
