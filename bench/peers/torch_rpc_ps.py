"""PyTorch RPC parameter-server peer for bench/dist_train_bench: the
Fashion-MNIST MLP (784-256-128-10) trained by one ps process and several
trainer processes on 127.0.0.1 with torch.distributed.rpc (TensorPipe).

The ps process owns the parameters and the Adam optimizer. Every step, each
trainer pulls all parameters, computes the gradients of its batch locally and
pushes them. Asynchronous mode applies each push at once; synchronous mode
averages one push from every trainer, applies the mean, and only then answers
the trainers' pushes.

Prints one JSON line: {"examples_per_sec": total, "per_trainer": [...]}, the
total being the sum of the trainers' rates over their measured steps.
Run with Debian's /usr/bin/python3 and OPENBLAS_NUM_THREADS=1 (its torch does
matrix products in OpenBLAS, which ignores torch.set_num_threads).

Usage: torch_rpc_ps.py --port P [--trainers 2] [--sync] [--steps 300]
"""
import argparse
import json
import os
import tempfile
import threading
import time

import torch
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp
import torch.nn.functional as F

from torch_train import Mlp, load_images, load_labels

DATA_DIR = "/usr/share/datasets/fashion-mnist"
BATCHES = 50  # the same 50 batches as the distflow side, cycled


class ParameterServer:
    """The parameters and Adam; the RPC handlers below call into it."""

    def __init__(self, trainers, lr):
        self.model = Mlp()
        self.params = list(self.model.parameters())
        self.opt = torch.optim.Adam(self.params, lr=lr)
        self.trainers = trainers
        self.lock = threading.Lock()
        self.grad_sum = None
        self.arrived = 0
        self.step_done = torch.futures.Future()

    def pull(self):
        # Copies: the optimizer updates the parameters in place while a reply
        # may still be on its way.
        with self.lock:
            return [p.detach().clone() for p in self.params]

    def apply(self, grads):
        for p, g in zip(self.params, grads):
            p.grad = g
        self.opt.step()

    def push_async(self, grads):
        with self.lock:
            self.apply(grads)

    def push_sync(self, grads):
        with self.lock:
            if self.grad_sum is None:
                self.grad_sum = [g.clone() for g in grads]
            else:
                for s, g in zip(self.grad_sum, grads):
                    s.add_(g)
            self.arrived += 1
            done = self.step_done
            if self.arrived == self.trainers:
                self.apply([s / self.trainers for s in self.grad_sum])
                self.grad_sum, self.arrived = None, 0
                self.step_done = torch.futures.Future()
                done.set_result(None)
        return done


_ps = None


def pull():
    return _ps.pull()


def push_async(grads):
    _ps.push_async(grads)


@rpc.functions.async_execution
def push_sync(grads):
    return _ps.push_sync(grads)


def train(rank, args, out_path):
    n = args.batch_size * BATCHES
    images = load_images(f"{DATA_DIR}/train-images-idx3-ubyte.gz", n)
    labels = load_labels(f"{DATA_DIR}/train-labels-idx1-ubyte.gz", n)
    model = Mlp()
    params = list(model.parameters())
    push = push_sync if args.sync else push_async
    # Trainers start at different batches, as if each read its own shard.
    offset = (rank - 1) * BATCHES // args.trainers

    def step(i):
        b = (offset + i) % BATCHES * args.batch_size
        x, y = images[b:b + args.batch_size], labels[b:b + args.batch_size]
        latest = rpc.rpc_sync("ps", pull)
        with torch.no_grad():
            for p, v in zip(params, latest):
                p.copy_(v)
        model.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        rpc.rpc_sync("ps", push, args=([p.grad for p in params],))

    for i in range(args.warmup):
        step(i)
    start = time.perf_counter()
    for i in range(args.steps):
        step(args.warmup + i)
    rate = args.steps * args.batch_size / (time.perf_counter() - start)
    with open(f"{out_path}.{rank}", "w") as f:
        f.write(str(rate))


def run(rank, args, out_path):
    global _ps
    torch.set_num_threads(1)
    torch.manual_seed(0)
    opts = rpc.TensorPipeRpcBackendOptions(
        init_method=f"tcp://127.0.0.1:{args.port}",
        num_worker_threads=args.rpc_threads)
    if rank == 0:
        _ps = ParameterServer(args.trainers, args.learning_rate)
    name = "ps" if rank == 0 else f"trainer{rank}"
    rpc.init_rpc(name, rank=rank, world_size=args.trainers + 1,
                 rpc_backend_options=opts)
    if rank > 0:
        train(rank, args, out_path)
    rpc.shutdown()  # waits for every process


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--trainers", type=int, default=2)
    p.add_argument("--sync", action="store_true")
    p.add_argument("--batch_size", type=int, default=100)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--learning_rate", type=float, default=0.001)
    p.add_argument("--rpc_threads", type=int, default=4)
    args = p.parse_args()
    fd, out_path = tempfile.mkstemp(suffix=".rates")
    os.close(fd)
    try:
        mp.spawn(run, args=(args, out_path), nprocs=args.trainers + 1,
                 join=True)
        rates = []
        for rank in range(1, args.trainers + 1):
            with open(f"{out_path}.{rank}") as f:
                rates.append(float(f.read()))
            os.unlink(f"{out_path}.{rank}")
    finally:
        os.unlink(out_path)
    print(json.dumps({"examples_per_sec": sum(rates), "per_trainer": rates}))


if __name__ == "__main__":
    main()
