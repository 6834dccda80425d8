//! Staged block writes: the repaired state, kept until the commit.
//!
//! A fix never writes to the device; it stages whole blocks here. Reads
//! through the overlay see staged blocks over the device, so a later pass of
//! the same run sees what an earlier fix did. The index is a `BTreeMap`, so
//! the commit writes (and logs) blocks in block order whatever order fixes
//! ran in, which keeps the repaired image and the undo log byte-identical
//! across thread counts.
//!
//! Memory stays bounded however much a repair rewrites: past a small
//! in-memory budget ([`MEMORY_BUDGET`]) blocks go to a spill file, an
//! unlinked temporary file in the undo log's directory (the log needs that
//! much room there anyway, and it is never the device being repaired);
//! only the index stays in memory. The oldest blocks in memory spill
//! first, and a restaged spilled block comes back (fixes run in problem
//! order, so a block is touched again soon after, if at all); an
//! unstaged block's file slot is reused. The spill file is page cache
//! for a repair that fits in memory, so reading it back costs a copy.
//!
//! A repair round's staging lies over the previous rounds' ([`Overlay::over`]):
//! the re-check reads the previous rounds' overlay through the device
//! (shared, not copied: it is an `io::ReadOverlay`), the next round's
//! fixes stage on top, and once the re-check is gone the rounds are merged
//! ([`Overlay::flattened`]).
//!
//! A repair's total is not capped: however large the file system, a
//! repair may rewrite as much of it as it needs. The undo log holds a
//! before-image of every changed block and the spill file a copy of every
//! staged one, both beside each other on the log's disk, so that disk's
//! free space is the real bound; running out of it fails the repair before
//! the device is written. A repair with no undo log (no directory could be
//! written, as at boot) stages everything in memory ([`Staging::without_log`]).

use super::{Result, StoreError};
use crate::fs::num::Blk;
use crate::io::{Device, ReadOverlay};
use crate::narrow::to_usize;
use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Staged bytes kept in memory per overlay before blocks spill to the
/// file: 256 blocks of 4 KiB. Repairs of a few directories or inodes (the
/// usual case; each conformance image stages tens of blocks) never make a
/// file, and beyond that the memory a repair takes stays within about
/// 1 MiB of the check's own (two overlays at most are alive at once: a
/// round's and the one it lies over).
pub const MEMORY_BUDGET: u64 = 1024 * 1024;

/// Where staged blocks go and how many there may be.
#[derive(Clone, Debug)]
pub struct Staging {
    /// Bound on staged bytes.
    pub limit: u64,
    /// Bytes kept in memory per overlay before blocks spill.
    pub memory: u64,
    /// Directory of the spill file; `None`: everything stays in memory.
    pub spill_dir: Option<PathBuf>,
}

impl Staging {
    /// Everything in memory, at most `limit` bytes (tests, the one-block
    /// commits).
    pub fn in_memory(limit: u64) -> Staging {
        Staging {
            limit,
            memory: u64::MAX,
            spill_dir: None,
        }
    }

    /// A repair whose undo log is `log`: the spill file goes beside it,
    /// past `memory` bytes ([`MEMORY_BUDGET`] unless a test says). The
    /// device's size is the only bound on the total.
    pub fn beside_log(log: &Path, memory: Option<u64>) -> Staging {
        let dir = match log.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Staging {
            limit: u64::MAX,
            memory: memory.unwrap_or(MEMORY_BUDGET),
            spill_dir: Some(dir),
        }
    }

    /// A repair that goes without an undo log because no directory could
    /// be written (the log's, the run directory): nowhere to spill either,
    /// so every staged block stays in memory, with no cap. e2fsck writes
    /// in place there; pfsck needs the staged blocks for its re-checks.
    pub fn without_log() -> Staging {
        Staging::in_memory(u64::MAX)
    }
}

/// Where one staged block of an overlay is.
enum Slot {
    Memory(Box<[u8]>),
    /// Slot number in the spill file (offset: slot × block size).
    Spilled(u64),
    /// Unstaged here while an overlay below still stages it.
    Removed,
}

struct SpillFile {
    file: File,
    /// Slots of unstaged blocks, reused first.
    free: Vec<u64>,
    /// Slots handed out so far.
    next: u64,
}

pub struct Overlay {
    block_size: u32,
    device_size: u64,
    staging: Staging,
    /// The staging this one lies over (earlier rounds), shared with the
    /// device a re-check read it through.
    base: Option<Arc<Overlay>>,
    /// Blocks staged here and below, each counted once.
    count: u64,
    slots: BTreeMap<u64, Slot>,
    /// Bytes of `Slot::Memory` blocks.
    in_memory: u64,
    /// Blocks placed in memory, oldest first (some since spilled or
    /// unstaged): the next to spill when the budget is full. Fixes go in
    /// problem order, so a block is mostly restaged and read again soon
    /// after it was staged, while it is still here.
    recent: VecDeque<u64>,
    spill: Option<SpillFile>,
    /// This overlay's blocks last staged by the superblock and descriptor
    /// encoders ([`Overlay::stage_encoded`]): the commit writes the
    /// primary superblock and descriptor blocks only from those.
    encoded: std::collections::BTreeSet<u64>,
}

impl Overlay {
    /// An empty overlay for a device of `device_size` bytes read in blocks
    /// of `block_size` (a power of two from 1024 to 65536), holding at most
    /// `limit` bytes, all of them in memory.
    pub fn new(block_size: u32, device_size: u64, limit: u64) -> Result<Overlay> {
        Overlay::with_staging(block_size, device_size, &Staging::in_memory(limit))
    }

    /// An empty overlay that stages as `staging` says.
    pub fn with_staging(block_size: u32, device_size: u64, staging: &Staging) -> Result<Overlay> {
        if !(block_size.is_power_of_two() && (1024..=65536).contains(&block_size)) {
            return Err(StoreError::Invalid(format!(
                "invalid block size {block_size} for staged writes"
            )));
        }
        Ok(Overlay {
            block_size,
            device_size,
            staging: staging.clone(),
            base: None,
            count: 0,
            slots: BTreeMap::new(),
            in_memory: 0,
            recent: VecDeque::new(),
            spill: None,
            encoded: std::collections::BTreeSet::new(),
        })
    }

    /// An empty overlay over `base`: reads see `base`'s blocks until they
    /// are staged again here; `base` stays as it is.
    pub fn over(base: Arc<Overlay>) -> Overlay {
        Overlay {
            block_size: base.block_size,
            device_size: base.device_size,
            staging: base.staging.clone(),
            count: base.count,
            base: Some(base),
            slots: BTreeMap::new(),
            in_memory: 0,
            recent: VecDeque::new(),
            spill: None,
            encoded: std::collections::BTreeSet::new(),
        }
    }

    /// The overlay below this one, if any.
    pub fn base(&self) -> Option<&Arc<Overlay>> {
        self.base.as_ref()
    }

    /// This overlay with the ones below it merged in when nothing else
    /// holds them (the re-check that read them is gone): one index and
    /// one spill file again. Blocks staged here replace theirs. The
    /// smaller of the two moves into the larger (a round's few fixes into
    /// the earlier rounds' staging, or a first round's staging over an
    /// empty or small replay).
    pub fn flattened(mut self) -> Result<Overlay> {
        let Some(base) = self.base.take() else {
            return Ok(self);
        };
        let below = match Arc::try_unwrap(base) {
            Ok(below) => below.flattened()?,
            Err(shared) => {
                self.base = Some(shared);
                return Ok(self);
            }
        };
        if below.base.is_some() {
            self.base = Some(Arc::new(below));
            return Ok(self);
        }
        let upper_into_lower = self.slots.len() <= below.slots.len();
        let (mut keep, mut from) = if upper_into_lower {
            (below, self)
        } else {
            (self, below)
        };
        let mut buf = vec![0u8; keep.block_size as usize];
        for (block, slot) in std::mem::take(&mut from.slots) {
            if !upper_into_lower && keep.slots.contains_key(&block) {
                continue;
            }
            if from.encoded.contains(&block) {
                keep.encoded.insert(block);
            } else {
                keep.encoded.remove(&block);
            }
            match slot {
                Slot::Memory(d) => keep.put(block, d.into_vec())?,
                Slot::Spilled(s) => {
                    from.read_spilled(s, 0, &mut buf)?;
                    keep.put(block, buf.clone())?;
                }
                Slot::Removed => keep.forget(block),
            }
        }
        // Nothing lies below any more: what was unstaged is simply not there.
        keep.slots.retain(|_, s| !matches!(s, Slot::Removed));
        keep.count = keep.slots.len() as u64;
        Ok(keep)
    }

    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    pub fn device_size(&self) -> u64 {
        self.device_size
    }

    /// Number of staged blocks (with those of the overlays below).
    pub fn len(&self) -> usize {
        usize::try_from(self.count).unwrap_or(usize::MAX)
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes staged so far (with those of the overlays below).
    pub fn staged_bytes(&self) -> u64 {
        self.count.saturating_mul(u64::from(self.block_size))
    }

    /// Bytes of this overlay's own blocks held in memory.
    pub fn memory_bytes(&self) -> u64 {
        self.in_memory
    }

    /// Number of this overlay's own blocks in the spill file.
    pub fn spilled_blocks(&self) -> u64 {
        self.spill
            .as_ref()
            .map_or(0, |s| s.next.saturating_sub(s.free.len() as u64))
    }

    /// Byte offset of `block`, if the whole block lies inside the device.
    pub fn block_offset(&self, block: Blk) -> Option<u64> {
        let off = block.get().checked_mul(u64::from(self.block_size))?;
        let end = off.checked_add(u64::from(self.block_size))?;
        (end <= self.device_size).then_some(off)
    }

    /// The overlay (this one or one below) that decides what `block`
    /// reads as, and how.
    fn find(&self, block: u64) -> Option<(&Overlay, &Slot)> {
        let mut layer = Some(self);
        while let Some(l) = layer {
            if let Some(slot) = l.slots.get(&block) {
                return Some((l, slot));
            }
            layer = l.base.as_deref();
        }
        None
    }

    fn contains(&self, block: u64) -> bool {
        matches!(
            self.find(block),
            Some((_, Slot::Memory(_) | Slot::Spilled(_)))
        )
    }

    /// Stages the new contents of `block`, replacing any earlier staging.
    /// The block no longer counts as written by the encoders (see
    /// [`Overlay::stage_encoded`]).
    pub fn stage(&mut self, block: Blk, data: Vec<u8>) -> Result<()> {
        self.stage_as(block, data, false)
    }

    /// Stages `block` as written by the superblock or descriptor encoders
    /// (`volume::edit`, the journal replay): the only writes the commit
    /// lets reach the primary superblock and descriptor blocks.
    pub fn stage_encoded(&mut self, block: Blk, data: Vec<u8>) -> Result<()> {
        self.stage_as(block, data, true)
    }

    /// Was the staged `block` (as it reads now) written by the encoders?
    pub fn staged_by_encoder(&self, block: Blk) -> bool {
        match self.find(block.get()) {
            Some((l, Slot::Memory(_) | Slot::Spilled(_))) => l.encoded.contains(&block.get()),
            _ => false,
        }
    }

    fn stage_as(&mut self, block: Blk, data: Vec<u8>, encoded: bool) -> Result<()> {
        let bs = u64::from(self.block_size);
        if data.len() as u64 != bs {
            return Err(StoreError::Invalid(format!(
                "staged block {block} has {} bytes, not the block size {}",
                data.len(),
                self.block_size
            )));
        }
        if self.block_offset(block).is_none() {
            return Err(StoreError::Invalid(format!(
                "staged block {block} lies beyond the end of the device ({} bytes)",
                self.device_size
            )));
        }
        let block = block.get();
        let new_block = !self.contains(block);
        if new_block {
            let total = self.staged_bytes().checked_add(bs);
            if total.is_none_or(|t| t > self.staging.limit) {
                return Err(StoreError::Invalid(format!(
                    "repair would rewrite more than {} bytes (the staging limit)",
                    self.staging.limit
                )));
            }
        }
        self.put(block, data)?;
        if encoded {
            self.encoded.insert(block);
        } else {
            self.encoded.remove(&block);
        }
        if new_block {
            self.count += 1;
        }
        Ok(())
    }

    /// Puts `data` (one block) in this overlay's own slot for `block`:
    /// in memory, spilling the oldest blocks there when the budget is
    /// full; a block found in the spill file moves back to memory (its
    /// file slot freed), as it is likely to be staged again soon.
    fn put(&mut self, block: u64, data: Vec<u8>) -> Result<()> {
        let bs = u64::from(self.block_size);
        let spilled = match self.slots.get_mut(&block) {
            Some(Slot::Memory(d)) => {
                d.copy_from_slice(&data);
                return Ok(());
            }
            Some(Slot::Spilled(s)) => Some(*s),
            Some(Slot::Removed) | None => None,
        };
        if self.staging.spill_dir.is_some() {
            self.make_room(bs)?;
            if self.in_memory.saturating_add(bs) > self.staging.memory {
                // A budget smaller than a block: straight to the file.
                let s = match spilled {
                    Some(s) => s,
                    None => self.spill_slot()?,
                };
                if let Err(e) = self.write_spilled(s, &data) {
                    if spilled.is_none()
                        && let Some(f) = &mut self.spill
                    {
                        f.free.push(s);
                    }
                    return Err(e);
                }
                self.slots.insert(block, Slot::Spilled(s));
                return Ok(());
            }
        }
        if let Some(s) = spilled
            && let Some(f) = &mut self.spill
        {
            f.free.push(s);
        }
        self.in_memory += bs;
        self.recent.push_back(block);
        self.slots
            .insert(block, Slot::Memory(data.into_boxed_slice()));
        Ok(())
    }

    /// Spills the oldest blocks in memory until `need` more bytes fit in
    /// the budget.
    fn make_room(&mut self, need: u64) -> Result<()> {
        while self.in_memory.saturating_add(need) > self.staging.memory {
            let Some(old) = self.recent.pop_front() else {
                break;
            };
            let Some(Slot::Memory(_)) = self.slots.get(&old) else {
                continue;
            };
            let s = self.spill_slot()?;
            let written = match self.slots.get(&old) {
                Some(Slot::Memory(d)) => self.write_spilled(s, d),
                _ => Ok(()),
            };
            if let Err(e) = written {
                if let Some(f) = &mut self.spill {
                    f.free.push(s);
                }
                self.recent.push_front(old);
                return Err(e);
            }
            self.slots.insert(old, Slot::Spilled(s));
            self.in_memory -= u64::from(self.block_size);
        }
        Ok(())
    }

    /// Drops this overlay's own slot for `block`, freeing its room.
    fn forget(&mut self, block: u64) {
        self.encoded.remove(&block);
        let old = self.slots.remove(&block);
        self.release(old);
    }

    fn release(&mut self, slot: Option<Slot>) {
        match slot {
            Some(Slot::Memory(_)) => self.in_memory -= u64::from(self.block_size),
            Some(Slot::Spilled(s)) => {
                if let Some(f) = &mut self.spill {
                    f.free.push(s);
                }
            }
            _ => {}
        }
    }

    /// Forgets a staged block (a later fix decided the block stays as it is).
    pub fn unstage(&mut self, block: Blk) {
        let block = block.get();
        if !self.contains(block) {
            return;
        }
        let below = self.base.as_ref().is_some_and(|b| b.contains(block));
        self.encoded.remove(&block);
        let old = if below {
            self.slots.insert(block, Slot::Removed)
        } else {
            self.slots.remove(&block)
        };
        self.release(old);
        self.count -= 1;
    }

    /// A free slot of the spill file, which is made on first use.
    fn spill_slot(&mut self) -> Result<u64> {
        if self.spill.is_none() {
            let dir = self.staging.spill_dir.as_deref().unwrap_or(Path::new("."));
            self.spill = Some(SpillFile {
                file: create_spill_file(dir)?,
                free: Vec::new(),
                next: 0,
            });
        }
        let Some(f) = &mut self.spill else {
            unreachable!("made above");
        };
        Ok(match f.free.pop() {
            Some(s) => s,
            None => {
                f.next += 1;
                f.next - 1
            }
        })
    }

    fn spill_file(&self) -> Result<&File> {
        self.spill
            .as_ref()
            .map(|s| &s.file)
            .ok_or_else(|| StoreError::Invalid("spilled block without a spill file".into()))
    }

    fn write_spilled(&self, slot: u64, data: &[u8]) -> Result<()> {
        let off = slot
            .checked_mul(u64::from(self.block_size))
            .ok_or_else(|| StoreError::Invalid("spill file offset overflows".into()))?;
        self.spill_file()?
            .write_all_at(data, off)
            .map_err(|e| StoreError::Io {
                what: "cannot write the staged blocks' spill file".into(),
                source: e,
            })
    }

    /// Reads `buf.len()` bytes of spilled slot `slot` from byte `within`.
    fn read_spilled(&self, slot: u64, within: u64, buf: &mut [u8]) -> Result<()> {
        let off = slot
            .checked_mul(u64::from(self.block_size))
            .and_then(|o| o.checked_add(within))
            .ok_or_else(|| StoreError::Invalid("spill file offset overflows".into()))?;
        self.spill_file()?
            .read_exact_at(buf, off)
            .map_err(|e| StoreError::Io {
                what: "cannot read the staged blocks' spill file".into(),
                source: e,
            })
    }

    /// Copies bytes `within..within + buf.len()` of a block held in `slot`
    /// of this overlay into `buf`.
    fn read_slot(&self, slot: &Slot, within: u64, buf: &mut [u8]) -> Result<()> {
        match slot {
            Slot::Memory(d) => {
                // Callers keep within + len inside the block.
                let w = to_usize(within);
                buf.copy_from_slice(&d[w..w + buf.len()]);
                Ok(())
            }
            Slot::Spilled(s) => self.read_spilled(*s, within, buf),
            Slot::Removed => Ok(()),
        }
    }

    /// Fills `buf` (one block) with the staged contents of `block`;
    /// false (and `buf` untouched) when it is not staged.
    pub fn read_block(&self, block: Blk, buf: &mut [u8]) -> Result<bool> {
        let block = block.get();
        if buf.len() != self.block_size as usize {
            return Err(StoreError::Invalid(format!(
                "a buffer of {} bytes for a block of {}",
                buf.len(),
                self.block_size
            )));
        }
        match self.find(block) {
            Some((l, slot @ (Slot::Memory(_) | Slot::Spilled(_)))) => {
                l.read_slot(slot, 0, buf)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The staged contents of `block`, if any.
    pub fn get(&self, block: Blk) -> Result<Option<Vec<u8>>> {
        let mut buf = vec![0u8; self.block_size as usize];
        Ok(self.read_block(block, &mut buf)?.then_some(buf))
    }

    /// Whether any block in `blocks` is staged.
    pub fn any_in(&self, blocks: std::ops::Range<Blk>) -> bool {
        let blocks = blocks.start.get()..blocks.end.get();
        // Blocks unstaged by an overlay above hide those below.
        let mut hidden: Vec<u64> = Vec::new();
        let mut layer = Some(self);
        while let Some(l) = layer {
            for (&b, slot) in l.slots.range(blocks.clone()) {
                match slot {
                    Slot::Removed => hidden.push(b),
                    _ if !hidden.contains(&b) => return true,
                    _ => {}
                }
            }
            layer = l.base.as_deref();
        }
        false
    }

    /// Every staged block in `range`, in block order, with the overlay
    /// and slot that hold it.
    fn resolved(&self, range: std::ops::RangeInclusive<u64>) -> Vec<(u64, &Overlay, &Slot)> {
        // Overlays with nothing staged (a first round lies over an empty
        // replay) are passed over: with one left, its index is the answer.
        let mut staged = std::iter::successors(Some(self), |l| l.base.as_deref())
            .filter(|l| !l.slots.is_empty());
        let Some(top) = staged.next() else {
            return Vec::new();
        };
        if staged.next().is_none() {
            return top
                .slots
                .range(range)
                .filter(|(_, s)| !matches!(s, Slot::Removed))
                .map(|(&b, s)| (b, top, s))
                .collect();
        }
        let mut seen: BTreeMap<u64, (&Overlay, &Slot)> = BTreeMap::new();
        let mut layer = Some(self);
        while let Some(l) = layer {
            for (&b, slot) in l.slots.range(range.clone()) {
                seen.entry(b).or_insert((l, slot));
            }
            layer = l.base.as_deref();
        }
        seen.into_iter()
            .filter(|(_, (_, s))| !matches!(s, Slot::Removed))
            .map(|(b, (l, s))| (b, l, s))
            .collect()
    }

    /// The staged block numbers in block order.
    pub fn blocks(&self) -> Vec<Blk> {
        self.resolved(0..=u64::MAX)
            .into_iter()
            .map(|(b, _, _)| Blk(b))
            .collect()
    }

    /// Staged blocks in block order, each read when its turn comes.
    pub fn iter(&self) -> impl Iterator<Item = Result<(Blk, Vec<u8>)>> + '_ {
        self.blocks().into_iter().map(move |b| {
            let mut buf = vec![0u8; self.block_size as usize];
            self.read_block(b, &mut buf)?;
            Ok((b, buf))
        })
    }

    /// Whether this overlay reads differently from the one it lies over
    /// (for an overlay over nothing: whether it stages anything).
    pub fn differs_from_base(&self) -> Result<bool> {
        let Some(base) = &self.base else {
            return Ok(!self.is_empty());
        };
        let bs = self.block_size as usize;
        let (mut mine, mut theirs) = (vec![0u8; bs], vec![0u8; bs]);
        for (&b, slot) in &self.slots {
            if let Slot::Removed = slot {
                return Ok(true);
            }
            self.read_slot(slot, 0, &mut mine)?;
            if !base.read_block(Blk(b), &mut theirs)? || mine != theirs {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Fills `buf` from byte `offset` as the device will read after the
    /// commit: staged blocks over the device's bytes.
    pub fn read_at(&self, dev: &Device, offset: u64, buf: &mut [u8]) -> Result<()> {
        let span = self.span(offset, buf.len());
        let staged = span.clone().map_or_else(Vec::new, |r| self.resolved(r));
        // Bytes that staged blocks cover entirely need no device read: a
        // fix edits an inode table block once per inode in it, re-reading
        // what it staged (a pread per fix was 14% of a 62,000-fix plan).
        let covered = span.is_some_and(|r| staged.len() as u64 == r.end() - r.start() + 1);
        if !covered {
            dev.read_at(offset, buf)?;
        }
        self.copy_staged(&staged, offset, buf)
    }

    /// Overwrites the parts of `buf` (holding the device's bytes from
    /// `offset`) that staged blocks cover.
    pub fn patch(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let staged = self
            .span(offset, buf.len())
            .map_or_else(Vec::new, |r| self.resolved(r));
        self.copy_staged(&staged, offset, buf)
    }

    /// The blocks `len` bytes from `offset` touch (none when empty or
    /// beyond any offset).
    fn span(&self, offset: u64, len: usize) -> Option<std::ops::RangeInclusive<u64>> {
        let end = offset.checked_add(len as u64).filter(|_| len > 0)?;
        let bs = u64::from(self.block_size);
        Some(offset / bs..=(end - 1) / bs)
    }

    /// Copies the parts of `staged` (from `resolved`) that fall in `buf`,
    /// which holds the bytes from `offset`.
    fn copy_staged(
        &self,
        staged: &[(u64, &Overlay, &Slot)],
        offset: u64,
        buf: &mut [u8],
    ) -> Result<()> {
        let bs = u64::from(self.block_size);
        // Blocks were found in `span`, so `offset + len` does not overflow,
        // and staged blocks lie inside the device.
        let end = offset.saturating_add(buf.len() as u64);
        for &(block, layer, slot) in staged {
            let bstart = block * bs;
            let lo = bstart.max(offset);
            let hi = (bstart + bs).min(end);
            if lo >= hi {
                continue;
            }
            let dst = &mut buf[to_usize(lo - offset)..to_usize(hi - offset)];
            layer.read_slot(slot, lo - bstart, dst)?;
        }
        Ok(())
    }
}

impl ReadOverlay for Overlay {
    fn apply(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.patch(offset, buf).map_err(|e| match e {
            StoreError::Io { source, .. } => source,
            other => std::io::Error::other(other.to_string()),
        })
    }
}

/// An unlinked file in `dir` for spilled blocks (`crate::newfile::unlinked`):
/// it goes away with the process, however that ends.
fn create_spill_file(dir: &Path) -> Result<File> {
    crate::newfile::unlinked(dir, ".pfsck-spill").map_err(|e| StoreError::Io {
        what: format!("cannot create a spill file in {}", dir.display()),
        source: e,
    })
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data, small by construction
mod tests {
    use super::*;

    fn dev(size: usize) -> Device {
        Device::from_bytes((0..size).map(|i| (i % 251) as u8).collect())
    }

    #[test]
    fn reads_see_staged_blocks_over_the_device() {
        let d = dev(8192);
        let mut o = Overlay::new(1024, 8192, 1 << 20).unwrap();
        o.stage(Blk(2), vec![0xAA; 1024]).unwrap();
        o.stage(Blk(3), vec![0xBB; 1024]).unwrap();
        let mut buf = vec![0u8; 3000];
        o.read_at(&d, 1500, &mut buf).unwrap();
        let mut want: Vec<u8> = (1500..4500).map(|i| (i % 251) as u8).collect();
        want[548..1572].fill(0xAA);
        want[1572..2596].fill(0xBB);
        assert_eq!(buf, want);
        assert_eq!(o.blocks(), vec![Blk(2), Blk(3)]);
    }

    #[test]
    fn bounds_are_enforced() {
        let mut o = Overlay::new(1024, 4096, 2048).unwrap();
        assert!(o.stage(Blk(4), vec![0; 1024]).is_err(), "beyond the device");
        assert!(o.stage(Blk(u64::MAX), vec![0; 1024]).is_err());
        assert!(o.stage(Blk(0), vec![0; 100]).is_err(), "short block");
        o.stage(Blk(0), vec![1; 1024]).unwrap();
        o.stage(Blk(1), vec![1; 1024]).unwrap();
        o.stage(Blk(1), vec![2; 1024]).unwrap(); // restaging costs nothing
        assert!(o.stage(Blk(2), vec![0; 1024]).is_err(), "over the limit");
        o.unstage(Blk(0));
        o.stage(Blk(2), vec![0; 1024]).unwrap();
        assert_eq!(o.staged_bytes(), 2048);
        assert!(Overlay::new(1000, 4096, 1).is_err());
    }

    /// A scratch directory removed at the end of a test.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let p = std::env::temp_dir().join(format!("pfsck-spill-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }

        fn entries(&self) -> usize {
            std::fs::read_dir(&self.0).unwrap().count()
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn tiny(dir: &Path) -> Staging {
        Staging {
            limit: 1 << 30,
            memory: 4 * 1024,
            spill_dir: Some(dir.to_path_buf()),
        }
    }

    fn block(b: u64, round: u8) -> Vec<u8> {
        (0..1024u32)
            .map(|i| (i as u8) ^ (b as u8).wrapping_mul(7) ^ round)
            .collect()
    }

    /// The same staging, spilled past a 4-block budget and all in memory:
    /// same reads, same iteration, restaging in place, unstaging, slots
    /// reused, no file left in the directory.
    #[test]
    fn spilled_blocks_read_as_staged() {
        let dir = Dir::new("reads");
        let size = 600 * 1024;
        let d = dev(size);
        let mut s = Overlay::with_staging(1024, size as u64, &tiny(&dir.0)).unwrap();
        let mut m = Overlay::new(1024, size as u64, 1 << 30).unwrap();
        // Out of order, so slot order is not block order.
        let order: Vec<u64> = (0..500u64).map(|i| (i * 263) % 500).collect();
        for &b in &order {
            s.stage(Blk(b), block(b, 0)).unwrap();
            m.stage(Blk(b), block(b, 0)).unwrap();
        }
        assert_eq!(s.memory_bytes(), 4 * 1024);
        assert_eq!(s.spilled_blocks(), 496);
        assert_eq!(dir.entries(), 0, "the spill file has no name");
        for &b in order.iter().step_by(3) {
            s.stage(Blk(b), block(b, 1)).unwrap();
            m.stage(Blk(b), block(b, 1)).unwrap();
        }
        assert_eq!(
            s.spilled_blocks(),
            496,
            "a restaged block comes back, another goes"
        );
        for b in (0..500).step_by(7) {
            s.unstage(Blk(b));
            m.unstage(Blk(b));
        }
        let spilled = s.spilled_blocks();
        for b in 500..520 {
            s.stage(Blk(b), block(b, 2)).unwrap();
            m.stage(Blk(b), block(b, 2)).unwrap();
        }
        assert!(s.spilled_blocks() <= spilled + 20);
        assert_eq!(s.len(), m.len());
        assert_eq!(s.staged_bytes(), m.staged_bytes());
        assert_eq!(s.blocks(), m.blocks());
        let a: Vec<(Blk, Vec<u8>)> = s.iter().map(|r| r.unwrap()).collect();
        let b: Vec<(Blk, Vec<u8>)> = m.iter().map(|r| r.unwrap()).collect();
        assert_eq!(a, b);
        assert!(a.windows(2).all(|w| w[0].0 < w[1].0), "block order");
        // Reads across block edges, partial blocks at both ends.
        for (off, len) in [
            (0, size),
            (1500, 3000),
            (70 * 1024 + 5, 10),
            (519 * 1024, 1024),
        ] {
            let (mut x, mut y) = (vec![0u8; len], vec![0u8; len]);
            s.read_at(&d, off as u64, &mut x).unwrap();
            m.read_at(&d, off as u64, &mut y).unwrap();
            assert_eq!(x, y, "read of {len} at {off}");
        }
        assert_eq!(s.get(Blk(7)).unwrap(), None);
        assert_eq!(s.get(Blk(8)).unwrap(), Some(block(8, 0)));
        assert!(s.any_in(Blk(6)..Blk(8)) && !s.any_in(Blk(7)..Blk(8)));
    }

    /// A round's overlay over the previous one's: reads through both,
    /// unstaging hides a block below, the base stays as it was, and
    /// merging gives what staging everything in one overlay gives.
    #[test]
    fn overlays_over_overlays_merge() {
        let dir = Dir::new("layers");
        let size = 200 * 1024;
        let d = dev(size);
        let mut one = Overlay::with_staging(1024, size as u64, &tiny(&dir.0)).unwrap();
        let mut flat = Overlay::new(1024, size as u64, 1 << 30).unwrap();
        for b in 0..40 {
            one.stage(Blk(b * 3), block(b, 0)).unwrap();
            flat.stage(Blk(b * 3), block(b, 0)).unwrap();
        }
        let base = Arc::new(one);
        let mut two = Overlay::over(Arc::clone(&base));
        assert!(!two.differs_from_base().unwrap());
        assert_eq!(two.len(), 40);
        for b in 0..40 {
            two.stage(Blk(b * 2), block(b, 5)).unwrap();
            flat.stage(Blk(b * 2), block(b, 5)).unwrap();
        }
        two.unstage(Blk(9));
        flat.unstage(Blk(9));
        two.unstage(Blk(10));
        flat.unstage(Blk(10));
        assert!(two.differs_from_base().unwrap());
        assert_eq!(two.len(), flat.len());
        assert!(!two.any_in(Blk(9)..Blk(10)) && base.any_in(Blk(9)..Blk(10)));
        let (mut x, mut y) = (vec![0u8; size], vec![0u8; size]);
        two.read_at(&d, 0, &mut x).unwrap();
        flat.read_at(&d, 0, &mut y).unwrap();
        assert_eq!(x, y);
        // The device the re-check reads through sees the base alone.
        let seen = dev(size).with_read_overlay(base.clone());
        let mut z = vec![0u8; 1024];
        seen.read_at(9 * 1024, &mut z).unwrap();
        assert_eq!(z, block(3, 0));
        drop(seen);
        // Shared: stays layered; alone: merged.
        let two = two.flattened().unwrap();
        assert!(two.base().is_some());
        drop(base);
        let merged = two.flattened().unwrap();
        assert!(merged.base().is_none());
        let a: Vec<_> = merged.iter().map(|r| r.unwrap()).collect();
        let b: Vec<_> = flat.iter().map(|r| r.unwrap()).collect();
        assert_eq!(a, b);
        // Restaging a block as it was below changes nothing.
        let base = Arc::new(merged);
        let mut three = Overlay::over(Arc::clone(&base));
        three
            .stage(Blk(0), base.get(Blk(0)).unwrap().unwrap())
            .unwrap();
        assert!(!three.differs_from_base().unwrap());
        three.stage(Blk(1), vec![0; 1024]).unwrap();
        assert!(three.differs_from_base().unwrap());
        assert_eq!(dir.entries(), 0);
    }

    #[test]
    fn without_a_directory_nothing_spills() {
        let mut o = Overlay::with_staging(1024, 1 << 20, &Staging::in_memory(1 << 20)).unwrap();
        for b in 0..100 {
            o.stage(Blk(b), vec![b as u8; 1024]).unwrap();
        }
        assert_eq!(o.spilled_blocks(), 0);
        assert_eq!(o.memory_bytes(), 100 * 1024);
        let bad = Staging {
            spill_dir: Some(PathBuf::from("/nonexistent/pfsck")),
            memory: 0,
            limit: 1 << 20,
        };
        let mut o = Overlay::with_staging(1024, 1 << 20, &bad).unwrap();
        assert!(
            o.stage(Blk(1), vec![0; 1024]).is_err(),
            "no spill file, no staging"
        );
        assert!(o.is_empty());
    }

    /// A repair beside its log is bounded by the device, not by a byte
    /// count: 520 MiB staged (more than the 512 MiB cap there once was),
    /// nearly all of it spilled, reads back as staged.
    #[test]
    fn beside_a_log_the_total_is_not_capped() {
        let dir = Dir::new("uncapped");
        let staging = Staging::beside_log(&dir.0.join("x.undo"), Some(64 * 1024));
        let bs = 64 * 1024u32;
        let blocks = 520 * 16u64;
        let mut o = Overlay::with_staging(bs, (blocks + 1) * u64::from(bs), &staging).unwrap();
        for b in 0..blocks {
            o.stage(Blk(b), vec![b as u8; bs as usize]).unwrap();
        }
        assert_eq!(o.staged_bytes(), blocks * u64::from(bs));
        assert_eq!(o.spilled_blocks(), blocks - 1);
        for b in [0, 4099, blocks - 1] {
            assert_eq!(o.get(Blk(b)).unwrap().unwrap(), vec![b as u8; bs as usize]);
        }
        assert_eq!(dir.entries(), 0, "the spill file has no name");
    }

    #[test]
    fn without_a_log_everything_stays_in_memory() {
        let mut o = Overlay::with_staging(1024, 1 << 20, &Staging::without_log()).unwrap();
        for b in 0..1000 {
            o.stage(Blk(b), vec![b as u8; 1024]).unwrap();
        }
        assert_eq!(o.spilled_blocks(), 0);
        assert_eq!(o.memory_bytes(), 1000 * 1024);
    }
}
