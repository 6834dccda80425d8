//! One huge file's extent tree walked on several threads (issue 17,
//! linux-ext4's "Case-4": a few fragmented files hold most of the blocks,
//! and one pass-1 unit would walk them alone).
//!
//! The subtrees below one level of the tree (the frontier) are walked
//! apart, each as if no extent came before it, by helper threads that
//! live as long as the file's walk, and by the walk itself while it waits.
//! The walk goes on in order, as on one thread: where it reaches a subtree
//! already walked, it takes it in when what the subtree assumed holds (its
//! first leaf entries lie past the last extent taken, it shares no node
//! with what was walked, no budget runs out inside it), and walks it again
//! in place otherwise. Taking in is cheap: the visitor adds the subtree's
//! sums and ORs its claims, 64 blocks to a word, into the shared map.
//! Nothing is claimed for a subtree not taken in, so problems, their
//! order and every claim are those of one thread.

use super::{
    ExtentWalk, MapInfo, MapVisitor, Scratch, Subtree, WALK_DEPTH_LIMIT, child_bound,
    child_end_blk, header_problem, node_entry, root_end_blk, too_deep,
};
use crate::check::problem::Problem;
use crate::fs::extent;
use crate::fs::num::Blk;
use crate::volume::Fs;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::Thread;
use std::time::Duration;

/// A tree is split when its frontier has this many subtrees at least
/// (about 64 leaves, 20,000 extents: below, the walk takes a millisecond
/// or so, not worth a thread).
const SPLIT_MIN_TASKS: usize = 64;
/// Subtrees per thread the frontier aims at: enough to even out their
/// sizes.
const TASKS_PER_THREAD: usize = 64;
/// How far ahead of the walk subtrees may be walked, in leaves and in
/// larger subtrees: bounds the memory their results hold (a leaf's is a
/// few hundred bytes, a subtree's up to a few hundred KiB).
const WINDOW_LEAVES: usize = 256;
const WINDOW_SUBTREES: usize = 8;
/// Leaves a thread takes at a time, read together when they are adjacent.
const LEAF_BATCH: usize = 4;
/// Claim words a recycled result keeps room for: past it (a leaf of long
/// runs) the room is given back to the allocator rather than held by its
/// slot for the rest of the file.
const RECYCLE_WORDS: usize = 4096;
/// Spins the walk waits for a subtree a helper is walking, with nothing
/// else to walk, before it sleeps until the helper is done: about 25 µs
/// on this project's machine (4,096 took 97 µs), the walk of a few
/// leaves, so that the wait at a file's end rarely costs a wake-up.
const WAIT_SPINS: u32 = 1024;
/// Longest sleep between two looks at a flag another thread sets: the
/// wake-ups are not lost (see `Shared::finish`, `Shared::help`), so this
/// only bounds a wait on a helper that died.
const SLEEP_LIMIT: Duration = Duration::from_millis(10);
/// `Shared::waiting_for` when the walk waits for no task.
const NO_TASK: usize = usize::MAX;

/// `walk_extents` for a visitor that is `splittable`, on `threads`
/// threads when the tree has enough subtrees (else on this one). The
/// result (problems, their order, what the visitor ends with, its
/// claims) is the walk's on one thread. Adds to `scratch.split` the
/// subtrees walked apart and how many were taken in.
pub fn walk_extents_split<V: MapVisitor>(
    fs: &Fs,
    info: MapInfo,
    root: &[u8],
    scratch: &mut Scratch,
    v: &mut V,
    threads: usize,
) {
    let h = extent::parse_header(root);
    let tasks = if threads > 1 && v.splittable() && header_problem(root, 60).is_none() {
        frontier(
            fs,
            root,
            root_end_blk(info.eof_block),
            h.depth,
            TASKS_PER_THREAD * threads,
        )
    } else {
        Vec::new()
    };
    if tasks.len() < SPLIT_MIN_TASKS {
        return super::walk_extents(fs, info, root, scratch, v);
    }
    too_deep(fs, info.ino, h.depth, v);
    let shared = Shared::new(fs, info, tasks, threads);
    let taken = std::thread::scope(|sc| {
        let mut handles = Vec::with_capacity(threads - 1);
        for _ in 1..threads {
            let spawned = std::thread::Builder::new()
                .name("pfsck-split".into())
                .spawn_scoped(sc, || {
                    shared.help();
                    crate::io::thread_bytes()
                });
            match spawned {
                Ok(h) => handles.push(h),
                // No thread: the walk produces alone, as it does while
                // it waits.
                Err(_) => break,
            }
        }
        let mut spec = Spec {
            shared: &shared,
            index: None,
            pos: 0,
            helpers: handles.iter().map(|h| h.thread().clone()).collect(),
            own: Producer::default(),
            taken: 0,
        };
        let mut w = ExtentWalk::new(fs, info, v, h.depth, Some(&mut spec));
        w.node(
            root,
            h.depth,
            0,
            None,
            root_end_blk(info.eof_block),
            scratch.begin(),
        );
        shared.stop.store(true, Ordering::Release);
        for t in &spec.helpers {
            t.unpark();
        }
        // The helpers' reads count as the walk's (pass 1's, for -t).
        let read: u64 = handles.into_iter().filter_map(|h| h.join().ok()).sum();
        crate::io::set_thread_bytes(crate::io::thread_bytes() + read);
        spec.taken
    });
    scratch.split[0] += shared.walked.load(Ordering::Relaxed);
    scratch.split[1] += taken;
    scratch.split[2] += shared.by_helpers.load(Ordering::Relaxed);
}

/// A subtree to walk apart: the child an index entry names, with what the
/// walk passes down to it (its parent's bounds, the scratch levels left).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Task {
    pub pblk: u64,
    pub lblk: u64,
    /// The depth the tree's root says: levels count down from it.
    pub root_depth: u16,
    /// Last logical block the subtree may map (None: no bound).
    pub end: Option<u64>,
    /// Where the subtree ends for its last index entry (`child_end_blk`).
    pub end_blk: u64,
    pub depth: u16,
    pub room: usize,
}

/// The nodes at the highest level of the tree (below the root) that has
/// `want` of them, or the leaves: each a subtree to walk apart, in the
/// walk's order. Only nodes that read and look like nodes are followed;
/// the walk itself judges everything again, so a wrong guess here only
/// costs a subtree walked in place.
fn frontier(fs: &Fs, root: &[u8], end_blk: u64, depth: u16, want: usize) -> Vec<Task> {
    if depth == 0 {
        return Vec::new();
    }
    let bs = fs.block_size();
    let root_depth = depth;
    let mut seen = HashSet::new();
    let children = |b: &[u8],
                    depth: u16,
                    end_blk: u64,
                    room: usize,
                    seen: &mut HashSet<u64>,
                    out: &mut Vec<Task>| {
        let n = extent::parse_header(b).entries as usize;
        for i in 0..n {
            let (lblk, pblk, len, _) = node_entry(b, i, false, end_blk);
            if fs.geo.block_in_fs(pblk) && seen.insert(pblk) {
                out.push(Task {
                    pblk,
                    lblk,
                    root_depth,
                    end: child_bound(lblk, len),
                    end_blk: child_end_blk(b, i, end_blk),
                    depth: depth - 1,
                    room,
                });
            }
        }
    };
    let mut level = Vec::new();
    children(
        root,
        depth,
        end_blk,
        WALK_DEPTH_LIMIT as usize,
        &mut seen,
        &mut level,
    );
    let mut buf = vec![0u8; bs];
    while level.len() < want && level.first().is_some_and(|t| t.depth > 0 && t.room > 1) {
        let mut next = Vec::new();
        for t in &level {
            let ok = fs
                .dev
                .read_at(Blk(t.pblk).byte(fs.geo.block_size), &mut buf)
                .is_ok()
                && header_problem(&buf, bs).is_none();
            if ok {
                children(&buf, t.depth, t.end_blk, t.room - 1, &mut seen, &mut next);
            }
        }
        level = next;
    }
    level
}

/// A child node's header as its parent judges it.
#[derive(Clone, Debug, Default)]
pub(super) struct ChildHead {
    pub read_err: Option<String>,
    pub why: Option<&'static str>,
    pub entries: u16,
    pub first: u64,
    pub csum_bad: bool,
}

/// Judges the header of `buf`, a child node. Its depth field is not
/// judged: libext2fs counts levels down from the root's depth and never
/// reads a child's, so e2fsck keeps a node whose field is wrong.
pub(super) fn child_head(info: &MapInfo, buf: &[u8]) -> ChildHead {
    let ch = extent::parse_header(buf);
    ChildHead {
        read_err: None,
        why: header_problem(buf, buf.len()),
        entries: ch.entries,
        first: u64::from(extent::first_lblk(buf)),
        csum_bad: info.csum_seed.is_some_and(|seed| {
            info.inode_unreadable
                || extent::compute_block_checksum(seed, buf)
                    .is_none_or(|c| c != extent::stored_block_checksum(buf))
        }),
    }
}

/// A subtree walked apart, as if its predecessors had taken no extent.
#[derive(Default)]
pub(super) struct Walked {
    pub head: ChildHead,
    pub problems: Vec<Problem>,
    /// Nodes below its root.
    pub nodes: Vec<u64>,
    pub sub: Subtree,
    pub last_lblk: Option<u64>,
    /// The physical block of the last entry it scanned (0: none).
    pub last_pblk: u64,
    pub pending_min: Option<u64>,
    pub stopped: bool,
    /// The task walked (set when it is left in its slot).
    task: usize,
}

impl Walked {
    /// Empties it for the next subtree, keeping the room of its lists:
    /// results go round between the threads (see `Shared::publish`) so
    /// that a walk allocates nothing per subtree. One arena serves every
    /// thread (main.rs), and each helper growing its lists while the walk
    /// freed theirs made the two wait on the arena's lock.
    fn clear(&mut self) {
        let Walked {
            mut problems,
            mut nodes,
            sub,
            ..
        } = std::mem::take(self);
        let mut claims = sub.claims;
        problems.clear();
        nodes.clear();
        claims.words.clear();
        claims.again.clear();
        *self = Walked {
            problems,
            nodes,
            sub: Subtree {
                claims,
                ..Subtree::default()
            },
            ..Walked::default()
        };
    }
}

/// The visitor of a subtree walked apart: records, claims nothing.
#[derive(Default)]
struct Recorder {
    problems: Vec<Problem>,
    sub: Subtree,
}

impl MapVisitor for Recorder {
    fn data(&mut self, lblk: u64, pblk: u64, len: u64, unwritten: bool) {
        let s = &mut self.sub;
        if s.first_pblk.is_none() {
            s.first_pblk = Some(pblk);
        } else if pblk != s.last_pblk + 1 {
            s.fragmented = true;
        }
        s.last_pblk = pblk + len.saturating_sub(1);
        s.blocks += len;
        let last = lblk + len.saturating_sub(1);
        s.last_block = Some(s.last_block.map_or(last, |l| l.max(last)));
        if !unwritten {
            s.last_init = Some(s.last_init.map_or(last, |l| l.max(last)));
        }
        s.claims.add(pblk, len);
    }
    fn node(&mut self, pblk: u64) {
        self.sub.blocks += 1;
        self.sub.claims.add(pblk, 1);
    }
    fn extent_node(&mut self, level: u16, entries: u16, max: u16) {
        self.sub.tree.node(level, entries, max);
    }
    fn problem(&mut self, p: Problem) {
        self.problems.push(p);
    }
}

/// What a thread walks subtrees apart with.
#[derive(Default)]
struct Producer {
    scratch: Scratch,
    buf: Vec<u8>,
    /// The result being made, swapped into the task's slot when done.
    out: Walked,
}

/// Walks the subtree of `t` apart into `p.out`, reading its root with
/// `ahead` (with `next`, the roots this thread walks after it).
fn walk_apart(fs: &Fs, info: MapInfo, t: Task, next: impl Iterator<Item = u64>, p: &mut Producer) {
    let levels = p.scratch.begin();
    let (first_level, rest) = levels.split_at_mut(1);
    let ahead = &mut first_level[0].ahead;
    ahead.set_block_size(fs.block_size());
    let buf = &mut p.buf;
    buf.resize(fs.block_size(), 0);
    let walked = &mut p.out;
    walked.clear();
    if let Err(e) = ahead.read(&fs.dev, t.pblk, next, buf) {
        walked.head.read_err = Some(e.to_string());
        return;
    }
    walked.head = child_head(&info, buf);
    if walked.head.why.is_some() || walked.head.entries == 0 {
        return;
    }
    let mut rec = Recorder {
        problems: std::mem::take(&mut walked.problems),
        sub: std::mem::take(&mut walked.sub),
    };
    let mut w = ExtentWalk::new(fs, info, &mut rec, t.root_depth, None);
    let room = t.room.min(rest.len());
    w.node(
        buf,
        t.depth,
        walked.head.first,
        t.end,
        t.end_blk,
        &mut rest[..room],
    );
    walked.last_lblk = w.last_lblk;
    walked.last_pblk = w.last_pblk;
    walked.pending_min = w.pending_min;
    walked.stopped = w.stopped;
    walked.nodes.extend(w.seen);
    walked.problems = rec.problems;
    walked.sub = rec.sub;
}

/// Where the result of a task is left for the walk: task `k` goes to
/// slot `k % window`, as no task is walked a window or more ahead of the
/// one the walk waits for.
#[derive(Default)]
struct Slot {
    /// The task whose result the slot holds, plus one (0: none yet).
    task: AtomicUsize,
    walked: Mutex<Walked>,
}

/// What the walk and its helpers share.
struct Shared<'a> {
    tasks: Vec<Task>,
    /// `window` of them (fewer for fewer tasks).
    slots: Vec<Slot>,
    /// The next task nobody has taken to walk apart.
    next: AtomicUsize,
    /// The task the walk waits for or last took in: tasks from `at +
    /// window` on wait.
    at: AtomicUsize,
    window: usize,
    /// Tasks a thread takes at a time.
    batch: usize,
    stop: AtomicBool,
    /// Helpers waiting for the walk to move on.
    sleeping: AtomicUsize,
    /// The walking thread, woken when the task it sleeps on is done.
    walker: Thread,
    /// The task the walk sleeps on (`NO_TASK`: none).
    waiting_for: AtomicUsize,
    /// A helper ended without finishing the tasks it took (it panicked):
    /// the walk then walks in place what it would wait for.
    lost: AtomicBool,
    walked: AtomicU64,
    by_helpers: AtomicU64,
    fs: &'a Fs,
    info: MapInfo,
}

impl<'a> Shared<'a> {
    /// The tasks of a walk on `threads` threads, walked by the calling
    /// thread.
    fn new(fs: &'a Fs, info: MapInfo, tasks: Vec<Task>, threads: usize) -> Self {
        let leaves = tasks.first().is_some_and(|t| t.depth == 0);
        let window = if leaves {
            WINDOW_LEAVES
        } else {
            WINDOW_SUBTREES.max(4 * threads)
        };
        Shared {
            next: AtomicUsize::new(0),
            at: AtomicUsize::new(0),
            window,
            batch: if leaves { LEAF_BATCH } else { 1 },
            stop: AtomicBool::new(false),
            sleeping: AtomicUsize::new(0),
            walker: std::thread::current(),
            waiting_for: AtomicUsize::new(NO_TASK),
            lost: AtomicBool::new(false),
            walked: AtomicU64::new(0),
            by_helpers: AtomicU64::new(0),
            slots: (0..window.min(tasks.len()).max(1))
                .map(|_| Slot::default())
                .collect(),
            tasks,
            fs,
            info,
        }
    }

    /// Takes the next tasks to walk apart, when within the window.
    fn grab(&self) -> Option<std::ops::Range<usize>> {
        let n = self.tasks.len();
        let mut j = self.next.load(Ordering::Acquire);
        loop {
            let limit = (self.at.load(Ordering::Acquire) + self.window).min(n);
            if j >= limit || self.stop.load(Ordering::Relaxed) {
                return None;
            }
            let end = (j + self.batch).min(limit);
            match self
                .next
                .compare_exchange_weak(j, end, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(j..end),
                Err(now) => j = now,
            }
        }
    }

    fn produce(&self, r: std::ops::Range<usize>, p: &mut Producer) {
        for k in r.clone() {
            let next = self.tasks[k + 1..r.end].iter().map(|t| t.pblk);
            walk_apart(self.fs, self.info, self.tasks[k], next, p);
            self.publish(k, &mut p.out);
        }
        self.walked.fetch_add(r.len() as u64, Ordering::Relaxed);
    }

    fn slot(&self, k: usize) -> &Slot {
        &self.slots[k % self.slots.len()]
    }

    fn is_done(&self, k: usize) -> bool {
        self.slot(k).task.load(Ordering::SeqCst) == k + 1
    }

    /// Leaves task `k`'s result in its slot, taking in exchange what the
    /// slot held (a result taken in and handed back, emptied, by the
    /// walk, or one it skipped), and wakes the walk if it sleeps on `k`.
    /// A slot already holding a later task keeps it: `k` was skipped
    /// while this thread walked it. With `wait_for`'s order reversed (it
    /// names the task, then looks at the slot), one of the two sees the
    /// other's store: a wake-up is never lost.
    fn publish(&self, k: usize, w: &mut Walked) {
        let slot = self.slot(k);
        {
            let mut held = slot.walked.lock().unwrap_or_else(|e| e.into_inner());
            if slot.task.load(Ordering::SeqCst) > k + 1 {
                return;
            }
            w.task = k;
            std::mem::swap(&mut *held, w);
            slot.task.store(k + 1, Ordering::SeqCst);
        }
        if self.waiting_for.load(Ordering::SeqCst) == k {
            self.walker.unpark();
        }
    }

    /// Sleeps until a helper has walked task `i`: false if a helper was
    /// lost, and the task may never be.
    fn wait_for(&self, i: usize) -> bool {
        self.waiting_for.store(i, Ordering::SeqCst);
        let mut walked = true;
        while !self.is_done(i) {
            if self.lost.load(Ordering::Acquire) {
                walked = false;
                break;
            }
            std::thread::park_timeout(SLEEP_LIMIT);
        }
        self.waiting_for.store(NO_TASK, Ordering::SeqCst);
        walked
    }

    /// Whether a sleeping helper should wake: it should end, or the
    /// window has room for a quarter of it (or for the last tasks), so
    /// that a helper a window ahead of a slow walk is not woken for each
    /// task the walk takes in.
    fn helper_may_go(&self) -> bool {
        let n = self.tasks.len();
        let next = self.next.load(Ordering::SeqCst);
        let limit = (self.at.load(Ordering::SeqCst) + self.window).min(n);
        next >= n
            || self.stop.load(Ordering::SeqCst)
            || (next < limit && (limit - next >= self.window.div_ceil(4) || limit == n))
    }

    /// A helper thread: walks tasks apart until all are taken or the walk
    /// ends, waiting while it is a window ahead.
    fn help(&self) {
        let _lost = LostGuard(self);
        let mut p = Producer::default();
        loop {
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            if let Some(r) = self.grab() {
                self.by_helpers.fetch_add(r.len() as u64, Ordering::Relaxed);
                self.produce(r, &mut p);
                continue;
            }
            if self.next.load(Ordering::Acquire) >= self.tasks.len() {
                return;
            }
            // The walk is a window behind: it wakes the helpers when it
            // moves. Counted as sleeping before looking again, as the
            // walk moves before looking at the count: one of the two
            // sees the other.
            self.sleeping.fetch_add(1, Ordering::SeqCst);
            if !self.helper_may_go() {
                std::thread::park_timeout(SLEEP_LIMIT);
            }
            self.sleeping.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Tells the walk that a helper ends early (by a panic) and may leave
/// tasks it took unwalked.
struct LostGuard<'a, 'b>(&'a Shared<'b>);

impl Drop for LostGuard<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lost.store(true, Ordering::Release);
            self.0.walker.unpark();
        }
    }
}

/// The walk's side of a split walk.
pub(in crate::check) struct Spec<'a> {
    shared: &'a Shared<'a>,
    /// Task of each block of the frontier, made when the walk first
    /// meets a task out of order (a tree walked as its frontier read
    /// needs none).
    index: Option<HashMap<u64, usize>>,
    /// Tasks before this one were passed.
    pos: usize,
    helpers: Vec<Thread>,
    /// For walking tasks apart while the walk waits.
    own: Producer,
    /// Subtrees taken in.
    pub taken: u64,
}

impl Spec<'_> {
    /// The subtree walked apart for `t`, when `t` is one of the tasks
    /// still ahead; tasks the walk skipped are dropped.
    pub(super) fn take(&mut self, t: Task) -> Option<Walked> {
        let sh = self.shared;
        let i = if sh.tasks.get(self.pos) == Some(&t) {
            self.pos
        } else {
            let index = self.index.get_or_insert_with(|| {
                sh.tasks
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (t.pblk, i))
                    .collect()
            });
            *index.get(&t.pblk)?
        };
        if sh.tasks[i] != t || i < self.pos {
            return None;
        }
        self.pos = i + 1;
        sh.at.store(i, Ordering::SeqCst);
        // Tasks skipped are walked apart by nobody.
        sh.next.fetch_max(i, Ordering::SeqCst);
        if sh.sleeping.load(Ordering::SeqCst) > 0 && sh.helper_may_go() {
            for h in &self.helpers {
                h.unpark();
            }
        }
        let mut spins = 0u32;
        while !sh.is_done(i) {
            // Taken by a helper and not done yet: walk the next ones
            // meanwhile rather than wait.
            if let Some(r) = sh.grab() {
                sh.produce(r, &mut self.own);
                continue;
            }
            spins += 1;
            if spins <= WAIT_SPINS {
                std::hint::spin_loop();
                continue;
            }
            // Nothing else to walk until the walk moves on, and the
            // helper is slow (descheduled on a busy machine): sleep
            // rather than walk the subtree a second time.
            if !sh.wait_for(i) {
                // A helper was lost: walk it here.
                return None;
            }
        }
        let mut held = sh.slot(i).walked.lock().unwrap_or_else(|e| e.into_inner());
        Some(std::mem::take(&mut *held))
    }

    /// Hands a result taken back to its slot, for the room of its lists
    /// to serve a later task (unless a later task is there already, or
    /// the room is large).
    pub(super) fn give_back(&mut self, mut w: Walked) {
        let k = w.task;
        if w.sub.claims.words.capacity() > RECYCLE_WORDS {
            return;
        }
        w.clear();
        let slot = self.shared.slot(k);
        let mut held = slot.walked.lock().unwrap_or_else(|e| e.into_inner());
        if slot.task.load(Ordering::SeqCst) == k + 1 {
            *held = w;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ClaimLog, MapInfo};
    use super::{Ordering, Producer, Shared, Spec, Task, Walked};
    use crate::check::state::State;
    use crate::check::superblock::{self, Opened};
    use crate::io::Device;
    use crate::testfs::{Image, options};
    use std::time::{Duration, Instant};

    /// A subtree a helper is still walking when the walk reaches it, with
    /// nothing else to walk, is waited for however slow the helper
    /// (descheduled on a busy machine), not walked a second time.
    #[test]
    fn the_walk_waits_for_a_slow_helper() {
        let img = Image::new("4M", &[]);
        let Opened::Fs(fs, _) =
            superblock::open(Device::from_bytes(img.bytes()), &options(2)).unwrap()
        else {
            panic!("the image does not open");
        };
        let task = Task {
            pblk: 100,
            lblk: 0,
            root_depth: 1,
            end: None,
            end_blk: 0,
            depth: 0,
            room: 1,
        };
        let shared = Shared::new(&fs, MapInfo::unbounded(12, false), vec![task], 2);
        // A helper took the only task.
        shared.next.store(1, Ordering::SeqCst);
        let slow = Duration::from_millis(30);
        let start = Instant::now();
        std::thread::scope(|sc| {
            sc.spawn(|| {
                std::thread::sleep(slow);
                let mut walked = Walked {
                    head: super::ChildHead {
                        entries: 7,
                        ..super::ChildHead::default()
                    },
                    ..Walked::default()
                };
                shared.publish(0, &mut walked);
            });
            let mut spec = Spec {
                shared: &shared,
                index: None,
                pos: 0,
                helpers: Vec::new(),
                own: Producer::default(),
                taken: 0,
            };
            let walked = spec.take(task);
            assert!(
                walked.is_some_and(|w| w.head.entries == 7),
                "the helper's subtree was not used"
            );
        });
        assert!(start.elapsed() >= slow);
    }

    /// Results share a window's worth of slots: a helper finishing a task
    /// the walk skipped long ago leaves the later task in its slot alone,
    /// and a result handed back lends its room to the next task there.
    #[test]
    fn a_late_result_leaves_a_later_one_in_its_slot() {
        let img = Image::new("4M", &[]);
        let Opened::Fs(fs, _) =
            superblock::open(Device::from_bytes(img.bytes()), &options(2)).unwrap()
        else {
            panic!("the image does not open");
        };
        let task = |k: u64| Task {
            pblk: 100 + k,
            lblk: k,
            root_depth: 1,
            end: None,
            end_blk: 0,
            depth: 0,
            room: 1,
        };
        let tasks: Vec<Task> = (0..600).map(task).collect();
        let shared = Shared::new(&fs, MapInfo::unbounded(12, false), tasks, 2);
        let ring = shared.slots.len();
        assert!(ring < 600);
        let made = |entries: u16| Walked {
            head: super::ChildHead {
                entries,
                ..super::ChildHead::default()
            },
            ..Walked::default()
        };
        shared.publish(ring, &mut made(2));
        shared.publish(0, &mut made(1));
        assert!(shared.is_done(ring) && !shared.is_done(0));
        let mut spec = Spec {
            shared: &shared,
            index: None,
            pos: ring,
            helpers: Vec::new(),
            own: Producer::default(),
            taken: 0,
        };
        let mut walked = spec.take(task(ring as u64)).expect("the later result");
        assert_eq!(walked.head.entries, 2);
        walked.sub.claims.words.reserve(100);
        spec.give_back(walked);
        let mut next = made(3);
        shared.publish(2 * ring, &mut next);
        assert!(next.sub.claims.words.capacity() >= 100, "room not lent");
    }

    /// A claim log ORed in word by word leaves the maps as claiming its
    /// blocks one by one would: used, and shared where claimed twice
    /// (within the log, across logs, or by others), bits past the end
    /// ignored.
    #[test]
    fn claim_log_claims_as_block_by_block() {
        let blocks = 64 * 40 + 13;
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..200 {
            let (one, words) = (State::new(blocks, 16), State::new(blocks, 16));
            for _log in 0..3 {
                let mut log = ClaimLog::default();
                let mut at = rand(blocks);
                for _ in 0..rand(40) + 1 {
                    // Runs near each other, a few far, some past the end.
                    at = match rand(8) {
                        0 => rand(blocks + 70),
                        1 => at.saturating_sub(rand(5)),
                        _ => at + rand(3),
                    };
                    let len = if round % 3 == 0 { rand(150) + 1 } else { 1 };
                    log.add(at, len);
                    for b in at..at + len {
                        one.claim_block(b);
                    }
                    at += len;
                }
                for &(w, bits) in &log.words {
                    words.claim_word(w, bits);
                }
                for &b in &log.again {
                    words.claim_block(b);
                }
            }
            for b in 0..blocks + 64 {
                let c = one.cluster(b);
                assert_eq!(one.block_used.get(c), words.block_used.get(c), "used {b}");
                assert_eq!(one.block_dup.get(c), words.block_dup.get(c), "dup {b}");
            }
        }
    }
}
