//! Rendering a check report: e2fsck-style text, or JSON.

use super::{Args, EXIT_OK, EXIT_OPERATIONAL, EXIT_UNCORRECTED};
use crate::check::Report;
use crate::check::e2fsck_map;
use crate::check::problem::{Code, Pass, Problem, Severity, ctime};
use crate::fs::num::{Blk, Group, Ino};
use crate::online;
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::io::Write;

/// Set when the device is the root mounted read-only: a repair that
/// modifies it ends with e2fsck's "REBOOT SYSTEM" line.
pub static REBOOT_IF_MODIFIED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

fn reboot_line(out: &mut impl Write, name: &str) -> std::io::Result<()> {
    if REBOOT_IF_MODIFIED.load(std::sync::atomic::Ordering::Relaxed) {
        writeln!(
            out,
            "{name}: ***** the mounted root was repaired: reboot now *****"
        )?;
    }
    Ok(())
}

const PASS_HEADERS: [(Pass, &str); 5] = [
    (Pass::P1, "Pass 1: inodes, the blocks they map, their sizes"),
    (Pass::P2, "Pass 2: directory entries"),
    (Pass::P3, "Pass 3: every directory reachable from the root"),
    (Pass::P4, "Pass 4: link counts"),
    (Pass::P5, "Pass 5: bitmaps and free counts"),
];

pub fn exit_code(rep: &Report) -> i32 {
    let mut code = EXIT_OK;
    // e2fsck marks the file system valid again once its checks of the
    // superblock and descriptors are done: what it declined there makes
    // its verdict through what the passes then find, which a check that
    // stops in them (e2fsck -n aborting) may never reach. A declined
    // relocation of an inode table outside the file system, and the scan
    // of inodes stopping at it, exit 8 alone. And e2fsck asks nothing
    // about a problem it only stops at.
    let stop = stopped(rep);
    let counted = |p: &Problem| {
        p.spec().severity == Severity::Error
            && !e2fsck_map::before_valid(p)
            && !e2fsck_map::stops_after(p)
            && (!stop || p.spec().pass != Pass::Super)
    };
    if rep
        .problems
        .iter()
        .any(|p| counted(&p) || e2fsck_map::aborts_unjudged(&p))
    {
        code |= EXIT_UNCORRECTED;
    }
    // e2fsck -n aborts where it stops, and an abort adds 8 to its code.
    if rep.has_fatal() || stop {
        code |= EXIT_OPERATIONAL;
    }
    code
}

/// The read-only check stopped where e2fsck -n gives up.
fn stopped(rep: &Report) -> bool {
    rep.problems.codes().any(is_stop) || rep.problems.iter().any(|p| e2fsck_map::stops_after(&p))
}

/// Is it where a read-only check stops, as e2fsck -n aborts?
fn is_stop(c: crate::check::problem::Code) -> bool {
    use crate::check::problem::Code;
    matches!(
        c,
        Code::StoppedAtCorruptDir
            | Code::StoppedAtUnreadableDir
            | Code::StoppedAtUninitGroup
            | Code::StoppedAtOrphanFileInode
            | Code::StoppedAtIllegalIndirect
            | Code::StoppedAtUnreadableExtent
            | Code::StoppedAtBadBlocksInode
            | Code::StoppedAtInodeTable
            | Code::StoppedAtUnreadableXattr
            | Code::StoppedAtInodeChecksumP2
            | Code::StoppedAtInodeChecksumP4
            | Code::StoppedAtNoDirInfo
            | Code::StoppedAtRelocatedBitmap
            | Code::StoppedAtInodeChecksumP1
            | Code::StoppedAtInodeChecksumP1B
            | Code::StoppedWithoutRoot
    )
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
    /// What the checks showed before the repair started over, as e2fsck
    /// -y does after some fixes; the report is then the last check's.
    pub restarts: &'a [crate::repair::session::Restart],
}

/// Said where the repair starts over (e2fsck's restart, in pfsck's name).
const RESTARTING: &[u8] = b"Checking again from the start...\n";

/// Prints the report of a read-only check (`-n`) and returns its exit code.
/// A device with no usable superblock: e2fsck's one line on stderr, with
/// the device's name, before the report's explanation on stdout.
fn open_failure(rep: &Report, device: &str) {
    use crate::check::problem::Code;
    if let Some(p) = rep.problems.iter().find(|p| p.code == Code::SbCorrupt) {
        let msg = p.message();
        let detail = msg.rsplit(": ").next().unwrap_or(&msg);
        let detail = if detail == "bad magic number in superblock" {
            "no ext2/ext3/ext4 superblock magic".to_string()
        } else {
            detail.to_string()
        };
        eprintln!("pfsck: cannot open {device}: {detail}");
    }
}

pub fn print(rep: &Report, device: &str, args: &Args) -> i32 {
    let code = exit_code(rep);
    print_with(rep, device, args, None, None, code);
    code
}

/// Prints the report of a repair run; `code` is its exit code.
pub fn print_repair(rep: &Report, device: &str, args: &Args, r: &Repaired<'_>, code: i32) {
    print_with(rep, device, args, Some(r), None, code);
}

/// Prints the report of an online check and returns its exit code: the
/// check's, with 8 added when its verdict could not be recorded.
pub fn print_online(rep: &Report, args: &Args, info: &online::Info) -> i32 {
    let mut code = exit_code(rep);
    if info.mark_error.is_some() {
        code |= EXIT_OPERATIONAL;
    }
    let device = info.device.display().to_string();
    print_with(rep, &device, args, None, Some(info), code);
    code
}

fn print_with(
    rep: &Report,
    device: &str,
    args: &Args,
    repaired: Option<&Repaired<'_>>,
    online: Option<&online::Info>,
    code: i32,
) {
    // Written as it is rendered: a report of very many problems is never
    // held a second time as text.
    if !args.json {
        open_failure(rep, device);
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    let done = if args.json {
        print_json(&mut out, rep, device, code, repaired, online)
    } else {
        write_text(&mut out, rep, device, args, repaired, code).and_then(|()| match online {
            Some(info) => online_lines(&mut out, rep, device, info),
            None => Ok(()),
        })
    };
    // A closed pipe or a full disk: nothing more to tell anyone.
    let _ = done.and_then(|()| out.flush());
}

fn write_text(
    out: &mut impl Write,
    rep: &Report,
    device: &str,
    args: &Args,
    repaired: Option<&Repaired<'_>>,
    code: i32,
) -> std::io::Result<()> {
    let name = &name_of(rep, device);
    let fixed = |k: usize| repaired.is_some_and(|r| r.fixed.get(k).copied().unwrap_or(false));
    let tree = rep.tree.as_deref();
    // The summary describes the file system as it was left.
    let s = &repaired.and_then(|r| r.after).unwrap_or(rep).summary;
    if let Some(note) = &rep.skipped_clean {
        // e2fsck's journal-only skip says nothing.
        if args.extended.journal_only {
            return Ok(());
        }
        return writeln!(
            out,
            "{name}: clean, {}/{} inodes, {}/{} blocks in use{note}",
            s.inodes_used, s.inodes_count, s.blocks_used, s.blocks_count
        );
    }
    let forced = |out: &mut dyn Write| match &rep.forced {
        Some(why) => writeln!(out, "{name}: checked because it {why}."),
        None => Ok(()),
    };
    let numbered = || rep.problems.iter().enumerate();
    if (args.preen || args.auto) && repaired.is_some() && !rep.has_fatal() {
        // e2fsck's preen output: one line per fix (but those e2fsck makes
        // silently), no pass headers, then the summary line; boot scripts and people reading boot logs
        // expect exactly this.
        forced(out)?;
        // An offer preen declines (PREEN_NO) is said, with its answer.
        let shown = |&(k, ref p): &(usize, Problem)| {
            (fixed(k) || e2fsck_map::not_a_fix(p)) && !e2fsck_map::preen_quiet(p)
        };
        for (k, p) in numbered().filter(shown) {
            let done = if fixed(k) {
                e2fsck_map::prompt(&p).preen_done()
            } else {
                "IGNORED"
            };
            writeln!(out, "{name}: {}.  {done}.", p.text_in(tree))?;
        }
        return preen_tail(out, name, repaired, code, s, args.verbose);
    }
    let mut shown = streamed();
    let restarts = repaired.map_or(&[][..], |r| r.restarts);
    for (i, r) in restarts.iter().enumerate() {
        let first = if i == 0 { shown } else { Streamed::default() };
        restart_part(out, r, name, first)?;
        out.write_all(RESTARTING)?;
        // The check after the restart is shown whole.
        shown = Streamed::default();
    }
    let mut latches = Latches::default();
    let mut render = |out: &mut dyn Write, k: usize, p: &Problem| {
        render_problem(out, p, tree, repaired.is_some(), fixed(k), &mut latches)
    };
    if !shown.opening {
        opening(out, rep, name, &mut render)?;
    }
    let ran = rep.passes_run();
    for pass in 1..=ran {
        if pass > shown.headers {
            header(out, pass)?;
        }
        if pass > shown.sections {
            section(out, rep, pass, &mut render, &fixed)?;
            // e2fsck's header when it rebuilds extent trees, after pass 1D.
            if pass == 1 {
                let pass1e = rep
                    .problems
                    .iter_where(|c| c.spec().pass == Pass::P1)
                    .filter(|&(k, ref p)| {
                        fixed(k) && (e2fsck_map::not_a_fix(p) || e2fsck_map::requested(p))
                    })
                    .fold(Pass1E::default(), |h, (_, p)| h.with(&p));
                pass1e.write(out)?;
            }
        }
    }
    if repaired.is_some() && shown.later_rounds {
        // Problems the repair's later rounds found in passes printed while
        // the first check ran: after the rest, under their headers again.
        // What an option asked for is done without a word.
        let said = |c: Code| c != Code::InodeBlockMapToExtents && c != Code::SbExtentsForConversion;
        let late: Vec<u8> = (1..=shown.sections.min(ran))
            .filter(|&pass| {
                rep.problems
                    .codes()
                    .any(|c| c.spec().pass.number() == pass && said(c))
            })
            .collect();
        if !late.is_empty() {
            out.write_all(b"\nFound by the re-check after the fixes above:\n")?;
        }
        for pass in late {
            header(out, pass)?;
            section(out, rep, pass, &mut render, &fixed)?;
        }
    }
    if let Some(r) = repaired {
        repair_lines(out, name, r)?;
    }
    // e2fsck -n prints no summary after giving up.
    let stopped = stopped(rep);
    if rep.has_fatal() {
        out.write_all(b"\n")?;
    } else {
        if code & EXIT_UNCORRECTED != 0 {
            write!(
                out,
                "\n{name}: ********** WARNING: errors are left in the file system **********\n\n"
            )?;
        }
        if !stopped {
            summary_line(out, name, s, args.verbose)?;
        }
    }
    details(out, rep, args)
}

/// What a check showed before the repair started over: its opening,
/// its passes up to the restart's, each problem with the answer its fix
/// got; less what was printed while the check ran (`shown`).
fn restart_part(
    out: &mut impl Write,
    r: &crate::repair::session::Restart,
    name: &str,
    shown: Streamed,
) -> std::io::Result<()> {
    let rep = &r.report;
    let tree = rep.tree.as_deref();
    let fixed = |k: usize| r.fixed.get(k).copied().unwrap_or(false);
    let mut latches = Latches::default();
    let mut render = |out: &mut dyn Write, k: usize, p: &Problem| {
        render_problem(out, p, tree, true, fixed(k), &mut latches)
    };
    if !shown.opening {
        opening(out, rep, name, &mut render)?;
    }
    for pass in 1..=r.pass {
        if pass > shown.headers {
            header(out, pass)?;
        }
        section(out, rep, pass, &mut render, &fixed)?;
    }
    Ok(())
}

/// The file system's name in the report: its label, or the device.
pub fn name_of(rep: &Report, device: &str) -> String {
    if rep.volume_label.is_empty() {
        device.to_string()
    } else {
        // A label is the file system's maker's choice: escaped like a name.
        crate::check::problem::escape_name(rep.volume_label.as_bytes())
    }
}

/// What of a report was printed while its check ran: the report printed
/// at the end leaves it out. Process state, like the run's control: one
/// check of one device is printed per run of the binary.
#[derive(Clone, Copy, Debug, Default)]
pub struct Streamed {
    /// The lines before pass 1 (notes, "check forced", pass 0's problems).
    pub opening: bool,
    /// Pass headers printed: passes 1 to `headers`.
    pub headers: u8,
    /// Passes whose problems were printed: 1 to `sections`.
    pub sections: u8,
    /// `-y`: problems a later round of the repair finds in the passes
    /// printed are printed after the report's last pass.
    pub later_rounds: bool,
}

pub static STREAMED: std::sync::Mutex<Streamed> = std::sync::Mutex::new(Streamed {
    opening: false,
    headers: 0,
    sections: 0,
    later_rounds: false,
});

fn streamed() -> Streamed {
    STREAMED.lock().map(|g| *g).unwrap_or_default()
}

/// How one problem is printed: its index in the report and the problem.
pub type Render<'a> = dyn FnMut(&mut dyn Write, usize, &Problem) -> std::io::Result<()> + 'a;

/// The lines before pass 1: notes, "check forced", pass 0's problems.
pub fn opening(
    out: &mut dyn Write,
    rep: &Report,
    name: &str,
    render: &mut Render<'_>,
) -> std::io::Result<()> {
    for n in &rep.notes {
        writeln!(out, "{n}")?;
    }
    if let Some(why) = &rep.forced {
        writeln!(out, "{name}: checked because it {why}.")?;
    }
    for (k, p) in rep.problems.iter_where(|c| c.spec().pass == Pass::Super) {
        render(out, k, &p)?;
    }
    Ok(())
}

/// Pass `pass`'s header (1–5).
pub fn header(out: &mut dyn Write, pass: u8) -> std::io::Result<()> {
    match PASS_HEADERS.get(usize::from(pass).wrapping_sub(1)) {
        Some((_, h)) => writeln!(out, "{h}"),
        None => Ok(()),
    }
}

/// Pass `pass`'s problems, and after pass 1's those of pass 1B with
/// their header.
pub fn section(
    out: &mut dyn Write,
    rep: &Report,
    pass: u8,
    render: &mut Render<'_>,
    fixed: &dyn Fn(usize) -> bool,
) -> std::io::Result<()> {
    let Some(&(pass, _)) = PASS_HEADERS.get(usize::from(pass).wrapping_sub(1)) else {
        return Ok(());
    };
    let in_pass = |pass: Pass| rep.problems.iter_where(move |c| c.spec().pass == pass);
    // What pass 3A finds rebuilding a directory follows its header.
    let in_3a = |c: Code| c == Code::DirRebuildDuplicate;
    for (k, p) in in_pass(pass).filter(|(_, p)| !in_3a(p.code)) {
        render(out, k, &p)?;
    }
    if pass == Pass::P3 && rebuilds_directories(rep, fixed) {
        out.write_all(b"Pass 3A: directories rebuilt\n")?;
        for (k, p) in in_pass(pass).filter(|(_, p)| in_3a(p.code)) {
            render(out, k, &p)?;
        }
    }
    if pass == Pass::P1 && in_pass(Pass::P1B).next().is_some() {
        out.write_all(b"\nSome blocks belong to more than one inode; the passes below sort them out.\nPass 1B: every inode's blocks again, for the shared ones\n")?;
        match rep.dups.as_deref() {
            Some(dups) => dup_passes(out, rep, dups, render, fixed)?,
            None => {
                for (k, p) in in_pass(Pass::P1B) {
                    render(out, k, &p)?;
                }
            }
        }
    }
    Ok(())
}

/// Whether e2fsck's pass 3A runs: a directory is rebuilt (`fixed`), or
/// one holds a duplicate entry, which e2fsck marks for rebuilding even
/// under -n (its pass 3A then finds the duplicates again).
fn rebuilds_directories(rep: &Report, fixed: &dyn Fn(usize) -> bool) -> bool {
    rep.problems.iter().enumerate().any(|(k, p)| {
        matches!(p.code, Code::DirEntryDuplicate | Code::DirRebuildDuplicate)
            || (fixed(k)
                && crate::fix::rebuilds_directory(p.code)
                && p.args().detail != crate::check::pass1::detail::INLINE_INDEX)
    })
}

/// e2fsck's passes 1B to 1D, after pass 1B's header: each owner's
/// multiply-claimed blocks, then each file with those it shares them
/// with and what became of it (`fixed`: the report's problem `k` was
/// fixed; a file given copies has its `DupBlocks` problem fixed).
fn dup_passes(
    out: &mut dyn Write,
    rep: &Report,
    dups: &crate::check::pass1b::Dups,
    render: &mut Render<'_>,
    fixed: &dyn Fn(usize) -> bool,
) -> std::io::Result<()> {
    use crate::check::pass1b::DupFate;
    use crate::check::problem::Code;
    let problem: std::collections::HashMap<Ino, (usize, Problem)> = rep
        .problems
        .iter_where(|c| c == Code::DupBlocks)
        .filter_map(|(k, p)| Some((p.args().ino?, (k, p))))
        .collect();
    // A rescan that ended early says so after the inode's blocks, in
    // inode order with the owners.
    let mut failed = rep
        .problems
        .iter_where(|c| c == Code::DupRescanFailed)
        .peekable();
    for o in dups.owners.iter().filter(|o| o.ino != Ino::BAD) {
        while let Some((k, p)) = failed.next_if(|(_, p)| p.args().ino < Some(o.ino)) {
            render(out, k, &p)?;
        }
        write!(out, "Inode {} shares block(s):", o.ino)?;
        for &(a, b) in &o.runs {
            if a == b {
                write!(out, " {a}")?;
            } else {
                write!(out, " {a}--{b}")?;
            }
        }
        out.write_all(b"\n")?;
        if let Some((k, p)) = failed.next_if(|(_, p)| p.args().ino == Some(o.ino)) {
            render(out, k, &p)?;
        }
    }
    for (k, p) in failed {
        render(out, k, &p)?;
    }
    // e2fsck -n gave up during its rescan (pass 1B): no 1C or 1D.
    if let Some((k, p)) = rep
        .problems
        .iter_where(|c| c == Code::StoppedAtInodeChecksumP1B)
        .next()
    {
        return render(out, k, &p);
    }
    out.write_all(b"Pass 1C: the names of the files that share blocks\nPass 1D: sharing resolved file by file\n")?;
    writeln!(out, "({} inodes share blocks.)\n", dups.files)?;
    let empty = crate::check::paths::DirTree::default();
    let tree = rep.tree.as_deref().unwrap_or(&empty);
    let name = |ino: Ino| match dups.names.get(&ino) {
        _ if ino == Ino::ROOT => "/".to_string(),
        Some((dir, name)) => tree.path_of_entry(*dir, name),
        None => tree.pathname(Ino::NONE, ino),
    };
    let mtime = |ino: Ino| {
        dups.owners
            .binary_search_by_key(&ino, |o| o.ino)
            .map_or(0, |i| dups.owners[i].mtime)
    };
    let cloned = |ino: Ino| problem.get(&ino).is_some_and(|(k, _)| fixed(*k));
    let fates = dups.fates(cloned);
    // Once a file shares a block with the metadata, e2fsck counts the
    // metadata among the sharers of every file after it too.
    let mut meta = false;
    for (o, fate) in dups.owners.iter().zip(fates) {
        let Some(fate) = fate else { continue };
        meta |= o.clusters.iter().any(|&(_, m)| m);
        writeln!(
            out,
            "{} (inode {}, modified {})\n  shares {} block(s) with {} file(s):",
            name(o.ino),
            o.ino,
            ctime(o.mtime),
            o.claims,
            o.shared.len() + usize::from(meta)
        )?;
        if meta {
            out.write_all(b"\t<file system metadata>\n")?;
        }
        for &s in &o.shared {
            writeln!(
                out,
                "\t{} (inode {s}, modified {})",
                name(s),
                ctime(mtime(s))
            )?;
        }
        match (fate, problem.get(&o.ino)) {
            (DupFate::Resolved, _) => {
                out.write_all(b"Its shared blocks were copied or released already.\n\n")?
            }
            (_, Some((k, p))) => render(out, *k, p)?,
            (_, None) => out.write_all(b"Copy the shared blocks? no\n\nDelete file? no\n\n")?,
        }
    }
    Ok(())
}

/// What the check says of /lost+found itself: e2fsck only looks while
/// it repairs.
fn lost_found_notice(p: &Problem) -> bool {
    use crate::check::problem::Code;
    matches!(
        p.code,
        Code::LostFoundMissing
            | Code::LostFoundNotDir
            | Code::LostFoundEncrypted
            | Code::LostFoundInlineData
    )
}

/// One problem as the report shows it: with the answer to e2fsck's
/// question when it is an error (yes when `fixed`). A read-only check
/// (not `repair`) leaves out what `e2fsck -n` does not print.
/// e2fsck's pass 1E header, printed after pass 1 when pass 1E rebuilt
/// anything: what it did, in pfsck's words.
#[derive(Clone, Copy, Default)]
pub struct Pass1E {
    optimized: bool,
    converted: bool,
}

impl Pass1E {
    /// With `p`, a pass 1 problem whose fix pass 1E made.
    pub fn with(mut self, p: &Problem) -> Pass1E {
        if p.code == Code::InodeBlockMapToExtents {
            self.converted = true;
        } else if e2fsck_map::not_a_fix(p) {
            self.optimized = true;
        }
        self
    }

    pub fn write(self, out: &mut dyn Write) -> std::io::Result<()> {
        match (self.converted, self.optimized) {
            (true, true) => out.write_all(
                b"Pass 1E: block maps converted to extent trees, extent trees made smaller\n",
            ),
            (true, false) => out.write_all(b"Pass 1E: block maps converted to extent trees\n"),
            (false, true) => out.write_all(b"Pass 1E: extent trees made smaller\n"),
            (false, false) => Ok(()),
        }
    }
}

pub fn render_problem(
    out: &mut dyn Write,
    p: &Problem,
    tree: Option<&crate::check::paths::DirTree>,
    repair: bool,
    fixed: bool,
    latches: &mut Latches,
) -> std::io::Result<()> {
    if !repair && e2fsck_map::no_quiet(p) {
        return Ok(());
    }
    // e2fsck -n never looks for /lost+found (it answers no before it
    // would reconnect anything): what pfsck found of it is not said.
    if !repair && lost_found_notice(p) {
        return Ok(());
    }
    // Where e2fsck -n aborts it says so on stderr ("aborted"), and so
    // does pfsck, in its words: the report on stdout stays e2fsck's.
    if !repair && is_stop(p.code) {
        eprintln!("{}", p.text_in(tree));
        return Ok(());
    }
    if repair && fixed && e2fsck_map::requested(p) {
        // Done without a word, as e2fsck does it; pass 1E's header says so.
        return Ok(());
    }
    if latches.render(out, p, fixed)? {
        return Ok(());
    }
    if p.code == crate::check::problem::Code::DupBlocks {
        // Pass 1D's question; its file was described before.
        return out.write_all(if fixed {
            b"Copy the shared blocks? yes\n\n"
        } else {
            b"Copy the shared blocks? no\n\nDelete file? no\n\n"
        });
    }
    let msg = p.text_in(tree);
    if p.code == crate::check::problem::Code::DirEntryDuplicate
        && let Some(ino) = p.args().ino
    {
        // e2fsck's paragraph for it: the name on one line, the directory
        // to rebuild on the next, indented.
        let name = crate::check::problem::escape_name(p.args().detail.as_bytes());
        let dir = tree.map_or_else(
            || "???".to_string(),
            |t| t.pathname_in(p.spec().pass, ino, Ino::NONE),
        );
        return write!(
            out,
            "Entry '{name}' is there twice.\n\tDirectory {dir} ({ino}) will be rebuilt.\n\n"
        );
    }
    if e2fsck_map::message_only(p) {
        // Stated, not asked: the answer is the later question's. What
        // pass 0 sets on its own stands in a paragraph of its own.
        if p.spec().pass == crate::check::problem::Pass::Super {
            return write!(out, "{msg}\n\n");
        }
        return writeln!(out, "{msg}");
    }
    // The question e2fsck asks there (Clear?, Salvage?, ...).
    let ask = e2fsck_map::prompt(p).question();
    let sep = question_sep(p);
    if fixed || e2fsck_map::aborted(p) {
        return write!(out, "{msg}{sep}{ask}? yes\n\n");
    }
    if p.code == crate::check::problem::Code::SbCorrupt {
        // What e2fsck suggests too: the backups of 1 KiB and 4 KiB
        // block file systems.
        return write!(
            out,
            "{msg}\n\nIf the device does hold an ext2/ext3/ext4 file system (not swap or another\n\
             file system), its primary superblock is damaged; a backup may be good:\n    \
             pfsck -b 8193 <device>    (1 KiB blocks)\n or\n    \
             pfsck -b 32768 <device>   (4 KiB blocks)\n"
        );
    }
    if e2fsck_map::not_a_fix(p) {
        return write!(out, "{msg}{sep}{ask}? no\n\n");
    }
    // The superblock's free counts: pfsck's notices (the kernel keeps
    // them loosely), e2fsck's questions wherever it prints them.
    if matches!(
        p.code,
        crate::check::problem::Code::SuperFreeBlocks | crate::check::problem::Code::SuperFreeInodes
    ) {
        return write!(out, "{msg}{sep}{ask}? no\n\n");
    }
    if !repair && asked_twice(p) {
        write!(out, "{msg}{sep}{ask}? no\n\n")?;
    }
    match p.spec().severity {
        Severity::Error => write!(out, "{msg}{sep}{ask}? no\n\n"),
        // Pass 1's notices e2fsck asks about all the same, where no is a
        // fine answer (NO_OK: a tree deeper than it needs, an immutable
        // flag on a special file).
        Severity::Notice if e2fsck_map::asked_notice(p) => write!(out, "{msg}{sep}{ask}? no\n\n"),
        Severity::Notice | Severity::Fatal => writeln!(out, "{msg}"),
    }
}

/// A misplaced '.' or '..', or a link to the root, whose inode is in use
/// (the check's num2): e2fsck, answered no, asks about it a second time
/// further on in its checks of the same entry, so `-n` prints the
/// question twice. A repair's answer is yes, and asked once.
fn asked_twice(p: &Problem) -> bool {
    use crate::check::problem::Code;
    matches!(p.code, Code::DirDotSecondEntry | Code::DirEntryLinkToRoot) && p.args().num2 == Some(1)
}

/// Problems e2fsck asks about as a set, one question for all (its
/// latches): a block-mapped file's illegal blocks are asked about once,
/// "Inode N has illegal block(s).  Clear?", then listed one a line with
/// what became of each; so are the blocks past a file's largest one
/// ("Inode N is too big.  Truncate?"). The state of one report's rendering, problem
/// after problem.
#[derive(Default)]
pub struct Latches {
    /// The inode whose illegal blocks' question was printed.
    illegal: Option<Ino>,
    /// The inode whose "too big" question was printed.
    too_big: Option<Ino>,
    /// The inode cleared for too many illegal blocks: e2fsck names no
    /// more of them.
    cleared: Option<Ino>,
}

impl Latches {
    /// Prints `p` in its latch's form; false when it has none.
    fn render(&mut self, out: &mut dyn Write, p: &Problem, fixed: bool) -> std::io::Result<bool> {
        use crate::check::problem::Code;
        let a = p.args();
        let Some(ino) = a.ino else {
            return Ok(false);
        };
        // e2fsck clears the inode there and says no more of it in pass 1.
        if self.cleared == Some(ino) && matches!(p.spec().pass, Pass::P1) {
            return Ok(true);
        }
        let answer = if fixed { "yes" } else { "no" };
        match p.code {
            Code::InodeTooManyIllegalBlocks => {
                write!(
                    out,
                    "Inode {ino} maps too many blocks it may not.\nClear inode? {answer}\n\n"
                )?;
                if fixed {
                    self.cleared = Some(ino);
                } else {
                    out.write_all(b"Suppress messages? no\n\n")?;
                }
                Ok(true)
            }
            // Those past the file's largest block have a latch of their
            // own (the file is too big), not this one.
            Code::InodeIllegalBlock if p.e2fsck_code() == Some(0x01000E) => {
                let bad = ino == Ino::BAD;
                if self.illegal != Some(ino) {
                    self.illegal = Some(ino);
                    if bad {
                        out.write_all(b"The bad blocks inode")?;
                    } else {
                        write!(out, "Inode {ino}")?;
                    }
                    write!(out, " maps blocks it may not.  Clear? {answer}\n\n")?;
                }
                // The detail is "<kind> block, logical <n>[, why]".
                let (kind, rest) = a.detail.split_once(", logical ").unwrap_or((a.detail, ""));
                let what = match kind {
                    "data block" => format!("block #{}", rest.split(',').next().unwrap_or(rest)),
                    other => other.to_string(),
                };
                let blk = a.blk.map_or(0, |b| b.get());
                let mut first = what.chars();
                let what: String = first
                    .next()
                    .map(|c| c.to_ascii_uppercase())
                    .into_iter()
                    .chain(first)
                    .collect();
                write!(out, "{what} ({blk}) of ")?;
                if bad {
                    out.write_all(b"the bad blocks inode")?;
                } else {
                    write!(out, "inode {ino}")?;
                }
                let done = if fixed { "CLEARED" } else { "IGNORED" };
                writeln!(out, " is out of bounds.  {done}.")?;
                Ok(true)
            }
            Code::InodeIllegalBlock => {
                let what = match p.e2fsck_code() {
                    Some(0x010044) => "directory",
                    Some(0x010045) => "file",
                    Some(0x010046) => "symlink",
                    _ => return Ok(false),
                };
                if self.too_big != Some(ino) {
                    self.too_big = Some(ino);
                    let answer = if fixed { "yes" } else { "no" };
                    write!(
                        out,
                        "Inode {ino} maps blocks past the largest size it may have.  Truncate? {answer}\n\n"
                    )?;
                }
                let (kind, lblk) = a.detail.split_once(", logical ").unwrap_or(("", ""));
                let lblk = lblk.split(',').next().unwrap_or(lblk);
                let blk = a.blk.map_or(0, |b| b.get());
                let done = if fixed { "CLEARED" } else { "IGNORED" };
                // An indirect block is named by its kind, as e2fsck does.
                let named = match kind {
                    "indirect block" => "Indirect block".to_string(),
                    "double indirect block" => "Double indirect block".to_string(),
                    "triple indirect block" => "Triple indirect block".to_string(),
                    _ => format!("Block #{lblk}"),
                };
                writeln!(
                    out,
                    "{named} ({blk}) lies past the largest {what} size.  {done}."
                )?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// What separates a problem's message from its question where e2fsck
/// ends the message otherwise than with ".  ": its line (after a period
/// or not), or one space.
fn question_sep(p: &Problem) -> &'static str {
    /// e2fsck codes whose message ends its line, with no period (the
    /// bitmap differences' list items: the question follows the list).
    const LINE: &[u32] = &[
        0x000001, 0x000002, 0x000005, 0x01004a, 0x01004c, 0x01004f, 0x010050, 0x010051, 0x010052,
        0x010053, 0x010054, 0x010057, 0x010058, 0x010059, 0x01005b, 0x01005c, 0x01005e, 0x01005f,
        0x010066, 0x01006a, 0x01006e, 0x01006f, 0x01007d, 0x01007f, 0x010092, 0x02000b, 0x02000c,
        0x020013, 0x020014, 0x020016, 0x020017, 0x02003c, 0x02003d, 0x02003e, 0x02003f, 0x030003,
        0x030017, 0x030018, 0x03001b, 0x03001d, 0x040002, 0x050004, 0x050005, 0x050008, 0x050009,
        0x050014, 0x050015, 0x050016, 0x050017, 0x050018, 0x050019,
    ];
    /// e2fsck codes whose message ends its line after a period.
    const PERIOD_LINE: &[u32] = &[
        0x000003, 0x00000d, 0x00000e, 0x00000f, 0x000014, 0x000015, 0x000016, 0x000017, 0x000025,
        0x000026, 0x000027, 0x000031, 0x000032, 0x000036, 0x010007, 0x010008, 0x010009, 0x010011,
        0x010021, 0x010016, 0x010047, 0x010048, 0x010049, 0x01004b, 0x010055, 0x01005a, 0x010070,
        0x010077, 0x010078, 0x010079, 0x01007a, 0x010082, 0x010083, 0x010085, 0x01008a, 0x01008b,
        0x020001, 0x020002, 0x020005, 0x020006, 0x020007, 0x020008, 0x020009, 0x02000a, 0x02000d,
        0x02000e, 0x02000f, 0x020010, 0x020011, 0x020012, 0x020018, 0x020019, 0x02001a, 0x02001b,
        0x02001d, 0x020024, 0x020025, 0x020026, 0x020028, 0x020029, 0x020030, 0x020031, 0x020032,
        0x020033, 0x020039, 0x02003a, 0x020044, 0x020045, 0x020046, 0x020047, 0x020048, 0x020049,
        0x02004a, 0x02004c, 0x02004d, 0x02004e, 0x02004f, 0x020050, 0x020051, 0x020052, 0x020053,
        0x020055, 0x030005, 0x040006, 0x05000b, 0x05000c, 0x05000d, 0x05000e, 0x05000f, 0x05001a,
        0x05001b, 0x060007, 0x060009, 0x06000c, 0x06000d, 0x06000e,
    ];
    /// e2fsck codes whose message ends with a period and one space.
    const PERIOD_SPACE: &[u32] = &[0x040005, 0x040008, 0x050001, 0x050002];
    match p.e2fsck_code() {
        Some(c) if LINE.contains(&c) => "\n",
        Some(c) if PERIOD_LINE.contains(&c) => ".\n",
        Some(c) if PERIOD_SPACE.contains(&c) => ". ",
        Some(0x010018) => ".\n\n",
        _ => ".  ",
    }
}

/// What the repair refused, left and changed, after the passes.
fn repair_lines(out: &mut impl Write, name: &str, r: &Repaired<'_>) -> std::io::Result<()> {
    if let Some(why) = &r.refusal {
        write!(out, "\n{name}: {why}\n")?;
    }
    // Problems the repair left, or met only after fixing others: listed
    // so that exit 4 always comes with its reason.
    if let Some(after) = r.after {
        let mut left = after
            .problems
            .iter()
            .filter(|p| p.spec().severity != Severity::Notice)
            .peekable();
        if left.peek().is_some() {
            out.write_all(b"\nProblems left after the repair:\n")?;
            for p in left {
                writeln!(out, "{}", p.text_in(after.tree.as_deref()))?;
            }
        }
    }
    if r.modified {
        write!(
            out,
            "\n{name}: ***** repairs written to the file system *****\n"
        )?;
        reboot_line(out, name)?;
    }
    Ok(())
}

/// `-t`'s timings, after the summary.
fn details(out: &mut impl Write, rep: &Report, args: &Args) -> std::io::Result<()> {
    if args.timing {
        for t in &rep.timings {
            let work = t
                .work_seconds
                .map_or(String::new(), |w| format!(", work {w:.3} s"));
            writeln!(
                out,
                "{:>8}: {:8.3} s, {:>12} bytes read, memory {} KiB (peak {} KiB){work}",
                t.pass, t.seconds, t.bytes_read, t.rss_kib, t.peak_rss_kib
            )?;
        }
        if let Some(s) = rep.timings.iter().find_map(|t| t.scheduler.as_ref()) {
            out.write_all(scheduler_lines(s).as_bytes())?;
        }
        if !rep.census.is_empty() {
            let inodes = rep.summary.inodes_used.max(1) as f64;
            let parts: Vec<String> = rep
                .census
                .iter()
                .map(|(k, b)| format!("{k} {} KiB ({:.2} B/inode)", b / 1024, *b as f64 / inodes))
                .collect();
            writeln!(out, "memory after passes 1-2: {}", parts.join(", "))?;
        }
        if let Some(sp) = rep.spill {
            writeln!(
                out,
                "--max-memory {} KiB: {} KiB of maps in the scratch file; over the cap {} times, {} KiB dropped from memory",
                sp.cap / 1024,
                sp.mapped_bytes / 1024,
                sp.trims,
                sp.spilled_bytes / 1024
            )?;
        }
    }
    Ok(())
}

/// What the online check did and recorded, after the report.
fn online_lines(
    out: &mut impl Write,
    rep: &Report,
    device: &str,
    info: &online::Info,
) -> std::io::Result<()> {
    let bound = if info.frozen_is_upper_bound {
        "at most "
    } else {
        ""
    };
    writeln!(
        out,
        "\nOnline check of {} ({device}): {} snapshot of {}, file system frozen {bound}{:.1} ms; check {:.2} s, CPU {:.2} s",
        info.mount_point.display(),
        info.mechanism.name(),
        info.snapshot_of,
        info.frozen_seconds * 1e3,
        info.check_seconds,
        info.check_cpu_seconds
    )?;
    let found = if rep.has_errors() {
        "problems found"
    } else {
        "no problems found"
    };
    match (&info.recorded, &info.mark_error) {
        (_, Some(e)) => writeln!(
            out,
            "{device}: {found}, but the verdict was not recorded: {e}"
        ),
        (Some(r), None) if r.mark == online::mark::Mark::Errors => writeln!(
            out,
            "{device}: {found}; marked as having errors{}: the next boot's fsck checks it in full (or unmount it and run pfsck -fy)",
            if r.journal {
                " (superblock state and journal error number)"
            } else {
                ""
            }
        ),
        (Some(_), None) => writeln!(out, "{device}: {found}; check time recorded"),
        (None, None) if rep.has_fatal() => writeln!(
            out,
            "{device}: the check could not be completed; nothing recorded"
        ),
        (None, None) => writeln!(out, "{device}: {found}; nothing recorded (-n)"),
    }
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
    ) + &split_line(s)
}

/// `-t`: subtrees of huge files walked apart on several threads.
fn split_line(s: &crate::engine::pipeline::Stats) -> String {
    if s.split[0] == 0 {
        return String::new();
    }
    format!(
        "  huge files: {} subtrees walked apart, {} of them taken in; helpers walked {}\n",
        s.split[0], s.split[1], s.split[2]
    )
}

/// What follows the fixes in preen output: problems left (with the reason
/// the repair stopped, if it refused), the warning, the summary line.
fn preen_tail(
    out: &mut impl Write,
    name: &str,
    repaired: Option<&Repaired<'_>>,
    code: i32,
    s: &crate::check::Summary,
    args_verbose: bool,
) -> std::io::Result<()> {
    if let Some(r) = repaired {
        if let Some(why) = &r.refusal {
            writeln!(out, "{name}: {why}")?;
        }
        let tree = r.after.and_then(|a| a.tree.as_deref());
        for p in r
            .after
            .iter()
            .flat_map(|a| a.problems.iter())
            .filter(|p| p.spec().severity != Severity::Notice)
        {
            writeln!(out, "{name}: {}.", p.text_in(tree))?;
        }
        if r.modified {
            reboot_line(out, name)?;
        }
    }
    if code & EXIT_UNCORRECTED != 0 {
        write!(
            out,
            "\n{name}: ********** WARNING: errors are left in the file system **********\n\n"
        )?;
    }
    summary_line(out, name, s, args_verbose)
}

/// e2fsck's closing line, or with `-v` its statistics instead. Like
/// e2fsck it shows what the superblock's free counts say (under `-n` they
/// may disagree with what was counted; after a repair they are the
/// counted values), and the share of files in pieces in tenths of a
/// percent, rounded half up.
fn summary_line(
    out: &mut impl Write,
    name: &str,
    s: &crate::check::Summary,
    verbose: bool,
) -> std::io::Result<()> {
    let inodes = s.sb_inodes_used.unwrap_or(s.inodes_used);
    let blocks = s.sb_blocks_used.unwrap_or(s.blocks_used);
    let tenths = |n: u64| match inodes {
        0 => 0,
        used => (n * 10_000 / used + 5) / 10,
    };
    if verbose {
        return statistics(out, s, inodes, blocks, tenths);
    }
    let t = tenths(s.fragmented);
    writeln!(
        out,
        "{name}: {inodes}/{} inodes ({}.{}% fragmented), {blocks}/{} blocks in use",
        s.inodes_count,
        t / 10,
        t % 10,
        s.blocks_count
    )
}

/// `-v`: e2fsck's statistics, line for line (scripts read them): counts
/// right-aligned in 12 columns, singular for exactly one.
fn statistics(
    out: &mut impl Write,
    s: &crate::check::Summary,
    inodes: u64,
    blocks: u64,
    tenths: impl Fn(u64) -> u64,
) -> std::io::Result<()> {
    let word = |n: u64, one: &'static str, many: &'static str| if n == 1 { one } else { many };
    let pct = |n: u64, of: u64| {
        if of == 0 {
            0.0
        } else {
            n as f64 * 100.0 / of as f64
        }
    };
    let files_frag = s.fragmented.saturating_sub(s.fragmented_dirs);
    let (tf, td) = (tenths(files_frag), tenths(s.fragmented_dirs));
    writeln!(
        out,
        "\n{inodes:>12} {} ({:.2}%, out of {})",
        word(inodes, "inode used", "inodes used"),
        pct(inodes, s.inodes_count),
        s.inodes_count
    )?;
    writeln!(
        out,
        "{files_frag:>12} non-contiguous {} ({}.{}%)",
        word(files_frag, "file", "files"),
        tf / 10,
        tf % 10
    )?;
    writeln!(
        out,
        "{:>12} non-contiguous {} ({}.{}%)",
        s.fragmented_dirs,
        word(s.fragmented_dirs, "directory", "directories"),
        td / 10,
        td % 10
    )?;
    let [ind, dind, tind] = s.ind_inodes;
    writeln!(
        out,
        "             # of inodes with ind/dind/tind blocks: {ind}/{dind}/{tind}"
    )?;
    if let Some(last) = s.extent_depths.iter().rposition(|&n| n > 0) {
        let shown: Vec<String> = s.extent_depths[..=last]
            .iter()
            .map(u64::to_string)
            .collect();
        writeln!(
            out,
            "             Extent depth histogram: {}",
            shown.join("/")
        )?;
    }
    writeln!(
        out,
        "{blocks:>12} {} ({:.2}%, out of {})",
        word(blocks, "block used", "blocks used"),
        pct(blocks, s.blocks_count),
        s.blocks_count
    )?;
    let line =
        |out: &mut dyn Write, n: u64, one, many| writeln!(out, "{n:>12} {}", word(n, one, many));
    line(out, s.bad_blocks, "bad block", "bad blocks")?;
    line(out, s.large_files, "large file", "large files")?;
    writeln!(out)?;
    line(out, s.regular, "regular file", "regular files")?;
    line(out, s.directories, "directory", "directories")?;
    line(
        out,
        s.chardev,
        "character device file",
        "character device files",
    )?;
    line(out, s.blockdev, "block device file", "block device files")?;
    line(out, s.fifos, "fifo", "fifos")?;
    line(out, s.links, "link", "links")?;
    writeln!(
        out,
        "{:>12} {} ({} {})",
        s.symlinks,
        word(s.symlinks, "symbolic link", "symbolic links"),
        s.fast_symlinks,
        word(s.fast_symlinks, "fast symbolic link", "fast symbolic links")
    )?;
    line(out, s.sockets, "socket", "sockets")?;
    writeln!(out, "------------")?;
    line(out, s.files, "file", "files")
}

/// The JSON report, serialised straight to `out` (no value tree: a report
/// of very many problems costs no more memory as JSON than as text). Keys
/// in alphabetical order, as the object maps of serde_json print them.
fn print_json(
    out: &mut impl Write,
    rep: &Report,
    device: &str,
    code: i32,
    repaired: Option<&Repaired<'_>>,
    online: Option<&online::Info>,
) -> std::io::Result<()> {
    let doc = JsonReport {
        error: None,
        rep,
        device,
        code,
        repaired,
        online,
    };
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(std::io::Error::other)?;
    out.write_all(b"\n")
}

/// The version of the JSON report's shape (docs/report.schema.json): a
/// field removed or changed in meaning raises it; fields are only added
/// within a version.
pub const SCHEMA_VERSION: u32 = 1;

struct JsonReport<'a> {
    /// Set when the check could not be made (the report is then empty).
    error: Option<&'a str>,
    rep: &'a Report,
    device: &'a str,
    code: i32,
    repaired: Option<&'a Repaired<'a>>,
    online: Option<&'a online::Info>,
}

/// Serialises an iterator as a JSON array (the problems, one by one).
struct Seq<F>(F);

impl<I, F> Serialize for Seq<F>
where
    F: Fn() -> I,
    I: Iterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq((self.0)())
    }
}

impl Serialize for JsonReport<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let rep = self.rep;
        let r = self.repaired;
        let fixed = |k: usize| r.is_some_and(|r| r.fixed.get(k).copied().unwrap_or(false));
        let after = r.and_then(|r| r.after);
        let run = if r.is_some() {
            e2fsck_map::Run::Repair
        } else {
            e2fsck_map::Run::ReadOnly
        };
        let mut m = s.serialize_map(Some(13 + usize::from(self.online.is_some())))?;
        m.serialize_entry("device", self.device)?;
        // No file system to report on: the reason is the error, as when
        // the device could not be opened at all.
        let no_fs = (rep.uuid.is_empty() && rep.has_fatal())
            .then(|| {
                rep.problems
                    .iter()
                    .find(|p| p.spec().severity == Severity::Fatal)
                    .map(|p| p.message())
            })
            .flatten();
        m.serialize_entry("error", &self.error.map(str::to_string).or(no_fs))?;
        m.serialize_entry("exit_code", &self.code)?;
        m.serialize_entry("filesystem", &(!rep.uuid.is_empty()).then_some(JsonFs(rep)))?;
        m.serialize_entry("memory", &JsonMemory(rep))?;
        m.serialize_entry("modified", &r.is_some_and(|r| r.modified))?;
        if let Some(info) = self.online {
            m.serialize_entry("online", &JsonOnline(info))?;
        }
        // After a restart, each check before it is listed too, up to the
        // pass it stopped in, as the text report shows them.
        let restarts = r.map_or(&[][..], |r| r.restarts);
        m.serialize_entry(
            "problems",
            &Seq(|| {
                let before = restarts.iter().flat_map(move |x| {
                    let fixed = move |k: usize| x.fixed.get(k).copied().unwrap_or(false);
                    json_problems(&x.report, fixed, run, x.pass)
                });
                before.chain(json_problems(rep, fixed, run, u8::MAX))
            }),
        )?;
        m.serialize_entry(
            "problems_after_repair",
            &Seq(|| {
                after
                    .into_iter()
                    .flat_map(|a| a.problems.iter().map(|p| Left(p, a.tree.as_deref())))
            }),
        )?;
        m.serialize_entry("refusal", &r.and_then(|r| r.refusal.as_deref()))?;
        m.serialize_entry("schema_version", &SCHEMA_VERSION)?;
        m.serialize_entry("skipped_clean", &rep.skipped_clean.is_some())?;
        m.serialize_entry("summary", &JsonSummary(&after.unwrap_or(rep).summary))?;
        m.serialize_entry("timings", &Seq(|| rep.timings.iter().map(JsonTiming)))?;
        m.end()
    }
}

/// The problems of check `rep` in its passes up to `upto`, each with its
/// e2fsck references; `fixed(k)`: problem `k` was fixed.
fn json_problems<'a>(
    rep: &'a Report,
    fixed: impl Fn(usize) -> bool + 'a,
    run: e2fsck_map::Run,
    upto: u8,
) -> impl Iterator<Item = JsonProblem<'a>> + 'a {
    let mut log = e2fsck_map::LatchLog::new(rep.problems.iter())
        .with_orphans_freed(rep.orphan_freed.as_deref())
        .with_resize_unwalked(rep.resize_unwalked.as_ref());
    let mut first_dup = true;
    rep.problems.iter().enumerate().filter_map(move |(k, p)| {
        // Every problem goes through the log: its latches count them.
        let mut refs = log.refs(&p, run);
        if let (crate::check::problem::Code::DupBlocks, Some(dups), Some(ino)) =
            (p.code, rep.dups.as_deref(), p.args().ino)
        {
            refs.extend(e2fsck_map::dup_refs(dups, ino.get(), first_dup, run));
            // Pass 1D opens with its count at the first file it takes.
            first_dup &= ino == crate::fs::num::Ino::RESIZE;
        }
        // Every rescan that would find a file sharing blocks ended early:
        // pass 1D opens all the same, with a count of none.
        if let (crate::check::problem::Code::DupRescanFailed, Some(dups)) =
            (p.code, rep.dups.as_deref())
            && first_dup
            && dups.files == 0
            && dups.unreadable.is_none()
            && run == e2fsck_map::Run::ReadOnly
        {
            refs.push(e2fsck_map::Ref {
                code: 0x013004,
                ino: None,
                blk: None,
            });
            first_dup = false;
        }
        let shown = p.spec().pass.number() <= upto;
        shown.then(|| JsonProblem(p, fixed(k), refs, rep.tree.as_deref()))
    })
}

/// Memory by structure after passes 1 and 2, and what `--max-memory` did.
struct JsonMemory<'a>(&'a Report);

impl Serialize for JsonMemory<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Census<'a>(&'a [(&'static str, u64)]);
        impl Serialize for Census<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(self.0.len()))?;
                for (k, v) in self.0 {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
        struct Spill(crate::engine::SpillStats);
        impl Serialize for Spill {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(4))?;
                m.serialize_entry("cap", &self.0.cap)?;
                m.serialize_entry("mapped_bytes", &self.0.mapped_bytes)?;
                m.serialize_entry("trims", &self.0.trims)?;
                m.serialize_entry("spilled_bytes", &self.0.spilled_bytes)?;
                m.end()
            }
        }
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("census", &Census(&self.0.census))?;
        m.serialize_entry("max_memory", &self.0.spill.map(Spill))?;
        m.end()
    }
}

/// Which file system was checked: UUID, label, features.
struct JsonFs<'a>(&'a Report);

impl Serialize for JsonFs<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("features", &self.0.features)?;
        m.serialize_entry("label", &self.0.volume_label)?;
        m.serialize_entry("uuid", &self.0.uuid)?;
        m.end()
    }
}

/// One problem of the report; `.1`: a fix was staged for it; `.2`: the
/// entries e2fsck's problem log would hold for it; `.3`: the report's
/// directory paths.
struct JsonProblem<'a>(
    Problem,
    bool,
    Vec<e2fsck_map::Ref>,
    Option<&'a crate::check::paths::DirTree>,
);

impl Serialize for JsonProblem<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (p, spec) = (&self.0, self.0.spec());
        let severity = match spec.severity {
            Severity::Error => "Error",
            Severity::Notice => "Notice",
            Severity::Fatal => "Fatal",
        };
        let mut m = s.serialize_map(Some(12))?;
        m.serialize_entry("block", &p.args().blk.map(Blk::get))?;
        m.serialize_entry("code", spec.code)?;
        m.serialize_entry("detail", &p.args().detail)?;
        m.serialize_entry("e2fsck", &Seq(|| self.2.iter().copied().map(JsonRef)))?;
        m.serialize_entry("fixed", &self.1)?;
        m.serialize_entry("group", &p.args().group.map(Group::get))?;
        m.serialize_entry("ino", &p.args().ino.map(Ino::get))?;
        m.serialize_entry("message", &p.message_in(self.3))?;
        m.serialize_entry("num", &p.args().num)?;
        m.serialize_entry("num2", &p.args().num2)?;
        m.serialize_entry("pass", &spec.pass.number())?;
        m.serialize_entry("severity", severity)?;
        m.end()
    }
}

/// What e2fsck's problem log would say for a problem: its code, as
/// e2fsck writes it, and the inode and block its message names.
struct JsonRef(e2fsck_map::Ref);

impl Serialize for JsonRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("block", &self.0.blk)?;
        m.serialize_entry("code", &format!("0x{:06x}", self.0.code))?;
        m.serialize_entry("ino", &self.0.ino)?;
        m.end()
    }
}

/// A problem the repair left, and the paths of the check that found it.
struct Left<'a>(Problem, Option<&'a crate::check::paths::DirTree>);

impl Serialize for Left<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("code", self.0.spec().code)?;
        m.serialize_entry("message", &self.0.message_in(self.1))?;
        m.end()
    }
}

/// What the online check did: snapshot, freeze, CPU, what was recorded.
struct JsonOnline<'a>(&'a online::Info);

impl Serialize for JsonOnline<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        let recorded = v.recorded.map(|r| match r.mark {
            online::mark::Mark::Errors => "errors",
            online::mark::Mark::Checked => "checked",
        });
        let mut m = s.serialize_map(Some(11))?;
        m.serialize_entry("check_cpu_seconds", &v.check_cpu_seconds)?;
        m.serialize_entry("check_seconds", &v.check_seconds)?;
        m.serialize_entry("frozen_is_upper_bound", &v.frozen_is_upper_bound)?;
        m.serialize_entry("frozen_seconds", &v.frozen_seconds)?;
        m.serialize_entry("journal_errno_set", &v.recorded.is_some_and(|r| r.journal))?;
        m.serialize_entry("mark_error", &v.mark_error)?;
        m.serialize_entry(
            "mark_frozen_seconds",
            &v.recorded.and_then(|r| r.frozen).map(|d| d.as_secs_f64()),
        )?;
        m.serialize_entry("mechanism", v.mechanism.name())?;
        m.serialize_entry("mount_point", &v.mount_point.display().to_string())?;
        m.serialize_entry("recorded", &recorded)?;
        m.serialize_entry("snapshot_of", &v.snapshot_of)?;
        m.end()
    }
}

struct JsonSummary<'a>(&'a crate::check::Summary);

impl Serialize for JsonSummary<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        let mut m = s.serialize_map(Some(22))?;
        m.serialize_entry("bad_blocks", &v.bad_blocks)?;
        m.serialize_entry("blockdev", &v.blockdev)?;
        m.serialize_entry("blocks_count", &v.blocks_count)?;
        m.serialize_entry("blocks_used", &v.blocks_used)?;
        m.serialize_entry("chardev", &v.chardev)?;
        m.serialize_entry("directories", &v.directories)?;
        m.serialize_entry("extent_depths", &v.extent_depths)?;
        m.serialize_entry("extent_files", &v.extent_files)?;
        m.serialize_entry("fast_symlinks", &v.fast_symlinks)?;
        m.serialize_entry("fifos", &v.fifos)?;
        m.serialize_entry("files", &v.files)?;
        m.serialize_entry("fragmented_dirs", &v.fragmented_dirs)?;
        m.serialize_entry("fragmented_files", &(v.fragmented - v.fragmented_dirs))?;
        m.serialize_entry("ind_inodes", &v.ind_inodes)?;
        m.serialize_entry("inodes_count", &v.inodes_count)?;
        m.serialize_entry("inodes_used", &v.inodes_used)?;
        m.serialize_entry("large_files", &v.large_files)?;
        m.serialize_entry("links", &v.links)?;
        m.serialize_entry("noncontiguous_pct", &v.noncontiguous_pct)?;
        m.serialize_entry("regular", &v.regular)?;
        m.serialize_entry("sockets", &v.sockets)?;
        m.serialize_entry("symlinks", &v.symlinks)?;
        m.end()
    }
}

struct JsonTiming<'a>(&'a crate::check::PassTiming);

impl Serialize for JsonTiming<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let n = 5 + usize::from(t.work_seconds.is_some()) + usize::from(t.scheduler.is_some());
        let mut m = s.serialize_map(Some(n))?;
        m.serialize_entry("bytes_read", &t.bytes_read)?;
        m.serialize_entry("pass", &t.pass)?;
        m.serialize_entry("peak_rss_kib", &t.peak_rss_kib)?;
        m.serialize_entry("rss_kib", &t.rss_kib)?;
        if let Some(st) = &t.scheduler {
            m.serialize_entry("scheduler", &JsonScheduler(st))?;
        }
        m.serialize_entry("seconds", &t.seconds)?;
        if let Some(w) = t.work_seconds {
            m.serialize_entry("work_seconds", &w)?;
        }
        m.end()
    }
}

/// The `pass1-2` row's record of what the pipeline's scheduler did (the
/// fields of `engine::pipeline::Stats`, under their names).
struct JsonScheduler<'a>(&'a crate::engine::pipeline::Stats);

impl Serialize for JsonScheduler<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        let mut m = s.serialize_map(Some(23))?;
        m.serialize_entry("bound", &v.bound)?;
        m.serialize_entry("bound_max", &v.bound_max)?;
        m.serialize_entry("deferred_items", &v.deferred_items)?;
        m.serialize_entry("deferred_units", &v.deferred_units)?;
        m.serialize_entry("first_start", &v.first_start)?;
        m.serialize_entry("forced", &v.forced)?;
        m.serialize_entry("helped", &v.helped)?;
        m.serialize_entry("idle_seconds", &v.idle_seconds)?;
        m.serialize_entry("last_end", &v.last_end)?;
        m.serialize_entry("per_worker", &v.per_worker)?;
        m.serialize_entry("picks", &v.picks)?;
        m.serialize_entry("queue_max", &v.queue_max)?;
        m.serialize_entry("readahead", &v.readahead)?;
        m.serialize_entry("readahead_grows", &v.readahead_grows)?;
        m.serialize_entry("readahead_max", &v.readahead_max)?;
        m.serialize_entry("readahead_shrinks", &v.readahead_shrinks)?;
        m.serialize_entry("split", &v.split)?;
        m.serialize_entry("stage0_merged", &v.stage0_merged)?;
        m.serialize_entry("units", &v.units)?;
        m.serialize_entry("waited_units", &v.waited_units)?;
        m.serialize_entry("wall_seconds", &v.wall_seconds)?;
        m.serialize_entry("weights", &v.weights)?;
        m.serialize_entry("work_seconds", &v.work_seconds)?;
        m.serialize_entry("workers", &v.workers)?;
        m.end()
    }
}

/// A run that could not check anything (the device cannot be opened, is
/// mounted, ...): the report's shape, empty, with `error` set.
pub fn print_error_json(device: &str, error: &str, code: i32) {
    let rep = Report::default();
    let doc = JsonReport {
        error: Some(error),
        rep: &rep,
        device,
        code,
        repaired: None,
        online: None,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let _ = serde_json::to_writer_pretty(&mut out, &doc)
        .map_err(std::io::Error::other)
        .and_then(|()| out.write_all(b"\n"));
}
