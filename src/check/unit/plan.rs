//! The planner (`fix::plan`) on a checked image: what it stages, and that
//! the staged blocks written back leave nothing for the check to find.

use crate::check::problem::Code;
use crate::check::{self, Report};
use crate::fix::{self, Mode};
use crate::fs::num::Blk;
use crate::io::Device;
use crate::store::overlay::Staging;
use crate::testfs::{Image, check, options};

/// `bytes` with every block `plan` stages written over it.
fn plan_and_apply(bytes: &[u8], mode: Mode) -> (Report, fix::Plan, Vec<u8>) {
    let checked = check::check_device(Device::from_bytes(bytes.to_vec()), &options(1)).unwrap();
    let (fs, state) = (checked.fs.unwrap(), checked.state.unwrap());
    let plan = fix::plan(
        &fs,
        &state,
        &checked.report,
        mode,
        &Staging::in_memory(1 << 20),
    )
    .unwrap();
    let bs = fs.geo.block_len();
    let mut out = bytes.to_vec();
    for b in plan.overlay.blocks() {
        let data = plan.overlay.get(b).unwrap().unwrap();
        out[b.get() as usize * bs..][..bs].copy_from_slice(&data);
    }
    (checked.report, plan, out)
}

/// A wrong i_blocks is fixed in the inode alone: its inode-table block is
/// the one block staged, and the image written back checks clean.
#[test]
fn a_wrong_i_blocks_stages_its_inode_table_block_only() {
    let img = Image::new("8M", &["-b", "4096", "-O", "^metadata_csum"]);
    let src = img.source(3 * 4096);
    img.debugfs(&format!("write {src} f\n"));
    let ino = img.ino("/f");
    let itable: u64 = img
        .debugfs(&format!("imap <{ino}>\n"))
        .split("located at block ")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    img.debugfs(&format!("sif <{ino}> blocks 8\n"));
    let (report, plan, fixed) = plan_and_apply(&img.bytes(), Mode::Yes);
    let k = report
        .problems
        .iter()
        .position(|p| p.code == Code::InodeIBlocks)
        .unwrap();
    assert!(plan.fixed[k]);
    assert!(plan.fixes_staged);
    assert_eq!(plan.overlay.blocks(), vec![Blk(itable)]);
    let after = check(fixed);
    assert!(after.problems.is_empty(), "{:?}", after.problems);
}

/// Preen stops at a problem it may not fix (e2fsck's "UNEXPECTED
/// INCONSISTENCY") and stages nothing.
#[test]
fn preen_refuses_shared_blocks() {
    let img = Image::new("8M", &["-b", "4096", "-O", "^metadata_csum"]);
    let src = img.source(4096);
    img.debugfs(&format!("write {src} a\nwrite {src} b\n"));
    let first = img.blocks("/a")[0];
    img.debugfs(&format!("sif /b block[5] {first}\n"));
    let checked = check::check_device(Device::from_bytes(img.bytes()), &options(1)).unwrap();
    let (fs, state) = (checked.fs.unwrap(), checked.state.unwrap());
    let r = fix::plan(
        &fs,
        &state,
        &checked.report,
        Mode::Preen,
        &Staging::in_memory(1 << 20),
    );
    assert!(matches!(r, Err(fix::Refusal::Unexpected)));
}
