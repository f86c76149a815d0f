"""Bad input gets a Python exception with a message that says what and where, never a crash."""
import os

import numpy as np
import pytest

import ampc
from conftest import ROOT

MLP_MLIR = os.path.join(ROOT, "examples", "mlp.mlir")


@pytest.fixture(scope="module")
def trainer():
    return ampc.Trainer(ampc.compile(MLP_MLIR, precision="f32"), device="cpu")


def good_batch():
    return np.zeros((128, 784), np.float32), np.zeros(128, np.int64)


def test_wrong_dtype(trainer):
    x, y = good_batch()
    with pytest.raises(TypeError, match="expected f32.*got float64"):
        trainer.step(x.astype(np.float64), y)
    with pytest.raises(TypeError, match="label 'label': expected i64"):
        trainer.step(x, y.astype(np.float32))


def test_wrong_shape_and_partial_batch(trainer):
    x, y = good_batch()
    with pytest.raises(ValueError, match=r"expected shape \(128, 784\), got \(128, 783\)"):
        trainer.step(x[:, :783].copy(), y)
    with pytest.raises(ValueError, match="drop_last=True"):
        trainer.step(x[:100], y[:100])


def test_non_finite_data_names_the_example(trainer):
    x, y = good_batch()
    x[5, 3] = np.nan
    with pytest.raises(ValueError, match=r"non-finite value at element 3923 \(example 5"):
        trainer.step(x, y)
    assert trainer.steps_done == 0


def test_torch_layouts_and_devices(trainer):
    torch = pytest.importorskip("torch")
    x = torch.zeros(784, 128).t()
    with pytest.raises(ValueError, match="not contiguous.*contiguous()"):
        trainer.step(x, torch.zeros(128, dtype=torch.int64))


def test_a_model_that_does_not_compile(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @model(%x: tensor<2xf32>) -> tensor<f32> {\n  %0 = amp.nonsense %x\n}\n")
    with pytest.raises(ampc.CompileError, match=r"bad.mlir:2:\d+: error"):
        ampc.compile(str(bad))


def test_an_onnx_model_that_does_not_import(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    node = helper.make_node("Unique", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])])
    path = tmp_path / "unique.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(ampc.CompileError, match="unique.onnx:1:0: error: .*Unique"):
        ampc.compile(str(path), loss="y")


def test_bad_options():
    with pytest.raises(ValueError, match="precision must be one of"):
        ampc.compile(MLP_MLIR, precision="fp8")
    with pytest.raises(ValueError, match="clip_grad_norm"):
        ampc.compile(MLP_MLIR, clip_grad_norm=-1.0)
    with pytest.raises(ValueError, match="for ONNX models"):
        ampc.compile(MLP_MLIR, loss="mse")
    with pytest.raises(FileNotFoundError):
        ampc.compile("/nonexistent/model.onnx")
    with pytest.raises(ValueError, match=r"AdamW\(state=\) must be 'f32' or 'bf16'"):
        ampc.compile(MLP_MLIR, optimizer=ampc.AdamW(state="fp8"))
    with pytest.raises(ampc.CompileError, match="state=bf16 runs on cpu targets"):
        ampc.compile(MLP_MLIR, optimizer=ampc.AdamW(state="bf16"), target="cuda:sm_90")
