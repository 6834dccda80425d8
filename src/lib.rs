//! pfsck: a parallel checker for ext2/ext3/ext4 file systems.
//!
//! Layers, each depending only on those below it:
//! `cli` → `fix` → `check` → `volume` (the file system handle and the
//! write library) → `engine`, `fs` (pure parsing and encoding), `io`
//! (reads) and `repair` (staged writes, crash-safe commit, over `io`).
//! Leaf helpers any layer may use: `narrow` (narrowing numbers on
//! purpose), `newfile` (files created safely), `error`.
//! `online` (snapshots of mounted file systems, checked with `check`) sits
//! under `cli`.
#![deny(unsafe_code)]
// Unit tests build blocks from literals; the narrowing gate is for the
// code that reads hostile input (Cargo.toml).
#![cfg_attr(test, allow(clippy::cast_possible_truncation))]

pub mod check;
pub mod cli;
pub mod engine;
pub mod error;
pub mod fix;
pub mod fs;
pub mod io;
pub mod narrow;
pub mod newfile;
pub mod online;
pub mod repair;
#[cfg(test)]
pub(crate) mod testfs;
pub mod volume;
