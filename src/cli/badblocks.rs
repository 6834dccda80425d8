//! `-c`, `-l`, `-L`: the new bad blocks list, from badblocks(8) or from a
//! file of its output, handed to the repair session
//! (`Session::with_bad_blocks`), which writes it into the bad blocks
//! inode before the check.

use super::Args;
use crate::fix::badblocks::NewList;
use crate::fs::superblock::Superblock;
use crate::io::Device;
use std::process::{Command, Stdio};

/// The block numbers `text` lists, one per line as badblocks(8) writes
/// them, in order. As e2fsck reads the list: a line that does not start
/// with a number (after blanks) is skipped, and the digits at its start
/// are the number; a number past 32 bits is an error (the bad blocks
/// inode maps 32-bit blocks).
pub fn parse_list(text: &str) -> Result<Vec<u64>, String> {
    let mut v = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let t = t.strip_prefix('+').unwrap_or(t);
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            continue;
        }
        let n: u64 = t[..digits].parse().unwrap_or(u64::MAX);
        if n > u64::from(u32::MAX) {
            return Err(format!(
                "bad block {} is past what a bad blocks list can hold (32-bit block numbers)",
                &t[..digits]
            ));
        }
        v.push(n);
    }
    Ok(v)
}

/// The new list `-l`/`-L` or `-c` give (None without those options).
/// `-l` adds to the list the bad blocks inode holds, `-L` replaces it, and
/// so does `-c` unless `-k` keeps it; `-l`/`-L` win over `-c`, as in
/// e2fsck.
pub fn new_list(args: &Args, device: &str) -> Result<Option<NewList>, String> {
    if let Some((file, replace)) = &args.bad_blocks_file {
        let text = std::fs::read(file)
            .map_err(|e| format!("{}: {e} while reading the bad blocks list", file.display()))?;
        return Ok(Some(NewList {
            blocks: parse_list(&String::from_utf8_lossy(&text))?,
            replace: *replace,
        }));
    }
    if args.scan_bad_blocks == 0 {
        return Ok(None);
    }
    Ok(Some(NewList {
        blocks: scan(args, device)?,
        replace: !args.keep_bad_blocks,
    }))
}

/// Runs badblocks(8) over the whole file system with e2fsck's arguments:
/// the block size, `-X` (the device is ours), `-s` unless preening,
/// `-n` for `-cc`, the device and its last block. Its progress goes to
/// standard error as it comes.
fn scan(args: &Args, device: &str) -> Result<Vec<u64>, String> {
    let dev = Device::open_read_only(&args.device)
        .map_err(|e| format!("{e} while trying to open {device}"))?;
    let mut raw = vec![0u8; 1024];
    dev.read_at(1024, &mut raw)
        .map_err(|e| format!("{e} while reading the superblock of {device}"))?;
    let sb = Superblock::parse(&raw);
    let bs = sb
        .block_size()
        .filter(|_| sb.magic == crate::fs::superblock::EXT2_MAGIC)
        .ok_or_else(|| format!("no ext2/3/4 superblock on {device}: cannot run badblocks"))?;
    let mut cmd = Command::new("badblocks");
    cmd.arg("-b").arg(bs.to_string()).arg("-X");
    if !(args.preen || args.auto) {
        cmd.arg("-s");
    }
    if args.scan_bad_blocks > 1 {
        cmd.arg("-n");
    }
    cmd.arg(&args.device)
        .arg(sb.blocks_count.saturating_sub(1).to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run badblocks: {e}"))?;
    // e2fsck reads whatever list came out; an empty one from a failed
    // scan would then replace the inode's list. Refused instead.
    if !out.status.success() {
        return Err(format!(
            "badblocks failed on {device} ({}); the bad blocks list is left as it is",
            out.status
        ));
    }
    parse_list(&String::from_utf8_lossy(&out.stdout))
}

#[cfg(test)]
mod tests {
    #[test]
    fn list() {
        assert_eq!(
            super::parse_list("12\n\n7 x\nbad\n12\n  +9\n30abc\n"),
            Ok(vec![12, 7, 12, 9, 30])
        );
        assert!(super::parse_list("4294967296\n").is_err());
    }
}
