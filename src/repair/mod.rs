//! Repair: a whole repair run as a library type.
//!
//! [`session::Session`] checks, has `fix` stage a round into the store's
//! overlay, re-checks through it, plans again until a round stages nothing
//! new, and commits once through [`crate::store::commit`]; it returns what
//! became of each problem and prints nothing. `restart.rs` says where
//! e2fsck -y starts over from pass 1 after some fixes, which the session
//! mirrors.

pub mod restart;
pub mod session;
