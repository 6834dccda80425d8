//! Pass 0, multiple-mount protection: is the MMP block sound, and is the
//! file system free to check? e2fsck refuses (exit 12, whatever the mode)
//! while the block says a checker holds the file system or names an
//! operation it does not know, and stops under -n at a block it would
//! have to rewrite. A node's sequence number alone does not stop a
//! read-only check; a repair waits to see it still (`store::mmp`).

use super::problem::{Code, Problem};
use crate::fs::mmp::{self, MMP_MAGIC, SEQ_CLEAN, SEQ_FSCK, SEQ_MAX};
use crate::fs::num::Blk;
use crate::fs::superblock::incompat;
use crate::volume::Fs;

/// `repairing`: a repair rewrites a bad block (as e2fsck -y and -p do);
/// `claimed`: it holds the block, so the checker it names is itself.
pub fn check(fs: &Fs, repairing: bool, claimed: bool) -> Vec<Problem> {
    let mut out = Vec::new();
    if !fs.sb.has_incompat(incompat::MMP) {
        return out;
    }
    let blk = fs.sb.mmp_block;
    if blk < fs.geo.first_data_block.max(1) || !fs.geo.block_in_fs(blk) {
        // `num` 1: declined (-n), which e2fsck meets as an abort before
        // it judges the file system (`e2fsck_map::aborts_unjudged`).
        out.push(
            Problem::new(Code::MmpBlockInvalid)
                .blk(Blk(blk))
                .num(u64::from(!repairing)),
        );
        return out;
    }
    let raw = match fs.read_block(blk) {
        Ok(b) => b,
        Err(e) => {
            out.push(
                Problem::new(Code::MmpBusy)
                    .blk(Blk(blk))
                    .detail(format!("the MMP block cannot be read: {e}")),
            );
            out.push(Problem::new(Code::MmpCannotProceed));
            return out;
        }
    };
    let m = mmp::parse(&raw);
    let bad = if m.magic != MMP_MAGIC {
        Some(Code::MmpBadMagic)
    } else if fs.metadata_csum() && mmp::compute_checksum(fs.sb.csum_seed(), &raw) != m.checksum {
        Some(Code::MmpChecksum)
    } else {
        None
    };
    if let Some(code) = bad {
        out.push(Problem::new(code).blk(Blk(blk)));
        if !repairing {
            out.push(Problem::new(Code::MmpCannotProceed));
        }
        return out;
    }
    if let Some(why) = busy(&m).filter(|_| !claimed) {
        out.push(Problem::new(Code::MmpBusy).blk(Blk(blk)).detail(why));
        out.push(Problem::new(Code::MmpCannotProceed));
    }
    out
}

/// Why the block's sequence forbids any check, if it does.
pub fn busy(m: &mmp::Mmp) -> Option<String> {
    let whom = format!("node {:?}, device {:?}", m.nodename, m.bdevname);
    if m.seq == SEQ_FSCK {
        Some(format!("the file system is being checked ({whom})"))
    } else if m.seq > SEQ_MAX && m.seq != SEQ_CLEAN {
        Some(format!(
            "the file system is undergoing an unknown operation (sequence 0x{:08x}, {whom})",
            m.seq
        ))
    } else {
        None
    }
}
