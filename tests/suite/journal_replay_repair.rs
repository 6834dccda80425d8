//! `pfsck -fy`/`-p` replay the journal for real, through the crash-safe
//! commit, and leave what `e2fsck -fy` leaves.
//!
//! Transactions are written with debugfs's journal commands (the helpers
//! of `common::journal`). Copy A goes through `e2fsck -fy`, copy B through
//! pfsck; then every block of A and B must be equal, the superblock aside
//! for the fields each tool sets itself (times, mount count, kbytes
//! written, and so the checksum), whose other bytes must be equal too; the
//! journal superblock must be byte-identical (s_start 0, the same next
//! sequence). `e2fsck -fn` and `pfsck -fn` must find B clean, the exit
//! code must be e2fsck's, and `--rollback` must restore B's original bytes.
//!
//! The e2fsprogs `j_*` and `f_jnl*` images, when present, go through the same
//! comparison, the fast-commit one included (its fast-commit records are
//! replayed after the log).

use crate::common::journal::*;
use crate::common::*;
use std::path::Path;

fn run_code(out: &std::process::Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// Replays `img` with e2fsck (copy A) and with `pfsck mode` (copy B) and
/// compares them; returns pfsck's stdout.
fn assert_replay_matches_e2fsck(dir: &TempDir, img: &Path, mode: &str) -> String {
    let a = dir.join("A");
    let b = dir.join("B");
    copy_image(img, &a);
    copy_image(img, &b);
    let e2 = e2fsck(&a, &[mode]);
    let out = pfsck(&[mode.as_ref(), b.as_os_str()]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let ctx = format!(
        "pfsck {mode}: {stdout}{}\ne2fsck {mode}: {}",
        String::from_utf8_lossy(&out.stderr),
        e2.stdout
    );
    assert_eq!(Some(run_code(&out)), e2.code(), "exit codes differ\n{ctx}");
    let name = b.display().to_string();
    assert!(
        stdout.contains(&format!("{name}: replaying the journal")),
        "no recovering line\n{ctx}"
    );

    let (ia, ib) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(ia.len(), ib.len());
    let bs = dumpe2fs(img).block_size as usize;
    let sb_blk = 1024 / bs;
    let mut differ = Vec::new();
    for (n, (x, y)) in ia.chunks(bs).zip(ib.chunks(bs)).enumerate() {
        if x == y {
            continue;
        }
        if n == sb_blk {
            // Outside the superblock's own 1024 bytes the block must match.
            let off = 1024 % bs;
            let outside = |v: &[u8]| {
                let mut v = v.to_vec();
                v[off..off + 1024].fill(0);
                v
            };
            if outside(x) == outside(y) && masked_sb(&ia) == masked_sb(&ib) {
                continue;
            }
        }
        differ.push(n);
    }
    assert!(
        differ.is_empty(),
        "blocks differing from e2fsck's: {differ:?}\n{ctx}"
    );
    let info = dumpe2fs(&b);
    assert!(
        !info.has_feature("needs_recovery"),
        "needs_recovery left set"
    );

    assert_eq!(e2fsck_fn(&b), 0, "e2fsck -fn after pfsck {mode}");
    let again = pfsck(&["-fn".as_ref(), b.as_os_str()]);
    assert_eq!(
        run_code(&again),
        0,
        "pfsck -fn after pfsck {mode}: {}",
        String::from_utf8_lossy(&again.stdout)
    );

    let log = pfsck::store::default_undo_path(&b);
    let rb = pfsck(&["--rollback".as_ref(), log.as_os_str(), b.as_os_str()]);
    assert_eq!(
        run_code(&rb),
        0,
        "rollback: {}",
        String::from_utf8_lossy(&rb.stderr)
    );
    assert_eq!(
        std::fs::read(&b).unwrap(),
        std::fs::read(img).unwrap(),
        "rollback did not restore the pre-replay image"
    );
    stdout
}

#[test]
fn csum_v3_64bit_with_revokes() {
    let dir = TempDir::new("jrr-v3");
    let opts = MkfsOpts::ext4()
        .block_size(1024)
        .features("metadata_csum,64bit");
    let img = build(&dir, &opts, 8 << 20, "-c", |free| {
        vec![
            Txn::write(&free[0..3], 1),
            Txn::write(&free[5..6], 2),
            Txn::write(&free[0..1], 3),
            Txn::write(&free[3..4], 4).revoke(&[free[1], free[5]]),
        ]
    });
    let out = assert_replay_matches_e2fsck(&dir, &img, "-fy");
    // A replay alone is not reported as a modification (e2fsck exits 0).
    assert!(!out.contains("repairs written"), "{out}");
}

#[test]
fn csum_v2_32bit_4k_with_revoke() {
    let dir = TempDir::new("jrr-v2");
    let opts = MkfsOpts::ext4()
        .block_size(4096)
        .features("^64bit,metadata_csum");
    let img = build(&dir, &opts, 32 << 20, "-c -v 2", |free| {
        vec![
            Txn::write(&free[6..8], 10),
            Txn::write(&free[0..4], 9).revoke(&[free[2]]),
        ]
    });
    assert_replay_matches_e2fsck(&dir, &img, "-fy");
}

#[test]
fn ext3_no_checksums_escape_and_revoke() {
    let dir = TempDir::new("jrr-ext3");
    let opts = MkfsOpts::ext3().block_size(1024);
    let img = build(&dir, &opts, 8 << 20, "", |free| {
        vec![
            Txn::write(&free[0..2], 20).escaped(),
            Txn::write(&free[2..3], 21).revoke(&[free[1]]),
        ]
    });
    assert_replay_matches_e2fsck(&dir, &img, "-fy");
}

/// Preen without -f on a file system marked clean: e2fsck replays, then
/// finds it clean and skips the passes; so does pfsck.
#[test]
fn preen_not_forced_replays_then_skips() {
    let dir = TempDir::new("jrr-preen");
    let opts = MkfsOpts::ext4().block_size(1024).features("metadata_csum");
    let img = build(&dir, &opts, 8 << 20, "-c", |free| {
        vec![Txn::write(&free[0..2], 40), Txn::write(&free[4..5], 41)]
    });
    let out = assert_replay_matches_e2fsck(&dir, &img, "-p");
    assert!(out.contains(": clean,"), "{out}");
}

/// The replay and a fix staged on top of it go through one commit: a
/// wrong free-blocks count written by a transaction is replayed, then
/// corrected, and e2fsck does the same (exit 1).
#[test]
fn replay_then_fix_in_one_commit() {
    let dir = TempDir::new("jrr-fix");
    let opts = MkfsOpts::ext4().block_size(1024).features("metadata_csum");
    let img = dir.join("image");
    mkfs(&img, 8 << 20, &opts, None);
    // Journal a copy of the group descriptor block whose first group's
    // free inode count is off by one (checksum left stale: pass 0 and 5
    // both have something to fix after replay).
    let gd_blk = 2u64;
    let mut gd = read_at(&img, gd_blk * 1024, 1024);
    let free_inodes = u16::from_le_bytes([gd[0x0E], gd[0x0F]]);
    gd[0x0E..0x10].copy_from_slice(&(free_inodes - 1).to_le_bytes());
    let data = dir.join("gd");
    std::fs::write(&data, &gd).unwrap();
    debugfs_w(
        &img,
        &[
            "jo -c".to_string(),
            format!("jw -b {gd_blk} {}", data.display()),
            "jc".to_string(),
        ],
    );
    let out = assert_replay_matches_e2fsck(&dir, &img, "-fy");
    assert!(out.contains("repairs written"), "{out}");
}

/// The e2fsprogs `j_*` and `f_jnl*` images: each one e2fsck replays (and
/// then repairs, f_jnl_32bit) must come out of
/// `pfsck -fy` as out of `e2fsck -fy`, j_recover_fast_commit's fast-commit
/// replay included. Prints how many become clean.
#[test]
fn conformance_j_images() {
    let Some(root) = conformance_dir() else {
        println!("conformance images not found, skipped");
        return;
    };
    let dirs: Vec<_> = std::fs::read_dir(root.join("e2fsprogs"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("j_") || n.starts_with("f_jnl")
        })
        .map(|e| e.path())
        .collect();
    let mut clean = Vec::new();
    for d in &dirs {
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        let dir = TempDir::new(&format!("jrr-{name}"));
        let img = dir.join("orig");
        if extract_image(d, &img).is_err() {
            continue;
        }
        let info = dumpe2fs(&img);
        // Images whose journal pfsck cannot replay (a bad journal
        // superblock: e2fsck recreates the journal) are outside this test.
        if !info.has_feature("needs_recovery") || name.contains("sb_magic") {
            continue;
        }
        let out = assert_replay_matches_e2fsck(&dir, &img, "-fy");
        if name.contains("fast_commit") {
            assert!(out.contains("fast-commit records"), "{name}: {out}");
        }
        // Preen without -f after a recovery that reports an error: e2fsck
        // forces the full check (the state is marked not clean). On the
        // others e2fsck -p skips a clean file system but first copies the
        // descriptors' free counts into the superblock, which pfsck's
        // clean skip does not do yet (f_jnl_32bit shows it).
        if matches!(
            name.as_str(),
            "j_corrupt_descr_csum" | "j_corrupt_revoke_rcount"
        ) {
            assert_replay_matches_e2fsck(&dir, &img, "-p");
        }
        clean.push(name);
    }
    println!(
        "j_*/f_jnl* images clean after one pfsck -fy, as e2fsck leaves them: {} of {}: {}",
        clean.len(),
        dirs.len(),
        clean.join(", ")
    );
}

/// Preen meeting a problem it may not fix after the replay: e2fsck has
/// already written the replay when it stops with UNEXPECTED INCONSISTENCY,
/// and so does pfsck (exit 4 both), with the superblock marked with errors
/// as e2fsck's preenhalt marks it. The replayed blocks are compared.
#[test]
fn preen_unexpected_inconsistency_still_replays() {
    let dir = TempDir::new("jrr-unexpected");
    let opts = MkfsOpts::ext4().block_size(1024);
    let img = dir.join("image");
    mkfs(&img, 8 << 20, &opts, None);
    let file = dir.join("f");
    std::fs::write(&file, b"hi\n").unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} x", file.display()),
            "set_inode_field x mode 0170000".to_string(),
        ],
    );
    let blocks = vec![3000u64, 3001];
    let data = dir.join("d");
    let mut bytes = pattern(1024, 50, 0);
    bytes.extend(pattern(1024, 50, 1));
    std::fs::write(&data, &bytes).unwrap();
    debugfs_w(
        &img,
        &[
            "jo -c".to_string(),
            format!("jw -b 3000,3001 {}", data.display()),
            "jc".to_string(),
        ],
    );
    let (a, b) = (dir.join("A"), dir.join("B"));
    copy_image(&img, &a);
    copy_image(&img, &b);
    let e2 = e2fsck(&a, &["-fp"]);
    let out = pfsck(&["-fp".as_ref(), b.as_os_str()]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(e2.code(), Some(4), "e2fsck -fp: {}", e2.stdout);
    assert_eq!(run_code(&out), 4, "pfsck -fp: {stdout}");
    assert!(stdout.contains("replaying the journal"), "{stdout}");
    assert!(
        stderr.contains("STOPPED: a problem preen may not fix"),
        "{stderr}"
    );
    assert!(!dumpe2fs(&b).has_feature("needs_recovery"));
    let state = |img: &std::path::Path| read_at(img, 1024 + 0x3A, 2);
    assert_eq!(state(&a), state(&b), "superblock state");
    for blk in blocks {
        assert_eq!(
            read_at(&a, blk * 1024, 1024),
            read_at(&b, blk * 1024, 1024),
            "replayed block {blk}"
        );
    }
    let log = pfsck::store::default_undo_path(&b);
    let rb = pfsck(&["--rollback".as_ref(), log.as_os_str(), b.as_os_str()]);
    assert_eq!(run_code(&rb), 0);
    assert_eq!(std::fs::read(&b).unwrap(), std::fs::read(&img).unwrap());
}

/// An external journal (named by its UUID) that needs recovery and cannot
/// be found is not replayed: `-fy` and `-p` stop as e2fsck does ("Can't
/// find external journal", exit 12), and write nothing.
#[test]
fn external_journal_needing_recovery_is_refused() {
    let dir = TempDir::new("jrr-external");
    let img = dir.join("image");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(
        &img,
        &[
            "ssv journal_inum 0",
            "ssv journal_uuid 5a1e7a1e-0000-4000-8000-00000000beef",
            "feature needs_recovery",
        ],
    );
    let before = std::fs::read(&img).unwrap();
    let e2 = e2fsck(&dir.join("image"), &["-fn"]);
    assert_eq!(e2.code(), Some(12), "e2fsck -fn: {}", e2.stdout);
    for mode in ["-fn", "-fy", "-p"] {
        let out = pfsck(&[mode.as_ref(), img.as_os_str()]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(run_code(&out), 12, "pfsck {mode}: {text}");
        assert!(text.contains("external journal"), "pfsck {mode}: {text}");
        assert!(
            !text.contains("replaying the journal"),
            "pfsck {mode}: {text}"
        );
        assert_eq!(std::fs::read(&img).unwrap(), before, "pfsck {mode} wrote");
    }
}

/// A journal device number without a journal UUID names no journal:
/// with has_journal, journal inode 0 and needs_recovery, e2fsck finds an
/// invalid journal (inode 0), clears it with the recovery flag and makes
/// a new journal; so does pfsck, and -n stops as e2fsck -n (exit 12).
#[test]
fn journal_device_number_alone_is_an_invalid_journal() {
    let dir = TempDir::new("jrr-journal-dev");
    let img = dir.join("image");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(
        &img,
        &[
            "ssv journal_inum 0",
            "ssv journal_dev 0x0801",
            "feature needs_recovery",
        ],
    );
    let e2_img = dir.join("e2");
    copy_image(&img, &e2_img);
    let e2n = e2fsck(&e2_img, &["-fn"]);
    let out = pfsck(&["-fn".as_ref(), img.as_os_str()]);
    assert_eq!(
        run_code(&out),
        e2n.code().unwrap_or(-1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let e2 = e2fsck(&e2_img, &["-fy"]);
    let out = pfsck(&["-fy".as_ref(), img.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        run_code(&out),
        e2.code().unwrap_or(-1),
        "{text}\ne2fsck:\n{}",
        e2.stdout
    );
    assert!(text.contains("The journal (inode 0) is unusable"), "{text}");
    for checked in [&img, &e2_img] {
        let after = e2fsck(checked, &["-fn"]);
        assert_eq!(after.code(), Some(0), "{}", after.stdout);
    }
    // The same new journal: its inode, superblock and blocks.
    for what in ["blocks <8>", "logdump"] {
        assert_eq!(debugfs_r(&img, what), debugfs_r(&e2_img, what), "{what}");
    }
}

/// The journal's size in blocks and its block `n`'s byte offset.
fn journal_geometry(img: &Path, bs: u64) -> (u64, impl Fn(u64) -> u64 + '_) {
    let jsb = read_at(img, debugfs_number(img, "bmap <8> 0") * bs, 32);
    let maxlen = u32::from_be_bytes([jsb[0x10], jsb[0x11], jsb[0x12], jsb[0x13]]);
    let at = move |n: u64| debugfs_number(img, &format!("bmap <8> {n}")) * bs;
    (u64::from(maxlen), at)
}

/// Moves the log's first `len` blocks (from block 1, where debugfs
/// writes it) to start `before_end` blocks before the journal's end, so
/// that it wraps to block 1, and points `s_start` there.
fn wrap_log(img: &Path, bs: u64, len: u64, before_end: u64) {
    let (maxlen, at) = journal_geometry(img, bs);
    let log: Vec<Vec<u8>> = (1..=len)
        .map(|n| read_at(img, at(n), bs as usize))
        .collect();
    for n in 1..=len {
        write_at(img, at(n), &vec![0; bs as usize]);
    }
    let start = maxlen - before_end;
    for (i, b) in (0u64..).zip(&log) {
        let pos = start + i;
        write_at(
            img,
            at(if pos >= maxlen { pos - maxlen + 1 } else { pos }),
            b,
        );
    }
    let start = u32::try_from(start).unwrap();
    write_at(img, at(0) + 0x1C, &start.to_be_bytes());
}

/// The journal superblock's first log block (`s_first`) damaged while a
/// replay is due (seed fz34-final, damage 9861: ext3, 4 KiB blocks,
/// `s_first` 0x7e75fa5a). e2fsck does not judge the field: only a log
/// that wraps past the journal's end goes on at it, so a log that does
/// not wrap is replayed whole, and one that wraps ends at block 0 (the
/// journal superblock) or fails its replay at a block past the journal.
/// pfsck called the journal superblock corrupt (-n exit 12; -y reset the
/// journal without replaying it). -n must agree with e2fsck 1.47.4, -y
/// must leave e2fsck's bytes.
#[test]
fn first_log_block_damaged_with_a_replay_due() {
    let judge = oracle().unwrap_or_else(|| tool("e2fsck"));
    let opts = MkfsOpts::ext3().block_size(1024);
    // Two transactions of two blocks: 8 log blocks, wrapped after 3 or not.
    for (wrap, first) in [
        (false, 0x7e75_fa5a),
        (false, 0),
        (false, 1024),
        (true, 1),
        (true, 0),
        (true, 5),
        (true, 1024),
        (true, 0x7fff_ffff),
    ] {
        let dir = TempDir::new("jrr-first");
        let img = build(&dir, &opts, 8 << 20, "", |free| {
            vec![Txn::write(&free[0..2], 50), Txn::write(&free[2..4], 51)]
        });
        if wrap {
            wrap_log(&img, 1024, 8, 3);
        }
        let (_, at) = journal_geometry(&img, 1024);
        write_at(&img, at(0) + 0x14, &u32::to_be_bytes(first));
        let e2n = std::process::Command::new(&judge)
            .args(["-fn".as_ref(), img.as_os_str()])
            .output()
            .unwrap();
        let before = hash_file(&img);
        let out = pfsck(&["-fn".as_ref(), img.as_os_str()]);
        assert_eq!(hash_file(&img), before, "pfsck -fn wrote");
        assert_eq!(
            out.status.code(),
            e2n.status.code(),
            "wrap {wrap} s_first {first}: pfsck -fn {}\ne2fsck -fn {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&e2n.stdout)
        );
        assert_replay_matches_e2fsck(&dir, &img, "-fy");
    }
}
