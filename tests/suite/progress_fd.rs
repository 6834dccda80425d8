//! `-C FD`: e2fsck's progress lines, `PASS CURRENT MAX DEVICE`, at its
//! granularity (every step of passes 1 to 5) and with its device field
//! (the label, else the device as given). Read as systemd-fsck reads
//! them, and compared with e2fsck 1.47.4's on the same image.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Runs `BIN -fn -C 3 IMG` with descriptor 3 on a file; its lines.
fn progress_lines(bin: &Path, img: &Path, out: &Path) -> String {
    let cmd = format!(
        "exec '{}' -fn -C 3 '{}' 3>'{}' >/dev/null 2>&1 </dev/null",
        bin.display(),
        img.display(),
        out.display()
    );
    let st = Command::new("timeout")
        .args(["-s", "KILL", "60", "sh", "-c", &cmd])
        .status()
        .unwrap();
    assert!(st.code().is_some(), "{} was killed", bin.display());
    std::fs::read_to_string(out).unwrap()
}

/// systemd-fsck's reading of a line: `%u %lu %lu %s`, each pass weighing
/// one fifth of the whole. Lines per pass, and the percentages in order.
fn parse(text: &str) -> (BTreeMap<u32, usize>, Vec<f64>) {
    let mut per_pass = BTreeMap::new();
    let mut percent = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.splitn(4, ' ').collect();
        assert_eq!(f.len(), 4, "line {line:?}");
        let pass: u32 = f[0].parse().unwrap();
        let cur: u64 = f[1].parse().unwrap();
        let max: u64 = f[2].parse().unwrap();
        assert!((1..=5).contains(&pass) && cur <= max && max > 0, "{line:?}");
        *per_pass.entry(pass).or_insert(0) += 1;
        percent.push((f64::from(pass - 1) + cur as f64 / max as f64) * 20.0);
    }
    (per_pass, percent)
}

#[test]
fn progress_lines_are_e2fscks() {
    let dir = TempDir::new("progress-fd");
    let img = dir.join("img");
    let mut opts = MkfsOpts::ext4();
    opts.extra_args = vec!["-L".into(), "progress".into()];
    mkfs(&img, 64 << 20, &opts, Some(&standard_tree_dir()));
    let ours = progress_lines(pfsck_bin(), &img, &dir.join("ours"));
    let (per_pass, percent) = parse(&ours);
    assert_eq!(
        per_pass.keys().copied().collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert!(percent.is_sorted(), "progress only moves forward:\n{ours}");
    assert_eq!(percent.last(), Some(&100.0));
    assert!(ours.lines().all(|l| l.ends_with(" progress")), "{ours}");
    let Some(e2) = oracle() else {
        eprintln!("NOTICE: e2fsck 1.47.4 not found: lines not compared");
        return;
    };
    let theirs = progress_lines(&e2, &img, &dir.join("theirs"));
    assert_eq!(parse(&theirs).0, per_pass, "lines per pass");
    assert_eq!(ours, theirs);
    // No label: the device as given.
    let plain = dir.join("plain");
    mkfs(&plain, 16 << 20, &MkfsOpts::ext4(), None);
    let ours = progress_lines(pfsck_bin(), &plain, &dir.join("ours2"));
    let theirs = progress_lines(&e2, &plain, &dir.join("theirs2"));
    assert_eq!(ours, theirs);
}
