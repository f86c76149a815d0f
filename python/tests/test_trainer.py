"""ampc.compile + ampc.Trainer against amp-run, PyTorch and themselves (save/resume)."""
import json
import os
import subprocess

import numpy as np
import pytest

import ampc
from conftest import BUILD, ROOT

MLP_MLIR = os.path.join(ROOT, "examples", "mlp.mlir")


def batches(x, y, b):
    for i in range(0, len(x) - b + 1, b):
        yield x[i:i + b], y[i:i + b]


def test_steps_match_amp_run_bit_for_bit(tmp_path, fmnist):
    """The same bundle, the same batches in file order: Python's losses are amp-run's, bitwise."""
    (x, y), _ = fmnist
    step = ampc.compile(MLP_MLIR, precision="bf16", optimizer=ampc.AdamW(lr=2e-3), clip_grad_norm=1.0,
                        output=str(tmp_path / "mlp.ampx"))
    trainer = ampc.Trainer(step, device="cpu")
    assert trainer.batch_size == 128
    ours = [trainer.step(xb, yb) for xb, yb in batches(x, y, 128)][:6]
    np.savez(tmp_path / "data.npz", image=x, label=y)
    subprocess.run([os.path.join(BUILD, "bin", "amp-run"), str(tmp_path / "mlp.ampx"), f"--data={tmp_path}/data.npz",
                    "--steps=6", "--shuffle=false", f"--metrics={tmp_path}/m.jsonl", "--log-every=100"],
                   check=True, stdout=subprocess.DEVNULL)
    theirs = [json.loads(l) for l in open(tmp_path / "m.jsonl") if '"step"' in l]
    theirs = [r for r in theirs if r["kind"] == "step"]
    assert [m["loss"] for m in ours] == [r["loss"] for r in theirs]
    assert [m["grad_norm"] for m in ours] == [r["grad_norm"] for r in theirs]
    assert ours[-1]["lr"] == pytest.approx(2e-3)
    assert all(m["skipped"] is False and m["scale"] == 1.0 for m in ours)


def test_f16_scaler_metrics_and_get_scale(fmnist):
    (x, y), _ = fmnist
    step = ampc.compile(MLP_MLIR, precision="f16", loss_scale="dynamic", init_scale=1e9)
    trainer = ampc.Trainer(step, device="cpu")
    first = trainer.step(x[:128], y[:128])
    # 1e9 x the loss overflows f16's gradients: the step is skipped and the scale halves (GradScaler).
    assert first["skipped"] is True and first["scale"] == 1e9 and first["next_scale"] == 5e8
    assert trainer.get_scale() == 5e8


@pytest.mark.parametrize("state", ["f32", "bf16"])
def test_save_resume_is_bitwise(tmp_path, fmnist, state):
    """bf16 moments too: their stochastic rounding is keyed by the step, which the checkpoint holds."""
    (x, y), _ = fmnist
    step = ampc.compile(MLP_MLIR, precision="bf16", optimizer=ampc.AdamW(state=state))
    a = ampc.Trainer(step, device="cpu")
    data = list(batches(x, y, 128))
    for xb, yb in data[:3]:
        a.step(xb, yb)
    a.save(tmp_path / "ckpt")
    for xb, yb in data[3:6]:
        a.step(xb, yb)
    b = ampc.Trainer.resume(tmp_path / "ckpt", device="cpu")
    assert b.steps_done == 3
    for xb, yb in data[3:6]:
        b.step(xb, yb)
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        assert np.array_equal(np.asarray(sa[k]), np.asarray(sb[k])), k


def test_accumulation_returns_metrics_once_per_window(fmnist):
    (x, y), _ = fmnist
    trainer = ampc.Trainer(ampc.compile(MLP_MLIR, precision="f32", accumulate=2), device="reference")
    assert trainer.step(x[:128], y[:128]) is None
    m = trainer.step(x[128:256], y[128:256])
    assert m["step"] == 1 and np.isfinite(m["loss"])


def test_evaluate_counts_every_example_once(fmnist, mlp, torch):
    _, (xt, yt) = fmnist
    trainer = ampc.Trainer(ampc.compile(mlp, example=torch.zeros(128, 784), precision="f32"), device="cpu")
    n = 128 * 2 + 37
    whole = trainer.evaluate((xt[:n], yt[:n]))
    assert whole["examples"] == n
    # The same examples in uneven loader batches give the same accuracy.
    pieces = [(xt[i:min(i + 50, n)], yt[i:min(i + 50, n)]) for i in range(0, n, 50)]
    again = trainer.evaluate(pieces)
    assert again["examples"] == n and again["accuracy"] == whole["accuracy"]
    # ... and it is the argmax of each example's logits, and the mean of each one's loss.
    logits = trainer.predict(xt[:n]).astype(np.float64)
    assert logits.shape == (n, 10)
    assert whole["accuracy"] == float((logits.argmax(1) == yt[:n]).mean())
    top = logits.max(1)
    nll = np.log(np.exp(logits - top[:, None]).sum(1)) + top - logits[np.arange(n), yt[:n]]
    assert whole["loss"] == pytest.approx(float(nll.mean()), rel=1e-5)


def test_metrics_jsonl(tmp_path, fmnist):
    (x, y), _ = fmnist
    trainer = ampc.Trainer(ampc.compile(MLP_MLIR, precision="bf16"), metrics=str(tmp_path / "m.jsonl"))
    trainer.step(x[:128], y[:128])
    trainer.close()
    record = json.loads(open(tmp_path / "m.jsonl").readline())
    assert record["kind"] == "step" and record["step"] == 1 and record["found_inf"] is False


def test_epoch_sampler_reproduces_amp_run_shuffle(tmp_path, fmnist, torch):
    """A DataLoader with ampc.EpochSampler(seed=3) feeds the batches amp-run --seed=3 trains on."""
    (x, y), _ = fmnist
    x, y = x[:640], y[:640]
    bundle = str(tmp_path / "mlp.ampx")
    ampc.compile(MLP_MLIR, precision="f32", output=bundle)
    np.savez(tmp_path / "data.npz", image=x, label=y)
    subprocess.run([os.path.join(BUILD, "bin", "amp-run"), bundle, f"--data={tmp_path}/data.npz", "--steps=8",
                    "--seed=3", f"--metrics={tmp_path}/m.jsonl", "--log-every=100"],
                   check=True, stdout=subprocess.DEVNULL)
    theirs = [json.loads(l)["loss"] for l in open(tmp_path / "m.jsonl") if '"kind":"step"' in l]
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    sampler = ampc.EpochSampler(len(dataset), seed=3)
    loader = torch.utils.data.DataLoader(dataset, batch_size=128, sampler=sampler, drop_last=True)
    trainer = ampc.Trainer(bundle, device="cpu")
    history = ampc.fit(trainer, loader, epochs=2, progress=False)
    assert [h["steps"] for h in history] == [5, 5]
    # fit's per-epoch mean cannot show the steps: run the same two epochs by hand on a fresh trainer.
    trainer = ampc.Trainer(bundle, device="cpu")
    ours = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        ours += [trainer.step(xb, yb)["loss"] for xb, yb in loader]
    assert ours[:8] == theirs


def test_two_bundles_in_one_process(fmnist):
    """Each session binds its own native kernels (the cpu device loads each bundle's code object
    from its own memfd, kept open while loaded, so dlopen never mistakes one for another)."""
    (x, y), _ = fmnist
    a = ampc.Trainer(ampc.compile(MLP_MLIR, precision="bf16"), device="cpu")
    b_step = ampc.compile(MLP_MLIR, precision="f32")
    b = ampc.Trainer(b_step, device="cpu")
    la, lb = a.step(x[:128], y[:128])["loss"], b.step(x[:128], y[:128])["loss"]
    del a, b
    fresh = ampc.Trainer(b_step, device="cpu")
    assert fresh.step(x[:128], y[:128])["loss"] == lb
    assert la != lb  # bf16 and f32 round differently
