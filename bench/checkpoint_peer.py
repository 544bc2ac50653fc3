"""PyTorch peer of bench/checkpoint_bench.cc: saves and loads a state dict of
the same float32 tensors, durably (to a temporary name, fsync, rename) as
distflow's Saver does.

Usage: python3 checkpoint_peer.py DIR TENSORS MIB_PER_TENSOR REPEATS
Prints "<median save ms> <median load ms>".
"""
import os
import statistics
import sys
import time

import torch


def main():
    directory = sys.argv[1]
    tensors, mib, repeats = (int(a) for a in sys.argv[2:5])
    torch.manual_seed(0)
    state = {f"layer{i}/kernel": torch.rand(mib * 1024 * 1024 // 4)
             for i in range(tensors)}
    path = os.path.join(directory, "model.pt")
    saves, loads = [], []
    for _ in range(repeats):
        os.sync()  # as the distflow side does: no dirty pages from before
        start = time.perf_counter()
        with open(path + ".tmp", "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.rename(path + ".tmp", path)
        saves.append(time.perf_counter() - start)
        start = time.perf_counter()
        loaded = torch.load(path)
        loads.append(time.perf_counter() - start)
        assert torch.equal(loaded["layer0/kernel"], state["layer0/kernel"])
    print(statistics.median(saves) * 1e3, statistics.median(loads) * 1e3)


if __name__ == "__main__":
    main()
