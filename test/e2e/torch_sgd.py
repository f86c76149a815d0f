"""What the ONNX parity oracles (test/e2e/onnx_*_oracle.py) record from PyTorch: plain SGD steps on
one batch, with the loss and gradients of the first step and the params after the last."""
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
