"""PyTorch peer for the training benchmark: the same networks, batch size,
optimizer and thread count as bench/train_bench, on Fashion-MNIST.

Prints one line: `model=<m> batch=<b> threads=<t> examples_per_sec=<x>`.
Run with Debian's /usr/bin/python3 (python3-torch) and OPENBLAS_NUM_THREADS
equal to --threads: Debian's torch does its matrix products in OpenBLAS, which
ignores torch.set_num_threads.
"""
import argparse
import gzip
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def load_images(path, limit):
    with gzip.open(path, "rb") as f:
        data = np.frombuffer(f.read(), dtype=np.uint8, offset=16)
    images = data.reshape(-1, 784)[:limit].astype(np.float32) / 255.0
    return torch.from_numpy(images)


def load_labels(path, limit):
    with gzip.open(path, "rb") as f:
        data = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    return torch.from_numpy(data[:limit].astype(np.int64))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Cnn(nn.Module):
    """Two 5x5 conv + 2x2 max-pool layers (32, 64 filters), dense 1024, dropout."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = nn.Linear(7 * 7 * 64, 1024)
        self.fc2 = nn.Linear(1024, 10)

    def forward(self, x):
        x = x.view(-1, 1, 28, 28)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        x = F.dropout(x, 0.4, self.training)
        return self.fc2(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--batch_size", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--learning_rate", type=float, default=0.001)
    p.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    n = args.batch_size * 50
    images = load_images(f"{args.data_dir}/train-images-idx3-ubyte.gz", n)
    labels = load_labels(f"{args.data_dir}/train-labels-idx1-ubyte.gz", n)
    model = Mlp() if args.model == "mlp" else Cnn()
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
    batches = n // args.batch_size

    def step(i):
        b = i % batches
        x = images[b * args.batch_size:(b + 1) * args.batch_size]
        y = labels[b * args.batch_size:(b + 1) * args.batch_size]
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for i in range(args.warmup):
        step(i)
    start = time.perf_counter()
    for i in range(args.steps):
        step(i)
    elapsed = time.perf_counter() - start
    print(f"model={args.model} batch={args.batch_size} threads={args.threads} "
          f"examples_per_sec={args.steps * args.batch_size / elapsed:.1f}")


if __name__ == "__main__":
    main()
