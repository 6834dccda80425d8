//! The report must not depend on the number of threads: the same image
//! checked with `--threads 1, 2, 4, 8` gives the same problems, in the same
//! order, the same summary and the same exit code; and a repair (`-fy`)
//! leaves the same bytes and prints the same report.
//!
//! Runs on damaged images made here (damage in every pass) and, when
//! `../shared/conformance` exists, on every conformance image.

use crate::common::*;
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
        // Measurements, not verdicts: time, and bytes held by structure.
        o.remove("timings");
        o.remove("memory");
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
        let _ = std::fs::remove_file(pfsck::store::default_undo_path(&copy));
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

/// Files of the many-problems image, and which damage each got.
const MANY_DIRS: usize = 24;
const MANY_FILES_PER_DIR: usize = 500;

/// An image with more than 10,000 problems (pFSCK falls back to serial
/// checking past that many errors): 12,000 empty files, each damaged in
/// one of four ways in turn — dtime set on the in-use inode (pass 1), link
/// count 2 and 3 (pass 4), the inode cleared (pass 2's entry naming an
/// unused inode, pass 5's bitmap and counts). Returns the image and the
/// damaged inodes of each kind.
fn many_problems_image(dir: &TempDir) -> (PathBuf, [Vec<u64>; 4]) {
    let tree = dir.join("many-tree");
    let mut spec = Vec::new();
    for d in 0..MANY_DIRS {
        spec.push(Node::dir(&format!("d{d:02}")));
        for f in 0..MANY_FILES_PER_DIR {
            spec.push(Node::file(&format!("d{d:02}/f{f:03}"), 0));
        }
    }
    build_tree(&tree, &spec);
    let img = dir.join("many.img");
    mkfs(&img, 64 << 20, &MkfsOpts::ext4().inodes(16384), Some(&tree));
    // The files' inode numbers from `ls -p` (/INO/MODE/UID/GID/NAME/SIZE/).
    let ls: Vec<String> = (0..MANY_DIRS).map(|d| format!("ls -p /d{d:02}")).collect();
    let (out, _) = debugfs_w_unchecked(&img, &ls);
    let inos: Vec<u64> = out
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('/').collect();
            (f.len() > 6 && f[2].starts_with("1006")).then(|| f[1].parse().ok())?
        })
        .collect();
    assert_eq!(inos.len(), MANY_DIRS * MANY_FILES_PER_DIR, "{out}");
    let mut kinds: [Vec<u64>; 4] = Default::default();
    let mut cmds = Vec::new();
    for (k, &ino) in inos.iter().enumerate() {
        kinds[k % 4].push(ino);
        cmds.push(match k % 4 {
            0 => format!("sif <{ino}> dtime 1700000000"),
            1 => format!("sif <{ino}> links_count 2"),
            2 => format!("clri <{ino}>"),
            _ => format!("sif <{ino}> links_count 3"),
        });
    }
    debugfs_w(&img, &cmds);
    (img, kinds)
}

#[test]
fn many_problems_same_and_complete_report_for_any_thread_count() {
    let dir = TempDir::new("determinism-many");
    let (img, kinds) = many_problems_image(&dir);
    assert_ne!(e2fsck_fn(&img), 0, "the fixture should be damaged");
    // Same report (problems, order, summary, exit code) for 1, 2 and 4.
    let base = report(&img, "1");
    for t in ["2", "4"] {
        let other = report(&img, t);
        assert!(
            other == base,
            "--threads 1 and --threads {t} differ:\n--- 1\n{}\n--- {t}\n{}",
            truncate(&base, 3000),
            truncate(&other, 3000)
        );
    }
    // Complete: every damaged inode reported, with its own problem.
    let r = pfsck(&["-fn".as_ref(), "--json".as_ref(), img.as_os_str()]);
    let rep = parse_report(&String::from_utf8_lossy(&r.stdout)).unwrap();
    assert!(
        rep.problems.len() > 10_000,
        "{} problems",
        rep.problems.len()
    );
    let reported = |pred: &dyn Fn(&Problem) -> Option<u64>| -> Vec<u64> {
        let mut v: Vec<u64> = rep.problems.iter().filter_map(pred).collect();
        v.sort_unstable();
        v
    };
    let sorted = |v: &Vec<u64>| {
        let mut v = v.clone();
        v.sort_unstable();
        v
    };
    let dtime = reported(&|p| {
        p.message
            .contains("carries a deletion time")
            .then_some(p.ino?)
    });
    assert_eq!(dtime, sorted(&kinds[0]), "dtime problems");
    let links = |n: u32| {
        let text = format!("has link count {n}, counted 1");
        reported(&move |p| p.message.contains(&text).then_some(p.ino?))
    };
    assert_eq!(links(2), sorted(&kinds[1]), "link count 2 problems");
    assert_eq!(links(3), sorted(&kinds[3]), "link count 3 problems");
    // The entries naming the cleared inodes: "names inode N, which is free".
    let unused = reported(&|p| {
        let at = p.message.find("names inode ")?;
        let rest = p.message[at + 12..].strip_suffix(", which is free")?;
        rest.parse().ok()
    });
    assert_eq!(unused, sorted(&kinds[2]), "entries naming cleared inodes");
    assert!(
        rep.problems
            .iter()
            .any(|p| p.message.starts_with("Inodes whose bitmap bit is wrong")),
        "pass 5 bitmap problem missing"
    );
}
