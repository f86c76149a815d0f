"""Typed compile options for ampc.compile, and the ampc command line they stand for.

Each option is ampc's flag of the same meaning (docs/cli.md); values are checked here, before the
compiler runs, with messages that name the keyword argument.
"""
import dataclasses
import math
import numbers


class CompileError(Exception):
    """ampc refused the model or the options; str(e) is ampc's located diagnostic."""

    def __init__(self, diagnostics):
        super().__init__(diagnostics.rstrip())
        self.diagnostics = diagnostics


def _positive(name, value):
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _nonnegative(name, value):
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


@dataclasses.dataclass(frozen=True)
class SGD:
    """torch.optim.SGD on the f32 master weights."""
    lr: float = 0.01
    momentum: float = 0.0
    weight_decay: float = 0.0
    nesterov: bool = False

    def flags(self):
        return ["--optimizer=sgd", f"--lr={_positive('SGD(lr=)', self.lr)!r}",
                f"--momentum={_nonnegative('SGD(momentum=)', self.momentum)!r}",
                f"--weight-decay={_nonnegative('SGD(weight_decay=)', self.weight_decay)!r}"] + \
            (["--nesterov"] if self.nesterov else [])


_TORCH_BETAS, _TORCH_EPS = (0.9, 0.999), 1e-8


@dataclasses.dataclass(frozen=True)
class Adam:
    """torch.optim.Adam (L2 weight decay) on the f32 master weights; betas and eps are PyTorch's.
    state="bf16" keeps the moments in bf16 with stochastic rounding (ampc --optimizer-state=bf16:
    half the optimizer state, cpu targets; docs/training-ir.md gives the accuracy cost)."""
    lr: float = 1e-3
    weight_decay: float = 0.0
    betas: tuple = _TORCH_BETAS
    eps: float = _TORCH_EPS
    state: str = "f32"
    name = "adam"

    def flags(self):
        if tuple(self.betas) != _TORCH_BETAS or self.eps != _TORCH_EPS:
            raise ValueError(f"{type(self).__name__}: ampc's optimizer uses PyTorch's betas {_TORCH_BETAS} and eps "
                             f"{_TORCH_EPS}; other values are not supported")
        if self.state not in ("f32", "bf16"):
            raise ValueError(f"{type(self).__name__}(state=) must be 'f32' or 'bf16', got {self.state!r}")
        return [f"--optimizer={self.name}", f"--lr={_positive(type(self).__name__ + '(lr=)', self.lr)!r}",
                f"--weight-decay={_nonnegative(type(self).__name__ + '(weight_decay=)', self.weight_decay)!r}"] + \
            ([f"--optimizer-state={self.state}"] if self.state != "f32" else [])


@dataclasses.dataclass(frozen=True)
class AdamW(Adam):
    """torch.optim.AdamW (decoupled weight decay, PyTorch's default 0.01)."""
    lr: float = 1e-3
    weight_decay: float = 0.01
    name = "adamw"


_PRECISIONS = ("auto", "f32", "f16", "bf16")
_LOSS_SCALES = ("auto", "dynamic", "none")


def compile_flags(*, precision, optimizer, clip_grad_norm, accumulate, policy, overrides, loss_scale, init_scale,
                  growth_factor, backoff_factor, growth_interval, remat, memory_budget, schedule, warmup,
                  total_steps, target, data_parallel, native_kernels):
    """ampc's training flags for these options (everything but the model and the output)."""
    if precision not in _PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(_PRECISIONS)}, got {precision!r}")
    flags = ["--train", f"--precision={precision}"]
    if optimizer is None:
        optimizer = AdamW()
    if not hasattr(optimizer, "flags"):
        raise TypeError(f"optimizer must be ampc.SGD, ampc.Adam or ampc.AdamW, got {type(optimizer).__name__}")
    flags += optimizer.flags()
    if clip_grad_norm:
        flags.append(f"--clip-grad-norm={_positive('clip_grad_norm', clip_grad_norm)!r}")
    if not isinstance(accumulate, int) or accumulate < 1:
        raise ValueError(f"accumulate must be an int >= 1, got {accumulate!r}")
    flags.append(f"--accumulate={accumulate}")
    if policy is not None:
        flags.append(f"--policy={policy}")
    for pattern, prec in dict(overrides or {}).items():
        flags.append(f"--precision-override={pattern}={prec}")
    if isinstance(loss_scale, numbers.Real) and not isinstance(loss_scale, bool):
        flags.append(f"--loss-scale=static:{_positive('loss_scale', loss_scale)!r}")
    elif loss_scale in _LOSS_SCALES:
        flags.append(f"--loss-scale={loss_scale}")
    else:
        raise ValueError(f"loss_scale must be 'auto', 'dynamic', 'none' or a static scale (a number), got {loss_scale!r}")
    for name, value, flag in (("init_scale", init_scale, "init-scale"), ("growth_factor", growth_factor, "growth-factor"),
                              ("backoff_factor", backoff_factor, "backoff-factor")):
        if value is not None:
            flags.append(f"--{flag}={_positive(name, value)!r}")
    if growth_interval is not None:
        flags.append(f"--growth-interval={int(growth_interval)}")
    if remat not in ("auto", "off"):
        raise ValueError(f"remat must be 'auto' or 'off', got {remat!r}")
    flags.append(f"--remat={remat}")
    if memory_budget is not None:
        flags.append(f"--memory-budget={memory_budget}")
    if schedule not in ("constant", "cosine"):
        raise ValueError(f"schedule must be 'constant' or 'cosine', got {schedule!r}")
    flags.append(f"--schedule={schedule}")
    if warmup:
        flags.append(f"--warmup={int(warmup)}")
    if total_steps:
        flags.append(f"--total-steps={int(total_steps)}")
    if target is not None:
        flags.append(f"--target={target}")
    if data_parallel:
        flags.append("--data-parallel")
    if not native_kernels:
        flags.append("--native-kernels=false")
    return flags
