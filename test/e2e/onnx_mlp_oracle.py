#!/usr/bin/env python3
"""PyTorch's side of e2e.onnx_mlp_torch: exports a small MLP to ONNX as a user would, and records
what PyTorch autograd computes on the same weights and batch.

Usage: onnx_mlp_oracle.py WORK_DIR   (needs torch, onnx and numpy: Debian's python3-torch)
Writes WORK_DIR/mlp.onnx, WORK_DIR/batch.npz (image, label) and WORK_DIR/torch.json: the loss and
gradients at the exported weights, the loss of each of STEPS SGD steps, and the params after them.
"""
import sys

import numpy as np
import torch
from torch_sgd import record_sgd

STEPS, LR, BATCH = 3, 0.1, 8


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 32)
        self.fc2 = torch.nn.Linear(32, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))


def main(work):
    torch.manual_seed(0)
    model = MLP()
    g = torch.Generator().manual_seed(1)
    x = torch.rand(BATCH, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (BATCH,), generator=g)
    torch.onnx.export(model, x, work + "/mlp.onnx", opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    np.savez(work + "/batch.npz", image=x.numpy(), label=y.numpy())
    record_sgd(model, lambda m: torch.nn.functional.cross_entropy(m(x), y), STEPS, LR, BATCH, work + "/torch.json")


if __name__ == "__main__":
    main(sys.argv[1])
