#!/usr/bin/env python3
"""PyTorch's side of e2e.onnx_gpt_grads_torch: examples/gpt_lm.py's GPT-style LM (GptLM with the
example's defaults: 2 pre-norm layers, width 128, 4 heads, sequence 128; token and learned position
embeddings, causal mask, exact GELU, final LayerNorm, head) over a vocabulary of 86 (the example's
alphabet size on Debian), exported to ONNX as the example exports it, and what PyTorch autograd
computes on the same weights and batch of random tokens.

Usage: onnx_gpt_oracle.py WORK_DIR   (needs torch, onnx and numpy: Debian's python3-torch)
Writes WORK_DIR/model.onnx, WORK_DIR/batch.npz (tokens, label) and WORK_DIR/torch.json: the loss
and gradients at the exported weights, the loss of each of STEPS SGD steps, and the params after.

Unlike ResNet-18's (onnx_resnet_oracle.py), these f32 results are compared with PyTorch's f32 ones
directly, within 1e-5 of each tensor's largest value: without batch statistics, f32 rounding moves
this model's gradients by about 1e-6 of their largest value (measured), well inside the bound.
"""
import os
import sys

import torch
from torch_sgd import export_and_record_lm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from gpt_lm import GptLM  # noqa: E402

STEPS, LR, BATCH, SEQ, VOCAB, WIDTH, HEADS, LAYERS = 3, 0.1, 2, 128, 86, 128, 4, 2


def main(work):
    torch.manual_seed(0)
    model = GptLM(VOCAB, WIDTH, HEADS, LAYERS, SEQ)
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    label = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    export_and_record_lm(model, tokens, label, VOCAB, STEPS, LR, work)


if __name__ == "__main__":
    main(sys.argv[1])
