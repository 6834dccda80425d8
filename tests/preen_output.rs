//! Preen (`-p`) prints what e2fsck -p prints: one `NAME: message.  FIXED.`
//! line per fix, no pass headers, then the summary line — boot logs and
//! scripts read it. Compared line for line with e2fsck on the same damage.

mod common;

use common::*;

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
    let files = |l: &String| l.split(" files ").next().unwrap_or("").to_string();
    assert_eq!(pl.len(), el.len(), "pfsck {pl:?}\ne2fsck {el:?}");
    assert_eq!(
        pl[..pl.len() - 1],
        el[..el.len() - 1],
        "pfsck -fp vs e2fsck -fp"
    );
    assert_eq!(files(pl.last().unwrap()), files(el.last().unwrap()));
}
