//! e2fsck 1.47.4's problem table, as data: the spec pfsck's problems are
//! measured against (issue 13).
//!
//! Every code of e2fsck's table is here with the facts that define it:
//! the question it asks (`Prompt`), its flags (preen-ok, no-ok, fatal,
//! latch group, ...), the code it asks next (`after`), what kind of entry
//! it is (a problem found on disk, a pass header, a latch question, a list
//! item printed under another problem, an informative message, or a
//! failure of e2fsck itself) and which objects its message names. The
//! descriptions are pfsck's own words.
//!
//! The facts were read from the table compiled into the 1.47.4 binary
//! (`../shared/tools/e2fsck-1.47.4`); the objects from the fields its
//! messages print (`i`: the inode, or `d`: the directory when no inode
//! is printed; `b`: the block slot, which some messages use for a count;
//! `g`: the group). pfsck's problems name their e2fsck codes in
//! [`super::e2fsck_map`]; `docs/problems.md` is generated from both.

/// The answer e2fsck asks for (its prompt), or none for a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prompt {
    None,
    Fix,
    Clear,
    Relocate,
    Allocate,
    Expand,
    Connect,
    Create,
    Salvage,
    Truncate,
    ClearInode,
    Abort,
    Split,
    Continue,
    Clone,
    Delete,
    Suppress,
    Unlink,
    ClearHtree,
    Recreate,
    Optimize,
    ClearFlag,
    /// A question whose text is the message itself.
    Null,
}

impl Prompt {
    pub fn word(self) -> &'static str {
        match self {
            Prompt::None | Prompt::Null => "",
            Prompt::Fix => "fix",
            Prompt::Clear => "clear",
            Prompt::Relocate => "relocate",
            Prompt::Allocate => "allocate",
            Prompt::Expand => "expand",
            Prompt::Connect => "connect",
            Prompt::Create => "create",
            Prompt::Salvage => "salvage",
            Prompt::Truncate => "truncate",
            Prompt::ClearInode => "clear inode",
            Prompt::Abort => "abort",
            Prompt::Split => "split",
            Prompt::Continue => "continue",
            Prompt::Clone => "clone",
            Prompt::Delete => "delete",
            Prompt::Suppress => "suppress",
            Prompt::Unlink => "unlink",
            Prompt::ClearHtree => "clear htree",
            Prompt::Recreate => "recreate",
            Prompt::Optimize => "optimize",
            Prompt::ClearFlag => "clear flag",
        }
    }
}

impl Prompt {
    /// The question as e2fsck puts it (`Clear` in `Clear? yes`); `Fix`
    /// where e2fsck's text carries the question itself or asks none, so
    /// that every answer pfsck prints names what it answers.
    pub fn question(self) -> &'static str {
        match self {
            Prompt::None | Prompt::Null | Prompt::Fix => "Fix",
            Prompt::Clear => "Clear",
            Prompt::Relocate => "Relocate",
            Prompt::Allocate => "Allocate",
            Prompt::Expand => "Expand",
            Prompt::Connect => "Connect to /lost+found",
            Prompt::Create => "Create",
            Prompt::Salvage => "Salvage",
            Prompt::Truncate => "Truncate",
            Prompt::ClearInode => "Clear inode",
            Prompt::Abort => "Abort",
            Prompt::Split => "Split",
            Prompt::Continue => "Continue",
            Prompt::Clone => "Copy the shared blocks",
            Prompt::Delete => "Delete file",
            Prompt::Suppress => "Suppress messages",
            Prompt::Unlink => "Unlink",
            Prompt::ClearHtree => "Clear HTree index",
            Prompt::Recreate => "Recreate",
            Prompt::Optimize => "Optimize",
            Prompt::ClearFlag => "Clear flag",
        }
    }

    /// What preen (`-p`) prints after a problem it fixed (`CLEARED` in
    /// `NAME: message.  CLEARED.`).
    pub fn preen_done(self) -> &'static str {
        match self {
            Prompt::None | Prompt::Null | Prompt::Fix => "FIXED",
            Prompt::Clear => "CLEARED",
            Prompt::Relocate => "RELOCATED",
            Prompt::Allocate => "ALLOCATED",
            Prompt::Expand => "EXPANDED",
            Prompt::Connect => "RECONNECTED",
            Prompt::Create => "CREATED",
            Prompt::Salvage => "SALVAGED",
            Prompt::Truncate => "TRUNCATED",
            Prompt::ClearInode => "INODE CLEARED",
            Prompt::Abort => "ABORTED",
            Prompt::Split => "SPLIT",
            Prompt::Continue => "CONTINUING",
            Prompt::Clone => "MULTIPLY-CLAIMED BLOCKS CLONED",
            Prompt::Delete => "FILE DELETED",
            Prompt::Suppress => "SUPPRESSED",
            Prompt::Unlink => "UNLINKED",
            Prompt::ClearHtree => "HTREE INDEX CLEARED",
            Prompt::Recreate => "WILL RECREATE",
            Prompt::Optimize => "WILL OPTIMIZE",
            Prompt::ClearFlag => "FLAG CLEARED",
        }
    }
}

/// What an entry of the table is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An inconsistency found on disk.
    Problem,
    /// A pass header.
    Header,
    /// A question asked for a group of problems or after another one.
    Question,
    /// A line printed inside another problem's report (a list item, its
    /// end).
    ListItem,
    /// Information; nothing is wrong with the file system because of it.
    Message,
    /// e2fsck itself failed (memory, I/O, its own consistency).
    Internal,
}

// Flag bits, as e2fsck defines them.
/// `-p` may fix it.
pub const PREEN_OK: u32 = 0x1;
/// Answering no does not leave the file system marked invalid.
pub const NO_OK: u32 = 0x2;
pub const NO_DEFAULT: u32 = 0x4;
pub const MSG_ONLY: u32 = 0x8;
/// The latch group's bits (one group per value).
pub const LATCH_MASK: u32 = 0xff0;
pub const LATCH_BLOCK: u32 = 0x10;
pub const LATCH_BBLOCK: u32 = 0x20;
pub const LATCH_IBITMAP: u32 = 0x30;
pub const LATCH_BBITMAP: u32 = 0x40;
pub const LATCH_RELOC: u32 = 0x50;
pub const LATCH_DBLOCK: u32 = 0x60;
pub const LATCH_LOW_DTIME: u32 = 0x70;
pub const LATCH_TOOBIG: u32 = 0x80;
pub const LATCH_OPTIMIZE_DIR: u32 = 0x90;
pub const LATCH_BG_CHECKSUM: u32 = 0xa0;
pub const LATCH_OPTIMIZE_EXT: u32 = 0xb0;
/// The check stops.
pub const FATAL: u32 = 0x1000;
/// `after` is asked next.
pub const AFTER_CODE: u32 = 0x2000;
/// Not printed while preening.
pub const PREEN_NOMSG: u32 = 0x4000;
pub const NOCOLLATE: u32 = 0x8000;
/// Not printed under `-n`.
pub const NO_NOMSG: u32 = 0x10000;
/// Preen answers no.
pub const PREEN_NO: u32 = 0x20000;
pub const PREEN_NOHDR: u32 = 0x40000;
pub const CONFIG: u32 = 0x80000;
pub const FORCE_NO: u32 = 0x100000;
/// A yes does not count as a correction (exit 1).
pub const NOT_A_FIX: u32 = 0x200000;
pub const HEADER: u32 = 0x400000;

/// One code of e2fsck's table.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub code: u32,
    pub prompt: Prompt,
    pub flags: u32,
    /// The code asked after this one (`AFTER_CODE`), or 0.
    pub after: u32,
    pub kind: Kind,
    /// The objects its message names: `i` inode, `d` directory, `b`
    /// block slot, `g` group.
    pub names: &'static str,
    /// What it means, in pfsck's words.
    pub what: &'static str,
}

impl Entry {
    pub fn preen_ok(&self) -> bool {
        self.flags & PREEN_OK != 0
    }
    pub fn no_ok(&self) -> bool {
        self.flags & NO_OK != 0
    }
    pub fn fatal(&self) -> bool {
        self.flags & FATAL != 0
    }
    /// The pass that reports it (0 before pass 1, 6 after pass 5; 1 for
    /// passes 1B-1E, 3 for 3A).
    pub fn pass(&self) -> u8 {
        crate::narrow::sat8(self.code >> 16)
    }
    /// The names of its flags, for the catalogue.
    pub fn flag_names(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = FLAG_NAMES
            .iter()
            .filter(|(bit, _)| self.flags & bit != 0)
            .map(|&(_, n)| n)
            .collect();
        if let Some(&(_, n)) = LATCH_NAMES
            .iter()
            .find(|(l, _)| *l == self.flags & LATCH_MASK)
        {
            out.push(n);
        }
        out
    }
}

const FLAG_NAMES: &[(u32, &str)] = &[
    (PREEN_OK, "preen-ok"),
    (NO_OK, "no-ok"),
    (NO_DEFAULT, "no-default"),
    (MSG_ONLY, "message-only"),
    (FATAL, "fatal"),
    (AFTER_CODE, "after-code"),
    (PREEN_NOMSG, "preen-nomsg"),
    (NOCOLLATE, "no-collate"),
    (NO_NOMSG, "no-nomsg"),
    (PREEN_NO, "preen-no"),
    (PREEN_NOHDR, "preen-nohdr"),
    (CONFIG, "config"),
    (FORCE_NO, "force-no"),
    (NOT_A_FIX, "not-a-fix"),
    (HEADER, "header"),
];

const LATCH_NAMES: &[(u32, &str)] = &[
    (LATCH_BLOCK, "latch:block"),
    (LATCH_BBLOCK, "latch:bad-block"),
    (LATCH_IBITMAP, "latch:inode-bitmap"),
    (LATCH_BBITMAP, "latch:block-bitmap"),
    (LATCH_RELOC, "latch:relocate"),
    (LATCH_DBLOCK, "latch:dup-block"),
    (LATCH_LOW_DTIME, "latch:low-dtime"),
    (LATCH_TOOBIG, "latch:too-big"),
    (LATCH_OPTIMIZE_DIR, "latch:optimize-dir"),
    (LATCH_BG_CHECKSUM, "latch:bg-checksum"),
    (LATCH_OPTIMIZE_EXT, "latch:optimize-extent"),
];

/// The entry of `code`, if e2fsck's table has it.
pub fn entry(code: u32) -> Option<&'static Entry> {
    TABLE
        .binary_search_by_key(&code, |e| e.code)
        .ok()
        .map(|k| &TABLE[k])
}

macro_rules! table {
    ($( ($code:literal, $prompt:ident, $flags:expr, $after:literal, $kind:ident, $names:literal, $what:literal), )*) => {
        /// e2fsck 1.47.4's table, in code order.
        pub static TABLE: &[Entry] = &[ $( Entry {
            code: $code,
            prompt: Prompt::$prompt,
            flags: $flags,
            after: $after,
            kind: Kind::$kind,
            names: $names,
            what: $what,
        }, )* ];
    };
}

table! {
    (0x000001, Relocate, LATCH_RELOC, 0x000000, Problem, "bg", "a group's block bitmap lies outside its group"),
    (0x000002, Relocate, LATCH_RELOC, 0x000000, Problem, "bg", "a group's inode bitmap lies outside its group"),
    (0x000003, Relocate, LATCH_RELOC, 0x000000, Problem, "bg", "a group's inode table lies outside its group"),
    (0x000004, None, 0, 0x000000, Problem, "", "the superblock cannot be read or is not an ext2/3/4 superblock"),
    (0x000005, Abort, 0, 0x000000, Problem, "b", "the file system is larger than the device"),
    (0x000006, None, FATAL, 0x000000, Problem, "b", "the fragment size differs from the block size"),
    (0x000007, None, AFTER_CODE, 0x000004, Problem, "b", "blocks per group out of range in the superblock"),
    (0x000008, None, AFTER_CODE, 0x000004, Problem, "b", "first data block wrong in the superblock"),
    (0x000009, None, 0, 0x000000, Problem, "", "the file system has no UUID; a new one is set"),
    (0x00000A, None, PREEN_OK | NOCOLLATE, 0x000000, Message, "", "advice before relocating several bitmaps or inode tables"),
    (0x00000B, None, AFTER_CODE, 0x000004, Problem, "", "a superblock field is out of range"),
    (0x00000C, None, FATAL, 0x000000, Internal, "", "the device size cannot be read"),
    (0x00000D, Fix, 0, 0x000000, Problem, "i", "inode count in the superblock wrong"),
    (0x00000E, Clear, 0, 0x000000, Problem, "", "filetype feature on a Hurd file system"),
    (0x00000F, Clear, PREEN_OK, 0x000000, Problem, "i", "the superblock names an unusable journal inode"),
    (0x000010, None, FATAL, 0x000000, Problem, "", "the external journal serves several file systems"),
    (0x000011, None, FATAL, 0x000000, Problem, "", "the external journal cannot be found"),
    (0x000012, None, FATAL, 0x000000, Problem, "", "the external journal's superblock is bad"),
    (0x000013, None, FATAL, 0x000000, Problem, "", "the external journal belongs to another file system"),
    (0x000014, Abort, NO_OK | AFTER_CODE, 0x000015, Problem, "", "the journal superblock is of an unknown type"),
    (0x000015, Fix, PREEN_OK, 0x000000, Problem, "", "the journal superblock is corrupt"),
    (0x000016, Clear, PREEN_OK, 0x000000, Problem, "", "a journal exists but has_journal is clear"),
    (0x000017, Clear, PREEN_OK, 0x000000, Problem, "", "needs_recovery is set but there is no journal"),
    (0x000018, None, 0, 0x000000, Problem, "", "the journal holds transactions but needs_recovery is clear"),
    (0x000019, Null, PREEN_NOMSG, 0x000000, Question, "", "follow-up: clear the journal"),
    (0x00001A, Fix, PREEN_OK | NO_OK, 0x000000, Problem, "", "feature flags on a revision 0 file system"),
    (0x000020, None, 0, 0x000000, Message, "i", "an orphan inode is released (deleted or truncated)"),
    (0x000021, None, 0, 0x000000, Problem, "ib", "an orphan inode maps an illegal block"),
    (0x000022, None, 0, 0x000000, Problem, "ib", "an orphan inode maps a block already freed"),
    (0x000023, None, 0, 0x000000, Problem, "i", "the superblock's orphan list head is not a valid inode"),
    (0x000024, None, 0, 0x000000, Problem, "i", "the orphan list links to an invalid inode"),
    (0x000025, Abort, 0, 0x000000, Problem, "", "the journal superblock has an unknown read-only feature"),
    (0x000026, Abort, 0, 0x000000, Problem, "", "the journal superblock has an unknown incompatible feature"),
    (0x000027, Abort, 0, 0x000000, Problem, "", "the journal superblock version is not supported"),
    (0x000028, None, 0, 0x000000, Problem, "", "the journal is a visible file and is moved to a hidden inode"),
    (0x000029, None, 0, 0x000000, Internal, "", "moving the journal failed"),
    (0x00002A, None, 0, 0x000000, Problem, "", "a version 1 journal superblock carries version 2 fields"),
    (0x00002B, Null, 0, 0x000000, Question, "", "follow-up: replay the journal anyway"),
    (0x00002C, None, 0, 0x000000, Message, "", "the backup superblock lacks needs_recovery; the journal is replayed anyway"),
    (0x00002D, None, 0, 0x000000, Problem, "", "the superblock lacks the copy of the journal inode's block map"),
    (0x00002E, Fix, 0, 0x000000, Problem, "", "reserved GDT blocks without the resize_inode feature"),
    (0x00002F, Clear, 0, 0x000000, Problem, "", "resize inode in use without the resize_inode feature"),
    (0x000030, Recreate, 0, 0x000000, Problem, "", "the resize inode is invalid"),
    (0x000031, Fix, PREEN_OK | NO_OK, 0x000000, Problem, "", "last mount time in the future"),
    (0x000032, Fix, PREEN_OK | NO_OK, 0x000000, Problem, "", "last write time in the future"),
    (0x000033, Fix, PREEN_OK, 0x000000, Problem, "", "the superblock's external journal device hint is wrong"),
    (0x000034, None, 0, 0x000000, Problem, "", "the superblock lacks the directory hash signedness flag"),
    (0x000035, Fix, PREEN_OK | LATCH_BG_CHECKSUM, 0x000000, Problem, "g", "a group descriptor checksum is wrong"),
    (0x000036, Fix, PREEN_OK, 0x000000, Problem, "g", "a group is marked uninitialised without group checksums"),
    (0x000038, Fix, PREEN_OK, 0x000000, Problem, "bg", "a group's unused inode count is invalid"),
    (0x000039, Fix, PREEN_OK, 0x000000, Problem, "", "the last group's block bitmap is marked uninitialised"),
    (0x00003A, None, 0, 0x000000, Problem, "i", "a journal transaction is corrupt; replay stops there"),
    (0x00003B, Clear, PREEN_OK, 0x000000, Problem, "", "the test_fs flag is set"),
    (0x00003C, None, PREEN_OK | NO_OK, 0x000000, Problem, "", "last mount time slightly in the future (clock skew)"),
    (0x00003D, None, PREEN_OK | NO_OK, 0x000000, Problem, "", "last write time slightly in the future (clock skew)"),
    (0x00003E, Fix, PREEN_OK, 0x000000, Question, "", "latch question: group descriptor checksums are invalid"),
    (0x00003F, None, PREEN_NOMSG, 0x000000, Problem, "i", "the superblock's free inode count is out of range"),
    (0x000040, None, PREEN_NOMSG, 0x000000, Problem, "b", "the superblock's free block count is out of range"),
    (0x000041, None, PREEN_OK, 0x000000, Problem, "i", "a quota inode is visible in the directory tree"),
    (0x000042, Clear, PREEN_OK, 0x000000, Problem, "", "the superblock's MMP block number is invalid"),
    (0x000043, Fix, PREEN_OK | NO_OK, 0x000000, Problem, "", "the MMP block's magic is wrong"),
    (0x000044, None, 0, 0x000000, Internal, "", "the library refused to open the file system"),
    (0x000045, None, 0, 0x000000, Internal, "", "the library rejected the group descriptors"),
    (0x000046, Fix, PREEN_OK | NO_OK, 0x000000, Problem, "", "metadata_csum and uninit_bg are both set"),
    (0x000047, Fix, PREEN_OK | NO_OK, 0x000000, Problem, "", "the MMP block's checksum is wrong"),
    (0x000048, Fix, PREEN_OK | NO_OK, 0x000000, Problem, "", "64bit without extents"),
    (0x000049, Clear, 0, 0x000000, Problem, "g", "first_meta_bg beyond the descriptor blocks"),
    (0x00004A, Fix, PREEN_OK, 0x000000, Problem, "", "the external journal superblock checksum is wrong"),
    (0x00004B, Fix, PREEN_OK | NO_OK, 0x000000, Problem, "", "metadata_csum_seed without metadata_csum"),
    (0x00004C, Null, FATAL, 0x000000, Internal, "", "the quota context cannot be set up"),
    (0x00004D, Fix, 0, 0x000000, Problem, "", "the superblock's minimum extra inode size is invalid"),
    (0x00004E, Fix, 0, 0x000000, Problem, "", "the superblock's wanted extra inode size is invalid"),
    (0x00004F, Fix, 0, 0x000000, Problem, "i", "the superblock names an invalid quota inode"),
    (0x000050, None, AFTER_CODE, 0x000004, Problem, "", "the inode count would exceed 2^32"),
    (0x000051, Fix, 0, 0x000000, Problem, "", "resize_inode together with meta_bg"),
    (0x000052, None, 0, 0x000000, Problem, "ib", "the orphan file has a hole; orphan processing stops"),
    (0x000053, None, 0, 0x000000, Problem, "ib", "an orphan file block has a bad magic; orphan processing stops"),
    (0x000054, None, 0, 0x000000, Problem, "ib", "an orphan file block fails its checksum; orphan processing stops"),
    (0x000055, None, 0, 0x000000, Problem, "i", "the orphan file's size is not whole blocks; orphan processing stops"),
    (0x010000, None, HEADER, 0x000000, Header, "", "pass 1 header"),
    (0x010001, Clear, 0, 0x000000, Problem, "", "the root inode is not a directory"),
    (0x010002, Fix, PREEN_OK, 0x000000, Problem, "", "the root inode has a deletion time"),
    (0x010003, Clear, PREEN_OK, 0x000000, Problem, "i", "a reserved inode has an invalid mode"),
    (0x010004, Fix, PREEN_OK, 0x000000, Problem, "i", "a deleted inode has no deletion time"),
    (0x010005, Fix, PREEN_OK, 0x000000, Problem, "i", "an inode in use has a deletion time"),
    (0x010006, Clear, PREEN_OK, 0x000000, Problem, "i", "a directory has no blocks"),
    (0x010007, Relocate, 0, 0x000000, Problem, "bg", "a group's block bitmap overlaps other metadata"),
    (0x010008, Relocate, 0, 0x000000, Problem, "bg", "a group's inode bitmap overlaps other metadata"),
    (0x010009, Relocate, 0, 0x000000, Problem, "bg", "a group's inode table overlaps other metadata"),
    (0x01000A, Relocate, 0, 0x000000, Problem, "bg", "a group's block bitmap is on a bad block"),
    (0x01000B, Relocate, 0, 0x000000, Problem, "bg", "a group's inode bitmap is on a bad block"),
    (0x01000C, Fix, PREEN_OK, 0x000000, Problem, "i", "an inode's i_size is wrong"),
    (0x01000D, Fix, PREEN_OK, 0x000000, Problem, "i", "an inode's i_blocks is wrong"),
    (0x01000E, Clear, LATCH_BLOCK, 0x000000, Problem, "ib", "an inode maps an illegal block"),
    (0x01000F, Clear, LATCH_BLOCK, 0x000000, Problem, "ib", "an inode maps a block of file system metadata"),
    (0x010010, Clear, 0, 0x000000, Question, "i", "latch question: an inode has illegal blocks"),
    (0x010011, ClearInode, NO_OK, 0x000000, Problem, "i", "an inode has too many illegal blocks"),
    (0x010012, Clear, LATCH_BBLOCK, 0x000000, Problem, "b", "the bad block inode maps an illegal block"),
    (0x010013, Clear, 0, 0x000000, Question, "", "latch question: the bad block inode has illegal blocks"),
    (0x010014, None, 0, 0x000000, Message, "", "preen stops: multiply-claimed or bad blocks in use"),
    (0x010015, Clear, LATCH_BBLOCK, 0x000000, Problem, "b", "a bad block is an indirect block of the bad block inode"),
    (0x010016, Continue, PREEN_NOMSG, 0x000000, Question, "", "the bad block inode looks corrupt; go on?"),
    (0x010017, None, AFTER_CODE, 0x010018, Message, "", "a bad block under critical metadata cannot be fixed"),
    (0x010018, Clear, PREEN_NOMSG, 0x000000, Question, "", "drop the block from the bad block list?"),
    (0x010019, None, AFTER_CODE, 0x010017, Problem, "b", "the primary superblock is on the bad block list"),
    (0x01001A, None, AFTER_CODE, 0x010017, Problem, "b", "a primary descriptor block is on the bad block list"),
    (0x01001B, None, PREEN_OK | PREEN_NOMSG, 0x000000, Problem, "bg", "a backup superblock is on a bad block"),
    (0x01001C, None, PREEN_OK | PREEN_NOMSG, 0x000000, Problem, "bg", "a backup descriptor block is on a bad block"),
    (0x01001D, None, PREEN_OK, 0x000000, Internal, "b", "bad block processing claimed a block without reason"),
    (0x01001E, None, PREEN_OK, 0x000000, Internal, "g", "no room to relocate group metadata"),
    (0x01001F, None, PREEN_OK, 0x000000, Internal, "", "no memory to relocate group metadata"),
    (0x010020, None, PREEN_OK, 0x000000, Message, "bg", "group metadata relocated from one place to another"),
    (0x010021, None, PREEN_OK, 0x000000, Message, "g", "group metadata placed anew"),
    (0x010022, None, PREEN_OK, 0x000000, Internal, "b", "read error while relocating metadata"),
    (0x010023, None, PREEN_OK, 0x000000, Internal, "b", "write error while relocating metadata"),
    (0x010024, None, FATAL, 0x000000, Internal, "", "inode bitmap allocation failed"),
    (0x010025, None, FATAL, 0x000000, Internal, "", "block bitmap allocation failed"),
    (0x010026, None, FATAL, 0x000000, Internal, "", "link count table allocation failed"),
    (0x010027, None, FATAL, 0x000000, Internal, "", "directory block list allocation failed"),
    (0x010028, None, FATAL, 0x000000, Internal, "i", "the inode scan failed"),
    (0x010029, None, FATAL, 0x000000, Internal, "i", "walking an inode's blocks failed"),
    (0x01002A, None, FATAL, 0x000000, Internal, "i", "storing a link count failed"),
    (0x01002B, None, FATAL, 0x000000, Internal, "ib", "storing a directory block failed"),
    (0x01002C, None, FATAL, 0x000000, Internal, "i", "reading an inode failed"),
    (0x01002D, Suppress, NO_OK, 0x000000, Question, "", "suppress further messages of this kind?"),
    (0x01002F, Clear, 0, 0x000000, Problem, "i", "imagic flag without the feature"),
    (0x010030, Clear, PREEN_OK | NO_OK | PREEN_NO, 0x000000, Problem, "i", "a special file or symlink is immutable or append-only"),
    (0x010032, Fix, PREEN_OK, 0x000000, Problem, "i", "a device, socket or FIFO has a non-zero size"),
    (0x010033, Fix, PREEN_OK | NO_OK, 0x000000, Problem, "", "feature flags on a revision 0 file system (pass 1)"),
    (0x010034, Clear, PREEN_OK, 0x000000, Problem, "", "the journal inode is unused but holds data"),
    (0x010035, Fix, PREEN_OK, 0x000000, Problem, "", "the journal inode is not a regular file"),
    (0x010036, Fix, LATCH_LOW_DTIME, 0x000000, Problem, "i", "an inode left over from the orphan list (deletion time below the inode count)"),
    (0x010037, Fix, 0, 0x000000, Question, "", "latch question: inodes of a broken orphan list found"),
    (0x010038, None, FATAL, 0x000000, Internal, "", "reference count table allocation failed"),
    (0x010039, Clear, 0, 0x000000, Problem, "ib", "an extended attribute block cannot be read"),
    (0x01003A, Clear, 0, 0x000000, Problem, "ib", "an inode's extended attribute block is invalid"),
    (0x01003B, None, FATAL, 0x000000, Internal, "b", "reading an extended attribute block failed while fixing counts"),
    (0x01003C, Fix, 0, 0x000000, Problem, "b", "an extended attribute block's reference count is wrong"),
    (0x01003D, None, FATAL, 0x000000, Internal, "b", "writing an extended attribute block failed"),
    (0x01003E, Clear, 0, 0x000000, Problem, "b", "an extended attribute block says it spans several blocks"),
    (0x01003F, None, FATAL, 0x000000, Internal, "", "attribute region allocation failed"),
    (0x010040, Clear, 0, 0x000000, Problem, "b", "an extended attribute block has overlapping entries"),
    (0x010041, Clear, 0, 0x000000, Problem, "b", "an extended attribute block has an invalid name"),
    (0x010042, Clear, 0, 0x000000, Problem, "b", "an extended attribute block has an invalid value"),
    (0x010043, Truncate, 0, 0x000000, Question, "i", "latch question: an inode is too big"),
    (0x010044, Clear, LATCH_TOOBIG, 0x000000, Problem, "b", "a block makes a directory too big"),
    (0x010045, Clear, LATCH_TOOBIG, 0x000000, Problem, "b", "a block makes a file too big"),
    (0x010046, Clear, LATCH_TOOBIG, 0x000000, Problem, "b", "a block makes a symlink too big"),
    (0x010047, ClearHtree, PREEN_OK, 0x000000, Problem, "i", "INDEX_FL without dir_index"),
    (0x010048, ClearHtree, PREEN_OK, 0x000000, Problem, "i", "INDEX_FL on a non-directory"),
    (0x010049, ClearHtree, PREEN_OK, 0x000000, Problem, "i", "an htree root is invalid"),
    (0x01004A, ClearHtree, PREEN_OK, 0x000000, Problem, "i", "an htree uses an unknown hash version"),
    (0x01004B, ClearHtree, PREEN_OK, 0x000000, Problem, "i", "an htree root has an incompatible flag"),
    (0x01004C, ClearHtree, PREEN_OK, 0x000000, Problem, "i", "an htree is too deep"),
    (0x01004D, Clear, LATCH_BBLOCK, 0x000000, Problem, "b", "the bad block inode's indirect block overlaps metadata"),
    (0x01004E, Continue, 0, 0x000000, Internal, "", "recreating the resize inode failed"),
    (0x01004F, Fix, PREEN_OK, 0x000000, Problem, "i", "an inode's extra size is invalid"),
    (0x010050, Clear, PREEN_OK, 0x000000, Problem, "i", "an in-inode attribute has an invalid name length"),
    (0x010051, Clear, PREEN_OK, 0x000000, Problem, "i", "an in-inode attribute has an invalid value offset"),
    (0x010052, Clear, PREEN_OK, 0x000000, Problem, "i", "an in-inode attribute names a value block"),
    (0x010053, Clear, PREEN_OK, 0x000000, Problem, "i", "an in-inode attribute has an invalid value size"),
    (0x010054, Clear, PREEN_OK, 0x000000, Problem, "i", "an in-inode attribute has an invalid hash"),
    (0x010055, Fix, 0, 0x000000, Problem, "i", "a non-directory inode holds a directory block"),
    (0x010056, ClearInode, 0, 0x000000, Problem, "i", "an extent tree cannot be read"),
    (0x010057, ClearInode, 0, 0x000000, Problem, "ib", "walking an extent tree failed"),
    (0x010058, Clear, 0, 0x000000, Problem, "ib", "an extent starts at an invalid block"),
    (0x010059, Clear, 0, 0x000000, Problem, "ib", "an extent runs past the file system"),
    (0x01005A, Clear, 0, 0x000000, Problem, "i", "EXTENTS_FL without the extent feature"),
    (0x01005B, Fix, 0, 0x000000, Problem, "i", "an extent-mapped inode without the extent feature"),
    (0x01005C, Fix, PREEN_OK, 0x000000, Problem, "i", "an extent-mapped inode lacks EXTENTS_FL"),
    (0x01005D, Clear, 0, 0x000000, Problem, "i", "a fast symlink has EXTENTS_FL"),
    (0x01005E, Clear, 0, 0x000000, Problem, "ib", "extents out of order"),
    (0x01005F, Clear, 0, 0x000000, Problem, "ib", "an extent tree node is invalid"),
    (0x010061, None, FATAL, 0x000000, Internal, "", "subcluster bitmap conversion failed"),
    (0x010062, Clear, PREEN_OK, 0x000000, Problem, "", "a quota inode is not a regular file"),
    (0x010063, Clear, PREEN_OK, 0x000000, Problem, "", "a quota inode is unused but holds data"),
    (0x010064, Clear, PREEN_OK, 0x000000, Problem, "", "a quota inode is visible to users"),
    (0x010065, Clear, 0, 0x000000, Problem, "", "the bad block inode is invalid"),
    (0x010066, Clear, 0, 0x000000, Problem, "ib", "an extent has zero length"),
    (0x010067, Clear, 0, 0x000000, Problem, "i", "an inode holds garbage"),
    (0x010068, Fix, PREEN_OK, 0x000000, Problem, "i", "only an inode's checksum is wrong"),
    (0x010069, Clear, 0, 0x000000, Problem, "i", "in-inode attributes overlap"),
    (0x01006A, Fix, 0, 0x000000, Problem, "ib", "only an extent block's checksum is wrong"),
    (0x01006C, Fix, 0, 0x000000, Problem, "ib", "only an extended attribute block's checksum is wrong"),
    (0x01006D, Fix, 0, 0x000000, Problem, "ib", "an extent index's start differs from its child's first extent"),
    (0x01006E, Clear, 0, 0x000000, Problem, "ib", "an extent ends past the allowed range"),
    (0x01006F, Fix, PREEN_OK, 0x000000, Problem, "i", "an inline-data inode without the inline_data feature"),
    (0x010070, Clear, 0, 0x000000, Problem, "i", "INLINE_DATA_FL without the inline_data feature"),
    (0x010071, None, 0, 0x000000, Message, "ib", "an inode maps critical metadata; its block checks are skipped"),
    (0x010072, Fix, 0, 0x000000, Problem, "ib", "a directory block belongs at another logical block"),
    (0x010073, Fix, PREEN_OK, 0x000000, Problem, "i", "a directory extent is marked uninitialised"),
    (0x010074, None, 0, 0x000000, Problem, "ib", "a block breaks the cluster allocation rules"),
    (0x010075, Truncate, 0, 0x000000, Problem, "i", "INLINE_DATA_FL without the inline data attribute"),
    (0x010076, Clear, PREEN_OK | NO_OK | PREEN_NO, 0x000000, Problem, "i", "a device, socket or FIFO has extents or inline data"),
    (0x010077, Fix, 0, 0x000000, Problem, "i", "an extent header in an inode flagged inline"),
    (0x010078, Fix, 0, 0x000000, Problem, "i", "inline data in an inode flagged extent-mapped"),
    (0x010079, Fix, 0, 0x000000, Problem, "i", "a block map in an inode flagged inline and extent-mapped"),
    (0x01007A, ClearInode, 0, 0x000000, Problem, "i", "inline and extent flags with an unusable i_block"),
    (0x01007B, ClearInode, 0, 0x000000, Problem, "", "the bad block list names a block of its own inode"),
    (0x01007C, None, FATAL, 0x000000, Internal, "", "extent region allocation failed"),
    (0x01007D, Clear, 0, 0x000000, Problem, "ib", "two extents map the same logical block"),
    (0x01007E, None, FATAL, 0x000000, Internal, "", "encrypted inode list allocation failed"),
    (0x01007F, Fix, PREEN_OK | NO_OK | PREEN_NO, 0x000000, Problem, "ib", "an extent tree is deeper than it needs to be"),
    (0x010080, Fix, 0, 0x000000, Problem, "i", "a block-mapped inode on bigalloc"),
    (0x010081, ClearInode, 0, 0x000000, Problem, "i", "an inode's extent header is corrupt"),
    (0x010082, Fix, PREEN_OK | NO_OK, 0x000000, Problem, "i", "timestamps past 2310 that are probably before 1970"),
    (0x010083, Clear, PREEN_OK, 0x000000, Problem, "i", "an attribute names an illegal EA inode"),
    (0x010085, Clear, PREEN_OK, 0x000000, Problem, "i", "an attribute's EA inode lacks EA_INODE_FL (entry dropped)"),
    (0x010086, Fix, PREEN_OK, 0x000000, Problem, "i", "an attribute's EA inode lacks EA_INODE_FL (flag set)"),
    (0x010087, Clear, PREEN_OK, 0x000000, Problem, "i", "an extent of a non-regular file is marked uninitialised"),
    (0x010088, ClearFlag, 0, 0x000000, Problem, "i", "the casefold flag on a non-directory"),
    (0x010089, ClearFlag, 0, 0x000000, Problem, "i", "the casefold flag without the casefold feature"),
    (0x01008A, ClearFlag, 0, 0x000000, Problem, "i", "the encrypt flag without an encryption context"),
    (0x01008B, ClearInode, 0, 0x000000, Problem, "i", "an encryption context is corrupt"),
    (0x01008D, ClearHtree, PREEN_OK, 0x000000, Problem, "i", "an htree should use SipHash"),
    (0x01008E, ClearHtree, PREEN_OK, 0x000000, Problem, "i", "an htree uses SipHash where it must not"),
    (0x01008F, Clear, PREEN_OK, 0x000000, Problem, "i", "the orphan file is not a regular file"),
    (0x010090, Clear, PREEN_OK, 0x000000, Problem, "i", "the orphan file inode is unused but holds data"),
    (0x010091, ClearFlag, 0, 0x000000, Problem, "i", "EA_INODE_FL on a non-regular file"),
    (0x010092, Fix, PREEN_OK, 0x000000, Problem, "i", "an inode names an EA inode without the ea_inode feature"),
    (0x011000, None, HEADER, 0x000000, Header, "", "pass 1B header"),
    (0x011001, None, 0, 0x000000, Problem, "i", "an inode has multiply-claimed blocks"),
    (0x011002, None, PREEN_NOHDR | LATCH_DBLOCK, 0x000000, ListItem, "b", "a multiply-claimed block in the list"),
    (0x011003, None, PREEN_NOHDR, 0x000000, ListItem, "", "end of the list of multiply-claimed blocks"),
    (0x011004, None, FATAL, 0x000000, Internal, "i", "the inode scan failed (pass 1B)"),
    (0x011005, None, FATAL, 0x000000, Internal, "", "duplicate inode bitmap allocation failed"),
    (0x011006, None, 0, 0x000000, Internal, "i", "walking an inode's blocks failed (pass 1B)"),
    (0x011007, None, 0, 0x000000, Internal, "ib", "adjusting an attribute block's count failed"),
    (0x011008, None, PREEN_NOHDR | LATCH_DBLOCK, 0x000000, ListItem, "b", "a range of multiply-claimed blocks in the list"),
    (0x012000, None, HEADER, 0x000000, Header, "", "pass 1C header"),
    (0x013000, None, HEADER, 0x000000, Header, "", "pass 1D header"),
    (0x013001, None, 0, 0x000000, Message, "i", "a file sharing blocks, with the files it shares with"),
    (0x013002, None, 0, 0x000000, Message, "i", "one of the files sharing blocks"),
    (0x013003, None, 0, 0x000000, Message, "", "blocks shared with file system metadata"),
    (0x013004, None, 0, 0x000000, Message, "", "how many inodes share blocks"),
    (0x013005, None, 0, 0x000000, Message, "", "the shared blocks were already dealt with"),
    (0x013006, Clone, NO_OK, 0x000000, Question, "", "clone the shared blocks?"),
    (0x013007, Delete, 0, 0x000000, Question, "", "delete the file?"),
    (0x013008, None, 0, 0x000000, Internal, "", "cloning failed"),
    (0x014000, None, PREEN_NOMSG | HEADER, 0x000000, Header, "", "pass 1E header"),
    (0x014001, None, 0, 0x000000, Internal, "i", "rebuilding an extent tree failed"),
    (0x014002, None, MSG_ONLY, 0x000000, ListItem, "", "rebuilding extent trees (list header)"),
    (0x014003, None, PREEN_NOHDR | LATCH_OPTIMIZE_EXT, 0x000000, ListItem, "i", "an inode whose extent tree is rebuilt"),
    (0x014004, None, PREEN_NOHDR, 0x000000, ListItem, "", "end of the rebuilt list"),
    (0x014005, None, FATAL, 0x000000, Internal, "b", "extent tree deeper than the rebuild allows"),
    // Pass 1E's optimisations: not detected nor made by pfsck; why, with
    // e2fsck's rule, in WHY_NOT of tests/suite/problems_doc.rs
    // (docs/problems.md).
    (0x014006, Optimize, PREEN_OK | NO_OK | PREEN_NO | NOT_A_FIX, 0x000000, Problem, "ib", "an extent tree could be shorter"),
    (0x014007, Optimize, PREEN_OK | NO_OK | PREEN_NO | NOT_A_FIX, 0x000000, Problem, "ib", "an extent tree could be narrower"),
    (0x020000, None, HEADER, 0x000000, Header, "", "pass 2 header"),
    (0x020001, Fix, 0, 0x000000, Problem, "i", "'.' names the wrong inode"),
    (0x020002, Clear, 0, 0x000000, Problem, "i", "an entry names an invalid inode number"),
    (0x020003, Clear, PREEN_OK, 0x000000, Problem, "i", "an entry names a deleted or unused inode"),
    (0x020004, Clear, 0, 0x000000, Problem, "i", "an entry is a link to '.'"),
    (0x020005, Clear, 0, 0x000000, Problem, "i", "an entry names an inode in a bad block"),
    (0x020006, Clear, 0, 0x000000, Problem, "i", "an entry is a second link to a directory"),
    (0x020007, Clear, 0, 0x000000, Problem, "i", "an entry is a link to the root"),
    (0x020008, Fix, 0, 0x000000, Problem, "i", "an entry name has illegal characters"),
    (0x020009, Fix, 0, 0x000000, Problem, "i", "a directory lacks '.'"),
    (0x02000A, Fix, 0, 0x000000, Problem, "i", "a directory lacks '..'"),
    (0x02000B, Fix, 0, 0x000000, Problem, "i", "the first entry is not '.'"),
    (0x02000C, Fix, 0, 0x000000, Problem, "i", "the second entry is not '..'"),
    (0x02000D, Clear, 0, 0x000000, Problem, "i", "i_faddr is set"),
    (0x02000E, Clear, 0, 0x000000, Problem, "i", "i_file_acl is set where it must not be"),
    (0x02000F, Clear, 0, 0x000000, Problem, "i", "a directory's i_size_high is set"),
    (0x020010, Clear, 0, 0x000000, Problem, "i", "i_frag is set"),
    (0x020011, Clear, 0, 0x000000, Problem, "i", "i_fsize is set"),
    (0x020012, Clear, 0, 0x000000, Problem, "i", "an inode has an invalid mode"),
    (0x020013, Salvage, 0, 0x000000, Problem, "i", "a directory block is corrupt"),
    (0x020014, Truncate, 0, 0x000000, Problem, "i", "an entry's name is too long"),
    (0x020015, Allocate, 0, 0x000000, Problem, "i", "a directory has a hole"),
    (0x020016, Fix, 0, 0x000000, Problem, "i", "'.' is not NUL-terminated"),
    (0x020017, Fix, 0, 0x000000, Problem, "i", "'..' is not NUL-terminated"),
    (0x020018, Clear, 0, 0x000000, Problem, "i", "an invalid character device"),
    (0x020019, Clear, 0, 0x000000, Problem, "i", "an invalid block device"),
    (0x02001A, Fix, 0, 0x000000, Problem, "i", "a second '.' entry"),
    (0x02001B, Fix, 0, 0x000000, Problem, "i", "a second '..' entry"),
    (0x02001C, None, FATAL, 0x000000, Internal, "i", "directory information missing"),
    (0x02001D, Fix, 0, 0x000000, Problem, "i", "the last entry's rec_len is wrong"),
    (0x02001E, None, FATAL, 0x000000, Internal, "", "link count table allocation failed (pass 2)"),
    (0x02001F, None, FATAL, 0x000000, Internal, "", "walking the directory blocks failed"),
    (0x020020, Continue, 0, 0x000000, Problem, "ib", "a directory block cannot be read"),
    (0x020021, Continue, 0, 0x000000, Internal, "ib", "writing a directory block failed"),
    (0x020022, None, 0, 0x000000, Internal, "i", "allocating a directory block failed"),
    (0x020023, None, FATAL, 0x000000, Internal, "i", "deallocating an inode failed"),
    (0x020024, Split, NO_OK, 0x000000, Problem, "i", "'.' spans more than its record; split it"),
    (0x020025, Clear, 0, 0x000000, Problem, "i", "an invalid FIFO"),
    (0x020026, Clear, 0, 0x000000, Problem, "i", "an invalid socket"),
    (0x020027, None, PREEN_OK | NO_OK | NO_NOMSG, 0x000000, Problem, "i", "an entry's file type is unset"),
    (0x020028, Fix, 0, 0x000000, Problem, "i", "an entry's file type is wrong"),
    (0x020029, Clear, PREEN_OK, 0x000000, Problem, "i", "an entry has a file type without the filetype feature"),
    (0x020030, Clear, 0, 0x000000, Problem, "i", "an entry has an empty name"),
    (0x020031, Clear, 0, 0x000000, Problem, "i", "a symlink is invalid"),
    (0x020032, Clear, 0, 0x000000, Problem, "i", "an inode's extended attribute block number is invalid"),
    (0x020033, Fix, PREEN_OK, 0x000000, Problem, "", "large files without large_file"),
    (0x020034, None, 0, 0x000000, Problem, "d", "an htree block is not referenced"),
    (0x020035, None, 0, 0x000000, Problem, "d", "an htree block is referenced twice"),
    (0x020036, None, 0, 0x000000, Problem, "d", "an htree block's minimum hash is wrong"),
    (0x020037, None, 0, 0x000000, Problem, "d", "an htree block's maximum hash is wrong"),
    (0x020038, ClearHtree, 0, 0x000000, Problem, "d", "an htree directory is invalid"),
    (0x020039, Fix, PREEN_OK, 0x000000, Problem, "", "large directories without large_dir"),
    (0x02003A, ClearHtree, 0, 0x000000, Problem, "db", "an htree names an invalid block"),
    (0x02003B, None, FATAL, 0x000000, Internal, "ib", "adjusting an attribute block's count failed (pass 2)"),
    (0x02003C, ClearHtree, PREEN_OK, 0x000000, Problem, "d", "an htree root node is invalid"),
    (0x02003D, ClearHtree, PREEN_OK, 0x000000, Problem, "d", "an htree node's limit is wrong"),
    (0x02003E, ClearHtree, PREEN_OK, 0x000000, Problem, "d", "an htree node's count is wrong"),
    (0x02003F, ClearHtree, PREEN_OK, 0x000000, Problem, "d", "an htree node's hashes are out of order"),
    (0x020040, None, 0, 0x000000, Problem, "d", "an htree node is at the wrong depth"),
    (0x020041, Clear, 0, 0x000000, Problem, "i", "a duplicate entry"),
    (0x020042, Null, 0, 0x000000, Question, "i", "follow-up: rename a non-unique name"),
    (0x020043, None, 0, 0x000000, Problem, "i", "a duplicate entry; the directory is rebuilt"),
    (0x020044, Clear, 0, 0x000000, Problem, "i", "i_blocks_hi is set without huge_file"),
    (0x020045, ClearHtree, 0, 0x000000, Problem, "d", "an htree directory has a block outside its index"),
    (0x020046, Fix, PREEN_OK, 0x000000, Problem, "ig", "an entry names an inode in a group marked INODE_UNINIT"),
    (0x020047, Fix, PREEN_OK, 0x000000, Problem, "ig", "an entry names an inode in its group's unused area"),
    (0x020048, Clear, PREEN_OK, 0x000000, Problem, "i", "i_file_acl_hi is set without 64bit"),
    (0x020049, ClearHtree, PREEN_OK, 0x000000, Problem, "d", "an htree root fails its checksum"),
    (0x02004A, ClearHtree, PREEN_OK, 0x000000, Problem, "d", "an htree node fails its checksum"),
    (0x02004C, Fix, PREEN_OK, 0x000000, Problem, "i", "a directory block has no checksum tail"),
    (0x02004D, Fix, PREEN_OK, 0x000000, Problem, "i", "only a directory block's checksum is wrong"),
    (0x02004E, Fix, 0, 0x000000, Problem, "i", "an inline directory's size is not a multiple of 4"),
    (0x02004F, Truncate, 0, 0x000000, Problem, "i", "an inline directory's size cannot be fixed"),
    (0x020050, Clear, 0, 0x000000, Problem, "i", "an encrypted name is too short"),
    (0x020051, Clear, 0, 0x000000, Problem, "i", "an encrypted directory names an unencrypted inode"),
    (0x020052, Clear, 0, 0x000000, Problem, "i", "an encrypted directory names an inode of another policy"),
    (0x020053, Fix, 0, 0x000000, Problem, "i", "an entry name is not valid UTF-8"),
    (0x020054, Clear, 0, 0x000000, Problem, "i", "a duplicate name after case folding"),
    (0x020055, Clear, 0, 0x000000, Problem, "i", "an entry names an EA inode"),
    (0x030000, None, HEADER, 0x000000, Header, "", "pass 3 header"),
    (0x030001, Allocate, 0, 0x000000, Problem, "", "the root inode is not allocated"),
    (0x030002, Expand, 0, 0x000000, Problem, "", "lost+found is full"),
    (0x030003, Connect, 0, 0x000000, Problem, "i", "a directory is not connected"),
    (0x030004, Create, PREEN_OK, 0x000000, Problem, "", "lost+found is missing"),
    (0x030005, Fix, 0, 0x000000, Problem, "i", "a directory's '..' is wrong"),
    (0x030006, None, 0, 0x000000, Message, "", "lost+found is unusable; nothing is reconnected"),
    (0x030007, None, 0, 0x000000, Internal, "", "lost+found cannot be expanded"),
    (0x030008, None, 0, 0x000000, Internal, "i", "an inode cannot be reconnected"),
    (0x030009, None, 0, 0x000000, Internal, "", "looking up lost+found failed"),
    (0x03000A, None, 0, 0x000000, Internal, "", "no block for a new lost+found"),
    (0x03000B, None, 0, 0x000000, Internal, "", "no inode for a new lost+found"),
    (0x03000C, None, 0, 0x000000, Internal, "", "a new directory block cannot be made"),
    (0x03000D, None, 0, 0x000000, Internal, "", "writing lost+found's block failed"),
    (0x03000E, None, 0, 0x000000, Internal, "i", "adjusting a link count failed"),
    (0x03000F, None, 0, 0x000000, Internal, "i", "a parent cannot be fixed"),
    (0x030010, None, 0, 0x000000, Internal, "i", "a parent's entry cannot be found"),
    (0x030011, None, FATAL, 0x000000, Internal, "", "inode bitmap allocation failed (pass 3)"),
    (0x030012, None, FATAL, 0x000000, Internal, "", "creating the root directory failed"),
    (0x030013, None, 0, 0x000000, Internal, "", "creating lost+found failed"),
    (0x030014, None, FATAL, 0x000000, Message, "", "the root inode is not a directory; the check stops"),
    (0x030015, None, FATAL, 0x000000, Message, "", "the check cannot go on without a root directory"),
    (0x030016, None, FATAL, 0x000000, Internal, "i", "directory information missing (pass 3)"),
    (0x030017, Unlink, 0, 0x000000, Problem, "i", "lost+found is not a directory"),
    (0x030018, Clear, 0, 0x000000, Problem, "", "lost+found has inline data"),
    (0x030019, Null, 0, 0x000000, Question, "", "follow-up: put lost files in the root directory"),
    (0x03001A, None, 0, 0x000000, Message, "", "no space to reconnect lost files"),
    (0x03001B, Clear, 0, 0x000000, Problem, "", "lost+found is encrypted"),
    (0x03001D, Connect, 0, 0x000000, Problem, "i", "a directory is in a loop"),
    (0x031000, None, PREEN_NOMSG | HEADER, 0x000000, Header, "", "pass 3A header"),
    (0x031001, None, 0, 0x000000, Internal, "", "listing directories to rebuild failed"),
    (0x031002, None, 0, 0x000000, Internal, "d", "rebuilding a directory failed"),
    (0x031003, None, MSG_ONLY, 0x000000, ListItem, "", "rebuilding directories (list header)"),
    (0x031004, None, PREEN_NOHDR | LATCH_OPTIMIZE_DIR, 0x000000, ListItem, "d", "a directory being rebuilt"),
    (0x031005, None, PREEN_NOHDR, 0x000000, ListItem, "", "end of the rebuilt list"),
    (0x040000, None, HEADER, 0x000000, Header, "", "pass 4 header"),
    (0x040001, Clear, PREEN_OK | NO_OK, 0x000000, Problem, "i", "an empty inode is not in any directory"),
    (0x040002, Connect, 0, 0x000000, Problem, "i", "an inode is not in any directory"),
    (0x040003, Fix, PREEN_OK, 0x000000, Problem, "i", "an inode's link count is wrong"),
    (0x040004, None, 0, 0x000000, Internal, "i", "link counts differ in memory (e2fsck bug or mounted file system)"),
    (0x040005, Fix, PREEN_OK, 0x000000, Problem, "i", "an EA inode's reference count is wrong"),
    (0x040006, Fix, 0, 0x000000, Problem, "", "a directory exceeds the link limit without dir_nlink"),
    (0x040007, Fix, PREEN_OK, 0x000000, Problem, "i", "a directory's overflowed link count could be exact"),
    (0x040008, Clear, PREEN_OK, 0x000000, Problem, "i", "an unreferenced regular file has EA_INODE_FL"),
    (0x050000, None, HEADER, 0x000000, Header, "", "pass 5 header"),
    (0x050001, Fix, PREEN_OK, 0x000000, Problem, "", "the inode bitmap's padding is not set"),
    (0x050002, Fix, PREEN_OK, 0x000000, Problem, "", "the block bitmap's padding is not set"),
    (0x050003, None, PREEN_OK | PREEN_NOMSG, 0x000000, Question, "", "latch question: block bitmap differences"),
    (0x050004, None, PREEN_OK | PREEN_NOMSG | LATCH_BBITMAP, 0x000000, Problem, "b", "a block marked in use is free"),
    (0x050005, None, PREEN_OK | PREEN_NOMSG | LATCH_BBITMAP, 0x000000, Problem, "b", "a block in use is marked free"),
    (0x050006, Fix, PREEN_OK | PREEN_NOMSG, 0x000000, ListItem, "", "end of the block bitmap differences"),
    (0x050007, None, PREEN_OK | PREEN_NOMSG, 0x000000, Question, "", "latch question: inode bitmap differences"),
    (0x050008, None, PREEN_OK | PREEN_NOMSG | LATCH_IBITMAP, 0x000000, Problem, "i", "an inode marked in use is free"),
    (0x050009, None, PREEN_OK | PREEN_NOMSG | LATCH_IBITMAP, 0x000000, Problem, "i", "an inode in use is marked free"),
    (0x05000A, Fix, PREEN_OK | PREEN_NOMSG, 0x000000, ListItem, "", "end of the inode bitmap differences"),
    (0x05000B, Fix, PREEN_OK | PREEN_NOMSG, 0x000000, Problem, "ig", "a group's free inode count is wrong"),
    (0x05000C, Fix, PREEN_OK | PREEN_NOMSG, 0x000000, Problem, "ig", "a group's directory count is wrong"),
    (0x05000D, Fix, PREEN_OK | NO_OK | PREEN_NOMSG, 0x000000, Problem, "i", "the free inode count is wrong"),
    (0x05000E, Fix, PREEN_OK | PREEN_NOMSG, 0x000000, Problem, "bg", "a group's free block count is wrong"),
    (0x05000F, Fix, PREEN_OK | NO_OK | PREEN_NOMSG, 0x000000, Problem, "b", "the free block count is wrong"),
    (0x050010, None, FATAL, 0x000000, Internal, "ib", "bitmap ends differ from the computed ones"),
    (0x050011, None, FATAL, 0x000000, Internal, "", "adjusting the end of a bitmap failed"),
    (0x050012, None, FATAL, 0x000000, Internal, "", "replacing the inode bitmap failed"),
    (0x050013, None, FATAL, 0x000000, Internal, "", "replacing the block bitmap failed"),
    (0x050014, None, PREEN_OK | PREEN_NOMSG | LATCH_BBITMAP, 0x000000, Problem, "b", "a range of blocks marked in use is free"),
    (0x050015, None, PREEN_OK | PREEN_NOMSG | LATCH_BBITMAP, 0x000000, Problem, "b", "a range of blocks in use is marked free"),
    (0x050016, None, PREEN_OK | PREEN_NOMSG | LATCH_IBITMAP, 0x000000, Problem, "i", "a range of inodes marked in use is free"),
    (0x050017, None, PREEN_OK | PREEN_NOMSG | LATCH_IBITMAP, 0x000000, Problem, "i", "a range of inodes in use is marked free"),
    (0x050018, Fix, PREEN_OK, 0x000000, Problem, "g", "a group marked BLOCK_UNINIT has blocks in use"),
    (0x050019, Fix, PREEN_OK, 0x000000, Problem, "g", "a group marked INODE_UNINIT has inodes in use"),
    (0x05001A, Fix, PREEN_OK | LATCH_IBITMAP, 0x000000, Problem, "g", "a group's inode bitmap fails its checksum"),
    (0x05001B, Fix, PREEN_OK | LATCH_BBITMAP, 0x000000, Problem, "g", "a group's block bitmap fails its checksum"),
    (0x060001, Null, PREEN_OK | NO_OK, 0x000000, Question, "", "recreate the journal"),
    (0x060002, Null, PREEN_OK, 0x000000, Problem, "", "quota usage differs from the quota files (quota files rewritten)"),
    (0x060003, Null, FATAL, 0x000000, Internal, "", "setting group checksums failed"),
    (0x060004, Null, FATAL, 0x000000, Internal, "", "writing the file system failed"),
    (0x060005, Null, FATAL, 0x000000, Internal, "", "flushing the device failed"),
    (0x060006, Null, 0, 0x000000, Internal, "", "writing quota information failed"),
    (0x060007, Clear, PREEN_OK, 0x000000, Problem, "", "an orphan file without a journal"),
    (0x060008, None, 0, 0x000000, Internal, "", "truncating the orphan file failed"),
    (0x060009, Recreate, PREEN_OK, 0x000000, Problem, "", "the orphan file cannot be set up"),
    (0x06000A, None, 0, 0x000000, Message, "", "the orphan file's bitmaps are unusable"),
    (0x06000B, None, 0, 0x000000, Internal, "i", "truncating the orphan file failed (inode)"),
    (0x06000C, Clear, PREEN_OK, 0x000000, Problem, "ib", "an orphan file block is not clean"),
    (0x06000D, Clear, PREEN_OK | NO_OK | PREEN_NOMSG, 0x000000, Problem, "", "orphan_present is set but the orphan file is empty"),
    (0x06000E, Clear, PREEN_OK, 0x000000, Problem, "", "orphan_present without orphan_file"),
    (0x06000F, None, 0, 0x000000, Problem, "i", "the orphan file's size is not whole blocks"),
    (0x060010, None, 0, 0x000000, Problem, "ib", "the orphan file has a hole"),
}

/// Codes of the table no file system pfsck checks can make e2fsck 1.47.4
/// report, with the reason (tried on damaged images): the catalogue's
/// figures leave them out of what pfsck must detect.
pub const NOT_APPLICABLE: &[(u32, &str)] = &[
    (
        0x000006,
        "e2fsck 1.47.4 no longer compares the fragment size with the block size: \
         a 1 KiB-block file system with 4 KiB fragments checks clean",
    ),
    (
        0x000014,
        "defined but never raised by e2fsck 1.47.4: a journal superblock of an \
         unknown type is reported as an unsupported version (0x000027)",
    ),
    (
        0x01000F,
        "defined but never raised by e2fsck 1.47.4 (its check is compiled out): a \
         file's block on the file system's metadata is a block claimed twice, \
         resolved in pass 1D (0x011001 and the questions after it)",
    ),
    (
        0x03001D,
        "never raised by e2fsck 1.47.4: its walk up a directory's parents stops at \
         the first directory already walked, and past 2048 parents it restarts, with \
         loop detection, from the directory it began with, already walked, so it \
         stops at once; a loop cut off from the root only has its '..' set to the \
         parent pass 2 found (0x030005), even 2100 directories deep",
    ),
    (
        0x010064,
        "never asked: e2fsck 1.47.4 has no check behind the code (a quota file in a \
         visible inode is 0x000041, asked in pass 0)",
    ),
    (
        0x020014,
        "cannot happen: name_len is one byte, so never above the 255 e2fsck compares \
         it with (a name longer than its record is 0x020013)",
    ),
    (
        0x010087,
        "asked only under -E clear_all_uninit_bits, an option e2fsck has only when \
         built with --enable-developer-features: 1.47.4 as released rejects it \
         (\"Unknown extended option\"), and leaves an uninitialised extent of a symlink \
         unreported (a directory's is 0x010073)",
    ),
    (
        0x010056,
        "asked only when libext2fs cannot open an extent tree whose header in the inode \
         e2fsck has just found valid: that open then fails only for want of memory (a bad \
         header is 0x010081, a block that cannot be read e2fsck's I/O error handler)",
    ),
];

/// Problems e2fsck 1.47.4 reports but does not repair, with the reason:
/// pfsck leaving them as they are is e2fsck's behaviour.
pub const UNFIXED_BY_E2FSCK: &[(u32, &str)] = &[
    (
        0x000004,
        "the check stops (exit 8): no superblock to repair from",
    ),
    (
        0x000005,
        "e2fsck asks to abort and -y stops the check (exit 8)",
    ),
    (0x000007, "asks 0x000004 next: the check stops (exit 8)"),
    (0x000008, "asks 0x000004 next: the check stops (exit 8)"),
    (0x00000b, "asks 0x000004 next: the check stops (exit 8)"),
    (0x000050, "asks 0x000004 next: the check stops (exit 8)"),
    (0x000010, "fatal: the external journal is not changed"),
    (
        0x000042,
        "-y clears the MMP block number, then cannot open the file system (exit 8) \
         and its next check still finds the MMP block invalid",
    ),
    (0x000011, "fatal: there is no journal to repair"),
    (
        0x010057,
        "made on an image file only past the end of a device shorter than the \
         file system, where a repair stops first at the size question (0x000005, \
         exit 8), as pfsck's does; -n declines it and aborts (exit 12)",
    ),
    (0x000012, "fatal: the external journal is not changed"),
    (0x000013, "fatal: the external journal is not changed"),
    (
        0x000021,
        "stated: e2fsck asks nothing, stops the orphan release there and runs the full check, as pfsck does",
    ),
    (
        0x000022,
        "stated: e2fsck asks nothing, stops the orphan release there and runs the full check, as pfsck does",
    ),
    (
        0x000023,
        "stated: e2fsck asks nothing, stops the orphan release there and runs the full check, as pfsck does",
    ),
    (
        0x000024,
        "stated: e2fsck asks nothing, stops the orphan release there and runs the full check, as pfsck does",
    ),
    (
        0x000025,
        "e2fsck asks to abort and -y stops the check (exit 12)",
    ),
    (
        0x000026,
        "e2fsck asks to abort and -y stops the check (exit 12)",
    ),
    (
        0x000027,
        "e2fsck asks to abort and -y stops the check (exit 12)",
    ),
    (
        0x00003a,
        "stated: the replay stops at that transaction, which is the repair",
    ),
    (
        0x01001b,
        "a warning: the backup superblock stays on its bad block and the check goes on (exit 0)",
    ),
    (
        0x01001c,
        "a warning: the backup descriptors stay on their bad block and the check goes on (exit 0)",
    ),
    (
        0x000052,
        "stated: e2fsck asks nothing, stops the orphan release there and runs the full check, as pfsck does",
    ),
    (
        0x000053,
        "stated: e2fsck asks nothing, stops the orphan release there and runs the full check, as pfsck does",
    ),
    (
        0x000054,
        "stated: e2fsck asks nothing, stops the orphan release there and runs the full check, as pfsck does",
    ),
    (
        0x000055,
        "stated: e2fsck asks nothing, stops the orphan release there and runs the full check, as pfsck does",
    ),
    (
        0x06000f,
        "stated: e2fsck asks nothing here and makes the orphan file anew under 0x060009, as pfsck does",
    ),
    (
        0x020020,
        "on an image file a directory block fails to read only past the file's end, \
         and then -y stops at 0x000005 before pass 2 (exit 8), as pfsck does; -n \
         declines and aborts (exit 12). A device failing a read is not made in a test",
    ),
    (
        0x060010,
        "stated: e2fsck asks nothing here and makes the orphan file anew under 0x060009, as pfsck does",
    ),
    (
        0x02004f,
        "asked after a yes to 0x02004e when system.data is in the xattr block, where \
         libext2fs will not store it; -y sets the size to 0 and clears the inline flag but \
         leaves the inline bytes in i_block, which its own -fn then reads as a block map \
         (-y exits 4, -n after it 12). pfsck reports it and leaves the directory as it is",
    ),
];

/// The reason `code` cannot occur, if it cannot.
pub fn not_applicable(code: u32) -> Option<&'static str> {
    NOT_APPLICABLE
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, w)| *w)
}

/// Why e2fsck leaves `code` unrepaired, if it does.
pub fn unfixed_by_e2fsck(code: u32) -> Option<&'static str> {
    UNFIXED_BY_E2FSCK
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, w)| *w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_complete() {
        assert_eq!(TABLE.len(), 414);
        assert!(TABLE.windows(2).all(|w| w[0].code < w[1].code));
        for e in TABLE {
            if e.flags & AFTER_CODE != 0 {
                assert!(
                    entry(e.after).is_some(),
                    "{:06x} asks a missing code",
                    e.code
                );
            }
        }
    }

    #[test]
    fn lookup() {
        let e = entry(0x020003).unwrap();
        assert!(e.preen_ok());
        assert_eq!(e.prompt, Prompt::Clear);
        assert_eq!(e.flag_names(), vec!["preen-ok"]);
        assert!(entry(0x020002).is_some_and(|e| !e.preen_ok()));
        assert!(entry(0x7fffff).is_none());
    }
}
