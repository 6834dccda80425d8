//! The report as the check goes: each pass's header when the pass begins,
//! each pass's problems once the pass is over (their order is then final,
//! the same for any number of threads). In interactive mode the questions
//! are asked there, under their pass's header, once.
//!
//! The check tells of its passes through `check::Events`; what is printed
//! here is recorded in `report::STREAMED`, and the report printed at the
//! end leaves it out, so that the bytes are those of the whole report.
//!
//! Under `-y` the first check's problems are not final when its passes
//! end: the repair's later rounds settle them (a consequence of a fixed
//! problem is no longer shown, a problem a later round finds goes into
//! its pass). There the headers print as the passes begin only while the
//! check has found nothing; from the first problem on, the rest waits for
//! the end of the repair (docs/ARCHITECTURE.md, "The report streams").

use super::ask::Asker;
use super::report::{self, STREAMED, Streamed};
use crate::check::problem::Problem;
use crate::check::{Event, Events, Report};
use std::io::{BufReader, Stdin, Stdout, Write};
use std::sync::{Arc, Mutex};

pub type StdAsker = Asker<BufReader<Stdin>, Stdout>;

/// An answer stopped the run as e2fsck's would (`stops_when_declined`):
/// the check is cancelled, nothing is written, and the run exits 12.
pub static STOPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A problem whose "no" stops e2fsck before its passes: an unusable
/// journal it was not let clear (checking on would judge metadata the
/// journal may still overwrite). `-n` stops there in the check itself
/// (`JournalCannotProceed`); an interactive no stops here.
fn stops_when_declined(p: &Problem) -> bool {
    use crate::check::problem::Code;
    matches!(
        p.code,
        Code::JournalInodeInvalid | Code::JournalSuperblockCorrupt
    )
}

pub struct Streamer {
    device: String,
    /// Interactive mode: asks about the problems pfsck can fix.
    asker: Option<StdAsker>,
    /// `-C 0`: the bar is hidden while lines are printed.
    bar: Option<indicatif::ProgressBar>,
    /// The answers of the first check, in the order its problems were
    /// printed (pass by pass); false for those not asked.
    answers: super::ask::Answers,
    /// The first check was printed whole (its questions all asked).
    first_done: bool,
    /// `-y`: print only while nothing is to be shown but headers.
    settled_only: bool,
    /// `-y`: the check found a problem; nothing more is printed here.
    held: bool,
}

impl Streamer {
    pub fn new(device: &str, asker: Option<StdAsker>, bar: Option<indicatif::ProgressBar>) -> Self {
        if let Ok(mut s) = STREAMED.lock() {
            *s = Streamed::default();
        }
        Streamer {
            device: device.to_string(),
            asker,
            bar,
            answers: Default::default(),
            first_done: false,
            settled_only: false,
            held: false,
        }
    }

    /// `-y`: the pass headers as the passes begin, as long as the check
    /// has found nothing (the later rounds of the repair decide what is
    /// shown of a problem, and how it is answered).
    pub fn repairing(device: &str, bar: Option<indicatif::ProgressBar>) -> Self {
        let s = Streamer::new(device, None, bar);
        if let Ok(mut g) = STREAMED.lock() {
            g.later_rounds = true;
        }
        Streamer {
            settled_only: true,
            ..s
        }
    }

    /// The check's events, delivered to `this`.
    pub fn events(this: &Arc<Mutex<Streamer>>) -> Events {
        let this = this.clone();
        Events(Arc::new(move |ev: Event<'_>| {
            let Ok(mut s) = this.lock() else {
                return;
            };
            match ev {
                Event::PassStart { pass, report } => s.show(report, pass),
            }
        }))
    }

    /// Prints what is final when pass `pass` begins: the opening, the
    /// earlier passes' problems, then the pass's header.
    fn show(&mut self, rep: &Report, pass: u8) {
        self.held |= self.settled_only && !rep.problems.is_empty();
        if !self.first_done && !self.held {
            self.print_at(rep, pass);
        }
        // Test hook: a test reads what was printed when pass N began.
        super::fault(&format!("pass-{pass}"));
    }

    fn print_at(&mut self, rep: &Report, pass: u8) {
        let bar = self.bar.clone();
        let mut go = || {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            let _ = self.print(&mut out, rep, pass.saturating_sub(1), Some(pass));
            let _ = out.flush();
        };
        match bar {
            Some(b) => b.suspend(go),
            None => go(),
        }
    }

    /// The opening and passes up to `sections` (with their headers), then
    /// the header of `then`.
    fn print(
        &mut self,
        out: &mut dyn Write,
        rep: &Report,
        sections: u8,
        then: Option<u8>,
    ) -> std::io::Result<()> {
        let mut st = STREAMED.lock().map(|g| *g).unwrap_or_default();
        let name = report::name_of(rep, &self.device);
        let tree = rep.tree.as_deref();
        let asker = &mut self.asker;
        let answers = &mut self.answers;
        let mut latches = report::Latches::default();
        // An extent tree's optimisation answered yes: e2fsck's pass 1E
        // header follows pass 1's problems.
        let pass1e = std::cell::Cell::new(report::Pass1E::default());
        let stopped = std::cell::Cell::new(STOPPED.load(std::sync::atomic::Ordering::Relaxed));
        let mut render = |out: &mut dyn Write, _k: usize, p: &Problem| {
            let Some(a) = asker.as_mut() else {
                return report::render_problem(out, p, tree, false, false, &mut latches);
            };
            if stopped.get() {
                return Ok(());
            }
            if !crate::fix::supported(p.code) {
                report::render_problem(out, p, tree, true, false, &mut latches)?;
                answers.not_asked();
                return Ok(());
            }
            out.flush()?;
            if crate::check::e2fsck_map::message_only(p) {
                // Stated, as e2fsck states it: the question about the
                // same inode that follows answers for it.
                a.state(p, tree);
                answers.stated(p);
                return Ok(());
            }
            let yes = a.question_of(p, tree);
            if yes
                && (crate::check::e2fsck_map::not_a_fix(p)
                    || crate::check::e2fsck_map::requested(p))
            {
                pass1e.set(pass1e.get().with(p));
            }
            answers.asked(p, yes);
            if !yes && stops_when_declined(p) {
                writeln!(
                    out,
                    "The journal is unusable and was not cleared: cannot proceed with the file system check"
                )?;
                stopped.set(true);
                STOPPED.store(true, std::sync::atomic::Ordering::Relaxed);
                super::control().cancel();
            }
            Ok(())
        };
        let result = (|| {
            if !st.opening {
                report::opening(out, rep, &name, &mut render)?;
                st.opening = true;
            }
            for pass in st.sections + 1..=sections {
                if pass > st.headers {
                    report::header(out, pass)?;
                    st.headers = pass;
                }
                report::section(out, rep, pass, &mut render, &|_| false)?;
                if pass == 1 {
                    pass1e.get().write(out)?;
                }
                st.sections = pass;
            }
            if let Some(p) = then
                && p > st.headers
                && !stopped.get()
            {
                report::header(out, p)?;
                st.headers = p;
            }
            Ok(())
        })();
        if let Ok(mut g) = STREAMED.lock() {
            *g = st;
        }
        result
    }

    /// Interactive mode, the session's question: for the first check,
    /// the rest of its report with the questions in place, and all its
    /// answers; for a later round's check, the questions about what it
    /// found anew. Parallel to `rep.problems`.
    pub fn ask(&mut self, rep: &Report) -> Vec<bool> {
        if self.first_done {
            return match self.asker.as_mut() {
                Some(a) => a.ask(rep),
                None => vec![false; rep.problems.len()],
            };
        }
        {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            let _ = self.print(&mut out, rep, rep.passes_run(), None);
            let _ = out.flush();
        }
        self.first_done = true;
        // The answers were given in the order the problems were printed.
        let mut yes = vec![false; rep.problems.len()];
        let order = rep.problems.in_print_order().map(|(k, _)| k);
        let all = self.asker.as_ref().is_some_and(|a| a.all());
        let answers = std::mem::take(&mut self.answers).finish(all);
        for (k, a) in order.zip(answers) {
            yes[k] = a;
        }
        yes
    }
}
