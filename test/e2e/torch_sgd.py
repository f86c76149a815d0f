"""What the ONNX parity oracles (test/e2e/onnx_*_oracle.py) record from PyTorch: plain SGD steps on
one batch, with the loss and gradients of the first step and the params after the last; and, for
the language models, the export of the model and its batch."""
import json


def record_sgd(model, loss_of_model, steps, lr, batch, path):
    """Runs `steps` SGD steps of `loss_of_model(model)` and writes torch.json to `path`: per-step
    losses, the first step's gradients ("<param>.grad") and the params after the steps."""
    import torch
    sgd = torch.optim.SGD(model.parameters(), lr=lr)
    out = {"losses": [], "lr": lr, "steps": steps, "batch": batch}
    for step in range(steps):
        sgd.zero_grad()
        loss = loss_of_model(model)
        loss.backward()
        if step == 0:
            out["grads"] = {n + ".grad": p.grad.flatten().tolist() for n, p in model.named_parameters()}
        out["losses"].append(loss.item())
        sgd.step()
    out["params"] = {n: p.detach().flatten().tolist() for n, p in model.named_parameters()}
    with open(path, "w") as f:
        json.dump(out, f)


def export_and_record_lm(model, tokens, label, vocab, steps, lr, work):
    """The language-model oracles' common part: exports `model` as a user would (opset 17, training
    mode, input "tokens", output "logits", a symbolic batch dim) to WORK/model.onnx, writes the batch
    to WORK/batch.npz and records SGD with the mean cross-entropy over every position."""
    import numpy as np
    import torch
    torch.onnx.export(model, tokens, work + "/model.onnx", opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["tokens"], output_names=["logits"], dynamic_axes={"tokens": {0: "batch"}})
    np.savez(work + "/batch.npz", tokens=tokens.numpy(), label=label.numpy())
    record_sgd(model, lambda m: torch.nn.functional.cross_entropy(m(tokens).reshape(-1, vocab), label.reshape(-1)),
               steps, lr, tokens.shape[0], work + "/torch.json")
