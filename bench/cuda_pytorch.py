#!/usr/bin/env python3
"""PyTorch's side of the GPU benchmarks (bench/cuda_step.py), measured on the same GPU in the same run.

    python3 bench/cuda_pytorch.py --widths 4096,4096,4096,4096 --batch 512 --steps 50

Prints JSON lines: an `env` line, `gemm` lines (torch.matmul at N^3 in bf16 and f16, TFLOP/s from
CUDA events, the mean of --reps after 5 warm-ups) and `step` lines: median ms of one training step
of the MLP bench/gen_mlp.py writes (Linear + ReLU layers, SGD lr 2e-3; by default the AMP recipe's
mean squared error against a random f32 target, --loss cross_entropy for softmax cross-entropy) in
eager fp32, tf32, bf16 autocast, f16 autocast with GradScaler, and torch.compile of the bf16 step.
Each step ends with torch.cuda.synchronize(), as amp-run's steps end with reading their results.
"""
import argparse
import json
import statistics
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


def step_times(widths, batch, steps, mode, loss_name="mse"):
    torch.manual_seed(0)
    model = mlp(widths)
    opt = torch.optim.SGD(model.parameters(), lr=2e-3)
    x = torch.rand(batch, widths[0], device="cuda")
    if loss_name == "mse":
        y = torch.rand(batch, widths[-1], device="cuda")
    else:
        y = torch.randint(0, widths[-1], (batch,), device="cuda")
    loss_fn = F.mse_loss if loss_name == "mse" else F.cross_entropy
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
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    torch.backends.cuda.matmul.allow_tf32 = False
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--widths", default="4096,4096,4096,4096")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--gemm-size", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--modes", default="fp32,tf32,bf16,f16,compile-bf16")
    ap.add_argument("--loss", choices=["mse", "cross_entropy"], default="mse")
    a = ap.parse_args()
    widths = [int(w) for w in a.widths.split(",")]
    print(json.dumps({"kind": "env", "torch": torch.__version__, "gpu": torch.cuda.get_device_name()}), flush=True)
    for name, dtype in (("bf16", torch.bfloat16), ("f16", torch.float16)):
        ms, tflops = gemm(a.gemm_size, dtype, a.reps)
        print(json.dumps({"kind": "gemm", "impl": "torch", "dtype": name, "n": a.gemm_size, "ms": ms,
                          "tflops": tflops}), flush=True)
    for mode in a.modes.split(","):
        try:
            ms = step_times(widths, a.batch, a.steps, mode, a.loss)
            print(json.dumps({"kind": "step", "impl": "torch", "mode": mode, "ms": ms}), flush=True)
        except Exception as e:  # torch.compile needs a working Triton; report, do not stop
            print(json.dumps({"kind": "step", "impl": "torch", "mode": mode, "error": str(e)[:300]}), flush=True)


if __name__ == "__main__":
    main()
