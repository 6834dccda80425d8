//! Ctrl-C (SIGINT) and SIGTERM end a run with exit 32 in every mode, with
//! the device untouched: nothing is written before the commit. The test
//! hook `PFSCK_FAULT` stops pfsck (SIGSTOP) at a known point; the signal
//! is delivered there, then SIGCONT. One run is signalled while pass 1
//! reads a large inode table, with no hook.

use crate::common::*;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);

fn spawn(args: &[&str], img: &std::path::Path, fault: Option<&str>) -> Child {
    let mut cmd = Command::new(pfsck_bin());
    cmd.args(args)
        .arg(img)
        .arg("-z")
        .arg(img.with_extension("undo"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(f) = fault {
        cmd.env("PFSCK_FAULT", f);
    }
    cmd.spawn().unwrap()
}

fn proc_field(pid: u32, file: &str, pick: impl Fn(&str) -> Option<String>) -> Option<String> {
    pick(&std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok()?)
}

fn wait_stopped(pid: u32) {
    let start = Instant::now();
    loop {
        let state = proc_field(pid, "stat", |s| {
            s.rsplit(')')
                .next()?
                .split_whitespace()
                .next()
                .map(String::from)
        });
        if state.as_deref() == Some("T") {
            return;
        }
        assert!(start.elapsed() < LIMIT, "pfsck never stopped");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn signal(pid: u32, sig: &str) {
    run_ok(
        Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string()),
    );
}

fn finish(child: Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn damaged(dir: &TempDir) -> std::path::PathBuf {
    let base = cached_image("signals-damaged", |img| {
        mkfs(img, 16 << 20, &MkfsOpts::ext4(), None);
        debugfs_w(img, &["sif <2> links_count 9"]);
    });
    let img = dir.join("img");
    copy_image(&base, &img);
    img
}

#[test]
fn signal_at_hook_points_exits_32_and_writes_nothing() {
    let dir = TempDir::new("signals-hooks");
    let cases = [
        ("-fn", "before-check"),
        ("-fy", "before-check"),
        ("-fp", "before-check"),
        ("-fy", "before-commit"),
        ("-fp", "before-commit"),
    ];
    for (mode, point) in cases {
        for sig in ["INT", "TERM"] {
            let img = damaged(&dir);
            let before = hash_file(&img);
            let child = spawn(&[mode], &img, Some(point));
            wait_stopped(child.id());
            signal(child.id(), sig);
            signal(child.id(), "CONT");
            let (code, err) = finish(child);
            assert_eq!(code, Some(32), "{mode} SIG{sig} at {point}: {err}");
            assert!(err.contains("cancelled"), "{err}");
            assert_eq!(hash_file(&img), before, "{mode} SIG{sig} at {point} wrote");
            assert!(!img.with_extension("undo").exists());
        }
    }
}

#[test]
fn signal_during_pass1_of_a_large_image() {
    let dir = TempDir::new("signals-large");
    // Every inode table block initialised and read: pass 1 takes a while.
    let img = dir.join("img");
    let opts = MkfsOpts {
        inodes: Some(400_000),
        features: vec!["^metadata_csum".into(), "^uninit_bg".into()],
        extended: vec!["lazy_itable_init=0".into()],
        ..MkfsOpts::ext4()
    };
    mkfs(&img, 512 << 20, &opts, None);
    debugfs_w(&img, &["sif <2> links_count 9"]);
    let before = hash_file(&img);
    for (mode, sig) in [("-fy", "INT"), ("-fn", "TERM"), ("-fp", "INT")] {
        // Two threads, caches cold enough: signalled once some of the
        // inode tables are read.
        let child = spawn(&[mode, "-m", "1"], &img, None);
        let pid = child.id();
        let start = Instant::now();
        loop {
            let read = proc_field(pid, "io", |s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("rchar: "))
                    .map(String::from)
            })
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
            if read > 4 << 20 || start.elapsed() > LIMIT {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        signal(pid, sig);
        let (code, err) = finish(child);
        assert_eq!(code, Some(32), "{mode} SIG{sig}: {err}");
        assert_eq!(hash_file(&img), before, "{mode} SIG{sig} wrote");
    }
}
