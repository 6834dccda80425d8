//! Differential fuzzing (issue 13): a fixed small run of
//! `scripts/difffuzz.py`, pfsck against e2fsck 1.47.4 on seeded damage
//! across every profile. It fails on a false claim (`pfsck -fy` exits 0
//! or 1 and e2fsck still finds problems), a file e2fsck's repair keeps and
//! pfsck's loses, a repair after which e2fsck can no longer open the file
//! system, a crash (panic, signal, hang) or a `-n` run that writes.
//! Verdict and problem-code agreement are printed, not judged: the long
//! run in docs/testing.md measures them.
//!
//! Damages of this seed that show a known defect are listed in
//! `tests/difffuzz-known.txt` (SEED/N/KIND, with the defect); a new
//! finding fails the test and leaves its minimised image and repro.sh
//! under `target/tmp/difffuzz-ci/finds`.

use crate::common::*;
use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

#[test]
fn difffuzz_fixed_budget() {
    if try_tool("python3").is_none() {
        eprintln!("notice: no python3; difffuzz run skipped");
        return;
    }
    let Some(e2fsck) = oracle() else {
        eprintln!("notice: no e2fsck 1.47.4 in ../shared/tools; difffuzz run skipped");
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Kept between runs: the base images are cached there by seed.
    let work = root.join("target/tmp/difffuzz-ci");
    let finds = work.join("finds");
    let _ = std::fs::remove_dir_all(&finds);
    let out = Command::new(tool("python3"))
        .arg(root.join("scripts/difffuzz.py"))
        .args(["--seed", "ci1", "--bases", "1", "--count", "60"])
        .args(["--seconds", "80", "--workers", "2", "--no-minimise"])
        .arg("--known")
        .arg(root.join("tests/difffuzz-known.txt"))
        .arg("--work")
        .arg(&work)
        .arg("--finds")
        .arg(&finds)
        .arg("--pfsck")
        .arg(pfsck_bin())
        .arg("--e2fsck")
        .arg(e2fsck)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run scripts/difffuzz.py");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    if out.status.code() == Some(2) {
        eprintln!("notice: difffuzz run skipped: {}", text.trim());
        return;
    }
    let damages: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("damages: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no damage count in:\n{text}"));
    assert!(
        damages >= 17,
        "too few damages checked ({damages}):\n{text}"
    );
    assert!(
        out.status.success(),
        "difffuzz found false claims, lost files, crashes or -n writes \
         (reproducers in {}):\n{text}",
        finds.display()
    );
}

/// Exit codes of e2fsck -fn and pfsck -fn, then of pfsck -fy and e2fsck
/// -fn after it, on a copy of `img`.
fn both_ways(img: &Path) -> (i32, i32, i32, i32) {
    let e = e2fsck_fn(img);
    let p = pfsck(&[OsStr::new("-fn"), img.as_os_str()]);
    let y = pfsck(&[OsStr::new("-fy"), img.as_os_str()]);
    let after = e2fsck_fn(img);
    (
        e,
        p.status.code().unwrap_or(-1),
        y.status.code().unwrap_or(-1),
        after,
    )
}

/// difffuzz seed 1, damage 427: a metadata_csum superblock (checksum
/// right) naming an unknown checksum type. e2fsck cannot open it (8);
/// pfsck checked it as crc32c and said clean.
#[test]
fn unknown_checksum_type_refused() {
    let dir = TempDir::new("fuzz-csum-type");
    let img = dir.join("img");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4().block_size(1024), None);
    debugfs_w(&img, &["ssv checksum_type 7"]);
    let before = hash_file(&img);
    let (e, p, y, _) = both_ways(&img);
    assert_eq!((e, p, y), (8, 8, 8), "e2fsck -fn, pfsck -fn, pfsck -fy");
    assert_eq!(hash_file(&img), before, "pfsck wrote to a refused image");
}

/// difffuzz seed 1, damage 395: a read-only compatible feature set in the
/// journal superblock. jbd2 defines none, and e2fsck stops (12); pfsck
/// ignored it and said clean.
#[test]
fn journal_ro_compat_feature_refused() {
    let dir = TempDir::new("fuzz-jsb-rocompat");
    let img = dir.join("img");
    mkfs(
        &img,
        12 << 20,
        &MkfsOpts::ext4()
            .block_size(1024)
            .features("^metadata_csum,^metadata_csum_seed,uninit_bg"),
        None,
    );
    let jsb: u64 = debugfs_r(&img, "bmap <8> 0")
        .trim()
        .parse()
        .expect("journal block 0");
    write_at(&img, jsb * 1024 + 0x2C, &[0, 0, 0x1f, 0x7e]);
    let (e, p, y, after) = both_ways(&img);
    assert_ne!(e, 0, "e2fsck -fn sees no damage");
    assert_ne!(p, 0, "pfsck -fn sees no damage");
    assert!(
        !matches!(y, 0 | 1) || after == 0,
        "pfsck -fy exit {y}, then e2fsck -fn {after}"
    );
}

/// The fuzzer's lost-file check lists what the root reaches with debugfs
/// `ls -p`. A repaired name may hold any byte but NUL and '/' (fz36 #9823:
/// time stamps written over a directory block left a form feed in names),
/// and the listing split debugfs' output at those too, so the files named
/// there looked lost. Every name here must be found.
#[test]
fn lost_file_listing_keeps_names_with_control_bytes() {
    if try_tool("python3").is_none() {
        eprintln!("notice: no python3; difffuzz listing test skipped");
        return;
    }
    let dir = TempDir::new("fuzz-listing-names");
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("d")).unwrap();
    let names = [
        "plain",
        "form\u{c}feed",
        "file\u{1c}sep",
        "vt\u{b}tab",
        "nel\u{85}x",
    ];
    for n in names {
        std::fs::write(tree.join("d").join(n), n).unwrap();
    }
    let img = dir.join("img");
    mkfs(
        &img,
        8 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&tree),
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(tool("python3"))
        .arg("-c")
        .arg(
            "import sys; sys.path.insert(0, sys.argv[1]); import difffuzz; \
             print(' '.join(p.encode().hex() for p, _, _ in difffuzz.listing(sys.argv[2]).values()))",
        )
        .arg(root.join("scripts"))
        .arg(&img)
        .output()
        .expect("run difffuzz.listing");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Vec<&str> = text.split_whitespace().collect();
    for n in names {
        let hex: String = format!("/d/{n}")
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert!(listed.contains(&hex.as_str()), "{n:?} not listed: {text}");
    }
}
