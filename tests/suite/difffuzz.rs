//! Differential fuzzing (issue 13): a fixed small run of
//! `scripts/difffuzz.py`, pfsck against e2fsck 1.47.4 on seeded damage
//! across every profile. It fails on a false claim (`pfsck -fy` exits 0
//! or 1 and e2fsck still finds problems), a file e2fsck's repair keeps and
//! pfsck's loses, a crash (panic, signal, hang) or a `-n` run that writes.
//! Verdict and problem-code agreement are printed, not judged: the long
//! run in docs/testing.md measures them.
//!
//! Damages of this seed that show a known defect are listed in
//! `tests/difffuzz-known.txt` (SEED/N/KIND, with the defect); a new
//! finding fails the test and leaves its minimised image and repro.sh
//! under `target/tmp/difffuzz-ci/finds`.

use crate::common::*;
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
