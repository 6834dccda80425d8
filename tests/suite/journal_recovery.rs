//! Journal recovery planning against e2fsck's own replay.
//!
//! Transactions are written with debugfs's journal commands (`jo`, `jw`,
//! `jc`), which leave needs_recovery set. For each image, pfsck's replay
//! plan is compared with what `e2fsck -E journal_only -y` writes home on a
//! copy, block by block over the whole image: a block in the plan must hold
//! the planned bytes, every other block must be unchanged (the superblock
//! and the journal superblock aside, which e2fsck rewrites itself). Then
//! `pfsck -fn` must check the post-replay view, say so, exit 0 on these
//! healthy file systems and leave the image untouched.
//!
//! Corrupted journals (bad commit checksum, bad commit tid, bad descriptor
//! checksum, bad data block checksum, uncommitted tail) go through the same
//! comparison: whatever e2fsck drops, the plan must drop too.
//!
//! The e2fsprogs `j_*` images, when present, are checked for the verdicts
//! explained in `journal_conformance_images`.

use crate::common::journal::*;
use crate::common::*;
use pfsck::check::recovery::{self, Plan};
use pfsck::check::{Options, superblock};
use pfsck::io::Device;
use std::path::{Path, PathBuf};

/// pfsck's plan for the image, and the journal superblock's block.
fn plan_of(img: &Path) -> (Plan, u64, u64) {
    let dev = Device::open_read_only(img).unwrap();
    let fs = match superblock::open(dev, &Options::default()).unwrap() {
        superblock::Opened::Fs(fs, _) => fs,
        superblock::Opened::Fatal(p) => panic!("cannot open {}: {p:?}", img.display()),
    };
    let bs = u64::from(fs.geo.block_size);
    let (_, plan, jsb) = recovery::plan_internal(&fs).expect("usable journal");
    (plan, jsb, bs)
}

/// The plan equals e2fsck's replay, block for block over the whole image.
fn assert_plan_matches_e2fsck(dir: &TempDir, img: &Path) -> Plan {
    let (plan, jsb, bs) = plan_of(img);
    let copy = dir.join("e2fsck-copy");
    copy_image(img, &copy);
    let r = e2fsck(&copy, &["-E", "journal_only", "-y"]);
    assert!(
        matches!(r.code(), Some(0 | 1)),
        "e2fsck journal_only: {}",
        r.stdout
    );
    let orig = std::fs::read(img).unwrap();
    let after = std::fs::read(&copy).unwrap();
    assert_eq!(orig.len(), after.len());
    let sb_blk = 1024 / bs;
    let mut mismatches = Vec::new();
    for (n, (o, a)) in orig
        .chunks(bs as usize)
        .zip(after.chunks(bs as usize))
        .enumerate()
    {
        let blk = n as u64;
        if blk == sb_blk || blk == jsb {
            continue;
        }
        let want = plan.blocks.get(&blk).map_or(o, |v| &v[..]);
        if want != a {
            mismatches.push(blk);
        }
    }
    assert!(
        mismatches.is_empty(),
        "blocks where pfsck's plan differs from e2fsck's replay: {mismatches:?}\nplan: {:?}\ne2fsck: {}",
        plan.blocks.keys().collect::<Vec<_>>(),
        r.stdout
    );
    plan
}

/// `pfsck -fn` checks the post-replay view, exits `want`, writes nothing.
fn assert_pfsck_after_replay(img: &Path, want: i32) -> String {
    let before = hash_file(img);
    let out = pfsck(&["-fn".as_ref(), img.as_os_str()]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(hash_file(img), before, "pfsck -n modified the image");
    assert_eq!(
        out.status.code(),
        Some(want),
        "pfsck -fn: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("as it will be after journal recovery"),
        "no post-replay notice: {stdout}"
    );
    assert!(
        !stdout.contains("which a read-only check leaves undone"),
        "still warns about skipping: {stdout}"
    );
    stdout
}

fn keys(plan: &Plan) -> Vec<u64> {
    plan.blocks.keys().copied().collect()
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

// debugfs's `jw` misplaces the transaction after one that carries revoke
// records (it overwrites that commit block), so revokes come last here;
// revoke-then-rewrite across transactions is covered by the planner's unit
// tests on synthetic logs.
#[test]
fn csum_v3_64bit_with_revokes() {
    let dir = TempDir::new("jr-v3");
    let opts = MkfsOpts::ext4()
        .block_size(1024)
        .features("metadata_csum,64bit");
    let mut f = Vec::new();
    let img = build(&dir, &opts, 8 << 20, "-c", |free| {
        f = free.to_vec();
        vec![
            Txn::write(&free[0..3], 1),
            Txn::write(&free[5..6], 2),
            // The same block twice: the last copy wins.
            Txn::write(&free[0..1], 3),
            // Revokes copies of earlier transactions.
            Txn::write(&free[3..4], 4).revoke(&[free[1], free[5]]),
        ]
    });
    let plan = assert_plan_matches_e2fsck(&dir, &img);
    assert_eq!(keys(&plan), vec![f[0], f[2], f[3]]);
    assert_eq!(plan.blocks[&f[0]], pattern(1024, 3, 0));
    assert_eq!(plan.transactions(), 4);
    assert_eq!(plan.revoke_hits, 2);
    assert!(plan.failure.is_none() && plan.failed_commit.is_none());
    let out = assert_pfsck_after_replay(&img, 0);
    assert!(out.contains("(4 transactions, 3 blocks)"), "{out}");
}

#[test]
fn csum_v2_32bit_4k() {
    let dir = TempDir::new("jr-v2");
    let opts = MkfsOpts::ext4()
        .block_size(4096)
        .features("^64bit,metadata_csum");
    let mut f = Vec::new();
    let img = build(&dir, &opts, 32 << 20, "-c -v 2", |free| {
        f = free.to_vec();
        vec![
            Txn::write(&free[6..8], 10),
            Txn::write(&free[0..4], 9).revoke(&[free[2]]),
        ]
    });
    let plan = assert_plan_matches_e2fsck(&dir, &img);
    // A revoke in the same transaction revokes that transaction's copy.
    assert_eq!(keys(&plan), sorted(vec![f[0], f[1], f[3], f[6], f[7]]));
    assert_pfsck_after_replay(&img, 0);
}

/// Without metadata_csum, `jo -c` asks for the v1 (crc32_be) transaction
/// checksum. debugfs's sum for a transaction with a revoke block is not
/// the one recovery computes (it covers descriptor and data blocks only),
/// so e2fsck declares that transaction corrupt: so must pfsck.
#[test]
fn csum_v1_commit_as_e2fsck_judges_it() {
    let dir = TempDir::new("jr-v1");
    let opts = MkfsOpts::ext4()
        .block_size(4096)
        .features("^64bit,^metadata_csum");
    let mut f = Vec::new();
    let img = build(&dir, &opts, 32 << 20, "-c -v 2", |free| {
        f = free.to_vec();
        vec![
            Txn::write(&free[0..2], 11),
            Txn::write(&free[2..3], 12).revoke(&[free[0]]),
        ]
    });
    let plan = assert_plan_matches_e2fsck(&dir, &img);
    assert_eq!(keys(&plan), vec![f[0], f[1]]);
    assert_eq!(plan.failed_commit, Some(plan.start_transaction + 1));
    assert_pfsck_after_replay(&img, 0);
}

#[test]
fn ext3_no_checksums_indirect_journal_escape() {
    let dir = TempDir::new("jr-ext3");
    let opts = MkfsOpts::ext3().block_size(1024);
    let mut f = Vec::new();
    let img = build(&dir, &opts, 8 << 20, "", |free| {
        f = free.to_vec();
        vec![
            Txn::write(&free[0..2], 20).escaped(),
            Txn::write(&free[2..3], 21).revoke(&[free[1]]),
        ]
    });
    let plan = assert_plan_matches_e2fsck(&dir, &img);
    assert_eq!(keys(&plan), vec![f[0], f[2]]);
    assert_eq!(
        &plan.blocks[&f[0]][..4],
        &JBD2_MAGIC.to_be_bytes(),
        "escaped magic not restored"
    );
    assert_pfsck_after_replay(&img, 0);
}

#[test]
fn uncommitted_transaction_is_not_replayed() {
    let dir = TempDir::new("jr-uncommitted");
    let opts = MkfsOpts::ext4().block_size(1024).features("metadata_csum");
    let mut f = Vec::new();
    let img = build(&dir, &opts, 8 << 20, "-c", |free| {
        f = free.to_vec();
        vec![
            Txn::write(&free[0..1], 30),
            Txn::write(&free[1..3], 31).uncommitted(),
        ]
    });
    let plan = assert_plan_matches_e2fsck(&dir, &img);
    assert_eq!(keys(&plan), vec![f[0]]);
    assert_eq!(plan.transactions(), 1);
    assert_pfsck_after_replay(&img, 0);
}

/// Log blocks of the image: (fs block, blocktype, sequence), in disk order.
fn log_blocks(img: &Path, bs: u64) -> Vec<(u64, u32, u32)> {
    let data = std::fs::read(img).unwrap();
    data.chunks(bs as usize)
        .enumerate()
        .filter_map(|(n, b)| {
            let be = |o: usize| u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
            (be(0) == JBD2_MAGIC && matches!(be(4), 1 | 2 | 5)).then(|| (n as u64, be(4), be(8)))
        })
        .collect()
}

/// An image with three committed transactions, for corrupting.
fn three_transactions(dir: &TempDir, features: &str, jo: &str) -> (PathBuf, Vec<u64>, u64) {
    let opts = MkfsOpts::ext4().block_size(1024).features(features);
    let mut f = Vec::new();
    let img = build(dir, &opts, 8 << 20, jo, |free| {
        f = free.to_vec();
        vec![
            Txn::write(&free[0..2], 40),
            Txn::write(&free[2..4], 41),
            Txn::write(&free[4..6], 42),
        ]
    });
    (img, f, 1024)
}

/// Block `kind` of the `nth` transaction (0-based from the log's start).
fn find_log_block(img: &Path, bs: u64, kind: u32, nth: usize) -> u64 {
    let logs = log_blocks(img, bs);
    let first_seq = logs.iter().map(|l| l.2).min().unwrap();
    logs.iter()
        .find(|l| l.1 == kind && l.2 == first_seq + nth as u32)
        .unwrap_or_else(|| panic!("no block of type {kind} in transaction {nth}: {logs:?}"))
        .0
}

#[test]
fn corrupt_commit_checksum_stops_replay() {
    let dir = TempDir::new("jr-commit-csum");
    let (img, f, bs) = three_transactions(&dir, "metadata_csum,64bit", "-c");
    let commit = find_log_block(&img, bs, 2, 1);
    // A byte past the commit header fields: only the checksum notices.
    let off = commit * bs + 200;
    let b = read_at(&img, off, 1);
    write_at(&img, off, &[b[0] ^ 0xFF]);
    let plan = assert_plan_matches_e2fsck(&dir, &img);
    assert_eq!(keys(&plan), vec![f[0], f[1]]);
    assert_eq!(plan.failed_commit, Some(plan.start_transaction + 1));
    assert_pfsck_after_replay(&img, 0);
}

#[test]
fn corrupt_commit_tid_ends_the_log() {
    let dir = TempDir::new("jr-commit-tid");
    let (img, f, bs) = three_transactions(&dir, "metadata_csum,64bit", "-c");
    let commit = find_log_block(&img, bs, 2, 1);
    let seq = read_at(&img, commit * bs + 8, 4);
    let bad = u32::from_be_bytes([seq[0], seq[1], seq[2], seq[3]]).wrapping_add(100);
    write_at(&img, commit * bs + 8, &bad.to_be_bytes());
    let plan = assert_plan_matches_e2fsck(&dir, &img);
    assert_eq!(keys(&plan), vec![f[0], f[1]]);
    assert!(plan.failure.is_none());
    assert_pfsck_after_replay(&img, 0);
}

#[test]
fn corrupt_descriptor_checksum_fails_recovery() {
    let dir = TempDir::new("jr-descr-csum");
    let (img, _, bs) = three_transactions(&dir, "metadata_csum,64bit", "-c");
    let desc = find_log_block(&img, bs, 1, 1);
    let off = desc * bs + 600;
    let b = read_at(&img, off, 1);
    write_at(&img, off, &[b[0] ^ 0xFF]);
    let plan = assert_plan_matches_e2fsck(&dir, &img);
    // debugfs writes no commit time, so the bad block cannot be taken for
    // a stale one: recovery fails and replays nothing, as in e2fsck.
    assert!(plan.blocks.is_empty(), "{:?}", keys(&plan));
    assert!(plan.failure.is_some());
    assert_pfsck_after_replay(&img, 0);
}

#[test]
fn corrupt_data_block_checksum_skips_that_block() {
    let dir = TempDir::new("jr-data-csum");
    let (img, f, bs) = three_transactions(&dir, "metadata_csum,64bit", "-c");
    // The first data block of the second transaction follows its descriptor.
    let desc = find_log_block(&img, bs, 1, 1);
    let off = (desc + 1) * bs + 10;
    let b = read_at(&img, off, 1);
    write_at(&img, off, &[b[0] ^ 0xFF]);
    let plan = assert_plan_matches_e2fsck(&dir, &img);
    assert_eq!(keys(&plan), vec![f[0], f[1], f[3], f[4], f[5]]);
    assert_eq!(plan.bad_data_blocks, vec![f[2]]);
    assert_pfsck_after_replay(&img, 0);
}

#[test]
fn corrupt_commit_checksum_v2() {
    let dir = TempDir::new("jr-commit-v2");
    let (img, f, bs) = three_transactions(&dir, "metadata_csum,^64bit", "-c -v 2");
    let commit = find_log_block(&img, bs, 2, 2);
    let off = commit * bs + 300;
    let b = read_at(&img, off, 1);
    write_at(&img, off, &[b[0] ^ 0xFF]);
    let plan = assert_plan_matches_e2fsck(&dir, &img);
    assert_eq!(keys(&plan), f[0..4].to_vec());
    assert_pfsck_after_replay(&img, 0);
}

/// e2fsprogs' journal images. What pfsck -fn must answer, and why:
/// - corrupt commit csum / tid, corrupt revoke block: e2fsck replays the
///   transactions before the damage and the result is clean: 0;
/// - corrupt descriptor csum, impossible revoke r_count: recovery fails,
///   e2fsck replays nothing and resets the journal, and the disk as it is
///   is clean: 0 (a notice says recovery would fail);
/// - corrupt journal superblock magic: unusable journal that -n may not
///   clear: 12, as e2fsck;
/// - recover_csum2_32bit: the replayed blocks leave bitmaps that disagree
///   (e2fsck -fy's own expect.1 fixes them after replaying), so the
///   post-replay view has errors: 4, where e2fsck -n, which does not
///   replay, says 0;
/// - recover_fast_commit: the log, then the fast-commit records (a rename,
///   a create, extents added to a file): the result is clean: 0.
#[test]
fn journal_conformance_images() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/e2fsprogs");
    if !base.is_dir() {
        println!("conformance images not found, skipped");
        return;
    }
    let cases: &[(&str, i32, Option<usize>)] = &[
        ("j_corrupt_commit_csum", 0, Some(0)),
        ("j_corrupt_commit_tid", 0, None),
        ("j_corrupt_descr_csum", 0, Some(0)),
        ("j_corrupt_revoke_block", 0, None),
        ("j_corrupt_revoke_rcount", 0, Some(0)),
        ("j_corrupt_sb_magic", 12, None),
        ("j_recover_csum2_32bit", 4, None),
        ("j_recover_fast_commit", 0, None),
    ];
    for &(name, want, blocks) in cases {
        let src = base.join(name);
        if !src.is_dir() {
            continue;
        }
        let dir = TempDir::new(&format!("jr-{name}"));
        let img = dir.join("image");
        let (tool_name, file) = if src.join("image.gz").is_file() {
            ("gzip", src.join("image.gz"))
        } else {
            ("bzip2", src.join("image.bz2"))
        };
        let out = std::fs::File::create(&img).unwrap();
        let st = std::process::Command::new(tool(tool_name))
            .arg("-dc")
            .arg(&file)
            .stdout(out)
            .status()
            .unwrap();
        assert!(st.success());
        let before = hash_file(&img);
        let out = pfsck(&["-fn".as_ref(), img.as_os_str()]);
        assert_eq!(hash_file(&img), before, "{name}: image modified");
        assert_eq!(
            out.status.code(),
            Some(want),
            "{name}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        // Where the journal is usable, the plan must equal e2fsck's replay
        // (the fast-commit replay comes on top of the plan's blocks:
        // journal_replay_repair compares the whole result).
        if !matches!(name, "j_corrupt_sb_magic" | "j_recover_fast_commit") {
            let plan = assert_plan_matches_e2fsck(&dir, &img);
            if let Some(n) = blocks {
                assert_eq!(plan.blocks.len(), n, "{name}");
            }
        }
    }
}
