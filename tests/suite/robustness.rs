//! Robustness: pfsck must survive any damage to the metadata it reads.
//!
//! Three small images (ext2 with 1 KiB blocks, ext3 with 2 KiB blocks,
//! ext4 with metadata_csum and 4 KiB blocks) get 1-8 random bytes flipped
//! in their metadata: the superblock, the group descriptors, group 0's
//! bitmaps and inode table (the part holding used inodes), and the root
//! directory's blocks. For every variant `pfsck -fn` must finish within 20 s,
//! without a signal or a panic, with an exit code in {0, 4, 8, 12}, and
//! leave the file byte for byte unchanged.
//!
//! The flips come from a fixed-seed xorshift generator, so a failure is
//! reproducible: `PFSCK_FUZZ_VARIANT=N` reruns variant N alone (same seed,
//! `PFSCK_FUZZ_SEED`), `PFSCK_FUZZ_VARIANTS` sets how many variants run
//! (default 1500), and failing images are saved under
//! `target/tmp/pfsck-robustness/`.

use crate::common::*;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const DEFAULT_VARIANTS: usize = 1500;
const DEFAULT_SEED: u64 = 0x5eed_f5c4_2024_0001;
const TIMEOUT: Duration = Duration::from_secs(20);
const ALLOWED_EXITS: [i32; 4] = [0, 4, 8, 12];
/// Failing images kept for inspection, at most.
const SAVED_FAILURES: usize = 20;

/// A metadata area of a base image where bytes may be flipped.
#[derive(Clone, Debug)]
struct Region {
    name: &'static str,
    start: u64,
    len: u64,
}

struct FuzzBase {
    label: &'static str,
    bytes: Vec<u8>,
    regions: Vec<Region>,
}

fn base_tree(dir: &Path) {
    let mut spec = vec![
        Node::dir("d1/d2"),
        Node::dir("empty"),
        Node::file("a", 10),
        Node::file("b", 3000),
        Node::file("c", 40 * 1024),
        Node::file("d1/e", 700),
        Node::file("d1/d2/f", 5000),
        Node::symlink("fast", "d1/e"),
        Node::symlink("slow", &slow_symlink_target()),
        Node::hardlink("hard", "a"),
        Node::fifo("fifo"),
        Node::sparse("sparse", 300 * 1024, &[(100 * 1024, 2048)]),
    ];
    // Enough entries that the root directory spans several blocks.
    for i in 0..40 {
        spec.push(Node::file(&format!("root-entry-with-long-name-{i:03}"), i));
    }
    build_tree(dir, &spec);
}

fn build_base(label: &'static str, size: u64, opts: MkfsOpts, tree: &Path) -> FuzzBase {
    let tmp = TempDir::new(&format!("fuzz-base-{label}"));
    let img = tmp.join("image");
    mkfs(&img, size, &opts, Some(tree));
    let check = e2fsck_fn_run(&img);
    assert_eq!(
        check.code(),
        Some(0),
        "base {label} is not clean:\n{}",
        check.dump(4000)
    );
    let fs = dumpe2fs(&img);
    let bs = fs.block_size;
    let g0 = &fs.groups[0];
    let mut regions = vec![Region {
        name: "superblock",
        start: 1024,
        len: 1024,
    }];
    let (gdt_start, _) = g0.gdt.expect("group 0 has descriptors");
    regions.push(Region {
        name: "group descriptors",
        start: gdt_start * bs,
        len: fs.groups_count() * fs.desc_size,
    });
    regions.push(Region {
        name: "block bitmap 0",
        start: g0.block_bitmap * bs,
        len: bs,
    });
    regions.push(Region {
        name: "inode bitmap 0",
        start: g0.inode_bitmap * bs,
        len: bs,
    });
    // The inode table up to the first free inode (inodes are allocated in
    // order by mke2fs -d), rounded up to a block.
    let first_free = debugfs_number(&img, "ffi");
    let itable_blocks = g0.inode_table.1 - g0.inode_table.0 + 1;
    let used_blocks = (first_free * fs.inode_size).div_ceil(bs).min(itable_blocks);
    regions.push(Region {
        name: "inode table 0",
        start: g0.inode_table.0 * bs,
        len: used_blocks * bs,
    });
    for b in blocks_of(&img, "/") {
        regions.push(Region {
            name: "root directory",
            start: b * bs,
            len: bs,
        });
    }
    let bytes = std::fs::read(&img).unwrap();
    FuzzBase {
        label,
        bytes,
        regions,
    }
}

fn bases() -> Vec<FuzzBase> {
    let tree_dir = TempDir::new("fuzz-tree");
    let tree = tree_dir.join("tree");
    base_tree(&tree);
    vec![
        build_base(
            "ext2-1k",
            2 << 20,
            MkfsOpts::ext2().block_size(1024).blocks_per_group(1024),
            &tree,
        ),
        build_base(
            "ext3-2k",
            4 << 20,
            MkfsOpts::ext3().block_size(2048).blocks_per_group(1024),
            &tree,
        ),
        build_base(
            "ext4-4k-csum",
            8 << 20,
            MkfsOpts::ext4().block_size(4096).blocks_per_group(1024),
            &tree,
        ),
    ]
}

#[derive(Clone, Debug)]
struct Flip {
    region: &'static str,
    offset: u64,
    xor: u8,
}

/// The flips of variant `v`: a function of the seed and `v` only.
fn variant_flips(seed: u64, v: usize, base: &FuzzBase) -> Vec<Flip> {
    let mut rng = XorShift::new(seed ^ (v as u64).wrapping_mul(0xA076_1D64_78BD_642F));
    let n = 1 + rng.below(8) as usize;
    (0..n)
        .map(|_| {
            // Pick an area kind first so the many root-directory blocks do
            // not crowd out the superblock, then a region of that kind.
            let mut kinds: Vec<&str> = base.regions.iter().map(|r| r.name).collect();
            kinds.dedup();
            let kind = kinds[rng.below(kinds.len() as u64) as usize];
            let of_kind: Vec<&Region> = base.regions.iter().filter(|r| r.name == kind).collect();
            let r = of_kind[rng.below(of_kind.len() as u64) as usize];
            Flip {
                region: r.name,
                offset: r.start + rng.below(r.len),
                xor: 1 + rng.below(255) as u8,
            }
        })
        .collect()
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().map(|v| {
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v} is not a number"))
    })
}

fn seed() -> u64 {
    match std::env::var("PFSCK_FUZZ_SEED") {
        Ok(v) => {
            let v = v.trim();
            match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse(),
            }
            .unwrap_or_else(|_| panic!("PFSCK_FUZZ_SEED={v} is not a number"))
        }
        Err(_) => DEFAULT_SEED,
    }
}

fn failure_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("pfsck-robustness")
}

/// A thread's working copy of one base image. Between variants the file
/// always equals the base; a variant writes its flips, runs pfsck, checks
/// and then restores the flipped bytes.
struct WorkFile {
    path: PathBuf,
    file: File,
}

impl WorkFile {
    fn new(dir: &TempDir, base: &FuzzBase) -> Self {
        let path = dir.join(format!("work-{}", base.label));
        std::fs::write(&path, &base.bytes).unwrap();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        WorkFile { path, file }
    }

    fn apply(&self, flips: &[Flip]) {
        // Flips at the same offset compose.
        for f in flips {
            let mut b = [0u8];
            self.file.read_exact_at(&mut b, f.offset).unwrap();
            b[0] ^= f.xor;
            self.file.write_all_at(&b, f.offset).unwrap();
        }
    }

    /// Is the file exactly the base with `flips` applied? Reads it back,
    /// undoes the flips in the copy and compares with the base.
    fn unchanged(&self, base: &FuzzBase, flips: &[Flip], buf: &mut Vec<u8>) -> bool {
        buf.clear();
        let mut f = File::open(&self.path).unwrap();
        f.read_to_end(buf).unwrap();
        if buf.len() != base.bytes.len() {
            return false;
        }
        for fl in flips {
            buf[fl.offset as usize] ^= fl.xor;
        }
        *buf == base.bytes
    }

    fn restore(&self, base: &FuzzBase, flips: &[Flip], whole: bool) {
        if whole {
            self.file.set_len(base.bytes.len() as u64).unwrap();
            self.file.write_all_at(&base.bytes, 0).unwrap();
        } else {
            for f in flips {
                let o = f.offset as usize;
                self.file
                    .write_all_at(&base.bytes[o..o + 1], f.offset)
                    .unwrap();
            }
        }
    }
}

struct Failure {
    variant: usize,
    text: String,
}

#[test]
fn random_metadata_damage_never_crashes_or_writes() {
    let seed = seed();
    let only = env_usize("PFSCK_FUZZ_VARIANT");
    let total = env_usize("PFSCK_FUZZ_VARIANTS").unwrap_or(DEFAULT_VARIANTS);
    let variants: Vec<usize> = match only {
        Some(v) => vec![v],
        None => (0..total).collect(),
    };
    let bases = bases();
    for b in &bases {
        let summary: Vec<String> = b
            .regions
            .iter()
            .map(|r| format!("{}@{}+{}", r.name, r.start, r.len))
            .collect();
        println!("base {}: {}", b.label, summary.join(", "));
    }

    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let failures: Mutex<Vec<Failure>> = Mutex::new(Vec::new());
    let exits: Mutex<[usize; 256]> = Mutex::new([0; 256]);
    let saved = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..test_threads() {
            let (bases, variants, next, failures, exits, saved) =
                (&bases, &variants, &next, &failures, &exits, &saved);
            s.spawn(move || {
                let dir = TempDir::new(&format!("fuzz-worker-{t}"));
                let work: Vec<WorkFile> = bases.iter().map(|b| WorkFile::new(&dir, b)).collect();
                let mut buf = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&v) = variants.get(i) else { break };
                    let bi = v % bases.len();
                    let (base, wf) = (&bases[bi], &work[bi]);
                    let flips = variant_flips(seed, v, base);
                    wf.apply(&flips);
                    let run = pfsck_timeout(&["-fn".as_ref(), wf.path.as_os_str()], TIMEOUT);
                    let unchanged = wf.unchanged(base, &flips, &mut buf);
                    let mut why = Vec::new();
                    if run.timed_out {
                        why.push(run.describe());
                    } else if run.crashed() {
                        why.push(format!("crash: {}", run.describe()));
                    } else if let Some(code) = run.code() {
                        exits.lock().unwrap()[(code & 0xff) as usize] += 1;
                        if !ALLOWED_EXITS.contains(&code) {
                            why.push(format!("unexpected exit {code}"));
                        }
                    }
                    if !unchanged {
                        why.push("pfsck -fn modified the image".into());
                    }
                    if !why.is_empty() {
                        let mut text = format!(
                            "variant {v} (seed {seed:#x}, base {}): {}\n  flips:",
                            base.label,
                            why.join("; ")
                        );
                        for f in &flips {
                            let _ = write!(text, " [{} @{} ^{:#04x}]", f.region, f.offset, f.xor);
                        }
                        if saved.fetch_add(1, Ordering::Relaxed) < SAVED_FAILURES {
                            // Save the damaged image (base + flips) for
                            // inspection.
                            let mut img = base.bytes.clone();
                            for f in &flips {
                                img[f.offset as usize] ^= f.xor;
                            }
                            let dir = failure_dir();
                            let _ = std::fs::create_dir_all(&dir);
                            let path = dir.join(format!("variant-{v}-{}.img", base.label));
                            if std::fs::write(&path, img).is_ok() {
                                let _ = write!(text, "\n  image saved: {}", path.display());
                            }
                        }
                        let _ = write!(
                            text,
                            "\n  rerun: PFSCK_FUZZ_SEED={seed:#x} PFSCK_FUZZ_VARIANT={v} \
                             cargo test --release --test suite robustness::\n{}",
                            run.dump(1500)
                        );
                        failures.lock().unwrap().push(Failure { variant: v, text });
                    }
                    wf.restore(base, &flips, !unchanged);
                }
            });
        }
    });

    let exits = exits.into_inner().unwrap();
    let histogram: Vec<String> = exits
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(code, n)| format!("exit {code}: {n}"))
        .collect();
    let mut failures = failures.into_inner().unwrap();
    failures.sort_by_key(|f| f.variant);
    println!(
        "{} variants (seed {seed:#x}) in {:.1}s; {}; {} failures",
        variants.len(),
        started.elapsed().as_secs_f64(),
        histogram.join(", "),
        failures.len()
    );
    if !failures.is_empty() {
        let shown: Vec<&str> = failures.iter().take(30).map(|f| f.text.as_str()).collect();
        panic!(
            "{} of {} damaged images made pfsck fail (first {} shown):\n\n{}",
            failures.len(),
            variants.len(),
            shown.len(),
            shown.join("\n\n")
        );
    }
}

// ---------------------------------------------------------------------------
// Repair under random damage
// ---------------------------------------------------------------------------

const REPAIR_SEED: u64 = 0x5eed_f5c4_2025_0003;
const REPAIR_VARIANTS: usize = 240;
/// Bytes flipped per copy: 1 to this many.
const REPAIR_MAX_FLIPS: u64 = 12;
/// Flips land in the first this many bytes (superblock, descriptors,
/// reserved GDT blocks, bitmaps, inode tables, the first directories).
const REPAIR_SPAN: u64 = 600 << 10;
/// Of the copies e2fsck finds damaged, at least this share must be left
/// clean by one `pfsck -fy`, and never fewer than e2fsck -fy leaves: with
/// the default seed pfsck reaches 115 of 160 (71.9%; e2fsck -fy 114,
/// 71.2%), and the floor leaves room for other seeds. The copies neither
/// tool repairs are honest stops, not failures: a primary superblock
/// whose checksum fails, or with values e2fsck's superblock check refuses
/// (it exits 8 without a backup; these images have one group, so no
/// backup either way), and a journal UUID naming an external journal
/// neither finds (exit 12); pfsck exits as e2fsck and writes nothing
/// there. (Until 8423443 pfsck repaired through a primary whose checksum
/// fails, 148 of 160, and sealed whatever garbage the damage had left in
/// it with a fresh checksum: the fuzzer's false claims fz33-20k #8462 and
/// #10279.)
const REPAIR_FLOOR: f64 = 0.65;

/// The clock of the bases' mke2fs, and of the checkers' runs (later, so
/// no time in a base lies in the future): the same copies give the same
/// results on every run.
const MKFS_TIME: &str = "1600000000";
const CHECK_TIME: &str = "1700000000";

fn repair_bases(tree: &Path) -> Vec<FuzzBase> {
    let size = 4 << 20;
    let ext2 = || MkfsOpts::ext2().env("E2FSPROGS_FAKE_TIME", MKFS_TIME);
    let ext4 = || MkfsOpts::ext4().env("E2FSPROGS_FAKE_TIME", MKFS_TIME);
    vec![
        build_base("ext2-1k", size, ext2().block_size(1024).inodes(256), tree),
        build_base(
            "ext4-1k-csum",
            size,
            ext4().block_size(1024).inodes(256),
            tree,
        ),
        build_base(
            "ext4-4k-csum",
            size,
            ext4().block_size(4096).inodes(256),
            tree,
        ),
        build_base(
            "ext4-4k-nocsum",
            size,
            ext4()
                .block_size(4096)
                .inodes(256)
                .features("^metadata_csum"),
            tree,
        ),
    ]
}

/// Where a variant's flips land: anywhere in the first `REPAIR_SPAN`
/// bytes (even variants), or in the metadata areas of `FuzzBase::regions`
/// (odd ones: far fewer flips are wasted on file data and free blocks).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spread {
    Span,
    Metadata,
}

impl Spread {
    fn of(v: usize, bases: usize) -> Spread {
        if (v / bases).is_multiple_of(2) {
            Spread::Span
        } else {
            Spread::Metadata
        }
    }
}

fn repair_flips(seed: u64, v: usize, base: &FuzzBase, spread: Spread) -> Vec<(u64, u8)> {
    let mut rng = XorShift::new(seed ^ (v as u64).wrapping_mul(0xA076_1D64_78BD_642F));
    let n = 1 + rng.below(REPAIR_MAX_FLIPS);
    let len = base.bytes.len() as u64;
    (0..n)
        .map(|_| {
            let off = match spread {
                Spread::Span => rng.below(REPAIR_SPAN.min(len)),
                Spread::Metadata => {
                    let r = &base.regions[rng.below(base.regions.len() as u64) as usize];
                    r.start + rng.below(r.len)
                }
            };
            (off, 1 + rng.below(255) as u8)
        })
        .collect()
}

/// What happened to one damaged copy.
#[derive(Default)]
struct RepairOutcome {
    /// e2fsck -fn finds the damaged copy inconsistent.
    damaged: bool,
    /// pfsck -fy exited 0 or 1 (then both checkers found it clean).
    pfsck_clean: bool,
    /// e2fsck -fn found e2fsck -fy's result clean.
    e2fsck_clean: bool,
    /// The first problem pfsck left (for the histogram), when e2fsck
    /// repaired the copy and pfsck did not.
    left: Option<String>,
    failure: Option<String>,
}

/// A problem line with its numbers blanked, so alike problems count once.
fn problem_kind(line: &str) -> String {
    let mut out = String::new();
    let mut last_digit = false;
    for c in line.trim().chars() {
        if c.is_ascii_digit() {
            if !last_digit {
                out.push('N');
            }
            last_digit = true;
        } else {
            out.push(c);
            last_digit = false;
        }
    }
    out.split("  Fix?").next().unwrap_or("").to_string()
}

/// The first line of pfsck -fy's "Problems left after the repair:" list.
fn first_left(stdout: &str) -> String {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("Problems left after the repair"))
        .nth(1)
        .map(problem_kind)
        .unwrap_or_else(|| {
            problem_kind(stdout.lines().find(|l| !l.trim().is_empty()).unwrap_or(""))
        })
}

/// e2fsck with its clock at `CHECK_TIME`.
fn e2fsck_at(img: &Path, args: &[&str]) -> RunResult {
    let mut cmd = std::process::Command::new(tool("e2fsck"));
    cmd.env("E2FSCK_TIME", CHECK_TIME).args(args).arg(img);
    run_timeout_merged(cmd, E2FSCK_TIMEOUT)
}

/// pfsck with its clock at `CHECK_TIME`, under `TIMEOUT`.
fn pfsck_at(args: &[&std::ffi::OsStr]) -> RunResult {
    let mut cmd = std::process::Command::new(pfsck_bin());
    cmd.env("PFSCK_TIME", CHECK_TIME).args(args);
    run_timeout(cmd, TIMEOUT)
}

fn repair_one(dir: &Path, base: &[u8], flips: &[(u64, u8)]) -> RepairOutcome {
    let mut bytes = base.to_vec();
    for &(off, x) in flips {
        bytes[off as usize] ^= x;
    }
    let pf_img = dir.join("pf.img");
    let e2_img = dir.join("e2.img");
    std::fs::write(&pf_img, &bytes).unwrap();
    std::fs::write(&e2_img, &bytes).unwrap();
    let log = pfsck::store::default_undo_path(&pf_img);
    let _ = std::fs::remove_file(&log);
    let mut out = RepairOutcome::default();
    let mut why = Vec::new();

    out.damaged = e2fsck_at(&e2_img, &["-fn"]).code() != Some(0);
    e2fsck_at(&e2_img, &["-fy"]);
    out.e2fsck_clean = e2fsck_at(&e2_img, &["-fn"]).code() == Some(0);

    let pf = pfsck_at(&["-fy".as_ref(), pf_img.as_os_str()]);
    let code = pf.code();
    if pf.timed_out || pf.crashed() {
        why.push(format!("pfsck -fy {}", pf.describe()));
    }
    if matches!(code, Some(0 | 1)) {
        let e2 = e2fsck_at(&pf_img, &["-fn"]);
        let again = pfsck_at(&["-fn".as_ref(), pf_img.as_os_str()]);
        if e2.code() != Some(0) || again.code() != Some(0) {
            why.push(format!(
                "pfsck -fy exited {code:?} but e2fsck -fn {} and pfsck -fn {}\n{}\n{}",
                e2.describe(),
                again.describe(),
                e2.dump(1500),
                again.dump(1500)
            ));
        } else {
            out.pfsck_clean = true;
        }
    } else if out.e2fsck_clean && out.damaged {
        out.left = Some(first_left(&pf.stdout));
    }
    let now = std::fs::read(&pf_img).unwrap();
    // A run that fixed nothing writes only the record of the check,
    // without a log.
    let only_record = !log.exists() && only_check_record_changed(&bytes, &now);
    if now != bytes && !only_record {
        let rb = pfsck_at(&["--rollback".as_ref(), log.as_os_str(), pf_img.as_os_str()]);
        if rb.code() != Some(0) || std::fs::read(&pf_img).unwrap() != bytes {
            why.push(format!(
                "rollback did not restore the image: {}",
                rb.describe()
            ));
        }
    }
    if !why.is_empty() {
        out.failure = Some(format!(
            "{}\n===== pfsck -fy =====\n{}",
            why.join("; "),
            pf.dump(3000)
        ));
    }
    out
}

/// Random damage, repaired: copies of four small images (ext2 and ext4,
/// 1 KiB and 4 KiB blocks, with and without metadata_csum; 4 MiB, 256
/// inodes) get 1-12 bytes flipped, half of the copies anywhere in their
/// first 600 KiB, half in the metadata areas the test above damages (see
/// `Spread`); each copy goes through `pfsck -fy` and,
/// separately, `e2fsck -fy`. pfsck must not crash or hang, must not claim
/// a clean result that is not (exit 0 or 1 means `e2fsck -fn` and
/// `pfsck -fn` find nothing), and its undo log must restore the damaged
/// copy byte for byte. The test prints, per image, how many damaged copies
/// each tool leaves clean, and the problems pfsck leaves where e2fsck
/// succeeds; pfsck's share must stay above `REPAIR_FLOOR` and e2fsck's.
///
/// `PFSCK_REPAIR_VARIANTS` (default 240) and `PFSCK_REPAIR_SEED` change the
/// run; `PFSCK_REPAIR_KEEP=DIR` saves the copies pfsck leaves damaged
/// where e2fsck succeeds (`left-*`) and those that fail the test
/// (`fail-*`).
#[test]
fn random_damage_repair_rate() {
    let total = env_usize("PFSCK_REPAIR_VARIANTS").unwrap_or(REPAIR_VARIANTS);
    let seed = std::env::var("PFSCK_REPAIR_SEED")
        .ok()
        .and_then(|v| u64::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok())
        .unwrap_or(REPAIR_SEED);
    let keep = std::env::var_os("PFSCK_REPAIR_KEEP").map(PathBuf::from);
    let tree_dir = TempDir::new("repair-tree");
    let tree = tree_dir.join("tree");
    base_tree(&tree);
    let bases = repair_bases(&tree);
    if let Some(k) = &keep {
        let _ = std::fs::create_dir_all(k);
        for b in &bases {
            let _ = std::fs::write(k.join(format!("base-{}.img", b.label)), &b.bytes);
        }
    }
    let started = Instant::now();
    let variants: Vec<usize> = (0..total).collect();
    let nb = bases.len();
    let flips_of = |v: usize| repair_flips(seed, v, &bases[v % nb], Spread::of(v, nb));
    let work = TempDir::new("repair-work");
    let results = parallel_map(&variants, test_threads(), |_, &v| {
        let dir = work.join(format!("v{v}"));
        std::fs::create_dir_all(&dir).unwrap();
        let base = &bases[v % nb];
        let out = repair_one(&dir, &base.bytes, &flips_of(v));
        if let Some(k) = keep
            .as_ref()
            .filter(|_| out.left.is_some() || out.failure.is_some())
        {
            let mut bytes = base.bytes.clone();
            for (off, x) in flips_of(v) {
                bytes[off as usize] ^= x;
            }
            let kind = if out.failure.is_some() {
                "fail"
            } else {
                "left"
            };
            let _ = std::fs::create_dir_all(k);
            let _ = std::fs::write(k.join(format!("{kind}-v{v}-{}.img", base.label)), bytes);
        }
        let _ = std::fs::remove_dir_all(&dir);
        out
    });

    let mut report = String::new();
    let (mut all_damaged, mut all_pf, mut all_e2) = (0, 0, 0);
    let rows = bases
        .iter()
        .enumerate()
        .flat_map(|(bi, b)| [(bi, b.label, Spread::Span), (bi, b.label, Spread::Metadata)]);
    for (bi, label, spread) in rows {
        let of: Vec<&RepairOutcome> = results
            .iter()
            .enumerate()
            .filter(|(v, r)| v % nb == bi && Spread::of(*v, nb) == spread && r.damaged)
            .map(|(_, r)| r)
            .collect();
        let label = format!(
            "{label} {}",
            if spread == Spread::Span {
                "600K"
            } else {
                "meta"
            }
        );
        let pf = of.iter().filter(|r| r.pfsck_clean).count();
        let e2 = of.iter().filter(|r| r.e2fsck_clean).count();
        let _ = writeln!(
            report,
            "{label:<20} damaged {:>4}  pfsck -fy left clean {pf:>4} ({:>5.1}%)  e2fsck -fy {e2:>4} ({:>5.1}%)",
            of.len(),
            100.0 * pf as f64 / of.len().max(1) as f64,
            100.0 * e2 as f64 / of.len().max(1) as f64,
        );
        all_damaged += of.len();
        all_pf += pf;
        all_e2 += e2;
    }
    let rate = all_pf as f64 / all_damaged.max(1) as f64;
    let _ = writeln!(
        report,
        "{:<20} damaged {all_damaged:>4}  pfsck -fy left clean {all_pf:>4} ({:>5.1}%)  e2fsck -fy {all_e2:>4} ({:>5.1}%)",
        "all",
        100.0 * rate,
        100.0 * all_e2 as f64 / all_damaged.max(1) as f64,
    );
    let mut kinds: std::collections::BTreeMap<&str, usize> = Default::default();
    for r in &results {
        if let Some(k) = &r.left {
            *kinds.entry(k.as_str()).or_default() += 1;
        }
    }
    let mut kinds: Vec<(&str, usize)> = kinds.into_iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let _ = writeln!(report, "first problem pfsck leaves where e2fsck succeeds:");
    for (k, n) in &kinds {
        let _ = writeln!(report, "  {n:>4}  {k}");
    }
    println!(
        "{total} damaged copies (seed {seed:#x}) in {:.1}s\n{report}",
        started.elapsed().as_secs_f64()
    );
    let failures: Vec<String> = results
        .iter()
        .enumerate()
        .filter_map(|(v, r)| {
            r.failure.as_ref().map(|f| {
                let flips: Vec<String> = flips_of(v)
                    .iter()
                    .map(|(o, x)| format!("@{o}^{x:#04x}"))
                    .collect();
                format!(
                    "variant {v} ({}), flips {}: {f}",
                    bases[v % nb].label,
                    flips.join(" ")
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {total} copies:\n{}",
        failures.len(),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    assert!(
        all_pf >= all_e2,
        "pfsck -fy left fewer damaged copies clean than e2fsck -fy ({all_pf} < {all_e2})\n{report}"
    );
    assert!(
        rate >= REPAIR_FLOOR,
        "pfsck -fy left {all_pf} of {all_damaged} damaged copies clean ({:.1}%), below the floor of {:.0}%\n{report}",
        100.0 * rate,
        100.0 * REPAIR_FLOOR
    );
}
