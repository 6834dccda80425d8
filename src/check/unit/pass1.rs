use crate::check::problem::{Code, Pass};
use crate::fs::num::Ino;
use crate::testfs::{Image, check, check_on, codes_of_pass, with_code};

/// An ext4 image with /f, a file of three 4 KiB blocks in one extent.
fn with_file() -> (Image, u32) {
    let img = Image::new("8M", &["-b", "4096", "-O", "^metadata_csum"]);
    let src = img.source(3 * 4096);
    img.debugfs(&format!("write {src} f\n"));
    let ino = img.ino("/f");
    (img, ino)
}

/// One flipped bit of eh_depth (0 to 256): as e2fsck, the tree is too
/// deep (256, at most 4), its one extent is then invalid, and the inode
/// maps nothing, so i_blocks is wrong. The blocks it mapped are left for
/// pass 5, never judged as the file's.
#[test]
fn extent_depth_past_the_limit_is_too_deep() {
    let (img, ino) = with_file();
    // i_block[1]: eh_max (4) in the low half, eh_depth in the high half.
    img.debugfs(&format!("sif <{ino}> block[1] {}\n", (256 << 16) | 4));
    let rep = check(img.bytes());
    let deep = with_code(&rep, Code::InodeExtentTooDeep);
    assert_eq!(deep.len(), 1, "{:?}", rep.problems);
    let a = deep[0].args();
    assert_eq!(
        (a.ino.map(Ino::get), a.num, a.num2),
        (Some(ino), Some(256), Some(4))
    );
    let want = [
        Code::InodeExtentTooDeep,
        Code::InodeExtentBad,
        Code::InodeIBlocks,
    ];
    let found: Vec<Code> = codes_of_pass(&rep, Pass::P1)
        .into_iter()
        .filter(|c| want.contains(c))
        .collect();
    assert_eq!(found, want, "{:?}", rep.problems);
    assert!(with_code(&rep, Code::DupBlocks).is_empty());
}

/// A wrong i_blocks names the value found and the one counted, in 512-byte
/// units as e2fsck prints them.
#[test]
fn wrong_i_blocks_names_both_counts() {
    let (img, ino) = with_file();
    img.debugfs(&format!("sif <{ino}> blocks 8\n"));
    let rep = check(img.bytes());
    let p = with_code(&rep, Code::InodeIBlocks);
    assert_eq!(p.len(), 1, "{:?}", rep.problems);
    let a = p[0].args();
    assert_eq!(
        (a.ino.map(Ino::get), a.num, a.num2),
        (Some(ino), Some(8), Some(24))
    );
    assert_eq!(rep.problems.len(), 1, "{:?}", rep.problems);
}

/// The same report at one and two threads.
#[test]
fn pass1_reports_the_same_at_any_thread_count() {
    let (img, ino) = with_file();
    img.debugfs(&format!(
        "sif <{ino}> blocks 8\nsif <{ino}> links_count 3\n"
    ));
    let one = check_on(img.bytes(), 1);
    let two = check_on(img.bytes(), 2);
    assert_eq!(format!("{:?}", one.problems), format!("{:?}", two.problems));
}
