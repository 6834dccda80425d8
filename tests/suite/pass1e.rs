//! Pass 1E against e2fsck 1.47.4: extent trees that are consistent but
//! could be shorter (a leaf whose extents fit in the inode) or narrower
//! (leaves mostly empty after holes were punched), as the kernel leaves
//! them after truncates and punches. `-n` offers it ("Optimize? no") and
//! exits 0, `-p` says it is IGNORED, both in e2fsck's words.

use crate::common::*;
use std::path::{Path, PathBuf};

/// A sparse file of `count` blocks of `bs` bytes, one every other block,
/// made by `mke2fs -d` (each block its own extent, in leaf blocks), then
/// the ranges `punch` of logical blocks punched out by debugfs.
fn image(dir: &TempDir, name: &str, bs: u32, count: u64, punch: &[(u64, u64)]) -> PathBuf {
    let tree = dir.join(format!("{name}-tree"));
    std::fs::create_dir_all(&tree).unwrap();
    let mut data = vec![0u8; (count * 2 * u64::from(bs)) as usize];
    for i in 0..count as usize {
        let b = 2 * i * bs as usize;
        data[b..b + bs as usize].fill(b'A' + (i % 26) as u8);
    }
    // The holes stay holes: written sparse.
    let f = std::fs::File::create(tree.join("sparse")).unwrap();
    use std::os::unix::fs::FileExt;
    for i in 0..count as usize {
        let b = 2 * i * bs as usize;
        f.write_all_at(&data[b..b + bs as usize], b as u64).unwrap();
    }
    drop(f);
    let img = dir.join(format!("{name}.img"));
    mkfs(&img, 8 << 20, &MkfsOpts::ext4().block_size(bs), Some(&tree));
    let cmds: Vec<String> = punch
        .iter()
        .map(|(a, b)| format!("punch /sparse {a} {b}"))
        .collect();
    if !cmds.is_empty() {
        debugfs_w(&img, &cmds);
    }
    img
}

/// The lines of pass 1E's offers in an output (e2fsck's words or
/// pfsck's; pfsck's are compared with e2fsck's by their shape).
fn offers(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| {
            l.contains("could be shorter")
                || l.contains("could be narrower")
                || l.contains("would fit in fewer")
        })
        .map(|l| {
            l.split_once(": Inode")
                .map_or(l.to_string(), |(_, r)| format!("Inode{r}"))
        })
        .collect()
}

pub(crate) fn shorter(dir: &TempDir) -> PathBuf {
    // Eight extents in a 4 KiB leaf, punched down to two.
    image(dir, "shorter", 4096, 8, &[(4, 20)])
}

fn narrower(dir: &TempDir) -> PathBuf {
    // 200 extents in three 1 KiB leaves, punched down to 23.
    image(dir, "narrower", 1024, 200, &[(10, 150), (180, 390)])
}

fn offered_as_e2fsck_offers(img: &Path, want: &str) {
    let e2 = oracle_run(img, &["-fn"]);
    let pf = pfsck_timeout(&["-fn".as_ref(), img.as_os_str()], E2FSCK_TIMEOUT);
    assert_eq!(e2.code(), Some(0), "{}", e2.stdout);
    assert_eq!(pf.code(), Some(0), "{}", pf.stdout);
    let line = format!("{want}  Optimize? no");
    assert_eq!(offers(&e2.stdout), vec![line.clone()], "{}", e2.stdout);
    assert_eq!(
        report_shape(&offers(&pf.stdout).join("\n")),
        report_shape(&line),
        "{}",
        pf.stdout
    );

    let (a, b) = (img.with_extension("e2"), img.with_extension("pf"));
    copy_image(img, &a);
    copy_image(img, &b);
    let e2 = oracle_run(&a, &["-fp"]);
    let pf = pfsck_timeout(&["-fp".as_ref(), b.as_os_str()], E2FSCK_TIMEOUT);
    assert_eq!((e2.code(), pf.code()), (Some(0), Some(0)), "{}", pf.stdout);
    let line = format!("{want}  IGNORED.");
    assert_eq!(offers(&e2.stdout), vec![line.clone()], "{}", e2.stdout);
    assert_eq!(
        report_shape(&offers(&pf.stdout).join("\n")),
        report_shape(&line),
        "{}",
        pf.stdout
    );
    // Declined: the tree stands as it was.
    assert_eq!(debugfs_r(&b, "ex /sparse"), debugfs_r(img, "ex /sparse"));
}

#[test]
fn a_tree_that_could_be_shorter_is_offered_under_n_and_p() {
    let dir = TempDir::new("pass1e-shorter");
    let img = shorter(&dir);
    offered_as_e2fsck_offers(&img, "Inode 12 extent tree (at level 1) could be shorter.");
}

#[test]
fn a_tree_that_could_be_narrower_is_offered_under_n_and_p() {
    let dir = TempDir::new("pass1e-narrower");
    let img = narrower(&dir);
    offered_as_e2fsck_offers(&img, "Inode 12 extent tree (at level 1) could be narrower.");
}

#[test]
fn no_optimize_extents_and_fixes_only_make_no_offer() {
    let dir = TempDir::new("pass1e-off");
    let img = shorter(&dir);
    for opt in ["no_optimize_extents", "fixes_only"] {
        let e2 = oracle_run(&img, &["-fn", "-E", opt]);
        let pf = pfsck_timeout(
            &["-fn".as_ref(), "-E".as_ref(), opt.as_ref(), img.as_os_str()],
            E2FSCK_TIMEOUT,
        );
        assert!(offers(&e2.stdout).is_empty(), "{opt}: {}", e2.stdout);
        assert!(offers(&pf.stdout).is_empty(), "{opt}: {}", pf.stdout);
    }
}

/// `-fy` rebuilds the tree as e2fsck's pass 1E does: the same output
/// lines for the offer and the pass header, exit 0 as e2fsck (not a
/// correction), e2fsck -fn clean and offering nothing after, the file's
/// contents unchanged.
fn rebuilt_as_e2fsck_rebuilds(img: &Path, want: &str) {
    let (a, b) = (img.with_extension("e2"), img.with_extension("pf"));
    copy_image(img, &a);
    copy_image(img, &b);
    let e2 = oracle_run(&a, &["-fy"]);
    let pf = pfsck_timeout(&["-fy".as_ref(), b.as_os_str()], E2FSCK_TIMEOUT);
    assert_eq!(e2.code(), Some(0), "{}", e2.stdout);
    assert_eq!(pf.code(), Some(0), "{}", pf.stdout);
    let line = format!("{want}  Optimize? yes");
    assert_eq!(offers(&e2.stdout), vec![line.clone()], "{}", e2.stdout);
    assert_eq!(
        report_shape(&offers(&pf.stdout).join("\n")),
        report_shape(&line),
        "{}",
        pf.stdout
    );
    let tool_lines = [
        (
            &e2.stdout,
            "Pass 1E: Optimizing extent trees",
            "FILE SYSTEM WAS MODIFIED",
        ),
        (
            &pf.stdout,
            "Pass 1E: extent trees made smaller",
            "repairs written",
        ),
    ];
    for (out, pass1e, modified) in tool_lines {
        assert!(out.contains(&format!("\n{pass1e}\nPass 2:")), "{out}");
        assert!(out.contains(modified), "{out}");
    }
    let after = oracle_run(&b, &["-fn"]);
    assert_eq!(after.code(), Some(0), "{}", after.stdout);
    assert!(offers(&after.stdout).is_empty(), "{}", after.stdout);
    let again = pfsck_timeout(&["-fn".as_ref(), b.as_os_str()], E2FSCK_TIMEOUT);
    assert_eq!(again.code(), Some(0), "{}", again.stdout);
    assert!(offers(&again.stdout).is_empty(), "{}", again.stdout);
    let dump = |i: &Path| {
        let out = i.with_extension("dump");
        debugfs_r(i, &format!("dump /sparse {}", out.display()));
        std::fs::read(&out).unwrap()
    };
    let before = dump(img);
    assert!(!before.is_empty());
    assert_eq!(dump(&b), before);
    assert_eq!(dump(&a), before);
}

#[test]
fn a_tree_that_could_be_shorter_is_rebuilt_under_y() {
    let dir = TempDir::new("pass1e-shorter-y");
    let img = shorter(&dir);
    rebuilt_as_e2fsck_rebuilds(&img, "Inode 12 extent tree (at level 1) could be shorter.");
    // The extents went back into the inode.
    let b = img.with_extension("pf");
    assert!(!debugfs_r(&b, "ex /sparse").contains(" 1/ 1 "));
}

#[test]
fn a_tree_that_could_be_narrower_is_rebuilt_under_y() {
    let dir = TempDir::new("pass1e-narrower-y");
    let img = narrower(&dir);
    rebuilt_as_e2fsck_rebuilds(&img, "Inode 12 extent tree (at level 1) could be narrower.");
}

#[test]
fn a_tree_of_two_index_levels_is_rebuilt_with_two() {
    // 1000 extents in 13 leaves of 1 KiB under an index node, 100 of
    // them punched: 900 extents need 11 full leaves, still two levels.
    let dir = TempDir::new("pass1e-deep-y");
    let img = image(&dir, "deep", 1024, 1000, &[(100, 300)]);
    rebuilt_as_e2fsck_rebuilds(&img, "Inode 12 extent tree (at level 2) could be narrower.");
    let b = img.with_extension("pf");
    let ex = debugfs_r(&b, "ex /sparse");
    assert!(ex.contains(" 1/ 2  11/ 11 "), "{ex}");
}
