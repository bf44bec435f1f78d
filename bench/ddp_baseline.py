#!/usr/bin/env python3
"""The same training as the harness, with PyTorch DistributedDataParallel over gloo.

The reference point for bench/compare_ddp.sh: the networks of the harness's iris_mlp and
mnist_cnn (the CNN laid out as in the PyTorch MNIST example), with the same data, sharding,
batch and SGD, written the way a PyTorch user would (DDP, gloo, CPU). Start it under
mpirun, one process per rank:

    mpirun -n 2 python3 bench/ddp_baseline.py --workload mnist_cnn --batch-size 64 \\
        --dataset-size 4096 --epochs 1 --lr 0.05 --threads 1

With --tuned the CNN is laid out as the harness's is and DDP's gradients are views of its buckets;
compare_ddp.sh then also gives it the harness's malloc settings (GLIBC_TUNABLES).

Prints one JSON line on rank 0: samples/s over the timed epochs (barrier to barrier, as the
harness's train_time_s), and the epoch times. Needs Debian's python3-torch (PyTorch 1.13.1, the
same version as libtorch-dev); not used by the tests or CI.
"""
import argparse
import csv
import gzip
import json
import os
import pathlib
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

REPO = pathlib.Path(__file__).resolve().parent.parent


class IrisMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden1 = nn.Linear(4, 30)
        self.hidden2 = nn.Linear(30, 20)
        self.output = nn.Linear(20, 3)

    def forward(self, x):
        return torch.sigmoid(self.output(torch.sigmoid(self.hidden2(torch.sigmoid(self.hidden1(x))))))


class MnistCnn(nn.Module):
    """The PyTorch MNIST example's network without dropout. tuned: laid out as the harness's
    mnist_cnn is (channels-last convolutions, ReLU after the pooling, NHWC flatten)."""

    def __init__(self, tuned=False):
        super().__init__()
        self.tuned = tuned
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)
        if tuned:
            self.conv1.to(memory_format=torch.channels_last)
            self.conv2.to(memory_format=torch.channels_last)

    def forward(self, x):
        if self.tuned:
            y = F.max_pool2d(self.conv2(F.relu(self.conv1(x))), 2)
            y = F.relu(torch.flatten(y.permute(0, 2, 3, 1), 1))
        else:
            y = F.relu(self.conv2(F.relu(self.conv1(x))))
            y = torch.flatten(F.max_pool2d(y, 2), 1)
        return F.log_softmax(self.fc2(F.relu(self.fc1(y))), 1)


def iris_data(dataset_size):
    with open(REPO / "data" / "iris.csv") as f:
        rows = list(csv.reader(f))[1:]
    species = sorted({r[4] for r in rows})
    x = torch.tensor([[float(v) for v in r[:4]] for r in rows])
    y = torch.tensor([species.index(r[4]) for r in rows])
    x = (x - x.mean(0)) / x.std(0)
    n = min(dataset_size or 120, 120)
    targets = F.one_hot(y, 3).float()
    return x[:n], targets[:n]


def idx_images(path, count):
    with gzip.open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[4:8], "big")
    count = min(count or n, n)
    pixels = np.frombuffer(data, dtype=np.uint8, count=count * 784, offset=16)
    return torch.from_numpy(pixels.astype(np.float32).reshape(count, 1, 28, 28) / 255.0)


def idx_labels(path, count):
    with gzip.open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[4:8], "big")
    count = min(count or n, n)
    return torch.from_numpy(np.frombuffer(data, dtype=np.uint8, count=count, offset=8).astype(np.int64))


def mnist_data(dataset_size, directory):
    x = idx_images(os.path.join(directory, "train-images-idx3-ubyte.gz"), dataset_size)
    y = idx_labels(os.path.join(directory, "train-labels-idx1-ubyte.gz"), dataset_size)
    return (x - x.mean()) / x.std(), y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=["iris_mlp", "mnist_cnn"], required=True)
    parser.add_argument("--batch-size", type=int, required=True, help="per rank")
    parser.add_argument("--dataset-size", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--tuned", action="store_true",
                        help="the harness's CNN layout and DDP's gradient_as_bucket_view")
    args = parser.parse_args()

    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)

    torch.manual_seed(args.seed)
    if args.workload == "iris_mlp":
        x, y = iris_data(args.dataset_size)
        model, loss_fn = IrisMlp(), F.mse_loss
    else:
        x, y = mnist_data(args.dataset_size, args.data)
        model, loss_fn = MnistCnn(args.tuned), F.nll_loss
    ddp = nn.parallel.DistributedDataParallel(model, gradient_as_bucket_view=args.tuned)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr)

    global_batch = args.batch_size * world
    steps = x.shape[0] // global_batch
    generator = torch.Generator().manual_seed(args.seed)
    epoch_times = []
    for _ in range(args.epochs):
        order = torch.randperm(x.shape[0], generator=generator)
        dist.barrier()
        start = time.perf_counter()
        for step in range(steps):
            first = step * global_batch + rank * args.batch_size
            index = order[first:first + args.batch_size]
            optimizer.zero_grad(set_to_none=False)
            loss = loss_fn(ddp(x[index]), y[index])
            loss.backward()
            optimizer.step()
        dist.barrier()
        epoch_times.append(time.perf_counter() - start)
    if rank == 0:
        samples = steps * global_batch * args.epochs
        print(json.dumps({"framework": "pytorch-ddp-gloo", "torch": torch.__version__,
                          "workload": args.workload, "tuned": args.tuned,
                          "ranks": world, "threads": args.threads,
                          "batch_size": args.batch_size, "samples": samples,
                          "epoch_s": epoch_times, "samples_per_s": samples / sum(epoch_times)}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
