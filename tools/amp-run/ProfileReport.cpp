#include "tools/amp-run/ProfileReport.h"

#include <cstdio>

void printProfile(const std::string& entry, const amp::rt::EntryProfile& profile, bool clocked) {
  double sum = 0;
  for (const auto& c : profile.categories) sum += c.ms;
  std::printf("profile of %s: %d call(s), each timed as its graph, then operation by operation%s\n", entry.c_str(),
              profile.calls, clocked ? "" : " (the dry run has no clock: operation counts only)");
  for (const auto& c : profile.categories) {
    if (clocked)
      std::printf("  %-17s %9.3f ms  %5.1f%%  %lld operation(s)\n", c.name.c_str(), c.ms, sum > 0 ? 100.0 * c.ms / sum : 0.0,
                  static_cast<long long>(c.operations));
    else
      std::printf("  %-17s %lld operation(s)\n", c.name.c_str(), static_cast<long long>(c.operations));
  }
  if (clocked)
    std::printf("  operations' sum   %9.3f ms; the graph %.3f ms (the sum includes a launch gap per operation)\n", sum,
                profile.callMs);
}
