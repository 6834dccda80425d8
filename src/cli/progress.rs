//! Progress output while a check runs: a bar on stderr (`-C 0`,
//! `--progress`), or e2fsck's machine-readable lines `PASS CURRENT MAX
//! DEVICE` on a file descriptor (`-C FD`), which systemd-fsck and
//! libblockdev parse. Samples the engine's counters from its own thread.

use crate::engine::progress;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Width of the bar between the brackets.
const BAR: u64 = 30;

pub enum Target {
    Bar,
    /// An inherited file descriptor, opened through /proc (no unsafe).
    Fd(i32),
}

pub struct Reporter {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

const PASS_NAMES: [&str; 6] = [
    "",
    "Pass 1: inodes, blocks, sizes",
    "Pass 2: directory structure",
    "Pass 3: connectivity",
    "Pass 4: reference counts",
    "Pass 5: group summaries",
];

/// One line of the bar: the pass, how far it is, and the time left at the
/// rate so far (integers only: no floating point library for a bar).
fn bar_line(name: &str, done: u64, total: u64, elapsed: Duration) -> String {
    let total = total.max(1);
    let done = done.min(total);
    let fill = (done * BAR / total) as usize;
    let mut bar = "=".repeat(fill);
    if fill < BAR as usize {
        bar.push('>');
        bar.push_str(&" ".repeat(BAR as usize - fill - 1));
    }
    let pct = done * 100 / total;
    let ms = elapsed.as_millis() as u64;
    let eta = match ms.saturating_mul(total - done).checked_div(done) {
        None => "?".to_string(),
        Some(left_ms) => {
            let left = left_ms / 1000;
            format!("{}:{:02}", left / 60, left % 60)
        }
    };
    format!("{name:32} [{bar}] {pct:>3}% eta {eta}")
}

impl Reporter {
    pub fn start(target: Target, device: String) -> std::io::Result<Reporter> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = match target {
            Target::Fd(fd) => {
                let mut out = std::fs::OpenOptions::new()
                    .write(true)
                    .open(format!("/proc/self/fd/{fd}"))?;
                std::thread::spawn(move || {
                    let mut last = (0, 0, 0);
                    loop {
                        let done = flag.load(Ordering::Relaxed);
                        let now = progress::snapshot();
                        if now != last && now.0 > 0 {
                            let _ = writeln!(out, "{} {} {} {}", now.0, now.1, now.2, device);
                            last = now;
                        }
                        if done {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                })
            }
            Target::Bar => std::thread::spawn(move || {
                let mut err = std::io::stderr();
                let mut pass = 0;
                let mut since = Instant::now();
                loop {
                    let stop = flag.load(Ordering::Relaxed);
                    let (p, done, total) = progress::snapshot();
                    if p != pass {
                        pass = p;
                        since = Instant::now();
                    }
                    if p > 0 && !stop {
                        let name = PASS_NAMES.get(p as usize).copied().unwrap_or("");
                        let line = bar_line(name, done, total, since.elapsed());
                        let _ = write!(err, "\r{line}\x1b[K");
                        let _ = err.flush();
                    }
                    if stop {
                        let _ = write!(err, "\r\x1b[K");
                        let _ = err.flush();
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }),
        };
        Ok(Reporter {
            stop,
            handle: Some(handle),
        })
    }

    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_and_eta() {
        let l = bar_line("Pass 1", 50, 100, Duration::from_secs(30));
        assert!(l.ends_with("]  50% eta 0:30"), "{l}");
        assert_eq!(l.matches('=').count(), 15);
        let l = bar_line("Pass 1", 0, 0, Duration::ZERO);
        assert!(l.ends_with("]   0% eta ?"), "{l}");
        let l = bar_line("Pass 2", 7, 7, Duration::from_secs(3));
        assert!(
            l.contains(&"=".repeat(30)) && l.ends_with("100% eta 0:00"),
            "{l}"
        );
    }
}
