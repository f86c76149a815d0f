"""ampc.fit: the convenience loop over a DataLoader, with a progress bar."""
import sys
import time


def _progress(total, desc):
    try:
        from tqdm import tqdm
        return tqdm(total=total, desc=desc, unit="step", file=sys.stderr, dynamic_ncols=True)
    except ImportError:
        return None


def fit(trainer, loader, epochs=1, eval_loader=None, progress=True, log=None):
    """Trains `trainer` for `epochs` passes over `loader` (an iterable of (x, y) batches of the
    compiled size: a DataLoader with drop_last=True), evaluating on `eval_loader` after each.
    Returns one dict per epoch: the mean loss of its steps that were not skipped, skipped steps,
    the last scale, the median step time, and the evaluation's accuracy and loss. With `progress`
    a tqdm bar runs per epoch; with `progress` or a `log` file a line per epoch is printed (to
    `log`, else stdout)."""
    batch = trainer.batch_size
    loader_batch = getattr(loader, "batch_size", None)
    if loader_batch is not None and loader_batch != batch:
        raise ValueError(f"the loader's batches have {loader_batch} examples, the model was compiled for {batch}: "
                         f"DataLoader(..., batch_size={batch}, drop_last=True)")
    dataset = getattr(loader, "dataset", None)
    if dataset is not None and not getattr(loader, "drop_last", True) and len(dataset) % batch:
        raise ValueError(f"the loader's last batch has {len(dataset) % batch} of {batch} examples and training runs "
                         f"whole batches: use DataLoader(..., batch_size={batch}, drop_last=True)")
    history = []
    for epoch in range(epochs):
        sampler = getattr(loader, "sampler", None)
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        total = len(loader) // trainer.accumulate if hasattr(loader, "__len__") else None
        bar = _progress(total, f"epoch {epoch + 1}/{epochs}") if progress else None
        losses, times, skipped, scale = [], [], 0, 1.0
        start = time.perf_counter()
        for x, y in loader:
            m = trainer.step(x, y)
            if m is None:
                continue
            times.append(m["step_time_ms"])
            scale = m["next_scale"]
            if m["skipped"]:
                skipped += 1
            else:
                losses.append(m["loss"])
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{m['loss']:.4f}", scale=f"{scale:g}", skipped=skipped)
        if bar is not None:
            bar.close()
        times.sort()
        record = {"epoch": epoch + 1, "steps": len(times), "loss": sum(losses) / len(losses) if losses else float("nan"),
                  "skipped": skipped, "scale": scale, "step_time_ms": times[len(times) // 2] if times else 0.0,
                  "seconds": time.perf_counter() - start}
        if eval_loader is not None:
            result = trainer.evaluate(eval_loader)
            record["eval_accuracy"], record["eval_loss"] = result["accuracy"], result["loss"]
        history.append(record)
        if progress or log is not None:
            line = (f"epoch {epoch + 1}/{epochs}: loss {record['loss']:.4f}, {record['steps']} steps "
                    f"({skipped} skipped), {record['step_time_ms']:.2f} ms/step")
            if eval_loader is not None:
                line += f", eval accuracy {100 * record['eval_accuracy']:.2f}%"
            print(line, file=log or sys.stdout, flush=True)
    return history
