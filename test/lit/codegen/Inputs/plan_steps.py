#!/usr/bin/env python3
"""Prints each step of one entry of an `ampc --emit=plan` plan (stdin) on one line, for FileCheck:
    OP KIND ATTRS(compact JSON, sorted) : OPERAND TYPES -> RESULT TYPES
with a type written as DTYPE[DIMS]; a fused step's body follows, one op a line, indented, over its
locals (%N). Locations and the memory layout are left out: a line is what the compiler hands the
runtime for that op.

    plan_steps.py [ENTRY]      (default: eval)
"""
import json
import sys


def type_of(buffers, index):
    b = buffers[index]
    return "%s[%s]" % (b["dtype"], "x".join(str(d) for d in b["shape"]))


def main():
    entry_name = sys.argv[1] if len(sys.argv) > 1 else "eval"
    plan = json.load(sys.stdin)
    buffers = plan["buffers"]
    entry = next(e for e in plan["entries"] if e["name"] == entry_name)
    for step in entry["steps"]:
        attrs = json.dumps(step.get("attrs", {}), sort_keys=True, separators=(",", ":"))
        operands = ", ".join(type_of(buffers, i) for i in step["operands"])
        results = ", ".join(type_of(buffers, i) for i in step["results"])
        print("%s %s %s : %s -> %s" % (step["op"], step["kind"], attrs, operands, results))
        local_types = ["%s[%s]" % (l["dtype"], "x".join(str(d) for d in l["shape"])) for l in step.get("locals", [])]
        for op in step.get("body", []):
            body_attrs = json.dumps(op.get("attrs", {}), sort_keys=True, separators=(",", ":"))
            ins = ", ".join("%%%d" % i for i in op["operands"])
            outs = ", ".join("%%%d:%s" % (i, local_types[i]) for i in op["results"])
            print("  %s = %s %s %s" % (outs, op["op"], body_attrs, ins))
        if "yields" in step:
            print("  yield %s" % ", ".join("%%%d" % i for i in step["yields"]))


if __name__ == "__main__":
    main()
