"""Shared fixtures of the Python package's tests: the repository, Fashion-MNIST slices, small
PyTorch models. Run by ctest (python.pytest) with PYTHONPATH=build/python and AMP_BUILD_DIR."""
import gzip
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("AMP_BUILD_DIR", os.path.join(ROOT, "build"))
FASHION = "/usr/share/datasets/fashion-mnist"


def fashion_mnist(split, n):
    """The first n examples of Debian's Fashion-MNIST: f32 [n, 784] in [0, 1], i64 [n]."""
    prefix = "train" if split == "train" else "t10k"
    with gzip.open(f"{FASHION}/{prefix}-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16)[: n * 784]
    with gzip.open(f"{FASHION}/{prefix}-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
    return (images.reshape(n, 784).astype(np.float32) / 255.0), labels.astype(np.int64)


@pytest.fixture(scope="session")
def fmnist():
    if not os.path.isdir(FASHION):
        pytest.skip("dataset-fashion-mnist is not installed")
    return fashion_mnist("train", 2048), fashion_mnist("test", 1000)


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture
def small_cnn(torch):
    """Conv-BN-ReLU-pool-linear: params, batch norm buffers and num_batches_tracked."""
    torch.manual_seed(0)
    nn = torch.nn

    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(4 * 14 * 14, 10)

        def forward(self, x):
            return self.fc(torch.flatten(self.pool(torch.relu(self.bn(self.conv(x)))), 1))

    return SmallCNN()


@pytest.fixture
def mlp(torch):
    torch.manual_seed(0)
    nn = torch.nn
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10))
