// amp-run's command line (docs/cli.md is the contract).
#ifndef AMP_TOOLS_AMPRUN_OPTIONS_H
#define AMP_TOOLS_AMPRUN_OPTIONS_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

struct RunCommandLine {
  bool help = false;
  std::string model;              // MODEL.ampx | MODEL.mlir
  std::string device = "cpu";
  std::string entry;              // default: eval
  std::vector<std::pair<std::string, std::string>> inputs;  // --input NAME=FILE
  std::string params, output, data, summary;
  bool checkNumerics = false;
  // Training (a bundle with a train_step entry and --data).
  int64_t epochs = 0, steps = 0, batch = 0, logEvery = 50, evalEvery = 0, checkpointEvery = 0;
  uint64_t seed = 0;
  std::string checkpoint;
  bool resume = false;
};

absl::StatusOr<RunCommandLine> parseRunOptions(int argc, char** argv);
std::string runUsage();

#endif  // AMP_TOOLS_AMPRUN_OPTIONS_H
