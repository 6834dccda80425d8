//! The parallel engine: shared lock-free maps and a work distributor that
//! gives results back in a fixed order, whatever the number of threads.
//!
//! Knows nothing of ext4.

pub mod arena;
pub mod bitmap;
pub mod budget;
pub mod clock;
pub mod list;
pub mod memory;
pub mod pipeline;
pub mod pool;
pub mod progress;
pub mod readahead;
pub mod spill;

pub use arena::{ScratchArena, ScratchSlice};
pub use bitmap::{AtomicBitmap, LinkCounts};
pub use budget::Budget;
pub use clock::{Clock, TimeTrust};
pub use list::ScratchList;
pub use pool::{Control, Threads, par_fold, par_fold_io, par_map};
pub use progress::Progress;
pub use spill::{Spill, SpillStats};
