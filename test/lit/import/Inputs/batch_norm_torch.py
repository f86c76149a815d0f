#!/usr/bin/env python3
"""A Conv-BatchNorm-ReLU model with a residual add, exported by torch.onnx.export in training mode
(opset 15, training_mode=1) as a user would, imported by ampc and trained one f32 step by amp-run;
compared with what PyTorch computes on the same weights and batch in train mode: the loss and
every gradient (amp-run --entry=grads) and the running statistics after the step (the checkpoint),
each within 1e-5 relative (issue 26, 4a). The running statistics start away from their defaults,
so the check sees momentum and the unbiased variance, not just the batch statistics.

usage: batch_norm_torch.py WORK_DIR DEVICE AMPC AMP_RUN
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import torch

work, device, ampc, amp_run = sys.argv[1:5]
torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 4, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(4)
        self.conv2 = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        h = torch.relu(self.bn2(self.conv2(h)) + h)
        return self.fc(torch.flatten(h, 1))


net = Net()
with torch.no_grad():
    for bn in (net.bn1, net.bn2):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.2, 0.2)
x, y = torch.randn(8, 1, 6, 6), torch.randint(0, 10, (8,))
path = lambda name: os.path.join(work, name)
torch.onnx.export(net, x, path("net.onnx"), opset_version=15, training=torch.onnx.TrainingMode.TRAINING,
                  input_names=["image"], output_names=["logits"], do_constant_folding=False)
np.save(path("image.npy"), x.numpy())
np.save(path("label.npy"), y.numpy())
net.train()
loss = torch.nn.functional.cross_entropy(net(x), y)
loss.backward()

feeds = ["--input", "image=" + path("image.npy"), "--input", "label=" + path("label.npy")]
subprocess.run([ampc, path("net.onnx"), "--loss=cross_entropy:logits", "--train", "--precision=f32", "-o",
                path("net.ampx")], check=True)
subprocess.run([amp_run, path("net.ampx"), "--device=" + device, "--entry=train_step", "--checkpoint=" + work] + feeds,
               check=True, stdout=subprocess.DEVNULL)
subprocess.run([amp_run, path("net.ampx"), "--device=" + device, "--entry=grads", "--output=" + path("g.safetensors")]
               + feeds, check=True, stdout=subprocess.DEVNULL)


def load(name):
    data = open(path(name), "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header, body = json.loads(data[8:8 + n]), data[8 + n:]
    return {k: np.frombuffer(body[v["data_offsets"][0]:v["data_offsets"][1]], dtype="<f4").astype(np.float64)
            for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32"}


state, grads = load("checkpoint.safetensors"), load("g.safetensors")
checks = [("loss", grads["loss"], np.array([loss.item()]))]
checks += [(name + ".grad", grads[name + ".grad"], p.grad.numpy().ravel()) for name, p in net.named_parameters()]
checks += [(name, state[name], v.numpy().ravel()) for name, v in net.state_dict().items() if "running" in name]
failed = False
for name, got, want in checks:
    err = np.max(np.abs(got - want)) / np.max(np.abs(want))
    failed |= not err < 1e-5
    print(f"{'ok' if err < 1e-5 else 'FAIL'} {name} rel error {err:.1e}")
sys.exit(1 if failed else 0)
