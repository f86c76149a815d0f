#!/usr/bin/env python3
"""PyTorch's LSTM, GRU and RNN as torch.onnx.export writes them (opset 15, training mode, no
constant folding, so the ONNX graph reorders the gates from the layers' own parameters): a
classifier over a short sequence, each imported by ampc (unrolled at import) and run one f32 step
by amp-run; the loss and every parameter's gradient must be PyTorch's within 1e-5 relative.

usage: recurrent_torch.py WORK_DIR DEVICE AMPC AMP_RUN
"""
import os
import sys

import numpy as np
import torch
from torch_parity import grads, relative_error

work, device, ampc, amp_run = sys.argv[1:5]
torch.manual_seed(0)
nn = torch.nn


class Classifier(nn.Module):
    def __init__(self, cell, **kwargs):
        super().__init__()
        self.rnn = cell(input_size=3, hidden_size=4, **kwargs)
        width = 4 * (2 if kwargs.get("bidirectional") else 1)
        self.fc = nn.Linear(width, 5)

    def forward(self, x):  # [T, B, 3]
        y, _ = self.rnn(x)
        return self.fc(y[-1])


models = (
    ("lstm", Classifier(nn.LSTM)),
    ("lstm_bi_2layer", Classifier(nn.LSTM, num_layers=2, bidirectional=True)),
    ("gru", Classifier(nn.GRU)),
    ("gru_bi", Classifier(nn.GRU, bidirectional=True)),
    ("rnn", Classifier(nn.RNN)),
)
path = lambda name: os.path.join(work, name)
failed = False
for name, net in models:
    x, y = torch.randn(6, 2, 3), torch.randint(0, 5, (2,))
    torch.onnx.export(net, x, path(name + ".onnx"), opset_version=15, input_names=["x"], output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    loss = nn.functional.cross_entropy(net(x), y)
    loss.backward()
    got = grads(work, name, x.numpy(), y.numpy(), device, ampc, amp_run)
    checks = [("loss", got["loss"], np.array([loss.item()]))]
    checks += [(p + ".grad", got.get(p + ".grad"), t.grad.numpy().ravel()) for p, t in net.named_parameters()]
    worst = 0.0
    for what, have, want in checks:
        if have is None:
            print(f"FAIL {name} {what}: not among amp-run's results")
            failed = True
            continue
        # A reverse direction's recurrent weight gets an all-zero gradient when only the last step's
        # output is read (that is its first step, from h0 = 0): compared absolutely then.
        err = relative_error(have, want)
        worst = max(worst, err)
        failed |= not err < 1e-5
        if not err < 1e-5:
            print(f"FAIL {name} {what} rel error {err:.1e}")
    print(f"{'ok' if worst < 1e-5 else 'FAIL'} {name}: loss and {len(checks) - 1} gradients, worst rel error {worst:.1e}")
sys.exit(1 if failed else 0)
