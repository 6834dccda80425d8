use crate::check::problem::{Code, Pass};
use crate::testfs::{Image, check, codes_of_pass, with_code};

/// An unlinked file left on the orphan list: -n checks the file system as
/// it will be once the list is processed, so the file is released and no
/// pass finds anything left of it.
#[test]
fn an_orphan_is_released_before_the_passes() {
    let img = Image::new("8M", &["-b", "4096", "-O", "^metadata_csum"]);
    let src = img.source(2 * 4096);
    img.debugfs(&format!("write {src} f\n"));
    let ino = img.ino("/f");
    img.debugfs(&format!(
        "unlink /f\nsif <{ino}> links_count 0\nssv last_orphan {ino}\n"
    ));
    let rep = check(img.bytes());
    assert_eq!(
        with_code(&rep, Code::OrphansPending).len(),
        1,
        "{:?}",
        rep.problems
    );
    for pass in [Pass::P1, Pass::P1B, Pass::P2, Pass::P3, Pass::P4, Pass::P5] {
        assert!(
            codes_of_pass(&rep, pass).is_empty(),
            "{pass:?}: {:?}",
            rep.problems
        );
    }
}

/// A file on the orphan list that still has a link is truncated to its
/// size, not released: its blocks stay in use.
#[test]
fn a_linked_orphan_stays() {
    let img = Image::new("8M", &["-b", "4096", "-O", "^metadata_csum"]);
    let src = img.source(2 * 4096);
    img.debugfs(&format!("write {src} f\n"));
    let ino = img.ino("/f");
    img.debugfs(&format!("ssv last_orphan {ino}\n"));
    let rep = check(img.bytes());
    for pass in [Pass::P1, Pass::P2, Pass::P3, Pass::P4, Pass::P5] {
        assert!(
            codes_of_pass(&rep, pass).is_empty(),
            "{pass:?}: {:?}",
            rep.problems
        );
    }
    assert_eq!(rep.summary.inodes_used, 12, "{:?}", rep.summary);
}
