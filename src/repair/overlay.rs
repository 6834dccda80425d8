//! Staged block writes: the repaired state held in memory until commit.
//!
//! A fix never writes to the device; it stages whole blocks here. Reads
//! through the overlay see staged blocks over the device, so a later pass of
//! the same run sees what an earlier fix did. Blocks are kept in a
//! `BTreeMap`, so the commit writes (and logs) them in block order whatever
//! order fixes ran in, which keeps the repaired image and the undo log
//! byte-identical across thread counts. The total is bounded: the commit
//! holds both the new blocks and their before-images in memory, and a
//! repair that wants to rewrite more than the bound is better refused than
//! allowed to exhaust memory mid-way.

use super::{RepairError, Result};
use crate::io::Device;
use std::collections::BTreeMap;

/// Default bound on staged bytes (the commit needs twice that in memory).
pub const DEFAULT_LIMIT: u64 = 512 * 1024 * 1024;

pub struct Overlay {
    block_size: u32,
    device_size: u64,
    limit: u64,
    staged_bytes: u64,
    blocks: BTreeMap<u64, Box<[u8]>>,
}

impl Overlay {
    /// An empty overlay for a device of `device_size` bytes read in blocks
    /// of `block_size` (a power of two from 1024 to 65536), holding at most
    /// `limit` bytes.
    pub fn new(block_size: u32, device_size: u64, limit: u64) -> Result<Overlay> {
        if !(block_size.is_power_of_two() && (1024..=65536).contains(&block_size)) {
            return Err(RepairError::Invalid(format!(
                "invalid block size {block_size} for staged writes"
            )));
        }
        Ok(Overlay {
            block_size,
            device_size,
            limit,
            staged_bytes: 0,
            blocks: BTreeMap::new(),
        })
    }

    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    pub fn device_size(&self) -> u64 {
        self.device_size
    }

    /// Number of staged blocks.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Bytes staged so far.
    pub fn staged_bytes(&self) -> u64 {
        self.staged_bytes
    }

    /// Byte offset of `block`, if the whole block lies inside the device.
    pub fn block_offset(&self, block: u64) -> Option<u64> {
        let off = block.checked_mul(u64::from(self.block_size))?;
        let end = off.checked_add(u64::from(self.block_size))?;
        (end <= self.device_size).then_some(off)
    }

    /// Stages the new contents of `block`, replacing any earlier staging.
    pub fn stage(&mut self, block: u64, data: Vec<u8>) -> Result<()> {
        if data.len() != self.block_size as usize {
            return Err(RepairError::Invalid(format!(
                "staged block {block} has {} bytes, not the block size {}",
                data.len(),
                self.block_size
            )));
        }
        if self.block_offset(block).is_none() {
            return Err(RepairError::Invalid(format!(
                "staged block {block} lies beyond the end of the device ({} bytes)",
                self.device_size
            )));
        }
        if !self.blocks.contains_key(&block) {
            let total = self
                .staged_bytes
                .checked_add(u64::from(self.block_size))
                .filter(|&t| t <= self.limit)
                .ok_or_else(|| {
                    RepairError::Invalid(format!(
                        "repair would rewrite more than {} bytes (the staging limit)",
                        self.limit
                    ))
                })?;
            self.staged_bytes = total;
        }
        self.blocks.insert(block, data.into_boxed_slice());
        Ok(())
    }

    /// Forgets a staged block (a later fix decided the block stays as it is).
    pub fn unstage(&mut self, block: u64) {
        if self.blocks.remove(&block).is_some() {
            self.staged_bytes = self.staged_bytes.saturating_sub(u64::from(self.block_size));
        }
    }

    /// The staged contents of `block`, if any.
    pub fn get(&self, block: u64) -> Option<&[u8]> {
        self.blocks.get(&block).map(|b| &b[..])
    }

    /// Whether any block in `blocks` is staged.
    pub fn any_in(&self, blocks: std::ops::Range<u64>) -> bool {
        self.blocks.range(blocks).next().is_some()
    }

    /// Staged blocks in block order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.blocks.iter().map(|(&b, d)| (b, &d[..]))
    }

    /// The staged blocks as byte ranges (offset → bytes), the form a read
    /// overlay on a `Device` takes: a check run through them sees the file
    /// system as the commit will leave it.
    pub fn byte_ranges(&self) -> BTreeMap<u64, Vec<u8>> {
        let bs = u64::from(self.block_size);
        // Staged blocks lie inside the device, so the offsets cannot overflow.
        self.blocks
            .iter()
            .map(|(&b, d)| (b * bs, d.to_vec()))
            .collect()
    }

    /// Fills `buf` from byte `offset` as the device will read after the
    /// commit: staged blocks over the device's bytes.
    pub fn read_at(&self, dev: &Device, offset: u64, buf: &mut [u8]) -> Result<()> {
        dev.read_at(offset, buf)?;
        self.patch(offset, buf);
        Ok(())
    }

    /// Overwrites the parts of `buf` (holding the device's bytes from
    /// `offset`) that staged blocks cover.
    pub fn patch(&self, offset: u64, buf: &mut [u8]) {
        let bs = u64::from(self.block_size);
        let Some(end) = offset.checked_add(buf.len() as u64) else {
            return;
        };
        if buf.is_empty() {
            return;
        }
        let first = offset / bs;
        let last = (end - 1) / bs;
        for (&block, data) in self.blocks.range(first..=last) {
            // Staged blocks lie inside the device, so these cannot overflow.
            let bstart = block * bs;
            let lo = bstart.max(offset);
            let hi = (bstart + bs).min(end);
            if lo >= hi {
                continue;
            }
            let src = &data[(lo - bstart) as usize..(hi - bstart) as usize];
            buf[(lo - offset) as usize..(hi - offset) as usize].copy_from_slice(src);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(size: usize) -> Device {
        Device::from_bytes((0..size).map(|i| (i % 251) as u8).collect())
    }

    #[test]
    fn reads_see_staged_blocks_over_the_device() {
        let d = dev(8192);
        let mut o = Overlay::new(1024, 8192, 1 << 20).unwrap();
        o.stage(2, vec![0xAA; 1024]).unwrap();
        o.stage(3, vec![0xBB; 1024]).unwrap();
        let mut buf = vec![0u8; 3000];
        o.read_at(&d, 1500, &mut buf).unwrap();
        let mut want: Vec<u8> = (1500..4500).map(|i| (i % 251) as u8).collect();
        want[548..1572].fill(0xAA);
        want[1572..2596].fill(0xBB);
        assert_eq!(buf, want);
        assert_eq!(o.iter().map(|(b, _)| b).collect::<Vec<_>>(), vec![2, 3]);
    }

    #[test]
    fn bounds_are_enforced() {
        let mut o = Overlay::new(1024, 4096, 2048).unwrap();
        assert!(o.stage(4, vec![0; 1024]).is_err(), "beyond the device");
        assert!(o.stage(u64::MAX, vec![0; 1024]).is_err());
        assert!(o.stage(0, vec![0; 100]).is_err(), "short block");
        o.stage(0, vec![1; 1024]).unwrap();
        o.stage(1, vec![1; 1024]).unwrap();
        o.stage(1, vec![2; 1024]).unwrap(); // restaging costs nothing
        assert!(o.stage(2, vec![0; 1024]).is_err(), "over the limit");
        o.unstage(0);
        o.stage(2, vec![0; 1024]).unwrap();
        assert_eq!(o.staged_bytes(), 2048);
        assert!(Overlay::new(1000, 4096, 1).is_err());
    }
}
