#!/usr/bin/env python3
"""Writes the small ONNX models the import tests read, with onnx's helper API.

Usage: make_model.py NAME OUT.onnx [BATCH.npz]   (NAME is one of MODELS below)
With BATCH.npz: also a batch for amp-run --data: for mlp, "x" and "label"; for composite_ops, "x", "y"
and "target", ONNX's result computed by numpy.
The weights are small deterministic values, so the FileCheck lines can name them.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def weights(name, shape, scale=0.1):
    values = (np.arange(np.prod(shape), dtype=np.float32) % 7 - 3) * scale
    return numpy_helper.from_array(values.reshape(shape).astype(np.float32), name)


def model(nodes, inputs, outputs, initializers=(), opset=17, name="graph"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="ampc-tests")
    m.ir_version = 8
    return m


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def mlp():
    """torch's nn.Linear export: Gemm with transB=1; a symbolic batch dim."""
    return model(
        [helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], name="/fc1/Gemm", transB=1),
         helper.make_node("Relu", ["h"], ["a"], name="/relu/Relu"),
         helper.make_node("Gemm", ["a", "fc2.weight", "fc2.bias"], ["logits"], name="/fc2/Gemm", transB=1)],
        [f32("x", ["batch", 4])], [f32("logits", ["batch", 3])],
        [weights("fc1.weight", [8, 4]), weights("fc1.bias", [8]), weights("fc2.weight", [3, 8]),
         weights("fc2.bias", [3])], name="mlp")


def gemm_general():
    """Gemm with transA, alpha and beta, and a [M, N] C: matmul, scale, add."""
    return model(
        [helper.make_node("Gemm", ["a", "w", "c"], ["y"], name="gemm", transA=1, alpha=0.5, beta=2.0)],
        [f32("a", [4, 2])], [f32("y", [2, 3])], [weights("w", [4, 3]), weights("c", [2, 3])])


def cnn():
    """A small CNN: Conv, Relu, MaxPool, AveragePool, Flatten, Gemm, LogSoftmax."""
    return model(
        [helper.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["c"], name="/conv1/Conv",
                          kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
         helper.make_node("Relu", ["c"], ["r"], name="/relu/Relu"),
         helper.make_node("MaxPool", ["r"], ["p"], name="/pool/MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("AveragePool", ["p"], ["q"], name="/avg/AveragePool", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Flatten", ["q"], ["f"], name="/Flatten", axis=1),
         helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["z"], name="/fc/Gemm", transB=1),
         helper.make_node("LogSoftmax", ["z"], ["logp"], name="/LogSoftmax", axis=1)],
        [f32("image", ["N", 1, 8, 8])], [f32("logp", ["N", 10])],
        [weights("conv1.weight", [4, 1, 3, 3]), weights("conv1.bias", [4]), weights("fc.weight", [10, 16]),
         weights("fc.bias", [10])], name="cnn")


def shape_arith():
    """x.view(x.size(0), -1) as torch exports it: Shape, Gather, Unsqueeze, Concat, Reshape."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64), name)
    return model(
        [helper.make_node("Shape", ["x"], ["s"], name="shape"),
         helper.make_node("Constant", [], ["zero"], name="zero", value=i64("zero_value", 0)),
         helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
         helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
         helper.make_node("Concat", ["n1", "minus_one"], ["target"], name="concat", axis=0),
         helper.make_node("Reshape", ["x", "target"], ["flat"], name="reshape"),
         helper.make_node("ReduceSum", ["flat", "axes1"], ["y"], name="sum", keepdims=0)],
        [f32("x", ["N", 2, 3])], [f32("y", ["N"])],
        [i64("axes", [0]), i64("minus_one", [-1]), i64("axes1", [1])])


def logic_folds():
    """Swin- and ViT-style mask arithmetic on known values: Mod and Equal of a shape value, a
    ScatterND into ConstantOfShape zeros, Cast to bool, Not and And; the mask then selects from x."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64), name)
    return model(
        [helper.make_node("Shape", ["x"], ["s"], name="shape"),
         helper.make_node("Gather", ["s", "one"], ["n"], name="width", axis=0),
         helper.make_node("Mod", ["n", "four"], ["m"], name="mod"),
         helper.make_node("Equal", ["m", "two"], ["even"], name="equal"),
         helper.make_node("ConstantOfShape", ["s"], ["zeros"], name="zeros", value=i64("zero_value", [0])),
         helper.make_node("ScatterND", ["zeros", "where", "ones"], ["marks"], name="scatter"),
         helper.make_node("Cast", ["marks"], ["marked"], name="to_bool", to=TensorProto.BOOL),
         helper.make_node("Not", ["marked"], ["kept"], name="not"),
         helper.make_node("And", ["kept", "even"], ["mask"], name="and"),
         helper.make_node("Where", ["mask", "x", "fill"], ["y"], name="select")],
        [f32("x", [2, 6])], [f32("y", [2, 6])],
        [i64("one", 1), i64("four", 4), i64("two", 2), i64("where", [[0, 1], [1, 4]]), i64("ones", [1, 1]),
         numpy_helper.from_array(np.zeros((2, 6), dtype=np.float32), "fill")])


def fold_refusals():
    """Two folds that are not exact, refused in one compile: Mod by zero, and a ScatterND that
    writes one element twice."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64), name)
    return model(
        [helper.make_node("Mod", ["six", "zero"], ["m"], name="mod_by_zero"),
         helper.make_node("ScatterND", ["base", "twice", "vals"], ["s"], name="scatter_twice"),
         helper.make_node("Add", ["x", "x"], ["y"], name="add")],
        [f32("x", [2])], [f32("y", [2]), helper.make_tensor_value_info("m", TensorProto.INT64, []),
                          helper.make_tensor_value_info("s", TensorProto.INT64, [3])],
        [i64("six", 6), i64("zero", 0), i64("base", [0, 0, 0]), i64("twice", [[1], [1]]), i64("vals", [5, 7])])


def scalar_loss():
    """A model that computes its own loss: mean((x W)^2)."""
    return model(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
         helper.make_node("Mul", ["h", "h"], ["sq"], name="square"),
         helper.make_node("ReduceMean", ["sq"], ["loss_value"], name="mean", keepdims=0)],
        [f32("x", [2, 4])], [f32("loss_value", [])], [weights("w", [4, 3])])


def layer_norm():
    """nn.LayerNorm(6) on [N, T, 6] as opset 17 exports it."""
    return model(
        [helper.make_node("LayerNormalization", ["x", "ln.weight", "ln.bias"], ["y"], name="/ln/LayerNormalization",
                          axis=-1, epsilon=1e-5)],
        [f32("x", ["N", 5, 6])], [f32("y", ["N", 5, 6])], [weights("ln.weight", [6]), weights("ln.bias", [6])])


def old_opset():
    """Opset 11 (Unsqueeze's axes an attribute): ONNX's version converter brings it to 17."""
    return model(
        [helper.make_node("Unsqueeze", ["x"], ["u"], name="unsqueeze", axes=[0]),
         helper.make_node("Relu", ["u"], ["y"], name="relu")],
        [f32("x", [3])], [f32("y", [1, 3])], opset=11)


def unsupported_op():
    return model([helper.make_node("Hardmax", ["x"], ["y"], name="/pick/Hardmax")], [f32("x", [2, 3])],
                 [f32("y", [2, 3])])


def lone_erf():
    return model([helper.make_node("Erf", ["x"], ["y"], name="/gelu/Erf")], [f32("x", [2, 3])], [f32("y", [2, 3])])


def gelu_and_causal_mask():
    """What PyTorch exports for nn.GELU() and a causal attention mask: Div -> Erf -> Add -> Mul ->
    Mul, and ConstantOfShape -> Trilu -> Cast -> Where on known values."""
    def scalar(name, value):
        return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, TensorProto.FLOAT, [], [value]))
    return model(
        [scalar("sqrt2", 1.4142135), scalar("one", 1.0), scalar("half", 0.5), scalar("minus_inf", float("-inf")),
         scalar("zero", 0.0),
         helper.make_node("Div", ["x", "sqrt2"], ["d"], name="/act/Div"),
         helper.make_node("Erf", ["d"], ["e"], name="/act/Erf"),
         helper.make_node("Add", ["e", "one"], ["a"], name="/act/Add"),
         helper.make_node("Mul", ["x", "a"], ["m"], name="/act/Mul"),
         helper.make_node("Mul", ["m", "half"], ["g"], name="/act/Mul_1"),
         helper.make_node("Constant", [], ["shape"], value=helper.make_tensor("shape", TensorProto.INT64, [2], [3, 3])),
         helper.make_node("ConstantOfShape", ["shape"], ["ones"], name="/mask/ConstantOfShape",
                          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
         helper.make_node("Constant", [], ["k"], value=helper.make_tensor("k", TensorProto.INT64, [], [1])),
         helper.make_node("Trilu", ["ones", "k"], ["upper"], name="/mask/Trilu", upper=1),
         helper.make_node("Cast", ["upper"], ["future"], name="/mask/Cast", to=TensorProto.BOOL),
         helper.make_node("Where", ["future", "minus_inf", "zero"], ["mask"], name="/mask/Where"),
         helper.make_node("Add", ["g", "mask"], ["y"], name="/scores/Add")],
        [f32("x", [3, 3])], [f32("y", [3, 3])])


def composite_ops():
    """Ops spelled as a few amp ops: Greater -> Where (an elementwise max), Clip, LeakyRelu,
    HardSwish, Trilu of a computed tensor, Split into halves, Sum of three."""
    def scalar(name, value):
        return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, TensorProto.FLOAT, [], [value]))
    return model(
        [scalar("lo", -0.5), scalar("hi", 0.75),
         helper.make_node("Greater", ["x", "y"], ["g"], name="/pick/Greater"),
         helper.make_node("Where", ["g", "x", "y"], ["w"], name="/pick/Where"),
         helper.make_node("Clip", ["w", "lo", "hi"], ["c"], name="/act/Clip"),
         helper.make_node("LeakyRelu", ["c"], ["l"], name="/act/LeakyRelu", alpha=0.1),
         helper.make_node("HardSwish", ["l"], ["h"], name="/act/HardSwish"),
         helper.make_node("Trilu", ["h"], ["t"], name="/mask/Trilu", upper=0),
         helper.make_node("Split", ["t"], ["a", "b"], name="/split/Split", axis=1),
         helper.make_node("Sum", ["a", "b", "a"], ["s"], name="/sum/Sum")],
        [f32("x", [4, 4]), f32("y", [4, 4])], [f32("s", [4, 2])])


def composite_ops_expected(x, y):
    """ONNX's reference of composite_ops in numpy, float32 throughout."""
    w = np.where(x > y, x, y)
    c = np.clip(w, np.float32(-0.5), np.float32(0.75))
    l = np.where(c < 0, c * np.float32(0.1), c)
    h = l * np.clip(l * np.float32(1.0 / 6.0) + np.float32(0.5), np.float32(0), np.float32(1))
    t = np.tril(h)
    a, b = t[:, :2], t[:, 2:]
    return (a + b) + a


PAD_WIDTHS = [1, 2, 0, 1]  # ONNX order: begin of each axis, then end of each axis


def pad_modes():
    """Pad in its three modes with the same known pads, summed; and a crop (a negative pad)."""
    pads = numpy_helper.from_array(np.array(PAD_WIDTHS, dtype=np.int64), "pads")
    crop = numpy_helper.from_array(np.array([0, -1, 1, 2], dtype=np.int64), "crop")
    value = numpy_helper.from_array(np.array(1.5, dtype=np.float32), "value")
    return model(
        [helper.make_node("Pad", ["x", "pads", "value"], ["c"], name="/pad/Constant", mode="constant"),
         helper.make_node("Pad", ["x", "pads"], ["r"], name="/pad/Reflect", mode="reflect"),
         helper.make_node("Pad", ["x", "pads"], ["e"], name="/pad/Edge", mode="edge"),
         helper.make_node("Pad", ["x", "crop"], ["k"], name="/pad/Crop"),
         helper.make_node("Add", ["c", "r"], ["cr"], name="/sum/Add"),
         helper.make_node("Add", ["cr", "e"], ["s"], name="/sum/Add_1")],
        [f32("x", [2, 3])], [f32("s", [3, 6]), f32("k", [3, 4])], [pads, crop, value])


def pad_modes_expected(x):
    """ONNX's reference (numpy.pad) of pad_modes' output s, float32 throughout."""
    widths = [(PAD_WIDTHS[0], PAD_WIDTHS[2]), (PAD_WIDTHS[1], PAD_WIDTHS[3])]
    c = np.pad(x, widths, mode="constant", constant_values=np.float32(1.5))
    return (c + np.pad(x, widths, mode="reflect")) + np.pad(x, widths, mode="edge")


def dynamic_pads():
    """Pad whose pads are a graph input: not known at import."""
    return model([helper.make_node("Pad", ["x", "pads"], ["y"], name="/pad/Pad")],
                 [f32("x", [2, 3]), helper.make_tensor_value_info("pads", TensorProto.INT64, [4])],
                 [f32("y", [2, 3])])


def linear_3d():
    """nn.Linear on [B, T, C] as PyTorch exports it: Transpose(W) -> MatMul -> Add(b); a second
    layer without bias; and a transposed weight read twice, which stays as it is."""
    return model(
        [helper.make_node("Transpose", ["fc1.weight"], ["w1t"], name="/fc1/Transpose", perm=[1, 0]),
         helper.make_node("MatMul", ["x", "w1t"], ["m1"], name="/fc1/MatMul"),
         helper.make_node("Add", ["m1", "fc1.bias"], ["h"], name="/fc1/Add"),
         helper.make_node("Transpose", ["fc2.weight"], ["w2t"], name="/fc2/Transpose"),
         helper.make_node("MatMul", ["h", "w2t"], ["y"], name="/fc2/MatMul"),
         helper.make_node("Transpose", ["tied.weight"], ["wt"], name="/tied/Transpose", perm=[1, 0]),
         helper.make_node("MatMul", ["y", "wt"], ["z1"], name="/tied/MatMul"),
         helper.make_node("MatMul", ["y", "wt"], ["z2"], name="/tied/MatMul_1"),
         helper.make_node("Add", ["z1", "z2"], ["z"], name="/tied/Add")],
        [f32("x", [2, 3, 4])], [f32("z", [2, 3, 6])],
        [weights("fc1.weight", [5, 4]), weights("fc1.bias", [5]), weights("fc2.weight", [6, 5]),
         weights("tied.weight", [6, 6])])


def custom_domain():
    m = model([helper.make_node("FusedThing", ["x"], ["y"], name="fused", domain="com.example")],
              [f32("x", [2, 3])], [f32("y", [2, 3])])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    return m


def asymmetric_pads():
    return model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="/stem/Conv", kernel_shape=[3, 3], pads=[0, 0, 1, 1])],
        [f32("x", [1, 1, 5, 5])], [f32("y", [1, 2, 4, 4])], [weights("w", [2, 1, 3, 3])])


def conv_transpose_asymmetric():
    """A stride-2 ConvTranspose with pads [top 0, left 1, bottom 1, right 0]: the full 7x7 result
    less one row at the bottom and one column at the left."""
    return model(
        [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="/up/ConvTranspose", kernel_shape=[3, 3],
                          strides=[2, 2], pads=[0, 1, 1, 0])],
        [f32("x", [1, 2, 3, 3])], [f32("y", [1, 4, 6, 6])], [weights("w", [2, 4, 3, 3]), weights("b", [4])])


def conv_transpose_refused():
    """output_padding must be below the stride (ONNX, PyTorch)."""
    return model(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="/up/ConvTranspose", kernel_shape=[3, 3],
                          strides=[2, 2], output_padding=[2, 0])],
        [f32("x", [1, 2, 3, 3])], [f32("y", [1, 4, 9, 7])], [weights("w", [2, 4, 3, 3])])


def unsupported_ops():
    """Three nodes of op types ampc has no translation for (two reasons), refused by the screening."""
    m = model(
        [helper.make_node("Hardmax", ["x"], ["a"], name="pick_a"),
         helper.make_node("Relu", ["a"], ["b"], name="relu"),
         helper.make_node("Hardmax", ["b"], ["c"], name="pick_b"),
         helper.make_node("FusedThing", ["c"], ["y"], name="fused", domain="com.example")],
        [f32("x", [2, 3])], [f32("y", [2, 3])])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    return m


def many_refusals():
    """Three nodes the translator refuses for two reasons, and one that reads a refused node's
    output."""
    return model(
        [helper.make_node("ConvTranspose", ["img", "w"], ["a"], name="/up_a/ConvTranspose", kernel_shape=[2, 2],
                          strides=[2, 2], output_padding=[2, 2]),
         helper.make_node("Relu", ["a"], ["y"], name="after_a"),
         helper.make_node("ConvTranspose", ["img", "w"], ["b"], name="/up_b/ConvTranspose", kernel_shape=[2, 2],
                          strides=[2, 2], output_padding=[2, 2]),
         helper.make_node("MaxPool", ["img"], ["c"], name="/pool_c/MaxPool", kernel_shape=[2, 2], auto_pad="SAME_MIDDLE")],
        [f32("img", [1, 1, 5, 5])], [f32("y", [1, 1, 12, 12]), f32("b", [1, 1, 12, 12]), f32("c", [1, 1, 4, 4])],
        [weights("w", [1, 1, 2, 2])])


def double_input():
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2])],
                 [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2])])


def cast_to_half():
    return model([helper.make_node("Cast", ["x"], ["y"], name="to_half", to=TensorProto.FLOAT16)],
                 [f32("x", [2])], [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2])])


def batch_norm(training_mode=1, running_var_output=False):
    """Conv -> BatchNormalization -> Relu -> Flatten -> Gemm, as torch.onnx.export writes ResNet's
    blocks with training=TrainingMode.TRAINING (opset 15: training_mode=1, three outputs, the
    running statistics initializers named like torch's buffers)."""
    outputs = ["b", "bn1.running_mean_out", "bn1.running_var_out"] if training_mode else ["b"]
    graph_outputs = [f32("logits", ["N", 3])]
    if running_var_output:
        graph_outputs.append(f32("bn1.running_var_out", [2]))
    stats = [numpy_helper.from_array(np.array([0.5, -0.25], dtype=np.float32), "bn1.running_mean"),
             numpy_helper.from_array(np.array([2.0, 0.5], dtype=np.float32), "bn1.running_var")]
    return model(
        [helper.make_node("Conv", ["image", "conv1.weight"], ["c"], name="/conv1/Conv", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "bn1.weight", "bn1.bias", "bn1.running_mean",
                                                 "bn1.running_var"], outputs, name="/bn1/BatchNormalization",
                          epsilon=1e-5, momentum=0.9, training_mode=training_mode),
         helper.make_node("Relu", ["b"], ["r"], name="/relu/Relu"),
         helper.make_node("Flatten", ["r"], ["f"], name="/Flatten", axis=1),
         helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="/fc/Gemm", transB=1)],
        [f32("image", ["N", 1, 4, 4])], graph_outputs,
        [weights("conv1.weight", [2, 1, 3, 3]), weights("bn1.weight", [2], 0.5), weights("bn1.bias", [2])] + stats +
        [weights("fc.weight", [3, 32]), weights("fc.bias", [3])], opset=15, name="batch_norm")


def batch_norm_eval():
    """The same model exported for inference: training_mode=0, the running statistics normalise."""
    return batch_norm(training_mode=0)


def batch_norm_running_var_out():
    """training_mode=1 with the new running variance as a graph output (ONNX computes it biased)."""
    return batch_norm(running_var_output=True)


MODELS = {f.__name__: f for f in [mlp, gemm_general, cnn, shape_arith, scalar_loss, layer_norm, old_opset, unsupported_op,
                                  lone_erf, gelu_and_causal_mask, composite_ops, linear_3d,
                                  custom_domain, asymmetric_pads, conv_transpose_asymmetric, conv_transpose_refused, many_refusals, unsupported_ops, logic_folds, fold_refusals, double_input, cast_to_half, batch_norm,
                                  batch_norm_eval, batch_norm_running_var_out, pad_modes, dynamic_pads]}

if __name__ == "__main__":
    name, out = sys.argv[1], sys.argv[2]
    m = MODELS[name]()
    if name != "old_opset":
        onnx.checker.check_model(m)
    onnx.save(m, out)
    if len(sys.argv) > 3 and name == "composite_ops":
        rng = np.random.default_rng(0)
        x, y = (rng.standard_normal((4, 4)).astype(np.float32) for _ in range(2))
        np.savez(sys.argv[3], x=x, y=y, target=composite_ops_expected(x, y))
    elif len(sys.argv) > 3 and name == "pad_modes":
        x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
        np.savez(sys.argv[3], x=x, target=pad_modes_expected(x))
    elif len(sys.argv) > 3:
        x = (np.arange(16, dtype=np.float32).reshape(4, 4) % 5) * 0.25
        np.savez(sys.argv[3], x=x, label=np.array([0, 1, 2, 1], dtype=np.int64))
