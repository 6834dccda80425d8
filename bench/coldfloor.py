#!/usr/bin/env python3
"""The cold-cache floor: how fast can the device deliver the bytes pfsck reads?

Issue 17 asks for a cold-cache check at least 3x faster than e2fsck's. No
checker can be faster than the device takes to deliver the blocks it must
read, so this measures that time and sets both checkers against it, in the
same interleaved rounds:

1. Trace (warm, not timed): `strace -ff` records every pread64/preadv/preadv2
   that `pfsck -fn --threads N IMG` makes on the image; the union of the
   byte ranges, rounded out to 4 KiB pages and merged, is "what pfsck reads".
2. Rounds (cold: sync + POSIX_FADV_DONTNEED on the image before every run):
   - floor: every merged range handed to the kernel at once in disk order
     (POSIX_FADV_WILLNEED), then read in disk order. A reference, not a
     bound: on tens of thousands of scattered ranges pfsck's pipelined
     hints measured faster (bench/README.md), and there the disk's
     sequential rate (`dd`) is the better yardstick;
   - pfsck -fn --threads N IMG;
   - e2fsck -fn IMG.
3. Report: MiB read, min and median seconds of each, pfsck/floor and
   e2fsck/floor.

Usage: bench/coldfloor.py [--runs 5] [--threads 2] [--pfsck BIN]
                          [--e2fsck BIN] [--json OUT] IMG...
Python 3.11 standard library and strace only.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import evict  # noqa: E402  (the one eviction the benchmarks share)

PAGE = 4096
# pread64(3, ..., 4096, 8192) = 4096 ; preadv2(3, [...], 1, 8192, RWF_NOWAIT) = 4096
CALL = re.compile(r"^\s*(?:\d+\s+)?(pread64|preadv2|preadv)\((\d+),(.*)\)\s+=\s+(-?\d+)")
OPEN = re.compile(r'^\s*(?:\d+\s+)?openat\([^,]+,\s*"([^"]*)",.*\)\s+=\s+(\d+)')


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def offset_of(call, rest):
    """The file offset of one traced read: pread64's last argument,
    preadv/preadv2's argument after the vector count."""
    args = [a.strip() for a in re.sub(r"\[.*\]", "V", rest).split(",")]
    if call == "pread64":
        return int(args[-1])
    # preadv(fd, V, n, off) / preadv2(fd, V, n, off, flags): after "V" and n.
    i = args.index("V")
    return int(args[i + 2])


def traced_ranges(pfsck, threads, img):
    """Merged page-aligned byte ranges pfsck reads from the image.

    `strace -ff` writes one file per thread, so no call is split into
    "unfinished" and "resumed" halves by another thread's; the image's
    descriptors are taken from every thread's openat first (pfsck does not
    reuse a closed image descriptor for another file during the check)."""
    real = os.path.realpath(img)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "trace")
        cmd = ["strace", "-ff", "-qq", "-s", "0", "-e", "signal=none",
               "-e", "trace=openat,pread64,preadv,preadv2", "-o", out,
               pfsck, "-fn", "--threads", str(threads), img]
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode != 0:
            log(f"warning: traced pfsck exited {r.returncode}")
        lines = []
        for name in os.listdir(tmp):
            with open(os.path.join(tmp, name)) as fh:
                lines += fh.readlines()
    fds = {int(m.group(2)) for m in map(OPEN.match, lines)
           if m and os.path.realpath(m.group(1)) == real}
    pages = set()
    for line in lines:
        m = CALL.match(line)
        if not m or int(m.group(2)) not in fds or int(m.group(4)) <= 0:
            continue
        off, n = offset_of(m.group(1), m.group(3)), int(m.group(4))
        pages.update(range(off // PAGE, (off + n - 1) // PAGE + 1))
    ranges = []
    for p in sorted(pages):
        if ranges and ranges[-1][1] == p:
            ranges[-1][1] = p + 1
        else:
            ranges.append([p, p + 1])
    return [(a * PAGE, (b - a) * PAGE) for a, b in ranges]


def floor_read(img, ranges):
    """Every range asked for at once in disk order, then read: seconds."""
    fd = os.open(img, os.O_RDONLY)
    try:
        t0 = time.perf_counter()
        for off, n in ranges:
            os.posix_fadvise(fd, off, n, os.POSIX_FADV_WILLNEED)
        for off, n in ranges:
            while n > 0:
                k = min(n, 1 << 20)
                os.pread(fd, k, off)
                off, n = off + k, n - k
        return time.perf_counter() - t0
    finally:
        os.close(fd)


def timed(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode, time.perf_counter() - t0


def measure(img, a):
    ranges = traced_ranges(a.pfsck, a.threads, img)
    mib = sum(n for _, n in ranges) / (1 << 20)
    log(f"{img}: pfsck reads {mib:.1f} MiB in {len(ranges)} ranges")
    tools = {
        "floor": lambda: (0, floor_read(img, ranges)),
        f"pfsck -m{a.threads}": lambda: timed([a.pfsck, "-fn", "--threads", str(a.threads), img]),
        "e2fsck": lambda: timed(["timeout", "600", a.e2fsck, "-fn", img]),
    }
    samples = {k: [] for k in tools}
    for _ in range(a.runs):
        for k, run in tools.items():
            evict(img)
            rc, s = run()
            if rc != 0:
                log(f"warning: {k} exited {rc}")
            samples[k].append(s)
    med = {k: statistics.median(v) for k, v in samples.items()}
    p = f"pfsck -m{a.threads}"
    row = dict(image=os.path.basename(img), mib_read=round(mib, 1), ranges=len(ranges),
               runs=a.runs, load_after=os.getloadavg()[0],
               wall_s={k: [round(x, 4) for x in v] for k, v in samples.items()},
               median_s={k: round(v, 4) for k, v in med.items()},
               min_s={k: round(min(v), 4) for k, v in samples.items()},
               pfsck_over_floor=round(med[p] / med["floor"], 2),
               e2fsck_over_floor=round(med["e2fsck"] / med["floor"], 2),
               e2fsck_over_pfsck=round(med["e2fsck"] / med[p], 2))
    log(f"  floor {med['floor']:.3f} s, {p} {med[p]:.3f} s, e2fsck {med['e2fsck']:.3f} s: "
        f"pfsck/floor {row['pfsck_over_floor']}, e2fsck/pfsck {row['e2fsck_over_pfsck']}, "
        f"e2fsck/floor {row['e2fsck_over_floor']}")
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("images", nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pfsck", default=os.path.join(os.path.dirname(__file__), "..",
                                                    "target", "release", "pfsck"))
    ap.add_argument("--e2fsck", default="e2fsck")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rows = [measure(img, a) for img in a.images]
    text = json.dumps(dict(e2fsck=a.e2fsck, threads=a.threads, rows=rows), indent=1)
    if a.json:
        with open(a.json, "w") as fh:
            fh.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
