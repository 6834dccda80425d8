#!/usr/bin/env python3
"""Measures pfsck --online (docs/online.md): the freeze window, the check's
wall and CPU time against an offline check of the same image, and a
writing workload's throughput with and without the online check running.

Needs root, loop mounts, mkfs.xfs (scripts/deps.sh) and a release build.
The ext4 image (a tree of small files made with mkfs.ext4 -d) is cached in
$PFSCK_BENCH_DIR/online (default /var/tmp/pfsck-bench/online); it is
loop-mounted from a loop-mounted XFS image there. Every figure is taken
--runs times; min and median are reported, with the load average seen.

    bench/online.py                      # writes bench/online.md and bench/online.json
    bench/online.py --runs 3 --seconds 5 --files 20000 --out /tmp/o.json
    PFSCK_BIN=/path/to/pfsck bench/online.py   # another binary than target/release/pfsck
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PFSCK = os.environ.get("PFSCK_BIN", os.path.join(ROOT, "target", "release", "pfsck"))

WRITER = r"""
import os, sys, time
d, seconds = sys.argv[1], float(sys.argv[2])
chunk = b"\xa5" * (1 << 20)
end = time.monotonic() + seconds
written, worst, i = 0, 0.0, 0
fds = [os.open(os.path.join(d, f"w{k}"), os.O_WRONLY | os.O_CREAT, 0o644) for k in range(8)]
while time.monotonic() < end:
    fd = fds[i % 8]
    t = time.monotonic()
    os.pwrite(fd, chunk, (i // 8 % 16) << 20)
    if i % 8 == 7:
        os.fdatasync(fd)
    worst = max(worst, time.monotonic() - t)
    written += len(chunk)
    i += 1
print(written, seconds, worst)
"""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def load():
    return os.getloadavg()[0]


def wait_quiet(limit, patience):
    if limit <= 0:
        return
    start = time.monotonic()
    while load() > limit and time.monotonic() - start < patience:
        time.sleep(10)
    log(f"load average {load():.2f} (waited {time.monotonic() - start:.0f} s for < {limit})")


def build_image(path, files):
    """An ext4 image of `files` 1 KiB files, 100 to a directory."""
    if os.path.exists(path):
        return
    tree = path + ".tree"
    shutil.rmtree(tree, ignore_errors=True)
    for n in range(files):
        d = os.path.join(tree, f"d{n // 100:05}")
        if n % 100 == 0:
            os.makedirs(d)
        with open(os.path.join(d, f"f{n % 100:02}"), "wb") as f:
            f.write(b"x" * 1024)
    mib = max(256, files * 12 // 1024 + 256)
    run(["mkfs.ext4", "-q", "-F", "-b", "4096", "-N", str(files * 2 + 1000), "-d", tree, path + ".part", f"{mib}M"])
    shutil.rmtree(tree)
    os.rename(path + ".part", path)


class Stack:
    """XFS image mounted on B; the ext4 image copied into it, mounted on E."""

    def __init__(self, base, image):
        self.base = base
        self.b = os.path.join(base, "B")
        self.e = os.path.join(base, "E")
        os.makedirs(self.b, exist_ok=True)
        os.makedirs(self.e, exist_ok=True)
        xfs = os.path.join(base, "xfs.img")
        with open(xfs, "wb") as f:
            f.truncate(8 << 30)
        run(["mkfs.xfs", "-q", "-f", xfs])
        run(["mount", "-o", "loop", xfs, self.b])
        self.image = os.path.join(self.b, "ext4.img")
        run(["cp", "--sparse=always", image, self.image])
        run(["mount", "-o", "loop", self.image, self.e])
        os.makedirs(os.path.join(self.e, "work"), exist_ok=True)

    def unmount_ext4(self):
        if os.path.ismount(self.e):
            run(["umount", self.e])

    def close(self):
        self.unmount_ext4()
        if os.path.ismount(self.b):
            run(["umount", self.b])


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd):
    """(wall seconds, CPU seconds, stdout) of a child."""
    c0, t0 = child_cpu(), time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall, cpu = time.monotonic() - t0, child_cpu() - c0
    if p.returncode not in (0,):
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return wall, cpu, p.stdout


def online_once(st):
    wall, _, out = timed([PFSCK, "--online", "-n", "--json", st.e])
    o = json.loads(out)["online"]
    return o["frozen_seconds"], o["check_seconds"], o["check_cpu_seconds"], wall


def writer(st, seconds):
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, os.path.join(st.e, "work"), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )


def writer_result(p):
    out, _ = p.communicate()
    written, seconds, worst = out.split()
    return int(written) / float(seconds) / (1 << 20), float(worst)


def stats(xs):
    return {"min": min(xs), "median": statistics.median(xs), "all": xs}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10.0, help="each workload run")
    ap.add_argument("--files", type=int, default=200_000)
    ap.add_argument("--quiet-load", type=float, default=1.0, help="wait for a load average below this before each series (0: do not wait)")
    ap.add_argument("--patience", type=float, default=1800)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "online.json"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (loop mounts, freeze)")
    base = os.path.join(os.environ.get("PFSCK_BENCH_DIR", "/var/tmp/pfsck-bench"), "online")
    os.makedirs(base, exist_ok=True)
    image = os.path.join(base, f"ext4-{a.files}.img")
    log(f"image {image}")
    build_image(image, a.files)
    st = Stack(base, image)
    res = {"files": a.files, "runs": a.runs, "seconds": a.seconds, "nproc": os.cpu_count()}
    try:
        wait_quiet(a.quiet_load, a.patience)
        res["load_online"] = load()
        # The online check alone (warm: one run first).
        online_once(st)
        alone = [online_once(st) for _ in range(a.runs)]
        res["online_frozen_s"] = stats([x[0] for x in alone])
        res["online_check_s"] = stats([x[1] for x in alone])
        res["online_check_cpu_s"] = stats([x[2] for x in alone])
        res["online_command_s"] = stats([x[3] for x in alone])

        wait_quiet(a.quiet_load, a.patience)
        res["load_workload"] = load()
        base_tp, base_worst, with_tp, with_worst, frozen_w, checks = [], [], [], [], [], []
        for _ in range(a.runs):
            p = writer(st, a.seconds)
            tp, worst = writer_result(p)
            base_tp.append(tp)
            base_worst.append(worst)
            p = writer(st, a.seconds)
            end = time.monotonic() + a.seconds
            n = 0
            time.sleep(0.2)
            while time.monotonic() < end - 0.2:
                frozen_w.append(online_once(st)[0])
                n += 1
            tp, worst = writer_result(p)
            with_tp.append(tp)
            with_worst.append(worst)
            checks.append(n)
        res["workload_mib_s_alone"] = stats(base_tp)
        res["workload_worst_op_s_alone"] = stats(base_worst)
        res["workload_mib_s_with_online"] = stats(with_tp)
        res["workload_ratio"] = stats([w / b for w, b in zip(with_tp, base_tp)])
        res["workload_worst_op_s_with_online"] = stats(with_worst)
        res["online_checks_per_run"] = checks
        res["online_frozen_s_under_load"] = stats(frozen_w)

        st.unmount_ext4()
        wait_quiet(a.quiet_load, a.patience)
        res["load_offline"] = load()
        timed([PFSCK, "-fn", st.image])
        off = [timed([PFSCK, "-fn", st.image])[:2] for _ in range(a.runs)]
        res["offline_check_s"] = stats([x[0] for x in off])
        res["offline_check_cpu_s"] = stats([x[1] for x in off])
    finally:
        st.close()
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    md = os.path.splitext(a.out)[0] + ".md"
    with open(md, "w") as f:
        f.write(report(res, a))
    log(f"wrote {a.out} and {md}")


def report(r, a):
    ms = lambda k: f"{r[k]['min'] * 1e3:.1f} / {r[k]['median'] * 1e3:.1f}"
    s = lambda k: f"{r[k]['min']:.3f} / {r[k]['median']:.3f}"
    mb = lambda k: f"{r[k]['min']:.1f} / {r[k]['median']:.1f}"
    alone, under = r["workload_mib_s_alone"]["median"], r["workload_mib_s_with_online"]["median"]
    return f"""# pfsck --online: measurements

Generated by `bench/online.py --runs {a.runs} --seconds {a.seconds:g} --files {a.files}`:
an ext4 image of {a.files} 1 KiB files (100 to a directory), loop-mounted
from a loop-mounted XFS image, {r['nproc']} CPUs. Each figure is min / median
of {a.runs} runs. Load average (1 min) when each series started: online
{r['load_online']:.2f}, workload {r['load_workload']:.2f}, offline {r['load_offline']:.2f}.

| what | min / median |
|---|---|
| freeze window, no workload (ms) | {ms('online_frozen_s')} |
| freeze window, under the workload (ms) | {ms('online_frozen_s_under_load')} |
| online check of the snapshot, wall (s) | {s('online_check_s')} |
| online check of the snapshot, CPU (s) | {s('online_check_cpu_s')} |
| whole `pfsck --online -n` command, wall (s) | {s('online_command_s')} |
| offline `pfsck -fn` of the same image, wall (s) | {s('offline_check_s')} |
| offline `pfsck -fn` of the same image, CPU (s) | {s('offline_check_cpu_s')} |
| workload alone (MiB/s) | {mb('workload_mib_s_alone')} |
| workload with online checks back to back (MiB/s) | {mb('workload_mib_s_with_online')} |
| slowest workload write, alone (ms) | {ms('workload_worst_op_s_alone')} |
| slowest workload write, with online checks (ms) | {ms('workload_worst_op_s_with_online')} |

Online checks per {a.seconds:g}-second workload run: {r['online_checks_per_run']}.
Throughput with the checks running, as a share of the workload alone
run just before it: {r['workload_ratio']['min'] * 100:.0f}% / {r['workload_ratio']['median'] * 100:.0f}% (min / median;
ratio of the medians {under / alone * 100:.0f}%). The workload writes 1 MiB at a
time over eight 16 MiB files and calls fdatasync every 8 MiB. The online check's CPU time is measured
by pfsck itself (getrusage, all threads); the offline check's is the child's
rusage (the process, including its start).
"""


if __name__ == "__main__":
    main()
