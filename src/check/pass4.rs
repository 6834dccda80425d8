//! (being written)

use super::fsview::Fs;
use super::problem::Problem;
use super::state::State;
use crate::error::Result;

pub fn run(_fs: &Fs, _state: &State) -> Result<Vec<Problem>> {
    Ok(Vec::new())
}
