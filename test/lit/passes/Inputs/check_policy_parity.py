#!/usr/bin/env python3
"""Checks docs/precision-policy.md's per-op table against the dialect and against amp-autocast.

The table must list every listable op of ir/AmpOps.td (all but amp.cast and amp.constant). For
each policy, the annotated IR of Inputs/all-ops.mlir (one instance of every op, named by
loc("<mnemonic>"), in @f32_inputs and @bf16_inputs) must report the table's category in
amp.reason, and a precision consistent with it.
"""
import argparse
import re
import sys

COLUMNS = {"pytorch": 0, "tensorflow-fp16": 2, "tensorflow-bf16": 3}


def doc_table(path):
    rows = {}
    for line in open(path):
        m = re.match(r"\|\s*(amp\.\w+)\s*\|(.*)\|\s*$", line)
        if not m:
            continue
        cells = [c.strip() for c in m.group(2).split("|")]
        rows[m.group(1)] = cells
    return rows


def ods_ops(path, model_only=False):
    """Every op of AmpOps.td, or only the Amp_ModelOp defs of another file (AmpGradOps.td's
    conv2d_grad_input is also a model op: the transposed convolution)."""
    text = open(path).read()
    base = r"Amp_ModelOp" if model_only else r"Amp_\w+"
    ops = set(re.findall(r'^def Amp_\w+\s*:\s*' + base + r'<"(\w+)"', text, re.M))
    return {"amp." + o for o in ops} - {"amp.cast", "amp.constant"}


def annotated(path):
    """-> {(func, loc): (op, precision, policy, category)}"""
    out = {}
    func = None
    for line in open(path):
        m = re.search(r"func\.func @(\w+)", line)
        if m:
            func = m.group(1)
            continue
        m = re.search(r'= (amp\.\w+) .*amp\.precision = "(\w+)", amp\.reason = #amp\.reason<policy, policy = "(\w+)", category = "(\w+)".*loc\("(\w+)"\)', line)
        if m:
            op, prec, policy, cat, loc = m.groups()
            out[(func, loc)] = (op, prec, policy, cat)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doc", required=True)
    ap.add_argument("--ods", required=True)
    ap.add_argument("--ods-model-ops", action="append", default=[],
                    help="another .td file whose Amp_ModelOp defs are listable ops too")
    for p in COLUMNS:
        ap.add_argument("--" + p, required=True)
    args = ap.parse_args()
    errors = []
    table = doc_table(args.doc)
    ods = ods_ops(args.ods)
    for extra in args.ods_model_ops:
        ods |= ods_ops(extra, model_only=True)
    for op in sorted(ods - table.keys()):
        errors.append(f"{op} is in ir/AmpOps.td but not in the docs table")
    for op in sorted(table.keys() - ods):
        errors.append(f"{op} is in the docs table but not in ir/AmpOps.td")
    summary = []
    for policy, col in COLUMNS.items():
        got = annotated(getattr(args, policy.replace("-", "_")))
        for op in sorted(table):
            want = table[op][col]
            for func in ("f32_inputs", "bf16_inputs"):
                key = (func, op[len("amp."):])
                if key not in got:
                    errors.append(f"{policy}: {op} missing from the annotated IR of @{func}")
                    continue
                gop, prec, gpolicy, cat = got[key]
                prec = "low" if prec in ("f16", "bf16") else prec
                if gop != op or gpolicy != policy.split("-")[0] or cat != want:
                    errors.append(f"{policy}: {op} in @{func}: table says '{want}', pass says '{gpolicy} {cat}'")
                    continue
                # Precision consistent with the category (f16 and bf16 count as low; isolated ops).
                low_inputs = func == "bf16_inputs"
                expect = None
                if cat in ("lower_precision_fp", "allow"):
                    expect = "low"
                elif cat in ("fp32", "fp32_set_opt_dtype", "fp32_append_dtype"):
                    expect = "f32"
                elif cat in ("fallthrough", "promote"):
                    expect = "low" if low_inputs else "f32"
                elif cat in ("deny", "unlisted") and not low_inputs:
                    expect = "f32"
                elif low_inputs:  # TF never paints ops the user typed
                    expect = "low"
                if expect and prec != expect:
                    errors.append(f"{policy}: {op} in @{func} ({cat}) runs in {prec}, expected {expect}")
        summary.append(f"{policy} ok")
    if errors:
        for e in errors:
            print("error:", e)
        return 1
    print(f"parity: {len(table)} ops, " + ", ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
