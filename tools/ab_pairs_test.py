#!/usr/bin/env python3
"""Checks tools/ab_pairs.py against a stand-in benchmark whose rates it sets.

The stand-in prints dist_train_bench's table: the setup's rate comes from the
environment variable RATE (A runs faster than B by a known share), the
peer's stays fixed. The tool must alternate the setups, read every row and
report the paired gain; a stand-in that fails must make the tool fail.
"""
import os
import re
import stat
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ab_pairs.py")

FAKE = """#!/bin/sh
echo "$@" >> "$LOG"
[ -n "$FAIL" ] && { echo "stand-in failed" >&2; exit 3; }
echo "MLP 784-256-128-10, Adam, batch 100, 2000 steps per worker"
echo "distflow setup                   examples/s  peer                       examples/s   ratio"
echo "  distflow worker 0 of 1: examples_per_sec=$RATE worker_cpu_ms_per_step=1.300 ps_cpu_ms_per_step=0.700"
echo "1 ps + 1 worker                       $RATE  distflow, one process          100000    $RATIO"
echo "1 ps + 2 workers, async               $RATE  PyTorch RPC ps                  20000    4.00"
"""


class AbPairsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.bin = os.path.join(self.dir.name, "fake_bench")
        with open(self.bin, "w") as f:
            f.write(FAKE)
        os.chmod(self.bin, stat.S_IRWXU)
        self.log = os.path.join(self.dir.name, "calls")

    def tearDown(self):
        self.dir.cleanup()

    def run_tool(self, *args, **env):
        return subprocess.run(
            [sys.executable, TOOL, "--a-bin", self.bin, *args],
            env={**os.environ, "LOG": self.log, **env},
            capture_output=True, text=True, check=False)

    def test_reports_the_paired_gain_of_each_row(self):
        out = self.run_tool("--pairs", "3", "--steps", "50",
                            "--a", "RATE=84000 RATIO=0.84",
                            "--b", "RATE=80000 RATIO=0.80")
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(self.log) as f:
            calls = f.read().splitlines()
        self.assertEqual(len(calls), 6)  # three pairs
        self.assertIn("--steps=50", calls[0])
        self.assertIn("--rows=cost", calls[0])
        text = out.stdout
        # One block per row of the table, each with both setups' means.
        self.assertIn("1 ps + 1 worker  (A: RATE=84000", text)
        self.assertIn("1 ps + 2 workers, async  (A:", text)
        self.assertIn("A: examples/s 84000, peer 100000, ratio mean 0.840", text)
        self.assertIn("B: examples/s 80000, peer 100000, ratio mean 0.800", text)
        gains = re.findall(r"examples/s ([+-]\d\.\d{3}) \+- (\d\.\d{3}) "
                           r"\(relative\), ratio ([+-]\d\.\d{3})", text)
        self.assertEqual(len(gains), 2)
        self.assertEqual(gains[0], ("+0.050", "0.000", "+0.040"))
        self.assertIn("cpu/step worker 1.300 ms ps 0.700 ms", text)

    def test_a_failing_benchmark_fails_the_tool(self):
        out = self.run_tool("--pairs", "1", "--a", "FAIL=1 RATE=1 RATIO=1.0")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("stand-in failed", out.stderr)


if __name__ == "__main__":
    unittest.main()
