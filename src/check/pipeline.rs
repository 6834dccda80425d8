//! Passes 1 and 2 pipelined (issue 4): pass 2 checks directory blocks
//! while pass 1 still scans inodes, on one pool of workers
//! (`engine::pipeline`).
//!
//! Stage 0 is pass 1's scan, its units merged in inode order; merging a
//! unit forms pass-2 units from the directories it found (`Units2`: a
//! directory's blocks, flags, checksum seed and policy are all known once
//! its own inode is merged). Stage 1 checks them. An entry's verdict needs
//! its target inode's pass-1 state, written only while the target's unit
//! is scanned: an inode is final once its unit is merged, the watermark
//! `final_below`. An entry naming an inode above it waits (`Gated`), the
//! worker scanning pass-1 units meanwhile, then is checked exactly — no
//! verdict is taken early and nothing is checked twice.
//!
//! What needs all of pass 1 stays after it, the certification step: pass
//! 1's own end (xattr blocks, i_blocks that wait for them, quota, the
//! resize inode), pass 1B, and pass 2's holes, inline directories,
//! parents and second links, htree structure and large_file
//! (`pass2::finish`), which also puts the block problems back in e2fsck's
//! block order.

use super::Options;
use super::dirblock::FsParams;
use super::pass1;
use super::pass2::{self, Gated, StateTargets, Unit2, UnitOut2, Units2};
use super::problem::ProblemList;
use super::state::{DirBlock, State};
use crate::engine::pipeline::{self as pipe, Emit, Help};
use crate::engine::{Budget, ScratchArena};
use crate::error::{Error, Result};
use crate::fs::num::Ino;
use crate::volume::Fs;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::Instant;

/// pFSCK's prior: a directory block costs about twice an inode.
const PRIOR: [f64; 2] = [1.0, 2.0];
/// Pass-2 queue bound (directory blocks): the least per worker, the most.
const BOUND_PER_WORKER: u64 = 64;
const BOUND_MAX: u64 = 32_768;
/// Readahead window (directory blocks): closed until a cold cache shows.
const READAHEAD_MAX: u64 = 2048;

thread_local! {
    /// The worker's read buffer (an inode-table slice, or directory
    /// blocks), shared by its pass-1 and pass-2 units: apart, each pass's
    /// buffer would stay resident beside the other's (128 KiB each, per
    /// worker). A pass-1 unit run inside a waiting pass-2 unit finds it
    /// taken and uses one of its own.
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn take_buffer() -> Vec<u8> {
    BUFFER.with(|b| std::mem::take(&mut *b.borrow_mut()))
}

fn put_buffer(buf: Vec<u8>) {
    BUFFER.with(|b| {
        let mut b = b.borrow_mut();
        if b.capacity() < buf.capacity() {
            *b = buf;
        }
    });
}

/// Passes 1 and 2 as far as the pipeline takes them.
pub(crate) struct Piped {
    /// Pass 1's problems, its end included.
    pub pass1: ProblemList,
    /// Pass 2's units, in the order they were formed.
    pub outs2: Vec<UnitOut2>,
    /// What pass 2's end needs of the directories' block lists.
    pub counts2: pass2::DirCounts,
    pub stats: pipe::Stats,
    /// Per pass: wall seconds it ran, seconds of work, bytes it read.
    pub pass1_time: (f64, f64, u64),
    pub pass2_time: (f64, f64, u64),
}

/// Runs pass 1 with pass 2's directory blocks behind it, then pass 1's
/// end. `opts.auto_threads`: the pool is re-sized from the idle CPUs
/// while it runs.
pub(crate) fn run(
    fs: &Fs,
    state: &mut State,
    budget: &mut Budget,
    opts: &Options,
) -> Result<Piped> {
    let (auto, ctl) = (opts.auto_threads, &opts.control);
    let threads = budget.threads();
    let most = if auto {
        budget.allowed().max(threads.0)
    } else {
        threads.0
    };
    let policies = RwLock::new(Vec::new());
    let bytes = [AtomicU64::new(0), AtomicU64::new(0)];
    let mut merged = pass1::Merged::new(fs, opts.repairing, state.spill.clone());
    let mut units2 = Units2::new(fs);
    let (outs2, stats) = {
        let shared = Mutex::new(&mut *budget);
        let resize = || shared.lock().unwrap_or_else(|e| e.into_inner()).threads().0;
        let st: &State = state;
        let mut scan = pass1::Scan::new(fs, st);
        scan.split_huge_files(threads.0);
        scan.optimize_extents(opts.optimize_extents, opts.rehash_dirs);
        scan.convert_bmap(opts.convert_bmap && opts.repairing);
        scan.read_only(!opts.repairing);
        let n0 = scan.len();
        let final_below = AtomicU32::new(0);
        let fsp = pass2::fs_params(fs, opts.repairing);
        let targets = StateTargets::new(fs, st, Some(&policies));
        let arena = st.spill.as_ref().map(ScratchArena::new);
        let cfg = pipe::Config {
            threads: most,
            // A slow device: more workers than CPUs keep more reads in
            // flight. Four in all, not eight: each costs its 128 KiB unit
            // buffer and ~100 KiB of stack and context (8 put the peak RSS
            // on slowfuse above e2fsck's, 3.3 vs 3.1 MiB), and pass 2's
            // units already keep IO_DEPTH reads in flight (`read_many`).
            extra: (crate::io::IO_DEPTH / 4).saturating_sub(threads.0),
            io_bound: &|| fs.dev.is_slow(),
            resize: if auto { Some(&resize) } else { None },
            prior: PRIOR,
            bound: (BOUND_PER_WORKER * threads.0 as u64, BOUND_MAX),
            readahead: (0, 0, READAHEAD_MAX),
            control: ctl,
            overlap: opts.overlap,
        };
        let spill = st.spill.as_deref();
        let mut merge = |u: usize, o: pass1::UnitOut, emit: &mut Emit<Unit2>| {
            if let Some(s) = spill {
                s.tick();
            }
            let (dirs, blocks, tails) = merged.absorb(o, &policies);
            let mut out = |unit: Unit2| {
                let n = unit.len() as u64;
                emit.push(unit, n);
            };
            units2.add(
                st,
                (dirs, blocks, tails),
                &|ino| targets.policy_of(ino),
                &mut out,
            );
            if u + 1 == n0 {
                units2.flush(&mut out);
            }
            final_below.store(scan.final_below(u), Ordering::Release);
        };
        pipe::run(
            &cfg,
            n0,
            &|u| scan.items(u),
            &|| scan.worker(),
            &|w, u| {
                // Reads of a pass-1 unit run while a pass-2 unit waits
                // count for pass 1 only.
                if ctl.cancelled() {
                    return pass1::UnitOut::default();
                }
                let before = crate::io::thread_bytes();
                let mut table = take_buffer();
                let r = scan.scan(w, &mut table, u);
                put_buffer(table);
                let read = crate::io::thread_bytes() - before;
                crate::io::set_thread_bytes(before);
                bytes[0].fetch_add(read, Ordering::Relaxed);
                r
            },
            &mut merge,
            &|unit| pass2::prefetch(fs, unit),
            &|| (),
            &|_, unit: &Unit2, help: &mut Help<Unit2>| {
                if let Some(s) = spill {
                    s.tick();
                }
                let at = Stage2 {
                    fs,
                    fsp: &fsp,
                    scan: &scan,
                    final_below: &final_below,
                    targets: &targets,
                    bytes: &bytes[1],
                    arena: arena.as_ref(),
                };
                at.run(unit, help)
            },
        )
    };
    if ctl.cancelled() {
        return Err(Error::Interrupted);
    }
    let t = Instant::now();
    let b = fs.dev.bytes_read();
    let enc = policies.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut stats = stats;
    stats.split = merged.split();
    let pass1 = pass1::finish(
        fs,
        state,
        merged,
        enc,
        opts.repairing,
        budget.threads(),
        ctl,
    );
    let end = t.elapsed().as_secs_f64();
    let end_bytes = fs.dev.bytes_read() - b;
    Ok(Piped {
        pass1,
        outs2,
        counts2: units2.counts,
        pass1_time: (
            stats.stage0_merged + end,
            stats.work_seconds[0] + end,
            bytes[0].load(Ordering::Relaxed) + end_bytes,
        ),
        pass2_time: (
            (stats.last_end[1] - stats.first_start[1]).max(0.0),
            stats.work_seconds[1],
            bytes[1].load(Ordering::Relaxed),
        ),
        stats,
    })
}

/// What a pass-2 unit of the pipeline works with.
struct Stage2<'a> {
    fs: &'a Fs,
    fsp: &'a FsParams,
    scan: &'a pass1::Scan<'a>,
    /// Inodes below this are final (pass 1 has merged them).
    final_below: &'a AtomicU32,
    targets: &'a StateTargets<'a>,
    /// Bytes pass 2 read.
    bytes: &'a AtomicU64,
    /// `--max-memory`: where the units' results go.
    arena: Option<&'a ScratchArena>,
}

impl Stage2<'_> {
    /// Checks the directory blocks of `unit` that pass 1 has got far
    /// enough for, and parks the others (`help.defer`).
    fn run(&self, unit: &Unit2, help: &mut Help<Unit2>) -> UnitOut2 {
        let (fs, fsp, scan, final_below, targets, bytes) = (
            self.fs,
            self.fsp,
            self.scan,
            self.final_below,
            self.targets,
            self.bytes,
        );
        let before = crate::io::thread_bytes();
        let mut buf = take_buffer();
        let own_hint = help.readahead();
        let help = RefCell::new(help);
        // A block whose entries name inodes pass 1 will reach soon
        // is checked now (entries wait, the worker scanning
        // meanwhile); one that needs much more of pass 1 is parked
        // until then (read again when it runs), however many are
        // parked: a parked block costs what a queued one does, while a
        // unit that waits far ahead runs pass-1 units whose merges
        // queue every directory block behind it with nobody draining
        // (dir50-1k at 10M inodes, parking held to 32,768 blocks: 4.9M
        // of 5M blocks queued at once, 250 MiB, the check's peak).
        let mut parked: Vec<(usize, DirBlock)> = Vec::new();
        let mut plan = |db: &DirBlock, b: &[u8]| {
            let top = pass2::max_target(fsp, b);
            if top < final_below.load(Ordering::Acquire) {
                return true;
            }
            let need = scan.units_needed(top);
            let h = help.borrow();
            if h.near(need) {
                return true;
            }
            parked.push((need, *db));
            false
        };
        let gate = |ino: Ino| {
            let ino = ino.get();
            if ino >= final_below.load(Ordering::Acquire) {
                help.borrow_mut()
                    .until(&|| ino < final_below.load(Ordering::Acquire));
            }
        };
        let gated = Gated {
            base: targets,
            gate,
        };
        let (mut out, ready) =
            pass2::check_unit2(fs, fsp, unit, &gated, &mut plan, &mut buf, own_hint);
        out.settle(self.arena);
        put_buffer(buf);
        let help = help.into_inner();
        if let Some(r) = ready {
            help.reads_ready(r);
        }
        // One parked unit per point of pass 1 its blocks need.
        parked.sort_unstable();
        for group in parked.chunk_by(|a, b| a.0 == b.0) {
            let blocks: Vec<DirBlock> = group.iter().map(|&(_, b)| b).collect();
            let n = blocks.len() as u64;
            help.defer(unit.subset(blocks), n, group[0].0);
        }
        let read = crate::io::thread_bytes() - before;
        bytes.fetch_add(read, Ordering::Relaxed);
        out
    }
}
