//! (being written)

use super::fsview::Fs;
use super::problem::Problem;
use super::state::State;
use crate::engine::Threads;
use crate::error::Result;

pub fn run(_fs: &Fs, _state: &State, _threads: Threads) -> Result<Vec<Problem>> {
    Ok(Vec::new())
}
