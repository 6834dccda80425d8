//! LVM snapshots, made as e2scrub makes them: `lvcreate -s` of the logical
//! volume, named `LV.e2scrub` (so e2scrub's own reaping, `e2scrub_all -r`
//! and the boot-time `e2scrub_reap` service, finds what a killed run left,
//! and e2scrub and pfsck never snapshot one volume at once), sized by
//! `snap_size_mb` of /etc/e2scrub.conf (256 MiB by default). LVM suspends
//! the origin while it creates the snapshot, which freezes the file
//! system: the window is inside `lvcreate`, so pfsck reports lvcreate's
//! whole run as an upper bound. The commands go through [`Run`] so that
//! the sequence is tested without device-mapper.

use super::watchdog::Guard;
use super::{OnlineError, Snapshot};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs an LVM command: (exit code, standard output).
pub trait Run {
    fn run(&self, prog: &str, args: &[&str]) -> io::Result<(i32, String)>;
}

/// The commands found on PATH.
pub struct System;

impl Run for System {
    fn run(&self, prog: &str, args: &[&str]) -> io::Result<(i32, String)> {
        let out = Command::new(prog)
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()?;
        Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ))
    }
}

pub const CONF: &str = "/etc/e2scrub.conf";
const DEFAULT_SNAP_MB: u64 = 256;
/// How long a busy snapshot is retried before giving up (e2scrub: 30 s).
const REMOVE_PATIENCE: Duration = Duration::from_secs(30);
/// lvremove's exit code when the volume is in use.
const LVM_BUSY: i32 = 5;

/// `snap_size_mb` from e2scrub's configuration text (a shell fragment:
/// only plain `snap_size_mb=N` lines are understood).
pub fn snap_size_mb(conf: &str) -> u64 {
    conf.lines()
        .rev()
        .filter_map(|l| l.trim().strip_prefix("snap_size_mb="))
        .filter_map(|v| v.trim().trim_matches(['"', '\'']).parse::<u64>().ok())
        .find(|&n| n > 0)
        .unwrap_or(DEFAULT_SNAP_MB)
}

/// Values of `lvs --nameprefixes` output: `LVM2_KEY='value'` pairs.
fn field<'a>(out: &'a str, key: &str) -> Option<&'a str> {
    let at = out.find(&format!("LVM2_{key}='"))? + key.len() + 7;
    let rest = &out[at..];
    Some(&rest[..rest.find('\'')?])
}

/// A logical volume: volume group and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lv {
    pub vg: String,
    pub lv: String,
}

impl Lv {
    pub fn snapshot(&self) -> String {
        format!("{}/{}.e2scrub", self.vg, self.lv)
    }
}

/// The logical volume `dev` is, refusing snapshots of snapshots.
pub fn identify(run: &dyn Run, dev: &Path) -> Result<Lv, OnlineError> {
    let d = dev.to_string_lossy();
    let args = [
        "--noheadings",
        "--nameprefixes",
        "-o",
        "vg_name,lv_name,lv_role",
        &d,
    ];
    let (code, out) = run.run("lvs", &args).map_err(|e| {
        OnlineError::Unsupported(format!("{d} is an LVM volume but lvs cannot run: {e}"))
    })?;
    let (Some(vg), Some(lv)) = (field(&out, "VG_NAME"), field(&out, "LV_NAME")) else {
        return Err(OnlineError::Unsupported(format!(
            "{d}: lvs does not name its logical volume (exit {code})"
        )));
    };
    if field(&out, "LV_ROLE").is_some_and(|r| r.contains("snapshot")) {
        return Err(OnlineError::Unsupported(format!(
            "{d} is itself an LVM snapshot"
        )));
    }
    Ok(Lv {
        vg: vg.to_string(),
        lv: lv.to_string(),
    })
}

fn exists(run: &dyn Run, vg_lv: &str) -> bool {
    run.run("lvs", &["--noheadings", "-o", "lv_name", vg_lv])
        .is_ok_and(|(c, out)| c == 0 && !out.trim().is_empty())
}

/// Removes the logical volume `vg_lv`, retrying while it is busy.
pub fn remove(run: &dyn Run, vg_lv: &str) -> Result<(), String> {
    let deadline = Instant::now() + REMOVE_PATIENCE;
    loop {
        match run.run("lvremove", &["-f", vg_lv]) {
            Ok((0, _)) => return Ok(()),
            Ok((LVM_BUSY, _)) if Instant::now() < deadline && exists(run, vg_lv) => {
                std::thread::sleep(Duration::from_millis(500));
            }
            // Gone anyway (removed by someone else meanwhile).
            Ok(_) if !exists(run, vg_lv) => return Ok(()),
            Ok((code, _)) => return Err(format!("lvremove -f {vg_lv} failed (exit {code})")),
            Err(e) => return Err(format!("cannot run lvremove: {e}")),
        }
    }
}

/// A snapshot volume this process made: removed when dropped.
pub struct Snap<'a> {
    pub(super) name: String,
    run: &'a dyn Run,
    guard: &'a dyn Guard,
}

impl Snap<'_> {
    /// LVM marks a snapshot invalid when its copy-on-write space fills:
    /// what it holds is then no longer the origin's image.
    pub fn invalid(&self) -> bool {
        self.run
            .run(
                "lvs",
                &["--noheadings", "-o", "lv_snapshot_invalid", &self.name],
            )
            .is_ok_and(|(_, out)| !out.trim().is_empty())
    }
}

impl Drop for Snap<'_> {
    fn drop(&mut self) {
        match remove(self.run, &self.name) {
            Ok(()) => {
                let _ = self.guard.disarm_lvremove();
            }
            // Left armed: the watchdog tries again when pfsck exits.
            Err(e) => eprintln!("pfsck: {e}"),
        }
    }
}

/// Snapshots the logical volume `dev`.
pub fn take<'a>(
    run: &'a dyn Run,
    guard: &'a dyn Guard,
    dev: &Path,
    size_mb: u64,
) -> Result<Snapshot<'a>, OnlineError> {
    let lv = identify(run, dev)?;
    let name = lv.snapshot();
    // A snapshot of this name is a leftover of a run that was killed (or
    // a running e2scrub's, which then refuses removal while busy).
    if exists(run, &name) {
        remove(run, &name).map_err(|e| {
            OnlineError::Refused(format!(
                "{name} exists and is in use ({e}): another scrub is running"
            ))
        })?;
    }
    guard
        .arm_lvremove(&name)
        .map_err(|e| OnlineError::Failed(format!("cannot reach the watchdog: {e}")))?;
    let origin = format!("{}/{}", lv.vg, lv.lv);
    let size = format!("{size_mb}m");
    let snap_lv = format!("{}.e2scrub", lv.lv);
    let t = Instant::now();
    let created = run.run("lvcreate", &["-s", "-L", &size, "-n", &snap_lv, &origin]);
    let window = t.elapsed();
    // From here on the volume may exist: Snap's drop removes it.
    let snap = Snap { name, run, guard };
    match created {
        Ok((0, _)) => {}
        Ok((code, _)) => {
            return Err(OnlineError::Refused(format!(
                "lvcreate -s of {origin} failed (exit {code}): is there {size_mb} MiB free in volume group {}?",
                lv.vg
            )));
        }
        Err(e) => return Err(OnlineError::Failed(format!("cannot run lvcreate: {e}"))),
    }
    // Let udev make the device node.
    let _ = run.run("udevadm", &["settle"]);
    let (_, out) = run
        .run(
            "lvs",
            &[
                "--noheadings",
                "--nameprefixes",
                "-o",
                "lv_path",
                &snap.name,
            ],
        )
        .map_err(|e| OnlineError::Failed(format!("cannot run lvs: {e}")))?;
    let path = field(&out, "LV_PATH").map(PathBuf::from).ok_or_else(|| {
        OnlineError::Failed(format!("lvs does not give the path of {}", snap.name))
    })?;
    Ok(Snapshot {
        mechanism: super::Mechanism::Lvm,
        path,
        of: origin,
        frozen: window,
        frozen_is_upper_bound: true,
        hold: super::Hold::Lvm(snap),
    })
}

/// Removes the snapshot of `dev` a killed run left; true when there was one.
pub fn reap(run: &dyn Run, dev: &Path) -> Result<bool, OnlineError> {
    let name = identify(run, dev)?.snapshot();
    if !exists(run, &name) {
        return Ok(false);
    }
    remove(run, &name).map_err(OnlineError::Failed)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Scripted LVM: records every command; `lvs` answers from the state.
    #[derive(Default)]
    struct Fake {
        calls: RefCell<Vec<String>>,
        snapshot_exists: RefCell<bool>,
        lvcreate_fails: bool,
        busy_removals: RefCell<u32>,
        role: &'static str,
    }

    impl Run for Fake {
        fn run(&self, prog: &str, args: &[&str]) -> io::Result<(i32, String)> {
            self.calls
                .borrow_mut()
                .push(format!("{prog} {}", args.join(" ")));
            let exists = *self.snapshot_exists.borrow();
            Ok(match (prog, args.last().copied().unwrap_or("")) {
                ("lvs", "/dev/dm-3") => (
                    0,
                    format!(
                        "  LVM2_VG_NAME='vg0' LVM2_LV_NAME='data' LVM2_LV_ROLE='{}'\n",
                        self.role
                    ),
                ),
                ("lvs", "vg0/data.e2scrub") if !exists => (5, String::new()),
                ("lvs", "vg0/data.e2scrub") if args.contains(&"lv_path") => {
                    (0, "  LVM2_LV_PATH='/dev/vg0/data.e2scrub'\n".into())
                }
                ("lvs", "vg0/data.e2scrub") if args.contains(&"lv_snapshot_invalid") => {
                    (0, "  \n".into())
                }
                ("lvs", _) => (0, "  data.e2scrub\n".into()),
                ("lvcreate", _) if self.lvcreate_fails => (5, String::new()),
                ("lvcreate", _) => {
                    *self.snapshot_exists.borrow_mut() = true;
                    (0, String::new())
                }
                ("lvremove", _) if *self.busy_removals.borrow() > 0 => {
                    *self.busy_removals.borrow_mut() -= 1;
                    (LVM_BUSY, String::new())
                }
                ("lvremove", _) => {
                    *self.snapshot_exists.borrow_mut() = false;
                    (0, String::new())
                }
                _ => (0, String::new()),
            })
        }
    }

    #[derive(Default)]
    struct Armed(RefCell<Vec<String>>);

    impl Guard for Armed {
        fn arm_thaw(&self, p: &Path) -> io::Result<()> {
            self.0.borrow_mut().push(format!("T {}", p.display()));
            Ok(())
        }
        fn disarm_thaw(&self) -> io::Result<()> {
            self.0.borrow_mut().push("t".into());
            Ok(())
        }
        fn arm_lvremove(&self, lv: &str) -> io::Result<()> {
            self.0.borrow_mut().push(format!("L {lv}"));
            Ok(())
        }
        fn disarm_lvremove(&self) -> io::Result<()> {
            self.0.borrow_mut().push("l".into());
            Ok(())
        }
    }

    fn public() -> Fake {
        Fake {
            role: "public",
            ..Fake::default()
        }
    }

    #[test]
    fn snapshot_made_checked_and_removed() {
        let (fake, armed) = (public(), Armed::default());
        let snap = take(&fake, &armed, Path::new("/dev/dm-3"), 128).unwrap();
        assert_eq!(snap.path, PathBuf::from("/dev/vg0/data.e2scrub"));
        assert_eq!(snap.of, "vg0/data");
        assert!(snap.frozen_is_upper_bound);
        let super::super::Hold::Lvm(s) = &snap.hold else {
            panic!("not an LVM snapshot")
        };
        assert!(!s.invalid());
        drop(snap);
        let calls = fake.calls.borrow();
        assert!(calls.contains(&"lvcreate -s -L 128m -n data.e2scrub vg0/data".to_string()));
        assert_eq!(calls.last().unwrap(), "lvremove -f vg0/data.e2scrub");
        assert!(!*fake.snapshot_exists.borrow());
        // Armed before lvcreate, disarmed after the removal.
        assert_eq!(*armed.0.borrow(), ["L vg0/data.e2scrub", "l"]);
    }

    #[test]
    fn failed_lvcreate_leaves_nothing() {
        let fake = Fake {
            lvcreate_fails: true,
            ..public()
        };
        let armed = Armed::default();
        let e = take(&fake, &armed, Path::new("/dev/dm-3"), 256)
            .err()
            .unwrap();
        assert!(matches!(e, OnlineError::Refused(s) if s.contains("256 MiB free")));
        assert!(!*fake.snapshot_exists.borrow());
    }

    #[test]
    fn busy_leftover_is_retried_then_removed() {
        let fake = public();
        *fake.snapshot_exists.borrow_mut() = true;
        *fake.busy_removals.borrow_mut() = 1;
        assert!(reap(&fake, Path::new("/dev/dm-3")).unwrap());
        assert!(!*fake.snapshot_exists.borrow());
        assert!(
            !reap(&fake, Path::new("/dev/dm-3")).unwrap(),
            "nothing left"
        );
    }

    #[test]
    fn snapshots_are_not_snapshotted() {
        let fake = Fake {
            role: "snapshot,public",
            ..Fake::default()
        };
        let e = identify(&fake, Path::new("/dev/dm-3")).unwrap_err();
        assert!(matches!(e, OnlineError::Unsupported(s) if s.contains("itself an LVM snapshot")));
    }

    #[test]
    fn conf_and_fields() {
        assert_eq!(snap_size_mb(""), 256);
        assert_eq!(snap_size_mb("# x\nsnap_size_mb=512\n"), 512);
        assert_eq!(snap_size_mb("snap_size_mb=\"64\"\nfstrim=1"), 64);
        assert_eq!(snap_size_mb("snap_size_mb=lots"), 256);
        let out = "  LVM2_VG_NAME='v' LVM2_LV_NAME='l-1' LVM2_LV_ROLE=''";
        assert_eq!(field(out, "VG_NAME"), Some("v"));
        assert_eq!(field(out, "LV_NAME"), Some("l-1"));
        assert_eq!(field(out, "LV_ROLE"), Some(""));
        assert_eq!(field(out, "LV_PATH"), None);
    }
}
