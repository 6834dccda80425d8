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
    /// The bar of `-C 0`: hidden while the report's lines are printed.
    bar: Option<indicatif::ProgressBar>,
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
        let mut shown = None;
        let handle = match target {
            Target::Fd(fd) => {
                let mut out = std::fs::OpenOptions::new()
                    .write(true)
                    .open(format!("/proc/self/fd/{fd}"))?;
                std::thread::spawn(move || {
                    let mut lines = Lines::default();
                    loop {
                        let done = flag.load(Ordering::Relaxed);
                        let text = lines.advance(ctl.progress(), &device);
                        // One write per sample: a reader gets whole lines.
                        if !text.is_empty() && out.write_all(text.as_bytes()).is_err() {
                            break;
                        }
                        if done {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                })
            }
            Target::Bar => {
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
                shown = Some(bar.clone());
                std::thread::spawn(move || {
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
                })
            }
        };
        Ok(Reporter {
            stop,
            bar: shown,
            handle: Some(handle),
        })
    }

    pub fn bar(&self) -> Option<indicatif::ProgressBar> {
        self.bar.clone()
    }

    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// e2fsck's progress lines, `PASS CURRENT MAX NAME`, at its granularity:
/// every step from 0 to MAX of each pass (groups in passes 1 and 4,
/// directory blocks in pass 2, directories in pass 3, two bitmaps per
/// group in pass 5), NAME the label or else the device as given. pfsck's
/// own units are scaled onto those steps; a pass the check finished is
/// written to its MAX. Passes only move forward, as e2fsck's: a repair's
/// later rounds add no lines.
#[derive(Default)]
struct Lines {
    /// The pass last written, and the step it reached.
    pass: u8,
    step: Option<u64>,
}

impl Lines {
    fn advance(&mut self, p: &crate::engine::Progress, device: &str) -> String {
        let (now, done, total) = p.snapshot();
        let completed = p.completed();
        let name = p.name().unwrap_or_else(|| device.to_string());
        let mut text = String::new();
        for pass in self.pass.max(1)..=now.max(completed).min(5) {
            let max = p.steps(pass);
            if max == 0 {
                // Not known yet (or nothing to step through).
                if pass < now || pass <= completed {
                    continue;
                }
                break;
            }
            let target = if pass <= completed {
                max
            } else if pass == now && total > 0 {
                // At most max: done is capped at total.
                u64::try_from(u128::from(done.min(total)) * u128::from(max) / u128::from(total))
                    .unwrap_or(max)
            } else if pass == now {
                0
            } else {
                continue;
            };
            let from = match (pass == self.pass, self.step) {
                (true, Some(s)) => s + 1,
                _ => 0,
            };
            if from > target && pass == self.pass {
                continue;
            }
            for step in from..=target {
                text.push_str(&format!("{pass} {step} {max} {name}\n"));
            }
            self.pass = pass;
            self.step = Some(target);
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_step_through_every_pass_once() {
        let p = crate::engine::Progress::new();
        let mut l = Lines::default();
        p.set_steps(1, 4);
        p.set_steps(4, 4);
        p.set_steps(5, 8);
        p.begin_overlap(1, 2);
        assert_eq!(l.advance(&p, "dev"), "1 0 4 dev\n");
        p.add_total_at(0, 8);
        for _ in 0..4 {
            p.unit_done_at(0);
        }
        assert_eq!(l.advance(&p, "dev"), "1 1 4 dev\n1 2 4 dev\n");
        p.set_steps(2, 2);
        p.pass_complete(1);
        p.stage_finished(0);
        p.set_steps(3, 1);
        p.pass_complete(2);
        p.begin_pass(3);
        p.set_name(Some("label".into()));
        let text = l.advance(&p, "dev");
        assert_eq!(
            text,
            "1 3 4 label\n1 4 4 label\n2 0 2 label\n2 1 2 label\n2 2 2 label\n3 0 1 label\n"
        );
        p.pass_complete(5);
        let text = l.advance(&p, "dev");
        assert_eq!(text.lines().count(), 1 + 5 + 9, "{text}");
        assert!(text.ends_with("5 8 8 label\n"));
        // A later round starts at pass 1 again: nothing more.
        p.pass_complete(0);
        p.begin_overlap(1, 2);
        assert_eq!(l.advance(&p, "dev"), "");
    }
}
