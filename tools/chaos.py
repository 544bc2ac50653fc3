#!/usr/bin/env python3
"""Chaos rounds against a real Fashion-MNIST cluster of build/bin/fashion_mnist.

One round starts 2 ps tasks and 2 workers (worker 0 is the chief) on free
127.0.0.1 ports with a fresh checkpoint directory, trains --train_steps
global steps asynchronously or synchronously (--modes), and disturbs it as
--scenario says:

  kill       (default) kill -9s of random tasks (a ps, worker 1 or the
             chief) at random global steps, each task started again on its
             port with its flags after a short random delay;
  freeze     a ps frozen with SIGSTOP while the workers pull from and push
             to it, until the workers' steps have failed naming it (or
             --detect_bound seconds), then SIGCONT;
  partition  the link between worker 1 and ps 0 taken down (three network
             namespaces, see chaos_netns.py; needs root) until worker 1's
             step has failed naming ps 0 (or --detect_bound), then up.

A round passes when every task exits with status 0 within --deadline
seconds, the chief's final test_accuracy is within --tolerance of an
undisturbed run with the same flags (run once per mode and cached), and, for
freeze and partition, each worker watched (both for a freeze, worker 1 for a
partition) printed an error naming the disturbed ps within --detect_bound
seconds and trained again after it came back. (An asynchronous partition's
accuracy is printed, not checked: the chief trains on alone, on its half of
the data, while worker 1 is cut off.) The plan of a round (which tasks, at
which global steps, the delays) comes from --seed: round i uses seed + i,
and `chaos.py --seed S --rounds 1 --modes M` replays the plan of a round
printed with seed=S.

Runs whose tasks hang past the deadline get every thread's stack of each
task still running written beside its log (with gdb, where installed).

Prints one line per round and a summary; exits 1 if any round failed, and
keeps the failed rounds' task logs (one file per task, every start of it)
under the directory it prints. Python 3 standard library only.
"""
import argparse
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chaos_cluster import TASKS, Cluster, free_port, describe_exit  # noqa: E402
import chaos_netns  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKERS = ("chief", "worker1")
POLL_SECONDS = 0.1
DEFAULT_TASK_FLAGS = "--batch_size=100 --learning_rate=0.0002"


class Round:
    """What happened in one round, and whether it passed."""

    def __init__(self, label):
        self.label = label
        # "ps1@120+1.5s" (killed at global step 120, started again 1.5 s
        # later), "freeze ps0@95 for 12.1s" and the like.
        self.events = []
        self.problems = []  # why it failed; empty when it passed
        self.accuracy = None
        self.exits = ""
        self.seconds = 0.0
        self.workdir = None
        self.detections = []  # "chief 12.3s: <the line>"
        self.failed_tails = []  # (task, exit, last lines)
        # Why the accuracy is not held to the baseline's, if it is not.
        self.accuracy_unchecked = None

    @property
    def passed(self):
        return not self.problems


def loopback_hosts():
    return {name: f"127.0.0.1:{free_port()}" for name in TASKS}


def netns_hosts():
    """Each task on its host's address (see chaos_netns.py)."""
    return {name: f"{chaos_netns.ADDRESS[chaos_netns.TASK_HOST[name]]}:"
                  f"{2222 + i}" for i, name in enumerate(TASKS)}


def detection_lines(task, since, address):
    """Lines of `task`'s output after offset `since` that name `address`
    (the disturbed task) and are not progress lines."""
    text = task.output(everything=True)[since:]
    return [line for line in text.split("\n")
            if address in line and not line.startswith("progress")]


class Disturbance:
    """A scheduled disturbance of the round: kills, a freeze, a partition.

    poll() is called every POLL_SECONDS while the round runs and does what
    is due; it may add to the round's problems."""

    def poll(self, cluster, result):
        raise NotImplementedError

    def active(self):
        """Whether a task is disturbed now (down, frozen, cut off)."""
        return False

    def finish(self, cluster, result):
        """Ends whatever is still in effect, when the round ends early."""


class Kills(Disturbance):
    """kill -9s at global steps, each task restarted after a delay; one at a
    time, so that each kill lands on a running cluster."""

    def __init__(self, rng, train_steps, max_kills):
        n = rng.randint(1, max_kills)
        lo, hi = train_steps // 10, train_steps * 8 // 10
        self.plan = sorted(
            (rng.randint(lo, hi), rng.choice(TASKS), rng.uniform(0, 1.0),
             rng.uniform(0.2, 3.0)) for _ in range(n))
        self.armed_at = None
        self.down = None  # (task, restart time)

    def active(self):
        return self.down is not None

    def poll(self, cluster, result):
        now = cluster.clock()
        if self.down is not None:
            task, restart_at = self.down
            if now >= restart_at:
                task.start(cluster.clock)
                self.down = None
            return
        if not self.plan or cluster.accuracy() is not None:
            return
        step, target, jitter, delay = self.plan[0]
        if self.armed_at is None:
            if cluster.global_step() < step:
                return
            # At a random point of the steps, not just after a progress line.
            self.armed_at = now + jitter
        if now < self.armed_at:
            return
        self.plan.pop(0)
        self.armed_at = None
        task = cluster.tasks[target]
        if not task.running():
            return
        task.kill()
        result.events.append(
            f"{target}@{cluster.global_step()}+{delay:.1f}s")
        self.down = (task, now + delay)

    def finish(self, cluster, result):
        self.down = None


class Interruption(Disturbance):
    """One task cut off (frozen or partitioned) at a random global step,
    until the workers in `watchers` have each printed an error naming it, or
    `bound` seconds have passed; then it is restored."""

    def __init__(self, rng, train_steps, target, watchers, bound, stop,
                 resume, name):
        # Early: in asynchronous training the workers not cut off go on, and
        # should not have finished by the time the task is back.
        lo, hi = train_steps // 10, train_steps * 4 // 10
        self.step = rng.randint(lo, hi)
        self.target, self.watchers, self.bound = target, watchers, bound
        self.stop, self.resume, self.name = stop, resume, name
        self.started = None  # (time, {worker: output offset})
        self.detected = {}
        self.resumed_at = None  # (time, {worker: output offset})
        self.done = False

    def active(self):
        return self.started is not None and self.resumed_at is None

    def poll(self, cluster, result):
        if self.done:
            return
        now = cluster.clock()
        address = cluster.hosts[self.target]
        if self.started is None:
            if cluster.global_step() < self.step:
                return
            offsets = {w: len(cluster.tasks[w].output(everything=True))
                       for w in WORKERS}
            self.stop(cluster)
            self.started = (now, offsets)
            result.events.append(
                f"{self.name} {self.target}@{cluster.global_step()}")
            return
        if self.resumed_at is None:
            start, offsets = self.started
            for w in self.watchers:
                if w in self.detected:
                    continue
                lines = detection_lines(cluster.tasks[w], offsets[w], address)
                if lines:
                    self.detected[w] = now - start
                    # From the error's code on: the log prefix says little.
                    code = re.search(r"[A-Z][A-Z_]{4,}: ", lines[0])
                    line = lines[0][code.start() if code else 0:]
                    result.detections.append(
                        f"{w} after {now - start:.1f}s: {line[:300]}")
            if len(self.detected) < len(self.watchers) and \
                    now - start < self.bound:
                return
            for w in self.watchers:
                if w not in self.detected:
                    result.problems.append(
                        f"{w} printed no error naming {self.target} "
                        f"({address}) within {self.bound:.0f}s of the "
                        f"{self.name}")
            self.resume(cluster)
            self.resumed_at = (now, {w: len(cluster.tasks[w].output(
                everything=True)) for w in WORKERS})
            result.events[-1] += f" for {now - start:.1f}s"
            return
        self.done = True

    def finish(self, cluster, result):
        if self.started is not None and self.resumed_at is None:
            self.resume(cluster)
            self.resumed_at = (cluster.clock(), {})

    def check_progress(self, cluster, result):
        """After the task came back, each watching worker went on: it trained
        (a progress line) or found the job's last step reached (a worker cut
        off in asynchronous training may find the others done)."""
        if self.started is None:
            result.problems.append(
                f"the {self.name} never happened: training ended before "
                f"global step {self.step}")
            return
        if self.resumed_at is None or not self.resumed_at[1]:
            return
        offsets = self.resumed_at[1]
        for w in self.watchers:
            after = cluster.tasks[w].output(everything=True)[offsets[w]:]
            if not re.search(r"progress step=|stopped at global_step=", after):
                result.problems.append(
                    f"{w} did not train after {self.target} came back")


def make_disturbance(args, scenario, rng, hosts):
    if scenario == "kill":
        return Kills(rng, args.train_steps, args.max_kills)
    if scenario == "freeze":
        target = rng.choice(("ps0", "ps1"))
        return Interruption(
            rng, args.train_steps, target, WORKERS, args.detect_bound,
            lambda c: c.tasks[target].signal(signal.SIGSTOP),
            lambda c: c.tasks[target].signal(signal.SIGCONT), "freeze")
    if scenario == "partition":
        return Interruption(
            rng, args.train_steps, "ps0", ("worker1",), args.detect_bound,
            lambda c: hosts.cut("p", "w"), lambda c: hosts.heal("p", "w"),
            "partition")
    return None


def run_round(args, mode, scenario, seed, workdir, netns=None):
    """One round (scenario None: undisturbed) in `workdir`; returns a Round."""
    result = Round(f"{scenario or 'baseline'} {mode} seed={seed}")
    result.workdir = workdir
    rng = random.Random(f"{scenario}:{mode}:{seed}")
    hosts = netns_hosts() if netns else loopback_hosts()
    prefixes = {n: netns.prefix(n) for n in TASKS} if netns else None
    cluster = Cluster(args.binary, mode, args.train_steps, workdir, hosts,
                      prefixes, args.task_flags.split())
    disturbance = make_disturbance(args, scenario, rng, netns) \
        if scenario else None
    cluster.start()
    try:
        while True:
            if disturbance is not None:
                disturbance.poll(cluster, result)
            down = disturbance is not None and disturbance.active()
            failed = [t for t in cluster.failed_tasks()
                      if not (down and isinstance(disturbance, Kills) and
                              disturbance.down and
                              t is disturbance.down[0])]
            if failed:
                # The others would only wait for it until the deadline.
                time.sleep(3)
                result.problems.append(
                    "exited with a failure: " +
                    ", ".join(f"{t.name} ({describe_exit(t.exit_code())})"
                              for t in failed))
                break
            if not down and cluster.all_exited():
                break
            if cluster.clock() > args.deadline:
                running = [n for n, t in cluster.tasks.items() if t.running()]
                result.problems.append(
                    f"still running after {args.deadline:.0f}s: "
                    f"{', '.join(running)}")
                for name in running:
                    stacks = cluster.tasks[name].dump_stacks()
                    if stacks:
                        result.problems.append(f"{name}'s threads: {stacks}")
                break
            time.sleep(POLL_SECONDS)
    finally:
        if disturbance is not None:
            disturbance.finish(cluster, result)
        result.seconds = cluster.clock()
        result.exits = cluster.exit_codes()
        for task in cluster.tasks.values():
            if task.exit_code() not in (None, 0):
                result.failed_tails.append(
                    (task.name, describe_exit(task.exit_code()), task.tail()))
        cluster.kill_all()
    if isinstance(disturbance, Interruption):
        disturbance.check_progress(cluster, result)
    result.accuracy = cluster.accuracy()
    if scenario == "partition" and mode == "async":
        # The chief trains on alone, on its half of the data, for as long as
        # worker 1 is cut off: a large part of a short job.
        result.accuracy_unchecked = "worker 1's data was left out"
    if result.accuracy is None:
        result.problems.append("the chief printed no test_accuracy")
    return result


def report(result, baseline, tolerance):
    """Checks the accuracy against the baseline; prints the round's line."""
    if result.accuracy is not None and baseline is not None:
        diff = result.accuracy - baseline
        if abs(diff) > tolerance and not result.accuracy_unchecked:
            result.problems.append(
                f"accuracy {result.accuracy:.4f} is {diff:+.4f} from the "
                f"undisturbed {baseline:.4f}")
        accuracy = f"accuracy={result.accuracy:.4f} " \
                   f"baseline={baseline:.4f} ({diff:+.4f})"
        if result.accuracy_unchecked:
            accuracy += f" (not checked: {result.accuracy_unchecked})"
    else:
        accuracy = f"accuracy={result.accuracy} baseline={baseline}"
    events = ",".join(result.events) or "none"
    verdict = "PASS" if result.passed else "FAIL"
    print(f"{result.label}: events={events} exits: {result.exits} "
          f"{accuracy} {result.seconds:.1f}s {verdict}", flush=True)
    for line in result.detections:
        print(f"    detected: {line}", flush=True)
    for problem in result.problems:
        print(f"    problem: {problem}", flush=True)
    for name, code, tail in result.failed_tails:
        print(f"    {name} exited {code}; its last lines:", flush=True)
        for line in tail:
            print(f"      | {line[:240]}", flush=True)
    if not result.passed:
        print(f"    logs kept in {result.workdir}", flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary",
                   default=os.path.join(REPO, "build", "bin", "fashion_mnist"))
    p.add_argument("--rounds", type=int, default=1,
                   help="rounds of each mode (default 1)")
    p.add_argument("--modes", default="async,sync",
                   help="comma-separated: async, sync (default both)")
    p.add_argument("--scenario", choices=("kill", "freeze", "partition"),
                   default="kill")
    p.add_argument("--seed", type=int, default=1,
                   help="round i of each mode uses seed + i (default 1)")
    p.add_argument("--train_steps", type=int, default=4000,
                   help="global steps of a round (default 4000)")
    p.add_argument("--task_flags", default=DEFAULT_TASK_FLAGS,
                   help="more flags of every task (default: "
                        f"'{DEFAULT_TASK_FLAGS}')")
    p.add_argument("--max_kills", type=int, default=3,
                   help="kills per round: 1 to this many (default 3)")
    p.add_argument("--tolerance", type=float, default=0.01,
                   help="largest accuracy difference from the undisturbed "
                        "run (default 0.01)")
    p.add_argument("--deadline", type=float, default=300,
                   help="seconds a round may take (default 300)")
    p.add_argument("--detect_bound", type=float, default=30,
                   help="seconds for a frozen or cut-off task's error to "
                        "show (default 30)")
    p.add_argument("--logs_dir",
                   help="where rounds' logs go (default: a new temporary "
                        "directory, removed if every round passed)")
    p.add_argument("--keep_logs", action="store_true",
                   help="keep the logs of rounds that passed too")
    args = p.parse_args(argv)
    args.modes = [m for m in args.modes.split(",") if m]
    for m in args.modes:
        if m not in ("async", "sync"):
            p.error(f"--modes: unknown mode '{m}' (async or sync)")
    if not os.access(args.binary, os.X_OK):
        p.error(f"--binary {args.binary} is not an executable (make build)")
    return args


def main(argv):
    args = parse_args(argv)
    # A tool ended by a signal (a test's timeout) still ends its tasks and
    # removes its namespaces, in the finally clauses.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _: sys.exit(128 + signum))
    root = args.logs_dir or tempfile.mkdtemp(prefix="distflow-chaos-")
    os.makedirs(root, exist_ok=True)
    netns = None
    if args.scenario == "partition":
        netns = chaos_netns.Hosts()
        why_not = netns.create()
        if why_not:
            netns.remove()
            print(f"chaos: partition SKIPPED: {why_not}")
            return 0
    started = time.monotonic()
    baselines, results = {}, []
    try:
        for mode in args.modes:
            base = run_round(args, mode, None, 0,
                             os.path.join(root, f"baseline-{mode}"))
            report(base, base.accuracy, args.tolerance)
            if base.passed:
                baselines[mode] = base.accuracy
                if not args.keep_logs:
                    shutil.rmtree(base.workdir, ignore_errors=True)
            else:
                results.append(base)
            for i in range(args.rounds):
                seed = args.seed + i
                r = run_round(args, mode, args.scenario, seed,
                              os.path.join(root, f"{args.scenario}-{mode}-"
                                                 f"seed{seed}"), netns)
                r.label = f"round {i + 1}/{args.rounds} {r.label}"
                report(r, baselines.get(mode), args.tolerance)
                results.append(r)
                if r.passed and not args.keep_logs:
                    shutil.rmtree(r.workdir, ignore_errors=True)
    finally:
        if netns is not None:
            netns.remove()
    failed = [r for r in results if not r.passed]
    rounds = [r for r in results if not r.label.startswith("baseline")]
    kills = {}
    for r in rounds:
        for event in r.events:
            # "ps1@120" counts as a ps kill, "freeze ps0@95 for 12.1s" as a
            # freeze.
            first = event.split(" ")[0]
            kind = first if " " in event else re.sub(r"\d*@.*", "", first)
            kills[kind] = kills.get(kind, 0) + 1
    print(f"chaos: {args.scenario}: {len(rounds) - len(failed)} of "
          f"{len(rounds)} rounds passed in {time.monotonic() - started:.0f}s"
          f"; disturbed: " +
          (", ".join(f"{k} {n}" for k, n in sorted(kills.items())) or "none"))
    if failed:
        print(f"chaos: logs of the failed rounds are in {root}")
        return 1
    if not args.logs_dir and not args.keep_logs:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
