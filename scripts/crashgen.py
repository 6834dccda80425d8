#!/usr/bin/env python3
"""Kernel crash images, and pfsck's repair of them against e2fsck's.

For each variant a loop image is made with mkfs, mounted, and driven by a
seeded random workload (creates, appends, deletes, renames, hard links,
symlinks, xattrs, fallocate and punch, truncates, a large htree directory,
files held open while unlinked). While the workload runs, copies of the
backing file are read with a sync of the mount in flight, so a copy mixes
blocks from before and after (torn); after the workload, `sync -f` and one
more copy (consistent).

Each copy then goes through:
  * `e2fsck -fn` and `pfsck -fn`: the verdicts (exit 0 or not);
  * `e2fsck -fy` on one copy, `pfsck -fy` on another, each followed by
    `e2fsck -fn`: whether one run converges;
  * a read-only loop mount of both repaired copies: every name's inode,
    type, size, link count and content hash.
Figures printed: verdict agreement, convergence (pfsck's, where e2fsck's
own run converges), files e2fsck keeps and pfsck loses (by inode number),
and copies whose kept paths differ. Copies that disagree are kept under
OUT/keep for study.

Needs root and loop mounts. Usage:
  scripts/crashgen.py [--copies N] [--variants a,b] [--seed S] [--out DIR]
exit 0 when the figures meet the issue's bar, 1 otherwise, 2 when mounts
are not permitted (a notice is printed).
"""

import argparse
import ctypes
import hashlib
import json
import os
import random
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
E2FSCK = os.path.join(ROOT, "..", "shared", "tools", "e2fsck-1.47.4")
PFSCK = os.path.join(ROOT, "target", "release", "pfsck")
LIMIT = 120

# name: (mkfs arguments, size in MiB, mount options)
VARIANTS = {
    "ext2": (["-t", "ext2", "-b", "4096"], 48, ""),
    "ext3": (["-t", "ext3", "-b", "4096"], 48, ""),
    "ext4": (["-t", "ext4"], 64, ""),
    "ext4-1k": (["-t", "ext4", "-b", "1024"], 32, ""),
    "ext4-bigalloc": (["-t", "ext4", "-O", "bigalloc", "-C", "16384"], 96, ""),
    "ext4-inline": (["-t", "ext4", "-O", "inline_data"], 64, "data=writeback"),
    "ext4-nocsum": (["-t", "ext4", "-O", "^metadata_csum,^metadata_csum_seed"], 64, ""),
    "ext4-orphan-fc": (["-t", "ext4", "-O", "orphan_file,fast_commit"], 64, ""),
}

libc = ctypes.CDLL(None, use_errno=True)
FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2


def run(cmd, **kw):
    return subprocess.run(
        cmd, capture_output=True, stdin=subprocess.DEVNULL, timeout=kw.pop("timeout", LIMIT), **kw
    )


def can_mount(work):
    if os.geteuid() != 0:
        return False
    img = os.path.join(work, "probe.img")
    mnt = os.path.join(work, "probe")
    os.makedirs(mnt, exist_ok=True)
    with open(img, "wb") as f:
        f.truncate(8 << 20)
    if run(["mkfs.ext4", "-q", "-F", img]).returncode != 0:
        return False
    ok = run(["mount", "-o", "loop", img, mnt]).returncode == 0
    if ok:
        run(["umount", mnt])
    os.unlink(img)
    return ok


class Workload:
    """A seeded random workload on a mounted file system; `step` does one
    operation and ignores the errors a full file system gives."""

    def __init__(self, mnt, rng, inline):
        self.mnt = mnt
        self.rng = rng
        self.inline = inline
        self.files = []
        self.dirs = [mnt]
        self.open_unlinked = []
        self.n = 0
        self.big = os.path.join(mnt, "big")
        os.mkdir(self.big)
        self.dirs.append(self.big)
        for i in range(rng.randrange(300, 900)):
            self.create(os.path.join(self.big, "entry-with-a-long-name-%05d" % i), 0, 64)

    def name(self):
        self.n += 1
        return "n%d" % self.n

    def data(self, size):
        return self.rng.randbytes(size)

    def size(self):
        r = self.rng.random()
        if r < 0.3 and self.inline:
            return self.rng.randrange(0, 60)
        if r < 0.7:
            return self.rng.randrange(0, 8192)
        return self.rng.randrange(8192, 600 << 10)

    def create(self, path, lo=None, hi=None):
        size = self.rng.randrange(lo, hi) if lo is not None else self.size()
        with open(path, "wb") as f:
            f.write(self.data(size))
        self.files.append(path)

    def pick_file(self):
        self.files = [f for f in self.files if os.path.lexists(f)]
        return self.rng.choice(self.files) if self.files else None

    def step(self):
        rng = self.rng
        op = rng.choices(
            [
                "create", "append", "delete", "rename", "link", "symlink", "mkdir",
                "rmdir", "xattr", "falloc", "punch", "truncate", "bigadd", "bigdel",
                "unlinked", "close",
            ],
            [12, 5, 8, 6, 3, 2, 3, 1, 3, 2, 2, 3, 4, 3, 1, 1],
        )[0]
        try:
            getattr(self, "op_" + op)()
        except OSError:
            pass

    def op_create(self):
        self.create(os.path.join(self.rng.choice(self.dirs), self.name()))

    def op_append(self):
        f = self.pick_file()
        if f:
            with open(f, "ab") as h:
                h.write(self.data(self.rng.randrange(1, 20000)))

    def op_delete(self):
        f = self.pick_file()
        if f:
            os.unlink(f)

    def op_rename(self):
        f = self.pick_file()
        if f:
            dst = os.path.join(self.rng.choice(self.dirs), self.name())
            os.rename(f, dst)
            self.files.append(dst)

    def op_link(self):
        f = self.pick_file()
        if f and not os.path.islink(f):
            dst = os.path.join(self.rng.choice(self.dirs), self.name())
            os.link(f, dst)
            self.files.append(dst)

    def op_symlink(self):
        target = "t" * self.rng.choice([10, 100, 300])
        os.symlink(target, os.path.join(self.rng.choice(self.dirs), self.name()))

    def op_mkdir(self):
        d = os.path.join(self.rng.choice(self.dirs), self.name())
        os.mkdir(d)
        self.dirs.append(d)

    def op_rmdir(self):
        d = self.rng.choice(self.dirs[2:] or [None])
        if d:
            shutil.rmtree(d)
            self.dirs = [x for x in self.dirs if not (x == d or x.startswith(d + "/"))]

    def op_xattr(self):
        f = self.pick_file()
        if f and not os.path.islink(f):
            os.setxattr(f, "user.k%d" % self.rng.randrange(4), self.data(self.rng.choice([16, 200, 3000])))

    def fallocate(self, mode):
        f = self.pick_file()
        if not f or os.path.islink(f):
            return
        fd = os.open(f, os.O_RDWR)
        try:
            off = self.rng.randrange(0, 1 << 20)
            ln = self.rng.randrange(1, 256 << 10)
            libc.fallocate(fd, mode, ctypes.c_long(off), ctypes.c_long(ln))
        finally:
            os.close(fd)

    def op_falloc(self):
        self.fallocate(self.rng.choice([0, FALLOC_FL_KEEP_SIZE]))

    def op_punch(self):
        self.fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)

    def op_truncate(self):
        f = self.pick_file()
        if f and not os.path.islink(f):
            os.truncate(f, self.rng.randrange(0, 300 << 10))

    def op_bigadd(self):
        for _ in range(self.rng.randrange(1, 60)):
            self.create(os.path.join(self.big, "entry-with-a-long-name-%s" % self.name()), 0, 64)

    def op_bigdel(self):
        names = os.listdir(self.big)
        for n in self.rng.sample(names, min(len(names), self.rng.randrange(1, 40))):
            p = os.path.join(self.big, n)
            if os.path.isfile(p):
                os.unlink(p)

    def op_unlinked(self):
        if len(self.open_unlinked) > 8:
            return
        path = os.path.join(self.rng.choice(self.dirs), self.name())
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, self.data(self.rng.randrange(1, 100000)))
        os.unlink(path)
        self.open_unlinked.append(fd)

    def op_close(self):
        if self.open_unlinked:
            os.close(self.open_unlinked.pop(self.rng.randrange(len(self.open_unlinked))))

    def close_all(self):
        for fd in self.open_unlinked:
            os.close(fd)
        self.open_unlinked = []


def syncfs(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        libc.syncfs(fd)
    finally:
        os.close(fd)


def torn_copy(backing, dst, mnt, rng):
    """Reads the backing file in chunks while a sync of the mount writes it,
    with short pauses so that the copy straddles the writeback."""
    t = threading.Thread(target=syncfs, args=(mnt,))
    t.start()
    chunk = rng.choice([256 << 10, 1 << 20, 4 << 20])
    with open(backing, "rb") as src, open(dst, "wb") as out:
        while True:
            buf = src.read(chunk)
            if not buf:
                break
            out.write(buf)
            if rng.random() < 0.3:
                time.sleep(rng.random() * 0.02)
    t.join()


def generate(variant, seed, copies, out):
    """Makes `copies` torn copies and one consistent copy of `variant`;
    returns their paths."""
    mkfs_args, mib, opts = VARIANTS[variant]
    rng = random.Random("%s-%d" % (variant, seed))
    base = os.path.join(out, "%s-%d" % (variant, seed))
    img = base + ".img"
    mnt = base + ".mnt"
    os.makedirs(mnt, exist_ok=True)
    with open(img, "wb") as f:
        f.truncate(mib << 20)
    r = run(["mkfs." + mkfs_args[1]] + mkfs_args[2:] + ["-q", "-F", img])
    if r.returncode != 0:
        raise RuntimeError("mkfs %s: %s" % (variant, r.stderr.decode()))
    mo = "loop" + (",commit=1") + ("," + opts if opts else "")
    if variant == "ext2":
        mo = "loop"
    r = run(["mount", "-o", mo, img, mnt])
    if r.returncode != 0:
        raise RuntimeError("mount %s: %s" % (variant, r.stderr.decode()))
    made = []
    try:
        w = Workload(mnt, rng, "inline" in variant)
        # The workload runs in its own thread with its own generator, so
        # that the copies are taken while it writes.
        stop = threading.Event()
        w.rng = random.Random(rng.random())

        def drive():
            while not stop.is_set():
                w.step()

        t = threading.Thread(target=drive)
        t.start()
        try:
            for i in range(copies):
                time.sleep(rng.uniform(0.1, 0.8))
                dst = "%s.torn%d" % (base, i)
                torn_copy(img, dst, mnt, rng)
                made.append(dst)
        finally:
            stop.set()
            t.join()
        run(["sync", "-f", mnt])
        dst = base + ".synced"
        shutil.copyfile(img, dst)
        made.append(dst)
        w.close_all()
    finally:
        for _ in range(20):
            if run(["umount", mnt]).returncode == 0:
                break
            time.sleep(0.2)
        os.rmdir(mnt)
        os.unlink(img)
    return made


def tree(img, work):
    """{path: (inode, mode, size, nlink, hash)} of a read-only loop mount of
    `img`, or None when it does not mount."""
    mnt = work + ".ro"
    os.makedirs(mnt, exist_ok=True)
    r = run(["mount", "-o", "loop,ro,norecovery", "-t", "ext4", img, mnt])
    if r.returncode != 0:
        r = run(["mount", "-o", "loop,ro", img, mnt])
    if r.returncode != 0:
        os.rmdir(mnt)
        return None
    files = {}
    try:
        for d, dirs, names in os.walk(mnt):
            for n in dirs + names:
                p = os.path.join(d, n)
                st = os.lstat(p)
                h = ""
                try:
                    if stat.S_ISREG(st.st_mode):
                        with open(p, "rb") as f:
                            h = hashlib.sha1(f.read()).hexdigest()[:16]
                    elif stat.S_ISLNK(st.st_mode):
                        h = os.readlink(p)
                except OSError as e:
                    h = "error:%d" % e.errno
                # A directory's size says how it was compacted or rebuilt
                # (e2fsck's pass 3A), not what it holds: its entries are
                # compared as paths of their own.
                size = 0 if stat.S_ISDIR(st.st_mode) else st.st_size
                files[os.path.relpath(p, mnt)] = (st.st_ino, st.st_mode, size, st.st_nlink, h)
    finally:
        for _ in range(20):
            if run(["umount", mnt]).returncode == 0:
                break
            time.sleep(0.2)
        os.rmdir(mnt)
    return files


def fsck(tool, args, img):
    try:
        r = run([tool] + args + [img])
        return r.returncode, (r.stdout + r.stderr).decode(errors="replace")
    except subprocess.TimeoutExpired:
        return -1, "timeout"


def offers(out):
    """Pass 1E's offers in a -n output: (inode, level, shorter or narrower)."""
    found = []
    for line in out.splitlines():
        w = line.split()
        if len(w) >= 9 and w[0] == "Inode" and w[2:5] == ["extent", "tree", "(at"] and w[7] == "be":
            found.append("%s %s %s" % (w[1], w[6].rstrip(")"), w[8].rstrip(".")))
    return found


def n_exit_ok(r):
    """pfsck -n exits 0 or 4, or 12 where e2fsck -n gives up (aborts) on
    the same copy, as pfsck -n then stops too."""
    return all(
        pf in (0, 4) or (pf == 12 and r["e2_n"] == 12)
        for pf in (r["pf_n"], r["pf_n_raw"])
    )


def compare(copy, pfsck, e2fsck):
    res = {"copy": os.path.basename(copy)}
    # e2fsck -n skips journal recovery and orphan processing, which pfsck -n
    # counts as repairs declined: both verdicts are taken on a copy whose
    # journal and orphans e2fsck has processed (-E journal_only).
    a, b = copy + ".e2", copy + ".pf"
    shutil.copyfile(copy, a)
    fsck(e2fsck, ["-E", "journal_only", "-y"], a)
    res["e2_n"], e2_out = fsck(e2fsck, ["-fn"], a)
    res["pf_n"], res["pf_n_out"] = fsck(pfsck, ["-fn"], a)
    res["offers_e2"] = offers(e2_out)
    res["offers_pf"] = offers(res["pf_n_out"])
    res["pf_n_raw"], _ = fsck(pfsck, ["-fn"], copy)
    shutil.copyfile(copy, a)
    shutil.copyfile(copy, b)
    res["e2_y"], _ = fsck(e2fsck, ["-fy"], a)
    res["e2_after"], _ = fsck(e2fsck, ["-fn"], a)
    res["pf_y"], res["pf_y_out"] = fsck(pfsck, ["-fy"], b)
    res["pf_after"], res["pf_after_out"] = fsck(e2fsck, ["-fn"], b)
    ta = tree(a, a) if res["e2_after"] == 0 else None
    tb = tree(b, b)
    res["lost"] = []
    res["path_diff"] = []
    if ta is not None:
        pf_inodes = {v[0] for v in (tb or {}).values()}
        res["lost"] = sorted(
            p for p, v in ta.items() if stat.S_ISREG(v[1]) and v[0] not in pf_inodes
        )
        if tb is not None:
            keys = set(ta) | set(tb)
            res["path_diff"] = sorted(k for k in keys if ta.get(k) != tb.get(k))
    res["mounted"] = (ta is not None, tb is not None)
    os.unlink(a)
    os.unlink(b)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, default=24, help="torn copies in all")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-mount", type=int, default=4, help="torn copies per mounted image")
    ap.add_argument("--out", default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--pfsck", default=PFSCK)
    ap.add_argument("--e2fsck", default=E2FSCK)
    ap.add_argument("--json", help="write every copy's result here")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    variants = args.variants.split(",")
    for v in variants:
        if v not in VARIANTS:
            sys.exit("unknown variant %s (known: %s)" % (v, ", ".join(VARIANTS)))
    out = args.out or tempfile.mkdtemp(prefix="crashgen-")
    os.makedirs(out, exist_ok=True)
    keep = os.path.join(out, "keep")
    os.makedirs(keep, exist_ok=True)
    if not can_mount(out):
        print("notice: loop mounts are not permitted here (root and loop devices needed); skipped")
        return 2
    results = []
    torn = 0
    seed = args.seed
    i = 0
    while torn < args.copies:
        v = variants[i % len(variants)]
        i += 1
        n = min(args.per_mount, args.copies - torn)
        copies = generate(v, seed, n, out)
        seed += 1
        for c in copies:
            r = compare(c, args.pfsck, args.e2fsck)
            r["variant"] = v
            r["torn"] = ".torn" in c
            torn += r["torn"]
            bad = (
                (r["e2_n"] == 0) != (r["pf_n"] == 0)
                or (r["e2_after"] == 0 and r["pf_after"] != 0)
                or r["lost"]
                or r["path_diff"]
                or not n_exit_ok(r)
                or r["pf_y"] not in (0, 1)
            )
            r["bad"] = bool(bad)
            # An abort e2fsck -n takes and pfsck -n does not (or the other
            # way) is kept for study too, though both verdicts say "not
            # clean".
            if bad or (r["e2_n"] == 12) != (r["pf_n"] == 12):
                shutil.copyfile(c, os.path.join(keep, os.path.basename(c)))
            if not args.quiet:
                print(
                    "%-28s n: e2 %d pf %d  y: e2 %d->%d pf %d->%d  lost %d  paths %d%s"
                    % (
                        r["copy"], r["e2_n"], r["pf_n"], r["e2_y"], r["e2_after"], r["pf_y"],
                        r["pf_after"], len(r["lost"]), len(r["path_diff"]), "  KEPT" if bad else "",
                    ),
                    flush=True,
                )
            for k in ("pf_n_out", "pf_y_out", "pf_after_out"):
                if not bad:
                    r.pop(k)
            results.append(r)
            os.unlink(c)
    return report(results, args.json)


def report(results, json_path):
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results, f, indent=1)
    torn = [r for r in results if r["torn"]]
    variants = sorted({r["variant"] for r in results})
    conv_base = [r for r in results if r["e2_after"] == 0]
    conv_ok = [r for r in conv_base if r["pf_after"] == 0]
    verdict_ok = [r for r in results if (r["e2_n"] == 0) == (r["pf_n"] == 0)]
    lost = sum(len(r["lost"]) for r in results)
    lost_copies = [r for r in results if r["lost"]]
    paths_ok = [r for r in results if not r["path_diff"]]
    dirty = [r for r in results if r["e2_n"] != 0]
    print()
    print("copies: %d (%d torn, %d synced) over %d variants: %s"
          % (len(results), len(torn), len(results) - len(torn), len(variants), ", ".join(variants)))
    print("needing repair after replay (e2fsck -fn exit != 0): %d" % len(dirty))
    print("verdicts equal (-fn after replay, clean or not): %d/%d" % (len(verdict_ok), len(results)))
    print("one-run convergence (e2fsck -fn clean after pfsck -fy, where e2fsck's own run converges): %d/%d"
          % (len(conv_ok), len(conv_base)))
    print("files e2fsck keeps that pfsck loses: %d (on %d copies)" % (lost, len(lost_copies)))
    print("kept paths equal to e2fsck's: %d/%d (%.1f%%)"
          % (len(paths_ok), len(results), 100.0 * len(paths_ok) / max(1, len(results))))
    bad_exit = [
        r for r in results
        if not n_exit_ok(r) or r["pf_y"] not in (0, 1)
    ]
    print("pfsck exits other than 0/4 (-n, 12 where e2fsck -n aborts too) or 0/1 (-y): %d"
          % len(bad_exit))
    offered = [r for r in results if r.get("offers_e2")]
    offers_ok = [r for r in results if r.get("offers_e2") == r.get("offers_pf")]
    print("pass 1E offers (extent tree could be shorter/narrower) equal under -fn: %d/%d copies"
          " (e2fsck offers on %d copies, %d trees)"
          % (len(offers_ok), len(results), len(offered),
             sum(len(r["offers_e2"]) for r in offered)))
    per = {}
    for r in results:
        t = per.setdefault(r["variant"], [0, 0, 0, 0, 0, 0])
        t[0] += 1
        t[1] += (r["e2_n"] == 0) == (r["pf_n"] == 0)
        t[2] += r["e2_after"] == 0
        t[3] += r["e2_after"] == 0 and r["pf_after"] == 0
        t[4] += len(r["lost"])
        t[5] += not r["path_diff"]
    print("per variant: copies, verdicts equal, converged/base, lost, paths equal")
    for v in sorted(per):
        t = per[v]
        print("  %-16s %3d  %3d  %3d/%-3d  %d  %3d" % (v, t[0], t[1], t[3], t[2], t[4], t[5]))
    for r in results:
        if r["bad"]:
            print("  disagrees: %s %s" % (r["variant"], r["copy"]))
    ok = len(conv_ok) == len(conv_base) and lost == 0 and len(paths_ok) * 100 >= 99 * len(results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
