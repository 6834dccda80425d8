//! Interactive repair (no -n, -p or -y): questions on a terminal, like
//! e2fsck. The terminal comes from util-linux's `script`, which runs pfsck
//! on a pseudo-terminal fed from this test's stdin; where `script` is
//! missing the terminal cases are skipped with a notice. Without a
//! terminal pfsck refuses (exit 8) and writes nothing.

use crate::common::*;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const MIB: u64 = 1 << 20;

/// An ext4 image with two independent problems: inode 12's link count
/// (pass 4) and inode 13's dtime (pass 1).
fn damaged(dir: &TempDir) -> std::path::PathBuf {
    let base = cached_image("interactive-base", |img| {
        mkfs(img, 16 * MIB, &MkfsOpts::ext4(), Some(&standard_tree_dir()));
    });
    let img = dir.join("img");
    copy_image(&base, &img);
    debugfs_w(&img, &["sif <12> links_count 5", "sif <13> dtime 12345"]);
    img
}

/// Runs `pfsck -f IMG` on a pseudo-terminal with `answers` typed in;
/// None when `script` is not available.
fn on_terminal(img: &Path, answers: &str) -> Option<(i32, String)> {
    on_terminal_with(pfsck_bin(), img, answers)
}

/// Runs `BIN -f IMG` on a pseudo-terminal with `answers` typed in.
fn on_terminal_with(bin: &Path, img: &Path, answers: &str) -> Option<(i32, String)> {
    let script = try_tool("script")?;
    // The terminal does not echo: typed answers reach the pseudo-terminal
    // at once, and their echo would land inside the questions printed
    // later ("Fix<y>? n\ny\nno"), at random.
    let cmd = format!("stty -echo; {} -f {}", bin.display(), img.display());
    let mut child = Command::new(script)
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answers.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Some((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

#[test]
fn answers_choose_the_fixes() {
    let dir = TempDir::new("interactive-choose");
    let img = damaged(&dir);
    // No to the dtime, yes to the link count.
    let Some((code, out)) = on_terminal(&img, "n\ny\n") else {
        println!("`script` not found: interactive cases skipped");
        return;
    };
    assert!(
        out.contains("carries a deletion time.  Fix<y>? no"),
        "{out}"
    );
    assert!(out.contains("counted 1.  Fix<y>? yes"), "{out}");
    // The declined problem is asked once, not again by a later round.
    assert_eq!(out.matches("deletion time.  Fix<y>?").count(), 1, "{out}");
    // Asked in place, under the pass's header, and not shown again in a
    // report afterwards.
    let at = |s: &str| out.find(s).unwrap_or_else(|| panic!("{s:?} in {out}"));
    assert!(at("Pass 1: ") < at("deletion time.  Fix<y>?"), "{out}");
    assert!(at("deletion time.  Fix<y>?") < at("Pass 2: "), "{out}");
    assert!(at("Pass 4: ") < at("counted 1.  Fix<y>?"), "{out}");
    assert!(at("counted 1.  Fix<y>?") < at("Pass 5: "), "{out}");
    assert_eq!(out.matches("has link count 5").count(), 1, "{out}");
    assert_eq!(out.matches("Pass 1: ").count(), 1, "{out}");
    // One fixed, one left: 4 alone, as e2fsck (errors left drop the 1).
    assert_eq!(code, 4, "fixed one, one left: {out}");
    let e2 = e2fsck_fn_run(&img);
    assert_eq!(e2.code(), Some(4), "{}", e2.stdout);
    assert!(e2.stdout.contains("dtime"), "{}", e2.stdout);
    assert!(!e2.stdout.contains("ref count"), "{}", e2.stdout);
}

#[test]
fn all_answers_yes_to_the_rest() {
    let dir = TempDir::new("interactive-all");
    let img = damaged(&dir);
    let Some((code, out)) = on_terminal(&img, "a\n") else {
        println!("`script` not found: interactive cases skipped");
        return;
    };
    assert_eq!(out.matches("Fix<y>?").count(), 1, "{out}");
    assert_eq!(code, 1, "{out}");
    assert_eq!(e2fsck_fn(&img), 0);
}

#[test]
fn end_of_input_answers_no_and_writes_nothing() {
    let dir = TempDir::new("interactive-eof");
    let img = damaged(&dir);
    let before = std::fs::read(&img).unwrap();
    let Some((code, out)) = on_terminal(&img, "") else {
        println!("`script` not found: interactive cases skipped");
        return;
    };
    assert_eq!(code, 4, "{out}");
    assert_eq!(std::fs::read(&img).unwrap(), before);
}

#[test]
fn no_terminal_is_refused() {
    let dir = TempDir::new("interactive-none");
    let img = damaged(&dir);
    let before = std::fs::read(&img).unwrap();
    let out = Command::new(pfsck_bin())
        .args(["-f".as_ref(), img.as_os_str()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(8));
    assert!(String::from_utf8_lossy(&out.stderr).contains("terminal"));
    assert_eq!(std::fs::read(&img).unwrap(), before);
}

/// An extent tree's optimisation answered yes: e2fsck's pass 1E header
/// follows pass 1's questions, as under -y.
#[test]
fn pass_1e_header_after_an_optimisation_answered_yes() {
    let dir = TempDir::new("interactive-1e");
    let img = crate::pass1e::shorter(&dir);
    let Some((_, out)) = on_terminal(&img, "y\ny\ny\ny\n") else {
        println!("`script` not found: interactive cases skipped");
        return;
    };
    assert!(out.contains("would fit in fewer levels"), "{out}");
    assert!(
        out.contains("Pass 1E: extent trees made smaller\r\nPass 2: "),
        "{out}"
    );
}

/// e2fsck states an htree block's bad hash range without a question and
/// asks once, "Clear HTree index?", for the directory; interactively
/// pfsck states it too, and the one answer decides the fix.
#[test]
fn htree_statements_are_not_asked() {
    let dir = TempDir::new("interactive-htree");
    let img = dir.join("img");
    copy_image(&crate::parity::bad_hash_image(), &img);
    let Some((code, out)) = on_terminal(&img, &"y\n".repeat(20)) else {
        println!("`script` not found: interactive cases skipped");
        return;
    };
    let stated: Vec<&str> = out.lines().filter(|l| l.contains("bad hash")).collect();
    assert!(!stated.is_empty(), "{out}");
    assert!(stated.iter().all(|l| !l.contains("<y>?")), "{out}");
    assert_eq!(out.matches("Clear HTree index<y>?").count(), 1, "{out}");
    assert_eq!(code, 1, "{out}");
    assert_eq!(e2fsck_fn(&img), 0, "{out}");
}

/// A journal inode whose checksum fails: the journal is invalid. Answered
/// no, e2fsck cannot go on and stops there: exit 12, nothing written, no
/// further question. pfsck went on to the passes' questions and exited 5.
#[test]
fn invalid_journal_answered_no_stops_as_e2fsck() {
    let dir = TempDir::new("interactive-journal-no");
    let img = dir.join("img");
    mkfs(&img, 16 * MIB, &MkfsOpts::ext4().block_size(1024), None);
    // i_checksum_lo, at 0x7c in the inode.
    write_at(&img, inode_offset(&img, 8) + 0x7c, &[0x34, 0x12]);
    let before = hash_file(&img);
    let Some((code, out)) = on_terminal(&img, "n\ny\ny\ny\n") else {
        println!("`script` not found: interactive cases skipped");
        return;
    };
    assert!(out.contains("The journal (inode 8) is unusable"), "{out}");
    assert!(out.contains("Clear<y>? no"), "{out}");
    assert!(out.contains("cannot proceed"), "{out}");
    assert!(!out.contains("Pass 1"), "{out}");
    assert!(out.contains("errors are left"), "{out}");
    assert_eq!(code, 12, "{out}");
    assert_eq!(hash_file(&img), before, "{out}");
    if let Some(e2fsck) = oracle() {
        let copy = dir.join("e2fsck");
        copy_image(&img, &copy);
        let Some((code, out)) = on_terminal_with(&e2fsck, &copy, "n\ny\ny\ny\n") else {
            return;
        };
        assert_eq!(code, 12, "{out}");
        assert_eq!(hash_file(&copy), before, "{out}");
    }
}

/// A full /lost+found (1 KiB blocks, 12 of them, each name 4 characters)
/// and an inode no directory names: connecting it needs a new block.
fn full_lost_found(dir: &TempDir) -> std::path::PathBuf {
    let img = dir.join("img");
    let opts = MkfsOpts::ext4()
        .block_size(1024)
        .features("^metadata_csum,^uninit_bg");
    mkfs(&img, 8 * MIB, &opts, None);
    let data = dir.join("data");
    std::fs::write(&data, b"hi\n").unwrap();
    let mut cmds = vec![
        "mkdir d".to_string(),
        format!("write {} d/f", data.display()),
        "cd lost+found".into(),
    ];
    cmds.extend((0..1018).map(|i| format!("mknod {i:04} p")));
    debugfs_w(&img, &cmds);
    debugfs_w(&img, &["unlink /d/f"]);
    img
}

fn lost_found_size(img: &Path) -> String {
    let stat = debugfs_r(img, "stat /lost+found");
    let size = stat.split("Size: ").nth(1).unwrap_or("");
    size.split_whitespace().next().unwrap_or("").to_string()
}

/// Connecting the inode answered yes, expanding /lost+found for its name
/// answered no: as e2fsck, nothing is written for either (the name has no
/// room) and the run exits 4. pfsck grew lost+found by a block anyway and
/// exited 1. Answered yes, lost+found grows and the repair is clean.
#[test]
fn declined_expansion_leaves_lost_found_alone() {
    let dir = TempDir::new("interactive-lf-expand");
    let img = full_lost_found(&dir);
    assert_eq!(lost_found_size(&img), "12288");
    let before = hash_file(&img);
    let copy = dir.join("yes");
    copy_image(&img, &copy);
    let Some((code, out)) = on_terminal(&img, "y\nn\nn\nn\n") else {
        println!("`script` not found: interactive cases skipped");
        return;
    };
    assert!(out.contains("Connect to /lost+found<y>? yes"), "{out}");
    assert!(
        out.contains("no room left for inode 13.  Expand<y>? no"),
        "{out}"
    );
    assert_eq!(
        out.matches("Connect to /lost+found<y>?").count(),
        1,
        "{out}"
    );
    assert!(out.contains("errors are left"), "{out}");
    assert_eq!(code, 4, "{out}");
    assert_eq!(lost_found_size(&img), "12288", "{out}");
    assert_eq!(hash_file(&img), before, "{out}");
    let e2 = e2fsck_fn_run(&img);
    assert_eq!(e2.code(), Some(4), "{}", e2.stdout);
    assert!(e2.stdout.contains("Unattached inode 13"), "{}", e2.stdout);
    if let Some(e2fsck) = oracle() {
        // e2fsck reads single keys: yes, no, then no to the link count
        // it offers to zero once the connection failed.
        let theirs = dir.join("e2fsck");
        copy_image(&copy, &theirs);
        if let Some((code, out)) = on_terminal_with(&e2fsck, &theirs, "ynn") {
            assert!(out.contains("Expand<y>? no"), "{out}");
            assert_eq!(code, 4, "{out}");
            assert_eq!(lost_found_size(&theirs), "12288", "{out}");
        }
    }
    let Some((code, out)) = on_terminal(&copy, "y\ny\n") else {
        return;
    };
    assert!(out.contains("Expand<y>? yes"), "{out}");
    assert_eq!(code, 1, "{out}");
    assert_eq!(lost_found_size(&copy), "13312", "{out}");
    assert_eq!(e2fsck_fn(&copy), 0, "{out}");
}

/// Pass 5's questions answered one by one: the bitmap and group 0's free
/// inodes yes, group 1's free blocks no. As e2fsck, the count answered no
/// stays as recorded (100) and the run exits 4; the rewrite of the
/// summary wrote every count (exit 1, and e2fsck -fn then clean).
#[test]
fn declined_counts_stay_as_recorded() {
    let dir = TempDir::new("interactive-pass5");
    let img = dir.join("img");
    mkfs(
        &img,
        16 * MIB,
        &MkfsOpts::ext4().features("^metadata_csum"),
        None,
    );
    let data = dir.join("data");
    std::fs::write(&data, vec![7u8; 4096]).unwrap();
    debugfs_w(&img, &[format!("write {} f", data.display())]);
    let blk = blocks_of(&img, "/f")[0];
    debugfs_w(
        &img,
        &[
            format!("freeb {blk}"),
            "set_bg 1 free_blocks_count 100".into(),
            "set_bg 0 free_inodes_count 7".into(),
        ],
    );
    let copy = dir.join("e2fsck");
    copy_image(&img, &copy);
    // The bitmap answered no: its block stays free in it, though the
    // counts answered yes are written.
    let bitmap_no = dir.join("bitmap-no");
    copy_image(&img, &bitmap_no);
    let Some((code, out)) = on_terminal(&bitmap_no, "n\ny\ny\n") else {
        println!("`script` not found: interactive cases skipped");
        return;
    };
    assert_eq!(code, 4, "{out}");
    let testb = debugfs_r(&bitmap_no, &format!("testb {blk}"));
    assert!(testb.contains("not in use"), "{testb}\n{out}");
    assert_ne!(dumpe2fs(&bitmap_no).groups[1].free_blocks, 100, "{out}");
    let Some((code, out)) = on_terminal(&img, "y\nn\ny\n") else {
        println!("`script` not found: interactive cases skipped");
        return;
    };
    assert_eq!(out.matches("<y>?").count(), 3, "{out}");
    assert!(out.contains("100 free blocks recorded"), "{out}");
    assert_eq!(code, 4, "{out}");
    let ours = dumpe2fs(&img);
    assert_eq!(ours.groups[1].free_blocks, 100, "{out}");
    let e2 = e2fsck_fn_run(&img);
    assert_eq!(e2.code(), Some(4), "{}", e2.stdout);
    assert!(
        e2.stdout.contains("group #1 (100, counted="),
        "{}",
        e2.stdout
    );
    assert!(!e2.stdout.contains("bitmap differences"), "{}", e2.stdout);
    if let Some(e2fsck) = oracle()
        && let Some((code, out)) = on_terminal_with(&e2fsck, &copy, "yny")
    {
        assert_eq!(code, 4, "{out}");
        let theirs = dumpe2fs(&copy);
        let counts = |i: &FsInfo| {
            let g: Vec<(u64, u64)> = i
                .groups
                .iter()
                .map(|g| (g.free_blocks, g.free_inodes))
                .collect();
            (g, i.free_blocks, i.free_inodes)
        };
        assert_eq!(counts(&ours), counts(&theirs), "{out}");
    }
}

/// e2fsprogs' f_noroot answered yes throughout: e2fsck asks each
/// question once. pfsck asked the first check's questions again after
/// the repair started over (the root reallocated), ran out of answers
/// and left errors (exit 4); a problem answered yes is now taken as yes
/// when found again.
#[test]
fn questions_answered_yes_are_not_asked_again() {
    let Some(conf) = conformance_dir() else {
        eprintln!("NOTICE: conformance images not found: f_noroot not tried");
        return;
    };
    let dir = TempDir::new("interactive-noroot");
    let img = dir.join("img");
    extract_image(&conf.join("e2fsprogs/f_noroot"), &img).unwrap();
    let Some((code, out)) = on_terminal(&img, &"y\n".repeat(40)) else {
        println!("`script` not found: interactive cases skipped");
        return;
    };
    assert_eq!(out.matches("Allocate<y>?").count(), 1, "{out}");
    assert_eq!(out.matches("deletion time.  Fix<y>?").count(), 1, "{out}");
    assert_eq!(out.matches("Pass 1: ").count(), 1, "{out}");
    assert_eq!(code, 1, "{out}");
    assert_eq!(oracle_fn(&img), 0, "{out}");
}

/// Pass 1D interactively: after each file's paragraph, e2fsck asks
/// "Clone multiply-claimed blocks?" alone; pfsck asked the problem's
/// whole message with "Fix?". Its question is now the one -y and -n
/// print, "Copy the shared blocks?", alone on its line.
#[test]
fn pass_1d_question_is_its_own() {
    let dir = TempDir::new("interactive-1d");
    let img = dir.join("img");
    mkfs(
        &img,
        8 * MIB,
        &MkfsOpts::ext4().features("^metadata_csum"),
        None,
    );
    let data = dir.join("data");
    std::fs::write(&data, vec![7u8; 3000]).unwrap();
    debugfs_w(
        &img,
        &[
            format!("write {} a", data.display()),
            format!("write {} b", data.display()),
        ],
    );
    let shared = blocks_of(&img, "/a")[0];
    // i_block[5]: the low 32 bits of the first extent's start.
    debugfs_w(&img, &[format!("sif b block[5] {shared}")]);
    let Some((code, out)) = on_terminal(&img, &"y\n".repeat(10)) else {
        println!("`script` not found: interactive cases skipped");
        return;
    };
    assert!(out.contains("modified "), "{out}");
    assert!(out.contains(")\r\nCopy the shared blocks<y>? yes"), "{out}");
    assert!(!out.contains("other file(s)"), "{out}");
    assert_eq!(code, 1, "{out}");
    assert_eq!(oracle_fn(&img), 0, "{out}");
}
