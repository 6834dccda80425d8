//! Shared helpers for pfsck's integration tests.
//!
//! Every image these tests use is built at test time with the real
//! e2fsprogs tools (`mke2fs -d`, `debugfs -w`), never committed. The helpers
//! here cover:
//!
//! - temporary directories removed on drop ([`TempDir`]) and a per-process
//!   cache directory for base images built once per test binary run
//!   ([`cached_image`]);
//! - fixture trees ([`Node`], [`build_tree`], [`standard_tree`]);
//! - image building and inspection ([`mkfs`], [`debugfs_w`], [`debugfs_r`],
//!   [`dumpe2fs`], [`inode_of`], [`blocks_of`], [`imap`]);
//! - running e2fsck and pfsck, with timeouts ([`run_timeout`],
//!   [`e2fsck_fn`], [`pfsck`]) and reading their reports
//!   ([`e2fsck_first_problem`], [`parse_report`]);
//! - a content hash to prove that `-n` modified nothing ([`hash_file`]).
//!
//! Each integration test binary compiles this module separately and uses a
//! different subset of it, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod journal;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

/// Directories searched for e2fsprogs and coreutils tools, before `$PATH`.
/// The system directories come first so that the distribution's e2fsprogs
/// 1.47.0 (the reference) wins over anything else on `$PATH`.
const TOOL_DIRS: &[&str] = &[
    "/sbin",
    "/usr/sbin",
    "/bin",
    "/usr/bin",
    "/usr/local/sbin",
    "/usr/local/bin",
];

/// Resolves an external tool by name. `PFSCK_E2FSPROGS_DIR`, when set, is
/// searched first. Panics with a clear message when the tool is missing.
pub fn tool(name: &str) -> PathBuf {
    try_tool(name).unwrap_or_else(|| {
        panic!(
            "required tool `{name}` not found in $PFSCK_E2FSPROGS_DIR, {} or $PATH \
             (install e2fsprogs / coreutils)",
            TOOL_DIRS.join(", ")
        )
    })
}

/// Like [`tool`], but returns `None` when the tool is not installed.
pub fn try_tool(name: &str) -> Option<PathBuf> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<PathBuf>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(found) = cache.lock().unwrap().get(name) {
        return found.clone();
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os("PFSCK_E2FSPROGS_DIR") {
        dirs.push(PathBuf::from(dir));
    }
    dirs.extend(TOOL_DIRS.iter().map(PathBuf::from));
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    let found = dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file());
    cache
        .lock()
        .unwrap()
        .insert(name.to_string(), found.clone());
    found
}

/// Runs a command to completion, capturing its output; panics if it cannot
/// be started.
fn output_of(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Runs a command that must succeed; panics with its output otherwise.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = output_of(cmd);
    if !out.status.success() {
        panic!(
            "command failed ({}): {cmd:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

// ---------------------------------------------------------------------------
// Temporary directories and the per-process cache
// ---------------------------------------------------------------------------

const TMP_PREFIX: &str = "pfsck-test-";
const CACHE_PREFIX: &str = "pfsck-cache-";

/// Removes leftovers of earlier test runs whose process is gone (a run that
/// was killed never drops its directories). Only directories named with our
/// prefixes and the id of a dead process are touched. Runs once per process.
fn sweep_stale_dirs() {
    static SWEPT: OnceLock<()> = OnceLock::new();
    SWEPT.get_or_init(|| {
        let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let rest = name
                .strip_prefix(TMP_PREFIX)
                .or_else(|| name.strip_prefix(CACHE_PREFIX));
            let Some(rest) = rest else { continue };
            let pid = rest.split('-').next().unwrap_or("");
            if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            if pid != std::process::id().to_string() && !Path::new("/proc").join(pid).exists() {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    });
}

/// A directory under `std::env::temp_dir()`, unique per call, removed with
/// everything in it when dropped (unless `PFSCK_KEEP_TMP` is set, to inspect
/// a failing fixture).
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        sweep_stale_dirs();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tag: String = tag
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(40)
            .collect();
        let path =
            std::env::temp_dir().join(format!("{TMP_PREFIX}{}-{n}-{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.path.join(rel)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("PFSCK_KEEP_TMP").is_some() {
            eprintln!("PFSCK_KEEP_TMP: keeping {}", self.path.display());
        } else {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// The per-process cache directory for base images (statics are never
/// dropped; [`sweep_stale_dirs`] removes it on a later run once this process
/// has exited).
pub fn cache_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        sweep_stale_dirs();
        let dir = std::env::temp_dir().join(format!("{CACHE_PREFIX}{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        dir
    })
}

/// Returns the path of a cached file named `key` in [`cache_dir`], calling
/// `build(path)` to create it the first time it is asked for in this
/// process. Different keys build in parallel; the same key builds once.
/// Callers must not modify the returned file: copy it with [`copy_image`].
pub fn cached_image(key: &str, build: impl FnOnce(&Path)) -> PathBuf {
    static SLOTS: OnceLock<Mutex<HashMap<String, Arc<OnceLock<PathBuf>>>>> = OnceLock::new();
    let slot = SLOTS
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap()
        .entry(key.to_string())
        .or_default()
        .clone();
    slot.get_or_init(|| {
        let path = cache_dir().join(key);
        let partial = cache_dir().join(format!("{key}.partial"));
        let _ = fs::remove_file(&partial);
        build(&partial);
        fs::rename(&partial, &path).unwrap();
        path
    })
    .clone()
}

/// Copies an image, keeping holes (all-zero 64 KiB chunks are skipped), so
/// that many copies of a mostly empty image stay cheap.
pub fn copy_image(src: &Path, dst: &Path) {
    let mut input = File::open(src).unwrap_or_else(|e| panic!("open {}: {e}", src.display()));
    let len = input.metadata().unwrap().len();
    let output = File::create(dst).unwrap_or_else(|e| panic!("create {}: {e}", dst.display()));
    let mut buf = vec![0u8; CHUNK];
    let mut pos = 0u64;
    loop {
        let n = read_full(&mut input, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        if !is_zero(&buf[..n]) {
            output.write_all_at(&buf[..n], pos).unwrap();
        }
        pos += n as u64;
    }
    output.set_len(len).unwrap();
}

fn read_full(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

// ---------------------------------------------------------------------------
// Content hash
// ---------------------------------------------------------------------------

/// Chunk size of [`hash_file`] and [`copy_image`]. All-zero chunks (most
/// of a fresh image) are recognised with one `memcmp`, which keeps both
/// fast in unoptimised test builds too.
const CHUNK: usize = 64 * 1024;
static ZERO_CHUNK: [u8; CHUNK] = [0; CHUNK];

fn is_zero(data: &[u8]) -> bool {
    data == &ZERO_CHUNK[..data.len()]
}

/// A 64-bit content hash of a whole file: four FNV-1a-style lanes over
/// 8-byte words, 64 KiB chunk by chunk, an all-zero chunk standing for
/// itself by a single token; folded with the length at the end. Not
/// cryptographic; it only has to notice that a checker wrote to an image
/// it must not touch.
pub fn hash_file(path: &Path) -> u64 {
    let mut f = File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut buf = vec![0u8; CHUNK];
    let mut hasher = ContentHasher::new();
    loop {
        let n = read_full(&mut f, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        hasher.update_chunk(&buf[..n]);
    }
    hasher.finish()
}

/// Hash of an in-memory buffer, identical to [`hash_file`] on a file with
/// the same bytes.
pub fn hash_bytes(data: &[u8]) -> u64 {
    let mut hasher = ContentHasher::new();
    for chunk in data.chunks(CHUNK) {
        hasher.update_chunk(chunk);
    }
    hasher.finish()
}

struct ContentHasher {
    lanes: [u64; 4],
    len: u64,
}

impl ContentHasher {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const ZERO_TOKEN: u64 = 0x9e37_79b9_7f4a_7c15;

    fn new() -> Self {
        ContentHasher {
            lanes: [
                Self::OFFSET,
                Self::OFFSET ^ 1,
                Self::OFFSET ^ 2,
                Self::OFFSET ^ 3,
            ],
            len: 0,
        }
    }

    /// Hashes one chunk of at most [`CHUNK`] bytes; chunks start at
    /// multiples of [`CHUNK`] in the file.
    fn update_chunk(&mut self, data: &[u8]) {
        self.len += data.len() as u64;
        if is_zero(data) {
            for lane in &mut self.lanes {
                *lane = (*lane ^ Self::ZERO_TOKEN ^ data.len() as u64)
                    .wrapping_mul(Self::PRIME)
                    .rotate_left(17);
            }
            return;
        }
        let mut words = data.chunks_exact(32);
        for block in &mut words {
            for (lane, w) in self.lanes.iter_mut().zip(block.chunks_exact(8)) {
                let w = u64::from_le_bytes(w.try_into().unwrap());
                *lane = (*lane ^ w).wrapping_mul(Self::PRIME).rotate_left(29);
            }
        }
        for (i, &b) in words.remainder().iter().enumerate() {
            let lane = &mut self.lanes[i % 4];
            *lane = (*lane ^ u64::from(b)).wrapping_mul(Self::PRIME);
        }
    }

    fn finish(&self) -> u64 {
        let mut h = Self::OFFSET ^ self.len;
        for lane in self.lanes {
            h = (h ^ lane).wrapping_mul(Self::PRIME).rotate_left(31);
        }
        h ^ (h >> 29)
    }
}

// ---------------------------------------------------------------------------
// Deterministic pseudo-random numbers
// ---------------------------------------------------------------------------

/// xorshift64* — small, fast and reproducible from its seed.
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        // Never let the state be zero; mix the seed a little.
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        self.next_u64() % n
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// FNV-1a over a string, used to seed per-file content.
pub fn fnv1a(s: &[u8]) -> u64 {
    let mut h = ContentHasher::OFFSET;
    for &b in s {
        h = (h ^ u64::from(b)).wrapping_mul(ContentHasher::PRIME);
    }
    h
}

/// The deterministic content of a fixture file: depends only on its path
/// within the tree and its length.
pub fn file_content(rel_path: &str, len: usize) -> Vec<u8> {
    let mut rng = XorShift::new(fnv1a(rel_path.as_bytes()));
    let mut buf = vec![0u8; len];
    rng.fill(&mut buf);
    buf
}

// ---------------------------------------------------------------------------
// Fixture trees
// ---------------------------------------------------------------------------

/// One entry of a fixture tree; paths are relative to the tree's root and
/// parents are created as needed.
#[derive(Clone, Debug)]
pub enum Node {
    Dir(String),
    /// A regular file of `size` bytes of deterministic content.
    File {
        path: String,
        size: u64,
    },
    /// A sparse file of apparent size `size` whose only data are the
    /// `(offset, len)` ranges.
    Sparse {
        path: String,
        size: u64,
        data: Vec<(u64, u64)>,
    },
    Symlink {
        path: String,
        target: String,
    },
    /// A hard link to an earlier regular file of the tree.
    HardLink {
        path: String,
        target: String,
    },
    Fifo(String),
    Socket(String),
    CharDev {
        path: String,
        major: u32,
        minor: u32,
    },
    BlockDev {
        path: String,
        major: u32,
        minor: u32,
    },
}

impl Node {
    pub fn dir(path: &str) -> Node {
        Node::Dir(path.into())
    }
    pub fn file(path: &str, size: u64) -> Node {
        Node::File {
            path: path.into(),
            size,
        }
    }
    pub fn sparse(path: &str, size: u64, data: &[(u64, u64)]) -> Node {
        Node::Sparse {
            path: path.into(),
            size,
            data: data.to_vec(),
        }
    }
    pub fn symlink(path: &str, target: &str) -> Node {
        Node::Symlink {
            path: path.into(),
            target: target.into(),
        }
    }
    pub fn hardlink(path: &str, target: &str) -> Node {
        Node::HardLink {
            path: path.into(),
            target: target.into(),
        }
    }
    pub fn fifo(path: &str) -> Node {
        Node::Fifo(path.into())
    }
    pub fn socket(path: &str) -> Node {
        Node::Socket(path.into())
    }
    pub fn chardev(path: &str, major: u32, minor: u32) -> Node {
        Node::CharDev {
            path: path.into(),
            major,
            minor,
        }
    }
    pub fn blockdev(path: &str, major: u32, minor: u32) -> Node {
        Node::BlockDev {
            path: path.into(),
            major,
            minor,
        }
    }
    pub fn path(&self) -> &str {
        match self {
            Node::Dir(p) | Node::Fifo(p) | Node::Socket(p) => p,
            Node::File { path, .. }
            | Node::Sparse { path, .. }
            | Node::Symlink { path, .. }
            | Node::HardLink { path, .. }
            | Node::CharDev { path, .. }
            | Node::BlockDev { path, .. } => path,
        }
    }
}

/// Fixed timestamp given to every tree entry, so images are closer to
/// reproducible from run to run.
pub const FIXTURE_MTIME: &str = "@1600000000";

/// Creates the entries of `spec` under `root` (which is created if needed).
/// Device nodes are skipped with a notice when `mknod` is not permitted.
pub fn build_tree(root: &Path, spec: &[Node]) {
    fs::create_dir_all(root).unwrap();
    for node in spec {
        let path = root.join(node.path());
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        match node {
            Node::Dir(_) => fs::create_dir_all(&path).unwrap(),
            Node::File { path: rel, size } => {
                fs::write(&path, file_content(rel, *size as usize)).unwrap();
            }
            Node::Sparse {
                path: rel,
                size,
                data,
            } => {
                let f = File::create(&path).unwrap();
                f.set_len(*size).unwrap();
                for (i, &(off, len)) in data.iter().enumerate() {
                    let bytes = file_content(&format!("{rel}#{i}"), len as usize);
                    f.write_all_at(&bytes, off).unwrap();
                }
            }
            Node::Symlink { target, .. } => std::os::unix::fs::symlink(target, &path).unwrap(),
            Node::HardLink { target, .. } => fs::hard_link(root.join(target), &path).unwrap(),
            Node::Fifo(_) => {
                run_ok(Command::new(tool("mkfifo")).arg(&path));
            }
            Node::Socket(_) => {
                // Binding creates the socket file; it stays after the
                // listener is dropped.
                let listener = std::os::unix::net::UnixListener::bind(&path)
                    .unwrap_or_else(|e| panic!("bind {}: {e}", path.display()));
                drop(listener);
            }
            Node::CharDev { major, minor, .. } | Node::BlockDev { major, minor, .. } => {
                let kind = if matches!(node, Node::CharDev { .. }) {
                    "c"
                } else {
                    "b"
                };
                let out = output_of(
                    Command::new(tool("mknod"))
                        .arg(&path)
                        .arg(kind)
                        .arg(major.to_string())
                        .arg(minor.to_string()),
                );
                if !out.status.success() {
                    eprintln!(
                        "notice: cannot create device node {} ({}); skipped",
                        path.display(),
                        String::from_utf8_lossy(&out.stderr).trim()
                    );
                }
            }
        }
    }
    // Fixed times on everything (symlinks included: -h).
    let out = output_of(Command::new(tool("find")).arg(root).args([
        "-exec",
        "touch",
        "-h",
        "-d",
        FIXTURE_MTIME,
        "{}",
        "+",
    ]));
    if !out.status.success() {
        eprintln!(
            "notice: could not set fixture times: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
}

/// A symlink target longer than 60 bytes, stored in a data block ("slow").
pub fn slow_symlink_target() -> String {
    let mut t = String::from("../");
    while t.len() < 150 {
        t.push_str("a-rather-long-directory-name/");
    }
    t.push_str("target");
    t
}

/// A tree with a bit of everything: nested and empty directories, files of
/// sizes around block boundaries and large enough for indirect and
/// double-indirect blocks at 1 KiB, fast, slow and dangling symlinks, hard
/// links, a FIFO, a socket, device nodes, a sparse file and a sparse file
/// with an apparent size above 4 GiB, and a directory spanning several
/// blocks.
pub fn standard_tree() -> Vec<Node> {
    let mut t = vec![
        Node::dir("dir1/sub/deeper"),
        Node::dir("emptydir"),
        Node::file("empty", 0),
        Node::file("tiny", 1),
        Node::file("small", 100),
        Node::file("f4095", 4095),
        Node::file("f4096", 4096),
        Node::file("f4097", 4097),
        Node::file("f12k", 12 * 1024 + 1),
        Node::file("f70k", 70 * 1024),
        Node::file("f300k", 300 * 1024),
        Node::file("dir1/a.txt", 500),
        Node::file("dir1/b.bin", 9000),
        Node::file("dir1/sub/c", 20_000),
        Node::file("dir1/sub/deeper/d", 3000),
        Node::symlink("fastlink", "dir1/a.txt"),
        Node::symlink("slowlink", &slow_symlink_target()),
        Node::symlink("dir1/dangling", "does/not/exist"),
        Node::hardlink("hardlink1", "small"),
        Node::hardlink("dir1/hardlink2", "small"),
        Node::fifo("fifo"),
        Node::socket("socket"),
        Node::chardev("chardev", 1, 3),
        Node::blockdev("blockdev", 7, 0),
        Node::sparse("sparse", 1 << 20, &[(0, 4096), (512 * 1024, 8192)]),
        Node::sparse("huge", 5 << 30, &[((5 << 30) - 8192, 8192)]),
    ];
    for i in 0..60 {
        t.push(Node::file(
            &format!("many/entry-with-a-long-name-{i:04}"),
            i * 7,
        ));
    }
    t
}

/// Builds [`standard_tree`] once per process and returns its root.
pub fn standard_tree_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = cache_dir().join("standard-tree");
        let _ = fs::remove_dir_all(&dir);
        build_tree(&dir, &standard_tree());
        dir
    })
    .clone()
}

// ---------------------------------------------------------------------------
// Building images
// ---------------------------------------------------------------------------

/// UUID and hash seed given to every image, so directory hashes and
/// checksums are reproducible.
pub const FIXTURE_UUID: &str = "5a1e5a1e-0000-4000-8000-00000000f5c4";

/// Options for [`mkfs`]: `mke2fs -t <fs_type>` plus the usual knobs.
#[derive(Clone, Debug)]
pub struct MkfsOpts {
    pub fs_type: String,
    pub block_size: Option<u32>,
    /// `-O` list entries, e.g. `"^metadata_csum"`, `"inline_data"`.
    pub features: Vec<String>,
    pub inode_size: Option<u32>,
    /// `-N`: number of inodes.
    pub inodes: Option<u64>,
    /// `-g`: blocks per group (small groups give several groups cheaply).
    pub blocks_per_group: Option<u32>,
    /// `-E` entries, e.g. `"lazy_itable_init=0"`.
    pub extended: Vec<String>,
    pub extra_args: Vec<String>,
    /// Environment for mke2fs (`E2FSPROGS_FAKE_TIME` makes its times fixed).
    pub env: Vec<(String, String)>,
}

impl MkfsOpts {
    pub fn new(fs_type: &str) -> Self {
        MkfsOpts {
            fs_type: fs_type.into(),
            block_size: None,
            features: Vec::new(),
            inode_size: None,
            inodes: None,
            blocks_per_group: None,
            extended: Vec::new(),
            extra_args: Vec::new(),
            env: Vec::new(),
        }
    }
    pub fn ext2() -> Self {
        Self::new("ext2")
    }
    pub fn ext3() -> Self {
        Self::new("ext3")
    }
    pub fn ext4() -> Self {
        Self::new("ext4")
    }
    pub fn block_size(mut self, bs: u32) -> Self {
        self.block_size = Some(bs);
        self
    }
    pub fn features(mut self, list: &str) -> Self {
        self.features
            .extend(list.split(',').filter(|s| !s.is_empty()).map(String::from));
        self
    }
    pub fn inode_size(mut self, n: u32) -> Self {
        self.inode_size = Some(n);
        self
    }
    pub fn inodes(mut self, n: u64) -> Self {
        self.inodes = Some(n);
        self
    }
    pub fn blocks_per_group(mut self, n: u32) -> Self {
        self.blocks_per_group = Some(n);
        self
    }
    pub fn extended(mut self, opt: &str) -> Self {
        self.extended.push(opt.into());
        self
    }
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
}

/// Creates an image file of `size` bytes with `mke2fs -q -F`, populated from
/// `tree` (`-d`) when given. Panics with mke2fs's output on failure.
pub fn mkfs(img: &Path, size: u64, opts: &MkfsOpts, tree: Option<&Path>) {
    let f = File::create(img).unwrap_or_else(|e| panic!("create {}: {e}", img.display()));
    f.set_len(size).unwrap();
    drop(f);
    let mut cmd = Command::new(tool("mke2fs"));
    cmd.args(["-q", "-F", "-t", &opts.fs_type]);
    if let Some(bs) = opts.block_size {
        cmd.arg("-b").arg(bs.to_string());
    }
    if let Some(n) = opts.inode_size {
        cmd.arg("-I").arg(n.to_string());
    }
    if let Some(n) = opts.inodes {
        cmd.arg("-N").arg(n.to_string());
    }
    if let Some(n) = opts.blocks_per_group {
        cmd.arg("-g").arg(n.to_string());
    }
    if !opts.features.is_empty() {
        cmd.arg("-O").arg(opts.features.join(","));
    }
    let mut extended = vec![format!("hash_seed={FIXTURE_UUID}")];
    extended.extend(opts.extended.iter().cloned());
    cmd.arg("-E").arg(extended.join(","));
    cmd.arg("-U").arg(FIXTURE_UUID);
    if let Some(tree) = tree {
        cmd.arg("-d").arg(tree);
    }
    cmd.args(&opts.extra_args);
    cmd.envs(opts.env.iter().map(|(k, v)| (k, v)));
    cmd.arg(img);
    run_ok(&mut cmd);
}

/// Runs `debugfs -w -f <cmdfile> img`. Panics when debugfs fails or prints
/// anything on stderr besides its banner: a typo in a fixture command must
/// not silently produce an intact image. Returns stdout.
pub fn debugfs_w<S: AsRef<str>>(img: &Path, cmds: &[S]) -> String {
    let (stdout, stderr) = debugfs_w_unchecked(img, cmds);
    let complaints: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("debugfs "))
        .collect();
    if !complaints.is_empty() {
        let cmds: Vec<&str> = cmds.iter().map(|c| c.as_ref()).collect();
        panic!(
            "debugfs -w on {} complained:\n{}\ncommands:\n{}",
            img.display(),
            complaints.join("\n"),
            cmds.join("\n")
        );
    }
    stdout
}

/// Like [`debugfs_w`] without the stderr check; returns (stdout, stderr).
pub fn debugfs_w_unchecked<S: AsRef<str>>(img: &Path, cmds: &[S]) -> (String, String) {
    static N: AtomicU64 = AtomicU64::new(0);
    let cmdfile = cache_dir().join(format!(
        "debugfs-cmds-{}",
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let mut text = String::new();
    for c in cmds {
        text.push_str(c.as_ref());
        text.push('\n');
    }
    fs::write(&cmdfile, text).unwrap();
    let out = output_of(
        Command::new(tool("debugfs"))
            .arg("-w")
            .arg("-f")
            .arg(&cmdfile)
            .arg(img),
    );
    let _ = fs::remove_file(&cmdfile);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        panic!("debugfs -w failed ({}):\n{stdout}\n{stderr}", out.status);
    }
    (stdout, stderr)
}

/// Runs one read-only debugfs request (`debugfs -R cmd img`); returns stdout.
pub fn debugfs_r(img: &Path, cmd: &str) -> String {
    let out = output_of(Command::new(tool("debugfs")).arg("-R").arg(cmd).arg(img));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The number a debugfs request ends its answer with ("Free inode found:
/// 612", "Free blocks found: 4711").
pub fn debugfs_number(img: &Path, cmd: &str) -> u64 {
    let out = debugfs_r(img, cmd);
    out.split_whitespace()
        .last()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("`debugfs -R {cmd}` gave no number: {out}"))
}

/// The resize inode's first reserved GDT block: debugfs lists it as the
/// inode's indirect block ("(IND):N").
pub fn first_reserved_gdt_block(img: &Path) -> u64 {
    let stat = debugfs_r(img, "stat <7>");
    stat.split("(IND):")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no reserved GDT block in:\n{stat}"))
}

/// Inode number of `path` (absolute within the file system).
pub fn inode_of(img: &Path, path: &str) -> u64 {
    let text = debugfs_r(img, &format!("stat \"{path}\""));
    text.lines()
        .find_map(|l| l.strip_prefix("Inode: "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no inode for {path} in {}:\n{text}", img.display()))
}

/// Physical blocks of `path` as `debugfs blocks` lists them (data blocks in
/// logical order; no indirect or extent-tree blocks).
pub fn blocks_of(img: &Path, path: &str) -> Vec<u64> {
    let text = debugfs_r(img, &format!("blocks \"{path}\""));
    text.split_whitespace()
        .map(|w| {
            w.parse()
                .unwrap_or_else(|_| panic!("bad `blocks {path}` output: {text}"))
        })
        .collect()
}

/// `(block, byte offset within the block)` of inode `ino` in the inode table.
pub fn imap(img: &Path, ino: u64) -> (u64, u64) {
    let text = debugfs_r(img, &format!("imap <{ino}>"));
    let parsed = text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("located at block ")?;
        let (block, off) = rest.split_once(", offset ")?;
        let off = off.trim().trim_start_matches("0x");
        Some((block.parse().ok()?, u64::from_str_radix(off, 16).ok()?))
    });
    parsed.unwrap_or_else(|| panic!("cannot parse `imap <{ino}>`:\n{text}"))
}

/// Byte offset in the image of inode `ino`'s on-disk record.
pub fn inode_offset(img: &Path, ino: u64) -> u64 {
    let fs = dumpe2fs(img);
    let (block, off) = imap(img, ino);
    block * fs.block_size + off
}

/// What the tests need to know about an image, read from `dumpe2fs`.
#[derive(Clone, Debug, Default)]
pub struct FsInfo {
    pub block_size: u64,
    pub blocks_count: u64,
    pub inodes_count: u64,
    pub inodes_per_group: u64,
    pub inode_size: u64,
    pub first_data_block: u64,
    pub free_blocks: u64,
    pub free_inodes: u64,
    pub desc_size: u64,
    pub features: Vec<String>,
    pub groups: Vec<GroupInfo>,
    /// Header fields by name, as printed ("Block size", ...).
    pub header: HashMap<String, String>,
}

#[derive(Clone, Debug, Default)]
pub struct GroupInfo {
    pub first_block: u64,
    pub last_block: u64,
    /// Primary or backup descriptor blocks in this group (inclusive range).
    pub gdt: Option<(u64, u64)>,
    pub block_bitmap: u64,
    pub inode_bitmap: u64,
    pub inode_table: (u64, u64),
    pub free_blocks: u64,
    pub free_inodes: u64,
}

impl FsInfo {
    pub fn has_feature(&self, name: &str) -> bool {
        self.features.iter().any(|f| f == name)
    }
    pub fn groups_count(&self) -> u64 {
        self.groups.len() as u64
    }
}

fn first_number(s: &str) -> Option<u64> {
    let digits: String = s
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

fn range_after(line: &str, key: &str) -> Option<(u64, u64)> {
    let rest = &line[line.find(key)? + key.len()..];
    let word = rest.split([' ', ',']).next()?;
    match word.split_once('-') {
        Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
        None => {
            let v = word.parse().ok()?;
            Some((v, v))
        }
    }
}

/// Parses `dumpe2fs img` (header and per-group layout).
pub fn dumpe2fs(img: &Path) -> FsInfo {
    let out = output_of(Command::new(tool("dumpe2fs")).arg(img));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut info = FsInfo::default();
    for line in text.lines() {
        // "Group 1: (Blocks 8193-16383) ..." (not "Group descriptor size:")
        if let Some(rest) = line.strip_prefix("Group ")
            && rest.starts_with(|c: char| c.is_ascii_digit())
        {
            let mut g = GroupInfo::default();
            if let Some((a, b)) = range_after(rest, "(Blocks ") {
                g.first_block = a;
                g.last_block = b;
            }
            info.groups.push(g);
            continue;
        }
        if let Some(g) = info.groups.last_mut()
            && line.starts_with("  ")
        {
            if line.contains("Group descriptors at ") {
                g.gdt = range_after(line, "Group descriptors at ");
            }
            if let Some((a, _)) = range_after(line, "Block bitmap at ") {
                g.block_bitmap = a;
            }
            if let Some((a, _)) = range_after(line, "Inode bitmap at ") {
                g.inode_bitmap = a;
            }
            if let Some(r) = range_after(line, "Inode table at ") {
                g.inode_table = r;
            }
            if line.contains(" free blocks, ") {
                g.free_blocks = first_number(line).unwrap_or(0);
                if let Some(pos) = line.find(" free blocks, ") {
                    g.free_inodes = first_number(&line[pos + 14..]).unwrap_or(0);
                }
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            info.header
                .insert(k.trim().to_string(), v.trim().to_string());
        }
    }
    let num = |k: &str| {
        info.header
            .get(k)
            .and_then(|v| first_number(v))
            .unwrap_or(0)
    };
    info.block_size = num("Block size");
    info.blocks_count = num("Block count");
    info.inodes_count = num("Inode count");
    info.inodes_per_group = num("Inodes per group");
    info.inode_size = num("Inode size");
    info.first_data_block = num("First block");
    info.free_blocks = num("Free blocks");
    info.free_inodes = num("Free inodes");
    info.desc_size = match num("Group descriptor size") {
        0 => 32,
        n => n,
    };
    info.features = info
        .header
        .get("Filesystem features")
        .map(|v| v.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    if info.block_size == 0 {
        panic!(
            "cannot parse dumpe2fs output for {}:\n{}\n{}",
            img.display(),
            text,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    info
}

/// A 12-byte extent tree node header (magic, entries, max, depth, a zero
/// generation), to build hand-made trees.
pub fn extent_header(entries: u16, max: u16, depth: u16) -> Vec<u8> {
    let mut h = vec![0x0a, 0xf3];
    for v in [entries, max, depth] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    h.extend_from_slice(&[0; 4]);
    h
}

/// Overwrites bytes of an image at an absolute offset.
pub fn write_at(img: &Path, offset: u64, bytes: &[u8]) {
    let mut f = OpenOptions::new()
        .write(true)
        .open(img)
        .unwrap_or_else(|e| panic!("open {}: {e}", img.display()));
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(bytes).unwrap();
}

/// Reads `len` bytes of an image at an absolute offset.
pub fn read_at(img: &Path, offset: u64, len: usize) -> Vec<u8> {
    let mut f = File::open(img).unwrap_or_else(|e| panic!("open {}: {e}", img.display()));
    let mut buf = vec![0u8; len];
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.read_exact(&mut buf).unwrap();
    buf
}

// ---------------------------------------------------------------------------
// Running checkers
// ---------------------------------------------------------------------------

/// The outcome of a process run under [`run_timeout`].
#[derive(Debug)]
pub struct RunResult {
    pub status: Option<ExitStatus>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl RunResult {
    /// The exit code, or `None` when killed by a signal or timed out.
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }
    pub fn signal(&self) -> Option<i32> {
        self.status.and_then(|s| s.signal())
    }
    /// Killed by a signal, or exited with 101 (a Rust panic).
    pub fn crashed(&self) -> bool {
        !self.timed_out && (self.signal().is_some() || self.code() == Some(101))
    }
    /// "exit 4", "signal 11", "timeout after 20s".
    pub fn describe(&self) -> String {
        if self.timed_out {
            format!("timeout after {:.1}s (killed)", self.elapsed.as_secs_f64())
        } else if let Some(sig) = self.signal() {
            format!("killed by signal {sig}")
        } else {
            match self.code() {
                Some(101) => "exit 101 (panic)".into(),
                Some(c) => format!("exit {c}"),
                None => "no status".into(),
            }
        }
    }
    /// Both streams, trimmed to `max` bytes each, for failure messages.
    pub fn dump(&self, max: usize) -> String {
        format!(
            "--- stdout ---\n{}\n--- stderr ---\n{}",
            truncate(&self.stdout, max),
            truncate(&self.stderr, max)
        )
    }
}

/// Truncates long text for failure messages, noting how much was left out.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}\n[... {} more bytes]", &s[..cut], s.len() - cut)
}

/// Runs `cmd` with stdin closed, capturing stdout and stderr, and kills it
/// (SIGKILL) if it runs longer than `timeout`.
pub fn run_timeout(cmd: Command, timeout: Duration) -> RunResult {
    run_inner(cmd, timeout, false)
}

/// Like [`run_timeout`], but stderr goes into the same pipe as stdout, so
/// `stdout` holds both streams in the order they were written (as far as
/// the program's own buffering allows) and `stderr` is empty.
pub fn run_timeout_merged(cmd: Command, timeout: Duration) -> RunResult {
    run_inner(cmd, timeout, true)
}

fn run_inner(mut cmd: Command, timeout: Duration, merge: bool) -> RunResult {
    let start = Instant::now();
    cmd.stdin(Stdio::null());
    let merged_reader = if merge {
        let (reader, writer) = std::io::pipe().expect("pipe");
        cmd.stdout(writer.try_clone().expect("dup pipe"))
            .stderr(writer);
        Some(reader)
    } else {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        None
    };
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let what = format!("{cmd:?}");
    // The command holds the parent's copies of the merged pipe's write end;
    // drop it so the reader sees end-of-file when the child exits.
    drop(cmd);
    fn reader_thread(mut r: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
        thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    }
    let (out_reader, err_reader) = match merged_reader {
        Some(r) => (reader_thread(r), None),
        None => (
            reader_thread(child.stdout.take().unwrap()),
            Some(reader_thread(child.stderr.take().unwrap())),
        ),
    };
    let mut timed_out = false;
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(e) => panic!("wait for {what}: {e}"),
        }
        if start.elapsed() >= timeout {
            timed_out = true;
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap()).into_owned();
    let stderr = err_reader
        .map(|r| String::from_utf8_lossy(&r.join().unwrap()).into_owned())
        .unwrap_or_default();
    RunResult {
        status,
        timed_out,
        stdout,
        stderr,
        elapsed,
    }
}

/// Time limit for e2fsck on the small fixture images.
pub const E2FSCK_TIMEOUT: Duration = Duration::from_secs(300);

/// An 8 MiB image made by `mke2fs -d` whose directory `/d` holds `files`
/// long-named files of `size` bytes each, then indexed by e2fsck -fyD.
pub fn long_named_htree_image(tmp: &TempDir, opts: &MkfsOpts, files: usize, size: u64) -> PathBuf {
    let tree = tmp.join("tree");
    let spec: Vec<Node> = std::iter::once(Node::dir("d"))
        .chain((0..files).map(|i| Node::file(&format!("d/file_with_a_long_name_{i}"), size)))
        .collect();
    build_tree(&tree, &spec);
    let img = tmp.join("img");
    mkfs(&img, 8 << 20, opts, Some(&tree));
    let r = e2fsck(&img, &["-fyD"]);
    assert!(matches!(r.code(), Some(0 | 1)), "e2fsck -fyD: {}", r.stdout);
    img
}

/// Runs e2fsck with `args` then the image. Its stdout and stderr are
/// merged into `stdout`, in order: e2fsck's stdout is made line-buffered
/// with `stdbuf` when available, so a message on stderr ("e2fsck: aborted")
/// is not mistaken for one printed before the passes.
pub fn e2fsck(img: &Path, args: &[&str]) -> RunResult {
    let mut cmd = match try_tool("stdbuf") {
        Some(stdbuf) => {
            let mut c = Command::new(stdbuf);
            c.args(["-oL", "-eL"]).arg(tool("e2fsck"));
            c
        }
        None => Command::new(tool("e2fsck")),
    };
    cmd.args(args).arg(img);
    let r = run_timeout_merged(cmd, E2FSCK_TIMEOUT);
    assert!(!r.timed_out, "e2fsck {args:?} {} timed out", img.display());
    r
}

/// `e2fsck -fn img` with its full output.
pub fn e2fsck_fn_run(img: &Path) -> RunResult {
    e2fsck(img, &["-fn"])
}

/// Exit status of `e2fsck -fn img` (-1 if killed by a signal).
pub fn e2fsck_fn(img: &Path) -> i32 {
    e2fsck_fn_run(img).code().unwrap_or(-1)
}

/// e2fsck 1.47.4, the project's oracle (`../shared/tools/e2fsck-1.47.4`,
/// or `PFSCK_E2FSCK_ORACLE`), when present; where 1.47.0 and 1.47.4
/// disagree, 1.47.4 stands.
pub fn oracle() -> Option<PathBuf> {
    let path = std::env::var_os("PFSCK_E2FSCK_ORACLE").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/e2fsck-1.47.4"),
        PathBuf::from,
    );
    path.is_file().then_some(path)
}

/// Runs the oracle (or, without it, the installed e2fsck) with `args`
/// then the image, under a time limit (1.47.4 hangs on a few images).
pub fn oracle_run(img: &Path, args: &[&str]) -> RunResult {
    let mut cmd = Command::new(oracle().unwrap_or_else(|| tool("e2fsck")));
    cmd.args(args).arg(img);
    let r = run_timeout_merged(cmd, Duration::from_secs(60));
    assert!(!r.timed_out, "e2fsck {args:?} {} timed out", img.display());
    r
}

/// Exit status of the oracle's `-fn` (-1 if killed by a signal).
pub fn oracle_fn(img: &Path) -> i32 {
    oracle_run(img, &["-fn"]).code().unwrap_or(-1)
}

/// Runs the oracle with `args` then `img`, its problem log on (the
/// `E2FSCK_CONFIG` file names `problem_log_filename`; both are written
/// beside `img`): the run and the log's text, empty when e2fsck wrote none.
/// None without the oracle. The caller judges time-outs and signals: the
/// log is complete only when e2fsck ends by itself.
pub fn e2fsck_logged(img: &Path, args: &[&str]) -> Option<(RunResult, String)> {
    let oracle = oracle()?;
    let log = img.with_extension("problems.log");
    let conf = img.with_extension("e2fsck.conf");
    let _ = std::fs::remove_file(&log);
    std::fs::write(
        &conf,
        format!("[options]\n\tproblem_log_filename = {}\n", log.display()),
    )
    .unwrap();
    let mut cmd = Command::new(oracle);
    cmd.env("E2FSCK_CONFIG", &conf).args(args).arg(img);
    let run = run_timeout(cmd, Duration::from_secs(60));
    // Lossy: the log quotes names, which need not be UTF-8.
    let text = std::fs::read(&log).unwrap_or_default();
    Some((run, String::from_utf8_lossy(&text).into_owned()))
}

/// The codes e2fsck's problem log holds, sorted, each once (every entry
/// but the pass headers: latch questions and list ends too). None
/// without the oracle; a run that times out fails the test.
pub fn e2fsck_codes(img: &Path, args: &[&str]) -> Option<Vec<u32>> {
    let (run, text) = e2fsck_logged(img, args)?;
    assert!(
        !run.timed_out,
        "e2fsck {args:?} {} timed out",
        img.display()
    );
    let mut codes = log_codes(&text);
    codes.sort_unstable();
    codes.dedup();
    Some(codes)
}

/// The code of every problem entry of an e2fsck problem log, in order.
pub fn log_codes(text: &str) -> Vec<u32> {
    log_problems(text)
        .filter_map(|t| log_attr(t, "code"))
        .filter_map(|c| u32::try_from(c).ok())
        .collect()
}

/// The problem entries (`<problem ...`) of an e2fsck problem log.
pub fn log_problems(text: &str) -> impl Iterator<Item = &str> {
    text.split('<').filter(|t| t.starts_with("problem "))
}

/// Attribute `name` of a problem log entry, hexadecimal (`0x...`) or
/// decimal.
pub fn log_attr(tag: &str, name: &str) -> Option<u64> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    let val = &tag[at..at + tag[at..].find('"')?];
    match val.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => val.parse().ok(),
    }
}

/// The pfsck binary under test.
pub fn pfsck_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_pfsck"))
}

/// Runs pfsck with `args` (stdin closed) to completion.
pub fn pfsck<S: AsRef<OsStr>>(args: &[S]) -> Output {
    output_of(Command::new(pfsck_bin()).args(args))
}

/// Runs pfsck with `args` under a time limit.
pub fn pfsck_timeout<S: AsRef<OsStr>>(args: &[S], timeout: Duration) -> RunResult {
    let mut cmd = Command::new(pfsck_bin());
    cmd.args(args);
    run_timeout(cmd, timeout)
}

// ---------------------------------------------------------------------------
// Reading e2fsck's and pfsck's reports
// ---------------------------------------------------------------------------

/// The first problem e2fsck reported, and the pass it was reported in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct E2Problem {
    /// 0 for problems printed before `Pass 1:`; passes 1B-1D count as 1,
    /// 3A as 3.
    pub pass: u32,
    pub line: String,
    /// The inode the problem line names (`Inode 12`, `inode 12`), if any.
    pub ino: Option<u64>,
}

/// Lines of e2fsck's output that are not problems.
fn is_e2fsck_noise(line: &str) -> bool {
    let t = line.trim();
    t.is_empty()
        || t.starts_with("e2fsck ")
        || t.starts_with("Using EXT2FS Library")
        || t.starts_with("Running additional passes")
        || t.contains("*****")
        || is_summary_line(t)
}

/// "img: 11/2048 files (0.0% non-contiguous), 1279/8192 blocks"
fn is_summary_line(t: &str) -> bool {
    t.contains(" files (") && t.contains(" non-contiguous), ") && t.ends_with(" blocks")
}

/// Parses a pass header ("Pass 1B: Rescanning ..."); returns its number.
fn pass_header(line: &str) -> Option<u32> {
    let rest = line.trim().strip_prefix("Pass ")?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let after = &rest[digits.len()..];
    // "Pass 1: ..." or "Pass 1B: ..."
    let after = after.trim_start_matches(|c: char| c.is_ascii_uppercase());
    if !after.starts_with(':') {
        return None;
    }
    digits.parse().ok()
}

/// The inode a problem message names: the first "inode N" or "inode #N"
/// (any case). Inode 0 ("invalid journal (inode 0)") names no inode.
pub fn inode_in_message(line: &str) -> Option<u64> {
    let lower = line.to_ascii_lowercase();
    let mut from = 0;
    while let Some(pos) = lower[from..].find("inode ") {
        let start = from + pos + "inode ".len();
        let rest = lower[start..].strip_prefix('#').unwrap_or(&lower[start..]);
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if let Ok(n) = digits.parse()
            && n != 0
        {
            return Some(n);
        }
        from = start;
    }
    None
}

/// Does `text` contain `n` as a whole number (not part of a longer one)?
pub fn contains_number(text: &str, n: u64) -> bool {
    text.split(|c: char| !c.is_ascii_digit())
        .any(|w| w.parse::<u64>().ok() == Some(n))
}

/// Finds the first problem in e2fsck's output (stdout and stderr merged in
/// order, as [`e2fsck`] captures them). Lines before the `Pass 1:` header
/// count as pass 0.
pub fn e2fsck_first_problem(output: &str) -> Option<E2Problem> {
    let mut pass = 0;
    for line in output.lines() {
        if let Some(p) = pass_header(line) {
            pass = p;
            continue;
        }
        if is_e2fsck_noise(line) {
            continue;
        }
        return Some(E2Problem {
            pass,
            line: line.trim().to_string(),
            ino: inode_in_message(line),
        });
    }
    None
}

/// One problem of pfsck's `--json` report.
#[derive(Clone, Debug)]
pub struct Problem {
    pub code: String,
    pub pass: Option<u32>,
    pub ino: Option<u64>,
    pub block: Option<u64>,
    pub group: Option<u64>,
    pub message: String,
}

/// pfsck's `--json` report.
#[derive(Clone, Debug)]
pub struct Report {
    pub problems: Vec<Problem>,
    pub exit_code: Option<i64>,
    pub raw: serde_json::Value,
}

/// Parses pfsck's `--json` output. The pass may be a number or a string
/// such as "1B" (its leading digits are used).
pub fn parse_report(stdout: &str) -> Result<Report, String> {
    let raw: serde_json::Value = serde_json::from_str(stdout.trim())
        .map_err(|e| format!("--json output is not JSON ({e})"))?;
    let list = raw
        .get("problems")
        .and_then(|p| p.as_array())
        .ok_or("--json output has no \"problems\" array")?;
    let num = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_u64());
    let problems = list
        .iter()
        .map(|p| Problem {
            code: p
                .get("code")
                .and_then(|c| c.as_str())
                .unwrap_or("")
                .to_string(),
            pass: match p.get("pass") {
                Some(serde_json::Value::Number(n)) => n.as_u64().map(|n| n as u32),
                Some(serde_json::Value::String(s)) => first_number(s).map(|n| n as u32),
                _ => None,
            },
            ino: num(p, "ino"),
            block: num(p, "block"),
            group: num(p, "group"),
            message: p
                .get("message")
                .and_then(|c| c.as_str())
                .unwrap_or("")
                .to_string(),
        })
        .collect();
    Ok(Report {
        problems,
        exit_code: raw.get("exit_code").and_then(|c| c.as_i64()),
        raw,
    })
}

impl Report {
    /// Does any problem concern inode `ino` (its `ino` field, or the number
    /// in its message: a directory-entry problem may carry the directory's
    /// inode in `ino` and name the entry's inode in the text)?
    pub fn mentions_inode(&self, ino: u64) -> bool {
        self.problems
            .iter()
            .any(|p| p.ino == Some(ino) || contains_number(&p.message, ino))
    }

    pub fn has_pass(&self, pass: u32) -> bool {
        self.problems.iter().any(|p| p.pass == Some(pass))
    }

    /// One line per problem, for failure messages.
    pub fn summary(&self, max: usize) -> String {
        let mut s = String::new();
        for p in self.problems.iter().take(max) {
            let _ = writeln!(
                s,
                "  [pass {}] {} ino={} block={} group={}: {}",
                p.pass.map_or("?".into(), |v| v.to_string()),
                p.code,
                p.ino.map_or("-".into(), |v| v.to_string()),
                p.block.map_or("-".into(), |v| v.to_string()),
                p.group.map_or("-".into(), |v| v.to_string()),
                p.message
            );
        }
        if self.problems.len() > max {
            let _ = writeln!(s, "  ... {} more", self.problems.len() - max);
        }
        s
    }
}

/// Asserts that both e2fsck and pfsck (`-fn`) find `img` clean and that
/// pfsck did not modify it; the panic message shows both outputs.
#[track_caller]
pub fn assert_both_clean(name: &str, img: &Path) {
    let e2 = e2fsck_fn_run(img);
    let before = hash_file(img);
    let pf = pfsck_timeout(
        &[OsStr::new("-fn"), img.as_os_str()],
        Duration::from_secs(600),
    );
    let after = hash_file(img);
    let mut errors = Vec::new();
    if e2.code() != Some(0) {
        errors.push(format!("e2fsck -fn: {} (expected exit 0)", e2.describe()));
    }
    if pf.code() != Some(0) {
        errors.push(format!("pfsck -fn: {} (expected exit 0)", pf.describe()));
    }
    if before != after {
        errors.push("pfsck -fn modified the image".to_string());
    }
    if !errors.is_empty() {
        panic!(
            "[{name}] {}\nimage: {}\n===== e2fsck -fn =====\n{}\n===== pfsck -fn =====\n{}",
            errors.join("; "),
            img.display(),
            e2.dump(8000),
            pf.dump(8000)
        );
    }
}

/// Runs `jobs` on `threads` worker threads, returning results in job order.
pub fn parallel_map<T: Sync, R: Send>(
    jobs: &[T],
    threads: usize,
    f: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicU64::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                    if i >= jobs.len() {
                        break;
                    }
                    let r = f(i, &jobs[i]);
                    results.lock().unwrap()[i] = Some(r);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("job did not run"))
        .collect()
}

/// Number of worker threads for parallel test loops (`PFSCK_TEST_THREADS`,
/// default 2).
pub fn test_threads() -> usize {
    std::env::var("PFSCK_TEST_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(2)
}

// ---------------------------------------------------------------------------
// Conformance images (../shared/conformance)
// ---------------------------------------------------------------------------

/// File name of the baseline verdicts in the conformance directory
/// (e2fsck 1.47.0's, the installed version's).
pub const BASELINE: &str = "e2fsprogs-baseline.tsv";

/// The same verdicts from e2fsck 1.47.4, the reference where the two
/// versions differ (the EA-inode checks 1.47.1-1.47.4 added).
pub const BASELINE_1474: &str = "e2fsprogs-baseline-1.47.4.tsv";

/// The baseline to judge pfsck by: 1.47.4's where the directory has it.
pub fn baseline_path(dir: &Path) -> PathBuf {
    let newer = dir.join(BASELINE_1474);
    if newer.is_file() {
        newer
    } else {
        dir.join(BASELINE)
    }
}

/// The oracle's `-fn` exit on `img` is `want`, and pfsck's too (without
/// writing); then `pfsck -fy` exits `want_fy` and the oracle finds the
/// result clean. Returns pfsck's -fn and -fy outputs.
#[track_caller]
pub fn judged_by_oracle(ctx: &str, img: &Path, want: i32, want_fy: i32) -> (String, String) {
    let tmp = TempDir::new(ctx);
    let oracle = oracle_run(img, &["-fn"]);
    assert_eq!(
        oracle.code(),
        Some(want),
        "[{ctx}] e2fsck -fn:\n{}",
        oracle.stdout
    );
    let before = hash_file(img);
    let (code, fn_out) = pfsck_code(&["-fn"], img);
    assert_eq!(
        code, want,
        "[{ctx}] pfsck -fn:\n{fn_out}\ne2fsck -fn:\n{}",
        oracle.stdout
    );
    assert_eq!(before, hash_file(img), "[{ctx}] pfsck -fn wrote");
    let undo = tmp.join("undo");
    let (code, out) = pfsck_code(&["-fy", "-z", undo.to_str().unwrap()], img);
    assert_eq!(code, want_fy, "[{ctx}] pfsck -fy:\n{out}");
    let after = oracle_run(img, &["-fn"]);
    assert_eq!(
        after.code(),
        Some(0),
        "[{ctx}] e2fsck -fn after pfsck -fy:\n{}\npfsck -fy:\n{out}",
        after.stdout
    );
    (fn_out, out)
}

/// pfsck and e2fsck 1.47.4 (when present) run with `args` on copies of
/// `img`: both exit `want`; pfsck's output and its copy are returned. The
/// installed 1.47.0 is not asked in the oracle's place: where they differ,
/// 1.47.4 stands.
#[track_caller]
pub fn both_exit(img: &Path, args: &[&str], want: i32) -> (String, PathBuf) {
    let mine = img.with_extension("pfsck");
    copy_image(img, &mine);
    let mut theirs_out = String::new();
    if oracle().is_some() {
        let theirs = img.with_extension("oracle");
        copy_image(img, &theirs);
        let oracle = oracle_run(&theirs, args);
        assert_eq!(
            oracle.code(),
            Some(want),
            "e2fsck {args:?}:\n{}",
            oracle.stdout
        );
        theirs_out = oracle.stdout;
    }
    let (code, out) = pfsck_code(args, &mine);
    assert_eq!(code, want, "pfsck {args:?}:\n{out}\ne2fsck:\n{theirs_out}");
    (out, mine)
}

/// stdout, then stderr, of a finished command, as text.
pub fn output_text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// pfsck's exit code (-1 for a signal) and output for `args` and `img`.
pub fn pfsck_code(args: &[&str], img: &Path) -> (i32, String) {
    let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    all.push(img.as_os_str());
    let out = pfsck(&all);
    (out.status.code().unwrap_or(-1), output_text(&out))
}

/// The conformance directory: `$PFSCK_CONFORMANCE_DIR` (the directory
/// holding the baseline, or its parent) or `<crate>/../shared/conformance`.
pub fn conformance_dir() -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = match std::env::var_os("PFSCK_CONFORMANCE_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            vec![dir.clone(), dir.join("conformance")]
        }
        None => vec![
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("shared")
                .join("conformance"),
        ],
    };
    candidates.into_iter().find(|d| d.join(BASELINE).is_file())
}

/// Decompresses (or copies) the image of `test_dir` into `dest`.
pub fn extract_image(test_dir: &Path, dest: &Path) -> Result<(), String> {
    let (tool_name, src) = if test_dir.join("image.gz").is_file() {
        ("gzip", test_dir.join("image.gz"))
    } else if test_dir.join("image.bz2").is_file() {
        ("bzip2", test_dir.join("image.bz2"))
    } else if test_dir.join("image").is_file() {
        copy_image(&test_dir.join("image"), dest);
        return Ok(());
    } else {
        return Err(format!("no image in {}", test_dir.display()));
    };
    let out = File::create(dest).map_err(|e| format!("create {}: {e}", dest.display()))?;
    let status = Command::new(tool(tool_name))
        .arg("-dc")
        .arg(&src)
        .stdin(Stdio::null())
        .stdout(out)
        .status()
        .map_err(|e| format!("{tool_name}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{tool_name} -dc {}: {status}", src.display()))
    }
}

/// Whether `after` differs from `before` (whole images) at most in the
/// end-of-check record a repairing run writes to the primary superblock:
/// mount count, state, last-check time, the error record and the
/// checksum over them. A run that fixes nothing writes that record
/// without an undo log, as e2fsck writes it.
pub fn only_check_record_changed(before: &[u8], after: &[u8]) -> bool {
    first_change_outside_check_record(before, after).is_none()
}

/// [`only_check_record_changed`], the journal's error number (and its
/// superblock's checksum) included: the record clears it too. `img` is
/// the image `after` was read from (to find the journal).
pub fn only_check_record_changed_in(img: &Path, before: &[u8], after: &[u8]) -> bool {
    if only_check_record_changed(before, after) {
        return true;
    }
    let Ok(jsb) = debugfs_r(img, "bmap <8> 0").trim().parse::<usize>() else {
        return false;
    };
    let bs = dumpe2fs(img).block_size as usize;
    let mut b = before.to_vec();
    for r in [0x20..0x24, 0xFC..0x100] {
        let r = jsb * bs + r.start..jsb * bs + r.end;
        if r.end > b.len() || r.end > after.len() {
            return false;
        }
        b[r.clone()].copy_from_slice(&after[r]);
    }
    only_check_record_changed(&b, after)
}

pub fn assert_only_check_record_changed(before: &[u8], after: &[u8]) {
    if let Some(at) = first_change_outside_check_record(before, after) {
        panic!("byte {at} changed, outside the superblock's check record");
    }
}

fn first_change_outside_check_record(before: &[u8], after: &[u8]) -> Option<usize> {
    const RECORD: &[std::ops::Range<usize>] = &[
        0x34..0x36,
        0x3A..0x3C,
        0x40..0x44,
        0x194..0x200,
        0x277..0x278,
        0x3FC..0x400,
    ];
    if before.len() != after.len() || before.len() < 2048 {
        return Some(before.len().min(after.len()));
    }
    let (mut b, mut a) = (before.to_vec(), after.to_vec());
    for r in RECORD {
        let r = 1024 + r.start..1024 + r.end;
        b[r.clone()].fill(0);
        a[r].fill(0);
    }
    b.iter().zip(&a).position(|(x, y)| x != y)
}

/// Every "in PATH (N)" and "(was in PATH)" of a report.
pub fn report_paths(out: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in out.lines() {
        for (k, _) in line.match_indices(" in ") {
            let rest = &line[k + 4..];
            let Some(sp) = rest.find(' ') else { continue };
            let (path, after) = rest.split_at(sp);
            let num = after[1..].strip_prefix('(').and_then(|a| a.split_once(')'));
            if let Some((n, _)) = num
                && !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
            {
                found.push(format!("{path} ({n})"));
            }
        }
        if let Some((_, rest)) = line.split_once("(was in ")
            && let Some((path, _)) = rest.split_once(')')
        {
            found.push(format!("was in {path}"));
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The e2fsck codes of a pfsck `--json` report, problem by problem, in
/// the report's order (a problem may carry several).
pub fn report_e2fsck_codes(json: &serde_json::Value) -> Vec<u32> {
    json["problems"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["e2fsck"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| {
            r["code"]
                .as_str()
                .and_then(|c| u32::from_str_radix(c.trim_start_matches("0x"), 16).ok())
        })
        .collect()
}

/// A report reduced to what pfsck must share with e2fsck's where the
/// words are pfsck's own: line by line, blank or not, the question asked
/// and its answer (`ask Clear no`), and the numbers the line names, in
/// order (inodes, blocks, counts, times). Two reports of one run agree
/// here when they find, ask and count the same things.
pub fn report_shape(out: &str) -> Vec<String> {
    out.lines()
        .map(|l| {
            // Numbers standing alone: not the digits of a word (e2fsck,
            // ext4).
            let mut numbers: Vec<&str> = Vec::new();
            let mut rest = l;
            while let Some(at) = rest.find(|c: char| c.is_ascii_digit()) {
                let len = rest[at..]
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(rest.len() - at);
                let glued = rest[..at].ends_with(|c: char| c.is_ascii_alphabetic())
                    || rest[at + len..].starts_with(|c: char| c.is_ascii_alphabetic());
                if !glued {
                    numbers.push(&rest[at..at + len]);
                }
                rest = &rest[at + len..];
            }
            let kind = if l.trim().is_empty() {
                return String::new();
            } else if let Some((q, a)) = l
                .strip_suffix("? no")
                .map(|q| (q, "no"))
                .or_else(|| l.strip_suffix("? yes").map(|q| (q, "yes")))
            {
                let word = q.rsplit(". ").next().unwrap_or(q);
                let word = word.rsplit(": ").next().unwrap_or(word).trim();
                // The one question whose words pfsck changed.
                let word = match word {
                    "Clone multiply-claimed blocks" => "Copy the shared blocks",
                    w => w,
                };
                format!("ask {word} {a}")
            } else {
                "state".to_string()
            };
            format!("{kind} {}", numbers.join(" "))
        })
        .collect()
}

/// Makes directory `/d` on an inline_data image (1 KiB blocks, 256-byte
/// inodes) whose system.data attribute sits in its xattr block with 13
/// bytes (inline size 73): libext2fs refuses to store system.data there,
/// so e2fsck's fix of the size fails (0x02004e, then 0x02004f). `scratch`
/// holds the value file.
pub fn inline_dir_data_in_xattr_block(img: &Path, scratch: &Path) {
    let val = scratch.join("value");
    std::fs::write(&val, b"abcdefghijklm").unwrap();
    // With no room in the inode (i_extra_isize 124 of 128), the attribute
    // goes to a new xattr block; i_extra_isize is then restored.
    debugfs_w(
        img,
        &[
            "mkdir d".to_string(),
            "ea_rm d system.data".to_string(),
            "sif d extra_isize 124".to_string(),
            format!("ea_set -f {} d user.data", val.display()),
            "sif d extra_isize 32".to_string(),
        ],
    );
    let stat = debugfs_r(img, "stat d");
    let acl: u64 = stat
        .split("File ACL: ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no xattr block in:\n{stat}"));
    // The entry's name index (byte 1 of the first entry, after the 32-byte
    // header) from user (1) to system (7): "user.data" becomes
    // "system.data", whose hash covers the name and value only.
    debugfs_w(img, &[format!("zap_block -o 33 -l 1 -p 7 {acl}")]);
}
