//! The superblock's last mount and write times ahead of the clock (issue
//! 13, e2fsck's 0x000031, 0x000032 and, within the day's fudge, 0x00003c,
//! 0x00003d), and the e2fsck.conf options that govern them
//! (`broken_system_clock`, `accept_time_fudge`), which pfsck reads from
//! the file `E2FSCK_CONFIG` names as e2fsck does. Both tools run at one
//! fixed time (`E2FSCK_TIME`, `PFSCK_TIME`) on images whose times debugfs
//! set ahead of it; e2fsck 1.47.4 judges.

use crate::common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The clock of every run here (2027-01-15).
const NOW: u64 = 1_800_000_000;
const HOUR: u64 = 3600;
const DAY: u64 = 24 * HOUR;

/// A fresh file system whose last mount time is `mtime` and last write
/// time `wtime` (debugfs stamps its own write with the fake time it is
/// given, so the write time is set that way).
fn image(tmp: &TempDir, mtime: u64, wtime: u64) -> std::path::PathBuf {
    let img = tmp.join("img");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4(), None);
    debugfs_at(&img, wtime, &format!("ssv mtime @{mtime}"));
    img
}

/// `debugfs -w -R cmd` with the clock at `wtime`, which its own write
/// stamps as the last write time.
fn debugfs_at(img: &Path, wtime: u64, cmd: &str) {
    let out = Command::new(tool("debugfs"))
        .env("E2FSPROGS_FAKE_TIME", wtime.to_string())
        .args(["-w", "-R", cmd])
        .arg(img)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// One run of `bin` with `args` on `img` at [`NOW`], under the
/// configuration `conf` (plus e2fsck's problem log into `log`).
fn run(bin: &Path, args: &[&str], img: &Path, conf: &str, log: &Path) -> RunResult {
    let file = img.with_extension("conf");
    let text = format!(
        "[options]\n\tproblem_log_filename = {}\n{conf}",
        log.display()
    );
    std::fs::write(&file, text).unwrap();
    let mut cmd = Command::new(bin);
    cmd.env("E2FSCK_CONFIG", &file)
        .env("E2FSCK_TIME", NOW.to_string())
        .env("PFSCK_TIME", NOW.to_string())
        .args(args)
        .arg(img);
    let r = run_timeout_merged(cmd, Duration::from_secs(60));
    assert!(!r.timed_out, "{} {args:?} timed out", bin.display());
    r
}

/// The e2fsck codes of e2fsck's problem log.
fn logged(log: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut codes = log_codes(&text);
    codes.sort_unstable();
    codes
}

/// The e2fsck codes in pfsck's `--json` report.
fn reported(stdout: &str) -> Vec<u32> {
    let json: serde_json::Value = serde_json::from_str(stdout).expect("pfsck --json");
    let mut codes = report_e2fsck_codes(&json);
    codes.sort_unstable();
    codes
}

/// `-fn` on both: the same exit code (0) and the same codes, `want`.
#[track_caller]
fn same_verdict(img: &Path, conf: &str, want: &[u32]) {
    let Some(oracle) = oracle() else {
        println!("e2fsck 1.47.4 not found, skipped");
        return;
    };
    let log = img.with_extension("log");
    let _ = std::fs::remove_file(&log);
    let e2 = run(&oracle, &["-fn"], img, conf, &log);
    assert_eq!(e2.code(), Some(0), "e2fsck -fn:\n{}", e2.stdout);
    assert_eq!(logged(&log), want, "e2fsck -fn:\n{}", e2.stdout);
    let pf = run(pfsck_bin(), &["-fn", "--json"], img, conf, &log);
    assert_eq!(pf.code(), Some(0), "pfsck -fn:\n{}", pf.stdout);
    assert_eq!(reported(&pf.stdout), want, "pfsck -fn:\n{}", pf.stdout);
}

/// The superblock's last mount and write times.
fn times(img: &Path) -> (u64, u64) {
    let sb = read_at(img, 1024, 1024);
    let t = |lo: usize, hi: usize| {
        u64::from(u32::from_le_bytes(sb[lo..lo + 4].try_into().unwrap())) | u64::from(sb[hi]) << 32
    };
    (t(0x2C, 0x275), t(0x30, 0x274))
}

/// `pfsck -fy` exits `want` and leaves both times at [`NOW`]; e2fsck
/// then finds nothing, at the same clock, with the fudge off.
#[track_caller]
fn repaired(img: &Path, want: i32) -> String {
    let log = img.with_extension("log");
    let pf = run(pfsck_bin(), &["-fy"], img, "", &log);
    assert_eq!(pf.code(), Some(want), "pfsck -fy:\n{}", pf.stdout);
    assert_eq!(times(img), (NOW, NOW), "pfsck -fy:\n{}", pf.stdout);
    if oracle().is_some() {
        same_verdict(img, "\taccept_time_fudge = false\n", &[]);
    }
    pf.stdout
}

#[test]
fn times_days_ahead_are_asked_about_and_set() {
    let tmp = TempDir::new("sb-times-far");
    let img = image(&tmp, NOW + 2 * DAY, NOW + 3 * DAY);
    assert_eq!(times(&img), (NOW + 2 * DAY, NOW + 3 * DAY));
    same_verdict(&img, "", &[0x000031, 0x000032]);
    let log = img.with_extension("log");
    let pf = run(pfsck_bin(), &["-fn"], &img, "", &log);
    assert!(pf.stdout.contains("last mount time"), "{}", pf.stdout);
    assert!(pf.stdout.contains("Fix? no"), "{}", pf.stdout);
    // The times as dates (UTC), as e2fsck shows them, not as seconds.
    assert!(
        pf.stdout.contains(
            "last mount time (Sun Jan 17 08:00:00 2027) lies ahead of the clock (Fri Jan 15 08:00:00 2027)"
        ),
        "{}",
        pf.stdout
    );
    // e2fsck sets them without calling it a correction: exit 0.
    let out = repaired(&img, 0);
    assert!(out.contains("Fix? yes"), "{out}");
    assert!(!out.contains("repairs written"), "{out}");
}

#[test]
fn times_hours_ahead_are_the_clock_and_set_unasked() {
    let tmp = TempDir::new("sb-times-near");
    let img = image(&tmp, NOW + HOUR, NOW + 2 * HOUR);
    same_verdict(&img, "", &[0x00003C, 0x00003D]);
    let log = img.with_extension("log");
    let pf = run(pfsck_bin(), &["-fn"], &img, "", &log);
    assert!(!pf.stdout.contains("Fix?"), "{}", pf.stdout);
    let out = repaired(&img, 0);
    assert!(!out.contains("Fix?"), "{out}");
}

#[test]
fn conf_options_govern_the_times() {
    let tmp = TempDir::new("sb-times-conf");
    let img = image(&tmp, NOW + HOUR, NOW + 3 * DAY);
    same_verdict(&img, "", &[0x000032, 0x00003C]);
    // Without the fudge, an hour ahead is damage like days ahead.
    same_verdict(&img, "\taccept_time_fudge = false\n", &[0x000031, 0x000032]);
    // Its old name, which wins where both are given.
    same_verdict(
        &img,
        "\taccept_time_fudge = true\n\tbuggy_init_scripts = no\n",
        &[0x000031, 0x000032],
    );
    // A clock known to be wrong judges no time.
    same_verdict(&img, "\tbroken_system_clock = 1\n", &[]);
}

/// The times matter without `-f` only with a check interval: then a
/// read-only check still finds the file system clean (exit 0), and a
/// repair sets them.
#[test]
fn without_force_only_a_check_interval_counts() {
    let tmp = TempDir::new("sb-times-noforce");
    let img = image(&tmp, NOW + 2 * DAY, NOW + 2 * DAY);
    let log = img.with_extension("log");
    let pf = run(pfsck_bin(), &["-p"], &img, "", &log);
    assert_eq!(pf.code(), Some(0), "{}", pf.stdout);
    assert!(pf.stdout.contains("clean"), "{}", pf.stdout);
    assert_eq!(times(&img), (NOW + 2 * DAY, NOW + 2 * DAY));
    debugfs_at(&img, NOW + 2 * DAY, "ssv checkinterval 86400000");
    let img_times = times(&img);
    assert_eq!(img_times, (NOW + 2 * DAY, NOW + 2 * DAY));
    let pf = run(pfsck_bin(), &["-n"], &img, "", &log);
    assert_eq!(pf.code(), Some(0), "{}", pf.stdout);
    assert_eq!(times(&img), img_times);
    let pf = run(pfsck_bin(), &["-p"], &img, "", &log);
    assert_eq!(pf.code(), Some(0), "{}", pf.stdout);
    assert_eq!(times(&img), (NOW, NOW), "{}", pf.stdout);
    if oracle().is_some() {
        same_verdict(&img, "\taccept_time_fudge = false\n", &[]);
    }
}
