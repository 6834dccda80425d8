//! Pass 0, journal part: is the journal inode usable, is its superblock
//! well formed, and do the superblock's journal flags agree with it.
//!
//! Replay is planned in `recovery.rs`; with a usable journal, `-n` checks
//! the file system as it will be after replay, so these checks then see the
//! reset journal. When the journal is unusable, the disk is checked as it
//! is, like `e2fsck -n` does.

use super::blockmap::{MapInfo, MapVisitor, Scratch, walk_extents, walk_indirect};
use super::problem::{Code, Problem};
use crate::fs::extent::{self, EXTENT_MAGIC};
use crate::fs::inode::{Inode, flags};
use crate::fs::journal::{self, JBD2_MAGIC};
use crate::fs::num::Ino;
use crate::fs::superblock::{compat, incompat};
use crate::narrow;
use crate::volume::Fs;
use std::path::{Path, PathBuf};

/// The kernel refuses journals shorter than this many blocks.
const MIN_JOURNAL_BLOCKS: u64 = 1024;

/// `clear_bad`: a repair will replace an unusable journal, so the check
/// goes on past it.
pub fn check(fs: &Fs, clear_bad: bool) -> Vec<Problem> {
    let sb = &fs.sb;
    let mut out = Vec::new();
    let has_journal = sb.has_compat(compat::HAS_JOURNAL);
    let recover = sb.has_incompat(incompat::RECOVER);
    if external(fs) {
        // A journal UUID names an external journal whatever else the
        // superblock says; finding and judging it is `external_problems`'.
        if !has_journal && recover {
            out.push(Problem::new(Code::JournalRecoverNoJournal));
        }
        return out;
    }
    if !has_journal && sb.journal_inum == 0 {
        // A journal device number alone means nothing without the feature.
        if recover {
            out.push(Problem::new(Code::JournalRecoverNoJournal));
            // Left set, the flag is a feature e2fsck cannot open the file
            // system with: -n cannot proceed (exit 12).
            if !clear_bad {
                out.push(Problem::new(Code::JournalCannotProceed));
            }
        }
        return out;
    }
    if sb.journal_inum == 0 {
        // has_journal without an inode (a device number does not name a
        // journal; only a UUID does): e2fsck's "invalid journal (inode
        // 0)", cleared and recreated like a bad inode.
        out.push(
            Problem::new(Code::JournalInodeInvalid)
                .ino(Ino::NONE)
                .detail("no journal inode"),
        );
        if !clear_bad {
            out.push(Problem::new(Code::JournalCannotProceed));
        }
        return out;
    }
    if !has_journal {
        // e2fsck opens the journal inode the superblock names even without
        // the feature. An invalid one it clears, and then makes a journal
        // (the file system becomes ext3); a valid one means the flag was
        // lost ("has_journal flag is clear, but a journal is present").
        match find_journal_inode(fs).and_then(|(inode, _)| journal_first_block(fs, &inode)) {
            Err(why) => invalid_journal(&mut out, sb.journal_inum, why, clear_bad),
            Ok(_) => out.push(Problem::new(Code::JournalInodeNoFeature).ino(Ino(sb.journal_inum))),
        }
        return out;
    }
    // e2fsck stops when the journal is unusable and it may not clear it:
    // checking on would judge metadata the journal may still overwrite.
    let found = find_journal_inode(fs)
        .and_then(|(inode, backup)| journal_first_block(fs, &inode).map(|b| (b, backup)));
    if let Ok((_, Some(why))) = &found
        && clear_bad
    {
        // e2fsck writes the inode it made from the backup (silently);
        // -n only reads with it, as here.
        out.push(
            Problem::new(Code::JournalInodeFromBackup)
                .ino(Ino(sb.journal_inum))
                .detail(why.clone()),
        );
    }
    match found {
        Err(why) => invalid_journal(&mut out, sb.journal_inum, why, clear_bad),
        Ok((mut jsb_bytes, _)) => {
            let mut j = journal::parse_superblock(&jsb_bytes);
            let journal_blocks = journal_inode(fs)
                .map(|i| i.size / u64::from(fs.geo.block_size))
                .unwrap_or(0);
            let v2_fields = j.magic == JBD2_MAGIC && stray_v2_fields(&j);
            if v2_fields {
                out.push(Problem::new(Code::JournalStrayV2Fields).ino(Ino(sb.journal_inum)));
                if clear_bad {
                    // The repair clears them first; the rest is judged on
                    // what it leaves.
                    journal::clear_v2_fields(&mut jsb_bytes);
                    j = journal::parse_superblock(&jsb_bytes);
                }
            }
            let problem = superblock_problem(fs, &j, &jsb_bytes, journal_blocks);
            let readable = j.magic == JBD2_MAGIC
                && matches!(
                    j.blocktype,
                    journal::BLOCKTYPE_SB_V1 | journal::BLOCKTYPE_SB_V2
                );
            if j.magic == JBD2_MAGIC && !known_blocktype(j.blocktype) {
                let p = Problem::new(Code::JournalVersionUnsupported)
                    .ino(Ino(sb.journal_inum))
                    .num(u64::from(j.blocktype));
                let why = format!("unsupported version (block type {})", j.blocktype);
                unreadable(&mut out, p, sb.journal_inum, &why, clear_bad);
            } else if let Some(why) = problem.clone().filter(|_| !readable) {
                // e2fsck judges its users and features before the rest
                // (block size, length, checksum), once it knows the
                // superblock's kind.
                corrupt_superblock(&mut out, &j, sb.journal_inum, why, clear_bad);
            } else if j.blocktype == journal::BLOCKTYPE_SB_V2 && j.nr_users > 1 && !clear_bad {
                // A repair clears the fields first (the journal then has
                // no users listed); a read-only check cannot, and stops.
                out.push(
                    Problem::new(Code::JournalExternalBad)
                        .e2fsck(0x000010)
                        .detail(format!(
                            "The journal lists {} file systems as its users (unsupported)",
                            j.nr_users
                        )),
                );
                out.push(Problem::new(Code::JournalCannotProceed));
            } else if j.blocktype == journal::BLOCKTYPE_SB_V2
                && !v2_fields
                && (j.feature_incompat & !journal::incompat::KNOWN != 0 || j.feature_ro_compat != 0)
            {
                // jbd2 knows no read-only compatible feature: any one set
                // stops e2fsck as an unknown incompatible one does (it
                // looks at the incompatible ones first).
                let (detail, e2) = if j.feature_incompat & !journal::incompat::KNOWN != 0 {
                    (format!("incompat 0x{:x}", j.feature_incompat), 0x000026)
                } else {
                    (format!("ro_compat 0x{:x}", j.feature_ro_compat), 0x000025)
                };
                let p = Problem::new(Code::JournalFeatureUnsupported)
                    .ino(Ino(sb.journal_inum))
                    .detail(detail.clone())
                    .e2fsck(e2);
                let why = format!("unknown features ({detail})");
                unreadable(&mut out, p, sb.journal_inum, &why, clear_bad);
            } else if let Some(why) = problem {
                corrupt_superblock(&mut out, &j, sb.journal_inum, why, clear_bad);
            } else if !recover && j.start != 0 {
                out.push(needs_recovery_no_flag(fs));
            }
        }
    }
    out
}

/// The journal superblock judged corrupt (`why`); the check cannot go on
/// when the mode may not reset it.
fn corrupt_superblock(
    out: &mut Vec<Problem>,
    j: &journal::JournalSuperblock,
    ino: u32,
    why: String,
    clear_bad: bool,
) {
    // Without the magic number e2fsck first takes the inode for the wrong
    // one (and asks to clear it).
    let e2 = if j.magic != JBD2_MAGIC {
        0x00000F
    } else {
        0x000015
    };
    out.push(
        Problem::new(Code::JournalSuperblockCorrupt)
            .ino(Ino(ino))
            .detail(why)
            .e2fsck(e2),
    );
    if !clear_bad {
        out.push(Problem::new(Code::JournalCannotProceed));
    }
}

/// A journal with transactions but no needs_recovery flag. On a backup
/// superblock, whose flag is never set, `num` holds that superblock's
/// block: e2fsck then states it replays anyway instead of asking.
pub(super) fn needs_recovery_no_flag(fs: &Fs) -> Problem {
    let p = Problem::new(Code::JournalNeedsRecoveryNoFlag);
    if fs.sb_block == fs.primary_sb_block() {
        p
    } else {
        p.num(fs.sb_block)
    }
}

/// Does the superblock name an external journal? e2fsck decides by the
/// journal UUID alone: when it is set, the journal inode is not looked at.
pub fn external(fs: &Fs) -> bool {
    fs.sb.journal_uuid.iter().any(|&b| b != 0)
}

/// Where the external journal is: the device given with `-j`, else the
/// device its UUID names (`by_uuid`). None when it is not found.
pub fn external_path(fs: &Fs, given: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = given {
        return Some(p.to_path_buf());
    }
    by_uuid(fs)
}

/// The device the journal's UUID names, found as e2fsck's blkid finds
/// it: in blkid's cache file (`BLKID_FILE`, else /etc/blkid.tab) when
/// what it names still carries that UUID, else among the block devices
/// (udev's /dev/disk/by-uuid stands for blkid's probe of them).
fn by_uuid(fs: &Fs) -> Option<PathBuf> {
    let u = &fs.sb.journal_uuid;
    let hex =
        |r: std::ops::Range<usize>| u[r].iter().map(|b| format!("{b:02x}")).collect::<String>();
    let name = format!(
        "{}-{}-{}-{}-{}",
        hex(0..4),
        hex(4..6),
        hex(6..8),
        hex(8..10),
        hex(10..16)
    );
    let cache = std::env::var_os("BLKID_FILE").unwrap_or_else(|| "/etc/blkid.tab".into());
    if let Some(p) = std::fs::read_to_string(cache)
        .ok()
        .and_then(|text| cached_device(&text, &name))
        .filter(|p| carries_uuid(p, u))
    {
        return Some(p);
    }
    let p = Path::new("/dev/disk/by-uuid").join(name);
    p.exists().then_some(p)
}

/// The device a blkid cache (`<device ... UUID="u" ...>path</device>`
/// lines) lists with UUID `uuid`.
fn cached_device(text: &str, uuid: &str) -> Option<PathBuf> {
    let tag = format!(" UUID=\"{uuid}\"");
    text.lines().find_map(|l| {
        let l = l.trim();
        let (head, rest) = l.strip_prefix("<device")?.split_once('>')?;
        let path = rest.strip_suffix("</device>")?;
        (head.contains(&tag) && !path.is_empty()).then(|| PathBuf::from(path))
    })
}

/// Does the ext2 superblock of the device at `p` carry UUID `u` (what
/// blkid's check of a cached device finds)?
fn carries_uuid(p: &Path, u: &[u8; 16]) -> bool {
    use std::os::unix::fs::FileExt;
    let mut sb = [0u8; 1024];
    std::fs::File::open(p)
        .and_then(|f| f.read_exact_at(&mut sb, 1024))
        .is_ok()
        && crate::fs::superblock::Superblock::parse(&sb).uuid == *u
}

/// e2fsck's check of the superblock's hint for the external journal: the
/// device number of what the journal's UUID names, when it is found
/// there and differs (a regular file's is 0). Looked up whether `-j`
/// names the journal or not, as e2fsck does.
pub fn journal_dev_hint(fs: &Fs) -> Option<Problem> {
    use std::os::unix::fs::MetadataExt;
    if !fs.sb.has_compat(compat::HAS_JOURNAL) || !external(fs) {
        return None;
    }
    let rdev = std::fs::metadata(by_uuid(fs)?).ok()?.rdev();
    // The hint holds 32 bits, as the old encoding of a device number.
    let dev = u32::try_from(rdev).ok()?;
    (dev != fs.sb.journal_dev).then(|| {
        Problem::new(Code::SbJournalDevHint)
            .num(rdev)
            .num2(u64::from(fs.sb.journal_dev))
    })
}

/// The external journal's problems, which stop the check as they stop
/// e2fsck, -y included ("Can't find external journal", exit 12): the
/// journal may hold updates that checking without it would undo.
pub fn external_problems(fs: &Fs, given: Option<&Path>) -> Vec<Problem> {
    if !external(fs) {
        return Vec::new();
    }
    let why = match external_path(fs, given) {
        None => "Can't find external journal (name it with -j)".to_string(),
        Some(path) => match super::external_journal::open(fs, &path) {
            Ok(_) => return Vec::new(),
            Err(e) => e,
        },
    };
    vec![
        Problem::new(Code::JournalExternalBad).detail(why),
        Problem::new(Code::JournalExternalCannotProceed),
    ]
}

/// The external journal device's own superblock fails its checksum:
/// e2fsck asks to fix it as it loads the journal, before it decides to
/// skip a clean file system; a no leaves the file system unmarked. Only
/// when the journal can be used ([`external_problems`] finds nothing).
pub fn external_checksum(fs: &Fs, given: Option<&Path>) -> Option<Problem> {
    if !external(fs) {
        return None;
    }
    let ext = super::external_journal::open(fs, &external_path(fs, given)?).ok()?;
    ext.sb_checksum_bad
        .then(|| Problem::new(Code::JournalExternalChecksum))
}

/// Is the internal journal unusable (invalid inode or superblock, or one
/// of a version or with features pfsck cannot read)?
pub fn unusable(fs: &Fs) -> bool {
    check(fs, true).iter().any(|p| {
        matches!(
            p.code,
            Code::JournalInodeInvalid
                | Code::JournalSuperblockCorrupt
                | Code::JournalVersionUnsupported
                | Code::JournalFeatureUnsupported
        )
    })
}

/// Does the journal keep a check in this mode from skipping a clean file
/// system? e2fsck looks at the journal before it decides to skip: one it
/// may not use or repair stops it (exit 12), or is repaired first; a
/// journal inode without has_journal it clears, and then checks in full
/// (its pass 1 frees the inode), and a journal holding transactions
/// without needs_recovery it replays, forcing the check (`-p` stops
/// there); `-n` skips after saying no to either.
pub fn stops_clean_skip(fs: &Fs, repairing: bool) -> bool {
    unusable(fs)
        || check(fs, repairing).iter().any(|p| {
            p.code == Code::JournalCannotProceed
                || (repairing
                    && matches!(
                        p.code,
                        Code::JournalInodeNoFeature | Code::JournalNeedsRecoveryNoFlag
                    ))
        })
}

/// The error number recorded in the internal journal's superblock (by the
/// kernel when it aborted the journal, or by `pfsck --online`); 0 when
/// there is none or no journal to read. e2fsck marks the file system as
/// having errors on it, which forces a full check.
pub fn recorded_errno(fs: &Fs) -> i32 {
    if !fs.sb.has_compat(compat::HAS_JOURNAL) || external(fs) {
        return 0;
    }
    journal_inode(fs)
        .and_then(|i| journal_first_block(fs, &i))
        .map(|b| journal::parse_superblock(&b))
        .ok()
        .filter(|j| j.magic == JBD2_MAGIC)
        .map_or(0, |j| j.errno)
}

/// The journal inode as e2fsck uses it: the inode itself when it is a
/// plausible journal whose first block can be read, else (mke2fs keeps a
/// copy of its block map and size in the superblock) the backup, leaving
/// the inode itself to pass 1.
pub fn journal_inode(fs: &Fs) -> Result<Inode, String> {
    find_journal_inode(fs).map(|(inode, _)| inode)
}

/// [`journal_inode`], with why the inode itself was not used when the
/// backup was.
fn find_journal_inode(fs: &Fs) -> Result<(Inode, Option<String>), String> {
    // e2fsck rejects a number past the groups' inodes before it reads
    // anything: the backup is not tried, and nothing is replayed.
    let ino = fs.sb.journal_inum;
    if u64::from(ino) > u64::from(fs.geo.groups) * u64::from(fs.geo.inodes_per_group) {
        return Err(format!("inode {ino} is past the last inode"));
    }
    let primary = fs
        .read_inode_raw(Ino(fs.sb.journal_inum))
        .map_err(|e| e.to_string())
        .and_then(|raw| {
            let inode = Inode::parse(&raw);
            // e2fsck reads the inode with its checksum checked.
            if fs.metadata_csum()
                && raw[..crate::fs::inode::GOOD_OLD_INODE_SIZE]
                    .iter()
                    .any(|&b| b != 0)
                && crate::fs::inode::compute_checksum(fs.csum_seed, Ino(fs.sb.journal_inum), &raw)
                    != inode.stored_checksum()
            {
                return Err("its checksum does not match".into());
            }
            if inode.links_count == 0 || !inode.is_reg() {
                return Err("not a regular file in use".into());
            }
            // e2fsck takes no encrypted file for a journal, and its walk
            // of the block map finds no block in an inline-data inode.
            if inode.has_flag(flags::ENCRYPT) {
                return Err("it is marked encrypted".into());
            }
            if inode.has_flag(flags::INLINE_DATA) {
                return Err("it is marked as holding inline data".into());
            }
            journal_first_block(fs, &inode)?;
            map_covers_size(fs, &inode)?;
            Ok(inode)
        });
    match primary {
        Ok(inode) => Ok((inode, None)),
        Err(why) => backup_inode_bytes(fs)
            .map(|raw| Inode::parse(&raw))
            .filter(|i| journal_first_block(fs, i).is_ok() && map_covers_size(fs, i).is_ok())
            .map(|i| (i, Some(why.clone())))
            .ok_or(why),
    }
}

/// Does the journal's block map reach its size? e2fsck walks the whole
/// map before it trusts a journal inode, and stops at the first block
/// that is not in the file system, or at the first hole of a block map
/// (extent trees list only what they map): a map whose walk ends before
/// the inode's size makes the journal too small, hence invalid. Without
/// this, pass 1 would repair the journal as an ordinary file and free
/// blocks the journal still needs.
fn map_covers_size(fs: &Fs, inode: &Inode) -> Result<(), String> {
    struct Reach {
        /// Logical blocks from 0 the walk went through before it stopped.
        blocks: u64,
        holes_stop: bool,
        stopped: bool,
    }
    impl Reach {
        /// An extent the checks of pass 1 reject but e2fsck's walk of the
        /// journal goes through: the map reaches its end, no farther.
        fn last_visited(&mut self, p: &Problem) {
            let a = p.args();
            let (lblk, len) = (a.num.unwrap_or(0), a.num2.unwrap_or(0));
            if !self.stopped && len > 0 {
                self.blocks = lblk.saturating_add(len);
            }
        }
    }
    impl MapVisitor for Reach {
        fn data(&mut self, lblk: u64, _pblk: u64, len: u64, _unwritten: bool) {
            if self.stopped {
                return;
            }
            if self.holes_stop && lblk != self.blocks {
                self.stopped = true;
                return;
            }
            self.blocks = self.blocks.max(lblk.saturating_add(len));
        }
        fn node(&mut self, _pblk: u64) {}
        fn problem(&mut self, p: Problem) {
            match p.code {
                // A checksum is not what e2fsck's walk of the map looks at.
                Code::InodeExtentNodeChecksum => {}
                // Nor the order of the extents, nor the size: its walk
                // goes through every extent the tree holds, in the tree's
                // order, and the last one it goes through is how far the
                // map reaches (seed fz36, damage 14760: an extent grown
                // over the next one).
                Code::InodeExtentOrder | Code::InodeExtentPastEof => self.last_visited(&p),
                Code::InodeExtentBad if p.e2fsck_override() == Some(0x01007D) => {
                    self.last_visited(&p);
                }
                _ => self.stopped = true,
            }
        }
        fn done(&self) -> bool {
            self.stopped
        }
    }
    let extents = inode.has_flag(flags::EXTENTS);
    let mut reach = Reach {
        blocks: 0,
        holes_stop: !extents,
        stopped: false,
    };
    let mut scratch = Scratch::new();
    if extents {
        let info = MapInfo::unbounded(fs.sb.journal_inum, false);
        walk_extents(fs, info, &inode.block, &mut scratch, &mut reach);
    } else {
        walk_indirect(
            fs,
            fs.sb.journal_inum,
            &inode.block_ptrs(),
            &mut scratch,
            &mut reach,
        );
    }
    let bs = u64::from(fs.geo.block_size);
    if reach.blocks.saturating_mul(bs) < inode.size {
        return Err(format!(
            "its block map ends after {} of its {} blocks",
            reach.blocks,
            inode.size.div_ceil(bs)
        ));
    }
    Ok(())
}

/// `s_jnl_backup_type` value meaning s_jnl_blocks holds the inode's i_block
/// (15 words), then i_size_high and i_size.
const JNL_BACKUP_BLOCKS: u8 = 1;

/// The journal inode e2fsck makes from the superblock's backup (and writes
/// when it may): the 128-byte inode zeroed but for the block map, the
/// size, one link and mode 0100600. No flags: e2fsck walks the map as
/// block pointers, so the backup of an extent tree (whose header and
/// first logical block read as pointers 0xF30A.., 4, 0, 0) ends its walk
/// within the first blocks, too short for a journal: it then clears the
/// journal and recreates it. The same walk is asked of the copy here: the
/// direct pointers its size needs must lie in the file system.
pub fn backup_inode_bytes(fs: &Fs) -> Option<Vec<u8>> {
    let sb = &fs.sb;
    if sb.jnl_backup_type != JNL_BACKUP_BLOCKS {
        return None;
    }
    let raw = crate::fs::inode::from_journal_backup(&sb.jnl_blocks);
    let inode = Inode::parse(&raw);
    let bs = u64::from(fs.geo.block_size);
    let needed = narrow::to_usize(
        inode
            .size
            .div_ceil(bs)
            .min(crate::fs::inode::DIRECT_BLOCKS as u64),
    );
    let ptrs = inode.block_ptrs();
    ptrs[..needed]
        .iter()
        .all(|&b| b != 0 && fs.geo.block_in_fs(u64::from(b)))
        .then_some(raw)
}

/// Reads the journal's superblock block (its logical block 0).
pub fn journal_first_block(fs: &Fs, inode: &Inode) -> Result<Vec<u8>, String> {
    let bs = u64::from(fs.geo.block_size);
    if inode.size / bs < MIN_JOURNAL_BLOCKS {
        return Err(format!("too small ({} bytes)", inode.size));
    }
    let first = first_block(fs, inode)?;
    if !fs.geo.block_in_fs(first) {
        return Err(format!("illegal block {first}"));
    }
    fs.read_block(first).map_err(|e| e.to_string())
}

/// Physical block of logical block 0, walking extent index nodes or taking
/// the first direct pointer.
pub fn first_block(fs: &Fs, inode: &Inode) -> Result<u64, String> {
    if !inode.has_flag(flags::EXTENTS) {
        return match inode.block_ptr(0) {
            0 => Err("first block is a hole".into()),
            b => Ok(u64::from(b)),
        };
    }
    let mut node = inode.block.to_vec();
    for _ in 0..=extent::MAX_DEPTH {
        let h = extent::parse_header(&node);
        if h.magic != EXTENT_MAGIC || h.entries == 0 {
            return Err("bad extent header".into());
        }
        if h.depth == 0 {
            let e = extent::parse_leaf(&node, 0);
            if e.lblk != 0 || e.len == 0 {
                return Err("first block is a hole".into());
            }
            return Ok(e.pblk);
        }
        let idx = extent::parse_index(&node, 0);
        if !fs.geo.block_in_fs(idx.leaf) {
            return Err(format!("illegal extent node block {}", idx.leaf));
        }
        node = fs.read_block(idx.leaf).map_err(|e| e.to_string())?;
    }
    Err("extent tree too deep".into())
}

/// Does the journal superblock carry version 2 fields it must not have?
/// A version 1 superblock has none (features, user count); an internal
/// version 2 journal lists at most one user. e2fsck clears every field
/// past the version 1 layout then, and reads the journal as it is left.
pub fn stray_v2_fields(j: &journal::JournalSuperblock) -> bool {
    match j.blocktype {
        journal::BLOCKTYPE_SB_V1 => {
            j.feature_compat != 0
                || j.feature_incompat != 0
                || j.feature_ro_compat != 0
                || j.nr_users != 0
        }
        journal::BLOCKTYPE_SB_V2 => j.nr_users > 1,
        _ => false,
    }
}

/// `journal_blocks`: the journal inode's size in blocks.
fn superblock_problem(
    fs: &Fs,
    j: &journal::JournalSuperblock,
    raw: &[u8],
    journal_blocks: u64,
) -> Option<String> {
    if j.magic != JBD2_MAGIC {
        return Some("bad magic".into());
    }
    if j.blocktype != journal::BLOCKTYPE_SB_V1 && j.blocktype != journal::BLOCKTYPE_SB_V2 {
        return Some(format!("unknown block type {}", j.blocktype));
    }
    if j.blocksize != fs.geo.block_size {
        return Some(format!(
            "block size {} differs from the file system's",
            j.blocksize
        ));
    }
    if u64::from(j.maxlen) > journal_blocks {
        // The kernel refuses to mount it: the journal would run past its
        // inode.
        return Some(format!(
            "it says the journal has {} blocks, the journal inode has {journal_blocks}",
            j.maxlen
        ));
    }
    // s_first is not judged: e2fsck loads it as it is, and only a replay
    // that wraps past the log's end uses it (`recovery::Log::advance`).
    if j.blocktype == journal::BLOCKTYPE_SB_V2 && j.has_csum_v2v3() {
        // Checksum type 4 is crc32c, the only one jbd2 defines for v2/v3.
        if j.checksum_type != 4 || journal::compute_sb_checksum(raw) != j.checksum {
            return Some("checksum does not match".into());
        }
    }
    // The fast-commit area must leave jbd2's minimum of 1024 blocks to
    // the journal proper. e2fsck subtracts as unsigned 32-bit numbers: an
    // area larger than the whole journal wraps and passes.
    if j.blocktype == journal::BLOCKTYPE_SB_V2
        && j.fast_commit()
        && u64::from(j.maxlen.wrapping_sub(j.fc_blocks())) < MIN_JOURNAL_BLOCKS
    {
        return Some(format!(
            "{} fast commit blocks leave fewer than {MIN_JOURNAL_BLOCKS} of its {} blocks",
            j.fc_blocks(),
            j.maxlen
        ));
    }
    None
}

/// Does jbd2 know this block type? A journal superblock of another one
/// (with the magic number) is taken for a newer format, not for damage;
/// the other known types where a superblock belongs are damage.
fn known_blocktype(t: u32) -> bool {
    matches!(
        t,
        journal::BLOCKTYPE_DESCRIPTOR
            | journal::BLOCKTYPE_COMMIT
            | journal::BLOCKTYPE_SB_V1
            | journal::BLOCKTYPE_SB_V2
            | journal::BLOCKTYPE_REVOKE
    )
}

/// A journal superblock of an unknown version or with features jbd2
/// does not know (`p`), as e2fsck 1.47.4 meets it: it asks to abort
/// (PROMPT_ABORT, not preen-safe: `-p` stops there). A repair says yes
/// and stops, writing nothing (exit 12); `-n` says no, and then no to
/// resetting the journal superblock, and cannot proceed (exit 12).
fn unreadable(out: &mut Vec<Problem>, p: Problem, ino: u32, why: &str, clear_bad: bool) {
    if clear_bad {
        // num2 1: the answer is to abort ([`super::e2fsck_map::aborted`]).
        out.push(p.num2(1));
        out.push(Problem::new(Code::JournalVersionAbort));
        return;
    }
    out.push(p);
    out.push(
        Problem::new(Code::JournalSuperblockCorrupt)
            .ino(Ino(ino))
            .detail(why.to_string())
            .e2fsck(0x000015),
    );
    out.push(Problem::new(Code::JournalCannotProceed));
}

/// A journal inode that cannot be used: cleared when the mode may (a new
/// journal follows), else the check cannot go on, as e2fsck.
fn invalid_journal(out: &mut Vec<Problem>, ino: u32, why: String, clear_bad: bool) {
    out.push(
        Problem::new(Code::JournalInodeInvalid)
            .ino(Ino(ino))
            .detail(why),
    );
    if !clear_bad {
        out.push(Problem::new(Code::JournalCannotProceed));
    }
}

/// The names under which e2fsck looks for a journal kept as a visible file
/// of the root directory (tune2fs -J on a mounted file system makes
/// /.journal), in the order it tries them.
const VISIBLE_NAMES: [&str; 4] = [".journal", "journal", ".journal.dat", "journal.dat"];

/// An internal journal kept in a visible file of the root directory,
/// which a repair moves to the reserved journal inode (e2fsck does so
/// only when it may write, and only for a journal inode of one link that
/// the first root entry of one of the names above names). The problem
/// carries the journal's inode and the name.
pub fn visible(fs: &Fs) -> Option<Problem> {
    let sb = &fs.sb;
    let ino = sb.journal_inum;
    if !sb.has_compat(compat::HAS_JOURNAL) || ino == 0 || ino == crate::fs::inode::JOURNAL_INO {
        return None;
    }
    let journal = Inode::parse(&fs.read_inode_raw(Ino(ino)).ok()?);
    if journal.links_count != 1 {
        return None;
    }
    let entries = root_entries(fs);
    let first_named = |name: &str| {
        entries
            .iter()
            .find(|(n, _)| n.as_slice() == name.as_bytes())
            .map(|&(_, i)| i)
    };
    VISIBLE_NAMES
        .into_iter()
        .find(|name| first_named(name) == Some(ino))
        .map(|name| {
            Problem::new(Code::JournalVisible)
                .ino(Ino(ino))
                .detail(name)
        })
}

/// The root directory's used entries (name, inode) in the order of its
/// blocks. An inline root is not searched (e2fsck's would be): its
/// journal is left where it is.
pub(super) fn root_entries(fs: &Fs) -> Vec<(Vec<u8>, u32)> {
    #[derive(Default)]
    struct Blocks(Vec<(u64, u64)>);
    impl MapVisitor for Blocks {
        fn data(&mut self, lblk: u64, pblk: u64, len: u64, _unwritten: bool) {
            for k in 0..len {
                self.0.push((lblk + k, pblk + k));
            }
        }
        fn node(&mut self, _pblk: u64) {}
        fn problem(&mut self, _p: Problem) {}
    }
    let Ok(raw) = fs.read_inode_raw(Ino::ROOT) else {
        return Vec::new();
    };
    let root = Inode::parse(&raw);
    if root.has_flag(flags::INLINE_DATA) || !root.is_dir() {
        return Vec::new();
    }
    let mut blocks = Blocks::default();
    let mut scratch = Scratch::new();
    if root.has_flag(flags::EXTENTS) {
        let info = MapInfo::unbounded(Ino::ROOT.get(), true);
        walk_extents(fs, info, &root.block, &mut scratch, &mut blocks);
    } else {
        walk_indirect(
            fs,
            Ino::ROOT.get(),
            &root.block_ptrs(),
            &mut scratch,
            &mut blocks,
        );
    }
    blocks.0.sort_unstable();
    let filetype = fs.sb.has_incompat(incompat::FILETYPE);
    let mut out = Vec::new();
    for (_, pblk) in blocks.0 {
        let Ok(b) = fs.read_block(pblk) else { continue };
        let mut off = 0;
        while let Ok(e) = crate::fs::dir_entry::read_entry(&b, off, filetype) {
            if e.inode != 0 {
                out.push((e.name.to_vec(), e.inode));
            }
            off += e.rec_len;
        }
    }
    out
}
