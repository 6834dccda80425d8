//! Differential tests on corrupted images: each case copies a clean base
//! image (ext2, ext3, ext4 with and without metadata_csum, built once per
//! run with mke2fs), damages it with `debugfs -w` or raw byte edits, and
//! compares `pfsck -fn --json` with `e2fsck -fn` on the same image:
//!
//! (a) pfsck exits non-zero exactly when e2fsck does;
//! (b) pfsck leaves the image byte for byte unchanged;
//! (c) when both report errors, pfsck reports a problem in the pass of
//!     e2fsck's first problem (pass 0 = before `Pass 1:`, 1B-1D = 1), and
//!     names the inode that problem names, if any (in its `ino` field or
//!     its message). (c) is skipped when both exit with the operational
//!     bit (8) set and pfsck lists no problem: neither could check.
//!
//! Each case records the pass of e2fsck's first problem, or `None` for the
//! few damages e2fsck -fn accepts (exit 0; pfsck must accept them too). The
//! test `case_table_matches_e2fsck` checks the table against e2fsck alone,
//! so a broken fixture shows up even while pfsck is unfinished.
//!
//! `repair_is_honest_and_undoable` then repairs every case with `pfsck
//! -fy` next to `e2fsck -fy` on a copy (see its comment): what one e2fsck
//! run repairs, one pfsck run must repair, but the cases listed by name in
//! `NOT_REPAIRED_YET`.
//!
//! `PFSCK_CASE=name[,name...]` runs only the named cases;
//! `PFSCK_KEEP_TMP=1` keeps the damaged images for inspection.

use crate::common::*;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

const MIB: u64 = 1 << 20;
const PFSCK_TIMEOUT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------
// Base images
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Base {
    /// ext2, 1 KiB blocks, 2 groups.
    Ext2,
    /// ext3 (journal), 4 KiB blocks, 4 groups of 1024 blocks.
    Ext3,
    /// ext4 defaults (metadata_csum, 64bit, flex_bg), 4 KiB blocks,
    /// 4 groups of 2048 blocks.
    Ext4,
    /// ext4 without metadata_csum, 1 KiB blocks, 2 groups.
    Ext4NoCsum,
}

impl Base {
    const ALL: [Base; 4] = [Base::Ext2, Base::Ext3, Base::Ext4, Base::Ext4NoCsum];

    fn key(self) -> &'static str {
        match self {
            Base::Ext2 => "corrupt-base-ext2",
            Base::Ext3 => "corrupt-base-ext3",
            Base::Ext4 => "corrupt-base-ext4",
            Base::Ext4NoCsum => "corrupt-base-ext4-nocsum",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Base::Ext2 => "ext2/1k",
            Base::Ext3 => "ext3/4k",
            Base::Ext4 => "ext4/4k+csum",
            Base::Ext4NoCsum => "ext4/1k-nocsum",
        }
    }

    fn mkfs(self) -> (u64, MkfsOpts) {
        match self {
            Base::Ext2 => (16 * MIB, MkfsOpts::ext2().block_size(1024)),
            Base::Ext3 => (
                16 * MIB,
                MkfsOpts::ext3().block_size(4096).blocks_per_group(1024),
            ),
            Base::Ext4 => (
                32 * MIB,
                MkfsOpts::ext4().block_size(4096).blocks_per_group(2048),
            ),
            Base::Ext4NoCsum => (
                16 * MIB,
                MkfsOpts::ext4().block_size(1024).features("^metadata_csum"),
            ),
        }
    }

    /// The clean base image (cached; never modify it).
    fn image(self) -> PathBuf {
        cached_image(self.key(), |img| {
            let (size, opts) = self.mkfs();
            mkfs(img, size, &opts, Some(&corruption_tree_dir()));
            // Index the large directories (htree) so htree damage can be
            // tested too.
            let d = e2fsck(img, &["-fyD"]);
            assert!(
                matches!(d.code(), Some(0..=1)),
                "e2fsck -fyD on base {}: {}\n{}",
                self.label(),
                d.describe(),
                d.dump(4000)
            );
            let check = e2fsck_fn_run(img);
            assert_eq!(
                check.code(),
                Some(0),
                "base image {} is not clean:\n{}",
                self.label(),
                check.dump(4000)
            );
            let dump = debugfs_r(img, "htree_dump /bigdir");
            assert!(
                dump.contains("Indirect levels"),
                "/bigdir of base {} is not indexed:\n{}",
                self.label(),
                truncate(&dump, 1000)
            );
        })
    }

    /// dumpe2fs of the base image (cached).
    fn info(self) -> &'static FsInfo {
        static INFOS: OnceLock<HashMap<Base, OnceLock<FsInfo>>> = OnceLock::new();
        INFOS.get_or_init(|| Base::ALL.iter().map(|&b| (b, OnceLock::new())).collect())[&self]
            .get_or_init(|| dumpe2fs(&self.image()))
    }
}

/// The standard tree plus a directory large enough to be indexed at 4 KiB.
fn corruption_tree_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = cache_dir().join("corruption-tree");
        let _ = std::fs::remove_dir_all(&dir);
        let mut spec = standard_tree();
        for i in 0..500 {
            spec.push(Node::file(&format!("bigdir/entry-{i:04}"), 0));
        }
        build_tree(&dir, &spec);
        dir
    })
    .clone()
}

// ---------------------------------------------------------------------------
// Editing helpers
// ---------------------------------------------------------------------------

/// The image being corrupted, with helpers for the case table.
struct Ctx<'a> {
    img: &'a Path,
    base: Base,
}

impl Ctx<'_> {
    fn fs(&self) -> &'static FsInfo {
        self.base.info()
    }

    fn bs(&self) -> u64 {
        self.fs().block_size
    }

    fn dbg(&self, cmds: &[String]) {
        debugfs_w(self.img, cmds);
    }

    fn run(&self, cmd: &str) {
        debugfs_w(self.img, &[cmd]);
    }

    fn sif(&self, target: &str, field: &str, value: impl std::fmt::Display) {
        self.run(&format!("sif {target} {field} {value}"));
    }

    fn ssv(&self, field: &str, value: impl std::fmt::Display) {
        self.run(&format!("ssv {field} {value}"));
    }

    fn set_bg(&self, group: u64, field: &str, value: impl std::fmt::Display) {
        self.run(&format!("set_bg {group} {field} {value}"));
    }

    fn ino(&self, path: &str) -> u64 {
        inode_of(self.img, path)
    }

    fn blocks(&self, path: &str) -> Vec<u64> {
        let b = blocks_of(self.img, path);
        assert!(!b.is_empty(), "{path} has no blocks");
        b
    }

    /// Absolute byte offset of inode `ino`'s record.
    fn inode_off(&self, ino: u64) -> u64 {
        let (block, off) = imap(self.img, ino);
        block * self.bs() + off
    }

    /// Absolute byte offset of `dir`'s logical block `idx`.
    fn dir_block_off(&self, dir: &str, idx: usize) -> u64 {
        self.blocks(dir)[idx] * self.bs()
    }

    /// Absolute byte offset of the directory entry `name` in `dir`.
    fn dirent(&self, dir: &str, name: &str) -> u64 {
        let bs = self.bs() as usize;
        for block in self.blocks(dir) {
            let data = read_at(self.img, block * bs as u64, bs);
            let mut pos = 0usize;
            while pos + 8 <= bs {
                let rec_len = u16::from_le_bytes([data[pos + 4], data[pos + 5]]) as usize;
                let name_len = data[pos + 6] as usize;
                let ino = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap());
                if ino != 0
                    && pos + 8 + name_len <= bs
                    && &data[pos + 8..pos + 8 + name_len] == name.as_bytes()
                {
                    return block * bs as u64 + pos as u64;
                }
                if rec_len < 8 {
                    break;
                }
                pos += rec_len;
            }
        }
        panic!("no entry {name} in {dir}");
    }

    fn patch(&self, offset: u64, bytes: &[u8]) {
        write_at(self.img, offset, bytes);
    }

    fn read(&self, offset: u64, len: usize) -> Vec<u8> {
        read_at(self.img, offset, len)
    }

    /// A free block (debugfs `ffb`) at or after `goal`.
    fn free_block(&self, goal: u64) -> u64 {
        debugfs_number(self.img, &format!("ffb 1 {goal}"))
    }

    /// The first free inode (debugfs `ffi`).
    fn free_inode(&self) -> u64 {
        debugfs_number(self.img, "ffi")
    }

    /// The journal's first block (its superblock).
    fn journal_block0(&self) -> u64 {
        blocks_of(self.img, "<8>")[0]
    }
}

// ---------------------------------------------------------------------------
// The case table
// ---------------------------------------------------------------------------

struct Case {
    name: &'static str,
    base: Base,
    /// Pass of e2fsck's first problem; `None` when e2fsck -fn finds the
    /// image clean (kept on purpose: pfsck must say clean too).
    pass: Option<u32>,
    apply: fn(&Ctx),
}

fn case(name: &'static str, base: Base, pass: Option<u32>, apply: fn(&Ctx)) -> Case {
    Case {
        name,
        base,
        pass,
        apply,
    }
}

// Extent header in i_block: block[0] = magic | entries << 16,
// block[1] = max | depth << 16, block[2] = generation; first entry:
// block[3] = logical block, block[4] = len | start_hi << 16,
// block[5] = start_lo.
const EXT_MAGIC_AND_ONE: u32 = 0xF30A | (1 << 16);

fn cases() -> Vec<Case> {
    use Base::*;
    vec![
        // ----- ext2, 1 KiB blocks, block maps -----
        case("ext2-illegal-direct-block", Ext2, Some(1), |c| {
            c.sif("/f12k", "block[0]", 0xFFFF_FF00u32)
        }),
        case("ext2-ind-block-out-of-range", Ext2, Some(1), |c| {
            c.sif("/f70k", "block[IND]", 0x7FFF_FFF0u32)
        }),
        case("ext2-dup-block-two-files", Ext2, Some(1), |c| {
            let b = c.blocks("/f4097")[0];
            c.sif("/f4096", "block[0]", b)
        }),
        case("ext2-block-in-inode-table", Ext2, Some(1), |c| {
            let itable = c.fs().groups[0].inode_table.0;
            c.sif("/small", "block[0]", itable)
        }),
        case("ext2-dind-equals-ind", Ext2, Some(1), |c| {
            let ind = debugfs_r(c.img, "stat /f300k");
            // Reuse the single-indirect block as the double-indirect one.
            let ind_block = ind
                .lines()
                .find_map(|l| l.split("(IND):").nth(1))
                .and_then(|r| r.split([',', ' ', '\n']).next())
                .and_then(|n| n.trim().parse::<u64>().ok())
                .expect("IND block of /f300k");
            c.sif("/f300k", "block[DIND]", ind_block)
        }),
        case("ext2-dtime-on-live-inode", Ext2, Some(1), |c| {
            c.sif("/dir1/a.txt", "dtime", 12345)
        }),
        case("ext2-size-too-small", Ext2, Some(1), |c| {
            c.sif("/f70k", "size", 10)
        }),
        case("ext2-i-blocks-wrong", Ext2, Some(1), |c| {
            c.sif("/f12k", "blocks", 2)
        }),
        case("ext2-links-count-too-high", Ext2, Some(4), |c| {
            c.sif("/tiny", "links_count", 7)
        }),
        case("ext2-links-count-zero", Ext2, Some(1), |c| {
            c.sif("/tiny", "links_count", 0)
        }),
        case("ext2-clri-file", Ext2, Some(2), |c| {
            c.run("clri /dir1/b.bin")
        }),
        case("ext2-clri-dir", Ext2, Some(2), |c| c.run("clri /dir1/sub")),
        case("ext2-unlink-file", Ext2, Some(4), |c| {
            c.run("unlink /f4095")
        }),
        case("ext2-unlink-dir", Ext2, Some(3), |c| {
            c.run("unlink /dir1/sub/deeper")
        }),
        case("ext2-extra-link-entry", Ext2, Some(4), |c| {
            c.run("link /tiny /tiny2")
        }),
        case("ext2-hard-link-to-dir", Ext2, Some(2), |c| {
            c.run("link /dir1/sub /dirlink")
        }),
        case("ext2-freeb-used-block", Ext2, Some(5), |c| {
            let b = c.blocks("/f4097")[1];
            c.run(&format!("freeb {b}"))
        }),
        case("ext2-setb-free-block", Ext2, Some(5), |c| {
            let b = c.free_block(c.fs().blocks_count / 2);
            c.run(&format!("setb {b}"))
        }),
        case("ext2-freei-used-inode", Ext2, Some(5), |c| {
            c.run("freei /tiny")
        }),
        case("ext2-seti-free-inode", Ext2, Some(5), |c| {
            let i = c.free_inode();
            c.run(&format!("seti <{i}>"))
        }),
        case("ext2-bg-free-blocks-count", Ext2, Some(5), |c| {
            c.set_bg(1, "free_blocks_count", 7)
        }),
        case("ext2-bg-used-dirs-count", Ext2, Some(5), |c| {
            c.set_bg(0, "used_dirs_count", 0)
        }),
        case("ext2-bg-block-bitmap-in-group0", Ext2, Some(0), |c| {
            let b = c.fs().groups[0].inode_table.0 + 2;
            c.set_bg(1, "block_bitmap", b)
        }),
        case("ext2-root-not-dir", Ext2, Some(1), |c| {
            c.sif("<2>", "mode", "0100644")
        }),
        case("ext2-resize-inode-cleared", Ext2, Some(0), |c| {
            c.run("clri <7>")
        }),
        case("ext2-extents-flag-without-feature", Ext2, Some(1), |c| {
            c.sif("/small", "flags", 0x80000)
        }),
        case("ext2-file-acl-out-of-range", Ext2, Some(2), |c| {
            c.sif("/small", "file_acl", 0x7F_FFFF)
        }),
        case("ext2-index-flag-on-small-dir", Ext2, Some(1), |c| {
            c.sif("/dir1/sub", "flags", 0x1000)
        }),
        case("ext2-slow-symlink-size-zero", Ext2, Some(2), |c| {
            c.sif("/slowlink", "size", 0)
        }),
        case("ext2-fast-symlink-size-too-big", Ext2, Some(2), |c| {
            c.sif("/fastlink", "size", 200)
        }),
        // e2fsck only looks at the spare block slots of a device, FIFO or
        // socket when it is immutable (the kernel does not clear them). A
        // FIFO, because device nodes need root to create.
        case("ext2-immutable-fifo-with-block", Ext2, Some(2), |c| {
            c.dbg(&[
                "sif /fifo flags 0x10".into(),
                "sif /fifo block[6] 1234".into(),
            ])
        }),
        case("ext2-raw-dir-dot-reclen-zero", Ext2, Some(2), |c| {
            let off = c.dir_block_off("/dir1", 0);
            c.patch(off + 4, &[0, 0])
        }),
        case("ext2-raw-dirent-inode-too-big", Ext2, Some(2), |c| {
            let off = c.dirent("/dir1", "a.txt");
            c.patch(off, &0x00FF_FFF0u32.to_le_bytes())
        }),
        case("ext2-raw-dirent-slash-in-name", Ext2, Some(2), |c| {
            let off = c.dirent("/dir1", "b.bin");
            c.patch(off + 8, b"/")
        }),
        case("ext2-raw-dotdot-points-to-root", Ext2, Some(3), |c| {
            let off = c.dirent("/dir1/sub", "..");
            c.patch(off, &2u32.to_le_bytes())
        }),
        case("ext2-raw-inode-bad-mode", Ext2, Some(1), |c| {
            let off = c.inode_off(c.ino("/small"));
            c.patch(off, &0xF1A4u16.to_le_bytes())
        }),
        case("ext2-sb-free-blocks-count", Ext2, None, |c| {
            c.ssv("free_blocks_count", 17)
        }),
        // A journal inode named without has_journal: e2fsck clears it and
        // makes a journal (the file system becomes ext3).
        case("ext2-sb-journal-inum", Ext2, Some(0), |c| {
            c.ssv("journal_inum", 42)
        }),
        // libext2fs refuses a cluster size without bigalloc: e2fsck takes
        // the backup at 8193.
        case("ext2-sb-log-cluster-size", Ext2, Some(0), |c| {
            c.ssv("log_cluster_size", 1)
        }),
        // Values only e2fsck's superblock check refuses: it stops (exit 8)
        // without looking for a backup.
        case("ext2-sb-r-blocks-count", Ext2, Some(0), |c| {
            let n = c.fs().blocks_count / 2 + 1;
            c.ssv("r_blocks_count", n)
        }),
        case("ext2-sb-desc-size", Ext2, Some(0), |c| {
            c.ssv("desc_size", 3)
        }),
        // ----- ext3, 4 KiB blocks, journal -----
        case("ext3-journal-inode-cleared", Ext3, Some(1), |c| {
            c.run("clri <8>")
        }),
        case("ext3-journal-inum-zero", Ext3, Some(0), |c| {
            c.ssv("journal_inum", 0)
        }),
        case("ext3-raw-journal-sb-magic", Ext3, Some(0), |c| {
            let off = c.journal_block0() * c.bs();
            c.patch(off, &[0xde, 0xad, 0xbe, 0xef])
        }),
        case("ext3-journal-size-shrunk", Ext3, Some(1), |c| {
            c.sif("<8>", "size", 4096)
        }),
        case("ext3-bg-inode-table-overlaps-sb", Ext3, Some(0), |c| {
            c.set_bg(2, "inode_table", 1)
        }),
        case("ext3-bg-free-inodes-count", Ext3, Some(5), |c| {
            c.set_bg(2, "free_inodes_count", 0)
        }),
        case("ext3-orphan-list-head-live-inode", Ext3, None, |c| {
            let i = c.ino("/tiny");
            c.ssv("last_orphan", i)
        }),
        case("ext3-dup-block-two-dirs", Ext3, Some(1), |c| {
            let b = c.blocks("/dir1/sub")[0];
            c.sif("/dir1", "block[0]", b)
        }),
        case("ext3-raw-name-len-past-rec-len", Ext3, Some(2), |c| {
            let off = c.dirent("/dir1", "a.txt");
            c.patch(off + 6, &[250])
        }),
        case("ext3-unknown-incompat-feature", Ext3, Some(0), |c| {
            c.ssv("feature_incompat", 0x2 | 0x4000_0000)
        }),
        case("ext3-dir-links-count", Ext3, Some(4), |c| {
            c.sif("/dir1", "links_count", 9)
        }),
        case("ext3-raw-dirent-file-type", Ext3, Some(2), |c| {
            let off = c.dirent("/", "small");
            c.patch(off + 7, &[2])
        }),
        case("ext3-sb-state-error", Ext3, None, |c| c.ssv("state", 2)),
        // ----- ext4, metadata_csum -----
        case("ext4-extent-header-magic", Ext4, Some(1), |c| {
            c.sif("/f70k", "block[0]", 0)
        }),
        case("ext4-extent-start-past-end", Ext4, Some(1), |c| {
            c.sif("/f70k", "block[5]", 0xFFFF_FFF0u32)
        }),
        case("ext4-extent-len-zero", Ext4, Some(1), |c| {
            c.sif("/f12k", "block[4]", 0)
        }),
        case("ext4-extent-depth-too-big", Ext4, Some(1), |c| {
            c.sif("/f12k", "block[1]", 4 | (6 << 16))
        }),
        case("ext4-extent-dup-block", Ext4, Some(1), |c| {
            let b = c.blocks("/f4097")[0];
            c.dbg(&[
                format!("sif /f4096 block[0] {EXT_MAGIC_AND_ONE}"),
                format!("sif /f4096 block[5] {b}"),
            ])
        }),
        case("ext4-extents-flag-cleared", Ext4, Some(1), |c| {
            c.sif("/f70k", "flags", 0)
        }),
        case("ext4-extra-isize-invalid", Ext4, Some(1), |c| {
            c.sif("/small", "extra_isize", 3)
        }),
        case("ext4-inline-flag-without-feature", Ext4, Some(1), |c| {
            c.sif("/small", "flags", 0x1008_0000)
        }),
        case("ext4-bg-checksum", Ext4, Some(0), |c| {
            c.set_bg(1, "checksum", 0x1234)
        }),
        case("ext4-bg-itable-unused-too-big", Ext4, Some(0), |c| {
            let ipg = c.fs().inodes_per_group;
            c.dbg(&[
                format!("set_bg 0 itable_unused {ipg}"),
                "set_bg 0 checksum calc".into(),
            ])
        }),
        case("ext4-bg-inode-uninit-on-used-group", Ext4, Some(3), |c| {
            c.dbg(&["set_bg 0 flags 1".into(), "set_bg 0 checksum calc".into()])
        }),
        case("ext4-raw-inode-checksum", Ext4, Some(1), |c| {
            // i_generation (offset 0x64) is covered only by the checksum.
            let off = c.inode_off(c.ino("/small")) + 0x64;
            let v = c.read(off, 1)[0] ^ 0x5a;
            c.patch(off, &[v])
        }),
        case("ext4-raw-dir-block-checksum", Ext4, Some(2), |c| {
            // Change one name character: the block stays well-formed but
            // its checksum no longer matches.
            let off = c.dirent("/dir1", "b.bin");
            c.patch(off + 8, b"B")
        }),
        case("ext4-raw-htree-hash-version", Ext4, Some(1), |c| {
            let off = c.dir_block_off("/bigdir", 0);
            c.patch(off + 28, &[9])
        }),
        case("ext4-raw-htree-depth", Ext4, Some(1), |c| {
            let off = c.dir_block_off("/bigdir", 0);
            c.patch(off + 30, &[7])
        }),
        case("ext4-raw-sb-checksum", Ext4, Some(0), |c| {
            // s_volume_name: covered only by the superblock checksum.
            c.patch(1024 + 0x78, b"X")
        }),
        case("ext4-raw-sb-magic", Ext4, Some(0), |c| {
            c.patch(1024 + 0x38, &0x1234u16.to_le_bytes())
        }),
        case("ext4-sb-first-ino", Ext4, Some(0), |c| {
            c.ssv("first_ino", 5)
        }),
        // A journal UUID names an external journal, which neither finds.
        case("ext4-sb-journal-uuid", Ext4, Some(0), |c| {
            c.ssv("journal_uuid", "5a1e7a1e-0000-4000-8000-00000000beef")
        }),
        case("ext4-sb-inodes-count", Ext4, Some(0), |c| {
            let n = c.fs().inodes_count + 8;
            c.ssv("inodes_count", n)
        }),
        case("ext4-fast-symlink-extents-flag", Ext4, Some(1), |c| {
            c.sif("/fastlink", "flags", 0x80000)
        }),
        case("ext4-socket-with-size", Ext4, Some(1), |c| {
            c.sif("/socket", "size", 100)
        }),
        case("ext4-freei-used-inode", Ext4, Some(5), |c| {
            c.run("freei /dir1/a.txt")
        }),
        case("ext4-clri-dir-with-children", Ext4, Some(2), |c| {
            c.run("clri /dir1")
        }),
        case("ext4-unlink-file", Ext4, Some(4), |c| c.run("unlink /f12k")),
        case("ext4-freeb-extent-tree-data", Ext4, Some(5), |c| {
            let b = c.blocks("/f300k")[3];
            c.run(&format!("freeb {b}"))
        }),
        // ----- ext4 without metadata_csum, 1 KiB blocks -----
        case(
            "ext4nc-bg-inode-bitmap-in-itable",
            Ext4NoCsum,
            Some(0),
            |c| {
                let b = c.fs().groups[0].inode_table.0 + 1;
                c.set_bg(1, "inode_bitmap", b)
            },
        ),
        case(
            "ext4nc-raw-htree-count-over-limit",
            Ext4NoCsum,
            Some(2),
            |c| {
                // dx_root: '.' (12 bytes), '..' header, dx_root_info (8 bytes)
                // at 24, then limit (u16) at 32 and count (u16) at 34.
                let off = c.dir_block_off("/bigdir", 0);
                c.patch(off + 34, &500u16.to_le_bytes())
            },
        ),
        case(
            "ext4nc-deleted-inode-still-linked",
            Ext4NoCsum,
            Some(2),
            |c| {
                c.dbg(&[
                    "sif /f4097 links_count 0".into(),
                    "sif /f4097 dtime 1600000000".into(),
                ])
            },
        ),
        // A small dtime on an inode with no links reads as an orphan-list
        // link.
        case(
            "ext4nc-links-zero-orphan-like-dtime",
            Ext4NoCsum,
            Some(1),
            |c| {
                c.dbg(&[
                    "sif /f4097 links_count 0".into(),
                    "sif /f4097 dtime 1000".into(),
                ])
            },
        ),
        case("ext4nc-raw-dot-renamed", Ext4NoCsum, Some(2), |c| {
            let off = c.dir_block_off("/dir1/sub", 0);
            c.patch(off + 8, b"x")
        }),
        case("ext4nc-lost-found-removed", Ext4NoCsum, None, |c| {
            c.run("rmdir /lost+found")
        }),
        case("ext4nc-root-cleared", Ext4NoCsum, Some(1), |c| {
            c.run("clri <2>")
        }),
        case("ext4nc-extent-into-bitmap", Ext4NoCsum, Some(1), |c| {
            let b = c.fs().groups[0].block_bitmap;
            c.sif("/f4097", "block[5]", b)
        }),
        case("ext4nc-sb-free-inodes-count", Ext4NoCsum, None, |c| {
            c.ssv("free_inodes_count", 3)
        }),
        case("ext4nc-bg-free-blocks-count", Ext4NoCsum, Some(5), |c| {
            c.set_bg(0, "free_blocks_count", 3)
        }),
        case("ext4nc-dir-size-zero", Ext4NoCsum, Some(1), |c| {
            c.sif("/dir1", "size", 0)
        }),
        case(
            "ext4nc-regular-file-mode-to-dir",
            Ext4NoCsum,
            Some(2),
            |c| c.sif("/f4096", "mode", "040755"),
        ),
    ]
}

// ---------------------------------------------------------------------------
// Preparing cases
// ---------------------------------------------------------------------------

struct Prepared {
    img: PathBuf,
    e2: RunResult,
    first: Option<E2Problem>,
}

/// All cases, or those named in `PFSCK_CASE` (comma-separated).
fn selected_cases() -> Vec<Case> {
    let all = cases();
    let mut seen = std::collections::HashSet::new();
    for c in &all {
        assert!(seen.insert(c.name), "duplicate case name {}", c.name);
    }
    let Ok(filter) = std::env::var("PFSCK_CASE") else {
        return all;
    };
    let wanted: Vec<&str> = filter.split(',').map(str::trim).collect();
    let names: Vec<&str> = all.iter().map(|c| c.name).collect();
    let unknown: Vec<&&str> = wanted.iter().filter(|w| !names.contains(w)).collect();
    assert!(
        unknown.is_empty(),
        "PFSCK_CASE: unknown case name(s) {unknown:?}; known cases:\n  {}",
        names.join("\n  ")
    );
    all.into_iter()
        .filter(|c| wanted.contains(&c.name))
        .collect()
}

/// Builds the corrupted image of `case` in `dir` and runs e2fsck -fn on it.
/// A panic while building (a debugfs complaint, a missing file) becomes an
/// error for this case only.
fn prepare(case: &Case, dir: &TempDir) -> Result<Prepared, String> {
    let build = catch_unwind(AssertUnwindSafe(|| {
        let img = dir.join(case.name);
        copy_image(&case.base.image(), &img);
        (case.apply)(&Ctx {
            img: &img,
            base: case.base,
        });
        let e2 = e2fsck_fn_run(&img);
        let first = e2fsck_first_problem(&e2.stdout);
        Prepared { img, e2, first }
    }));
    build.map_err(|e| {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into());
        format!(
            "{} [{}]: building the case failed: {msg}",
            case.name,
            case.base.label()
        )
    })
}

fn describe_first(p: &Prepared) -> String {
    match &p.first {
        Some(f) => format!("pass {} `{}`", f.pass, f.line),
        None => "no problem line".into(),
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

/// Checks the fixtures alone: every case makes e2fsck -fn report a problem
/// in the recorded pass (or find the image clean when recorded so).
#[test]
fn case_table_matches_e2fsck() {
    let selected = selected_cases();
    let tmp = TempDir::new("corruptions-table");
    let results = parallel_map(&selected, test_threads(), |_, case| {
        let p = match prepare(case, &tmp) {
            Ok(p) => p,
            Err(e) => return ("(not built)".to_string(), Some(e)),
        };
        let code = p.e2.code();
        let why = match case.pass {
            None if code == Some(0) => None,
            None => Some(format!(
                "recorded as clean, but e2fsck -fn says {}: {}",
                p.e2.describe(),
                describe_first(&p)
            )),
            Some(_) if code == Some(0) || code.is_none() => Some(format!(
                "e2fsck -fn says {} (expected errors)",
                p.e2.describe()
            )),
            Some(pass) => match &p.first {
                Some(f) if f.pass == pass => None,
                _ => Some(format!(
                    "recorded pass {pass}, e2fsck's first problem: {}",
                    describe_first(&p)
                )),
            },
        };
        let line = format!("e2fsck {:>7}  {}", p.e2.describe(), describe_first(&p));
        let failure = why.map(|why| {
            format!(
                "{} [{}]: {why}\n{}",
                case.name,
                case.base.label(),
                e2fsck_dump(&p)
            )
        });
        (line, failure)
    });
    let mut table = String::new();
    for (case, (line, failure)) in selected.iter().zip(&results) {
        let _ = writeln!(
            table,
            "{:<4} {:<40} {:<15} {}",
            if failure.is_none() { "ok" } else { "FAIL" },
            case.name,
            case.base.label(),
            truncate(line, 110)
        );
    }
    let errors = selected.iter().filter(|c| c.pass.is_some()).count();
    println!(
        "{} cases, {} recorded as errors for e2fsck\n{table}",
        selected.len(),
        errors
    );
    let failures: Vec<&str> = results.iter().filter_map(|(_, f)| f.as_deref()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} fixtures do not match the case table:\n\n{}",
        failures.len(),
        selected.len(),
        failures.join("\n\n")
    );
}

fn e2fsck_dump(p: &Prepared) -> String {
    format!(
        "image: {} (kept with PFSCK_KEEP_TMP=1)\n===== e2fsck -fn =====\n{}",
        p.img.display(),
        p.e2.dump(3000)
    )
}

/// The differential test proper: pfsck -fn against e2fsck -fn on every
/// corrupted image.
#[test]
fn pfsck_agrees_with_e2fsck() {
    let selected = selected_cases();
    let tmp = TempDir::new("corruptions-pfsck");
    let results = parallel_map(&selected, test_threads(), |_, case| {
        let p = match prepare(case, &tmp) {
            Ok(p) => p,
            Err(e) => return (String::from("(not built)"), Some(e)),
        };
        let before = hash_file(&p.img);
        let pf = pfsck_timeout(
            &["-fn".as_ref(), "--json".as_ref(), p.img.as_os_str()],
            PFSCK_TIMEOUT,
        );
        let after = hash_file(&p.img);
        let mut why = Vec::new();
        if pf.timed_out || pf.crashed() {
            why.push(format!("pfsck {}", pf.describe()));
        }
        let e2_code = p.e2.code().unwrap_or(-1);
        let pf_code = pf.code().unwrap_or(-1);
        if (e2_code == 0) != (pf_code == 0) {
            why.push(format!(
                "verdicts differ: e2fsck -fn exit {e2_code}, pfsck -fn exit {pf_code}"
            ));
        }
        if before != after {
            why.push("pfsck -fn modified the image".into());
        }
        let report = parse_report(&pf.stdout);
        let mut report_text = String::new();
        match &report {
            Ok(r) => {
                report_text = r.summary(25);
                if let Some(code) = r.exit_code
                    && code != i64::from(pf_code)
                {
                    why.push(format!("JSON exit_code {code} but pfsck exited {pf_code}"));
                }
            }
            Err(e) if pf_code != 0 || e2_code != 0 => why.push(format!("pfsck report: {e}")),
            Err(_) => {}
        }
        if e2_code != 0
            && pf_code > 0
            && let (Some(first), Ok(report)) = (&p.first, &report)
        {
            let both_operational =
                e2_code & 8 != 0 && pf_code & 8 != 0 && report.problems.is_empty();
            if !both_operational {
                if !report.has_pass(first.pass) {
                    why.push(format!(
                        "no pfsck problem in pass {} (e2fsck's first problem: `{}`)",
                        first.pass, first.line
                    ));
                }
                if let Some(ino) = first.ino
                    && !report.mentions_inode(ino)
                {
                    why.push(format!(
                        "pfsck does not name inode {ino} (e2fsck: `{}`)",
                        first.line
                    ));
                }
            }
        }
        let verdict = format!("e2fsck {e2_code:>2} pfsck {pf_code:>3}");
        let failure = (!why.is_empty()).then(|| {
            format!(
                "{} [{}] (expected pass {}): {}\n  e2fsck first problem: {}\n  pfsck problems:\n{}\n{}\n===== pfsck -fn --json =====\n{}",
                case.name,
                case.base.label(),
                case.pass.map_or("clean".into(), |p| p.to_string()),
                why.join("; "),
                describe_first(&p),
                report_text,
                e2fsck_dump(&p),
                pf.dump(3000)
            )
        });
        (verdict, failure)
    });
    let mut table = String::new();
    for (case, (verdict, failure)) in selected.iter().zip(&results) {
        let _ = writeln!(
            table,
            "{:<4} {:<40} {:<15} {}",
            if failure.is_none() { "ok" } else { "FAIL" },
            case.name,
            case.base.label(),
            verdict
        );
    }
    let failures: Vec<&String> = results.iter().filter_map(|(_, f)| f.as_ref()).collect();
    println!(
        "{} cases, {} agree with e2fsck\n{table}",
        selected.len(),
        selected.len() - failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} corruption cases disagree with e2fsck:\n{}\n\n{}",
        failures.len(),
        selected.len(),
        table,
        failures
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

/// Cases `e2fsck -fy` repairs in one run that one `pfsck -fy` does not
/// repair yet, each with the reason. Nothing else may be left: the repair
/// test fails for any other such case, and for a case listed here that
/// pfsck now repairs (then delete its line).
const NOT_REPAIRED_YET: &[(&str, &str)] = &[];

/// Cases neither tool can check, let alone repair: `e2fsck -fy` exits 8
/// and so must `pfsck -fy`, writing nothing. That is the right answer.
const NEITHER_CAN_CHECK: &[(&str, &str)] = &[
    (
        "ext3-unknown-incompat-feature",
        "an incompat feature neither knows: checking or writing could destroy what it means",
    ),
    (
        "ext4-raw-sb-magic",
        "no usable superblock: the backup is not where e2fsck looks (groups of 2048 blocks); \
         both repair with -b 2048 -B 4096 (tests/suite/repair_super.rs)",
    ),
    (
        "ext4-sb-first-ino",
        "e2fsck's superblock check stops at the value, with no look for a backup, and so does \
         pfsck; both repair with -b 2048 -B 4096",
    ),
    (
        "ext2-sb-r-blocks-count",
        "e2fsck's superblock check stops at the value (over half the blocks), with -y too, \
         and does not look for a backup; so does pfsck",
    ),
    (
        "ext2-sb-desc-size",
        "e2fsck's superblock check stops at the value (not a power of two), with -y too",
    ),
    (
        "ext4-sb-journal-uuid",
        "an external journal neither can find: e2fsck stops (exit 12, \"Can't find external \
         journal\"), with -y too, and so does pfsck; checking without the journal could undo \
         what it holds",
    ),
];

/// What one `e2fsck -fy` run does with a case (on a copy of its image).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum E2fsckRepair {
    /// `e2fsck -fn` was clean before: nothing to repair.
    Clean,
    /// After one run `e2fsck -fn` exits 0: pfsck must repair it too.
    OneRun,
    /// Errors are left after one run (`e2fsck -fn` still fails).
    Left,
    /// It cannot even check (exit 8, e.g. an unsupported feature, no
    /// usable superblock). For the cases in [`NEITHER_CAN_CHECK`] pfsck
    /// must answer the same (exit 8, nothing written); elsewhere pfsck
    /// may do better (a superblock checksum it can recompute).
    Cannot,
}

impl E2fsckRepair {
    fn label(self) -> &'static str {
        match self {
            E2fsckRepair::Clean => "clean",
            E2fsckRepair::OneRun => "one run",
            E2fsckRepair::Left => "leaves errors",
            E2fsckRepair::Cannot => "cannot (8)",
        }
    }
}

/// Regular files of the case tree small enough to dump (the 5 GiB sparse
/// one aside), with their contents.
fn tree_files() -> &'static [(String, Vec<u8>)] {
    static FILES: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    FILES.get_or_init(|| {
        let root = corruption_tree_dir();
        let mut out = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let e = e.unwrap();
                let t = e.file_type().unwrap();
                if t.is_dir() {
                    stack.push(e.path());
                } else if t.is_file() && e.metadata().unwrap().len() <= MIB {
                    let rel = e.path().strip_prefix(&root).unwrap().display().to_string();
                    out.push((rel, std::fs::read(e.path()).unwrap()));
                }
            }
        }
        out.sort();
        out
    })
}

/// The contents of each of [`tree_files`] in `img` (None where debugfs
/// cannot dump it), dumped into `scratch`.
fn dump_tree_files(img: &Path, scratch: &Path) -> Vec<Option<Vec<u8>>> {
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch).unwrap();
    let files = tree_files();
    let mut cmds = String::new();
    for (i, (path, _)) in files.iter().enumerate() {
        let _ = writeln!(
            cmds,
            "dump /{path} {}",
            scratch.join(i.to_string()).display()
        );
    }
    let cmdfile = scratch.join("cmds");
    std::fs::write(&cmdfile, cmds).unwrap();
    let _ = std::process::Command::new(tool("debugfs"))
        .arg("-f")
        .arg(&cmdfile)
        .arg(img)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (0..files.len())
        .map(|i| std::fs::read(scratch.join(i.to_string())).ok())
        .collect()
}

/// Files `e2fsck -fy` left with their contents that `pfsck -fy` did not.
fn files_lost(e2_img: &Path, pf_img: &Path, scratch: &Path) -> Vec<String> {
    let e2 = dump_tree_files(e2_img, &scratch.join("e2"));
    let pf = dump_tree_files(pf_img, &scratch.join("pf"));
    let _ = std::fs::remove_dir_all(scratch);
    tree_files()
        .iter()
        .zip(e2.iter().zip(&pf))
        .filter(|((_, want), (e, p))| e.as_ref() == Some(want) && p.as_ref() != Some(want))
        .map(|((path, _), _)| format!("/{path}"))
        .collect()
}

/// `pfsck -fy` on every case, next to `e2fsck -fy` on a copy:
///
/// - honest: exit 0 or 1 means `e2fsck -fn` and `pfsck -fn` find nothing;
///   exit 1 exactly when it wrote (orphans and replays aside);
/// - undoable: `--rollback` restores the damaged image byte for byte;
/// - complete: every case one `e2fsck -fy` run repairs, one `pfsck -fy`
///   run repairs too (but those in [`NOT_REPAIRED_YET`]), and every file
///   `e2fsck -fy` leaves with its contents keeps them;
/// - the cases of [`NEITHER_CAN_CHECK`]: `e2fsck -fy` exits 8, and
///   `pfsck -fy` exits 8 and writes nothing.
///
/// Prints how many cases one run repairs.
#[test]
fn repair_is_honest_and_undoable() {
    let selected = selected_cases();
    let tmp = TempDir::new("corruptions-repair");
    let known: Vec<&str> = cases().iter().map(|c| c.name).collect();
    for (name, _) in NOT_REPAIRED_YET.iter().chain(NEITHER_CAN_CHECK) {
        assert!(known.contains(name), "no case {name}");
    }
    let results = parallel_map(&selected, test_threads(), |_, case| {
        let p = match prepare(case, &tmp) {
            Ok(p) => p,
            Err(e) => return (String::from("(not built)"), false, None, Some(e)),
        };
        let damaged = std::fs::read(&p.img).unwrap();
        let e2_img = tmp.join(format!("{}.e2fsck", case.name));
        copy_image(&p.img, &e2_img);
        let e2fy = e2fsck(&e2_img, &["-fy"]);
        let e2_outcome = if p.e2.code() == Some(0) {
            E2fsckRepair::Clean
        } else if e2fy.code().is_some_and(|c| c & 8 != 0) {
            E2fsckRepair::Cannot
        } else if matches!(e2fy.code(), Some(0 | 1)) && e2fsck_fn(&e2_img) == 0 {
            E2fsckRepair::OneRun
        } else {
            E2fsckRepair::Left
        };
        let pf = pfsck_timeout(&["-fy".as_ref(), p.img.as_os_str()], PFSCK_TIMEOUT);
        let mut why = Vec::new();
        if pf.timed_out || pf.crashed() {
            why.push(format!("pfsck -fy {}", pf.describe()));
        }
        let code = pf.code().unwrap_or(-1);
        let modified = std::fs::read(&p.img).unwrap() != damaged;
        let mut repaired = false;
        if matches!(code, 0 | 1) {
            let e2 = e2fsck_fn_run(&p.img);
            let again = pfsck_timeout(&["-fn".as_ref(), p.img.as_os_str()], PFSCK_TIMEOUT);
            if e2.code() != Some(0) || again.code() != Some(0) {
                why.push(format!(
                    "pfsck -fy exited {code} but e2fsck -fn {} and pfsck -fn {}\n{}",
                    e2.describe(),
                    again.describe(),
                    e2.dump(2000)
                ));
            } else {
                let lost = files_lost(&e2_img, &p.img, &tmp.join(format!("{}.dump", case.name)));
                if !lost.is_empty() {
                    why.push(format!(
                        "files e2fsck -fy keeps lost their contents: {}",
                        lost.join(" ")
                    ));
                }
            }
            repaired = p.e2.code() != Some(0) && code == 1;
        }
        // Orphan processing and journal replay write without counting as
        // a correction: e2fsck exits 0 after them too.
        let silent = pf.stdout.contains("orphan") || pf.stdout.contains("replaying the journal");
        if (code & 1 != 0) != modified && !(code == 0 && modified && silent) {
            why.push(format!(
                "exit {code} but the image was modified: {modified}"
            ));
        }
        let exception = NOT_REPAIRED_YET.iter().find(|(n, _)| *n == case.name);
        match (e2_outcome, exception) {
            (E2fsckRepair::OneRun, None) if !repaired => why.push(
                "e2fsck -fy repairs it in one run, pfsck -fy does not (and it is not in \
                 NOT_REPAIRED_YET)"
                    .into(),
            ),
            (E2fsckRepair::OneRun, Some(_)) if repaired => {
                why.push("pfsck -fy repairs it now: remove it from NOT_REPAIRED_YET".into())
            }
            (E2fsckRepair::OneRun, _) => {}
            (_, Some(_)) => why.push(format!(
                "listed in NOT_REPAIRED_YET, but e2fsck -fy does not repair it in one run ({})",
                e2_outcome.label()
            )),
            _ => {}
        }
        if NEITHER_CAN_CHECK.iter().any(|(n, _)| *n == case.name) {
            if e2_outcome != E2fsckRepair::Cannot {
                why.push(format!(
                    "listed in NEITHER_CAN_CHECK, but e2fsck -fy exits {} ({})",
                    e2fy.code().unwrap_or(-1),
                    e2_outcome.label()
                ));
            } else if code & 8 == 0 || modified {
                why.push(format!(
                    "e2fsck -fy cannot check it (exit {}); pfsck -fy exited {code}{}",
                    e2fy.code().unwrap_or(-1),
                    if modified { " and wrote" } else { "" }
                ));
            }
        }
        let log = pfsck::store::default_undo_path(&p.img);
        // A run that fixed nothing writes only the record of the check,
        // without a log.
        let only_record =
            !log.exists() && only_check_record_changed(&damaged, &std::fs::read(&p.img).unwrap());
        if modified && !only_record {
            let rb = pfsck_timeout(
                &["--rollback".as_ref(), log.as_os_str(), p.img.as_os_str()],
                PFSCK_TIMEOUT,
            );
            if rb.code() != Some(0) || std::fs::read(&p.img).unwrap() != damaged {
                why.push(format!(
                    "rollback did not restore the image: {}",
                    rb.describe()
                ));
            }
        }
        let _ = std::fs::remove_file(&e2_img);
        let verdict = format!(
            "e2fsck -fn {:>2}, e2fsck -fy {:<13} pfsck -fy {code:>2}",
            p.e2.code().unwrap_or(-1),
            e2_outcome.label(),
        );
        let failure = (!why.is_empty()).then(|| {
            format!(
                "{} [{}]: {}\n===== e2fsck -fy =====\n{}\n===== pfsck -fy =====\n{}",
                case.name,
                case.base.label(),
                why.join("; "),
                e2fy.dump(1500),
                pf.dump(3000)
            )
        });
        (verdict, repaired, Some(e2_outcome), failure)
    });
    let mut table = String::new();
    for (case, (verdict, repaired, _, failure)) in selected.iter().zip(&results) {
        let _ = writeln!(
            table,
            "{:<8} {:<40} {:<15} {}",
            if failure.is_some() {
                "FAIL"
            } else if *repaired {
                "repaired"
            } else {
                "left"
            },
            case.name,
            case.base.label(),
            verdict
        );
    }
    let damaged = selected.iter().filter(|c| c.pass.is_some()).count();
    let repaired = results.iter().filter(|r| r.1).count();
    let one_run: Vec<bool> = results
        .iter()
        .map(|r| r.2 == Some(E2fsckRepair::OneRun))
        .collect();
    let e2_one_run = one_run.iter().filter(|&&b| b).count();
    let both = results
        .iter()
        .zip(&one_run)
        .filter(|(r, o)| r.1 && **o)
        .count();
    println!(
        "pfsck -fy repaired {repaired} of {damaged} damaged cases in one run; e2fsck -fy \
         repairs {e2_one_run} in one run, of which pfsck repairs {both} ({} listed as not \
         repaired yet)\n{table}",
        NOT_REPAIRED_YET.len()
    );
    let failures: Vec<&String> = results.iter().filter_map(|r| r.3.as_ref()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}\n\n{}",
        failures.len(),
        selected.len(),
        table,
        failures
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}
