//! `pfsck --online` on real mounts: an ext4 image loop-mounted from a
//! loop-mounted XFS (or btrfs) image, so that the reflink snapshot is the
//! real one: a workload writing while the check runs, damage found and
//! marked for the next check, Ctrl-C/SIGTERM and SIGKILL at known points,
//! refused freezes, the e2scrub entry point, and LVM where device-mapper
//! exists. Needs root and loop mounts (and mkfs.xfs/mkfs.btrfs, from
//! scripts/deps.sh); each test skips with a notice where they are missing.

use crate::common::*;
use serde_json::Value;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(120);

fn can_mount(what: &str) -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    if !root {
        eprintln!("notice: not root; online test '{what}' skipped");
    }
    root
}

/// A mount, unmounted (after a thaw, in case a test left it frozen) when
/// dropped.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("fsfreeze")
            .arg("-u")
            .arg(&self.0)
            .stderr(Stdio::null())
            .status();
        for _ in 0..20 {
            if Command::new("umount")
                .arg(&self.0)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn mount(img: &Path, mnt: &Path, opts: &str) -> Option<Mounted> {
    fs::create_dir_all(mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-o", &format!("loop,{opts}")])
        .arg(img)
        .arg(mnt)
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| Mounted(mnt.to_path_buf()))
}

/// An ext4 image on a loop-mounted XFS or btrfs image, mounted itself.
/// Fields drop in order: the ext4 mount first.
struct Stack {
    fs: Mounted,
    backing: Mounted,
    /// The ext4 image inside the backing mount.
    image: PathBuf,
    dir: TempDir,
}

impl Stack {
    fn mnt(&self) -> &Path {
        &self.fs.0
    }
    /// Names in the backing file system besides the image: snapshots left
    /// behind would show here.
    fn leftovers(&self) -> Vec<String> {
        fs::read_dir(&self.backing.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| *n != "ext4.img")
            .collect()
    }
}

/// Builds the stack; `prepare` may edit the ext4 image before it is
/// mounted. None (with a notice) where this machine cannot.
fn stack(tag: &str, backing: &str, prepare: impl FnOnce(&Path)) -> Option<Stack> {
    if !can_mount(tag) {
        return None;
    }
    let mkfs_tool = format!("mkfs.{backing}");
    let Some(mkfs_backing) = try_tool(&mkfs_tool) else {
        eprintln!(
            "notice: no {mkfs_tool} (scripts/deps.sh installs it); online test '{tag}' skipped"
        );
        return None;
    };
    let dir = TempDir::new(&format!("online-{tag}"));
    let bimg = dir.join("backing.img");
    File::create(&bimg).unwrap().set_len(512 << 20).unwrap();
    run_ok(Command::new(mkfs_backing).arg("-q").arg(&bimg));
    let Some(backing_mnt) = mount(&bimg, &dir.join("backing"), "rw") else {
        eprintln!("notice: loop mount not allowed here; online test '{tag}' skipped");
        return None;
    };
    let image = backing_mnt.0.join("ext4.img");
    mkfs(
        &image,
        96 << 20,
        &MkfsOpts::ext4().block_size(4096),
        Some(&standard_tree_dir()),
    );
    prepare(&image);
    let fs = mount(&image, &dir.join("ext4"), "rw").expect("mount the ext4 image");
    Some(Stack {
        fs,
        backing: backing_mnt,
        image,
        dir,
    })
}

fn online(args: &[&str], target: &Path) -> RunResult {
    let mut cmd = Command::new(pfsck_bin());
    cmd.arg("--online").args(args).arg(target);
    run_timeout(cmd, LIMIT)
}

fn json(r: &RunResult) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", r.dump(4000)))
}

/// Whether the file system is frozen, asked without blocking: a freeze of
/// a frozen file system fails at once (EBUSY); one that succeeds is undone.
fn frozen(mnt: &Path) -> bool {
    let took = Command::new("fsfreeze")
        .arg("-f")
        .arg(mnt)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    if took.success() {
        run_ok(Command::new("fsfreeze").arg("-u").arg(mnt));
    }
    !took.success()
}

/// The superblock field `name` of a device or image, as dumpe2fs prints it.
fn sb_field(dev: &Path, name: &str) -> String {
    dumpe2fs(dev).header.get(name).cloned().unwrap_or_default()
}

fn source_of(mnt: &Path) -> PathBuf {
    let out = run_ok(
        Command::new("findmnt")
            .args(["-n", "-o", "SOURCE"])
            .arg(mnt),
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// Writes, overwrites, renames and fsyncs files until told to stop; one
/// file stays open after being unlinked (an orphan in every snapshot).
struct Workload {
    stop: Arc<AtomicBool>,
    ops: Arc<AtomicU64>,
    worst_us: Arc<AtomicU64>,
    handle: std::thread::JoinHandle<Result<(), String>>,
}

impl Workload {
    fn start(dir: &Path) -> Workload {
        let dir = dir.join("work");
        fs::create_dir_all(&dir).unwrap();
        let (stop, ops, worst_us) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
        );
        let (s, o, w) = (stop.clone(), ops.clone(), worst_us.clone());
        let handle = std::thread::spawn(move || -> Result<(), String> {
            let held = dir.join("held");
            let mut orphan = File::create(&held).map_err(|e| e.to_string())?;
            fs::remove_file(&held).map_err(|e| e.to_string())?;
            let chunk = vec![0x5au8; 64 << 10];
            let mut i = 0u64;
            while !s.load(Ordering::Relaxed) {
                let t = Instant::now();
                let tmp = dir.join(format!("f{}.tmp", i % 16));
                let mut f = File::create(&tmp).map_err(|e| format!("create: {e}"))?;
                f.write_all(&chunk).map_err(|e| format!("write: {e}"))?;
                if i.is_multiple_of(4) {
                    f.sync_all().map_err(|e| format!("fsync: {e}"))?;
                }
                fs::rename(&tmp, dir.join(format!("f{}", i % 16)))
                    .map_err(|e| format!("rename: {e}"))?;
                orphan
                    .write_all(&chunk[..4096])
                    .map_err(|e| format!("orphan write: {e}"))?;
                w.fetch_max(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                o.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
            Ok(())
        });
        Workload {
            stop,
            ops,
            worst_us,
            handle,
        }
    }

    fn ops(&self) -> u64 {
        self.ops.load(Ordering::Relaxed)
    }

    /// Stops it: (operations done, slowest operation).
    fn finish(self) -> (u64, Duration) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("the workload failed: {e}"));
        (
            self.ops.load(Ordering::Relaxed),
            Duration::from_micros(self.worst_us.load(Ordering::Relaxed)),
        )
    }
}

#[test]
fn clean_under_a_writing_workload() {
    let Some(st) = stack("workload", "xfs", |_| {}) else {
        return;
    };
    let work = Workload::start(st.mnt());
    while work.ops() < 20 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = work.ops();
    let r = online(&["--json"], st.mnt());
    let during = work.ops() - before;
    let (ops, worst) = work.finish();
    assert_eq!(r.code(), Some(0), "{}", r.dump(4000));
    let v = json(&r);
    let o = &v["online"];
    assert_eq!(o["mechanism"], "reflink");
    assert_eq!(o["snapshot_of"], st.image.display().to_string());
    assert_eq!(o["recorded"], "checked");
    let frozen_s = o["frozen_seconds"].as_f64().unwrap();
    assert!(frozen_s > 0.0 && frozen_s < 10.0, "frozen {frozen_s} s");
    assert!(o["check_cpu_seconds"].as_f64().unwrap() >= 0.0);
    // The orphan the workload holds is a notice, not a problem.
    assert!(
        v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["severity"] != "Error")
    );
    assert!(during > 0, "the workload made no progress while pfsck ran");
    eprintln!(
        "online check under load: frozen {:.1} ms, check {:.3} s (CPU {:.3} s); workload {ops} ops, {during} during the check, slowest {:.1} ms",
        frozen_s * 1e3,
        o["check_seconds"].as_f64().unwrap(),
        o["check_cpu_seconds"].as_f64().unwrap(),
        worst.as_secs_f64() * 1e3
    );
    assert!(
        st.leftovers().is_empty(),
        "left behind: {:?}",
        st.leftovers()
    );
    assert!(!frozen(st.mnt()));
    let dev = source_of(st.mnt());
    assert_eq!(sb_field(&dev, "Mount count"), "0", "check recorded");
    drop(st.fs);
    assert_eq!(e2fsck_fn(&st.image), 0, "the origin is clean offline too");
}

/// `--max-memory` holds online too: the snapshot's maps go to the
/// scratch file and are trimmed, with the verdict of an uncapped run.
#[test]
fn max_memory_is_honoured_online() {
    let Some(st) = stack("capped", "xfs", |_| {}) else {
        return;
    };
    let plain = json(&online(&["--json", "-n"], st.mnt()));
    let r = online(&["--json", "-n", "--max-memory", "64K"], st.mnt());
    assert_eq!(r.code(), Some(0), "{}", r.dump(4000));
    let v = json(&r);
    let sp = &v["memory"]["max_memory"];
    assert_eq!(sp["cap"].as_u64(), Some(64 << 10), "{v:#}");
    assert!(sp["mapped_bytes"].as_u64().unwrap_or(0) > 0, "{v:#}");
    assert!(sp["trims"].as_u64().unwrap_or(0) >= 1, "{v:#}");
    assert!(plain["memory"]["max_memory"].is_null(), "{plain:#}");
    assert_eq!(plain["problems"], v["problems"]);
    assert!(st.leftovers().is_empty(), "{:?}", st.leftovers());
    assert!(!frozen(st.mnt()));
}

#[test]
fn damage_is_found_online_and_marked_for_the_next_check() {
    let Some(st) = stack("damage", "xfs", |img| {
        debugfs_w(img, &["sif /dir1/a.txt links_count 3"]);
    }) else {
        return;
    };
    let dev = source_of(st.mnt());
    // -n reports and records nothing.
    let r = online(&["-n"], st.mnt());
    assert_eq!(r.code(), Some(4), "{}", r.dump(4000));
    assert!(
        r.stdout.contains("has link count 3, counted 1"),
        "{}",
        r.dump(4000)
    );
    assert!(r.stdout.contains("nothing recorded (-n)"));
    assert_eq!(sb_field(&dev, "Filesystem state"), "clean");

    let r = online(&[], st.mnt());
    assert_eq!(r.code(), Some(4), "{}", r.dump(4000));
    assert!(
        r.stdout.contains("marked as having errors"),
        "{}",
        r.dump(4000)
    );
    assert_eq!(sb_field(&dev, "Filesystem state"), "clean with errors");
    assert_eq!(sb_field(&dev, "Journal errno"), "-117");
    assert!(
        st.leftovers().is_empty(),
        "left behind: {:?}",
        st.leftovers()
    );

    // A clean unmount rewrites the state from the kernel's copy; the
    // journal's error number stays and forces the next check.
    drop(st.fs);
    assert_eq!(sb_field(&st.image, "Journal errno"), "-117");
    let e2 = st.dir.join("e2");
    copy_image(&st.image, &e2);
    let r = e2fsck(&e2, &["-p"]);
    assert!(
        r.stdout.contains("contains a file system with errors"),
        "{}",
        r.dump(4000)
    );
    assert!(
        r.stdout.contains("ref count is 3, should be 1"),
        "{}",
        r.dump(4000)
    );
    let r = pfsck_timeout(&[OsStr::new("-p"), st.image.as_os_str()], LIMIT);
    assert!(
        r.stdout.contains("has link count 3, counted 1"),
        "pfsck -p skipped the marked file system:\n{}",
        r.dump(4000)
    );
}

/// pfsck stopped (SIGSTOP, by the test hook) right after taking its
/// snapshot; `sig` delivered, then SIGCONT.
fn signal_in_check(st: &Stack, sig: &str) -> RunResult {
    let mut cmd = Command::new(pfsck_bin());
    cmd.arg("--online")
        .arg(st.mnt())
        .env("PFSCK_ONLINE_FAULT", "stop-before-check");
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null());
    let start = Instant::now();
    let child = cmd.spawn().unwrap();
    let pid = child.id().to_string();
    let stat = format!("/proc/{pid}/stat");
    loop {
        let s = fs::read_to_string(&stat).unwrap_or_default();
        let state = s
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next());
        if state == Some("T") {
            break;
        }
        assert!(start.elapsed() < LIMIT, "pfsck never reached the check");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The snapshot exists while pfsck is stopped: an unnamed file.
    assert!(st.leftovers().is_empty());
    run_ok(Command::new("kill").arg(format!("-{sig}")).arg(&pid));
    run_ok(Command::new("kill").arg("-CONT").arg(&pid));
    let out = child.wait_with_output().unwrap();
    RunResult {
        status: Some(out.status),
        timed_out: false,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: start.elapsed(),
    }
}

#[test]
fn interrupted_or_killed_runs_leave_nothing_frozen_or_behind() {
    let Some(st) = stack("signals", "xfs", |_| {}) else {
        return;
    };
    for sig in ["INT", "TERM"] {
        let r = signal_in_check(&st, sig);
        assert_eq!(r.code(), Some(32), "SIG{sig}: {}", r.dump(4000));
        assert!(r.stderr.contains("cancelled"), "{}", r.dump(4000));
        assert!(!frozen(st.mnt()), "left frozen after SIG{sig}");
        assert!(
            st.leftovers().is_empty(),
            "left behind: {:?}",
            st.leftovers()
        );
    }
    // Killed inside the freeze window: the watchdog thaws.
    let mut cmd = Command::new(pfsck_bin());
    cmd.arg("--online")
        .arg(st.mnt())
        .env("PFSCK_ONLINE_FAULT", "kill-frozen");
    let r = run_timeout(cmd, LIMIT);
    assert_eq!(r.signal(), Some(9), "{}", r.dump(4000));
    assert!(r.stderr.contains("thawed"), "{}", r.dump(4000));
    assert!(!frozen(st.mnt()), "left frozen by a killed pfsck");
    assert!(
        st.leftovers().is_empty(),
        "left behind: {:?}",
        st.leftovers()
    );
    fs::write(st.mnt().join("after"), b"writable").unwrap();
}

#[test]
fn a_freeze_that_cannot_be_taken_changes_nothing() {
    let Some(st) = stack("refused", "xfs", |_| {}) else {
        return;
    };
    let dev = source_of(st.mnt());
    // Frozen by someone else: refused, and their freeze is left alone.
    run_ok(Command::new("fsfreeze").arg("-f").arg(st.mnt()));
    let r = online(&[], st.mnt());
    let still = frozen(st.mnt());
    run_ok(Command::new("fsfreeze").arg("-u").arg(st.mnt()));
    assert_eq!(r.code(), Some(8), "{}", r.dump(4000));
    assert!(r.stderr.contains("already frozen"), "{}", r.dump(4000));
    assert!(still, "pfsck thawed someone else's freeze");
    assert!(st.leftovers().is_empty());
    assert_eq!(sb_field(&dev, "Mount count"), "1", "nothing recorded");

    // Read-only: nothing to freeze, the message says what to run.
    run_ok(
        Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(st.mnt()),
    );
    let before = hash_file(&st.image);
    let r = online(&[], st.mnt());
    assert_eq!(r.code(), Some(8), "{}", r.dump(4000));
    assert!(
        r.stderr.contains("read-only") && r.stderr.contains("pfsck -fn"),
        "{}",
        r.dump(4000)
    );
    assert_eq!(hash_file(&st.image), before);
    assert!(st.leftovers().is_empty());

    // A backing file that cannot be cloned (ext4 or tmpfs under /tmp).
    let img = st.dir.join("plain.img");
    mkfs(&img, 16 << 20, &MkfsOpts::ext4(), None);
    let plain = mount(&img, &st.dir.join("plain"), "rw").unwrap();
    let r = online(&[], &plain.0);
    assert_eq!(r.code(), Some(8), "{}", r.dump(4000));
    assert!(
        r.stderr.contains("cannot make reflink copies"),
        "{}",
        r.dump(4000)
    );
    assert!(!frozen(&plain.0));
}

#[test]
fn e2scrub_entry_point() {
    let Some(st) = stack("e2scrub", "xfs", |img| {
        debugfs_w(img, &["sif /dir1/a.txt links_count 2"]);
    }) else {
        return;
    };
    let scrub = |args: &[&str]| {
        let mut cmd = Command::new(pfsck_bin());
        cmd.arg("--e2scrub").args(args).arg(st.mnt());
        run_timeout(cmd, LIMIT)
    };
    let r = scrub(&["-n"]);
    assert_eq!(r.code(), Some(0), "{}", r.dump(4000));
    assert!(
        r.stdout.contains("Would snapshot") && r.stdout.contains(": freeze"),
        "{}",
        r.dump(4000)
    );
    assert_eq!(scrub(&["-r"]).code(), Some(0));
    assert_eq!(scrub(&["-x"]).code(), Some(2));
    let r = scrub(&[]);
    assert_eq!(r.code(), Some(6), "{}", r.dump(4000));
    assert!(r.stdout.contains("found problems"), "{}", r.dump(4000));
    assert_eq!(
        sb_field(&source_of(st.mnt()), "Filesystem state"),
        "clean with errors"
    );
    // Not ext2/3/4: e2scrub's 16.
    let mut cmd = Command::new(pfsck_bin());
    cmd.arg("--e2scrub").arg(&st.backing.0);
    assert_eq!(run_timeout(cmd, LIMIT).code(), Some(16));
}

#[test]
fn clean_on_btrfs() {
    let Some(st) = stack("btrfs", "btrfs", |_| {}) else {
        return;
    };
    let r = online(&["-n", "--json"], st.mnt());
    assert_eq!(r.code(), Some(0), "{}", r.dump(4000));
    assert_eq!(json(&r)["online"]["mechanism"], "reflink");
    assert!(
        st.leftovers().is_empty(),
        "left behind: {:?}",
        st.leftovers()
    );
}

/// A VM-style image with a partition table: the file system starts 1 MiB
/// into the backing file, behind `losetup -P`'s partition device.
#[test]
fn partition_of_a_loop_device() {
    let Some(st) = stack("partition", "xfs", |_| {}) else {
        return;
    };
    let img = st.backing.0.join("disk.img");
    let (start, sectors) = (2048u32, 64 * 2048u32);
    File::create(&img)
        .unwrap()
        .set_len(u64::from(start + sectors) * 512)
        .unwrap();
    // One MBR entry: type 0x83 from sector 2048; CHS fields unused.
    let mut mbr = vec![0u8; 512];
    mbr[446 + 4] = 0x83;
    mbr[446 + 8..446 + 12].copy_from_slice(&start.to_le_bytes());
    mbr[446 + 12..446 + 16].copy_from_slice(&sectors.to_le_bytes());
    mbr[510..512].copy_from_slice(&[0x55, 0xAA]);
    write_at(&img, 0, &mbr);
    let out = run_ok(
        Command::new("losetup")
            .args(["-P", "-f", "--show"])
            .arg(&img),
    );
    let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let name = dev.trim_start_matches("/dev/").to_string();
    let detach = || {
        let _ = Command::new("losetup").args(["-d", &dev]).status();
    };
    let result = std::panic::catch_unwind(|| {
        // Without udev the partition may need adding, and its node making.
        let _ = Command::new("partx")
            .args(["-a", &dev])
            .stderr(Stdio::null())
            .status();
        let sys = PathBuf::from(format!("/sys/block/{name}/{name}p1/dev"));
        let start = Instant::now();
        while !sys.exists() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no partition on {dev}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut part = PathBuf::from(format!("{dev}p1"));
        if !part.exists() {
            let majmin = fs::read_to_string(&sys).unwrap();
            let (ma, mi) = majmin.trim().split_once(':').unwrap();
            part = st.dir.join(format!("{name}p1"));
            run_ok(Command::new("mknod").arg(&part).args(["b", ma, mi]));
        }
        run_ok(
            Command::new(tool("mke2fs"))
                .args(["-q", "-t", "ext4", "-b", "4096"])
                .arg(&part),
        );
        let mnt = st.dir.join("part");
        fs::create_dir_all(&mnt).unwrap();
        run_ok(Command::new("mount").arg(&part).arg(&mnt));
        let m = Mounted(mnt);
        fs::write(m.0.join("hello"), b"partitioned").unwrap();
        let r = online(&["--json"], &m.0);
        assert_eq!(r.code(), Some(0), "{}", r.dump(4000));
        let v = json(&r);
        assert_eq!(v["online"]["mechanism"], "reflink");
        assert_eq!(v["online"]["snapshot_of"], img.display().to_string());
        assert_eq!(v["device"], part.display().to_string());
        assert_eq!(
            sb_field(&part, "Mount count"),
            "0",
            "check recorded on the partition"
        );
    });
    detach();
    result.unwrap();
    assert_eq!(st.leftovers(), ["disk.img"]);
}

/// LVM as e2scrub uses it; needs device-mapper and lvm2, which many test
/// machines (this project's included) do not have.
#[test]
fn lvm_snapshot() {
    if !can_mount("lvm") {
        return;
    }
    if !Path::new("/dev/mapper/control").exists() || try_tool("lvcreate").is_none() {
        eprintln!("notice: no device-mapper or lvm2 here; online LVM test skipped");
        return;
    }
    let dir = TempDir::new("online-lvm");
    let pv = dir.join("pv.img");
    File::create(&pv).unwrap().set_len(512 << 20).unwrap();
    let out = run_ok(Command::new("losetup").args(["-f", "--show"]).arg(&pv));
    let loopdev = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let vg = format!("pfsckvg{}", std::process::id());
    let cleanup = |mnt: Option<&Path>| {
        if let Some(m) = mnt {
            let _ = Command::new("umount").arg(m).status();
        }
        let _ = Command::new("vgremove").args(["-f", &vg]).status();
        let _ = Command::new("pvremove").arg(&loopdev).status();
        let _ = Command::new("losetup").args(["-d", &loopdev]).status();
    };
    let result = std::panic::catch_unwind(|| {
        run_ok(Command::new("pvcreate").arg(&loopdev));
        run_ok(Command::new("vgcreate").arg(&vg).arg(&loopdev));
        run_ok(Command::new("lvcreate").args(["-L", "128m", "-n", "data", &vg, "-y"]));
        let lv = PathBuf::from(format!("/dev/{vg}/data"));
        run_ok(
            Command::new(tool("mke2fs"))
                .args(["-q", "-t", "ext4"])
                .arg(&lv),
        );
        let mnt = dir.join("mnt");
        fs::create_dir_all(&mnt).unwrap();
        run_ok(Command::new("mount").arg(&lv).arg(&mnt));
        let r = online(&["--json"], &mnt);
        let _ = Command::new("umount").arg(&mnt).status();
        assert_eq!(r.code(), Some(0), "{}", r.dump(4000));
        let v = json(&r);
        assert_eq!(v["online"]["mechanism"], "lvm");
        assert_eq!(v["online"]["frozen_is_upper_bound"], true);
        let lvs = run_ok(Command::new("lvs").args(["--noheadings", "-o", "lv_name", &vg]));
        assert!(
            !String::from_utf8_lossy(&lvs.stdout).contains("e2scrub"),
            "snapshot left"
        );
    });
    cleanup(Some(&dir.join("mnt")));
    result.unwrap();
}
