#!/usr/bin/env python3
"""Side-by-side benchmark: `e2fsck -fn` against `pfsck -fn --threads N`.

One script, Python 3.11 standard library only (the PNG chart uses matplotlib
when it is importable and is skipped with a message otherwise; see
bench/README.md). What it does, in order:

1. Images. Each kind below is generated with the real tools (mkfs.ext4 -d,
   debugfs -w, e2fsck -fyD), sized by --scale (1.0 = issue 4's sizes), cached
   in $PFSCK_BENCH_DIR (default /var/tmp/pfsck-bench) as NAME.img with its
   parameters in NAME.json, and checked clean by `e2fsck -fn` once.
2. Runs. For each image: e2fsck and pfsck --threads 1,2,4 interleaved (one
   run of each tool per round, --runs rounds), with a warm page cache (after
   one unmeasured warm-up run of each tool) and a cold one (the image evicted
   with posix_fadvise(POSIX_FADV_DONTNEED) after sync() before every run).
   Each run records wall time, peak RSS (GNU time) and the exit code.
3. Slow device. One image served through bench/slowfuse (FUSE, direct I/O,
   a fixed latency per read request) at each --slow-latency, same runs.
4. Reports. bench/results.json, bench/results.png, bench/RESULTS.md (from the
   JSON), and the targets table between <!-- bench:start --> and
   <!-- bench:end --> in README.md. `--report-only` redoes step 4 from an existing JSON.

Usage: bench/run.py [--scale S] [--images file,dir25,...] [--threads 1,2,4]
                    [--runs N] [--modes warm,cold,repair] [--slow-latency 0.2,1]
                    [--slow-image file] [--slow-scale S] [--report-only]
"""
import argparse
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
CACHE = os.environ.get("PFSCK_BENCH_DIR", "/var/tmp/pfsck-bench")
PFSCK = os.path.join(ROOT, "target", "release", "pfsck")
SLOWFUSE_DIR = os.path.join(BENCH, "slowfuse")
SLOWFUSE = os.path.join(SLOWFUSE_DIR, "target", "release", "slowfuse")
GNU_TIME = "/usr/bin/time"
NICE = ["nice", "-n", "10"]  # image generation yields to everything else


def tool(name):
    for d in ("/sbin", "/usr/sbin", "/usr/bin", "/bin"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return shutil.which(name) or name


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Image generators
# --------------------------------------------------------------------------
#
# Each generator takes the scale and returns (recipe, build) where recipe is a
# dict of the parameters (stored in NAME.json and in results.json) and build
# is a function that writes the image to a given path. Scale 1.0 gives the
# sizes of issue 4: about 1,000,000 inodes (or entries, or 2,000,000 extents).

MIB = 1 << 20
BLOCK = 4096


def n_at(base, scale, least=1):
    return max(least, int(round(base * scale)))


def image_mib(data_blocks, inodes):
    """Image size: data + inode tables + 30% headroom, at least 256 MiB,
    and at least twice the inode tables: mkfs.ext4 refuses a million
    inodes in 323 MiB (zero at scale 1), as no group layout fits them."""
    need = data_blocks * BLOCK + inodes * 256
    return max(256, int(math.ceil(need * 1.3 / MIB)), int(math.ceil(inodes * 512 / MIB)))


def run_quiet(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-2000:]}")
    return r.stdout


def mkfs(path, mib, inodes, tree=None):
    cmd = NICE + [tool("mkfs.ext4"), "-q", "-F", "-b", str(BLOCK), "-E", "lazy_itable_init=0",
                  "-N", str(inodes)]
    if tree:
        cmd += ["-d", tree]
    run_quiet(cmd + [path, f"{mib}M"])


def write_tree(tree, layout):
    """layout: iterable of (relative directory, [(file name, size)])."""
    cache = {}
    for rel, files in layout:
        d = os.path.join(tree, rel)
        os.makedirs(d, exist_ok=True)
        for name, size in files:
            if size not in cache:
                cache[size] = b"x" * size
            with open(os.path.join(d, name), "wb") as fh:
                if size:
                    fh.write(cache[size])


def debugfs_script(path, lines):
    """Runs debugfs -w on a generated command file (one command a line)."""
    cmdfile = path + ".debugfs"
    with open(cmdfile, "w") as fh:
        for line in lines:
            fh.write(line + "\n")
    try:
        out = subprocess.run(NICE + [tool("debugfs"), "-w", "-f", cmdfile, path],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"debugfs exited {out.returncode}: {out.stderr[-2000:]}")
        # debugfs reports failed commands on stderr but still exits 0.
        errs = [l for l in out.stderr.splitlines()
                if l and not l.startswith("debugfs ") and "Allocated inode" not in l]
        if errs:
            raise RuntimeError("debugfs: " + "\n".join(errs[:10]))
    finally:
        os.unlink(cmdfile)


def tree_image(desc, dirs_files, inodes, data_blocks):
    """A mkfs.ext4 -d image of a host tree given as (directory, files) pairs."""
    def build(path):
        tree = path + ".tree"
        shutil.rmtree(tree, ignore_errors=True)
        write_tree(tree, dirs_files())
        try:
            mkfs(path, image_mib(data_blocks, inodes), int(inodes * 1.1) + 1024, tree)
        finally:
            shutil.rmtree(tree, ignore_errors=True)
    return desc, build


def gen_file(scale):
    """(1) file-intensive: directories of 99 100-byte files."""
    dirs = n_at(10100, scale)
    recipe = dict(kind="file", dirs=dirs, files_per_dir=99, file_size=100,
                  tool="mkfs.ext4 -d",
                  desc=f"{dirs:,} directories of 99 100-byte files")
    def layout():
        files = [("f%03d" % f, 100) for f in range(99)]
        for d in range(dirs):
            yield "d%05d" % d, files
    return tree_image(recipe, layout, dirs * 100 + 16, dirs * 100)


def gen_dir(scale, share):
    """(2) directory-intensive: `share` of the inodes are directories, each
    holding small files (one when share = 1/2; three when share = 1/4, since
    one file per directory can only make half of the inodes directories).
    Directories are grouped 100 to a parent so no directory is huge."""
    total = n_at(1_000_000, scale, 8)
    per_dir = int(round(1 / share)) - 1
    dirs = max(1, total // (per_dir + 1))
    recipe = dict(kind=f"dir{int(share * 100)}", dirs=dirs, files_per_dir=per_dir, file_size=100,
                  tool="mkfs.ext4 -d",
                  desc=f"{dirs:,} directories ({int(share * 100)}% of inodes), "
                       f"{per_dir} 100-byte file(s) each, 100 directories to a parent")
    def layout():
        files = [("f%d" % f, 100) for f in range(per_dir)]
        for d in range(dirs):
            yield "g%05d/d%02d" % (d // 100, d % 100), files
    return tree_image(recipe, layout, dirs * (per_dir + 1) + dirs // 100 + 16, dirs * (per_dir + 1))


def gen_zero(scale):
    """(5) many 0-byte files: directories of 1000 empty files."""
    dirs = n_at(1000, scale)
    recipe = dict(kind="zero", dirs=dirs, files_per_dir=1000, file_size=0, tool="mkfs.ext4 -d",
                  desc=f"{dirs:,} directories of 1,000 0-byte files")
    def layout():
        files = [("z%04d" % f, 0) for f in range(1000)]
        for d in range(dirs):
            yield "d%05d" % d, files
    return tree_image(recipe, layout, dirs * 1001 + 16, dirs)


def gen_frag(scale):
    """(3) fragmented (linux-ext4's "Case-4"): a few files, each fallocated
    and then punched every other block with debugfs, so each file is a run
    of one-block extents: 2,000,000 extents in 4 files at scale 1."""
    extents = n_at(2_000_000, scale, 1000)
    files = 4 if extents >= 400_000 else 2
    per_file = extents // files
    blocks = per_file * 2
    recipe = dict(kind="frag", files=files, extents=per_file * files, extents_per_file=per_file,
                  tool="mkfs.ext4 + debugfs -w fallocate/punch",
                  desc=f"{files} files of {blocks:,} fallocated blocks, every other block punched: "
                       f"{per_file * files:,} one-block extents")
    def build(path):
        mkfs(path, image_mib(blocks * files + extents // 300, 4096), 4096)
        lines = []
        for f in range(files):
            lines += [f"write /dev/null frag{f}", f"fallocate frag{f} 0 {blocks - 1}"]
            lines += [f"punch frag{f} {b} {b}" for b in range(1, blocks, 2)]
        debugfs_script(path, lines)
    return recipe, build


def gen_hugedir(scale):
    """(4) one huge directory. mkfs.ext4 -d links entry by entry into a linear
    directory (quadratic); instead: seed the directory with mkfs -d, index it
    with e2fsck -fyD, then add the rest with debugfs mknod (FIFOs) from `cd`
    inside it, which inserts through the hash tree (~30 us an entry)."""
    entries = n_at(1_000_000, scale, 1000)
    seed = min(500, entries)
    recipe = dict(kind="hugedir", entries=entries, dirs=1,
                  tool="mkfs.ext4 -d, e2fsck -fyD, debugfs -w mknod",
                  desc=f"one htree directory of {entries:,} entries "
                       f"({seed} empty files, the rest FIFOs)")
    def build(path):
        tree = path + ".tree"
        shutil.rmtree(tree, ignore_errors=True)
        write_tree(tree, [("huge", [("s%03d" % i, 0) for i in range(seed)])])
        try:
            mkfs(path, image_mib(entries * 64 // BLOCK + 1024, entries), int(entries * 1.05) + 1024, tree)
        finally:
            shutil.rmtree(tree, ignore_errors=True)
        r = subprocess.run(NICE + [tool("e2fsck"), "-fyD", path], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        if r.returncode not in (0, 1):
            raise RuntimeError(f"e2fsck -fyD exited {r.returncode}")
        debugfs_script(path, ["cd /huge"] + ["mknod e%07d p" % i for i in range(entries - seed)])
    return recipe, build


def gen_errors(scale):
    """(6) very many problems (issue 4's many-errors mode): the
    file-intensive tree, then every other file damaged with debugfs -w, four
    kinds in turn: dtime set on an in-use inode, link count 2, i_blocks 16
    (one block is 8), the inode cleared (its entry then names an unused
    inode; its block and bitmap bit stay). Passes 1, 2, 4 and 5 all report."""
    dirs = n_at(10100, scale)
    files = dirs * 99
    damaged = (files + 1) // 2
    recipe = dict(kind="errors", dirs=dirs, files_per_dir=99, file_size=100, damaged=damaged,
                  tool="mkfs.ext4 -d + debugfs -w sif/clri",
                  desc=f"{dirs:,} directories of 99 100-byte files, every other file damaged: "
                       f"{damaged:,} inodes (dtime set, link count, i_blocks, cleared)")
    def layout():
        names = [("f%03d" % f, 100) for f in range(99)]
        for d in range(dirs):
            yield "d%05d" % d, names
    _, build_tree = tree_image(recipe, layout, files + dirs + 16, files)

    def build(path):
        build_tree(path)
        # The files' inode numbers, directory by directory, from `ls -p`
        # (/INO/MODE/UID/GID/NAME/SIZE/).
        ls = "\n".join("ls -p /d%05d" % d for d in range(dirs)) + "\n"
        out = subprocess.run([tool("debugfs"), "-f", "-", path], input=ls, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, check=True).stdout
        inos = [int(f[1]) for f in (line.split("/") for line in out.splitlines())
                if len(f) > 6 and f[2].startswith("1006")]
        if len(inos) != files:
            raise RuntimeError(f"errors: found {len(inos)} files, expected {files}")
        damage = ["sif <{}> dtime 1700000000", "sif <{}> links_count 2", "sif <{}> blocks 16",
                  "clri <{}>"]
        debugfs_script(path, [damage[(k // 2) % 4].format(ino)
                              for k, ino in enumerate(inos) if k % 2 == 0])
    return recipe, build


GENERATORS = {
    "file": gen_file,
    "dir25": lambda s: gen_dir(s, 0.25),
    "dir50": lambda s: gen_dir(s, 0.5),
    "frag": gen_frag,
    "hugedir": gen_hugedir,
    "zero": gen_zero,
    "errors": gen_errors,
}
ALL_IMAGES = "file,dir25,dir50,frag,hugedir,zero,errors"


def image_name(kind, scale):
    if kind == "file" and scale == 1:
        return "file1m"  # the name the first version of this script used
    return f"{kind}-s{scale:g}"


def fs_stats(img):
    """Inodes in use, directories, blocks in use: from dumpe2fs."""
    out = subprocess.run([tool("dumpe2fs"), img], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    head = {}
    dirs = 0
    for line in out.splitlines():
        if ":" in line and not line.startswith(" "):
            k, _, v = line.partition(":")
            head[k.strip()] = v.strip()
        elif "directories" in line:
            for part in line.split(","):
                part = part.strip()
                if part.endswith(" directories"):
                    dirs += int(part.split()[0])
    ic, fi = int(head["Inode count"]), int(head["Free inodes"])
    bc, fb = int(head["Block count"]), int(head["Free blocks"])
    return dict(inodes_used=ic - fi, inode_count=ic, directories=dirs,
                blocks_used=bc - fb, image_bytes=os.path.getsize(img))


def image(kind, scale):
    """Returns (path, params) of a cached image, generating it if needed."""
    name = image_name(kind, scale)
    img = os.path.join(CACHE, name + ".img")
    meta = os.path.join(CACHE, name + ".json")
    if os.path.exists(img) and os.path.exists(meta):
        with open(meta) as fh:
            return img, json.load(fh)
    recipe, build = GENERATORS[kind](scale)
    os.makedirs(CACHE, exist_ok=True)
    if not os.path.exists(img):
        log(f"generating {name}: {recipe['desc']} ...")
        tmp = img + ".tmp"
        t0 = time.monotonic()
        build(tmp)
        os.rename(tmp, img)
        recipe["generate_s"] = round(time.monotonic() - t0, 1)
    r = subprocess.run([tool("e2fsck"), "-fn", img], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    params = dict(recipe, name=name, scale=scale, e2fsck_exit=r.returncode, **fs_stats(img))
    if r.returncode != 0 and "damaged" not in recipe:
        log(f"warning: e2fsck -fn {img} exited {r.returncode}: the image is not clean")
    with open(meta, "w") as fh:
        json.dump(params, fh, indent=2)
    return img, params


# --------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------

def timed(cmd):
    """Runs cmd; returns (exit code, wall seconds, peak RSS in KiB).

    Peak RSS comes from GNU time, not from os.wait4's ru_maxrss: Linux keeps
    a process's RSS high-water mark across exec (exec_mmap folds the old mm's
    hiwater into signal->maxrss), and a child forked or vforked from Python
    starts out as a copy of Python, so ru_maxrss would never be below the
    Python interpreter's own RSS (~10-20 MiB) and would hide a 6 MiB e2fsck.
    GNU time is a small C program: what it inherits is ~2 MiB, and its %M is
    the checker's own peak. The wall time is measured here around the whole
    (time + checker) process; time's own start-up is < 1 ms."""
    rss_file = os.path.join(CACHE, ".rss")
    wrapped = [GNU_TIME, "-q", "-f", "%M", "-o", rss_file] + cmd
    t0 = time.perf_counter()
    p = subprocess.Popen(wrapped, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, _ = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    with open(rss_file) as fh:
        rss = int(fh.read().split()[-1])
    return os.waitstatus_to_exitcode(status), wall, rss


def evict(path):
    """Drops the image's pages from the page cache (cold-cache runs)."""
    os.sync()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def commands(img, threads, baseline=None):
    """e2fsck and pfsck at each thread count; with `baseline` (another
    pfsck binary, e.g. a copy built before a change), that one too, as
    "before -jN", in the same interleaved rounds."""
    cmds = {"e2fsck": [tool("e2fsck"), "-fn", img]}
    for t in threads:
        if baseline:
            cmds[f"before -j{t}"] = [baseline, "-fn", "--threads", str(t), img]
        cmds[f"pfsck -j{t}"] = [PFSCK, "-fn", "--threads", str(t), img]
    return cmds


def measure(name, mode, cmds, runs, cold_path=None, warmup=True):
    """Interleaved runs; one result row per tool."""
    samples = {k: [] for k in cmds}
    if warmup:
        for cmd in cmds.values():
            timed(cmd)
    for _ in range(runs):
        for k, cmd in cmds.items():
            if cold_path:
                evict(cold_path)
            samples[k].append(timed(cmd))
    base = statistics.median(s[1] for s in samples["e2fsck"])
    base_rss = max(s[2] for s in samples["e2fsck"])
    rows = []
    for k, ss in samples.items():
        walls = [s[1] for s in ss]
        rss = max(s[2] for s in ss)
        rows.append(dict(
            image=name, mode=mode, tool=k,
            threads=None if k == "e2fsck" else int(k.split("-j")[1]),
            exit=[s[0] for s in ss], wall_s=[round(w, 4) for w in walls],
            min_s=min(walls), median_s=statistics.median(walls), peak_rss_kib=rss,
            speedup_vs_e2fsck=base / statistics.median(walls), rss_vs_e2fsck=rss / base_rss))
        log(f"  {name:14} {mode:10} {k:10} median {rows[-1]['median_s']:8.3f} s  "
            f"min {rows[-1]['min_s']:8.3f} s  RSS {rss / 1024:7.1f} MiB  exit {rows[-1]['exit']}")
    return rows


def repair_commands(copy, threads):
    cmds = {"e2fsck": [tool("e2fsck"), "-fy", copy]}
    for t in threads:
        cmds[f"pfsck -j{t}"] = [PFSCK, "-fy", "--threads", str(t), copy]
    return cmds


def measure_repair(name, img, threads, runs):
    """-fy of each tool, interleaved, each run on a fresh copy of the image
    (made with holes kept, not timed). After every run `e2fsck -fn` checks
    the copy: its exit codes are kept as `after_e2fsck_fn` (0: repaired)."""
    copy = os.path.join(CACHE, "repair.img")
    undo = copy + ".pfsck-undo"  # pfsck's default undo log beside the image
    cmds = repair_commands(copy, threads)
    samples = {k: [] for k in cmds}
    after = {k: [] for k in cmds}
    try:
        for _ in range(runs):
            for k, cmd in cmds.items():
                run_quiet(["cp", "--sparse=always", img, copy])
                for f in (undo,):
                    if os.path.exists(f):
                        os.unlink(f)
                os.sync()
                samples[k].append(timed(cmd))
                r = subprocess.run([tool("e2fsck"), "-fn", copy], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
                after[k].append(r.returncode)
    finally:
        for f in (copy, undo):
            if os.path.exists(f):
                os.unlink(f)
    base = statistics.median(s[1] for s in samples["e2fsck"])
    base_rss = max(s[2] for s in samples["e2fsck"])
    rows = []
    for k, ss in samples.items():
        walls = [s[1] for s in ss]
        rss = max(s[2] for s in ss)
        rows.append(dict(
            image=name, mode="repair", tool=k,
            threads=None if k == "e2fsck" else int(k.split("-j")[1]),
            exit=[s[0] for s in ss], wall_s=[round(w, 4) for w in walls],
            min_s=min(walls), median_s=statistics.median(walls), peak_rss_kib=rss,
            speedup_vs_e2fsck=base / statistics.median(walls), rss_vs_e2fsck=rss / base_rss,
            after_e2fsck_fn=after[k]))
        log(f"  {name:14} {'repair':10} {k:10} median {rows[-1]['median_s']:8.3f} s  "
            f"min {rows[-1]['min_s']:8.3f} s  RSS {rss / 1024:7.1f} MiB  exit {rows[-1]['exit']}  "
            f"e2fsck -fn after {after[k]}")
    return rows


class SlowDevice:
    """bench/slowfuse serving `img` at CACHE/slow-mnt/image with a latency."""

    def __init__(self, img, latency_ms):
        self.img, self.latency_ms = img, latency_ms
        self.mnt = os.path.join(CACHE, "slow-mnt")

    def __enter__(self):
        os.makedirs(self.mnt, exist_ok=True)
        self.proc = subprocess.Popen(
            [SLOWFUSE, self.img, self.mnt, "--latency-us", str(int(self.latency_ms * 1000))],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        path = os.path.join(self.mnt, "image")
        for _ in range(100):
            if self.proc.poll() is not None:
                raise RuntimeError("slowfuse did not mount: " + self.proc.stderr.read())
            if os.path.exists(path) and os.path.getsize(path) == os.path.getsize(self.img):
                return path
            time.sleep(0.05)
        raise RuntimeError("slowfuse: mount did not appear")

    def __exit__(self, *exc):
        subprocess.run([tool("fusermount3"), "-u", self.mnt], stderr=subprocess.DEVNULL)
        try:
            _, err = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            _, err = self.proc.communicate()
        self.summary = err.strip().splitlines()[-1] if err.strip() else ""


def build_binaries(need_slowfuse):
    subprocess.run(NICE + ["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    if need_slowfuse:
        # Without pfsck's .cargo/config.toml flags (static glibc): rustc
        # refuses them for fuser's proc-macro dependencies. An empty
        # CARGO_ENCODED_RUSTFLAGS replaces every configured flag.
        env = dict(os.environ, CARGO_ENCODED_RUSTFLAGS="")
        subprocess.run(NICE + ["cargo", "build", "--release", "-q"], cwd=SLOWFUSE_DIR, check=True,
                       env=env)


def version(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return (r.stdout.strip().splitlines() or [""])[0]


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------

MODE_ORDER = {"warm": 0, "cold": 1, "repair": 2}


def mode_key(m):
    return (MODE_ORDER.get(m, 3), m)


def by_image_mode(data):
    groups = {}
    for r in data["results"]:
        groups.setdefault((r["image"], r["mode"]), {})[r["tool"]] = r
    images = [p["name"] for p in data["images"]]
    return sorted(groups.items(), key=lambda kv: (images.index(kv[0][0]) if kv[0][0] in images else 99,
                                                  mode_key(kv[0][1])))


def summary_table(data):
    """One row per image and mode: e2fsck's median, each pfsck's median and
    speed-up, and peak RSS of e2fsck and of the largest pfsck."""
    threads = data["meta"]["threads"]
    head = ["image", "cache / device", "e2fsck s"] + [f"pfsck -j{t} s (speed-up)" for t in threads] \
        + ["RSS e2fsck MiB", "RSS pfsck MiB (max)", "exit e2fsck / pfsck"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (img, mode), tools in by_image_mode(data):
        e = tools["e2fsck"]
        cells = [img, mode, f"{e['median_s']:.3f}"]
        pf = [tools[f"pfsck -j{t}"] for t in threads if f"pfsck -j{t}" in tools]
        for p in pf:
            cells.append(f"{p['median_s']:.3f} ({p['speedup_vs_e2fsck']:.2f}x)")
        cells.append(f"{e['peak_rss_kib'] / 1024:.1f}")
        cells.append(f"{max(p['peak_rss_kib'] for p in pf) / 1024:.1f}" if pf else "-")
        exits = sorted({x for p in pf for x in p["exit"]})
        cells.append(f"{','.join(map(str, sorted(set(e['exit']))))} / {','.join(map(str, exits))}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def full_table(data):
    head = ["image", "cache / device", "tool", "min s", "median s", "speed-up (median)",
            "peak RSS MiB", "RSS vs e2fsck", "exit codes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (img, mode), tools in by_image_mode(data):
        for r in tools.values():
            lines.append(f"| {img} | {mode} | {r['tool']} | {r['min_s']:.3f} | {r['median_s']:.3f} | "
                         f"{r['speedup_vs_e2fsck']:.2f}x | {r['peak_rss_kib'] / 1024:.1f} | "
                         f"{r['rss_vs_e2fsck']:.2f} | {','.join(map(str, r['exit']))} |")
    return "\n".join(lines)


def images_table(data):
    head = ["image", "what", "inodes used", "directories", "extents", "blocks used", "image size",
            "made with", "generated in"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in data["images"]:
        extents = f"{p['extents']:,}" if "extents" in p else "-"
        made = f"{p['generate_s']} s" if "generate_s" in p else "(cached)"
        lines.append(f"| {p['name']} | {p['desc']} | {p['inodes_used']:,} | {p['directories']:,} | "
                     f"{extents} | {p['blocks_used']:,} | {p['image_bytes'] / (1 << 30):.2f} GiB | "
                     f"{p['tool']} | {made} |")
    return "\n".join(lines)


TARGETS_THREADS = 2  # this 2-core machine: what --threads auto picks


def targets_table(data):
    """Issue 4's targets, each checked against this run (pfsck at -j2)."""
    res = {(r["image"], r["mode"], r["tool"]): r for r in data["results"]}
    names = {}
    for p in data["images"]:  # the slow-device image comes last: it does not win
        names.setdefault(p["kind"], p["name"])
    if data["meta"].get("slow_image"):
        names["slow"] = data["meta"]["slow_image"]
    pf = f"pfsck -j{TARGETS_THREADS}"

    def speed(kind, mode, tool=pf):
        r = res.get((names.get(kind), mode, tool))
        return r and r["speedup_vs_e2fsck"]

    rows = []
    for what, kind, mode, goal in [("file-intensive, warm", "file", "warm", 3.0),
                                   ("directory-intensive 50%, warm", "dir50", "warm", 2.5),
                                   ("fragmented, warm", "frag", "warm", 2.0),
                                   ("slow device at 1 ms per read", "slow", "slow-1ms", 8.0)]:
        v = speed(kind, mode)
        rows.append((f"{what}: {pf} vs e2fsck", f">= {goal:g}x", v and f"{v:.2f}x", v and v >= goal))
    j1, j2 = speed("file", "warm", "pfsck -j1"), speed("file", "warm", "pfsck -j2")
    v = j1 and j2 and j2 / j1
    rows.append(("file-intensive, warm: pfsck -j2 vs -j1", ">= 1.7x", v and f"{v:.2f}x", v and v >= 1.7))
    # Many errors: correct and no slower than serial (pFSCK falls back to
    # one thread past 10,000 errors).
    for mode, what in [("warm", "check -fn"), ("repair", "repair -fy")]:
        j1, j2 = speed("errors", mode, "pfsck -j1"), speed("errors", mode)
        v = j1 and j2 and j2 / j1
        rows.append((f"many errors, {what}: {pf} vs -j1 (no slower than serial)", ">= 1.0x",
                     v and f"{v:.2f}x", v and v >= 1.0))
        v = speed("errors", mode)
        rows.append((f"many errors, {what}: {pf} vs e2fsck", ">= 1.0x", v and f"{v:.2f}x",
                     v and v >= 1.0))
    worst = None
    for r in data["results"]:
        if r["tool"] != "e2fsck" and (worst is None or r["rss_vs_e2fsck"] > worst["rss_vs_e2fsck"]):
            worst = r
    if worst:
        rows.append(("peak RSS no higher than e2fsck's, every image and mode", "<= 1.00",
                     f"worst {worst['rss_vs_e2fsck']:.2f} ({worst['image']}, {worst['mode']}, {worst['tool']})",
                     worst["rss_vs_e2fsck"] <= 1.0))
    lines = ["| target | goal | measured | met |", "|---|---|---|---|"]
    for what, goal, got, ok in rows:
        lines.append(f"| {what} | {goal} | {got or 'not run'} | "
                     f"{'-' if got is None else ('yes' if ok else '**no**')} |")
    return "\n".join(lines)


def reproduce(data):
    return data["meta"]["command"]


def write_results_md(data, path):
    m = data["meta"]
    json_path = os.path.join(os.path.dirname(os.path.abspath(path)), "results.json")
    json_rel = os.path.relpath(json_path, ROOT)
    default = json_path == DEFAULT_OUT
    report_only = "bench/run.py --report-only" + ("" if default else f" --out {json_rel}")
    what = "this file, the chart and the README table" if default else "this file and the chart"
    text = f"""# Benchmark results

Generated by `bench/run.py` from `{json_rel}` — do not edit by hand.

- **Scale: {m['scale']:g}** of issue 4's sizes ({'full size' if m['scale'] == 1 else 'a reduced run; full-scale figures come later'}).
- Reproduce: `{reproduce(data)}`
  (then `{report_only}` rewrites {what} from the JSON).
- Machine: {m['nproc']} CPUs, {m['date']}; {m['e2fsck']}; pfsck at commit {m['pfsck_commit']}.
- Each figure: {m['runs']} runs per tool and mode, `e2fsck -fn` and `pfsck -fn --threads N` interleaved
  round by round on the same image. *warm*: after one unmeasured run of each tool.
  *cold*: `sync()` and `posix_fadvise(POSIX_FADV_DONTNEED)` on the image before every run.
  *slow-X ms*: the image served by `bench/slowfuse` (FUSE, direct I/O, X ms added to every read
  request, 16 requests in flight at most; see bench/README.md).
  *repair*: `e2fsck -fy` and `pfsck -fy --threads N` on a fresh copy of a damaged image each run
  (the copy is not timed; pfsck writes its undo log beside it), then `e2fsck -fn` on the result.
- Speed-up = e2fsck's median / the tool's median. Peak RSS from GNU time (`%M`); see `timed()` in run.py
  for why not `wait4`.

## Summary (median wall time)

{summary_table(data)}

## Issue 4's targets (pfsck at `--threads {TARGETS_THREADS}`, what `auto` picks on 2 CPUs)

{targets_table(data)}

![speed-up vs e2fsck](results.png)

## Every figure

{full_table(data)}

## Images

{images_table(data)}
"""
    if m.get("notes"):
        text += "\n## Notes\n\n" + "\n".join(f"- {n}" for n in m["notes"]) + "\n"
    with open(path, "w") as fh:
        fh.write(text)


def update_readme(data, path):
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    with open(path) as fh:
        text = fh.read()
    m = data["meta"]
    block = (f"{start}\n"
             f"Scale {m['scale']:g} of issue 4's sizes, {m['nproc']} CPUs, {m['runs']} runs each, median wall "
             f"time, generated by `bench/run.py` ({m['date']}; reproduce: `{reproduce(data)}`; "
             f"every image and mode in bench/RESULTS.md):\n\n"
             f"{targets_table(data)}\n{end}")
    if start in text and end in text:
        a = text.index(start)
        b = text.index(end) + len(end)
        text = text[:a] + block + text[b:]
    else:
        raise SystemExit(f"{path}: no {start} ... {end} markers")
    with open(path, "w") as fh:
        fh.write(text)


def write_chart(data, path):
    """Grouped bars: speed-up vs e2fsck per image, one panel per mode."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is not installed: no chart (pip install matplotlib)")
        return False
    threads = data["meta"]["threads"]
    groups = by_image_mode(data)
    # Panels: warm, cold, then one for every slow-device latency together.
    panels = {}
    for (img, mode), tools in groups:
        title = mode if mode in MODE_ORDER else "slow device (FUSE, per-read latency)"
        label = img if mode in MODE_ORDER else f"{img}\n{mode.removeprefix('slow-')}"
        panels.setdefault(title, []).append((label, tools))
    titles = sorted(panels, key=lambda t: MODE_ORDER.get(t, 3))
    widths = [max(2, len(panels[t])) for t in titles]
    fig, axes = plt.subplots(1, len(titles), figsize=(1.1 * sum(widths) + 2, 4.4), squeeze=False,
                             gridspec_kw=dict(width_ratios=widths))
    for ax, title in zip(axes[0], titles):
        rows = panels[title]
        width = 0.8 / max(1, len(threads))
        for i, t in enumerate(threads):
            ys = [tools.get(f"pfsck -j{t}", {}).get("speedup_vs_e2fsck", 0) for _, tools in rows]
            xs = [k + (i - (len(threads) - 1) / 2) * width for k in range(len(rows))]
            bars = ax.bar(xs, ys, width, label=f"pfsck -j{t}")
            ax.bar_label(bars, fmt="%.1f", fontsize=6)
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_xticks(range(len(rows)), [label for label, _ in rows], rotation=30, ha="right", fontsize=8)
        ax.set_xlim(-0.6, max(1.6, len(rows) - 0.4))
        ax.set_title(title, fontsize=9)
        ax.set_ylabel("speed-up vs e2fsck -fn (median)", fontsize=8)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"pfsck vs e2fsck, scale {data['meta']['scale']:g}, {data['meta']['nproc']} CPUs "
                 f"(1.0 = as fast as e2fsck)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


DEFAULT_OUT = os.path.join(BENCH, "results.json")


def reports(data, out):
    """RESULTS.md and results.png beside the JSON; the README's table only
    for the repository's own bench/results.json (so a test run with --out
    elsewhere leaves the repository alone)."""
    d = os.path.dirname(os.path.abspath(out))
    write_results_md(data, os.path.join(d, "RESULTS.md"))
    write_chart(data, os.path.join(d, "results.png"))
    if os.path.abspath(out) == DEFAULT_OUT:
        update_readme(data, os.path.join(ROOT, "README.md"))
    print(summary_table(data))


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="image sizes as a share of issue 4's (1.0)")
    ap.add_argument("--images", default=ALL_IMAGES, help=f"kinds, default {ALL_IMAGES}")
    ap.add_argument("--threads", default="1,2,4")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default="warm,cold,repair",
                    help="warm, cold (page cache), repair (-fy on copies of the damaged images)")
    ap.add_argument("--slow-latency", default="0.2,1", help="ms per read; empty: no slow-device runs")
    ap.add_argument("--slow-image", default="file", help="kind of image for the slow-device runs")
    ap.add_argument("--slow-scale", type=float, default=None, help="its scale (default --scale)")
    ap.add_argument("--slow-runs", type=int, default=None, help="runs on the slow device (default --runs)")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--report-only", action="store_true", help="rewrite the reports from results.json")
    ap.add_argument("--out", default=DEFAULT_OUT, help="results JSON; RESULTS.md and the PNG go beside it")
    ap.add_argument("--note", action="append", default=[], help="a line for RESULTS.md's notes")
    ap.add_argument("--baseline", default=None,
                    help="another pfsck binary run in the same rounds (\"before -jN\"), to compare a change")
    a = ap.parse_args()

    if a.report_only:
        with open(a.out) as fh:
            reports(json.load(fh), a.out)
        return

    kinds = [k for k in a.images.split(",") if k]
    for k in kinds + [a.slow_image]:
        if k not in GENERATORS:
            raise SystemExit(f"unknown image kind {k!r}; known: {ALL_IMAGES}")
    threads = [int(t) for t in a.threads.split(",")]
    modes = [m for m in a.modes.split(",") if m]
    latencies = [float(x) for x in a.slow_latency.split(",") if x]
    slow_scale = a.slow_scale if a.slow_scale is not None else a.scale

    imgs = [(k,) + image(k, a.scale) for k in kinds]
    slow = image(a.slow_image, slow_scale) if latencies else None
    if a.generate_only:
        for p in [i[2] for i in imgs] + ([slow[1]] if slow else []):
            print(json.dumps(p))
        return
    build_binaries(bool(latencies))

    argv, skip = ["bench/run.py"], False  # --note text stays out of the command line shown
    for x in sys.argv[1:]:
        if skip or x == "--note" or x.startswith("--note="):
            skip = x == "--note"
            continue
        argv.append(x)
    data = dict(meta=dict(
        command=shlex.join(argv), scale=a.scale, runs=a.runs, threads=threads, modes=modes,
        slow_latency_ms=latencies, slow_image=slow[1]["name"] if slow else None,
        nproc=os.cpu_count(), date=time.strftime("%Y-%m-%d %H:%M"),
        e2fsck=version([tool("e2fsck"), "-V"]),
        pfsck_commit=subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                    stdout=subprocess.PIPE, text=True).stdout.strip(),
        notes=a.note), images=[], results=[])
    for _, img, params in imgs:
        data["images"].append(params)
        cmds = commands(img, threads, a.baseline)
        for mode in modes:
            if mode == "repair":
                # Only images made with damage have something to repair.
                if "damaged" in params:
                    data["results"] += measure_repair(params["name"], img, threads, a.runs)
                continue
            data["results"] += measure(params["name"], mode, cmds, a.runs,
                                       cold_path=img if mode == "cold" else None,
                                       warmup=mode == "warm")
    if slow:
        img, params = slow
        if params["name"] not in [p["name"] for p in data["images"]]:
            data["images"].append(params)
        for lat in latencies:
            dev = SlowDevice(img, lat)
            with dev as path:
                # Direct I/O: nothing is cached between runs, no warm-up needed.
                data["results"] += measure(params["name"], f"slow-{lat:g}ms", commands(path, threads, a.baseline),
                                           a.slow_runs or a.runs, warmup=False)
            log(f"  {dev.summary}")
    with open(a.out, "w") as fh:
        json.dump(data, fh, indent=2)
    reports(data, a.out)


if __name__ == "__main__":
    main()
