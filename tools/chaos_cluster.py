"""Processes of a build/bin/fashion_mnist cluster for tools/chaos.py.

A Task is one task's process, restartable on its own port with the same
flags; its stdout and stderr go to one log file, every start appended after a
header line, so that the whole history of the task stays in one place. A
Cluster is 2 ps tasks and 2 workers (worker 0 is the chief) started with the
same flags and a fresh checkpoint directory.
"""
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import time

PROGRESS = re.compile(r"progress step=(\d+)/(\d+)")
ACCURACY = re.compile(r"^test_accuracy=([0-9.]+)", re.MULTILINE)
TASKS = ("ps0", "ps1", "chief", "worker1")


def free_port():
    """A port that was free on 127.0.0.1 a moment ago (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def describe_exit(code):
    """'0', '1' or a signal's name for a Popen return code."""
    if code is None:
        return "running"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return str(code)


def _die_with_parent():
    """In the child before exec: SIGKILL when the tool dies, even by kill -9
    (a ps left running would wait for its chief forever)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Task:
    """One task's process: started, killed, frozen and started again."""

    def __init__(self, name, argv, log_path, prefix=()):
        self.name = name
        self.argv = list(argv)
        self.prefix = list(prefix)  # e.g. ip netns exec NS
        self.log_path = log_path
        self.proc = None
        self.starts = 0
        self.offset = 0  # where the current process's output begins

    def start(self, clock):
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"==== chaos: {self.name} start {self.starts} at "
                      f"+{clock():.1f}s ====\n".encode())
            log.flush()
            self.offset = log.tell()
            # A session of its own: a ^C of the tool does not reach it, and the
            # tool ends it by its pid.
            self.proc = subprocess.Popen(
                self.prefix + self.argv, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_die_with_parent)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def exit_code(self):
        return None if self.proc is None else self.proc.poll()

    def kill(self):
        if self.running():
            os.kill(self.proc.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()

    def signal(self, sig):
        if self.running():
            os.kill(self.proc.pid, sig)

    def output(self, everything=False):
        """The current process's output (every start's with `everything`)."""
        try:
            with open(self.log_path, "rb") as log:
                if not everything:
                    log.seek(self.offset)
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def last_step(self):
        """The global step of the current process's last progress line."""
        steps = PROGRESS.findall(self.output())
        return int(steps[-1][0]) if steps else 0

    def dump_stacks(self):
        """Writes every thread's stack of the running process next to its log
        (with gdb, where installed); returns the file's path or None."""
        gdb = shutil.which("gdb")
        if gdb is None or not self.running():
            return None
        path = self.log_path[:-len(".log")] + ".stacks"
        with open(path, "wb") as out:
            try:
                subprocess.run([gdb, "-p", str(self.proc.pid), "-batch", "-nx",
                                "-ex", "thread apply all bt"],
                               stdin=subprocess.DEVNULL, stdout=out,
                               stderr=subprocess.STDOUT, timeout=120,
                               check=False)
            except subprocess.TimeoutExpired:
                return None
        return path

    def tail(self, lines=4):
        return self.output(everything=True).rstrip("\n").split("\n")[-lines:]


class Cluster:
    """2 ps + 2 workers of fashion_mnist on `hosts` (task -> host:port)."""

    def __init__(self, binary, mode, train_steps, workdir, hosts,
                 prefixes=None, extra_flags=()):
        """`extra_flags` go to every task after the tool's own."""
        self.workdir = workdir
        self.hosts = hosts
        self.checkpoint_dir = os.path.join(workdir, "checkpoints")
        os.makedirs(self.checkpoint_dir, exist_ok=True)
        ps_hosts = f"{hosts['ps0']},{hosts['ps1']}"
        worker_hosts = f"{hosts['chief']},{hosts['worker1']}"
        # The steps of a round are few: checkpoints and progress lines come
        # often, so that a restart loses little and kills land on many steps.
        common = [
            f"--ps_hosts={ps_hosts}", f"--worker_hosts={worker_hosts}",
            "--model=mlp", f"--train_steps={train_steps}",
            "--log_every=10", "--threads=1",
            f"--issync={1 if mode == 'sync' else 0}",
            f"--checkpoint_dir={self.checkpoint_dir}",
            f"--save_checkpoint_steps={max(10, train_steps // 10)}",
        ] + list(extra_flags)
        jobs = {"ps0": ("ps", 0), "ps1": ("ps", 1), "chief": ("worker", 0),
                "worker1": ("worker", 1)}
        prefixes = prefixes or {}
        self.tasks = {}
        for name in TASKS:
            job, index = jobs[name]
            argv = [binary, f"--job_name={job}", f"--task_index={index}"]
            self.tasks[name] = Task(name, argv + common,
                                    os.path.join(workdir, f"{name}.log"),
                                    prefixes.get(name, ()))
        self.t0 = time.monotonic()

    def clock(self):
        return time.monotonic() - self.t0

    def start(self):
        for name in TASKS:
            self.tasks[name].start(self.clock)

    def global_step(self):
        """The last global step a worker's current process printed."""
        return max(self.tasks[n].last_step() for n in ("chief", "worker1"))

    def accuracy(self):
        """The chief's last test_accuracy (any of its processes), or None."""
        found = ACCURACY.findall(self.tasks["chief"].output(everything=True))
        return float(found[-1]) if found else None

    def all_exited(self):
        return all(not t.running() for t in self.tasks.values())

    def failed_tasks(self):
        """Tasks whose current process exited with anything but 0."""
        return [t for t in self.tasks.values()
                if t.exit_code() not in (None, 0)]

    def kill_all(self):
        for task in self.tasks.values():
            task.signal(signal.SIGCONT)
            task.kill()

    def exit_codes(self):
        return " ".join(f"{n}={describe_exit(self.tasks[n].exit_code())}"
                        for n in TASKS)
