//! pfsck: a parallel checker for ext2/ext3/ext4 file systems.
//!
//! Layers, each depending only on those below it (the matrix is in
//! docs/ARCHITECTURE.md, and the test `layers` enforces it):
//! `cli` → `repair` (the session running the rounds) and `online`
//! (snapshots of mounted file systems) → `fix` → `check` → `volume` (the
//! file system handle and the write library) → `store` (staged writes,
//! undo log, crash-safe commit) → `io` (reads) → `engine`, `fs` (pure
//! parsing and encoding). Leaf helpers any layer may use: `narrow`
//! (narrowing numbers on purpose), `newfile` (files created safely),
//! `error`.
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
#[cfg(test)]
mod layers;
pub mod narrow;
pub mod newfile;
pub mod online;
pub mod repair;
pub mod store;
#[cfg(test)]
pub(crate) mod testfs;
pub mod volume;
