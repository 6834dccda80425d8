//! The report must not depend on the number of threads: the same image
//! checked with `--threads 1, 2, 4, 8` gives the same problems, in the same
//! order, the same summary and the same exit code; and a repair (`-fy`)
//! leaves the same bytes and prints the same report.
//!
//! Runs on damaged images made here (damage in every pass) and, when
//! `../shared/conformance` exists, on every conformance image.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

const THREADS: [&str; 4] = ["1", "2", "4", "8"];

/// The JSON report without what legitimately varies (timings).
fn report(img: &Path, threads: &str) -> String {
    let r = pfsck_timeout(
        &[
            "-fn".as_ref(),
            "--json".as_ref(),
            "--threads".as_ref(),
            threads.as_ref(),
            img.as_os_str(),
        ],
        Duration::from_secs(60),
    );
    assert!(
        !r.timed_out && !r.crashed(),
        "{}: {}",
        img.display(),
        r.describe()
    );
    let mut v: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("{}: bad JSON ({e}): {}", img.display(), r.stdout));
    if let Some(o) = v.as_object_mut() {
        o.remove("timings");
    }
    format!("exit {:?}\n{v:#}", r.code())
}

fn differences(img: &Path) -> Option<String> {
    let base = report(img, THREADS[0]);
    for t in &THREADS[1..] {
        let other = report(img, t);
        if other != base {
            return Some(format!(
                "{}: --threads 1 and --threads {t} differ:\n--- 1\n{}\n--- {t}\n{}",
                img.display(),
                truncate(&base, 3000),
                truncate(&other, 3000)
            ));
        }
    }
    None
}

/// An ext4 image with 40 groups and damage found by passes 1, 1B, 2, 3, 4
/// and 5, spread over many groups so that workers see different parts.
fn damaged_image(dir: &TempDir) -> PathBuf {
    let tree = dir.join("tree");
    let mut spec = Vec::new();
    for d in 0..40 {
        spec.push(Node::dir(&format!("d{d}")));
        for f in 0..25 {
            spec.push(Node::file(
                &format!("d{d}/f{f}"),
                3000 + (d * 25 + f) as u64 * 7,
            ));
        }
    }
    build_tree(&tree, &spec);
    let img = dir.join("damaged.img");
    mkfs(
        &img,
        40 << 20,
        &MkfsOpts::ext4().block_size(1024).blocks_per_group(1024),
        Some(&tree),
    );
    let b = blocks_of(&img, "/d3/f1");
    let mut cmds = vec![
        "sif /d1/f1 links_count 7".to_string(),
        "sif /d2/f2 size 1".to_string(),
        "clri /d5".to_string(),
        "sif /d7/f3 dtime 12345".to_string(),
        "unlink /d9/f4".to_string(),
        "freeb 3000 20".to_string(),
        "set_bg 11 free_inodes_count 3".to_string(),
    ];
    if let Some(first) = b.first() {
        // Two files claiming the same block (pass 1B).
        cmds.push(format!("sif /d20/f0 block[2] {first}"));
        cmds.push(format!("sif /d30/f0 block[2] {first}"));
    }
    debugfs_w_unchecked(&img, &cmds);
    img
}

#[test]
fn same_report_for_any_thread_count_on_damaged_images() {
    let dir = TempDir::new("determinism");
    let img = damaged_image(&dir);
    assert_ne!(e2fsck_fn(&img), 0, "the fixture should be damaged");
    if let Some(d) = differences(&img) {
        panic!("{d}");
    }
}

/// The conformance test folders, sorted; None without `../shared`.
fn conformance_tests() -> Option<Vec<PathBuf>> {
    let root = conformance_dir()?.join("e2fsprogs");
    let mut tests: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    tests.sort();
    Some(tests)
}

#[test]
fn same_report_for_any_thread_count_on_conformance_images() {
    let Some(tests) = conformance_tests() else {
        eprintln!("conformance images not found, skipped");
        return;
    };
    let dir = TempDir::new("determinism-conf");
    let failures: Vec<String> = parallel_map(&tests, test_threads(), |i, t| {
        let img = dir.join(format!("img{i}"));
        extract_image(t, &img).ok()?;
        let d = differences(&img);
        let _ = std::fs::remove_file(&img);
        d
    })
    .into_iter()
    .flatten()
    .collect();
    assert!(
        failures.is_empty(),
        "{} images give thread-dependent reports:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!(
        "{} conformance images: identical reports for --threads 1, 2, 4, 8",
        tests.len()
    );
}

/// `pfsck -fy --threads T` on a copy of `img` for each thread count: the
/// repaired images must be byte for byte the same, and so must the text
/// reports. The clock is fixed (`PFSCK_TIME`), as the time stamps a repair
/// writes (dtime, a new lost+found's times) would otherwise differ between
/// runs a second apart.
fn repair_differences(img: &Path, dir: &Path) -> Option<String> {
    let mut first: Option<(String, Vec<u8>)> = None;
    for t in THREADS {
        let copy = dir.join(format!("repair-{t}.img"));
        std::fs::copy(img, &copy).unwrap();
        let mut cmd = std::process::Command::new(pfsck_bin());
        cmd.env("PFSCK_TIME", "1700000000")
            .args(["-fy", "--threads", t])
            .arg(&copy);
        let r = run_timeout(cmd, Duration::from_secs(120));
        assert!(
            !r.timed_out && !r.crashed(),
            "{}: {}",
            img.display(),
            r.describe()
        );
        // The report names the copy and its undo log; those differ by name.
        let text = format!("exit {:?}\n{}", r.code(), r.stdout)
            .replace(&copy.display().to_string(), "IMAGE");
        let bytes = std::fs::read(&copy).unwrap();
        let _ = std::fs::remove_file(&copy);
        let _ = std::fs::remove_file(pfsck::repair::default_undo_path(&copy));
        match &first {
            None => first = Some((text, bytes)),
            Some((t1, b1)) => {
                if *b1 != bytes {
                    let at = b1.iter().zip(&bytes).position(|(a, b)| a != b);
                    return Some(format!(
                        "{}: repaired images differ between --threads 1 and {t} (first byte {at:?})",
                        img.display()
                    ));
                }
                if *t1 != text {
                    return Some(format!(
                        "{}: repair reports differ between --threads 1 and {t}:\n--- 1\n{}\n--- {t}\n{}",
                        img.display(),
                        truncate(t1, 2000),
                        truncate(&text, 2000)
                    ));
                }
            }
        }
    }
    None
}

#[test]
fn same_repair_for_any_thread_count_on_damaged_images() {
    let dir = TempDir::new("determinism-repair");
    let img = damaged_image(&dir);
    if let Some(d) = repair_differences(&img, &dir.join("")) {
        panic!("{d}");
    }
}

#[test]
fn same_repair_for_any_thread_count_on_conformance_images() {
    let Some(tests) = conformance_tests() else {
        eprintln!("conformance images not found, skipped");
        return;
    };
    let dir = TempDir::new("determinism-conf-repair");
    let failures: Vec<String> = parallel_map(&tests, test_threads(), |i, t| {
        let sub = dir.join(format!("r{i}"));
        std::fs::create_dir_all(&sub).ok()?;
        let img = sub.join("img");
        extract_image(t, &img).ok()?;
        let d = repair_differences(&img, &sub);
        let _ = std::fs::remove_dir_all(&sub);
        d
    })
    .into_iter()
    .flatten()
    .collect();
    assert!(
        failures.is_empty(),
        "{} images repair differently with different thread counts:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!(
        "{} conformance images: identical repairs for --threads 1, 2, 4, 8",
        tests.len()
    );
}
