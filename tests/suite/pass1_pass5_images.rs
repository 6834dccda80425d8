//! Differential tests of passes 1, 1B and 5 on images made at test time
//! with the real tools (`mkfs.ext4 -d`, `debugfs -w`), compared with
//! `e2fsck -fn`. Skipped (passing) when the tools are not installed.

use std::path::{Path, PathBuf};
use std::process::Command;

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success() || !o.stderr.is_empty())
}

fn tools() -> bool {
    have("mkfs.ext4") && have("debugfs") && have("e2fsck")
}

fn workdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pfsck-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A small tree: files, a directory with enough entries for an htree,
/// a multi-block file, fast and slow symlinks, a hard link, a FIFO.
fn make_tree(dir: &Path) {
    let t = dir.join("tree");
    std::fs::create_dir_all(t.join("sub/a/b")).unwrap();
    std::fs::create_dir_all(t.join("many")).unwrap();
    for i in 0..40 {
        std::fs::write(t.join(format!("f{i}")), format!("file {i}\n")).unwrap();
    }
    for i in 0..300 {
        std::fs::write(t.join(format!("many/entry-with-a-long-name-{i}")), b"").unwrap();
    }
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(t.join("big"), big).unwrap();
    std::os::unix::fs::symlink("f1", t.join("fast")).unwrap();
    std::os::unix::fs::symlink("x".repeat(100), t.join("slow")).unwrap();
    std::fs::hard_link(t.join("f2"), t.join("hard")).unwrap();
    let _ = Command::new("mkfifo").arg(t.join("fifo")).status();
}

fn mkfs(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let img = dir.join(format!("{name}.img"));
    let st = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .args(args)
        .arg("-d")
        .arg(dir.join("tree"))
        .arg(&img)
        .arg("16M")
        .status()
        .unwrap();
    assert!(st.success(), "mkfs {name}");
    img
}

fn e2fsck_exit(img: &Path) -> i32 {
    Command::new("e2fsck")
        .arg("-fn")
        .arg(img)
        .output()
        .unwrap()
        .status
        .code()
        .unwrap_or(-1)
}

fn pfsck_exit(img: &Path, threads: &str) -> i32 {
    Command::new(env!("CARGO_BIN_EXE_pfsck"))
        .args(["-fn", "-m", threads])
        .arg(img)
        .output()
        .unwrap()
        .status
        .code()
        .unwrap_or(-1)
}

fn debugfs(img: &Path, cmd: &str) {
    let st = Command::new("debugfs")
        .args(["-w", "-R", cmd])
        .arg(img)
        .output()
        .unwrap();
    assert!(st.status.success(), "debugfs {cmd}");
}

#[test]
fn clean_images_are_clean() {
    if !tools() {
        return;
    }
    let dir = workdir("clean");
    make_tree(&dir);
    let variants: &[(&str, &[&str])] = &[
        ("ext4", &[]),
        ("ext4_1k", &["-b", "1024"]),
        ("ext3", &["-t", "ext3"]),
        ("ext2", &["-t", "ext2"]),
        ("nocsum", &["-O", "^metadata_csum"]),
        ("inline", &["-O", "inline_data"]),
        ("bit64", &["-O", "64bit"]),
        ("metabg", &["-O", "meta_bg,^resize_inode"]),
        ("i128", &["-I", "128"]),
    ];
    for (name, args) in variants {
        let img = mkfs(&dir, name, args);
        assert_eq!(e2fsck_exit(&img), 0, "{name}: e2fsck");
        assert_eq!(pfsck_exit(&img, "1"), 0, "{name}: pfsck -m1");
        assert_eq!(pfsck_exit(&img, "4"), 0, "{name}: pfsck -m4");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn corruptions_match_e2fsck() {
    if !tools() {
        return;
    }
    let dir = workdir("corrupt");
    make_tree(&dir);
    let base_ext4 = mkfs(&dir, "base4", &[]);
    let base_ext3 = mkfs(&dir, "base3", &["-t", "ext3"]);
    let cases: &[(&Path, &str, &[&str])] = &[
        (&base_ext4, "dtime", &["sif /f1 dtime 12345"]),
        (&base_ext4, "size_past_blocks", &["sif /f1 size 100000"]),
        (&base_ext4, "size_short", &["sif /big size 1000"]),
        (&base_ext4, "i_blocks", &["sif /f1 blocks 16"]),
        (&base_ext4, "index_on_file", &["sif /f1 flags 0x81000"]),
        (&base_ext4, "no_extent_flag", &["sif /f1 flags 0"]),
        (&base_ext4, "dir_size", &["sif /many size 1024"]),
        (&base_ext4, "fast_symlink_size", &["sif /fast size 5"]),
        (&base_ext4, "fifo_size", &["sif /fifo size 10"]),
        (&base_ext4, "freeb", &["freeb 1"]),
        (&base_ext4, "setb", &["setb 4000"]),
        (&base_ext4, "group_free", &["set_bg 1 free_blocks_count 5"]),
        (&base_ext4, "super_free", &["ssv free_blocks_count 100"]),
        (&base_ext4, "fallocate", &["fallocate /f3 0 50"]),
        (
            &base_ext4,
            "punch",
            &["punch /big 10 10", "punch /big 20 20"],
        ),
        (&base_ext4, "xattr", &["ea_set /f1 user.a hello"]),
        (&base_ext3, "ind_illegal", &["sif /big block[IND] 99999999"]),
        (&base_ext3, "dup_block", &["sif /f5 block[0] 3000"]),
        (&base_ext3, "dir_hole", &["punch /many 1 1"]),
    ];
    for (base, name, cmds) in cases {
        let img = dir.join(format!("{name}.img"));
        std::fs::copy(base, &img).unwrap();
        for c in *cmds {
            debugfs(&img, c);
        }
        let e = e2fsck_exit(&img);
        let p1 = pfsck_exit(&img, "1");
        let p4 = pfsck_exit(&img, "4");
        assert_eq!(p1, p4, "{name}: thread count changes the verdict");
        eprintln!("{name}: e2fsck {e}, pfsck {p1}");
        assert_eq!(e == 0, p1 == 0, "{name}: e2fsck {e}, pfsck {p1}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
