#!/usr/bin/env python3
"""Compares two setups of a benchmark row in alternating, paired runs.

On a shared two-core machine one run of the cost row (1 ps + 1 worker
against one process) swings by several percent from the next, more than
most changes to a step are worth; and a step trace slows the step it
records, so that the time a change saves in a trace need not be saved
untraced. This runs the row N times in each of two setups, alternating
(A, B, A, B, ...), and reports each setup's means and the paired
difference with its standard error: a change is worth keeping when the
difference stands well clear of that error.

A setup is a list of environment assignments and, optionally, its own
binary (for instance a second build folder of the commit before):

  tools/ab_pairs.py --pairs 20 --a "DISTFLOW_DATA_SOCKETS=1" --b ""
  tools/ab_pairs.py --pairs 12 --b-bin build-before/bench/dist_train_bench

The command run is `BIN --rows=ROWS --repeats=1 --steps=STEPS`; every
table row it prints (distflow's setup, its examples/s, the peer, the
peer's examples/s, the ratio) is compared on its own.
"""
import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys

# A table row of dist_train_bench: "<setup>  <n>  <peer>  <n>  <ratio>".
ROW = re.compile(
    r"^(\S.*?)\s{2,}(\d+)\s{2,}(\S.*?)\s{2,}(\d+)\s{2,}(\d+\.\d+)\s*$")
CPU = re.compile(r"(\w+)_cpu_ms_per_step=([0-9.]+)")


def run_once(binary, env_assignments, rows, steps):
    env = dict(os.environ)
    for assignment in shlex.split(env_assignments):
        name, _, value = assignment.partition("=")
        env[name] = value
    out = subprocess.run(
        [binary, f"--rows={rows}", "--repeats=1", f"--steps={steps}"],
        env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"{binary} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    results = {}
    for line in out.stdout.splitlines():
        m = ROW.match(line)
        if m and not line.startswith("distflow setup"):
            results[m.group(1)] = (float(m.group(2)), float(m.group(4)),
                                   float(m.group(5)))
    cpu = {}
    for name, ms in CPU.findall(out.stdout):
        cpu.setdefault(name, []).append(float(ms))
    return results, cpu


def describe(values):
    mean = statistics.mean(values)
    if len(values) < 2:
        return f"{mean:.3f}"
    error = statistics.stdev(values) / len(values) ** 0.5
    return f"{mean:+.3f} +- {error:.3f}"


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--a", default="", help="environment of setup A")
    parser.add_argument("--b", default="", help="environment of setup B")
    parser.add_argument("--a-bin", default="build/bench/dist_train_bench")
    parser.add_argument("--b-bin", default=None,
                        help="binary of setup B (default: A's)")
    parser.add_argument("--rows", default="cost")
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    b_bin = args.b_bin or args.a_bin

    runs = {"A": [], "B": []}
    for i in range(args.pairs):
        for name, binary, env in (("A", args.a_bin, args.a),
                                  ("B", b_bin, args.b)):
            results, cpu = run_once(binary, env, args.rows, args.steps)
            runs[name].append((results, cpu))
            cells = "  ".join(f"{row}: {v[0]:.0f} / {v[1]:.0f} = {v[2]:.2f}"
                              for row, v in results.items())
            cpus = " ".join(f"{k} {statistics.mean(v):.3f} ms"
                            for k, v in cpu.items())
            print(f"pair {i + 1} {name}  {cells}  cpu/step {cpus}",
                  flush=True)

    rows = set(runs["A"][0][0]) & set(runs["B"][0][0])
    for row in sorted(rows):
        print(f"\n{row}  (A: {args.a or args.a_bin}; B: {args.b or b_bin})")
        for name in ("A", "B"):
            own = [r[row][0] for r, _ in runs[name]]
            peer = [r[row][1] for r, _ in runs[name]]
            ratio = [r[row][2] for r, _ in runs[name]]
            print(f"  {name}: examples/s {statistics.mean(own):.0f}, peer "
                  f"{statistics.mean(peer):.0f}, ratio mean "
                  f"{statistics.mean(ratio):.3f} median "
                  f"{statistics.median(ratio):.3f}")
        gain = [a[0][row][0] / b[0][row][0] - 1
                for a, b in zip(runs["A"], runs["B"])]
        ratio_gain = [a[0][row][2] - b[0][row][2]
                      for a, b in zip(runs["A"], runs["B"])]
        print(f"  A against B, paired: examples/s {describe(gain)} "
              f"(relative), ratio {describe(ratio_gain)}")


if __name__ == "__main__":
    main()
