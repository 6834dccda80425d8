//! The shape of pfsck's report against e2fsck 1.47.4's (issue 16): where
//! the wording is pfsck's own, the structure is e2fsck's, line for line:
//! which lines ask a question and which only state, the question asked,
//! the blank lines, the paths named. `scripts/parity.sh` measures the
//! same on the public e2fsprogs images.

use crate::common::*;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

/// A line reduced to its structure: blank, a statement, or a question
/// (by its words), with the paths it names (`(/...)`).
fn shape(out: &str) -> Vec<String> {
    out.lines()
        .map(|l| {
            let paths: Vec<&str> = l
                .match_indices("(/")
                .map(|(k, _)| {
                    let end = l[k..].find(')').map_or(l.len(), |e| k + e + 1);
                    &l[k..end]
                })
                .collect();
            let kind = if l.is_empty() {
                String::new()
            } else if let Some(q) = l.strip_suffix("? no").or_else(|| l.strip_suffix("? yes")) {
                let word = q.rsplit(".  ").next().unwrap_or(q);
                format!("ask {word}")
            } else {
                "state".to_string()
            };
            format!("{kind} {}", paths.join(" "))
        })
        .collect()
}

/// From pass 2's header to pass 3's.
fn pass2(out: &str) -> String {
    let start = out
        .find("Pass 2:")
        .unwrap_or_else(|| panic!("no pass 2:\n{out}"));
    let end = out[start..]
        .find("Pass 3:")
        .map_or(out.len(), |e| start + e);
    out[start..end].to_string()
}

/// ext2, 1 KiB blocks, /big indexed by `e2fsck -fyD`, then the hash of
/// the root's second index entry lowered to 2: the first leaf's entries
/// lie above its range.
pub(crate) fn bad_hash_image() -> PathBuf {
    cached_image("parity-htree-hash", |img| {
        let tree = cache_dir().join("parity-htree-tree");
        let _ = std::fs::remove_dir_all(&tree);
        let nodes: Vec<Node> = (0..400)
            .map(|i| Node::file(&format!("big/a_longer_entry_name_{i:04}"), 1))
            .collect();
        build_tree(&tree, &nodes);
        mkfs(
            img,
            8 * MIB,
            &MkfsOpts::ext2().block_size(1024),
            Some(&tree),
        );
        let r = e2fsck(img, &["-fyD"]);
        assert!(r.code().is_some_and(|c| c <= 1), "{}", r.describe());
        let pos = debugfs_number(img, "bmap /big 0") * 1024;
        // dx_root: '.' (12), '..' header (12), info (8), count/limit and
        // the first block (8); the second entry's hash follows.
        write_at(img, pos + 0x20 + 8, &2u32.to_le_bytes());
    })
}

fn run_pfsck(img: &Path, mode: &str) -> String {
    let out = pfsck(&[std::ffi::OsStr::new(mode), img.as_os_str()]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// e2fsck states an htree block's bad hash range without a question and
/// asks once for the directory, named by its path ("Clear HTree
/// index?"); pfsck does the same, under -n and -y; the repair rebuilds
/// the directory under pass 3A's header.
#[test]
fn htree_hash_problems_are_stated_then_asked_once() {
    for mode in ["-fn", "-fy"] {
        let dir = TempDir::new("parity-htree");
        let img = dir.join("img");
        copy_image(&bad_hash_image(), &img);
        let e2_all = oracle_run(&img, &[mode]).stdout;
        copy_image(&bad_hash_image(), &img);
        let ours_all = run_pfsck(&img, mode);
        let (e2, ours) = (pass2(&e2_all), pass2(&ours_all));
        assert!(e2.contains("(/big)"), "{e2}");
        assert!(e2.contains("has bad max hash"), "{e2}");
        assert_eq!(
            shape(&ours),
            shape(&e2),
            "pfsck {mode}:\n{ours}\n--- e2fsck ---\n{e2}"
        );
        // The repair rebuilds the directory: e2fsck's pass 3A.
        let pass3 = |s: &str| {
            let start = s.find("Pass 3:").unwrap_or(0);
            let end = s[start..].find("Pass 4:").map_or(s.len(), |e| start + e);
            s[start..end].to_string()
        };
        assert_eq!(
            pass3(&e2_all).contains("Pass 3A"),
            mode == "-fy",
            "{e2_all}"
        );
        assert_eq!(
            report_shape(&pass3(&ours_all)),
            report_shape(&pass3(&e2_all)),
            "pfsck {mode}:\n{ours_all}\n--- e2fsck ---\n{e2_all}"
        );
    }
}

/// A repair names its undo log on standard error: standard output is
/// the report alone, as e2fsck's.
#[test]
fn undo_log_is_named_off_the_report() {
    let dir = TempDir::new("parity-undo");
    let img = dir.join("img");
    copy_image(&bad_hash_image(), &img);
    let out = pfsck(&[std::ffi::OsStr::new("-fy"), img.as_os_str()]);
    assert_eq!(out.status.code(), Some(1), "{}", output_text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("Undo log"), "{stdout}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Undo log: "),
        "{}",
        output_text(&out)
    );
}

/// The questions a report section asks, in order, and its blank lines.
fn questions(section: &str) -> (Vec<String>, usize) {
    let shapes = shape(section);
    let asked = shapes
        .iter()
        .filter(|s| s.starts_with("ask "))
        .cloned()
        .collect();
    (asked, shapes.iter().filter(|s| s.trim().is_empty()).count())
}

/// A fifo with the immutable flag: e2fsck -n asks to clear the flag
/// (no is a fine answer: its NO_OK), and so does pfsck, though the
/// problem is a notice that leaves the verdict clean.
#[test]
fn pass1_notices_are_asked_as_e2fsck_asks() {
    let base = cached_image("parity-immutable-fifo", |img| {
        mkfs(img, 8 * MIB, &MkfsOpts::ext4(), None);
        debugfs_w(img, &["mknod pipe p", "sif pipe flags 0x10"]);
    });
    let dir = TempDir::new("parity-immutable");
    let img = dir.join("img");
    copy_image(&base, &img);
    let pass1 = |s: &str| {
        let start = s.find("Pass 1:").unwrap_or(0);
        let end = s[start..].find("Pass 2:").map_or(s.len(), |e| start + e);
        s[start..end].to_string()
    };
    let e2 = pass1(&oracle_run(&img, &["-fn"]).stdout);
    let ours = pass1(&run_pfsck(&img, "-fn"));
    assert!(e2.contains("Clear? no"), "{e2}");
    assert_eq!(
        questions(&ours),
        questions(&e2),
        "pfsck:\n{ours}\n--- e2fsck ---\n{e2}"
    );
}

/// e2fsck marks a directory holding a duplicate entry for rebuilding even
/// under -n, so its pass 3A header is printed, and what pass 3A finds
/// follows it; pfsck's headers come in the same places, -n and -y.
#[test]
fn pass_3a_header_follows_a_duplicate_entry() {
    let base = cached_image("parity-dup-entry", |img| {
        mkfs(
            img,
            8 * MIB,
            &MkfsOpts::ext4().block_size(1024).features("^metadata_csum"),
            None,
        );
        // A second link of 'a' in the root, under the same name.
        debugfs_w_unchecked(
            img,
            &["write /etc/hostname a".to_string(), "ln a /".to_string()],
        );
    });
    for mode in ["-fn", "-fy"] {
        let dir = TempDir::new("parity-dup-entry");
        let img = dir.join("img");
        copy_image(&base, &img);
        let e2 = oracle_run(&img, &[mode]).stdout;
        copy_image(&base, &img);
        let ours = run_pfsck(&img, mode);
        // Each header, and whether a problem's line follows it.
        let headers = |s: &str| -> Vec<String> {
            let lines: Vec<&str> = s.lines().collect();
            lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.starts_with("Pass "))
                .map(|(k, l)| {
                    let next = lines.get(k + 1).copied().unwrap_or("");
                    // e2fsck's words for a duplicate entry, or pfsck's.
                    let dup = next.starts_with("Duplicate entry")
                        || (next.starts_with("Entry '") && next.ends_with(" is there twice."));
                    let header = l.split(':').next().unwrap_or(l);
                    format!("{header} {dup}")
                })
                .collect()
        };
        assert!(e2.contains("Pass 3A"), "{e2}");
        assert_eq!(
            headers(&ours),
            headers(&e2),
            "pfsck {mode}:\n{ours}\n--- e2fsck ---\n{e2}"
        );
    }
}
