//! `-c`, `-l`, `-L`: the blocks to add to the bad blocks inode, from
//! badblocks(8) or from a file of its output.
//!
//! Writing a new list into the bad blocks inode is not implemented yet:
//! when the list comes back empty (the usual case for a scan) the check
//! goes on; otherwise the caller stops with exit 8 before anything is
//! written, naming the blocks.

use super::Args;
use crate::fs::superblock::Superblock;
use crate::io::Device;
use std::process::{Command, Stdio};

/// The block numbers `text` lists, one per line as badblocks(8) writes
/// them; like e2fsck, a line that is not a number is skipped.
pub fn parse_list(text: &str) -> Vec<u64> {
    let mut v: Vec<u64> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The blocks `-l`/`-L` or `-c` name (empty without those options).
pub fn gather(args: &Args, device: &str) -> Result<Vec<u64>, String> {
    if let Some((file, _)) = &args.bad_blocks_file {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("{}: {e} while reading the bad blocks list", file.display()))?;
        return Ok(parse_list(&text));
    }
    if args.scan_bad_blocks == 0 {
        return Ok(Vec::new());
    }
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
    if args.scan_bad_blocks > 1 {
        cmd.arg("-n");
    }
    if args.progress || args.progress_fd == Some(0) {
        cmd.arg("-s");
    }
    cmd.arg(&args.device)
        .arg(sb.blocks_count.saturating_sub(1).to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run badblocks: {e}"))?;
    if !out.status.success() {
        return Err(format!("badblocks failed on {device} ({})", out.status));
    }
    Ok(parse_list(&String::from_utf8_lossy(&out.stdout)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn list() {
        assert_eq!(super::parse_list("12\n\n7 x\nbad\n12\n"), vec![7, 12]);
    }
}
