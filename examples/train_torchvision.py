#!/usr/bin/python3
"""torchvision's ResNet-18 (1-channel stem) on Fashion-MNIST through a PyTorch DataLoader with two
workers and augmentation (random crop with 2 pixels of padding, horizontal flip), trained by ampc
(precision="auto": bf16 where the CPU runs bf16 GEMMs natively, AMX or AMD's AVX512-BF16, else f32;
docs/precision-policy.md) and, with the same loader, seed, initial weights, optimizer and
schedule, by PyTorch eager in f32. Prints both accuracy curves and step times side by side.

    export PYTHONPATH=$PWD/build/python
    /usr/bin/python3 examples/train_torchvision.py                       # both sides, 10 epochs
    /usr/bin/python3 examples/train_torchvision.py --epochs 1 --side ampc --train-examples 6400

A long run can be split across machines or sessions: each side writes its curve with the recipe
that made it, and --table prints curves of the same recipe side by side. With --checkpoint DIR a
side saves itself after every epoch (ampc: Trainer.save; torch: model, optimizer and schedule) with
the loader's shuffling state and its curve so far, and a later run with the same DIR continues from
the last epoch saved; --stop-after N ends a run after N more epochs.

    /usr/bin/python3 examples/train_torchvision.py --side ampc --json ampc.json
    /usr/bin/python3 examples/train_torchvision.py --side torch --json torch.json --checkpoint ck --stop-after 5
    /usr/bin/python3 examples/train_torchvision.py --side torch --json torch.json --checkpoint ck
    /usr/bin/python3 examples/train_torchvision.py --table ampc.json torch.json

Needs Debian's python3-torch, python3-torchvision and dataset-fashion-mnist (scripts/setup.sh).
"""
import argparse
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torchvision

import ampc

FASHION = "/usr/share/datasets/fashion-mnist"


def load_split(split):
    prefix = "train" if split == "train" else "t10k"
    with gzip.open(f"{FASHION}/{prefix}-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(f"{FASHION}/{prefix}-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return torch.from_numpy(images.astype(np.float32) / 255.0), torch.from_numpy(labels.astype(np.int64))


class Augmented(torch.utils.data.Dataset):
    """Random crop (zero padding on each side) and horizontal flip, drawn in the loader's workers."""

    def __init__(self, images, labels, augment, padding=0):
        self.images, self.labels, self.augment = images, labels, augment
        self.transform = torchvision.transforms.Compose([
            torchvision.transforms.RandomCrop(28, padding=padding),
            torchvision.transforms.RandomHorizontalFlip(),
        ])

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.images[i]
        return (self.transform(x) if self.augment else x), self.labels[i]


def resnet18():
    model = torchvision.models.resnet18(num_classes=10)
    model.conv1 = torch.nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    return model


def loaders(args, seed):
    images, labels = load_split("train")
    if args.train_examples:
        images, labels = images[:args.train_examples], labels[:args.train_examples]
    test_images, test_labels = load_split("test")
    generator = torch.Generator().manual_seed(seed)
    train = torch.utils.data.DataLoader(Augmented(images, labels, True, args.crop_padding), batch_size=args.batch,
                                        shuffle=True,
                                        drop_last=True, num_workers=2, generator=generator,
                                        worker_init_fn=lambda w: torch.manual_seed(seed * 100 + w))
    test = torch.utils.data.DataLoader(Augmented(test_images, test_labels, False), batch_size=500)
    return train, test, generator


class Progress:
    """A side's position in a run split by --checkpoint: the epochs done, their curve, and the
    loader's shuffling state, saved after every epoch next to the side's own checkpoint."""

    def __init__(self, args, side, generator):
        self.args, self.generator = args, generator
        self.dir = os.path.join(args.checkpoint, side) if args.checkpoint else None
        self.curve, self.stop = [], args.epochs
        self.saved = bool(self.dir) and os.path.exists(os.path.join(self.dir, "progress.json"))
        if self.saved:
            with open(os.path.join(self.dir, "progress.json")) as f:
                saved = json.load(f)
            if saved["recipe"] != recipe(args):
                sys.exit(f"{self.dir}: saved by the recipe {saved['recipe']}, not {recipe(args)}")
            self.curve = [tuple(point) for point in saved["curve"]]
            generator.set_state(torch.load(os.path.join(self.dir, "generator.pt")))
            print(f"{side}: continuing after epoch {len(self.curve)} from {self.dir}", flush=True)
        if args.stop_after:
            self.stop = min(args.epochs, len(self.curve) + args.stop_after)

    def epochs(self):
        return range(len(self.curve), self.stop)

    def done(self, point, save):
        """Records an epoch's (accuracy, ms/step); `save(dir)` writes the side's own state."""
        self.curve.append(point)
        if not self.dir:
            return
        os.makedirs(self.dir, exist_ok=True)
        save(self.dir)
        torch.save(self.generator.get_state(), os.path.join(self.dir, "generator.pt"))
        tmp = os.path.join(self.dir, "progress.json.tmp")
        with open(tmp, "w") as f:
            json.dump({"recipe": recipe(self.args), "curve": self.curve}, f)
        os.replace(tmp, os.path.join(self.dir, "progress.json"))


def schedule(args, steps_per_epoch):
    """ampc's cosine schedule with linear warmup (docs/reference-executor.md, amp.lr_schedule)."""
    total, warmup = args.epochs * steps_per_epoch, args.warmup

    def factor(k):
        t = max(k + 1, 1)
        if t <= warmup:
            return t / warmup
        p = min(1.0, (t - warmup) / max(1, total - warmup))
        return 0.5 * (1 + math.cos(math.pi * p))
    return total, factor


def train_ampc(args, model):
    train, test, generator = loaders(args, args.seed)
    progress = Progress(args, "ampc", generator)
    if progress.saved:
        trainer = ampc.Trainer.resume(os.path.join(progress.dir, "trainer"), device="cpu", threads=args.threads)
    else:
        total, _ = schedule(args, len(train))
        step = ampc.compile(model, example=torch.zeros(args.batch, 1, 28, 28), precision=args.precision,
                            optimizer=ampc.AdamW(lr=args.lr, weight_decay=args.weight_decay),
                            schedule="cosine", warmup=args.warmup, total_steps=total)
        trainer = ampc.Trainer(step, device="cpu", threads=args.threads)
    print(f"ampc: {trainer.config['precision']} on {trainer.device}", flush=True)
    for epoch in progress.epochs():
        h = ampc.fit(trainer, train, epochs=1, eval_loader=test, progress=not args.quiet)[0]
        print(f"ampc {trainer.config['precision']}: epoch {epoch + 1}/{args.epochs}: loss {h['loss']:.4f}, eval "
              f"accuracy {100 * h['eval_accuracy']:.2f}%, {h['step_time_ms']:.1f} ms/step", flush=True)
        progress.done((h["eval_accuracy"], h["step_time_ms"]), lambda d: trainer.save(os.path.join(d, "trainer")))
    return progress.curve, trainer


def train_torch(args, model):
    train, test, generator = loaders(args, args.seed)
    total, factor = schedule(args, len(train))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    lr_schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    progress = Progress(args, "torch", generator)
    if progress.saved:
        state = torch.load(os.path.join(progress.dir, "torch.pt"))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        lr_schedule.load_state_dict(state["schedule"])

    def save(directory):
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "schedule": lr_schedule.state_dict()}, os.path.join(directory, "torch.pt"))

    for epoch in progress.epochs():
        model.train()
        times = []
        for x, y in train:
            start = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            lr_schedule.step()
            times.append(1000 * (time.perf_counter() - start))
        model.eval()
        correct = count = 0
        with torch.no_grad():
            for x, y in test:
                correct += int((model(x).argmax(1) == y).sum())
                count += len(y)
        times.sort()
        progress.done((correct / count, times[len(times) // 2]), save)
        print(f"torch eager f32: epoch {epoch + 1}/{args.epochs}: eval accuracy {100 * correct / count:.2f}%, "
              f"{times[len(times) // 2]:.1f} ms/step", flush=True)
    return progress.curve


def recipe(args):
    """What decides a curve: runs compared side by side must agree on all of it."""
    return {k: getattr(args, k) for k in ("epochs", "batch", "lr", "weight_decay", "warmup", "seed",
                                          "train_examples", "crop_padding")}


def merge_curves(paths):
    results, first = {}, None
    for path in paths:
        with open(path) as f:
            saved = json.load(f)
        this = saved.pop("recipe", None) if isinstance(saved, dict) else None
        if this is None or not all(isinstance(curve, list) for curve in saved.values()):
            sys.exit(f"{path}: not a curve file written by this script's --json")
        if first is None:
            first = this
        elif this != first:
            sys.exit(f"{path}: its recipe {this} differs from {paths[0]}'s {first}; curves of different "
                     "recipes are not comparable")
        for side, curve in saved.items():
            if side in results:
                sys.exit(f"{path}: a second '{side}' curve")
            results[side] = curve
    return results, first


def print_table(results, recipe):
    print(f"\nrecipe: {recipe}")
    print("epoch | " + " | ".join(f"{side} acc % | {side} ms/step" for side in results))
    for e in range(max(len(curve) for curve in results.values())):
        cells = [f"{100 * results[s][e][0]:9.2f} | {results[s][e][1]:10.1f}" if e < len(results[s])
                 else f"{'':9} | {'':10}" for s in results]
        print(f"{e + 1:5d} | " + " | ".join(cells))
    if "ampc" in results and "torch" in results:
        gap = 100 * (results["ampc"][-1][0] - results["torch"][-1][0])
        print(f"final accuracy: ampc - torch = {gap:+.2f} points")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--crop-padding", type=int, default=2,
                        help="pixels of zero padding around each image before the random 28x28 crop")
    parser.add_argument("--train-examples", type=int, default=0, help="use the first N training examples (0: all)")
    parser.add_argument("--side", choices=["both", "ampc", "torch"], default="both")
    parser.add_argument("--export", help="write the ampc-trained model's inference ONNX here")
    parser.add_argument("--json", help="write the curves, with the recipe that made them, here")
    parser.add_argument("--checkpoint", metavar="DIR", help="save each side here after every epoch, and continue "
                                                           "from what is saved")
    parser.add_argument("--stop-after", type=int, default=0, metavar="N",
                        help="end after N more epochs (with --checkpoint, to split a run)")
    parser.add_argument("--table", nargs="+", metavar="JSON",
                        help="print the curves of these --json files side by side (one recipe) and exit")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                        help="threads of both sides (default: every CPU this process may use; torch alone would "
                             "take one per physical core)")
    args = parser.parse_args()
    if args.table:
        return print_table(*merge_curves(args.table))
    torch.set_num_threads(args.threads)

    torch.manual_seed(args.seed)
    initial = resnet18()
    results = {}
    if args.side in ("both", "ampc"):
        model = resnet18()
        model.load_state_dict(initial.state_dict())
        results["ampc"], trainer = train_ampc(args, model)
        model.load_state_dict(trainer.state_dict())  # the trained weights back in the module, strict
        if args.export:
            trainer.export_onnx(args.export)
        if args.json:  # written after each side, so a long run keeps what finished
            with open(args.json, "w") as f:
                json.dump({"recipe": recipe(args), **results}, f)
    if args.side in ("both", "torch"):
        model = resnet18()
        model.load_state_dict(initial.state_dict())
        results["torch"] = train_torch(args, model)

    print_table(results, recipe(args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"recipe": recipe(args), **results}, f)


if __name__ == "__main__":
    main()
