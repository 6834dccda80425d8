//! Differential tests of the ea_inode feature (xattr values kept in EA
//! inodes) and of quota usage, on images made at test time with mke2fs,
//! debugfs and e2fsck, compared with `e2fsck -fn`.
//!
//! debugfs `ea_set` neither charges an EA inode's value to its owner's
//! i_blocks nor updates quota, and `mke2fs -d` leaves quota usage behind:
//! each base image is therefore settled with one `e2fsck -fy` and must then
//! be clean for both checkers before it is corrupted.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const SIZE: u64 = 32 << 20;

/// A small tree: two files and a directory with a bigger file.
fn tree(dir: &Path) -> PathBuf {
    let t = dir.join("tree");
    std::fs::create_dir_all(t.join("sub")).unwrap();
    std::fs::write(t.join("a"), b"a\n").unwrap();
    std::fs::write(t.join("b"), b"bb\n").unwrap();
    std::fs::write(t.join("sub/c"), file_content("sub/c", 50_000)).unwrap();
    t
}

/// Repairs `img` with `e2fsck -fy` (exit 0 or 1 expected).
fn settle(img: &Path) {
    let r = e2fsck(img, &["-fy"]);
    assert!(
        matches!(r.code(), Some(0 | 1)),
        "e2fsck -fy {}: {}",
        img.display(),
        r.describe()
    );
}

/// Base image with `features`, EA-inode values set when `ea` (two values
/// on /a, one on /b: they go to the inode body or the xattr block).
fn base(key: &str, features: &str, ea: bool) -> PathBuf {
    cached_image(key, |img| {
        let dir = TempDir::new(key);
        let t = tree(dir.path());
        let opts = MkfsOpts::ext4()
            .block_size(4096)
            .inode_size(256)
            .features(features);
        mkfs(img, SIZE, &opts, Some(&t));
        if ea {
            let big = dir.join("big");
            std::fs::write(&big, file_content("big", 6000)).unwrap();
            let big2 = dir.join("big2");
            std::fs::write(&big2, file_content("big2", 9000)).unwrap();
            let b = big.display();
            let b2 = big2.display();
            debugfs_w(
                img,
                &[
                    format!("ea_set -f {b} /a user.one"),
                    format!("ea_set -f {b2} /a user.two"),
                    format!("ea_set -f {b} /b user.three"),
                ],
            );
        }
        settle(img);
    })
}

fn ea_base() -> PathBuf {
    base("ea-inode-base.img", "ea_inode", true)
}

/// The EA inodes of an image (inodes with the EA_INODE flag).
fn ea_inodes(img: &Path) -> Vec<u64> {
    (12..40)
        .filter(|&ino| {
            let s = debugfs_r(img, &format!("stat <{ino}>"));
            s.split("Flags: 0x")
                .nth(1)
                .and_then(|r| {
                    let hex: String = r.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
                    u64::from_str_radix(&hex, 16).ok()
                })
                .is_some_and(|f| f & 0x20_0000 != 0)
        })
        .collect()
}

/// Copies `src`, applies debugfs `cmds` and returns (e2fsck, pfsck) exits.
fn verdicts(name: &str, src: &Path, cmds: &[String]) -> (i32, i32, String) {
    let dir = TempDir::new(name);
    let img = dir.join("x.img");
    copy_image(src, &img);
    debugfs_w(&img, cmds);
    // e2fsck 1.47.4 judges (it checks an entry's value size against its
    // EA inode's size, which 1.47.0 did not).
    let e2 = oracle_run(&img, &["-fn"]);
    let pf = pfsck_timeout(
        &[std::ffi::OsStr::new("-fn"), img.as_os_str()],
        std::time::Duration::from_secs(120),
    );
    let dump = format!(
        "===== e2fsck -fn =====\n{}\n===== pfsck -fn =====\n{}",
        e2.dump(4000),
        pf.dump(4000)
    );
    (e2.code().unwrap_or(-1), pf.code().unwrap_or(-1), dump)
}

/// e2fsck finds errors and so does pfsck (exit 4, not 8).
#[track_caller]
fn assert_both_dirty(name: &str, src: &Path, cmds: &[String]) {
    let (e, p, dump) = verdicts(name, src, cmds);
    assert!(e != 0 && e != 8, "[{name}] e2fsck -fn exit {e}\n{dump}");
    assert_eq!(p, 4, "[{name}] pfsck -fn exit {p} (e2fsck {e})\n{dump}");
}

/// Both give the same verdict (clean or not).
#[track_caller]
fn assert_agree(name: &str, src: &Path, cmds: &[String]) {
    let (e, p, dump) = verdicts(name, src, cmds);
    assert_eq!(e == 0, p == 0, "[{name}] e2fsck {e}, pfsck {p}\n{dump}");
}

fn tools() -> bool {
    ["mke2fs", "debugfs", "e2fsck"]
        .iter()
        .all(|t| try_tool(t).is_some())
        && Command::new(tool("mke2fs")).arg("-V").output().is_ok()
}

#[test]
fn ea_inode_clean() {
    if !tools() {
        return;
    }
    let img = ea_base();
    assert!(
        ea_inodes(&img).len() >= 2,
        "the fixture made no EA inodes: {}",
        debugfs_r(&img, "stat /a")
    );
    assert_both_clean("ea_inode", &img);
}

#[test]
fn ea_inode_corruptions() {
    if !tools() {
        return;
    }
    let img = ea_base();
    let eas = ea_inodes(&img);
    for &ea in &eas {
        let cases: [(&str, String); 6] = [
            ("clri", format!("clri <{ea}>")),
            ("links", format!("sif <{ea}> links_count 2")),
            ("no-flag", format!("sif <{ea}> flags 0x80000")),
            ("refcount", format!("sif <{ea}> version 7")),
            ("hash", format!("sif <{ea}> atime 7")),
            ("freed", format!("freei <{ea}>")),
        ];
        for (what, cmd) in cases {
            assert_both_dirty(&format!("ea{ea}-{what}"), &img, &[cmd]);
        }
        // The EA inode's size against the entry's value size (e2fsck
        // 1.47.4 compares them): both must say the same.
        assert_agree(
            &format!("ea{ea}-size"),
            &img,
            &[format!("sif <{ea}> size 1")],
        );
    }
    // An entry pointing at an inode that is no EA inode, and the owner's
    // i_blocks without the charge for its values.
    let a = inode_of(&img, "/a");
    assert_both_dirty("owner-blocks", &img, &[format!("sif <{a}> blocks 8")]);
}

fn quota_base() -> PathBuf {
    base("quota-base.img", "quota", false)
}

fn project_base() -> PathBuf {
    base("quota-project-base.img", "quota,project", false)
}

#[test]
fn quota_clean() {
    if !tools() {
        return;
    }
    assert_both_clean("quota", &quota_base());
    assert_both_clean("quota,project", &project_base());
    assert_both_clean(
        "quota,project,ea_inode",
        &base("quota-ea-base.img", "quota,project,ea_inode", true),
    );
}

#[test]
fn quota_corruptions() {
    if !tools() {
        return;
    }
    let q = quota_base();
    assert_both_dirty("uid", &q, &["sif /a uid 1234".to_string()]);
    assert_both_dirty("gid", &q, &["sif /sub/c gid 77".to_string()]);
    let p = project_base();
    assert_both_dirty("projid", &p, &["sif /sub/c projid 5".to_string()]);
    assert_both_dirty("uid-prj", &p, &["sif /b uid 9".to_string()]);
    // A quota file that cannot be read.
    assert_both_dirty("quota-magic", &q, &["sif <3> block[0] 0".to_string()]);
    let e = base("quota-ea-base.img", "quota,project,ea_inode", true);
    // The owner of EA-inode values is charged for them.
    assert_both_dirty("ea-owner-uid", &e, &["sif /a uid 9".to_string()]);
}

/// `debugfs list_quota` of every quota type of `img`: id, space, limits,
/// inodes, limits per line.
fn quota_lists(img: &Path) -> Vec<(String, Vec<Vec<u64>>)> {
    ["user", "group", "project"]
        .iter()
        .map(|t| {
            let rows = debugfs_r(img, &format!("list_quota {t}"))
                .lines()
                .filter_map(|l| {
                    l.split_whitespace()
                        .map(|w| w.parse().ok())
                        .collect::<Option<Vec<u64>>>()
                })
                .filter(|r| r.len() == 7)
                .collect();
            (t.to_string(), rows)
        })
        .collect()
}

/// The quota damages above are repaired by one `pfsck -fy` as e2fsck -fy
/// repairs them: the quota files are rewritten (ids added, usage set, the
/// EA-inode values charged to their owner) and list what e2fsck's list.
#[test]
fn quota_corruptions_are_repaired() {
    if !tools() {
        return;
    }
    let q = quota_base();
    let p = project_base();
    let e = base("quota-ea-base.img", "quota,project,ea_inode", true);
    let cases: [(&str, &Path, &str); 5] = [
        ("uid", &q, "sif /a uid 1234"),
        ("gid", &q, "sif /sub/c gid 77"),
        ("projid", &p, "sif /sub/c projid 5"),
        ("uid-prj", &p, "sif /b uid 9"),
        ("ea-owner-uid", &e, "sif /a uid 9"),
    ];
    for (name, src, cmd) in cases {
        let dir = TempDir::new(&format!("quota-fix-{name}"));
        let mine = dir.join("p.img");
        let theirs = dir.join("e.img");
        copy_image(src, &mine);
        debugfs_w(&mine, &[cmd]);
        copy_image(&mine, &theirs);
        let out = pfsck(&["-fy", mine.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "[{name}] pfsck -fy:\n{text}");
        assert_both_clean(name, &mine);
        settle(&theirs);
        assert_eq!(
            quota_lists(&mine),
            quota_lists(&theirs),
            "[{name}] quota files differ from e2fsck's"
        );
    }
}
