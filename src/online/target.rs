//! What `pfsck --online TARGET` names: the mounted ext2/3/4 file system,
//! its block device and what that device is (a loop device, an LVM
//! logical volume, something else), from /proc/self/mountinfo and sysfs.
//! Reads only. The parsers take text and a sysfs directory, so tests can
//! feed them synthetic ones.

use super::OnlineError;
use crate::store::mounted::{Mount, dev_major_minor, parse_mountinfo};
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A mounted ext2/3/4 file system to check online.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// A read-write mount point of it (any one: freezing works through any).
    pub mount_point: PathBuf,
    /// Its block device, `/dev/NAME`.
    pub device: PathBuf,
    pub fs_type: String,
    pub kind: Kind,
}

/// What the block device is, which decides the snapshot mechanism.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A loop device, or a partition of one.
    Loop(LoopPart),
    /// A device-mapper device LVM made (`dm/uuid` starts with `LVM-`).
    Lvm,
    /// Anything else, described for the refusal.
    Other(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopPart {
    /// The loop device itself (`loop3`), even when a partition is mounted.
    pub loop_name: String,
    /// Byte offset of the mounted device within the loop device (a
    /// partition's start; 0 for the whole device).
    pub start: u64,
    /// Size of the mounted device in bytes.
    pub size: u64,
}

impl Target {
    /// Resolves TARGET (a mount point, a path inside the file system, or
    /// its block device) on this machine.
    pub fn resolve(arg: &Path) -> Result<Target, OnlineError> {
        let mountinfo = fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| OnlineError::Failed(format!("cannot read /proc/self/mountinfo: {e}")))?;
        resolve_in(
            arg,
            &mountinfo,
            Path::new("/sys/dev/block"),
            Path::new("/dev"),
        )
    }
}

fn is_ext(fs_type: &str) -> bool {
    matches!(fs_type, "ext2" | "ext3" | "ext4")
}

/// `resolve` with its sources named: mountinfo text, the directory of
/// `MAJOR:MINOR` links (`/sys/dev/block`) and the device directory.
pub fn resolve_in(
    arg: &Path,
    mountinfo: &str,
    sys_dev_block: &Path,
    dev_dir: &Path,
) -> Result<Target, OnlineError> {
    let shown = arg.display();
    let meta =
        fs::metadata(arg).map_err(|e| OnlineError::Refused(format!("cannot find {shown}: {e}")))?;
    let is_block = meta.file_type().is_block_device();
    let (major, minor) = dev_major_minor(if is_block { meta.rdev() } else { meta.dev() });
    let mounts: Vec<Mount> = parse_mountinfo(mountinfo)
        .into_iter()
        .filter(|m| m.major == major && m.minor == minor)
        .collect();
    let Some(first) = mounts.first() else {
        return Err(OnlineError::Refused(if is_block {
            format!("{shown} is not mounted: check it offline with pfsck -f")
        } else {
            format!("cannot find the file system of {shown} in /proc/self/mountinfo")
        }));
    };
    let ext: Vec<&Mount> = mounts.iter().filter(|m| is_ext(&m.fs_type)).collect();
    if ext.is_empty() {
        return Err(OnlineError::Unsupported(format!(
            "{shown} is on {} ({}), not ext2/ext3/ext4",
            first.fs_type, first.source
        )));
    }
    // A read-only superblock makes every mount read-only; one read-write
    // mount means the file system can change under a check.
    let Some(rw) = ext.iter().find(|m| !m.read_only) else {
        return Err(OnlineError::Refused(format!(
            "{} is mounted read-only: nothing changes under a check, so no snapshot (and no freeze) is needed; check the device directly with pfsck -fn {}",
            ext[0].mount_point, ext[0].source
        )));
    };
    let node = sys_dev_block.join(format!("{major}:{minor}"));
    let sys = fs::canonicalize(&node).map_err(|e| {
        OnlineError::Failed(format!("cannot find {} in sysfs: {e}", node.display()))
    })?;
    let name = file_name(&sys);
    let device = device_node(dev_dir, &name, major, minor, &rw.source).ok_or_else(|| {
        OnlineError::Failed(format!(
            "cannot find the device node of {major}:{minor} ({name})"
        ))
    })?;
    Ok(Target {
        mount_point: PathBuf::from(&rw.mount_point),
        device,
        fs_type: rw.fs_type.clone(),
        kind: kind_of(&sys, &name),
    })
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `/dev/NAME` when it is the device major:minor, else the mount's source
/// when that is (a `/dev/root` style alias, udev naming elsewhere).
fn device_node(
    dev_dir: &Path,
    name: &str,
    major: u32,
    minor: u32,
    source: &str,
) -> Option<PathBuf> {
    let is_it = |p: &Path| {
        fs::metadata(p).is_ok_and(|m| {
            m.file_type().is_block_device() && dev_major_minor(m.rdev()) == (major, minor)
        })
    };
    [dev_dir.join(name), PathBuf::from(source)]
        .into_iter()
        .find(|p| is_it(p))
}

fn read_trimmed(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

fn sectors(p: &Path) -> Option<u64> {
    read_trimmed(p)?.parse::<u64>().ok()?.checked_mul(512)
}

/// The device's kind from its sysfs directory (`/sys/devices/.../NAME`).
fn kind_of(sys: &Path, name: &str) -> Kind {
    if let Some(uuid) = read_trimmed(&sys.join("dm/uuid")) {
        return if uuid.starts_with("LVM-") {
            Kind::Lvm
        } else {
            Kind::Other(format!(
                "a device-mapper device ({name}) that LVM did not make"
            ))
        };
    }
    let size = sectors(&sys.join("size"));
    if sys.join("loop").is_dir()
        && let Some(size) = size
    {
        return Kind::Loop(LoopPart {
            loop_name: name.to_string(),
            start: 0,
            size,
        });
    }
    if sys.join("partition").exists()
        && let Some(parent) = sys.parent()
        && parent.join("loop").is_dir()
        && let (Some(start), Some(size)) = (sectors(&sys.join("start")), size)
    {
        return Kind::Loop(LoopPart {
            loop_name: file_name(parent),
            start,
            size,
        });
    }
    Kind::Other(format!(
        "a block device ({name}) that is neither an LVM logical volume nor a loop device"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic sysfs and /dev; device nodes are the real /dev/loop0
    /// when it exists (block devices cannot be made without mknod).
    struct Fake {
        root: PathBuf,
    }

    impl Fake {
        fn new(tag: &str) -> Fake {
            let root =
                std::env::temp_dir().join(format!("pfsck-target-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&root);
            fs::create_dir_all(root.join("devices")).unwrap();
            fs::create_dir_all(root.join("dev-block")).unwrap();
            Fake { root }
        }
        fn device(&self, rel: &str, majmin: &str, files: &[(&str, &str)]) -> PathBuf {
            let d = self.root.join("devices").join(rel);
            fs::create_dir_all(&d).unwrap();
            for (f, v) in files {
                let p = d.join(f);
                fs::create_dir_all(p.parent().unwrap()).unwrap();
                fs::write(p, v).unwrap();
            }
            std::os::unix::fs::symlink(&d, self.root.join("dev-block").join(majmin)).unwrap();
            d
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.root);
        }
    }

    #[test]
    fn kinds_from_sysfs() {
        let f = Fake::new("kinds");
        let l = f.device(
            "loop3",
            "7:3",
            &[("size", "2048\n"), ("loop/backing_file", "/x\n")],
        );
        assert_eq!(
            kind_of(&l, "loop3"),
            Kind::Loop(LoopPart {
                loop_name: "loop3".into(),
                start: 0,
                size: 2048 * 512
            })
        );
        let p = f.device(
            "loop3/loop3p2",
            "259:1",
            &[("size", "100\n"), ("start", "2048\n"), ("partition", "2\n")],
        );
        assert_eq!(
            kind_of(&p, "loop3p2"),
            Kind::Loop(LoopPart {
                loop_name: "loop3".into(),
                start: 2048 * 512,
                size: 100 * 512
            })
        );
        let lv = f.device(
            "dm-1",
            "254:1",
            &[("dm/uuid", "LVM-abcdef\n"), ("size", "8\n")],
        );
        assert_eq!(kind_of(&lv, "dm-1"), Kind::Lvm);
        let crypt = f.device("dm-2", "254:2", &[("dm/uuid", "CRYPT-LUKS2-x\n")]);
        assert!(matches!(kind_of(&crypt, "dm-2"), Kind::Other(s) if s.contains("did not make")));
        let disk = f.device(
            "vda/vda1",
            "254:17",
            &[("size", "8\n"), ("partition", "1\n")],
        );
        assert!(matches!(kind_of(&disk, "vda1"), Kind::Other(_)));
    }

    #[test]
    fn refusals_name_the_reason() {
        let f = Fake::new("refuse");
        // This directory's own file system, as mountinfo would list it.
        let here = fs::metadata(&f.root).unwrap();
        let (ma, mi) = dev_major_minor(here.dev());
        let line = |ty: &str, opts: &str| {
            format!("30 1 {ma}:{mi} / /somewhere {opts} - {ty} /dev/sdz1 rw\n")
        };
        let run = |mi: &str| resolve_in(&f.root, mi, &f.root.join("dev-block"), &f.root);
        assert!(matches!(run(""), Err(OnlineError::Refused(s)) if s.contains("mountinfo")));
        assert!(
            matches!(run(&line("xfs", "rw")), Err(OnlineError::Unsupported(s)) if s.contains("not ext2/ext3/ext4"))
        );
        assert!(
            matches!(run(&line("ext4", "ro")), Err(OnlineError::Refused(s)) if s.contains("read-only") && s.contains("pfsck -fn /dev/sdz1"))
        );
        // Read-write but unknown to sysfs here.
        assert!(matches!(
            run(&line("ext4", "rw")),
            Err(OnlineError::Failed(_))
        ));
    }

    #[test]
    fn a_loop_device_resolves() {
        // Needs a real block device node: /dev/loop0 exists on most Linux
        // machines (its backing file does not matter to resolution).
        let Ok(meta) = fs::metadata("/dev/loop0") else {
            eprintln!("notice: no /dev/loop0; loop resolution test skipped");
            return;
        };
        let (ma, mi) = dev_major_minor(meta.rdev());
        let f = Fake::new("loop");
        f.device(
            "loop0",
            &format!("{ma}:{mi}"),
            &[("size", "64\n"), ("loop/offset", "0\n")],
        );
        let mi_text = format!(
            "40 1 {ma}:{mi} / /mnt/a ro - ext4 /dev/loop0 rw\n41 1 {ma}:{mi} / /mnt/b rw - ext4 /dev/loop0 rw\n"
        );
        let t = resolve_in(
            Path::new("/dev/loop0"),
            &mi_text,
            &f.root.join("dev-block"),
            Path::new("/dev"),
        )
        .unwrap();
        assert_eq!(
            t.mount_point,
            PathBuf::from("/mnt/b"),
            "the read-write mount"
        );
        assert_eq!(t.device, PathBuf::from("/dev/loop0"));
        assert_eq!(
            t.kind,
            Kind::Loop(LoopPart {
                loop_name: "loop0".into(),
                start: 0,
                size: 64 * 512
            })
        );
        let unmounted = resolve_in(Path::new("/dev/loop0"), "", &f.root, Path::new("/dev"));
        assert!(matches!(unmounted, Err(OnlineError::Refused(s)) if s.contains("not mounted")));
    }
}
