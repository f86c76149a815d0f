"""ampc: compile a model's whole mixed-precision training step, then train it from Python.

    import ampc
    step = ampc.compile(model, example=x, precision="auto", optimizer=ampc.AdamW(lr=2e-3))
    trainer = ampc.Trainer(step, device="cpu")
    for x, y in loader:
        metrics = trainer.step(x, y)
    model.load_state_dict(trainer.state_dict())

docs/python.md is the guide: options, the state_dict mapping, exports, data, what is refused.
"""
from ._compile import CompiledStep, compile
from ._fit import fit
from ._options import SGD, Adam, AdamW, CompileError
from ._trainer import EpochSampler, Trainer

__all__ = ["compile", "CompiledStep", "Trainer", "EpochSampler", "fit", "SGD", "Adam", "AdamW", "CompileError"]
