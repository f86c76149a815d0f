#!/usr/bin/env python3
"""PyTorch's exports of transposed convolutions (ONNX ConvTranspose), as decoders, U-Nets and
generators use them: nn.ConvTranspose2d with stride, padding, output_padding, dilation, groups and
bias, and nn.ConvTranspose1d. Each model is exported by torch.onnx.export (opset 15), imported by
ampc and run one f32 step by amp-run; the loss and every gradient (amp-run --entry=grads) must be
PyTorch's within 1e-5 relative. ONNX's forms torch does not write (asymmetric pads, auto_pad,
output_shape) are checked by ONNX's own node tests (import/onnx/scripts/node_conformance.py).

usage: conv_transpose_torch.py WORK_DIR DEVICE AMPC AMP_RUN
"""
import sys

import torch
from torch_parity import check_against_autograd

work, device, ampc, amp_run = sys.argv[1:5]
torch.manual_seed(0)
nn = torch.nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.up1 = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)  # 4 -> 8
        self.up2 = nn.ConvTranspose2d(6, 4, (3, 2), stride=(1, 2), padding=(0, 1), dilation=(2, 1), groups=2)
        self.up3 = nn.ConvTranspose2d(4, 2, 2, stride=2, bias=False)
        self.fc = nn.Linear(2 * 24 * 28, 5)

    def forward(self, x):  # [N, 3, 8, 8]
        h = torch.relu(self.down(x))      # -> 4x4
        h = torch.tanh(self.up1(h))       # -> 8x8
        h = torch.relu(self.up2(h))       # -> 12x14
        h = self.up3(h)                   # -> 24x28
        return self.fc(torch.flatten(h, 1))


class Decoder1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 6, 3, stride=2)
        self.up = nn.ConvTranspose1d(6, 3, 4, stride=3, padding=1, output_padding=2)
        self.fc = nn.Linear(3 * 25, 5)

    def forward(self, x):  # [N, 4, 17]
        h = torch.relu(self.conv(x))      # -> 8
        h = self.up(h)                    # -> 3*7 + 4 - 2 + 2 = 25
        return self.fc(torch.flatten(h, 1))


failed = False
for name, net, shape in (("decoder", Decoder(), (4, 3, 8, 8)), ("decoder1d", Decoder1d(), (3, 4, 17))):
    x, y = torch.randn(*shape), torch.randint(0, 5, (shape[0],))
    failed |= check_against_autograd(work, name, net, x, y, device, ampc, amp_run)
sys.exit(1 if failed else 0)
