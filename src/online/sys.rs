//! The system calls the online check needs that std does not offer, each a
//! thin safe wrapper: freezing and thawing a file system, reflink clones,
//! loop device status, `O_TMPFILE`, `syncfs`, `fstatfs`, `FITRIM`. All of
//! this module's unsafe code is here.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

// _IOWR('X', 119 / 120 / 121, ...) from linux/fs.h.
const FIFREEZE: libc::c_ulong = 0xC004_5877;
const FITHAW: libc::c_ulong = 0xC004_5878;
const FITRIM: libc::c_ulong = 0xC018_5879;
// linux/loop.h.
const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;

fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Freezes the file system `f` (any open file or directory of it) lives
/// on: writers block, dirty data and the journal are flushed, and the
/// device holds a consistent, clean image until [`thaw`].
pub fn freeze(f: &File) -> io::Result<()> {
    // SAFETY: FIFREEZE takes no argument the kernel reads.
    check(unsafe { libc::ioctl(f.as_raw_fd(), FIFREEZE, 0) })
}

pub fn thaw(f: &File) -> io::Result<()> {
    // SAFETY: FITHAW takes no argument the kernel reads.
    check(unsafe { libc::ioctl(f.as_raw_fd(), FITHAW, 0) })
}

/// A freeze taken by this process, thawed when dropped: every way out of
/// the freeze window that unwinds or returns thaws. What does not (a
/// signal that kills, `panic = "abort"`) is the watchdog's.
pub struct Frozen<'a> {
    dir: &'a File,
    thawed: bool,
}

impl<'a> Frozen<'a> {
    pub fn take(dir: &'a File) -> io::Result<Frozen<'a>> {
        freeze(dir)?;
        Ok(Frozen { dir, thawed: false })
    }

    pub fn thaw(mut self) -> io::Result<()> {
        self.thawed = true;
        thaw(self.dir)
    }
}

impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        if !self.thawed {
            let _ = thaw(self.dir);
        }
    }
}

/// Clones `len` bytes of `src` from `src_offset` to the start of `dest`
/// by sharing extents (FICLONERANGE); `len` 0 clones to the end of `src`.
pub fn clone_range(dest: &File, src: &File, src_offset: u64, len: u64) -> io::Result<()> {
    let arg = libc::file_clone_range {
        src_fd: i64::from(src.as_raw_fd()),
        src_offset,
        src_length: len,
        dest_offset: 0,
    };
    // SAFETY: the kernel reads `arg`, which outlives the call.
    check(unsafe { libc::ioctl(dest.as_raw_fd(), libc::FICLONERANGE, &arg) })
}

/// An unnamed file in `dir` (`O_TMPFILE`): it exists only while open, so
/// no path of it can be left behind, whatever ends the process.
pub fn tmpfile_in(dir: &Path) -> io::Result<File> {
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `c` is a valid C string for the duration of the call.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Writes the dirty data of the file system `f` is on (syncfs(2)).
pub fn syncfs(f: &File) -> io::Result<()> {
    // SAFETY: plain system call on an open descriptor.
    check(unsafe { libc::syncfs(f.as_raw_fd()) })
}

/// The file system `f` is on: (type magic, block size).
pub fn fs_type_and_block(f: &File) -> io::Result<(i64, u64)> {
    // SAFETY: statfs is plain data; zeroed is a valid value.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel fills `s`, which outlives the call.
    check(unsafe { libc::fstatfs(f.as_raw_fd(), &mut s) })?;
    Ok((s.f_type as i64, s.f_bsize as u64))
}

/// linux/loop.h's `struct loop_info64`.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// What a loop device says of its backing file.
#[derive(Clone, Copy, Debug)]
pub struct LoopStatus {
    /// `st_dev` and `st_ino` of the backing file, as stat(2) gives them.
    pub backing_dev: u64,
    pub backing_ino: u64,
    /// Where the device starts in the file.
    pub offset: u64,
}

pub fn loop_status(dev: &File) -> io::Result<LoopStatus> {
    // SAFETY: LoopInfo64 is plain data; zeroed is a valid value.
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel fills `info`, which has the layout it expects.
    check(unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_GET_STATUS64, &mut info) })?;
    Ok(LoopStatus {
        backing_dev: info.lo_device,
        backing_ino: info.lo_inode,
        offset: info.lo_offset,
    })
}

/// Discards the unused blocks of the file system `f` is on (fstrim);
/// returns the bytes trimmed.
pub fn trim(f: &File) -> io::Result<u64> {
    #[repr(C)]
    struct Range {
        start: u64,
        len: u64,
        minlen: u64,
    }
    let mut r = Range {
        start: 0,
        len: u64::MAX,
        minlen: 0,
    };
    // SAFETY: the kernel reads and updates `r`, which outlives the call.
    check(unsafe { libc::ioctl(f.as_raw_fd(), FITRIM, &mut r) })?;
    Ok(r.len)
}

/// Sends `sig` to this process (the test hooks).
pub fn raise(sig: libc::c_int) {
    // SAFETY: plain system call.
    unsafe {
        libc::raise(sig);
    }
}

/// Sets `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGQUIT` to be ignored (the
/// watchdog outlives what stops its parent).
pub fn ignore_stop_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: SIG_IGN is a valid disposition for these signals.
        unsafe {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
}

/// Makes `SIGTERM` and `SIGHUP` cancel the check as Ctrl-C does (the
/// online check must get to removing its snapshot).
/// `on_signal` must be async-signal-safe (an atomic store).
pub fn cancel_on_terminate(on_signal: extern "C" fn(libc::c_int)) {
    for sig in [libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

/// This thread's I/O priority (and that of threads it starts later): the
/// idle class, served only when no one else uses the disk; or back to the
/// default (none: derived from the CPU priority).
pub fn set_io_idle(idle: bool) -> io::Result<()> {
    const WHO_PROCESS: libc::c_long = 1;
    const CLASS_IDLE: libc::c_long = 3;
    const CLASS_SHIFT: u32 = 13;
    let value = if idle { CLASS_IDLE << CLASS_SHIFT } else { 0 };
    // SAFETY: plain system call on this thread (who 0).
    let r = unsafe { libc::syscall(libc::SYS_ioprio_set, WHO_PROCESS, 0 as libc::c_long, value) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

pub fn is_root() -> bool {
    // SAFETY: plain system call without arguments.
    unsafe { libc::geteuid() == 0 }
}

/// CPU time this process has used (all its threads, user and system).
pub fn cpu_time() -> std::time::Duration {
    // SAFETY: rusage is plain data; zeroed is a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel fills `u`, which outlives the call.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return std::time::Duration::ZERO;
    }
    let tv = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec as u64)
            + std::time::Duration::from_micros(t.tv_usec as u64)
    };
    tv(u.ru_utime) + tv(u.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_info_has_the_kernels_size() {
        assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
    }

    #[test]
    fn tmpfile_leaves_no_name() {
        let dir = std::env::temp_dir().join(format!("pfsck-tmpfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        match tmpfile_in(&dir) {
            Ok(f) => {
                use std::io::Write;
                (&f).write_all(b"x").unwrap();
                assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
            }
            // Some file systems (old overlayfs) have no O_TMPFILE.
            Err(e) => eprintln!("notice: no O_TMPFILE in {}: {e}", dir.display()),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
