//! How many worker threads to use: the CPUs this process may run on
//! (affinity and cgroup quota, which `available_parallelism` honours),
//! minus the CPUs other processes keep busy, measured from /proc/stat
//! between two calls. Re-evaluated at every pass, so a check started on a
//! busy machine grows when the machine frees up, and shrinks when it fills.

use super::pool::Threads;
use std::time::Instant;

pub struct Budget {
    fixed: Option<usize>,
    allowed: usize,
    last: Option<Sample>,
}

#[derive(Clone, Copy)]
struct Sample {
    /// Busy and total jiffies of all CPUs (/proc/stat "cpu" line).
    busy: u64,
    total: u64,
    /// This process's own CPU time in jiffies (utime + stime).
    own: u64,
    /// CPUs of the machine (the per-CPU lines of /proc/stat).
    cpus: u64,
    at: Instant,
}

impl Budget {
    /// `fixed`: `--threads N`; None: automatic.
    pub fn new(fixed: Option<usize>) -> Budget {
        let allowed = std::thread::available_parallelism().map_or(1, |n| n.get());
        Budget {
            fixed,
            allowed,
            last: sample(),
        }
    }

    /// Threads for the next pass.
    pub fn threads(&mut self) -> Threads {
        if let Some(n) = self.fixed {
            return Threads(n);
        }
        let now = sample();
        let n = match (self.last, now) {
            (Some(a), Some(b)) => budget_between(self.allowed, &a, &b),
            _ => self.allowed,
        };
        if now.is_some() {
            self.last = now;
        }
        Threads(n)
    }

    pub fn allowed(&self) -> usize {
        self.allowed
    }
}

/// CPUs left for us: allowed minus what others used between `a` and `b`.
fn budget_between(allowed: usize, a: &Sample, b: &Sample) -> usize {
    let total = b.total.saturating_sub(a.total);
    // Too short an interval says nothing about the load.
    if total == 0 || b.at.duration_since(a.at).as_millis() < 20 {
        return allowed;
    }
    let busy_others = b
        .busy
        .saturating_sub(a.busy)
        .saturating_sub(b.own.saturating_sub(a.own));
    // total counts jiffies of every CPU of the machine; busy_others/total
    // is the fraction of the machine others used.
    let machine = b.cpus.max(1);
    let others_cpus = (busy_others * machine) / total;
    usize::try_from((allowed as u64).saturating_sub(others_cpus).max(1)).unwrap_or(allowed)
}

fn sample() -> Option<Sample> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let (busy, total) = parse_cpu_line(stat.lines().next()?)?;
    let cpus = stat
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count() as u64;
    let own = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| parse_own_jiffies(&s))
        .unwrap_or(0);
    Some(Sample {
        busy,
        total,
        own,
        cpus,
        at: Instant::now(),
    })
}

/// "cpu  user nice system idle iowait irq softirq steal ..." → (busy, total).
fn parse_cpu_line(line: &str) -> Option<(u64, u64)> {
    let mut it = line.split_whitespace();
    if it.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = it.filter_map(|x| x.parse().ok()).collect();
    if v.len() < 4 {
        return None;
    }
    // guest time is already counted in user; count the first 8 fields.
    let total: u64 = v.iter().take(8).sum();
    let idle = v[3] + v.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// utime + stime from /proc/self/stat (fields 14 and 15, after the
/// parenthesised command name, which may itself contain spaces).
fn parse_own_jiffies(s: &str) -> Option<u64> {
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); utime is field 14 → index 11.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// (resident, peak resident) memory of this process in KiB, from
/// /proc/self/status; None where it cannot be read.
pub fn memory_kib() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Runs this process (and the threads it starts later) at SCHED_IDLE, so a
/// check on a live machine takes only CPU time nobody else wants.
pub fn set_idle_priority() -> std::io::Result<()> {
    set_policy(libc::SCHED_IDLE)
}

/// Back to the normal policy (`SCHED_OTHER`) for this thread, after
/// `set_idle_priority`: work that blocks others (a file system freeze)
/// must not wait for idle CPU time.
pub fn set_normal_priority() -> std::io::Result<()> {
    set_policy(libc::SCHED_OTHER)
}

#[allow(unsafe_code)]
fn set_policy(policy: libc::c_int) -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler reads `param` only; pid 0 is this thread,
    // whose policy new threads inherit.
    let r = unsafe { libc::sched_setscheduler(0, policy, &param) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn parses_proc_lines() {
        assert_eq!(
            parse_cpu_line("cpu  100 0 50 800 50 0 0 0 0 0"),
            Some((150, 1000))
        );
        assert_eq!(parse_cpu_line("intr 1 2"), None);
        let s = "1234 (my (odd) name) R 1 1 1 0 -1 4194304 10 0 0 0 7 3 0 0 20 0 1 0";
        assert_eq!(parse_own_jiffies(s), Some(10));
    }

    #[test]
    fn others_load_shrinks_budget() {
        let t0 = Instant::now();
        let a = Sample {
            busy: 0,
            total: 0,
            own: 0,
            cpus: 2,
            at: t0,
        };
        let b = Sample {
            busy: 1000,
            total: 1000,
            own: 0,
            cpus: 2,
            at: t0 + Duration::from_millis(100),
        };
        // The whole machine busy with others: one thread left.
        assert_eq!(budget_between(2, &a, &b), 1);
        // Our own use does not count against us.
        let c = Sample { own: 1000, ..b };
        assert_eq!(budget_between(2, &a, &c), 2);
    }

    #[test]
    fn fixed_is_fixed() {
        assert_eq!(Budget::new(Some(3)).threads(), Threads(3));
        assert!(Budget::new(None).threads().0 >= 1);
    }
}
