//! A huge file's extent tree walked on several threads (issue 17): its
//! subtrees are walked apart, ahead of the walk, and taken in (claims
//! included) where the walk reaches them, or walked again in place when
//! what they assumed does not hold. Whatever the damage, the report and
//! the repaired bytes must be those of one thread.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BS: u64 = 4096;
/// One-block extents with a hole after each: about 120 leaves, enough
/// subtrees for the split.
const EXTENTS: u64 = 25_000;

/// An image whose file `big` maps `EXTENTS` one-block extents in a
/// depth-2 tree, and whose file `small` has a few blocks of its own.
fn base() -> PathBuf {
    cached_image("huge-file-frag.img", |img| {
        mkfs(img, 512 << 20, &MkfsOpts::ext4(), None);
        let mut cmds = vec![
            "write /dev/null big".to_string(),
            format!("fallocate big 0 {}", 2 * EXTENTS - 1),
        ];
        cmds.extend(
            (1..2 * EXTENTS)
                .step_by(2)
                .map(|b| format!("punch big {b} {b}")),
        );
        cmds.push(format!("sif big size {}", (2 * EXTENTS - 1) * BS));
        cmds.push("write /dev/null small".to_string());
        cmds.push("fallocate small 0 3".to_string());
        cmds.push(format!("sif small size {}", 4 * BS));
        debugfs_w(img, &cmds);
        assert_eq!(e2fsck_fn(img), 0, "the base image is not clean");
    })
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Child blocks an index node (or the inode's root) lists, in order.
fn children(node: &[u8]) -> Vec<u64> {
    (0..u16_at(node, 2) as usize)
        .map(|i| {
            let e = 12 + 12 * i;
            u64::from(u32_at(node, e + 4)) | u64::from(u16_at(node, e + 8)) << 32
        })
        .collect()
}

/// The index nodes and the leaves of `path`'s extent tree, in order.
fn tree(img: &Path, path: &str) -> (Vec<u64>, Vec<u64>) {
    let ino = inode_of(img, path);
    let root = read_at(img, inode_offset(img, ino) + 0x28, 60);
    let mut depth = u16_at(&root, 6);
    let mut level = children(&root);
    let mut index = Vec::new();
    while depth > 1 {
        index.extend(&level);
        level = level
            .iter()
            .flat_map(|&b| children(&read_at(img, b * BS, BS as usize)))
            .collect();
        depth -= 1;
    }
    (index, level)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Damage {
    /// A leaf's first extent starts where the previous leaf's last one.
    Order(usize),
    /// An index entry names the leaf of the entry before it.
    Shared(usize),
    Checksum(usize),
    Magic(usize),
    /// An extent past the end of the file system.
    OutOfRange(usize),
    /// An extent claiming the other file's first block.
    Dup(usize),
    /// An extent claiming the block of the leaf's first extent.
    DupInLeaf(usize),
    /// An extent claiming a block of another leaf's extent.
    DupAcross(usize, usize),
    /// A leaf's last extent far past EOF (unwritten, accepted): every
    /// leaf after it is out of order.
    PastEof(usize),
    /// A leaf's first extent after its index entry's start.
    IndexEnd(usize),
    Empty(usize),
    Depth(usize),
}

fn apply(img: &Path, index: &[u64], leaves: &[u64], small: u64, d: Damage) {
    let leaf = |i: usize| leaves[i] * BS;
    let entry = |i: usize, k: u64| leaf(i) + 12 + 12 * k;
    match d {
        Damage::Order(i) => {
            let prev = read_at(img, leaf(i - 1), BS as usize);
            let last = u16_at(&prev, 2) as usize - 1;
            let lblk = u32_at(&prev, 12 + 12 * last);
            write_at(img, entry(i, 0), &lblk.to_le_bytes());
        }
        Damage::Shared(k) => {
            let at = index[0] * BS + 12 + 12 * k as u64;
            let before = read_at(img, at - 12 + 4, 6);
            write_at(img, at + 4, &before);
        }
        Damage::Checksum(i) => write_at(img, leaf(i) + BS - 4, &[0xde, 0xad, 0xbe, 0xef]),
        Damage::Magic(i) => write_at(img, leaf(i), &[0, 0]),
        Damage::OutOfRange(i) => write_at(img, entry(i, 3) + 8, &0x7fff_ffffu32.to_le_bytes()),
        Damage::Dup(i) => write_at(img, entry(i, 1) + 8, &(small as u32).to_le_bytes()),
        Damage::DupInLeaf(i) => {
            let first = read_at(img, entry(i, 0) + 6, 6);
            write_at(img, entry(i, 2) + 6, &first);
        }
        Damage::DupAcross(i, j) => {
            let other = read_at(img, entry(j, 5) + 6, 6);
            write_at(img, entry(i, 7) + 6, &other);
        }
        Damage::PastEof(i) => {
            let b = read_at(img, leaf(i), BS as usize);
            let last = u64::from(u16_at(&b, 2)) - 1;
            let mut e = 50_000_000u32.to_le_bytes().to_vec();
            e.extend((32768u16 + 5).to_le_bytes());
            write_at(img, entry(i, last), &e);
        }
        Damage::IndexEnd(i) => {
            let lblk = u32_at(&read_at(img, entry(i, 0), 4), 0) + 1;
            write_at(img, entry(i, 0), &lblk.to_le_bytes());
        }
        Damage::Empty(i) => write_at(img, leaf(i) + 2, &[0, 0]),
        Damage::Depth(i) => write_at(img, leaf(i) + 6, &[1, 0]),
    }
}

/// Runs pfsck at a fixed time (a repair writes the time of the check).
fn run(args: &[&str], img: &Path) -> (Option<i32>, String) {
    let out = Command::new(pfsck_bin())
        .env("PFSCK_TIME", "1800000000")
        .args(args)
        .arg(img)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).replace(img.to_str().unwrap(), "IMG");
    (out.status.code(), text)
}

/// The subtrees walked apart and used, from `-t`.
fn split_counts(text: &str) -> (u64, u64) {
    let line = text
        .lines()
        .find(|l| l.contains("subtrees walked apart"))
        .unwrap_or_else(|| panic!("no split line in -t output:\n{text}"));
    let nums: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (nums[0], nums[1])
}

#[test]
fn split_walk_gives_one_threads_report_and_repair() {
    let tmp = TempDir::new("huge-files");
    let base = base();
    let (index, leaves) = tree(&base, "big");
    assert!(leaves.len() >= 100, "only {} leaves", leaves.len());
    let small_ino = inode_of(&base, "small");
    let root = read_at(&base, inode_offset(&base, small_ino) + 0x28, 60);
    assert_eq!(u16_at(&root, 6), 0, "small has a deeper tree");
    let small_block = u64::from(u32_at(&root, 12 + 8));

    // The split is really used on the clean image, and every subtree
    // walked apart is used: the walk waits for a slow helper (descheduled
    // on a busy machine) rather than walk its part a second time.
    let (code, text) = run(&["-fn", "-t", "-m2"], &base);
    assert_eq!(code, Some(0), "{text}");
    let (walked, used) = split_counts(&text);
    assert!(
        walked >= 64 && used == walked,
        "walked {walked}, used {used}"
    );

    let n = leaves.len();
    let cases: Vec<Vec<Damage>> = vec![
        vec![Damage::Order(n / 2)],
        vec![Damage::Shared(n / 3)],
        vec![Damage::Checksum(7)],
        vec![Damage::Magic(n - 2)],
        vec![Damage::OutOfRange(n / 4)],
        vec![Damage::Dup(n / 5)],
        vec![Damage::PastEof(10)],
        vec![Damage::IndexEnd(n / 2 + 1)],
        vec![Damage::Empty(20)],
        vec![Damage::Depth(30)],
        vec![
            Damage::PastEof(n / 2),
            Damage::Shared(n - 5),
            Damage::Checksum(3),
        ],
        vec![Damage::Order(5), Damage::Dup(6), Damage::Magic(40)],
        vec![Damage::DupInLeaf(n / 3)],
        vec![Damage::DupAcross(n / 2, 9), Damage::DupAcross(4, n - 3)],
    ];
    let mut fell_back = false;
    for (c, damages) in cases.iter().enumerate() {
        let img = tmp.join(format!("case{c}"));
        copy_image(&base, &img);
        for &d in damages {
            apply(&img, &index, &leaves, small_block, d);
        }
        let one = run(&["-fn", "-m1"], &img);
        let two = run(&["-fn", "-m2"], &img);
        assert_ne!(one.0, Some(0), "{damages:?}: not found\n{}", one.1);
        assert_eq!(one, two, "{damages:?}: -fn differs between -m1 and -m2");
        let (_, timed) = run(&["-fn", "-t", "-m2"], &img);
        // An empty node stops -n in pass 1, as e2fsck's walk fails there:
        // no pass-1 record then.
        if !(damages.contains(&Damage::Empty(20)) && timed.contains("lists no entries")) {
            let (walked, used) = split_counts(&timed);
            fell_back |= used < walked;
        }
        let a = tmp.join(format!("case{c}.m1"));
        let b = tmp.join(format!("case{c}.m2"));
        copy_image(&img, &a);
        copy_image(&img, &b);
        let fixed_one = run(&["-fy", "-m1"], &a);
        let fixed_two = run(&["-fy", "-m2"], &b);
        assert_eq!(
            fixed_one, fixed_two,
            "{damages:?}: -fy differs between -m1 and -m2"
        );
        assert_eq!(
            hash_file(&a),
            hash_file(&b),
            "{damages:?}: -fy wrote different bytes at -m1 and -m2"
        );
    }
    assert!(fell_back, "no case walked a subtree again in place");
}
