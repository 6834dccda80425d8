//! Small file systems for the library's unit tests. They are made by the
//! real mkfs.ext4 and debugfs, as everything here is judged against
//! e2fsprogs, then read into memory and checked in-process: the passes are
//! tested as functions, not through the binary.

use crate::check::problem::{Code, Pass, Problem};
use crate::check::{self, Options, Report};
use crate::engine::{Clock, Threads};
use crate::io::Device;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Times that mkfs, debugfs and the check all work with, so that the
/// bytes and the report are the same on every run.
const FAKE_TIME: u64 = 1_700_000_000;

/// An image being made in a private directory, removed when dropped.
pub struct Image {
    dir: PathBuf,
    img: PathBuf,
}

/// A program of e2fsprogs: in /sbin on Debian, which a test's PATH may lack.
fn tool(name: &str) -> PathBuf {
    ["/sbin", "/usr/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from(name))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .env("E2FSPROGS_FAKE_TIME", FAKE_TIME.to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl Image {
    /// `mkfs.ext4 ARGS` on a new image of `size` (mkfs's syntax, "4M").
    pub fn new(size: &str, mkfs: &[&str]) -> Image {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "pfsck-unit-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let img = dir.join("fs.img");
        run(Command::new(tool("mkfs.ext4"))
            .args(["-q", "-F", "-U", "6b33f2a8-1c3e-4b7a-9d2e-5f0a1b2c3d4e"])
            .args(mkfs)
            .arg(&img)
            .arg(size));
        Image { dir, img }
    }

    /// A file of `len` bytes of a fixed pattern, to `write` into the image.
    #[allow(clippy::cast_possible_truncation)] // i % 251 fits a byte
    pub fn source(&self, len: usize) -> String {
        let p = self.dir.join(format!("src-{len}"));
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, data).unwrap();
        p.display().to_string()
    }

    /// Runs debugfs -w with one command per line; returns its output.
    pub fn debugfs(&self, script: &str) -> String {
        let script_file = self.dir.join("script");
        std::fs::write(&script_file, script).unwrap();
        run(Command::new(tool("debugfs"))
            .arg("-w")
            .arg("-f")
            .arg(&script_file)
            .arg(&self.img))
    }

    /// The inode number of `path`.
    pub fn ino(&self, path: &str) -> u32 {
        let out = self.debugfs(&format!("stat {path}\n"));
        out.split("Inode: ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no inode for {path}: {out}"))
    }

    /// The data blocks of `path`, in logical order.
    pub fn blocks(&self, path: &str) -> Vec<u64> {
        self.debugfs(&format!("blocks {path}\n"))
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect()
    }

    /// What dumpe2fs prints of the image (groups included): libext2fs's
    /// own reading of it.
    pub fn dumpe2fs(&self) -> String {
        run(Command::new(tool("dumpe2fs")).arg(&self.img))
    }

    /// The image's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.img).unwrap()
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A forced check on `threads` threads at the fixed time.
pub fn options(threads: usize) -> Options {
    Options {
        threads: Threads(threads),
        clock: Clock::Fixed(FAKE_TIME),
        ..Options::default()
    }
}

/// A forced read-only check of `bytes` on `threads` threads, at the fixed
/// time.
pub fn check_on(bytes: Vec<u8>, threads: usize) -> Report {
    check::run_device(Device::from_bytes(bytes), &options(threads)).unwrap()
}

/// A forced read-only check of `bytes` on one thread.
pub fn check(bytes: Vec<u8>) -> Report {
    check_on(bytes, 1)
}

/// The problems of `report` with code `code`.
pub fn with_code(report: &Report, code: Code) -> Vec<Problem> {
    report.problems.iter().filter(|p| p.code == code).collect()
}

/// The codes of `report`'s problems found in `pass`.
pub fn codes_of_pass(report: &Report, pass: Pass) -> Vec<Code> {
    report
        .problems
        .iter()
        .filter(|p| p.spec().pass == pass)
        .map(|p| p.code)
        .collect()
}

/// Little-endian u16 and u32 at `at` of `bytes`.
pub fn put_u16(bytes: &mut [u8], at: usize, v: u16) {
    bytes[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

pub fn put_u32(bytes: &mut [u8], at: usize, v: u32) {
    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
