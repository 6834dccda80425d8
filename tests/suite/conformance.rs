//! Conformance against e2fsprogs' own regression images, when they are
//! present (`../shared/conformance/` next to the crate, or the directory
//! named by `PFSCK_CONFORMANCE_DIR`); a checkout without them passes with a
//! notice.
//!
//! Every image of the baseline (`e2fsprogs-baseline-1.47.4.tsv`, else
//! `e2fsprogs-baseline.tsv`) is decompressed to a temporary
//! file and checked with `pfsck -fn` under a time limit (60 s, or
//! `PFSCK_CONFORMANCE_TIMEOUT` seconds). The test records crashes (a signal
//! or exit 101, a Rust panic), hangs (killed at the limit), writes to the
//! image, and agreement with the baseline's `e2fsck_fn` column: pfsck
//! agrees when it exits 0 exactly where e2fsck did, counted over images
//! whose `e2fsck_fn` is 0, 4 or 12. It prints a table, writes the totals to
//! `target/conformance-report.json`, and asserts no crash, no hang, no
//! modified image and an agreement of at least `PFSCK_CONFORMANCE_MIN`
//! percent (default 95). A third test counts the directory paths both
//! reports name.

use crate::common::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn env_number(name: &str, default: f64) -> f64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v} is not a number")),
        Err(_) => default,
    }
}

/// The target directory: `CARGO_TARGET_TMPDIR` is `<target>/tmp`.
fn target_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        Path::to_path_buf,
    )
}

struct Row {
    test: String,
    e2fsck_fn: i32,
}

fn read_baseline(path: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().expect("empty baseline").split('\t').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h.trim() == name)
            .unwrap_or_else(|| panic!("baseline has no column {name}: {header:?}"))
    };
    let (test_col, fn_col) = (col("test"), col("e2fsck_fn"));
    lines
        .map(|l| {
            let fields: Vec<&str> = l.split('\t').collect();
            Row {
                test: fields[test_col].trim().to_string(),
                e2fsck_fn: fields[fn_col]
                    .trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("bad e2fsck_fn in baseline line: {l}")),
            }
        })
        .collect()
}

struct Outcome {
    test: String,
    e2fsck_fn: i32,
    /// pfsck's exit code (None: signal or timeout).
    pfsck: Option<i32>,
    describe: String,
    crashed: bool,
    hung: bool,
    modified: bool,
    /// Not run (image missing or not extractable).
    error: Option<String>,
    seconds: f64,
    first_stderr: String,
}

impl Outcome {
    fn compared(&self) -> bool {
        self.error.is_none() && matches!(self.e2fsck_fn, 0 | 4 | 12)
    }
    fn agrees(&self) -> bool {
        !self.crashed
            && !self.hung
            && self
                .pfsck
                .is_some_and(|c| (c == 0) == (self.e2fsck_fn == 0))
    }
}

fn check_image(dir: &Path, row: &Row, timeout: Duration) -> Outcome {
    let mut outcome = Outcome {
        test: row.test.clone(),
        e2fsck_fn: row.e2fsck_fn,
        pfsck: None,
        describe: String::new(),
        crashed: false,
        hung: false,
        modified: false,
        error: None,
        seconds: 0.0,
        first_stderr: String::new(),
    };
    let tmp = TempDir::new(&format!("conf-{}", row.test));
    let img = tmp.join("image");
    if let Err(e) = extract_image(&dir.join("e2fsprogs").join(&row.test), &img) {
        outcome.describe = "not run".into();
        outcome.error = Some(e);
        return outcome;
    }
    let before = hash_file(&img);
    let run = pfsck_timeout(&["-fn".as_ref(), img.as_os_str()], timeout);
    outcome.modified = hash_file(&img) != before;
    outcome.pfsck = if run.timed_out { None } else { run.code() };
    outcome.crashed = run.crashed();
    outcome.hung = run.timed_out;
    outcome.describe = run.describe();
    outcome.seconds = run.elapsed.as_secs_f64();
    outcome.first_stderr = run
        .stderr
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .to_string();
    outcome
}

fn json_escape(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

#[test]
fn e2fsprogs_conformance_images() {
    let Some(dir) = conformance_dir() else {
        println!("conformance images not found, skipped");
        eprintln!("conformance images not found, skipped");
        return;
    };
    let rows = read_baseline(&baseline_path(&dir));
    let timeout = Duration::from_secs_f64(env_number("PFSCK_CONFORMANCE_TIMEOUT", 60.0));
    let min_agreement = env_number("PFSCK_CONFORMANCE_MIN", 95.0);
    let outcomes = parallel_map(&rows, test_threads(), |_, row| {
        check_image(&dir, row, timeout)
    });

    let mut table = String::new();
    let _ = writeln!(
        table,
        "{:<32} {:>9} {:<22} {:>7}  result",
        "image", "e2fsck_fn", "pfsck -fn", "seconds"
    );
    for o in &outcomes {
        let mut result = Vec::new();
        if let Some(e) = &o.error {
            result.push(format!("NOT RUN: {e}"));
        }
        if o.crashed {
            result.push("CRASH".to_string());
        }
        if o.hung {
            result.push("HANG".to_string());
        }
        if o.modified {
            result.push("MODIFIED".to_string());
        }
        if o.error.is_none() {
            if !o.compared() {
                result.push("(not compared)".to_string());
            } else if o.agrees() {
                result.push("agree".to_string());
            } else {
                result.push("DISAGREE".to_string());
            }
        }
        if (!o.agrees() || o.crashed) && !o.first_stderr.is_empty() {
            result.push(format!("| {}", truncate(&o.first_stderr, 100)));
        }
        let _ = writeln!(
            table,
            "{:<32} {:>9} {:<22} {:>7.2}  {}",
            o.test,
            o.e2fsck_fn,
            o.describe,
            o.seconds,
            result.join(" ")
        );
    }

    let compared: Vec<&Outcome> = outcomes.iter().filter(|o| o.compared()).collect();
    let agreed = compared.iter().filter(|o| o.agrees()).count();
    let agreement = if compared.is_empty() {
        100.0
    } else {
        100.0 * agreed as f64 / compared.len() as f64
    };
    let crashes: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.crashed)
        .map(|o| o.test.as_str())
        .collect();
    let hangs: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.hung)
        .map(|o| o.test.as_str())
        .collect();
    let modified: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.modified)
        .map(|o| o.test.as_str())
        .collect();
    let not_run: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.error.is_some())
        .map(|o| o.test.as_str())
        .collect();
    let disagree: Vec<&str> = compared
        .iter()
        .filter(|o| !o.agrees())
        .map(|o| o.test.as_str())
        .collect();
    let totals = format!(
        "images: {}, compared (e2fsck_fn 0/4/12): {}, agree: {} ({agreement:.1}%, minimum \
         {min_agreement}%), crashes: {}, hangs: {}, modified: {}, not run: {}",
        outcomes.len(),
        compared.len(),
        agreed,
        crashes.len(),
        hangs.len(),
        modified.len(),
        not_run.len()
    );
    println!("{table}\n{totals}");

    let images: Vec<String> = outcomes
        .iter()
        .map(|o| {
            format!(
                "{{\"test\":{},\"e2fsck_fn\":{},\"pfsck_fn\":{},\"outcome\":{},\"compared\":{},\
                 \"agree\":{},\"crash\":{},\"hang\":{},\"modified\":{},\"seconds\":{:.3}}}",
                json_escape(&o.test),
                o.e2fsck_fn,
                o.pfsck.map_or("null".into(), |c| c.to_string()),
                json_escape(o.error.as_deref().unwrap_or(&o.describe)),
                o.compared(),
                o.compared() && o.agrees(),
                o.crashed,
                o.hung,
                o.modified,
                o.seconds
            )
        })
        .collect();
    let report = format!(
        "{{\"images\":{},\"compared\":{},\"agreed\":{},\"agreement_percent\":{agreement:.2},\
         \"threshold_percent\":{min_agreement},\"crashes\":{},\"hangs\":{},\"modified\":{},\
         \"not_run\":{},\"results\":[{}]}}",
        outcomes.len(),
        compared.len(),
        agreed,
        crashes.len(),
        hangs.len(),
        modified.len(),
        not_run.len(),
        images.join(",")
    );
    // Validate our own JSON before writing it.
    let parsed: serde_json::Value = serde_json::from_str(&report).expect("report JSON");
    let report_path = target_dir().join("conformance-report.json");
    let pretty = serde_json::to_string_pretty(&parsed).unwrap();
    match std::fs::write(&report_path, pretty) {
        Ok(()) => println!("report written to {}", report_path.display()),
        Err(e) => eprintln!("cannot write {}: {e}", report_path.display()),
    }

    let mut failures = Vec::new();
    if !crashes.is_empty() {
        failures.push(format!("crashes: {}", crashes.join(", ")));
    }
    if !hangs.is_empty() {
        failures.push(format!("hangs: {}", hangs.join(", ")));
    }
    if !modified.is_empty() {
        failures.push(format!("-n modified: {}", modified.join(", ")));
    }
    if agreement < min_agreement {
        failures.push(format!(
            "agreement {agreement:.1}% below {min_agreement}%; disagreeing: {}",
            disagree.join(", ")
        ));
    }
    assert!(
        failures.is_empty(),
        "conformance failed:\n  {}\n{totals}\n\n{table}",
        failures.join("\n  ")
    );
}

/// `pfsck -fy` once on every conformance image. Asserted: no crash, no
/// hang, no false claim (exit 0 or 1 means `e2fsck -fn` then finds the
/// image clean), and whatever was written is undone byte for byte by
/// `--rollback`. Printed: the repair rate over the images e2fsck itself
/// repairs in one run (baseline `e2fsck_fn` non-zero, `e2fsck_fn_after_fy`
/// 0). Asserted against a floor (`PFSCK_REPAIR_FLOOR`, percent, default
/// 95, issue 3's target) so that a regression fails.
/// `-fn` of the oracle (e2fsck 1.47.4, which stands where it and 1.47.0
/// disagree), or of the installed e2fsck without it or when the oracle
/// does not finish (it hangs on a few images).
fn judge_fn(img: &Path) -> RunResult {
    if let Some(oracle) = oracle() {
        let mut cmd = std::process::Command::new(oracle);
        cmd.arg("-fn").arg(img);
        let r = run_timeout_merged(cmd, Duration::from_secs(60));
        if !r.timed_out {
            return r;
        }
    }
    e2fsck_fn_run(img)
}

#[test]
fn e2fsprogs_conformance_repair() {
    let Some(dir) = conformance_dir() else {
        println!("conformance images not found, skipped");
        return;
    };
    let text = std::fs::read_to_string(baseline_path(&dir)).unwrap();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().unwrap().split('\t').map(str::trim).collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (tc, fnc, afc) = (col("test"), col("e2fsck_fn"), col("e2fsck_fn_after_fy"));
    let rows: Vec<(String, i32, i32)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').map(str::trim).collect();
            (
                f[tc].to_string(),
                f[fnc].parse().unwrap_or(-1),
                f[afc].parse().unwrap_or(-1),
            )
        })
        .collect();
    let timeout = Duration::from_secs_f64(env_number("PFSCK_CONFORMANCE_TIMEOUT", 60.0));
    // (test, target, repaired, failure)
    let results = parallel_map(&rows, test_threads(), |_, (test, e2_fn, e2_after)| {
        let target = *e2_fn != 0 && *e2_after == 0;
        let tmp = TempDir::new(&format!("confy-{test}"));
        let img = tmp.join("image");
        if extract_image(&dir.join("e2fsprogs").join(test), &img).is_err() {
            return (false, false, None);
        }
        let damaged = std::fs::read(&img).unwrap();
        let run = pfsck_timeout(&["-fy".as_ref(), img.as_os_str()], timeout);
        let code = run.code().unwrap_or(-1);
        let mut why = Vec::new();
        if run.crashed() || run.timed_out {
            why.push(format!("pfsck -fy {}", run.describe()));
        }
        let mut repaired = false;
        if matches!(code, 0 | 1) && !run.timed_out {
            let e2 = judge_fn(&img);
            if e2.code() != Some(0) {
                why.push(format!(
                    "pfsck -fy exited {code} but e2fsck -fn {}: {}",
                    e2.describe(),
                    truncate(&e2.stdout, 1500)
                ));
            } else {
                repaired = *e2_fn != 0;
            }
        }
        let after = std::fs::read(&img).unwrap();
        let log = pfsck::store::default_undo_path(&img);
        // A run that fixed nothing writes only the record of the check,
        // without a log.
        let only_record = !log.exists() && only_check_record_changed_in(&img, &damaged, &after);
        if after != damaged && !only_record {
            let rb = pfsck_timeout(
                &["--rollback".as_ref(), log.as_os_str(), img.as_os_str()],
                timeout,
            );
            if rb.code() != Some(0) || std::fs::read(&img).unwrap() != damaged {
                why.push(format!(
                    "rollback did not restore the image: {}",
                    rb.describe()
                ));
            }
        }
        let failure = (!why.is_empty()).then(|| format!("{test}: {}", why.join("; ")));
        (target, repaired, failure)
    });
    let targets = results.iter().filter(|r| r.0).count();
    let repaired = results.iter().filter(|r| r.0 && r.1).count();
    let names: Vec<&str> = rows
        .iter()
        .zip(&results)
        .filter(|(_, r)| r.0 && r.1)
        .map(|(row, _)| row.0.as_str())
        .collect();
    println!(
        "pfsck -fy: {repaired} of {targets} images e2fsck repairs in one run are clean after one \
         pfsck -fy run: {}",
        names.join(", ")
    );
    let floor = env_number("PFSCK_REPAIR_FLOOR", 95.0);
    let rate = if targets == 0 {
        100.0
    } else {
        repaired as f64 * 100.0 / targets as f64
    };
    assert!(
        rate >= floor,
        "repair rate {rate:.1}% ({repaired} of {targets}) is below the floor {floor}%"
    );
    let failures: Vec<&String> = results.iter().filter_map(|r| r.2.as_ref()).collect();
    assert!(
        failures.is_empty(),
        "{} conformance repairs failed:\n{}",
        failures.len(),
        failures
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Wherever e2fsck 1.47.4's `-fn` report names a directory by its path
/// ("in /lost+found (11)", "(was in /a)"), pfsck's names it too (issue
/// 16). Counted over the public images: how many name any path, and on
/// how many pfsck leaves one of those names out. Asserted: at most
/// `PFSCK_PATHS_MISSING_MAX` (default: the count when this test was
/// written) so that a regression fails while the rest is worked off.
#[test]
fn e2fsprogs_conformance_paths() {
    let Some(dir) = conformance_dir() else {
        println!("conformance images not found, skipped");
        return;
    };
    let Some(oracle) = oracle() else {
        println!("e2fsck 1.47.4 not found, skipped");
        return;
    };
    let rows = read_baseline(&baseline_path(&dir));
    // Only names of directories: "in superblock (1)" names no path.
    let named = |out: &str| -> Vec<String> {
        report_paths(out)
            .into_iter()
            .filter(|p| p.starts_with(['/', '<', '.', '?']) || p.starts_with("was in "))
            .collect()
    };
    let results = parallel_map(&rows, test_threads(), |_, row| {
        let tmp = TempDir::new(&format!("confp-{}", row.test));
        let img = tmp.join("image");
        extract_image(&dir.join("e2fsprogs").join(&row.test), &img).ok()?;
        // The oracle hangs on a few images: those are left out.
        let mut cmd = std::process::Command::new(&oracle);
        cmd.arg("-fn").arg(&img);
        let e2 = run_timeout_merged(cmd, Duration::from_secs(60));
        if e2.timed_out {
            return None;
        }
        let ours = pfsck_timeout(&["-fn".as_ref(), img.as_os_str()], Duration::from_secs(60));
        let want = named(&e2.stdout);
        let have = named(&ours.stdout);
        let missing: Vec<String> = want.iter().filter(|p| !have.contains(p)).cloned().collect();
        Some((row.test.clone(), !want.is_empty(), missing))
    });
    let naming = results.iter().flatten().filter(|r| r.1).count();
    let short: Vec<String> = results
        .iter()
        .flatten()
        .filter(|r| !r.2.is_empty())
        .map(|(t, _, m)| format!("{t}: {}", m.join(", ")))
        .collect();
    println!(
        "paths: {naming} images where e2fsck -fn names a directory by path; pfsck leaves \
         one out on {}:\n  {}",
        short.len(),
        short.join("\n  ")
    );
    let max = env_number("PFSCK_PATHS_MISSING_MAX", 0.0);
    assert!(
        short.len() as f64 <= max,
        "pfsck names fewer paths than e2fsck on {} images (at most {max}):\n  {}",
        short.len(),
        short.join("\n  ")
    );
}
