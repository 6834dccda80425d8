//! Rewriting an invalid MMP block (bad magic or checksum), as e2fsck -y
//! and -p do before they check: a fresh block saying nobody uses the file
//! system, written by this node.

use crate::fs::mmp::SEQ_CLEAN;
use crate::store::mmp::{block, interval};
use crate::store::overlay::Overlay;
use crate::volume::{Fs, edit as vol};

/// Stages a fresh MMP block ("clean") over an invalid one.
pub(super) fn rewrite(fs: &Fs, overlay: &mut Overlay) -> super::Result<()> {
    let name = fs
        .dev
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let seed = fs.metadata_csum().then(|| fs.sb.csum_seed());
    let b = block(fs.block_size(), SEQ_CLEAN, interval(&fs.sb), &name, seed);
    Ok(vol::stage_if_changed(fs, overlay, fs.sb.mmp_block, b)?)
}
