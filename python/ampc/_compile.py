"""ampc.compile: a torch.nn.Module, an .onnx or an amp-dialect .mlir model -> a training bundle."""
import os
import shutil
import tempfile

import numpy as np

from . import _torch_export
from ._options import CompileError, compile_flags


class CompiledStep:
    """A compiled training step: the bundle amp-run and ampc.Trainer load, and what the Python
    side needs to map its values back to the model (the ONNX file it came from, the module's
    state_dict keys)."""

    def __init__(self, bundle, onnx=None, loss_kind=None, module_keys=None, counters=None, extra=None, workdir=None):
        self.bundle = bundle            # path of the .ampx
        self.onnx = onnx                # the training-mode ONNX it was imported from, if any
        self.loss_kind = loss_kind      # "cross_entropy", "mse", or None (the loss is in the model)
        self.module_keys = module_keys  # [(key, shape, dtype)] of the module's state_dict, in order
        self.counters = counters or {}  # num_batches_tracked at compile time
        self.extra = extra or {}        # the module's state_dict values at compile time
        self._workdir = workdir

    def __repr__(self):
        return f"ampc.CompiledStep({self.bundle!r})"

    def __del__(self):
        if self._workdir:
            shutil.rmtree(self._workdir, ignore_errors=True)


def _run_ampc(args):
    from . import _compiler
    rc, diagnostics = _compiler.run_ampc([str(a) for a in args])
    if rc != 0:
        raise CompileError(diagnostics or "ampc failed without a diagnostic")
    if diagnostics.strip():
        import warnings
        warnings.warn(diagnostics.strip(), stacklevel=3)


def _loss_flag(loss, onnx_path):
    if loss is None:
        loss = "cross_entropy"
    if ":" in loss or loss not in ("cross_entropy", "mse"):
        return loss, loss.split(":", 1)[0] if ":" in loss else None
    outputs = _torch_export.graph_output_names(onnx_path)
    if not outputs:
        raise CompileError(f"{onnx_path}: the graph has no output to attach the loss to")
    return f"{loss}:{outputs[0]}", loss


def compile(model, example=None, *, loss=None, precision="auto", optimizer=None, clip_grad_norm=0.0, accumulate=1,
            batch=None, input_shapes=None, policy=None, overrides=None, loss_scale="auto", init_scale=None,
            growth_factor=None, backoff_factor=None, growth_interval=None, remat="auto", memory_budget=None,
            schedule="constant", warmup=0, total_steps=0, target=None, data_parallel=False, native_kernels=True,
            output=None):
    """Compiles the whole training step of `model`.

    model: a torch.nn.Module (exported to ONNX here; needs `example`, a batch of inputs whose
    size is the compiled batch), or the path of an .onnx or amp-dialect .mlir model.
    loss: for ONNX models and modules, "cross_entropy" (default) or "mse" on the first graph
    output, or ampc's --loss spec; an .mlir model has its loss in its IR.
    The other keywords are ampc's flags of the same names (docs/python.md lists them).
    Raises ampc.CompileError with ampc's located diagnostic when the model or options are refused.
    """
    flags = compile_flags(precision=precision, optimizer=optimizer, clip_grad_norm=clip_grad_norm,
                          accumulate=accumulate, policy=policy, overrides=overrides, loss_scale=loss_scale,
                          init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                          growth_interval=growth_interval, remat=remat, memory_budget=memory_budget,
                          schedule=schedule, warmup=warmup, total_steps=total_steps, target=target,
                          data_parallel=data_parallel, native_kernels=native_kernels)
    workdir = tempfile.mkdtemp(prefix="ampc-")
    try:
        bundle = os.fspath(output) if output is not None else os.path.join(workdir, "model.ampx")
        module_keys = counters = None
        extra = {}
        onnx_path = None
        if _torch_export.is_torch_module(model):
            onnx_path = os.path.join(workdir, "model.onnx")
            module_keys, counters = _torch_export.export_module(model, example, onnx_path)
            source = onnx_path
        else:
            source = os.fspath(model)
            if not os.path.isfile(source):
                raise FileNotFoundError(f"ampc.compile: no model file '{source}'")
            if not source.endswith(".mlir"):
                onnx_path = os.path.join(workdir, "model.onnx")
                shutil.copyfile(source, onnx_path)
        args = [source, "-o", bundle] + flags
        loss_kind = None
        if onnx_path is not None:
            loss_spec, loss_kind = _loss_flag(loss, onnx_path)
            args.append(f"--loss={loss_spec}")
            if batch is None and example is not None:
                batch = int(np.shape(example)[0])
            if batch is not None:
                args.append(f"--batch={int(batch)}")
            for name, shape in dict(input_shapes or {}).items():
                args.append(f"--input-shape={name}=" + "x".join(str(int(d)) for d in shape))
        elif loss is not None or batch is not None or input_shapes:
            raise ValueError(f"{source}: loss=, batch= and input_shapes= are for ONNX models and torch modules; an "
                             ".mlir model declares its loss and shapes in its IR")
        _run_ampc(args)
        if module_keys is not None:
            state = model.state_dict()
            extra = {k: v.detach().cpu().numpy().copy() for k, v in state.items()}
        return CompiledStep(bundle, onnx=onnx_path, loss_kind=loss_kind, module_keys=module_keys, counters=counters,
                            extra=extra, workdir=workdir)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
