//! Pass 0: find a usable superblock (the primary, or a backup as e2fsck
//! does), validate it and the group descriptors.
//!
//! Relies on nothing; everything later relies on the geometry checked here.

use super::Options;
use super::problem::{Code, Problem};
use crate::engine::AtomicBitmap;
use crate::error::Result;
use crate::fs::geometry::Geometry;
use crate::fs::group_desc::{BG_BLOCK_UNINIT, BG_INODE_UNINIT, GroupDesc};
use crate::fs::num::{Blk, Group, Ino};
use crate::fs::superblock::{
    self, EXT2_MAGIC, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE, Superblock, incompat, ro_compat,
};
use crate::io::Device;
use crate::narrow;
use crate::volume::Fs;

pub enum Opened {
    Fs(Box<Fs>, Vec<Problem>),
    /// No usable superblock, or features we cannot check: stop.
    Fatal(Vec<Problem>),
}

/// A superblock that passed the shape checks, with its descriptors.
struct Loaded {
    sb: Superblock,
    geo: Geometry,
    sb_block: u64,
    gds: Vec<GroupDesc>,
    gd_raw: Vec<u8>,
    /// A value e2fsck's check of the superblock stops at, found while
    /// reading the primary despite its errors: judged after the journal
    /// (`open`).
    value_stop: Option<Problem>,
}

/// The backup superblock taken for a refused primary: why it was
/// refused, and e2fsck's code for the refusal (the superblock itself,
/// 0x000044, or its group descriptors, 0x000045).
fn used_backup(b: &Loaded, why: &str, e2: u32) -> Problem {
    Problem::new(Code::SbUsedBackup)
        .blk(Blk(b.sb_block))
        .detail(format!("the primary superblock is damaged: {why}"))
        .e2fsck(e2)
}

/// Why libext2fs refuses to open a superblock. What e2fsck does next
/// depends on which refusal it is, and the library looks in this order:
/// the magic number, the checksum, the revision, then the values.
enum Refusal {
    /// No ext2 magic number where the superblock should be.
    Magic,
    /// metadata_csum, and the stored checksum is not the computed one.
    Checksum,
    /// A revision newer than any libext2fs knows.
    Revision(u32),
    /// A 64bit descriptor size libext2fs refuses.
    DescSize(u32),
    /// A value out of the range libext2fs accepts ("corrupt superblock").
    Corrupt(String),
    /// Anything else: unreadable, or its block size is not the one asked.
    Other(String),
}

impl Refusal {
    fn text(&self) -> String {
        match self {
            Refusal::Magic => "bad magic number in superblock".into(),
            Refusal::Checksum => "its checksum does not match".into(),
            Refusal::Revision(rev) => format!(
                "revision level {rev} is newer than any this checker knows \
                 (or the superblock is damaged)"
            ),
            Refusal::DescSize(size) => format!("group descriptor size {size} is invalid"),
            Refusal::Corrupt(e) | Refusal::Other(e) => e.clone(),
        }
    }

    /// Does e2fsck look for a backup superblock after this refusal of the
    /// primary? Only after these three; any other stops it.
    fn tries_backup(&self) -> bool {
        matches!(
            self,
            Refusal::Magic | Refusal::Checksum | Refusal::Corrupt(_)
        )
    }
}

/// A 64bit descriptor size libext2fs refuses, judged where it judges it:
/// after the block and inode sizes (whose refusal is a corrupt superblock).
fn bad_desc_size(sb: &Superblock) -> Option<u32> {
    let bs = sb.block_size()?;
    let inode = sb.inode_size();
    if inode < 128 || inode > bs || !inode.is_power_of_two() || !sb.is_64bit() {
        return None;
    }
    let size = sb.desc_size();
    (!(64..=1024).contains(&size) || !size.is_power_of_two()).then_some(size)
}

fn load_at(
    dev: &Device,
    offset: u64,
    want_bs: Option<u32>,
) -> std::result::Result<Loaded, Refusal> {
    load(dev, offset, want_bs, false)
}

/// `despite`: as libext2fs told to overlook superblock errors, which
/// skips its check of the descriptor size and takes a wrong inodes count.
fn load(
    dev: &Device,
    offset: u64,
    want_bs: Option<u32>,
    despite: bool,
) -> std::result::Result<Loaded, Refusal> {
    let mut b = vec![0u8; SUPERBLOCK_SIZE];
    dev.read_at(offset, &mut b)
        .map_err(|e| Refusal::Other(e.to_string()))?;
    let sb = Superblock::parse(&b);
    if sb.magic != EXT2_MAGIC {
        return Err(Refusal::Magic);
    }
    if !csum_ok(&sb) {
        return Err(Refusal::Checksum);
    }
    if sb.rev_level > 1 {
        return Err(Refusal::Revision(sb.rev_level));
    }
    if let Some(size) = bad_desc_size(&sb).filter(|_| !despite) {
        return Err(Refusal::DescSize(size));
    }
    let geo = if despite {
        Geometry::despite_inodes_count(&sb)
    } else {
        Geometry::new(&sb)
    };
    let geo = geo.map_err(Refusal::Corrupt)?;
    if want_bs.is_some_and(|bs| bs != geo.block_size) {
        return Err(Refusal::Other("block size does not match".into()));
    }
    let sb_block = offset / u64::from(geo.block_size);
    // libext2fs reads the primary's table after the first data block
    // (block 1 with 1 KiB blocks), not after the superblock: a first data
    // block written over moves the table it reads (seed fz36, damages
    // 13960, 7446: 1 with 4 KiB blocks, the table read from block 2).
    let group_block = match geo.first_data_block {
        _ if offset != SUPERBLOCK_OFFSET => sb_block,
        0 if geo.block_size == 1024 => 1,
        fdb => fdb,
    };
    let (gds, gd_raw) = read_descriptors(dev, &geo, group_block).map_err(Refusal::Other)?;
    Ok(Loaded {
        sb,
        geo,
        sb_block,
        gds,
        gd_raw,
        value_stop: None,
    })
}

fn read_descriptors(
    dev: &Device,
    geo: &Geometry,
    sb_block: u64,
) -> std::result::Result<(Vec<GroupDesc>, Vec<u8>), String> {
    let bs = geo.block_len();
    let total = geo.desc_blocks as usize * bs;
    // desc_blocks is bounded by the group count, itself bounded by the
    // device (checked below), so this allocation is justified by the image.
    if total as u64 > dev.size() {
        return Err("group descriptor table larger than the device".into());
    }
    let mut raw = vec![0u8; total];
    for i in 0..geo.desc_blocks {
        let blk = geo.desc_block_location(sb_block, i);
        let off = blk
            .checked_mul(bs as u64)
            .ok_or_else(|| "descriptor block out of range".to_string())?;
        let chunk = &mut raw[i as usize * bs..(i as usize + 1) * bs];
        dev.read_at(off, chunk)
            .map_err(|e| format!("cannot read group descriptors: {e}"))?;
    }
    let ds = geo.desc_len();
    raw.truncate(geo.groups as usize * ds);
    let gds = raw.chunks(ds).map(GroupDesc::parse).collect();
    Ok((gds, raw))
}

/// Does a metadata_csum superblock carry its checksum? libext2fs refuses
/// one that does not, so e2fsck tries the backups first and comes back to
/// this primary (reporting the checksum) only when none is usable: a
/// damaged UUID, which seeds every other checksum, must not make the
/// whole file system look corrupt.
fn csum_ok(sb: &Superblock) -> bool {
    !sb.metadata_csum() || sb.compute_checksum() == sb.checksum
}

/// Do two descriptor tables put every group's bitmaps and inode table
/// at the same blocks?
fn same_places(a: &[GroupDesc], b: &[GroupDesc]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            (x.block_bitmap, x.inode_bitmap, x.inode_table)
                == (y.block_bitmap, y.inode_bitmap, y.inode_table)
        })
}

/// The primary refused for its checksum with no usable backup: fatal, as
/// e2fsck's open (its refusal, then the superblock judged unusable).
fn checksum_refusal() -> Problem {
    Problem::new(Code::SbCorrupt)
        .detail(
            "the primary superblock's checksum does not match, \
             and no backup superblock is usable",
        )
        .num(1)
        .e2fsck(0x000044)
}

/// The primary superblock as it is on the device, unjudged.
fn primary_superblock(dev: &Device) -> Option<Superblock> {
    let mut b = vec![0u8; SUPERBLOCK_SIZE];
    dev.read_at(SUPERBLOCK_OFFSET, &mut b).ok()?;
    Some(Superblock::parse(&b))
}

/// Where e2fsck looks for a backup once its library refused the primary
/// superblock (whose blocks per group it then does not trust): group 1
/// of a file system with a bitmap's worth of blocks per group, for each
/// block size in turn, the first holding the magic number and that block
/// size; 8193 with 1 KiB blocks when none does. A block size given with
/// -B is taken as it is.
fn backup_probe(dev: &Device, blocksize: Option<u32>) -> (u64, u32) {
    let group1 = |bs: u32| u64::from(bs) * 8 + u64::from(bs == 1024);
    if let Some(bs) = blocksize {
        return (group1(bs), bs);
    }
    (0..=6)
        .map(|l| 1024u32 << l)
        .find(|&bs| {
            let mut b = vec![0u8; SUPERBLOCK_SIZE];
            let sb = group1(bs)
                .checked_mul(u64::from(bs))
                .is_some_and(|off| dev.read_at(off, &mut b).is_ok())
                .then(|| Superblock::parse(&b));
            sb.is_some_and(|sb| sb.magic == EXT2_MAGIC && sb.block_size() == Some(bs))
        })
        .map_or((8193, 1024), |bs| (group1(bs), bs))
}

/// The superblock named with -b, tried with each block size (or the one
/// given); None: none is usable (a fatal problem pushed).
fn load_named(dev: &Device, sbn: u64, opts: &Options, probs: &mut Vec<Problem>) -> Option<Loaded> {
    let sizes: Vec<u32> = match opts.blocksize {
        Some(bs) => vec![bs],
        None => (0..=6).map(|l| 1024u32 << l).collect(),
    };
    let mut found = None;
    let mut last_err = String::from("no block size matched");
    for bs in sizes {
        let Some(off) = sbn.checked_mul(u64::from(bs)) else {
            continue;
        };
        match load_at(dev, off, Some(bs)) {
            Ok(l) => {
                found = Some(l);
                break;
            }
            Err(e) => last_err = e.text(),
        }
    }
    Some(match found {
        // e2fsck writes a superblock named with -b back as the primary
        // (it marks it dirty when it may write): the repair restores
        // the primary copies from it as from a backup it found itself.
        Some(l)
            if opts.repairing && l.sb_block != SUPERBLOCK_OFFSET / u64::from(l.geo.block_size) =>
        {
            let why = match load_at(dev, SUPERBLOCK_OFFSET, None) {
                Ok(_) => "named with -b".to_string(),
                Err(e) => format!(
                    "named with -b; the primary superblock is damaged: {}",
                    e.text()
                ),
            };
            probs.push(
                Problem::new(Code::SbUsedBackup)
                    .blk(Blk(l.sb_block))
                    .detail(why),
            );
            l
        }
        Some(l) => l,
        None => {
            probs.push(
                Problem::new(Code::SbCorrupt).detail(format!("superblock {sbn}: {last_err}")),
            );
            return None;
        }
    })
}

/// The primary superblock, or a backup where e2fsck looks for one; None:
/// no usable one (a fatal problem pushed).
fn load_found(dev: &Device, opts: &Options, probs: &mut Vec<Problem>) -> Option<Loaded> {
    let refusal = match load_at(dev, SUPERBLOCK_OFFSET, None) {
        Ok(l) if desc_problems(&l.sb, &l.geo, &l.gds).is_empty() => return Some(l),
        // libext2fs refuses incompat features it does not know before it
        // reads the descriptors, and e2fsck looks for no backup then: the
        // primary stands, for `open` to stop on its features.
        Ok(l) if l.sb.feature_incompat & !superblock::SUPPORTED_INCOMPAT != 0 => return Some(l),
        Ok(l) => return Some(descriptors_refused(dev, l, probs)),
        Err(r) => r,
    };
    // libext2fs refuses unknown incompat features (and ro_compat ones
    // when it may write) before it judges any value, and e2fsck looks for
    // no backup then (seed fz36, damage 11814: features and a flex group
    // size written over together).
    if matches!(refusal, Refusal::DescSize(_) | Refusal::Corrupt(_))
        && let Some(p) = primary_superblock(dev)
            .and_then(|sb| unsupported_features(&sb, opts))
            .filter(|p| p.args().num == Some(0))
    {
        probs.push(p);
        return None;
    }
    if refusal.tries_backup() {
        let (blk, bs) = backup_probe(dev, opts.blocksize);
        // e2fsck takes the backup if its library opens it, whatever its
        // descriptors (the rest of pass 0 judges them); if not, it stops.
        let backup = blk
            .checked_mul(u64::from(bs))
            .and_then(|off| load_at(dev, off, Some(bs)).ok());
        if let Some(b) = backup {
            probs.push(used_backup(&b, &refusal.text(), 0x000044));
            return Some(b);
        }
    }
    primary_refused(dev, opts, &refusal, probs)
}

/// Where e2fsck looks for group 1's backup superblock once the primary's
/// descriptors look bad: one group past the first data block the block
/// size calls for, not the primary's own (seed fz36, damages 339, 2397,
/// 3792: a first data block written over is no reason to look
/// elsewhere).
fn group1_backup(geo: &Geometry) -> u64 {
    let first = u64::from(geo.block_size == 1024 && geo.cluster_bits == 0);
    first + u64::from(geo.blocks_per_group)
}

/// The primary opened but its descriptors look bad: e2fsck then trusts
/// its geometry and tries the backup at the start of group 1 alone,
/// unless there is no group 1. One that puts every group's metadata
/// where the primary does is passed over: it changes nothing, and once a
/// repair restored the primary from it, taking it again would restore it
/// again round after round.
fn descriptors_refused(dev: &Device, p: Loaded, probs: &mut Vec<Problem>) -> Loaded {
    let why = "group descriptors look bad";
    let bs = p.geo.block_size;
    let backup = (p.geo.groups > 1)
        .then(|| group1_backup(&p.geo).checked_mul(u64::from(bs)))
        .flatten()
        .and_then(|off| load_at(dev, off, Some(bs)).ok())
        .filter(|b| {
            desc_problems(&b.sb, &b.geo, &b.gds).is_empty() || !same_places(&p.gds, &b.gds)
        });
    match backup {
        Some(b) => {
            probs.push(used_backup(&b, why, 0x000045));
            b
        }
        None => {
            probs.push(Problem::new(Code::GdRejectedNoBackup).detail(why));
            p
        }
    }
}

/// The primary refused and no backup taken: e2fsck stops, unless its
/// library opens the primary when told to overlook a wrong inodes count
/// or first meta group (after a refusal of a value or of the descriptor
/// size), which pass 0 then reports. None: stopped (a fatal problem
/// pushed).
fn primary_refused(
    dev: &Device,
    opts: &Options,
    refusal: &Refusal,
    probs: &mut Vec<Problem>,
) -> Option<Loaded> {
    // A wrong checksum says some field of the superblock is not what the
    // kernel wrote, but not which: e2fsck logs its library's refusal,
    // judges the superblock unusable and stops in every mode. Checking on
    // would bless whatever field was damaged, and a repair would seal it
    // with a fresh checksum.
    if matches!(refusal, Refusal::Checksum) {
        probs.push(checksum_refusal());
        return None;
    }
    if let Refusal::DescSize(size) = refusal
        && *size != 0
        && let Some(b) = desc_size_backup(dev)
    {
        probs.push(used_backup(&b, &refusal.text(), 0x000045));
        return Some(b);
    }
    let despite = matches!(refusal, Refusal::Corrupt(_) | Refusal::DescSize(_))
        .then(|| load(dev, SUPERBLOCK_OFFSET, None, true).ok())
        .flatten()
        .filter(|l| {
            l.sb.inodes_count != l.geo.inodes_count
                || l.geo.first_meta_bg_too_big()
                || bad_desc_size(&l.sb).is_some()
        });
    if let Some(l) = despite {
        return Some(match despite_backup(dev, &l, refusal) {
            Some(b) => {
                probs.push(b.1);
                b.0
            }
            None => despite_errors(l, opts, probs)?,
        });
    }
    let e = refusal.text();
    let e = match other_fs_signature(dev) {
        Some(kind) => format!("{e} (the device holds {kind})"),
        None => e,
    };
    // e2fsck logs each refusal that sends it to a backup: a second one
    // after a refused value, as it tries again overlooking the
    // superblock's errors and is refused again.
    let tries = match refusal {
        Refusal::Magic => 1,
        Refusal::Corrupt(_) => 2,
        _ => 0,
    };
    probs.push(
        Problem::new(Code::SbCorrupt)
            .detail(e)
            .num(tries)
            .e2fsck(0x000044),
    );
    None
}

/// A primary refused for a descriptor size other than 0: read despite
/// its errors, libext2fs overlooks the size, and its check of the
/// descriptors refuses it instead, which sends e2fsck to the backup
/// where the primary puts group 1 (none with a single group).
fn desc_size_backup(dev: &Device) -> Option<Loaded> {
    let mut b = vec![0u8; SUPERBLOCK_SIZE];
    dev.read_at(SUPERBLOCK_OFFSET, &mut b).ok()?;
    let sb = Superblock::parse(&b);
    let bs = sb.block_size()?;
    let (fdb, bpg) = (
        u64::from(sb.first_data_block),
        u64::from(sb.blocks_per_group),
    );
    if bpg == 0 || sb.blocks_count.saturating_sub(fdb).div_ceil(bpg) < 2 {
        return None;
    }
    let off = (fdb + bpg).checked_mul(u64::from(bs))?;
    load(dev, off, Some(bs), true).ok()
}

/// The primary read despite its errors, and its descriptors look bad:
/// e2fsck, overlooking superblock errors still, takes the backup where
/// that primary puts group 1 if it opens (no backup with a single group),
/// with the problem saying so (the primary refused twice).
fn despite_backup(dev: &Device, p: &Loaded, refusal: &Refusal) -> Option<(Loaded, Problem)> {
    if p.geo.groups < 2 || desc_problems(&p.sb, &p.geo, &p.gds).is_empty() {
        return None;
    }
    let bs = p.geo.block_size;
    let off = group1_backup(&p.geo).checked_mul(u64::from(bs))?;
    let b = load(dev, off, Some(bs), true).ok()?;
    let why = format!(
        "the primary superblock is damaged: {}; read despite it, \
         its group descriptors look bad",
        refusal.text()
    );
    let prob = Problem::new(Code::SbUsedBackup)
        .blk(Blk(b.sb_block))
        .detail(why)
        .num(2)
        .e2fsck(0x000045);
    Some((b, prob))
}

/// The primary read despite its errors: e2fsck's check of the
/// superblock's values comes first, then the inodes count and the first
/// meta group, then the first inode (judged against the count pass 0
/// goes on with, in `open`). None: stopped (a fatal problem pushed).
fn despite_errors(mut l: Loaded, opts: &Options, probs: &mut Vec<Problem>) -> Option<Loaded> {
    let value = corrupt_value(&l.sb, &l.geo).filter(|&(field, _)| field != "first_ino");
    if let Some((field, value)) = value {
        l.value_stop = Some(
            Problem::new(Code::SbCorrupt)
                .detail(format!("{field} = {value}"))
                .e2fsck(0x00000B),
        );
        return Some(l);
    }
    if l.geo.first_meta_bg_too_big() {
        // e2fsck -n declines and checks on with the descriptors where
        // the field can put them.
        probs.push(
            Problem::new(Code::SbFirstMetaBg)
                .num(u64::from(l.sb.first_meta_bg))
                .num2(u64::from(l.geo.desc_blocks)),
        );
    }
    if l.sb.inodes_count == l.geo.inodes_count {
        return Some(bitmap_too_small(l));
    }
    probs.push(
        Problem::new(Code::SbInodesCount)
            .num(u64::from(l.sb.inodes_count))
            .num2(u64::from(l.geo.inodes_count)),
    );
    if !opts.repairing {
        // e2fsck -n answers no and stops there.
        probs.push(
            Problem::new(Code::SbCorrupt)
                .detail(format!("inodes_count = {}", l.sb.inodes_count))
                .e2fsck(0x00000B),
        );
        return None;
    }
    Some(bitmap_too_small(l))
}

/// More inodes per group than one bitmap block holds, which libext2fs
/// overlooks with the superblock's errors: e2fsck runs its passes on
/// such a group and gives up when it reads the bitmaps. Stop before the
/// passes instead (after the journal, as a value of the superblock).
fn bitmap_too_small(mut l: Loaded) -> Loaded {
    let ipg = l.geo.inodes_per_group;
    if u64::from(ipg) > 8 * u64::from(l.geo.block_size) && l.value_stop.is_none() {
        l.value_stop = Some(Problem::new(Code::SbCorrupt).detail(format!(
            "inodes_per_group = {ipg}, more than a bitmap block holds"
        )));
    }
    l
}

pub fn open(dev: Device, opts: &Options) -> Result<Opened> {
    let mut probs = Vec::new();
    let loaded = match opts.superblock {
        Some(sbn) => load_named(&dev, sbn, opts, &mut probs),
        None => load_found(&dev, opts, &mut probs),
    };
    let Some(loaded) = loaded else {
        return Ok(Opened::Fatal(probs));
    };
    let Loaded {
        sb,
        geo,
        sb_block,
        mut gds,
        gd_raw,
        value_stop,
    } = loaded;
    if let Some(stop) = value_stop {
        let fs = Fs {
            dev,
            csum_seed: sb.csum_seed(),
            sb,
            sb_block,
            geo,
            gds,
            gd_raw,
            clock: opts.clock,
        };
        return Ok(Opened::Fatal(journal_first(&fs, opts, probs, stop)));
    }
    if sb_block != SUPERBLOCK_OFFSET / u64::from(geo.block_size) && sb.group_desc_csum() {
        // A backup's descriptors are as old as the backup: the groups it
        // calls uninitialised may have been used since. e2fsck's library
        // reads every group as initialised then (its bitmaps and whole
        // inode table are checked), so a check through a backup finds
        // the bitmaps of groups that were never written wrong.
        for d in &mut gds {
            d.flags &=
                !(crate::fs::group_desc::BG_BLOCK_UNINIT | crate::fs::group_desc::BG_INODE_UNINIT);
            d.itable_unused = 0;
        }
    }

    if sb.metadata_csum() && sb.checksum_type != superblock::CSUM_TYPE_CRC32C {
        // libext2fs will not open a file system whose checksums it cannot
        // compute, and e2fsck does not look for a backup then.
        probs.push(
            Problem::new(Code::SbCorrupt)
                .detail(format!("unknown checksum type {}", sb.checksum_type)),
        );
        return Ok(Opened::Fatal(probs));
    }

    if let Some(p) = unsupported_features(&sb, opts) {
        probs.push(p);
        return Ok(Opened::Fatal(probs));
    }
    // The library opened it (no refusal): e2fsck's own range checks find
    // a value out of range, or a first data block its block size denies.
    let should_be = u32::from(geo.block_size == 1024 && geo.cluster_bits == 0);
    let value_stop = if let Some((field, value)) = corrupt_value(&sb, &geo) {
        Some(
            Problem::new(Code::SbCorrupt)
                .detail(format!(
                    "corruption found in superblock ({field} = {value})"
                ))
                .num(0)
                .e2fsck(0x00000B),
        )
    } else {
        (sb.first_data_block != should_be).then(|| {
            Problem::new(Code::SbFirstDataBlock)
                .num(u64::from(sb.first_data_block))
                .num2(u64::from(should_be))
        })
    };
    let csum_seed = sb.csum_seed();
    let fs = Fs {
        dev,
        sb,
        sb_block,
        geo,
        gds,
        gd_raw,
        csum_seed,
        clock: opts.clock,
    };
    if let Some(stop) = value_stop {
        return Ok(Opened::Fatal(journal_first(&fs, opts, probs, stop)));
    }
    Ok(Opened::Fs(Box::new(fs), probs))
}

/// Features this checker does not know, as the problem that stops the
/// check; None when every feature is known.
fn unsupported_features(sb: &Superblock, opts: &Options) -> Option<Problem> {
    let bad_compat = sb.feature_compat & !superblock::SUPPORTED_COMPAT;
    let bad_incompat = sb.feature_incompat & !superblock::SUPPORTED_INCOMPAT;
    let bad_ro = sb.feature_ro_compat & !superblock::SUPPORTED_RO_COMPAT;
    let mut names = Vec::new();
    for bit in (0..32).map(|i| 1u32 << i) {
        if bad_compat & bit != 0 {
            names.push(format!(
                "{} (compat 0x{bit:x})",
                superblock::compat_name(bit)
            ));
        }
        if bad_incompat & bit != 0 {
            names.push(format!(
                "{} (incompat 0x{bit:x})",
                superblock::incompat_name(bit)
            ));
        }
        if bad_ro & bit != 0 {
            names.push(format!(
                "{} (ro_compat 0x{bit:x})",
                superblock::ro_compat_name(bit)
            ));
        }
    }
    // Names of casefolded directories cannot be compared, nor their
    // hashes computed, in an encoding nobody defined (e2fsck stops too).
    if sb.feature_incompat & incompat::CASEFOLD != 0
        && sb.encoding != crate::fs::casefold::ENCODING_UTF8_12_1
    {
        names.push(format!("casefold with unknown encoding {}", sb.encoding));
    }
    if names.is_empty() {
        return None;
    }
    // libext2fs refuses unknown incompat features, and unknown ro_compat
    // ones when it opens to write; past that, e2fsck's own feature check
    // refuses, on a file system it has not yet judged valid
    // (`e2fsck_map::aborts_unjudged`): `num` 1 says which.
    let library_refuses = bad_incompat != 0 || (bad_ro != 0 && opts.repairing);
    Some(
        Problem::new(Code::SbFeatureUnsupported)
            .detail(names.join(", "))
            .num(u64::from(!library_refuses)),
    )
}

/// `stop`, a superblock value e2fsck's check of the superblock stops
/// at, after what its journal check finds first: an external journal it
/// cannot find or use, or an internal one it finds unusable and may not
/// clear, stops it before (seed fz36, damages 560, 637, 640, 1125, 1855:
/// block counts and first data blocks that leave the journal's blocks
/// outside; 1522: a journal UUID written over). The problems to report.
fn journal_first(fs: &Fs, opts: &Options, mut probs: Vec<Problem>, stop: Problem) -> Vec<Problem> {
    let external = super::journal::external_problems(fs, opts.journal_device.as_deref());
    if !external.is_empty() {
        probs.extend(external);
        return probs;
    }
    let journal = super::journal::check(fs, opts.repairing);
    if journal.iter().any(|p| p.code == Code::JournalCannotProceed) {
        probs.extend(journal);
    } else {
        probs.push(stop);
    }
    probs
}

/// The first superblock value out of the range e2fsck's check of the
/// superblock accepts, with the field's name. e2fsck makes this check on
/// the superblock it opened (libext2fs' own, narrower checks, which send
/// it to a backup, are `Geometry`'s), and a value out of range stops it
/// ("Corruption found in superblock", exit 8) without trying a backup,
/// with -y too: so does pass 0, before anything is written.
fn corrupt_value(sb: &Superblock, geo: &Geometry) -> Option<(&'static str, u64)> {
    let bs = u64::from(geo.block_size);
    let ratio = 1u64 << geo.cluster_bits;
    // libext2fs' limits: groups of at most 2^16 - 8 clusters, of at most
    // 2^16 inodes less one block of them.
    let inodes_per_block = bs / u64::from(geo.inode_size);
    let max_clusters = (1u64 << 16) - 8;
    let cpg_max = (8 * bs).min(max_clusters);
    let bpg_max = (8 * bs * ratio).min(max_clusters * ratio);
    let bpg = u64::from(sb.blocks_per_group);
    let ipg_max = (inodes_per_block * bpg.saturating_sub(4)).min((1 << 16) - inodes_per_block);
    let blks_max = if sb.is_64bit() {
        (1u64 << 48) - 1
    } else {
        u64::from(u32::MAX)
    };
    let out = |v: u64, lo: u64, hi: u64| v < lo || v > hi;
    let desc = u64::from(sb.desc_size);
    let checks: [(&'static str, u64, bool); 11] = [
        (
            "inodes_count",
            u64::from(sb.inodes_count),
            sb.inodes_count == 0,
        ),
        (
            "blocks_count",
            sb.blocks_count,
            out(sb.blocks_count, 1, blks_max),
        ),
        (
            "first_data_block",
            u64::from(sb.first_data_block),
            u64::from(sb.first_data_block) > sb.blocks_count,
        ),
        (
            "log_block_size",
            u64::from(sb.log_block_size),
            sb.log_block_size > 6,
        ),
        (
            "log_cluster_size",
            u64::from(sb.log_cluster_size),
            sb.log_cluster_size < sb.log_block_size || sb.log_cluster_size > 19,
        ),
        (
            "clusters_per_group",
            u64::from(sb.clusters_per_group),
            out(u64::from(sb.clusters_per_group), 8, cpg_max),
        ),
        ("blocks_per_group", bpg, out(bpg, 8, bpg_max)),
        (
            "inodes_per_group",
            u64::from(sb.inodes_per_group),
            out(u64::from(sb.inodes_per_group), inodes_per_block, ipg_max),
        ),
        (
            "r_blocks_count",
            sb.r_blocks_count,
            sb.r_blocks_count > sb.blocks_count / 2,
        ),
        (
            "reserved_gdt_blocks",
            u64::from(sb.reserved_gdt_blocks),
            u64::from(sb.reserved_gdt_blocks) > bs / 4,
        ),
        // The raw field, whatever the 64bit feature says.
        (
            "desc_size",
            desc,
            desc > 1024 || desc & desc.wrapping_sub(1) != 0,
        ),
    ];
    if let Some(&(field, value, _)) = checks.iter().find(|c| c.2) {
        return Some((field, value));
    }
    // Checked against the inodes count pass 0 goes on with (e2fsck fixes
    // a wrong count before it looks at first_ino).
    let first = sb.first_ino();
    if sb.rev_level > 0 && (first < Ino::GOOD_OLD_FIRST.get() || first > geo.inodes_count) {
        return Some(("first_ino", u64::from(first)));
    }
    None
}

/// Names a well-known non-ext file system found on the device, so that
/// "bad magic" on the wrong device is not mistaken for corruption.
fn other_fs_signature(dev: &Device) -> Option<&'static str> {
    let mut head = [0u8; 4];
    dev.read_at(0, &mut head).ok()?;
    if &head == b"XFSB" {
        return Some("an XFS file system");
    }
    let mut btrfs = [0u8; 8];
    if dev.read_at(0x10040, &mut btrfs).is_ok() && &btrfs == b"_BHRfS_M" {
        return Some("a btrfs file system");
    }
    let mut swap = [0u8; 10];
    if dev.read_at(4096 - 10, &mut swap).is_ok()
        && (&swap == b"SWAPSPACE2" || &swap == b"SWAP-SPACE")
    {
        return Some("swap space");
    }
    None
}

/// Without `-f`, whether a file system marked clean may go unchecked:
/// `Some(note)` when it may, the note being what e2fsck adds to its
/// "clean" line when the next forced check is near (empty otherwise);
/// None when it must be checked (a journal or orphans to process, or a
/// [`forced_reason`]).
/// Is `code` one of the group descriptor problems e2fsck's superblock
/// check finds group by group, each failing the file system's validity
/// (so that a check without -f does not skip it)?
pub fn descriptor_fails_validity(code: Code) -> bool {
    matches!(
        code,
        Code::GdChecksum
            | Code::GdUninitWithoutCsum
            | Code::GdBlockUninitLastGroup
            | Code::GdFreeBlocksInvalid
            | Code::GdFreeInodesInvalid
            | Code::GdItableUnused
    )
}

pub fn clean_skip_reason(fs: &Fs, opts: &Options) -> Option<String> {
    let sb = &fs.sb;
    if sb.has_incompat(incompat::RECOVER) || sb.last_orphan != 0 {
        return None;
    }
    if !opts.journal_only && forced_reason(fs, opts).is_some() {
        return None;
    }
    // Mounts left before the count forces a check; e2fsck mentions the
    // last five.
    let left = if sb.max_mnt_count > 0 {
        (i32::from(sb.max_mnt_count) - i32::from(sb.mnt_count)).max(1)
    } else {
        i32::MAX
    };
    Some(match left {
        1 => " (check after next mount)".to_string(),
        2..=5 => format!(" (check in {left} mounts)"),
        _ => String::new(),
    })
}

/// Why a check without `-f` cannot skip a file system: e2fsck's reasons,
/// tested in its order, worded for the line "NAME: checked because it REASON.".
/// The check interval counts only with a clock to trust (not one set
/// broken in e2fsck.conf, nor before 2010), and a last-check time ahead
/// of the clock is taken back by the fudge first, as e2fsck does.
pub fn forced_reason(fs: &Fs, opts: &Options) -> Option<String> {
    let sb = &fs.sb;
    let now = opts.clock.now();
    let broken_clock = opts.time_trust.broken_clock || opts.clock.insane();
    let lastcheck = if sb.lastcheck > now {
        sb.lastcheck.saturating_sub(opts.time_trust.fudge)
    } else {
        sb.lastcheck
    };
    // An error the journal recorded counts as the error state: e2fsck
    // moves it there before deciding.
    if sb.state & superblock::STATE_ERROR != 0 || super::journal::recorded_errno(fs) != 0 {
        return Some("has errors recorded".into());
    }
    if sb.state & superblock::STATE_VALID == 0 {
        return Some("was not unmounted cleanly".into());
    }
    if sb.max_mnt_count > 0 && i32::from(sb.mnt_count) >= i32::from(sb.max_mnt_count) {
        return Some(format!(
            "was mounted {} times since its last check",
            sb.mnt_count
        ));
    }
    if sb.checkinterval != 0 && !broken_clock {
        if now < lastcheck {
            return Some("says it was last checked in the future".into());
        }
        let since = now.saturating_sub(lastcheck);
        if since >= u64::from(sb.checkinterval) {
            return Some(format!(
                "has not been checked for {} days",
                since / (24 * 3600)
            ));
        }
    }
    None
}

/// Does a group descriptor hold what e2fsck's superblock check asks to
/// fix before anything else reads the groups: a wrong checksum, uninit
/// marks without group checksums, an out-of-range unused inode count?
/// Declined (-n), the descriptor stays as it is for the passes.
pub fn descriptors_need_fixes(fs: &Fs) -> bool {
    let csum = fs.sb.group_desc_csum();
    let ipg = fs.geo.inodes_per_group;
    (0..fs.geo.groups).any(|g| {
        let gd = fs.gd_at(Group(g));
        if csum {
            !fs.gd_checksum_ok(g)
                || gd.itable_unused > ipg
                || gd.itable_unused > gd.free_inodes_count
        } else {
            gd.flags & (BG_INODE_UNINIT | BG_BLOCK_UNINIT) != 0 || gd.itable_unused != 0
        }
    })
}

/// e2fsck's descriptor sanity check: bitmaps and inode table inside their
/// group (or anywhere with flex_bg) and not overlapping other metadata.
fn desc_problems(sb: &Superblock, geo: &Geometry, gds: &[GroupDesc]) -> Vec<Problem> {
    let mut out = Vec::new();
    let meta = AtomicBitmap::new(geo.blocks_count);
    let flex = sb.has_incompat(incompat::FLEX_BG);
    // Group by group, as e2fsck's pass 1 marks them: the group's
    // superblock and descriptor copies, then its inode table, then its
    // bitmaps. Of two that overlap, the later one is relocated: a bitmap
    // pointed into an inode table moves, the table and its inodes stay.
    for (g, gd) in gds.iter().enumerate() {
        let g = narrow::sat32(g);
        for (start, len) in geo.group_super_and_gdt(g) {
            for b in start..start.saturating_add(len).min(geo.blocks_count) {
                meta.set(b);
            }
        }
        let (first, last) = if flex {
            (geo.first_data_block, geo.blocks_count - 1)
        } else {
            (geo.group_first_block(g), geo.group_last_block(g))
        };
        let inside = |b: u64| b >= first && b <= last;
        let mut check = |blk: u64, len: u64, loc: Code, what: &str| {
            let end = blk.checked_add(len - 1);
            if !inside(blk) || end.is_none_or(|e| !inside(e)) {
                out.push(Problem::new(loc).group(Group(g)).blk(Blk(blk)));
                return;
            }
            for b in blk..blk + len {
                if meta.set(b) {
                    // e2fsck's code says which of the three overlaps; a
                    // bitmap at block 0 it takes for one never placed,
                    // and places anew at the end of pass 1 without a
                    // question, -n or not.
                    let e2 = match loc {
                        Code::GdBlockBitmapLocation | Code::GdInodeBitmapLocation if b == 0 => {
                            0x010021
                        }
                        Code::GdBlockBitmapLocation => 0x010007,
                        Code::GdInodeBitmapLocation => 0x010008,
                        _ => 0x010009,
                    };
                    out.push(
                        Problem::new(Code::GdMetadataOverlap)
                            .group(Group(g))
                            .blk(Blk(b))
                            .e2fsck(e2)
                            .detail(what.to_string()),
                    );
                    return;
                }
            }
        };
        check(
            gd.inode_table,
            u64::from(geo.inode_table_blocks),
            Code::GdInodeTableLocation,
            "Inode table",
        );
        check(
            gd.block_bitmap,
            1,
            Code::GdBlockBitmapLocation,
            "Block bitmap",
        );
        check(
            gd.inode_bitmap,
            1,
            Code::GdInodeBitmapLocation,
            "Inode bitmap",
        );
    }
    out
}

/// Is `ino` a quota inode number e2fsck rejects (and clears)?
fn quota_inum_invalid(ino: u32, inodes_count: u32) -> bool {
    // The reserved inodes but 3 and 4 (the hidden quota files): bad
    // blocks, root, boot loader, undelete directory, resize, journal,
    // exclude and replica.
    matches!(ino, 1 | 2 | 5..=10) || ino > inodes_count
}

/// Does an invalid quota field left as it is (`-n`) still trip e2fsck's
/// passes? e2fsck judges the fields before it marks the file system valid
/// "until proven otherwise", so the "no" alone leaves exit 0; what counts
/// is what its later passes make of the field: the root's own entries
/// then name a quota file (pass 2), and a project field naming a reserved
/// inode makes that inode a quota file of pass 1, to be cleared when it
/// holds anything (or read as one with the quota feature on). Marked
/// with `num2` 1 (see `e2fsck_map::before_valid`).
fn quota_field_lingers(fs: &Fs, kind: &str, ino: u32) -> bool {
    if ino == crate::fs::inode::ROOT_INO {
        return true;
    }
    if kind != "project" || !matches!(ino, 5 | 6 | 7 | 9 | 10) {
        return false;
    }
    if fs.sb.has_ro_compat(ro_compat::QUOTA) {
        return true;
    }
    fs.read_inode_raw(Ino(ino)).map_or(true, |raw| {
        let inode = crate::fs::inode::Inode::parse(&raw);
        inode.links_count > 0 || inode.blocks_raw != 0 || inode.block_ptrs()[0] != 0
    })
}

/// Superblock fields naming the inode of a feature the file system does
/// not have (quota files, the orphan file), where e2fsck would trip on
/// them: the kernel ignores such a field, but e2fsck marks the inode in
/// use whatever it holds, clears the project quota or orphan file inode
/// when it holds anything, and treats a directory entry naming any of
/// them as invalid, then reconnects the inode it unlinked, run after run.
/// The field is what is wrong; the file it names is kept.
fn fields_without_feature(fs: &Fs) -> Vec<Problem> {
    let sb = &fs.sb;
    let geo = &fs.geo;
    let quota = sb.has_ro_compat(ro_compat::QUOTA);
    let orphan_file = sb.has_compat(superblock::compat::ORPHAN_FILE);
    let mut out = Vec::new();
    // (detail, inode, feature on, e2fsck marks it in use)
    let fields = [
        (FIELD_NAMES[0], sb.usr_quota_inum, quota, false),
        (FIELD_NAMES[1], sb.grp_quota_inum, quota, false),
        (FIELD_NAMES[2], sb.prj_quota_inum, quota, true),
        (FIELD_NAMES[3], sb.orphan_file_inum, orphan_file, true),
    ];
    for (what, ino, feature, reserved) in fields {
        // The orphan field naming the root: e2fsck's pass 1 takes the
        // inode for the root, but its pass 2 rejects every entry naming
        // it ('.' of / and each '..' there). The quota fields naming
        // reserved inodes are judged with the quota inodes. e2fsck's pass
        // 1 takes the bad blocks, root, journal and quota inodes by their
        // numbers before it asks whether an inode is the orphan file; any
        // other reserved inode the orphan field names (the resize inode,
        // say) it judges as the orphan file.
        let root = what == FIELD_NAMES[3] && ino == Ino::ROOT.get();
        let orphan_reserved = what == FIELD_NAMES[3] && !matches!(ino, 0..=4 | 8);
        if feature || (ino < geo.first_ino && !root && !orphan_reserved) || ino > geo.inodes_count {
            continue;
        }
        let Ok(raw) = fs.read_inode_raw(Ino(ino)) else {
            continue;
        };
        let inode = crate::fs::inode::Inode::parse(&raw);
        let holds = inode.links_count > 0 || inode.blocks_raw != 0 || inode.block_ptrs()[0] != 0;
        if ino < geo.first_ino && !holds && !root {
            // In use to e2fsck as any reserved inode is.
            continue;
        }
        // e2fsck's pass 1 passes over an unlinked inode from s_first_ino
        // up before it looks at what the orphan field names (the quota
        // fields it looks at first): such an inode is never marked in use.
        let unlinked = inode.links_count == 0;
        let e2 = if !reserved || root {
            // A linked inode: e2fsck's pass 2 rejects the entries naming it.
            if unlinked {
                continue;
            }
            0x020002
        } else if unlinked && what == FIELD_NAMES[3] {
            continue;
        } else if holds {
            if what == FIELD_NAMES[3] {
                0x010090
            } else {
                0x010063
            }
        } else if inode_bitmap_bit(fs, ino) == Some(false) && past_lazy_scan(fs, ino) == Some(false)
        {
            0x050009
        } else {
            continue;
        };
        out.push(
            Problem::new(Code::SbInodeFieldNoFeature)
                .ino(Ino(ino))
                .detail(what)
                .e2fsck(e2),
        );
    }
    out
}

/// The `detail` of an `SbInodeFieldNoFeature`: which field it is about.
pub const FIELD_NAMES: [&str; 4] = ["user quota", "group quota", "project quota", "orphan"];

/// Inode `ino`'s bit in its group's bitmap on disk, when readable.
fn inode_bitmap_bit(fs: &Fs, ino: u32) -> Option<bool> {
    let geo = &fs.geo;
    let g = geo.group_of_inode(Ino(ino));
    let gd = fs.gd(Group(g))?;
    if sb_group_inode_uninit(fs, gd) || !geo.block_in_fs(gd.inode_bitmap) {
        return None;
    }
    let bm = fs.read_block(gd.inode_bitmap).ok()?;
    let idx = ((ino - 1) % geo.inodes_per_group) as usize;
    bm.get(idx / 8).map(|b| b & (1 << (idx % 8)) != 0)
}

/// Is `ino` past its group's itable_unused mark, where e2fsck's inode
/// scan (lazy with group checksums) never reaches, so pass 1 never marks
/// it in use? None for a group that does not exist.
fn past_lazy_scan(fs: &Fs, ino: u32) -> Option<bool> {
    let geo = &fs.geo;
    let gd = fs.gd(Ino(ino).group(geo.inodes_per_group))?;
    let idx = Ino(ino).index_in_group(geo.inodes_per_group);
    let first_unused = geo
        .inodes_per_group
        .saturating_sub(gd.itable_unused.min(geo.inodes_per_group));
    Some(fs.sb.group_desc_csum() && idx >= first_unused)
}

fn sb_group_inode_uninit(fs: &Fs, gd: &GroupDesc) -> bool {
    fs.sb.group_desc_csum() && gd.flags & BG_INODE_UNINIT != 0
}

/// The filetype feature on a Hurd file system, which cannot read it.
/// e2fsck asks about it before deciding to skip a clean file system, and
/// a yes then forces the full check, as any question answered does.
pub fn hurd_filetype(sb: &Superblock) -> bool {
    sb.creator_os == superblock::OS_HURD && sb.has_incompat(incompat::FILETYPE)
}

/// What e2fsck's pass 0 sets right only when it may write (so never
/// under `-n`): a UUID where there is none (not with metadata_csum,
/// whose checksums it seeds), the test_fs flag where the running kernel
/// has ext4, the directory hash signedness where neither flag says it
/// (with dir_index), the filetype feature on a Hurd file system.
pub fn repair_only(fs: &Fs) -> Vec<Problem> {
    let sb = &fs.sb;
    let mut out = Vec::new();
    if sb.uuid == [0; 16] && !sb.metadata_csum() {
        out.push(Problem::new(Code::SbNoUuid));
    }
    if sb.flags & superblock::FLAGS_TEST_FS != 0 && kernel_has_ext4() {
        out.push(Problem::new(Code::SbTestFs));
    }
    if hurd_filetype(sb) {
        out.push(Problem::new(Code::SbHurdFiletype));
    }
    // Without dir_index no name is hashed, so there is nothing to hint.
    if sb.has_compat(superblock::compat::DIR_INDEX)
        && sb.flags & (superblock::FLAGS_SIGNED_HASH | superblock::FLAGS_UNSIGNED_HASH) == 0
    {
        out.push(Problem::new(Code::SbDirHashHint));
    }
    // Revision 0 has no feature fields; e2fsck makes it dynamic.
    if sb.rev_level == 0 && (sb.feature_compat | sb.feature_incompat | sb.feature_ro_compat) != 0 {
        out.push(Problem::new(Code::SbRev0Features));
    }
    if journal_backup_stale(fs) {
        out.push(Problem::new(Code::SbJournalBackupMissing).ino(Ino(sb.journal_inum)));
    }
    out
}

/// The superblock's last mount and write times ahead of the clock, as
/// e2fsck judges them: only in a forced check or where a check interval
/// makes the times matter, never with a clock known to be wrong (set so
/// in e2fsck.conf, or before 2010). Within the fudge (a day by default)
/// the stamp is taken for a clock set to local time: e2fsck names that
/// variant (0x00003c, 0x00003d) and sets it right without asking. Each
/// problem carries the stamp (`num`) and the time it is set to (`num2`).
pub fn future_times(fs: &Fs, opts: &Options) -> Vec<Problem> {
    let sb = &fs.sb;
    let trust = opts.time_trust;
    if !(opts.force || sb.checkinterval != 0) || trust.broken_clock || opts.clock.insane() {
        return Vec::new();
    }
    let now = opts.clock.now();
    let stamps = [
        (Code::SbLastMountFuture, sb.last_mount_time(), 0x00003C),
        (Code::SbLastWriteFuture, sb.last_write_time(), 0x00003D),
    ];
    stamps
        .into_iter()
        .filter(|&(_, t, _)| t > now)
        .map(|(code, t, fudged)| {
            let p = Problem::new(code).num(t).num2(now);
            if t <= now.saturating_add(trust.fudge) {
                p.e2fsck(fudged)
            } else {
                p
            }
        })
        .collect()
}

/// Does the superblock lack the copy of an internal journal inode's
/// block map, or hold one that differs from the inode's? e2fsck copies
/// it then (the copy lets a later check rebuild a damaged journal inode).
fn journal_backup_stale(fs: &Fs) -> bool {
    let sb = &fs.sb;
    if !sb.has_compat(superblock::compat::HAS_JOURNAL)
        || sb.journal_inum == 0
        || sb.journal_inum > fs.geo.inodes_count
        || super::journal::unusable(fs)
    {
        return false;
    }
    let Ok(raw) = fs.read_inode_raw(Ino(sb.journal_inum)) else {
        return false;
    };
    let inode = crate::fs::inode::Inode::parse(&raw);
    match sb.jnl_backup_type {
        0 => true,
        superblock::JNL_BACKUP_BLOCKS => inode
            .block
            .chunks_exact(4)
            .zip(&sb.jnl_blocks)
            .any(|(w, &b)| u32::from_le_bytes([w[0], w[1], w[2], w[3]]) != b),
        _ => false,
    }
}

/// Does the running kernel know ext4 (then a test_fs flag only keeps it
/// from mounting the file system)?
fn kernel_has_ext4() -> bool {
    std::fs::read_to_string("/proc/filesystems").is_ok_and(|t| {
        t.lines()
            .any(|l| l.split_whitespace().last() == Some("ext4"))
    })
}

/// The checks of pass 0 on the superblock in use and its descriptors.
/// The superblock's extra inode sizes, which e2fsck asks about before it
/// decides to skip a clean file system: a yes forces the check, as any
/// fix does, and so does a no, which marks the file system as having
/// errors; preen stops there (no PREEN_OK).
pub fn extra_isize(fs: &Fs) -> Vec<Problem> {
    let (sb, geo) = (&fs.sb, &fs.geo);
    if sb.rev_level == 0 || geo.inode_size <= 128 {
        return Vec::new();
    }
    let room = narrow::sat16(geo.inode_size - 128);
    [
        ("min", sb.min_extra_isize, 0x00004D),
        ("want", sb.want_extra_isize, 0x00004E),
    ]
    .into_iter()
    .filter(|&(_, v, _)| v > room || v % 4 != 0)
    .map(|(name, v, e2)| {
        Problem::new(Code::SbExtraIsize)
            .num(u64::from(v))
            .e2fsck(e2)
            .detail(name)
    })
    .collect()
}

/// A file system larger than its device, which e2fsck asks about before
/// it decides to skip a clean one: `-n` declines to abort and checks on
/// (reading past the end as it comes, a clean file system checked as one
/// with errors); a repair aborts (`SbSizeAbort`, fatal), having nowhere
/// to put the blocks past the end.
pub fn past_device(fs: &Fs, repairing: bool) -> Option<Problem> {
    let geo = &fs.geo;
    let dev_blocks = fs.dev.size() / u64::from(geo.block_size);
    (dev_blocks < geo.blocks_count).then(|| {
        let code = if repairing {
            Code::SbSizeAbort
        } else {
            Code::SbBlocksCountTooBig
        };
        Problem::new(code).num(geo.blocks_count).num2(dev_blocks)
    })
}

pub fn check(fs: &Fs) -> Vec<Problem> {
    let sb = &fs.sb;
    let geo = &fs.geo;
    let mut out = Vec::new();

    if sb.metadata_csum() && sb.compute_checksum() != sb.checksum {
        out.push(Problem::new(Code::SbChecksum));
    }
    if sb.metadata_csum() && sb.has_ro_compat(ro_compat::GDT_CSUM) {
        out.push(Problem::new(Code::SbMetadataCsumAndGdtCsum));
    }
    // Block numbers past 2^32 need extents: block maps hold 32 bits.
    if sb.has_incompat(incompat::BIT64) && !sb.has_incompat(incompat::EXTENTS) {
        out.push(Problem::new(Code::Sb64bitNoExtents));
    }
    if sb.has_incompat(incompat::CSUM_SEED) && !sb.metadata_csum() {
        out.push(Problem::new(Code::SbCsumSeedNoCsum));
    }
    out.extend(extra_isize(fs));
    if sb.free_blocks_count > geo.blocks_count {
        out.push(
            Problem::new(Code::SbFreeBlocksInvalid)
                .num(sb.free_blocks_count)
                .num2(geo.blocks_count),
        );
    }
    if sb.free_inodes_count > geo.inodes_count {
        out.push(
            Problem::new(Code::SbFreeInodesInvalid)
                .num(u64::from(sb.free_inodes_count))
                .num2(u64::from(geo.inodes_count)),
        );
    }
    // e2fsck judges the quota fields whatever the features say: only the
    // reserved inodes that are not quota files and numbers past the last
    // inode are invalid.
    for (kind, ino) in [
        ("user", sb.usr_quota_inum),
        ("group", sb.grp_quota_inum),
        ("project", sb.prj_quota_inum),
    ] {
        if quota_inum_invalid(ino, geo.inodes_count) {
            let mut p = Problem::new(Code::SbQuotaInode).ino(Ino(ino)).detail(kind);
            if quota_field_lingers(fs, kind, ino) {
                p = p.num2(1);
            }
            out.push(p);
        }
    }
    out.extend(fields_without_feature(fs));
    // e2fsck reads this inode after its passes to set the orphan file up
    // and stops (exit 8) when the number cannot be an inode; the kernel
    // refuses to mount such a file system.
    if sb.has_compat(superblock::compat::ORPHAN_FILE)
        && (sb.orphan_file_inum == 0 || sb.orphan_file_inum > geo.inodes_count)
    {
        out.push(Problem::new(Code::OrphanFileInodeInvalid).ino(Ino(sb.orphan_file_inum)));
    }
    if sb.has_compat(superblock::compat::ORPHAN_FILE)
        && !sb.has_compat(superblock::compat::HAS_JOURNAL)
        && (1..=geo.inodes_count).contains(&sb.orphan_file_inum)
    {
        out.push(Problem::new(Code::OrphanFileNoJournal).ino(Ino(sb.orphan_file_inum)));
    }
    // e2fsck clears it after its passes; the kernel would look for an
    // orphan file that is not there.
    if sb.has_ro_compat(superblock::ro_compat::ORPHAN_PRESENT)
        && !sb.has_compat(superblock::compat::ORPHAN_FILE)
    {
        out.push(Problem::new(Code::OrphanPresentNoFile));
    }
    if sb.last_orphan != 0 {
        out.push(Problem::new(Code::SbOrphanList).ino(Ino(sb.last_orphan)));
    }
    if sb.has_incompat(incompat::RECOVER) {
        out.push(Problem::new(Code::SbNeedsRecovery));
    }

    out.extend(desc_problems(sb, geo, &fs.gds));

    let csum = sb.group_desc_csum();
    for g in 0..geo.groups {
        let gd = fs.gd_at(Group(g));
        if csum && !fs.gd_checksum_ok(g) {
            out.push(Problem::new(Code::GdChecksum).group(Group(g)));
        }
        // ITABLE_ZEROED alone is harmless: mke2fs sets it without uninit_bg.
        if !csum && (gd.flags & (BG_INODE_UNINIT | BG_BLOCK_UNINIT) != 0 || gd.itable_unused != 0) {
            out.push(Problem::new(Code::GdUninitWithoutCsum).group(Group(g)));
        }
        // The last group's block bitmap covers blocks past the end; the
        // kernel never leaves it uninitialised.
        if g + 1 == geo.groups && gd.flags & BG_BLOCK_UNINIT != 0 {
            out.push(Problem::new(Code::GdBlockUninitLastGroup).group(Group(g)));
        }
        let gblocks = geo.group_blocks(g);
        if gd.free_blocks_count > gblocks {
            out.push(
                Problem::new(Code::GdFreeBlocksInvalid)
                    .group(Group(g))
                    .num(u64::from(gd.free_blocks_count)),
            );
        }
        if gd.free_inodes_count > geo.inodes_per_group {
            out.push(
                Problem::new(Code::GdFreeInodesInvalid)
                    .group(Group(g))
                    .num(u64::from(gd.free_inodes_count)),
            );
        }
        if csum
            && (gd.itable_unused > geo.inodes_per_group || gd.itable_unused > gd.free_inodes_count)
        {
            out.push(
                Problem::new(Code::GdItableUnused)
                    .group(Group(g))
                    .num(u64::from(gd.itable_unused)),
            );
        }
    }
    out
}
