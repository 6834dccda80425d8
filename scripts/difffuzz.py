#!/usr/bin/env python3
"""Differential fuzzer: pfsck against e2fsck 1.47.4 on damaged images.

From a seed, small base images are made for each profile (ext2/3/4, 1 KiB
and 4 KiB blocks, with and without metadata_csum, inline_data, bigalloc,
quota, meta_bg, no flex_bg, a journal needing recovery, an orphan list, an
orphan file, MMP), populated with `mke2fs -d` from a generated tree (files,
sparse files with extent tree blocks, directories large enough to be
indexed by `e2fsck -fyD`, symlinks, hard links, fifos) and xattrs set with
debugfs. Damage number i is then drawn from Random("SEED/i") alone, so any
damage can be rerun by itself, whatever the worker count: bit flips and
field-aware byte writes in the superblock, group descriptors, bitmaps,
inode records, extent tree, indirect, directory (htree roots included)
and xattr blocks, the journal, the orphan file and the MMP block, and
debugfs edits that keep checksums right (ssv, set_bg, sif, clri, freeb,
setb, freei, seti, unlink, feature).

The k- profiles (KERNEL_PROFILES, run only when named; k-all names them
all) are written by the kernel instead: mke2fs makes the file system
empty, it is loop-mounted (data=writeback with inline_data) and a seeded
workload fills it (small and inline files, files written in pieces,
fallocate'd ranges, sparse files, a two-level extent tree, interleaved
appends, directories the kernel indexes then half emptied, renames, hard
links, symlinks, xattrs up to ea_inode values, a casefold directory).
The crash ones are the backing file copied while still mounted, with
files held open and unlinked: a journal to recover and orphans. A base
must satisfy e2fsck 1.47.4 (-fn clean, or clean after one -fy for a
crash copy). Without root or loop devices they are skipped with a
notice; kernel bases are not the same bytes when rebuilt, so a damage
reruns exactly only on the cached base (same --work).

For each damage:
  * `e2fsck -fn` (with its problem log) and `pfsck -fn --json`: verdicts
    (exit 0 or not), exit codes, e2fsck problem codes; -n must not write;
  * unless both are clean: `pfsck -fy` then `e2fsck -fn` (a false claim is
    an exit 0/1 that e2fsck does not find clean);
  * when pfsck claims its repair (exit 0/1), `e2fsck -fy` on a copy: when
    e2fsck's own repair ends clean, the inodes reachable from the root
    (debugfs `ls -p`, level by level) after each repair: an inode e2fsck
    keeps and pfsck does not is a lost file;
  * a repair that breaks the file system: e2fsck -fn opened the damaged
    image (exit other than 8) and cannot open it after pfsck -fy (exit 8,
    a superblock or descriptors destroyed), whatever pfsck -fy exited;
  * any pfsck panic, signal, timeout (30 s) or exit code outside fsck(8)'s
    bits is a crash.

Findings (false claim, lost file, broken, crash, -n writes) are minimised (the
damaged bytes, split in runs, reduced by delta debugging) and written to
FINDS/<kind>-<profile>-<seed>-<i>/ with the image and repro.sh.

Usage: scripts/difffuzz.py [--seed S] [--count N] [--seconds T]
         [--workers W] [--profiles a,b] [--work DIR] [--finds DIR]
         [--known FILE] [--json FILE] [--only N --keep DIR]
Exit 0 when no false claim, lost file, broken repair, crash or -n write
was found (those listed in --known aside), 1 otherwise, 2 when a tool is
missing.
"""

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
E2FSCK = os.path.join(ROOT, "..", "shared", "tools", "e2fsck-1.47.4")
PFSCK = os.path.join(ROOT, "target", "release", "pfsck")
VERSION = "1"  # bump when base images change, so cached bases are rebuilt
LIMIT = 30  # seconds for any checker run
FAKE_TIME = "1700000000"
BASES_PER_PROFILE = 2
FATAL = ("false-claim", "lost-file", "broken", "crash", "n-wrote")

# name: (mke2fs arguments, size in KiB, post-build step)
PROFILES = {
    "ext2-1k": (["-t", "ext2", "-b", "1024", "-g", "2048"], 8192, None),
    "ext2-4k": (["-t", "ext2", "-b", "4096"], 16384, None),
    "ext3-1k": (["-t", "ext3", "-b", "1024"], 16384, None),
    "ext3-4k-jrec": (["-t", "ext3", "-b", "4096"], 16384, "journal"),
    "ext4-4k": (["-t", "ext4", "-b", "4096"], 16384, None),
    "ext4-1k": (["-t", "ext4", "-b", "1024"], 12288, None),
    "ext4-1k-nocsum": (
        ["-t", "ext4", "-b", "1024", "-O", "^metadata_csum,^metadata_csum_seed,uninit_bg"],
        12288,
        None,
    ),
    "ext4-4k-nocsum": (["-t", "ext4", "-b", "4096", "-O", "^metadata_csum,^64bit"], 16384, None),
    "ext4-inline": (["-t", "ext4", "-b", "4096", "-O", "inline_data"], 16384, None),
    "ext4-bigalloc": (["-t", "ext4", "-b", "1024", "-O", "bigalloc", "-C", "4096"], 16384, None),
    "ext4-quota": (["-t", "ext4", "-b", "1024", "-O", "quota,project"], 12288, None),
    "ext4-metabg": (
        ["-t", "ext4", "-b", "1024", "-g", "1024", "-O", "meta_bg,^resize_inode"],
        12288,
        None,
    ),
    "ext4-noflex": (["-t", "ext4", "-b", "1024", "-O", "^flex_bg"], 12288, None),
    "ext4-jrec": (["-t", "ext4", "-b", "1024"], 12288, "journal"),
    "ext4-orphans": (["-t", "ext4", "-b", "1024"], 12288, "orphans"),
    "ext4-orphanfile": (["-t", "ext4", "-b", "1024", "-O", "orphan_file"], 12288, "orphanfile"),
    "ext4-bigalloc-orphans": (
        ["-t", "ext4", "-b", "1024", "-O", "bigalloc", "-C", "4096"], 16384, "orphans"),
    "ext4-bigalloc-orphanfile": (
        ["-t", "ext4", "-b", "1024", "-O", "bigalloc,orphan_file", "-C", "4096"],
        16384,
        "orphanfile",
    ),
    # MMP: every read-write open waits out the MMP interval (e2fsck about
    # 11 s), hence its low weight in PROFILE_WEIGHT
    "ext4-mmp": (["-t", "ext4", "-b", "4096", "-O", "mmp", "-E", "mmp_update_interval=1"], 16384, None),
}


# Kernel-written bases (issue 13: pfsck was measured less right on file
# systems the kernel wrote than on mke2fs-made ones, which is all the
# profiles above are): mke2fs makes the file system empty, then it is
# loop-mounted and a seeded workload populates it, so the extent trees,
# htrees, inline data, xattrs and allocation are the kernel's. "crash"
# copies the backing file while still mounted, with files held open and
# unlinked: a journal to recover and an orphan list (or orphan file), as
# a crashed kernel leaves them. Only run when named (k-all names them
# all), and skipped with a notice where loop mounts are not permitted.
KERNEL_PROFILES = {
    "k-ext4-4k": (["-t", "ext4", "-b", "4096"], 32768, "kernel"),
    "k-ext4-1k-inline": (["-t", "ext4", "-b", "1024", "-O", "inline_data"], 16384, "kernel"),
    "k-ext4-bigalloc": (
        ["-t", "ext4", "-b", "4096", "-O", "bigalloc", "-C", "16384"], 65536, "kernel"),
    "k-ext4-eainode": (["-t", "ext4", "-b", "4096", "-O", "ea_inode"], 32768, "kernel"),
    # skipped with a notice by a kernel built without CONFIG_UNICODE
    "k-ext4-casefold": (
        ["-t", "ext4", "-b", "4096", "-O", "casefold", "-E", "encoding=utf8"], 32768, "kernel"),
    "k-ext3-4k": (["-t", "ext3", "-b", "4096"], 32768, "kernel"),
    "k-ext4-nocsum": (
        ["-t", "ext4", "-b", "4096", "-O", "^metadata_csum,^metadata_csum_seed"], 32768, "kernel"),
    "k-ext4-crash": (["-t", "ext4", "-b", "4096"], 32768, "kernel-crash"),
    "k-ext4-1k-crash-orphanfile": (
        ["-t", "ext4", "-b", "1024", "-O", "orphan_file"], 16384, "kernel-crash"),
}
MKE2FS_PROFILES = list(PROFILES)
PROFILES.update(KERNEL_PROFILES)

PROFILE_WEIGHT = {"ext4-mmp": 0.1}


def run(cmd, timeout=LIMIT, env=None, stdin=subprocess.DEVNULL):
    """Runs cmd; returns (code, stdout, stderr); code None on timeout."""
    try:
        p = subprocess.run(
            cmd, stdin=stdin, capture_output=True, timeout=timeout, env=env
        )
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode(
            "utf-8", "replace"
        )
    except subprocess.TimeoutExpired:
        return None, "", "timeout"


SPARSE_BLOCK = 4096
ZERO_BLOCK = bytes(SPARSE_BLOCK)


def data_blocks(data):
    """Offsets of the SPARSE_BLOCK blocks of data that are not all zero."""
    return [o for o in range(0, len(data), SPARSE_BLOCK)
            if data[o:o + SPARSE_BLOCK] != ZERO_BLOCK[:len(data) - o]]


def write_sparse(path, data, blocks=None):
    """Writes data to path leaving its zero blocks as holes: the images
    are mostly zeros, and writing them whole costs more than the checks
    on a busy machine (the bytes read back are the same)."""
    with open(path, "wb") as f:
        for o in data_blocks(data) if blocks is None else blocks:
            f.seek(o)
            f.write(data[o:o + SPARSE_BLOCK])
        f.truncate(len(data))


def copy_sparse(src, dst):
    """Copies src to dst, only its data extents (SEEK_DATA/SEEK_HOLE)."""
    with open(src, "rb") as s, open(dst, "wb") as d:
        fd, size, off = s.fileno(), os.fstat(s.fileno()).st_size, 0
        while off < size:
            try:
                start = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:  # ENXIO: no data past off
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            d.seek(start)
            while start < end:
                chunk = os.pread(fd, min(end - start, 1 << 20), start)
                if not chunk:
                    break
                d.write(chunk)
                start += len(chunk)
            off = end
        d.truncate(size)


def debugfs(img, cmds, write=False, bitmaps=False):
    """Runs debugfs commands from a file; returns {command: output}.
    Read-only runs skip the bitmaps (-c) unless asked for them."""
    cf = img + ".cmds"
    with open(cf, "w") as f:
        f.write("\n".join(cmds) + "\n")
    mode = ["-w"] if write else ([] if bitmaps else ["-c"])
    args = ["debugfs"] + mode + ["-f", cf, img]
    env = dict(os.environ, E2FSPROGS_FAKE_TIME=FAKE_TIME)
    _, out, _ = run(args, env=env)
    os.unlink(cf)
    res, cur = {}, None
    # Only a newline ends a line: a repaired name may hold a form feed or
    # a file separator, which str.splitlines() would also split at.
    for line in out.split("\n"):
        if line.startswith("debugfs: "):
            cur = line[len("debugfs: "):]
            res[cur] = []
        elif cur is not None:
            res[cur].append(line)
    return {k: "\n".join(v) for k, v in res.items()}


LS_RE = re.compile(r"^/(\d+)/(\d+)/\d+/\d+/(.*)/(\d*)/$")


def listing(img):
    """{ino: (path, mode, size)} for every inode reachable from the root,
    read level by level with debugfs `ls -p`."""
    found = {2: ("/", 0o40755, 0)}
    level = [(2, "")]
    seen = {2}
    while level:
        cmds = ["ls -p <%d>" % ino for ino, _ in level]
        out = debugfs(img, cmds)
        nxt = []
        for (ino, path), cmd in zip(level, cmds):
            for line in out.get(cmd, "").split("\n"):
                m = LS_RE.match(line)
                if not m:
                    continue
                child, mode, name = int(m.group(1)), int(m.group(2), 8), m.group(3)
                size = int(m.group(4)) if m.group(4) else 0
                if name in (".", "..") or child == 0:
                    continue
                if child not in found:
                    found[child] = (path + "/" + name, mode, size)
                if mode & 0o170000 == 0o040000 and child not in seen:
                    seen.add(child)
                    nxt.append((child, path + "/" + name))
        level = nxt[:2000]
    return found


# --------------------------------------------------------------------------
# Base images


def make_tree(root, rng, inline, big_dir):
    """A generated tree under root; returns the list of relative paths."""
    os.makedirs(root)
    dirs = [""]
    paths = []
    for i in range(rng.randrange(3, 7)):
        parent = rng.choice(dirs)
        d = os.path.join(parent, "d%d" % i)
        os.mkdir(os.path.join(root, d))
        dirs.append(d)
        paths.append(d)
    sizes = [0, 1, 30, 59, 200, 1000, 3000, 5000, 12000, 40000, 70000, 150000]
    for i in range(rng.randrange(8, 16)):
        d = rng.choice(dirs)
        p = os.path.join(d, "f%d" % i)
        size = rng.choice(sizes) if not inline or rng.random() < 0.5 else rng.randrange(0, 60)
        with open(os.path.join(root, p), "wb") as f:
            f.write(rng.randbytes(size))
        paths.append(p)
    # sparse files: one extent per piece, enough for an extent tree block
    for i in range(rng.randrange(1, 3)):
        p = os.path.join(rng.choice(dirs), "sparse%d" % i)
        with open(os.path.join(root, p), "wb") as f:
            for k in range(rng.randrange(6, 12)):
                f.seek(k * 20480)
                f.write(rng.randbytes(1500))
        paths.append(p)
    for i in range(rng.randrange(2, 5)):
        p = os.path.join(rng.choice(dirs), "l%d" % i)
        target = "t" * rng.choice([5, 40, 80, 300])
        os.symlink(target, os.path.join(root, p))
        paths.append(p)
    files = [p for p in paths if os.path.basename(p).startswith("f")]
    for i in range(rng.randrange(1, 3)):
        src = rng.choice(files)
        p = os.path.join(rng.choice(dirs), "h%d" % i)
        os.link(os.path.join(root, src), os.path.join(root, p))
        paths.append(p)
    os.mkfifo(os.path.join(root, "fifo"))
    paths.append("fifo")
    if big_dir:
        d = os.path.join(rng.choice(dirs), "big")
        os.mkdir(os.path.join(root, d))
        for i in range(rng.randrange(60, 180)):
            p = os.path.join(d, "entry-with-a-rather-long-name-%04d" % i)
            with open(os.path.join(root, p), "wb") as f:
                f.write(rng.randbytes(rng.randrange(0, 100)))
        paths.append(d)
    t = int(FAKE_TIME)
    for dp, dn, fn in os.walk(root, topdown=False):
        for n in fn + dn:
            os.utime(os.path.join(dp, n), (t, t), follow_symlinks=False)
    return paths


def crc32c(crc, data):
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc


def dumpe2fs_header(img):
    _, out, _ = run(["dumpe2fs", "-h", img])
    h = {}
    for line in out.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            h[k.strip()] = v.strip()
    return h


def post_journal(img, rng, bs):
    """Committed transactions left in the journal: needs_recovery."""
    out = debugfs(img, ["ffb 8 3000"], bitmaps=True)
    free = [int(w) for w in out.get("ffb 8 3000", "").split() if w.isdigit()]
    cmds = ["jo"]
    for t in range(rng.randrange(1, 4)):
        blocks = rng.sample(free, rng.randrange(1, min(4, len(free)) + 1))
        data = img + ".jdata%d" % t
        with open(data, "wb") as f:
            f.write(rng.randbytes(bs * len(blocks)))
        cmds.append("jw -b %s %s" % (",".join(map(str, blocks)), data))
    cmds.append("jc")
    debugfs(img, cmds, write=True)
    for t in range(4):
        if os.path.exists(img + ".jdata%d" % t):
            os.unlink(img + ".jdata%d" % t)


def post_orphans(img, rng, files):
    """Deleted and truncated files on the orphan list (s_last_orphan)."""
    picks = rng.sample(files, min(3, len(files)))
    inos = [ino for ino, _ in picks]
    cmds = []
    for k, (ino, path) in enumerate(picks):
        if k % 2 == 0:
            cmds += ["unlink %s" % path, "sif <%d> links_count 0" % ino]
        else:
            cmds.append("sif <%d> size 1" % ino)
    cmds.append("ssv last_orphan %d" % inos[0])
    for k, ino in enumerate(inos):
        cmds.append("sif <%d> dtime %d" % (ino, inos[k + 1] if k + 1 < len(inos) else 0))
    debugfs(img, cmds, write=True)


def post_orphanfile(img, rng, files, bs):
    """Deleted files named in orphan file block 0."""
    h = dumpe2fs_header(img)
    oino = int(h["Orphan file inode"])
    picks = rng.sample(files, min(2, len(files)))
    cmds = []
    for ino, path in picks:
        cmds += ["unlink %s" % path, "sif <%d> links_count 0" % ino]
    cmds.append("feature orphan_present")
    debugfs(img, cmds, write=True)
    out = debugfs(img, ["bmap <%d> 0" % oino, "stat <%d>" % oino])
    pblk = int(out["bmap <%d> 0" % oino].split()[0])
    gen = int(re.search(r"Generation: (\d+)", out["stat <%d>" % oino]).group(1))
    with open(img, "rb") as f:
        f.seek(1024)
        sb = f.read(1024)
    incompat = struct.unpack_from("<I", sb, 0x60)[0]
    if incompat & 0x2000:
        seed = struct.unpack_from("<I", sb, 0x270)[0]
    else:
        seed = crc32c(0xFFFFFFFF, sb[0x68:0x78])
    b = bytearray(bs)
    for i, (ino, _) in enumerate(picks):
        struct.pack_into("<I", b, 4 * i, ino)
    struct.pack_into("<I", b, bs - 8, 0x0B10CA04)
    c = crc32c(seed, struct.pack("<I", oino))
    c = crc32c(c, struct.pack("<I", gen))
    c = crc32c(c, struct.pack("<Q", pblk))
    c = crc32c(c, bytes(b[: bs - 8]))
    struct.pack_into("<I", b, bs - 4, c)
    with open(img, "r+b") as f:
        f.seek(pblk * bs)
        f.write(b)


RANGE_RE = re.compile(r"\((ETB\d+|IND|DIND|TIND|[\d]+(?:-[\d]+)?)\):(\d+)(?:-(\d+))?")


def metadata_map(img):
    """Where the metadata of img lives, for aimed damage."""
    h = dumpe2fs_header(img)
    bs = int(h["Block size"])
    m = {
        "bs": bs,
        "blocks": int(h["Block count"]),
        "inodes_count": int(h["Inode count"]),
        "inode_size": int(h.get("Inode size", "128")),
        "features": h.get("Filesystem features", "").split(),
        "desc_size": int(h.get("Group descriptor size", "32")),
        "groups": [],
    }
    _, out, _ = run(["dumpe2fs", img])
    g = None
    for line in out.splitlines():
        if line.startswith("Group "):
            g = {"sb": None, "gdt": None, "bb": None, "ib": None, "it": None}
            m["groups"].append(g)
            continue
        if g is None:
            continue
        r = re.search(r"superblock at (\d+)(?:, Group descriptors at (\d+)-(\d+))?", line)
        if r:
            g["sb"] = int(r.group(1))
            if r.group(2):
                g["gdt"] = [int(r.group(2)), int(r.group(3))]
        for key, pat in (("bb", r"Block bitmap at (\d+)"), ("ib", r"Inode bitmap at (\d+)")):
            r = re.search(pat, line)
            if r:
                g[key] = int(r.group(1))
        r = re.search(r"Inode table at (\d+)-(\d+)", line)
        if r:
            g["it"] = [int(r.group(1)), int(r.group(2))]
    files = listing(img)
    special = [1, 2, 3, 4, 5, 7, 8, 11]
    for key in ("Journal inode", "User quota inode", "Group quota inode",
                "Project quota inode", "Orphan file inode"):
        if key in h and h[key].isdigit():
            special.append(int(h[key]))
    inos = sorted(set(files) | set(special))
    cmds = []
    for ino in inos:
        cmds += ["imap <%d>" % ino, "stat <%d>" % ino]
    out = debugfs(img, cmds)
    m["inodes"] = {}
    m["dirblocks"], m["etb"], m["ind"], m["xattr"] = [], [], [], []
    m["journal"], m["quota"], m["orphan"] = [], [], []
    for ino in inos:
        im = out.get("imap <%d>" % ino, "")
        r = re.search(r"located at block (\d+), offset 0x([0-9a-f]+)", im)
        if not r:
            continue
        st = out.get("stat <%d>" % ino, "")
        info = {
            "off": int(r.group(1)) * bs + int(r.group(2), 16),
            "path": files.get(ino, ("", 0, 0))[0],
            "type": (re.search(r"Type: (\S+)", st) or [None, "?"])[1],
            "index": bool(int((re.search(r"Flags: 0x([0-9a-f]+)", st) or [0, "0"])[1], 16) & 0x1000),
            "data": [],
        }
        acl = re.search(r"File ACL: (\d+)", st)
        if acl and int(acl.group(1)):
            m["xattr"].append(int(acl.group(1)))
        for rr in RANGE_RE.finditer(st):
            what, a = rr.group(1), int(rr.group(2))
            b = int(rr.group(3)) if rr.group(3) else a
            if what.startswith("ETB"):
                m["etb"].append(a)
            elif what in ("IND", "DIND", "TIND"):
                m["ind"].append(a)
            else:
                info["data"] += list(range(a, min(b, a + 64) + 1))
        if info["type"] == "directory":
            m["dirblocks"] += [[ino, k, blk] for k, blk in enumerate(info["data"])]
        if ino == 8 or h.get("Journal inode") == str(ino):
            m["journal"] = info["data"][:64]
        elif h.get("Orphan file inode") == str(ino):
            m["orphan"] = info["data"][:8]
        elif ino in (3, 4) or "quota" in " ".join(k for k in h if h[k] == str(ino)):
            m["quota"] += info["data"][:8]
        m["inodes"][str(ino)] = info
    m["xattr"] = sorted(set(m["xattr"]))
    if "MMP block number" in h:
        m["mmp"] = int(h["MMP block number"])
    return m


# --------------------------------------------------------------------------
# Kernel-written bases

FALLOC_KEEP_SIZE = 1


def libc_fallocate(fd, mode, off, length):
    """fallocate(2) with a mode (os.posix_fallocate has none); raises
    OSError as os calls do."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    if libc.fallocate(fd, mode, off, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def can_mount(work):
    """Whether this process may loop-mount an image (root and a loop
    device); the reason when not."""
    if os.geteuid() != 0:
        return False, "not root"
    probe = os.path.join(work, "mount-probe")
    img, mnt = probe + ".img", probe + ".mnt"
    os.makedirs(mnt, exist_ok=True)
    try:
        with open(img, "wb") as f:
            f.truncate(8 << 20)
        if run(["mke2fs", "-F", "-q", "-t", "ext4", img])[0] != 0:
            return False, "mke2fs failed"
        code, _, err = run(["mount", "-o", "loop", img, mnt])
        if code != 0:
            return False, err.strip() or "mount failed"
        run(["umount", mnt])
        return True, ""
    finally:
        if os.path.exists(img):
            os.unlink(img)
        os.rmdir(mnt)


class KernelWorkload:
    """A seeded workload on a mounted file system, written through the
    kernel. Each step ignores the errors a full file system or a missing
    feature gives (ENOSPC, EOPNOTSUPP on ext3, E2BIG for a large xattr
    without ea_inode), so the same seed makes the same calls."""

    def __init__(self, mnt, rng, bs, mkfs):
        self.mnt, self.rng, self.bs = mnt, rng, bs
        opts = " ".join(mkfs)
        self.inline = "inline_data" in opts
        self.ea_inode = "ea_inode" in opts
        self.casefold = "casefold" in opts
        self.cluster = bs * (4 if "bigalloc" in opts else 1)
        self.dirs = [mnt]
        self.files = []
        self.n = 0

    def path(self, d=None):
        self.n += 1
        return os.path.join(d or self.rng.choice(self.dirs), "k%d" % self.n)

    def guard(self, f, *args):
        try:
            f(*args)
        except OSError:
            pass

    def write(self, p, size):
        with open(p, "wb") as f:
            f.write(self.rng.randbytes(size))
        self.files.append(p)

    def run(self):
        rng = self.rng
        for _ in range(rng.randrange(4, 9)):
            d = self.path()
            self.guard(os.mkdir, d)
            self.dirs.append(d)
        for _ in range(rng.randrange(40, 120)):
            small = rng.random() < (0.7 if self.inline else 0.4)
            self.guard(self.write, self.path(), rng.randrange(0, 60) if small
                       else rng.randrange(60, 3 * self.bs))
        for _ in range(rng.randrange(3, 8)):
            self.guard(self.pieces, self.path())
        for _ in range(rng.randrange(2, 6)):
            self.guard(self.falloc, self.path())
        for _ in range(rng.randrange(1, 4)):
            self.guard(self.sparse, self.path())
        self.guard(self.deep, self.path())
        self.guard(self.interleaved)
        for _ in range(rng.randrange(1, 3)):
            self.guard(self.big_dir)
        self.guard(self.links)
        self.guard(self.xattrs)
        if self.casefold:
            self.guard(self.casefold_dir)
        self.guard(self.deletes)

    def pieces(self, p):
        """A file written in pieces out of order, some fsync'd between."""
        fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            offs = list(range(self.rng.randrange(2, 12)))
            self.rng.shuffle(offs)
            step = self.rng.choice([700, self.bs, 3 * self.bs])
            for k in offs:
                os.pwrite(fd, self.rng.randbytes(step), k * step)
                if self.rng.random() < 0.3:
                    os.fsync(fd)
        finally:
            os.close(fd)
        self.files.append(p)

    def falloc(self, p):
        """Preallocated ranges, past the size (KEEP_SIZE) or not, partly
        written: unwritten extents beside written ones."""
        fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
        self.files.append(p)
        try:
            os.write(fd, self.rng.randbytes(self.rng.randrange(0, 2 * self.bs)))
            for _ in range(self.rng.randrange(1, 4)):
                off = self.rng.randrange(0, 64) * self.bs
                ln = self.rng.randrange(1, 48) * self.bs
                if self.rng.random() < 0.5:
                    os.posix_fallocate(fd, off, ln)
                else:
                    libc_fallocate(fd, FALLOC_KEEP_SIZE, off, ln)
                if self.rng.random() < 0.7:
                    os.pwrite(fd, self.rng.randbytes(self.rng.randrange(1, 2 * self.bs)),
                              off + self.rng.randrange(0, ln))
        finally:
            os.close(fd)

    def sparse(self, p):
        with open(p, "wb") as f:
            for _ in range(self.rng.randrange(1, 6)):
                f.seek(self.rng.randrange(0, 1 << 24))
                f.write(self.rng.randbytes(self.rng.randrange(1, 3 * self.bs)))
            f.truncate(self.rng.randrange(1 << 24, 1 << 26))
        self.files.append(p)

    def deep(self, p):
        """One block in every other cluster: an extent each, more than
        four leaves hold, so the tree is two levels deep (an indirect map
        with double indirect blocks on ext3)."""
        per_leaf = (self.bs - 12) // 12
        n = 4 * per_leaf + self.rng.randrange(5, 60)
        blk = self.rng.randbytes(self.bs)
        fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
        self.files.append(p)
        try:
            for k in range(n):
                os.pwrite(fd, blk, 2 * k * self.cluster)
        finally:
            os.close(fd)

    def interleaved(self):
        """Files appended in turn, fsync'd: their extents interleave."""
        fds = []
        try:
            for _ in range(self.rng.randrange(2, 5)):
                p = self.path()
                fds.append(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644))
                self.files.append(p)
            for _ in range(self.rng.randrange(20, 60)):
                fd = self.rng.choice(fds)
                os.write(fd, self.rng.randbytes(self.rng.randrange(1, 3) * self.bs))
                os.fsync(fd)
        finally:
            for fd in fds:
                os.close(fd)

    def big_dir(self):
        """A directory grown past one block (the kernel indexes it with
        dir_index), then half its entries removed: holes in its blocks,
        and blocks left empty."""
        d = self.path()
        os.mkdir(d)
        self.dirs.append(d)
        names = []
        for i in range(self.rng.randrange(6, 14) * self.bs // 48):
            p = os.path.join(d, "entry-with-a-long-name-%05d-%s" % (i, "x" * self.rng.randrange(0, 30)))
            with open(p, "wb") as f:
                f.write(self.rng.randbytes(self.rng.randrange(0, 80)))
            names.append(p)
        run_start = self.rng.randrange(len(names) // 2)
        gone = set(names[run_start:run_start + len(names) // 4])
        gone |= set(self.rng.sample(names, len(names) // 4))
        for p in names:
            if p in gone:
                os.unlink(p)
            else:
                self.files.append(p)

    def links(self):
        rng = self.rng
        for _ in range(rng.randrange(4, 12)):
            src = rng.choice(self.files)
            if os.path.exists(src):
                dst = self.path()
                self.guard(os.rename, src, dst)
                self.files.append(dst)
        for _ in range(rng.randrange(2, 8)):
            src = rng.choice(self.files)
            if os.path.exists(src):
                dst = self.path()
                self.guard(os.link, src, dst)
                self.files.append(dst)
        for _ in range(rng.randrange(2, 8)):
            target = "/".join("t" * rng.randrange(1, 40) for _ in range(rng.randrange(1, 40)))
            self.guard(os.symlink, target, self.path())

    def xattrs(self):
        """Small values (in the inode), larger ones (an xattr block) and,
        past a block, values in their own inode where ea_inode is on."""
        rng = self.rng
        sizes = [8, 30, 200, 900, self.bs // 2]
        large = rng.randrange(2, 5) if self.ea_inode else 0
        for k in range(rng.randrange(6, 16) + large):
            p = rng.choice(self.files)
            size = self.bs + rng.randrange(1, 3000) if k < large else rng.choice(sizes)
            self.guard(os.setxattr, p, "user.k%d" % rng.randrange(6), rng.randbytes(size))

    def casefold_dir(self):
        d = self.path(self.mnt)
        os.mkdir(d)
        if run(["chattr", "+F", d])[0] != 0:
            return
        self.dirs.append(d)
        for i in range(self.rng.randrange(20, 200)):
            name = "%s-%d-%s" % (self.rng.choice(["Caf\u00e9", "STRASSE", "\u00c5ngstr\u00f6m", "MiXeD"]),
                                 i, "Y" * self.rng.randrange(0, 20))
            self.guard(self.write, os.path.join(d, name), self.rng.randrange(0, 300))

    def deletes(self):
        for p in self.rng.sample(self.files, len(self.files) // 8):
            self.guard(os.unlink, p)

    def hold_orphans(self):
        """Files open and unlinked, some of them truncated after: the
        orphans a crashed kernel leaves. Returns their descriptors."""
        fds = []
        for _ in range(self.rng.randrange(2, 6)):
            p = self.path()
            fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
            os.write(fd, self.rng.randbytes(self.rng.randrange(1, 8 * self.bs)))
            os.fsync(fd)
            os.unlink(p)
            fds.append(fd)
        return fds


def build_kernel(img, mk, kib, post, rng, env):
    """mke2fs makes img empty, the kernel populates it through a loop
    mount; a crash base is the backing file copied while still mounted."""
    code, o, e = run(mk + [img, "%dk" % kib], env=env, timeout=120)
    if code != 0:
        raise RuntimeError("mke2fs %s failed: %s %s" % (img, o, e))
    crash = post == "kernel-crash"
    live = img + ".live" if crash else img
    if crash:
        os.rename(img, live)
    mnt = img + ".mnt"
    os.makedirs(mnt, exist_ok=True)
    # inline_data under data=ordered can deadlock this kernel
    opts = "loop" + (",data=writeback" if "inline_data" in " ".join(mk) else "")
    code, o, e = run(["mount", "-o", opts, live, mnt], timeout=60)
    if code != 0:
        os.rmdir(mnt)
        raise RuntimeError("mount %s failed: %s %s" % (live, o, e))
    held = []
    try:
        bs = os.statvfs(mnt).f_bsize
        w = KernelWorkload(mnt, rng, bs, mk)
        w.run()
        if crash:
            held = w.hold_orphans()
            run(["sync", "-f", mnt], timeout=120)
            code, o, e = run(["cp", "--sparse=always", live, img], timeout=120)
            if code != 0:
                raise RuntimeError("copy of %s failed: %s" % (live, e))
    finally:
        for fd in held:
            os.close(fd)
        for _ in range(50):
            if run(["umount", mnt], timeout=120)[0] == 0:
                break
            time.sleep(0.2)
        os.rmdir(mnt)
        if crash and os.path.exists(live):
            os.unlink(live)


def vet_kernel_base(img, post):
    """A kernel base must be what e2fsck 1.47.4 accepts: clean under -fn,
    or for a crash copy, clean after one -fy. pfsck -fn disagreeing with
    e2fsck -fn is printed, not refused: it is a finding to fix."""
    env = dict(os.environ, E2FSCK_CONFIG="/dev/null")
    copy = img + ".vet"
    copy_sparse(img, copy)
    try:
        e_rc, e_out, _ = run([E2FSCK, "-fn", copy], env=env, timeout=60)
        if post == "kernel-crash":
            run([E2FSCK, "-fy", copy], env=env, timeout=60)
            after, out, _ = run([E2FSCK, "-fn", copy], env=env, timeout=60)
            if after != 0:
                raise RuntimeError("crash base %s: e2fsck -fy leaves it unclean (%s):\n%s"
                                   % (img, after, out[-2000:]))
        elif e_rc != 0:
            raise RuntimeError("kernel base %s: e2fsck -fn exits %s:\n%s" % (img, e_rc, e_out[-2000:]))
        copy_sparse(img, copy)
        p_rc = run([PFSCK, "-fn", copy], timeout=60)[0]
        if (p_rc == 0) != (e_rc == 0):
            print("difffuzz: base %s: e2fsck -fn exits %s, pfsck -fn %s"
                  % (os.path.basename(img), e_rc, p_rc), flush=True)
    finally:
        os.unlink(copy)


def mke2fs_command(rng, mkfs):
    """mke2fs with mkfs's arguments and a UUID and hash seed drawn from
    rng; the command without its device and size, and its environment."""
    uuid = "%08x-%04x-%04x-%04x-%012x" % (
        rng.getrandbits(32), rng.getrandbits(16), 0x4000 | rng.getrandbits(12),
        0x8000 | rng.getrandbits(14), rng.getrandbits(48))
    env = dict(os.environ, E2FSPROGS_FAKE_TIME=FAKE_TIME, MKE2FS_CONFIG="/etc/mke2fs.conf")
    ext = ["-E", "hash_seed=" + uuid]
    mk = ["mke2fs", "-F", "-q", "-U", uuid, "-L", "fz"] + mkfs
    if "-E" in mk:
        i = mk.index("-E")
        mk[i + 1] += ",hash_seed=" + uuid
        ext = []
    return mk + ext, env


def build_kernel_base(img, meta, profile, rng, mkfs, kib, post):
    """A base populated by the kernel (KERNEL_PROFILES), vetted, mapped.
    Not reproducible byte for byte (the kernel's times, allocation and
    writeback order vary): damages are only repeatable on the cached
    base, which a rerun with the same --work reuses."""
    if os.path.exists(img):
        os.unlink(img)
    mk, env = mke2fs_command(rng, mkfs)
    build_kernel(img, mk, kib, post, rng, env)
    vet_kernel_base(img, post)
    m = metadata_map(img)
    m["profile"] = profile
    with open(meta + ".tmp", "w") as f:
        json.dump(m, f)
    os.rename(meta + ".tmp", meta)
    return img


def build_base(profile, variant, seed, work):
    """Makes (or reuses) base image number variant of profile."""
    key = hashlib.sha1(("%s/%s/%s/%s" % (VERSION, profile, variant, seed)).encode()).hexdigest()[:10]
    img = os.path.join(work, "bases", "%s-%d-%s.img" % (profile, variant, key))
    meta = img + ".json"
    if os.path.exists(meta):
        return img
    os.makedirs(os.path.dirname(img), exist_ok=True)
    rng = random.Random("%s/base/%s/%d" % (seed, profile, variant))
    mkfs, kib, post = PROFILES[profile]
    if post and post.startswith("kernel"):
        return build_kernel_base(img, meta, profile, rng, mkfs, kib, post)
    tree = img + ".tree"
    shutil.rmtree(tree, ignore_errors=True)
    inline = "inline_data" in " ".join(mkfs)
    make_tree(tree, rng, inline, big_dir=rng.random() < 0.7)
    if os.path.exists(img):
        os.unlink(img)
    mk, env = mke2fs_command(rng, mkfs)
    code, o, e = run(mk + ["-d", tree, img, str(kib)], env=env, timeout=120)
    shutil.rmtree(tree, ignore_errors=True)
    if code != 0:
        raise RuntimeError("mke2fs %s failed: %s %s" % (profile, o, e))
    files = [(ino, v[0]) for ino, v in listing(img).items()
             if v[1] & 0o170000 == 0o100000 and "/big/" not in v[0]]
    cmds = []
    for ino, path in rng.sample(files, min(4, len(files))):
        size = rng.choice([8, 40, 300, 900])
        vf = img + ".ea%d" % ino
        with open(vf, "wb") as f:
            f.write(bytes(rng.randrange(97, 123) for _ in range(size)))
        cmds.append("ea_set -f %s <%d> user.fz%d" % (vf, ino, size))
    debugfs(img, cmds, write=True)
    for ino, _ in files:
        if os.path.exists(img + ".ea%d" % ino):
            os.unlink(img + ".ea%d" % ino)
    # index the large directories as a kernel would have, and leave the
    # base clean (the index moves blocks, and quota usage with them)
    run([E2FSCK, "-fyD", img], timeout=60)
    for _ in range(3):
        if run([E2FSCK, "-fy", img], timeout=60)[0] == 0:
            break
    bs = int(dumpe2fs_header(img)["Block size"])
    if post == "journal":
        post_journal(img, rng, bs)
    elif post == "orphans":
        post_orphans(img, rng, files)
    elif post == "orphanfile":
        post_orphanfile(img, rng, files, bs)
    m = metadata_map(img)
    m["profile"] = profile
    with open(meta + ".tmp", "w") as f:
        json.dump(m, f)
    os.rename(meta + ".tmp", meta)
    return img


# --------------------------------------------------------------------------
# Damage

SB_FIELDS = [  # (offset, size) in the superblock
    (0x00, 4), (0x04, 4), (0x08, 4), (0x0C, 4), (0x10, 4), (0x14, 4), (0x18, 4),
    (0x1C, 4), (0x20, 4), (0x24, 4), (0x28, 4), (0x38, 2), (0x3A, 2), (0x3C, 2),
    (0x4C, 4), (0x54, 4), (0x58, 2), (0x5A, 2), (0x5C, 4), (0x60, 4), (0x64, 4),
    (0xCE, 2), (0xE0, 4), (0xE8, 4), (0xFC, 1), (0xFE, 2), (0x104, 4), (0x15C, 2),
    (0x15E, 2), (0x160, 4), (0x166, 2), (0x168, 8), (0x174, 1), (0x175, 1),
    (0x240, 4), (0x244, 4), (0x26C, 4), (0x270, 4), (0x27C, 2), (0x280, 4), (0x3FC, 4),
]
GD_FIELDS = [(0, 4), (4, 4), (8, 4), (0xC, 2), (0xE, 2), (0x10, 2), (0x12, 2),
             (0x18, 2), (0x1A, 2), (0x1C, 2), (0x1E, 2)]
INODE_FIELDS = [(0, 2), (2, 2), (4, 4), (0x14, 4), (0x1A, 2), (0x1C, 4), (0x20, 4),
                (0x28, 4), (0x2C, 4), (0x30, 4), (0x34, 4), (0x38, 4), (0x3C, 4),
                (0x40, 4), (0x44, 4), (0x48, 4), (0x4C, 4), (0x50, 4), (0x54, 4),
                (0x58, 4), (0x5C, 4), (0x60, 4), (0x68, 4), (0x6C, 4), (0x74, 2),
                (0x76, 2), (0x80, 2), (0x9C, 4)]
JSB_FIELDS = [(0, 4), (4, 4), (0xC, 4), (0x10, 4), (0x14, 4), (0x18, 4), (0x1C, 4),
              (0x20, 4), (0x24, 4), (0x28, 4), (0x2C, 4), (0x40, 4), (0x50, 1), (0xFC, 4)]
XATTR_FIELDS = [(0, 4), (4, 4), (8, 4), (12, 4), (16, 4), (32, 1), (33, 1), (34, 2),
                (36, 4), (40, 4), (44, 4)]
SSV = ["free_blocks_count", "free_inodes_count", "inodes_count", "blocks_count",
       "first_data_block", "log_block_size", "blocks_per_group", "inodes_per_group",
       "magic", "state", "errors", "rev_level", "first_ino", "inode_size",
       "feature_compat", "feature_incompat", "feature_ro_compat", "last_orphan",
       "journal_inum", "first_meta_bg", "log_groups_per_flex", "usr_quota_inum",
       "grp_quota_inum", "prj_quota_inum", "mmp_block", "mmp_update_interval",
       "desc_size", "reserved_gdt_blocks", "min_extra_isize", "want_extra_isize",
       "r_blocks_count", "def_hash_version", "orphan_file_inum", "encoding",
       "lastcheck", "mtime", "wtime", "checksum_type", "cluster_size" if False else "log_cluster_size"]
SET_BG = ["block_bitmap", "inode_bitmap", "inode_table", "free_blocks_count",
          "free_inodes_count", "used_dirs_count", "flags", "itable_unused", "checksum"]
SIF = ["mode", "uid", "size", "links_count", "blocks", "flags", "file_acl", "dtime",
       "block[0]", "block[1]", "block[2]", "block[3]", "block[4]", "block[5]",
       "block[IND]", "block[DIND]", "block[TIND]", "generation", "extra_isize",
       "checksum", "projid", "gid", "size_high" if False else "mtime"]
FEATURES = ["has_journal", "^has_journal", "extent", "^extent", "dir_index",
            "^dir_index", "filetype", "^filetype", "sparse_super", "^sparse_super",
            "large_file", "huge_file", "^huge_file", "flex_bg", "^flex_bg",
            "metadata_csum", "^metadata_csum", "inline_data", "^inline_data",
            "64bit", "bigalloc", "^bigalloc", "quota", "^quota", "meta_bg",
            "^meta_bg", "mmp", "^mmp", "needs_recovery", "^needs_recovery",
            "orphan_present", "orphan_file", "^orphan_file", "uninit_bg", "^uninit_bg",
            "resize_inode", "^resize_inode", "dir_nlink", "extra_isize", "casefold",
            "encrypt", "ea_inode", "large_dir", "journal_dev", "verity", "project"]


def value(rng, old, size, m):
    """An interesting value for a field of size bytes holding old."""
    top = (1 << (8 * size)) - 1
    c = rng.randrange(12)
    if c == 0:
        return 0
    if c == 1:
        return top
    if c == 2:
        return (old + rng.choice([1, -1, 2, -2])) & top
    if c == 3:
        return old ^ (1 << rng.randrange(8 * size))
    if c == 4:
        return rng.randrange(m["blocks"]) & top
    if c == 5:
        return (m["blocks"] + rng.randrange(1, 1000)) & top
    if c == 6:
        return rng.randrange(1, m["inodes_count"] + 1) & top
    if c == 7:
        return (m["inodes_count"] + rng.randrange(1, 100)) & top
    if c == 8:
        return (old * 2) & top
    if c == 9:
        return rng.choice([1, 2, 7, 8, 11, 12, 0x10, 0x80, 0x7F]) & top
    if c == 10:
        return (top >> 1) & top
    return rng.getrandbits(8 * size)


def regions(m):
    """Damageable metadata areas: kind -> list of (byte offset, length)."""
    bs = m["bs"]
    r = {"sb": [(1024, 1024)]}
    for g in m["groups"]:
        if g["gdt"]:
            r.setdefault("gdt", []).append((g["gdt"][0] * bs, (g["gdt"][1] - g["gdt"][0] + 1) * bs))
        if g["sb"] not in (None, 0, 1):
            r.setdefault("backup-sb", []).append((g["sb"] * bs, 1024))
        if g["bb"] is not None:
            r.setdefault("block-bitmap", []).append((g["bb"] * bs, bs))
        if g["ib"] is not None:
            r.setdefault("inode-bitmap", []).append((g["ib"] * bs, bs))
    r["inode"] = [(v["off"], m["inode_size"]) for v in m["inodes"].values()]
    for kind in ("etb", "ind", "xattr", "journal", "quota", "orphan"):
        if m[kind]:
            r[kind] = [(b * bs, bs) for b in m[kind]]
    if m["dirblocks"]:
        r["dir"] = [(b * bs, bs) for _, _, b in m["dirblocks"]]
    if "mmp" in m:
        r["mmp"] = [(m["mmp"] * bs, bs)]
    return r


WEIGHTS = {"sb": 6, "gdt": 6, "backup-sb": 1, "block-bitmap": 3, "inode-bitmap": 3,
           "inode": 12, "etb": 4, "ind": 3, "xattr": 3, "journal": 3, "quota": 2,
           "orphan": 2, "dir": 8, "mmp": 1}


def rd(data, off, size, big=False):
    return int.from_bytes(data[off:off + size], "big" if big else "little")


def wr(off, size, v, big=False):
    return ("bytes", off, (v & ((1 << (8 * size)) - 1)).to_bytes(size, "big" if big else "little"))


def field_damage(rng, m, data, kind, off, length):
    """A write of an interesting value into one field of the structure at off."""
    bs = m["bs"]
    if kind in ("sb", "backup-sb"):
        fo, sz = rng.choice(SB_FIELDS)
    elif kind == "gdt":
        n = length // m["desc_size"]
        g = rng.randrange(max(1, min(n, len(m["groups"]))))
        fo, sz = rng.choice(GD_FIELDS)
        fo += g * m["desc_size"]
    elif kind == "inode":
        fo, sz = rng.choice([f for f in INODE_FIELDS if f[0] + f[1] <= m["inode_size"]])
    elif kind == "journal" and off == m["journal"][0] * bs:
        fo, sz = rng.choice(JSB_FIELDS)
        old = rd(data, off + fo, sz, True)
        return wr(off + fo, sz, value(rng, old, sz, m), True), "jsb+0x%x" % fo
    elif kind == "xattr":
        fo, sz = rng.choice(XATTR_FIELDS)
    elif kind == "etb":
        n = max(1, rd(data, off + 2, 2))
        fo = rng.choice([0, 2, 4, 6]) if rng.random() < 0.4 else 12 + 12 * rng.randrange(n) + rng.choice([0, 4, 6, 8])
        sz = 2 if fo < 12 or (fo - 12) % 12 in (4, 6) else 4
    elif kind == "dir":
        entries, p = [], 0
        while p + 8 <= length and len(entries) < 200:
            entries.append(p)
            rl = rd(data, off + p + 4, 2)
            if rl < 8:
                break
            p += rl
        if rng.random() < 0.3 and rd(data, off + 0x1C, 1) in (8,):  # dx root info
            fo, sz = rng.choice([(0x1C, 1), (0x1D, 1), (0x1E, 1), (0x20, 2), (0x22, 2), (0x24, 4), (0x2C, 4)])
        else:
            e = rng.choice(entries) if entries else 0
            fo, sz = rng.choice([(0, 4), (4, 2), (6, 1), (7, 1), (8, 1)])
            fo += e
    else:
        fo, sz = rng.randrange(0, max(1, length - 4)) & ~3, 4
    old = rd(data, off + fo, sz)
    return wr(off + fo, sz, value(rng, old, sz, m)), "%s+0x%x/%d" % (kind, fo, sz)


def debugfs_damage(rng, m):
    """A debugfs edit (checksums kept right)."""
    inos = [int(k) for k in m["inodes"]]
    c = rng.randrange(10)
    if c < 2:
        f = rng.choice(SSV)
        v = value(rng, 0, 4, m) if rng.random() < 0.7 else rng.randrange(0, 64)
        return "ssv %s %d" % (f, v)
    if c < 4:
        g = rng.randrange(len(m["groups"]))
        f = rng.choice(SET_BG)
        return "set_bg %d %s %d" % (g, f, value(rng, 0, 2 if "count" in f else 4, m))
    if c < 7:
        ino = rng.choice(inos)
        f = rng.choice(SIF)
        return "sif <%d> %s %d" % (ino, f, value(rng, 0, 4, m))
    if c == 7:
        return rng.choice(["clri", "freei", "seti"]) + " <%d>" % rng.choice(inos + [rng.randrange(1, m["inodes_count"] + 1)])
    if c == 8:
        b = rng.randrange(m["blocks"])
        return "%s %d %d" % (rng.choice(["freeb", "setb"]), b, rng.choice([1, 1, 2, 8]))
    if rng.random() < 0.5:
        paths = [v["path"] for v in m["inodes"].values() if v["path"] not in ("", "/")]
        if paths:
            return "unlink %s" % rng.choice(paths)
    return "feature %s" % rng.choice(FEATURES)


def make_damage(rng, m, data):
    """A list of ops and a description."""
    regs = regions(m)
    kinds = [k for k in WEIGHTS if k in regs]
    ops, desc = [], []
    for _ in range(rng.choice([1, 1, 1, 1, 2, 2, 3])):
        how = rng.random()
        if how < 0.2:
            cmd = debugfs_damage(rng, m)
            ops.append(("debugfs", cmd))
            desc.append(cmd)
            continue
        kind = rng.choices(kinds, [WEIGHTS[k] for k in kinds])[0]
        off, length = rng.choice(regs[kind])
        if kind == "journal" and rng.random() < 0.5:
            off, length = regs[kind][0]
        if how < 0.6:
            bits = rng.choice([1, 1, 2, 3, 8])
            for _ in range(bits):
                p = off + rng.randrange(length)
                ops.append(("flip", p, 1 << rng.randrange(8)))
            desc.append("flip %d bit(s) in %s@%d" % (bits, kind, off))
        elif how < 0.95:
            op, d = field_damage(rng, m, data, kind, off, length)
            ops.append(op)
            desc.append("write " + d + "@%d" % off)
        else:
            n = rng.choice([8, 64, 512])
            p = off + rng.randrange(max(1, length - n))
            ops.append(("bytes", p, rng.choice([bytes(n), b"\xff" * n, rng.randbytes(n)])))
            desc.append("overwrite %d bytes in %s@%d" % (n, kind, off))
    return ops, "; ".join(desc)


def apply_damage(img, ops):
    cmds = []
    with open(img, "r+b") as f:
        for op in ops:
            if op[0] == "flip":
                f.seek(op[1])
                b = f.read(1)
                if b:
                    f.seek(op[1])
                    f.write(bytes([b[0] ^ op[2]]))
            elif op[0] == "bytes":
                f.seek(op[1])
                f.write(op[2])
            else:
                cmds.append(op[1])
    if cmds:
        size = os.path.getsize(img)
        debugfs(img, cmds, write=True)
        # debugfs writes its superblock where a damaged first_data_block
        # puts it (terabytes out, as a sparse hole that every later copy
        # fills): the device keeps its size
        if os.path.getsize(img) > size:
            os.truncate(img, size)


# --------------------------------------------------------------------------
# Checking


def file_hash(p):
    h = hashlib.blake2b(digest_size=16)
    with open(p, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


class Checker:
    def __init__(self, wdir, pfsck, e2fsck, threads):
        self.wdir = wdir
        self.pfsck = pfsck
        self.e2fsck = e2fsck
        self.threads = threads
        # -n must not write: the file's mtime and size tell, a hash of
        # its bytes as well when asked (slower)
        self.hash_n = False
        os.makedirs(wdir, exist_ok=True)
        self.plog = os.path.join(wdir, "plog")
        self.conf = os.path.join(wdir, "e2fsck.conf")
        with open(self.conf, "w") as f:
            f.write("[options]\n problem_log_filename = %s\n" % self.plog)

    def e2fsck_run(self, img, opt, log=False):
        env = dict(os.environ)
        if log:
            env["E2FSCK_CONFIG"] = self.conf
            if os.path.exists(self.plog):
                os.unlink(self.plog)
        else:
            env["E2FSCK_CONFIG"] = "/dev/null"
        code, out, err = run([self.e2fsck, opt, img], env=env)
        if log and "Signal (" in out + err and opt == "-fn":
            # Writing some problems to the log crashes e2fsck 1.47.4 (its
            # handler exits 8: seen on 0x050018 in fz36 #1757 and ten
            # others); its verdict is that of the run without the log,
            # the codes logged before the crash are kept.
            code, out, _ = run([self.e2fsck, opt, img], env=dict(env, E2FSCK_CONFIG="/dev/null"))
        codes = []
        if log and os.path.exists(self.plog):
            with open(self.plog, errors="replace") as f:
                for mm in re.finditer(r'<problem code="0x([0-9a-f]+)"(?: [^>]*?ino="(\d+)")?', f.read()):
                    codes.append((int(mm.group(1), 16), int(mm.group(2) or 0)))
        return code, codes, out

    def pfsck_run(self, img, opts, json_out=False):
        undo = img + ".undo"
        args = [self.pfsck] + opts + ["-m", str(self.threads), "-z", undo]
        if json_out:
            args.append("--json")
        code, out, err = run(args + [img])
        if os.path.exists(undo):
            os.unlink(undo)
        crash = None
        if code is None:
            crash = "timeout"
        elif code < 0:
            crash = "signal %d" % -code
        elif "panicked" in err or code == 101:
            crash = "panic: " + err.strip()[-300:]
        elif not (0 <= code < 16 or code == 32):
            crash = "exit %d" % code
        codes = []
        if json_out and code is not None:
            try:
                j = json.loads(out)
                for p in j.get("problems", []):
                    for e in p.get("e2fsck") or []:
                        codes.append((int(e["code"], 16), int(e.get("ino") or 0)))
            except (ValueError, KeyError, TypeError):
                pass
        return code, crash, codes

    def check(self, img, stop_early=None):
        """All the comparisons on damaged image img (left unchanged)."""
        r = {}
        st = os.stat(img)
        h0 = (st.st_mtime_ns, st.st_size, file_hash(img) if self.hash_n else None)
        e_rc, e_codes, e_out = self.e2fsck_run(img, "-fn", log=True)
        r["e_rc"] = e_rc
        if e_rc is None:
            r["oracle_timeout"] = True
            return r
        if journal_sb_write(img, e_out):
            # e2fsck -n tried to write the journal superblock (1.47.4
            # clears a journal's s_errno even read-only) and failed: its
            # exit says so, not the file system. Its verdict is left out,
            # the repair still judged.
            r["oracle_wrote"] = True
        p_rc, crash, p_codes = self.pfsck_run(img, ["-fn"], json_out=True)
        r["p_rc"] = p_rc
        if crash:
            r["crash"] = "-fn: " + crash
        st = os.stat(img)
        if (st.st_mtime_ns, st.st_size, file_hash(img) if self.hash_n else None) != h0:
            r["n_wrote"] = True
        r["e_codes"] = sorted(set(c for c, _ in e_codes))
        r["p_codes"] = sorted(set(c for c, _ in p_codes))
        if e_rc == 0 and p_rc == 0:
            return r
        if stop_early == "n":
            return r
        pimg = os.path.join(self.wdir, "p.img")
        copy_sparse(img, pimg)
        py, crash, _ = self.pfsck_run(pimg, ["-fy"])
        r["py_rc"] = py
        if crash and "crash" not in r:
            r["crash"] = "-fy: " + crash
        if py is not None:
            after, _, _ = self.e2fsck_run(pimg, "-fn")
            r["p_after"] = after
            if after is None:
                r["oracle_timeout"] = True
        if stop_early == "claim" or py not in (0, 1):
            # a lost file is judged only where pfsck claims its repair
            return r
        eimg = os.path.join(self.wdir, "e.img")
        copy_sparse(img, eimg)
        ey, _, _ = self.e2fsck_run(eimg, "-fy")
        r["ey_rc"] = ey
        if ey is not None and ey < 8:
            eafter, _, _ = self.e2fsck_run(eimg, "-fn")
            r["e_after"] = eafter
            if eafter == 0 and py is not None and "crash" not in r:
                le, lp = listing(eimg), listing(pimg)
                # /lost+found is the checker's own directory, not a file:
                # e2fsck may make a new one in an inode pfsck leaves free.
                lost = sorted(i for i in le if i not in lp and le[i][0] != "/lost+found")
                r["lost"] = [(i, le[i][0]) for i in lost][:20]
                r["moved"] = sum(1 for i in le if i in lp and lp[i][0] != le[i][0])
                r["resized"] = sum(1 for i in le if i in lp and lp[i][2] != le[i][2]
                                   and le[i][1] & 0o170000 == 0o100000)
        return r


def journal_sb_write(img, e_out):
    """Did e2fsck -n fail to write the journal superblock (block 0 of the
    journal inode)? Other writes it attempts under -n (a bitmap it
    relocates) end in an abort pfsck -n mirrors, and keep their verdict."""
    m = re.search(r"Error writing block (\d+)", e_out)
    if not m:
        return False
    code, out, _ = run(["debugfs", "-R", "bmap <8> 0", img])
    return code == 0 and out.strip() == m.group(1)


def findings(r):
    """The fatal kinds in a check result."""
    k = []
    if r.get("crash"):
        k.append("crash")
    if r.get("n_wrote"):
        k.append("n-wrote")
    if r.get("py_rc") in (0, 1) and r.get("p_after") not in (0, None):
        k.append("false-claim")
    if r.get("lost") and r.get("py_rc") in (0, 1):
        k.append("lost-file")
    if r.get("e_rc") not in (8, None) and r.get("p_after") == 8:
        k.append("broken")
    return k


# --------------------------------------------------------------------------
# Minimisation


def diff_chunks(base, damaged):
    """Runs of differing bytes (merged when under 16 bytes apart)."""
    chunks = []
    a, b = base, damaged
    step = 4096
    for blk in range(0, len(b), step):
        if a[blk:blk + step] == b[blk:blk + step]:
            continue
        for i in range(blk, min(blk + step, len(b))):
            if a[i] != b[i]:
                if chunks and i - chunks[-1][1] <= 16:
                    chunks[-1][1] = i + 1
                else:
                    chunks.append([i, i + 1])
    return [(s, bytes(b[s:e])) for s, e in chunks]


def minimise(chk, base, chunks, kind, budget=24):
    """Delta debugging over chunks: the fewest that still show kind."""
    tries = [0]

    def holds(sub):
        if tries[0] >= budget:
            return False
        tries[0] += 1
        img = os.path.join(chk.wdir, "min.img")
        write_sparse(img, base)
        with open(img, "r+b") as f:
            for off, data in sub:
                f.seek(off)
                f.write(data)
        stop = {"crash": None, "n-wrote": "n", "false-claim": "claim",
                "broken": "claim"}.get(kind)
        return kind in findings(chk.check(img, stop_early=stop))

    cur, n = list(chunks), 2
    while len(cur) >= 2 and tries[0] < budget:
        size = (len(cur) + n - 1) // n
        parts = [cur[i:i + size] for i in range(0, len(cur), size)]
        done = False
        for k in range(len(parts)):
            rest = [c for j, p in enumerate(parts) if j != k for c in p]
            if holds(parts[k]):
                cur, n, done = parts[k], 2, True
                break
            if len(parts) > 2 and holds(rest):
                cur, n, done = rest, max(n - 1, 2), True
                break
        if not done:
            if n >= len(cur):
                break
            n = min(len(cur), 2 * n)
    return cur


# --------------------------------------------------------------------------
# Driver

_G = {}


def worker_init(opts):
    _G.update(opts)
    _G["bases"] = {}
    _G["base_blocks"] = {}
    wdir = os.path.join(opts["work"], "w%d" % os.getpid())
    shutil.rmtree(wdir, ignore_errors=True)
    _G["chk"] = Checker(wdir, opts["pfsck"], opts["e2fsck"], opts["threads"])


def base_bytes(img):
    if img not in _G["bases"]:
        with open(img, "rb") as f:
            data = f.read()
        with open(img + ".json") as f:
            m = json.load(f)
        _G["bases"][img] = (data, m)
        _G["base_blocks"][img] = data_blocks(data)
    return _G["bases"][img]


def one(task):
    i, img = task
    if time.time() > _G["deadline"]:
        return None
    t0 = time.time()
    base, m = base_bytes(img)
    rng = random.Random("%s/%d" % (_G["seed"], i))
    chk = _G["chk"]
    dimg = os.path.join(chk.wdir, "d.img")
    write_sparse(dimg, base, _G["base_blocks"][img])
    if i < _G["nbases"]:
        ops, desc = [], "none (the base image)"
    else:
        ops, desc = make_damage(rng, m, base)
        apply_damage(dimg, ops)
    if _G.get("keep"):
        os.makedirs(_G["keep"], exist_ok=True)
        copy_sparse(dimg, os.path.join(_G["keep"], "%s-%d.img" % (_G["seed"], i)))
    r = chk.check(dimg)
    r.update(i=i, profile=m["profile"], damage=desc, base=os.path.basename(img))
    kinds = [k for k in findings(r) if "%s/%d/%s" % (_G["seed"], i, k) not in _G["known"]]
    r["findings"] = kinds
    if kinds and _G["finds"]:
        with open(dimg, "rb") as f:
            damaged = f.read()
        chunks = diff_chunks(base, damaged)
        kind = kinds[0]
        keep = minimise(chk, base, chunks, kind, _G["minimise"]) if len(chunks) > 1 else chunks
        out = os.path.join(_G["finds"], "%s-%s-%s-%d" % (kind, m["profile"], _G["seed"], i))
        os.makedirs(out, exist_ok=True)
        write_sparse(os.path.join(out, "damaged.img"), base, _G["base_blocks"][img])
        with open(os.path.join(out, "damaged.img"), "r+b") as f:
            for off, data in keep:
                f.seek(off)
                f.write(data)
        with open(os.path.join(out, "repro.sh"), "w") as f:
            f.write(REPRO % {"kind": kind, "desc": desc, "seed": _G["seed"], "i": i,
                             "chunks": ", ".join("%d+%d" % (o, len(d)) for o, d in keep),
                             "root": ROOT})
        os.chmod(os.path.join(out, "repro.sh"), 0o755)
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump(r, f, indent=1)
        r["repro"] = out
    r["secs"] = round(time.time() - t0, 2)
    return r


REPRO = """#!/bin/sh
# %(kind)s found by scripts/difffuzz.py --seed %(seed)s (damage %(i)d):
#   %(desc)s
# minimised changes from the base image (offset+length): %(chunks)s
# Rerun the damage alone: scripts/difffuzz.py --seed %(seed)s --only %(i)d
set -x
D=$(dirname "$0")
P=${PFSCK:-%(root)s/target/release/pfsck}
E=${E2FSCK:-%(root)s/../shared/tools/e2fsck-1.47.4}
cp --sparse=always "$D/damaged.img" /tmp/repro-$$.img
timeout -s KILL 30 "$E" -fn /tmp/repro-$$.img </dev/null; echo "e2fsck -fn: $?"
"$P" -fn /tmp/repro-$$.img; echo "pfsck -fn: $?"
"$P" -fy -z /tmp/repro-$$.undo /tmp/repro-$$.img; echo "pfsck -fy: $?"
timeout -s KILL 30 "$E" -fn /tmp/repro-$$.img </dev/null; echo "e2fsck -fn after: $?"
rm -f /tmp/repro-$$.img /tmp/repro-$$.undo
"""


def build_one(args):
    profile, variant, seed, work = args
    return build_base(profile, variant, seed, work)


def main():
    global E2FSCK, PFSCK
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", default="1")
    ap.add_argument("--count", type=int, default=200, help="damages (bases' own checks included)")
    ap.add_argument("--start", type=int, default=0, help="first damage number")
    ap.add_argument("--only", type=int, help="run damage number N alone")
    ap.add_argument("--seconds", type=float, default=1e9, help="stop starting damages after this")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--bases", type=int, default=BASES_PER_PROFILE, help="base images per profile")
    ap.add_argument("--threads", type=int, default=1, help="pfsck -m")
    ap.add_argument("--profiles", default=",".join(MKE2FS_PROFILES),
                    help="comma-separated; the mke2fs-made ones by default, k-all for "
                    "every kernel-written one")
    ap.add_argument("--work", default=os.path.join(ROOT, "target", "tmp", "difffuzz"))
    ap.add_argument("--finds", default="/work/fuzzfinds", help="reproducers ('' for none)")
    ap.add_argument("--no-minimise", action="store_true")
    ap.add_argument("--min-tries", type=int, default=24, help="checks spent minimising a finding")
    ap.add_argument("--summarise", nargs="+", metavar="JSON",
                    help="print the figures of earlier --json files together, run nothing")
    ap.add_argument("--known", help="file of SEED/I/KIND lines to tolerate")
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--pfsck", default=PFSCK)
    ap.add_argument("--e2fsck", default=E2FSCK)
    ap.add_argument("--keep", help="copy each damaged image to KEEP/<seed>-<i>.img (with --only)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    # The base images are built with the e2fsck named here too (workers
    # are forked and inherit it), not only the checks.
    E2FSCK, PFSCK = a.e2fsck, a.pfsck
    if a.summarise:
        results = []
        for p in a.summarise:
            with open(p) as f:
                results += json.load(f)
        return summary(results, a, 0)
    for t in (a.pfsck, a.e2fsck):
        if not os.access(t, os.X_OK):
            print("difffuzz: %s is missing" % t)
            return 2
    for t in ("mke2fs", "debugfs", "dumpe2fs"):
        if not shutil.which(t):
            print("difffuzz: %s is missing" % t)
            return 2
    profiles = []
    for p in a.profiles.split(","):
        profiles += list(KERNEL_PROFILES) if p == "k-all" else [p] if p else []
    for p in profiles:
        if p not in PROFILES:
            print("difffuzz: unknown profile %s (%s)" % (p, ", ".join(PROFILES)))
            return 2
    t0 = time.time()
    os.makedirs(a.work, exist_ok=True)
    kernel = [p for p in profiles if p in KERNEL_PROFILES]
    if kernel:
        ok, why = can_mount(a.work)
        if not ok:
            print("difffuzz: notice: loop mounts not permitted here (%s): profiles %s skipped"
                  % (why, ", ".join(kernel)), flush=True)
            profiles = [p for p in profiles if p not in KERNEL_PROFILES]
        for p in kernel:
            feats = [f for f in ("casefold", "encrypt", "verity")
                     if f in " ".join(PROFILES[p][0])
                     and not os.path.exists("/sys/fs/ext4/features/" + f)]
            if ok and feats:
                print("difffuzz: notice: this kernel's ext4 has no %s: profile %s skipped"
                      % (", ".join(feats), p), flush=True)
                profiles.remove(p)
        if not profiles:
            return 0
    known = set()
    if a.known:
        with open(a.known) as f:
            known = {l.split("#")[0].strip() for l in f if l.split("#")[0].strip()}
    specs = [(p, v, a.seed, a.work) for v in range(a.bases) for p in profiles]
    with multiprocessing.Pool(a.workers) as pool:
        bases = pool.map(build_one, specs)
    nb = len(bases)
    print("difffuzz: %d base images in %.0f s" % (nb, time.time() - t0), flush=True)
    if a.only is not None:
        idx = [a.only]
    else:
        idx = range(a.start, a.start + a.count)
    def base_of(i):
        if i < nb:
            return bases[i]
        r = random.Random("%s/profile/%d" % (a.seed, i))
        p = r.choices(profiles, [PROFILE_WEIGHT.get(p, 1.0) for p in profiles])[0]
        return bases[profiles.index(p) + len(profiles) * r.randrange(a.bases)]

    tasks = [(i, base_of(i)) for i in idx]
    opts = dict(work=a.work, pfsck=a.pfsck, e2fsck=a.e2fsck, threads=a.threads,
                seed=a.seed, deadline=t0 + a.seconds, nbases=nb, known=known,
                finds=a.finds, keep=a.keep, minimise=0 if a.no_minimise else a.min_tries)
    results = []
    with multiprocessing.Pool(a.workers, initializer=worker_init, initargs=(opts,)) as pool:
        for r in pool.imap_unordered(one, tasks, chunksize=1):
            if r is None:
                continue
            results.append(r)
            if r["findings"] or a.verbose:
                print("  #%d %s %s: %s e2fsck -fn %s pfsck -fn %s -fy %s after %s%s" % (
                    r["i"], r["profile"], ",".join(r["findings"]) or "ok", r["damage"],
                    r.get("e_rc"), r.get("p_rc"), r.get("py_rc"), r.get("p_after"),
                    (" -> " + r["repro"]) if r.get("repro") else ""), flush=True)
    results.sort(key=lambda r: r["i"])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=0)
    return summary(results, a, time.time() - t0)


def summary(results, a, secs):
    done = [r for r in results if not r.get("oracle_timeout") and not r.get("oracle_wrote")]
    n = len(done)
    agree = sum(1 for r in done if (r["e_rc"] == 0) == (r.get("p_rc") == 0))
    exact = sum(1 for r in done if r["e_rc"] == r.get("p_rc"))
    withcodes = [r for r in done if r["e_rc"] != 0 and "e_codes" in r]
    codes = sum(1 for r in withcodes if r["e_codes"] == r["p_codes"])
    count = {k: sum(1 for r in results if k in r["findings"]) for k in FATAL}
    repaired = [r for r in results if not r.get("oracle_timeout") and r.get("py_rc") is not None]
    p_conv = sum(1 for r in repaired if r.get("p_after") == 0)
    by_profile = {}
    for r in done:
        s = by_profile.setdefault(r["profile"], [0, 0, 0])
        s[0] += 1
        s[1] += (r["e_rc"] == 0) == (r.get("p_rc") == 0)
        s[2] += bool(r["findings"])
    pct = lambda x, y: 100.0 * x / y if y else 100.0
    print("difffuzz: seed %s, %d damages in %.0f s (%d oracle timeouts, %d -n writes "
          "refused to e2fsck)" % (
              a.seed, len(results), secs, sum(1 for r in results if r.get("oracle_timeout")),
              sum(1 for r in results if r.get("oracle_wrote"))))
    print("damages: %d" % len(results))
    print("verdict agreement: %d/%d (%.2f%%)" % (agree, n, pct(agree, n)))
    print("exit code agreement: %d/%d (%.2f%%)" % (exact, n, pct(exact, n)))
    print("e2fsck problem codes equal (damaged images): %d/%d (%.2f%%)" % (
        codes, len(withcodes), pct(codes, len(withcodes))))
    print("pfsck -fy, then e2fsck -fn clean: %d/%d (%.2f%%)" % (
        p_conv, len(repaired), pct(p_conv, len(repaired))))
    print("false claims: %d" % count["false-claim"])
    print("lost files: %d" % count["lost-file"])
    print("broken by the repair (e2fsck cannot open it after): %d" % count["broken"])
    print("crashes: %d" % count["crash"])
    print("-n writes: %d" % count["n-wrote"])
    print("moved files (path differs from e2fsck's): %d" % sum(r.get("moved", 0) for r in done))
    for p, (t, ag, f) in sorted(by_profile.items()):
        print("  %-16s %5d damages, verdicts %.1f%%, findings %d" % (p, t, pct(ag, t), f))
    return 1 if any(count.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
