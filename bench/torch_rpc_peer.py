"""PyTorch RPC peer for bench/ps_step_bench: the same parameter-server steps
with torch.distributed.rpc (TensorPipe), two processes on 127.0.0.1.

Prints one JSON line: {"pull_push_steps_per_sec": ..., "tiny_steps_per_sec": ...}.
Usage: python3 torch_rpc_peer.py PORT STEPS [tcp]

By default TensorPipe picks its fastest transport and channel for two processes
of one host: tensors cross by cross-memory attach (process_vm_readv), as on
distflow's same-host path. With `tcp` it is held to its TCP transport ("uv")
and its basic channel, as between two hosts: the peer of distflow's TCP path.
"""
import json
import os
import sys
import tempfile
import time

import torch
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp

_param = None
_counter = 0


def get_param():
    return _param


def set_param(t):
    global _param
    _param = t


def increment():
    global _counter
    _counter += 1
    return _counter


def run(rank, port, steps, out_path, tcp_only):
    torch.set_num_threads(1)
    extra = {"_transports": ["uv"], "_channels": ["basic"]} if tcp_only else {}
    opts = rpc.TensorPipeRpcBackendOptions(
        init_method=f"tcp://127.0.0.1:{port}", num_worker_threads=4, **extra)
    name = "ps" if rank == 0 else "trainer"
    rpc.init_rpc(name, rank=rank, world_size=2, rpc_backend_options=opts)
    if rank == 1:
        rpc.rpc_sync("ps", set_param, args=(torch.zeros(1 << 20),))
        for _ in range(5):  # warm up
            t = rpc.rpc_sync("ps", get_param)
            rpc.rpc_sync("ps", set_param, args=(t + 1,))
        start = time.perf_counter()
        for _ in range(steps):
            t = rpc.rpc_sync("ps", get_param)
            rpc.rpc_sync("ps", set_param, args=(t + 1,))
        pull_push = steps / (time.perf_counter() - start)
        tiny_steps = steps * 10
        for _ in range(50):
            rpc.rpc_sync("ps", increment)
        start = time.perf_counter()
        for _ in range(tiny_steps):
            rpc.rpc_sync("ps", increment)
        tiny = tiny_steps / (time.perf_counter() - start)
        with open(out_path, "w") as f:
            json.dump({"pull_push_steps_per_sec": pull_push,
                       "tiny_steps_per_sec": tiny}, f)
    rpc.shutdown()


if __name__ == "__main__":
    port, steps = int(sys.argv[1]), int(sys.argv[2])
    tcp_only = len(sys.argv) > 3 and sys.argv[3] == "tcp"
    fd, out_path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    mp.spawn(run, args=(port, steps, out_path, tcp_only), nprocs=2, join=True)
    with open(out_path) as f:
        print(f.read())
    os.unlink(out_path)
