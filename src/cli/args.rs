//! The command line: e2fsck's options, parsed with `lexopt`.
//!
//! A small parser on purpose: on a small file system most of a check's
//! peak memory is resident code, and a derive-based parser (clap) ran
//! ~90 KiB of its own code at every start, spread over a quarter of the
//! binary (issue 4: peak RSS no higher than e2fsck's). The help text is
//! written out below, one line per option, in the format clap printed.

use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Debug, Default)]
pub struct Args {
    /// `-n`: read-only, answer "no" to every question.
    pub no: bool,
    /// `-y`: repair, answer "yes" to every question.
    pub yes: bool,
    /// `-p`: preen.
    pub preen: bool,
    /// `-a`: same as `-p`.
    pub auto: bool,
    /// `-f`: check even if clean.
    pub force: bool,
    /// `-v`: statistics at the end.
    pub verbose: bool,
    /// `-j`: the external journal device.
    pub journal: Option<PathBuf>,
    /// `-b`: a backup superblock.
    pub superblock: Option<u64>,
    /// `-B`: block size for `-b`.
    pub blocksize: Option<u32>,
    /// `-m`, `--threads`: a number or "auto".
    pub threads: String,
    /// `--idle`: SCHED_IDLE.
    pub idle: bool,
    /// `--max-memory SIZE`, in bytes.
    pub max_memory: Option<u64>,
    /// `--json`.
    pub json: bool,
    /// `-t`: time, bytes and memory per pass.
    pub timing: bool,
    /// `-C FD`.
    pub progress_fd: Option<i32>,
    /// `--progress`.
    pub progress: bool,
    /// `-z`, `--undo`.
    pub undo: Option<PathBuf>,
    /// `--rollback`.
    pub rollback: Option<PathBuf>,
    /// `--force`: as `-f`; with `--rollback`, also restore blocks changed
    /// since the repair. Never implied by `-f`, which e2fsck users type by
    /// habit.
    pub force_rollback: bool,
    /// `--online`: the device is a mounted file system (or its mount
    /// point), checked through a snapshot.
    pub online: bool,
    /// `-l FILE` (add) or `-L FILE` (replace): a bad-blocks list; true
    /// when it replaces the list.
    pub bad_blocks_file: Option<(PathBuf, bool)>,
    /// `-c`: 1 runs badblocks read-only, 2 (`-cc`) non-destructive read-write.
    pub scan_bad_blocks: u8,
    /// `-k`: with `-c`, keep the bad blocks already listed.
    pub keep_bad_blocks: bool,
    /// `-D`: optimise directories.
    pub optimize_dirs: bool,
    /// `-F`: flush the device's buffers before the check.
    pub flush: bool,
    /// `-E`: extended options.
    pub extended: Extended,
    /// The device or image file to check.
    pub device: PathBuf,
}

/// e2fsck's `-E` options. Those pfsck has no use for are accepted and
/// ignored (README: "Options").
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Extended {
    pub journal_only: bool,
    pub fixes_only: bool,
    pub bmap2extent: bool,
    pub unshare_blocks: bool,
    pub fragcheck: bool,
    /// `no_optimize_extents` (the last of it and `optimize_extents`
    /// counts): no pass 1E offers.
    pub no_optimize_extents: bool,
    /// Accepted and ignored: discard, nodiscard, readahead_kb, ea_ver,
    /// inode_count_fullmap, check_encoding and their no_ forms.
    pub ignored: Vec<String>,
}

/// The `-E` options e2fsck 1.47 knows, for the error message.
const EXTENDED_HELP: &str = "valid extended options: ea_ver=1|2, fragcheck, journal_only, discard, nodiscard, optimize_extents, no_optimize_extents, inode_count_fullmap, no_inode_count_fullmap, readahead_kb=<KiB>, bmap2extent, unshare_blocks, fixes_only, check_encoding";

impl Extended {
    /// Adds a comma-separated list of `-E` options.
    pub fn parse(&mut self, list: &str) -> Result<(), String> {
        for opt in list.split(',').filter(|o| !o.is_empty()) {
            let (name, arg) = match opt.split_once('=') {
                Some((n, a)) => (n, Some(a)),
                None => (opt, None),
            };
            let bad = |why: &str| Err(format!("{why} in -E {opt} ({EXTENDED_HELP})"));
            match (name, arg) {
                ("journal_only", None) => self.journal_only = true,
                ("fixes_only", None) => self.fixes_only = true,
                ("bmap2extent", None) => self.bmap2extent = true,
                ("unshare_blocks", None) => self.unshare_blocks = true,
                ("fragcheck", None) => self.fragcheck = true,
                ("optimize_extents", None) => self.no_optimize_extents = false,
                ("no_optimize_extents", None) => self.no_optimize_extents = true,
                (
                    "discard"
                    | "nodiscard"
                    | "inode_count_fullmap"
                    | "no_inode_count_fullmap"
                    | "check_encoding",
                    None,
                ) => self.ignored.push(name.into()),
                ("ea_ver", Some("1" | "2")) => self.ignored.push(opt.into()),
                ("ea_ver", _) => return bad("invalid EA version"),
                ("readahead_kb", Some(n)) if n.parse::<u64>().is_ok() => {
                    self.ignored.push(opt.into())
                }
                ("readahead_kb", _) => return bad("invalid readahead buffer size"),
                _ => return bad("unknown extended option"),
            }
        }
        Ok(())
    }
}

/// What the command line asks for besides a check.
#[derive(Debug)]
pub enum Parsed {
    Run(Box<Args>),
    /// `--help`, `-h`: the text to print (exit 0).
    Help(String),
    /// `--version`, `-V`.
    Version,
}

const ABOUT: &str = "Check an ext2/ext3/ext4 file system, in parallel";

/// Option column, then its description: the help lists them in this order.
const OPTIONS: &[(&str, &str)] = &[
    (
        "-n",
        "Open the file system read-only and answer \"no\" to every question",
    ),
    (
        "-y",
        "Repair: answer \"yes\" to every question (fixes what pfsck can fix so far; the rest is left and reported, exit 4)",
    ),
    (
        "-p",
        "Preen: fix what is safe without asking; stop on anything else with \"STOPPED: a problem preen may not fix needs a person\" (exit 4; the fixes made before it and the superblock's error state written, as e2fsck)",
    ),
    ("-a", "Same as -p"),
    (
        "-r",
        "Accepted for compatibility (repairs are interactive without -n, -p or -y)",
    ),
    (
        "-f, --force",
        "Check even if the file system seems clean. With --rollback, --force (not -f) restores blocks changed since the repair, losing those changes",
    ),
    ("-v", "Verbose: print statistics at the end"),
    (
        "-j <JOURNAL>",
        "The external journal device (made with mke2fs -O journal_dev)",
    ),
    (
        "-b <SUPERBLOCK>",
        "Use this superblock (a backup) instead of the primary",
    ),
    (
        "-B <BLOCKSIZE>",
        "Block size to look for the superblock given with -b",
    ),
    (
        "-c",
        "Run badblocks(8) read-only over the device first (-cc: non-destructive read-write) and make its list the bad blocks inode's; the check is then forced",
    ),
    (
        "-k",
        "With -c: add the blocks found to the bad blocks already listed",
    ),
    (
        "-l <FILE>",
        "Add the blocks FILE lists (badblocks(8) output) to the bad blocks inode; the check is then forced",
    ),
    (
        "-L <FILE>",
        "As -l, replacing the list the bad blocks inode holds",
    ),
    (
        "-D",
        "Optimise directories (pfsck rebuilds every directory it repairs; others are left as they are)",
    ),
    (
        "-E <OPTS>",
        "Extended options, comma-separated: journal_only, fixes_only, bmap2extent (a repair converts block maps to extent trees), unshare_blocks, fragcheck, discard, nodiscard, readahead_kb=N, optimize_extents, inode_count_fullmap, ea_ver=N, check_encoding (see the README for what each does in pfsck)",
    ),
    ("-F", "Flush the device's buffers before checking"),
    (
        "-d",
        "Accepted for compatibility (e2fsck's debugging output)",
    ),
    (
        "-m, --threads <N|auto>",
        "Worker threads: a number, or \"auto\" for the usable CPUs [default: auto]",
    ),
    (
        "    --max-memory <SIZE>",
        "Keep the resident memory under SIZE (bytes, or with K, M, G, T: 256M, 1G): past it the per-inode and per-block maps move to a scratch file in $TMPDIR (default /var/tmp)",
    ),
    (
        "    --idle",
        "Run at SCHED_IDLE: use only CPU time no other process wants",
    ),
    ("    --json", "Print the report as JSON on standard output"),
    ("-t", "Print time and bytes read per pass"),
    (
        "-C <FD>",
        "Progress: 0 = a bar on stderr; FD > 0 = e2fsck's \"PASS CURRENT MAX DEVICE\" lines on that file descriptor",
    ),
    (
        "    --progress",
        "Show a progress bar on stderr (same as -C 0)",
    ),
    (
        "-z, --undo <FILE>",
        "Undo log of a repair (e2fsck's -z). Default: IMAGE.pfsck-undo next to an image file, /var/lib/pfsck/NAME.pfsck-undo for a block device",
    ),
    (
        "    --online",
        "DEVICE is a mounted file system or its mount point: check a snapshot of it (LVM, or reflink of a loop device's backing file on XFS/btrfs) at idle priority, then mark it for the next check if problems are found (not with -n)",
    ),
    (
        "    --rollback <FILE>",
        "Restore the device from the undo log FILE: undoes an interrupted or an unwanted repair, byte for byte",
    ),
    ("-h, --help", "Print help"),
    ("-V, --version", "Print version"),
];

const AFTER_HELP: &str = "Exit codes: 0 clean, 1 errors corrected, 4 errors left uncorrected, 8 operational error, 16 usage error, 32 cancelled.";

/// The name the program was run as, for the usage line.
fn bin_name(argv0: Option<&OsString>) -> String {
    argv0
        .map(std::path::Path::new)
        .and_then(|p| p.file_name())
        .map_or_else(|| "pfsck".into(), |n| n.to_string_lossy().into_owned())
}

pub fn help(bin: &str) -> String {
    let width = OPTIONS.iter().map(|(o, _)| o.len()).max().unwrap_or(0);
    let mut s = format!(
        "{ABOUT}\n\nUsage: {bin} [OPTIONS] <DEVICE>\n\nArguments:\n  <DEVICE>  The device or image file to check\n\nOptions:\n"
    );
    for (opt, text) in OPTIONS {
        s.push_str(&format!("  {opt:width$}  {text}\n"));
    }
    s.push('\n');
    s.push_str(AFTER_HELP);
    s.push('\n');
    s
}

/// Text for roff: backslashes and hyphens kept literal, and a line that
/// would start with a control character made plain text.
fn roff(text: &str) -> String {
    let s = text.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with(['.', '\'']) {
        format!("\\&{s}")
    } else {
        s
    }
}

/// pfsck(8), from the same table as `--help` (hidden `--help-man`; the
/// copy in docs/pfsck.8 is checked against it by the test suite). No date
/// in it, so the page changes only when the options or version do.
pub fn man_page() -> String {
    let mut s = format!(
        ".TH PFSCK 8 \"\" \"pfsck {}\" \"System Administration\"\n\
         .SH NAME\npfsck \\- {}\n\
         .SH SYNOPSIS\n.B pfsck\n[\\fIOPTIONS\\fR] \\fIDEVICE\\fR\n\
         .SH DESCRIPTION\n\
         pfsck checks and repairs ext2, ext3 and ext4 file systems. It takes \
         e2fsck(8)'s options and reaches its verdicts.\n\
         .I DEVICE\nis the device or image file to check. \
         Installed as fsck.ext2, fsck.ext3 and fsck.ext4, it is run by fsck(8).\n\
         .SH OPTIONS\n",
        env!("CARGO_PKG_VERSION"),
        roff(ABOUT)
    );
    for (opt, text) in OPTIONS {
        s.push_str(&format!(".TP\n.B {}\n{}\n", roff(opt.trim()), roff(text)));
    }
    s.push_str(&format!(
        ".SH EXIT STATUS\n{}\n.SH SEE ALSO\n.BR e2fsck (8),\n.BR fsck (8)\n",
        roff(AFTER_HELP)
    ));
    s
}

/// `-E`'s option names, for completion.
const EXTENDED: &[&str] = &[
    "journal_only",
    "fixes_only",
    "bmap2extent",
    "unshare_blocks",
    "fragcheck",
    "discard",
    "nodiscard",
    "readahead_kb=",
    "optimize_extents",
    "no_optimize_extents",
    "inode_count_fullmap",
    "no_inode_count_fullmap",
    "ea_ver=",
    "check_encoding",
];

/// bash completion for pfsck, from the same table as `--help` (hidden
/// `--help-bash`; the copy in docs/pfsck.bash is checked against it by
/// the test suite): the options, files after the options that take one,
/// `-E`'s names (after a comma too), and devices or images otherwise.
pub fn bash_completion() -> String {
    let (mut all, mut files, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for (opt, _) in OPTIONS {
        let (names, arg) = match opt.trim().split_once(' ') {
            Some((n, a)) if a.starts_with('<') => (n, Some(a)),
            _ => (opt.trim(), None),
        };
        let names: Vec<&str> = names.split(", ").map(str::trim).collect();
        // A `-m, --threads <N|auto>` table row: the value after its names.
        let (names, arg) = match names.last().and_then(|n| n.split_once(' ')) {
            Some((last, a)) => {
                let mut v = names.clone();
                v.pop();
                v.push(last);
                (v, Some(a))
            }
            None => (names, arg),
        };
        all.extend(names.iter().map(|n| n.to_string()));
        match arg {
            Some("<FILE>" | "<JOURNAL>") => files.extend(names),
            Some(_) => values.extend(names),
            None => {}
        }
    }
    let files = files.join("|");
    let values: Vec<&str> = values
        .into_iter()
        .filter(|n| !["-E", "-m", "--threads"].contains(n))
        .collect();
    format!(
        "# bash completion for pfsck; made by `pfsck --help-bash` from its option table.\n\
         _pfsck() {{\n\
         \x20   local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}\n\
         \x20   case $prev in\n\
         \x20   {files})\n\
         \x20       COMPREPLY=($(compgen -f -- \"$cur\"))\n\
         \x20       return ;;\n\
         \x20   -m|--threads)\n\
         \x20       COMPREPLY=($(compgen -W \"auto\" -- \"$cur\"))\n\
         \x20       return ;;\n\
         \x20   -E)\n\
         \x20       local head=\n\
         \x20       [[ $cur == *,* ]] && head=${{cur%,*}},\n\
         \x20       COMPREPLY=($(compgen -P \"$head\" -W \"{extended}\" -- \"${{cur##*,}}\"))\n\
         \x20       compopt -o nospace 2>/dev/null\n\
         \x20       return ;;\n\
         \x20   {values})\n\
         \x20       COMPREPLY=()\n\
         \x20       return ;;\n\
         \x20   esac\n\
         \x20   if [[ $cur == -* ]]; then\n\
         \x20       COMPREPLY=($(compgen -W \"{all}\" -- \"$cur\"))\n\
         \x20       return\n\
         \x20   fi\n\
         \x20   COMPREPLY=($(compgen -f -- \"$cur\"))\n\
         }}\n\
         complete -o filenames -F _pfsck pfsck\n",
        values = values.join("|"),
        extended = EXTENDED.join(" "),
        all = all.join(" "),
    )
}

/// A usage error: the message and the usage line, as the caller prints it
/// on stderr (exit 16).
pub fn usage_error(bin: &str, msg: &str) -> String {
    format!(
        "error: {msg}\n\nUsage: {bin} [OPTIONS] <DEVICE>\n\nFor more information, try '--help'.\n"
    )
}

/// A size: a number of bytes, or with a suffix K, M, G or T (powers of
/// 1024, as e2fsprogs' sizes; a trailing "iB" or "B" allowed). Zero is no
/// size.
pub fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, shift) = match t.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return None,
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let n: u64 = num.parse().ok()?;
    n.checked_mul(1u64 << shift).filter(|&b| b > 0)
}

/// Parses `argv` (program name first). Err: the text of a usage error.
pub fn parse(argv: Vec<OsString>) -> Result<Parsed, String> {
    let bin = bin_name(argv.first());
    parse_inner(argv).map_err(|m| usage_error(&bin, &m))
}

fn parse_inner(argv: Vec<OsString>) -> Result<Parsed, String> {
    use lexopt::prelude::*;
    let bin = bin_name(argv.first());
    let mut p = lexopt::Parser::from_iter(argv);
    let mut a = Args {
        threads: "auto".into(),
        ..Args::default()
    };
    let mut device = None;
    let text = |e: lexopt::Error| e.to_string();
    fn num<T: std::str::FromStr>(p: &mut lexopt::Parser, opt: &str) -> Result<T, String> {
        let v = p.value().map_err(|e| e.to_string())?;
        let s = v.to_string_lossy();
        s.parse::<T>()
            .map_err(|_| format!("invalid value '{s}' for '{opt}': not a valid number"))
    }
    while let Some(arg) = p.next().map_err(text)? {
        match arg {
            Short('n') => a.no = true,
            Short('y') => a.yes = true,
            Short('p') => a.preen = true,
            Short('a') => a.auto = true,
            Short('f') => a.force = true,
            Long("force") => {
                a.force = true;
                a.force_rollback = true;
            }
            Short('v') => a.verbose = true,
            Short('t') => a.timing = true,
            // e2fsck's -r does nothing; -d is its debugging output; -I and
            // -P size buffers that pfsck sizes itself.
            Short('r') | Short('d') => {}
            Short('I') | Short('P') => {
                num::<u64>(&mut p, "-I/-P")?;
            }
            Short('c') => a.scan_bad_blocks = a.scan_bad_blocks.saturating_add(1).min(2),
            Short('k') => a.keep_bad_blocks = true,
            Short('D') => a.optimize_dirs = true,
            Short('F') => a.flush = true,
            Short('l') => a.bad_blocks_file = Some((p.value().map_err(text)?.into(), false)),
            Short('L') => a.bad_blocks_file = Some((p.value().map_err(text)?.into(), true)),
            Short('E') => {
                let v = p.value().map_err(text)?;
                a.extended.parse(&v.to_string_lossy())?;
            }
            Long("max-memory") => {
                let v = p.value().map_err(text)?;
                let s = v.to_string_lossy();
                a.max_memory = Some(parse_size(&s).ok_or_else(|| {
                    format!(
                        "invalid value '{s}' for '--max-memory <SIZE>': a size such as 256M or 1G"
                    )
                })?);
            }
            Long("idle") => a.idle = true,
            Long("json") => a.json = true,
            Long("progress") => a.progress = true,
            Short('j') => a.journal = Some(p.value().map_err(text)?.into()),
            Short('b') => a.superblock = Some(num(&mut p, "-b <SUPERBLOCK>")?),
            Short('B') => a.blocksize = Some(num(&mut p, "-B <BLOCKSIZE>")?),
            Short('C') => a.progress_fd = Some(num(&mut p, "-C <FD>")?),
            Short('m') | Long("threads") => {
                a.threads = p.value().map_err(text)?.to_string_lossy().into_owned();
            }
            Short('z') | Long("undo") => a.undo = Some(p.value().map_err(text)?.into()),
            Long("rollback") => a.rollback = Some(p.value().map_err(text)?.into()),
            Long("online") => a.online = true,
            Short('h') | Long("help") => return Ok(Parsed::Help(help(&bin))),
            Short('V') | Long("version") => return Ok(Parsed::Version),
            Long("help-man") => return Ok(Parsed::Help(man_page())),
            Long("help-bash") => return Ok(Parsed::Help(bash_completion())),
            Value(v) if device.is_none() => device = Some(PathBuf::from(v)),
            _ => return Err(arg.unexpected().to_string()),
        }
    }
    let mode = [(a.no, "-n"), (a.yes, "-y"), (a.preen, "-p"), (a.auto, "-a")]
        .iter()
        .find_map(|&(set, o)| set.then_some(o));
    if let (Some(_), Some(o)) = (&a.rollback, mode) {
        return Err(format!(
            "the argument '--rollback <FILE>' cannot be used with '{o}'"
        ));
    }
    if a.online {
        // A snapshot is checked and thrown away: repairing it repairs nothing.
        if let Some(o) = mode.filter(|&o| o != "-n") {
            return Err(format!(
                "the argument '--online' cannot be used with '{o}': it checks a snapshot and never repairs (use -n to only report)"
            ));
        }
        if a.rollback.is_some() {
            return Err("the argument '--online' cannot be used with '--rollback <FILE>'".into());
        }
    }
    a.device = device.ok_or("the following required arguments were not provided:\n  <DEVICE>")?;
    Ok(Parsed::Run(Box::new(a)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Args, String> {
        let argv = std::iter::once("pfsck")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        match parse(argv)? {
            Parsed::Run(a) => Ok(*a),
            other => Err(format!("{other:?}")),
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256M"), Some(256 << 20));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("1GiB"), Some(1 << 30));
        assert_eq!(parse_size("64k"), Some(64 << 10));
        assert_eq!(parse_size("1000"), Some(1000));
        for bad in ["", "0", "M", "12X", "-1M", "99999999999T"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
        let a = run(&["--max-memory", "6M", "img"]).unwrap();
        assert_eq!(a.max_memory, Some(6 << 20));
    }

    #[test]
    fn every_option() {
        let a = run(&[
            "-fnvt",
            "-j",
            "J",
            "-b32768",
            "-B",
            "4096",
            "-m",
            "3",
            "--idle",
            "--json",
            "-C",
            "5",
            "--progress",
            "--undo=U",
            "--online",
            "img",
        ])
        .unwrap();
        assert!(a.online);
        assert!(a.force && a.no && a.verbose && a.timing && a.idle && a.json && a.progress);
        assert!(!a.yes && !a.preen && !a.auto);
        assert_eq!(a.journal, Some(PathBuf::from("J")));
        assert_eq!((a.superblock, a.blocksize), (Some(32768), Some(4096)));
        assert_eq!(a.threads, "3");
        assert_eq!(a.progress_fd, Some(5));
        assert_eq!(a.undo, Some(PathBuf::from("U")));
        assert_eq!(a.device, PathBuf::from("img"));
        let a = run(&["-ya", "--threads=auto", "-z", "U", "-C0", "dev"]).unwrap();
        assert!(a.yes && a.auto && !a.no);
        assert_eq!((a.threads.as_str(), a.progress_fd), ("auto", Some(0)));
        let a = run(&["--rollback", "L", "dev"]).unwrap();
        assert_eq!(a.rollback, Some(PathBuf::from("L")));
        assert_eq!(run(&["-p", "x"]).unwrap().threads, "auto");
        assert!(run(&["--online", "-n", "/mnt"]).unwrap().online);
    }

    #[test]
    fn usage_errors() {
        for bad in [
            &["-x", "img"][..],
            &["img", "img2"],
            &[],
            &["-n"],
            &["-b", "many", "img"],
            &["-m"],
            &["--rollback", "L", "-n", "dev"],
            &["--json=1", "img"],
            &["--online", "-y", "/mnt"],
            &["--online", "-p", "/mnt"],
            &["--online", "--rollback", "L", "/mnt"],
        ] {
            let e = run(bad).expect_err(&format!("{bad:?}"));
            assert!(
                e.starts_with("error: ") && e.contains("Usage: pfsck [OPTIONS] <DEVICE>"),
                "{e}"
            );
        }
    }

    #[test]
    fn help_lists_every_option() {
        let argv = ["pfsck", "--help"].map(OsString::from).to_vec();
        let Ok(Parsed::Help(h)) = parse(argv) else {
            panic!("no help");
        };
        for o in [
            "-n ",
            "--threads <N|auto>",
            "--rollback <FILE>",
            "-V, --version",
        ] {
            assert!(h.contains(o), "{o} missing from\n{h}");
        }
        assert!(h.starts_with(ABOUT) && h.ends_with("32 cancelled.\n"));
    }
}
