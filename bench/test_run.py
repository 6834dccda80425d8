#!/usr/bin/env python3
"""Tests of bench/run.py itself at a tiny scale (seconds, not a benchmark):
every image kind is generated and checked (clean, or damaged for `errors`),
every tool runs in every mode (repairs on the damaged image), and the reports
come out of the JSON. Writes only to a temporary
directory (images and reports); needs e2fsprogs, GNU time and cargo, and
/dev/fuse with fusermount3 for the slow-device part (skipped without them).

    python3 bench/test_run.py
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class TinyRun(unittest.TestCase):
    def test_tiny_scale_end_to_end(self):
        fuse = os.path.exists("/dev/fuse") and shutil.which("fusermount3")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "results.json")
            env = dict(os.environ, PFSCK_BENCH_DIR=os.path.join(tmp, "images"))
            cmd = [sys.executable, os.path.join(HERE, "run.py"), "--scale", "0.002", "--runs", "1",
                   "--threads", "1,2", "--out", out, "--slow-latency", "0.2" if fuse else ""]
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
            with open(out) as fh:
                data = json.load(fh)
            kinds = {p["kind"] for p in data["images"]}
            self.assertEqual(kinds, {"file", "dir25", "dir50", "frag", "hugedir", "zero", "errors"})
            damaged = {p["name"] for p in data["images"] if "damaged" in p}
            for p in data["images"]:
                self.assertEqual(p["e2fsck_exit"], 4 if p["name"] in damaged else 0, p["name"])
            modes = {r["mode"] for r in data["results"]}
            self.assertTrue({"warm", "cold", "repair"} <= modes)
            if fuse:
                self.assertIn("slow-0.2ms", modes)
            for r in data["results"]:
                what = (r["image"], r["mode"], r["tool"])
                if r["mode"] == "repair":
                    # -fy fixes everything; e2fsck -fn finds nothing after.
                    self.assertIn(r["image"], damaged, what)
                    self.assertEqual(r["exit"], [1], what)
                    self.assertEqual(r["after_e2fsck_fn"], [0], what)
                else:
                    self.assertEqual(r["exit"], [4 if r["image"] in damaged else 0], what)
                self.assertGreater(r["peak_rss_kib"], 0)
            with open(os.path.join(tmp, "RESULTS.md")) as fh:
                self.assertIn("Scale: 0.002", fh.read())


if __name__ == "__main__":
    unittest.main()
