//! slowfuse: serve one image file, read-only, through FUSE as `MOUNT/image`,
//! adding a fixed latency to every read request — a stand-in for dm-delay
//! (which needs device-mapper and a block device) in the pfsck benchmark.
//!
//!     slowfuse IMAGE MOUNTPOINT [--latency-us N] [--threads N]
//!
//! * Every FUSE READ request sleeps `--latency-us` before it is served, in the
//!   thread that handles it; `--threads` event-loop threads (each with its own
//!   cloned /dev/fuse fd) serve requests concurrently, so up to that many reads
//!   are "in flight" at once, like a device queue of that depth.
//! * The file is opened with FOPEN_DIRECT_IO: the kernel keeps no page cache
//!   for it, so every read a checker issues reaches this process and pays the
//!   latency, in every run (the backing image may be in the host's page cache:
//!   the latency is the device's, not the disk's).
//! * A read request carries at most the kernel's max_read (128 KiB by
//!   default); a larger pread is split into several requests, each delayed,
//!   much as a large bio is split by the block layer.
//! * On SIGINT/SIGTERM (or `fusermount3 -u MOUNTPOINT`) it unmounts and prints
//!   the number of read requests and bytes served to stderr.

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, INodeNo, LockOwner,
    MountOption, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEntry, ReplyOpen, Request,
};

const IMAGE_INO: u64 = 2;
const TTL: Duration = Duration::from_secs(3600);

#[derive(Default)]
struct Stats {
    reads: AtomicU64,
    bytes: AtomicU64,
}

struct SlowFs {
    file: File,
    size: u64,
    latency: Duration,
    stats: Arc<Stats>,
}

impl SlowFs {
    fn attr(&self, ino: u64) -> FileAttr {
        let dir = ino == 1;
        FileAttr {
            ino: INodeNo(ino),
            size: if dir { 0 } else { self.size },
            blocks: if dir { 0 } else { self.size.div_ceil(512) },
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind: if dir { FileType::Directory } else { FileType::RegularFile },
            perm: if dir { 0o555 } else { 0o444 },
            nlink: if dir { 2 } else { 1 },
            uid: 0,
            gid: 0,
            rdev: 0,
            flags: 0,
            blksize: 4096,
        }
    }
}

impl Filesystem for SlowFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if u64::from(parent) == 1 && name == "image" {
            reply.entry(&TTL, &self.attr(IMAGE_INO), fuser::Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match u64::from(ino) {
            i @ (1 | IMAGE_INO) => reply.attr(&TTL, &self.attr(i)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if u64::from(ino) != IMAGE_INO {
            return reply.error(Errno::EISDIR);
        }
        if flags.0 & libc::O_ACCMODE != libc::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        if u64::from(ino) != IMAGE_INO {
            return reply.error(Errno::ENOENT);
        }
        if !self.latency.is_zero() {
            std::thread::sleep(self.latency);
        }
        let len = (size as u64).min(self.size.saturating_sub(offset)) as usize;
        let mut buf = vec![0u8; len];
        match self.file.read_exact_at(&mut buf, offset) {
            Ok(()) => {
                self.stats.reads.fetch_add(1, Ordering::Relaxed);
                self.stats.bytes.fetch_add(len as u64, Ordering::Relaxed);
                reply.data(&buf)
            }
            Err(_) => reply.error(Errno::EIO),
        }
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        if u64::from(ino) != 1 {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [(1, FileType::Directory, "."), (1, FileType::Directory, ".."), (IMAGE_INO, FileType::RegularFile, "image")];
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(ino), (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

fn usage() -> ! {
    eprintln!("usage: slowfuse IMAGE MOUNTPOINT [--latency-us N] [--threads N]");
    std::process::exit(16);
}

static STOP: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(1, Ordering::SeqCst);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut pos, mut latency_us, mut threads) = (Vec::new(), 0u64, 16usize);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--latency-us" => latency_us = it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage()),
            "--threads" => threads = it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage()),
            _ if a.starts_with("--") => usage(),
            _ => pos.push(a.clone()),
        }
    }
    if pos.len() != 2 || threads == 0 {
        usage();
    }
    // Sleeps of a few hundred microseconds: ask for 1 µs timer slack, not 50.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let file = File::open(&pos[0]).unwrap_or_else(|e| {
        eprintln!("slowfuse: {}: {e}", pos[0]);
        std::process::exit(8)
    });
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let stats = Arc::new(Stats::default());
    let fs = SlowFs { file, size, latency: Duration::from_micros(latency_us), stats: stats.clone() };
    let mut cfg = Config::default();
    cfg.mount_options = vec![MountOption::RO, MountOption::FSName("slowfuse".into()), MountOption::DefaultPermissions];
    cfg.n_threads = Some(threads);
    cfg.clone_fd = true;
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let session = fuser::spawn_mount(fs, &pos[1], &cfg).unwrap_or_else(|e| {
        eprintln!("slowfuse: mount {}: {e}", pos[1]);
        std::process::exit(8)
    });
    eprintln!("slowfuse: serving {} ({} bytes) at {}/image, {} us per read, {} threads", pos[0], size, pos[1], latency_us, threads);
    while STOP.load(Ordering::SeqCst) == 0 && !session.guard.is_finished() {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = session.umount_and_join();
    eprintln!("slowfuse: {} reads, {} bytes", stats.reads.load(Ordering::Relaxed), stats.bytes.load(Ordering::Relaxed));
}
