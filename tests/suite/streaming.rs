//! The report is printed as the check goes: each pass's header when the
//! pass begins, each pass's problems once the pass is over. The test hook
//! `PFSCK_FAULT=pass-N` stops pfsck (SIGSTOP) right after pass N's header
//! is printed: what the pipe holds then is read while pfsck stands still.
//! The bytes in the end are those of the report printed at once.

use crate::common::*;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);

/// Problems in passes 1, 2 and 4.
fn damaged(dir: &TempDir) -> std::path::PathBuf {
    let base = cached_image("streaming-base", |img| {
        mkfs(img, 16 << 20, &MkfsOpts::ext4(), Some(&standard_tree_dir()));
    });
    let img = dir.join("img");
    copy_image(&base, &img);
    debugfs_w(
        &img,
        &[
            "sif <12> links_count 5",
            "sif <13> dtime 12345",
            "clri <14>",
        ],
    );
    img
}

fn stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(s.rsplit(')').next()?.split_whitespace().next()? == "T"))
        .unwrap_or(false)
}

/// The output of `pfsck -fn IMG` as it stands when pass `pass` begins,
/// and the whole output.
fn output_at(img: &std::path::Path, pass: u8) -> (String, String) {
    output_of_at("-fn", img, pass, pass)
}

/// The output of `pfsck MODE IMG` as it stands when pass `pass` begins
/// (once pass `printed`'s header is there), and the whole output.
fn output_of_at(mode: &str, img: &std::path::Path, pass: u8, printed: u8) -> (String, String) {
    let mut child = Command::new(pfsck_bin())
        .args([mode, "--threads", "2"])
        .arg(img)
        .env("PFSCK_FAULT", format!("pass-{pass}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut pipe = child.stdout.take().unwrap();
    let sink = got.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let start = Instant::now();
    while !stopped(child.id()) {
        assert!(
            start.elapsed() < LIMIT,
            "pfsck never stopped at pass {pass}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // What was written before the stop reaches the reader.
    let header = format!("Pass {printed}: ");
    let mut early = String::new();
    while start.elapsed() < LIMIT {
        early = String::from_utf8_lossy(&got.lock().unwrap()).into_owned();
        if early.contains(&header) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    run_ok(
        Command::new("kill")
            .arg("-CONT")
            .arg(child.id().to_string()),
    );
    child.wait().unwrap();
    reader.join().unwrap();
    let all = String::from_utf8_lossy(&got.lock().unwrap()).into_owned();
    (early, all)
}

#[test]
fn pass_headers_print_as_the_passes_begin() {
    let dir = TempDir::new("streaming");
    let img = damaged(&dir);
    let whole = Command::new(pfsck_bin())
        .args(["-fn", "--threads", "1"])
        .arg(&img)
        .output()
        .unwrap();
    assert_eq!(whole.status.code(), Some(4));
    let whole = String::from_utf8_lossy(&whole.stdout).into_owned();
    for pass in 1..=5u8 {
        let (early, all) = output_at(&img, pass);
        assert_eq!(all, whole, "the streamed report is the whole report");
        // Everything before pass N's header, and the header itself.
        let header = format!("Pass {pass}: ");
        let at = whole.find(&header).expect("every pass ran");
        let line_end = at + whole[at..].find('\n').unwrap() + 1;
        assert_eq!(early, whole[..line_end], "printed when pass {pass} began");
    }
    assert!(
        whole.contains("deletion time") && whole.contains("has link count 5"),
        "{whole}"
    );
}

/// A file whose link count is wrong: pass 4's problem, found on a file
/// system passes 1 to 3 find nothing on.
fn pass4_only(dir: &TempDir, name: &str) -> std::path::PathBuf {
    let base = cached_image("streaming-base", |img| {
        mkfs(img, 16 << 20, &MkfsOpts::ext4(), Some(&standard_tree_dir()));
    });
    let img = dir.join(name);
    copy_image(&base, &img);
    debugfs_w(&img, &["sif <12> links_count 5"]);
    img
}

/// `-y`: the headers print as the passes begin while the check has found
/// nothing; from the first problem on, the rest waits for the repair's
/// later rounds (which settle what is shown). The bytes in the end are
/// those of the report printed at once.
#[test]
fn repair_headers_print_as_the_passes_begin() {
    let dir = TempDir::new("streaming-y");
    let whole = pass4_only(&dir, "whole");
    let out = Command::new(pfsck_bin())
        .args(["-fy", "--threads", "1"])
        .arg(&whole)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let whole = String::from_utf8_lossy(&out.stdout).replace(&img_path(&dir, "whole"), "IMG");
    assert!(whole.contains("has link count 5"), "{whole}");
    // The undo log is named on standard error, off e2fsck's report.
    assert!(!whole.contains("Undo log"), "{whole}");
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("Undo log: "),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for pass in 1..=5u8 {
        let img = pass4_only(&dir, &format!("p{pass}"));
        let upto = pass.min(4);
        let (early, all) = output_of_at("-fy", &img, pass, upto);
        let all = all.replace(&img_path(&dir, &format!("p{pass}")), "IMG");
        assert_eq!(all, whole, "the streamed report is the whole report");
        // Pass 5 begins after pass 4 found the link count: the header of
        // pass 5 waits with pass 4's problem.
        let header = format!("Pass {upto}: ");
        let at = whole.find(&header).expect("every pass ran");
        let line_end = at + whole[at..].find('\n').unwrap() + 1;
        assert_eq!(early, whole[..line_end], "printed when pass {pass} began");
    }
}

fn img_path(dir: &TempDir, name: &str) -> String {
    dir.join(name).display().to_string()
}
