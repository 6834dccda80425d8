//! Refusing to write to a mounted file system.
//!
//! Writing under a mounted file system corrupts it, so the commit asks here
//! first. A block device is mounted when `/proc/self/mountinfo` lists its
//! major:minor. An image file is mounted through a loop device: every
//! `/sys/block/*/loop/backing_file` is compared with the image (by device
//! and inode number, so a different spelling of the path or a hard link
//! still matches), and the loop device and its partitions are then looked
//! up in mountinfo. A block device's exclusive open (`O_EXCL`) catches what
//! this misses (device-mapper holders, another pfsck). The parsers take text
//! and directories so tests can feed them synthetic ones.

use super::{Result, StoreError};
use crate::narrow::lo32;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// One line of mountinfo that matters here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub major: u32,
    pub minor: u32,
    pub mount_point: String,
    pub fs_type: String,
    pub source: String,
    pub read_only: bool,
}

/// Splits a `dev_t` as glibc encodes it.
pub fn dev_major_minor(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    // The high bits a u32 cannot hold are dropped, as glibc's unsigned int
    // major() and minor() drop them.
    (lo32(major), lo32(minor))
}

/// Undoes mountinfo's octal escapes (`\040` for a space, and so on).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = u32::from(b[i + 1] - b'0') * 64
                + u32::from(b[i + 2] - b'0') * 8
                + u32::from(b[i + 3] - b'0');
            // The kernel escapes bytes: \000 to \377.
            #[allow(clippy::cast_possible_truncation)]
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses mountinfo text; malformed lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Mount> {
    let fields: Vec<&str> = line.split(' ').collect();
    let (maj, min) = fields.get(2)?.split_once(':')?;
    let mount_point = unescape(fields.get(4)?);
    let mount_opts = fields.get(5)?;
    // Optional fields end at the lone "-".
    let sep = fields.iter().skip(6).position(|f| *f == "-")? + 6;
    let fs_type = fields.get(sep + 1)?.to_string();
    let source = unescape(fields.get(sep + 2)?);
    let super_opts = fields.get(sep + 3).copied().unwrap_or("");
    let ro = |opts: &str| opts.split(',').any(|o| o == "ro");
    Some(Mount {
        major: maj.parse().ok()?,
        minor: min.parse().ok()?,
        mount_point,
        fs_type,
        source,
        read_only: ro(mount_opts) || ro(super_opts),
    })
}

/// Mounts of the device major:minor.
pub fn mounts_of(mounts: &[Mount], major: u32, minor: u32) -> Vec<Mount> {
    mounts
        .iter()
        .filter(|m| m.major == major && m.minor == minor)
        .cloned()
        .collect()
}

/// A loop device (or one of its partitions) backed by an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopDev {
    pub name: String,
    pub major: u32,
    pub minor: u32,
}

fn read_majmin(dir: &Path) -> Option<(u32, u32)> {
    let s = fs::read_to_string(dir.join("dev")).ok()?;
    let (a, b) = s.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Loop devices under `sys_block` (normally `/sys/block`) whose backing file
/// is the file with device number `dev` and inode `ino`, each followed by
/// its partitions.
pub fn loops_backed_by(sys_block: &Path, dev: u64, ino: u64) -> Vec<LoopDev> {
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir(sys_block) else {
        return found;
    };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    dirs.sort();
    for dir in dirs {
        let Ok(backing) = fs::read_to_string(dir.join("loop/backing_file")) else {
            continue;
        };
        // A deleted backing file is shown with a suffix; its inode is gone
        // from the namespace, so it cannot be our image anyway.
        let Ok(meta) = fs::metadata(backing.trim_end_matches('\n')) else {
            continue;
        };
        if meta.dev() != dev || meta.ino() != ino {
            continue;
        }
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut parts = vec![dir.clone()];
        if let Ok(sub) = fs::read_dir(&dir) {
            let mut p: Vec<PathBuf> = sub
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name().is_some_and(|n| {
                        n.to_string_lossy().starts_with(&name) && p.join("partition").exists()
                    })
                })
                .collect();
            p.sort();
            parts.extend(p);
        }
        for p in parts {
            if let Some((major, minor)) = read_majmin(&p) {
                found.push(LoopDev {
                    name: p
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    major,
                    minor,
                });
            }
        }
    }
    found
}

/// Where `path` is mounted, given mountinfo text and the sysfs block
/// directory: (what is mounted, the mount) pairs.
pub fn find_mounts(path: &Path, mountinfo: &str, sys_block: &Path) -> Result<Vec<(String, Mount)>> {
    let meta = fs::metadata(path).map_err(|e| StoreError::Io {
        what: format!("cannot stat {}", path.display()),
        source: e,
    })?;
    let mounts = parse_mountinfo(mountinfo);
    let mut hits = Vec::new();
    if meta.file_type().is_block_device() {
        let (major, minor) = dev_major_minor(meta.rdev());
        for m in mounts_of(&mounts, major, minor) {
            hits.push((path.display().to_string(), m));
        }
    } else {
        for l in loops_backed_by(sys_block, meta.dev(), meta.ino()) {
            for m in mounts_of(&mounts, l.major, l.minor) {
                hits.push((format!("/dev/{} (backed by {})", l.name, path.display()), m));
            }
        }
    }
    Ok(hits)
}

/// How a file system is mounted, as far as a check or a repair cares
/// (e2fsck's rules, from its mount flags).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MountState {
    NotMounted,
    /// Mounted read-only on `/` and nowhere read-write: the root at boot,
    /// which e2fsck checks and repairs in place (then asks for a reboot).
    ReadOnlyRoot,
    /// Mounted read-only elsewhere; the text says where.
    ReadOnly(String),
    /// Mounted read-write somewhere; the text says where.
    ReadWrite(String),
}

/// Classifies the mounts `find_mounts` found.
pub fn classify(hits: &[(String, Mount)]) -> MountState {
    let describe = |(what, m): &(String, Mount)| {
        let how = if m.read_only {
            "read-only"
        } else {
            "read-write"
        };
        format!("{what} is mounted {how} on {}", m.mount_point)
    };
    if let Some(h) = hits.iter().find(|(_, m)| !m.read_only) {
        return MountState::ReadWrite(describe(h));
    }
    if hits.iter().any(|(_, m)| m.mount_point == "/") {
        return MountState::ReadOnlyRoot;
    }
    match hits.first() {
        Some(h) => MountState::ReadOnly(describe(h)),
        None => MountState::NotMounted,
    }
}

/// How `path` is mounted in this process's view (`NotMounted` when
/// mountinfo cannot be read: the commit's own check refuses then).
pub fn mount_state(path: &Path) -> MountState {
    let Ok(mountinfo) = fs::read_to_string("/proc/self/mountinfo") else {
        return MountState::NotMounted;
    };
    match find_mounts(path, &mountinfo, Path::new("/sys/block")) {
        Ok(hits) => classify(&hits),
        Err(_) => MountState::NotMounted,
    }
}

/// Fails with [`StoreError::Mounted`] when `path` (a block device or an
/// image file) is mounted anywhere this process can see, but for the root
/// file system mounted read-only (see [`MountState::ReadOnlyRoot`]) and,
/// with `read_only_ok`, any read-only mount (e2fsck -f repairs one after
/// its warning).
pub fn ensure_not_mounted(path: &Path, read_only_ok: bool) -> Result<()> {
    let mountinfo = match fs::read_to_string("/proc/self/mountinfo") {
        Ok(s) => s,
        Err(e) => {
            // Without mountinfo we cannot prove the device is free; writing
            // blind is the one thing a repair must not do.
            return Err(StoreError::Io {
                what:
                    "cannot read /proc/self/mountinfo to check that the file system is not mounted"
                        .to_string(),
                source: e,
            });
        }
    };
    let hits = find_mounts(path, &mountinfo, Path::new("/sys/block"))?;
    match classify(&hits) {
        // e2fsck repairs the root mounted read-only (the boot case), and
        // asks for a reboot so that the kernel drops what it cached.
        MountState::ReadOnlyRoot => return Ok(()),
        MountState::ReadOnly(_) if read_only_ok => return Ok(()),
        _ => {}
    }
    match hits.first() {
        None => Ok(()),
        Some((what, m)) => Err(StoreError::Mounted(format!(
            "{what} is mounted on {} ({}, {}); refusing to write to a mounted file system — unmount it first",
            m.mount_point,
            m.fs_type,
            if m.read_only {
                "read-only"
            } else {
                "read-write"
            }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
42 27 7:0 / /tmp/my\\040dir rw,relatime shared:5 master:1 - ext4 /dev/loop0 rw
43 27 7:1 / /mnt/ro ro,relatime - ext2 /dev/loop1 rw
garbage line
44 27 7:2 /sub /mnt/bind rw - ext4 /dev/loop2 ro
";

    #[test]
    fn parses_mountinfo() {
        let m = parse_mountinfo(SAMPLE);
        assert_eq!(m.len(), 5);
        let l0 = mounts_of(&m, 7, 0);
        assert_eq!(l0.len(), 1);
        assert_eq!(l0[0].mount_point, "/tmp/my dir");
        assert_eq!(l0[0].fs_type, "ext4");
        assert_eq!(l0[0].source, "/dev/loop0");
        assert!(!l0[0].read_only);
        assert!(mounts_of(&m, 7, 1)[0].read_only);
        assert!(mounts_of(&m, 7, 2)[0].read_only, "read-only superblock");
        assert!(mounts_of(&m, 8, 0).is_empty());
        assert_eq!(mounts_of(&m, 254, 0)[0].mount_point, "/");
    }

    #[test]
    fn malformed_lines_do_not_panic() {
        for l in [
            "",
            "1",
            "1 2 3",
            "1 2 x:y / / rw - ",
            "1 2 7:0 / / rw",
            "1 2 7:0 / \\9 rw - a b",
            "a b 1:2 c \\0 d - e \\",
        ] {
            let _ = parse_mountinfo(l);
        }
        assert_eq!(unescape("a\\040b\\"), "a b\\");
    }

    #[test]
    fn dev_t_split() {
        assert_eq!(dev_major_minor(0x0700), (7, 0));
        assert_eq!(dev_major_minor(0xfe00), (254, 0));
        assert_eq!(
            dev_major_minor((259u64 << 8) | 3 | (1u64 << 20)),
            (259, 3 | (1 << 8))
        );
    }

    #[test]
    fn image_behind_a_synthetic_loop_device_is_found() {
        let root = std::env::temp_dir().join(format!("pfsck-mnt-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let img = root.join("disk.img");
        let sys = root.join("sys");
        fs::create_dir_all(sys.join("loop3/loop")).unwrap();
        fs::create_dir_all(sys.join("loop3/loop3p1")).unwrap();
        fs::create_dir_all(sys.join("loop4/loop")).unwrap();
        fs::create_dir_all(sys.join("vda")).unwrap();
        fs::write(&img, [0u8; 4096]).unwrap();
        fs::write(
            sys.join("loop3/loop/backing_file"),
            format!("{}\n", img.display()),
        )
        .unwrap();
        fs::write(sys.join("loop3/dev"), "7:3\n").unwrap();
        fs::write(sys.join("loop3/loop3p1/dev"), "259:0\n").unwrap();
        fs::write(sys.join("loop3/loop3p1/partition"), "1\n").unwrap();
        fs::write(sys.join("loop4/loop/backing_file"), "/elsewhere\n").unwrap();
        fs::write(sys.join("loop4/dev"), "7:4\n").unwrap();

        let none = "1 0 7:4 / /mnt rw - ext4 /dev/loop4 rw\n";
        assert!(find_mounts(&img, none, &sys).unwrap().is_empty());
        let whole = "1 0 7:3 / /mnt/a rw - ext4 /dev/loop3 rw\n";
        let hits = find_mounts(&img, whole, &sys).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].1.mount_point, "/mnt/a");
        assert!(hits[0].0.contains("loop3"));
        let part = "1 0 259:0 / /mnt/p rw - ext4 /dev/loop3p1 rw\n";
        assert_eq!(
            find_mounts(&img, part, &sys).unwrap()[0].1.mount_point,
            "/mnt/p"
        );
        // A hard link to the image is the same file.
        let link = root.join("link.img");
        fs::hard_link(&img, &link).unwrap();
        assert_eq!(find_mounts(&link, whole, &sys).unwrap().len(), 1);
        fs::remove_dir_all(&root).unwrap();
    }
}
