// amp-run's command line (docs/cli.md is the contract), parsed with CLI11.
#ifndef AMP_TOOLS_AMPRUN_OPTIONS_H
#define AMP_TOOLS_AMPRUN_OPTIONS_H

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

// What a run does: train from --data (--epochs/--steps given), or run one entry point once.
enum class RunMode { Train, Entry };

struct RunCommandLine {
  bool help = false;
  std::string helpText;           // --help: the generated usage
  std::string model;              // MODEL.ampx | MODEL.mlir
  std::string device = "cpu";
  std::string entry;              // default: eval
  std::vector<std::string> inputBindings;                    // --input NAME=FILE, as given
  std::vector<std::pair<std::string, std::string>> inputs;  // ... split
  std::string params, output, data, summary, metrics;
  std::string evalData;           // training: the held-out set (FILE.npz or DIR)
  std::string exportWeights;      // training: FILE.safetensors of the state_dict names
  bool checkNumerics = false;
  bool dryRun = false;            // --device=cuda on a simulated GPU: prepare, capture, print
  bool profile = false;           // train_step's time by category (every device)
  std::string conv = "gemm";      // --device=cuda: how convolutions run (gemm | direct)
  bool debugSync = false;         // --device=cuda: each operation on its own, with a wait after it
  bool trustNativeCode = false;   // load a bundle's native code even when its provenance tag does not verify
  std::string nativeCode = "auto";  // auto (only from authenticated bundles) | off (never)
  int64_t memoryLimit = 0;        // bytes; 0: physical memory
  // Training (a bundle with a train_step entry and --data).
  int64_t epochs = 0, steps = 0, batch = 0, logEvery = 50, evalEvery = 0, checkpointEvery = 0;
  uint64_t seed = 0;
  bool shuffle = true;
  std::string checkpoint;
  bool resume = false;
  bool trustCheckpoint = false;   // --resume from a checkpoint whose tag does not verify under the user's key
  double commTimeout = 300;       // data-parallel: seconds a collective may wait for the other ranks
  RunMode mode = RunMode::Entry;
  std::set<std::string> given;    // the long names of the options on the command line
};

// Parses and checks the command line: unknown options, bad values, exclusive options and every
// option the chosen mode does not use are errors that name the option.
absl::StatusOr<RunCommandLine> parseRunOptions(int argc, char** argv);

#endif  // AMP_TOOLS_AMPRUN_OPTIONS_H
