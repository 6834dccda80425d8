#!/usr/bin/env python3
"""Checks at scale (issue 17): pfsck against e2fsck 1.47.4 and the upstream
parallel e2fsck on images of millions of inodes, side by side in one run.

Images come from bench/mkimage (written directly, see bench/README.md), are
cached in $PFSCK_SCALE_DIR (default /var/tmp/pfsck-scale) and must pass
`e2fsck-1.47.4 -fn` before use (mkimage refuses to finish otherwise). For each
image the tools run interleaved, one run of each per round, after one unmeasured
warm-up round, so drift of a noisy machine hits all alike. Reported per tool:
min and median wall time, peak RSS (GNU time), bytes of RSS per used inode,
speed-up against e2fsck 1.47.4; pfsck -m2 also with `--max-memory` at half
the peak RSS of its warm-up run (`--no-cap` leaves that column out); and for pfsck -m1 the floor: the metadata it
reads (`pfsck -t`) divided by this machine's page-cache copy bandwidth
(`dd` of the cached image), and the ratio of the check's time to it.

    bench/scale.py --sizes 10M --kinds files,dir50 --runs 5
    bench/scale.py --sizes 1M,10M,50M --kinds files --runs 3
    bench/scale.py --sizes 3M --kinds frag --runs 5   (3M extents in 4 files)
    bench/scale.py --sizes 10M --kinds dir50-1k --runs 5   (1 KiB blocks)

Writes bench/SCALE.md and bench/scale.json (merged with earlier entries, so a
run of one size keeps the others).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared", "tools")
CACHE = os.environ.get("PFSCK_SCALE_DIR", "/var/tmp/pfsck-scale")
GNU_TIME = "/usr/bin/time"
MKIMAGE_DIR = os.path.join(HERE, "mkimage")
MKIMAGE = os.path.join(ROOT, "target", "mkimage", "release", "pfsck-mkimage")
PFSCK = os.path.join(ROOT, "target", "release", "pfsck")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def count(s):
    mul = {"k": 1000, "M": 1000_000}.get(s[-1], 1)
    return int(s[:-1] if mul > 1 else s) * mul


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(ROOT, "target", "mkimage"))
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=MKIMAGE_DIR, env=env, check=True)


def image(kind, size, e2fsck):
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"{kind}-{size}.img")
    meta = path[:-4] + ".json"
    if os.path.exists(path) and os.path.exists(meta):
        with open(meta) as fh:
            return path, json.load(fh)
    log(f"generating {path}")
    t0 = time.perf_counter()
    # A "-1k" or "-2k" suffix picks the block size: dir50 at 10M inodes
    # needs 22 GB of metadata with 4 KiB blocks, more than this machine's
    # page cache, and about 8 GB with 1 KiB blocks.
    base, _, bsuf = kind.partition("-")
    bsize = {"": "4096", "1k": "1024", "2k": "2048"}[bsuf]
    # frag: SIZE counts extents, over four files (linux-ext4's Case-4).
    shape = ["--extents", size, "--files", "4"] if base == "frag" else ["--inodes", size]
    subprocess.run(["nice", "-n", "10", MKIMAGE, "--kind", base, "--block-size", bsize, *shape,
                    "--check", e2fsck, path], check=True, stdout=subprocess.DEVNULL)
    gen_s = time.perf_counter() - t0
    out = subprocess.run(["dumpe2fs", "-h", path], capture_output=True, text=True).stdout
    f = dict(re.findall(r"^([A-Za-z ]+):\s+(\S+)", out, re.M))
    used = int(f["Inode count"]) - int(f["Free inodes"])
    m = dict(kind=kind, size=size, inodes_used=used, inode_count=int(f["Inode count"]),
             blocks=int(f["Block count"]), generate_s=round(gen_s, 1),
             disk_bytes=os.stat(path).st_blocks * 512)
    with open(meta, "w") as fh:
        json.dump(m, fh)
    return path, m


def timed(cmd):
    """(exit code, wall s, peak RSS KiB) of cmd, RSS from GNU time (see
    bench/run.py for why not ru_maxrss)."""
    rss_file = os.path.join(CACHE, ".rss")
    t0 = time.perf_counter()
    p = subprocess.run([GNU_TIME, "-q", "-f", "%M", "-o", rss_file] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    with open(rss_file) as fh:
        return p.returncode, wall, int(fh.read().split()[-1])


def copy_bandwidth(path, nbytes):
    """Bytes per second a single core copies from the page cache: dd of the
    image's first `nbytes` (read once to cache them, then timed)."""
    mib = max(64, min(nbytes // (1 << 20), 4096))
    cmd = ["dd", f"if={path}", "of=/dev/null", "bs=1M", f"count={mib}"]
    subprocess.run(cmd, capture_output=True)
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True)
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return mib * (1 << 20) / best


def bytes_read(path):
    out = subprocess.run([PFSCK, "-fn", "-t", "-m", "1", path], capture_output=True, text=True)
    text = out.stdout + out.stderr
    total = 0
    for name, n in re.findall(r"^\s*(\S+):\s+[\d.]+ s,\s+(\d+) bytes read", text, re.M):
        if name != "pass1-2":  # the sum of pass1 and pass2, not a pass of its own
            total += int(n)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10M")
    ap.add_argument("--kinds", default="files,dir50")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-cap", action="store_true",
                    help="no pfsck -m2 --max-memory column (half its uncapped peak)")
    args = ap.parse_args()
    e2fsck = os.path.realpath(os.path.join(SHARED, "e2fsck-1.47.4"))
    mt = os.path.realpath(os.path.join(SHARED, "e2fsck-mt"))
    if not args.no_build:
        build()
    out_json = os.path.join(HERE, "scale.json")
    results = []
    if os.path.exists(out_json):
        with open(out_json) as fh:
            results = json.load(fh)["results"]
    for size in args.sizes.split(","):
        for kind in args.kinds.split(","):
            path, meta = image(kind, size, e2fsck)
            tools = {
                "e2fsck 1.47.4": ["timeout", "-s", "KILL", "3600", e2fsck, "-fn", path],
                "e2fsck-mt -m2": ["timeout", "-s", "KILL", "3600", mt, "-fn", "-m", "2", path],
                "pfsck -m1": [PFSCK, "-fn", "-m", "1", path],
                "pfsck -m2": [PFSCK, "-fn", "-m", "2", path],
            }
            log(f"{kind} {size}: warm-up")
            warm = {k: timed(cmd) for k, cmd in tools.items()}
            cap_kib = None
            if not args.no_cap:
                # Half the uncapped peak: what the spill to the scratch file
                # must save, and what it costs in time.
                cap_kib = warm["pfsck -m2"][2] // 2
                name = f"pfsck -m2 --max-memory {cap_kib}K"
                tools[name] = [PFSCK, "-fn", "-m", "2", "--max-memory", f"{cap_kib}K", path]
                timed(tools[name])
            samples = {k: [] for k in tools}
            for r in range(args.runs):
                for k, cmd in tools.items():
                    samples[k].append(timed(cmd))
                log(f"{kind} {size}: round {r + 1}/{args.runs}: " + ", ".join(
                    f"{k} {samples[k][-1][1]:.2f}s" for k in tools))
            read = bytes_read(path)
            bw = copy_bandwidth(path, read)
            base = statistics.median(s[1] for s in samples["e2fsck 1.47.4"])
            rows = {}
            for k, s in samples.items():
                walls = [x[1] for x in s]
                rss = max(x[2] for x in s)
                med = statistics.median(walls)
                rows[k] = dict(min_s=round(min(walls), 3), median_s=round(med, 3),
                               peak_rss_kib=rss, bytes_per_inode=round(rss * 1024 / meta["inodes_used"], 1),
                               speedup=round(base / med, 2), exits=sorted({x[0] for x in s}))
            floor_s = read / bw
            entry = dict(kind=kind, size=size, image=meta, runs=args.runs, bytes_read=read,
                         copy_gb_s=round(bw / 1e9, 2), floor_s=round(floor_s, 3),
                         floor_ratio_m1=round(rows["pfsck -m1"]["median_s"] / floor_s, 1),
                         floor_ratio_m2=round(rows["pfsck -m2"]["median_s"] / floor_s, 1),
                         tools=rows, cap_kib=cap_kib, date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                         load=os.getloadavg()[0])
            results = [e for e in results if (e["kind"], e["size"]) != (kind, size)] + [entry]
            with open(out_json, "w") as fh:
                json.dump(dict(results=results), fh, indent=1)
            write_md(results)


def write_md(results):
    lines = ["# Checks at scale (generated by bench/scale.py; do not edit)", "",
             "Warm cache, interleaved rounds after a warm-up round; wall time min / median, "
             "speed-up = e2fsck 1.47.4's median / the tool's median; RSS = peak over the runs; "
             "B/inode = that peak divided by the used inodes. Floor = metadata pfsck reads "
             "(`pfsck -t`) / single-core page-cache copy bandwidth (`dd`).", ""]
    head = "| image | inodes used | runs | tool | min s | median s | speed-up | peak RSS MiB | B/inode | exits |"
    lines += [head, "|" + "---|" * 10]
    order = {"1M": 0, "10M": 1, "50M": 2}
    for e in sorted(results, key=lambda e: (order.get(e["size"], 9), e["kind"])):
        for k, r in e["tools"].items():
            lines.append(f"| {e['kind']} {e['size']} | {e['image']['inodes_used']:,} | {e['runs']} | {k} | "
                         f"{r['min_s']:.2f} | {r['median_s']:.2f} | {r['speedup']:.2f}x | "
                         f"{r['peak_rss_kib'] / 1024:.0f} | {r['bytes_per_inode']:.1f} | "
                         f"{','.join(map(str, r['exits']))} |")
    lines += ["", "| image | metadata read | copy GB/s | floor s | pfsck -m1 / floor | pfsck -m2 / floor "
              "| generated in | image on disk | load (1 min) | date |", "|" + "---|" * 10]
    for e in sorted(results, key=lambda e: (order.get(e["size"], 9), e["kind"])):
        lines.append(f"| {e['kind']} {e['size']} | {e['bytes_read'] / 1e9:.2f} GB | {e['copy_gb_s']} | "
                     f"{e['floor_s']:.2f} | {e['floor_ratio_m1']}x | {e['floor_ratio_m2']}x | "
                     f"{e['image']['generate_s']} s | {e['image']['disk_bytes'] / 1e9:.1f} GB | "
                     f"{e['load']:.1f} | {e['date']} |")
    with open(os.path.join(HERE, "SCALE.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
