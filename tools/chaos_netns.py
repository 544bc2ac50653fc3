"""Three hosts made of network namespaces, for tools/chaos.py's partition.

Host "p" runs ps 0, host "w" worker 1, host "r" the chief and ps 1. Each host
has its task address on its loopback (10.78.9.1-3/32) and a veth link of its
own to each other host (a triangle, 10.78.{1,2,3}.0/24), with a route to each
peer's task address over the link to that peer. Taking the p-w link down
therefore cuts worker 1 from ps 0 and nothing else: each keeps talking to
the other tasks. Needs root (or CAP_SYS_ADMIN) and iproute2.
"""
import os
import shutil
import signal
import subprocess
import time

PREFIX = "distflow-chaos-"
HOSTS = ("p", "w", "r")
ADDRESS = {"p": "10.78.9.1", "w": "10.78.9.2", "r": "10.78.9.3"}
# Each link's subnet, and its two ends' addresses in that order.
LINKS = {("p", "w"): "10.78.1", ("p", "r"): "10.78.2", ("w", "r"): "10.78.3"}
TASK_HOST = {"ps0": "p", "worker1": "w", "chief": "r", "ps1": "r"}


def find_ip():
    for path in ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"):
        if os.access(path, os.X_OK):
            return path
    return shutil.which("ip")


def _end(host, peer):
    """(device name, address) of `host`'s end of its link to `peer`."""
    pair = (host, peer) if (host, peer) in LINKS else (peer, host)
    subnet = LINKS[pair]
    return f"to{peer}", f"{subnet}.{1 if pair[0] == host else 2}"


class Hosts:
    """The three namespaces; remove() deletes them and what runs in them."""

    def __init__(self):
        self.ip = find_ip()
        self.created = False

    def namespace(self, host):
        return f"{PREFIX}{os.getpid()}-{host}"

    def prefix(self, task):
        """The command prefix that runs `task` on its host."""
        return [self.ip, "netns", "exec", self.namespace(TASK_HOST[task])]

    def _ip(self, *args):
        r = subprocess.run([self.ip, *args], capture_output=True, text=True,
                           timeout=20, check=False)
        return r.returncode, (r.stdout + r.stderr).strip()

    def _must(self, *args):
        code, out = self._ip(*args)
        if code != 0:
            raise RuntimeError(f"ip {' '.join(args)} failed: {out}")

    def create(self):
        """None when the hosts are up; else why the machine cannot have them
        (the caller skips). A setup step that fails otherwise raises."""
        if not self.ip:
            return "iproute2's ip is not installed"
        self.remove_leftovers()
        code, out = self._ip("netns", "add", self.namespace("p"))
        if code != 0:
            return f"cannot create a network namespace (needs root): {out}"
        self.created = True
        for host in HOSTS[1:]:
            self._must("netns", "add", self.namespace(host))
        for host in HOSTS:
            ns = self.namespace(host)
            self._must("-n", ns, "link", "set", "lo", "up")
            self._must("-n", ns, "addr", "add", ADDRESS[host] + "/32",
                       "dev", "lo")
        for (a, b) in LINKS:
            dev_a, addr_a = _end(a, b)
            dev_b, addr_b = _end(b, a)
            code, out = self._ip("link", "add", dev_a, "netns",
                                 self.namespace(a), "type", "veth", "peer",
                                 "name", dev_b, "netns", self.namespace(b))
            if code != 0:
                return f"cannot create veth links: {out}"
            for host, dev, addr in ((a, dev_a, addr_a), (b, dev_b, addr_b)):
                ns = self.namespace(host)
                self._must("-n", ns, "addr", "add", addr + "/24", "dev", dev)
                self._must("-n", ns, "link", "set", dev, "up")
        for host in HOSTS:
            for peer in HOSTS:
                if peer != host:
                    self._route(host, peer)
        return None

    def _route(self, host, peer):
        dev, _ = _end(host, peer)
        _, gateway = _end(peer, host)
        # Just after a link comes up its gateway may not be usable yet.
        for _ in range(50):
            code, out = self._ip("-n", self.namespace(host), "route",
                                 "replace", ADDRESS[peer] + "/32", "via",
                                 gateway, "dev", dev)
            if code == 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"route from {host} to {peer}: {out}")

    def cut(self, a, b):
        """Takes `a`'s end of the a-b link down: `b`'s end loses its carrier,
        so what `b` sends to `a` is dropped without an error, and `a` has no
        route to `b`."""
        self._must("-n", self.namespace(a), "link", "set", _end(a, b)[0],
                   "down")

    def heal(self, a, b):
        """Brings the link up again and restores the routes over it (the
        kernel deleted `a`'s when its end went down)."""
        self._must("-n", self.namespace(a), "link", "set", _end(a, b)[0],
                   "up")
        self._route(a, b)
        self._route(b, a)

    def _remove(self, ns):
        if not os.path.exists(f"/run/netns/{ns}"):
            return
        _, pids = self._ip("netns", "pids", ns)
        for pid in pids.split():
            if pid.isdigit() and int(pid) > 1:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
        self._ip("netns", "del", ns)

    def remove(self):
        if self.ip:
            for host in HOSTS:
                self._remove(self.namespace(host))

    def remove_leftovers(self):
        """Namespaces of runs of this tool that died before cleaning up."""
        try:
            names = os.listdir("/run/netns")
        except OSError:
            return
        for name in names:
            if not name.startswith(PREFIX):
                continue
            pid = name[len(PREFIX):].split("-")[0]
            if not pid.isdigit():
                continue
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                self._remove(name)
            except OSError:
                pass
