#!/usr/bin/python3
"""The benchmark's imported models: PyTorch modules that bench/ampc_step.py exports to ONNX for
ampc, and that bench/pytorch_step.py times in PyTorch eager, so both sides run the same module.

    onnx_models.py export MODEL_ID OUT_DIR    writes OUT_DIR/MODEL_ID.onnx and OUT_DIR/MODEL_ID.npz

Models (the ids of bench/run.py):
  onnx_resnet18_b128  torchvision's resnet18(num_classes=10) with a 1-channel stem for 28x28 images
                      (test/e2e/onnx_resnet_oracle.py), batch 128; training-mode BatchNorm
  onnx_gpt_b16        examples/gpt_lm.py's GPT-style LM: 2 pre-norm layers, width 128, 4 heads,
                      sequence 128, a vocabulary of 86; batch 16, cross-entropy over every position

The npz holds 4 batches of synthetic data ("image"/"tokens" and "label"). Exported as a user
would: opset 17, training mode, no constant folding, a symbolic batch dim. Needs torch,
torchvision and onnx (Debian: python3-torch, python3-torchvision, python3-onnx).
"""
import os
import sys
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))

GPT_VOCAB, GPT_WIDTH, GPT_HEADS, GPT_LAYERS, GPT_SEQ = 86, 128, 4, 2, 128

# id: (batch, ONNX input name, ampc flags besides --train/--precision/optimizer)
MODELS = {
    "onnx_resnet18_b128": (128, "image", ["--batch=128", "--loss=cross_entropy:logits"]),
    "onnx_gpt_b16": (16, "tokens", ["--batch=16", "--loss=cross_entropy:logits,label=label"]),
}


def batch(model_id, gen):
    """One batch of synthetic inputs and labels."""
    size = MODELS[model_id][0]
    if model_id == "onnx_resnet18_b128":
        return torch.rand(size, 1, 28, 28, generator=gen), torch.randint(0, 10, (size,), generator=gen)
    return (torch.randint(0, GPT_VOCAB, (size, GPT_SEQ), generator=gen),
            torch.randint(0, GPT_VOCAB, (size, GPT_SEQ), generator=gen))


def build(model_id, gen):
    """(module in training mode, one batch of inputs, its labels)."""
    if model_id == "onnx_resnet18_b128":
        from onnx_resnet_oracle import resnet18
        model = resnet18()
    else:
        from gpt_lm import GptLM
        model = GptLM(GPT_VOCAB, GPT_WIDTH, GPT_HEADS, GPT_LAYERS, GPT_SEQ)
    return (model.train(),) + batch(model_id, gen)


def export(model_id, out):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model, x, y = build(model_id, gen)
    input_name = MODELS[model_id][1]
    os.makedirs(out, exist_ok=True)
    # PyTorch 1.13 warns once per BatchNorm that the export drops num_batches_tracked's update.
    warnings.filterwarnings("ignore", message="ONNX Preprocess - Removing mutation")
    torch.onnx.export(model, x[:2], os.path.join(out, model_id + ".onnx"), opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=[input_name], output_names=["logits"], dynamic_axes={input_name: {0: "batch"}})
    batches = [batch(model_id, gen) for _ in range(3)]
    xs = torch.cat([x] + [b[0] for b in batches]).numpy()
    ys = torch.cat([y] + [b[1] for b in batches]).numpy()
    np.savez(os.path.join(out, model_id + ".npz"), **{input_name: xs, "label": ys})


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "export" or sys.argv[2] not in MODELS:
        sys.exit("usage: onnx_models.py export {%s} OUT_DIR" % ",".join(MODELS))
    export(sys.argv[2], sys.argv[3])
