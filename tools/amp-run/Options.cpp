#include "tools/amp-run/Options.h"

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace {

// Options each mode reads; any other given option is refused by name.
const std::set<std::string> kCommon = {"device", "params", "data", "summary", "check-numerics", "checkpoint",
                                       "resume", "memory-limit", "dry-run", "profile", "conv", "debug-sync",
                                       "trust-native-code", "native-code", "trust-checkpoint"};
const std::set<std::string> kTrainOnly = {"epochs", "steps", "batch", "seed", "shuffle", "log-every",
                                          "eval-every", "checkpoint-every", "metrics", "comm-timeout", "eval-data",
                                          "export"};
const std::set<std::string> kEntryOnly = {"entry", "input", "output"};

// Integer checks with messages a user reads (CLI11's ranges print the type's limits).
CLI::Validator atLeast(int64_t least) {
  return CLI::Validator(
      [least](std::string& text) -> std::string {
        int64_t v = 0;
        if (!CLI::detail::lexical_cast(text, v) || v < least)
          return least == 0 ? "expects a non-negative integer, got '" + text + "'"
                            : "expects a positive integer, got '" + text + "'";
        return "";
      },
      least == 0 ? "N>=0" : "N>=1");
}

void describe(CLI::App& app, RunCommandLine& cl) {
  app.add_option("model", cl.model, "MODEL.ampx (from ampc -o) or MODEL.mlir (compiled by the ampc next to amp-run)")->type_name("MODEL");
  app.add_option("--device", cl.device, "cpu (default), reference (the scalar oracle) or cuda (a bundle compiled for cuda:sm_80|sm_90)")->type_name("DEVICE");
  app.add_flag("--dry-run", cl.dryRun,
               "with --device=cuda: prepare every entry on a simulated GPU (no driver needed), capture its graph and "
               "print the operations it would run; nothing is executed");
  app.add_option("--conv", cl.conv,
                 "with --device=cuda: gemm (default: column gathers + one cuBLASLt GEMM per pass, on the tensor cores, "
                 "within summation-order bounds) or direct (the reference's bits, slowly)")
      ->type_name("gemm|direct")
      ->check(CLI::IsMember({"gemm", "direct"}));
  app.add_flag("--debug-sync", cl.debugSync,
               "with --device=cuda: run each call's operations one by one instead of as its graph, waiting after "
               "each, so a fault names its kernel, plan step and model location (as AMP_CUDA_SYNC_EACH_LAUNCH=1); slow");
  app.add_flag("--trust-native-code", cl.trustNativeCode,
               "load the bundle's native code (fused kernels) even when its provenance tag does not verify under "
               "your ampc key: for a bundle from another user or machine that you trust as you would a program "
               "(docs/kernels.md, threat model)");
  app.add_option("--native-code", cl.nativeCode,
                 "auto (default: native code only from bundles your ampc authenticated; others run their fused "
                 "regions interpreted) or off (always interpreted; the cpu device only)")
      ->type_name("auto|off")
      ->check(CLI::IsMember({"auto", "off"}));
  app.add_option("--params", cl.params, "parameter values by name (others use amp.init)")->type_name("FILE.safetensors");
  app.add_option("--data", cl.data,
                 "fashion-mnist[:DIR], FILE.npz (arrays named like the model's input and label), or DIR holding "
                 "INPUT.npy and LABEL.npy (streamed: read a batch at a time); "
                 "without --epochs/--steps: the first batch")->type_name("fashion-mnist[:DIR]|FILE.npz|DIR");
  app.add_option("--summary", cl.summary, "a JSON summary (training: also FILE.svg, the curves)")->type_name("FILE.json");
  app.add_flag("--check-numerics", cl.checkNumerics,
               "stop at the first op that produces NaN/inf and name it; reject non-finite inputs");
  app.add_option("--checkpoint", cl.checkpoint,
                 "save every param and state buffer to DIR/checkpoint.safetensors (atomically)")->type_name("DIR");
  app.add_flag("--resume", cl.resume, "start from --checkpoint's state (training continues bitwise-identically)");
  app.add_flag("--trust-checkpoint", cl.trustCheckpoint,
               "with --resume: accept a checkpoint whose authentication tag does not verify under your ampc key "
               "(written by another user or machine); its values are still checked");
  app.add_option("--memory-limit", cl.memoryLimit,
                 "refuse a bundle that needs more memory (params, state, data, arenas); default: physical memory")
      ->type_name("BYTES")
      ->transform(CLI::AsSizeValue(false))
      ->check(atLeast(1));

  app.add_option("--entry", cl.entry, "entry point to run once (default eval; grads, train_step, ...)")->type_name("NAME")
      ->group("Running one entry");
  app.add_option("--input", cl.inputBindings, "bind an input/label from .npy, .npz or .safetensors (repeatable)")
      ->type_name("NAME=FILE")
      ->group("Running one entry")
      ->check(CLI::Validator(
          [](std::string& binding) -> std::string {
            auto eq = binding.find('=');
            if (eq == std::string::npos || eq == 0 || eq + 1 == binding.size())
              return "expects NAME=FILE, got '" + binding + "'";
            return "";
          },
          ""));
  app.add_option("--output", cl.output, "write every result, by name")->type_name("FILE.safetensors")->group("Running one entry");

  const std::string train = "Training (a bundle from ampc --train, with --data)";
  auto* epochs = app.add_option("--epochs", cl.epochs, "passes over the training data")
                     ->check(atLeast(1))
                     ->group(train);
  auto* steps =
      app.add_option("--steps", cl.steps, "optimizer steps (after --resume: more steps)")->check(atLeast(1))->group(train);
  epochs->excludes(steps);
  app.add_option("--batch", cl.batch, "must equal the batch the model was compiled for")
      ->check(atLeast(1))
      ->group(train);
  app.add_option("--seed", cl.seed, "seed of the per-epoch shuffle (default 0)")->check(atLeast(0))->group(train);
  app.add_flag("--shuffle", cl.shuffle, "shuffle per epoch (default true); false: file order")->group(train);
  app.add_option("--log-every", cl.logEvery, "progress line every N steps (default 50)")
      ->check(atLeast(1))
      ->group(train);
  app.add_option("--eval-every", cl.evalEvery, "test accuracy every N steps (default: every epoch)")
      ->check(atLeast(0))
      ->group(train);
  app.add_option("--checkpoint-every", cl.checkpointEvery, "also checkpoint every N steps (default: at the end)")
      ->check(atLeast(0))
      ->group(train);
  app.add_option("--comm-timeout", cl.commTimeout,
                 "under mpirun: seconds a collective waits for the other ranks before the job stops with an error "
                 "(default 300)")
      ->type_name("SECONDS")
      ->check(CLI::Range(0.001, 86400.0))
      ->group(train);
  app.add_flag("--profile", cl.profile,
               "after training (cuda: or with --dry-run), train_step's time by category over 10 calls on the last "
               "batch; params and state are put back. cpu and reference: per step, with GEMM/conv GFLOP/s and the "
               "15 slowest steps; also in --summary's JSON")
      ->group(train);
  app.add_option("--eval-data", cl.evalData,
                 "the held-out set evaluated during and after training (FILE.npz or DIR, as --data; default: "
                 "Fashion-MNIST's test split with --data=fashion-mnist, else none)")
      ->type_name("FILE.npz|DIR")
      ->group(train);
  app.add_option("--export", cl.exportWeights,
                 "after training, the model's weights by their state_dict names (params, batch norm running "
                 "statistics and num_batches_tracked; no optimizer or scaler state)")
      ->type_name("FILE.safetensors")
      ->group(train);
  app.add_option("--metrics", cl.metrics, "one JSON record per optimizer step and per evaluation")->type_name("FILE.jsonl")
      ->group(train);
}

}  // namespace

absl::StatusOr<RunCommandLine> parseRunOptions(int argc, char** argv) {
  RunCommandLine cl;
  CLI::App app("amp-run: runs or trains a model compiled by ampc (docs/cli.md)", "amp-run");
  describe(app, cl);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    cl.help = true;
    cl.helpText = app.help();
    return cl;
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(absl::StrCat(e.what(), " (see amp-run --help)"));
  }
  for (const std::string& binding : cl.inputBindings) {
    auto eq = binding.find('=');
    cl.inputs.emplace_back(binding.substr(0, eq), binding.substr(eq + 1));
  }
  for (const CLI::Option* o : app.get_options())
    if (o->count() > 0 && !o->get_lnames().empty()) cl.given.insert(o->get_lnames().front());
  if (cl.model.empty()) return absl::InvalidArgumentError("no model given (amp-run MODEL.ampx|MODEL.mlir; see --help)");

  cl.mode = cl.given.count("epochs") || cl.given.count("steps") ? RunMode::Train : RunMode::Entry;
  const std::set<std::string>& foreign = cl.mode == RunMode::Train ? kEntryOnly : kTrainOnly;
  std::vector<std::string> unused;
  for (const std::string& name : cl.given)
    if (foreign.count(name)) unused.push_back("--" + name);
  if (!unused.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        absl::StrJoin(unused, ", "), unused.size() == 1 ? " is" : " are",
        cl.mode == RunMode::Train ? " for running one entry, not for training (--epochs/--steps)"
                                  : " for training: give --epochs=N or --steps=N (with --data)"));
  if (cl.dryRun && cl.device != "cuda") return absl::InvalidArgumentError("--dry-run is for --device=cuda");
  if (cl.given.count("conv") && cl.device != "cuda") return absl::InvalidArgumentError("--conv is for --device=cuda");
  if (cl.debugSync && cl.device != "cuda") return absl::InvalidArgumentError("--debug-sync is for --device=cuda");
  if (cl.profile && cl.mode != RunMode::Train && !cl.dryRun)
    return absl::InvalidArgumentError("--profile profiles training: give --steps=N or --epochs=N (or --dry-run)");
  if (cl.dryRun)
    for (const std::string& name : cl.given)
      if (name != "device" && name != "dry-run" && name != "memory-limit" && name != "profile" && name != "conv" &&
          name != "debug-sync")
        return absl::InvalidArgumentError(absl::StrCat("--", name, " has no effect with --dry-run"));
  if (cl.trustNativeCode && cl.nativeCode == "off")
    return absl::InvalidArgumentError("--trust-native-code and --native-code=off contradict each other");
  if (cl.resume && cl.checkpoint.empty()) return absl::InvalidArgumentError("--resume needs --checkpoint=DIR");
  if (cl.trustCheckpoint && !cl.resume)
    return absl::InvalidArgumentError("--trust-checkpoint is for --resume (which checkpoint to accept)");
  if (cl.mode == RunMode::Train && cl.data.empty())
    return absl::InvalidArgumentError("training (--epochs/--steps) needs --data=fashion-mnist[:DIR], --data=FILE.npz or --data=DIR");
  return cl;
}
