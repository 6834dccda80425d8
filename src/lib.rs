//! pfsck: a parallel checker for ext2/ext3/ext4 file systems.
//!
//! Layers, each depending only on those below it:
//! `cli` → `check` → `engine` → `fs` (pure parsing) and `io` (reads);
//! `repair` (staged writes, crash-safe commit) sits beside `check`, over `io`;
//! `online` (snapshots of mounted file systems, checked with `check`) sits
//! under `cli`.
#![deny(unsafe_code)]

pub mod check;
pub mod cli;
pub mod engine;
pub mod error;
pub mod fix;
pub mod fs;
pub mod io;
pub mod online;
pub mod repair;
