use crate::check::problem::Code;
use crate::fs::num::Ino;
use crate::testfs::{Image, check, with_code};

/// Two files whose extents map the same three blocks: each is named once
/// with its count of shared blocks and of files it shares them with
/// (e2fsck's pass 1B/1C list).
#[test]
fn two_files_sharing_an_extent_are_both_named() {
    let img = Image::new("8M", &["-b", "4096", "-O", "^metadata_csum"]);
    let src = img.source(3 * 4096);
    img.debugfs(&format!("write {src} a\nwrite {src} b\n"));
    let (a, b) = (img.ino("/a"), img.ino("/b"));
    let first = img.blocks("/a")[0];
    // i_block[5]: the first extent's ee_start_lo.
    img.debugfs(&format!("sif <{b}> block[5] {first}\n"));
    assert_eq!(img.blocks("/b"), img.blocks("/a"));
    let rep = check(img.bytes());
    let mut dups: Vec<(Option<u32>, Option<u64>, Option<u64>)> = with_code(&rep, Code::DupBlocks)
        .iter()
        .map(|p| (p.args().ino.map(Ino::get), p.args().num, p.args().num2))
        .collect();
    dups.sort();
    assert_eq!(
        dups,
        vec![(Some(a), Some(3), Some(1)), (Some(b), Some(3), Some(1))],
        "{:?}",
        rep.problems
    );
}
