//! (being written)

use super::fsview::Fs;
use super::problem::Problem;

pub fn check(_fs: &Fs) -> Vec<Problem> {
    Vec::new()
}
