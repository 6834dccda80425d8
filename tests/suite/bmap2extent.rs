//! `-E bmap2extent`: every block map converted to an extent tree, as
//! e2fsck 1.47.4's pass 1E converts them. ext3 images populated with
//! `mke2fs -d` (small files, sparse files, files that need double and
//! triple indirect blocks, a file of 400 one-block islands whose tree
//! needs two index levels with 1 KiB blocks, a large directory, fast and
//! slow symlinks) and a file fragmented with `debugfs -w` (appended into
//! the holes left by removed files), given the extent feature with
//! `tune2fs` or not. One copy is converted by `pfsck -fy`, another by the
//! oracle; then: the oracle finds pfsck's copy clean, every file maps the
//! same data blocks at the same logical blocks (contents unchanged), the
//! inodes left block-mapped are those e2fsck leaves, and the free blocks
//! grew by exactly the indirect blocks given back less the tree blocks.

use crate::common::*;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const MIB: u64 = 1 << 20;

/// The paths of the source tree, as debugfs names them.
const PATHS: &[&str] = &[
    "/",
    "/lost+found",
    "/small1",
    "/small2",
    "/small3",
    "/medium",
    "/sparse",
    "/dind",
    "/tind",
    "/islands",
    "/dir",
    "/dir/name_1",
    "/dir/name_400",
    "/fast",
    "/slow",
    "/frag",
    "/fr",
    "/empty",
];

/// The tree `mke2fs -d` copies: what each kind of block map looks like
/// with `bs`-byte blocks.
fn source_tree(dir: &Path, bs: u64) {
    std::fs::create_dir_all(dir.join("dir")).unwrap();
    for (name, len) in [("small1", 700), ("small2", 5000), ("small3", 13000)] {
        std::fs::write(dir.join(name), file_content(name, len)).unwrap();
    }
    // Past the twelve direct blocks: one indirect block.
    std::fs::write(dir.join("medium"), file_content("medium", 40 * 1024)).unwrap();
    // Holes between a few blocks of data.
    let f = std::fs::File::create(dir.join("sparse")).unwrap();
    f.set_len(3 * MIB).unwrap();
    for at in [100, 2 * MIB / 3, 2 * MIB + 5000] {
        write_at(&f, at, &file_content(&format!("sparse{at}"), 3000));
    }
    // Double indirect: past 12 + bs/4 blocks, contiguous.
    let per = bs / 4;
    let dind = (12 + per + 40) * bs;
    std::fs::write(dir.join("dind"), file_content("dind", dind as usize)).unwrap();
    // Triple indirect: data past 12 + per + per^2 blocks, the rest a hole.
    let f = std::fs::File::create(dir.join("tind")).unwrap();
    let at = (12 + per + per * per + 10) * bs;
    write_at(&f, at, &file_content("tind", 3 * bs as usize));
    // 400 islands of one block: 400 extents, more than four leaves of
    // 1 KiB blocks hold (84 each), so two index levels there.
    let f = std::fs::File::create(dir.join("islands")).unwrap();
    for i in 0..400u64 {
        write_at(
            &f,
            i * 3 * bs,
            &file_content(&format!("isl{i}"), bs as usize),
        );
    }
    for i in 1..=400 {
        let name = format!("name_{i}");
        std::fs::write(dir.join("dir").join(&name), format!("{name}\n")).unwrap();
    }
    std::os::unix::fs::symlink("small1", dir.join("fast")).unwrap();
    std::os::unix::fs::symlink("s".repeat(200), dir.join("slow")).unwrap();
    std::fs::write(dir.join("empty"), b"").unwrap();
}

fn write_at(f: &std::fs::File, at: u64, data: &[u8]) {
    use std::os::unix::fs::FileExt;
    f.write_all_at(data, at).unwrap();
}

/// An ext3 image of the source tree with `bs`-byte blocks, the extra
/// `features`, and `/frag`: 60 one-block files written, every other one
/// removed, then a file written into the holes they leave.
fn ext3_image(tmp: &TempDir, bs: u64, features: &str) -> std::path::PathBuf {
    let src = tmp.join(format!("src{bs}"));
    source_tree(&src, bs);
    let img = tmp.join("orig.img");
    let opts = MkfsOpts::ext3()
        .block_size(u32::try_from(bs).unwrap())
        .features(features);
    mkfs(&img, 48 * MIB, &opts, Some(&src));
    let one = tmp.join("one");
    std::fs::write(&one, file_content("one", bs as usize)).unwrap();
    let frag = tmp.join("frag");
    std::fs::write(&frag, file_content("frag", (200 * bs) as usize)).unwrap();
    let mut cmds = vec!["mkdir fr".to_string()];
    cmds.extend((0..60).map(|i| format!("write {} fr/f{i}", one.display())));
    cmds.extend((0..60).step_by(2).map(|i| format!("rm fr/f{i}")));
    cmds.push(format!("write {} frag", frag.display()));
    debugfs_w(&img, &cmds);
    img
}

/// debugfs's read-only commands run in one go; its output.
fn debugfs_many(img: &Path, cmds: &[String]) -> String {
    let mut child = Command::new(tool("debugfs"))
        .arg("-f")
        .arg("-")
        .arg(img)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(cmds.join("\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What `stat` says of one inode: its flags, i_blocks (512-byte units),
/// the data blocks by logical block, and the mapping blocks (indirect or
/// extent tree blocks).
#[derive(Debug, Default, PartialEq)]
struct Stat {
    flags: u32,
    sectors: u64,
    data: BTreeMap<u64, u64>,
    nodes: u64,
}

/// Each path's `stat`.
fn stats(img: &Path) -> BTreeMap<&'static str, Stat> {
    let cmds: Vec<String> = PATHS.iter().map(|p| format!("stat \"{p}\"")).collect();
    let out = debugfs_many(img, &cmds);
    let parts: Vec<&str> = out.split("Inode: ").skip(1).collect();
    assert_eq!(parts.len(), PATHS.len(), "{out}");
    PATHS
        .iter()
        .zip(parts)
        .map(|(&p, s)| (p, parse_stat(s)))
        .collect()
}

fn parse_stat(s: &str) -> Stat {
    let field = |name: &str| {
        let at = s.find(name).unwrap_or_else(|| panic!("{name} in {s}")) + name.len();
        s[at..].split_whitespace().next().unwrap().to_string()
    };
    let flags = u32::from_str_radix(field("Flags:").trim_start_matches("0x"), 16).unwrap();
    let mut st = Stat {
        flags,
        sectors: field("Blockcount:").parse().unwrap(),
        ..Stat::default()
    };
    // "(0-11):1000-1011, (IND):1012, (12):1013" or, for extents,
    // "(ETB0):5000, (0-11):1000-1011".
    let list = s
        .split_once("BLOCKS:\n")
        .or_else(|| s.split_once("EXTENTS:\n"))
        .map_or("", |(_, rest)| rest.lines().next().unwrap_or(""));
    for item in list.split(", ").filter(|i| !i.is_empty()) {
        let (l, p) = item.trim().split_once("):").unwrap();
        let l = l.trim_start_matches('(');
        let range = |t: &str| match t.split_once('-') {
            Some((a, b)) => (a.parse::<u64>().unwrap(), b.parse::<u64>().unwrap()),
            None => (t.parse().unwrap(), t.parse().unwrap()),
        };
        if l.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            let ((l0, l1), (p0, _)) = (range(l), range(p.trim_start_matches("[u] ")));
            for k in 0..=l1 - l0 {
                st.data.insert(l0 + k, p0 + k);
            }
        } else {
            // IND, DIND, TIND, ETBn: a run of mapping blocks.
            let (p0, p1) = range(p);
            st.nodes += p1 - p0 + 1;
        }
    }
    st
}

const EXTENTS_FL: u32 = 0x80000;
const INDEX_FL: u32 = 0x1000;

/// The free blocks the superblock counts.
fn free_blocks(img: &Path) -> u64 {
    let out = Command::new(tool("dumpe2fs"))
        .arg("-h")
        .arg(img)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("Free blocks:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

/// pfsck with its clock at `now` (seconds): repairs run at different
/// seconds record the same time.
fn pfsck_fixed_time(args: &[&str], img: &Path, now: u64) -> std::process::Output {
    Command::new(pfsck_bin())
        .env("PFSCK_TIME", now.to_string())
        .args(args)
        .arg(img)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Converts a copy of `orig` with pfsck (at 1 and 2 threads, and with
/// -p) and another with the oracle, and judges them as the module says.
fn converted_as_e2fsck(tmp: &TempDir, orig: &Path, bs: u64) {
    let before = stats(orig);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let now = now.unwrap().as_secs();
    let p = tmp.join("pfsck.img");
    std::fs::copy(orig, &p).unwrap();
    let out = pfsck_fixed_time(&["-fy", "-m1", "-E", "bmap2extent"], &p, now);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // Done without a question, under pass 1E's header.
    assert!(
        text.contains("Pass 1: inodes, the blocks they map, their sizes\nPass 1E: block maps converted to extent trees\nPass 2: "),
        "{text}"
    );
    assert!(!text.contains("converts the map"), "{text}");
    assert!(
        text.contains("***** repairs written to the file system *****"),
        "{text}"
    );
    // The same bytes at two threads, and under -p (silently).
    for (args, name) in [
        (&["-fy", "-m2", "-E", "bmap2extent"][..], "m2.img"),
        (&["-fp", "-E", "bmap2extent"][..], "preen.img"),
    ] {
        let q = tmp.join(name);
        std::fs::copy(orig, &q).unwrap();
        let out = pfsck_fixed_time(args, &q, now);
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {said}");
        assert_eq!(hash_file(&p), hash_file(&q), "{args:?} left other bytes");
        if args[0] == "-fp" {
            assert_eq!(said.lines().count(), 1, "{said}");
        }
    }
    let Some(_) = oracle() else {
        eprintln!("no e2fsck 1.47.4: the oracle's half skipped");
        return;
    };
    assert_eq!(oracle_fn(&p), 0, "{}", oracle_run(&p, &["-fn"]).stdout);
    let e = tmp.join("e2fsck.img");
    std::fs::copy(orig, &e).unwrap();
    let run = oracle_run(&e, &["-fy", "-E", "bmap2extent"]);
    assert_eq!(run.code(), Some(0), "{}", run.stdout);
    assert!(
        run.stdout.contains("Pass 1E: Optimizing extent trees"),
        "{}",
        run.stdout
    );
    let (after, theirs) = (stats(&p), stats(&e));
    let mut converted = 0;
    let mut sectors_given_back = 0i64;
    for path in PATHS {
        let (b, a, t) = (&before[path], &after[path], &theirs[path]);
        // Contents: the same data blocks at the same logical blocks.
        assert_eq!(a.data, b.data, "{path}: data blocks moved");
        // Block-mapped or not as e2fsck leaves it (its pass 3A also
        // indexes the directories it rebuilds, which pfsck does not).
        assert_eq!(a.flags, t.flags & !INDEX_FL, "{path}: flags");
        assert_eq!(b.flags & EXTENTS_FL, 0, "{path} was block-mapped");
        if a.flags & EXTENTS_FL != 0 {
            converted += 1;
        }
        // i_blocks: the mapping blocks are all that changed.
        let unit = bs / 512;
        assert_eq!(a.sectors, (a.data.len() as u64 + a.nodes) * unit, "{path}");
        sectors_given_back += (b.sectors as i64) - (a.sectors as i64);
    }
    // All but the fast symlink.
    assert_eq!(converted, PATHS.len() - 1);
    assert_eq!(after["/fast"].flags & EXTENTS_FL, 0);
    // The deepest trees: TIND given back; islands two index levels deep
    // with 1 KiB blocks.
    assert_eq!(before["/tind"].nodes, 3);
    if bs == 1024 {
        assert!(
            after["/islands"].nodes >= 6,
            "{:?}",
            after["/islands"].nodes
        );
        let depth = debugfs_r(&p, "ex /islands");
        assert!(depth.contains(" 2/ 2 "), "{depth}");
    }
    let freed = free_blocks(&p) as i64 - free_blocks(orig) as i64;
    assert_eq!(freed * (bs as i64 / 512), sectors_given_back);
    eprintln!(
        "{bs}: free blocks {} -> pfsck {} e2fsck {}",
        free_blocks(orig),
        free_blocks(&p),
        free_blocks(&e)
    );
}

#[test]
fn bmap2extent_converts_ext3_1k() {
    let tmp = TempDir::new("bmap2extent-1k");
    let img = ext3_image(&tmp, 1024, "");
    run_ok(
        Command::new(tool("tune2fs"))
            .args(["-O", "extent"])
            .arg(&img),
    );
    converted_as_e2fsck(&tmp, &img, 1024);
}

#[test]
fn bmap2extent_converts_ext3_4k() {
    let tmp = TempDir::new("bmap2extent-4k");
    let img = ext3_image(&tmp, 4096, "");
    run_ok(
        Command::new(tool("tune2fs"))
            .args(["-O", "extent"])
            .arg(&img),
    );
    converted_as_e2fsck(&tmp, &img, 4096);
}

/// metadata_csum without the extent feature: e2fsck sets the feature
/// itself, and every tree block carries its checksum.
#[test]
fn bmap2extent_sets_the_extent_feature_with_metadata_csum() {
    let tmp = TempDir::new("bmap2extent-csum");
    let img = ext3_image(&tmp, 1024, "metadata_csum");
    assert!(!dumpe2fs(&img).features.iter().any(|f| f == "extent"));
    converted_as_e2fsck(&tmp, &img, 1024);
    let p = tmp.join("pfsck.img");
    let features = dumpe2fs(&p).features;
    assert!(features.iter().any(|f| f == "extent"), "{features:?}");
    assert!(
        features.iter().any(|f| f == "metadata_csum"),
        "{features:?}"
    );
}

/// -n converts nothing and writes nothing, as e2fsck -n schedules nothing
/// (it then hangs failing to write a superblock it marked changed).
#[test]
fn bmap2extent_under_n_writes_nothing() {
    let tmp = TempDir::new("bmap2extent-n");
    let img = ext3_image(&tmp, 1024, "");
    let before = hash_file(&img);
    let out = pfsck(&["-fn", "-E", "bmap2extent", img.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("-E bmap2extent converts nothing under -n"),
        "{err}"
    );
    assert_eq!(hash_file(&img), before);
}

/// A block map with an illegal pointer: fixed first (as e2fsck's pass 1
/// does), then converted; the oracle finds the result clean and the
/// other files converted.
#[test]
fn bmap2extent_after_a_block_map_fix() {
    let tmp = TempDir::new("bmap2extent-damage");
    let img = ext3_image(&tmp, 1024, "");
    run_ok(
        Command::new(tool("tune2fs"))
            .args(["-O", "extent"])
            .arg(&img),
    );
    debugfs_w(&img, &["sif /small3 block[2] 99999999"]);
    let out = pfsck(&["-fy", "-E", "bmap2extent", img.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("is out of bounds.  CLEARED."), "{text}");
    assert!(
        text.contains("Pass 1E: block maps converted to extent trees"),
        "{text}"
    );
    let after = stats(&img);
    for path in PATHS.iter().filter(|&&p| p != "/fast") {
        assert_ne!(after[path].flags & EXTENTS_FL, 0, "{path}");
    }
    if oracle().is_some() {
        assert_eq!(oracle_fn(&img), 0, "{}", oracle_run(&img, &["-fn"]).stdout);
    }
}
