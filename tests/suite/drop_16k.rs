//! pfsck's report shaped as e2fsck 1.47.4's on public e2fsprogs images
//! (issue 16): where the words are pfsck's own, the structure is
//! e2fsck's line for line (which lines ask, which state, the questions,
//! the blank lines), and the exit code is the same.

use crate::common::*;
use std::path::{Path, PathBuf};

/// A public image of e2fsprogs' tests, extracted under `tmp`, if the
/// conformance set is here.
fn public_image(tmp: &TempDir, name: &str) -> Option<PathBuf> {
    let dir = conformance_dir()?.join("e2fsprogs").join(name);
    let img = tmp.join(name);
    extract_image(&dir, &img).ok()?;
    Some(img)
}

/// e2fsck's and pfsck's runs with `args` on fresh copies of `img`:
/// (e2fsck's output and exit code, pfsck's).
fn both(img: &Path, args: &[&str]) -> ((String, i32), (String, i32)) {
    let mine = img.with_extension("pfsck");
    let theirs = img.with_extension("oracle");
    copy_image(img, &mine);
    copy_image(img, &theirs);
    let oracle = oracle_run(&theirs, args);
    let mut all: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    all.push(mine.as_os_str());
    let run = pfsck(&all);
    let out = String::from_utf8_lossy(&run.stdout).into_owned();
    let code = run.status.code().unwrap_or(-1);
    let e2_code = oracle.code().unwrap_or(-1);
    ((oracle.stdout, e2_code), (out, code))
}

/// e2fsck's output without its version line (which pfsck writes to
/// stderr and the oracle's run merges in).
fn report(e2: &str) -> String {
    e2.lines()
        .filter(|l| !l.starts_with("e2fsck 1."))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// `args` on the public image `name`: the same exit code and report shape.
#[track_caller]
fn same_shape(name: &str, args: &[&str]) -> Option<String> {
    let tmp = TempDir::new(&format!("drop16k-{name}"));
    let img = public_image(&tmp, name)?;
    let ((e2, e2_code), (ours, code)) = both(&img, args);
    let e2 = report(&e2);
    let e2 = e2.as_str();
    assert_eq!(
        (report_shape(&ours), code),
        (report_shape(e2), e2_code),
        "{name} {args:?}: pfsck:\n{ours}\n--- e2fsck ---\n{e2}"
    );
    Some(ours)
}

/// A group flagged BLOCK_UNINIT whose blocks are in use: e2fsck -n's
/// "no" leaves the flag, so it asks again for every used block, then
/// goes on to the bitmap differences and counts (pfsck stopped at the
/// first question). A repair clears the flag at the first.
#[test]
fn uninit_group_asked_per_block_under_n() {
    let Some(out) = same_shape("f_uninit_blk_used_not_set", &["-fn"]) else {
        return;
    };
    assert_eq!(out.matches("marked BLOCK_UNINIT").count(), 193, "{out}");
    assert!(
        out.contains("Blocks whose bitmap bit is wrong:  +(8585--8777)"),
        "{out}"
    );
    let out = same_shape("f_uninit_blk_used_not_set", &["-fy"]).unwrap();
    assert_eq!(out.matches("marked BLOCK_UNINIT").count(), 1, "{out}");
}

/// A directory entry repeating a name: e2fsck's paragraph names it on one
/// line and the directory it marks for rebuilding on the next, indented,
/// then a blank line (pfsck wrote one line, without the blank).
#[test]
fn duplicate_entry_two_line_paragraph() {
    let tmp = TempDir::new("drop16k-dupdot");
    let Some(img) = public_image(&tmp, "f_dupdot") else {
        return;
    };
    let ((e2, _), (ours, _)) = both(&img, &["-fn"]);
    let para = |out: &str| {
        // e2fsck's words, or pfsck's.
        let at = out
            .find("Duplicate entry '.' found.\n\t")
            .or_else(|| out.find("Entry '.' is there twice.\n\t"))?;
        let end = out[at..].find("\n\n")?;
        Some(report_shape(&out[at..at + end + 2]))
    };
    let want = para(&e2).unwrap_or_else(|| panic!("e2fsck:\n{e2}"));
    assert_eq!(
        para(&ours),
        Some(want),
        "pfsck:\n{ours}\n--- e2fsck ---\n{e2}"
    );
    assert!(
        ours.contains("\tDirectory <14>/<12> (12) will be rebuilt.\n\n"),
        "{ours}"
    );
}

/// f_dupdot: a '.' and a '..' past the first two entries of a directory.
/// e2fsck finds the repeated name while it checks the second '.', so its
/// paragraph comes between the two '.' questions and the '..' ones
/// (pfsck put it after the whole block). A repair clears both entries
/// where they are, as e2fsck: no name is then repeated, nothing is
/// rebuilt, no pass 3A (pfsck rebuilt the directory and said so).
#[test]
fn dupdot_order_and_repair() {
    let Some(out) = same_shape("f_dupdot", &["-fn"]) else {
        return;
    };
    let at = |s: &str| out.find(s).unwrap_or_else(|| panic!("{s:?} in {out}"));
    assert!(at("is there twice") < at("Entry '..'"), "{out}");
    let tmp = TempDir::new("drop16k-dupdot-fy");
    let img = public_image(&tmp, "f_dupdot").unwrap();
    let ((e2, e2_code), (ours, code)) = both(&img, &["-fy"]);
    assert_eq!(code, e2_code, "pfsck:\n{ours}\n--- e2fsck ---\n{e2}");
    assert!(!ours.contains("is there twice"), "{ours}");
    assert!(!ours.contains("Pass 3A"), "{ours}");
    assert_eq!(
        ours.matches("in the wrong place.\nFix? yes").count(),
        2,
        "{ours}"
    );
    assert_eq!(oracle_fn(&img.with_extension("pfsck")), 0, "{ours}");
}
