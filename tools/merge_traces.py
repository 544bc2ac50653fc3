#!/usr/bin/env python3
"""Merges the step traces of several tasks into one file, and summarizes them.

Each task started with DISTFLOW_TRACE_DIR set writes its own
distflow-trace.<pid>.json (src/base/step_trace.h). Tasks of one host share a
clock, so their spans line up once merged: open the merged file in
ui.perfetto.dev or chrome://tracing to see one step cross the tasks.

  tools/merge_traces.py --out merged.json DIR_OR_FILE...
  tools/merge_traces.py --summary DIR_OR_FILE...

--summary prints, per task and span name, how many spans there are and the
median and total time they take, the longest first.
"""
import argparse
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="trace files, or folders holding them")
    parser.add_argument("--out", help="where to write the merged trace")
    parser.add_argument("--summary", action="store_true", help="print a table of span times")
    args = parser.parse_args()
    if not args.out and not args.summary:
        parser.error("give --out, --summary or both")
    events = load_events(trace_files(args.paths))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ns"}, f)
    if args.summary:
        summarize(events)


if __name__ == "__main__":
    main()
