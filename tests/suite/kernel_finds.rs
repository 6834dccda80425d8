//! What the fuzzer's kernel-written profiles found (`scripts/difffuzz.py
//! --profiles k-all`, seed k37), each made again on an image the kernel
//! writes here through a loop mount and judged against e2fsck 1.47.4.
//! Needs root and loop mounts: skipped with a notice where they are not
//! permitted.

use crate::common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const MIB: u64 = 1 << 20;

/// Unmounts even when the test fails.
struct Mounted(PathBuf);
impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).output();
    }
}

/// A 1 KiB-block ext4 with `features` that the kernel filled, copied
/// while still mounted with two files open and unlinked: a journal to
/// recover and two orphans, as a crashed kernel leaves them. None (with a
/// notice) where loop mounts are not permitted.
fn crashed_image(tmp: &TempDir, features: &str) -> Option<PathBuf> {
    let live = tmp.join("live.img");
    mkfs(
        &live,
        16 * MIB,
        &MkfsOpts::ext4().block_size(1024).features(features),
        None,
    );
    let mnt = tmp.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let m = Command::new("mount")
        .args(["-o", "loop"])
        .arg(&live)
        .arg(&mnt)
        .output()
        .unwrap();
    if !m.status.success() {
        eprintln!(
            "NOTICE: cannot mount a loop image here ({}); kernel-written images not tested",
            String::from_utf8_lossy(&m.stderr).trim()
        );
        return None;
    }
    let guard = Mounted(mnt.clone());
    let d = mnt.join("d");
    std::fs::create_dir(&d).unwrap();
    for i in 0..20 {
        std::fs::write(
            d.join(format!("f{i}")),
            file_content(&format!("f{i}"), 700 * i),
        )
        .unwrap();
    }
    let mut held = Vec::new();
    for i in 0..2 {
        let p = d.join(format!("gone{i}"));
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(&file_content("gone", 5000)).unwrap();
        f.sync_all().unwrap();
        std::fs::remove_file(&p).unwrap();
        held.push(f);
    }
    let st = Command::new("sync").arg("-f").arg(&mnt).status().unwrap();
    assert!(st.success());
    let img = tmp.join("crashed.img");
    std::fs::copy(&live, &img).unwrap();
    drop(held);
    drop(guard);
    Some(img)
}

/// The names in /d, sorted.
fn names_in_d(img: &Path) -> Vec<String> {
    let mut v: Vec<String> = debugfs_r(img, "ls -p /d")
        .lines()
        .filter_map(|l| l.split('/').nth(5).map(str::to_string))
        .filter(|n| !n.is_empty() && n != "." && n != "..")
        .collect();
    v.sort();
    v
}

/// A journal needing recovery whose superblock fails its checksum (a
/// byte of its padding changed; seed k37, damage 21): e2fsck replays
/// nothing, -n cannot proceed (exit 12) and -y resets the journal. pfsck
/// replayed it all the same and judged the replayed view (exit 4).
#[test]
fn journal_with_corrupt_superblock_is_not_replayed() {
    let tmp = TempDir::new("kern-jsb-csum");
    let Some(img) = crashed_image(&tmp, "orphan_file") else {
        return;
    };
    if oracle().is_none() {
        eprintln!("NOTICE: no e2fsck 1.47.4 in ../shared/tools; not compared");
        return;
    }
    assert!(
        dumpe2fs(&img).has_feature("needs_recovery"),
        "the copy needs no recovery"
    );
    let jsb = debugfs_number(&img, "bmap <8> 0") * 1024;
    let b = read_at(&img, jsb + 0xE9, 1)[0];
    write_at(&img, jsb + 0xE9, &[b ^ 4]);

    let theirs = e2fsck_codes(&img, &["-fn"]).unwrap();
    let (code, out) = pfsck_code(&["-fn"], &img);
    assert_eq!(code, 12, "pfsck -fn:\n{out}");
    assert!(
        out.contains("The journal superblock is corrupt: checksum does not match"),
        "{out}"
    );
    let (_, json) = pfsck_code(&["-fn", "--json"], &img);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut ours = report_e2fsck_codes(&json);
    ours.sort_unstable();
    ours.dedup();
    assert_eq!(ours, theirs, "problem codes");

    let mine = tmp.join("mine.img");
    let e2 = tmp.join("e2fsck.img");
    copy_image(&img, &mine);
    copy_image(&img, &e2);
    let (code, out) = pfsck_code(&["-fy"], &mine);
    assert_eq!(code, 1, "pfsck -fy:\n{out}");
    let after = oracle_run(&mine, &["-fn"]);
    assert_eq!(
        after.code(),
        Some(0),
        "after pfsck -fy: {}",
        after.dump(4000)
    );
    assert_eq!(oracle_run(&e2, &["-fy"]).code(), Some(1));
    assert_eq!(names_in_d(&mine), names_in_d(&e2), "files kept");
    assert_eq!(names_in_d(&mine).len(), 20);
}
