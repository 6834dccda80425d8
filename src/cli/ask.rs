//! Interactive repair: no -n, -p or -y and standard input a terminal.
//!
//! Like e2fsck, every problem pfsck can fix is put as a question before
//! anything is staged, in e2fsck's words (`Fix<y>?`, `Clear<y>?`, ...):
//! `y` (or Enter) fixes it, `n` leaves it, `a` fixes it and every later one without asking again. End of input
//! (Ctrl-D) answers no to the rest. The repair then runs as `-y` would on
//! the problems answered yes, in rounds; each later round asks about the
//! new problems it finds.

use crate::check::Report;
use crate::check::paths::DirTree;
use crate::check::problem::{Code, Problem};
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set while a question waits for its answer: Ctrl-C there ends the run
/// at once (exit 32), since nothing has been written before the commit and
/// the read would otherwise go on blocking.
pub static ASKING: AtomicBool = AtomicBool::new(false);

pub struct Asker<R: BufRead, W: Write> {
    input: R,
    output: W,
    /// `a` was answered: yes to everything from now on.
    all: bool,
    /// Input ended: no to everything from now on.
    eof: bool,
    /// Problems answered no: a later round that finds them again does not
    /// ask again.
    declined: std::collections::HashSet<String>,
    /// Problems answered yes: a later round (or the check after a restart)
    /// that finds them again, their fix not yet made, takes the same
    /// answer without asking again, as e2fsck asks each once.
    accepted: std::collections::HashSet<String>,
    /// The answers given for the sets of e2fsck's latch groups
    /// (`e2fsck_map::latch_set`): the rest of a set is not asked.
    latched: std::collections::HashMap<(u32, Option<crate::fs::num::Ino>), bool>,
    /// The last question connecting an inode to /lost+found: an
    /// expansion it needs answered no undoes it (the name has no room),
    /// so a later round does not put it again.
    connecting: Option<String>,
}

impl<R: BufRead, W: Write> Asker<R, W> {
    pub fn new(input: R, output: W) -> Self {
        Asker {
            input,
            output,
            all: false,
            eof: false,
            declined: Default::default(),
            accepted: Default::default(),
            latched: Default::default(),
            connecting: None,
        }
    }

    /// Asks about each problem of `rep` that pfsck can fix, under its
    /// pass's header (a later round's check: the first's questions are
    /// asked as it goes); the answers, parallel to `rep.problems` (false
    /// for those not asked). A problem e2fsck only states is stated.
    pub fn ask(&mut self, rep: &Report) -> Vec<bool> {
        let mut shown = 0;
        let mut answers = Answers::default();
        for p in rep.problems.iter() {
            if !crate::fix::supported(p.code) {
                answers.not_asked();
                continue;
            }
            let msg = p.text_in(rep.tree.as_deref());
            if self.accepted.contains(&msg) {
                answers.asked(&p, true);
                continue;
            }
            if self.eof || self.declined.contains(&msg) {
                answers.not_asked();
                continue;
            }
            let pass = p.spec().pass.number();
            if pass > shown {
                let _ = super::report::header(&mut self.output, pass);
                shown = pass;
            }
            if crate::check::e2fsck_map::message_only(&p) {
                let _ = writeln!(self.output, "{msg}");
                answers.stated(&p);
                continue;
            }
            let yes = self.latched_question(&p, &msg);
            answers.asked(&p, yes);
        }
        answers.finish(self.all)
    }

    /// Answering yes to everything (`a` was answered).
    pub fn all(&self) -> bool {
        self.all
    }

    /// States a problem e2fsck states without a question: its fix is
    /// answered by the question about the same inode that follows.
    pub fn state(&mut self, p: &Problem, tree: Option<&DirTree>) {
        let _ = writeln!(self.output, "{}", p.text_in(tree));
    }

    /// Asks about one problem, with e2fsck's word for its fix.
    pub fn question_of(&mut self, p: &Problem, tree: Option<&DirTree>) -> bool {
        self.latched_question(p, &p.text_in(tree))
    }

    /// Asks about `p` (its text `msg`), once for the set of a latch group
    /// as e2fsck asks: a later problem of the set takes that answer, and
    /// is listed with it.
    fn latched_question(&mut self, p: &Problem, msg: &str) -> bool {
        use crate::check::e2fsck_map;
        if e2fsck_map::requested(p) {
            // The option was the question: e2fsck asks nothing more.
            return true;
        }
        if p.code == Code::DupBlocks {
            // Pass 1D's question: the paragraph before it described the
            // file, as e2fsck's "Clone multiply-claimed blocks?".
            return self.question(msg, DUP_QUESTION);
        }
        let ask = e2fsck_map::prompt(p).question();
        let set = e2fsck_map::latch_set(p);
        if let Some(&yes) = set.and_then(|k| self.latched.get(&k)) {
            let answer = if yes { "yes" } else { "no" };
            let _ = writeln!(self.output, "{msg}.  {ask}? {answer}\n");
            return yes;
        }
        let yes = self.question(msg, ask);
        if let Some(k) = set {
            self.latched.insert(k, yes);
        }
        match p.code {
            Code::DirUnconnected | Code::InodeUnattached => self.connecting = Some(msg.to_string()),
            Code::LostFoundFull | Code::LostFoundFullP4 if !yes => {
                self.declined.extend(self.connecting.take());
            }
            _ => {}
        }
        yes
    }

    fn question(&mut self, msg: &str, ask: &str) -> bool {
        if self.eof || self.declined.contains(msg) {
            return false;
        }
        let yes = self.answer(msg, ask);
        if yes {
            self.accepted.insert(msg.to_string());
        } else {
            self.declined.insert(msg.to_string());
        }
        yes
    }

    fn answer(&mut self, msg: &str, ask: &str) -> bool {
        // Pass 1D's question stands alone: its file is the paragraph
        // above it.
        let msg = if ask == DUP_QUESTION {
            String::new()
        } else {
            format!("{msg}.  ")
        };
        if self.all {
            let _ = writeln!(self.output, "{msg}{ask}? yes\n");
            return true;
        }
        loop {
            let _ = write!(self.output, "{msg}{ask}<y>? ");
            let _ = self.output.flush();
            let mut line = String::new();
            ASKING.store(true, Ordering::Relaxed);
            let read = self.input.read_line(&mut line);
            ASKING.store(false, Ordering::Relaxed);
            match read {
                Ok(0) | Err(_) => {
                    self.eof = true;
                    let _ = writeln!(self.output, "no\n");
                    return false;
                }
                Ok(_) => {}
            }
            match line.trim().to_ascii_lowercase().as_str() {
                "" | "y" | "yes" => {
                    let _ = writeln!(self.output, "yes\n");
                    return true;
                }
                "n" | "no" => {
                    let _ = writeln!(self.output, "no\n");
                    return false;
                }
                "a" | "all" => {
                    self.all = true;
                    let _ = writeln!(self.output, "yes to all\n");
                    return true;
                }
                _ => {
                    let _ = writeln!(self.output, "Please answer y, n or a.");
                }
            }
        }
    }
}

/// Pass 1D's question about a file sharing blocks (the report's words
/// under -n and -y).
const DUP_QUESTION: &str = "Copy the shared blocks";

/// The answers about one check's problems, in the order they were put.
/// A problem e2fsck only states (an htree block's bad hash, before its
/// "Clear HTree index?") takes the answer of the next question about the
/// same inode; with none, yes only when everything is answered yes.
#[derive(Debug, Default)]
pub struct Answers {
    yes: Vec<bool>,
    /// Statements waiting for their question: slot and inode.
    pending: Vec<(usize, Option<crate::fs::num::Ino>)>,
}

impl Answers {
    pub fn not_asked(&mut self) {
        self.yes.push(false);
    }

    pub fn stated(&mut self, p: &Problem) {
        self.pending.push((self.yes.len(), p.args().ino));
        self.yes.push(false);
    }

    pub fn asked(&mut self, p: &Problem, yes: bool) {
        let ino = p.args().ino;
        let yes_now = &mut self.yes;
        self.pending.retain(|&(k, i)| {
            if i == ino {
                yes_now[k] = yes;
            }
            i != ino
        });
        self.yes.push(yes);
    }

    /// The answers, in order; `all`: everything was answered yes.
    pub fn finish(mut self, all: bool) -> Vec<bool> {
        for (k, _) in self.pending.drain(..) {
            self.yes[k] = all;
        }
        self.yes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::problem::{Code, Problem};
    use crate::fs::num::Ino;

    fn report() -> Report {
        let mut r = Report::default();
        for ino in [12, 13, 14] {
            r.problems
                .push(Problem::new(Code::InodeDtimeSet).ino(Ino(ino)).num(1));
        }
        r
    }

    #[test]
    fn answers_yes_no_all_and_eof() {
        let mut out = Vec::new();
        let mut a = Asker::new(&b"n\nmaybe\n\n"[..], &mut out);
        assert_eq!(a.ask(&report()), vec![false, true, false]);
        // Declined once, not asked again in a later round; accepted once,
        // taken as yes again without a question.
        assert_eq!(a.ask(&report()), vec![false, true, false]);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Please answer"));
        assert_eq!(text.matches("Fix<y>? ").count(), 4);
        // Questions under their pass's header; none once input ended.
        assert_eq!(text.matches("Pass 1: ").count(), 1, "{text}");
        let mut out = Vec::new();
        let mut a = Asker::new(&b"y\na\n"[..], &mut out);
        assert_eq!(a.ask(&report()), vec![true, true, true]);
        assert_eq!(a.ask(&report()), vec![true, true, true]);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches("Pass 1: ").count(), 1, "{text}");
    }

    /// A file's illegal blocks are one set: one question, its answer
    /// standing for the others; another file's set is asked again.
    #[test]
    fn a_latch_set_is_asked_once() {
        let mut r = Report::default();
        for (ino, blk) in [(12, 9_000_000), (12, 9_000_001), (13, 9_000_002)] {
            r.problems.push(
                Problem::new(Code::InodeIllegalBlock)
                    .ino(Ino(ino))
                    .blk(crate::fs::num::Blk(blk))
                    .e2fsck(0x01000E),
            );
        }
        let mut out = Vec::new();
        let mut a = Asker::new(
            &b"n
y
"[..],
            &mut out,
        );
        assert_eq!(a.ask(&r), vec![false, false, true]);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches("<y>? ").count(), 2, "{text}");
    }

    #[test]
    fn keeps_the_chosen_problems_in_order() {
        let r = report();
        let mut r = r;
        r.problems.push(Problem::new(Code::JournalRecoveryFails));
        let (k, idx) = crate::fix::answered(&r, &[true, false, true, false]);
        assert_eq!(idx, vec![0, 2, 3]);
        assert_eq!(k.problems.get(1).and_then(|p| p.args().ino), Some(Ino(14)));
    }
}
