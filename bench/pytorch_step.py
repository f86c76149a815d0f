#!/usr/bin/python3
"""PyTorch CPU baseline for the ampc training-step benchmark.

Times one training step -- zero_grad + forward + cross-entropy loss + backward + AdamW step --
in eager fp32 and under CPU autocast bf16 (torch.autocast("cpu", dtype=torch.bfloat16) around
forward + loss, backward and the optimizer outside, PyTorch's recipe), on the same fixed
synthetic batch, after a warm-up; reports the median of K steps.

Models (ids shared with bench/ampc_step.py and bench/run.py):
  mlp_784-256-256-10_b128      examples/mlp.mlir
  mlp_784-256-256-10_b256      the same at batch 256
  mlp_784-1024-1024-10_b256    hidden width 1024, batch 256
  transformer_lm               examples/transformer_lm.mlir (B=8, T=32, d=64, 4 heads, MLP 256)
and any `mlp_W0-W1-...-Wn_bB` (ReLU between layers).

Optimizer: torch.optim.AdamW(lr=2e-3) with PyTorch's defaults otherwise (betas (0.9, 0.999),
eps 1e-8, weight_decay 0.01 -- ampc's AdamW defaults are the same). Threads:
torch.set_num_threads(N) (default os.cpu_count()); OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and
MKL_NUM_THREADS are set to N (--blas-threads for the last two) before torch is imported, since
set_num_threads does not reach an OpenBLAS pthread build. In eager fp32 the GEMMs run in
OpenBLAS (Debian links openblas-pthread), under autocast bf16 in oneDNN (OpenMP).

Output: JSON lines on stdout. First {"kind": "env", ...} (torch version, BLAS, ISA, oneDNN,
threads), then one {"kind": "step", "model", "mode": "eager_fp32"|"autocast_bf16",
"median_ms", ...} per model x mode. Human-readable notes go to stderr.

Run with Debian's python3-torch: /usr/bin/python3 bench/pytorch_step.py [--quick].
"""
import argparse
import json
import os
import re
import statistics
import sys
import time

DEFAULT_MODELS = ["mlp_784-256-256-10_b128", "mlp_784-256-256-10_b256", "mlp_784-1024-1024-10_b256",
                  "transformer_lm"]
MODES = ["eager_fp32", "autocast_bf16"]


def parse_mlp_id(model_id):
    m = re.fullmatch(r"mlp_(\d+(?:-\d+)+)_b(\d+)", model_id)
    if not m:
        return None
    return [int(w) for w in m.group(1).split("-")], int(m.group(2))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="comma-separated model ids (default: %(default)s)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated: eager_fp32, autocast_bf16")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch.set_num_threads (default: os.cpu_count())")
    ap.add_argument("--blas-threads", type=int, default=None,
                    help="OPENBLAS_NUM_THREADS / MKL_NUM_THREADS (default: --threads)")
    ap.add_argument("--omp-wait-policy", choices=["default", "passive", "active"], default="default",
                    help="OMP_WAIT_POLICY for PyTorch's OpenMP pool (default: leave unset). With Debian's "
                         "openblas-pthread, OpenMP and OpenBLAS threads spin against each other when all cores "
                         "are used; 'passive' avoids that")
    ap.add_argument("--warmup", type=int, default=None, help="untimed steps first (default 10; onnx_* models 3)")
    ap.add_argument("--steps", type=int, default=None,
                    help="timed steps; the median is reported (default 50; onnx_* models, which take 50-500 ms a "
                         "step, 17)")
    ap.add_argument("--quick", action="store_true", help="--warmup 3 --steps 10")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.quick:
        args.warmup, args.steps = args.warmup or 3, args.steps or 10
    for mid in args.models.split(","):
        if mid != "transformer_lm" and not mid.startswith("onnx_") and parse_mlp_id(mid) is None:
            ap.error("unknown model id %r (transformer_lm, onnx_resnet18_b128, onnx_gpt_b16 or mlp_W0-W1-..._bB)" % mid)
    for mode in args.modes.split(","):
        if mode not in MODES:
            ap.error("unknown mode %r" % mode)
    return args


ARGS = parse_args()
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.blas_threads or ARGS.threads)
if ARGS.omp_wait_policy != "default":
    os.environ["OMP_WAIT_POLICY"] = ARGS.omp_wait_policy.upper()

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    print(json.dumps({"kind": "error", "error": "import torch failed: %s (run with /usr/bin/python3; "
                      "Debian python3-torch)" % e}))
    sys.exit(2)


# ---------------------------------------------------------------------------------------------
# Models


class MLP(nn.Module):
    """examples/mlp.mlir: x @ W + b per layer, ReLU between layers, logits out."""

    def __init__(self, widths):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        for lin in self.layers:  # amp.init<kaiming_uniform> (ReLU gain, fan-in), zero biases
            nn.init.kaiming_uniform_(lin.weight, nonlinearity="relu")
            nn.init.zeros_(lin.bias)

    def forward(self, x):
        for i, lin in enumerate(self.layers):
            x = lin(x)
            if i + 1 < len(self.layers):
                x = F.relu(x)
        return x


class TransformerLM(nn.Module):
    """examples/transformer_lm.mlir, op for op.

    Every amp.linear of the .mlir (weights stored [in, out], transpose_w = false: x @ W (+ b)) is
    an nn.Linear here (stored [out, in], x @ W^T (+ b)): the same product. Linear layers without an amp bias param have
    bias=False (q, k, v, lm_head); attn.out, mlp.fc1, mlp.fc2 have biases. LayerNorm eps 1e-5
    (amp.layer_norm's default) with weight and bias.
    """

    def __init__(self, vocab=64, ctx=32, d=64, heads=4, d_ff=256):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.tok_emb = nn.Embedding(vocab, d)                      # %tok_emb [64, 64]
        self.pos_emb = nn.Parameter(torch.empty(ctx, d))           # %pos_emb [32, 64]
        self.ln1 = nn.LayerNorm(d, eps=1e-5)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.out = nn.Linear(d, d, bias=True)                      # %wo, %bo
        self.ln2 = nn.LayerNorm(d, eps=1e-5)
        self.fc1 = nn.Linear(d, d_ff, bias=True)
        self.fc2 = nn.Linear(d_ff, d, bias=True)
        self.ln_f = nn.LayerNorm(d, eps=1e-5)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        # Causal mask: key_pos <= query_pos (amp.compare le of two iota constants, [T, T]).
        pos = torch.arange(ctx, dtype=torch.float32)
        self.register_buffer("causal", pos.view(1, ctx) <= pos.view(ctx, 1), persistent=False)
        # amp.init: normal(0.02) embeddings, xavier_uniform matmul weights, zero biases, LN 1/0.
        nn.init.normal_(self.tok_emb.weight, std=0.02)
        nn.init.normal_(self.pos_emb, std=0.02)
        for lin in (self.q, self.k, self.v, self.out, self.fc1, self.fc2, self.lm_head):
            nn.init.xavier_uniform_(lin.weight)
            if lin.bias is not None:
                nn.init.zeros_(lin.bias)

    def forward(self, ids):
        B, T = ids.shape
        x0 = self.tok_emb(ids) + self.pos_emb                      # [B, T, D]
        h1 = self.ln1(x0)
        q, k, v = self.q(h1), self.k(h1), self.v(h1)
        qh = q.reshape(B, T, self.heads, self.dh).transpose(1, 2)  # [B, H, T, dh]
        kh = k.reshape(B, T, self.heads, self.dh).transpose(1, 2)
        vh = v.reshape(B, T, self.heads, self.dh).transpose(1, 2)
        scores = torch.matmul(qh, kh.transpose(-2, -1))            # matmul ... transpose_b
        scaled = scores * 0.25                                     # 1/sqrt(16)
        masked = torch.where(self.causal, scaled, torch.tensor(-1.0e9, dtype=scaled.dtype))
        probs = torch.softmax(masked, dim=3)
        ctx = torch.matmul(probs, vh)                              # [B, H, T, dh]
        ctx_m = ctx.transpose(1, 2).reshape(B, T, self.heads * self.dh)
        x1 = x0 + self.out(ctx_m)
        h2 = self.ln2(x1)
        g = F.gelu(self.fc1(h2), approximate="tanh")
        x2 = x1 + self.fc2(g)
        hf = self.ln_f(x2)
        return self.lm_head(hf).reshape(B * T, -1)                 # [B*T, vocab]


def build(model_id, gen):
    """(module, inputs, labels) with a fixed synthetic batch."""
    if model_id.startswith("onnx_"):  # the module bench/ampc_step.py exports for ampc
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import onnx_models
        if model_id not in onnx_models.MODELS:
            raise SystemExit("unknown model id %r (%s)" % (model_id, ", ".join(onnx_models.MODELS)))
        return onnx_models.build(model_id, gen)
    if model_id == "transformer_lm":
        model = TransformerLM()
        ids = torch.randint(0, 64, (8, 32), generator=gen)
        labels = torch.randint(0, 64, (8 * 32,), generator=gen)
        return model, ids, labels
    widths, batch = parse_mlp_id(model_id)
    model = MLP(widths)
    x = torch.rand(batch, widths[0], generator=gen)
    y = torch.randint(0, widths[-1], (batch,), generator=gen)
    return model, x, y


# ---------------------------------------------------------------------------------------------
# Timing


def time_steps(model_id, mode, warmup, steps, seed):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model, x, y = build(model_id, gen)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)

    def step():
        opt.zero_grad()
        # Logits [..., classes] against labels [...]: the mean over every position, as ampc's loss.
        if mode == "autocast_bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(x)
                loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        else:
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    first = float(step())
    for _ in range(max(0, warmup - 1)):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - t0) * 1e3)
    last = float(loss)
    return {
        "kind": "step", "framework": "pytorch", "model": model_id, "mode": mode,
        "median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
        "steps": steps, "warmup": warmup, "threads": torch.get_num_threads(),
        "params": sum(p.numel() for p in model.parameters()),
        "batch": int(x.shape[0]), "first_loss": first, "last_loss": last,
    }


def env_info():
    cfg = torch.__config__.show()
    info = {"kind": "env", "torch": torch.__version__, "threads": torch.get_num_threads(),
            "blas_threads": int(os.environ["OPENBLAS_NUM_THREADS"]),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
            "interop_threads": torch.get_num_interop_threads()}
    m = re.search(r"BLAS_INFO=([^,\s]+)", cfg)
    info["blas_info"] = m.group(1) if m else None
    m = re.search(r"CPU capability usage:\s*(\S+)", cfg)
    info["cpu_capability"] = m.group(1) if m else None
    if hasattr(torch.backends, "cpu") and hasattr(torch.backends.cpu, "get_cpu_capability"):
        info["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    info["aten_cpu_capability_env"] = os.environ.get("ATEN_CPU_CAPABILITY")
    m = re.search(r"MKL-DNN (v[\d.]+)", cfg) or re.search(r"oneDNN (v[\d.]+)", cfg)
    info["onednn"] = m.group(1) if m else None
    info["mkldnn_available"] = torch.backends.mkldnn.is_available()
    info["mkl_available"] = torch.backends.mkl.is_available()
    try:
        info["mkldnn_bf16_supported"] = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except Exception:  # older/newer torch without the op
        info["mkldnn_bf16_supported"] = None
    # Which BLAS is actually loaded: run a GEMM, then look at the mapped shared objects.
    a = torch.rand(64, 64)
    (a @ a).sum()
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                base = os.path.basename(path)
                if re.search(r"blas|lapack|mkl|blis|dnnl|gomp|iomp", base):
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    info["loaded_libs"] = sorted(libs)
    blas = [l for l in libs if re.search(r"openblas|mkl_|blis|libblas", os.path.basename(l))]
    info["blas_runtime"] = ", ".join(sorted(blas)) or "unknown"
    info["config"] = cfg
    return info


def main():
    torch.set_num_threads(ARGS.threads)
    info = env_info()
    print(json.dumps(info), flush=True)
    print("pytorch %s, %d threads, BLAS %s (runtime: %s), CPU capability %s, oneDNN %s (available %s, bf16 %s)"
          % (info["torch"], info["threads"], info["blas_info"], info["blas_runtime"], info["cpu_capability"],
             info["onednn"], info["mkldnn_available"], info["mkldnn_bf16_supported"]), file=sys.stderr)
    for model_id in ARGS.models.split(","):
        for mode in ARGS.modes.split(","):
            heavy = model_id.startswith("onnx_")
            warmup = ARGS.warmup if ARGS.warmup is not None else (3 if heavy else 10)
            steps = ARGS.steps if ARGS.steps is not None else (17 if heavy else 50)
            r = time_steps(model_id, mode, warmup, steps, ARGS.seed)
            print(json.dumps(r), flush=True)
            print("  %-28s %-14s median %8.3f ms (min %.3f, max %.3f, %d steps)"
                  % (model_id, mode, r["median_ms"], r["min_ms"], r["max_ms"], r["steps"]), file=sys.stderr)


if __name__ == "__main__":
    main()
