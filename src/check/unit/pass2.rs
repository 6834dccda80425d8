use crate::check::problem::Code;
use crate::fs::num::Ino;
use crate::testfs::{Image, check, put_u16, with_code};

const BS: usize = 4096;

fn image() -> Image {
    Image::new("8M", &["-b", "4096", "-O", "^metadata_csum"])
}

/// A rec_len that is not a multiple of 4 in the middle of the root's
/// block: e2fsck's "Directory inode 2, block #0, offset 44: directory
/// corrupted".
#[test]
fn a_rec_len_not_a_multiple_of_four_corrupts_the_block() {
    let img = image();
    let src = img.source(10);
    img.debugfs(&format!("write {src} a\nwrite {src} b\n"));
    let root = img.blocks("/")[0] as usize;
    let mut bytes = img.bytes();
    // '.' (12 bytes), '..' (12), then lost+found (20), a, b.
    let at = root * BS + 12 + 12 + 20;
    assert_eq!(&bytes[at + 8..at + 9], b"a");
    put_u16(&mut bytes, at + 4, 13);
    let rep = check(bytes);
    let p = with_code(&rep, Code::DirBlockCorrupt);
    assert_eq!(p.len(), 1, "{:?}", rep.problems);
    let a = p[0].args();
    assert_eq!(
        (a.ino.map(Ino::get), a.num, a.num2),
        (Some(2), Some(0), Some(44))
    );
}

/// An entry whose inode was cleared points to an unused inode.
#[test]
fn an_entry_to_a_cleared_inode_is_deleted_unused() {
    let img = image();
    let src = img.source(10);
    img.debugfs(&format!("write {src} a\n"));
    let ino = img.ino("/a");
    img.debugfs(&format!("clri <{ino}>\nfreei <{ino}>\n"));
    let rep = check(img.bytes());
    let p = with_code(&rep, Code::DirEntryDeletedInode);
    assert_eq!(p.len(), 1, "{:?}", rep.problems);
    let a = p[0].args();
    assert_eq!(
        (a.ino.map(Ino::get), a.num, a.detail),
        (Some(2), Some(u64::from(ino)), "a")
    );
}

/// '..' of a subdirectory naming lost+found: pass 3 finds the parent
/// wrong, with both names (e2fsck: "'..' in /d (12) is /lost+found (11),
/// should be / (2)").
#[test]
fn a_wrong_dotdot_names_found_and_expected_parents() {
    let img = image();
    img.debugfs("mkdir d\n");
    let d = img.ino("/d");
    let blk = img.blocks("/d")[0] as usize;
    let mut bytes = img.bytes();
    crate::testfs::put_u32(&mut bytes, blk * BS + 12, 11);
    let rep = check(bytes);
    let p = with_code(&rep, Code::DirDotDotWrong);
    assert_eq!(p.len(), 1, "{:?}", rep.problems);
    let a = p[0].args();
    assert_eq!(
        (a.ino.map(Ino::get), a.num2),
        (Some(d), Some(11)),
        "{:?}",
        rep.problems
    );
}
