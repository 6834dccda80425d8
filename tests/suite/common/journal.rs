//! Writing jbd2 transactions into an image with debugfs's journal
//! commands (`jo`, `jw`, `jc`), which leave needs_recovery set: shared by
//! the replay planning tests and the replay repair tests.

use super::*;
use std::path::{Path, PathBuf};

pub const JBD2_MAGIC: u32 = 0xC03B_3998;

/// One `jw` command.
pub struct Txn {
    pub writes: Vec<u64>,
    pub revokes: Vec<u64>,
    /// Write the commit block (debugfs `-c` leaves it out).
    pub commit: bool,
    pub salt: u8,
    /// Make the first block start with the jbd2 magic (escaped in the log).
    pub escape_first: bool,
}

impl Txn {
    pub fn write(blocks: &[u64], salt: u8) -> Txn {
        Txn {
            writes: blocks.to_vec(),
            revokes: Vec::new(),
            commit: true,
            salt,
            escape_first: false,
        }
    }
    pub fn revoke(mut self, blocks: &[u64]) -> Txn {
        self.revokes = blocks.to_vec();
        self
    }
    pub fn uncommitted(mut self) -> Txn {
        self.commit = false;
        self
    }
    pub fn escaped(mut self) -> Txn {
        self.escape_first = true;
        self
    }
}

pub fn pattern(bs: usize, salt: u8, i: usize) -> Vec<u8> {
    (0..bs)
        .map(|k| {
            (k as u8)
                .wrapping_mul(7)
                .wrapping_add(salt)
                .wrapping_add(i as u8 * 31)
        })
        .collect()
}

/// `count` free blocks from `start` on, as debugfs finds them.
pub fn free_blocks(img: &Path, count: u32, start: u64) -> Vec<u64> {
    let out = debugfs_r(img, &format!("ffb {count} {start}"));
    let list = out.split(':').nth(1).unwrap_or("");
    let v: Vec<u64> = list
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(v.len(), count as usize, "ffb answered: {out}");
    v
}

/// Builds an image and writes `txns` into its journal.
pub fn build(
    dir: &TempDir,
    opts: &MkfsOpts,
    size: u64,
    jo: &str,
    txns: impl FnOnce(&[u64]) -> Vec<Txn>,
) -> PathBuf {
    let img = dir.join("image");
    mkfs(&img, size, opts, None);
    let bs = opts.block_size.unwrap_or(4096) as usize;
    let free = free_blocks(&img, 16, 3000);
    let mut cmds = vec![format!("jo {jo}")];
    for (n, t) in txns(&free).iter().enumerate() {
        let file = dir.join(format!("data{n}"));
        let mut data = Vec::new();
        for i in 0..t.writes.len().max(1) {
            let mut b = pattern(bs, t.salt, i);
            if i == 0 && t.escape_first {
                b[..4].copy_from_slice(&JBD2_MAGIC.to_be_bytes());
            }
            data.extend(b);
        }
        std::fs::write(&file, data).unwrap();
        let mut c = String::from("jw");
        if !t.writes.is_empty() {
            let l: Vec<String> = t.writes.iter().map(u64::to_string).collect();
            c += &format!(" -b {}", l.join(","));
        }
        if !t.revokes.is_empty() {
            let l: Vec<String> = t.revokes.iter().map(u64::to_string).collect();
            c += &format!(" -r {}", l.join(","));
        }
        if !t.commit {
            c += " -c";
        }
        c += &format!(" {}", file.display());
        cmds.push(c);
    }
    cmds.push("jc".into());
    debugfs_w(&img, &cmds);
    img
}

/// Superblock byte ranges (offsets in the 1024-byte superblock) that each
/// tool sets itself: s_mtime/s_wtime/s_mnt_count, s_lastcheck,
/// s_kbytes_written, the high bytes of the times, the checksum.
pub const SB_OWN_FIELDS: &[(usize, usize)] = &[
    (0x2C, 0x36),
    (0x40, 0x44),
    (0x178, 0x180),
    (0x274, 0x27C),
    (0x3FC, 0x400),
];

/// The primary superblock of image bytes `img` with `SB_OWN_FIELDS`
/// zeroed: what two tools' recoveries of one image must agree on.
pub fn masked_sb(img: &[u8]) -> Vec<u8> {
    let mut s = img[1024..2048].to_vec();
    for &(a, b) in SB_OWN_FIELDS {
        s[a..b].fill(0);
    }
    s
}

/// dumpe2fs's group lines without the descriptor checksum (which covers
/// fields each tool may set differently): the bitmaps and summaries two
/// repairs must agree on.
pub fn groups(img: &Path) -> Vec<String> {
    let out = std::process::Command::new(tool("dumpe2fs"))
        .arg(img)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip_while(|l| !l.starts_with("Group 0:"))
        .map(|l| match l.find(" csum ") {
            Some(k) if l.starts_with("Group ") => l[..k].to_string(),
            _ => l.to_string(),
        })
        .collect()
}
