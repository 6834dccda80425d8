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

mod common;

use common::*;
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
                             cargo test --release --test robustness\n{}",
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
