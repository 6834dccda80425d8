//! The watchdog: a second process that undoes what the online check left
//! in the kernel when the check dies without doing it itself.
//!
//! A frozen file system stays frozen until someone thaws it, and an LVM
//! snapshot stays until someone removes it; a SIGKILL, an abort (the
//! release build panics by aborting) or the OOM killer would leave both.
//! So before freezing, pfsck tells a child process (this binary run as
//! `pfsck --online-watchdog`) what it is about to do; the child holds the
//! read end of a pipe whose write end only pfsck has. When pfsck is gone,
//! for whatever reason, the child reads end-of-file and thaws, or removes,
//! what is still armed. It ignores the signals that stop pfsck (Ctrl-C
//! reaches the whole process group; systemd's stop reaches the cgroup).
//!
//! Records on the pipe, each ending in NUL: `T` + mount point (a freeze is
//! about to be taken), `t` (thawed), `L` + VG/LV (a snapshot is about to
//! be made), `l` (removed). Arming comes before the action, so a death in
//! between still undoes it; the one cost is that a death right after a
//! freeze attempt that failed because someone else had frozen the file
//! system would thaw their freeze.

use super::sys;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

/// The hidden first argument that runs this binary as the watchdog.
pub const ARG: &str = "--online-watchdog";

pub struct Watchdog {
    child: Child,
    to: Option<ChildStdin>,
}

/// What the watchdog can be asked to undo.
pub trait Guard {
    fn arm_thaw(&self, mount_point: &Path) -> io::Result<()>;
    fn disarm_thaw(&self) -> io::Result<()>;
    fn arm_lvremove(&self, vg_lv: &str) -> io::Result<()>;
    fn disarm_lvremove(&self) -> io::Result<()>;
}

impl Watchdog {
    /// Starts the watchdog and waits until it is ready (its signals set).
    pub fn start() -> io::Result<Watchdog> {
        let mut child = Command::new("/proc/self/exe")
            .arg0("pfsck")
            .arg(ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let mut ready = [0u8; 1];
        let got = child.stdout.take().map(|mut o| o.read(&mut ready));
        if !matches!(got, Some(Ok(1))) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::other("the watchdog process did not start"));
        }
        let to = child.stdin.take();
        Ok(Watchdog { child, to })
    }

    fn send(&self, tag: u8, arg: &[u8]) -> io::Result<()> {
        let mut rec = Vec::with_capacity(arg.len() + 2);
        rec.push(tag);
        rec.extend_from_slice(arg);
        rec.push(0);
        let mut to = self.to.as_ref().ok_or(io::ErrorKind::BrokenPipe)?;
        to.write_all(&rec)
    }
}

impl Guard for Watchdog {
    fn arm_thaw(&self, mount_point: &Path) -> io::Result<()> {
        self.send(b'T', mount_point.as_os_str().as_bytes())
    }
    fn disarm_thaw(&self) -> io::Result<()> {
        self.send(b't', b"")
    }
    fn arm_lvremove(&self, vg_lv: &str) -> io::Result<()> {
        self.send(b'L', vg_lv.as_bytes())
    }
    fn disarm_lvremove(&self) -> io::Result<()> {
        self.send(b'l', b"")
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // End of file: the watchdog undoes what is still armed and exits.
        drop(self.to.take());
        let _ = self.child.wait();
    }
}

/// The watchdog process's main: returns its exit code.
pub fn serve() -> i32 {
    sys::ignore_stop_signals();
    if io::stdout()
        .write_all(b"r")
        .and_then(|()| io::stdout().flush())
        .is_err()
    {
        return 1;
    }
    let mut thaw: Option<(PathBuf, Option<File>)> = None;
    let mut lvremove: Option<String> = None;
    let mut input = BufReader::new(io::stdin().lock());
    let mut rec = Vec::new();
    loop {
        rec.clear();
        match input.read_until(0, &mut rec) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if rec.last() == Some(&0) {
            rec.pop();
        }
        let arg = rec.get(1..).unwrap_or(&[]);
        match rec.first() {
            Some(b'T') => {
                let p = PathBuf::from(std::ffi::OsStr::from_bytes(arg));
                // Opened now, while pfsck lives: at the end the path might
                // be what fails.
                let f = File::open(&p).ok();
                thaw = Some((p, f));
            }
            Some(b't') => thaw = None,
            Some(b'L') => lvremove = Some(String::from_utf8_lossy(arg).into_owned()),
            Some(b'l') => lvremove = None,
            _ => {}
        }
    }
    let mut code = 0;
    if let Some((p, f)) = thaw {
        let f = f.or_else(|| File::open(&p).ok());
        match f.map(|f| sys::thaw(&f)) {
            Some(Ok(())) => eprintln!(
                "pfsck: thawed {}, which the online check that stopped had frozen",
                p.display()
            ),
            // Not frozen: the check died before its freeze took effect,
            // or after it thawed.
            Some(Err(e)) if e.raw_os_error() == Some(libc::EINVAL) => {}
            Some(Err(e)) => {
                eprintln!(
                    "pfsck: cannot thaw {}: {e}; run fsfreeze -u on it",
                    p.display()
                );
                code = 1;
            }
            None => {
                eprintln!(
                    "pfsck: cannot open {} to thaw it; run fsfreeze -u on it",
                    p.display()
                );
                code = 1;
            }
        }
    }
    if let Some(lv) = lvremove
        && let Err(e) = super::lvm::remove(&super::lvm::System, &lv)
    {
        eprintln!("pfsck: {e}");
        code = 1;
    }
    code
}
