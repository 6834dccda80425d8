//! Preen (`-p`) prints what e2fsck -p prints: one `NAME: message.  FIXED.`
//! line per fix, no pass headers, then the summary line — boot logs and
//! scripts read it. Compared line for line with e2fsck on the same damage.

use crate::common::*;

#[test]
fn preen_lines_match_e2fsck() {
    let dir = TempDir::new("preen-output");
    let base = cached_image("preen-output-base", |img| {
        mkfs(img, 16 << 20, &MkfsOpts::ext4(), Some(&standard_tree_dir()));
    });
    let ours = dir.join("img");
    copy_image(&base, &ours);
    debugfs_w(&ours, &["sif <12> links_count 5", "sif <13> dtime 12345"]);
    let theirs = dir.join("img2");
    copy_image(&ours, &theirs);
    let p = pfsck(&["-fp".as_ref(), ours.as_os_str()]);
    let e = e2fsck(&theirs, &["-fp"]);
    assert_eq!(p.status.code(), Some(1));
    assert_eq!(e.code(), Some(1));
    let name =
        |path: &std::path::Path, text: &str| text.replace(&path.display().to_string(), "NAME");
    let pl: Vec<String> = name(&ours, &String::from_utf8_lossy(&p.stdout))
        .lines()
        .map(String::from)
        .collect();
    let el: Vec<String> = name(&theirs, &e.stdout)
        .lines()
        .filter(|l| l.starts_with("NAME: "))
        .map(String::from)
        .collect();
    assert!(pl.iter().any(|l| l.ends_with("FIXED.")), "{pl:?}");
    // Same lines; in the summary line only the files part is compared, as
    // e2fsck -p also indexes a multi-block directory on the side (an
    // optimisation pfsck does not do), which costs it a block.
    let files = |l: &String| {
        let l = l.split(" files ").next().unwrap_or("");
        l.split(" inodes ").next().unwrap_or("").to_string()
    };
    assert_eq!(pl.len(), el.len(), "pfsck {pl:?}\ne2fsck {el:?}");
    // pfsck's words are its own: the lines' shapes are compared.
    let shape = |l: &[String]| report_shape(&l.join("\n"));
    assert_eq!(
        shape(&pl[..pl.len() - 1]),
        shape(&el[..el.len() - 1]),
        "pfsck -fp {pl:?} vs e2fsck -fp {el:?}"
    );
    assert_eq!(files(pl.last().unwrap()), files(el.last().unwrap()));
}

/// Preen meeting a problem it may not fix (an unattached inode, pass 4)
/// after one it fixes (a wrong i_blocks, pass 1): e2fsck's preenhalt
/// keeps the fix it made, marks the superblock "with errors" (so the next
/// boot checks it) and exits 4; pfsck writes the same bytes (the tools'
/// own superblock fields aside), prints the same lines (the fix, the
/// problem; `UNEXPECTED INCONSISTENCY` on standard error) and exits 4.
/// `e2fsck -n` and `dumpe2fs -h` then see the error state, and the undo
/// log restores the damaged image.
#[test]
fn preen_halt_matches_e2fsck() {
    use crate::common::journal::masked_sb;
    let dir = TempDir::new("preen-halt");
    // No directory of several blocks: e2fsck -p indexes those on the side
    // (pass 3A, before pass 4), which pfsck does not do.
    let tree = dir.join("tree");
    build_tree(
        &tree,
        &[
            Node::file("f12k", 12 * 1024 + 1),
            Node::file("f70k", 70 * 1024),
            Node::file("d/small", 100),
        ],
    );
    let base = dir.join("base");
    mkfs(
        &base,
        16 << 20,
        &MkfsOpts::ext4().block_size(1024),
        Some(&tree),
    );
    let damaged = dir.join("damaged");
    copy_image(&base, &damaged);
    debugfs_w(&damaged, &["sif /f12k blocks 2", "unlink /f70k"]);
    let ours = dir.join("img");
    let theirs = dir.join("img2");
    copy_image(&damaged, &ours);
    copy_image(&damaged, &theirs);
    let p = pfsck(&["-fp".as_ref(), ours.as_os_str()]);
    let e = e2fsck(&theirs, &["-fp"]);
    assert_eq!(p.status.code(), Some(4));
    assert_eq!(e.code(), Some(4));
    let name =
        |path: &std::path::Path, text: &str| text.replace(&path.display().to_string(), "NAME");
    // e2fsck prints some problems with a closing period and some without;
    // pfsck always with one.
    let lines = |text: String| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("NAME: "))
            .map(|l| l.trim_end_matches('.').to_string())
            .collect()
    };
    // The e2fsck helper merges standard error into its output, in order.
    let unexpected = "STOPPED: a problem preen may not fix needs a person.";
    let mut pl = lines(name(&ours, &String::from_utf8_lossy(&p.stdout)));
    let perr = String::from_utf8_lossy(&p.stderr);
    assert!(perr.contains(unexpected), "pfsck: {perr}");
    pl.extend(lines(name(&ours, &perr)));
    let el = lines(name(&theirs, &e.stdout));
    let shape = |l: &[String]| report_shape(&l.join("\n"));
    assert_eq!(
        shape(&pl),
        shape(&el),
        "pfsck -fp {pl:#?} vs e2fsck -fp {el:#?}"
    );
    assert!(pl[0].ends_with("FIXED"), "{pl:?}");
    assert!(el.last().unwrap().contains("UNEXPECTED"), "{el:?}");
    assert!(pl.last().unwrap().contains("STOPPED"), "{pl:?}");

    let (a, b) = (
        std::fs::read(&theirs).unwrap(),
        std::fs::read(&ours).unwrap(),
    );
    assert_eq!(masked_sb(&a), masked_sb(&b), "superblocks differ");
    for (k, (x, y)) in a.chunks(1024).zip(b.chunks(1024)).enumerate().skip(2) {
        assert!(x == y, "block {k} differs from e2fsck's");
    }
    assert_ne!(a, std::fs::read(&damaged).unwrap(), "e2fsck wrote nothing");

    let header = |img: &std::path::Path| {
        let out = std::process::Command::new(tool("dumpe2fs"))
            .arg("-h")
            .arg(img)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(
        header(&ours).contains("clean with errors"),
        "{}",
        header(&ours)
    );
    let n = e2fsck(&ours, &["-n"]);
    assert!(
        n.stdout.contains("contains a file system with errors"),
        "e2fsck -n: {}",
        n.stdout
    );
    let log = pfsck::store::default_undo_path(&ours);
    let rb = pfsck(&["--rollback".as_ref(), log.as_os_str(), ours.as_os_str()]);
    assert_eq!(rb.status.code(), Some(0));
    assert!(std::fs::read(&ours).unwrap() == std::fs::read(&damaged).unwrap());
}
