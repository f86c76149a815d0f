"""ampc.Trainer: a compiled training step on a device, driven by the user's own loop.

The runtime (ampc._runtime, over runtime/exec/Session and runtime/train) runs every step; this
file only turns Python data into feeds, metrics into dicts and values into a state_dict.
"""
import collections
import json
import os
import shutil
import sys

import numpy as np

from . import _torch_export
from ._compile import CompiledStep

_NUMPY_DTYPES = {"f32": np.float32, "f16": np.float16, "i64": np.int64, "i32": np.int32, "u8": np.uint8,
                 "i1": np.bool_, "f64": np.float64}
_COUNTER = "num_batches_tracked"
_META = "trainer.json"


def _torch():
    """torch when the program has imported it (importing it here would change the process's
    OpenMP thread count, and a program without torch has no torch tensors to give)."""
    return sys.modules.get("torch")


def _as_array(value, buf, what):
    """`value` (a numpy array or a CPU torch tensor) as the numpy array fed to buffer `buf`,
    without a copy; wrong dtypes, layouts and devices are errors that say how to fix them."""
    torch = _torch()
    name = buf["name"]
    if torch is not None and isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            raise TypeError(f"{what} '{name}' is a {value.device.type} tensor; ampc reads host memory: pass "
                            f"x.cpu() (the device= of ampc.Trainer says where the step runs)")
        if not value.is_contiguous():
            raise ValueError(f"{what} '{name}' is not contiguous (strides {tuple(value.stride())}); pass "
                             f"x.contiguous()")
        value = value.detach().numpy()
    array = np.asarray(value)
    expected = _NUMPY_DTYPES.get(buf["dtype"])
    if expected is None or array.dtype != expected:
        raise TypeError(f"{what} '{name}': expected {buf['dtype']} (numpy {np.dtype(expected).name if expected else '-'}), "
                        f"got {array.dtype}; convert it (x.astype(np.{np.dtype(expected).name if expected else '?'}) "
                        f"or x.to(torch.{'float32' if buf['dtype'] == 'f32' else 'int64'}))")
    if not array.flags.c_contiguous:
        raise ValueError(f"{what} '{name}' is not C-contiguous; pass np.ascontiguousarray(x)")
    return array


class EpochSampler:
    """amp-run's example order: epoch e is a Philox-driven Fisher-Yates permutation keyed by
    (seed, e) (docs/cli.md, "Data order"), or file order without shuffle; under data-parallel
    training each rank takes its share as DistributedSampler does (padded to a multiple of the
    ranks). DataLoader(dataset, batch_size=B, sampler=EpochSampler(len(dataset), seed),
    drop_last=True) feeds a Trainer exactly the batches amp-run --seed would; call set_epoch(e)
    before each epoch (ampc.fit does)."""

    def __init__(self, n, seed=0, shuffle=True, rank=0, world_size=1):
        self.n, self.seed, self.shuffle = int(n), int(seed), bool(shuffle)
        self.rank, self.world_size = int(rank), int(world_size)
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def __iter__(self):
        from . import _runtime
        if self.shuffle:
            return iter(_runtime.epoch_order(self.n, self.seed, self.epoch, self.rank, self.world_size))
        per_rank = -(-self.n // self.world_size)
        return iter([(self.rank + i * self.world_size) % self.n for i in range(per_rank)])

    def __len__(self):
        return -(-self.n // self.world_size)


class Trainer:
    """Trains a compiled step on `device` ("cpu", "reference" or "cuda").

    trainer.step(x, y) runs one micro-batch (an optimizer step every `accumulate` of them) and
    returns the step's metrics; evaluate(), state_dict()/load_state_dict(), save()/resume() and
    export_onnx() follow PyTorch's conventions (docs/python.md).
    """

    def __init__(self, step, device="cpu", *, seed=0, metrics=None, check_numerics=False, memory_limit=0,
                 native_code="auto", data_parallel=False, comm_timeout=300.0, threads=None):
        from . import _runtime
        if isinstance(step, (str, os.PathLike)):
            step = CompiledStep(os.fspath(step))
        if not isinstance(step, CompiledStep):
            raise TypeError(f"ampc.Trainer takes what ampc.compile returns (or a .ampx path), got {type(step).__name__}")
        self.compiled = step
        # The cpu device's threads: every CPU this process may run on (as amp-run), whatever
        # torch.set_num_threads says; threads=N sets them.
        threads = len(os.sched_getaffinity(0)) if threads is None else int(threads)
        self._session = _runtime.Session(step.bundle, device, int(memory_limit), native_code, threads)
        if self._session.notice:
            import warnings
            warnings.warn(self._session.notice, stacklevel=2)
        self.config = self._session.training_config()
        # Data-parallel (docs/data-parallel.md): this process is one rank of mpirun's job; the
        # bundle's collectives reduce the gradients, found_inf and the loss across the ranks.
        self.rank, self.world_size = _runtime.join_job(float(comm_timeout)) if data_parallel else (0, 1)
        self.data_parallel = bool(data_parallel)
        if data_parallel and not self.config["data_parallel"]:
            raise ValueError(f"{step.bundle} was not compiled for data-parallel training: "
                             f"ampc.compile(..., data_parallel=True)")
        if not data_parallel and self.config["data_parallel"]:
            raise ValueError(f"{step.bundle} was compiled for data-parallel training: ampc.Trainer(..., "
                             f"data_parallel=True) under mpirun")
        buffers = self._session.buffers()
        self._buffers = {b["name"]: b for b in buffers}
        inputs = [b for b in buffers if b["kind"] == "input"]
        labels = [b for b in buffers if b["kind"] == "label"]
        if len(inputs) != 1 or len(labels) != 1:
            raise ValueError(f"{step.bundle}: Trainer.step(x, y) feeds one input and one label; this model has "
                             f"inputs {[b['name'] for b in inputs]} and labels {[b['name'] for b in labels]}")
        self._input, self._label = inputs[0], labels[0]
        self.batch_size = self._input["shape"][0]
        self.accumulate = int(self.config["accumulate"])
        self.seed = int(seed)
        self.check_numerics = bool(check_numerics)
        self.steps_done = 0        # optimizer steps applied or skipped
        self.forward_passes = 0    # training micro-batches run (batch norm's num_batches_tracked)
        self._window = []          # micro-batches of the optimizer step in progress
        self._metrics = open(metrics, "a") if metrics else None
        model_names = list(self._session.persistent(model_only=True).keys())
        self._renames = self._match_renamed(model_names)

    # --- training -------------------------------------------------------------------------------

    def _feeds(self, x, y, partial_hint):
        x = _as_array(x, self._input, "input")
        y = _as_array(y, self._label, "label")
        for array, buf in ((x, self._input), (y, self._label)):
            shape = tuple(buf["shape"])
            if array.shape != shape:
                if array.ndim == len(shape) and array.shape[1:] == shape[1:] and array.shape[0] < shape[0]:
                    raise ValueError(f"{buf['kind']} '{buf['name']}' has a batch of {array.shape[0]}, the model was "
                                     f"compiled for {shape[0]}. {partial_hint}")
                raise ValueError(f"{buf['kind']} '{buf['name']}': expected shape {shape}, got {array.shape}")
        return {self._input["name"]: x, self._label["name"]: y}

    def step(self, x, y):
        """One micro-batch. Returns the optimizer step's metrics (loss, scale, skipped, grad_norm,
        lr, step, ...) when it completes one, None inside an accumulation window."""
        feeds = self._feeds(x, y, "Training runs whole batches: drop the smaller last one with "
                                  "DataLoader(..., drop_last=True) (evaluate() takes any batch size).")
        self._window.append(feeds)
        if len(self._window) < self.accumulate:
            return None
        window, self._window = self._window, []
        record = self._session.step(window, self.steps_done, self.check_numerics, self.data_parallel)
        self.steps_done += 1
        self.forward_passes += self.accumulate
        if self._metrics:
            line = {"kind": "step", "step": record["step"], "loss": record["loss"], "found_inf": record["skipped"],
                    "skipped": record["skipped"], "scale": record["scale"], "next_scale": record["next_scale"],
                    "growth_tracker": record["growth_tracker"], "grad_norm": record["grad_norm"], "lr": record["lr"],
                    "step_time_ms": record["step_time_ms"]}
            self._metrics.write(json.dumps(line, allow_nan=False, default=str) + "\n")
            self._metrics.flush()
        return record

    def get_scale(self):
        """The loss scale the next step runs with (GradScaler.get_scale()); 1.0 without scaling."""
        values = self._session.persistent()
        return float(values["amp.loss_scale"]) if "amp.loss_scale" in values else 1.0

    # --- evaluation -----------------------------------------------------------------------------

    def _eval_chunks(self, x, y):
        """The eval entry over x (and labels y) cut into compiled-size calls, the last padded:
        yields (real examples, loss, logits [rows, classes], labels [rows]) per call."""
        batch = self.batch_size
        for start in range(0, x.shape[0], batch):
            xs, ys = x[start:start + batch], y[start:start + batch]
            real = xs.shape[0]
            if real < batch:
                pad = batch - real
                xs = np.concatenate([xs, np.repeat(xs[:1], pad, axis=0)])
                ys = np.concatenate([ys, np.repeat(ys[:1], pad, axis=0)])
            feeds = self._feeds(np.ascontiguousarray(xs), np.ascontiguousarray(ys), "")
            results = self._session.run("eval", feeds, self.steps_done, self.check_numerics)
            if len(results) < 2:
                raise ValueError("the eval entry returns no logits (a second result) to score")
            labels = ys.reshape(-1)
            rows = real * (labels.size // batch)
            yield real, float(results[0][1]), results[1][1].reshape(labels.size, -1)[:rows], labels[:rows]

    def predict(self, x):
        """The eval entry's logits (its second result) for every example of x, any count:
        [N, ...] as the model's logits are shaped per example."""
        x = _as_array(x, self._input, "input")
        y = np.zeros((x.shape[0],) + tuple(self._label["shape"][1:]), _NUMPY_DTYPES[self._label["dtype"]])
        parts = [logits for _, _, logits, _ in self._eval_chunks(x, y)]
        out = np.concatenate(parts)
        per_example = out.shape[0] // max(1, x.shape[0])
        return out.reshape((x.shape[0],) + ((per_example,) if per_example > 1 else ()) + out.shape[1:])

    def evaluate(self, data):
        """Accuracy and mean loss of the eval entry over `data`: an iterable of (x, y) batches of
        any size (a DataLoader), or one (x, y) pair of arrays. Every example counts once: batches
        are cut and the last one padded to the compiled size, and padding is not scored."""
        if isinstance(data, tuple) and len(data) == 2:
            data = [data]
        correct = rows_seen = examples = 0
        loss_sum, loss_examples = 0.0, 0
        for x, y in data:
            x = _as_array(x, self._input, "input")
            y = _as_array(y, self._label, "label")
            examples += x.shape[0]
            for real, loss, logits, labels in self._eval_chunks(x, y):
                rows = labels.size
                if np.issubdtype(labels.dtype, np.integer):
                    correct += int((logits.argmax(axis=1) == labels).sum())
                rows_seen += rows
                if real == self.batch_size:
                    loss_sum += loss * real
                    loss_examples += real
                elif self.compiled.loss_kind == "cross_entropy":
                    # The padded call's loss averages padding in: score the real rows alone (f64).
                    z = logits.astype(np.float64)
                    z = z - z.max(axis=1, keepdims=True)
                    nll = np.log(np.exp(z).sum(axis=1)) - z[np.arange(rows), labels]
                    loss_sum += float(nll.reshape(real, -1).mean(axis=1).sum())
                    loss_examples += real
        if examples == 0:
            raise ValueError("evaluate: no examples")
        return {"accuracy": correct / rows_seen, "loss": loss_sum / loss_examples if loss_examples else float("nan"),
                "examples": examples}

    # --- state_dict -----------------------------------------------------------------------------

    def _match_renamed(self, model_names):
        """Module state_dict keys whose ONNX initializer the exporter renamed (onnx::...): found
        among the bundle's unmatched params by their exact initial values."""
        renames = {}
        keys = self.compiled.module_keys
        if not keys:
            return renames
        names = set(model_names)
        unmatched = [k for k, _, _ in keys if k not in names and not k.endswith(_COUNTER)]
        if not unmatched:
            return renames
        initial = self._session.persistent(model_only=True)
        claimed = set()
        spare = [n for n in model_names if n not in {k for k, _, _ in keys}]
        for key in unmatched:
            value = self.compiled.extra.get(key)
            if value is None:
                continue
            for name in spare:
                if name not in claimed and initial[name].shape == value.shape and np.array_equal(initial[name], value):
                    renames[key] = name
                    claimed.add(name)
                    break
        return renames

    def _counters(self):
        """num_batches_tracked of each batch norm: its value at compile time (0 for an ONNX model)
        plus the training micro-batches run since."""
        names = self._session.persistent(model_only=True).keys()
        out = {}
        for name in names:
            if name.endswith(".running_mean"):
                key = name[: -len("running_mean")] + _COUNTER
                out[key] = self.compiled.counters.get(key, 0) + self.forward_passes
        return out

    def state_dict(self):
        """The model's params and buffers by PyTorch's state_dict names (torch tensors when torch
        is installed, else numpy arrays), batch norms' num_batches_tracked included."""
        values = self._session.persistent(model_only=True)
        inverse = {v: k for k, v in self._renames.items()}
        named = {inverse.get(n, n): v for n, v in values.items()}
        for key, count in self._counters().items():
            named[key] = np.array(count, dtype=np.int64)
        if self.compiled.module_keys:
            ordered = collections.OrderedDict()
            for key, shape, _ in self.compiled.module_keys:
                if key in named:
                    ordered[key] = named.pop(key)
                elif key in self.compiled.extra:  # a value the graph does not use: as the module had it
                    ordered[key] = self.compiled.extra[key].copy()
            ordered.update(named)
            named = ordered
        else:
            named = collections.OrderedDict(named)
        torch = _torch()
        if torch is not None:
            return collections.OrderedDict((k, torch.from_numpy(np.require(v, requirements="C"))) for k, v in named.items())
        return named

    def load_state_dict(self, state_dict, strict=True):
        """Sets params and buffers from a state_dict (a module's, for fine-tuning, or this
        trainer's). The optimizer's moments and the scaler are kept."""
        expected = self.state_dict()
        given = {k: (v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v)) for k, v in state_dict.items()}
        missing = [k for k in expected if k not in given]
        unexpected = [k for k in given if k not in expected]
        if strict and (missing or unexpected):
            raise RuntimeError("Error(s) in loading state_dict for ampc.Trainer: "
                               + (f"Missing key(s): {', '.join(missing)}. " if missing else "")
                               + (f"Unexpected key(s): {', '.join(unexpected)}." if unexpected else ""))
        model_names = set(self._session.persistent(model_only=True).keys())
        values, counters = {}, self._counters()
        for key, value in given.items():
            if key not in expected:
                continue
            if tuple(value.shape) != tuple(expected[key].shape):
                raise RuntimeError(f"size mismatch for {key}: copying a param with shape {tuple(value.shape)}, the "
                                   f"shape in the compiled model is {tuple(expected[key].shape)}")
            if key in counters:
                base = self.compiled.counters.get(key, 0)
                self.compiled.counters[key] = base + int(value) - counters[key]
                continue
            name = self._renames.get(key, key)
            if name in model_names:
                values[name] = np.ascontiguousarray(value, dtype=np.float32)
            else:
                self.compiled.extra[key] = np.array(value)
        self._session.set_model_values(values)

    # --- checkpoints and exports ----------------------------------------------------------------

    def save(self, directory):
        """Writes the bundle, the training state (params, optimizer, scaler, counters: the
        runtime's authenticated checkpoint) and the trainer's position to `directory`;
        Trainer.resume(directory) continues bit for bit."""
        directory = os.fspath(directory)
        if self._window:
            raise RuntimeError(f"save: {len(self._window)} micro-batches of an accumulation window are pending; "
                               f"save after the optimizer step (every {self.accumulate} calls of step())")
        os.makedirs(directory, exist_ok=True)
        if os.path.abspath(self.compiled.bundle) != os.path.abspath(os.path.join(directory, "model.ampx")):
            shutil.copyfile(self.compiled.bundle, os.path.join(directory, "model.ampx"))
        # A trainer resumed from `directory` saves into it again: its files are already there.
        if self.compiled.onnx and os.path.abspath(self.compiled.onnx) != os.path.abspath(
                os.path.join(directory, "model.onnx")):
            shutil.copyfile(self.compiled.onnx, os.path.join(directory, "model.onnx"))
        self._session.save_checkpoint(directory, self.steps_done, self.seed)
        meta = {"steps_done": self.steps_done, "forward_passes": self.forward_passes, "seed": self.seed,
                "loss_kind": self.compiled.loss_kind, "counters": self.compiled.counters,
                "module_keys": self.compiled.module_keys, "renames": self._renames,
                "onnx": "model.onnx" if self.compiled.onnx else None}
        extra = {k: v for k, v in self.compiled.extra.items()}
        np.savez(os.path.join(directory, "module_values.npz"), **extra)
        tmp = os.path.join(directory, _META + ".tmp")
        with open(tmp, "w") as f:
            json.dump(meta, f)
        os.replace(tmp, os.path.join(directory, _META))

    @classmethod
    def resume(cls, directory, device="cpu", **kwargs):
        """A trainer in the state save(directory) wrote."""
        directory = os.fspath(directory)
        with open(os.path.join(directory, _META)) as f:
            meta = json.load(f)
        extra_file = os.path.join(directory, "module_values.npz")
        extra = dict(np.load(extra_file)) if os.path.exists(extra_file) else {}
        step = CompiledStep(os.path.join(directory, "model.ampx"),
                            onnx=os.path.join(directory, meta["onnx"]) if meta.get("onnx") else None,
                            loss_kind=meta.get("loss_kind"),
                            module_keys=[tuple(k[:1]) + (tuple(k[1]), k[2]) for k in meta["module_keys"]]
                            if meta.get("module_keys") else None,
                            counters=meta.get("counters"), extra=extra)
        trainer = cls(step, device, seed=meta.get("seed", 0), **kwargs)
        info = trainer._session.load_checkpoint(directory)
        trainer.steps_done = int(info["step"])
        trainer.forward_passes = int(meta["forward_passes"])
        return trainer

    def export_onnx(self, path):
        """The inference graph with the trained values, from the ONNX the model was imported
        from (batch norm in inference mode): passes onnx.checker, re-imports into ampc."""
        if not self.compiled.onnx:
            raise ValueError("export_onnx needs a model that came from ONNX or a torch.nn.Module; an .mlir model "
                             "has no ONNX graph to write back into")
        values = self._session.persistent(model_only=True)
        return _torch_export.export_inference(self.compiled.onnx, values, os.fspath(path))

    def memory(self):
        """Bytes the session holds: params and state, and the entries' workspaces."""
        return self._session.memory()

    @property
    def device(self):
        return self._session.description

    def close(self):
        if self._metrics:
            self._metrics.close()
            self._metrics = None
