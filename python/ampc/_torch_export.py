"""torch.nn.Module -> ONNX, the way docs/onnx-import.md prescribes, and trained values -> ONNX.

PyTorch is imported only when a module is given: the rest of the package works without it.
"""
import os
import re
import sys
import warnings

import numpy as np

INPUT_NAME, OUTPUT_NAME = "input", "logits"


def amp_name(onnx_name):
    """The name the importer gives an initializer (docs/onnx-import.md, "Names")."""
    return re.sub(r"[^A-Za-z0-9_.\-/]", "_", onnx_name)


def is_torch_module(model):
    torch = sys.modules.get("torch")  # a module exists only once the program imported torch
    return torch is not None and isinstance(model, torch.nn.Module)


def export_module(module, example, path):
    """Exports `module` for training (BatchNorm in training mode, no constant folding, a symbolic
    batch) and returns its state_dict's keys and shapes, in order, with the values of its
    num_batches_tracked counters."""
    import torch
    if example is None:
        raise ValueError("ampc.compile of a torch.nn.Module needs example=, a batch of inputs (its batch size is "
                         "the compiled one)")
    if not isinstance(example, torch.Tensor):
        example = torch.as_tensor(np.asarray(example))
    # Exporting in training mode runs the module once: batch norms update their running statistics
    # and counters. The module is given back as it was, and so are the exported values.
    before = {k: v.detach().clone() for k, v in module.state_dict().items()}
    was_training = module.training
    module.train()
    try:
        # The exporter warns about every batch norm counter it drops; state_dict() restores them.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*num_batches_tracked.*", category=UserWarning)
            torch.onnx.export(module, example, path, opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False, input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
                              dynamic_axes={INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}})
    finally:
        module.train(was_training)
        module.load_state_dict(before)
    _set_initializers(path, {k: v.cpu().numpy() for k, v in before.items()})
    keys = [(k, tuple(v.shape), str(v.dtype)) for k, v in before.items()]
    counters = {k: int(v) for k, v in before.items() if k.endswith("num_batches_tracked")}
    return keys, counters


def _set_initializers(path, values):
    """Sets the initializers of the ONNX file at `path` named in `values` (same shapes)."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path, load_external_data=False)
    for init in model.graph.initializer:
        if init.name in values:
            old = numpy_helper.to_array(init)
            new = np.asarray(values[init.name]).astype(old.dtype)
            if new.shape == old.shape:
                init.CopyFrom(numpy_helper.from_array(new, init.name))
    onnx.save(model, path)


def graph_output_names(onnx_path):
    import onnx
    model = onnx.load(onnx_path, load_external_data=False)
    return [o.name for o in model.graph.output]


def export_inference(onnx_path, values, path):
    """Writes the inference graph of the training-mode export at `onnx_path` with the trained
    `values` (name -> numpy array) as its initializers: BatchNormalization in inference mode
    (training_mode=0, only output Y), Dropout as Identity. Checked with onnx.checker."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(onnx_path, load_external_data=False)
    graph = model.graph
    replaced = set()
    for init in graph.initializer:
        name = init.name if init.name in values else amp_name(init.name)
        if name in values:
            trained = np.asarray(values[name])
            old = numpy_helper.to_array(init)
            if tuple(old.shape) != tuple(trained.shape):
                raise ValueError(f"export_onnx: '{init.name}' has shape {tuple(trained.shape)}, the model's "
                                 f"initializer {tuple(old.shape)}")
            init.CopyFrom(numpy_helper.from_array(trained.astype(old.dtype), init.name))
            replaced.add(init.name)
    for node in graph.node:
        if node.op_type == "BatchNormalization":
            for attr in node.attribute:
                if attr.name == "training_mode":
                    attr.i = 0
            del node.output[1:]
        elif node.op_type == "Dropout":
            node.op_type = "Identity"
            del node.input[1:]
            del node.output[1:]
            del node.attribute[:]
    onnx.checker.check_model(model)
    tmp = path + ".tmp"
    onnx.save(model, tmp)
    os.replace(tmp, path)
    return replaced
