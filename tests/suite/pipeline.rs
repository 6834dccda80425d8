//! Passes 1 and 2 overlap (issue 4's pipeline): pass 2 checks directory
//! blocks while pass 1 scans, an entry waiting until its target inode is
//! final, a block whose entries name inodes far ahead parked until pass 1
//! gets there. None of that may change a verdict: the report and a
//! repair's bytes must be those of the passes run one after the other
//! (`PFSCK_NO_OVERLAP=1`), for every thread count.
//!
//! The image is built so that the pipeline has work to hold back: a tree
//! made in depth-first order, so the root's and each parent's entries name
//! inodes spread over the whole file system, with damage that pass 2 can
//! only judge from those far inodes (an entry naming a cleared directory,
//! a file type changed behind an entry, a duplicate block), in many groups.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const THREADS: [&str; 4] = ["1", "2", "4", "8"];

fn image(dir: &TempDir) -> PathBuf {
    let tree = dir.join("tree");
    let mut spec = Vec::new();
    for t in 0..24 {
        spec.push(Node::dir(&format!("t{t}")));
        for s in 0..24 {
            spec.push(Node::dir(&format!("t{t}/s{s}")));
            for f in 0..3 {
                spec.push(Node::file(&format!("t{t}/s{s}/f{f}"), 600 + f * 37));
            }
        }
    }
    // A directory of several blocks.
    spec.push(Node::dir("big"));
    for f in 0..400 {
        spec.push(Node::file(&format!("big/entry-with-a-long-name-{f:05}"), 0));
    }
    build_tree(&tree, &spec);
    let img = dir.join("pipe.img");
    mkfs(
        &img,
        48 << 20,
        &MkfsOpts::ext4()
            .block_size(1024)
            .blocks_per_group(1024)
            .inode_size(256)
            // 64 inodes a group: the tree spans most of the 48 groups.
            .inodes(48 * 64),
        Some(&tree),
    );
    let dup = blocks_of(&img, "/t1/s1/f3");
    let mut cmds = vec![
        // Entries in the root and in /t7 name what is gone or changed.
        "clri /t23/s6".to_string(),
        "sif /t20 mode 0100644".to_string(),
        "sif /t15/s5/f2 mode 010644".to_string(),
        "clri /t4/s17/f1".to_string(),
        "sif /big/entry-with-a-long-name-00399 mode 0140644".to_string(),
        "unlink /t3/s2/f2".to_string(),
    ];
    if let Some(first) = dup.first() {
        cmds.push(format!("sif /t22/s7/f0 block[0] {first}"));
    }
    debugfs_w_unchecked(&img, &cmds);
    img
}

fn run(img: &Path, args: &[&str], overlap: bool) -> RunResult {
    let mut cmd = Command::new(pfsck_bin());
    cmd.env("PFSCK_TIME", "1700000000").args(args).arg(img);
    if !overlap {
        cmd.env("PFSCK_NO_OVERLAP", "1");
    }
    let r = run_timeout(cmd, Duration::from_secs(120));
    assert!(
        !r.timed_out && !r.crashed(),
        "{}: {}",
        img.display(),
        r.describe()
    );
    r
}

/// The JSON report without the timings (and the scheduler's figures) and
/// the bytes held by structure.
fn report(img: &Path, threads: &str, overlap: bool) -> (serde_json::Value, String) {
    let r = run(img, &["-fn", "--json", "-t", "--threads", threads], overlap);
    let mut v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON report");
    if let Some(o) = v.as_object_mut() {
        o.remove("memory");
    }
    let timings = v
        .as_object_mut()
        .and_then(|o| o.remove("timings"))
        .unwrap_or_default();
    (timings, format!("exit {:?}\n{:#}", r.code(), v))
}

#[test]
fn overlapping_passes_reach_the_same_verdicts() {
    let dir = TempDir::new("pipeline");
    let img = image(&dir);
    let (_, serial) = report(&img, "1", false);
    assert!(
        serial.contains("\"pass\": 2"),
        "the damage must give pass 2 something to find:\n{serial}"
    );
    for t in THREADS {
        let (timings, piped) = report(&img, t, true);
        assert_eq!(
            serial, piped,
            "--threads {t}: the pipelined report differs from the passes one after the other"
        );
        // The pipeline ran: the pass1-2 row carries the scheduler's record,
        // and every pass-2 unit formed was checked.
        let sched = timings
            .as_array()
            .and_then(|rows| rows.iter().find_map(|r| r.get("scheduler")))
            .unwrap_or_else(|| panic!("--threads {t}: no scheduler record in {timings}"));
        eprintln!("--threads {t}: scheduler {sched}");
        let units = &sched["units"];
        assert!(units[0].as_u64().unwrap_or(0) > 10, "{sched}");
        assert!(units[1].as_u64().unwrap_or(0) > 0, "{sched}");
    }
}

#[test]
fn overlapping_passes_repair_the_same_bytes() {
    let dir = TempDir::new("pipeline-repair");
    let img = image(&dir);
    let mut first: Option<(String, Vec<u8>)> = None;
    for (t, overlap) in [("1", false), ("1", true), ("2", true), ("8", true)] {
        let copy = dir.join(format!("repair-{t}-{overlap}.img"));
        std::fs::copy(&img, &copy).unwrap();
        let r = run(&copy, &["-fy", "--threads", t], overlap);
        let text = format!("exit {:?}\n{}", r.code(), r.stdout)
            .replace(&copy.display().to_string(), "IMAGE");
        let bytes = std::fs::read(&copy).unwrap();
        match &first {
            None => first = Some((text, bytes)),
            Some((t0, b0)) => {
                assert_eq!(*t0, text, "--threads {t}, overlap {overlap}: repair report");
                assert!(
                    *b0 == bytes,
                    "--threads {t}, overlap {overlap}: repaired bytes"
                );
            }
        }
    }
}
