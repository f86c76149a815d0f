#!/usr/bin/python3
"""Golden plans: the normalised execution plans (ampc --emit=plan) of the examples and of imported
models under the training recipes users compile, checked in, so that a change of the compiler or of
the compiler/runtime contract that is meant to change nothing is shown to change no plan.

    golden_plans.py check  BIN_DIR SOURCE_DIR   compile every case, compare with test/golden/plans/
    golden_plans.py update BIN_DIR SOURCE_DIR   rewrite test/golden/plans/ (review the diff!)

Normalised: stored tensor values (an imported model's weights, constants) become their dtype and
shape, so the files stay small and a change of PyTorch's initialisation changes nothing; locations
become paths relative to the source tree (an exported model's, to its file name). Everything else, buffer ids, step order, attributes,
phases, memory layouts and metadata, is compared exactly. The recipes in STRIPPED are compiled again with
--strip-debuginfo: a plan must not depend on locations. The imported models are exported from
torchvision/PyTorch by bench/onnx_models.py (python3-torch, installed by scripts/test.sh); without
torch those cases are reported and skipped, the others still run.
"""
import difflib
import json
import os
import subprocess
import sys
import tempfile

EXAMPLES = {
    "mlp": "examples/mlp.mlir",
    "transformer_lm": "examples/transformer_lm.mlir",
    "cnn": "bench/models/cnn_bench.mlir",
}
IMPORTED = ("onnx_resnet18_b128", "onnx_gpt_b16")

# (case name, model, ampc flags). The recipes cover each pass of the training pipeline and every
# target's plan: eval only, f32/bf16/fp16, dynamic and static loss scaling, clipping, accumulation,
# SGD/Adam/AdamW with schedules, the fused gradient pipeline, remat under a budget, data-parallel
# with ZeRO-1, and cuda targets (whose plans are built without a GPU).
CASES = [
    ("mlp.eval", "mlp", []),
    ("mlp.f32_sgd", "mlp", ["--train", "--precision=f32", "--optimizer=sgd", "--momentum=0.9", "--nesterov"]),
    ("mlp.bf16_adamw_clip_accum", "mlp", ["--train", "--precision=bf16", "--optimizer=adamw", "--clip-grad-norm=1",
                                          "--accumulate=2", "--schedule=cosine", "--warmup=10", "--total-steps=100"]),
    ("mlp.fp16_dynamic", "mlp", ["--train", "--precision=fp16", "--loss-scale=dynamic", "--growth-interval=100"]),
    ("mlp.fp16_static_fused", "mlp", ["--train", "--precision=fp16", "--loss-scale=static:1024", "--fuse"]),
    ("mlp.fp16_cuda_fused", "mlp", ["--train", "--precision=fp16", "--target=cuda:sm_90", "--fuse",
                                    "--clip-grad-norm=1"]),
    ("mlp.bf16_data_parallel_zero1", "mlp", ["--train", "--precision=bf16", "--data-parallel", "--shard-optimizer",
                                             "--world-size=2"]),
    ("mlp.reference_adam", "mlp", ["--train", "--precision=bf16", "--target=reference", "--optimizer=adam",
                                   "--weight-decay=0.01"]),
    ("transformer_lm.bf16", "transformer_lm", ["--train", "--precision=bf16"]),
    ("transformer_lm.fp16_cuda_fused", "transformer_lm", ["--train", "--precision=fp16", "--target=cuda:sm_90",
                                                          "--fuse", "--accumulate=2"]),
    ("transformer_lm.bf16_budget", "transformer_lm", ["--train", "--precision=bf16", "--memory-budget=1.4m"]),
    ("cnn.bf16", "cnn", ["--train", "--precision=bf16"]),
    ("cnn.fp16_cuda", "cnn", ["--train", "--precision=fp16", "--target=cuda:sm_90", "--fuse"]),
    ("onnx_resnet18_b128.bf16", "onnx_resnet18_b128", ["--train", "--precision=bf16"]),
    ("onnx_gpt_b16.fp16_cuda", "onnx_gpt_b16", ["--train", "--precision=fp16", "--target=cuda:sm_90", "--fuse"]),
    ("onnx_gpt_b16.bf16_budget", "onnx_gpt_b16", ["--train", "--precision=bf16", "--memory-budget=21m"]),
]

# Cases compiled a second time with --strip-debuginfo: without locations the plan must be the golden
# one less its `loc` fields. These recipes put ops after the model's loss (accumulation's window
# mean, the mean over ranks) and recompute in the backward, which later stages must recognise by
# the ops' amp.origin, not by the locations the passes give them.
STRIPPED = ("mlp.bf16_adamw_clip_accum", "mlp.bf16_data_parallel_zero1", "transformer_lm.bf16_budget",
            "onnx_gpt_b16.bf16_budget")

IMPORT_FLAGS = {
    "onnx_resnet18_b128": ["--batch=128", "--loss=cross_entropy:logits"],
    "onnx_gpt_b16": ["--batch=16", "--loss=cross_entropy:logits,label=label"],
}


def normalise(node, source_dir, work):
    """Tensor payloads -> dtype/shape; absolute paths in locations -> relative to the source tree."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in ("data", "values", "bytes") and isinstance(value, (str, list)) and len(json.dumps(value)) > 64:
                out[key] = "<%d bytes of JSON>" % len(json.dumps(value))
            else:
                out[key] = normalise(value, source_dir, work)
        return out
    if isinstance(node, list):
        return [normalise(v, source_dir, work) for v in node]
    if isinstance(node, str):
        return node.replace(source_dir + "/", "").replace(work + "/", "")
    return node


def model_paths(source_dir, work):
    paths = {name: os.path.join(source_dir, rel) for name, rel in EXAMPLES.items()}
    missing = []
    try:
        import torch  # noqa: F401  (only to know whether the imported cases can run)
        have_torch = True
    except ImportError:
        have_torch = False
    for model in IMPORTED:
        if not have_torch:
            missing.append(model)
            continue
        subprocess.run([sys.executable, os.path.join(source_dir, "bench", "onnx_models.py"), "export", model, work],
                       check=True, stdout=subprocess.DEVNULL)
        paths[model] = os.path.join(work, model + ".onnx")
    return paths, missing


def compile_plan(bin_dir, source_dir, work, path, model, flags):
    # A cpu target asks the compiling machine's CPU for its features: pinned, so that the plans do
    # not depend on the machine the test runs on.
    if not any(f.startswith("--target=") for f in flags):
        flags = flags + ["--target=cpu:generic"]
    command = [os.path.join(bin_dir, "ampc"), path, "--emit=plan"] + IMPORT_FLAGS.get(model, []) + flags
    proc = subprocess.run(command, cwd=source_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit("golden_plans: %s failed:\n%s" % (" ".join(command), proc.stderr))
    plan = normalise(json.loads(proc.stdout), source_dir, work)
    return render(without_locations(plan) if "--strip-debuginfo" in flags else plan)


def without_locations(node):
    if isinstance(node, dict):
        return {k: without_locations(v) for k, v in node.items() if k != "loc"}
    if isinstance(node, list):
        return [without_locations(v) for v in node]
    return node


def render(plan):
    """One buffer, step or update a line: small files whose diffs read step by step."""
    lines = ["{"]
    for i, (key, value) in enumerate(plan.items()):
        end = "," if i + 1 < len(plan) else ""
        if key == "buffers":
            lines.append(' "buffers": [')
            lines += ["  " + json.dumps(b) + ("," if j + 1 < len(value) else "") for j, b in enumerate(value)]
            lines.append(" ]" + end)
        elif key == "entries":
            lines.append(' "entries": [')
            for j, entry in enumerate(value):
                lines.append("  {")
                for k, (ekey, evalue) in enumerate(entry.items()):
                    eend = "," if k + 1 < len(entry) else ""
                    if ekey == "steps":
                        lines.append('   "steps": [')
                        lines += ["    " + json.dumps(s) + ("," if m + 1 < len(evalue) else "")
                                  for m, s in enumerate(evalue)]
                        lines.append("   ]" + eend)
                    else:
                        lines.append("   %s: %s%s" % (json.dumps(ekey), json.dumps(evalue), eend))
                lines.append("  }" + ("," if j + 1 < len(value) else ""))
            lines.append(" ]" + end)
        else:
            lines.append(" %s: %s%s" % (json.dumps(key), json.dumps(value), end))
    lines.append("}")
    return "\n".join(lines) + "\n"


def plan_diff(name, expected, text, what):
    diff = difflib.unified_diff(expected.splitlines(), text.splitlines(), "golden/" + name, "now", lineterm="", n=2)
    return "%s: %s:\n%s" % (name, what, "\n".join(list(diff)[:60]))


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("check", "update"):
        raise SystemExit(__doc__)
    mode, bin_dir, source_dir = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    golden_dir = os.path.join(source_dir, "test", "golden", "plans")
    os.makedirs(golden_dir, exist_ok=True)
    failures, skipped = [], []
    with tempfile.TemporaryDirectory() as work:
        paths, missing = model_paths(source_dir, work)
        for name, model, flags in CASES:
            if model in missing:
                skipped.append(name)
                continue
            text = compile_plan(bin_dir, source_dir, work, paths[model], model, flags)
            golden = os.path.join(golden_dir, name + ".json")
            if mode == "update":
                with open(golden, "w") as f:
                    f.write(text)
                continue
            if not os.path.exists(golden):
                failures.append("%s: no golden plan (golden_plans.py update)" % name)
                continue
            with open(golden) as f:
                expected = f.read()
            if expected != text:
                failures.append(plan_diff(name, expected, text, "the plan changed"))
            if name in STRIPPED:
                stripped = compile_plan(bin_dir, source_dir, work, paths[model], model, flags + ["--strip-debuginfo"])
                expected = render(without_locations(json.loads(expected)))
                if expected != stripped:
                    failures.append(plan_diff(name, expected, stripped, "without locations (--strip-debuginfo) the "
                                                                          "plan changed"))
    for s in skipped:
        print("golden_plans: %s skipped (no torch to export the model)" % s)
    for f in failures:
        print("golden_plans: " + f)
    done = len(CASES) - len(skipped)
    stripped = sum(1 for name, model, _ in CASES if name in STRIPPED and model not in missing)
    print("golden_plans: %s %d of %d cases%s%s" % ("wrote" if mode == "update" else "checked", done, len(CASES),
                                                   ", %d of them also without locations" % stripped
                                                   if mode == "check" else "",
                                                   ", %d differ" % len(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
