#!/usr/bin/env python3
"""PyTorch's exports of interpolation, as segmentation and generator heads use it (ONNX Resize):
- "upsample": nearest by whole-number factors, nn.Upsample(scale_factor=2) and
  F.interpolate(scale_factor=(2, 3)) and (size=...) (asymmetric / floor);
- "bilinear": F.interpolate(mode="bilinear") to a size, as torchvision's segmentation models
  return to the input's size (align_corners=False: pytorch_half_pixel), with align_corners=True,
  by scale_factor=2, downsampling, and nearest to a size that is no multiple (7 -> 5, 5 -> 12).
Each model is exported by torch.onnx.export (opset 15), imported by ampc and run one f32 step by
amp-run; the loss and every gradient (amp-run --entry=grads) must be PyTorch's within 1e-5
relative.

usage: resize_torch.py WORK_DIR DEVICE AMPC AMP_RUN
"""
import sys

import torch
from torch_parity import check_against_autograd

work, device, ampc, amp_run = sys.argv[1:5]
torch.manual_seed(0)
nn = torch.nn


class Upsampling(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 3, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.conv2 = nn.Conv2d(3, 2, 3, stride=2)
        self.fc = nn.Linear(2 * 8 * 15, 5)

    def forward(self, x):  # [N, 2, 5, 5]
        h = self.up(torch.relu(self.conv1(x)))                                    # 5 -> 10
        h = nn.functional.interpolate(h, scale_factor=(2, 3), mode="nearest")    # 10x10 -> 20x30
        h = torch.tanh(self.conv2(h))                                            # -> 9x14
        h = nn.functional.interpolate(h, size=(9, 28), mode="nearest")[:, :, 1:, :15]  # -> 8x15
        return self.fc(torch.flatten(h, 1))


class Bilinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 3, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(3, 2, 3, padding=1)
        self.fc = nn.Linear(2 * 12 * 5, 5)

    def forward(self, x):  # [N, 2, 13, 11]
        f = nn.functional
        h = torch.relu(self.conv1(x))                                                   # -> 7x6
        h = f.interpolate(h, size=x.shape[-2:], mode="bilinear", align_corners=False)   # -> 13x11
        h = torch.tanh(self.conv2(h))
        h = f.interpolate(h, size=(9, 4), mode="bilinear", align_corners=True)          # -> 9x4
        h = f.interpolate(h, scale_factor=2, mode="bilinear")                           # -> 18x8
        h = f.interpolate(h, size=(7, 5), mode="bilinear")                              # -> 7x5
        h = f.interpolate(h, size=(5, 5), mode="nearest")                               # -> 5x5
        h = f.interpolate(h, size=(12, 5), mode="nearest")                              # -> 12x5
        return self.fc(torch.flatten(h, 1))


failed = False
for name, net, shape in (("upsample", Upsampling(), (4, 2, 5, 5)), ("bilinear", Bilinear(), (3, 2, 13, 11))):
    x, y = torch.randn(*shape), torch.randint(0, 5, (shape[0],))
    failed |= check_against_autograd(work, name, net, x, y, device, ampc, amp_run)
sys.exit(1 if failed else 0)
