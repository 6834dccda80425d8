//! Unit tests of the passes, in-process on small images made by mkfs.ext4
//! and debugfs (`crate::testfs`): each damage is one e2fsck knows, and the
//! test names the problem e2fsck reports for it.

mod dup;
mod orphan;
mod pass1;
mod pass2;
mod plan;
