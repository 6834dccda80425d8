//! External journals (`-j FILE`): a journal device made with
//! `mke2fs -O journal_dev`, attached to a file system with debugfs (UUID,
//! has_journal, no journal inode: no loop device needed), and transactions
//! written into it with debugfs's `jo -f`/`jw`/`jc`. Copies go through
//! `e2fsck -fy -j` and `pfsck -fy -j`: both devices must end byte-identical
//! (the file system's superblock fields each tool sets itself aside),
//! `e2fsck -fn -j` must find the result clean, and the exit codes must
//! match. Without `-j`, a repair must refuse and write nothing; `-n` with
//! `-j` checks the replayed view and writes nothing.

use crate::common::journal::masked_sb;
use crate::common::*;
use std::path::Path;

/// A file system whose journal is the (empty) journal device beside it.
fn attach(dir: &TempDir) -> (std::path::PathBuf, std::path::PathBuf) {
    let jdev = dir.join("jdev");
    let fs = dir.join("fs");
    mkfs(
        &jdev,
        2 << 20,
        &MkfsOpts::ext4().block_size(1024).features("journal_dev"),
        None,
    );
    mkfs(
        &fs,
        8 << 20,
        &MkfsOpts::ext4().block_size(1024).features("^has_journal"),
        None,
    );
    let raw = std::fs::read(&jdev).unwrap();
    let uuid: String = raw[1024 + 0x68..1024 + 0x78]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let uuid = format!(
        "{}-{}-{}-{}-{}",
        &uuid[0..8],
        &uuid[8..12],
        &uuid[12..16],
        &uuid[16..20],
        &uuid[20..32]
    );
    debugfs_w(
        &fs,
        &[
            "feature has_journal".to_string(),
            format!("ssv journal_uuid {uuid}"),
            "ssv journal_dev 0x700".into(),
        ],
    );
    (fs, jdev)
}

/// File system `fs` with the journal device `jdev`, and one committed
/// transaction that writes `blocks` with a pattern.
fn build(dir: &TempDir, blocks: &[u64]) -> (std::path::PathBuf, std::path::PathBuf) {
    let (fs, jdev) = attach(dir);
    let data = dir.join("pattern");
    let bytes: Vec<u8> = (0..blocks.len() * 1024)
        .map(|i| (i % 251) as u8 + 1)
        .collect();
    std::fs::write(&data, bytes).unwrap();
    let list = blocks
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    debugfs_w_unchecked(
        &fs,
        &[
            format!("jo -f {}", jdev.display()),
            format!("jw -b {list} {}", data.display()),
            "jc".into(),
        ],
    );
    let sb = debugfs_r(&fs, "stats");
    assert!(
        sb.contains("needs_recovery"),
        "no transaction pending:\n{sb}"
    );
    (fs, jdev)
}

fn run(args: &[&Path]) -> std::process::Output {
    let a: Vec<&std::ffi::OsStr> = args.iter().map(|p| p.as_os_str()).collect();
    pfsck(&a)
}

#[test]
fn external_journal_replay_matches_e2fsck() {
    let dir = TempDir::new("extj");
    let (fs, jdev) = build(&dir, &[300, 301, 302, 900]);
    let (fa, ja, fb, jb) = (
        dir.join("fa"),
        dir.join("ja"),
        dir.join("fb"),
        dir.join("jb"),
    );
    for (s, d) in [(&fs, &fa), (&jdev, &ja), (&fs, &fb), (&jdev, &jb)] {
        copy_image(s, d);
    }

    // Without -j: -fy refuses and writes nothing.
    let h = (hash_file(&fb), hash_file(&jb));
    let out = run(&["-fy".as_ref(), &fb]);
    assert!(
        matches!(out.status.code(), Some(8 | 12)),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!((hash_file(&fb), hash_file(&jb)), h, "written without -j");

    // -n with -j: the replayed view, nothing written.
    let out = run(&["-fn".as_ref(), "-j".as_ref(), &jb, &fb]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("after journal recovery (1 transaction, 4 blocks)"),
        "{text}"
    );
    assert_eq!((hash_file(&fb), hash_file(&jb)), h, "-n wrote");

    let e2 = e2fsck(&fa, &["-fy", "-j", ja.to_str().unwrap()]);
    let out = run(&["-fy".as_ref(), "-j".as_ref(), &jb, &fb]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        e2.code(),
        "{text}\ne2fsck:\n{}",
        e2.stdout
    );
    assert!(text.contains("replaying the journal"), "{text}");
    let after = e2fsck(&fb, &["-fn", "-j", jb.to_str().unwrap()]);
    assert_eq!(after.code(), Some(0), "{}", after.stdout);
    assert_eq!(
        std::fs::read(&ja).unwrap(),
        std::fs::read(&jb).unwrap(),
        "journal devices differ"
    );
    let (da, db) = (std::fs::read(&fa).unwrap(), std::fs::read(&fb).unwrap());
    assert_eq!(masked_sb(&da), masked_sb(&db));
    for (k, (x, y)) in da.chunks(1024).zip(db.chunks(1024)).enumerate() {
        if k != 1 {
            assert!(x == y, "block {k} differs");
        }
    }
    assert_eq!(&db[300 * 1024..300 * 1024 + 4], &[1, 2, 3, 4]);
}

/// A journal device that is not this file system's is refused.
#[test]
fn foreign_journal_device_is_refused() {
    let dir = TempDir::new("extj-foreign");
    let (fs, _jdev) = build(&dir, &[300]);
    let other = dir.join("other");
    mkfs(
        &other,
        2 << 20,
        &MkfsOpts::ext4().block_size(1024).features("journal_dev"),
        None,
    );
    // The test images share a fixed UUID: make this one another device's.
    let mut raw = std::fs::read(&other).unwrap();
    raw[1024 + 0x68] ^= 0xFF;
    raw[2048 + 0x30] ^= 0xFF;
    std::fs::write(&other, raw).unwrap();
    let h = hash_file(&fs);
    let out = run(&["-fy".as_ref(), "-j".as_ref(), &other, &fs]);
    assert!(
        matches!(out.status.code(), Some(8 | 12)),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(hash_file(&fs), h);
}

/// The journal device's first log block (`s_first`) out of range in an
/// empty journal: e2fsck does not judge the field (only a replay that
/// wraps uses it) and finds the file system clean. pfsck took the device
/// for unusable and could not proceed (exit 12), as it did for an
/// internal journal (seed fz34-final, damage 9861).
#[test]
fn empty_external_journal_with_a_first_block_out_of_range() {
    for first in [0u32, 2048, u32::MAX] {
        let dir = TempDir::new("extj-first");
        let (fs, jdev) = attach(&dir);
        // The journal superblock: the device's block 2 (1 KiB blocks).
        write_at(&jdev, 2048 + 0x14, &first.to_be_bytes());
        let h = (hash_file(&fs), hash_file(&jdev));
        let out = run(&["-fn".as_ref(), "-j".as_ref(), &jdev, &fs]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "s_first {first}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!((hash_file(&fs), hash_file(&jdev)), h, "-n wrote");
        if let Some(oracle) = oracle() {
            let e2 = std::process::Command::new(oracle)
                .args([
                    "-fn".as_ref(),
                    "-j".as_ref(),
                    jdev.as_os_str(),
                    fs.as_os_str(),
                ])
                .output()
                .unwrap();
            assert_eq!(e2.status.code(), Some(0), "e2fsck 1.47.4, s_first {first}");
        }
    }
}

/// `cmd` run on `img` with blkid's cache file `cache`: exit code, output.
fn with_cache(cmd: &Path, args: &[&str], img: &Path, cache: &Path) -> (i32, String) {
    let out = std::process::Command::new(cmd)
        .env("BLKID_FILE", cache)
        .args(args)
        .arg(img)
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), output_text(&out))
}

/// 0x000033: the superblock's hint for the external journal's device is
/// not the device number of what the journal's UUID names. e2fsck looks
/// the UUID up through blkid, whose cache (`BLKID_FILE`) here names the
/// journal image: a regular file, device number 0, where the hint says
/// 0x700. Asked before the passes: -n declines and exits 0, -y and -p
/// set the hint to 0 (exit 1); the journal is found the same way, no -j.
#[test]
fn journal_device_hint_follows_the_uuid() {
    let tmp = TempDir::new("ext-journal-hint");
    let (fs, jdev) = attach(&tmp);
    let raw = std::fs::read(&jdev).unwrap();
    let hex: String = raw[1024 + 0x68..1024 + 0x78]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let uuid = format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let cache = tmp.join("blkid.tab");
    std::fs::write(
        &cache,
        format!(
            "<device DEVNO=\"0x0000\" TIME=\"{now}\" UUID=\"{uuid}\" TYPE=\"jbd\">{}</device>\n",
            jdev.display()
        ),
    )
    .unwrap();
    let hint = |img: &Path| u32::from_le_bytes(read_at(img, 1024 + 0xE4, 4).try_into().unwrap());
    assert_eq!(hint(&fs), 0x700);
    let before = hash_file(&fs);
    let (code, out) = with_cache(pfsck_bin(), &["-fn"], &fs, &cache);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("hint for the external journal's device (1792)") && out.contains("Fix? no"),
        "{out}"
    );
    assert_eq!(hash_file(&fs), before, "-n wrote");
    let (_, json) = with_cache(pfsck_bin(), &["-fn", "--json"], &fs, &cache);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report_e2fsck_codes(&json), [0x000033]);
    if let Some(e2fsck) = oracle() {
        let (code, out) = with_cache(&e2fsck, &["-fn"], &fs, &cache);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("hint for external superblock"), "{out}");
    }
    let preen = tmp.join("preen");
    copy_image(&fs, &preen);
    let (code, out) = with_cache(pfsck_bin(), &["-p"], &preen, &cache);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FIXED"), "{out}");
    assert_eq!(hint(&preen), 0);
    let (code, out) = with_cache(pfsck_bin(), &["-fy"], &fs, &cache);
    assert_eq!(code, 1, "{out}");
    assert_eq!(hint(&fs), 0);
    if let Some(e2fsck) = oracle() {
        let (code, out) = with_cache(&e2fsck, &["-fn"], &fs, &cache);
        assert_eq!(code, 0, "{out}");
        assert!(!out.contains("Superblock hint"), "{out}");
    }
}
