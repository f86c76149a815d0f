"""Trainer(data_parallel=True) under `mpirun -np 2 python3`: the same steps as `mpirun -np 2 amp-run`."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ampc
from conftest import BUILD, ROOT

MPIRUN = shutil.which("mpirun") or shutil.which("mpiexec")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

RANK_SCRIPT = r"""
import json, sys
import numpy as np
import ampc
bundle, data, steps, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
arrays = np.load(data)
x, y = arrays["image"], arrays["label"]
trainer = ampc.Trainer(bundle, device="cpu", data_parallel=True)
sampler = ampc.EpochSampler(len(x), seed=0, rank=trainer.rank, world_size=trainer.world_size)
order, losses = list(sampler), []
b = trainer.batch_size
for k in range(steps):
    idx = order[k * b:(k + 1) * b]
    losses.append(trainer.step(np.ascontiguousarray(x[idx]), np.ascontiguousarray(y[idx]))["loss"])
if trainer.rank == 0:
    json.dump({"losses": losses, "world": trainer.world_size,
               "fc1": np.asarray(trainer.state_dict()["fc1.weight"]).tolist()[0][:16]}, open(out, "w"))
"""


@pytest.mark.skipif(MPIRUN is None, reason="no mpirun (openmpi-bin)")
def test_mpirun_python_matches_amp_run(tmp_path, fmnist):
    (x, y), _ = fmnist
    bundle = str(tmp_path / "dp.ampx")
    ampc.compile(os.path.join(ROOT, "examples", "mlp.mlir"), precision="bf16", data_parallel=True, output=bundle)
    np.savez(tmp_path / "data.npz", image=x[:1024], label=y[:1024])
    subprocess.run([MPIRUN, "--oversubscribe", "-np", "2", os.path.join(BUILD, "bin", "amp-run"), bundle,
                    f"--data={tmp_path}/data.npz", "--steps=3", f"--metrics={tmp_path}/m.jsonl",
                    f"--checkpoint={tmp_path}/ckpt"], check=True, env=ENV, stdout=subprocess.DEVNULL)
    theirs = [json.loads(l)["loss"] for l in open(tmp_path / "m.jsonl") if '"kind":"step"' in l]
    (tmp_path / "rank.py").write_text(RANK_SCRIPT)
    subprocess.run([MPIRUN, "--oversubscribe", "-np", "2", sys.executable, str(tmp_path / "rank.py"), bundle,
                    str(tmp_path / "data.npz"), "3", str(tmp_path / "out.json")], check=True, env=ENV)
    ours = json.load(open(tmp_path / "out.json"))
    assert ours["world"] == 2
    assert ours["losses"] == theirs
    # ... and the weights after those steps are amp-run's checkpoint's, bit for bit.
    sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
    from safetensors_file import f32_values, read
    tensors, _ = read(str(tmp_path / "ckpt" / "checkpoint.safetensors"))
    assert list(f32_values(tensors["fc1.weight"][2])[:16]) == ours["fc1"]


def test_a_data_parallel_bundle_needs_the_flag(tmp_path):
    bundle = str(tmp_path / "dp.ampx")
    ampc.compile(os.path.join(ROOT, "examples", "mlp.mlir"), precision="f32", data_parallel=True, output=bundle)
    with pytest.raises(ValueError, match="data_parallel=True"):
        ampc.Trainer(bundle, device="cpu")
