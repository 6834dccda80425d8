//! /lost+found created where the root has no room for its entry: e2fsck
//! -y grows the root by a block and links it there; e2fsck -n never looks
//! for it, so says nothing of it.

use crate::common::*;
use std::path::{Path, PathBuf};

/// ext4, 1 KiB blocks, no /lost+found, the root's one block filled by
/// four long names: 12 bytes are left, fewer than the entry needs.
fn full_root_image() -> PathBuf {
    cached_image("lost-found-full-root", |img| {
        mkfs(img, 8 << 20, &MkfsOpts::ext4().block_size(1024), None);
        let mut cmds = vec!["rmdir lost+found".to_string()];
        // 24 bytes of '.' and '..', three records of 260, one of 208.
        for (c, len) in [('x', 250), ('y', 250), ('z', 250), ('a', 200)] {
            cmds.push(format!("write /dev/null {}", c.to_string().repeat(len)));
        }
        debugfs_w(img, &cmds);
        let size = debugfs_r(img, "stat /");
        assert!(size.contains("Size: 1024"), "the root grew: {size}");
    })
}

fn run(img: &Path, mode: &str) -> (i32, String) {
    pfsck_code(&[mode], img)
}

#[test]
fn a_full_root_grows_to_hold_a_new_lost_found() {
    let dir = TempDir::new("lost-found-full-root");
    let img = dir.join("img");
    copy_image(&full_root_image(), &img);
    let (code, out) = run(&img, "-fy");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("There is no /lost+found.  Create? yes"),
        "{out}"
    );
    let after = e2fsck_fn_run(&img);
    assert_eq!(after.code(), Some(0), "{}", after.describe());
    let ls = debugfs_r(&img, "ls -l /lost+found");
    assert!(ls.contains(" .."), "no /lost+found: {ls}");
    assert!(debugfs_r(&img, "stat /").contains("Size: 2048"));
}

/// e2fsck -n does not look for /lost+found: nothing is said of it, with
/// or without something to reconnect.
#[test]
fn a_read_only_check_says_nothing_of_a_missing_lost_found() {
    let dir = TempDir::new("lost-found-read-only");
    let img = dir.join("img");
    copy_image(&full_root_image(), &img);
    let (code, out) = run(&img, "-fn");
    let e2 = oracle_run(&img, &["-fn"]);
    assert_eq!(Some(code), e2.code(), "{out}\n{}", e2.stdout);
    assert!(!out.contains("lost+found"), "{out}");
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    debugfs_w(
        &img,
        &[format!("write {file} orphan"), "unlink orphan".into()],
    );
    let (code, out) = run(&img, "-fn");
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("Connect to /lost+found? no"), "{out}");
    assert!(!out.contains("not found"), "{out}");
}
