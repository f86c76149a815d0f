// amp-run's command line (docs/cli.md is the contract).
#ifndef AMP_TOOLS_AMPRUN_OPTIONS_H
#define AMP_TOOLS_AMPRUN_OPTIONS_H

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

struct RunCommandLine {
  bool help = false;
  std::string model;              // MODEL.ampx | MODEL.mlir
  std::string device = "reference";
  std::string entry;              // default: eval
  std::vector<std::pair<std::string, std::string>> inputs;  // --input NAME=FILE
  std::string params, output, data, summary;
  bool checkNumerics = false;
};

absl::StatusOr<RunCommandLine> parseRunOptions(int argc, char** argv);
std::string runUsage();

#endif  // AMP_TOOLS_AMPRUN_OPTIONS_H
