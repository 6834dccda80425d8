//! Problems of e2fsck 1.47.4's catalogue (issue 13) that pfsck reported
//! but its repair left, each made on a fresh file system and judged
//! against e2fsck: the exit codes of -n, -p and -y, and e2fsck -fn clean
//! after pfsck -fy.

use crate::common::*;
use crate::problem_codes::assert_same_codes;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

/// The byte offset of the first in-inode xattr entry of inode `ino`.
fn first_ibody_entry(img: &Path, ino: u64) -> u64 {
    let at = inode_offset(img, ino);
    let extra = read_at(img, at + 128, 2);
    let extra = u64::from(u16::from_le_bytes([extra[0], extra[1]]));
    let magic = read_at(img, at + 128 + extra, 4);
    assert_eq!(magic, [0, 0, 2, 0xea], "no in-inode xattrs in inode {ino}");
    at + 128 + extra + 4
}

/// 0x01008b: an encrypted file whose context (xattr "c" of the
/// encryption index) is too short for its version. e2fsck clears the
/// inode, then its entry and its blocks follow (-y exits 1); preen may
/// not (exit 4).
#[test]
fn corrupt_encryption_context_clears_the_inode() {
    let tmp = TempDir::new("c13n-encctx");
    let img = tmp.join("image");
    // Without metadata_csum: the xattr's index is set by hand below.
    let opts = MkfsOpts::ext4()
        .block_size(1024)
        .features("encrypt,^metadata_csum");
    mkfs(&img, 8 * MIB, &opts, None);
    let data = tmp.join("data");
    std::fs::write(&data, b"hi\n").unwrap();
    // A version 1 context is 28 bytes long; this one has 4.
    let value = tmp.join("value");
    std::fs::write(&value, [1u8, 1, 4, 0]).unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} f", data.display()),
            format!("ea_set -f {} f c", value.display()),
            "sif f flags 0x80800".into(),
        ],
    );
    let ino = inode_of(&img, "f");
    // debugfs knows no prefix for the encryption index (9): it stores
    // "c" under index 0, moved to 9 here.
    let entry = first_ibody_entry(&img, ino);
    assert_eq!(read_at(&img, entry, 2), [1, 0], "name length, index");
    write_at(&img, entry + 1, &[9]);
    assert_same_codes(&img, &[0x01008B]);
    both_exit(&img, &["-fp"], 4);
    let (_, fy) = judged_by_oracle("c13n-encctx", &img, 4, 1);
    assert!(fy.contains("Clear inode? yes"), "{fy}");
    let stat = debugfs_r(&img, &format!("stat <{ino}>"));
    assert!(stat.contains("Links: 0"), "{stat}");
}

/// 0x010092: a file keeps an xattr value in an EA inode, on a file system
/// whose ea_inode feature is off. e2fsck asks to set the feature (preen
/// may) and judges the reference as it would with it; the value stays.
#[test]
fn ea_inode_value_without_the_feature_sets_it() {
    let tmp = TempDir::new("c13n-eafeat");
    let img = tmp.join("image");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext4().block_size(1024).features("ea_inode"),
        None,
    );
    let data = tmp.join("data");
    std::fs::write(&data, b"hi\n").unwrap();
    let big = tmp.join("big");
    std::fs::write(&big, vec![b'x'; 4000]).unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} f", data.display()),
            format!("ea_set -f {} f user.big", big.display()),
            // debugfs charges the file nothing for its EA inode's block.
            "sif f blocks 4".into(),
        ],
    );
    assert_same_codes(&img, &[]);
    debugfs_w(&img, &["feature -ea_inode"]);
    assert_same_codes(&img, &[0x010092]);
    let (out, preened) = both_exit(&img, &["-fp"], 1);
    assert!(out.contains("ea_inode feature is off.  FIXED."), "{out}");
    assert!(dumpe2fs(&preened).has_feature("ea_inode"));
    judged_by_oracle("c13n-eafeat", &img, 4, 1);
    assert!(dumpe2fs(&img).has_feature("ea_inode"));
    let value = debugfs_r(&img, "ea_get f user.big");
    assert!(value.contains(&"x".repeat(100)), "{value}");
}

/// A file system whose journal is on the device `jdev` (made with
/// `mke2fs -O journal_dev`, metadata_csum on), attached with debugfs.
fn with_external_journal(tmp: &TempDir) -> (PathBuf, PathBuf) {
    let jdev = tmp.join("jdev");
    let fs = tmp.join("fs");
    let journal = MkfsOpts::ext4().block_size(1024).features("journal_dev");
    mkfs(&jdev, 2 * MIB, &journal, None);
    assert!(dumpe2fs(&jdev).has_feature("metadata_csum"));
    let plain = MkfsOpts::ext4().block_size(1024).features("^has_journal");
    mkfs(&fs, 8 * MIB, &plain, None);
    let uuid = dumpe2fs(&jdev).header["Filesystem UUID"].clone();
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

/// Runs `prog` (pfsck when None) with `args`, `-j jdev` and `fs`: its
/// exit code and output.
fn run_with_journal(prog: Option<&Path>, args: &[&str], jdev: &Path, fs: &Path) -> (i32, String) {
    let mut cmd = std::process::Command::new(prog.unwrap_or(pfsck_bin()));
    cmd.args(args).arg("-j").arg(jdev).arg(fs);
    let r = run_timeout_merged(cmd, std::time::Duration::from_secs(60));
    assert!(!r.timed_out, "{args:?} timed out");
    (r.code().unwrap_or(-1), r.stdout)
}

/// 0x00004a: the journal device's own superblock fails its checksum.
/// e2fsck asks as it loads the journal: -n answers no and exits 0; -y and
/// -p set the checksum on the journal device without marking the file
/// system changed (exit 0), and check in full even when not forced.
#[test]
fn external_journal_superblock_checksum_is_set() {
    let tmp = TempDir::new("c13n-jdevcsum");
    let (fs, jdev) = with_external_journal(&tmp);
    let csum_at = 1024 + 0x3FC;
    let good = read_at(&jdev, csum_at, 4);
    write_at(&jdev, csum_at, &[0; 4]);
    let oracle = oracle();
    for mode in ["-fn", "-n", "-fy", "-y", "-fp", "-p"] {
        let (f, j) = (tmp.join("f"), tmp.join("j"));
        // Each run starts without the undo logs an earlier one left.
        for log in ["f.pfsck-undo", "j.pfsck-undo"] {
            let _ = std::fs::remove_file(tmp.join(log));
        }
        if let Some(e2fsck) = &oracle {
            copy_image(&fs, &f);
            copy_image(&jdev, &j);
            let (code, out) = run_with_journal(Some(e2fsck), &[mode], &j, &f);
            assert_eq!(code, 0, "e2fsck {mode}:\n{out}");
            assert!(
                out.contains("External journal superblock checksum"),
                "{out}"
            );
        }
        copy_image(&fs, &f);
        copy_image(&jdev, &j);
        let (code, out) = run_with_journal(None, &[mode], &j, &f);
        assert_eq!(code, 0, "pfsck {mode}:\n{out}");
        let fixed = read_at(&j, csum_at, 4) == good;
        if mode.ends_with('n') {
            assert!(
                !fixed && hash_file(&f) == hash_file(&fs),
                "pfsck {mode} wrote"
            );
            if mode == "-fn" {
                assert!(out.contains("fails its checksum.  Fix? no"), "{out}");
            }
            continue;
        }
        assert!(fixed, "pfsck {mode} left the checksum:\n{out}");
        // Not forced, the fix still makes the check a full one.
        assert!(out.contains("fragmented"), "pfsck {mode}:\n{out}");
        if let Some(e2fsck) = &oracle {
            let (code, after) = run_with_journal(Some(e2fsck), &["-fn"], &j, &f);
            assert_eq!(code, 0, "e2fsck -fn after pfsck {mode}:\n{after}");
            assert!(!after.contains("External journal"), "{after}");
        }
    }
}

/// 0x00004d, 0x00004e: the superblock's extra inode sizes, invalid.
/// e2fsck asks about them before it decides to skip a clean file system,
/// without PREEN_OK: -p stops there (exit 4) even unforced; -n says no
/// and checks in full (exit 0), -y fixes them (exit 1).
#[test]
fn invalid_extra_isize_stops_preen() {
    let tmp = TempDir::new("c13n-extra-isize");
    for (field, value) in [("min_extra_isize", "3"), ("want_extra_isize", "1000")] {
        let img = tmp.join(field);
        mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
        debugfs_w(&img, &[format!("ssv {field} {value}")]);
        for args in ["-fp", "-p"] {
            let (out, _) = both_exit(&img, &[args], 4);
            assert!(
                out.contains("STOPPED: a problem preen may not fix"),
                "[{field} {args}] {out}"
            );
        }
        let (out, _) = both_exit(&img, &["-n"], 0);
        assert!(out.contains("checked because"), "[{field}] {out}");
        assert!(out.contains("is out of range.  Fix? no"), "[{field}] {out}");
        let (_, mine) = both_exit(&img, &["-y"], 1);
        if oracle().is_some() {
            assert_eq!(oracle_fn(&mine), 0, "[{field}] e2fsck -fn after pfsck -y");
        }
    }
}

/// 0x010011: more illegal blocks than e2fsck names one by one. Its
/// question has NO_OK: a no leaves the verdict to the illegal blocks asked
/// before it (-n exits 4 on those), so pfsck's problem is a notice; -y
/// clears the inode (exit 1), preen stops at the first illegal block.
#[test]
fn too_many_illegal_blocks_leave_the_verdict_to_the_blocks() {
    let tmp = TempDir::new("c13n-too-many");
    let img = tmp.join("image");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext2().block_size(1024), None);
    let data = tmp.join("data");
    std::fs::write(&data, vec![7u8; 12 * 1024]).unwrap();
    let mut cmds = vec![format!("write {} f", data.display())];
    cmds.extend((0..12).map(|i| format!("sif f block[{i}] {}", 9_000_000 + i)));
    debugfs_w(&img, &cmds);
    // (Declined, e2fsck asks "Suppress messages?" (0x01002d) too, which
    // pfsck prints and names: codes_fz36h.)
    let out = pfsck(&[
        std::ffi::OsStr::new("-fn"),
        "--json".as_ref(),
        img.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(4));
    let json = String::from_utf8_lossy(&out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let severity = doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["code"] == "0x1009")
        .map(|p| p["severity"].clone());
    assert_eq!(severity, Some("Notice".into()), "{json}");
    both_exit(&img, &["-fp"], 4);
    let (fn_out, _) = judged_by_oracle("c13n-too-many", &img, 4, 1);
    assert!(
        fn_out.contains("Inode 12 maps too many blocks it may not.\nClear inode? no"),
        "{fn_out}"
    );
}
