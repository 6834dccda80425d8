//! Where the write library puts what it changes: whole blocks, staged
//! over the device and read back through it, never written to it.

use crate::error::Result;
use crate::fs::num::Blk;
use crate::io::Device;
use crate::narrow::to_usize;
use crate::store::overlay::Overlay;
use std::collections::BTreeMap;
use std::ops::Range;

/// Staged block writes that reads go through.
pub trait Stage {
    /// Reads `buf.len()` bytes at byte `offset` of `dev` as the staged
    /// blocks leave them.
    fn read_at(&self, dev: &Device, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// Stages the new contents of block `blk` (a whole block).
    fn stage(&mut self, blk: Blk, data: Vec<u8>) -> Result<()>;
    /// Stages block `blk` as written by the superblock or descriptor
    /// encoders, the only writers the commit lets reach the primary
    /// superblock and descriptor blocks.
    fn stage_encoded(&mut self, blk: Blk, data: Vec<u8>) -> Result<()> {
        self.stage(blk, data)
    }
    /// Is any block of `blocks` staged? (The allocator never hands those
    /// out.)
    fn any_in(&self, blocks: Range<Blk>) -> bool;
}

impl Stage for Overlay {
    fn read_at(&self, dev: &Device, offset: u64, buf: &mut [u8]) -> Result<()> {
        Ok(Overlay::read_at(self, dev, offset, buf)?)
    }
    fn stage(&mut self, blk: Blk, data: Vec<u8>) -> Result<()> {
        Ok(Overlay::stage(self, blk, data)?)
    }
    fn stage_encoded(&mut self, blk: Blk, data: Vec<u8>) -> Result<()> {
        Ok(Overlay::stage_encoded(self, blk, data)?)
    }
    fn any_in(&self, blocks: Range<Blk>) -> bool {
        Overlay::any_in(self, blocks)
    }
}

/// Blocks kept in memory, by block number: what a check computes without
/// a repair's staging (the orphan view, later laid over the device as a
/// read overlay).
pub struct Blocks {
    block_size: u64,
    pub map: BTreeMap<u64, Vec<u8>>,
}

impl Blocks {
    pub fn new(block_size: u32) -> Blocks {
        Blocks {
            block_size: u64::from(block_size),
            map: BTreeMap::new(),
        }
    }
}

impl Stage for Blocks {
    fn read_at(&self, dev: &Device, offset: u64, buf: &mut [u8]) -> Result<()> {
        dev.read_at(offset, buf)?;
        let bs = self.block_size;
        let end = offset.saturating_add(buf.len() as u64);
        let first = offset / bs;
        let last = end.div_ceil(bs);
        for (&b, data) in self.map.range(first..last) {
            let start = b * bs;
            // The overlap of [start, start + bs) with [offset, end).
            let from = start.max(offset);
            let to = (start + data.len() as u64).min(end);
            if from < to {
                let src = &data[to_usize(from - start)..to_usize(to - start)];
                buf[to_usize(from - offset)..to_usize(to - offset)].copy_from_slice(src);
            }
        }
        Ok(())
    }
    fn stage(&mut self, blk: Blk, data: Vec<u8>) -> Result<()> {
        self.map.insert(blk.get(), data);
        Ok(())
    }
    fn any_in(&self, blocks: Range<Blk>) -> bool {
        self.map
            .range(blocks.start.get()..blocks.end.get())
            .next()
            .is_some()
    }
}
