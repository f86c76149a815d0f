"""torch.nn.Modules through ampc: state_dict parity, fine-tuning, ONNX export, the fit loop."""
import numpy as np
import pytest

import ampc


def test_state_dict_matches_the_module(small_cnn, torch, fmnist):
    (x, y), _ = fmnist
    images = torch.from_numpy(x[:256].reshape(256, 1, 28, 28))
    labels = torch.from_numpy(y[:256])
    step = ampc.compile(small_cnn, example=images[:32], precision="f32", optimizer=ampc.SGD(lr=0.05))
    trainer = ampc.Trainer(step, device="cpu")
    for i in range(0, 256, 32):
        trainer.step(images[i:i + 32], labels[i:i + 32])
    sd = trainer.state_dict()
    module_sd = small_cnn.state_dict()
    assert list(sd) == list(module_sd)
    for k in module_sd:
        assert tuple(sd[k].shape) == tuple(module_sd[k].shape), k
    assert int(sd["bn.num_batches_tracked"]) == 8
    small_cnn.load_state_dict(sd, strict=True)
    small_cnn.eval()
    with torch.no_grad():
        torch_logits = small_cnn(images[:50]).numpy()
    ampc_logits = trainer.predict(images[:50])
    # f32 on both sides; summation orders differ (docs/python.md, "state_dict").
    np.testing.assert_allclose(ampc_logits, torch_logits, rtol=1e-4, atol=1e-4)


def test_load_state_dict_for_fine_tuning(small_cnn, torch):
    example = torch.zeros(16, 1, 28, 28)
    trainer = ampc.Trainer(ampc.compile(small_cnn, example=example, precision="f32"), device="reference")
    with torch.no_grad():
        small_cnn.fc.weight.mul_(2.0)
        small_cnn.bn.running_mean.fill_(0.25)
        small_cnn.bn.num_batches_tracked.fill_(7)
    trainer.load_state_dict(small_cnn.state_dict(), strict=True)
    sd = trainer.state_dict()
    for k, v in small_cnn.state_dict().items():
        assert torch.equal(sd[k], v), k
    with pytest.raises(RuntimeError, match="Unexpected key"):
        trainer.load_state_dict({**small_cnn.state_dict(), "extra.weight": torch.zeros(1)})
    with pytest.raises(RuntimeError, match="Missing key"):
        trainer.load_state_dict({k: v for k, v in small_cnn.state_dict().items() if k != "fc.bias"})


def test_export_onnx_reimports_with_equal_logits(tmp_path, small_cnn, torch, fmnist):
    onnx = pytest.importorskip("onnx")
    (x, y), _ = fmnist
    images = torch.from_numpy(x[:64].reshape(64, 1, 28, 28))
    trainer = ampc.Trainer(ampc.compile(small_cnn, example=images[:32], precision="f32"), device="cpu")
    trainer.step(images[:32], torch.from_numpy(y[:32]))
    trainer.export_onnx(tmp_path / "trained.onnx")
    onnx.checker.check_model(onnx.load(str(tmp_path / "trained.onnx")))
    again = ampc.Trainer(ampc.compile(str(tmp_path / "trained.onnx"), example=images[:32], precision="f32"),
                         device="cpu")
    np.testing.assert_allclose(again.predict(images[:40]), trainer.predict(images[:40]), rtol=1e-5, atol=1e-5)


def test_a_resumed_module_saves_into_its_folder_again(tmp_path, small_cnn, torch, fmnist):
    # A run split into parts (examples/train_torchvision.py --checkpoint) saves where it resumed
    # from; the module's ONNX is then the file being written (found by that example).
    (x, y), _ = fmnist
    images = torch.from_numpy(x[:128].reshape(128, 1, 28, 28))
    labels = torch.from_numpy(y[:128])
    whole = ampc.Trainer(ampc.compile(small_cnn, example=images[:32], precision="f32"), device="cpu")
    whole.save(tmp_path / "ckpt")
    for i in range(0, 128, 32):
        whole.step(images[i:i + 32], labels[i:i + 32])
    part = ampc.Trainer.resume(tmp_path / "ckpt", device="cpu")
    part.step(images[:32], labels[:32])
    part.save(tmp_path / "ckpt")
    part = ampc.Trainer.resume(tmp_path / "ckpt", device="cpu")
    assert part.steps_done == 1
    for i in range(32, 128, 32):
        part.step(images[i:i + 32], labels[i:i + 32])
    sw, sp = whole.state_dict(), part.state_dict()
    for k in sw:
        assert torch.equal(sw[k], sp[k]), k


def test_fit_with_a_dataloader(mlp, torch, fmnist):
    (x, y), (xt, yt) = fmnist
    data = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    test = torch.utils.data.TensorDataset(torch.from_numpy(xt), torch.from_numpy(yt))
    trainer = ampc.Trainer(ampc.compile(mlp, example=torch.zeros(64, 784), precision="bf16",
                                        optimizer=ampc.AdamW(lr=2e-3)), device="cpu")
    loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=True, drop_last=True, num_workers=2)
    history = ampc.fit(trainer, loader, epochs=2, eval_loader=torch.utils.data.DataLoader(test, batch_size=100),
                       progress=False)
    assert [h["steps"] for h in history] == [32, 32]
    assert history[1]["loss"] < history[0]["loss"]
    assert history[1]["eval_accuracy"] > 0.6
    with pytest.raises(ValueError, match="compiled for 64: DataLoader"):
        ampc.fit(trainer, torch.utils.data.DataLoader(data, batch_size=100), epochs=1, progress=False)
    uneven = torch.utils.data.TensorDataset(torch.from_numpy(x[:2000]), torch.from_numpy(y[:2000]))
    with pytest.raises(ValueError, match="last batch has 16 of 64 examples.*drop_last=True"):
        ampc.fit(trainer, torch.utils.data.DataLoader(uneven, batch_size=64), epochs=1, progress=False)
