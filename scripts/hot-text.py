#!/usr/bin/env python3
"""Writes link/hot-text.ld: the functions a check runs, placed together.

Why: on a small file system most of a check's peak memory is the binary's
own code, and the kernel maps code in 64-128 KiB runs around every page
it faults in (fault-around, large page-cache folios). A check runs
~450 KiB of functions scattered over 2 MiB of text, so nearly all of it
became resident. Placed together, they take about a third of that
(issue 4: peak RSS no higher than e2fsck's).

How: builds pfsck, makes small images with mkfs.ext4 -d (one re-indexed
with e2fsck -fyD, for htree directories; a fragmented file for extent
trees), runs read-only checks under valgrind's callgrind (which names
every function that ran, in every thread), and writes a linker script
fragment whose output section `.text.hot`, inserted before `.text`,
collects, in this order:

1. the input sections of the Rust functions that ran (v0 mangling, see
   .cargo/config.toml), with what changes from build to build — crate
   hashes, the back-references whose offsets follow their length, LLVM's
   `.llvm.N` suffixes — left to wildcards, so the file stays valid across
   compiler and dependency updates;
2. the C library's archive members holding functions that ran (glibc has
   no per-function sections), and for a string function every variant
   (`strlen-avx2.o`, `strlen-evex.o`, ...): which one runs depends on the
   CPU, and valgrind's is not the machine's;
3. everything else of the modules a check runs (`check`, `engine`, `io`,
   `fs`, `cli`): functions the runs here did not reach — another image's
   problems, another thread timing — then lie next to the rest instead of
   anywhere in the text.

A function that is renamed or new simply lands in group 3 or in `.text`.
build.rs passes the script to the linker for the pfsck binary.

Run it again after large changes to what a check executes:
    scripts/hot-text.py        (needs valgrind and e2fsprogs)

`scripts/hot-text.py --check` (run by scripts/test.sh, so by CI) says how
many of the script's Rust function patterns still name a function of the
built binary, and fails below MIN_MATCHED: renamed or moved functions
weaken the layout silently, so the script must be made again then.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "link", "hot-text.ld")
BIN = os.path.join(ROOT, "target", "release", "pfsck")

# Group 3: the modules of a read-only check (v0 path components).
CHECK_MODULES = ["5pfsck5check", "5pfsck6engine", "5pfsck2io", "5pfsck2fs", "5pfsck3cli",
                 "5pfsck5error", "3std3sys4sync", "5alloc7raw_vec"]


# String functions every run calls (see main).
ALWAYS_FAMILIES = ["strcmp"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def tool(name):
    for d in ("", "/sbin/", "/usr/sbin/"):
        if shutil.which(d + name):
            return d + name
    sys.exit(f"hot-text: {name} not found")


def make_images(tmp):
    """A tree of small files, a big directory, a fragmented file; a copy
    with every directory re-indexed (htree)."""
    tree = os.path.join(tmp, "tree")
    # Image paths longer than 32 bytes, as most are: Rust counts the
    # characters of longer strings with other code.
    tmp = os.path.join(tmp, "a-directory-name-long-enough-for-long-string-code")
    os.makedirs(tmp)
    for d in range(60):
        sub = os.path.join(tree, f"d{d}")
        os.makedirs(sub)
        for f in range(40):
            with open(os.path.join(sub, f"f{f}"), "wb") as fh:
                fh.write(b"x" * 100)
        os.symlink(f"f{d % 40}", os.path.join(sub, "link"))
        os.symlink("x" * 200, os.path.join(sub, "slowlink"))
    big = os.path.join(tree, "big")
    os.makedirs(big)
    for f in range(3000):
        open(os.path.join(big, f"entry-with-a-longer-name-{f:05}"), "wb").close()
    with open(os.path.join(tree, "large"), "wb") as fh:
        fh.write(os.urandom(3 << 20))
    # Every other block a hole: ~1,000 extents, an extent tree with index
    # nodes.
    with open(os.path.join(tree, "sparse"), "wb") as fh:
        for b in range(0, 2000, 2):
            fh.seek(b * 4096)
            fh.write(b"y" * 4096)
    plain = os.path.join(tmp, "plain.img")
    run([tool("mkfs.ext4"), "-q", "-F", "-d", tree, plain, "64M"])
    indexed = os.path.join(tmp, "indexed.img")
    shutil.copyfile(plain, indexed)
    subprocess.run([tool("e2fsck"), "-fyD", indexed], capture_output=True)
    return [plain, indexed]


def executed(cg_files):
    """Symbols of the functions callgrind saw run (it names each function
    whose instructions ran, mangled with --demangle=no)."""
    names = set()
    for cg in cg_files:
        with open(cg) as fh:
            for line in fh:
                m = re.match(r"c?fn=(\S+)$", line.rstrip("\n"))
                if m and not m[1].startswith("0x"):
                    names.add(m[1])
    return names


def link_map(path):
    """Symbol -> input section, from lld's (or GNU ld's) map file: for a
    Rust function `.text.<symbol>`, or `.text.unlikely.<symbol>`, or the
    section of the function it was merged with; for C code the archive and
    member (`libc.a`, `strlen-avx2.o`), or the object file."""
    where = {}
    section = None
    with open(path) as fh:
        for line in fh:
            p = line.split(None, 4)
            if len(p) < 5:
                continue
            rest = p[4].strip()
            m = re.match(r"(\S+):\((\.text[^)]*)\)$", rest)
            if m:
                f, sec = m[1], m[2]
                am = re.match(r".*/([^/(]+\.a)\(([^)]+)\)$", f)
                if am:
                    section = ("member", am[1], am[2])
                else:
                    section = ("section", os.path.basename(f), sec)
                continue
            if ":(" in rest or " " in rest:
                section = None
                continue
            # Output sections, input sections and symbols are indented
            # further and further.
            if section and line.index(rest) > 50:
                where[rest] = section
    return where


def rust_pattern(sec):
    """A Rust function's input section (v0 mangling) with the parts that
    change between builds left to wildcards; cold functions may move
    between `.text.` and `.text.unlikely.`."""
    m = re.match(r"\.text\.(?:unlikely\.)?(_R.*)$", sec)
    if not m:
        return None
    s = re.sub(r"\.llvm\.\d+$", "", m[1])
    s = re.sub(r"Cs[0-9A-Za-z]+_", "Cs*_", s)
    s = re.sub(r"B[0-9A-Za-z]*_", "B*_", s)
    return f".text.{s}* .text.unlikely.{s}*"


# --check: the share of group 1's patterns that must still match.
MIN_MATCHED = 0.85


def check():
    """Matches group 1's patterns against the built binary's symbols."""
    if not os.path.exists(BIN):
        sys.exit(f"hot-text --check: {BIN} not built")
    syms = subprocess.run(["nm", "--defined-only", "--no-demangle", BIN], check=True,
                          capture_output=True, text=True).stdout.split()
    text = "\n".join(sorted(set(s for s in syms if s.startswith("_R"))))
    patterns = re.findall(r"\*\(\.text\.(_R\S*) ", open(OUT).read())
    matched = 0
    for p in patterns:
        body = ".*".join(re.escape(part) for part in p.rstrip("*").split("*"))
        if re.search(r"(?m)^" + body, text):
            matched += 1
    share = matched / len(patterns) if patterns else 1.0
    print(f"hot-text: {matched} of {len(patterns)} hot function patterns match the binary "
          f"({share:.0%}; at least {MIN_MATCHED:.0%} wanted)")
    if share < MIN_MATCHED:
        sys.exit("hot-text: link/hot-text.ld is stale: run scripts/hot-text.py and commit it")


def main():
    if sys.argv[1:] == ["--check"]:
        check()
        return
    for t in ("valgrind",):
        if not shutil.which(t):
            sys.exit(f"hot-text: {t} not found")
    with tempfile.TemporaryDirectory() as tmp:
        lmap = os.path.join(tmp, "link.map")
        run(["cargo", "rustc", "--release", "--quiet", "--bin", "pfsck", "--",
             "-C", f"link-arg=-Wl,-Map={lmap}", "-C", "link-arg=-Wl,--no-demangle"], cwd=ROOT)
        where = link_map(lmap)
        plain, indexed = make_images(tmp)
        runs = [
            ["-fn", "--threads", "1", plain],
            ["-fn", "--threads", "4", plain],
            ["-fn", "-t", "-v", "--threads", "2", indexed],
            ["-fn", "--json", indexed],
        ]
        cgs = []
        for k, args in enumerate(runs):
            cg = os.path.join(tmp, f"cg.{k}")
            subprocess.run(
                ["valgrind", "--tool=callgrind", "--fair-sched=yes", "--demangle=no",
                 "--compress-strings=no", f"--callgrind-out-file={cg}", BIN] + args,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            cgs.append(cg)
        names = executed(cgs)
    rust, c_members, c_families = set(), set(), set()
    all_members = {(v[1], v[2]) for v in where.values() if v[0] == "member"}
    for n in names:
        if n not in where:
            continue
        kind, f, sec = where[n]
        if kind == "section":
            p = rust_pattern(sec)
            if p:
                rust.add(p)
            continue
        c_members.add((f, sec))
        # strlen-avx2.o: the family strlen-*.o, every variant linked in.
        m = re.match(r"(.+?)-[^-]+(?:-[^-]+)*\.o$", sec)
        if m and (f, m[1] + ".o") in all_members:
            c_families.add((f, m[1]))
    # Natively, glibc's start-up of a static PIE calls strcmp, which it
    # does not under valgrind.
    c_families |= {(f, fam) for f, m in all_members for fam in ALWAYS_FAMILIES
                   if m == fam + ".o"}
    lines = [
        "/* Generated by scripts/hot-text.py: the functions a read-only check",
        "   runs, placed together so that their pages, not the whole text,",
        "   become resident. Patterns without hashes; see the script. */",
        "SECTIONS",
        "{",
        "  .text.hot :",
        "  {",
        "    *crt*.o(.text .text.*)",
        "    *(.text.main)",
    ]
    lines += [f"    *({p})" for p in sorted(rust)]
    lines += [f"    *{lib}:{member}(.text .text.*)" for lib, member in sorted(c_members)]
    lines += [f"    *{lib}:{fam}-*.o(.text .text.*)" for lib, fam in sorted(c_families)]
    lines += [f"    *(.text.*{m}* .text.unlikely.*{m}*)" for m in CHECK_MODULES]
    lines += ["  }", "}", "INSERT BEFORE .text;", ""]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        fh.write("\n".join(lines))
    print(f"hot-text: {len(rust)} Rust functions, {len(c_members)} C library members, "
          f"{len(c_families)} string function families -> {OUT}")


if __name__ == "__main__":
    main()
