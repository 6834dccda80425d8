//! Every on-disk parser on arbitrary bytes: none may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pfsck::fs::{dir_entry, dx_hash, extent, geometry, group_desc, htree, inode, journal, quota, superblock, xattr};

fuzz_target!(|data: &[u8]| {
    let sb = superblock::Superblock::parse(data);
    let _ = geometry::Geometry::new(&sb);
    let _ = sb.compute_checksum();
    let _ = group_desc::GroupDesc::parse(data);
    let _ = group_desc::compute_checksum(&sb, 3, data);
    let i = inode::Inode::parse(data);
    let _ = i.block_ptrs();
    let _ = inode::compute_checksum(1, pfsck::fs::num::Ino(12), data);
    let h = extent::parse_header(data);
    for k in 0..h.entries.min(400) as usize {
        let _ = extent::parse_leaf(data, k);
        let _ = extent::parse_index(data, k);
    }
    let _ = extent::compute_block_checksum(7, data);
    let mut off = 0;
    while let Ok(e) = dir_entry::read_entry(data, off, true) {
        let _ = dx_hash::dx_hash(e.name, 1, &[0; 4]);
        off += e.rec_len;
    }
    let _ = dir_entry::has_tail(data);
    let info = htree::parse_root_info(data);
    let off = htree::root_count_offset(&info);
    let cl = htree::parse_count_limit(data, off);
    let _ = htree::compute_tail_checksum(1, data, off, cl);
    if let Ok(es) = xattr::read_entries(data, 0) {
        let _ = xattr::block_hash(&es);
    }
    let _ = xattr::ea_inode_refcount(data);
    // The input as a whole quota file, for each type.
    for qtype in 0..3 {
        let _ = quota::read_dquots(qtype, data.len() as u64, &mut |n, buf| {
            let off = n as usize * quota::QUOTA_BLOCK;
            buf.fill(0);
            if let Some(src) = data.get(off..) {
                let len = src.len().min(quota::QUOTA_BLOCK);
                buf[..len].copy_from_slice(&src[..len]);
            }
            true
        });
    }
    let _ = journal::parse_superblock(data);
    let _ = journal::compute_sb_checksum(data);
});
