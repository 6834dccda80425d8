//! pfsck's integration tests, in one binary: each module was a test binary
//! of its own, and each rebuilt `common`; linked once, the suite builds in
//! a fraction of the time and its cached base images are shared.
//! Run one group with `cargo test --release --test suite NAME::`.

// The 150-line limit (Cargo.toml, clippy.toml) is for src/: a test that
// lists its cases inline reads better whole than split.
#![allow(clippy::too_many_lines)]
// Tests build images from literals; the narrowing gate is for src/.
#![allow(clippy::cast_possible_truncation)]

mod badblocks;
mod bmap2extent;
mod catalogue_13g;
mod catalogue_13i;
mod catalogue_13j;
mod catalogue_13k;
mod catalogue_13m;
mod catalogue_13n;
mod catalogue_13o;
mod catalogue_p2_5;
mod check_record;
mod clean_matrix;
mod cli_compat;
mod codes_13l;
mod codes_fz34;
mod codes_fz36h;
mod codes_fz36l;
mod common;
mod conformance;
mod corruptions;
mod crash_images;
mod defects;
mod determinism;
mod difffuzz;
mod drop_16k;
mod dup_output;
mod ea_inode_quota;
mod external_journal;
mod fast_commit;
mod features;
mod file_too_big;
mod fuzz_aborts;
mod fuzz_exits_fz36;
mod fuzz_exits_fz36j;
mod fuzz_finds;
mod geometry;
mod huge_files;
mod install;
mod interactive;
mod journal_flags;
mod journal_recovery;
mod journal_recreate;
mod journal_replay_repair;
mod json_schema;
mod kept_paths;
mod kernel_finds;
mod latch_output;
mod lost_found_create;
mod max_memory;
mod messages_compat;
mod online;
mod orphan_file;
mod orphans;
mod parity;
mod pass1_codes;
mod pass1_pass5_images;
mod pass1e;
mod pass234;
mod pipeline;
mod preen_output;
mod problem_codes;
mod problems_doc;
mod progress_fd;
mod quota_hide;
mod repair_bigalloc;
mod repair_blockmap;
mod repair_commit;
mod repair_dir;
mod repair_dup;
mod repair_fix;
mod repair_inode;
mod repair_quota;
mod repair_resize;
mod repair_super;
mod restart;
mod robustness;
mod safety;
mod sb_flags;
mod sb_times;
mod signals;
mod streaming;
