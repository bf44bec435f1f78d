#!/usr/bin/env python3
"""Makes the TorchScript models shipped in data/models/ (docs/own-model.md).

Run with Debian's interpreter, where python3-torch (1.13.1, the version of libtorch-dev) installs:

    apt-get install -y python3-torch
    /usr/bin/python3 data/models/export_models.py

It writes, beside itself:

- mnist_cnn.pt: the harness's own mnist_cnn network (the PyTorch MNIST example's CNN without
  dropout), as a user would write it in PyTorch: 1 x 28 x 28 in, 10 logits out. The tests train it
  against the built-in CNN from the same weights; bench/compare_own_model.sh measures both.
- mnist_cnn_channels_last.pt: the same network laid out as the built-in mnist_cnn is for the CPU
  (convolution weights stored channels-last, the second ReLU after the pooling, the pooled
  activations flattened in their (h, w, c) memory order): what a TorchScript model costs against
  the built-in one with nothing else different (experiments/own_model_cnn.json).
- fashion_convnet.pt: a small network with what own models commonly have and the built-in ones do
  not: BatchNorm (running statistics are buffers), dropout, a flatten. 1 x 28 x 28 in, 10 out;
  experiments/own_model.json trains it on Fashion-MNIST.

and into tests/fixtures/models/ the archives the refusal tests need:

- newer_version.pt: a scripted nn.Linear(4, 3) whose `version` record claims a format newer than
  any LibTorch reads, as a model saved by a future PyTorch looks to this one.
- state_dict.pt: a state dict saved with torch.save (a PyTorch zip archive without TorchScript
  code), the most common wrong file.

The file must be run as a file (torch.jit.script reads the modules' source). The weights are
PyTorch's default initialisation under torch.manual_seed(0); the archives carry times, so saving
again changes their bytes (and SHA-256), not their tensors.
"""
import io
import pathlib
import zipfile

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = HERE.parent.parent / "tests" / "fixtures" / "models"


class MnistCnn(nn.Module):
    """workloads/mnist_cnn.h's network: conv 3x3 (32), ReLU, conv 3x3 (64), ReLU, max-pool 2,
    fc 9216 -> 128, ReLU, fc 128 -> 10. Logits out; the harness's loss "cross_entropy" applies the
    log-softmax that the built-in CNN ends with."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


class MnistCnnChannelsLast(MnistCnn):
    """MnistCnn as workloads/mnist_cnn.cpp computes it: ReLU and max-pooling commute, so the ReLU
    touches a quarter of the elements after the pooling; flattening the channels-last activations
    in memory order is a view (fc1's columns are only named differently). Export it after
    .to(memory_format=torch.channels_last): the archive keeps the weights' strides, and oneDNN
    then runs both convolutions in NHWC."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = F.relu(self.fc1(torch.flatten(x.permute(0, 2, 3, 1), 1)))
        return self.fc2(x)


class FashionConvNet(nn.Module):
    """Two convolutions with BatchNorm, dropout before the classifier: 46,826 parameters."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 5), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),   # 16 x 12 x 12
            nn.Conv2d(16, 32, 5), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),  # 32 x 4 x 4
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Dropout(0.25), nn.Linear(512, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def export(model: nn.Module, path: pathlib.Path) -> None:
    scripted = torch.jit.script(model)
    scripted.save(str(path))
    parameters = sum(p.numel() for p in model.parameters())
    print(f"{path}: {parameters} parameters, {path.stat().st_size} bytes")


def with_newer_version(model: nn.Module, target: pathlib.Path) -> None:
    """`model` scripted and saved with format version 1000: LibTorch refuses it when it loads it."""
    saved = io.BytesIO()
    torch.jit.save(torch.jit.script(model), saved)
    saved.seek(0)
    buffer = io.BytesIO()
    with zipfile.ZipFile(saved) as archive, zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as copy:
        for entry in archive.infolist():
            data = archive.read(entry)
            if entry.filename.endswith("/version") or entry.filename.endswith("/.data/version"):
                data = b"1000\n"
            copy.writestr(entry, data)
    target.write_bytes(buffer.getvalue())
    print(f"{target}: a scripted {type(model).__name__} claiming format version 1000")


def main() -> None:
    torch.manual_seed(0)
    export(MnistCnn(), HERE / "mnist_cnn.pt")
    torch.manual_seed(0)
    export(MnistCnnChannelsLast().to(memory_format=torch.channels_last), HERE / "mnist_cnn_channels_last.pt")
    torch.manual_seed(0)
    export(FashionConvNet(), HERE / "fashion_convnet.pt")
    FIXTURES.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    with_newer_version(nn.Linear(4, 3), FIXTURES / "newer_version.pt")
    torch.manual_seed(0)
    torch.save(nn.Linear(4, 3).state_dict(), str(FIXTURES / "state_dict.pt"))
    print(f"{FIXTURES / 'state_dict.pt'}: a state dict saved with torch.save")


if __name__ == "__main__":
    main()
