#!/usr/bin/env python3
"""Writes hostile ONNX models, one per finding of the importer's hardening (docs/onnx-import.md,
"Hostile input"). None of them passes onnx.checker or was made by an exporter: they are what an
attacker hands ampc.

Usage: make_hostile.py NAME OUT.onnx [ARG]   (NAME is one of MODELS below; ARG as the model says)
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INT64_MAX = 2**63 - 1
INT64_MIN = -2**63


def model(nodes, inputs, outputs, initializers=(), functions=(), extra_opsets=()):
    graph = helper.make_graph(nodes, "hostile", inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", 17)] + [helper.make_opsetid(d, 1) for d in extra_opsets]
    m = helper.make_model(graph, opset_imports=opsets, producer_name="ampc-hostile-tests")
    m.ir_version = 8
    m.functions.extend(functions)
    return m


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def i64(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.INT64, shape)


def lying_tensor(name, dims, raw_bytes=8):
    """A float tensor whose dims promise far more elements than its raw_data holds."""
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    t.raw_data = b"\0" * raw_bytes
    return t


def const_i64(name, values, shape=None):
    arr = np.array(values, dtype=np.int64)
    if shape is not None:
        arr = arr.reshape(shape)
    return helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(arr, name + "_value"))


def initializer_dims(dims):
    """O1/O2: an initializer with dims [D] and 8 bytes of raw_data."""
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [f32("x", [2])], [f32("y", [2])],
                 [lying_tensor("w", dims)])


def constant_dims(dims):
    """O1/O2: a Constant whose value has dims [D] and 8 bytes of raw_data."""
    return model([helper.make_node("Constant", [], ["c"], name="big_constant", value=lying_tensor("c_value", dims)),
                  helper.make_node("Add", ["x", "c"], ["y"], name="add")], [f32("x", [2])], [f32("y", [2])])


def constant_of_shape(shape):
    """O3/O4: ConstantOfShape of a known shape (huge, or negative)."""
    return model([const_i64("shape", shape),
                  helper.make_node("ConstantOfShape", ["shape"], ["y"], name="/fill/ConstantOfShape",
                                   value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]))],
                 [], [f32("y", [None] * len(shape))])


def range_to(limit):
    """O3: Range from 0 to `limit` by 1, all known."""
    return model([const_i64("start", 0, ()), const_i64("limit", limit, ()), const_i64("delta", 1, ()),
                  helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="/arange/Range")],
                 [], [i64("y", [None])])


def where_broadcast(rows=(2**14, 1), cols=(1, 2**14)):
    """O3: Where of known [2^14, 1] and [1, 2^14] values: a 2^28-element result, within the
    per-tensor limit (so shape inference lets it through) but above what ampc folds."""
    return model([const_i64("rows", list(rows)), const_i64("cols", list(cols)),
                  helper.make_node("ConstantOfShape", ["rows"], ["cond"], name="cond",
                                   value=helper.make_tensor("t", TensorProto.BOOL, [1], [True])),
                  helper.make_node("ConstantOfShape", ["cols"], ["x"], name="x",
                                   value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])),
                  helper.make_node("Constant", [], ["zero"], name="zero",
                                   value=helper.make_tensor("z", TensorProto.FLOAT, [], [0.0])),
                  helper.make_node("Where", ["cond", "x", "zero"], ["y"], name="/mask/Where")],
                 [], [f32("y", [None, None])])


def int_binary(op, a, b):
    """O5/W1: Div or Mul of known int64 scalars."""
    return model([const_i64("a", a, ()), const_i64("b", b, ()), helper.make_node(op, ["a", "b"], ["y"], name="/shape/" + op)],
                 [], [i64("y", [])])


def cast_to_int64():
    """W2: Cast of known f32 [NaN, 1e30] to int64."""
    value = numpy_helper.from_array(np.array([np.nan, 1e30], dtype=np.float32), "v")
    return model([helper.make_node("Constant", [], ["c"], name="c", value=value),
                  helper.make_node("Cast", ["c"], ["y"], name="/index/Cast", to=TensorProto.INT64)],
                 [], [i64("y", [2])])


def conv_strides():
    """O6: Conv with strides=[0, 0]."""
    w = numpy_helper.from_array(np.ones((2, 1, 3, 3), dtype=np.float32), "w")
    return model([helper.make_node("Conv", ["x", "w"], ["y"], name="/stem/Conv", kernel_shape=[3, 3], strides=[0, 0])],
                 [f32("x", [1, 1, 5, 5])], [f32("y", [None] * 4)], [w])


def resize_huge():
    """Resize of a [1, 1, 2, 2] input to a known [1, 1, 2, 2^30] (index tables of 2^30 entries)."""
    sizes = numpy_helper.from_array(np.array([1, 1, 2, 2**30], dtype=np.int64), "sizes")
    return model([helper.make_node("Constant", [], ["s"], name="s", value=sizes),
                  helper.make_node("Resize", ["x", "", "", "s"], ["y"], name="/up/Resize", mode="linear")],
                 [f32("x", [1, 1, 2, 2])], [f32("y", [None] * 4)])


def dilated_pool_taps():
    """A dilated MaxPool of 300x300 taps: the slice decomposition would build 180,000 ops."""
    return model([helper.make_node("MaxPool", ["x"], ["y"], name="/pool/MaxPool", kernel_shape=[300, 300],
                                   dilations=[2, 2])],
                 [f32("x", [1, 1, 700, 700])], [f32("y", [None] * 4)])


def conv_transpose_huge():
    """ConvTranspose by strides 2^19 of an 8x8 input: a result of 2^44 elements."""
    w = numpy_helper.from_array(np.ones((1, 1, 3, 3), dtype=np.float32), "w")
    return model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="/up/ConvTranspose", kernel_shape=[3, 3],
                                   strides=[2**19, 2**19])],
                 [f32("x", [1, 1, 8, 8])], [f32("y", [None] * 4)], [w])


def recursive_function(mutual):
    """O7: a model-local function that calls itself (or two that call each other)."""
    def function(name, callee):
        return helper.make_function("local", name, ["x"], ["y"], [helper.make_node(callee, ["x"], ["y"], domain="local")],
                                    [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    functions = [function("Ping", "Pong"), function("Pong", "Ping")] if mutual else [function("Ping", "Ping")]
    return model([helper.make_node("Ping", ["x"], ["y"], name="call", domain="local")], [f32("x", [2])],
                 [f32("y", [2])], functions=functions, extra_opsets=["local"])


def external(location, offset=None, length=None):
    """P1 and external data: an initializer "w" of 4 floats whose data lies at `location`."""
    w = TensorProto()
    w.name = "w"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([4])
    w.data_location = TensorProto.EXTERNAL
    for key, value in [("location", location), ("offset", offset), ("length", length)]:
        if value is not None:
            entry = w.external_data.add()
            entry.key, entry.value = key, str(value)
    return model([helper.make_node("Mul", ["x", "w"], ["y"], name="scale")], [f32("x", [4])], [f32("y", [4])], [w])


def expand_negative():
    """Expand of a computed tensor to a known negative shape."""
    return model([const_i64("shape", [-4]), helper.make_node("Relu", ["x"], ["r"], name="relu"),
                  helper.make_node("Expand", ["r", "shape"], ["y"], name="/grow/Expand")],
                 [f32("x", [1])], [f32("y", [None])])


def pad_int64_min():
    """Pad of a computed tensor by INT64_MIN (a crop whose negation overflows)."""
    return model([const_i64("pads", [INT64_MIN, 0]), helper.make_node("Relu", ["x"], ["r"], name="relu"),
                  helper.make_node("Pad", ["r", "pads"], ["y"], name="/pad/Pad")],
                 [f32("x", [3])], [f32("y", [None])])


def split_overflow():
    """Split sizes whose sum overflows int64 (and wraps to the dim's size)."""
    return model([const_i64("split", [INT64_MAX, INT64_MAX, 4]), helper.make_node("Relu", ["x"], ["r"], name="relu"),
                  helper.make_node("Split", ["r", "split"], ["a", "b", "c"], name="/split/Split", axis=0)],
                 [f32("x", [2])], [f32("a", [None]), f32("b", [None]), f32("c", [None])])


def undefined_output():
    """Found by fuzz-onnx: an opset-6 graph whose output no node defines (libonnx's version
    converter dereferenced the missing definition)."""
    m = model([], [f32("x", [2])], [f32("y", [2])])
    m.opset_import[0].version = 6
    return m


def undefined_input():
    """A node reading a value nothing defines, in an old opset."""
    m = model([helper.make_node("Relu", ["nowhere"], ["y"], name="relu")], [f32("x", [2])], [f32("y", [2])])
    m.opset_import[0].version = 11
    return m


def gemm_flag():
    """Found by fuzz-onnx: an opset-6 Gemm with transB = 2^62 (libonnx's version converter read
    B's dims at [1 - transB])."""
    w = numpy_helper.from_array(np.ones((8, 10), dtype=np.float32), "w")
    m = model([helper.make_node("Gemm", ["x", "w"], ["y"], name="/fc/Gemm", transB=2**62)], [f32("x", [4, 10])],
              [f32("y", [4, 8])], [w])
    m.opset_import[0].version = 6
    return m


def expand_shape_input(length):
    """Found by fuzz-onnx (at [2^40], now refused by the declared-size check first): Expand whose
    shape operand is a graph input declared [length] (libonnx's shape inference built an output of
    that many dims before anything read a value)."""
    return model([helper.make_node("Expand", ["x", "shape"], ["y"], name="/grow/Expand")],
                 [f32("x", [1]), i64("shape", [length])], [f32("y", None)])


def reshape_long_constant():
    """Reshape to a Constant shape of 1024 ones: a rank of 1024 (small enough to seed the fuzzer)."""
    return model([const_i64("shape", [1] * 1024), helper.make_node("Reshape", ["x", "shape"], ["y"], name="/r/Reshape")],
                 [f32("x", [1])], [f32("y", ["n", "m"])])


def gemm_input_2e40():
    """Found by fuzz-onnx: a Gemm whose bias input is declared [2^40] (libonnx asked for 88 TB)."""
    return model([helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="/fc/Gemm")],
                 [f32("a", [3, 7]), f32("b", [7, 3]), f32("c", [2**40])], [f32("y", [3, 3])])


def gemm_opset6_vector():
    """Found by fuzz-onnx: an opset-6 Gemm of rank-1 A and B (ONNX's version converter read past
    their dims and asked for an allocation of garbage size)."""
    m = model([helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="/fc/Gemm")],
              [f32("a", [1]), f32("b", [1]), f32("c", [1])], [f32("y", [1])])
    m.opset_import[0].version = 6
    return m


def layer_norm_statistics(axis, read):
    """Found by fuzz-onnx: LayerNormalization with its Mean and InvStdDev outputs and an axis below
    -rank (libonnx's shape inference built their shapes from it unchecked and read past the dims)."""
    outputs = [f32("Y", [2, 3, 4, 5])] + ([f32("Mean", [1, 1, 1, 1])] if read else [])
    return model([helper.make_node("LayerNormalization", ["X", "W", "B"], ["Y", "Mean", "InvStdDev"],
                                   name="/ln/LayerNormalization", axis=axis)],
                 [f32("X", [2, 3, 4, 5]), f32("W", [5]), f32("B", [5])], outputs)


def conv_rank2_input():
    """Found by fuzz-onnx: a Conv of a rank-2 input with a rank-5 weight (libonnx's
    convPoolShapeInference dereferenced null)."""
    w = numpy_helper.from_array(np.ones((5, 3, 1, 1, 1), dtype=np.float32), "w")
    return model([helper.make_node("Conv", ["x", "w"], ["y"], name="/conv/Conv")], [f32("x", [4, 3])],
                 [f32("y", [2])], [w])


def rank_40_input():
    """A graph input declaring rank 40."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [f32("x", [1] * 40)], [f32("y", None)])


def conv_of_inferred_rank():
    """Found by fuzz-onnx: a Conv whose input's rank only shape inference knows (rank 5, from a
    Relu) with a rank-7 weight (libonnx's convPoolShapeInference read past a vector)."""
    w = numpy_helper.from_array(np.ones((1, 1, 1, 1, 1, 1, 1), dtype=np.float32), "w")
    return model([helper.make_node("Relu", ["x"], ["r"], name="/relu/Relu"),
                  helper.make_node("Conv", ["r", "w"], ["y"], name="/conv/Conv")],
                 [f32("x", [1, 1, 2, 2, 2])], [f32("y", ["n", "c", "d", "h", "w"])], [w])


def pool_of_shape():
    """A MaxPool of a Shape's output: an input whose rank (1) only shape inference knows."""
    return model([helper.make_node("Shape", ["x"], ["s"], name="/shape/Shape"),
                  helper.make_node("Cast", ["s"], ["f"], name="/cast/Cast", to=TensorProto.FLOAT),
                  helper.make_node("MaxPool", ["f"], ["y"], name="/pool/MaxPool", kernel_shape=[1])],
                 [f32("x", [1, 1, 2, 2])], [f32("y", ["n"])])


def expand_to_2e40():
    """An Expand whose inferred output has 2^40 elements, more than the per-tensor limit."""
    return model([const_i64("shape", [2**20, 2**20]), helper.make_node("Expand", ["x", "shape"], ["y"], name="/expand/Expand")],
                 [f32("x", [1])], [f32("y", ["n", "m"])])


def declared_rank_differs():
    """A graph output declared rank 1 that shape inference finds rank 4."""
    return model([helper.make_node("Relu", ["x"], ["r"], name="/relu/Relu"),
                  helper.make_node("Relu", ["r"], ["y"], name="/relu2/Relu")],
                 [f32("x", [1, 1, 2, 2])], [f32("y", [4])])


def trilu_large():
    """Found by fuzz-onnx: a Trilu of a 8192x16384 input (512 MiB, within the per-tensor limit),
    whose 2^27-element mask ampc built on the host uncapped."""
    return model([helper.make_node("Trilu", ["x"], ["y"], name="/mask/Trilu")],
                 [f32("x", [8192, 16384])], [f32("y", [8192, 16384])])


MODELS = {
    "initializer_2e40": lambda: initializer_dims([2**40]),
    "initializer_2e62": lambda: initializer_dims([2**62]),
    "initializer_int64_max": lambda: initializer_dims([INT64_MAX]),
    "initializer_overflow": lambda: initializer_dims([2**32, 2**32, 0]),
    "constant_2e40": lambda: constant_dims([2**40]),
    "constant_int64_max": lambda: constant_dims([INT64_MAX]),
    "constant_of_shape_2e40": lambda: constant_of_shape([2**40]),
    "constant_of_shape_2e14x2e14": lambda: constant_of_shape([2**14, 2**14]),
    "constant_of_shape_negative": lambda: constant_of_shape([-4]),
    "range_1e9": lambda: range_to(10**9),
    "where_broadcast": where_broadcast,
    # fuzz-onnx: x of [1, 2^26], the old fold limit, and its Where took 11 s to compile (ASan: a timeout)
    "where_2e26": lambda: where_broadcast(rows=(1,), cols=(1, 2**26)),
    "div_overflow": lambda: int_binary("Div", INT64_MIN, -1),
    "mul_overflow": lambda: int_binary("Mul", 2**62, 4),
    "cast_nan": cast_to_int64,
    "conv_strides": conv_strides,
    "resize_huge": resize_huge,
    "dilated_pool_taps": dilated_pool_taps,
    "conv_transpose_huge": conv_transpose_huge,
    "function_recursive": lambda: recursive_function(False),
    "function_mutual": lambda: recursive_function(True),
    "expand_negative": expand_negative,
    "pad_int64_min": pad_int64_min,
    "split_overflow": split_overflow,
    "undefined_output": undefined_output,
    "undefined_input": undefined_input,
    "gemm_flag": gemm_flag,
    "expand_shape_2e20": lambda: expand_shape_input(2**20),
    "reshape_1024": reshape_long_constant,
    "rank_40": rank_40_input,
    "gemm_input_2e40": gemm_input_2e40,
    "gemm_opset6_vector": gemm_opset6_vector,
    "conv_rank2_input": conv_rank2_input,
    "layer_norm_axis_int32_min": lambda: layer_norm_statistics(-2**31, False),
    "layer_norm_mean_read": lambda: layer_norm_statistics(-1, True),
    "conv_of_inferred_rank": conv_of_inferred_rank,
    "pool_of_shape": pool_of_shape,
    "expand_to_2e40": expand_to_2e40,
    "declared_rank_differs": declared_rank_differs,
    "trilu_large": trilu_large,
}

if __name__ == "__main__":
    name, out = sys.argv[1], sys.argv[2]
    if name == "external":  # ARG: the location; then optionally offset and length
        m = external(*sys.argv[3:6])
    else:
        m = MODELS[name]()
    with open(out, "wb") as f:
        f.write(m.SerializeToString())
