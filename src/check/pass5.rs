//! Pass 5: bitmaps and summary counts.
//!
//! Checks the on-disk block and inode bitmaps against what pass 1 found
//! (`State::block_used`, `State::inode_used`), the padding at the end of the
//! last group's block bitmap and past every group's bits in a bitmap block, the bitmap checksums (metadata_csum), and the
//! free block / free inode / directory counts of every group and of the
//! superblock.
//!
//! Collects nothing. Relies on pass 1 having marked metadata and every
//! claimed block, and on pass 0 for the descriptors.
//!
//! A BLOCK_UNINIT group's bitmap is not read: like e2fsprogs' library, it
//! reads as the group's own metadata (superblock and descriptor copies,
//! reserved GDT blocks, its bitmaps and inode table, wherever flex_bg put
//! them); an INODE_UNINIT group's inode bitmap reads as empty. The flags
//! are only trusted when the descriptor checksum is right.
//!
//! Counts are compared as e2fsck compares them. A repair first rewrites
//! the bitmaps, so the counts are those of the blocks and inodes in use;
//! a read-only check (e2fsck -n declines to rewrite them) counts the
//! bitmaps as they are on disk, so that a count is only wrong when it
//! disagrees with its own group's bitmap. Bitmap checksums likewise: a
//! repair rewrites a differing bitmap with a fresh checksum, a read-only
//! check judges every bitmap's checksum as it is.
//!
//! Parallel over groups; results are merged in group order.

use super::problem::{Code, Problem, ProblemList};
use super::state::State;
use crate::engine::{Control, Threads, par_map};
use crate::error::Result;
use crate::fs::bitmap;
use crate::fs::group_desc::{BG_BLOCK_UNINIT, BG_INODE_UNINIT};
use crate::fs::num::{Blk, Cluster, Group, Ino};
use crate::narrow;
use crate::volume::{ClusterMap, Fs};

/// Longest difference list kept in a problem's detail.
const DETAIL_CAP: usize = 4000;
/// Runs of differences kept: a run renders in 3 characters or more, so
/// `render` shows at most DETAIL_CAP / 3 + 1 runs and then only asks
/// whether another follows. With a difference on every other inode, all
/// runs of all groups took megabytes, for a detail of 4,000 characters.
const MAX_RUNS: usize = DETAIL_CAP / 3 + 2;

/// What one group contributes.
#[derive(Default)]
struct GroupOut {
    /// Differences as (first, last, in_use) runs, in increasing order.
    block_diffs: Vec<(u64, u64, bool)>,
    inode_diffs: Vec<(u64, u64, bool)>,
    problems: Vec<Problem>,
    free_blocks: u64,
    free_inodes: u64,
    block_csum_bad: bool,
    inode_csum_bad: bool,
    /// Marked BLOCK_UNINIT (INODE_UNINIT), yet these clusters (inodes)
    /// other than its own metadata are in use: the first
    /// `UNINIT_ASKS_SHOWN`, and how many there are.
    block_uninit_used: Vec<u64>,
    block_uninit_count: u64,
    inode_uninit_used: Vec<u64>,
    inode_uninit_count: u64,
}

/// Questions about one flagged group's used blocks (inodes) a read-only
/// check asks at most, over all groups: e2fsck -n asks once per cluster
/// (inode), as its "no" leaves the flag set, which on a large file system
/// is millions of lines; past this many, the check stops there instead.
const UNINIT_ASKS_SHOWN: u64 = 1 << 16;

/// The positions of the bits set in `word`, from `base`, onto `to` while
/// it holds fewer than `UNINIT_ASKS_SHOWN`; counted in `count`.
fn note_bits(to: &mut Vec<u64>, count: &mut u64, base: u64, mut word: u64) {
    *count += u64::from(word.count_ones());
    while word != 0 && (to.len() as u64) < UNINIT_ASKS_SHOWN {
        to.push(base + u64::from(word.trailing_zeros()));
        word &= word - 1;
    }
}

fn block_uninit(fs: &Fs, g: u32) -> bool {
    fs.uninit_bg() && fs.gd_at(Group(g)).has_flag(BG_BLOCK_UNINIT) && fs.gd_checksum_ok(g)
}

fn inode_uninit(fs: &Fs, g: u32) -> bool {
    fs.uninit_bg() && fs.gd_at(Group(g)).has_flag(BG_INODE_UNINIT) && fs.gd_checksum_ok(g)
}

/// Blocks the library marks for BLOCK_UNINIT groups (possibly in other
/// groups, with flex_bg), ORed into the bitmaps as read.
fn uninit_overlay(fs: &Fs) -> Option<ClusterMap> {
    fs.uninit_view(|g| block_uninit(fs, g))
}

/// ORs into group bitmap `buf` (`n` bits from `first`) the blocks the
/// library marks for BLOCK_UNINIT groups: e2fsck's bitmap as read carries
/// them wherever flex_bg put them, so its checksum is taken over them and
/// a rewrite stores them.
fn or_overlay(buf: &mut [u8], overlay: &ClusterMap, first: Cluster, n: u64) {
    let mut i = 0u64;
    while i < n {
        let take = (n - i).min(64);
        let mut w = overlay.word_at(first + i);
        if take < 64 {
            w &= (1u64 << take) - 1;
        }
        let start = bitmap::byte_of(i);
        for (k, b) in w.to_le_bytes().into_iter().enumerate() {
            if let Some(slot) = buf.get_mut(start + k) {
                *slot |= b;
            }
        }
        i += 64;
    }
}

/// 64 bits of an on-disk bitmap from bit `i` (a multiple of 8).
fn disk_word(bm: &[u8], i: u64) -> u64 {
    let mut w = [0u8; 8];
    let start = bitmap::byte_of(i);
    for (k, slot) in w.iter_mut().enumerate() {
        *slot = bm.get(start + k).copied().unwrap_or(0);
    }
    u64::from_le_bytes(w)
}

/// Appends the differing bits of `found ^ disk` (n bits from `base`) as
/// runs, up to `MAX_RUNS` (the last one kept may then be cut short: only
/// that it exists is used).
fn push_diffs(out: &mut Vec<(u64, u64, bool)>, base: u64, found: u64, disk: u64, n: u64) {
    if out.len() >= MAX_RUNS {
        return;
    }
    let mut diff = found ^ disk;
    if n < 64 {
        diff &= (1u64 << n) - 1;
    }
    while diff != 0 {
        let k = u64::from(diff.trailing_zeros());
        diff &= diff - 1;
        let idx = base + k;
        let used = found & (1 << k) != 0;
        let full = out.len() >= MAX_RUNS;
        match out.last_mut() {
            Some(last) if last.1 + 1 == idx && last.2 == used => last.1 = idx,
            _ if full => return,
            _ => out.push((idx, idx, used)),
        }
    }
}

fn check_group(
    fs: &Fs,
    state: &State,
    overlay: Option<&ClusterMap>,
    buf: &mut [u8],
    g: u32,
    by_disk: bool,
) -> GroupOut {
    let mut out = GroupOut::default();
    check_group_blocks(fs, state, overlay, buf, g, by_disk, &mut out);
    check_group_inodes(fs, state, buf, g, by_disk, &mut out);
    out
}

/// The group's block bitmap against the blocks found in use (and staged
/// by `overlay`), and its free blocks count.
fn check_group_blocks(
    fs: &Fs,
    state: &State,
    overlay: Option<&ClusterMap>,
    buf: &mut [u8],
    g: u32,
    by_disk: bool,
    out: &mut GroupOut,
) {
    let geo = &fs.geo;
    let gd = fs.gd_at(Group(g));
    let csum = fs.metadata_csum();
    // Bits of the block bitmap are clusters (blocks without bigalloc).
    let bits = geo.cluster_bits;
    let first = Blk(geo.group_first_block(g)).cluster(bits);
    let n = u64::from(geo.group_blocks(g)).div_ceil(1 << bits);
    let bpg = u64::from(geo.clusters_per_group());
    let uninit = block_uninit(fs, g);
    let mut have_disk = false;
    if !uninit {
        if !geo.block_in_fs(gd.block_bitmap) {
            // Pass 0 reported the location; the bitmap reads as empty.
            buf.fill(0);
            have_disk = true;
            // Left there (-n), e2fsck checks the empty bitmap against the
            // checksum; a repair moves it and writes both.
            if by_disk && csum && !gd.has_flag(BG_BLOCK_UNINIT) {
                out.block_csum_bad =
                    !gd.block_bitmap_csum_ok(&fs.sb, &buf[..geo.block_bitmap_bytes()]);
            }
        } else if let Err(e) = fs.read_block_into(gd.block_bitmap, buf) {
            out.problems.push(
                Problem::new(Code::BitmapUnreadable)
                    .group(Group(g))
                    .blk(Blk(gd.block_bitmap))
                    .detail(format!("block ({e})")),
            );
        } else {
            have_disk = true;
            if let Some(o) = overlay {
                or_overlay(buf, o, first, n);
            }
            // e2fsck skips the checksum of a group flagged uninitialised
            // even where a bad descriptor checksum makes it read the
            // bitmap.
            if csum && !gd.has_flag(BG_BLOCK_UNINIT) {
                out.block_csum_bad =
                    !gd.block_bitmap_csum_ok(&fs.sb, &buf[..geo.block_bitmap_bytes()]);
            }
        }
    } else {
        buf.fill(0);
        have_disk = true;
    }
    let mut used = state.block_used.count_range(first, first + n);
    if have_disk {
        let mut i = 0u64;
        let mut disk_used = 0;
        while i < n {
            let take = (n - i).min(64);
            let found = state.block_used.word_at(first + i);
            let mut disk = if uninit { 0 } else { disk_word(buf, i) };
            if let Some(o) = overlay {
                disk |= o.word_at(first + i);
            }
            if take < 64 {
                disk &= (1u64 << take) - 1;
            }
            disk_used += u64::from(disk.count_ones());
            if uninit {
                let mask = if take < 64 { (1u64 << take) - 1 } else { !0 };
                note_bits(
                    &mut out.block_uninit_used,
                    &mut out.block_uninit_count,
                    first.get() + i,
                    found & !disk & mask,
                );
            }
            push_diffs(&mut out.block_diffs, first.get() + i, found, disk, take);
            i += 64;
        }
        if by_disk {
            used = disk_used;
        }
        if !uninit
            && ((g + 1 == geo.groups && n < bpg && (n..bpg).any(|i| !bitmap::test(buf, i)))
                || !tail_set(buf, bpg))
        {
            out.problems
                .push(Problem::new(Code::BlockBitmapPadding).group(Group(g)));
        }
    }
    out.free_blocks = n - used;
    if u64::from(gd.free_blocks_count) != out.free_blocks {
        out.problems.push(
            Problem::new(Code::GroupFreeBlocks)
                .group(Group(g))
                .num(u64::from(gd.free_blocks_count))
                .num2(out.free_blocks),
        );
    }
}

/// The group's inode bitmap against the inodes found in use, its free
/// inodes and directories counts.
fn check_group_inodes(
    fs: &Fs,
    state: &State,
    buf: &mut [u8],
    g: u32,
    by_disk: bool,
    out: &mut GroupOut,
) {
    let geo = &fs.geo;
    let gd = fs.gd_at(Group(g));
    let csum = fs.metadata_csum();
    let ipg = u64::from(geo.inodes_per_group);
    let ino0 = u64::from(g) * ipg + 1;
    let uninit = inode_uninit(fs, g);
    let mut have_disk = false;
    if uninit || !geo.block_in_fs(gd.inode_bitmap) {
        // Uninitialised, or a location pass 0 reported: reads as empty.
        buf.fill(0);
        have_disk = true;
        // A location left wrong (-n): e2fsck checks the empty bitmap
        // against the checksum, as for the block bitmap.
        if by_disk && !uninit && csum && !gd.has_flag(BG_INODE_UNINIT) {
            out.inode_csum_bad = !gd.inode_bitmap_csum_ok(&fs.sb, &buf[..geo.inode_bitmap_bytes()]);
        }
    } else if let Err(e) = fs.read_block_into(gd.inode_bitmap, buf) {
        out.problems.push(
            Problem::new(Code::BitmapUnreadable)
                .group(Group(g))
                .blk(Blk(gd.inode_bitmap))
                .detail(format!("inode ({e})")),
        );
    } else {
        have_disk = true;
        if !tail_set(buf, ipg) {
            out.problems
                .push(Problem::new(Code::InodeBitmapPadding).group(Group(g)));
        }
        if csum && !gd.has_flag(BG_INODE_UNINIT) {
            out.inode_csum_bad = !gd.inode_bitmap_csum_ok(&fs.sb, &buf[..geo.inode_bitmap_bytes()]);
        }
        unread_partial_byte(buf, ipg);
    }
    let mut used = state.inode_used.count_range(ino0, ino0 + ipg);
    let mut dirs = state.inode_dir.count_range(ino0, ino0 + ipg);
    if have_disk {
        let mut i = 0u64;
        let (mut disk_used, mut disk_dirs) = (0, 0);
        while i < ipg {
            let take = (ipg - i).min(64);
            let found = state.inode_used.word_at(ino0 + i);
            let mut disk = disk_word(buf, i);
            if take < 64 {
                disk &= (1u64 << take) - 1;
            }
            disk_used += u64::from(disk.count_ones());
            disk_dirs += u64::from((disk & state.inode_dir.word_at(ino0 + i)).count_ones());
            if uninit {
                let mask = if take < 64 { (1u64 << take) - 1 } else { !0 };
                note_bits(
                    &mut out.inode_uninit_used,
                    &mut out.inode_uninit_count,
                    ino0 + i,
                    found & !disk & mask,
                );
            }
            push_diffs(&mut out.inode_diffs, ino0 + i, found, disk, take);
            i += 64;
        }
        if by_disk {
            (used, dirs) = (disk_used, disk_dirs);
        }
    }
    out.free_inodes = ipg - used;
    if u64::from(gd.free_inodes_count) != out.free_inodes {
        out.problems.push(
            Problem::new(Code::GroupFreeInodes)
                .group(Group(g))
                .num(u64::from(gd.free_inodes_count))
                .num2(out.free_inodes),
        );
    }
    if u64::from(gd.used_dirs_count) != dirs {
        out.problems.push(
            Problem::new(Code::GroupDirsCount)
                .group(Group(g))
                .num(u64::from(gd.used_dirs_count))
                .num2(dirs),
        );
    }
}

/// Clears the group's bits in the last byte of an inode bitmap that
/// `ipg` does not fill. libext2fs reads whole bytes of a group's bits
/// only (`ipg / 8`), so e2fsck sees those inodes free whatever the block
/// holds: judged otherwise, a repair would leave what e2fsck still finds
/// wrong (an inodes per group that is not a multiple of 8, which only a
/// damaged superblock has) and claim it fixed.
fn unread_partial_byte(buf: &mut [u8], ipg: u64) {
    if !ipg.is_multiple_of(8)
        && let Some(b) = buf.get_mut(bitmap::byte_of(ipg))
    {
        *b = 0;
    }
}

/// Are the bytes of a bitmap block past its group's `bits` all ones? The
/// library writes them so and e2fsck reports them otherwise.
fn tail_set(buf: &[u8], bits: u64) -> bool {
    let from = usize::try_from(bits / 8).unwrap_or(usize::MAX);
    buf.get(from..).is_none_or(|t| t.iter().all(|&b| b == 0xFF))
}

/// e2fsck's rendering: " -(a--b) +c", in increasing order.
fn render(diffs: &[(u64, u64, bool)]) -> String {
    let mut s = String::new();
    for &(a, b, used) in diffs {
        if s.len() > DETAIL_CAP {
            s.push_str(" ...");
            break;
        }
        let sign = if used { '+' } else { '-' };
        if a == b {
            s.push_str(&format!(" {sign}{a}"));
        } else {
            s.push_str(&format!(" {sign}({a}--{b})"));
        }
    }
    s
}

/// Joins runs that continue across a group boundary, up to `MAX_RUNS`.
fn merge_runs(all: &mut Vec<(u64, u64, bool)>, more: Vec<(u64, u64, bool)>) {
    for r in more {
        if all.len() >= MAX_RUNS {
            return;
        }
        match all.last_mut() {
            Some(last) if last.1 + 1 == r.0 && last.2 == r.2 => last.1 = r.1,
            _ => all.push(r),
        }
    }
}

// A group flagged uninitialised whose blocks (inodes) are in use:
// e2fsck meets it before that bitmap's differences. A repair clears the
// flag at the first; declined (-n), the flag stays and e2fsck asks again
// for every cluster (inode), then goes on as a repair would. Past
// `UNINIT_ASKS_SHOWN` questions a read-only check stops.
fn uninit_flag(g: u32, e2: u32) -> Problem {
    let what = if e2 == 0x050018 {
        "block(s) in use but the group is marked BLOCK_UNINIT"
    } else {
        "inode(s) in use but the group is marked INODE_UNINIT"
    };
    Problem::new(Code::GroupUninitFlags)
        .group(Group(g))
        .e2fsck(e2)
        .detail(what)
}

fn stop_at_uninit(mut problems: ProblemList, g: u32, e2: u32) -> ProblemList {
    problems.push(uninit_flag(g, e2));
    problems.push(Problem::new(Code::StoppedAtUninitGroup));
    problems
}

/// Each flagged group's used cluster (inode) named by `blk` (`ino`); a
/// repair asks once per group.
fn ask_uninit(
    problems: &mut ProblemList,
    fs: &Fs,
    flagged: &[(u32, Vec<u64>)],
    e2: u32,
    repairing: bool,
) {
    for (g, used) in flagged {
        if repairing {
            problems.push(uninit_flag(*g, e2));
            continue;
        }
        for &u in used {
            let p = uninit_flag(*g, e2);
            problems.push(if e2 == 0x050018 {
                p.blk(Blk(u << fs.geo.cluster_bits))
            } else {
                p.ino(Ino(narrow::sat32(u)))
            });
        }
    }
}

/// `repairing`: a repair follows (see the module's comment on counts).
pub fn run(
    fs: &Fs,
    state: &State,
    threads: Threads,
    ctl: &Control,
    repairing: bool,
) -> Result<ProblemList> {
    let overlay = uninit_overlay(fs);
    let bs = fs.block_size();
    let outs = par_map(
        fs.geo.groups as usize,
        threads,
        ctl,
        || vec![0u8; bs],
        |buf, g| {
            state.tick();
            check_group(
                fs,
                state,
                overlay.as_ref(),
                buf,
                narrow::sat32(g),
                !repairing,
            )
        },
    );
    let mut problems = ProblemList::new();
    let mut block_diffs = Vec::new();
    let mut inode_diffs = Vec::new();
    let mut group_probs = Vec::new();
    let (mut free_blocks, mut free_inodes) = (0u64, 0u64);
    let mut block_csum = Vec::new();
    let mut inode_csum = Vec::new();
    // (group, its used clusters or inodes as far as kept), and how many
    // in all.
    let (mut block_uninit, mut inode_uninit) = (Vec::new(), Vec::new());
    let (mut block_uninit_n, mut inode_uninit_n) = (0u64, 0u64);
    for (g, mut o) in outs.into_iter().enumerate() {
        if o.block_uninit_count > 0 {
            block_uninit_n += o.block_uninit_count;
            block_uninit.push((narrow::sat32(g), std::mem::take(&mut o.block_uninit_used)));
        }
        if o.inode_uninit_count > 0 {
            inode_uninit_n += o.inode_uninit_count;
            inode_uninit.push((narrow::sat32(g), std::mem::take(&mut o.inode_uninit_used)));
        }
        merge_runs(&mut block_diffs, o.block_diffs);
        merge_runs(&mut inode_diffs, o.inode_diffs);
        group_probs.extend(o.problems);
        free_blocks += o.free_blocks;
        free_inodes += o.free_inodes;
        if o.block_csum_bad {
            block_csum.push(narrow::sat32(g));
        }
        if o.inode_csum_bad {
            inode_csum.push(narrow::sat32(g));
        }
    }
    if !repairing && block_uninit_n > UNINIT_ASKS_SHOWN {
        return Ok(stop_at_uninit(problems, block_uninit[0].0, 0x050018));
    }
    ask_uninit(&mut problems, fs, &block_uninit, 0x050018, repairing);
    if !block_diffs.is_empty() {
        // Found per cluster, named by the cluster's first block.
        let bits = fs.geo.cluster_bits;
        for r in &mut block_diffs {
            r.0 <<= bits;
            r.1 <<= bits;
        }
        problems.push(Problem::new(Code::BlockBitmapDiff).detail(render(&block_diffs)));
    }
    // A bitmap that differs gets rewritten with a fresh checksum, so a
    // repair reports checksums only for bitmaps that are otherwise right.
    if block_diffs.is_empty() || !repairing {
        for g in block_csum {
            problems.push(Problem::new(Code::BlockBitmapChecksum).group(Group(g)));
        }
    }
    let (block_counts, inode_counts): (Vec<Problem>, Vec<Problem>) = group_probs
        .into_iter()
        .partition(|p| p.code == Code::GroupFreeBlocks);
    problems.extend(block_counts);
    // The superblock counts free blocks, the descriptors free clusters.
    let free_blocks = free_blocks << fs.geo.cluster_bits;
    if fs.sb.free_blocks_count != free_blocks {
        problems.push(
            Problem::new(Code::SuperFreeBlocks)
                .num(fs.sb.free_blocks_count)
                .num2(free_blocks),
        );
    }
    if !repairing && inode_uninit_n > UNINIT_ASKS_SHOWN {
        return Ok(stop_at_uninit(problems, inode_uninit[0].0, 0x050019));
    }
    ask_uninit(&mut problems, fs, &inode_uninit, 0x050019, repairing);
    if !inode_diffs.is_empty() {
        problems.push(Problem::new(Code::InodeBitmapDiff).detail(render(&inode_diffs)));
    }
    if inode_diffs.is_empty() || !repairing {
        for g in inode_csum {
            problems.push(Problem::new(Code::InodeBitmapChecksum).group(Group(g)));
        }
    }
    problems.extend(inode_counts);
    if u64::from(fs.sb.free_inodes_count) != free_inodes {
        problems.push(
            Problem::new(Code::SuperFreeInodes)
                .num(u64::from(fs.sb.free_inodes_count))
                .num2(free_inodes),
        );
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_runs_and_rendering() {
        let mut v = Vec::new();
        push_diffs(&mut v, 100, 0b0111, 0b0000, 64);
        push_diffs(&mut v, 164, 0, 0b11, 2);
        assert_eq!(v, vec![(100, 102, true), (164, 165, false)]);
        assert_eq!(render(&v), " +(100--102) -(164--165)");
        let mut all = vec![(1, 5, true)];
        merge_runs(&mut all, vec![(6, 7, true), (9, 9, false)]);
        assert_eq!(all, vec![(1, 7, true), (9, 9, false)]);
        assert!(bitmap::test(&[0x80], 7));
        assert!(!bitmap::test(&[], 7));
        assert_eq!(disk_word(&[1, 2], 0), 0x0201);
    }

    /// Runs kept only up to `MAX_RUNS` render as all of them did.
    #[test]
    fn capped_runs_render_the_same() {
        // Every run of every group, without a cap.
        let full = |groups: &[Vec<(u64, u64)>]| {
            let mut v: Vec<(u64, u64, bool)> = Vec::new();
            for g in groups {
                for &(w, bits) in g {
                    for k in 0..64 {
                        if bits & (1 << k) != 0 {
                            let idx = w + k;
                            match v.last_mut() {
                                Some(l) if l.1 + 1 == idx && l.2 => l.1 = idx,
                                _ => v.push((idx, idx, true)),
                            }
                        }
                    }
                }
            }
            v
        };
        // Groups of words: single bits (short runs), long runs across
        // group boundaries, big numbers (long runs of text).
        let cases: Vec<Vec<Vec<(u64, u64)>>> = vec![
            (0..40u64)
                .map(|g| {
                    (0..64)
                        .map(|w| (g * 4096 + w * 64, 0x5555_5555_5555_5555))
                        .collect()
                })
                .collect(),
            (0..40u64)
                .map(|g| (0..64).map(|w| (g * 4096 + w * 64, u64::MAX)).collect())
                .collect(),
            (0..3u64)
                .map(|g| {
                    (0..30)
                        .map(|w| ((1 << 40) + g * 1920 + w * 64, 0x0F0F))
                        .collect()
                })
                .collect(),
            vec![vec![(0, 0b1010)]; 1],
        ];
        for (c, groups) in cases.iter().enumerate() {
            let mut all = Vec::new();
            for g in groups {
                let mut out = Vec::new();
                for &(w, bits) in g {
                    push_diffs(&mut out, w, bits, 0, 64);
                }
                assert!(out.len() <= MAX_RUNS);
                merge_runs(&mut all, out);
            }
            assert!(all.len() <= MAX_RUNS);
            assert_eq!(render(&all), render(&full(groups)), "case {c}");
        }
    }
}
