#!/usr/bin/env python3
"""Side-by-side benchmark: e2fsck -fn against pfsck -fn on the same images.

Images are generated with the real tools (mkfs.ext4 -d) and cached under
$PFSCK_BENCH_DIR (default /var/tmp/pfsck-bench). For each image the tools
are run interleaved, several times each, warm cache; the script reports the
min and median wall time, peak RSS, and the ratios, as a Markdown table and
as JSON (bench/results.json).

Usage: bench/run.py [--runs N] [--images file1m,...] [--threads 1,2]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("PFSCK_BENCH_DIR", "/var/tmp/pfsck-bench")
PFSCK = os.path.join(ROOT, "target", "release", "pfsck")


def tool(name):
    for d in ("/sbin", "/usr/sbin", "/usr/bin", "/bin"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return shutil.which(name) or name


def make_tree(path, dirs, files_per_dir, size):
    """A tree of `dirs` directories holding `files_per_dir` small files each."""
    os.makedirs(path)
    data = b"x" * size
    for d in range(dirs):
        dp = os.path.join(path, "d%05d" % d)
        os.mkdir(dp)
        for f in range(files_per_dir):
            with open(os.path.join(dp, "f%03d" % f), "wb") as fh:
                if size:
                    fh.write(data)


IMAGES = {
    # ~1,000,000 inodes in use: 10,100 directories of 99 small files.
    "file1m": dict(dirs=10100, files=99, size=100, mkfs=["-N", "1100000", "-b", "4096"], mb=6144,
                   desc="1,010,011 inodes in use, 10,100 directories of 99 100-byte files, ext4 defaults, 6 GiB"),
    # A smaller variant for quick runs.
    "file100k": dict(dirs=1010, files=99, size=100, mkfs=["-N", "110000"], mb=1024,
                     desc="101,000 inodes in use, 1,010 directories of 99 100-byte files, 1 GiB"),
}


def image(name):
    spec = IMAGES[name]
    img = os.path.join(CACHE, name + ".img")
    if os.path.exists(img):
        return img
    os.makedirs(CACHE, exist_ok=True)
    tree = os.path.join(CACHE, name + ".tree")
    shutil.rmtree(tree, ignore_errors=True)
    print(f"generating {name} ...", file=sys.stderr)
    make_tree(tree, spec["dirs"], spec["files"], spec["size"])
    tmp = img + ".tmp"
    subprocess.run(
        [tool("mkfs.ext4"), "-q", "-F", "-E", "lazy_itable_init=0"] + spec["mkfs"]
        + ["-d", tree, tmp, "%dM" % spec["mb"]],
        check=True,
    )
    shutil.rmtree(tree)
    os.rename(tmp, img)
    return img


GNU_TIME = "/usr/bin/time"


def timed(cmd):
    """Runs cmd; returns (exit code, wall seconds, peak RSS in KiB).

    Peak RSS comes from GNU time when present: a child forked straight from
    Python inherits Python's high-water mark in ru_maxrss, across exec."""
    rss_file = os.path.join(CACHE, ".rss")
    wrapped = cmd
    if os.path.exists(GNU_TIME):
        wrapped = [GNU_TIME, "-q", "-f", "%M", "-o", rss_file] + cmd
    t0 = time.perf_counter()
    p = subprocess.Popen(wrapped, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    rss = ru.ru_maxrss
    if wrapped is not cmd:
        with open(rss_file) as fh:
            rss = int(fh.read().split()[-1])
    return os.waitstatus_to_exitcode(status), wall, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--images", default="file1m")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results.json"))
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    results = []
    for name in a.images.split(","):
        img = image(name)
        cmds = {"e2fsck": [tool("e2fsck"), "-fn", img]}
        for t in a.threads.split(","):
            cmds[f"pfsck -j{t}"] = [PFSCK, "-fn", "--threads", t, img]
        samples = {k: [] for k in cmds}
        # Warm the page cache once so every tool sees the same state.
        for cmd in cmds.values():
            timed(cmd)
        for _ in range(a.runs):
            for k, cmd in cmds.items():
                samples[k].append(timed(cmd))
        base = statistics.median(s[1] for s in samples["e2fsck"])
        base_rss = max(s[2] for s in samples["e2fsck"])
        for k, ss in samples.items():
            walls = [s[1] for s in ss]
            rss = max(s[2] for s in ss)
            results.append(dict(
                image=name, tool=k, exit=[s[0] for s in ss],
                min_s=min(walls), median_s=statistics.median(walls),
                peak_rss_kib=rss,
                speedup_vs_e2fsck=base / statistics.median(walls),
                rss_vs_e2fsck=rss / base_rss,
            ))
    with open(a.out, "w") as fh:
        json.dump(dict(runs=a.runs, nproc=os.cpu_count(), results=results), fh, indent=2)
    lines = [
        "| image | tool | min s | median s | peak RSS MiB | speed-up vs e2fsck (median) | RSS vs e2fsck |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['image']} | {r['tool']} | {r['min_s']:.2f} | {r['median_s']:.2f} | "
            f"{r['peak_rss_kib'] / 1024:.0f} | {r['speedup_vs_e2fsck']:.2f}x | {r['rss_vs_e2fsck']:.2f} |")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(ROOT, "bench", "RESULTS.md"), "w") as fh:
        fh.write(
            "# Benchmark results\n\n"
            "Generated by `bench/run.py` (do not edit by hand): "
            f"`bench/run.py --runs {a.runs} --images {a.images} --threads {a.threads}`, "
            f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, warm page cache, "
            "`e2fsck -fn` and `pfsck -fn` interleaved on the same image. "
            "Peak RSS from GNU time.\n\n"
            + table + "\n\n"
            + "Images: " + "; ".join(f"`{n}`: {IMAGES[n]['desc']}" for n in a.images.split(","))
            + "\n")


if __name__ == "__main__":
    main()
