#!/usr/bin/env python3
"""Merges the step traces of several tasks into one file, and summarizes them.

Each task started with DISTFLOW_TRACE_DIR set writes its own
distflow-trace.<pid>.json (src/base/step_trace.h). Tasks of one host share a
clock, so their spans line up once merged: open the merged file in
ui.perfetto.dev or chrome://tracing to see one step cross the tasks.

  tools/merge_traces.py --out merged.json DIR_OR_FILE...
  tools/merge_traces.py --summary DIR_OR_FILE...
  tools/merge_traces.py --timeline DIR_OR_FILE...

--summary prints, per task and span name, how many spans there are and the
median and total time they take, the longest first.

--timeline follows the steps of the task whose master ran them (its "step"
spans; of several, the task with the most): for each span of any task that starts inside a step, its start as an
offset from that step's start (the first such span per step), and its
length; per task and name, the medians over the steps in which it occurs,
earliest first. Spans seen in fewer than half of the steps are left out. It
shows where a step's time goes between tasks: when the ps starts, when a
tensor arrives, how long after the last update the step ends.
"""
import argparse
import bisect
import collections
import glob
import json
import os
import statistics
import sys


def trace_files(paths):
    files = []
    for path in paths:
        if os.path.isdir(path):
            files.extend(sorted(glob.glob(os.path.join(path, "distflow-trace.*.json"))))
        else:
            files.append(path)
    if not files:
        sys.exit("merge_traces.py: no distflow-trace.*.json in " + " ".join(paths))
    return files


def load_events(files):
    events = []
    for name in files:
        try:
            with open(name) as f:
                events.extend(json.load(f)["traceEvents"])
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"merge_traces.py: {name} is not a step trace ({e})")
    return events


def summarize(events):
    tasks = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    durations = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            durations[(tasks.get(e["pid"], str(e["pid"])), e["cat"], e["name"])].append(e["dur"])
    rows = sorted(durations.items(), key=lambda kv: -sum(kv[1]))
    print(f"{'task':<30} {'category':<10} {'count':>7} {'median us':>10} {'total ms':>9}  name")
    for (task, category, name), durs in rows:
        print(f"{task:<30} {category:<10} {len(durs):>7} {statistics.median(durs):>10.1f} "
              f"{sum(durs) / 1e3:>9.1f}  {name}")


def timeline(events):
    tasks = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    steps_of = collections.defaultdict(list)
    for e in spans:
        if e["cat"] == "step" and e["name"] == "step":
            steps_of[e["pid"]].append(e)
    if not steps_of:
        sys.exit("merge_traces.py: the traces hold no steps (\"step\" spans of a master)")
    # The master's task: of the processes that are tasks of a cluster (a
    # client in a process of its own has no task name), the one with the
    # most steps.
    master = max(steps_of, key=lambda pid: (str(tasks.get(pid, "")).startswith("/job:"),
                                            len(steps_of[pid])))
    steps = sorted(steps_of[master], key=lambda e: e["ts"])
    starts = [s["ts"] for s in steps]
    offsets = collections.defaultdict(list)
    lengths = collections.defaultdict(list)
    seen = set()
    for e in sorted(spans, key=lambda e: e["ts"]):
        i = bisect.bisect_right(starts, e["ts"]) - 1
        if i < 0 or e["ts"] > steps[i]["ts"] + steps[i]["dur"]:
            continue
        key = (tasks.get(e["pid"], str(e["pid"])), e["name"])
        if (i, key) in seen:
            continue
        seen.add((i, key))
        offsets[key].append(e["ts"] - steps[i]["ts"])
        lengths[key].append(e["dur"])
    rows = [(statistics.median(offsets[k]), statistics.median(lengths[k]), len(offsets[k]), k)
            for k in offsets if 2 * len(offsets[k]) >= len(steps)]
    rows.sort(key=lambda row: row[0])
    print(f"{len(steps)} steps of {tasks.get(master, master)}, median length "
          f"{statistics.median(s['dur'] for s in steps):.1f} us")
    print(f"{'task':<30} {'starts at us':>12} {'lasts us':>9} {'steps':>6}  name")
    for start, length, count, (task, name) in rows:
        print(f"{task:<30} {start:>12.1f} {length:>9.1f} {count:>6}  {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="trace files, or folders holding them")
    parser.add_argument("--out", help="where to write the merged trace")
    parser.add_argument("--summary", action="store_true", help="print a table of span times")
    parser.add_argument("--timeline", action="store_true",
                        help="print when each span starts within a step, across tasks")
    args = parser.parse_args()
    if not args.out and not args.summary and not args.timeline:
        parser.error("give --out, --summary, --timeline or several")
    events = load_events(trace_files(args.paths))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ns"}, f)
    if args.summary:
        summarize(events)
    if args.timeline:
        timeline(events)


if __name__ == "__main__":
    main()
