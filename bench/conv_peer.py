"""PyTorch peer of bench/conv_bench.cc: forward and backward of the
Fashion-MNIST CNN's convolution and pooling layers, timed the same way.

Usage: OPENBLAS_NUM_THREADS=1 python3 conv_peer.py BATCH THREADS STEPS
Prints one line per memory layout: "<layout> <median wall ms per step>
<mean CPU ms per step>" (CPU time of all threads: robust to a loaded machine).
"""
import sys
import time

import torch
import torch.nn.functional as F


def step(x, w1, w2, g):
    w1.grad = None
    w2.grad = None
    h = F.max_pool2d(F.conv2d(x, w1, padding=2), 2, 2)
    h = F.max_pool2d(F.conv2d(h, w2, padding=2), 2, 2)
    h.backward(g)


def main():
    batch, threads, steps = (int(a) for a in sys.argv[1:4])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    for layout in ("nchw", "channels_last"):
        fmt = (torch.channels_last if layout == "channels_last"
               else torch.contiguous_format)
        x = torch.rand(batch, 1, 28, 28).to(memory_format=fmt)
        w1 = torch.rand(32, 1, 5, 5).to(memory_format=fmt).requires_grad_()
        w2 = torch.rand(64, 32, 5, 5).to(memory_format=fmt).requires_grad_()
        g = torch.rand(batch, 64, 7, 7).to(memory_format=fmt)
        for _ in range(5):
            step(x, w1, w2, g)
        times = []
        cpu_start = time.process_time()
        for _ in range(steps):
            start = time.perf_counter()
            step(x, w1, w2, g)
            times.append(time.perf_counter() - start)
        cpu = (time.process_time() - cpu_start) / steps
        times.sort()
        print(layout, 1000 * times[len(times) // 2], 1000 * cpu)


if __name__ == "__main__":
    main()
