//! Progress output while a check runs: a bar on stderr (`-C 0`,
//! `--progress`), or e2fsck's machine-readable lines `PASS CURRENT MAX
//! DEVICE` on a file descriptor (`-C FD`), which systemd-fsck and
//! libblockdev parse. Samples the engine's counters from its own thread.

use crate::engine::Control;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

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

impl Reporter {
    pub fn start(target: Target, device: String, ctl: Control) -> std::io::Result<Reporter> {
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
                        let now = ctl.progress().snapshot();
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
                let style = indicatif::ProgressStyle::with_template(
                    "{msg:32} [{bar:30}] {percent:>3}% eta {eta}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> ");
                let bar = indicatif::ProgressBar::with_draw_target(
                    None,
                    indicatif::ProgressDrawTarget::stderr(),
                );
                bar.set_style(style);
                let mut pass = 0;
                while !flag.load(Ordering::Relaxed) {
                    let (p, done, total) = ctl.progress().snapshot();
                    if p != pass {
                        pass = p;
                        bar.reset();
                        bar.set_message(PASS_NAMES.get(p as usize).copied().unwrap_or(""));
                    }
                    bar.set_length(total.max(1));
                    bar.set_position(done);
                    std::thread::sleep(Duration::from_millis(100));
                }
                bar.finish_and_clear();
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
