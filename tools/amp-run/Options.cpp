#include "tools/amp-run/Options.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

std::string runUsage() {
  return "usage: amp-run MODEL.ampx|MODEL.mlir [options]\n"
         "  --device=cpu|reference      device to run on (default cpu; reference: the scalar oracle)\n"
         "  --entry=NAME                entry point (default: eval)\n"
         "  --input NAME=FILE           bind an input/label from .npy, .npz or .safetensors (repeatable)\n"
         "  --params=FILE.safetensors   parameter values by name (others use their amp.init)\n"
         "  --data=fashion-mnist[:DIR]  feed the first test batch of Fashion-MNIST\n"
         "  --data=FILE.npz             feed inputs/labels by name from an npz\n"
         "  --output=FILE.safetensors   write every result\n"
         "  --summary=FILE.json         write a JSON summary (entry, device, scalar outputs)\n"
         "  --check-numerics            stop at the first op that produces NaN/inf and name it\n"
         "training (bundles compiled with ampc --train, with --data):\n"
         "  --epochs=N | --steps=N      how long to train (optimizer steps)\n"
         "  --batch=B                   must equal the batch the model was compiled for\n"
         "  --seed=S                    data order (shuffling) seed (default 0)\n"
         "  --log-every=N               progress line every N steps (default 50)\n"
         "  --eval-every=N              test accuracy every N steps (default: every epoch)\n"
         "  --checkpoint=DIR            save all state to DIR/checkpoint.safetensors (atomically)\n"
         "  --checkpoint-every=N        also every N steps (default: at the end)\n"
         "  --resume                    continue from DIR's checkpoint (bitwise identical to not stopping)\n"
         "  --summary=FILE.json         also writes FILE.svg with the loss and loss-scale curves\n";
}

absl::StatusOr<RunCommandLine> parseRunOptions(int argc, char** argv) {
  RunCommandLine cl;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string key = arg, value;
    bool hasValue = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      key = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasValue = true;
    }
    // Flags that take a value accept both --flag=V and --flag V.
    auto take = [&](std::string& into) -> absl::Status {
      if (hasValue) {
        into = value;
      } else if (i + 1 < argc) {
        into = argv[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat(key, " needs a value"));
      }
      if (into.empty()) return absl::InvalidArgumentError(absl::StrCat(key, " needs a non-empty value"));
      return absl::OkStatus();
    };
    absl::Status s;
    if (key == "--help" || key == "-h") {
      cl.help = true;
    } else if (key == "--device") {
      s = take(cl.device);
    } else if (key == "--entry") {
      s = take(cl.entry);
    } else if (key == "--params") {
      s = take(cl.params);
    } else if (key == "--output") {
      s = take(cl.output);
    } else if (key == "--data") {
      s = take(cl.data);
    } else if (key == "--summary") {
      s = take(cl.summary);
    } else if (key == "--epochs" || key == "--steps" || key == "--batch" || key == "--log-every" ||
               key == "--eval-every" || key == "--checkpoint-every" || key == "--seed") {
      std::string text;
      s = take(text);
      if (s.ok()) {
        int64_t v = 0;
        if (!absl::SimpleAtoi(text, &v) || v < 0)
          return absl::InvalidArgumentError(absl::StrCat(key, " expects a non-negative integer, got '", text, "'"));
        if (key == "--epochs") cl.epochs = v;
        else if (key == "--steps") cl.steps = v;
        else if (key == "--batch") cl.batch = v;
        else if (key == "--log-every") cl.logEvery = v;
        else if (key == "--eval-every") cl.evalEvery = v;
        else if (key == "--checkpoint-every") cl.checkpointEvery = v;
        else cl.seed = static_cast<uint64_t>(v);
      }
    } else if (key == "--checkpoint") {
      s = take(cl.checkpoint);
    } else if (key == "--resume") {
      cl.resume = true;
    } else if (key == "--check-numerics") {
      cl.checkNumerics = true;
    } else if (key == "--input") {
      std::string binding;
      s = take(binding);
      if (s.ok()) {
        auto eq = binding.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == binding.size())
          return absl::InvalidArgumentError(absl::StrCat("--input expects NAME=FILE, got '", binding, "'"));
        cl.inputs.emplace_back(binding.substr(0, eq), binding.substr(eq + 1));
      }
    } else if (arg.rfind("-", 0) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("unknown option '", arg, "' (see amp-run --help)"));
    } else if (cl.model.empty()) {
      cl.model = arg;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "': one model per run"));
    }
    if (!s.ok()) return s;
  }
  if (cl.epochs > 0 && cl.steps > 0)
    return absl::InvalidArgumentError("give --epochs or --steps, not both");
  if (cl.resume && cl.checkpoint.empty())
    return absl::InvalidArgumentError("--resume needs --checkpoint=DIR");
  if (!cl.help && cl.model.empty())
    return absl::InvalidArgumentError("no model given (amp-run MODEL.ampx|MODEL.mlir; see --help)");
  return cl;
}
