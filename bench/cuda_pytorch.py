#!/usr/bin/env python3
"""PyTorch's side of the GPU benchmarks (bench/cuda_step.py), measured on the same GPU in the same run.

    python3 bench/cuda_pytorch.py --widths 4096,4096,4096,4096 --batch 512 --steps 50

Prints JSON lines: an `env` line, `gemm` lines (torch.matmul at N^3 in bf16 and f16, TFLOP/s from
CUDA events, the mean of --reps after 5 warm-ups) and `step` lines: ms of one training step
of the MLP bench/gen_mlp.py writes (Linear + ReLU layers, SGD lr 2e-3; by default the AMP recipe's
mean squared error against a random f32 target, --loss cross_entropy for softmax cross-entropy), and
of examples/transformer_lm.mlir's model (AdamW lr 3e-3), in eager fp32, tf32, bf16 autocast, f16
autocast with GradScaler, and torch.compile of the bf16 step.
Step times are throughput: the mean over --steps steps run back to back with one
torch.cuda.synchronize() at the end, as amp-run's steps run ahead of the GPU.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F


def gemm(n, dtype, reps):
    a = torch.rand(n, n, device="cuda", dtype=dtype)
    b = torch.rand(n, n, device="cuda", dtype=dtype)
    for _ in range(5):
        torch.matmul(a, b)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        torch.matmul(a, b)
    end.record()
    torch.cuda.synchronize()
    ms = start.elapsed_time(end) / reps
    return ms, 2.0 * n ** 3 / (ms / 1e3) / 1e12


def mlp(widths):
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).cuda()


class TransformerLM(torch.nn.Module):
    """examples/transformer_lm.mlir: one pre-norm GPT block, vocabulary 64, context 32, d_model 64,
    4 heads, MLP 64 -> 256 -> 64 with tanh GELU, final norm, an unbiased head, causal mask -1e9."""

    def __init__(self, vocab=64, context=32, d=64, heads=4, hidden=256):
        super().__init__()
        nn = torch.nn
        self.heads, self.d, self.vocab = heads, d, vocab
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(context, d) * 0.02)
        self.ln1, self.ln2, self.lnf = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.out = nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("causal", torch.tril(torch.ones(context, context, dtype=torch.bool)))

    def forward(self, ids):
        b, t = ids.shape
        h, dh = self.heads, self.d // self.heads
        x = self.tok(ids) + self.pos
        n1 = self.ln1(x)
        q, k, v = (m(n1).view(b, t, h, dh).transpose(1, 2) for m in (self.q, self.k, self.v))
        scores = (q @ k.transpose(-1, -2)) * 0.25
        scores = scores.masked_fill(~self.causal, -1.0e9)
        ctx = scores.softmax(-1) @ v
        x = x + self.out(ctx.transpose(1, 2).reshape(b, t, self.d))
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
        return self.head(self.lnf(x)).reshape(b * t, self.vocab)


def model_and_batch(model_name, widths, batch, loss_name):
    """(model, optimizer, input, target, loss function) of one benchmark model on the GPU."""
    if model_name == "transformer":
        model = TransformerLM().cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        x = torch.randint(0, 64, (8, 32), device="cuda")
        y = torch.randint(0, 64, (8 * 32,), device="cuda")
        return model, opt, x, y, F.cross_entropy
    model = mlp(widths)
    opt = torch.optim.SGD(model.parameters(), lr=2e-3)
    x = torch.rand(batch, widths[0], device="cuda")
    if loss_name == "mse":
        return model, opt, x, torch.rand(batch, widths[-1], device="cuda"), F.mse_loss
    return model, opt, x, torch.randint(0, widths[-1], (batch,), device="cuda"), F.cross_entropy


def step_times(widths, batch, steps, mode, loss_name="mse", model_name="mlp"):
    torch.manual_seed(0)
    model, opt, x, y, loss_fn = model_and_batch(model_name, widths, batch, loss_name)
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    scaler = torch.amp.GradScaler("cuda") if mode == "f16" else None
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "compile-bf16": torch.bfloat16}.get(mode)

    def one():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            loss = loss_fn(model(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss

    fn = torch.compile(one) if mode == "compile-bf16" else one
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    # Training throughput: the steps back to back, one synchronisation at the end (as amp-run's
    # steps run ahead of the GPU and wait only for their logs).
    t = time.perf_counter()
    for _ in range(steps):
        fn()
    torch.cuda.synchronize()
    torch.backends.cuda.matmul.allow_tf32 = False
    return (time.perf_counter() - t) * 1e3 / steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--widths", default="4096,4096,4096,4096")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--gemm-size", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--modes", default="fp32,tf32,bf16,f16,compile-bf16")
    ap.add_argument("--loss", choices=["mse", "cross_entropy"], default="mse")
    ap.add_argument("--models", default="mlp,transformer",
                    help="mlp: the MLP of --widths/--batch/--loss; transformer: examples/transformer_lm.mlir, AdamW")
    a = ap.parse_args()
    widths = [int(w) for w in a.widths.split(",")]
    print(json.dumps({"kind": "env", "torch": torch.__version__, "gpu": torch.cuda.get_device_name()}), flush=True)
    for name, dtype in (("bf16", torch.bfloat16), ("f16", torch.float16)):
        ms, tflops = gemm(a.gemm_size, dtype, a.reps)
        print(json.dumps({"kind": "gemm", "impl": "torch", "dtype": name, "n": a.gemm_size, "ms": ms,
                          "tflops": tflops}), flush=True)
    for model_name in a.models.split(","):
        for mode in a.modes.split(","):
            try:
                ms = step_times(widths, a.batch, a.steps, mode, a.loss, model_name)
                print(json.dumps({"kind": "step", "impl": "torch", "model": model_name, "mode": mode, "ms": ms}),
                      flush=True)
            except Exception as e:  # torch.compile needs a working Triton; report, do not stop
                print(json.dumps({"kind": "step", "impl": "torch", "model": model_name, "mode": mode,
                                  "error": str(e)[:300]}), flush=True)


if __name__ == "__main__":
    main()
