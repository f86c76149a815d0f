"""bench/run.py's memory targets for the activation-dominated models (the GPT at T=128, batch 16,
and ResNet-18 at batch 128, both imported from ONNX):

  M1  our bf16 peak <= 0.6x our f32 peak (the model runs of the same bench run, default flags:
      ampc --train recomputes with --remat=auto, at most 2% of the step's FLOPs)
  M1off (information, no verdict) the same with both precisions compiled with --remat=off (every
      saved value kept, as PyTorch autocast keeps them), run here; the text also gives the default
      bf16 step time against this bf16 run's, the price of the default recompute
  M3  the bf16 step compiled with --optimizer-state=bf16 (Adam's moments in bf16) peaks at <= 0.6x
      our f32 peak (the f32 run of this bench run, f32 moments): for ResNet-18, whose peak is
      mostly f32 masters and moments, this is the only way under 0.6.
  M2  amp-remat: the bf16 step compiled with --memory-budget peaks at <= 0.5x the unconstrained
      (--remat=off) bf16 step's peak, at <= 1.35x its step time, with the same losses bit for bit.
      The budget is 0.5x the unconstrained peak less a margin (the budget bounds ampc's estimate; the planner's
      placement gaps and amp-run's scratch come on top). Both bundles run twice, alternating, in
      this run; the faster median of each counts.

When ampc refuses the budget, M2 is a MISS that quotes ampc's reason and says how much of the peak
is persistent (f32 masters, optimizer moments, inputs), which no recompute can free.
"""
import json
import os

import ampc_step

ACTIVATION_DOMINATED = ("onnx_gpt_b16", "onnx_resnet18_b128")
BUDGET_MARGIN = 0.95
ROUNDS = 2


def _verdict(ok, text):
    return ("PASS" if ok else "MISS", text)


def _cpu_run(ours, precision):
    return next((r for r in ours if r.get("kind") == "step" and r.get("device") == "cpu"
                 and r.get("precision") == precision and r.get("peak_memory_bytes")), None)


def bf16_against_f32(ours):
    """M1 as (status, text), or None when the model has no cpu f32 and bf16 runs."""
    f32, bf16 = _cpu_run(ours, "f32"), _cpu_run(ours, "bf16")
    if not (f32 and bf16):
        return None
    ratio, text = _ratio_text(bf16["peak_memory_bytes"], f32["peak_memory_bytes"])
    return _verdict(ratio <= 0.6, text)


def _ratio_text(bf16, f32):
    ratio = bf16 / f32
    return ratio, "bf16 peak %d B / f32 peak %d B = %.3f (need <= 0.6)" % (bf16, f32, ratio)


def bf16_against_f32_no_remat(tools, model_id, ours, steps, ampc_args=(), torch_python="/usr/bin/python3"):
    """M1off as (status, text): M1 with both precisions compiled with --remat=off; INFO, no verdict."""
    mlir, data = ampc_step.model_sources(model_id, tools.workdir, torch_python=torch_python)
    flags = ampc_step.model_flags(model_id) + list(ampc_args) + ["--remat=off"]
    runs = {}
    for precision in ("f32", "bf16"):
        bundle = os.path.join(tools.workdir, "%s_%s_remat_off.ampx" % (model_id, precision))
        p, _, cmd = tools.compile(mlir, bundle, precision, flags)
        if p.returncode != 0:
            return "MISS", "ampc failed: " + " ".join(cmd)
        runs[precision], why = _run(tools, bundle, data, steps, "%s_%s_remat_off" % (model_id, precision))
        if runs[precision] is None:
            return "MISS", why
    ratio, text = _ratio_text(runs["bf16"]["peak_memory_bytes"], runs["f32"]["peak_memory_bytes"])
    text = text.replace(" (need <= 0.6)", "")
    default_bf16 = _cpu_run(ours, "bf16")
    if default_bf16 and default_bf16.get("median_ms"):
        text += "; the default bf16 step %.3f ms is %.2fx this one (%.3f ms)" % (
            default_bf16["median_ms"], default_bf16["median_ms"] / runs["bf16"]["step_time_ms"],
            runs["bf16"]["step_time_ms"])
    return "INFO", "--remat=off on both: " + text


def compact_state_against_f32(tools, model_id, ours, steps, ampc_args=(), torch_python="/usr/bin/python3"):
    """M3 as (status, text), or None when the model has no cpu f32 run of ours."""
    f32 = _cpu_run(ours, "f32")
    if not f32:
        return None
    mlir, data = ampc_step.model_sources(model_id, tools.workdir, torch_python=torch_python)
    bundle = os.path.join(tools.workdir, "%s_bf16_compact_state.ampx" % model_id)
    p, _, cmd = tools.compile(mlir, bundle, "bf16",
                              ampc_step.model_flags(model_id) + list(ampc_args) + ["--optimizer-state=bf16"])
    if p.returncode != 0:
        return "MISS", "ampc failed: " + " ".join(cmd)
    run, why = _run(tools, bundle, data, steps, model_id + "_bf16_compact_state")
    if run is None:
        return "MISS", why
    ratio, text = _ratio_text(run["peak_memory_bytes"], f32["peak_memory_bytes"])
    return _verdict(ratio <= 0.6, "--optimizer-state=bf16: " + text)


def _run(tools, bundle, data, steps, tag):
    summary = os.path.join(tools.workdir, tag + ".json")
    p, _, cmd = tools.train(bundle, "cpu", steps, data, summary)
    if p.returncode != 0:
        return None, "amp-run failed: %s" % ((p.stderr or p.stdout).strip().splitlines() or ["?"])[-1]
    with open(summary) as f:
        return json.load(f), " ".join(cmd)


def remat_under_budget(tools, model_id, steps, ampc_args=(), torch_python="/usr/bin/python3"):
    """M2 as (status, text, details dict)."""
    mlir, data = ampc_step.model_sources(model_id, tools.workdir, torch_python=torch_python)
    flags = ampc_step.model_flags(model_id) + list(ampc_args)
    base_bundle = os.path.join(tools.workdir, model_id + "_bf16_unconstrained.ampx")
    p, _, cmd = tools.compile(mlir, base_bundle, "bf16", flags + ["--remat=off"])
    if p.returncode != 0:
        return "MISS", "ampc failed: " + " ".join(cmd), {}
    base, why = _run(tools, base_bundle, data, steps, model_id + "_remat_base0")
    if base is None:
        return "MISS", why, {}
    peak = base["peak_memory_bytes"]
    budget = int(0.5 * peak * BUDGET_MARGIN)
    budget_bundle = os.path.join(tools.workdir, model_id + "_bf16_budget.ampx")
    p, _, cmd = tools.compile(mlir, budget_bundle, "bf16", flags + ["--memory-budget=%d" % budget])
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).strip().splitlines()
        reason = next((line for line in lines if "error" in line), lines[-1] if lines else "ampc failed")
        persistent = base.get("persistent_bytes")
        share = (" Persistent buffers (f32 masters, optimizer moments, inputs) are %d B = %.2f of the "
                 "unconstrained peak %d B: no recompute frees them." % (persistent, persistent / peak, peak)
                 if persistent else "")
        return "MISS", "--memory-budget=%d (0.5x of %d B less %d%%) refused: %s.%s" % (
            budget, peak, round(100 * (1 - BUDGET_MARGIN)), reason.split("error: ", 1)[-1][:300], share), {
                "budget": budget, "unconstrained_peak": peak}
    runs = {"base": [base], "budget": []}
    for r in range(ROUNDS):
        for kind, bundle in (("budget", budget_bundle), ("base", base_bundle)):
            if kind == "base" and r == 0:
                continue  # measured above
            s, why = _run(tools, bundle, data, steps, "%s_remat_%s%d" % (model_id, kind, r))
            if s is None:
                return "MISS", why, {}
            runs[kind].append(s)
    base_ms = min(s["step_time_ms"] for s in runs["base"])
    budget_ms = min(s["step_time_ms"] for s in runs["budget"])
    budget_peak = max(s["peak_memory_bytes"] for s in runs["budget"])
    same = {s.get("final_loss") for s in runs["base"] + runs["budget"]}
    mem, slow = budget_peak / peak, budget_ms / base_ms
    details = {"budget": budget, "unconstrained_peak": peak, "budget_peak": budget_peak,
               "unconstrained_ms": base_ms, "budget_ms": budget_ms, "final_losses": sorted(map(str, same))}
    text = ("--memory-budget=%d: peak %d B / unconstrained %d B = %.3f (need <= 0.5), step %.3f / %.3f ms = %.2fx "
            "(need <= 1.35x), final loss %s" % (budget, budget_peak, peak, mem, budget_ms, base_ms, slow,
                                                "bit for bit the same" if len(same) == 1 else "DIFFERS: %s" % same))
    status, _ = _verdict(mem <= 0.5 and slow <= 1.35 and len(same) == 1, text)
    return status, text, details
