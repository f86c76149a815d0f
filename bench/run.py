#!/usr/bin/env python3
"""The benchmark driver: ampc/amp-run against PyTorch on this CPU, measured side by side in one run.

    python3 bench/run.py [--quick] [--threads N] [--models ID,...] [--json FILE]

For every model it runs bench/pytorch_step.py (with --torch-python, default /usr/bin/python3:
Debian's python3-torch) and bench/ampc_step.py's runs back to back, then prints one table:
rows ours cpu f32/bf16/f16, ours reference f32, PyTorch eager fp32, PyTorch autocast bf16;
columns median step ms, speedup vs PyTorch eager fp32, peak memory (ours: the plan's buffers),
followed by the spec's targets as PASS / MISS (N/A: not measurable here, with the reason):

  T1  our cpu f32 step >= 1.5x faster than PyTorch eager fp32
  T2  our cpu bf16 step >= 1.5x faster than PyTorch autocast bf16
  T3  our bf16 peak memory < our f32 peak memory
  T4  CPUs with AVX512-BF16 or AMX-BF16: our cpu bf16 step <= 0.7x our cpu f32 step on the
      1024-wide MLP; CPUs without (AVX2-only): our cpu bf16 step <= 1.1x our cpu f32 step

Then the ampc compile-time benchmark (bench/ampc_compile.py: 1k, 10k, 100k-op models; targets
C1 10k ops compile in < 2 s, C2 linear growth) and, when built, the GEMM benchmark
build/bin/amp-bench-gemm (its JSON printed as a table), followed by

  E1  whole-step efficiency: step FLOPs (ampc's precision report of train_step) / step time /
      the measured GEMM peak of the step's precision, printed for every model; the 1024-wide
      MLP's f32 step needs >= 0.85
  G1  every forward GEMM >= 0.85 of peak where the matching backward (dx) GEMM is

and, for the activation-dominated models (bench/memory_targets.py), M1 bf16 peak <= 0.6x f32 peak
(default flags: ampc --train recomputes with --remat=auto; M1off, information: both compiled
with --remat=off), M3 the bf16 peak with --optimizer-state=bf16 (Adam's moments in bf16) <= 0.6x
the f32 peak, and M2 amp-remat: under --memory-budget the bf16 peak <= 0.5x the unconstrained one at <= 1.35x
the step time, losses bit for bit.

Numbers are medians of one run on a possibly busy machine: the load average is printed with them.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import ampc_step  # noqa: E402
import ampc_compile  # noqa: E402
import memory_targets  # noqa: E402

RELEVANT_FLAGS = ["sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512bw", "avx512vl",
                  "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8",
                  "amx_fp16"]
WIDE_MLP = "mlp_784-1024-1024-10_b256"


def cpu_info():
    flags, model = set(), platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
                elif line.startswith("model name") and model in ("?", "x86_64", ""):
                    model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return model, flags


def fmt_ms(v):
    return "-" if v is None else ("%.3f" % v if v < 100 else "%.1f" % v)


def fmt_mib(b):
    return "-" if b is None else "%.2f MiB" % (b / 2**20)


def table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    return "\n".join(out)


def first_error_line(text):
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    hit = next((l for l in lines if "error:" in l), None)
    if hit:
        return hit.split("error:", 1)[1].strip()
    return lines[-1] if lines else "?"


def verdict(ok, text):
    return ("PASS" if ok else "MISS", text)


# ---------------------------------------------------------------------------------------------
# PyTorch side


def run_pytorch(args, model_id):
    cmd = [args.torch_python, os.path.join(HERE, "pytorch_step.py"), "--models", model_id,
           "--threads", str(args.threads)]
    if args.quick:
        cmd.append("--quick")
    if args.pytorch_steps:
        cmd += ["--steps", str(args.pytorch_steps)]
    if args.torch_blas_threads:
        cmd += ["--blas-threads", str(args.torch_blas_threads)]
    cmd += ["--omp-wait-policy", args.torch_omp_wait_policy]
    p = subprocess.run(cmd, capture_output=True, text=True)
    env, steps, errors = None, {}, []
    for line in p.stdout.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("kind") == "env":
            env = r
        elif r.get("kind") == "step":
            steps[r["mode"]] = r
        elif r.get("kind") == "error":
            errors.append(r["error"])
    if p.returncode != 0:
        errors.append("pytorch_step.py exited %d: %s" % (p.returncode, p.stderr.strip()[-1500:]))
    return env, steps, errors


# ---------------------------------------------------------------------------------------------
# Per-model table and targets


def profile_line(label, profile):
    """amp-run --profile's category split of one run (the summary's "profile"), as one line."""
    cats = [c for c in profile["categories"] if c["ms"] > 0]
    total = sum(c["ms"] for c in cats) or 1.0
    parts = ["%s %.0f%%" % (c["name"], 100.0 * c["ms"] / total) for c in sorted(cats, key=lambda c: -c["ms"])]
    flop = [c for c in cats if c.get("gflop_per_s")]
    rate = ", ".join("%s %.1f GFLOP/s" % (c["name"], c["gflop_per_s"]) for c in flop)
    text = "  profile %s (train_step %.1f ms): %s%s" % (label, profile["call_ms"], ", ".join(parts),
                                                       "; " + rate if rate else "")
    copy = profile.get("copy_gb_per_s")
    moved = [c for c in cats if not c.get("gflop_per_s") and c.get("gb_per_s")]
    if copy and moved:  # the memory-bound categories against the STREAM-like copy (their floor)
        text += "\n    memory (copy %.1f GB/s): %s" % (copy, ", ".join(
            "%s %.1f GB/s = %.2f of copy" % (c["name"], c["gb_per_s"], c["gb_per_s"] / copy)
            for c in sorted(moved, key=lambda c: -c["ms"])))
    return text


def model_report(model_id, ours, torch_steps, has_native_bf16, cpu_ok):
    """(text, [(target id, status, text)])."""
    def get(device, precision):
        return next((r for r in ours if r.get("device") == device and r.get("precision") == precision
                     and r["kind"] == "step"), None)

    pt32 = torch_steps.get("eager_fp32")
    pt16 = torch_steps.get("autocast_bf16")
    base = pt32["median_ms"] if pt32 else None
    rows = []
    order = [("cpu", "f32"), ("cpu", "bf16"), ("cpu", "f16"), ("reference", "f32"), ("reference", "bf16"),
             ("reference", "f16")]
    seen = set()
    for dev, prec in order + [(r.get("device"), r.get("precision")) for r in ours]:
        if (dev, prec) in seen:
            continue
        r = get(dev, prec)
        if r is None and dev == "reference" and prec != "f32":
            continue
        seen.add((dev, prec))
        if r is None:
            err = next((e for e in ours if e.get("device") == dev and e.get("precision") == prec), None)
            if err and err["kind"] == "skip":
                why = "skipped: " + err["reason"]
            elif err:
                why = "error: " + first_error_line(err["error"])[:60]
            else:
                why = "not run" if cpu_ok or dev != "cpu" else "no --device=cpu"
            rows.append(["ours %s %s" % (dev, prec), why, "-", "-", "-"])
            continue
        ms = r["median_ms"]
        rows.append(["ours %s %s" % (dev, prec), fmt_ms(ms), "-", "%.2fx" % (base / ms) if base else "-",
                     fmt_mib(r.get("peak_memory_bytes"))])
    for label, r in (("PyTorch eager fp32", pt32), ("PyTorch autocast bf16", pt16)):
        if r is None:
            rows.append([label, "not run", "-", "-", "-"])
        else:
            rows.append([label, fmt_ms(r["median_ms"]), "%s..%s" % (fmt_ms(r["min_ms"]), fmt_ms(r["max_ms"])),
                         "%.2fx" % (base / r["median_ms"]) if base else "-", "-"])
    text = table(["run", "step ms (median)", "min..max ms", "speedup vs PT fp32", "peak memory (ours)"], rows)
    for prec in ("f32", "bf16", "f16"):
        r = get("cpu", prec)
        if r and r.get("profile"):
            text += "\n" + profile_line("cpu " + prec, r["profile"])

    targets = []
    c32, c16 = get("cpu", "f32"), get("cpu", "bf16")
    no_cpu = "N/A", "no --device=cpu rows (amp-run lacks it or it failed)"
    # T1
    if c32 and pt32:
        s = pt32["median_ms"] / c32["median_ms"]
        targets.append(("T1",) + verdict(s >= 1.5, "cpu f32 %.3f ms vs PyTorch eager fp32 %.3f ms: %.2fx faster (need >= 1.5x)"
                                         % (c32["median_ms"], pt32["median_ms"], s)))
    else:
        targets.append(("T1",) + (no_cpu if not c32 else ("N/A", "PyTorch eager fp32 not measured")))
    # T2
    if c16 and pt16:
        s = pt16["median_ms"] / c16["median_ms"]
        targets.append(("T2",) + verdict(s >= 1.5, "cpu bf16 %.3f ms vs PyTorch autocast bf16 %.3f ms: %.2fx faster (need >= 1.5x)"
                                         % (c16["median_ms"], pt16["median_ms"], s)))
    else:
        targets.append(("T2",) + (no_cpu if not c16 else ("N/A", "PyTorch autocast bf16 not measured")))
    # T3: memory is the plan's buffers, the same on every device; prefer the cpu rows.
    m32 = c32 or get("reference", "f32")
    m16 = c16 or get("reference", "bf16")
    if m32 and m16:
        targets.append(("T3",) + verdict(m16["peak_memory_bytes"] < m32["peak_memory_bytes"],
                                         "bf16 peak %d B (%s) vs f32 peak %d B (%s), bf16/f32 = %.3f [%s rows] (need < 1)"
                                         % (m16["peak_memory_bytes"], fmt_mib(m16["peak_memory_bytes"]),
                                            m32["peak_memory_bytes"], fmt_mib(m32["peak_memory_bytes"]),
                                            m16["peak_memory_bytes"] / m32["peak_memory_bytes"], m16["device"])))
    else:
        targets.append(("T3", "N/A", "no bf16 and f32 runs of ours"))
    # T4
    if has_native_bf16:
        if model_id == WIDE_MLP:
            if c32 and c16:
                q = c16["median_ms"] / c32["median_ms"]
                targets.append(("T4",) + verdict(q <= 0.7, "AVX512-BF16/AMX CPU: cpu bf16 %.3f ms / cpu f32 %.3f ms = %.2f (need <= 0.7)"
                                                 % (c16["median_ms"], c32["median_ms"], q)))
            else:
                targets.append(("T4",) + no_cpu)
    else:
        if c32 and c16:
            q = c16["median_ms"] / c32["median_ms"]
            targets.append(("T4",) + verdict(q <= 1.1, "AVX2-only CPU: cpu bf16 %.3f ms / cpu f32 %.3f ms = %.2f (need <= 1.1)"
                                             % (c16["median_ms"], c32["median_ms"], q)))
        else:
            targets.append(("T4",) + no_cpu)
    return text, targets


# ---------------------------------------------------------------------------------------------
# Whole-step efficiency (E1) and forward against backward GEMMs (G1)


def step_flops(ampc, mlir, precision, model_flags=()):
    """FLOPs of train_step from ampc's precision report (GEMMs, convolutions and elementwise math)."""
    p = subprocess.run([ampc, mlir, "--precision=" + precision, "--emit=precision-report", "--report-json"]
                       + ampc_step.TRAIN_FLAGS + list(model_flags), capture_output=True, text=True)
    if p.returncode != 0:
        return None
    try:
        report = json.loads(p.stdout)
    except ValueError:
        return None
    return next((f["total_flops"] for f in report.get("functions", []) if f.get("name") == "train_step"), None)


def efficiency_report(bindir, workdir, models, gemm_rows, native_bf16, torch_python):
    """(text, [(model, target id, status, text)])."""
    peaks = {r.get("dtype"): r.get("gflops") for r in gemm_rows if r.get("kind") == "peak" and r.get("gflops")}
    rows, targets = [], []
    for model_id, result in models.items():
        try:
            mlir, _ = ampc_step.model_sources(model_id, workdir, torch_python=torch_python)
        except (ValueError, OSError, subprocess.CalledProcessError):
            continue
        for precision in ("f32", "bf16"):
            r = next((x for x in result["ours"] if x["kind"] == "step" and x.get("device") == "cpu"
                      and x.get("precision") == precision), None)
            flops = step_flops(os.path.join(bindir, "ampc"), mlir, precision, ampc_step.model_flags(model_id)) if r else None
            # bf16 runs at the bf16 peak where the CPU has bf16 units; otherwise it is widened to f32.
            peak_dtype = "bf16" if precision == "bf16" and native_bf16 and "bf16" in peaks else "f32"
            peak = peaks.get(peak_dtype)
            if not (r and flops and peak and r.get("median_ms")):
                continue
            gflops = flops / (r["median_ms"] * 1e-3) / 1e9
            eff = gflops / peak
            rows.append([model_id, precision, "%.1f" % (flops / 1e6), fmt_ms(r["median_ms"]), "%.1f" % gflops,
                         "%.1f (%s)" % (peak, peak_dtype), "%.2f" % eff])
            if model_id == WIDE_MLP and precision == "f32":
                targets.append((model_id, "E1") + verdict(eff >= 0.85, "f32 step %.1f MFLOP in %.3f ms = %.1f GFLOP/s, %.2f of "
                                                          "the f32 GEMM peak %.1f (need >= 0.85)"
                                                          % (flops / 1e6, r["median_ms"], gflops, eff, peak)))
    # G1: forward GEMM vs the dx GEMM of the same layer and dtype.
    shapes = {}
    for r in gemm_rows:
        if r.get("kind") == "shape" and r.get("peak_fraction") is not None:
            layer, _, part = str(r.get("gemm")).partition(".")
            shapes[(r.get("model"), r.get("dtype"), layer, part)] = r["peak_fraction"]
    for (model, dtype, layer, part), fwd in sorted(shapes.items()):
        if part != "fwd":
            continue
        dx = shapes.get((model, dtype, layer, "dx"))
        if dx is None or dx < 0.85:
            continue
        targets.append((model, "G1") + verdict(fwd >= 0.85, "%s %s.fwd %.2f of peak, its dx GEMM %.2f (need fwd >= 0.85)"
                                               % (dtype, layer, fwd, dx)))
    text = table(["model", "precision", "step MFLOP", "step ms", "GFLOP/s", "GEMM peak GFLOP/s", "of peak"], rows)
    return text, targets


# ---------------------------------------------------------------------------------------------
# Compile time


def compile_report(results):
    rows, targets = [], []
    by = {}
    for r in results:
        if r["kind"] == "error":
            rows.append([r["ops"], r["stage"], "error: " + first_error_line(r["error"])[:60],
                         "-", "-", "-"])
            continue
        by[(r["stage"], r["ops"])] = r
        rows.append([r["ops"], r["stage"], "%.3f" % r["seconds"], "%.1f" % r["us_per_op"],
                     "%.2f (vs %d)" % (r["growth"], r["growth_vs"]) if "growth" in r else "-",
                     "%.0f MiB" % (r["max_rss_bytes"] / 2**20)])
    text = table(["ops", "stage", "seconds", "us/op", "growth (10x ops)", "max RSS"], rows)
    for stage in ampc_compile.DEFAULT_STAGES:
        r = by.get((stage, 10000))
        if r:
            targets.append(("C1-" + stage,) + verdict(r["seconds"] < 2.0, "10k ops, %s: %.3f s (need < 2 s)" % (stage, r["seconds"])))
        else:
            targets.append(("C1-" + stage, "N/A", "10k-op point not measured"))
        growth = [x for x in results if x["kind"] == "compile" and x["stage"] == stage and "growth" in x
                  and x["growth_vs"] >= 1000]
        if growth:
            worst = max(growth, key=lambda x: x["growth"] / x["ops_ratio"])
            ok = all(x["growth"] <= 1.5 * x["ops_ratio"] for x in growth)
            targets.append(("C2-" + stage,) + verdict(ok, "%s: growth %s (linear = 10 per 10x ops; need <= 15; worst %d->%d ops: %.2f)"
                                                      % (stage, ", ".join("%d->%d: %.2f" % (x["growth_vs"], x["ops"], x["growth"]) for x in growth),
                                                         worst["growth_vs"], worst["ops"], worst["growth"])))
        else:
            targets.append(("C2-" + stage, "N/A", "needs two sizes >= 1k"))
    return text, targets


# ---------------------------------------------------------------------------------------------
# GEMM hook


def gemm_report(bindir, threads):
    exe = os.path.join(bindir, "amp-bench-gemm")
    if not os.access(exe, os.X_OK):
        return "skipped: build/bin/amp-bench-gemm not built", None
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run([exe], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return "amp-bench-gemm exited %d: %s" % (p.returncode, (p.stderr or p.stdout).strip()[-800:]), None
    data = None
    try:
        data = json.loads(p.stdout)
    except ValueError:
        lines = []
        for line in p.stdout.splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                pass
        data = lines or None
    if data is None:
        return "amp-bench-gemm printed no JSON:\n" + p.stdout[-2000:], None
    rows = data
    extra = {}
    if isinstance(data, dict):
        lists = [k for k, v in data.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
        if lists:
            rows = data[lists[0]]
            extra = {k: v for k, v in data.items() if k != lists[0]}
        else:
            rows = [data]
    if not isinstance(rows, list) or not all(isinstance(x, dict) for x in rows):
        return json.dumps(data, indent=2), data

    def gemm_table(rows):
        """amp-bench-gemm's kind-tagged lines: env as a header, peak and shape rows in one table."""
        def num(v, f):
            return "-" if v is None else f % v
        head, table_rows = [], []
        for r in rows:
            kind = r.get("kind")
            if kind == "env":
                head.append("threads %s, cpu features: %s (%s), load average %.2f" % (
                    r.get("threads"), r.get("cpu"), r.get("isa", "?"), os.getloadavg()[0]))
            elif kind in ("peak", "shape"):
                frac = r.get("peak_fraction")
                table_rows.append([r.get("model", "-") if kind == "shape" else "(peak)", r.get("gemm", "peak"), r.get("dtype"),
                                   "%sx%sx%s" % (r.get("m"), r.get("n"), r.get("k")), num(r.get("ms"), "%.3f"),
                                   num(r.get("gflops"), "%.1f"),
                                   "-" if kind == "peak" else "%s of %s" % (num(frac, "%.2f"), r.get("peak_dtype", "?")),
                                   r.get("impl", "")])
            elif kind == "error":
                table_rows.append([r.get("model") or "(peak)", r.get("gemm"), r.get("dtype"), "-", "-", "-", "-",
                                   "error: " + str(r.get("error"))[:80]])
        head.append("M x N x K: C[M,N] = A[M,K] B[K,N]; fwd = x W + bias, dx = dy W^T, dw = x^T dy; ms = median per call; "
                    "f16 runs widened to f32, so it is compared with the f32 peak")
        return "\n".join(head) + "\n" + table(["model", "gemm", "dtype", "MxNxK", "ms", "GFLOP/s", "of peak", "impl"], table_rows)

    if any(r.get("kind") in ("peak", "shape") for r in rows):
        return gemm_table(rows), data
    keys = []
    for r in rows:
        for k in r:
            if k not in keys and not isinstance(r[k], (dict, list)):
                keys.append(k)

    def cell(v):
        return "%.4g" % v if isinstance(v, float) else ("-" if v is None else str(v))

    text = table(keys, [[cell(r.get(k)) for k in keys] for r in rows])
    if extra:
        text = "\n".join("%s: %s" % (k, json.dumps(v)) for k, v in extra.items()) + "\n" + text
    return text, data


# ---------------------------------------------------------------------------------------------


def memory_report(args, tools, steps_for, all_results, summary):
    """M1, M3 and M2 (bench/memory_targets.py) for the activation-dominated models among --models."""
    models = [m for m in args.models.split(",") if m in memory_targets.ACTIVATION_DOMINATED]
    if not models:
        return
    print("\n=== memory of the activation-dominated models (M1: bf16 vs f32 peak; M2: amp-remat under "
          "--memory-budget, bf16) ===")
    for model_id in models:
        result = all_results["models"].setdefault(model_id, {"ours": [], "pytorch": {}, "targets": []})
        targets = []
        m1 = memory_targets.bf16_against_f32(result["ours"])
        targets.append(("M1",) + (m1 if m1 else ("N/A", "no cpu f32 and bf16 runs of ours")))
        try:
            targets.append(("M1off",) + memory_targets.bf16_against_f32_no_remat(
                tools, model_id, result["ours"], steps_for("cpu", model_id), args.ampc_arg, args.torch_python))
        except (ValueError, OSError) as e:
            targets.append(("M1off", "N/A", str(e)[:300]))
        try:
            m3 = memory_targets.compact_state_against_f32(
                tools, model_id, result["ours"], steps_for("cpu", model_id), args.ampc_arg, args.torch_python)
            targets.append(("M3",) + (m3 if m3 else ("N/A", "no cpu f32 run of ours")))
        except (ValueError, OSError) as e:
            targets.append(("M3", "N/A", str(e)[:300]))
        try:
            status, text, details = memory_targets.remat_under_budget(
                tools, model_id, steps_for("cpu", model_id), args.ampc_arg, args.torch_python)
        except (ValueError, OSError) as e:
            status, text, details = "N/A", str(e)[:300], {}
        targets.append(("M2", status, text))
        result["remat"] = details
        for tid, status, msg in targets:
            print("  %-5s %-4s %-26s %s" % (tid, status, model_id, msg))
            summary.append((model_id, tid, status, msg))
            result["targets"].append({"id": tid, "status": status, "text": msg})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="fewer steps (PyTorch 3+10, ours cpu 20 / reference 5) and compile sizes up to 10k ops")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="PyTorch set_num_threads and OMP_NUM_THREADS for amp-run (default: all CPUs)")
    ap.add_argument("--models", default=",".join(ampc_step.DEFAULT_MODELS))
    ap.add_argument("--torch-blas-threads", type=int, default=None,
                    help="PyTorch's OPENBLAS_NUM_THREADS (default: --threads)")
    ap.add_argument("--torch-omp-wait-policy", choices=["default", "passive", "active"], default="default",
                    help="OMP_WAIT_POLICY for PyTorch (default: unset; see bench/README.md)")
    ap.add_argument("--pytorch-steps", type=int, default=None, help="timed PyTorch steps (default 50, --quick 10)")
    ap.add_argument("--max-ops", type=int, default=None, help="largest compile-time model (default 100000, --quick 10000)")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: pytorch, ampc, compile, gemm")
    ap.add_argument("--json", default=None, help="also write every measurement to this JSON file")
    ampc_step.add_common_args(ap)
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    max_ops = args.max_ops if args.max_ops is not None else (10000 if args.quick else 100000)
    all_results = {"models": {}, "targets": []}

    model, flags = cpu_info()
    native_bf16 = bool(flags & {"avx512_bf16", "amx_bf16"})
    print("CPU: %s, %d logical CPUs, load average %s" % (model, os.cpu_count(), " ".join("%.2f" % x for x in os.getloadavg())))
    print("CPU flags: %s" % " ".join(f for f in RELEVANT_FLAGS if f in flags))
    print("native bf16 (avx512_bf16/amx_bf16): %s -> T4 rule: %s" % (
        "yes" if native_bf16 else "no",
        "cpu bf16 step <= 0.7x cpu f32 step on %s" % WIDE_MLP if native_bf16 else "cpu bf16 step <= 1.1x cpu f32 step"))
    print("threads: %d" % args.threads)
    if os.getloadavg()[0] > 0.5:
        print("WARNING: load average %.2f: another process is using the CPU; step times will be noisy "
              "(PyTorch fp32 with OpenBLAS threads especially)" % os.getloadavg()[0])
    all_results["cpu"] = {"model": model, "flags": sorted(f for f in RELEVANT_FLAGS if f in flags), "threads": args.threads}

    workdir = args.workdir or tempfile.mkdtemp(prefix="amp_bench_")
    os.makedirs(workdir, exist_ok=True)
    tools = cpu_ok = runs = None
    if "ampc" not in skip:
        tools = ampc_step.Tools(args.bindir, workdir, args.amp_run_arg, args.threads)
        devices = args.devices.split(",")
        cpu_ok, why = (True, "not requested") if "cpu" not in devices else ampc_step.cpu_device_available(tools)
        runs, notes = ampc_step.plan_runs(devices, args.precisions.split(","), args.reference_precisions.split(","),
                                          cpu_ok, args.cpu_fallback)
        print("amp-run --device=cpu: %s" % ("available" if cpu_ok else "NOT available (%s)" % why))
        for n in notes:
            print("note: " + n)
        all_results["ampc_env"] = {"cpu_device": cpu_ok, "message": why, "runs": runs}
    steps_for = ampc_step.steps_function(args)

    torch_env_printed = False
    summary = []
    for model_id in args.models.split(","):
        torch_steps, ours = {}, []
        if "pytorch" not in skip:
            env, torch_steps, errors = run_pytorch(args, model_id)
            if env and not torch_env_printed:
                torch_env_printed = True
                print("PyTorch %s: BLAS_INFO=%s, BLAS loaded: %s, CPU capability %s, oneDNN %s (mkldnn available: %s), "
                      "%d threads, %d BLAS threads, OMP_WAIT_POLICY %s"
                      % (env["torch"], env["blas_info"], env["blas_runtime"], env["cpu_capability"], env["onednn"],
                         env["mkldnn_available"], env["threads"], env["blas_threads"], env["omp_wait_policy"]))
                all_results["pytorch_env"] = {k: v for k, v in env.items() if k != "config"}
            for e in errors:
                print("PyTorch error (%s): %s" % (model_id, e))
        if tools:
            ours = list(ampc_step.run_model(tools, model_id, runs, steps_for, args.mlp_data, args.ampc_arg,
                                            args.torch_python, args.reference_onnx))
        text, targets = model_report(model_id, ours, torch_steps, native_bf16, cpu_ok)
        steps_note = []
        if torch_steps:
            r = next(iter(torch_steps.values()))
            steps_note.append("PyTorch: median of %d steps after %d warm-up" % (r["steps"], r["warmup"]))
        if ours:
            steps_note.append("ours: amp-run median over " + ", ".join(sorted({"%s %s steps" % (r.get("run_device"), r.get("steps"))
                                                                                for r in ours if r["kind"] == "step"})))
        steps_note.append("load average %.2f" % os.getloadavg()[0])
        print("\n=== %s ===  (%s)" % (model_id, "; ".join(steps_note)))
        print(text)
        for mode, r in sorted(torch_steps.items()):
            if r["min_ms"] > 0 and r["max_ms"] / r["min_ms"] > 3 and r["median_ms"] > 2 * r["min_ms"]:
                print("  note: PyTorch %s is unstable (min %.3f, median %.3f, max %.3f ms): a busy machine or OpenMP/"
                      "OpenBLAS threads spinning against each other; try --threads 1 or --torch-omp-wait-policy=passive"
                      % (mode, r["min_ms"], r["median_ms"], r["max_ms"]))
        for e in ours:
            if e["kind"] == "error":
                print("  error %s %s (%s): %s" % (e.get("device"), e.get("precision"), e.get("stage"),
                                                 "\n    ".join(e["error"].strip()[-600:].splitlines())))
        for tid, status, msg in targets:
            print("  %-4s %-4s %s" % (tid, status, msg))
            summary.append((model_id, tid, status, msg))
        all_results["models"][model_id] = {"ours": ours, "pytorch": torch_steps,
                                           "targets": [{"id": t, "status": s, "text": m} for t, s, m in targets]}

    if tools and cpu_ok:
        memory_report(args, tools, steps_for, all_results, summary)

    if "compile" not in skip:
        sizes = [n for n in (1000, 10000, 100000) if n <= max_ops]
        print("\n=== ampc compile time (bench/gen_chain.py models, fastest of up to 3 runs) ===")
        cdir = tempfile.mkdtemp(prefix="amp_compile_", dir=workdir)
        try:
            results = ampc_compile.run(os.path.join(args.bindir, "ampc"), sizes, ampc_compile.DEFAULT_STAGES, 0, cdir,
                                       emit=lambda s: None)
        finally:
            shutil.rmtree(cdir, ignore_errors=True)
        text, targets = compile_report(results)
        print("plan       = ampc M --emit=plan -o /dev/null\n"
              "train-plan = ampc M --train --precision=bf16 --optimizer=adamw --emit=plan -o /dev/null\n"
              "train      = ampc M --train --precision=bf16 --optimizer=adamw -o M.ampx  (includes the C++ kernel compile)")
        print(text)
        for tid, status, msg in targets:
            print("  %-13s %-4s %s" % (tid, status, msg))
            summary.append(("compile", tid, status, msg))
        all_results["compile"] = results

    if "gemm" not in skip:
        print("\n=== GEMM GFLOP/s vs measured peak (build/bin/amp-bench-gemm) ===")
        text, data = gemm_report(args.bindir, args.threads)
        print(text)
        all_results["gemm"] = data
        gemm_rows = data if isinstance(data, list) else []
        if all_results["models"] and gemm_rows:
            print("\n=== whole-step efficiency (step FLOPs / step time / measured GEMM peak) ===")
            text, targets = efficiency_report(args.bindir, workdir, all_results["models"], gemm_rows, native_bf16,
                                              args.torch_python)
            print(text)
            for model_id, tid, status, msg in targets:
                print("  %-5s %-4s %-26s %s" % (tid, status, model_id, msg))
                summary.append((model_id, tid, status, msg))

    print("\n=== targets ===")
    for model_id, tid, status, msg in summary:
        print("%-4s %-13s %-26s %s" % (status, tid, model_id, msg))
    all_results["targets"] = [{"model": m, "id": t, "status": s, "text": x} for m, t, s, x in summary]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(all_results, f, indent=1)
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
