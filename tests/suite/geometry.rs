//! Issue 13, defect 6 ("geometry and flags"): damages made from scratch
//! (mke2fs, debugfs -w, byte patches) and judged against e2fsck 1.47.4
//! (`common::oracle`). pfsck's `-fn` verdict must be the oracle's, `-fn`
//! must not write, and one `pfsck -fy` must leave a file system the oracle
//! finds clean, exiting 1 exactly when there was something to fix.
//!
//! The EA-inode rules are those e2fsck 1.47.1-1.47.4 added: EA_INODE_FL
//! only on regular files, no directory entry naming an inode xattrs keep
//! their values in, an EA_INODE_FL inode nothing refers to loses the flag,
//! and a fast symlink charged for an EA-inode value is still a fast
//! symlink. The public images (`f_ea_inode*`, `f_bad_fname`) are checked
//! too when `../shared/conformance` is there.

use crate::common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const SIZE: u64 = 32 << 20;

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn pfsck_code(args: &[&str], img: &Path) -> (i32, String) {
    let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    all.push(img.as_os_str());
    let out = pfsck(&all);
    (out.status.code().unwrap_or(-1), text(&out))
}

/// The oracle's `-fn` exit on `img` is `want`, and pfsck's too (without
/// writing); then `pfsck -fy` exits 1 (0 when clean) and the oracle finds
/// the result clean. Returns pfsck's -fn and -fy outputs.
#[track_caller]
fn judged(ctx: &str, img: &Path, want: i32) -> (String, String) {
    let tmp = TempDir::new(ctx);
    let oracle = oracle_run(img, &["-fn"]);
    assert_eq!(
        oracle.code(),
        Some(want),
        "[{ctx}] e2fsck -fn:\n{}",
        oracle.stdout
    );
    let before = hash_file(img);
    let (code, fn_out) = pfsck_code(&["-fn"], img);
    assert_eq!(
        code, want,
        "[{ctx}] pfsck -fn:\n{fn_out}\ne2fsck -fn:\n{}",
        oracle.stdout
    );
    assert_eq!(before, hash_file(img), "[{ctx}] pfsck -fn wrote");
    let undo = tmp.join("undo");
    let (code, out) = pfsck_code(&["-fy", "-z", undo.to_str().unwrap()], img);
    let want_fy = if want == 0 { 0 } else { 1 };
    assert_eq!(code, want_fy, "[{ctx}] pfsck -fy:\n{out}");
    let after = oracle_run(img, &["-fn"]);
    assert_eq!(
        after.code(),
        Some(0),
        "[{ctx}] e2fsck -fn after pfsck -fy:\n{}\npfsck -fy:\n{out}",
        after.stdout
    );
    (fn_out, out)
}

/// Repairs `img` with the oracle (values set by debugfs are not charged to
/// their owner until e2fsck does it).
fn settle(img: &Path) {
    let r = oracle_run(img, &["-fy"]);
    assert!(
        matches!(r.code(), Some(0 | 1)),
        "e2fsck -fy: {}",
        r.describe()
    );
}

/// ea_inode, 4 KiB blocks: /a (an EA-inode value), /b, /sub, /ln (a fast
/// symlink with an EA-inode value).
fn ea_base() -> PathBuf {
    cached_image("geometry-ea.img", |img| {
        let dir = TempDir::new("geometry-ea");
        let t = dir.join("tree");
        std::fs::create_dir_all(t.join("sub")).unwrap();
        std::fs::write(t.join("a"), b"a\n").unwrap();
        std::fs::write(t.join("b"), b"bb\n").unwrap();
        std::os::unix::fs::symlink("a", t.join("ln")).unwrap();
        let opts = MkfsOpts::ext4()
            .block_size(4096)
            .inode_size(256)
            .features("ea_inode");
        mkfs(img, SIZE, &opts, Some(&t));
        let big = dir.join("big");
        std::fs::write(&big, file_content("big", 6000)).unwrap();
        let big2 = dir.join("big2");
        std::fs::write(&big2, file_content("big2", 7000)).unwrap();
        debugfs_w(
            img,
            &[
                format!("ea_set -f {} /a user.one", big.display()),
                format!("ea_set -f {} /ln user.two", big2.display()),
            ],
        );
        settle(img);
    })
}

/// An inode holding an xattr value (the first with EA_INODE_FL).
fn an_ea_inode(img: &Path) -> u64 {
    (12..64)
        .find(|&i| debugfs_r(img, &format!("stat <{i}>")).contains("Flags: 0x280000"))
        .unwrap_or_else(|| panic!("no EA inode in {}", img.display()))
}

/// A copy of the base with debugfs `cmds` applied.
fn damaged(name: &str, cmds: &[String]) -> (TempDir, PathBuf) {
    let dir = TempDir::new(name);
    let img = dir.join("x.img");
    copy_image(&ea_base(), &img);
    if !cmds.is_empty() {
        debugfs_w(&img, cmds);
    }
    (dir, img)
}

#[test]
fn ea_inode_base_is_clean() {
    let (_d, img) = damaged("geo-ea-clean", &[]);
    let ln = debugfs_r(&img, "stat /ln");
    assert!(
        ln.contains("Fast link dest"),
        "/ln is no fast symlink:\n{ln}"
    );
    // The symlink is charged for its EA-inode value: before, pfsck took
    // its target for block numbers.
    assert!(!ln.contains("Blockcount: 0"), "/ln is not charged:\n{ln}");
    judged("ea-clean", &img, 0);
}

#[test]
fn ea_inode_flag_on_non_regular_files() {
    for (name, cmd) in [
        ("dir", "sif /sub flags 0x280000"),
        ("root", "sif <2> flags 0x280000"),
        ("symlink", "sif /ln flags 0x200000"),
        // Reserved inodes are judged whatever their link count.
        ("reserved", "sif <9> flags 0x200000"),
    ] {
        let (_d, img) = damaged(&format!("geo-ea-nonreg-{name}"), &[cmd.to_string()]);
        let (fn_out, _) = judged(name, &img, 4);
        assert!(
            fn_out.contains("EA_INODE flag but is not a regular file"),
            "[{name}] {fn_out}"
        );
    }
}

#[test]
fn ea_inode_flag_where_e2fsck_accepts_it() {
    // A deleted inode is not judged; a linked regular file with the flag
    // and no xattr referring to it is left alone.
    let sub = inode_of(&ea_base(), "/sub");
    for (name, cmds) in [
        (
            "deleted-dir",
            vec![
                "rmdir /sub".to_string(),
                format!("sif <{sub}> flags 0x200000"),
            ],
        ),
        ("linked-file", vec!["sif /b flags 0x280000".to_string()]),
    ] {
        let (_d, img) = damaged(&format!("geo-ea-ok-{name}"), &cmds);
        judged(name, &img, 0);
    }
}

#[test]
fn entry_naming_an_ea_inode() {
    let base = ea_base();
    let ea = an_ea_inode(&base);
    let (_d, img) = damaged("geo-ea-dirlink", &[format!("ln <{ea}> /xlink")]);
    let (fn_out, fy_out) = judged("dirlink", &img, 4);
    assert!(fn_out.contains("'xlink'"), "{fn_out}");
    assert!(fy_out.contains("'xlink'"), "{fy_out}");
    assert!(
        !debugfs_r(&img, "ls /").contains("xlink"),
        "the entry is still there"
    );
    // With its link count raised as well: the count follows.
    let (_d, img) = damaged(
        "geo-ea-dirlink2",
        &[
            format!("ln <{ea}> /xlink"),
            format!("sif <{ea}> links_count 2"),
        ],
    );
    judged("dirlink-count", &img, 4);
}

#[test]
fn unreferenced_ea_inode_flag() {
    // A file no entry and no xattr names, carrying EA_INODE_FL: the flag
    // goes and the file is reconnected.
    let b = inode_of(&ea_base(), "/b");
    let (_d, img) = damaged(
        "geo-ea-spurious",
        &["unlink /b".to_string(), format!("sif <{b}> flags 0x280000")],
    );
    judged("spurious", &img, 4);
    let after = debugfs_r(&img, &format!("stat <{b}>"));
    assert!(!after.contains("Flags: 0x280000"), "{after}");
}

#[test]
fn ea_inode_missing_its_flag_gets_it_back() {
    let base = ea_base();
    let ea = an_ea_inode(&base);
    let (_d, img) = damaged("geo-ea-noflag", &[format!("sif <{ea}> flags 0x80000")]);
    let (_, fy_out) = judged("noflag", &img, 4);
    let after = debugfs_r(&img, &format!("stat <{ea}>"));
    assert!(after.contains("Flags: 0x280000"), "{after}");
    // The owner's i_blocks was right all along: no fix of it is claimed.
    assert!(!fy_out.contains("i_blocks"), "{fy_out}");
}

/// The public e2fsprogs images of these rules: same verdict, and a clean
/// one-run repair.
#[test]
fn public_ea_inode_images() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/e2fsprogs");
    if !root.is_dir() || oracle().is_none() {
        eprintln!("no conformance images or oracle: skipped");
        return;
    }
    for (name, want) in [
        ("f_ea_inode", 4),
        ("f_ea_inode_dir_ref", 4),
        ("f_ea_inode_fast_symlink", 0),
        ("f_ea_inode_spurious_flag_dir", 4),
        ("f_bad_fname", 4),
    ] {
        let gz = root.join(name).join("image.gz");
        if !gz.is_file() {
            continue;
        }
        let dir = TempDir::new(&format!("geo-pub-{name}"));
        let img = dir.join("x.img");
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(&gz)
            .output()
            .unwrap();
        assert!(out.status.success(), "gzip -dc {}", gz.display());
        std::fs::write(&img, out.stdout).unwrap();
        judged(name, &img, want);
    }
}
