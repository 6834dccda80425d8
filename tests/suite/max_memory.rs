//! `--max-memory` (issue 17): past the cap the per-inode and per-block maps
//! live in a scratch file and are dropped from memory. The verdicts and a
//! repair's bytes must be those of an uncapped run; the JSON report says
//! the spilled path was taken; and under a cgroup memory limit that kills
//! an uncapped run, a capped one finishes.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A damaged ext4 image whose block maps are a few pages (and so go to
/// the scratch file): 256 MiB of 1 KiB blocks.
fn damaged_image(dir: &TempDir) -> PathBuf {
    let img = dir.join("cap.img");
    mkfs(
        &img,
        256 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&standard_tree_dir()),
    );
    // Pass 2 finds entries naming a cleared directory, pass 3 its
    // orphaned subdirectory, pass 4 a wrong link count, pass 5 the maps.
    let cmds = ["clri /dir1/sub", "sif /small links_count 7"];
    debugfs_w(&img, &cmds);
    img
}

fn run(img: &Path, args: &[&str]) -> RunResult {
    let mut cmd = Command::new(pfsck_bin());
    // A fixed time after the images' own (2033): one before them would
    // find their last write time in the future.
    cmd.env("PFSCK_TIME", "2000000000")
        .env("TMPDIR", img.parent().unwrap())
        .args(args)
        .arg(img);
    let r = run_timeout(cmd, Duration::from_secs(120));
    assert!(!r.timed_out && !r.crashed(), "{}", r.describe());
    r
}

/// The JSON report without what differs between runs (timings, memory);
/// and the memory object.
fn report(img: &Path, args: &[&str]) -> (String, serde_json::Value) {
    let mut all = vec!["-fn", "--json"];
    all.extend(args);
    let r = run(img, &all);
    let mut v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON report");
    let o = v.as_object_mut().unwrap();
    o.remove("timings");
    let mem = o.remove("memory").expect("memory in the JSON report");
    (format!("exit {:?}\n{v:#}", r.code()), mem)
}

#[test]
fn capped_check_and_repair_match_uncapped() {
    let dir = TempDir::new("max-memory");
    let img = damaged_image(&dir);
    let (plain, mem) = report(&img, &["-m", "1"]);
    assert!(plain.contains("\"pass\": 2"), "{plain}");
    assert!(mem["max_memory"].is_null(), "{mem}");
    assert!(
        mem["census"]["block_used"].as_u64().unwrap_or(0) > 0,
        "{mem}"
    );
    let mut spilled = 0;
    for t in ["1", "2", "4"] {
        // A cap far below any run's resident size: every look finds it
        // over, and the maps are dropped each time.
        let (capped, mem) = report(&img, &["-m", t, "--max-memory", "64K"]);
        assert_eq!(plain, capped, "-m {t}: capped report differs");
        let sp = &mem["max_memory"];
        assert_eq!(sp["cap"].as_u64(), Some(64 << 10), "{mem}");
        assert!(
            sp["mapped_bytes"].as_u64().unwrap_or(0) >= 3 * 8192,
            "{mem}"
        );
        assert!(sp["trims"].as_u64().unwrap_or(0) >= 1, "-m {t}: {mem}");
        spilled += sp["spilled_bytes"].as_u64().unwrap_or(0);
    }
    assert!(spilled > 0, "no trim dropped anything");
    // -t says so too.
    let r = run(&img, &["-fn", "-t", "--max-memory", "64K"]);
    assert!(
        r.stdout.contains("--max-memory 64 KiB:") && r.stdout.contains("memory after passes 1-2:"),
        "{}",
        r.stdout
    );
    // A repair under the cap writes the same bytes.
    let mut bytes = Vec::new();
    for cap in [None, Some("64K")] {
        let copy = dir.join(format!("fix-{}.img", cap.is_some()));
        std::fs::copy(&img, &copy).unwrap();
        let mut args = vec!["-fy"];
        args.extend(cap.iter().flat_map(|c| ["--max-memory", c]));
        let r = run(&copy, &args);
        let text = r.stdout.replace(&copy.display().to_string(), "IMAGE");
        bytes.push((text, std::fs::read(&copy).unwrap()));
        assert_eq!(e2fsck_fn(&copy), 0, "e2fsck -fn after pfsck -fy {args:?}");
    }
    assert_eq!(bytes[0].0, bytes[1].0, "repair report");
    assert!(bytes[0].1 == bytes[1].1, "repaired bytes differ");
}

#[test]
fn max_memory_rejects_bad_sizes() {
    for bad in ["0", "12X", "M"] {
        let r = pfsck_timeout(
            &["-fn", "--max-memory", bad, "/nonexistent"],
            Duration::from_secs(10),
        );
        assert_eq!(r.code(), Some(16), "{bad}: {}", r.describe());
        assert!(r.stderr.contains("--max-memory"), "{}", r.stderr);
    }
}

/// A memory cgroup of our own under this process's (v1 memory controller,
/// or v2 where the memory controller is enabled), removed on drop.
struct Cgroup(PathBuf, &'static str);

impl Cgroup {
    fn new(tag: &str) -> Result<Cgroup, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
        let mut candidates = Vec::new();
        for line in own.lines() {
            let mut f = line.splitn(3, ':');
            let (_, ctl, path) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or(""));
            let path = path.trim_start_matches('/');
            if ctl.split(',').any(|c| c == "memory") {
                candidates.push((
                    Path::new("/sys/fs/cgroup/memory").join(path),
                    "memory.limit_in_bytes",
                ));
            } else if ctl.is_empty() {
                for base in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
                    let p = Path::new(base).join(path);
                    let ctls = std::fs::read_to_string(p.join("cgroup.subtree_control"))
                        .unwrap_or_default();
                    if ctls.split_whitespace().any(|c| c == "memory") {
                        candidates.push((p, "memory.max"));
                    }
                }
            }
        }
        let mut why = String::from("no memory cgroup found");
        for (parent, limit) in candidates {
            let dir = parent.join(format!("pfsck-test-{}-{tag}", std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) if dir.join(limit).exists() => return Ok(Cgroup(dir, limit)),
                Ok(()) => {
                    let _ = std::fs::remove_dir(&dir);
                    why = format!("{} has no {limit}", dir.display());
                }
                Err(e) => why = format!("mkdir {}: {e}", dir.display()),
            }
        }
        Err(why)
    }

    /// Runs pfsck inside the group under a limit of `bytes`.
    fn run(&self, bytes: u64, args: &[&str], img: &Path) -> RunResult {
        std::fs::write(self.0.join(self.1), bytes.to_string()).expect("set the memory limit");
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("echo $$ > \"$0/cgroup.procs\" && exec \"$@\"")
            .arg(&self.0)
            .arg(pfsck_bin())
            .args(args)
            .arg(img)
            .env("TMPDIR", img.parent().unwrap());
        run_timeout(cmd, Duration::from_secs(120))
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("could not remove {}", self.0.display());
    }
}

#[test]
fn capped_run_survives_a_cgroup_limit_an_uncapped_one_does_not() {
    let dir = TempDir::new("max-memory-cgroup");
    // 64 GiB of 1 KiB blocks, nearly all allocated to one file of
    // uninitialised extents: the block map is 8 MiB and fully resident,
    // the image 20 MB on disk.
    let img = dir.join("big.img");
    mkfs(
        &img,
        64 << 30,
        &MkfsOpts::ext4()
            .block_size(1024)
            .inodes(4096)
            .features("^has_journal"),
        None,
    );
    debugfs_w(&img, &["write /dev/null f", "fallocate f 0 62000000"]);
    let cg = match Cgroup::new("cap") {
        Ok(c) => c,
        Err(why) => {
            eprintln!("notice: skipping the cgroup test: {why}");
            return;
        }
    };
    let free = run(&img, &["-fn", "--json", "-m", "1"]);
    assert_eq!(free.code(), Some(0), "{}", free.stdout);
    let v: serde_json::Value = serde_json::from_str(&free.stdout).unwrap();
    let peak = v["timings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["peak_rss_kib"].as_u64())
        .max()
        .unwrap()
        * 1024;
    let maps = v["memory"]["census"]["block_used"].as_u64().unwrap();
    assert!(maps >= 6 << 20, "block map only {maps} bytes resident");
    // Below the uncapped run's need by half its maps; the cap below that
    // by as much again.
    let limit = peak - maps / 2;
    let cap = limit - maps / 2;
    let killed = cg.run(limit, &["-fn", "-m", "1"], &img);
    eprintln!(
        "uncapped (peak {} KiB, maps {} KiB) under {} KiB: {}",
        peak >> 10,
        maps >> 10,
        limit >> 10,
        killed.describe()
    );
    if killed.code() == Some(0) {
        eprintln!("notice: the cgroup limit did not hold an uncapped run; skipping");
        return;
    }
    assert_eq!(killed.signal(), Some(9), "{}", killed.describe());
    let capped = cg.run(
        limit,
        &["-fn", "-m", "1", "--max-memory", &cap.to_string()],
        &img,
    );
    assert_eq!(
        capped.code(),
        Some(0),
        "capped run under the limit: {}\n{}{}",
        capped.describe(),
        capped.stdout,
        capped.stderr
    );
    let text = run(&img, &["-fn", "-m", "1"]);
    assert_eq!(capped.stdout, text.stdout, "capped report differs");
}

/// An image of `n` entries in 60 directories: each a directory itself
/// (`dirs`), or an empty file. Same geometry either way.
fn tree_image(dir: &TempDir, name: &str, n: usize, dirs: bool) -> PathBuf {
    let src = dir.join(format!("{name}-tree"));
    for k in 0..n {
        let p = src.join(format!("d{}", k % 60)).join(format!("e{k}"));
        if dirs {
            std::fs::create_dir_all(&p).unwrap();
        } else {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"").unwrap();
        }
    }
    let img = dir.join(format!("{name}.img"));
    mkfs(&img, 128 << 20, &MkfsOpts::ext4().inodes(16384), Some(&src));
    img
}

#[test]
fn directory_lists_go_to_the_scratch_file() {
    // Issue 17: past the cap the directory lists (directories, parents,
    // '..', link counts, blocks, the tree of paths) live in the scratch
    // file with the maps, and the report is the uncapped one.
    let dir = TempDir::new("max-memory-dirs");
    let n = 6000;
    let dirs = tree_image(&dir, "dirs", n, true);
    let files = tree_image(&dir, "files", n, false);
    let mut mapped = Vec::new();
    for img in [&dirs, &files] {
        let (plain, _) = report(img, &["-m", "1"]);
        for t in ["1", "2"] {
            let (capped, mem) = report(img, &["-m", t, "--max-memory", "64K"]);
            assert_eq!(
                plain,
                capped,
                "{}: -m {t}: capped report differs",
                img.display()
            );
            if t == "1" {
                mapped.push(mem["max_memory"]["mapped_bytes"].as_u64().unwrap_or(0));
            }
        }
    }
    // Same geometry, same maps: what more the directories' image placed
    // there is its lists, at least a directory list, parents and '..'.
    assert!(
        mapped[0] >= mapped[1] + 12 * n as u64,
        "scratch bytes: {} with {n} directories, {} with files",
        mapped[0],
        mapped[1]
    );
}

#[test]
fn pass_two_results_go_to_the_scratch_file() {
    // Issue 17: pass 2's per-unit results (the entries naming
    // directories, their names, each directory's '..') are the largest
    // part of a check of many small directories; past the cap they live
    // in the scratch file, and the report is the uncapped one.
    let dir = TempDir::new("max-memory-results");
    let n = 6000;
    let img = tree_image(&dir, "dirs", n, true);
    let (plain, free) = report(&img, &["-m", "2"]);
    assert!(
        free["census"]["pass-2 results in the scratch file"].is_null(),
        "{free}"
    );
    for t in ["1", "2"] {
        let (capped, mem) = report(&img, &["-m", t, "--max-memory", "64K"]);
        assert_eq!(plain, capped, "-m {t}: capped report differs");
        let c = &mem["census"];
        let all = c["pass-2 results"].as_u64().unwrap_or(0);
        let moved = c["pass-2 results in the scratch file"]
            .as_u64()
            .unwrap_or(0);
        // Each directory: its entry (12 bytes), its name, its '..' (8).
        assert!(
            moved >= 20 * n as u64,
            "-m {t}: {moved} of {all} bytes moved"
        );
        assert!(moved * 2 >= all, "-m {t}: {moved} of {all} bytes moved");
    }
}
