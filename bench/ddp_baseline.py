#!/usr/bin/env python3
"""The same training as the harness, with PyTorch DistributedDataParallel.

The reference point for bench/compare_ddp.sh (CPU, gloo) and bench/compare_gpu.sh (one GPU,
NCCL): the networks of the harness's iris_mlp, mnist_cnn (the CNN laid out as in the PyTorch
MNIST example), resnet (torchvision's ResNet-18/50 on synthetic images, as Horovod's
synthetic benchmark) and gpt (a GPT-2 decoder on synthetic token sequences, from the tiny
default to GPT-2 small), with the same data, sharding, batch and SGD, written the way a PyTorch
user would. Start it under mpirun, one process per rank:

    mpirun -n 2 python3 bench/ddp_baseline.py --workload mnist_cnn --batch-size 64 \\
        --dataset-size 4096 --epochs 1 --lr 0.05 --threads 1
    mpirun -n 1 python3 bench/ddp_baseline.py --workload resnet --resnet-depth 50 \\
        --image-size 224 --num-classes 1000 --batch-size 64 --dataset-size 1280 --device cuda
    mpirun -n 2 python3 bench/ddp_baseline.py --workload gpt --batch-size 8 --dataset-size 512 \\
        --epochs 1 --lr 0.5 --threads 1
    mpirun -n 1 python3 bench/ddp_baseline.py --workload gpt --n-layer 12 --n-head 12 \\
        --d-model 768 --seq-len 1024 --vocab 50257 --batch-size 8 --dataset-size 256 --lr 0.1 \\
        --device cuda

With --device cuda the model, the data and the gradients live on the rank's GPU (local rank mod
the visible GPUs, as in the harness), DDP reduces over NCCL, and the clock stops only after the
GPU has finished (torch.cuda.synchronize).

With --tuned the CNN is laid out as the harness's is and DDP's gradients are views of its buckets
(for the other networks only the latter); compare_ddp.sh then also gives it the harness's malloc
settings (GLIBC_TUNABLES).

Prints one JSON line on rank 0: samples/s over the timed epochs (barrier to barrier, as the
harness's train_time_s; gpt's samples are sequences), and the epoch times. Needs PyTorch: on the
CPU Debian's python3-torch (1.13.1, the version of libtorch-dev), on a GPU the PyTorch whose
LibTorch the harness was built against; not used by the tests or CI.
"""
import argparse
import csv
import gzip
import json
import math
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


class Block(nn.Module):
    """A residual block as torchvision's: basic (two 3x3) or bottleneck (1x1, 3x3 with the
    stride, 1x1 four times wider), as the harness's workloads/resnet.cpp builds it."""

    def __init__(self, inputs, width, stride, bottleneck):
        super().__init__()
        outputs = width * 4 if bottleneck else width
        self.bottleneck = bottleneck
        if bottleneck:
            self.conv1 = nn.Conv2d(inputs, width, 1, bias=False)
            self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.conv3 = nn.Conv2d(width, outputs, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(outputs)
        else:
            self.conv1 = nn.Conv2d(inputs, width, 3, stride, 1, bias=False)
            self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.bn2 = nn.BatchNorm2d(width)
        self.downsample = None
        if stride != 1 or inputs != outputs:
            self.downsample = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False),
                                            nn.BatchNorm2d(outputs))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.bottleneck:
            y = self.bn3(self.conv3(F.relu(y)))
        return F.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNet(nn.Module):
    """ResNet-18 or -50 with the ImageNet stem (7x7/2 convolution, 3x3/2 max pooling)."""

    def __init__(self, depth, num_classes):
        super().__init__()
        bottleneck = depth == 50
        blocks = [3, 4, 6, 3] if bottleneck else [2, 2, 2, 2]
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, inputs = [], 64
        for stage, count in enumerate(blocks):
            width = 64 << stage
            for i in range(count):
                layers.append(Block(inputs, width, 2 if stage > 0 and i == 0 else 1, bottleneck))
                inputs = width * 4 if bottleneck else width
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(inputs, num_classes)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        y = F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1)
        return F.log_softmax(self.fc(torch.flatten(y, 1)), 1)


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention over the positions at or before each one, as workloads/gpt.cpp:
    one projection to queries, keys and values, the heads concatenated and projected back."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)

    def forward(self, x):
        batch, length, width = x.shape
        head_width = width // self.heads
        # Explicit, as the harness computes it (and torch 1.13 has no scaled_dot_product_attention).
        q, k, v = self.c_attn(x).view(batch, length, 3, self.heads, head_width).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(head_width)
        # Made here, not held as a buffer as the harness does: gloo cannot broadcast a bool
        # tensor, and DDP broadcasts every buffer.
        future = torch.ones(length, length, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        mixed = torch.softmax(scores, -1) @ v
        return self.c_proj(mixed.transpose(1, 2).reshape(batch, length, width))


class GptBlock(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads)
        self.ln_2 = nn.LayerNorm(width)
        self.c_fc = nn.Linear(width, 4 * width)
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt(nn.Module):
    """GPT-2 as the harness's gpt: pre-LayerNorm blocks, no dropout, the output projection tied
    to the token embedding, GPT-2's initialisation."""

    def __init__(self, n_layer, n_head, d_model, seq_len, vocab):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(seq_len, d_model)
        self.h = nn.ModuleList(GptBlock(d_model, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model)
        with torch.no_grad():
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    nn.init.normal_(module.weight, 0.0, 0.02)
                    nn.init.zeros_(module.bias)
                elif isinstance(module, nn.Embedding):
                    nn.init.normal_(module.weight, 0.0, 0.02)
            # The projections into the residual stream: n_layer of each add up.
            for block in self.h:
                for projection in (block.attn.c_proj, block.c_proj):
                    nn.init.normal_(projection.weight, 0.0, 0.02 / math.sqrt(2 * n_layer))

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()


def next_token_loss(logits, targets):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def synthetic_sequences(dataset_size, seq_len, vocab):
    """dataset_size (256 by default) sequences of seq_len + 1 tokens, the same on every rank, as
    the harness's: a random start, then next = (5 t + 3) mod vocab, or one time in ten a random
    token."""
    count = dataset_size or 256
    sequences = torch.empty(count, seq_len + 1, dtype=torch.int64)
    sequences[:, 0] = torch.randint(0, vocab, (count,))
    for t in range(1, seq_len + 1):
        follows = (sequences[:, t - 1] * 5 + 3) % vocab
        noise = torch.rand(count) < 0.1
        sequences[:, t] = torch.where(noise, torch.randint(0, vocab, (count,)), follows)
    return sequences


def synthetic_data(dataset_size, image_size, num_classes):
    """A fixed set of random images and labels, the same on every rank (Horovod's synthetic
    benchmark); 256 images by default, as the harness's resnet workload."""
    count = dataset_size or 256
    return torch.randn(count, 3, image_size, image_size), torch.randint(0, num_classes, (count,))


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
    parser.add_argument("--workload", choices=["iris_mlp", "mnist_cnn", "resnet", "gpt"], required=True)
    parser.add_argument("--resnet-depth", type=int, choices=[18, 50], default=18)
    parser.add_argument("--image-size", type=int, default=32, help="resnet: synthetic image side")
    parser.add_argument("--num-classes", type=int, default=10, help="resnet: random labels")
    parser.add_argument("--n-layer", type=int, default=2, help="gpt: transformer blocks")
    parser.add_argument("--n-head", type=int, default=2, help="gpt: attention heads per block")
    parser.add_argument("--d-model", type=int, default=64, help="gpt: width")
    parser.add_argument("--seq-len", type=int, default=64, help="gpt: tokens per sequence")
    parser.add_argument("--vocab", type=int, default=256, help="gpt: vocabulary size")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
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
    local_rank = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    on_gpu = args.device == "cuda"
    if on_gpu:
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
    dist.init_process_group("nccl" if on_gpu else "gloo", rank=rank, world_size=world)
    device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")

    torch.manual_seed(args.seed)
    if args.workload == "iris_mlp":
        x, y = iris_data(args.dataset_size)
        model, loss_fn = IrisMlp(), F.mse_loss
    elif args.workload == "mnist_cnn":
        x, y = mnist_data(args.dataset_size, args.data)
        model, loss_fn = MnistCnn(args.tuned), F.nll_loss
    elif args.workload == "gpt":
        sequences = synthetic_sequences(args.dataset_size, args.seq_len, args.vocab)
        x, y = sequences[:, :-1], sequences[:, 1:]
        model = Gpt(args.n_layer, args.n_head, args.d_model, args.seq_len, args.vocab)
        loss_fn = next_token_loss
    else:
        x, y = synthetic_data(args.dataset_size, args.image_size, args.num_classes)
        model, loss_fn = ResNet(args.resnet_depth, args.num_classes), F.nll_loss
    # The whole (small) training set on the device, as the harness holds it: the loop measures
    # the model and the exchange, not a data loader.
    x, y, model = x.to(device), y.to(device), model.to(device)
    ddp = nn.parallel.DistributedDataParallel(model, gradient_as_bucket_view=args.tuned,
                                              device_ids=[device.index] if on_gpu else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr)

    global_batch = args.batch_size * world
    steps = x.shape[0] // global_batch
    generator = torch.Generator().manual_seed(args.seed)
    epoch_times = []
    for _ in range(args.epochs):
        order = torch.randperm(x.shape[0], generator=generator).to(device)
        if on_gpu:
            torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        for step in range(steps):
            first = step * global_batch + rank * args.batch_size
            index = order[first:first + args.batch_size]
            optimizer.zero_grad(set_to_none=False)
            loss = loss_fn(ddp(x[index]), y[index])
            loss.backward()
            optimizer.step()
        if on_gpu:
            torch.cuda.synchronize()
        dist.barrier()
        epoch_times.append(time.perf_counter() - start)
    if rank == 0:
        samples = steps * global_batch * args.epochs
        print(json.dumps({"framework": "pytorch-ddp-" + ("nccl" if on_gpu else "gloo"),
                          "torch": torch.__version__, "device": args.device,
                          "gpu": torch.cuda.get_device_name(device) if on_gpu else "",
                          "workload": args.workload, "tuned": args.tuned,
                          "ranks": world, "threads": args.threads,
                          "batch_size": args.batch_size, "samples": samples,
                          "epoch_s": epoch_times, "samples_per_s": samples / sum(epoch_times)}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
