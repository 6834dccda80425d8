//! On-disk structures of ext2/3/4: pure functions from bytes, no I/O, no panics.
//!
//! Every reader here takes a byte slice and tolerates any length: missing
//! bytes read as zero, so a truncated structure is judged by the checks rather
//! than crashing the parser.

pub mod bitmap;
pub mod bytes;
pub mod casefold;
pub mod checksum;
pub mod crypt;
pub mod dir_entry;
pub mod dir_salvage;
pub mod dx_hash;
pub mod extent;
pub mod fast_commit;
pub mod geometry;
pub mod group_desc;
pub mod htree;
pub mod inode;
pub mod journal;
pub mod mmp;
pub mod num;
pub mod orphan;
pub mod quota;
pub mod superblock;
pub mod xattr;
