//! `-l`, `-L`, `-c`, `-cc`, `-k`: the same command line through e2fsck
//! 1.47.4 and pfsck on copies of one image. Both must exit alike, list
//! the same bad blocks (`dumpe2fs -b`), have them allocated, and leave a
//! file system e2fsck -fn finds clean.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A 1 KiB-block ext4 image with a 40 KiB file, whose blocks follow the
/// metadata of group 0 (the free blocks start at 1658).
fn base(dir: &TempDir) -> PathBuf {
    let tree = dir.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("f"), file_content("f", 40 << 10)).unwrap();
    let img = dir.join("base");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&tree),
    );
    img
}

fn bad_blocks(img: &Path) -> Vec<u64> {
    let out = std::process::Command::new(tool("dumpe2fs"))
        .arg("-b")
        .arg(img)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn in_use(img: &Path, blk: u64) -> bool {
    debugfs_r(img, &format!("testb {blk}")).contains("marked in use")
}

/// Runs `args` then `img` through `bin`; the exit code.
fn run(bin: &Path, args: &[&str], img: &Path) -> Option<i32> {
    let mut cmd = std::process::Command::new(bin);
    cmd.args(args).arg(img);
    let r = run_timeout(cmd, Duration::from_secs(120));
    assert!(!r.timed_out, "{} {args:?} timed out", bin.display());
    r.code()
}

/// Each case on fresh copies of `start`: what e2fsck does, pfsck does
/// (exit code, bad blocks listed, e2fsck -fn's exit code after).
fn same_as_e2fsck(dir: &TempDir, start: &Path, cases: &[(&[&str], &str)]) -> Vec<String> {
    let e2fsck = oracle().expect("the e2fsck 1.47.4 oracle");
    let mut diffs = Vec::new();
    for (k, (args, list)) in cases.iter().enumerate() {
        let file = dir.join(format!("list{k}"));
        std::fs::write(&file, list).unwrap();
        let file = file.to_str().unwrap();
        let args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "LIST" { file } else { a })
            .collect();
        let mut seen = Vec::new();
        for (name, bin) in [("e2fsck", e2fsck.as_path()), ("pfsck", pfsck_bin())] {
            let img = dir.join(format!("{name}{k}"));
            copy_image(start, &img);
            let code = run(bin, &args, &img);
            let listed = bad_blocks(&img);
            let unused: Vec<u64> = listed
                .iter()
                .copied()
                .filter(|&b| !in_use(&img, b))
                .collect();
            if !unused.is_empty() {
                diffs.push(format!("{args:?}: {name} left bad blocks free: {unused:?}"));
            }
            // e2fsck -fn's verdict after each: clean, but where preen
            // stopped (then the same in both).
            let after = oracle_fn(&img);
            seen.push((code, listed, after));
        }
        if seen[0].2 != 0 && args[0] != "-fp" {
            diffs.push(format!(
                "{args:?}: e2fsck -fn exits {} after e2fsck",
                seen[0].2
            ));
        }
        if seen[0] != seen[1] {
            diffs.push(format!(
                "{args:?} (list {list:?}): e2fsck {:?}, pfsck {:?}",
                seen[0], seen[1]
            ));
        }
    }
    diffs
}

/// -l and -L write the list into the bad blocks inode: free blocks, an
/// indirect block (20 blocks), the empty indirect block 12 blocks get,
/// blocks outside the file system ignored, a block a file uses (shared
/// with the bad blocks inode, copied by pass 1D), the block bitmap's
/// block (relocated), the primary superblock and descriptors (0x010019,
/// 0x01001A: dropped from the list), a reserved descriptor block
/// (0x01001D: named, kept); -n refuses them.
#[test]
fn lists_from_a_file_as_e2fsck() {
    if oracle().is_none() {
        eprintln!("skipped: no e2fsck 1.47.4 oracle");
        return;
    }
    let dir = TempDir::new("badblocks-l");
    let img = base(&dir);
    let file_block = blocks_of(&img, "/f")[2];
    let twenty: String = (5000..5020).map(|b| format!("{b}\n")).collect();
    let twelve: String = (5000..5012).map(|b| format!("{b}\n")).collect();
    let shared = format!("{file_block}\n");
    let bitmap = format!("{}\n", dumpe2fs(&img).groups[0].block_bitmap);
    let cases: Vec<(&[&str], &str)> = vec![
        (&["-fy", "-l", "LIST"], "5000\n5001\n"),
        (&["-y", "-l", "LIST"], "5000\n"),
        (&["-fp", "-l", "LIST"], "5000\nnot a block\n"),
        (&["-fy", "-l", "LIST"], &twenty),
        (&["-fy", "-L", "LIST"], &twelve),
        (&["-fy", "-l", "LIST"], "9000\n0\n5000\n"),
        (&["-fy", "-l", "LIST"], &shared),
        (&["-fy", "-l", "LIST"], &bitmap),
        // The primary superblock, a primary descriptor block: dropped
        // from the list again; a reserved descriptor block: kept, named.
        (&["-fy", "-l", "LIST"], "1\n"),
        (&["-fy", "-l", "LIST"], "2\n5000\n"),
        (&["-fy", "-l", "LIST"], "10\n"),
        (&["-fp", "-l", "LIST"], "10\n"),
        (&["-fp", "-l", "LIST"], "1\n"),
        (&["-fn", "-l", "LIST"], "5000\n"),
        (&["-fn", "-L", "LIST"], ""),
    ];
    let diffs = same_as_e2fsck(&dir, &img, &cases);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// On an image whose bad blocks inode already lists 20 blocks (an
/// indirect block): -L replaces the list (the indirect block freed), -l
/// adds to it, -c (badblocks finds nothing in an image file) empties it
/// and -c -k keeps it; -cc is badblocks -n; -c with -n is refused.
#[test]
fn replacing_adding_and_scanning_as_e2fsck() {
    if oracle().is_none() {
        eprintln!("skipped: no e2fsck 1.47.4 oracle");
        return;
    }
    let dir = TempDir::new("badblocks-c");
    let img = base(&dir);
    let list = dir.join("twenty");
    let twenty: String = (5000..5020).map(|b| format!("{b}\n")).collect();
    std::fs::write(&list, twenty).unwrap();
    let listed = dir.join("listed");
    copy_image(&img, &listed);
    let code = run(
        &oracle().unwrap(),
        &["-fy", "-l", list.to_str().unwrap()],
        &listed,
    );
    assert_eq!(code, Some(0));
    assert_eq!(bad_blocks(&listed).len(), 20);
    let cases: Vec<(&[&str], &str)> = vec![
        (&["-fy", "-L", "LIST"], "6000\n"),
        (&["-fy", "-l", "LIST"], "6000\n"),
        (&["-fy", "-c"], ""),
        (&["-fy", "-c", "-k"], ""),
        (&["-fp", "-cc"], ""),
        (&["-fn", "-c"], ""),
    ];
    let diffs = same_as_e2fsck(&dir, &listed, &cases);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// The bad blocks inode as both write it: the same pointers, i_blocks
/// (the bad blocks alone, not the indirect block), size and times.
#[test]
fn the_inode_is_written_as_e2fsck_writes_it() {
    let Some(e2fsck) = oracle() else {
        eprintln!("skipped: no e2fsck 1.47.4 oracle");
        return;
    };
    let dir = TempDir::new("badblocks-inode");
    let img = base(&dir);
    let list = dir.join("list");
    let blocks: String = (5000..5013).map(|b| format!("{b}\n")).collect();
    std::fs::write(&list, blocks).unwrap();
    let mut inodes = Vec::new();
    for (name, bin) in [("e2fsck", e2fsck.as_path()), ("pfsck", pfsck_bin())] {
        let copy = dir.join(name);
        copy_image(&img, &copy);
        let mut cmd = std::process::Command::new(bin);
        cmd.args(["-fy", "-l", list.to_str().unwrap()])
            .arg(&copy)
            .env("E2FSCK_TIME", "1800000000")
            .env("PFSCK_TIME", "1800000000");
        let r = run_timeout(cmd, Duration::from_secs(120));
        assert_eq!(r.code(), Some(0), "{name}: {}", r.dump(2000));
        inodes.push(read_at(&copy, inode_offset(&copy, 1), 256));
    }
    assert_eq!(inodes[0], inodes[1]);
}
