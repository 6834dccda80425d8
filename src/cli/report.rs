//! Rendering a check report: e2fsck-style text, or JSON.

use super::{Args, EXIT_OK, EXIT_OPERATIONAL, EXIT_UNCORRECTED};
use crate::check::Report;
use crate::check::problem::{Pass, Severity};
use serde_json::json;

const PASS_HEADERS: [(Pass, &str); 5] = [
    (Pass::P1, "Pass 1: Checking inodes, blocks, and sizes"),
    (Pass::P2, "Pass 2: Checking directory structure"),
    (Pass::P3, "Pass 3: Checking directory connectivity"),
    (Pass::P4, "Pass 4: Checking reference counts"),
    (Pass::P5, "Pass 5: Checking group summary information"),
];

pub fn exit_code(rep: &Report) -> i32 {
    let mut code = EXIT_OK;
    if rep.has_errors() {
        code |= EXIT_UNCORRECTED;
    }
    if rep.has_fatal() {
        code |= EXIT_OPERATIONAL;
    }
    code
}

/// What a repair run did, for the report of its first check.
pub struct Repaired<'a> {
    /// Parallel to the shown problems: a fix was staged for it.
    pub fixed: &'a [bool],
    /// Blocks were written to the device.
    pub modified: bool,
    /// The check of the repaired file system (None when nothing was staged:
    /// the first check stands).
    pub after: Option<&'a Report>,
    /// Why nothing was fixed, when the repair refused to start.
    pub refusal: Option<String>,
}

/// Prints the report of a read-only check (`-n`) and returns its exit code.
pub fn print(rep: &Report, device: &str, args: &Args) -> i32 {
    let code = exit_code(rep);
    print_with(rep, device, args, None, code);
    code
}

/// Prints the report of a repair run; `code` is its exit code.
pub fn print_repair(rep: &Report, device: &str, args: &Args, r: &Repaired<'_>, code: i32) {
    print_with(rep, device, args, Some(r), code);
}

fn print_with(rep: &Report, device: &str, args: &Args, repaired: Option<&Repaired<'_>>, code: i32) {
    let name = if rep.volume_label.is_empty() {
        device.to_string()
    } else {
        rep.volume_label.clone()
    };
    if args.json {
        print_json(rep, device, code, repaired);
        return;
    }
    // Fixed problems by address: the renderer walks `rep.problems` in
    // per-pass filters, so an element's address identifies its index.
    let fixed_set: std::collections::HashSet<usize> = repaired
        .map(|r| {
            rep.problems
                .iter()
                .zip(r.fixed)
                .filter(|&(_, &f)| f)
                .map(|(p, _)| p as *const _ as usize)
                .collect()
        })
        .unwrap_or_default();
    let fixed = |p: &crate::check::problem::Problem| fixed_set.contains(&(p as *const _ as usize));
    // The summary describes the file system as it was left.
    let s = &repaired.and_then(|r| r.after).unwrap_or(rep).summary;
    let mut out = String::new();
    if rep.skipped_clean.is_some() {
        out.push_str(&format!(
            "{name}: clean, {}/{} files, {}/{} blocks\n",
            s.inodes_used, s.inodes_count, s.blocks_used, s.blocks_count
        ));
        print!("{out}");
        return;
    }
    if (args.preen || args.auto) && repaired.is_some() && !rep.has_fatal() {
        // e2fsck's preen output: one line per fix, no pass headers, then
        // the summary line; boot scripts and people reading boot logs
        // expect exactly this.
        for p in rep.problems.iter().filter(|p| fixed(p)) {
            out.push_str(&format!("{name}: {}.  FIXED.\n", p.message()));
        }
        preen_tail(&mut out, &name, repaired, code, s);
        print!("{out}");
        return;
    }
    for n in &rep.notes {
        out.push_str(n);
        out.push('\n');
    }
    let render = |out: &mut String, p: &crate::check::problem::Problem| {
        let msg = p.message();
        if fixed(p) {
            out.push_str(&format!("{msg}.  Fix? yes\n\n"));
            return;
        }
        match p.spec().severity {
            Severity::Error => out.push_str(&format!("{msg}.  Fix? no\n\n")),
            Severity::Notice | Severity::Fatal => out.push_str(&format!("{msg}\n")),
        }
    };
    for p in rep.problems.iter().filter(|p| p.spec().pass == Pass::Super) {
        render(&mut out, p);
    }
    let ran = rep.passes_run();
    for (pass, header) in PASS_HEADERS {
        let n = pass.number();
        if n > ran {
            break;
        }
        out.push_str(header);
        out.push('\n');
        if pass == Pass::P1 {
            let dups: Vec<_> = rep
                .problems
                .iter()
                .filter(|p| p.spec().pass == Pass::P1B)
                .collect();
            for p in rep.problems.iter().filter(|p| p.spec().pass == Pass::P1) {
                render(&mut out, p);
            }
            if !dups.is_empty() {
                out.push_str("\nRunning additional passes to resolve blocks claimed by more than one inode...\nPass 1B: Rescanning for multiply-claimed blocks\n");
                for p in dups {
                    render(&mut out, p);
                }
            }
            continue;
        }
        for p in rep.problems.iter().filter(|p| p.spec().pass == pass) {
            render(&mut out, p);
        }
    }
    if let Some(r) = repaired {
        if let Some(why) = &r.refusal {
            out.push_str(&format!("\n{name}: {why}\n"));
        }
        // Problems the repair left, or met only after fixing others: listed
        // so that exit 4 always comes with its reason.
        if let Some(after) = r.after {
            let left: Vec<_> = after
                .problems
                .iter()
                .filter(|p| p.spec().severity != Severity::Notice)
                .collect();
            if !left.is_empty() {
                out.push_str("\nProblems left after the repair:\n");
                for p in left {
                    out.push_str(&format!("{}\n", p.message()));
                }
            }
        }
        if r.modified {
            out.push_str(&format!("\n{name}: ***** FILE SYSTEM WAS MODIFIED *****\n"));
        }
    }
    if rep.has_fatal() {
        out.push('\n');
    } else {
        if code & EXIT_UNCORRECTED != 0 {
            out.push_str(&format!(
                "\n{name}: ********** WARNING: Filesystem still has errors **********\n\n"
            ));
        }
        out.push_str(&summary_line(&name, s));
    }
    if args.verbose && !rep.has_fatal() {
        out.push_str(&format!(
            "\n{:>12} inodes used\n{:>12} regular files\n{:>12} directories\n{:>12} character device files\n{:>12} block device files\n{:>12} fifos\n{:>12} symbolic links ({} fast symbolic links)\n{:>12} sockets\n{:>12} extent-mapped files\n{:>12} large files\n",
            s.inodes_used, s.regular, s.directories, s.chardev, s.blockdev, s.fifos, s.symlinks,
            s.fast_symlinks, s.sockets, s.extent_files, s.large_files
        ));
    }
    if args.timing {
        for t in &rep.timings {
            let work = t
                .work_seconds
                .map_or(String::new(), |w| format!(", work {w:.3} s"));
            out.push_str(&format!(
                "{:>8}: {:8.3} s, {:>12} bytes read, memory {} KiB (peak {} KiB){work}\n",
                t.pass, t.seconds, t.bytes_read, t.rss_kib, t.peak_rss_kib
            ));
        }
        if let Some(s) = rep.timings.iter().find_map(|t| t.scheduler.as_ref()) {
            out.push_str(&scheduler_lines(s));
        }
    }
    print!("{out}");
}

/// `-t`: what the pass 1/2 pipeline's scheduler did.
fn scheduler_lines(s: &crate::engine::pipeline::Stats) -> String {
    let overlap =
        (s.last_end[0].min(s.last_end[1]) - s.first_start[0].max(s.first_start[1])).max(0.0);
    let workers: Vec<String> = s
        .per_worker
        .iter()
        .enumerate()
        .filter(|(_, w)| w[0] + w[1] > 0)
        .map(|(k, w)| format!("#{k} {}/{}", w[0], w[1]))
        .collect();
    format!(
        "pipeline: {} workers; passes 1 and 2 ran together {:.3} s of {:.3} s (pass 1 merged at {:.3} s)\n\
         \x20 units run, pass 1/pass 2: {}; taken by the scheduler {}/{} ({} forced by the queue bound)\n\
         \x20 pass-2 blocks parked until pass 1 reached their entries: {} in {} units; units that waited: {} (they ran {} pass-1 units; idle {:.3} s)\n\
         \x20 learnt cost: {:.2} us per inode, {:.2} us per directory block\n\
         \x20 pass-2 queue: bound {} blocks (highest {}), most queued {}; readahead window {} blocks (largest {}, {} grows, {} shrinks)\n",
        s.workers,
        overlap,
        s.wall_seconds,
        s.stage0_merged,
        workers.join(", "),
        s.picks[0],
        s.picks[1],
        s.forced,
        s.deferred_items,
        s.deferred_units,
        s.waited_units,
        s.helped,
        s.idle_seconds,
        s.weights[0] * 1e6,
        s.weights[1] * 1e6,
        s.bound,
        s.bound_max,
        s.queue_max,
        s.readahead,
        s.readahead_max,
        s.readahead_grows,
        s.readahead_shrinks,
    )
}

/// What follows the fixes in preen output: problems left (with the reason
/// the repair stopped, if it refused), the warning, the summary line.
fn preen_tail(
    out: &mut String,
    name: &str,
    repaired: Option<&Repaired<'_>>,
    code: i32,
    s: &crate::check::Summary,
) {
    if let Some(r) = repaired {
        if let Some(why) = &r.refusal {
            out.push_str(&format!("{name}: {why}\n"));
        }
        for p in r
            .after
            .iter()
            .flat_map(|a| a.problems.iter())
            .filter(|p| p.spec().severity != Severity::Notice)
        {
            out.push_str(&format!("{name}: {}.\n", p.message()));
        }
    }
    if code & EXIT_UNCORRECTED != 0 {
        out.push_str(&format!(
            "\n{name}: ********** WARNING: Filesystem still has errors **********\n\n"
        ));
    }
    out.push_str(&summary_line(name, s));
}

/// e2fsck's closing line.
fn summary_line(name: &str, s: &crate::check::Summary) -> String {
    format!(
        "{name}: {}/{} files ({:.1}% non-contiguous), {}/{} blocks\n",
        s.inodes_used, s.inodes_count, s.noncontiguous_pct, s.blocks_used, s.blocks_count
    )
}

fn print_json(rep: &Report, device: &str, code: i32, repaired: Option<&Repaired<'_>>) {
    let problems: Vec<_> = rep
        .problems
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let s = p.spec();
            json!({
                "code": s.code,
                "pass": s.pass.number(),
                "severity": s.severity,
                "ino": p.ino,
                "block": p.blk,
                "group": p.group,
                "num": p.num,
                "num2": p.num2,
                "detail": p.detail,
                "message": p.message(),
                "fixed": repaired.is_some_and(|r| r.fixed.get(k).copied().unwrap_or(false)),
            })
        })
        .collect();
    let left: Vec<_> = repaired
        .and_then(|r| r.after)
        .map(|a| {
            a.problems
                .iter()
                .map(|p| json!({"code": p.spec().code, "message": p.message()}))
                .collect()
        })
        .unwrap_or_default();
    let v = json!({
        "modified": repaired.is_some_and(|r| r.modified),
        "problems_after_repair": left,
        "refusal": repaired.and_then(|r| r.refusal.clone()),
        "device": device,
        "skipped_clean": rep.skipped_clean.is_some(),
        "problems": problems,
        "summary": repaired.and_then(|r| r.after).unwrap_or(rep).summary,
        "timings": rep.timings,
        "exit_code": code,
    });
    println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
}

pub fn print_error_json(device: &str, error: &str, code: i32) {
    let v = json!({
        "device": device,
        "error": error,
        "problems": [],
        "exit_code": code,
    });
    println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    let _ = EXIT_OPERATIONAL;
}
