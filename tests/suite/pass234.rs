//! Passes 2-4 on real images made at test time with mkfs.ext4 -d and
//! damaged with debugfs or byte edits: pfsck must find the file system
//! dirty exactly when `e2fsck -fn` does, with the expected kind of problem.
//! Skipped (with a note) where the e2fsprogs tools are not installed.

use pfsck::check::problem::{Code, Pass};
use pfsck::check::{Options, run};
use std::path::{Path, PathBuf};
use std::process::Command;

fn have_tools() -> bool {
    ["mkfs.ext4", "debugfs", "e2fsck"]
        .iter()
        .all(|t| Command::new(t).arg("-V").output().is_ok())
}

struct Tmp(PathBuf);
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tmpdir(tag: &str) -> Tmp {
    let d = std::env::temp_dir().join(format!("pfsck-p234-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Tmp(d)
}

/// A small tree: nested directories, 40 files, a hard link, a symlink.
fn make_tree(root: &Path) {
    let a = root.join("a");
    std::fs::create_dir_all(a.join("b/c")).unwrap();
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::create_dir_all(root.join("e")).unwrap();
    for i in 1..=40 {
        std::fs::write(a.join(format!("f{i}")), format!("{i}\n")).unwrap();
    }
    std::fs::write(root.join("d/x"), "x").unwrap();
    std::fs::hard_link(root.join("d/x"), root.join("e/xl")).unwrap();
    std::os::unix::fs::symlink("/a/f1", root.join("sym")).unwrap();
}

fn mkfs(img: &Path, tree: &Path, opts: &[&str], size: &str) {
    let st = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .args(opts)
        .arg("-d")
        .arg(tree)
        .arg(img)
        .arg(size)
        .output()
        .unwrap();
    assert!(st.status.success(), "mkfs {opts:?}");
}

fn debugfs(img: &Path, cmd: &str) {
    let out = Command::new("debugfs")
        .args(["-w", "-R", cmd])
        .arg(img)
        .output()
        .unwrap();
    assert!(out.status.success(), "debugfs {cmd}");
}

fn e2fsck_dirty(img: &Path) -> bool {
    let st = Command::new("e2fsck").arg("-fn").arg(img).output().unwrap();
    st.status.code() != Some(0)
}

fn pfsck(img: &Path) -> (bool, Vec<Code>) {
    let rep = run(img, &Options::default()).unwrap();
    let codes = rep
        .problems
        .iter()
        .filter(|p| matches!(p.spec().pass, Pass::P2 | Pass::P3 | Pass::P4))
        .map(|p| p.code)
        .collect();
    (rep.has_errors() || rep.has_fatal(), codes)
}

/// Block size and the physical blocks of directory `path`.
fn dir_blocks(img: &Path, path: &str) -> (usize, Vec<u64>) {
    let out = Command::new("debugfs")
        .args(["-R", &format!("blocks {path}")])
        .arg(img)
        .output()
        .unwrap();
    let blocks = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let sb = std::fs::read(img).unwrap();
    let log = u32::from_le_bytes([sb[1024 + 24], sb[1025 + 24], sb[1026 + 24], sb[1027 + 24]]);
    (1024usize << log, blocks)
}

/// Applies `edit(block, entry offset)` to the entry called `name` in
/// directory `path`.
fn edit_entry(img: &Path, path: &str, name: &str, edit: impl Fn(&mut [u8], usize)) {
    let (bs, blocks) = dir_blocks(img, path);
    let mut data = std::fs::read(img).unwrap();
    for blk in blocks {
        let start = blk as usize * bs;
        let b = &mut data[start..start + bs];
        let mut off = 0;
        while off + 8 <= bs {
            let rl = u16::from_le_bytes([b[off + 4], b[off + 5]]) as usize;
            let nl = b[off + 6] as usize;
            if rl < 8 {
                break;
            }
            if b.get(off + 8..off + 8 + nl) == Some(name.as_bytes()) {
                edit(b, off);
                std::fs::write(img, &data).unwrap();
                return;
            }
            off += rl;
        }
    }
    panic!("entry {name} not found in {path}");
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
fn put16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

type Damage = fn(&Path);

fn scenarios() -> Vec<(&'static str, Damage, Option<Code>)> {
    vec![
        ("healthy", |_| {}, None),
        (
            "unlink",
            |i| debugfs(i, "unlink a/f3"),
            Some(Code::InodeUnattached),
        ),
        (
            "extra link",
            |i| debugfs(i, "link a/f4 d/f4b"),
            Some(Code::InodeLinkCount),
        ),
        (
            "link to dir",
            |i| debugfs(i, "link a/b d/b2"),
            Some(Code::DirEntryLinkToDir),
        ),
        (
            "clri file",
            |i| debugfs(i, "clri a/f5"),
            Some(Code::DirEntryDeletedInode),
        ),
        (
            "clri dir",
            |i| debugfs(i, "clri a/b"),
            Some(Code::DirEntryDeletedInode),
        ),
        (
            "links_count",
            |i| debugfs(i, "sif d/x links_count 5"),
            Some(Code::InodeLinkCount),
        ),
        (
            "root links",
            |i| debugfs(i, "sif / links_count 1"),
            Some(Code::InodeLinkCount),
        ),
        ("rmdir lost+found", |i| debugfs(i, "rmdir lost+found"), None),
        (
            "file type",
            |i| edit_entry(i, "/a", "f6", |b, o| b[o + 7] = 2),
            Some(Code::DirEntryFileType),
        ),
        (
            "inode range",
            |i| edit_entry(i, "/a", "f7", |b, o| put32(b, o, 999_999)),
            Some(Code::DirEntryBadInode),
        ),
        (
            "reserved inode",
            |i| edit_entry(i, "/a", "f8", |b, o| put32(b, o, 7)),
            Some(Code::DirEntryReservedInode),
        ),
        (
            "slash in name",
            |i| edit_entry(i, "/a", "f9", |b, o| b[o + 8] = b'/'),
            Some(Code::DirEntryIllegalChars),
        ),
        (
            "rec_len",
            |i| edit_entry(i, "/a", "f10", |b, o| put16(b, o + 4, 13)),
            Some(Code::DirBlockCorrupt),
        ),
        (
            "name_len",
            |i| edit_entry(i, "/a", "f11", |b, o| b[o + 6] = 200),
            Some(Code::DirBlockCorrupt),
        ),
        (
            "dotdot",
            |i| edit_entry(i, "/a", "..", |b, o| put32(b, o, 12)),
            Some(Code::DirDotDotWrong),
        ),
        (
            "dot",
            |i| edit_entry(i, "/a", ".", |b, o| put32(b, o, 13)),
            Some(Code::DirDotBadInode),
        ),
        (
            "link to root",
            |i| edit_entry(i, "/a", "f13", |b, o| put32(b, o, 2)),
            Some(Code::DirEntryLinkToRoot),
        ),
        (
            "duplicate",
            |i| edit_entry(i, "/a", "f14", |b, o| b[o + 10] = b'5'),
            Some(Code::DirEntryDuplicate),
        ),
    ]
}

fn check_variant(tag: &str, opts: &[&str]) {
    if !have_tools() {
        eprintln!("e2fsprogs not installed: skipped");
        return;
    }
    let tmp = tmpdir(tag);
    let tree = tmp.0.join("tree");
    make_tree(&tree);
    let base = tmp.0.join("base.img");
    mkfs(&base, &tree, opts, "16M");
    let img = tmp.0.join("t.img");
    for (name, damage, code) in scenarios() {
        std::fs::copy(&base, &img).unwrap();
        damage(&img);
        let want = e2fsck_dirty(&img);
        let (got, codes) = pfsck(&img);
        assert_eq!(
            got, want,
            "{tag}/{name}: pfsck dirty={got}, e2fsck dirty={want}: {codes:?}"
        );
        if let Some(c) = code
            && want
        {
            // Without the filetype feature any file type is the problem.
            let alt = if c == Code::DirEntryFileType {
                Code::DirEntryFileTypeSet
            } else {
                c
            };
            assert!(
                codes.contains(&c) || codes.contains(&alt),
                "{tag}/{name}: expected {c:?} in {codes:?}"
            );
        }
    }
}

#[test]
fn ext4_metadata_csum() {
    check_variant("csum", &[]);
}

#[test]
fn ext4_no_csum_1k() {
    check_variant("nocsum", &["-O", "^metadata_csum", "-b", "1024"]);
}

#[test]
fn ext2_plain() {
    check_variant("ext2", &["-t", "ext2"]);
}

#[test]
fn ext3_no_dir_index() {
    check_variant("ext3", &["-t", "ext3", "-O", "^dir_index"]);
}

#[test]
fn ext4_no_filetype() {
    check_variant("nofiletype", &["-O", "^filetype"]);
}

#[test]
fn ext4_inline_data() {
    check_variant("inline", &["-O", "inline_data"]);
}

/// A directory big enough for a two-level htree (1 KiB blocks), indexed by
/// `e2fsck -fD`, then damaged in its index.
#[test]
fn htree_two_levels() {
    if !have_tools() {
        eprintln!("e2fsprogs not installed: skipped");
        return;
    }
    for (tag, opts) in [("csum", &[][..]), ("nocsum", &["-O", "^metadata_csum"][..])] {
        let tmp = tmpdir(&format!("htree-{tag}"));
        let tree = tmp.0.join("tree");
        let d = tree.join("d");
        std::fs::create_dir_all(&d).unwrap();
        for i in 0..12000 {
            std::fs::File::create(d.join(format!("name_{i}"))).unwrap();
        }
        let base = tmp.0.join("base.img");
        let mut o = vec!["-b", "1024", "-N", "16000"];
        o.extend_from_slice(opts);
        mkfs(&base, &tree, &o, "32M");
        let st = Command::new("e2fsck")
            .arg("-fyD")
            .arg(&base)
            .output()
            .unwrap();
        assert!(st.status.code().unwrap_or(8) < 4);
        assert!(!e2fsck_dirty(&base));
        let (dirty, codes) = pfsck(&base);
        assert!(!dirty, "{tag}: healthy htree reported: {codes:?}");

        let (bs, blocks) = dir_blocks(&base, "/d");
        let root = blocks[0] as usize * bs;
        let data0 = std::fs::read(&base).unwrap();
        assert_eq!(data0[root + 0x1e], 1, "{tag}: expected a two-level tree");
        // The first interior node, named by the root's first entry.
        let node_lblk = u32::from_le_bytes(data0[root + 0x24..root + 0x28].try_into().unwrap());
        let node = blocks[node_lblk as usize] as usize * bs;
        let img = tmp.0.join("t.img");
        // (byte offset in the image, bytes, expected problem)
        let edits: [(usize, Vec<u8>, Code); 5] = [
            (root + 0x20, 100u16.to_le_bytes().to_vec(), Code::HtreeLimit),
            (root + 0x22, 200u16.to_le_bytes().to_vec(), Code::HtreeCount),
            (
                node + 16,
                0xffff_fff0u32.to_le_bytes().to_vec(),
                Code::HtreeHashOrder,
            ),
            (
                root + 0x2c,
                99_999u32.to_le_bytes().to_vec(),
                Code::HtreeBadBlock,
            ),
            (
                node + 20,
                0u32.to_le_bytes().to_vec(),
                Code::HtreeBlockReferenced,
            ),
        ];
        for (off, bytes, code) in edits {
            let mut data = data0.clone();
            data[off..off + bytes.len()].copy_from_slice(&bytes);
            std::fs::write(&img, &data).unwrap();
            assert!(e2fsck_dirty(&img), "{tag}: e2fsck finds {code:?} clean");
            let (dirty, codes) = pfsck(&img);
            assert!(
                dirty && codes.contains(&code),
                "{tag}: {code:?} not in {codes:?}"
            );
        }
    }
}
