//! e2fsck's problem codes on the public images (issue 13): for each image
//! of `../shared/conformance`, e2fsck 1.47.4 `-fn` writes its problem log
//! (`problem_log_filename` in the file named by `E2FSCK_CONFIG`), and
//! `pfsck -fn --json` gives, per problem, the (code, inode, block) entries
//! that log would hold (`e2fsck_map::refs`). An image agrees when the two
//! multisets are equal.
//!
//! The log names every field e2fsck's context holds; only those the
//! code's message prints are compared (the catalogue's `names`: `i` the
//! inode, `d` the directory, `b` the block slot), as pfsck's entries do.
//!
//! The test prints, per image that differs, the entries only e2fsck logs
//! and those only pfsck gives, and asserts at least `PFSCK_CODES_FLOOR`
//! agreeing images (default: the figure reached so far), so agreement
//! cannot regress. Skipped without the images or the oracle.
//! `PFSCK_CODES_ONLY=name[,name]` runs only the named images.

use crate::common::*;
use pfsck::check::catalogue::{self, Kind};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// Images agreeing when this floor was last raised (the two on which
/// e2fsck crashes writing its log are no longer counted).
const FLOOR: usize = 130;

/// (code, inode, block), as the log's message would name them.
type Entry = (u32, Option<u64>, Option<u64>);

/// The multiset of entries: entry → count.
type Multiset = BTreeMap<Entry, usize>;

/// Which kinds of entries are compared: problems, and e2fsck's own
/// failures (it cannot open the file system as it is). Headers, latch
/// questions and list items are how e2fsck prints; messages inform about
/// what is already logged (pass 1D lists again the files pass 1B found
/// sharing blocks) or advise.
fn compared(kind: Kind) -> bool {
    matches!(kind, Kind::Problem | Kind::Internal)
}

/// The entries of an e2fsck problem log that are compared.
fn parse_log(text: &str) -> Multiset {
    let mut set = Multiset::new();
    for tag in log_problems(text) {
        let Some(code) = log_attr(tag, "code").and_then(|c| u32::try_from(c).ok()) else {
            continue;
        };
        let names = match catalogue::entry(code) {
            Some(e) if !compared(e.kind) => continue,
            Some(e) => e.names,
            None => "",
        };
        let ino = if names.contains('i') {
            log_attr(tag, "ino")
        } else if names.contains('d') {
            log_attr(tag, "dir")
        } else {
            None
        };
        let blk = names.contains('b').then(|| log_attr(tag, "blk")).flatten();
        *set.entry(norm((code, ino, blk))).or_default() += 1;
    }
    set
}

/// The log leaves out fields that are 0; pfsck may give them.
fn norm((code, ino, blk): Entry) -> Entry {
    (code, ino.filter(|&i| i != 0), blk.filter(|&b| b != 0))
}

fn pfsck_entries(json: &serde_json::Value) -> Multiset {
    let mut set = Multiset::new();
    for p in json["problems"].as_array().into_iter().flatten() {
        for r in p["e2fsck"].as_array().into_iter().flatten() {
            let code = r["code"]
                .as_str()
                .and_then(|c| u32::from_str_radix(c.trim_start_matches("0x"), 16).ok())
                .expect("e2fsck code");
            if catalogue::entry(code).is_some_and(|e| !compared(e.kind)) {
                continue;
            }
            *set.entry(norm((code, r["ino"].as_u64(), r["block"].as_u64())))
                .or_default() += 1;
        }
    }
    set
}

fn show(e: &Entry, n: usize) -> String {
    let mut s = format!("{:06x}", e.0);
    if let Some(i) = e.1 {
        let _ = write!(s, " i{i}");
    }
    if let Some(b) = e.2 {
        let _ = write!(s, " b{b}");
    }
    if n > 1 {
        let _ = write!(s, " x{n}");
    }
    s
}

/// What `a` holds more of than `b`.
fn minus(a: &Multiset, b: &Multiset) -> Vec<String> {
    a.iter()
        .filter_map(|(e, &n)| {
            let m = b.get(e).copied().unwrap_or(0);
            (n > m).then(|| show(e, n - m))
        })
        .collect()
}

/// The first entries of a list, and how many more there are.
fn head(list: &[String]) -> String {
    const SHOWN: usize = 12;
    let mut s = list[..list.len().min(SHOWN)].join(", ");
    if list.len() > SHOWN {
        let _ = write!(s, ", ... {} more", list.len() - SHOWN);
    }
    s
}

struct Outcome {
    test: String,
    /// None: compared; Some: why not (no image, e2fsck killed, ...).
    skipped: Option<String>,
    only_e2fsck: Vec<String>,
    only_pfsck: Vec<String>,
}

fn compare(dir: &Path, test: &str) -> Outcome {
    let mut out = Outcome {
        test: test.to_string(),
        skipped: None,
        only_e2fsck: Vec::new(),
        only_pfsck: Vec::new(),
    };
    let tmp = TempDir::new(&format!("codes-{test}"));
    let img = tmp.join("image");
    if let Err(e) = extract_image(&dir.join("e2fsprogs").join(test), &img) {
        out.skipped = Some(format!("not run: {e}"));
        return out;
    }
    let Some((e2, text)) = e2fsck_logged(&img, &["-fn"]) else {
        out.skipped = Some("no e2fsck 1.47.4".to_string());
        return out;
    };
    // The log is complete only when e2fsck ends by itself (it deadlocks
    // on two images under -n).
    if e2.timed_out || e2.signal().is_some() {
        out.skipped = Some(format!("e2fsck {}", e2.describe()));
        return out;
    }
    // Nor when e2fsck caught a crash of its own: logging 0x050018 (a
    // group flagged BLOCK_UNINIT with blocks in use) it reads a string
    // it never set and dies of SIGSEGV, where its run without the log
    // goes on to ask once per block.
    if e2.stderr.contains("Signal (11) SIGSEGV") {
        out.skipped = Some("e2fsck crashed writing its problem log".to_string());
        return out;
    }
    let want = parse_log(&text);
    let run = pfsck_timeout(
        &["-fn".as_ref(), "--json".as_ref(), img.as_os_str()],
        Duration::from_secs(60),
    );
    let got = match serde_json::from_str::<serde_json::Value>(&run.stdout) {
        Ok(json) => pfsck_entries(&json),
        Err(e) => {
            out.only_e2fsck = vec![format!("pfsck {} gave no JSON: {e}", run.describe())];
            return out;
        }
    };
    out.only_e2fsck = minus(&want, &got);
    out.only_pfsck = minus(&got, &want);
    out
}

#[test]
fn e2fsck_problem_codes_on_public_images() {
    let (Some(dir), Some(_)) = (conformance_dir(), oracle()) else {
        println!("conformance images or e2fsck 1.47.4 not found, skipped");
        return;
    };
    let only: Option<Vec<String>> = std::env::var("PFSCK_CODES_ONLY")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    let mut tests: Vec<String> = std::fs::read_dir(dir.join("e2fsprogs"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|t| only.as_ref().is_none_or(|o| o.contains(t)))
        .collect();
    tests.sort();
    let outcomes = parallel_map(&tests, test_threads(), |_, t| compare(&dir, t));
    let mut agree = Vec::new();
    let mut report = String::new();
    for o in &outcomes {
        if let Some(why) = &o.skipped {
            let _ = writeln!(report, "{:<28} DIFFERS ({why})", o.test);
        } else if o.only_e2fsck.is_empty() && o.only_pfsck.is_empty() {
            agree.push(o.test.as_str());
        } else {
            let _ = writeln!(
                report,
                "{:<28} DIFFERS  e2fsck only: [{}]  pfsck only: [{}]",
                o.test,
                head(&o.only_e2fsck),
                head(&o.only_pfsck)
            );
        }
    }
    let floor = std::env::var("PFSCK_CODES_FLOOR")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if only.is_some() { 0 } else { FLOOR });
    println!(
        "{report}\nsame e2fsck codes on the same objects: {} of {} images (floor {floor})",
        agree.len(),
        outcomes.len()
    );
    assert!(
        agree.len() >= floor,
        "{} of {} images agree, below the floor of {floor}",
        agree.len(),
        outcomes.len()
    );
}

/// The set of codes e2fsck 1.47.4 `-fn` logs on `img` (every entry but
/// the pass headers: latch questions and list ends too, as the
/// differential fuzzer compares them) and the set `pfsck -fn --json`
/// gives. None without the oracle.
fn code_sets(img: &Path) -> Option<(Vec<u32>, Vec<u32>)> {
    let want = e2fsck_codes(img, &["-fn"])?;
    let run = pfsck_timeout(
        &["-fn".as_ref(), "--json".as_ref(), img.as_os_str()],
        Duration::from_secs(60),
    );
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("pfsck --json");
    let mut got = report_e2fsck_codes(&json);
    got.sort_unstable();
    got.dedup();
    Some((want, got))
}

fn hex(v: &[u32]) -> Vec<String> {
    v.iter().map(|c| format!("{c:06x}")).collect()
}

pub(crate) fn assert_same_codes(img: &Path, must: &[u32]) {
    let Some((want, got)) = code_sets(img) else {
        println!("e2fsck 1.47.4 not found, skipped");
        return;
    };
    assert_eq!(hex(&got), hex(&want), "pfsck's codes, then e2fsck's");
    for c in must {
        assert!(
            want.contains(c),
            "e2fsck did not log {c:06x}: the damage missed"
        );
    }
}

/// e2fsck asks about the bitmap differences of pass 5 as a set (a
/// question before, an end after), and about group descriptor checksums
/// and bitmap checksums once for all groups: pfsck's report names those
/// entries too.
#[test]
fn latch_questions_of_bitmaps_and_checksums() {
    let tmp = TempDir::new("codes-latch");
    let img = tmp.join("image");
    mkfs(&img, 16 << 20, &MkfsOpts::ext4(), None);
    debugfs_w(&img, &["setb 5000 8", "seti <30>"]);
    // Alone in its session: writing the bitmaps rewrites every checksum.
    debugfs_w(&img, &["set_bg 1 checksum 0x1234"]);
    assert_same_codes(
        &img,
        &[0x050003, 0x050006, 0x050007, 0x05000A, 0x00003E, 0x000035],
    );
}

/// An inode's illegal blocks: e2fsck asks once per inode before the
/// first of them.
#[test]
fn latch_question_of_illegal_blocks_per_inode() {
    let tmp = TempDir::new("codes-latch-blocks");
    let img = tmp.join("image");
    mkfs(&img, 8 << 20, &MkfsOpts::ext2().block_size(1024), None);
    let data = tmp.join("data");
    std::fs::write(&data, vec![7u8; 3000]).unwrap();
    let d = data.display();
    debugfs_w(
        &img,
        &[
            format!("write {d} a"),
            format!("write {d} b"),
            "sif a block[1] 99999999".to_string(),
            "sif a block[2] 99999998".to_string(),
            "sif b block[0] 99999997".to_string(),
        ],
    );
    assert_same_codes(&img, &[0x010010, 0x01000E]);
}

/// An orphan list e2fsck -n leaves unreleased: pass 1 finds the chain's
/// links as deletion times (too low to be times; on a file in use, any),
/// the deleted orphan without one, the truncation's blocks past i_size,
/// and pass 5 the deleted orphan's inode and blocks still marked. pfsck
/// checks the released view, and names what e2fsck -n finds instead.
#[test]
fn orphan_list_left_to_a_read_only_check() {
    let tmp = TempDir::new("codes-orphans");
    let root = tmp.join("tree");
    build_tree(
        &root,
        &[Node::file("gone", 3000), Node::file("cut", 20_000)],
    );
    let img = tmp.join("image");
    mkfs(&img, 16 << 20, &MkfsOpts::ext4(), Some(&root));
    let (gone, cut) = (inode_of(&img, "/gone"), inode_of(&img, "/cut"));
    debugfs_w(
        &img,
        &[
            "unlink /gone".to_string(),
            format!("sif <{gone}> links_count 0"),
            format!("sif <{cut}> size 1"),
            format!("ssv last_orphan {cut}"),
            format!("sif <{cut}> dtime {gone}"),
        ],
    );
    assert_same_codes(
        &img,
        &[0x010004, 0x010036, 0x010005, 0x01000C, 0x050014, 0x050008],
    );
}

/// A deleted orphan (dtime 0) whose data blocks and xattr block lie
/// apart, another file between them, on an ext4 file system of 1 KiB
/// blocks (`features` added).
fn deleted_orphan_apart(tmp: &TempDir, features: &str) -> std::path::PathBuf {
    let root = tmp.join("tree");
    build_tree(
        &root,
        &[Node::file("gone", 3000), Node::file("other", 3000)],
    );
    let img = tmp.join("image");
    let opts = MkfsOpts::ext4().block_size(1024);
    let opts = if features.is_empty() {
        opts
    } else {
        opts.features(features)
    };
    mkfs(&img, 16 << 20, &opts, Some(&root));
    let gone = inode_of(&img, "/gone");
    let value = tmp.join("value");
    std::fs::write(&value, vec![b'v'; 600]).unwrap();
    debugfs_w(
        &img,
        &[
            format!("ea_set -f {} /gone user.big", value.display()),
            "unlink /gone".to_string(),
            format!("sif <{gone}> links_count 0"),
            format!("ssv last_orphan {gone}"),
        ],
    );
    img
}

/// e2fsck -n finds the blocks of a deleted orphan still marked as runs
/// over the whole bitmap: its data blocks one run, its xattr block
/// (freed too), apart from them, a single block. pfsck named one run
/// per orphan, single or not by the count freed. On bigalloc the runs
/// are of clusters.
#[test]
fn orphan_blocks_left_marked_are_runs() {
    for features in ["", "bigalloc"] {
        let tmp = TempDir::new("codes-orphan-runs");
        let img = deleted_orphan_apart(&tmp, features);
        assert_same_codes(&img, &[0x010004, 0x050004, 0x050008]);
    }
}

/// A deleted orphan directory: e2fsck -n counts it out of its group's
/// directories, which the descriptor still counts (0x05000C); the view
/// released it from the count and found it right.
#[test]
fn orphan_directory_left_in_the_directories_count() {
    let tmp = TempDir::new("codes-orphan-dir");
    let root = tmp.join("tree");
    build_tree(
        &root,
        &[
            Node::dir("gone"),
            Node::dir("keep"),
            Node::file("keep/f", 10),
        ],
    );
    let img = tmp.join("image");
    mkfs(
        &img,
        16 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&root),
    );
    let gone = inode_of(&img, "/gone");
    debugfs_w(
        &img,
        &[
            "unlink /gone".to_string(),
            // The root's link from the directory's '..' goes with it.
            "sif <2> links_count 4".to_string(),
            format!("sif <{gone}> links_count 0"),
            format!("ssv last_orphan {gone}"),
        ],
    );
    assert_same_codes(&img, &[0x010004, 0x05000C]);
}

/// The orphan's release changes group 0's bitmaps and descriptor, whose
/// checksums were wrong on the disk: e2fsck -n, which leaves them as
/// they are, finds them wrong. pfsck's view wrote them anew and found
/// nothing.
#[test]
fn orphan_release_keeps_a_wrong_checksum() {
    for (field, code) in [
        ("block_bitmap_csum", 0x05001B),
        ("inode_bitmap_csum", 0x05001A),
        ("checksum", 0x000035),
    ] {
        let tmp = TempDir::new("codes-orphan-csum");
        let img = deleted_orphan_apart(&tmp, "");
        debugfs_w(&img, &[format!("set_bg 0 {field} 0x1234")]);
        assert_same_codes(&img, &[0x010004, code]);
        judged_by_oracle(field, &img, 4, 1);
    }
}

/// As above, the descriptor's uninit marks: its never-used inode count
/// (0) is in range of its free inodes count (5) on the disk, which
/// e2fsck -n judges; the view recounted it from the inodes in use, out
/// of range of the free count, and said so.
#[test]
fn orphan_release_keeps_the_marks_of_a_wrong_descriptor() {
    let tmp = TempDir::new("codes-orphan-marks");
    let img = deleted_orphan_apart(&tmp, "");
    debugfs_w(
        &img,
        &[
            "set_bg 0 itable_unused 0",
            "set_bg 0 free_inodes_count 5",
            "set_bg 0 checksum 0x1234",
        ],
    );
    assert_same_codes(&img, &[0x000035, 0x05000B]);
    judged_by_oracle("marks", &img, 4, 1);
}

/// A bitmap whose location lies outside the file system, on a file
/// system of one group (no backup descriptors to fall back to): e2fsck
/// -n, which leaves it there, checks the empty bitmap it reads instead
/// against the checksum. pfsck checked none.
#[test]
fn bitmap_outside_the_file_system_still_has_a_checksum() {
    for (field, code) in [("block_bitmap", 0x05001B), ("inode_bitmap", 0x05001A)] {
        let tmp = TempDir::new("codes-bitmap-outside");
        let img = tmp.join("image");
        mkfs(&img, 8 << 20, &MkfsOpts::ext4().block_size(1024), None);
        debugfs_w(&img, &[format!("set_bg 0 {field} 99999999")]);
        assert_same_codes(&img, &[code]);
    }
}

/// A reserved inode below the resize inode whose checksum alone is wrong:
/// e2fsck's pass 1 then finds no block in the resize inode, says its
/// i_blocks should be 0 and finds its double indirect block marked in
/// use by no file (a repair of its own then damages the resize inode).
/// pfsck finds the resize inode sound, and names those entries with the
/// checksum problem.
#[test]
fn reserved_inode_checksum_leaves_the_resize_inode_unwalked() {
    for ino in [3, 6] {
        let tmp = TempDir::new("codes-resize-unwalked");
        let img = tmp.join("image");
        mkfs(&img, 8 << 20, &MkfsOpts::ext4().block_size(1024), None);
        // Its access time: a field no check looks at.
        write_at(&img, inode_offset(&img, ino) + 0x08, &[1]);
        assert_same_codes(&img, &[0x010068, 0x01000D, 0x050004]);
        let (fn_out, _) = judged_by_oracle("resize unwalked", &img, 4, 1);
        assert!(!fn_out.contains("Inode 7"), "{fn_out}");
    }
}

/// A journal inode -n may not clear ends e2fsck's check before its
/// superblock checks: a descriptor checksum wrong besides goes unlogged,
/// as does anything of the passes. pfsck states the checksum, as it
/// finds it first, and names no e2fsck code for it.
#[test]
fn journal_stop_comes_before_the_descriptor_checks() {
    let tmp = TempDir::new("codes-journal-stop");
    let img = tmp.join("image");
    mkfs(&img, 16 << 20, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(&img, &["clri <8>"]);
    // Alone in its session: closing after clri rewrites the descriptors.
    debugfs_w(&img, &["set_bg 1 checksum 0x1234"]);
    assert_same_codes(&img, &[0x00000F]);
}

/// Declined (-n), e2fsck goes on with a bad xattr block: it counts it
/// for the inode and in use (no i_blocks or bitmap follow-up), and still
/// checks its checksum.
#[test]
fn declined_xattr_block_still_counts() {
    let tmp = TempDir::new("codes-xattr");
    let img = tmp.join("image");
    mkfs(&img, 16 << 20, &MkfsOpts::ext4().block_size(4096), None);
    let data = tmp.join("data");
    std::fs::write(&data, b"x").unwrap();
    let big = "v".repeat(300);
    debugfs_w(
        &img,
        &[
            format!("write {} f", data.display()),
            format!("ea_set f user.a {big}"),
            format!("ea_set f user.b {big}"),
        ],
    );
    let blk: u64 = debugfs_r(&img, "stat f")
        .lines()
        .find_map(|l| l.trim().strip_prefix("File ACL: "))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("an xattr block");
    assert_ne!(blk, 0);
    // The first entry's hash (32 bytes of header, then e_hash at 12).
    let at = blk * 4096 + 32 + 12;
    let mut h = read_at(&img, at, 4);
    h[0] ^= 0xFF;
    write_at(&img, at, &h);
    assert_same_codes(&img, &[0x010054, 0x01006C]);
}

/// Sets the 32-bit little-endian field at `off` of the primary
/// superblock to `f(old)`, leaving its checksum as it was.
fn poke_sb(img: &Path, off: u64, f: impl Fn(u32) -> u32) {
    let at = 1024 + off;
    let old = u32::from_le_bytes(read_at(img, at, 4).try_into().unwrap());
    write_at(img, at, &f(old).to_le_bytes());
}

/// A primary superblock failing its checksum, with no backup (one
/// group): e2fsck logs its library's refusal, not a rejection of the
/// group descriptors, and judges the superblock unusable.
#[test]
fn superblock_checksum_without_backup() {
    let tmp = TempDir::new("codes-sb-csum");
    let img = tmp.join("image");
    mkfs(&img, 32 << 20, &MkfsOpts::ext4().block_size(4096), None);
    poke_sb(&img, 0x3FC, |c| c ^ 0xFF);
    assert_same_codes(&img, &[0x000044, 0x000004]);
}

/// A wrong inode count alone (no checksum): e2fsck's library refuses,
/// e2fsck reads the superblock again despite its errors, names the
/// count, and judges the superblock unusable naming the field.
#[test]
fn inode_count_read_despite_errors() {
    let tmp = TempDir::new("codes-sb-inodes");
    let img = tmp.join("image");
    mkfs(&img, 32 << 20, &MkfsOpts::ext2().block_size(4096), None);
    poke_sb(&img, 0, |n| n + 1);
    assert_same_codes(&img, &[0x000044, 0x00000D, 0x000004, 0x00000B]);
}

/// e2fsck -n stops at a directory block it may not salvage: of an orphan
/// list left unreleased, its log holds pass 1's finding, not pass 5's.
#[test]
fn orphans_of_a_check_stopped_in_pass_2() {
    let tmp = TempDir::new("codes-orphan-stop");
    let root = tmp.join("tree");
    build_tree(&root, &[Node::file("gone", 3000)]);
    let img = tmp.join("image");
    mkfs(
        &img,
        16 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&root),
    );
    let gone = inode_of(&img, "/gone");
    debugfs_w(
        &img,
        &[
            "unlink /gone".to_string(),
            format!("sif <{gone}> links_count 0"),
            format!("ssv last_orphan {gone}"),
        ],
    );
    // The root's first entry gets a record length of 3.
    let blk = debugfs_number(&img, "bmap <2> 0");
    write_at(&img, blk * 1024 + 4, &[3, 0]);
    assert_same_codes(&img, &[0x010004, 0x020013]);
}

/// The second entry in use under another name than '..': e2fsck's code
/// for a wrong second entry, not the one for a missing '..'.
#[test]
fn second_entry_not_dotdot() {
    let tmp = TempDir::new("codes-dotdot");
    let img = tmp.join("image");
    mkfs(&img, 16 << 20, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(&img, &["mkdir d"]);
    let blk = debugfs_number(&img, "bmap /d 0");
    // '.' takes 12 bytes; the second entry's name starts 8 bytes in.
    write_at(&img, blk * 1024 + 12 + 8, b"x");
    assert_same_codes(&img, &[0x02000C]);
}

/// The same with a backup: e2fsck logs the refusal of the superblock
/// itself before it checks with the backup.
#[test]
fn superblock_checksum_with_backup() {
    let tmp = TempDir::new("codes-sb-backup");
    let img = tmp.join("image");
    mkfs(&img, 16 << 20, &MkfsOpts::ext4().block_size(1024), None);
    poke_sb(&img, 0x3FC, |c| c ^ 0xFF);
    assert_same_codes(&img, &[0x000044]);
}

/// An entry naming an unused inode, kept (-n): e2fsck then checks its
/// file type against the mode it reads from that inode, here zeroed
/// ("should be 0"), and logs that too.
#[test]
fn file_type_of_an_entry_naming_an_unused_inode() {
    let tmp = TempDir::new("codes-unused-ft");
    let img = tmp.join("image");
    mkfs(
        &img,
        16 << 20,
        &MkfsOpts::ext4().features("^metadata_csum"),
        None,
    );
    debugfs_w(
        &img,
        &[
            "write /etc/services a",
            "sif a links_count 0",
            "sif a dtime 12345",
            "sif a mode 0",
        ],
    );
    assert_same_codes(&img, &[0x020003, 0x020028]);
}

/// An extent leaf with an entry out of order, written over (its checksum
/// broken too): declined (-n), e2fsck goes on and still asks about the
/// node's checksum, which a repair of the entry would have rewritten.
#[test]
fn declined_extent_entry_leaves_the_node_checksum() {
    let tmp = TempDir::new("codes-extent-csum");
    let root = tmp.join("tree");
    let runs: Vec<(u64, u64)> = (0..8).map(|i| (i * 8192, 1024)).collect();
    build_tree(&root, &[Node::sparse("f", 8 * 8192, &runs)]);
    let img = tmp.join("image");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&root),
    );
    let leaf: u64 = debugfs_r(&img, "stat f")
        .split("(ETB0):")
        .nth(1)
        .and_then(|w| w.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .expect("a depth-1 extent tree");
    // The third entry's first logical block (header 12, 12 per entry).
    write_at(&img, leaf * 1024 + 12 + 2 * 12, &[0, 0, 0, 0]);
    assert_same_codes(&img, &[0x01006A]);
}
