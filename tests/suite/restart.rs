//! e2fsck -y starts over after some fixes ("Restarting e2fsck from the
//! beginning..."): its report shows the problems up to there, the restart,
//! then the new check's. A repair does the same, in pfsck's name.

use crate::common::*;
use std::path::{Path, PathBuf};

/// ext4, 1 KiB blocks, three files (inodes 12-14); inode 14 is marked
/// free and group 0's never-used mark lowered right behind inode 13, so
/// the entry 'h' names an inode in the unused area: e2fsck fixes the mark
/// in pass 2, restarts, and finds inode 14 in use in pass 5.
fn unused_area_image() -> PathBuf {
    cached_image("restart-unused-area", |img| {
        mkfs(img, 8 << 20, &MkfsOpts::ext4().block_size(1024), None);
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let mut cmds: Vec<String> = ["f", "g", "h"]
            .iter()
            .map(|n| format!("write {file} {n}"))
            .collect();
        let info = dumpe2fs(img);
        assert_eq!(info.groups_count(), 1);
        // Inodes 1-13 in use once 14 is freed: the mark right behind 13.
        let unused = info.inodes_per_group - 13;
        cmds.push("freei <14>".into());
        cmds.extend([
            format!("set_bg 0 itable_unused {unused}"),
            format!("set_bg 0 free_inodes_count {unused}"),
            format!("ssv free_inodes_count {unused}"),
            "set_bg 0 checksum calc".into(),
        ]);
        debugfs_w(img, &cmds);
    })
}

fn stdout_of(img: &Path, e2: bool) -> (Option<i32>, String) {
    if e2 {
        let r = oracle_run(img, &["-fy"]);
        let text: String = r
            .stdout
            .lines()
            .filter(|l| !l.starts_with("e2fsck 1."))
            .map(|l| format!("{l}\n"))
            .collect();
        (r.code(), text)
    } else {
        let out = pfsck(&[std::ffi::OsStr::new("-fy"), img.as_os_str()]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }
}

#[test]
fn an_entry_in_the_unused_area_restarts_the_repair() {
    let dir = TempDir::new("restart-unused");
    let img = dir.join("img");
    copy_image(&unused_area_image(), &img);
    let (e2_code, e2) = stdout_of(&img, true);
    assert!(e2.contains("Restarting e2fsck"), "{e2}");
    copy_image(&unused_area_image(), &img);
    let (code, ours) = stdout_of(&img, false);
    assert!(ours.contains("Checking again from the start"), "{ours}");
    assert_eq!(
        report_shape(ours.trim_end()),
        report_shape(e2.trim_end()),
        "pfsck:\n{ours}\n--- e2fsck ---\n{e2}"
    );
    assert_eq!(code, e2_code);
    assert_eq!(e2fsck_fn(&img), 0);
}

/// `--json` after a restart lists what every check found: the problem
/// that made the repair start over (pass 2's entry in the unused area,
/// fixed) as well as what the check after it found (pass 5's counts).
#[test]
fn json_after_a_restart_lists_every_checks_problems() {
    let dir = TempDir::new("restart-json");
    let img = dir.join("img");
    copy_image(&unused_area_image(), &img);
    let out = pfsck(&[
        std::ffi::OsStr::new("-fy"),
        std::ffi::OsStr::new("--json"),
        img.as_os_str(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON report");
    let problems = doc["problems"].as_array().expect("problems");
    let passes: Vec<u64> = problems.iter().filter_map(|p| p["pass"].as_u64()).collect();
    assert!(
        passes.contains(&2),
        "no pass-2 problem before the restart:\n{text}"
    );
    assert!(
        passes.contains(&5),
        "no pass-5 problem after the restart:\n{text}"
    );
    let fixed_before = problems
        .iter()
        .any(|p| p["pass"].as_u64() == Some(2) && p["fixed"] == serde_json::Value::Bool(true));
    assert!(
        fixed_before,
        "the restart's fix is not listed as fixed:\n{text}"
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
}
