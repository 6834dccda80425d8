//! Crash safety of the repair commit (issue 3).
//!
//! Random block changes are staged on real images (made with mke2fs), and
//! the commit is stopped right after each of its writes, fsyncs and renames
//! in turn. Two crash models: SIGKILL (every write done so far stays) and
//! power loss (writes no fsync covered are undone, renames no directory
//! fsync covered are undone). After every crash the recovery a user would
//! run (`rollback`) must give back the original image byte for byte, and
//! committing again must give exactly what an uninterrupted commit gives.
//! Rollback itself is interrupted at every point too. Also: damaged logs
//! are refused without touching the device, rollback is idempotent, the
//! log is tied to its device, the CLI's `--rollback`, and a mounted image
//! is refused (skipped with a notice where mounting is not permitted).

use crate::common::*;
use pfsck::fs::num::Blk;
use pfsck::store::StoreError;
use pfsck::store::commit::{self, CommitOptions, RollbackOutcome, RollbackScope, commit, rollback};
use pfsck::store::faults::{Crash, FailAfter, Faults, NoFaults, Op};
use pfsck::store::overlay::{Overlay, Staging};
use pfsck::store::undo::{self, State};
use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

const IMAGE_SIZE: u64 = 8 << 20;

fn base_image(block_size: u32) -> PathBuf {
    cached_image(&format!("repair-base-{block_size}"), |img| {
        mkfs(
            img,
            IMAGE_SIZE,
            &MkfsOpts::ext4().block_size(block_size),
            Some(&standard_tree_dir()),
        );
    })
}

/// Stages `n` random blocks: the superblock's block, a run of adjacent
/// blocks (so coalesced writes are exercised) and random others. All but
/// the first four go to a spill file, as a large repair's do.
fn stage_random(block_size: u32, n: usize, seed: u64) -> Overlay {
    let dir = TempDir::new(&format!("spill-{block_size}-{n}-{seed}"));
    let o = stage_random_in(block_size, n, seed, &spilling(&dir, block_size));
    // The spill file has no name: it outlives its directory.
    drop(dir);
    assert!(o.spilled_blocks() > 0 || n <= 4);
    o
}

/// Staging that keeps four blocks in memory and spills the rest to `dir`.
fn spilling(dir: &TempDir, block_size: u32) -> Staging {
    Staging {
        limit: 64 << 20,
        memory: 4 * u64::from(block_size),
        spill_dir: Some(dir.path().to_path_buf()),
    }
}

fn stage_random_in(block_size: u32, n: usize, seed: u64, staging: &Staging) -> Overlay {
    let mut o = Overlay::with_staging(block_size, IMAGE_SIZE, staging).unwrap();
    let nblocks = IMAGE_SIZE / u64::from(block_size);
    let mut rng = XorShift::new(seed);
    let sb_block = if block_size == 1024 { 1 } else { 0 };
    let mut blocks = vec![sb_block];
    let run = 5 + rng.below(nblocks - 10);
    blocks.extend(run..run + 5);
    while blocks.len() < n {
        blocks.push(rng.below(nblocks));
    }
    for b in blocks {
        let mut data = vec![0u8; block_size as usize];
        rng.fill(&mut data);
        o.stage(Blk(b), data).unwrap();
    }
    o
}

fn expected_after(original: &[u8], o: &Overlay) -> Vec<u8> {
    let mut img = original.to_vec();
    let bs = o.block_size() as usize;
    for r in o.iter() {
        let (b, data) = r.unwrap();
        let off = b.get() as usize * bs;
        img[off..off + bs].copy_from_slice(&data);
    }
    img
}

/// Power loss: what fsync did not cover is lost.
struct PowerLoss {
    fail: FailAfter,
    /// (file, offset, bytes it overwrote, file length before) per write not
    /// yet covered by an fsync of that file.
    unsynced: Vec<(PathBuf, u64, Vec<u8>, u64)>,
    /// Renames not yet covered by an fsync of their directory.
    renames: Vec<(PathBuf, PathBuf)>,
}

impl PowerLoss {
    fn new(n: u64) -> PowerLoss {
        PowerLoss {
            fail: FailAfter::new(n),
            unsynced: Vec::new(),
            renames: Vec::new(),
        }
    }

    /// Undoes, newest first, everything that was not durable.
    fn lose_unsynced(&mut self) {
        for (path, offset, old, old_len) in self.unsynced.drain(..).rev() {
            let f = OpenOptions::new().write(true).open(&path).unwrap();
            f.write_all_at(&old, offset).unwrap();
            if f.metadata().unwrap().len() > old_len {
                f.set_len(old_len).unwrap();
            }
        }
        for (from, to) in self.renames.drain(..).rev() {
            fs::rename(&to, &from).unwrap();
        }
    }
}

impl Faults for PowerLoss {
    fn before(&mut self, op: &Op<'_>) {
        if let Op::Write { file, offset, len } = *op {
            let len_now = fs::metadata(file).map(|m| m.len()).unwrap_or(0);
            let avail = len_now.saturating_sub(offset).min(len as u64) as usize;
            let mut old = vec![0u8; avail];
            if avail > 0 {
                fs::File::open(file)
                    .unwrap()
                    .read_exact_at(&mut old, offset)
                    .unwrap();
            }
            self.unsynced
                .push((file.to_path_buf(), offset, old, len_now));
        }
    }

    fn after(&mut self, op: &Op<'_>) -> Result<(), Crash> {
        match *op {
            Op::Sync { file } => self.unsynced.retain(|u| u.0 != file),
            Op::Rename { from, to } => {
                for u in &mut self.unsynced {
                    if u.0 == from {
                        u.0 = to.to_path_buf();
                    }
                }
                self.renames.push((from.to_path_buf(), to.to_path_buf()));
            }
            Op::SyncDir { .. } => self.renames.clear(),
            Op::Write { .. } => {}
        }
        self.fail.after(op)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Model {
    Kill,
    PowerLoss,
}

fn log_state(log: &Path) -> Option<State> {
    let bytes = fs::read(log).ok()?;
    undo::parse(&bytes).ok().map(|l| l.state)
}

/// What a user does after a crash: roll back whatever the log says was
/// interrupted. Afterwards the image must be the original.
fn recover(log: &Path, img: &Path, original: &[u8], expected: &[u8], ctx: &str) {
    match log_state(log) {
        None => {
            // No log at its final name: the commit stopped before the
            // rename was durable, so the device was never touched.
            assert!(
                !log.exists() || fs::read(log).unwrap().is_empty(),
                "{ctx}: unparseable log left behind"
            );
            assert!(
                fs::read(img).unwrap() == original,
                "{ctx}: device touched without a log"
            );
        }
        Some(State::Complete) => {
            assert!(
                fs::read(img).unwrap() == expected,
                "{ctx}: complete log, image not repaired"
            );
            let r = rollback(log, img, RollbackScope::Interrupted, &mut NoFaults);
            assert!(matches!(r, Err(StoreError::Refused(_))), "{ctx}: {r:?}");
            let r = rollback(log, img, RollbackScope::IncludingComplete, &mut NoFaults);
            assert!(
                matches!(r, Ok(RollbackOutcome::Restored { .. })),
                "{ctx}: {r:?}"
            );
        }
        Some(st) => {
            let r = rollback(log, img, RollbackScope::Interrupted, &mut NoFaults)
                .unwrap_or_else(|e| panic!("{ctx}: rollback of a {st:?} log failed: {e}"));
            if st == State::Prepared {
                assert_eq!(r, RollbackOutcome::DeviceUntouched, "{ctx}");
            }
        }
    }
    assert!(
        fs::read(img).unwrap() == original,
        "{ctx}: image differs from the original after rollback"
    );
}

fn dense() -> CommitOptions {
    CommitOptions {
        log_write_chunk: 0,
        device_write_run: 0,
        read_only_mount: false,
        primary_guard: false,
    }
}

/// The commit's defaults, without the guard of the primary superblock
/// and descriptors: these tests stage random bytes there on purpose, to
/// test the protocol (the device's identity is its superblock's bytes).
fn raw_opts() -> CommitOptions {
    CommitOptions {
        primary_guard: false,
        ..CommitOptions::default()
    }
}

/// Counts the operations of an uninterrupted commit and checks its result.
fn count_points(base: &Path, o: &Overlay, opts: &CommitOptions, tmp: &TempDir) -> u64 {
    let img = tmp.join("count.img");
    let log = tmp.join("count.undo");
    copy_image(base, &img);
    let original = fs::read(&img).unwrap();
    let mut counter = FailAfter::never();
    let rep = commit(&img, o, &log, &mut counter, opts).unwrap();
    assert_eq!(rep.blocks_written, o.len() as u64);
    assert!(fs::read(&img).unwrap() == expected_after(&original, o));
    assert_eq!(log_state(&log), Some(State::Complete));
    assert!(!tmp.join("count.undo.tmp").exists());
    counter.performed
}

fn crash_matrix(block_size: u32, model: Model, opts: CommitOptions, n: usize, min_points: u64) {
    let tmp = TempDir::new(&format!("crash-{block_size}-{model:?}"));
    let base = base_image(block_size);
    let original = fs::read(&base).unwrap();
    let o = stage_random(block_size, n, u64::from(block_size) ^ 0xC0FFEE);
    let expected = expected_after(&original, &o);
    let total = count_points(&base, &o, &opts, &tmp);
    assert!(
        total >= min_points,
        "only {total} crash points (want at least {min_points})"
    );
    let img = tmp.join("disk.img");
    let log = tmp.join("disk.img.pfsck-undo");
    for k in 1..=total {
        let ctx = format!("{block_size}-byte blocks, {model:?} after operation {k} of {total}");
        copy_image(&base, &img);
        let _ = fs::remove_file(&log);
        let r = match model {
            Model::Kill => commit(&img, &o, &log, &mut FailAfter::new(k), &opts),
            Model::PowerLoss => {
                let mut pl = PowerLoss::new(k);
                let r = commit(&img, &o, &log, &mut pl, &opts);
                pl.lose_unsynced();
                r
            }
        };
        assert!(matches!(r, Err(StoreError::Crash)), "{ctx}: {r:?}");
        recover(&log, &img, &original, &expected, &ctx);
        // Run the repair again: it completes, exactly as if never stopped.
        let rep = commit(&img, &o, &log, &mut NoFaults, &opts)
            .unwrap_or_else(|e| panic!("{ctx}: commit after recovery failed: {e}"));
        assert_eq!(rep.blocks_written, o.len() as u64, "{ctx}");
        assert!(fs::read(&img).unwrap() == expected, "{ctx}: redo differs");
        assert_eq!(log_state(&log), Some(State::Complete), "{ctx}");
    }
    eprintln!("{block_size}-byte blocks, {model:?}: {total} crash points, all recovered");
}

#[test]
fn crash_at_every_point_kill_4k() {
    crash_matrix(4096, Model::Kill, dense(), 40, 50);
}

#[test]
fn crash_at_every_point_power_loss_4k() {
    crash_matrix(4096, Model::PowerLoss, dense(), 40, 50);
}

#[test]
fn crash_at_every_point_kill_1k() {
    crash_matrix(1024, Model::Kill, dense(), 30, 50);
}

#[test]
fn crash_at_every_point_power_loss_1k() {
    crash_matrix(1024, Model::PowerLoss, dense(), 30, 50);
}

/// The production setting: writes gathered into chunks and runs.
#[test]
fn crash_at_every_point_default_batching() {
    crash_matrix(4096, Model::Kill, raw_opts(), 40, 9);
    crash_matrix(1024, Model::PowerLoss, raw_opts(), 40, 9);
}

/// Rollback stopped after each of its own operations, from logs of repairs
/// interrupted at several points, then rolled back again to the end.
#[test]
fn interrupted_rollback_can_be_redone() {
    let tmp = TempDir::new("rollback-crash");
    let base = base_image(4096);
    let original = fs::read(&base).unwrap();
    let o = stage_random(4096, 30, 77);
    let expected = expected_after(&original, &o);
    let total = count_points(&base, &o, &dense(), &tmp);
    let img = tmp.join("disk.img");
    let log = tmp.join("disk.undo");
    let mut tried = 0;
    // Interrupted in the middle of the device writes, right after the last
    // device write, and after a complete repair (an explicit undo).
    for commit_point in [total - 20, total - 3, total] {
        for model in [Model::Kill, Model::PowerLoss] {
            for j in 1.. {
                let ctx = format!("commit stopped at {commit_point}, rollback at {j}, {model:?}");
                copy_image(&base, &img);
                let _ = fs::remove_file(&log);
                if commit_point == total {
                    commit(&img, &o, &log, &mut NoFaults, &dense()).unwrap();
                } else {
                    let r = commit(&img, &o, &log, &mut FailAfter::new(commit_point), &dense());
                    assert!(matches!(r, Err(StoreError::Crash)), "{ctx}");
                }
                let scope = RollbackScope::IncludingComplete;
                let r = match model {
                    Model::Kill => rollback(&log, &img, scope, &mut FailAfter::new(j)),
                    Model::PowerLoss => {
                        let mut pl = PowerLoss::new(j);
                        let r = rollback(&log, &img, scope, &mut pl);
                        pl.lose_unsynced();
                        r
                    }
                };
                let finished = r.is_ok();
                if !finished {
                    assert!(matches!(r, Err(StoreError::Crash)), "{ctx}: {r:?}");
                    tried += 1;
                }
                let r = rollback(&log, &img, scope, &mut NoFaults);
                assert!(
                    matches!(r, Ok(RollbackOutcome::Restored { .. })),
                    "{ctx}: {r:?}"
                );
                assert!(
                    fs::read(&img).unwrap() == original,
                    "{ctx}: not the original"
                );
                commit(&img, &o, &log, &mut NoFaults, &dense()).unwrap();
                assert!(fs::read(&img).unwrap() == expected, "{ctx}: redo differs");
                if finished {
                    break;
                }
            }
        }
    }
    assert!(tried >= 50, "only {tried} rollback crash points");
    eprintln!("{tried} interrupted rollbacks, all redone");
}

/// Commits fully, then leaves the image in the middle of the repair with an
/// `Applying` log: the state damaged logs are tested against.
fn interrupted(tmp: &TempDir, o: &Overlay) -> (PathBuf, PathBuf, Vec<u8>) {
    let base = base_image(4096);
    let img = tmp.join("disk.img");
    let log = tmp.join("disk.undo");
    copy_image(&base, &img);
    let total = count_points(&base, o, &dense(), tmp);
    let r = commit(&img, o, &log, &mut FailAfter::new(total - 10), &dense());
    assert!(matches!(r, Err(StoreError::Crash)));
    assert_eq!(log_state(&log), Some(State::Applying));
    (img, log, fs::read(&base).unwrap())
}

#[test]
fn damaged_logs_are_refused_without_touching_the_device() {
    let tmp = TempDir::new("damaged-log");
    let o = stage_random(4096, 20, 5);
    let (img, log, original) = interrupted(&tmp, &o);
    let good = fs::read(&log).unwrap();
    let mid = fs::read(&img).unwrap();
    let bad = tmp.join("bad.undo");
    let rec0 = undo::HEADER_LEN;
    let mut cases: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), Vec::new()),
        ("not a log".into(), b"hello, world\n".repeat(1000)),
        ("trailer missing".into(), good[..good.len() - 1].to_vec()),
        ("header only".into(), good[..undo::HEADER_LEN].to_vec()),
        ("one byte longer".into(), [&good[..], &[0u8]].concat()),
    ];
    for cut in [10, 600, rec0 + 5, rec0 + 4096, good.len() / 2] {
        cases.push((format!("truncated at {cut}"), good[..cut].to_vec()));
    }
    for (what, at) in [
        ("magic", 0),
        ("block size", 17),
        ("device size", 26),
        ("record magic", rec0),
        ("record block number", rec0 + 9),
        ("record data", rec0 + 2000),
        ("last record data", good.len() - 30),
        ("trailer crc", good.len() - 2),
    ] {
        let mut c = good.clone();
        c[at] ^= 0x10;
        cases.push((format!("flipped {what}"), c));
    }
    for (what, bytes) in &cases {
        fs::write(&bad, bytes).unwrap();
        for scope in [RollbackScope::Interrupted, RollbackScope::IncludingComplete] {
            let r = rollback(&bad, &img, scope, &mut NoFaults);
            assert!(matches!(r, Err(StoreError::BadLog(_))), "{what}: {r:?}");
        }
        assert!(fs::read(&img).unwrap() == mid, "{what}: device touched");
        // A repair refuses to overwrite it.
        let r = commit(&img, &o, &bad, &mut NoFaults, &dense());
        assert!(
            matches!(r, Err(StoreError::Refused(_))),
            "{what}: commit over it: {r:?}"
        );
    }
    let r = rollback(
        &tmp.join("missing"),
        &img,
        RollbackScope::Interrupted,
        &mut NoFaults,
    );
    assert!(matches!(r, Err(StoreError::BadLog(_))), "{r:?}");
    // The intact log still works.
    rollback(&log, &img, RollbackScope::Interrupted, &mut NoFaults).unwrap();
    assert!(fs::read(&img).unwrap() == original);
}

#[test]
fn rollback_twice_is_idempotent() {
    let tmp = TempDir::new("rollback-twice");
    let base = base_image(1024);
    let img = tmp.join("disk.img");
    let log = tmp.join("disk.undo");
    copy_image(&base, &img);
    let original = fs::read(&img).unwrap();
    let o = stage_random(1024, 25, 9);
    commit(&img, &o, &log, &mut NoFaults, &raw_opts()).unwrap();
    assert!(fs::read(&img).unwrap() == expected_after(&original, &o));
    for round in 0..3 {
        let r = rollback(&log, &img, RollbackScope::IncludingComplete, &mut NoFaults).unwrap();
        assert!(
            matches!(r, RollbackOutcome::Restored { blocks: 25, .. }),
            "{r:?}"
        );
        assert!(fs::read(&img).unwrap() == original, "round {round}");
        assert_eq!(log_state(&log), Some(State::RolledBack));
    }
    // A rolled-back log may be rolled back again without the explicit scope.
    rollback(&log, &img, RollbackScope::Interrupted, &mut NoFaults).unwrap();
    assert!(fs::read(&img).unwrap() == original);
    // The file system is the one mke2fs made.
    assert_eq!(e2fsck_fn(&img), 0);
}

#[test]
fn log_is_tied_to_its_device() {
    let tmp = TempDir::new("identity");
    let o = stage_random(4096, 20, 11);
    let (img, log, _) = interrupted(&tmp, &o);
    // Another file system of the same size.
    let other = tmp.join("other.img");
    copy_image(&base_image(4096), &other);
    debugfs_w(&other, &["ssv mnt_count 17"]);
    let before = fs::read(&other).unwrap();
    let r = rollback(&log, &other, RollbackScope::Interrupted, &mut NoFaults);
    assert!(matches!(r, Err(StoreError::Refused(_))), "{r:?}");
    assert!(fs::read(&other).unwrap() == before);
    // A device of another size.
    let short = tmp.join("short.img");
    copy_image(&img, &short);
    OpenOptions::new()
        .write(true)
        .open(&short)
        .unwrap()
        .set_len(IMAGE_SIZE - 4096)
        .unwrap();
    let r = rollback(&log, &short, RollbackScope::Interrupted, &mut NoFaults);
    assert!(matches!(r, Err(StoreError::Refused(_))), "{r:?}");
    // A repair will not start over an interrupted one's log.
    let r = commit(&img, &o, &log, &mut NoFaults, &dense());
    assert!(matches!(r, Err(StoreError::Refused(_))), "{r:?}");
    // A completed repair whose file system changed since is not undone.
    rollback(&log, &img, RollbackScope::Interrupted, &mut NoFaults).unwrap();
    commit(&img, &o, &log, &mut NoFaults, &dense()).unwrap();
    let mut sb = read_at(&img, 1024, 1024);
    sb[0x34] ^= 1; // s_mnt_count, as a mount would change it
    write_at(&img, 1024, &sb);
    let r = rollback(&log, &img, RollbackScope::IncludingComplete, &mut NoFaults);
    assert!(matches!(r, Err(StoreError::Refused(_))), "{r:?}");
}

#[test]
fn nothing_to_write_writes_no_log() {
    let tmp = TempDir::new("noop");
    let img = tmp.join("disk.img");
    let log = tmp.join("disk.undo");
    copy_image(&base_image(4096), &img);
    let mut o = Overlay::new(4096, IMAGE_SIZE, 1 << 20).unwrap();
    o.stage(Blk(3), read_at(&img, 3 * 4096, 4096)).unwrap();
    let rep = commit(&img, &o, &log, &mut NoFaults, &dense()).unwrap();
    assert_eq!(rep.blocks_written, 0);
    assert!(!log.exists());
    // An overlay made for another device size is refused.
    let o = Overlay::new(4096, IMAGE_SIZE * 2, 1 << 20).unwrap();
    assert!(matches!(
        commit(&img, &o, &log, &mut NoFaults, &dense()),
        Err(StoreError::Refused(_))
    ));
}

#[test]
fn cli_rollback() {
    let tmp = TempDir::new("cli-rollback");
    let img = tmp.join("disk.img");
    copy_image(&base_image(4096), &img);
    let original = fs::read(&img).unwrap();
    let log = pfsck::store::default_undo_path(&img);
    assert_eq!(log, tmp.join("disk.img.pfsck-undo"));
    let o = stage_random(4096, 12, 3);
    commit(&img, &o, &log, &mut NoFaults, &raw_opts()).unwrap();

    let out = pfsck(&["--rollback".as_ref(), log.as_os_str(), img.as_os_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("12 blocks"), "{stdout}");
    assert!(fs::read(&img).unwrap() == original);

    let garbage = tmp.join("garbage");
    fs::write(&garbage, b"not a log").unwrap();
    let out = pfsck(&["--rollback".as_ref(), garbage.as_os_str(), img.as_os_str()]);
    assert_eq!(out.status.code(), Some(8));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a pfsck undo log"));

    // -z names the log like --undo; a clean image gives a repair nothing
    // to fix, so only the check's record changes in the image, written
    // without a log: the log stays as it was.
    let log_before = fs::read(&log).unwrap();
    let out = pfsck(&[
        "-fy".as_ref(),
        "-z".as_ref(),
        log.as_os_str(),
        img.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_only_check_record_changed(&original, &fs::read(&img).unwrap());
    assert!(fs::read(&log).unwrap() == log_before);
}

/// Unmounts (and detaches the loop device) even when the test fails.
struct Mounted {
    dir: PathBuf,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).output();
    }
}

#[test]
fn mounted_image_is_refused() {
    let tmp = TempDir::new("mounted");
    let img = tmp.join("disk.img");
    let dir = tmp.join("mnt");
    fs::create_dir(&dir).unwrap();
    copy_image(&base_image(4096), &img);
    let out = Command::new("mount")
        .args(["-o", "loop,ro"])
        .arg(&img)
        .arg(&dir)
        .output();
    let ok = matches!(&out, Ok(o) if o.status.success());
    if !ok {
        eprintln!(
            "NOTICE: mounted_image_is_refused skipped: cannot mount a loop image here ({})",
            match &out {
                Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                Err(e) => e.to_string(),
            }
        );
        return;
    }
    let guard = Mounted { dir: dir.clone() };
    let before = fs::read(&img).unwrap();
    let log = tmp.join("disk.undo");
    let e = pfsck::store::mounted::ensure_not_mounted(&img, false).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, StoreError::Mounted(_)), "{e:?}");
    assert!(msg.contains(&dir.display().to_string()), "{msg}");
    let o = stage_random(4096, 5, 1);
    let r = commit(&img, &o, &log, &mut NoFaults, &dense());
    assert!(matches!(r, Err(StoreError::Mounted(_))), "{r:?}");
    assert!(!log.exists());
    assert!(fs::read(&img).unwrap() == before);
    drop(guard);
    // Unmounted, the same commit goes through.
    commit(&img, &o, &log, &mut NoFaults, &dense()).unwrap();
    assert!(commit::read_log(&log).is_ok());
}

/// Detaches a loop device even when the test fails.
struct Loop {
    dev: PathBuf,
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dev).output();
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).output();
    }
}

/// The block device path: a loop device over an image is committed to and
/// rolled back like the image, and refused while mounted.
#[test]
fn block_device_commit_rollback_and_mounted_refusal() {
    let tmp = TempDir::new("blockdev");
    let img = tmp.join("disk.img");
    copy_image(&base_image(4096), &img);
    let original = fs::read(&img).unwrap();
    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&img)
        .output();
    let dev = match &out {
        Ok(o) if o.status.success() => {
            PathBuf::from(String::from_utf8_lossy(&o.stdout).trim().to_string())
        }
        _ => {
            eprintln!("NOTICE: block device test skipped: cannot set up a loop device here");
            return;
        }
    };
    let lo = Loop { dev: dev.clone() };
    assert_eq!(
        pfsck::store::default_undo_path(&dev),
        Path::new("/var/lib/pfsck").join(format!(
            "{}.pfsck-undo",
            dev.file_name().unwrap().to_string_lossy()
        ))
    );
    let log = tmp.join("loop.undo");
    let o = stage_random(4096, 20, 21);
    commit(&dev, &o, &log, &mut NoFaults, &raw_opts()).unwrap();
    drop(lo); // detaching flushes the loop device's cache to the image
    assert!(fs::read(&img).unwrap() == expected_after(&original, &o));

    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&img)
        .output()
        .unwrap();
    let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
    let lo = Loop { dev: dev.clone() };
    rollback(&log, &dev, RollbackScope::IncludingComplete, &mut NoFaults).unwrap();
    let mnt = tmp.join("mnt");
    fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-o", "ro"])
        .arg(&dev)
        .arg(&mnt)
        .output()
        .is_ok_and(|o| o.status.success());
    if mounted {
        let r = commit(&dev, &o, &log, &mut NoFaults, &dense());
        assert!(matches!(r, Err(StoreError::Mounted(_))), "{r:?}");
        let r = rollback(&log, &dev, RollbackScope::IncludingComplete, &mut NoFaults);
        assert!(matches!(r, Err(StoreError::Mounted(_))), "{r:?}");
    } else {
        eprintln!("NOTICE: mounting a loop device is not permitted here; refusal not tested");
    }
    drop(lo);
    assert!(fs::read(&img).unwrap() == original);
}

/// Spilled, in memory, or a round's overlay over an earlier one's: the
/// same staged blocks commit to the same image and the same undo log.
#[test]
fn spilled_staging_commits_as_in_memory_staging_does() {
    let tmp = TempDir::new("spill-equal");
    let base = base_image(4096);
    let original = fs::read(&base).unwrap();
    let memory = stage_random_in(4096, 60, 99, &Staging::in_memory(64 << 20));
    let spilled = stage_random(4096, 60, 99);
    assert_eq!(memory.spilled_blocks(), 0);
    assert!(spilled.spilled_blocks() >= 50);
    // The first half's staging in one overlay, the last two thirds in one
    // over it (a block staged below with other contents, staged again).
    let all: Vec<(Blk, Vec<u8>)> = memory.iter().map(|r| r.unwrap()).collect();
    let n = all.len();
    assert!(n > 50, "random blocks repeat rarely");
    let dir = TempDir::new("spill-layers");
    let mut lower = Overlay::with_staging(4096, IMAGE_SIZE, &spilling(&dir, 4096)).unwrap();
    for (b, d) in &all[..n / 2] {
        lower.stage(*b, vec![0x5A; 4096]).unwrap();
        lower.stage(*b, d.clone()).unwrap();
    }
    lower.stage(all[n - 1].0, vec![0xA5; 4096]).unwrap();
    let mut upper = Overlay::over(Arc::new(lower));
    for (b, d) in &all[n / 3..] {
        upper.stage(*b, d.clone()).unwrap();
    }
    let mut results = Vec::new();
    for (name, o) in [
        ("memory", &memory),
        ("spilled", &spilled),
        ("layered", &upper),
    ] {
        let img = tmp.join(format!("{name}.img"));
        let log = tmp.join(format!("{name}.undo"));
        copy_image(&base, &img);
        let rep = commit(&img, o, &log, &mut NoFaults, &raw_opts()).unwrap();
        assert_eq!(rep.blocks_written, n as u64, "{name}");
        let after = fs::read(&img).unwrap();
        assert!(after == expected_after(&original, &memory), "{name}");
        results.push((after, fs::read(&log).unwrap()));
    }
    assert!(results[0] == results[1], "spilled commit differs");
    assert!(results[0] == results[2], "layered commit differs");
}
