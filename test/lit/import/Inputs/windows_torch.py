#!/usr/bin/env python3
"""PyTorch's own exports of the window layers ampc maps onto its 2-D ops: Conv1d, MaxPool1d and
AvgPool1d (rank-3 inputs), MaxPool2d with ceil_mode=True as GoogLeNet and SqueezeNet use it
(a last window overhanging the input, with and without padding), and the pooling forms amp's ops
have no attribute for: dilated MaxPool2d/MaxPool1d, AvgPool2d with ceil_mode's overhanging window
and with count_include_pad=False. Each model is exported by
torch.onnx.export (opset 15), imported by ampc and run one f32 step by amp-run; the loss and every
gradient (amp-run --entry=grads) must be PyTorch's within 1e-5 relative.

usage: windows_torch.py WORK_DIR DEVICE AMPC AMP_RUN
"""
import sys

import torch
from torch_parity import check_against_autograd

work, device, ampc, amp_run = sys.argv[1:5]
torch.manual_seed(0)
nn = torch.nn


class OneD(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(3, 4, 3, stride=2, padding=1)
        self.conv2 = nn.Conv1d(4, 4, 2, dilation=2, bias=False)
        self.fc = nn.Linear(4 * 4, 5)

    def forward(self, x):  # [N, 3, 17]
        h = nn.functional.max_pool1d(torch.relu(self.conv1(x)), 2, ceil_mode=True)  # 9 -> 5
        h = nn.functional.avg_pool1d(torch.tanh(self.conv2(h)), 2, stride=1, padding=1)  # 5 -> 3 -> 4
        return self.fc(torch.flatten(h, 1))


class CeilMode(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.fc = nn.Linear(3 * 2 * 2, 5)

    def forward(self, x):  # [N, 2, 10, 10]
        h = torch.relu(self.conv(x))
        h = nn.functional.max_pool2d(h, 3, stride=2, ceil_mode=True)             # 10 -> 5 (floor: 4)
        h = nn.functional.max_pool2d(h, 3, stride=2, padding=1, ceil_mode=True)  # 5 -> 3
        h = nn.functional.max_pool2d(h, 2, stride=2, ceil_mode=True)             # 3 -> 2 (floor: 1)
        return self.fc(torch.flatten(h, 1))


class PoolForms(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.conv1d = nn.Conv1d(3, 2, 1)
        self.fc = nn.Linear(3 * 3 * 3 + 2 * 2, 5)

    def forward(self, x):  # [N, 2, 11, 11]
        f = nn.functional
        h = torch.relu(self.conv(x))
        h = f.max_pool2d(h, 3, stride=1, padding=1, dilation=2)                          # 11 -> 9
        h = f.avg_pool2d(h, 3, stride=2, padding=1, ceil_mode=True)                      # 9 -> 5 (overhang)
        a = f.avg_pool2d(h, 2, stride=2, padding=1, count_include_pad=False)             # 5 -> 3
        b = f.avg_pool2d(h, 2, stride=2, ceil_mode=True, count_include_pad=False)        # 5 -> 3
        c = f.max_pool1d(self.conv1d(h.mean(dim=2)), 2, stride=2, dilation=2, ceil_mode=True)  # 5 -> 2
        return self.fc(torch.cat([torch.flatten(a * b, 1), torch.flatten(c, 1)], 1))


failed = False
for name, net, shape in (("one_d", OneD(), (4, 3, 17)), ("ceil_mode", CeilMode(), (4, 2, 10, 10)),
                         ("pool_forms", PoolForms(), (4, 2, 11, 11))):
    x, y = torch.randn(*shape), torch.randint(0, 5, (shape[0],))
    failed |= check_against_autograd(work, name, net, x, y, device, ampc, amp_run)
sys.exit(1 if failed else 0)
