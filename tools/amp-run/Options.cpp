#include "tools/amp-run/Options.h"

#include "absl/strings/str_cat.h"

std::string runUsage() {
  return "usage: amp-run MODEL.ampx|MODEL.mlir [options]\n"
         "  --device=reference          device to run on (cpu and cuda: not in this build yet)\n"
         "  --entry=NAME                entry point (default: eval)\n"
         "  --input NAME=FILE           bind an input/label from .npy, .npz or .safetensors (repeatable)\n"
         "  --params=FILE.safetensors   parameter values by name (others use their amp.init)\n"
         "  --data=fashion-mnist[:DIR]  feed the first test batch of Fashion-MNIST\n"
         "  --data=FILE.npz             feed inputs/labels by name from an npz\n"
         "  --output=FILE.safetensors   write every result\n"
         "  --summary=FILE.json         write a JSON summary (entry, device, scalar outputs)\n"
         "  --check-numerics            stop at the first op that produces NaN/inf and name it\n";
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
  if (!cl.help && cl.model.empty())
    return absl::InvalidArgumentError("no model given (amp-run MODEL.ampx|MODEL.mlir; see --help)");
  return cl;
}
